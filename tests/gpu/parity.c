/* parity.c — checks every op of the CUDA backend against the CPU backend (the
 * oracle) on fresh random inputs, then benchmarks matmul_forward against a
 * bare cublasSgemm on GPT-2 124M shapes, and runs the NCCL helper and the
 * EMU group paths (check_groups: NCCL groups or host staging of device
 * buffers) on the ranks it was started with. `--groups` runs only the
 * latter, on any number of ranks (tests/gpu/run.sh: 2 ranks on one GPU,
 * which have no NCCL groups and stage).
 *
 * Rules: every output is poisoned (NaN) on both backends before an op that
 * overwrites it, so an element the CUDA kernel never writes fails; outputs an
 * op accumulates into start from the same random values on both. A check
 * passes when no compared element is NaN/Inf where the CPU's is finite and
 * the norm-wise relative error max|gpu − cpu| / max|cpu| is ≤ tol (1e-5 in
 * fp32, 3e-3 for matmul under TF32, where a probe must also show TF32
 * rounding), written !(err <= tol) so NaN never passes. Where small elements
 * matter (probabilities, the exact zeros above the attention diagonal) each
 * element is also checked on its own (check_elem, check_causal_zeros), since
 * the norm-wise error hides them. Sampling must give the CPU's tokens
 * exactly. One line per check, then the GEMM table and a verdict line; exit 0
 * (all passed), 1 (a check failed) or 77 with "SKIP: no CUDA device
 * (<reason>)" (no usable device, or a build without CUDA).
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/backend.h"
#include "nereus/util.h"

#ifndef NEREUS_CUDA
int main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    printf("SKIP: no CUDA device (this build has no CUDA backend: rebuild with USE_CUDA=1 where nvcc is present)\n");
    return 77;
}
#else
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "cuda_check.h"
#include "nereus/backend_cuda.h"
#include "nereus/comm.h"
#include "nereus/emu.h"
#ifdef NEREUS_NCCL
#include "nccl_comm.h"
#endif

static const Backend *CPU, *GPU;
static int n_pass, n_fail;
static uint64_t draw_id = 1; /* every random array gets a fresh stream index */

/* ---- host/device helpers ------------------------------------------------ */

