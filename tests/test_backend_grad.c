/* test_backend_grad.c — checks every kernel of the CPU backend against the
 * double-precision references of tests/ref_ops.c.
 *
 * Gradients: for each backward, on several shapes (non-powers of two
 * included), a random upstream gradient w defines loss = Σ w·out; the float
 * backward's gradient is compared with central finite differences of the
 * DOUBLE reference forward (h = 1e-5), metric ||g − g_ref||₂ / ||g_ref||₂ ≤
 * 1e-4 per gradient array. Forwards: float vs double, same metric, ≤ 1e-5.
 * Also: KV-cache decode vs the full forward, sampling rules and frequencies,
 * AdamW over 3 steps, sumsq/scale, the "+=" contract of every accumulating
 * backward, and backend_select. One line per check, `ok|FAIL name shape
 * relerr=...`; exit status 0 only if all pass, then a worst-error table.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/backend.h"
#include "nereus/cpu_kernels.h"
#include "nereus/rope.h"
#include "ref_ops.h"

#define GRAD_TOL 1e-4
#define FWD_TOL 1e-5
#define FD_H 1e-5

static const Backend *be;
static int n_checks, n_fail;

/* worst relative error per op, for the summary */
#define MAX_OPS 64
static struct { char op[32]; double worst; int count; } worst[MAX_OPS];
static int n_ops;

static void record(const char *op, double err) {
    int i = 0;
    while (i < n_ops && strcmp(worst[i].op, op)) i++;
    if (i == n_ops && n_ops < MAX_OPS) {
        snprintf(worst[n_ops].op, sizeof worst[n_ops].op, "%s", op);
        worst[n_ops].worst = 0.0;
        worst[n_ops++].count = 0;
    }
    if (i < n_ops) {
        if (!(err <= worst[i].worst)) worst[i].worst = err; /* NaN sticks */
        worst[i].count++;
    }
}

/* op: summary key; name: full check name; pass when err ≤ tol (NaN fails) */
static int check(const char *op, const char *name, const char *shape, double err, double tol) {
    int ok = err <= tol;
    n_checks++;
    if (!ok) n_fail++;
    record(op, err);
    printf("%-4s %-34s %-24s relerr=%.3e\n", ok ? "ok" : "FAIL", name, shape, err);
    return ok;
}

static void check_bool(const char *op, const char *name, const char *shape, int ok) {
    check(op, name, shape, ok ? 0.0 : 1.0, 0.5);
}

/* --- random numbers (splitmix64) ------------------------------------------ */

static unsigned long long rng_state = 0x9E3779B97F4A7C15ull;

static unsigned long long rng_next(void) {
    unsigned long long z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double rng_uniform(void) { return (double)(rng_next() >> 11) * (1.0 / 9007199254740992.0); }
static float rng_range(float lo, float hi) { return lo + (hi - lo) * (float)rng_uniform(); }
static int rng_int(int n) { return (int)(rng_next() % (unsigned long long)n); }

static void fill(float *x, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++) x[i] = rng_range(lo, hi);
}

/* --- buffers and metrics -------------------------------------------------- */

static float *falloc(size_t n) { return be->alloc((n ? n : 1) * sizeof(float)); }
static double *dalloc(size_t n) { return calloc(n ? n : 1, sizeof(double)); }

/* a host copy of x (n), for comparing a buffer before and after a call */
static float *fcopy(const float *x, size_t n) {
    float *c = malloc((n ? n : 1) * sizeof(float));
    memcpy(c, x, n * sizeof(float));
    return c;
}

static double *to_double(const float *x, size_t n) {
    double *d = dalloc(n);
    for (size_t i = 0; i < n; i++) d[i] = x[i];
    return d;
}

/* ||a − b|| / max(||b||, tiny), a float, b double */
static double relerr(const float *a, const double *b, size_t n) {
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - b[i];
        num += d * d;
        den += b[i] * b[i];
    }
    return sqrt(num) / fmax(sqrt(den), 1e-30);
}

static double relerr_ff(const float *a, const float *b, size_t n) {
    double *bd = to_double(b, n);
    double e = relerr(a, bd, n);
    free(bd);
    return e;
}

/* Σ w·y */
static double dotd(const double *w, const double *y, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += w[i] * y[i];
    return s;
}

/* central differences of loss(ctx) with respect to x (n), perturbed in place */
typedef double (*LossFn)(void *ctx);

static void fd_grad(double *g, double *x, size_t n, LossFn loss, void *ctx) {
    for (size_t i = 0; i < n; i++) {
        double x0 = x[i];
        x[i] = x0 + FD_H;
        double lp = loss(ctx);
        x[i] = x0 - FD_H;
        double lm = loss(ctx);
        x[i] = x0;
        g[i] = (lp - lm) / (2.0 * FD_H);
    }
}

/* compare the float gradient g (n) with FD of loss wrt x (n) */
static void grad_check(const char *op, const char *name, const char *shape, const float *g,
                       double *x, size_t n, LossFn loss, void *ctx) {
    double *gr = dalloc(n);
    fd_grad(gr, x, n, loss, ctx);
    check(op, name, shape, relerr(g, gr, n), GRAD_TOL);
    free(gr);
}

/* g2 must equal 2·g1 (a backward called twice into the same buffer) */
static void accum_check(const char *op, const char *shape, const float *g1, const float *g2,
                        size_t n) {
    float *twice = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) twice[i] = 2.0f * g1[i];
    char name[64];
    snprintf(name, sizeof name, "%s accumulate x2", op);
    check(op, name, shape, relerr_ff(g2, twice, n), 1e-6);
    free(twice);
}

/* ========================================================================== */
/* matmul                                                                      */

typedef struct {
    double *inp, *w, *b, *wout, *out;
    int N, IC, OC;
} MatmulCtx;

static double matmul_loss(void *p) {
    MatmulCtx *c = p;
    ref_matmul_forward(c->out, c->inp, c->w, c->b, c->N, c->IC, c->OC);
    return dotd(c->wout, c->out, (size_t)c->N * c->OC);
}

static void test_matmul(int N, int IC, int OC, int with_bias) {
    char shape[64];
    snprintf(shape, sizeof shape, "N=%d,IC=%d,OC=%d%s", N, IC, OC, with_bias ? "" : ",nobias");
    size_t ni = (size_t)N * IC, nw = (size_t)OC * IC, no = (size_t)N * OC;
    float *inp = falloc(ni), *w = falloc(nw), *b = falloc(OC), *out = falloc(no), *dout = falloc(no);
    float *dinp = falloc(ni), *dw = falloc(nw), *db = falloc(OC);
    fill(inp, ni, -1, 1);
    fill(w, nw, -1, 1);
    fill(b, OC, -1, 1);
    fill(dout, no, -1, 1);
    be->matmul_forward(out, inp, w, with_bias ? b : NULL, N, IC, OC);
    be->matmul_backward(dinp, dw, with_bias ? db : NULL, dout, inp, w, N, IC, OC);

    MatmulCtx c = {to_double(inp, ni), to_double(w, nw), with_bias ? to_double(b, OC) : NULL,
                   to_double(dout, no), dalloc(no), N, IC, OC};
    matmul_loss(&c);
    check("matmul", "matmul_forward", shape, relerr(out, c.out, no), FWD_TOL);
    grad_check("matmul", "matmul_backward dinp", shape, dinp, c.inp, ni, matmul_loss, &c);
    grad_check("matmul", "matmul_backward dweight", shape, dw, c.w, nw, matmul_loss, &c);
    if (with_bias) grad_check("matmul", "matmul_backward dbias", shape, db, c.b, OC, matmul_loss, &c);

    /* "+=": a second call doubles every gradient */
    float *d2i = falloc(ni), *d2w = falloc(nw), *d2b = falloc(OC);
    be->matmul_backward(d2i, d2w, d2b, dout, inp, w, N, IC, OC);
    float *s1i = malloc(ni * 4), *s1w = malloc(nw * 4), *s1b = malloc((size_t)OC * 4);
    memcpy(s1i, d2i, ni * 4); memcpy(s1w, d2w, nw * 4); memcpy(s1b, d2b, (size_t)OC * 4);
    be->matmul_backward(d2i, d2w, d2b, dout, inp, w, N, IC, OC);
    accum_check("matmul", shape, s1i, d2i, ni);
    accum_check("matmul", shape, s1w, d2w, nw);
    accum_check("matmul", shape, s1b, d2b, OC);
    /* NULL gradients are skipped */
    be->matmul_backward(NULL, NULL, NULL, dout, inp, w, N, IC, OC);

    free(s1i); free(s1w); free(s1b);
    be->free(d2i); be->free(d2w); be->free(d2b);
    free(c.inp); free(c.w); free(c.b); free(c.wout); free(c.out);
    be->free(inp); be->free(w); be->free(b); be->free(out); be->free(dout);
    be->free(dinp); be->free(dw); be->free(db);
}


