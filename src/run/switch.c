/* switch.c — the job's plan-to-plan transitions and its per-step weight
 * sync, both through the transition engine (transition.h; job.h).
 *
 * A transition: every rank lists the model-stages whose layout changes
 * (the same list everywhere); rank 0 plans the DAG under [transition]
 * memory_mib and sends each rank its part; if rank 0 refuses, every rank
 * returns before anything moved. Otherwise the new EMUs' communicators are
 * built (all of them, before any old one is freed; none where
 * job_prepare_comms built them ahead, at the boundary before the step that
 * ran while they got ready: the move then takes them), each rank runs its
 * part — new shards are allocated empty when the DAG says, filled from the
 * old holders, and old shards freed when everything out of them is out —
 * then the AdamW step counters follow, the old communicators are freed and
 * the stages take their new EMUs and models. What else defines a training
 * model-stage needs no moving: the RNG streams are counters keyed by (seed,
 * step, sample), and the data position is the step number.
 *
 * Verification: per moved model-stage, per buffer (parameters, AdamW m, v),
 * per tensor, Σ|x| in double and the checkpoints' order-free 64-bit
 * checksum (nr_cksum_f32) of the assembled logical vector, before and after;
 * any difference fails the transition. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/comm.h"
#include "nereus/inject.h"
#include "nereus/job.h"
#include "nereus/trace.h"
#include "nereus/tx_exec.h"
#include "nereus/util.h"

#define MIB (1024.0 * 1024.0)

typedef struct JobSyncPlan {
    TxPart part;
    TxEndpoint ep[3];
    int npair;      /* the legs: actor.train to actor.gen and actor.inf, and (with a critic) critic.train to critic.inf */
    double bytes;   /* bytes that cross between ranks per sync */
} JobSyncPlan;

/* ---- per-tensor checks ----------------------------------------------------- */

typedef struct TensorCheck { double abs; uint64_t hash; } TensorCheck;


/* collective over world: checks[buf·GPT_NUM_TENSORS + tensor] of stage id's logical buffers (job_tensor_checks) */
static void stage_checks(Job *j, int id, int nbufs, TensorCheck *out) {
    static const int which[3] = {GPT_BUF_PARAMS, GPT_BUF_ADAM_M, GPT_BUF_ADAM_V};
    memset(out, 0, 3 * GPT_NUM_TENSORS * sizeof *out);
    for (int b = 0; b < nbufs; b++) {
        double abs[GPT_NUM_TENSORS];
        uint64_t hash[GPT_NUM_TENSORS];
        job_tensor_checks(j, id, which[b], abs, hash);
        for (int i = 0; i < GPT_NUM_TENSORS; i++) out[b * GPT_NUM_TENSORS + i] = (TensorCheck){abs[i], hash[i]};
    }
}

/* ---- transitions -------------------------------------------------------------- */

typedef struct MoveCtx {
    Job *j;
    const TxChange *ch;
    Stage *ns;   /* (PLAN_NSTAGES) the new stages being built */
    TxEndpoint *ep;
} MoveCtx;

static void move_alloc(void *ctx, int c) {
    MoveCtx *m = ctx;
    Stage *s = &m->ns[m->ch[c].id];
    job_stage_model(m->j, s, m->ch[c].nbufs);
    m->ep[c].to = &s->model;
}

static void move_release(void *ctx, int c) {
    MoveCtx *m = ctx;
    gpt_free(&m->j->st[m->ch[c].id].model);
    m->ep[c].from = NULL;
}

/* 8 MiB a rank, median of 3: long enough to stream (chunks of 1 MiB, as the engine cuts), short enough
   to cost a fraction of a second on 8 ranks sharing 2 cores */
#define PROBE_BYTES ((size_t)8 << 20)
#define PROBE_REPS 3

