/* config.h — the validated run configuration that an input deck resolves to.
 *
 * Flat, fixed-size, no pointers: rank 0 and every other rank parse the same
 * deck bytes into it (deck.h), so it is identical everywhere. Each field is
 * one deck key `[section] key`; the deck reference table (src/deck/keys.c)
 * gives its type, default, range and meaning, and inputs/REFERENCE.md is
 * generated from that table.
 */
#ifndef NEREUS_CONFIG_H
#define NEREUS_CONFIG_H

#include "nereus/plan.h" /* PlanConfig: flat and pointer-free like the rest */

#define CFG_STR 256

typedef struct RunConfig {
    char name[CFG_STR];      /* [run] name: label for output; default: deck file stem */
    long long seed;          /* [run] seed */
    char backend[16];        /* [run] backend: auto | cpu | cuda */
    int blas_threads;        /* [run] blas_threads: BLAS threads per rank */
    int log_every;           /* [run] log_every: print a progress line every N steps */
    char restart[CFG_STR];   /* [run] restart: checkpoint to resume from ("" = none; --restart FILE too) */
    char precision[8];       /* [run] precision: fp32 | tf32 (GEMMs on the CUDA backend's tensor cores) */
    double expect_reward_gain; /* [run] expect_reward_gain: verify.learned is yes when reward_gain exceeds it */
} RunConfig;

typedef struct ModelConfig {
    int n_layer;             /* [model] n_layer (required) */
    int n_embd;              /* [model] n_embd (required) */
    int n_head;              /* [model] n_head (required; must divide n_embd) */
    int max_seq;             /* [model] max_seq: context length (positions) */
    int vocab_size;          /* [model] vocab_size: 0 = auto (the task vocabulary) */
    float init_std;          /* [model] init_std: std of the normal initialisation */
    /* the Llama family (arch llama, qwen2, qwen3): model.h's GPTConfig fields. Doubles after the
     * 24 bytes above, then 4-byte fields and strings to a multiple of 8: no hole. */
    double rope_theta;       /* [model] rope_theta: RoPE base */
    double rope_scaling_factor;   /* [model] rope_scaling_factor: Llama-3 RoPE scaling factor; 0 = none */
    double rope_low_freq_factor;  /* [model] rope_low_freq_factor: Llama-3 scaling's low-frequency factor */
    double rope_high_freq_factor; /* [model] rope_high_freq_factor: Llama-3 scaling's high-frequency factor */
    double norm_eps;         /* [model] norm_eps: RMSNorm epsilon */
    int n_kv_head;           /* [model] n_kv_head: key/value heads; 0 = auto (n_head) */
    int ffn_dim;             /* [model] ffn_dim: SwiGLU hidden width; 0 = auto (4 n_embd) */
    int head_dim;            /* [model] head_dim: per-head width; 0 = auto (n_embd / n_head) */
    int rope_original_max_seq; /* [model] rope_original_max_seq: Llama-3 scaling's original context */
    int tie_embeddings;      /* [model] tie_embeddings: bool, LM head tied to the token embedding */
    char arch[12];           /* [model] arch: gpt2 | llama | qwen2 | qwen3 */
    char qkv_bias[8];        /* [model] qkv_bias: auto | true | false (auto: qwen2 has them) */
    char qk_norm[8];         /* [model] qk_norm: auto | true | false (auto: qwen3 has it) */
    char gen_dtype[8];       /* [model] gen_dtype: fp32 | bf16: the weights actor.gen generates with */
    char score_dtype[8];     /* [model] score_dtype: fp32 | bf16: the weights the scoring EMUs infer with */
    char init_from[CFG_STR]; /* [model] init_from: checkpoint whose "actor" starts the actor and ref ("" = none) */
} ModelConfig;

typedef struct TaskConfig {
    char names[CFG_STR];     /* [task] names: comma list of reverse, sort, add */
    int digits;              /* [task] digits: digits per prompt */
} TaskConfig;

typedef struct OptimConfig {
    float beta1, beta2, eps; /* [optim] beta1 beta2 eps */
    float weight_decay;      /* [optim] weight_decay */
    float max_grad_norm;     /* [optim] max_grad_norm: 0 disables clipping */
} OptimConfig;

