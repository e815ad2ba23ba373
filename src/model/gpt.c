/* gpt.c — GPT-2 (and, through llama.c, the Llama family) over the Backend: one flat parameter buffer over the tensor
 * table (shard.c), forward, backward (layer by layer through one layer of
 * scratch), AdamW with gradient-norm clipping, and KV-cached decoding, each
 * on this rank's TP shard with the Megatron sums over the TP group (two in
 * forward, two in backward per layer) and on this rank's pipeline stage:
 * its layers only, the batch's rows run as microbatches, activations and
 * their gradients passed to the neighbouring stages with non-blocking
 * point-to-point (GPipe schedule; why not 1F1B is in model.h). Shapes, the
 * cuts and the init rule are in model.h; the op contracts are in
 * backend.h. All pointers in this file's public functions are host
 * pointers; buffers inside the struct live in backend memory. */
#include "nereus/model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"
#include "nereus/comm.h"
#include "nereus/util.h"

/* collective over m->sh.tp_comm (no-op when tp = 1): buf (n floats, backend
 * memory) becomes its sum over the TP group, in place: comm.h takes device
 * memory to the group's NCCL communicator, or through host memory. */
static void gpt_tp_sum(GPT *m, float *buf, size_t n) {
    if (m->sh.tp == 1) return;
    comm_allreduce_sum_f32(m->sh.tp_comm, buf, n);
}

/* The replicated bias of a row-parallel matmul (attproj, fcproj) enters the
 * TP sum once: TP rank 0 adds it, the others pass none. */
static const float *gpt_rowpar_bias(const GPT *m, const float *bias) {
    return m->sh.tp_rank == 0 ? bias : NULL;
}

/* ---- pipeline helpers ------------------------------------------------------ */

/* Microbatches of a forward over B rows: the shard's count (default pp), at
 * most B. */
static int gpt_microbatches(const GPT *m, int B) {
    int k = m->sh.microbatches > 0 ? m->sh.microbatches : m->sh.pp;
    return k < B ? k : B;
}

/* Rows [*r0, *r0 + *n) of microbatch k of nmb over B rows: as even as
 * possible, the first B % nmb microbatches one row longer. */
static void gpt_mb_rows(int B, int nmb, int k, int *r0, int *n) {
    int q = B / nmb, r = B % nmb;
    *r0 = k * q + (k < r ? k : r);
    *n = q + (k < r);
}

/* Tags on pp_comm: the microbatch index. Forward messages go p → p+1 and
 * backward ones p+1 → p, so (source, tag) never mixes the two, and messages
 * between one pair match in order, so the wrap is harmless. */
static int gpt_pp_tag(int k) { return k % 32768; }

/* floats of one slot of the host staging: (Bmax, Tmax, C) */
static size_t gpt_pp_slot(const GPT *m) { return (size_t)m->Bmax * (size_t)m->Tmax * (size_t)m->cfg.C; }

/* Start receiving n floats of backend buffer dst from stage src; a backend
 * whose memory is not host memory receives into the host staging at the
 * same offset (slot 1), finished by gpt_pp_recv_done. */
static MPI_Request gpt_pp_irecv(GPT *m, float *dst, size_t off, size_t n, int src, int k) {
    float *buf = m->pp_host ? m->pp_host + gpt_pp_slot(m) + off : dst + off;
    return comm_irecv_f32(m->sh.pp_comm, buf, n, src, gpt_pp_tag(k));
}
static void gpt_pp_recv_done(GPT *m, float *dst, size_t off, size_t n) {
    if (m->pp_host) m->be->upload(dst + off, m->pp_host + gpt_pp_slot(m) + off, n * sizeof(float));
}
/* How long a stage stays with a microbatch it has just sent before going on
 * to the next (comm_push): the next stage is often waiting for it, and
 * then the two move it in one go instead of at this stage's next test,
 * which in a backward pass comes a whole matmul later. Where the receiver
 * is busy the time is lost, at most this much a microbatch. On 2 ranks with
 * a core each (gpt_pp_poll's case), both trainings pp2 run faster with it
 * than without, and longer waits gain little more. */
#define GPT_PP_PUSH_S 0.001

static MPI_Request gpt_pp_isend(GPT *m, const float *src_buf, size_t off, size_t n, int dest, int k) {
    const float *buf = src_buf + off;
    if (m->pp_host) {
        m->be->download(m->pp_host + off, src_buf + off, n * sizeof(float));
        buf = m->pp_host + off;
    }
    MPI_Request r = comm_isend_f32(m->sh.pp_comm, buf, n, dest, gpt_pp_tag(k));
    comm_push(&r, GPT_PP_PUSH_S);
    return r;
}

/* Progress of this stage's transfers in flight while it computes (m->poll_*,
 * set per microbatch by gpt_pp_watch), called between the operations of a
 * layer. A message past the eager limit moves only while its sender is in
 * an MPI call (Open MPI's shared-memory transport: the receiver's ack, then
 * the fragments, each pushed from the sender's progress), so with one test
 * a layer the next stage would get microbatch k only when this stage blocks
 * at the end of its pass: no overlap at all, the second stage waiting in
 * its forward as long as the first computes (on 2 ranks with a core each,
 * pp2 would train slower than both trainings on one rank). A test costs a
 * few microseconds; where nothing is in flight (pp = 1, or outside a
 * pipelined pass) it is skipped. */
static void gpt_pp_poll(GPT *m) {
    if (m->poll_nsent > 0) comm_testall(m->poll_nsent, m->poll_sent);
    if (m->poll_nrecv > 0) comm_testall(m->poll_nrecv, m->poll_recv);
}

/* what gpt_pp_poll tests from now on: sends [0, nsent) of sent, receives [0, nrecv) of recv (NULL: none) */
static void gpt_pp_watch(GPT *m, MPI_Request *sent, int nsent, MPI_Request *recv, int nrecv) {
    m->poll_sent = sent;
    m->poll_nsent = sent ? nsent : 0;
    m->poll_recv = recv;
    m->poll_nrecv = recv ? nrecv : 0;
}

/* collective over m->sh.pp_comm (no-op when pp = 1): n floats of backend
 * buffer buf from the last stage to every stage. */
static void gpt_pp_bcast(GPT *m, float *buf, size_t n) {
    if (m->sh.pp == 1) return;
    int root = m->sh.pp - 1;
    comm_bcast_f32(m->sh.pp_comm, buf, n, root); /* device memory: NCCL or through host memory (comm.h) */
}

/* 1 when the first and the last stage each hold a copy of wte (pp > 1 and the head tied to it: GPT-2, a
 * tied Llama), whose gradients are summed over embd_comm */
static int gpt_pp_tied(const GPT *m) { return m->sh.pp > 1 && !(gpt_is_llama(&m->cfg) && m->cfg.untied); }

/* Bump allocator over one backend allocation: carve named arrays. */
typedef struct Carve { float *base; size_t used; } Carve;
static float *carve(Carve *cv, size_t n) {
    float *p = cv->base ? cv->base + cv->used : NULL;
    cv->used += (n + 15) & ~(size_t)15;
    return p;
}

/* floats a row of the MLP's first matmul output: GPT-2 4C/tp, the Llama family 2F ([gate | up]) */
static size_t gpt_fc_width(const GPT *m) { return (size_t)(gpt_is_llama(&m->cfg) ? 2 * m->F : m->F); }

/* this rank's widths (GPT.Cl ... F) of cfg cut tp ways */
static void gpt_set_dims(GPT *m, const GPTConfig *cfg, int tp) {
    m->NHl = cfg->NH / tp;
    m->hs = gpt_head_dim(cfg);
    m->NKVl = gpt_kv_heads(cfg) / tp;
    m->Cl = gpt_is_llama(cfg) ? m->NHl * m->hs : cfg->C / tp;
    m->C3 = m->Cl + 2 * m->NKVl * m->hs;
    m->F = gpt_ffn(cfg) / tp;
}

static size_t gpt_carve_acts(GPT *m, Carve *cv) {
    const GPTConfig *c = &m->cfg;
    /* L: the layers whose activations are kept (this stage's, or one for a model that runs no backward) */
    size_t B = (size_t)m->Bmax, T = (size_t)m->Tmax, L = (size_t)m->La, C = (size_t)c->C;
    size_t Cl = (size_t)m->Cl, NH = (size_t)m->NHl, V = (size_t)c->V, BT = B * T;
    GPTActs *a = &m->a;
    a->encoded = carve(cv, BT * C);
    a->ln1 = carve(cv, L * BT * C);
    a->ln1_mean = carve(cv, L * BT);
    a->ln1_rstd = carve(cv, L * BT);
    a->qkv = carve(cv, L * BT * (size_t)m->C3);
    a->atty = carve(cv, L * BT * Cl);
    a->preatt = carve(cv, L * B * NH * T * T);
    a->att = carve(cv, L * B * NH * T * T);
    a->attproj = carve(cv, L * BT * C);
    a->residual2 = carve(cv, L * BT * C);
    a->ln2 = carve(cv, L * BT * C);
    a->ln2_mean = carve(cv, L * BT);
    a->ln2_rstd = carve(cv, L * BT);
    a->fch = carve(cv, L * BT * gpt_fc_width(m));
    a->fch_gelu = carve(cv, L * BT * (size_t)m->F);
    a->fcproj = carve(cv, L * BT * C);
    a->residual3 = carve(cv, L * BT * C);
    /* the head activations live on the last stage only */
    a->lnf = m->last ? carve(cv, BT * C) : NULL;
    a->lnf_pk = m->last ? carve(cv, BT * C) : NULL;
    a->lnf_mean = m->last ? carve(cv, BT) : NULL;
    a->lnf_rstd = m->last ? carve(cv, BT) : NULL;
    a->logits = m->last ? carve(cv, BT * V) : NULL;
    a->values = carve(cv, BT);
    if (gpt_is_llama(c) && c->qk_norm) {
        a->qkv_raw = carve(cv, L * BT * (size_t)m->C3);
        a->qk_rstd = carve(cv, L * BT * (size_t)(m->NHl + m->NKVl));
    }
    if (gpt_is_llama(c)) {
        a->wqkv = carve(cv, (size_t)m->C3 * C);
        a->bqkv = c->qkv_bias ? carve(cv, (size_t)m->C3) : NULL;
    }
    return cv->used;
}