/* matmul_decode: the first OC columns of out (N, ldo) against the double reference, the padding columns
   [OC, ldo) untouched; and each row the same bit for bit as that row decoded alone (a row's logits do not
   depend on the others, so sequences can leave the batch). Also the same bits with the CPU's AVX2 and portable
   kernels forced (cpu_kernels.h): on a CPU with AVX-512, 4 rows take the AVX-512 tile */
static void test_matmul_decode(int N, int IC, int OC, int ldo, int with_bias) {
    char shape[64];
    snprintf(shape, sizeof shape, "N=%d,IC=%d,OC=%d,ldo=%d%s", N, IC, OC, ldo, with_bias ? "" : ",nobias");
    size_t ni = (size_t)N * IC, nw = (size_t)OC * IC, no = (size_t)N * ldo;
    float *inp = falloc(ni), *w = falloc(nw), *b = falloc(OC), *out = falloc(no), *one = falloc((size_t)ldo);
    fill(inp, ni, -1, 1);
    fill(w, nw, -1, 1);
    fill(b, OC, -1, 1);
    for (size_t i = 0; i < no; i++) out[i] = 7.0f;
    be->matmul_decode(out, inp, w, with_bias ? b : NULL, N, IC, OC, ldo);
    double *ref = dalloc((size_t)N * OC), *id = to_double(inp, ni), *wd = to_double(w, nw);
    double *bd = with_bias ? to_double(b, OC) : NULL;
    ref_matmul_forward(ref, id, wd, bd, N, IC, OC);
    float *packed = malloc((size_t)N * OC * sizeof(float));
    double pad = 0.0, alone = 0.0;
    for (int n = 0; n < N; n++) {
        memcpy(packed + (size_t)n * OC, out + (size_t)n * ldo, (size_t)OC * sizeof(float));
        for (int o = OC; o < ldo; o++) pad += fabs(out[(size_t)n * ldo + o] - 7.0f);
        be->matmul_decode(one, inp + (size_t)n * IC, w, with_bias ? b : NULL, 1, IC, OC, ldo);
        for (int o = 0; o < OC; o++) alone += one[o] != out[(size_t)n * ldo + o];
    }
    double avx2 = 0.0;
    if (be == backend_cpu()) {
        float *forced = falloc(no);
        char why[200];
        for (const char *path = "avx2"; path; path = strcmp(path, "avx2") ? NULL : "portable") {
            cpu_kernels_set(path, why, sizeof why);
            be->matmul_decode(forced, inp, w, with_bias ? b : NULL, N, IC, OC, ldo);
            for (int n = 0; n < N; n++)
                for (int o = 0; o < OC; o++) avx2 += forced[(size_t)n * ldo + o] != out[(size_t)n * ldo + o];
        }
        cpu_kernels_set("auto", why, sizeof why);
        be->free(forced);
    }
    check("matmul", "matmul_decode", shape, relerr(packed, ref, (size_t)N * OC), FWD_TOL);
    check("matmul", "matmul_decode leaves columns [OC, ldo)", shape, pad, 0.0);
    check("matmul", "matmul_decode row == the row alone (bits)", shape, alone, 0.0);
    check("matmul", "matmul_decode == the AVX2 and portable kernels' (bits)", shape, avx2, 0.0);
    free(packed); free(ref); free(id); free(wd); free(bd);
    be->free(inp); be->free(w); be->free(b); be->free(out); be->free(one);
}

/* ========================================================================== */
/* layernorm                                                                   */

typedef struct {
    double *inp, *w, *b, *wout, *out, *mean, *rstd;
    int N, C;
} LnCtx;

static double ln_loss(void *p) {
    LnCtx *c = p;
    ref_layernorm_forward(c->out, c->mean, c->rstd, c->inp, c->w, c->b, c->N, c->C);
    return dotd(c->wout, c->out, (size_t)c->N * c->C);
}

static void test_layernorm(int N, int C) {
    char shape[64];
    snprintf(shape, sizeof shape, "N=%d,C=%d", N, C);
    size_t n = (size_t)N * C;
    float *inp = falloc(n), *w = falloc(C), *b = falloc(C), *out = falloc(n), *dout = falloc(n);
    float *mean = falloc(N), *rstd = falloc(N), *dinp = falloc(n), *dw = falloc(C), *db = falloc(C);
    fill(inp, n, -2, 2);
    for (size_t i = 0; i < n; i++) inp[i] += (float)(i / C) * 0.3f; /* row offsets */
    fill(w, C, 0.5f, 1.5f);
    fill(b, C, -0.5f, 0.5f);
    fill(dout, n, -1, 1);
    be->layernorm_forward(out, mean, rstd, inp, w, b, N, C);
    be->layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C);

    LnCtx c = {to_double(inp, n), to_double(w, C), to_double(b, C), to_double(dout, n),
               dalloc(n), dalloc(N), dalloc(N), N, C};
    ln_loss(&c);
    check("layernorm", "layernorm_forward out", shape, relerr(out, c.out, n), FWD_TOL);
    check("layernorm", "layernorm_forward mean", shape, relerr(mean, c.mean, N), FWD_TOL);
    check("layernorm", "layernorm_forward rstd", shape, relerr(rstd, c.rstd, N), FWD_TOL);
    grad_check("layernorm", "layernorm_backward dinp", shape, dinp, c.inp, n, ln_loss, &c);
    grad_check("layernorm", "layernorm_backward dweight", shape, dw, c.w, C, ln_loss, &c);
    grad_check("layernorm", "layernorm_backward dbias", shape, db, c.b, C, ln_loss, &c);

    float *s1 = fcopy(dinp, n), *s1w = fcopy(dw, C);
    be->layernorm_backward(dinp, dw, NULL, dout, inp, w, mean, rstd, N, C);
    accum_check("layernorm", shape, s1, dinp, n);
    accum_check("layernorm", shape, s1w, dw, C);

    free(s1); free(s1w);
    free(c.inp); free(c.w); free(c.b); free(c.wout); free(c.out); free(c.mean); free(c.rstd);
    be->free(inp); be->free(w); be->free(b); be->free(out); be->free(dout);
    be->free(mean); be->free(rstd); be->free(dinp); be->free(dw); be->free(db);
}

/* ========================================================================== */
/* gelu and residual                                                           */

typedef struct {
    double *a, *b, *wout, *out;
    size_t N;
} EwCtx;

static double gelu_loss(void *p) {
    EwCtx *c = p;
    ref_gelu_forward(c->out, c->a, c->N);
    return dotd(c->wout, c->out, c->N);
}

static double residual_loss(void *p) {
    EwCtx *c = p;
    ref_residual_forward(c->out, c->a, c->b, c->N);
    return dotd(c->wout, c->out, c->N);
}

static void test_gelu(size_t N) {
    char shape[64];
    snprintf(shape, sizeof shape, "N=%zu", N);
    float *x = falloc(N), *y = falloc(N), *dy = falloc(N), *dx = falloc(N);
    fill(x, N, -5, 5);
    fill(dy, N, -1, 1);
    be->gelu_forward(y, x, N);
    be->gelu_backward(dx, x, dy, N);
    EwCtx c = {to_double(x, N), NULL, to_double(dy, N), dalloc(N), N};
    gelu_loss(&c);
    check("gelu", "gelu_forward", shape, relerr(y, c.out, N), FWD_TOL);
    grad_check("gelu", "gelu_backward dinp", shape, dx, c.a, N, gelu_loss, &c);
    float *s1 = malloc(N * 4);
    memcpy(s1, dx, N * 4);
    be->gelu_backward(dx, x, dy, N);
    accum_check("gelu", shape, s1, dx, N);
    free(s1);
    free(c.a); free(c.wout); free(c.out);
    be->free(x); be->free(y); be->free(dy); be->free(dx);
}

static void test_residual(size_t N) {
    char shape[64];
    snprintf(shape, sizeof shape, "N=%zu", N);
    float *a = falloc(N), *b = falloc(N), *y = falloc(N), *dy = falloc(N);
    float *da = falloc(N), *db = falloc(N);
    fill(a, N, -1, 1);
    fill(b, N, -1, 1);
    fill(dy, N, -1, 1);
    be->residual_forward(y, a, b, N);
    be->residual_backward(da, db, dy, N);
    EwCtx c = {to_double(a, N), to_double(b, N), to_double(dy, N), dalloc(N), N};
    residual_loss(&c);
    check("residual", "residual_forward", shape, relerr(y, c.out, N), FWD_TOL);
    grad_check("residual", "residual_backward da", shape, da, c.a, N, residual_loss, &c);
    grad_check("residual", "residual_backward db", shape, db, c.b, N, residual_loss, &c);
    float *s1 = malloc(N * 4);
    memcpy(s1, da, N * 4);
    be->residual_backward(da, NULL, dy, N);
    accum_check("residual", shape, s1, da, N);
    free(s1);
    free(c.a); free(c.b); free(c.wout); free(c.out);
    be->free(a); be->free(b); be->free(y); be->free(dy); be->free(da); be->free(db);
}

