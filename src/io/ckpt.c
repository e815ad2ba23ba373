/* ckpt.c — the checkpoint writer and reader (ckpt.h), and the whole-file
 * checks of the tool (verify, info).
 *
 * Write: every rank agrees on who writes what (per model name the entry
 * whose canonical ranks write the params, the one whose canonical ranks
 * write the AdamW state, and that their owned blocks cover each tensor
 * once); rank 0 creates PATH.tmp's skeleton serially; every rank reopens it
 * with MPI-IO and moves its hyperslab of every dataset in collective calls
 * (the same number of calls on every rank: the pieces come from the logical
 * shape); the per-dataset checksums are summed over the ranks; rank 0
 * stores them, writes /meta complete last, closes, fsyncs and renames.
 * Read: rank 0 checks the skeleton serially (flag, format, configs, dataset
 * shapes, stored checksums) and broadcasts its verdict; then every rank
 * reads its held blocks (independent MPI-IO; every rank still makes the
 * same number of calls, as xfer does for writes) and the canonical ranks'
 * checksums are compared with the stored ones. Every failure becomes the same -1 and message on every rank
 * (agree). On the CPU backend HDF5 reads into and writes from the shard
 * itself; a device backend goes through a host buffer. */
#include "nereus/ckpt.h"

/* messages and paths are cut to their buffers on purpose (a long path only shortens the message) */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nereus/tokspec.h"
#include "nereus/util.h"

#ifdef NEREUS_HAVE_HDF5
#include "h5_int.h"

#define IO_LIMIT_DEFAULT ((size_t)1 << 30)
#define MSG 1024
static size_t io_limit = IO_LIMIT_DEFAULT;

void ckpt_set_io_limit(size_t bytes) { io_limit = bytes ? bytes : IO_LIMIT_DEFAULT; }

enum { K_PARAMS, K_M, K_V, NKIND };
static const char *kind_dir[NKIND] = {"params", "adam/m", "adam/v"};

static void dset_path(char *buf, size_t n, const char *model, int kind, const char *tensor) {
    snprintf(buf, n, "/models/%s/%s/%s", model, kind_dir[kind], tensor);
}

static float *kind_buf(const GPT *m, int kind) { return kind == K_PARAMS ? m->params : kind == K_M ? m->m : m->v; }

/* ---- checksum ----------------------------------------------------------- */

/* Σ mix64(k·2^32 + bits(x[k − k0])) over k = k0 .. k0+n−1, mod 2^64: nr_cksum_f32 (util.h) */

/* checksum of a row-major block x of shape count at start inside a dataset of dims (nd ≤ 4): its
 * innermost rows are contiguous in the logical order too */
static uint64_t cksum_slab(const float *x, int nd, const hsize_t *dims, const hsize_t *start, const hsize_t *count) {
    size_t rowlen = count[nd - 1], nrows = 1;
    for (int d = 0; d < nd - 1; d++) nrows *= count[d];
    if (rowlen == 0 || nrows == 0) return 0;
    hsize_t idx[4] = {0, 0, 0, 0};
    uint64_t s = 0;
    for (size_t r = 0; r < nrows; r++) {
        uint64_t k = 0;
        for (int d = 0; d < nd; d++) k = k * dims[d] + start[d] + (d < nd - 1 ? idx[d] : 0);
        s += nr_cksum_f32(x + r * rowlen, rowlen, k);
        for (int d = nd - 2; d >= 0; d--) {
            if (++idx[d] < count[d]) break;
            idx[d] = 0;
        }
    }
    return s;
}

/* ---- agreement ------------------------------------------------------------ */

/* collective over comm: 0 when rc == 0 on every rank; else -1 everywhere, with the message of the lowest
 * failing rank in why */
static int agree(MPI_Comm comm, int rc, char *why, size_t len) {
    int me, who, first;
    mpiCheck(MPI_Comm_rank(comm, &me));
    who = rc ? me : INT_MAX;
    mpiCheck(MPI_Allreduce(&who, &first, 1, MPI_INT, MPI_MIN, comm));
    if (first == INT_MAX) return 0;
    char msg[MSG] = {0};
    if (me == first) snprintf(msg, sizeof msg, "%s", why && why[0] ? why : "checkpoint: unknown error");
    mpiCheck(MPI_Bcast(msg, MSG, MPI_CHAR, first, comm));
    if (why && len) snprintf(why, len, "%s", msg);
    return -1;
}

/* ---- the models of a call, by name ------------------------------------------ */

typedef struct Name {
    const char *name;
    const GPTConfig *cfg;
    int pentry, aentry;       /* entry whose canonical ranks write/check params, adam; -1 none */
    int file_adam;            /* read: the file holds this model's AdamW state */
    int64_t adam_t;
    TensorInfo t[GPT_NUM_TENSORS]; /* the logical table (tp = pp = 1) */
    int nt;
} Name;

/* the fields from arch on (model.h: no padding), all 0 for GPT-2 */
#define CFG_ARCH_BYTES (sizeof(GPTConfig) - offsetof(GPTConfig, arch))

static int cfg_equal(const GPTConfig *a, const GPTConfig *b) {
    return a->V == b->V && a->maxT == b->maxT && a->L == b->L && a->C == b->C && a->NH == b->NH &&
           (a->value_head != 0) == (b->value_head != 0) && gpt_real_vocab(a) == gpt_real_vocab(b) &&
           memcmp(&a->arch, &b->arch, CFG_ARCH_BYTES) == 0;
}

/* The Llama family's config with its zeros resolved (model.h's defaults), so that a file that states a
 * default (an import states every value) and a deck that leaves it out compare equal, the RMSNorm epsilon at
 * the float precision the model computes it in; and a file's context
 * taken down to the deck's: a RoPE model has no table of positions, so it runs at a deck's max_seq up to the
 * file's (the GGUF of a model trained on 8,192 positions, run at 256) */
static void cfg_resolve_pair(GPTConfig *file, GPTConfig *deck) {
    GPTConfig *c[2] = {file, deck};
    for (int i = 0; i < 2; i++) {
        if (!gpt_is_llama(c[i])) continue;
        c[i]->NKV = gpt_kv_heads(c[i]);
        c[i]->ffn = gpt_ffn(c[i]);
        c[i]->head_dim = gpt_head_dim(c[i]);
        if (c[i]->rope_theta == 0) c[i]->rope_theta = 10000;
        if (c[i]->norm_eps == 0) c[i]->norm_eps = 1e-5;
        c[i]->norm_eps = (float)c[i]->norm_eps; /* the model adds it in float; a deck's is a float */
    }
    if (gpt_is_llama(file) && gpt_is_llama(deck) && deck->maxT <= file->maxT) file->maxT = deck->maxT;
}

/* read: the file's model can be the deck's (cfg_resolve_pair: defaults resolved, a RoPE context cut) */
static int cfg_readable(const GPTConfig *file, const GPTConfig *deck) {
    GPTConfig a = *file, b = *deck;
    cfg_resolve_pair(&a, &b);
    return cfg_equal(&a, &b);
}

/* collective over comm: the names of models[], entry → name index, the writer/checker entries, and the
 * coverage check of the canonical owners (kinds: params always, adam where an entry of the name has adam
 * set and, on read, the file has it: want_adam[name], NULL = any entry's adam flag) */
static int names_build(MPI_Comm comm, const CkptModel *models, int n, Name *nm, int *nn, int *ename, int *any_m,
                       int *adam_on, const char *who, char *why, size_t len) {
    int rc = 0;
    *nn = 0;
    if (why && len) why[0] = 0;
    for (int j = 0; j < n && !rc; j++) {
        const CkptModel *c = &models[j];
        if (!c->name || !c->name[0] || !c->cfg) {
            snprintf(why, len, "%s: model entry %d has no name or config", who, j);
            rc = -1;
            break;
        }
        int k = 0;
        while (k < *nn && strcmp(nm[k].name, c->name) != 0) k++;
        if (k == *nn) {
            memset(&nm[k], 0, sizeof nm[k]);
            nm[k].name = c->name;
            nm[k].cfg = c->cfg;
            nm[k].pentry = nm[k].aentry = -1;
            gpt_tensor_table(c->cfg, 1, 0, nm[k].t, &nm[k].nt);
            (*nn)++;
        } else if (!cfg_equal(nm[k].cfg, c->cfg)) {
            snprintf(why, len, "%s: two entries of model %s have different configs", who, c->name);
            rc = -1;
        }
        ename[j] = k;
        if (c->m && c->adam && (!c->m->trainable || !c->m->m || !c->m->v)) {
            snprintf(why, len, "%s: entry %d (%s) has adam set but its shard is frozen (no m, v)", who, j, c->name);
            rc = -1;
        }
        if (c->m && !cfg_equal(&c->m->cfg, c->cfg)) {
            snprintf(why, len, "%s: entry %d (%s): the shard's config is not the entry's", who, j, c->name);
            rc = -1;
        }
    }
    if (agree(comm, rc, why, len)) return -1;
    /* which entries have members, canonical ranks, adam ranks anywhere */
    int *fl = nr_xcalloc((size_t)3 * (n ? n : 1), sizeof(int)), *gl = nr_xcalloc((size_t)3 * (n ? n : 1), sizeof(int));
    for (int j = 0; j < n; j++) {
        fl[j] = models[j].m != NULL;
        fl[n + j] = models[j].m && models[j].canonical;
        fl[2 * n + j] = models[j].m && models[j].adam;
    }
    mpiCheck(MPI_Allreduce(fl, gl, 3 * n, MPI_INT, MPI_MAX, comm));
    for (int j = 0; j < n; j++) {
        Name *x = &nm[ename[j]];
        any_m[j] = gl[j];
        adam_on[j] = gl[2 * n + j];
        if (gl[n + j] && x->pentry < 0) x->pentry = j;
        if (gl[2 * n + j] && x->aentry < 0) x->aentry = j;
    }
    free(fl);
    free(gl);
    return 0;
}

