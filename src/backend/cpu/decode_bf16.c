/* decode_bf16.c — the GEMM with the weight in bfloat16: out (N, ldo), first OC
 * columns = inp (N, IC) · weight (OC, IC)ᵀ + bias. Generation and scoring in
 * bf16 ([model] gen_dtype, score_dtype) run every GEMM through it: a decode
 * step is bound by reading the weight, and bf16 halves the bytes.
 *
 * The input rows are rounded to bf16 too (to nearest, ties to even; a
 * denormal becomes 0), and every output sums in the "pair-dot" order of the
 * AVX512-BF16 dot product VDPBF16PS: 16 lanes, lane j taking columns 2j + 1
 * then 2j of each block of 32, one fused multiply-add each; then the row-dot
 * tree of the lanes (rowdot.h), the leftover columns in order, the bias.
 * The product of two bf16 numbers is exact in fp32, so a multiply and an add
 * round once like the fused instruction, and every path gives the same bits:
 * "avx512bf16" runs VDPBF16PS itself, "avx512" and "avx2" widen the pairs
 * (a bf16 pair is one 32-bit word: the even one shifted up, the odd one
 * masked), "portable" goes a column at a time. VDPBF16PS also flushes a
 * partial sum below 2^-126 to 0, where the others keep it: only sums that
 * small can differ. A row's bits depend on its own input row only.
 *
 * A tile is 1 weight row × 1, 3 or 4 input rows, or 2 × 2 (independent
 * sums); a block of 64 weight rows goes to a thread, which runs it over the
 * input rows 32 at a time, so both stay in its caches. At one input row the
 * weight streams one row after another with no software prefetch: the
 * hardware prefetcher follows one stream best (4 weight rows at once, even
 * prefetched, read 10-20% slower).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"
#include "rowdot.h"
#include "nereus/cpu_kernels.h"
#include "nereus/util.h"

/* weight rows a thread takes at a time */
#define BF16_ROW_BLOCK 64
/* input rows each pass over a block of weight rows takes */
#define BF16_IN_BLOCK 32
/* weight rows ahead that the tiles of 2-4 input rows prefetch into L2, a line for each line they read: with
   several rows of work per weight line the hardware prefetcher alone falls behind (decode.c) */
#define BF16_PREFETCH_ROWS 16

static inline float bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* bf16 of x, rounded to nearest, ties to even; a denormal becomes a zero of its sign (VDPBF16PS reads
   denormals as 0); a NaN stays a NaN */
