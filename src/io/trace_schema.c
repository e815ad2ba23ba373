/* trace_schema.c — the trace format's table (trace_schema.h): every table
 * and column, and the attributes of the root, /planner and /complete. The
 * writer (trace.c), the reader (bin/nereus-trace) and docs/TRACE.md
 * (`nereus-trace schema`) all take the format from here.
 *
 * Each column row names a member of its row struct, with a compile-time check
 * that the member has the C type the row claims (_Generic fails to compile
 * otherwise): a row cannot describe an int32 member as float64, and the
 * column's name in the file is the member's name.
 */
#include "nereus/trace_schema.h"

#include <stdio.h>
#include <string.h>

#define M(Row, f) (((Row *)0)->f)
#define I32(Row, f) #f, TRACE_I32, 1, _Generic(M(Row, f), int32_t: offsetof(Row, f))
#define I64(Row, f) #f, TRACE_I64, 1, _Generic(M(Row, f), int64_t: offsetof(Row, f))
#define F64(Row, f) #f, TRACE_F64, 1, _Generic(M(Row, f), double: offsetof(Row, f))
#define STR(Row, f) #f, TRACE_STR, 1, _Generic(M(Row, f), const char *: offsetof(Row, f))
#define F64S(Row, f)                                                                                               \
    #f, TRACE_F64_ARRAY, (int)(sizeof M(Row, f) / sizeof(double)), _Generic(M(Row, f), double *: offsetof(Row, f))
#define REQ 1
#define NEW 0 /* added within format 1: older traces lack it */
#define NCOL(a) (int)(sizeof(a) / sizeof((a)[0]))

#define STRINGS_FNV_MEANING                                                                                        \
    "FNV-1a 64 of the row's strings in column order, each with its NUL, as int64 bits (nr_cksum_strs; 0 becomes " \
    "1): the strings lie in HDF5's global heap, which no HDF5 checksum covers, so nereus-trace checks them "       \
    "against it; 0: not computed (a row appended by another writer), not checked"