static size_t gpt_carve_scratch(GPT *m, Carve *cv) {
    const GPTConfig *c = &m->cfg;
    size_t B = (size_t)m->Bmax, T = (size_t)m->Tmax, C = (size_t)c->C, NH = (size_t)m->NHl;
    size_t Cl = (size_t)m->Cl, BT = B * T;
    GPTGradScratch *s = &m->s;
    s->dresidual = carve(cv, BT * C);
    s->dln = carve(cv, BT * C);
    s->dqkv = carve(cv, BT * (size_t)m->C3);
    s->datty = carve(cv, BT * Cl);
    s->dpreatt = carve(cv, B * NH * T * T);
    s->datt = carve(cv, B * NH * T * T);
    s->dfch = carve(cv, BT * gpt_fc_width(m));
    s->dfch_gelu = carve(cv, BT * (size_t)m->F);
    s->dtmp = carve(cv, BT * C);
    s->dvalues = carve(cv, BT);
    if (gpt_is_llama(c) && c->qk_norm) s->dqkv_raw = carve(cv, BT * (size_t)m->C3);
    if (gpt_is_llama(c)) {
        s->dwqkv = carve(cv, (size_t)m->C3 * C);
        s->dbqkv = c->qkv_bias ? carve(cv, (size_t)m->C3) : NULL;
        s->dqknorm = c->qk_norm && m->sh.tp > 1 ? carve(cv, 2 * (size_t)m->hs) : NULL;
    }
    return cv->used;
}

/* decode buffers and the small per-call buffers behind the host-facing API */
static size_t gpt_carve_decode(GPT *m, Carve *cv) {
    size_t B = (size_t)m->Bmax, C = (size_t)m->cfg.C, Cl = (size_t)m->Cl, V = (size_t)m->cfg.V;
    size_t BT = B * (size_t)m->Tmax;
    m->d_x = carve(cv, B * C);
    m->d_ln = carve(cv, B * C);
    m->d_qkv = carve(cv, B * (size_t)m->C3);
    m->d_atty = carve(cv, B * Cl);
    m->d_tmp = carve(cv, B * C);
    m->d_fch = carve(cv, B * gpt_fc_width(m));
    m->d_fchg = carve(cv, B * (size_t)m->F);
    m->d_logits = carve(cv, B * V);
    m->d_mean = carve(cv, B);
    m->d_rstd = carve(cv, B);
    m->logp = carve(cv, BT);
    m->ent = carve(cv, BT);
    m->logp_pk = carve(cv, BT);
    m->ent_pk = carve(cv, BT);
    m->dlogp = carve(cv, BT);
    m->dent = carve(cv, BT);
    if (gpt_is_llama(&m->cfg)) {
        m->inv_freq = carve(cv, (size_t)m->hs / 2);
        m->zero_pos = carve(cv, (size_t)m->Tmax * C);
        if (m->cfg.qk_norm) {
            m->d_qk_rstd = carve(cv, B * (size_t)(m->NHl + m->NKVl));
            m->d_qkv_raw = carve(cv, B * (size_t)m->C3);
        }
    }
    return cv->used;
}

/* how the tensor of role r starts: 1 a weight N(0, std), 2 a residual projection N(0, std/sqrt(2L)), 3 a
 * unit gain, 0 zero (biases, the value head) */
static int gpt_init_kind(const GPTConfig *c, int r) {
    if (gpt_is_llama(c)) {
        if (r == LLAMA_WTE || r == LLAMA_QW || r == LLAMA_KVW || r == LLAMA_FCW || r == LLAMA_LMHEAD) return 1;
        if (r == LLAMA_ATTPROJW || r == LLAMA_FCPROJW) return 2;
        if (r == LLAMA_LN1W || r == LLAMA_LN2W || r == LLAMA_LNFW || r == LLAMA_QNORMW || r == LLAMA_KNORMW) return 3;
        return 0;
    }
    if (r == GPT_ATTPROJW || r == GPT_FCPROJW) return 2;
    if (r == GPT_WTE || r == GPT_WPE || r == GPT_QKVW || r == GPT_FCW) return 1;
    return r == GPT_LN1W || r == GPT_LN2W || r == GPT_LNFW ? 3 : 0;
}

static void gpt_init_params(GPT *m, uint64_t seed, float std) {
    const GPTConfig *c = &m->cfg;
    float *host = nr_xcalloc(m->nparams, sizeof(float));
    float resid_std = std / sqrtf(2.0f * (float)c->L);
    for (int i = 0; i < m->ntensors; i++) {
        TensorInfo *t = &m->tensors[i];
        float *p = host + t->offset;
        int kind = gpt_init_kind(c, t->role), is_weight = kind == 1 || kind == 2, is_gain = kind == 3;
        float s = kind == 2 ? resid_std : std;
        /* local element o·len + j is logical element o·ls + l0 + j */
        size_t nr, len, ls, l0;
        gpt_tensor_runs(t, &nr, &len, &ls, &l0);
        for (size_t o = 0; o < nr; o++)
            for (size_t j = 0; j < len; j++) {
                size_t k = o * ls + l0 + j;
                float *x = p + o * len + j;
                if (is_weight) *x = s * rng_normal(seed, RNG_INIT, (uint64_t)i, k);
                else if (is_gain) *x = 1.0f;
                else *x = 0.0f; /* biases and the value head */
            }
    }
    m->be->upload(m->params, host, m->nparams * sizeof(float));
    free(host);
}

void gpt_build(GPT *m, const GPTConfig *cfg, const Backend *be, int Bmax, int Tmax,
               int trainable, uint64_t seed, float init_std) {
    GPTShard whole = {1, 0, MPI_COMM_NULL, 1, 0, MPI_COMM_NULL, MPI_COMM_NULL, 0};
    gpt_build_shard(m, cfg, &whole, be, Bmax, Tmax, trainable, seed, init_std);
}

/* Bytes of backend memory one allocation of n bytes takes (the backends
 * round to their alignment; 256 covers both) */
static size_t gpt_alloc_rounded(size_t n) { return n == 0 ? 256 : (n + 255) / 256 * 256; }

size_t gpt_shard_bytes(const GPTConfig *cfg, int tp, int pp, int pp_rank, int Bmax, int Tmax, int trainable) {
    /* the fields the carve functions read, as gpt_build_shard sets them (on the heap: a GPT is large) */
    GPT *m = nr_xcalloc(1, sizeof *m);
    m->cfg = *cfg;
    m->Bmax = Bmax;
    m->Tmax = Tmax;
    m->sh.tp = tp;
    m->sh.pp = pp;
    gpt_set_dims(m, cfg, tp);
    m->Ll = cfg->L / pp;
    m->La = trainable ? m->Ll : 1;
    m->last = pp_rank == pp - 1;
    TensorInfo t[GPT_NUM_TENSORS];
    int nt;
    size_t np = gpt_tensor_table_pp(cfg, tp, 0, pp, pp_rank, t, &nt);
    size_t F = sizeof(float), total = gpt_alloc_rounded(np * F) * (trainable ? 4 : 1);
    Carve cv = {NULL, 0};
    total += gpt_alloc_rounded(gpt_carve_acts(m, &cv) * F);
    if (trainable) {
        cv = (Carve){NULL, 0};
        total += gpt_alloc_rounded(gpt_carve_scratch(m, &cv) * F);
    }
    if (pp == 1) {
        size_t kv = (size_t)cfg->L * (size_t)Bmax * (size_t)m->NKVl * (size_t)Tmax * (size_t)m->hs;
        total += 2 * gpt_alloc_rounded(kv * F);
    }
    cv = (Carve){NULL, 0};
    total += gpt_alloc_rounded(gpt_carve_decode(m, &cv) * F);
    total += 2 * gpt_alloc_rounded((size_t)Bmax * (size_t)Tmax * sizeof(int));
    free(m);
    return total;
}

/* the named pointers follow the params buffer (NULL: a tensor of another stage, or no params) */
static void point_params(GPT *m) {
    for (int r = 0; r < GPT_NUM_TENSORS; r++) m->p[r] = NULL;
    for (int i = 0; i < m->ntensors; i++) {
        const TensorInfo *t = &m->tensors[i];
        m->p[t->role] = t->held && m->params ? m->params + t->offset : NULL;
    }
}

/* zeroes the padding of a flat buffer allocated without clearing: what follows each tensor up to the
   next 16-float boundary, which no tensor write reaches (so reused memory leaves nothing there) */
static void gpt_clear_padding(const GPT *m, float *buf) {
    for (int i = 0; i < m->ntensors; i++) {
        const TensorInfo *t = &m->tensors[i];
        size_t end = t->offset + t->lnumel, next = t->offset + ((t->lnumel + 15) & ~(size_t)15);
        if (next > end) m->be->zero(buf + end, (next - end) * sizeof(float));
    }
}

