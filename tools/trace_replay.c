/* trace_replay.c — the live planner's controller re-run offline over a
 * trace's recorded signals (trace_replay.h): its inputs rebuilt from the
 * trace, each replayed run's decisions, plans and predicted times, and the
 * recorded run priced the same way.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/deck.h" /* the stored deck back into a Config */
#include "nereus/task.h" /* the prompt length and vocabulary, as run.c has them */
#include "trace_replay.h"

#pragma GCC diagnostic ignored "-Wformat-truncation"

/* "0-3,5" into ranks (each below max); returns the count or −1 */
static int parse_ranks(const char *s, int *out, int max) {
    int n = 0;
    while (*s) {
        char *e;
        long a = strtol(s, &e, 10), b = a;
        if (e == s) return -1;
        s = e;
        if (*s == '-') {
            b = strtol(s + 1, &e, 10);
            if (e == s + 1) return -1;
            s = e;
        }
        for (long r = a; r <= b; r++) {
            if (n >= max || r < 0 || r >= max) return -1;
            out[n++] = (int)r;
        }
        if (*s == ',') s++;
        else if (*s) return -1;
    }
    return n;
}

/* one plan_format text back into a PlanConfig (layouts and ranks; src from "(deck" / "(default") */
static int parse_plan_text(const char *text, PlanConfig *p) {
    memset(p, 0, sizeof *p);
    snprintf(p->fill, sizeof p->fill, "auto");
    int seen = 0;
    for (const char *l = text; *l;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        char line[8192];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), l);
        l += len + (e ? 1 : 0);
        char *sp = strchr(line, ' '), *rk = strstr(line, "  ranks "), *par = strstr(line, "  (");
        if (sp && !rk && strstr(line, " none  (not in the stage set")) { /* a critic-free plan's critic stage */
            int id = plan_stage_find(line, (size_t)(sp - line));
            if (id < 0) return -1;
            memset(&p->stage[id], 0, sizeof p->stage[id]);
            p->stage[id].src = PLAN_SRC_ABSENT;
            seen |= 1 << id;
            continue;
        }
        if (!sp || !rk) continue;
        int id = plan_stage_find(line, (size_t)(sp - line));
        if (id < 0) return -1;
        char *rl = rk + 8, *re = strchr(rl, ' ');
        char spec[8192];
        snprintf(spec, sizeof spec, "%.*s @ %.*s", (int)(rk - sp), sp, re ? (int)(re - rl) : (int)strlen(rl), rl);
        char why[256];
        if (plan_stage_parse(spec, strlen(spec), &p->stage[id], why, sizeof why) != 0) return -1;
        p->stage[id].src = par && strncmp(par + 3, "default", 7) == 0 ? PLAN_SRC_DEFAULT : PLAN_SRC_DECK;
        seen |= 1 << id;
    }
    return seen == (1 << PLAN_NSTAGES) - 1 ? 0 : -1;
}

void free_replay(Replay *r) {
    for (size_t k = 0; k < r->nrow; k++) {
        free(r->row[k].pool);
        free(r->row[k].slow);
    }
    free(r->row);
    free(r->ran);
    free(r->rec);
    free(r->rec_ok);
}

