/* model.h — a GPT-2 model: parameters as one flat buffer plus a tensor table,
 * forward and backward over the Backend, a scalar value head for the critic
 * and reward networks, and KV-cached incremental decoding.
 *
 * Architecture (GPT-2, as llm.c): token + learned position embeddings, L
 * pre-LN blocks (causal multi-head attention with packed QKV, GELU MLP of
 * width 4C), final LayerNorm, LM head tied to the token embedding. A model
 * built with `value_head` has, in addition, vhw (C) and vhb (1): value[b,t] =
 * lnf[b,t]·vhw + vhb. Tensors are stacked per layer on axis 0 so that the
 * layout module can cut PP on axis 0 and TP on another axis; packed QKV is
 * (L, 3, C, C) so that head-sharding is axis 2.
 *
 * Memory: one allocation each for parameters, gradients, AdamW m, AdamW v
 * (the last three only for trainable models), forward activations sized for
 * (Bmax, Tmax), one layer of backward scratch, and the KV cache. Nothing is
 * allocated in the step loop.
 */
#ifndef NEREUS_MODEL_H
#define NEREUS_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "nereus/backend.h"

typedef struct GPTConfig {
    int V;          /* vocabulary */
    int maxT;       /* positions in wpe */
    int L;          /* layers */
    int C;          /* width */
    int NH;         /* heads */
    int value_head; /* 1: scalar value head (critic, reward network) */
} GPTConfig;

enum {
    GPT_WTE, GPT_WPE, GPT_LN1W, GPT_LN1B, GPT_QKVW, GPT_QKVB, GPT_ATTPROJW, GPT_ATTPROJB,
    GPT_LN2W, GPT_LN2B, GPT_FCW, GPT_FCB, GPT_FCPROJW, GPT_FCPROJB, GPT_LNFW, GPT_LNFB,
    GPT_VHW, GPT_VHB, GPT_NUM_TENSORS
};

/* One logical tensor: where it lives in the flat buffer and its shape. The
 * layout module (a later issue) adds the shard spec beside it. */
typedef struct TensorInfo {
    const char *name;  /* "wte", "qkvw", ... (llm.c names) */
    int ndim;
    int shape[4];
    size_t numel;
    size_t offset;     /* in floats, into params / grads / m / v */
} TensorInfo;

typedef struct GPTActs {
    float *encoded;   /* (B, T, C) */
    float *ln1;       /* (L, B, T, C) */
    float *ln1_mean, *ln1_rstd;   /* (L, B, T) */
    float *qkv;       /* (L, B, T, 3C) */
    float *atty;      /* (L, B, T, C) */
    float *preatt;    /* (L, B, NH, T, T) */
    float *att;       /* (L, B, NH, T, T) */
    float *attproj;   /* (L, B, T, C) */
    float *residual2; /* (L, B, T, C) */
    float *ln2;       /* (L, B, T, C) */
    float *ln2_mean, *ln2_rstd;   /* (L, B, T) */
    float *fch;       /* (L, B, T, 4C) */
    float *fch_gelu;  /* (L, B, T, 4C) */
    float *fcproj;    /* (L, B, T, C) */
    float *residual3; /* (L, B, T, C) */
    float *lnf;       /* (B, T, C) */
    float *lnf_mean, *lnf_rstd;   /* (B, T) */
    float *logits;    /* (B, T, V): logits, then probs after gpt_logprob */
    float *values;    /* (B, T) value head output */
} GPTActs;

/* Backward scratch: one layer's worth, reused layer by layer. */
typedef struct GPTGradScratch {
    float *dresidual; /* (B, T, C) running gradient of the residual stream */
    float *dln;       /* (B, T, C) */
    float *dqkv;      /* (B, T, 3C) */
    float *datty;     /* (B, T, C) */
    float *dpreatt;   /* (B, NH, T, T) */
    float *datt;      /* (B, NH, T, T) */
    float *dfch;      /* (B, T, 4C) */
    float *dfch_gelu; /* (B, T, 4C) */
    float *dtmp;      /* (B, T, C) */
    float *dlogits;   /* (B, T, V) (aliases acts.logits) */
    float *dvalues;   /* (B, T) */
} GPTGradScratch;

