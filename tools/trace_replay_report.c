/* trace_replay_report.c — nereus-trace replay: the recorded run replayed
 * with its own parameters and checked against what it recorded, the
 * what-if runs (other γ, threshold, the static policy), their predicted
 * totals and regrets; on a trace without /signals and /planner, the
 * admission rule over the recorded decisions (trace_replay.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_replay.h"

#pragma GCC diagnostic ignored "-Wformat-truncation"

static void print_decisions(const Run *u) {
    printf("  %6s %6s %10s %10s %10s %10s %7s %-7s %-8s  %s\n", "step", "urgent", "L_now s", "L_new s", "dL s", "C s",
           "H", "rule", "plan", "reason");
    for (int i = 0; i < u->ndec; i++) {
        const RDec *q = &u->dec[i];
        char plan[32];
        if (q->moved) snprintf(plan, sizeof plan, "%d -> %d", q->from_id, q->to_id);
        else snprintf(plan, sizeof plan, "%d%s", q->from_id, q->changed ? " (move refused)" : "");
        printf("  %6lld %6s %10.4f %10.4f %10.4f %10.4f %7.3g %-7s %-8s  %s\n", (long long)q->step,
               admit_path_name(q->urgent), q->L_now, q->L_new, q->L_now - q->L_new, q->C, q->H,
               q->admitted ? "admit" : "refuse", plan, q->reason);
    }
}

/* the fields of replayed decision q that differ from /decisions row k of de, as " name replayed vs recorded;"
 * items into what; returns their length (0: the same) */
static size_t decision_differs(const Table *de, size_t k, const RDec *q, char *what, size_t len) {
    size_t w = 0;
#define CHK(cond, ...) if (!(cond)) w += (size_t)snprintf(what + w, w < len ? len - w : 0, __VA_ARGS__)
#define REC(c) table_num(de, DECISIONS(c), k)
    CHK(q->step == (int64_t)REC(step), " step %lld vs %lld;", (long long)q->step, (long long)REC(step));
    CHK(q->urgent == (int)REC(urgent), " urgent %d vs %g;", q->urgent, REC(urgent));
    CHK(q->admitted == (REC(admitted) != 0), " admitted %d vs %g;", q->admitted, REC(admitted));
    CHK(q->from_id == (int)REC(from_plan), " from plan %d vs %g;", q->from_id, REC(from_plan));
    CHK(q->to_id == (int)REC(to_plan), " to plan %d vs %g;", q->to_id, REC(to_plan));
    CHK(same_num(q->L_now, REC(L_now_s)), " L_now %.17g vs %.17g;", q->L_now, REC(L_now_s));
    CHK(same_num(q->L_new, REC(L_new_s)), " L_new %.17g vs %.17g;", q->L_new, REC(L_new_s));
    CHK(same_num(q->L_now - q->L_new, REC(dL_s)), " dL %.17g vs %.17g;", q->L_now - q->L_new, REC(dL_s));
    CHK(same_num(q->C, REC(C_s)), " C %.17g vs %.17g;", q->C, REC(C_s));
    CHK(same_num(q->H, REC(H_steps)), " H %.17g vs %.17g;", q->H, REC(H_steps));
    CHK(strcmp(q->reason, table_str(de, DECISIONS(reason), k)) == 0, " reason '%s' vs '%s';", q->reason,
        table_str(de, DECISIONS(reason), k));
#undef REC
#undef CHK
    return w;
}

/* the replayed decisions of the recorded parameters against /decisions (and its refusal rows); returns the
 * differences */
