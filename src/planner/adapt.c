/* adapt.c — the planner's controller (adapt.h): drift → search → price →
 * rule, the same for the live run, the simulator and the replay. Pure. */
#include "nereus/adapt.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/util.h"

static const char *const policy_names[ADAPT_NPOLICIES] = {"static",  "verl",    "openrlhf",  "admit-all",
                                                          "every-k", "payback", "every-gain"};

const char *adapt_policy_name(int p) { return p >= 0 && p < ADAPT_NPOLICIES ? policy_names[p] : "?"; }

int adapt_policy_named(const char *name) {
    for (int p = 0; p < ADAPT_NPOLICIES; p++)
        if (strcmp(name, policy_names[p]) == 0) return p;
    return strcmp(name, "at-crossings") == 0 ? ADAPT_ADMIT_ALL : -1;
}

double adapt_eff_signal(const Observed *o) {
    double maxslow = 1;
    if (o->slow)
        for (int i = 0; i < o->npool; i++) maxslow = fmax(maxslow, o->slow[o->pool[i]]);
    return 1.0 / maxslow;
}

/* each rank's slowdown now, as the monitor's per-rank references */
static void ref_slow_reset(Adapt *a, const Observed *o) {
    for (int r = 0; r < a->c.nranks && r < PLAN_MAX_RANKS; r++) a->ref_slow[r] = o->slow ? o->slow[r] : 1;
}

/* the pool rank whose speed (1 / slowdown) moved most against its reference: 1 when that is more than the
   threshold (relative), with the rank and its speeds now and at the reference in d */
static int rank_moved(const Adapt *a, const Observed *o, AdaptDecision *d) {
    double most = 0;
    d->eff_rank = -1;
    for (int i = 0; i < o->npool; i++) {
        int r = o->pool[i];
        if (r < 0 || r >= PLAN_MAX_RANKS) continue;
        double now = o->slow ? o->slow[r] : 1, ref = a->ref_slow[r];
        double change = fabs(ref / now - 1);
        if (change > most) most = change, d->eff_rank = r, d->eff_rank_now = 1 / now, d->eff_rank_ref = 1 / ref;
    }
    return most > a->c.threshold;
}

int adapt_plan_within(const PlanConfig *p, const int *pool, int npool, int nranks) {
    unsigned char in[PLAN_MAX_RANKS];
    memset(in, 0, (size_t)nranks);
    for (int i = 0; i < npool; i++)
        if (pool[i] >= 0 && pool[i] < nranks) in[pool[i]] = 1;
    for (int s = 0; s < PLAN_NSTAGES; s++)
        for (int i = 0; i < p->stage[s].nranks; i++) {
            int r = p->stage[s].ranks[i];
            if (r < 0 || r >= nranks || !in[r]) return 0;
        }
    return 1;
}

/* the pool as a search map: NULL when it is ranks 0..n-1 (the search's identity) */
static const int *pool_map(const Observed *o) {
    for (int i = 0; i < o->npool; i++)
        if (o->pool[i] != i) return o->pool;
    return NULL;
}

/* ADAPT_WIDE: the plans the search finds for 2, 4 and 8 times w's longest responses on the whole pool, each
   priced at w; one of them replaces *out only when predicted faster by more than ADAPT_WIDE_MARGIN (a
   difference within the model's own error is a coin toss that costs a different plan's moves) */
static void search_wider(const CostModel *cm, const Workload *w, int nranks, const Observed *o, PlanConfig *out,
                         StepCost *sc) {
    PlanConfig *p = nr_xmalloc(sizeof *p);
    SearchStats st;
    char why[512];
    for (double f = 2; f <= 8; f *= 2) {
        Workload ww = *w;
        ww.resp_max = w->resp_max * f;
        StepCost c;
        if (plan_search_on(cm, o->npool, pool_map(o), nranks, &ww, p, &c, &st, why, sizeof why) != 0) break;
        cost_plan(cm, p, nranks, w, &c);
        if (c.fits && c.total < sc->total * (1 - ADAPT_WIDE_MARGIN)) *out = *p, *sc = c;
    }
    free(p);
}

