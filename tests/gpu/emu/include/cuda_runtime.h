/* cuda_runtime.h — stand-in for the CUDA runtime header in the CPU emulation
 * (tests/gpu/emu/): the host API (cuda_runtime_api.h) and the part of CUDA
 * C++'s device language that the kernel files in cuda/ use, mapped onto
 * launch.c. C++ only, as the kernel files are. The kernels compile as
 * ordinary host functions: __global__ and __device__ vanish, __shared__
 * variables become static (one copy, shared by the threads of the block
 * being run), threadIdx and the other built-ins name launch.c's variables.
 * A launch `k<<<g, b, s>>>(args)` is rewritten by launches.py as
 * cuemu_launch_kernel(k, "k", g, b, s, args). The maths functions are the
 * host's (glibc), not CUDA's: see docs/CUDA.md.
 */
#ifndef CUEMU_CUDA_RUNTIME_H
#define CUEMU_CUDA_RUNTIME_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <tuple>
#include <utility>

#include "cuda_runtime_api.h"
#include "cuemu_launch.h"

#define __global__
#define __device__
#define __host__
#define __shared__ static

#define threadIdx cuemu_thread_idx
#define blockIdx cuemu_block_idx
#define blockDim cuemu_block_dim
#define gridDim cuemu_grid_dim

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

static inline void __syncthreads(void) { cuemu_syncthreads(); }

template <typename T> static inline T __shfl_xor_sync(unsigned member_mask, T var, int lane_mask) {
    static_assert(sizeof(T) <= sizeof(uint64_t), "__shfl_xor_sync of more than 8 bytes");
    uint64_t u = 0;
    memcpy(&u, &var, sizeof var);
    u = cuemu_shfl_xor(u, lane_mask, member_mask);
    memcpy(&var, &u, sizeof var);
    return var;
}

/* atomic by construction: a thread is never switched out inside it */
template <typename T> static inline T atomicAdd(T *address, T val) {
    T old = *address;
    *address = old + val;
    return old;
}

static inline uint32_t __float_as_uint(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float __uint_as_float(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline int min(int a, int b) { return a < b ? a : b; }

/* the arguments are converted to the kernel's parameter types once, at the
 * launch, as CUDA does, and every thread of every block gets them */
template <typename... P, typename... A>
static inline void cuemu_launch_kernel(void (*kernel)(P...), const char *name, dim3 grid, dim3 block, size_t smem,
                                       A &&...args) {
    struct Call {
        void (*kernel)(P...);
        std::tuple<P...> args;
    } call{kernel, std::tuple<P...>(std::forward<A>(args)...)};
    cuemu_launch(name, reinterpret_cast<const void *>(kernel), CuEmuDim3{grid.x, grid.y, grid.z},
                 CuEmuDim3{block.x, block.y, block.z}, smem,
                 [](void *c) {
                     Call *k = static_cast<Call *>(c);
                     std::apply(k->kernel, k->args);
                 },
                 &call);
}

#endif
