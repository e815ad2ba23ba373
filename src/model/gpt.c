/* gpt.c — GPT-2 over the Backend: one flat parameter buffer over the tensor
 * table (shard.c), forward, backward (layer by layer through one layer of
 * scratch), AdamW with gradient-norm clipping, and KV-cached decoding, each
 * on this rank's TP shard with the Megatron sums over the TP group (two in
 * forward, two in backward per layer). Shapes, the cuts and the init rule
 * are in model.h; the op contracts are in backend.h. All pointers in this
 * file's public functions are host pointers; buffers inside the struct live
 * in backend memory. */
#include "nereus/model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/comm.h"
#include "nereus/util.h"

/* collective over m->sh.tp_comm (no-op when tp = 1): buf (n floats, backend
 * memory) becomes its sum over the TP group. Host-memory backends reduce in
 * place; others go through the host staging buffer. */
static void gpt_tp_sum(GPT *m, float *buf, size_t n) {
    if (m->sh.tp == 1) return;
    if (m->tp_host) {
        m->be->download(m->tp_host, buf, n * sizeof(float));
        comm_allreduce_sum_f32(m->sh.tp_comm, m->tp_host, n);
        m->be->upload(buf, m->tp_host, n * sizeof(float));
    } else {
        comm_allreduce_sum_f32(m->sh.tp_comm, buf, n);
    }
}

/* The replicated bias of a row-parallel matmul (attproj, fcproj) enters the
 * TP sum once: TP rank 0 adds it, the others pass none. */
static const float *gpt_rowpar_bias(const GPT *m, const float *bias) {
    return m->sh.tp_rank == 0 ? bias : NULL;
}

/* Bump allocator over one backend allocation: carve named arrays. */
typedef struct Carve { float *base; size_t used; } Carve;
static float *carve(Carve *cv, size_t n) {
    float *p = cv->base ? cv->base + cv->used : NULL;
    cv->used += (n + 15) & ~(size_t)15;
    return p;
}

static size_t gpt_carve_acts(GPT *m, Carve *cv) {
    const GPTConfig *c = &m->cfg;
    size_t B = (size_t)m->Bmax, T = (size_t)m->Tmax, L = (size_t)c->L, C = (size_t)c->C;
    size_t Cl = (size_t)m->Cl, NH = (size_t)m->NHl, V = (size_t)c->V, BT = B * T;
    GPTActs *a = &m->a;
    a->encoded = carve(cv, BT * C);
    a->ln1 = carve(cv, L * BT * C);
    a->ln1_mean = carve(cv, L * BT);
    a->ln1_rstd = carve(cv, L * BT);
    a->qkv = carve(cv, L * BT * 3 * Cl);
    a->atty = carve(cv, L * BT * Cl);
    a->preatt = carve(cv, L * B * NH * T * T);
    a->att = carve(cv, L * B * NH * T * T);
    a->attproj = carve(cv, L * BT * C);
    a->residual2 = carve(cv, L * BT * C);
    a->ln2 = carve(cv, L * BT * C);
    a->ln2_mean = carve(cv, L * BT);
    a->ln2_rstd = carve(cv, L * BT);
    a->fch = carve(cv, L * BT * 4 * Cl);
    a->fch_gelu = carve(cv, L * BT * 4 * Cl);
    a->fcproj = carve(cv, L * BT * C);
    a->residual3 = carve(cv, L * BT * C);
    a->lnf = carve(cv, BT * C);
    a->lnf_mean = carve(cv, BT);
    a->lnf_rstd = carve(cv, BT);
    a->logits = carve(cv, BT * V);
    a->values = carve(cv, BT);
    return cv->used;
}