/* clang-format off */
#define R TraceStepsRow
static const TraceColumn steps_cols[] = {
    /* name, type, width, offset, required, unit, meaning */
    {I64(R, step), REQ, "", "PPO step (0-based, as checkpoints count)"},
    {I32(R, plan_id), REQ, "", "the plan it ran under (/plans plan_id)"},
    {I32(R, T), NEW, "tokens", "sequence length of the step (prompt + longest response)"},
    {F64(R, t_start_s), REQ, "s", "start, seconds since the trace opened"},
    {F64(R, wall_s), REQ, "s", "the step's seconds, the number the progress line prints (`| 0.158s: gen ...`)"},
    {F64(R, gen_s), REQ, "s", "generation phase, the maximum over ranks (the phases can add up to a little more than wall_s)"},
    {F64(R, inf_s), REQ, "s", "scoring phase, the maximum over ranks"},
    {F64(R, train_s), REQ, "s", "training phase, the maximum over ranks"},
    {F64(R, sync_s), REQ, "s", "weight-sync phase, the maximum over ranks"},
    {I64(R, tokens), REQ, "tokens", "sequence tokens of the step (B × T)"},
    {F64(R, tokens_per_s), REQ, "tokens/s", "tokens over wall_s"},
    {F64(R, reward), REQ, "", "mean task reward, as the progress line"},
    {F64(R, kl), REQ, "", "mean per-token log(π/π_ref)"},
    {F64(R, pg_loss), REQ, "", "policy loss"},
    {F64(R, vf_loss), REQ, "", "value loss"},
    {F64(R, entropy), REQ, "", "policy entropy"},
    {F64(R, resp_len), REQ, "tokens", "mean response length (the end token included)"},
    {F64(R, resp_longest), NEW, "tokens", "the longest response of the step's batch (the end token included): the "
                                          "decode steps generation ran, T minus the prompt; read as 0 when absent"},
    {F64(R, clipfrac), NEW, "", "fraction of PPO ratios clipped"},
    {F64(R, approx_kl), NEW, "", "approximate KL between the old and the new policy"},
    {F64(R, grad_norm_actor), NEW, "", "the actor's gradient norm"},
    {F64(R, grad_norm_critic), NEW, "", "the critic's gradient norm"},
    {F64(R, sync_bytes), NEW, "bytes", "bytes the step's weight sync moved between ranks"},
    {F64(R, kl_k3), NEW, "", "grpo: mean k3 estimate of KL(actor‖ref) over the updates' response tokens, the term "
                             "the actor loss adds (the progress line's k3); ppo: 0"},
    {F64(R, logp_gap), NEW, "nats", "mean |log π_old − log π_gen| over the response tokens: the scoring actor (actor.inf) "
                                    "against the generating one (actor.gen, [model] gen_dtype) on the same tokens; 0 "
                                    "where both compute the same bits; read as 0 when absent"},
    {F64(R, gen_kl), NEW, "nats", "mean log π_gen − log π_old over the response tokens: KL(π_gen‖π_old) estimated on the "
                                  "generated samples; read as 0 when absent"},
    {F64(R, tis_mean), NEW, "", "[ppo] tis_cap: the mean truncated importance weight min(π_old/π_gen, cap) of the "
                                "updates' tokens; 1 with tis_cap 0; read as 0 when absent"},
    {F64(R, tis_capped), NEW, "", "[ppo] tis_cap: the fraction of the updates' tokens whose weight the cap truncated"},
    {I64(R, gen_version), NEW, "", "the weight version that generated the step's batch: the PPO steps its weights had "
                                   "trained (docs/ASYNC.md); read as 0 when absent"},
    {I64(R, staleness), NEW, "", "the step less gen_version: 0 in a synchronous run, at most [ppo] max_staleness"},
    {F64(R, rollout_bytes), NEW, "bytes", "the rollout's bytes from the generating ranks to the ranks that use it "
                                          "(point to point; rollq.h)"},
    {I64(R, max_staleness), NEW, "", "K in force at the step: [ppo] max_staleness, or the live planner's choice "
                                     "within [planner] max_staleness (docs/ASYNC.md); read as 0 when absent"},
    {I64(R, seq_tokens), NEW, "tokens", "the rows' own tokens: Σ prompt + response (end token included) over the "
                                        "batch, without the padding that `tokens` counts; read as 0 when absent"},
};
#undef R

#define R TraceStagesRow
static const TraceColumn stages_cols[] = {
    {I64(R, step), REQ, "", "the PPO step"},
    {I32(R, stage), REQ, "", "the model-stage: index into the root attribute stage_names"},
    {I32(R, nranks), REQ, "", "ranks of its EMU"},
    {I32(R, nranks_ran), NEW, "", "ranks that timed work on it this step"},
    {F64(R, start_s), NEW, "s", "earliest start over its ranks, after each rank's own step start"},
    {F64(R, end_s), NEW, "s", "latest end over its ranks, after each rank's own step start"},
    {F64(R, seconds), REQ, "s", "the longest time one of its ranks spent in it (collectives inside included: TP "
                                "all-reduces, PP sends, the DP gradient all-reduce)"},
    {F64(R, flops), REQ, "FLOP", "model FLOPs of the whole EMU (FLOPs, below)"},
    {F64(R, bytes), REQ, "bytes", "estimated weight and KV-cache traffic of the whole EMU (Bytes, below)"},
    {F64(R, gflops), REQ, "GFLOP/s", "flops / seconds / 1e9"},
    {F64(R, peak_gflops), REQ, "GFLOP/s", "the calibrated peak of its ranks (Peak, below)"},
    {F64(R, mfu), REQ, "", "gflops / peak_gflops, clamped to at most 1 (/complete mfu_clamped counts the clamped rows)"},
};
#undef R