/* one state buffer (params, m or v) of m->nparams floats: zeroed, or, for a caller that fills every element
   (filled), uninitialised where the backend can (alloc_uninit) with only its padding cleared */
static float *state_new(const GPT *m, const Backend *be, int filled) {
    if (!filled) return be->alloc(m->nparams * sizeof(float));
    float *buf = (be->alloc_uninit ? be->alloc_uninit : be->alloc)(m->nparams * sizeof(float));
    gpt_clear_padding(m, buf);
    return buf;
}

/* filled: how many of (params, m, v) the caller writes in full before any read (a transition's
   destination: 1, or 3 with the AdamW moments); those, and then the gradients (gpt_zero_grad clears
   them before every backward), are allocated without clearing. 0: every buffer zero */
static void gpt_alloc_work(GPT *m, int grads_uninit);

/* what a Llama-family model needs of its config and its cut */
static void gpt_check_llama(const GPTConfig *cfg, const GPTShard *sh) {
    const char *arch = gpt_arch_name(cfg->arch);
    if (!arch) nr_fatal("gpt_build: unknown architecture %d", cfg->arch);
    if (cfg->NKV < 0 || cfg->NH % gpt_kv_heads(cfg) != 0)
        nr_fatal("gpt_build: %d key/value heads do not divide %d query heads", gpt_kv_heads(cfg), cfg->NH);
    /* TP cuts whole key/value heads (each with its group of query heads): KV heads are not replicated */
    if (sh->tp > 0 && gpt_kv_heads(cfg) % sh->tp != 0)
        nr_fatal("gpt_build: tp %d does not divide the %s model's %d key/value heads", sh->tp, arch,
                 gpt_kv_heads(cfg));
    if (sh->tp > 0 && gpt_ffn(cfg) % sh->tp != 0)
        nr_fatal("gpt_build: tp %d does not divide the %s model's MLP width %d", sh->tp, arch, gpt_ffn(cfg));
    if (cfg->head_dim < 0 || gpt_head_dim(cfg) < 2 || gpt_head_dim(cfg) % 2 != 0)
        nr_fatal("gpt_build: head width %d (C %d, NH %d, head_dim %d) is not a positive even number",
                 gpt_head_dim(cfg), cfg->C, cfg->NH, cfg->head_dim);
    if (cfg->ffn < 0) nr_fatal("gpt_build: MLP width %d", cfg->ffn);
}

static void gpt_alloc_shard(GPT *m, const GPTConfig *cfg, const GPTShard *sh, const Backend *be, int Bmax, int Tmax,
                            int trainable, int filled, int state_only) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->be = be;
    m->trainable = trainable;
    m->Bmax = Bmax;
    m->Tmax = Tmax;
    if (Tmax > cfg->maxT) nr_fatal("gpt_build: Tmax %d exceeds the model's %d positions", Tmax, cfg->maxT);
    if (gpt_is_llama(cfg)) gpt_check_llama(cfg, sh);
    else if (cfg->C % cfg->NH != 0) nr_fatal("gpt_build: n_head %d does not divide n_embd %d", cfg->NH, cfg->C);
    if (cfg->V_real < 0 || cfg->V_real > cfg->V)
        nr_fatal("gpt_build: real vocabulary %d outside [1, %d]", cfg->V_real, cfg->V);
    if (sh->tp < 1 || sh->tp_rank < 0 || sh->tp_rank >= sh->tp)
        nr_fatal("gpt_build: TP rank %d of %d is not a shard", sh->tp_rank, sh->tp);
    if (cfg->NH % sh->tp != 0) nr_fatal("gpt_build: tp %d does not divide n_head %d", sh->tp, cfg->NH);
    m->sh = *sh;
    if (sh->tp == 1) {
        m->sh.tp_rank = 0;
        m->sh.tp_comm = MPI_COMM_NULL;
    } else if (comm_size(sh->tp_comm) != sh->tp || comm_rank(sh->tp_comm) != sh->tp_rank) {
        nr_fatal("gpt_build: TP communicator has size %d and this rank %d, the shard says tp %d rank %d",
                 comm_size(sh->tp_comm), comm_rank(sh->tp_comm), sh->tp, sh->tp_rank);
    }
    if (m->sh.pp <= 0) m->sh.pp = 1; /* a TP-only initializer: no pipeline */
    if (m->sh.pp_rank < 0 || m->sh.pp_rank >= m->sh.pp)
        nr_fatal("gpt_build: PP stage %d of %d is not a stage", m->sh.pp_rank, m->sh.pp);
    if (cfg->L % m->sh.pp != 0) nr_fatal("gpt_build: pp %d does not divide n_layer %d", m->sh.pp, cfg->L);
    if (m->sh.microbatches < 0) nr_fatal("gpt_build: %d microbatches", m->sh.microbatches);
    if (m->sh.pp == 1) {
        m->sh.pp_rank = 0;
        m->sh.pp_comm = MPI_COMM_NULL;
        m->sh.embd_comm = MPI_COMM_NULL;
    } else {
        if (comm_size(m->sh.pp_comm) != m->sh.pp || comm_rank(m->sh.pp_comm) != m->sh.pp_rank)
            nr_fatal("gpt_build: PP communicator has size %d and this rank %d, the shard says pp %d stage %d",
                     comm_size(m->sh.pp_comm), comm_rank(m->sh.pp_comm), m->sh.pp, m->sh.pp_rank);
        int end = m->sh.pp_rank == 0 || m->sh.pp_rank == m->sh.pp - 1;
        if (!end) {
            m->sh.embd_comm = MPI_COMM_NULL;
        } else if (comm_size(m->sh.embd_comm) != 2 || comm_rank(m->sh.embd_comm) != (m->sh.pp_rank == 0 ? 0 : 1)) {
            nr_fatal("gpt_build: embedding communicator has size %d and this rank %d on stage %d of %d "
                     "(want the first and last stage, first as rank 0)",
                     comm_size(m->sh.embd_comm), comm_rank(m->sh.embd_comm), m->sh.pp_rank, m->sh.pp);
        }
    }
    gpt_set_dims(m, cfg, sh->tp);
    m->Ll = cfg->L / m->sh.pp;
    m->La = trainable ? m->Ll : 1;
    m->l0 = m->sh.pp_rank * m->Ll;
    m->first = m->sh.pp_rank == 0;
    m->last = m->sh.pp_rank == m->sh.pp - 1;
    m->nparams = gpt_tensor_table_pp(cfg, m->sh.tp, m->sh.tp_rank, m->sh.pp, m->sh.pp_rank, m->tensors, &m->ntensors);
    m->params = state_new(m, be, filled >= 1);
    /* a transition's destination with its moments: m and v come later, one at a time (gpt_state_alloc), as
       the engine frees the old shard's buffer before each (exec.c) */
    int pending = state_only && filled >= 3 && trainable;
    if (trainable && !pending) {
        m->m = state_new(m, be, filled >= 3);
        m->v = state_new(m, be, filled >= 3);
    }
    point_params(m);
    if (!state_only) gpt_alloc_work(m, filled >= 1);
}

/* What a model needs beyond its state (gpt_shed frees it): gradients (uninitialised where the caller says
 * so: gpt_zero_grad clears them before every backward), activations, scratch, KV caches, decode and token
 * buffers, the pipeline's requests, for m->Bmax sequences of m->Tmax tokens */
static void gpt_alloc_work(GPT *m, int grads_uninit) {
    const GPTConfig *cfg = &m->cfg;
    const Backend *be = m->be;
    int trainable = m->trainable, Bmax = m->Bmax, Tmax = m->Tmax;
    void *(*uninit)(size_t) = be->alloc_uninit ? be->alloc_uninit : be->alloc;
    if (trainable) {
        m->grads = (grads_uninit ? uninit : be->alloc)(m->nparams * sizeof(float));
        for (int i = 0; i < m->ntensors; i++)
            m->g[m->tensors[i].role] = m->tensors[i].held ? m->grads + m->tensors[i].offset : NULL;
    }
    Carve cv = {NULL, 0};
    size_t na = gpt_carve_acts(m, &cv);
    m->acts_mem = be->alloc(na * sizeof(float));
    cv = (Carve){m->acts_mem, 0};
    gpt_carve_acts(m, &cv);
    if (trainable) {
        cv = (Carve){NULL, 0};
        size_t ns = gpt_carve_scratch(m, &cv);
        m->scratch_mem = be->alloc(ns * sizeof(float));
        cv = (Carve){m->scratch_mem, 0};
        gpt_carve_scratch(m, &cv);
        m->s.dlogits = m->a.logits; /* logprob_backward may write over the probs */
    }
    size_t kv = (size_t)cfg->L * (size_t)Bmax * (size_t)m->NKVl * (size_t)Tmax * (size_t)m->hs;
    if (m->sh.pp == 1) { /* generation needs pp = 1: no cache for a pipelined model */
        m->kcache = be->alloc(kv * sizeof(float));
        m->vcache = be->alloc(kv * sizeof(float));
    }
    cv = (Carve){NULL, 0};
    size_t nd = gpt_carve_decode(m, &cv);
    m->decode_mem = be->alloc(nd * sizeof(float));
    cv = (Carve){m->decode_mem, 0};
    gpt_carve_decode(m, &cv);
    if (gpt_is_llama(cfg)) llama_rope_init(m);
    m->tokens = be->alloc((size_t)Bmax * (size_t)Tmax * sizeof(int));
    m->targets = be->alloc((size_t)Bmax * (size_t)Tmax * sizeof(int));
    m->pk_run = nr_xmalloc(3 * (size_t)Bmax * (size_t)Tmax * sizeof(int));
    m->pk_host = nr_xmalloc((size_t)Bmax * (size_t)Tmax * sizeof(float));
    m->pk_on = 0;
    if (m->sh.pp > 1) {
        if (!backend_host_memory(be)) m->pp_host = nr_xmalloc(2 * gpt_pp_slot(m) * sizeof(float));
        m->pp_req = nr_xmalloc(2 * (size_t)Bmax * sizeof(MPI_Request));
    }
}

