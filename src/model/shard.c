/* shard.c — the GPT tensor table with its shard specs (Megatron TP cuts,
 * and pipeline stages: layer blocks on axis 0, the embeddings on the first
 * stage, the final LayerNorm, the heads and the tied wte copy on the last),
 * the map between a rank's local flat buffer and the full logical vector
 * (import / export for weight sync, checkpoints and transitions), and the
 * logical checksums. A cut tensor's local block is, for every index of the
 * axes before cut_axis, one contiguous run of lshape[cut_axis]·inner floats
 * both locally and in the logical order (a PP cut of whole layers only
 * shifts the runs), so every copy here is a handful of memcpy-sized runs
 * (at most 3L per tensor). */
#include "nereus/model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/comm.h"
#include "nereus/util.h"

/* cut: -1 replicated, else the axis cut tp ways (tp_rank's block kept).
 * stage: 0 held whole by this stage; 1 layer-stacked, cut on axis 0 pp ways
 * (stage pp_rank's layers kept); -1 not held by this stage. */
static void set_tensor(TensorInfo *t, const char *name, int ndim, int s0, int s1, int s2, int s3, int cut,
                       int stage, int tp, int tp_rank, int pp, int pp_rank, size_t *offset, size_t *loffset) {
    int s[4] = {s0, s1, s2, s3};
    if (tp == 1) cut = -1; /* tp = 1: nothing is cut, the table is the historical one */
    if (pp == 1) stage = 0;
    t->name = name;
    t->ndim = ndim;
    t->cut_axis = cut;
    t->cut_start = 0;
    t->pp_axis = stage == 1 ? 0 : -1;
    t->pp_start = 0;
    t->held = stage >= 0;
    t->numel = 1;
    t->lnumel = 1;
    for (int i = 0; i < 4; i++) {
        t->shape[i] = i < ndim ? s[i] : 0;
        t->lshape[i] = t->shape[i];
        if (i == cut) {
            if (s[i] % tp != 0) nr_fatal("gpt tensor %s: axis %d of size %d does not divide by tp %d", name, i, s[i], tp);
            t->lshape[i] = s[i] / tp;
            t->cut_start = tp_rank * t->lshape[i];
        }
        if (i == t->pp_axis) {
            if (s[i] % pp != 0) nr_fatal("gpt tensor %s: %d layers do not divide by pp %d", name, s[i], pp);
            t->lshape[i] = s[i] / pp;
            t->pp_start = pp_rank * t->lshape[i];
        }
        if (!t->held) t->lshape[i] = 0;
        if (i < ndim) {
            t->numel *= (size_t)t->shape[i];
            t->lnumel *= (size_t)t->lshape[i];
        }
    }
    if (!t->held) t->lnumel = 0;
    t->owner = t->held && (cut >= 0 || tp_rank == 0);
    t->offset = *offset;
    t->loffset = *loffset;
    t->role = -1; /* the caller's */
    /* keep each tensor 16-float (64-byte) aligned inside the flat buffer */
    *offset += (t->lnumel + 15) & ~(size_t)15;
    *loffset += t->numel;
}

/* The Llama family's table: the tensors the config has, in this order, then the value head. TP cuts the
 * query heads (qw, qb, attprojw's input columns), the key/value heads (kvw, kvb) and the MLP's hidden units
 * (fcw, fcprojw), each one block on one axis (model.h); PP cuts the layers on axis 0, the first stage holds
 * wte, the last lnfw, the head (lmhead, or its copy of a tied wte) and the value head. */
