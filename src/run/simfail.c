/* simfail.c — MODELLED failures in `bin/nereus --simulate` (issue 46; docs/PLANNER.md, "Failures"): the
 * failure lines of the policy table ([simulate] fail_rate) and the failure study ([simulate] fail_study = N):
 * N runs of payback with one failure each, halfway through steps spread evenly over the run, each recovered in
 * place (ULFM: the survivors' world, the interrupted step's lost part, the move of the lost state from replicas)
 * and priced against checkpoint-and-restart on the same run (sim.h, SimFailures); at fail_rate, what that is a
 * day on the deck's GPUs. Everything here is MODELLED and says so. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/run.h"
#include "nereus/sim.h"
#include "nereus/util.h"

/* the recovery's seconds and GPU-hours of one run, in place and by checkpoint-and-restart */
typedef struct FailCost {
    double inplace_s, restart_s, inplace_gpu_h, restart_gpu_h, move_s;
} FailCost;

static FailCost fail_cost(const SimResult *r) {
    return (FailCost){r->fail_lost_s + r->fail_move_s, r->restart_lost_s, r->fail_gpu_h, r->restart_gpu_h,
                      r->fail_move_s};
}

/* the mean step had each failure been recovered by checkpoint-and-restart instead (sim.h, SimResult) */
double sim_restart_mean_step_s(const SimResult *r, int steps) {
    return (r->total_s - r->fail_lost_s - r->fail_move_s + r->restart_lost_s) / steps;
}

void sim_fail_header(const SimScenario *sc) {
    const SimFailures *f = &sc->fail;
    double B, restart = sim_ckpt_restart_s(sc, sc->gpus, &B);
    printf("failures: MODELLED, %.3g per GPU-hour (Poisson over the job's GPU-hours, seed %llu; Llama 3's report: 419 "
           "in 54 days on 16,384 GPUs = 1.97e-5): each takes its node out of the pool for %.0f s\n", f->rate,
           f->seed, f->repair_s);
    printf("failures: in place (ULFM) = %.3g s to the survivors' world + the interrupted step's lost part + the move "
           "for the smaller pool; checkpoint-and-restart = the lost part + the steps since the last checkpoint (every "
           "%d) + %.1f s (%.0f GB written and read at %.0f GB/s, %.0f s relaunch, communicators)\n", f->detect_s,
           f->ckpt_every, restart, B / 1e9, SIM_CKPT_FS_BPS / 1e9, SIM_RESTART_S);
}

void sim_fail_lines(const char *policy, const SimResult *r, int steps) {
    printf("sim.%s.failures: %d\n", policy, r->failures);
    printf("sim.%s.fail_exposure_gpu_h: %.4f\n", policy, r->fail_exposure_gpu_h);
    printf("sim.%s.fail_inplace_gpu_h: %.4f\n", policy, r->fail_gpu_h);
    printf("sim.%s.fail_restart_gpu_h: %.4f\n", policy, r->restart_gpu_h);
    printf("sim.%s.fail_restart_mean_step_s: %.6f\n", policy, sim_restart_mean_step_s(r, steps));
}

void sim_fail_table(const SimResult *r, int n, int steps) {
    printf("\nMODELLED failures: each policy's run recovered in place (its mean step above), and the same failures "
           "recovered by checkpoint-and-restart instead\n");
    printf("%-10s %9s %18s %16s %15s %15s\n", "policy", "failures", "restart mean step", "restart / inplace",
           "in place GPU-h", "restart GPU-h");
    for (int p = 0; p < n; p++) {
        if (r[p].failed) continue;
        double rs = sim_restart_mean_step_s(&r[p], steps);
        printf("%-10s %9d %18.3f %16.4f %15.2f %15.2f\n", sim_policy_name(p), r[p].failures, rs,
               rs / r[p].mean_step_s, r[p].fail_gpu_h, r[p].restart_gpu_h);
    }
}

static void cost_stats(const FailCost *c, int n, size_t off, double *mean, double *lo, double *hi) {
    *mean = 0, *lo = INFINITY, *hi = -INFINITY;
    for (int i = 0; i < n; i++) {
        double v = *(const double *)((const char *)&c[i] + off);
        *mean += v / n;
        *lo = fmin(*lo, v), *hi = fmax(*hi, v);
    }
}

