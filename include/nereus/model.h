/* model.h — a GPT-2 or Llama-family model: parameters as one flat buffer plus a tensor table,
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
 * The Llama family (arch llama, qwen2, qwen3, as transformers' *ForCausalLM):
 * token embedding only, L pre-norm blocks (RMSNorm; packed q|k|v matmul with
 * optional biases (Qwen2); optional per-head RMSNorm of q and k (Qwen3);
 * RoPE on q and k at their positions, with Llama-3 frequency scaling when
 * set; causal grouped-query attention (NKV key/value heads); output
 * projection without bias; RMSNorm; SwiGLU MLP down(silu(gate)·up)), final
 * RMSNorm, LM head lm_head or tied to wte; the same value head. Its tensors
 * (below the GPT-2 enum) are layer-stacked the same way, and it runs under
 * the same TP and PP as GPT-2 (below). The layer code is in llama.c.
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
 * The Llama family under TP: a rank holds whole key/value heads, kv heads
 * [r·NKV/tp, (r+1)·NKV/tp), with the query heads that read them (query head h
 * reads kv head h / (NH/NKV), so they are query heads [r·NH/tp, ...)): blocks
 * of qw (axis 1), kvw (axis 2), their biases, attprojw's input columns (axis
 * 2); and MLP units [r·F/tp, ...) of fcw (axis 2: [gate_l | up_l]) and
 * fcprojw (axis 2). tp must divide NKV (KV heads are never replicated) and F.
 * RMSNorm weights, Qwen3's q/k norm weights, wte and lmhead are replicated.
 * The sums are GPT-2's (o_proj and down outputs in forward and decode, d of
 * the two norms' outputs in backward), plus the q/k norm weights' gradients,
 * which each rank computes over its heads only. Under PP the first stage holds
 * wte, the last lnfw, the value head and lmhead, or, with a tied head, its own
 * copy of wte (gradients summed over embd_comm, as GPT-2's).
 *
 * Pipeline parallelism: a model built with pp > 1 holds, on stage p of its
 * PP group, layers [p·L/pp, (p+1)·L/pp) of every layer-stacked tensor (cut
 * on axis 0, in addition to any TP cut on another axis); the first stage
 * also holds wte and wpe, the last stage lnf, the value head and its own
 * copy of wte (the tied LM head; the Llama family: above). The other tensors are not held there
 * (TensorInfo.held = 0, no storage). A forward runs the batch's rows as
 * microbatches through the stages (GPipe: every microbatch forward in
 * gpt_forward, every microbatch backward in gpt_backward — the callers
 * compute the loss of the whole batch between the two, so 1F1B, which
 * needs a microbatch's loss before later microbatches run forward, cannot
 * be scheduled behind this API; with activations stored for the whole
 * batch anyway, 1F1B's only gain, memory, would be nil and the bubble
 * (pp−1)/(m+pp−1) is the same). Activations go forward and their
 * gradients backward point to point over pp_comm, non-blocking so that
 * stages overlap across microbatches. The last stage broadcasts what the
 * callers read (values, logp, entropy) over pp_comm, so every rank of the
 * model sees the same outputs and computes the same loss; backward ignores
 * the loss gradients on all but the last stage. The two copies of wte get
 * their gradients summed over embd_comm (first and last stage) at the end
 * of backward, so they stay equal. Generation (prefill/decode) needs pp = 1.
 *
 * Memory: one allocation each for parameters, gradients, AdamW m, AdamW v
 * (the last three only for trainable models), forward activations sized for
 * (Bmax, Tmax) — every layer's for a trainable model, whose backward reads
 * them, one layer's otherwise (GPT.La: inference and generation overwrite
 * them layer by layer) — one layer of backward scratch, and the KV cache.
 * Nothing is allocated in the step loop.
 */
#ifndef NEREUS_MODEL_H
#define NEREUS_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "nereus/backend.h"

/* The architectures. GPT_ARCH_GPT2 is 0 so that every config written before
 * the others existed (a designated initialiser, a checkpoint without the
 * field) reads as GPT-2. */
enum { GPT_ARCH_GPT2 = 0, GPT_ARCH_LLAMA, GPT_ARCH_QWEN2, GPT_ARCH_QWEN3, GPT_NUM_ARCHS };

