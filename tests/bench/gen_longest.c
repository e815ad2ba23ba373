/* gen_longest.c — the cost model's generation phase priced with the batch's longest response fed
 * (Workload.resp_longest) and without it (0: every response as long as the mean), against the generation
 * phase the trace measured.
 *
 *   jobs/local.sh -np 1 bin/nereus tests/bench/gen-long.deck --set planner.policy=static
 *   build/bench/gen_longest gen-long.trace.h5 [MORE.trace.h5 ...]
 *
 * Several traces of the same deck (the same sampled tokens, so the same lengths: checked) are taken as one
 * run whose every measured second is the median over them, step by step: on a machine shared with other
 * jobs a step's phase can take twice its time, and that noise would hide the tail's share.
 * The trace must come from a run with the live planner (its /planner machine model and /signals) on a build
 * whose /steps has resp_longest. For each pricing the program calibrates a fresh model as the live planner
 * does (planner_live.c live_observe: from eff_default, after every step but the first, each model-stage's
 * seconds (/stages) and each phase's per-rank sum through cal_add, cal_add_phase and cal_fit, at the step's
 * own lengths) and prints per step the measured gen phase (/steps gen_s) against
 *   - before: the model calibrated on the steps before, at the step's own lengths (from the third step on);
 *   - final:  the model calibrated on every step;
 * then the mean absolute error of each. The fed calibration is checked against the one the run recorded
 * (/signals eff, row k + 1 after step k's calibration): the largest relative difference of a factor is
 * printed (0 when this program calibrates as the live planner did), over each trace alone.
 * Phases per rank are the sums of its model-stages' /stages seconds (the maximum over the stage's ranks): on
 * one rank exactly what the live planner measured, on more an approximation (said in the output).
 * Exit 0, 1 when the trace cannot be used (with why). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tools/trace_replay.h"
#include "nereus/plan.h"

#define MAXSTEPS 4096

typedef struct Step {
    int64_t step;
    int plan_id;
    double gen_s, len, longest;
    double stage[PLAN_NSTAGES]; /* /stages seconds (0: no row) */
} Step;

static int fail(const char *fmt, const char *a) {
    fprintf(stderr, "gen_longest: ");
    fprintf(stderr, fmt, a);
    fprintf(stderr, "\n");
    return 1;
}

/* /steps and /stages into s (n rows); 0, or −1 when /steps has no resp_longest */
static int read_steps(const TraceFile *tf, Step *s, int *n) {
    const Table *st = &tf->t[TRACE_STEPS], *sg = &tf->t[TRACE_STAGES];
    if (!table_col(st, STEPS(resp_longest))) return -1;
    *n = 0;
    for (size_t k = 0; k < st->n && *n < MAXSTEPS; k++) {
        Step *x = &s[(*n)++];
        memset(x, 0, sizeof *x);
        x->step = (int64_t)table_num(st, STEPS(step), k);
        x->plan_id = (int)table_num(st, STEPS(plan_id), k);
        x->gen_s = table_num(st, STEPS(gen_s), k);
        x->len = table_num(st, STEPS(resp_len), k);
        x->longest = table_num(st, STEPS(resp_longest), k);
        for (size_t g = 0; g < sg->n; g++) {
            int id = (int)table_num(sg, STAGES(stage), g);
            if ((int64_t)table_num(sg, STAGES(step), g) == x->step && id >= 0 && id < PLAN_NSTAGES)
                x->stage[id] = table_num(sg, STAGES(seconds), g);
        }
    }
    return 0;
}

/* each phase's largest per-rank sum of its model-stages' seconds (planner_live.c live_measured's) */
static void phases_of(const PlanConfig *p, int n, const Step *x, double *phase) {
    double *rt = calloc((size_t)n * 3, sizeof *rt);
    for (int s = 0; s < PLAN_NSTAGES; s++)
        for (int i = 0; i < p->stage[s].nranks && x->stage[s] > 0; i++)
            rt[(size_t)p->stage[s].ranks[i] * 3 + plan_stage_phase(s)] += x->stage[s];
    for (int ph = 0; ph < 3; ph++) {
        phase[ph] = 0;
        for (int r = 0; r < n; r++) phase[ph] = fmax(phase[ph], rt[(size_t)r * 3 + ph]);
    }
    free(rt);
}

