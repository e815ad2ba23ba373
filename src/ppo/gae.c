/* gae.c — generalised advantage estimation and masked whitening: pure
 * functions over host arrays, tested against hand-computed values. */
#include <math.h>
#include <stddef.h>

#include "nereus/ppo.h"

void gae_sequence(float *adv, float *ret, const float *r, const float *v, int n, float gamma, float lam) {
    /* δ_t = r_t + γ v_{t+1} − v_t,  A_t = δ_t + γλ A_{t+1},  v_n = 0, A_n = 0 */
    double next_v = 0.0, next_a = 0.0;
    for (int t = n - 1; t >= 0; t--) {
        double delta = (double)r[t] + gamma * next_v - (double)v[t];
        double a = delta + (double)gamma * lam * next_a;
        adv[t] = (float)a;
        ret[t] = (float)(a + v[t]);
        next_v = v[t];
        next_a = a;
    }
}

void whiten_masked(float *x, const float *mask, size_t n) {
    double s = 0.0, s2 = 0.0, cnt = 0.0;
    for (size_t i = 0; i < n; i++)
        if (mask[i] != 0.0f) { s += x[i]; cnt += 1.0; }
    if (cnt == 0.0) return;
    double mean = s / cnt;
    for (size_t i = 0; i < n; i++)
        if (mask[i] != 0.0f) s2 += (x[i] - mean) * (x[i] - mean);
    double sd = sqrt(s2 / cnt);
    for (size_t i = 0; i < n; i++) x[i] = mask[i] != 0.0f ? (float)((x[i] - mean) / (sd + 1e-8)) : 0.0f;
}
