/* backend_cuda.h — the CUDA backend's entry points beyond the Backend struct.
 * Declared only for builds with NEREUS_CUDA (USE_CUDA=1 or auto with nvcc);
 * the implementation lives in cuda/. The Backend it returns takes DEVICE
 * pointers everywhere (cudaMalloc'd by be->alloc) and runs on the legacy
 * default stream, so be->download after any op sees its results.
 */
#ifndef NEREUS_BACKEND_CUDA_H
#define NEREUS_BACKEND_CUDA_H

#include <stddef.h>
#include "nereus/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The CUDA backend when a usable device is present, else NULL with why (a
 * sentence quoting the CUDA error string). The first call picks the device:
 * local rank (MPI_COMM_TYPE_SHARED split of MPI_COMM_WORLD, when MPI is
 * initialised) modulo the device count; later calls return the same backend
 * (or the same failure). Collective over MPI_COMM_WORLD on its first call
 * when MPI is up (also on ranks whose probe fails); it succeeds on every
 * rank or on none (one backend per job). On success it also
 * registers the CUDA CommDevice with the comm facade (comm.h): NCCL groups
 * for the EMU communicators when NCCL is built and no two ranks share a
 * device (by UUID, over every node), else host staging of device buffers. */
const Backend *backend_cuda_probe(char *why, size_t why_len);

/* "NVIDIA H200 (device 0 of 1, sm_90)" after a successful probe, else "" */
const char *backend_cuda_device_name(void);

/* "NCCL 2.28.9 groups" or "no NCCL groups (...): device buffers stage
 * through host memory" after a successful probe, else "" */
const char *backend_cuda_groups_note(void);

/* Local: 1 when p points into memory from this backend's alloc (device
 * memory), 0 for host memory or before a successful probe. */
int backend_cuda_is_device(const void *p);

/* matmul_forward/backward: 0 = strict fp32 (default), 1 = TF32 tensor cores
 * (cublasSetMathMode CUBLAS_TF32_TENSOR_OP_MATH). Takes effect on the next op. */
void backend_cuda_set_tf32(int on);
int backend_cuda_get_tf32(void);

#ifdef __cplusplus
}
#endif
#endif