static float *h_rand(size_t n, float lo, float hi) {
    float *x = nr_xmalloc(n * sizeof(float) + 1);
    uint64_t id = draw_id++;
    for (size_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * rng_uniform(4242, RNG_TEST, id, i);
    return x;
}

static float *h_nan(size_t n) {
    float *x = nr_xmalloc(n * sizeof(float) + 1);
    for (size_t i = 0; i < n; i++) x[i] = NAN;
    return x;
}

/* one buffer on each backend, both holding the same host contents */
typedef struct {
    float *c, *g;
    size_t n;
} Pair;

static Pair pair_from(const float *h, size_t n) {
    Pair p = {CPU->alloc(n * sizeof(float)), GPU->alloc(n * sizeof(float)), n};
    CPU->upload(p.c, h, n * sizeof(float));
    GPU->upload(p.g, h, n * sizeof(float));
    return p;
}

static Pair pair_rand(size_t n, float lo, float hi) {
    float *h = h_rand(n, lo, hi);
    Pair p = pair_from(h, n);
    free(h);
    return p;
}

static Pair pair_nan(size_t n) {
    float *h = h_nan(n);
    Pair p = pair_from(h, n);
    free(h);
    return p;
}

static void pair_poison(Pair p) {
    float *h = h_nan(p.n);
    CPU->upload(p.c, h, p.n * sizeof(float));
    GPU->upload(p.g, h, p.n * sizeof(float));
    free(h);
}

static void pair_free(Pair p) {
    CPU->free(p.c);
    GPU->free(p.g);
}

typedef struct {
    int *c, *g;
} IPair;

static IPair ipair_from(const int *h, size_t n) {
    IPair p = {CPU->alloc(n * sizeof(int)), GPU->alloc(n * sizeof(int))};
    CPU->upload(p.c, h, n * sizeof(int));
    GPU->upload(p.g, h, n * sizeof(int));
    return p;
}

static void ipair_free(IPair p) {
    CPU->free(p.c);
    GPU->free(p.g);
}

/* ---- comparison ----------------------------------------------------------- */

static void verdict(const char *name, int ok, const char *fmt, double val, double tol) {
    if (ok) n_pass++;
    else n_fail++;
    printf("%-4s  %-52s ", ok ? "ok" : "FAIL", name);
    if (*fmt) printf(fmt, val, tol);
    printf("\n");
    fflush(stdout);
}

/* elements [off + k·stride, off + k·stride + len) for k < count (stride 0: one run) */
static double rel_err_rows(const float *cpu, const float *gpu, size_t count, size_t len, size_t stride,
                           long *bad) {
    double maxd = 0.0, maxa = 0.0;
    long nbad = 0;
    for (size_t k = 0; k < count; k++)
        for (size_t i = 0; i < len; i++) {
            size_t j = k * stride + i;
            double a = cpu[j], b = gpu[j];
            if (!isfinite(b) || !isfinite(a)) {
                nbad++;
                continue;
            }
            double d = fabs(a - b);
            if (d > maxd) maxd = d;
            if (fabs(a) > maxa) maxa = fabs(a);
        }
    *bad = nbad;
    return maxa > 0.0 ? maxd / maxa : maxd;
}

/* both sides of p on the host, *hc the CPU's and *hg the GPU's (the caller frees them) */
static void pair_download(Pair p, float **hc, float **hg) {
    *hc = nr_xmalloc(p.n * sizeof(float) + 1);
    *hg = nr_xmalloc(p.n * sizeof(float) + 1);
    CPU->download(*hc, p.c, p.n * sizeof(float));
    GPU->download(*hg, p.g, p.n * sizeof(float));
}

/* the norm-wise relative error of the whole pair (rel_err_rows); *bad: its non-finite elements */
static double pair_rel_err(Pair p, long *bad) {
    float *hc, *hg;
    pair_download(p, &hc, &hg);
    double err = rel_err_rows(hc, hg, 1, p.n, 0, bad);
    free(hc);
    free(hg);
    return err;
}

/* compares the whole pair */
static void check(const char *name, Pair p, double tol) {
    long bad = 0;
    double err = pair_rel_err(p, &bad);
    if (bad) {
        char nm[160];
        snprintf(nm, sizeof nm, "%s (%ld non-finite)", name, bad);
        verdict(nm, 0, "rel err %.2e (tol %.0e)", err, tol);
    } else {
        verdict(name, err <= tol, "rel err %.2e (tol %.0e)", err, tol);
    }
}

/* compares rows selected by a mask (rows of length len) */
static void check_rows(const char *name, Pair p, size_t rows, size_t len, const int *keep, double tol) {
    float *hc, *hg;
    pair_download(p, &hc, &hg);
    double err = 0.0;
    long bad = 0;
    for (size_t r = 0; r < rows; r++) {
        if (!keep[r]) continue;
        long b = 0;
        double e = rel_err_rows(hc + r * len, hg + r * len, 1, len, 0, &b);
        bad += b;
        if (!(e <= err)) err = e;
    }
    verdict(name, bad == 0 && err <= tol, "rel err %.2e (tol %.0e)", err, tol);
    free(hc);
    free(hg);
}

/* Elementwise check, for buffers whose small elements matter: every compared
 * element must satisfy |gpu − cpu| ≤ rtol·max(|cpu|, abs_floor), a relative
 * error per element (absolute, rtol·abs_floor, only for |cpu| < abs_floor).
 * The norm-wise error divides by the buffer's largest value, so a 1e-9
 * probability off by 100% beside a 3e-4 one passes it; here it fails. Rows
 * (of length len) selected by keep (NULL: all); the worst element is printed
 * when the check fails. */
static void check_elem(const char *name, Pair p, size_t rows, size_t len, const int *keep, double rtol,
                       double abs_floor) {
    float *hc, *hg;
    pair_download(p, &hc, &hg);
    double worst = 0.0;
    size_t wj = 0;
    long bad = 0;
    for (size_t r = 0; r < rows; r++) {
        if (keep && !keep[r]) continue;
        for (size_t i = 0; i < len; i++) {
            size_t j = r * len + i;
            double a = hc[j], b = hg[j];
            if (!isfinite(a) || !isfinite(b)) {
                bad++;
                continue;
            }
            double e = fabs(a - b) / fmax(fabs(a), abs_floor);
            if (!(e <= worst)) {
                worst = e;
                wj = j;
            }
        }
    }
    char nm[160];
    if (bad) snprintf(nm, sizeof nm, "%s (%ld non-finite)", name, bad);
    else snprintf(nm, sizeof nm, "%s", name);
    int ok = bad == 0 && worst <= rtol;
    verdict(nm, ok, "elem rel err %.2e (tol %.0e)", worst, rtol);
    if (!ok && !bad)
        printf("      worst element: row %zu col %zu, cpu %.9g gpu %.9g\n", wj / len, wj % len, hc[wj], hg[wj]);
    free(hc);
    free(hg);
}

/* (rows, T) score matrices whose row r is query t = r % T (preatt, att,
 * dpreatt, datt): the CPU writes exactly 0 above the diagonal (t2 > t), and
 * so must the GPU. A stray 1e-6 there, beside values of order 1, is far under
 * the norm-wise tolerance. */
static void check_causal_zeros(const char *name, Pair p, size_t rows, int T) {
    float *hg = nr_xmalloc(p.n * sizeof(float) + 1);
    GPU->download(hg, p.g, p.n * sizeof(float));
    long nz = 0;
    for (size_t r = 0; r < rows; r++)
        for (int t2 = (int)(r % (size_t)T) + 1; t2 < T; t2++) nz += !(hg[r * T + t2] == 0.0f);
    char nm[160];
    snprintf(nm, sizeof nm, "%s: zeros above the diagonal", name);
    verdict(nm, nz == 0, "%.0f elements not 0", (double)nz, 0);
    free(hg);
}

#define TOL 1e-5
#define TOL_TF32 3e-3

/* ---- op checks -------------------------------------------------------------- */

/* alloc must zero-fill like the CPU's. A first cudaMalloc gets pages the
 * driver has just cleared, so a fresh buffer reads 0 with or without the
 * backend's cudaMemset: the buffer checked must be one that held non-zero
 * bytes. The CUDA allocator hands a freed range back, unchanged, to the next
 * cudaMalloc of the same size. So: fill a bare cudaMalloc'd buffer with 0x5A
 * and free it; a second bare cudaMalloc is the control (it must read the 0x5A
 * back, i.e. memory without a memset is dirty here); fill it again and free
 * it; the backend's alloc of the same size must then get that range and read
 * 0. If the range was not reused or came back clean, the check could not
 * have failed: the line says so and a note follows (not a failure, since the
 * backend did nothing wrong). */
static void check_alloc_zeroed(void) {
    const size_t bytes = (size_t)100032 * sizeof(float); /* a multiple of 256: alloc asks cudaMalloc for exactly this */
    unsigned char *hb = nr_xmalloc(bytes);
    void *raw = NULL, *raw2 = NULL;
    cudaCheck(cudaMalloc(&raw, bytes));
    cudaCheck(cudaMemset(raw, 0x5A, bytes));
    cudaCheck(cudaFree(raw));
    cudaCheck(cudaMalloc(&raw2, bytes));
    cudaCheck(cudaMemcpy(hb, raw2, bytes, cudaMemcpyDeviceToHost));
    size_t dirty = 0;
    for (size_t i = 0; i < bytes; i++) dirty += hb[i] == 0x5A;
    cudaCheck(cudaMemset(raw2, 0x5A, bytes));
    cudaCheck(cudaFree(raw2));
    void *z = GPU->alloc(bytes);
    memset(hb, 0xFF, bytes);
    GPU->download(hb, z, bytes);
    size_t nz = 0;
    for (size_t i = 0; i < bytes; i++) nz += hb[i] != 0;
    const int live = z == raw2 && dirty == bytes;
    verdict(live ? "alloc is zero-filled (a freed buffer of 0x5A bytes, reused)"
                 : "alloc is zero-filled (VACUOUS: no dirty buffer reused)",
            nz == 0, "%.0f non-zero bytes", (double)nz, 0);
    if (!live)
        printf("note  the zero-fill check could not fail here: the control cudaMalloc read %zu of %zu bytes of 0x5A "
               "back, and alloc %s the freed range\n", dirty, bytes, z == raw2 ? "got" : "did not get");
    GPU->free(z);
    free(hb);
}

static void check_memory(void) {
    const size_t n = 100003;
    check_alloc_zeroed();
    float *z = GPU->alloc(n * sizeof(float)), *h = h_rand(n, -1, 1), *back = h_nan(n);
    int ok;
    GPU->upload(z, h, n * sizeof(float));
    GPU->download(back, z, n * sizeof(float));
    verdict("upload/download round trip", !memcmp(h, back, n * sizeof(float)), "", 0, 0);
    float *z2 = GPU->alloc(n * sizeof(float));
    GPU->copy(z2, z, n * sizeof(float));
    GPU->download(back, z2, n * sizeof(float));
    verdict("copy", !memcmp(h, back, n * sizeof(float)), "", 0, 0);
    GPU->copy(z + 7, z, (n - 7) * sizeof(float)); /* overlapping: memmove semantics */
    GPU->download(back, z, n * sizeof(float));
    ok = !memcmp(back + 7, h, (n - 7) * sizeof(float)) && !memcmp(back, h, 7 * sizeof(float));
    verdict("copy (overlapping, memmove)", ok, "", 0, 0);
    GPU->zero(z2 + 5, 100 * sizeof(float));
    GPU->download(back, z2, n * sizeof(float));
    ok = back[4] == h[4] && back[105] == h[105];
    for (int i = 5; i < 105; i++) ok &= back[i] == 0.0f;
    verdict("zero (a sub-range)", ok, "", 0, 0);
    GPU->set_threads(4);
    void *e = GPU->alloc(0);
    verdict("alloc(0) gives a pointer", e != NULL, "", 0, 0);
    GPU->free(e);
    GPU->free(z);
    GPU->free(z2);
    free(h);
    free(back);
}

static void check_matmul(int N, int IC, int OC, int with_bias, double tol, const char *mode) {
    char nm[128];
    Pair inp = pair_rand((size_t)N * IC, -1, 1), w = pair_rand((size_t)OC * IC, -0.5f, 0.5f);
    Pair bias = pair_rand((size_t)OC, -1, 1), out = pair_nan((size_t)N * OC);
    CPU->matmul_forward(out.c, inp.c, w.c, with_bias ? bias.c : NULL, N, IC, OC);
    GPU->matmul_forward(out.g, inp.g, w.g, with_bias ? bias.g : NULL, N, IC, OC);
    snprintf(nm, sizeof nm, "matmul_forward %s N%d IC%d OC%d%s", mode, N, IC, OC, with_bias ? " +b" : "");
    check(nm, out, tol);
    Pair dout = pair_rand((size_t)N * OC, -1, 1);
    Pair dinp = pair_rand((size_t)N * IC, -1, 1), dw = pair_rand((size_t)OC * IC, -1, 1);
    Pair db = pair_rand((size_t)OC, -1, 1);
    CPU->matmul_backward(dinp.c, dw.c, with_bias ? db.c : NULL, dout.c, inp.c, w.c, N, IC, OC);
    GPU->matmul_backward(dinp.g, dw.g, with_bias ? db.g : NULL, dout.g, inp.g, w.g, N, IC, OC);
    snprintf(nm, sizeof nm, "matmul_backward dinp %s N%d IC%d OC%d", mode, N, IC, OC);
    check(nm, dinp, tol);
    snprintf(nm, sizeof nm, "matmul_backward dweight %s N%d IC%d OC%d", mode, N, IC, OC);
    check(nm, dw, tol);
    if (with_bias) {
        snprintf(nm, sizeof nm, "matmul_backward dbias N%d OC%d", N, OC);
        check(nm, db, TOL);
    }
    pair_free(inp); pair_free(w); pair_free(bias); pair_free(out);
    pair_free(dout); pair_free(dinp); pair_free(dw); pair_free(db);
}

static void check_layernorm(int N, int C) {
    char nm[128];
    Pair inp = pair_rand((size_t)N * C, -2, 3), w = pair_rand(C, 0.5f, 1.5f), b = pair_rand(C, -1, 1);
    Pair out = pair_nan((size_t)N * C), mean = pair_nan(N), rstd = pair_nan(N);
    CPU->layernorm_forward(out.c, mean.c, rstd.c, inp.c, w.c, b.c, N, C);
    GPU->layernorm_forward(out.g, mean.g, rstd.g, inp.g, w.g, b.g, N, C);
    snprintf(nm, sizeof nm, "layernorm_forward out N%d C%d", N, C);
    check(nm, out, TOL);
    check("layernorm_forward mean", mean, TOL);
    check("layernorm_forward rstd", rstd, TOL);
    Pair dout = pair_rand((size_t)N * C, -1, 1), dinp = pair_rand((size_t)N * C, -1, 1);
    Pair dw = pair_rand(C, -1, 1), db = pair_rand(C, -1, 1);
    CPU->layernorm_backward(dinp.c, dw.c, db.c, dout.c, inp.c, w.c, mean.c, rstd.c, N, C);
    GPU->layernorm_backward(dinp.g, dw.g, db.g, dout.g, inp.g, w.g, mean.g, rstd.g, N, C);
    snprintf(nm, sizeof nm, "layernorm_backward dinp N%d C%d", N, C);
    check(nm, dinp, TOL);
    check("layernorm_backward dweight", dw, TOL);
    check("layernorm_backward dbias", db, TOL);
    pair_free(inp); pair_free(w); pair_free(b); pair_free(out); pair_free(mean); pair_free(rstd);
    pair_free(dout); pair_free(dinp); pair_free(dw); pair_free(db);
}

static void check_pointwise(size_t N) {
    Pair x = pair_rand(N, -6, 6), y = pair_rand(N, -3, 3), out = pair_nan(N);
    CPU->gelu_forward(out.c, x.c, N);
    GPU->gelu_forward(out.g, x.g, N);
    check("gelu_forward", out, TOL);
    Pair dx = pair_rand(N, -1, 1), dy = pair_rand(N, -1, 1);
    CPU->gelu_backward(dx.c, x.c, dy.c, N);
    GPU->gelu_backward(dx.g, x.g, dy.g, N);
    check("gelu_backward", dx, TOL);
    CPU->gelu_backward(dy.c, x.c, dy.c, N); /* in place: dinp == dout */
    GPU->gelu_backward(dy.g, x.g, dy.g, N);
    check("gelu_backward (in place)", dy, TOL);
    pair_poison(out);
    CPU->residual_forward(out.c, x.c, y.c, N);
    GPU->residual_forward(out.g, x.g, y.g, N);
    check("residual_forward", out, TOL);
    CPU->residual_backward(x.c, y.c, dx.c, N);
    GPU->residual_backward(x.g, y.g, dx.g, N);
    check("residual_backward da", x, TOL);
    check("residual_backward db", y, TOL);
    pair_free(x); pair_free(y); pair_free(out); pair_free(dx); pair_free(dy);
}

static void check_attention(int B, int T, int C, int NH, int NKV) {
    char nm[128];
    const int hs = C / NH, C3 = C + 2 * NKV * hs;
    const size_t nin = (size_t)B * T * C3, natt = (size_t)B * NH * T * T, nout = (size_t)B * T * C;
    Pair inp = pair_rand(nin, -1.5f, 1.5f), out = pair_nan(nout);
    Pair pre = pair_nan(natt), att = pair_nan(natt);
    CPU->attention_forward(out.c, pre.c, att.c, inp.c, B, T, C, NH, NKV);
    GPU->attention_forward(out.g, pre.g, att.g, inp.g, B, T, C, NH, NKV);
    snprintf(nm, sizeof nm, "attention_forward out B%d T%d C%d NH%d NKV%d", B, T, C, NH, NKV);
    check(nm, out, TOL);
    check("attention_forward preatt", pre, TOL);
    check("attention_forward att", att, TOL);
    /* att per element: both sides take expf of the max-subtracted score
     * (scores differ by dot-product rounding, ~1e-7; CUDA's expf is within
     * 2 ulp) and divide by a float sum of ≤ T terms added in another order
     * (~√T·2^-24, 1e-6 at T 300). The CPU emulation of the kernels (FMA
     * contraction, expf moved by ±4 ulp) gives ≤ 1.6e-6: TOL leaves 6x. No
     * att here is near 1e-30, under which only an absolute 1e-35 is asked
     * (underflow); the zeros above the diagonal must be exact. */
    check_elem("attention_forward att (per element)", att, (size_t)B * NH * T, T, NULL, TOL, 1e-30);
    check_causal_zeros("attention_forward preatt", pre, (size_t)B * NH * T, T);
    check_causal_zeros("attention_forward att", att, (size_t)B * NH * T, T);
    Pair dout = pair_rand(nout, -1, 1), dinp = pair_rand(nin, -1, 1);
    Pair dpre = pair_nan(natt), datt = pair_nan(natt);
    CPU->attention_backward(dinp.c, dpre.c, datt.c, dout.c, inp.c, att.c, B, T, C, NH, NKV);
    GPU->attention_backward(dinp.g, dpre.g, datt.g, dout.g, inp.g, att.g, B, T, C, NH, NKV);
    snprintf(nm, sizeof nm, "attention_backward dinp B%d T%d C%d NH%d NKV%d", B, T, C, NH, NKV);
    check(nm, dinp, TOL);
    check("attention_backward dpreatt", dpre, TOL);
    check("attention_backward datt", datt, TOL);
    check_causal_zeros("attention_backward dpreatt", dpre, (size_t)B * NH * T, T);
    check_causal_zeros("attention_backward datt", datt, (size_t)B * NH * T, T);

    /* KV cache: fill from the first T-1 tokens, decode token T-1 at pos T-1 */
    const int Tmax = T + 9, pos = T - 1;
    const size_t ncache = (size_t)B * NKV * Tmax * hs;
    Pair kc = pair_nan(ncache), vc = pair_nan(ncache);
    /* prefix qkv (B, T-1, C3) and the new token's qkv (B, C3), cut from inp */
    float *h = nr_xmalloc(nin * sizeof(float));
    CPU->download(h, inp.c, nin * sizeof(float));
    float *hp = nr_xmalloc(nin * sizeof(float)), *hq = nr_xmalloc((size_t)B * C3 * sizeof(float));
    for (int b = 0; b < B; b++) {
        memcpy(hp + (size_t)b * pos * C3, h + (size_t)b * T * C3, (size_t)pos * C3 * sizeof(float));
        memcpy(hq + (size_t)b * C3, h + ((size_t)b * T + pos) * C3, (size_t)C3 * sizeof(float));
    }
    Pair pref = pair_from(hp, (size_t)B * pos * C3), q = pair_from(hq, (size_t)B * C3);
    CPU->kv_fill(kc.c, vc.c, pref.c, B, pos, Tmax, C, NH, NKV);
    GPU->kv_fill(kc.g, vc.g, pref.g, B, pos, Tmax, C, NH, NKV);
    Pair dec = pair_nan((size_t)B * C);
    CPU->attention_decode(dec.c, kc.c, vc.c, q.c, NULL, NULL, B, pos, Tmax, C, NH, NKV);
    GPU->attention_decode(dec.g, kc.g, vc.g, q.g, NULL, NULL, B, pos, Tmax, C, NH, NKV);
    snprintf(nm, sizeof nm, "attention_decode out B%d pos%d Tmax%d", B, pos, Tmax);
    check(nm, dec, TOL);
    /* cache positions 0..pos of every (b, h) */
    int *keep = nr_xcalloc((size_t)B * NKV * Tmax, sizeof(int));
    for (size_t r = 0; r < (size_t)B * NKV * Tmax; r++) keep[r] = (int)(r % Tmax) <= pos;
    check_rows("kv_fill + decode kcache", kc, (size_t)B * NKV * Tmax, hs, keep, 0.0);
    check_rows("kv_fill + decode vcache", vc, (size_t)B * NKV * Tmax, hs, keep, 0.0);
    /* decode must equal the forward's row pos (GPU against GPU) */
    float *fo = nr_xmalloc(nout * sizeof(float)), *dg = nr_xmalloc((size_t)B * C * sizeof(float));
    GPU->download(fo, out.g, nout * sizeof(float));
    GPU->download(dg, dec.g, (size_t)B * C * sizeof(float));
    double err = 0.0;
    long bad = 0;
    for (int b = 0; b < B; b++) {
        long bb = 0;
        double e = rel_err_rows(fo + ((size_t)b * T + pos) * C, dg + (size_t)b * C, 1, C, 0, &bb);
        bad += bb;
        if (!(e <= err)) err = e;
    }
    verdict("cuda decode == cuda forward row pos", bad == 0 && err <= TOL, "rel err %.2e (tol %.0e)", err, TOL);
    free(h); free(hp); free(hq); free(keep); free(fo); free(dg);
    pair_free(inp); pair_free(out); pair_free(pre); pair_free(att); pair_free(dout); pair_free(dinp);
    pair_free(dpre); pair_free(datt); pair_free(kc); pair_free(vc); pair_free(pref); pair_free(q);
    pair_free(dec);
}

/* attention_decode alone at positions check_attention (T ≤ 300) never
 * reaches: pos ≥ 1024 takes the CPU's chunked online softmax (DECODE_CHUNK
 * in attention.c, running sums rescaled when a chunk raises the maximum);
 * pos ≥ 12288 needs over 48 KiB of dynamic shared memory for its (pos + 1)
 * scores, so the CUDA wrapper opts in (cudaFuncSetAttribute, attention.cu)
 * before the launch; pos 51199 fills that 200 KiB limit exactly. The caches
 * are random (B, NH, Tmax, hs) arrays uploaded to both backends: no T²
 * buffer and no prefix forward (kv_fill is checked in check_attention). */
static void check_decode_long(int B, int C, int NH, int NKV, int pos) {
    char nm[160];
    const int Tmax = pos + 9, hs = C / NH;
    const size_t ncache = (size_t)B * NKV * Tmax * hs;
    Pair kc = pair_rand(ncache, -1.5f, 1.5f), vc = pair_rand(ncache, -1.5f, 1.5f);
    Pair q = pair_rand((size_t)B * (C + 2 * NKV * hs), -1.5f, 1.5f), dec = pair_nan((size_t)B * C);
    CPU->attention_decode(dec.c, kc.c, vc.c, q.c, NULL, NULL, B, pos, Tmax, C, NH, NKV);
    GPU->attention_decode(dec.g, kc.g, vc.g, q.g, NULL, NULL, B, pos, Tmax, C, NH, NKV);
    /* out = Σ att·v over pos + 1 terms, summed serially in fp32 on both sides
     * (the GPU one thread per channel, the CPU per chunk, rescaled), so their
     * rounding grows like 2^-24·√(pos + 1) relative to out. TOL up to pos
     * 1023, then TOL·√((pos + 1)/1024): 1.2e-5, 3.5e-5 and 7.1e-5 at pos
     * 1500, 12400 and 51199, where the CPU emulation of the kernels (FMA
     * contraction, expf moved by ±4 ulp) gives about 2e-6, 4e-6 and 1.5e-5
     * (4.7x or more under; TOL itself would fail at 51199). A broken long path
     * errs far more: leaving out one of 51200 positions gave 3.5e-3. */
    const double tol = TOL * fmax(1.0, sqrt((pos + 1) / 1024.0));
    long bad = 0;
    double err = pair_rel_err(dec, &bad);
    snprintf(nm, sizeof nm, "attention_decode out B%d pos%d Tmax%d C%d NH%d NKV%d (%zu B smem)%s", B, pos, Tmax, C,
             NH, NKV, (size_t)(pos + 1) * sizeof(float), bad ? " (non-finite)" : "");
    verdict(nm, bad == 0 && err <= tol, "rel err %.2e (tol %.1e)", err, tol);
    check("attention_decode kcache (pos written, rest kept)", kc, 0.0);
    check("attention_decode vcache (pos written, rest kept)", vc, 0.0);
    pair_free(kc); pair_free(vc); pair_free(q); pair_free(dec);
}

/* n 7s on both sides: an output whose untouched entries show */
static Pair pair_sevens(size_t n) {
    float *seven = nr_xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) seven[i] = 7.0f;
    Pair p = pair_from(seven, n);
    free(seven);
    return p;
}

