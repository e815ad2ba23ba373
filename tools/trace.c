/* trace.c — bin/nereus-trace: offline analysis of a run's HDF5 trace
 * (docs/TRACE.md). One process, the serial HDF5 API, no MPI.
 *   nereus-trace summary FILE          per-phase and per-model-stage breakdown, tokens/s,
 *                                      transitions and their share of the runtime, drift events
 *   nereus-trace plans FILE            the plan timeline: which plan from which step
 *   nereus-trace transitions FILE      every transition: predicted and measured, bytes, primitives
 *   nereus-trace csv FILE TABLE        a table (steps, stages, plans, drift, decisions, transitions) as CSV
 *   nereus-trace compare A B           two traces side by side
 *   nereus-trace replay FILE [--gamma G ...] [--threshold X]
 *                                      the planner's controller re-run over the recorded signals
 *                                      (/signals, /planner): the recorded decisions reproduced, other
 *                                      γ and thresholds and the static policy priced, regrets; on an
 *                                      older trace the admission rule over the recorded decisions
 * (FILE first, then the subcommand, is accepted too.)
 * Exit: 0 ok; 1 the file is missing, not HDF5, not a trace, truncated or
 * corrupt (one line on stderr naming the file and what is wrong); 2 bad
 * command line.
 *
 * Every table is read whole, column by column (a one-member compound memory
 * type per column, matched by name), so a column added by a later format
 * is ignored and a missing one is an error that names it. */
#include <errno.h>
#include <fcntl.h>
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

#include "nereus/adapt.h"   /* the controller replay re-runs */
#include "nereus/deck.h"    /* the stored deck back into a Config */
#include "nereus/planner.h" /* cost model, admit() */
#include "nereus/task.h"    /* the prompt length and vocabulary, as run.c has them */
#include "nereus/txprice.h" /* the transition pricer, as the job prices */
#include "nereus/util.h"    /* nr_cksum_strs: the checksum of a row's strings */
#include "nereus/h5str.h"   /* the string datasets, as src/io reads them */

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

enum { C_INT, C_FLT, C_STR, C_VEC };
typedef struct Col {
    char name[64];
    int cls;
    int w;          /* C_VEC: reals per row (a 1-D array member), in f row-major */
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

enum { T_STEPS, T_STAGES, T_PLANS, T_DRIFT, T_DECISIONS, T_TRANSITIONS, T_SIGNALS, T_N };
static const char *table_names[T_N] = {"steps", "stages", "plans", "drift", "decisions", "transitions", "signals"};
/* the live planner's attributes of /planner (trace.h TracePlanner) */
typedef struct PlannerAttrs {
    char policy[32], hw_name[64];
    double gamma, threshold, headroom, hw_flops, hw_mem, hw_hbm, hw_bw, hw_lat, hw_op_s;
    double tx_link, tx_copy; /* measured transition rates (0 in traces before them: the deck's link) */
    int64_t every_k, warmup, steps_total, nranks, hw_rpn, hw_cores;
} PlannerAttrs;

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
    int has_signals;        /* the trace has a /signals table (traces before the live planner have none) */
    int has_planner;        /* /planner, with every attribute the replay needs */
    char planner_missing[64];
    PlannerAttrs pa;
    char *deck;             /* the resolved deck (/deck), NULL when unreadable */
    char deck_why[512];     /* why deck is NULL (missing, not a string, not matching its checksum) */
    Table rule;             /* /decisions without the refusal rows: the decisions of the rule */
    Table refusals;         /* /decisions rows of a change of plan refused before anything moved (trace_refused) */
    Table reverts;          /* /decisions rows of the measure-and-revert guard's moves back ("measured revert: ...") */
} TraceFile;

/* column c of /tname: n rows, the memory space ms and the file space fspace (H5S_ALL and the whole extent, or a
   prefix of the rows selected) */
static int read_col(const char *path, hid_t d, const char *tname, hid_t mtype_member, Col *c, size_t n, hid_t ms,
                    hid_t fspace) {
    hid_t mt = -1;
    size_t sz = H5Tget_size(mtype_member);
    void *buf = NULL;
    if ((mt = H5Tcreate(H5T_COMPOUND, sz)) < 0 || H5Tinsert(mt, c->name, 0, mtype_member) < 0) goto h5fail;
    buf = calloc(n ? n : 1, sz);
    if (!buf) return fail("%s: /%s: out of memory for %zu rows", path, tname, n);
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
    h5reason(r, sizeof r);
    free(buf);
    if (mt >= 0) H5Tclose(mt);
    return fail("%s: cannot read column '%s' of /%s: truncated or corrupt trace (HDF5: %s)", path, c->name, tname,
                r[0] ? r : "?");
}
}

/* ---- storage HDF5 keeps no checksum on ----------------------------------------------- */

/* A table's variable-length strings live in global heap collections (HDF5 file format: "GCOL", version 1,
 * 3 reserved bytes, the collection's size; then objects: index (2 bytes), reference count (2), reserved (4),
 * size, data padded to 8 bytes; index 0 is the free space, its size counting its own header). No checksum
 * covers a collection, and HDF5 1.10.8 reads one by walking its objects: a damaged one whose walk does not
 * advance (an object of size 0: 64 bytes zeroed inside it) hangs every reader in H5HG_read, h5dump and h5py
 * included (tests/test_file_fuzz.py, 2026-12-05). So the collections a table's rows point to are walked
 * here first, from the file's bytes, as HDF5 walks them. */
typedef struct Heaps {
    int fd;
    off_t fsize;
    size_t sa, ss;      /* the file's address and length sizes */
    uint64_t addr;      /* the collection walked last (rows point to a few, in order) */
    int ok;             /* it walks to its end */
    uint64_t *size;     /* (65536) its objects' sizes by index; UINT64_MAX: none */
} Heaps;

static uint64_t le_get(const unsigned char *p, size_t n) {
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;) v = v << 8 | p[i];
    return v;
}

/* walks the collection at addr into h (ok, size[]) */
static void heap_walk(Heaps *h, uint64_t addr) {
    size_t hdr = 8 + h->ss, ohdr = 8 + h->ss;
    unsigned char head[16], *c = NULL;
    h->addr = addr;
    h->ok = 0;
    for (size_t i = 0; i < 65536; i++) h->size[i] = UINT64_MAX;
    if (addr + hdr > (uint64_t)h->fsize || pread(h->fd, head, hdr, (off_t)addr) != (ssize_t)hdr) return;
    uint64_t size = le_get(head + 8, h->ss);
    if (memcmp(head, "GCOL", 4) != 0 || head[4] != 1 || size < hdr || addr + size > (uint64_t)h->fsize) return;
    if (!(c = malloc(size)) || pread(h->fd, c, size, (off_t)addr) != (ssize_t)size) return free(c);
    int ok = 1;
    for (uint64_t p = hdr; p < size && ok;) {
        if (p + ohdr > size) break; /* too little left for an object: free space without a header */
        uint64_t id = le_get(c + p, 2), osize = le_get(c + p + 8, h->ss);
        uint64_t need = id ? ohdr + ((osize + 7) & ~(uint64_t)7) : osize;
        if (osize > size || need < ohdr || p + need > size) ok = 0; /* would not advance, or runs past the end */
        else h->size[id] = osize;
        p += need;
    }
    free(c);
    h->ok = ok;
}