/* The config. Every field after V_real is 0 for GPT-2 ("GPT-2 / not used"),
 * and each non-zero value only means something for the Llama family. The
 * fields are 16 ints then 5 doubles: no padding, so configs compare with
 * memcmp. */
typedef struct GPTConfig {
    int V;          /* vocabulary */
    int maxT;       /* positions in wpe (Llama family: max_position_embeddings) */
    int L;          /* layers */
    int C;          /* width */
    int NH;         /* heads (query heads) */
    int value_head; /* 1: scalar value head (critic, reward network) */
    int V_real;     /* the real vocabulary when the embedding carries padding rows (an llm.c
                       import: V = its Vp): softmax, log-probs, entropy and sampling run over
                       ids [0, V_real) only; 0 when every one of the V rows is a token */
    int arch;       /* GPT_ARCH_*: 0 GPT-2 */
    int NKV;        /* key/value heads (grouped-query attention); 0: NH */
    int ffn;        /* the SwiGLU MLP's hidden width (intermediate_size); 0: 4C */
    int head_dim;   /* per-head width; 0: C / NH */
    int untied;     /* 1: a separate output head lm_head (V, C); 0: tied to wte */
    int qkv_bias;   /* 1: biases on q, k and v (Qwen2) */
    int qk_norm;    /* 1: per-head RMSNorm of q and k before RoPE (Qwen3) */
    int rope_llama3;   /* 1: Llama-3 RoPE frequency scaling with the rope_* fields below */
    int rope_orig_ctx; /* Llama-3 scaling: original_max_position_embeddings */
    double rope_theta; /* RoPE base; 0: 10000 */
    double rope_factor, rope_low_freq, rope_high_freq; /* Llama-3 scaling: factor, low and high
                                                          frequency factors */
    double norm_eps;   /* RMSNorm epsilon; 0: 1e-5 (GPT-2's LayerNorm always uses 1e-5) */
} GPTConfig;

/* the ids the model's heads may give probability to: [0, gpt_real_vocab(c)) */
static inline int gpt_real_vocab(const GPTConfig *c) { return c->V_real > 0 ? c->V_real : c->V; }
/* the config's derived sizes, the zeros resolved */
static inline int gpt_is_llama(const GPTConfig *c) { return c->arch != GPT_ARCH_GPT2; }
static inline int gpt_kv_heads(const GPTConfig *c) { return c->NKV > 0 ? c->NKV : c->NH; }
static inline int gpt_head_dim(const GPTConfig *c) { return c->head_dim > 0 ? c->head_dim : c->C / c->NH; }
static inline int gpt_ffn(const GPTConfig *c) { return c->ffn > 0 ? c->ffn : 4 * c->C; }
/* "gpt2", "llama", "qwen2", "qwen3" (NULL for an unknown arch); gpt_arch_parse: the inverse, −1 unknown */
const char *gpt_arch_name(int arch);
int gpt_arch_parse(const char *name);

enum {
    GPT_WTE, GPT_WPE, GPT_LN1W, GPT_LN1B, GPT_QKVW, GPT_QKVB, GPT_ATTPROJW, GPT_ATTPROJB,
    GPT_LN2W, GPT_LN2B, GPT_FCW, GPT_FCB, GPT_FCPROJW, GPT_FCPROJB, GPT_LNFW, GPT_LNFB,
    GPT_VHW, GPT_VHB, GPT_NUM_TENSORS
};
/* The Llama family's tensors (roles; m->p[] and m->g[] are indexed by role).
 * Its table holds only the tensors the config has, in this order, so a
 * table index is not a role there (TensorInfo.role). The value head keeps
 * GPT-2's roles GPT_VHW and GPT_VHB. Shapes, with Cq = NH·hd, Ckv = NKV·hd,
 * F = ffn, and the TP cut (→ the axis cut tp ways):
 *   wte (V, C), ln1w (L, C),
 *   qw (L, Cq, C) → axis 1 (query heads), kvw (L, 2, Ckv, C) [k | v] → axis 2
 *   (key/value heads), qb (L, Cq) → 1, kvb (L, 2, Ckv) → 2 (qkv_bias),
 *   qnormw (L, hd), knormw (L, hd) (qk_norm),
 *   attprojw (L, C, Cq) → 2, ln2w (L, C), fcw (L, 2, F, C) [gate | up] → 2,
 *   fcprojw (L, C, F) → 2, lnfw (C), lmhead (V, C) (untied).
 * Every rank's part is one block on one axis, and a TP rank's blocks are what
 * its kernels read: kvw's block (2, Ckv/tp, C) is [k_l | v_l], fcw's (2, F/tp,
 * C) is [gate_l | up_l]. The packed per-token row [q_l | k_l | v_l] attention
 * reads comes from one matmul over qw's and kvw's blocks of a layer copied
 * side by side (llama.c). */
