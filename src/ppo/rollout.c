/* rollout.c — the gen stage: build the step's prompts from the global sample
 * order and sample responses from the actor, with the KV cache (the run's
 * path) or by re-running the whole prefix (the reference and benchmark). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/ppo.h"
#include "nereus/util.h"

void rollout_alloc(Rollout *r, const Config *cfg, const TaskSet *ts, const Backend *be, int B, int Bg, int b0) {
    memset(r, 0, sizeof *r);
    int P = task_prompt_len(ts);
    r->B = B;
    r->Bg = Bg;
    r->b0 = b0;
    r->group = ppo_is_grpo(cfg) ? cfg->ppo.group_size : 1;
    r->P = P;
    r->Tcap = P + cfg->ppo.max_response;
    size_t BT = (size_t)B * r->Tcap;
    r->tokens = nr_xcalloc(BT, sizeof(int));
    r->seq = nr_xcalloc(BT, sizeof(int));
    r->amax = task_max_answer(ts);
    r->eos[0] = ts->text ? ts->text->stop[0] : TOK_EOS;
    r->eos[1] = ts->text ? ts->text->stop[1] : TOK_EOS;
    r->targets = nr_xcalloc(BT, sizeof(int));
    r->resp_len = nr_xcalloc(B, sizeof(int));
    r->plen = nr_xcalloc(B, sizeof(int));
    r->answer = nr_xcalloc((size_t)B * r->amax, sizeof(int));
    r->answer_len = nr_xcalloc(B, sizeof(int));
    r->kind = nr_xcalloc(B, sizeof(int));
    r->task_reward = nr_xcalloc(B, sizeof(float));
    r->score = nr_xcalloc(B, sizeof(float));
    float **f[] = {&r->logp_old, &r->logp_ref, &r->values, &r->rm_values, &r->rewards, &r->adv, &r->ret, &r->mask,
                   &r->logp_gen};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) *f[i] = nr_xcalloc(BT, sizeof(float));
    r->next = nr_xcalloc(B, sizeof(int));
    r->act = nr_xcalloc(B, sizeof(int));
    r->be = be;
    r->d_u = be->alloc((size_t)B * sizeof(float));
    r->d_next = be->alloc((size_t)B * sizeof(int));
    r->d_blogp = be->alloc((size_t)B * sizeof(float));
}

void rollout_free(Rollout *r) {
    void *p[] = {r->tokens, r->seq, r->targets, r->resp_len, r->plen, r->answer, r->answer_len, r->kind, r->task_reward,
                 r->score, r->logp_old, r->logp_ref, r->values, r->rm_values, r->rewards, r->adv, r->ret, r->mask,
                 r->next, r->act, r->logp_gen};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) free(p[i]);
    if (r->be) {
        r->be->free(r->d_u);
        r->be->free(r->d_next);
        r->be->free(r->d_blogp);
    }
    memset(r, 0, sizeof *r);
}

/* Prompts of this step's samples into tokens[:, :P]; answers kept for scoring. */
static uint64_t rollout_sample_index(const Rollout *r, int step, int b) {
    return r->sample_base + (uint64_t)step * (uint64_t)r->Bg + (uint64_t)(r->b0 + b);
}

/* The prompt of row b: the group's (group_size rows share one prompt index); the sample index itself (its
 * sampling uniforms) stays the row's own, so the rows of a group draw different responses. */
static uint64_t rollout_prompt_index(const Rollout *r, int step, int b) {
    if (r->group <= 1) return rollout_sample_index(r, step, b);
    return r->sample_base + ((uint64_t)step * (uint64_t)r->Bg + (uint64_t)(r->b0 + b)) / (uint64_t)r->group;
}

void rollout_prompts(Rollout *r, const TaskSet *ts, int step) {
    r->ts = ts;
    for (int b = 0; b < r->B; b++) {
        uint64_t g = rollout_prompt_index(r, step, b);
        int *row = r->tokens + (size_t)b * r->Tcap;
        if (ts->text) {
            r->plen[b] = task_text_prompt(ts, g, row, &r->kind[b]);
            r->answer_len[b] = 0;
        } else {
            r->kind[b] = task_make(ts, g, row, r->answer + (size_t)b * r->amax, &r->answer_len[b]);
            r->plen[b] = r->P;
        }
        r->resp_len[b] = 0;
        memset(r->logp_gen + (size_t)b * r->Tcap, 0, (size_t)r->Tcap * sizeof(float));
    }
}

float rollout_row_reward(const Rollout *r, const int *tokens, size_t ld, int b, int *correct, int *formatted) {
    const int *resp = tokens + (size_t)b * ld + r->plen[b];
    if (r->ts && r->ts->text) {
        RewardResult res;
        float s = task_text_reward(r->ts, r->kind[b], resp, r->resp_len[b], &res);
        if (correct) *correct = res.value >= 1.0;
        if (formatted) *formatted = res.format_ok;
        return s;
    }
    float s = task_reward(r->answer + (size_t)b * r->amax, r->answer_len[b], resp, r->resp_len[b]);
    if (correct) *correct = s >= 1.0f;
    if (formatted) *formatted = 1;
    return s;
}