typedef struct SftConfig {
    int steps;               /* [sft] steps: warm-start steps before PPO (0 = none) */
    int batch;               /* [sft] batch: sequences per step */
    float lr;                /* [sft] lr */
    char data[16];           /* [sft] data: task | tokens */
    char tokens_file[CFG_STR]; /* [sft] tokens_file: llm.c token file (data = tokens) */
    int seq;                 /* [sft] seq: sequence length for data = tokens; 0 = max_seq */
} SftConfig;

typedef struct PpoConfig {
    int steps;               /* [ppo] steps */
    int batch;               /* [ppo] batch: prompts (= sequences) per step */
    int epochs;              /* [ppo] epochs over the batch per step */
    int minibatch;           /* [ppo] minibatch: sequences per update (divides batch) */
    float actor_lr;          /* [ppo] actor_lr */
    float critic_lr;         /* [ppo] critic_lr */
    float clip;              /* [ppo] clip: surrogate ratio clip ε */
    float value_clip;        /* [ppo] value_clip: value clip ε */
    float gamma;             /* [ppo] gamma: discount */
    float lam;               /* [ppo] lam: GAE λ */
    float kl_beta;           /* [ppo] kl_beta: β of the per-token KL(actor‖ref) penalty */
    float entropy_coef;      /* [ppo] entropy_coef: entropy bonus weight */
    int whiten_advantages;   /* [ppo] whiten_advantages: bool */
    float temperature;       /* [ppo] temperature: sampling temperature */
    int top_k;               /* [ppo] top_k: 0 = full distribution */
    int max_response;        /* [ppo] max_response: most tokens generated per prompt */
    /* GRPO (algorithm = grpo): group-relative advantages, no critic (docs/GRPO.md). 4-byte fields, then the
     * string: no hole. */
    int group_size;          /* [ppo] group_size: responses per prompt (G; divides batch; grpo needs G >= 2) */
    int group_std;           /* [ppo] group_std: bool, divide a group's advantages by its standard deviation */
    float group_eps;         /* [ppo] group_eps: added to the group's standard deviation */
    float kl_loss_coef;      /* [ppo] kl_loss_coef: beta of GRPO's k3 KL(actor||ref) term in the actor loss */
    float clip_high;         /* [ppo] clip_high: upper ratio clip for A > 0 (DAPO's clip-higher); 0 = clip */
    float tis_cap;           /* [ppo] tis_cap: truncated importance weight cap on the policy loss; 0 = off */
    int max_staleness;       /* [ppo] max_staleness: K, the most weight versions a trained sample may lag (0 = synchronous) */
    int micro_batch;         /* [ppo] micro_batch: rows per forward pass of any model-stage but actor.gen (0 = all of a replica's) */
    char algorithm[8];       /* [ppo] algorithm: ppo | grpo */
    char credit[12];         /* [ppo] credit: outcome | process: the task reward per response or per position (12 bytes
                                with micro_batch's 4: PpoConfig stays a multiple of 8, so Config has no hole the key
                                table leaves uncovered) */
    char process_baseline[16]; /* [ppo] process_baseline: pooled | position: grpo's baseline of process credits */
    char group_std_scope[8];   /* [ppo] group_std_scope: group | batch: the std grpo divides by */
    char correction[12];       /* [ppo] correction: auto | none | decoupled: the off-policy correction (ppo_tis_cap;
                                  the five strings, 56 bytes, with max_staleness' 4 keep PpoConfig a multiple of 8) */
} PpoConfig;

typedef struct RewardConfig {
    int network;             /* [reward] network: bool, add a frozen reward network's score */
    float network_weight;    /* [reward] network_weight: weight of that score */
    float format_reward;     /* [reward] format_reward: text tasks: added where the rule finds an answer */
    char rule[16];           /* [reward] rule: text tasks: answer-tag | gsm8k | boxed | last-number */
    char task[32];           /* [reward] task: text tasks: none (numeric equivalence) or a reasoning-gym scorer */
} RewardConfig;

/* [inject]: INJECTED faults and drift for tests and experiments, named as
 * injected wherever they show. The planner never reads them: it sees the
 * lengths, timings and pool they cause (src/run/inject.c). 4-byte fields,
 * then strings: no hole. */