/* ========================================================================== */
/* attention                                                                   */

typedef struct {
    double *inp, *wout, *out;
    int B, T, C, NH, NKV;
} AttCtx;

static double att_loss(void *p) {
    AttCtx *c = p;
    ref_attention_forward(c->out, NULL, c->inp, c->B, c->T, c->C, c->NH, c->NKV);
    return dotd(c->wout, c->out, (size_t)c->B * c->T * c->C);
}

/* NKV key/value heads (NKV == NH: multi-head attention) */
static void test_attention(int B, int T, int C, int NH, int NKV) {
    char shape[64];
    snprintf(shape, sizeof shape, "B=%d,T=%d,C=%d,NH=%d,NKV=%d", B, T, C, NH, NKV);
    const int C3 = C + 2 * NKV * (C / NH);
    size_t ni = (size_t)B * T * C3, no = (size_t)B * T * C, na = (size_t)B * NH * T * T;
    float *inp = falloc(ni), *out = falloc(no), *pre = falloc(na), *att = falloc(na);
    float *dout = falloc(no), *dinp = falloc(ni), *dpre = falloc(na), *datt = falloc(na);
    fill(inp, ni, -1.5f, 1.5f);
    fill(dout, no, -1, 1);
    /* scratch starts dirty: the backward must overwrite it */
    fill(dpre, na, -9, 9);
    fill(datt, na, -9, 9);
    be->attention_forward(out, pre, att, inp, B, T, C, NH, NKV);
    be->attention_backward(dinp, dpre, datt, dout, inp, att, B, T, C, NH, NKV);

    AttCtx c = {to_double(inp, ni), to_double(dout, no), dalloc(no), B, T, C, NH, NKV};
    double *att_ref = dalloc(na);
    ref_attention_forward(c.out, att_ref, c.inp, B, T, C, NH, NKV);
    check("attention", "attention_forward out", shape, relerr(out, c.out, no), FWD_TOL);
    check("attention", "attention_forward att", shape, relerr(att, att_ref, na), FWD_TOL);
    grad_check("attention", "attention_backward dinp", shape, dinp, c.inp, ni, att_loss, &c);

    float *s1 = malloc(ni * 4);
    memcpy(s1, dinp, ni * 4);
    be->attention_backward(dinp, dpre, datt, dout, inp, att, B, T, C, NH, NKV);
    accum_check("attention", shape, s1, dinp, ni);
    free(s1);
    free(att_ref);
    free(c.inp); free(c.wout); free(c.out);
    be->free(inp); be->free(out); be->free(pre); be->free(att);
    be->free(dout); be->free(dinp); be->free(dpre); be->free(datt);
}

/* attention_decode for positions P..T-1 after kv_fill of 0..P-1 must give the
 * rows of attention_forward, and leave the cache equal to kv_fill of all T */
static void test_decode(int B, int T, int C, int NH, int NKV, int Tmax, int P) {
    char shape[64];
    snprintf(shape, sizeof shape, "B=%d,T=%d,C=%d,NH=%d,NKV=%d,Tm=%d,P=%d", B, T, C, NH, NKV, Tmax, P);
    int C3 = C + 2 * NKV * (C / NH);
    size_t ni = (size_t)B * T * C3, no = (size_t)B * T * C, na = (size_t)B * NH * T * T;
    size_t nc = (size_t)B * Tmax * NKV * (C / NH);
    float *inp = falloc(ni), *out = falloc(no), *pre = falloc(na), *att = falloc(na);
    float *kc = falloc(nc), *vc = falloc(nc), *kc2 = falloc(nc), *vc2 = falloc(nc);
    float *qkv = falloc((size_t)B * C3), *o1 = falloc((size_t)B * C);
    float *dec = falloc(no), *fwd = falloc(no);
    fill(inp, ni, -2, 2);
    be->attention_forward(out, pre, att, inp, B, T, C, NH, NKV);
    if (P > 0) { /* the prefix as its own (B, P, C3) tensor */
        float *pref = falloc((size_t)B * P * C3);
        for (int b = 0; b < B; b++)
            memcpy(pref + (size_t)b * P * C3, inp + (size_t)b * T * C3, (size_t)P * C3 * 4);
        be->kv_fill(kc, vc, pref, B, P, Tmax, C, NH, NKV);
        be->free(pref);
    }
    size_t nd = 0;
    for (int pos = P; pos < T; pos++) {
        for (int b = 0; b < B; b++)
            memcpy(qkv + (size_t)b * C3, inp + ((size_t)b * T + pos) * C3, (size_t)C3 * 4);
        be->attention_decode(o1, kc, vc, qkv, NULL, NULL, B, pos, Tmax, C, NH, NKV);
        for (int b = 0; b < B; b++) {
            memcpy(dec + nd * C, o1 + (size_t)b * C, (size_t)C * 4);
            memcpy(fwd + nd * C, out + ((size_t)b * T + pos) * C, (size_t)C * 4);
            nd++;
        }
    }
    check("decode", "attention_decode vs forward rows", shape, relerr_ff(dec, fwd, nd * C), 2e-6);
    be->kv_fill(kc2, vc2, inp, B, T, Tmax, C, NH, NKV);
    check("decode", "kv_fill+decode cache == kv_fill", shape,
          relerr_ff(kc, kc2, nc) + relerr_ff(vc, vc2, nc), 0.0);
    /* rows leaving: from the middle of the decode on, only the sequences in odd slots go on, as compact
       rows addressed by their slots; each equals the whole batch's row (bit for bit: a row's result does
       not depend on the others) and the cache of the sequences that left stays as it was */
    if (B >= 2 && T - P >= 2) {
        memset(kc, 0, nc * 4);
        memset(vc, 0, nc * 4);
        int half = P + (T - P) / 2, n = 0, *slots = malloc((size_t)B * sizeof(int));
        for (int b = 1; b < B; b += 2) slots[n++] = b;
        double err = 0.0;
        for (int pos = 0; pos < T; pos++) {
            int rows = pos < half ? B : n;
            for (int i = 0; i < rows; i++) {
                int b = pos < half ? i : slots[i];
                memcpy(qkv + (size_t)i * C3, inp + ((size_t)b * T + pos) * C3, (size_t)C3 * 4);
            }
            be->attention_decode(o1, kc, vc, qkv, pos < half ? NULL : slots, NULL, rows, pos, Tmax, C, NH, NKV);
            if (pos >= half)
                for (int i = 0; i < n; i++)
                    err += relerr_ff(o1 + (size_t)i * C, dec + ((size_t)(pos - P) * B + slots[i]) * C, (size_t)C);
        }
        check("decode", "attention_decode on the rows still going (slots) == the whole batch's", shape, err, 0.0);
        double left = 0.0; /* the even slots left at half: their cache holds positions [0, half), zeros after */
        size_t hsz = (size_t)(C / NH);
        for (int b = 0; b < B; b += 2)
            for (int kh = 0; kh < NKV; kh++) {
                size_t at = ((size_t)b * NKV + kh) * Tmax * hsz;
                left += relerr_ff(kc + at, kc2 + at, (size_t)half * hsz) + relerr_ff(vc + at, vc2 + at, (size_t)half * hsz);
                for (size_t i = (size_t)half * hsz; i < (size_t)Tmax * hsz; i++) left += fabs(kc[at + i]) + fabs(vc[at + i]);
            }
        check("decode", "the cache of rows that left: positions before they left, nothing after", shape, left, 0.0);
        free(slots);
    }
    be->free(inp); be->free(out); be->free(pre); be->free(att);
    be->free(kc); be->free(vc); be->free(kc2); be->free(vc2);
    be->free(qkv); be->free(o1); be->free(dec); be->free(fwd);
}

/* ========================================================================== */
/* Llama / Qwen family: RMSNorm, RoPE, SwiGLU                                  */

typedef struct {
    double *inp, *w, *wout, *out, *rstd;
    int N, H, C, ld;
    double eps;
} RmsCtx;

static double rms_loss(void *p) {
    RmsCtx *c = p;
    ref_rmsnorm_forward(c->out, c->rstd, c->inp, c->w, c->N, c->H, c->C, c->ld, c->eps);
    return dotd(c->wout, c->out, (size_t)c->N * c->ld);
}

