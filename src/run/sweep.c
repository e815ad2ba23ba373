/* sweep.c — [planner] policy = sweep: the cost model validated on the
 * machine it runs on (planner_live.h). Rank 0 samples sweep_plans plans
 * uniformly from a small feasible space; the job runs each for
 * sweep_steps PPO steps (the first after the transition not measured).
 * The sweep_calibrate plans that run first (cal_design picks them from the
 * sample: a D-optimal design on the model's predictions, no measurement
 * used) calibrate: the model is fitted on their
 * model-stages alone (least squares, planner.h) and frozen; every later
 * plan is predicted before it runs (held out): that is the model's error.
 * Last, as the live planner keeps calibrating on what it runs, the model
 * is refitted on every sampled plan's stages, the search picks a plan with
 * it and the job runs it: its measured step against the best measured of
 * the sample is the plan-quality gap.
 *
 * The space, per model-stage: plan_stage_options (planner.h) — every
 * layout the cost model can price (tp dividing n_head, pp dividing n_layer,
 * 1 for generation, dp dividing the batch and, for training, the
 * minibatch), tp·pp·dp ≤ the job's ranks, on the block of tp·pp·dp
 * consecutive ranks starting at a multiple of its size; a plan is kept
 * when it fits memory. Each model-stage draws its option uniformly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live_int.h"
#include "nereus/plan.h"
#include "nereus/util.h"

typedef struct SweepPlan {
    PlanConfig plan;
    double *wall;            /* measured step seconds */
    int nwall;
    double len;              /* Σ mean response length of its measured steps */
    double phase[3];         /* Σ measured gen, inf, train phase (the largest per-rank sum of stage seconds) */
    double outside;          /* Σ measured seconds outside the phases (wall − phases) */
    double pred_phase[3];    /* held out: the predicted phases */
    double pred;             /* held out: predicted before it ran (NaN: calibration plan, or refused) */
    int refused;
} SweepPlan;

struct Sweep {
    int n, K, steps, start;  /* sampled plans, calibration plans, steps per plan, the first sweep step */
    int fsteps;              /* steps of each of the two last windows (PLANNER_SWEEP_FINAL x steps) */
    int nc;                  /* control windows ([planner] sweep_reference; planner_sweep_controls) */
    SweepPlan *p;            /* (n + 2 + nc): the sample, the search's choice, the best sampled plan run again, the
                                controls (plan 0 run again) */
    int nwin, *win;          /* the windows in run order: each an index into p */
    unsigned char *dumped;   /* (n + 2 + nc) rank 0: the plan's line is in the dump */
    Calibration cal;         /* the first K plans' stages */
    Calibration all;         /* every sampled plan's stages */
    CostModel fit;           /* the model fitted on the first K plans, frozen */
    CostModel fit_all;       /* the model fitted on every sampled plan, for the search's choice */
    int fitted;
    int unfit;               /* rank 0: 1 + the first sample no memory-fitting draw was found for (0: all fit) */
    double over_sum;         /* the calibration plans' step time outside the model-stages */
    int over_n;
    FILE *dump;              /* rank 0: NEREUS_SWEEP_DUMP, the measurements for build/bench/sweep_refit */
};

#define SWEEP_DRAWS 1000 /* random plans drawn per sample before the sweep gives up on fitting memory */

