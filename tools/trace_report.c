/* trace_report.c — the report commands of bin/nereus-trace on a trace read
 * into memory (trace_tool.h): summary, plans, transitions, csv and compare,
 * and schema, the trace format printed from its table (trace_schema.c) as
 * the tables of docs/TRACE.md.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_tool.h"

/* ---- statistics ---------------------------------------------------------------- */

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(const double *x, size_t n) {
    if (!n) return NAN;
    double *c = malloc(n * sizeof *c);
    memcpy(c, x, n * sizeof *c);
    qsort(c, n, sizeof *c, cmp_d);
    double m = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
    free(c);
    return m;
}

typedef struct Stats {
    size_t steps;
    int64_t first, last;
    double step_s, tokens, mean_s, median_s, phase[4], other;
    /* per model-stage: rows, Σ seconds, Σ flops, Σ MFU, Σ peak, ranks (of the last row) */
    size_t st_rows[NSTAGE];
    double st_s[NSTAGE], st_flops[NSTAGE], st_mfu[NSTAGE], st_peak[NSTAGE];
    int st_ranks[NSTAGE];
    size_t ntx;
    double tx_s, tx_pred, runtime;
    const char *runtime_what;
} Stats;

static const char *phase_col[4] = {STEPS(gen_s), STEPS(inf_s), STEPS(train_s), STEPS(sync_s)};

static void stats(const TraceFile *tf, Stats *s) {
    memset(s, 0, sizeof *s);
    const Table *st = &tf->t[TRACE_STEPS], *sg = &tf->t[TRACE_STAGES], *tx = &tf->t[TRACE_TRANSITIONS];
    s->steps = st->n;
    double *w = calloc(st->n ? st->n : 1, sizeof *w);
    for (size_t k = 0; k < st->n; k++) {
        w[k] = table_num(st, STEPS(wall_s), k);
        s->step_s += w[k];
        s->tokens += table_num(st, STEPS(tokens), k);
        for (int p = 0; p < 4; p++) s->phase[p] += table_num(st, phase_col[p], k);
    }
    if (st->n) {
        s->first = (int64_t)table_num(st, STEPS(step), 0);
        s->last = (int64_t)table_num(st, STEPS(step), st->n - 1);
        s->mean_s = s->step_s / st->n;
        s->median_s = median(w, st->n);
    }
    free(w);
    s->other = s->step_s - (s->phase[0] + s->phase[1] + s->phase[2] + s->phase[3]);
    for (size_t k = 0; k < sg->n; k++) {
        int id = (int)table_num(sg, STAGES(stage), k);
        if (id < 0 || id >= NSTAGE) continue;
        s->st_rows[id]++;
        s->st_s[id] += table_num(sg, STAGES(seconds), k);
        s->st_flops[id] += table_num(sg, STAGES(flops), k);
        s->st_mfu[id] += table_num(sg, STAGES(mfu), k);
        s->st_peak[id] += table_num(sg, STAGES(peak_gflops), k);
        s->st_ranks[id] = (int)table_num(sg, STAGES(nranks), k);
    }
    s->ntx = tx->n;
    for (size_t k = 0; k < tx->n; k++) {
        s->tx_s += table_num(tx, TRANSITIONS(measured_s), k);
        s->tx_pred += table_num(tx, TRANSITIONS(predicted_s), k);
    }
    if (tf->complete && tf->ppo_s > 0) {
        s->runtime = tf->ppo_s;
        s->runtime_what = "the PPO loop's wall time";
    } else { /* a trace without /complete: from the first step's (or transition's) start to the last step's end */
        double lo = INFINITY, hi = 0;
        for (size_t k = 0; k < st->n; k++) {
            lo = fmin(lo, table_num(st, STEPS(t_start_s), k));
            hi = fmax(hi, table_num(st, STEPS(t_start_s), k) + table_num(st, STEPS(wall_s), k));
        }
        for (size_t k = 0; k < tx->n; k++) lo = fmin(lo, table_num(tx, TRANSITIONS(t_start_s), k));
        s->runtime = st->n ? hi - lo : 0;
        s->runtime_what = "first to last recorded step (no /complete)";
    }
}

