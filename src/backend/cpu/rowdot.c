/* rowdot.c — the CPU backend's GEMM out = x · wᵀ + bias (x (N, IC), w (OC, IC)),
 * computed so that an output's bits depend on its own input row and weight
 * row only: not on N, on the other rows, on the thread count or on the kernel
 * path (batch invariance, docs/NUMERICS.md).
 *
 * Every output is the row-dot order: 16 lanes, lane j summing
 * x[i]·w[i] over the columns i ≡ j (mod 16) below the last whole block of 16,
 * in increasing i, each a fused multiply-add into the lane; then the lanes by
 * a fixed tree (rowdot_finish); then the leftover columns in order, each a
 * fused multiply-add; then the bias added. A lane is independent of the
 * others, so any tiling of rows and columns, any split of the lanes over
 * registers (one AVX-512 register, two AVX2 registers, 16 scalars) and any
 * partition of the work over threads gives the same bits.
 *
 * The AVX-512 kernel holds tiles of 4 weight rows × 6 input rows (24
 * accumulators of 16 lanes); the AVX2 kernel tiles of 3 × 4, each lane half
 * (8 lanes) in its own pass over a chunk of columns; the portable kernel is
 * plain C with fmaf, one output at a time. Input rows go in chunks that stay
 * in L2 while every weight row passes over them, and within a chunk in blocks
 * whose lanes wait in memory between column chunks; blocks of weight rows go
 * to the threads. Leftover rows take the same kernel with a smaller tile.
 */
#include <math.h>
#include <string.h>

/* the lanes' products and sums as fused multiply-adds (the project's -std=c11 turns contraction off) */
#pragma GCC optimize("fp-contract=fast")

#include "cpu_internal.h"
#include "rowdot.h"
#include "nereus/cpu_kernels.h"
#include "nereus/util.h"

/* bytes of input rows that stay in L2 while the weight passes over them */
#define ROWDOT_L2_BYTES (256 << 10)
/* weight rows a thread takes at a time (a multiple of 4 and of 3) */
#define ROWDOT_OBLOCK 48

float cpu_rowdot_finish(const float acc[16], const float *x, const float *w, int i, int IC) {
    float t[8], h[4];
    for (int j = 0; j < 8; j++) t[j] = acc[j] + acc[j + 8];
    for (int j = 0; j < 4; j++) h[j] = t[j] + t[j + 4];
    float s = (h[0] + h[2]) + (h[1] + h[3]);
    for (int k = i; k < IC; k++) s = fmaf(x[k], w[k], s);
    return s;
}

/* --- portable: plain C ------------------------------------------------------------------------------ */

static void portable_rows(float *out, size_t ldo, const float *x, const float *w, const float *bias, int N, int IC,
                          int o0, int o1) {
    int full = IC / 16 * 16;
    for (int n = 0; n < N; n++)
        for (int o = o0; o < o1; o++) {
            const float *xr = x + (size_t)n * IC, *wr = w + (size_t)o * IC;
            float acc[16] = {0};
            for (int i = 0; i < full; i += 16)
                for (int j = 0; j < 16; j++) acc[j] = fmaf(xr[i + j], wr[i + j], acc[j]);
            out[(size_t)n * ldo + o] = (bias ? bias[o] : 0.0f) + cpu_rowdot_finish(acc, xr, wr, full, IC);
        }
}

/* --- the vector paths: blocks of input rows, the columns in chunks ------------------------------------ */

/* A block holds the 16 lanes of every output of R ≤ 4 weight rows × nb ≤ ROWDOT_XB input rows (acc[n·4 + r])
   while the columns go by in chunks (Tiles.kc): within a chunk the weight rows' part stays in L1 for every
   tile of input rows. The lanes only ever continue where they stopped, so the order is the row-dot order. */
#define ROWDOT_XB 24

typedef float Lanes[16] __attribute__((aligned(64)));

/* one tile's chunk: lanes of the outputs of weight rows w + r·IC (r < R), input rows x + n·IC (n < NN),
   columns [k0, k1), into acc[n·4 + r] */
typedef void (*ChunkFn)(Lanes *acc, const float *x, const float *w, int IC, int k0, int k1);

