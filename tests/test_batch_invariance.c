/* test_batch_invariance.c — a row's outputs do not depend on the rows that
 * share its call: for every kernel path this CPU runs (portable, avx2,
 * avx512: cpu_kernels.h) and every row count 1–64, each row kernel of the CPU
 * backend (the forward GEMM, the decode GEMM, LayerNorm, RMSNorm, GELU,
 * SwiGLU, RoPE, attention, the log-softmax head) gives a probe row the same
 * bits as the probe computed alone, wherever it sits among random rows. Also:
 * every path gives the portable path's bits, and the decode GEMM and decode
 * attention give the forward's bits for the same row (what generation
 * computes is what training computes). Prints one line per kernel and path;
 * exits 1 on any differing bit. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "nereus/backend.h"
#include "nereus/cpu_kernels.h"

#define MAXN 64

static const Backend *be;
static uint64_t rng = 88172645463325252ull;

static float frand(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((rng >> 40) * (1.0 / (1 << 24))) * 2.0f - 1.0f;
}

static float *rnd(size_t n) {
    float *p = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) p[i] = frand();
    return p;
}

/* a batch of N rows of `width` floats: random, with the probe at row `at` */
static float *batch(const float *probe, size_t width, int N, int at) {
    float *b = rnd((size_t)N * width);
    memcpy(b + (size_t)at * width, probe, width * sizeof(float));
    return b;
}

static size_t differ(const float *a, const float *b, size_t n) {
    size_t d = 0;
    for (size_t i = 0; i < n; i++) d += memcmp(a + i, b + i, sizeof(float)) != 0;
    return d;
}

/* where the probe sits in a batch of N: first, last, and a middle row */
static int probe_at(int N, int k) { return k == 0 ? 0 : k == 1 ? N - 1 : N / 2; }

/* kernel(out, in, N) maps N rows of win floats to N rows of wout floats */
typedef void (*RowKernel)(float *out, const float *in, int N, const void *ctx);

/* the probe's output in every batch of 1..MAXN rows against the probe alone; returns the differing floats */
static size_t invariant(RowKernel k, const void *ctx, size_t win, size_t wout, const float *probe, float *alone) {
    k(alone, probe, 1, ctx);
    size_t bad = 0;
    float *out = malloc((size_t)MAXN * wout * sizeof(float));
    for (int N = 1; N <= MAXN; N++)
        for (int p = 0; p < 3; p++) {
            int at = probe_at(N, p);
            float *in = batch(probe, win, N, at);
            k(out, in, N, ctx);
            bad += differ(out + (size_t)at * wout, alone, wout);
            free(in);
        }
    free(out);
    return bad;
}

typedef struct Gemm { const float *w, *b; int IC, OC, ldo; } Gemm;

static void k_matmul(float *out, const float *in, int N, const void *c) {
    const Gemm *g = c;
    be->matmul_forward(out, in, g->w, g->b, N, g->IC, g->OC);
}
static void k_decode(float *out, const float *in, int N, const void *c) {
    const Gemm *g = c;
    float *o = malloc((size_t)N * g->ldo * sizeof(float));
    be->matmul_decode(o, in, g->w, g->b, N, g->IC, g->OC, g->ldo);
    for (int n = 0; n < N; n++) memcpy(out + (size_t)n * g->OC, o + (size_t)n * g->ldo, (size_t)g->OC * sizeof(float));
    free(o);
}