typedef struct InjectConfig {
    float slow_factor;       /* [inject] slow_factor: the slowed ranks do this many times their work (extra real work) */
    float comm_setup_s;      /* [inject] comm_setup_s: every communicator set the job builds takes at least this (0 = off) */
    int nan_loss_step;       /* [inject] nan_loss_step: INJECTED fault, −1 = off */
    int resp_len_from;       /* [inject] resp_len_from: forced minimum response tokens at PPO step 0 (0 = off) */
    int resp_len_to;         /* [inject] resp_len_to: ... at step resp_len_ramp (linear in between, held after) */
    int resp_len_ramp;       /* [inject] resp_len_ramp: the step the ramp reaches resp_len_to (0 = the last PPO step) */
    int slow_step;           /* [inject] slow_step: slow_ranks slow from this PPO step on (−1 = never) */
    int slow_until;          /* [inject] slow_until: back to normal from this step (−1 = never) */
    int leave_step;          /* [inject] leave_step: leave_ranks leave the pool before this step (−1 = never) */
    int join_step;           /* [inject] join_step: they join again before this step (−1 = never) */
    int slow_period;         /* [inject] slow_period: slow for this many steps, then not for slow_off, over and over (0: steady) */
    int slow_off;            /* [inject] slow_off: the steps at full speed between (0: slow_period) */
    int die_rank;            /* [inject] die_rank: this rank (as launched) SIGKILLs itself (−1 = never) */
    int die_step;            /* [inject] die_step: ... in this PPO step or after, as die_phase begins */
    char slow_ranks[CFG_STR];  /* [inject] slow_ranks: comma list of ranks and A-B ranges ("" = none) */
    char leave_ranks[CFG_STR]; /* [inject] leave_ranks: the same */
    char die_phase[12];      /* [inject] die_phase: gen | inf | train | sync | transition | ckpt */
} InjectConfig;

/* [planner]: the live planner on rank 0 (adapt.h; src/run/adapt_live.c). */
typedef struct PlannerConfig {
    float gamma;            /* [planner] gamma: payback γ */
    float threshold;        /* [planner] threshold: relative drift that triggers a replan */
    float alpha;            /* [planner] alpha: weight of each step in the running mean of the step overhead */
    float memory_gib;       /* [planner] memory_gib: memory per rank the cost model plans with (0 = physical / ranks) */
    int every_k;             /* [planner] every_k: the every-k policy's period */
    int warmup;              /* [planner] warmup: steps measured before the first decision */
    int sweep_plans;         /* [planner] sweep_plans: plans a sweep samples and runs */
    int sweep_steps;         /* [planner] sweep_steps: steps per plan in a sweep (the first not measured) */
    int sweep_calibrate;     /* [planner] sweep_calibrate: sampled plans the sweep calibrates on (the rest are held out) */
    int sweep_seed;          /* [planner] sweep_seed: the sample's seed (0: [run] seed) */
    int sweep_reference;     /* [planner] sweep_reference: re-run the first sampled plan after every N held-out ones
                                (the machine's speed over the run); 0 = never */
    float guard_margin;      /* [planner] guard_margin: revert a move measured slower than the old plan by more (0: off) */
    int guard_steps;         /* [planner] guard_steps: steps of the new plan measured before the guard judges it */
    int max_staleness;       /* [planner] max_staleness: the largest K the planner may choose (-1: [ppo] max_staleness, fixed) */
    char policy[16];         /* [planner] policy: off | static | payback | admit-all | every-k | sweep (16: the longest choice fits, and the struct keeps [trace] 8-byte aligned) */
} PlannerConfig;

typedef struct CkptConfig {
    int every;               /* [ckpt] every: write a checkpoint every N PPO steps (0 = only at the end / on signal) */
    char dir[CFG_STR];       /* [ckpt] dir: where checkpoints are written */
    int keep;                /* [ckpt] keep: how many of the newest checkpoints to keep */
    int overwrite;           /* [ckpt] overwrite: bool, a fresh run may write over an earlier run's checkpoints */
} CkptConfig;

/* [elastic]: ranks that join the job while it runs (under ULFM: docs/ELASTIC.md) */
typedef struct ElasticConfig {
    int respawn;             /* [elastic] respawn: bool, spawn replacements for ranks that died or left */
    int grow_to;             /* [elastic] grow_to: grow the job to this many ranks at checkpoints (0 = off) */
    int in_memory;           /* [elastic] in_memory: bool, recover from the shards' copies in memory (memrec.h) */
    int buddy;               /* [elastic] buddy: bool, a copy of each shard no other rank holds on its buddy rank */
    int buddy_every;         /* [elastic] buddy_every: the copies in memory are taken every this many steps */
} ElasticConfig;

