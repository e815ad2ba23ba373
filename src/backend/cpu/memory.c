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
#include <sys/mman.h>

#include <omp.h>

#include "cpu_internal.h"

#define CPU_ALIGN 64

/* Bytes of backend memory live on this rank (be->mem_live): each block
 * carries its size just before the pointer handed out (a header of one
 * alignment unit, or one page for mapped blocks), so free knows what it
 * returns. */
static size_t cpu_live;

/* Blocks of at least CPU_MMAP_MIN bytes are their own anonymous mapping:
 * the kernel hands out zero pages on first touch, so a large buffer costs
 * nothing until it is written (a transition's new shard is written once, by
 * what it receives, instead of being cleared first), and free gives the
 * memory straight back. The header then takes one page, keeping the pointer
 * page-aligned. */
#define CPU_MMAP_MIN ((size_t)1 << 20)
#define CPU_PAGE ((size_t)4096)

static void *cpu_alloc(size_t bytes) {
    /* aligned_alloc needs a size that is a multiple of the alignment */
    size_t rounded = bytes == 0 ? CPU_ALIGN : (bytes + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN;
    if (rounded < bytes || rounded + CPU_PAGE < rounded) {
        fprintf(stderr, "nereus cpu backend: alloc of %zu bytes overflows\n", bytes);
        abort();
    }
    char *b;
    size_t head = rounded >= CPU_MMAP_MIN ? CPU_PAGE : CPU_ALIGN;
    if (head == CPU_PAGE) {
        b = mmap(NULL, rounded + head, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (b == MAP_FAILED) b = NULL;
        /* no MADV_HUGEPAGE: measured 2-3x slower transitions here (the kernel compacts memory
           synchronously to find huge pages, defrag = madvise) */
    } else {
        b = aligned_alloc(CPU_ALIGN, rounded + head);
        if (b) memset(b + head, 0, rounded);
    }
    if (!b) {
        fprintf(stderr, "nereus cpu backend: out of host memory allocating %zu bytes (%.2f GiB)\n",
                bytes, (double)bytes / (1024.0 * 1024.0 * 1024.0));
        abort();
    }
    memcpy(b + head - sizeof rounded, &rounded, sizeof rounded);
    __atomic_add_fetch(&cpu_live, rounded, __ATOMIC_RELAXED);
    return b + head;
}

static void cpu_free(void *p) {
    if (!p) return;
    size_t rounded;
    memcpy(&rounded, (char *)p - sizeof rounded, sizeof rounded);
    __atomic_sub_fetch(&cpu_live, rounded, __ATOMIC_RELAXED);
    if (rounded >= CPU_MMAP_MIN) munmap((char *)p - CPU_PAGE, rounded + CPU_PAGE);
    else free((char *)p - CPU_ALIGN);
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