enum {
    LLAMA_WTE, LLAMA_LN1W, LLAMA_QW, LLAMA_QB, LLAMA_QNORMW, LLAMA_KNORMW, LLAMA_ATTPROJW, LLAMA_LN2W,
    LLAMA_FCW, LLAMA_FCPROJW, LLAMA_LNFW, LLAMA_LMHEAD, LLAMA_KVW, LLAMA_KVB, LLAMA_NUM_ROLES
};

/* How a model is cut over its TP and PP groups. The model does not own the
 * communicators (they are the EMU's: emu.h tp, pp, embd): they must outlive
 * the model. A zero-filled GPTShard with only the TP fields set is a TP-only
 * shard (pp = 0 reads as 1, the PP communicators are then ignored). */
typedef struct GPTShard {
    int tp, tp_rank;     /* heads and MLP columns cut tp ways; tp = 1: the whole model */
    MPI_Comm tp_comm;    /* the TP group (MPI_COMM_NULL when tp = 1) */
    int pp, pp_rank;     /* layers cut into pp contiguous stages; this rank is stage pp_rank */
    MPI_Comm pp_comm;    /* the PP group, by stage (ignored when pp = 1) */
    MPI_Comm embd_comm;  /* first and last stage (size 2, first stage rank 0); ignored on middle
                            stages and when pp = 1 */
    int microbatches;    /* microbatches per forward/backward; 0: the default, pp (1 when pp = 1);
                            capped by the batch; rows split as evenly as possible (any B works) */
} GPTShard;

/* One logical tensor, its shard spec and where this rank's part lives. A
 * cut tensor is split into tp equal blocks along cut_axis; this rank holds
 * block tp_rank, i.e. indices [cut_start, cut_start + lshape[cut_axis]) of
 * that axis. A layer-stacked tensor under pp > 1 is also cut on axis 0
 * (pp_axis = 0): this stage holds layers [pp_start, pp_start + lshape[0]).
 * The block is stored row-major in lshape. A tensor this stage does not
 * hold (wte on a middle stage, wpe past the first, lnf and the value head
 * before the last) has held = 0, lnumel = 0, lshape all 0 and no storage. */
typedef struct TensorInfo {
    const char *name;  /* "wte", "qkvw", ... (llm.c names) */
    int ndim;
    int shape[4];      /* LOGICAL shape */
    size_t numel;      /* LOGICAL element count */
    int cut_axis;      /* TP-cut axis, -1 = replicated over the TP group */
    int cut_start;     /* first index of this rank's block on cut_axis (0 if replicated) */
    int pp_axis;       /* PP-cut axis: 0 for layer-stacked tensors when pp > 1, else -1 */
    int pp_start;      /* first layer of this stage's block (0 if not PP-cut) */
    int held;          /* 1: this rank holds (its block of) the tensor; 0: another stage's */
    int owner;         /* 1: this rank is the canonical contributor of its block to a logical
                          assembly (held; TP rank 0 for a TP-replicated tensor; wte: the first
                          stage only, though the last stage holds an equal copy) */
    int lshape[4];     /* this rank's local shape (= shape when not cut) */
    size_t lnumel;     /* local element count */
    size_t offset;     /* in floats, into params / grads / m / v (local, 16-float aligned) */
    size_t loffset;    /* in floats, into the full logical vector (gpt_export_logical) */
    int role;          /* GPT_* (GPT-2: the table index) or LLAMA_* / GPT_VHW / GPT_VHB: the
                          index of m->p[] and m->g[] */
} TensorInfo;

/* Activation shapes: C is the full width; Cl = C/tp and NHl = NH/tp are this
 * rank's attention width and heads (= C, NH when tp = 1). The Llama family
 * uses the same arrays with its own (local) widths: qkv rows of C3 = Cq +
 * 2·NKV·hs (after QK-norm and RoPE: what attention reads), atty of Cq =
 * NH·hs, fch of 2F ([gate | up]), fch_gelu of F (the SwiGLU output); the
 * RMSNorms keep their rstd in the *_rstd arrays and leave *_mean unused. */