typedef struct GemmBf16 { const uint16_t *w; const float *b; int IC, OC; } GemmBf16;
/* a bfloat16 widened to float */
static float bf16f(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static void k_decode_bf16(float *out, const float *in, int N, const void *c) {
    const GemmBf16 *g = c;
    be->matmul_decode_bf16(out, in, g->w, g->b, N, g->IC, g->OC, g->OC);
}

typedef struct Rows { const float *w, *b; int C; } Rows;
static void k_layernorm(float *out, const float *in, int N, const void *c) {
    const Rows *r = c;
    be->layernorm_forward(out, NULL, NULL, in, r->w, r->b, N, r->C);
}
static void k_rmsnorm(float *out, const float *in, int N, const void *c) {
    const Rows *r = c;
    be->rmsnorm_forward(out, NULL, in, r->w, N, 1, r->C, r->C, 1e-6f);
}
static void k_gelu(float *out, const float *in, int N, const void *c) {
    be->gelu_forward(out, in, (size_t)N * ((const Rows *)c)->C);
}
static void k_swiglu(float *out, const float *in, int N, const void *c) {
    be->swiglu_forward(out, in, N, ((const Rows *)c)->C);
}
static void k_logprob(float *out, const float *in, int N, const void *c) {
    int V = ((const Rows *)c)->C, *tg = calloc((size_t)N, sizeof(int));
    float *probs = malloc((size_t)N * V * sizeof(float)), *lp = malloc((size_t)N * sizeof(float));
    float *ent = malloc((size_t)N * sizeof(float));
    for (int n = 0; n < N; n++) tg[n] = 3;
    be->logprob_forward(probs, lp, ent, in, tg, N, V, V);
    for (int n = 0; n < N; n++) {
        memcpy(out + (size_t)n * (V + 2), probs + (size_t)n * V, (size_t)V * sizeof(float));
        out[(size_t)n * (V + 2) + V] = lp[n];
        out[(size_t)n * (V + 2) + V + 1] = ent[n];
    }
    free(tg), free(probs), free(lp), free(ent);
}

typedef struct Attn { int T, C, NH, NKV; const float *inv_freq; } Attn;
static int c3(const Attn *a) { return a->C + 2 * a->NKV * (a->C / a->NH); }
/* a row is a whole sequence (T tokens of packed qkv) */
static void k_attention(float *out, const float *in, int B, const void *c) {
    const Attn *a = c;
    size_t TT = (size_t)a->T * a->T;
    float *pre = malloc((size_t)B * a->NH * TT * sizeof(float)), *att = malloc((size_t)B * a->NH * TT * sizeof(float));
    be->attention_forward(out, pre, att, in, B, a->T, a->C, a->NH, a->NKV);
    free(pre), free(att);
}
static void k_rope(float *out, const float *in, int B, const void *c) {
    const Attn *a = c;
    int hs = a->C / a->NH;
    memcpy(out, in, (size_t)B * a->T * c3(a) * sizeof(float));
    be->rope_forward(out, a->inv_freq, B, a->T, a->NH + a->NKV, hs, c3(a), 5);
}

/* each kernel under the path in force; the probe outputs are kept in `keep` for the cross-path check */
static void run_path(CpuKernelPath path, float *keep[], int *nkeep, size_t sizes[]) {
    const char *pn = cpu_kernels_name(path);
    int n = 0;
    /* GEMMs: whole blocks of 16 columns and leftovers, with and without a bias, small and 124M-like widths */
    const int shapes[][3] = {{64, 64, 1}, {67, 37, 0}, {768, 53, 1}, {15, 9, 1}, {3072, 20, 0}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int IC = shapes[s][0], OC = shapes[s][1];
        float *w = rnd((size_t)OC * IC), *b = rnd(OC), *probe = rnd(IC);
        Gemm g = {w, shapes[s][2] ? b : NULL, IC, OC, OC + 3};
        float *fwd = malloc(OC * sizeof(float)), *dec = malloc(OC * sizeof(float));
        size_t bf = invariant(k_matmul, &g, IC, OC, probe, fwd);
        size_t bd = invariant(k_decode, &g, IC, OC, probe, dec);
        CHECK(bf == 0, "%-8s matmul_forward IC=%d OC=%d%s: probe row bit-identical in batches of 1-%d (%zu differ)", pn,
              IC, OC, g.b ? "" : " nobias", MAXN, bf);
        CHECK(bd == 0, "%-8s matmul_decode  IC=%d OC=%d%s: probe row bit-identical in batches of 1-%d (%zu differ)", pn,
              IC, OC, g.b ? "" : " nobias", MAXN, bd);
        CHECK(differ(fwd, dec, OC) == 0, "%-8s matmul_decode == matmul_forward IC=%d OC=%d (bits)", pn, IC, OC);
        double worst = 0; /* and the right numbers: against a double-precision dot product */
        for (int o = 0; o < OC; o++) {
            double ref = g.b ? g.b[o] : 0.0, mag = fabs(ref);
            for (int i = 0; i < IC; i++) ref += (double)probe[i] * w[(size_t)o * IC + i], mag += fabs(probe[i] * w[(size_t)o * IC + i]);
            worst = fmax(worst, fabs(fwd[o] - ref) / mag);
        }
        CHECK(worst < 1e-6, "%-8s matmul_forward IC=%d OC=%d against double: %.2e of Σ|x·w| (limit 1e-6)", pn, IC, OC, worst);
        /* the same weights in bfloat16 for the bf16 decode GEMM: invariant, and right against double */
        uint16_t *wh = malloc((size_t)OC * IC * sizeof(uint16_t));
        be->to_bf16(wh, w, (size_t)OC * IC);
        GemmBf16 gh = {wh, g.b, IC, OC};
        float *hal = malloc(OC * sizeof(float));
        size_t bh = invariant(k_decode_bf16, &gh, IC, OC, probe, hal);
        double wb = 0; /* against double over the bf16 weights and the bf16-rounded input */
        uint16_t *xh = malloc((size_t)IC * sizeof(uint16_t));
        be->to_bf16(xh, probe, (size_t)IC);
        for (int o = 0; o < OC; o++) {
            double ref = g.b ? g.b[o] : 0.0, mag = fabs(ref);
            for (int i = 0; i < IC; i++) {
                double p = (double)bf16f(wh[(size_t)o * IC + i]) * bf16f(xh[i]);
                ref += p, mag += fabs(p);
            }
            wb = fmax(wb, fabs(hal[o] - ref) / mag);
        }
        free(xh);
        CHECK(bh == 0 && wb < 1e-6, "%-8s matmul_decode_bf16 IC=%d OC=%d: probe row bit-identical in batches of 1-%d "
              "(%zu differ), %.2e of Σ|x·w| from double", pn, IC, OC, MAXN, bh, wb);
        keep[n] = fwd, sizes[n++] = OC;
        keep[n] = hal, sizes[n++] = OC;
        free(wh);
        free(dec), free(w), free(b), free(probe);
    }
    /* row kernels */
    const int C = 200;
    float *w = rnd(C), *b = rnd(C);
    Rows r = {w, b, C};
    struct { const char *name; RowKernel k; size_t win, wout; } rk[] = {
        {"layernorm", k_layernorm, C, C}, {"rmsnorm", k_rmsnorm, C, C}, {"gelu", k_gelu, C, C},
        {"swiglu", k_swiglu, 2 * C, C},   {"logprob", k_logprob, C, C + 2}};
    for (size_t i = 0; i < sizeof rk / sizeof rk[0]; i++) {
        float *probe = rnd(rk[i].win), *alone = malloc(rk[i].wout * sizeof(float));
        size_t bad = invariant(rk[i].k, &r, rk[i].win, rk[i].wout, probe, alone);
        CHECK(bad == 0, "%-8s %-14s probe row bit-identical in batches of 1-%d (%zu differ)", pn, rk[i].name, MAXN, bad);
        keep[n] = alone, sizes[n++] = rk[i].wout;
        free(probe);
    }
    free(w), free(b);
    /* attention (a row is a sequence), grouped-query, and RoPE on its packed rows */
    float inv_freq[8];
    for (int i = 0; i < 8; i++) inv_freq[i] = powf(10000.0f, -(float)i / 8);
    Attn a = {12, 64, 4, 2, inv_freq};
    size_t win = (size_t)a.T * c3(&a), wout = (size_t)a.T * a.C;
    float *probe = rnd(win), *alone = malloc(wout * sizeof(float)), *rot = malloc(win * sizeof(float));
    size_t bad = invariant(k_attention, &a, win, wout, probe, alone);
    CHECK(bad == 0, "%-8s attention      probe sequence bit-identical in batches of 1-%d (%zu differ)", pn, MAXN, bad);
    bad = invariant(k_rope, &a, win, win, probe, rot);
    CHECK(bad == 0, "%-8s rope           probe sequence bit-identical in batches of 1-%d (%zu differ)", pn, MAXN, bad);
    /* decode attention of the last token over the cache of the first T-1 == the forward's last row */
    int hs = a.C / a.NH;
    float *kc = calloc((size_t)a.NKV * a.T * hs, sizeof(float)), *vc = calloc((size_t)a.NKV * a.T * hs, sizeof(float));
    float *o = malloc((size_t)a.C * sizeof(float));
    be->kv_fill(kc, vc, probe, 1, a.T - 1, a.T, a.C, a.NH, a.NKV);
    be->attention_decode(o, kc, vc, probe + (size_t)(a.T - 1) * c3(&a), NULL, NULL, 1, a.T - 1, a.T, a.C, a.NH, a.NKV);
    CHECK(differ(o, alone + (size_t)(a.T - 1) * a.C, a.C) == 0, "%-8s attention_decode == attention_forward's row (bits)",
          pn);
    keep[n] = alone, sizes[n++] = wout;
    free(probe), free(rot), free(kc), free(vc), free(o);
    *nkeep = n;
}

int main(void) {
    be = backend_cpu();
    omp_set_num_threads(2); /* the parallel loops split rows and columns; a row's bits must not care */
    enum { K = 24 };
    float *ref[K] = {0}, *got[K] = {0};
    size_t sizes[K];
    int nref = 0, n = 0;
    char why[200];
    for (int p = CPU_PATH_PORTABLE; p < CPU_PATH_COUNT; p++) {
        if (!cpu_kernels_runs((CpuKernelPath)p)) {
            printf("skip %s: this CPU does not run it\n", cpu_kernels_name((CpuKernelPath)p));
            continue;
        }
        rng = 88172645463325252ull; /* the same data on every path */
        CHECK(cpu_kernels_set(cpu_kernels_name((CpuKernelPath)p), why, sizeof why) == 0, "path %s set",
              cpu_kernels_name((CpuKernelPath)p));
        run_path((CpuKernelPath)p, p == CPU_PATH_PORTABLE ? ref : got, p == CPU_PATH_PORTABLE ? &nref : &n, sizes);
        if (p == CPU_PATH_PORTABLE) continue;
        size_t d = 0;
        for (int i = 0; i < n && i < nref; i++) d += differ(ref[i], got[i], sizes[i]);
        CHECK(n == nref && d == 0, "%s gives the portable path's bits on every kernel (%zu floats differ)",
              cpu_kernels_name((CpuKernelPath)p), d);
        for (int i = 0; i < n; i++) free(got[i]);
    }
    for (int i = 0; i < nref; i++) free(ref[i]);
    /* bfloat16 rounding: to nearest, ties to even; infinities kept; a NaN stays a NaN; a denormal becomes a zero
       of its sign (VDPBF16PS reads denormals as 0) */
    const uint32_t in[8] = {0x3f800000u, 0x3f808000u, 0x3f818000u, 0x3f80c000u, 0xff800000u, 0x7fc00001u,
                            0x00400000u, 0x807fffffu};
    const uint16_t want[8] = {0x3f80, 0x3f80, 0x3f82, 0x3f81, 0xff80, 0x7fc0, 0x0000, 0x8000};
    float f[8];
    uint16_t h[8];
    memcpy(f, in, sizeof f);
    backend_cpu()->to_bf16(h, f, 8);
    int bad = 0;
    for (int i = 0; i < 8; i++) bad += i != 5 ? h[i] != want[i] : (h[i] & 0x7f80) != 0x7f80 || !(h[i] & 0x7f);
    CHECK(bad == 0, "to_bf16: 1, a tie down to even, a tie up to even, above half, -inf, NaN, denormals (%d wrong)", bad);
    CHECK(cpu_kernels_set("sse9", why, sizeof why) == -1 && strstr(why, "sse9"), "an unknown path is refused: %s", why);
    return CHECK_DONE();
}
