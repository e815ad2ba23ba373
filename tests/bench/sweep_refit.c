/* sweep_refit.c — the cost model refitted offline on a sweep's measurements.
 *
 *   NEREUS_SWEEP_DUMP=FILE jobs/local.sh -np 8 -x NEREUS_SWEEP_DUMP bin/nereus inputs/live/sweep8-wide.deck
 *   build/bench/sweep_refit FILE [ROUNDS] [-v]
 *
 * A live sweep ([planner] policy = sweep, src/run/sweep.c) takes minutes and
 * its held-out error moves by several points from run to run with this
 * machine's noise, so two versions of the cost model cannot be told apart by
 * running each. This program takes one run's measurements (the machine
 * model, the models, the workload, every sampled plan and every measured
 * step: NEREUS_SWEEP_DUMP) and does the sweep's fit with this build's cost
 * model: calibrate on the first K plans' model-stages and phases
 * (cal_add, cal_add_phase, cal_fit_plans, the overhead as sweep_fit takes it),
 * predict the other plans, print the MAPE and the worst error — the same
 * measurements for any version of cost.c. A dump with control windows
 * ([planner] sweep_reference) also gets the error with the machine's
 * drift taken out, as the sweep reports it.
 *
 * ROUNDS (default 1): the observations' coefficients depend on the model's
 * factors where ranks share cores (the processor-sharing stretch); round 1
 * takes them at the default factors, each further round at the factors the
 * round before fitted (a fixed point). The live sweep takes them at the live
 * model's factors of the moment, so its numbers differ somewhat. -v prints
 * every plan, its phases and its model-stages, measured and predicted.
 *
 * Switches (environment): SWEEP_REFIT_K=k calibrates on k plans instead of
 * the dump's; SWEEP_REFIT_SHIFT=s on plans [s, s + K) of the sample (mod n)
 * instead of the first K, for another split (tests/bench/refit_compare.sh
 * compares two builds over four); SWEEP_REFIT_DESIGN=1 on the K plans
 * cal_design picks, as the live sweep does
 * (tests/bench/refit_design.py compares it with the quarters); SWEEP_REFIT_LINEAR_PHASE=1 keeps cal_fit's
 * phase scales (against the linearised phases) instead of cal_phase_scales';
 * SWEEP_REFIT_OBS=1 prints every calibration observation against the fit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/planner.h"
#include "nereus/util.h"

#define MAX_PLANS 256
#define MAX_OBS 16

typedef struct Obs { double wall, len, meas[PLAN_NSTAGES], ph[3]; } Obs;
typedef struct DPlan { PlanConfig plan; Obs obs[MAX_OBS]; int nobs, have, control, id; } DPlan; /* id: its place in the dump */

static DPlan P[MAX_PLANS];
static int order[MAX_PLANS], norder; /* the plans in the order they ran (their first measured step) */
static int n, K, steps, nranks;
static CostModel base;
static Workload W;