static inline uint16_t f32_to_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    if ((u & 0x7f800000u) == 0) return (uint16_t)((u >> 16) & 0x8000u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* the lanes' tree (rowdot.h), then columns [i, IC) in order, each a multiply-add of bf16 numbers */
static inline float pair_end(const float acc[16], const uint16_t *x, const uint16_t *w, int i, int IC) {
    float s = rowdot_end(ld8(acc), ld8(acc + 8), NULL, NULL, 0, 0);
    for (int k = i; k < IC; k++) s = fmaf(bf16_to_f32(x[k]), bf16_to_f32(w[k]), s);
    return s;
}

/* --- portable ------------------------------------------------------------------------------------------ */

static void portable_one(float *out, size_t ldo, const uint16_t *x, const uint16_t *w, float bias, int nn, int IC) {
    int full = IC / 32 * 32;
    for (int n = 0; n < nn; n++) {
        const uint16_t *xr = x + (size_t)n * IC;
        float acc[16] = {0};
        for (int i = 0; i < full; i += 32)
            for (int j = 0; j < 16; j++) {
                acc[j] = fmaf(bf16_to_f32(xr[i + 2 * j + 1]), bf16_to_f32(w[i + 2 * j + 1]), acc[j]);
                acc[j] = fmaf(bf16_to_f32(xr[i + 2 * j]), bf16_to_f32(w[i + 2 * j]), acc[j]);
            }
        out[(size_t)n * ldo] = bias + pair_end(acc, xr, w, full, IC);
    }
}

/* --- avx2: GCC vectors of 8 ---------------------------------------------------------------------------- */

typedef uint32_t u32x8 __attribute__((vector_size(32)));

/* 8 bf16 pairs at p: the even ones (shifted into the float's upper half) and the odd ones (masked) */
static inline void pairs8(const uint16_t *p, v8 *even, v8 *odd) {
    u32x8 u;
    memcpy(&u, p, sizeof u);
    u32x8 e = u << 16, o = u & 0xffff0000u;
    memcpy(even, &e, sizeof e);
    memcpy(odd, &o, sizeof o);
}

/* NN input rows (constant per instance) against one weight row: lanes 0-7 and 8-15 of each output. The
   products are exact, so a multiply and an add (fused by the compiler or not) round once, as VDPBF16PS. */
static inline __attribute__((always_inline)) void avx2_tile(float *out, size_t ldo, const uint16_t *x,
                                                            const uint16_t *w, float bias, int IC, const int NN) {
    v8 lo[4], hi[4];
    for (int n = 0; n < NN; n++) lo[n] = hi[n] = (v8){0};
    const char *ahead = (const char *)(w + (size_t)BF16_PREFETCH_ROWS * IC);
    int i = 0;
    for (; i + 32 <= IC; i += 32) {
        if (NN > 1) __builtin_prefetch(ahead + 2 * (size_t)i, 0, 2); /* one line per 32 weights */
        v8 we0, wo0, we1, wo1;
        pairs8(w + i, &we0, &wo0);
        pairs8(w + i + 16, &we1, &wo1);
        for (int n = 0; n < NN; n++) {
            v8 xe0, xo0, xe1, xo1;
            pairs8(x + (size_t)n * IC + i, &xe0, &xo0);
            pairs8(x + (size_t)n * IC + i + 16, &xe1, &xo1);
            lo[n] += xo0 * wo0;
            lo[n] += xe0 * we0;
            hi[n] += xo1 * wo1;
            hi[n] += xe1 * we1;
        }
    }
    for (int n = 0; n < NN; n++) {
        float acc[16];
        memcpy(acc, &lo[n], sizeof lo[n]);
        memcpy(acc + 8, &hi[n], sizeof hi[n]);
        out[(size_t)n * ldo] = bias + pair_end(acc, x + (size_t)n * IC, w, i, IC);
    }
}

static void avx2_one(float *out, size_t ldo, const uint16_t *x, const uint16_t *w, float bias, int nn, int IC) {
    switch (nn) {
    case 1: avx2_tile(out, ldo, x, w, bias, IC, 1); break;
    case 2: avx2_tile(out, ldo, x, w, bias, IC, 2); break;
    case 3: avx2_tile(out, ldo, x, w, bias, IC, 3); break;
    default: avx2_tile(out, ldo, x, w, bias, IC, 4); break;
    }
}

/* --- avx512 and avx512bf16 ----------------------------------------------------------------------------- */

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define WIDE __attribute__((target("avx512f")))
#define WIDE_BF16 __attribute__((target("avx512f,avx512bf16")))

/* NN input rows against one weight row, 16 pairs a vector, widened */
WIDE static inline __attribute__((always_inline)) void wide_tile(float *out, size_t ldo, const uint16_t *x,
                                                                 const uint16_t *w, float bias, int IC, const int NN) {
    __m512 a[4];
    for (int n = 0; n < NN; n++) a[n] = _mm512_setzero_ps();
    const char *ahead = (const char *)(w + (size_t)BF16_PREFETCH_ROWS * IC);
    const __m512i odd = _mm512_set1_epi32((int)0xffff0000u);
    int i = 0;
    for (; i + 32 <= IC; i += 32) {
        __builtin_prefetch(ahead + 2 * (size_t)i, 0, 2);
        __m512i wv = _mm512_loadu_si512(w + i);
        __m512 we = _mm512_castsi512_ps(_mm512_slli_epi32(wv, 16));
        __m512 wo = _mm512_castsi512_ps(_mm512_and_si512(wv, odd));
        for (int n = 0; n < NN; n++) {
            __m512i xv = _mm512_loadu_si512(x + (size_t)n * IC + i);
            a[n] = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(xv, odd)), wo, a[n]);
            a[n] = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(xv, 16)), we, a[n]);
        }
    }
    for (int n = 0; n < NN; n++) {
        float acc[16];
        _mm512_storeu_ps(acc, a[n]);
        out[(size_t)n * ldo] = bias + pair_end(acc, x + (size_t)n * IC, w, i, IC);
    }
}

/* the same with VDPBF16PS, 16 pairs an instruction, over R weight rows IC apart (NN·R ≤ 4 outputs; each output's
   order is R's and NN's alone) */
WIDE_BF16 static inline __attribute__((always_inline)) void dp_tile(float *out, size_t ldo, const uint16_t *x,
                                                                    const uint16_t *w, const float *bias, int IC,
                                                                    const int NN, const int R) {
    __m512 a[4];
    for (int k = 0; k < NN * R; k++) a[k] = _mm512_setzero_ps();
    const char *ahead = (const char *)(w + (size_t)BF16_PREFETCH_ROWS * IC);
    int i = 0;
    for (; i + 32 <= IC; i += 32) {
        for (int r = 0; r < R; r++) {
            if (NN * R > 1) __builtin_prefetch(ahead + 2 * ((size_t)r * IC + i), 0, 2);
            __m512bh wv = (__m512bh)_mm512_loadu_si512(w + (size_t)r * IC + i);
            for (int n = 0; n < NN; n++)
                a[r * NN + n] = _mm512_dpbf16_ps(a[r * NN + n], (__m512bh)_mm512_loadu_si512(x + (size_t)n * IC + i), wv);
        }
    }
    for (int r = 0; r < R; r++)
        for (int n = 0; n < NN; n++) {
            float acc[16];
            _mm512_storeu_ps(acc, a[r * NN + n]);
            out[(size_t)n * ldo + r] = (bias ? bias[r] : 0.0f) + pair_end(acc, x + (size_t)n * IC, w + (size_t)r * IC, i, IC);
        }
}

