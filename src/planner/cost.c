/* cost.c — the planner's cost model (planner.h): model shapes, the
 * latency and memory of one model-stage under a layout (its ideal seconds
 * per operation class over the calibrated efficiency of the class), a whole
 * step under a plan (a phase takes the largest per-rank sum of its stages;
 * the phases add up), and the calibration of the efficiency factors. This
 * is the whole model on a GPU cluster, one rank per device. Where ranks
 * share a node's CPU cores, cost_shared_cores.c stretches the stages of a
 * plan as the cores are shared out. Pure. */
#include "cost_int.h"
#include "nereus/util.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- shapes ----------------------------------------------------------------- */

ModelShape shape_of_config(const GPTConfig *cfg, const char *name) {
    ModelShape m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "%s", name);
    int llama = gpt_is_llama(cfg);
    m.L = cfg->L, m.C = cfg->C, m.NH = cfg->NH, m.KVH = gpt_kv_heads(cfg), m.HD = gpt_head_dim(cfg);
    m.FFN = gpt_ffn(cfg), m.gated = llama, m.V = cfg->V, m.tied = !llama || !cfg->untied;
    m.value_head = cfg->value_head, m.idle_head = cfg->value_head && !m.tied;
    m.pos = llama ? 0 : cfg->maxT, m.bias = !llama, m.qkv_bias = llama && cfg->qkv_bias;
    m.qk_norm = llama && cfg->qk_norm, m.norm_vecs = llama ? 1 : 2;
    m.wbytes = 4, m.exact = 1, m.cfg = *cfg;
    return m;
}

int shape_named(const char *name, ModelShape *out) {
    /* published configurations (each model's config.json: layers, width, query and key/value heads, head
       width, MLP width, vocabulary, context); untied output heads, Qwen3's QK-norm, no biases; built by
       shape_of_config, the function that prices a live model, then counted in bf16 */
    static const struct { const char *n; int arch, L, C, NH, KVH, HD, FFN, V, T; } t[] = {
        {"llama-3.1-8b", GPT_ARCH_LLAMA, 32, 4096, 32, 8, 128, 14336, 128256, 131072},
        {"qwen3-14b", GPT_ARCH_QWEN3, 40, 5120, 40, 8, 128, 17408, 151936, 40960},
        {"qwen3-32b", GPT_ARCH_QWEN3, 64, 5120, 64, 8, 128, 25600, 151936, 40960},
        {"llama-3.3-70b", GPT_ARCH_LLAMA, 80, 8192, 64, 8, 128, 28672, 128256, 131072},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(name, t[i].n) == 0) {
            GPTConfig c = {.V = t[i].V, .maxT = t[i].T, .L = t[i].L, .C = t[i].C, .NH = t[i].NH, .arch = t[i].arch,
                           .NKV = t[i].KVH, .ffn = t[i].FFN, .head_dim = t[i].HD, .untied = 1,
                           .qk_norm = t[i].arch == GPT_ARCH_QWEN3};
            *out = shape_of_config(&c, name);
            out->wbytes = 2, out->exact = 0; /* bf16; memory by the analytic rule, not this code's fp32 buffers */
            return 0;
        }
    return -1;
}

/* per-head width, query and key/value widths */
static double shape_hd(const ModelShape *m) { return m->HD > 0 ? m->HD : (double)m->C / m->NH; }
static double shape_cq(const ModelShape *m) { return m->HD > 0 ? (double)m->NH * m->HD : m->C; }
static double shape_ckv(const ModelShape *m) {
    return m->HD > 0 ? (double)m->KVH * m->HD : (double)m->C * m->KVH / m->NH;
}

/* matmul weights of one layer */
static double layer_params(const ModelShape *m) {
    double C = m->C, q = shape_cq(m), kv = shape_ckv(m);
    return C * q + 2 * C * kv + q * C + (m->gated ? 3.0 : 2.0) * C * m->FFN;
}

/* the vectors of one layer: biases, norms of q and k, the two norms */
static double layer_vectors(const ModelShape *m) {
    double C = m->C, qkv = shape_cq(m) + 2 * shape_ckv(m);
    double b = m->bias ? qkv + C + (m->gated ? 2.0 : 1.0) * m->FFN + C : (m->qkv_bias ? qkv : 0);
    return b + (m->qk_norm ? 2 * shape_hd(m) : 0) + 2.0 * m->norm_vecs * m->C;
}

/* the head's matmul: the LM head (V·C) or the value head (C) */
static double head_params(const ModelShape *m) { return m->value_head ? (double)m->C : (double)m->V * m->C; }

double shape_params(const ModelShape *m) {
    double emb = ((double)m->V + m->pos) * m->C, ln = (double)m->norm_vecs * m->C;
    double lm = (double)m->V * m->C, head = m->value_head ? m->C + 1.0 + (m->idle_head ? lm : 0) : (m->tied ? 0 : lm);
    return emb + m->L * (layer_params(m) + layer_vectors(m)) + ln + head;
}

/* forward FLOPs per token with context T: matmuls + causal attention */
static double fwd_flops_dense(const ModelShape *m) { return 2.0 * (m->L * layer_params(m) + head_params(m)); }
static double fwd_flops_attn(const ModelShape *m, double T) { return m->L * 4.0 * shape_cq(m) * (T + 1) / 2.0; }
double shape_fwd_flops(const ModelShape *m, double T) { return fwd_flops_dense(m) + fwd_flops_attn(m, T); }

Efficiency eff_default(void) {
    Efficiency e;
    e.f[EFF_GEMM] = 0.4;
    e.f[EFF_ATTN] = 0.2;
    e.f[EFF_DECODE] = 0.3;
    for (int k = EFF_AR_INTRA; k < EFF_N; k++) e.f[k] = 0.5; /* links, operations, latency */
    return e;
}

/* ---- one stage ------------------------------------------------------------------ */

static const ModelShape *stage_shape(const CostModel *cm, int stage) {
    return plan_stage_is_critic(stage) ? &cm->critic : &cm->actor;
}

static double p2p_s(const CostModel *cm, double bytes, int k) {
    return bytes / cm->hw.bw[k] / cm->eff.f[k ? EFF_P2P_INTER : EFF_P2P_INTRA] + lat_s(cm, 1, k);
}

