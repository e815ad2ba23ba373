/* nccl_comm.c — NCCL communicators from MPI communicators and from each
 * other, and the blocking device-buffer operations (see nccl_comm.h). Rank
 * 0 of the MPI communicator makes the ncclUniqueId and broadcasts its
 * bytes; every rank then joins with ncclCommInitRank at its MPI rank.
 */
#include "nccl_comm.h"
#include "cuda_check.h"

#include <stdlib.h>

#include "nereus/comm.h"

void nccl_comm_from_mpi(MPI_Comm comm, ncclComm_t *out) {
    int rank = 0, size = 1;
    mpiCheck(MPI_Comm_rank(comm, &rank));
    mpiCheck(MPI_Comm_size(comm, &size));
    ncclUniqueId id;
    if (rank == 0) ncclCheck(ncclGetUniqueId(&id));
    comm_bcast(comm, &id, sizeof id, 0); /* host memory: plain MPI, non-spinning wait */
    ncclCheck(ncclCommInitRank(out, size, id, rank));
}

void nccl_comm_split(ncclComm_t parent, int color, int key, ncclComm_t *out) {
    *out = NULL;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    if (!getenv("NCCL_COMM_SPLIT_SHARE_RESOURCES")) config.splitShare = 1;
    ncclCheck(ncclCommSplit(parent, color >= 0 ? color : NCCL_SPLIT_NOCOLOR, key, out, &config));
}

void nccl_allreduce(ncclComm_t comm, void *buf, size_t n, ncclDataType_t type, ncclRedOp_t op, cudaStream_t stream) {
    if (!n) return;
    ncclCheck(ncclAllReduce(buf, buf, n, type, op, comm, stream));
    cudaCheck(cudaStreamSynchronize(stream));
}

void nccl_allreduce_sum(ncclComm_t comm, float *buf, size_t n, cudaStream_t stream) {
    nccl_allreduce(comm, buf, n, ncclFloat32, ncclSum, stream);
}

void nccl_bcast(ncclComm_t comm, void *buf, size_t n, ncclDataType_t type, int root, cudaStream_t stream) {
    if (!n) return;
    ncclCheck(ncclBroadcast(buf, buf, n, type, root, comm, stream));
    cudaCheck(cudaStreamSynchronize(stream));
}

void nccl_send(ncclComm_t comm, const void *buf, size_t n, ncclDataType_t type, int peer, cudaStream_t stream) {
    ncclCheck(ncclSend(buf, n, type, peer, comm, stream));
    cudaCheck(cudaStreamSynchronize(stream));
}

void nccl_recv(ncclComm_t comm, void *buf, size_t n, ncclDataType_t type, int peer, cudaStream_t stream) {
    ncclCheck(ncclRecv(buf, n, type, peer, comm, stream));
    cudaCheck(cudaStreamSynchronize(stream));
}

int nccl_comm_rank(ncclComm_t comm) {
    int r = -1;
    ncclCheck(ncclCommUserRank(comm, &r));
    return r;
}

int nccl_comm_size(ncclComm_t comm) {
    int n = 0;
    ncclCheck(ncclCommCount(comm, &n));
    return n;
}

void nccl_comm_destroy(ncclComm_t comm) {
    if (comm) ncclCheck(ncclCommDestroy(comm));
}