static size_t gpt_carve_scratch(GPT *m, Carve *cv) {
    const GPTConfig *c = &m->cfg;
    size_t B = (size_t)m->Bmax, T = (size_t)m->Tmax, C = (size_t)c->C, NH = (size_t)m->NHl;
    size_t Cl = (size_t)m->Cl, BT = B * T;
    GPTGradScratch *s = &m->s;
    s->dresidual = carve(cv, BT * C);
    s->dln = carve(cv, BT * C);
    s->dqkv = carve(cv, BT * 3 * Cl);
    s->datty = carve(cv, BT * Cl);
    s->dpreatt = carve(cv, B * NH * T * T);
    s->datt = carve(cv, B * NH * T * T);
    s->dfch = carve(cv, BT * 4 * Cl);
    s->dfch_gelu = carve(cv, BT * 4 * Cl);
    s->dtmp = carve(cv, BT * C);
    s->dvalues = carve(cv, BT);
    return cv->used;
}

/* decode buffers and the small per-call buffers behind the host-facing API */
static size_t gpt_carve_decode(GPT *m, Carve *cv) {
    size_t B = (size_t)m->Bmax, C = (size_t)m->cfg.C, Cl = (size_t)m->Cl, V = (size_t)m->cfg.V;
    size_t BT = B * (size_t)m->Tmax;
    m->d_x = carve(cv, B * C);
    m->d_ln = carve(cv, B * C);
    m->d_qkv = carve(cv, B * 3 * Cl);
    m->d_atty = carve(cv, B * Cl);
    m->d_tmp = carve(cv, B * C);
    m->d_fch = carve(cv, B * 4 * Cl);
    m->d_fchg = carve(cv, B * 4 * Cl);
    m->d_logits = carve(cv, B * V);
    m->d_mean = carve(cv, B);
    m->d_rstd = carve(cv, B);
    m->logp = carve(cv, BT);
    m->ent = carve(cv, BT);
    m->dlogp = carve(cv, BT);
    m->dent = carve(cv, BT);
    return cv->used;
}

static void gpt_init_params(GPT *m, uint64_t seed, float std) {
    const GPTConfig *c = &m->cfg;
    float *host = nr_xcalloc(m->nparams, sizeof(float));
    float resid_std = std / sqrtf(2.0f * (float)c->L);
    for (int i = 0; i < m->ntensors; i++) {
        TensorInfo *t = &m->tensors[i];
        float *p = host + t->offset;
        int is_weight = i == GPT_WTE || i == GPT_WPE || i == GPT_QKVW || i == GPT_ATTPROJW ||
                        i == GPT_FCW || i == GPT_FCPROJW;
        int is_gain = i == GPT_LN1W || i == GPT_LN2W || i == GPT_LNFW;
        float s = (i == GPT_ATTPROJW || i == GPT_FCPROJW) ? resid_std : std;
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
    GPTShard whole = {1, 0, MPI_COMM_NULL};
    gpt_build_shard(m, cfg, &whole, be, Bmax, Tmax, trainable, seed, init_std);
}

void gpt_build_shard(GPT *m, const GPTConfig *cfg, const GPTShard *sh, const Backend *be, int Bmax, int Tmax,
                     int trainable, uint64_t seed, float init_std) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->be = be;
    m->trainable = trainable;
    m->Bmax = Bmax;
    m->Tmax = Tmax;
    if (Tmax > cfg->maxT) nr_fatal("gpt_build: Tmax %d exceeds the model's %d positions", Tmax, cfg->maxT);
    if (cfg->C % cfg->NH != 0) nr_fatal("gpt_build: n_head %d does not divide n_embd %d", cfg->NH, cfg->C);
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
    m->Cl = cfg->C / sh->tp;
    m->NHl = cfg->NH / sh->tp;
    m->nparams = gpt_tensor_table(cfg, m->sh.tp, m->sh.tp_rank, m->tensors, &m->ntensors);
    size_t pb = m->nparams * sizeof(float);
    m->params = be->alloc(pb);
    if (trainable) {
        m->grads = be->alloc(pb);
        m->m = be->alloc(pb);
        m->v = be->alloc(pb);
    }
    for (int i = 0; i < m->ntensors; i++) {
        m->p[i] = m->params + m->tensors[i].offset;
        m->g[i] = trainable ? m->grads + m->tensors[i].offset : NULL;
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
    size_t hs = (size_t)(cfg->C / cfg->NH);
    size_t kv = (size_t)cfg->L * (size_t)Bmax * (size_t)m->NHl * (size_t)Tmax * hs;
    m->kcache = be->alloc(kv * sizeof(float));
    m->vcache = be->alloc(kv * sizeof(float));
    cv = (Carve){NULL, 0};
    size_t nd = gpt_carve_decode(m, &cv);
    m->decode_mem = be->alloc(nd * sizeof(float));
    cv = (Carve){m->decode_mem, 0};
    gpt_carve_decode(m, &cv);
    m->tokens = be->alloc((size_t)Bmax * (size_t)Tmax * sizeof(int));
    m->targets = be->alloc((size_t)Bmax * (size_t)Tmax * sizeof(int));
    if (m->sh.tp > 1 && strcmp(be->name, "cpu") != 0)
        m->tp_host = nr_xmalloc((size_t)Bmax * (size_t)Tmax * (size_t)cfg->C * sizeof(float));
    gpt_init_params(m, seed, init_std);
}

void gpt_free(GPT *m) {
    const Backend *be = m->be;
    if (!be) return;
    be->free(m->params);
    be->free(m->grads);
    be->free(m->m);
    be->free(m->v);
    be->free(m->acts_mem);
    be->free(m->scratch_mem);
    be->free(m->kcache);
    be->free(m->vcache);
    be->free(m->decode_mem);
    be->free(m->tokens);
    be->free(m->targets);
    free(m->tp_host);
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
        if (d->cut_axis != s->cut_axis || d->cut_start != s->cut_start ||
            memcmp(d->lshape, s->lshape, sizeof d->lshape) != 0)
            nr_fatal("gpt_copy_params: tensor %s is cut differently in the two models", d->name);
        dst->be->copy(dst->p[i], src->p[i], d->lnumel * sizeof(float));
    }
}