/* a model-stage's MFU over the run, percent: Σ FLOPs / Σ seconds against its mean peak, at most 100 */
static double run_mfu(const Stats *s, int id) {
    if (!s->st_rows[id] || s->st_s[id] <= 0) return NAN;
    double gf = s->st_flops[id] / s->st_s[id] * 1e-9, pk = s->st_peak[id] / s->st_rows[id];
    return pk > 0 ? 100 * fmin(1.0, gf / pk) : NAN;
}

static void print_header(const TraceFile *tf) {
    printf("trace %s: run \"%s\", %d rank(s), backend %s, started %s, source %s\n", tf->path, tf->run_name, tf->ranks,
           tf->backend, tf->started, tf->commit);
    if (strcmp(tf->algorithm, "grpo") == 0)
        printf("algorithm: grpo, %d responses per prompt; no critic (five model-stages)\n", tf->group_size);
    else printf("algorithm: %s\n", tf->algorithm);
    if (tf->complete) printf("status: complete (%s), PPO loop %.3f s\n", tf->status, tf->ppo_s);
    else
        printf("status: NOT complete (no /complete: the run crashed, was killed, or is still running); "
               "the tables hold every step flushed\n");
}

/* summary: the steps, their tokens and phases */
static void summary_steps(const Stats *s) {
    printf("steps: %zu (steps %lld-%lld), %.3f s in steps: mean %.4f s, median %.4f s per step\n", s->steps,
           (long long)s->first, (long long)s->last, s->step_s, s->mean_s, s->median_s);
    printf("tokens: %.0f, %.0f tokens/s over the steps\n", s->tokens, s->step_s > 0 ? s->tokens / s->step_s : 0);
    printf("\nphases (seconds per step, max over ranks):\n");
    printf("  %-14s %10s %10s %8s\n", "phase", "total s", "mean s", "share");
    const char *pn[4] = {"gen", "inf", "train", "sync"};
    for (int p = 0; p < 4; p++)
        printf("  %-14s %10.4f %10.4f %7.1f%%\n", pn[p], s->phase[p], s->phase[p] / s->steps,
               s->step_s > 0 ? 100 * s->phase[p] / s->step_s : 0);
    printf("  %-14s %10.4f %10.4f %7.1f%%\n", "wall - phases", s->other, s->other / s->steps,
           s->step_s > 0 ? 100 * s->other / s->step_s : 0);
    if (s->other < 0)
        printf("  (below 0: each phase is its maximum over the ranks, and the maxima come from different ranks)\n");
}

/* summary: the model-stages, and the counters (every int64 column of /stages the schema does not list) */
static void summary_stages(const TraceFile *tf, const Stats *s) {
    printf("\nmodel-stages (seconds = max over the stage's ranks; stages on disjoint ranks overlap):\n");
    printf("  %-14s %6s %10s %8s %10s %10s %8s\n", "model-stage", "ranks", "mean s", "of step", "GFLOP/s",
           "peak GF/s", "MFU");
    for (int id = 0; id < NSTAGE; id++) {
        if (!s->st_rows[id]) continue;
        double ms = s->st_s[id] / s->st_rows[id], gf = s->st_s[id] > 0 ? s->st_flops[id] / s->st_s[id] * 1e-9 : 0;
        printf("  %-14s %6d %10.4f %7.1f%% %10.2f %10.1f %7.1f%%\n", tf->stage_names[id], s->st_ranks[id], ms,
               s->mean_s > 0 ? 100 * ms / s->mean_s : 0, gf, s->st_peak[id] / s->st_rows[id], run_mfu(s, id));
    }
    const Table *sg = &tf->t[TRACE_STAGES];
    int first = 1;
    for (int c = 0; c < sg->ncol; c++) {
        const Col *col = &sg->col[c];
        if (col->cls != C_INT || trace_column_named(&trace_tables[TRACE_STAGES], col->name)) continue;
        if (first) printf("\ncounters (mean per step, summed over the stage's ranks):\n");
        first = 0;
        printf("  %-14s", col->name);
        for (int id = 0; id < NSTAGE; id++) {
            double sum = 0;
            size_t k0 = 0;
            for (size_t k = 0; k < sg->n; k++)
                if (table_num(sg, STAGES(stage), k) == id) {
                    sum += (double)col->i[k];
                    k0++;
                }
            if (k0) printf(" %s %.3g", tf->stage_names[id], sum / k0);
        }
        printf("\n");
    }
    if (first)
        printf("\ncounters: no counter columns in this trace; the run said: %s\n",
               tf->counters[0] ? tf->counters : "(nothing)");
    else if (tf->counters[0]) printf("  the run said: %s\n", tf->counters);
}