/* the decode GEMM: the first OC columns of out (N, ldo) as the CPU's (cuBLAS against the CPU's narrow kernel
   or sgemm: the sums' order differs), the padding columns [OC, ldo) untouched on both (they start at 7) */
static void check_matmul_decode(int N, int IC, int OC, int ldo, int with_bias) {
    char nm[128];
    Pair inp = pair_rand((size_t)N * IC, -1, 1), w = pair_rand((size_t)OC * IC, -0.5f, 0.5f);
    Pair bias = pair_rand((size_t)OC, -1, 1), out = pair_sevens((size_t)N * ldo);
    CPU->matmul_decode(out.c, inp.c, w.c, with_bias ? bias.c : NULL, N, IC, OC, ldo);
    GPU->matmul_decode(out.g, inp.g, w.g, with_bias ? bias.g : NULL, N, IC, OC, ldo);
    snprintf(nm, sizeof nm, "matmul_decode N%d IC%d OC%d ldo%d%s (padding columns kept)", N, IC, OC, ldo,
             with_bias ? " +b" : "");
    check(nm, out, TOL);
    pair_free(inp); pair_free(w); pair_free(bias); pair_free(out);
}

/* the bf16 GEMM: to_bf16 rounds the weights alike, and the outputs are the CPU's bits exactly (both sum in the
   pair-dot order of decode_bf16.c over bf16-rounded inputs); the padding columns [OC, ldo) untouched */
