/* norm.cu — LayerNorm (llm.c layernorm_forward/backward) and RMSNorm
 * (transformers' LlamaRMSNorm) of the CUDA backend: one block per row for the
 * statistics and dinp (LayerNorm two-pass mean / variance as on the CPU), and
 * a separate column kernel for dweight (and LayerNorm's dbias), which sums
 * over rows in a fixed order (32 row groups, then a fixed tree), so the
 * parameter gradients are deterministic without atomics. RMSNorm rows sit in
 * backend.h's strided layout: row r = (n, h) at n·ld + h·C.
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

/* offset of row r of N·H rows of C, row (n, h) at n·ld + h·C */
__device__ static inline size_t norm_row(int r, int H, int C, int ld) {
    return (size_t)(r / H) * ld + (size_t)(r % H) * C;
}

/* dweight (C) += Σ_r norm·dy, dbias (C) += Σ_r dy over rows r of norm_row's
 * layout (LayerNorm: H = 1, ld = C; RMSNorm: mean NULL, no dbias):
 * block (32, 32) per 32 columns */
__global__ static void norm_dparams_kernel(float *dweight, float *dbias, const float *dout,
                                           const float *inp, const float *mean, const float *rstd,
                                           int N, int C, int H, int ld) {
    __shared__ float pw[32][33], pb[32][33];
    int c = blockIdx.x * 32 + threadIdx.x;
    float sw = 0.0f, sb = 0.0f;
    if (c < C)
        for (int n = threadIdx.y; n < N; n += 32) {
            const size_t j = norm_row(n, H, C, ld) + c;
            float dy = dout[j];
            sw += (inp[j] - (mean ? mean[n] : 0.0f)) * rstd[n] * dy;
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
        norm_dparams_kernel<<<(C + 31) / 32, dim3(32, 32)>>>(dweight, dbias, dout, inp, mean, rstd, N, C, 1, C);
        cudaCheckLaunch("norm_dparams_kernel");
    }
    if (dinp) {
        layernorm_dinp_kernel<<<N, LN_THREADS>>>(dinp, dout, inp, weight, mean, rstd, C);
        cudaCheckLaunch("layernorm_dinp_kernel");
    }
}

/* one block per row r: s = (Σx²/C + eps)^-1/2, out = x·s·w */
__global__ static void rmsnorm_forward_kernel(float *out, float *rstd, const float *inp, const float *weight,
                                              int H, int C, int ld, float eps) {
    __shared__ float red[32];
    const size_t off = norm_row(blockIdx.x, H, C, ld);
    const float *x = inp + off;
    float *o = out + off;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) ss += x[c] * x[c];
    ss = block_reduce(ss, OpSum<float>(), 0.0f, red);
    const float s = 1.0f / sqrtf(ss / (float)C + eps);
    for (int c = threadIdx.x; c < C; c += blockDim.x) o[c] = x[c] * s * weight[c];
    if (threadIdx.x == 0 && rstd) rstd[blockIdx.x] = s;
}

/* one block per row r: dx += (w·dy − x·s²·(Σ w·dy·x)/C)·s */
__global__ static void rmsnorm_dinp_kernel(float *dinp, const float *dout, const float *inp, const float *weight,
                                           const float *rstd, int H, int C, int ld) {
    __shared__ float red[32];
    const size_t off = norm_row(blockIdx.x, H, C, ld);
    const float *dy = dout + off, *x = inp + off;
    const float s = rstd[blockIdx.x];
    float dot = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) dot += weight[c] * dy[c] * x[c];
    dot = block_reduce(dot, OpSum<float>(), 0.0f, red);
    const float k = dot / (float)C * s * s;
    float *dx = dinp + off;
    for (int c = threadIdx.x; c < C; c += blockDim.x) dx[c] += (weight[c] * dy[c] - x[c] * k) * s;
}

static void cuda_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *weight,
                                 int N, int H, int C, int ld, float eps) {
    if (N <= 0 || H <= 0 || C <= 0) return;
    rmsnorm_forward_kernel<<<N * H, LN_THREADS>>>(out, rstd, inp, weight, H, C, ld, eps);
    cudaCheckLaunch("rmsnorm_forward_kernel");
}

static void cuda_rmsnorm_backward(float *dinp, float *dweight, const float *dout, const float *inp,
                                  const float *weight, const float *rstd, int N, int H, int C, int ld) {
    if (N <= 0 || H <= 0 || C <= 0) return;
    if (dweight) {
        norm_dparams_kernel<<<(C + 31) / 32, dim3(32, 32)>>>(dweight, (float *)NULL, dout, inp, (const float *)NULL,
                                                             rstd, N * H, C, H, ld);
        cudaCheckLaunch("norm_dparams_kernel");
    }
    if (dinp) {
        rmsnorm_dinp_kernel<<<N * H, LN_THREADS>>>(dinp, dout, inp, weight, rstd, H, C, ld);
        cudaCheckLaunch("rmsnorm_dinp_kernel");
    }
}

void cuda_register_norm(Backend *be) {
    be->layernorm_forward = cuda_layernorm_forward;
    be->layernorm_backward = cuda_layernorm_backward;
    be->rmsnorm_forward = cuda_rmsnorm_forward;
    be->rmsnorm_backward = cuda_rmsnorm_backward;
}
