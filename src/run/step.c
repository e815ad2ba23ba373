/* step.c — one PPO step (and one SFT step) across the plan's EMUs: gen on
 * actor.gen's replicas, assembly of the rollout on every rank, inference on
 * the scoring EMUs that hold a model, advantages everywhere, training on
 * actor.train and critic.train, then the weight sync (the data flow is
 * described in job.h). A critic-free job (GRPO) has no critic.inf and
 * critic.train: those EMUs have no ranks, so no rank does their work.
 * Each rank does the work of the EMUs it belongs to in a fixed order (gen,
 * actor.inf, ref.inf, critic.inf, reward.inf, actor.train, critic.train), so
 * EMUs on disjoint ranks run side by side, colocated ones one after another,
 * and no two ranks can wait on each other's collectives in opposite order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/comm.h"
#include "nereus/counters.h"
#include "nereus/dataset.h"
#include "nereus/job.h"
#include "nereus/plan.h"
#include "nereus/util.h"

/* data parallelism hook: sum the gradients over the stage's dp group */
static void grad_sync_dp(GPT *m, void *ctx) {
    const Stage *s = ctx;
    comm_allreduce_sum_f32(s->emu.dp, m->grads, m->nparams);
}

static ReplicaShare stage_share(Stage *s) {
    ReplicaShare sh = {s->d, s->dp, s->dp > 1 ? grad_sync_dp : NULL, s};
    return sh;
}

/* The generated rows of every gen replica onto every rank: tokens (Bg, Tcap), response lengths and the
 * behaviour log-probabilities (their bits), as one all-reduce of disjoint contributions. */
static void gather_rollout(Job *j) {
    Rollout *G = &j->G;
    Stage *g = &j->st[PLAN_ACTOR_GEN];
    size_t nt = (size_t)G->B * G->Tcap, nb = (size_t)G->B, n = 2 * nt + nb;
    int64_t *buf = (int64_t *)j->scratch, *lpbits = buf + nt + nb;
    memset(buf, 0, n * sizeof(int64_t));
    if (g->leader) {
        const Rollout *L = &j->L;
        for (int b = 0; b < L->B; b++) {
            size_t row = (size_t)(L->b0 + b);
            for (int t = 0; t < L->Tcap; t++) {
                size_t i = (size_t)b * L->Tcap + t;
                uint32_t bits;
                memcpy(&bits, &L->logp_gen[i], sizeof bits);
                buf[row * G->Tcap + t] = L->tokens[i];
                lpbits[row * G->Tcap + t] = bits;
            }
            buf[nt + row] = L->resp_len[b];
        }
    }
    /* the ranks without gen rows wait for those with some: on shared cores, asleep (comm_barrier_idle), since
       waiters that yield while they spin take turns on the cores with the generating ranks and slow them */
    if (j->cores_shared) comm_barrier_idle(j->world);
    comm_allreduce_sum_i64(j->world, buf, n);
    for (size_t i = 0; i < nt; i++) {
        uint32_t bits = (uint32_t)lpbits[i];
        G->tokens[i] = (int)buf[i];
        memcpy(&G->logp_gen[i], &bits, sizeof bits);
    }
    for (int b = 0; b < G->B; b++) G->resp_len[b] = (int)buf[nt + b];
}

/* [model] gen_dtype (actor.gen) or score_dtype (the scoring EMUs) = bf16: stage id's bfloat16 copy of the
 * fp32 weights it holds now (after the weight sync, a transition or a restore), made before the stage uses
 * it; a backend without bf16 GEMMs keeps fp32 (job_setup says so) */
static void stage_bf16_refresh(Job *j, int id) {
    Stage *s = &j->st[id];
    if (s->member && job_stage_holds_model(j, id) && tx_stage_bf16(j->cfg, id)) gpt_gen_bf16(&s->model, 1);
}

/* Inference of one EMU over its replica's rows; the leader's rows land in
 * out (Bg, T), zero elsewhere, summed over ranks afterwards. */
