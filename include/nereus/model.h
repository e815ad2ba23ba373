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
 * Tensor parallelism (Megatron): a model built with gpt_build_shard and
 * tp > 1 holds, on each rank of its TP group, heads [r·NH/tp, (r+1)·NH/tp)
 * of q, k and v (qkvw, qkvb cut on axis 2), the matching input columns of
 * attprojw (axis 2), and columns [r·4C/tp, ...) of the MLP (fcw, fcb on
 * axis 1, fcprojw on axis 2); every other tensor (embeddings and the tied LM
 * head, LayerNorms, attprojb, fcprojb, value head) is replicated. The
 * partial outputs of attproj and fcproj are summed over the TP group (the
 * replicated bias enters once, on TP rank 0, before the sum), and in
 * backward the partial gradients flowing into ln1 and ln2's outputs are
 * summed before the LayerNorm backward, so every activation of the residual
 * stream, the logits, the values, and every replicated parameter and its
 * gradient are the same on all TP ranks. The tensor table keeps the LOGICAL
 * shape of each tensor beside this rank's local shape; the logical vector
 * (gpt_export_logical) is what checkpoints, weight sync and transitions see.
 * A model built with tp = 1 is the whole model and makes no MPI call.
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

#include <mpi.h>

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

/* How a model is cut over its TP group. The model does not own tp_comm
 * (it is the EMU's): it must outlive the model. */
typedef struct GPTShard {
    int tp, tp_rank;     /* heads and MLP columns cut tp ways; tp = 1: the whole model */
    MPI_Comm tp_comm;    /* the TP group (MPI_COMM_NULL when tp = 1) */
} GPTShard;

/* One logical tensor, its shard spec and where this rank's part lives. A
 * cut tensor is split into tp equal blocks along cut_axis; this rank holds
 * block tp_rank, i.e. indices [cut_start, cut_start + lshape[cut_axis]) of
 * that axis, stored row-major in lshape. */
typedef struct TensorInfo {
    const char *name;  /* "wte", "qkvw", ... (llm.c names) */
    int ndim;
    int shape[4];      /* LOGICAL shape */
    size_t numel;      /* LOGICAL element count */
    int cut_axis;      /* TP-cut axis, -1 = replicated */
    int cut_start;     /* first index of this rank's block on cut_axis (0 if replicated) */
    int lshape[4];     /* this rank's local shape (= shape when replicated or tp = 1) */
    size_t lnumel;     /* local element count */
    size_t offset;     /* in floats, into params / grads / m / v (local, 16-float aligned) */
    size_t loffset;    /* in floats, into the full logical vector (gpt_export_logical) */
} TensorInfo;

/* Activation shapes: C is the full width; Cl = C/tp and NHl = NH/tp are this
 * rank's attention width and heads (= C, NH when tp = 1). */
typedef struct GPTActs {
    float *encoded;   /* (B, T, C) */
    float *ln1;       /* (L, B, T, C) */
    float *ln1_mean, *ln1_rstd;   /* (L, B, T) */
    float *qkv;       /* (L, B, T, 3Cl) this rank's heads: [q | k | v] (NHl, hs) each */
    float *atty;      /* (L, B, T, Cl) */
    float *preatt;    /* (L, B, NHl, T, T) */
    float *att;       /* (L, B, NHl, T, T) */
    float *attproj;   /* (L, B, T, C) summed over the TP group */
    float *residual2; /* (L, B, T, C) */
    float *ln2;       /* (L, B, T, C) */
    float *ln2_mean, *ln2_rstd;   /* (L, B, T) */
    float *fch;       /* (L, B, T, 4C/tp) */
    float *fch_gelu;  /* (L, B, T, 4C/tp) */
    float *fcproj;    /* (L, B, T, C) summed over the TP group */
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
    float *dqkv;      /* (B, T, 3Cl) */
    float *datty;     /* (B, T, Cl) */
    float *dpreatt;   /* (B, NHl, T, T) */
    float *datt;      /* (B, NHl, T, T) */
    float *dfch;      /* (B, T, 4C/tp) */
    float *dfch_gelu; /* (B, T, 4C/tp) */
    float *dtmp;      /* (B, T, C) */
    float *dlogits;   /* (B, T, V) (aliases acts.logits) */
    float *dvalues;   /* (B, T) */
} GPTGradScratch;