/* collective over comm: the canonical owners of the (entry, kind) blocks of each name cover every logical
 * element exactly once (kinds with want[name·NKIND + kind]) */
static int coverage(MPI_Comm comm, const CkptModel *models, const Name *nm, int nn, const int *want, const char *who,
                    char *why, size_t len) {
    size_t ns = (size_t)nn * NKIND * GPT_NUM_TENSORS;
    int64_t *cov = nr_xcalloc(ns ? ns : 1, sizeof(int64_t));
    for (int k = 0; k < nn; k++)
        for (int kind = 0; kind < NKIND; kind++) {
            int j = kind == K_PARAMS ? nm[k].pentry : nm[k].aentry;
            if (!want[k * NKIND + kind] || j < 0 || !models[j].m || !models[j].canonical) continue;
            const GPT *m = models[j].m;
            for (int i = 0; i < nm[k].nt; i++)
                if (gpt_tensor_owner(m, i)) cov[((size_t)k * NKIND + kind) * GPT_NUM_TENSORS + i] += (int64_t)m->tensors[i].lnumel;
        }
    mpiCheck(MPI_Allreduce(MPI_IN_PLACE, cov, (int)ns, MPI_INT64_T, MPI_SUM, comm));
    int rc = 0;
    for (int k = 0; k < nn && !rc; k++)
        for (int kind = 0; kind < NKIND && !rc; kind++) {
            if (!want[k * NKIND + kind]) continue;
            int j = kind == K_PARAMS ? nm[k].pentry : nm[k].aentry;
            if (j < 0) {
                snprintf(why, len, "%s: model %s: no rank is marked canonical%s", who, nm[k].name,
                         kind == K_PARAMS ? "" : " in the entry with adam set");
                rc = -1;
                break;
            }
            for (int i = 0; i < nm[k].nt; i++) {
                int64_t c = cov[((size_t)k * NKIND + kind) * GPT_NUM_TENSORS + i];
                if (c != (int64_t)nm[k].t[i].numel) {
                    snprintf(why, len, "%s: model %s %s %s: the canonical ranks of entry %d own %lld of its %zu "
                             "elements (set canonical on exactly one replica)", who, nm[k].name, kind_dir[kind],
                             nm[k].t[i].name, j, (long long)c, nm[k].t[i].numel);
                    rc = -1;
                    break;
                }
            }
        }
    free(cov);
    return rc; /* cov was all-reduced: the same verdict everywhere */
}

/* ---- one dataset's collective transfer -------------------------------------- */

static void tensor_slab(const TensorInfo *t, hsize_t *dims, hsize_t *start, hsize_t *count) {
    for (int d = 0; d < t->ndim; d++) {
        dims[d] = (hsize_t)t->shape[d];
        start[d] = d == t->cut_axis ? (hsize_t)t->cut_start : d == t->pp_axis ? (hsize_t)t->pp_start : 0;
        count[d] = (hsize_t)t->lshape[d];
    }
}

/* The pieces of one transfer: a block (start, count) of a dataset of logical dims is moved in calls of at
 * most io_limit bytes each. The cut axis a is the first whose trailing block (one index of a: Π_{d>a} dims)
 * fits; a piece is one index of every axis before a and up to rp indices of axis a, so it is contiguous in
 * the row-major block. The piece COUNT comes from the logical dims only, so every rank of a collective
 * transfer makes the same number of calls; pieces outside this rank's block are empty. */
typedef struct Pieces {
    int nd, a;
    hsize_t dims[4], start[4], count[4];
    size_t rp, nchunk, npieces, inner_l;
    int empty;
} Pieces;

static void pieces_plan(Pieces *P, int nd, const hsize_t *dims, const hsize_t *start, const hsize_t *count) {
    size_t lim = NR_MAX(io_limit, sizeof(float)) / sizeof(float), inner = 1;
    memset(P, 0, sizeof *P);
    P->nd = nd;
    for (int d = 0; d < nd; d++) P->dims[d] = dims[d];
    int a = nd - 1;
    for (int d = nd - 1; d >= 0; d--) { /* inner = Π_{e>d} dims[e] */
        if (inner <= lim) a = d;
        else break;
        inner *= (size_t)dims[d];
    }
    inner = 1;
    for (int d = a + 1; d < nd; d++) inner *= (size_t)dims[d];
    P->a = a;
    P->rp = NR_MAX((size_t)1, lim / inner);
    P->nchunk = ((size_t)dims[a] + P->rp - 1) / P->rp;
    P->npieces = P->nchunk;
    for (int d = 0; d < a; d++) P->npieces *= (size_t)dims[d];
    P->empty = count == NULL;
    P->inner_l = 1;
    if (count) {
        for (int d = 0; d < nd; d++) {
            P->start[d] = start[d];
            P->count[d] = count[d];
            if (count[d] == 0) P->empty = 1;
        }
        for (int d = a + 1; d < nd; d++) P->inner_l *= (size_t)count[d];
    }
}

/* piece p of the plan: its hyperslab (s2, c2) and float offset in the row-major block; returns its floats,
 * 0 when this rank moves nothing in that call */
static size_t piece_get(const Pieces *P, size_t p, hsize_t *s2, hsize_t *c2, size_t *loff) {
    if (P->empty) return 0;
    int a = P->a;
    size_t c = p % P->nchunk, q = p / P->nchunk, r0 = c * P->rp;
    hsize_t idx[4] = {0, 0, 0, 0};
    for (int d = a - 1; d >= 0; d--) {
        idx[d] = q % P->dims[d];
        q /= P->dims[d];
        if (idx[d] >= P->count[d]) return 0;
    }
    if (r0 >= P->count[a]) return 0;
    size_t nr = NR_MIN(P->rp, (size_t)P->count[a] - r0), outer = 0;
    for (int d = 0; d < a; d++) outer = outer * (size_t)P->count[d] + (size_t)idx[d];
    for (int d = 0; d < P->nd; d++) {
        s2[d] = P->start[d] + (d < a ? idx[d] : d == a ? r0 : 0);
        c2[d] = d < a ? 1 : d == a ? nr : P->count[d];
    }
    *loff = (outer * (size_t)P->count[a] + r0) * P->inner_l;
    return nr * P->inner_l;
}

/* collective over the file's communicator: every rank calls it for every dataset it is asked to, and makes
 * the same number of H5Dwrite/H5Dread calls (pieces_plan over the LOGICAL shape lt): its own block (t, in
 * local backend memory buf) or empty selections (t == NULL). Adds the checksum of the moved elements to
 * *sum when sum is not NULL. Returns 0 or -1 (e filled); a failing rank still makes its remaining calls so
 * that the others are not left waiting. */
static int xfer(H5Err *e, hid_t d, hid_t dxpl, const char *dname, const TensorInfo *lt, const TensorInfo *t,
                const Backend *be, float *buf, int write, uint64_t *sum) {
    int nd = lt->ndim, bad = 0;
    hsize_t dims[4], start[4], count[4];
    for (int q = 0; q < nd; q++) dims[q] = (hsize_t)lt->shape[q];
    if (t && t->held && t->lnumel) tensor_slab(t, dims, start, count);
    Pieces P;
    pieces_plan(&P, nd, dims, start, t && t->held && t->lnumel ? count : NULL);
    hid_t fs = H5Dget_space(d);
    if (fs < 0) {
        h5_fail(e, "H5Dget_space", __FILE__, __LINE__);
        return -1; /* H5Dget_space is local and fails only on a broken handle, the same everywhere */
    }
    float *host = NULL, dummy = 0;
    size_t cap = 0;
    int direct = be && backend_host_memory(be); /* HDF5 reads and writes the shard itself */
    for (size_t p = 0; p < P.npieces; p++) {
        hsize_t s2[4], c2[4];
        size_t loff = 0, mnf = bad ? 0 : piece_get(&P, p, s2, c2, &loff);
        hid_t ms;
        herr_t st;
        if (mnf) {
            hsize_t mn = (hsize_t)mnf;
            float *dev = buf + loff;
            if (direct) host = dev;
            else if (mnf > cap) {
                free(host);
                host = nr_xmalloc(mnf * sizeof(float));
                cap = mnf;
            }
            H5Sselect_hyperslab(fs, H5S_SELECT_SET, s2, NULL, c2, NULL);
            ms = H5Screate_simple(1, &mn, NULL);
            if (write) {
                if (!direct) be->download(host, dev, mnf * sizeof(float));
                st = H5Dwrite(d, H5T_NATIVE_FLOAT, ms, fs, dxpl, host);
            } else {
                st = H5Dread(d, H5T_NATIVE_FLOAT, ms, fs, dxpl, host);
                if (st >= 0 && !direct) be->upload(dev, host, mnf * sizeof(float));
            }
            if (st >= 0 && sum) *sum += cksum_slab(host, nd, dims, s2, c2);
        } else {
            hsize_t one = 1;
            H5Sselect_none(fs);
            ms = H5Screate_simple(1, &one, NULL);
            H5Sselect_none(ms);
            st = write ? H5Dwrite(d, H5T_NATIVE_FLOAT, ms, fs, dxpl, &dummy)
                       : H5Dread(d, H5T_NATIVE_FLOAT, ms, fs, dxpl, &dummy);
        }
        if (st < 0 && !bad) {
            char r[256];
            h5_reason(r, sizeof r);
            h5_err(e, "%s: dataset %s: %s failed%s%s", e->path, dname, write ? "H5Dwrite" : "H5Dread",
                   r[0] ? ": " : "", r);
            bad = 1;
        }
        H5Sclose(ms);
    }
    if (!direct) free(host);
    H5Sclose(fs);
    return bad ? -1 : 0;
}

