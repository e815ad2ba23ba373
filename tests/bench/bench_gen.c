/* bench_gen.c — `make bench`, generation part: KV-cached decode steps of
 * GPT-2 124M and the llama-124M shape (bench_step's) at batch 1, 4, 16 and
 * 64 on one thread, each against the two bounds a decode step has:
 *
 *  - memory: the bytes a step must read (every weight its GEMMs and norms
 *    use, the LM head over the real vocabulary, the KV cache of the rows
 *    over the positions they attend) over the read bandwidth of one thread,
 *    measured in the same run just before each run by streaming sums over a
 *    512 MB buffer, far larger than the caches: the best of several ways of
 *    reading it (1, 2, 4 and 8 streams side by side, one stream with software
 *    prefetch into L2 8 KB and 32 KB ahead, one stream multiplied by a row in
 *    L1 as a decode row reads, one stream of AVX-512 loads, and the decode
 *    GEMM itself at one row of 768 columns over the buffer), each the
 *    best of 2 passes. A bound must be at least what the decode kernels read;
 *    which way is fastest differs between machines, so it takes the best
 *    (--probe prints each way's rate);
 *  - compute: the step's FLOPs (2 per weight per row, attention included)
 *    over the rate bare cblas_sgemm reaches on the step's own GEMM shapes
 *    with the same rows, also measured just before each run.
 *
 * Times are the thread's CPU time (the wall time on a quiet machine; on a
 * shared one without the time other processes hold the core).
 *
 * A step here is what ppo_generate does per response token: gpt_decode_rows
 * of the rows, then sample_tokens over the real vocabulary (temperature 1).
 * Prints a table and appends `metric: value` lines to the file in argv[1]:
 * gen.MODEL.bB.tok_s, gen.MODEL.bB.bound_frac (time the memory bound allows
 * / time taken), gen.MODEL.bB.sgemm_frac (step FLOP/s / sgemm FLOP/s),
 * gen.MODEL.bB.read_gbs. Options after it: --quick (fewer steps); --batch B (only batch B, 1, 4, 16 or 64);
 * --probe (only the read ways' rates, in rounds); --weights CKPT (only the checkpoint's actor at batch 1,
 * MODEL = weights: the llama.cpp comparison of tests/bench/llamacpp_peer.sh).
 */
#include <cblas.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_args.h"
#include "nereus/ckpt.h"
#include "nereus/model.h"
#include "nereus/util.h"

static FILE *out_txt;

static void metric(const char *name, double v) {
    if (out_txt) fprintf(out_txt, "%s: %.6g\n", name, v);
}

/* Seconds of this thread's CPU time. Everything here runs on one thread, so on a quiet machine this is the
   wall time; on a shared one it leaves out the time another process holds the core (a thread stalled on
   memory is still running, so the read rates and the steps are timed alike) */
static double thread_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef float v8 __attribute__((vector_size(32)));

/* One way of streaming a buffer: how many equal parts are read side by side, and how far ahead (bytes, 0:
   none) each part is prefetched into L2 by software, a line for each line read, and whether each vector read
   is multiplied by one of a 3 KB vector in L1 before it is summed (as a decode row reads a weight row) */
typedef struct ReadWay { int streams, prefetch, dot; } ReadWay;

/* the L1 vector of the dot ways (a 768-float input row) */
static float dot_row[768];

/* GB/s of one thread reading n floats the given way (8 vector sums, so the adds never wait on each other; one
   vector of each part in turn), best of reps */
static double read_gbs(const float *x, size_t n, ReadWay way, int reps) {
    double best = 1e30;
    float keep = 0.0f;
    int streams = way.streams;
    size_t part = n / (size_t)streams / 64 * 64, ahead = (size_t)way.prefetch / sizeof(float);
    for (int r = 0; r < reps; r++) {
        double t0 = thread_s();
        v8 a[8] = {{0}};
        for (size_t i = 0; i < part; i += 64) {
            if (ahead)
                for (int s = 0; s < streams; s++)
                    for (int l = 0; l < 64; l += 16) __builtin_prefetch(x + (size_t)s * part + i + ahead + l, 0, 2);
            for (int k = 0; k < 8; k++)
                for (int s = 0; s < streams; s++) {
                    v8 v;
                    memcpy(&v, x + (size_t)s * part + i + 8 * k, sizeof v);
                    if (way.dot) {
                        v8 d;
                        memcpy(&d, dot_row + (i + 8 * k) % 768, sizeof d);
                        v *= d;
                    }
                    a[(k + s) & 7] += v;
                }
        }
        double t = thread_s() - t0;
        for (int k = 0; k < 8; k++) keep += a[k][0];
        best = t < best ? t : best;
    }
    if (keep == 12345.0f) printf(" "); /* the sums are used */
    return (double)part * streams * sizeof(float) / best * 1e-9;
}

