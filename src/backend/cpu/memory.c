/* memory.c — buffers of the CPU backend: host memory, 64-byte aligned (one
 * cache line, one AVX-512 register) and zero-filled, so that every kernel can
 * assume aligned rows and every gradient buffer starts at zero. Allocation
 * failure aborts with the size requested: there is no sensible recovery in the
 * middle of a training step, and the model allocates everything up front.
 * Also the thread knob: the plain C kernels are single-threaded, so threads
 * per rank means OpenBLAS threads.
 */
#include <cblas.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "cpu_internal.h"

#define CPU_ALIGN 64

/* Bytes of backend memory live on this rank (be->mem_live): each block
 * carries its size in a header of one alignment unit before the pointer
 * handed out, so free knows what it returns. */
static size_t cpu_live;

static void *cpu_alloc(size_t bytes) {
    /* aligned_alloc needs a size that is a multiple of the alignment */
    size_t rounded = bytes == 0 ? CPU_ALIGN : (bytes + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN;
    if (rounded < bytes || rounded + CPU_ALIGN < rounded) {
        fprintf(stderr, "nereus cpu backend: alloc of %zu bytes overflows\n", bytes);
        abort();
    }
    char *b = aligned_alloc(CPU_ALIGN, rounded + CPU_ALIGN);
    if (!b) {
        fprintf(stderr, "nereus cpu backend: out of host memory allocating %zu bytes (%.2f GiB)\n",
                bytes, (double)bytes / (1024.0 * 1024.0 * 1024.0));
        abort();
    }
    memcpy(b, &rounded, sizeof rounded);
    memset(b + CPU_ALIGN, 0, rounded);
    __atomic_add_fetch(&cpu_live, rounded, __ATOMIC_RELAXED);
    return b + CPU_ALIGN;
}

static void cpu_free(void *p) {
    if (!p) return;
    char *b = (char *)p - CPU_ALIGN;
    size_t rounded;
    memcpy(&rounded, b, sizeof rounded);
    __atomic_sub_fetch(&cpu_live, rounded, __ATOMIC_RELAXED);
    free(b);
}

static size_t cpu_mem_live(void) { return __atomic_load_n(&cpu_live, __ATOMIC_RELAXED); }

static void cpu_upload(void *dst, const void *host_src, size_t bytes) {
    if (bytes) memcpy(dst, host_src, bytes);
}

static void cpu_download(void *host_dst, const void *src, size_t bytes) {
    if (bytes) memcpy(host_dst, src, bytes);
}

static void cpu_copy(void *dst, const void *src, size_t bytes) {
    if (bytes && dst != src) memmove(dst, src, bytes);
}

static void cpu_zero(void *p, size_t bytes) {
    if (bytes) memset(p, 0, bytes);
}

/* BLAS threads and the OpenMP threads of the non-GEMM kernels */
static void cpu_set_threads(int nthreads) {
    openblas_set_num_threads(nthreads > 0 ? nthreads : 1);
    omp_set_num_threads(nthreads > 0 ? nthreads : 1);
}

void cpu_register_memory(Backend *be) {
    be->alloc = cpu_alloc;
    be->free = cpu_free;
    be->mem_live = cpu_mem_live;
    be->upload = cpu_upload;
    be->download = cpu_download;
    be->copy = cpu_copy;
    be->zero = cpu_zero;
    be->set_threads = cpu_set_threads;
}
