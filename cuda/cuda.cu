/* cuda.cu — assembles the CUDA backend: the device probe (which device, by
 * local rank), the cuBLAS handle and its math mode (fp32 or TF32), the memory
 * ops (plain cudaMalloc, never managed memory; zero-filled like the CPU's),
 * and the Backend struct filled by the cuda_register_* of each file.
 *
 * The probe never aborts: a machine without a driver or a device gets NULL
 * and the CUDA error string in `why`, so "auto" can fall back to the CPU and
 * "cuda" can fail as a collective deck error. Only after a device has been
 * chosen do failures abort (cudaCheck).
 */
#define OMPI_SKIP_MPICXX 1 /* the C API only */
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

static Backend cuda_backend;
static int cuda_state;          /* 0 not probed, 1 ready, -1 failed */
static char cuda_fail_why[512];
static char cuda_dev_name[320];
static cublasHandle_t cuda_handle;
static int cuda_tf32;

cublasHandle_t cuda_cublas(void) { return cuda_handle; }

extern "C" const char *backend_cuda_device_name(void) { return cuda_state == 1 ? cuda_dev_name : ""; }

extern "C" void backend_cuda_set_tf32(int on) {
    cuda_tf32 = on ? 1 : 0;
    if (cuda_state == 1)
        cublasCheck(cublasSetMathMode(cuda_handle, cuda_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                              : CUBLAS_DEFAULT_MATH));
}

extern "C" int backend_cuda_get_tf32(void) { return cuda_tf32; }

/* --- memory ------------------------------------------------------------------ */

#define CUDA_ALIGN 256

/* Bytes live (be->mem_live): device pointers cannot carry a header that the
 * host reads, so the sizes sit in an open-addressing table keyed by pointer
 * (a job holds a few hundred buffers; the table is sized far past that). */
#define CUDA_LIVE_SLOTS 8192
static struct { void *p; size_t n; } cuda_live_tab[CUDA_LIVE_SLOTS];
static size_t cuda_live;

/* linear probing; a freed slot becomes a tombstone (CUDA_LIVE_GONE), reused by later adds */
#define CUDA_LIVE_GONE ((void *)1)
static size_t cuda_live_slot(const void *p) { return (size_t)(((uintptr_t)p >> 8) * 0x9E3779B97F4A7C15ull % CUDA_LIVE_SLOTS); }
static void cuda_live_add(void *p, size_t n) {
    for (size_t i = cuda_live_slot(p), k = 0; k < CUDA_LIVE_SLOTS; k++, i = (i + 1) % CUDA_LIVE_SLOTS)
        if (!cuda_live_tab[i].p || cuda_live_tab[i].p == CUDA_LIVE_GONE) {
            cuda_live_tab[i].p = p;
            cuda_live_tab[i].n = n;
            cuda_live += n;
            return;
        }
    nr_fatal("cuda backend: more than %d live buffers", CUDA_LIVE_SLOTS);
}
static void cuda_live_remove(void *p) {
    for (size_t i = cuda_live_slot(p), k = 0; k < CUDA_LIVE_SLOTS && cuda_live_tab[i].p; k++, i = (i + 1) % CUDA_LIVE_SLOTS)
        if (cuda_live_tab[i].p == p) {
            cuda_live -= cuda_live_tab[i].n;
            cuda_live_tab[i].p = CUDA_LIVE_GONE;
            return;
        }
}
static size_t cuda_mem_live(void) { return cuda_live; }

/* [lo, hi): the address range every be->alloc'd buffer lies in (it only
 * grows). A pointer outside it is host memory without asking the driver, so
 * the comm facade's per-call test costs host buffers two compares. */
static uintptr_t cuda_range_lo = UINTPTR_MAX, cuda_range_hi = 0;

extern "C" int backend_cuda_is_device(const void *p) {
    uintptr_t u = (uintptr_t)p;
    if (cuda_state != 1 || u < cuda_range_lo || u >= cuda_range_hi) return 0;
    cudaPointerAttributes a;
    cudaCheck(cudaPointerGetAttributes(&a, p));
    return a.type == cudaMemoryTypeDevice;
}

static void *cuda_alloc(size_t bytes) {
    size_t rounded = bytes == 0 ? CUDA_ALIGN : (bytes + CUDA_ALIGN - 1) / CUDA_ALIGN * CUDA_ALIGN;
    if (rounded < bytes) nr_fatal("cuda backend: alloc of %zu bytes overflows", bytes);
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, rounded);
    if (e != cudaSuccess) {
        size_t fr = 0, tot = 0;
        cudaGetLastError();
        cudaMemGetInfo(&fr, &tot);
        nr_fatal("cudaMalloc(%zu bytes, %.2f GiB) failed: %s (%.2f GiB free of %.2f GiB on %s)",
                 bytes, (double)bytes / 1073741824.0, cudaGetErrorString(e),
                 (double)fr / 1073741824.0, (double)tot / 1073741824.0, cuda_dev_name);
    }
    cudaCheck(cudaMemset(p, 0, rounded));
    cuda_live_add(p, rounded);
    if ((uintptr_t)p < cuda_range_lo) cuda_range_lo = (uintptr_t)p;
    if ((uintptr_t)p + rounded > cuda_range_hi) cuda_range_hi = (uintptr_t)p + rounded;
    return p;
}

