/* test_model.c — the GPT wiring: tensor table, a model-level gradient check
 * (float central differences through both heads), KV-cached decoding against
 * the full forward, cached against uncached generation, determinism; and the
 * same gradient check and decoding for the Llama family (Llama, Qwen2,
 * Qwen3) on one rank, each variant: GQA with Llama-3 RoPE scaling and an
 * untied head, a tied head, Qwen2's qkv biases, Qwen3's QK-norm with a head
 * width other than C/NH. The ops themselves are checked in double precision
 * by test_backend_grad; conformance with transformers is tests/test_hf.sh's. */
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "nereus/model.h"
#include "nereus/ppo.h"
#include "nereus/util.h"

/* loss = Σ wl·logp + Σ wv·values over a fixed batch */
static double model_loss(GPT *m, const int *tok, const int *tg, const float *wl, const float *wv, int B, int T,
                         float *logp) {
    gpt_forward(m, tok, B, T, 1, m->cfg.value_head);
    gpt_logprob(m, tg, logp, NULL);
    double L = 0;
    for (int i = 0; i < B * T; i++) L += (double)wl[i] * logp[i];
    if (m->cfg.value_head)
        for (int i = 0; i < B * T; i++) L += (double)wv[i] * m->a.values[i];
    return L;
}

/* the model gradient of config c against float central differences (what: the message's name; noise: how far
 * gains and biases move off their starting values, so that their gradients are tested) */
static void gradcheck(const GPTConfig *cfg, const char *what, float noise) {
    GPTConfig c = *cfg;
    int value_head = c.value_head;
    int B = 2, T = 6;
    GPT m;
    gpt_build(&m, &c, backend_cpu(), B, T, 1, 7, 0.3f);
    for (size_t i = 0; i < m.nparams; i++) m.params[i] += noise * rng_normal(3, RNG_TEST, 1, i);
    int tok[12], tg[12];
    float wl[12], wv[12], logp[12];
    for (int i = 0; i < B * T; i++) {
        tok[i] = rng_below(1, RNG_TEST, 2, i, c.V);
        tg[i] = (i % T == 0) ? -1 : rng_below(1, RNG_TEST, 3, i, c.V);
        wl[i] = rng_normal(1, RNG_TEST, 4, i);
        wv[i] = rng_normal(1, RNG_TEST, 5, i);
    }
    gpt_zero_grad(&m);
    model_loss(&m, tok, tg, wl, wv, B, T, logp);
    gpt_backward(&m, wl, NULL, value_head ? wv : NULL);
    float *g = nr_xmalloc(m.nparams * sizeof(float));
    memcpy(g, m.grads, m.nparams * sizeof(float));
    for (int ti = 0; ti < m.ntensors; ti++) {
        const TensorInfo *t = &m.tensors[ti];
        double num = 0, den = 0;
        int probes = t->numel < 24 ? (int)t->numel : 24;
        for (int k = 0; k < probes; k++) {
            size_t e = t->offset + (size_t)rng_below(9, RNG_TEST, ti, k, (int)t->numel);
            float keep = m.params[e], h = 3e-3f; /* small enough for the curvature of every variant's loss */
            m.params[e] = keep + h;
            double lp = model_loss(&m, tok, tg, wl, wv, B, T, logp);
            m.params[e] = keep - h;
            double lm = model_loss(&m, tok, tg, wl, wv, B, T, logp);
            m.params[e] = keep;
            double fd = (lp - lm) / (2.0 * h);
            num += (fd - g[e]) * (fd - g[e]);
            den += fd * fd;
        }
        double rel = sqrt(num) / fmax(sqrt(den), 1e-6);
        CHECK(rel < 5e-3, "model grad %s %s: rel err %.2e (float FD, %d probes)", what, t->name, rel, probes);
    }
    free(g);
    gpt_free(&m);
}

/* gpt_forward_logprob (the LM head at the target positions only) against gpt_forward + gpt_logprob: the same
 * log-probs and entropies bit for bit, gradients equal up to the order of the head's sums; targets in two runs
 * in one row, none in another, all of a third */