#define R TracePlansRow
static const TraceColumn plans_cols[] = {
    {I32(R, plan_id), REQ, "", "0 for the starting plan, then one more per transition"},
    {I64(R, first_step), REQ, "", "the first step run under it"},
    {STR(R, text), REQ, "", "plan_format: one line per model-stage, layout, ranks, what it shares ranks with"},
    {STR(R, source), REQ, "", "`deck [plan]`, `deck [switch]`, `planner POLICY` (a plan the live planner moved to)"},
    {F64(R, predicted_step_s), REQ, "s", "the live planner's predicted step when it moved there (L_new of the "
                                         "decision); NaN for the deck's plans"},
    {F64(R, predicted_mem_bytes), REQ, "bytes", "the plan's predicted peak memory per rank; NaN for the deck's plans"},
    {I64(R, strings_fnv), NEW, "", STRINGS_FNV_MEANING},
};
#undef R

#define R TraceDriftRow
static const TraceColumn drift_cols[] = {
    {I64(R, step), REQ, "", "the decision before this PPO step"},
    {STR(R, kind), REQ, "", "`length`, `efficiency`, `pool`, `oom`"},
    {F64(R, magnitude), REQ, "", "the relative change against the value the monitor last reset to: the mean "
                                 "response length for length; for efficiency the speed (1 / the slowdown) of the "
                                 "pool rank whose speed moved most against its own value at that reset; the pool's "
                                 "rank count for pool; NaN for oom"},
    {F64(R, threshold), REQ, "", "the relative change that counts as a crossing (/planner threshold); NaN for the "
                                 "urgent kinds, pool and oom"},
    {I64(R, strings_fnv), NEW, "", STRINGS_FNV_MEANING},
};
#undef R

#define R TraceDecisionsRow
static const TraceColumn decisions_cols[] = {
    {I64(R, step), REQ, "", "decided before this PPO step"},
    {I32(R, from_plan), REQ, "", "the plan in force (/plans plan_id)"},
    {I32(R, to_plan), REQ, "", "from_plan + 1 when admitted and the candidate differs (a move was asked for), else −1"},
    {I32(R, urgent), REQ, "", "the admission path (planner.h ADMIT_*): 1, urgent: the plan in force cannot stay "
                              "(it holds ranks out of the pool, or is predicted out of memory), any feasible plan "
                              "is taken; 2, a pool change the plan survives: any faster plan is taken, without the "
                              "payback test; 0, the payback rule"},
    {I32(R, admitted), REQ, "", "1: the rule said yes"},
    {F64(R, L_now_s), REQ, "s", "predicted step of the plan in force (∞ when it holds ranks out of the pool)"},
    {F64(R, L_new_s), REQ, "s", "predicted step of the candidate"},
    {F64(R, dL_s), REQ, "s", "ΔL = L_now − L_new, per step"},
    {F64(R, C_s), REQ, "s", "the transition engine's predicted seconds for the move (txprice.h tx_price; 0 when "
                            "the candidate is the plan in force)"},
    {F64(R, H_steps), REQ, "steps", "steps expected before the next drift (drift_horizon: the mean gap between "
                                    "crossings, capped by the steps left); 0 for the initial placement and for "
                                    "policies other than payback"},
    {F64(R, gamma), REQ, "", "[planner] gamma"},
    {F64(R, foregone_s), NEW, "s", "payback: the gains the rule refused since the last move, summed per step run "
                                   "(its rent-or-buy bound admits once they reach C_s); 0 for other policies, NaN in "
                                   "a refusal row; read as 0 when absent"},
    {I32(R, staleness), NEW, "", "the K the candidate is priced with (the planner chooses it with the plan within "
                                 "[planner] max_staleness; docs/PLANNER.md, \"Asynchronous plans\"); −1 in a refusal "
                                 "row; read as 0 when absent"},
    {STR(R, reason), REQ, "", "the rule's words: `initial placement: faster, admitted`, `admitted: pays back in X "
                              "steps <= gamma G x H h = Y`, `refused: ...`, `urgent: ...`"},
    {I64(R, strings_fnv), NEW, "", STRINGS_FNV_MEANING},
};
#undef R

