/* decode.c — the GEMM of a KV-cached decode step on the CPU backend: a few
 * rows (one token per sequence still generating) through a weight that is
 * far larger than the cache, so the step is bound by reading the weight.
 *
 * Up to DECODE_NARROW_MAX rows, each weight row is loaded once and dotted
 * with every input row while it sits in registers and L1 (groups of 4 input
 * rows, 16 partial sums each, added by a fixed tree): the weight streams from
 * memory once per step for the whole batch. With 2-4 rows the kernels
 * prefetch the weight ahead in memory order, and with 4 rows on a CPU with
 * AVX-512 a tile of two weight rows serves each input vector twice; both give
 * the same bits as the one-row AVX2 kernel. OpenBLAS 0.3.21 reaches a third
 * to a half of the read bandwidth at these shapes (sgemm packs the weight,
 * sgemv reads it once per row); docs/PERFORMANCE.md has the figures. Above
 * DECODE_NARROW_MAX rows, and on the portable path, the step is the GEMM of
 * rowdot.c. Every kernel here sums in the row-dot order of rowdot.c (the same
 * lanes, the same tree, fused multiply-adds), so an output row is a function
 * of its own input row only, whatever N is, wherever the row sits and
 * whichever path runs: a sequence's logits do not depend on which others are
 * still generating, and equal those the forward computes for the same row.
 */
#include <stdlib.h>
#include <string.h>

/* the products and sums of the narrow kernel as fused multiply-adds (the project's -std=c11 turns
   contraction off): half the floating-point instructions, so four rows keep up with the memory */
#pragma GCC optimize("fp-contract=fast")

#include "cpu_internal.h"
#include "rowdot.h"
#include "nereus/cpu_kernels.h"
#include "nereus/util.h"

/* rows up to which the register-blocked kernel runs; sgemm above (crossover measured by bench_gen) */
#define DECODE_NARROW_MAX 4

/* weight rows a thread takes at a time */
#define DECODE_ROW_BLOCK 64

/* Weight rows ahead of the rows being read that the kernels for 2-4 input rows prefetch into L2, one 64-byte
   line for each line they read, so that the lines are requested in the order they sit in memory. With 2-4
   input rows there is so much work per weight line that the hardware prefetcher alone falls behind (18-25 GB/s
   against 26-29 with the prefetch, 4 rows of 768 columns; 4 and 8 rows ahead read 5-25 % slower than 16). One
   input row keeps the hardware prefetcher up to speed and gets none (it measured slower with it). */
#define DECODE_PREFETCH_ROWS 16

/* out[k·ldo] = bias + Σ_i x[k·IC + i]·w[i] for the nn ≤ 4 rows k of x: the weight row is loaded once for
   the four, 16 partial sums a row held in registers (two AVX2 registers: 8 accumulators of 16). The weight
   rows are read one after another; with more than one input row the next rows are prefetched. This is the
   kernel wherever the AVX-512 one below is not built or the CPU lacks AVX-512 */
static void dot_rows4(float *out, size_t ldo, const float *x, const float *w, float bias, int nn, int IC) {
    /* rows past nn repeat row 0 (their sums are dropped), so the loop has no branch */
    const float *x0 = x, *x1 = nn > 1 ? x + IC : x, *x2 = nn > 2 ? x + 2 * (size_t)IC : x;
    const float *x3 = nn > 3 ? x + 3 * (size_t)IC : x;
    const float *ahead = w + (size_t)DECODE_PREFETCH_ROWS * IC;
    v8 l0 = {0}, h0 = {0}, l1 = {0}, h1 = {0}, l2 = {0}, h2 = {0}, l3 = {0}, h3 = {0};
    int i = 0;
    for (; i + 16 <= IC; i += 16) {
        if (nn > 1) __builtin_prefetch(ahead + i, 0, 2);
        v8 wl = ld8(w + i), wh = ld8(w + i + 8);
        l0 += wl * ld8(x0 + i); h0 += wh * ld8(x0 + i + 8);
        l1 += wl * ld8(x1 + i); h1 += wh * ld8(x1 + i + 8);
        l2 += wl * ld8(x2 + i); h2 += wh * ld8(x2 + i + 8);
        l3 += wl * ld8(x3 + i); h3 += wh * ld8(x3 + i + 8);
    }
    out[0] = bias + rowdot_end(l0, h0, x0, w, i, IC);
    if (nn > 1) out[ldo] = bias + rowdot_end(l1, h1, x1, w, i, IC);
    if (nn > 2) out[2 * ldo] = bias + rowdot_end(l2, h2, x2, w, i, IC);
    if (nn > 3) out[3 * ldo] = bias + rowdot_end(l3, h3, x3, w, i, IC);
}

/* weight rows [o0, o1) against the N ≤ 4 rows of inp, one weight row at a time */
static void rows_narrow(float *out, const float *inp, const float *weight, const float *bias, int N, int IC, int o0,
                        int o1, int ldo) {
    for (int o = o0; o < o1; o++)
        dot_rows4(out + o, (size_t)ldo, inp, weight + (size_t)o * IC, bias ? bias[o] : 0.0f, N, IC);
}

#if defined(__x86_64__) && defined(__GNUC__)
/* The AVX-512 kernel for 4 input rows. With 32 vector registers of 16 floats, an output's 16 partial sums
   fit in one register, and a tile of 2 weight rows × 4 input rows keeps its 8 sums, the 2 weight vectors and
   an input vector in registers: each input vector serves two weight rows, half the loads of the one-row
   kernel for every weight line and half its L2 → L1 traffic where the input rows are past L1 (4 rows of
   3,072: 48 KB). Its lanes hold the same partial sums in the same order as the AVX2 kernel's two registers
   (lane j: columns ≡ j mod 16, in order, fused multiply-adds), summed by the same rowdot_end: every output is bit
   for bit the AVX2 kernel's. Built for AVX-512F by a function attribute and chosen at run time, so the
   build's target stays x86-64-v3. */