void gpt_build_shard(GPT *m, const GPTConfig *cfg, const GPTShard *sh, const Backend *be, int Bmax, int Tmax,
                     int trainable, uint64_t seed, float init_std) {
    gpt_alloc_shard(m, cfg, sh, be, Bmax, Tmax, trainable, 0, 0);
    gpt_init_params(m, seed, init_std);
}

void gpt_build_shard_empty(GPT *m, const GPTConfig *cfg, const GPTShard *sh, const Backend *be, int Bmax, int Tmax,
                           int trainable) {
    gpt_alloc_shard(m, cfg, sh, be, Bmax, Tmax, trainable, 0, 0);
}

void gpt_build_shard_dest(GPT *m, const GPTConfig *cfg, const GPTShard *sh, const Backend *be, int Bmax, int Tmax,
                          int trainable, int filled) {
    if (filled < 1 || filled > 3) nr_fatal("gpt_build_shard_dest: %d buffers filled (1..3)", filled);
    gpt_alloc_shard(m, cfg, sh, be, Bmax, Tmax, trainable, filled, 1);
}

void gpt_complete(GPT *m) {
    if (m->be && m->trainable && (!m->m || !m->v))
        nr_fatal("gpt_complete: a transition's destination lacks its AdamW moments (the engine allocates them)");
    if (m->be && !m->acts_mem) gpt_alloc_work(m, 1);
}

static float **state_buffer(GPT *m, int b) {
    if (b < 0 || b > 2 || (b > 0 && !m->trainable)) nr_fatal("gpt: state buffer %d of a%s model", b, m->trainable ? "" : "n untrainable");
    return b == 0 ? &m->params : b == 1 ? &m->m : &m->v;
}

void gpt_state_alloc(GPT *m, int b) {
    float **buf = state_buffer(m, b);
    if (*buf) return;
    *buf = state_new(m, m->be, 1);
    if (b == 0) point_params(m);
}

void gpt_state_free(GPT *m, int b) {
    float **buf = state_buffer(m, b);
    m->be->free(*buf);
    *buf = NULL;
    if (b == 0) point_params(m);
}

void gpt_shed(GPT *m) {
    const Backend *be = m->be;
    if (!be) return;
    be->free(m->grads);
    be->free(m->acts_mem);
    be->free(m->scratch_mem);
    be->free(m->kcache);
    be->free(m->vcache);
    be->free(m->decode_mem);
    be->free(m->tokens);
    be->free(m->targets);
    free(m->pp_host);
    free(m->pp_req);
    free(m->pk_run);
    free(m->pk_host);
    m->pk_run = NULL;
    m->pk_host = NULL;
    m->pk_on = 0;
    m->grads = m->acts_mem = m->scratch_mem = m->kcache = m->vcache = m->decode_mem = m->pp_host = NULL;
    m->tokens = m->targets = NULL;
    m->pp_req = NULL;
    for (int i = 0; i < GPT_NUM_TENSORS; i++) m->g[i] = NULL;
    m->Bmax = m->Tmax = 0; /* no activation capacity left: a forward would fail its shape check */
}

size_t gpt_shard_state_bytes(const GPTConfig *cfg, int tp, int pp, int pp_rank, int trainable) {
    TensorInfo t[GPT_NUM_TENSORS];
    int nt;
    size_t np = gpt_tensor_table_pp(cfg, tp, 0, pp, pp_rank, t, &nt);
    return gpt_alloc_rounded(np * sizeof(float)) * (trainable ? 3 : 1);
}

void gpt_free(GPT *m) {
    const Backend *be = m->be;
    if (!be) return;
    gpt_shed(m);
    be->free(m->wbf16);
    be->free(m->params);
    be->free(m->m);
    be->free(m->v);
    memset(m, 0, sizeof *m);
}

void gpt_copy_params(GPT *dst, const GPT *src) {
    for (int i = 0; i < dst->ntensors; i++) {
        const TensorInfo *d = &dst->tensors[i];
        if (i >= src->ntensors) continue;
        const TensorInfo *s = &src->tensors[i];
        if (strcmp(d->name, s->name) != 0 || d->ndim != s->ndim ||
            memcmp(d->shape, s->shape, sizeof d->shape) != 0)
            nr_fatal("gpt_copy_params: tensor %s differs in shape between models", d->name);
        if (d->cut_axis != s->cut_axis || d->cut_start != s->cut_start || d->pp_axis != s->pp_axis ||
            d->pp_start != s->pp_start || d->held != s->held || memcmp(d->lshape, s->lshape, sizeof d->lshape) != 0)
            nr_fatal("gpt_copy_params: tensor %s is cut differently in the two models", d->name);
        if (d->held) dst->be->copy(dst->params + d->offset, src->params + s->offset, d->lnumel * sizeof(float));
    }
}

/* the LM head's weights (V, C) and their gradient: wte (tied), or the Llama family's lm_head */
static const float *gpt_head(const GPT *m) { return gpt_is_llama(&m->cfg) ? llama_head(m) : m->p[GPT_WTE]; }
static float *gpt_head_grad(GPT *m) { return gpt_is_llama(&m->cfg) ? llama_head_grad(m) : m->g[GPT_WTE]; }

/* ---- forward ----------------------------------------------------------- */

/* collective over m->sh.tp_comm: local layer l (global m->l0 + l) forward on
 * rows [r0, r0 + n) of this forward's (B, T) batch. The per-layer arrays are
 * (Ll, B, T, ·) blocks, so the rows of a microbatch are one contiguous
 * slice of each layer's block. */
static void gpt_layer_forward(GPT *m, int l, int r0, int n) {
    const Backend *be = m->be;
    int B = m->B, T = m->T, C = m->cfg.C, Cl = m->Cl, NH = m->NHl, F = 4 * m->Cl, BT = B * T, nT = n * T;
    size_t BTC = (size_t)BT * C, BTCl = (size_t)BT * Cl, rC = (size_t)r0 * T * C, rCl = (size_t)r0 * T * Cl;
    size_t rF = (size_t)r0 * T * F, rT = (size_t)r0 * T, nTC = (size_t)nT * C;
    size_t attsz = (size_t)B * NH * T * T, ratt = (size_t)r0 * NH * T * T;
    GPTActs *a = &m->a;
    /* k: the activation block of layer l; with one block, the layer's input residual3 is overwritten by
       its output, read last in the attention's residual add */
    size_t k = gpt_act_layer(m, l), kp = gpt_act_layer(m, l - 1);
    float *res = (l == 0 ? a->encoded : a->residual3 + kp * BTC) + rC;
    float *ln1 = a->ln1 + k * BTC + rC, *qkv = a->qkv + k * BTCl * 3 + 3 * rCl, *atty = a->atty + k * BTCl + rCl;
    float *preatt = a->preatt + k * attsz + ratt, *att = a->att + k * attsz + ratt;
    float *attproj = a->attproj + k * BTC + rC, *res2 = a->residual2 + k * BTC + rC;
    float *ln2 = a->ln2 + k * BTC + rC, *fch = a->fch + k * BT * F + rF;
    float *fchg = a->fch_gelu + k * BT * F + rF;
    float *fcproj = a->fcproj + k * BTC + rC, *res3 = a->residual3 + k * BTC + rC;
    float *l1m = a->ln1_mean + k * BT + rT, *l1r = a->ln1_rstd + k * BT + rT;
    float *l2m = a->ln2_mean + k * BT + rT, *l2r = a->ln2_rstd + k * BT + rT;
    be->layernorm_forward(ln1, l1m, l1r, res, m->p[GPT_LN1W] + l * C, m->p[GPT_LN1B] + l * C, nT, C);
    /* column-parallel: this rank's heads of q, k, v */
    gpt_forward_mm(m, qkv, ln1, m->p[GPT_QKVW] + (size_t)l * 3 * Cl * C, m->p[GPT_QKVB] + l * 3 * Cl, nT, C, 3 * Cl);
    gpt_pp_poll(m);
    be->attention_forward(atty, preatt, att, qkv, n, T, Cl, NH, NH);
    gpt_pp_poll(m);
    /* row-parallel: partial sums over this rank's heads, then the TP sum */
    gpt_forward_mm(m, attproj, atty, m->p[GPT_ATTPROJW] + (size_t)l * C * Cl,
                       gpt_rowpar_bias(m, m->p[GPT_ATTPROJB] + l * C), nT, Cl, C);
    gpt_tp_sum(m, attproj, nTC);
    be->residual_forward(res2, res, attproj, nTC);
    be->layernorm_forward(ln2, l2m, l2r, res2, m->p[GPT_LN2W] + l * C, m->p[GPT_LN2B] + l * C, nT, C);
    gpt_pp_poll(m);
    gpt_forward_mm(m, fch, ln2, m->p[GPT_FCW] + (size_t)l * F * C, m->p[GPT_FCB] + l * F, nT, C, F);
    gpt_pp_poll(m);
    be->gelu_forward(fchg, fch, (size_t)nT * F);
    gpt_forward_mm(m, fcproj, fchg, m->p[GPT_FCPROJW] + (size_t)l * C * F,
                       gpt_rowpar_bias(m, m->p[GPT_FCPROJB] + l * C), nT, F, C);
    gpt_tp_sum(m, fcproj, nTC);
    be->residual_forward(res3, res2, fcproj, nTC);
    gpt_pp_poll(m);
}

