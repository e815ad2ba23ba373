/* decode_bf16.c — the decode GEMM with the weight in bfloat16: out (N, ldo),
 * first OC columns = inp (N, IC) · weight (OC, IC)ᵀ + bias, each weight the
 * upper 16 bits of a float, widened exactly. A decode step is bound by
 * reading the weight, and bf16 halves the bytes. Every output sums in the
 * row-dot order of rowdot.c (16 lanes of fused multiply-adds, the fixed tree,
 * the leftover columns in order) over the widened weights, so a row's bits
 * depend on its own input row only, on every kernel path: AVX-512 widens 16
 * weights a load, AVX2 8, the portable path one.
 *
 * Each weight row is loaded once for up to 4 input rows (a tile of 1 weight
 * row × 4 input rows, 16 lanes each); more input rows go 4 at a time over the
 * same weight row, which sits in L1 by then. Blocks of weight rows go to the
 * threads.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#pragma GCC optimize("fp-contract=fast")

#include "cpu_internal.h"
#include "rowdot.h"
#include "nereus/cpu_kernels.h"
#include "nereus/util.h"

/* weight rows a thread takes at a time */
#define BF16_ROW_BLOCK 64
/* weight rows ahead that the kernels for 2-4 input rows prefetch into L2, a line for each line they read: with
   several rows of work per weight line the hardware prefetcher alone falls behind (decode.c) */
#define BF16_PREFETCH_ROWS 16

static inline float bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* --- portable ------------------------------------------------------------------------------------------ */

static void portable_row(float *out, size_t ldo, const float *x, const uint16_t *w, float bias, int nn, int IC) {
    int full = IC / 16 * 16;
    for (int n = 0; n < nn; n++) {
        const float *xr = x + (size_t)n * IC;
        float acc[16] = {0};
        for (int i = 0; i < full; i += 16)
            for (int j = 0; j < 16; j++) acc[j] = fmaf(xr[i + j], bf16_to_f32(w[i + j]), acc[j]);
        float s = cpu_rowdot_finish(acc, xr, NULL, full, full); /* the lanes' tree; the tail below */
        for (int k = full; k < IC; k++) s = fmaf(xr[k], bf16_to_f32(w[k]), s);
        out[(size_t)n * ldo] = bias + s;
    }
}

/* --- avx2: GCC vectors of 8 ---------------------------------------------------------------------------- */

typedef uint16_t u16x8 __attribute__((vector_size(16)));
typedef uint32_t u32x8 __attribute__((vector_size(32)));

