/* backend.h — the kernel interface every model computation goes through.
 *
 * A Backend is a struct of function pointers (as in nccl-tests), filled by one
 * small file per implementation: src/backend/cpu/ (fp32, OpenBLAS for every
 * GEMM) and, in a later issue, cuda/ (cuBLAS). The model never calls BLAS or
 * CUDA itself; it calls be->op(...).
 *
 * Conventions (llm.c): outputs first, then inputs, then sizes, all row-major.
 * Every forward has a backward with the same shapes. Backward functions
 * ACCUMULATE (+=) into parameter gradients and input gradients unless the
 * comment says "overwrites"; any gradient pointer may be NULL to skip it.
 * Buffers live in backend memory (host memory for the CPU backend): allocate
 * them with be->alloc and move data with be->upload / be->download.
 */
#ifndef NEREUS_BACKEND_H
#define NEREUS_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct Backend {
    const char *name; /* "cpu" or "cuda" */

    /* --- memory ------------------------------------------------------- */
    void *(*alloc)(size_t bytes);               /* zero-filled; aborts on failure */
    void *(*alloc_uninit)(size_t bytes);        /* contents unspecified (reused memory may hold old data):
                                                   for buffers written in full before they are read, e.g. a
                                                   transition's new shard; NULL: use alloc */
    void (*free)(void *p);
    size_t (*mem_live)(void);                   /* bytes allocated by alloc and not yet freed (rounded up) */
    size_t (*trim)(void);                       /* gives memory that free kept for reuse back to the system;
                                                   returns its bytes (NULL: the backend keeps none) */
    void (*upload)(void *dst, const void *host_src, size_t bytes);
    void (*download)(void *host_dst, const void *src, size_t bytes);
    void (*copy)(void *dst, const void *src, size_t bytes);   /* backend to backend */
    void (*zero)(void *p, size_t bytes);
    void (*set_threads)(int nthreads);          /* BLAS / kernel threads per rank */

    /* --- dense layers ------------------------------------------------- */
    /* out (N, OC) = inp (N, IC) · weight(OC, IC)^T + bias (OC); bias may be NULL. The CPU backend is
     * batch-invariant: a row's outputs are a function of its own input row (the row-dot order of
     * rowdot.c), the same bits whatever N, whatever the other rows, on every kernel path; cuBLAS is
     * not (docs/NUMERICS.md). */
    void (*matmul_forward)(float *out, const float *inp, const float *weight,
                           const float *bias, int N, int IC, int OC);
    /* The GEMM of a decode step: out (N, ldo), its first OC columns = inp (N, IC) · weight (OC, IC)^T
     * + bias (OC) (bias may be NULL); columns [OC, ldo) are not written (the LM head over the real
     * vocabulary of a padded embedding leaves the padding ids out). N is a few rows, one token per
     * sequence still generating: the weight is read from memory once for all N rows. The CPU backend
     * streams it through a register-blocked kernel up to DECODE_NARROW_MAX rows (OpenBLAS's sgemm and
     * sgemv reach a third to a half of the read bandwidth there) and runs matmul_forward's GEMM above;
     * both sum in the row-dot order, so each output row is the bits matmul_forward gives that row,
     * whatever N and the other rows. */
    void (*matmul_decode)(float *out, const float *inp, const float *weight, const float *bias,
                          int N, int IC, int OC, int ldo);
    /* matmul_decode with the weight in bfloat16 (the upper 16 bits of a float, widened exactly), half the
     * bytes a decode step reads; the CPU backend sums in the row-dot order over the widened weights, so a
     * row's bits depend on its own input row only. NULL where a backend has none (the model then decodes
     * in fp32). */
    void (*matmul_decode_bf16)(float *out, const float *inp, const uint16_t *weight, const float *bias,
                               int N, int IC, int OC, int ldo);
    /* dst (n) = src (n) rounded to bfloat16 (to nearest, ties to even); NULL with matmul_decode_bf16 */
    void (*to_bf16)(uint16_t *dst, const float *src, size_t n);
    /* dinp (N,IC) += dout·weight; dweight (OC,IC) += dout^T·inp; dbias (OC) += Σ_n dout */
    void (*matmul_backward)(float *dinp, float *dweight, float *dbias,
                            const float *dout, const float *inp, const float *weight,
                            int N, int IC, int OC);

    /* out, inp (N, C); weight, bias (C); mean, rstd (N) saved for backward */
    void (*layernorm_forward)(float *out, float *mean, float *rstd, const float *inp,
                              const float *weight, const float *bias, int N, int C);
    void (*layernorm_backward)(float *dinp, float *dweight, float *dbias,
                               const float *dout, const float *inp, const float *weight,
                               const float *mean, const float *rstd, int N, int C);

    /* GELU, tanh approximation (GPT-2). out, inp (N) */
    void (*gelu_forward)(float *out, const float *inp, size_t N);
    void (*gelu_backward)(float *dinp, const float *inp, const float *dout, size_t N);

    /* out = a + b (N); backward: da += dout, db += dout */
    void (*residual_forward)(float *out, const float *a, const float *b, size_t N);
    void (*residual_backward)(float *da, float *db, const float *dout, size_t N);

    /* --- attention ---------------------------------------------------- */
    /* Causal grouped-query self-attention over packed QKV. NH query heads and
     * NKV key/value heads (NH % NKV == 0; NKV == NH is multi-head attention),
     * hs = C / NH, C3 = C + 2·NKV·hs. Query head h reads key/value head
     * h / (NH / NKV) (transformers' repeat_kv).
     * inp (B, T, C3): per token [q (NH,hs) | k (NKV,hs) | v (NKV,hs)].
     * out (B, T, C); preatt, att (B, NH, T, T) saved for backward (att = softmax
     * of scaled, causally masked preatt; entries above the diagonal are 0). */
    void (*attention_forward)(float *out, float *preatt, float *att, const float *inp,
                              int B, int T, int C, int NH, int NKV);
    /* dinp (B,T,C3) +=; dpreatt, datt (B,NH,T,T) are scratch (overwritten). */
    void (*attention_backward)(float *dinp, float *dpreatt, float *datt,
                               const float *dout, const float *inp, const float *att,
                               int B, int T, int C, int NH, int NKV);
    /* KV-cache decode of one new token per sequence at position pos (0-based).
     * qkv (B, C3) for the new tokens; kcache, vcache (Bmax, NKV, Tmax, hs): row b
     * is the sequence in cache slot slots[b] (slots (B), backend memory; NULL:
     * slot b), so finished sequences leave the batch without moving the cache.
     * rowpos (B, backend memory) gives each row its own position, every one at most
     * pos (sequences whose prompts differ in length); NULL: every row at pos.
     * Each (slot, head) reads Tmax·hs contiguous floats. The new k, v are written
     * at [slot, .., pos, ..] then attended over positions 0..pos. out (B, C).
     * Must equal attention_forward's row `pos` on the same tokens. */
    void (*attention_decode)(float *out, float *kcache, float *vcache, const float *qkv,
                             const int *slots, const int *rowpos, int B, int pos, int Tmax, int C, int NH, int NKV);
    /* Fill the cache from a prefix already run through attention_forward:
     * qkv (B, T, C3) → kcache, vcache (B, NKV, Tmax, hs) positions 0..T-1. */
    void (*kv_fill)(float *kcache, float *vcache, const float *qkv,
                    int B, int T, int Tmax, int C, int NH, int NKV);

    /* --- Llama / Qwen family ------------------------------------------ */
    /* RMSNorm (transformers' LlamaRMSNorm): y = x · rsqrt(mean(x²) + eps) · weight.
     * Rows of C floats in a strided layout, so that Qwen3's QK-norm runs on
     * the heads inside packed per-token rows without copies: N groups of H
     * rows, row (n, h) at n·ld + h·C (ld ≥ H·C) in inp, out, dout and dinp
     * alike. A plain (N, C) tensor is H = 1, ld = C; the q heads of a packed
     * QKV row are H = NH, C = hs, ld = C3 (the k heads: pointers + NH·hs,
     * H = NKV). weight (C); rstd (N·H) saved per row for the backward. */
    void (*rmsnorm_forward)(float *out, float *rstd, const float *inp, const float *weight,
                            int N, int H, int C, int ld, float eps);
    /* dinp (rows as inp) +=, dweight (C) += */
    void (*rmsnorm_backward)(float *dinp, float *dweight, const float *dout, const float *inp,
                             const float *weight, const float *rstd, int N, int H, int C, int ld);

    /* Rotary position embedding, transformers' rotate_half convention (pairs
     * i and i + hs/2): at position p, for i < hs/2, a = p·inv_freq[i] (float),
     *   x[i] ← x[i]·cos a − x[i+hs/2]·sin a, x[i+hs/2] ← x[i+hs/2]·cos a + x[i]·sin a.
     * IN PLACE on x (B, T, ld): heads 0..NH-1 of hs floats at the start of
     * each row (q and k of a packed QKV row are contiguous: NH + NKV heads,
     * ld = C3); token t is at position pos0 + t. inv_freq (hs/2) from
     * rope_inv_freq (nereus/rope.h), in backend memory. */
    void (*rope_forward)(float *x, const float *inv_freq, int B, int T, int NH, int hs, int ld,
                         int pos0);
    /* The transposed rotation, IN PLACE on the gradient dx (same layout):
     * turns the gradient of the rotated x into that of the unrotated x. */
    void (*rope_backward)(float *dx, const float *inv_freq, int B, int T, int NH, int hs, int ld,
                          int pos0);

    /* SwiGLU: inp (N, 2F) per row [gate (F) | up (F)] → out (N, F) =
     * silu(gate)·up, silu(g) = g / (1 + e^−g). Backward: dinp (N, 2F) +=. */
    void (*swiglu_forward)(float *out, const float *inp, int N, int F);
    void (*swiglu_backward)(float *dinp, const float *dout, const float *inp, int N, int F);

    /* --- embeddings --------------------------------------------------- */
    /* out (B,T,C) = wte[inp[b,t]] + wpe[t + pos0]; inp (B,T); wte (V,C); wpe (maxT,C) */
    void (*encoder_forward)(float *out, const int *inp, const float *wte, const float *wpe,
                            int B, int T, int C, int pos0);
    void (*encoder_backward)(float *dwte, float *dwpe, const float *dout, const int *inp,
                             int B, int T, int C, int pos0);

    /* --- output heads ------------------------------------------------- */
    /* Log-probability of a target token, with entropy, over rows of logits.
     * Rows are ld floats apart (ld >= V): the softmax runs over the first V
     * columns, the real vocabulary; columns [V, ld) are padding rows of the
     * embedding (llm.c's Vp) and take no probability. logits (N, ld) →
     * probs (N, ld) (softmax over [0, V); may alias logits; columns [V, ld)
     * left as they are), logp (N) = log p[target], ent (N) = −Σ p log p (ent
     * may be NULL). targets[n] < 0 marks a row to skip (logp = ent = 0, probs
     * left unspecified). */
    void (*logprob_forward)(float *probs, float *logp, float *ent, const float *logits,
                            const int *targets, int N, int V, int ld);
    /* dlogits (N, ld) OVERWRITES (may alias probs):
     *   dlogp[n]·(onehot(target) − p) + dent[n]·(−p·(log p + H)) on [0, V), 0 on [V, ld).
     * dent may be NULL; skipped rows (target < 0) get 0. */
    void (*logprob_backward)(float *dlogits, const float *dlogp, const float *dent,
                             const float *probs, const float *ent, const int *targets,
                             int N, int V, int ld);

    /* Sampling from logits (B, ld) over the first V columns (ids [V, ld) are
     * padding and never returned): temperature > 0 scales, top_k > 0 keeps the k
     * largest (ties by lower index), u (B) one uniform in [0,1) per row, so the
     * choice is a pure function of (logits, u). temperature == 0 is argmax. */
    void (*sample_tokens)(int *out, const float *logits, const float *u,
                          int B, int V, int ld, float temperature, int top_k);

    /* --- PPO per-token losses ----------------------------------------- */
    /* Clipped surrogate over N tokens, weight w (N) (mask / normaliser):
     *   ratio = exp(logp − logp_old); l = max(−A·ratio, −A·clip(ratio, 1 − eps_lo, 1 + eps_hi))
     * (eps_hi > eps_lo: DAPO's clip-higher)
     * loss (1) = Σ w·l; dlogp (N) OVERWRITES = w·∂l/∂logp; clipfrac (1) = Σ w·[clipped]
     * / Σ w; approx_kl (1) = Σ w·(ratio−1−log ratio) / Σ w. */
    void (*ppo_policy_loss)(float *loss, float *dlogp, float *clipfrac, float *approx_kl,
                            const float *logp, const float *logp_old, const float *adv,
                            const float *w, int N, float eps_lo, float eps_hi);
    /* Clipped value loss: vc = v_old + clip(v − v_old, ±eps);
     *   l = 0.5·max((v − R)², (vc − R)²); loss (1) = Σ w·l; dv (N) OVERWRITES. */
    void (*ppo_value_loss)(float *loss, float *dv, const float *v, const float *v_old,
                           const float *ret, const float *w, int N, float eps);

    /* --- optimiser ---------------------------------------------------- */
    /* AdamW with bias correction, step t ≥ 1; decoupled weight decay wd·lr·p.
     * params, grads, m, v (n). The gradient used is grad_scale·grads (the
     * global-norm clip, folded in so that clipping costs no extra pass). */
    void (*adamw_update)(float *params, const float *grads, float *m, float *v, size_t n,
                         float lr, float beta1, float beta2, float eps, float wd,
                         float grad_scale, int t);
    /* Σ g² over n elements, accumulated in double (for gradient-norm clipping);
     * the same value for the same thread count, run after run */
    double (*sumsq)(const float *g, size_t n);
} Backend;

/* The CPU backend (always available). */
const Backend *backend_cpu(void);

/* 1 when the backend's buffers are host memory (the CPU backend): the host may read and write them in place,
   MPI and HDF5 included, with no staging copy through upload / download */
static inline int backend_host_memory(const Backend *be) { return strcmp(be->name, "cpu") == 0; }

/* Choose a backend by name: "cpu", "cuda" or "auto". Returns NULL and fills
 * why (a sentence) when the request cannot be met (e.g. cuda not built). */
const Backend *backend_select(const char *name, char *why, size_t why_len);

#endif
