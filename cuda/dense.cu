/* dense.cu — matmul (cuBLAS), GELU and the residual add of the CUDA backend.
 *
 * Row-major through column-major cuBLAS by the usual transpose trick: a
 * row-major (R, C) matrix is a column-major (C, R) one, so
 *   out (N,OC) = inp (N,IC) · W (OC,IC)^T   is   out^T = W^T' · inp^T
 * i.e. cublasSgemm(T, N, OC, N, IC, W, IC, inp, IC, out, OC). As on the CPU the
 * bias is copied into out first and the GEMM adds with beta = 1; backwards
 * accumulate with beta = 1. dbias is a column sum in a fixed order (one
 * thread column per output channel, a fixed tree over 32 row groups), so it
 * is deterministic. The math mode (fp32 / TF32) is the handle's, set by
 * backend_cuda_set_tf32.
 */
#include "cuda_internal.h"

/* out (N, OC) = bias broadcast */
__global__ static void bias_fill_kernel(float *out, const float *bias, size_t N, int OC) {
    size_t total = N * (size_t)OC;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = bias[i % OC];
}

/* the first OC columns of out (N, ldo) = bias broadcast, or 0 where bias is NULL */
__global__ static void bias_fill_ld_kernel(float *out, const float *bias, size_t N, int OC, int ldo) {
    size_t total = N * (size_t)OC;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x)
        out[i / OC * ldo + i % OC] = bias ? bias[i % OC] : 0.0f;
}

/* dst (C) += Σ_n src (N, C)[n]: block (32, 32), column tile of 32, 32 row groups */
__global__ static void colsum_accum_kernel(float *dst, const float *src, int N, int C) {
    __shared__ float part[32][33];
    int c = blockIdx.x * 32 + threadIdx.x;
    float s = 0.0f;
    if (c < C)
        for (int n = threadIdx.y; n < N; n += 32) s += src[(size_t)n * C + c];
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && c < C) {
        float t = 0.0f;
        for (int g = 0; g < 32; g++) t += part[g][threadIdx.x];
        dst[c] += t;
    }
}

void cuda_colsum_accum(float *dst, const float *src, int N, int C) {
    if (N <= 0 || C <= 0) return;
    colsum_accum_kernel<<<(C + 31) / 32, dim3(32, 32)>>>(dst, src, N, C);
    cudaCheckLaunch("colsum_accum_kernel");
}

static void cuda_matmul_forward(float *out, const float *inp, const float *weight,
                                const float *bias, int N, int IC, int OC) {
    if (N <= 0 || OC <= 0) return;
    float beta = 0.0f;
    const size_t total = (size_t)N * OC;
    if (bias) {
        bias_fill_kernel<<<cuda_blocks(total, 256), 256>>>(out, bias, (size_t)N, OC);
        cudaCheckLaunch("bias_fill_kernel");
        beta = 1.0f;
    }
    if (IC <= 0) {
        if (!bias) cudaCheck(cudaMemset(out, 0, total * sizeof(float)));
        return;
    }
    const float one = 1.0f;
    cublasCheck(cublasSgemm(cuda_cublas(), CUBLAS_OP_T, CUBLAS_OP_N, OC, N, IC, &one, weight, IC,
                            inp, IC, &beta, out, OC));
}

/* the decode GEMM: out (N, ldo), first OC columns = inp (N, IC) · W (OC, IC)^T + bias. cuBLAS picks its
   own kernels for a few rows (the weight read once, as on the CPU); ldc = ldo leaves the padding columns */
static void cuda_matmul_decode(float *out, const float *inp, const float *weight, const float *bias, int N,
                               int IC, int OC, int ldo) {
    if (N <= 0 || OC <= 0) return;
    float beta = 0.0f;
    if (bias || IC <= 0) {
        bias_fill_ld_kernel<<<cuda_blocks((size_t)N * OC, 256), 256>>>(out, bias, (size_t)N, OC, ldo);
        cudaCheckLaunch("bias_fill_ld_kernel");
        beta = 1.0f;
    }
    if (IC <= 0) return;
    const float one = 1.0f;
    cublasCheck(cublasSgemm(cuda_cublas(), CUBLAS_OP_T, CUBLAS_OP_N, OC, N, IC, &one, weight, IC,
                            inp, IC, &beta, out, ldo));
}

