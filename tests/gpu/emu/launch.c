/* launch.c — runs a kernel launch of the CPU emulation (cuemu_launch.h).
 *
 * Blocks run one after another. In a block every CUDA thread is a fiber
 * (fiber.h) on this one OS thread; the scheduler sweeps over the threads in
 * index order, each running until it waits (a __syncthreads, a warp
 * shuffle) or returns, so device code needs no locks and atomics are plain
 * read-modify-writes. Every other block (alternating again from launch to
 * launch) sweeps in reverse index order: a thread that reads another
 * thread's shared or global write without a barrier in between then reads a
 * stale value in one of the two orders, so a missing barrier shows as a
 * wrong result (a probe, not a proof).
 *
 * What CUDA leaves undefined stops the run with a message (exit status 3): a
 * __syncthreads after some threads of the block returned, a thread that
 * returns while others wait at one, a full-mask shuffle in a warp without 32
 * running lanes, a block whose threads all wait forever. Launch
 * configurations CUDA refuses (over 1024 threads, an empty grid, more than
 * 48 KiB of dynamic shared memory without the kernel's opt-in) are not run
 * and leave the error for cudaGetLastError, as on the device. Not emulated:
 * the static shared memory's share of the limit, streams, and anything
 * between blocks running at once.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cuda_runtime_api.h"
#include "cuemu_launch.h"
#include "fiber.h"

#define MAX_THREADS 1024
#define DEFAULT_DYNAMIC_SMEM (48 * 1024)

CuEmuDim3 cuemu_thread_idx, cuemu_block_idx, cuemu_block_dim, cuemu_grid_dim;
_Alignas(256) char cuemu_dynamic_smem[CUEMU_MAX_DYNAMIC_SMEM];

/* ---- errors, sticky until cudaGetLastError ---------------------------------------- */

static cudaError_t last_error = cudaSuccess;

cudaError_t cudaGetLastError(void) {
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}

const char *cudaGetErrorName(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    }
    return "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument (emulated)";
    case cudaErrorMemoryAllocation: return "out of memory (emulated)";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument (emulated)";
    }
    return "unknown error (emulated)";
}

/* ---- cudaFuncAttributeMaxDynamicSharedMemorySize per kernel ------------------------ */

#define MAX_OPTINS 64
static struct {
    const void *kernel;
    int bytes;
} optins[MAX_OPTINS];
static int n_optins;

cudaError_t cuemu_func_set_max_dynamic_smem(const void *kernel, int bytes) {
    if (bytes < 0 || bytes > CUEMU_MAX_DYNAMIC_SMEM) return cudaErrorInvalidValue;
    int i = 0;
    while (i < n_optins && optins[i].kernel != kernel) i++;
    if (i == MAX_OPTINS) return cudaErrorInvalidValue;
    if (i == n_optins) n_optins++;
    optins[i].kernel = kernel;
    optins[i].bytes = bytes;
    return cudaSuccess;
}

static size_t smem_limit(const void *kernel) {
    for (int i = 0; i < n_optins; i++)
        if (optins[i].kernel == kernel) return (size_t)optins[i].bytes;
    return DEFAULT_DYNAMIC_SMEM;
}

/* ---- the block being run ------------------------------------------------------------ */

static const char *kernel_name;
static void (*kernel_run)(void *);
static void *kernel_call;

static CuEmuFiber fibers[MAX_THREADS];
static unsigned char returned[MAX_THREADS];
static int running;               /* linear index of the thread now running */
static int n_live, n_returned;    /* threads of the block still running / returned */
static unsigned long long events; /* arrivals, releases and returns: a sweep without one is a deadlock */

/* __syncthreads: arrivals in this generation */
static int bar_arrived;
static unsigned bar_generation;

/* per warp: lanes it has, lanes returned, arrivals at its barrier, the values a shuffle exchanges */
static int warp_lanes[MAX_THREADS / 32], warp_returned[MAX_THREADS / 32], warp_arrived[MAX_THREADS / 32];
static unsigned warp_generation[MAX_THREADS / 32];
static uint64_t warp_slot[MAX_THREADS / 32][32];

static void die(const char *what) {
    const CuEmuDim3 b = cuemu_block_idx, g = cuemu_grid_dim, d = cuemu_block_dim;
    fflush(stdout); /* the checks so far, before the message */
    fprintf(stderr, "cuemu: %s, block (%u,%u,%u) of (%u,%u,%u), thread %d of %u: %s\n", kernel_name, b.x, b.y, b.z,
            g.x, g.y, g.z, running, d.x * d.y * d.z, what);
    _exit(3); /* no exit handlers: this may be inside a fiber, and MPI's would add noise */
}

