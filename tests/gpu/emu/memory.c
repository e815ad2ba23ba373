/* memory.c — "device" memory of the CPU emulation (include/cuda_runtime_api.h):
 * cudaMalloc'd buffers are host memory that the emulated kernels and the
 * backend's memory ops (cuda/cuda.cu) use directly.
 *
 * Two properties of the real allocator matter to tests/gpu/parity.c and are
 * kept: a freed buffer is handed back, unchanged, to the next cudaMalloc of
 * the same size (parity's zero-fill check needs a dirty buffer reused; the
 * most recent 64 MiB of freed buffers are kept for that), and nothing is
 * zeroed for the caller. Where the device would give fresh pages
 * (usually zero), the emulation fills them with 0xFF bytes (a NaN in every
 * float), so a kernel or wrapper that relies on cudaMalloc'd memory being
 * zero fails here rather than passing by luck.
 */
#include <stdlib.h>
#include <string.h>

#include "cuda_runtime_api.h"

typedef struct {
    char *p;
    size_t bytes;
    int live;              /* 0: freed, kept for reuse by a cudaMalloc of the same size */
    unsigned long long at; /* when it was freed */
} Block;

static Block *blocks;
static size_t n_blocks, cap_blocks, kept_bytes;
static unsigned long long n_frees;

/* freed blocks are kept up to this many bytes in all; past it the oldest is released */
#define KEEP_BYTES ((size_t)64 << 20)

cudaError_t cudaMalloc(void **p, size_t bytes) {
    *p = NULL;
    Block *reuse = NULL; /* the most recently freed block of this size */
    for (size_t i = 0; i < n_blocks; i++)
        if (!blocks[i].live && blocks[i].bytes == bytes && (!reuse || blocks[i].at > reuse->at)) reuse = &blocks[i];
    if (reuse) {
        reuse->live = 1;
        kept_bytes -= bytes;
        *p = reuse->p;
        return cudaSuccess;
    }
    if (n_blocks == cap_blocks) {
        size_t cap = cap_blocks ? 2 * cap_blocks : 256;
        Block *nb = realloc(blocks, cap * sizeof(Block));
        if (!nb) return cudaErrorMemoryAllocation;
        blocks = nb;
        cap_blocks = cap;
    }
    char *m = malloc(bytes ? bytes : 1);
    if (!m) return cudaErrorMemoryAllocation;
    memset(m, 0xFF, bytes);
    blocks[n_blocks++] = (Block){m, bytes, 1, 0};
    *p = m;
    return cudaSuccess;
}

cudaError_t cudaFree(void *p) {
    if (!p) return cudaSuccess;
    Block *b = NULL;
    for (size_t i = 0; i < n_blocks && !b; i++)
        if (blocks[i].p == p && blocks[i].live) b = &blocks[i];
    if (!b) return cudaErrorInvalidValue;
    b->live = 0;
    b->at = ++n_frees;
    kept_bytes += b->bytes;
    while (kept_bytes > KEEP_BYTES) {
        size_t old = n_blocks;
        for (size_t i = 0; i < n_blocks; i++)
            if (!blocks[i].live && (old == n_blocks || blocks[i].at < blocks[old].at)) old = i;
        kept_bytes -= blocks[old].bytes;
        free(blocks[old].p);
        blocks[old] = blocks[--n_blocks];
    }
    return cudaSuccess;
}

/* p must lie in one live block, [p, p + bytes) too */
static int in_live(const void *p, size_t bytes) {
    const char *c = p;
    for (size_t i = 0; i < n_blocks; i++)
        if (blocks[i].live && c >= blocks[i].p && c + bytes <= blocks[i].p + blocks[i].bytes) return 1;
    return 0;
}

cudaError_t cudaMemset(void *p, int value, size_t bytes) {
    if (bytes && !in_live(p, bytes)) return cudaErrorInvalidValue;
    memset(p, value, bytes);
    return cudaSuccess;
}

/* the direction must match where the pointers are; overlapping ranges are
 * undefined in CUDA, so refused here */
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind) {
    if (!bytes) return cudaSuccess;
    const int dev_src = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    const int dev_dst = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    if ((dev_src && !in_live(src, bytes)) || (dev_dst && !in_live(dst, bytes))) return cudaErrorInvalidValue;
    const char *d = dst, *s = src;
    if (d < s + bytes && s < d + bytes) return cudaErrorInvalidValue;
    memcpy(dst, src, bytes);
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
    *free_bytes = *total_bytes = 0;
    return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *a, const void *p) {
    a->type = in_live(p, 1) ? cudaMemoryTypeDevice : cudaMemoryTypeUnregistered;
    return cudaSuccess;
}
