/* trace.c — bin/nereus-trace: offline analysis of a run's HDF5 trace
 * (docs/TRACE.md). One process, the serial HDF5 API, no MPI.
 *   nereus-trace summary FILE          per-phase and per-model-stage breakdown, tokens/s,
 *                                      transitions and their share of the runtime, drift events
 *   nereus-trace plans FILE            the plan timeline: which plan from which step
 *   nereus-trace transitions FILE      every transition: predicted and measured, bytes, primitives
 *   nereus-trace csv FILE TABLE        a table (steps, stages, plans, drift, decisions, transitions) as CSV
 *   nereus-trace compare A B           two traces side by side
 *   nereus-trace replay FILE [--gamma G ...] [--threshold X]
 *                                      the admission policy over the recorded decisions
 * (FILE first, then the subcommand, is accepted too.)
 * Exit: 0 ok; 1 the file is missing, not HDF5, not a trace, truncated or
 * corrupt (one line on stderr naming the file and what is wrong); 2 bad
 * command line.
 *
 * Every table is read whole, column by column (a one-member compound memory
 * type per column, matched by name), so a column added by a later format
 * is ignored and a missing one is an error that names it. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>

#include "nereus/planner.h" /* admit(): the payback rule replay applies */

#pragma GCC diagnostic ignored "-Wformat-truncation"

#define MAX_ROWS 50000000ull /* a larger table is taken for a corrupt extent */
#define NSTAGE 7

static char err[2048];

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...) {
    if (err[0]) return -1; /* the first failure wins */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, sizeof err, fmt, ap);
    va_end(ap);
    return -1;
}

/* HDF5's innermost error description (where it was detected) */
typedef struct Reason { char *buf; size_t len; int got; } Reason;
static herr_t reason_cb(unsigned n, const H5E_error2_t *e, void *data) {
    Reason *r = data;
    if (!r->got && e->desc && e->desc[0]) {
        snprintf(r->buf, r->len, "%s", e->desc);
        r->got = 1;
    }
    return 0;
}
static void h5reason(char *buf, size_t len) {
    Reason r = {buf, len, 0};
    buf[0] = 0;
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, reason_cb, &r);
}

/* ---- tables ------------------------------------------------------------------- */

enum { C_INT, C_FLT, C_STR };
typedef struct Col {
    char name[64];
    int cls;
    int64_t *i;
    double *f;
    char **s;
} Col;

typedef struct Table {
    const char *name;
    size_t n;
    int ncol;
    Col *col;
} Table;

enum { T_STEPS, T_STAGES, T_PLANS, T_DRIFT, T_DECISIONS, T_TRANSITIONS, T_N };
static const char *table_names[T_N] = {"steps", "stages", "plans", "drift", "decisions", "transitions"};

typedef struct TraceFile {
    const char *path;
    Table t[T_N];
    char run_name[256], backend[32], started[64], commit[128], counters[1024], stage_names[NSTAGE][32];
    int ranks;
    double *peak_solo, *peak_together;
    int npeak;
    int complete;
    char status[128];
    double ppo_s, trace_s;
    int64_t mfu_clamped;
} TraceFile;

static int read_col(const char *path, hid_t d, const char *tname, hid_t mtype_member, Col *c, size_t n, hid_t fspace) {
    hid_t mt = -1;
    size_t sz = H5Tget_size(mtype_member);
    void *buf = NULL;
    if ((mt = H5Tcreate(H5T_COMPOUND, sz)) < 0 || H5Tinsert(mt, c->name, 0, mtype_member) < 0) goto h5fail;
    buf = calloc(n ? n : 1, sz);
    if (!buf) return fail("%s: /%s: out of memory for %zu rows", path, tname, n);
    if (n && H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) goto h5fail;
    if (c->cls == C_INT) c->i = buf;
    else if (c->cls == C_FLT) c->f = buf;
    else {
        char **v = buf;
        c->s = calloc(n ? n : 1, sizeof *c->s);
        for (size_t k = 0; k < n; k++) c->s[k] = strdup(v[k] ? v[k] : "");
        if (n) H5Dvlen_reclaim(mt, fspace, H5P_DEFAULT, buf);
        free(buf);
    }
    H5Tclose(mt);
    return 0;
h5fail: {
    char r[512];
    h5reason(r, sizeof r);
    free(buf);
    if (mt >= 0) H5Tclose(mt);
    return fail("%s: cannot read column '%s' of /%s: truncated or corrupt trace (HDF5: %s)", path, c->name, tname,
                r[0] ? r : "?");
}
}