static uint64_t rng_next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static void sweep_sample(LivePlanner *lp, Job *j, struct Sweep *sw) {
    const Config *cfg = j->cfg;
    StageOption (*opt)[512] = nr_xmalloc(PLAN_NSTAGES * sizeof *opt); /* (PLAN_NSTAGES, 512) */
    CostWork *cw = cost_work_new();
    int nopt[PLAN_NSTAGES];
    for (int s = 0; s < PLAN_NSTAGES; s++) nopt[s] = plan_stage_options(&lp->cm, s, j->size, &lp->w, opt[s], 512);
    uint64_t seed = (uint64_t)(cfg->planner.sweep_seed ? cfg->planner.sweep_seed : cfg->run.seed);
    uint64_t st = seed * 0x9e3779b97f4a7c15ULL + 1;
    for (int k = 0; k < sw->n; k++) {
        int fits = 0;
        for (int tries = 0; tries < SWEEP_DRAWS && !fits; tries++) {
            PlanConfig *p = &sw->p[k].plan;
            *p = j->plan;
            for (int s = 0; s < PLAN_NSTAGES; s++) /* a stage without options (absent: no critic) stays as it is */
                if (nopt[s]) plan_stage_of_option(&opt[s][rng_next(&st) % (uint64_t)nopt[s]], NULL, &p->stage[s]);
            StepCost c;
            cost_plan_in(cw, &lp->cm, p, j->size, &lp->w, &c);
            fits = c.fits;
        }
        sw->p[k].pred = NAN;
        if (!fits && !sw->unfit) sw->unfit = k + 1; /* refused at start-up (sweep_unfit), not run out of memory */
    }
    cost_work_free(cw);
    free(opt);
    /* The K plans that calibrate run first: the ones the model's own predictions say pin its factors down best
       (cal_design, D-optimal; no measurement is used), the rest in sample order. They predict the held-out
       plans better than the first K drawn (build/bench/sweep_refit with SWEEP_REFIT_DESIGN against each
       quarter of the sample in turn). */
    if (!sw->unfit) {
        PlanConfig *pl = nr_xmalloc((size_t)sw->n * sizeof *pl);
        int *perm = nr_xmalloc((size_t)sw->n * sizeof *perm);
        for (int k = 0; k < sw->n; k++) pl[k] = sw->p[k].plan;
        cal_design(&lp->cm, pl, sw->n, j->size, &lp->w, sw->K, perm);
        for (int k = 0; k < sw->n; k++) sw->p[k].plan = pl[perm[k]];
        free(perm);
        free(pl);
    }
    sw->p[sw->n].pred = NAN;
    sw->p[sw->n + 1].pred = NAN;
}

int sweep_unfit(const struct Sweep *sw, char *why, size_t len) {
    if (!sw || !sw->unfit) return 0;
    return nr_fail(why, len, "[planner] policy = sweep: no plan that fits memory in %d random draws for sampled plan %d "
                   "of %d: few plans of this job fit the memory model's limit ([planner] memory_gib); raise it or use a "
                   "smaller model", SWEEP_DRAWS, sw->unfit, sw->n);
}

struct Sweep *sweep_new(LivePlanner *lp, Job *j) {
    const PlannerConfig *pc = &j->cfg->planner;
    struct Sweep *sw = nr_xcalloc(1, sizeof *sw);
    sw->n = pc->sweep_plans;
    sw->K = pc->sweep_calibrate < sw->n ? pc->sweep_calibrate : sw->n - 1;
    sw->steps = pc->sweep_steps;
    sw->start = pc->warmup;
    sw->fsteps = PLANNER_SWEEP_FINAL * sw->steps;
    int R = pc->sweep_reference;
    sw->nc = planner_sweep_controls(sw->n, sw->K, R);
    int np = sw->n + 2 + sw->nc;
    sw->p = nr_xcalloc((size_t)np, sizeof *sw->p);
    sw->dumped = nr_xcalloc((size_t)np, 1);
    for (int k = 0; k < np; k++) sw->p[k].wall = nr_xcalloc((size_t)sw->fsteps, sizeof(double));
    /* the windows: the sample in order, a control after every R held-out plans and after the last, then the
       search's choice and the best sampled plan again */
    sw->win = nr_xcalloc((size_t)np, sizeof *sw->win);
    int c = 0;
    for (int k = 0; k < sw->n; k++) {
        sw->win[sw->nwin++] = k;
        if (sw->nc && k >= sw->K && ((k - sw->K + 1) % R == 0 || k == sw->n - 1)) sw->win[sw->nwin++] = sw->n + 2 + c++;
    }
    sw->win[sw->nwin++] = sw->n;
    sw->win[sw->nwin++] = sw->n + 1;
    for (int k = sw->n + 2; k < np; k++) sw->p[k].pred = NAN;
    if (j->rank == 0) sweep_sample(lp, j, sw);
    return sw;
}