/* ---- forward ----------------------------------------------------------- */

/* collective over m->sh.tp_comm */
void gpt_forward(GPT *m, const int *tokens, int B, int T, int want_logits, int want_values) {
    const Backend *be = m->be;
    const GPTConfig *c = &m->cfg;
    if (B > m->Bmax || T > m->Tmax || B < 1 || T < 1)
        nr_fatal("gpt_forward: batch (%d, %d) outside capacity (%d, %d)", B, T, m->Bmax, m->Tmax);
    if (want_values && !c->value_head) nr_fatal("gpt_forward: values asked of a model without a value head");
    /* Cl, NH: this rank's attention width and heads; F: its MLP columns */
    int C = c->C, Cl = m->Cl, NH = m->NHl, F = 4 * m->Cl, L = c->L, V = c->V, BT = B * T;
    size_t BTC = (size_t)BT * C, BTCl = (size_t)BT * Cl;
    m->B = B;
    m->T = T;
    be->upload(m->tokens, tokens, (size_t)BT * sizeof(int));
    GPTActs *a = &m->a;
    be->encoder_forward(a->encoded, m->tokens, m->p[GPT_WTE], m->p[GPT_WPE], B, T, C, 0);
    for (int l = 0; l < L; l++) {
        float *res = l == 0 ? a->encoded : a->residual3 + (size_t)(l - 1) * BTC;
        float *ln1 = a->ln1 + l * BTC, *qkv = a->qkv + l * BTCl * 3, *atty = a->atty + l * BTCl;
        size_t attsz = (size_t)B * NH * T * T;
        float *preatt = a->preatt + l * attsz, *att = a->att + l * attsz;
        float *attproj = a->attproj + l * BTC, *res2 = a->residual2 + l * BTC;
        float *ln2 = a->ln2 + l * BTC, *fch = a->fch + (size_t)l * BT * F, *fchg = a->fch_gelu + (size_t)l * BT * F;
        float *fcproj = a->fcproj + l * BTC, *res3 = a->residual3 + l * BTC;
        float *l1m = a->ln1_mean + (size_t)l * BT, *l1r = a->ln1_rstd + (size_t)l * BT;
        float *l2m = a->ln2_mean + (size_t)l * BT, *l2r = a->ln2_rstd + (size_t)l * BT;
        be->layernorm_forward(ln1, l1m, l1r, res, m->p[GPT_LN1W] + l * C, m->p[GPT_LN1B] + l * C, BT, C);
        /* column-parallel: this rank's heads of q, k, v */
        be->matmul_forward(qkv, ln1, m->p[GPT_QKVW] + (size_t)l * 3 * Cl * C, m->p[GPT_QKVB] + l * 3 * Cl,
                           BT, C, 3 * Cl);
        be->attention_forward(atty, preatt, att, qkv, B, T, Cl, NH);
        /* row-parallel: partial sums over this rank's heads, then the TP sum */
        be->matmul_forward(attproj, atty, m->p[GPT_ATTPROJW] + (size_t)l * C * Cl,
                           gpt_rowpar_bias(m, m->p[GPT_ATTPROJB] + l * C), BT, Cl, C);
        gpt_tp_sum(m, attproj, BTC);
        be->residual_forward(res2, res, attproj, BTC);
        be->layernorm_forward(ln2, l2m, l2r, res2, m->p[GPT_LN2W] + l * C, m->p[GPT_LN2B] + l * C, BT, C);
        be->matmul_forward(fch, ln2, m->p[GPT_FCW] + (size_t)l * F * C, m->p[GPT_FCB] + l * F, BT, C, F);
        be->gelu_forward(fchg, fch, (size_t)BT * F);
        be->matmul_forward(fcproj, fchg, m->p[GPT_FCPROJW] + (size_t)l * C * F,
                           gpt_rowpar_bias(m, m->p[GPT_FCPROJB] + l * C), BT, F, C);
        gpt_tp_sum(m, fcproj, BTC);
        be->residual_forward(res3, res2, fcproj, BTC);
    }
    be->layernorm_forward(a->lnf, a->lnf_mean, a->lnf_rstd, a->residual3 + (size_t)(L - 1) * BTC,
                          m->p[GPT_LNFW], m->p[GPT_LNFB], BT, C);
    if (want_logits) be->matmul_forward(a->logits, a->lnf, m->p[GPT_WTE], NULL, BT, C, V);
    if (want_values) be->matmul_forward(a->values, a->lnf, m->p[GPT_VHW], m->p[GPT_VHB], BT, C, 1);
}