static size_t llama_tensor_table(const GPTConfig *c, int tp, int tp_rank, int pp, int pp_rank,
                                 TensorInfo t[GPT_NUM_TENSORS], int *ntensors) {
    int V = c->V, L = c->L, C = c->C, hd = gpt_head_dim(c), F = gpt_ffn(c);
    int Cq = c->NH * hd, Ckv = gpt_kv_heads(c) * hd;
    int first = pp_rank == 0 ? 0 : -1, last = pp_rank == pp - 1 ? 0 : -1;
    int emb = c->untied ? first : (first == 0 || last == 0) ? 0 : -1; /* a tied wte is the head too */
    size_t off = 0, loff = 0;
    int n = 0;
#define S(r, name, nd, a, b, cc, d, cut, stg) \
    do { \
        set_tensor(&t[n], name, nd, a, b, cc, d, cut, stg, tp, tp_rank, pp, pp_rank, &off, &loff); \
        t[n++].role = r; \
    } while (0)
    S(LLAMA_WTE, "wte", 2, V, C, 0, 0, -1, emb);                       /* (V, C) */
    S(LLAMA_LN1W, "ln1w", 2, L, C, 0, 0, -1, 1);                       /* (L, C) */
    S(LLAMA_QW, "qw", 3, L, Cq, C, 0, 1, 1);                           /* (L, Cq, C) → (L, Cq/tp, C) */
    S(LLAMA_KVW, "kvw", 4, L, 2, Ckv, C, 2, 1);                        /* (L, 2, Ckv, C) → (L, 2, Ckv/tp, C) */
    if (c->qkv_bias) {
        S(LLAMA_QB, "qb", 2, L, Cq, 0, 0, 1, 1);                       /* (L, Cq) → (L, Cq/tp) */
        S(LLAMA_KVB, "kvb", 3, L, 2, Ckv, 0, 2, 1);                    /* (L, 2, Ckv) → (L, 2, Ckv/tp) */
    }
    if (c->qk_norm) {
        S(LLAMA_QNORMW, "qnormw", 2, L, hd, 0, 0, -1, 1);              /* (L, hd) */
        S(LLAMA_KNORMW, "knormw", 2, L, hd, 0, 0, -1, 1);              /* (L, hd) */
    }
    S(LLAMA_ATTPROJW, "attprojw", 3, L, C, Cq, 0, 2, 1);               /* (L, C, Cq) → (L, C, Cq/tp) */
    S(LLAMA_LN2W, "ln2w", 2, L, C, 0, 0, -1, 1);                       /* (L, C) */
    S(LLAMA_FCW, "fcw", 4, L, 2, F, C, 2, 1);                          /* (L, 2, F, C) → (L, 2, F/tp, C) */
    S(LLAMA_FCPROJW, "fcprojw", 3, L, C, F, 0, 2, 1);                  /* (L, C, F) → (L, C, F/tp) */
    S(LLAMA_LNFW, "lnfw", 1, C, 0, 0, 0, -1, last);                    /* (C) */
    if (c->untied) S(LLAMA_LMHEAD, "lmhead", 2, V, C, 0, 0, -1, last); /* (V, C) */
    if (c->value_head) {
        S(GPT_VHW, "vhw", 1, C, 0, 0, 0, -1, last);                    /* (C) */
        S(GPT_VHB, "vhb", 1, 1, 0, 0, 0, -1, last);                    /* (1) */
    }
#undef S
    /* a tied head's copy of wte on the last stage is not canonical */
    if (pp > 1 && pp_rank != 0) t[0].owner = 0;
    *ntensors = n;
    return off;
}

const char *gpt_arch_name(int arch) {
    static const char *names[GPT_NUM_ARCHS] = {"gpt2", "llama", "qwen2", "qwen3"};
    return arch >= 0 && arch < GPT_NUM_ARCHS ? names[arch] : NULL;
}

int gpt_arch_parse(const char *name) {
    for (int a = 0; a < GPT_NUM_ARCHS; a++)
        if (!strcmp(name, gpt_arch_name(a))) return a;
    return -1;
}

size_t gpt_tensor_table(const GPTConfig *c, int tp, int tp_rank, TensorInfo t[GPT_NUM_TENSORS], int *ntensors) {
    return gpt_tensor_table_pp(c, tp, tp_rank, 1, 0, t, ntensors);
}

