/* trace_read.c — a trace into memory (trace_tool.h TraceFile): the file
 * opened and checked to be a trace of format 1, its attributes, every table
 * the schema lists (trace_schema.h) read whole, column by column, /planner,
 * /deck and /complete. One process, the serial HDF5 API, no MPI.
 *
 * A table is read by the columns the file has, each matched by name with a
 * one-member compound memory type, so a column a later writer adds is read
 * along and ignored, and a required column that is missing is an error that
 * names it. Every failure is one message naming the file (trace_read_error);
 * the first one wins.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nereus/h5str.h" /* the string datasets, as src/io reads them */
#include "trace_tool.h"

#pragma GCC diagnostic ignored "-Wformat-truncation"

#define MAX_ROWS 50000000ull /* a larger table is taken for a corrupt extent */

static char read_error[2048];

int trace_read_fail(const char *fmt, ...) {
    if (read_error[0]) return -1; /* the first failure wins */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(read_error, sizeof read_error, fmt, ap);
    va_end(ap);
    return -1;
}

const char *trace_read_error(void) { return read_error; }

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
void trace_h5_reason(char *buf, size_t len) {
    Reason r = {buf, len, 0};
    buf[0] = 0;
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, reason_cb, &r);
}

/* ---- tables ------------------------------------------------------------------- */

/* column c of /tname: n rows, the memory space ms and the file space fspace (H5S_ALL and the whole extent, or a
   prefix of the rows selected) */
static int read_col(const char *path, hid_t d, const char *tname, hid_t mtype_member, Col *c, size_t n, hid_t ms,
                    hid_t fspace) {
    hid_t mt = -1;
    size_t sz = H5Tget_size(mtype_member);
    void *buf = NULL;
    if ((mt = H5Tcreate(H5T_COMPOUND, sz)) < 0 || H5Tinsert(mt, c->name, 0, mtype_member) < 0) goto h5fail;
    buf = calloc(n ? n : 1, sz);
    if (!buf) return trace_read_fail("%s: /%s: out of memory for %zu rows", path, tname, n);
    if (n && H5Dread(d, mt, ms, ms == H5S_ALL ? H5S_ALL : fspace, H5P_DEFAULT, buf) < 0) goto h5fail;
    if (c->cls == C_INT) c->i = buf;
    else if (c->cls == C_FLT || c->cls == C_VEC) c->f = buf;
    else {
        char **v = buf;
        c->s = calloc(n ? n : 1, sizeof *c->s);
        for (size_t k = 0; k < n; k++) c->s[k] = strdup(v[k] ? v[k] : "");
        if (n) H5Dvlen_reclaim(mt, ms == H5S_ALL ? fspace : ms, H5P_DEFAULT, buf);
        free(buf);
    }
    H5Tclose(mt);
    return 0;
h5fail: {
    char r[512];
    trace_h5_reason(r, sizeof r);
    free(buf);
    if (mt >= 0) H5Tclose(mt);
    return trace_read_fail("%s: cannot read column '%s' of /%s: truncated or corrupt trace (HDF5: %s)", path, c->name,
                           tname, r[0] ? r : "?");
}
}

/* a failing HDF5 call on table name: its innermost reason (taken first: every HDF5 call clears the error stack) */
static int table_h5_fail(const char *path, const char *name) {
    char r[512];
    trace_h5_reason(r, sizeof r);
    return trace_read_fail("%s: cannot read /%s: truncated or corrupt trace (HDF5: %s)", path, name, r[0] ? r : "?");
}

/* The memory type to read member m of the file's type ft with, and the column's class into c; 0 when the member is
 * not one of ours (a fixed-length string, an array of other than up to 64 reals, another class): left out. vs is
 * the variable-length string type, its character set set to the member's (HDF5 converts no string between
 * character sets); an array type is new (*made = 1: the caller closes it); negative: HDF5 failed. */
