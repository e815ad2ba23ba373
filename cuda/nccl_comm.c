/* nccl_comm.c — NCCL communicators from MPI communicators and the sum
 * all-reduce on device floats (see nccl_comm.h). Rank 0 of the MPI
 * communicator makes the ncclUniqueId and broadcasts its bytes; every rank
 * then joins with ncclCommInitRank at its MPI rank.
 */
#include "nccl_comm.h"
#include "cuda_check.h"

void nccl_comm_from_mpi(MPI_Comm comm, ncclComm_t *out) {
    int rank = 0, size = 1;
    mpiCheck(MPI_Comm_rank(comm, &rank));
    mpiCheck(MPI_Comm_size(comm, &size));
    ncclUniqueId id;
    if (rank == 0) ncclCheck(ncclGetUniqueId(&id));
    mpiCheck(MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, comm));
    ncclCheck(ncclCommInitRank(out, size, id, rank));
}

void nccl_allreduce_sum(ncclComm_t comm, float *buf, size_t n, cudaStream_t stream) {
    if (!n) return;
    ncclCheck(ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, comm, stream));
    cudaCheck(cudaStreamSynchronize(stream));
}

void nccl_comm_destroy(ncclComm_t comm) {
    if (comm) ncclCheck(ncclCommDestroy(comm));
}