void job_probe_links(Job *j) {
    if (j->cfg->transition.bandwidth_gbs > 0 || j->px.link_rate > 0) return;
    TxProbe p;
    tx_probe(j->world, PROBE_BYTES, (size_t)j->cfg->transition.chunk_kib * 1024, (size_t)j->cfg->transition.window_kib * 1024,
             PROBE_REPS, &p);
    j->px.link_rate = p.link > 0 ? p.link : TX_NOMINAL_BW; /* one rank: no link; nothing crosses */
    j->px.copy_rate = p.copy;
    /* ranks sharing cores: their sends and receives are copies by the same cores */
    j->px.shared_cores = j->cores_shared;
    if (j->rank == 0)
        nr_log("transition: measured with every rank at once (tx_probe, %zu MiB a rank): links %.3g GB/s per rank%s, "
               "local copies %.3g GB/s per rank%s; the engine's predictions use these ([transition] bandwidth_gbs "
               "sets the link instead)\n", PROBE_BYTES >> 20, j->px.link_rate * 1e-9, p.link > 0 ? "" : " (nominal: one rank)",
               p.copy * 1e-9, j->cores_shared ? " (ranks share cores: a rank's sends and receives share its rate)" : "");
}

/* collective over world: the transition's schedule for the changes ch[0 .. nch) (rank 0 builds it against
 * the ranks' memory outside the changes: the stages that stay) and every rank's part of it; rep gets what
 * it will move. Returns 0, or 1 when no schedule fits (why says so, the same on every rank). */
static int transition_schedule(Job *j, const PlanConfig *np, const TxChange *ch, int nch, double setup_left_s,
                               JobTxReport *rep, TxPart *part, char *why, size_t len) {
    TxOptions opt = tx_options_of(&j->px);
    double *resident = NULL;
    TxPlan P;
    memset(&P, 0, sizeof P);
    int64_t refused = 0;
    char reason[512] = "";
    if (j->rank == 0) {
        resident = nr_xcalloc((size_t)j->size, sizeof *resident);
        for (int i = 0; i < PLAN_NSTAGES; i++) {
            if (!job_stage_holds_model(j, i) || !plan_stage_same(&j->plan.stage[i], &np->stage[i])) continue;
            const PlanStage *s = &j->plan.stage[i];
            for (int pos = 0; pos < s->nranks; pos++) resident[s->ranks[pos]] += tx_stage_shard_bytes(&j->px, i, s, pos);
        }
        opt.resident = resident;
        if (tx_plan_build(&P, ch, nch, j->size, &opt, reason, sizeof reason) != 0) refused = 1;
        else P.predicted_s += setup_left_s; /* what the prepared sets' set-up has left, as priced */
    }
    comm_bcast(j->world, &refused, sizeof refused, 0);
    if (refused) {
        comm_bcast(j->world, reason, sizeof reason, 0);
        snprintf(why, len, "%s", reason);
        free(resident);
        return 1;
    }
    double planned_peak = 0; /* the DAG's, the largest over the ranks (rank 0 holds the plan) */
    for (int r = 0; j->rank == 0 && r < j->size; r++) planned_peak = fmax(planned_peak, P.mem_peak[r]);
    double nums[8] = {(double)P.bytes_moved, (double)P.bytes_lower_bound, (double)P.bytes_local, P.predicted_s,
                      (double)P.nwaves, (double)P.bytes_relayed, (double)P.max_hop, planned_peak};
    if (j->rank == 0) {
        const char *names[PLAN_NSTAGES];
        for (int c = 0; c < nch; c++) names[c] = plan_stage_name(ch[c].id);
        tx_plan_format(&P, names, rep->text, sizeof rep->text);
    }
    comm_bcast(j->world, nums, sizeof nums, 0);
    comm_bcast(j->world, rep->text, sizeof rep->text, 0);
    rep->nchanges = nch;
    rep->bytes_moved = nums[0];
    rep->bytes_lower_bound = nums[1];
    rep->bytes_local = nums[2];
    rep->predicted_s = nums[3];
    rep->nwaves = (int)nums[4];
    rep->bytes_relayed = nums[5];
    rep->max_hop = (int)nums[6];
    rep->mem_planned = nums[7];
    rep->mem_budget = opt.budget;
    if (tx_part_scatter(j->rank == 0 ? &P : NULL, j->world, part) != 0)
        nr_fatal("transition: rank 0 could not hand out the parts");
    if (j->rank == 0) tx_plan_free(&P);
    free(resident);
    return 0;
}

/* collective over world: the changed stages' new EMUs (communicators first, collective, in stage order),
 * the transfers of part, then the stages take their new EMUs and models (with the trained models' step
 * counters) and the job the plan np. */