/* mult ring all-reduces of `bytes` over n ranks on link k (0 inside a node, 1 between) */
static void add_allreduce(const CostModel *cm, Parts *pt, double mult, double bytes, int n, int k) {
    if (n <= 1 || !(mult > 0)) return;
    int c = k ? EFF_AR_INTER : EFF_AR_INTRA;
    pt->t[c] += mult * 2.0 * (n - 1) / n * bytes / cm->hw.bw[k] / cm->eff.f[c];
    pt->t[EFF_LAT] += mult * lat_s(cm, 2.0 * (n - 1), k);
}

/* mult point-to-point messages of `bytes` on link k */
static void add_p2p(const CostModel *cm, Parts *pt, double mult, double bytes, int k) {
    int c = k ? EFF_P2P_INTER : EFF_P2P_INTRA;
    pt->t[c] += mult * bytes / cm->hw.bw[k] / cm->eff.f[c];
    pt->t[EFF_LAT] += mult * lat_s(cm, 1, k);
}

/* the longest response of a step's batch: the decode steps it runs (0 in the workload: every response as
   long as the mean) */
static double resp_longest(const Workload *w) { return w->resp_longest > w->resp_len ? w->resp_longest : w->resp_len; }

/* The fraction of a batch's rows still generating at position j of the tail [lo, hi], averaged over
 * [j0, j1]: the survival S(j) = (1 − (j − lo)/(hi − lo))^a, whose row-steps, lo + (hi − lo)/(a + 1), are the
 * mean's (decode_parts sets lo and a so) */
static double rows_left(double lo, double hi, double a, double j0, double j1) {
    double u0 = 1 - (j0 - lo) / (hi - lo), u1 = 1 - (j1 - lo) / (hi - lo);
    return (pow(u0, a + 1) - pow(u1, a + 1)) / (a + 1) * (hi - lo) / (j1 - j0);
}

/* bytes per weight the stage reads as it runs: the bf16 copy's 2 where [model] gen_dtype or score_dtype asks
   for one (CostModel.gen_wbytes, score_wbytes), else the shape's */
static double stage_wbytes(const CostModel *cm, int stage, const ModelShape *m) {
    double b = stage == PLAN_ACTOR_GEN ? cm->gen_wbytes : plan_stage_is_train(stage) ? 0 : cm->score_wbytes;
    return b > 0 ? b : m->wbytes;
}

/* Decode of one replica's B rows, tp-way: one step per position of the longest response, over the rows
 * still generating (finished sequences leave the batch). A step costs the larger of its FLOPs (per row)
 * and its memory traffic (the shard's weights once, plus each row's KV cache), and two TP sums a layer of
 * its rows. The lengths keep the mean: where the longest is at most twice the mean they are spread evenly
 * over [2·mean − longest, longest] (every row generates up to the shortest, then rows leave at an even
 * rate); where it is more, as when most rows stop at an early end token and a few run long, every row starts
 * the tail at 0 and leaves faster early: rows still generating at j are B·(1 − j/longest)^a with
 * a = longest/mean − 1 (a = 1, the even spread, at twice the mean). Either way the row-steps are B × the
 * mean. The steps are summed in 16 slices of the tail. With longest = mean this is mean steps of all B rows. */
static void decode_parts(const CostModel *cm, const ModelShape *m, const Workload *w, double B, int tp, int ktp,
                         Parts *pt) {
    const HwModel *hw = &cm->hw;
    double ab = m->exact ? 4.0 : 2.0, kvw = shape_ckv(m), Ploc = shape_params(m) / tp;
    double hi = resp_longest(w), lo = fmax(0.0, 2.0 * w->resp_len - hi);
    double a = lo > 0 || !(w->resp_len > 0) ? 1.0 : hi / w->resp_len - 1.0; /* the tail's survival exponent */
    double F = hw->flops * cm->eff.f[EFF_GEMM], bw = hw->hbm * cm->eff.f[EFF_DECODE];
    enum { SLICES = 16 };
    for (int k = -1; k < SLICES; k++) {
        /* k = -1: the lo steps every row runs; k >= 0: slice k of the tail (lo, hi] */
        double steps = k < 0 ? lo : (hi - lo) / SLICES;
        if (!(steps > 0)) continue;
        double j = k < 0 ? lo / 2.0 : lo + (k + 0.5) * steps; /* mean position of the slice's steps */
        double rows = k < 0 ? B : B * rows_left(lo, hi, a, lo + k * steps, lo + (k + 1) * steps);
        if (!(rows > 0)) continue;
        double ctx = w->prompt_len + j;
        double fl = rows * (fwd_flops_dense(m) + fwd_flops_attn(m, ctx)) / tp;
        double by = Ploc * stage_wbytes(cm, PLAN_ACTOR_GEN, m) + 2.0 * m->L * rows * ctx * kvw / tp * ab;
        double tc = fl / F, tm = by / bw;
        if (tc > tm) pt->t[EFF_GEMM] += steps * tc;
        else pt->t[EFF_DECODE] += steps * tm;
        add_allreduce(cm, pt, steps * 2.0 * m->L, rows * m->C * ab, tp, ktp);
    }
}

