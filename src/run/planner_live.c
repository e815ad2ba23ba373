/* planner_live.c — the planner live on MPI (planner_live.h): the machine
 * model, the per-step measurements and calibration, and the decisions
 * between steps. The controller itself is adapt.c's, shared with the
 * simulator and the replay. */
#include "nereus/planner_live.h"

#include "live_int.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nereus/comm.h"
#include "nereus/counters.h"
#include "nereus/emu.h"
#include "nereus/plan.h"
#include "nereus/util.h"

#define SLOW_DETECT 2.0 /* a rank counts as slow at this many times its peers' (or its own past) CPU seconds
                           (the fallback against the median rank errs by ~1.6x across stage kinds) */
_Static_assert(TRACE_EFF_N == EFF_N, "trace.h TRACE_EFF_N must match planner.h EFF_N");


/* bytes/s of a 64 MiB copy on this rank, best of 3 (read + write counted) */
static double copy_rate(void) {
    size_t n = (size_t)64 << 20;
    char *a = nr_xmalloc(n), *b = nr_xmalloc(n);
    memset(a, 1, n);
    memset(b, 2, n);
    double best = INFINITY;
    for (int r = 0; r < 3; r++) {
        double t0 = nr_now();
        memcpy(b, a, n);
        double dt = nr_now() - t0;
        if (dt < best) best = dt;
    }
    volatile char keep = b[n / 2];
    (void)keep;
    free(a);
    free(b);
    return 2.0 * (double)n / best;
}

void live_init(LivePlanner *lp, Job *j) {
    memset(lp, 0, sizeof *lp);
    const Config *cfg = j->cfg;
    lp->on = strcmp(cfg->planner.policy, "off") != 0;
    lp->first_step = -1;
    lp->pool = nr_xmalloc((size_t)j->size * sizeof *lp->pool);
    lp->npool = j->size;
    for (int r = 0; r < j->size; r++) lp->pool[r] = r;
    if (!lp->on) return;
    lp->policy = adapt_policy_named(cfg->planner.policy);
    lp->slow = nr_xmalloc((size_t)j->size * sizeof *lp->slow);
    for (int r = 0; r < j->size; r++) lp->slow[r] = 1;
    lp->self_rate = nr_xcalloc((size_t)j->size * LIVE_SELF_KEEP, sizeof *lp->self_rate);
    lp->self_n = nr_xcalloc((size_t)j->size, sizeof *lp->self_n);
    lp->self_sig = nr_xcalloc((size_t)j->size, sizeof *lp->self_sig);
    lp->pending = nr_xcalloc((size_t)j->size, sizeof *lp->pending);
    lp->pred_s = NAN;

    /* the machine: GEMM rate per rank alone, a copy's bandwidth, cores and memory of the node */
    CounterPeak peak;
    counters_calibrate(j->world, j->be, &peak);
    double *solo = nr_xmalloc((size_t)j->size * sizeof *solo);
    memcpy(solo, peak.solo, (size_t)j->size * sizeof *solo);
    double gflops = nr_median(solo, j->size);
    free(solo);
    counters_peak_free(&peak);
    double hbm = 0;
    if (j->rank == 0) hbm = copy_rate(); /* the others wait in a sleeping barrier */
    comm_barrier(j->world);
    int rpn = comm_node_size(j->world);
    int sweep = strcmp(cfg->planner.policy, "sweep") == 0;
    if (!sweep) { /* the idle probe's reference: every rank at once, as idle ranks probe beside working ones */
        lp->probe_base = nr_xcalloc((size_t)j->size, sizeof *lp->probe_base);
        double p = counters_probe(j->be);
        lp->probe_base[j->rank] = fmin(p, counters_probe(j->be));
        comm_allreduce_sum_f64(j->world, lp->probe_base, (size_t)j->size);
    }
    job_probe_links(j); /* the transitions' prices: measured links, unless the deck sets them */
    if (j->rank != 0) {
        if (sweep) lp->sweep = sweep_new(lp, j);
        return;
    }

    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    double phys = nr_node_memory(NULL); /* or the job's cgroup limit (Slurm's --mem) where lower */
    CostModel *cm = &lp->cm;
    HwModel *hw = &cm->hw;
    snprintf(hw->name, sizeof hw->name, "this machine (measured)");
    hw->flops = gflops * 1e9;
    hw->hbm = hbm;
    hw->ranks_per_node = rpn;
    hw->cores = cores > 0 && rpn > cores ? (int)cores : 0;
    hw->mem = cfg->planner.memory_gib > 0 ? cfg->planner.memory_gib * 1073741824.0 : phys / rpn;
    /* the cost model's links: nominal (their efficiency classes calibrate what the stages measure) */
    hw->bw[0] = hw->bw[1] = cfg->transition.bandwidth_gbs > 0 ? cfg->transition.bandwidth_gbs * 1e9 : TX_NOMINAL_BW;
    hw->lat[0] = hw->lat[1] = cfg->transition.latency_us * 1e-6;
    hw->op_s = 1e-6; /* an operation's fixed cost, nominal: EFF_OPS calibrates it */
    cm->eff = eff_default();
    cm->actor = shape_of_config(&j->ac, "actor");
    cm->critic = shape_of_config(&j->cc, "critic");
    cm->gen_wbytes = tx_stage_bf16(cfg, PLAN_ACTOR_GEN) ? 2 : 0; /* counted as the memory plan counts them */
    cm->score_wbytes = tx_stage_bf16(cfg, PLAN_ACTOR_INF) ? 2 : 0;
    cm->have_rm = j->have_rm;
    cm->no_critic = ppo_is_grpo(cfg);
    cm->headroom = 0.1;
    cm->slow = lp->slow;
    /* asynchronous rollouts: the planner chooses K with the plan within [planner] max_staleness, or prices every
       plan at the deck's fixed K (−1) */
    cost_set_staleness(cm, cfg->planner.max_staleness, cfg->ppo.max_staleness);
    lp->w = (Workload){cfg->ppo.batch, cfg->ppo.minibatch, cfg->ppo.epochs, j->P, 0.5 * cfg->ppo.max_response,
                       cfg->ppo.max_response, 0};
    snprintf(lp->hw_text, sizeof lp->hw_text,
             "GEMM %.1f GFLOP/s per rank alone, copy %.1f GB/s, %d rank(s) per node on %ld core(s)%s, %.1f GiB per rank",
             gflops, hbm * 1e-9, rpn, cores, hw->cores ? " (shared: compute by processor sharing, messages by busy ranks per core)" : "",
             hw->mem / 1073741824.0);
    nr_log("planner: policy %s, gamma %.3g, threshold %.3g, warmup %d step(s); machine model: %s\n",
           cfg->planner.policy, cfg->planner.gamma, cfg->planner.threshold, cfg->planner.warmup, lp->hw_text);
    if (sweep) lp->sweep = sweep_new(lp, j);
}

