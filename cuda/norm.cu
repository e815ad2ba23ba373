/* norm.cu — LayerNorm of the CUDA backend (llm.c layernorm_forward/backward):
 * one block per row for the statistics and dinp (two-pass mean / variance
 * as on the CPU), and a separate column kernel for dweight and dbias, which
 * sum over rows in a fixed order (32 row groups, then a fixed tree), so the
 * parameter gradients are deterministic without atomics.
 */
#include "cuda_internal.h"

#define LN_EPS 1e-5f
#define LN_THREADS 256

__global__ static void layernorm_forward_kernel(float *out, float *mean, float *rstd, const float *inp,
                                                const float *weight, const float *bias, int C) {
    __shared__ float red[32];
    const size_t n = blockIdx.x;
    const float *x = inp + n * C;
    float *o = out + n * C;
    float s = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) s += x[c];
    float m = block_reduce(s, OpSum<float>(), 0.0f, red) / (float)C;
    float v = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float d = x[c] - m;
        v += d * d;
    }
    v = block_reduce(v, OpSum<float>(), 0.0f, red) / (float)C;
    float r = 1.0f / sqrtf(v + LN_EPS);
    for (int c = threadIdx.x; c < C; c += blockDim.x) o[c] = (x[c] - m) * r * weight[c] + bias[c];
    if (threadIdx.x == 0) {
        if (mean) mean[n] = m;
        if (rstd) rstd[n] = r;
    }
}

__global__ static void layernorm_dinp_kernel(float *dinp, const float *dout, const float *inp,
                                             const float *weight, const float *mean, const float *rstd,
                                             int C) {
    __shared__ float red[32];
    const size_t n = blockIdx.x;
    const float *dy = dout + n * C, *x = inp + n * C;
    const float m = mean[n], s = rstd[n];
    float a1 = 0.0f, a2 = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float norm = (x[c] - m) * s;
        float dn = weight[c] * dy[c];
        a1 += dn;
        a2 += dn * norm;
    }
    float dnorm_mean = block_reduce(a1, OpSum<float>(), 0.0f, red) / (float)C;
    float dnorm_norm_mean = block_reduce(a2, OpSum<float>(), 0.0f, red) / (float)C;
    float *dx = dinp + n * C;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float norm = (x[c] - m) * s;
        float dn = weight[c] * dy[c];
        dx[c] += (dn - dnorm_mean - norm * dnorm_norm_mean) * s;
    }
}

/* dweight (C) += Σ_n norm·dy, dbias (C) += Σ_n dy: block (32, 32) per 32 columns */
__global__ static void layernorm_dparams_kernel(float *dweight, float *dbias, const float *dout,
                                                const float *inp, const float *mean, const float *rstd,
                                                int N, int C) {
    __shared__ float pw[32][33], pb[32][33];
    int c = blockIdx.x * 32 + threadIdx.x;
    float sw = 0.0f, sb = 0.0f;
    if (c < C)
        for (int n = threadIdx.y; n < N; n += 32) {
            float dy = dout[(size_t)n * C + c];
            sw += (inp[(size_t)n * C + c] - mean[n]) * rstd[n] * dy;
            sb += dy;
        }
    pw[threadIdx.y][threadIdx.x] = sw;
    pb[threadIdx.y][threadIdx.x] = sb;
    __syncthreads();
    if (threadIdx.y == 0 && c < C) {
        float tw = 0.0f, tb = 0.0f;
        for (int g = 0; g < 32; g++) {
            tw += pw[g][threadIdx.x];
            tb += pb[g][threadIdx.x];
        }
        if (dweight) dweight[c] += tw;
        if (dbias) dbias[c] += tb;
    }
}

static void cuda_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                                   const float *weight, const float *bias, int N, int C) {
    if (N <= 0 || C <= 0) return;
    layernorm_forward_kernel<<<N, LN_THREADS>>>(out, mean, rstd, inp, weight, bias, C);
    cudaCheckLaunch("layernorm_forward_kernel");
}

static void cuda_layernorm_backward(float *dinp, float *dweight, float *dbias,
                                    const float *dout, const float *inp, const float *weight,
                                    const float *mean, const float *rstd, int N, int C) {
    if (N <= 0 || C <= 0) return;
    if (dweight || dbias) {
        layernorm_dparams_kernel<<<(C + 31) / 32, dim3(32, 32)>>>(dweight, dbias, dout, inp, mean, rstd, N, C);
        cudaCheckLaunch("layernorm_dparams_kernel");
    }
    if (dinp) {
        layernorm_dinp_kernel<<<N, LN_THREADS>>>(dinp, dout, inp, weight, mean, rstd, C);
        cudaCheckLaunch("layernorm_dinp_kernel");
    }
}

void cuda_register_norm(Backend *be) {
    be->layernorm_forward = cuda_layernorm_forward;
    be->layernorm_backward = cuda_layernorm_backward;
}