static void transition_move(Job *j, const PlanConfig *np, TxChange *ch, int nch, TxPart *part, JobTxReport *rep,
                            TxStats *st) {
    /* the step counters of the trained models (every member holds the same) */
    int64_t adam_t[PLAN_NSTAGES] = {0};
    for (int i = 0; i < PLAN_NSTAGES; i++)
        if (j->st[i].member && j->st[i].model.trainable) adam_t[i] = j->st[i].model.adam_t;
    comm_allreduce_max_i64(j->world, adam_t, PLAN_NSTAGES);

    Stage ns[PLAN_NSTAGES];
    memset(ns, 0, sizeof ns);
    TxEndpoint ep[PLAN_NSTAGES];
    memset(ep, 0, sizeof ep);
    long built0 = emu_cache_sets_built(&j->comms), taken0 = emu_cache_prepared_taken(&j->comms);
    int kept0 = emu_cache_sets_kept(&j->comms);
    double ts0 = nr_now();
    for (int c = 0; c < nch; c++) {
        Stage *s = &ns[ch[c].id];
        s->id = ch[c].id;
        emu_build_stage(&s->emu, &j->comms, j->world, np, ch[c].id);
        job_stage_fill(j, s);
        ep[c].from = j->st[ch[c].id].member ? &j->st[ch[c].id].model : NULL;
    }
    rep->setup_s = nr_now() - ts0; /* this rank's; job_transition takes the largest */
    rep->sets_built = (int)(emu_cache_sets_built(&j->comms) - built0);
    rep->sets_prebuilt = (int)(emu_cache_prepared_taken(&j->comms) - taken0);
    rep->sets_taken_back = kept0 - emu_cache_sets_kept(&j->comms); /* nothing is released before the old EMUs go */
    MoveCtx mc = {j, ch, ns, ep};
    TxHooks hooks = {&mc, move_alloc, move_release};
    tx_execute(part, ep, &hooks, j->be, j->xcomm, st);
    tx_part_free(part);
    /* the old communicators go; the stages take their new EMUs and models */
    for (int c = 0; c < nch; c++) {
        Stage *o = &j->st[ch[c].id], *s = &ns[ch[c].id];
        gpt_free(&o->model); /* already freed by the engine where this rank held one */
        emu_free(&o->emu);
        *o = *s;
        if (o->member && o->model.trainable) o->model.adam_t = (int)adam_t[o->id];
    }
    tx_kept_switch(&j->px, &j->plan, np);
    j->plan = *np;
    for (int c = 0; c < nch; c++)
        if (ch[c].id == PLAN_ACTOR_GEN) { /* the gen rows this rank generates */
            Stage *g = &j->st[PLAN_ACTOR_GEN];
            rollout_free(&j->L);
            if (g->member) rollout_alloc(&j->L, j->cfg, &j->ts, j->be, g->B, j->cfg->ppo.batch, g->d * g->B);
        }
    job_sync_plan_free(j); /* the sync was compiled for the old plan */
}

/* The per-tensor checks of the changed stages before and after the move ((nch, 3, GPT_NUM_TENSORS) each):
 * the hash must match to the bit, Σ|x| only up to its sums' order (relative 1e-12). Returns 0, or −1 with
 * why naming the first tensor that differs. */
static int transition_compare(const TxChange *ch, int nch, const TensorCheck *before, const TensorCheck *after,
                              char *why, size_t len) {
    for (int c = 0; c < nch; c++)
        for (int k = 0; k < 3 * GPT_NUM_TENSORS; k++) {
            const TensorCheck *a = &before[(size_t)c * 3 * GPT_NUM_TENSORS + k], *b = &after[(size_t)c * 3 * GPT_NUM_TENSORS + k];
            if (a->hash != b->hash || fabs(a->abs - b->abs) > 1e-12 * fmax(fabs(a->abs), fabs(b->abs))) {
                snprintf(why, len, "transition check failed: %s buffer %d tensor %d: hash %016llx -> %016llx, "
                         "sum|x| %.17g -> %.17g", plan_stage_name(ch[c].id), k / GPT_NUM_TENSORS,
                         k % GPT_NUM_TENSORS, (unsigned long long)a->hash, (unsigned long long)b->hash, a->abs, b->abs);
                return -1;
            }
        }
    return 0;
}

int job_prebuild_on(void) {
    const char *v = getenv("NEREUS_TX_PREBUILD");
    return !(v && strcmp(v, "0") == 0);
}