void gpt_logprob(GPT *m, const int *targets, float *logp, float *ent) {
    const Backend *be = m->be;
    int BT = m->B * m->T;
    be->upload(m->targets, targets, (size_t)BT * sizeof(int));
    be->logprob_forward(m->a.logits, m->logp, m->ent, m->a.logits, m->targets, BT, m->cfg.V);
    if (logp) be->download(logp, m->logp, (size_t)BT * sizeof(float));
    if (ent) be->download(ent, m->ent, (size_t)BT * sizeof(float));
}

/* ---- backward ---------------------------------------------------------- */

/* collective over m->sh.tp_comm */
void gpt_backward(GPT *m, const float *dlogp, const float *dent, const float *dvalues) {
    if (!m->trainable) nr_fatal("gpt_backward on a frozen model");
    const Backend *be = m->be;
    const GPTConfig *c = &m->cfg;
    int B = m->B, T = m->T, C = c->C, Cl = m->Cl, NH = m->NHl, F = 4 * m->Cl, L = c->L, V = c->V, BT = B * T;
    size_t BTC = (size_t)BT * C, BTCl = (size_t)BT * Cl, BTF = (size_t)BT * F;
    GPTActs *a = &m->a;
    GPTGradScratch *s = &m->s;
    float *dlnf = s->dtmp;
    be->zero(dlnf, BTC * sizeof(float));
    if (dlogp) {
        be->upload(m->dlogp, dlogp, (size_t)BT * sizeof(float));
        if (dent) be->upload(m->dent, dent, (size_t)BT * sizeof(float));
        be->logprob_backward(s->dlogits, m->dlogp, dent ? m->dent : NULL, a->logits, m->ent, m->targets,
                             BT, V);
        be->matmul_backward(dlnf, m->g[GPT_WTE], NULL, s->dlogits, a->lnf, m->p[GPT_WTE], BT, C, V);
    }
    if (dvalues) {
        be->upload(s->dvalues, dvalues, (size_t)BT * sizeof(float));
        be->matmul_backward(dlnf, m->g[GPT_VHW], m->g[GPT_VHB], s->dvalues, a->lnf, m->p[GPT_VHW], BT, C, 1);
    }
    be->zero(s->dresidual, BTC * sizeof(float));
    be->layernorm_backward(s->dresidual, m->g[GPT_LNFW], m->g[GPT_LNFB], dlnf,
                           a->residual3 + (size_t)(L - 1) * BTC, m->p[GPT_LNFW], a->lnf_mean, a->lnf_rstd,
                           BT, C);
    for (int l = L - 1; l >= 0; l--) {
        float *res = l == 0 ? a->encoded : a->residual3 + (size_t)(l - 1) * BTC;
        float *ln1 = a->ln1 + l * BTC, *qkv = a->qkv + l * BTCl * 3, *atty = a->atty + l * BTCl;
        size_t attsz = (size_t)B * NH * T * T;
        float *att = a->att + l * attsz;
        float *res2 = a->residual2 + l * BTC;
        float *ln2 = a->ln2 + l * BTC, *fch = a->fch + l * BTF, *fchg = a->fch_gelu + l * BTF;
        float *l1m = a->ln1_mean + (size_t)l * BT, *l1r = a->ln1_rstd + (size_t)l * BT;
        float *l2m = a->ln2_mean + (size_t)l * BT, *l2r = a->ln2_rstd + (size_t)l * BT;
        /* dresidual = d residual3[l]; residual3 = residual2 + fcproj. dresidual is the
         * same on every TP rank, so the replicated fcprojb gradient is too. */
        be->zero(s->dfch_gelu, BTF * sizeof(float));
        be->zero(s->dfch, BTF * sizeof(float));
        be->zero(s->dln, BTC * sizeof(float));
        be->matmul_backward(s->dfch_gelu, m->g[GPT_FCPROJW] + (size_t)l * C * F, m->g[GPT_FCPROJB] + l * C,
                            s->dresidual, fchg, m->p[GPT_FCPROJW] + (size_t)l * C * F, BT, F, C);
        be->gelu_backward(s->dfch, fch, s->dfch_gelu, BTF);
        be->matmul_backward(s->dln, m->g[GPT_FCW] + (size_t)l * F * C, m->g[GPT_FCB] + l * F, s->dfch,
                            ln2, m->p[GPT_FCW] + (size_t)l * F * C, BT, C, F);
        gpt_tp_sum(m, s->dln, BTC); /* this rank's MLP columns' share of d ln2 */
        be->layernorm_backward(s->dresidual, m->g[GPT_LN2W] + l * C, m->g[GPT_LN2B] + l * C, s->dln, res2,
                               m->p[GPT_LN2W] + l * C, l2m, l2r, BT, C);
        /* dresidual = d residual2[l]; residual2 = res + attproj */
        be->zero(s->datty, BTCl * sizeof(float));
        be->zero(s->dqkv, BTCl * 3 * sizeof(float));
        be->zero(s->dln, BTC * sizeof(float));
        be->matmul_backward(s->datty, m->g[GPT_ATTPROJW] + (size_t)l * C * Cl, m->g[GPT_ATTPROJB] + l * C,
                            s->dresidual, atty, m->p[GPT_ATTPROJW] + (size_t)l * C * Cl, BT, Cl, C);
        be->attention_backward(s->dqkv, s->dpreatt, s->datt, s->datty, qkv, att, B, T, Cl, NH);
        be->matmul_backward(s->dln, m->g[GPT_QKVW] + (size_t)l * 3 * Cl * C, m->g[GPT_QKVB] + l * 3 * Cl, s->dqkv,
                            ln1, m->p[GPT_QKVW] + (size_t)l * 3 * Cl * C, BT, C, 3 * Cl);
        /* The key bias shifts every score of a softmax row by the same q·b, so
         * its gradient is exactly zero; what the sum leaves is rounding noise,
         * which AdamW (g/√v) would blow up into ±lr steps that depend on the
         * summation order, i.e. on the plan. Keep it exactly zero. */
        be->zero(m->g[GPT_QKVB] + l * 3 * Cl + Cl, Cl * sizeof(float));
        gpt_tp_sum(m, s->dln, BTC); /* this rank's heads' share of d ln1 */
        be->layernorm_backward(s->dresidual, m->g[GPT_LN1W] + l * C, m->g[GPT_LN1B] + l * C, s->dln, res,
                               m->p[GPT_LN1W] + l * C, l1m, l1r, BT, C);
        /* dresidual = d res (the input of layer l) */
    }
    be->encoder_backward(m->g[GPT_WTE], m->g[GPT_WPE], s->dresidual, m->tokens, B, T, C, 0);
}