/* N groups of H rows of C, ld apart (ld > H·C leaves gaps that must stay as they are) */
static void test_rmsnorm(int N, int H, int C, int ld, float eps) {
    char shape[64];
    snprintf(shape, sizeof shape, "N=%d,H=%d,C=%d,ld=%d,eps=%g", N, H, C, ld, eps);
    size_t n = (size_t)N * ld, nr = (size_t)N * H;
    float *inp = falloc(n), *w = falloc(C), *out = falloc(n), *dout = falloc(n);
    float *rstd = falloc(nr), *dinp = falloc(n), *dw = falloc(C);
    fill(inp, n, -2, 2);
    fill(w, C, 0.5f, 1.5f);
    fill(dout, n, -1, 1);
    fill(out, n, 7, 7); /* the gaps keep this */
    for (int r = 0; r < N; r++) /* gaps carry no gradient into the reference loss */
        for (int i = H * C; i < ld; i++) dout[(size_t)r * ld + i] = 0.0f;
    be->rmsnorm_forward(out, rstd, inp, w, N, H, C, ld, eps);
    be->rmsnorm_backward(dinp, dw, dout, inp, w, rstd, N, H, C, ld);

    RmsCtx c = {to_double(inp, n), to_double(w, C), to_double(dout, n), dalloc(n), dalloc(nr),
                N, H, C, ld, eps};
    rms_loss(&c);
    int gaps_kept = 1;
    for (int r = 0; r < N; r++)
        for (int i = H * C; i < ld; i++) {
            gaps_kept &= out[(size_t)r * ld + i] == 7.0f && dinp[(size_t)r * ld + i] == 0.0f;
            c.out[(size_t)r * ld + i] = 7.0;
        }
    check("rmsnorm", "rmsnorm_forward out", shape, relerr(out, c.out, n), FWD_TOL);
    check("rmsnorm", "rmsnorm_forward rstd", shape, relerr(rstd, c.rstd, nr), FWD_TOL);
    check_bool("rmsnorm", "rmsnorm gaps between rows untouched", shape, gaps_kept);
    grad_check("rmsnorm", "rmsnorm_backward dinp", shape, dinp, c.inp, n, rms_loss, &c);
    grad_check("rmsnorm", "rmsnorm_backward dweight", shape, dw, c.w, C, rms_loss, &c);

    float *s1 = fcopy(dinp, n), *s1w = fcopy(dw, C);
    be->rmsnorm_backward(dinp, dw, dout, inp, w, rstd, N, H, C, ld);
    accum_check("rmsnorm", shape, s1, dinp, n);
    accum_check("rmsnorm", shape, s1w, dw, C);
    be->rmsnorm_backward(NULL, NULL, dout, inp, w, rstd, N, H, C, ld); /* NULL gradients are skipped */

    free(s1); free(s1w);
    free(c.inp); free(c.w); free(c.wout); free(c.out); free(c.rstd);
    be->free(inp); be->free(w); be->free(out); be->free(dout);
    be->free(rstd); be->free(dinp); be->free(dw);
}

typedef struct {
    double *x, *wout, *out;
    const float *inv_freq;
    int B, T, NH, hs, ld, pos0;
} RopeCtx;

static double rope_loss(void *p) {
    RopeCtx *c = p;
    size_t n = (size_t)c->B * c->T * c->ld;
    memcpy(c->out, c->x, n * sizeof(double));
    ref_rope_forward(c->out, c->x, c->inv_freq, c->B, c->T, c->NH, c->hs, c->ld, c->pos0);
    return dotd(c->wout, c->out, n);
}

/* rope on NH heads at the start of rows of ld (the rest of each row, a v part, is left alone) */
static void test_rope(int B, int T, int NH, int hs, int ld, int pos0, const RopeScaling *sc) {
    char shape[64];
    snprintf(shape, sizeof shape, "B=%d,T=%d,NH=%d,hs=%d,ld=%d,p0=%d%s", B, T, NH, hs, ld, pos0,
             sc ? ",llama3" : "");
    size_t n = (size_t)B * T * ld;
    float *x = falloc(n), *dx = falloc(n), *invf = falloc((size_t)hs / 2);
    rope_inv_freq(invf, hs, sc ? 500000.0 : 10000.0, sc);
    fill(x, n, -2, 2);
    fill(dx, n, -1, 1);
    float *x0 = fcopy(x, n), *w = fcopy(dx, n);
    be->rope_forward(x, invf, B, T, NH, hs, ld, pos0);
    be->rope_backward(dx, invf, B, T, NH, hs, ld, pos0); /* dx ← d(Σ w·rope(x))/dx */

    RopeCtx c = {to_double(x0, n), to_double(w, n), dalloc(n), invf, B, T, NH, hs, ld, pos0};
    rope_loss(&c);
    int rest_kept = 1;
    for (size_t r = 0; r < (size_t)B * T; r++)
        for (int i = NH * hs; i < ld; i++) rest_kept &= x[r * ld + i] == x0[r * ld + i];
    check("rope", "rope_forward", shape, relerr(x, c.out, n), FWD_TOL);
    check_bool("rope", "rope leaves the rest of the row", shape, rest_kept);
    grad_check("rope", "rope_backward dx", shape, dx, c.x, n, rope_loss, &c);
    /* backward after forward is the identity (an orthogonal rotation) */
    be->rope_backward(x, invf, B, T, NH, hs, ld, pos0);
    check("rope", "rope_backward(rope_forward(x)) == x", shape, relerr_ff(x, x0, n), 1e-6);
    free(c.x); free(c.wout); free(c.out);
    free(x0); free(w);
    be->free(x); be->free(dx); be->free(invf);
}

/* rope_inv_freq against the formulas in double, computed here independently */
static void test_rope_inv_freq(void) {
    enum { HS = 128 };
    const RopeScaling s = {8.0, 1.0, 4.0, 8192}; /* Llama 3.1 */
    float plain[HS / 2], scaled[HS / 2];
    double ref[HS / 2], ref_s[HS / 2], e_plain = 0, e_scaled = 0;
    int bands[3] = {0, 0, 0}; /* kept, divided by factor, blended */
    rope_inv_freq(plain, HS, 500000.0, NULL);
    rope_inv_freq(scaled, HS, 500000.0, &s);
    for (int i = 0; i < HS / 2; i++) {
        ref[i] = pow(500000.0, -2.0 * i / HS);
        double wl = 2.0 * 3.14159265358979323846 / ref[i];
        if (wl < 8192.0 / 4.0) {
            ref_s[i] = ref[i];
            bands[0]++;
        } else if (wl > 8192.0 / 1.0) {
            ref_s[i] = ref[i] / 8.0;
            bands[1]++;
        } else {
            double sm = (8192.0 / wl - 1.0) / (4.0 - 1.0);
            ref_s[i] = (1.0 - sm) * ref[i] / 8.0 + sm * ref[i];
            bands[2]++;
        }
        e_plain = fmax(e_plain, fabs(plain[i] - ref[i]) / ref[i]);
        e_scaled = fmax(e_scaled, fabs(scaled[i] - ref_s[i]) / ref_s[i]);
    }
    /* float32 steps (exponent, pow, divisions) as transformers takes them: a few ulp */
    check("rope_inv_freq", "rope_inv_freq theta=500000 (max elem)", "hs=128", e_plain, 2e-6);
    check("rope_inv_freq", "rope_inv_freq llama3 8/1/4/8192 (max elem)", "hs=128", e_scaled, 2e-6);
    check_bool("rope_inv_freq", "llama3 config spans all three bands", "hs=128",
               bands[0] > 0 && bands[1] > 0 && bands[2] > 0);
    check_bool("rope_inv_freq", "inv_freq[0] == 1", "hs=128", plain[0] == 1.0f && scaled[0] == 1.0f);
}

typedef struct {
    double *inp, *wout, *out;
    int N, F;
} SwigluCtx;

static double swiglu_loss(void *p) {
    SwigluCtx *c = p;
    ref_swiglu_forward(c->out, c->inp, c->N, c->F);
    return dotd(c->wout, c->out, (size_t)c->N * c->F);
}