typedef struct GPTActs {
    /* L here is this stage's layers L/pp; lnf, its statistics and logits exist
     * on the last stage only (NULL elsewhere) */
    float *encoded;   /* (B, T, C) the stage's input: the embeddings, or the previous stage's output */
    float *ln1;       /* (La, B, T, C): La = L for a trainable model, 1 otherwise (GPT.La) */
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
    float *lnf_pk;    /* (B·T, C) the lnf rows of the log-prob positions, packed (gpt_forward_logprob) */
    float *lnf_mean, *lnf_rstd;   /* (B, T) */
    float *logits;    /* (B, T, V): logits, then probs after gpt_logprob */
    float *values;    /* (B, T) value head output (on every stage after a forward with values) */
    /* the Llama family only (NULL for GPT-2) */
    float *qkv_raw;   /* (L, B, T, C3) the qkv matmul's output before QK-norm (qk_norm only) */
    float *qk_rstd;   /* (L, B, T, NH + NKV) QK-norm rstd per head: q heads (B·T·NH) then k (qk_norm only) */
    float *wqkv, *bqkv; /* (C3, C), (C3): one layer's blocks of qw and kvw (qb and kvb) side by side, the
                           packed weight of the layer's q|k|v matmul (llama.c llama_pack_qkv) */
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
    float *dqkv_raw;  /* (B, T, C3) d of the qkv matmul's output (Llama family with qk_norm only) */
    float *dwqkv, *dbqkv; /* (C3, C), (C3): one layer's packed q|k|v weight and bias gradient (Llama family) */
    float *dqknorm;   /* (2, hs): one layer's QK-norm weight gradients before their TP sum (qk_norm, tp > 1) */
} GPTGradScratch;