static void infer_stage(Job *j, int id, float *out, int values) {
    Stage *s = &j->st[id];
    const Rollout *G = &j->G;
    if (!s->member) return;
    int row0 = s->d * s->B;
    float *rows = (float *)j->scratch;
    counters_stage_begin(id);
    stage_bf16_refresh(j, id);
    if (values) ppo_infer_values(&s->model, G, row0, s->B, rows);
    else ppo_infer_logp(&s->model, G, row0, s->B, rows);
    counters_stage_end(id);
    if (s->leader) memcpy(out + (size_t)row0 * G->T, rows, (size_t)s->B * G->T * sizeof(float));
}

/* [gen] max over ranks of each stage time, so a disaggregated plan reports its slowest EMU */
static void reduce_times(Job *j, double *t, int n) { comm_allreduce_max_f64(j->world, t, (size_t)n); }

int job_step(Job *j, int step, StepStats *st, double times[4]) {
    const Config *cfg = j->cfg;
    Rollout *G = &j->G;
    Stage *S = j->st;
    double t0 = nr_now();
    counters_step_begin(); /* per model-stage timers and counters (the trace's; no-ops without one) */
    /* gen */
    rollout_prompts(G, &j->ts, step);
    if (S[PLAN_ACTOR_GEN].member) {
        counters_stage_begin(PLAN_ACTOR_GEN);
        stage_bf16_refresh(j, PLAN_ACTOR_GEN);
        ppo_generate(&j->L, &S[PLAN_ACTOR_GEN].model, cfg, &j->ts, step);
        counters_stage_end(PLAN_ACTOR_GEN);
    }
    gather_rollout(j);
    rollout_finish(G);
    double t1 = nr_now();
    /* inf: the four scoring EMUs, each over its replicas' rows */
    size_t BT = (size_t)G->B * G->T;
    float *outs[4] = {G->logp_old, G->logp_ref, G->values, G->rm_values};
    int ids[4] = {PLAN_ACTOR_INF, PLAN_REF_INF, PLAN_CRITIC_INF, PLAN_REWARD_INF};
    int nscore = 0; /* the scoring stages that hold a model in this job: no critic.inf without a critic */
    for (int k = 0; k < 4; k++)
        if (job_stage_holds_model(j, ids[k])) outs[nscore] = outs[k], ids[nscore++] = ids[k];
    for (int k = 0; k < nscore; k++) {
        memset(outs[k], 0, BT * sizeof(float));
        infer_stage(j, ids[k], outs[k], ids[k] != PLAN_ACTOR_INF && ids[k] != PLAN_REF_INF);
    }
    if (j->cores_shared) comm_barrier_idle(j->world); /* as after gen */
    for (int k = 0; k < nscore; k++) comm_allreduce_sum_f32(j->world, outs[k], BT);
    ppo_advantages(G, cfg, j->have_rm, st);
    double t2 = nr_now();
    /* train */
    StepStats sa, sc;
    memset(&sa, 0, sizeof sa);
    memset(&sc, 0, sizeof sc);
    sa.finite = sc.finite = 1;
    if (S[PLAN_ACTOR_TRAIN].member) {
        ReplicaShare sh = stage_share(&S[PLAN_ACTOR_TRAIN]);
        counters_stage_begin(PLAN_ACTOR_TRAIN);
        ppo_train_model(PPO_ACTOR, &S[PLAN_ACTOR_TRAIN].model, G, cfg, step, &sh, &sa);
        counters_stage_end(PLAN_ACTOR_TRAIN);
    }
    if (S[PLAN_CRITIC_TRAIN].member) {
        ReplicaShare sh = stage_share(&S[PLAN_CRITIC_TRAIN]);
        counters_stage_begin(PLAN_CRITIC_TRAIN);
        ppo_train_model(PPO_CRITIC, &S[PLAN_CRITIC_TRAIN].model, G, cfg, step, &sh, &sc);
        counters_stage_end(PLAN_CRITIC_TRAIN);
    }
    /* the sync needs every training EMU done: wait here, so that the wait
     * counts as training time and the sync time is the transfer alone */
    comm_barrier(j->world);
    double t3 = nr_now();
    /* the replicas' loss shares add up; the gradient norms are the same on every replica (replica 0 reports) */
    int la = S[PLAN_ACTOR_TRAIN].leader, lc = S[PLAN_CRITIC_TRAIN].leader;
    int a0 = la && S[PLAN_ACTOR_TRAIN].d == 0, c0 = lc && S[PLAN_CRITIC_TRAIN].d == 0;
    double red[11] = {la ? sa.pg_loss : 0, la ? sa.entropy : 0, la ? sa.clipfrac : 0, la ? sa.approx_kl : 0,
                      lc ? sc.vf_loss : 0, a0 ? sa.grad_norm_actor : 0, c0 ? sc.grad_norm_critic : 0,
                      (sa.finite && sc.finite) ? 0.0 : 1.0, la ? sa.kl_k3 : 0, la ? sa.tis_mean : 0,
                      la ? sa.tis_capped : 0};
    /* NaN must survive the sum: carry "non-finite" in slot 7 instead */
    for (int k = 0; k < 11; k++)
        if (k != 7 && !isfinite(red[k])) { red[k] = 0; red[7] = 1; }
    comm_allreduce_sum_f64(j->world, red, 11);
    st->kl_k3 = red[8];
    st->tis_mean = ppo_tis_cap(cfg) > 0.0f ? red[9] : 1.0; /* every weight 1 with TIS off */
    st->tis_capped = red[10];
    st->pg_loss = red[0];
    st->entropy = red[1];
    st->clipfrac = red[2];
    st->approx_kl = red[3];
    st->vf_loss = red[4];
    st->grad_norm_actor = red[5];
    st->grad_norm_critic = red[6];
    st->finite = red[7] == 0.0;
    /* weight sync (not after a non-finite step: the run stops there): the
     * trained models to the stages that generate and score with them */
    double t4 = t3;
    if (st->finite) {
        if (strcmp(cfg->transition.sync, "broadcast") == 0) { /* the baseline: every rank gets the whole models */
            int actor_dst[2] = {PLAN_ACTOR_GEN, PLAN_ACTOR_INF}, critic_dst[1] = {PLAN_CRITIC_INF};
            job_sync(j, PLAN_ACTOR_TRAIN, actor_dst, 2);
            if (job_stage_holds_model(j, PLAN_CRITIC_TRAIN)) { /* a critic-free job has no critic leg */
                double bytes = j->sync_bytes;
                job_sync(j, PLAN_CRITIC_TRAIN, critic_dst, 1);
                j->sync_bytes += bytes;
            }
        } else { /* only the slabs each destination lacks */
            job_sync_engine(j);
        }
        t4 = nr_now();
    }
    times[0] = t1 - t0;
    times[1] = t2 - t1;
    times[2] = t3 - t2;
    times[3] = t4 - t3;
    reduce_times(j, times, 4);
    return st->finite ? 0 : 1;
}

