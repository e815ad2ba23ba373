/* llama.c — the Llama family's layers (Llama, Qwen2, Qwen3) over the
 * Backend, as transformers' *ForCausalLM computes them: RMSNorm, the packed
 * q|k|v matmul (biases on Qwen2), per-head QK RMSNorm (Qwen3), RoPE on the
 * q and k heads at their positions, grouped-query attention, the output
 * projection, RMSNorm, SwiGLU MLP. Each piece is a forward/backward pair;
 * gpt.c runs the batch, the embedding, the heads and the optimiser and
 * calls these where the architecture differs from GPT-2. Under tensor
 * parallelism a rank runs its query heads with their key/value heads and its
 * MLP columns, and the partial outputs of the row-parallel o_proj and down
 * projections are summed over the TP group (forward and decode), as are the
 * partial gradients flowing into the two RMSNorms' outputs and the Qwen3
 * QK-norm weight gradients (backward). Shapes and cuts are in model.h.
 */
#include "llama.h"

#include <math.h>
#include <stdlib.h>

#include "nereus/comm.h"
#include "nereus/rope.h"
#include "nereus/util.h"

static float llama_eps(const GPTConfig *c) { return c->norm_eps > 0 ? (float)c->norm_eps : 1e-5f; }

void llama_rope_init(GPT *m) {
    const GPTConfig *c = &m->cfg;
    RopeScaling sc = {c->rope_factor, c->rope_low_freq, c->rope_high_freq, c->rope_orig_ctx};
    float *f = nr_xmalloc((size_t)m->hs / 2 * sizeof(float));
    rope_inv_freq(f, m->hs, c->rope_theta > 0 ? c->rope_theta : 10000.0, c->rope_llama3 ? &sc : NULL);
    m->be->upload(m->inv_freq, f, (size_t)m->hs / 2 * sizeof(float));
    free(f);
}

/* collective over m->sh.tp_comm (nothing when tp = 1): buf (n floats, backend memory) summed over the group */
static void llama_tp_sum(GPT *m, float *buf, size_t n) {
    if (m->sh.tp > 1) comm_allreduce_sum_f32(m->sh.tp_comm, buf, n);
}

/* g (n floats) += d: the backend's residual add, in place */
static void llama_add(const GPT *m, float *g, const float *d, size_t n) { m->be->residual_forward(g, g, d, n); }

/* layer l's packed q|k|v weight (C3, C) = [this rank's qw block | its kvw block ([k | v])], and bias, into
 * m->a.wqkv and m->a.bqkv: two copies of the weights, which the matmul then reads as one */
static void llama_pack_qkv(GPT *m, int l) {
    const Backend *be = m->be;
    size_t C = (size_t)m->cfg.C, Cq = (size_t)m->Cl, Ckv2 = (size_t)(m->C3 - m->Cl);
    be->copy(m->a.wqkv, m->p[LLAMA_QW] + (size_t)l * Cq * C, Cq * C * sizeof(float));
    be->copy(m->a.wqkv + Cq * C, m->p[LLAMA_KVW] + (size_t)l * Ckv2 * C, Ckv2 * C * sizeof(float));
    if (m->cfg.qkv_bias) {
        be->copy(m->a.bqkv, m->p[LLAMA_QB] + (size_t)l * Cq, Cq * sizeof(float));
        be->copy(m->a.bqkv + Cq, m->p[LLAMA_KVB] + (size_t)l * Ckv2, Ckv2 * sizeof(float));
    }
}

/* layer l's packed weight (and bias) gradient in m->s.dwqkv (dbqkv) added into qw's and kvw's (qb, kvb) */
static void llama_unpack_qkv_grad(GPT *m, int l) {
    size_t C = (size_t)m->cfg.C, Cq = (size_t)m->Cl, Ckv2 = (size_t)(m->C3 - m->Cl);
    llama_add(m, m->g[LLAMA_QW] + (size_t)l * Cq * C, m->s.dwqkv, Cq * C);
    llama_add(m, m->g[LLAMA_KVW] + (size_t)l * Ckv2 * C, m->s.dwqkv + Cq * C, Ckv2 * C);
    if (m->cfg.qkv_bias) {
        llama_add(m, m->g[LLAMA_QB] + (size_t)l * Cq, m->s.dbqkv, Cq);
        llama_add(m, m->g[LLAMA_KVB] + (size_t)l * Ckv2, m->s.dbqkv + Cq, Ckv2);
    }
}