static int read_table(const char *path, hid_t f, int which, Table *t) {
    const char *name = table_names[which];
    t->name = name;
    hid_t d = -1, ft = -1, sp = -1, vs = -1;
    char r[512];
    if (H5Lexists(f, name, H5P_DEFAULT) <= 0) return fail("%s: no table /%s: not a complete trace of format 1", path, name);
    if ((d = H5Dopen2(f, name, H5P_DEFAULT)) < 0) goto h5fail;
    if ((ft = H5Dget_type(d)) < 0 || (sp = H5Dget_space(d)) < 0) goto h5fail;
    if (H5Tget_class(ft) != H5T_COMPOUND || H5Sget_simple_extent_ndims(sp) != 1) {
        fail("%s: /%s is not a 1-D table of a compound type", path, name);
        goto out;
    }
    hsize_t n = 0;
    H5Sget_simple_extent_dims(sp, &n, NULL);
    if (n > MAX_ROWS) {
        fail("%s: /%s claims %llu rows: corrupt trace", path, name, (unsigned long long)n);
        goto out;
    }
    t->n = (size_t)n;
    int nm = H5Tget_nmembers(ft);
    if (nm <= 0) goto h5fail;
    t->col = calloc((size_t)nm, sizeof *t->col);
    vs = H5Tcopy(H5T_C_S1);
    H5Tset_size(vs, H5T_VARIABLE);
    for (int m = 0; m < nm; m++) {
        Col *c = &t->col[t->ncol];
        char *mn = H5Tget_member_name(ft, (unsigned)m);
        if (!mn) goto h5fail;
        snprintf(c->name, sizeof c->name, "%s", mn);
        H5free_memory(mn);
        H5T_class_t cl = H5Tget_member_class(ft, (unsigned)m);
        hid_t mtm;
        if (cl == H5T_INTEGER) { c->cls = C_INT; mtm = H5T_NATIVE_INT64; }
        else if (cl == H5T_FLOAT) { c->cls = C_FLT; mtm = H5T_NATIVE_DOUBLE; }
        else if (cl == H5T_STRING) {
            hid_t mty = H5Tget_member_type(ft, (unsigned)m);
            int vl = H5Tis_variable_str(mty);
            H5T_cset_t cs = H5Tget_cset(mty);
            H5Tclose(mty);
            if (vl <= 0) continue; /* a fixed-length string: not ours; left out */
            c->cls = C_STR;
            H5Tset_cset(vs, cs); /* HDF5 converts no string between character sets */
            mtm = vs;
        } else continue; /* another class: not ours; left out */
        if (read_col(path, d, name, mtm, c, t->n, sp) != 0) goto out;
        t->ncol++;
    }
    H5Tclose(vs);
    H5Sclose(sp);
    H5Tclose(ft);
    H5Dclose(d);
    return 0;
h5fail:
    h5reason(r, sizeof r);
    fail("%s: cannot read /%s: truncated or corrupt trace (HDF5: %s)", path, name, r[0] ? r : "?");
out:
    if (vs >= 0) H5Tclose(vs);
    if (sp >= 0) H5Sclose(sp);
    if (ft >= 0) H5Tclose(ft);
    if (d >= 0) H5Dclose(d);
    return -1;
}

static Col *col_find(const Table *t, const char *name) {
    for (int c = 0; c < t->ncol; c++)
        if (strcmp(t->col[c].name, name) == 0) return &t->col[c];
    return NULL;
}

/* the columns each table must have (format 1) */
static const char *required[T_N] = {
    "step,plan_id,t_start_s,wall_s,gen_s,inf_s,train_s,sync_s,tokens,tokens_per_s,reward,kl,pg_loss,vf_loss,entropy,resp_len",
    "step,stage,nranks,seconds,flops,bytes,gflops,peak_gflops,mfu",
    "plan_id,first_step,text,source,predicted_step_s,predicted_mem_bytes",
    "step,kind,magnitude,threshold",
    "step,from_plan,to_plan,urgent,admitted,L_now_s,L_new_s,dL_s,C_s,H_steps,gamma,reason",
    "step,from_plan,to_plan,nchanges,t_start_s,predicted_s,measured_s,engine_s,bytes_moved,bytes_min,text"};

static int check_columns(const TraceFile *tf, int which) {
    char list[512];
    snprintf(list, sizeof list, "%s", required[which]);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ","))
        if (!col_find(&tf->t[which], tok))
            return fail("%s: /%s has no column '%s': not a trace of format 1", tf->path, table_names[which], tok);
    return 0;
}