int live_check_fits(LivePlanner *lp, Job *j, char *why, size_t len) {
    if (!lp->on) return 0;
    int64_t bad = 0;
    if (j->rank == 0) {
        Workload w = lp->w;
        w.resp_len = w.resp_max; /* the most the models must hold */
        PlanConfig p;
        StepCost c;
        SearchStats st;
        bad = plan_search_on(&lp->cm, j->size, NULL, j->size, &w, &p, &c, &st, why, len) != 0;
        if (!bad) bad = sweep_unfit(lp->sweep, why, len) != 0;
    }
    comm_bcast(j->world, &bad, sizeof bad, 0);
    if (bad) comm_bcast(j->world, why, len, 0);
    return bad ? -1 : 0;
}

void live_free(LivePlanner *lp) {
    sweep_free(lp->sweep);
    free(lp->slow);
    free(lp->probe_base);
    counters_probe_free();
    free(lp->self_rate);
    free(lp->self_n);
    free(lp->self_sig);
    free(lp->pending);
    free(lp->pool);
    memset(lp, 0, sizeof *lp);
}

/* ---- measurements ------------------------------------------------------------- */

void live_measured(const Job *j, const double *m, double *meas, double *phase) {
    int K = PLAN_NSTAGES, n = j->size;
    double *rt = nr_xcalloc((size_t)n * 3, sizeof *rt);
    for (int s = 0; s < K; s++) {
        const PlanStage *ps = &j->plan.stage[s];
        meas[s] = 0;
        if (!job_stage_holds_model(j, s)) continue;
        for (int i = 0; i < ps->nranks; i++) {
            double t = m[(size_t)ps->ranks[i] * 2 * K + s];
            meas[s] = fmax(meas[s], t);
            rt[(size_t)ps->ranks[i] * 3 + plan_stage_phase(s)] += t;
        }
    }
    for (int ph = 0; ph < 3; ph++) phase[ph] = 0;
    for (int r = 0; r < n; r++)
        for (int ph = 0; ph < 3; ph++) phase[ph] = fmax(phase[ph], rt[(size_t)r * 3 + ph]);
    free(rt);
}

/* rank 0: each rank's slowdown from the ranks' timers m (ranks × 2 × PLAN_NSTAGES: wall, then CPU), by the
   first of three that applies:
   - peers: in the model-stages it shares with others, its CPU seconds over the members' median (over the
     lesser of two);
   - its own past: its CPU seconds per nominal predicted compute second (the machine model before calibration,
     so that refits do not move it) over the median of its last healthy steps on the same holdings;
   - the other ranks: its CPU seconds per calibrated predicted second over the median rank's. The model's error
     differs between stage kinds and ranks, so with few ranks the median is a poor reference: a rank slowed
     4x can read well under 4x against it.
   A reading above SLOW_DETECT counts once the rank's next measured step reads above it too (the lesser of the
   two is kept): one step's CPU seconds on a shared VM can read 3.4x its peers'. A reading below it counts at
   once. A rank without work is read from its idle probe (probe[r], CPU seconds; 0: none) over its probe at
   the start, so that a rank emptied for being slow is seen to recover (its last estimate alone would stand
   for the rest of the run).
   NEREUS_PLANNER_DEBUG in the environment prints the estimates. */
