/* sim.c — the simulator (sim.h): one policy over a scenario's steps, on
 * the modelled "true" cluster, with the planner calibrating a model of it.
 * Pure (no MPI). */
#include "nereus/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/transition.h"
#include "nereus/txprice.h"
#include "nereus/util.h"

const char *sim_policy_name(int p) { return adapt_policy_name(p); }

/* geometric growth from the first step's length to len_end at the last */
static double len_at(const SimScenario *sc, int step) {
    if (sc->steps <= 1 || !(sc->len_end > 0)) return sc->w.resp_len;
    return sc->w.resp_len * pow(sc->len_end / sc->w.resp_len, (double)step / (sc->steps - 1));
}

/* What the adaptive search plans for at `step`: the step's lengths, and memory for the lengths it may see
   before its next replan, up to the threshold above them (a crossing replans), never past the job's longest
   (a job's responses are capped: the trace's largest length) */
static Workload planned_for(const SimScenario *sc, int step) {
    Workload w = sc->w;
    w.resp_len = len_at(sc, step);
    w.resp_max = fmin(w.resp_len * (1 + (sc->threshold > 0 ? sc->threshold : 0)),
                      fmax(sc->w.resp_len, len_at(sc, sc->steps - 1)));
    return w;
}

/* the pool (ranks 0..pool-1) and each rank's slowdown at `step` */
static int pool_at(const SimScenario *sc, int step, double *slow) {
    int pool = sc->gpus;
    for (int r = 0; r < sc->gpus; r++) slow[r] = 1;
    for (int e = 0; e < sc->nevents && sc->ev[e].step <= step; e++) {
        if (sc->ev[e].pool > 0) pool = sc->ev[e].pool < sc->gpus ? sc->ev[e].pool : sc->gpus;
        if (sc->ev[e].rank >= 0 && sc->ev[e].rank < sc->gpus) slow[sc->ev[e].rank] = sc->ev[e].slow;
    }
    return pool;
}

/* The transition engine's prediction for old → new: the slabs of every
 * changed model-stage (the modelled model as a GPT of the same L, C, heads
 * and vocabulary: the same tensor cuts, parameters within ~10% of the
 * Llama/Qwen counts) over the true cluster's inter-node link, plus a
 * communicator set-up per changed model-stage whose layout no EMU has yet
 * (emu.h: model-stages of one layout share one set) and the job does not
 * keep from an earlier plan (plan.h, PlanKept: [simulate] keep_comms). The engine counts 4-byte
 * elements; the modelled models hold bf16 weights (inference stages: half
 * the bytes) and, trained, 14 bytes a parameter in the moved buffers (bf16
 * weights, fp32 master, m, v: 14/12 of the engine's three 4-byte buffers),
 * so the two kinds are priced as two DAGs with their bandwidth scaled by
 * element width, and the slower one taken (they run side by side). */
static double tx_predict(const SimScenario *sc, const TxChange *ch, int n, double scale) {
    const HwModel *hw = &sc->truth.hw;
    /* a kept slab: a device-to-device copy (read and write) at the HBM rate the decode reaches */
    double copy = 0.5 * hw->hbm * sc->truth.eff.f[EFF_DECODE] * scale;
    TxOptions o = {0, 64u << 20, 512u << 20, hw->bw[1] * sc->truth.eff.f[EFF_P2P_INTER] * scale, hw->lat[1], 0, NULL, 0,
                   hw->ranks_per_node, hw->bw[0] * sc->truth.eff.f[EFF_P2P_INTRA] * scale, 0, copy, 0, 0, 0};
    return tx_predicted_s(ch, n, sc->gpus, &o);
}

/* a policy's run: the scenario, the layouts its job keeps communicators of (plan.h, PlanKept), and whether
   every decision, plan and transition price goes to stderr (NEREUS_SIM_DEBUG in the environment) */
typedef struct SimRun {
    const SimScenario *sc;
    PlanKept *kept;
    int debug;
} SimRun;