static void check_matmul_bf16(int N, int IC, int OC, int ldo, int with_bias) {
    char nm[128];
    Pair inp = pair_rand((size_t)N * IC, -1, 1), w = pair_rand((size_t)OC * IC, -0.5f, 0.5f);
    Pair bias = pair_rand((size_t)OC, -1, 1), out = pair_sevens((size_t)N * ldo);
    size_t nw = (size_t)OC * IC;
    uint16_t *wc = CPU->alloc(nw * sizeof(uint16_t)), *wg = GPU->alloc(nw * sizeof(uint16_t));
    uint16_t *hc = nr_xmalloc(nw * sizeof(uint16_t)), *hg = nr_xmalloc(nw * sizeof(uint16_t));
    CPU->to_bf16(wc, w.c, nw);
    GPU->to_bf16(wg, w.g, nw);
    CPU->download(hc, wc, nw * sizeof(uint16_t));
    GPU->download(hg, wg, nw * sizeof(uint16_t));
    snprintf(nm, sizeof nm, "to_bf16 of %zu weights", nw);
    verdict(nm, memcmp(hc, hg, nw * sizeof(uint16_t)) == 0, "the same bits", 0, 0);
    CPU->matmul_decode_bf16(out.c, inp.c, wc, with_bias ? bias.c : NULL, N, IC, OC, ldo);
    GPU->matmul_decode_bf16(out.g, inp.g, wg, with_bias ? bias.g : NULL, N, IC, OC, ldo);
    float *oc, *og;
    pair_download(out, &oc, &og);
    size_t differ = 0;
    for (size_t i = 0; i < out.n; i++) differ += memcmp(&oc[i], &og[i], sizeof oc[i]) != 0;
    snprintf(nm, sizeof nm, "matmul_decode_bf16 N%d IC%d OC%d ldo%d%s (bits; padding columns kept)", N, IC, OC, ldo,
             with_bias ? " +b" : "");
    verdict(nm, differ == 0, "%.0f of %.0f floats differ in bits", (double)differ, (double)out.n);
    free(oc), free(og), free(hc), free(hg);
    CPU->free(wc), GPU->free(wg);
    pair_free(inp); pair_free(w); pair_free(bias); pair_free(out);
}

/* attention_decode of B rows at cache slots (rows that left the batch are not among them) in a cache of
   Bmax sequences: the output as the CPU's, and both caches written at the slots' position pos only; with
   spread > 0 row i sits at position pos − i mod (spread + 1) (prompts of different lengths) */
static void check_decode_slots(int B, int Bmax, int C, int NH, int NKV, int pos, int spread) {
    char nm[160];
    const int Tmax = pos + 3, hs = C / NH;
    const size_t ncache = (size_t)Bmax * NKV * Tmax * hs;
    int *slots = nr_xmalloc((size_t)B * sizeof(int));
    for (int i = 0; i < B; i++) slots[i] = Bmax - B + i - (i == 0 && Bmax - B > 1); /* a gap after the first */
    IPair sl = ipair_from(slots, (size_t)B);
    int *rowpos = nr_xmalloc((size_t)B * sizeof(int));
    for (int i = 0; i < B; i++) rowpos[i] = pos - i % (spread + 1);
    IPair rp = ipair_from(rowpos, (size_t)B);
    Pair kc = pair_rand(ncache, -1.5f, 1.5f), vc = pair_rand(ncache, -1.5f, 1.5f);
    Pair q = pair_rand((size_t)B * (C + 2 * NKV * hs), -1.5f, 1.5f), dec = pair_nan((size_t)B * C);
    CPU->attention_decode(dec.c, kc.c, vc.c, q.c, sl.c, spread ? rp.c : NULL, B, pos, Tmax, C, NH, NKV);
    GPU->attention_decode(dec.g, kc.g, vc.g, q.g, sl.g, spread ? rp.g : NULL, B, pos, Tmax, C, NH, NKV);
    snprintf(nm, sizeof nm, "attention_decode at slots B%d of %d pos%d%s C%d NH%d NKV%d", B, Bmax, pos,
             spread ? " (rows at their own positions)" : "", C, NH, NKV);
    check(nm, dec, TOL);
    check("attention_decode at slots: kcache (the slots' pos written, rest kept)", kc, 0.0);
    check("attention_decode at slots: vcache (the slots' pos written, rest kept)", vc, 0.0);
    ipair_free(sl); ipair_free(rp);
    free(slots); free(rowpos);
    pair_free(kc); pair_free(vc); pair_free(q); pair_free(dec);
}

/* RMSNorm on N groups of H rows of C, ld apart (backend.h): H = 1, ld = C is
 * a plain (N, C) tensor, H > 1 the heads of packed QKV rows (Qwen3's QK-norm).
 * ld is a multiple of C here, so the buffer is rows of C: those of the layout
 * are compared, the gaps between them start as NaN and must stay NaN. */
static void check_rmsnorm(int N, int H, int C, int ld) {
    char nm[128];
    const size_t n = (size_t)N * ld, rows = n / C;
    Pair inp = pair_rand(n, -2, 3), w = pair_rand(C, 0.5f, 1.5f), out = pair_nan(n), rstd = pair_nan((size_t)N * H);
    CPU->rmsnorm_forward(out.c, rstd.c, inp.c, w.c, N, H, C, ld, 1e-6f);
    GPU->rmsnorm_forward(out.g, rstd.g, inp.g, w.g, N, H, C, ld, 1e-6f);
    int *keep = nr_xcalloc(rows, sizeof(int));
    for (size_t r = 0; r < rows; r++) keep[r] = (int)(r % (size_t)(ld / C)) < H;
    snprintf(nm, sizeof nm, "rmsnorm_forward out N%d H%d C%d ld%d", N, H, C, ld);
    check_rows(nm, out, rows, C, keep, TOL);
    float *hg = nr_xmalloc(n * sizeof(float));
    GPU->download(hg, out.g, n * sizeof(float));
    long written = 0;
    for (size_t j = 0; j < n; j++) written += !keep[j / C] && !isnan(hg[j]);
    verdict("rmsnorm_forward leaves the gaps between rows", written == 0, "%.0f written", (double)written, 0);
    check("rmsnorm_forward rstd", rstd, TOL);
    Pair dout = pair_rand(n, -1, 1), dinp = pair_rand(n, -1, 1), dw = pair_rand(C, -1, 1);
    CPU->rmsnorm_backward(dinp.c, dw.c, dout.c, inp.c, w.c, rstd.c, N, H, C, ld);
    GPU->rmsnorm_backward(dinp.g, dw.g, dout.g, inp.g, w.g, rstd.g, N, H, C, ld);
    snprintf(nm, sizeof nm, "rmsnorm_backward dinp N%d H%d C%d ld%d", N, H, C, ld);
    check(nm, dinp, TOL);
    check("rmsnorm_backward dweight", dw, TOL);
    free(keep);
    free(hg);
    pair_free(inp); pair_free(w); pair_free(out); pair_free(rstd);
    pair_free(dout); pair_free(dinp); pair_free(dw);
}

/* RoPE in place on NH heads at the start of rows of ld, positions pos0 + t;
 * inv_freq random in (1e-4, 1] with inv_freq[0] = 1, so that angles reach pos0 */
