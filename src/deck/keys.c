/* keys.c — the deck reference table: every key of every section, with its
 * type, default, allowed range or choices, one-line meaning and where it
 * lives in Config. This table is the single source of truth: deck.c resolves
 * and validates values from it, prints the resolved deck from it, and
 * generates inputs/REFERENCE.md from it. A new Config field is one new row.
 *
 * Defaults are written as deck text and resolved through the same code as a
 * value from a file, so a default is checked against its own range (the
 * unit test resolves an all-defaults deck).
 */
#include <stddef.h>
#include <string.h>

#include "nereus/config.h"
#include "deck_int.h"

/* Where a field lives, with a compile-time check that the member has the C
 * type the row claims (_Generic fails to compile otherwise): a row cannot
 * point an int parser at a float field. */
#define DECK_M(member) (((Config *)0)->member)
#define F_INT(m)   _Generic(DECK_M(m), int: offsetof(Config, m)), sizeof DECK_M(m)
#define F_I64(m)   _Generic(DECK_M(m), long long: offsetof(Config, m)), sizeof DECK_M(m)
#define F_FLT(m)   _Generic(DECK_M(m), float: offsetof(Config, m)), sizeof DECK_M(m)
#define F_DBL(m)   _Generic(DECK_M(m), double: offsetof(Config, m)), sizeof DECK_M(m)
#define F_STR(m)   _Generic(DECK_M(m), char *: offsetof(Config, m)), sizeof DECK_M(m)
#define F_PLAN(m)  _Generic(DECK_M(m), PlanStage: offsetof(Config, m)), sizeof DECK_M(m)

#define NONE DECK_B_NONE, 0.0
#define GE(x) DECK_B_INCL, (x)
#define GT(x) DECK_B_EXCL, (x)
#define LE(x) DECK_B_INCL, (x)
#define LT(x) DECK_B_EXCL, (x)

#define REQ DECK_F_REQUIRED
#define STEM DECK_F_STEM

/* The rows of a plan section ([plan], [switch]): `default`, then one key per
 * model-stage in PlanStageId order, all into the PlanConfig `m`. One macro so
 * that both sections take the same keys, parsed the same way; only the
 * meaning of `default` differs (in [switch], "none listed" is no plan). */
#define DECK_PLAN_ROWS(sec, m, default_meaning)                                                                    \
    {sec, "default", DECK_T_CHOICE, 0, "auto", NONE, NONE, "auto|colocated|disaggregated", F_STR(m.fill),          \
     default_meaning},                                                                                            \
    {sec, "actor.gen", DECK_T_PLAN, 0, "default", NONE, NONE, NULL, F_PLAN(m.stage[PLAN_ACTOR_GEN]),              \
     "EMU of the actor's rollout (generation)"},                                                                  \
    {sec, "actor.inf", DECK_T_PLAN, 0, "default", NONE, NONE, NULL, F_PLAN(m.stage[PLAN_ACTOR_INF]),              \
     "EMU of the actor's scoring (old log-probs)"},                                                               \
    {sec, "actor.train", DECK_T_PLAN, 0, "default", NONE, NONE, NULL, F_PLAN(m.stage[PLAN_ACTOR_TRAIN]),          \
     "EMU of the actor's PPO update (dp must also divide ppo.minibatch)"},                                        \
    {sec, "ref.inf", DECK_T_PLAN, 0, "default", NONE, NONE, NULL, F_PLAN(m.stage[PLAN_REF_INF]),                  \
     "EMU of the frozen reference policy's scoring"},                                                             \
    {sec, "critic.inf", DECK_T_PLAN, 0, "default", NONE, NONE, NULL, F_PLAN(m.stage[PLAN_CRITIC_INF]),            \
     "EMU of the critic's value scoring"},                                                                        \
    {sec, "critic.train", DECK_T_PLAN, 0, "default", NONE, NONE, NULL, F_PLAN(m.stage[PLAN_CRITIC_TRAIN]),        \
     "EMU of the critic's update (dp must also divide ppo.minibatch)"},                                           \
    {sec, "reward.inf", DECK_T_PLAN, 0, "default", NONE, NONE, NULL, F_PLAN(m.stage[PLAN_REWARD_INF]),            \
     "EMU of the reward (rule scorer, or the frozen reward network)"}

