/* optim.cu — PPO per-token losses, AdamW and Σ g² of the CUDA backend.
 *
 * The PPO losses are one block of 1024 threads: each thread takes tokens
 * n = tid, tid + 1024, …, writes its dlogp / dv, and accumulates its share of
 * the sums in double; a fixed block tree then gives loss, clipfrac and
 * approx_kl, written to DEVICE memory (any of them may be NULL). Ties in
 * max(·,·) go to the unclipped branch, as on the CPU.
 *
 * sumsq uses a fixed grid (SUMSQ_BLOCKS × SUMSQ_THREADS, grid-stride), a
 * fixed tree per block and a second single-block pass over the partials,
 * so the same input gives the same double on every run and every device.
 */
#include <math.h>

#include "cuda_internal.h"
#include "nereus/ppo_token.h"

#define PPO_THREADS 1024

__global__ static void ppo_policy_kernel(float *loss, float *dlogp, float *clipfrac, float *approx_kl,
                                         const float *logp, const float *logp_old, const float *adv,
                                         const float *w, int N, float eps_lo, float eps_hi) {
    __shared__ double red[32];
    PpoPolicySums s = {0.0, 0.0, 0.0, 0.0};
    for (int n = threadIdx.x; n < N; n += blockDim.x)
        ppo_policy_add(&s, logp[n] - logp_old[n], adv[n], w[n], eps_lo, eps_hi, dlogp ? dlogp + n : NULL);
    double L = s.loss, W = s.w, clipped = s.clipped, kl = s.kl;
    L = block_reduce(L, OpSum<double>(), 0.0, red);
    W = block_reduce(W, OpSum<double>(), 0.0, red);
    clipped = block_reduce(clipped, OpSum<double>(), 0.0, red);
    kl = block_reduce(kl, OpSum<double>(), 0.0, red);
    if (threadIdx.x == 0) {
        if (loss) *loss = (float)L;
        if (clipfrac) *clipfrac = W != 0.0 ? (float)(clipped / W) : 0.0f;
        if (approx_kl) *approx_kl = W != 0.0 ? (float)(kl / W) : 0.0f;
    }
}

__global__ static void ppo_value_kernel(float *loss, float *dv, const float *v, const float *v_old,
                                        const float *ret, const float *w, int N, float eps) {
    __shared__ double red[32];
    double L = 0.0;
    for (int n = threadIdx.x; n < N; n += blockDim.x) {
        float dl;
        L += (double)w[n] * ppo_value_token(v[n], v_old[n], ret[n], eps, &dl);
        if (dv) dv[n] = w[n] * dl;
    }
    L = block_reduce(L, OpSum<double>(), 0.0, red);
    if (threadIdx.x == 0 && loss) *loss = (float)L;
}

static void cuda_ppo_policy_loss(float *loss, float *dlogp, float *clipfrac, float *approx_kl,
                                 const float *logp, const float *logp_old, const float *adv,
                                 const float *w, int N, float eps_lo, float eps_hi) {
    ppo_policy_kernel<<<1, PPO_THREADS>>>(loss, dlogp, clipfrac, approx_kl, logp, logp_old, adv, w,
                                          N < 0 ? 0 : N, eps_lo, eps_hi);
    cudaCheckLaunch("ppo_policy_kernel");
}

static void cuda_ppo_value_loss(float *loss, float *dv, const float *v, const float *v_old,
                                const float *ret, const float *w, int N, float eps) {
    ppo_value_kernel<<<1, PPO_THREADS>>>(loss, dv, v, v_old, ret, w, N < 0 ? 0 : N, eps);
    cudaCheckLaunch("ppo_value_kernel");
}

/* --- AdamW ------------------------------------------------------------------- */

__global__ static void adamw_kernel(float *p, const float *g, float *m, float *v, size_t n, float lr,
                                    float beta1, float beta2, float eps, float wd, float grad_scale,
                                    float c1, float c2) {
    const float b1c = 1.0f - beta1, b2c = 1.0f - beta2;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float gi = g[i] * grad_scale;
        float mi = beta1 * m[i] + b1c * gi;
        float vi = beta2 * v[i] + b2c * gi * gi;
        m[i] = mi;
        v[i] = vi;
        float mhat = mi * c1, vhat = vi * c2;
        p[i] -= lr * (mhat / (sqrtf(vhat) + eps) + wd * p[i]);
    }
}

static void cuda_adamw_update(float *params, const float *grads, float *m, float *v, size_t n,
                              float lr, float beta1, float beta2, float eps, float wd,
                              float grad_scale, int t) {
    if (!n) return;
    /* bias corrections once per call, in double (as the CPU) */
    const float c1 = (float)(1.0 / (1.0 - pow((double)beta1, (double)t)));
    const float c2 = (float)(1.0 / (1.0 - pow((double)beta2, (double)t)));
    adamw_kernel<<<cuda_blocks(n, 256), 256>>>(params, grads, m, v, n, lr, beta1, beta2, eps, wd,
                                               grad_scale, c1, c2);
    cudaCheckLaunch("adamw_kernel");
}

/* --- Σ g² ----------------------------------------------------------------------- */

#define SUMSQ_BLOCKS 512
#define SUMSQ_THREADS 256

__global__ static void sumsq_partial_kernel(double *part, const float *g, size_t n) {
    __shared__ double red[32];
    double s = 0.0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        s += (double)g[i] * g[i];
    s = block_reduce(s, OpSum<double>(), 0.0, red);
    if (threadIdx.x == 0) part[blockIdx.x] = s;
}

__global__ static void sumsq_final_kernel(double *res, const double *part, int nparts) {
    __shared__ double red[32];
    double s = 0.0;
    for (int i = threadIdx.x; i < nparts; i += blockDim.x) s += part[i];
    s = block_reduce(s, OpSum<double>(), 0.0, red);
    if (threadIdx.x == 0) *res = s;
}

static double *sumsq_scratch; /* SUMSQ_BLOCKS partials + 1 result, allocated once */

static double cuda_sumsq(const float *g, size_t n) {
    if (!n) return 0.0;
    if (!sumsq_scratch) cudaCheck(cudaMalloc((void **)&sumsq_scratch, (SUMSQ_BLOCKS + 1) * sizeof(double)));
    sumsq_partial_kernel<<<SUMSQ_BLOCKS, SUMSQ_THREADS>>>(sumsq_scratch, g, n);
    cudaCheckLaunch("sumsq_partial_kernel");
    sumsq_final_kernel<<<1, SUMSQ_THREADS>>>(sumsq_scratch + SUMSQ_BLOCKS, sumsq_scratch, SUMSQ_BLOCKS);
    cudaCheckLaunch("sumsq_final_kernel");
    double r = 0.0;
    cudaCheck(cudaMemcpy(&r, sumsq_scratch + SUMSQ_BLOCKS, sizeof r, cudaMemcpyDeviceToHost));
    return r;
}

void cuda_register_ppo(Backend *be) {
    be->ppo_policy_loss = cuda_ppo_policy_loss;
    be->ppo_value_loss = cuda_ppo_value_loss;
}

void cuda_register_adamw(Backend *be) {
    be->adamw_update = cuda_adamw_update;
    be->sumsq = cuda_sumsq;
}