typedef struct GPT {
    GPTConfig cfg;
    GPTShard sh;           /* the TP cut this rank holds (tp = 1: the whole model) */
    int Cl, NHl;           /* this rank's attention width C/tp and heads NH/tp */
    const Backend *be;
    TensorInfo tensors[GPT_NUM_TENSORS];
    int ntensors;          /* GPT_NUM_TENSORS with value head, GPT_VHW without */
    size_t nparams;        /* LOCAL floats in params (and grads, m, v), padding included */
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
    float *kcache, *vcache;   /* (L, Bmax, NHl, Tmax, hs) each: this rank's heads only */
    float *d_x, *d_ln, *d_qkv, *d_atty, *d_tmp, *d_fch, *d_fchg, *d_logits; /* decode: (Bmax, ·), local widths */
    float *d_mean, *d_rstd;   /* (Bmax) decode LayerNorm statistics */
    float *logp, *ent;        /* (Bmax, Tmax) outputs of gpt_logprob */
    float *dlogp, *dent;      /* (Bmax, Tmax) inputs of gpt_backward */
    float *decode_mem;
    float *tp_host;           /* (Bmax·Tmax·C) host staging of the TP sums; only tp > 1 on a
                                 backend whose memory is not host memory */
} GPT;

/* Build: lay out the tensor table, allocate everything for batches of up to
 * Bmax sequences of up to Tmax tokens, and initialise the parameters from
 * (seed) as GPT-2 does: N(0, std) for weights, residual projections scaled
 * by 1/sqrt(2L), zero biases, unit LayerNorm gains, value head zero.
 * gpt_build is gpt_build_shard with tp = 1. */
void gpt_build(GPT *m, const GPTConfig *cfg, const Backend *be, int Bmax, int Tmax,
               int trainable, uint64_t seed, float init_std);
/* Local (no communication): the same for this rank's shard. Element k of
 * tensor i (k its LOGICAL row-major index) is drawn from rng_normal(seed,
 * RNG_INIT, i, k) whatever the cut, so the shards of a tp-way model are
 * bit for bit the slices of the tp = 1 model. Needs NH % tp == 0, and, when
 * tp > 1, tp_comm of size tp in which this rank is tp_rank. */
void gpt_build_shard(GPT *m, const GPTConfig *cfg, const GPTShard *sh, const Backend *be, int Bmax, int Tmax,
                     int trainable, uint64_t seed, float init_std);
void gpt_free(GPT *m);

/* The tensor table of cfg cut for (tp, tp_rank), without building a model
 * (pure; for the layout and transition code): fills t[0..*ntensors) and
 * returns the local floats (nparams) of such a shard. */
size_t gpt_tensor_table(const GPTConfig *cfg, int tp, int tp_rank, TensorInfo t[GPT_NUM_TENSORS], int *ntensors);
/* Pure: this rank's part of tensor t as *nruns contiguous runs of *len
 * floats; run o is at local o·len (from t->offset) and at logical
 * o·(*lstride) + *lstart (from t->loffset). Replicated: one run of numel. */
void gpt_tensor_runs(const TensorInfo *t, size_t *nruns, size_t *len, size_t *lstride, size_t *lstart);

/* Copy all parameters that both models have (by name and shape): e.g. the
 * critic trunk from the SFT actor. Value-head tensors are left as they are.
 * Both models must hold the same shard (tp, tp_rank). Local. */
void gpt_copy_params(GPT *dst, const GPT *src);