static double stage_parts(const CostModel *cm, int stage, GridLayout l, const Workload *w, double *mem, Parts *pt) {
    const ModelShape *m = stage_shape(cm, stage);
    memset(pt, 0, sizeof *pt);
    pt->duty = 1;
    if (cm->no_critic && plan_stage_is_critic_model(stage)) { /* not in a critic-free job's stage set */
        if (mem) *mem = 0;
        return 0;
    }
    if (mem) *mem = INFINITY;
    int tp = l.tp, pp = l.pp, dp = l.dp, train = plan_stage_is_train(stage), gen = stage == PLAN_ACTOR_GEN;
    if (tp < 1 || pp < 1 || dp < 1 || m->NH % tp || m->KVH % tp || (m->FFN && m->FFN % tp) || m->L % pp ||
        w->batch % dp)
        return INFINITY;
    if (train && w->minibatch % dp) return INFINITY;
    if (gen && pp > 1) return INFINITY;
    if (stage == PLAN_REWARD_INF && !cm->have_rm) {
        if (mem) *mem = 0;
        return 0;
    }
    const HwModel *hw = &cm->hw;
    int rpn = hw->ranks_per_node > 0 ? hw->ranks_per_node : 1;
    /* grid.h: TP fastest, then DP, then PP; ranks_per_node consecutive ranks share a node */
    int ktp = tp > rpn, kdp = tp * dp > rpn, kpp = tp * dp * pp > rpn;
    double ab = m->exact ? 4.0 : 2.0; /* activation bytes */
    double P = shape_params(m), Ploc = P / (tp * pp);
    /* scoring and training run over T positions a row: this code base pads every row to the batch's longest
       response (rollout_finish); a modelled framework packs rows, the mean */
    double T = w->prompt_len + (m->exact ? resp_longest(w) : w->resp_len), Tmax = w->prompt_len + w->resp_max;
    double B = (double)w->batch / dp; /* rows per replica */
    double C = m->C, Lloc = (double)m->L / pp, kvw = shape_ckv(m);
    double F = hw->flops, E_g = cm->eff.f[EFF_GEMM], E_a = cm->eff.f[EFF_ATTN];
    double mb = pp, bubble = (mb + pp - 1) / mb;
    /* operations of one forward pass over a pipeline stage's layers: ~12 a layer, ~4 for the head */
    double ops_pass = 12.0 * Lloc + 4.0, op_t = hw->op_s > 0 ? hw->op_s / cm->eff.f[EFF_OPS] : 0;
    if (gen) {
        pt->t[EFF_OPS] += (1.0 + resp_longest(w)) * ops_pass * op_t; /* the prefill and one pass a decode step */
        /* prefill: the prompts in one forward */
        double toks = B * w->prompt_len;
        pt->t[EFF_GEMM] += toks * fwd_flops_dense(m) / tp / (F * E_g);
        pt->t[EFF_ATTN] += toks * fwd_flops_attn(m, w->prompt_len) / tp / (F * E_a);
        add_allreduce(cm, pt, 2.0 * m->L, toks * C * ab, tp, ktp);
        decode_parts(cm, m, w, B, tp, ktp, pt);
    } else {
        double passes = 1, rows = B, mult = 1; /* inference: one forward over the replica's rows */
        if (train) {
            passes = (double)w->epochs * w->batch / w->minibatch;
            rows = (double)w->minibatch / dp;
            mult = 3; /* forward + backward */
        }
        double toks = rows * T;
        double gemm = passes * mult * toks * fwd_flops_dense(m) / (tp * pp) / (F * E_g);
        double attn = passes * mult * toks * fwd_flops_attn(m, T) / (tp * pp) / (F * E_a);
        pt->t[EFF_GEMM] += gemm * bubble;
        pt->t[EFF_ATTN] += attn * bubble;
        pt->duty = 1 / bubble;
        pt->t[EFF_OPS] += passes * mb * mult * ops_pass * op_t * bubble;
        if (train) pt->t[EFF_OPS] += passes * ops_pass * op_t; /* AdamW, about one operation per tensor */
        double nar = train ? 4.0 : 2.0;
        /* TP: nar all-reduces a layer for each of the mb microbatches */
        add_allreduce(cm, pt, passes * nar * Lloc * mb * bubble, toks * C * ab / mb, tp, ktp);
        if (pp > 1) { /* activations across each stage boundary, forward (and backward), and the last
                         stage's per-token results to the others (two broadcasts a forward pass) */
            add_p2p(cm, pt, passes * (train ? 2 : 1) * (pp - 1), toks * C * ab / mb, kpp);
            /* on shared cores, each crossing of a stage boundary on the schedule's critical path ((mb + pp - 1)
               a direction) also waits for a time slice (cost_shared_cores.c; nothing on a GPU) */
            cores_add_pipe_wait(cm, pt, passes * (train ? 2 : 1) * (mb + pp - 1), kpp, rpn);
            add_allreduce(cm, pt, passes * 2.0, toks * 4.0, pp, kpp);
        }
        if (train) { /* per update: the gradient norm over the shard's tp and pp groups, the tied embedding's
                        gradient between the first and last pipeline stages */
            add_allreduce(cm, pt, passes, 8.0, tp, ktp);
            if (pp > 1) {
                add_allreduce(cm, pt, passes, 8.0, pp, kpp);
                add_allreduce(cm, pt, passes, (double)m->V * C / tp * 4.0, 2, kpp);
            }
        }
        if (train) { /* gradients over the replicas, then AdamW (memory-bound: 7 passes over 4-byte state) */
            add_allreduce(cm, pt, passes, Ploc * 4.0, dp, kdp);
            pt->t[EFF_DECODE] += passes * Ploc * 28.0 / (hw->hbm * cm->eff.f[EFF_DECODE]);
        }
    }
    if (mem) {
        if (m->exact) { /* this code base's own allocation, the largest pipeline stage */
            int Bmax = train ? w->minibatch / dp : w->batch / dp;
            int Tm = (int)ceil(Tmax);
            if (Tm > m->cfg.maxT) Tm = m->cfg.maxT;
            double big = 0;
            int copy = stage_wbytes(cm, stage, m) < m->wbytes; /* a bf16 copy beside the fp32 weights */
            for (int p = 0; p < pp; p++) {
                double b = (double)gpt_shard_bytes(&m->cfg, tp, pp, p, Bmax, Tm, train);
                if (copy) b += 0.5 * (double)gpt_shard_state_bytes(&m->cfg, tp, pp, p, 0);
                if (b > big) big = b;
            }
            *mem = big;
        } else {
            double per_param = train ? 16.0 : m->wbytes; /* bf16 weights + grads, fp32 master, m, v */
            double state = Ploc * per_param;
            /* activations of one microbatch of at most 8 sequences (gradient accumulation over
               the rest; inference scores 8 at a time) */
            double rows = fmin(train ? (double)w->minibatch / dp : B, 8.0);
            double act = train ? rows * Tmax * C * ab * (Lloc * 2.0 + 16.0) / tp   /* checkpointed layers + one live */
                               : rows * Tmax * C * ab * 16.0 / tp;
            double kv = gen ? 2.0 * m->L * B * Tmax * kvw / tp * ab : 0;
            double logits = m->value_head ? 0 : rows * Tmax * (double)m->V * 4.0 / tp; /* fp32 logits */
            *mem = state + act + kv + logits;
        }
    }
    double s = 0;
    for (int k = 0; k < EFF_N; k++) s += pt->t[k];
    return s;
}