static void estimate_slowdown(LivePlanner *lp, const Job *j, const double *m, const double *probe, int step) {
    int n = j->size, K = PLAN_NSTAGES;
    const PlanConfig *plan = &j->plan;
    const CostModel *cm = &lp->cm;
    CostModel nominal = *cm;
    nominal.eff = eff_default();
    double *peer = nr_xcalloc((size_t)n, sizeof *peer), *ratio = nr_xcalloc((size_t)n, sizeof *ratio);
    double *own = nr_xcalloc((size_t)n, sizeof *own), *sorted = nr_xcalloc((size_t)n, sizeof *sorted);
    double *cpu_s = nr_xcalloc((size_t)n, sizeof *cpu_s), *idle = nr_xcalloc((size_t)n, sizeof *idle);
    for (int r = 0; r < n && lp->probe_base; r++) /* the idle probe's reading (0: none) */
        idle[r] = probe[r] > 0 && lp->probe_base[r] > 0 ? probe[r] / lp->probe_base[r] : 0;
    uint64_t *sig = nr_xcalloc((size_t)n, sizeof *sig);
    int *npeer = nr_xcalloc((size_t)n, sizeof *npeer), nr = 0;
    for (int s = 0; s < K; s++) {
        const PlanStage *ps = &plan->stage[s];
        if (ps->nranks < 2 || !job_stage_holds_model(j, s)) continue;
        for (int i = 0; i < ps->nranks; i++) cpu_s[i] = m[(size_t)ps->ranks[i] * 2 * K + K + s];
        double ref;
        if (ps->nranks == 2) ref = fmin(cpu_s[0], cpu_s[1]);
        else {
            memcpy(sorted, cpu_s, (size_t)ps->nranks * sizeof *sorted);
            ref = nr_median(sorted, ps->nranks);
        }
        if (!(ref > 1e-4)) continue; /* too short to tell */
        for (int i = 0; i < ps->nranks; i++) {
            peer[ps->ranks[i]] += cpu_s[i] / ref;
            npeer[ps->ranks[i]]++;
        }
    }
    for (int r = 0; r < n; r++) {
        double cpu = 0, pred = 0, pred0 = 0;
        uint64_t h = 1469598103934665603ull; /* FNV-1a over (stage, layout, grid position) of each holding */
        for (int s = 0; s < K; s++) {
            const PlanStage *ps = &plan->stage[s];
            int pos = plan_stage_pos(ps, r);
            if (pos < 0 || !job_stage_holds_model(j, s)) continue;
            GridLayout l = {ps->tp, ps->pp, ps->dp};
            double p = cost_stage_compute(cm, s, l, &lp->w), p0 = cost_stage_compute(&nominal, s, l, &lp->w);
            if (!isfinite(p) || !isfinite(p0)) continue;
            cpu += m[(size_t)r * 2 * K + K + s];
            pred += p;
            pred0 += p0;
            int key[5] = {s, ps->tp, ps->pp, ps->dp, pos};
            for (int k = 0; k < 5; k++) h = (h ^ (uint64_t)(unsigned)key[k]) * 1099511628211ull;
        }
        sig[r] = h;
        if (pred > 0 && cpu > 0) {
            ratio[r] = cpu / pred;
            own[r] = pred0 > 0 ? cpu / pred0 : 0;
            sorted[nr++] = ratio[r];
        }
    }
    double med = nr > 0 ? nr_median(sorted, nr) : 0;
    double *hist = lp->self_rate;
    for (int r = 0; r < n; r++) {
        int nh = lp->self_n[r] < LIVE_SELF_KEEP ? lp->self_n[r] : LIVE_SELF_KEEP;
        double past = 0;
        if (nh > 0 && lp->self_sig[r] == sig[r]) {
            memcpy(sorted, hist + (size_t)r * LIVE_SELF_KEEP, (size_t)nh * sizeof *sorted);
            past = nr_median(sorted, nh);
        }
        double x = npeer[r] > 0 ? peer[r] / npeer[r]
                 : own[r] > 0 && past > 0 ? own[r] / past
                 : ratio[r] > 0 && med > 0 ? ratio[r] / med
                 : idle[r];
        if (!(x > 0)) { /* nothing measured (no work, no probe): the last estimate is kept */
            lp->pending[r] = 0;
            continue;
        }
        if (x > SLOW_DETECT) {
            if (lp->pending[r] > 0) lp->slow[r] = fmin(x, lp->pending[r]); /* the second reading in a row */
            lp->pending[r] = x;
        } else {
            lp->slow[r] = 1;
            lp->pending[r] = 0;
            if (own[r] > 0) { /* a healthy step: the rank's own reference */
                if (lp->self_sig[r] != sig[r]) lp->self_n[r] = 0, lp->self_sig[r] = sig[r];
                hist[(size_t)r * LIVE_SELF_KEEP + lp->self_n[r]++ % LIVE_SELF_KEEP] = own[r];
            }
        }
    }
    if (getenv("NEREUS_PLANNER_DEBUG")) {
        fprintf(stderr, "planner debug: step %d slow:", step);
        for (int r = 0; r < n; r++)
            fprintf(stderr, " %d:%.2f(peer %.2f/%d own %.2f model %.2f probe %.2f pending %.2f)", r, lp->slow[r],
                    npeer[r] ? peer[r] / npeer[r] : 0, npeer[r], own[r], med > 0 ? ratio[r] / med : 0, idle[r],
                    lp->pending[r]);
        fprintf(stderr, "\n");
    }
    free(peer);
    free(npeer);
    free(cpu_s);
    free(idle);
    free(ratio);
    free(own);
    free(sig);
    free(sorted);
}