/* collective over m->sh.tp_comm and m->sh.pp_comm
 * GPipe: every stage takes the microbatches in order; stage 0 embeds, the
 * others receive the previous stage's output rows (all receives posted up
 * front), every stage runs its layers and sends its output rows on without
 * waiting, so that it starts the next microbatch while the next stage works
 * on this one; the last stage applies lnf and the heads per microbatch.
 * With pp = 1 and one microbatch this is the unpipelined forward, op for op. */
static void gpt_forward_impl(GPT *m, const int *tokens, int B, int T, int want_logits, int want_values,
                             const int *pack_targets, int kv_slot);

void gpt_forward(GPT *m, const int *tokens, int B, int T, int want_logits, int want_values) {
    gpt_forward_impl(m, tokens, B, T, want_logits, want_values, NULL, -1);
}

static void gpt_pack_targets(GPT *m, const int *targets, int BT, int T);
static void gpt_prefill_fill_layer(GPT *m, int l, int r0, int n, int kv_slot);

/* the runs of consecutive log-prob positions with [rT, rT + nT) (a microbatch's): the first run's index
 * into m->pk_run and their count; their packed rows are consecutive, from the first run's */
static int gpt_pk_runs(const GPT *m, size_t rT, size_t nT, int *nrun) {
    int i0 = -1;
    *nrun = 0;
    for (int i = 0; i < m->pk_nrun; i++) {
        size_t pos = (size_t)m->pk_run[3 * i];
        if (pos < rT || pos >= rT + nT) continue;
        if (i0 < 0) i0 = i;
        (*nrun)++;
    }
    return i0;
}

/* the LM head of a microbatch's positions [rT, rT + nT) at its log-prob positions: their lnf rows packed into
 * lnf_pk, the logits into the packed rows of a->logits */
static void gpt_head_packed(GPT *m, size_t rT, size_t nT) {
    const Backend *be = m->be;
    size_t C = (size_t)m->cfg.C, V = (size_t)m->cfg.V;
    int nrun, i0 = gpt_pk_runs(m, rT, nT, &nrun);
    if (nrun == 0) return;
    size_t k0 = (size_t)m->pk_run[3 * i0 + 2], k = 0;
    for (int i = i0; i < i0 + nrun; i++) {
        const int *r = m->pk_run + 3 * i;
        be->copy(m->a.lnf_pk + (size_t)r[2] * C, m->a.lnf + (size_t)r[0] * C, (size_t)r[1] * C * sizeof(float));
        k += (size_t)r[1];
    }
    gpt_forward_mm(m, m->a.logits + k0 * V, m->a.lnf_pk + k0 * C, gpt_head(m), NULL, (int)k, (int)C, (int)V);
}

/* gpt_forward; pack_targets (host, (B, T), or NULL): the LM head at their target positions only
 * (gpt_forward_logprob); kv_slot >= 0: a prefill, each layer's keys and values into the cache from that slot on */
static void gpt_forward_impl(GPT *m, const int *tokens, int B, int T, int want_logits, int want_values,
                             const int *pack_targets, int kv_slot) {
    const Backend *be = m->be;
    const GPTConfig *c = &m->cfg;
    if (B > m->Bmax || T > m->Tmax || B < 1 || T < 1)
        nr_fatal("gpt_forward: batch (%d, %d) outside capacity (%d, %d)", B, T, m->Bmax, m->Tmax);
    if (want_values && !c->value_head) nr_fatal("gpt_forward: values asked of a model without a value head");
    int C = c->C, Ll = m->Ll, V = c->V, BT = B * T, llama = gpt_is_llama(c);
    size_t BTC = (size_t)BT * C;
    m->B = B;
    m->T = T;
    m->pk_on = pack_targets != NULL;
    if (m->pk_on) gpt_pack_targets(m, pack_targets, BT, T);
    int nmb = m->nmb = gpt_microbatches(m, B);
    be->upload(m->tokens, tokens, (size_t)BT * sizeof(int));
    GPTActs *a = &m->a;
    MPI_Request *rin = m->pp_req, *rout = m->pp_req ? m->pp_req + m->Bmax : NULL;
    float *out = a->residual3 + gpt_act_layer(m, Ll - 1) * BTC; /* this stage's output (B, T, C) */
    if (!m->first)
        for (int k = 0; k < nmb; k++) {
            int r0, n;
            gpt_mb_rows(B, nmb, k, &r0, &n);
            rin[k] = gpt_pp_irecv(m, a->encoded, (size_t)r0 * T * C, (size_t)n * T * C, m->sh.pp_rank - 1, k);
        }
    for (int k = 0; k < nmb; k++) {
        int r0, n;
        gpt_mb_rows(B, nmb, k, &r0, &n);
        size_t rC = (size_t)r0 * T * C, rT = (size_t)r0 * T, nT = (size_t)n * T;
        if (m->first) {
            /* the Llama family has no position embedding: it adds zeros (RoPE places the tokens) */
            be->encoder_forward(a->encoded + rC, m->tokens + rT, m->p[GPT_WTE], llama ? m->zero_pos : m->p[GPT_WPE],
                                n, T, C, 0);
        } else {
            comm_wait(&rin[k]);
            gpt_pp_recv_done(m, a->encoded, rC, nT * C);
        }
        if (m->sh.pp > 1) gpt_pp_watch(m, m->last ? NULL : rout, k, m->first ? NULL : rin, nmb);
        for (int l = 0; l < Ll; l++) {
            (llama ? llama_layer_forward : gpt_layer_forward)(m, l, r0, n);
            if (kv_slot >= 0) gpt_prefill_fill_layer(m, l, r0, n, kv_slot);
        }
        gpt_pp_watch(m, NULL, 0, NULL, 0);
        if (!m->last) {
            rout[k] = gpt_pp_isend(m, out, rC, nT * C, m->sh.pp_rank + 1, k);
            continue;
        }
        if (llama)
            llama_final_norm_forward(m, a->lnf + rC, a->lnf_rstd + rT, out + rC, (int)nT);
        else
            be->layernorm_forward(a->lnf + rC, a->lnf_mean + rT, a->lnf_rstd + rT, out + rC, m->p[GPT_LNFW],
                                  m->p[GPT_LNFB], (int)nT, C);
        if (want_logits && m->pk_on) gpt_head_packed(m, rT, nT);
        else if (want_logits) gpt_forward_mm(m, a->logits + rT * V, a->lnf + rC, gpt_head(m), NULL, (int)nT, C, V);
        if (want_values)
            gpt_forward_mm(m, a->values + rT, a->lnf + rC, m->p[GPT_VHW], m->p[GPT_VHB], (int)nT, C, 1);
    }
    if (!m->last) comm_waitall(nmb, rout);
    /* what the callers read, the same on every stage */
    if (want_values) gpt_pp_bcast(m, a->values, (size_t)BT);
}

/* local when pp = 1; collective over m->sh.pp_comm when pp > 1 */
void gpt_logprob(GPT *m, const int *targets, float *logp, float *ent) {
    const Backend *be = m->be;
    int BT = m->B * m->T;
    be->upload(m->targets, targets, (size_t)BT * sizeof(int));
    if (m->last)
        be->logprob_forward(m->a.logits, m->logp, m->ent, m->a.logits, m->targets, BT, gpt_real_vocab(&m->cfg),
                            m->cfg.V);
    gpt_pp_bcast(m, m->logp, (size_t)BT);
    gpt_pp_bcast(m, m->ent, (size_t)BT);
    if (logp) be->download(logp, m->logp, (size_t)BT * sizeof(float));
    if (ent) be->download(ent, m->ent, (size_t)BT * sizeof(float));
}

/* the runs of target positions of targets (BT, host) into m->pk_run, the packed targets into m->targets */
static void gpt_pack_targets(GPT *m, const int *targets, int BT, int T) {
    int *pk = (int *)m->pk_host, n = 0; /* the packed targets, staged in the host buffer (as wide as an int) */
    m->pk_nrun = 0;
    for (int t = 0; t < BT; t++) {
        if (targets[t] < 0) continue;
        int *r = m->pk_run + 3 * (m->pk_nrun - 1);
        if (m->pk_nrun > 0 && r[0] + r[1] == t && t % T != 0) r[1]++; /* extends the run within its row */
        else {
            r = m->pk_run + 3 * m->pk_nrun++;
            r[0] = t, r[1] = 1, r[2] = n;
        }
        pk[n++] = targets[t];
    }
    m->pk_n = n;
    m->be->upload(m->targets, pk, (size_t)n * sizeof(int));
}

/* a packed (pk_n) array into its dense (BT) places, 0 elsewhere (backend memory) */
static void gpt_unpack(GPT *m, float *dense, const float *packed, size_t BT) {
    m->be->zero(dense, BT * sizeof(float));
    for (int i = 0; i < m->pk_nrun; i++) {
        const int *r = m->pk_run + 3 * i;
        m->be->copy(dense + r[0], packed + r[2], (size_t)r[1] * sizeof(float));
    }
}