/* summary: the transitions, drift events, decisions, refusals and moves back */
static void summary_events(const TraceFile *tf, const Stats *s) {
    printf("\ntransitions: %zu, %.4f s measured (%.4f s predicted), %.2f%% of the runtime (%.3f s, %s)\n", s->ntx,
           s->tx_s, s->tx_pred, s->runtime > 0 ? 100 * s->tx_s / s->runtime : 0, s->runtime, s->runtime_what);
    const Table *tx = &tf->t[TRACE_TRANSITIONS];
    for (size_t k = 0; k < tx->n; k++)
        printf("  before step %lld: plan %d -> %d, %d model-stage(s), moved %.2f MiB (minimum %.2f MiB), "
               "predicted %.4f s, measured %.4f s\n",
               (long long)table_num(tx, TRANSITIONS(step), k), (int)table_num(tx, TRANSITIONS(from_plan), k),
               (int)table_num(tx, TRANSITIONS(to_plan), k), (int)table_num(tx, TRANSITIONS(nchanges), k),
               table_num(tx, TRANSITIONS(bytes_moved), k) / 1048576.0,
               table_num(tx, TRANSITIONS(bytes_min), k) / 1048576.0, table_num(tx, TRANSITIONS(predicted_s), k),
               table_num(tx, TRANSITIONS(measured_s), k));
    const Table *dr = &tf->t[TRACE_DRIFT];
    if (!dr->n) printf("drift events: none recorded\n");
    else printf("drift events: %zu\n", dr->n);
    for (size_t k = 0; k < dr->n; k++)
        printf("  step %lld: %s, magnitude %.3g (threshold %.3g)\n", (long long)table_num(dr, DRIFT(step), k),
               table_str(dr, DRIFT(kind), k), table_num(dr, DRIFT(magnitude), k), table_num(dr, DRIFT(threshold), k));
    const Table *de = &tf->rule, *rf = &tf->refusals, *rv = &tf->reverts;
    size_t adm = 0;
    for (size_t k = 0; k < de->n; k++) adm += table_num(de, DECISIONS(admitted), k) != 0;
    if (!de->n) printf("admission decisions: none recorded\n");
    else printf("admission decisions: %zu, %zu admitted\n", de->n, adm);
    for (size_t k = 0; k < rf->n; k++)
        printf("  refused change of plan before step %lld: %s\n", (long long)table_num(rf, DECISIONS(step), k),
               table_str(rf, DECISIONS(reason), k));
    for (size_t k = 0; k < rv->n; k++)
        printf("  moved back by the measure-and-revert guard before step %lld: %s\n",
               (long long)table_num(rv, DECISIONS(step), k), table_str(rv, DECISIONS(reason), k));
}

int cmd_summary(const TraceFile *tf) {
    Stats s;
    stats(tf, &s);
    print_header(tf);
    if (!s.steps) {
        printf("steps: none recorded\n");
    } else {
        summary_steps(&s);
        summary_stages(tf, &s);
    }
    summary_events(tf, &s);
    if (tf->npeak) {
        double lo = INFINITY, hi = 0, tog = 0;
        for (int r = 0; r < tf->npeak; r++) {
            lo = fmin(lo, tf->peak_solo[r]);
            hi = fmax(hi, tf->peak_solo[r]);
            tog += tf->peak_together[r];
        }
        printf("peak: %.1f-%.1f GFLOP/s per rank alone, %.1f GFLOP/s all ranks together (measured GEMMs); MFU "
               "clamped at 100%% in %lld stage row(s)\n",
               lo, hi, tog, (long long)tf->mfu_clamped);
    }
    return 0;
}