static void packed_head(const GPTConfig *cfg, const char *what) {
    enum { B = 3, T = 7 };
    GPT m;
    gpt_build(&m, cfg, backend_cpu(), B, T, 1, 5, 0.3f);
    int tok[B * T], tg[B * T];
    float wl[B * T], we[B * T], lp[2][B * T], en[2][B * T];
    for (int i = 0; i < B * T; i++) {
        int b = i / T, t = i % T;
        tok[i] = rng_below(2, RNG_TEST, 7, i, cfg->V);
        int on = (b == 0 && t >= 1 && t <= 3) || (b == 0 && t == 5) || b == 2;
        tg[i] = on ? rng_below(2, RNG_TEST, 8, i, cfg->V) : -1;
        wl[i] = on ? rng_normal(2, RNG_TEST, 9, i) : 0.0f;
        we[i] = on ? 0.1f * rng_normal(2, RNG_TEST, 10, i) : 0.0f;
    }
    float *g = nr_xmalloc(m.nparams * sizeof(float));
    double dmax = 0, gmax = 0;
    for (int k = 0; k < 2; k++) {
        gpt_zero_grad(&m);
        if (k == 0) {
            gpt_forward(&m, tok, B, T, 1, 0);
            gpt_logprob(&m, tg, lp[k], en[k]);
        } else {
            gpt_forward_logprob(&m, tok, tg, B, T, lp[k], en[k]);
        }
        gpt_backward(&m, wl, we, NULL);
        for (size_t i = 0; i < m.nparams; i++) {
            if (k == 0) g[i] = m.grads[i], gmax = fmax(gmax, fabs(g[i]));
            else dmax = fmax(dmax, fabs((double)m.grads[i] - g[i]));
        }
    }
    CHECK(memcmp(lp[0], lp[1], sizeof lp[0]) == 0 && memcmp(en[0], en[1], sizeof en[0]) == 0,
          "%spacked head: log-probs and entropies bit-identical to the dense head's", what);
    CHECK(dmax <= 1e-5 * gmax, "%spacked head: gradients within %.1e of the dense head's (largest %.2e)", what, dmax,
          gmax);
    free(g);
    gpt_free(&m);
}

static void test_gradcheck(int value_head) {
    GPTConfig c = {.V = 11, .maxT = 8, .L = 2, .C = 12, .NH = 3, .value_head = value_head};
    gradcheck(&c, value_head ? "critic" : "actor", 0.05f);
}

static void test_table(void) {
    GPTConfig c = {.V = 50257, .maxT = 1024, .L = 12, .C = 768, .NH = 12, .value_head = 0};
    GPT m;
    memset(&m, 0, sizeof m);
    /* build only the table: a tiny batch keeps the activations small */
    gpt_build(&m, &c, backend_cpu(), 1, 2, 0, 1, 0.02f);
    size_t total = 0, prev_end = 0;
    int ordered = 1;
    for (int i = 0; i < m.ntensors; i++) {
        total += m.tensors[i].numel;
        if (m.tensors[i].offset < prev_end) ordered = 0;
        prev_end = m.tensors[i].offset + m.tensors[i].numel;
    }
    CHECK(total == 124439808, "GPT-2 124M logical parameter count %zu (expect 124439808)", total);
    CHECK(ordered && prev_end <= m.nparams, "tensors disjoint and inside the flat buffer");
    CHECK(m.tensors[GPT_QKVW].ndim == 4 && m.tensors[GPT_QKVW].shape[1] == 3, "qkvw is (L, 3, C, C)");
    gpt_free(&m);
}