void sweep_free(struct Sweep *sw) {
    if (!sw) return;
    if (sw->dump) fclose(sw->dump);
    for (int k = 0; k < sw->n + 2 + sw->nc; k++) free(sw->p[k].wall);
    free(sw->p);
    free(sw->win);
    free(sw->dumped);
    free(sw);
}

/* the index into p of PPO step `step`'s window and its position in the window (−1: not in the sweep) */
static int sweep_index(const struct Sweep *sw, int step, int *phase) {
    if (step < sw->start) return -1;
    int t = step - sw->start;
    for (int w = 0; w < sw->nwin; w++) {
        int i = sw->win[w], len = i == sw->n || i == sw->n + 1 ? sw->fsteps : sw->steps; /* the two last, longer */
        if (t < len) {
            *phase = t;
            return i;
        }
        t -= len;
    }
    return -1;
}

/* rank 0: fit the frozen model on the calibration plans */
static void sweep_fit(LivePlanner *lp, struct Sweep *sw, int nranks, const Calibration *cal, int nplans,
                      CostModel *fit) {
    *fit = lp->cm;
    fit->eff = eff_default();
    fit->slow = NULL;
    /* the phase scales against cost_plan's own phases at the fitted factors: cal_fit's compare with the phases
       linearised at the live model's factors the observations were taken with, and predict held-out plans
       worse (tests/bench/refit_compare.sh). The pipeline waits' hops chosen by the plans' phases (cal_fit_plans
       says why) */
    PhaseObs *po = nr_xmalloc((size_t)(nplans > 0 ? nplans : 1) * sizeof *po);
    int np = 0;
    for (int k = 0; k < nplans; k++) {
        const SweepPlan *p = &sw->p[k];
        if (p->refused || p->nwall == 0) continue;
        PhaseObs *q = &po[np++];
        q->plan = &p->plan;
        q->w = lp->w;
        q->w.resp_len = p->len / p->nwall;
        q->steps = p->nwall;
        for (int ph = 0; ph < 3; ph++) q->ph[ph] = p->phase[ph] / p->nwall;
    }
    /* the observations were taken with the live model's factors: cal_add stored ideal seconds, so the fit starts anew */
    double rms = cal_fit_plans(cal, fit, nranks, po, np);
    free(po);
    if (getenv("NEREUS_PLANNER_DEBUG")) {
        fprintf(stderr, "sweep debug: fit over %d stage(s), RMS %.1f%%, message stretch exponent %.2f, pipeline wait "
                "%.3g hops\n", cal->n, 100 * rms, fit->hw.rho_exp, fit->hw.pipe_hops);
        for (int i = 0; i < cal->n; i++) {
            const CalObs *o = &cal->obs[i];
            double p = cal_obs_fitted(o, fit);
            fprintf(stderr, "  %-12s t%dp%dd%d measured %.4f fitted %.4f (%+.0f%%) ideal:", o->stage >= 0 ? plan_stage_name(o->stage) : o->stage == -1 ? "phase gen" : o->stage == -2 ? "phase inf" : "phase train",
                    o->l.tp, o->l.pp, o->l.dp, o->t, p, 100 * (p - o->t) / o->t);
            for (int k = 0; k < EFF_N; k++) fprintf(stderr, " %.2g", o->a[k]);
            fprintf(stderr, "\n");
        }
    }
    fit->overhead_s = 0;
    /* the time outside the phases, measured (wall − the phases the stage timers give), less the model's sync */
    double over = 0;
    int n = 0;
    for (int k = 0; k < sw->K; k++) {
        const SweepPlan *p = &sw->p[k];
        if (p->refused || p->nwall == 0) continue;
        Workload w = lp->w;
        w.resp_len = p->len / p->nwall;
        StepCost c;
        cost_plan(fit, &p->plan, nranks, &w, &c);
        over += p->outside - p->nwall * c.phase[3];
        n += p->nwall;
        if (getenv("NEREUS_PLANNER_DEBUG"))
            fprintf(stderr, "sweep debug: plan %d outside %.4f s/step, predicted sync %.4f s\n", k, p->outside / p->nwall,
                    c.phase[3]);
    }
    fit->overhead_s = n > 0 && over > 0 ? over / n : 0;
}