/* AVX2: 3 weight rows × 4 input rows, 12 accumulators of 8 lanes: lanes 0-7 over the chunk, then lanes 8-15 */
static inline __attribute__((always_inline)) void avx2_chunk(Lanes *acc, const float *x, const float *w, int IC,
                                                             int k0, int k1, const int R, const int NN) {
    for (int half = 0; half < 2; half++) {
        v8 a[3][4];
        for (int r = 0; r < R; r++)
            for (int n = 0; n < NN; n++) a[r][n] = k0 == 0 ? (v8){0} : ld8(acc[n * 4 + r] + half * 8);
        for (int i = k0 + half * 8; i < k1; i += 16) {
            v8 wv[3];
            for (int r = 0; r < R; r++) wv[r] = ld8(w + (size_t)r * IC + i);
            for (int n = 0; n < NN; n++) {
                v8 xv = ld8(x + (size_t)n * IC + i);
                for (int r = 0; r < R; r++) a[r][n] += wv[r] * xv;
            }
        }
        for (int r = 0; r < R; r++)
            for (int n = 0; n < NN; n++) memcpy(acc[n * 4 + r] + half * 8, &a[r][n], sizeof(v8));
    }
}

#define AVX2_CHUNK(R, NN) \
    static void avx2_##R##x##NN(Lanes *acc, const float *x, const float *w, int IC, int k0, int k1) { \
        avx2_chunk(acc, x, w, IC, k0, k1, R, NN); \
    }
AVX2_CHUNK(3, 4) AVX2_CHUNK(3, 3) AVX2_CHUNK(3, 2) AVX2_CHUNK(3, 1)
AVX2_CHUNK(1, 4) AVX2_CHUNK(1, 3) AVX2_CHUNK(1, 2) AVX2_CHUNK(1, 1)

/* a path's tiles: R weight rows × NN input rows, fn[full R?][nn − 1]; kc columns a chunk */
typedef struct Tiles { int R, NN, kc; ChunkFn fn[2][6]; } Tiles;

/* AVX2 reads each line twice (one lane half a pass): chunks of 1,024 columns keep a tile's lines in L1 between
   the passes (3,072-wide rows: 0.61 of sgemm against 0.43 unchunked, AMD EPYC Zen 4, 1 thread) */
static const Tiles avx2_tiles = {3, 4, 1024, {{avx2_1x1, avx2_1x2, avx2_1x3, avx2_1x4}, {avx2_3x1, avx2_3x2, avx2_3x3, avx2_3x4}}};

#if defined(__x86_64__) && defined(__GNUC__)
/* AVX-512: 4 weight rows × 6 input rows, 24 accumulators of 16 lanes; built for AVX-512F by a function
   attribute and chosen at run time, so the build's target stays x86-64-v3 */
#define WIDE __attribute__((target("avx512f")))
typedef float v16 __attribute__((vector_size(64)));

/* the lanes of a block as one register (aligned; may alias the floats of Lanes) */
typedef float v16a __attribute__((vector_size(64), aligned(64), may_alias));

WIDE static inline v16 ld16(const float *p) {
    v16 v;
    memcpy(&v, p, sizeof v);
    return v;
}

WIDE static inline __attribute__((always_inline)) void wide_chunk(Lanes *acc, const float *x, const float *w, int IC,
                                                                  int k0, int k1, const int R, const int NN) {
    v16 a[4][6];
    for (int r = 0; r < R; r++)
        for (int n = 0; n < NN; n++) a[r][n] = k0 == 0 ? (v16){0} : (v16)*(const v16a *)acc[n * 4 + r];
    for (int i = k0; i < k1; i += 16) {
        v16 wv[4];
        for (int r = 0; r < R; r++) wv[r] = ld16(w + (size_t)r * IC + i);
        for (int n = 0; n < NN; n++) {
            v16 xv = ld16(x + (size_t)n * IC + i);
            for (int r = 0; r < R; r++) a[r][n] += wv[r] * xv;
        }
    }
    for (int r = 0; r < R; r++)
        for (int n = 0; n < NN; n++) *(v16a *)acc[n * 4 + r] = a[r][n];
}

#define WIDE_CHUNK(R, NN) \
    WIDE static void wide_##R##x##NN(Lanes *acc, const float *x, const float *w, int IC, int k0, int k1) { \
        wide_chunk(acc, x, w, IC, k0, k1, R, NN); \
    }
WIDE_CHUNK(4, 6) WIDE_CHUNK(4, 5) WIDE_CHUNK(4, 4) WIDE_CHUNK(4, 3) WIDE_CHUNK(4, 2) WIDE_CHUNK(4, 1)
WIDE_CHUNK(1, 6) WIDE_CHUNK(1, 5) WIDE_CHUNK(1, 4) WIDE_CHUNK(1, 3) WIDE_CHUNK(1, 2) WIDE_CHUNK(1, 1)