double cost_stage(const CostModel *cm, int stage, GridLayout l, const Workload *w, double *mem) {
    Parts pt;
    return stage_parts(cm, stage, l, w, mem, &pt);
}

static void parts_split(const Parts *pt, int cores, double *compute, double *comm) {
    *compute = *comm = 0;
    for (int k = 0; k < EFF_N; k++) *(on_core(cores, k) ? compute : comm) += pt->t[k];
}

double cost_stage_compute(const CostModel *cm, int stage, GridLayout l, const Workload *w) {
    Parts pt;
    double c, m, t = stage_parts(cm, stage, l, w, NULL, &pt);
    if (!isfinite(t)) return t;
    parts_split(&pt, cm->hw.cores, &c, &m);
    return c;
}

/* ---- a plan ---------------------------------------------------------------------- */

/* The phases of a plan into cw->phases (cost_int.h, PlanPhases). Per stage its compute, at its slowest member's
 * pace (cm->slow), and its communication; per rank and phase their sums. A phase takes its largest per-rank sum
 * (stages on disjoint ranks overlap, stages sharing a rank add up). Where a node's ranks share its cores
 * (hw.cores > 0), cost_shared_cores.c stretches each rank's compute and the communication; on a GPU every
 * stretch is 1. */
static void plan_phases(CostWork *cw, const CostModel *cm, const PlanConfig *plan, int nranks, const Workload *w) {
    PlanPhases *pp = &cw->phases;
    double cs[PLAN_NSTAGES], ms[PLAN_NSTAGES], sk[PLAN_NSTAGES]; /* per stage: compute (slowed), communication,
                                                                    the compute's stretch as its ranks time it */
    int sched[3] = {0, 0, 0};                                   /* the phase was scheduled on shared cores */
    memset(pp, 0, offsetof(PlanPhases, rm)); /* the per-rank arrays only as far as the job's ranks: a plan on 16
                                                 ranks is priced thousands of times a simulated step */
    memset(pp->rm, 0, (size_t)nranks * sizeof pp->rm[0]);
    pp->cores = cm->hw.cores;
    for (int ph = 0; ph < 3; ph++) {
        memset(cw->rank_compute[ph], 0, (size_t)nranks * sizeof(double));
        memset(cw->rank_comm[ph], 0, (size_t)nranks * sizeof(double));
    }
    for (int s = 0; s < PLAN_NSTAGES; s++) {
        const PlanStage *ps = &plan->stage[s];
        double mem = 0, f = 1, c, m;
        double t = stage_parts(cm, s, (GridLayout){ps->tp, ps->pp, ps->dp}, w, &mem, &pp->parts[s]);
        if (isfinite(t)) parts_split(&pp->parts[s], cm->hw.cores, &c, &m);
        else c = m = INFINITY;
        if (cm->slow) /* at the pace of its slowest rank */
            for (int i = 0; i < ps->nranks; i++) {
                int r = ps->ranks[i];
                if (r >= 0 && r < nranks && cm->slow[r] > f) f = cm->slow[r];
            }
        pp->slowf[s] = f;
        cs[s] = f * c, ms[s] = m, sk[s] = 1;
        for (int i = 0; i < ps->nranks; i++) {
            int r = ps->ranks[i];
            if (r < 0 || r >= nranks) continue;
            cw->rank_compute[plan_stage_phase(s)][r] += f * c;
            cw->rank_comm[plan_stage_phase(s)][r] += m;
            pp->rm[r] += mem;
        }
    }
    for (int ph = 0; ph < 3; ph++) {
        const double *rc = cw->rank_compute[ph], *rx = cw->rank_comm[ph];
        for (int r = 0; r < nranks; r++) pp->kr[ph][r] = 1;
        pp->rho[ph] = pp->busy_per_core[ph] = 1;
        if (cm->hw.cores > 0) sched[ph] = cores_share_phase(cw, ph, cm, plan, nranks, cs, ms, sk);
        double t = 0, rho = pp->rho[ph];
        pp->crit[ph] = -1;
        for (int r = 0; r < nranks; r++)
            if (pp->kr[ph][r] * rc[r] + rho * rx[r] > t) {
                t = pp->kr[ph][r] * rc[r] + rho * rx[r];
                pp->crit[ph] = r;
            }
        pp->phase[ph] = t;
    }
    for (int s = 0; s < PLAN_NSTAGES; s++) {
        const PlanStage *ps = &plan->stage[s];
        double k = 1;
        for (int i = 0; i < ps->nranks; i++) {
            int r = ps->ranks[i];
            if (r >= 0 && r < nranks && pp->kr[plan_stage_phase(s)][r] > k) k = pp->kr[plan_stage_phase(s)][r];
        }
        pp->ks[s] = sched[plan_stage_phase(s)] ? sk[s] : k;
    }
}

/* a stage's seconds under the plan, its compute stretched by k and slowed, its communication by ρ */
static double stage_scaled(const PlanPhases *pp, int s, double k, double *scale) {
    double t = 0, rho = pp->rho[plan_stage_phase(s)];
    for (int c = 0; c < EFF_N; c++) {
        scale[c] = on_core(pp->cores, c) ? k * pp->slowf[s] : rho;
        t += scale[c] * pp->parts[s].t[c];
    }
    return t;
}

/* a stage's seconds under the plan, at the stretch of its most stretched rank */
static double stage_in_plan(const PlanPhases *pp, int s, double *scale) { return stage_scaled(pp, s, pp->ks[s], scale); }

/* ---- asynchronous rollouts (planner.h: cost_plan_overlap) --------------------------- */

/* 1 when model-stage s of the plan holds a model (not an absent critic stage, not reward.inf without a reward
   network: that one holds nothing and costs nothing) */
static int holds_model(const CostModel *cm, const PlanConfig *plan, int s) {
    if (!plan_stage_present(plan, s)) return 0;
    return s != PLAN_REWARD_INF || cm->have_rm;
}