/* Before HDF5 reads table d (n rows, HDF5's type ft, its space sp): every chunk of its rows, looked up and read
 * as stored, and where it has strings, the heap collections they point to walked (above) with the object
 * each points to there. A chunk can be lost from a damaged chunk index (v1 B-tree nodes carry no checksum in
 * this format), and H5Dread then gives it back as fill values, rows of zeros, without an error (the right
 * key of /plans' one-chunk index zeroed, 2026-12-05; H5Dread_chunk fails). stored NULL: every chunk must be
 * there; else the rows may end in chunks never written (a trace that is not complete: its run stopped between
 * growing a table and flushing its chunk), and *stored is set to the rows before them. Tables stored other
 * than in chunks, or through a filter other than Fletcher-32 (not Nereus's way), are left to HDF5. 0, or −1
 * with the failure set. */
static int check_storage(const char *path, hid_t f, hid_t d, hid_t ft, hid_t sp, hsize_t n, const char *tname,
                         hsize_t *stored) {
    hid_t dcpl = H5Dget_create_plist(d), fcpl = H5Fget_create_plist(f);
    Heaps h = {.fd = -1};
    if (fcpl < 0 || H5Pget_sizes(fcpl, &h.sa, &h.ss) < 0 || h.sa > 8 || h.ss > 8 || h.sa < 2 || h.ss < 2) h.sa = 0;
    /* a row as stored: the (packed) members in offset order, a string as its length, its collection's address
       and its index there; the type HDF5 hands back holds a string as a pointer, so its offsets are not the
       file's */
    int nm = H5Tget_nmembers(ft), nvl = 0, rc = 0, missing = 0, order[64];
    size_t off[16], esz = 0, vsz = 4 + h.sa + 4;
    for (int m = 0; m < nm && m < 64; m++) {
        int k = m;
        for (; k > 0 && H5Tget_member_offset(ft, (unsigned)order[k - 1]) > H5Tget_member_offset(ft, (unsigned)m); k--)
            order[k] = order[k - 1];
        order[k] = m;
    }
    for (int k = 0; k < nm && k < 64; k++) {
        hid_t mt = H5Tget_member_type(ft, (unsigned)order[k]);
        int vl = H5Tget_class(mt) == H5T_STRING && H5Tis_variable_str(mt) > 0;
        if (vl && nvl < 16) off[nvl++] = esz;
        esz += vl ? vsz : H5Tget_size(mt);
        H5Tclose(mt);
    }
    hsize_t chunk = 0;
    int chunked = n && dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED && H5Pget_chunk(dcpl, 1, &chunk) == 1 && chunk > 0;
    int heap = chunked && nvl && h.sa && nm <= 64;
    for (int k = 0, nf = heap ? H5Pget_nfilters(dcpl) : 0; k < nf; k++) {
        unsigned flags, cd[8];
        size_t ncd = 8;
        if (H5Pget_filter2(dcpl, (unsigned)k, &flags, &ncd, cd, 0, NULL, NULL) != H5Z_FILTER_FLETCHER32) heap = 0;
    }
    struct stat sb;
    if (heap && (!(h.size = malloc(65536 * sizeof *h.size)) || (h.fd = open(path, O_RDONLY)) < 0 || fstat(h.fd, &sb) != 0))
        heap = 0;
    h.fsize = heap ? sb.st_size : 0;
    h.addr = UINT64_MAX;
    unsigned char *buf = NULL;
    hsize_t first_missing = n; /* the first chunk the file does not hold (n: none) */
    for (hsize_t start = 0; chunked && !rc && !missing && start < n; start += chunk) {
        hsize_t size = 0;
        haddr_t addr = HADDR_UNDEF;
        unsigned mask = 0;
        if (H5Dget_chunk_info_by_coord(d, &start, &mask, &addr, &size) < 0 || size > ((hsize_t)1 << 30)) {
            missing = 1;
            break;
        }
        if (addr == HADDR_UNDEF) { /* never written */
            if (first_missing == n) first_missing = start;
            continue;
        }
        if (first_missing < n) { /* a chunk after one never written: not how a run stops */
            missing = 1;
            break;
        }
        unsigned char *raw = realloc(buf, size ? size : 1);
        if (!raw || size == 0 || H5Dread_chunk(d, H5P_DEFAULT, &start, &mask, raw) < 0) { /* as stored, before the filters */
            buf = raw;
            missing = 1;
            break;
        }
        buf = raw;
        if (!heap) continue;
        if (size < chunk * esz) {
            rc = -1;
            break;
        }
        for (hsize_t e = 0; e < chunk && start + e < n && !rc; e++)
            for (int v = 0; v < nvl && !rc; v++) {
                const unsigned char *p = buf + e * esz + off[v];
                uint64_t len = le_get(p, 4), ha = le_get(p + 4, h.sa), idx = le_get(p + 4 + h.sa, 4);
                if (len == 0) continue; /* "": nothing to read there */
                if (ha != h.addr) heap_walk(&h, ha);
                if (!h.ok || idx > 65535 || h.size[idx] == UINT64_MAX || h.size[idx] < len) rc = -1;
            }
    }
    free(buf);
    free(h.size);
    if (h.fd >= 0) close(h.fd);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (fcpl >= 0) H5Pclose(fcpl);
    if (first_missing < n && stored && !missing && !rc) *stored = first_missing;
    else if (first_missing < n) missing = 1;
    if (missing)
        return fail("%s: /%s: its chunk index does not list every chunk of its %llu rows: the file is corrupt", path,
                    tname, (unsigned long long)n);
    return rc ? fail("%s: /%s: the global heap that holds its strings is damaged: the file is corrupt", path, tname) : 0;
}

/* /NAME into t; cut_short: the trace is not complete, and rows past the last chunk the file holds are left out
   (a run stopped by a full disk or a kill between growing a table and writing its chunk), with a note */
static int read_table(const char *path, hid_t f, int which, Table *t, int cut_short) {
    const char *name = table_names[which];
    t->name = name;
    hid_t d = -1, ft = -1, sp = -1, vs = -1, ms = H5S_ALL;
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
    hsize_t stored = n;
    if (check_storage(path, f, d, ft, sp, n, name, cut_short ? &stored : NULL) != 0) goto out;
    if (stored < n) {
        fprintf(stderr, "nereus-trace: note: %s: /%s: rows %llu-%llu were never written (the run stopped before "
                "their chunk reached the file); the %llu before them are read\n", path, name,
                (unsigned long long)stored, (unsigned long long)n - 1, (unsigned long long)stored);
        hsize_t zero = 0;
        if (H5Sselect_hyperslab(sp, H5S_SELECT_SET, &zero, NULL, &stored, NULL) < 0 ||
            (ms = H5Screate_simple(1, &stored, NULL)) < 0)
            goto h5fail;
        n = stored;
        t->n = (size_t)n;
    }
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
        else if (cl == H5T_ARRAY) { /* a 1-D array of reals (/signals eff) */
            hid_t mty = H5Tget_member_type(ft, (unsigned)m), base = mty >= 0 ? H5Tget_super(mty) : -1;
            hsize_t dim[4] = {0};
            int ok = base >= 0 && H5Tget_class(base) == H5T_FLOAT && H5Tget_array_ndims(mty) == 1 &&
                     H5Tget_array_dims2(mty, dim) == 1 && dim[0] >= 1 && dim[0] <= 64;
            if (base >= 0) H5Tclose(base);
            if (mty >= 0) H5Tclose(mty);
            if (!ok) continue; /* not ours; left out */
            c->cls = C_VEC;
            c->w = (int)dim[0];
            if ((mtm = H5Tarray_create2(H5T_NATIVE_DOUBLE, 1, dim)) < 0) goto h5fail;
            int rc = read_col(path, d, name, mtm, c, n, ms, sp);
            H5Tclose(mtm);
            if (rc != 0) goto out;
            t->ncol++;
            continue;
        }
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
        if (read_col(path, d, name, mtm, c, n, ms, sp) != 0) goto out;
        t->ncol++;
    }
    H5Tclose(vs);
    if (ms != H5S_ALL) H5Sclose(ms);
    H5Sclose(sp);
    H5Tclose(ft);
    H5Dclose(d);
    return 0;