/* prefill and decode of config c against its full forward's logits (noise: as gradcheck's) */
static void kv_cache(const GPTConfig *cfg, const char *what, float std, float noise) {
    GPTConfig c = *cfg;
    int B = 3, T = 10, P = 4;
    GPT m;
    gpt_build(&m, &c, backend_cpu(), B, T, 0, 11, std);
    for (size_t i = 0; noise > 0 && i < m.nparams; i++) m.params[i] += noise * rng_normal(4, RNG_TEST, 1, i);
    int tok[30];
    for (int i = 0; i < B * T; i++) tok[i] = rng_below(2, RNG_TEST, 7, i, c.V);
    gpt_forward(&m, tok, B, T, 1, 0);
    float *full = nr_xmalloc((size_t)B * T * c.V * sizeof(float));
    memcpy(full, m.a.logits, (size_t)B * T * c.V * sizeof(float));
    int ptok[12], step[3];
    for (int b = 0; b < B; b++) memcpy(ptok + b * P, tok + b * T, P * sizeof(int));
    float *lg = nr_xmalloc((size_t)B * c.V * sizeof(float));
    double worst = 0;
    gpt_prefill(&m, ptok, B, P, lg);
    for (int pos = P - 1; pos < T; pos++) {
        if (pos >= P) {
            for (int b = 0; b < B; b++) step[b] = tok[b * T + pos];
            gpt_decode(&m, step, B, pos, lg);
        }
        for (int b = 0; b < B; b++) {
            double scale = 0.0; /* the row's largest logit: what the softmax compares against */
            for (int v = 0; v < c.V; v++) scale = fmax(scale, fabs(full[((size_t)b * T + pos) * c.V + v]));
            for (int v = 0; v < c.V; v++) {
                double ref = full[((size_t)b * T + pos) * c.V + v];
                worst = fmax(worst, fabs(lg[b * c.V + v] - ref) / fmax(scale, 1e-3));
            }
        }
    }
    CHECK(worst < 1e-5, "%sKV-cached logits equal the full forward (worst rel %.2e)", what, worst);
    /* rows leaving mid-way: from position mid on, row 1 has finished and rows 0 and 2 go on as two compact
       rows at their cache slots; their logits are those of the whole batch's decode, bit for bit */
    int mid = P + 2, slots[2] = {0, 2}, differ = 0;
    float *all = nr_xmalloc((size_t)B * c.V * sizeof(float));
    gpt_prefill(&m, ptok, B, P, lg);
    for (int pos = P; pos < T; pos++) {
        for (int b = 0; b < B; b++) step[b] = tok[b * T + pos];
        if (pos < mid) {
            gpt_decode(&m, step, B, pos, lg);
            continue;
        }
        int two[2] = {step[0], step[2]};
        gpt_decode_rows(&m, two, slots, 2, pos, lg);
        /* the same position decoded for every row, on a second model holding the same cache */
        GPT full_batch;
        gpt_build(&full_batch, &c, backend_cpu(), B, T, 0, 11, std);
        memcpy(full_batch.params, m.params, m.nparams * sizeof(float));
        gpt_prefill(&full_batch, ptok, B, P, all);
        for (int q = P; q <= pos; q++) {
            int st[3];
            for (int b = 0; b < B; b++) st[b] = tok[b * T + q];
            gpt_decode(&full_batch, st, B, q, all);
        }
        gpt_free(&full_batch);
        for (int i = 0; i < 2; i++)
            differ += memcmp(lg + (size_t)i * c.V, all + (size_t)slots[i] * c.V, (size_t)c.V * sizeof(float)) != 0;
    }
    CHECK(differ == 0, "%srows leaving the batch: the rows going on get the whole batch's logits (%d rows differ)",
          what, differ);
    /* prompts of different lengths (P − 2, P, P + 1 tokens): each row prefilled alone, then decoded at its own
       position; every step's logits are the full forward's at that row and position, bit for bit */
    int plen[3] = {P - 2, P, P + 1}, at[3], bits = 0, steps = 0;
    gpt_prefill_rows(&m, tok, T, plen, B, lg);
    for (int j = 0; plen[2] + j <= T; j++) {
        if (j > 0) {
            for (int b = 0; b < B; b++) at[b] = plen[b] + j - 1, step[b] = tok[b * T + at[b]];
            gpt_decode_at(&m, step, NULL, at, B, lg);
        }
        for (int b = 0; b < B; b++) {
            int pos = plen[b] + j - 1; /* the position whose logits these are */
            bits += memcmp(lg + (size_t)b * c.V, full + ((size_t)b * T + pos) * c.V,
                           (size_t)gpt_real_vocab(&c) * sizeof(float)) != 0;
            steps++;
        }
    }
    CHECK(bits == 0, "%sprompts of 2, 4 and 5 tokens, each row at its own position: logits equal the full forward's "
          "bit for bit (%d of %d rows differ)", what, bits, steps);
    free(all);
    free(lg);
    free(full);
    gpt_free(&m);
}

static void test_kv_cache(void) {
    GPTConfig c = {.V = 15, .maxT = 16, .L = 2, .C = 16, .NH = 4, .value_head = 0};
    kv_cache(&c, "", 0.2f, 0.0f);
}