size_t gpt_tensor_table_pp(const GPTConfig *c, int tp, int tp_rank, int pp, int pp_rank, TensorInfo t[GPT_NUM_TENSORS],
                           int *ntensors) {
    int V = c->V, T = c->maxT, L = c->L, C = c->C;
    if (pp < 1 || pp_rank < 0 || pp_rank >= pp) nr_fatal("gpt tensor table: stage %d of %d", pp_rank, pp);
    if (gpt_is_llama(c)) return llama_tensor_table(c, tp, tp_rank, pp, pp_rank, t, ntensors);
    size_t off = 0, loff = 0;
    /* which stage holds what: layers cut (1); embeddings on the first stage,
     * the final LayerNorm and the heads on the last, wte on both (tied) */
    int first = pp_rank == 0 ? 0 : -1, last = pp_rank == pp - 1 ? 0 : -1, both = (first == 0 || last == 0) ? 0 : -1;
#define S(id, name, nd, a, b, cc, d, cut, stg) \
    set_tensor(&t[id], name, nd, a, b, cc, d, cut, stg, tp, tp_rank, pp, pp_rank, &off, &loff)
    S(GPT_WTE, "wte", 2, V, C, 0, 0, -1, both);            /* (V, C) replicated (vocab-parallel: later) */
    S(GPT_WPE, "wpe", 2, T, C, 0, 0, -1, first);           /* (maxT, C) */
    S(GPT_LN1W, "ln1w", 2, L, C, 0, 0, -1, 1);             /* (L, C) */
    S(GPT_LN1B, "ln1b", 2, L, C, 0, 0, -1, 1);             /* (L, C) */
    S(GPT_QKVW, "qkvw", 4, L, 3, C, C, 2, 1);              /* (L, 3, C, C) → (L, 3, C/tp, C): heads */
    S(GPT_QKVB, "qkvb", 3, L, 3, C, 0, 2, 1);              /* (L, 3, C) → (L, 3, C/tp) */
    S(GPT_ATTPROJW, "attprojw", 3, L, C, C, 0, 2, 1);      /* (L, C, C) → (L, C, C/tp): input columns */
    S(GPT_ATTPROJB, "attprojb", 2, L, C, 0, 0, -1, 1);     /* (L, C) */
    S(GPT_LN2W, "ln2w", 2, L, C, 0, 0, -1, 1);             /* (L, C) */
    S(GPT_LN2B, "ln2b", 2, L, C, 0, 0, -1, 1);             /* (L, C) */
    S(GPT_FCW, "fcw", 3, L, 4 * C, C, 0, 1, 1);            /* (L, 4C, C) → (L, 4C/tp, C) */
    S(GPT_FCB, "fcb", 2, L, 4 * C, 0, 0, 1, 1);            /* (L, 4C) → (L, 4C/tp) */
    S(GPT_FCPROJW, "fcprojw", 3, L, C, 4 * C, 0, 2, 1);    /* (L, C, 4C) → (L, C, 4C/tp) */
    S(GPT_FCPROJB, "fcprojb", 2, L, C, 0, 0, -1, 1);       /* (L, C) */
    S(GPT_LNFW, "lnfw", 1, C, 0, 0, 0, -1, last);          /* (C) */
    S(GPT_LNFB, "lnfb", 1, C, 0, 0, 0, -1, last);          /* (C) */
    *ntensors = GPT_VHW;
    if (c->value_head) {
        S(GPT_VHW, "vhw", 1, C, 0, 0, 0, -1, last);        /* (C) = (1, C) matmul weight */
        S(GPT_VHB, "vhb", 1, 1, 0, 0, 0, -1, last);        /* (1) */
        *ntensors = GPT_NUM_TENSORS;
    }
#undef S
    for (int i = 0; i < *ntensors; i++) t[i].role = i; /* GPT-2: the table index is the role */
    /* the tied LM head's copy of wte on the last stage is not canonical */
    if (pp > 1 && pp_rank != 0) t[GPT_WTE].owner = 0;
    return off;
}

int gpt_tensor_owner(const GPT *m, int i) {
    if (i < 0 || i >= m->ntensors) nr_fatal("gpt_tensor_owner: no tensor %d", i);
    return m->tensors[i].owner;
}

size_t gpt_logical_numel(const GPTConfig *cfg) {
    TensorInfo t[GPT_NUM_TENSORS];
    int n;
    gpt_tensor_table(cfg, 1, 0, t, &n);
    return t[n - 1].loffset + t[n - 1].numel;
}