static hid_t member_type(hid_t ft, unsigned m, hid_t vs, Col *c, int *made) {
    H5T_class_t cl = H5Tget_member_class(ft, m);
    *made = 0;
    if (cl == H5T_INTEGER) return c->cls = C_INT, H5T_NATIVE_INT64;
    if (cl == H5T_FLOAT) return c->cls = C_FLT, H5T_NATIVE_DOUBLE;
    if (cl != H5T_ARRAY && cl != H5T_STRING) return 0;
    hid_t mty = H5Tget_member_type(ft, m);
    if (cl == H5T_STRING) {
        int vl = H5Tis_variable_str(mty);
        H5T_cset_t cs = H5Tget_cset(mty);
        H5Tclose(mty);
        if (vl <= 0) return 0;
        c->cls = C_STR;
        H5Tset_cset(vs, cs);
        return vs;
    }
    /* a 1-D array of reals (/signals eff) */
    hid_t base = mty >= 0 ? H5Tget_super(mty) : -1;
    hsize_t dim[4] = {0};
    int ok = base >= 0 && H5Tget_class(base) == H5T_FLOAT && H5Tget_array_ndims(mty) == 1 &&
             H5Tget_array_dims2(mty, dim) == 1 && dim[0] >= 1 && dim[0] <= 64;
    if (base >= 0) H5Tclose(base);
    if (mty >= 0) H5Tclose(mty);
    if (!ok) return 0;
    c->cls = C_VEC;
    c->w = (int)dim[0];
    *made = 1;
    return H5Tarray_create2(H5T_NATIVE_DOUBLE, 1, dim);
}

/* the rows [0, *n) of d's file space sp to read: all (ms H5S_ALL), or, in a trace that is not complete, those before
 * its first chunk never written (with a note; *n and *ms then set) */
static int rows_to_read(const char *path, hid_t f, hid_t d, hid_t ft, hid_t sp, const char *name, int cut_short,
                        hsize_t *n, hid_t *ms) {
    hsize_t stored = *n;
    if (trace_check_storage(path, f, d, ft, *n, name, cut_short ? &stored : NULL) != 0) return -1;
    if (stored == *n) return 0;
    fprintf(stderr, "nereus-trace: note: %s: /%s: rows %llu-%llu were never written (the run stopped before "
            "their chunk reached the file); the %llu before them are read\n", path, name,
            (unsigned long long)stored, (unsigned long long)*n - 1, (unsigned long long)stored);
    hsize_t zero = 0;
    if (H5Sselect_hyperslab(sp, H5S_SELECT_SET, &zero, NULL, &stored, NULL) < 0 ||
        (*ms = H5Screate_simple(1, &stored, NULL)) < 0)
        return table_h5_fail(path, name);
    *n = stored;
    return 0;
}

/* every column of ours of table d (type ft, n rows) into t */
static int read_columns(const char *path, hid_t d, hid_t ft, const char *name, Table *t, size_t n, hid_t ms, hid_t sp) {
    int nm = H5Tget_nmembers(ft);
    if (nm <= 0) return table_h5_fail(path, name);
    t->col = calloc((size_t)nm, sizeof *t->col);
    hid_t vs = H5Tcopy(H5T_C_S1);
    H5Tset_size(vs, H5T_VARIABLE);
    int rc = 0;
    for (int m = 0; m < nm && rc == 0; m++) {
        Col *c = &t->col[t->ncol];
        char *mn = H5Tget_member_name(ft, (unsigned)m);
        if (!mn) {
            rc = table_h5_fail(path, name);
            break;
        }
        snprintf(c->name, sizeof c->name, "%s", mn);
        H5free_memory(mn);
        int made;
        hid_t mtm = member_type(ft, (unsigned)m, vs, c, &made);
        if (mtm < 0) rc = table_h5_fail(path, name);
        else if (mtm > 0 && (rc = read_col(path, d, name, mtm, c, n, ms, sp)) == 0) t->ncol++;
        if (made && mtm > 0) H5Tclose(mtm);
    }
    H5Tclose(vs);
    return rc;
}