static void test_swiglu(int N, int F) {
    char shape[64];
    snprintf(shape, sizeof shape, "N=%d,F=%d", N, F);
    size_t ni = (size_t)N * 2 * F, no = (size_t)N * F;
    float *inp = falloc(ni), *out = falloc(no), *dout = falloc(no), *dinp = falloc(ni);
    fill(inp, ni, -6, 6);
    fill(dout, no, -1, 1);
    be->swiglu_forward(out, inp, N, F);
    be->swiglu_backward(dinp, dout, inp, N, F);
    SwigluCtx c = {to_double(inp, ni), to_double(dout, no), dalloc(no), N, F};
    swiglu_loss(&c);
    check("swiglu", "swiglu_forward", shape, relerr(out, c.out, no), FWD_TOL);
    grad_check("swiglu", "swiglu_backward dinp", shape, dinp, c.inp, ni, swiglu_loss, &c);
    float *s1 = fcopy(dinp, ni);
    be->swiglu_backward(dinp, dout, inp, N, F);
    accum_check("swiglu", shape, s1, dinp, ni);
    free(s1);
    free(c.inp); free(c.wout); free(c.out);
    be->free(inp); be->free(out); be->free(dout); be->free(dinp);
}

/* ========================================================================== */
/* encoder                                                                     */

typedef struct {
    double *wte, *wpe, *wout, *out;
    const int *inp;
    int B, T, C, pos0;
} EncCtx;

static double enc_loss(void *p) {
    EncCtx *c = p;
    ref_encoder_forward(c->out, c->inp, c->wte, c->wpe, c->B, c->T, c->C, c->pos0);
    return dotd(c->wout, c->out, (size_t)c->B * c->T * c->C);
}

static void test_encoder(int B, int T, int C, int V, int maxT, int pos0) {
    char shape[64];
    snprintf(shape, sizeof shape, "B=%d,T=%d,C=%d,V=%d,pos0=%d", B, T, C, V, pos0);
    size_t no = (size_t)B * T * C, nte = (size_t)V * C, npe = (size_t)maxT * C;
    int *tok = malloc(sizeof(int) * (size_t)B * T);
    for (int i = 0; i < B * T; i++) tok[i] = rng_int(V); /* V small: repeats */
    float *wte = falloc(nte), *wpe = falloc(npe), *out = falloc(no), *dout = falloc(no);
    float *dwte = falloc(nte), *dwpe = falloc(npe);
    fill(wte, nte, -1, 1);
    fill(wpe, npe, -1, 1);
    fill(dout, no, -1, 1);
    be->encoder_forward(out, tok, wte, wpe, B, T, C, pos0);
    be->encoder_backward(dwte, dwpe, dout, tok, B, T, C, pos0);
    EncCtx c = {to_double(wte, nte), to_double(wpe, npe), to_double(dout, no), dalloc(no),
                tok, B, T, C, pos0};
    enc_loss(&c);
    check("encoder", "encoder_forward", shape, relerr(out, c.out, no), FWD_TOL);
    grad_check("encoder", "encoder_backward dwte", shape, dwte, c.wte, nte, enc_loss, &c);
    grad_check("encoder", "encoder_backward dwpe", shape, dwpe, c.wpe, npe, enc_loss, &c);
    float *s1 = malloc(nte * 4), *s2 = malloc(npe * 4);
    memcpy(s1, dwte, nte * 4);
    memcpy(s2, dwpe, npe * 4);
    be->encoder_backward(dwte, dwpe, dout, tok, B, T, C, pos0);
    accum_check("encoder", shape, s1, dwte, nte);
    accum_check("encoder", shape, s2, dwpe, npe);
    free(s1); free(s2); free(tok);
    free(c.wte); free(c.wpe); free(c.wout); free(c.out);
    be->free(wte); be->free(wpe); be->free(out); be->free(dout); be->free(dwte); be->free(dwpe);
}

/* ========================================================================== */
/* logprob                                                                     */

typedef struct {
    double *logits, *wl, *we, *logp, *ent;
    const int *tgt;
    int N, V;
} LpCtx;

/* loss = Σ wl·logp + Σ we·ent: both dlogp and dent active */
static double lp_loss(void *p) {
    LpCtx *c = p;
    ref_logprob_forward(NULL, c->logp, c->ent, c->logits, c->tgt, c->N, c->V);
    return dotd(c->wl, c->logp, c->N) + dotd(c->we, c->ent, c->N);
}

static void test_logprob(int N, int V, float spread) {
    char shape[64];
    snprintf(shape, sizeof shape, "N=%d,V=%d,spread=%g", N, V, spread);
    size_t n = (size_t)N * V;
    int *tgt = malloc(sizeof(int) * N);
    for (int i = 0; i < N; i++) tgt[i] = (i % 4 == 3) ? -1 : rng_int(V); /* some skipped */
    float *logits = falloc(n), *probs = falloc(n), *logp = falloc(N), *ent = falloc(N);
    float *wl = falloc(N), *we = falloc(N), *dlogits = falloc(n);
    fill(logits, n, -spread, spread);
    fill(wl, N, -1, 1);
    fill(we, N, -1, 1);
    be->logprob_forward(probs, logp, ent, logits, tgt, N, V, V);
    be->logprob_backward(dlogits, wl, we, probs, ent, tgt, N, V, V);

    LpCtx c = {to_double(logits, n), to_double(wl, N), to_double(we, N), dalloc(N), dalloc(N),
               tgt, N, V};
    double *pr = dalloc(n);
    ref_logprob_forward(pr, c.logp, c.ent, c.logits, tgt, N, V);
    /* probs compared on the rows that are not skipped */
    double num = 0.0, den = 0.0;
    for (int r = 0; r < N; r++)
        if (tgt[r] >= 0)
            for (int i = 0; i < V; i++) {
                double d = probs[(size_t)r * V + i] - pr[(size_t)r * V + i];
                num += d * d;
                den += pr[(size_t)r * V + i] * pr[(size_t)r * V + i];
            }
    check("logprob", "logprob_forward probs", shape, sqrt(num / den), FWD_TOL);
    check("logprob", "logprob_forward logp", shape, relerr(logp, c.logp, N), FWD_TOL);
    check("logprob", "logprob_forward ent", shape, relerr(ent, c.ent, N), FWD_TOL);
    grad_check("logprob", "logprob_backward dlogits", shape, dlogits, c.logits, n, lp_loss, &c);

    /* aliasing: probs == logits in the forward, dlogits == probs in the backward */
    float *buf = falloc(n), *logp2 = falloc(N), *ent2 = falloc(N);
    memcpy(buf, logits, n * 4);
    be->logprob_forward(buf, logp2, ent2, buf, tgt, N, V, V);
    double ea = relerr_ff(logp2, logp, N) + relerr_ff(ent2, ent, N);
    for (int r = 0; r < N; r++)
        if (tgt[r] >= 0) ea += relerr_ff(buf + (size_t)r * V, probs + (size_t)r * V, V);
    be->logprob_backward(buf, wl, we, buf, ent2, tgt, N, V, V);
    ea += relerr_ff(buf, dlogits, n);
    check("logprob", "logprob aliased == unaliased", shape, ea, 1e-7);
    /* dent NULL: only the dlogp term */
    be->logprob_backward(buf, wl, NULL, probs, ent, tgt, N, V, V);
    for (int i = 0; i < N; i++) c.we[i] = 0.0;
    grad_check("logprob", "logprob_backward dent=NULL", shape, buf, c.logits, n, lp_loss, &c);

    free(pr); free(tgt);
    free(c.logits); free(c.wl); free(c.we); free(c.logp); free(c.ent);
    be->free(buf); be->free(logp2); be->free(ent2);
    be->free(logits); be->free(probs); be->free(logp); be->free(ent);
    be->free(wl); be->free(we); be->free(dlogits);
}

/* Padding columns [V, ld) (an embedding's padding rows, llm.c's Vp) hold logits far above the real ones:
 * the heads must give exactly what they give on the compact rows, a zero gradient to the padding, and
 * never sample a padding id. */