#if defined(__x86_64__) && defined(__GNUC__)
typedef float v16 __attribute__((vector_size(64)));

/* read_gbs of one stream with AVX-512 loads (one 64-byte vector a line); 0 where the CPU has no AVX-512 */
__attribute__((target("avx512f"))) static double read_gbs_wide(const float *x, size_t n, int reps) {
    if (!__builtin_cpu_supports("avx512f")) return 0.0;
    double best = 1e30;
    float keep = 0.0f;
    size_t m = n / 128 * 128;
    for (int r = 0; r < reps; r++) {
        double t0 = thread_s();
        v16 a[8] = {{0}};
        for (size_t i = 0; i < m; i += 128)
            for (int k = 0; k < 8; k++) {
                v16 v;
                memcpy(&v, x + i + 16 * k, sizeof v);
                a[k] += v;
            }
        double t = thread_s() - t0;
        for (int k = 0; k < 8; k++) keep += a[k][0];
        best = t < best ? t : best;
    }
    if (keep == 12345.0f) printf(" "); /* the sums are used */
    return (double)m * sizeof(float) / best * 1e-9;
}
#else
static double read_gbs_wide(const float *x, size_t n, int reps) { return 0.0; }
#endif

/* GB/s of backend_cpu's matmul_decode reading the buffer as the weight of one 768-float row (rows of 768
   columns, as GPT-2's), best of reps: the rate the decode kernel itself streams at */
static double read_gbs_decode(const float *x, size_t n, int reps) {
    const Backend *be = backend_cpu();
    int OC = (int)(n / 768);
    float *out = nr_xmalloc((size_t)OC * sizeof(float));
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = thread_s();
        be->matmul_decode(out, dot_row, x, NULL, 1, 768, OC, OC);
        double t = thread_s() - t0;
        best = t < best ? t : best;
    }
    free(out);
    return (double)OC * 768 * sizeof(float) / best * 1e-9;
}

/* the ways the bound tries: 1, 2, 4 and 8 streams without software prefetch (the hardware prefetchers follow
   each stream), one stream prefetched 8 KB and 32 KB ahead (as the decode kernels prefetch; into L1 instead,
   1-4 KB ahead, read a third slower on an AMD EPYC), one stream of products with an L1 row (a decode row's
   reading, which measured a few % faster than the plain sum there) */
static const ReadWay read_ways[] = {{1, 0, 0}, {2, 0, 0}, {4, 0, 0}, {8, 0, 0}, {1, 8192, 0}, {1, 32768, 0}, {1, 0, 1}};
#define N_READ_WAYS ((int)(sizeof read_ways / sizeof read_ways[0]))

/* The read bound of one thread: the best of the ways above and of one stream of AVX-512 loads, each the best of
   reps passes. The fastest way differs between machines (and a decode kernel may read faster than any single
   way); the bound is to be at least what our own kernels read, so it takes the maximum, and the decode GEMM
   itself at one row is one of the ways. If `each` is given it gets the rate of every way, N_READ_WAYS + 2 of
   them (the AVX-512 one, then the decode GEMM's, last) */
static double read_bound_gbs(const float *x, size_t n, int reps, double *each) {
    double best = 0.0;
    for (int w = 0; w <= N_READ_WAYS + 1; w++) {
        double g = w < N_READ_WAYS ? read_gbs(x, n, read_ways[w], reps)
                   : w == N_READ_WAYS ? read_gbs_wide(x, n, reps) : read_gbs_decode(x, n, reps);
        if (each) each[w] = g;
        best = g > best ? g : best;
    }
    return best;
}

