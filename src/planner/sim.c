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

const char *sim_policy_name(int p) { return p == SIM_ORACLE ? "oracle" : adapt_policy_name(p); }

/* geometric growth from the first step's length to len_end at the last */
static double len_at(const SimScenario *sc, int step) {
    if (sc->steps <= 1 || !(sc->len_end > 0)) return sc->w.resp_len;
    return sc->w.resp_len * pow(sc->len_end / sc->w.resp_len, (double)step / (sc->steps - 1));
}

/* w at mean response length len, its longest the scenario's tail ratio of it (0: none) */
static void set_len(const SimScenario *sc, Workload *w, double len) {
    w->resp_len = len;
    w->resp_longest = sc->longest_ratio * len;
}

/* What the adaptive search plans for at `step`: the step's lengths, and memory for the lengths it may see
   before its next replan, up to the threshold above them (a crossing replans), never past the job's longest
   (a job's responses are capped: the trace's largest length) */
static Workload planned_for(const SimScenario *sc, int step) {
    Workload w = sc->w;
    set_len(sc, &w, len_at(sc, step));
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

/* a policy's run: the scenario, the layouts its job keeps communicators of (plan.h, PlanKept), what its
   moves measured against the engine's price (the planner's prices scale by their median, as the live job's
   do: txprice.h) and whether every decision, plan and transition price goes to stderr (NEREUS_SIM_DEBUG) */
typedef struct SimRun {
    const SimScenario *sc;
    PlanKept *kept;
    TxCalib calib;
    int debug;
} SimRun;

/* the engine's price of a → b on the modelled links (the planner's before its calibration scale): the data and the
   set-up of the communicators the move needs (into *setup_s, may be NULL), in all */
static double transition_parts(const SimRun *run, const PlanConfig *a, const PlanConfig *b, double *setup_out) {
    const SimScenario *sc = run->sc;
    TxChange inf[PLAN_NSTAGES], trn[PLAN_NSTAGES];
    int ni = 0, nt = 0, nsetup = 0;
    double setup_s = 0; /* the new sets of communicators, each priced by its ranks (txprice.h) */
    for (int s = 0; s < PLAN_NSTAGES; s++) {
        if (s == PLAN_REWARD_INF && !sc->truth.have_rm) continue;
        if (plan_stage_same(&a->stage[s], &b->stage[s])) continue;
        const ModelShape *m = plan_stage_is_critic(s) ? &sc->truth.critic : &sc->truth.actor;
        TxChange *x = plan_stage_is_train(s) ? &trn[nt++] : &inf[ni++];
        memset(x, 0, sizeof *x);
        x->id = s;
        x->kind = TX_MOVE;
        x->tie = plan_stage_phase(s);
        x->cfg = m->cfg; /* the shape's own tensor table (shape_named: the published Llama/Qwen config) */
        x->cfg.maxT = 16, x->cfg.value_head = m->value_head;
        x->from = a->stage[s];
        x->to = b->stage[s];
        x->trainable = plan_stage_is_train(s);
        x->nbufs = x->trainable ? 3 : 1;
        x->bmax_from = x->bmax_to = 1;
        x->tmax = 1;
        x->comm_shared = !plan_stage_new_comms(a, b, s) || plan_kept_has(run->kept, &b->stage[s]);
        nsetup += !x->comm_shared;
        if (!x->comm_shared) setup_s += tx_comm_setup_s(b->stage[s].tp * b->stage[s].pp * b->stage[s].dp);
    }
    double wb = sc->truth.actor.wbytes > 0 ? sc->truth.actor.wbytes : 4;
    double ti = tx_predict(sc, inf, ni, 4.0 / wb), tt = tx_predict(sc, trn, nt, 12.0 / 14.0);
    if (run->debug)
        fprintf(stderr, "    transition: data %.3f s (inference %.3f, training %.3f), %d of %d changed model-stages with "
                "new communicators (%.3f s)\n", fmax(ti, tt), ti, tt, nsetup, ni + nt, setup_s);
    if (setup_out) *setup_out = setup_s;
    return fmax(ti, tt) + setup_s;
}

static double transition_s(const SimRun *run, const PlanConfig *a, const PlanConfig *b) {
    return transition_parts(run, a, b, NULL);
}

/* the planner's price: the engine's, scaled by what the run's moves measured against it (1 before any) */
static double tx_cost(void *ctx, const PlanConfig *a, const PlanConfig *b) {
    SimRun *run = ctx;
    return transition_s(run, a, b) * tx_calib_scale(&run->calib);
}

/* the set-up part of tx_cost (adapt.h: AdaptConfig.tx_setup), so scaled */
static double tx_setup(void *ctx, const PlanConfig *a, const PlanConfig *b) {
    SimRun *run = ctx;
    int debug = run->debug;
    double S;
    run->debug = 0; /* printed with tx_cost's */
    transition_parts(run, a, b, &S);
    run->debug = debug;
    return S * tx_calib_scale(&run->calib);
}

/* A move's seconds on the modelled cluster before its noise: at once, the engine's price (data and set-up); one
   step late (ahead: its communicators built at the boundary before the step that ran on the old plan, T_wait
   true seconds), the data and what the step did not cover of the set-up, max(0, S − T_wait); *hidden: the
   set-up the step covered */
static double move_s(const SimRun *run, const PlanConfig *a, const PlanConfig *b, int ahead, double T_wait,
                     double *hidden) {
    double S, C = transition_parts(run, a, b, &S);
    *hidden = ahead ? fmin(S, fmax(0, T_wait)) : 0;
    return C - *hidden;
}

/* For the policies that decide on the true cluster (the fixed baselines, the oracle): whether the move a → b waits a
   step, its communicators built meanwhile (adapt.h, "Moves that wait a step", priced on the true cluster): T_now
   the true seconds of the step the plan in force would run (∞: it cannot run one), gain the step's true gain
   (L_now − L_new) given up by waiting, f the move's realised / priced factor. Returns 1 when waiting costs less
   (always 0 with the scenario's no_prebuild) */
static int true_ahead(const SimRun *run, const PlanConfig *a, const PlanConfig *b, double T_now, double gain, double f) {
    if (run->sc->no_prebuild || !isfinite(T_now)) return 0;
    double S, C = transition_parts(run, a, b, &S);
    return S > 0 && (C - fmin(S, T_now)) * f + fmax(0, gain) < C * f;
}

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
        set_len(sc, &w, l0 * pow(l1 / l0, (double)k / (SIM_FIXED_LENS - 1)));
        PlanConfig p;
        StepCost c;
        if (adapt_search(truth, &w, policy, sc->gpus, o, &p, &c, why, len) != 0) continue;
        double T = 0;
        for (int s = from; s < sc->steps; s += SIM_FIXED_STRIDE) {
            Workload ws = w;
            set_len(sc, &ws, len_at(sc, s));
            T += cost_plan_in(cw, truth, &p, sc->gpus, &ws, &c);
        }
        if (T < best) {
            best = T;
            *out = p;
        }
    }
    return isfinite(best) ? 0 : -1;
}