static int compare_decisions(const TraceFile *tf, const Run *u) {
    const Table *de = &tf->rule;
    int diff = 0, bit = 0;
    size_t nd = de->n > (size_t)u->ndec ? de->n : (size_t)u->ndec;
    for (size_t k = 0; k < nd; k++) {
        if (k >= de->n) {
            printf("  DIFFERS: the replay decides at step %lld (%s), the run recorded no decision there\n",
                   (long long)u->dec[k].step, u->dec[k].reason);
            diff++;
            continue;
        }
        if (k >= (size_t)u->ndec) {
            printf("  DIFFERS: the run decided at step %lld (%s), the replay did not\n",
                   (long long)table_num(de, DECISIONS(step), k), table_str(de, DECISIONS(reason), k));
            diff++;
            continue;
        }
        const RDec *q = &u->dec[k];
        char what[512] = "";
        if (decision_differs(de, k, q, what, sizeof what)) {
            printf("  DIFFERS at decision %zu (step %lld): replayed vs recorded:%s\n", k, (long long)q->step, what);
            diff++;
        } else {
            bit += q->L_now == table_num(de, DECISIONS(L_now_s), k) && q->L_new == table_num(de, DECISIONS(L_new_s), k) &&
                   q->C == table_num(de, DECISIONS(C_s), k);
        }
    }
    /* a move the engine refused: a refusal row at that step in the recording, a refused move in the replay */
    const Table *rf = &tf->refusals;
    for (size_t k = 0; k < rf->n; k++) {
        int64_t s = (int64_t)table_num(rf, DECISIONS(step), k), seen = 0;
        for (int i = 0; i < u->ndec; i++) seen |= u->dec[i].step == s && u->dec[i].changed && !u->dec[i].moved;
        if (!seen) {
            printf("  DIFFERS: the run recorded a refused change of plan before step %lld (%s), the replay has no "
                   "refused move there\n", (long long)s, table_str(rf, DECISIONS(reason), k));
            diff++;
        }
    }
    if (!diff)
        printf("  reproduced: %zu of %zu recorded decision(s) — the same steps searched, the same admitted/refused, plan "
               "ids and reasons, L_now/L_new/dL/C/H equal (%d bit for bit)\n",
               de->n, de->n, bit);
    return diff;
}

/* the plans in force, step by step, against /steps; the plans' texts against /plans; returns the differences */
static int compare_plans(const Replay *r, const Run *u) {
    const Table *st = &r->tf->t[TRACE_STEPS], *pl = &r->tf->t[TRACE_PLANS];
    int pbad = 0, tbad = 0;
    for (size_t k = 0; k < r->nrow; k++)
        for (size_t j = 0; j < st->n; j++)
            if ((int64_t)table_num(st, STEPS(step), j) == r->row[k].step &&
                (int)table_num(st, STEPS(plan_id), j) != u->plan_at[k]) {
                if (!pbad)
                    printf("  DIFFERS: step %lld ran under plan %g, the replay has plan %d\n", (long long)r->row[k].step,
                           table_num(st, STEPS(plan_id), j), u->plan_at[k]);
                pbad++;
            }
    int base = r->nrow ? r->row[0].plan_id : 0;
    for (int i = 0; i < u->nplans; i++) {
        char text[16384];
        plan_format(&u->plans[i], text, sizeof text);
        for (size_t j = 0; j < pl->n; j++)
            if ((int)table_num(pl, PLANS(plan_id), j) == base + i && strcmp(text, table_str(pl, PLANS(text), j)) != 0) {
                if (!tbad) printf("  DIFFERS: plan %d of the replay is not /plans plan %d:\n%s", base + i, base + i, text);
                tbad++;
            }
    }
    if (!pbad && !tbad)
        printf("  plans: every step's plan id agrees with /steps, and the %d plan(s) format to the /plans text\n",
               u->nplans);
    return pbad + tbad;
}