float job_sft_step(Job *j, SftData *sd, int step) {
    Stage *s = &j->st[PLAN_ACTOR_TRAIN];
    double loss = 0;
    if (s->member) {
        ReplicaShare sh = stage_share(s);
        float l = sft_step(sd, &s->model, j->cfg, &j->ts, step, &sh);
        loss = s->leader ? l : 0.0;
    }
    if (!isfinite(loss)) loss = 1e300; /* keep "not finite" through the sum */
    comm_allreduce_sum_f64(j->world, &loss, 1);
    return loss >= 1e300 ? NAN : (float)loss;
}

EvalStats job_eval_greedy(Job *j, const TaskSet *held_out) {
    Stage *g = &j->st[PLAN_ACTOR_GEN];
    int Bg = j->cfg->ppo.batch, nb = NR_MAX(1, 256 / Bg);
    uint64_t limit = UINT64_MAX;
    if (held_out->text) { /* every eval prompt once */
        limit = (uint64_t)held_out->text->ps->n;
        nb = (int)((limit + (uint64_t)Bg - 1) / (uint64_t)Bg);
    }
    EvalStats sum;
    memset(&sum, 0, sizeof sum);
    if (g->member) {
        stage_bf16_refresh(j, PLAN_ACTOR_GEN);
        ppo_eval_greedy(&g->model, j->cfg, held_out, g->B, Bg, g->d * g->B, nb, limit, &sum);
        if (!g->leader) memset(&sum, 0, sizeof sum);
    }
    comm_allreduce_sum_f64(j->world, &sum.n, sizeof sum / sizeof(double)); /* EvalStats: doubles only */
    return sum;
}