/* /NAME into t; cut_short: the trace is not complete, and rows past the last chunk the file holds are left out
   (a run stopped by a full disk or a kill between growing a table and writing its chunk), with a note */
static int read_table(const char *path, hid_t f, int which, Table *t, int cut_short) {
    const char *name = trace_tables[which].name;
    t->name = name;
    hid_t d = -1, ft = -1, sp = -1, ms = H5S_ALL;
    if (H5Lexists(f, name, H5P_DEFAULT) <= 0)
        return trace_read_fail("%s: no table /%s: not a complete trace of format %d", path, name, TRACE_FORMAT);
    hsize_t n = 0;
    int rc;
    if ((d = H5Dopen2(f, name, H5P_DEFAULT)) < 0 || (ft = H5Dget_type(d)) < 0 || (sp = H5Dget_space(d)) < 0)
        rc = table_h5_fail(path, name);
    else if (H5Tget_class(ft) != H5T_COMPOUND || H5Sget_simple_extent_ndims(sp) != 1)
        rc = trace_read_fail("%s: /%s is not a 1-D table of a compound type", path, name);
    else if (H5Sget_simple_extent_dims(sp, &n, NULL), n > MAX_ROWS)
        rc = trace_read_fail("%s: /%s claims %llu rows: corrupt trace", path, name, (unsigned long long)n);
    else if ((rc = rows_to_read(path, f, d, ft, sp, name, cut_short, &n, &ms)) == 0) {
        t->n = (size_t)n;
        rc = read_columns(path, d, ft, name, t, t->n, ms, sp);
    }
    if (ms != H5S_ALL && ms >= 0) H5Sclose(ms);
    if (sp >= 0) H5Sclose(sp);
    if (ft >= 0) H5Tclose(ft);
    if (d >= 0) H5Dclose(d);
    return rc;
}

Col *table_col(const Table *t, const char *name) {
    for (int c = 0; c < t->ncol; c++)
        if (strcmp(t->col[c].name, name) == 0) return &t->col[c];
    return NULL;
}

double table_num(const Table *t, const char *name, size_t k) {
    const Col *c = table_col(t, name);
    if (!c || k >= t->n) return NAN;
    return c->cls == C_INT ? (double)c->i[k] : c->cls == C_FLT ? c->f[k] : NAN;
}

const char *table_str(const Table *t, const char *name, size_t k) {
    const Col *c = table_col(t, name);
    return c && c->cls == C_STR && k < t->n ? c->s[k] : "";
}

/* every column the schema requires of table `which` */
static int check_columns(const TraceFile *tf, int which) {
    const TraceTable *tt = &trace_tables[which];
    for (int c = 0; c < tt->ncol; c++)
        if (tt->col[c].required && !table_col(&tf->t[which], tt->col[c].name))
            return trace_read_fail("%s: /%s has no column '%s': not a trace of format %d", tf->path, tt->name,
                                   tt->col[c].name, TRACE_FORMAT);
    return 0;
}

/* ---- attributes ---------------------------------------------------------------- */

static int attr_str(hid_t loc, const char *name, char *out, size_t len) {
    out[0] = 0;
    htri_t ex = H5Aexists(loc, name);
    if (ex <= 0) return ex == 0 ? -1 : -2;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT), t = a >= 0 ? H5Aget_type(a) : -1, mt = -1;
    int rc = -2;
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
    htri_t ex = H5Aexists(loc, name);
    if (ex <= 0) return ex == 0 ? -1 : -2;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT), s = a >= 0 ? H5Aget_space(a) : -1;
    int rc = -2;
    if (s >= 0 && (size_t)H5Sget_simple_extent_npoints(s) == n && H5Aread(a, mtype, out) >= 0) rc = 0;
    if (s >= 0) H5Sclose(s);
    if (a >= 0) H5Aclose(a);
    return rc;
}