/* ---- file names and opening -------------------------------------------------- */

/* the serial file-access list: the default driver, with file locking where the file system has it (best
 * effort: a file system without flock, as on some parallel ones, does not fail the open) */
static hid_t serial_fapl(void) {
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl >= 0) H5Pset_file_locking(fapl, 1, 1);
    return fapl;
}

static hid_t open_parallel(H5Err *e, const char *path, MPI_Comm comm, unsigned flags) {
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), f = -1;
    if (fapl < 0) { h5_fail(e, "H5Pcreate", __FILE__, __LINE__); return -1; }
    if (H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL) < 0) {
        h5_fail(e, "H5Pset_fapl_mpio", __FILE__, __LINE__);
        H5Pclose(fapl);
        return -1;
    }
    f = H5Fopen(path, flags, fapl);
    if (f < 0) {
        char r[256];
        h5_reason(r, sizeof r);
        h5_err(e, "%s: cannot open as an HDF5 file (truncated or corrupt?)%s%s", path, r[0] ? ": " : "", r);
    }
    H5Pclose(fapl);
    return f;
}

/* serial open for reading, with a message naming the file */
static hid_t open_serial(H5Err *e, const char *path, unsigned flags) {
    struct stat sb;
    if (stat(path, &sb) != 0) {
        h5_err(e, "%s: cannot open checkpoint: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        h5_err(e, "%s: not a regular file", path);
        return -1;
    }
    htri_t is = H5Fis_hdf5(path);
    if (is <= 0) {
        char r[256];
        h5_reason(r, sizeof r);
        h5_err(e, "%s: not an HDF5 file (truncated or corrupt?)%s%s", path, r[0] ? ": " : "", r);
        return -1;
    }
    hid_t fapl = serial_fapl(), f = H5Fopen(path, flags, fapl);
    if (fapl >= 0) H5Pclose(fapl);
    if (f < 0) {
        char r[256];
        h5_reason(r, sizeof r);
        h5_err(e, "%s: cannot open as an HDF5 file (truncated or corrupt?)%s%s", path, r[0] ? ": " : "", r);
    }
    return f;
}

/* ---- configs -------------------------------------------------------------- */

static const struct { const char *attr, *key; } cfg_keys[] = {
    {"V", "[model] vocab_size"}, {"maxT", "[model] max_seq"}, {"L", "[model] n_layer"},
    {"C", "[model] n_embd"},     {"NH", "[model] n_head"},    {"value_head", "value head"},
};
static int *cfg_field(GPTConfig *c, int i) {
    int *f[] = {&c->V, &c->maxT, &c->L, &c->C, &c->NH, &c->value_head};
    return f[i];
}

/* The Llama family's config fields, stored as attributes of /models/NAME beside GPT-2's only for a model of
 * that family (a file without "arch" is GPT-2, as every file written before the family existed) */
static const char *const arch_int_keys[] = {"n_kv_head", "ffn_dim", "head_dim", "untied_head", "qkv_bias",
                                            "qk_norm", "rope_llama3", "rope_original_ctx"};
static int *arch_int_field(GPTConfig *c, int i) {
    int *f[] = {&c->NKV, &c->ffn, &c->head_dim, &c->untied, &c->qkv_bias, &c->qk_norm, &c->rope_llama3,
                &c->rope_orig_ctx};
    return f[i];
}
static const char *const arch_f64_keys[] = {"rope_theta", "rope_factor", "rope_low_freq_factor",
                                            "rope_high_freq_factor", "norm_eps"};
static double *arch_f64_field(GPTConfig *c, int i) {
    double *f[] = {&c->rope_theta, &c->rope_factor, &c->rope_low_freq, &c->rope_high_freq, &c->norm_eps};
    return f[i];
}
#define N_ARCH_INT ((int)(sizeof arch_int_keys / sizeof arch_int_keys[0]))
#define N_ARCH_F64 ((int)(sizeof arch_f64_keys / sizeof arch_f64_keys[0]))

static int put_i32(H5Err *e, hid_t loc, const char *name, int v);

static int write_arch(H5Err *e, hid_t mg, const GPTConfig *c) {
    if (!gpt_is_llama(c)) return 0;
    GPTConfig x = *c;
    if (h5_attr_put_str(e, mg, "arch", gpt_arch_name(c->arch))) return -1;
    for (int i = 0; i < N_ARCH_INT; i++)
        if (put_i32(e, mg, arch_int_keys[i], *arch_int_field(&x, i))) return -1;
    for (int i = 0; i < N_ARCH_F64; i++)
        if (h5_attr_put(e, mg, arch_f64_keys[i], H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 0, arch_f64_field(&x, i)))
            return -1;
    return 0;
}

static int read_arch(H5Err *e, hid_t g, const char *obj, GPTConfig *c) {
    if (H5Aexists(g, "arch") <= 0) return 0; /* GPT-2 */
    char *name = NULL;
    if (h5_attr_get_str(e, g, obj, "arch", &name)) return -1;
    c->arch = gpt_arch_parse(name);
    if (c->arch <= GPT_ARCH_GPT2) {
        h5_err(e, "%s: %s: architecture '%s' is not one this build knows", e->path, obj, name);
        free(name);
        return -1;
    }
    free(name);
    for (int i = 0; i < N_ARCH_INT; i++)
        if (h5_attr_get(e, g, obj, arch_int_keys[i], H5T_NATIVE_INT, 0, arch_int_field(c, i))) return -1;
    for (int i = 0; i < N_ARCH_F64; i++)
        if (h5_attr_get(e, g, obj, arch_f64_keys[i], H5T_NATIVE_DOUBLE, 0, arch_f64_field(c, i))) return -1;
    if (c->NKV < 0 || c->ffn < 0 || c->head_dim < 0 || (c->NKV > 0 && c->NH % c->NKV != 0) ||
        gpt_head_dim(c) % 2 != 0 || gpt_head_dim(c) < 2) {
        h5_err(e, "%s: %s: implausible stored %s config NH=%d n_kv_head=%d head_dim=%d ffn_dim=%d", e->path, obj,
               gpt_arch_name(c->arch), c->NH, c->NKV, c->head_dim, c->ffn);
        return -1;
    }
    return 0;
}

/* A Llama-family model written in the earlier layout (a packed qkvw (L, Cq + 2·Ckv, C) and fcw (L, 2F, C)) is
 * refused by name: this build's tensors are qw, kvw and fcw (L, 2, F, C) (model.h), whose TP shards are single
 * blocks; the same weights come back by importing the model's Hugging Face directory again. */
static int refuse_old_llama_layout(H5Err *e, hid_t g, const char *obj, const GPTConfig *c) {
    if (!gpt_is_llama(c) || !h5_exists(g, "params/qkvw")) return 0;
    h5_err(e, "%s: %s: a %s model in the earlier Llama-family layout (a packed qkvw (L, Cq+2Ckv, C), fcw (L, 2F, C)), "
           "which this build does not read: it stores qw (L, Cq, C), kvw (L, 2, Ckv, C) and fcw (L, 2, F, C) "
           "(docs/CHECKPOINT.md); import the model's Hugging Face directory again (nereus-ckpt import-hf)",
           e->path, obj, gpt_arch_name(c->arch));
    return -1;
}

/* the stored config of /models/name (g open on it) */
static int read_config(H5Err *e, hid_t g, const char *name, GPTConfig *c, int *has_adam,
                       int64_t *adam_t) {
    char obj[128];
    snprintf(obj, sizeof obj, "/models/%s", name);
    memset(c, 0, sizeof *c);
    for (int i = 0; i < 6; i++)
        if (h5_attr_get(e, g, obj, cfg_keys[i].attr, H5T_NATIVE_INT, 0, cfg_field(c, i))) return -1;
    int ha = 0, vr = c->V;
    if (h5_attr_get(e, g, obj, "has_adam", H5T_NATIVE_INT, 0, &ha)) return -1;
    if (H5Aexists(g, "vocab_real") > 0 && h5_attr_get(e, g, obj, "vocab_real", H5T_NATIVE_INT, 0, &vr)) return -1;
    if (read_arch(e, g, obj, c) || refuse_old_llama_layout(e, g, obj, c)) return -1;
    if (c->V < 1 || c->maxT < 1 || c->L < 1 || c->C < 1 || c->NH < 1 || (!gpt_is_llama(c) && c->C % c->NH != 0) ||
        c->V > (1 << 28) ||
        c->C > (1 << 20) || c->L > (1 << 16) || c->maxT > (1 << 24)) {
        h5_err(e, "%s: %s: implausible stored config V=%d maxT=%d L=%d C=%d NH=%d", e->path, obj, c->V, c->maxT, c->L,
               c->C, c->NH);
        return -1;
    }
    if (vr < 1 || vr > c->V) {
        h5_err(e, "%s: %s: vocab_real %d outside [1, V = %d]", e->path, obj, vr, c->V);
        return -1;
    }
    c->V_real = vr < c->V ? vr : 0;
    if (has_adam) *has_adam = ha;
    if (adam_t) {
        *adam_t = 0;
        if (ha) {
            char ag[160];
            snprintf(ag, sizeof ag, "/models/%s/adam", name);
            hid_t a = h5_exists(g, "adam") ? H5Gopen2(g, "adam", H5P_DEFAULT) : -1;
            if (a < 0) { h5_err(e, "%s: missing group %s", e->path, ag); return -1; }
            int rc = h5_attr_get(e, a, ag, "adam_t", H5T_NATIVE_INT64, 0, adam_t);
            H5Gclose(a);
            if (rc) return -1;
        }
    }
    return 0;
}

static void shape_str(char *buf, size_t n, const int *s, int nd) {
    size_t o = 0;
    o += (size_t)snprintf(buf + o, n - o, "(");
    for (int d = 0; d < nd && o < n; d++) o += (size_t)snprintf(buf + o, n - o, "%s%d", d ? ", " : "", s[d]);
    if (o < n) snprintf(buf + o, n - o, ")");
}

/* the differences between the stored config and the deck's, as "[model] n_embd: checkpoint 64, deck 96; ..."
 * followed by the first tensor whose shape differs */
static void cfg_diff(char *buf, size_t n, const GPTConfig *file, const GPTConfig *deck) {
    size_t o = 0;
    buf[0] = 0;
    GPTConfig a = *file, b = *deck;
    cfg_resolve_pair(&a, &b);
    for (int i = 0; i < 6 && o < n; i++) {
        int x = *cfg_field(&a, i), y = *cfg_field(&b, i);
        if (i == 5) { x = x != 0; y = y != 0; }
        if (x == y) continue;
        if (i == 5)
            o += (size_t)snprintf(buf + o, n - o, "%s%s: checkpoint %s, deck %s", o ? "; " : "", cfg_keys[i].key,
                                  x ? "yes" : "no", y ? "yes" : "no");
        else
            o += (size_t)snprintf(buf + o, n - o, "%s%s: checkpoint %d, deck %d", o ? "; " : "", cfg_keys[i].key, x, y);
    }
    if (a.arch != b.arch && o < n)
        o += (size_t)snprintf(buf + o, n - o, "%sarchitecture: checkpoint %s, deck %s", o ? "; " : "",
                              gpt_arch_name(a.arch), gpt_arch_name(b.arch));
    else if (memcmp(&a.arch, &b.arch, CFG_ARCH_BYTES) != 0 && o < n)
        o += (size_t)snprintf(buf + o, n - o, "%s%s config (kv heads, widths, RoPE, norms): checkpoint and deck differ",
                              o ? "; " : "", gpt_arch_name(a.arch));
    if (gpt_real_vocab(&a) != gpt_real_vocab(&b) && o < n)
        o += (size_t)snprintf(buf + o, n - o, "%sreal vocabulary (ids a softmax covers): checkpoint %d, deck %d",
                              o ? "; " : "", gpt_real_vocab(&a), gpt_real_vocab(&b));
    TensorInfo ta[GPT_NUM_TENSORS], tb[GPT_NUM_TENSORS];
    int na, nb;
    gpt_tensor_table(&a, 1, 0, ta, &na);
    gpt_tensor_table(&b, 1, 0, tb, &nb);
    for (int i = 0; i < NR_MIN(na, nb) && o < n; i++) {
        if (memcmp(ta[i].shape, tb[i].shape, sizeof ta[i].shape) == 0) continue;
        char sa[64], sb[64];
        shape_str(sa, sizeof sa, ta[i].shape, ta[i].ndim);
        shape_str(sb, sizeof sb, tb[i].shape, tb[i].ndim);
        snprintf(buf + o, n - o, "%stensor %s: checkpoint %s, deck %s", o ? "; " : "", ta[i].name, sa, sb);
        break;
    }
}

/* a dataset's presence, class and dims against the logical tensor t; the stored checksum into *ck */
static int check_dataset(H5Err *e, hid_t f, const char *dname, const TensorInfo *t, uint64_t *ck) {
    hid_t d = -1, s = -1, ty = -1;
    if (!h5_exists(f, dname)) {
        h5_err(e, "%s: missing dataset %s", e->path, dname);
        return -1;
    }
    h5Check(e, d = H5Dopen2(f, dname, H5P_DEFAULT));
    h5Check(e, s = H5Dget_space(d));
    h5Check(e, ty = H5Dget_type(d));
    hsize_t dims[8];
    int nd = H5Sget_simple_extent_ndims(s);
    if (nd < 0 || nd > 8) { h5_err(e, "%s: dataset %s: bad dataspace", e->path, dname); goto fail; }
    H5Sget_simple_extent_dims(s, dims, NULL);
    int same = nd == t->ndim;
    for (int i = 0; i < nd && same; i++) same = dims[i] == (hsize_t)t->shape[i];
    if (!same) {
        char sa[96] = "(", sb[64];
        size_t o = 1;
        for (int i = 0; i < nd && o < sizeof sa; i++)
            o += (size_t)snprintf(sa + o, sizeof sa - o, "%s%llu", i ? ", " : "", (unsigned long long)dims[i]);
        if (o < sizeof sa) snprintf(sa + o, sizeof sa - o, ")");
        shape_str(sb, sizeof sb, t->shape, t->ndim);
        h5_err(e, "%s: dataset %s has shape %s, the stored config gives %s", e->path, dname, sa, sb);
        goto fail;
    }
    if (H5Tget_class(ty) != H5T_FLOAT || H5Tget_size(ty) != 4) {
        h5_err(e, "%s: dataset %s is not float32", e->path, dname);
        goto fail;
    }
    if (ck && h5_attr_get(e, d, dname, "checksum", H5T_NATIVE_UINT64, 0, ck)) goto fail;
    H5Tclose(ty);
    H5Sclose(s);
    H5Dclose(d);
    return 0;
fail:
    if (ty >= 0) H5Tclose(ty);
    if (s >= 0) H5Sclose(s);
    if (d >= 0) H5Dclose(d);
    return -1;
}

/* /meta's format version and complete flag */
static int check_meta(H5Err *e, hid_t f) {
    hid_t g = -1;
    if (!h5_exists(f, "/meta")) {
        h5_err(e, "%s: no /meta group: not a Nereus checkpoint", e->path);
        return -1;
    }
    h5Check(e, g = H5Gopen2(f, "/meta", H5P_DEFAULT));
    int ver = 0, complete = 0;
    if (h5_attr_get(e, g, "/meta", "format_version", H5T_NATIVE_INT, 0, &ver)) goto fail;
    if (ver != CKPT_FORMAT) {
        h5_err(e, "%s: /meta format_version %d; this build reads format %d", e->path, ver, CKPT_FORMAT);
        goto fail;
    }
    if (H5Aexists(g, "complete") <= 0 || h5_attr_get(e, g, "/meta", "complete", H5T_NATIVE_INT, 0, &complete) ||
        complete != 1) {
        e->why[0] = 0;
        h5_err(e, "%s: /meta has no complete flag: the checkpoint was not finished (refusing it)", e->path);
        goto fail;
    }
    H5Gclose(g);
    return 0;
fail:
    if (g >= 0) H5Gclose(g);
    return -1;
}

/* ---- write --------------------------------------------------------------- */

static void now_iso(char *buf, size_t n) {
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int put_i32(H5Err *e, hid_t loc, const char *name, int v) {
    return h5_attr_put(e, loc, name, H5T_STD_I32LE, H5T_NATIVE_INT, 0, &v);
}
static int put_i64(H5Err *e, hid_t loc, const char *name, int64_t v) {
    return h5_attr_put(e, loc, name, H5T_STD_I64LE, H5T_NATIVE_INT64, 0, &v);
}

/* /meta/rollout_queue: the packed queue of rollouts (int32, 1-D) with a `checksum` attribute (nr_cksum_f32 of its
 * words' bits), written where the run has batches generated and not yet trained */
static int put_queue(H5Err *e, hid_t g, const CkptMeta *meta) {
    if (!meta->queue || meta->queue_words <= 0) return 0;
    hsize_t n = (hsize_t)meta->queue_words;
    hid_t s = -1, d = -1;
    h5Check(e, s = H5Screate_simple(1, &n, NULL));
    h5Check(e, d = H5Dcreate2(g, "rollout_queue", H5T_STD_I32LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    h5Check(e, H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, meta->queue));
    if (put_i64(e, d, "checksum", (int64_t)nr_cksum_f32((const float *)meta->queue, (size_t)n, 0))) goto fail;
    H5Dclose(d);
    H5Sclose(s);
    return 0;
fail:
    if (d >= 0) H5Dclose(d);
    if (s >= 0) H5Sclose(s);
    return -1;
}

/* rank 0, serially: the file, groups, attributes and every dataset at full size with its space allocated */
static int write_skeleton(H5Err *e, const char *tmp, const CkptMeta *meta, const Name *nm, int nn) {
    hid_t f = -1, g = -1, mg = -1, sg = -1, s = -1, d = -1, dcpl = -1;
    hid_t fapl = serial_fapl();
    /* the 1.8 format, as the trace: a checksummed superblock and object headers, so that a corrupt step, seed,
       configuration or checksum attribute is refused when the file is opened rather than read as another value
       (the default, earliest format checksums none of them); HDF5 1.8 and later read it */
    if (fapl >= 0) H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V18);
    f = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (fapl >= 0) H5Pclose(fapl);
    h5Check(e, f);
    if (h5_attr_put_str(e, f, "format", "nereus checkpoint") || put_i32(e, f, "format_version", CKPT_FORMAT)) goto fail;
    h5Check(e, g = H5Gcreate2(f, "/meta", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    char created[64], rng[256], pos[256];
    now_iso(created, sizeof created);
    snprintf(rng, sizeof rng, "counter-based: every draw is rng_u64(seed=%lld, stream, a, b) of (step, sample, "
             "position) indices; the seed is the whole RNG state", (long long)meta->seed);
    snprintf(pos, sizeof pos, "sft_done=%lld SFT steps and step=%lld PPO steps done; data indices are functions of "
             "the step", (long long)meta->sft_done, (long long)meta->step);
    if (put_i32(e, g, "format_version", CKPT_FORMAT) || put_i64(e, g, "step", meta->step) ||
        put_i64(e, g, "sft_done", meta->sft_done) || put_i64(e, g, "seed", meta->seed) ||
        h5_attr_put_str(e, g, "created", created) || h5_attr_put_str(e, g, "rng", rng) ||
        h5_attr_put_str(e, g, "data_position", pos) || h5_dset_put_str(e, g, "deck", meta->deck ? meta->deck : "") ||
        h5_dset_put_str(e, g, "plan", meta->plan ? meta->plan : "") ||
        (meta->data_hash && put_i64(e, g, "data_hash", (int64_t)meta->data_hash)) || put_queue(e, g, meta))
        goto fail;
    H5Gclose(g);
    g = -1;
    h5Check(e, g = H5Gcreate2(f, "/models", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    h5Check(e, dcpl = H5Pcreate(H5P_DATASET_CREATE));
    h5Check(e, H5Pset_layout(dcpl, H5D_CONTIGUOUS));
    h5Check(e, H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY)); /* the parallel phase only moves raw data */
    h5Check(e, H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER));
    for (int k = 0; k < nn; k++) {
        const Name *x = &nm[k];
        const GPTConfig *c = x->cfg;
        int has_adam = x->aentry >= 0;
        h5Check(e, mg = H5Gcreate2(g, x->name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
        if (put_i32(e, mg, "V", c->V) || put_i32(e, mg, "maxT", c->maxT) || put_i32(e, mg, "L", c->L) ||
            put_i32(e, mg, "C", c->C) || put_i32(e, mg, "NH", c->NH) || put_i32(e, mg, "value_head", c->value_head != 0) ||
            put_i32(e, mg, "vocab_real", gpt_real_vocab(c)) || put_i32(e, mg, "has_adam", has_adam) ||
            put_i32(e, mg, "ntensors", x->nt) || write_arch(e, mg, c))
            goto fail;
        h5Check(e, sg = H5Gcreate2(mg, "params", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
        H5Gclose(sg);
        sg = -1;
        if (has_adam) {
            h5Check(e, sg = H5Gcreate2(mg, "adam", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
            if (put_i64(e, sg, "adam_t", x->adam_t)) goto fail;
            hid_t a;
            h5Check(e, a = H5Gcreate2(sg, "m", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
            H5Gclose(a);
            h5Check(e, a = H5Gcreate2(sg, "v", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
            H5Gclose(a);
            H5Gclose(sg);
            sg = -1;
        }
        H5Gclose(mg);
        mg = -1;
        for (int kind = 0; kind < (has_adam ? NKIND : 1); kind++)
            for (int i = 0; i < x->nt; i++) {
                const TensorInfo *t = &x->t[i];
                hsize_t dims[4];
                for (int q = 0; q < t->ndim; q++) dims[q] = (hsize_t)t->shape[q];
                char dn[256];
                dset_path(dn, sizeof dn, x->name, kind, t->name);
                h5Check(e, s = H5Screate_simple(t->ndim, dims, NULL));
                h5Check(e, d = H5Dcreate2(f, dn, H5T_IEEE_F32LE, s, H5P_DEFAULT, dcpl, H5P_DEFAULT));
                H5Dclose(d);
                H5Sclose(s);
                d = s = -1;
            }
    }
    H5Pclose(dcpl);
    H5Gclose(g);
    h5Check(e, H5Fclose(f));
    return 0;
fail:
    if (d >= 0) H5Dclose(d);
    if (s >= 0) H5Sclose(s);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (sg >= 0) H5Gclose(sg);
    if (mg >= 0) H5Gclose(mg);
    if (g >= 0) H5Gclose(g);
    if (f >= 0) H5Fclose(f);
    return -1;
}

/* rank 0, serially: the checksums, the run's tokenizer (tok; NULL: none), then the complete flag last; fsync;
   rename */
static int write_finish(H5Err *e, const char *tmp, const char *path, const Name *nm, int nn, const uint64_t *sums,
                        const TokSpec *tok) {
    hid_t f = -1, g = -1, d = -1;
    hid_t fapl = serial_fapl();
    f = H5Fopen(tmp, H5F_ACC_RDWR, fapl);
    if (fapl >= 0) H5Pclose(fapl);
    h5Check(e, f);
    for (int k = 0; k < nn; k++)
        for (int kind = 0; kind < (nm[k].aentry >= 0 ? NKIND : 1); kind++)
            for (int i = 0; i < nm[k].nt; i++) {
                char dn[256];
                dset_path(dn, sizeof dn, nm[k].name, kind, nm[k].t[i].name);
                h5Check(e, d = H5Dopen2(f, dn, H5P_DEFAULT));
                uint64_t ck = sums[((size_t)k * NKIND + kind) * GPT_NUM_TENSORS + i];
                if (h5_attr_put(e, d, "checksum", H5T_STD_U64LE, H5T_NATIVE_UINT64, 0, &ck)) goto fail;
                H5Dclose(d);
                d = -1;
            }
    if (tok && ckpt_tok_put(e, f, tok)) goto fail;
    h5Check(e, H5Fflush(f, H5F_SCOPE_GLOBAL));
    h5Check(e, g = H5Gopen2(f, "/meta", H5P_DEFAULT));
    if (put_i32(e, g, "complete", 1)) goto fail;
    H5Gclose(g);
    g = -1;
    h5Check(e, H5Fclose(f));
    f = -1;
    int fd = open(tmp, O_RDONLY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    if (rename(tmp, path) != 0) {
        h5_err(e, "%s: cannot rename %s to it: %s", path, tmp, strerror(errno));
        return -1;
    }
    return 0;
fail:
    if (d >= 0) H5Dclose(d);
    if (g >= 0) H5Gclose(g);
    if (f >= 0) H5Fclose(f);
    return -1;
}

int ckpt_write(const char *path, MPI_Comm comm, const CkptMeta *meta, const CkptModel *models, int n, char *why,
               size_t len) {
    char msg[MSG] = {0}, tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    H5Err e = {tmp, msg, sizeof msg};
    h5_quiet();
    int me;
    mpiCheck(MPI_Comm_rank(comm, &me));
    Name nm[16];
    if (n > 16) nr_fatal("ckpt_write: %d model entries (at most 16)", n);
    int ename[16], any_m[16], adam_on[16], nn = 0, rc = -1;
    double need = 0; /* the datasets' bytes */
    if (names_build(comm, models, n, nm, &nn, ename, any_m, adam_on, "ckpt_write", msg, sizeof msg)) goto out;
    /* adam_t of each trained model, from its adam entry's members */
    int64_t at[16];
    for (int k = 0; k < nn; k++) {
        int j = nm[k].aentry;
        at[k] = j >= 0 && models[j].m ? models[j].m->adam_t : -1;
    }
    mpiCheck(MPI_Allreduce(MPI_IN_PLACE, at, nn, MPI_INT64_T, MPI_MAX, comm));
    int want[16 * NKIND];
    for (int k = 0; k < nn; k++) {
        nm[k].adam_t = at[k] < 0 ? 0 : at[k];
        want[k * NKIND + K_PARAMS] = 1;
        want[k * NKIND + K_M] = want[k * NKIND + K_V] = nm[k].aentry >= 0;
        for (int kind = 0; kind < NKIND; kind++)
            for (int i = 0; i < nm[k].nt && want[k * NKIND + kind]; i++) need += 4.0 * (double)nm[k].t[i].numel;
    }
    if (coverage(comm, models, nm, nn, want, "ckpt_write", msg, sizeof msg)) goto out;
    int lrc = 0;
    if (me == 0) {
        unlink(tmp);
        lrc = write_skeleton(&e, tmp, meta, nm, nn);
    }
    if (agree(comm, lrc, msg, sizeof msg)) goto out;
    hid_t f = open_parallel(&e, tmp, comm, H5F_ACC_RDWR);
    if (agree(comm, f < 0, msg, sizeof msg)) {
        if (f >= 0) H5Fclose(f);
        goto out;
    }
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    size_t ns = (size_t)nn * NKIND * GPT_NUM_TENSORS;
    uint64_t *sums = nr_xcalloc(ns, sizeof(uint64_t));
    lrc = 0;
    for (int k = 0; k < nn; k++)
        for (int kind = 0; kind < NKIND; kind++) {
            if (!want[k * NKIND + kind]) continue;
            const CkptModel *c = &models[kind == K_PARAMS ? nm[k].pentry : nm[k].aentry];
            int writer = c->m && c->canonical;
            for (int i = 0; i < nm[k].nt; i++) {
                char dn[256];
                dset_path(dn, sizeof dn, nm[k].name, kind, nm[k].t[i].name);
                hid_t d = H5Dopen2(f, dn, H5P_DEFAULT);
                if (d < 0) { h5_fail(&e, "H5Dopen2", __FILE__, __LINE__); lrc = -1; continue; }
                const TensorInfo *t = writer && gpt_tensor_owner(c->m, i) ? &c->m->tensors[i] : NULL;
                if (xfer(&e, d, dxpl, dn, &nm[k].t[i], t, t ? c->m->be : NULL, t ? kind_buf(c->m, kind) + t->offset : NULL,
                         1, &sums[((size_t)k * NKIND + kind) * GPT_NUM_TENSORS + i]))
                    lrc = -1;
                H5Dclose(d);
            }
        }
    H5Pclose(dxpl);
    if (H5Fclose(f) < 0) { h5_fail(&e, "H5Fclose", __FILE__, __LINE__); lrc = -1; }
    if (agree(comm, lrc, msg, sizeof msg)) { free(sums); goto out; }
    mpiCheck(MPI_Allreduce(MPI_IN_PLACE, sums, (int)ns, MPI_UINT64_T, MPI_SUM, comm));
    lrc = 0;
    if (me == 0) {
        e.path = path;
        lrc = write_finish(&e, tmp, path, nm, nn, sums, meta->tok);
    }
    free(sums);
    if (agree(comm, lrc, msg, sizeof msg)) goto out;
    rc = 0;
out:
    /* a failed write leaves nothing beside the checkpoints (the earlier ones are untouched: only the rename
       replaces a file); where the disk is full, say so, since the library's own error rarely does */
    if (rc != 0 && me == 0) {
        unlink(tmp);
        double free_b = nr_fs_free_bytes(path);
        size_t l = strlen(msg);
        if (free_b >= 0 && need > 0 && l + 1 < sizeof msg)
            snprintf(msg + l, sizeof msg - l, " (the checkpoint needs %.1f MiB; %.1f MiB free on that file system)",
                     need / 1048576.0, free_b / 1048576.0);
    }
    if (why && len) snprintf(why, len, "%s", rc ? msg : "");
    return rc;
}

/* ---- read ------------------------------------------------------------------ */

typedef struct Head {
    int rc;
    char why[MSG];
    int64_t step, sft_done, seed, deck_len, plan_len, data_hash, queue_words;
} Head;

/* /meta/rollout_queue (put_queue) into a malloc'd *q with its word count in h; nothing when absent; a checksum
 * that does not match is refused */
static int get_queue(H5Err *e, hid_t g, Head *h, int32_t **q) {
    if (H5Lexists(g, "rollout_queue", H5P_DEFAULT) <= 0) return 0;
    hid_t d = -1, s = -1;
    h5Check(e, d = H5Dopen2(g, "rollout_queue", H5P_DEFAULT));
    h5Check(e, s = H5Dget_space(d));
    hsize_t n = 0;
    if (H5Sget_simple_extent_ndims(s) != 1 || H5Sget_simple_extent_dims(s, &n, NULL) < 0 || n == 0) {
        h5_err(e, "%s: dataset /meta/rollout_queue: not a 1-D array of words", e->path);
        goto fail;
    }
    *q = nr_xmalloc((size_t)n * sizeof(int32_t));
    h5Check(e, H5Dread(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, *q));
    int64_t sum = 0;
    if (h5_attr_get(e, d, "/meta/rollout_queue", "checksum", H5T_NATIVE_INT64, 0, &sum)) goto fail;
    if ((uint64_t)sum != nr_cksum_f32((const float *)*q, (size_t)n, 0)) {
        h5_err(e, "%s: dataset /meta/rollout_queue: checksum mismatch: the file is corrupt", e->path);
        goto fail;
    }
    h->queue_words = (int64_t)n;
    H5Sclose(s);
    H5Dclose(d);
    return 0;
fail:
    free(*q);
    *q = NULL;
    if (s >= 0) H5Sclose(s);
    if (d >= 0) H5Dclose(d);
    return -1;
}

/* /meta's step, sft_done, seed and the deck and plan texts (malloc'd), as a restart takes them */
static int read_meta(H5Err *e, hid_t f, Head *h, char **deck, char **plan, int32_t **queue) {
    hid_t g = -1;
    h5Check(e, g = H5Gopen2(f, "/meta", H5P_DEFAULT));
    if (h5_attr_get(e, g, "/meta", "step", H5T_NATIVE_INT64, 0, &h->step) ||
        h5_attr_get(e, g, "/meta", "sft_done", H5T_NATIVE_INT64, 0, &h->sft_done) ||
        h5_attr_get(e, g, "/meta", "seed", H5T_NATIVE_INT64, 0, &h->seed) || h5_dset_get_str(e, g, "deck", deck) ||
        h5_dset_get_str(e, g, "plan", plan) ||
        (H5Aexists(g, "data_hash") > 0 && h5_attr_get(e, g, "/meta", "data_hash", H5T_NATIVE_INT64, 0, &h->data_hash)) ||
        (queue && get_queue(e, g, h, queue)))
        goto fail;
    H5Gclose(g);
    return 0;
fail:
    if (g >= 0) H5Gclose(g);
    return -1;
}

/* rank 0, serially: everything about the file that needs no data: flag, format, meta, each name's config
 * against the deck's, the datasets' presence and shapes, the stored checksums */
static int read_head(H5Err *e, const char *path, Name *nm, int nn, const int *need_adam, Head *h, char **deck,
                     char **plan, int32_t **queue, uint64_t *stored) {
    hid_t f = -1, g = -1;
    f = open_serial(e, path, H5F_ACC_RDONLY);
    if (f < 0) return -1;
    if (check_meta(e, f) || read_meta(e, f, h, deck, plan, queue)) goto fail;
    for (int k = 0; k < nn; k++) {
        char gp[160];
        snprintf(gp, sizeof gp, "/models/%s", nm[k].name);
        if (!h5_exists(f, gp)) {
            h5_err(e, "%s: no model '%s' in the checkpoint", path, nm[k].name);
            goto fail;
        }
        h5Check(e, g = H5Gopen2(f, gp, H5P_DEFAULT));
        GPTConfig fc;
        int has_adam = 0;
        if (read_config(e, g, nm[k].name, &fc, &has_adam, &nm[k].adam_t)) goto fail;
        H5Gclose(g);
        g = -1;
        if (!cfg_readable(&fc, nm[k].cfg)) {
            char d[600];
            cfg_diff(d, sizeof d, &fc, nm[k].cfg);
            h5_err(e, "%s: model %s does not match the deck: %s", path, nm[k].name, d);
            goto fail;
        }
        nm[k].file_adam = has_adam;
        for (int kind = 0; kind < NKIND; kind++) {
            if (kind != K_PARAMS && !(has_adam && need_adam[k])) continue;
            for (int i = 0; i < nm[k].nt; i++) {
                char dn[256];
                dset_path(dn, sizeof dn, nm[k].name, kind, nm[k].t[i].name);
                if (check_dataset(e, f, dn, &nm[k].t[i], &stored[((size_t)k * NKIND + kind) * GPT_NUM_TENSORS + i]))
                    goto fail;
            }
        }
    }
    h5Check(e, H5Fclose(f));
    return 0;
fail:
    if (g >= 0) H5Gclose(g);
    if (f >= 0) H5Fclose(f);
    return -1;
}

int ckpt_read(const char *path, MPI_Comm comm, CkptMeta *meta, CkptModel *models, int n, char *why, size_t len) {
    char msg[MSG] = {0};
    H5Err e = {path, msg, sizeof msg};
    h5_quiet();
    if (meta) memset(meta, 0, sizeof *meta);
    int me;
    mpiCheck(MPI_Comm_rank(comm, &me));
    if (n > 16) nr_fatal("ckpt_read: %d model entries (at most 16)", n);
    Name nm[16];
    int ename[16], any_m[16], adam_on[16], nn = 0, rc = -1;
    uint64_t *stored = NULL, *sums = NULL;
    char *deck = NULL, *plan = NULL;
    int32_t *queue = NULL;
    if (names_build(comm, models, n, nm, &nn, ename, any_m, adam_on, "ckpt_read", msg, sizeof msg)) goto out;
    int need_adam[16];
    for (int k = 0; k < nn; k++) need_adam[k] = nm[k].aentry >= 0;
    size_t ns = (size_t)nn * NKIND * GPT_NUM_TENSORS;
    stored = nr_xcalloc(ns ? ns : 1, sizeof(uint64_t));
    sums = nr_xcalloc(ns ? ns : 1, sizeof(uint64_t));
    Head h;
    memset(&h, 0, sizeof h);
    if (me == 0) {
        h.rc = read_head(&e, path, nm, nn, need_adam, &h, &deck, &plan, &queue, stored);
        snprintf(h.why, sizeof h.why, "%s", msg);
        h.deck_len = deck ? (int64_t)strlen(deck) : 0;
        h.plan_len = plan ? (int64_t)strlen(plan) : 0;
    }
    mpiCheck(MPI_Bcast(&h, (int)sizeof h, MPI_BYTE, 0, comm));
    if (h.rc) {
        snprintf(msg, sizeof msg, "%s", h.why);
        goto out;
    }
    int fa[16];
    int64_t at[16];
    for (int k = 0; k < nn; k++) { fa[k] = nm[k].file_adam; at[k] = nm[k].adam_t; }
    mpiCheck(MPI_Bcast(fa, nn, MPI_INT, 0, comm));
    mpiCheck(MPI_Bcast(at, nn, MPI_INT64_T, 0, comm));
    mpiCheck(MPI_Bcast(stored, (int)ns, MPI_UINT64_T, 0, comm));
    if (me != 0) {
        deck = nr_xcalloc((size_t)h.deck_len + 1, 1);
        plan = nr_xcalloc((size_t)h.plan_len + 1, 1);
    }
    mpiCheck(MPI_Bcast(deck, (int)h.deck_len + 1, MPI_CHAR, 0, comm));
    mpiCheck(MPI_Bcast(plan, (int)h.plan_len + 1, MPI_CHAR, 0, comm));
    if (h.queue_words > 0) { /* small: a few batches of tokens */
        if (me != 0) queue = nr_xmalloc((size_t)h.queue_words * sizeof(int32_t));
        mpiCheck(MPI_Bcast(queue, (int)h.queue_words, MPI_INT32_T, 0, comm));
    }
    int want[16 * NKIND];
    for (int k = 0; k < nn; k++) {
        nm[k].file_adam = fa[k];
        nm[k].adam_t = at[k];
        want[k * NKIND + K_PARAMS] = 1;
        want[k * NKIND + K_M] = want[k * NKIND + K_V] = need_adam[k] && fa[k];
    }
    if (coverage(comm, models, nm, nn, want, "ckpt_read", msg, sizeof msg)) goto out;
    hid_t f = open_parallel(&e, path, comm, H5F_ACC_RDONLY);
    if (agree(comm, f < 0, msg, sizeof msg)) {
        if (f >= 0) H5Fclose(f);
        goto out;
    }
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    /* independent reads: each rank reads its own blocks straight from the file (the page cache), where the
       collective path's aggregators read file domains and pass them on through MPI, one more copy of every
       byte (bench_ckpt on 4 ranks sharing 2 cores: independent reads nearly twice as fast). On a parallel
       file system that serves many small requests badly, NEREUS_CKPT_COLLECTIVE_READ=1 restores them */
    const char *cr = getenv("NEREUS_CKPT_COLLECTIVE_READ");
    H5Pset_dxpl_mpio(dxpl, cr && strcmp(cr, "1") == 0 ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT);
    int lrc = 0;
    for (int j = 0; j < n; j++) {
        if (!any_m[j]) continue;
        const CkptModel *c = &models[j];
        Name *x = &nm[ename[j]];
        int k = ename[j];
        for (int kind = 0; kind < NKIND; kind++) {
            if (kind != K_PARAMS && !(adam_on[j] && x->file_adam)) continue;
            int checker = j == (kind == K_PARAMS ? x->pentry : x->aentry) && c->m && c->canonical;
            for (int i = 0; i < x->nt; i++) {
                char dn[256];
                dset_path(dn, sizeof dn, x->name, kind, x->t[i].name);
                hid_t d = H5Dopen2(f, dn, H5P_DEFAULT);
                if (d < 0) { h5_fail(&e, "H5Dopen2", __FILE__, __LINE__); lrc = -1; continue; }
                const TensorInfo *t = c->m && c->m->tensors[i].held ? &c->m->tensors[i] : NULL;
                uint64_t part = 0;
                if (xfer(&e, d, dxpl, dn, &x->t[i], t, t ? c->m->be : NULL, t ? kind_buf(c->m, kind) + t->offset : NULL,
                         0, &part))
                    lrc = -1;
                if (checker && gpt_tensor_owner(c->m, i)) sums[((size_t)k * NKIND + kind) * GPT_NUM_TENSORS + i] += part;
                H5Dclose(d);
            }
        }
        if (c->m && c->adam) {
            if (!x->file_adam) { /* no optimizer state in the file: AdamW starts afresh */
                c->m->be->zero(c->m->m, c->m->nparams * sizeof(float));
                c->m->be->zero(c->m->v, c->m->nparams * sizeof(float));
                c->m->adam_t = 0;
            } else {
                c->m->adam_t = (int)x->adam_t;
            }
        }
    }
    H5Pclose(dxpl);
    if (H5Fclose(f) < 0) { h5_fail(&e, "H5Fclose", __FILE__, __LINE__); lrc = -1; }
    if (agree(comm, lrc, msg, sizeof msg)) goto out;
    mpiCheck(MPI_Allreduce(MPI_IN_PLACE, sums, (int)ns, MPI_UINT64_T, MPI_SUM, comm));
    for (int k = 0; k < nn; k++)
        for (int kind = 0; kind < NKIND; kind++) {
            if (!want[k * NKIND + kind]) continue;
            for (int i = 0; i < nm[k].nt; i++) {
                size_t s = ((size_t)k * NKIND + kind) * GPT_NUM_TENSORS + i;
                if (sums[s] == stored[s]) continue;
                char dn[256];
                dset_path(dn, sizeof dn, nm[k].name, kind, nm[k].t[i].name);
                snprintf(msg, sizeof msg, "%s: dataset %s: checksum mismatch (stored %016llx, data %016llx): the "
                         "file is corrupt", path, dn, (unsigned long long)stored[s], (unsigned long long)sums[s]);
                goto out;
            }
        }
    rc = 0;
    if (meta) {
        meta->step = h.step;
        meta->sft_done = h.sft_done;
        meta->seed = h.seed;
        meta->data_hash = (uint64_t)h.data_hash;
        meta->deck = deck;
        meta->plan = plan;
        meta->queue = queue;
        meta->queue_words = h.queue_words;
        deck = plan = NULL;
        queue = NULL;
    }
out:
    free(deck);
    free(plan);
    free(queue);
    free(stored);
    free(sums);
    if (why && len) snprintf(why, len, "%s", rc ? msg : "");
    return rc;
}

void ckpt_meta_free(CkptMeta *meta) {
    if (!meta) return;
    free((char *)meta->deck);
    free((char *)meta->plan);
    free((int32_t *)meta->queue);
    meta->deck = meta->plan = NULL;
    meta->queue = NULL;
    meta->queue_words = 0;
}

/* ---- one-process queries ------------------------------------------------------ */

static int model_query(const char *path, const char *name, GPTConfig *cfg, int *has_adam, char *why, size_t len) {
    char msg[MSG] = {0};
    H5Err e = {path, msg, sizeof msg};
    h5_quiet();
    hid_t f = open_serial(&e, path, H5F_ACC_RDONLY), g = -1;
    int rc = -1;
    if (f < 0) goto out;
    char gp[160];
    snprintf(gp, sizeof gp, "/models/%s", name);
    if (!h5_exists(f, gp)) { /* absent, not unreadable: 1 */
        h5_err(&e, "%s: no model '%s' in the checkpoint", path, name);
        rc = 1;
        goto out;
    }
    if ((g = H5Gopen2(f, gp, H5P_DEFAULT)) < 0) { h5_fail(&e, "H5Gopen2", __FILE__, __LINE__); goto out; }
    GPTConfig c;
    rc = read_config(&e, g, name, &c, has_adam, NULL);
    if (!rc && cfg) *cfg = c;
out:
    if (g >= 0) H5Gclose(g);
    if (f >= 0) H5Fclose(f);
    if (why && len) snprintf(why, len, "%s", rc ? msg : "");
    return rc;
}

int ckpt_model_config(const char *path, const char *name, GPTConfig *cfg, int *has_adam, char *why, size_t len) {
    return model_query(path, name, cfg, has_adam, why, len);
}

/* the names of /models, in creation order (at most max) */
static int model_names(H5Err *e, hid_t f, char names[][64], int max) {
    hid_t g = -1;
    if (!h5_exists(f, "/models")) {
        h5_err(e, "%s: no /models group", e->path);
        return -1;
    }
    h5Check(e, g = H5Gopen2(f, "/models", H5P_DEFAULT));
    H5G_info_t gi;
    h5Check(e, H5Gget_info(g, &gi));
    int n = 0;
    for (hsize_t i = 0; i < gi.nlinks && n < max; i++) {
        if (H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, names[n], 64, H5P_DEFAULT) < 0) continue;
        n++;
    }
    H5Gclose(g);
    return n;
fail:
    if (g >= 0) H5Gclose(g);
    return -1;
}

/* the checksum of a whole dataset, read serially in pieces (pieces_plan) */
static int dataset_checksum(H5Err *e, hid_t f, const char *dn, const TensorInfo *t, uint64_t *sum) {
    hid_t d = -1, fs = -1, ms = -1;
    float *buf = NULL;
    hsize_t dims[4], start[4] = {0, 0, 0, 0};
    for (int q = 0; q < t->ndim; q++) dims[q] = (hsize_t)t->shape[q];
    Pieces P;
    pieces_plan(&P, t->ndim, dims, start, dims);
    *sum = 0;
    h5Check(e, d = H5Dopen2(f, dn, H5P_DEFAULT));
    h5Check(e, fs = H5Dget_space(d));
    buf = nr_xmalloc(NR_MIN(P.rp * P.inner_l, t->numel) * sizeof(float));
    for (size_t p = 0; p < P.npieces; p++) {
        hsize_t s2[4], c2[4];
        size_t loff;
        hsize_t mn = (hsize_t)piece_get(&P, p, s2, c2, &loff);
        h5Check(e, H5Sselect_hyperslab(fs, H5S_SELECT_SET, s2, NULL, c2, NULL));
        h5Check(e, ms = H5Screate_simple(1, &mn, NULL));
        if (H5Dread(d, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, buf) < 0) {
            char r[256];
            h5_reason(r, sizeof r);
            h5_err(e, "%s: dataset %s cannot be read (truncated?)%s%s", e->path, dn, r[0] ? ": " : "", r);
            goto fail;
        }
        H5Sclose(ms);
        ms = -1;
        *sum += cksum_slab(buf, t->ndim, dims, s2, c2);
    }
    free(buf);
    H5Sclose(fs);
    H5Dclose(d);
    return 0;
fail:
    free(buf);
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    if (d >= 0) H5Dclose(d);
    return -1;
}

/* the /tokenizer group, where there is one, read whole: its counts and checksums (ckpt_tok.c) */
static int verify_tokenizer(const char *path, char *why, size_t len) {
    TokSpec spec;
    char msg[MSG];
    int rc = ckpt_read_tokspec(path, &spec, msg, sizeof msg);
    if (rc == 0) tokspec_free(&spec);
    if (rc < 0 && why && len) snprintf(why, len, "%s", msg);
    return rc < 0 ? -1 : 0;
}

int ckpt_verify(const char *path, char *why, size_t len) {
    char msg[MSG] = {0};
    H5Err e = {path, msg, sizeof msg};
    h5_quiet();
    int rc = -1;
    hid_t f = open_serial(&e, path, H5F_ACC_RDONLY), g = -1;
    char names[16][64], *deck = NULL, *plan = NULL;
    Head h;
    int mrc = f < 0 ? -1 : check_meta(&e, f) ? -1 : read_meta(&e, f, &h, &deck, &plan, NULL); /* what a restart reads */
    free(deck);
    free(plan);
    if (mrc) goto out;
    int nn = model_names(&e, f, names, 16);
    if (nn < 0) goto out;
    if (nn == 0) { h5_err(&e, "%s: no models under /models", path); goto out; }
    for (int k = 0; k < nn; k++) {
        char gp[128];
        snprintf(gp, sizeof gp, "/models/%s", names[k]);
        if ((g = H5Gopen2(f, gp, H5P_DEFAULT)) < 0) { h5_fail(&e, "H5Gopen2", __FILE__, __LINE__); goto out; }
        GPTConfig c;
        int has_adam;
        int64_t adam_t;
        if (read_config(&e, g, names[k], &c, &has_adam, &adam_t)) goto out;
        H5Gclose(g);
        g = -1;
        TensorInfo t[GPT_NUM_TENSORS];
        int nt;
        gpt_tensor_table(&c, 1, 0, t, &nt);
        for (int kind = 0; kind < (has_adam ? NKIND : 1); kind++)
            for (int i = 0; i < nt; i++) {
                char dn[256];
                uint64_t stored, got;
                dset_path(dn, sizeof dn, names[k], kind, t[i].name);
                if (check_dataset(&e, f, dn, &t[i], &stored) || dataset_checksum(&e, f, dn, &t[i], &got)) goto out;
                if (stored != got) {
                    h5_err(&e, "%s: dataset %s: checksum mismatch (stored %016llx, data %016llx): the file is corrupt",
                           path, dn, (unsigned long long)stored, (unsigned long long)got);
                    goto out;
                }
            }
    }
    rc = 0;
out:
    if (g >= 0) H5Gclose(g);
    if (f >= 0) H5Fclose(f);
    if (why && len) snprintf(why, len, "%s", rc ? msg : "");
    return rc ? rc : verify_tokenizer(path, why, len);
}

/* info's first failure, kept for its return (msg is cleared before each read) */
static void info_bad(char *first, const char *msg) {
    if (!first[0]) snprintf(first, MSG, "%s", msg[0] ? msg : "unreadable");
}

/* info describes what it can read and marks what it cannot in place; anything unreadable (a corrupt header,
 * attribute or dataset) makes it return -1 with the first reason in why, after the whole report */
int ckpt_info(const char *path, FILE *out, char *why, size_t len) {
    char msg[MSG] = {0}, first[MSG] = {0};
    H5Err e = {path, msg, sizeof msg};
    h5_quiet();
    hid_t f = open_serial(&e, path, H5F_ACC_RDONLY), g = -1;
    if (f < 0) {
        if (why && len) snprintf(why, len, "%s", msg);
        return -1;
    }
    fprintf(out, "file: %s\n", path);
    int ver = 0, complete = 0;
    char *s = NULL;
    if (!h5_exists(f, "/meta")) {
        fprintf(out, "meta: none (not a Nereus checkpoint)\n");
    } else if ((g = H5Gopen2(f, "/meta", H5P_DEFAULT)) < 0) {
        char r[256];
        h5_reason(r, sizeof r);
        h5_err(&e, "%s: /meta is unreadable (the file is corrupt)%s%s", path, r[0] ? ": " : "", r);
        fprintf(out, "meta: UNREADABLE: %s\n", msg);
        info_bad(first, msg);
    } else {
        msg[0] = 0;
        if (h5_attr_get(&e, g, "/meta", "format_version", H5T_NATIVE_INT, 0, &ver)) info_bad(first, msg);
        if (H5Aexists(g, "complete") > 0 && h5_attr_get(&e, g, "/meta", "complete", H5T_NATIVE_INT, 0, &complete))
            info_bad(first, msg);
        fprintf(out, "format: nereus checkpoint %d\n", ver);
        fprintf(out, "complete: %s\n", complete == 1 ? "yes" : "NO (no complete flag: the write did not finish)");
        msg[0] = 0;
        if (h5_attr_get_str(&e, g, "/meta", "created", &s) == 0) fprintf(out, "created: %s\n", s);
        else info_bad(first, msg);
        free(s);
        s = NULL;
        int64_t v;
        const char *keys[] = {"step", "sft_done", "seed"};
        for (int i = 0; i < 3; i++) {
            msg[0] = 0;
            if (h5_attr_get(&e, g, "/meta", keys[i], H5T_NATIVE_INT64, 0, &v) == 0)
                fprintf(out, "%s: %lld\n", keys[i], (long long)v);
            else fprintf(out, "%s: UNREADABLE: %s\n", keys[i], msg), info_bad(first, msg);
        }
        msg[0] = 0;
        if (h5_dset_get_str(&e, g, "plan", &s) == 0) fprintf(out, "plan:\n%s%s", s, s[0] && s[strlen(s) - 1] != '\n' ? "\n" : "");
        else fprintf(out, "plan: UNREADABLE: %s\n", msg), info_bad(first, msg);
        free(s);
        s = NULL;
        msg[0] = 0;
        if (h5_dset_get_str(&e, g, "deck", &s) == 0) fprintf(out, "deck: %zu bytes (/meta/deck)\n", strlen(s));
        else fprintf(out, "deck: UNREADABLE: %s\n", msg), info_bad(first, msg);
        free(s);
        s = NULL;
        H5Gclose(g);
        g = -1;
    }
    msg[0] = 0;
    char names[16][64];
    int nn = model_names(&e, f, names, 16);
    if (nn < 0 || msg[0]) info_bad(first, msg);
    for (int k = 0; k < nn; k++) {
        char gp[128];
        snprintf(gp, sizeof gp, "/models/%s", names[k]);
        msg[0] = 0;
        if ((g = H5Gopen2(f, gp, H5P_DEFAULT)) < 0) {
            h5_err(&e, "%s: %s is unreadable (the file is corrupt)", path, gp);
            fprintf(out, "model %s: UNREADABLE: %s\n", names[k], msg);
            info_bad(first, msg);
            continue;
        }
        GPTConfig c;
        int has_adam = 0;
        int64_t adam_t = 0;
        if (read_config(&e, g, names[k], &c, &has_adam, &adam_t)) {
            fprintf(out, "model %s: unreadable config: %s\n", names[k], msg);
            info_bad(first, msg);
            H5Gclose(g);
            g = -1;
            continue;
        }
        H5Gclose(g);
        g = -1;
        TensorInfo t[GPT_NUM_TENSORS];
        int nt;
        gpt_tensor_table(&c, 1, 0, t, &nt);
        fprintf(out, "model %s: ", names[k]);
        if (gpt_is_llama(&c))
            fprintf(out, "%s (NKV=%d head_dim=%d ffn=%d%s%s%s) ", gpt_arch_name(c.arch), gpt_kv_heads(&c),
                    gpt_head_dim(&c), gpt_ffn(&c), c.untied ? " untied" : " tied", c.qkv_bias ? " qkv_bias" : "",
                    c.qk_norm ? " qk_norm" : "");
        fprintf(out, "V=%d", c.V);
        if (gpt_real_vocab(&c) != c.V) fprintf(out, " (real vocabulary %d)", gpt_real_vocab(&c));
        fprintf(out, " maxT=%d L=%d C=%d NH=%d value_head=%s, %zu parameters, adam: ", c.maxT, c.L, c.C, c.NH,
                c.value_head ? "yes" : "no", gpt_logical_numel(&c));
        if (has_adam) fprintf(out, "yes (adam_t %lld)\n", (long long)adam_t);
        else fprintf(out, "no\n");
        uint64_t pck[GPT_NUM_TENSORS] = {0};
        int pok = 1;
        for (int kind = 0; kind < (has_adam ? NKIND : 1); kind++)
            for (int i = 0; i < nt; i++) {
                char dn[256], sh[64];
                dset_path(dn, sizeof dn, names[k], kind, t[i].name);
                shape_str(sh, sizeof sh, t[i].shape, t[i].ndim);
                uint64_t ck = 0;
                msg[0] = 0;
                int ok = check_dataset(&e, f, dn, &t[i], &ck) == 0;
                if (!ok) info_bad(first, msg);
                if (kind == K_PARAMS) pck[i] = ck, pok &= ok;
                fprintf(out, "  %-30s float32 %-20s %s\n", dn, sh, ok ? "" : msg);
            }
        /* the stored checksums, combined as a run's verify.hash.NAME combines its tensors' (not re-read here:
           `nereus-ckpt verify` checks them against the data) */
        if (pok) fprintf(out, "  params hash %016llx (as verify.hash.%s of a run whose weights these are)\n",
                         (unsigned long long)nr_cksum_combine(pck, nt), names[k]);
    }
    char tok[256];
    if (ckpt_tok_summary(f, tok, sizeof tok) == 0) fprintf(out, "%s\n", tok);
    H5Fclose(f);
    if (why && len) snprintf(why, len, "%s", first);
    return first[0] ? -1 : 0;
}

#else /* built without parallel HDF5: every entry point says so */

#define NO_HDF5 "checkpoints need parallel HDF5 (this build has none: make deps, then rebuild without USE_HDF5=0)"
void ckpt_set_io_limit(size_t bytes) { (void)bytes; }
int ckpt_write(const char *path, MPI_Comm comm, const CkptMeta *meta, const CkptModel *models, int n, char *why,
               size_t len) {
    snprintf(why, len, "%s: %s", path, NO_HDF5);
    return -1;
}
int ckpt_read(const char *path, MPI_Comm comm, CkptMeta *meta, CkptModel *models, int n, char *why, size_t len) {
    if (meta) memset(meta, 0, sizeof *meta);
    snprintf(why, len, "%s: %s", path, NO_HDF5);
    return -1;
}
void ckpt_meta_free(CkptMeta *meta) {
    if (!meta) return;
    free((char *)meta->deck);
    free((char *)meta->plan);
    free((int32_t *)meta->queue);
    meta->deck = meta->plan = NULL;
    meta->queue = NULL;
    meta->queue_words = 0;
}
int ckpt_model_config(const char *path, const char *name, GPTConfig *cfg, int *has_adam, char *why, size_t len) {
    snprintf(why, len, "%s: %s", path, NO_HDF5);
    return -1;
}
int ckpt_verify(const char *path, char *why, size_t len) {
    snprintf(why, len, "%s: %s", path, NO_HDF5);
    return -1;
}
int ckpt_info(const char *path, FILE *out, char *why, size_t len) {
    snprintf(why, len, "%s: %s", path, NO_HDF5);
    return -1;
}
#endif