void gpt_forward_logprob(GPT *m, const int *tokens, const int *targets, int B, int T, float *logp, float *ent) {
    const Backend *be = m->be;
    size_t BT = (size_t)B * T;
    gpt_forward_impl(m, tokens, B, T, 1, 0, targets, -1);
    if (m->last) {
        if (m->pk_n > 0)
            be->logprob_forward(m->a.logits, m->logp_pk, m->ent_pk, m->a.logits, m->targets, m->pk_n,
                                gpt_real_vocab(&m->cfg), m->cfg.V);
        gpt_unpack(m, m->logp, m->logp_pk, BT);
        gpt_unpack(m, m->ent, m->ent_pk, BT);
    }
    gpt_pp_bcast(m, m->logp, BT);
    gpt_pp_bcast(m, m->ent, BT);
    if (logp) be->download(logp, m->logp, BT * sizeof(float));
    if (ent) be->download(ent, m->ent, BT * sizeof(float));
}

/* ---- backward ---------------------------------------------------------- */

/* host (BT) values at the packed positions into dst (pk_n, backend memory) */
static void gpt_pack_host(GPT *m, float *dst, const float *host) {
    for (int i = 0; i < m->pk_nrun; i++) {
        const int *r = m->pk_run + 3 * i;
        memcpy(m->pk_host + r[2], host + r[0], (size_t)r[1] * sizeof(float));
    }
    m->be->upload(dst, m->pk_host, (size_t)m->pk_n * sizeof(float));
}

/* the packed head's backward for a microbatch's positions [rT, rT + nT): its log-softmax and LM head over the
 * packed rows (dlogits over the packed logits), d lnf (s->dln as packed scratch) into the rows of dlnf (the
 * microbatch's, zero on entry) */
static void gpt_head_backward_packed(GPT *m, float *dlnf, size_t rT, size_t nT, int with_dent) {
    const Backend *be = m->be;
    size_t C = (size_t)m->cfg.C, V = (size_t)m->cfg.V;
    int nrun, i0 = gpt_pk_runs(m, rT, nT, &nrun);
    if (nrun == 0) return;
    size_t k0 = (size_t)m->pk_run[3 * i0 + 2], k = 0;
    for (int i = i0; i < i0 + nrun; i++) k += (size_t)m->pk_run[3 * i + 1];
    float *dlogits = m->s.dlogits + k0 * V, *dpk = m->s.dln + k0 * C;
    be->logprob_backward(dlogits, m->dlogp + k0, with_dent ? m->dent + k0 : NULL, m->a.logits + k0 * V,
                         m->ent_pk + k0, m->targets + k0, (int)k, gpt_real_vocab(&m->cfg), (int)V);
    be->zero(dpk, k * C * sizeof(float));
    be->matmul_backward(dpk, gpt_head_grad(m), NULL, dlogits, m->a.lnf_pk + k0 * C, gpt_head(m), (int)k, (int)C,
                        (int)V);
    for (int i = i0; i < i0 + nrun; i++) {
        const int *r = m->pk_run + 3 * i;
        be->copy(dlnf + ((size_t)r[0] - rT) * C, m->s.dln + (size_t)r[2] * C, (size_t)r[1] * C * sizeof(float));
    }
}

/* collective over m->sh.tp_comm: local layer l backward on rows [r0, r0 + n).
 * On entry the rows' slice of s->dresidual is d residual3[l], on return d of
 * the layer's input; the other scratch arrays are used from their start. */
static void gpt_layer_backward(GPT *m, int l, int r0, int n) {
    const Backend *be = m->be;
    int B = m->B, T = m->T, C = m->cfg.C, Cl = m->Cl, NH = m->NHl, F = 4 * m->Cl, BT = B * T, nT = n * T;
    size_t BTC = (size_t)BT * C, BTCl = (size_t)BT * Cl, BTF = (size_t)BT * F;
    size_t rC = (size_t)r0 * T * C, rCl = (size_t)r0 * T * Cl, rF = (size_t)r0 * T * F, rT = (size_t)r0 * T;
    size_t nTC = (size_t)nT * C, nTCl = (size_t)nT * Cl, nTF = (size_t)nT * F;
    GPTActs *a = &m->a;
    GPTGradScratch *s = &m->s;
    float *dres = s->dresidual + rC;
    float *res = (l == 0 ? a->encoded : a->residual3 + (size_t)(l - 1) * BTC) + rC;
    float *ln1 = a->ln1 + l * BTC + rC, *qkv = a->qkv + l * BTCl * 3 + 3 * rCl, *atty = a->atty + l * BTCl + rCl;
    size_t attsz = (size_t)B * NH * T * T;
    float *att = a->att + l * attsz + (size_t)r0 * NH * T * T;
    float *res2 = a->residual2 + l * BTC + rC;
    float *ln2 = a->ln2 + l * BTC + rC, *fch = a->fch + l * BTF + rF, *fchg = a->fch_gelu + l * BTF + rF;
    float *l1m = a->ln1_mean + (size_t)l * BT + rT, *l1r = a->ln1_rstd + (size_t)l * BT + rT;
    float *l2m = a->ln2_mean + (size_t)l * BT + rT, *l2r = a->ln2_rstd + (size_t)l * BT + rT;
    /* dres = d residual3[l]; residual3 = residual2 + fcproj. dres is the
     * same on every TP rank, so the replicated fcprojb gradient is too. */
    be->zero(s->dfch_gelu, nTF * sizeof(float));
    be->zero(s->dfch, nTF * sizeof(float));
    be->zero(s->dln, nTC * sizeof(float));
    be->matmul_backward(s->dfch_gelu, m->g[GPT_FCPROJW] + (size_t)l * C * F, m->g[GPT_FCPROJB] + l * C, dres, fchg,
                        m->p[GPT_FCPROJW] + (size_t)l * C * F, nT, F, C);
    gpt_pp_poll(m);
    be->gelu_backward(s->dfch, fch, s->dfch_gelu, nTF);
    be->matmul_backward(s->dln, m->g[GPT_FCW] + (size_t)l * F * C, m->g[GPT_FCB] + l * F, s->dfch, ln2,
                        m->p[GPT_FCW] + (size_t)l * F * C, nT, C, F);
    gpt_pp_poll(m);
    gpt_tp_sum(m, s->dln, nTC); /* this rank's MLP columns' share of d ln2 */
    be->layernorm_backward(dres, m->g[GPT_LN2W] + l * C, m->g[GPT_LN2B] + l * C, s->dln, res2, m->p[GPT_LN2W] + l * C,
                           l2m, l2r, nT, C);
    /* dres = d residual2[l]; residual2 = res + attproj */
    be->zero(s->datty, nTCl * sizeof(float));
    be->zero(s->dqkv, nTCl * 3 * sizeof(float));
    be->zero(s->dln, nTC * sizeof(float));
    be->matmul_backward(s->datty, m->g[GPT_ATTPROJW] + (size_t)l * C * Cl, m->g[GPT_ATTPROJB] + l * C, dres, atty,
                        m->p[GPT_ATTPROJW] + (size_t)l * C * Cl, nT, Cl, C);
    gpt_pp_poll(m);
    be->attention_backward(s->dqkv, s->dpreatt, s->datt, s->datty, qkv, att, n, T, Cl, NH, NH);
    gpt_pp_poll(m);
    be->matmul_backward(s->dln, m->g[GPT_QKVW] + (size_t)l * 3 * Cl * C, m->g[GPT_QKVB] + l * 3 * Cl, s->dqkv, ln1,
                        m->p[GPT_QKVW] + (size_t)l * 3 * Cl * C, nT, C, 3 * Cl);
    gpt_pp_poll(m);
    /* The key bias shifts every score of a softmax row by the same q·b, so
     * its gradient is exactly zero; what the sum leaves is rounding noise,
     * which AdamW (g/√v) would blow up into ±lr steps that depend on the
     * summation order, i.e. on the plan. Keep it exactly zero. */
    be->zero(m->g[GPT_QKVB] + l * 3 * Cl + Cl, Cl * sizeof(float));
    gpt_tp_sum(m, s->dln, nTC); /* this rank's heads' share of d ln1 */
    be->layernorm_backward(dres, m->g[GPT_LN1W] + l * C, m->g[GPT_LN1B] + l * C, s->dln, res, m->p[GPT_LN1W] + l * C,
                           l1m, l1r, nT, C);
    /* dres = d res (the input of layer l) */
}

/* collective over m->sh.tp_comm, m->sh.pp_comm and m->sh.embd_comm
 * GPipe backward, microbatches in order: the last stage starts each from the
 * heads, the others receive the gradient of their output rows from the next
 * stage (receives posted up front); every stage runs its layers backward and
 * sends the gradient of its input rows to the previous stage without
 * waiting. Each microbatch's rows keep their own slice of s->dresidual, so
 * in-flight sends never share a buffer and, on the first stage, the slices
 * add up to d encoded for one whole-batch embedding backward. */