/* the Llama-family variants, small: V 13, C 16, 4 query heads */
static GPTConfig llama_variant(int k) {
    GPTConfig c = {.V = 13, .maxT = 16, .L = 2, .C = 16, .NH = 4, .arch = GPT_ARCH_LLAMA, .ffn = 24,
                   .rope_theta = 100.0, .norm_eps = 1e-5};
    if (k == 0) { /* GQA, Llama-3 scaling (original context 8: every branch meets the positions), untied */
        c.NKV = 2;
        c.untied = 1;
        c.rope_llama3 = 1;
        c.rope_factor = 4;
        c.rope_low_freq = 1;
        c.rope_high_freq = 4;
        c.rope_orig_ctx = 8;
    } else if (k == 2) {
        c = (GPTConfig){.V = 13, .maxT = 16, .L = 2, .C = 16, .NH = 4, .arch = GPT_ARCH_QWEN2, .NKV = 2, .ffn = 24,
                        .untied = 1, .qkv_bias = 1, .rope_theta = 100.0, .norm_eps = 1e-6};
    } else if (k == 3) {
        c = (GPTConfig){.V = 13, .maxT = 16, .L = 2, .C = 16, .NH = 4, .arch = GPT_ARCH_QWEN3, .NKV = 2, .ffn = 24,
                        .head_dim = 6, .untied = 1, .qk_norm = 1, .rope_theta = 100.0, .norm_eps = 1e-6};
    }
    return c; /* k == 1: multi-head, tied */
}
static const char *const llama_names[] = {"llama gqa+llama3+untied", "llama tied", "qwen2 qkv bias",
                                          "qwen3 qk-norm hd 6"};

static void test_llama(void) {
    GPTConfig c = llama_variant(3);
    TensorInfo t[GPT_NUM_TENSORS];
    int nt, hd = 6, C3 = 4 * hd + 2 * 2 * hd;
    gpt_tensor_table(&c, 1, 0, t, &nt);
    /* wte, ln1w, qw, kvw, qnormw, knormw, attprojw, ln2w, fcw, fcprojw, lnfw, lmhead */
    CHECK(nt == 12 && t[2].role == LLAMA_QW && t[2].shape[1] == 4 * hd && t[3].role == LLAMA_KVW &&
              t[3].shape[1] == 2 && t[3].shape[2] == 2 * hd && t[6].role == LLAMA_ATTPROJW &&
              t[6].shape[2] == 4 * hd && t[8].ndim == 4 && t[8].shape[1] == 2 && t[11].role == LLAMA_LMHEAD,
          "qwen3 table: %d tensors, qw (L, %d, C), kvw (L, 2, %d, C), attprojw (L, C, %d), fcw (L, 2, F, C), "
          "lmhead last", nt, 4 * hd, 2 * hd, 4 * hd);
    size_t want = 13 * 16 * 2 + 2 * (16 + C3 * 16 + 2 * hd + 16 * 4 * hd + 16 + 2 * 24 * 16 + 16 * 24) + 16;
    CHECK(gpt_logical_numel(&c) == want, "qwen3 logical parameters %zu (expect %zu)", gpt_logical_numel(&c), want);
    for (int k = 0; k < 4; k++) {
        char what[64];
        snprintf(what, sizeof what, "%s: ", llama_names[k]);
        c = llama_variant(k);
        kv_cache(&c, what, 0.3f, 0.1f);
        packed_head(&c, what);
        c.value_head = 1;
        gradcheck(&c, llama_names[k], 0.1f);
    }
}

/* the generation tests' run: batch 8, responses of up to 6 tokens at temperature 1, the reverse and sort tasks */
static void gen_setup(Config *cfg, TaskSet *ts, int seed) {
    memset(cfg, 0, sizeof *cfg);
    cfg->run.seed = seed;
    cfg->ppo.batch = 8;
    cfg->ppo.max_response = 6;
    cfg->ppo.temperature = 1.0f;
    char why[128];
    task_parse(ts, "reverse,sort", 4, 5, why, sizeof why);
}