int cost_plan_overlap(const CostModel *cm, const PlanConfig *plan, int nranks) {
    unsigned char use[PLAN_MAX_RANKS]; /* 1: actor.gen's, 2: another model-stage's */
    if (nranks < 1 || nranks > PLAN_MAX_RANKS) return 0;
    memset(use, 0, (size_t)nranks);
    for (int s = 0; s < PLAN_NSTAGES; s++) {
        const PlanStage *ps = &plan->stage[s];
        if (!holds_model(cm, plan, s)) continue;
        for (int i = 0; i < ps->nranks; i++) {
            int r = ps->ranks[i];
            if (r < 0 || r >= nranks) return 0;
            use[r] |= s == PLAN_ACTOR_GEN ? 1 : 2;
            if (use[r] == 3) return 0; /* a rank that generates and does other work: no overlap on it */
        }
    }
    if (cm->hw.cores > 0) { /* shared cores: every busy rank of a node needs a core of its own */
        int rpn = cm->hw.ranks_per_node > 0 ? cm->hw.ranks_per_node : 1;
        for (int n0 = 0; n0 < nranks; n0 += rpn) {
            int busy = 0;
            for (int r = n0; r < n0 + rpn && r < nranks; r++) busy += use[r] != 0;
            if (busy > cm->hw.cores) return 0;
        }
    }
    return 1;
}

/* The rollout's transfer with overlap: each gen replica's leader sends its rows (the batch over actor.gen's dp)
   to every other EMU holding a model, 8 bytes a token of prompt and response, side by side with the other
   leaders; between nodes where the plan spans more than one */
static double rollout_s(const CostModel *cm, const PlanConfig *plan, int nranks, const Workload *w) {
    int dest = 0;
    for (int s = 0; s < PLAN_NSTAGES; s++) dest += s != PLAN_ACTOR_GEN && holds_model(cm, plan, s);
    const PlanStage *g = &plan->stage[PLAN_ACTOR_GEN];
    double rows = (double)w->batch / (g->dp > 0 ? g->dp : 1);
    double bytes = rows * (w->prompt_len + resp_longest(w)) * 8.0;
    int inter = nranks > (cm->hw.ranks_per_node > 0 ? cm->hw.ranks_per_node : 1);
    return dest * p2p_s(cm, bytes, inter);
}

/* sc (its synchronous price in total) priced for K: cost_plan_overlap's max(gen, scoring + training) plus the
   rollout, the sync and the overhead where the plan overlaps and K ≥ 1; the synchronous sum otherwise. K is
   the fixed one, or the smallest of the lowest price (1 where the overlap is faster, else 0) */
static void price_async(const CostModel *cm, const PlanConfig *plan, int nranks, const Workload *w, StepCost *sc) {
    int can = cost_plan_overlap(cm, plan, nranks);
    double over = INFINITY, ro = 0;
    if (can) {
        ro = rollout_s(cm, plan, nranks, w);
        over = fmax(sc->phase[0], sc->phase[1] + sc->phase[2]) + ro + sc->phase[3] + cm->overhead_s;
    }
    if (cm->staleness_fixed) sc->staleness = cm->max_staleness;
    else sc->staleness = can && over < sc->sync_total;
    if (sc->staleness > 0 && can) {
        sc->overlap = 1;
        sc->rollout_s = ro;
        sc->total = over;
    }
}

double cost_step_of_phases(const StepCost *sc, const double *ph) {
    if (sc->overlap) return fmax(ph[0], ph[1] + ph[2]) + sc->rollout_s + sc->phase[3];
    return ph[0] + ph[1] + ph[2] + sc->phase[3];
}

CostWork *cost_work_new(void) { return nr_xmalloc(sizeof(CostWork)); }

void cost_work_free(CostWork *cw) { free(cw); }

double cost_plan(const CostModel *cm, const PlanConfig *plan, int nranks, const Workload *w, StepCost *sc) {
    CostWork *cw = cost_work_new();
    double total = cost_plan_in(cw, cm, plan, nranks, w, sc);
    cost_work_free(cw);
    return total;
}

double cost_plan_in(CostWork *cw, const CostModel *cm, const PlanConfig *plan, int nranks, const Workload *w,
                    StepCost *sc) {
    const PlanPhases *pp = &cw->phases;
    memset(sc, 0, sizeof *sc);
    plan_phases(cw, cm, plan, nranks, w);
    for (int ph = 0; ph < 3; ph++) sc->phase[ph] = pp->phase[ph] * (cm->phase_scale[ph] > 0 ? cm->phase_scale[ph] : 1);
    for (int s = 0; s < PLAN_NSTAGES; s++) {
        double scale[EFF_N], k = cm->phase_scale[plan_stage_phase(s)];
        sc->stage[s] = stage_in_plan(pp, s, scale) * (k > 0 ? k : 1);
    }
    /* the weight sync: every destination shard from the trained model; a shard on a rank that holds
       the same one trained is a local copy */
    static const int pairs[3][2] = {{PLAN_ACTOR_TRAIN, PLAN_ACTOR_GEN}, {PLAN_ACTOR_TRAIN, PLAN_ACTOR_INF},
                                    {PLAN_CRITIC_TRAIN, PLAN_CRITIC_INF}};
    double sync = 0;
    for (int k = 0; k < (cm->no_critic ? 2 : 3); k++) { /* a critic-free job has no critic leg */
        const PlanStage *a = &plan->stage[pairs[k][0]], *b = &plan->stage[pairs[k][1]];
        const ModelShape *m = stage_shape(cm, pairs[k][1]);
        double shard = shape_params(m) / (b->tp * b->pp) * (m->exact ? 4.0 : m->wbytes);
        int same = plan_stage_same(a, b);
        int inter = b->nranks > cm->hw.ranks_per_node;
        sync += same ? shard / cm->hw.hbm : p2p_s(cm, shard, inter);
    }
    sc->phase[3] = sync;
    sc->total = sc->phase[0] + sc->phase[1] + sc->phase[2] + sc->phase[3] + cm->overhead_s;
    sc->sync_total = sc->total;
    if (cm->max_staleness > 0) price_async(cm, plan, nranks, w, sc);
    sc->fits = 1;
    for (int r = 0; r < nranks; r++) {
        if (pp->rm[r] > sc->peak_mem) {
            sc->peak_mem = pp->rm[r];
            sc->worst_rank = r;
        }
        if (pp->rm[r] > cm->hw.mem * (1 - cm->headroom)) sc->fits = 0;
    }
    return sc->total;
}