/* the policy a fixed baseline searches with: its own, or the 50/50 split (SimPolicy.half) */
static int fixed_policy(const SimPolicy *sp) { return sp->policy | (sp->half ? ADAPT_HALF : 0); }

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

/* One policy's run in progress: the true cluster and the planner's model of it, the controller, and what the
 * noise model needs (sim.h, SimNoise): whether the next step is the first after a move (its warm-up), the
 * plan in force's last fresh measured / predicted ratios, and the measure-and-revert guard's probation. */
#define SIM_RATIOS 4
#define SIM_MAX_DOWN 64
typedef struct SimLoop {
    const SimScenario *sc;
    const SimPolicy *sp;
    SimResult *res;
    SimRun run;
    CostModel truth, model;
    CostWork *cw;
    double slow[PLAN_MAX_RANKS]; /* each rank's slowdown at the step */
    int ranks[PLAN_MAX_RANKS];   /* the pool: ranks 0 .. o.npool - 1 */
    Observed o;
    Workload w, sw;              /* the step's workload, and what the adaptive search plans for */
    Adapt ad;
    int fixed, family, ref_pool;
    PlanConfig *kept_at;         /* the plan run.kept was last brought up to */
    PlanConfig *prev;            /* the plan in force before this step's decision */
    PlanConfig *guard_old;       /* on probation: the plan moved away from (the oracle's scratch) */
    PlanConfig *oracle_fixed;    /* the oracle: the static baseline's plan for the pool (fixed_plan), for oracle_pool */
    int oracle_pool;
    PlanConfig *oracle_wide;     /* the oracle: its widened search's plan, found at oracle_wide_len after the first
                                    oracle_wide_events scenario events (-1: none yet) */
    double oracle_wide_len;
    int oracle_wide_events;
    int warm;                    /* this step is the first after a move */
    int pending;                 /* a move decided at the last boundary waits for this one (AdaptDecision.ahead):
                                    the controller's plan is its target, the step ran on *pend_from */
    PlanConfig *pend_from;       /* the plan the job ran while the move waited */
    AdaptDecision *pend_d;       /* the decision of the waiting move */
    double last_T;               /* the last step's realised seconds (what a waiting move's set-up ran beside) */
    double ratio[SIM_RATIOS];    /* the plan in force's measured / predicted steps, its last fresh ones */
    int nratio, rnext;
    int probation, guard_pool, nfresh; /* the guard: on probation, the pool then, fresh steps measured */
    double guard_ratio, fresh[16];
    /* MODELLED failures (SimFailures) */
    double exposure, next_fail;  /* the GPU-hours the job has run, and the next Poisson failure's place in them */
    uint64_t fail_draws;         /* the failure process's draws made */
    double since_ckpt;           /* true seconds of the steps since the restart baseline's last checkpoint */
    int down;                    /* failed nodes out of the pool */
    double up_at[SIM_MAX_DOWN];  /* when each comes back, in the run's true seconds (oldest first) */
    int move_due;                /* the next step's move (if any) is a failure's */
} SimLoop;

static double median_of(const double *v, int n) {
    double r[16];
    memcpy(r, v, (size_t)n * sizeof *r);
    return nr_median(r, n);
}

/* The fixed baselines' decision (static, verl-like, openrlhf-like): re-chosen when the pool changes, as
   fixed_plan chooses, and taken */
static void decide_fixed(SimLoop *L, int step, AdaptDecision *d) {
    const SimScenario *sc = L->sc;
    if (L->o.npool == L->ref_pool && adapt_plan_within(&L->ad.cur, L->o.pool, L->o.npool, sc->gpus)) return;
    L->ref_pool = L->o.npool;
    d->searched = 1;
    d->failed = fixed_plan(L->cw, sc, &L->truth, fixed_policy(L->sp), &L->o, step, &d->next, d->why, sizeof d->why) != 0;
    if (d->failed) return;
    StepCost c;
    d->L_now = cost_plan_in(L->cw, &L->truth, &L->ad.cur, sc->gpus, &L->w, &c);
    d->L_new = cost_plan_in(L->cw, &L->truth, &d->next, sc->gpus, &L->w, &c);
    d->admitted = 1;
    d->changed = !plan_same(&d->next, &L->ad.cur);
    d->C = d->C_move = d->changed ? transition_s(&L->run, &L->ad.cur, &d->next) : 0;
    snprintf(d->reason, sizeof d->reason, "the pool changed: re-chosen for the steps left");
    /* a plan in force that can still run this step may wait it out while the new plan's communicators are built */
    int can_wait = adapt_plan_within(&L->ad.cur, L->o.pool, L->o.npool, sc->gpus) && isfinite(d->L_now);
    double f = sim_move_factor(&sc->noise, sim_plan_key(&L->ad.cur), sim_plan_key(&d->next), step);
    if (d->changed && can_wait &&
        true_ahead(&L->run, &L->ad.cur, &d->next, d->L_now * sim_plan_error(&sc->noise, sim_plan_key(&L->ad.cur)),
                   d->L_now - d->L_new, sc->noise.on ? f : 1))
        d->ahead = 1;
    if (d->changed) adapt_revert(&L->ad, &d->next);
}