/* the deck stored in the trace, the models, the transition pricer, the starting plan and the machine model */
static int replay_inputs(const TraceFile *tf, Replay *r, char *why, size_t len) {
    const TracePlanner *pa = &tf->pa;
    if (!tf->deck) return snprintf(why, len, "the trace has no readable /deck: %s", tf->deck_why), -1;
    if (deck_parse_string("the trace's /deck", tf->deck, strlen(tf->deck), &r->cfg, NULL, 1) != 0)
        return snprintf(why, len, "the deck stored in the trace does not parse"), -1;
    const Config *cfg = &r->cfg;
    r->n = (int)pa->nranks;
    if (r->n < 1 || r->n > PLAN_MAX_RANKS) return snprintf(why, len, "/planner nranks = %d", r->n), -1;
    /* the models, prompt and sequence capacities as run.c and job.c make them */
    TaskSet ts;
    char w2[512];
    if (task_parse(&ts, cfg->task.names, cfg->task.digits, (uint64_t)cfg->run.seed, w2, sizeof w2) != 0)
        return snprintf(why, len, "the deck's [task]: %s", w2), -1;
    JobShape sh;
    job_shape_of(cfg, &ts, &sh);
    r->P = sh.P;
    r->have_rm = sh.have_rm;
    r->ac = sh.ac;
    r->cc = sh.cc;
    r->px = (TxPricer){&r->cfg, r->ac, r->cc, r->have_rm, sh.Tgen, sh.Tsft, r->n, {{0}, 0, 0}, pa->tx_link,
                       pa->tx_copy, pa->hw_cores > 0 && pa->hw_rpn > pa->hw_cores, NULL};
    r->plan0 = cfg->plan;
    PlanLimits lim = job_plan_limits(cfg, r->n);
    PlanError perr;
    if (plan_resolve(&r->plan0, &lim, &perr) != 0)
        return snprintf(why, len, "the deck's plan does not resolve on %d ranks: %s", r->n, perr.msg), -1;
    /* the machine model (planner_live.c live_init: both link kinds alike) */
    HwModel *hw = &r->hw;
    snprintf(hw->name, sizeof hw->name, "%s", pa->hw_name);
    hw->flops = pa->hw_flops;
    hw->mem = pa->hw_mem;
    hw->hbm = pa->hw_hbm;
    hw->ranks_per_node = (int)pa->hw_rpn;
    hw->bw[0] = hw->bw[1] = pa->hw_bw;
    hw->lat[0] = hw->lat[1] = pa->hw_lat;
    hw->op_s = pa->hw_op_s;
    hw->cores = (int)pa->hw_cores;
    return 0;
}

/* /signals row k into x; eff, rho and psc its columns eff, rho_exp and phase_scale (the last two may be absent) */
static int signal_row(const Replay *r, size_t k, const Col *eff, const Col *rho, const Col *psc, SigRow *x, char *why,
                      size_t len) {
    const Table *sg = &r->tf->t[TRACE_SIGNALS];
    x->step = (int64_t)table_num(sg, SIGNALS(step), k);
    x->plan_id = (int)table_num(sg, SIGNALS(plan_id), k);
    x->initial = table_num(sg, SIGNALS(initial), k) != 0;
    x->npool = (int)table_num(sg, SIGNALS(npool), k);
    x->oom = table_num(sg, SIGNALS(oom), k) != 0;
    x->resp_len = table_num(sg, SIGNALS(resp_len), k);
    double longest = table_num(sg, SIGNALS(resp_longest), k); /* NaN when absent: priced as the mean, as then */
    x->resp_longest = isfinite(longest) ? longest : 0;
    x->eff_signal = table_num(sg, SIGNALS(eff_signal), k);
    x->pred = table_num(sg, SIGNALS(pred_step_s), k);
    x->overhead = table_num(sg, SIGNALS(overhead_s), k);
    memcpy(x->eff, eff->f + k * EFF_N, sizeof x->eff);
    x->rho_exp = r->rho_recorded ? rho->f[k] : 0;
    for (int ph = 0; ph < TRACE_PHASES; ph++) x->phase_scale[ph] = psc ? psc->f[k * TRACE_PHASES + ph] : 1;
    x->pool = calloc((size_t)r->n, sizeof *x->pool);
    x->slow = calloc((size_t)r->n, sizeof *x->slow);
    const char *pool = table_str(sg, SIGNALS(pool), k), *slow = table_str(sg, SIGNALS(slow), k);
    if (parse_ranks(pool, x->pool, r->n) != x->npool)
        return snprintf(why, len, "/signals row %zu: pool '%s' is not %d ranks", k, pool, x->npool), -1;
    for (int i = 0; i < r->n; i++) x->slow[i] = 1;
    for (const char *s = slow; *s;) {
        char *e;
        long rk = strtol(s, &e, 10);
        if (e == s || *e != ':' || rk < 0 || rk >= r->n)
            return snprintf(why, len, "/signals row %zu: slow '%s' is not rank:factor,...", k, slow), -1;
        x->slow[rk] = strtod(e + 1, &e);
        s = *e == ',' ? e + 1 : e;
    }
    return 0;
}