static double num(const Table *t, const char *name, size_t k) {
    const Col *c = col_find(t, name);
    if (!c || k >= t->n) return NAN;
    return c->cls == C_INT ? (double)c->i[k] : c->cls == C_FLT ? c->f[k] : NAN;
}
static const char *str(const Table *t, const char *name, size_t k) {
    const Col *c = col_find(t, name);
    return c && c->cls == C_STR && k < t->n ? c->s[k] : "";
}

static int attr_str(hid_t loc, const char *name, char *out, size_t len) {
    out[0] = 0;
    if (H5Aexists(loc, name) <= 0) return -1;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT), t = a >= 0 ? H5Aget_type(a) : -1, mt = -1;
    int rc = -1;
    if (t < 0 || H5Tget_class(t) != H5T_STRING) goto out;
    if (H5Tis_variable_str(t) > 0) {
        char *p = NULL;
        mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, H5T_VARIABLE);
        if (H5Aread(a, mt, &p) >= 0) {
            snprintf(out, len, "%s", p ? p : "");
            if (p) H5free_memory(p);
            rc = 0;
        }
    } else {
        size_t n = H5Tget_size(t);
        char *p = calloc(n + 2, 1);
        mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, n + 1);
        if (p && H5Aread(a, mt, p) >= 0) {
            snprintf(out, len, "%s", p);
            rc = 0;
        }
        free(p);
    }
out:
    if (mt >= 0) H5Tclose(mt);
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
    return rc;
}

static int attr_num(hid_t loc, const char *name, hid_t mtype, void *out, size_t n) {
    if (H5Aexists(loc, name) <= 0) return -1;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT), s = a >= 0 ? H5Aget_space(a) : -1;
    int rc = -1;
    if (s >= 0 && (size_t)H5Sget_simple_extent_npoints(s) == n && H5Aread(a, mtype, out) >= 0) rc = 0;
    if (s >= 0) H5Sclose(s);
    if (a >= 0) H5Aclose(a);
    return rc;
}