/* The oracle's horizon from `step`: the steps to the scenario's next event (a pool change, a slowdown's start or
   end), to where the responses have grown by the drift threshold, or to the end, whichever comes first */
static int oracle_horizon(const SimScenario *sc, int step) {
    int h = sc->steps - step;
    for (int e = 0; e < sc->nevents; e++)
        if (sc->ev[e].step > step) {
            h = sc->ev[e].step - step < h ? sc->ev[e].step - step : h;
            break;
        }
    double l0 = len_at(sc, step);
    for (int k = 1; k < h; k++)
        if (len_at(sc, step + k) > l0 * (1 + sc->threshold)) return k;
    return h > 0 ? h : 1;
}

/* a plan's true seconds over the h steps from `step` (the true cluster at the scenario's coming lengths, ×
   the plan's error; sampled at four points): ∞ when it cannot run them (ranks out of the pool, out of memory) */
#define ORACLE_POINTS 4
static double true_run_s(SimLoop *L, const PlanConfig *p, int step, int h) {
    if (!adapt_plan_within(p, L->o.pool, L->o.npool, L->sc->gpus)) return INFINITY;
    double T = 0;
    for (int k = 0; k < ORACLE_POINTS; k++) {
        Workload ws = L->w;
        ws.resp_max = len_at(L->sc, step + (h - 1) * k / (ORACLE_POINTS - 1));
        set_len(L->sc, &ws, ws.resp_max);
        StepCost c;
        double t = cost_plan_in(L->cw, &L->truth, p, L->sc->gpus, &ws, &c);
        if (!c.fits) return INFINITY;
        T += t * h / ORACLE_POINTS;
    }
    return T * sim_plan_error(&L->sc->noise, sim_plan_key(p));
}

/* how many of the h steps from `step` plan p runs before it runs out of memory as the responses grow (0: it
   cannot run this one, or holds ranks out of the pool); the scenario's lengths only grow or only shrink */