/* --probe: each way's rate, best of 3 passes, in rounds (to see which way sets the bound on this machine) */
static void print_read_ways(const float *x, size_t n, int rounds) {
    printf("\n== one-thread read rate of a 512 MB buffer, GB/s, each way best of 3 passes (streams/prefetch bytes)\n");
    for (int w = 0; w < N_READ_WAYS; w++)
        printf(" %4d/%-5d%s", read_ways[w].streams, read_ways[w].prefetch, read_ways[w].dot ? "x" : " ");
    printf(" %11s %11s %8s\n", "1 (512-bit)", "decode N=1", "bound");
    for (int r = 0; r < rounds; r++) {
        double each[N_READ_WAYS + 2], bound = read_bound_gbs(x, n, 3, each);
        for (int w = 0; w <= N_READ_WAYS + 1; w++) printf(" %11.1f", each[w]);
        printf(" %8.1f\n", bound);
    }
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

/* operands of bare sgemm on one step's GEMMs: a weight buffer per layer and one for the head, so that the
   weights come from memory as in the step */
typedef struct SgemmStep { float **w, *x, *y; int L; } SgemmStep;

static SgemmStep sgemm_step_new(const GPTConfig *c, int N) {
    int sh[4][2];
    layer_gemms(c, sh);
    size_t lw = 0, hw = (size_t)gpt_real_vocab(c) * c->C, io = (size_t)N * (size_t)gpt_real_vocab(c);
    for (int s = 0; s < 4; s++) lw = NR_MAX(lw, (size_t)sh[s][0] * sh[s][1]);
    SgemmStep g = {nr_xmalloc((size_t)(c->L + 1) * sizeof(float *)), nr_xcalloc(io, sizeof(float)),
                   nr_xcalloc(io, sizeof(float)), c->L};
    for (int l = 0; l <= c->L; l++) {
        size_t n = l < c->L ? lw : hw;
        g.w[l] = nr_xmalloc(n * sizeof(float));
        for (size_t i = 0; i < n; i++) g.w[l][i] = 1e-3f * (float)(i % 13);
    }
    return g;
}

static void sgemm_step_free(SgemmStep *g) {
    for (int l = 0; l <= g->L; l++) free(g->w[l]);
    free(g->w);
    free(g->x);
    free(g->y);
}

/* seconds of bare sgemm on one step's GEMMs with N rows (best of reps) */
static double sgemm_step_s(const GPTConfig *c, const SgemmStep *g, int N, int reps) {
    int sh[4][2], V = gpt_real_vocab(c);
    layer_gemms(c, sh);
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = thread_s();
        for (int l = 0; l < c->L; l++)
            for (int s = 0; s < 4; s++)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, sh[s][1], sh[s][0], 1.0f, g->x, sh[s][0],
                            g->w[l], sh[s][0], 0.0f, g->y, sh[s][1]);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, V, c->C, 1.0f, g->x, c->C, g->w[c->L], c->C, 0.0f,
                    g->y, V);
        double t = thread_s() - t0;
        best = t < best ? t : best;
    }
    return best;
}

/* 512 MB, the size of GPT-2 124M's weights, far past every cache: the buffer read_gbs streams */
static float *stream_buf;
static const size_t stream_n = (size_t)1 << 27;

/* one model at batch B: steps decode steps after a prompt of P tokens, reps runs; before each run the read
 * bandwidth and bare sgemm on the step's GEMMs, so that the machine's load changes all three alike (a shared
 * machine), and the read bandwidth again after it (the bound is the better of the two); the medians of the
 * per-run ratios are reported */