/* the median measured step of a plan (NaN when none was measured); its steps stay in order */
static double plan_median(const SweepPlan *p) {
    double *v = nr_xmalloc((size_t)(p->nwall > 0 ? p->nwall : 1) * sizeof *v);
    memcpy(v, p->wall, (size_t)p->nwall * sizeof *v);
    double m = nr_median(v, p->nwall);
    free(v);
    return m;
}

/* the sampled plan with the lowest median measured step (−1: none measured), and that median */
static int sweep_best(const struct Sweep *sw, double *best) {
    int ib = -1;
    *best = INFINITY;
    for (int k = 0; k < sw->n; k++) {
        double m = sw->p[k].refused ? NAN : plan_median(&sw->p[k]);
        if (isfinite(m) && m < *best) *best = m, ib = k;
    }
    return ib;
}

int sweep_decide(LivePlanner *lp, Job *j, int step, PlanConfig *next) {
    struct Sweep *sw = lp->sweep;
    int phase, i = sweep_index(sw, step, &phase);
    if (i < 0 || phase != 0) return 0;
    if (i == sw->K && !sw->fitted) {
        sweep_fit(lp, sw, j->size, &sw->cal, sw->K, &sw->fit);
        sw->fitted = 1;
    }
    if (i == sw->n) { /* the search's choice, the model refitted on every sampled plan */
        StepCost c;
        SearchStats st;
        char why[512];
        sweep_fit(lp, sw, j->size, &sw->all, sw->n, &sw->fit_all);
        if (plan_search_on(&sw->fit_all, j->size, NULL, j->size, &lp->w, &sw->p[i].plan, &c, &st, why, sizeof why) != 0) {
            nr_log("planner: sweep: the search found no plan: %s\n", why);
            sw->p[i].refused = 1;
            return 0;
        }
        sw->p[i].pred = c.total;
        for (int ph = 0; ph < 3; ph++) sw->p[i].pred_phase[ph] = c.phase[ph];
        if (getenv("NEREUS_PLANNER_DEBUG"))
            for (int k = 0; k < sw->n; k++) {
                StepCost ck;
                double pk = cost_plan(&sw->fit_all, &sw->p[k].plan, j->size, &lp->w, &ck);
                fprintf(stderr, "sweep debug: refit predicts plan %2d %.4f s (gen %.3f inf %.3f train %.3f), measured %.4f (%.3f %.3f %.3f)\n", k, pk,
                        ck.phase[0], ck.phase[1], ck.phase[2], sw->p[k].nwall ? sw->p[k].wall[0] : NAN,
                        sw->p[k].nwall ? sw->p[k].phase[0] / sw->p[k].nwall : NAN, sw->p[k].nwall ? sw->p[k].phase[1] / sw->p[k].nwall : NAN,
                        sw->p[k].nwall ? sw->p[k].phase[2] / sw->p[k].nwall : NAN);
            }
    } else if (i == sw->n + 1) { /* the best sampled plan again, as long as the choice ran: both fresh */
        double best_s;
        int b = sweep_best(sw, &best_s);
        if (b < 0) {
            sw->p[i].refused = 1;
            return 0;
        }
        StepCost c;
        sw->p[i].plan = sw->p[b].plan;
        sw->p[i].pred = cost_plan(&sw->fit_all, &sw->p[i].plan, j->size, &lp->w, &c);
        for (int ph = 0; ph < 3; ph++) sw->p[i].pred_phase[ph] = c.phase[ph];
    } else if (i >= sw->n + 2) { /* a control: the first sampled plan again (no prediction: not held out) */
        sw->p[i].plan = sw->p[0].plan;
        if (sw->p[0].refused) {
            sw->p[i].refused = 1;
            return 0;
        }
    } else if (sw->fitted) {
        StepCost c;
        sw->p[i].pred = cost_plan(&sw->fit, &sw->p[i].plan, j->size, &lp->w, &c);
        for (int ph = 0; ph < 3; ph++) sw->p[i].pred_phase[ph] = c.phase[ph];
    }
    *next = sw->p[i].plan;
    return 1;
}