int adapt_search(const CostModel *cm, const Workload *w, int policy, int nranks, const Observed *o, PlanConfig *out,
                 StepCost *sc, char *why, size_t len) {
    SearchStats st;
    int wide = policy & ADAPT_WIDE;
    if (policy & ADAPT_HALF)
        return plan_search_mode(cm, o->npool, pool_map(o), nranks, w, SEARCH_HALF, out, sc, &st, why, len);
    policy &= ~ADAPT_WIDE;
    if (policy == ADAPT_VERL || policy == ADAPT_OPENRLHF)
        return plan_search_mode(cm, o->npool, pool_map(o), nranks, w,
                                policy == ADAPT_VERL ? SEARCH_COLOCATED : SEARCH_DISAGGREGATED, out, sc, &st, why, len);
    int fast[PLAN_MAX_RANKS]; /* the pool without the ranks measured slow */
    int nf = 0;
    for (int i = 0; i < o->npool; i++)
        if (!o->slow || o->slow[o->pool[i]] <= 1.05) fast[nf++] = o->pool[i];
    PlanConfig p2;
    StepCost c2;
    char why2[512];
    int ok1 = plan_search_on(cm, o->npool, pool_map(o), nranks, w, out, sc, &st, why, len) == 0;
    int ok2 = nf < o->npool && nf > 0 && plan_search_on(cm, nf, fast, nranks, w, &p2, &c2, &st, why2, sizeof why2) == 0;
    if (!ok1 && !ok2) return -1;
    if (ok2 && (!ok1 || c2.total < sc->total)) {
        *out = p2;
        *sc = c2;
    }
    if (wide) search_wider(cm, w, nranks, o, out, sc);
    return 0;
}

/* The move cur → b priced as the rule sees it (adapt.h, "Moves that wait a step"): L_now the plan in force's
 * predicted step (∞: it cannot run one), L_b b's, can_wait 0 when the move is urgent. *ahead (may be NULL):
 * whether the move waits a step; *move (may be NULL): the move's own seconds. */
static double move_price(const Adapt *a, const PlanConfig *b, double L_now, double L_b, int can_wait, int *ahead,
                         double *move) {
    const AdaptConfig *c = &a->c;
    double C = c->tx_cost(c->tx_ctx, &a->cur, b), C_ahead = INFINITY, m_ahead = INFINITY;
    if (c->tx_setup && can_wait && isfinite(L_now) && isfinite(C)) {
        double S = c->tx_setup(c->tx_ctx, &a->cur, b);
        if (S > 0) {
            m_ahead = C - S + fmax(0, S - L_now);
            C_ahead = m_ahead + fmax(0, L_now - L_b);
        }
    }
    int w = C_ahead < C;
    if (ahead) *ahead = w;
    if (move) *move = w ? m_ahead : C;
    return w ? C_ahead : C;
}

/* Transition-aware choice (payback): the search's plan is the fastest, but a plan that keeps some of the
 * current plan's model-stages as they are may run almost as fast and move far less (no data, no new
 * communicators for those). Greedy, one model-stage at a time in stage order: the current plan's layout of
 * that stage goes back into the candidate when that lowers the cost over the horizon (H steps),
 * J = horizon·L + C, and the candidate still fits in memory (the search's workload) within the pool. On
 * return d->next, L_new, next_cost and C are the chosen plan's; returns how many model-stages were kept.
 * The horizon is H, the steps the plan is expected to stay, not γ·H (γ is the rule's margin). */
static int keep_stages(const Adapt *a, const CostModel *price, const Workload *w, const CostModel *search,
                       const Workload *sw, const Observed *o, double horizon, AdaptDecision *d) {
    const AdaptConfig *c = &a->c;
    double J = horizon * d->L_new + d->C;
    int kept = 0;
    for (int s = 0; s < PLAN_NSTAGES; s++) {
        if (plan_stage_same(&d->next.stage[s], &a->cur.stage[s])) continue;
        PlanConfig v = d->next;
        v.stage[s] = a->cur.stage[s];
        StepCost mem, t;
        if (!adapt_plan_within(&v, o->pool, o->npool, c->nranks)) continue;
        cost_plan(search, &v, c->nranks, sw, &mem);
        if (!mem.fits) continue;
        double L = cost_plan(price, &v, c->nranks, w, &t), move = 0;
        int ahead = 0;
        double C = plan_same(&v, &a->cur) ? 0 : move_price(a, &v, d->L_now, L, d->urgent != ADMIT_URGENT, &ahead, &move);
        if (!(horizon * L + C < J)) continue;
        J = horizon * L + C;
        d->next = v;
        d->L_new = L;
        d->next_cost = t;
        d->C = C;
        d->ahead = ahead;
        d->C_move = move;
        kept++;
    }
    return kept;
}