static int fit_steps(SimLoop *L, const PlanConfig *p, int step, int h) {
    if (!adapt_plan_within(p, L->o.pool, L->o.npool, L->sc->gpus)) return 0;
    int lo = 0, hi = h; /* p runs the first lo steps; not the first hi + 1 */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        Workload ws = L->w;
        ws.resp_max = fmax(len_at(L->sc, step), len_at(L->sc, step + mid - 1));
        set_len(L->sc, &ws, ws.resp_max);
        StepCost c;
        cost_plan_in(L->cw, &L->truth, p, L->sc->gpus, &ws, &c);
        if (c.fits) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* The oracle (MODELLED: it knows what no planner can). Every step it searches the true cluster (true
   efficiencies and slowdowns) for the plan holding the coming responses (widened, ADAPT_WIDE; redone after an
   event of the scenario or 5% longer responses) and for the step's own, and of those,
   the static baseline's plan for the pool (fixed_plan: the search, a heuristic, can miss a plan that a search
   for longer responses finds), the best with model-stages of the plan in force kept (as payback's keep_stages)
   and the plan in force takes the one whose true seconds over its horizon (oracle_horizon: it knows
   the future lengths and when the next event comes; cut to the steps the plan in force still holds in
   memory), plus the move's realised cost and warm-up, are least.
   Its search cannot see the per-plan error (only the plans it finds), and it looks no further than the
   horizon, so a policy can come out below it in a noisy run: regret is reported, not assumed. */
/* The oracle's cost of moving from the plan in force to cand over the h steps from `step` (run: cand's true
   seconds over them; t_now: the plan in force's true seconds for this step, ∞ where it cannot run it): the move's
   realised cost and warm-up at once, or one step late with cand's communicators built meanwhile (the first step
   on the plan in force, and only what it does not cover of their set-up left in the move), whichever is less.
   *ahead says which; *C is the move's price before its noise factor. */
static double oracle_cost(SimLoop *L, const PlanConfig *cand, int step, int h, double run, double t_now, int *ahead,
                          double *C) {
    const SimScenario *sc = L->sc;
    double f = sim_move_factor(&sc->noise, sim_plan_key(&L->ad.cur), sim_plan_key(cand), step);
    double warm = sc->noise.on ? sc->noise.warmup * run / h : 0, S, Cn = transition_parts(&L->run, &L->ad.cur, cand, &S);
    double now = run + Cn * f + warm;
    *ahead = 0;
    *C = Cn;
    if (!sc->no_prebuild && isfinite(t_now) && S > 0 && h > 1) {
        double hid = fmin(S, t_now), late = run - run / h + t_now + (Cn - hid) * f + warm;
        if (late < now) {
            *ahead = 1;
            *C = Cn - hid;
            return late;
        }
    }
    return now;
}

static void decide_oracle(SimLoop *L, int step, AdaptDecision *d) {
    const SimScenario *sc = L->sc;
    int h = oracle_horizon(sc, step), hc = fit_steps(L, &L->ad.cur, step, h);
    if (hc > 0) h = hc; /* compared over the steps the plan in force can still run (then it must move anyway) */
    PlanConfig *cand = L->guard_old; /* scratch: the oracle has no guard */
    StepCost c;
    d->searched = 1;
    d->H = h;
    d->L_now = hc > 0 ? true_run_s(L, &L->ad.cur, step, h) : INFINITY;
    double best = d->L_now, t_now = true_run_s(L, &L->ad.cur, step, 1), C;
    int ahead;
    int events = 0; /* the scenario's events so far: the widened search is redone after one, or 5% longer responses */
    while (events < sc->nevents && sc->ev[events].step <= step) events++;
    if (events != L->oracle_wide_events || fabs(L->w.resp_len / L->oracle_wide_len - 1) > 0.05) {
        L->oracle_wide_events = adapt_search(&L->truth, &L->sw, SIM_STATIC | ADAPT_WIDE, sc->gpus, &L->o,
                                             L->oracle_wide, &c, d->why, sizeof d->why) == 0 ? events : -1;
        L->oracle_wide_len = L->w.resp_len;
    }
    for (int k = 0; k < 2; k++) { /* the true cluster's search, with the margin (widened: ADAPT_WIDE) and without */
        if (k == 0 && L->oracle_wide_events >= 0) *cand = *L->oracle_wide;
        else if (k == 0 || adapt_search(&L->truth, &L->w, SIM_STATIC, sc->gpus, &L->o, cand, &c, d->why, sizeof d->why) != 0)
            continue;
        if (plan_same(cand, &L->ad.cur)) continue;
        double run = true_run_s(L, cand, step, h);
        if (!isfinite(run)) continue;
        double cost = oracle_cost(L, cand, step, h, run, t_now, &ahead, &C);
        if (cost < best) best = cost, d->next = *cand, d->C = C, d->ahead = ahead, d->L_new = run / h, d->changed = 1;
    }
    if (L->oracle_pool != L->o.npool) { /* and the static baseline's plan for this pool (it knows the trace too) */
        L->oracle_pool = fixed_plan(L->cw, sc, &L->truth, SIM_STATIC, &L->o, step, L->oracle_fixed, d->why,
                                    sizeof d->why) == 0 ? L->o.npool : -1;
    }
    if (L->oracle_pool == L->o.npool && !plan_same(L->oracle_fixed, &L->ad.cur)) {
        double run = true_run_s(L, L->oracle_fixed, step, h);
        double cost = isfinite(run) ? oracle_cost(L, L->oracle_fixed, step, h, run, t_now, &ahead, &C) : INFINITY;
        if (cost < best)
            best = cost, d->next = *L->oracle_fixed, d->C = C, d->ahead = ahead, d->L_new = run / h, d->changed = 1;
    }
    for (int s = 0; d->changed && s < PLAN_NSTAGES; s++) { /* and model-stages of the plan in force kept, as payback's */
        if (plan_stage_same(&d->next.stage[s], &L->ad.cur.stage[s])) continue;
        *cand = d->next;
        cand->stage[s] = L->ad.cur.stage[s];
        if (plan_same(cand, &L->ad.cur)) continue;
        double run = true_run_s(L, cand, step, h);
        double cost = isfinite(run) ? oracle_cost(L, cand, step, h, run, t_now, &ahead, &C) : INFINITY;
        if (cost < best) best = cost, d->next = *cand, d->C = C, d->ahead = ahead, d->L_new = run / h;
    }
    if (!d->changed && !isfinite(d->L_now)) { /* nothing runs the horizon: the plan in force, or any that runs this step */
        StepCost now;
        cost_plan_in(L->cw, &L->truth, &L->ad.cur, sc->gpus, &L->w, &now);
        if (now.fits && adapt_plan_within(&L->ad.cur, L->o.pool, L->o.npool, sc->gpus)) {
            d->L_now = d->L_new = INFINITY;
            snprintf(d->reason, sizeof d->reason, "oracle: nothing runs the next %d steps; the plan in force runs this one", h);
            return;
        }
        d->failed = 1;
        if (adapt_search(&L->truth, &L->w, SIM_STATIC, sc->gpus, &L->o, &d->next, &c, d->why, sizeof d->why) != 0)
            return;
        d->failed = 0, d->changed = !plan_same(&d->next, &L->ad.cur), d->C = transition_s(&L->run, &L->ad.cur, &d->next);
        d->ahead = 0; /* forced: at once */
    }
    d->C_move = d->C;
    d->admitted = d->changed;
    d->L_now /= h;
    snprintf(d->reason, sizeof d->reason, "oracle: over %d steps, true %.4g s/step now against %.4g", h, d->L_now,
             d->changed ? d->L_new : d->L_now);
    if (d->changed) adapt_revert(&L->ad, &d->next);
}

/* A move from L->prev to the plan in force: its realised cost (the engine's price with no noise, less the set-up
   the step it waited covered where it waited one (ahead: move_s); × the move's factor with noise, which the
   planner's later prices learn from), the warm-up it brings, and the guard's probation for a move the rule chose
   (not urgent, not a pool change's, not a fixed baseline's) */
static void account_move(SimLoop *L, int step, const AdaptDecision *d, int ahead) {
    const SimNoise *n = &L->sc->noise;
    SimResult *res = L->res;
    res->transitions++;
    double hidden, raw = move_s(&L->run, L->prev, &L->ad.cur, ahead, L->last_T, &hidden);
    if (ahead) res->moves_ahead++, res->setup_hidden_s += hidden;
    if (!n->on) {
        res->transition_s += raw;
        return;
    }
    double real = raw * sim_move_factor(n, sim_plan_key(L->prev), sim_plan_key(&L->ad.cur), step);
    tx_calib_add(&L->run.calib, raw, real);
    res->transition_s += real;
    L->warm = 1;
    int guarded = n->guard_margin > 0 && !L->fixed && L->sp->policy != SIM_ORACLE && d->urgent == ADMIT_RULE;
    L->probation = guarded && L->nratio > 0;
    if (L->probation) {
        L->guard_ratio = median_of(L->ratio, L->nratio);
        *L->guard_old = *L->prev;
        L->guard_pool = L->o.npool;
        L->nfresh = 0;
    }
    L->nratio = L->rnext = 0;
}

/* The guard's verdict once the new plan has its fresh steps (adapt_guard, as the live job's): back to the old
   plan when the new one measured slower than the old would be by more than the margin. Off when the pool
   changed during the probation or the old plan cannot run now. */
static void guard_check(SimLoop *L, int step, double measured) {
    const SimNoise *n = &L->sc->noise;
    if (L->o.npool != L->guard_pool || !adapt_plan_within(L->guard_old, L->o.pool, L->o.npool, L->sc->gpus)) {
        L->probation = 0;
        return;
    }
    L->fresh[L->nfresh++] = measured;
    if (L->nfresh < n->guard_steps && L->nfresh < 16) return;
    L->probation = 0;
    StepCost c;
    double pred_old = cost_plan_in(L->cw, &L->model, L->guard_old, L->sc->gpus, &L->w, &c), expect;
    char reason[512];
    AdaptGuard g = {L->guard_ratio};
    if (!c.fits || !adapt_guard(&g, median_of(L->fresh, L->nfresh), pred_old, n->guard_margin, &expect, reason,
                                sizeof reason))
        return;
    if (L->run.debug) fprintf(stderr, "sim %-12s step %4d: %s\n", L->sp->name, step, reason);
    *L->prev = L->ad.cur;
    adapt_revert(&L->ad, L->guard_old);
    AdaptDecision back = {.urgent = ADMIT_URGENT};
    account_move(L, step + 1, &back, 0);
    L->res->reverts++;
    plan_kept_follow(L->run.kept, L->sc->keep_comms, L->kept_at, &L->ad.cur);
}

/* The true cluster's step on plan p, run with the K the policy chose for it: a policy that decides on the true
   cluster (the fixed baselines, the oracle), the truth's own; an adaptive one, its model's (the live planner sets
   the job's K from its model's price: planner_live.c), which the truth then prices fixed */
static double true_step(SimLoop *L, const PlanConfig *p, StepCost *t) {
    if (L->fixed || L->sp->policy == SIM_ORACLE || L->truth.max_staleness < 1 || L->truth.staleness_fixed)
        return cost_plan_in(L->cw, &L->truth, p, L->sc->gpus, &L->w, t);
    cost_plan_in(L->cw, &L->model, p, L->sc->gpus, &L->w, t);
    CostModel *k = nr_xmalloc(sizeof *k);
    *k = L->truth;
    k->max_staleness = t->staleness, k->staleness_fixed = 1;
    double T = cost_plan_in(L->cw, k, p, L->sc->gpus, &L->w, t);
    free(k);
    return T;
}

/* the ranks plan p uses, any model-stage */
static int plan_ranks_used(const PlanConfig *p, int nranks) {
    unsigned char in[PLAN_MAX_RANKS];
    int n = 0;
    memset(in, 0, (size_t)nranks);
    for (int s = 0; s < PLAN_NSTAGES; s++)
        for (int i = 0; i < p->stage[s].nranks; i++) {
            int r = p->stage[s].ranks[i];
            if (r >= 0 && r < nranks && !in[r]) in[r] = 1, n++;
        }
    return n;
}

/* The step on the true cluster: its realised seconds (the model of the true cluster × the plan's error × the
   step's noise × the warm-up after a move), and the planner's calibration from what its timers measure (not on
   a warm-up step). Returns the seconds, or −1 when the plan cannot hold the step's lengths (why says so). */
static double realise_step(SimLoop *L, int step, char *why, size_t len) {
    const SimScenario *sc = L->sc;
    const SimNoise *n = &sc->noise;
    const PlanConfig *cur = L->pending ? L->pend_from : &L->ad.cur; /* a waiting move: the step runs on the old plan */
    StepCost t;
    double T = true_step(L, cur, &t);
    if (!t.fits)
        return nr_fail(why, len, "%s: the plan in force runs out of memory at step %d (responses %.0f tokens): rank "
                       "%d needs %.1f GiB of %.1f GiB less %.0f%% headroom", L->sp->name, step, L->w.resp_len,
                       t.worst_rank, t.peak_mem / 1073741824.0, L->truth.hw.mem / 1073741824.0,
                       100 * L->truth.headroom);
    unsigned long long key = n->on ? sim_plan_key(cur) : 0;
    double err = n->on ? sim_plan_error(n, key) : 1;
    if (n->on) {
        double pred = cost_plan_in(L->cw, &L->model, cur, sc->gpus, &L->w, &t);
        T *= err * sim_step_noise(n, key, step, -1) * (L->warm ? 1 + n->warmup : 1);
        if (!L->warm && pred > 0 && isfinite(pred)) {
            L->ratio[L->rnext] = T / pred;
            L->rnext = (L->rnext + 1) % SIM_RATIOS;
            if (L->nratio < SIM_RATIOS) L->nratio++;
        }
    }
    L->res->async_steps += t.overlap;
    L->res->staleness = t.staleness;
    L->res->gen_ranks = cur->stage[PLAN_ACTOR_GEN].nranks;
    L->res->ranks = plan_ranks_used(cur, sc->gpus);
    memcpy(L->res->phase, t.phase, sizeof t.phase);
    if (!L->family && !(n->on && L->warm && n->warmup > 0))
        for (int s = 0; s < PLAN_NSTAGES; s++) {
            GridLayout l = {cur->stage[s].tp, cur->stage[s].pp, cur->stage[s].dp};
            double m = cost_stage(&sc->truth, s, l, &L->w, NULL); /* what the timers would measure (speed-normalised) */
            if (n->on) m *= err * sim_step_noise(n, key, step, s);
            if (isfinite(m) && m > 0) cost_calibrate(&L->model, s, l, &L->w, m, 0.5);
        }
    return T;
}

/* NEREUS_SIM_DEBUG: what an adaptive decision's move (d->next against L->prev, the plan in force before it;
   taken or not) is worth on the true cluster, MODELLED: the gain a step exact (the true cluster's cost model) and
   with each plan's per-plan error, and the same over the decision's H steps (cut to those both plans hold in
   memory and the pool), beside the move's realised cost. The per-plan error is what no planner sees before it
   runs a plan; the exact gain is what its model can learn (docs/PLANNER.md, "The admission study"). */
static void debug_worth(SimLoop *L, int step, const AdaptDecision *d) {
    const SimNoise *n = &L->sc->noise;
    const PlanConfig *old = L->prev, *nw = &d->next;
    StepCost c;
    double e_old = sim_plan_error(n, sim_plan_key(old)), e_new = sim_plan_error(n, sim_plan_key(nw));
    double t_old = cost_plan_in(L->cw, &L->truth, old, L->sc->gpus, &L->w, &c);
    double t_new = cost_plan_in(L->cw, &L->truth, nw, L->sc->gpus, &L->w, &c);
    double H = d->H > 0 ? d->H : drift_horizon(&L->ad.dm, step, L->sc->steps); /* payback's H; the monitor's */
    int h = fit_steps(L, old, step, (int)fmax(1, H)), hn = fit_steps(L, nw, step, h);
    h = hn < h ? hn : h;
    double run_old = h > 0 ? true_run_s(L, old, step, h) : NAN, run_new = h > 0 ? true_run_s(L, nw, step, h) : NAN;
    L->run.debug = 0; /* its price is printed with the decision */
    double raw = transition_s(&L->run, old, nw), real = raw * sim_move_factor(n, sim_plan_key(old), sim_plan_key(nw), step);
    fprintf(stderr, "    worth on the true cluster (MODELLED): dL exact %.4f s/step, with the plans' errors (x%.4f in "
            "force, x%.4f new) %.4f; over %d steps exact %.2f s, with the errors %.2f s; the move realised %.3f s "
            "(engine price %.3f)\n", t_old - t_new, e_old, e_new, t_old * e_old - t_new * e_new, h,
            run_old / e_old - run_new / e_new, run_old - run_new, real, raw);
    L->run.debug = 1;
}

/* NEREUS_SIM_DEBUG: a decision with its numbers, what its move is worth on the true cluster, and the new plan */
static void debug_decision(SimLoop *L, int step, const AdaptDecision *d) {
    fprintf(stderr, "sim %-12s step %4d pool %4d len %7.1f: L %.4f -> %.4f s, C %.3f s, H %.1f: %s%s%s\n", L->sp->name,
            step, L->o.npool, L->w.resp_len, d->L_now, d->L_new, d->C, d->H, d->reason,
            d->kept ? " (model-stages of the plan in force kept)" : "", d->changed ? " [switch]" : "");
    if (!L->fixed && L->sp->policy != SIM_ORACLE && !d->failed && d->L_new < d->L_now && isfinite(d->L_now) &&
        !plan_same(&d->next, L->prev))
        debug_worth(L, step, d);
    if (d->changed) {
        char pb[8192];
        plan_format(&d->next, pb, sizeof pb);
        fprintf(stderr, "%s", pb);
    }
}

/* the run's true seconds so far: its steps, its moves and, recovered in place, what its failures lost */
static double run_now(const SimLoop *L) { return L->res->total_s + L->res->transition_s + L->res->fail_lost_s; }

/* the place of the Poisson process's next failure in the job's GPU-hours: an exponential gap of mean 1 / rate */
static void draw_failure(SimLoop *L) {
    const SimFailures *f = &L->sc->fail;
    double u = (double)(rng_u64(f->seed, RNG_FAIL, L->fail_draws++, 0) >> 11) * 0x1p-53;
    L->next_fail += -log1p(-u) / f->rate;
}

/* the scenario's pool with the failed nodes out (its last ones), those repaired by now back in; at least a node */
static int fail_pool(SimLoop *L, int pool) {
    double now = run_now(L);
    int k = 0;
    while (k < L->down && L->up_at[k] <= now) k++;
    memmove(L->up_at, L->up_at + k, (size_t)(L->down - k) * sizeof *L->up_at);
    L->down -= k;
    int rpn = L->sc->truth.hw.ranks_per_node, left = pool - L->down * rpn;
    return left >= rpn ? left : pool < rpn ? pool : rpn;
}

/* A failed node the plan in force uses, where the pool has a node the plan does not use: that node takes the failed
   one's place (the modelled ranks are interchangeable: it takes its ranks' names, and the pool loses its last node)
   and the failed node's state streams to it from replicas. Its price: the move from the plan to the plan with the
   plan's last node on the pool's last one (its data and new communicators), counted as a move and the failure's.
   Returns 0, or −1 when the plan uses the pool's last node (the policy's own move for the smaller pool then). */
static int fail_replace(SimLoop *L, const PlanConfig *cur) {
    int rpn = L->sc->truth.hw.ranks_per_node, top = -1, spare = L->o.npool - rpn;
    for (int s = 0; s < PLAN_NSTAGES; s++)
        for (int i = 0; i < cur->stage[s].nranks; i++) top = cur->stage[s].ranks[i] > top ? cur->stage[s].ranks[i] : top;
    int node = top / rpn * rpn;
    if (top < 0 || node >= spare) return -1;
    PlanConfig *to = L->guard_old; /* scratch: a probation's old plan is not needed past a failure */
    L->probation = 0;
    *to = *cur;
    for (int s = 0; s < PLAN_NSTAGES; s++)
        for (int i = 0; i < to->stage[s].nranks; i++)
            if (to->stage[s].ranks[i] >= node && to->stage[s].ranks[i] < node + rpn) to->stage[s].ranks[i] += spare - node;
    double m = transition_s(&L->run, cur, to);
    L->res->transitions++;
    L->res->transition_s += m;
    L->res->fail_move_s += m;
    L->res->fail_gpu_h += m * L->o.npool / 3600;
    return 0;
}

/* The failures during step `step` (T true seconds; the plan's GPUs exposed, each a node it uses), each priced both
   ways (SimResult) and a node out of the pool for repair_s; then the restart baseline's checkpoint clock */
static void fail_during(SimLoop *L, int step, double T) {
    const SimFailures *f = &L->sc->fail;
    const PlanConfig *cur = L->pending ? L->pend_from : &L->ad.cur;
    SimResult *res = L->res;
    int n = L->o.npool, k = 0;
    double at[8]; /* where in the step, as fractions of it */
    if (f->single && f->at_step == step) at[k++] = 0.5;
    if (!f->single && f->rate > 0) {
        double e = T * res->ranks / 3600.0, from = L->exposure;
        L->exposure += e;
        res->fail_exposure_gpu_h = L->exposure;
        for (; L->next_fail <= L->exposure; draw_failure(L))
            if (k < 8) at[k++] = (L->next_fail - from) / e; /* more in one step: the step is lost once */
    }
    for (int i = 0; i < k; i++) {
        double lost = at[i] * T, inplace = f->detect_s + lost;
        double redo = lost + L->since_ckpt + sim_ckpt_restart_s(L->sc, n, NULL);
        res->failures++;
        res->fail_lost_s += inplace;
        res->fail_gpu_h += inplace * n / 3600;
        res->restart_lost_s += redo;
        res->restart_gpu_h += redo * n / 3600;
        if (fail_replace(L, cur) != 0) L->move_due = 1;
        if (L->down < SIM_MAX_DOWN) L->up_at[L->down++] = run_now(L) + f->repair_s;
    }
    L->since_ckpt = f->ckpt_every > 0 && (step + 1) % f->ckpt_every == 0 ? 0 : L->since_ckpt + T;
}

/* one step: the decision, its move, the step realised; returns 0, or −1 with why */
static int sim_one_step(SimLoop *L, int step, char *why, size_t len) {
    const SimScenario *sc = L->sc;
    L->sw = planned_for(sc, step);
    L->w.resp_max = L->sw.resp_len;
    set_len(sc, &L->w, L->sw.resp_len);
    L->o.resp_len = L->w.resp_len;
    double moved_before = L->res->transition_s;
    L->o.npool = fail_pool(L, pool_at(sc, step, L->slow));
    if (L->pending) { /* the move decided at the last boundary, its communicators built while that step ran */
        L->pending = 0;
        if (adapt_plan_within(&L->ad.cur, L->o.pool, L->o.npool, sc->gpus)) {
            *L->prev = *L->pend_from;
            account_move(L, step, L->pend_d, 1);
        } else { /* ranks it needs left the pool: it does not come; the controller is back on the plan in force */
            adapt_revert(&L->ad, L->pend_from);
        }
    }
    *L->prev = L->ad.cur;
    AdaptDecision d;
    memset(&d, 0, sizeof d);
    if (L->fixed) decide_fixed(L, step, &d);
    else if (L->sp->policy == SIM_ORACLE) decide_oracle(L, step, &d);
    else {
        StepCost now;
        cost_plan_in(L->cw, &L->model, &L->ad.cur, sc->gpus, &L->w, &now);
        L->o.oom = !now.fits; /* the monitor's predicted out-of-memory: the plan in force at this step's lengths */
        adapt_step(&L->ad, step, &L->model, &L->w, &L->model, &L->sw, &L->o, &d);
    }
    if (d.searched) {
        L->res->replans++;
        if (d.failed)
            return nr_fail(why, len, "%s: no plan fits the %d-rank pool at step %d: %s", L->sp->name, L->o.npool, step,
                           d.why);
        if (L->run.debug) debug_decision(L, step, &d);
        if (d.changed && d.ahead && !sc->no_prebuild) { /* it waits this step: moved before the next */
            L->pending = 1;
            *L->pend_from = *L->prev;
            *L->pend_d = d;
            L->probation = 0; /* any move ends a probation */
        } else if (d.changed) {
            account_move(L, step, &d, 0);
        } else if (!d.admitted) {
            L->res->refused++;
        }
    }
    if (L->move_due) { /* the move for the pool a failure shrank: in place, the lost state from replicas */
        L->move_due = 0;
        double m = L->res->transition_s - moved_before;
        L->res->fail_move_s += m;
        L->res->fail_gpu_h += m * L->o.npool / 3600;
    }
    /* the communicators the job keeps now: those of the plan it runs */
    plan_kept_follow(L->run.kept, sc->keep_comms, L->kept_at, L->pending ? L->pend_from : &L->ad.cur);
    double T = realise_step(L, step, why, len);
    if (T < 0) return -1;
    L->last_T = T;
    L->res->total_s += T;
    fail_during(L, step, T);
    int fresh = !L->warm;
    L->warm = 0;
    if (L->probation && fresh) guard_check(L, step, T);
    return 0;
}

int sim_run_as(const SimScenario *sc, const SimPolicy *sp, SimResult *res, char *why, size_t len) {
    memset(res, 0, sizeof *res);
    SimLoop *L = nr_xcalloc(1, sizeof *L);
    L->sc = sc, L->sp = sp, L->res = res;
    L->truth = L->model = sc->truth;
    if (sp->sync) L->truth.max_staleness = 0, L->truth.staleness_fixed = 0;
    if (sp->half) L->truth.max_staleness = 1, L->truth.staleness_fixed = 1;
    L->model.max_staleness = L->truth.max_staleness, L->model.staleness_fixed = L->truth.staleness_fixed;
    L->truth.slow = L->slow;
    L->model.eff = eff_default(); /* the planner starts conservative and calibrates */
    L->model.slow = L->slow;      /* per-rank speed: measured every step (stage timings per rank) */
    L->w = sc->w;
    L->family = sp->policy == SIM_VERL || sp->policy == SIM_OPENRLHF;
    L->fixed = L->family || sp->policy == SIM_STATIC;
    L->o = observed_start(sc, L->ranks, L->slow);
    double tp0 = nr_now();
    int rc = 0;
    /* the starting plan: the fixed baselines' (fixed_plan), or the best plan for the initial conditions, on the
       true cluster */
    PlanConfig *start = nr_xmalloc(7 * sizeof *start);
    L->kept_at = start + 1, L->prev = start + 2, L->guard_old = start + 3, L->oracle_fixed = start + 4;
    L->oracle_wide = start + 5, L->pend_from = start + 6;
    L->pend_d = nr_xcalloc(1, sizeof *L->pend_d);
    L->oracle_pool = L->oracle_wide_events = -1;
    L->oracle_wide_len = 1;
    StepCost sc0;
    char what[384] = "";
    L->cw = cost_work_new();
    if (L->fixed ? fixed_plan(L->cw, sc, &L->truth, fixed_policy(sp), &L->o, 0, start, what, sizeof what) != 0
                 : adaptive_start(sc, &L->truth, &L->o, start, &sc0, what, sizeof what) != 0) {
        res->failed = 1;
        rc = nr_fail(why, len, "%s: no plan fits the %d-rank pool at step 0: %s", sp->name, L->o.npool, what);
    } else {
        L->run = (SimRun){sc, nr_xcalloc(1, sizeof(PlanKept)), {{0}, 0, 0}, getenv("NEREUS_SIM_DEBUG") != NULL};
        AdaptConfig ac = {sp->policy == SIM_ORACLE ? SIM_STATIC : sp->policy, sp->gamma, sc->threshold, sc->every_k,
                          sc->steps, sc->gpus, tx_cost, &L->run, sc->no_prebuild ? NULL : tx_setup};
        adapt_init(&L->ad, &ac, start, &L->o);
        L->ad.v.no_keep = sp->no_keep, L->ad.v.pool_free = sp->pool_free;
        if (sp->wide) L->ad.v.wide = sp->wide > 0;
        *L->kept_at = L->ad.cur;
        L->ref_pool = L->o.npool; /* the fixed baselines': the pool they last chose for */
        if (sc->fail.rate > 0 && !sc->fail.single) draw_failure(L);
        for (int step = 0; step < sc->steps && rc == 0; step++) rc = sim_one_step(L, step, why, len);
        res->failed = rc != 0;
        free(L->run.kept);
    }
    free(start);
    free(L->pend_d);
    cost_work_free(L->cw);
    free(L);
    res->planner_s = nr_now() - tp0;
    res->total_s += res->transition_s + res->fail_lost_s;
    res->mean_step_s = res->total_s / sc->steps;
    return rc;
}

int sim_run(const SimScenario *sc, int policy, SimResult *res, char *why, size_t len) {
    SimPolicy sp = {"", policy, sc->gamma, 0, 0, 0, 0, 0};
    snprintf(sp.name, sizeof sp.name, "%s", sim_policy_name(policy));
    return sim_run_as(sc, &sp, res, why, len);
}

int sim_async(const SimScenario *sc, SimAsync *r, char *why, size_t len) {
    SimPolicy sp[3] = {{"async", SIM_STATIC, sc->gamma, 0, 0, 0, 0, 0}, {"sync", SIM_STATIC, sc->gamma, 0, 0, 0, 1, 0},
                       {"split-50/50", SIM_STATIC, sc->gamma, 0, 0, 0, 0, 1}};
    SimResult *out[3] = {&r->planner, &r->sync, &r->half};
    if (sc->truth.max_staleness < 1)
        return nr_fail(why, len, "the planner may not run asynchronous plans here ([planner] max_staleness, or the "
                       "deck's [ppo] max_staleness, is 0)");
    for (int i = 0; i < 3; i++)
        if (sim_run_as(sc, &sp[i], out[i], why, len) != 0) return -1;
    return 0;
}

double sim_move_price(const SimScenario *sc, const PlanConfig *a, const PlanConfig *b) {
    return sim_move_parts(sc, a, b, NULL);
}

double sim_move_parts(const SimScenario *sc, const PlanConfig *a, const PlanConfig *b, double *setup_s) {
    SimRun run = {sc, nr_xcalloc(1, sizeof(PlanKept)), {{0}, 0, 0}, 0};
    double C = transition_parts(&run, a, b, setup_s);
    free(run.kept);
    return C;
}

double sim_ckpt_restart_s(const SimScenario *sc, int ranks, double *bytes) {
    double wb = sc->truth.actor.wbytes > 0 ? sc->truth.actor.wbytes : 2;
    double B = 14 * (shape_params(&sc->truth.actor) + shape_params(&sc->truth.critic)) + wb * shape_params(&sc->truth.actor);
    if (bytes) *bytes = B;
    return 2 * B / SIM_CKPT_FS_BPS + SIM_RESTART_S + PLAN_NSTAGES * tx_comm_setup_s(ranks);
}
