/* gpt.c — GPT-2 over the Backend: tensor table, one flat parameter buffer,
 * forward, backward (layer by layer through one layer of scratch), AdamW with
 * gradient-norm clipping, and KV-cached decoding. Shapes and the init rule
 * are in model.h; the op contracts are in backend.h. All pointers in this
 * file's public functions are host pointers; buffers inside the struct live
 * in backend memory. */
#include "nereus/model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/util.h"

static void set_tensor(TensorInfo *t, const char *name, int ndim, int s0, int s1, int s2, int s3,
                       size_t *offset) {
    int s[4] = {s0, s1, s2, s3};
    t->name = name;
    t->ndim = ndim;
    t->numel = 1;
    for (int i = 0; i < 4; i++) {
        t->shape[i] = i < ndim ? s[i] : 0;
        if (i < ndim) t->numel *= (size_t)s[i];
    }
    t->offset = *offset;
    /* keep each tensor 16-float (64-byte) aligned inside the flat buffer */
    *offset += (t->numel + 15) & ~(size_t)15;
}

static void gpt_layout_tensors(GPT *m) {
    const GPTConfig *c = &m->cfg;
    int V = c->V, T = c->maxT, L = c->L, C = c->C;
    size_t off = 0;
    TensorInfo *t = m->tensors;
    set_tensor(&t[GPT_WTE], "wte", 2, V, C, 0, 0, &off);             /* (V, C) */
    set_tensor(&t[GPT_WPE], "wpe", 2, T, C, 0, 0, &off);             /* (maxT, C) */
    set_tensor(&t[GPT_LN1W], "ln1w", 2, L, C, 0, 0, &off);           /* (L, C) */
    set_tensor(&t[GPT_LN1B], "ln1b", 2, L, C, 0, 0, &off);           /* (L, C) */
    set_tensor(&t[GPT_QKVW], "qkvw", 4, L, 3, C, C, &off);           /* (L, 3, C, C) */
    set_tensor(&t[GPT_QKVB], "qkvb", 3, L, 3, C, 0, &off);           /* (L, 3, C) */
    set_tensor(&t[GPT_ATTPROJW], "attprojw", 3, L, C, C, 0, &off);   /* (L, C, C) */
    set_tensor(&t[GPT_ATTPROJB], "attprojb", 2, L, C, 0, 0, &off);   /* (L, C) */
    set_tensor(&t[GPT_LN2W], "ln2w", 2, L, C, 0, 0, &off);           /* (L, C) */
    set_tensor(&t[GPT_LN2B], "ln2b", 2, L, C, 0, 0, &off);           /* (L, C) */
    set_tensor(&t[GPT_FCW], "fcw", 3, L, 4 * C, C, 0, &off);         /* (L, 4C, C) */
    set_tensor(&t[GPT_FCB], "fcb", 2, L, 4 * C, 0, 0, &off);         /* (L, 4C) */
    set_tensor(&t[GPT_FCPROJW], "fcprojw", 3, L, C, 4 * C, 0, &off); /* (L, C, 4C) */
    set_tensor(&t[GPT_FCPROJB], "fcprojb", 2, L, C, 0, 0, &off);     /* (L, C) */
    set_tensor(&t[GPT_LNFW], "lnfw", 1, C, 0, 0, 0, &off);           /* (C) */
    set_tensor(&t[GPT_LNFB], "lnfb", 1, C, 0, 0, 0, &off);           /* (C) */
    m->ntensors = GPT_VHW;
    if (c->value_head) {
        set_tensor(&t[GPT_VHW], "vhw", 1, C, 0, 0, 0, &off);         /* (C) = (1, C) matmul weight */
        set_tensor(&t[GPT_VHB], "vhb", 1, 1, 0, 0, 0, &off);         /* (1) */
        m->ntensors = GPT_NUM_TENSORS;
    }
    m->nparams = off;
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
    size_t NH = (size_t)c->NH, V = (size_t)c->V, BT = B * T;
    GPTActs *a = &m->a;
    a->encoded = carve(cv, BT * C);
    a->ln1 = carve(cv, L * BT * C);
    a->ln1_mean = carve(cv, L * BT);
    a->ln1_rstd = carve(cv, L * BT);
    a->qkv = carve(cv, L * BT * 3 * C);
    a->atty = carve(cv, L * BT * C);
    a->preatt = carve(cv, L * B * NH * T * T);
    a->att = carve(cv, L * B * NH * T * T);
    a->attproj = carve(cv, L * BT * C);
    a->residual2 = carve(cv, L * BT * C);
    a->ln2 = carve(cv, L * BT * C);
    a->ln2_mean = carve(cv, L * BT);
    a->ln2_rstd = carve(cv, L * BT);
    a->fch = carve(cv, L * BT * 4 * C);
    a->fch_gelu = carve(cv, L * BT * 4 * C);
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
    size_t B = (size_t)m->Bmax, T = (size_t)m->Tmax, C = (size_t)c->C, NH = (size_t)c->NH;
    size_t BT = B * T;
    GPTGradScratch *s = &m->s;
    s->dresidual = carve(cv, BT * C);
    s->dln = carve(cv, BT * C);
    s->dqkv = carve(cv, BT * 3 * C);
    s->datty = carve(cv, BT * C);
    s->dpreatt = carve(cv, B * NH * T * T);
    s->datt = carve(cv, B * NH * T * T);
    s->dfch = carve(cv, BT * 4 * C);
    s->dfch_gelu = carve(cv, BT * 4 * C);
    s->dtmp = carve(cv, BT * C);
    s->dvalues = carve(cv, BT);
    return cv->used;
}

