/* grpo.c — the pure pieces of GRPO (Shao et al., DeepSeekMath, 2024): group-relative advantages and the k3
 * estimator of KL(actor‖ref) that its actor loss adds to the clipped surrogate. Host arrays, no model, no MPI;
 * tested against hand-computed values (tests/test_ppo_pure.c). */
#include <math.h>
#include <string.h>

#include "nereus/ppo.h"

void grpo_group_advantages(const float *reward, int B, int G, int use_std, float eps, float *adv) {
    /* rows g·G .. g·G+G−1 are one prompt's responses; A_i = (r_i − mean) / (std + eps), std the sample standard
       deviation (n − 1, as verl and TRL take it); equal rewards give 0, never NaN (eps > 0) */
    for (int g0 = 0; g0 + G <= B; g0 += G) {
        double mean = 0, ss = 0;
        for (int i = 0; i < G; i++) mean += reward[g0 + i];
        mean /= G;
        for (int i = 0; i < G; i++) ss += ((double)reward[g0 + i] - mean) * ((double)reward[g0 + i] - mean);
        double sd = G > 1 ? sqrt(ss / (G - 1)) : 0.0;
        for (int i = 0; i < G; i++) {
            double a = (double)reward[g0 + i] - mean;
            adv[g0 + i] = (float)(use_std ? a / (sd + (double)eps) : a);
        }
    }
}

double grpo_kl_k3(const float *logp, const float *logp_ref, const float *w, int n, float beta, float *dlogp) {
    /* k3 = exp(x) − x − 1 with x = log π_ref − log π (≥ 0, unbiased for KL(π‖π_ref) under samples of π);
       d k3 / d log π = 1 − exp(x). x is clamped to ±GRPO_K3_CLAMP so that a token the reference finds far
       likelier than the actor cannot overflow exp. */
    double sum = 0;
    for (int k = 0; k < n; k++) {
        if (w[k] == 0.0f) continue;
        double x = (double)logp_ref[k] - (double)logp[k];
        if (x > GRPO_K3_CLAMP) x = GRPO_K3_CLAMP;
        if (x < -GRPO_K3_CLAMP) x = -GRPO_K3_CLAMP;
        double ex = exp(x);
        sum += (double)w[k] * (ex - x - 1.0);
        if (dlogp) dlogp[k] += (float)((double)beta * w[k] * (1.0 - ex));
    }
    return sum;
}
int ppo_is_grpo(const Config *cfg) { return strcmp(cfg->ppo.algorithm, "grpo") == 0; }
