/* decode.c — the GEMM of a KV-cached decode step on the CPU backend: a few
 * rows (one token per sequence still generating) through a weight that is
 * far larger than the cache, so the step is bound by reading the weight.
 *
 * Up to DECODE_NARROW_MAX rows, each weight row is loaded once and dotted
 * with every input row while it sits in registers and L1 (groups of 4 input
 * rows, 16 partial sums each, added by a fixed tree): the weight streams from
 * memory once per step for the whole batch. OpenBLAS 0.3.21 reaches a third
 * to a half of the read bandwidth at these shapes (sgemm packs the weight,
 * sgemv reads it once per row); docs/PERFORMANCE.md has the figures. Above
 * DECODE_NARROW_MAX rows the step is compute-bound and sgemm is the faster.
 * An output row is a function of its own input row only, whatever N is and
 * wherever the row sits, so a sequence's logits do not depend on which
 * others are still generating.
 */
#include <cblas.h>
#include <string.h>

/* the products and sums of the narrow kernel as fused multiply-adds (the project's -std=c11 turns
   contraction off): half the floating-point instructions, so four rows keep up with the memory */
#pragma GCC optimize("fp-contract=fast")

#include "cpu_internal.h"
#include "nereus/util.h"

/* rows up to which the register-blocked kernel runs; sgemm above (crossover measured by bench_gen) */
#define DECODE_NARROW_MAX 4

/* weight rows a thread takes at a time */
#define DECODE_ROW_BLOCK 64

/* eight floats in one vector register (GCC vector extension: AVX on x86-64-v3, two NEON registers on aarch64) */
typedef float v8 __attribute__((vector_size(32)));

static inline v8 load8(const float *p) {
    v8 v;
    memcpy(&v, p, sizeof v);
    return v;
}

typedef float v4 __attribute__((vector_size(16)));

/* Σ of the 16 lanes of (lo, hi) by a fixed tree (lo + hi, then halves), then the tail in order: a few
   vector adds instead of 16 dependent scalar ones, and the same order for every row and every N */
static inline float sum16(v8 lo, v8 hi, const float *x, const float *w, int i, int IC) {
    v8 t = lo + hi;
    v4 h = __builtin_shufflevector(t, t, 0, 1, 2, 3) + __builtin_shufflevector(t, t, 4, 5, 6, 7);
    float s = (h[0] + h[2]) + (h[1] + h[3]);
    for (int k = i; k < IC; k++) s += x[k] * w[k];
    return s;
}

/* out[k·ldo] = bias + Σ_i x[k·IC + i]·w[i] for the nn ≤ 4 rows k of x: the weight row is loaded once for
   the four, 16 partial sums a row held in registers. The weight rows are read one after another, a stream
   the prefetcher follows (blocking the columns so that four input rows of 3,072 stay in L1 made it strided
   streams, no faster at 2-4 rows and slower at 1) */
static void dot_rows4(float *out, size_t ldo, const float *x, const float *w, float bias, int nn, int IC) {
    /* rows past nn repeat row 0 (their sums are dropped), so the loop has no branch */
    const float *x0 = x, *x1 = nn > 1 ? x + IC : x, *x2 = nn > 2 ? x + 2 * (size_t)IC : x;
    const float *x3 = nn > 3 ? x + 3 * (size_t)IC : x;
    v8 l0 = {0}, h0 = {0}, l1 = {0}, h1 = {0}, l2 = {0}, h2 = {0}, l3 = {0}, h3 = {0};
    int i = 0;
    for (; i + 16 <= IC; i += 16) {
        v8 wl = load8(w + i), wh = load8(w + i + 8);
        l0 += wl * load8(x0 + i); h0 += wh * load8(x0 + i + 8);
        l1 += wl * load8(x1 + i); h1 += wh * load8(x1 + i + 8);
        l2 += wl * load8(x2 + i); h2 += wh * load8(x2 + i + 8);
        l3 += wl * load8(x3 + i); h3 += wh * load8(x3 + i + 8);
    }
    out[0] = bias + sum16(l0, h0, x0, w, i, IC);
    if (nn > 1) out[ldo] = bias + sum16(l1, h1, x1, w, i, IC);
    if (nn > 2) out[2 * ldo] = bias + sum16(l2, h2, x2, w, i, IC);
    if (nn > 3) out[3 * ldo] = bias + sum16(l3, h3, x3, w, i, IC);
}

/* N ≤ DECODE_NARROW_MAX rows, blocks of weight rows split over the threads */
static void matmul_narrow(float *out, const float *inp, const float *weight, const float *bias, int N, int IC, int OC,
                          int ldo) {
    int nblk = (OC + DECODE_ROW_BLOCK - 1) / DECODE_ROW_BLOCK;
#pragma omp parallel for schedule(static) if ((size_t)OC * IC >= 64 * (size_t)CPU_OMP_MIN)
    for (int bk = 0; bk < nblk; bk++) {
        int o0 = bk * DECODE_ROW_BLOCK, o1 = NR_MIN(o0 + DECODE_ROW_BLOCK, OC);
        for (int o = o0; o < o1; o++)
            for (int n0 = 0; n0 < N; n0 += 4)
                dot_rows4(out + (size_t)n0 * ldo + o, (size_t)ldo, inp + (size_t)n0 * IC, weight + (size_t)o * IC,
                          bias ? bias[o] : 0.0f, NR_MIN(4, N - n0), IC);
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
    if (N <= DECODE_NARROW_MAX) {
        matmul_narrow(out, inp, weight, bias, N, IC, OC, ldo);
        return;
    }
    float beta = 0.0f;
    if (bias) {
        for (int n = 0; n < N; n++) memcpy(out + (size_t)n * ldo, bias, (size_t)OC * sizeof(float));
        beta = 1.0f;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, IC, 1.0f, inp, IC, weight, IC, beta, out, ldo);
}

void cpu_register_decode(Backend *be) { be->matmul_decode = cpu_matmul_decode; }