void cost_calibrate(CostModel *cm, int stage, GridLayout l, const Workload *w, double measured_s, double alpha) {
    Parts pt;
    double pred = stage_parts(cm, stage, l, w, NULL, &pt);
    if (!(pred > 0) || !isfinite(pred) || !(measured_s > 0)) return;
    /* the prediction is Σ ideal_k / f_k: scaling every contributing f_k by pred/measured makes it
       match; move each class by its share of the prediction, geometrically, with weight alpha */
    double ratio = pred / measured_s;
    for (int k = 0; k < EFF_N; k++) {
        double share = pt.t[k] / pred;
        if (share <= 0) continue;
        double f = cm->eff.f[k] * pow(ratio, alpha * share);
        cm->eff.f[k] = f > 1.0 ? 1.0 : f < 1e-6 ? 1e-6 : f;
    }
}

/* ---- least-squares calibration ------------------------------------------------- */

/* one observation into the ring: a[] the ideal seconds per class (stretched, slowed) and pw their pipeline waits
   per hop, both at cm's factors, hops and message stretch; rho its phase's busy ranks per core */
static void cal_push(Calibration *c, const CostModel *cm, const double *a, double pw, double measured_s, double rho,
                     int stage, GridLayout l) {
    CalObs *o = &c->obs[c->next];
    memcpy(o->a, a, sizeof o->a);
    o->t = measured_s;
    o->rho = rho;
    o->beta = rho_exp(&cm->hw);
    o->pw = pw;
    o->hops = pipe_hops(&cm->hw);
    o->core_links = cm->hw.cores > 0;
    o->stage = stage;
    o->l = l;
    c->next = (c->next + 1) % CAL_MAX;
    if (c->n < CAL_MAX) c->n++;
}

/* cal_add in workspace cw */
static void cal_add_in(CostWork *cw, Calibration *c, const CostModel *cm, const PlanConfig *plan, int nranks,
                       const Workload *w, int stage, double measured_s) {
    const PlanPhases *pp = &cw->phases;
    double scale[EFF_N], a[EFF_N];
    if (!(measured_s > 0)) return;
    plan_phases(cw, cm, plan, nranks, w);
    double pred = stage_in_plan(pp, stage, scale);
    if (!(pred > 0) || !isfinite(pred)) return;
    for (int k = 0; k < EFF_N; k++) a[k] = scale[k] * pp->parts[stage].t[k] * cm->eff.f[k]; /* ideal seconds */
    cal_push(c, cm, a, scale[EFF_LAT] * pp->parts[stage].pw * cm->eff.f[EFF_LAT], measured_s,
             pp->busy_per_core[plan_stage_phase(stage)], stage,
             (GridLayout){plan->stage[stage].tp, plan->stage[stage].pp, plan->stage[stage].dp});
}

void cal_add(Calibration *c, const CostModel *cm, const PlanConfig *plan, int nranks, const Workload *w, int stage,
             double measured_s) {
    CostWork *cw = cost_work_new();
    cal_add_in(cw, c, cm, plan, nranks, w, stage, measured_s);
    cost_work_free(cw);
}

/* cal_add_phase in workspace cw */
static void cal_add_phase_in(CostWork *cw, Calibration *c, const CostModel *cm, const PlanConfig *plan, int nranks,
                             const Workload *w, int phase, double measured_s) {
    const PlanPhases *pp = &cw->phases;
    double scale[EFF_N], a[EFF_N] = {0}, pw = 0;
    if (!(measured_s > 0)) return;
    plan_phases(cw, cm, plan, nranks, w);
    int r = pp->crit[phase];
    if (r < 0) return;
    for (int s = 0; s < PLAN_NSTAGES; s++) { /* the stages of the phase on its critical rank, as plan_phases adds them */
        const PlanStage *ps = &plan->stage[s];
        if (plan_stage_phase(s) != phase || plan_stage_pos(ps, r) < 0) continue;
        double t = stage_scaled(pp, s, pp->kr[phase][r], scale); /* at the critical rank's stretch */
        if (!isfinite(t)) return;
        for (int k = 0; k < EFF_N; k++) a[k] += scale[k] * pp->parts[s].t[k] * cm->eff.f[k];
        pw += scale[EFF_LAT] * pp->parts[s].pw * cm->eff.f[EFF_LAT];
    }
    cal_push(c, cm, a, pw, measured_s, pp->busy_per_core[phase], -1 - phase, (GridLayout){0, 0, 0});
}

void cal_add_phase(Calibration *c, const CostModel *cm, const PlanConfig *plan, int nranks, const Workload *w,
                   int phase, double measured_s) {
    CostWork *cw = cost_work_new();
    cal_add_phase_in(cw, c, cm, plan, nranks, w, phase, measured_s);
    cost_work_free(cw);
}

/* the ideal seconds of class k of o under message-stretch exponent beta and pipeline waits of hops (o->a holds
   them at o->beta and o->hops) */
static double obs_a(const CalObs *o, int k, double beta, double hops) {
    double a = o->a[k] + (k == EFF_LAT ? (hops - o->hops) * o->pw : 0);
    if (is_compute(k) || o->rho <= 1 || (o->core_links && is_link_bytes_intra(k))) return a;
    return a * pow(o->rho, beta - o->beta);
}