/* clang-format off */
const DeckKey deck_keys[] = {
    /* section, key, type, flags, default, low, high, choices, field, meaning */
    {"run", "name", DECK_T_STRING, STEM, NULL, NONE, NONE, NULL, F_STR(run.name),
     "label of the run in logs and output files"},
    {"run", "seed", DECK_T_INT64, 0, "1234", GE(0), NONE, NULL, F_I64(run.seed),
     "seed of every random stream: prompts, sampling, initialisation"},
    {"run", "backend", DECK_T_CHOICE, 0, "auto", NONE, NONE, "auto|cpu|cuda", F_STR(run.backend),
     "compute backend; auto = cuda when a GPU is present and the build has CUDA, else cpu"},
    {"run", "blas_threads", DECK_T_INT, 0, "1", GE(1), LE(256), NULL, F_INT(run.blas_threads),
     "BLAS threads per rank (CPU backend); keep ranks on a node × threads within its cores (a warning says where not)"},
    {"run", "log_every", DECK_T_INT, 0, "1", GE(1), LE(1000000), NULL, F_INT(run.log_every),
     "print a progress line every N steps"},
    {"run", "precision", DECK_T_CHOICE, 0, "fp32", NONE, NONE, "fp32|tf32", F_STR(run.precision),
     "GEMM precision: fp32, or tf32 (the CUDA backend's tensor cores; the CPU backend always computes fp32 and says so)"},
    {"run", "expect_reward_gain", DECK_T_DOUBLE, 0, "0", NONE, NONE, NULL, F_DBL(run.expect_reward_gain),
     "the learning this deck expects: verify.learned is yes when verify.reward_gain (last 10 PPO steps' mean reward minus the first 10's) is above it, no otherwise; verify.status says only that the run finished with finite numbers"},
    {"run", "restart", DECK_T_STRING, 0, "", NONE, NONE, NULL, F_STR(run.restart),
     "checkpoint (HDF5) to resume from under this deck's plan and rank count; \"\" = start fresh (bin/nereus --restart FILE overrides)"},

    {"model", "n_layer", DECK_T_INT, REQ, NULL, GE(1), LE(4096), NULL, F_INT(model.n_layer),
     "number of transformer blocks"},
    {"model", "n_embd", DECK_T_INT, REQ, NULL, GE(1), LE(65536), NULL, F_INT(model.n_embd),
     "embedding width C (a multiple of n_head)"},
    {"model", "n_head", DECK_T_INT, REQ, NULL, GE(1), LE(1024), NULL, F_INT(model.n_head),
     "attention heads (must divide n_embd)"},
    {"model", "max_seq", DECK_T_INT, 0, "64", GE(2), LE(1048576), NULL, F_INT(model.max_seq),
     "context length: number of learned positions"},
    {"model", "vocab_size", DECK_T_INT_AUTO, 0, "auto", GE(1), LE(1000000), NULL, F_INT(model.vocab_size),
     "vocabulary size; auto (stored as 0) = the task vocabulary"},
    {"model", "init_std", DECK_T_FLOAT, 0, "0.02", GT(0), LE(1), NULL, F_FLT(model.init_std),
     "standard deviation of the normal weight initialisation"},
    {"model", "arch", DECK_T_CHOICE, 0, "gpt2", NONE, NONE, "gpt2|llama|qwen2|qwen3", F_STR(model.arch),
     "architecture: gpt2 (LayerNorm, GELU, learned positions), or the Llama family (RMSNorm, SwiGLU, RoPE, grouped-query attention; qwen2: qkv biases, qwen3: q/k norm); the Llama family runs under tensor parallelism (tp must divide n_kv_head and ffn_dim), pipeline and data parallelism like gpt2; the keys below apply to the Llama family only: with arch = gpt2 a deck may set them only to their defaults (anything else is refused)"},
    {"model", "n_kv_head", DECK_T_INT_AUTO, 0, "auto", GE(1), LE(1024), NULL, F_INT(model.n_kv_head),
     "key/value heads of grouped-query attention (must divide n_head); auto (stored as 0) = n_head"},
    {"model", "head_dim", DECK_T_INT_AUTO, 0, "auto", GE(1), LE(65536), NULL, F_INT(model.head_dim),
     "per-head width of q, k and v; auto (stored as 0) = n_embd / n_head"},
    {"model", "ffn_dim", DECK_T_INT_AUTO, 0, "auto", GE(1), LE(1048576), NULL, F_INT(model.ffn_dim),
     "hidden width of the SwiGLU MLP (intermediate_size); auto (stored as 0) = 4 n_embd"},
    {"model", "rope_theta", DECK_T_DOUBLE, 0, "10000", GT(0), NONE, NULL, F_DBL(model.rope_theta),
     "RoPE base"},
    {"model", "rope_scaling_factor", DECK_T_DOUBLE, 0, "0", GE(0), LE(1024), NULL, F_DBL(model.rope_scaling_factor),
     "Llama-3 RoPE frequency scaling factor; 0 = no scaling (the three rope_* keys below then do nothing)"},
    {"model", "rope_low_freq_factor", DECK_T_DOUBLE, 0, "1", GT(0), NONE, NULL, F_DBL(model.rope_low_freq_factor),
     "Llama-3 RoPE scaling: low-frequency factor (below rope_high_freq_factor)"},
    {"model", "rope_high_freq_factor", DECK_T_DOUBLE, 0, "4", GT(0), NONE, NULL, F_DBL(model.rope_high_freq_factor),
     "Llama-3 RoPE scaling: high-frequency factor (above rope_low_freq_factor)"},
    {"model", "rope_original_max_seq", DECK_T_INT, 0, "8192", GE(1), LE(16777216), NULL, F_INT(model.rope_original_max_seq),
     "Llama-3 RoPE scaling: the context length the model was trained with (original_max_position_embeddings)"},
    {"model", "norm_eps", DECK_T_DOUBLE, 0, "1e-5", GT(0), LE(1), NULL, F_DBL(model.norm_eps),
     "RMSNorm epsilon"},
    {"model", "tie_embeddings", DECK_T_BOOL, 0, "true", NONE, NONE, NULL, F_INT(model.tie_embeddings),
     "LM head tied to the token embedding; false = a separate output head (V, n_embd)"},
    {"model", "qkv_bias", DECK_T_CHOICE, 0, "auto", NONE, NONE, "auto|true|false", F_STR(model.qkv_bias),
     "biases on q, k and v; auto = the arch's own (qwen2: true; llama, qwen3: false)"},
    {"model", "qk_norm", DECK_T_CHOICE, 0, "auto", NONE, NONE, "auto|true|false", F_STR(model.qk_norm),
     "per-head RMSNorm of q and k before RoPE; auto = the arch's own (qwen3: true; llama, qwen2: false)"},
    {"model", "gen_dtype", DECK_T_CHOICE, 0, "fp32", NONE, NONE, "fp32|bf16", F_STR(model.gen_dtype),
     "weights actor.gen generates with: fp32, or bf16 = a bfloat16 copy of the fp32 weights, made at each "
     "generation from the synced weights, that every GEMM of prefill and decode reads (half the bytes; "
     "activations rounded to bf16 at the GEMM, sums in fp32); training keeps fp32 master weights. The gap "
     "between the generating and the training policy is traced (logp_gap); [ppo] tis_cap corrects for it"},
    {"model", "score_dtype", DECK_T_CHOICE, 0, "fp32", NONE, NONE, "fp32|bf16", F_STR(model.score_dtype),
     "weights the scoring EMUs (actor.inf, ref.inf, critic.inf, reward.inf) infer with: fp32, or bf16 as gen_dtype"},
    {"model", "init_from", DECK_T_STRING, 0, "", NONE, NONE, NULL, F_STR(model.init_from),
     "checkpoint (HDF5, e.g. from bin/nereus-ckpt import-hf or import-llmc, or a run's) whose model \"actor\" starts this run's actor and ref, read under this deck's plan: initialisation, not a restart (PPO step 0, SFT step 0, fresh AdamW state; the critic keeps its fresh value head and, as in any run, takes the actor's trunk when PPO starts; with [sft] steps, SFT continues from these weights and the ref is the actor after SFT, as in any run); the file's actor must have this [model]; \"\" = none (a fresh initialisation); a restart ([run] restart, --restart) continues a run and wins: init_from is then ignored"},

    {"task", "names", DECK_T_LIST, 0, "reverse,sort", NONE, NONE, "reverse|sort|add", F_STR(task.names),
     "tasks that prompts are drawn from, comma separated"},
    {"task", "digits", DECK_T_INT, 0, "4", GE(1), LE(16), NULL, F_INT(task.digits),
     "digits per prompt"},

    {"optim", "beta1", DECK_T_FLOAT, 0, "0.9", GE(0), LT(1), NULL, F_FLT(optim.beta1),
     "AdamW first-moment decay"},
    {"optim", "beta2", DECK_T_FLOAT, 0, "0.95", GE(0), LT(1), NULL, F_FLT(optim.beta2),
     "AdamW second-moment decay"},
    {"optim", "eps", DECK_T_FLOAT, 0, "1e-5", GT(0), NONE, NULL, F_FLT(optim.eps),
     "AdamW denominator epsilon (1e-5, as PPO practice uses: a smaller one turns the rounding noise of near-zero gradients into full-size steps, so runs under different plans drift apart)"},
    {"optim", "weight_decay", DECK_T_FLOAT, 0, "0.0", GE(0), NONE, NULL, F_FLT(optim.weight_decay),
     "AdamW decoupled weight decay"},
    {"optim", "max_grad_norm", DECK_T_FLOAT, 0, "1.0", GE(0), NONE, NULL, F_FLT(optim.max_grad_norm),
     "clip the global gradient norm to this; 0 disables clipping"},

    {"sft", "steps", DECK_T_INT, 0, "0", GE(0), NONE, NULL, F_INT(sft.steps),
     "supervised warm-start steps before PPO; 0 = none"},
    {"sft", "batch", DECK_T_INT, 0, "32", GE(1), LE(65536), NULL, F_INT(sft.batch),
     "sequences per SFT step"},
    {"sft", "lr", DECK_T_FLOAT, 0, "3e-3", GT(0), LE(10), NULL, F_FLT(sft.lr),
     "SFT learning rate"},
    {"sft", "data", DECK_T_CHOICE, 0, "task", NONE, NONE, "task|tokens", F_STR(sft.data),
     "SFT data: task = solved task prompts, tokens = an llm.c token file"},
    {"sft", "tokens_file", DECK_T_STRING, 0, "", NONE, NONE, NULL, F_STR(sft.tokens_file),
     "llm.c token file; required when data = tokens"},
    {"sft", "seq", DECK_T_INT, 0, "0", GE(0), NONE, NULL, F_INT(sft.seq),
     "sequence length for data = tokens; 0 = model.max_seq; at most model.max_seq"},

    {"ppo", "steps", DECK_T_INT, 0, "20", GE(0), NONE, NULL, F_INT(ppo.steps),
     "PPO steps"},
    {"ppo", "batch", DECK_T_INT, 0, "32", GE(1), LE(65536), NULL, F_INT(ppo.batch),
     "prompts (= sequences) per PPO step"},
    {"ppo", "epochs", DECK_T_INT, 0, "2", GE(1), LE(1000), NULL, F_INT(ppo.epochs),
     "passes over the batch per PPO step"},
    {"ppo", "minibatch", DECK_T_INT, 0, "8", GE(1), LE(65536), NULL, F_INT(ppo.minibatch),
     "sequences per optimiser update; must divide batch"},
    {"ppo", "actor_lr", DECK_T_FLOAT, 0, "1e-3", GT(0), LE(10), NULL, F_FLT(ppo.actor_lr),
     "actor (policy) learning rate"},
    {"ppo", "critic_lr", DECK_T_FLOAT, 0, "3e-3", GT(0), LE(10), NULL, F_FLT(ppo.critic_lr),
     "critic (value) learning rate"},
    {"ppo", "clip", DECK_T_FLOAT, 0, "0.2", GT(0), LE(10), NULL, F_FLT(ppo.clip),
     "surrogate ratio clip epsilon"},
    {"ppo", "value_clip", DECK_T_FLOAT, 0, "0.2", GT(0), LE(1e6), NULL, F_FLT(ppo.value_clip),
     "value-function clip epsilon"},
    {"ppo", "gamma", DECK_T_FLOAT, 0, "1.0", GE(0), LE(1), NULL, F_FLT(ppo.gamma),
     "discount factor"},
    {"ppo", "lam", DECK_T_FLOAT, 0, "0.95", GE(0), LE(1), NULL, F_FLT(ppo.lam),
     "GAE lambda"},
    {"ppo", "kl_beta", DECK_T_FLOAT, 0, "0.02", GE(0), NONE, NULL, F_FLT(ppo.kl_beta),
     "beta of the per-token KL(actor‖ref) penalty on the reward"},
    {"ppo", "entropy_coef", DECK_T_FLOAT, 0, "0.0", GE(0), NONE, NULL, F_FLT(ppo.entropy_coef),
     "entropy bonus weight"},
    {"ppo", "whiten_advantages", DECK_T_BOOL, 0, "true", NONE, NONE, NULL, F_INT(ppo.whiten_advantages),
     "normalise advantages to zero mean and unit variance over the batch"},
    {"ppo", "temperature", DECK_T_FLOAT, 0, "1.0", GE(0), LE(100), NULL, F_FLT(ppo.temperature),
     "sampling temperature; 0 = greedy"},
    {"ppo", "top_k", DECK_T_INT, 0, "0", GE(0), NONE, NULL, F_INT(ppo.top_k),
     "sample from the k most likely tokens; 0 = the full distribution"},
    {"ppo", "max_response", DECK_T_INT, 0, "8", GE(1), LE(1000000), NULL, F_INT(ppo.max_response),
     "most tokens generated per prompt"},
    {"ppo", "algorithm", DECK_T_CHOICE, 0, "ppo", NONE, NONE, "ppo|grpo", F_STR(ppo.algorithm),
     "ppo = actor, critic, ref, reward (seven model-stages; GAE advantages, KL in the reward); grpo = no critic "
     "(five model-stages: no critic.inf, critic.train), group-relative advantages, k3 KL in the actor loss"},
    {"ppo", "group_size", DECK_T_INT, 0, "1", GE(1), LE(65536), NULL, F_INT(ppo.group_size),
     "responses sampled per prompt (G); must divide batch; grpo needs at least 2 (a group of one has no "
     "relative advantage); ppo takes 1 only"},
    {"ppo", "group_std", DECK_T_BOOL, 0, "true", NONE, NONE, NULL, F_INT(ppo.group_std),
     "grpo: divide each response's advantage (reward - group mean) by the group's standard deviation + group_eps"},
    {"ppo", "group_eps", DECK_T_FLOAT, 0, "1e-6", GT(0), LE(1), NULL, F_FLT(ppo.group_eps),
     "grpo: epsilon added to the group's standard deviation"},
    {"ppo", "kl_loss_coef", DECK_T_FLOAT, 0, "0.04", GE(0), NONE, NULL, F_FLT(ppo.kl_loss_coef),
     "grpo: beta of the k3 estimator of the actor's KL divergence from the ref, added to the actor loss (kl_beta is not used)"},
    {"ppo", "clip_high", DECK_T_FLOAT, 0, "0", GE(0), LE(10), NULL, F_FLT(ppo.clip_high),
     "upper ratio clip epsilon (DAPO's clip-higher): the surrogate clips the ratio to [1 - clip, 1 + clip_high]; "
     "0 = clip (symmetric)"},
    {"ppo", "tis_cap", DECK_T_FLOAT, 0, "0", GE(0), LE(1000), NULL, F_FLT(ppo.tis_cap),
     "truncated importance sampling: each response token's policy loss is weighted by min(pi_old / pi_gen, "
     "tis_cap), pi_old the scoring actor's probability of the token and pi_gen the generating one's (they differ "
     "where gen_dtype or the layouts differ); 0 = off (the weight is 1). A cap of 2 is the usual choice"},
    {"ppo", "credit", DECK_T_CHOICE, 0, "outcome", NONE, NONE, "outcome|process", F_STR(ppo.credit),
     "outcome = the task reward as one number per response (ppo: on its last token; grpo: one group-relative "
     "advantage on every token); process = the reward's per-position credits (ppo: each on its position's token; "
     "grpo: DeepSeekMath's process supervision, each token the sum of the group-normalised credits from its "
     "position on); process refuses a reward network with a nonzero network_weight (it scores whole responses)"},
    {"ppo", "process_baseline", DECK_T_CHOICE, 0, "pooled", NONE, NONE, "pooled|position", F_STR(ppo.process_baseline),
     "grpo with credit = process: pooled = DeepSeekMath's, each step credit normalised by the mean and std of all "
     "the group's step credits, a token's advantage the sum of those from its position on; position = a "
     "per-position group baseline, a token's return-to-go minus the group's mean return-to-go at its position "
     "(over their std with group_std)"},
    {"ppo", "group_std_scope", DECK_T_CHOICE, 0, "group", NONE, NONE, "group|batch", F_STR(ppo.group_std_scope),
     "grpo with group_std = true: group = divide by each group's own standard deviation (GRPO); batch = subtract "
     "each group's baseline, then divide every token's advantage by their root mean square over the whole "
     "batch (REINFORCE++-baseline's global normalisation, TRL's scale_rewards = batch)"},
    {"ppo", "max_staleness", DECK_T_INT, 0, "0", GE(0), LE(8), NULL, F_INT(ppo.max_staleness),
     "asynchronous rollouts: K, the most weight versions a trained sample may lag the weights it trains. 0 = "
     "synchronous (each step generates its batch, then scores and trains it); K >= 1: actor.gen generates the "
     "batches of steps k+1 .. k+K while step k scores and trains, so generation overlaps the rest where actor.gen "
     "has ranks of its own (docs/ASYNC.md)"},
    {"ppo", "micro_batch", DECK_T_INT, 0, "0", GE(0), LE(65536), NULL, F_INT(ppo.micro_batch),
     "rows per forward pass of every model-stage but actor.gen, so its activation memory is that of micro_batch "
     "rows: the scoring stages (actor.inf, ref.inf, critic.inf, reward.inf) score a replica's rows in chunks of "
     "this many, the same bits for any value (a row's result does not depend on the rows beside it); the training "
     "stages (and the SFT warm-start) take a minibatch's rows in passes of this many and add their gradients up "
     "(gradient accumulation: the same update up to the order of the sums); 0 = all of a replica's rows at once"},
    {"ppo", "correction", DECK_T_CHOICE, 0, "auto", NONE, NONE, "auto|none|decoupled", F_STR(ppo.correction),
     "off-policy correction of the policy loss: decoupled = AReaL's decoupled PPO objective, the ratio clipped "
     "against the proximal policy (actor.inf's scoring with the weights being trained) and each token weighted by "
     "min(pi_prox / pi_gen, tis_cap) against the behaviour policy that generated it (tis_cap 0 means 2); none = no "
     "weight; auto = decoupled where max_staleness or [planner] max_staleness >= 1 or tis_cap > 0, else none (a "
     "synchronous fp32 run has "
     "pi_gen = pi_prox bit for bit, nothing to correct)"},

    {"reward", "network", DECK_T_BOOL, 0, "false", NONE, NONE, NULL, F_INT(reward.network),
     "add a frozen reward network's score to the rule reward"},
    {"reward", "network_weight", DECK_T_FLOAT, 0, "0.0", NONE, NONE, NULL, F_FLT(reward.network_weight),
     "weight of the reward network's score"},
    {"reward", "rule", DECK_T_CHOICE, 0, "answer-tag", NONE, NONE, "answer-tag|gsm8k|boxed|last-number",
     F_STR(reward.rule),
     "text tasks ([data]): where the answer is in a decoded response: inside the last <answer></answer> "
     "(reasoning-gym's extract_answer), after the last ####, inside the last \\boxed{}, or the last number"},
    {"reward", "task", DECK_T_CHOICE, 0, "none", NONE, NONE,
     "none|basic_arithmetic|chain_sum|leg_counting|number_sorting", F_STR(reward.task),
     "text tasks: how the answer is scored against the prompt's: none = exact numeric equivalence (1,000 = "
     "1000.0, 3/4 = 0.75), else trimmed text; or the named reasoning-gym task's own score_answer "
     "(number_sorting reads each line's metadata.direction)"},
    {"reward", "format_reward", DECK_T_FLOAT, 0, "0.0", GE(0), LE(1), NULL, F_FLT(reward.format_reward),
     "text tasks: added to the reward where the rule finds a non-empty answer, right or wrong"},

    {"inject", "slow_factor", DECK_T_FLOAT, 0, "3", GE(1), LE(100), NULL, F_FLT(inject.slow_factor),
     "INJECTED slowdown: slow_ranks do this many times their work (extra real work at every wait on other ranks, so the timings measure it)"},
    {"inject", "comm_setup_s", DECK_T_FLOAT, 0, "0", GE(0), LE(60), NULL, F_FLT(inject.comm_setup_s),
     "INJECTED communicator set-up: every communicator set the job builds (at start-up and in each transition) takes at least this many seconds on each of its ranks (a sleep after MPI_Comm_split), as a slow NCCL initialisation across nodes would: inside the transition's measured time for a set built in its move; for a set built ahead of its move (a [switch] plan, or a move the planner makes a step late), counted from when it was built, so the move waits only for what is left; 0 = off"},
    {"inject", "nan_loss_step", DECK_T_INT, 0, "-1", GE(-1), NONE, NULL, F_INT(inject.nan_loss_step),
     "INJECTED fault for tests: make the policy loss NaN at this PPO step; -1 = off"},
    {"inject", "resp_len_from", DECK_T_INT, 0, "0", GE(0), NONE, NULL, F_INT(inject.resp_len_from),
     "INJECTED length drift: generation may not end before this many response tokens at PPO step 0 (a sampled EOS becomes '=': the responses really grow and every stage pays for them); 0 = off"},
    {"inject", "resp_len_to", DECK_T_INT, 0, "0", GE(0), NONE, NULL, F_INT(inject.resp_len_to),
     "INJECTED length drift: the forced minimum at step resp_len_ramp, linear from resp_len_from, held after; at most [ppo] max_response"},
    {"inject", "resp_len_ramp", DECK_T_INT, 0, "0", GE(0), NONE, NULL, F_INT(inject.resp_len_ramp),
     "the PPO step at which the forced minimum reaches resp_len_to; 0 = the last PPO step"},
    {"inject", "slow_step", DECK_T_INT, 0, "-1", GE(-1), NONE, NULL, F_INT(inject.slow_step),
     "INJECTED slowdown: slow_ranks run slow_factor times slower from this PPO step on; -1 = never"},
    {"inject", "slow_until", DECK_T_INT, 0, "-1", GE(-1), NONE, NULL, F_INT(inject.slow_until),
     "the PPO step from which slow_ranks run at full speed again; -1 = never"},
    {"inject", "slow_period", DECK_T_INT, 0, "0", GE(0), NONE, NULL, F_INT(inject.slow_period),
     "INJECTED slowdown that comes and goes: from slow_step, slow_ranks are slow for slow_period steps, then at full speed for slow_off, over and over (until slow_until); 0 = steady"},
    {"inject", "slow_off", DECK_T_INT, 0, "0", GE(0), NONE, NULL, F_INT(inject.slow_off),
     "with slow_period: the steps at full speed between slow spells; 0 = slow_period"},
    {"inject", "leave_step", DECK_T_INT, 0, "-1", GE(-1), NONE, NULL, F_INT(inject.leave_step),
     "INJECTED pool change: leave_ranks leave the pool before this PPO step (they then hold no state and idle); needs [planner] policy other than off; -1 = never"},
    {"inject", "join_step", DECK_T_INT, 0, "-1", GE(-1), NONE, NULL, F_INT(inject.join_step),
     "INJECTED pool change: leave_ranks join the pool again before this PPO step; -1 = never"},
    {"inject", "die_rank", DECK_T_INT, 0, "-1", GE(-1), NONE, NULL, F_INT(inject.die_rank),
     "INJECTED death: this rank (its MPI_COMM_WORLD rank, as launched) SIGKILLs itself, a real process death, as die_phase begins in PPO step die_step or the first step after it that has that phase (a transition or a checkpoint), and says so on stderr first; under bin/nereus-ft (jobs/local.sh --ft) the others recover, under bin/nereus the job ends; -1 = never"},
    {"inject", "die_step", DECK_T_INT, 0, "0", GE(0), NONE, NULL, F_INT(inject.die_step),
     "the PPO step of die_rank's death (die_phase: in that step, or the first after it that has the phase)"},
    {"inject", "die_phase", DECK_T_CHOICE, 0, "gen", NONE, NONE, "gen|inf|train|sync|transition|ckpt", F_STR(inject.die_phase),
     "where in the step die_rank dies: as generation, scoring (inf), training or the weight sync begins, as a move between plans begins (the live planner's or [switch]'s), or as a checkpoint begins (the step's boundary)"},
    {"inject", "slow_ranks", DECK_T_STRING, 0, "", NONE, NONE, NULL, F_STR(inject.slow_ranks),
     "the ranks slow_step slows: comma list of ranks and A-B ranges, or busiest: the rank holding the most model-stages of the plan in force at slow_step, and with slow_period again at the start of every slow spell (named in the output; on fewer cores than ranks the best plans leave ranks idle)"},
    {"inject", "leave_ranks", DECK_T_STRING, 0, "", NONE, NONE, NULL, F_STR(inject.leave_ranks),
     "the ranks leave_step takes out of the pool: comma list of ranks and A-B ranges"},

    {"planner", "policy", DECK_T_CHOICE, 0, "off", NONE, NONE, "off|static|payback|admit-all|at-crossings|every-k|every-gain|sweep", F_STR(planner.policy),
     "the live planner on rank 0: off = the deck's plan throughout (no planner); static = plan once for the first steps' measurements, replan only when the pool changes; payback = replan on drift and admit by the payback rule; admit-all (also named at-crossings: it searches only at drift crossings and pool changes) = take every faster plan found there; every-k = replan every every_k steps; every-gain = search at every step and take any plan predicted faster (the paper's admit-every-gain); sweep = validate the cost model: run sweep_plans plans sampled uniformly, calibrate on the first sweep_calibrate, predict the others, then run the search's choice and the best sampled plan again (3 x sweep_steps each) and compare them"},
    {"planner", "gamma", DECK_T_FLOAT, 0, "0.5", GE(0), NONE, NULL, F_FLT(planner.gamma),
     "payback gamma: admit when the transition pays back within gamma x the expected steps before the next drift"},
    {"planner", "threshold", DECK_T_FLOAT, 0, "0.3", GT(0), NONE, NULL, F_FLT(planner.threshold),
     "change that triggers a replan: the response length by a factor 1 + threshold either way, a rank's speed by this fraction"},
    {"planner", "alpha", DECK_T_FLOAT, 0, "0.5", GT(0), LE(1), NULL, F_FLT(planner.alpha),
     "weight of each measured step in the running mean of the step's time outside the model-stages (1 = the last step alone); the efficiency factors are refitted by least squares"},
    {"planner", "memory_gib", DECK_T_FLOAT, 0, "0", GE(0), NONE, NULL, F_FLT(planner.memory_gib),
     "memory per rank the planner plans with, GiB; 0 = the node's physical memory shared by its ranks"},
    {"planner", "every_k", DECK_T_INT, 0, "10", GE(1), NONE, NULL, F_INT(planner.every_k),
     "the every-k policy's period, in PPO steps"},
    {"planner", "warmup", DECK_T_INT, 0, "2", GE(1), NONE, NULL, F_INT(planner.warmup),
     "PPO steps measured (calibrating the cost model) before the planner's first decision"},
    {"planner", "guard_margin", DECK_T_FLOAT, 0, "0.1", GE(0), NONE, NULL, F_FLT(planner.guard_margin),
     "measure-and-revert guard: after an adaptive move (payback, admit-all, every-k; not urgent ones), move back when the new plan's measured step is slower than the old plan's by more than this fraction (its step measured before the move, scaled by the model's change for it since); 0 = no guard"},
    {"planner", "guard_steps", DECK_T_INT, 0, "2", GE(1), LE(16), NULL, F_INT(planner.guard_steps),
     "measure-and-revert guard: the new plan's steps measured (median) before it is judged; the step right after a transition is not measured"},
    {"planner", "max_staleness", DECK_T_INT, 0, "-1", GE(-1), LE(8), NULL, F_INT(planner.max_staleness),
     "the largest [ppo] max_staleness the planner may choose with the split of ranks (an asynchronous plan costs "
     "the longer of generation and scoring plus training); -1 = the deck's [ppo] max_staleness, fixed"},
    {"planner", "sweep_plans", DECK_T_INT, 0, "40", GE(2), LE(1000), NULL, F_INT(planner.sweep_plans),
     "policy = sweep: plans sampled uniformly from the feasible space (each model-stage: tp dividing n_head, pp dividing n_layer, dp dividing batch, on an aligned block of ranks) and run"},
    {"planner", "sweep_steps", DECK_T_INT, 0, "3", GE(2), NONE, NULL, F_INT(planner.sweep_steps),
     "policy = sweep: PPO steps per plan; the first after each transition is not measured"},
    {"planner", "sweep_calibrate", DECK_T_INT, 0, "6", GE(1), NONE, NULL, F_INT(planner.sweep_calibrate),
     "policy = sweep: the first N sampled plans calibrate the cost model; the others are predicted (held out)"},
    {"planner", "sweep_seed", DECK_T_INT, 0, "0", GE(0), NONE, NULL, F_INT(planner.sweep_seed),
     "policy = sweep: the seed of the sample; 0 = [run] seed"},
    {"planner", "sweep_reference", DECK_T_INT, 0, "0", GE(0), NONE, NULL, F_INT(planner.sweep_reference),
     "policy = sweep: after every N held-out plans (and after the last) run the first sampled plan again, a control for the machine's speed over the run; the held-out error is then also reported with each plan's measurement divided by that speed (interpolated between controls); 0 = no control"},

    {"ckpt", "every", DECK_T_INT, 0, "0", GE(0), NONE, NULL, F_INT(ckpt.every),
     "write a checkpoint every N PPO steps; 0 = none on a schedule (SIGTERM / SIGUSR1 still write one)"},
    {"ckpt", "dir", DECK_T_STRING, 0, "ckpt", NONE, NONE, NULL, F_STR(ckpt.dir),
     "directory of the checkpoints (created if missing): DIR/NAME_stepNNNNNN.h5"},
    {"ckpt", "keep", DECK_T_INT, 0, "2", GE(1), LE(1000000), NULL, F_INT(ckpt.keep),
     "how many of the newest checkpoints to keep; older ones are deleted after a new one is complete"},
    {"ckpt", "overwrite", DECK_T_BOOL, 0, "false", NONE, NONE, NULL, F_INT(ckpt.overwrite),
     "a run that does not restart may write over the checkpoints an earlier run of the same name left in [ckpt] dir (at steps this run reaches); false = such a run is refused (exit 2) before step 1: restart it (--restart latest), or give it another run name or dir"},

    /* [plan]: the keys are the model-stage names, in PlanStageId order */
    DECK_PLAN_ROWS("plan", plan,
                   "unlisted model-stages: auto = all listed, or none (then the colocated default plan); "
                   "colocated / disaggregated = take them from that default plan"),

    /* [switch]: a second plan, with the same keys, and the step it starts at */
    {"elastic", "respawn", DECK_T_BOOL, 0, "false", NONE, NONE, NULL, F_INT(elastic.respawn),
     "under fault tolerance (bin/nereus-ft, jobs/local.sh --ft): after ranks die or leave with notice, spawn as many new processes (MPI_Comm_spawn) as the job was launched with less the ranks left; they join the survivors' world, load the checkpoint the others go on from, and the planner places the job on all of them (docs/ELASTIC.md); false = go on with the survivors"},
    {"elastic", "grow_to", DECK_T_INT, 0, "0", GE(0), LE(PLAN_MAX_RANKS), NULL, F_INT(elastic.grow_to),
     "under fault tolerance: at each scheduled checkpoint while the job has fewer ranks, spawn processes up to this many (MPI_Comm_spawn, where the launcher's slots allow); they join, the job is rebuilt on all of them from that checkpoint and the planner places it (docs/ELASTIC.md); after it respawn brings the job back to this size; 0 = off"},
    {"elastic", "in_memory", DECK_T_BOOL, 0, "true", NONE, NONE, NULL, F_INT(elastic.in_memory),
     "under fault tolerance: each rank copies its shards of the trained and frozen models (parameters, AdamW state) into host memory at the start of a PPO step; after ranks die the job is rebuilt from the survivors' copies (DP replicas, and buddy copies) and redoes only the steps since, without reading a checkpoint; where some shard has no copy left it reads the newest checkpoint, and says why (docs/ELASTIC.md); false = always the checkpoint"},
    {"elastic", "buddy", DECK_T_BOOL, 0, "false", NONE, NONE, NULL, F_INT(elastic.buddy),
     "with in_memory: each shard that no other rank holds (its model-stage has one DP replica) is also copied to the rank's buddy, a rank of the next node (the next rank on one node), so that it survives its rank; false = such a shard comes from the checkpoint"},
    {"elastic", "buddy_every", DECK_T_INT, 0, "1", GE(1), NONE, NULL, F_INT(elastic.buddy_every),
     "the copies in memory (own and buddy) are taken at the start of every N-th PPO step: a recovery from them redoes at most N steps; each copy costs a copy of the trained shards (and with buddy a transfer)"},
    {"switch", "step", DECK_T_INT, 0, "-1", GE(-1), NONE, NULL, F_INT(sw.step),
     "before PPO step N (0-based, the same step numbering as checkpoints: step N is the (N+1)-th PPO step) switch to the plan in this section; -1 = no switch"},
    DECK_PLAN_ROWS("switch", sw.plan,
                   "unlisted model-stages, as in [plan]: auto = all listed (a switch needs a plan); "
                   "colocated / disaggregated = take them from that default plan"),

    {"transition", "memory_mib", DECK_T_DOUBLE, 0, "0", GE(0), NONE, NULL, F_DBL(transition.memory_mib),
     "per-rank memory budget during a transition, for the model state the transition allocates and frees plus its transfer buffers, in MiB; 0 = no limit"},
    {"transition", "chunk_kib", DECK_T_INT, 0, "1024", GE(4), LE(1048576), NULL, F_INT(transition.chunk_kib),
     "slabs are cut into chunks of at most this many KiB"},
    {"transition", "window_kib", DECK_T_INT, 0, "8192", GE(4), LE(4194304), NULL, F_INT(transition.window_kib),
     "bytes in flight per rank (sends plus receives), in KiB; at least chunk_kib"},
    {"transition", "verify", DECK_T_BOOL, 0, "false", NONE, NONE, NULL, F_INT(transition.verify),
     "per-tensor checksums of every moved model before and after every transition, compared; a mismatch stops the run"},
    {"transition", "forward", DECK_T_BOOL, 0, "true", NONE, NONE, NULL, F_INT(transition.forward),
     "forwarding: where a model's new replicas far outnumber its old holders, a replica that has received a stream sends it on to the next, chunk by chunk (false: every replica from an old holder)"},
    {"transition", "keep_comms", DECK_T_INT, 0, "8", GE(0), LE(64), NULL, F_INT(transition.keep_comms),
     "communicator sets of layouts no model-stage uses any more, kept for reuse (the one unused longest goes first beyond this many): a transition back onto a kept layout builds no communicators, and its prediction charges none; each kept set holds its communicators (with NCCL, their buffers on the GPU); 0 = free them at once"},
    {"transition", "sync", DECK_T_CHOICE, 0, "engine", NONE, NONE, "engine|broadcast", F_STR(transition.sync),
     "weight sync path each step: engine = minimal-byte transfers through the transition engine; broadcast = the baseline (whole logical model to every rank)"},
    {"transition", "bandwidth_gbs", DECK_T_DOUBLE, 0, "0", GE(0), NONE, NULL, F_DBL(transition.bandwidth_gbs),
     "link bandwidth per rank the engine uses to predict a transition's time, in GB/s (1e9 bytes/s); 0 = measured once per job with every rank sending at once, local copies measured the same way and priced too"},
    {"transition", "latency_us", DECK_T_DOUBLE, 0, "5", GE(0), NONE, NULL, F_DBL(transition.latency_us),
     "per-message latency for predictions, in microseconds"},
    {"transition", "comm_setup_us", DECK_T_DOUBLE, 0, "200", GE(0), NONE, NULL, F_DBL(transition.comm_setup_us),
     "cost of creating one communicator, for predictions, in microseconds"},

    {"eval", "every", DECK_T_INT, 0, "0", GE(0), NONE, NULL, F_INT(data.eval_every),
     "PPO steps between greedy evaluations on the held-out prompts ([data] eval, or the digit tasks' held-out "
     "ones), each a progress line and an /eval row of the trace; 0 = before and after PPO only"},
    {"eval", "prompts", DECK_T_INT, 0, "256", GE(1), LE(65536), NULL, F_INT(data.eval_prompts),
     "held-out prompts of the digit tasks per evaluation, greedily decoded in batches of [ppo] batch (a text run "
     "evaluates [data] eval, cut by eval_size)"},
    {"eval", "responses", DECK_T_STRING, 0, "", NONE, NONE, NULL, F_STR(data.eval_responses),
     "a text run's JSONL file of every evaluation's greedy responses, a line per held-out prompt (step, line, "
     "ids, response, answer, score, right), written by rank 0 after each evaluation (tools/eval-compare reads "
     "it beside tools/eval-hf --out); a file an earlier run left is refused unless the run restarts (--restart: "
     "appended); \"\" = none"},
    {"data", "train", DECK_T_STRING, 0, "", NONE, NONE, NULL, F_STR(data.train),
     "JSONL file of training prompts, one JSON object a line (docs/TEXT.md, \"Prompt datasets\"); each prompt is "
     "formatted with the chat template, tokenized once, and dropped (counted) when longer than [model] max_seq - "
     "[ppo] max_response; \"\" = no text data (the built-in tasks)"},
    {"data", "eval", DECK_T_STRING, 0, "", NONE, NONE, NULL, F_STR(data.eval),
     "JSONL file of evaluation prompts, read as train is; \"\" = none"},
    {"data", "prompt_key", DECK_T_STRING, 0, "question", NONE, NONE, NULL, F_STR(data.prompt_key),
     "the key of each line's prompt (a JSON string)"},
    {"data", "answer_key", DECK_T_STRING, 0, "answer", NONE, NONE, NULL, F_STR(data.answer_key),
     "the key of each line's answer (a JSON string, or a number kept as the text cJSON prints for it); a "
     "\"metadata\" object on the line is kept as its JSON text for the scorers"},
    {"data", "tokenizer", DECK_T_STRING, 0, "", NONE, NONE, NULL, F_STR(data.tokenizer),
     "the tokenizer: a Hugging Face model directory (or tokenizer.json), a GGUF file or a checkpoint with a "
     "/tokenizer group; \"\" = [model] init_from"},
    {"data", "chat", DECK_T_CHOICE, 0, "auto", NONE, NONE, "auto|none", F_STR(data.chat),
     "auto = the tokenizer's chat template (ChatML or Llama-3's; another is refused with its first line shown); "
     "none = the prompt text alone, bos first where the tokenizer adds one"},
    {"data", "system", DECK_T_STRING, 0, "", NONE, NONE, NULL, F_STR(data.system),
     "system prompt of every chat; \"\" = the template's own default (SmolLM2's, Qwen2's) or none"},
    {"data", "eval_size", DECK_T_INT, 0, "0", GE(0), NONE, NULL, F_INT(data.eval_size),
     "evaluate on the first N prompts of eval that fit (all of them when fewer); 0 = all"},

    {"trace", "samples", DECK_T_INT, 0, "0", GE(0), NONE, NULL, F_INT(trace.samples),
     "a text run ([data]): every N PPO steps the first rows' prompts and responses, decoded, with their rewards "
     "to the trace (/samples) and the log; 0 = none"},
    {"trace", "file", DECK_T_STRING, 0, "", NONE, NONE, NULL, F_STR(trace.file),
     "the run's HDF5 trace (docs/TRACE.md), written by rank 0 and flushed after every step; \"\" = NAME.trace.h5 in the current directory (a restart from step S: NAME_stepSSSSSS.trace.h5); none = no trace"},
    {"trace", "overwrite", DECK_T_BOOL, 0, "false", NONE, NONE, NULL, F_INT(trace.overwrite),
     "replace a trace an earlier run left at the trace's path; false = such a run is refused (exit 2) before it starts, unless it restarts (--restart) the run that wrote the trace; a file that is not a Nereus trace is never replaced"},
    {"trace", "papi_events", DECK_T_STRING, 0, "", NONE, NONE, NULL, F_STR(trace.papi_events),
     "PAPI events counted per model-stage on every rank, comma separated (e.g. PAPI_TOT_INS,PAPI_TOT_CYC; at most 8); \"\" = none (timers only); events the machine lacks are reported once and left out"},
    /* [simulate]: simulation decks only (bin/nereus --simulate); gpus is required there */
    {"simulate", "resp_len", DECK_T_DOUBLE, 0, "500", GT(0), NONE, NULL, F_DBL(sim.resp_len),
     "response tokens at the first step"},
    {"simulate", "resp_len_end", DECK_T_DOUBLE, 0, "8000", GT(0), NONE, NULL, F_DBL(sim.resp_len_end),
     "response tokens at the last step (geometric growth between)"},
    {"simulate", "resp_longest_ratio", DECK_T_DOUBLE, 0, "0", GE(0), LE(64), NULL, F_DBL(sim.resp_longest_ratio),
     "MODELLED tail of each step's responses: its longest over its mean, priced by the decode term (the rows "
     "still generating leave the batch; the live planner measures it); 0 = every response as long as the mean; "
     "else at least 1. Memory is planned for the mean's lengths either way"},
    {"simulate", "prompt_len", DECK_T_DOUBLE, 0, "512", GT(0), NONE, NULL, F_DBL(sim.prompt_len), "prompt tokens"},
    {"simulate", "gamma", DECK_T_DOUBLE, 0, "0.5", GE(0), NONE, NULL, F_DBL(sim.gamma),
     "payback gamma: admit when C / dL <= gamma x H"},
    {"simulate", "threshold", DECK_T_DOUBLE, 0, "0.3", GT(0), NONE, NULL, F_DBL(sim.threshold),
     "drift that triggers a replan: the response length by a factor 1 + threshold either way, a GPU's speed by this fraction"},
    {"simulate", "slow_factor", DECK_T_DOUBLE, 0, "3", GE(1), NONE, NULL, F_DBL(sim.slow_factor),
     "INJECTED: how many times slower slow_rank runs in [slow_from, slow_to)"},
    {"simulate", "gpus", DECK_T_INT, REQ, NULL, GE(1), LE(PLAN_MAX_RANKS), NULL, F_INT(sim.gpus),
     "GPUs of the modelled cluster (one rank each)"},
    {"simulate", "ranks_per_node", DECK_T_INT, 0, "8", GE(1), LE(64), NULL, F_INT(sim.ranks_per_node),
     "GPUs per node (NVLink inside, the network between)"},
    {"simulate", "steps", DECK_T_INT, 0, "1000", GE(1), NONE, NULL, F_INT(sim.steps), "simulated PPO steps"},
    {"simulate", "batch", DECK_T_INT, 0, "512", GE(1), NONE, NULL, F_INT(sim.batch), "prompts per step"},
    {"simulate", "minibatch", DECK_T_INT, 0, "128", GE(1), NONE, NULL, F_INT(sim.minibatch),
     "sequences per update (divides batch)"},
    {"simulate", "epochs", DECK_T_INT, 0, "1", GE(1), NONE, NULL, F_INT(sim.epochs), "PPO epochs per step"},
    {"simulate", "every_k", DECK_T_INT, 0, "50", GE(1), NONE, NULL, F_INT(sim.every_k),
     "the every-k policy's replan period (steps)"},
    {"simulate", "slow_rank", DECK_T_INT, 0, "-1", GE(-1), NONE, NULL, F_INT(sim.slow_rank),
     "INJECTED: the rank that runs slow_factor times slower (-1: none)"},
    {"simulate", "slow_from", DECK_T_INT, 0, "0", GE(0), NONE, NULL, F_INT(sim.slow_from), "first slow step"},
    {"simulate", "slow_to", DECK_T_INT, 0, "0", GE(0), NONE, NULL, F_INT(sim.slow_to), "first step at full speed again"},
    {"simulate", "keep_comms", DECK_T_INT, 0, "8", GE(0), LE(64), NULL, F_INT(sim.keep_comms),
     "communicator sets of layouts no model-stage uses any more, kept for reuse as the live job keeps them ([transition] keep_comms): a transition back onto one is priced without communicator set-up; 0 = none kept"},
    {"simulate", "gpu", DECK_T_CHOICE, 0, "h200", NONE, NONE, "h100|h200|a100", F_STR(sim.gpu),
     "GPU kind: dense bf16 FLOP/s, memory and HBM bandwidth from its datasheet"},
    {"simulate", "network", DECK_T_CHOICE, 0, "infiniband", NONE, NONE, "infiniband|slingshot", F_STR(sim.network),
     "between nodes: InfiniBand NDR 400 (50 GB/s, 10 us) or Slingshot-11 (25 GB/s, 2 us) per GPU"},
    {"simulate", "actor", DECK_T_STRING, 0, "llama-3.1-8b", NONE, NONE, NULL, F_STR(sim.actor),
     "actor (and ref) shape: llama-3.1-8b, qwen3-14b, qwen3-32b, llama-3.3-70b"},
    {"simulate", "critic", DECK_T_STRING, 0, "llama-3.1-8b", NONE, NONE, NULL, F_STR(sim.critic),
     "critic shape (with a value head), from the same list"},
    /* the study (issue #34): a MODELLED cluster that is wrong the way a real one is; defaults from the live runs
       (docs/PLANNER.md, "The admission study") */
    {"simulate", "seeds", DECK_T_INT, 0, "0", GE(0), LE(1000), NULL, F_INT(sim.seeds),
     "0 = one exact run (every time is the cost model's), the policy table; N >= 1 = the admission study: every study policy over N paired seeds of the noise below (each seed's draws the same for every policy), mean +- spread"},
    {"simulate", "study", DECK_T_CHOICE, 0, "full", NONE, NONE, "full|core", F_STR(sim.study),
     "the study's policies (seeds >= 1): full = every policy and payback's variants (its gamma sweep, without keep_stages, the rule off at pool changes, the search not widened, every-gain with the widened search); core = static, every-gain, at-crossings, every-k, payback, payback-inf (the rule's own effect) and the oracle"},
    {"simulate", "first_seed", DECK_T_INT, 0, "1", GE(0), NONE, NULL, F_INT(sim.first_seed),
     "the study's first seed (seeds first_seed .. first_seed + seeds - 1); the study's measure-and-revert guard is [planner] guard_margin and guard_steps, as live"},
    {"simulate", "model_error", DECK_T_DOUBLE, 0, "0.0594", GE(0), LE(1), NULL, F_DBL(sim.model_error),
     "study: sigma of the per-plan error of the cost model (realised = predicted x exp(sigma z), z fixed per plan and node set); default the live sweep8-wide's model RMS error estimate, 5.94%"},
    {"simulate", "step_noise", DECK_T_DOUBLE, 0, "0.0354", GE(0), LE(1), NULL, F_DBL(sim.step_noise),
     "study: sigma of each step's noise (log-normal, per plan and step); default the live sweep8-wide's control-window repeat noise, 3.54%"},
    {"simulate", "tx_factor_min", DECK_T_DOUBLE, 0, "1", GT(0), NONE, NULL, F_DBL(sim.tx_factor_min),
     "study: a move's realised cost over its price, least (log-uniform between min and max, per move); the live runs measured 1.0-4.6x"},
    {"simulate", "tx_factor_max", DECK_T_DOUBLE, 0, "4.6", GT(0), NONE, NULL, F_DBL(sim.tx_factor_max),
     "study: a move's realised cost over its price, most (>= tx_factor_min)"},
    {"simulate", "warmup", DECK_T_DOUBLE, 0, "0.1", GE(0), LE(10), NULL, F_DBL(sim.warmup),
     "study: the first step after a move takes 1 + warmup times its time (an assumption: the live guard does not count that step)"},
    {"simulate", "network_gbs", DECK_T_DOUBLE, 0, "0", GE(0), LE(1000), NULL, F_DBL(sim.network_gbs),
     "between nodes: bandwidth per GPU in GB/s instead of the network's (a slower or faster fabric; its latency stays); 0 = the network's"},
    /* MODELLED failures (issue 46; docs/PLANNER.md, "Failures"): in-place recovery against checkpoint-and-restart */
    {"simulate", "fail_rate", DECK_T_DOUBLE, 0, "0", GE(0), LE(1), NULL, F_DBL(sim.fail_rate),
     "MODELLED unexpected failures per GPU-hour, a Poisson process over the job's GPU-hours (fail_seed); each takes its GPU's node out of the pool for repair_s, and the run prices its recovery in place (the survivors' world in detect_s, the interrupted step's lost part, the move of the lost state from replicas) against checkpoint-and-restart (the lost part, the work since the last checkpoint, the restart); Llama 3's training report: 419 in 54 days on 16,384 GPUs = 1.97e-5; 0 = none"},
    {"simulate", "fail_seed", DECK_T_INT, 0, "1", GE(0), NONE, NULL, F_INT(sim.fail_seed),
     "the failure process's seed (fail_rate): the same failures for every policy while their runs take the same time"},
    {"simulate", "repair_s", DECK_T_DOUBLE, 0, "3600", GE(0), NONE, NULL, F_DBL(sim.repair_s),
     "MODELLED seconds a failed GPU's node stays out of the pool before it comes back (an assumption: a node repaired or replaced in an hour)"},
    {"simulate", "detect_s", DECK_T_DOUBLE, 0, "1", GE(0), NONE, NULL, F_DBL(sim.detect_s),
     "MODELLED seconds from a failure to the survivors' shrunk world under ULFM (detection, agreement, shrink; measured here on 4 ranks: a few hundred milliseconds, docs/ELASTIC.md)"},
    {"simulate", "fail_ckpt_every", DECK_T_INT, 0, "100", GE(1), NONE, NULL, F_INT(sim.fail_ckpt_every),
     "steps between checkpoints for the checkpoint-and-restart price: a failure loses the steps since the last one"},
    {"simulate", "fail_study", DECK_T_INT, 0, "0", GE(0), LE(1000), NULL, F_INT(sim.fail_study),
     "N >= 1: N runs of payback with one failure each, halfway through steps spread evenly over the run: the seconds and GPU-hours a failure costs in place and by checkpoint-and-restart (mean, least, most), and at fail_rate what that is a day on the deck's GPUs; 0 = none"},
    {"simulate", "availability", DECK_T_STRING, 0, "", NONE, NONE, NULL, F_STR(sim.availability),
     "GPU availability trace: lines 'STEP GPUS' (# comments), GPUs in the pool from STEP on, at most 4094 changes "
     "(tools/spot-trace draws a synthetic spot-like one); \"\" = all, always"},
};
/* clang-format on */