void sweep_refused(LivePlanner *lp, int step) {
    int phase, i = sweep_index(lp->sweep, step, &phase);
    if (i >= 0) lp->sweep->p[i].refused = 1;
}

/* NEREUS_SWEEP_DUMP=FILE (rank 0): the sweep's machine model, models, workload, plans and every measured
   step, as text, so that the cost model can be refitted offline on the same measurements
   (tests/bench/sweep_refit.c reads it; docs/PLANNER.md) */
static void sweep_dump(LivePlanner *lp, struct Sweep *sw, int i, const Job *j, double wall_s, double len,
                       const double *meas, const double *ph) {
    const char *path = getenv("NEREUS_SWEEP_DUMP");
    if (!path || j->rank != 0) return;
    if (!sw->dump) {
        if (!(sw->dump = fopen(path, "w"))) {
            nr_log("planner: sweep: cannot write NEREUS_SWEEP_DUMP %s; no dump\n", path);
            unsetenv("NEREUS_SWEEP_DUMP");
            return;
        }
        const CostModel *c = &lp->cm;
        const HwModel *h = &c->hw;
        fprintf(sw->dump, "nereus-sweep-dump 1\nhw %.17g %.17g %.17g %d %.17g %.17g %.17g %.17g %.17g %d\n", h->flops,
                h->mem, h->hbm, h->ranks_per_node, h->bw[0], h->lat[0], h->bw[1], h->lat[1], h->op_s, h->cores);
        const GPTConfig *m[2] = {&c->actor.cfg, &c->critic.cfg};
        for (int k = 0; k < 2; k++)
            fprintf(sw->dump, "model %d %d %d %d %d %d\n", m[k]->L, m[k]->C, m[k]->NH, m[k]->V, m[k]->maxT, m[k]->value_head);
        fprintf(sw->dump, "rm %d %.17g\nwork %d %d %d %.17g %.17g %.17g\nsweep %d %d %d %d\n", c->have_rm, c->headroom,
                lp->w.batch, lp->w.minibatch, lp->w.epochs, lp->w.prompt_len, lp->w.resp_len, lp->w.resp_max, sw->n,
                sw->K, sw->steps, j->size);
    }
    if (!sw->dumped[i]) { /* its plan, the first time it is measured (a control: plan 0's, marked) */
        const PlanConfig *p = &sw->p[i].plan;
        fprintf(sw->dump, "plan %d", i);
        for (int s = 0; s < PLAN_NSTAGES; s++) {
            fprintf(sw->dump, "  %d %d %d %d", p->stage[s].tp, p->stage[s].pp, p->stage[s].dp, p->stage[s].nranks);
            for (int r = 0; r < p->stage[s].nranks; r++) fprintf(sw->dump, " %d", p->stage[s].ranks[r]);
        }
        fprintf(sw->dump, "\n");
        if (i >= sw->n + 2) fprintf(sw->dump, "control %d\n", i);
        sw->dumped[i] = 1;
    }
    fprintf(sw->dump, "obs %d %.9g %.9g", i, wall_s, len);
    for (int s = 0; s < PLAN_NSTAGES; s++) fprintf(sw->dump, " %.9g", meas[s]);
    fprintf(sw->dump, " %.9g %.9g %.9g\n", ph[0], ph[1], ph[2]);
    fflush(sw->dump);
}