static void test_generate(void) {
    Config cfg;
    TaskSet ts;
    gen_setup(&cfg, &ts, 5);
    GPTConfig c = {.V = TASK_VOCAB, .maxT = 16, .L = 2, .C = 16, .NH = 4, .value_head = 0};
    GPT m;
    gpt_build(&m, &c, backend_cpu(), 8, 12, 0, 3, 0.3f);
    Rollout a, b;
    rollout_alloc(&a, &cfg, &ts, m.be, 8, 8, 0);
    rollout_alloc(&b, &cfg, &ts, m.be, 8, 8, 0);
    int same = 1;
    for (int step = 0; step < 3; step++) {
        ppo_generate(&a, &m, &cfg, &ts, step);
        ppo_generate_nocache(&b, &m, &cfg, &ts, step);
        for (int i = 0; i < a.B && same; i++) {
            same = same && a.resp_len[i] == b.resp_len[i];
            for (int t = 0; t < a.P + a.resp_len[i]; t++) same = same && a.tokens[i * a.Tcap + t] == b.tokens[i * b.Tcap + t];
        }
    }
    CHECK(same, "KV-cached generation samples the same tokens as uncached generation (3 steps x 8)");
    /* determinism: the same step twice gives the same tokens */
    int *t0 = nr_xmalloc((size_t)a.B * a.Tcap * sizeof(int));
    ppo_generate(&a, &m, &cfg, &ts, 1);
    memcpy(t0, a.tokens, (size_t)a.B * a.Tcap * sizeof(int));
    ppo_generate(&a, &m, &cfg, &ts, 1);
    CHECK(memcmp(t0, a.tokens, (size_t)a.B * a.Tcap * sizeof(int)) == 0, "generation is a pure function of (seed, step)");
    free(t0);
    /* EOS made likely (its embedding row scaled): rows finish at different positions and leave the decode
       batch while others go on; the tokens are still those of the uncached path */
    for (int i = 0; i < c.C; i++) m.p[GPT_WTE][(size_t)TOK_EOS * c.C + i] *= 4.0f;
    int lo = 1 << 30, hi = 0;
    same = 1;
    for (int step = 0; step < 3; step++) {
        ppo_generate(&a, &m, &cfg, &ts, step);
        ppo_generate_nocache(&b, &m, &cfg, &ts, step);
        for (int i = 0; i < a.B; i++) {
            lo = NR_MIN(lo, a.resp_len[i]), hi = NR_MAX(hi, a.resp_len[i]);
            same = same && a.resp_len[i] == b.resp_len[i];
            for (int t = 0; t < a.P + a.resp_len[i]; t++) same = same && a.tokens[i * a.Tcap + t] == b.tokens[i * b.Tcap + t];
        }
    }
    CHECK(same && lo < hi, "responses of %d to %d tokens, rows leaving the batch: cached = uncached tokens", lo, hi);
    rollout_free(&a);
    rollout_free(&b);
    gpt_free(&m);
    /* a padded embedding (3 padding rows, each 20 times a real row: their logits would be the largest):
       generation samples the real vocabulary only */
    GPTConfig cp = c;
    cp.V = TASK_VOCAB + 3;
    cp.V_real = TASK_VOCAB;
    gpt_build(&m, &cp, backend_cpu(), 8, 12, 0, 3, 0.3f);
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < cp.C; i++) m.p[GPT_WTE][(size_t)(TASK_VOCAB + k) * cp.C + i] = 20.0f * m.p[GPT_WTE][(size_t)k * cp.C + i];
    rollout_alloc(&a, &cfg, &ts, m.be, 8, 8, 0);
    int real = 1;
    for (int step = 0; step < 3; step++) {
        ppo_generate(&a, &m, &cfg, &ts, step);
        for (int i = 0; i < a.B; i++)
            for (int t = a.P; t < a.P + a.resp_len[i]; t++) real = real && a.tokens[i * a.Tcap + t] < TASK_VOCAB;
    }
    CHECK(real, "padded vocabulary: generation never samples a padding id (3 steps x 8)");
    rollout_free(&a);
    gpt_free(&m);
}

/* mean |a − b| over the rollout's response tokens (mask) of two (B, T) arrays, and how many differ in bits */
static double masked_gap(const Rollout *r, const float *a, const float *b, int *ndiff) {
    double s = 0, n = 0;
    *ndiff = 0;
    for (size_t i = 0; i < (size_t)r->B * r->T; i++) {
        if (r->mask[i] == 0.0f) continue;
        s += fabs((double)a[i] - b[i]), n += 1;
        *ndiff += memcmp(&a[i], &b[i], sizeof a[i]) != 0;
    }
    return n > 0 ? s / n : 0.0;
}

/* The behaviour log-probabilities generation records are the scoring forward's, bit for bit, on the same
 * model; with the bf16 copy (gen_dtype = bf16) too, whose decode gives the bf16 forward's bits; the bf16
 * model's are near the fp32 one's. GPT-2 and a Llama variant (its q and k|v GEMMs apart under bf16). */