/* least squares of the relative residuals for exponent beta, the pull toward x0; x out, RMS returned */
static double fit_beta(const Calibration *c, const double *x0, double beta, double hops, double *x, double *used) {
    double A[EFF_N][EFF_N], b[EFF_N];
    memset(A, 0, sizeof A);
    memset(b, 0, sizeof b);
    memset(used, 0, EFF_N * sizeof *used);
    for (int i = 0; i < c->n; i++) {
        const CalObs *o = &c->obs[i];
        double wt = 1.0 / (o->t * o->t), a[EFF_N];
        for (int k = 0; k < EFF_N; k++) a[k] = obs_a(o, k, beta, hops);
        for (int k = 0; k < EFF_N; k++) {
            if (a[k] <= 0) continue;
            used[k] += a[k] / o->t;
            b[k] += wt * a[k] * o->t;
            for (int l = 0; l < EFF_N; l++) A[k][l] += wt * a[k] * a[l];
        }
    }
    const double lambda = 1e-3; /* the pull, relative to one observation's weight */
    for (int k = 0; k < EFF_N; k++) {
        x[k] = x0[k];
        double reg = lambda / (x0[k] * x0[k]);
        A[k][k] += reg;
        b[k] += reg * x0[k];
    }
    /* projected coordinate descent on the convex quadratic, x ≥ 1 */
    for (int it = 0; it < 500; it++) {
        double moved = 0;
        for (int k = 0; k < EFF_N; k++) {
            if (A[k][k] <= 0) continue;
            double r = b[k];
            for (int l = 0; l < EFF_N; l++)
                if (l != k) r -= A[k][l] * x[l];
            double nx = r / A[k][k];
            if (nx < 1) nx = 1;
            moved = fmax(moved, fabs(nx - x[k]) / x[k]);
            x[k] = nx;
        }
        if (moved < 1e-9) break;
    }
    double ss = 0;
    for (int i = 0; i < c->n; i++) {
        const CalObs *o = &c->obs[i];
        double p = 0;
        for (int k = 0; k < EFF_N; k++) p += obs_a(o, k, beta, hops) * x[k];
        ss += (p - o->t) * (p - o->t) / (o->t * o->t);
    }
    return sqrt(ss / c->n);
}

/* a phase scale from Σ w·log(measured / predicted) over weight Σ w: their geometric mean, held within [0.25, 4]
   (1 without observations) */
static double phase_scale_of(double sum_log, double weight) {
    return weight > 0 ? fmin(4.0, fmax(0.25, exp(sum_log / weight))) : 1;
}

/* cal_fit with the pipeline crossings' wait at hops (hw.pipe_hops) */
static double fit_at_hops(const Calibration *c, CostModel *cm, double hops) {
    if (c->n == 0) return 0;
    double x0[EFF_N], x[EFF_N], used[EFF_N], bx[EFF_N], bused[EFF_N];
    for (int k = 0; k < EFF_N; k++) x0[k] = 1.0 / cm->eff.f[k];
    double beta0 = rho_exp(&cm->hw), best = INFINITY, bbeta = beta0;
    /* the exponent of the message stretch (how a message's wait grows with the busy ranks per core): the
       best of a grid, each with its least-squares factors; only where some stage ran with ranks sharing cores */
    int shared = 0;
    for (int i = 0; i < c->n; i++) shared |= c->obs[i].rho > 1;
    static const double grid[] = {0.01, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2, 2.5, 3};
    int ng = shared && cm->hw.cores > 0 ? (int)(sizeof grid / sizeof grid[0]) : 1;
    for (int g = 0; g < ng; g++) {
        double beta = ng > 1 ? grid[g] : beta0;
        double r = fit_beta(c, x0, beta, hops, x, used);
        if (r < best) {
            best = r;
            bbeta = beta;
            memcpy(bx, x, sizeof bx);
            memcpy(bused, used, sizeof bused);
        }
    }
    /* least squares of relative residuals errs low (an overprediction of a short stage costs more than the same
       underprediction): one common scale, the geometric mean of measured / fitted, takes the bias out (where a
       factor would pass 1, its efficiency stays at 1) */
    {
        double sl = 0;
        int nl = 0;
        for (int i = 0; i < c->n; i++) {
            const CalObs *o = &c->obs[i];
            double p = 0;
            for (int k = 0; k < EFF_N; k++) p += obs_a(o, k, bbeta, hops) * bx[k];
            if (p > 0 && o->t > 0) sl += log(o->t / p), nl++;
        }
        double sc = nl ? exp(sl / nl) : 1;
        for (int k = 0; k < EFF_N; k++)
            if (bused[k] > 0) bx[k] = fmax(1.0, bx[k] * sc);
    }
    for (int k = 0; k < EFF_N; k++)
        if (bused[k] > 0) cm->eff.f[k] = 1.0 / bx[k];
    if (shared && cm->hw.cores > 0) cm->hw.rho_exp = bbeta;
    cm->hw.pipe_hops = hops;
    /* Per phase, what its measurements are over what the fitted factors add up for them (the geometric mean).
       The factors are fitted to the stages and phases together, relative error for relative error, and a
       phase's error left over from them is largely common to its plans (a machine's training phase can come
       out high on every plan alike): cost_plan takes it out. */
    {
        double sl[3] = {0, 0, 0};
        int nl[3] = {0, 0, 0};
        for (int i = 0; i < c->n; i++) {
            const CalObs *o = &c->obs[i];
            if (o->stage >= 0 || o->stage < -3) continue;
            double p = 0;
            for (int k = 0; k < EFF_N; k++) p += obs_a(o, k, bbeta, hops) / cm->eff.f[k];
            if (p > 0 && o->t > 0) sl[-1 - o->stage] += log(o->t / p), nl[-1 - o->stage]++;
        }
        for (int ph = 0; ph < 3; ph++) cm->phase_scale[ph] = phase_scale_of(sl[ph], nl[ph]);
    }
    return best;
}

double cal_fit(const Calibration *c, CostModel *cm) { return fit_at_hops(c, cm, pipe_hops(&cm->hw)); }

double cal_obs_fitted(const CalObs *o, const CostModel *cm) {
    double p = 0, beta = rho_exp(&cm->hw);
    for (int k = 0; k < EFF_N; k++) p += obs_a(o, k, beta, pipe_hops(&cm->hw)) / cm->eff.f[k];
    return p;
}

/* cal_phase_scales in workspace cw */
static void phase_scales_in(CostWork *cw, CostModel *cm, int nranks, const PhaseObs *o, int n) {
    double sl[3] = {0, 0, 0}, nl[3] = {0, 0, 0};
    for (int ph = 0; ph < 3; ph++) cm->phase_scale[ph] = 1;
    for (int i = 0; i < n; i++) {
        StepCost c;
        cost_plan_in(cw, cm, o[i].plan, nranks, &o[i].w, &c);
        for (int ph = 0; ph < 3; ph++)
            if (c.phase[ph] > 0 && o[i].ph[ph] > 0 && o[i].steps > 0) {
                sl[ph] += o[i].steps * log(o[i].ph[ph] / c.phase[ph]);
                nl[ph] += o[i].steps;
            }
    }
    for (int ph = 0; ph < 3; ph++) cm->phase_scale[ph] = phase_scale_of(sl[ph], nl[ph]);
}