static int load(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return fprintf(stderr, "sweep_refit: cannot open %s\n", path), -1;
    char line[16384];
    int models = 0, ok = 0;
    memset(&base, 0, sizeof base);
    while (fgets(line, sizeof line, f)) {
        HwModel *h = &base.hw;
        if (!strncmp(line, "nereus-sweep-dump 1", 19)) ok = 1;
        else if (!strncmp(line, "hw ", 3))
            sscanf(line + 3, "%lf %lf %lf %d %lf %lf %lf %lf %lf %d", &h->flops, &h->mem, &h->hbm, &h->ranks_per_node,
                   &h->bw[0], &h->lat[0], &h->bw[1], &h->lat[1], &h->op_s, &h->cores);
        else if (!strncmp(line, "model ", 6)) {
            GPTConfig g;
            memset(&g, 0, sizeof g);
            sscanf(line + 6, "%d %d %d %d %d %d", &g.L, &g.C, &g.NH, &g.V, &g.maxT, &g.value_head);
            if (models == 0) base.actor = shape_of_config(&g, "actor");
            else base.critic = shape_of_config(&g, "critic");
            models++;
        } else if (!strncmp(line, "rm ", 3)) sscanf(line + 3, "%d %lf", &base.have_rm, &base.headroom);
        else if (!strncmp(line, "work ", 5))
            sscanf(line + 5, "%d %d %d %lf %lf %lf", &W.batch, &W.minibatch, &W.epochs, &W.prompt_len, &W.resp_len, &W.resp_max);
        else if (!strncmp(line, "sweep ", 6)) sscanf(line + 6, "%d %d %d %d", &n, &K, &steps, &nranks);
        else if (!strncmp(line, "plan ", 5)) {
            char *s = line + 5, *e;
            int i = (int)strtol(s, &e, 10);
            if (i < 0 || i >= MAX_PLANS) continue;
            PlanConfig *p = &P[i].plan;
            memset(p, 0, sizeof *p);
            for (int st = 0; st < PLAN_NSTAGES; st++) {
                PlanStage *ps = &p->stage[st];
                ps->src = PLAN_SRC_DECK;
                ps->tp = (int)strtol(s = e, &e, 10);
                ps->pp = (int)strtol(s = e, &e, 10);
                ps->dp = (int)strtol(s = e, &e, 10);
                ps->nranks = (int)strtol(s = e, &e, 10);
                for (int r = 0; r < ps->nranks && r < PLAN_MAX_RANKS; r++) ps->ranks[r] = (int16_t)strtol(s = e, &e, 10);
            }
            P[i].have = 1;
        } else if (!strncmp(line, "control ", 8)) { /* [planner] sweep_reference: plan 0 run again */
            int i = atoi(line + 8);
            if (i >= 0 && i < MAX_PLANS) P[i].control = 1;
        } else if (!strncmp(line, "obs ", 4)) {
            char *s = line + 4, *e;
            int i = (int)strtol(s, &e, 10);
            if (i < 0 || i >= MAX_PLANS || P[i].nobs == MAX_OBS) continue;
            if (P[i].nobs == 0) order[norder++] = i;
            Obs *o = &P[i].obs[P[i].nobs++];
            o->wall = strtod(s = e, &e);
            o->len = strtod(s = e, &e);
            for (int st = 0; st < PLAN_NSTAGES; st++) o->meas[st] = strtod(s = e, &e);
            for (int k = 0; k < 3; k++) o->ph[k] = strtod(s = e, &e);
        }
    }
    fclose(f);
    if (!ok || models != 2 || n < 2 || K < 1 || K >= n || nranks < 1)
        return fprintf(stderr, "sweep_refit: %s is not a complete NEREUS_SWEEP_DUMP\n", path), -1;
    return 0;
}

static double plan_median(const DPlan *p) {
    double v[MAX_OBS];
    for (int k = 0; k < p->nobs; k++) v[k] = p->obs[k].wall;
    return nr_median(v, p->nobs);
}

static double plan_len(const DPlan *p) {
    double s = 0;
    for (int k = 0; k < p->nobs; k++) s += p->obs[k].len;
    return s / p->nobs;
}