/* rows `keep` (nonzero) of src into dst (the same columns) */
static void table_subset(const Table *src, const int *keep, int want, Table *dst) {
    memset(dst, 0, sizeof *dst);
    dst->name = src->name;
    dst->ncol = src->ncol;
    dst->col = calloc((size_t)src->ncol + 1, sizeof *dst->col);
    for (size_t k = 0; k < src->n; k++) dst->n += (keep[k] != 0) == want;
    for (int c = 0; c < src->ncol; c++) {
        const Col *a = &src->col[c];
        Col *b = &dst->col[c];
        *b = *a;
        b->i = NULL;
        b->f = NULL;
        b->s = NULL;
        size_t w = a->cls == C_VEC ? (size_t)a->w : 1, m = 0;
        if (a->cls == C_INT) b->i = calloc(dst->n + 1, sizeof *b->i);
        else if (a->cls == C_STR) b->s = calloc(dst->n + 1, sizeof *b->s);
        else b->f = calloc((dst->n + 1) * w, sizeof *b->f);
        for (size_t k = 0; k < src->n; k++) {
            if ((keep[k] != 0) != want) continue;
            if (a->cls == C_INT) b->i[m] = a->i[k];
            else if (a->cls == C_STR) b->s[m] = a->s[k];
            else memcpy(b->f + m * w, a->f + k * w, w * sizeof *b->f);
            m++;
        }
    }
}

/* /decisions holds the rule's decisions, rows for a change of plan refused before anything moved (admitted 0,
 * to_plan −1, NaN numbers: trace_refused) and the measure-and-revert guard's moves back (the reason starts
 * "measured revert"): split them */
static void split_decisions(TraceFile *tf) {
    const Table *de = &tf->t[TRACE_DECISIONS];
    int *kind = calloc(de->n + 1, sizeof *kind), *is = calloc(de->n + 1, sizeof *is);
    for (size_t k = 0; k < de->n; k++) {
        const char *why = table_str(de, DECISIONS(reason), k);
        if (table_num(de, DECISIONS(admitted), k) == 0 && table_num(de, DECISIONS(to_plan), k) == -1 && isnan(table_num(de, DECISIONS(L_now_s), k)) &&
            isnan(table_num(de, DECISIONS(L_new_s), k)) && isnan(table_num(de, DECISIONS(C_s), k)))
            kind[k] = 1;
        else if (why && strncmp(why, "measured revert", 15) == 0)
            kind[k] = 2;
    }
    Table *out[3] = {&tf->rule, &tf->refusals, &tf->reverts};
    for (int c = 0; c < 3; c++) {
        for (size_t k = 0; k < de->n; k++) is[k] = kind[k] == c;
        table_subset(de, is, 1, out[c]);
    }
    free(kind);
    free(is);
}

/* /planner's attributes, as trace_planner_attrs lists them, into tf->pa; has_planner = 1 when every required one
 * is there (an optional one missing reads as 0). An attribute missing is an older trace (the replay says what
 * it leaves out); one there that does not read (H5Aexists or the read failing) is damage, as is a /planner that
 * does not open. The required ones are read first, then the optional: the last one missing, and the last one
 * damaged, are named. */
