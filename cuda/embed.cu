/* embed.cu — token + position embeddings of the CUDA backend (llm.c encoder).
 *
 * The backward is deterministic and adds in the CPU's order, without atomics:
 * dwpe has one thread per (t, c) summing over b ascending; dwte has one thread
 * per (vocabulary group g, channel c) that walks every token in (b, t) order
 * and adds the ones whose id ≡ g (mod ENC_GROUPS), so each dwte row is owned
 * by one thread column and repeated tokens accumulate in index order. The
 * price is that each thread reads all B·T token ids (cached, broadcast
 * across the warp): fine at B·T ≤ 64k, not the fastest scheme.
 */
#include "cuda_internal.h"

#define ENC_GROUPS 64

__global__ static void encoder_forward_kernel(float *out, const int *inp, const float *wte, const float *wpe,
                                              int B, int T, int C, int pos0) {
    const size_t total = (size_t)B * T * C;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x) {
        int c = (int)(idx % C);
        size_t bt = idx / C;
        int t = (int)(bt % T);
        out[idx] = wte[(size_t)inp[bt] * C + c] + wpe[(size_t)(t + pos0) * C + c];
    }
}

/* grid (ceil(C/128), ENC_GROUPS), block 128 */
__global__ static void encoder_dwte_kernel(float *dwte, const float *dout, const int *inp, int BT, int C) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x, g = blockIdx.y;
    if (c >= C) return;
    for (int bt = 0; bt < BT; bt++) {
        int tok = inp[bt];
        if (tok % ENC_GROUPS != g) continue;
        dwte[(size_t)tok * C + c] += dout[(size_t)bt * C + c];
    }
}

__global__ static void encoder_dwpe_kernel(float *dwpe, const float *dout, int B, int T, int C, int pos0) {
    const size_t total = (size_t)T * C;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x) {
        int c = (int)(idx % C), t = (int)(idx / C);
        float acc = dwpe[(size_t)(t + pos0) * C + c];
        for (int b = 0; b < B; b++) acc += dout[((size_t)b * T + t) * C + c];
        dwpe[(size_t)(t + pos0) * C + c] = acc;
    }
}

static void cuda_encoder_forward(float *out, const int *inp, const float *wte, const float *wpe,
                                 int B, int T, int C, int pos0) {
    const size_t total = (size_t)B * T * C;
    if (!total) return;
    encoder_forward_kernel<<<cuda_blocks(total, 256), 256>>>(out, inp, wte, wpe, B, T, C, pos0);
    cudaCheckLaunch("encoder_forward_kernel");
}

static void cuda_encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inp,
                                  int B, int T, int C, int pos0) {
    if (B <= 0 || T <= 0 || C <= 0) return;
    if (dwte) {
        encoder_dwte_kernel<<<dim3((C + 127) / 128, ENC_GROUPS), 128>>>(dwte, dout, inp, B * T, C);
        cudaCheckLaunch("encoder_dwte_kernel");
    }
    if (dwpe) {
        encoder_dwpe_kernel<<<cuda_blocks((size_t)T * C, 256), 256>>>(dwpe, dout, B, T, C, pos0);
        cudaCheckLaunch("encoder_dwpe_kernel");
    }
}

void cuda_register_embed(Backend *be) {
    be->encoder_forward = cuda_encoder_forward;
    be->encoder_backward = cuda_encoder_backward;
}