static int trace_load(const char *path, TraceFile *tf) {
    memset(tf, 0, sizeof *tf);
    tf->path = path;
    struct stat sb;
    if (stat(path, &sb) != 0) return fail("%s: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode)) return fail("%s: is a directory, not a trace", path);
    htri_t is = H5Fis_hdf5(path);
    if (is <= 0) return fail("%s: not an HDF5 file (no HDF5 signature): not a trace", path);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
#if H5_VERSION_GE(1, 10, 7)
    H5Pset_file_locking(fapl, 0, 1); /* the writer does not lock either: a running trace can be read */
#endif
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    if (f < 0) {
        char r[512];
        h5reason(r, sizeof r); /* before any other HDF5 call: each clears the error stack */
        H5Pclose(fapl);
        return fail("%s: %s HDF5 file, cannot open it as a trace (HDF5: %s)", path,
                    strstr(r, "truncated") ? "truncated" : "corrupt or unreadable", r[0] ? r : "?");
    }
    H5Pclose(fapl);
    char fmt[64];
    int32_t ver = 0;
    int rc = -1;
    if (attr_str(f, "format", fmt, sizeof fmt) != 0 || strcmp(fmt, "nereus trace") != 0) {
        fail("%s: an HDF5 file but not a Nereus trace (no root attribute format = \"nereus trace\")", path);
        goto out;
    }
    if (attr_num(f, "format_version", H5T_NATIVE_INT32, &ver, 1) != 0 || ver != 1) {
        fail("%s: trace format version %d; this nereus-trace reads version 1", path, ver);
        goto out;
    }
    attr_str(f, "run_name", tf->run_name, sizeof tf->run_name);
    attr_str(f, "backend", tf->backend, sizeof tf->backend);
    attr_str(f, "started", tf->started, sizeof tf->started);
    attr_str(f, "source_commit", tf->commit, sizeof tf->commit);
    attr_str(f, "counters", tf->counters, sizeof tf->counters);
    attr_num(f, "ranks", H5T_NATIVE_INT, &tf->ranks, 1);
    char names[512];
    attr_str(f, "stage_names", names, sizeof names);
    {
        int k = 0;
        for (char *tok = strtok(names, ","); tok && k < NSTAGE; tok = strtok(NULL, ",")) snprintf(tf->stage_names[k++], 32, "%s", tok);
        for (; k < NSTAGE; k++) snprintf(tf->stage_names[k], 32, "stage%d", k);
    }
    if (tf->ranks > 0 && tf->ranks <= 1 << 20) {
        tf->npeak = tf->ranks;
        tf->peak_solo = calloc((size_t)tf->ranks, sizeof(double));
        tf->peak_together = calloc((size_t)tf->ranks, sizeof(double));
        if (attr_num(f, "peak_gflops_solo", H5T_NATIVE_DOUBLE, tf->peak_solo, (size_t)tf->ranks) != 0 ||
            attr_num(f, "peak_gflops_together", H5T_NATIVE_DOUBLE, tf->peak_together, (size_t)tf->ranks) != 0)
            tf->npeak = 0;
    }
    for (int i = 0; i < T_N; i++)
        if (read_table(path, f, i, &tf->t[i]) != 0 || check_columns(tf, i) != 0) goto out;
    if (H5Lexists(f, "complete", H5P_DEFAULT) > 0) {
        hid_t d = H5Dopen2(f, "complete", H5P_DEFAULT);
        int32_t one = 0;
        if (d >= 0 && H5Dread(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, &one) >= 0 && one == 1) {
            tf->complete = 1;
            attr_str(d, "status", tf->status, sizeof tf->status);
            attr_num(d, "ppo_s", H5T_NATIVE_DOUBLE, &tf->ppo_s, 1);
            attr_num(d, "trace_s", H5T_NATIVE_DOUBLE, &tf->trace_s, 1);
            attr_num(d, "mfu_clamped", H5T_NATIVE_INT64, &tf->mfu_clamped, 1);
        }
        if (d >= 0) H5Dclose(d);
    }
    rc = 0;
out:
    H5Fclose(f);
    return rc;
}

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

static const char *phase_col[4] = {"gen_s", "inf_s", "train_s", "sync_s"};

static void stats(const TraceFile *tf, Stats *s) {
    memset(s, 0, sizeof *s);
    const Table *st = &tf->t[T_STEPS], *sg = &tf->t[T_STAGES], *tx = &tf->t[T_TRANSITIONS];
    s->steps = st->n;
    double *w = calloc(st->n ? st->n : 1, sizeof *w);
    for (size_t k = 0; k < st->n; k++) {
        w[k] = num(st, "wall_s", k);
        s->step_s += w[k];
        s->tokens += num(st, "tokens", k);
        for (int p = 0; p < 4; p++) s->phase[p] += num(st, phase_col[p], k);
    }
    if (st->n) {
        s->first = (int64_t)num(st, "step", 0);
        s->last = (int64_t)num(st, "step", st->n - 1);
        s->mean_s = s->step_s / st->n;
        s->median_s = median(w, st->n);
    }
    free(w);
    s->other = s->step_s - (s->phase[0] + s->phase[1] + s->phase[2] + s->phase[3]);
    for (size_t k = 0; k < sg->n; k++) {
        int id = (int)num(sg, "stage", k);
        if (id < 0 || id >= NSTAGE) continue;
        s->st_rows[id]++;
        s->st_s[id] += num(sg, "seconds", k);
        s->st_flops[id] += num(sg, "flops", k);
        s->st_mfu[id] += num(sg, "mfu", k);
        s->st_peak[id] += num(sg, "peak_gflops", k);
        s->st_ranks[id] = (int)num(sg, "nranks", k);
    }
    s->ntx = tx->n;
    for (size_t k = 0; k < tx->n; k++) {
        s->tx_s += num(tx, "measured_s", k);
        s->tx_pred += num(tx, "predicted_s", k);
    }
    if (tf->complete && tf->ppo_s > 0) {
        s->runtime = tf->ppo_s;
        s->runtime_what = "the PPO loop's wall time";
    } else { /* a trace without /complete: from the first step's (or transition's) start to the last step's end */
        double lo = INFINITY, hi = 0;
        for (size_t k = 0; k < st->n; k++) {
            lo = fmin(lo, num(st, "t_start_s", k));
            hi = fmax(hi, num(st, "t_start_s", k) + num(st, "wall_s", k));
        }
        for (size_t k = 0; k < tx->n; k++) lo = fmin(lo, num(tx, "t_start_s", k));
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
    if (tf->complete) printf("status: complete (%s), PPO loop %.3f s\n", tf->status, tf->ppo_s);
    else
        printf("status: NOT complete (no /complete: the run crashed, was killed, or is still running); "
               "the tables hold every step flushed\n");
}

static int cmd_summary(const TraceFile *tf) {
    Stats s;
    stats(tf, &s);
    print_header(tf);
    if (!s.steps) {
        printf("steps: none recorded\n");
    } else {
        printf("steps: %zu (steps %lld-%lld), %.3f s in steps: mean %.4f s, median %.4f s per step\n", s.steps,
               (long long)s.first, (long long)s.last, s.step_s, s.mean_s, s.median_s);
        printf("tokens: %.0f, %.0f tokens/s over the steps\n", s.tokens, s.step_s > 0 ? s.tokens / s.step_s : 0);
        printf("\nphases (seconds per step, max over ranks):\n");
        printf("  %-14s %10s %10s %8s\n", "phase", "total s", "mean s", "share");
        const char *pn[4] = {"gen", "inf", "train", "sync"};
        for (int p = 0; p < 4; p++)
            printf("  %-14s %10.4f %10.4f %7.1f%%\n", pn[p], s.phase[p], s.phase[p] / s.steps,
                   s.step_s > 0 ? 100 * s.phase[p] / s.step_s : 0);
        printf("  %-14s %10.4f %10.4f %7.1f%%\n", "wall - phases", s.other, s.other / s.steps,
               s.step_s > 0 ? 100 * s.other / s.step_s : 0);
        if (s.other < 0)
            printf("  (below 0: each phase is its maximum over the ranks, and the maxima come from different ranks)\n");
        printf("\nmodel-stages (seconds = max over the stage's ranks; stages on disjoint ranks overlap):\n");
        printf("  %-14s %6s %10s %8s %10s %10s %8s\n", "model-stage", "ranks", "mean s", "of step", "GFLOP/s",
               "peak GF/s", "MFU");
        for (int id = 0; id < NSTAGE; id++) {
            if (!s.st_rows[id]) continue;
            double ms = s.st_s[id] / s.st_rows[id], gf = s.st_s[id] > 0 ? s.st_flops[id] / s.st_s[id] * 1e-9 : 0;
            printf("  %-14s %6d %10.4f %7.1f%% %10.2f %10.1f %7.1f%%\n", tf->stage_names[id], s.st_ranks[id], ms,
                   s.mean_s > 0 ? 100 * ms / s.mean_s : 0, gf, s.st_peak[id] / s.st_rows[id], run_mfu(&s, id));
        }
        /* counters: every int64 column of /stages past the fixed ones */
        const Table *sg = &tf->t[T_STAGES];
        int first = 1;
        for (int c = 0; c < sg->ncol; c++) {
            const Col *col = &sg->col[c];
            if (col->cls != C_INT || !strcmp(col->name, "step") || !strcmp(col->name, "stage") ||
                !strcmp(col->name, "nranks") || !strcmp(col->name, "nranks_ran"))
                continue;
            if (first) printf("\ncounters (mean per step, summed over the stage's ranks):\n");
            first = 0;
            printf("  %-14s", col->name);
            for (int id = 0; id < NSTAGE; id++) {
                double sum = 0;
                size_t k0 = 0;
                for (size_t k = 0; k < sg->n; k++)
                    if (num(sg, "stage", k) == id) { sum += (double)col->i[k]; k0++; }
                if (k0) printf(" %s %.3g", tf->stage_names[id], sum / k0);
            }
            printf("\n");
        }
        if (first) printf("\ncounters: no counter columns in this trace; the run said: %s\n",
                          tf->counters[0] ? tf->counters : "(nothing)");
        else if (tf->counters[0]) printf("  the run said: %s\n", tf->counters);
    }
    printf("\ntransitions: %zu, %.4f s measured (%.4f s predicted), %.2f%% of the runtime (%.3f s, %s)\n", s.ntx,
           s.tx_s, s.tx_pred, s.runtime > 0 ? 100 * s.tx_s / s.runtime : 0, s.runtime, s.runtime_what);
    const Table *tx = &tf->t[T_TRANSITIONS];
    for (size_t k = 0; k < tx->n; k++)
        printf("  before step %lld: plan %d -> %d, %d model-stage(s), moved %.2f MiB (minimum %.2f MiB), "
               "predicted %.4f s, measured %.4f s\n",
               (long long)num(tx, "step", k), (int)num(tx, "from_plan", k), (int)num(tx, "to_plan", k),
               (int)num(tx, "nchanges", k), num(tx, "bytes_moved", k) / 1048576.0, num(tx, "bytes_min", k) / 1048576.0,
               num(tx, "predicted_s", k), num(tx, "measured_s", k));
    const Table *dr = &tf->t[T_DRIFT];
    if (!dr->n) printf("drift events: none recorded\n");
    else {
        printf("drift events: %zu\n", dr->n);
        for (size_t k = 0; k < dr->n; k++)
            printf("  step %lld: %s, magnitude %.3g (threshold %.3g)\n", (long long)num(dr, "step", k),
                   str(dr, "kind", k), num(dr, "magnitude", k), num(dr, "threshold", k));
    }
    const Table *de = &tf->t[T_DECISIONS];
    size_t adm = 0;
    for (size_t k = 0; k < de->n; k++) adm += num(de, "admitted", k) != 0;
    if (!de->n) printf("admission decisions: none recorded\n");
    else printf("admission decisions: %zu, %zu admitted\n", de->n, adm);
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
static int cmd_plans(const TraceFile *tf) {
    print_header(tf);
    const Table *pl = &tf->t[T_PLANS], *st = &tf->t[T_STEPS], *tx = &tf->t[T_TRANSITIONS];
    for (size_t p = 0; p < pl->n; p++) {
        int id = (int)num(pl, "plan_id", p);
        long long lo = -1, hi = -1;
        size_t n = 0;
        double sum = 0;
        for (size_t k = 0; k < st->n; k++)
            if ((int)num(st, "plan_id", k) == id) {
                long long s = (long long)num(st, "step", k);
                if (lo < 0) lo = s;
                hi = s;
                n++;
                sum += num(st, "wall_s", k);
            }
        printf("\nplan %d: from step %lld (%s)", id, (long long)num(pl, "first_step", p), str(pl, "source", p));
        if (n) printf(", steps %lld-%lld: %zu step(s), mean %.4f s per step", lo, hi, n, sum / n);
        else printf(", no step recorded under it");
        for (size_t k = 0; k < tx->n; k++)
            if ((int)num(tx, "to_plan", k) == id)
                printf("; entered by a transition of %.4f s before step %lld", num(tx, "measured_s", k),
                       (long long)num(tx, "step", k));
        double pr = num(pl, "predicted_step_s", p), pm = num(pl, "predicted_mem_bytes", p);
        if (isfinite(pr)) printf("; predicted %.4f s per step", pr);
        if (isfinite(pm)) printf(", %.1f MiB", pm / 1048576.0);
        printf("\n");
        const char *text = str(pl, "text", p);
        for (const char *l = text; *l;) {
            const char *e = strchr(l, '\n');
            int len = e ? (int)(e - l) : (int)strlen(l);
            printf("    %.*s\n", len, l);
            l += len + (e ? 1 : 0);
        }
    }
    return 0;
}

static int cmd_transitions(const TraceFile *tf) {
    print_header(tf);
    const Table *tx = &tf->t[T_TRANSITIONS];
    Stats s;
    stats(tf, &s);
    printf("transitions: %zu, %.4f s measured, %.2f%% of the runtime (%.3f s, %s)\n", tx->n, s.tx_s,
           s.runtime > 0 ? 100 * s.tx_s / s.runtime : 0, s.runtime, s.runtime_what);
    for (size_t k = 0; k < tx->n; k++) {
        double pred = num(tx, "predicted_s", k), meas = num(tx, "measured_s", k);
        printf("\nbefore step %lld: plan %d -> %d, %d model-stage(s) in %d wave(s)\n", (long long)num(tx, "step", k),
               (int)num(tx, "from_plan", k), (int)num(tx, "to_plan", k), (int)num(tx, "nchanges", k),
               (int)num(tx, "nwaves", k));
        printf("  time: predicted %.4f s, measured %.4f s (measured / predicted %.2f), transfers %.4f s\n", pred, meas,
               pred > 0 ? meas / pred : NAN, num(tx, "engine_s", k));
        printf("  bytes: moved %.2f MiB, minimum %.2f MiB, kept in place %.2f MiB\n",
               num(tx, "bytes_moved", k) / 1048576.0, num(tx, "bytes_min", k) / 1048576.0,
               num(tx, "bytes_local", k) / 1048576.0);
        double budget = num(tx, "mem_budget_bytes", k);
        printf("  memory: peak %.1f MiB per rank, budget %s", num(tx, "mem_peak_bytes", k) / 1048576.0,
               budget > 0 ? "" : "none");
        if (budget > 0) printf("%.1f MiB", budget / 1048576.0);
        printf("%s\n", num(tx, "verified", k) != 0 ? "; per-tensor checks passed" : "");
        printf("  per model-stage (primitives and bytes):\n");
        const char *text = str(tx, "text", k);
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

static int cmd_csv(const TraceFile *tf, const char *name) {
    if (name[0] == '/') name++;
    int which = -1;
    for (int i = 0; i < T_N; i++)
        if (strcmp(name, table_names[i]) == 0) which = i;
    if (which < 0) {
        fprintf(stderr, "nereus-trace: csv: no table '%s' (steps, stages, plans, drift, decisions, transitions)\n",
                name);
        return 2;
    }
    const Table *t = &tf->t[which];
    for (int c = 0; c < t->ncol; c++) printf("%s%s", c ? "," : "", t->col[c].name);
    if (which == T_STAGES) printf(",stage_name");
    printf("\n");
    for (size_t k = 0; k < t->n; k++) {
        for (int c = 0; c < t->ncol; c++) {
            const Col *col = &t->col[c];
            if (c) putchar(',');
            if (col->cls == C_INT) printf("%lld", (long long)col->i[k]);
            else if (col->cls == C_FLT) printf("%.9g", col->f[k]);
            else csv_str(col->s[k]);
        }
        if (which == T_STAGES) {
            int id = (int)num(t, "stage", k);
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

static int cmd_compare(const TraceFile *A, const TraceFile *B) {
    Stats a, b;
    stats(A, &a);
    stats(B, &b);
    printf("A: %s (run \"%s\", %d rank(s), %s)\n", A->path, A->run_name, A->ranks, A->complete ? "complete" : "NOT complete");
    printf("B: %s (run \"%s\", %d rank(s), %s)\n", B->path, B->run_name, B->ranks, B->complete ? "complete" : "NOT complete");
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
        cmp_row(what, a.st_rows[id] ? a.st_s[id] / a.st_rows[id] : NAN, b.st_rows[id] ? b.st_s[id] / b.st_rows[id] : NAN,
                "%.4f");
        snprintf(what, sizeof what, "%s MFU %%", A->stage_names[id]);
        cmp_row(what, run_mfu(&a, id), run_mfu(&b, id), "%.1f");
    }
    /* MFU over the run: Σ FLOPs / Σ seconds against the mean peak */
    cmp_row("transitions", (double)a.ntx, (double)b.ntx, "%.0f");
    cmp_row("transition s", a.tx_s, b.tx_s, "%.4f");
    cmp_row("transition share %", a.runtime > 0 ? 100 * a.tx_s / a.runtime : 0, b.runtime > 0 ? 100 * b.tx_s / b.runtime : 0,
            "%.2f");
    return 0;
}

/* replay: the admission rule (planner.h admit) over the recorded decisions
 * with other γ. What it cannot do yet says so: re-running the drift
 * monitor with other thresholds and pricing the plans that were not taken
 * need the planner's cost model in the trace. */
static int cmd_replay(const TraceFile *tf, const double *gammas, int ng, double threshold) {
    const Table *de = &tf->t[T_DECISIONS];
    printf("replay %s: %zu recorded decision(s), %zu drift event(s), %zu transition(s)\n", tf->path, de->n,
           tf->t[T_DRIFT].n, tf->t[T_TRANSITIONS].n);
    if (de->n == 0) {
        printf("replay: needs the planner's decisions (/decisions is empty in this trace)\n");
        return 0;
    }
    if (isfinite(threshold))
        printf("replay: --threshold %.3g: re-running the drift monitor needs the recorded signals, which this trace "
               "format does not hold yet; the recorded decisions are replayed as they were triggered\n",
               threshold);
    /* the recorded γ first: it must reproduce the recorded decisions */
    double g_rec = num(de, "gamma", 0);
    size_t rec_adm = 0;
    for (size_t k = 0; k < de->n; k++) rec_adm += num(de, "admitted", k) != 0;
    int nrun = ng + 1;
    for (int r = 0; r < nrun; r++) {
        double g = r == 0 ? g_rec : gammas[r - 1];
        size_t adm = 0, agree = 0;
        double cost = 0;
        printf("\ngamma %s%.3g:\n", r == 0 ? "(recorded) " : "", g);
        printf("  %8s %8s %10s %10s %10s %8s %9s  %s\n", "step", "urgent", "dL s", "C s", "H steps", "recorded",
               "replayed", "the rule (planner.h admit)");
        for (size_t k = 0; k < de->n; k++) {
            double Ln = num(de, "L_now_s", k), Lw = num(de, "L_new_s", k), C = num(de, "C_s", k),
                   H = num(de, "H_steps", k);
            int urgent = num(de, "urgent", k) != 0, rec = num(de, "admitted", k) != 0;
            if (r == 0 && num(de, "gamma", k) != g_rec) g = num(de, "gamma", k); /* γ as each decision had it */
            char why[256];
            int now = admit(Ln, Lw, C, g, H, urgent, why, sizeof why);
            adm += now;
            agree += now == rec;
            if (now) cost += C;
            printf("  %8lld %8s %10.4f %10.4f %10.1f %8s %9s  %s\n", (long long)num(de, "step", k), urgent ? "yes" : "no",
                   Ln - Lw, C, H, rec ? "admit" : "refuse", now ? "admit" : "refuse", why);
        }
        printf("  admitted %zu of %zu (recorded %zu); %zu agree with the recording; predicted transition cost of the "
               "admitted: %.4f s\n",
               adm, de->n, rec_adm, agree, cost);
        if (r == 0)
            printf("  %s\n", agree == de->n ? "the recorded gamma reproduces every recorded decision"
                                            : "the recorded gamma does NOT reproduce the recorded decisions");
    }
    printf("\nreplay: the predicted total time and the regret against the best static plan and the recorded run need "
           "the planner's per-plan step predictions for the plans not taken; this trace does not hold them, so they "
           "are not computed\n");
    return 0;
}

static int usage(void) {
    fprintf(stderr,
            "usage: nereus-trace summary FILE\n"
            "       nereus-trace plans FILE\n"
            "       nereus-trace transitions FILE\n"
            "       nereus-trace csv FILE TABLE      TABLE: steps stages plans drift decisions transitions\n"
            "       nereus-trace compare A B\n"
            "       nereus-trace replay FILE [--gamma G]... [--threshold X]\n");
    return 2;
}

static int is_cmd(const char *s) {
    static const char *cmds[] = {"summary", "plans", "transitions", "csv", "compare", "replay"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (strcmp(s, cmds[i]) == 0) return 1;
    return 0;
}

/* A corrupt file can still make the HDF5 library fault (the checksums of the
 * format catch most damage, not all): say so in one line, no core dump. */
static const char *reading = "?";
static void on_fault(int sig) {
    char msg[1200];
    int n = snprintf(msg, sizeof msg,
                     "nereus-trace: %s: corrupt trace: the HDF5 library crashed reading it (signal %d)\n", reading, sig);
    if (n > 0 && write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1) < 0) _exit(1);
    _exit(1);
}

static int load_or_say(const char *path, TraceFile *tf) {
    reading = path;
    if (trace_load(path, tf) == 0) return 0;
    fprintf(stderr, "nereus-trace: %s\n", err);
    return 1;
}

int main(int argc, char **argv) {
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* our one message, not HDF5's stack */
    int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], on_fault);
    if (argc < 3) return usage();
    if (!is_cmd(argv[1]) && is_cmd(argv[2])) { /* FILE SUBCOMMAND ... */
        char *t = argv[1];
        argv[1] = argv[2];
        argv[2] = t;
    }
    const char *cmd = argv[1];
    TraceFile a, b;
    if (strcmp(cmd, "compare") == 0) {
        if (argc != 4) return usage();
        if (load_or_say(argv[2], &a) || load_or_say(argv[3], &b)) return 1;
        return cmd_compare(&a, &b);
    }
    if (strcmp(cmd, "csv") == 0) {
        if (argc != 4) return usage();
        if (load_or_say(argv[2], &a)) return 1;
        return cmd_csv(&a, argv[3]);
    }
    if (strcmp(cmd, "replay") == 0) {
        double g[32], thr = NAN;
        int ng = 0;
        for (int i = 3; i < argc; i++) {
            char *end;
            if (i + 1 < argc && strcmp(argv[i], "--gamma") == 0) {
                double v = strtod(argv[++i], &end);
                if (*end || !isfinite(v) || v < 0 || ng == 32) return usage();
                g[ng++] = v;
            } else if (i + 1 < argc && strcmp(argv[i], "--threshold") == 0) {
                thr = strtod(argv[++i], &end);
                if (*end || !isfinite(thr) || thr <= 0) return usage();
            } else {
                fprintf(stderr, "nereus-trace: replay: unknown option '%s'\n", argv[i]);
                return usage();
            }
        }
        if (load_or_say(argv[2], &a)) return 1;
        return cmd_replay(&a, g, ng, thr);
    }
    if (argc != 3) return usage();
    if (strcmp(cmd, "summary") == 0) return load_or_say(argv[2], &a) ? 1 : cmd_summary(&a);
    if (strcmp(cmd, "plans") == 0) return load_or_say(argv[2], &a) ? 1 : cmd_plans(&a);
    if (strcmp(cmd, "transitions") == 0) return load_or_say(argv[2], &a) ? 1 : cmd_transitions(&a);
    return usage();
}