/* one layer's activations at rows [r0, r0 + n) of the (B, T) batch (the arrays are (La, B, T, ·) blocks) */
typedef struct LlamaActs {
    float *res, *ln1, *rstd1, *qkv, *qkv_raw, *qk_rstd, *atty, *att, *preatt, *attproj;
    float *res2, *ln2, *rstd2, *fch, *fchg, *fcproj, *res3;
} LlamaActs;

static LlamaActs llama_acts(const GPT *m, int l, int r0) {
    const GPTActs *a = &m->a;
    size_t BT = (size_t)m->B * m->T, rT = (size_t)r0 * m->T, C = (size_t)m->cfg.C, C3 = (size_t)m->C3;
    size_t Cq = (size_t)m->Cl, F = (size_t)m->F, NQK = (size_t)(m->NHl + m->NKVl);
    size_t attsz = (size_t)m->B * m->NHl * m->T * m->T, ratt = (size_t)r0 * m->NHl * m->T * m->T;
    size_t k = gpt_act_layer(m, l); /* the layer's activation block (one for a model without backward) */
    size_t lC = k * BT * C + rT * C, lT = k * BT + rT;
    LlamaActs x;
    x.res = (l == 0 ? a->encoded : a->residual3 + gpt_act_layer(m, l - 1) * BT * C) + rT * C;
    x.ln1 = a->ln1 + lC;
    x.rstd1 = a->ln1_rstd + lT;
    x.qkv = a->qkv + k * BT * C3 + rT * C3;
    x.qkv_raw = a->qkv_raw ? a->qkv_raw + k * BT * C3 + rT * C3 : NULL;
    x.qk_rstd = a->qk_rstd ? a->qk_rstd + k * BT * NQK + rT * NQK : NULL;
    x.atty = a->atty + k * BT * Cq + rT * Cq;
    x.preatt = a->preatt + k * attsz + ratt;
    x.att = a->att + k * attsz + ratt;
    x.attproj = a->attproj + lC;
    x.res2 = a->residual2 + lC;
    x.ln2 = a->ln2 + lC;
    x.rstd2 = a->ln2_rstd + lT;
    x.fch = a->fch + k * BT * 2 * F + rT * 2 * F;
    x.fchg = a->fch_gelu + k * BT * F + rT * F;
    x.fcproj = a->fcproj + lC;
    x.res3 = a->residual3 + lC;
    return x;
}

/* a layer's slice of a layer-stacked tensor of `per` floats a layer (NULL stays NULL) */
static float *at(float *t, int l, size_t per) { return t ? t + (size_t)l * per : NULL; }

/* ---- attention ------------------------------------------------------------ */

/* Qwen3: the q and k heads of nT packed rows qkv normalised per head, in place; their input kept in
 * qkv_raw and their rstd in qk_rstd (q heads: nT·NH, then k heads: nT·NKV) for the backward */
static void llama_qk_norm_forward(GPT *m, float *qkv, float *qkv_raw, float *qk_rstd, int l, int nT) {
    const Backend *be = m->be;
    int hs = m->hs, C3 = m->C3, Cq = m->Cl;
    float eps = llama_eps(&m->cfg);
    be->copy(qkv_raw, qkv, (size_t)nT * C3 * sizeof(float));
    be->rmsnorm_forward(qkv, qk_rstd, qkv_raw, at(m->p[LLAMA_QNORMW], l, hs), nT, m->NHl, hs, C3, eps);
    be->rmsnorm_forward(qkv + Cq, qk_rstd + (size_t)nT * m->NHl, qkv_raw + Cq, at(m->p[LLAMA_KNORMW], l, hs), nT,
                        m->NKVl, hs, C3, eps);
}