static double transition_s(const SimRun *run, const PlanConfig *a, const PlanConfig *b) {
    const SimScenario *sc = run->sc;
    TxChange inf[PLAN_NSTAGES], trn[PLAN_NSTAGES];
    int ni = 0, nt = 0, nsetup = 0;
    for (int s = 0; s < PLAN_NSTAGES; s++) {
        if (s == PLAN_REWARD_INF && !sc->truth.have_rm) continue;
        if (plan_stage_same(&a->stage[s], &b->stage[s])) continue;
        const ModelShape *m = plan_stage_is_critic(s) ? &sc->truth.critic : &sc->truth.actor;
        TxChange *x = plan_stage_is_train(s) ? &trn[nt++] : &inf[ni++];
        memset(x, 0, sizeof *x);
        x->id = s;
        x->kind = TX_MOVE;
        x->tie = plan_stage_phase(s);
        x->cfg = (GPTConfig){.V = m->V, .maxT = 16, .L = m->L, .C = m->C, .NH = m->NH, .value_head = m->value_head};
        x->from = a->stage[s];
        x->to = b->stage[s];
        x->trainable = plan_stage_is_train(s);
        x->nbufs = x->trainable ? 3 : 1;
        x->bmax_from = x->bmax_to = 1;
        x->tmax = 1;
        x->comm_shared = !plan_stage_new_comms(a, b, s) || plan_kept_has(run->kept, &b->stage[s]);
        nsetup += !x->comm_shared;
    }
    double wb = sc->truth.actor.wbytes > 0 ? sc->truth.actor.wbytes : 4;
    double ti = tx_predict(sc, inf, ni, 4.0 / wb), tt = tx_predict(sc, trn, nt, 12.0 / 14.0);
    if (run->debug)
        fprintf(stderr, "    transition: data %.3f s (inference %.3f, training %.3f), %d of %d changed model-stages with "
                "new communicators\n", fmax(ti, tt), ti, tt, nsetup, ni + nt);
    return fmax(ti, tt) + nsetup * SIM_COMM_SETUP_S;
}

static double tx_cost(void *ctx, const PlanConfig *a, const PlanConfig *b) { return transition_s(ctx, a, b); }

/* The fixed baselines' plan (static, verl-like, openrlhf-like: `policy` names the family) for the pool of o
 * from step `from` on, chosen knowing the whole trace, as a user sizes a fixed job: it must hold the longest
 * responses still to come (memory at the largest length from `from` to the last step), and of the best such
 * plans for SIM_FIXED_LENS response lengths spread (geometrically) over those steps, the one that runs them
 * fastest on the true cluster (every SIM_FIXED_STRIDE-th step priced). A plan for the first step's lengths
 * alone would run out of memory as responses grow. Returns 0, or −1 with why. Six lengths: sixteen choose
 * the same static and verl-like plans in every scenario deck and in test_sim. */
#define SIM_FIXED_LENS 6
#define SIM_FIXED_STRIDE 10
static int fixed_plan(CostWork *cw, const SimScenario *sc, const CostModel *truth, int policy, const Observed *o,
                      int from, PlanConfig *out, char *why, size_t len) {
    double l0 = len_at(sc, from), l1 = len_at(sc, sc->steps - 1), best = INFINITY;
    Workload w = sc->w;
    w.resp_max = fmax(l0, l1);
    for (int k = 0; k < SIM_FIXED_LENS; k++) {
        w.resp_len = l0 * pow(l1 / l0, (double)k / (SIM_FIXED_LENS - 1));
        PlanConfig p;
        StepCost c;
        if (adapt_search(truth, &w, policy, sc->gpus, o, &p, &c, why, len) != 0) continue;
        double T = 0;
        for (int s = from; s < sc->steps; s += SIM_FIXED_STRIDE) {
            Workload ws = w;
            ws.resp_len = len_at(sc, s);
            T += cost_plan_in(cw, truth, &p, sc->gpus, &ws, &c);
        }
        if (T < best) {
            best = T;
            *out = p;
        }
    }
    return isfinite(best) ? 0 : -1;
}

