/* bench_step.c — `make bench`, foundation part: one rank, CPU backend.
 *
 *  1. Training step (forward + backward + AdamW) tokens/s for the tiny model,
 *     a GPT-2 124M shape and a Llama-family shape of the same width and depth
 *     (GQA, SwiGLU: LLAMA_124M) at B=4, T=64, with 1 and 2 BLAS threads.
 *  2. The step's achieved GFLOP/s (model FLOPs: 3 × forward, attention
 *     included) beside bare cblas_sgemm GFLOP/s on exactly the GEMMs the step
 *     issues (same shapes, same transposes, taken from the config), timed in
 *     the same run: the ratio says how close the step gets to the BLAS it is
 *     built on.
 *  3. Generation tokens/s with and without the KV cache (the same sampled
 *     tokens either way; test_model checks that).
 * Prints a table and writes `metric: value` lines to the file in argv[1].
 * Options after it: --quick (fewer repetitions), --backend cpu|cuda (the
 * model's backend; the bare-sgemm baseline is OpenBLAS, so it is skipped on
 * cuda — tests/gpu/parity times bare cuBLAS), --tf32, --peak-tflops X
 * (prints MFU = step FLOP/s over X, the device's peak for the precision). */
#include <cblas.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_args.h"
#include "nereus/cpu_kernels.h"
#include "nereus/model.h"
#ifdef NEREUS_CUDA
#include "nereus/backend_cuda.h"
#endif
#include "nereus/ppo.h"
#include "nereus/util.h"

static FILE *out_txt;
static const Backend *bench_be; /* the model's backend */
static double peak_tflops;      /* > 0: report MFU against it */

static void metric(const char *name, double v) {
    if (out_txt) fprintf(out_txt, "%s: %.6g\n", name, v);
}

/* one training step on random tokens; returns seconds */
static double train_step(GPT *m, const int *tok, const int *tg, const float *dlogp, int B, int T) {
    double t0 = nr_now();
    gpt_zero_grad(m);
    gpt_forward(m, tok, B, T, 1, 0);
    gpt_logprob(m, tg, NULL, NULL);
    gpt_backward(m, dlogp, NULL, NULL);
    gpt_update(m, 1e-4f, 0.9f, 0.95f, 1e-8f, 0.0f, 1.0f);
    return nr_now() - t0;
}

/* The (IC, OC) of the matmuls the config's step issues, in order: per layer
 * the packed q|k|v (C → Cq + 2·Ckv), the output projection (Cq → C), the MLP
 * up (C → F, or C → 2F [gate | up] for SwiGLU) and down (F → C); then the LM
 * head (C → V) once. GPT-2 is the case Cq = Ckv = C, F = 4C, not gated. */
static void step_gemms(const GPTConfig *c, int shapes[5][2]) {
    int C = c->C, hd = gpt_head_dim(c), Cq = c->NH * hd, Ckv = gpt_kv_heads(c) * hd, F = gpt_ffn(c);
    int up = gpt_is_llama(c) ? 2 * F : F;
    int s[5][2] = {{C, Cq + 2 * Ckv}, {Cq, C}, {C, up}, {F, C}, {C, c->V}};
    memcpy(shapes, s, sizeof s);
}

/* the largest IC, OC and IC·OC over the step's matmuls (operand sizes) */
static void step_gemm_max(const GPTConfig *c, size_t *ic, size_t *oc, size_t *w) {
    int sh[5][2];
    step_gemms(c, sh);
    *ic = *oc = *w = 0;
    for (int s = 0; s < 5; s++) {
        *ic = NR_MAX(*ic, (size_t)sh[s][0]);
        *oc = NR_MAX(*oc, (size_t)sh[s][1]);
        *w = NR_MAX(*w, (size_t)sh[s][0] * sh[s][1]);
    }
}

/* The GEMMs of one training step, as bare cblas_sgemm calls. Row-major;
 * forward out(N,OC) = inp(N,IC)·W(OC,IC)^T; backward dinp = dout·W and
 * dW = dout^T·inp. Returns seconds; *flops gets their FLOP count. */
static double sgemm_step(const GPTConfig *c, int N, float *A, float *Bm, float *Cm, double *flops) {
    int shapes[5][2]; /* (IC, OC) */
    step_gemms(c, shapes);
    double f = 0, t0 = nr_now();
    for (int l = 0; l <= c->L; l++) {
        for (int s = 0; s < 5; s++) {
            if ((l == c->L) != (s == 4)) continue; /* the LM head once, after the layers */
            int IC = shapes[s][0], OC = shapes[s][1];
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, IC, 1.0f, A, IC, Bm, IC, 0.0f, Cm, OC);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, IC, OC, 1.0f, Cm, OC, Bm, IC, 1.0f, A, IC);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, IC, N, 1.0f, Cm, OC, A, IC, 1.0f, Bm, IC);
            f += 3.0 * 2.0 * (double)N * IC * OC;
        }
    }
    *flops = f;
    return nr_now() - t0;
}