/* the backward of llama_qk_norm_forward: dqkv (nT, C3) → draw (nT, C3) (overwritten): the q and k heads
 * through the norms, the v heads copied */
static void llama_qk_norm_backward(GPT *m, float *draw, const float *dqkv, const float *qkv_raw,
                                   const float *qk_rstd, int l, int nT) {
    const Backend *be = m->be;
    int hs = m->hs, C3 = m->C3, Cq = m->Cl, Ckv = m->NKVl * hs;
    /* under TP the norm weights are replicated but each rank sees its heads only: their gradients go
     * through scratch, are summed over the group, then added */
    float *gq = at(m->g[LLAMA_QNORMW], l, hs), *gk = at(m->g[LLAMA_KNORMW], l, hs);
    if (m->s.dqknorm) {
        gq = m->s.dqknorm;
        gk = m->s.dqknorm + hs;
        be->zero(m->s.dqknorm, 2 * (size_t)hs * sizeof(float));
    }
    be->zero(draw, (size_t)nT * C3 * sizeof(float));
    be->rmsnorm_backward(draw, gq, dqkv, qkv_raw, at(m->p[LLAMA_QNORMW], l, hs), qk_rstd, nT, m->NHl, hs, C3);
    be->rmsnorm_backward(draw + Cq, gk, dqkv + Cq, qkv_raw + Cq, at(m->p[LLAMA_KNORMW], l, hs),
                         qk_rstd + (size_t)nT * m->NHl, nT, m->NKVl, hs, C3);
    if (m->s.dqknorm) {
        llama_tp_sum(m, m->s.dqknorm, 2 * (size_t)hs);
        llama_add(m, at(m->g[LLAMA_QNORMW], l, hs), gq, (size_t)hs);
        llama_add(m, at(m->g[LLAMA_KNORMW], l, hs), gk, (size_t)hs);
    }
    /* the v heads pass through: a row at a time (the backend has no strided copy) */
    for (int r = 0; r < nT; r++)
        be->copy(draw + (size_t)r * C3 + Cq + Ckv, dqkv + (size_t)r * C3 + Cq + Ckv, (size_t)Ckv * sizeof(float));
}

/* the q heads and k|v heads of layer l for n rows of in (n, C) straight from qw and kvw (with qb, kvb) into
 * the packed rows out (n, C3), each weight read once (no packing copy of the weights): decode, and the
 * forward of a model with a bf16 copy */
static void llama_qkv_rows(GPT *m, int l, float *out, const float *in, int n) {
    int C = m->cfg.C, C3 = m->C3, Cq = m->Cl, Ckv2 = m->C3 - m->Cl;
    const float *qb = m->cfg.qkv_bias ? at(m->p[LLAMA_QB], l, (size_t)Cq) : NULL;
    const float *kvb = m->cfg.qkv_bias ? at(m->p[LLAMA_KVB], l, (size_t)Ckv2) : NULL;
    gpt_decode_mm(m, out, in, at(m->p[LLAMA_QW], l, (size_t)Cq * C), qb, n, C, Cq, C3);
    gpt_decode_mm(m, out + Cq, in, at(m->p[LLAMA_KVW], l, (size_t)Ckv2 * C), kvb, n, C, Ckv2, C3);
}