void gpt_backward(GPT *m, const float *dlogp, const float *dent, const float *dvalues) {
    if (!m->trainable) nr_fatal("gpt_backward on a frozen model");
    const Backend *be = m->be;
    const GPTConfig *c = &m->cfg;
    int B = m->B, T = m->T, C = c->C, Ll = m->Ll, V = c->V, BT = B * T, nmb = m->nmb, llama = gpt_is_llama(c);
    size_t BTC = (size_t)BT * C;
    GPTActs *a = &m->a;
    GPTGradScratch *s = &m->s;
    float *out = a->residual3 + (size_t)(Ll - 1) * BTC; /* this stage's output (B, T, C) */
    float *dlnf = s->dtmp;
    MPI_Request *rin = m->pp_req, *rout = m->pp_req ? m->pp_req + m->Bmax : NULL;
    if (m->last) {
        if (dlogp && m->pk_on) { /* the packed head: dlogp and dent at its positions */
            gpt_pack_host(m, m->dlogp, dlogp);
            if (dent) gpt_pack_host(m, m->dent, dent);
        } else if (dlogp) {
            be->upload(m->dlogp, dlogp, (size_t)BT * sizeof(float));
            if (dent) be->upload(m->dent, dent, (size_t)BT * sizeof(float));
        }
        if (dvalues) be->upload(s->dvalues, dvalues, (size_t)BT * sizeof(float));
        /* The last stage's wte copy restarts from zero: the first stage's copy
         * holds the gradient accumulated so far (the two are equal between
         * calls), so the sum over embd_comm below adds this call's LM-head
         * share to it exactly once. */
        if (gpt_pp_tied(m)) be->zero(m->g[GPT_WTE], m->tensors[GPT_WTE].lnumel * sizeof(float));
    } else {
        for (int k = 0; k < nmb; k++) {
            int r0, n;
            gpt_mb_rows(B, nmb, k, &r0, &n);
            rin[k] = gpt_pp_irecv(m, s->dresidual, (size_t)r0 * T * C, (size_t)n * T * C, m->sh.pp_rank + 1, k);
        }
    }
    for (int k = 0; k < nmb; k++) {
        int r0, n;
        gpt_mb_rows(B, nmb, k, &r0, &n);
        size_t rC = (size_t)r0 * T * C, rT = (size_t)r0 * T, nT = (size_t)n * T;
        if (m->last) {
            be->zero(dlnf, nT * C * sizeof(float));
            if (dlogp && m->pk_on) {
                gpt_head_backward_packed(m, dlnf, rT, nT, dent != NULL);
            } else if (dlogp) {
                be->logprob_backward(s->dlogits + rT * V, m->dlogp + rT, dent ? m->dent + rT : NULL,
                                     a->logits + rT * V, m->ent + rT, m->targets + rT, (int)nT,
                                     gpt_real_vocab(c), V);
                be->matmul_backward(dlnf, gpt_head_grad(m), NULL, s->dlogits + rT * V, a->lnf + rC, gpt_head(m),
                                    (int)nT, C, V);
            }
            if (dvalues)
                be->matmul_backward(dlnf, m->g[GPT_VHW], m->g[GPT_VHB], s->dvalues + rT, a->lnf + rC, m->p[GPT_VHW],
                                    (int)nT, C, 1);
            be->zero(s->dresidual + rC, nT * C * sizeof(float));
            if (llama)
                llama_final_norm_backward(m, s->dresidual + rC, dlnf, out + rC, a->lnf_rstd + rT, (int)nT);
            else
                be->layernorm_backward(s->dresidual + rC, m->g[GPT_LNFW], m->g[GPT_LNFB], dlnf, out + rC,
                                       m->p[GPT_LNFW], a->lnf_mean + rT, a->lnf_rstd + rT, (int)nT, C);
        } else {
            comm_wait(&rin[k]);
            gpt_pp_recv_done(m, s->dresidual, rC, nT * C);
        }
        if (m->sh.pp > 1) gpt_pp_watch(m, m->first ? NULL : rout, k, m->last ? NULL : rin, nmb);
        for (int l = Ll - 1; l >= 0; l--) (llama ? llama_layer_backward : gpt_layer_backward)(m, l, r0, n);
        gpt_pp_watch(m, NULL, 0, NULL, 0);
        if (!m->first) rout[k] = gpt_pp_isend(m, s->dresidual, rC, nT * C, m->sh.pp_rank - 1, k);
    }
    if (!m->first) comm_waitall(nmb, rout);
    if (m->first) /* the Llama family: no position embedding (its role 1 is ln1w) */
        be->encoder_backward(m->g[GPT_WTE], llama ? NULL : m->g[GPT_WPE], s->dresidual, m->tokens, B, T, C, 0);
    /* tied embeddings: the embedding's and the LM head's shares of wte's
     * gradient, summed on both copies */
    if (gpt_pp_tied(m) && (m->first || m->last)) {
        size_t n = m->tensors[GPT_WTE].lnumel;
        float *g = m->g[GPT_WTE];
        comm_allreduce_sum_f32(m->sh.embd_comm, g, n); /* device memory: NCCL or through host memory (comm.h) */
    }
}

void gpt_zero_grad(GPT *m) {
    if (m->grads) m->be->zero(m->grads, m->nparams * sizeof(float));
}

/* collective over m->sh.tp_comm and m->sh.pp_comm */
float gpt_update(GPT *m, float lr, float beta1, float beta2, float eps, float wd, float max_norm) {
    const Backend *be = m->be;
    double norm;
    if (m->sh.tp == 1 && m->sh.pp == 1) {
        norm = sqrt(be->sumsq(m->grads, m->nparams));
    } else {
        /* the logical norm: cut tensors summed over the TP group, replicated ones
         * (the same on every TP rank) once; [0] cut, [1] replicated; then the
         * stages summed, wte from the first stage only (the last stage's copy
         * is equal) */
        double ss[2] = {0.0, 0.0};
        for (int i = 0; i < m->ntensors; i++) {
            const TensorInfo *t = &m->tensors[i];
            if (!t->held || (i == GPT_WTE && !m->first)) continue;
            ss[t->cut_axis < 0] += be->sumsq(m->grads + t->offset, t->lnumel);
        }
        if (m->sh.tp > 1) comm_allreduce_sum_f64(m->sh.tp_comm, ss, 1);
        double st = ss[0] + ss[1];
        if (m->sh.pp > 1) comm_allreduce_sum_f64(m->sh.pp_comm, &st, 1);
        norm = sqrt(st);
    }
    float gscale = (max_norm > 0.0f && norm > (double)max_norm) ? (float)(max_norm / norm) : 1.0f;
    m->adam_t++;
    be->adamw_update(m->params, m->grads, m->m, m->v, m->nparams, lr, beta1, beta2, eps, wd, gscale, m->adam_t);
    return (float)norm;
}

/* ---- KV-cached decoding -------------------------------------------------- */

/* floats of one layer of the cache: (Bmax, NHl, Tmax, hs) */
static size_t gpt_kv_layer(const GPT *m) {
    return (size_t)m->Bmax * (size_t)m->NKVl * (size_t)m->Tmax * (size_t)m->hs;
}

/* during a prefill: layer l's keys and values of rows [r0, r0 + n) into the cache, row 0 at slot kv_slot */
static void gpt_prefill_fill_layer(GPT *m, int l, int r0, int n, int kv_slot) {
    size_t slot = (size_t)m->NKVl * m->Tmax * m->hs; /* one sequence's cache in a layer */
    size_t at = (size_t)l * gpt_kv_layer(m) + ((size_t)kv_slot + (size_t)r0) * slot;
    const float *qkv = m->a.qkv + (gpt_act_layer(m, l) * m->B + (size_t)r0) * m->T * m->C3;
    m->be->kv_fill(m->kcache + at, m->vcache + at, qkv, n, m->T, m->Tmax, m->Cl, m->NHl, m->NKVl);
}

/* collective over m->sh.tp_comm */
void gpt_prefill(GPT *m, const int *tokens, int B, int P, float *logits_out) {
    const Backend *be = m->be;
    const GPTConfig *c = &m->cfg;
    if (m->sh.pp > 1) nr_fatal("gpt_prefill: pipelined generation is not supported; give actor.gen pp = 1");
    gpt_forward_impl(m, tokens, B, P, 0, 0, NULL, 0);
    gpt_logits_last(m, B, P);
    if (logits_out) be->download(logits_out, m->d_logits, (size_t)B * c->V * sizeof(float));
}

/* d_logits (B, V), its real-vocabulary columns, from the final-norm rows d_ln (B, C): the LM head as a
   decode GEMM (padding columns are not computed) */
static void gpt_head_decode(GPT *m, int B) {
    gpt_decode_mm(m, m->d_logits, m->d_ln, gpt_head(m), NULL, B, m->cfg.C, gpt_real_vocab(&m->cfg), m->cfg.V);
}

void gpt_gen_bf16(GPT *m, int on) {
    if (on && !m->wbf16 && m->be->matmul_decode_bf16) m->wbf16 = m->be->alloc(m->nparams * sizeof(uint16_t));
    if (!on && m->wbf16) m->be->free(m->wbf16), m->wbf16 = NULL;
    gpt_bf16_refresh(m);
}

void gpt_bf16_refresh(GPT *m) {
    if (m->wbf16) m->be->to_bf16(m->wbf16, m->params, m->nparams);
}

void gpt_decode_mm(GPT *m, float *out, const float *in, const float *w, const float *bias, int n, int IC, int OC,
                   int ldo) {
    if (m->wbf16) m->be->matmul_decode_bf16(out, in, m->wbf16 + (w - m->params), bias, n, IC, OC, ldo);
    else m->be->matmul_decode(out, in, w, bias, n, IC, OC, ldo);
}

void gpt_forward_mm(GPT *m, float *out, const float *in, const float *w, const float *bias, int n, int IC, int OC) {
    if (m->wbf16) m->be->matmul_decode_bf16(out, in, m->wbf16 + (w - m->params), bias, n, IC, OC, OC);
    else m->be->matmul_forward(out, in, w, bias, n, IC, OC);
}