/* step 0 as every policy sees it: ranks 0..gpus−1, the pool and each rank's slowdown (into slow) */
static Observed observed_start(const SimScenario *sc, int *ranks, double *slow) {
    for (int r = 0; r < sc->gpus; r++) ranks[r] = r;
    return (Observed){sc->w.resp_len, pool_at(sc, 0, slow), ranks, slow, 0};
}

/* the adaptive policies' first plan: the best for step 0's conditions on the true cluster */
static int adaptive_start(const SimScenario *sc, const CostModel *truth, const Observed *o, PlanConfig *p,
                          StepCost *c, char *what, size_t n) {
    Workload w0 = planned_for(sc, 0);
    if (adapt_search(truth, &w0, SIM_STATIC, sc->gpus, o, p, c, what, n) == 0) return 0;
    w0.resp_max = w0.resp_len; /* no plan holds the margin: one for step 0's lengths (adapt_step does the same) */
    return adapt_search(truth, &w0, SIM_STATIC, sc->gpus, o, p, c, what, n);
}

int sim_fits(const SimScenario *sc, char *why, size_t len) {
    double slow[PLAN_MAX_RANKS];
    int ranks[PLAN_MAX_RANKS];
    CostModel truth = sc->truth;
    truth.slow = slow;
    Observed o = observed_start(sc, ranks, slow);
    PlanConfig p;
    StepCost c;
    char what[384] = "";
    if (adaptive_start(sc, &truth, &o, &p, &c, what, sizeof what) == 0) return 0;
    Workload w0 = planned_for(sc, 0);
    return nr_fail(why, len, "no plan fits the %d GPU(s) in the pool at step 0 for %.0f-token prompts and responses "
                   "of %.0f (planned up to %.0f): %s", o.npool, w0.prompt_len, w0.resp_len, w0.resp_max, what);
}

