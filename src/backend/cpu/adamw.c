/* adamw.c — the optimiser kernels of the CPU backend: AdamW with bias
 * correction, decoupled weight decay and the global-norm clip folded in as a
 * gradient scale (one pass over the four arrays), and the double-accumulated
 * Σ g² used for that clip. Both are memory-bound over every parameter, so
 * they run on all the rank's threads. */
#include <math.h>

#include "cpu_internal.h"

/* params, grads, m, v (n); step t ≥ 1; the gradient used is grad_scale·grads */
static void cpu_adamw_update(float *params, const float *grads, float *m, float *v, size_t n,
                             float lr, float beta1, float beta2, float eps, float wd,
                             float grad_scale, int t) {
    /* bias corrections once per call, in double */
    const float c1 = (float)(1.0 / (1.0 - pow((double)beta1, (double)t)));
    const float c2 = (float)(1.0 / (1.0 - pow((double)beta2, (double)t)));
    const float b1c = 1.0f - beta1, b2c = 1.0f - beta2;
    float *restrict p = params;
    const float *restrict g = grads;
    float *restrict mm = m;
    float *restrict vv = v;
#pragma omp parallel for schedule(static) if (n >= CPU_OMP_MIN)
    for (size_t i = 0; i < n; i++) {
        float gi = g[i] * grad_scale;
        float mi = beta1 * mm[i] + b1c * gi;
        float vi = beta2 * vv[i] + b2c * gi * gi;
        mm[i] = mi;
        vv[i] = vi;
        float mhat = mi * c1, vhat = vi * c2;
        p[i] -= lr * (mhat / (sqrtf(vhat) + eps) + wd * p[i]);
    }
}

/* Σ g² of one block, 8 double partial sums */
static double sumsq_block(const float *g, size_t n) {
    double acc[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += (double)g[i + j] * g[i + j];
    double s = 0.0;
    for (int j = 0; j < 8; j++) s += acc[j];
    for (; i < n; i++) s += (double)g[i] * g[i];
    return s;
}

/* Σ g² (n) in double. Fixed 64 Ki-element blocks, summed in block order: the
 * same bits whatever the thread count, so runs stay reproducible. */
#define SUMSQ_BLOCK ((size_t)1 << 16)
static double cpu_sumsq(const float *g, size_t n) {
    size_t nb = (n + SUMSQ_BLOCK - 1) / SUMSQ_BLOCK;
    if (nb <= 1) return sumsq_block(g, n);
    double part[256];
    double s = 0.0;
    /* at most 256 blocks at a time on the stack */
    for (size_t b0 = 0; b0 < nb; b0 += 256) {
        size_t b1 = b0 + 256 < nb ? b0 + 256 : nb;
#pragma omp parallel for schedule(static)
        for (size_t b = b0; b < b1; b++) {
            size_t lo = b * SUMSQ_BLOCK, hi = lo + SUMSQ_BLOCK < n ? lo + SUMSQ_BLOCK : n;
            part[b - b0] = sumsq_block(g + lo, hi - lo);
        }
        for (size_t b = b0; b < b1; b++) s += part[b - b0];
    }
    return s;
}

void cpu_register_adamw(Backend *be) {
    be->adamw_update = cpu_adamw_update;
    be->sumsq = cpu_sumsq;
}