int ppo_min_response(const Config *cfg, int step) {
    const InjectConfig *in = &cfg->inject;
    if (in->resp_len_from <= 0 && in->resp_len_to <= 0) return 0;
    int ramp = in->resp_len_ramp > 0 ? in->resp_len_ramp : cfg->ppo.steps - 1;
    if (ramp <= 0 || step >= ramp) return in->resp_len_to;
    return in->resp_len_from + (int)lround((double)(in->resp_len_to - in->resp_len_from) * step / ramp);
}

/* The behaviour log-probabilities of the n tokens next[0..n) just sampled for rows act[0..n) at response
 * position j: the log-softmax of the actor's logits (consumed: the head's probabilities overwrite them) at
 * each token, into logp_gen at the position that predicts it. Greedy decoding (temperature 0: evaluation)
 * records none. */
static void rollout_behaviour_logp(Rollout *r, const GPT *actor, const Config *cfg, int n, int j) {
    if (cfg->ppo.temperature <= 0.0f) return;
    const Backend *be = actor->be;
    float *lp = r->score; /* host scratch (B) before scoring overwrites it */
    be->upload(r->d_next, r->next, (size_t)n * sizeof(int));
    be->logprob_forward(actor->d_logits, r->d_blogp, NULL, actor->d_logits, r->d_next, n, gpt_real_vocab(&actor->cfg),
                        actor->cfg.V);
    be->download(lp, r->d_blogp, (size_t)n * sizeof(float));
    for (int i = 0; i < n; i++) r->logp_gen[(size_t)r->act[i] * r->Tcap + r->plen[r->act[i]] - 1 + j] = lp[i];
}

/* Sample one token for each of the nact rows still generating from the actor's logits (nact, V), row i
 * of them sequence act[i], for response position j; the rows that finished earlier get end-token padding;
 * before position minlen an EOS becomes '=' (the INJECTED length drift of the digit tasks). Afterwards act,
 * nact and next hold the rows still generating and their tokens. Returns nact. */
static int rollout_sample(Rollout *r, GPT *actor, const Config *cfg, int step, int j, int minlen) {
    const Backend *be = actor->be;
    float *u = (float *)r->rewards; /* host scratch (B) before scoring overwrites it */
    int n = r->nact;
    for (int i = 0; i < n; i++) {
        uint64_t g = rollout_sample_index(r, step, r->act[i]);
        u[i] = rng_uniform((uint64_t)cfg->run.seed, RNG_SAMPLE, g, (uint64_t)(r->plen[r->act[i]] + j));
    }
    be->upload(r->d_u, u, (size_t)n * sizeof(float));
    be->sample_tokens(r->d_next, actor->d_logits, r->d_u, n, gpt_real_vocab(&actor->cfg), actor->cfg.V,
                      cfg->ppo.temperature, cfg->ppo.top_k);
    be->download(r->next, r->d_next, (size_t)n * sizeof(int));
    for (int i = 0; i < n; i++)
        if (j + 1 < minlen && r->next[i] == TOK_EOS) r->next[i] = TOK_EQ;
    rollout_behaviour_logp(r, actor, cfg, n, j);
    for (int b = 0; b < r->B; b++) r->tokens[(size_t)b * r->Tcap + r->plen[b] + j] = r->eos[0]; /* padding unless sampled */
    int running = 0;
    for (int i = 0; i < n; i++) {
        int b = r->act[i], tok = r->next[i];
        r->tokens[(size_t)b * r->Tcap + r->plen[b] + j] = tok;
        r->resp_len[b] = j + 1;
        if (tok == r->eos[0] || tok == r->eos[1]) continue;
        r->act[running] = b; /* compacted in place: running <= i */
        r->next[running++] = tok;
    }
    return r->nact = running;
}

/* every row generating, each at its own cache slot */
static void rollout_start(Rollout *r) {
    for (int b = 0; b < r->B; b++) r->act[b] = b;
    r->nact = r->B;
}

/* 1 when every row's prompt has the same length (one batched prefill, every decode row at one position) */
static int rollout_uniform(const Rollout *r) {
    for (int b = 1; b < r->B; b++)
        if (r->plen[b] != r->plen[0]) return 0;
    return 1;
}

/* the prompts into the actor's cache: one batched prefill where their lengths agree, else each row alone (the
   same bits: the row kernels are batch-invariant) */
static void rollout_prefill(Rollout *r, GPT *actor) {
    if (!rollout_uniform(r)) {
        gpt_prefill_rows(actor, r->tokens, r->Tcap, r->plen, r->B, NULL);
        return;
    }
    int P = r->plen[0];
    int *prompt = nr_xmalloc((size_t)r->B * P * sizeof(int)); /* a dense (B, P) block */
    for (int b = 0; b < r->B; b++) memcpy(prompt + (size_t)b * P, r->tokens + (size_t)b * r->Tcap, P * sizeof(int));
    gpt_prefill(actor, prompt, r->B, P, NULL);
    free(prompt);
}