/* The runs of tensor t: run o (0 ≤ o < *nruns) is *len floats at local
 * o·(*len) and at logical o·(*lstride) + (*lstart), both from the tensor's
 * start. Not cut: one run of numel; not held: none. A PP cut (axis 0, a
 * block of whole layers) only shifts the logical start by pp_start layers:
 * local run o = (layer i, middle index j) is logical run
 * ((pp_start + i)·M + j), i.e. o + pp_start·M, with M the runs per layer. */
void gpt_tensor_runs(const TensorInfo *t, size_t *nruns, size_t *len, size_t *lstride, size_t *lstart) {
    if (!t->held) {
        *nruns = 0;
        *len = 0;
        *lstride = 0;
        *lstart = 0;
        return;
    }
    size_t layer0 = t->pp_axis == 0 ? (size_t)t->pp_start * (t->numel / (size_t)t->shape[0]) : 0;
    if (t->cut_axis < 0) {
        *nruns = 1;
        *len = t->lnumel;
        *lstride = t->lnumel;
        *lstart = layer0;
        return;
    }
    size_t outer = 1, inner = 1;
    for (int i = 0; i < t->cut_axis; i++) outer *= (size_t)t->lshape[i];
    for (int i = t->cut_axis + 1; i < t->ndim; i++) inner *= (size_t)t->shape[i];
    *nruns = outer;
    *len = (size_t)t->lshape[t->cut_axis] * inner;
    *lstride = (size_t)t->shape[t->cut_axis] * inner;
    *lstart = (size_t)t->cut_start * inner + layer0;
}

static float *gpt_buf(const GPT *m, int which, const char *who) {
    float *b = which == GPT_BUF_PARAMS ? m->params : which == GPT_BUF_GRADS ? m->grads
             : which == GPT_BUF_ADAM_M ? m->m : which == GPT_BUF_ADAM_V ? m->v : NULL;
    if (which < GPT_BUF_PARAMS || which > GPT_BUF_ADAM_V) nr_fatal("%s: unknown buffer %d", who, which);
    if (!b) nr_fatal("%s: buffer %d asked of a frozen model", who, which);
    return b;
}

/* Calls fn for each stretch of tensor t's local block whose logical index
 * lies in [lo, hi): local float k (from the tensor's start), logical index l
 * (in the whole vector), count. Runs are in increasing logical order, so only
 * those that meet the window are visited. */
static void tensor_window(const TensorInfo *t, size_t lo, size_t hi,
                          void (*fn)(size_t k, size_t l, size_t cnt, void *ctx), void *ctx) {
    size_t nr, len, ls, l0;
    gpt_tensor_runs(t, &nr, &len, &ls, &l0);
    size_t base = t->loffset + l0; /* logical start of run 0 */
    if (nr == 0 || len == 0 || hi <= base) return;
    size_t first = lo >= base + len ? (lo - base - len) / ls + 1 : 0; /* runs ending at or before lo skipped */
    size_t end = NR_MIN(nr, (hi - base - 1) / ls + 1);                 /* runs starting at or after hi skipped */
    for (size_t o = first; o < end; o++) {
        size_t a = base + o * ls, b = a + len;
        size_t s0 = NR_MAX(a, lo), s1 = NR_MIN(b, hi);
        if (s0 < s1) fn(o * len + (s0 - a), s0, s1 - s0, ctx);
    }
}

/* one stretch between a tensor's local block (buf: the tensor's start) and a window starting at logical lo */
typedef struct WinCopy { const Backend *be; float *buf; float *win; size_t lo; int up; } WinCopy;

static void win_copy(size_t k, size_t l, size_t cnt, void *ctx) {
    WinCopy *w = ctx;
    if (w->up) w->be->upload(w->buf + k, w->win + (l - w->lo), cnt * sizeof(float));
    else w->be->download(w->win + (l - w->lo), w->buf + k, cnt * sizeof(float));
}

static void window_copy(const GPT *m, int which, size_t lo, size_t hi, int owners_only, float *win, int up) {
    float *buf = gpt_buf(m, which, up ? "gpt_import_logical" : "gpt_export_logical");
    WinCopy w = {m->be, NULL, win, lo, up};
    for (int i = 0; i < m->ntensors; i++) {
        const TensorInfo *t = &m->tensors[i];
        if (owners_only && !t->owner) continue;
        w.buf = buf + t->offset;
        tensor_window(t, lo, hi, win_copy, &w);
    }
}