static void cuda_free(void *p) {
    if (!p) return;
    cuda_live_remove(p);
    cudaCheck(cudaFree(p));
}

static void cuda_upload(void *dst, const void *host_src, size_t bytes) {
    if (bytes) cudaCheck(cudaMemcpy(dst, host_src, bytes, cudaMemcpyHostToDevice));
}

static void cuda_download(void *host_dst, const void *src, size_t bytes) {
    if (bytes) cudaCheck(cudaMemcpy(host_dst, src, bytes, cudaMemcpyDeviceToHost));
}

/* memmove semantics like the CPU backend: overlapping ranges go through a
 * temporary (cudaMemcpy on overlapping device ranges is undefined) */
static void cuda_copy(void *dst, const void *src, size_t bytes) {
    if (!bytes || dst == src) return;
    const char *d = (const char *)dst, *s = (const char *)src;
    if (d < s + bytes && s < d + bytes) {
        void *tmp = NULL;
        cudaCheck(cudaMalloc(&tmp, bytes));
        cudaCheck(cudaMemcpy(tmp, src, bytes, cudaMemcpyDeviceToDevice));
        cudaCheck(cudaMemcpy(dst, tmp, bytes, cudaMemcpyDeviceToDevice));
        cudaCheck(cudaFree(tmp));
        return;
    }
    cudaCheck(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
}

static void cuda_zero(void *p, size_t bytes) {
    if (bytes) cudaCheck(cudaMemset(p, 0, bytes));
}

/* kernels size their own grids: host threads per rank do not apply */
static void cuda_set_threads(int nthreads) { (void)nthreads; }

void cuda_register_memory(Backend *be) {
    be->alloc = cuda_alloc;
    be->free = cuda_free;
    be->mem_live = cuda_mem_live;
    be->upload = cuda_upload;
    be->download = cuda_download;
    be->copy = cuda_copy;
    be->zero = cuda_zero;
    be->set_threads = cuda_set_threads;
}

/* --- probe ------------------------------------------------------------------- */

static void set_why(char *why, size_t len, const char *msg) {
    if (why && len) snprintf(why, len, "%s", msg);
}

/* This rank's place on its node: the ranks of MPI_COMM_WORLD that share
 * memory with it (MPI_Comm_split_type shared), ordered by world rank. *node
 * is that communicator (MPI_COMM_NULL without MPI; the caller frees it). */
static int mpi_up(void) {
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    return init && !fin;
}
static int local_rank(MPI_Comm *node) {
    *node = MPI_COMM_NULL;
    if (!mpi_up()) return 0;
    int r = 0, wr = 0;
    mpiCheck(MPI_Comm_rank(MPI_COMM_WORLD, &wr));
    mpiCheck(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, wr, MPI_INFO_NULL, node));
    mpiCheck(MPI_Comm_rank(*node, &r));
    return r;
}

/* collective over MPI_COMM_WORLD (node: this node's ranks): whether any two
 * ranks of any node hold the same device (its UUID), e.g. 4 ranks on a
 * 1-GPU machine, or CUDA_VISIBLE_DEVICES giving two ranks one card. NCCL
 * refuses two ranks of one communicator on one device, so then no rank
 * builds NCCL groups and device buffers stage through host memory. A rank
 * without a device (have = 0) takes part and shares with no one. The lowest
 * pair found is reported in *who (local ranks) for the note; *some_failed
 * says whether any rank of the world has no usable device. */