/* res2 = res + o_proj(attention(rope(qk_norm(qkv(rmsnorm(res)))))) over n rows of T tokens */
static void llama_attn_forward(GPT *m, const LlamaActs *x, int l, int n) {
    const Backend *be = m->be;
    const GPTConfig *c = &m->cfg;
    int T = m->T, nT = n * T, C = c->C, C3 = m->C3, Cq = m->Cl;
    be->rmsnorm_forward(x->ln1, x->rstd1, x->res, at(m->p[LLAMA_LN1W], l, C), nT, 1, C, C, llama_eps(c));
    if (m->wbf16) { /* the bf16 copy's q and k|v weights straight into the packed rows */
        llama_qkv_rows(m, l, x->qkv, x->ln1, nT);
    } else { /* column-parallel: this rank's heads */
        llama_pack_qkv(m, l);
        be->matmul_forward(x->qkv, x->ln1, m->a.wqkv, m->a.bqkv, nT, C, C3);
    }
    if (c->qk_norm) llama_qk_norm_forward(m, x->qkv, x->qkv_raw, x->qk_rstd, l, nT);
    be->rope_forward(x->qkv, m->inv_freq, n, T, m->NHl + m->NKVl, m->hs, C3, 0);
    be->attention_forward(x->atty, x->preatt, x->att, x->qkv, n, T, Cq, m->NHl, m->NKVl);
    /* row-parallel: this rank's heads' share, summed over the TP group */
    gpt_forward_mm(m, x->attproj, x->atty, at(m->p[LLAMA_ATTPROJW], l, (size_t)C * Cq), NULL, nT, Cq, C);
    llama_tp_sum(m, x->attproj, (size_t)nT * C);
    be->residual_forward(x->res2, x->res, x->attproj, (size_t)nT * C);
}

/* dres: d res2 on entry, d res on return */
static void llama_attn_backward(GPT *m, const LlamaActs *x, float *dres, int l, int n) {
    const Backend *be = m->be;
    const GPTConfig *c = &m->cfg;
    GPTGradScratch *s = &m->s;
    int T = m->T, nT = n * T, C = c->C, C3 = m->C3, Cq = m->Cl;
    be->zero(s->datty, (size_t)nT * Cq * sizeof(float));
    be->zero(s->dqkv, (size_t)nT * C3 * sizeof(float));
    be->zero(s->dln, (size_t)nT * C * sizeof(float));
    be->matmul_backward(s->datty, at(m->g[LLAMA_ATTPROJW], l, (size_t)C * Cq), NULL, dres, x->atty,
                        at(m->p[LLAMA_ATTPROJW], l, (size_t)C * Cq), nT, Cq, C);
    be->attention_backward(s->dqkv, s->dpreatt, s->datt, s->datty, x->qkv, x->att, n, T, Cq, m->NHl, m->NKVl);
    be->rope_backward(s->dqkv, m->inv_freq, n, T, m->NHl + m->NKVl, m->hs, C3, 0);
    float *dmm = s->dqkv; /* d of the qkv matmul's output */
    if (c->qk_norm) {
        llama_qk_norm_backward(m, s->dqkv_raw, s->dqkv, x->qkv_raw, x->qk_rstd, l, nT);
        dmm = s->dqkv_raw;
    }
    llama_pack_qkv(m, l);
    be->zero(s->dwqkv, (size_t)C3 * C * sizeof(float));
    if (s->dbqkv) be->zero(s->dbqkv, (size_t)C3 * sizeof(float));
    be->matmul_backward(s->dln, s->dwqkv, s->dbqkv, dmm, x->ln1, m->a.wqkv, nT, C, C3);
    llama_unpack_qkv_grad(m, l);
    llama_tp_sum(m, s->dln, (size_t)nT * C); /* this rank's heads' share of d ln1 */
    be->rmsnorm_backward(dres, at(m->g[LLAMA_LN1W], l, C), s->dln, x->res, at(m->p[LLAMA_LN1W], l, C), x->rstd1, nT,
                         1, C, C);
}

/* ---- MLP ------------------------------------------------------------------ */