/* the steps run under each plan id: first, last, count, Σ seconds */
int cmd_plans(const TraceFile *tf) {
    print_header(tf);
    const Table *pl = &tf->t[TRACE_PLANS], *st = &tf->t[TRACE_STEPS], *tx = &tf->t[TRACE_TRANSITIONS];
    for (size_t p = 0; p < pl->n; p++) {
        int id = (int)table_num(pl, PLANS(plan_id), p);
        long long lo = -1, hi = -1;
        size_t n = 0;
        double sum = 0;
        for (size_t k = 0; k < st->n; k++)
            if ((int)table_num(st, STEPS(plan_id), k) == id) {
                long long s = (long long)table_num(st, STEPS(step), k);
                if (lo < 0) lo = s;
                hi = s;
                n++;
                sum += table_num(st, STEPS(wall_s), k);
            }
        printf("\nplan %d: from step %lld (%s)", id, (long long)table_num(pl, PLANS(first_step), p),
               table_str(pl, PLANS(source), p));
        if (n) printf(", steps %lld-%lld: %zu step(s), mean %.4f s per step", lo, hi, n, sum / n);
        else printf(", no step recorded under it");
        for (size_t k = 0; k < tx->n; k++)
            if ((int)table_num(tx, TRANSITIONS(to_plan), k) == id)
                printf("; entered by a transition of %.4f s before step %lld",
                       table_num(tx, TRANSITIONS(measured_s), k), (long long)table_num(tx, TRANSITIONS(step), k));
        double pr = table_num(pl, PLANS(predicted_step_s), p), pm = table_num(pl, PLANS(predicted_mem_bytes), p);
        if (isfinite(pr)) printf("; predicted %.4f s per step", pr);
        if (isfinite(pm)) printf(", %.1f MiB", pm / 1048576.0);
        printf("\n");
        const char *text = table_str(pl, PLANS(text), p);
        for (const char *l = text; *l;) {
            const char *e = strchr(l, '\n');
            int len = e ? (int)(e - l) : (int)strlen(l);
            printf("    %.*s\n", len, l);
            l += len + (e ? 1 : 0);
        }
    }
    return 0;
}

int cmd_transitions(const TraceFile *tf) {
    print_header(tf);
    const Table *tx = &tf->t[TRACE_TRANSITIONS];
    Stats s;
    stats(tf, &s);
    printf("transitions: %zu, %.4f s measured, %.2f%% of the runtime (%.3f s, %s)\n", tx->n, s.tx_s,
           s.runtime > 0 ? 100 * s.tx_s / s.runtime : 0, s.runtime, s.runtime_what);
    for (size_t k = 0; k < tx->n; k++) {
        double pred = table_num(tx, TRANSITIONS(predicted_s), k), meas = table_num(tx, TRANSITIONS(measured_s), k);
        printf("\nbefore step %lld: plan %d -> %d, %d model-stage(s) in %d wave(s)\n",
               (long long)table_num(tx, TRANSITIONS(step), k), (int)table_num(tx, TRANSITIONS(from_plan), k),
               (int)table_num(tx, TRANSITIONS(to_plan), k), (int)table_num(tx, TRANSITIONS(nchanges), k),
               (int)table_num(tx, TRANSITIONS(nwaves), k));
        printf("  time: predicted %.4f s, measured %.4f s (measured / predicted %.2f), transfers %.4f s", pred, meas,
               pred > 0 ? meas / pred : NAN, table_num(tx, TRANSITIONS(engine_s), k));
        double su = table_num(tx, TRANSITIONS(setup_s), k); /* NaN where the column is absent */
        if (!isnan(su))
            printf(", communicator set-up %.4f s (%d set(s) built before the move)", su,
                   (int)table_num(tx, TRANSITIONS(sets_prebuilt), k));
        printf("\n");
        double fw = table_num(tx, TRANSITIONS(bytes_forwarded), k); /* NaN where the column is absent */
        printf("  bytes: moved %.2f MiB, minimum %.2f MiB, kept in place %.2f MiB",
               table_num(tx, TRANSITIONS(bytes_moved), k) / 1048576.0,
               table_num(tx, TRANSITIONS(bytes_min), k) / 1048576.0,
               table_num(tx, TRANSITIONS(bytes_local), k) / 1048576.0);
        if (fw > 0) printf("; %.2f MiB of the moved forwarded by new replicas", fw / 1048576.0);
        printf("\n");
        double budget = table_num(tx, TRANSITIONS(mem_budget_bytes), k);
        printf("  memory: peak %.1f MiB per rank, budget %s",
               table_num(tx, TRANSITIONS(mem_peak_bytes), k) / 1048576.0, budget > 0 ? "" : "none");
        if (budget > 0) printf("%.1f MiB", budget / 1048576.0);
        printf("%s\n", table_num(tx, TRANSITIONS(verified), k) != 0 ? "; per-tensor checks passed" : "");
        printf("  per model-stage (primitives and bytes):\n");
        const char *text = table_str(tx, TRANSITIONS(text), k);
        for (const char *l = text; *l;) {
            const char *e = strchr(l, '\n');
            int len = e ? (int)(e - l) : (int)strlen(l);
            while (len > 0 && *l == ' ') { l++; len--; }
            printf("    %.*s\n", len, l);
            l += len + (e ? 1 : 0);
        }
    }
    return 0;
}