/* [switch]: one change of plan during the run. The plan is kept as the deck
 * gave it (not resolved): the job resolves it against itself at the switch,
 * so that an infeasible plan is refused then and the run goes on under the
 * old one. */
typedef struct SwitchConfig {
    int step;                /* [switch] step: switch before PPO step N (0-based, as checkpoints); -1 = none */
    PlanConfig plan;         /* [switch] default and one key per model-stage, as in [plan] */
} SwitchConfig;

/* [transition]: how the transition engine moves models between plans, and
 * the link it assumes when predicting a transition's time. The doubles come
 * first so that the struct has no hole between fields (the deck's table test
 * checks that every byte of Config up to its last field belongs to a key). */
typedef struct TransitionConfig {
    double memory_mib;       /* [transition] memory_mib: per-rank budget (model state + buffers), MiB; 0 = none */
    double bandwidth_gbs;    /* [transition] bandwidth_gbs: link bandwidth for predictions, GB/s (1e9 bytes/s) */
    double latency_us;       /* [transition] latency_us: per-message latency for predictions, µs */
    double comm_setup_us;    /* [transition] comm_setup_us: cost of creating one communicator for predictions, µs */
    int chunk_kib;           /* [transition] chunk_kib: slabs are cut into chunks of at most this, KiB */
    int window_kib;          /* [transition] window_kib: in flight per rank (sends + receives), KiB; ≥ chunk */
    int verify;              /* [transition] verify: bool, checksum every moved model before and after */
    int forward;             /* [transition] forward: bool, a new replica may get a stream from an earlier one */
    int keep_comms;          /* [transition] keep_comms: communicator sets kept for reuse (emu_cache_set_keep) */
    char sync[12];           /* [transition] sync: engine | broadcast (the per-step weight sync path) */
} TransitionConfig;

/* [data]: a prompt dataset (dataset.h, docs/TEXT.md "Prompt datasets"). The int first, then strings whose
 * sizes are multiples of 4: no hole inside, and what follows stays aligned. */
typedef struct DataConfig {
    int eval_size;             /* [data] eval_size: the first N eval prompts that fit; 0 = all */
    int eval_every;            /* [eval] every: PPO steps between evaluations on the held-out prompts (0: before
                                  and after PPO only) */
    int eval_prompts;          /* [eval] prompts: held-out prompts of the digit tasks per evaluation */
    char chat[12];             /* [data] chat: auto | none (12 with eval_prompts' 4: no hole) */
    char train[CFG_STR];       /* [data] train: JSONL file of prompts ("" = no text data: the built-in tasks) */
    char eval[CFG_STR];        /* [data] eval: JSONL file of evaluation prompts ("" = none) */
    char prompt_key[64];       /* [data] prompt_key: the key of each line's prompt text */
    char answer_key[64];       /* [data] answer_key: the key of each line's answer */
    char tokenizer[CFG_STR];   /* [data] tokenizer: HF directory, GGUF file or checkpoint ("" = [model] init_from) */
    char system[1024];         /* [data] system: the system prompt ("" = the template's own default, if any) */
    char eval_responses[CFG_STR]; /* [eval] responses: JSONL of each evaluation's per-prompt responses ("" = none) */
} DataConfig;

/* [trace]: the run's HDF5 trace (trace.h, docs/TRACE.md) and its counters. */
typedef struct TraceConfig {
    int samples;               /* [trace] samples: a text run's decoded samples every N steps (0: none) */
    int overwrite;             /* [trace] overwrite: bool, replace a trace an earlier run left at the path */
    char file[CFG_STR];        /* [trace] file: "" = NAME.trace.h5 in the current directory; none = no trace */
    char papi_events[CFG_STR]; /* [trace] papi_events: comma list of PAPI events per model-stage ("" = none) */
} TraceConfig;

/* [simulate]: a simulation deck (bin/nereus --simulate DECK, sim.h): a
 * MODELLED cluster and MODELLED models under a drift trace; nothing runs on
 * hardware. Doubles first, then ints, then strings: no hole inside, a size
 * that keeps what follows aligned. */