/* res3 = res2 + down(silu(gate)·up) of rmsnorm(res2) */
static void llama_mlp_forward(GPT *m, const LlamaActs *x, int l, int n) {
    const Backend *be = m->be;
    const GPTConfig *c = &m->cfg;
    int nT = n * m->T, C = c->C, F = m->F;
    be->rmsnorm_forward(x->ln2, x->rstd2, x->res2, at(m->p[LLAMA_LN2W], l, C), nT, 1, C, C, llama_eps(c));
    gpt_forward_mm(m, x->fch, x->ln2, at(m->p[LLAMA_FCW], l, (size_t)2 * F * C), NULL, nT, C, 2 * F);
    be->swiglu_forward(x->fchg, x->fch, nT, F);
    gpt_forward_mm(m, x->fcproj, x->fchg, at(m->p[LLAMA_FCPROJW], l, (size_t)C * F), NULL, nT, F, C);
    llama_tp_sum(m, x->fcproj, (size_t)nT * C); /* row-parallel: this rank's MLP columns' share */
    be->residual_forward(x->res3, x->res2, x->fcproj, (size_t)nT * C);
}

/* dres: d res3 on entry, d res2 on return */
static void llama_mlp_backward(GPT *m, const LlamaActs *x, float *dres, int l, int n) {
    const Backend *be = m->be;
    GPTGradScratch *s = &m->s;
    int nT = n * m->T, C = m->cfg.C, F = m->F;
    be->zero(s->dfch_gelu, (size_t)nT * F * sizeof(float));
    be->zero(s->dfch, (size_t)nT * 2 * F * sizeof(float));
    be->zero(s->dln, (size_t)nT * C * sizeof(float));
    be->matmul_backward(s->dfch_gelu, at(m->g[LLAMA_FCPROJW], l, (size_t)C * F), NULL, dres, x->fchg,
                        at(m->p[LLAMA_FCPROJW], l, (size_t)C * F), nT, F, C);
    be->swiglu_backward(s->dfch, s->dfch_gelu, x->fch, nT, F);
    be->matmul_backward(s->dln, at(m->g[LLAMA_FCW], l, (size_t)2 * F * C), NULL, s->dfch, x->ln2,
                        at(m->p[LLAMA_FCW], l, (size_t)2 * F * C), nT, C, 2 * F);
    llama_tp_sum(m, s->dln, (size_t)nT * C); /* this rank's MLP columns' share of d ln2 */
    be->rmsnorm_backward(dres, at(m->g[LLAMA_LN2W], l, C), s->dln, x->res2, at(m->p[LLAMA_LN2W], l, C), x->rstd2, nT,
                         1, C, C);
}

/* ---- layers, head ------------------------------------------------------------ */

void llama_layer_forward(GPT *m, int l, int r0, int n) {
    LlamaActs x = llama_acts(m, l, r0);
    llama_attn_forward(m, &x, l, n);
    llama_mlp_forward(m, &x, l, n);
}

void llama_layer_backward(GPT *m, int l, int r0, int n) {
    LlamaActs x = llama_acts(m, l, r0);
    float *dres = m->s.dresidual + (size_t)r0 * m->T * m->cfg.C;
    llama_mlp_backward(m, &x, dres, l, n);
    llama_attn_backward(m, &x, dres, l, n);
}

void llama_final_norm_forward(GPT *m, float *lnf, float *rstd, const float *out, int n) {
    int C = m->cfg.C;
    m->be->rmsnorm_forward(lnf, rstd, out, m->p[LLAMA_LNFW], n, 1, C, C, llama_eps(&m->cfg));
}

void llama_final_norm_backward(GPT *m, float *dinp, const float *dlnf, const float *out, const float *rstd, int n) {
    int C = m->cfg.C;
    m->be->rmsnorm_backward(dinp, m->g[LLAMA_LNFW], dlnf, out, m->p[LLAMA_LNFW], rstd, n, 1, C, C);
}

const float *llama_head(const GPT *m) { return m->cfg.untied ? m->p[LLAMA_LMHEAD] : m->p[LLAMA_WTE]; }
float *llama_head_grad(GPT *m) { return m->cfg.untied ? m->g[LLAMA_LMHEAD] : m->g[LLAMA_WTE]; }

/* ---- KV-cached decoding --------------------------------------------------------- */