static double bench_decode(const char *name, GPTConfig c, int B, int steps, int reps, const char *weights, int bf16) {
    const Backend *be = backend_cpu();
    const int P = 16, T = P + steps + 1;
    c.maxT = NR_MAX(c.maxT, T);
    GPT m;
    char why[512];
    if (!weights) gpt_build(&m, &c, be, B, T, 0, 3, 0.02f);
    else if (ckpt_load_model(weights, "actor", &m, &c, B, T, why, sizeof why) != 0) nr_fatal("bench_gen: %s", why);
    if (bf16) gpt_gen_bf16(&m, 1); /* the decode GEMMs read the weights in bfloat16 */
    int V = gpt_real_vocab(&c);
    int *tok = nr_xmalloc((size_t)B * P * sizeof(int)), *next = be->alloc((size_t)B * sizeof(int));
    int *host_next = nr_xmalloc((size_t)B * sizeof(int));
    float *u = be->alloc((size_t)B * sizeof(float));
    for (int i = 0; i < B * P; i++) tok[i] = rng_below(1, RNG_TEST, 3, i, V);
    /* what a step reads: weights, and each row's cache (k and v) over the positions it attends */
    double ctx = P + (steps + 1) / 2.0;
    double kv = 2.0 * c.L * B * gpt_kv_heads(&c) * gpt_head_dim(&c) * ctx;
    double bytes = (bf16 ? 2.0 : 4.0) * gemm_weights(&c) + 4.0 * (small_weights(&c) + kv);
    double flops = B * (2.0 * gemm_weights(&c) + 4.0 * c.L * c.NH * gpt_head_dim(&c) * ctx);
    double ts[8], fm[8], fs[8], gb[8], sg[8];
    SgemmStep sgs = sgemm_step_new(&c, B);
    for (int r = 0; r < reps; r++) {
        gb[r] = read_bound_gbs(stream_buf, stream_n, 2, NULL);
        sg[r] = 2.0 * B * gemm_weights(&c) / sgemm_step_s(&c, &sgs, B, 2);
        gpt_prefill(&m, tok, B, P, NULL);
        double t0 = thread_s();
        for (int j = 0; j < steps; j++) {
            for (int b = 0; b < B; b++) u[b] = rng_uniform(1, RNG_TEST, (uint64_t)b, (uint64_t)(r * steps + j));
            be->sample_tokens(next, m.d_logits, u, B, V, c.V, 1.0f, 0);
            memcpy(host_next, next, (size_t)B * sizeof(int));
            gpt_decode_rows(&m, host_next, NULL, B, P + j, NULL);
        }
        ts[r] = (thread_s() - t0) / steps;
        gb[r] = NR_MAX(gb[r], read_bound_gbs(stream_buf, stream_n, 2, NULL)); /* and after: the load may change */
        fm[r] = bytes / (gb[r] * 1e9) / ts[r];
        fs[r] = flops / ts[r] / sg[r];
    }
    double t = nr_median(ts, reps), f_mem = nr_median(fm, reps), f_sg = nr_median(fs, reps);
    double g = nr_median(gb, reps), s = nr_median(sg, reps);
    char shown[40], key[128], b[16];
    snprintf(shown, sizeof shown, "%s%s", name, bf16 ? " bf16" : "");
    snprintf(b, sizeof b, "b%d%s", B, bf16 ? ".bf16" : "");
    printf("%-17s %3d %9.2f %9.0f %9.1f %8.1f %8.2f %9.1f %9.1f %8.2f\n", shown, B, t * 1e3, B / t, bytes * 1e-6, g,
           f_mem, flops / t * 1e-9, s * 1e-9, f_sg);
    snprintf(key, sizeof key, "gen.%s.%s.tok_s", name, b); metric(key, B / t);
    snprintf(key, sizeof key, "gen.%s.%s.bound_frac", name, b); metric(key, f_mem);
    snprintf(key, sizeof key, "gen.%s.%s.sgemm_frac", name, b); metric(key, f_sg);
    snprintf(key, sizeof key, "gen.%s.%s.step_ms", name, b); metric(key, t * 1e3);
    snprintf(key, sizeof key, "gen.%s.%s.read_gbs", name, b); metric(key, g);
    sgemm_step_free(&sgs);
    free(tok);
    free(host_next);
    be->free(next);
    be->free(u);
    gpt_free(&m);
    return B / t;
}

/* fp32 and bf16 decode of one model at batch B in the same run, and the speed-up */
static void bench_decode_pair(const char *name, GPTConfig c, int B, int steps, int reps) {
    double f = bench_decode(name, c, B, steps, reps, NULL, 0), h = bench_decode(name, c, B, steps, reps, NULL, 1);
    char key[128];
    snprintf(key, sizeof key, "gen.%s.b%d.bf16.speedup", name, B);
    metric(key, h / f);
    printf("%-17s %3d bf16 / fp32 tokens/s: %.2f\n", name, B, h / f);
}

