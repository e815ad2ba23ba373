/* cuemu_launch.h — the interface between emulated device code and launch.c,
 * which runs a kernel launch on the CPU: the built-in index variables, the
 * dynamic shared memory, the block barrier and the warp exchange behind
 * __shfl_xor_sync. cuda_runtime.h wraps these in CUDA's names. C and C++.
 */
#ifndef CUEMU_LAUNCH_H
#define CUEMU_LAUNCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    unsigned x, y, z;
} CuEmuDim3;

/* threadIdx, blockIdx, blockDim, gridDim of the thread now running */
extern CuEmuDim3 cuemu_thread_idx, cuemu_block_idx, cuemu_block_dim, cuemu_grid_dim;

/* sm_90's opt-in limit of shared memory per block (cudaFuncSetAttribute) */
#define CUEMU_MAX_DYNAMIC_SMEM (227 * 1024)

/* the block's `extern __shared__` array; filled with 0xFF bytes (NaN floats) before each block */
extern char cuemu_dynamic_smem[CUEMU_MAX_DYNAMIC_SMEM];

/* runs run(call) once per thread of every block of the grid; `kernel` keys
 * the shared-memory opt-in, `name` is for messages. A configuration CUDA
 * would refuse is not run and leaves the error for cudaGetLastError. */
void cuemu_launch(const char *name, const void *kernel, CuEmuDim3 grid, CuEmuDim3 block, size_t smem,
                  void (*run)(void *), void *call);

/* __syncthreads */
void cuemu_syncthreads(void);

/* __shfl_xor_sync on up to 8 bytes: every lane of the warp must call it */
uint64_t cuemu_shfl_xor(uint64_t value, int lane_mask, unsigned member_mask);

#ifdef __cplusplus
}
#endif
#endif