typedef struct GPT {
    GPTConfig cfg;
    GPTShard sh;           /* the TP and PP cut this rank holds (tp = pp = 1: the whole model) */
    int Cl, NHl;           /* this rank's attention width NH·hs/tp (GPT-2: C/tp) and heads NH/tp */
    int hs, NKVl;          /* the head width, this rank's key/value heads (GPT-2: NHl) */
    int C3, F;             /* this rank's packed q|k|v row width and MLP hidden width (GPT-2: 3Cl, 4Cl) */
    int Ll, l0;            /* this stage's layers L/pp, the first of them pp_rank·L/pp */
    int La;                /* layers of forward activations kept: Ll for a trainable model (its backward reads
                              them all), 1 otherwise (each layer overwrites the last's; gpt_act_layer) */
    int first, last;       /* this rank is on the first / last pipeline stage (both when pp = 1) */
    int nmb;               /* microbatches of the last forward */
    const Backend *be;
    TensorInfo tensors[GPT_NUM_TENSORS];
    int ntensors;          /* GPT_NUM_TENSORS with value head, GPT_VHW without */
    size_t nparams;        /* LOCAL floats in params (and grads, m, v), padding included */
    float *params;         /* (nparams) */
    uint16_t *wbf16;       /* (nparams) the params rounded to bfloat16 for decoding (gpt_gen_bf16), or NULL:
                              the decode GEMMs read these where the backend has matmul_decode_bf16 */
    float *grads, *m, *v;  /* (nparams) each; NULL unless trainable */
    float *p[GPT_NUM_TENSORS], *g[GPT_NUM_TENSORS]; /* named pointers into params / grads, by role
                                                       (TensorInfo.role); NULL: not in this model */
    int trainable;
    int adam_t;            /* AdamW steps taken */
    int Bmax, Tmax;        /* activation capacity */
    int B, T;              /* shape of the last forward */
    int *tokens;           /* (Bmax, Tmax) host copy of the last forward's tokens */
    int *targets;          /* (Bmax, Tmax) targets of the last gpt_logprob (−1 = skip); packed after gpt_forward_logprob */
    GPTActs a;
    GPTGradScratch s;
    float *acts_mem, *scratch_mem;
    /* KV cache and single-token decode activations */
    float *kcache, *vcache;   /* (L, Bmax, NHl, Tmax, hs) each: this rank's heads only */
    float *d_x, *d_ln, *d_qkv, *d_atty, *d_tmp, *d_fch, *d_fchg, *d_logits; /* decode: (Bmax, ·), local widths */
    float *d_mean, *d_rstd;   /* (Bmax) decode LayerNorm statistics */
    const int *dec_slots;     /* during gpt_decode_rows: the cache slot of each row (backend memory), NULL: row b
                                 is slot b */
    const int *dec_pos;       /* during gpt_decode_at: each row's position (backend memory), NULL: every row at
                                 the step's one position */
    const int *dec_pos_host;  /* the same positions in host memory (the per-row embedding and RoPE calls) */
    float *d_qk_rstd, *d_qkv_raw; /* (Bmax, NH + NKV), (Bmax, C3): decode QK-norm statistics and input
                                 (Llama family with qk_norm) */
    float *inv_freq;          /* (hs/2) RoPE inverse frequencies (Llama family; rope.h) */
    float *zero_pos;          /* (Tmax, C) zeros: the position embedding encoder_forward adds (Llama family) */
    float *logp, *ent;        /* (Bmax, Tmax) outputs of gpt_logprob */
    float *logp_pk, *ent_pk;  /* (Bmax·Tmax) gpt_forward_logprob's, packed: one a log-prob position */
    int pk_on;                /* the last forward computed the LM head at the log-prob positions only */
    int pk_n, pk_nrun;        /* ... their count, and their runs of consecutive positions */
    int *pk_run;              /* (3·Bmax·Tmax) host: each run's first position, length and packed index */
    float *pk_host;           /* (Bmax·Tmax) host staging of packed dlogp and dent */
    float *dlogp, *dent;      /* (Bmax, Tmax) inputs of gpt_backward */
    float *decode_mem;
    float *pp_host;           /* (2, Bmax·Tmax·C) host staging of the PP sends [0] and receives
                                 [1]; only pp > 1 on a backend whose memory is not host memory */
    MPI_Request *pp_req;      /* (2·Bmax) the pipeline's point-to-point requests; only pp > 1 */
    /* the pipeline's transfers in flight while this stage computes a microbatch (gpt.c gpt_pp_poll):
       sends [0, poll_nsent) of poll_sent, receives [0, poll_nrecv) of poll_recv; none outside a pass */
    MPI_Request *poll_sent, *poll_recv;
    int poll_nsent, poll_nrecv;
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
 * RNG_INIT, i, k) whatever the cut, so the shards of a (tp, pp) model are
 * bit for bit the slices of the unsharded model. Needs NH % tp == 0 (the
 * Llama family: NKV % tp == 0 and ffn % tp == 0 too) and
 * L % pp == 0; when tp > 1, tp_comm of size tp in which this rank is
 * tp_rank; when pp > 1, pp_comm of size pp in which this rank is pp_rank
 * and, on the first and last stage, embd_comm of size 2 (first stage rank
 * 0). With pp > 1 no KV cache is allocated (generation needs pp = 1). */
void gpt_build_shard(GPT *m, const GPTConfig *cfg, const GPTShard *sh, const Backend *be, int Bmax, int Tmax,
                     int trainable, uint64_t seed, float init_std);
/* The same without the initialisation: every buffer zero (a transition's
 * destination, which receives every parameter it holds). */
void gpt_build_shard_empty(GPT *m, const GPTConfig *cfg, const GPTShard *sh, const Backend *be, int Bmax, int Tmax,
                           int trainable);
/* A transition's destination: its state only — params, and AdamW m and v when trainable — of which the
 * first `filled` (1..3), which the caller writes in full before any read, come from be->alloc_uninit (no
 * clearing of memory about to be overwritten: on the CPU backend, reused pages would otherwise be cleared
 * first). Bmax and Tmax are recorded; gpt_complete allocates the rest (as gpt_build_shard_empty would, the
 * gradients uninitialised: gpt_zero_grad clears them before every backward). Until then only the state
 * may be used. */
void gpt_build_shard_dest(GPT *m, const GPTConfig *cfg, const GPTShard *sh, const Backend *be, int Bmax, int Tmax,
                          int trainable, int filled);
/* With filled = 3 and trainable, gpt_build_shard_dest allocates params only: the transition engine adds m
 * and v with gpt_state_alloc as it frees the old shard's params and m (gpt_state_free), so that a rank
 * that moves holds four of the six state buffers at most, not all six. b: 0 params, 1 AdamW m, 2 v.
 * gpt_state_alloc allocates buffer b uninitialised (its padding cleared) unless it exists; gpt_state_free
 * frees it (of a shed old shard). gpt_complete fails on a trainable destination whose moments are
 * missing. */