/* the rule over the recorded decisions (traces without /signals) */
static int replay_rule(const TraceFile *tf, const double *gammas, int ng, double threshold) {
    const Table *de = &tf->rule;
    if (de->n == 0) {
        printf("replay: needs the planner's decisions (/decisions is empty in this trace)\n");
        return 0;
    }
    if (isfinite(threshold))
        printf("replay: --threshold %.3g: re-running the drift monitor needs /signals, which this trace does not "
               "hold; the recorded decisions are replayed as they were triggered\n",
               threshold);
    /* the recorded γ first: it must reproduce the recorded decisions */
    double g_rec = table_num(de, DECISIONS(gamma), 0);
    size_t rec_adm = 0;
    for (size_t k = 0; k < de->n; k++) rec_adm += table_num(de, DECISIONS(admitted), k) != 0;
    int nrun = ng + 1;
    for (int r = 0; r < nrun; r++) {
        double g = r == 0 ? g_rec : gammas[r - 1];
        size_t adm = 0, agree = 0;
        double cost = 0;
        printf("\ngamma %s%.3g:\n", r == 0 ? "(recorded) " : "", g);
        printf("  %8s %8s %10s %10s %10s %8s %9s  %s\n", "step", "urgent", "dL s", "C s", "H steps", "recorded",
               "replayed", "the rule (planner.h admit)");
        for (size_t k = 0; k < de->n; k++) {
            double Ln = table_num(de, DECISIONS(L_now_s), k), Lw = table_num(de, DECISIONS(L_new_s), k),
                   C = table_num(de, DECISIONS(C_s), k), H = table_num(de, DECISIONS(H_steps), k);
            double u = table_num(de, DECISIONS(urgent), k); /* the admission path (planner.h ADMIT_*) */
            int urgent = isfinite(u) ? (int)u : ADMIT_RULE, rec = table_num(de, DECISIONS(admitted), k) != 0;
            if (r == 0 && table_num(de, DECISIONS(gamma), k) != g_rec)
                g = table_num(de, DECISIONS(gamma), k); /* γ as each decision had it (and the rows after it) */
            char why[256];
            double fg = table_num(de, DECISIONS(foregone_s), k); /* NaN: no such column, or a refused switch */
            int now = admit(Ln, Lw, C, g, H, isfinite(fg) ? fg : 0, urgent, why, sizeof why);
            adm += now;
            agree += now == rec;
            if (now) cost += C;
            printf("  %8lld %8s %10.4f %10.4f %10.1f %8s %9s  %s\n", (long long)table_num(de, DECISIONS(step), k),
                   admit_path_name(urgent), Ln - Lw, C, H, rec ? "admit" : "refuse", now ? "admit" : "refuse", why);
        }
        printf("  admitted %zu of %zu (recorded %zu); %zu agree with the recording; predicted transition cost of the "
               "admitted: %.4f s\n",
               adm, de->n, rec_adm, agree, cost);
        if (r == 0)
            printf("  %s\n", agree == de->n ? "the recorded gamma reproduces every recorded decision"
                                            : "the recorded gamma does NOT reproduce the recorded decisions");
    }
    return 0;
}

/* the first lines: the tables' sizes, the refusals and the guard's moves back */
static void replay_intro(const TraceFile *tf) {
    const Table *de = &tf->rule, *sg = &tf->t[TRACE_SIGNALS], *rf = &tf->refusals, *rv = &tf->reverts;
    printf("replay %s: %zu recorded decision(s), %zu drift event(s), %zu transition(s), %zu /signals row(s)\n", tf->path,
           de->n, tf->t[TRACE_DRIFT].n, tf->t[TRACE_TRANSITIONS].n, sg->n);
    for (size_t k = 0; k < rf->n; k++)
        printf("  and a change of plan refused before step %lld: %s\n", (long long)table_num(rf, DECISIONS(step), k),
               table_str(rf, DECISIONS(reason), k));
    for (size_t k = 0; k < rv->n; k++)
        printf("  and a move back by the measure-and-revert guard before step %lld (taken as recorded: a measurement, "
               "not the controller): %s\n", (long long)table_num(rv, DECISIONS(step), k),
               table_str(rv, DECISIONS(reason), k));
}

/* the planner and signals it replays; init: the row of the initial placement (r->nrow: none) */
static void replay_setting(const Replay *r, size_t init) {
    const TracePlanner *pa = &r->tf->pa;
    printf("planner: policy %s, gamma %.3g, threshold %.3g, every_k %lld, warmup %lld, %lld steps, %d rank(s); machine: "
           "%s, %.1f GFLOP/s per rank, %.1f GB/s memory, links %.1f GB/s %.3g us, %lld rank(s) per node on %lld core(s)\n",
           pa->policy, pa->gamma, pa->threshold, (long long)pa->every_k, (long long)pa->warmup,
           (long long)pa->steps_total, r->n, pa->hw_name, pa->hw_flops * 1e-9, pa->hw_hbm * 1e-9, pa->hw_bw * 1e-9,
           pa->hw_lat * 1e6, (long long)pa->hw_rpn, (long long)pa->hw_cores);
    if (init < r->nrow)
        printf("signals: steps %lld-%lld, the initial placement before step %lld\n", (long long)r->row[0].step,
               (long long)r->row[r->nrow - 1].step, (long long)r->row[init].step);
    else
        printf("signals: steps %lld-%lld, no initial placement recorded (the run ended before warmup)\n",
               (long long)r->row[0].step, (long long)r->row[r->nrow - 1].step);
    if (!r->rho_recorded)
        printf("model: /signals does not record hw.rho_exp (the message-stretch exponent the calibration fits): "
               "inferred per step from pred_step_s (%d of %zu step(s) matched exactly)\n", r->rho_matched, r->nrow);
}

