/* comm_cuda.c — the CUDA backend's CommDevice (comm.h): which buffers are
 * device memory (backend_cuda_is_device: be->alloc's address range, then
 * cudaPointerGetAttributes), the copies and the pinned host staging buffer
 * for communicators without a group, and, with NCCL in the build, device
 * groups that are NCCL communicators (nccl_comm.c): one over the job
 * communicator made from a unique id broadcast over it, the EMU groups
 * split from it. Registered by the probe (cuda.cu) once a device is chosen.
 */
#include <stdio.h>
#include <string.h>

#include "cuda_check.h"
#include "nereus/backend_cuda.h"
#include "nereus/comm.h"
#ifdef NEREUS_NCCL
#include "nccl_comm.h"
#endif

void cuda_comm_register(int groups, const char *why_not, char *note, size_t note_len);

static void cc_download(void *host_dst, const void *src, size_t bytes) {
    if (bytes) cudaCheck(cudaMemcpy(host_dst, src, bytes, cudaMemcpyDeviceToHost));
}
static void cc_upload(void *dst, const void *host_src, size_t bytes) {
    if (bytes) cudaCheck(cudaMemcpy(dst, host_src, bytes, cudaMemcpyHostToDevice));
}
/* pinned: the staging copies run at full PCIe / C2C speed */
static void *cc_host_alloc(size_t bytes) {
    void *p = NULL;
    cudaCheck(cudaMallocHost(&p, bytes));
    return p;
}
static void cc_host_free(void *p) {
    if (p) cudaCheck(cudaFreeHost(p));
}

#ifdef NEREUS_NCCL
static ncclDataType_t cc_type(CommType t) {
    switch (t) {
    case COMM_FLOAT: return ncclFloat32;
    case COMM_DOUBLE: return ncclFloat64;
    case COMM_INT64: return ncclInt64;
    default: return ncclUint8;
    }
}
static ncclRedOp_t cc_op(CommOp op) { return op == COMM_MAX ? ncclMax : op == COMM_MIN ? ncclMin : ncclSum; }

/* collective over c */
static void *cc_group_new(MPI_Comm c) {
    ncclComm_t g = NULL;
    nccl_comm_from_mpi(c, &g);
    return g;
}
/* collective over the parent's ranks */
static void *cc_group_split(void *parent, int color, int key) {
    ncclComm_t g = NULL;
    nccl_comm_split((ncclComm_t)parent, color, key, &g);
    return g;
}
static void cc_group_free(void *g) { nccl_comm_destroy((ncclComm_t)g); }
static int cc_group_rank(void *g) { return nccl_comm_rank((ncclComm_t)g); }
static int cc_group_size(void *g) { return nccl_comm_size((ncclComm_t)g); }
static void cc_allreduce(void *g, void *buf, size_t n, CommType t, CommOp op) {
    nccl_allreduce((ncclComm_t)g, buf, n, cc_type(t), cc_op(op), 0);
}
static void cc_bcast(void *g, void *buf, size_t n, CommType t, int root) {
    nccl_bcast((ncclComm_t)g, buf, n, cc_type(t), root, 0);
}
static void cc_send(void *g, const void *buf, size_t n, CommType t, int peer) {
    nccl_send((ncclComm_t)g, buf, n, cc_type(t), peer, 0);
}
static void cc_recv(void *g, void *buf, size_t n, CommType t, int peer) {
    nccl_recv((ncclComm_t)g, buf, n, cc_type(t), peer, 0);
}
#endif

static CommDevice cc_dev;

void cuda_comm_register(int groups, const char *why_not, char *note, size_t note_len) {
    memset(&cc_dev, 0, sizeof cc_dev);
    cc_dev.name = "cuda";
    cc_dev.is_device = backend_cuda_is_device;
    cc_dev.download = cc_download;
    cc_dev.upload = cc_upload;
    cc_dev.host_alloc = cc_host_alloc;
    cc_dev.host_free = cc_host_free;
#ifdef NEREUS_NCCL
    if (groups) {
        cc_dev.group_new = cc_group_new;
        cc_dev.group_split = cc_group_split;
        cc_dev.group_free = cc_group_free;
        cc_dev.group_rank = cc_group_rank;
        cc_dev.group_size = cc_group_size;
        cc_dev.allreduce = cc_allreduce;
        cc_dev.bcast = cc_bcast;
        cc_dev.send = cc_send;
        cc_dev.recv = cc_recv;
        int v = 0;
        ncclCheck(ncclGetVersion(&v));
        snprintf(note, note_len, "NCCL %d.%d.%d groups for the EMU communicators", v / 10000, v / 100 % 100, v % 100);
    } else {
        snprintf(note, note_len, "no NCCL groups (%s): device buffers stage through host memory", why_not);
    }
#else
    (void)groups;
    (void)why_not;
    snprintf(note, note_len, "no NCCL groups (NCCL not in this build): device buffers stage through host memory");
#endif
    comm_set_device(&cc_dev);
}