/* every /signals row, and which of their steps finished (a /steps row) */
static int signal_rows(Replay *r, char *why, size_t len) {
    const Table *sg = &r->tf->t[TRACE_SIGNALS];
    const Col *eff = table_col(sg, SIGNALS(eff));
    if (!eff || eff->cls != C_VEC) return snprintf(why, len, "/signals has no column eff of reals"), -1;
    if (eff->w != EFF_N)
        return snprintf(why, len,
                        "/signals eff holds %d efficiency factors, this nereus-trace's cost model has %d (planner.h "
                        "EFF_N): the trace was written by another version of the cost model",
                        eff->w, EFF_N), -1;
    const Col *rho = table_col(sg, SIGNALS(rho_exp));
    r->rho_recorded = rho && rho->cls == C_FLT;
    const Col *psc = table_col(sg, SIGNALS(phase_scale));
    if (psc && (psc->cls != C_VEC || psc->w != TRACE_PHASES))
        return snprintf(why, len, "/signals phase_scale is not %d reals a row", TRACE_PHASES), -1;
    r->row = calloc(sg->n, sizeof *r->row);
    r->nrow = sg->n;
    for (size_t k = 0; k < sg->n; k++) {
        if (signal_row(r, k, eff, rho, psc, &r->row[k], why, len) != 0) return -1;
        if (k && r->row[k].step <= r->row[k - 1].step)
            return snprintf(why, len, "/signals steps are not increasing at row %zu", k), -1;
    }
    r->ran = calloc(sg->n + 1, sizeof *r->ran);
    const Table *stp = &r->tf->t[TRACE_STEPS];
    for (size_t k = 0; k < sg->n; k++) {
        for (size_t j = 0; j < stp->n && !r->ran[k]; j++)
            r->ran[k] = (int64_t)table_num(stp, STEPS(step), j) == r->row[k].step;
        r->nran += r->ran[k];
    }
    return 0;
}

/* the recorded plans: /plans text parsed back, each stage within this job's ranks and the model's degrees */
static void recorded_plans(Replay *r) {
    const Config *cfg = &r->cfg;
    PlanLimits lim = job_plan_limits(cfg, r->n);
    PlanError perr;
    const Table *pl = &r->tf->t[TRACE_PLANS];
    for (size_t k = 0; k < pl->n; k++) r->nrec = fmax(r->nrec, table_num(pl, PLANS(plan_id), k) + 1);
    r->rec = calloc((size_t)r->nrec + 1, sizeof *r->rec);
    r->rec_ok = calloc((size_t)r->nrec + 1, sizeof *r->rec_ok);
    for (size_t k = 0; k < pl->n; k++) {
        int id = (int)table_num(pl, PLANS(plan_id), k);
        if (id < 0 || id >= r->nrec) continue;
        r->rec_ok[id] = parse_plan_text(table_str(pl, PLANS(text), k), &r->rec[id]) == 0;
        for (int i = 0; i < PLAN_NSTAGES && r->rec_ok[id]; i++)
            r->rec_ok[id] = plan_validate_stage(&r->rec[id].stage[i], i, &lim, &perr) == 0;
    }
    /* the resolved deck writes every stage out, so the parse marks them all "deck"; the job's plan had the
     * default plan's stages marked "default" (plan_format's "(default; ..."), and the controller compares plans
     * byte for byte: each stage's origin as /plans plan 0 shows it */
    if (r->nrec > 0 && r->rec_ok[0])
        for (int i = 0; i < PLAN_NSTAGES; i++)
            if (plan_stage_same(&r->plan0.stage[i], &r->rec[0].stage[i])) r->plan0.stage[i].src = r->rec[0].stage[i].src;
}

static void infer_rho(Replay *r);

int replay_build(const TraceFile *tf, Replay *r, char *why, size_t len) {
    memset(r, 0, sizeof *r);
    r->tf = tf;
    if (replay_inputs(tf, r, why, len) != 0 || signal_rows(r, why, len) != 0) return -1;
    recorded_plans(r);
    if (!r->rho_recorded) infer_rho(r);
    return 0;
}

void replay_model(const Replay *r, const SigRow *x, CostModel *cm, Workload *w) {
    memset(cm, 0, sizeof *cm);
    cm->hw = r->hw;
    memcpy(cm->eff.f, x->eff, sizeof cm->eff.f);
    cm->actor = shape_of_config(&r->ac, "actor");
    cm->critic = shape_of_config(&r->cc, "critic");
    cm->have_rm = r->have_rm;
    cm->no_critic = strcmp(r->cfg.ppo.algorithm, "grpo") == 0;
    cm->headroom = r->tf->pa.headroom;
    cm->slow = x->slow;
    cost_set_staleness(cm, r->cfg.planner.max_staleness, r->cfg.ppo.max_staleness); /* the run's K, as it priced */
    cm->overhead_s = x->overhead;
    cm->hw.rho_exp = x->rho_exp;
    memcpy(cm->phase_scale, x->phase_scale, sizeof cm->phase_scale);
    const Config *c = &r->cfg;
    *w = (Workload){c->ppo.batch, c->ppo.minibatch, c->ppo.epochs, r->P, x->resp_len, c->ppo.max_response,
                    x->resp_longest};
}

