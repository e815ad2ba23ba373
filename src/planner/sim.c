/* sim.c — the simulator (sim.h): one policy over a scenario's steps, on
 * the modelled "true" cluster, with the planner calibrating a model of it.
 * Pure (no MPI). */
#include "nereus/sim.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nereus/transition.h"
#include "nereus/util.h"

const char *sim_policy_name(int p) {
    static const char *n[SIM_NPOLICIES] = {"static", "verl", "openrlhf", "admit-all", "every-k", "payback"};
    return p >= 0 && p < SIM_NPOLICIES ? n[p] : "?";
}

/* geometric growth from the first step's length to len_end at the last */
static double len_at(const SimScenario *sc, int step) {
    if (sc->steps <= 1 || !(sc->len_end > 0)) return sc->w.resp_len;
    return sc->w.resp_len * pow(sc->len_end / sc->w.resp_len, (double)step / (sc->steps - 1));
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

static int plan_within(const PlanConfig *p, int pool) {
    for (int s = 0; s < PLAN_NSTAGES; s++)
        for (int i = 0; i < p->stage[s].nranks; i++)
            if (p->stage[s].ranks[i] >= pool) return 0;
    return 1;
}

/* The transition engine's prediction for old → new: the slabs of every
 * changed model-stage (the modelled model as a GPT of the same L, C, heads
 * and vocabulary: the same tensor cuts, parameters within ~10% of the
 * Llama/Qwen counts) over the true cluster's inter-node link, plus a
 * communicator set-up per changed model-stage. The engine counts 4-byte
 * elements; the modelled models hold bf16 weights (inference stages: half
 * the bytes) and, trained, 14 bytes a parameter in the moved buffers (bf16
 * weights, fp32 master, m, v: 14/12 of the engine's three 4-byte buffers),
 * so the two kinds are priced as two DAGs with their bandwidth scaled by
 * element width, and the slower one taken (they run side by side). */
static double tx_predict(const SimScenario *sc, const TxChange *ch, int n, double scale) {
    if (n == 0) return 0;
    const HwModel *hw = &sc->truth.hw;
    TxOptions o = {0, 64u << 20, 512u << 20, hw->bw[1] * sc->truth.eff.f[EFF_P2P_INTER] * scale, hw->lat[1], 0, NULL, 0,
                   hw->ranks_per_node, hw->bw[0] * sc->truth.eff.f[EFF_P2P_INTRA] * scale};
    TxPlan P;
    char why[256];
    if (tx_plan_build(&P, ch, n, sc->gpus, &o, why, sizeof why) != 0) return INFINITY;
    double t = P.predicted_s;
    tx_plan_free(&P);
    return t;
}

static double transition_s(const SimScenario *sc, const PlanConfig *a, const PlanConfig *b) {
    TxChange inf[PLAN_NSTAGES], trn[PLAN_NSTAGES];
    int ni = 0, nt = 0;
    for (int s = 0; s < PLAN_NSTAGES; s++) {
        if (s == PLAN_REWARD_INF && !sc->truth.have_rm) continue;
        if (plan_stage_same(&a->stage[s], &b->stage[s])) continue;
        const ModelShape *m = plan_stage_is_critic(s) ? &sc->truth.critic : &sc->truth.actor;
        TxChange *x = plan_stage_is_train(s) ? &trn[nt++] : &inf[ni++];
        memset(x, 0, sizeof *x);
        x->id = s;
        x->kind = TX_MOVE;
        x->tie = plan_stage_phase(s);
        x->cfg = (GPTConfig){m->V, 16, m->L, m->C, m->NH, m->value_head};
        x->from = a->stage[s];
        x->to = b->stage[s];
        x->trainable = plan_stage_is_train(s);
        x->nbufs = x->trainable ? 3 : 1;
        x->bmax_from = x->bmax_to = 1;
        x->tmax = 1;
    }
    double wb = sc->truth.actor.wbytes > 0 ? sc->truth.actor.wbytes : 4;
    double ti = tx_predict(sc, inf, ni, 4.0 / wb), tt = tx_predict(sc, trn, nt, 12.0 / 14.0);
    return fmax(ti, tt) + (ni + nt) * SIM_COMM_SETUP_S;
}

/* the planner's search on the pool: all its ranks, and without the slow ones; the faster plan */
static int planner_search(const CostModel *model, const SimScenario *sc, int pool, const double *slow,
                          const Workload *w, PlanConfig *out, double *pred) {
    static int fast[PLAN_MAX_RANKS];
    int nf = 0;
    for (int r = 0; r < pool; r++)
        if (slow[r] <= 1.05) fast[nf++] = r;
    PlanConfig p1, p2;
    StepCost c1, c2;
    SearchStats st;
    char why[512];
    int ok1 = plan_search_on(model, pool, NULL, sc->gpus, w, &p1, &c1, &st, why, sizeof why) == 0; /* ranks 0..pool-1 */
    int ok2 = nf < pool && nf > 0 && plan_search_on(model, nf, fast, sc->gpus, w, &p2, &c2, &st, why, sizeof why) == 0;
    if (!ok1 && !ok2) return -1;
    if (ok2 && (!ok1 || c2.total < c1.total)) {
        *out = p2;
        *pred = c2.total;
    } else {
        *out = p1;
        *pred = c1.total;
    }
    return 0;
}

/* the best plan of a placement family for the pool (the fixed baselines: chosen once for the initial
   conditions with the true cluster, like the static plan, and re-chosen only when the pool changes) */
static int family_plan(const CostModel *truth, const SimScenario *sc, int mode, int pool, const Workload *w,
                       PlanConfig *out) {
    StepCost c;
    SearchStats st;
    char why[512];
    return plan_search_mode(truth, pool, NULL, sc->gpus, w, mode, out, &c, &st, why, sizeof why);
}

int sim_run(const SimScenario *sc, int policy, SimResult *res, char *why, size_t len) {
    memset(res, 0, sizeof *res);
    static double slow[PLAN_MAX_RANKS];
    CostModel truth = sc->truth, model = sc->truth;
    truth.slow = slow;
    model.eff = eff_default(); /* the planner starts conservative and calibrates */
    model.slow = slow;         /* per-rank speed: measured every step (stage timings per rank) */
    Workload w = sc->w;
    int pool = pool_at(sc, 0, slow);
    PlanConfig cur;
    double pred;
    double tp0 = nr_now();
    int rc = 0;
    /* the starting plan */
    if (policy == SIM_VERL || policy == SIM_OPENRLHF)
        rc = family_plan(&truth, sc, policy == SIM_VERL ? SEARCH_COLOCATED : SEARCH_DISAGGREGATED, pool, &w, &cur);
    else
        rc = planner_search(&truth, sc, pool, slow, &w, &cur, &pred); /* the best plan for the initial conditions */
    if (rc != 0) {
        res->failed = 1;
        return nr_fail(why, len, "%s: no plan fits the %d-rank pool at step 0", sim_policy_name(policy), pool);
    }
    double eff0 = 1;
    DriftMonitor dm;
    drift_init(&dm, sc->threshold, w.resp_len, eff0, pool);
    for (int step = 0; step < sc->steps; step++) {
        w.resp_len = w.resp_max = len_at(sc, step);
        pool = pool_at(sc, step, slow);
        double maxslow = 1;
        for (int r = 0; r < pool; r++) maxslow = fmax(maxslow, slow[r]);
        double eff = 1.0 / maxslow;
        int pool_changed = pool != dm.ref_pool, outside = !plan_within(&cur, pool);
        int mask = drift_check(&dm, w.resp_len, eff, pool, 0);
        int crossing = (mask & (DRIFT_LENGTH | DRIFT_EFFICIENCY)) != 0, urgent = pool_changed || outside;
        int want = 0;
        switch (policy) {
        case SIM_STATIC: case SIM_VERL: case SIM_OPENRLHF: want = urgent; break;
        case SIM_ADMIT_ALL: case SIM_PAYBACK: want = urgent || crossing; break;
        case SIM_EVERY_K: want = urgent || (step > 0 && sc->every_k > 0 && step % sc->every_k == 0); break;
        }
        if (want) {
            PlanConfig next;
            int ok;
            if (policy == SIM_VERL || policy == SIM_OPENRLHF)
                ok = family_plan(&truth, sc, policy == SIM_VERL ? SEARCH_COLOCATED : SEARCH_DISAGGREGATED, pool, &sc->w,
                                 &next) == 0;
            else if (policy == SIM_STATIC)
                ok = planner_search(&truth, sc, pool, slow, &sc->w, &next, &pred) == 0; /* initial conditions, new pool */
            else
                ok = planner_search(&model, sc, pool, slow, &w, &next, &pred) == 0;
            res->replans++;
            if (!ok) {
                res->failed = 1;
                rc = nr_fail(why, len, "%s: no plan fits the %d-rank pool at step %d", sim_policy_name(policy), pool, step);
                break;
            }
            StepCost a, b;
            double Lnow = outside ? INFINITY : cost_plan(&model, &cur, sc->gpus, &w, &a);
            double Lnew = cost_plan(&model, &next, sc->gpus, &w, &b);
            double C = transition_s(sc, &cur, &next);
            int take;
            char reason[256];
            if (policy == SIM_PAYBACK)
                take = admit(Lnow, Lnew, C, sc->gamma, drift_horizon(&dm, step, sc->steps), urgent, reason, sizeof reason);
            else
                take = urgent || Lnew < Lnow;
            if (take && memcmp(&next, &cur, sizeof next) != 0) {
                res->transitions++;
                res->transition_s += C;
                cur = next;
            } else if (!take) {
                res->refused++;
            }
            if (crossing || urgent) drift_reset(&dm, step, w.resp_len, eff, pool);
        }
        /* the step on the true cluster, and the planner's calibration from it */
        StepCost t;
        double T = cost_plan(&truth, &cur, sc->gpus, &w, &t);
        res->total_s += T;
        if (policy != SIM_VERL && policy != SIM_OPENRLHF)
            for (int s = 0; s < PLAN_NSTAGES; s++) {
                GridLayout l = {cur.stage[s].tp, cur.stage[s].pp, cur.stage[s].dp};
                double m = cost_stage(&sc->truth, s, l, &w, NULL); /* what the timers would measure (speed-normalised) */
                if (isfinite(m) && m > 0) cost_calibrate(&model, s, l, &w, m, 0.5);
            }
    }
    res->planner_s = nr_now() - tp0;
    res->total_s += res->transition_s;
    res->mean_step_s = res->total_s / sc->steps;
    return rc;
}
