/* import_map.c — the Llama family's tensors as the Hugging Face and GGUF
 * files name them, and an imported model written as a checkpoint
 * (import_int.h). Our q projection is qw; k and v are the two blocks of kvw
 * (their biases: qb, kvb); gate and up the two blocks of fcw. */
#include "import_int.h"

#pragma GCC diagnostic ignored "-Wformat-truncation"

#include <stdio.h>
#include <string.h>

#include "nereus/backend.h"
#include "nereus/ckpt.h"

const TensorInfo *import_tensor_of_role(const TensorInfo *t, int nt, int role) {
    for (int i = 0; i < nt; i++)
        if (t[i].role == role) return &t[i];
    return NULL;
}

int import_llama_pieces(const GPTConfig *c, HfPiece *p) {
    int C = c->C, hd = gpt_head_dim(c), Cq = c->NH * hd, Ckv = gpt_kv_heads(c) * hd, F = gpt_ffn(c), n = 0;
#define P(r, name, nd, rows, cols, off, gg) (p[n++] = (HfPiece){r, name, nd, {rows, cols}, 0, (size_t)(off), gg})
    P(LLAMA_WTE, "model.embed_tokens.weight", 2, c->V, C, 0, "token_embd.weight");
    P(LLAMA_LN1W, "model.layers.%d.input_layernorm.weight", 1, C, 0, 0, "blk.%d.attn_norm.weight");
    P(LLAMA_QW, "model.layers.%d.self_attn.q_proj.weight", 2, Cq, C, 0, "blk.%d.attn_q.weight");
    P(LLAMA_KVW, "model.layers.%d.self_attn.k_proj.weight", 2, Ckv, C, 0, "blk.%d.attn_k.weight");
    P(LLAMA_KVW, "model.layers.%d.self_attn.v_proj.weight", 2, Ckv, C, (size_t)Ckv * C, "blk.%d.attn_v.weight");
    if (c->qkv_bias) {
        P(LLAMA_QB, "model.layers.%d.self_attn.q_proj.bias", 1, Cq, 0, 0, "blk.%d.attn_q.bias");
        P(LLAMA_KVB, "model.layers.%d.self_attn.k_proj.bias", 1, Ckv, 0, 0, "blk.%d.attn_k.bias");
        P(LLAMA_KVB, "model.layers.%d.self_attn.v_proj.bias", 1, Ckv, 0, Ckv, "blk.%d.attn_v.bias");
    }
    if (c->qk_norm) {
        P(LLAMA_QNORMW, "model.layers.%d.self_attn.q_norm.weight", 1, hd, 0, 0, "blk.%d.attn_q_norm.weight");
        P(LLAMA_KNORMW, "model.layers.%d.self_attn.k_norm.weight", 1, hd, 0, 0, "blk.%d.attn_k_norm.weight");
    }
    P(LLAMA_ATTPROJW, "model.layers.%d.self_attn.o_proj.weight", 2, C, Cq, 0, "blk.%d.attn_output.weight");
    P(LLAMA_LN2W, "model.layers.%d.post_attention_layernorm.weight", 1, C, 0, 0, "blk.%d.ffn_norm.weight");
    P(LLAMA_FCW, "model.layers.%d.mlp.gate_proj.weight", 2, F, C, 0, "blk.%d.ffn_gate.weight");
    P(LLAMA_FCW, "model.layers.%d.mlp.up_proj.weight", 2, F, C, (size_t)F * C, "blk.%d.ffn_up.weight");
    P(LLAMA_FCPROJW, "model.layers.%d.mlp.down_proj.weight", 2, C, F, 0, "blk.%d.ffn_down.weight");
    P(LLAMA_LNFW, "model.norm.weight", 1, C, 0, 0, "output_norm.weight");
    if (c->untied) P(LLAMA_LMHEAD, "lm_head.weight", 2, c->V, C, 0, "output.weight");
#undef P
    return n;
}

int import_write_ckpt(const char *out_path, const GPTConfig *c, const float *full, const char *source,
                      const TokSpec *tok, char *why, size_t len) {
    GPT m;
    gpt_build(&m, c, backend_cpu(), 1, 1, 0, 0, 0.02f);
    gpt_import_logical(&m, GPT_BUF_PARAMS, full);
    char plan[4096 + 64];
    snprintf(plan, sizeof plan, "imported from %s (1 process)\n", source);
    CkptMeta meta = {0, 0, 0, "", plan, 0, NULL, 0, tok}; /* the tokenizer written before the file is complete */
    CkptModel ms[2] = {{"actor", c, &m, 1, 0}, {"ref", c, &m, 1, 0}};
    int rc = ckpt_write(out_path, MPI_COMM_SELF, &meta, ms, 2, why, len);
    gpt_free(&m);
    return rc;
}