void gpt_state_alloc(GPT *m, int b);
void gpt_state_free(GPT *m, int b);
/* Pure: the backend bytes gpt_build_shard allocates for a shard on pipeline
 * stage pp_rank of (tp, pp) with capacity (Bmax, Tmax) — parameters, and
 * for a trainable model gradients, AdamW m and v and the backward scratch,
 * activations, KV cache (pp = 1), decode buffers — each allocation rounded
 * up to 256 bytes (at least what either backend takes). Host staging of
 * non-host backends is not counted. What the transition engine budgets. */
size_t gpt_shard_bytes(const GPTConfig *cfg, int tp, int pp, int pp_rank, int Bmax, int Tmax, int trainable);
void gpt_free(GPT *m);
/* The rest of a transition's destination (gpt_build_shard_dest): gradients, activations, scratch, caches,
 * decode and token buffers for its Bmax, Tmax. Does nothing to a model that has them. */
void gpt_complete(GPT *m);
/* Frees what a model's state does not need — gradients, activations, scratch, KV caches, decode buffers,
 * token buffers — and keeps params, m and v (and the tensor table): an old shard during a transition, which only reads
 * those three (transition.h). Afterwards only gpt_free, gpt_swap_state and reads of the state are valid. */
void gpt_shed(GPT *m);
/* Bytes of a shed shard (gpt_shed): params, and m and v when trainable, each rounded as allocated */
size_t gpt_shard_state_bytes(const GPTConfig *cfg, int tp, int pp, int pp_rank, int trainable);

/* The tensor table of cfg cut for (tp, tp_rank), without building a model
 * (pure; for the layout and transition code): fills t[0..*ntensors) and
 * returns the local floats (nparams) of such a shard. pp = 1. */
size_t gpt_tensor_table(const GPTConfig *cfg, int tp, int tp_rank, TensorInfo t[GPT_NUM_TENSORS], int *ntensors);
/* Pure: the same cut for (tp, tp_rank) on pipeline stage pp_rank of pp
 * (pp = 1: gpt_tensor_table). Needs L % pp == 0. */
size_t gpt_tensor_table_pp(const GPTConfig *cfg, int tp, int tp_rank, int pp, int pp_rank,
                           TensorInfo t[GPT_NUM_TENSORS], int *ntensors);
/* Pure: this rank's part of tensor t as *nruns contiguous runs of *len
 * floats; run o is at local o·len (from t->offset) and at logical
 * o·(*lstride) + *lstart (from t->loffset). Not cut: one run of numel. Not
 * held: no runs. */
void gpt_tensor_runs(const TensorInfo *t, size_t *nruns, size_t *len, size_t *lstride, size_t *lstart);
/* Local: 1 when this rank is the canonical contributor of tensor i to a
 * logical assembly (m->tensors[i].owner): it holds the tensor and is TP
 * rank 0 for a TP-replicated tensor, and, for wte under pp > 1, is on the
 * first stage (the last stage holds an equal copy and contributes nothing).
 * Summing every rank's export with non-owned tensors zeroed assembles each
 * logical element exactly once. */
int gpt_tensor_owner(const GPT *m, int i);

/* Copy all parameters that both models have (by name and shape): e.g. the
 * critic trunk from the SFT actor. Value-head tensors are left as they are.
 * Both models must hold the same shard (tp, tp_rank, pp, pp_rank). Local. */
void gpt_copy_params(GPT *dst, const GPT *src);

/* Local: when a and b hold the same shard (config, tp, tp_rank, pp,
 * pp_rank), swaps their parameter buffers (and AdamW m and v with adam) —
 * how a transition keeps a shard that stays on its rank without copying it
 * (a is the old shard, with its moments; b's may still be pending, NULL).
 * Returns 0, or −1 (nothing swapped) when the shards differ. */
int gpt_swap_state(GPT *a, GPT *b, int adam);

/* ---- logical tensors (weight sync, checkpoints, transitions) ----------- */
enum { GPT_BUF_PARAMS, GPT_BUF_GRADS, GPT_BUF_ADAM_M, GPT_BUF_ADAM_V };
/* Σ logical numel over the tensors (value head included if cfg has it):
 * the length of the full logical vector. */