/* one decode step of the rows still generating, response token j: at one position, or each at its own */
static void rollout_decode(Rollout *r, GPT *actor, int uniform, int running, int j) {
    const int *slots = running == r->B ? NULL : r->act;
    if (uniform) {
        gpt_decode_rows(actor, r->next, slots, running, r->plen[0] + j, NULL);
        return;
    }
    int *pos = nr_xmalloc((size_t)running * sizeof(int));
    for (int i = 0; i < running; i++) pos[i] = r->plen[r->act[i]] + j;
    gpt_decode_at(actor, r->next, slots, pos, running, NULL);
    free(pos);
}

void ppo_generate(Rollout *r, GPT *actor, const Config *cfg, const TaskSet *ts, int step) {
    rollout_prompts(r, ts, step);
    int R = cfg->ppo.max_response, minlen = ppo_min_response(cfg, step), uniform = rollout_uniform(r);
    rollout_prefill(r, actor);
    rollout_start(r);
    for (int j = 0; j < R; j++) {
        int running = rollout_sample(r, actor, cfg, step, j, minlen);
        if (running == 0 || j + 1 == R) break;
        rollout_decode(r, actor, uniform, running, j);
    }
}

void ppo_generate_nocache(Rollout *r, GPT *actor, const Config *cfg, const TaskSet *ts, int step) {
    rollout_prompts(r, ts, step);
    if (!rollout_uniform(r)) nr_fatal("ppo_generate_nocache: prompts of different lengths (the cached path takes them)");
    int R = cfg->ppo.max_response, minlen = ppo_min_response(cfg, step);
    int *dense = nr_xmalloc((size_t)r->B * r->Tcap * sizeof(int));
    rollout_start(r);
    for (int j = 0; j < R; j++) {
        int T = r->P + j, n = r->nact; /* the whole prefix of each row still generating */
        for (int i = 0; i < n; i++)
            memcpy(dense + (size_t)i * T, r->tokens + (size_t)r->act[i] * r->Tcap, T * sizeof(int));
        gpt_forward(actor, dense, n, T, 0, 0);
        gpt_logits_last(actor, n, T); /* as the cached path computes them */
        int running = rollout_sample(r, actor, cfg, step, j, minlen);
        if (running == 0 || j + 1 == R) break;
    }
    free(dense);
}

/* row b of r (scored s) into rows at its place in the evaluation */
static void eval_row_put(EvalRows *rows, uint64_t at, const Rollout *r, int b, float s, int right, int found) {
    double *v = rows->v + at * (uint64_t)(EVAL_ROW_HEAD + rows->maxr);
    int n = NR_MIN(r->resp_len[b], rows->maxr);
    const int *resp = r->tokens + (size_t)b * (size_t)r->Tcap + r->plen[b];
    v[0] = r->kind[b], v[1] = s, v[2] = right, v[3] = found, v[4] = n;
    for (int i = 0; i < n; i++) v[EVAL_ROW_HEAD + i] = resp[i];
}

void ppo_eval_greedy(GPT *actor, const Config *cfg, const TaskSet *ts, int B, int Bg, int b0, int nbatches,
                     uint64_t limit, EvalStats *sum, EvalRows *rows) {
    Config ec = *cfg;
    ec.ppo.batch = B;
    ec.ppo.temperature = 0.0f;
    ec.ppo.top_k = 0;
    ec.inject.resp_len_from = ec.inject.resp_len_to = 0; /* held-out evaluation: no injected drift */
    /* the digit tasks: the longest response the actor holds; text: the deck's max_response */
    if (!ts->text) ec.ppo.max_response = actor->Tmax - task_prompt_len(ts);
    Rollout r;
    rollout_alloc(&r, &ec, ts, actor->be, B, Bg, b0);
    /* held-out digit prompts far past any training sample; text: the eval set from its first sample */
    r.sample_base = ts->text ? 0 : 1ULL << 50;
    r.group = 1; /* held-out prompts, one greedy response each */
    memset(sum, 0, sizeof *sum);
    for (int k = 0; k < nbatches; k++) {
        ppo_generate(&r, actor, &ec, ts, k);
        for (int b = 0; b < B; b++) {
            if (k * (uint64_t)Bg + (uint64_t)(b0 + b) >= limit) continue;
            int right = 0, found = 0;
            float s = rollout_row_reward(&r, r.tokens, (size_t)r.Tcap, b, &right, &found);
            sum->reward += s;
            sum->n += 1, sum->correct += right, sum->formatted += found, sum->len += r.resp_len[b];
            uint64_t at = k * (uint64_t)Bg + (uint64_t)(b0 + b);
            if (rows && at < (uint64_t)rows->n) eval_row_put(rows, at, &r, b, s, right, found);
        }
    }
    rollout_free(&r);
}
