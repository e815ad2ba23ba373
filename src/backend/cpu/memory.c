/* memory.c — buffers of the CPU backend: host memory, 64-byte aligned (one
 * cache line, one AVX-512 register) and zero-filled, so that every kernel can
 * assume aligned rows and every gradient buffer starts at zero. Allocation
 * failure aborts with the size requested: there is no sensible recovery in the
 * middle of a training step, and the model allocates everything up front.
 * Also the thread knob: the plain C kernels are single-threaded, so threads
 * per rank means OpenBLAS threads.
 */
#define _GNU_SOURCE /* mremap */
#include <cblas.h>
#include <pthread.h>
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
 * what it receives, instead of being cleared first; its fresh pages are
 * faulted in at allocation, in one madvise, since all of them will be). The header then takes
 * one page, keeping the pointer page-aligned.
 *
 * Freed mappings go to a pool of warm pages instead of back to the kernel
 * (the caching allocator of GPU frameworks, for host memory). Why: a page
 * the kernel hands out anew is faulted in and zeroed on first touch, and a
 * mapping given back is torn down page by page; a fresh page is written an
 * order of magnitude slower than a touched one, and without the pool a
 * re-cut of 8 ranks spends more CPU on faulting in its new shards and
 * unmapping its old ones than on moving its bytes. So
 * the old shards a transition frees become the next allocations' pages.
 * An allocation takes the smallest pooled span that holds it (its tail
 * stays pooled); where none does, it maps a fresh range and moves pooled
 * spans into it with mremap (page tables move, no byte is copied), the
 * rest of the range staying fresh (zero on first touch). Taken pages that
 * hold memory are cleared (alloc promises zeros; alloc_uninit skips it,
 * for buffers about to be overwritten). Nothing is mapped while the pool
 * holds pages that could serve, so the memory a rank holds never exceeds
 * the high-water mark of its live bytes, a page per block aside (what
 * mem_live's peak, and a transition's memory budget, count). be->trim
 * gives the pool back; NEREUS_CPU_POOL=0 turns it off (every free
 * unmaps). */
#define CPU_MMAP_MIN ((size_t)1 << 20)
#define CPU_PAGE ((size_t)4096)
#define CPU_POOL_MAX 4096 /* pooled spans at most; the smallest go back beyond */

typedef struct Span {
    char *p;
    size_t n; /* bytes, a multiple of CPU_PAGE, within one mapping (mremap moves one mapping's pages) */
} Span;

static struct {
    pthread_mutex_t mu;
    Span span[CPU_POOL_MAX];
    int n;
    size_t bytes;
    int on; /* -1: NEREUS_CPU_POOL not read yet */
} pool = {PTHREAD_MUTEX_INITIALIZER, {{0}}, 0, 0, -1};

static size_t page_up(size_t n) { return (n + CPU_PAGE - 1) / CPU_PAGE * CPU_PAGE; }

/* drop span i (its pages already handed out or unmapped); call with pool.mu held */
static void pool_drop(int i) {
    pool.span[i] = pool.span[--pool.n];
}

/* what is left of span i after its first k bytes were taken: kept, or unmapped when too small to
   serve a large block; call with pool.mu held */
static void pool_shrink(int i, size_t k) {
    Span *s = &pool.span[i];
    s->p += k, s->n -= k;
    pool.bytes -= k;
    if (s->n >= CPU_MMAP_MIN) return;
    if (s->n) munmap(s->p, s->n);
    pool.bytes -= s->n;
    pool_drop(i);
}

static void pool_put(char *p, size_t n) {
    pthread_mutex_lock(&pool.mu);
    if (pool.n == CPU_POOL_MAX) { /* full: the smallest span goes back */
        int s = 0;
        for (int i = 1; i < pool.n; i++)
            if (pool.span[i].n < pool.span[s].n) s = i;
        if (pool.span[s].n < n) {
            munmap(pool.span[s].p, pool.span[s].n);
            pool.bytes -= pool.span[s].n;
            pool_drop(s);
        }
    }
    if (pool.n < CPU_POOL_MAX) {
        pool.span[pool.n++] = (Span){p, n};
        pool.bytes += n;
        p = NULL;
    }
    pthread_mutex_unlock(&pool.mu);
    if (p) munmap(p, n);
}

/* n bytes (a page multiple) of mapping: its first *warm bytes are pooled pages (to be cleared), the
   rest fresh; NULL when out of memory */