static int gpu_shared(MPI_Comm node, int have, const cudaUUID_t *uuid, int who[2], int *some_failed) {
    who[0] = who[1] = -1;
    *some_failed = !have;
    if (node == MPI_COMM_NULL) return 0;
    int n = 0;
    mpiCheck(MPI_Comm_size(node, &n));
    struct Id { int have; unsigned char b[16]; } mine, *all = (Id *)nr_xmalloc((size_t)n * sizeof(Id));
    memset(&mine, 0, sizeof mine);
    mine.have = have;
    if (have) memcpy(mine.b, uuid->bytes, 16);
    mpiCheck(MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, node));
    int shared = 0;
    for (int i = 0; i < n && !shared; i++)
        for (int j = i + 1; j < n && !shared; j++)
            if (all[i].have && all[j].have && !memcmp(all[i].b, all[j].b, 16)) {
                shared = 1;
                who[0] = i;
                who[1] = j;
            }
    free(all);
    int mine2[2] = {shared, !have}, any[2] = {0, 0};
    mpiCheck(MPI_Allreduce(mine2, any, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    *some_failed = any[1];
    return any[0];
}

#define PROBE_FAIL(...)                                                                        \
    do {                                                                                       \
        snprintf(cuda_fail_why, sizeof cuda_fail_why, __VA_ARGS__);                            \
        return -1;                                                                             \
    } while (0)

static char cuda_groups_note[sizeof cuda_dev_name + 192];

/* The device part of the probe (no MPI): device lr % count, its context and
 * cuBLAS handle. 0, or -1 with cuda_fail_why; *uuid on success. */
static int probe_device(int lr, cudaUUID_t *uuid) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        cudaGetLastError();
        /* said plainly: a machine without a GPU (or its driver) is the common case, not an error */
        PROBE_FAIL("%s", e == cudaErrorNoDevice ? "no CUDA device found" : cudaGetErrorString(e));
    }
    if (n <= 0) PROBE_FAIL("no CUDA device found");
    int dev = lr % n;
    e = cudaSetDevice(dev);
    if (e != cudaSuccess) {
        cudaGetLastError();
        PROBE_FAIL("cudaSetDevice(%d) failed: %s (error %d)", dev, cudaGetErrorString(e), (int)e);
    }
    cudaDeviceProp prop;
    e = cudaGetDeviceProperties(&prop, dev);
    if (e != cudaSuccess) {
        cudaGetLastError();
        PROBE_FAIL("cudaGetDeviceProperties(%d) failed: %s (error %d)", dev, cudaGetErrorString(e), (int)e);
    }
    char pn[128];
    snprintf(pn, sizeof pn, "%.127s", prop.name);
    if (prop.major < 9)
        PROBE_FAIL("CUDA device %d (%s) is sm_%d%d; this build has code for sm_90 and newer only",
                   dev, pn, prop.major, prop.minor);
    /* a first real call: creates the context, so a broken device fails here */
    e = cudaFree(0);
    if (e != cudaSuccess) {
        cudaGetLastError();
        PROBE_FAIL("creating a CUDA context on device %d (%s) failed: %s (error %d)", dev, pn,
                   cudaGetErrorString(e), (int)e);
    }
    cublasStatus_t s = cublasCreate(&cuda_handle);
    if (s != CUBLAS_STATUS_SUCCESS)
        PROBE_FAIL("cublasCreate failed on device %d (%s): %s", dev, pn, cublasGetStatusString(s));
    cublasCheck(cublasSetStream(cuda_handle, 0));
    cublasCheck(cublasSetPointerMode(cuda_handle, CUBLAS_POINTER_MODE_HOST));
    snprintf(cuda_dev_name, sizeof cuda_dev_name, "%s (device %d of %d, sm_%d%d)", pn, dev, n,
             prop.major, prop.minor);
    *uuid = prop.uuid;
    return 0;
}

extern "C" const char *backend_cuda_groups_note(void) { return cuda_state == 1 ? cuda_groups_note : ""; }

extern "C" const Backend *backend_cuda_probe(char *why, size_t why_len) {
    set_why(why, why_len, "");
    if (cuda_state == 1) return &cuda_backend;
    if (cuda_state == -1) {
        set_why(why, why_len, cuda_fail_why);
        return NULL;
    }
    /* the node split and the shared-device check are collective: every rank
     * does them, device or not */
    MPI_Comm node;
    int lr = local_rank(&node);
    cudaUUID_t uuid;
    memset(&uuid, 0, sizeof uuid);
    int ok = probe_device(lr, &uuid) == 0;
    int who[2], some_failed = 0;
    int shared = gpu_shared(node, ok, &uuid, who, &some_failed);
    if (node != MPI_COMM_NULL) mpiCheck(MPI_Comm_free(&node));
    /* all ranks or none: a job has one backend (device buffers, NCCL splits
     * and staging must agree on every rank of a call) */
    if (ok && some_failed)
        snprintf(cuda_fail_why, sizeof cuda_fail_why, "another rank has no usable CUDA device, and every rank "
                 "of a job must use the same backend");
    if (!ok || some_failed) {
        cuda_state = -1;
        set_why(why, why_len, cuda_fail_why);
        return NULL;
    }

    Backend be;
    memset(&be, 0, sizeof be);
    be.name = "cuda";
    cuda_register_memory(&be);
    cuda_register_dense(&be);
    cuda_register_norm(&be);
    cuda_register_attention(&be);
    cuda_register_llama(&be);
    cuda_register_embed(&be);
    cuda_register_heads(&be);
    cuda_register_ppo(&be);
    cuda_register_adamw(&be);
    cuda_backend = be;
    cuda_state = 1;
    backend_cuda_set_tf32(cuda_tf32);
    /* device buffers in the comm facade: NCCL groups, or host staging */
    char note[sizeof cuda_dev_name + 64] = "";
    if (shared && who[0] >= 0)
        snprintf(note, sizeof note, "local ranks %d and %d share %s", who[0], who[1], cuda_dev_name);
    else if (shared)
        snprintf(note, sizeof note, "two ranks of another node share a GPU");
    cuda_comm_register(!shared, note, cuda_groups_note, sizeof cuda_groups_note);
    return &cuda_backend;
}