void gpt_zero_grad(GPT *m) {
    if (m->grads) m->be->zero(m->grads, m->nparams * sizeof(float));
}

/* collective over m->sh.tp_comm */
float gpt_update(GPT *m, float lr, float beta1, float beta2, float eps, float wd, float max_norm) {
    const Backend *be = m->be;
    double norm;
    if (m->sh.tp == 1) {
        norm = sqrt(be->sumsq(m->grads, m->nparams));
    } else {
        /* the logical norm: cut tensors summed over the group, replicated ones
         * (the same on every TP rank) once; [0] cut, [1] replicated */
        double ss[2] = {0.0, 0.0};
        for (int i = 0; i < m->ntensors; i++) {
            const TensorInfo *t = &m->tensors[i];
            ss[t->cut_axis < 0] += be->sumsq(m->g[i], t->lnumel);
        }
        comm_allreduce_sum_f64(m->sh.tp_comm, ss, 1);
        norm = sqrt(ss[0] + ss[1]);
    }
    float gscale = (max_norm > 0.0f && norm > (double)max_norm) ? (float)(max_norm / norm) : 1.0f;
    m->adam_t++;
    be->adamw_update(m->params, m->grads, m->m, m->v, m->nparams, lr, beta1, beta2, eps, wd, gscale, m->adam_t);
    return (float)norm;
}