/* local: 1 when this rank is in the pool and the plan in force gives it no model-stage holding a model: it
   probes its speed (counters_probe) instead, except under policy = sweep (no probe_base) */
static int live_rank_idle(const LivePlanner *lp, const Job *j) {
    if (!lp->probe_base) return 0;
    int in = 0;
    for (int i = 0; i < lp->npool && !in; i++) in = lp->pool[i] == j->rank;
    for (int s = 0; s < PLAN_NSTAGES && in; s++)
        if (job_stage_holds_model(j, s) && plan_stage_pos(&j->plan.stage[s], j->rank) >= 0) return 0;
    return in;
}

void live_observe(LivePlanner *lp, Job *j, int step, const StepStats *st, double wall_s) {
    if (!lp->on) return;
    int n = j->size, K = PLAN_NSTAGES;
    /* every rank's wall and CPU seconds per model-stage, then every rank's idle probe (0: none), to every rank
       (rank 0 uses them) */
    double *m = nr_xcalloc((size_t)n * (2 * K + 1), sizeof *m), *probe = m + (size_t)n * 2 * K;
    counters_rank_last(m + (size_t)j->rank * 2 * K, m + (size_t)j->rank * 2 * K + K);
    if (live_rank_idle(lp, j)) probe[j->rank] = counters_probe(j->be);
    comm_allreduce_sum_f64(j->world, m, (size_t)n * (2 * K + 1));
    if (j->rank != 0) {
        free(m);
        return;
    }
    lp->w.resp_len = st->resp_len > 0 ? st->resp_len : lp->w.resp_len;
    /* the longest response, by the same estimator as the mean: the last step's measured one (the decode steps
       generation ran, and the positions scoring and training run over: rollout_finish makes T the prompt plus
       the batch's longest response) */
    if (st->resp_len > 0 && rollout_longest(&j->G) > 0) lp->w.resp_longest = rollout_longest(&j->G);
    if (lp->sweep) {
        sweep_observe(lp, j, step, m, wall_s, st->resp_len);
        free(m);
        return;
    }
    const PlanConfig *plan = &j->plan;
    CostModel *cm = &lp->cm;
    lp->last_len = st->resp_len;
    int warm = step - lp->first_step >= j->cfg->planner.warmup, fresh = !lp->skip_calib && step > lp->first_step;
    /* the prediction made before the step against what it took */
    if (warm && fresh && isfinite(lp->pred_s) && wall_s > 0) {
        double e = fabs(lp->pred_s - wall_s) / wall_s;
        lp->err_sum += e;
        lp->err_n++;
        if (e > lp->err_max) lp->err_max = e;
    }
    if (fresh && wall_s > 0) { /* the guard's measurements: the plan in force, and the one on probation */
        if (isfinite(lp->pred_s) && lp->pred_s > 0) lp->recent[lp->nrecent++ % 4] = wall_s / lp->pred_s;
        if (lp->guard_on && lp->guard_n < 16) lp->guard_new[lp->guard_n++] = wall_s;
    }
    if (fresh) estimate_slowdown(lp, j, m, probe, step);
    /* calibration: each stage's slowest member against the model, its phase's core sharing and slowdown out */
    if (fresh) {
        double meas[PLAN_NSTAGES], phase[3];
        live_measured(j, m, meas, phase);
        for (int s = 0; s < K; s++)
            if (meas[s] > 0) cal_add(&lp->cal, cm, plan, n, &lp->w, s, meas[s]);
        for (int ph = 0; ph < 3; ph++) cal_add_phase(&lp->cal, cm, plan, n, &lp->w, ph, phase[ph]);
        lp->fit_rms = cal_fit(&lp->cal, cm);
        /* the rest of the step (rollout assembly, advantages, the sync's model error): a running mean */
        StepCost sc;
        double save = cm->overhead_s;
        cm->overhead_s = 0;
        cost_plan(cm, plan, n, &lp->w, &sc);
        /* with generation overlapping the rest, the phases combine as the model combines them */
        double rest = sc.overlap ? wall_s - cost_step_of_phases(&sc, phase)
                                 : wall_s - phase[0] - phase[1] - phase[2] - sc.phase[3];
        if (rest < 0) rest = 0;
        double a = j->cfg->planner.alpha;
        cm->overhead_s = step <= lp->first_step + 1 ? rest : (1 - a) * save + a * rest;
    }
    lp->skip_calib = 0;
    free(m);
}

/* ---- decisions ------------------------------------------------------------------ */