/* layer l of one token per sequence at position pos: d_x (B, C) in place, the cache written at pos */
static void llama_decode_layer(GPT *m, int l, int B, int pos, float *kc, float *vc) {
    const Backend *be = m->be;
    const GPTConfig *c = &m->cfg;
    int C = c->C, C3 = m->C3, Cq = m->Cl, F = m->F;
    float eps = llama_eps(c);
    be->rmsnorm_forward(m->d_ln, m->d_rstd, m->d_x, at(m->p[LLAMA_LN1W], l, C), B, 1, C, C, eps);
    llama_qkv_rows(m, l, m->d_qkv, m->d_ln, B);
    if (c->qk_norm) llama_qk_norm_forward(m, m->d_qkv, m->d_qkv_raw, m->d_qk_rstd, l, B);
    if (!m->dec_pos_host) be->rope_forward(m->d_qkv, m->inv_freq, B, 1, m->NHl + m->NKVl, m->hs, C3, pos);
    for (int b = 0; m->dec_pos_host && b < B; b++) /* each row at its own position */
        be->rope_forward(m->d_qkv + (size_t)b * C3, m->inv_freq, 1, 1, m->NHl + m->NKVl, m->hs, C3, m->dec_pos_host[b]);
    be->attention_decode(m->d_atty, kc, vc, m->d_qkv, m->dec_slots, m->dec_pos, B, pos, m->Tmax, Cq, m->NHl, m->NKVl);
    gpt_decode_mm(m, m->d_tmp, m->d_atty, at(m->p[LLAMA_ATTPROJW], l, (size_t)C * Cq), NULL, B, Cq, C, C);
    llama_tp_sum(m, m->d_tmp, (size_t)B * C);
    be->residual_forward(m->d_x, m->d_x, m->d_tmp, (size_t)B * C);
    be->rmsnorm_forward(m->d_ln, m->d_rstd, m->d_x, at(m->p[LLAMA_LN2W], l, C), B, 1, C, C, eps);
    gpt_decode_mm(m, m->d_fch, m->d_ln, at(m->p[LLAMA_FCW], l, (size_t)2 * F * C), NULL, B, C, 2 * F, 2 * F);
    be->swiglu_forward(m->d_fchg, m->d_fch, B, F);
    gpt_decode_mm(m, m->d_tmp, m->d_fchg, at(m->p[LLAMA_FCPROJW], l, (size_t)C * F), NULL, B, F, C, C);
    llama_tp_sum(m, m->d_tmp, (size_t)B * C);
    be->residual_forward(m->d_x, m->d_x, m->d_tmp, (size_t)B * C);
}

void llama_decode(GPT *m, int B, int pos) {
    int C = m->cfg.C;
    size_t kvl = (size_t)m->Bmax * m->NKVl * m->Tmax * m->hs; /* one layer of the cache */
    gpt_decode_embed(m, m->p[LLAMA_WTE], m->zero_pos, B, pos);
    for (int l = 0; l < m->cfg.L; l++) llama_decode_layer(m, l, B, pos, m->kcache + l * kvl, m->vcache + l * kvl);
    llama_final_norm_forward(m, m->d_ln, m->d_rstd, m->d_x, B);
    gpt_decode_mm(m, m->d_logits, m->d_ln, llama_head(m), NULL, B, C, gpt_real_vocab(&m->cfg), m->cfg.V);
}

double llama_flops_per_token_fwd(const GPTConfig *c, int T) {
    double C = c->C, L = c->L, V = c->V, hd = gpt_head_dim(c), F = gpt_ffn(c);
    double Cq = c->NH * hd, C3 = Cq + 2.0 * gpt_kv_heads(c) * hd;
    double dense = 2.0 * L * (C3 * C + C * Cq + 3.0 * C * F) + 2.0 * C * (c->value_head ? 1 : V);
    /* causal attention: mean (T+1)/2 keys a token; QK^T and AV 2·Cq flops a key each */
    return dense + L * 4.0 * Cq * (T + 1) / 2.0;
}
