/* trace.c — the run's HDF5 trace (trace.h; the format is trace_schema.h,
 * whose table this file writes by).
 *
 * Rank 0 alone opens the file, with the serial API (sec2 driver, HDF5's
 * default), and keeps it and every table's dataset open for the whole run.
 * A table is a 1-D dataset of a packed compound type, chunked, with an
 * unlimited maximum extent; a row is appended by growing the extent and
 * writing a one-row hyperslab. After every append the file is flushed
 * (H5Fflush): the metadata and the chunks then sit in the file, so a run
 * killed between two steps leaves a trace that opens and holds every step
 * it finished. The file format is HDF5 1.8's (libver bounds V18): its
 * superblock and object headers carry checksums, and every chunk has a
 * Fletcher-32 checksum, so a corrupt trace fails to read rather than reads
 * wrong; 1.10's format would record "open for writing" in the superblock
 * and refuse a killed run's trace until h5clear. File locking is off on the
 * writer so that a reader can look at a running trace.
 *
 * Per model-stage FLOPs and bytes come from the model (stage_work below,
 * the formulas are in docs/TRACE.md); seconds and counters from counters.c.
 */
#include "nereus/trace.h"

/* messages and paths are cut to their buffers on purpose */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "nereus/comm.h"
#include "nereus/counters.h"
#include "nereus/util.h"

int trace_path(const Config *cfg, int64_t start_step, char *buf, size_t len) {
    const char *f = cfg->trace.file;
    if (strcmp(f, "none") == 0) {
        if (len) buf[0] = 0;
        return 1;
    }
    if (f[0]) snprintf(buf, len, "%s", f);
    else if (start_step > 0) snprintf(buf, len, "%s_step%06lld.trace.h5", cfg->run.name, (long long)start_step);
    else snprintf(buf, len, "%s.trace.h5", cfg->run.name);
    return 0;
}

#ifdef NEREUS_HAVE_HDF5
#include "h5_int.h"

#define PATH_LEN 512
#define DECK_ATTR_MAX 60000 /* attributes live in the object header (64 KiB at most): longer decks only in /deck */

_Static_assert(TRACE_MAX_EVENTS == COUNTERS_MAX_EVENTS, "trace_schema.h TRACE_MAX_EVENTS is counters.h's");

typedef struct Table {
    const char *name;
    hid_t d, mt;
    hsize_t n;
} Table;

struct Trace {
    int rank, world;
    int open;                 /* rank 0: the file is open and sound */
    hid_t f;
    char path[PATH_LEN];
    Table tb[TRACE_NTABLES];
    hid_t vstr;               /* variable-length UTF-8 string */
    double t_open;            /* nr_now() at the open (rank 0) */
    double write_s;           /* rank 0's time in the trace's own work */
    int64_t steps_written, mfu_clamped;
    const Config *cfg;
    GPTConfig actor, critic;
    int have_rm;
    CounterPeak peak;
};

/* ---- small helpers ------------------------------------------------------------ */

/* A table's strings are variable-length: their bytes live in HDF5's global heap, which no checksum covers (the
 * row's chunk, under Fletcher-32, holds only their heap addresses). So each table with strings has a column
 * strings_fnv: nr_cksum_strs of the row's strings in column order (n of them: a, then b), as int64 bits, never 0;
 * nereus-trace checks it (0: not computed, e.g. a row a user appended with h5py, and not checked). */
static int64_t row_fnv(int n, const char *a, const char *b) {
    const char *s[2] = {a, b};
    int64_t v = (int64_t)nr_cksum_strs(s, n);
    return v ? v : 1;
}