/* hw.rho_exp, the exponent of the message stretch that cal_fit (cost.c) picks from a grid, when /signals does not
 * record it: per row the value (the previous row's first, then the grid's) whose prediction for the plan in force
 * is the recorded pred_step_s exactly; the previous one where none does or several do */
static void infer_rho(Replay *r) {
    static const double grid[] = {1, 1.25, 1.5, 1.75, 2, 2.5, 3}; /* cost.c cal_fit's */
    double prev = 0;
    for (size_t k = 0; k < r->nrow; k++) {
        SigRow *x = &r->row[k];
        int pid = x->plan_id, found = 0;
        x->rho_exp = prev;
        if (pid >= 0 && pid < r->nrec && r->rec_ok[pid]) {
            for (int g = -1; g < (int)(sizeof grid / sizeof grid[0]) && !found; g++) {
                x->rho_exp = g < 0 ? prev : grid[g];
                CostModel cm;
                Workload w;
                replay_model(r, x, &cm, &w);
                StepCost sc;
                found = cost_plan(&cm, &r->rec[pid], r->n, &w, &sc) == x->pred;
            }
            if (!found) x->rho_exp = prev;
        }
        r->rho_matched += found;
        prev = x->rho_exp;
    }
}

/* /transitions row j into the job's transition calibration, as job_transition added it in the run */
static void calib_add_row(TxCalib *c, const Table *tx, size_t j) {
    tx_calib_add(c, table_num(tx, TRANSITIONS(predicted_s), j), table_num(tx, TRANSITIONS(measured_s), j));
}

/* the state of one replayed run as it goes over the rows */
typedef struct RunState {
    PlanConfig cur, prev;    /* the plan in force; the plan the last move left (the guard's old plan) */
    int pid;                 /* the id of the plan in force */
    int started, prev_np;    /* the initial placement is done; the pool's size at the row before */
    Workload w0;             /* the initial placement's workload (the static policy keeps it) */
    Adapt *ad;
    AdaptDecision *d;
    TxPricer px;             /* as the run priced transitions: the engine's estimate scaled by what the recorded
                                run's transitions before the decision measured against it (txprice.h, TxCalib) */
    PlanConfig *kept_at;     /* the plan px.kept (the communicators the run keeps) was last brought up to */
    int ahead;               /* a move decided at the row before waits for this one (AdaptDecision.ahead) */
    PlanConfig ahead_plan;   /* where it goes */
    double ahead_C;          /* its predicted seconds (the move's own) */
    const Table *tx;         /* the recorded /transitions, and the next of its rows not yet in px.calib */
    size_t txi;
} RunState;

/* the recorded transitions into px.calib: those before `step`, and the one at `step` to plan `to` where to >= 0
   (a move decided a step ahead runs, and calibrates, before that step's decision: live_decide) */
static void calib_through(RunState *st, int64_t step, int to) {
    for (; st->txi < st->tx->n; st->txi++) {
        int64_t s = (int64_t)table_num(st->tx, TRANSITIONS(step), st->txi);
        if (s > step || (s == step && (int)table_num(st->tx, TRANSITIONS(to_plan), st->txi) != to)) break;
        calib_add_row(&st->px.calib, st->tx, st->txi);
    }
}

/* the run moves to next (its cost added by the caller) */
static void run_move(Run *u, RunState *st, const PlanConfig *next) {
    st->prev = st->cur;
    st->cur = *next;
    st->pid++;
    u->plans[u->nplans++] = st->cur;
    u->ntx++;
}

/* a decision the controller took at row x (is_init: the initial placement) into u; the move, unless refused */
static void run_decided(Run *u, RunState *st, const SigRow *x, int is_init, const RecordedMoves *moves) {
    const AdaptDecision *d = st->d;
    RDec *q = &u->dec[u->ndec++];
    *q = (RDec){x->step, is_init, d->urgent, d->admitted, d->changed, 0, 0, st->pid, d->changed ? st->pid + 1 : -1,
                d->L_now, d->L_new, d->C, d->H, ""};
    snprintf(q->reason, sizeof q->reason, "%s", d->reason);
    u->nadm += d->admitted;
    if (!d->changed) return;
    int refused = !isfinite(d->C);
    for (int i = 0; moves && i < moves->nrefused; i++) refused |= moves->refused_at[i] == x->step;
    if (refused) {
        adapt_revert(st->ad, &st->cur); /* the engine refused the move: the run stays (live_decide) */
        return;
    }
    q->moved = 1;
    if (d->ahead) { /* the row's step runs on the plan in force; the move comes before the next (live_decide) */
        st->ahead = 1;
        st->ahead_plan = d->next;
        st->ahead_C = d->C_move;
        return;
    }
    run_move(u, st, &d->next);
    u->tx_s += d->C;
}

