/* cuda_check.h — one check macro per library (STYLE.md): cudaCheck, cublasCheck.
 * A failure names the call, the file, the line and the library's error string,
 * then aborts the job through nr_fatal_at (MPI_Abort when MPI is up). Usable
 * from C (cuda/nccl_comm.c, tests/gpu/parity.c) and from the .cu files.
 */
#ifndef NEREUS_CUDA_CHECK_H
#define NEREUS_CUDA_CHECK_H

#include <cuda_runtime_api.h>
#include <cublas_v2.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "nereus/util.h"
#ifdef __cplusplus
}
#endif

#define cudaCheck(call)                                                                        \
    do {                                                                                       \
        cudaError_t e_ = (call);                                                               \
        if (e_ != cudaSuccess)                                                                 \
            nr_fatal_at(__FILE__, __LINE__, "%s failed: %s (%s, error %d)", #call,             \
                        cudaGetErrorString(e_), cudaGetErrorName(e_), (int)e_);                \
    } while (0)

/* after a kernel launch: launch errors now, execution errors at the next sync */
#define cudaCheckLaunch(what) cudaCheck(cudaGetLastError())

#define cublasCheck(call)                                                                      \
    do {                                                                                       \
        cublasStatus_t s_ = (call);                                                            \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                       \
            nr_fatal_at(__FILE__, __LINE__, "%s failed: %s (%s, status %d)", #call,            \
                        cublasGetStatusString(s_), cublasGetStatusName(s_), (int)s_);          \
    } while (0)

#endif