static void utc_now(char *buf, size_t len) {
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* the commit of the git checkout that holds the running executable (bin/nereus → ..): "unknown" if none */
static void source_commit(char *out, size_t len) {
    snprintf(out, len, "unknown");
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return;
    exe[n] = 0;
    char *s = strrchr(exe, '/');
    if (!s) return;
    *s = 0;
    s = strrchr(exe, '/');
    if (!s) return;
    *s = 0; /* the directory above bin/ */
    char p[PATH_MAX + 64], line[512];
    snprintf(p, sizeof p, "%s/.git/HEAD", exe);
    FILE *f = fopen(p, "r");
    if (!f) return;
    if (!fgets(line, sizeof line, f)) { fclose(f); return; }
    fclose(f);
    line[strcspn(line, "\r\n")] = 0;
    if (strncmp(line, "ref: ", 5) != 0) { /* detached */
        snprintf(out, len, "%.40s", line);
        return;
    }
    const char *ref = line + 5;
    snprintf(p, sizeof p, "%s/.git/%s", exe, ref);
    char sha[128] = "";
    if ((f = fopen(p, "r"))) {
        if (fgets(sha, sizeof sha, f)) sha[strcspn(sha, "\r\n")] = 0;
        fclose(f);
    } else { /* packed refs: "SHA REF" lines */
        snprintf(p, sizeof p, "%s/.git/packed-refs", exe);
        if ((f = fopen(p, "r"))) {
            char l2[1024];
            while (fgets(l2, sizeof l2, f)) {
                l2[strcspn(l2, "\r\n")] = 0;
                char *sp = strchr(l2, ' ');
                if (sp && strcmp(sp + 1, ref) == 0) {
                    *sp = 0;
                    snprintf(sha, sizeof sha, "%s", l2);
                    break;
                }
            }
            fclose(f);
        }
    }
    if (sha[0]) snprintf(out, len, "%.40s (%s)", sha, ref);
}

/* the trace stops on its first write failure; the run goes on */
static void trace_broken(Trace *t, const char *why) {
    nr_warn("trace: %s: writing failed (%s); no more trace records, the run goes on\n", t->path, why);
    for (int i = 0; i < TRACE_NTABLES; i++) {
        if (t->tb[i].d >= 0) H5Dclose(t->tb[i].d);
        if (t->tb[i].mt >= 0) H5Tclose(t->tb[i].mt);
        t->tb[i].d = t->tb[i].mt = -1;
    }
    H5Tclose(t->vstr);
    t->vstr = -1;
    H5Fclose(t->f);
    t->f = -1;
    t->open = 0;
}

/* table `which` of the schema, empty; its memory type mt becomes the table's */
static int table_create(H5Err *e, Trace *t, int which, hid_t mt) {
    const TraceTable *tt = &trace_tables[which];
    Table *tb = &t->tb[which];
    hid_t sp = -1, dcpl = -1, ft = -1, d = -1;
    hsize_t zero = 0, maxd = H5S_UNLIMITED, chunk = tt->chunk_rows;
    tb->name = tt->name;
    tb->mt = mt;
    h5Check(e, sp = H5Screate_simple(1, &zero, &maxd));
    h5Check(e, dcpl = H5Pcreate(H5P_DATASET_CREATE));
    h5Check(e, H5Pset_chunk(dcpl, 1, &chunk));
    h5Check(e, H5Pset_fletcher32(dcpl)); /* every chunk checksummed: a corrupt row fails to read */
    h5Check(e, ft = H5Tcopy(mt));
    h5Check(e, H5Tpack(ft));
    h5Check(e, d = H5Dcreate2(t->f, tt->name, ft, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT));
    h5Check(e, h5_attr_put_str(e, d, "doc", tt->doc));
    tb->d = d;
    H5Tclose(ft);
    H5Pclose(dcpl);
    H5Sclose(sp);
    return 0;
fail:
    if (d >= 0) H5Dclose(d);
    if (ft >= 0) H5Tclose(ft);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (sp >= 0) H5Sclose(sp);
    return -1;
}

static int table_append(H5Err *e, Table *tb, const void *rows, hsize_t k) {
    hid_t fs = -1, ms = -1;
    hsize_t n = tb->n + k;
    h5Check(e, H5Dset_extent(tb->d, &n));
    h5Check(e, fs = H5Dget_space(tb->d));
    h5Check(e, H5Sselect_hyperslab(fs, H5S_SELECT_SET, &tb->n, NULL, &k, NULL));
    h5Check(e, ms = H5Screate_simple(1, &k, NULL));
    h5Check(e, H5Dwrite(tb->d, tb->mt, ms, fs, H5P_DEFAULT, rows));
    tb->n = n;
    H5Sclose(ms);
    H5Sclose(fs);
    return 0;
fail:
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    return -1;
}

/* Free space the trace keeps beyond a write's rows: HDF5's metadata flush (object headers, chunk index, the
 * strings' heap) and the file's close. A write that fails for want of space can leave HDF5 unable to close the
 * file (HDF5 1.10: H5Fclose fails and the library's own close at MPI_Finalize then crashes), so the trace ends
 * cleanly, while it can still close the file, when less than this would be left. */
#define TRACE_SPACE_MARGIN (64.0 * 1024)

/* bytes free to this process on the trace's file system, or -1 when statvfs cannot tell */
static double trace_free_bytes(const char *path) {
    struct statvfs sv;
    if (statvfs(path, &sv) != 0) return -1;
    return (double)sv.f_bavail * (double)sv.f_frsize;
}

/* append rows to table which and flush; a failure ends the trace, and so does a file system too full to take
 * the rows with TRACE_SPACE_MARGIN to spare */
static void trace_append(Trace *t, int which, const void *rows, hsize_t k) {
    if (!t || !t->open || k == 0) return;
    char why[1024] = "";
    double room = trace_free_bytes(t->path), need = (double)k * (double)trace_tables[which].row_size + TRACE_SPACE_MARGIN;
    if (room >= 0 && room < need) {
        snprintf(why, sizeof why, "%s: No space left on device for the trace: %.0f KiB free, %.0f KiB wanted for %llu "
                 "row(s) of /%s and HDF5's metadata", t->path, room / 1024, need / 1024, (unsigned long long)k,
                 trace_tables[which].name);
        trace_broken(t, why);
        return;
    }
    H5Err e = {t->path, why, sizeof why};
    if (table_append(&e, &t->tb[which], rows, k) != 0 || H5Fflush(t->f, H5F_SCOPE_LOCAL) < 0) {
        if (!why[0]) h5_fail(&e, "H5Fflush", __FILE__, __LINE__);
        trace_broken(t, why);
    }
}

/* the memory type of table `which` (trace_schema.c), members in schema order: /stages adds one int64 member per
 * counted event, named as the event */
static hid_t table_type(H5Err *e, int which, hid_t vstr) {
    const TraceTable *tt = &trace_tables[which];
    hid_t mt = -1, member = -1;
    h5Check(e, mt = H5Tcreate(H5T_COMPOUND, tt->row_size));
    for (int c = 0; c < tt->ncol; c++) {
        const TraceColumn *col = &tt->col[c];
        hsize_t width = (hsize_t)col->width;
        switch (col->type) {
        case TRACE_I32: member = H5Tcopy(H5T_NATIVE_INT32); break;
        case TRACE_I64: member = H5Tcopy(H5T_NATIVE_INT64); break;
        case TRACE_F64: member = H5Tcopy(H5T_NATIVE_DOUBLE); break;
        case TRACE_STR: member = H5Tcopy(vstr); break;
        case TRACE_F64_ARRAY: member = H5Tarray_create2(H5T_NATIVE_DOUBLE, 1, &width); break;
        }
        h5Check(e, member);
        h5Check(e, H5Tinsert(mt, col->name, col->offset, member));
        H5Tclose(member);
        member = -1;
    }
    for (int i = 0; tt->event_columns && i < counters_nevents(); i++)
        h5Check(e, H5Tinsert(mt, counters_event(i), HOFFSET(TraceStagesRow, ev) + (size_t)i * sizeof(int64_t),
                             H5T_NATIVE_INT64));
    return mt;
fail:
    if (member >= 0) H5Tclose(member);
    if (mt >= 0) H5Tclose(mt);
    return -1;
}

/* The run_name root attribute of the Nereus trace at path into name (len bytes): 1 when path is a Nereus trace
 * (name "" where the attribute is missing), 0 when it is anything else or cannot be opened. */
static int trace_run_name(const char *path, char *name, size_t len) {
    int ours = 0;
    name[0] = 0;
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return 0;
    char *fmt = NULL, *run = NULL, scratch[256];
    H5Err qe = {path, scratch, sizeof scratch};
    scratch[0] = 0;
    if (H5Aexists(f, "format") > 0 && h5_attr_get_str(&qe, f, "/", "format", &fmt) == 0)
        ours = strcmp(fmt, TRACE_FORMAT_NAME) == 0;
    if (ours && H5Aexists(f, "run_name") > 0 && h5_attr_get_str(&qe, f, "/", "run_name", &run) == 0)
        snprintf(name, len, "%s", run);
    free(fmt);
    free(run);
    H5Fclose(f);
    return ours;
}

/* An existing file at the trace's path is never replaced silently. Another kind of file (a checkpoint, perhaps
 * the one this run restarts from, the deck itself, anything named by mistake in [trace] file) is refused
 * always; a trace an earlier run left is replaced only under [trace] overwrite = true, or by a restart
 * (--restart) of the run that wrote it: the same run resuming. Returns 0, or −1 with why. */
static int trace_may_replace(const char *path, const Config *cfg, char *why, size_t len) {
    struct stat sb;
    if (stat(path, &sb) != 0) return 0; /* nothing there (or unreachable: H5Fcreate will say) */
    char run[256];
    int ours = S_ISREG(sb.st_mode) && trace_run_name(path, run, sizeof run);
    if (!ours) {
        snprintf(why, len, "%s: the file exists and is not a Nereus trace (%s): not overwritten; name another file or remove it",
                 path, S_ISREG(sb.st_mode) ? "a checkpoint, a deck or another file" : "not a regular file");
        return -1;
    }
    if (cfg->trace.overwrite || (cfg->run.restart[0] && strcmp(run, cfg->run.name) == 0)) return 0;
    snprintf(why, len,
             "%s: a trace of an earlier run (run '%s') is there: not overwritten; give this run another file "
             "(--set trace.file=NEW.trace.h5), or replace it ([trace] overwrite = true, --set trace.overwrite=true)",
             path, run);
    return -1;
}

/* the root attributes (trace_schema.c trace_root_attrs: what made the file) and /deck; buf (len bytes) is left
 * holding the stage names, for /stages */
static int root_attrs(H5Err *e, Trace *t, const TraceJob *job, const char *counters_note, char *buf, size_t len) {
    const Config *cfg = job->cfg;
    int32_t fmt = TRACE_FORMAT, ranks = t->world, threads = cfg->run.blas_threads;
    h5Check(e, h5_attr_put_str(e, t->f, "format", TRACE_FORMAT_NAME));
    h5Check(e, h5_attr_put(e, t->f, "format_version", H5T_STD_I32LE, H5T_NATIVE_INT32, 0, &fmt));
    h5Check(e, h5_attr_put_str(e, t->f, "run_name", cfg->run.name));
    int32_t group = cfg->ppo.group_size;
    h5Check(e, h5_attr_put_str(e, t->f, "algorithm", cfg->ppo.algorithm));
    h5Check(e, h5_attr_put(e, t->f, "group_size", H5T_STD_I32LE, H5T_NATIVE_INT32, 0, &group));
    size_t dl = strlen(job->deck_text);
    if (dl < DECK_ATTR_MAX) {
        h5Check(e, h5_attr_put_str(e, t->f, "deck", job->deck_text));
    } else {
        snprintf(buf, len, "(%zu bytes: see the dataset /deck)", dl);
        h5Check(e, h5_attr_put_str(e, t->f, "deck", buf));
    }
    h5Check(e, h5_dset_put_str(e, t->f, "deck", job->deck_text));
    h5Check(e, h5_attr_put(e, t->f, "ranks", H5T_STD_I32LE, H5T_NATIVE_INT32, 0, &ranks));
    h5Check(e, h5_attr_put_str(e, t->f, "backend", job->be->name));
    h5Check(e, h5_attr_put(e, t->f, "blas_threads", H5T_STD_I32LE, H5T_NATIVE_INT32, 0, &threads));
    utc_now(buf, len);
    h5Check(e, h5_attr_put_str(e, t->f, "started", buf));
    int64_t s0 = job->start_step;
    h5Check(e, h5_attr_put(e, t->f, "start_step", H5T_STD_I64LE, H5T_NATIVE_INT64, 0, &s0));
    char commit[256];
    source_commit(commit, sizeof commit);
    h5Check(e, h5_attr_put_str(e, t->f, "source_commit", commit));
    h5Check(e, h5_attr_put_str(e, t->f, "built", __DATE__ " " __TIME__));
    h5Check(e, h5_attr_put_str(e, t->f, "counters", counters_note));
    buf[0] = 0;
    for (int i = 0; i < counters_nevents(); i++) {
        size_t l = strlen(buf);
        snprintf(buf + l, len - l, "%s%s", i ? "," : "", counters_event(i));
    }
    h5Check(e, h5_attr_put_str(e, t->f, "papi_events", buf));
    h5Check(e, h5_attr_put(e, t->f, "peak_gflops_solo", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, (hsize_t)t->world,
                           t->peak.solo));
    h5Check(e, h5_attr_put(e, t->f, "peak_gflops_together", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, (hsize_t)t->world,
                           t->peak.together));
    snprintf(buf, len,
             "best of 3 %s GEMMs of %dx%dx%d (be->matmul_forward) per rank, %s and with all ranks at once; a "
             "model-stage's peak = min(sum of its ranks' solo rates, sum of every rank's together rate)",
             job->be->name, t->peak.gemm_n, t->peak.gemm_n, t->peak.gemm_n,
             t->peak.solo_measured ? "alone (one rank after another)" : "alone not measured (> 64 ranks: together)");
    h5Check(e, h5_attr_put_str(e, t->f, "peak_method", buf));
    buf[0] = 0;
    for (int i = 0; i < PLAN_NSTAGES; i++) {
        size_t l = strlen(buf);
        snprintf(buf + l, len - l, "%s%s", i ? "," : "", plan_stage_name(i));
    }
    h5Check(e, h5_attr_put_str(e, t->f, "stage_names", buf));
    return 0;
fail:
    return -1;
}

/* rank 0: the file, its attributes and empty tables */
static int trace_create(Trace *t, const TraceJob *job, const char *counters_note, char *why, size_t len) {
    H5Err ee = {t->path, why, len}, *e = &ee;
    hid_t fapl = -1;
    h5_quiet();
    if (trace_may_replace(t->path, job->cfg, why, len) != 0) return -1;
    for (int i = 0; i < TRACE_NTABLES; i++) t->tb[i].d = t->tb[i].mt = -1;
    t->f = t->vstr = -1;
    h5Check(e, fapl = H5Pcreate(H5P_FILE_ACCESS));
#if H5_VERSION_GE(1, 10, 7)
    h5Check(e, H5Pset_file_locking(fapl, 0, 1)); /* readers may look at a running trace */
#endif
    /* the 1.8 format: checksummed superblock and object headers (a corrupt
     * file is refused, not misread), and no "open for writing" flag */
    h5Check(e, H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V18));
    t->f = H5Fcreate(t->path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (t->f < 0) { /* the caller says "cannot create the trace PATH": HDF5's reason follows */
        char r[256];
        h5_reason(r, sizeof r);
        snprintf(why, len, "%s: %s", t->path, r[0] ? r : "HDF5 could not create the file");
        goto fail;
    }
    H5Pclose(fapl);
    fapl = -1;
    h5Check(e, t->vstr = H5Tcopy(H5T_C_S1));
    h5Check(e, H5Tset_size(t->vstr, H5T_VARIABLE));
    h5Check(e, H5Tset_cset(t->vstr, H5T_CSET_UTF8));

    char buf[1024];
    h5Check(e, root_attrs(e, t, job, counters_note, buf, sizeof buf));
    for (int i = 0; i < TRACE_NTABLES; i++) {
        hid_t mt;
        h5Check(e, mt = table_type(e, i, t->vstr));
        h5Check(e, table_create(e, t, i, mt));
        if (i == TRACE_STAGES) h5Check(e, h5_attr_put_str(e, t->tb[i].d, "stage_names", buf));
    }
    h5Check(e, H5Fflush(t->f, H5F_SCOPE_LOCAL));
    return 0;
fail:
    if (fapl >= 0) H5Pclose(fapl);
    for (int i = 0; i < TRACE_NTABLES; i++) {
        if (t->tb[i].d >= 0) H5Dclose(t->tb[i].d);
        if (t->tb[i].mt >= 0) H5Tclose(t->tb[i].mt);
        t->tb[i].d = t->tb[i].mt = -1;
    }
    if (t->vstr >= 0) H5Tclose(t->vstr);
    if (t->f >= 0) H5Fclose(t->f);
    t->f = t->vstr = -1;
    return -1;
}

Trace *trace_join(MPI_Comm own, const Config *cfg) {
    char note[1024], why[512];
    if (counters_init(own, cfg->trace.papi_events, note, sizeof note, why, sizeof why) != 0) return NULL;
    Trace *t = nr_xcalloc(1, sizeof *t);
    t->rank = -1; /* never rank 0: it writes nothing */
    t->cfg = cfg;
    t->f = -1;
    return t;
}

Trace *trace_open(MPI_Comm world, const TraceJob *job, int *rc, const char **key, char *why, size_t len) {
    *rc = 0;
    *key = "trace.file";
    char path[PATH_LEN];
    if (trace_path(job->cfg, job->start_step, path, sizeof path) != 0) return NULL;
    char note[1024];
    if (counters_init(world, job->cfg->trace.papi_events, note, sizeof note, why, len) != 0) {
        *key = "trace.papi_events";
        *rc = 2;
        return NULL;
    }
    Trace *t = nr_xcalloc(1, sizeof *t);
    t->rank = comm_rank(world);
    t->world = comm_size(world);
    t->cfg = job->cfg;
    t->actor = job->actor;
    t->critic = job->critic;
    t->have_rm = job->have_rm;
    t->f = -1;
    snprintf(t->path, sizeof t->path, "%s", path);
    counters_calibrate(world, job->be, &t->peak);
    double t0 = nr_now();
    t->t_open = t0;
    char err[1024] = "";
    int64_t bad = 0;
    if (t->rank == 0) {
        bad = trace_create(t, job, note, err, sizeof err) != 0;
        t->open = !bad;
    }
    comm_bcast(world, &bad, sizeof bad, 0);
    if (bad) {
        comm_bcast(world, err, sizeof err, 0);
        snprintf(why, len, "cannot create the trace %s", err);
        counters_finish();
        counters_peak_free(&t->peak);
        free(t);
        *rc = 2;
        return NULL;
    }
    double lo = INFINITY, hi = 0;
    for (int r = 0; r < t->world; r++) {
        lo = NR_MIN(lo, t->peak.solo[r]);
        hi = NR_MAX(hi, t->peak.solo[r]);
    }
    nr_log("%s\n", note);
    nr_log("trace: %s (GEMM peak %.1f-%.1f GFLOP/s per rank alone, %.1f GFLOP/s all %d ranks together)\n", path,
           lo, hi, t->peak.together_sum, t->world);
    trace_plan(t, 0, job->start_step, job->plan_text, "deck [plan]", NAN, NAN);
    t->write_s += nr_now() - t0;
    return t;
}

/* ---- model FLOPs and bytes of one model-stage in one step ------------------------ */

/* Whole EMU (every replica, every rank): FLOPs as if each of the step's
 * T positions of all B sequences were one forward token (training: 3×, per
 * epoch); bytes = the weights streamed once per pass per replica (decode:
 * one pass per generated position, plus reading the KV cache), training
 * adds gradients and AdamW state (44 bytes per parameter per update). */
static void stage_work(const Trace *t, int id, const PlanStage *ps, int T, int P, double *flops, double *bytes) {
    const PpoConfig *ppo = &t->cfg->ppo;
    const GPTConfig *c = plan_stage_is_critic(id) ? &t->critic : &t->actor;
    double B = ppo->batch, npar = (double)gpt_logical_numel(c), w = 4.0 * npar, dp = ps->dp;
    double f = B * T * gpt_flops_per_token_fwd(c, T);
    if (id == PLAN_ACTOR_GEN) {
        double kv = 0; /* decode at position t reads t cached keys and values of every layer */
        for (int pos = P + 1; pos < T; pos++) kv += 8.0 * c->L * c->C * pos;
        *flops = f;
        *bytes = dp * w * NR_MAX(1, T - P) + B * kv;
    } else if (plan_stage_is_train(id)) {
        double updates = (double)ppo->epochs * (ppo->batch / ppo->minibatch);
        *flops = 3.0 * ppo->epochs * f;
        *bytes = dp * updates * 11.0 * w;
    } else {
        *flops = f;
        *bytes = dp * w;
    }
}

void trace_step(Trace *t, MPI_Comm world, const TraceStep *s) {
    if (!t) return;
    double t0 = nr_now(); /* the trace's own time: the reduction and the rows */
    CounterStage cs[PLAN_NSTAGES];
    counters_step_reduce(world, cs);
    if (t->rank != 0 || !t->open) return;
    TraceStepsRow r;
    memset(&r, 0, sizeof r);
    r.step = s->step;
    r.plan_id = s->plan_id;
    r.T = s->T;
    r.t_start_s = s->t0 - t->t_open;
    r.wall_s = s->wall_s;
    r.gen_s = s->times[0];
    r.inf_s = s->times[1];
    r.train_s = s->times[2];
    r.sync_s = s->times[3];
    r.tokens = (int64_t)llround(s->tokens);
    r.tokens_per_s = s->wall_s > 0 ? s->tokens / s->wall_s : 0;
    r.reward = s->reward;
    r.kl = s->kl;
    r.pg_loss = s->pg_loss;
    r.vf_loss = s->vf_loss;
    r.entropy = s->entropy;
    r.resp_len = s->resp_len;
    r.resp_longest = s->T - s->P; /* rollout_finish: T is the prompt plus the batch's longest response */
    r.clipfrac = s->clipfrac;
    r.approx_kl = s->approx_kl;
    r.grad_norm_actor = s->grad_norm_actor;
    r.grad_norm_critic = s->grad_norm_critic;
    r.sync_bytes = s->sync_bytes;
    r.kl_k3 = s->kl_k3;
    r.logp_gap = s->logp_gap;
    r.gen_kl = s->gen_kl;
    r.tis_mean = s->tis_mean;
    r.tis_capped = s->tis_capped;
    r.gen_version = s->gen_version;
    r.staleness = s->staleness;
    r.rollout_bytes = s->rollout_bytes;
    r.max_staleness = s->max_staleness;
    r.seq_tokens = s->seq_tokens;
    TraceStagesRow rows[PLAN_NSTAGES];
    int n = 0;
    for (int id = 0; id < PLAN_NSTAGES; id++) {
        if (id == PLAN_REWARD_INF && !t->have_rm) continue; /* the rule reward: no model-stage work */
        if (!plan_stage_present(s->plan, id)) continue;     /* not in the stage set (grpo: no critic) */
        const PlanStage *ps = &s->plan->stage[id];
        TraceStagesRow *g = &rows[n++];
        memset(g, 0, sizeof *g);
        g->step = s->step;
        g->stage = id;
        g->nranks = ps->nranks;
        g->nranks_ran = cs[id].nranks_ran;
        g->start_s = cs[id].start;
        g->end_s = cs[id].end;
        g->seconds = cs[id].seconds;
        stage_work(t, id, ps, s->T, s->P, &g->flops, &g->bytes);
        g->gflops = g->seconds > 0 ? g->flops / g->seconds * 1e-9 : 0;
        g->peak_gflops = counters_peak_of(&t->peak, ps);
        g->mfu = g->peak_gflops > 0 ? g->gflops / g->peak_gflops : 0;
        if (g->mfu > 1) { /* one timed GEMM underestimates what the machine can do: never report above 100% */
            g->mfu = 1;
            t->mfu_clamped++;
        }
        for (int i = 0; i < COUNTERS_MAX_EVENTS; i++) g->ev[i] = cs[id].value[i];
    }
    trace_append(t, TRACE_STEPS, &r, 1);
    trace_append(t, TRACE_STAGES, rows, (hsize_t)n);
    t->steps_written++;
    t->write_s += nr_now() - t0;
}

void trace_plan(Trace *t, int plan_id, int64_t first_step, const char *text, const char *source,
                double predicted_step_s, double predicted_mem_bytes) {
    if (!t || t->rank != 0 || !t->open) return;
    double t0 = nr_now();
    TracePlansRow r = {plan_id, first_step, text ? text : "", source ? source : "", predicted_step_s, predicted_mem_bytes, 0};
    r.strings_fnv = row_fnv(2, r.text, r.source);
    trace_append(t, TRACE_PLANS, &r, 1);
    t->write_s += nr_now() - t0;
}

void trace_transition(Trace *t, const TraceTransition *x) {
    if (!t || t->rank != 0 || !t->open) return;
    double t0 = nr_now();
    TraceTransitionsRow r = {x->step,          x->from_plan,   x->to_plan,     x->nchanges,     x->nwaves,
               x->verified,      x->sets_prebuilt, x->t0 - t->t_open, x->predicted_s, x->measured_s, x->engine_s,
               x->bytes_moved,   x->bytes_min,   x->bytes_local, x->mem_peak,     x->mem_budget,
               x->bytes_forwarded, x->setup_s, x->text ? x->text : "", 0};
    r.strings_fnv = row_fnv(1, r.text, NULL);
    trace_append(t, TRACE_TRANSITIONS, &r, 1);
    t->write_s += nr_now() - t0;
}

void trace_drift(Trace *t, int64_t step, const char *kind, double magnitude, double threshold) {
    if (!t || t->rank != 0 || !t->open) return;
    TraceDriftRow r = {step, kind ? kind : "", magnitude, threshold, 0};
    r.strings_fnv = row_fnv(1, r.kind, NULL);
    trace_append(t, TRACE_DRIFT, &r, 1);
}

void trace_decision(Trace *t, const TraceDecision *d) {
    if (!t || t->rank != 0 || !t->open) return;
    TraceDecisionsRow r = {d->step,    d->from_plan, d->to_plan, d->urgent,    d->admitted,
                     d->L_now_s, d->L_new_s,   d->dL_s,    d->C_s,       d->H_steps,
                     d->gamma,   d->foregone_s, d->staleness, d->reason ? d->reason : "", 0};
    r.strings_fnv = row_fnv(1, r.reason, NULL);
    trace_append(t, TRACE_DECISIONS, &r, 1);
}

void trace_refused(Trace *t, int64_t step, int plan_id, const char *reason) {
    TraceDecision d = {step, plan_id, -1, NAN, NAN, NAN, NAN, NAN, NAN, 0, 0, NAN, reason, -1};
    trace_decision(t, &d);
}

void trace_signals(Trace *t, const TraceSignals *g) {
    if (!t || t->rank != 0 || !t->open) return;
    TraceSignalsRow r = {g->step,        g->plan_id,    g->initial,     g->npool, g->oom, g->resp_len,
                         g->resp_longest, g->eff_signal, g->pred_step_s, g->overhead_s, g->rho_exp, {0}, {0},
                         g->pool ? g->pool : "", g->slow ? g->slow : "", 0};
    r.strings_fnv = row_fnv(2, r.pool, r.slow);
    memcpy(r.phase_scale, g->phase_scale, sizeof r.phase_scale);
    memcpy(r.eff, g->eff, sizeof r.eff);
    trace_append(t, TRACE_SIGNALS, &r, 1);
}

void trace_eval(Trace *t, const TraceEvalRow *r) {
    if (!t || t->rank != 0 || !t->open) return;
    trace_append(t, TRACE_EVAL, r, 1);
}

void trace_ranks(Trace *t, const TraceRanksRow *rows, int n) {
    if (!t || t->rank != 0 || !t->open || n <= 0) return;
    trace_append(t, TRACE_RANKS, rows, n);
}

void trace_sample(Trace *t, int64_t step, int row, double reward, const char *prompt, const char *response) {
    if (!t || t->rank != 0 || !t->open) return;
    TraceSamplesRow r = {step, row, reward, prompt ? prompt : "", response ? response : "", 0};
    r.strings_fnv = row_fnv(2, r.prompt, r.response);
    trace_append(t, TRACE_SAMPLES, &r, 1);
}

/* /planner: a scalar 1 whose attributes are trace_planner_attrs' (trace_schema.c), taken from p */
void trace_planner(Trace *t, const TracePlanner *p) {
    if (!t || t->rank != 0 || !t->open) return;
    char why[1024] = "";
    H5Err ee = {t->path, why, sizeof why}, *e = &ee;
    hid_t sp = -1, d = -1;
    int32_t one = 1;
    h5Check(e, sp = H5Screate(H5S_SCALAR));
    h5Check(e, d = H5Dcreate2(t->f, "planner", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    h5Check(e, H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, &one));
    for (int i = 0; i < trace_planner_attrs.nattr; i++) {
        const TraceAttr *a = &trace_planner_attrs.attr[i];
        const void *v = (const char *)p + a->offset;
        if (a->type == TRACE_STR) h5Check(e, h5_attr_put_str(e, d, a->name, *(const char *const *)v));
        else if (a->type == TRACE_F64) h5Check(e, h5_attr_put(e, d, a->name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 0, v));
        else h5Check(e, h5_attr_put(e, d, a->name, H5T_STD_I64LE, H5T_NATIVE_INT64, 0, v));
    }
    H5Dclose(d);
    H5Sclose(sp);
    if (H5Fflush(t->f, H5F_SCOPE_LOCAL) < 0) trace_broken(t, "flush");
    return;
fail:
    if (d >= 0) H5Dclose(d);
    if (sp >= 0) H5Sclose(sp);
    trace_broken(t, why);
}

void trace_close(Trace *t, MPI_Comm world, const char *status, int64_t ppo_steps, double ppo_s) {
    if (!t) return;
    if (t->rank == 0 && t->open) {
        double t0 = nr_now();
        char why[1024] = "";
        H5Err ee = {t->path, why, sizeof why}, *e = &ee;
        hid_t sp = -1, d = -1, dcpl = -1;
        if (status) {
            int32_t one = 1;
            char when[64];
            utc_now(when, sizeof when);
            h5Check(e, sp = H5Screate(H5S_SCALAR));
            h5Check(e, dcpl = H5Pcreate(H5P_DATASET_CREATE));
            h5Check(e, H5Pset_layout(dcpl, H5D_COMPACT)); /* the 1 inside the object header, under its checksum */
            h5Check(e, d = H5Dcreate2(t->f, "complete", H5T_STD_I32LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT));
            h5Check(e, H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, &one));
            h5Check(e, h5_attr_put_str(e, d, "status", status));
            h5Check(e, h5_attr_put_str(e, d, "ended", when));
            h5Check(e, h5_attr_put(e, d, "ppo_steps", H5T_STD_I64LE, H5T_NATIVE_INT64, 0, &ppo_steps));
            h5Check(e, h5_attr_put(e, d, "ppo_s", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 0, &ppo_s));
            h5Check(e, h5_attr_put(e, d, "mfu_clamped", H5T_STD_I64LE, H5T_NATIVE_INT64, 0, &t->mfu_clamped));
            double ws = t->write_s + (nr_now() - t0);
            h5Check(e, h5_attr_put(e, d, "trace_s", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 0, &ws));
            H5Dclose(d);
            d = -1;
            H5Sclose(sp);
            sp = -1;
            H5Pclose(dcpl);
            dcpl = -1;
        }
        for (int i = 0; i < TRACE_NTABLES; i++) {
            H5Dclose(t->tb[i].d);
            H5Tclose(t->tb[i].mt);
            t->tb[i].d = t->tb[i].mt = -1;
        }
        H5Tclose(t->vstr);
        t->vstr = -1;
        h5Check(e, H5Fclose(t->f));
        t->f = -1;
        t->write_s += nr_now() - t0;
        nr_log("trace: %s: %lld steps, %s; %.3f s in the trace's own work (%.2f ms per step)\n", t->path,
               (long long)t->steps_written, status ? "complete" : "not complete", t->write_s,
               t->steps_written ? 1e3 * t->write_s / t->steps_written : 0.0);
        goto done;
    fail:
        if (d >= 0) H5Dclose(d);
        if (sp >= 0) H5Sclose(sp);
        if (dcpl >= 0) H5Pclose(dcpl);
        nr_warn("trace: %s: closing failed (%s)\n", t->path, why);
        for (int i = 0; i < TRACE_NTABLES; i++) {
            if (t->tb[i].d >= 0) H5Dclose(t->tb[i].d);
            if (t->tb[i].mt >= 0) H5Tclose(t->tb[i].mt);
        }
        if (t->vstr >= 0) H5Tclose(t->vstr);
        if (t->f >= 0) H5Fclose(t->f);
    }
done:
    counters_finish();
    counters_peak_free(&t->peak);
    free(t);
}

#else /* built without HDF5: no trace, said once */

Trace *trace_join(MPI_Comm own, const Config *cfg) {
    (void)own, (void)cfg;
    return NULL;
}

Trace *trace_open(MPI_Comm world, const TraceJob *job, int *rc, const char **key, char *why, size_t len) {
    *rc = 0;
    *key = "trace.file";
    char path[512];
    if (trace_path(job->cfg, job->start_step, path, sizeof path) == 0)
        nr_log("trace: this build has no HDF5: no trace written (make deps, then rebuild)\n");
    return NULL;
}
void trace_step(Trace *t, MPI_Comm world, const TraceStep *s) {}
void trace_plan(Trace *t, int plan_id, int64_t first_step, const char *text, const char *source,
                double predicted_step_s, double predicted_mem_bytes) {}
void trace_transition(Trace *t, const TraceTransition *x) {}
void trace_drift(Trace *t, int64_t step, const char *kind, double magnitude, double threshold) {}
void trace_decision(Trace *t, const TraceDecision *d) {}
void trace_refused(Trace *t, int64_t step, int plan_id, const char *reason) {}
void trace_signals(Trace *t, const TraceSignals *g) {}
void trace_eval(Trace *t, const TraceEvalRow *r) {}
void trace_sample(Trace *t, int64_t step, int row, double reward, const char *prompt, const char *response) {}
void trace_ranks(Trace *t, const TraceRanksRow *rows, int n) {}
void trace_planner(Trace *t, const TracePlanner *p) {}
void trace_close(Trace *t, MPI_Comm world, const char *status, int64_t ppo_steps, double ppo_s) {}
#endif