/* the workload of step x: fed = 1 gives the decode term the step's longest response, 0 gives it none */
static Workload work_of(const Workload *base, const Step *x, int fed) {
    Workload w = *base;
    w.resp_len = x->len;
    w.resp_longest = fed ? x->longest : 0;
    return w;
}

static double gen_pred(const CostModel *cm, const PlanConfig *p, int n, const Workload *w) {
    StepCost c;
    cost_plan(cm, p, n, w, &c);
    return c.phase[0];
}

/* one pricing: before[k] and final[k] for every step (NaN where none); *eff_diff the largest relative difference
   between this calibration and /signals eff after each step (fed only) */
static void evaluate(const Replay *r, const Step *s, int n, int fed, double *before, double *final,
                     double *eff_diff) {
    CostModel cm;
    Workload base;
    replay_model(r, &r->row[0], &cm, &base);
    cm.eff = eff_default(); /* the live planner's start (live_init) */
    cm.hw.rho_exp = 0;
    cm.overhead_s = 0;
    for (int ph = 0; ph < 3; ph++) cm.phase_scale[ph] = 0;
    Calibration *cal = calloc(1, sizeof *cal);
    *eff_diff = 0;
    for (int k = 0; k < n; k++) {
        const PlanConfig *p = &r->rec[s[k].plan_id];
        Workload w = work_of(&base, &s[k], fed);
        before[k] = k >= 2 ? gen_pred(&cm, p, r->n, &w) : NAN;
        if (k == 0) continue; /* the live planner calibrates from the second step it measures */
        for (int st = 0; st < PLAN_NSTAGES; st++)
            if (s[k].stage[st] > 0) cal_add(cal, &cm, p, r->n, &w, st, s[k].stage[st]);
        double phase[3];
        phases_of(p, r->n, &s[k], phase);
        for (int ph = 0; ph < 3; ph++) cal_add_phase(cal, &cm, p, r->n, &w, ph, phase[ph]);
        cal_fit(cal, &cm);
        for (size_t j = 0; fed && j < r->nrow; j++)
            if (r->row[j].step == s[k].step + 1)
                for (int e = 0; e < EFF_N; e++)
                    *eff_diff = fmax(*eff_diff, fabs(cm.eff.f[e] / r->row[j].eff[e] - 1));
    }
    for (int k = 0; k < n; k++) {
        Workload w = work_of(&base, &s[k], fed);
        final[k] = gen_pred(&cm, &r->rec[s[k].plan_id], r->n, &w);
    }
    free(cal);
}

