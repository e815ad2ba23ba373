/* cuda_internal.h — private glue of the CUDA backend (C++ / nvcc only).
 *
 * As in src/backend/cpu/: each .cu file keeps its kernels static and exposes
 * one cuda_register_<concern>(Backend *); cuda.cu builds the struct once the
 * probe has found a device. Everything runs on the legacy default stream
 * (stream 0), cuBLAS included, so ops are ordered and be->download sees the
 * results of every op before it. Block reductions below use a fixed tree
 * (warp shuffles, then one warp over the warp partials), so for a given
 * block size a reduction gives the same bits run after run.
 */
#ifndef NEREUS_CUDA_INTERNAL_H
#define NEREUS_CUDA_INTERNAL_H

#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <float.h>
#include <math.h>

extern "C" {
#include "nereus/backend.h"
#include "nereus/backend_cuda.h"
}
#include "cuda_check.h"

void cuda_register_memory(Backend *be);
void cuda_register_dense(Backend *be);
void cuda_register_norm(Backend *be);
void cuda_register_attention(Backend *be);
void cuda_register_llama(Backend *be);
void cuda_register_embed(Backend *be);
void cuda_register_heads(Backend *be);
void cuda_register_ppo(Backend *be);
void cuda_register_adamw(Backend *be);

/* comm_cuda.c: registers the CUDA CommDevice with the comm facade (comm.h)
 * once the probe has chosen a device; with groups = 1 and NCCL in the build
 * its device groups are NCCL communicators, else device buffers stage
 * through host memory (why_not says why, when groups = 0). Writes one line
 * for the log into note. */
extern "C" void cuda_comm_register(int groups, const char *why_not, char *note, size_t note_len);

/* the cuBLAS handle of the chosen device (created by the probe) */
cublasHandle_t cuda_cublas(void);

/* dst (C) += Σ_n src (N, C)[n], deterministic (dense.cu) */
void cuda_colsum_accum(float *dst, const float *src, int N, int C);

static inline unsigned cuda_blocks(size_t n, unsigned threads) {
    size_t b = (n + threads - 1) / threads;
    return (unsigned)(b > 65535u * 16u ? 65535u * 16u : b); /* kernels grid-stride beyond */
}

/* --- block reductions (blockDim.x a multiple of 32, ≤ 1024) ---------------- */
template <typename T> struct OpSum { __device__ T operator()(T a, T b) const { return a + b; } };
template <typename T> struct OpMax { __device__ T operator()(T a, T b) const { return a > b ? a : b; } };

template <typename T, typename Op> __device__ inline T warp_reduce(T v, Op op) {
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* every thread gets the result; `shared` holds ≥ 32 T; safe to call repeatedly */
template <typename T, typename Op> __device__ inline T block_reduce(T v, Op op, T identity, T *shared) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    v = warp_reduce(v, op);
    __syncthreads(); /* shared may still be read by a previous call */
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    T w = lane < nwarps ? shared[lane] : identity;
    return warp_reduce(w, op);
}

#endif
