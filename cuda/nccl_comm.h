/* nccl_comm.h — the NCCL side of the comm facade, as far as issue #8 goes: an
 * NCCL communicator built from an MPI communicator (the unique id broadcast
 * over it, as in nccl-tests) and an in-place sum all-reduce of device floats.
 * EMU groups will call nccl_comm_from_mpi on each MPI_Comm_split they make.
 * Built only when NCCL is found (cuda/cuda.mk defines NEREUS_NCCL=1).
 */
#ifndef NEREUS_NCCL_COMM_H
#define NEREUS_NCCL_COMM_H

#include <stddef.h>
#include <mpi.h>
#include <nccl.h>
#include <cuda_runtime_api.h>

#include "nereus/util.h"

/* NCCL: names the call, the NCCL error string and ncclGetLastError's detail */
#define ncclCheck(call)                                                                        \
    do {                                                                                       \
        ncclResult_t r_ = (call);                                                              \
        if (r_ != ncclSuccess)                                                                 \
            nr_fatal_at(__FILE__, __LINE__, "%s failed: %s (%s)", #call, ncclGetErrorString(r_), \
                        ncclGetLastError(NULL));                                               \
    } while (0)

/* collective over comm: every rank's device (cudaSetDevice) must already be
 * chosen, i.e. the CUDA backend probed. *out is a new communicator with the
 * same ranks in the same order. */
void nccl_comm_from_mpi(MPI_Comm comm, ncclComm_t *out);

/* collective over the communicator: buf (n) device floats, summed in place on
 * stream (0 = legacy default stream, the backend's), then synchronised */
void nccl_allreduce_sum(ncclComm_t comm, float *buf, size_t n, cudaStream_t stream);

/* local: frees the communicator (after every operation on it completed) */
void nccl_comm_destroy(ncclComm_t comm);

#endif