void gpt_export_logical_window(const GPT *m, int which, size_t lo, size_t hi, int owners_only, float *win) {
    window_copy(m, which, lo, hi, owners_only, win, 0);
}

void gpt_import_logical_window(GPT *m, int which, size_t lo, size_t hi, const float *win) {
    window_copy(m, which, lo, hi, 0, (float *)win, 1);
}

void gpt_export_logical(const GPT *m, int which, float *full) {
    gpt_export_logical_window(m, which, 0, gpt_logical_numel(&m->cfg), 0, full);
}

void gpt_import_logical(GPT *m, int which, const float *full) {
    gpt_import_logical_window(m, which, 0, gpt_logical_numel(&m->cfg), full);
}

/* ---- checksums ----------------------------------------------------------- */

void gpt_tensor_checks(const GPT *m, int which, double *abs, uint64_t *hash) {
    const float *buf = gpt_buf(m, which, "gpt_tensor_checks");
    int direct = backend_host_memory(m->be);
    float *host = NULL;
    size_t cap = 0;
    for (int i = 0; i < m->ntensors; i++) {
        const TensorInfo *t = &m->tensors[i];
        abs[i] = 0;
        if (hash) hash[i] = 0;
        if (!t->owner || !t->lnumel) continue;
        const float *x = buf + t->offset;
        if (!direct) { /* one tensor's block on the host at a time */
            if (t->lnumel > cap) {
                free(host);
                host = nr_xmalloc(t->lnumel * sizeof(float));
                cap = t->lnumel;
            }
            m->be->download(host, x, t->lnumel * sizeof(float));
            x = host;
        }
        size_t nr, len, ls, l0;
        gpt_tensor_runs(t, &nr, &len, &ls, &l0);
        for (size_t o = 0; o < nr; o++) {
            const float *r = x + o * len;
            for (size_t k = 0; k < len; k++) abs[i] += fabs((double)r[k]);
            if (hash) hash[i] += nr_cksum_f32(r, len, o * ls + l0); /* keyed by the index in the logical tensor */
        }
    }
    free(host);
}

/* collective over m->sh.tp_comm and m->sh.pp_comm: s[i] = logical Σ|x| of
 * tensor i of buffer `which`, for every i (each block from its owner only:
 * gpt_tensor_owner, so every logical element counted once) */
static void gpt_tensor_sums(const GPT *m, int which, double *s) {
    gpt_tensor_checks(m, which, s, NULL);
    if (m->sh.tp > 1) comm_allreduce_sum_f64(m->sh.tp_comm, s, (size_t)m->ntensors);
    if (m->sh.pp > 1) comm_allreduce_sum_f64(m->sh.pp_comm, s, (size_t)m->ntensors);
}

double gpt_checksum(const GPT *m) {
    if (m->sh.tp == 1 && m->sh.pp == 1) {
        /* one running sum in logical element order (the historical value, bit for bit) */
        float *host = nr_xmalloc(m->nparams * sizeof(float));
        m->be->download(host, m->params, m->nparams * sizeof(float));
        double s = 0.0;
        for (int i = 0; i < m->ntensors; i++) {
            const TensorInfo *t = &m->tensors[i];
            for (size_t k = 0; k < t->numel; k++) s += fabs((double)host[t->offset + k]);
        }
        free(host);
        return s;
    }
    double s[GPT_NUM_TENSORS], tot = 0.0;
    gpt_tensor_sums(m, GPT_BUF_PARAMS, s);
    for (int i = 0; i < m->ntensors; i++) tot += s[i];
    return tot;
}

double gpt_checksum_tensor(const GPT *m, int which, int i) {
    if (i < 0 || i >= m->ntensors) nr_fatal("gpt_checksum_tensor: no tensor %d", i);
    double s[GPT_NUM_TENSORS];
    gpt_tensor_sums(m, which, s);
    return s[i];
}