static void check_rope(int B, int T, int NH, int hs, int ld, int pos0) {
    char nm[128];
    const size_t n = (size_t)B * T * ld;
    float *hf = h_rand((size_t)hs / 2, 1e-4f, 1.0f);
    hf[0] = 1.0f;
    Pair invf = pair_from(hf, (size_t)hs / 2), x = pair_rand(n, -2, 2), dx = pair_rand(n, -1, 1);
    CPU->rope_forward(x.c, invf.c, B, T, NH, hs, ld, pos0);
    GPU->rope_forward(x.g, invf.g, B, T, NH, hs, ld, pos0);
    snprintf(nm, sizeof nm, "rope_forward B%d T%d NH%d hs%d ld%d pos0 %d", B, T, NH, hs, ld, pos0);
    check(nm, x, TOL);
    CPU->rope_backward(dx.c, invf.c, B, T, NH, hs, ld, pos0);
    GPU->rope_backward(dx.g, invf.g, B, T, NH, hs, ld, pos0);
    snprintf(nm, sizeof nm, "rope_backward B%d T%d NH%d hs%d ld%d pos0 %d", B, T, NH, hs, ld, pos0);
    check(nm, dx, TOL);
    free(hf);
    pair_free(invf); pair_free(x); pair_free(dx);
}

static void check_swiglu(int N, int F) {
    char nm[128];
    Pair inp = pair_rand((size_t)N * 2 * F, -8, 8), out = pair_nan((size_t)N * F);
    CPU->swiglu_forward(out.c, inp.c, N, F);
    GPU->swiglu_forward(out.g, inp.g, N, F);
    snprintf(nm, sizeof nm, "swiglu_forward N%d F%d", N, F);
    check(nm, out, TOL);
    Pair dout = pair_rand((size_t)N * F, -1, 1), dinp = pair_rand((size_t)N * 2 * F, -1, 1);
    CPU->swiglu_backward(dinp.c, dout.c, inp.c, N, F);
    GPU->swiglu_backward(dinp.g, dout.g, inp.g, N, F);
    snprintf(nm, sizeof nm, "swiglu_backward dinp N%d F%d", N, F);
    check(nm, dinp, TOL);
    pair_free(inp); pair_free(out); pair_free(dout); pair_free(dinp);
}

/* TF32 must take effect. The random TF32 matmuls pass TOL_TF32 whether or not
 * the tensor cores round to TF32 (fp32 is within 1e-6), so this probe sets
 * every input to x = 1 + 2^-12 and every weight to 1, no bias. In fp32 each
 * partial sum k·x = k + k·2^-12 (k ≤ IC < 1024) is a multiple of 2^-12 below
 * 1024, where fp32's spacing is at most 2^-14: every summation order, split
 * or FMA gives IC·x exactly (768.1875 for IC 768), as the CPU does. TF32
 * keeps 10 mantissa bits, so x reads as 1 (round to nearest or truncation)
 * and every output is IC exactly: a relative difference of
 * 2^-12/(1 + 2^-12) = 2.44e-4. The TF32 line needs the largest difference
 * ≥ 1e-4 (and ≤ TOL_TF32): with TF32 silently off it is exactly 0, so it
 * cannot pass vacuously, and both outcomes are exact, so it cannot flake.
 * The fp32 line is the control: the same inputs with TF32 off give exactly
 * the CPU's values, so the floor is above what fp32 reaches. The shape is
 * that of the random TF32 check (cuBLAS picks kernels by shape). Leaves
 * TF32 off. */
static void check_tf32_engaged(int N, int IC, int OC) {
    char nm[160];
    float *h = nr_xmalloc((size_t)N * IC * sizeof(float) + (size_t)OC * IC * sizeof(float));
    const float x = 1.0f + 0x1p-12f;
    for (size_t i = 0; i < (size_t)N * IC; i++) h[i] = x;
    for (size_t i = 0; i < (size_t)OC * IC; i++) h[(size_t)N * IC + i] = 1.0f;
    Pair inp = pair_from(h, (size_t)N * IC), w = pair_from(h + (size_t)N * IC, (size_t)OC * IC);
    Pair out = pair_nan((size_t)N * OC);
    for (int mode = 0; mode < 2; mode++) {
        backend_cuda_set_tf32(mode);
        pair_poison(out);
        CPU->matmul_forward(out.c, inp.c, w.c, NULL, N, IC, OC);
        GPU->matmul_forward(out.g, inp.g, w.g, NULL, N, IC, OC);
        long bad = 0;
        double err = pair_rel_err(out, &bad);
        if (mode == 0) {
            snprintf(nm, sizeof nm, "matmul_forward fp32 N%d IC%d OC%d, x = 1+2^-12: exact", N, IC, OC);
            verdict(nm, bad == 0 && err == 0.0, "rel diff %.2e (want %.0e)", err, 0);
        } else {
            snprintf(nm, sizeof nm, "matmul_forward tf32 N%d IC%d OC%d, x = 1+2^-12: rounded", N, IC, OC);
            verdict(nm, bad == 0 && err >= 1e-4 && err <= TOL_TF32, "rel diff %.2e (floor %.0e)", err, 1e-4);
        }
    }
    backend_cuda_set_tf32(0);
    free(h);
    pair_free(inp); pair_free(w); pair_free(out);
}

static void check_encoder(int B, int T, int C, int V, int maxT, int pos0) {
    int *tok = nr_xmalloc((size_t)B * T * sizeof(int));
    for (int i = 0; i < B * T; i++) tok[i] = rng_below(4242, RNG_TEST, 777, (uint64_t)i, V);
    tok[1] = tok[0]; /* a repeat for certain */
    IPair it = ipair_from(tok, (size_t)B * T);
    Pair wte = pair_rand((size_t)V * C, -1, 1), wpe = pair_rand((size_t)maxT * C, -1, 1);
    Pair out = pair_nan((size_t)B * T * C);
    CPU->encoder_forward(out.c, it.c, wte.c, wpe.c, B, T, C, pos0);
    GPU->encoder_forward(out.g, it.g, wte.g, wpe.g, B, T, C, pos0);
    check("encoder_forward", out, TOL);
    Pair dout = pair_rand((size_t)B * T * C, -1, 1);
    CPU->encoder_backward(wte.c, wpe.c, dout.c, it.c, B, T, C, pos0);
    GPU->encoder_backward(wte.g, wpe.g, dout.g, it.g, B, T, C, pos0);
    check("encoder_backward dwte", wte, TOL);
    check("encoder_backward dwpe", wpe, TOL);
    /* determinism: the same call twice from the same start gives the same bits */
    size_t nw = (size_t)V * C;
    float *a = nr_xmalloc(nw * sizeof(float)), *b2 = nr_xmalloc(nw * sizeof(float));
    GPU->zero(wte.g, nw * sizeof(float));
    GPU->encoder_backward(wte.g, NULL, dout.g, it.g, B, T, C, pos0);
    GPU->download(a, wte.g, nw * sizeof(float));
    GPU->zero(wte.g, nw * sizeof(float));
    GPU->encoder_backward(wte.g, NULL, dout.g, it.g, B, T, C, pos0);
    GPU->download(b2, wte.g, nw * sizeof(float));
    verdict("encoder_backward dwte deterministic", !memcmp(a, b2, nw * sizeof(float)), "", 0, 0);
    free(a); free(b2); free(tok);
    ipair_free(it); pair_free(wte); pair_free(wpe); pair_free(out); pair_free(dout);
}

static void check_logprob(int N, int V, int with_ent, int alias) {
    char nm[160];
    int *tg = nr_xmalloc((size_t)N * sizeof(int)), *keep = nr_xmalloc((size_t)N * sizeof(int));
    for (int n = 0; n < N; n++) {
        tg[n] = n == 1 ? -1 : rng_below(4242, RNG_TEST, 778, (uint64_t)n, V);
        keep[n] = tg[n] >= 0;
    }
    IPair t = ipair_from(tg, N);
    Pair logits = pair_rand((size_t)N * V, -8, 8);
    Pair probs = alias ? logits : pair_nan((size_t)N * V);
    Pair logp = pair_nan(N), ent = pair_nan(N);
    CPU->logprob_forward(probs.c, logp.c, with_ent ? ent.c : NULL, logits.c, t.c, N, V, V);
    GPU->logprob_forward(probs.g, logp.g, with_ent ? ent.g : NULL, logits.g, t.g, N, V, V);
    snprintf(nm, sizeof nm, "logprob_forward probs N%d V%d%s%s", N, V, with_ent ? " +ent" : "", alias ? " alias" : "");
    check_rows(nm, probs, N, V, keep, TOL);
    /* probs per element: p = expf(x − max)·(float)(1/S), S summed in double
     * on both sides, so p differs only by expf (CUDA ≤ 2 ulp, glibc < 1) and
     * the last rounding: a few ulp. The CPU emulation of the kernel with expf
     * moved by ±4 ulp gives ≤ 6.5e-7: TOL leaves 15x. Logits in [−8, 8] put
     * the smallest p near 4e-11 (V 50257), far above the 1e-30 under which
     * only an absolute 1e-35 is asked (underflow). */
    snprintf(nm, sizeof nm, "logprob_forward probs N%d V%d%s (per element)", N, V, alias ? " alias" : "");
    check_elem(nm, probs, N, V, keep, TOL, 1e-30);
    check("logprob_forward logp", logp, TOL);
    if (with_ent) check("logprob_forward ent", ent, TOL);
    Pair dlogp = pair_rand(N, -1, 1), dent = pair_rand(N, -1, 1);
    Pair dl = alias ? probs : pair_nan((size_t)N * V);
    /* backward with dent, and ent given (with_ent) or recomputed from probs */
    CPU->logprob_backward(dl.c, dlogp.c, dent.c, probs.c, with_ent ? ent.c : NULL, t.c, N, V, V);
    GPU->logprob_backward(dl.g, dlogp.g, dent.g, probs.g, with_ent ? ent.g : NULL, t.g, N, V, V);
    snprintf(nm, sizeof nm, "logprob_backward N%d V%d%s%s", N, V, with_ent ? " ent" : " ent recomputed",
             alias ? " alias" : "");
    check(nm, dl, TOL);
    if (!alias) { /* dent NULL */
        pair_poison(dl);
        CPU->logprob_backward(dl.c, dlogp.c, NULL, probs.c, NULL, t.c, N, V, V);
        GPU->logprob_backward(dl.g, dlogp.g, NULL, probs.g, NULL, t.g, N, V, V);
        check("logprob_backward dent NULL", dl, TOL);
        pair_free(dl);
        pair_free(probs);
    }
    free(tg); free(keep);
    ipair_free(t); pair_free(logits); pair_free(logp); pair_free(ent); pair_free(dlogp); pair_free(dent);
}