#define R TraceTransitionsRow
static const TraceColumn transitions_cols[] = {
    {I64(R, step), REQ, "", "the transition ran before this PPO step"},
    {I32(R, from_plan), REQ, "", "plan id before"},
    {I32(R, to_plan), REQ, "", "plan id after"},
    {I32(R, nchanges), REQ, "", "model-stages moved"},
    {I32(R, nwaves), NEW, "", "memory waves"},
    {I32(R, verified), NEW, "", "1: per-tensor checks ran and passed"},
    {F64(R, t_start_s), REQ, "s", "start, seconds since the trace opened"},
    {F64(R, predicted_s), REQ, "s", "the engine's prediction"},
    {F64(R, measured_s), REQ, "s", "measured (max over ranks, communicators and checks included)"},
    {F64(R, engine_s), REQ, "s", "the transfers alone"},
    {F64(R, setup_s), NEW, "s", "the communicator set-up in the move (max over ranks): the sets it built, and what "
                                "was left of the set-up of those built before it; NaN when absent (added within "
                                "format 1: older traces lack it)"},
    {I32(R, sets_prebuilt), NEW, "", "communicator sets built before the move (at the step boundary before the step "
                                     "that ran while they got ready: a deck's [switch], a planner's move that waited "
                                     "a step) that the move took"},
    {F64(R, bytes_moved), REQ, "bytes", "bytes between ranks"},
    {F64(R, bytes_min), REQ, "bytes", "the minimum bytes between ranks"},
    {F64(R, bytes_local), NEW, "bytes", "bytes kept in place"},
    {F64(R, mem_peak_bytes), NEW, "bytes", "peak per rank"},
    {F64(R, mem_budget_bytes), NEW, "bytes", "[transition] memory_mib (0: none)"},
    {F64(R, bytes_forwarded), NEW, "bytes", "of bytes_moved, what new replicas forwarded to later ones "
                                            "([transition] forward; 0: none)"},
    {STR(R, text), REQ, "", "one line per moved model-stage: old → new layout, its primitives (Split, Destroy, "
                            "Extend, Merge) and bytes, the lines the run prints; under [inject] comm_setup_s a last "
                            "line, INJECTED communicator set-up, with the sets the move built"},
    {I64(R, strings_fnv), NEW, "", STRINGS_FNV_MEANING},
};
#undef R

#define R TraceSignalsRow
static const TraceColumn signals_cols[] = {
    {I64(R, step), REQ, "", "the PPO step about to run"},
    {I32(R, plan_id), REQ, "", "the plan in force before the decision (/plans plan_id)"},
    {I32(R, initial), REQ, "", "1 at the step whose decision is the initial placement (one row), else 0"},
    {I32(R, npool), REQ, "", "ranks in the pool"},
    {I32(R, oom), REQ, "", "1: the cost model predicts the plan in force does not fit in memory (urgent)"},
    {F64(R, resp_len), REQ, "tokens", "the mean response length the controller used: the last step's measured "
                                      "one; before step 0's measurement 0.5 × [ppo] max_response"},
    {F64(R, resp_longest), NEW, "tokens", "the longest response the cost model's decode term priced (Workload."
                                          "resp_longest): the last step's measured longest (/steps resp_longest); 0 "
                                          "before the first measurement, and when absent: every response priced as "
                                          "long as the mean"},
    {F64(R, eff_signal), REQ, "", "the efficiency signal the drift monitor follows: 1 / the largest slowdown over "
                                  "the pool's ranks"},
    {F64(R, pred_step_s), REQ, "s", "the cost model's predicted step under the plan in force (before the decision)"},
    {F64(R, overhead_s), REQ, "s", "the model's calibrated per-step time outside the model-stages (rollout "
                                   "assembly, advantages; a running mean with weight [planner] alpha)"},
    {F64(R, rho_exp), NEW, "", "the model's message-stretch exponent (HwModel.rho_exp: a message's wait grows as "
                               "(busy ranks per core)^rho_exp; 0 means 1); inferred by the replay when absent"},
    {F64S(R, phase_scale), NEW, "", "the model's per-phase scales (CostModel.phase_scale: gen, inf, train; each "
                                    "phase of a prediction is multiplied by it); read as 1 when absent"},
    {F64S(R, eff), REQ, "", "the calibrated efficiency factors (fraction of peak) in planner.h order: GEMM, "
                            "attention, decode, all-reduce inside a node, between nodes, point-to-point inside, "
                            "between, per-operation cost, message latency (EFF_GEMM … EFF_LAT; a replay needs the "
                            "width of its own cost model)"},
    {STR(R, pool), REQ, "", "the ranks in the pool, ascending, as `0-3,5`"},
    {STR(R, slow), REQ, "", "each rank's measured slowdown other than 1, `rank:factor,...` (%.17g: reads back to "
                            "the same double); ranks not listed run at 1"},
    {I64(R, strings_fnv), NEW, "", STRINGS_FNV_MEANING},
};
#undef R