/* AVX-512 reads each line once: unchunked (chunks of 1,024 columns measured 0.68 of sgemm against 0.75 at
   3,072-wide rows, with misaligned rows) */
static const Tiles wide_tiles = {4, 6, 1 << 30, {{wide_1x1, wide_1x2, wide_1x3, wide_1x4, wide_1x5, wide_1x6},
                                        {wide_4x1, wide_4x2, wide_4x3, wide_4x4, wide_4x5, wide_4x6}}};
#else
#define wide_tiles avx2_tiles
#endif

/* the R × nb outputs of a block from their lanes */
static void block_end(float *out, size_t ldo, const Lanes *acc, const float *x, const float *w, const float *bias,
                      int IC, int full, int R, int nb) {
    for (int n = 0; n < nb; n++)
        for (int r = 0; r < R; r++)
            out[(size_t)n * ldo + r] = (bias ? bias[r] : 0.0f) + rowdot_end(ld8(acc[n * 4 + r]), ld8(acc[n * 4 + r] + 8),
                                                                             x + (size_t)n * IC, w + (size_t)r * IC,
                                                                             full, IC);
}

/* weight rows [o0, o1) against the N input rows, by the path's tiles */
static void tiled_rows(const Tiles *t, float *out, size_t ldo, const float *x, const float *w, const float *bias, int N,
                       int IC, int o0, int o1) {
    Lanes acc[ROWDOT_XB * 4];
    int full = IC / 16 * 16;
    for (int o = o0; o < o1;) {
        int R = o + t->R <= o1 ? t->R : 1;
        for (int n0 = 0; n0 < N; n0 += ROWDOT_XB) {
            int nb = NR_MIN(ROWDOT_XB, N - n0);
            if (full == 0) memset(acc, 0, (size_t)nb * 4 * sizeof(Lanes)); /* no chunk runs to start the lanes */
            for (int k0 = 0; k0 < full; k0 += t->kc)
                for (int n = 0; n < nb; n += t->NN)
                    t->fn[R == t->R][NR_MIN(t->NN, nb - n) - 1](acc + n * 4, x + (size_t)(n0 + n) * IC, w + (size_t)o * IC,
                                                                IC, k0, NR_MIN(k0 + t->kc, full));
            block_end(out + (size_t)n0 * ldo + o, ldo, acc, x + (size_t)n0 * IC, w + (size_t)o * IC,
                      bias ? bias + o : NULL, IC, full, R, nb);
        }
        o += R;
    }
}

static void avx2_rows(float *out, size_t ldo, const float *x, const float *w, const float *bias, int N, int IC, int o0,
                      int o1) {
    tiled_rows(&avx2_tiles, out, ldo, x, w, bias, N, IC, o0, o1);
}

static void wide_rows(float *out, size_t ldo, const float *x, const float *w, const float *bias, int N, int IC, int o0,
                      int o1) {
    tiled_rows(&wide_tiles, out, ldo, x, w, bias, N, IC, o0, o1);
}

typedef void (*RowsFn)(float *out, size_t ldo, const float *x, const float *w, const float *bias, int N, int IC,
                       int o0, int o1);

void cpu_rowdot(float *out, size_t ldo, const float *x, const float *w, const float *bias, int N, int IC, int OC) {
    if (N <= 0 || OC <= 0) return;
    CpuKernelPath path = cpu_kernels_path();
    RowsFn rows = path >= CPU_PATH_AVX512 ? wide_rows : path == CPU_PATH_AVX2 ? avx2_rows : portable_rows;
    int nblk = (OC + ROWDOT_OBLOCK - 1) / ROWDOT_OBLOCK;
    int par = (size_t)N * OC * (size_t)(IC > 0 ? IC : 1) >= 16 * (size_t)CPU_OMP_MIN;
    /* whole blocks of ROWDOT_XB rows, at least one */
    int chunk = NR_MAX(1, (int)(ROWDOT_L2_BYTES / ((size_t)NR_MAX(IC, 1) * sizeof(float)) / ROWDOT_XB)) * ROWDOT_XB;
    for (int n0 = 0; n0 < N; n0 += chunk) {
        int nn = NR_MIN(chunk, N - n0);
#pragma omp parallel for schedule(static) if (par)
        for (int bk = 0; bk < nblk; bk++) {
            int o0 = bk * ROWDOT_OBLOCK, o1 = NR_MIN(o0 + ROWDOT_OBLOCK, OC);
            rows(out + (size_t)n0 * ldo, ldo, x + (size_t)n0 * IC, w, bias, nn, IC, o0, o1);
        }
    }
}