/* rows of ld floats whose columns [V, ld) are padding (llm.c's Vp) holding the largest logits: log-probs,
 * entropies and the gradient (0 on the padding) as the CPU's, and no padding id sampled */
static void check_padded_vocab(int N, int V, int ld) {
    char nm[128];
    int *tg = nr_xmalloc((size_t)N * sizeof(int));
    for (int n = 0; n < N; n++) tg[n] = n == 1 ? -1 : rng_below(4243, RNG_TEST, 779, (uint64_t)n, V);
    float *h = h_rand((size_t)N * ld, -8, 8);
    for (int n = 0; n < N; n++)
        for (int i = V; i < ld; i++) h[(size_t)n * ld + i] = 60.0f;
    IPair t = ipair_from(tg, N);
    Pair logits = pair_from(h, (size_t)N * ld), logp = pair_nan(N), ent = pair_nan(N), u = pair_rand(N, 0, 1);
    Pair dlogp = pair_rand(N, -1, 1), dent = pair_rand(N, -1, 1);
    int *init = nr_xmalloc((size_t)N * sizeof(int)), *oc = nr_xmalloc((size_t)N * sizeof(int));
    int *og = nr_xmalloc((size_t)N * sizeof(int));
    for (int n = 0; n < N; n++) init[n] = -7;
    IPair out = ipair_from(init, N);
    CPU->sample_tokens(out.c, logits.c, u.c, N, V, ld, 1.0f, 0);
    GPU->sample_tokens(out.g, logits.g, u.g, N, V, ld, 1.0f, 0);
    CPU->download(oc, out.c, (size_t)N * sizeof(int));
    GPU->download(og, out.g, (size_t)N * sizeof(int));
    int bad = 0;
    for (int n = 0; n < N; n++) bad += oc[n] != og[n] || og[n] < 0 || og[n] >= V;
    snprintf(nm, sizeof nm, "sample_tokens padded N%d V%d ld%d", N, V, ld);
    verdict(nm, bad == 0, "%.0f rows differ or sample padding", bad, 0);
    CPU->logprob_forward(logits.c, logp.c, ent.c, logits.c, t.c, N, V, ld);
    GPU->logprob_forward(logits.g, logp.g, ent.g, logits.g, t.g, N, V, ld);
    check("logprob_forward padded logp", logp, TOL);
    check("logprob_forward padded ent", ent, TOL);
    CPU->logprob_backward(logits.c, dlogp.c, dent.c, logits.c, ent.c, t.c, N, V, ld);
    GPU->logprob_backward(logits.g, dlogp.g, dent.g, logits.g, ent.g, t.g, N, V, ld);
    check("logprob_backward padded (padding gradient 0)", logits, TOL);
    free(h); free(tg); free(init); free(oc); free(og);
    ipair_free(t); ipair_free(out);
    pair_free(logits); pair_free(logp); pair_free(ent); pair_free(u); pair_free(dlogp); pair_free(dent);
}

static void check_sample(int B, int V, float temperature, int top_k, int ties) {
    char nm[128];
    float *h = h_rand((size_t)B * V, -6, 6);
    if (ties) /* few distinct values: ties at the top_k threshold */
        for (size_t i = 0; i < (size_t)B * V; i++) h[i] = roundf(h[i]);
    Pair logits = pair_from(h, (size_t)B * V), u = pair_rand(B, 0, 1);
    int *oc = nr_xmalloc((size_t)B * sizeof(int)), *og = nr_xmalloc((size_t)B * sizeof(int));
    int *init = nr_xmalloc((size_t)B * sizeof(int));
    for (int b = 0; b < B; b++) init[b] = -7;
    IPair out = ipair_from(init, B);
    CPU->sample_tokens(out.c, logits.c, u.c, B, V, V, temperature, top_k);
    GPU->sample_tokens(out.g, logits.g, u.g, B, V, V, temperature, top_k);
    CPU->download(oc, out.c, (size_t)B * sizeof(int));
    GPU->download(og, out.g, (size_t)B * sizeof(int));
    int diff = 0;
    for (int b = 0; b < B; b++) diff += oc[b] != og[b];
    snprintf(nm, sizeof nm, "sample_tokens B%d V%d temp %.2g top_k %d%s", B, V, temperature, top_k,
             ties ? " ties" : "");
    verdict(nm, diff == 0, "%.0f rows differ", diff, 0);
    free(h); free(oc); free(og); free(init);
    pair_free(logits); pair_free(u); ipair_free(out);
}

/* compare one scalar in backend memory */
static void check_scalar(const char *name, const float *c, const float *g, double tol) {
    float a, b;
    CPU->download(&a, c, sizeof a);
    GPU->download(&b, g, sizeof b);
    double err = fabs((double)a - b) / (fabs(a) > 0 ? fabs(a) : 1.0);
    verdict(name, isfinite(b) && err <= tol, "rel err %.2e (tol %.0e)", err, tol);
}

static void check_ppo(int N, int expect_clipping) {
    Pair lp = pair_rand(N, -3, -0.1f), lpo = pair_rand(N, -3, -0.1f), adv = pair_rand(N, -2, 2);
    Pair w = pair_rand(N, 0, 1.0f / N);
    Pair loss = pair_nan(1), dlogp = pair_nan(N), cf = pair_nan(1), kl = pair_nan(1);
    CPU->ppo_policy_loss(loss.c, dlogp.c, cf.c, kl.c, lp.c, lpo.c, adv.c, w.c, N, 0.2f, 0.28f);
    GPU->ppo_policy_loss(loss.g, dlogp.g, cf.g, kl.g, lp.g, lpo.g, adv.g, w.g, N, 0.2f, 0.28f);
    check_scalar("ppo_policy_loss loss", loss.c, loss.g, TOL);
    check("ppo_policy_loss dlogp", dlogp, TOL);
    check_scalar("ppo_policy_loss clipfrac", cf.c, cf.g, TOL);
    check_scalar("ppo_policy_loss approx_kl", kl.c, kl.g, TOL);
    float cfh = 0;
    CPU->download(&cfh, cf.c, sizeof cfh);
    if (expect_clipping) verdict("ppo_policy_loss exercises clipping", cfh > 0.05f && cfh < 0.95f, "clipfrac %.3f", cfh, 0);
    Pair v = pair_rand(N, -1, 1), vo = pair_rand(N, -1, 1), ret = pair_rand(N, -1, 1), dv = pair_nan(N);
    pair_poison(loss);
    CPU->ppo_value_loss(loss.c, dv.c, v.c, vo.c, ret.c, w.c, N, 0.2f);
    GPU->ppo_value_loss(loss.g, dv.g, v.g, vo.g, ret.g, w.g, N, 0.2f);
    check_scalar("ppo_value_loss loss", loss.c, loss.g, TOL);
    check("ppo_value_loss dv", dv, TOL);
    pair_free(lp); pair_free(lpo); pair_free(adv); pair_free(w); pair_free(loss); pair_free(dlogp);
    pair_free(cf); pair_free(kl); pair_free(v); pair_free(vo); pair_free(ret); pair_free(dv);
}

static void check_adamw(size_t n) {
    Pair p = pair_rand(n, -1, 1), g = pair_rand(n, -0.1f, 0.1f), m = pair_rand(n, -0.01f, 0.01f);
    Pair v = pair_rand(n, 0, 1e-4f);
    for (int t = 1; t <= 3; t++) {
        CPU->adamw_update(p.c, g.c, m.c, v.c, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.7f, t);
        GPU->adamw_update(p.g, g.g, m.g, v.g, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.7f, t);
    }
    check("adamw_update params (3 steps)", p, TOL);
    check("adamw_update m", m, TOL);
    check("adamw_update v", v, TOL);
    pair_free(p); pair_free(g); pair_free(m); pair_free(v);
}

static void check_sumsq(size_t n) {
    Pair g = pair_rand(n, -1, 1);
    double a = CPU->sumsq(g.c, n), b = GPU->sumsq(g.g, n), b2 = GPU->sumsq(g.g, n);
    double err = fabs(a - b) / a;
    verdict("sumsq", err <= 1e-10, "rel err %.2e (tol %.0e)", err, 1e-10);
    verdict("sumsq deterministic (bitwise, twice)", !memcmp(&b, &b2, sizeof b), "", 0, 0);
    pair_free(g);
}

/* ---- GEMM benchmark ------------------------------------------------------- */

