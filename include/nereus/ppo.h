/* ppo.h — one PPO step on the four models: rollout (gen), scoring (inf),
 * advantages, and clipped-surrogate / clipped-value updates (train); and the
 * SFT warm-start. Drives the models through model.h only: no MPI here.
 *
 * Per-position arrays are (B, Tcap) and aligned with the logits: entry t
 * concerns the prediction of token t+1, so response token j (0-based) of
 * sequence b sits at t = P − 1 + j. mask[b,t] is 1 exactly there.
 */
#ifndef NEREUS_PPO_H
#define NEREUS_PPO_H

#include "nereus/config.h"
#include "nereus/model.h"
#include "nereus/task.h"

typedef struct Rollout {
    int B, P, T, Tcap;     /* sequences, the longest prompt a row can have, current length, capacity (P + max_response) */
    int *plen;             /* (B) each row's prompt length (P for the fixed-length digit tasks): row b's response
                              starts at token plen[b] */
    int Bg, b0;            /* the step's global batch, and the first of this rollout's B rows in it */
    uint64_t sample_base;  /* global sample index of row b at step s: base + s·Bg + b0 + b */
    int group;             /* responses per prompt ([ppo] group_size; 1 for ppo): global row i of step s has the
                              prompt of index base + (s·Bg + i) / group, so a group's rows share it */
    int *tokens;           /* (B, Tcap) prompt, response, EOS padding (generation) */
    int *seq;              /* (B, T) the same sequences, dense, from ppo_score on */
    int *targets;          /* (B, T) next token where mask, else −1 */
    int *resp_len;         /* (B) generated tokens incl. a final EOS */
    int amax;              /* task_max_answer: the answer stride */
    int *answer;           /* (B, amax) */
    int *answer_len;       /* (B) */
    int *kind;             /* (B) task kind; for text tasks the prompt set's index of the row's prompt */
    int eos[2];            /* a response ends at either token (the digit tasks: TOK_EOS twice); padding is eos[0] */
    const TaskSet *ts;     /* the tasks of the last rollout_prompts: what the rewards score against */
    float *task_reward;    /* (B) rule reward in [0, 1] */
    float *score;          /* (B) task reward (+ weighted reward-network score) */
    float *logp_old, *logp_ref, *values, *rm_values, *rewards, *adv, *ret, *mask; /* (B, T) dense */
    float *logp_gen;       /* the behaviour log-probabilities: the generating actor's log-softmax (temperature 1,
                              the real vocabulary) of each sampled token, recorded as it is sampled, at the position
                              that predicts it: (B, Tcap) rows during generation, (B, T) dense from rollout_finish;
                              0 off the response and where generation ran greedily */
    int *next;             /* (B) during generation: the next token of each row still generating, in act order */
    int *act, nact;        /* (B) during generation: the rows still generating, increasing; their count */
    const Backend *be;     /* the actor's backend, for the buffers below */
    float *d_u;            /* (B) backend: one uniform per sequence */
    int *d_next;           /* (B) backend: sampled tokens */
    float *d_blogp;        /* (B) backend: their behaviour log-probabilities */
} Rollout;

typedef struct StepStats {
    double reward;         /* mean task reward */
    double score;          /* mean total score */
    double kl;             /* mean per-token log(actor/ref) on sampled tokens */
    double pg_loss, vf_loss, entropy, clipfrac, approx_kl, grad_norm_actor, grad_norm_critic;
    double kl_k3;          /* grpo: mean k3 KL(actor‖ref) over the updates' response tokens (the loss adds β·it) */
    double logp_gap;       /* mean |log π_old − log π_gen| over the response tokens: the scoring actor against the
                              generating one on the same tokens (0 where both compute the same bits) */
    double gen_kl;         /* mean log π_gen − log π_old over the response tokens: KL(π_gen‖π_old) estimated on
                              the generated samples */
    double tis_mean;       /* [ppo] tis_cap: the mean truncated importance weight over the updates' tokens (job_step: 1 off) */
    double tis_capped;     /* ... and the fraction of those tokens whose weight the cap truncated */
    double resp_len;       /* mean response length (tokens incl. EOS) */
    double t_gen, t_inf, t_train;  /* seconds */
    double tokens;         /* sequence tokens processed in the step (B × T) */
    double seq_tokens;     /* the rows' own tokens: Σ prompt + response (end token included), no padding */
    double gen_version;    /* the weight version that generated the batch (the steps its weights had trained) */
    double staleness;      /* the step less gen_version: 0 in a synchronous run, at most [ppo] max_staleness */
    double rollout_bytes;  /* the rollout's bytes between ranks in the step (rollq.h) */
    int finite;            /* 0 when a loss or gradient norm was not finite */
    char sample[128];      /* one decoded example "R1234=4321$ (1.00)" */
} StepStats;

/* Allocate the buffers for B rows (rows b0 .. b0+B−1 of a global batch of
 * Bg) of cfg's PPO step: host arrays, and a few on backend be. */
