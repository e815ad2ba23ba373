/* nccl_comm.h — the NCCL primitives under the comm facade's device groups
 * (cuda/comm_cuda.c): an NCCL communicator built from an MPI communicator
 * (the unique id broadcast over it, as in nccl-tests), one split from
 * another (ncclCommSplit, MPI_Comm_split's color/key rule), and blocking
 * in-place collectives and point-to-point on device buffers. Everything runs
 * on the legacy default stream (0, the backend's) and synchronises it before
 * returning, so a call has the blocking semantics of the MPI one it stands
 * for. Built only when NCCL is found (cuda/cuda.mk defines NEREUS_NCCL=1).
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

/* collective over parent: ranks passing the same color >= 0 form one new
 * communicator, ordered by key then parent rank; color < 0
 * (NCCL_SPLIT_NOCOLOR) gives *out = NULL. The children share the parent's
 * resources (splitShare = 1: one set of channel buffers per device, not one
 * per EMU group) unless NCCL_COMM_SPLIT_SHARE_RESOURCES is set in the
 * environment, which then decides. */
void nccl_comm_split(ncclComm_t parent, int color, int key, ncclComm_t *out);

/* collective over the communicator: buf (n elements of type) reduced in
 * place with op on stream, then synchronised */
void nccl_allreduce(ncclComm_t comm, void *buf, size_t n, ncclDataType_t type, ncclRedOp_t op, cudaStream_t stream);
void nccl_allreduce_sum(ncclComm_t comm, float *buf, size_t n, cudaStream_t stream);
/* collective over the communicator: buf from root to every rank, in place */
void nccl_bcast(ncclComm_t comm, void *buf, size_t n, ncclDataType_t type, int root, cudaStream_t stream);
/* point to point: n elements to / from peer (matched in order, no tag) */
void nccl_send(ncclComm_t comm, const void *buf, size_t n, ncclDataType_t type, int peer, cudaStream_t stream);
void nccl_recv(ncclComm_t comm, void *buf, size_t n, ncclDataType_t type, int peer, cudaStream_t stream);

/* local: rank and size of the communicator */
int nccl_comm_rank(ncclComm_t comm);
int nccl_comm_size(ncclComm_t comm);

/* collective over the communicator (ncclCommDestroy finalises it first):
 * frees it, after every operation on it completed; NULL is fine */
void nccl_comm_destroy(ncclComm_t comm);

#endif