static double time_ms(void (*fn)(void *), void *arg, int iters) {
    cudaEvent_t e0, e1;
    cudaCheck(cudaEventCreate(&e0));
    cudaCheck(cudaEventCreate(&e1));
    fn(arg); /* warm-up */
    cudaCheck(cudaEventRecord(e0, 0));
    for (int i = 0; i < iters; i++) fn(arg);
    cudaCheck(cudaEventRecord(e1, 0));
    cudaCheck(cudaEventSynchronize(e1));
    float ms = 0;
    cudaCheck(cudaEventElapsedTime(&ms, e0, e1));
    cudaCheck(cudaEventDestroy(e0));
    cudaCheck(cudaEventDestroy(e1));
    return ms / iters;
}

typedef struct {
    float *out, *inp, *w, *bias;
    int N, IC, OC;
    cublasHandle_t h;
} Gemm;

static void run_backend(void *a) {
    Gemm *g = a;
    GPU->matmul_forward(g->out, g->inp, g->w, g->bias, g->N, g->IC, g->OC);
}

static void run_bare(void *a) {
    Gemm *g = a;
    const float one = 1.0f, zero = 0.0f;
    cublasCheck(cublasSgemm(g->h, CUBLAS_OP_T, CUBLAS_OP_N, g->OC, g->N, g->IC, &one, g->w, g->IC, g->inp,
                            g->IC, &zero, g->out, g->OC));
}

static void gemm_bench(void) {
    static const struct { const char *name; int IC, OC, bias; } shapes[] = {
        {"qkv", 768, 2304, 1}, {"attproj", 768, 768, 1}, {"fc", 768, 3072, 1},
        {"fcproj", 3072, 768, 1}, {"lm_head", 768, 50257, 0},
    };
    static const int Ns[] = {4 * 64, 8 * 1024};
    cublasHandle_t h;
    cublasCheck(cublasCreate(&h));
    printf("\nGEMM matmul_forward vs bare cublasSgemm (GPT-2 124M shapes; TFLOP/s = 2·N·IC·OC / time)\n");
    printf("%-8s %6s %6s %6s %5s %12s %12s %7s\n", "layer", "N", "IC", "OC", "math", "backend", "cublas", "ratio");
    for (int mode = 0; mode < 2; mode++) {
        backend_cuda_set_tf32(mode);
        cublasCheck(cublasSetMathMode(h, mode ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
        for (size_t ni = 0; ni < sizeof Ns / sizeof Ns[0]; ni++)
            for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
                Gemm g = {0};
                g.N = Ns[ni]; g.IC = shapes[si].IC; g.OC = shapes[si].OC; g.h = h;
                g.out = GPU->alloc((size_t)g.N * g.OC * sizeof(float));
                g.inp = GPU->alloc((size_t)g.N * g.IC * sizeof(float));
                g.w = GPU->alloc((size_t)g.OC * g.IC * sizeof(float));
                g.bias = shapes[si].bias ? GPU->alloc((size_t)g.OC * sizeof(float)) : NULL;
                double flop = 2.0 * g.N * g.IC * g.OC;
                int iters = flop > 1e11 ? 10 : 50;
                double tb = time_ms(run_backend, &g, iters), tc = time_ms(run_bare, &g, iters);
                printf("%-8s %6d %6d %6d %5s %12.1f %12.1f %7.3f\n", shapes[si].name, g.N, g.IC, g.OC,
                       mode ? "tf32" : "fp32", flop / tb / 1e9, flop / tc / 1e9, tc / tb);
                GPU->free(g.out); GPU->free(g.inp); GPU->free(g.w);
                if (g.bias) GPU->free(g.bias);
            }
    }
    printf("(ratio = cublas time / backend time; the backend adds the bias broadcast)\n");
    backend_cuda_set_tf32(0);
    cublasCheck(cublasDestroy(h));
}

/* ---- NCCL ------------------------------------------------------------------ */

static void check_nccl(void) {
#ifdef NEREUS_NCCL
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    ncclComm_t comm;
    nccl_comm_from_mpi(MPI_COMM_WORLD, &comm);
    const size_t n = 4099;
    float *h = nr_xmalloc(n * sizeof(float)), *d = GPU->alloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) h[i] = 0.5f * (float)i - 7.0f;
    GPU->upload(d, h, n * sizeof(float));
    nccl_allreduce_sum(comm, d, n, 0);
    GPU->download(h, d, n * sizeof(float));
    int ok = 1;
    for (size_t i = 0; i < n; i++) ok &= h[i] == (float)size * (0.5f * (float)i - 7.0f);
    char nm[80];
    snprintf(nm, sizeof nm, "nccl allreduce-sum on %d rank(s)", size);
    verdict(nm, ok, "", 0, 0);
    nccl_comm_destroy(comm);
    GPU->free(d);
    free(h);
#else
    printf("note  NCCL not built: no NCCL check\n");
#endif
}

/* ---- device buffers across ranks: NCCL groups and host staging --------------- */