/* the cost model rebuilt: its prediction for the plan in force against the recorded one, every row */
static void replay_check_model(const Replay *r) {
    int mok = 0, mrows = 0;
    double mworst = 0;
    for (size_t k = 0; k < r->nrow; k++) {
        int pid = r->row[k].plan_id;
        if (pid < 0 || pid >= r->nrec || !r->rec_ok[pid]) continue;
        CostModel cm;
        Workload w;
        replay_model(r, &r->row[k], &cm, &w);
        StepCost sc;
        double p = cost_plan(&cm, &r->rec[pid], r->n, &w, &sc);
        mrows++;
        mok += same_num(p, r->row[k].pred);
        if (!same_num(p, r->row[k].pred) && mrows - mok <= 3)
            printf("model DIFFERS at step %lld (plan %d): recorded prediction %.17g s, rebuilt %.17g s\n",
                   (long long)r->row[k].step, pid, r->row[k].pred, p);
        if (isfinite(p) && r->row[k].pred != 0) mworst = fmax(mworst, fabs(p - r->row[k].pred) / fabs(r->row[k].pred));
    }
    printf("model: the rebuilt cost model gives the recorded prediction for the plan in force on %d of %d step(s)%s",
           mok, mrows, mok == mrows ? "\n" : "");
    if (mok != mrows)
        printf(" (largest relative difference %.3g): the replay cannot reproduce the run — this nereus-trace's cost model "
               "(src/planner/cost.c) is not the one the run used (the run's source: %s; uncommitted changes are not "
               "recorded), or an input of the model is missing from the trace\n",
               mworst, r->tf->commit);
}

/* the recorded parameters, which must give the recorded decisions, into rec */
static void replay_recorded(const Replay *r, int policy, Run *rec) {
    const TraceFile *tf = r->tf;
    const TracePlanner *pa = &tf->pa;
    const Table *de = &tf->rule, *rv = &tf->reverts, *tx = &tf->t[TRACE_TRANSITIONS];
    int64_t *refused = calloc(de->n + 1, sizeof *refused), *reverted = calloc(rv->n + 1, sizeof *reverted);
    RecordedMoves moves = {refused, reverted, 0, 0};
    for (size_t k = 0; k < de->n; k++) {
        if (table_num(de, DECISIONS(admitted), k) == 0 || table_num(de, DECISIONS(to_plan), k) < 0) continue;
        int64_t s = (int64_t)table_num(de, DECISIONS(step), k);
        /* a move that waited a step (adapt.h: the reason says so) came before the next step */
        int late = strstr(table_str(de, DECISIONS(reason), k), ADAPT_AHEAD_REASON) != NULL;
        if (!moved_at(tx, s + late)) refused[moves.nrefused++] = s; /* admitted, but the engine refused the move */
    }
    for (size_t k = 0; k < rv->n; k++) { /* moves back that happened (the engine may refuse one: no transition row) */
        int64_t s = (int64_t)table_num(rv, DECISIONS(step), k);
        if (moved_at(tx, s)) reverted[moves.nrevert++] = s;
    }
    memset(rec, 0, sizeof *rec);
    replay_run(r, policy, pa->gamma, pa->threshold, &moves, rec);
    printf("\nrecorded parameters (policy %s, gamma %.3g, threshold %.3g): %d decision(s), %d admitted, %d transition(s)\n",
           pa->policy, pa->gamma, pa->threshold, rec->ndec, rec->nadm, rec->ntx);
    print_decisions(rec);
    if (rec->stop[0]) printf("  the run stops: %s\n", rec->stop);
    int ndiff = compare_decisions(tf, rec);
    ndiff += compare_plans(r, rec);
    printf("  %s\n", ndiff ? "the recorded parameters do NOT reproduce the recorded run (above: where and how)"
                           : "the recorded parameters reproduce every recorded decision");
    free(refused);
    free(reverted);
}