/* --- the bf16 GEMM: the CPU backend's pair-dot order (src/backend/cpu/decode_bf16.c), so that each output
   has the CPU's bits: 16 lanes, lane j summing columns 2j + 1 then 2j of each block of 32 with fused
   multiply-adds (products of bf16 numbers are exact), the row-dot tree of the lanes, the leftover columns in
   order, then the bias. A half-warp of 16 threads computes one output; the input is rounded to bf16 as it is
   read. */

/* bf16 of x, rounded to nearest, ties to even; a denormal becomes a zero of its sign; a NaN stays a NaN */
__device__ static inline unsigned short f32_to_bf16_dev(float x) {
    unsigned int u = __float_as_uint(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40);
    if ((u & 0x7f800000u) == 0) return (unsigned short)((u >> 16) & 0x8000u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
}

__device__ static inline float bf16_dev(unsigned short h) { return __uint_as_float((unsigned int)h << 16); }

/* blocks of 128 threads: 8 outputs, one per half-warp; output (n, o) = global half-warp index n·OC + o */
__global__ static void matmul_bf16_kernel(float *out, const float *inp, const unsigned short *w, const float *bias,
                                          int N, int IC, int OC, int ldo) {
    size_t hw = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 16;
    int j = threadIdx.x % 16;
    int live = hw < (size_t)N * OC; /* every lane takes part in the shuffles */
    int n = live ? (int)(hw / OC) : 0, o = live ? (int)(hw % OC) : 0;
    const float *x = inp + (size_t)n * IC;
    const unsigned short *wr = w + (size_t)o * IC;
    int full = IC / 32 * 32;
    float acc = 0.0f;
    for (int i = 0; live && i < full; i += 32) {
        int k = i + 2 * j;
        acc = fmaf(bf16_dev(f32_to_bf16_dev(x[k + 1])), bf16_dev(wr[k + 1]), acc);
        acc = fmaf(bf16_dev(f32_to_bf16_dev(x[k])), bf16_dev(wr[k]), acc);
    }
    /* the tree: lanes j and j + 8, then j and j + 4, then (h0 + h2) + (h1 + h3): xor partners (a + b = b + a) */
    acc += __shfl_xor_sync(0xffffffffu, acc, 8);
    acc += __shfl_xor_sync(0xffffffffu, acc, 4);
    acc += __shfl_xor_sync(0xffffffffu, acc, 2);
    acc += __shfl_xor_sync(0xffffffffu, acc, 1);
    if (!live || j != 0) return;
    for (int k = full; k < IC; k++) acc = fmaf(bf16_dev(f32_to_bf16_dev(x[k])), bf16_dev(wr[k]), acc);
    out[(size_t)n * ldo + o] = (bias ? bias[o] : 0.0f) + acc;
}

static void cuda_matmul_decode_bf16(float *out, const float *inp, const unsigned short *weight, const float *bias,
                                    int N, int IC, int OC, int ldo) {
    if (N <= 0 || OC <= 0) return;
    size_t threads = (size_t)N * OC * 16;
    matmul_bf16_kernel<<<(unsigned)((threads + 127) / 128), 128>>>(out, inp, weight, bias, N, IC, OC, ldo);
    cudaCheckLaunch("matmul_bf16_kernel");
}

__global__ static void to_bf16_kernel(unsigned short *dst, const float *src, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = f32_to_bf16_dev(src[i]);
}

static void cuda_to_bf16(unsigned short *dst, const float *src, size_t n) {
    if (!n) return;
    to_bf16_kernel<<<cuda_blocks(n, 256), 256>>>(dst, src, n);
    cudaCheckLaunch("to_bf16_kernel");
}

static void cuda_matmul_backward(float *dinp, float *dweight, float *dbias,
                                 const float *dout, const float *inp, const float *weight,
                                 int N, int IC, int OC) {
    if (N <= 0 || OC <= 0) return;
    const float one = 1.0f;
    if (IC > 0) {
        /* dinp^T (IC, N) += W^T (IC, OC) · dout^T (OC, N) */
        if (dinp)
            cublasCheck(cublasSgemm(cuda_cublas(), CUBLAS_OP_N, CUBLAS_OP_N, IC, N, OC, &one, weight,
                                    IC, dout, OC, &one, dinp, IC));
        /* dW^T (IC, OC) += inp^T (IC, N) · dout (N, OC) */
        if (dweight)
            cublasCheck(cublasSgemm(cuda_cublas(), CUBLAS_OP_N, CUBLAS_OP_T, IC, OC, N, &one, inp, IC,
                                    dout, OC, &one, dweight, IC));
    }
    if (dbias) cuda_colsum_accum(dbias, dout, N, OC);
}

#define GELU_SCALE 0.7978845608028654f /* sqrt(2/pi) */

__global__ static void gelu_forward_kernel(float *out, const float *inp, size_t N) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < N;
         i += (size_t)gridDim.x * blockDim.x) {
        float xi = inp[i];
        float cube = 0.044715f * xi * xi * xi;
        out[i] = 0.5f * xi * (1.0f + tanhf(GELU_SCALE * (xi + cube)));
    }
}