/* the controller at row x, as planner_live.c live_decide runs it; 0, or −1 when the run cannot go on (u->stop) */
static int run_row(const Replay *r, const AdaptConfig *ac, const SigRow *x, CostModel *cm, Workload *w,
                   const RecordedMoves *moves, RunState *st, Run *u) {
    Observed o = {x->resp_len, x->npool, x->pool, x->slow, 0};
    StepCost now;
    cost_plan(cm, &st->cur, r->n, w, &now);
    o.oom = !now.fits;
    int pool_changed = x->npool != st->prev_np, act = 0, is_init = 0;
    st->prev_np = x->npool;
    AdaptDecision *d = st->d;
    memset(d, 0, sizeof *d);
    if (st->ahead) { /* the move decided at the row before, unless ranks it needs left the pool (live_decide) */
        st->ahead = 0;
        if (adapt_plan_within(&st->ahead_plan, x->pool, x->npool, r->n)) {
            run_move(u, st, &st->ahead_plan);
            u->tx_s += st->ahead_C;
            calib_through(st, x->step, st->pid);
        } else {
            adapt_revert(st->ad, &st->cur);
        }
        cost_plan(cm, &st->cur, r->n, w, &now);
        o.oom = !now.fits;
    }
    int reverted = 0;
    for (int i = 0; moves && i < moves->nrevert && st->started; i++) reverted |= moves->revert_at[i] == x->step;
    if (reverted) { /* the recorded run's guard moved back here (a measurement: taken as recorded) */
        PlanConfig back = st->prev;
        run_move(u, st, &back);
        u->tx_s += tx_price((void *)&st->px, &st->prev, &st->cur);
        adapt_revert(st->ad, &st->cur);
    } else if (!st->started && x->initial) { /* the initial placement */
        adapt_place(st->ad, ac, &st->cur, (int)x->step, cm, w, &o, pool_changed, d);
        st->w0 = *w;
        st->started = act = is_init = 1;
    } else if (st->started) {
        adapt_step(st->ad, (int)x->step, cm, w, cm, u->policy == ADAPT_STATIC ? &st->w0 : w, &o, d);
        act = d->searched;
    }
    if (act && d->failed) {
        if (!adapt_plan_within(&st->cur, x->pool, x->npool, r->n)) {
            snprintf(u->stop, sizeof u->stop, "before step %lld: ranks left the pool and no plan without them fits (%s)",
                     (long long)x->step, d->why);
            return -1;
        }
    } else if (act) {
        run_decided(u, st, x, is_init, moves);
    }
    return 0;
}

void replay_run(const Replay *r, int policy, double gamma, double threshold, const RecordedMoves *moves, Run *u) {
    const TracePlanner *pa = &r->tf->pa;
    u->policy = policy;
    u->gamma = gamma;
    u->threshold = threshold;
    u->dec = calloc(r->nrow + 1, sizeof *u->dec);
    u->plan_at = calloc(r->nrow + 1, sizeof *u->plan_at);
    u->plans = calloc(r->nrow + 2, sizeof *u->plans);
    RunState st = {r->plan0, r->plan0, r->nrow ? r->row[0].plan_id : 0, 0, r->n, {0}, calloc(1, sizeof *st.ad),
                   calloc(1, sizeof *st.d), r->px, malloc(sizeof *st.kept_at), 0, r->plan0, 0,
                   &r->tf->t[TRACE_TRANSITIONS], 0};
    u->plans[0] = st.cur;
    u->nplans = 1;
    st.px.kept = calloc(1, sizeof *st.px.kept); /* the communicators this run keeps, as the job kept them */
    if (!st.px.kept || !st.kept_at) {
        snprintf(u->stop, sizeof u->stop, "out of memory");
        free(st.px.kept), free(st.kept_at), free(st.ad), free(st.d);
        return;
    }
    *st.kept_at = st.cur;
    AdaptConfig ac = {policy, gamma, threshold, (int)pa->every_k, (int)pa->steps_total, r->n, tx_price,
                      (void *)&st.px, tx_price_setup}; /* as the run (unless it ran with NEREUS_TX_PREBUILD=0) */
    for (size_t k = 0; k < r->nrow; k++) {
        const SigRow *x = &r->row[k];
        calib_through(&st, x->step, -1);
        CostModel cm;
        Workload w;
        replay_model(r, x, &cm, &w);
        if (run_row(r, &ac, x, &cm, &w, moves, &st, u) != 0) break;
        plan_kept_follow(st.px.kept, st.px.cfg->transition.keep_comms, st.kept_at, &st.cur); /* the communicators kept now */
        StepCost sc;
        double t = cost_plan(&cm, &st.cur, r->n, &w, &sc);
        if (r->ran[k]) u->steps_s += t;
        u->plan_at[k] = st.pid;
    }
    u->total = u->steps_s + u->tx_s;
    free(st.px.kept);
    free(st.kept_at);
    free(st.ad);
    free(st.d);
}