/* ---- logical tensors (weight sync, checkpoints, transitions) ----------- */
enum { GPT_BUF_PARAMS, GPT_BUF_GRADS, GPT_BUF_ADAM_M, GPT_BUF_ADAM_V };
/* Σ logical numel over the tensors (value head included if cfg has it):
 * the length of the full logical vector. */
size_t gpt_logical_numel(const GPTConfig *cfg);
/* The full logical vector: tensors concatenated in table order (at
 * TensorInfo.loffset, no padding), each in its logical row-major order.
 * Local (no communication). Export writes this rank's elements of buffer
 * `which` (its slice of a cut tensor, all of a replicated one) and leaves
 * the rest of full untouched; import loads this rank's elements from full.
 * full is a host array of gpt_logical_numel floats. GRADS / ADAM_* need a
 * trainable model. */
void gpt_export_logical(const GPT *m, int which, float *full);
void gpt_import_logical(GPT *m, int which, const float *full);

/* collective over m->sh.tp_comm (as are backward, update, prefill, decode and
 * the checksums; gpt_logprob and gpt_zero_grad are local; tp = 1: no MPI).
 * Forward over tokens (B, T) (host ints). Computes the trunk and, as asked,
 * the logits (B,T,V) and/or the values (B,T). Every TP rank passes the same
 * tokens and gets the full logits and values. */
void gpt_forward(GPT *m, const int *tokens, int B, int T, int want_logits, int want_values);

/* Local. After a forward with logits: logp (B,T) of targets (B,T) (−1 = skip → 0),
 * entropy ent (B,T) (may be NULL). Turns the logits into probs in place. */
void gpt_logprob(GPT *m, const int *targets, float *logp, float *ent);

/* collective over m->sh.tp_comm
 * Backward of a scalar loss given dloss/dlogp (B,T), dloss/dent (B,T) (may be
 * NULL) and/or dloss/dvalues (B,T) (may be NULL). Accumulates into m->grads.
 * Every TP rank must pass the same dlogp / dent / dvalues; gradients of
 * replicated tensors come out the same on all TP ranks (no reduce needed);
 * a DP reduce of m->grads (nparams floats) is the caller's. */
void gpt_backward(GPT *m, const float *dlogp, const float *dent, const float *dvalues);

void gpt_zero_grad(GPT *m);
/* collective over m->sh.tp_comm
 * Clip the global gradient norm to max_norm (0 = no clip), take one AdamW
 * step. Returns the gradient norm before clipping: the LOGICAL norm (cut
 * tensors summed over the TP group, replicated ones counted once). */
float gpt_update(GPT *m, float lr, float beta1, float beta2, float eps, float wd, float max_norm);

/* collective over m->sh.tp_comm
 * KV-cached decoding (the cache holds this rank's heads). gpt_prefill runs the prompt tokens (B, P) through the
 * model, fills the cache, and leaves the last position's logits (B, V) in
 * m->d_logits (backend memory; also copied to the host array logits_out
 * unless it is NULL). gpt_decode then consumes one token per sequence at
 * position pos (= P, P+1, ...) and leaves the next logits the same way. */
void gpt_prefill(GPT *m, const int *tokens, int B, int P, float *logits_out);
void gpt_decode(GPT *m, const int *tok, int B, int pos, float *logits_out);

/* collective over m->sh.tp_comm
 * Parameter checksum over the logical tensors: Σ|x| in double (cut tensors
 * summed over the TP group, replicated ones counted once). tp = 1 sums in
 * logical element order; under tp > 1 the same weights give the same value
 * up to the order of the double sums (~1e-15 relative). */
double gpt_checksum(const GPT *m);
/* collective over m->sh.tp_comm: the same for tensor i alone (buffer which). */
double gpt_checksum_tensor(const GPT *m, int which, int i);

/* Forward FLOPs per token for a sequence of length T (2·params in matmuls
 * plus attention), used for GFLOP/s figures. */
double gpt_flops_per_token_fwd(const GPTConfig *c, int T);

#endif