static void csv_str(const char *s) {
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"') putchar('"');
        putchar(*s);
    }
    putchar('"');
}

int cmd_csv(const TraceFile *tf, const char *name) {
    if (name[0] == '/') name++;
    const TraceTable *tt = trace_table_named(name);
    if (!tt) {
        fprintf(stderr, "nereus-trace: csv: no table '%s' (", name);
        for (int i = 0; i < TRACE_NTABLES; i++) fprintf(stderr, "%s%s", i ? ", " : "", trace_tables[i].name);
        fprintf(stderr, ")\n");
        return 2;
    }
    int which = (int)(tt - trace_tables);
    const Table *t = &tf->t[which];
    if (which == TRACE_SIGNALS && !tf->has_signals) {
        fprintf(stderr, "nereus-trace: csv: %s has no /signals (a trace from before the live planner)\n", tf->path);
        return 1;
    }
    for (int c = 0; c < t->ncol; c++) {
        if (t->col[c].cls != C_VEC) printf("%s%s", c ? "," : "", t->col[c].name);
        else
            for (int m = 0; m < t->col[c].w; m++) printf("%s%s_%d", c || m ? "," : "", t->col[c].name, m);
    }
    if (which == TRACE_STAGES) printf(",stage_name");
    printf("\n");
    for (size_t k = 0; k < t->n; k++) {
        for (int c = 0; c < t->ncol; c++) {
            const Col *col = &t->col[c];
            if (c) putchar(',');
            if (col->cls == C_INT) printf("%lld", (long long)col->i[k]);
            else if (col->cls == C_FLT) printf("%.9g", col->f[k]);
            else if (col->cls == C_VEC)
                for (int m = 0; m < col->w; m++) printf("%s%.17g", m ? "," : "", col->f[k * (size_t)col->w + m]);
            else csv_str(col->s[k]);
        }
        if (which == TRACE_STAGES) {
            int id = (int)table_num(t, STAGES(stage), k);
            printf(",%s", id >= 0 && id < NSTAGE ? tf->stage_names[id] : "?");
        }
        printf("\n");
    }
    return 0;
}

static void cmp_row(const char *what, double a, double b, const char *fmt) {
    char sa[32], sb[32];
    snprintf(sa, sizeof sa, fmt, a);
    snprintf(sb, sizeof sb, fmt, b);
    printf("  %-22s %14s %14s", what, sa, sb);
    if (a != 0 && isfinite(a) && isfinite(b)) printf(" %9.3f", b / a);
    printf("\n");
}