void cuemu_syncthreads(void) {
    if (n_returned) die("__syncthreads after some threads of the block returned (undefined in CUDA)");
    const unsigned gen = bar_generation;
    events++;
    if (++bar_arrived == n_live) {
        bar_arrived = 0;
        bar_generation++;
        return;
    }
    while (bar_generation == gen) cuemu_fiber_yield();
}

static void warp_barrier(int w) {
    const unsigned gen = warp_generation[w];
    events++;
    if (++warp_arrived[w] == warp_lanes[w]) {
        warp_arrived[w] = 0;
        warp_generation[w]++;
        return;
    }
    while (warp_generation[w] == gen) cuemu_fiber_yield();
}

uint64_t cuemu_shfl_xor(uint64_t value, int lane_mask, unsigned member_mask) {
    const int w = running / 32, lane = running % 32;
    if (member_mask != 0xffffffffu) die("__shfl_xor_sync with a partial member mask (not emulated)");
    if (warp_lanes[w] != 32 || warp_returned[w])
        die("full-mask __shfl_xor_sync in a warp without 32 running lanes (undefined in CUDA)");
    if (lane_mask < 0 || lane_mask > 31) die("__shfl_xor_sync lane mask outside 0..31 (not emulated)");
    warp_slot[w][lane] = value;
    warp_barrier(w); /* every lane has written */
    const uint64_t r = warp_slot[w][lane ^ lane_mask];
    warp_barrier(w); /* every lane has read before a next exchange writes */
    return r;
}

static void thread_main(int i) {
    kernel_run(kernel_call);
    if (bar_arrived) die("a thread returned while others wait at __syncthreads (undefined in CUDA)");
    if (warp_arrived[i / 32]) die("a lane returned while others of its warp wait in a shuffle (undefined in CUDA)");
    returned[i] = 1;
    n_live--;
    n_returned++;
    warp_returned[i / 32]++;
    events++;
    cuemu_fiber_yield(); /* never resumed */
}

static void run_block(int nt, int reverse) {
    n_live = nt;
    n_returned = 0;
    bar_arrived = 0;
    for (int w = 0; w < MAX_THREADS / 32; w++) {
        warp_lanes[w] = nt - 32 * w >= 32 ? 32 : nt - 32 * w > 0 ? nt - 32 * w : 0;
        warp_returned[w] = warp_arrived[w] = 0;
    }
    for (int i = 0; i < nt; i++) {
        returned[i] = 0;
        cuemu_fiber_start(&fibers[i], i, thread_main);
    }
    const unsigned bx = cuemu_block_dim.x, by = cuemu_block_dim.y;
    while (n_live > 0) {
        const unsigned long long before = events;
        for (int k = 0; k < nt; k++) {
            const int i = reverse ? nt - 1 - k : k;
            if (returned[i]) continue;
            running = i;
            cuemu_thread_idx = (CuEmuDim3){(unsigned)i % bx, (unsigned)i / bx % by, (unsigned)i / (bx * by)};
            cuemu_fiber_resume(&fibers[i]);
        }
        if (events == before) die("deadlock: every running thread waits (a barrier or shuffle not all reach)");
    }
}

void cuemu_launch(const char *name, const void *kernel, CuEmuDim3 grid, CuEmuDim3 block, size_t smem,
                  void (*run)(void *), void *call) {
    static unsigned long long launches;
    const unsigned long long nt = (unsigned long long)block.x * block.y * block.z;
    if (nt == 0 || nt > MAX_THREADS || block.z > 64 || grid.x == 0 || grid.y == 0 || grid.z == 0 ||
        grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535) {
        fprintf(stderr, "cuemu: %s<<<(%u,%u,%u), (%u,%u,%u)>>>: a launch configuration CUDA refuses\n", name, grid.x,
                grid.y, grid.z, block.x, block.y, block.z);
        if (last_error == cudaSuccess) last_error = cudaErrorInvalidConfiguration;
        return;
    }
    if (smem > smem_limit(kernel)) {
        fprintf(stderr, "cuemu: %s: %zu bytes of dynamic shared memory, over the kernel's limit of %zu\n", name, smem,
                smem_limit(kernel));
        if (last_error == cudaSuccess) last_error = cudaErrorInvalidValue;
        return;
    }
    kernel_name = name;
    kernel_run = run;
    kernel_call = call;
    cuemu_grid_dim = grid;
    cuemu_block_dim = block;
    unsigned long long b = launches++;
    for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
            for (unsigned x = 0; x < grid.x; x++, b++) {
                cuemu_block_idx = (CuEmuDim3){x, y, z};
                memset(cuemu_dynamic_smem, 0xFF, smem); /* a read before any write gives NaN */
                run_block((int)nt, (int)(b & 1));
            }
}