/* the sweep's fit on plans [0, K): observations at `at`'s factors, fitted from the defaults */
static void fit_once(const CostModel *at, CostModel *fit) {
    static Calibration cal;
    memset(&cal, 0, sizeof cal);
    for (int i = 0; i < K; i++)
        for (int k = 0; k < P[i].nobs; k++) {
            const Obs *o = &P[i].obs[k];
            Workload w = W;
            w.resp_len = o->len;
            for (int s = 0; s < PLAN_NSTAGES; s++)
                if (o->meas[s] > 0) cal_add(&cal, at, &P[i].plan, nranks, &w, s, o->meas[s]);
            for (int ph = 0; ph < 3; ph++) cal_add_phase(&cal, at, &P[i].plan, nranks, &w, ph, o->ph[ph]);
        }
    *fit = *at;
    fit->eff = eff_default();
    static PhaseObs po[MAX_PLANS];
    int np = 0;
    for (int i = 0; i < K; i++) {
        if (P[i].nobs == 0) continue;
        PhaseObs *q = &po[np++];
        q->plan = &P[i].plan;
        q->w = W;
        q->w.resp_len = plan_len(&P[i]);
        q->steps = P[i].nobs;
        for (int ph = 0; ph < 3; ph++) {
            q->ph[ph] = 0;
            for (int k = 0; k < P[i].nobs; k++) q->ph[ph] += P[i].obs[k].ph[ph] / P[i].nobs;
        }
    }
    /* the phase scales against cost_plan's own phases at the fitted factors, as sweep_fit takes them
       (SWEEP_REFIT_LINEAR_PHASE=1: cal_fit's, against the linearised phases) */
    if (getenv("SWEEP_REFIT_LINEAR_PHASE")) cal_fit(&cal, fit);
    else cal_fit_plans(&cal, fit, nranks, po, np);
    if (getenv("SWEEP_REFIT_OBS")) /* every calibration observation against the fit */
        for (int i = 0; i < cal.n; i++) {
            const CalObs *o = &cal.obs[i];
            double p = cal_obs_fitted(o, fit);
            printf("obs %-12s t%dp%dd%d measured %.4f fitted %.4f (%+.0f%%) rho %.2f  by class:",
                   o->stage >= 0 ? plan_stage_name(o->stage) : o->stage == -1 ? "phase gen" : o->stage == -2 ? "phase inf" : "phase train",
                   o->l.tp, o->l.pp, o->l.dp, o->t, p, 100 * (p - o->t) / o->t, o->rho);
            for (int k = 0; k < EFF_N; k++) printf(" %.3f", o->a[k] / fit->eff.f[k]);
            printf("\n");
        }
    /* the time outside the phases, less the model's sync (sweep_fit) */
    double over = 0;
    int m = 0;
    for (int i = 0; i < K; i++)
        for (int k = 0; k < P[i].nobs; k++) {
            const Obs *o = &P[i].obs[k];
            Workload w = W;
            w.resp_len = o->len;
            StepCost c;
            fit->overhead_s = 0;
            cost_plan(fit, &P[i].plan, nranks, &w, &c);
            over += o->wall - o->ph[0] - o->ph[1] - o->ph[2] - c.phase[3];
            m++;
        }
    fit->overhead_s = m > 0 && over > 0 ? over / m : 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: sweep_refit DUMP [ROUNDS] [-v]\n");
        return 2;
    }
    if (load(argv[1]) != 0) return 1;
    for (int i = 0; i < n; i++) P[i].id = i;
    base.eff = eff_default(); /* the fits start from the defaults, and cal_design takes them */
    if (getenv("SWEEP_REFIT_K")) K = atoi(getenv("SWEEP_REFIT_K")); /* calibrate on another number of plans */
    if (K < 1 || K >= n) return fprintf(stderr, "sweep_refit: SWEEP_REFIT_K must be 1..%d\n", n - 1), 2;
    static int perm[MAX_PLANS]; /* the plan at each new place */
    int permuted = 0;
    if (getenv("SWEEP_REFIT_SHIFT")) { /* calibrate on plans [s, s + K) of the sample instead (mod n): another split */
        int sh = (atoi(getenv("SWEEP_REFIT_SHIFT")) % n + n) % n;
        for (int i = 0; i < n; i++) perm[i] = (i + sh) % n;
        permuted = 1;
    } else if (getenv("SWEEP_REFIT_DESIGN")) { /* calibrate on the K plans cal_design picks (D-optimal), as sweep.c does */
        static PlanConfig pl[MAX_PLANS];
        for (int i = 0; i < n; i++) pl[i] = P[i].plan;
        cal_design(&base, pl, n, nranks, &W, K, perm);
        permuted = 1;
    }
    if (permuted) {
        static DPlan R[MAX_PLANS];
        static int where[MAX_PLANS];
        for (int i = 0; i < n; i++) R[i] = P[perm[i]], where[perm[i]] = i;
        memcpy(P, R, (size_t)n * sizeof *P);
        for (int w = 0; w < norder; w++) /* the run order names the plans by their new places */
            if (order[w] < n) order[w] = where[order[w]];
    }
    int rounds = argc > 2 && argv[2][0] != '-' ? atoi(argv[2]) : 1, verbose = argc > 2 && !strcmp(argv[argc - 1], "-v");
    if (rounds < 1) rounds = 1;
    CostModel at = base, fit;
    for (int r = 0; r < rounds; r++) {
        fit_once(&at, &fit);
        at = fit;
    }
    double esum = 0, emax = 0, e2 = 0;
    int ne = 0;
    for (int i = verbose ? 0 : K; i < n; i++) {
        if (!P[i].have || P[i].nobs == 0) continue;
        Workload w = W;
        w.resp_len = plan_len(&P[i]);
        StepCost c;
        double pred = cost_plan(&fit, &P[i].plan, nranks, &w, &c), meas = plan_median(&P[i]);
        double e = (pred - meas) / meas;
        if (i >= K) {
            esum += fabs(e);
            emax = fmax(emax, fabs(e));
            e2 += e * e;
            ne++;
        }
        if (verbose) {
            double ph[3] = {0, 0, 0};
            for (int k = 0; k < P[i].nobs; k++)
                for (int q = 0; q < 3; q++) ph[q] += P[i].obs[k].ph[q] / P[i].nobs;
            char t[16][16];
            static const char *ab[PLAN_NSTAGES] = {"gen", "a.inf", "a.trn", "ref", "c.inf", "c.trn", "rm"};
            printf("%3d (dump %3d) %-9s measured %.4f  predicted %.4f  %+6.1f%%  gen/inf/train %.3f/%.3f/%.3f (%.3f/%.3f/%.3f) ", i,
                   P[i].id, i < K ? "calibrate" : "held-out", meas, pred, 100 * e, ph[0], ph[1], ph[2], c.phase[0], c.phase[1],
                   c.phase[2]);
            for (int st = 0; st < PLAN_NSTAGES; st++) {
                const PlanStage *q = &P[i].plan.stage[st];
                snprintf(t[st], sizeof t[st], "t%dp%dd%d@%d", q->tp, q->pp, q->dp, q->ranks[0]);
                printf(" %s %s", ab[st], t[st]);
            }
            printf("\n    stages measured (predicted):");
            for (int st = 0; st < PLAN_NSTAGES; st++) {
                double v[MAX_OBS];
                for (int k = 0; k < P[i].nobs; k++) v[k] = P[i].obs[k].meas[st];
                printf(" %s %.3f (%.3f)", ab[st], nr_median(v, P[i].nobs), c.stage[st]);
            }
            printf("\n");
        }
    }
    /* with controls in the dump: the held-out error with the machine's drift taken out, as the sweep reports it */
    double ref[MAX_PLANS], meas[MAX_PLANS], pred[MAX_PLANS], slow[MAX_PLANS], cs = NAN, cm = NAN, smin = INFINITY, smax = 0;
    int nc = 0;
    for (int w = 0; w < norder; w++) {
        int i = order[w], held = i >= K && i < n && P[i].have;
        double m = P[i].nobs ? plan_median(&P[i]) : NAN;
        ref[w] = i == 0 || P[i].control ? m : NAN;
        meas[w] = held ? m : NAN;
        pred[w] = NAN;
        if (held) {
            Workload wl = W;
            wl.resp_len = plan_len(&P[i]);
            StepCost c;
            pred[w] = cost_plan(&fit, &P[i].plan, nranks, &wl, &c);
        }
    }
    int ncs = nr_drift_corrected_error(ref, meas, pred, norder, slow, &cs, &cm);
    for (int w = 0; w < norder; w++)
        if (P[order[w]].control && isfinite(ref[w]) && isfinite(slow[w])) nc++, smin = fmin(smin, slow[w]), smax = fmax(smax, slow[w]);
    if (!nc) ncs = 0;
    if (ncs)
        printf("refit: %d control(s), the machine's slowdown %.3f-%.3fx: with it taken out MAPE %.2f%%, worst %.2f%%\n", nc,
               smin, smax, 100 * cs, 100 * cm);
    double sd = nr_repeat_sd(ref, norder);
    if (isfinite(sd))
        printf("refit: plan 0's windows repeat within %.2f%% (from successive differences): an exact model would show a "
               "MAPE of about %.2f%% against windows this noisy\n", 100 * sd, 100 * NR_MAPE_PER_SD * sd);
    if (isfinite(sd) && ne > 0) { /* as the sweep estimates it (run/sweep.c) */
        double rms = sqrt(e2 / ne), own = nr_noise_removed(rms, sd);
        printf("refit: held-out RMS error %.2f%%; with that noise taken out in quadrature, the model's own about %.2f%% RMS "
               "(%.2f%% as a MAPE)\n", 100 * rms, 100 * own, 100 * NR_MAPE_PER_SD * own);
    }
    printf("refit: %d calibration plan(s), %d held out, %d round(s): MAPE %.2f%%, worst %.2f%%; factors GEMM %.3g "
           "attention %.3g memory-bound %.3g all-reduce %.3g point-to-point %.3g per-operation %.3g latency %.3g, "
           "message stretch exponent %.2f, pipeline wait %.3g hops, overhead %.4f s/step; phase scales %.3f %.3f %.3f\n",
           K, ne, rounds, ne ? 100 * esum / ne : NAN, 100 * emax, fit.eff.f[EFF_GEMM], fit.eff.f[EFF_ATTN],
           fit.eff.f[EFF_DECODE], fit.eff.f[EFF_AR_INTRA], fit.eff.f[EFF_P2P_INTRA], fit.eff.f[EFF_OPS], fit.eff.f[EFF_LAT],
           fit.hw.rho_exp, fit.hw.pipe_hops, fit.overhead_s, fit.phase_scale[0], fit.phase_scale[1], fit.phase_scale[2]);
    return 0;
}