/* ---- KV-cached decoding -------------------------------------------------- */

/* floats of one layer of the cache: (Bmax, NHl, Tmax, hs) */
static size_t gpt_kv_layer(const GPT *m) {
    return (size_t)m->Bmax * (size_t)m->NHl * (size_t)m->Tmax * (size_t)(m->cfg.C / m->cfg.NH);
}

/* collective over m->sh.tp_comm */
void gpt_prefill(GPT *m, const int *tokens, int B, int P, float *logits_out) {
    const Backend *be = m->be;
    const GPTConfig *c = &m->cfg;
    int C = c->C, Cl = m->Cl;
    gpt_forward(m, tokens, B, P, 0, 0);
    size_t BTCl = (size_t)B * P * Cl;
    for (int l = 0; l < c->L; l++)
        be->kv_fill(m->kcache + l * gpt_kv_layer(m), m->vcache + l * gpt_kv_layer(m), m->a.qkv + l * BTCl * 3,
                    B, P, m->Tmax, Cl, m->NHl);
    /* logits of the last prompt position only: (B, C) rows of lnf → (B, V) */
    for (int b = 0; b < B; b++)
        be->copy(m->d_ln + (size_t)b * C, m->a.lnf + ((size_t)b * P + P - 1) * C, (size_t)C * sizeof(float));
    be->matmul_forward(m->d_logits, m->d_ln, m->p[GPT_WTE], NULL, B, C, c->V);
    if (logits_out) be->download(logits_out, m->d_logits, (size_t)B * c->V * sizeof(float));
}