size_t gpt_logical_numel(const GPTConfig *cfg);
/* The full logical vector: tensors concatenated in table order (at
 * TensorInfo.loffset, no padding), each in its logical row-major order.
 * Local (no communication). Export writes this rank's elements of buffer
 * `which` (its slice of a cut tensor, all of a replicated one, nothing of a
 * tensor its stage does not hold) and leaves the rest of full untouched;
 * import loads this rank's elements from full. Under pp > 1 wte is held,
 * and so exported and imported, on both the first and the last stage: the
 * caller decides who contributes (gpt_tensor_owner) and must import the
 * same wte on both. full is a host array of gpt_logical_numel floats.
 * GRADS / ADAM_* need a trainable model. */
void gpt_export_logical(const GPT *m, int which, float *full);
void gpt_import_logical(GPT *m, int which, const float *full);
/* The same for the window [lo, hi) of the logical vector alone: win[l − lo]
 * for logical index l, so a whole model never needs to sit in one buffer.
 * Export writes only the window's elements this rank holds (with
 * owners_only, only those it is the canonical owner of: gpt_tensor_owner)
 * and leaves the rest of win untouched; import reads only those. */
void gpt_export_logical_window(const GPT *m, int which, size_t lo, size_t hi, int owners_only, float *win);
void gpt_import_logical_window(GPT *m, int which, size_t lo, size_t hi, const float *win);

/* collective over m->sh.tp_comm and m->sh.pp_comm (as are backward, update,
 * prefill, decode and the checksums, and gpt_logprob under pp > 1;
 * gpt_zero_grad is local; tp = pp = 1: no MPI).
 * Forward over tokens (B, T) (host ints). Computes the trunk and, as asked,
 * the logits (B,T,V) and/or the values (B,T). Every rank of the model passes
 * the same tokens; the logits are on every TP rank of the LAST stage (other
 * stages have none), the values on every rank (broadcast over pp_comm). */
void gpt_forward(GPT *m, const int *tokens, int B, int T, int want_logits, int want_values);

/* Local when pp = 1; collective over m->sh.pp_comm when pp > 1 (the last
 * stage computes, then broadcasts logp and ent). After a forward with
 * logits: logp (B,T) of targets (B,T) (−1 = skip → 0), entropy ent (B,T)
 * (may be NULL), also left in m->logp, m->ent on every rank. Turns the
 * logits into probs in place. */
void gpt_logprob(GPT *m, const int *targets, float *logp, float *ent);
/* gpt_forward with logits and gpt_logprob in one, the LM head (and its log-softmax) computed only at the
 * positions with a target (≥ 0): each position's log-prob and entropy the same bits as the two calls give
 * (every kernel gives a row the same bits whatever rows share its call), the head's cost and memory traffic
 * those of the target positions alone. m->logp, m->ent dense as after gpt_logprob (0 at skipped positions);
 * the logits are packed (not (B, T, V)); gpt_backward takes dlogp and dent dense as usual. */
void gpt_forward_logprob(GPT *m, const int *tokens, const int *targets, int B, int T, float *logp, float *ent);

/* collective over m->sh.tp_comm, m->sh.pp_comm and m->sh.embd_comm
 * Backward of a scalar loss given dloss/dlogp (B,T), dloss/dent (B,T) (may be
 * NULL) and/or dloss/dvalues (B,T) (may be NULL). Accumulates into m->grads.
 * Every rank must pass the same dlogp / dent / dvalues (only the last stage
 * reads them); gradients of replicated tensors come out the same on all TP
 * ranks (no reduce needed), and wte's on the first and last stage (summed
 * over embd_comm; to keep accumulation right the last stage's copy is
 * restarted from zero, so the two copies must be equal between calls, as
 * every caller that treats all ranks alike keeps them); a DP reduce of
 * m->grads (nparams floats) is the caller's. */
void gpt_backward(GPT *m, const float *dlogp, const float *dent, const float *dvalues);

void gpt_zero_grad(GPT *m);
/* collective over m->sh.tp_comm and m->sh.pp_comm
 * Clip the global gradient norm to max_norm (0 = no clip), take one AdamW
 * step. Returns the gradient norm before clipping: the LOGICAL norm (cut
 * tensors summed over the TP and PP groups, replicated ones and wte counted
 * once), the same on every rank of the model. */
float gpt_update(GPT *m, float lr, float beta1, float beta2, float eps, float wd, float max_norm);

