/* llama.cu — the Llama / Qwen-family pointwise kernels of the CUDA backend,
 * the same computations as src/backend/cpu/llama.c: rotary position
 * embedding (transformers' rotate_half convention, one thread per rotated
 * (i, i + hs/2) pair, cos and sin of the float32 angle p·inv_freq[i]; the
 * backward rotates by the opposite angle) and SwiGLU (one thread per output
 * element). Every thread owns the elements it writes, so there are no atomics
 * and the results do not depend on the launch shape.
 */
#include "cuda_internal.h"

/* x (B, T, ld), heads 0..NH-1 of hs at the start of each row, rotated by sign·angle */
__global__ static void rope_kernel(float *x, const float *inv_freq, int B, int T, int NH, int hs, int ld,
                                   int pos0, float sign) {
    const int half = hs / 2;
    const size_t total = (size_t)B * T * NH * half;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x) {
        const int i = (int)(idx % half);
        const int h = (int)((idx / half) % NH);
        const size_t bt = idx / ((size_t)half * NH); /* b·T + t */
        const float a = (float)(pos0 + (int)(bt % T)) * inv_freq[i];
        const float c = cosf(a), s = sign * sinf(a);
        float *v = x + bt * ld + (size_t)h * hs;
        const float x1 = v[i], x2 = v[i + half];
        v[i] = x1 * c - x2 * s;
        v[i + half] = x2 * c + x1 * s;
    }
}

static void cuda_rope_rotate(float *x, const float *inv_freq, int B, int T, int NH, int hs, int ld, int pos0,
                             float sign) {
    const size_t total = (size_t)B * T * NH * (hs / 2);
    if (!total) return;
    rope_kernel<<<cuda_blocks(total, 256), 256>>>(x, inv_freq, B, T, NH, hs, ld, pos0, sign);
    cudaCheckLaunch("rope_kernel");
}

static void cuda_rope_forward(float *x, const float *inv_freq, int B, int T, int NH, int hs, int ld, int pos0) {
    cuda_rope_rotate(x, inv_freq, B, T, NH, hs, ld, pos0, 1.0f);
}

static void cuda_rope_backward(float *dx, const float *inv_freq, int B, int T, int NH, int hs, int ld, int pos0) {
    cuda_rope_rotate(dx, inv_freq, B, T, NH, hs, ld, pos0, -1.0f);
}

/* out (N, F) = silu(gate)·up, inp (N, 2F) rows [gate | up] */
__global__ static void swiglu_forward_kernel(float *out, const float *inp, int N, int F) {
    const size_t total = (size_t)N * F;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x) {
        const size_t n = idx / F, i = idx % F;
        const float g = inp[n * 2 * F + i], u = inp[n * 2 * F + F + i];
        out[idx] = g / (1.0f + expf(-g)) * u;
    }
}

/* dgate += dy·up·σ(g)·(1 + g·(1 − σ(g))), dup += dy·g·σ(g) */
__global__ static void swiglu_backward_kernel(float *dinp, const float *dout, const float *inp, int N, int F) {
    const size_t total = (size_t)N * F;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x) {
        const size_t n = idx / F, i = idx % F, j = n * 2 * F + i;
        const float g = inp[j], u = inp[j + F], dy = dout[idx];
        const float sig = 1.0f / (1.0f + expf(-g));
        dinp[j] += dy * u * sig * (1.0f + g * (1.0f - sig));
        dinp[j + F] += dy * g * sig;
    }
}

static void cuda_swiglu_forward(float *out, const float *inp, int N, int F) {
    const size_t total = (size_t)N * F;
    if (!total) return;
    swiglu_forward_kernel<<<cuda_blocks(total, 256), 256>>>(out, inp, N, F);
    cudaCheckLaunch("swiglu_forward_kernel");
}

static void cuda_swiglu_backward(float *dinp, const float *dout, const float *inp, int N, int F) {
    const size_t total = (size_t)N * F;
    if (!total) return;
    swiglu_backward_kernel<<<cuda_blocks(total, 256), 256>>>(dinp, dout, inp, N, F);
    cudaCheckLaunch("swiglu_backward_kernel");
}

void cuda_register_llama(Backend *be) {
    be->rope_forward = cuda_rope_forward;
    be->rope_backward = cuda_rope_backward;
    be->swiglu_forward = cuda_swiglu_forward;
    be->swiglu_backward = cuda_swiglu_backward;
}
