/* bench_gen.c — `make bench`, generation part: KV-cached decode steps of
 * GPT-2 124M and the llama-124M shape (bench_step's) at batch 1, 4, 16 and
 * 64 on one thread, each against the two bounds a decode step has:
 *
 *  - memory: the bytes a step must read (every weight its GEMMs and norms
 *    use, the LM head over the real vocabulary, the KV cache of the rows
 *    over the positions they attend) over the read bandwidth of one thread,
 *    measured in the same run by a streaming sum over a buffer far larger
 *    than the caches;
 *  - compute: the step's FLOPs (2 per weight per row, attention included)
 *    over the rate bare cblas_sgemm reaches on the step's own GEMM shapes
 *    with the same rows, measured in the same run.
 *
 * A step here is what ppo_generate does per response token: gpt_decode_rows
 * of the rows, then sample_tokens over the real vocabulary (temperature 1).
 * Prints a table and appends `metric: value` lines to the file in argv[1]:
 * gen.MODEL.bB.tok_s, gen.MODEL.bB.bound_frac (time the memory bound allows
 * / time taken), gen.MODEL.bB.sgemm_frac (step FLOP/s / sgemm FLOP/s),
 * gen.read_gbs. Option after it: --quick (fewer steps).
 */
#include <cblas.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/model.h"
#include "nereus/util.h"

static FILE *out_txt;

static void metric(const char *name, double v) {
    if (out_txt) fprintf(out_txt, "%s: %.6g\n", name, v);
}

typedef float v8 __attribute__((vector_size(32)));

/* GB/s of one thread reading n floats (8 vector sums, so the adds never wait on each other), best of reps */
static double read_gbs(const float *x, size_t n, int reps) {
    double best = 1e30;
    float keep = 0.0f;
    for (int r = 0; r < reps; r++) {
        double t0 = nr_now();
        v8 a[8] = {{0}};
        for (size_t i = 0; i + 64 <= n; i += 64)
            for (int k = 0; k < 8; k++) {
                v8 v;
                memcpy(&v, x + i + 8 * k, sizeof v);
                a[k] += v;
            }
        double t = nr_now() - t0;
        for (int k = 0; k < 8; k++) keep += a[k][0];
        best = t < best ? t : best;
    }
    if (keep == 12345.0f) printf(" "); /* the sums are used */
    return (double)n * sizeof(float) / best * 1e-9;
}

/* The decode GEMMs of one layer as (IC, OC): q|k|v, the output projection, the MLP up (2F for SwiGLU), down */
static void layer_gemms(const GPTConfig *c, int sh[4][2]) {
    int C = c->C, hd = gpt_head_dim(c), Cq = c->NH * hd, Ckv = gpt_kv_heads(c) * hd, F = gpt_ffn(c);
    int s[4][2] = {{C, Cq + 2 * Ckv}, {Cq, C}, {C, gpt_is_llama(c) ? 2 * F : F}, {F, C}};
    memcpy(sh, s, sizeof s);
}

/* weights a step's GEMMs read: L layers of layer_gemms and the LM head over the real vocabulary */
static double gemm_weights(const GPTConfig *c) {
    int sh[4][2];
    layer_gemms(c, sh);
    double w = 0.0;
    for (int s = 0; s < 4; s++) w += (double)sh[s][0] * sh[s][1];
    return w * c->L + (double)gpt_real_vocab(c) * c->C;
}

/* floats a step reads besides the GEMM weights and the cache: biases and norm weights (one vector each) */
static double small_weights(const GPTConfig *c) {
    int sh[4][2];
    layer_gemms(c, sh);
    double v = 0.0;
    for (int s = 0; s < 4; s++) v += sh[s][1];
    return (v + 4.0 * c->C) * c->L + 2.0 * c->C;
}

/* seconds of bare sgemm on one step's GEMMs with N rows (best of reps) */
static double sgemm_step_s(const GPTConfig *c, int N, int reps) {
    int sh[4][2];
    layer_gemms(c, sh);
    size_t maxw = (size_t)gpt_real_vocab(c) * c->C, maxio = (size_t)N * (size_t)gpt_real_vocab(c);
    for (int s = 0; s < 4; s++) maxw = NR_MAX(maxw, (size_t)sh[s][0] * sh[s][1]);
    /* a weight buffer per layer, so that the weights come from memory as in the step */
    float **w = nr_xmalloc((size_t)(c->L + 1) * sizeof(float *));
    for (int l = 0; l <= c->L; l++) {
        w[l] = nr_xmalloc(maxw * sizeof(float));
        for (size_t i = 0; i < maxw; i++) w[l][i] = 1e-3f * (float)(i % 13);
    }
    float *x = nr_xcalloc(maxio, sizeof(float)), *y = nr_xcalloc(maxio, sizeof(float));
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = nr_now();
        for (int l = 0; l < c->L; l++)
            for (int s = 0; s < 4; s++)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, sh[s][1], sh[s][0], 1.0f, x, sh[s][0], w[l],
                            sh[s][0], 0.0f, y, sh[s][1]);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, gpt_real_vocab(c), c->C, 1.0f, x, c->C, w[c->L], c->C,
                    0.0f, y, gpt_real_vocab(c));
        double t = nr_now() - t0;
        best = t < best ? t : best;
    }
    for (int l = 0; l <= c->L; l++) free(w[l]);
    free(w);
    free(x);
    free(y);
    return best;
}