static char *pool_take(size_t n, size_t *warm) {
    *warm = 0;
    pthread_mutex_lock(&pool.mu);
    int best = -1;
    for (int i = 0; i < pool.n; i++)
        if (pool.span[i].n >= n && (best < 0 || pool.span[i].n < pool.span[best].n)) best = i;
    char *b;
    if (best >= 0) { /* one span holds it */
        b = pool.span[best].p;
        pool_shrink(best, n);
        *warm = n;
    } else {
        b = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (b == MAP_FAILED) b = NULL;
        while (b && *warm < n && pool.n > 0) { /* the largest spans first: fewest moves */
            int l = 0;
            for (int i = 1; i < pool.n; i++)
                if (pool.span[i].n > pool.span[l].n) l = i;
            size_t k = pool.span[l].n < n - *warm ? pool.span[l].n : n - *warm;
            /* before Linux 6.17 one mremap moves pages of one kernel mapping only, and a span freed
               from a block that was itself put together spans several: a failed move is retried with
               the first half. A failed move may have unmapped its destination (the kernel does that
               before it checks the source), which is mapped fresh again */
            while (k && mremap(pool.span[l].p, k, k, MREMAP_MAYMOVE | MREMAP_FIXED, b + *warm) == MAP_FAILED) {
                if (mmap(b + *warm, k, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
                    fprintf(stderr, "nereus cpu backend: out of host memory remapping %zu bytes\n", k);
                    abort();
                }
                k = k > CPU_PAGE ? (k / 2 + CPU_PAGE - 1) / CPU_PAGE * CPU_PAGE : 0;
            }
            if (!k) break;
            pool_shrink(l, k);
            *warm += k;
        }
    }
    pthread_mutex_unlock(&pool.mu);
    return b;
}

/* zeroes the pages of [p, p + n) (page-aligned) that hold memory: pooled pages never written since
   they were mapped are still the kernel's zero page or absent, and writing them would fault them in
   (a new shard's gradients, say, may not be written before the next training step) */
static void clear_resident(char *p, size_t n) {
    size_t np = (n + CPU_PAGE - 1) / CPU_PAGE;
    unsigned char vec[4096];
    for (size_t i0 = 0; i0 < np; i0 += sizeof vec) { /* 16 MiB of pages per call */
        size_t m = np - i0 < sizeof vec ? np - i0 : sizeof vec;
        if (mincore(p + i0 * CPU_PAGE, m * CPU_PAGE, vec) != 0) { /* cannot tell: clear them all */
            memset(p + i0 * CPU_PAGE, 0, (i0 + m) * CPU_PAGE > n ? n - i0 * CPU_PAGE : m * CPU_PAGE);
            continue;
        }
        for (size_t i = 0; i < m;) {
            if (!(vec[i] & 1)) { i++; continue; }
            size_t j = i;
            while (j < m && (vec[j] & 1)) j++;
            size_t a = (i0 + i) * CPU_PAGE, z = (i0 + j) * CPU_PAGE < n ? (i0 + j) * CPU_PAGE : n;
            memset(p + a, 0, z - a);
            i = j;
        }
    }
}

static size_t cpu_trim(void) {
    pthread_mutex_lock(&pool.mu);
    size_t n = pool.bytes;
    for (int i = 0; i < pool.n; i++) munmap(pool.span[i].p, pool.span[i].n);
    pool.n = 0;
    pool.bytes = 0;
    pthread_mutex_unlock(&pool.mu);
    return n;
}

static int poison(void) {
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("NEREUS_CPU_POISON");
        on = e && strcmp(e, "1") == 0;
    }
    return on;
}

static int pool_enabled(void) {
    if (pool.on < 0) {
        const char *e = getenv("NEREUS_CPU_POOL");
        pool.on = !(e && strcmp(e, "0") == 0);
    }
    return pool.on;
}

/* clear: 1 = zero-filled (alloc); 0 = contents unspecified (alloc_uninit), where NEREUS_CPU_POISON=1 (the
   tests) fills them with NaN bytes so that an element nobody writes cannot pass for a right one */
static void *cpu_alloc_as(size_t bytes, int clear) {
    /* aligned_alloc needs a size that is a multiple of the alignment */
    size_t rounded = bytes == 0 ? CPU_ALIGN : (bytes + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN;
    if (rounded < bytes || rounded + 2 * CPU_PAGE < rounded) {
        fprintf(stderr, "nereus cpu backend: alloc of %zu bytes overflows\n", bytes);
        abort();
    }
    char *b;
    size_t head = rounded >= CPU_MMAP_MIN ? CPU_PAGE : CPU_ALIGN;
    if (head == CPU_PAGE) {
        size_t n = page_up(rounded + head), warm = 0;
        if (pool_enabled()) {
            b = pool_take(n, &warm);
        } else {
            b = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (b == MAP_FAILED) b = NULL;
        }
        if (b && clear && warm > head) clear_resident(b + head, warm - head);
        /* fresh pages of a block about to be overwritten (alloc_uninit: a transition's new shards, every
           element of which the engine writes) are faulted in here in one call rather than one trap a page
           while the bytes arrive, which makes cold transitions faster (bench_transition). Kernels before 5.14
           lack it: the pages then fault in on first touch */
#ifdef MADV_POPULATE_WRITE
        if (b && !clear && warm < n) (void)madvise(b + warm, n - warm, MADV_POPULATE_WRITE);
#endif
        if (b && !clear && poison()) memset(b + head, 0xFF, rounded);
        /* no MADV_HUGEPAGE: transitions measure slower with it (bench_transition): the kernel compacts
           memory synchronously to find huge pages (defrag = madvise); where they are granted without a
           stall, warm transitions are no faster and cold ones several times slower (pooled spans moved into
           a huge-page range split its huge pages) */
    } else {
        b = aligned_alloc(CPU_ALIGN, rounded + head);
        if (b && (clear || poison())) memset(b + head, clear ? 0 : 0xFF, rounded);
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

static void *cpu_alloc(size_t bytes) { return cpu_alloc_as(bytes, 1); }
static void *cpu_alloc_uninit(size_t bytes) { return cpu_alloc_as(bytes, 0); }

static void cpu_free(void *p) {
    if (!p) return;
    size_t rounded;
    memcpy(&rounded, (char *)p - sizeof rounded, sizeof rounded);
    __atomic_sub_fetch(&cpu_live, rounded, __ATOMIC_RELAXED);
    if (rounded < CPU_MMAP_MIN) {
        free((char *)p - CPU_ALIGN);
        return;
    }
    char *b = (char *)p - CPU_PAGE;
    size_t n = page_up(rounded + CPU_PAGE);
    if (pool_enabled()) pool_put(b, n);
    else munmap(b, n);
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
    be->alloc_uninit = cpu_alloc_uninit;
    be->free = cpu_free;
    be->mem_live = cpu_mem_live;
    be->trim = cpu_trim;
    be->upload = cpu_upload;
    be->download = cpu_download;
    be->copy = cpu_copy;
    be->zero = cpu_zero;
    be->set_threads = cpu_set_threads;
}