/* the value of KEY in [SECTION] of a resolved deck into val (its text up to the '#' of the source mark, trimmed);
 * 1 when found */
static int deck_value(const char *deck, const char *section, const char *key, char *val, size_t len) {
    char head[64];
    snprintf(head, sizeof head, "[%s]", section);
    int in = 0;
    size_t kl = strlen(key);
    for (const char *l = deck; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (*l == '[') in = strncmp(l, head, strlen(head)) == 0;
        else if (in && strncmp(l, key, kl) == 0 && (l[kl] == ' ' || l[kl] == '=')) {
            const char *v = strchr(l, '='), *end = strchr(l, '\n');
            if (!v) return 0;
            for (v++; *v == ' '; v++) {}
            const char *hash = strstr(v, " #");
            if (!end || (hash && hash < end)) end = hash ? hash : v + strlen(v);
            while (end > v && end[-1] == ' ') end--;
            snprintf(val, len, "%.*s", (int)(end - v), v);
            return 1;
        }
    }
    return 0;
}

/* why two traces' figures do not compare like for like, appended to why: another model (any [model] key),
 * other sequence lengths ([task] digits, [ppo] max_response, [model] max_seq), another algorithm */
static void not_comparable(const TraceFile *A, const TraceFile *B, char *why, size_t len) {
    static const char *keys[][2] = {{"model", "arch"},      {"model", "n_layer"},  {"model", "n_embd"},
                                    {"model", "n_head"},    {"model", "n_kv_head"}, {"model", "ffn_dim"},
                                    {"model", "vocab_size"}, {"model", "max_seq"}, {"task", "digits"},
                                    {"task", "names"},      {"ppo", "max_response"}};
    if (strcmp(A->algorithm, B->algorithm) != 0) {
        size_t n = strlen(why);
        snprintf(why + n, len - n, "%salgorithm %s vs %s", n ? "; " : "", A->algorithm, B->algorithm);
    }
    if (!A->deck || !B->deck) return;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char a[128], b[128];
        int ha = deck_value(A->deck, keys[i][0], keys[i][1], a, sizeof a);
        int hb = deck_value(B->deck, keys[i][0], keys[i][1], b, sizeof b);
        if (ha != hb || (ha && strcmp(a, b) != 0)) {
            size_t n = strlen(why);
            snprintf(why + n, len - n, "%s[%s] %s %s vs %s", n ? "; " : "", keys[i][0], keys[i][1], ha ? a : "-",
                     hb ? b : "-");
        }
    }
}

int cmd_compare(const TraceFile *A, const TraceFile *B) {
    Stats a, b;
    stats(A, &a);
    stats(B, &b);
    const TraceFile *both[2] = {A, B};
    for (int i = 0; i < 2; i++)
        printf("%c: %s (run \"%s\", %d rank(s), %s)\n", "AB"[i], both[i]->path, both[i]->run_name, both[i]->ranks,
               both[i]->complete ? "complete" : "NOT complete");
    char why[1024] = "";
    not_comparable(A, B, why, sizeof why);
    if (why[0]) printf("NOT COMPARABLE: different models or lengths (%s): the figures below are of different work\n", why);
    if (a.steps != b.steps)
        printf("note: A has %zu steps, B %zu: the per-step figures compare, the totals (transition s) do not\n",
               a.steps, b.steps);
    printf("  %-22s %14s %14s %9s\n", "", "A", "B", "B/A");
    cmp_row("steps", (double)a.steps, (double)b.steps, "%.0f");
    cmp_row("mean step s", a.mean_s, b.mean_s, "%.4f");
    cmp_row("median step s", a.median_s, b.median_s, "%.4f");
    cmp_row("tokens/s", a.step_s > 0 ? a.tokens / a.step_s : 0, b.step_s > 0 ? b.tokens / b.step_s : 0, "%.0f");
    const char *pn[4] = {"gen s / step", "inf s / step", "train s / step", "sync s / step"};
    for (int p = 0; p < 4; p++)
        cmp_row(pn[p], a.steps ? a.phase[p] / a.steps : NAN, b.steps ? b.phase[p] / b.steps : NAN, "%.4f");
    for (int id = 0; id < NSTAGE; id++) {
        if (!a.st_rows[id] && !b.st_rows[id]) continue;
        char what[64];
        snprintf(what, sizeof what, "%s s", A->stage_names[id]);
        cmp_row(what, a.st_rows[id] ? a.st_s[id] / a.st_rows[id] : NAN,
                b.st_rows[id] ? b.st_s[id] / b.st_rows[id] : NAN, "%.4f");
        snprintf(what, sizeof what, "%s MFU %%", A->stage_names[id]);
        cmp_row(what, run_mfu(&a, id), run_mfu(&b, id), "%.1f");
    }
    /* MFU over the run: Σ FLOPs / Σ seconds against the mean peak */
    cmp_row("transitions", (double)a.ntx, (double)b.ntx, "%.0f");
    cmp_row("transition s", a.tx_s, b.tx_s, "%.4f");
    cmp_row("transition share %", a.runtime > 0 ? 100 * a.tx_s / a.runtime : 0,
            b.runtime > 0 ? 100 * b.tx_s / b.runtime : 0, "%.2f");
    return 0;
}