WIDE static void wide_one(float *out, size_t ldo, const uint16_t *x, const uint16_t *w, float bias, int nn, int IC) {
    switch (nn) {
    case 1: wide_tile(out, ldo, x, w, bias, IC, 1); break;
    case 2: wide_tile(out, ldo, x, w, bias, IC, 2); break;
    case 3: wide_tile(out, ldo, x, w, bias, IC, 3); break;
    default: wide_tile(out, ldo, x, w, bias, IC, 4); break;
    }
}

WIDE_BF16 static void dp_row(float *out, size_t ldo, const uint16_t *x, const uint16_t *w, const float *bias, int nn,
                             int nr, int IC) {
    switch (nn * 8 + nr) {
    case 8 + 1: dp_tile(out, ldo, x, w, bias, IC, 1, 1); break;
    case 8 + 2: dp_tile(out, ldo, x, w, bias, IC, 1, 2); break;
    case 8 + 3: dp_tile(out, ldo, x, w, bias, IC, 1, 3); break;
    case 8 + 4: dp_tile(out, ldo, x, w, bias, IC, 1, 4); break;
    case 16 + 1: dp_tile(out, ldo, x, w, bias, IC, 2, 1); break;
    case 16 + 2: dp_tile(out, ldo, x, w, bias, IC, 2, 2); break;
    case 24 + 1: dp_tile(out, ldo, x, w, bias, IC, 3, 1); break;
    default: dp_tile(out, ldo, x, w, bias, IC, 4, 1); break;
    }
}
#else
static void wide_one(float *out, size_t ldo, const uint16_t *x, const uint16_t *w, float bias, int nn, int IC) {
    avx2_one(out, ldo, x, w, bias, nn, IC);
}
static void dp_row(float *out, size_t ldo, const uint16_t *x, const uint16_t *w, const float *bias, int nn, int nr,
                   int IC) {
    for (int r = 0; r < nr; r++) avx2_one(out + r, ldo, x, w + (size_t)r * IC, bias ? bias[r] : 0.0f, nn, IC);
}
#endif

/* nn input rows (at most 4) against one weight row: the tiles of the paths that widen the pairs */
typedef void (*OneFn)(float *out, size_t ldo, const uint16_t *x, const uint16_t *w, float bias, int nn, int IC);

/* the input rows in bf16: a buffer of the calling thread's, grown as needed (the GEMM's threads only read it) */
static const uint16_t *input_bf16(const float *inp, size_t n) {
    static __thread uint16_t *buf;
    static __thread size_t cap;
    if (n > cap) {
        free(buf);
        cap = n + n / 2;
        buf = nr_xmalloc(cap * sizeof(uint16_t));
    }
    for (size_t i = 0; i < n; i++) buf[i] = f32_to_bf16(inp[i]);
    return buf;
}

static void cpu_matmul_decode_bf16(float *out, const float *inp, const uint16_t *weight, const float *bias, int N,
                                   int IC, int OC, int ldo) {
    if (N <= 0 || OC <= 0) return;
    CpuKernelPath path = cpu_kernels_path();
    int dp = path == CPU_PATH_AVX512BF16;
    OneFn one = path == CPU_PATH_AVX512 ? wide_one : path == CPU_PATH_AVX2 ? avx2_one : portable_one;
    const uint16_t *x = input_bf16(inp, (size_t)N * IC);
    int nblk = (OC + BF16_ROW_BLOCK - 1) / BF16_ROW_BLOCK;
#pragma omp parallel for schedule(static) if ((size_t)OC * IC >= 64 * (size_t)CPU_OMP_MIN)
    for (int bk = 0; bk < nblk; bk++) {
        int o0 = bk * BF16_ROW_BLOCK, o1 = NR_MIN(o0 + BF16_ROW_BLOCK, OC);
        for (int n0 = 0; n0 < N; n0 += BF16_IN_BLOCK) {
            int n1 = NR_MIN(n0 + BF16_IN_BLOCK, N);
            for (int n = n0; n < n1; n += 4) {
                int nn = NR_MIN(4, n1 - n), R = dp && nn == 2 ? 2 : 1; /* VDPBF16PS: 2 × 2 at two input rows */
                for (int o = o0; o < o1; o += R) {
                    float *oo = out + (size_t)n * ldo + o;
                    const uint16_t *xx = x + (size_t)n * IC, *ww = weight + (size_t)o * IC;
                    if (dp) dp_row(oo, (size_t)ldo, xx, ww, bias ? bias + o : NULL, nn, NR_MIN(R, o1 - o), IC);
                    else one(oo, (size_t)ldo, xx, ww, bias ? bias[o] : 0.0f, nn, IC);
                }
            }
        }
    }
}

static void cpu_to_bf16(uint16_t *dst, const float *src, size_t n) {
#pragma omp parallel for schedule(static) if (n >= 16 * (size_t)CPU_OMP_MIN)
    for (size_t i = 0; i < n; i++) dst[i] = f32_to_bf16(src[i]);
}

void cpu_register_decode_bf16(Backend *be) {
    be->matmul_decode_bf16 = cpu_matmul_decode_bf16;
    be->to_bf16 = cpu_to_bf16;
}