static void log_decision(const LivePlanner *lp, const AdaptDecision *d, const char *what, double ref_len, double ref_eff) {
    char drift[160] = "";
    size_t k = 0;
    if (d->mask & DRIFT_POOL) k += (size_t)snprintf(drift + k, sizeof drift - k, "pool %d rank(s); ", lp->npool);
    if (d->mask & DRIFT_OOM) k += (size_t)snprintf(drift + k, sizeof drift - k, "predicted out-of-memory; ");
    if (d->mask & DRIFT_LENGTH)
        k += (size_t)snprintf(drift + k, sizeof drift - k, "length %.2f (ref %.2f); ", d->len, ref_len);
    if (d->mask & DRIFT_EFFICIENCY)
        k += (size_t)snprintf(drift + k, sizeof drift - k, "rank %d at %.2f of its speed (ref %.2f; slowest pool rank "
                              "at %.2f, ref %.2f); ", d->eff_rank, d->eff_rank_now, d->eff_rank_ref, d->eff, ref_eff);
    if (d->rent)
        k += (size_t)snprintf(drift + k, sizeof drift - k, "the gains refused since the last move add up to %.4g s, "
                              "the refused move's price; ", d->foregone);
    if (k >= 2) drift[k - 2] = 0;
    char k_new[64] = ""; /* the candidate's K where the planner chooses one */
    if (lp->cm.max_staleness > 0 && d->changed)
        snprintf(k_new, sizeof k_new, " (K = %d)", d->next_cost.staleness);
    nr_log("planner: before step %d: %s%s%s: predicted %.4f s/step now, %.4f s/step with the candidate%s, transition "
           "%.4f s, H %.3g steps: %s\n",
           d->step, what, drift[0] ? " — " : "", drift, d->L_now, d->L_new, k_new, d->C, d->H, d->reason);
}

/* the drift events (magnitude: the relative change against the reference; the threshold it crossed, NaN for
   the urgent kinds) and the decision */
static void trace_decided(Trace *tr, const AdaptDecision *d, double gamma, int plan_id, double threshold,
                          double ref_len, int ref_pool, int npool) {
    if (d->mask & DRIFT_POOL) trace_drift(tr, d->step, "pool", ref_pool > 0 ? (double)npool / ref_pool - 1 : NAN, NAN);
    if (d->mask & DRIFT_OOM) trace_drift(tr, d->step, "oom", NAN, NAN);
    if (d->mask & DRIFT_LENGTH) trace_drift(tr, d->step, "length", ref_len > 0 ? d->len / ref_len - 1 : NAN, threshold);
    if (d->mask & DRIFT_EFFICIENCY)
        trace_drift(tr, d->step, "efficiency", d->eff_rank_ref > 0 ? d->eff_rank_now / d->eff_rank_ref - 1 : NAN,
                    threshold);
    TraceDecision td = {d->step, plan_id, d->changed ? plan_id + 1 : -1, d->L_now, d->L_new, d->L_now - d->L_new,
                        d->C, d->H, gamma, d->urgent, d->admitted, d->foregone, d->reason,
                        d->next_cost.staleness};
    trace_decision(tr, &td);
}

/* rank 0: the /signals row of this step (what the replay re-runs the controller on) */
static void trace_seen(const LivePlanner *lp, Trace *tr, int step, int plan_id, int initial, const Observed *o,
                       double pred, int n) {
    if (!tr) return;
    int16_t *pr = nr_xmalloc((size_t)o->npool * sizeof *pr);
    for (int i = 0; i < o->npool; i++) pr[i] = (int16_t)o->pool[i];
    char pool[4096] = "", slow[4096] = "";
    plan_ranks_format(pr, o->npool, pool, sizeof pool);
    free(pr);
    size_t k = 0;
    for (int r = 0; r < n && k < sizeof slow; r++)
        if (lp->slow[r] != 1)
            k += (size_t)snprintf(slow + k, sizeof slow - k, "%s%d:%.17g", k ? "," : "", r, lp->slow[r]);
    TraceSignals g = {step, plan_id, initial, o->npool, o->oom, o->resp_len, lp->w.resp_longest,
                      adapt_eff_signal(o), pred, lp->cm.overhead_s, lp->cm.hw.rho_exp, {0}, {0}, pool, slow};
    memcpy(g.phase_scale, lp->cm.phase_scale, sizeof g.phase_scale);
    memcpy(g.eff, lp->cm.eff.f, sizeof g.eff);
    trace_signals(tr, &g);
}

void live_trace_start(const LivePlanner *lp, const Job *j, Trace *tr) {
    if (!lp->on || lp->sweep || j->rank != 0) return;
    const Config *cfg = j->cfg;
    const HwModel *hw = &lp->cm.hw;
    TracePlanner p = {cfg->planner.policy, hw->name, cfg->planner.gamma, cfg->planner.threshold, lp->cm.headroom,
                      hw->flops, hw->mem, hw->hbm, hw->bw[0], hw->lat[0], hw->op_s, cfg->planner.every_k,
                      cfg->planner.warmup, cfg->ppo.steps, j->size, hw->ranks_per_node, hw->cores,
                      j->px.link_rate, j->px.copy_rate};
    trace_planner(tr, &p);
}