/* The search's margin priced (sw->resp_max above the step's own, w->resp_max: the simulator's memory for lengths
 * growing up to the next crossing). Holding that margin can cost a layout: where memory is tight, the plans that
 * fit longer responses are slower. The plan the search finds for the step's own lengths is taken instead when,
 * over H steps (drift_horizon), it costs less even with one more move to the margin's plan, the move longer
 * responses would force (the monitor's predicted out-of-memory); otherwise the margin stays. d->next and
 * next_cost are the margin's plan on entry and the chosen one on return; returns 1 when that is the one without
 * the margin. Where memory is tight and responses shrink, the margin's plan can be far slower than the plan for
 * the step's own lengths (tests/test_sim_fuzz.py finds such scenarios). */
static int margin_priced(const Adapt *a, int step, const CostModel *price, const Workload *w, const CostModel *search,
                         const Observed *o, double L_now, AdaptDecision *d) {
    const AdaptConfig *c = &a->c;
    PlanConfig p0;
    StepCost s0, t0, t1;
    char why[256];
    if (adapt_search(search, w, c->policy | (a->v.wide ? ADAPT_WIDE : 0), c->nranks, o, &p0, &s0, why, sizeof why) != 0 ||
        plan_same(&p0, &d->next))
        return 0;
    double H = drift_horizon_kind(&a->dm, step, c->steps_total, a->kind);
    double L0 = cost_plan(price, &p0, c->nranks, w, &t0), L1 = cost_plan(price, &d->next, c->nranks, w, &t1);
    int wait = d->urgent != ADMIT_URGENT;
    double C0 = plan_same(&p0, &a->cur) ? 0 : move_price(a, &p0, L_now, L0, wait, NULL, NULL);
    double C1 = plan_same(&d->next, &a->cur) ? 0 : move_price(a, &d->next, L_now, L1, wait, NULL, NULL);
    double Cf = c->tx_cost(c->tx_ctx, &p0, &d->next); /* forced by memory, later: at once */
    if (!(H * L0 + C0 + Cf < H * L1 + C1)) return 0;
    d->next = p0;
    d->next_cost = s0;
    return 1;
}

/* appends to the decision's one-line reason (printf-style), cut at its size */
static void reason_add(AdaptDecision *d, const char *fmt, ...) {
    size_t k = strlen(d->reason);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->reason + k, sizeof d->reason - k, fmt, ap);
    va_end(ap);
}

void adapt_init(Adapt *a, const AdaptConfig *c, const PlanConfig *start, const Observed *o) {
    memset(a, 0, sizeof *a);
    a->c = *c;
    a->cur = *start;
    a->v.wide = c->policy == ADAPT_PAYBACK; /* payback's searches look wider (ADAPT_WIDE) */
    drift_init(&a->dm, c->threshold, o->resp_len, adapt_eff_signal(o), o->npool);
    ref_slow_reset(a, o);
}