#define R TraceEvalRow
static const TraceColumn eval_cols[] = {
    {I64(R, step), REQ, "", "PPO steps done when the evaluation ran (0: before the first)"},
    {I32(R, prompts), REQ, "", "held-out prompts evaluated, one greedy response each"},
    {F64(R, accuracy), REQ, "", "fraction of responses whose answer is right (the rule's value 1; the digit tasks: "
                                "the whole answer right)"},
    {F64(R, reward), REQ, "", "mean reward (the rule's score: partial credit and format reward included)"},
    {F64(R, format_rate), REQ, "", "fraction of responses in which the [reward] rule found an answer (the digit "
                                   "tasks: 1)"},
    {F64(R, mean_len), REQ, "tokens", "mean response length, end token included"},
};
#undef R

#define R TraceRanksRow
static const TraceColumn ranks_cols[] = {
    {I64(R, step), REQ, "", "the PPO step"},
    {I32(R, rank), REQ, "", "the job rank"},
    {I32(R, producer), REQ, "", "1: the rank generates (a member of actor.gen)"},
    {I32(R, consumer), REQ, "", "1: the rank scores or trains (a member of another model-stage that holds a model)"},
    {F64(R, busy_s), REQ, "s", "the rank's time in its model-stages' work in the step (counters.h's stage timers)"},
    {F64(R, idle_s), REQ, "s", "the step's wall time (rank 0's) less busy_s: what the rank waited"},
};
#undef R

#define R TraceSamplesRow
static const TraceColumn samples_cols[] = {
    {I64(R, step), REQ, "", "PPO step"},
    {I32(R, row), REQ, "", "the row of the step's batch"},
    {F64(R, reward), REQ, "", "its rule reward"},
    {STR(R, prompt), REQ, "", "the prompt as the model saw it (chat-formatted, decoded)"},
    {STR(R, response), REQ, "", "the response, decoded up to its end token"},
    {I64(R, strings_fnv), REQ, "", STRINGS_FNV_MEANING},
};
#undef R