/* runs[0] the static baseline, runs[1..nw] payback at each --gamma (default: the recorded one), all at thr */
static void replay_what_ifs(const Replay *r, const double *gammas, int ng, double thr, Run *runs, int nw) {
    const TracePlanner *pa = &r->tf->pa;
    Run *st = &runs[0];
    replay_run(r, ADAPT_STATIC, pa->gamma, thr, NULL, st);
    snprintf(st->name, sizeof st->name, "static");
    for (int i = 0; i < nw; i++) {
        Run *u = &runs[1 + i];
        double g = ng ? (double)(float)gammas[i] : pa->gamma;
        replay_run(r, ADAPT_PAYBACK, g, thr, NULL, u);
        snprintf(u->name, sizeof u->name, "payback gamma %.3g", g);
        printf("\n%s, threshold %.3g: %d decision(s), %d admitted, %d transition(s)\n", u->name, thr, u->ndec, u->nadm,
               u->ntx);
        print_decisions(u);
        if (u->stop[0]) printf("  the run stops: %s\n", u->stop);
    }
    printf("\nstatic (the initial placement kept; re-searched only on a pool change), threshold %.3g: %d decision(s), %d "
           "transition(s)\n", thr, st->ndec, st->ntx);
    print_decisions(st);
}

/* one row of the totals table: name, decisions, transitions, steps s, transitions s, against the static and the
 * recorded run (have_rec: the recorded run was priced, its total rtot) */
static void totals_row(const char *name, const char *dec, int ntx, double steps_s, double tx_s, double total,
                       const Run *st, int have_rec, double rtot, const char *tail) {
    char vr[32] = "-";
    if (have_rec) snprintf(vr, sizeof vr, "%+.3f", total - rtot);
    printf("  %-28s %5s %6d %10.3f %9.4f %10.3f %+12.3f %13s%s\n", name, dec, ntx, steps_s, tx_s, total,
           total - st->total, vr, tail);
}

/* the best single plan in hindsight among the plans any run used: the deck's plan until the initial placement,
 * that plan from there on (one transition), every step within the pool; its row of the totals */
static void best_fixed_plan(const Replay *r, size_t init, const Run *const *all, int na, const Run *st, int have_rec,
                            double rtot) {
    double best = INFINITY, best_steps = 0, best_c = 0;
    const PlanConfig *bp = NULL;
    for (int a = 0; a < na; a++)
        for (int i = 0; i < all[a]->nplans; i++) {
            const PlanConfig *p = &all[a]->plans[i];
            double t = 0, c = plan_same(p, &r->plan0) || init == r->nrow ? 0 : tx_price((void *)&r->px, &r->plan0, p);
            int ok = isfinite(c);
            for (size_t k = 0; k < r->nrow && ok; k++) {
                const PlanConfig *q = k < init ? &r->plan0 : p;
                for (int s2 = 0; s2 < PLAN_NSTAGES && ok; s2++)
                    for (int j = 0; j < q->stage[s2].nranks && ok; j++) {
                        int in = 0;
                        for (int m = 0; m < r->row[k].npool; m++) in |= r->row[k].pool[m] == q->stage[s2].ranks[j];
                        ok = in;
                    }
                CostModel cm;
                Workload w;
                replay_model(r, &r->row[k], &cm, &w);
                StepCost sc;
                double tk = cost_plan(&cm, q, r->n, &w, &sc);
                if (r->ran[k]) t += tk;
            }
            if (ok && t + c < best) {
                best = t + c;
                best_steps = t;
                best_c = c;
                bp = p;
            }
        }
    if (bp) totals_row("best fixed plan (hindsight)", "-", best_c > 0 || !plan_same(bp, &r->plan0), best_steps, best_c,
                       best, st, have_rec, rtot, "");
}