#define DECODE_WIDE __attribute__((target("avx512f")))

typedef float v16 __attribute__((vector_size(64)));

DECODE_WIDE static inline v16 load16(const float *p) {
    v16 v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* out[n·ldo + r] = bias[r] + Σ_i x[n·IC + i]·w[r·IC + i] for the 2 weight rows r and 4 input rows n,
   prefetching the lines DECODE_PREFETCH_ROWS rows past the tile's, as many as it reads: tile after tile, the
   prefetches walk the weight in memory order */
DECODE_WIDE static void wide_2x4(float *out, size_t ldo, const float *x, const float *w, const float *bias, int IC) {
    enum { R = 2, NN = 4 };
    v16 acc[R][NN];
    for (int r = 0; r < R; r++)
        for (int n = 0; n < NN; n++) acc[r][n] = (v16){0};
    const char *ahead = (const char *)(w + (size_t)DECODE_PREFETCH_ROWS * IC);
    int i = 0;
    for (; i + 16 <= IC; i += 16, ahead += 64 * R) {
        v16 wv[R];
        for (int r = 0; r < R; r++) {
            wv[r] = load16(w + (size_t)r * IC + i);
            __builtin_prefetch(ahead + 64 * r, 0, 2);
        }
        for (int n = 0; n < NN; n++) {
            v16 xv = load16(x + (size_t)n * IC + i);
            for (int r = 0; r < R; r++) acc[r][n] += wv[r] * xv;
        }
    }
    for (int r = 0; r < R; r++)
        for (int n = 0; n < NN; n++) {
            v8 lo = __builtin_shufflevector(acc[r][n], acc[r][n], 0, 1, 2, 3, 4, 5, 6, 7);
            v8 hi = __builtin_shufflevector(acc[r][n], acc[r][n], 8, 9, 10, 11, 12, 13, 14, 15);
            out[(size_t)n * ldo + r] =
                (bias ? bias[r] : 0.0f) + rowdot_end(lo, hi, x + (size_t)n * IC, w + (size_t)r * IC, i, IC);
        }
}

static int decode_wide_usable(void) { return cpu_kernels_path() >= CPU_PATH_AVX512; }

/* weight rows [o0, o1) against the N ≤ 4 rows of inp: pairs of weight rows for 4 input rows (an odd last row
   by the AVX2 kernel). Fewer input rows take the AVX2 kernel: with one, the weight is one stream with little
   work per line, which the hardware prefetcher follows at the full read rate; with 2 or 3 it measured 10-15 %
   faster than the AVX-512 tile (one or two weight rows at a time, AMD EPYC Zen 4) */
static void rows_wide(float *out, const float *inp, const float *weight, const float *bias, int N, int IC, int o0,
                      int o1, int ldo) {
    int o = o0;
    if (N == 4)
        for (; o + 2 <= o1; o += 2)
            wide_2x4(out + o, (size_t)ldo, inp, weight + (size_t)o * IC, bias ? bias + o : NULL, IC);
    rows_narrow(out, inp, weight, bias, N, IC, o, o1, ldo);
}
#else
static int decode_wide_usable(void) { return 0; }
static void rows_wide(float *out, const float *inp, const float *weight, const float *bias, int N, int IC, int o0,
                      int o1, int ldo) {
    rows_narrow(out, inp, weight, bias, N, IC, o0, o1, ldo);
}
#endif

/* N ≤ DECODE_NARROW_MAX rows, blocks of weight rows split over the threads */
static void matmul_narrow(float *out, const float *inp, const float *weight, const float *bias, int N, int IC, int OC,
                          int ldo) {
    int nblk = (OC + DECODE_ROW_BLOCK - 1) / DECODE_ROW_BLOCK, wide = decode_wide_usable();
#pragma omp parallel for schedule(static) if ((size_t)OC * IC >= 64 * (size_t)CPU_OMP_MIN)
    for (int bk = 0; bk < nblk; bk++) {
        int o0 = bk * DECODE_ROW_BLOCK, o1 = NR_MIN(o0 + DECODE_ROW_BLOCK, OC);
        if (wide) rows_wide(out, inp, weight, bias, N, IC, o0, o1, ldo);
        else rows_narrow(out, inp, weight, bias, N, IC, o0, o1, ldo);
    }
}

/* out (N, ldo), first OC columns = inp (N, IC) · weight (OC, IC)^T + bias (OC) */
static void cpu_matmul_decode(float *out, const float *inp, const float *weight, const float *bias, int N, int IC,
                              int OC, int ldo) {
    if (N <= 0 || OC <= 0) return;
    if (IC <= 0) {
        for (int n = 0; n < N; n++)
            for (int o = 0; o < OC; o++) out[(size_t)n * ldo + o] = bias ? bias[o] : 0.0f;
        return;
    }
    if (N <= DECODE_NARROW_MAX && cpu_kernels_path() != CPU_PATH_PORTABLE) {
        matmul_narrow(out, inp, weight, bias, N, IC, OC, ldo);
        return;
    }
    cpu_rowdot(out, (size_t)ldo, inp, weight, bias, N, IC, OC);
}

void cpu_register_decode(Backend *be) { be->matmul_decode = cpu_matmul_decode; }