void sweep_observe(LivePlanner *lp, Job *j, int step, const double *m, double wall_s, double len) {
    struct Sweep *sw = lp->sweep;
    int phase, i = sweep_index(sw, step, &phase);
    if (i < 0 || phase == 0 || sw->p[i].refused) return;
    SweepPlan *p = &sw->p[i];
    p->wall[p->nwall++] = wall_s;
    p->len += len;
    double meas[PLAN_NSTAGES], ph[3];
    live_measured(j, m, meas, ph);
    sweep_dump(lp, sw, i, j, wall_s, len, meas, ph);
    for (int s = 0; s < PLAN_NSTAGES; s++) {
        if (meas[s] > 0 && i < sw->K) cal_add(&sw->cal, &lp->cm, &j->plan, j->size, &lp->w, s, meas[s]);
        if (meas[s] > 0 && i < sw->n) cal_add(&sw->all, &lp->cm, &j->plan, j->size, &lp->w, s, meas[s]);
    }
    for (int k = 0; k < 3; k++) {
        if (i < sw->K) cal_add_phase(&sw->cal, &lp->cm, &j->plan, j->size, &lp->w, k, ph[k]);
        if (i < sw->n) cal_add_phase(&sw->all, &lp->cm, &j->plan, j->size, &lp->w, k, ph[k]);
        p->phase[k] += ph[k];
    }
    p->outside += wall_s - ph[0] - ph[1] - ph[2];
}

/* a plan on one line: each model-stage's layout and ranks */
static void plan_short(const PlanConfig *p, char *buf, size_t len) {
    static const char *ab[PLAN_NSTAGES] = {"gen", "a.inf", "a.trn", "ref", "c.inf", "c.trn", "rm"};
    size_t n = 0;
    buf[0] = 0;
    for (int s = 0; s < PLAN_NSTAGES && n < len; s++) {
        if (!plan_stage_present(p, s)) continue; /* not in the stage set (grpo: no critic) */
        char r[64];
        plan_ranks_format(p->stage[s].ranks, p->stage[s].nranks, r, sizeof r);
        n += (size_t)snprintf(buf + n, len - n, "%s%s t%dp%dd%d@%s", s ? " " : "", ab[s], p->stage[s].tp, p->stage[s].pp,
                              p->stage[s].dp, r);
    }
}

/* The controls ([planner] sweep_reference): plan 0 run again after every R held-out plans. The machine's
 * slowdown at a control = its median step / plan 0's first median (1 at plan 0's own window); at a held-out
 * plan, interpolated linearly over the windows between the controls before and after it (the last one's
 * after the last control). Logs each control and returns the held-out error with every plan's measurement
 * divided by that slowdown (mean and worst |error|, NaN without controls) and the slowdowns' range. What
 * it corrects is the machine, not the model: 8 ranks on 2 shared cores can run the same plan half again as
 * slow at the end of a sweep as at its start, which no cost model can predict. */