int adapt_step(Adapt *a, int step, const CostModel *price, const Workload *w, const CostModel *search,
               const Workload *sw, const Observed *o, AdaptDecision *d) {
    const AdaptConfig *c = &a->c;
    memset(d, 0, sizeof *d);
    d->step = step;
    d->len = o->resp_len;
    d->eff = adapt_eff_signal(o);
    int pool_changed = o->npool != a->dm.ref_pool, outside = !adapt_plan_within(&a->cur, o->pool, o->npool, c->nranks);
    if (a->refused_dL > 0) a->foregone += a->refused_dL; /* one more step run on the plan the rule kept */
    d->mask = drift_check(&a->dm, d->len, d->eff, o->npool, o->oom);
    int rank_cross = rank_moved(a, o, d);
    if (rank_cross) d->mask |= DRIFT_EFFICIENCY;
    int crossing = (d->mask & (DRIFT_LENGTH | DRIFT_EFFICIENCY)) != 0;
    /* a crossing where a rank's speed fell: its own horizon (how long slowdowns have lasted) */
    a->kind = rank_cross && d->eff_rank_now < d->eff_rank_ref ? DRIFT_SLOWED : DRIFT_OTHER;
    /* ADMIT_URGENT: the plan in force cannot stay (it holds ranks that left the pool, or is predicted out of
       memory): the move is forced, and only its target is chosen (the search's plan, keep_stages over H).
       ADMIT_POOL: a pool change the plan survives (ranks joined, or ranks it does not use left), searched
       at once; staying is allowed, so payback judges the move by the rule as at a crossing (docs/PLANNER.md,
       "Pool changes and the rule"). */
    d->urgent = outside || o->oom ? ADMIT_URGENT : pool_changed ? ADMIT_POOL : ADMIT_RULE;
    int at_once = d->urgent != ADMIT_RULE; /* replan without waiting for a threshold crossing */
    int want = 0;
    switch (c->policy) {
    case ADAPT_STATIC: case ADAPT_VERL: case ADAPT_OPENRLHF: want = at_once; break;
    case ADAPT_ADMIT_ALL: want = at_once || crossing; break;
    case ADAPT_PAYBACK: /* and rent-or-buy: the gains refused since the last move have reached its price */
        d->rent = a->refused_dL > 0 && a->foregone >= a->refused_C;
        want = at_once || crossing || d->rent;
        break;
    case ADAPT_EVERY_K: want = at_once || (step > 0 && c->every_k > 0 && step % c->every_k == 0); break;
    case ADAPT_EVERY_GAIN: want = 1; break;
    }
    if (!want) return 0;
    d->searched = 1;
    /* the search's workload may hold memory for longer responses than the step's (the simulator's margin up to
       the threshold above them, so that lengths growing to the next crossing still fit): where no plan holds
       that, a plan for the step's own lengths runs it, as the fixed baselines' would (a predicted out-of-memory
       replans at once should they outgrow it). Without it a pool that shrinks under tight memory would stop
       the adaptive policies where the fixed baselines run on. */
    int margin = sw != w && sw->resp_max > w->resp_max, cut = 0;
    int sp = c->policy | (a->v.wide ? ADAPT_WIDE : 0);
    if (adapt_search(search, sw, sp, c->nranks, o, &d->next, &d->next_cost, d->why, sizeof d->why) != 0) {
        cut = margin && adapt_search(search, w, sp, c->nranks, o, &d->next, &d->next_cost, d->why, sizeof d->why) == 0;
        if (!cut) {
            d->failed = 1;
            snprintf(d->reason, sizeof d->reason, "no plan fits the %d-rank pool", o->npool);
            return 0;
        }
    }
    StepCost now, nx;
    d->L_now = outside ? INFINITY : cost_plan(price, &a->cur, c->nranks, w, &now);
    int unmargined = margin && !cut && margin_priced(a, step, price, w, search, o, d->L_now, d);
    d->L_new = cost_plan(price, &d->next, c->nranks, w, &nx);
    d->next_cost = nx;
    int same = plan_same(&d->next, &a->cur);
    d->C_move = 0;
    d->C = same ? 0 : move_price(a, &d->next, d->L_now, d->L_new, d->urgent != ADMIT_URGENT, &d->ahead, &d->C_move);
    if (c->policy == ADAPT_PAYBACK) {
        d->H = drift_horizon_kind(&a->dm, step, c->steps_total, a->kind);
        double LB = d->L_new, CB = d->C; /* the search's plan */
        if (!same && !a->v.no_keep) { /* over H, the steps the plan is expected to stay (γ: the rule's margin) */
            d->kept = keep_stages(a, price, w, search, sw, o, d->H, d);
            same = plan_same(&d->next, &a->cur);
        }
        int all_kept = d->kept && same && LB < d->L_now;
        d->foregone = a->foregone;
        if (a->v.pool_free && d->urgent == ADMIT_POOL) { /* the study's variant: any faster plan, no rule */
            d->admitted = d->L_new < d->L_now;
            snprintf(d->reason, sizeof d->reason, "pool change: %s without the payback test (dL %.4g s/step, C %.4g s)",
                     d->admitted ? "faster, admitted" : "not faster, refused", d->L_now - d->L_new, d->C);
        } else {
            d->admitted = admit(d->L_now, d->L_new, d->C, c->gamma, d->H, a->foregone, d->urgent, d->reason,
                                sizeof d->reason);
        }
        if (all_kept) /* the search's plan was faster, but not by enough to pay for its move over H */
            reason_add(d, "; the search's plan, %.4g s/step faster for a %.4g s move, costs more over H %.3g steps "
                       "than it gains: every model-stage kept", d->L_now - LB, CB, d->H);
    } else {
        /* the fixed baselines take what a pool change brings (static: "again when the pool is back");
           admit-all, every-k and every-gain any faster plan, and any plan when urgent */
        int fixed = c->policy == ADAPT_STATIC || c->policy == ADAPT_VERL || c->policy == ADAPT_OPENRLHF;
        d->admitted = (fixed ? at_once : d->urgent == ADMIT_URGENT) || d->L_new < d->L_now;
        snprintf(d->reason, sizeof d->reason, "%s: %s (dL %.4g s/step, C %.4g s)", adapt_policy_name(c->policy),
                 d->urgent == ADMIT_URGENT ? "urgent, admitted" : fixed && at_once ? "pool change, admitted"
                 : d->admitted ? "faster, admitted" : "not faster, refused",
                 d->L_now - d->L_new, d->C);
    }
    if (unmargined)
        reason_add(d, "; searched for the step's responses (%.0f tokens), not for %.0f: faster by more over H than "
                   "the move longer ones would force", w->resp_max, sw->resp_max);
    if (cut)
        reason_add(d, "; no plan holds responses of %.0f tokens in this pool: searched for the step's %.0f",
                   sw->resp_max, w->resp_max);
    if (d->admitted && same) reason_add(d, "; the search kept the current plan");
    if (d->kept && !same && d->admitted)
        reason_add(d, "; %d model-stage(s) of the plan in force kept as they are (cheaper over H)", d->kept);
    d->changed = d->admitted && !same;
    if (!d->changed) d->ahead = 0;
    else if (d->ahead)
        reason_add(d, "; " ADAPT_AHEAD_REASON " (move %.4g s, the step's gain given up %.4g s)", d->C_move,
                   d->C - d->C_move);
    if (d->changed) a->cur = d->next;
    if (d->changed || !(d->L_now - d->L_new > 0)) { /* moved, or nothing faster: no gain stands refused */
        a->refused_dL = a->refused_C = a->foregone = 0;
    } else if (!d->admitted) { /* the gain refused now is what staying costs a step from here */
        a->refused_dL = d->L_now - d->L_new;
        a->refused_C = d->C;
    }
    if (crossing || at_once) {
        drift_reset_kind(&a->dm, step, d->len, d->eff, o->npool, a->kind);
        ref_slow_reset(a, o);
    }
    return d->changed;
}