void rollout_alloc(Rollout *r, const Config *cfg, const TaskSet *ts, const Backend *be, int B, int Bg, int b0);
void rollout_free(Rollout *r);
/* Prompts and answers of the step's rows (pure: every rank can make them). */
void rollout_prompts(Rollout *r, const TaskSet *ts, int step);
/* The rule reward of row b's response (its tokens from plen[b], resp_len[b] of them) in tokens (rows ld
 * apart): the digit tasks' task_reward, or the text task's reward on the decoded text. correct and formatted
 * (may be NULL) get whether the answer is right (the digit tasks: all of it) and whether the rule found one
 * (the digit tasks: 1). */
float rollout_row_reward(const Rollout *r, const int *tokens, size_t ld, int b, int *correct, int *formatted);
/* the longest response of the rollout (tokens, its end token included) */
int rollout_longest(const Rollout *r);
/* After generation: T from the response lengths, the dense EOS-padded
 * sequences seq (B, T), targets and mask. */
void rollout_finish(Rollout *r);

/* gen: prompts of global samples step·B .. step·B+B−1, then sampling from
 * the actor with the KV cache. Random numbers depend on (seed, sample,
 * position) only. */
/* gen: the prompts in one batched prefill, then one KV-cached decode step per response position over the
 * rows still generating only: a row that samples EOS leaves the batch (its cache slot stays where it is),
 * so a step costs what the sequences still generating need. The tokens are those of decoding every row to
 * the end: a row's logits do not depend on the other rows. */
void ppo_generate(Rollout *r, GPT *actor, const Config *cfg, const TaskSet *ts, int step);
/* The INJECTED minimum response length at PPO step `step` ([inject]
 * resp_len_from → resp_len_to over resp_len_ramp steps; 0 = none): before
 * it, a sampled EOS is replaced by '=' so that the responses really grow. */
int ppo_min_response(const Config *cfg, int step);
/* gen without the KV cache (full forward per token): the baseline that the
 * cached path must reproduce exactly, and a benchmark. */
void ppo_generate_nocache(Rollout *r, GPT *actor, const Config *cfg, const TaskSet *ts, int step);
/* inf, one model over rows [row0, row0 + n) of a finished rollout: the log-probs of the sampled tokens
 * (values 0) or the values (values 1) into out (n, T), 0 past each row's end. The rows go longest first in
 * forward passes of `chunk` rows, each pass over the positions of its longest row: the same bits as one pass
 * over all rows at T (a row's result depends on neither the rows beside it nor the positions after its end). */
void ppo_infer_stage_rows(GPT *m, const Rollout *r, int row0, int n, int chunk, int values, float *out);
/* the positions a row's scoring and training need: its prompt and response (at least one token) */
int rollout_row_len(const Rollout *r, int b);
/* rows[0..n) ordered longest first, ties by row */
void rollout_rows_by_len(const Rollout *r, int *rows, int n);
/* the longest of rows[0..n) */
int rollout_rows_len(const Rollout *r, const int *rows, int n);
/* From logp_old, logp_ref, values (and rm_values when have_rm): rule and
 * network scores, per-token KL-penalised rewards, GAE advantages, returns.
 * Pure: every rank holding the rollout computes the same numbers. */
void ppo_advantages(Rollout *r, const Config *cfg, int have_rm, StepStats *st);

/* Data parallelism seen from a training loop: this replica's index and the
 * replica count, and the hook that sums gradients over the replicas after
 * each backward (NULL with one replica). */
typedef struct ReplicaShare {
    int d, dp;
    void (*grad_sync)(GPT *m, void *ctx);
    void *ctx;
} ReplicaShare;
enum { PPO_ACTOR = 0, PPO_CRITIC = 1 };
/* train: epochs × minibatches of updates of one model (PPO_ACTOR: clipped
 * surrogate − entropy bonus; PPO_CRITIC: clipped value loss). Replica d
 * takes rows [d·n/dp, (d+1)·n/dp) of each minibatch of n; losses are
 * normalised by the whole minibatch's tokens, so the summed gradients equal
 * one replica's on the whole minibatch. st gets this replica's loss sums. */
void ppo_train_model(int which, GPT *m, const Rollout *r, const Config *cfg, int step, const ReplicaShare *sh,
                     StepStats *st);

/* Σ task reward of greedy decoding (temperature 0) over rows b0 .. b0+B−1
 * of nbatches held-out batches of Bg prompts, counting the rows whose index in
 * the evaluation is below limit: for the digit tasks sample indices from 2^50,
 * which neither SFT (2^40) nor PPO (0 ..) ever draws; for text tasks (ts the
 * eval set's) samples 0 .., each eval prompt once in the first n. */
typedef struct EvalStats {
    double n, reward, correct, formatted, len; /* rows; sums of their reward, right answers, answers the rule
                                                  found, response lengths */
} EvalStats;
/* Each evaluated prompt's row (where asked for): EVAL_ROW_HEAD numbers (the prompt's item, its score, right,
 * answer found, response length) then maxr response ids, at the row's place in the evaluation (0..n) */