void cal_phase_scales(CostModel *cm, int nranks, const PhaseObs *o, int n) {
    CostWork *cw = cost_work_new();
    phase_scales_in(cw, cm, nranks, o, n);
    cost_work_free(cw);
}

double cal_fit_plans(const Calibration *c, CostModel *cm, int nranks, const PhaseObs *o, int n) {
    /* The hops are chosen by how well the fit predicts the plans' phases, not by cal_fit's own criterion (the
       stages' and phases' relative RMS): there the stages' sharing of the cores weighs as much as their sums,
       and the hops barely move the error on held-out plans. The message stretch exponent stays cal_fit's:
       choosing it the same way predicts held-out plans no better (tests/bench/refit_compare.sh). */
    static const double grid[] = {0.01, 5, 10, 20, 40, 80, 160, 320};
    enum { NG = sizeof grid / sizeof grid[0] };
    int piped = 0;
    for (int i = 0; i < c->n; i++) piped |= c->obs[i].pw > 0;
    /* candidate 0 is the hops in force, kept where nothing pipelined was observed or no plan measured (every
       error infinite); then the grid */
    const double hops0 = pipe_hops(&cm->hw);
    const CostModel start = *cm;
    CostModel trial;
    CostWork *cw = cost_work_new();
    double best = INFINITY, rms = 0;
    for (int g = 0; g <= (piped && n > 0 ? NG : 0); g++) {
        double h = g == 0 ? hops0 : grid[g - 1];
        if (g > 0 && h == hops0) continue; /* fitted already */
        trial = start;
        double r = fit_at_hops(c, &trial, h);
        phase_scales_in(cw, &trial, nranks, o, n);
        /* the plans' phases together, measured against predicted: the steps-weighted mean squared log ratio */
        double ss = 0, wt = 0;
        for (int i = 0; i < n; i++) {
            StepCost sc;
            cost_plan_in(cw, &trial, o[i].plan, nranks, &o[i].w, &sc);
            double m = o[i].ph[0] + o[i].ph[1] + o[i].ph[2], p = sc.phase[0] + sc.phase[1] + sc.phase[2];
            if (!(m > 0) || !(p > 0) || !isfinite(p) || o[i].steps <= 0) continue;
            ss += o[i].steps * log(m / p) * log(m / p);
            wt += o[i].steps;
        }
        double e = wt > 0 ? ss / wt : INFINITY;
        if (g == 0 || e < best) best = e, rms = r, *cm = trial;
    }
    cost_work_free(cw);
    return rms;
}

/* ---- which plans to calibrate on -------------------------------------------------- */

/* log det of the k×k symmetric positive definite A (Cholesky, A copied); −∞ when not positive definite */
static double logdet_spd(const double A[EFF_N][EFF_N], int k) {
    double L[EFF_N][EFF_N], s = 0;
    for (int i = 0; i < k; i++)
        for (int j = 0; j <= i; j++) {
            double v = A[i][j];
            for (int m = 0; m < j; m++) v -= L[i][m] * L[j][m];
            if (i == j) {
                if (!(v > 0)) return -INFINITY;
                L[i][i] = sqrt(v);
                s += log(v);
            } else L[i][j] = v / L[j][j];
        }
    return s;
}

void cal_design(const CostModel *cm, const PlanConfig *plans, int n, int nranks, const Workload *w, int K, int *order) {
    Calibration *one = nr_xmalloc(sizeof *one); /* one plan's observations */
    CostWork *cw = cost_work_new();
    double (*R)[EFF_N][EFF_N] = nr_xcalloc((size_t)n, sizeof *R); /* each plan's Σ r rᵀ, r = a / t */
    unsigned char *taken = nr_xcalloc((size_t)n, 1);
    for (int p = 0; p < n; p++) {
        StepCost sc;
        cost_plan_in(cw, cm, &plans[p], nranks, w, &sc);
        one->n = one->next = 0;
        for (int s = 0; s < PLAN_NSTAGES; s++)
            if ((s != PLAN_REWARD_INF || cm->have_rm) && sc.stage[s] > 0 && isfinite(sc.stage[s]))
                cal_add_in(cw, one, cm, &plans[p], nranks, w, s, sc.stage[s]);
        for (int ph = 0; ph < 3; ph++)
            if (sc.phase[ph] > 0 && isfinite(sc.phase[ph])) cal_add_phase_in(cw, one, cm, &plans[p], nranks, w, ph, sc.phase[ph]);
        for (int i = 0; i < one->n; i++)
            for (int k = 0; k < EFF_N; k++)
                for (int l = 0; l < EFF_N; l++) R[p][k][l] += one->obs[i].a[k] * one->obs[i].a[l] / (one->obs[i].t * one->obs[i].t);
    }
    double M[EFF_N][EFF_N], T[EFF_N][EFF_N];
    memset(M, 0, sizeof M);
    for (int k = 0; k < EFF_N; k++) M[k][k] = 1e-3; /* the fit's pull toward its start, as fit_beta's */
    int m = 0;
    for (; m < K && m < n; m++) {
        int best = -1;
        double bd = -INFINITY;
        for (int p = 0; p < n; p++) {
            if (taken[p]) continue;
            for (int k = 0; k < EFF_N; k++)
                for (int l = 0; l < EFF_N; l++) T[k][l] = M[k][l] + R[p][k][l];
            double d = logdet_spd(T, EFF_N);
            if (best < 0 || d > bd + 1e-12) best = p, bd = d;
        }
        taken[best] = 1;
        order[m] = best;
        for (int k = 0; k < EFF_N; k++)
            for (int l = 0; l < EFF_N; l++) M[k][l] += R[best][k][l];
    }
    for (int p = 0; p < n; p++)
        if (!taken[p]) order[m++] = p;
    free(R);
    free(taken);
    free(one);
    cost_work_free(cw);
}