void free_run(Run *u) {
    free(u->dec);
    free(u->plan_at);
    free(u->plans);
}

int same_num(double a, double b) {
    if (a == b || (isnan(a) && isnan(b))) return 1;
    return isfinite(a) && isfinite(b) && fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

/* the recorded run priced as the replays are: each step's model on the plan /steps says it ran under, and
 * tx_price of each recorded transition; the measured total from /steps and /transitions */
int price_recorded(const Replay *r, double *steps_s, double *tx_s, int *ntx, char *why, size_t len) {
    const TraceFile *tf = r->tf;
    const Table *st = &tf->t[TRACE_STEPS], *tx = &tf->t[TRACE_TRANSITIONS];
    *steps_s = *tx_s = 0;
    *ntx = 0;
    for (size_t k = 0; k < r->nrow; k++) {
        int pid = -1;
        for (size_t j = 0; j < st->n; j++)
            if ((int64_t)table_num(st, STEPS(step), j) == r->row[k].step) pid = (int)table_num(st, STEPS(plan_id), j);
        if (pid < 0) continue; /* the step did not finish (a killed run): not counted in any total */
        if (pid >= r->nrec || !r->rec_ok[pid]) return snprintf(why, len, "/plans text of plan %d does not parse", pid), -1;
        CostModel cm;
        Workload w;
        replay_model(r, &r->row[k], &cm, &w);
        StepCost sc;
        *steps_s += cost_plan(&cm, &r->rec[pid], r->n, &w, &sc);
    }
    TxPricer px = r->px; /* each priced with the calibration of the transitions before it, as the run did, and
                            with the communicators it kept */
    px.kept = calloc(1, sizeof *px.kept);
    if (!px.kept) return snprintf(why, len, "out of memory"), -1;
    for (size_t j = 0; j < tx->n; j++) {
        int a = (int)table_num(tx, TRANSITIONS(from_plan), j), b = (int)table_num(tx, TRANSITIONS(to_plan), j);
        if (a < 0 || b < 0 || a >= r->nrec || b >= r->nrec || !r->rec_ok[a] || !r->rec_ok[b]) {
            free(px.kept);
            return snprintf(why, len, "/transitions row %zu: plans %d -> %d not in /plans", j, a, b), -1;
        }
        double C = tx_price((void *)&px, &r->rec[a], &r->rec[b]);
        /* a move its decision made wait a step (adapt.h): priced as the controller priced it, the set-up the step
           covered (the decision's L_now) left out */
        const Table *de = &tf->rule;
        int64_t s = (int64_t)table_num(tx, TRANSITIONS(step), j);
        for (size_t k = 0; k < de->n; k++)
            if ((int64_t)table_num(de, DECISIONS(step), k) == s - 1 && (int)table_num(de, DECISIONS(to_plan), k) == b &&
                strstr(table_str(de, DECISIONS(reason), k), ADAPT_AHEAD_REASON)) {
                double S = tx_price_setup((void *)&px, &r->rec[a], &r->rec[b]), Ln = table_num(de, DECISIONS(L_now_s), k);
                C = C - S + fmax(0, S - Ln);
            }
        *tx_s += C;
        tx_kept_switch(&px, &r->rec[a], &r->rec[b]);
        calib_add_row(&px.calib, tx, j);
        (*ntx)++;
    }
    free(px.kept);
    return 0;
}

int moved_at(const Table *tx, int64_t step) {
    for (size_t j = 0; j < tx->n; j++)
        if ((int64_t)table_num(tx, TRANSITIONS(step), j) == step) return 1;
    return 0;
}