typedef struct SimulateConfig {
    double resp_len;           /* [simulate] resp_len: response tokens at the first step */
    double resp_len_end;       /* [simulate] resp_len_end: at the last step (geometric growth) */
    double resp_longest_ratio; /* [simulate] resp_longest_ratio: each step's longest response over its mean (0 = none) */
    double prompt_len;         /* [simulate] prompt_len */
    double gamma;              /* [simulate] gamma: payback γ */
    double threshold;          /* [simulate] threshold: drift threshold */
    double slow_factor;        /* [simulate] slow_factor: INJECTED slowdown of slow_rank */
    double model_error;        /* [simulate] model_error: σ of the MODELLED per-plan error (the study, seeds ≥ 1) */
    double step_noise;         /* [simulate] step_noise: σ of the MODELLED per-step noise */
    double tx_factor_min, tx_factor_max; /* [simulate] tx_factor_min, _max: a move's realised cost over its price */
    double warmup;             /* [simulate] warmup: extra fraction of the first step after a move */
    double network_gbs;        /* [simulate] network_gbs: the network's bandwidth per GPU, GB/s (0: the network's own) */
    double fail_rate;          /* [simulate] fail_rate: MODELLED failures per GPU-hour (0: none) */
    double repair_s;           /* [simulate] repair_s: seconds a failed GPU's node stays out of the pool */
    double detect_s;           /* [simulate] detect_s: seconds from a failure to the survivors' shrunk world */
    int gpus;                  /* [simulate] gpus (required in a simulation deck) */
    int ranks_per_node;        /* [simulate] ranks_per_node: 4 | 8 */
    int steps;                 /* [simulate] steps */
    int batch;                 /* [simulate] batch */
    int minibatch;             /* [simulate] minibatch */
    int epochs;                /* [simulate] epochs */
    int every_k;               /* [simulate] every_k: the every-k policy's period */
    int slow_rank;             /* [simulate] slow_rank: −1 = none */
    int slow_from, slow_to;    /* [simulate] slow_from, slow_to: steps [from, to) */
    int keep_comms;            /* [simulate] keep_comms: communicator sets kept for reuse ([transition] keep_comms) */
    int seeds;                 /* [simulate] seeds: 0 = the exact simulator's table; N = the study over N paired seeds */
    int first_seed;            /* [simulate] first_seed: the study's first seed */
    int fail_seed;             /* [simulate] fail_seed: the failure process's seed */
    int fail_ckpt_every;       /* [simulate] fail_ckpt_every: steps between the restart baseline's checkpoints */
    int fail_study;            /* [simulate] fail_study: runs of payback with one failure each (0: none) */
    char gpu[16];              /* [simulate] gpu: h100 | h200 | a100 */
    char network[16];          /* [simulate] network: infiniband | slingshot */
    char study[8];             /* [simulate] study: full | core (the study's policies: every variant, or the baselines,
                                  payback, payback-inf and the oracle) */
    char actor[32];            /* [simulate] actor: a modelled shape (planner.h) */
    char critic[32];           /* [simulate] critic */
    char availability[CFG_STR]; /* [simulate] availability: trace file of "STEP GPUS" lines ("" = none) */
} SimulateConfig;

/* The sections whose structs hold 8-byte fields come first, then those of 4-byte fields, then [trace]'s strings
 * (align 1) last: so no section leaves a hole before the next, whatever 4-byte fields a section gains (the key
 * table covers every byte but the trailing padding: test_deck). */
typedef struct Config {
    RunConfig run;
    ModelConfig model;
    SimulateConfig sim;      /* [simulate] (8-byte sized: [transition] stays aligned after it) */
    TransitionConfig transition; /* [transition] */
    TaskConfig task;
    OptimConfig optim;
    SftConfig sft;
    PpoConfig ppo;
    RewardConfig reward;
    InjectConfig inject;
    PlannerConfig planner;
    CkptConfig ckpt;
    ElasticConfig elastic;   /* [elastic] */
    PlanConfig plan;         /* [plan] default and one key per model-stage (plan.h) */
    SwitchConfig sw;         /* [switch] (`switch` is a C keyword) */
    DataConfig data;         /* [data] and [eval] (two ints, then strings of sizes that are multiples of 4) */
    TraceConfig trace;       /* [trace] (two ints, then strings) */
} Config;

#endif
