/* adamw.c — the optimiser kernels of the CPU backend: AdamW with bias
 * correction and decoupled weight decay, the double-accumulated Σ g² used for
 * global gradient-norm clipping, and the in-place scale that applies the clip.
 */
#include <math.h>

#include "cpu_internal.h"

/* params, grads, m, v (n); step t ≥ 1 */
static void cpu_adamw_update(float *params, const float *grads, float *m, float *v, size_t n,
                             float lr, float beta1, float beta2, float eps, float wd, int t) {
    /* bias corrections once per call, in double */
    const float c1 = (float)(1.0 / (1.0 - pow((double)beta1, (double)t)));
    const float c2 = (float)(1.0 / (1.0 - pow((double)beta2, (double)t)));
    const float b1c = 1.0f - beta1, b2c = 1.0f - beta2;
    float *restrict p = params;
    const float *restrict g = grads;
    float *restrict mm = m;
    float *restrict vv = v;
    for (size_t i = 0; i < n; i++) {
        float gi = g[i];
        float mi = beta1 * mm[i] + b1c * gi;
        float vi = beta2 * vv[i] + b2c * gi * gi;
        mm[i] = mi;
        vv[i] = vi;
        float mhat = mi * c1, vhat = vi * c2;
        p[i] -= lr * (mhat / (sqrtf(vhat) + eps) + wd * p[i]);
    }
}

/* Σ g² (n) in double */
static double cpu_sumsq(const float *g, size_t n) {
    double acc[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += (double)g[i + j] * g[i + j];
    double s = 0.0;
    for (int j = 0; j < 8; j++) s += acc[j];
    for (; i < n; i++) s += (double)g[i] * g[i];
    return s;
}

/* x (n) *= s */
static void cpu_scale(float *x, float s, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] *= s;
}

void cpu_register_adamw(Backend *be) {
    be->adamw_update = cpu_adamw_update;
    be->sumsq = cpu_sumsq;
    be->scale = cpu_scale;
}