int sim_run(const SimScenario *sc, int policy, SimResult *res, char *why, size_t len) {
    memset(res, 0, sizeof *res);
    double slow[PLAN_MAX_RANKS]; /* each rank's slowdown at the step */
    int ranks[PLAN_MAX_RANKS];   /* the pool: ranks 0 .. o.npool - 1 */
    CostModel truth = sc->truth, model = sc->truth;
    truth.slow = slow;
    model.eff = eff_default(); /* the planner starts conservative and calibrates */
    model.slow = slow;         /* per-rank speed: measured every step (stage timings per rank) */
    Workload w = sc->w;
    int family = policy == SIM_VERL || policy == SIM_OPENRLHF, fixed = family || policy == SIM_STATIC;
    Observed o = observed_start(sc, ranks, slow);
    double tp0 = nr_now();
    int rc = 0;
    /* the starting plan: the fixed baselines' (fixed_plan), or the best plan for the initial conditions, on the
       true cluster */
    PlanConfig start;
    StepCost sc0;
    char what[384] = "";
    CostWork *cw = cost_work_new();
    if (fixed ? fixed_plan(cw, sc, &truth, policy, &o, 0, &start, what, sizeof what) != 0
              : adaptive_start(sc, &truth, &o, &start, &sc0, what, sizeof what) != 0) {
        res->failed = 1;
        cost_work_free(cw);
        return nr_fail(why, len, "%s: no plan fits the %d-rank pool at step 0: %s", sim_policy_name(policy), o.npool,
                       what);
    }
    SimRun run = {sc, nr_xcalloc(1, sizeof(PlanKept)), getenv("NEREUS_SIM_DEBUG") != NULL};
    AdaptConfig ac = {policy, sc->gamma, sc->threshold, sc->every_k, sc->steps, sc->gpus, tx_cost, &run};
    Adapt ad;
    adapt_init(&ad, &ac, &start, &o);
    PlanConfig *kept_at = nr_xmalloc(sizeof *kept_at); /* the plan run.kept was last brought up to */
    *kept_at = ad.cur;
    int ref_pool = o.npool; /* the fixed baselines': the pool they last chose for */
    for (int step = 0; step < sc->steps; step++) {
        Workload sw = planned_for(sc, step); /* what the adaptive search plans for */
        w.resp_len = w.resp_max = sw.resp_len;
        o.resp_len = w.resp_len;
        o.npool = pool_at(sc, step, slow);
        AdaptDecision d;
        memset(&d, 0, sizeof d);
        if (fixed) { /* re-chosen when the pool changes, as fixed_plan chooses, and taken */
            if (o.npool != ref_pool || !adapt_plan_within(&ad.cur, o.pool, o.npool, sc->gpus)) {
                ref_pool = o.npool;
                d.searched = 1;
                d.failed = fixed_plan(cw, sc, &truth, policy, &o, step, &d.next, d.why, sizeof d.why) != 0;
                if (!d.failed) {
                    StepCost c;
                    d.L_now = cost_plan_in(cw, &truth, &ad.cur, sc->gpus, &w, &c);
                    d.L_new = cost_plan_in(cw, &truth, &d.next, sc->gpus, &w, &c);
                    d.admitted = 1;
                    d.changed = !plan_same(&d.next, &ad.cur);
                    d.C = d.changed ? transition_s(&run, &ad.cur, &d.next) : 0;
                    snprintf(d.reason, sizeof d.reason, "the pool changed: re-chosen for the steps left");
                    if (d.changed) adapt_revert(&ad, &d.next);
                }
            }
        } else {
            StepCost now;
            cost_plan_in(cw, &model, &ad.cur, sc->gpus, &w, &now);
            o.oom = !now.fits; /* the monitor's predicted out-of-memory: the plan in force at this step's lengths */
            adapt_step(&ad, step, &model, &w, &model, &sw, &o, &d);
        }
        if (d.searched) {
            res->replans++;
            if (d.failed) {
                res->failed = 1;
                rc = nr_fail(why, len, "%s: no plan fits the %d-rank pool at step %d: %s", sim_policy_name(policy),
                             o.npool, step, d.why);
                break;
            }
            if (run.debug) { /* NEREUS_SIM_DEBUG: every decision with its numbers, and each new plan */
                fprintf(stderr, "sim %-9s step %4d pool %4d len %7.1f: L %.4f -> %.4f s, C %.3f s, H %.1f: %s%s%s\n",
                        sim_policy_name(policy), step, o.npool, w.resp_len, d.L_now, d.L_new, d.C, d.H, d.reason,
                        d.kept ? " (model-stages of the plan in force kept)" : "", d.changed ? " [switch]" : "");
                if (d.changed) {
                    char pb[8192];
                    plan_format(&d.next, pb, sizeof pb);
                    fprintf(stderr, "%s", pb);
                }
            }
            if (d.changed) {
                res->transitions++;
                res->transition_s += d.C;
            } else if (!d.admitted) {
                res->refused++;
            }
        }
        plan_kept_follow(run.kept, sc->keep_comms, kept_at, &ad.cur); /* the communicators the job keeps now */
        /* the step on the true cluster, and the planner's calibration from it */
        const PlanConfig *cur = &ad.cur;
        StepCost t;
        double T = cost_plan_in(cw, &truth, cur, sc->gpus, &w, &t);
        if (!t.fits) { /* the plan in force cannot hold this step's lengths on the true cluster */
            res->failed = 1;
            rc = nr_fail(why, len, "%s: the plan in force runs out of memory at step %d (responses %.0f tokens): rank "
                         "%d needs %.1f GiB of %.1f GiB less %.0f%% headroom", sim_policy_name(policy), step,
                         w.resp_len, t.worst_rank, t.peak_mem / 1073741824.0, truth.hw.mem / 1073741824.0,
                         100 * truth.headroom);
            break;
        }
        res->total_s += T;
        if (!family)
            for (int s = 0; s < PLAN_NSTAGES; s++) {
                GridLayout l = {cur->stage[s].tp, cur->stage[s].pp, cur->stage[s].dp};
                double m = cost_stage(&sc->truth, s, l, &w, NULL); /* what the timers would measure (speed-normalised) */
                if (isfinite(m) && m > 0) cost_calibrate(&model, s, l, &w, m, 0.5);
            }
    }
    free(run.kept);
    free(kept_at);
    cost_work_free(cw);
    res->planner_s = nr_now() - tp0;
    res->total_s += res->transition_s;
    res->mean_step_s = res->total_s / sc->steps;
    return rc;
}
