/* cuda_runtime_api.h — stand-in for the CUDA runtime's host API, for the CPU
 * emulation of the CUDA kernels (tests/gpu/emu/). It shadows the toolkit's
 * header (this directory comes first on the include path) and declares only
 * what the kernel files in cuda/ and the checks of tests/gpu/parity.c call;
 * a kernel file that starts using another call fails to build here, which is
 * the cue to add it. Usable from C (parity.c) and C++ (the kernels).
 *
 * "Device" memory is host memory (memory.c). Errors that CUDA reports for a
 * launch (a configuration over a limit) are sticky until cudaGetLastError,
 * as in CUDA (launch.c).
 */
#ifndef CUEMU_CUDA_RUNTIME_API_H
#define CUEMU_CUDA_RUNTIME_API_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
} cudaError_t;

typedef enum {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
} cudaMemcpyKind;

enum cudaMemoryType { cudaMemoryTypeUnregistered = 0, cudaMemoryTypeHost = 1, cudaMemoryTypeDevice = 2 };
typedef struct {
    enum cudaMemoryType type;
} cudaPointerAttributes;

enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };

/* memory.c */
cudaError_t cudaMalloc(void **p, size_t bytes);
cudaError_t cudaFree(void *p);
cudaError_t cudaMemset(void *p, int value, size_t bytes);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *a, const void *p);

/* launch.cpp */
cudaError_t cudaGetLastError(void);
const char *cudaGetErrorString(cudaError_t e);
const char *cudaGetErrorName(cudaError_t e);
cudaError_t cuemu_func_set_max_dynamic_smem(const void *kernel, int bytes);

#ifdef __cplusplus
}

/* the typed forms the .cu files call */
template <typename T> static inline cudaError_t cudaMalloc(T **p, size_t bytes) {
    return cudaMalloc(reinterpret_cast<void **>(p), bytes);
}
template <typename T>
static inline cudaError_t cudaFuncSetAttribute(T *kernel, enum cudaFuncAttribute attr, int value) {
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaErrorInvalidValue;
    return cuemu_func_set_max_dynamic_smem(reinterpret_cast<const void *>(kernel), value);
}
#endif

#endif