static void sweep_controls(const struct Sweep *sw, double *mape, double *worst, double *smin, double *smax, double *sd) {
    if (sw->nc == 0) return;
    int nw = sw->nwin;
    double *v = nr_xcalloc((size_t)(4 * nw), sizeof *v), *ref = v, *meas = v + nw, *pred = v + 2 * nw, *slow = v + 3 * nw;
    for (int w = 0; w < nw; w++) { /* the reference (plan 0 and its controls); the held-out plans */
        int i = sw->win[w], control = i == 0 || i >= sw->n + 2, held = i >= sw->K && i < sw->n;
        double m = sw->p[i].refused ? NAN : plan_median(&sw->p[i]);
        ref[w] = control ? m : NAN;
        meas[w] = held ? m : NAN;
        pred[w] = held ? sw->p[i].pred : NAN;
    }
    int ne = nr_drift_corrected_error(ref, meas, pred, nw, slow, mape, worst), held = 0;
    *sd = nr_repeat_sd(ref, nw);
    *smin = INFINITY, *smax = 0;
    for (int w = 0; w < nw; w++) {
        int i = sw->win[w];
        held += i >= sw->K && i < sw->n;
        if (i >= sw->n + 2 && isfinite(ref[w]) && isfinite(slow[w])) {
            *smin = fmin(*smin, slow[w]);
            *smax = fmax(*smax, slow[w]);
            nr_log("planner: sweep: control %d (plan 0 again, after %d held-out plan(s)): %.4f s/step, %.3fx plan 0's "
                   "first\n", i - sw->n - 1, held, ref[w], slow[w]);
        }
    }
    free(v);
    if (ne > 0 && !(*smax > 0)) *mape = *worst = NAN; /* no control ran: nothing to correct by */
    else if (ne > 0)
        nr_log("planner: sweep: the machine's slowdown over the run by the controls %.3f-%.3fx; held-out error with "
               "each plan's measurement divided by it (interpolated): MAPE %.2f%%, worst %.2f%% (the model's own error, "
               "the machine's drift taken out)\n", *smin, *smax, 100 * *mape, 100 * *worst);
    if (isfinite(*sd))
        nr_log("planner: sweep: plan 0's windows repeat within %.2f%% (standard deviation from successive "
               "differences): against windows this noisy an exact model would show a MAPE of about %.2f%%\n", 100 * *sd,
               100 * NR_MAPE_PER_SD * *sd);
}