const TraceTable trace_tables[TRACE_NTABLES] = {
    [TRACE_STEPS] = {"steps", sizeof(TraceStepsRow), 64, 1, 0, steps_cols, NCOL(steps_cols),
        "one row per PPO step; seconds (wall_s as the progress line; gen/inf/train/sync max over ranks); t_start_s "
        "since the trace opened; docs/TRACE.md",
        "One row per PPO step, appended after the step."},
    [TRACE_STAGES] = {"stages", sizeof(TraceStagesRow), 256, 1, 1, stages_cols, NCOL(stages_cols),
        "one row per model-stage (stage = index into the root attribute stage_names) per step; seconds = max over "
        "its ranks; model FLOPs and estimated bytes; MFU against the calibrated peak, at most 1; one int64 column "
        "per counted PAPI event (summed over ranks)",
        "One row per model-stage that holds a model (reward.inf only with [reward] network = true), per step. After "
        "the columns below, one int64 column per counted event ([trace] papi_events), named as the event (e.g. "
        "PAPI_TOT_INS): its count over the stage, summed over its ranks; the dataset also has the attribute "
        "stage_names."},
    [TRACE_PLANS] = {"plans", sizeof(TracePlansRow), 16, 1, 0, plans_cols, NCOL(plans_cols),
        "one row per plan the run used: its id (as /steps plan_id), the first step under it, plan_format text; "
        "predictions NaN until the planner prices plans",
        "One row per plan the run used."},
    [TRACE_DRIFT] = {"drift", sizeof(TraceDriftRow), 64, 1, 0, drift_cols, NCOL(drift_cols),
        "drift events the planner detected (empty without it)",
        "The live planner's: one row per signal that had crossed at a recorded decision (empty without it). The "
        "signals' values themselves are in /signals."},
    [TRACE_DECISIONS] = {"decisions", sizeof(TraceDecisionsRow), 64, 1, 0, decisions_cols, NCOL(decisions_cols),
        "the planner's admission decisions: admit when dL_s > 0 and C_s / dL_s <= gamma * H_steps, or foregone_s "
        ">= C_s (payback's rent-or-buy), or urgent (empty without the planner)",
        "One row per search of the live planner that found a plan, and one per change of plan refused before "
        "anything moved (admitted 0, to_plan −1, NaN numbers and the reason; trace_refused in trace.h), and one "
        "per move back of the measure-and-revert guard (admitted 1, NaN C_s and H_steps, a reason that starts "
        "`measured revert:`)."},
    [TRACE_TRANSITIONS] = {"transitions", sizeof(TraceTransitionsRow), 16, 1, 0, transitions_cols,
        NCOL(transitions_cols),
        "one row per plan-to-plan transition (before PPO step `step`): predicted and measured seconds, bytes moved "
        "against the minimum, text = per model-stage primitives and bytes",
        "One row per plan-to-plan transition. A switch refused before anything moves has no row."},
    [TRACE_SIGNALS] = {"signals", sizeof(TraceSignalsRow), 64, 0, 0, signals_cols, NCOL(signals_cols),
        "what the live planner saw and believed before each PPO step (empty without it): the observed response "
        "length, pool and per-rank slowdown, and its calibrated cost model (eff: the efficiency factors in "
        "planner.h order, overhead_s); initial = 1 at the initial placement; what nereus-trace replay re-runs the "
        "controller on",
        "The live planner's inputs: one row per PPO step, written before the step's decision (also during the "
        "warm-up steps), empty without the live planner; absent in traces written before it. With /planner and "
        "/deck it is every input of the controller (nereus-trace replay)."},
    [TRACE_EVAL] = {"eval", sizeof(TraceEvalRow), 16, 0, 0, eval_cols, NCOL(eval_cols),
        "greedy evaluation on held-out prompts: before PPO, every [eval] every steps, after the last",
        "One row per evaluation of the held-out prompts ([data] eval, or the digit tasks' held-out ones): before "
        "the first PPO step, every `[eval] every` steps and after the last; absent in traces written before it."},
    [TRACE_RANKS] = {"ranks", sizeof(TraceRanksRow), 64, 0, 0, ranks_cols, NCOL(ranks_cols),
        "each rank's busy and idle time per PPO step",
        "One row per rank and PPO step: the rank's roles, its time in its model-stages' work and the rest of the "
        "step's wall time, which it waited (on a disaggregated plan, what asynchronous rollouts win back); absent "
        "in traces written before it."},
    [TRACE_SAMPLES] = {"samples", sizeof(TraceSamplesRow), 16, 0, 0, samples_cols, NCOL(samples_cols),
        "decoded prompts and responses of a text run with their rewards, every [trace] samples steps",
        "A few rows of the batch every `[trace] samples` steps of a text run (`[data]`): the prompt and the "
        "response as text, with the reward; empty otherwise, absent in traces written before it."},
};