/* A Llama-family model beside GPT-2 124M: the same V, L, C and NH, grouped-query attention with 4
 * key/value heads, a SwiGLU MLP of width 2048, the LM head tied to the embedding. */
#define LLAMA_124M {.V = 50257, .L = 12, .C = 768, .NH = 12, .arch = GPT_ARCH_LLAMA, .NKV = 4, .ffn = 2048}

typedef struct Shape { const char *name; GPTConfig c; int B, T, reps; } Shape;

static void bench_train(const Shape *s, int threads) {
    const Backend *be = bench_be;
    int cpu = strcmp(be->name, "cpu") == 0;
    be->set_threads(threads);
    GPT m;
    gpt_build(&m, &s->c, be, s->B, s->T, 1, 1, 0.02f);
    int BT = s->B * s->T;
    int *tok = nr_xmalloc((size_t)BT * sizeof(int)), *tg = nr_xmalloc((size_t)BT * sizeof(int));
    float *dl = nr_xmalloc((size_t)BT * sizeof(float));
    for (int i = 0; i < BT; i++) {
        tok[i] = rng_below(1, RNG_TEST, 1, i, s->c.V);
        tg[i] = rng_below(1, RNG_TEST, 2, i, s->c.V);
        dl[i] = -1.0f / BT;
    }
    /* sgemm operands big enough for the largest shape */
    size_t ic, oc, w;
    step_gemm_max(&s->c, &ic, &oc, &w);
    size_t na = (size_t)BT * ic, nb = w, nc = (size_t)BT * oc; /* inp, weight, out */
    float *A = nr_xcalloc(na, sizeof(float)), *Bm = nr_xcalloc(nb, sizeof(float)), *Cm = nr_xcalloc(nc, sizeof(float));
    for (size_t i = 0; i < na; i++) A[i] = 1e-3f * (float)(i % 17);
    for (size_t i = 0; i < nb; i++) Bm[i] = 1e-3f * (float)(i % 13);
    train_step(&m, tok, tg, dl, s->B, s->T); /* warm-up */
    double flops_g = 0;
    if (cpu) sgemm_step(&s->c, BT, A, Bm, Cm, &flops_g);
    double ts[16] = {0}, tg_[16] = {0};
    int reps = s->reps;
    for (int r = 0; r < reps; r++) { /* interleave so drift hits both alike */
        ts[r] = train_step(&m, tok, tg, dl, s->B, s->T);
        if (cpu) tg_[r] = sgemm_step(&s->c, BT, A, Bm, Cm, &flops_g);
    }
    double t_step = nr_median(ts, reps), t_gemm = cpu ? nr_median(tg_, reps) : NAN;
    double flops_step = 3.0 * gpt_flops_per_token_fwd(&s->c, s->T) * BT;
    double tok_s = BT / t_step, gf_step = flops_step / t_step * 1e-9, gf_gemm = cpu ? flops_g / t_gemm * 1e-9 : NAN;
    printf("%-22s %4d %3d %3d %7d %12.0f %10.2f %10.2f %8.2f", s->name, threads, s->B, s->T, reps, tok_s, gf_step,
           gf_gemm, gf_step / gf_gemm);
    if (peak_tflops > 0) printf("  MFU %.1f%%", 100.0 * gf_step / (peak_tflops * 1e3));
    printf("\n");
    char key[128];
    const char *bn = be->name;
    snprintf(key, sizeof key, "train.%s.%s.t%d.tokens_per_s", bn, s->name, threads); metric(key, tok_s);
    snprintf(key, sizeof key, "train.%s.%s.t%d.step_gflops", bn, s->name, threads); metric(key, gf_step);
    if (cpu) {
        snprintf(key, sizeof key, "train.%s.%s.t%d.sgemm_gflops", bn, s->name, threads); metric(key, gf_gemm);
        snprintf(key, sizeof key, "train.%s.%s.t%d.step_over_sgemm", bn, s->name, threads); metric(key, gf_step / gf_gemm);
    }
    if (peak_tflops > 0) {
        snprintf(key, sizeof key, "train.%s.%s.t%d.mfu", bn, s->name, threads);
        metric(key, gf_step / (peak_tflops * 1e3));
    }
    free(A); free(Bm); free(Cm); free(tok); free(tg); free(dl);
    gpt_free(&m);
}