/* collective over m->sh.tp_comm; pp = 1 only (pipelined generation is not
 * supported: a pp > 1 model fails with that message).
 * KV-cached decoding (the cache holds this rank's heads). gpt_prefill runs the prompt tokens (B, P) through the
 * model in one batched forward, fills the cache, and leaves the last position's logits (B, V) in
 * m->d_logits (backend memory; also copied to the host array logits_out
 * unless it is NULL). gpt_decode then consumes one token per sequence at
 * position pos (= P, P+1, ...) and leaves the next logits the same way.
 * Logits are computed over the real vocabulary [0, gpt_real_vocab): the
 * padding columns [V_real, V) of a padded embedding are not written. */
/* After gpt_forward over (B, T): the logits of the last position only, into
 * m->d_logits (B, V), as gpt_prefill leaves them (single-stage models). */
void gpt_logits_last(GPT *m, int B, int T);
void gpt_prefill(GPT *m, const int *tokens, int B, int P, float *logits_out);
void gpt_decode(GPT *m, const int *tok, int B, int pos, float *logits_out);
/* gpt_decode over the sequences still generating: n rows, row i the sequence
 * in cache slot slots[i] (host array, strictly increasing, each < Bmax; NULL:
 * slot i), its token tok[i]; the logits (n, V) in row order. The weights are
 * read once for the n rows, so a step costs what the rows still generating
 * need, and a row's logits do not depend on which other rows are present. */
void gpt_decode_rows(GPT *m, const int *tok, const int *slots, int n, int pos, float *logits_out);
/* gpt_decode_rows with each row at its own position pos[i] (host array): sequences whose prompts differ in
 * length. A row's logits are the bits gpt_decode_rows gives it at that position, and the bits a forward over
 * the row's whole sequence gives its last position (the row kernels are batch-invariant, docs/NUMERICS.md). */
void gpt_decode_at(GPT *m, const int *tok, const int *slots, const int *pos, int n, float *logits_out);
/* Decoding in bfloat16: on = 1 keeps a bf16 copy of the params (half their bytes) that the decode GEMMs read
 * (the backend's matmul_decode_bf16; a backend without it decodes in fp32 and this does nothing); the
 * prefill, norms, attention and head softmax stay fp32. gpt_bf16_refresh rounds the params into the copy:
 * call it after the params change (the rollout does, before each generation). */
void gpt_gen_bf16(GPT *m, int on);
void gpt_bf16_refresh(GPT *m);
/* gpt_prefill of B prompts of different lengths: row b's len[b] tokens at tokens + b·ld, into cache slot b;
 * the last position's logits of each row in m->d_logits (B, V) (and logits_out unless NULL). Each row is its
 * own forward, so a row's cache and logits are those it gets prefilled alone. */
void gpt_prefill_rows(GPT *m, const int *tokens, int ld, const int *len, int B, float *logits_out);

/* collective over m->sh.tp_comm and m->sh.pp_comm
 * Parameter checksum over the logical tensors: Σ|x| in double, each logical
 * element once (owners only: gpt_tensor_owner). tp = pp = 1 sums in logical
 * element order; otherwise the same weights give the same value up to the
 * order of the double sums (~1e-15 relative). The same on every rank. */
double gpt_checksum(const GPT *m);
/* collective over m->sh.tp_comm and m->sh.pp_comm: the same for tensor i
 * alone (buffer which). */
double gpt_checksum_tensor(const GPT *m, int which, int i);
/* Local: per tensor i of buffer which, over the elements of it this rank is
 * the canonical owner of (gpt_tensor_owner; 0 for the rest), Σ|x| into
 * abs[i] and the checkpoints' hash (nr_cksum_f32, keyed by each element's
 * index in the logical tensor) into hash[i]. Both add up over the owners:
 * summed over the ranks of one replica, the hash is the whole logical
 * tensor's whatever the layout, Σ|x| up to the order of the sums. hash may
 * be NULL (Σ|x| alone). */
void gpt_tensor_checks(const GPT *m, int which, double *abs, uint64_t *hash);

/* Forward FLOPs per token for a sequence of length T (2·params in matmuls
 * plus attention; the head a model computes: the LM head, or a value head's
 * C → 1), used for GFLOP/s figures. */
double gpt_flops_per_token_fwd(const GPTConfig *c, int T);

#endif