h5fail:
    h5reason(r, sizeof r);
    fail("%s: cannot read /%s: truncated or corrupt trace (HDF5: %s)", path, name, r[0] ? r : "?");
out:
    if (vs >= 0) H5Tclose(vs);
    if (ms != H5S_ALL && ms >= 0) H5Sclose(ms);
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

/* A table's strings against its strings_fnv column (src/io/trace.c row_fnv: its variable-length strings lie in
   HDF5's global heap, outside every checksum HDF5 keeps); traces before 2026-12-05 have no such column, and a
   row whose strings_fnv is 0 (appended by another writer) is not checked. 0, or −1 with the failure set. */
static int check_strings(const char *path, const Table *t) {
    const Col *ck = col_find(t, "strings_fnv");
    if (!ck || ck->cls != C_INT) return 0;
    const Col *sc[8]; /* the string columns, in column order */
    int n = 0;
    for (int c = 0; c < t->ncol && n < 8; c++)
        if (t->col[c].cls == C_STR) sc[n++] = &t->col[c];
    const char *s[8];
    for (size_t k = 0; k < t->n; k++) {
        if (ck->i[k] == 0) continue;
        for (int c = 0; c < n; c++) s[c] = sc[c]->s[k];
        int64_t v = (int64_t)nr_cksum_strs(s, n);
        if ((v ? v : 1) != ck->i[k])
            return fail("%s: /%s row %zu: its strings do not match their checksum (strings_fnv): the file is corrupt",
                        path, t->name, k);
    }
    return 0;
}

/* the columns each table must have (format 1) */
static const char *required[T_N] = {
    "step,plan_id,t_start_s,wall_s,gen_s,inf_s,train_s,sync_s,tokens,tokens_per_s,reward,kl,pg_loss,vf_loss,entropy,resp_len",
    "step,stage,nranks,seconds,flops,bytes,gflops,peak_gflops,mfu",
    "plan_id,first_step,text,source,predicted_step_s,predicted_mem_bytes",
    "step,kind,magnitude,threshold",
    "step,from_plan,to_plan,urgent,admitted,L_now_s,L_new_s,dL_s,C_s,H_steps,gamma,reason",
    "step,from_plan,to_plan,nchanges,t_start_s,predicted_s,measured_s,engine_s,bytes_moved,bytes_min,text",
    "step,plan_id,initial,npool,oom,resp_len,eff_signal,pred_step_s,overhead_s,eff,pool,slow"};

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

/* /decisions holds the rule's decisions and, since trace_refused, rows for a change of plan refused before
 * anything moved (admitted 0, to_plan −1, NaN numbers), and since the guard, its moves back (the reason starts
 * "measured revert"): split them */
