/* admit.c — the payback admission rule and the drift monitor (planner.h). Pure. */
#include "nereus/planner.h"

#include <math.h>
#include <stdio.h>

const char *admit_path_name(int path) { return path == ADMIT_RULE ? "no" : path == ADMIT_POOL ? "pool" : "yes"; }

int admit(double L_now, double L_new, double C, double gamma, double H, double foregone, int path, char *reason,
          size_t len) {
    double dL = L_now - L_new;
    if (path == ADMIT_POOL) { /* staying is an option: the rule as at a crossing, the reason says why it ran */
        int k = snprintf(reason, len, "pool change, the plan can stay: ");
        if (k < 0 || (size_t)k >= len) k = 0;
        return admit(L_now, L_new, C, gamma, H, foregone, ADMIT_RULE, reason + k, len - (size_t)k);
    }
    if (path != ADMIT_RULE) { /* ADMIT_URGENT, and any other value a trace of another version holds */
        snprintf(reason, len, "urgent (the plan holds ranks out of the pool, or is predicted out of memory): admitted "
                 "without the payback test (dL %.4g s/step, C %.4g s)", dL, C);
        return 1;
    }
    if (!(dL > 0)) {
        snprintf(reason, len, "refused: the new plan is not faster (dL %.4g s/step)", dL);
        return 0;
    }
    double payback = C / dL, limit = isinf(gamma) ? INFINITY : gamma * H; /* γ = ∞: any gain (even with H = 0) */
    if (payback <= limit) {
        snprintf(reason, len, "admitted: pays back in %.3g steps <= gamma %.3g x H %.3g = %.3g", payback, gamma, H, limit);
        return 1;
    }
    if (foregone > 0 && foregone >= C) {
        snprintf(reason, len, "admitted: pays back in %.3g steps > gamma %.3g x H %.3g = %.3g, but the gains refused "
                 "since the last move add up to %.4g s >= C %.4g s (rent-or-buy)",
                 payback, gamma, H, limit, foregone, C);
        return 1;
    }
    snprintf(reason, len, "refused: pays back in %.3g steps > gamma %.3g x H %.3g = %.3g%s", payback, gamma, H, limit,
             foregone > 0 ? " (gains refused so far add up to less than C)" : "");
    return 0;
}

void drift_init(DriftMonitor *d, double threshold, double len, double eff, int pool) {
    d->threshold = threshold;
    d->ref_len = len;
    d->ref_eff = eff;
    d->ref_pool = pool;
    d->last_cross = -1;
    d->gap_sum = 0;
    d->gaps = 0;
    d->last_slowed = 0;
    d->slowed_gap_sum = 0;
    d->slowed_gaps = 0;
}

static int moved(double now, double ref, double thr) {
    if (!(ref > 0)) return now > 0;
    return fabs(now - ref) / ref > thr;
}

/* The response length moved by more than a factor 1 + thr either way: grown past ref·(1 + thr) or shrunk
   below ref / (1 + thr). A factor, not the relative change (ref − now) / ref: that never exceeds 1, so with
   a threshold of 1 or more shrinking responses would never replan. */
static int len_moved(double now, double ref, double thr) {
    if (!(ref > 0)) return now > 0;
    if (!(now > 0)) return 1;
    return fmax(now / ref, ref / now) - 1 > thr;
}

int drift_check(const DriftMonitor *d, double len, double eff, int pool, int oom) {
    int m = DRIFT_NONE;
    if (pool != d->ref_pool) m |= DRIFT_POOL;
    if (oom) m |= DRIFT_OOM;
    if (len_moved(len, d->ref_len, d->threshold)) m |= DRIFT_LENGTH;
    if (moved(eff, d->ref_eff, d->threshold)) m |= DRIFT_EFFICIENCY;
    return m;
}

void drift_reset(DriftMonitor *d, int step, double len, double eff, int pool) {
    drift_reset_kind(d, step, len, eff, pool, DRIFT_OTHER);
}

void drift_reset_kind(DriftMonitor *d, int step, double len, double eff, int pool, int kind) {
    if (d->last_cross >= 0) {
        d->gap_sum += step - d->last_cross;
        d->gaps++;
        if (d->last_slowed) {
            d->slowed_gap_sum += step - d->last_cross;
            d->slowed_gaps++;
        }
    }
    d->last_slowed = kind == DRIFT_SLOWED;
    d->last_cross = step;
    d->ref_len = len;
    d->ref_eff = eff;
    d->ref_pool = pool;
}

/* the mean of n gaps summing to sum (the steps left when none), capped by the steps left */
static double mean_gap_capped(double sum, int n, int step, int steps_total) {
    double left = steps_total - step;
    if (left < 0) left = 0;
    double H = n > 0 ? sum / n : left;
    return H < left ? H : left;
}

double drift_horizon(const DriftMonitor *d, int step, int steps_total) {
    return mean_gap_capped(d->gap_sum, d->gaps, step, steps_total);
}

double drift_horizon_kind(const DriftMonitor *d, int step, int steps_total, int kind) {
    if (kind != DRIFT_SLOWED || d->slowed_gaps == 0) return drift_horizon(d, step, steps_total);
    return mean_gap_capped(d->slowed_gap_sum, d->slowed_gaps, step, steps_total);
}