/* the predicted totals of every run, the best fixed plan, and the recorded run as measured */
static void replay_totals(const Replay *r, size_t init, const Run *rec, const Run *runs, int nw) {
    const TraceFile *tf = r->tf;
    const Run *st = &runs[0];
    double rs = 0, rt = 0;
    int rn = 0;
    char pwhy[512] = "";
    int have_rec = price_recorded(r, &rs, &rt, &rn, pwhy, sizeof pwhy) == 0;
    printf("\npredicted totals over the %d step(s) run of steps %lld-%lld (each step's calibrated model on the plan in "
           "force, plus the predicted transitions):\n", r->nran, (long long)r->row[0].step,
           (long long)r->row[r->nrow - 1].step);
    printf("  %-28s %5s %6s %10s %9s %10s %12s %13s\n", "run", "dec", "trans", "steps s", "trans s", "total s",
           "vs static s", "vs recorded s");
    double rtot = rs + rt;
    char dec[32];
    if (have_rec)
        printf("  %-28s %5zu %6d %10.3f %9.4f %10.3f %+12.3f %13s\n", "recorded run (as it ran)", tf->rule.n, rn, rs, rt,
               rtot, rtot - st->total, "0");
    else printf("  recorded run: not priced: %s\n", pwhy);
    snprintf(dec, sizeof dec, "%d", rec->ndec);
    totals_row("replay, recorded params", dec, rec->ntx, rec->steps_s, rec->tx_s, rec->total, st, have_rec, rtot, "");
    for (int i = 0; i <= nw; i++) {
        const Run *u = &runs[i == nw ? 0 : 1 + i];
        snprintf(dec, sizeof dec, "%d", u->ndec);
        totals_row(u->name, dec, u->ntx, u->steps_s, u->tx_s, u->total, st, have_rec, rtot,
                   u->stop[0] ? "  (stops: see above)" : "");
    }
    const Run *all[34];
    int na = 0;
    all[na++] = rec;
    for (int i = 0; i <= nw && na < 34; i++) all[na++] = &runs[i];
    best_fixed_plan(r, init, all, na, st, have_rec, rtot);
    const Table *sp = &tf->t[TRACE_STEPS], *tx = &tf->t[TRACE_TRANSITIONS];
    double ms = 0, mt = 0;
    for (size_t j = 0; j < sp->n; j++) ms += table_num(sp, STEPS(wall_s), j);
    for (size_t j = 0; j < tx->n; j++) mt += table_num(tx, TRANSITIONS(measured_s), j);
    printf("recorded run, measured: %zu step(s) %.3f s + %zu transition(s) %.4f s = %.3f s (/steps wall_s, /transitions "
           "measured_s)\n", sp->n, ms, tx->n, mt, ms + mt);
}

/* the controller re-run over /signals (r built); 0 */
static int replay_full(const Replay *r, const double *gammas, int ng, double threshold) {
    const TracePlanner *pa = &r->tf->pa;
    int rec_policy = adapt_policy_named(pa->policy);
    if (rec_policy < 0) {
        printf("replay: the recorded policy '%s' is not one the controller replays; not computed\n", pa->policy);
        return 0;
    }
    size_t init = r->nrow;
    for (size_t k = 0; k < r->nrow && init == r->nrow; k++)
        if (r->row[k].initial) init = k;
    replay_setting(r, init);
    replay_check_model(r);
    Run rec;
    replay_recorded(r, rec_policy, &rec);
    double thr = isfinite(threshold) ? (double)(float)threshold : pa->threshold;
    int nw = ng ? ng : 1;
    Run *runs = calloc((size_t)nw + 1, sizeof *runs);
    replay_what_ifs(r, gammas, ng, thr, runs, nw);
    replay_totals(r, init, &rec, runs, nw);
    if (nw >= 2) {
        int differ = 0;
        for (int i = 2; i <= nw; i++)
            differ |= !same_num(runs[i].total, runs[1].total) || runs[i].ntx != runs[1].ntx;
        if (!differ)
            printf("note: every gamma gives the same decisions and total on this trace (no admission it changes: every "
                   "searched candidate pays back at every gamma tried, or none is faster)\n");
    }
    printf("note: the what-if runs see the signals the recorded run measured (lengths, slowdowns, calibration); a run "
           "on other plans would have measured slightly different ones\n");
    for (int i = 0; i <= nw; i++) free_run(&runs[i]);
    free(runs);
    free_run(&rec);
    return 0;
}

int cmd_replay(const TraceFile *tf, const double *gammas, int ng, double threshold) {
    replay_intro(tf);
    char why[1024] = "";
    Replay r;
    int full = 0;
    if (!tf->has_signals) snprintf(why, sizeof why, "this trace has no /signals (written before the live planner)");
    else if (!tf->t[TRACE_SIGNALS].n) snprintf(why, sizeof why, "/signals is empty (the run had no live planner)");
    else if (!tf->has_planner) snprintf(why, sizeof why, "%s", tf->planner_missing);
    else if (replay_build(tf, &r, why, sizeof why) == 0) full = 1;
    else free_replay(&r);
    if (!full) {
        int rc = replay_rule(tf, gammas, ng, threshold);
        printf("\nreplay: the predicted total time and the regret against the best static plan and the recorded run "
               "need /signals and /planner (what the live planner saw and its cost model, step by step): %s; not "
               "computed\n", why);
        return rc;
    }
    int rc = replay_full(&r, gammas, ng, threshold);
    free_replay(&r);
    return rc;
}