/* 8 weights widened: zero-extended to 32 bits, shifted into the float's upper half */
static inline v8 wide8(const uint16_t *p) {
    u16x8 h;
    memcpy(&h, p, sizeof h);
    u32x8 u = __builtin_convertvector(h, u32x8) << 16;
    v8 f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* the leftover columns in order, widened, then the tree's sum (rowdot_end with bf16 weights) */
static inline float end_bf16(v8 lo, v8 hi, const float *x, const uint16_t *w, int i, int IC) {
    float s = rowdot_end(lo, hi, x, NULL, i, i); /* the lanes' tree alone */
    for (int k = i; k < IC; k++) s = fmaf(x[k], bf16_to_f32(w[k]), s);
    return s;
}

/* NN input rows (constant per instance) against one weight row, each output's lanes in two halves */
static inline __attribute__((always_inline)) void avx2_tile(float *out, size_t ldo, const float *x,
                                                            const uint16_t *w, float bias, int IC, const int NN) {
    v8 lo[4], hi[4];
    for (int n = 0; n < NN; n++) lo[n] = hi[n] = (v8){0};
    const char *ahead = (const char *)(w + (size_t)BF16_PREFETCH_ROWS * IC);
    int i = 0;
    for (; i + 16 <= IC; i += 16) {
        if (NN > 1 && (i & 31) == 0) __builtin_prefetch(ahead + 2 * (size_t)i, 0, 2);
        v8 wl = wide8(w + i), wh = wide8(w + i + 8);
        for (int n = 0; n < NN; n++) {
            lo[n] += wl * ld8(x + (size_t)n * IC + i);
            hi[n] += wh * ld8(x + (size_t)n * IC + i + 8);
        }
    }
    for (int n = 0; n < NN; n++) out[(size_t)n * ldo] = bias + end_bf16(lo[n], hi[n], x + (size_t)n * IC, w, i, IC);
}

static void avx2_row(float *out, size_t ldo, const float *x, const uint16_t *w, float bias, int nn, int IC) {
    switch (nn) {
    case 1: avx2_tile(out, ldo, x, w, bias, IC, 1); break;
    case 2: avx2_tile(out, ldo, x, w, bias, IC, 2); break;
    case 3: avx2_tile(out, ldo, x, w, bias, IC, 3); break;
    default: avx2_tile(out, ldo, x, w, bias, IC, 4); break;
    }
}

/* --- avx512 -------------------------------------------------------------------------------------------- */

#if defined(__x86_64__) && defined(__GNUC__)
#define WIDE __attribute__((target("avx512f")))
typedef float v16 __attribute__((vector_size(64)));
typedef uint16_t u16x16 __attribute__((vector_size(32)));
typedef uint32_t u32x16 __attribute__((vector_size(64)));

WIDE static inline v16 wide16(const uint16_t *p) {
    u16x16 h;
    memcpy(&h, p, sizeof h);
    u32x16 u = __builtin_convertvector(h, u32x16) << 16;
    v16 f;
    memcpy(&f, &u, sizeof f);
    return f;
}

WIDE static inline v16 ldx16(const float *p) {
    v16 v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* NN input rows (constant per instance: nothing computed for rows the tile lacks) against one weight row */
WIDE static inline __attribute__((always_inline)) void wide_tile(float *out, size_t ldo, const float *x,
                                                                 const uint16_t *w, float bias, int IC, const int NN) {
    v16 a[4];
    for (int n = 0; n < NN; n++) a[n] = (v16){0};
    const char *ahead = (const char *)(w + (size_t)BF16_PREFETCH_ROWS * IC);
    int i = 0;
    for (; i + 16 <= IC; i += 16) {
        if (NN > 1 && (i & 31) == 0) __builtin_prefetch(ahead + 2 * (size_t)i, 0, 2); /* one line per 32 weights */
        v16 wv = wide16(w + i);
        for (int n = 0; n < NN; n++) a[n] += wv * ldx16(x + (size_t)n * IC + i);
    }
    for (int n = 0; n < NN; n++) {
        v8 lo = __builtin_shufflevector(a[n], a[n], 0, 1, 2, 3, 4, 5, 6, 7);
        v8 hi = __builtin_shufflevector(a[n], a[n], 8, 9, 10, 11, 12, 13, 14, 15);
        out[(size_t)n * ldo] = bias + end_bf16(lo, hi, x + (size_t)n * IC, w, i, IC);
    }
}

WIDE static void wide_row(float *out, size_t ldo, const float *x, const uint16_t *w, float bias, int nn, int IC) {
    switch (nn) {
    case 1: wide_tile(out, ldo, x, w, bias, IC, 1); break;
    case 2: wide_tile(out, ldo, x, w, bias, IC, 2); break;
    case 3: wide_tile(out, ldo, x, w, bias, IC, 3); break;
    default: wide_tile(out, ldo, x, w, bias, IC, 4); break;
    }
}
#else
static void wide_row(float *out, size_t ldo, const float *x, const uint16_t *w, float bias, int nn, int IC) {
    avx2_row(out, ldo, x, w, bias, nn, IC);
}
#endif

typedef void (*RowFn)(float *out, size_t ldo, const float *x, const uint16_t *w, float bias, int nn, int IC);

static void cpu_matmul_decode_bf16(float *out, const float *inp, const uint16_t *weight, const float *bias, int N,
                                   int IC, int OC, int ldo) {
    if (N <= 0 || OC <= 0) return;
    CpuKernelPath path = cpu_kernels_path();
    RowFn row = path == CPU_PATH_AVX512 ? wide_row : path == CPU_PATH_AVX2 ? avx2_row : portable_row;
    int nblk = (OC + BF16_ROW_BLOCK - 1) / BF16_ROW_BLOCK;
#pragma omp parallel for schedule(static) if ((size_t)OC * IC >= 64 * (size_t)CPU_OMP_MIN)
    for (int bk = 0; bk < nblk; bk++) {
        int o1 = NR_MIN((bk + 1) * BF16_ROW_BLOCK, OC);
        for (int o = bk * BF16_ROW_BLOCK; o < o1; o++)
            for (int n = 0; n < N; n += 4)
                row(out + (size_t)n * ldo + o, (size_t)ldo, inp + (size_t)n * IC, weight + (size_t)o * IC,
                    bias ? bias[o] : 0.0f, NR_MIN(4, N - n), IC);
    }
}

/* bf16 of x, rounded to nearest, ties to even (NaN kept a NaN) */
static uint16_t f32_to_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static void cpu_to_bf16(uint16_t *dst, const float *src, size_t n) {
#pragma omp parallel for schedule(static) if (n >= 16 * (size_t)CPU_OMP_MIN)
    for (size_t i = 0; i < n; i++) dst[i] = f32_to_bf16(src[i]);
}

void cpu_register_decode_bf16(Backend *be) {
    be->matmul_decode_bf16 = cpu_matmul_decode_bf16;
    be->to_bf16 = cpu_to_bf16;
}