static void test_padded_vocab(int N, int V, int ld) {
    char shape[64];
    snprintf(shape, sizeof shape, "N=%d,V=%d,ld=%d", N, V, ld);
    size_t n = (size_t)N * V, np = (size_t)N * ld;
    int *tgt = malloc(sizeof(int) * N), *out = malloc(sizeof(int) * N), *outc = malloc(sizeof(int) * N);
    for (int i = 0; i < N; i++) tgt[i] = (i % 4 == 3) ? -1 : rng_int(V);
    float *lc = falloc(n), *lp = falloc(np), *wl = falloc(N), *we = falloc(N), *u = falloc(N);
    float *logp = falloc(N), *ent = falloc(N), *logpp = falloc(N), *entp = falloc(N);
    fill(lc, n, -3, 3);
    fill(wl, N, -1, 1);
    fill(we, N, -1, 1);
    for (int r = 0; r < N; r++) {
        memcpy(lp + (size_t)r * ld, lc + (size_t)r * V, (size_t)V * sizeof(float));
        for (int i = V; i < ld; i++) lp[(size_t)r * ld + i] = 40.0f + (float)i;
    }
    int same = 1, kinds[][2] = {{0, 0}, {1, 0}, {1, 3}, {1, 1000000}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) { /* argmax, full softmax, top-k, top-k > V */
        for (int r = 0; r < N; r++) u[r] = (float)rng_uniform();
        be->sample_tokens(outc, lc, u, N, V, V, (float)kinds[k][0], kinds[k][1]);
        be->sample_tokens(out, lp, u, N, V, ld, (float)kinds[k][0], kinds[k][1]);
        for (int r = 0; r < N; r++) same &= out[r] == outc[r] && out[r] < V;
    }
    check_bool("padded", "sample_tokens never returns a padding id, = compact rows", shape, same);
    be->logprob_forward(lc, logp, ent, lc, tgt, N, V, V);
    be->logprob_forward(lp, logpp, entp, lp, tgt, N, V, ld);
    check("padded", "logprob_forward over the real vocabulary = compact rows", shape,
          relerr_ff(logpp, logp, N) + relerr_ff(entp, ent, N), 0.0);
    be->logprob_backward(lc, wl, we, lc, ent, tgt, N, V, V);
    be->logprob_backward(lp, wl, we, lp, entp, tgt, N, V, ld);
    double d = 0.0;
    for (int r = 0; r < N; r++) {
        d += relerr_ff(lp + (size_t)r * ld, lc + (size_t)r * V, V);
        for (int i = V; i < ld; i++) d += fabs(lp[(size_t)r * ld + i]);
    }
    check("padded", "logprob_backward: = compact rows, padding gradient 0", shape, d, 0.0);
    free(tgt); free(out); free(outc);
    be->free(lc); be->free(lp); be->free(wl); be->free(we); be->free(u);
    be->free(logp); be->free(ent); be->free(logpp); be->free(entp);
}

/* ========================================================================== */
/* PPO losses                                                                  */

typedef struct {
    double *x, *x_old, *a, *w; /* policy: logp, logp_old, adv, w; value: v, v_old, ret, w */
    int N;
    double eps, eps_hi; /* value: eps alone; policy: the ratio clipped to [1 − eps, 1 + eps_hi] */
} PpoCtx;

static double policy_loss(void *p) {
    PpoCtx *c = p;
    double L;
    ref_ppo_policy_loss(&L, NULL, NULL, c->x, c->x_old, c->a, c->w, c->N, c->eps, c->eps_hi);
    return L;
}

static double value_loss(void *p) {
    PpoCtx *c = p;
    double L;
    ref_ppo_value_loss(&L, c->x, c->x_old, c->a, c->w, c->N, c->eps);
    return L;
}

static void test_policy(int N, float eps, float eps_hi) {
    char shape[64];
    snprintf(shape, sizeof shape, "N=%d,eps=%g,%g", N, eps, eps_hi);
    float *lp = falloc(N), *lpo = falloc(N), *adv = falloc(N), *w = falloc(N), *dlp = falloc(N);
    int n_clip = 0, n_unclip = 0;
    for (int i = 0; i < N; i++) {
        float r;
        do { /* ratio in [0.5, 1.6], away from the kinks 1 ± eps */
            lpo[i] = rng_range(-4, -0.1f);
            lp[i] = lpo[i] + rng_range(-0.7f, 0.47f);
            r = expf(lp[i] - lpo[i]);
        } while (fabsf(r - (1 - eps)) < 0.01f || fabsf(r - (1 + eps_hi)) < 0.01f);
        do adv[i] = rng_range(-2, 2); while (fabsf(adv[i]) < 0.05f);
        w[i] = rng_range(0.1f, 1.0f);
        float rc = fminf(fmaxf(r, 1 - eps), 1 + eps_hi);
        if (-adv[i] * rc > -adv[i] * r) n_clip++; else n_unclip++;
    }
    float loss, cf, kl;
    fill(dlp, N, -9, 9); /* dlogp overwrites */
    be->ppo_policy_loss(&loss, dlp, &cf, &kl, lp, lpo, adv, w, N, eps, eps_hi);
    PpoCtx c = {to_double(lp, N), to_double(lpo, N), to_double(adv, N), to_double(w, N), N, eps, eps_hi};
    double L, CF, KL;
    ref_ppo_policy_loss(&L, &CF, &KL, c.x, c.x_old, c.a, c.w, N, eps, eps_hi);
    check("ppo_policy", "ppo_policy_loss loss", shape, fabs(loss - L) / fabs(L), FWD_TOL);
    check("ppo_policy", "ppo_policy_loss clipfrac", shape, fabs(cf - CF) / fmax(CF, 1e-30), FWD_TOL);
    check("ppo_policy", "ppo_policy_loss approx_kl", shape, fabs(kl - KL) / KL, FWD_TOL);
    check_bool("ppo_policy", "ppo_policy both branches present", shape, n_clip > 0 && n_unclip > 0);
    grad_check("ppo_policy", "ppo_policy_loss dlogp", shape, dlp, c.x, N, policy_loss, &c);
    free(c.x); free(c.x_old); free(c.a); free(c.w);
    be->free(lp); be->free(lpo); be->free(adv); be->free(w); be->free(dlp);
}

/* hand-computed: clip-higher lets a ratio of 1.25 with A > 0 through at eps_hi 0.28 that 0.2 clips; A < 0
   still clips at 1 − eps_lo */
static void test_clip_higher(void) {
    float *lp = falloc(3), *lpo = falloc(3), *adv = falloc(3), *w = falloc(3), *d = falloc(3), loss, cf, kl;
    const float lr[3] = {logf(1.25f), logf(0.7f), logf(1.1f)}, A[3] = {1, -1, 2}, wt[3] = {0.5f, 0.25f, 0.25f};
    for (int n = 0; n < 3; n++) lp[n] = lr[n], lpo[n] = 0, adv[n] = A[n], w[n] = wt[n];
    /* symmetric: 0.5·(−1.2) + 0.25·0.8 + 0.25·(−2.2) = −0.95, the first two clipped (0.75 of the weight) */
    be->ppo_policy_loss(&loss, d, &cf, &kl, lp, lpo, adv, w, 3, 0.2f, 0.2f);
    check("ppo_policy", "clip 0.2 loss = -0.95", "N=3", fabs(loss + 0.95), FWD_TOL);
    check("ppo_policy", "clip 0.2 clipfrac = 0.75", "N=3", fabs(cf - 0.75), FWD_TOL);
    /* clip-higher: 0.5·(−1.25) + 0.25·0.8 + 0.25·(−2.2) = −0.975; token 0 unclipped, dlogp = w·(−A·r) = −0.625 */
    be->ppo_policy_loss(&loss, d, &cf, &kl, lp, lpo, adv, w, 3, 0.2f, 0.28f);
    check("ppo_policy", "clip-higher loss = -0.975", "N=3", fabs(loss + 0.975), FWD_TOL);
    check("ppo_policy", "clip-higher dlogp[0] = -0.625", "N=3", fabs(d[0] + 0.625), FWD_TOL);
    check_bool("ppo_policy", "clip-higher dlogp[1] = 0 (clipped below)", "N=3", d[1] == 0.0f);
    check("ppo_policy", "clip-higher clipfrac = 0.25", "N=3", fabs(cf - 0.25), FWD_TOL);
    be->free(lp); be->free(lpo); be->free(adv); be->free(w); be->free(d);
}

static void test_value(int N, float eps) {
    char shape[64];
    snprintf(shape, sizeof shape, "N=%d,eps=%g", N, eps);
    float *v = falloc(N), *vo = falloc(N), *ret = falloc(N), *w = falloc(N), *dv = falloc(N);
    int n_clip = 0, n_unclip = 0;
    for (int i = 0; i < N; i++) {
        float su, sc, d;
        do { /* away from |v − v_old| = eps and from (v−R)² = (vc−R)² */
            vo[i] = rng_range(-1, 1);
            d = rng_range(-3 * eps, 3 * eps);
            v[i] = vo[i] + d;
            ret[i] = rng_range(-1.5f, 1.5f);
            float vc = vo[i] + fminf(fmaxf(d, -eps), eps);
            su = (v[i] - ret[i]) * (v[i] - ret[i]);
            sc = (vc - ret[i]) * (vc - ret[i]);
        } while (fabsf(fabsf(d) - eps) < 0.01f || (fabsf(d) > eps && fabsf(su - sc) < 0.01f));
        w[i] = rng_range(0.1f, 1.0f);
        if (sc > su) n_clip++; else n_unclip++;
    }
    float loss;
    fill(dv, N, -9, 9);
    be->ppo_value_loss(&loss, dv, v, vo, ret, w, N, eps);
    PpoCtx c = {to_double(v, N), to_double(vo, N), to_double(ret, N), to_double(w, N), N, eps, eps};
    double L;
    ref_ppo_value_loss(&L, c.x, c.x_old, c.a, c.w, N, eps);
    check("ppo_value", "ppo_value_loss loss", shape, fabs(loss - L) / fabs(L), FWD_TOL);
    check_bool("ppo_value", "ppo_value both branches present", shape, n_clip > 0 && n_unclip > 0);
    grad_check("ppo_value", "ppo_value_loss dv", shape, dv, c.x, N, value_loss, &c);
    free(c.x); free(c.x_old); free(c.a); free(c.w);
    be->free(v); be->free(vo); be->free(ret); be->free(w); be->free(dv);
}