/* dinp may equal dout (elementwise, read before write) */
__global__ static void gelu_backward_kernel(float *dinp, const float *inp, const float *dout, size_t N) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < N;
         i += (size_t)gridDim.x * blockDim.x) {
        float xi = inp[i];
        float cube = 0.044715f * xi * xi * xi;
        float th = tanhf(GELU_SCALE * (xi + cube));
        float sech2 = 1.0f - th * th;
        float local = 0.5f * (1.0f + th) +
                      0.5f * xi * sech2 * GELU_SCALE * (1.0f + 3.0f * 0.044715f * xi * xi);
        float g = dout[i];
        dinp[i] += local * g;
    }
}

static void cuda_gelu_forward(float *out, const float *inp, size_t N) {
    if (!N) return;
    gelu_forward_kernel<<<cuda_blocks(N, 256), 256>>>(out, inp, N);
    cudaCheckLaunch("gelu_forward_kernel");
}

static void cuda_gelu_backward(float *dinp, const float *inp, const float *dout, size_t N) {
    if (!N) return;
    gelu_backward_kernel<<<cuda_blocks(N, 256), 256>>>(dinp, inp, dout, N);
    cudaCheckLaunch("gelu_backward_kernel");
}

__global__ static void residual_forward_kernel(float *out, const float *a, const float *b, size_t N) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < N;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = a[i] + b[i];
}

__global__ static void residual_backward_kernel(float *da, float *db, const float *dout, size_t N) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < N;
         i += (size_t)gridDim.x * blockDim.x) {
        float g = dout[i];
        if (da) da[i] += g;
        if (db) db[i] += g;
    }
}

static void cuda_residual_forward(float *out, const float *a, const float *b, size_t N) {
    if (!N) return;
    residual_forward_kernel<<<cuda_blocks(N, 256), 256>>>(out, a, b, N);
    cudaCheckLaunch("residual_forward_kernel");
}

static void cuda_residual_backward(float *da, float *db, const float *dout, size_t N) {
    if (!N || (!da && !db)) return;
    residual_backward_kernel<<<cuda_blocks(N, 256), 256>>>(da, db, dout, N);
    cudaCheckLaunch("residual_backward_kernel");
}

void cuda_register_dense(Backend *be) {
    be->matmul_forward = cuda_matmul_forward;
    be->matmul_decode = cuda_matmul_decode;
    be->matmul_decode_bf16 = cuda_matmul_decode_bf16;
    be->to_bf16 = cuda_to_bf16;
    be->matmul_backward = cuda_matmul_backward;
    be->gelu_forward = cuda_gelu_forward;
    be->gelu_backward = cuda_gelu_backward;
    be->residual_forward = cuda_residual_forward;
    be->residual_backward = cuda_residual_backward;
}
