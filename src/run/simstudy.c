/* simstudy.c — the admission study (issue #34) behind `bin/nereus --simulate DECK` with [simulate] seeds ≥ 1:
 * every study policy over N paired seeds of the MODELLED noise (sim.h, SimNoise: per-plan model error,
 * per-step noise, moves that cost other than their price, a warm-up after each move, the measure-and-revert
 * guard), each seed's draws the same for every policy. Prints each policy's mean step, moves, transition
 * share and regret to the oracle as mean ± spread over the seeds, the rule's own effect (payback against
 * itself with γ = ∞ on the same searches), and one `sim.POLICY.METRIC: VALUE` line per figure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/run.h"
#include "nereus/sim.h"
#include "nereus/util.h"

/* the study's policies: the baselines, payback, payback's variants (its own effect, the γ sweep, the search not
   widened), every-gain with payback's widened search, the oracle (γ 0: the deck's; wide 0: the policy's own) */
static const SimPolicy study_policies[] = {
    {"static", SIM_STATIC, 0, 0, 0, 0},
    {"every-gain", SIM_EVERY_GAIN, 0, 0, 0, 0},
    {"at-crossings", SIM_ADMIT_ALL, 0, 0, 0, 0},
    {"every-k", SIM_EVERY_K, 0, 0, 0, 0},
    {"payback", SIM_PAYBACK, 0, 0, 0, 0},
    {"payback-inf", SIM_PAYBACK, INFINITY, 0, 0, 0},
    {"payback-nokeep", SIM_PAYBACK, 0, 1, 0, 0},
    {"payback-inf-nokeep", SIM_PAYBACK, INFINITY, 1, 0, 0},
    {"payback-poolfree", SIM_PAYBACK, 0, 0, 1, 0},
    {"payback-g0.25", SIM_PAYBACK, 0.25, 0, 0, 0},
    {"payback-g1", SIM_PAYBACK, 1, 0, 0, 0},
    {"payback-g2", SIM_PAYBACK, 2, 0, 0, 0},
    {"payback-narrow", SIM_PAYBACK, 0, 0, 0, -1},
    {"every-gain-wide", SIM_EVERY_GAIN, 0, 0, 0, 1},
    {"oracle", SIM_ORACLE, 0, 0, 0, 0},
};
#define NSTUDY ((int)(sizeof study_policies / sizeof study_policies[0]))
enum { ST_PAYBACK = 4, ST_ORACLE = NSTUDY - 1 };

/* mean and sample standard deviation of the finite values of v[0..n) (count in *k) */
static void stats(const double *v, int n, double *mean, double *sd, int *k) {
    double s = 0, s2 = 0;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) s += v[i], m++;
    *mean = m ? s / m : NAN;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) s2 += (v[i] - *mean) * (v[i] - *mean);
    *sd = m > 1 ? sqrt(s2 / (m - 1)) : 0;
    if (k) *k = m;
}

/* per policy and seed: mean step, moves, transition share, regret to the oracle (%), reverts */
typedef struct StudyCells {
    int n;
    double *step, *moves, *share, *regret, *reverts, *refused;
} StudyCells;

static double *cell(double *a, const StudyCells *c, int p, int s) { return &a[p * c->n + s]; }

/* runs every policy on every seed into c; prints a policy that fails on a seed (a result) */
static void study_run(const SimScenario *base, int seed0, StudyCells *c) {
    for (int s = 0; s < c->n; s++) {
        SimScenario *sc = nr_xmalloc(sizeof *sc);
        *sc = *base;
        sc->noise.seed = (unsigned long long)seed0 + (unsigned long long)s;
        for (int p = 0; p < NSTUDY; p++) {
            SimPolicy sp = study_policies[p];
            if (sp.gamma == 0) sp.gamma = sc->gamma;
            SimResult r;
            char why[512];
            int bad = sim_run_as(sc, &sp, &r, why, sizeof why) != 0;
            if (bad) printf("seed %d: %s failed: %s\n", seed0 + s, sp.name, why);
            *cell(c->step, c, p, s) = bad ? NAN : r.mean_step_s;
            *cell(c->moves, c, p, s) = bad ? NAN : r.transitions;
            *cell(c->share, c, p, s) = bad ? NAN : 100 * r.transition_s / r.total_s;
            *cell(c->reverts, c, p, s) = bad ? NAN : r.reverts;
            *cell(c->refused, c, p, s) = bad ? NAN : r.refused;
        }
        for (int p = 0; p < NSTUDY; p++)
            *cell(c->regret, c, p, s) = 100 * (*cell(c->step, c, p, s) / *cell(c->step, c, ST_ORACLE, s) - 1);
        free(sc);
    }
}

/* paired: a's mean step against b's, % lower (positive: a faster), per seed, into v */
static void paired(const StudyCells *c, int a, int b, double *v) {
    for (int s = 0; s < c->n; s++) v[s] = 100 * (1 - *cell(c->step, c, a, s) / *cell(c->step, c, b, s));
}