/* /planner: what the writer takes from TracePlanner (trace.h) */
#define P_STR(name, f) name, TRACE_STR, _Generic(M(TracePlanner, f), const char *: offsetof(TracePlanner, f))
#define P_F64(name, f) name, TRACE_F64, _Generic(M(TracePlanner, f), double: offsetof(TracePlanner, f))
#define P_I64(name, f) name, TRACE_I64, _Generic(M(TracePlanner, f), int64_t: offsetof(TracePlanner, f))

static const TraceAttr planner_attr[] = {
    /* name, type, offset, required, unit, meaning */
    {P_STR("policy", policy), REQ, "", "[planner] policy"},
    {P_STR("hw_name", hw_name), REQ, "", "the machine model's name (`this machine (measured)`)"},
    {P_F64("gamma", gamma), REQ, "", "[planner] gamma as the controller used it (single precision, as the deck "
                                     "holds it)"},
    {P_F64("threshold", threshold), REQ, "", "[planner] threshold as the controller used it (single precision: 0.3 "
                                             "reads 0.30000001192092896)"},
    {P_F64("headroom", headroom), REQ, "", "memory fraction a plan keeps free"},
    {P_F64("hw_flops", hw_flops), REQ, "FLOP/s", "per rank: the median over the ranks of the GEMM rate each "
                                                 "measured alone at start-up"},
    {P_F64("hw_mem", hw_mem), REQ, "bytes", "per rank: [planner] memory_gib, or the node's physical memory over its "
                                            "ranks"},
    {P_F64("hw_hbm", hw_hbm), REQ, "bytes/s", "memory bandwidth per rank: a 64 MiB copy on rank 0, best of 3"},
    {P_F64("hw_bw", hw_bw), REQ, "bytes/s", "link bandwidth, from [transition] bandwidth_gbs, for both link kinds"},
    {P_F64("hw_lat", hw_lat), REQ, "s", "link latency, from [transition] latency_us, for both link kinds"},
    {P_F64("hw_op_s", hw_op_s), REQ, "s", "ideal seconds of one operation's fixed cost (nominal: EFF_OPS calibrates "
                                          "it)"},
    {P_F64("tx_link", tx_link), NEW, "bytes/s", "the transitions' measured link rate per rank (tx_probe at start-up "
                                                "with every rank at once), which the engine's estimate (and so C) "
                                                "used; 0 when the deck set the link; read as 0 when absent"},
    {P_F64("tx_copy", tx_copy), NEW, "bytes/s", "the transitions' measured local copy rate per rank; 0 when the deck "
                                                "set the link; read as 0 when absent"},
    {P_I64("every_k", every_k), REQ, "steps", "[planner] every_k"},
    {P_I64("warmup", warmup), REQ, "steps", "[planner] warmup"},
    {P_I64("steps_total", steps_total), REQ, "steps", "[ppo] steps (H is capped by the steps left)"},
    {P_I64("nranks", nranks), REQ, "", "ranks of the job (plans are in job ranks 0..nranks−1)"},
    {P_I64("hw_ranks_per_node", hw_rpn), REQ, "", "ranks sharing a node (MPI_COMM_TYPE_SHARED)"},
    {P_I64("hw_cores", hw_cores), REQ, "", "the node's cores when they are fewer than its ranks (the compute of a "
                                           "phase then stretches by busy ranks / cores), else 0"},
};