int sim_fail_study(const SimScenario *sc0, int n) {
    SimScenario *sc = nr_xmalloc(sizeof *sc);
    *sc = *sc0;
    sc->fail.rate = 0;
    FailCost *c = nr_xcalloc((size_t)n, sizeof *c);
    SimPolicy sp = {"payback", SIM_PAYBACK, sc->gamma, 0, 0, 0, 0, 0};
    SimResult base, r;
    char why[512];
    int rc = 0;
    sc->fail.single = 0;
    if (sim_run_as(sc, &sp, &base, why, sizeof why) != 0) {
        printf("failure study: payback cannot run the scenario without failures: %s\n", why);
        rc = 1;
    }
    printf("\nfailure study (MODELLED): payback, %d runs with one failure each, halfway through steps %d .. %d; "
           "without failures %.4f s a step\n", n, (int)(0.5 * sc->steps / n), (int)((n - 0.5) * sc->steps / n),
           base.mean_step_s);
    printf("%6s %12s %12s %12s %14s %14s\n", "step", "in place s", "its move s", "restart s",
           "in place GPU-h", "restart GPU-h");
    for (int i = 0; i < n && rc == 0; i++) {
        sc->fail.single = 1;
        sc->fail.at_step = (int)((i + 0.5) * sc->steps / n);
        if (sim_run_as(sc, &sp, &r, why, sizeof why) != 0 || r.failures != 1) {
            printf("failure study: the run failing at step %d did not finish: %s\n", sc->fail.at_step,
                   r.failures != 1 ? "no failure met" : why);
            rc = 1;
            break;
        }
        c[i] = fail_cost(&r);
        printf("%6d %12.2f %12.2f %12.2f %14.3f %14.3f\n", sc->fail.at_step, c[i].inplace_s, c[i].move_s,
               c[i].restart_s, c[i].inplace_gpu_h, c[i].restart_gpu_h);
    }
    if (rc == 0) {
        static const struct { const char *key; size_t off; } col[] = {
            {"inplace_s", offsetof(FailCost, inplace_s)}, {"inplace_move_s", offsetof(FailCost, move_s)},
            {"restart_s", offsetof(FailCost, restart_s)}, {"inplace_gpu_h", offsetof(FailCost, inplace_gpu_h)},
            {"restart_gpu_h", offsetof(FailCost, restart_gpu_h)},
        };
        double m[5], lo, hi;
        printf("sim.fail.runs: %d\n", n);
        for (int k = 0; k < 5; k++) {
            cost_stats(c, n, col[k].off, &m[k], &lo, &hi);
            printf("sim.fail.%s: %.4f\nsim.fail.%s_min: %.4f\nsim.fail.%s_max: %.4f\n", col[k].key, m[k], col[k].key,
                   lo, col[k].key, hi);
        }
        printf("a failure costs, by the mean of the %d: in place %.2f s (%.3f GPU-hours), checkpoint-and-restart "
               "%.2f s (%.3f GPU-hours): %.1fx\n", n, m[0], m[3], m[2], m[4], m[4] / m[3]);
        printf("sim.fail.restart_over_inplace: %.4f\n", m[4] / m[3]);
        const SimFailures *f = &sc0->fail;
        if (f->rate > 0) {
            double per_day = f->rate * sc->gpus * 24;
            printf("at %.3g failures per GPU-hour on %d GPUs: %.3f failures a day; lost a day: in place %.3f "
                   "GPU-hours, checkpoint-and-restart %.3f (MODELLED)\n", f->rate, sc->gpus, per_day, per_day * m[3],
                   per_day * m[4]);
            printf("sim.fail.per_day: %.6f\nsim.fail.inplace_gpu_h_per_day: %.4f\nsim.fail.restart_gpu_h_per_day: "
                   "%.4f\n", per_day, per_day * m[3], per_day * m[4]);
        }
    }
    printf("verify.status: %s\n", rc == 0 ? "pass" : "fail");
    free(c);
    free(sc);
    return rc;
}