int adapt_place(Adapt *a, const AdaptConfig *c, const PlanConfig *start, int step, const CostModel *cm,
                const Workload *w, const Observed *o, int urgent, AdaptDecision *d) {
    adapt_init(a, c, start, o);
    memset(d, 0, sizeof *d);
    d->step = step;
    d->searched = 1;
    d->len = o->resp_len;
    d->eff = adapt_eff_signal(o);
    d->mask = urgent ? DRIFT_POOL : 0;
    d->urgent = urgent;
    if (adapt_search(cm, w, c->policy, c->nranks, o, &d->next, &d->next_cost, d->why, sizeof d->why) != 0) {
        d->failed = 1;
        return 0;
    }
    StepCost now;
    d->L_now = cost_plan(cm, start, c->nranks, w, &now);
    d->L_new = d->next_cost.total;
    int same = plan_same(&d->next, start);
    d->C = d->C_move = same ? 0 : c->tx_cost(c->tx_ctx, start, &d->next); /* the initial placement: at once */
    d->admitted = d->urgent || d->L_new < d->L_now;
    d->changed = d->admitted && !same;
    snprintf(d->reason, sizeof d->reason, "initial placement: %s",
             same ? "the deck's plan is the best found" : d->admitted ? "faster, admitted" : "not faster, kept the deck's plan");
    if (d->changed) a->cur = d->next;
    return d->changed;
}

void adapt_revert(Adapt *a, const PlanConfig *cur) {
    a->cur = *cur;
    a->refused_dL = a->refused_C = a->foregone = 0; /* a move: no gain stands refused */
}

int adapt_guard(const AdaptGuard *g, double new_measured_s, double prev_pred_now, double margin, double *expect_s,
                char *reason, size_t len) {
    double expect = g->prev_ratio * prev_pred_now;
    *expect_s = expect;
    int ok = isfinite(expect) && expect > 0 && isfinite(new_measured_s);
    int revert = ok && new_measured_s > expect * (1 + margin);
    snprintf(reason, len, "measured %s: the new plan %.4g s/step, the old one %.4g (the model's %.4g x its measured / "
             "predicted %.3g before the move)%s %.4g x (1 + margin %.3g)%s", revert ? "revert" : "keep", new_measured_s,
             expect, prev_pred_now, g->prev_ratio, revert ? " >" : " <=", expect, margin,
             ok ? "" : "; nothing to compare with");
    return revert;
}