/* one model at batch B: steps decode steps after a prompt of P tokens, median of reps runs */
static void bench_decode(const char *name, GPTConfig c, int B, int steps, int reps, double gbs) {
    const Backend *be = backend_cpu();
    const int P = 16, T = P + steps + 1;
    c.maxT = NR_MAX(c.maxT, T);
    GPT m;
    gpt_build(&m, &c, be, B, T, 0, 3, 0.02f);
    int V = gpt_real_vocab(&c);
    int *tok = nr_xmalloc((size_t)B * P * sizeof(int)), *next = be->alloc((size_t)B * sizeof(int));
    float *u = be->alloc((size_t)B * sizeof(float));
    for (int i = 0; i < B * P; i++) tok[i] = rng_below(1, RNG_TEST, 3, i, V);
    double ts[8];
    int *host_next = nr_xmalloc((size_t)B * sizeof(int));
    for (int r = 0; r < reps; r++) {
        gpt_prefill(&m, tok, B, P, NULL);
        double t0 = nr_now();
        for (int j = 0; j < steps; j++) {
            for (int b = 0; b < B; b++) u[b] = rng_uniform(1, RNG_TEST, (uint64_t)b, (uint64_t)(r * steps + j));
            be->sample_tokens(next, m.d_logits, u, B, V, c.V, 1.0f, 0);
            memcpy(host_next, next, (size_t)B * sizeof(int));
            gpt_decode_rows(&m, host_next, NULL, B, P + j, NULL);
        }
        ts[r] = (nr_now() - t0) / steps;
    }
    double t = nr_median(ts, reps);
    /* what a step reads: weights, and each row's cache (k and v) over the positions it attends */
    double ctx = P + (steps + 1) / 2.0;
    double kv = 2.0 * c.L * B * gpt_kv_heads(&c) * gpt_head_dim(&c) * ctx;
    double bytes = 4.0 * (gemm_weights(&c) + small_weights(&c) + kv);
    double t_mem = bytes / (gbs * 1e9);
    double flops = B * (2.0 * gemm_weights(&c) + 4.0 * c.L * c.NH * gpt_head_dim(&c) * ctx);
    double t_gemm = sgemm_step_s(&c, B, 3);
    double sgemm_rate = 2.0 * B * gemm_weights(&c) / t_gemm, step_rate = flops / t;
    printf("%-12s %3d %9.2f %9.0f %9.1f %8.2f %9.1f %9.1f %8.2f\n", name, B, t * 1e3, B / t, bytes * 1e-6,
           t_mem / t, step_rate * 1e-9, sgemm_rate * 1e-9, step_rate / sgemm_rate);
    char key[128];
    snprintf(key, sizeof key, "gen.%s.b%d.tok_s", name, B); metric(key, B / t);
    snprintf(key, sizeof key, "gen.%s.b%d.bound_frac", name, B); metric(key, t_mem / t);
    snprintf(key, sizeof key, "gen.%s.b%d.sgemm_frac", name, B); metric(key, step_rate / sgemm_rate);
    snprintf(key, sizeof key, "gen.%s.b%d.step_ms", name, B); metric(key, t * 1e3);
    free(tok);
    free(host_next);
    be->free(next);
    be->free(u);
    gpt_free(&m);
}

/* the llama-124M shape of bench_step: GPT-2 124M's V, L, C, NH with 4 key/value heads, SwiGLU 2048, tied */
#define LLAMA_124M {.V = 50257, .maxT = 64, .L = 12, .C = 768, .NH = 12, .arch = GPT_ARCH_LLAMA, .NKV = 4, .ffn = 2048}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    out_txt = argc > 1 ? fopen(argv[1], "a") : NULL;
    int quick = argc > 2 && strcmp(argv[2], "--quick") == 0;
    if (argc > 2 && !quick) {
        fprintf(stderr, "bench_gen: unknown option '%s'\n", argv[2]);
        return 2;
    }
    backend_cpu()->set_threads(1);
    size_t n = (size_t)1 << 27; /* 512 MB: the size of GPT-2 124M's weights, far past every cache */
    float *buf = nr_xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) buf[i] = (float)(i & 7);
    double gbs = read_gbs(buf, n, 5);
    free(buf);
    metric("gen.read_gbs", gbs);
    printf("\n== decode steps (one token per row, sampling included), one thread, CPU backend\n");
    printf("  read bandwidth, one thread, streaming sum over 512 MB: %.1f GB/s\n", gbs);
    printf("%-12s %3s %9s %9s %9s %8s %9s %9s %8s\n", "model", "B", "step ms", "tok/s", "MB/step", "of mem", "GF/s",
           "sgemm GF/s", "of sgemm");
    int steps = quick ? 6 : 24, reps = quick ? 1 : 3, Bs[4] = {1, 4, 16, 64};
    for (int i = 0; i < 4; i++)
        bench_decode("gpt2-124M", (GPTConfig){.V = 50257, .maxT = 64, .L = 12, .C = 768, .NH = 12}, Bs[i], steps,
                     reps, gbs);
    for (int i = 0; i < 4; i++) bench_decode("llama-124M", (GPTConfig)LLAMA_124M, Bs[i], steps, reps, gbs);
    printf("  of mem: the time the bytes a step reads take at the read bandwidth / the step's time (goal >= 0.70 at\n"
           "  B <= 4); of sgemm: the step's FLOP/s / bare sgemm's on the step's GEMMs with B rows (goal >= 0.60 at 64)\n");
    if (out_txt) fclose(out_txt);
    MPI_Finalize();
    return 0;
}