#define EVAL_ROW_HEAD 5
typedef struct EvalRows {
    int n, maxr; /* rows, response ids each at most */
    double *v;   /* (n * (EVAL_ROW_HEAD + maxr)) zero where no row was evaluated */
} EvalRows;
void ppo_eval_greedy(GPT *actor, const Config *cfg, const TaskSet *ts, int B, int Bg, int b0, int nbatches,
                     uint64_t limit, EvalStats *sum, EvalRows *rows);

/* ---- pure pieces (unit-tested) ---- */
/* GAE over one sequence of n response positions: rewards r, values v; the
 * value after the last position is 0 (the episode ends). adv, ret (n). */
void gae_sequence(float *adv, float *ret, const float *r, const float *v, int n, float gamma, float lam);
/* x ← (x − mean) / (std + 1e-8) over entries with mask ≠ 0; others set to 0. */
void whiten_masked(float *x, const float *mask, size_t n);

/* ---- GRPO (src/ppo/grpo.c) ---- */
/* 1 when the deck's algorithm is GRPO (critic-free: group advantages, k3 KL in the loss) */
int ppo_is_grpo(const Config *cfg);
/* the cap of the truncated importance weights the policy loss takes ([ppo] correction, docs/ASYNC.md): 0 = none
 * (correction = none, or auto in a synchronous run without tis_cap); [ppo] tis_cap where set, else 2 */
float ppo_tis_cap(const Config *cfg);
/* Group-relative advantages: rows [g·G, g·G + G) of reward (B, a multiple of G) are one group; adv[i] =
 * (reward[i] − the group's mean) / (its sample standard deviation + eps), or without use_std the difference
 * alone. A group whose rewards are all equal gets 0. */
void grpo_group_advantages(const float *reward, int B, int G, int use_std, float eps, float *adv);
/* Group-relative advantages of process rewards (DeepSeekMath 4.1.3): credit (B, S) holds row b's step
 * rewards in [0, nsteps[b]); each is normalised by the mean and standard deviation (sample, + eps; or the
 * mean alone without use_std) of all the step rewards of its group of G rows. adv (B, S): token t < resp_len[b]
 * of row b gets the sum of the normalised rewards of the steps taken at or after it, step j being taken at
 * token min(j, resp_len[b] − 1); tokens from resp_len[b] on get 0. A group whose step rewards are all equal
 * gets 0. S ≥ every nsteps and resp_len. */
void grpo_process_advantages(const float *credit, const int *nsteps, const int *resp_len, int S, int B, int G,
                             int use_std, float eps, float *adv);
/* Process advantages with a per-position group baseline ([ppo] process_baseline = position): token t of row b
 * gets its return-to-go R_t (the sum of its row's credits of the steps taken at or after t, steps taken as in
 * grpo_process_advantages) minus the mean of R_t over the group's rows with a token t, divided by their sample
 * standard deviation + eps with use_std. A position that one row alone reaches, or where the group's R_t are
 * equal, gets 0; tokens from resp_len[b] on get 0. */
void grpo_position_advantages(const float *credit, const int *nsteps, const int *resp_len, int S, int B, int G,
                              int use_std, float eps, float *adv);
/* [ppo] group_std_scope = batch (REINFORCE++-baseline; TRL's scale_rewards = batch): adv (B, S), already
 * centred on each group's baseline, divided in place by their root mean square (their spread about 0) + eps over
 * every response token of the batch (t < resp_len[b]); the rest untouched. All zero stays zero. */
void grpo_batch_scale(float *adv, const int *resp_len, int S, int B, float eps);
/* A diagnostic of process advantages adv (B, S) against the credits they came from, over the tokens that take
 * exactly one step: out[0] the mean squared advantage, out[1] the squared correlation of a token's advantage with
 * its own step credit (the share of the advantage's variance its own action explains), out[2] the token count. */
void grpo_advantage_signal(const float *adv, const float *credit, const int *nsteps, const int *resp_len, int S,
                           int B, double out[3]);
/* The k3 term of GRPO's actor loss over n tokens with weights w: returns Σ w·k3, k3 = exp(x) − x − 1 with
 * x = logp_ref − logp (clamped to ±GRPO_K3_CLAMP), and adds β·w·(1 − exp(x)), the gradient of β·w·k3 with
 * respect to logp, to dlogp (when not NULL). */
#define GRPO_K3_CLAMP 20.0
double grpo_kl_k3(const float *logp, const float *logp_ref, const float *w, int n, float beta, float *dlogp);

/* ---- SFT warm-start ---- */
typedef struct SftData {
    int use_tokens;
    TokenFile tf;
    int T;                 /* sequence length */
    int *tokens, *targets; /* (batch, T) */
    float *logp, *dlogp;   /* (batch, T) */
} SftData;
/* Returns 0, or 2 with a message on stderr (rank 0) for bad data. */
int sft_open(SftData *d, const Config *cfg, const TaskSet *ts, int V, const char *deck_path);
void sft_close(SftData *d);
/* One SFT step; rows [d·batch/dp, (d+1)·batch/dp) of the step's batch are
 * this replica's. Returns this replica's share of the mean token
 * cross-entropy before the update (the shares sum to the batch's mean). */
float sft_step(SftData *d, GPT *actor, const Config *cfg, const TaskSet *ts, int step, const ReplicaShare *sh);

#endif