/* collective: the job moves to next (every rank has it); 0 moved, 1 refused (the run goes on), −1 a check failed */
static int move_to(LivePlanner *lp, Job *j, const PlanConfig *next, int step, double L_new, double mem, Trace *tr,
                   int *plan_id, char *plan_text, size_t plan_len, double *tx_bytes, char *why, size_t len) {
    double t0 = nr_now();
    JobTxReport rep;
    char reason[512] = "";
    int rc = job_transition(j, next, 0, &rep, reason, sizeof reason);
    if (rc < 0) return nr_fail(why, len, "before step %d: the planner's transition failed: %s", step, reason);
    if (rc == 1) {
        nr_log("planner: before step %d: the transition was refused: %s; continuing on the current plan\n", step, reason);
        char r[700];
        snprintf(r, sizeof r, "admitted, but the transition engine refused it: %s", reason);
        trace_refused(tr, step, *plan_id, r);
        snprintf(why, len, "%s", reason);
        return 1;
    }
    plan_format(&j->plan, plan_text, plan_len);
    nr_log("planner: before step %d: plan %d -> %d:\n%s", step, *plan_id, *plan_id + 1, plan_text);
    char source[64];
    snprintf(source, sizeof source, "planner %s", j->cfg->planner.policy);
    trace_plan(tr, *plan_id + 1, step, plan_text, source, L_new, mem);
    job_tx_log(&rep, step, t0, *plan_id, *plan_id + 1, tr);
    nr_log("planner: transitions now priced at %.3g x the engine's estimate (the median measured / predicted of "
           "the last %d)\n", tx_calib_scale(&j->px.calib), j->px.calib.n);
    (*plan_id)++;
    *tx_bytes += rep.bytes_moved;
    lp->transitions++;
    lp->transition_s += rep.measured_s;
    lp->skip_calib = 1;
    return 0;
}

/* collective: the sweep's move before `step` */
static int sweep_move(LivePlanner *lp, Job *j, int step, Trace *tr, int *plan_id, char *plan_text, size_t plan_len,
                      double *tx_bytes, char *why, size_t len) {
    PlanConfig next;
    int64_t act = j->rank == 0 ? sweep_decide(lp, j, step, &next) : 0;
    comm_bcast(j->world, &act, sizeof act, 0);
    if (!act) return 0;
    comm_bcast(j->world, &next, sizeof next, 0);
    int rc = move_to(lp, j, &next, step, NAN, NAN, tr, plan_id, plan_text, plan_len, tx_bytes, why, len);
    if (rc == 1 && j->rank == 0) sweep_refused(lp, step);
    return rc < 0 ? -1 : 0;
}

/* collective over world: the pool before PPO step `step` (every rank says whether it is in); returns
   whether it changed */
static int update_pool(LivePlanner *lp, Job *j, const Injector *inj, int step) {
    int n = j->size;
    int64_t *in = nr_xcalloc((size_t)n, sizeof *in);
    in[j->rank] = inject_in_pool(inj, j->rank, step);
    comm_allreduce_sum_i64(j->world, in, (size_t)n);
    int np = 0;
    for (int r = 0; r < n; r++)
        if (in[r]) lp->pool[np++] = r;
    int pool_changed = np != lp->npool;
    lp->npool = np;
    free(in);
    return pool_changed;
}

/* rank 0: the move on probation is judged once its guard_steps are measured. Returns 1 with *d the move back
   to the old plan (the decision of this step), or 0 (kept, logged; or nothing to judge yet). */
static int guard_judge(LivePlanner *lp, const Job *j, int step, AdaptDecision *d) {
    const Config *cfg = j->cfg;
    int n = j->size;
    if (!lp->guard_on || lp->guard_n < cfg->planner.guard_steps) return 0;
    lp->guard_on = 0;
    StepCost gc;
    double prev_now = cost_plan(&lp->cm, &lp->guard_prev, n, &lp->w, &gc), expect;
    double m_new = nr_median(lp->guard_new, lp->guard_n);
    int rev = adapt_guard(&lp->guard, m_new, prev_now, cfg->planner.guard_margin, &expect, d->reason,
                          sizeof d->reason);
    if (rev && !adapt_plan_within(&lp->guard_prev, lp->pool, lp->npool, n)) {
        rev = 0;
        snprintf(d->reason + strlen(d->reason), sizeof d->reason - strlen(d->reason), "; not reverted: the old "
                 "plan holds ranks out of the pool");
    }
    if (!rev) {
        nr_log("planner: before step %d: measure-and-revert guard: %s\n", step, d->reason);
        lp->kept++;
        memset(d, 0, sizeof *d);
        return 0;
    }
    d->step = step;
    d->next = lp->guard_prev;
    d->L_now = m_new;
    d->L_new = expect;
    d->C = d->H = NAN;
    d->admitted = d->changed = 1;
    lp->reverts++; /* logged and traced by the caller, as every decision */
    return 1;
}

/* rank 0, after a move to a new plan (left: the plan before it): any move ends a probation; an adaptive move
   the rule chose (not urgent, not the initial placement, not a move back) starts one, measured against the
   old plan's last fresh steps */
static void guard_after_move(LivePlanner *lp, const Config *cfg, const PlanConfig *left, int chosen) {
    int adaptive = lp->policy == ADAPT_PAYBACK || lp->policy == ADAPT_ADMIT_ALL || lp->policy == ADAPT_EVERY_K ||
                   lp->policy == ADAPT_EVERY_GAIN;
    int nr = lp->nrecent < 4 ? lp->nrecent : 4;
    lp->guard_on = adaptive && chosen && cfg->planner.guard_margin > 0 && nr >= 2;
    if (lp->guard_on) {
        double v[4];
        memcpy(v, lp->recent, sizeof v);
        lp->guard_n = 0;
        lp->guard_prev = *left;
        lp->guard = (AdaptGuard){nr_median(v, nr)};
    }
    lp->nrecent = 0;
}