/* one verdict for all ranks: ok on every rank; rank 0 prints */
static void gverdict(const char *name, int ok) {
    int all = ok;
    mpiCheck(MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (nr_rank() == 0) verdict(name, all, "", 0, 0);
    else if (all) n_pass++;
    else n_fail++;
}

/* buf (n device floats) = base(i) on every rank, then a call; 1 when every
 * element is want(i) afterwards */
static float g_base(size_t i) { return 0.5f * (float)(i % 4099) - 7.0f; }

/* collective over MPI_COMM_WORLD (any number of ranks): an EMU with dp =
 * world size (tp = pp = 1) built with the CUDA layer registered; the f32,
 * f64 and int64 all-reduces, a broadcast and a ring of sends on device
 * buffers over its groups, which must take the path the probe chose (NCCL
 * groups, or host staging when no groups: NCCL missing, or ranks sharing a
 * GPU); a dup of a group communicator (no group: host staging) and a buffer
 * larger than one staging chunk; host buffers take plain MPI. One rank: the
 * NCCL all-reduce is the identity, the staging a round trip. */
static void check_groups(void) {
    int size = 1, me = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    const char *note = backend_cuda_groups_note();
    int groups = comm_device() && comm_device()->group_split != NULL;
    if (me == 0) {
        printf("note  device buffers across %d rank(s): %s\n", size, note);
        printf("note  one GPU cannot hold two ranks of one NCCL communicator (NCCL refuses a duplicate GPU): the "
               "NCCL paths are checked with one rank, host staging across ranks on a shared GPU\n");
    }
    gverdict("groups: the CUDA comm layer is registered", comm_device() && !strcmp(comm_device()->name, "cuda"));
    Emu e;
    int ranks[PLAN_MAX_RANKS];
    for (int i = 0; i < size; i++) ranks[i] = i;
    emu_build(&e, MPI_COMM_WORLD, "gpu-groups", (GridLayout){1, 1, size}, ranks);
    int have = 1;
    for (GridGroup g = GRID_TP; g < GRID_NGROUPS; g++) {
        MPI_Comm c = emu_comm(&e, g);
        if (c == MPI_COMM_NULL) continue;
        void *ng = comm_group(c);
        if (groups != (ng != NULL)) have = 0;
#ifdef NEREUS_NCCL
        if (ng && (nccl_comm_rank((ncclComm_t)ng) != comm_rank(c) || nccl_comm_size((ncclComm_t)ng) != comm_size(c)))
            have = 0;
#endif
    }
    gverdict(groups ? "groups: every EMU communicator has its NCCL group, same ranks"
                    : "groups: no EMU communicator has a group (staging)", have);
    const char *path = groups ? "nccl" : "staged";
    const size_t n = 4099, big = ((size_t)20 << 20) + 3; /* big: 80 MiB, over one 64 MiB staging chunk */
    float *h = nr_xmalloc(big * sizeof(float));
    float *d = GPU->alloc(big * sizeof(float));
    char nm[96];
    /* f32 sum over dp, the default and a cut chunk, then over a dup (no group) */
    MPI_Comm dup;
    mpiCheck(MPI_Comm_dup(e.dp, &dup));
    MPI_Comm cs[2] = {e.dp, dup};
    for (int which = 0; which < 2; which++)
        for (int sz = 0; sz < 2; sz++) {
            size_t m = sz ? big : n;
            for (size_t i = 0; i < m; i++) h[i] = g_base(i);
            GPU->upload(d, h, m * sizeof(float));
            comm_path_counts(1);
            comm_allreduce_sum_f32(cs[which], d, m);
            CommPathCounts pc = comm_path_counts(1);
            GPU->download(h, d, m * sizeof(float));
            int ok = which == 0 && groups ? pc.group == 1 && pc.staged == 0 : pc.staged == 1 && pc.group == 0;
            for (size_t i = 0; i < m && ok; i++) ok = h[i] == (float)size * g_base(i);
            snprintf(nm, sizeof nm, "groups: f32 sum, %zu floats, %s (%s)", m, which ? "dup'd dp" : "EMU dp",
                     which ? "staged" : path);
            gverdict(nm, ok);
        }
    mpiCheck(MPI_Comm_free(&dup));
    /* f64 sum and int64 max / min over all */
    double *dd = GPU->alloc(n * sizeof(double)), *hd = nr_xmalloc(n * sizeof(double));
    int64_t *dq = GPU->alloc(n * sizeof(int64_t)), *hq = nr_xmalloc(n * sizeof(int64_t));
    for (size_t i = 0; i < n; i++) hd[i] = 0.25 * (double)i + me;
    GPU->upload(dd, hd, n * sizeof(double));
    comm_allreduce_sum_f64(e.all, dd, n);
    GPU->download(hd, dd, n * sizeof(double));
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++) ok = hd[i] == size * 0.25 * (double)i + size * (size - 1) / 2.0;
    snprintf(nm, sizeof nm, "groups: f64 sum over EMU all (%s)", path);
    gverdict(nm, ok);
    for (int mx = 0; mx < 2; mx++) {
        for (size_t i = 0; i < n; i++) hq[i] = ((int64_t)i << 33) + (i % 2 ? me : -me);
        GPU->upload(dq, hq, n * sizeof(int64_t));
        if (mx) comm_allreduce_max_i64(e.all, dq, n);
        else comm_allreduce_min_i64(e.all, dq, n);
        GPU->download(hq, dq, n * sizeof(int64_t));
        ok = 1;
        for (size_t i = 0; i < n && ok; i++) {
            int64_t w = ((int64_t)i << 33) + ((i % 2) == (size_t)mx ? (i % 2 ? size - 1 : -(size - 1)) : 0);
            ok = hq[i] == w;
        }
        snprintf(nm, sizeof nm, "groups: int64 %s over EMU all (%s)", mx ? "max" : "min", path);
        gverdict(nm, ok);
    }
    /* broadcast from the last rank, then a ring of blocking sends */
    int root = size - 1;
    for (size_t i = 0; i < n; i++) h[i] = me == root ? g_base(i) + 1.0f : -1.0f;
    GPU->upload(d, h, n * sizeof(float));
    comm_bcast_f32(e.dp, d, n, root);
    GPU->download(h, d, n * sizeof(float));
    ok = 1;
    for (size_t i = 0; i < n && ok; i++) ok = h[i] == g_base(i) + 1.0f;
    snprintf(nm, sizeof nm, "groups: f32 broadcast over EMU dp (%s)", path);
    gverdict(nm, ok);
    if (size > 1) {
        float *d2 = GPU->alloc(n * sizeof(float));
        for (size_t i = 0; i < n; i++) h[i] = (float)(me * 10000) + (float)(i % 1000);
        GPU->upload(d, h, n * sizeof(float));
        int to = (me + 1) % size, from = (me + size - 1) % size;
        if (me % 2 == 0) {
            comm_send_f32(e.dp, d, n, to, 3);
            comm_recv_f32(e.dp, d2, n, from, 3);
        } else {
            comm_recv_f32(e.dp, d2, n, from, 3);
            comm_send_f32(e.dp, d, n, to, 3);
        }
        GPU->download(h, d2, n * sizeof(float));
        ok = 1;
        for (size_t i = 0; i < n && ok; i++) ok = h[i] == (float)(from * 10000) + (float)(i % 1000);
        snprintf(nm, sizeof nm, "groups: ring of sends over EMU dp (%s)", path);
        gverdict(nm, ok);
        GPU->free(d2);
    } else if (me == 0) {
        printf("note  one rank: no send / receive check (it needs a peer)\n");
    }
    /* host buffers with the CUDA layer registered: plain MPI */
    double x = 1.0;
    comm_path_counts(1);
    comm_allreduce_sum_f64(e.dp, &x, 1);
    CommPathCounts pc = comm_path_counts(1);
    gverdict("groups: a host buffer takes the plain MPI path", pc.host == 1 && !pc.staged && !pc.group && x == size);
    emu_free(&e);
    comm_group_detach(MPI_COMM_WORLD);
    gverdict("groups: freed with the EMU and detached from the job communicator", !comm_group(MPI_COMM_WORLD));
    GPU->free(d);
    GPU->free(dd);
    GPU->free(dq);
    free(h);
    free(hd);
    free(hq);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int bench = 1, groups_only = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--no-bench")) bench = 0;
        if (!strcmp(argv[i], "--groups")) groups_only = 1;
    }
    char why[512];
    GPU = backend_cuda_probe(why, sizeof why);
    if (!GPU) {
        if (nr_rank() == 0) printf("SKIP: no CUDA device (%s)\n", why);
        MPI_Finalize();
        return 77;
    }
    if (groups_only) { /* any number of ranks: mpirun -np 2 ... --groups */
        if (nr_rank() == 0) printf("parity --groups: %s on rank 0\n", backend_cuda_device_name());
        double tg = nr_now();
        check_groups();
        if (nr_rank() == 0)
            printf("groups: %d passed, %d failed (%.1f s)\n%s\n", n_pass, n_fail, nr_now() - tg,
                   n_fail ? "VERDICT: FAIL" : "VERDICT: PASS");
        MPI_Finalize();
        return n_fail ? 1 : 0;
    }
    CPU = backend_cpu();
    CPU->set_threads(4);
    printf("parity: CUDA backend on %s against the CPU backend\n", backend_cuda_device_name());
    double t0 = nr_now();

    check_memory();
    backend_cuda_set_tf32(0);
    check_matmul(100, 96, 70, 1, TOL, "fp32");
    check_matmul(97, 64, 33, 0, TOL, "fp32");
    check_matmul(256, 768, 3072, 1, TOL, "fp32");
    check_matmul(256, 3072, 768, 1, TOL, "fp32");
    backend_cuda_set_tf32(1);
    check_matmul(256, 768, 2304, 1, TOL_TF32, "tf32");
    check_matmul(100, 96, 70, 0, TOL_TF32, "tf32");
    check_tf32_engaged(256, 768, 2304); /* leaves TF32 off */
    check_layernorm(100, 768);
    check_layernorm(37, 50);
    check_pointwise(100003);
    check_attention(2, 37, 96, 4, 4);
    check_attention(2, 64, 768, 12, 12);
    check_attention(1, 300, 64, 2, 2);
    check_attention(2, 37, 96, 6, 2);     /* grouped-query, 3 query heads per key/value head */
    check_attention(2, 64, 512, 8, 1);    /* multi-query */
    check_decode_long(2, 128, 2, 2, 1500);   /* the CPU's chunked softmax */
    check_decode_long(2, 128, 2, 2, 12400);  /* over 48 KiB of shared memory */
    check_decode_long(1, 128, 2, 2, 51199);  /* the 200 KiB limit */
    check_decode_long(2, 256, 8, 2, 1500);   /* grouped-query */
    check_decode_slots(3, 6, 96, 4, 4, 40, 0);  /* rows left the batch: 3 of 6 cache slots */
    check_decode_slots(2, 5, 256, 8, 2, 17, 0); /* grouped-query */
    check_decode_slots(4, 6, 96, 4, 2, 33, 2);  /* prompts of different lengths: rows at positions 33, 32, 31, 33 */
    check_matmul_decode(1, 768, 2304, 2304, 1);
    check_matmul_decode(4, 768, 1000, 1024, 0); /* the LM head over the real vocabulary of a padded one */
    check_matmul_decode(7, 96, 70, 70, 1);     /* above the CPU's narrow path: sgemm */
    check_matmul_bf16(1, 768, 300, 300, 1);
    check_matmul_bf16(4, 768, 250, 256, 0);    /* the LM head over the real vocabulary of a padded one */
    check_matmul_bf16(7, 67, 70, 70, 1);       /* a tail of 3 columns after the blocks of 32 */
    check_rmsnorm(100, 1, 768, 768);
    check_rmsnorm(37, 1, 50, 50);
    check_rmsnorm(33, 8, 64, 1024);  /* q-norm: 8 heads of 64 in a packed GQA row (8 + 2·4 heads) */
    check_rmsnorm(33, 4, 64, 384);   /* k-norm-like, gaps after the heads */
    check_rope(2, 37, 12, 64, 1024, 0);   /* q and k heads (8 + 4) of a packed GQA row */
    check_rope(3, 5, 4, 128, 640, 9000);  /* decode-like, far positions */
    check_rope(1, 7, 3, 10, 40, 3);       /* hs/2 odd */
    check_swiglu(64, 768);
    check_swiglu(7, 1001);
    check_encoder(3, 17, 96, 50, 32, 5);
    check_encoder(4, 64, 768, 50257, 1024, 0);
    check_logprob(7, 100, 1, 0);
    check_logprob(9, 50257, 1, 0);
    check_logprob(9, 50257, 0, 0);
    check_logprob(5, 1000, 1, 1);
    const int Vs[] = {1000, 50257};
    for (int vi = 0; vi < 2; vi++) {
        int V = Vs[vi];
        check_sample(64, V, 1.0f, 0, 0);
        check_sample(64, V, 0.7f, 50, 0);
        check_sample(64, V, 1.3f, 300, 0);
        check_sample(64, V, 1.0f, V, 0);
        check_sample(64, V, 0.0f, 0, 0);
        check_sample(64, V, 1.0f, 1, 0);
        check_sample(64, V, 1.0f, 40, 1);
        check_sample(64, V, 0.9f, 700, 1);
        check_sample(64, V, 0.0f, 0, 1);
    }
    check_padded_vocab(9, 50257, 50304); /* GPT-2 124M as llm.c stores it */
    check_padded_vocab(5, 15, 16);
    check_ppo(1000, 1);
    check_ppo(5, 0);
    check_adamw(100003);
    check_sumsq(1000003);
    check_nccl();
    check_groups();
    printf("parity: %d passed, %d failed (%.1f s)\n", n_pass, n_fail, nr_now() - t0);
    if (bench) gemm_bench();
    printf("%s\n", n_fail ? "VERDICT: FAIL" : "VERDICT: PASS");
    MPI_Finalize();
    return n_fail ? 1 : 0;
}
#endif