void sweep_report(const LivePlanner *lp) {
    const struct Sweep *sw = lp->sweep;
    nr_log("planner: sweep: %d sampled plan(s), %d step(s) each (the first after a transition not measured); the first "
           "%d (chosen by a D-optimal design on the model's predictions) calibrate the model, the rest are predicted before they run; then the search's choice and the best "
           "sampled plan again, %d step(s) each (both fresh, so the gap is not the best of %d short runs against one)\n",
           sw->n, sw->steps, sw->K, sw->fsteps, sw->n);
    nr_log("  #  role        measured s  predicted s   error  gen/inf/train/outside measured (predicted)  plan\n");
    double esum = 0, emax = 0, e2 = 0, best;
    int ne = 0, nrun = 0, ibest = sweep_best(sw, &best);
    for (int k = 0; k <= sw->n + 1; k++) {
        const SweepPlan *p = &sw->p[k];
        double meas = plan_median(p);
        char txt[512];
        plan_short(&p->plan, txt, sizeof txt);
        const char *role = k == sw->n + 1 ? "best again" : k == sw->n ? "chosen" : k < sw->K ? "calibrate" : "held-out";
        if (p->refused || !isfinite(meas)) {
            nr_log("%3d  %-10s  %10s  %11s  %6s  %s\n", k, role, p->refused ? "refused" : "-", "-", "-", txt);
            continue;
        }
        double err = isfinite(p->pred) ? (p->pred - meas) / meas : NAN;
        if (k < sw->n) {
            nrun++;
            if (k >= sw->K && isfinite(err)) {
                esum += fabs(err);
                emax = fmax(emax, fabs(err));
                e2 += err * err;
                ne++;
            }
        }
        char pe[32] = "-", ee[32] = "-";
        if (isfinite(p->pred)) snprintf(pe, sizeof pe, "%.4f", p->pred);
        if (isfinite(err)) snprintf(ee, sizeof ee, "%+.1f%%", 100 * err);
        char phs[160];
        double nw = p->nwall;
        if (isfinite(p->pred))
            snprintf(phs, sizeof phs, "%.3f/%.3f/%.3f/%.3f (%.3f/%.3f/%.3f/%.3f)", p->phase[0] / nw, p->phase[1] / nw,
                     p->phase[2] / nw, p->outside / nw, p->pred_phase[0], p->pred_phase[1], p->pred_phase[2],
                     p->pred - p->pred_phase[0] - p->pred_phase[1] - p->pred_phase[2]);
        else
            snprintf(phs, sizeof phs, "%.3f/%.3f/%.3f/%.3f", p->phase[0] / nw, p->phase[1] / nw, p->phase[2] / nw,
                     p->outside / nw);
        nr_log("%3d  %-10s  %10.4f  %11s  %6s  %s  %s\n", k, role, meas, pe, ee, phs, txt);
    }
    double cmape = NAN, cworst = NAN, smin = NAN, smax = NAN, sd = NAN;
    sweep_controls(sw, &cmape, &cworst, &smin, &smax, &sd);
    const SweepPlan *c = &sw->p[sw->n];
    double chosen = plan_median(c);
    for (int m = 0; m < 2; m++) {
        const CostModel *f = m ? &sw->fit_all : &sw->fit;
        const Efficiency *e = &f->eff;
        nr_log("planner: sweep: %s: GEMM %.3g, attention %.3g, memory-bound %.3g, all-reduce %.3g, "
               "point-to-point %.3g, per-operation %.3g, latency %.3g; message stretch exponent %.2f; pipeline wait %.3g "
               "hops; overhead %.4f s/step\n",
               m ? "refitted on every sampled plan (the choice)" : "fitted on the calibration plans (the predictions)",
               e->f[EFF_GEMM], e->f[EFF_ATTN], e->f[EFF_DECODE], e->f[EFF_AR_INTRA], e->f[EFF_P2P_INTRA],
               e->f[EFF_OPS], e->f[EFF_LAT], f->hw.rho_exp, f->hw.pipe_hops, f->overhead_s);
    }
    nr_log("sweep.plans_run: %d\n", nrun);
    nr_log("sweep.heldout: %d\n", ne);
    if (ne > 0) {
        nr_log("sweep.mape_pct: %.2f\n", 100 * esum / ne);
        nr_log("sweep.worst_pct: %.2f\n", 100 * emax);
    }
    if (isfinite(cmape)) {
        nr_log("sweep.control_slowdown_min: %.3f\n", smin);
        nr_log("sweep.control_slowdown_max: %.3f\n", smax);
        nr_log("sweep.mape_speed_corrected_pct: %.2f\n", 100 * cmape);
        nr_log("sweep.worst_speed_corrected_pct: %.2f\n", 100 * cworst);
    }
    double rms = ne > 0 ? sqrt(e2 / ne) : NAN;
    if (ne > 0) nr_log("sweep.rms_pct: %.2f\n", 100 * rms);
    if (isfinite(sd)) {
        nr_log("sweep.control_repeat_sd_pct: %.2f\n", 100 * sd);
        nr_log("sweep.mape_floor_pct: %.2f\n", 100 * NR_MAPE_PER_SD * sd);
    }
    if (isfinite(sd) && ne > 0) { /* an estimate: the controls' noise taken out of the held-out RMS in quadrature */
        double own = nr_noise_removed(rms, sd);
        nr_log("planner: sweep: held-out RMS error %.2f%%; with the controls' repeat noise (%.2f%%) taken out in "
               "quadrature, the model's own error is about %.2f%% RMS (%.2f%% as a MAPE; an estimate: %d control "
               "window(s) measure that noise)\n", 100 * rms, 100 * sd, 100 * own, 100 * NR_MAPE_PER_SD * own,
               sw->nc + 1);
        nr_log("sweep.model_rms_est_pct: %.2f\n", 100 * own);
    }
    if (ibest >= 0) nr_log("sweep.best_measured_s: %.4f (plan %d)\n", best, ibest);
    if (isfinite(chosen) && ibest >= 0) {
        nr_log("sweep.chosen_measured_s: %.4f\n", chosen);
        nr_log("sweep.chosen_gap_pct: %.2f\n", 100 * (chosen - best) / best);
    }
    double again = plan_median(&sw->p[sw->n + 1]);
    if (isfinite(chosen) && isfinite(again)) { /* both fresh, both PLANNER_SWEEP_FINAL x sweep_steps long */
        nr_log("sweep.best_again_s: %.4f\n", again);
        nr_log("sweep.chosen_gap_again_pct: %.2f\n", 100 * (chosen - again) / again);
    }
}