/* decode buffers and the small per-call buffers behind the host-facing API */
static size_t gpt_carve_decode(GPT *m, Carve *cv) {
    size_t B = (size_t)m->Bmax, C = (size_t)m->cfg.C, V = (size_t)m->cfg.V;
    size_t BT = B * (size_t)m->Tmax;
    m->d_x = carve(cv, B * C);
    m->d_ln = carve(cv, B * C);
    m->d_qkv = carve(cv, B * 3 * C);
    m->d_atty = carve(cv, B * C);
    m->d_tmp = carve(cv, B * C);
    m->d_fch = carve(cv, B * 4 * C);
    m->d_fchg = carve(cv, B * 4 * C);
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
        for (size_t k = 0; k < t->numel; k++) {
            if (is_weight) p[k] = s * rng_normal(seed, RNG_INIT, (uint64_t)i, k);
            else if (is_gain) p[k] = 1.0f;
            else p[k] = 0.0f; /* biases and the value head */
        }
    }
    m->be->upload(m->params, host, m->nparams * sizeof(float));
    free(host);
}

void gpt_build(GPT *m, const GPTConfig *cfg, const Backend *be, int Bmax, int Tmax,
               int trainable, uint64_t seed, float init_std) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->be = be;
    m->trainable = trainable;
    m->Bmax = Bmax;
    m->Tmax = Tmax;
    if (Tmax > cfg->maxT) nr_fatal("gpt_build: Tmax %d exceeds the model's %d positions", Tmax, cfg->maxT);
    if (cfg->C % cfg->NH != 0) nr_fatal("gpt_build: n_head %d does not divide n_embd %d", cfg->NH, cfg->C);
    gpt_layout_tensors(m);
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
    size_t kv = (size_t)cfg->L * (size_t)Bmax * (size_t)cfg->NH * (size_t)Tmax * hs;
    m->kcache = be->alloc(kv * sizeof(float));
    m->vcache = be->alloc(kv * sizeof(float));
    cv = (Carve){NULL, 0};
    size_t nd = gpt_carve_decode(m, &cv);
    m->decode_mem = be->alloc(nd * sizeof(float));
    cv = (Carve){m->decode_mem, 0};
    gpt_carve_decode(m, &cv);
    m->tokens = be->alloc((size_t)Bmax * (size_t)Tmax * sizeof(int));
    m->targets = be->alloc((size_t)Bmax * (size_t)Tmax * sizeof(int));
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
        dst->be->copy(dst->p[i], src->p[i], d->numel * sizeof(float));
    }
}

/* ---- forward ----------------------------------------------------------- */