/* ========================================================================== */
/* sampling                                                                    */

static void test_sampling(void) {
    /* temperature 0 and top_k = 1 are argmax, lowest index on ties */
    {
        int B = 3, V = 50257;
        float *lg = falloc((size_t)B * V), u[3] = {0.0f, 0.5f, 0.999f};
        int out[3], ok = 1;
        fill(lg, (size_t)B * V, -5, 5);
        lg[123] = 9.0f;                      /* row 0: unique max */
        lg[V + 777] = lg[V + 40000] = 9.0f;  /* row 1: tie → 777 */
        lg[2 * V + 5] = 9.0f;
        lg[2 * V + 6] = 9.0f;
        be->sample_tokens(out, lg, u, B, V, V, 0.0f, 0);
        ok &= out[0] == 123 && out[1] == 777 && out[2] == 5;
        check_bool("sample", "sample temperature=0 argmax", "B=3,V=50257", ok);
        ok = 1;
        be->sample_tokens(out, lg, u, B, V, V, 1.3f, 1);
        ok &= out[0] == 123 && out[1] == 777 && out[2] == 5;
        check_bool("sample", "sample top_k=1 argmax", "B=3,V=50257", ok);
        be->free(lg);
    }
    /* empirical frequencies over many u match softmax(x/T) over the kept set */
    struct { int V, k; float T; } cs[] = {{7, 0, 1.0f}, {7, 0, 0.6f}, {9, 3, 1.0f}, {12, 5, 2.0f},
                                         {600, 300, 1.0f}};
    for (size_t s = 0; s < sizeof cs / sizeof cs[0]; s++) {
        int V = cs[s].V, k = cs[s].k, M = 100000;
        float T = cs[s].T;
        char shape[64];
        snprintf(shape, sizeof shape, "V=%d,top_k=%d,T=%g", V, k, T);
        float *lg = falloc(V);
        fill(lg, V, -2, 2);
        if (k > 0) lg[V - 1] = lg[1]; /* a tie, possibly at the threshold */
        /* expected probabilities: rank by (value desc, index asc) */
        double *p = dalloc(V);
        int *keep = calloc(V, sizeof(int));
        int kk = (k <= 0 || k >= V) ? V : k;
        for (int i = 0; i < V; i++) {
            int rank = 0;
            for (int j = 0; j < V; j++) rank += lg[j] > lg[i] || (lg[j] == lg[i] && j < i);
            keep[i] = rank < kk;
        }
        double mx = -INFINITY, tot = 0.0;
        for (int i = 0; i < V; i++) if (lg[i] > mx) mx = lg[i];
        for (int i = 0; i < V; i++) tot += (p[i] = keep[i] ? exp((lg[i] - mx) / T) : 0.0);
        for (int i = 0; i < V; i++) p[i] /= tot;
        int *cnt = calloc(V, sizeof(int));
        float *ub = malloc(sizeof(float) * 1000);
        int *ob = malloc(sizeof(int) * 1000);
        float *lgb = falloc((size_t)1000 * V);
        for (int j = 0; j < 1000; j++) memcpy(lgb + (size_t)j * V, lg, (size_t)V * 4);
        int mism = 0;
        for (int m = 0; m < M; m += 1000) {
            for (int j = 0; j < 1000; j++) ub[j] = (float)rng_uniform();
            be->sample_tokens(ob, lgb, ub, 1000, V, V, T, k);
            for (int j = 0; j < 1000; j++) {
                cnt[ob[j]]++;
                if (m < 5000) mism += ob[j] != ref_sample_row(lg, ub[j], V, T, k);
            }
        }
        double maxdiff = 0.0;
        int excluded_hit = 0;
        for (int i = 0; i < V; i++) {
            double f = (double)cnt[i] / M;
            if (fabs(f - p[i]) > maxdiff) maxdiff = fabs(f - p[i]);
            if (!keep[i] && cnt[i]) excluded_hit = 1;
        }
        check("sample", "sample frequencies |f-p|max", shape, maxdiff, 0.01);
        check_bool("sample", "sample top_k excludes the rest", shape, !excluded_hit);
        check("sample", "sample == ref rule (5000 u)", shape, mism / 5000.0, 1e-3);
        free(p); free(keep); free(cnt); free(ub); free(ob);
        be->free(lg); be->free(lgb);
    }
    /* large vocabulary: small k (heap) and large k (radix select) vs the sorted reference */
    {
        int V = 50257, B = 8, ks[] = {50, 256, 257, 2000, 0};
        float *lg = falloc((size_t)B * V), u[8];
        fill(lg, (size_t)B * V, -4, 4);
        for (int b = 0; b < B; b++) /* quantised rows: many ties */
            if (b % 2)
                for (int i = 0; i < V; i++) lg[(size_t)b * V + i] = roundf(lg[(size_t)b * V + i] * 4) / 4;
        for (size_t kq = 0; kq < sizeof ks / sizeof ks[0]; kq++) {
            int out[8], mism = 0;
            for (int rep = 0; rep < 4; rep++) {
                for (int b = 0; b < B; b++) u[b] = (float)rng_uniform();
                be->sample_tokens(out, lg, u, B, V, V, 0.8f, ks[kq]);
                for (int b = 0; b < B; b++)
                    mism += out[b] != ref_sample_row(lg + (size_t)b * V, u[b], V, 0.8, ks[kq]);
            }
            char shape[64];
            snprintf(shape, sizeof shape, "B=8,V=50257,top_k=%d", ks[kq]);
            check("sample", "sample == ref rule (32 draws)", shape, mism / 32.0, 0.0);
        }
        /* determinism: same inputs, same output */
        int o1[8], o2[8];
        for (int b = 0; b < B; b++) u[b] = (float)rng_uniform();
        be->sample_tokens(o1, lg, u, B, V, V, 1.0f, 40);
        be->sample_tokens(o2, lg, u, B, V, V, 1.0f, 40);
        check_bool("sample", "sample deterministic", "B=8,V=50257,top_k=40", !memcmp(o1, o2, sizeof o1));
        be->free(lg);
    }
}

/* ========================================================================== */
/* optimiser                                                                   */

static void test_adamw(size_t n, float wd) {
    char shape[64];
    snprintf(shape, sizeof shape, "n=%zu,wd=%g", n, wd);
    float *p = falloc(n), *g = falloc(n), *m = falloc(n), *v = falloc(n);
    fill(p, n, -1, 1);
    double *pd = to_double(p, n), *md = dalloc(n), *vd = dalloc(n);
    for (int t = 1; t <= 3; t++) {
        fill(g, n, -1, 1);
        if (t == 2) g[0] = 0.0f; /* a zero gradient: m, v only decay */
        /* step 3 clips: the backend scales the gradient itself, the reference gets it pre-scaled */
        float gscale = t == 3 ? 0.37f : 1.0f;
        double *gd = to_double(g, n);
        for (size_t i = 0; i < n; i++) gd[i] *= (double)gscale;
        be->adamw_update(p, g, m, v, n, 1e-2f, 0.9f, 0.95f, 1e-8f, wd, gscale, t);
        ref_adamw_update(pd, gd, md, vd, n, 1e-2f, 0.9f, 0.95f, 1e-8f, wd, t);
        free(gd);
    }
    check("adamw", "adamw 3 steps params", shape, relerr(p, pd, n), FWD_TOL);
    check("adamw", "adamw 3 steps m", shape, relerr(m, md, n), FWD_TOL);
    check("adamw", "adamw 3 steps v", shape, relerr(v, vd, n), FWD_TOL);
    /* the update itself (params moved by ~lr per step) */
    double *p0 = to_double(p, n);
    fill(g, n, -1, 1);
    double *gd = to_double(g, n);
    be->adamw_update(p, g, m, v, n, 1e-2f, 0.9f, 0.95f, 1e-8f, wd, 1.0f, 4);
    ref_adamw_update(pd, gd, md, vd, n, 1e-2f, 0.9f, 0.95f, 1e-8f, wd, 4);
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double a = p[i] - p0[i], b = pd[i] - p0[i];
        num += (a - b) * (a - b);
        den += b * b;
    }
    check("adamw", "adamw step 4 delta", shape, sqrt(num / den), 1e-4);
    /* sumsq: exact in double, and the same bits on 1 and 2 threads */
    double ss = 0.0;
    for (size_t i = 0; i < n; i++) ss += (double)g[i] * g[i];
    be->set_threads(1);
    double s1 = be->sumsq(g, n);
    be->set_threads(2);
    double s2 = be->sumsq(g, n);
    be->set_threads(1);
    check("adamw", "sumsq", shape, fabs(s1 - ss) / ss, 1e-12);
    check_bool("adamw", "sumsq same bits on 1 and 2 threads", shape, s1 == s2);
    free(gd); free(p0); free(pd); free(md); free(vd);
    be->free(p); be->free(g); be->free(m); be->free(v);
}