/* collective over m->sh.tp_comm */
void gpt_decode(GPT *m, const int *tok, int B, int pos, float *logits_out) {
    const Backend *be = m->be;
    const GPTConfig *c = &m->cfg;
    int C = c->C, Cl = m->Cl, NH = m->NHl, F = 4 * m->Cl;
    if (pos >= m->Tmax || B > m->Bmax) nr_fatal("gpt_decode: position %d or batch %d beyond capacity", pos, B);
    size_t BC = (size_t)B * C;
    be->upload(m->tokens, tok, (size_t)B * sizeof(int));
    be->encoder_forward(m->d_x, m->tokens, m->p[GPT_WTE], m->p[GPT_WPE], B, 1, C, pos);
    for (int l = 0; l < c->L; l++) {
        be->layernorm_forward(m->d_ln, m->d_mean, m->d_rstd, m->d_x, m->p[GPT_LN1W] + l * C,
                              m->p[GPT_LN1B] + l * C, B, C);
        be->matmul_forward(m->d_qkv, m->d_ln, m->p[GPT_QKVW] + (size_t)l * 3 * Cl * C, m->p[GPT_QKVB] + l * 3 * Cl,
                           B, C, 3 * Cl);
        be->attention_decode(m->d_atty, m->kcache + l * gpt_kv_layer(m), m->vcache + l * gpt_kv_layer(m),
                             m->d_qkv, B, pos, m->Tmax, Cl, NH);
        be->matmul_forward(m->d_tmp, m->d_atty, m->p[GPT_ATTPROJW] + (size_t)l * C * Cl,
                           gpt_rowpar_bias(m, m->p[GPT_ATTPROJB] + l * C), B, Cl, C);
        gpt_tp_sum(m, m->d_tmp, BC);
        be->residual_forward(m->d_x, m->d_x, m->d_tmp, BC);
        be->layernorm_forward(m->d_ln, m->d_mean, m->d_rstd, m->d_x, m->p[GPT_LN2W] + l * C,
                              m->p[GPT_LN2B] + l * C, B, C);
        be->matmul_forward(m->d_fch, m->d_ln, m->p[GPT_FCW] + (size_t)l * F * C, m->p[GPT_FCB] + l * F, B, C, F);
        be->gelu_forward(m->d_fchg, m->d_fch, (size_t)B * F);
        be->matmul_forward(m->d_tmp, m->d_fchg, m->p[GPT_FCPROJW] + (size_t)l * C * F,
                           gpt_rowpar_bias(m, m->p[GPT_FCPROJB] + l * C), B, F, C);
        gpt_tp_sum(m, m->d_tmp, BC);
        be->residual_forward(m->d_x, m->d_x, m->d_tmp, BC);
    }
    be->layernorm_forward(m->d_ln, m->d_mean, m->d_rstd, m->d_x, m->p[GPT_LNFW], m->p[GPT_LNFB], B, C);
    be->matmul_forward(m->d_logits, m->d_ln, m->p[GPT_WTE], NULL, B, C, c->V);
    if (logits_out) be->download(logits_out, m->d_logits, (size_t)B * c->V * sizeof(float));
}

/* ---- accounting ---------------------------------------------------------- */

double gpt_flops_per_token_fwd(const GPTConfig *c, int T) {

    double C = c->C, L = c->L, V = c->V;
    double dense = 2.0 * L * (3 * C * C + C * C + 4 * C * C + 4 * C * C) + 2.0 * C * V;
    /* causal attention: a token at position t attends over t+1 keys; mean (T+1)/2;
     * QK^T and AV each 2·C flops per key */
    double attn = L * 4.0 * C * (T + 1) / 2.0;
    return dense + attn;
}