/* ---- schema --------------------------------------------------------------------------------- */

/* a Markdown table cell: `|` escaped */
static void md_cell(const char *s) {
    for (; *s; s++) {
        if (*s == '|') putchar('\\');
        putchar(*s);
    }
}

static void schema_attrs(const TraceAttrList *l) {
    if (strcmp(l->object, "/") == 0) printf("\n### Root attributes\n\n%s\n\n", l->about);
    else printf("\n### %s attributes\n\n%s\n\n", l->object, l->about);
    printf("| attribute | type | unit | meaning |\n| --- | --- | --- | --- |\n");
    for (int i = 0; i < l->nattr; i++) {
        const TraceAttr *a = &l->attr[i];
        char type[32];
        printf("| `%s` | %s | %s | ", a->name,
               a->type == TRACE_F64_ARRAY ? "float64 (one per rank)" : trace_type_name(a->type, 1, type, sizeof type),
               a->unit);
        md_cell(a->meaning);
        printf("%s |\n", a->required ? "" : " (added within format 1: older traces lack it)");
    }
}

/* the trace format from its table (trace_schema.c), as the Markdown of docs/TRACE.md */
int cmd_schema(void) {
    printf("<!-- printed by bin/nereus-trace schema from src/io/trace_schema.c -->\n");
    printf("\nFormat `%s`, version %d. Types: int32 and int64 little-endian, float64 IEEE, strings\n"
           "variable-length UTF-8, float64[N] a 1-D array of N float64 per row. A column marked *no*\n"
           "under required was added within format %d: traces written before it lack it, and\n"
           "nereus-trace reads them without it.\n",
           TRACE_FORMAT_NAME, TRACE_FORMAT, TRACE_FORMAT);
    schema_attrs(&trace_root_attrs);
    for (int i = 0; i < TRACE_NTABLES; i++) {
        const TraceTable *t = &trace_tables[i];
        printf("\n### /%s\n\n%s%s Chunks of %u rows.\n\n", t->name, t->about,
               t->required ? "" : " Not required: nereus-trace reads a trace without it.", t->chunk_rows);
        printf("| column | type | unit | required | meaning |\n| --- | --- | --- | --- | --- |\n");
        for (int c = 0; c < t->ncol; c++) {
            const TraceColumn *col = &t->col[c];
            char type[32];
            printf("| `%s` | %s | %s | %s | ", col->name, trace_type_name(col->type, col->width, type, sizeof type),
                   col->unit, col->required ? "yes" : "*no*");
            md_cell(col->meaning);
            printf(" |\n");
        }
        if (t->event_columns)
            printf("| one column per counted event, e.g. `PAPI_TOT_INS` | int64 | events | *no* | the event's count "
                   "over the stage, summed over its ranks |\n");
    }
    schema_attrs(&trace_planner_attrs);
    schema_attrs(&trace_complete_attrs);
    return 0;
}