int job_prepare_comms(Job *j, const PlanConfig *np) {
    int64_t on = job_prebuild_on();
    comm_bcast(j->world, &on, sizeof on, 0); /* rank 0's environment decides for every rank */
    if (!on) return 0;
    j->prepared_at = nr_now();
    TxChange ch[PLAN_NSTAGES];
    int nch = tx_changes(&j->px, &j->plan, np, ch), n = 0;
    for (int c = 0; c < nch; c++) n += emu_cache_prepare_stage(&j->comms, j->world, np, ch[c].id);
    return n;
}

int job_transition(Job *j, const PlanConfig *np, int verify, JobTxReport *rep, char *why, size_t len) {
    double t0 = nr_now();
    memset(rep, 0, sizeof *rep);
    inject_phase(INJECT_TRANSITION);
    verify = verify || j->cfg->transition.verify;
    TxChange ch[PLAN_NSTAGES];
    int nch = tx_changes(&j->px, &j->plan, np, ch), nprep = 0;
    for (int c = 0; c < nch; c++) /* a change onto a prepared set builds none: its price is what is left of it */
        if (!ch[c].comm_shared && emu_cache_stage_prepared(&j->comms, j->world, np, ch[c].id)) {
            ch[c].comm_shared = 1;
            nprep++;
        }
    double left = nprep * tx_options_of(&j->px).comm_setup - (nr_now() - j->prepared_at);
    job_probe_links(j); /* collective: every rank is here */
    TxPart part;
    if (transition_schedule(j, np, ch, nch, left > 0 ? left : 0, rep, &part, why, len) != 0) {
        emu_cache_drop_prepared(&j->comms); /* collective: built for this move, which does not come */
        return 1;
    }

    /* checks before, the move, checks after */
    TensorCheck *before = nr_xcalloc((size_t)nch * 3 * GPT_NUM_TENSORS, sizeof *before);
    TensorCheck *after = nr_xcalloc((size_t)nch * 3 * GPT_NUM_TENSORS, sizeof *after);
    if (verify)
        for (int c = 0; c < nch; c++) stage_checks(j, ch[c].id, ch[c].nbufs, before + (size_t)c * 3 * GPT_NUM_TENSORS);
    TxStats st;
    transition_move(j, np, ch, nch, &part, rep, &st);
    if (comm_setup_inject_s() > 0 && rep->sets_built + rep->sets_prebuilt > 0) { /* in the printed move and the
                                                                                    trace's /transitions text */
        size_t n = strlen(rep->text);
        snprintf(rep->text + n, sizeof rep->text - n, "  INJECTED communicator set-up ([inject] comm_setup_s): "
                 "%d new set(s), each at least %.3g s%s\n", rep->sets_built + rep->sets_prebuilt, comm_setup_inject_s(),
                 rep->sets_prebuilt ? " (those built before the move: from when they were built, the move waiting "
                 "for what was left)" : "");
    }
    int rc = 0;
    if (verify) {
        for (int c = 0; c < nch; c++) stage_checks(j, ch[c].id, ch[c].nbufs, after + (size_t)c * 3 * GPT_NUM_TENSORS);
        rc = transition_compare(ch, nch, before, after, why, len);
        rep->verified = rc == 0;
    }
    free(before);
    free(after);
    emu_cache_drop_prepared(&j->comms); /* collective: sets prepared for another plan, which no move took */
    rollq_invalidate(j); /* collective: the rollout's roles go with the plan */
    job_weights_changed(j, -1);
    double red[4] = {st.seconds, (double)st.mem_peak, nr_now() - t0, rep->setup_s};
    comm_allreduce_max_f64(j->world, red, 4);
    rep->engine_s = red[0];
    rep->mem_peak = red[1];
    rep->measured_s = red[2];
    rep->setup_s = red[3];
    j->tx_sets_prebuilt += rep->sets_prebuilt;
    /* what it took against the engine's estimate: later transitions are priced by it (every rank: the
       same reduced numbers; the trace's replay rebuilds the same from /transitions) */
    if (rc == 0) tx_calib_add(&j->px.calib, rep->predicted_s, rep->measured_s);
    return rc;
}

/* ---- the weight sync ---------------------------------------------------------------- */

static const int sync_pairs[3][2] = {
    {PLAN_ACTOR_TRAIN, PLAN_ACTOR_GEN}, {PLAN_ACTOR_TRAIN, PLAN_ACTOR_INF}, {PLAN_CRITIC_TRAIN, PLAN_CRITIC_INF}};

void job_sync_plan_free(Job *j) {
    if (!j->sync) return;
    tx_part_free(&j->sync->part);
    free(j->sync);
    j->sync = NULL;
}