/* collective over m->sh.tp_comm */
void gpt_prefill_rows(GPT *m, const int *tokens, int ld, const int *len, int B, float *logits_out) {
    const Backend *be = m->be;
    const GPTConfig *c = &m->cfg;
    int C = c->C;
    if (m->sh.pp > 1) nr_fatal("gpt_prefill: pipelined generation is not supported; give actor.gen pp = 1");
    if (B > m->Bmax) nr_fatal("gpt_prefill_rows: %d rows beyond capacity %d", B, m->Bmax);
    for (int b = 0; b < B; b++) {
        int P = len[b];
        if (P < 1 || P > m->Tmax) nr_fatal("gpt_prefill_rows: row %d's %d tokens outside [1, %d]", b, P, m->Tmax);
        gpt_forward_impl(m, tokens + (size_t)b * ld, 1, P, 0, 0, NULL, b);
        be->copy(m->d_ln + (size_t)b * C, m->a.lnf + (size_t)(P - 1) * C, (size_t)C * sizeof(float));
    }
    gpt_head_decode(m, B);
    if (logits_out) be->download(logits_out, m->d_logits, (size_t)B * c->V * sizeof(float));
}

void gpt_logits_last(GPT *m, int B, int T) {
    const Backend *be = m->be;
    int C = m->cfg.C;
    /* (B, C) rows of lnf at position T−1 → (B, V) through the LM head */
    for (int b = 0; b < B; b++)
        be->copy(m->d_ln + (size_t)b * C, m->a.lnf + ((size_t)b * T + T - 1) * C, (size_t)C * sizeof(float));
    gpt_head_decode(m, B);
}

/* GPT-2's layers and final LayerNorm for the n rows in d_x, the cache read and written at the rows' slots */
static void gpt2_decode_layers(GPT *m, int n, int pos) {
    const Backend *be = m->be;
    const GPTConfig *c = &m->cfg;
    int C = c->C, Cl = m->Cl, NH = m->NHl, F = 4 * m->Cl;
    size_t nC = (size_t)n * C;
    for (int l = 0; l < c->L; l++) {
        be->layernorm_forward(m->d_ln, m->d_mean, m->d_rstd, m->d_x, m->p[GPT_LN1W] + l * C,
                              m->p[GPT_LN1B] + l * C, n, C);
        gpt_decode_mm(m, m->d_qkv, m->d_ln, m->p[GPT_QKVW] + (size_t)l * 3 * Cl * C, m->p[GPT_QKVB] + l * 3 * Cl,
                          n, C, 3 * Cl, 3 * Cl);
        be->attention_decode(m->d_atty, m->kcache + l * gpt_kv_layer(m), m->vcache + l * gpt_kv_layer(m),
                             m->d_qkv, m->dec_slots, m->dec_pos, n, pos, m->Tmax, Cl, NH, NH);
        gpt_decode_mm(m, m->d_tmp, m->d_atty, m->p[GPT_ATTPROJW] + (size_t)l * C * Cl,
                          gpt_rowpar_bias(m, m->p[GPT_ATTPROJB] + l * C), n, Cl, C, C);
        gpt_tp_sum(m, m->d_tmp, nC);
        be->residual_forward(m->d_x, m->d_x, m->d_tmp, nC);
        be->layernorm_forward(m->d_ln, m->d_mean, m->d_rstd, m->d_x, m->p[GPT_LN2W] + l * C,
                              m->p[GPT_LN2B] + l * C, n, C);
        gpt_decode_mm(m, m->d_fch, m->d_ln, m->p[GPT_FCW] + (size_t)l * F * C, m->p[GPT_FCB] + l * F, n, C, F, F);
        be->gelu_forward(m->d_fchg, m->d_fch, (size_t)n * F);
        gpt_decode_mm(m, m->d_tmp, m->d_fchg, m->p[GPT_FCPROJW] + (size_t)l * C * F,
                          gpt_rowpar_bias(m, m->p[GPT_FCPROJB] + l * C), n, F, C, C);
        gpt_tp_sum(m, m->d_tmp, nC);
        be->residual_forward(m->d_x, m->d_x, m->d_tmp, nC);
    }
    be->layernorm_forward(m->d_ln, m->d_mean, m->d_rstd, m->d_x, m->p[GPT_LNFW], m->p[GPT_LNFB], n, C);
}

/* collective over m->sh.tp_comm */
void gpt_decode(GPT *m, const int *tok, int B, int pos, float *logits_out) {
    gpt_decode_rows(m, tok, NULL, B, pos, logits_out);
}

/* The slots of a decode's rows live in the token buffer past its first Bmax entries (decode uses the first
   n for its tokens; rows with slots need Tmax ≥ 2): no allocation of its own. */
static int *gpt_slot_buffer(GPT *m) { return m->tokens + m->Bmax; }

/* The positions of a decode's rows, past the slots in the token buffer (rows with positions need Tmax ≥ 3) */
static int *gpt_pos_buffer(GPT *m) { return m->tokens + 2 * (size_t)m->Bmax; }

/* the decode's embeddings (n, C) into d_x: every row at pos, or row i at dec_pos_host[i] */
void gpt_decode_embed(GPT *m, const float *wte, const float *wpe, int n, int pos) {
    const Backend *be = m->be;
    int C = m->cfg.C;
    if (!m->dec_pos_host) {
        be->encoder_forward(m->d_x, m->tokens, wte, wpe, n, 1, C, pos);
        return;
    }
    for (int i = 0; i < n; i++)
        be->encoder_forward(m->d_x + (size_t)i * C, m->tokens + i, wte, wpe, 1, 1, C, m->dec_pos_host[i]);
}

/* collective over m->sh.tp_comm: n rows at their slots; pos the largest position, rowpos each row's (or NULL) */
static void gpt_decode_impl(GPT *m, const int *tok, const int *slots, const int *rowpos, int n, int pos,
                            float *logits_out) {
    const Backend *be = m->be;
    const GPTConfig *c = &m->cfg;
    if (m->sh.pp > 1) nr_fatal("gpt_decode: pipelined generation is not supported; give actor.gen pp = 1");
    if (pos >= m->Tmax || n > m->Bmax || n < 1 || (slots && m->Tmax < 2) || (rowpos && m->Tmax < 3))
        nr_fatal("gpt_decode: position %d or %d rows beyond capacity (%d, %d)", pos, n, m->Tmax, m->Bmax);
    m->dec_slots = NULL;
    if (slots) {
        for (int i = 0; i < n; i++)
            if (slots[i] < 0 || slots[i] >= m->Bmax || (i > 0 && slots[i] <= slots[i - 1]))
                nr_fatal("gpt_decode: row %d's cache slot %d is outside [0, %d) or not increasing", i, slots[i],
                         m->Bmax);
        be->upload(gpt_slot_buffer(m), slots, (size_t)n * sizeof(int));
        m->dec_slots = gpt_slot_buffer(m);
    }
    m->dec_pos = m->dec_pos_host = NULL;
    if (rowpos) {
        be->upload(gpt_pos_buffer(m), rowpos, (size_t)n * sizeof(int));
        m->dec_pos = gpt_pos_buffer(m);
        m->dec_pos_host = rowpos;
    }
    be->upload(m->tokens, tok, (size_t)n * sizeof(int));
    if (gpt_is_llama(c)) {
        llama_decode(m, n, pos);
    } else {
        gpt_decode_embed(m, m->p[GPT_WTE], m->p[GPT_WPE], n, pos);
        gpt2_decode_layers(m, n, pos);
        gpt_head_decode(m, n);
    }
    m->dec_slots = m->dec_pos = m->dec_pos_host = NULL;
    if (logits_out) be->download(logits_out, m->d_logits, (size_t)n * c->V * sizeof(float));
}

/* collective over m->sh.tp_comm */
void gpt_decode_rows(GPT *m, const int *tok, const int *slots, int n, int pos, float *logits_out) {
    gpt_decode_impl(m, tok, slots, NULL, n, pos, logits_out);
}

/* collective over m->sh.tp_comm */
void gpt_decode_at(GPT *m, const int *tok, const int *slots, const int *pos, int n, float *logits_out) {
    int maxpos = 0;
    for (int i = 0; i < n; i++) {
        if (pos[i] < 0) nr_fatal("gpt_decode_at: row %d at position %d", i, pos[i]);
        maxpos = NR_MAX(maxpos, pos[i]);
    }
    gpt_decode_impl(m, tok, slots, pos, n, maxpos, logits_out);
}

/* ---- accounting ---------------------------------------------------------- */

double gpt_flops_per_token_fwd(const GPTConfig *c, int T) {
    if (gpt_is_llama(c)) return llama_flops_per_token_fwd(c, T);

    double C = c->C, L = c->L, V = c->V;
    double dense = 2.0 * L * (3 * C * C + C * C + 4 * C * C + 4 * C * C) + 2.0 * C * (c->value_head ? 1 : V);
    /* causal attention: a token at position t attends over t+1 keys; mean (T+1)/2;
     * QK^T and AV each 2·C flops per key */
    double attn = L * 4.0 * C * (T + 1) / 2.0;
    return dense + attn;
}

int gpt_swap_state(GPT *a, GPT *b, int adam) {
    if (memcmp(&a->cfg, &b->cfg, sizeof a->cfg) != 0 || a->sh.tp != b->sh.tp || a->sh.tp_rank != b->sh.tp_rank ||
        a->sh.pp != b->sh.pp || a->sh.pp_rank != b->sh.pp_rank || a->nparams != b->nparams ||
        (adam && (!a->m || !a->v || !a->trainable || !b->trainable)))
        return -1;
    float *t = a->params;
    a->params = b->params;
    b->params = t;
    if (adam) {
        t = a->m; a->m = b->m; b->m = t;
        t = a->v; a->v = b->v; b->v = t;
    }
    point_params(a);
    point_params(b);
    return 0;
}