static void split_decisions(TraceFile *tf) {
    const Table *de = &tf->t[T_DECISIONS];
    int *kind = calloc(de->n + 1, sizeof *kind), *is = calloc(de->n + 1, sizeof *is);
    for (size_t k = 0; k < de->n; k++) {
        const char *why = str(de, "reason", k);
        if (num(de, "admitted", k) == 0 && num(de, "to_plan", k) == -1 && isnan(num(de, "L_now_s", k)) &&
            isnan(num(de, "L_new_s", k)) && isnan(num(de, "C_s", k)))
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

/* /planner's attributes (written once when the live planner starts); has_planner = 1 when every one is there;
   −1 when /planner is there but does not open */
static int read_planner(hid_t f, TraceFile *tf) {
    PlannerAttrs *p = &tf->pa;
    if (H5Lexists(f, "planner", H5P_DEFAULT) <= 0) {
        snprintf(tf->planner_missing, sizeof tf->planner_missing, "no /planner");
        return 0;
    }
    hid_t d = H5Dopen2(f, "planner", H5P_DEFAULT);
    if (d < 0) return fail("%s: /planner does not open: the file is damaged", tf->path);
    const struct { const char *n; double *v; } dv[] = {
        {"gamma", &p->gamma},     {"threshold", &p->threshold}, {"headroom", &p->headroom}, {"hw_flops", &p->hw_flops},
        {"hw_mem", &p->hw_mem},   {"hw_hbm", &p->hw_hbm},       {"hw_bw", &p->hw_bw},       {"hw_lat", &p->hw_lat},
        {"hw_op_s", &p->hw_op_s},
    };
    const struct { const char *n; int64_t *v; } iv[] = {
        {"every_k", &p->every_k}, {"warmup", &p->warmup},         {"steps_total", &p->steps_total},
        {"nranks", &p->nranks},   {"hw_ranks_per_node", &p->hw_rpn}, {"hw_cores", &p->hw_cores},
    };
    /* an attribute missing is an older trace (the replay says what it leaves out); one there that does not read
       (H5Aexists or the read failing) is damage */
    const char *miss = NULL, *bad = NULL;
    int rc;
    if ((rc = attr_str(d, "policy", p->policy, sizeof p->policy)) != 0) *(rc == -1 ? &miss : &bad) = "policy";
    if ((rc = attr_str(d, "hw_name", p->hw_name, sizeof p->hw_name)) != 0) *(rc == -1 ? &miss : &bad) = "hw_name";
    for (size_t i = 0; i < sizeof dv / sizeof dv[0]; i++)
        if ((rc = attr_num(d, dv[i].n, H5T_NATIVE_DOUBLE, dv[i].v, 1)) != 0) *(rc == -1 ? &miss : &bad) = dv[i].n;
    for (size_t i = 0; i < sizeof iv / sizeof iv[0]; i++)
        if ((rc = attr_num(d, iv[i].n, H5T_NATIVE_INT64, iv[i].v, 1)) != 0) *(rc == -1 ? &miss : &bad) = iv[i].n;
    if ((rc = attr_num(d, "tx_link", H5T_NATIVE_DOUBLE, &p->tx_link, 1)) != 0) p->tx_link = 0; /* optional */
    if (rc == -2) bad = "tx_link";
    if ((rc = attr_num(d, "tx_copy", H5T_NATIVE_DOUBLE, &p->tx_copy, 1)) != 0) p->tx_copy = 0;
    if (rc == -2) bad = "tx_copy";
    H5Dclose(d);
    if (bad) return fail("%s: /planner attribute %s does not read: the file is damaged", tf->path, bad);
    if (miss) snprintf(tf->planner_missing, sizeof tf->planner_missing, "/planner has no attribute %s", miss);
    else tf->has_planner = 1;
    return 0;
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
    /* /complete first: in a trace that is not complete, a table may end in chunks its last flush did not write */
    if (H5Lexists(f, "complete", H5P_DEFAULT) > 0) {
        hid_t d = H5Dopen2(f, "complete", H5P_DEFAULT);
        int32_t one = 0;
        if (d < 0 || H5Dread(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, &one) < 0) {
            if (d >= 0) H5Dclose(d);
            fail("%s: /complete does not read: the file is damaged", path);
            goto out;
        }
        if (one != 1) { /* the writer writes 1; the value sat outside every checksum in traces before 2026-12-05 */
            H5Dclose(d);
            fail("%s: /complete holds %d, not 1: the file is damaged", path, (int)one);
            goto out;
        }
        tf->complete = 1;
        attr_str(d, "status", tf->status, sizeof tf->status);
        attr_num(d, "ppo_s", H5T_NATIVE_DOUBLE, &tf->ppo_s, 1);
        attr_num(d, "trace_s", H5T_NATIVE_DOUBLE, &tf->trace_s, 1);
        attr_num(d, "mfu_clamped", H5T_NATIVE_INT64, &tf->mfu_clamped, 1);
        H5Dclose(d);
    }
    for (int i = 0; i < T_N; i++) {
        if (i == T_SIGNALS) { /* optional: traces before the live planner have no /signals */
            tf->t[i].name = table_names[i];
            if (H5Lexists(f, table_names[i], H5P_DEFAULT) <= 0) continue;
            tf->has_signals = 1;
        }
        if (read_table(path, f, i, &tf->t[i], !tf->complete) != 0 || check_columns(tf, i) != 0 ||
            check_strings(path, &tf->t[i]) != 0)
            goto out;
    }
    /* /planner, /deck and /complete may be missing (an older trace, a run without a planner or not finished), and
       the commands say what that leaves out; one that is there but does not read is damage, refused like a
       damaged table rather than read as missing (a replay would otherwise answer another question) */
    if (read_planner(f, tf) != 0) goto out;
    tf->deck = nr_h5_dset_str(f, path, "deck", tf->deck_why, sizeof tf->deck_why); /* NULL: missing, unreadable, corrupt */
    if (!tf->deck && H5Lexists(f, "deck", H5P_DEFAULT) > 0) {
        fail("%s", tf->deck_why);
        goto out;
    }
    split_decisions(tf);
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
    const Table *de = &tf->rule, *rf = &tf->refusals;
    size_t adm = 0;
    for (size_t k = 0; k < de->n; k++) adm += num(de, "admitted", k) != 0;
    if (!de->n) printf("admission decisions: none recorded\n");
    else printf("admission decisions: %zu, %zu admitted\n", de->n, adm);
    for (size_t k = 0; k < rf->n; k++)
        printf("  refused change of plan before step %lld: %s\n", (long long)num(rf, "step", k), str(rf, "reason", k));
    for (size_t k = 0; k < tf->reverts.n; k++)
        printf("  moved back by the measure-and-revert guard before step %lld: %s\n",
               (long long)num(&tf->reverts, "step", k), str(&tf->reverts, "reason", k));
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
        double fw = num(tx, "bytes_forwarded", k); /* NaN in traces from before forwarding */
        printf("  bytes: moved %.2f MiB, minimum %.2f MiB, kept in place %.2f MiB", num(tx, "bytes_moved", k) / 1048576.0,
               num(tx, "bytes_min", k) / 1048576.0, num(tx, "bytes_local", k) / 1048576.0);
        if (fw > 0) printf("; %.2f MiB of the moved forwarded by new replicas", fw / 1048576.0);
        printf("\n");
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
        fprintf(stderr, "nereus-trace: csv: no table '%s' (steps, stages, plans, drift, decisions, transitions, signals)\n",
                name);
        return 2;
    }
    const Table *t = &tf->t[which];
    if (which == T_SIGNALS && !tf->has_signals) {
        fprintf(stderr, "nereus-trace: csv: %s has no /signals (a trace from before the live planner)\n", tf->path);
        return 1;
    }
    for (int c = 0; c < t->ncol; c++) {
        if (t->col[c].cls != C_VEC) printf("%s%s", c ? "," : "", t->col[c].name);
        else
            for (int m = 0; m < t->col[c].w; m++) printf("%s%s_%d", c || m ? "," : "", t->col[c].name, m);
    }
    if (which == T_STAGES) printf(",stage_name");
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

/* ---- replay ----------------------------------------------------------------------
 *
 * With /signals and /planner (a live-planner run): the controller's inputs
 * rebuilt step by step — the machine model from /planner, the calibrated
 * efficiencies, overhead, response length, pool and per-rank slowdowns
 * from each /signals row, the models, workload and transition pricer from
 * the deck stored in the trace — and the controller (adapt.h, the code the
 * live run decides with) re-run over them: with the recorded policy, γ and
 * threshold it must give the recorded /decisions; with other γ, threshold
 * or the static policy it says what those would have decided, and every
 * run is priced with the same per-step model. Without them: the admission
 * rule over the recorded decisions only. */


typedef struct SigRow {
    int64_t step;
    int plan_id, initial, npool, oom;
    double resp_len, eff_signal, pred, overhead, eff[EFF_N];
    double rho_exp;          /* the cost model's hw.rho_exp (fitted by the calibration): /signals rho_exp, or inferred */
    double phase_scale[3];   /* the cost model's per-phase scales: /signals phase_scale; 1 in traces before it, whose
                                model had none */
    int *pool;               /* (npool) ascending job ranks */
    double *slow;            /* (nranks) 1 where the row lists none */
} SigRow;

typedef struct Replay {
    const TraceFile *tf;
    Config cfg;
    int n;                   /* job ranks */
    GPTConfig ac, cc;
    int have_rm, P;
    TxPricer px;
    HwModel hw;
    PlanConfig plan0;        /* the deck's plan, resolved as main.c resolves it */
    SigRow *row;
    size_t nrow;
    int *ran;                /* (nrow) the row's step has a /steps row (the step finished): the totals count it */
    int nran;
    int rho_recorded;        /* /signals has rho_exp; else it is inferred (rho_matched of the rows matched) */
    int rho_matched;
    int nrec;                /* recorded plans: /plans text parsed back (pricing the recorded run) */
    PlanConfig *rec;         /* indexed by plan id */
    int *rec_ok;
} Replay;

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

static void free_replay(Replay *r) {
    for (size_t k = 0; k < r->nrow; k++) {
        free(r->row[k].pool);
        free(r->row[k].slow);
    }
    free(r->row);
    free(r->ran);
    free(r->rec);
    free(r->rec_ok);
}

static void infer_rho(Replay *r);

/* the controller's inputs from the trace; 0, or −1 with why */
static int replay_build(const TraceFile *tf, Replay *r, char *why, size_t len) {
    memset(r, 0, sizeof *r);
    r->tf = tf;
    const PlannerAttrs *pa = &tf->pa;
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
    PlanLimits lim = {r->n, cfg->model.n_head, cfg->model.n_layer, cfg->ppo.batch, cfg->ppo.minibatch};
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
    /* the rows */
    const Table *sg = &tf->t[T_SIGNALS];
    const Col *eff = col_find(sg, "eff");
    if (!eff || eff->cls != C_VEC)
        return snprintf(why, len, "/signals has no column eff of reals"), -1;
    if (eff->w != EFF_N)
        return snprintf(why, len,
                        "/signals eff holds %d efficiency factors, this nereus-trace's cost model has %d (planner.h "
                        "EFF_N): the trace was written by another version of the cost model",
                        eff->w, EFF_N), -1;
    const Col *rho = col_find(sg, "rho_exp");
    r->rho_recorded = rho && rho->cls == C_FLT;
    const Col *psc = col_find(sg, "phase_scale");
    if (psc && (psc->cls != C_VEC || psc->w != 3))
        return snprintf(why, len, "/signals phase_scale is not 3 reals a row"), -1;
    r->row = calloc(sg->n, sizeof *r->row);
    r->nrow = sg->n;
    for (size_t k = 0; k < sg->n; k++) {
        SigRow *x = &r->row[k];
        x->step = (int64_t)num(sg, "step", k);
        x->plan_id = (int)num(sg, "plan_id", k);
        x->initial = num(sg, "initial", k) != 0;
        x->npool = (int)num(sg, "npool", k);
        x->oom = num(sg, "oom", k) != 0;
        x->resp_len = num(sg, "resp_len", k);
        x->eff_signal = num(sg, "eff_signal", k);
        x->pred = num(sg, "pred_step_s", k);
        x->overhead = num(sg, "overhead_s", k);
        memcpy(x->eff, eff->f + k * EFF_N, sizeof x->eff);
        x->rho_exp = r->rho_recorded ? rho->f[k] : 0;
        for (int ph = 0; ph < 3; ph++) x->phase_scale[ph] = psc ? psc->f[k * 3 + ph] : 1;
        x->pool = calloc((size_t)r->n, sizeof *x->pool);
        x->slow = calloc((size_t)r->n, sizeof *x->slow);
        int np = parse_ranks(str(sg, "pool", k), x->pool, r->n);
        if (np != x->npool) return snprintf(why, len, "/signals row %zu: pool '%s' is not %d ranks", k, str(sg, "pool", k), x->npool), -1;
        for (int i = 0; i < r->n; i++) x->slow[i] = 1;
        for (const char *s = str(sg, "slow", k); *s;) {
            char *e;
            long rk = strtol(s, &e, 10);
            if (e == s || *e != ':' || rk < 0 || rk >= r->n)
                return snprintf(why, len, "/signals row %zu: slow '%s' is not rank:factor,...", k, str(sg, "slow", k)), -1;
            x->slow[rk] = strtod(e + 1, &e);
            s = *e == ',' ? e + 1 : e;
        }
        if (k && x->step <= r->row[k - 1].step) return snprintf(why, len, "/signals steps are not increasing at row %zu", k), -1;
    }
    r->ran = calloc(sg->n + 1, sizeof *r->ran);
    const Table *stp = &tf->t[T_STEPS];
    for (size_t k = 0; k < sg->n; k++) {
        for (size_t j = 0; j < stp->n && !r->ran[k]; j++) r->ran[k] = (int64_t)num(stp, "step", j) == r->row[k].step;
        r->nran += r->ran[k];
    }
    /* the recorded plans */
    const Table *pl = &tf->t[T_PLANS];
    for (size_t k = 0; k < pl->n; k++) r->nrec = fmax(r->nrec, num(pl, "plan_id", k) + 1);
    r->rec = calloc((size_t)r->nrec + 1, sizeof *r->rec);
    r->rec_ok = calloc((size_t)r->nrec + 1, sizeof *r->rec_ok);
    for (size_t k = 0; k < pl->n; k++) {
        int id = (int)num(pl, "plan_id", k);
        if (id < 0 || id >= r->nrec) continue;
        r->rec_ok[id] = parse_plan_text(str(pl, "text", k), &r->rec[id]) == 0;
        for (int i = 0; i < PLAN_NSTAGES && r->rec_ok[id]; i++) /* ranks of this job, degrees that fit the model */
            r->rec_ok[id] = plan_validate_stage(&r->rec[id].stage[i], i, &lim, &perr) == 0;
    }
    /* the resolved deck writes every stage out, so the parse marks them all "deck"; the job's plan had the
     * default plan's stages marked "default" (plan_format's "(default; ..."), and the controller compares plans
     * byte for byte: each stage's origin as /plans plan 0 shows it */
    if (r->nrec > 0 && r->rec_ok[0])
        for (int i = 0; i < PLAN_NSTAGES; i++)
            if (plan_stage_same(&r->plan0.stage[i], &r->rec[0].stage[i])) r->plan0.stage[i].src = r->rec[0].stage[i].src;
    if (!r->rho_recorded) infer_rho(r);
    return 0;
}

static void replay_model(const Replay *r, const SigRow *x, CostModel *cm, Workload *w) {
    memset(cm, 0, sizeof *cm);
    cm->hw = r->hw;
    memcpy(cm->eff.f, x->eff, sizeof cm->eff.f);
    cm->actor = shape_of_gpt(&r->ac, "actor");
    cm->critic = shape_of_gpt(&r->cc, "critic");
    cm->have_rm = r->have_rm;
    cm->headroom = r->tf->pa.headroom;
    cm->slow = x->slow;
    cm->overhead_s = x->overhead;
    cm->hw.rho_exp = x->rho_exp;
    memcpy(cm->phase_scale, x->phase_scale, sizeof cm->phase_scale);
    const Config *c = &r->cfg;
    *w = (Workload){c->ppo.batch, c->ppo.minibatch, c->ppo.epochs, r->P, x->resp_len, c->ppo.max_response};
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

/* one decision of a replayed run */
typedef struct RDec {
    int64_t step;
    int initial, urgent, admitted, changed, moved, failed, from_id, to_id;
    double L_now, L_new, C, H;
    char reason[256];
} RDec;

typedef struct Run {
    char name[64];
    int policy;
    double gamma, threshold;
    RDec *dec;
    int ndec, nadm, ntx, nplans;
    double steps_s, tx_s, total;
    int *plan_at;            /* (nrow) the plan id in force for each row's step */
    PlanConfig *plans;       /* (nrow + 1) the plans the run used, by id */
    char stop[600];          /* "" or why the run could not go on (as the live run would stop) */
} Run;

/* /transitions row j into the job's transition calibration, as job_transition added it in the run */
static void calib_add_row(TxCalib *c, const Table *tx, size_t j) {
    tx_calib_add(c, num(tx, "predicted_s", j), num(tx, "measured_s", j));
}

/* re-runs the controller over every row; refused_at: the steps where the recorded run's move was refused (the
 * recorded replay only; NULL otherwise) */
static void replay_run(const Replay *r, int policy, double gamma, double threshold, const int64_t *refused_at,
                       int nrefused, const int64_t *revert_at, int nrevert, Run *u) {
    const PlannerAttrs *pa = &r->tf->pa;
    u->policy = policy;
    u->gamma = gamma;
    u->threshold = threshold;
    u->dec = calloc(r->nrow + 1, sizeof *u->dec);
    u->plan_at = calloc(r->nrow + 1, sizeof *u->plan_at);
    u->plans = calloc(r->nrow + 2, sizeof *u->plans);
    int base = r->nrow ? r->row[0].plan_id : 0, pid = base;
    PlanConfig cur = r->plan0, prev = r->plan0; /* prev: the plan the last move left (the guard's old plan) */
    u->plans[0] = cur;
    u->nplans = 1;
    Adapt *ad = calloc(1, sizeof *ad);
    AdaptDecision *d = calloc(1, sizeof *d);
    Workload w0 = {0};
    int started = 0, prev_np = r->n;
    /* transitions priced as the run priced them: the engine's estimate scaled by what the recorded run's
       transitions before the decision measured against it (txprice.h, TxCalib) */
    TxPricer px = r->px;
    px.kept = calloc(1, sizeof *px.kept); /* the communicators this run keeps, as the job kept them */
    PlanConfig *kept_at = malloc(sizeof *kept_at); /* the plan px.kept was last brought up to */
    if (!px.kept || !kept_at) {
        snprintf(u->stop, sizeof u->stop, "out of memory");
        free(px.kept), free(kept_at), free(ad), free(d);
        return;
    }
    *kept_at = cur;
    const Table *txt = &r->tf->t[T_TRANSITIONS];
    size_t txi = 0;
    AdaptConfig ac = {policy, gamma, threshold, (int)pa->every_k, (int)pa->steps_total, r->n, tx_price, (void *)&px};
    for (size_t k = 0; k < r->nrow; k++) {
        const SigRow *x = &r->row[k];
        for (; txi < txt->n && (int64_t)num(txt, "step", txi) < x->step; txi++)
            calib_add_row(&px.calib, txt, txi);
        CostModel cm;
        Workload w;
        replay_model(r, x, &cm, &w);
        Observed o = {x->resp_len, x->npool, x->pool, x->slow, 0};
        StepCost now;
        cost_plan(&cm, &cur, r->n, &w, &now);
        o.oom = !now.fits;
        int pool_changed = x->npool != prev_np, act = 0, is_init = 0;
        prev_np = x->npool;
        memset(d, 0, sizeof *d);
        int reverted = 0;
        for (int i = 0; i < nrevert && started; i++) reverted |= revert_at[i] == x->step;
        if (reverted) { /* the recorded run's guard moved back here (a measurement: taken as recorded) */
            PlanConfig t = cur;
            cur = prev;
            prev = t;
            pid++;
            u->plans[u->nplans++] = cur;
            u->ntx++;
            u->tx_s += tx_price((void *)&px, &prev, &cur);
            adapt_revert(ad, &cur);
        } else if (!started && x->initial) { /* planner_live.c live_decide: the initial placement */
            adapt_place(ad, &ac, &cur, (int)x->step, &cm, &w, &o, pool_changed, d);
            w0 = w;
            started = act = is_init = 1;
        } else if (started) {
            adapt_step(ad, (int)x->step, &cm, &w, &cm, policy == ADAPT_STATIC ? &w0 : &w, &o, d);
            act = d->searched;
        }
        if (act && d->failed) {
            if (!adapt_plan_within(&cur, x->pool, x->npool, r->n)) {
                snprintf(u->stop, sizeof u->stop, "before step %lld: ranks left the pool and no plan without them fits (%s)",
                         (long long)x->step, d->why);
                break;
            }
        } else if (act) {
            RDec *q = &u->dec[u->ndec++];
            q->step = x->step;
            q->initial = is_init;
            q->urgent = d->urgent;
            q->admitted = d->admitted;
            q->changed = d->changed;
            q->L_now = d->L_now;
            q->L_new = d->L_new;
            q->C = d->C;
            q->H = d->H;
            q->from_id = pid;
            q->to_id = d->changed ? pid + 1 : -1;
            snprintf(q->reason, sizeof q->reason, "%s", d->reason);
            u->nadm += d->admitted;
            if (d->changed) {
                int refused = !isfinite(d->C);
                for (int i = 0; i < nrefused; i++) refused |= refused_at[i] == x->step;
                if (refused) {
                    adapt_revert(ad, &cur); /* the engine refused the move: the run stays (live_decide) */
                } else {
                    q->moved = 1;
                    prev = cur;
                    cur = d->next;
                    pid++;
                    u->plans[u->nplans++] = cur;
                    u->ntx++;
                    u->tx_s += d->C;
                }
            }
        }
        plan_kept_follow(px.kept, px.cfg->transition.keep_comms, kept_at, &cur); /* the communicators kept now */
        StepCost sc;
        double t = cost_plan(&cm, &cur, r->n, &w, &sc);
        if (r->ran[k]) u->steps_s += t;
        u->plan_at[k] = pid;
    }
    u->total = u->steps_s + u->tx_s;
    free(px.kept);
    free(kept_at);
    free(ad);
    free(d);
}

static void free_run(Run *u) {
    free(u->dec);
    free(u->plan_at);
    free(u->plans);
}

/* two recorded numbers agree when equal (∞ and NaN alike) or within 1e-9 relative */
static int same_num(double a, double b) {
    if (a == b || (isnan(a) && isnan(b))) return 1;
    return isfinite(a) && isfinite(b) && fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

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

/* the replayed run of the recorded parameters against /decisions, /steps and /plans; returns the differences */
static int compare_recorded(const Replay *r, const Run *u) {
    const TraceFile *tf = r->tf;
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
            printf("  DIFFERS: the run decided at step %lld (%s), the replay did not\n", (long long)num(de, "step", k),
                   str(de, "reason", k));
            diff++;
            continue;
        }
        const RDec *q = &u->dec[k];
        char what[512] = "";
        size_t w = 0;
#define CHK(cond, ...) if (!(cond)) w += (size_t)snprintf(what + w, w < sizeof what ? sizeof what - w : 0, __VA_ARGS__)
        CHK(q->step == (int64_t)num(de, "step", k), " step %lld vs %lld;", (long long)q->step, (long long)num(de, "step", k));
        CHK(q->urgent == (int)num(de, "urgent", k), " urgent %d vs %g;", q->urgent, num(de, "urgent", k));
        CHK(q->admitted == (num(de, "admitted", k) != 0), " admitted %d vs %g;", q->admitted, num(de, "admitted", k));
        CHK(q->from_id == (int)num(de, "from_plan", k), " from plan %d vs %g;", q->from_id, num(de, "from_plan", k));
        CHK(q->to_id == (int)num(de, "to_plan", k), " to plan %d vs %g;", q->to_id, num(de, "to_plan", k));
        CHK(same_num(q->L_now, num(de, "L_now_s", k)), " L_now %.17g vs %.17g;", q->L_now, num(de, "L_now_s", k));
        CHK(same_num(q->L_new, num(de, "L_new_s", k)), " L_new %.17g vs %.17g;", q->L_new, num(de, "L_new_s", k));
        CHK(same_num(q->L_now - q->L_new, num(de, "dL_s", k)), " dL %.17g vs %.17g;", q->L_now - q->L_new, num(de, "dL_s", k));
        CHK(same_num(q->C, num(de, "C_s", k)), " C %.17g vs %.17g;", q->C, num(de, "C_s", k));
        CHK(same_num(q->H, num(de, "H_steps", k)), " H %.17g vs %.17g;", q->H, num(de, "H_steps", k));
        CHK(strcmp(q->reason, str(de, "reason", k)) == 0, " reason '%s' vs '%s';", q->reason, str(de, "reason", k));
#undef CHK
        if (w) {
            printf("  DIFFERS at decision %zu (step %lld): replayed vs recorded:%s\n", k, (long long)q->step, what);
            diff++;
        } else {
            bit += q->L_now == num(de, "L_now_s", k) && q->L_new == num(de, "L_new_s", k) && q->C == num(de, "C_s", k);
        }
    }
    /* a move the engine refused: a refusal row at that step in the recording, a refused move in the replay */
    const Table *rf = &tf->refusals;
    for (size_t k = 0; k < rf->n; k++) {
        int64_t s = (int64_t)num(rf, "step", k), seen = 0;
        for (int i = 0; i < u->ndec; i++) seen |= u->dec[i].step == s && u->dec[i].changed && !u->dec[i].moved;
        if (!seen) {
            printf("  DIFFERS: the run recorded a refused change of plan before step %lld (%s), the replay has no "
                   "refused move there\n", (long long)s, str(rf, "reason", k));
            diff++;
        }
    }
    if (!diff)
        printf("  reproduced: %zu of %zu recorded decision(s) — the same steps searched, the same admitted/refused, plan "
               "ids and reasons, L_now/L_new/dL/C/H equal (%d bit for bit)\n",
               de->n, de->n, bit);
    /* the plans in force, step by step, against /steps; the plans' texts against /plans */
    const Table *st = &tf->t[T_STEPS], *pl = &tf->t[T_PLANS];
    int pbad = 0, tbad = 0;
    for (size_t k = 0; k < r->nrow; k++)
        for (size_t j = 0; j < st->n; j++)
            if ((int64_t)num(st, "step", j) == r->row[k].step && (int)num(st, "plan_id", j) != u->plan_at[k]) {
                if (!pbad) printf("  DIFFERS: step %lld ran under plan %g, the replay has plan %d\n",
                                  (long long)r->row[k].step, num(st, "plan_id", j), u->plan_at[k]);
                pbad++;
            }
    int base = r->nrow ? r->row[0].plan_id : 0;
    for (int i = 0; i < u->nplans; i++) {
        char text[16384];
        plan_format(&u->plans[i], text, sizeof text);
        for (size_t j = 0; j < pl->n; j++)
            if ((int)num(pl, "plan_id", j) == base + i && strcmp(text, str(pl, "text", j)) != 0) {
                if (!tbad) printf("  DIFFERS: plan %d of the replay is not /plans plan %d:\n%s", base + i, base + i, text);
                tbad++;
            }
    }
    if (!pbad && !tbad)
        printf("  plans: every step's plan id agrees with /steps, and the %d plan(s) format to the /plans text\n",
               u->nplans);
    return diff + pbad + tbad;
}

/* the recorded run priced as the replays are: each step's model on the plan /steps says it ran under, and
 * tx_price of each recorded transition; the measured total from /steps and /transitions */
static int price_recorded(const Replay *r, double *steps_s, double *tx_s, int *ntx, char *why, size_t len) {
    const TraceFile *tf = r->tf;
    const Table *st = &tf->t[T_STEPS], *tx = &tf->t[T_TRANSITIONS];
    *steps_s = *tx_s = 0;
    *ntx = 0;
    for (size_t k = 0; k < r->nrow; k++) {
        int pid = -1;
        for (size_t j = 0; j < st->n; j++)
            if ((int64_t)num(st, "step", j) == r->row[k].step) pid = (int)num(st, "plan_id", j);
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
        int a = (int)num(tx, "from_plan", j), b = (int)num(tx, "to_plan", j);
        if (a < 0 || b < 0 || a >= r->nrec || b >= r->nrec || !r->rec_ok[a] || !r->rec_ok[b]) {
            free(px.kept);
            return snprintf(why, len, "/transitions row %zu: plans %d -> %d not in /plans", j, a, b), -1;
        }
        *tx_s += tx_price((void *)&px, &r->rec[a], &r->rec[b]);
        tx_kept_switch(&px, &r->rec[a], &r->rec[b]);
        calib_add_row(&px.calib, tx, j);
        (*ntx)++;
    }
    free(px.kept);
    return 0;
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
            double u = num(de, "urgent", k); /* the admission path (planner.h ADMIT_*) */
            int urgent = isfinite(u) ? (int)u : ADMIT_RULE, rec = num(de, "admitted", k) != 0;
            if (r == 0 && num(de, "gamma", k) != g_rec) g = num(de, "gamma", k); /* γ as each decision had it */
            char why[256];
            double fg = num(de, "foregone_s", k); /* NaN: a trace from before rent-or-buy, or a refused switch */
            int now = admit(Ln, Lw, C, g, H, isfinite(fg) ? fg : 0, urgent, why, sizeof why);
            adm += now;
            agree += now == rec;
            if (now) cost += C;
            printf("  %8lld %8s %10.4f %10.4f %10.1f %8s %9s  %s\n", (long long)num(de, "step", k),
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

/* 1 when /transitions has a row before `step`: the run moved there */
static int moved_at(const Table *tx, int64_t step) {
    for (size_t j = 0; j < tx->n; j++)
        if ((int64_t)num(tx, "step", j) == step) return 1;
    return 0;
}

static int cmd_replay(const TraceFile *tf, const double *gammas, int ng, double threshold) {
    const Table *de = &tf->rule, *sg = &tf->t[T_SIGNALS], *rf = &tf->refusals;
    printf("replay %s: %zu recorded decision(s), %zu drift event(s), %zu transition(s), %zu /signals row(s)\n", tf->path,
           de->n, tf->t[T_DRIFT].n, tf->t[T_TRANSITIONS].n, sg->n);
    for (size_t k = 0; k < rf->n; k++)
        printf("  and a change of plan refused before step %lld: %s\n", (long long)num(rf, "step", k), str(rf, "reason", k));
    for (size_t k = 0; k < tf->reverts.n; k++)
        printf("  and a move back by the measure-and-revert guard before step %lld (taken as recorded: a measurement, "
               "not the controller): %s\n", (long long)num(&tf->reverts, "step", k), str(&tf->reverts, "reason", k));
    char why[1024] = "";
    Replay r;
    int full = 0;
    if (!tf->has_signals) snprintf(why, sizeof why, "this trace has no /signals (written before the live planner)");
    else if (!sg->n) snprintf(why, sizeof why, "/signals is empty (the run had no live planner)");
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
    const PlannerAttrs *pa = &tf->pa;
    int rec_policy = adapt_policy_named(pa->policy);
    if (rec_policy < 0) {
        printf("replay: the recorded policy '%s' is not one the controller replays; not computed\n", pa->policy);
        free_replay(&r);
        return 0;
    }
    size_t init = r.nrow;
    for (size_t k = 0; k < r.nrow && init == r.nrow; k++)
        if (r.row[k].initial) init = k;
    printf("planner: policy %s, gamma %.3g, threshold %.3g, every_k %lld, warmup %lld, %lld steps, %d rank(s); machine: "
           "%s, %.1f GFLOP/s per rank, %.1f GB/s memory, links %.1f GB/s %.3g us, %lld rank(s) per node on %lld core(s)\n",
           pa->policy, pa->gamma, pa->threshold, (long long)pa->every_k, (long long)pa->warmup,
           (long long)pa->steps_total, r.n, pa->hw_name, pa->hw_flops * 1e-9, pa->hw_hbm * 1e-9, pa->hw_bw * 1e-9,
           pa->hw_lat * 1e6, (long long)pa->hw_rpn, (long long)pa->hw_cores);
    if (init < r.nrow)
        printf("signals: steps %lld-%lld, the initial placement before step %lld\n", (long long)r.row[0].step,
               (long long)r.row[r.nrow - 1].step, (long long)r.row[init].step);
    else
        printf("signals: steps %lld-%lld, no initial placement recorded (the run ended before warmup)\n",
               (long long)r.row[0].step, (long long)r.row[r.nrow - 1].step);
    if (!r.rho_recorded)
        printf("model: /signals does not record hw.rho_exp (the message-stretch exponent the calibration fits): "
               "inferred per step from pred_step_s (%d of %zu step(s) matched exactly)\n", r.rho_matched, r.nrow);
    /* the cost model rebuilt: its prediction for the plan in force against the recorded one, every row */
    int mok = 0, mrows = 0;
    double mworst = 0;
    for (size_t k = 0; k < r.nrow; k++) {
        int pid = r.row[k].plan_id;
        if (pid < 0 || pid >= r.nrec || !r.rec_ok[pid]) continue;
        CostModel cm;
        Workload w;
        replay_model(&r, &r.row[k], &cm, &w);
        StepCost sc;
        double p = cost_plan(&cm, &r.rec[pid], r.n, &w, &sc);
        mrows++;
        mok += same_num(p, r.row[k].pred);
        if (!same_num(p, r.row[k].pred) && mrows - mok <= 3)
            printf("model DIFFERS at step %lld (plan %d): recorded prediction %.17g s, rebuilt %.17g s\n",
                   (long long)r.row[k].step, pid, r.row[k].pred, p);
        if (isfinite(p) && r.row[k].pred != 0) mworst = fmax(mworst, fabs(p - r.row[k].pred) / fabs(r.row[k].pred));
    }
    printf("model: the rebuilt cost model gives the recorded prediction for the plan in force on %d of %d step(s)%s",
           mok, mrows, mok == mrows ? "\n" : "");
    if (mok != mrows)
        printf(" (largest relative difference %.3g): the replay cannot reproduce the run — this nereus-trace's cost model "
               "(src/planner/cost.c) is not the one the run used (the run's source: %s; uncommitted changes are not "
               "recorded), or an input of the model is missing from the trace\n",
               mworst, tf->commit);

    /* 1. the recorded parameters: must give the recorded decisions */
    int64_t *refused = calloc(de->n + 1, sizeof *refused);
    int nref = 0;
    const Table *tx = &tf->t[T_TRANSITIONS];
    for (size_t k = 0; k < de->n; k++) {
        if (num(de, "admitted", k) == 0 || num(de, "to_plan", k) < 0) continue;
        int64_t s = (int64_t)num(de, "step", k);
        if (!moved_at(tx, s)) refused[nref++] = s; /* admitted, but the engine refused the move: no transition row */
    }
    Run rec;
    memset(&rec, 0, sizeof rec);
    const Table *rv = &tf->reverts;
    int64_t *reverted = calloc(rv->n + 1, sizeof *reverted);
    int nrev = 0;
    for (size_t k = 0; k < rv->n; k++) { /* moves back that happened (the engine may refuse one: no transition row) */
        int64_t s = (int64_t)num(rv, "step", k);
        if (moved_at(tx, s)) reverted[nrev++] = s;
    }
    replay_run(&r, rec_policy, pa->gamma, pa->threshold, refused, nref, reverted, nrev, &rec);
    printf("\nrecorded parameters (policy %s, gamma %.3g, threshold %.3g): %d decision(s), %d admitted, %d transition(s)\n",
           pa->policy, pa->gamma, pa->threshold, rec.ndec, rec.nadm, rec.ntx);
    print_decisions(&rec);
    if (rec.stop[0]) printf("  the run stops: %s\n", rec.stop);
    int ndiff = compare_recorded(&r, &rec);
    printf("  %s\n", ndiff ? "the recorded parameters do NOT reproduce the recorded run (above: where and how)"
                           : "the recorded parameters reproduce every recorded decision");

    /* 2. the what-if runs: each --gamma (default: the recorded one) at the threshold; the static baseline */
    double thr = isfinite(threshold) ? (double)(float)threshold : pa->threshold;
    int nw = ng ? ng : 1;
    Run *runs = calloc((size_t)nw + 1, sizeof *runs);
    Run *st = &runs[0];
    replay_run(&r, ADAPT_STATIC, pa->gamma, thr, NULL, 0, NULL, 0, st);
    snprintf(st->name, sizeof st->name, "static");
    for (int i = 0; i < nw; i++) {
        Run *u = &runs[1 + i];
        double g = ng ? (double)(float)gammas[i] : pa->gamma;
        replay_run(&r, ADAPT_PAYBACK, g, thr, NULL, 0, NULL, 0, u);
        snprintf(u->name, sizeof u->name, "payback gamma %.3g", g);
        printf("\n%s, threshold %.3g: %d decision(s), %d admitted, %d transition(s)\n", u->name, thr, u->ndec, u->nadm,
               u->ntx);
        print_decisions(u);
        if (u->stop[0]) printf("  the run stops: %s\n", u->stop);
    }
    printf("\nstatic (the initial placement kept; re-searched only on a pool change), threshold %.3g: %d decision(s), %d "
           "transition(s)\n", thr, st->ndec, st->ntx);
    print_decisions(st);
    double rs = 0, rt = 0;
    int rn = 0;
    char pwhy[512] = "";
    int have_rec = price_recorded(&r, &rs, &rt, &rn, pwhy, sizeof pwhy) == 0;

    printf("\npredicted totals over the %d step(s) run of steps %lld-%lld (each step's calibrated model on the plan in "
           "force, plus the predicted transitions):\n", r.nran, (long long)r.row[0].step,
           (long long)r.row[r.nrow - 1].step);
    printf("  %-28s %5s %6s %10s %9s %10s %12s %13s\n", "run", "dec", "trans", "steps s", "trans s", "total s",
           "vs static s", "vs recorded s");
    double rtot = rs + rt;
    if (have_rec)
        printf("  %-28s %5zu %6d %10.3f %9.4f %10.3f %+12.3f %13s\n", "recorded run (as it ran)", de->n, rn, rs, rt,
               rtot, rtot - st->total, "0");
    else printf("  recorded run: not priced: %s\n", pwhy);
    {
        char vr[32] = "-";
        if (have_rec) snprintf(vr, sizeof vr, "%+.3f", rec.total - rtot);
        printf("  %-28s %5d %6d %10.3f %9.4f %10.3f %+12.3f %13s\n", "replay, recorded params", rec.ndec, rec.ntx,
               rec.steps_s, rec.tx_s, rec.total, rec.total - st->total, vr);
    }
    for (int i = 0; i <= nw; i++) {
        const Run *u = &runs[i == nw ? 0 : 1 + i];
        char vr[32] = "-";
        if (have_rec) snprintf(vr, sizeof vr, "%+.3f", u->total - rtot);
        printf("  %-28s %5d %6d %10.3f %9.4f %10.3f %+12.3f %13s%s\n", u->name, u->ndec, u->ntx, u->steps_s, u->tx_s,
               u->total, u->total - st->total, vr, u->stop[0] ? "  (stops: see above)" : "");
    }
    /* the best single plan in hindsight among the plans any run used: the deck's plan until the initial
     * placement, that plan from there on (one transition), every step within the pool */
    {
        const Run *all[34];
        int na = 0;
        all[na++] = &rec;
        for (int i = 0; i <= nw && na < 34; i++) all[na++] = &runs[i];
        double best = INFINITY, best_steps = 0, best_c = 0;
        const PlanConfig *bp = NULL;
        for (int a = 0; a < na; a++)
            for (int i = 0; i < all[a]->nplans; i++) {
                const PlanConfig *p = &all[a]->plans[i];
                double t = 0, c = plan_same(p, &r.plan0) || init == r.nrow ? 0
                                 : tx_price((void *)&r.px, &r.plan0, p);
                int ok = isfinite(c);
                for (size_t k = 0; k < r.nrow && ok; k++) {
                    const PlanConfig *q = k < init ? &r.plan0 : p;
                    for (int s2 = 0; s2 < PLAN_NSTAGES && ok; s2++)
                        for (int j = 0; j < q->stage[s2].nranks && ok; j++) {
                            int in = 0;
                            for (int m = 0; m < r.row[k].npool; m++) in |= r.row[k].pool[m] == q->stage[s2].ranks[j];
                            ok = in;
                        }
                    CostModel cm;
                    Workload w;
                    replay_model(&r, &r.row[k], &cm, &w);
                    StepCost sc;
                    double tk = cost_plan(&cm, q, r.n, &w, &sc);
                    if (r.ran[k]) t += tk;
                }
                if (ok && t + c < best) {
                    best = t + c;
                    best_steps = t;
                    best_c = c;
                    bp = p;
                }
            }
        if (bp) {
            char vr[32] = "-";
            if (have_rec) snprintf(vr, sizeof vr, "%+.3f", best - rtot);
            printf("  %-28s %5s %6d %10.3f %9.4f %10.3f %+12.3f %13s\n", "best fixed plan (hindsight)", "-",
                   best_c > 0 || !plan_same(bp, &r.plan0), best_steps, best_c, best, best - st->total, vr);
        }
    }
    /* measured, for reference */
    const Table *sp = &tf->t[T_STEPS];
    double ms = 0, mt = 0;
    for (size_t j = 0; j < sp->n; j++) ms += num(sp, "wall_s", j);
    for (size_t j = 0; j < tx->n; j++) mt += num(tx, "measured_s", j);
    printf("recorded run, measured: %zu step(s) %.3f s + %zu transition(s) %.4f s = %.3f s (/steps wall_s, /transitions "
           "measured_s)\n", sp->n, ms, tx->n, mt, ms + mt);
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
    free(refused);
    free(reverted);
    free_replay(&r);
    return 0;
}

static int usage(void) {
    fprintf(stderr,
            "usage: nereus-trace summary FILE\n"
            "       nereus-trace plans FILE\n"
            "       nereus-trace transitions FILE\n"
            "       nereus-trace csv FILE TABLE      TABLE: steps stages plans drift decisions transitions signals\n"
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