static void study_print(const StudyCells *c) {
    printf("\n%-19s %19s %14s %9s %16s %8s %8s %6s\n", "policy", "mean step s", "moves", "share %", "regret % to oracle",
           "reverts", "refused", "seeds");
    double m[6], sd[6];
    int k = 0;
    for (int p = 0; p < NSTUDY; p++) {
        double *cols[6] = {c->step, c->moves, c->share, c->regret, c->reverts, c->refused};
        for (int j = 0; j < 6; j++) stats(cols[j] + p * c->n, c->n, &m[j], &sd[j], j == 0 ? &k : NULL);
        printf("%-19s %10.3f +- %5.3f %7.1f +- %4.1f %9.4f %8.3f +- %5.3f %8.1f %8.1f %3d/%d\n", study_policies[p].name,
               m[0], sd[0], m[1], sd[1], m[2], m[3], sd[3], m[4], m[5], k, c->n);
    }
    printf("\n");
    for (int p = 0; p < NSTUDY; p++) {
        const char *n = study_policies[p].name;
        double *cols[5] = {c->step, c->moves, c->share, c->regret, c->reverts};
        const char *names[5] = {"mean_step_s", "moves", "transition_share_pct", "regret_pct", "reverts"};
        stats(c->step + p * c->n, c->n, &m[0], &sd[0], &k);
        printf("sim.%s.failed: %d\n", n, c->n - k);
        for (int j = 0; j < 5; j++) {
            stats(cols[j] + p * c->n, c->n, &m[j], &sd[j], NULL);
            printf("sim.%s.%s: %.6f\nsim.%s.%s_sd: %.6f\n", n, names[j], m[j], n, names[j], sd[j]);
        }
    }
}

static int policy_index(const char *name) {
    for (int p = 0; p < NSTUDY; p++)
        if (strcmp(study_policies[p].name, name) == 0) return p;
    return ST_PAYBACK;
}

/* payback against every-gain and against itself with γ = ∞ (the rule's own effect), and against the best
   non-oracle policy (by mean over the seeds) */
static void study_compare(const StudyCells *c) {
    double *v = nr_xmalloc((size_t)c->n * sizeof *v), m, sd;
    int k;
    static const struct { const char *other, *key, *what; } vs[] = {
        {"every-gain", "vs_every_gain_pct", "every-gain (search every step, take any predicted gain)"},
        {"payback-inf", "rule_effect_pct", "payback-inf (the same searches, gamma = inf: the rule's own effect)"},
        {"payback-narrow", "wide_effect_pct", "payback-narrow (the search not widened: ADAPT_WIDE's effect)"},
        {"every-gain-wide", "vs_every_gain_wide_pct", "every-gain-wide (every-gain with payback's widened search)"},
        {"at-crossings", "vs_at_crossings_pct", "at-crossings (admit-all: any gain at a crossing)"},
        {"every-k", "vs_every_k_pct", "every-k"},
    };
    printf("\n");
    for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) {
        paired(c, ST_PAYBACK, policy_index(vs[i].other), v);
        stats(v, c->n, &m, &sd, &k);
        printf("payback against %s: %+.3f%% +- %.3f%% faster (%d paired seeds)\n", vs[i].what, m, sd, k);
        printf("sim.payback.%s: %.6f\nsim.payback.%s_sd: %.6f\n", vs[i].key, m, vs[i].key, sd);
    }
    int best = -1;
    double bm = INFINITY;
    for (int p = 0; p < NSTUDY; p++) {
        if (p == ST_ORACLE || p == ST_PAYBACK) continue;
        stats(c->step + p * c->n, c->n, &m, &sd, &k);
        if (k == c->n && m < bm) bm = m, best = p;
    }
    if (best >= 0) {
        paired(c, ST_PAYBACK, best, v);
        stats(v, c->n, &m, &sd, &k);
        printf("payback against the best other non-oracle policy, %s: %+.3f%% +- %.3f%% faster\n",
               study_policies[best].name, m, sd);
        printf("sim.best_other: %s\nsim.payback.vs_best_other_pct: %.6f\n", study_policies[best].name, m);
    }
    free(v);
}

int sim_study(const SimScenario *base, int seed0, int nseeds) {
    const SimNoise *n = &base->noise;
    printf("\nADMISSION STUDY (MODELLED noise, seeded): %d paired seeds from %d; per-plan model error sigma %.4g, "
           "step noise sigma %.4g, moves cost %.3g-%.3gx their price, warm-up %.3g of the first step after a move, "
           "guard margin %.3g over %d steps\n", nseeds, seed0, n->model_error, n->step_noise, n->tx_min, n->tx_max,
           n->warmup, n->guard_margin, n->guard_steps);
    printf("sim.seeds: %d\nsim.seed: %d\nsim.model_error: %g\nsim.step_noise: %g\nsim.tx_factor_min: %g\n"
           "sim.tx_factor_max: %g\nsim.warmup: %g\nsim.guard_margin: %g\n", nseeds, seed0, n->model_error,
           n->step_noise, n->tx_min, n->tx_max, n->warmup, n->guard_margin);
    StudyCells c = {nseeds, NULL, NULL, NULL, NULL, NULL, NULL};
    double *all = nr_xcalloc((size_t)6 * NSTUDY * nseeds, sizeof *all);
    c.step = all, c.moves = all + NSTUDY * nseeds, c.share = all + 2 * NSTUDY * nseeds;
    c.regret = all + 3 * NSTUDY * nseeds, c.reverts = all + 4 * NSTUDY * nseeds, c.refused = all + 5 * NSTUDY * nseeds;
    study_run(base, seed0, &c);
    study_print(&c);
    study_compare(&c);
    int k = 0;
    double m, sd;
    stats(c.step + ST_PAYBACK * nseeds, nseeds, &m, &sd, &k);
    free(all);
    printf("verify.status: %s\n", k == nseeds ? "pass" : "fail");
    return k == nseeds ? 0 : 1;
}