static int read_planner(hid_t f, TraceFile *tf) {
    if (H5Lexists(f, "planner", H5P_DEFAULT) <= 0) {
        snprintf(tf->planner_missing, sizeof tf->planner_missing, "no /planner");
        return 0;
    }
    hid_t d = H5Dopen2(f, "planner", H5P_DEFAULT);
    if (d < 0) return trace_read_fail("%s: /planner does not open: the file is damaged", tf->path);
    const char *miss = NULL, *bad = NULL;
    for (int pass = 1; pass >= 0; pass--)
        for (int i = 0; i < trace_planner_attrs.nattr; i++) {
            const TraceAttr *a = &trace_planner_attrs.attr[i];
            if (a->required != pass) continue;
            void *v = (char *)&tf->pa + a->offset;
            int rc;
            if (a->type == TRACE_STR) {
                char s[256];
                if ((rc = attr_str(d, a->name, s, sizeof s)) == 0) *(const char **)v = strdup(s);
            } else {
                rc = attr_num(d, a->name, a->type == TRACE_F64 ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64, v, 1);
            }
            if (rc == -2) bad = a->name;
            else if (rc == -1 && a->required) miss = a->name;
            if (rc != 0 && !a->required) memset(v, 0, a->type == TRACE_F64 ? sizeof(double) : sizeof(int64_t));
        }
    H5Dclose(d);
    if (bad) return trace_read_fail("%s: /planner attribute %s does not read: the file is damaged", tf->path, bad);
    if (miss) snprintf(tf->planner_missing, sizeof tf->planner_missing, "/planner has no attribute %s", miss);
    else tf->has_planner = 1;
    return 0;
}

