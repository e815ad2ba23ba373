/* txprice.c — transitions of a job's plans priced by the transition
 * engine's estimate (txprice.h). Pure. */
#include "nereus/txprice.h"

#include <math.h>
#include <string.h>

#include "nereus/plan.h"
#include "nereus/task.h"
#include "nereus/text.h"
#include "nereus/util.h"

void job_shape_of(const Config *cfg, const TaskSet *ts, JobShape *o) {
    memset(o, 0, sizeof *o);
    o->use_tokens = strcmp(cfg->sft.data, "tokens") == 0 && cfg->sft.steps > 0;
    o->V = cfg->model.vocab_size ? cfg->model.vocab_size
                                 : ts->text ? tok_n_vocab(ts->text->tk) : (o->use_tokens ? GPT2_VOCAB : TASK_VOCAB);
    o->P = task_prompt_len(ts);
    o->Tsft = o->use_tokens ? (cfg->sft.seq > 0 ? cfg->sft.seq : cfg->model.max_seq) : o->P + task_max_answer(ts) + 1;
    int Tresp = cfg->ppo.steps > 0 ? cfg->ppo.max_response : task_max_answer(ts) + 1;
    o->Tgen = NR_MIN(cfg->model.max_seq, o->P + Tresp);
    /* text: every kept prompt, training or held out, fits max_seq with max_response after it (dataset.h); the
       evaluation generates max_response tokens even where no PPO step runs */
    if (ts->text) o->Tgen = cfg->model.max_seq;
    o->have_rm = cfg->reward.network && cfg->ppo.steps > 0;
    o->ac = job_model_config(cfg, o->V);
    o->cc = o->ac;
    o->cc.value_head = 1;
}

/* auto | true | false for the arch: auto is on where the arch has it */
static int job_arch_flag(const char *v, int arch_has) { return strcmp(v, "auto") == 0 ? arch_has : strcmp(v, "true") == 0; }

GPTConfig job_model_config(const Config *cfg, int V) {
    const ModelConfig *m = &cfg->model;
    GPTConfig c = {.V = V, .maxT = m->max_seq, .L = m->n_layer, .C = m->n_embd, .NH = m->n_head};
    c.arch = gpt_arch_parse(m->arch);
    if (c.arch <= GPT_ARCH_GPT2) { c.arch = GPT_ARCH_GPT2; return c; }
    c.NKV = m->n_kv_head;
    c.ffn = m->ffn_dim;
    c.head_dim = m->head_dim;
    c.untied = !m->tie_embeddings;
    c.qkv_bias = job_arch_flag(m->qkv_bias, c.arch == GPT_ARCH_QWEN2);
    c.qk_norm = job_arch_flag(m->qk_norm, c.arch == GPT_ARCH_QWEN3);
    c.rope_theta = m->rope_theta;
    c.norm_eps = m->norm_eps;
    if (m->rope_scaling_factor > 0) {
        c.rope_llama3 = 1;
        c.rope_orig_ctx = m->rope_original_max_seq;
        c.rope_factor = m->rope_scaling_factor;
        c.rope_low_freq = m->rope_low_freq_factor;
        c.rope_high_freq = m->rope_high_freq_factor;
    }
    return c;
}

PlanLimits job_plan_limits(const Config *cfg, int world) {
    PlanLimits l = {world, cfg->model.n_head, cfg->model.n_layer, cfg->ppo.batch, cfg->ppo.minibatch, 0, 0,
                    strcmp(cfg->ppo.algorithm, "grpo") == 0};
    GPTConfig c = job_model_config(cfg, 1);
    if (gpt_is_llama(&c)) {
        l.n_kv_head = gpt_kv_heads(&c);
        l.ffn = gpt_ffn(&c);
    }
    return l;
}

void tx_stage_capacity(const TxPricer *p, int id, int dp, int *Bmax, int *Tmax) {
    const Config *cfg = p->cfg;
    *Bmax = cfg->ppo.batch / dp;
    *Tmax = p->Tgen;
    if (plan_stage_is_train(id)) {
        *Bmax = cfg->ppo.minibatch / dp;
        if (id == PLAN_ACTOR_TRAIN && cfg->sft.steps > 0) { /* the SFT warm-start trains actor.train too */
            *Bmax = NR_MAX(*Bmax, cfg->sft.batch / dp);
            *Tmax = NR_MAX(*Tmax, p->Tsft);
        }
    }
    /* scored in chunks, and trained in passes whose gradients add up */
    if (id != PLAN_ACTOR_GEN && cfg->ppo.micro_batch > 0) *Bmax = NR_MIN(*Bmax, cfg->ppo.micro_batch);
}

int tx_stage_holds_model(const TxPricer *p, int id) {
    if (plan_stage_is_critic_model(id) && strcmp(p->cfg->ppo.algorithm, "grpo") == 0) return 0; /* no critic */
    return id != PLAN_REWARD_INF || p->have_rm;
}

int tx_stage_bf16(const Config *cfg, int id) {
    if (plan_stage_is_train(id)) return 0;
    return strcmp(id == PLAN_ACTOR_GEN ? cfg->model.gen_dtype : cfg->model.score_dtype, "bf16") == 0;
}