/* the llama-124M shape of bench_step: GPT-2 124M's V, L, C, NH with 4 key/value heads, SwiGLU 2048, tied */
#define LLAMA_124M {.V = 50257, .maxT = 64, .L = 12, .C = 768, .NH = 12, .arch = GPT_ARCH_LLAMA, .NKV = 4, .ffn = 2048}

static const char usage[] =
    "usage: build/bench/bench_gen OUT [--quick] [--batch 1|4|16|64] [--probe] [--weights CKPT]\n"
    "  decode tokens/s against the memory and sgemm bounds; appends metric: value lines to OUT\n"
    "  (tests/bench/run.sh, `make bench`, runs it with OUT = build/bench.txt). Exit: 0, 2 bad command line.\n";

int main(int argc, char **argv) {
    int arc = bench_args(argc, argv, usage, 0);
    if (arc >= 0) return arc;
    MPI_Init(&argc, &argv);
    out_txt = argc > 1 ? fopen(argv[1], "a") : NULL;
    int quick = 0, probe = 0, only_b = 0;
    const char *weights = NULL;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) quick = 1;
        else if (strcmp(argv[i], "--probe") == 0) probe = 1;
        else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc) {
            only_b = atoi(argv[++i]);
            if (only_b != 1 && only_b != 4 && only_b != 16 && only_b != 64) {
                fprintf(stderr, "bench_gen: --batch takes 1, 4, 16 or 64, not '%s'\n", argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "--weights") == 0 && i + 1 < argc) weights = argv[++i];
        else if (argv[i][0]) {
            fprintf(stderr, "bench_gen: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    backend_cpu()->set_threads(1);
    stream_buf = aligned_alloc(64, stream_n * sizeof(float)); /* whole lines, as the model's weights */
    if (!stream_buf) nr_fatal("bench_gen: out of memory for the 512 MB read buffer");
    for (size_t i = 0; i < stream_n; i++) stream_buf[i] = (float)(i & 7);
    for (int i = 0; i < 768; i++) dot_row[i] = 1.0f + (float)(i & 3);
    if (probe) {
        print_read_ways(stream_buf, stream_n, quick ? 2 : 5);
        free(stream_buf);
        if (out_txt) fclose(out_txt);
        MPI_Finalize();
        return 0;
    }
    printf("\n== decode steps (one token per row, sampling included), one thread, CPU backend\n");
    printf("%-17s %3s %9s %9s %9s %8s %8s %9s %9s %8s\n", "model", "B", "step ms", "tok/s", "MB/step", "read GB/s",
           "of mem", "GF/s", "sgemm GF/s", "of sgemm");
    int steps = quick ? 6 : 24, reps = quick ? 1 : 3, Bs[4] = {1, 4, 16, 64};
    if (weights) { /* a checkpoint's actor at batch 1: the peer comparison (tests/bench/llamacpp_peer.sh) */
        bench_decode("weights", (GPTConfig){0}, 1, 64, 5, weights, 0);
    } else { /* batches 1 and 4 also in bf16, beside fp32 */
        GPTConfig gpt2 = {.V = 50257, .maxT = 64, .L = 12, .C = 768, .NH = 12}, llama = LLAMA_124M;
        for (int i = 0; i < 4; i++)
            if (!only_b || Bs[i] == only_b) {
                if (Bs[i] <= 4) bench_decode_pair("gpt2-124M", gpt2, Bs[i], steps, reps);
                else bench_decode("gpt2-124M", gpt2, Bs[i], steps, reps, NULL, 0);
            }
        for (int i = 0; i < 4; i++)
            if (!only_b || Bs[i] == only_b) {
                if (Bs[i] <= 4) bench_decode_pair("llama-124M", llama, Bs[i], steps, reps);
                else bench_decode("llama-124M", llama, Bs[i], steps, reps, NULL, 0);
            }
    }
    free(stream_buf);
    printf("  read GB/s: one thread streaming 512 MB (the best of several ways, --probe), before and after each run;\n"
           "  of mem: the time the bytes a step reads take at that bandwidth / the step's time (goal >= 0.70 at\n"
           "  B <= 4); of sgemm: the step's FLOP/s / bare sgemm's on the step's GEMMs with B rows, before each run\n"
           "  (goal >= 0.60 at 64); medians of the runs; times are the thread's CPU time\n");
    if (out_txt) fclose(out_txt);
    MPI_Finalize();
    return 0;
}