static void behaviour_logp(GPTConfig c, const char *what) {
    Config cfg;
    TaskSet ts;
    gen_setup(&cfg, &ts, 7);
    GPT m;
    gpt_build(&m, &c, backend_cpu(), 8, 12, 0, 3, 0.3f);
    Rollout a, b;
    rollout_alloc(&a, &cfg, &ts, m.be, 8, 8, 0);
    rollout_alloc(&b, &cfg, &ts, m.be, 8, 8, 0);
    float *inf = nr_xcalloc((size_t)8 * a.Tcap, sizeof(float)), *f32 = nr_xcalloc((size_t)8 * a.Tcap, sizeof(float));
    int nd = 0, nd16 = 0, same = 1;
    double gap = 0, gap16 = 0, gap_dtype = 0;
    for (int step = 0; step < 2; step++) {
        gpt_gen_bf16(&m, 0);
        ppo_generate(&a, &m, &cfg, &ts, step);
        rollout_finish(&a);
        ppo_infer_stage_rows(&m, &a, 0, a.B, a.B, 0, inf);
        int d;
        gap += masked_gap(&a, a.logp_gen, inf, &d), nd += d;
        gpt_gen_bf16(&m, 1); /* the bf16 copy: generation and the scoring forward read it */
        ppo_generate(&a, &m, &cfg, &ts, step);
        ppo_generate_nocache(&b, &m, &cfg, &ts, step);
        for (int i = 0; i < a.B; i++) {
            same = same && a.resp_len[i] == b.resp_len[i];
            for (int t = 0; t < a.P + a.resp_len[i]; t++) same = same && a.tokens[i * a.Tcap + t] == b.tokens[i * b.Tcap + t];
        }
        rollout_finish(&a);
        ppo_infer_stage_rows(&m, &a, 0, a.B, a.B, 0, inf);
        gap16 += masked_gap(&a, a.logp_gen, inf, &d), nd16 += d;
        gpt_gen_bf16(&m, 0); /* the fp32 model on the bf16 model's tokens */
        ppo_infer_stage_rows(&m, &a, 0, a.B, a.B, 0, f32);
        gap_dtype += masked_gap(&a, a.logp_gen, f32, &d);
    }
    CHECK(nd == 0 && gap == 0, "%sfp32: generation's behaviour log-probs = the scoring forward's (%d differ)", what, nd);
    CHECK(same, "%sbf16: KV-cached generation samples the uncached tokens (2 steps x 8)", what);
    CHECK(nd16 == 0, "%sbf16: generation's behaviour log-probs = the bf16 scoring forward's (%d differ)", what, nd16);
    CHECK(gap_dtype > 0 && gap_dtype / 2 < 0.05, "%sbf16 against fp32 on the same tokens: mean |Δ log p| %.2e (> 0, < 0.05)",
          what, gap_dtype / 2);
    free(inf), free(f32);
    rollout_free(&a);
    rollout_free(&b);
    gpt_free(&m);
}

static void test_behaviour_logp(void) {
    GPTConfig c = {.V = TASK_VOCAB, .maxT = 16, .L = 2, .C = 64, .NH = 4, .value_head = 0};
    behaviour_logp(c, "gpt2: ");
    GPTConfig l = llama_variant(2);
    l.V = TASK_VOCAB;
    l.C = 64;
    l.ffn = 96;
    behaviour_logp(l, "qwen2: ");
}

static void test_init(void) {
    GPTConfig c = {.V = 15, .maxT = 16, .L = 2, .C = 16, .NH = 4, .value_head = 1};
    GPT a, b;
    gpt_build(&a, &c, backend_cpu(), 1, 4, 1, 42, 0.02f);
    gpt_build(&b, &c, backend_cpu(), 1, 4, 1, 42, 0.02f);
    CHECK(gpt_checksum(&a) == gpt_checksum(&b) && gpt_checksum(&a) > 0, "same seed, same parameters (%.9e)",
          gpt_checksum(&a));
    gpt_free(&b);
    gpt_build(&b, &c, backend_cpu(), 1, 4, 1, 43, 0.02f);
    CHECK(gpt_checksum(&a) != gpt_checksum(&b), "another seed, other parameters");
    gpt_free(&a);
    gpt_free(&b);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    test_table();
    test_init();
    test_kv_cache();
    test_generate();
    test_behaviour_logp();
    test_gradcheck(0);
    test_gradcheck(1);
    GPTConfig c2 = {.V = 11, .maxT = 8, .L = 2, .C = 12, .NH = 3};
    packed_head(&c2, "gpt-2: ");
    test_llama();
    int rc = CHECK_DONE();
    MPI_Finalize();
    return rc;
}