const size_t deck_nkeys = sizeof deck_keys / sizeof deck_keys[0];

const char *const deck_sections[] = {"run",    "model", "task",   "optim", "sft",    "ppo",
                                     "reward", "inject", "planner", "ckpt", "elastic", "plan",  "switch", "transition", "data", "eval", "trace",
                                     "simulate"};
const size_t deck_nsections = sizeof deck_sections / sizeof deck_sections[0];

static int deck_name_eq(const char *name, const char *s, size_t len)
{
    return strlen(name) == len && memcmp(name, s, len) == 0;
}

int deck_key_find(const char *sec, size_t sec_len, const char *key, size_t key_len)
{
    for (size_t i = 0; i < deck_nkeys; i++)
        if (deck_name_eq(deck_keys[i].section, sec, sec_len) && deck_name_eq(deck_keys[i].key, key, key_len))
            return (int)i;
    return -1;
}

int deck_key_find_dotted(const char *section_dot_key)
{
    if (!section_dot_key) return -1;
    const char *dot = strchr(section_dot_key, '.');
    if (!dot) return -1;
    return deck_key_find(section_dot_key, (size_t)(dot - section_dot_key), dot + 1, strlen(dot + 1));
}

int deck_section_find(const char *sec, size_t sec_len)
{
    for (size_t i = 0; i < deck_nsections; i++)
        if (deck_name_eq(deck_sections[i], sec, sec_len)) return (int)i;
    return -1;
}