/* The forward GEMM (matmul_forward: the batch-invariant row-dot kernels, docs/NUMERICS.md) on each kernel path
 * this CPU runs, against bare cblas_sgemm on the same operands, interleaved: GPT-2 124M's shapes at 256 rows, one
 * thread, 64-byte aligned operands (the backend's allocations) */
static void bench_gemm_paths(int reps) {
    const Backend *be = backend_cpu();
    be->set_threads(1);
    const int N = 256, shapes[5][2] = {{768, 2304}, {768, 768}, {768, 3072}, {3072, 768}, {768, 50257}};
    printf("\n== forward GEMM (row-dot order) against sgemm, %d rows, one thread\n", N);
    printf("%-9s %5s %6s %12s %12s %8s\n", "path", "IC", "OC", "rowdot GF/s", "sgemm GF/s", "ratio");
    char why[200];
    for (int p = CPU_PATH_PORTABLE + 1; p <= CPU_PATH_AVX512; p++) {
        if (!cpu_kernels_runs((CpuKernelPath)p)) continue;
        cpu_kernels_set(cpu_kernels_name((CpuKernelPath)p), why, sizeof why);
        for (int k = 0; k < 5; k++) {
            int IC = shapes[k][0], OC = shapes[k][1];
            float *x = be->alloc((size_t)N * IC * sizeof(float)), *w = be->alloc((size_t)OC * IC * sizeof(float));
            float *o = be->alloc((size_t)N * OC * sizeof(float));
            for (size_t i = 0; i < (size_t)N * IC; i++) x[i] = 1e-3f * (float)(i % 17);
            for (size_t i = 0; i < (size_t)OC * IC; i++) w[i] = 1e-3f * (float)(i % 13);
            double tr[16], tb[16];
            for (int r = 0; r < reps; r++) {
                double t0 = nr_now();
                be->matmul_forward(o, x, w, NULL, N, IC, OC);
                tr[r] = nr_now() - t0;
                t0 = nr_now();
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, IC, 1.0f, x, IC, w, IC, 0.0f, o, OC);
                tb[r] = nr_now() - t0;
            }
            double f = 2.0 * N * IC * OC, gr = f / nr_median(tr, reps) * 1e-9, gb = f / nr_median(tb, reps) * 1e-9;
            const char *pn = cpu_kernels_name((CpuKernelPath)p);
            printf("%-9s %5d %6d %12.1f %12.1f %8.2f\n", pn, IC, OC, gr, gb, gr / gb);
            char key[128];
            snprintf(key, sizeof key, "gemm.fwd.%s.%dx%d.over_sgemm", pn, IC, OC);
            metric(key, gr / gb);
            be->free(x), be->free(w), be->free(o);
        }
    }
    cpu_kernels_set("auto", why, sizeof why);
}

static void bench_gen(const char *name, GPTConfig c, int B, int digits, int R, int reps) {
    const Backend *be = bench_be;
    be->set_threads(1);
    Config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.run.seed = 7;
    cfg.ppo.batch = B;
    cfg.ppo.max_response = R;
    cfg.ppo.temperature = 1.0f;
    TaskSet ts;
    char why[128];
    task_parse(&ts, "reverse", digits, 7, why, sizeof why);
    int T = task_prompt_len(&ts) + R;
    c.maxT = T;
    GPT m;
    gpt_build(&m, &c, be, B, T, 0, 3, 0.02f);
    Rollout r;
    rollout_alloc(&r, &cfg, &ts, be, B, B, 0);
    double tc[8] = {0}, tn[8] = {0}, ntok = 0;
    for (int k = 0; k < reps; k++) {
        double t0 = nr_now();
        ppo_generate(&r, &m, &cfg, &ts, k);
        tc[k] = nr_now() - t0;
        ntok = 0;
        for (int b = 0; b < B; b++) ntok += r.resp_len[b];
        t0 = nr_now();
        ppo_generate_nocache(&r, &m, &cfg, &ts, k);
        tn[k] = nr_now() - t0;
    }
    /* tokens of the last rep (same tokens in both paths) */
    double c_s = ntok / nr_median(tc, reps), n_s = ntok / nr_median(tn, reps);
    printf("%-22s %4d %5d %3d %9.0f %9.0f %8.2f\n", name, B, task_prompt_len(&ts), R, c_s, n_s, c_s / n_s);
    char key[128];
    snprintf(key, sizeof key, "gen.%s.%s.kv_cache.tokens_per_s", be->name, name); metric(key, c_s);
    snprintf(key, sizeof key, "gen.%s.%s.no_cache.tokens_per_s", be->name, name); metric(key, n_s);
    snprintf(key, sizeof key, "gen.%s.%s.cache_speedup", be->name, name); metric(key, c_s / n_s);
    rollout_free(&r);
    gpt_free(&m);
}