typedef struct GPT {
    GPTConfig cfg;
    const Backend *be;
    TensorInfo tensors[GPT_NUM_TENSORS];
    int ntensors;          /* GPT_NUM_TENSORS with value head, GPT_VHW without */
    size_t nparams;
    float *params;         /* (nparams) */
    float *grads, *m, *v;  /* (nparams) each; NULL unless trainable */
    float *p[GPT_NUM_TENSORS], *g[GPT_NUM_TENSORS]; /* named pointers into params / grads */
    int trainable;
    int adam_t;            /* AdamW steps taken */
    int Bmax, Tmax;        /* activation capacity */
    int B, T;              /* shape of the last forward */
    int *tokens;           /* (Bmax, Tmax) host copy of the last forward's tokens */
    int *targets;          /* (Bmax, Tmax) targets of the last gpt_logprob (−1 = skip) */
    GPTActs a;
    GPTGradScratch s;
    float *acts_mem, *scratch_mem;
    /* KV cache and single-token decode activations */
    float *kcache, *vcache;   /* (L, Bmax, NH, Tmax, hs) each */
    float *d_x, *d_ln, *d_qkv, *d_atty, *d_tmp, *d_fch, *d_fchg, *d_logits; /* decode: (Bmax, ·) */
    float *d_mean, *d_rstd;   /* (Bmax) decode LayerNorm statistics */
    float *logp, *ent;        /* (Bmax, Tmax) outputs of gpt_logprob */
    float *dlogp, *dent;      /* (Bmax, Tmax) inputs of gpt_backward */
    float *decode_mem;
} GPT;

/* Build: lay out the tensor table, allocate everything for batches of up to
 * Bmax sequences of up to Tmax tokens, and initialise the parameters from
 * (seed) as GPT-2 does: N(0, std) for weights, residual projections scaled
 * by 1/sqrt(2L), zero biases, unit LayerNorm gains, value head zero. */
void gpt_build(GPT *m, const GPTConfig *cfg, const Backend *be, int Bmax, int Tmax,
               int trainable, uint64_t seed, float init_std);
void gpt_free(GPT *m);

/* Copy all parameters that both models have (by name and shape): e.g. the
 * critic trunk from the SFT actor. Value-head tensors are left as they are. */
void gpt_copy_params(GPT *dst, const GPT *src);

/* Forward over tokens (B, T) (host ints). Computes the trunk and, as asked,
 * the logits (B,T,V) and/or the values (B,T). */
void gpt_forward(GPT *m, const int *tokens, int B, int T, int want_logits, int want_values);

/* After a forward with logits: logp (B,T) of targets (B,T) (−1 = skip → 0),
 * entropy ent (B,T) (may be NULL). Turns the logits into probs in place. */
void gpt_logprob(GPT *m, const int *targets, float *logp, float *ent);

/* Backward of a scalar loss given dloss/dlogp (B,T), dloss/dent (B,T) (may be
 * NULL) and/or dloss/dvalues (B,T) (may be NULL). Accumulates into m->grads. */
void gpt_backward(GPT *m, const float *dlogp, const float *dent, const float *dvalues);

void gpt_zero_grad(GPT *m);
/* Clip the global gradient norm to max_norm (0 = no clip), take one AdamW
 * step. Returns the gradient norm before clipping. */
float gpt_update(GPT *m, float lr, float beta1, float beta2, float eps, float wd, float max_norm);

/* KV-cached decoding. gpt_prefill runs the prompt tokens (B, P) through the
 * model, fills the cache, and leaves the last position's logits (B, V) in
 * m->d_logits (backend memory; also copied to the host array logits_out
 * unless it is NULL). gpt_decode then consumes one token per sequence at
 * position pos (= P, P+1, ...) and leaves the next logits the same way. */
void gpt_prefill(GPT *m, const int *tokens, int B, int P, float *logits_out);
void gpt_decode(GPT *m, const int *tok, int B, int pos, float *logits_out);

/* Parameter checksum over the logical tensors: Σ|x| in double, in logical
 * element order, so the same weights give the same value under any layout. */
double gpt_checksum(const GPT *m);

/* Forward FLOPs per token for a sequence of length T (2·params in matmuls
 * plus attention), used for GFLOP/s figures. */
double gpt_flops_per_token_fwd(const GPTConfig *c, int T);

#endif