/* the file at path opened read-only, checked to be HDF5; −1 with the failure set */
static hid_t open_file(const char *path) {
    struct stat sb;
    if (stat(path, &sb) != 0) return trace_read_fail("%s: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode)) return trace_read_fail("%s: is a directory, not a trace", path);
    if (H5Fis_hdf5(path) <= 0) return trace_read_fail("%s: not an HDF5 file (no HDF5 signature): not a trace", path);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
#if H5_VERSION_GE(1, 10, 7)
    H5Pset_file_locking(fapl, 0, 1); /* the writer does not lock either: a running trace can be read */
#endif
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    if (f < 0) {
        char r[512];
        trace_h5_reason(r, sizeof r); /* before any other HDF5 call: each clears the error stack */
        H5Pclose(fapl);
        return trace_read_fail("%s: %s HDF5 file, cannot open it as a trace (HDF5: %s)", path,
                               strstr(r, "truncated") ? "truncated" : "corrupt or unreadable", r[0] ? r : "?");
    }
    H5Pclose(fapl);
    return f;
}

/* the root attributes: a trace of this format, and what made it */
static int read_root(hid_t f, TraceFile *tf) {
    char fmt[64];
    int32_t ver = 0;
    if (attr_str(f, "format", fmt, sizeof fmt) != 0 || strcmp(fmt, TRACE_FORMAT_NAME) != 0)
        return trace_read_fail("%s: an HDF5 file but not a Nereus trace (no root attribute format = \"" TRACE_FORMAT_NAME
                               "\")", tf->path);
    if (attr_num(f, "format_version", H5T_NATIVE_INT32, &ver, 1) != 0 || ver != TRACE_FORMAT)
        return trace_read_fail("%s: trace format version %d; this nereus-trace reads version %d", tf->path, ver,
                               TRACE_FORMAT);
    attr_str(f, "run_name", tf->run_name, sizeof tf->run_name);
    if (attr_str(f, "algorithm", tf->algorithm, sizeof tf->algorithm) != 0) snprintf(tf->algorithm, sizeof tf->algorithm, "ppo");
    int32_t g = 1;
    tf->group_size = attr_num(f, "group_size", H5T_NATIVE_INT32, &g, 1) == 0 ? g : 1;
    attr_str(f, "backend", tf->backend, sizeof tf->backend);
    attr_str(f, "started", tf->started, sizeof tf->started);
    attr_str(f, "source_commit", tf->commit, sizeof tf->commit);
    attr_str(f, "counters", tf->counters, sizeof tf->counters);
    attr_num(f, "ranks", H5T_NATIVE_INT, &tf->ranks, 1);
    char names[512];
    attr_str(f, "stage_names", names, sizeof names);
    int k = 0;
    for (char *tok = strtok(names, ","); tok && k < NSTAGE; tok = strtok(NULL, ","))
        snprintf(tf->stage_names[k++], 32, "%s", tok);
    for (; k < NSTAGE; k++) snprintf(tf->stage_names[k], 32, "stage%d", k);
    if (tf->ranks > 0 && tf->ranks <= 1 << 20) {
        tf->npeak = tf->ranks;
        tf->peak_solo = calloc((size_t)tf->ranks, sizeof(double));
        tf->peak_together = calloc((size_t)tf->ranks, sizeof(double));
        if (attr_num(f, "peak_gflops_solo", H5T_NATIVE_DOUBLE, tf->peak_solo, (size_t)tf->ranks) != 0 ||
            attr_num(f, "peak_gflops_together", H5T_NATIVE_DOUBLE, tf->peak_together, (size_t)tf->ranks) != 0)
            tf->npeak = 0;
    }
    return 0;
}

/* /complete, when there: it must hold 1 (the writer writes 1) */
static int read_complete(hid_t f, TraceFile *tf) {
    if (H5Lexists(f, "complete", H5P_DEFAULT) <= 0) return 0;
    hid_t d = H5Dopen2(f, "complete", H5P_DEFAULT);
    int32_t one = 0;
    if (d < 0 || H5Dread(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, &one) < 0) {
        if (d >= 0) H5Dclose(d);
        return trace_read_fail("%s: /complete does not read: the file is damaged", tf->path);
    }
    if (one != 1) {
        H5Dclose(d);
        return trace_read_fail("%s: /complete holds %d, not 1: the file is damaged", tf->path, (int)one);
    }
    tf->complete = 1;
    attr_str(d, "status", tf->status, sizeof tf->status);
    attr_num(d, "ppo_s", H5T_NATIVE_DOUBLE, &tf->ppo_s, 1);
    attr_num(d, "trace_s", H5T_NATIVE_DOUBLE, &tf->trace_s, 1);
    attr_num(d, "mfu_clamped", H5T_NATIVE_INT64, &tf->mfu_clamped, 1);
    H5Dclose(d);
    return 0;
}

/* every table of the schema; one that is not required (/signals) may be missing */
static int read_tables(hid_t f, TraceFile *tf) {
    for (int i = 0; i < TRACE_NTABLES; i++) {
        const TraceTable *tt = &trace_tables[i];
        if (!tt->required) {
            tf->t[i].name = tt->name;
            if (H5Lexists(f, tt->name, H5P_DEFAULT) <= 0) continue;
            if (i == TRACE_SIGNALS) tf->has_signals = 1;
        }
        if (read_table(tf->path, f, i, &tf->t[i], !tf->complete) != 0 || check_columns(tf, i) != 0 ||
            trace_check_strings(tf->path, &tf->t[i]) != 0)
            return -1;
    }
    return 0;
}

int trace_load(const char *path, TraceFile *tf) {
    memset(tf, 0, sizeof *tf);
    tf->path = path;
    hid_t f = open_file(path);
    if (f < 0) return -1;
    int rc = -1;
    /* /complete before the tables: in a trace that is not complete, a table may end in chunks its last flush did
       not write */
    if (read_root(f, tf) != 0 || read_complete(f, tf) != 0 || read_tables(f, tf) != 0) goto out;
    /* /planner, /deck and /complete may be missing (an older trace, a run without a planner or not finished), and
       the commands say what that leaves out; one that is there but does not read is damage, refused like a
       damaged table rather than read as missing (a replay would otherwise answer another question) */
    if (read_planner(f, tf) != 0) goto out;
    tf->deck = nr_h5_dset_str(f, path, "deck", tf->deck_why, sizeof tf->deck_why); /* NULL: missing, unreadable, corrupt */
    if (!tf->deck && H5Lexists(f, "deck", H5P_DEFAULT) > 0) {
        trace_read_fail("%s", tf->deck_why);
        goto out;
    }
    split_decisions(tf);
    rc = 0;
out:
    H5Fclose(f);
    return rc;
}