/* ========================================================================== */

static void test_select(void) {
    char why[256];
    const Backend *b = backend_select("cpu", why, sizeof why);
    check_bool("select", "backend_select cpu", "-", b && !strcmp(b->name, "cpu"));
    b = backend_select("auto", why, sizeof why);
    check_bool("select", "backend_select auto", "-", b != NULL);
    b = backend_select("nonsense", why, sizeof why);
    check_bool("select", "backend_select unknown -> NULL+why", "-", !b && why[0]);
#ifndef NEREUS_CUDA
    b = backend_select("cuda", why, sizeof why);
    check_bool("select", "backend_select cuda -> NULL+why", "-", !b && strstr(why, "USE_CUDA=1"));
#endif
    /* every entry of the struct is filled */
    const Backend *c = backend_cpu();
    int full = 1;
    void *const *fp = (void *const *)((const char *)c + sizeof(const char *));
    size_t nfp = (sizeof(Backend) - sizeof(const char *)) / sizeof(void *);
    for (size_t i = 0; i < nfp; i++) full &= fp[i] != NULL;
    check_bool("select", "backend_cpu all entries set", "-", full);
}

/* Regression: inside the clip range the clipped value is v itself. Values
 * where v_old + (v − v_old) rounds away from v, on the side that made the
 * clipped square the larger, used to get a zero gradient instead of w·(v − R). */
static void test_ppo_value_ulp_ties(void) {
    enum { N = 64 };
    float v[N], vo[N], ret[N], w[N], dv[N], loss;
    int n = 0;
    uint64_t s = 12345;
    /* x − xo is inexact when the two are far apart in magnitude (Sterbenz: exact within a factor 2) */
    for (long it = 0; n < N && it < 10000000; it++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        float a = (float)((s >> 40) & 0xffffff) / 16777216.0f, b = (float)((s >> 16) & 0xffffff) / 16777216.0f;
        float x = 0.15f + 0.04f * a, xo = 0.001f + 0.05f * b, r = x + 1e-4f; /* |x − xo| < 0.2: inside */
        float vc = xo + (x - xo);
        if (vc != x && (vc - r) * (vc - r) > (x - r) * (x - r)) { v[n] = x; vo[n] = xo; ret[n] = r; w[n] = 1.0f; n++; }
    }
    check_bool("ppo_value", "found 64 values where v_old + (v - v_old) rounds away from v", "N=64", n == N);
    be->ppo_value_loss(&loss, dv, v, vo, ret, w, N, 0.2f);
    int bad = 0;
    for (int i = 0; i < N; i++) bad += dv[i] != v[i] - ret[i];
    check_bool("ppo_value", "inside the clip range: gradient v - R even where v_old + (v - v_old) != v", "N=64", bad == 0);
}

int main(void) {
    be = backend_cpu();
    be->set_threads(1);

    test_select();
    test_ppo_value_ulp_ties();

    test_matmul(10, 12, 36, 1);
    test_matmul(7, 13, 9, 1);
    test_matmul(33, 48, 20, 1);
    test_matmul(6, 11, 5, 0);
    test_matmul_decode(1, 40, 9, 9, 1);
    test_matmul_decode(3, 37, 21, 24, 1); /* IC past the 16-wide blocks; padding columns */
    test_matmul_decode(4, 1040, 130, 130, 0); /* columns in chunks */
    test_matmul_decode(4, 37, 21, 24, 1);     /* 4 rows: pairs of weight rows and an odd last one, a tail, padding */
    test_matmul_decode(2, 50, 33, 40, 1);     /* 2 rows, prefetched */
    test_matmul_decode(5, 16, 7, 8, 0);
    test_matmul_decode(13, 48, 20, 22, 1); /* above the narrow path: sgemm */

    test_layernorm(10, 12);
    test_layernorm(7, 33);
    test_layernorm(4, 64);
    test_layernorm(3, 771);

    test_gelu(60);
    test_gelu(257);
    test_gelu(1000);

    test_residual(60);
    test_residual(97);
    test_residual(500);

    test_attention(2, 5, 12, 3, 3);
    test_attention(1, 7, 16, 2, 2);
    test_attention(3, 4, 20, 5, 5);
    test_attention(2, 9, 64, 2, 2);
    test_attention(2, 5, 24, 6, 2); /* grouped-query: 3 query heads per key/value head */
    test_attention(1, 7, 16, 4, 1); /* multi-query */
    test_attention(2, 6, 32, 4, 2);

    test_decode(2, 7, 12, 3, 3, 9, 3);
    test_decode(1, 12, 16, 4, 4, 12, 0);
    test_decode(3, 5, 24, 2, 2, 8, 4);
    test_decode(2, 33, 128, 2, 2, 40, 1);
    test_decode(1, 1100, 8, 2, 2, 1100, 10); /* crosses the decode chunk */
    test_decode(2, 9, 24, 6, 2, 11, 3);      /* grouped-query */
    test_decode(2, 8, 16, 4, 1, 8, 0);       /* multi-query */
    test_decode(1, 1030, 16, 4, 2, 1040, 2); /* grouped-query across the decode chunk */

    test_rmsnorm(10, 1, 12, 12, 1e-5f);
    test_rmsnorm(7, 1, 33, 33, 1e-6f);
    test_rmsnorm(3, 1, 771, 771, 1e-5f);
    test_rmsnorm(5, 4, 8, 56, 1e-6f);  /* Qwen3 q-norm: 4 heads of 8 in a packed row of 56 */
    test_rmsnorm(6, 2, 16, 70, 1e-6f); /* k-norm-like: 2 heads, gaps after them */

    const RopeScaling llama31 = {8.0, 1.0, 4.0, 8192};
    test_rope_inv_freq();
    test_rope(2, 5, 3, 8, 24, 0, NULL);       /* q heads only */
    test_rope(2, 6, 6, 16, 128, 0, NULL);     /* q and k heads (4 + 2) of a packed GQA row */
    test_rope(1, 7, 2, 10, 30, 37, NULL);     /* pos0 > 0, hs/2 odd */
    test_rope(2, 4, 3, 128, 512, 0, &llama31);
    test_rope(1, 3, 2, 128, 384, 9000, &llama31); /* pos0 > 0 past the original context */

    test_swiglu(6, 11);
    test_swiglu(9, 64);
    test_swiglu(4, 257);

    test_encoder(2, 5, 12, 7, 8, 0);
    test_encoder(3, 4, 10, 5, 12, 3);
    test_encoder(1, 6, 17, 4, 6, 0);

    test_logprob(6, 11, 3.0f);
    test_logprob(5, 50, 3.0f);
    test_logprob(4, 257, 2.0f);
    test_logprob(4, 40, 30.0f); /* peaked rows: underflowing probabilities */
    test_padded_vocab(8, 15, 16);
    test_padded_vocab(6, 250, 320);

    test_policy(40, 0.2f, 0.2f);
    test_policy(101, 0.2f, 0.2f);
    test_policy(17, 0.1f, 0.1f);
    test_policy(64, 0.2f, 0.28f); /* DAPO's clip-higher */
    test_clip_higher();

    test_value(40, 0.2f);
    test_value(101, 0.2f);
    test_value(17, 0.5f);

    test_sampling();

    test_adamw(1000, 0.0f);
    test_adamw(4099, 0.1f);
    test_adamw(300001, 0.01f); /* several sumsq blocks, the threaded paths */

    printf("\nworst relative error per op:\n");
    for (int i = 0; i < n_ops; i++)
        printf("  %-12s %3d checks  worst=%.3e\n", worst[i].op, worst[i].count, worst[i].worst);
    printf("%s: %d checks, %d failed\n", n_fail ? "FAIL" : "PASS", n_checks, n_fail);
    return n_fail ? 1 : 0;
}