/* collective: the K the planner chose for the plan in force (rank 0's K: the smallest of its lowest price,
   planner.h cost_plan_overlap) becomes the job's from this step on, on every rank. Logged when it changes; the
   trace's /steps max_staleness carries it, /decisions staleness the candidate's */
static void apply_staleness(Job *j, int step, int64_t K) {
    comm_bcast(j->world, &K, sizeof K, 0);
    if (K == j->staleness) return;
    if (j->rank == 0)
        nr_log("planner: before step %d: K = %d (was %d): %s\n", step, (int)K, j->staleness,
               K > 0 ? "actor.gen has ranks of its own and overlapping generation with scoring and training is "
                       "predicted faster"
                     : "the plan in force has no overlap to gain (actor.gen shares ranks, or overlap is not faster)");
    j->staleness = (int)K;
}

/* collective: the plan in force priced on rank 0 (its prediction into *pred there, where pred is not NULL), and
   its K made the job's where the planner chooses K ([planner] max_staleness ≥ 0) */
static void price_in_force(LivePlanner *lp, Job *j, int step, int n, double *pred) {
    StepCost sc = {.staleness = j->staleness};
    if (j->rank == 0) {
        double p = cost_plan(&lp->cm, &j->plan, n, &lp->w, &sc);
        if (pred) *pred = p;
    }
    if (j->cfg->planner.max_staleness >= 0) apply_staleness(j, step, sc.staleness);
}