void gpt_forward(GPT *m, const int *tokens, int B, int T, int want_logits, int want_values) {
    const Backend *be = m->be;
    const GPTConfig *c = &m->cfg;
    if (B > m->Bmax || T > m->Tmax || B < 1 || T < 1)
        nr_fatal("gpt_forward: batch (%d, %d) outside capacity (%d, %d)", B, T, m->Bmax, m->Tmax);
    if (want_values && !c->value_head) nr_fatal("gpt_forward: values asked of a model without a value head");
    int C = c->C, NH = c->NH, L = c->L, V = c->V, BT = B * T;
    size_t BTC = (size_t)BT * C;
    m->B = B;
    m->T = T;
    be->upload(m->tokens, tokens, (size_t)BT * sizeof(int));
    GPTActs *a = &m->a;
    be->encoder_forward(a->encoded, m->tokens, m->p[GPT_WTE], m->p[GPT_WPE], B, T, C, 0);
    for (int l = 0; l < L; l++) {
        float *res = l == 0 ? a->encoded : a->residual3 + (size_t)(l - 1) * BTC;
        float *ln1 = a->ln1 + l * BTC, *qkv = a->qkv + l * BTC * 3, *atty = a->atty + l * BTC;
        size_t attsz = (size_t)B * NH * T * T;
        float *preatt = a->preatt + l * attsz, *att = a->att + l * attsz;
        float *attproj = a->attproj + l * BTC, *res2 = a->residual2 + l * BTC;
        float *ln2 = a->ln2 + l * BTC, *fch = a->fch + l * BTC * 4, *fchg = a->fch_gelu + l * BTC * 4;
        float *fcproj = a->fcproj + l * BTC, *res3 = a->residual3 + l * BTC;
        float *l1m = a->ln1_mean + (size_t)l * BT, *l1r = a->ln1_rstd + (size_t)l * BT;
        float *l2m = a->ln2_mean + (size_t)l * BT, *l2r = a->ln2_rstd + (size_t)l * BT;
        be->layernorm_forward(ln1, l1m, l1r, res, m->p[GPT_LN1W] + l * C, m->p[GPT_LN1B] + l * C, BT, C);
        be->matmul_forward(qkv, ln1, m->p[GPT_QKVW] + (size_t)l * 3 * C * C, m->p[GPT_QKVB] + l * 3 * C,
                           BT, C, 3 * C);
        be->attention_forward(atty, preatt, att, qkv, B, T, C, NH);
        be->matmul_forward(attproj, atty, m->p[GPT_ATTPROJW] + (size_t)l * C * C,
                           m->p[GPT_ATTPROJB] + l * C, BT, C, C);
        be->residual_forward(res2, res, attproj, BTC);
        be->layernorm_forward(ln2, l2m, l2r, res2, m->p[GPT_LN2W] + l * C, m->p[GPT_LN2B] + l * C, BT, C);
        be->matmul_forward(fch, ln2, m->p[GPT_FCW] + (size_t)l * 4 * C * C, m->p[GPT_FCB] + l * 4 * C,
                           BT, C, 4 * C);
        be->gelu_forward(fchg, fch, BTC * 4);
        be->matmul_forward(fcproj, fchg, m->p[GPT_FCPROJW] + (size_t)l * 4 * C * C,
                           m->p[GPT_FCPROJB] + l * C, BT, 4 * C, C);
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

void gpt_backward(GPT *m, const float *dlogp, const float *dent, const float *dvalues) {
    if (!m->trainable) nr_fatal("gpt_backward on a frozen model");
    const Backend *be = m->be;
    const GPTConfig *c = &m->cfg;
    int B = m->B, T = m->T, C = c->C, NH = c->NH, L = c->L, V = c->V, BT = B * T;
    size_t BTC = (size_t)BT * C;
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
        float *ln1 = a->ln1 + l * BTC, *qkv = a->qkv + l * BTC * 3, *atty = a->atty + l * BTC;
        size_t attsz = (size_t)B * NH * T * T;
        float *att = a->att + l * attsz;
        float *res2 = a->residual2 + l * BTC;
        float *ln2 = a->ln2 + l * BTC, *fch = a->fch + l * BTC * 4, *fchg = a->fch_gelu + l * BTC * 4;
        float *l1m = a->ln1_mean + (size_t)l * BT, *l1r = a->ln1_rstd + (size_t)l * BT;
        float *l2m = a->ln2_mean + (size_t)l * BT, *l2r = a->ln2_rstd + (size_t)l * BT;
        /* dresidual = d residual3[l]; residual3 = residual2 + fcproj */
        be->zero(s->dfch_gelu, BTC * 4 * sizeof(float));
        be->zero(s->dfch, BTC * 4 * sizeof(float));
        be->zero(s->dln, BTC * sizeof(float));
        be->matmul_backward(s->dfch_gelu, m->g[GPT_FCPROJW] + (size_t)l * 4 * C * C, m->g[GPT_FCPROJB] + l * C,
                            s->dresidual, fchg, m->p[GPT_FCPROJW] + (size_t)l * 4 * C * C, BT, 4 * C, C);
        be->gelu_backward(s->dfch, fch, s->dfch_gelu, BTC * 4);
        be->matmul_backward(s->dln, m->g[GPT_FCW] + (size_t)l * 4 * C * C, m->g[GPT_FCB] + l * 4 * C, s->dfch,
                            ln2, m->p[GPT_FCW] + (size_t)l * 4 * C * C, BT, C, 4 * C);
        be->layernorm_backward(s->dresidual, m->g[GPT_LN2W] + l * C, m->g[GPT_LN2B] + l * C, s->dln, res2,
                               m->p[GPT_LN2W] + l * C, l2m, l2r, BT, C);
        /* dresidual = d residual2[l]; residual2 = res + attproj */
        be->zero(s->datty, BTC * sizeof(float));
        be->zero(s->dqkv, BTC * 3 * sizeof(float));
        be->zero(s->dln, BTC * sizeof(float));
        be->matmul_backward(s->datty, m->g[GPT_ATTPROJW] + (size_t)l * C * C, m->g[GPT_ATTPROJB] + l * C,
                            s->dresidual, atty, m->p[GPT_ATTPROJW] + (size_t)l * C * C, BT, C, C);
        be->attention_backward(s->dqkv, s->dpreatt, s->datt, s->datty, qkv, att, B, T, C, NH);
        be->matmul_backward(s->dln, m->g[GPT_QKVW] + (size_t)l * 3 * C * C, m->g[GPT_QKVB] + l * 3 * C, s->dqkv,
                            ln1, m->p[GPT_QKVW] + (size_t)l * 3 * C * C, BT, C, 3 * C);
        be->layernorm_backward(s->dresidual, m->g[GPT_LN1W] + l * C, m->g[GPT_LN1B] + l * C, s->dln, res,
                               m->p[GPT_LN1W] + l * C, l1m, l1r, BT, C);
        /* dresidual = d res (the input of layer l) */
    }
    be->encoder_backward(m->g[GPT_WTE], m->g[GPT_WPE], s->dresidual, m->tokens, B, T, C, 0);
}

void gpt_zero_grad(GPT *m) {
    if (m->grads) m->be->zero(m->grads, m->nparams * sizeof(float));
}

float gpt_update(GPT *m, float lr, float beta1, float beta2, float eps, float wd, float max_norm) {
    const Backend *be = m->be;
    double norm = sqrt(be->sumsq(m->grads, m->nparams));
    float gscale = (max_norm > 0.0f && norm > (double)max_norm) ? (float)(max_norm / norm) : 1.0f;
    m->adam_t++;
    be->adamw_update(m->params, m->grads, m->m, m->v, m->nparams, lr, beta1, beta2, eps, wd, gscale, m->adam_t);
    return (float)norm;
}

/* ---- KV-cached decoding -------------------------------------------------- */

static size_t gpt_kv_layer(const GPT *m) {
    return (size_t)m->Bmax * (size_t)m->cfg.NH * (size_t)m->Tmax * (size_t)(m->cfg.C / m->cfg.NH);
}

void gpt_prefill(GPT *m, const int *tokens, int B, int P, float *logits_out) {
    const Backend *be = m->be;
    const GPTConfig *c = &m->cfg;
    int C = c->C;
    gpt_forward(m, tokens, B, P, 0, 0);
    size_t BTC = (size_t)B * P * C;
    for (int l = 0; l < c->L; l++)
        be->kv_fill(m->kcache + l * gpt_kv_layer(m), m->vcache + l * gpt_kv_layer(m), m->a.qkv + l * BTC * 3,
                    B, P, m->Tmax, C, c->NH);
    /* logits of the last prompt position only: (B, C) rows of lnf → (B, V) */
    for (int b = 0; b < B; b++)
        be->copy(m->d_ln + (size_t)b * C, m->a.lnf + ((size_t)b * P + P - 1) * C, (size_t)C * sizeof(float));
    be->matmul_forward(m->d_logits, m->d_ln, m->p[GPT_WTE], NULL, B, C, c->V);
    if (logits_out) be->download(logits_out, m->d_logits, (size_t)B * c->V * sizeof(float));
}

void gpt_decode(GPT *m, const int *tok, int B, int pos, float *logits_out) {
    const Backend *be = m->be;
    const GPTConfig *c = &m->cfg;
    int C = c->C, NH = c->NH;
    if (pos >= m->Tmax || B > m->Bmax) nr_fatal("gpt_decode: position %d or batch %d beyond capacity", pos, B);
    size_t BC = (size_t)B * C;
    be->upload(m->tokens, tok, (size_t)B * sizeof(int));
    be->encoder_forward(m->d_x, m->tokens, m->p[GPT_WTE], m->p[GPT_WPE], B, 1, C, pos);
    for (int l = 0; l < c->L; l++) {
        be->layernorm_forward(m->d_ln, m->d_mean, m->d_rstd, m->d_x, m->p[GPT_LN1W] + l * C,
                              m->p[GPT_LN1B] + l * C, B, C);
        be->matmul_forward(m->d_qkv, m->d_ln, m->p[GPT_QKVW] + (size_t)l * 3 * C * C, m->p[GPT_QKVB] + l * 3 * C,
                           B, C, 3 * C);
        be->attention_decode(m->d_atty, m->kcache + l * gpt_kv_layer(m), m->vcache + l * gpt_kv_layer(m),
                             m->d_qkv, B, pos, m->Tmax, C, NH);
        be->matmul_forward(m->d_tmp, m->d_atty, m->p[GPT_ATTPROJW] + (size_t)l * C * C,
                           m->p[GPT_ATTPROJB] + l * C, B, C, C);
        be->residual_forward(m->d_x, m->d_x, m->d_tmp, BC);
        be->layernorm_forward(m->d_ln, m->d_mean, m->d_rstd, m->d_x, m->p[GPT_LN2W] + l * C,
                              m->p[GPT_LN2B] + l * C, B, C);
        be->matmul_forward(m->d_fch, m->d_ln, m->p[GPT_FCW] + (size_t)l * 4 * C * C, m->p[GPT_FCB] + l * 4 * C,
                           B, C, 4 * C);
        be->gelu_forward(m->d_fchg, m->d_fch, BC * 4);
        be->matmul_forward(m->d_tmp, m->d_fchg, m->p[GPT_FCPROJW] + (size_t)l * 4 * C * C,
                           m->p[GPT_FCPROJB] + l * C, B, 4 * C, C);
        be->residual_forward(m->d_x, m->d_x, m->d_tmp, BC);
    }
    be->layernorm_forward(m->d_ln, m->d_mean, m->d_rstd, m->d_x, m->p[GPT_LNFW], m->p[GPT_LNFB], B, C);
    be->matmul_forward(m->d_logits, m->d_ln, m->p[GPT_WTE], NULL, B, C, c->V);
    if (logits_out) be->download(logits_out, m->d_logits, (size_t)B * c->V * sizeof(float));
}

/* ---- accounting ---------------------------------------------------------- */

double gpt_checksum(const GPT *m) {
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

double gpt_flops_per_token_fwd(const GPTConfig *c, int T) {
    double C = c->C, L = c->L, V = c->V;
    double dense = 2.0 * L * (3 * C * C + C * C + 4 * C * C + 4 * C * C) + 2.0 * C * V;
    /* causal attention: a token at position t attends over t+1 keys; mean (T+1)/2;
     * QK^T and AV each 2·C flops per key */
    double attn = L * 4.0 * C * (T + 1) / 2.0;
    return dense + attn;
}