void job_sync_engine(Job *j) {
    job_weights_changed(j, PLAN_ACTOR_GEN), job_weights_changed(j, PLAN_ACTOR_INF), job_weights_changed(j, PLAN_CRITIC_INF);
    if (!j->sync) {
        JobSyncPlan *sp = nr_xcalloc(1, sizeof *sp);
        TxChange ch[3];
        int npair = job_stage_holds_model(j, PLAN_CRITIC_INF) ? 3 : 2; /* a critic-free job has no critic leg */
        sp->npair = npair;
        for (int k = 0; k < npair; k++)
            tx_change_for(&j->px, sync_pairs[k][1], TX_COPY, &j->plan.stage[sync_pairs[k][0]], &j->plan.stage[sync_pairs[k][1]],
                          &ch[k]);
        TxOptions opt = tx_options_of(&j->px);
        opt.budget = 0; /* a copy allocates nothing but its window */
        TxPlan P;
        char why[512] = "";
        int64_t bad = 0;
        double bytes = 0;
        if (j->rank == 0) {
            bad = tx_plan_build(&P, ch, npair, j->size, &opt, why, sizeof why) != 0;
            if (!bad) bytes = (double)P.bytes_moved;
        }
        comm_bcast(j->world, &bad, sizeof bad, 0);
        if (bad) nr_fatal("weight sync: %s", why); /* layouts of a resolved plan: cannot happen */
        comm_bcast(j->world, &bytes, sizeof bytes, 0);
        if (tx_part_scatter(j->rank == 0 ? &P : NULL, j->world, &sp->part) != 0) nr_fatal("weight sync: parts");
        if (j->rank == 0) tx_plan_free(&P);
        sp->bytes = bytes;
        for (int k = 0; k < npair; k++) {
            Stage *a = &j->st[sync_pairs[k][0]], *b = &j->st[sync_pairs[k][1]];
            sp->ep[k].from = a->member ? &a->model : NULL;
            sp->ep[k].to = b->member ? &b->model : NULL;
        }
        j->sync = sp;
    }
    TxStats st;
    TxHooks none = {NULL, NULL, NULL};
    tx_execute(&j->sync->part, j->sync->ep, &none, j->be, j->xcomm, &st);
    j->sync_bytes = j->sync->bytes;
}

void job_tx_log(const JobTxReport *rep, int step, double t0, int from_plan, int to_plan, Trace *tr) {
    char budget[64];
    if (rep->mem_budget > 0) snprintf(budget, sizeof budget, "budget %.1f MiB", rep->mem_budget / MIB);
    else snprintf(budget, sizeof budget, "no budget");
    char fwd[96] = "";
    if (rep->bytes_relayed > 0)
        snprintf(fwd, sizeof fwd, "; %.2f MiB of it forwarded, chains up to %d hop%s", rep->bytes_relayed / MIB,
                 rep->max_hop, rep->max_hop == 1 ? "" : "s");
    nr_log("transition: %d model-stage(s) in %d wave(s): moved %.2f MiB (minimum %.2f MiB%s), kept in place %.2f MiB; "
           "predicted %.4f s, measured %.4f s (transfers %.4f s, communicator set-up %.4f s); peak memory %.1f MiB per "
           "rank (planned %.1f; %s); communicators: %d new set(s), %d built before the move, %d kept one(s) taken "
           "back%s\n%s",
           rep->nchanges, rep->nwaves, rep->bytes_moved / MIB, rep->bytes_lower_bound / MIB, fwd, rep->bytes_local / MIB,
           rep->predicted_s, rep->measured_s, rep->engine_s, rep->setup_s, rep->mem_peak / MIB, rep->mem_planned / MIB,
           budget, rep->sets_built, rep->sets_prebuilt, rep->sets_taken_back,
           rep->verified ? "; per-tensor checks passed" : "", rep->text);
    TraceTransition tx = {step, t0, from_plan, to_plan, rep->nchanges, rep->nwaves, rep->verified,
                          rep->predicted_s, rep->measured_s, rep->engine_s, rep->bytes_moved, rep->bytes_lower_bound,
                          rep->bytes_local, rep->mem_peak, rep->mem_budget, rep->bytes_relayed, rep->text,
                          rep->setup_s, rep->sets_prebuilt};
    trace_transition(tr, &tx);
}
