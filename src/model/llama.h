/* llama.h — the Llama family's layers inside the model (gpt.c calls them
 * where an architecture differs from GPT-2; model.h has the architecture,
 * the shapes, the tensors and their TP and PP cuts). Private to src/model.
 */
#ifndef NEREUS_MODEL_LLAMA_H
#define NEREUS_MODEL_LLAMA_H

#include "nereus/model.h"

/* the activation block that layer l's forward writes: l where every layer's is kept, else the one block */
static inline size_t gpt_act_layer(const GPT *m, int l) { return m->La > 1 ? (size_t)l : 0; }

/* RoPE inverse frequencies (hs/2) of the config into m->inv_freq (backend memory) */
void llama_rope_init(GPT *m);
/* local layer l forward on rows [r0, r0 + n) of the (m->B, m->T) batch */
void llama_layer_forward(GPT *m, int l, int r0, int n);
/* local layer l backward on rows [r0, r0 + n): s->dresidual's rows hold d of the layer's output on entry
 * and d of its input on return (as gpt.c's GPT-2 layer) */
void llama_layer_backward(GPT *m, int l, int r0, int n);
/* final RMSNorm of n rows: out (n, C) → lnf, rstd; and its backward into dinp (+=) */
void llama_final_norm_forward(GPT *m, float *lnf, float *rstd, const float *out, int n);
void llama_final_norm_backward(GPT *m, float *dinp, const float *dlnf, const float *out, const float *rstd, int n);
/* the output head's weights (V, C) and their gradient: lm_head, or wte when tied */
const float *llama_head(const GPT *m);
float *llama_head_grad(GPT *m);
/* one token per sequence at position pos (tokens already in m->tokens, row b at cache slot m->dec_slots[b], NULL:
 * slot b): the cache filled at pos, the next real-vocabulary
 * logits (B, V) in m->d_logits */
void llama_decode(GPT *m, int B, int pos);
/* gpt.c: a decode step's token embeddings into m->d_x, each row at its own position where the step has them */
void gpt_decode_embed(GPT *m, const float *wte, const float *wpe, int n, int pos);
/* gpt.c: a decode GEMM of weight w (a pointer into m->params): the bf16 copy's where the model has one */
void gpt_decode_mm(GPT *m, float *out, const float *in, const float *w, const float *bias, int n, int IC, int OC,
                   int ldo);
/* gpt.c: a forward GEMM of weight w (a pointer into m->params), out (n, OC): the bf16 copy's where the model
   has one, through the decode kernel (batch-invariant at any row count), else the backend's matmul_forward */
void gpt_forward_mm(GPT *m, float *out, const float *in, const float *w, const float *bias, int n, int IC, int OC);
double llama_flops_per_token_fwd(const GPTConfig *c, int T);

#endif