static const char usage[] =
    "usage: build/bench/bench_step OUT [--quick] [--backend cpu|cuda] [--tf32] [--peak-tflops X]\n"
    "  training and generation tokens/s against bare sgemm; appends metric: value lines to OUT\n"
    "  (tests/bench/run.sh, `make bench`, runs it with OUT = build/bench.txt). Exit: 0, 2 bad command line.\n";

int main(int argc, char **argv) {
    int arc = bench_args(argc, argv, usage, 0);
    if (arc >= 0) return arc;
    MPI_Init(&argc, &argv);
    out_txt = argc > 1 ? fopen(argv[1], "a") : NULL;
    int quick = 0, tf32 = 0;
    const char *bname = "cpu";
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) quick = 1;
        else if (strcmp(argv[i], "--tf32") == 0) tf32 = 1;
        else if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) bname = argv[++i];
        else if (strcmp(argv[i], "--peak-tflops") == 0 && i + 1 < argc) peak_tflops = atof(argv[++i]);
        else if (argv[i][0]) { fprintf(stderr, "bench_step: unknown option '%s'\n", argv[i]); return 2; }
    }
    char why[512] = "";
    bench_be = backend_select(bname, why, sizeof why);
    if (!bench_be) { fprintf(stderr, "bench_step: backend %s: %s\n", bname, why); return 2; }
#ifdef NEREUS_CUDA
    if (tf32) backend_cuda_set_tf32(1);
#else
    if (tf32) { fprintf(stderr, "bench_step: --tf32 needs the CUDA backend\n"); return 2; }
#endif
    printf("backend: %s%s\n", bench_be->name, tf32 ? " (TF32)" : "");
    char blas[600];
    printf("OpenBLAS kernels: %s%s%s\n", openblas_get_corename(), cpu_blas_core_check(blas, sizeof blas) ? "; warning: " : "",
           cpu_blas_core_check(blas, sizeof blas) ? blas : "");
    Shape shapes[3] = {
        {"tiny", {.V = TASK_VOCAB, .maxT = 64, .L = 2, .C = 64, .NH = 4}, 4, 64, quick ? 3 : 9},
        {"gpt2-124M", {.V = 50257, .maxT = 64, .L = 12, .C = 768, .NH = 12}, 4, 64, quick ? 1 : 3},
        {"llama-124M", LLAMA_124M, 4, 64, quick ? 1 : 3},
    };
    shapes[2].c.maxT = 64;
    printf("\n== training step (forward + backward + AdamW), one rank, %s backend\n", bench_be->name);
    printf("%-22s %4s %3s %3s %7s %12s %10s %10s %8s\n", "model", "thr", "B", "T", "reps", "tokens/s", "step GF/s",
           "sgemm GF/s", "ratio");
    for (int s = 0; s < 3; s++)
        for (int th = 1; th <= 2; th++) bench_train(&shapes[s], th);
    printf("  step GF/s counts model FLOPs (3x forward incl. attention); sgemm GF/s times the step's own GEMM\n"
           "  shapes with bare cblas_sgemm in the same run; ratio = step / sgemm (goal >= 0.60)\n");
    if (strcmp(bench_be->name, "cpu") == 0) bench_gemm_paths(quick ? 3 : 7);
    printf("\n== generation (sampling, temperature 1), one BLAS thread\n");
    printf("%-22s %4s %5s %3s %9s %9s %8s\n", "model", "B", "P", "R", "KV tok/s", "full tok/s", "speedup");
    bench_gen("tiny", (GPTConfig){.V = TASK_VOCAB, .L = 2, .C = 64, .NH = 4}, 64, 4, 24, quick ? 2 : 5);
    bench_gen("gpt2-124M", (GPTConfig){.V = 50257, .L = 12, .C = 768, .NH = 12}, 4, 4, quick ? 8 : 26, quick ? 1 : 3);
    bench_gen("llama-124M", (GPTConfig)LLAMA_124M, 4, 4, quick ? 8 : 26, quick ? 1 : 3);
    printf("  llama-124M: arch llama, V 50257, L 12, C 768, NH 12, n_kv_head 4, ffn_dim 2048, tied head:"
           " %zu parameters\n", gpt_logical_numel(&(GPTConfig)LLAMA_124M));
    if (out_txt) fclose(out_txt);
    MPI_Finalize();
    return 0;
}