int live_decide(LivePlanner *lp, Job *j, const Injector *inj, int step, Trace *tr, int *plan_id, char *plan_text,
                size_t plan_len, double *tx_bytes, char *why, size_t len) {
    if (!lp->on) return 0;
    const Config *cfg = j->cfg;
    int n = j->size;
    if (lp->first_step < 0) lp->first_step = step;
    int pool_changed = update_pool(lp, j, inj, step);

    if (lp->sweep) { /* each sampled plan runs at the K the model prices it with, as the adaptive policies' do */
        int rc = sweep_move(lp, j, step, tr, plan_id, plan_text, plan_len, tx_bytes, why, len);
        if (rc == 0) price_in_force(lp, j, step, n, NULL);
        return rc;
    }
    if (lp->ahead) { /* the move decided at the last boundary: its communicators got ready while that step ran */
        lp->ahead = 0;
        if (adapt_plan_within(&lp->ahead_plan, lp->pool, lp->npool, n)) {
            PlanConfig left = j->plan;
            int rc = move_to(lp, j, &lp->ahead_plan, step, lp->ahead_L_new, lp->ahead_mem, tr, plan_id, plan_text,
                             plan_len, tx_bytes, why, len);
            if (rc < 0) return -1;
            lp->moves_ahead += rc == 0;
            if (rc == 1 && j->rank == 0) adapt_revert(&lp->ad, &j->plan);
            if (rc == 0 && j->rank == 0) guard_after_move(lp, cfg, &left, lp->ahead_chosen);
        } else {
            emu_cache_drop_prepared(&j->comms); /* collective: built for a move that does not come */
            if (j->rank == 0) {
                adapt_revert(&lp->ad, &j->plan);
                nr_log("planner: before step %d: the move decided before step %d does not come: ranks it needs left "
                       "the pool\n", step, step - 1);
            }
        }
    }
    /* rank 0 decides: 0 nothing, 1 a decision without a move, 2 move to `next`, 3 move to `next` before the next
       step, its communicators built now (d.ahead) */
    AdaptDecision d;
    memset(&d, 0, sizeof d);
    int64_t act = 0;
    int initial = 0, reverting = 0;
    double ref_len = lp->ad.dm.ref_len, ref_eff = lp->ad.dm.ref_eff; /* before the decision resets them */
    int ref_pool = lp->ad.dm.ref_pool;
    if (j->rank == 0) {
        CostModel *cm = &lp->cm;
        Observed o = {lp->last_len > 0 ? lp->last_len : lp->w.resp_len, lp->npool, lp->pool, lp->slow, 0};
        StepCost now;
        cost_plan(cm, &j->plan, n, &lp->w, &now);
        o.oom = !now.fits;
        AdaptConfig ac = {lp->policy, cfg->planner.gamma, cfg->planner.threshold, cfg->planner.every_k,
                          cfg->ppo.steps, n, tx_price, &j->px, job_prebuild_on() ? tx_price_setup : NULL};
        int due = step - lp->first_step >= cfg->planner.warmup; /* warmup steps measured in this run (a restart too) */
        trace_seen(lp, tr, step, *plan_id, !lp->started && (due || pool_changed), &o, now.total, n);
        if (lp->guard_on && pool_changed) lp->guard_on = 0; /* the pool moved on: the controller's urgent path decides */
        if (guard_judge(lp, j, step, &d)) act = 2, reverting = 1;
        if (reverting) {
            /* the move back is the decision of this step */
        } else if (!lp->started && (due || pool_changed)) { /* the best plan for the measured initial conditions */
            adapt_place(&lp->ad, &ac, &j->plan, step, cm, &lp->w, &o, pool_changed, &d);
            lp->w0 = lp->w;
            lp->started = initial = 1;
            act = 1 + d.changed;
        } else if (lp->started) {
            adapt_step(&lp->ad, step, cm, &lp->w, cm, lp->policy == ADAPT_STATIC ? &lp->w0 : &lp->w, &o, &d);
            if (d.searched) act = 1 + d.changed + (d.changed && d.ahead && step + 1 < cfg->ppo.steps);
        }
        if (act) {
            lp->decisions++;
            lp->searches += d.searched;
            if (d.failed) {
                nr_log("planner: before step %d: no plan fits the %d-rank pool: %s\n", step, lp->npool, d.why);
            } else {
                lp->admitted += d.admitted;
                lp->refused += !d.admitted;
                if (reverting) nr_log("planner: before step %d: measure-and-revert guard: %s\n", step, d.reason);
                else log_decision(lp, &d, initial ? "initial placement" : "replan", ref_len, ref_eff);
                trace_decided(tr, &d, cfg->planner.gamma, *plan_id, cfg->planner.threshold, ref_len, ref_pool,
                              lp->npool);
            }
        }
    }
    int64_t hdr[2] = {act, d.failed};
    comm_bcast(j->world, hdr, sizeof hdr, 0);
    /* a plan that uses ranks out of the pool cannot stay */
    int urgent_pool = !adapt_plan_within(&j->plan, lp->pool, lp->npool, n);
    if (hdr[0] == 3) { /* the plan in force runs this step (it can: not urgent); the move comes before the next */
        if (j->rank == 0) lp->ahead_plan = d.next;
        comm_bcast(j->world, &lp->ahead_plan, sizeof lp->ahead_plan, 0);
        double t0 = nr_now();
        int built = job_prepare_comms(j, &lp->ahead_plan);
        lp->ahead = 1;
        if (j->rank == 0) {
            lp->ahead_L_new = d.L_new;
            lp->ahead_mem = d.next_cost.peak_mem;
            lp->ahead_chosen = !d.urgent;
            nr_log("planner: before step %d: the move waits for step %d: its %d new communicator set(s) built now in "
                   "%.4f s, what their set-up has left running while the step does; it moves before step %d\n", step,
                   step, built, nr_now() - t0, step + 1);
        }
    } else if (hdr[0] == 2) {
        PlanConfig next = d.next;
        comm_bcast(j->world, &next, sizeof next, 0);
        PlanConfig left;
        if (j->rank == 0) left = j->plan; /* the guard's old plan, should this move go on probation */
        int rc = move_to(lp, j, &next, step, d.L_new, d.next_cost.peak_mem, tr, plan_id, plan_text, plan_len,
                         tx_bytes, why, len);
        if (rc < 0) return -1;
        if (rc == 1 && urgent_pool)
            return nr_fail(why, len, "before step %d: ranks left the pool and the move off them was refused", step);
        if (rc == 1 && j->rank == 0) adapt_revert(&lp->ad, &j->plan);
        if (rc == 0 && j->rank == 0) {
            if (reverting) adapt_revert(&lp->ad, &j->plan); /* the controller's plan is the old one again */
            guard_after_move(lp, cfg, &left, !reverting && !initial && !d.urgent);
        }
    } else if (urgent_pool) {
        return nr_fail(why, len, "before step %d: ranks left the pool and no plan without them %s", step,
                       hdr[1] ? "fits" : "was found");
    }
    price_in_force(lp, j, step, n, &lp->pred_s); /* the prediction for the plan the next step runs under, and its K */
    return 0;
}

void live_report(const LivePlanner *lp) {
    if (!lp->on) return;
    if (lp->sweep) {
        sweep_report(lp);
        return;
    }
    nr_log("planner: %d decision(s) (%d search(es)): %d admitted, %d refused; %d transition(s), %.3f s measured; "
           "%d of them a step after their decision, their communicators built meanwhile\n",
           lp->decisions, lp->searches, lp->admitted, lp->refused, lp->transitions, lp->transition_s, lp->moves_ahead);
    if (lp->reverts + lp->kept > 0)
        nr_log("planner: measure-and-revert guard: %d move(s) judged, %d kept, %d reverted\n", lp->reverts + lp->kept,
               lp->kept, lp->reverts);
    if (lp->err_n > 0)
        nr_log("planner: predicted vs measured step time over %d step(s): mean error %.1f%%, worst %.1f%%\n", lp->err_n,
               100.0 * lp->err_sum / lp->err_n, 100.0 * lp->err_max);
    const Efficiency *e = &lp->cm.eff;
    nr_log("planner: calibrated efficiencies: GEMM %.3g, attention %.3g, memory-bound %.3g, all-reduce %.3g, "
           "point-to-point %.3g; overhead %.4f s/step; fit over %d stage measurement(s): %.1f%% RMS\n",
           e->f[EFF_GEMM], e->f[EFF_ATTN], e->f[EFF_DECODE], e->f[EFF_AR_INTRA], e->f[EFF_P2P_INTRA], lp->cm.overhead_s,
           lp->cal.n, 100.0 * lp->fit_rms);
}