double tx_stage_shard_bytes(const TxPricer *p, int id, const PlanStage *s, int pos) {
    if (!tx_stage_holds_model(p, id)) return 0;
    int Bmax, Tmax;
    tx_stage_capacity(p, id, s->dp, &Bmax, &Tmax);
    const GPTConfig *c = plan_stage_is_critic(id) ? &p->cc : &p->ac;
    int pr = pos / (s->tp * s->dp);
    double b = (double)gpt_shard_bytes(c, s->tp, s->pp, pr, Bmax, Tmax, plan_stage_is_train(id));
    /* the bf16 copy beside the fp32 weights, half their bytes */
    if (tx_stage_bf16(p->cfg, id)) b += 0.5 * (double)gpt_shard_state_bytes(c, s->tp, s->pp, pr, 0);
    return b;
}

void tx_change_for(const TxPricer *p, int id, int kind, const PlanStage *from, const PlanStage *to, TxChange *x) {
    memset(x, 0, sizeof *x);
    x->id = id;
    x->kind = kind;
    x->tie = plan_stage_phase(id);
    x->cfg = plan_stage_is_critic(id) ? p->cc : p->ac;
    x->from = *from;
    x->to = *to;
    x->trainable = plan_stage_is_train(id) && kind == TX_MOVE;
    x->nbufs = x->trainable ? 3 : 1;
    int T;
    tx_stage_capacity(p, id, from->dp, &x->bmax_from, &T);
    tx_stage_capacity(p, id, to->dp, &x->bmax_to, &x->tmax);
}

int tx_changes(const TxPricer *p, const PlanConfig *a, const PlanConfig *b, TxChange *ch) {
    int n = 0;
    for (int i = 0; i < PLAN_NSTAGES; i++) {
        if (!tx_stage_holds_model(p, i) || plan_stage_same(&a->stage[i], &b->stage[i])) continue;
        tx_change_for(p, i, TX_MOVE, &a->stage[i], &b->stage[i], &ch[n]);
        ch[n++].comm_shared = !plan_stage_new_comms(a, b, i) || plan_kept_has(p->kept, &b->stage[i]);
    }
    return n;
}

void tx_kept_switch(TxPricer *p, const PlanConfig *a, const PlanConfig *b) {
    if (p->kept) plan_kept_switch(p->kept, p->cfg->transition.keep_comms, a, b);
}

TxOptions tx_options_of(const TxPricer *p) {
    const TransitionConfig *t = &p->cfg->transition;
    int measured = !(t->bandwidth_gbs > 0);
    double bw = !measured ? t->bandwidth_gbs * 1e9 : p->link_rate > 0 ? p->link_rate : TX_NOMINAL_BW;
    TxOptions o = {t->memory_mib * 1024.0 * 1024.0, (size_t)t->chunk_kib * 1024, (size_t)t->window_kib * 1024, bw,
                   t->latency_us * 1e-6, t->comm_setup_us * 1e-6, NULL, 0, 0, 0, !t->forward,
                   measured ? p->copy_rate : 0, measured && p->shared_cores, 0, 0};
    return o;
}

double tx_comm_setup_s(int ranks) { return TX_COMM_SETUP_BASE_S + TX_COMM_SETUP_RANK_S * (ranks > 0 ? ranks : 1); }

double tx_predicted_s(const TxChange *ch, int n, int nranks, const TxOptions *o) {
    if (n == 0) return 0;
    TxPlan P;
    char why[512];
    if (tx_plan_build(&P, ch, n, nranks, o, why, sizeof why) != 0) return INFINITY;
    double t = P.predicted_s;
    tx_plan_free(&P);
    return t;
}

void tx_calib_add(TxCalib *c, double predicted_s, double measured_s) {
    if (!(predicted_s > 0) || !(measured_s > 0) || !isfinite(predicted_s) || !isfinite(measured_s)) return;
    c->ratio[c->next] = measured_s / predicted_s;
    c->next = (c->next + 1) % TX_CALIB_N;
    if (c->n < TX_CALIB_N) c->n++;
}

double tx_calib_scale(const TxCalib *c) {
    if (c->n <= 0) return 1;
    double r[TX_CALIB_N];
    memcpy(r, c->ratio, (size_t)c->n * sizeof *r);
    return nr_median(r, c->n);
}

double tx_price(void *pricer, const PlanConfig *a, const PlanConfig *b) {
    const TxPricer *p = pricer;
    TxChange ch[PLAN_NSTAGES];
    int n = tx_changes(p, a, b, ch);
    TxOptions o = tx_options_of(p);
    return tx_predicted_s(ch, n, p->nranks, &o) * tx_calib_scale(&p->calib);
}

double tx_price_setup(void *pricer, const PlanConfig *a, const PlanConfig *b) {
    const TxPricer *p = pricer;
    TxChange ch[PLAN_NSTAGES];
    int n = tx_changes(p, a, b, ch), sets = 0;
    for (int i = 0; i < n; i++) sets += !ch[i].comm_shared;
    return sets * tx_options_of(p).comm_setup * tx_calib_scale(&p->calib);
}