static const TraceAttr root_attr[] = {
    {"format", TRACE_STR, 0, REQ, "", "`" TRACE_FORMAT_NAME "`"},
    {"format_version", TRACE_I32, 0, REQ, "", "1"},
    {"run_name", TRACE_STR, 0, REQ, "", "[run] name"},
    {"algorithm", TRACE_STR, 0, NEW, "", "[ppo] algorithm: `ppo` (seven model-stages) or `grpo` (five: no critic.inf, "
                                         "critic.train, whose /stages rows are then absent); a trace without it is ppo"},
    {"group_size", TRACE_I32, 0, NEW, "", "[ppo] group_size: responses per prompt (1 for ppo)"},
    {"deck", TRACE_STR, 0, REQ, "", "the resolved deck (every key, its value and where it came from); a deck of "
                                    "60,000 bytes or more only in /deck, this attribute then says its size"},
    {"ranks", TRACE_I32, 0, REQ, "", "ranks of the job"},
    {"backend", TRACE_STR, 0, REQ, "", "the compute backend"},
    {"blas_threads", TRACE_I32, 0, REQ, "", "[run] blas_threads"},
    {"started", TRACE_STR, 0, REQ, "", "UTC, ISO 8601"},
    {"start_step", TRACE_I64, 0, REQ, "", "the first PPO step this run ran (> 0 after a restart)"},
    {"source_commit", TRACE_STR, 0, REQ, "", "the commit of the git checkout that holds the running bin/nereus "
                                             "(read from .git at run time; `unknown` outside a checkout; "
                                             "uncommitted changes are not shown)"},
    {"built", TRACE_STR, 0, REQ, "", "when src/io/trace.c was compiled"},
    {"counters", TRACE_STR, 0, REQ, "", "the counters line the run printed"},
    {"papi_events", TRACE_STR, 0, REQ, "", "the events counted (the columns of /stages past mfu), comma separated; "
                                           "\"\" when none"},
    {"peak_gflops_solo", TRACE_F64_ARRAY, 0, REQ, "GFLOP/s", "each rank's calibrated GEMM rate alone (Peak, below)"},
    {"peak_gflops_together", TRACE_F64_ARRAY, 0, REQ, "GFLOP/s", "each rank's calibrated GEMM rate with all ranks "
                                                                 "at once"},
    {"peak_method", TRACE_STR, 0, REQ, "", "how the peak was measured"},
    {"stage_names", TRACE_STR, 0, REQ, "", "`actor.gen,actor.inf,actor.train,ref.inf,critic.inf,critic.train,"
                                           "reward.inf`: /stages stage indexes it"},
};

static const TraceAttr complete_attr[] = {
    {"status", TRACE_STR, 0, REQ, "", "`pass`, `fail`, `stopped by signal N after step S`"},
    {"ended", TRACE_STR, 0, REQ, "", "UTC, ISO 8601"},
    {"ppo_steps", TRACE_I64, 0, REQ, "steps", "PPO steps run"},
    {"ppo_s", TRACE_F64, 0, REQ, "s", "the PPO loop's seconds, as the `ppo:` line prints them"},
    {"mfu_clamped", TRACE_I64, 0, REQ, "", "/stages rows whose MFU was clamped to 1"},
    {"trace_s", TRACE_F64, 0, REQ, "s", "rank 0's seconds in the trace's own work"},
};
/* clang-format on */

const TraceAttrList trace_root_attrs = {"/", root_attr, NCOL(root_attr), "What made the file."};
const TraceAttrList trace_planner_attrs = {
    "/planner", planner_attr, NCOL(planner_attr),
    "A scalar int32 dataset (= 1), written once when the live planner starts: its policy and machine model."};
const TraceAttrList trace_complete_attrs = {
    "/complete", complete_attr, NCOL(complete_attr),
    "A scalar int32 dataset (= 1, compact: inside the checksummed object header), written last at a clean end (also "
    "when the run failed verification or stopped on a signal); a value other than 1 is damage."};

const TraceTable *trace_table_named(const char *name) {
    if (name[0] == '/') name++;
    for (int i = 0; i < TRACE_NTABLES; i++)
        if (strcmp(trace_tables[i].name, name) == 0) return &trace_tables[i];
    return NULL;
}

const TraceColumn *trace_column_named(const TraceTable *t, const char *name) {
    for (int c = 0; c < t->ncol; c++)
        if (strcmp(t->col[c].name, name) == 0) return &t->col[c];
    return NULL;
}

const char *trace_type_name(TraceType type, int width, char *buf, size_t len) {
    static const char *names[] = {"int32", "int64", "float64", "string", "float64"};
    if (type == TRACE_F64_ARRAY) snprintf(buf, len, "float64[%d]", width);
    else snprintf(buf, len, "%s", names[type]);
    return buf;
}