static void mean_err(const Step *s, int n, const double *pred, double *mean, int *cnt) {
    *mean = 0;
    *cnt = 0;
    for (int k = 0; k < n; k++)
        if (isfinite(pred[k]) && s[k].gen_s > 0) {
            *mean += fabs(pred[k] / s[k].gen_s - 1);
            (*cnt)++;
        }
    if (*cnt) *mean /= *cnt;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* m (nt traces' steps, n each) into out: every measured second the median over the traces; 0, or −1 when their
   steps or lengths differ */
static int median_steps(Step *const *m, int nt, int n, Step *out) {
    double v[64];
    for (int k = 0; k < n; k++) {
        out[k] = m[0][k];
        for (int t = 1; t < nt; t++)
            if (m[t][k].step != out[k].step || m[t][k].len != out[k].len || m[t][k].longest != out[k].longest)
                return -1;
        for (int x = -1; x < PLAN_NSTAGES; x++) {
            for (int t = 0; t < nt; t++) v[t] = x < 0 ? m[t][k].gen_s : m[t][k].stage[x];
            qsort(v, (size_t)nt, sizeof *v, cmp_double);
            double med = nt % 2 ? v[nt / 2] : 0.5 * (v[nt / 2 - 1] + v[nt / 2]);
            if (x < 0) out[k].gen_s = med;
            else out[k].stage[x] = med;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 65) {
        fprintf(stderr, "usage: gen_longest TRACE.h5 [MORE.h5 ...] (at most 64; runs of one deck with the live "
                "planner: [planner] policy = static)\n");
        return 2;
    }
    int nt = argc - 1, n = 0;
    static TraceFile tf[64];
    static Replay r[64];
    Step *each[64];
    double dfed = 0;
    char why[1024];
    for (int t = 0; t < nt; t++) {
        const char *path = argv[1 + t];
        if (trace_load(path, &tf[t]) != 0) return fail("%s", trace_read_error());
        if (!tf[t].has_signals || !tf[t].has_planner || !tf[t].t[TRACE_SIGNALS].n)
            return fail("%s: no /signals or /planner: run the deck with the live planner ([planner] policy = static)",
                        path);
        if (replay_build(&tf[t], &r[t], why, sizeof why) != 0) return fail("%s", why);
        each[t] = calloc(MAXSTEPS, sizeof *each[t]);
        int nk;
        if (read_steps(&tf[t], each[t], &nk) != 0) return fail("%s: /steps has no resp_longest (a trace from before it)", path);
        if (t > 0 && nk != n) return fail("%s: another number of steps than the first trace's", path);
        n = nk;
        for (int k = 0; k < n; k++)
            if (each[t][k].plan_id < 0 || each[t][k].plan_id >= r[t].nrec || !r[t].rec_ok[each[t][k].plan_id])
                return fail("%s: a step's plan is not in /plans", path);
        static double bx[MAXSTEPS], fx[MAXSTEPS];
        double d;
        evaluate(&r[t], each[t], n, 1, bx, fx, &d); /* the self-check: this trace alone */
        dfed = fmax(dfed, d);
    }
    static Step s[MAXSTEPS];
    if (median_steps(each, nt, n, s) != 0)
        return fail("%s: the traces' steps or lengths differ (not runs of one deck)", argv[2]);
    static double bf[MAXSTEPS], ff[MAXSTEPS], b0[MAXSTEPS], f0[MAXSTEPS];
    double d0;
    evaluate(&r[0], s, n, 1, bf, ff, &d0);
    evaluate(&r[0], s, n, 0, b0, f0, &d0);
    printf("# gen_longest %s%s: %d step(s) on %d rank(s)%s; gen phase, seconds%s\n", argv[1], nt > 1 ? " ..." : "", n,
           r[0].n, r[0].n > 1 ? " (phases from the stages' maxima over ranks: approximate)" : "",
           nt > 1 ? "; every measurement the median of the traces'" : "");
    printf("# traces: %d\n", nt);
    printf("# step resp_len resp_longest measured before_fed before_0 final_fed final_0\n");
    for (int k = 0; k < n; k++)
        printf("%lld %.2f %.0f %.4f %.4f %.4f %.4f %.4f\n", (long long)s[k].step, s[k].len, s[k].longest, s[k].gen_s,
               bf[k], b0[k], ff[k], f0[k]);
    double e[4];
    int c[4];
    mean_err(s, n, bf, &e[0], &c[0]);
    mean_err(s, n, b0, &e[1], &c[1]);
    mean_err(s, n, ff, &e[2], &c[2]);
    mean_err(s, n, f0, &e[3], &c[3]);
    printf("gen_longest.before.fed_mape: %.4f (%d steps)\n", e[0], c[0]);
    printf("gen_longest.before.zero_mape: %.4f (%d steps)\n", e[1], c[1]);
    printf("gen_longest.final.fed_mape: %.4f (%d steps)\n", e[2], c[2]);
    printf("gen_longest.final.zero_mape: %.4f (%d steps)\n", e[3], c[3]);
    printf("gen_longest.fed_calibration_vs_recorded: %.3g (largest relative difference of a factor, each trace alone)\n",
           dfed);
    for (int t = 0; t < nt; t++) {
        free_replay(&r[t]);
        free(each[t]);
    }
    return 0;
}
