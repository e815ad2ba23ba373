/* planner.h — the adaptive planner's pure parts (issue #6): the cost model
 * (latency and memory of one model-stage under a layout, and of a whole
 * step under a plan), the plan search, the payback admission rule and the
 * drift monitor. No MPI: the live planner (rank 0) and the simulator
 * (--simulate) drive the same functions.
 *
 * Cost model. A model is a ModelShape (a model of this code base, or the
 * shape of a modelled Llama / Qwen: grouped-query attention, gated MLP,
 * untied vocabulary). Hardware is a HwModel: one rank kind (peak FLOP/s,
 * memory, memory bandwidth) and two link kinds (inside a node, between
 * nodes). What the hardware achieves enters as one Efficiency factor per
 * operation class — GEMM, attention, decode (memory-bound), all-reduce and
 * point-to-point per link kind — each the fraction of peak reached, so a
 * predicted time is ideal time / efficiency. They start conservative and
 * are calibrated from measured stage times (cost_calibrate).
 *
 *   generation  prefill of the prompts (2·P_active FLOPs per token) plus
 *               one decode step per position of the longest response, over
 *               the rows still generating (finished sequences leave the
 *               batch), each the larger of its FLOPs and its memory traffic
 *               (the shard's weights once and the rows' KV cache), plus two
 *               TP all-reduces of the step's activations per layer; pp = 1
 *               (pipelined generation is refused, as by the model code).
 *   inference   one forward over (prompt + response) tokens of the
 *               replica's rows: dense FLOPs + causal attention, the PP
 *               bubble (p−1)/(m+p−1) with m = p microbatches, two TP
 *               all-reduces per layer, PP point-to-point of the activations.
 *   training    epochs · (batch / minibatch) updates of minibatch / dp rows:
 *               3× the forward FLOPs, four TP all-reduces per layer, the
 *               PP bubble and point-to-point both ways, one DP all-reduce of
 *               the shard's gradients (ring: 2(d−1)/d of its bytes), AdamW.
 *
 * Links: a TP group lives inside a node when tp ≤ ranks_per_node (the
 * search keeps it so); DP and PP groups cross nodes when the stage spans
 * more than one node.
 *
 * Memory per rank: live runs use the model code's exact allocation
 * (gpt_shard_bytes); the modelled models use parameters, gradients and
 * AdamW state at their byte widths (16 bytes a trained parameter: bf16
 * weights and gradients, fp32 master, m and v), the activations and logits
 * of one microbatch of at most 8 sequences (layer-checkpointed in
 * training), and the KV cache. A plan is feasible when, on every rank, the sum
 * over the model-stages it holds (co-resident idle ones included) fits in
 * (1 − headroom) of the rank's memory (headroom 10%).
 *
 * Step latency: the phases run one after another (gen, then the four
 * scoring stages, then the two trainings, then the weight sync); inside a
 * phase, model-stages on disjoint ranks overlap and those sharing a rank
 * add up, so a phase takes the largest per-rank sum. With asynchronous
 * rollouts (CostModel.max_staleness ≥ 1) generation overlaps scoring and
 * training where it has ranks of its own (cost_plan_overlap). */
#ifndef NEREUS_PLANNER_H
#define NEREUS_PLANNER_H

#include <stddef.h>

#include "nereus/grid.h"
#include "nereus/model.h"
#include "nereus/plan.h"

typedef struct ModelShape {
    char name[32];
    int L, C, NH, KVH;   /* layers, width, query heads, key/value heads (KVH = NH: plain attention) */
    int HD;              /* per-head width; 0: C / NH */
    int FFN;             /* MLP width (4C for GPT-2) */
    int gated;           /* 1: gated MLP (three matrices, as SwiGLU), 0: two */
    int V;               /* vocabulary */
    int tied;            /* 1: the LM head is the embedding */
    int value_head;      /* critic / reward: a scalar head instead of the LM head */
    int idle_head;       /* 1: an untied LM head (V, C) held beside the value head (a live critic of an
                            untied config): parameters, no FLOPs */
    int pos;             /* rows of a learned position embedding (GPT-2: maxT); 0: none (RoPE) */
    int bias;            /* 1: biases on every matmul of a block (GPT-2) */
    int qkv_bias;        /* 1: biases on q, k and v only (Qwen2) */
    int qk_norm;         /* 1: per-head norm weights of q and k (Qwen3) */
    int norm_vecs;       /* vectors a norm: 2 LayerNorm (weight, bias), 1 RMSNorm (weight) */
    double wbytes;       /* bytes per weight (4: fp32; 2: bf16) */
    int exact;           /* 1: a model of this code base: memory from gpt_shard_bytes (cfg below) */
    GPTConfig cfg;       /* with exact */
} ModelShape;

/* A model of this code base, from its config's arch fields (GPT-2 or the
 * Llama family; fp32, exact memory): shape_params is gpt_logical_numel and
 * the forward FLOPs per token are gpt_flops_per_token_fwd's. */
ModelShape shape_of_config(const GPTConfig *cfg, const char *name);
/* The modelled shapes: "llama-3.1-8b", "qwen3-14b", "qwen3-32b", "llama-3.3-70b"; 0, or -1 if unknown. */
int shape_named(const char *name, ModelShape *out);
/* parameters (value head or LM head per the shape) */
double shape_params(const ModelShape *m);
/* forward FLOPs per token with context T: matmuls (2 a weight) and causal attention */
double shape_fwd_flops(const ModelShape *m, double T);

typedef struct HwModel {
    char name[32];
    double flops;           /* peak FLOP/s per rank */
    double mem;             /* bytes per rank */
    double hbm;             /* memory bandwidth per rank, bytes/s */
    int ranks_per_node;
    double bw[2], lat[2];   /* link bandwidth (bytes/s) and latency (s): [0] inside a node, [1] between nodes */
    double op_s;            /* ideal seconds of one operation's fixed cost (EFF_OPS); 0: not modelled */
    double rho_exp;         /* with cores: a message's wait grows as (busy ranks per core)^rho_exp (0: 1);
                               cal_fit fits it */
    double pipe_hops;       /* with cores < ranks_per_node: each pipeline boundary crossing on a stage's schedule
                               waits this many message latencies for the receiver's time slice (0:
                               COST_PIPE_WAIT_HOPS); the sweep's fit chooses it (cal_fit_plans), cal_fit keeps
                               the hops in force */
    int cores;              /* cores a node's ranks share (0: a core, or a GPU, per rank). With fewer cores
                               than busy ranks the compute of a phase stretches (cost_plan) */
} HwModel;

/* EFF_OPS: the fixed cost of each operation a pass launches (hw.op_s
 * ideal seconds apiece: a kernel launch on a GPU, a loop nest's set-up on
 * a CPU), which dominates small models; 0 with hw.op_s = 0. */
/* EFF_LAT: the latency of every message (the α of an α-β model; the link
 * classes are the β, bytes over bandwidth). */
enum { EFF_GEMM, EFF_ATTN, EFF_DECODE, EFF_AR_INTRA, EFF_AR_INTER, EFF_P2P_INTRA, EFF_P2P_INTER, EFF_OPS, EFF_LAT, EFF_N };

typedef struct Efficiency {
    double f[EFF_N];        /* fraction of peak each class reaches, (0, 1] */
} Efficiency;

/* The conservative start: GEMM 0.4, attention 0.2, decode 0.3, links and operations 0.5. */
Efficiency eff_default(void);

/* What a step asks of the models. */
typedef struct Workload {
    int batch;              /* prompts (= sequences) per step */
    int minibatch;          /* sequences per update */
    int epochs;
    double prompt_len;      /* tokens */
    double resp_len;        /* mean generated tokens per sequence */
    double resp_max;        /* capacity the memory must hold (KV cache, activations) */
    double resp_longest;    /* the longest response of a step's batch: the decode steps, over the rows still
                               generating (cost.c decode_parts), and for this code base's own models (exact) the
                               positions scoring and training run over, every row padded to it (rollout_finish);
                               0: every response as long as the mean. The live
                               planner gives the last step's measured longest (as the mean: docs/PLANNER.md),
                               the trace records it (/steps, /signals resp_longest) and the replay reads it back;
                               the simulator gives [simulate] resp_longest_ratio × the mean (default 0) */
} Workload;

typedef struct CostModel {
    HwModel hw;
    Efficiency eff;
    ModelShape actor, critic; /* actor-shaped: actor.*, ref.inf; critic-shaped: critic.*, reward.inf */
    int have_rm;              /* reward.inf holds a network */
    int no_critic;            /* a critic-free algorithm (GRPO): critic.inf and critic.train are not in the stage
                                 set; they cost nothing, the search leaves them absent (PLAN_SRC_ABSENT) and the
                                 weight sync has no critic leg */
    double headroom;          /* memory fraction kept free (0.1) */
    const double *slow;       /* (ranks) how many times slower than calibrated each rank runs; NULL: none. A
                                 model-stage runs at the pace of its slowest rank. */
    double overhead_s;        /* per-step time outside the model-stages (the live run's rollout assembly and
                                 advantages), calibrated; 0 in the simulator */
    double gen_wbytes;        /* bytes per weight actor.gen reads: 2 with [model] gen_dtype = bf16 (a bf16 copy beside
                                 the fp32 weights, counted in its memory); 0: the shape's wbytes */
    double score_wbytes;      /* the same for the scoring EMUs ([model] score_dtype) */
    double phase_scale[3];    /* per phase (gen, inf, train): what the phases measured over what the fitted model
                                 adds up for them (cal_fit, from the phase observations; the sweep: cal_phase_scales,
                                 against cost_plan's phases at the fitted factors); cost_plan multiplies each
                                 phase by it. 0 (the simulator, a model never fitted): 1 */
    int max_staleness;        /* asynchronous rollouts (docs/PLANNER.md, "Asynchronous plans"): the largest K a plan
                                 may run with ([planner] max_staleness, or the deck's [ppo] max_staleness where the
                                 planner may not choose); 0: every plan synchronous, priced as the phases' sum */
    int staleness_fixed;      /* 1: every plan runs with K = max_staleness (the deck's K, which the planner does not
                                 change); 0: cost_plan gives each plan the smallest K in 0..max_staleness of its
                                 lowest price (1 where generation overlaps and that is faster, else 0) */
} CostModel;

/* The deck's bounds on K into cm: [planner] max_staleness ≥ 0 lets the planner choose K up to it; −1 keeps the
 * deck's [ppo] max_staleness for every plan (the live planner, the simulator and the trace replay alike). */
static inline void cost_set_staleness(CostModel *cm, int planner_max, int ppo_max) {
    cm->max_staleness = planner_max >= 0 ? planner_max : ppo_max;
    cm->staleness_fixed = planner_max < 0;
}

/* Seconds of one stage (PlanStageId) under layout l with the workload;
 * *mem (may be NULL) the bytes per rank of its shard (the largest over its
 * pipeline stages). Time is INFINITY when the layout cannot run the stage
 * (pp > 1 for generation, dp not dividing the batch or the minibatch, tp
 * not dividing the heads, pp not dividing the layers). */
double cost_stage(const CostModel *cm, int stage, GridLayout l, const Workload *w, double *mem);

/* The predicted step of a resolved plan: per-phase seconds (gen, inf,
 * train, sync), their sum returned; *peak the largest per-rank memory;
 * *fits 1 when every rank's memory fits with the headroom. */
typedef struct StepCost {
    double phase[4];
    double stage[PLAN_NSTAGES]; /* each model-stage's seconds as its ranks time it (its phase's scale applied) */
    double total;
    double peak_mem;
    int fits;
    int worst_rank;          /* the rank of peak_mem */
    int staleness;           /* K the plan runs with: cost_plan's choice (CostModel.staleness_fixed 0) or the fixed K */
    int overlap;             /* 1: K ≥ 1 and generation overlaps scoring and training (cost_plan_overlap) */
    double rollout_s;        /* with overlap: the rollout's point-to-point transfer, in total */
    double sync_total;       /* the plan's synchronous price (K = 0): the phases' sum, the sync and the overhead */
} StepCost;
double cost_plan(const CostModel *cm, const PlanConfig *plan, int nranks, const Workload *w, StepCost *sc);
/* An asynchronous step (K ≥ 1: actor.gen generates the batch of step k + K while the other model-stages score
 * and train step k's). Where actor.gen's ranks hold no other model-stage with a model (and, on shared cores,
 * every node has a core for each rank the plan uses: generation and the rest then take no core from each
 * other), the step costs max(gen, scoring + training) + the rollout's transfer + the weight sync + the
 * overhead: the rollout goes point to point from each gen replica's leader to every EMU that holds a model
 * (8 bytes a token: its id and its behaviour log-probability), then the sync runs as in a synchronous step.
 * Where they share a rank, that rank runs its generation and then its other work, and the price is the
 * synchronous sum (conservative: a partial overlap is not priced). K = 1 is all the overlap needs; a larger K
 * changes nothing in the model's steady state, so the choice is the smallest K of the lowest price. With
 * max_staleness 0, every price is the synchronous one, bit for bit. cost_plan_overlap: 1 when plan's
 * generation can overlap (the condition above), whatever K. */
int cost_plan_overlap(const CostModel *cm, const PlanConfig *plan, int nranks);
/* The step from measured phases ph (gen, scoring, training; sync and overhead from sc) as sc's K combines them:
 * max(ph[0], ph[1] + ph[2]) + sc's rollout and sync where sc overlaps, else their sum (the live planner's
 * overhead is the measured step less this) */
double cost_step_of_phases(const StepCost *sc, const double *ph);
/* The scratch a plan is priced in (per-rank sums, the shared-core schedule: about 0.5 MB), caller-owned so that
 * the cost model keeps no state between calls: callers with a CostWork each can price plans at the same time.
 * cost_plan allocates one for the call; a caller pricing many plans makes one with cost_work_new and passes it
 * to cost_plan_in, which is cost_plan in it. */
typedef struct CostWork CostWork;
CostWork *cost_work_new(void);
void cost_work_free(CostWork *cw);
double cost_plan_in(CostWork *cw, const CostModel *cm, const PlanConfig *plan, int nranks, const Workload *w,
                    StepCost *sc);

/* The compute part of cost_stage (GEMM, attention, memory-bound classes):
 * what a rank's CPU (or GPU) is busy for. */
double cost_stage_compute(const CostModel *cm, int stage, GridLayout l, const Workload *w);

/* Calibration: a measured stage time against the model's prediction for the
 * same stage and layout moves the factors of the classes that dominate its
 * prediction (a multiplicative step toward the ratio, weight alpha). */
void cost_calibrate(CostModel *cm, int stage, GridLayout l, const Workload *w, double measured_s, double alpha);

/* Calibration by least squares. A stage's time inside a plan is linear in
 * the inverses of the factors: t = Σ_k a_k / f_k, with a_k its ideal
 * seconds of class k (stretched and slowed as cost_stage_in_plan does).
 * A Calibration keeps the last CAL_MAX measured stages (a, t) and refits
 * every factor at once: minimum Σ ((Σ a_k x_k − t) / t)² over x_k = 1/f_k ≥ 1
 * (relative errors: short and long stages count alike), with a weak pull
 * toward the factors in force so that a class no measurement separates
 * stays where it was. Observations from several plans (different tp, dp,
 * core sharing) are what tell the classes apart. */
#define CAL_MAX 512
typedef struct CalObs {
    double a[EFF_N]; /* ideal seconds per class (stretched, slowed) */
    double t;        /* measured */
    double rho;      /* the phase's busy ranks per core */
    double beta;     /* the hw.rho_exp a[] was computed with (the links' a[] include rho^beta) */
    double pw;       /* the part of a[EFF_LAT] that is pipeline waits, per hop (hw.pipe_hops) */
    double hops;     /* the hw.pipe_hops a[] was computed with */
    int core_links;  /* the links' bytes inside a node took a core (hw.cores > 0): their a[] hold the compute's
                        stretch, not rho^beta */
    int stage;
    GridLayout l;
} CalObs;
typedef struct Calibration {
    int n, next;             /* observations held; the slot the next one takes */
    CalObs obs[CAL_MAX];
} Calibration;
/* a stage measured inside a plan (measured_s > 0) */
void cal_add(Calibration *c, const CostModel *cm, const PlanConfig *plan, int nranks, const Workload *w, int stage,
             double measured_s);
/* a phase measured inside a plan (its largest per-rank sum of stage seconds): linearised at the rank that
   sets the phase under cm, so that the fit also answers for what cost_plan adds up; stage = −1 − phase */
void cal_add_phase(Calibration *c, const CostModel *cm, const PlanConfig *plan, int nranks, const Workload *w,
                   int phase, double measured_s);
/* refit cm->eff from the observations, then cm->phase_scale (per phase, the geometric mean of measured over
   fitted of its phase observations); returns the RMS relative error of the fit (0 without observations) */
double cal_fit(const Calibration *c, CostModel *cm);
/* what cm (fitted) predicts for observation o: Σ a_k / f_k at cm's message stretch and pipeline waits */
double cal_obs_fitted(const CalObs *o, const CostModel *cm);
/* A plan's measured phases, for cal_phase_scales: the plan, the workload it ran (its mean response length),
   the mean measured gen, inf and train phase, and how many steps the means are over (their weight). */
typedef struct PhaseObs {
    const PlanConfig *plan;
    Workload w;
    double ph[3];
    int steps;
} PhaseObs;
/* cm->phase_scale again, per phase the steps-weighted geometric mean of measured over what cost_plan gives at
   cm's factors before its phase scales, over the n plans: the scales cal_fit sets compare the measurements with
   the phases linearised at the factors the observations were taken with, which on shared cores is not what
   cost_plan adds up at the fitted factors (its schedule, hence each stage's stretch, moves with them). For a
   fit from observations taken at other factors (the sweep's); the live planner's are taken at its model's. */
void cal_phase_scales(CostModel *cm, int nranks, const PhaseObs *o, int n);
/* cal_fit and cal_phase_scales for a fit that has its plans' measured phases (the sweep's): where some observation
   holds pipeline crossings' waits on shared cores, hw.pipe_hops is chosen from a grid as the one whose fit
   predicts the n plans' phases best (their sum, the steps-weighted squared log error); returns cal_fit's RMS
   for the fit chosen */
double cal_fit_plans(const Calibration *c, CostModel *cm, int nranks, const PhaseObs *o, int n);
/* Which K of n plans to calibrate on, before any runs: greedily, the plan whose calibration observations (as
   cal_add and cal_add_phase take them, at cm's predictions, as rows a / t of the relative least squares) add
   the most to the log determinant of the information matrix (a D-optimal design: the factors the chosen plans
   pin down best). order (n) out: the chosen K first, in the order chosen, then the rest in sample order. */
void cal_design(const CostModel *cm, const PlanConfig *plans, int n, int nranks, const Workload *w, int K, int *order);

/* ---- search ----------------------------------------------------------------- */

typedef struct SearchStats {
    double seconds;          /* wall time of the search */
    long candidates;         /* (stage, layout) pairs priced */
    long groupings;          /* phase groupings tried */
} SearchStats;

/* The best plan the search finds for nranks ranks (ranks 0..nranks-1 in
 * the pool), into *out (resolved: every stage tp, pp, dp, ranks). Per
 * stage a frontier of the fastest layout for each rank count; then, per
 * phase, every grouping of its stages into colocated groups on disjoint
 * rank blocks (generation alone; the four scoring stages; the two
 * trainings), the blocks sized by a min–max split; then the memory check
 * over the phases' overlap, and, where a rank does not fit, the next best.
 * On pools of at most SEARCH_REFINE_MAX ranks (SEARCH_ANY only) a local
 * search follows, since the families above never place a stage on part of
 * a phase's ranks beside an idle part: SEARCH_REFINE_DRAWS random plans
 * (every model-stage on any layout of an aligned block, plan_stage_options;
 * a fixed seed, so the same inputs give the same plan), then coordinate
 * descent from the best (one model-stage at a time over all its options,
 * until no move helps); the fastest plan that fits wins.
 * Returns 0, or −1 with why: the smallest total memory the models need
 * against what the pool has ("actor.train needs 31.2 GiB per rank even at
 * tp8 pp8 on 64 ranks; ranks have 24.0 GiB less 10% headroom"). */
int plan_search(const CostModel *cm, int nranks, const Workload *w, PlanConfig *out, StepCost *sc, SearchStats *st,
                char *why, size_t len);
/* The same over `n` ranks of a larger job: logical rank i of the search is
 * job rank map[i] (the pool, e.g. without the ranks that left or run
 * slow; NULL: ranks 0..n-1); the plan and its cost are in job ranks
 * 0..nranks_job-1. */
int plan_search_on(const CostModel *cm, int n, const int *map, int nranks_job, const Workload *w, PlanConfig *out,
                   StepCost *sc, SearchStats *st, char *why, size_t len);
/* The same within one placement family: SEARCH_ANY (the above),
 * SEARCH_COLOCATED (every phase's stages on the same ranks, all of the
 * pool: the best verl-like colocated plan), SEARCH_DISAGGREGATED (every
 * model-stage on ranks of its own, across the phases too: the best
 * OpenRLHF-like plan; the pool's split into the three phases' budgets is
 * tried on a grid of N/32 ranks). The baselines of the simulator are the
 * best plans of their family, not a fixed default. */
/* SEARCH_SPLIT: actor.gen on a block of ranks of its own, every other model-stage on the rest, each phase grouped
 * there as SEARCH_ANY groups it (the asynchronous family: generation overlaps the rest, cost_plan_overlap); the
 * block's size is where generation's time meets scoring's plus training's (a bisection on the frontiers: the
 * one falls and the other rises with it), and the plans a few ranks either side are priced whole. SEARCH_ANY
 * tries it too where cm->max_staleness ≥ 1 and keeps the faster plan. SEARCH_HALF: the same with actor.gen
 * on the first half of the pool (the simulator's fixed 50/50 baseline). */
enum { SEARCH_ANY, SEARCH_COLOCATED, SEARCH_DISAGGREGATED, SEARCH_SPLIT, SEARCH_HALF };
/* the frontiers are also built for responses 2, 1/2, 1/4 and 1/8 times as long (search.c says why) */
#define SEARCH_ALT_LENS 4
#define SEARCH_REFINE_MAX 16
#define SEARCH_REFINE_DRAWS 2000
/* One option of a model-stage for the local search and the sweep's sampler:
 * a layout on ranks first .. first + tp·pp·dp − 1 of the pool. */
typedef struct StageOption {
    GridLayout l;
    int first;
} StageOption;
/* Every layout of `stage` the model can price (its divisibility rules: tp
 * dividing the heads, pp the layers, dp the batch and minibatch, no pp for
 * generation) on every aligned block of a pool of n ranks (the block's
 * first rank a multiple of its size), up to max; returns the count. Pure. */
int plan_stage_options(const CostModel *cm, int stage, int n, const Workload *w, StageOption *opt, int max);
/* The model-stage of option o, its ranks mapped through map (NULL: pool
 * position = job rank). */
void plan_stage_of_option(const StageOption *o, const int *map, PlanStage *ps);
int plan_search_mode(const CostModel *cm, int n, const int *map, int nranks_job, const Workload *w, int mode,
                     PlanConfig *out, StepCost *sc, SearchStats *st, char *why, size_t len);

/* ---- admission and drift ------------------------------------------------------ */

typedef struct Admission {
    double gamma;            /* [planner] gamma */
    double H;                /* expected steps before the next drift (mean gap, capped by the steps remaining) */
} Admission;

/* How a decision is admitted (admit's `path`, the trace's /decisions `urgent` column). */
enum {
    ADMIT_RULE = 0,   /* the payback rule */
    ADMIT_URGENT = 1, /* the plan in force cannot stay (ranks out of the pool, predicted OOM): any feasible plan */
    ADMIT_POOL = 2    /* the pool changed and the plan can stay: the payback rule, as ADMIT_RULE (recorded apart) */
};
/* the path in a table's "urgent" column: "no" (the rule), "pool", "yes" (urgent, or a value of another version) */
const char *admit_path_name(int path);
/* The payback rule (path ADMIT_RULE): admit when dL = L_now − L_new > 0 and
 * C / dL ≤ γ·H, or, failing that, when the gains refused since the last
 * move (foregone: Σ over the steps run since of the refused plans' dL, s)
 * already add up to C — rent-or-buy: a horizon guessed too short can then
 * cost at most the move's price again, never an unbounded run of refused
 * gains. ADMIT_URGENT: admit whenever the new plan is feasible (the plan in
 * force cannot run: the move is forced, only its target is chosen).
 * ADMIT_POOL: the rule as ADMIT_RULE (ranks joined, or ranks the plan does
 * not use left: staying is allowed, so the move must pay for itself), the
 * reason prefixed with the pool change. Writes a one-line reason. Returns
 * 1 to admit. */
int admit(double L_now, double L_new, double C, double gamma, double H, double foregone, int path, char *reason,
          size_t len);

enum { DRIFT_NONE = 0, DRIFT_POOL = 1, DRIFT_OOM = 2, DRIFT_LENGTH = 4, DRIFT_EFFICIENCY = 8 };

typedef struct DriftMonitor {
    double threshold;        /* relative change that triggers a replan (0.3) */
    double ref_len;          /* response length at the last replan */
    double ref_eff;          /* a calibrated efficiency (slowest rank's speed) at the last replan */
    int ref_pool;            /* ranks in the pool at the last replan */
    int last_cross;          /* step of the last crossing, −1 before any */
    double gap_sum;          /* Σ steps between crossings */
    int gaps;
    int last_slowed;         /* the last crossing was a rank slowing down (DRIFT_SLOWED) */
    double slowed_gap_sum;   /* Σ steps from a crossing where a rank slowed down to the next crossing */
    int slowed_gaps;
} DriftMonitor;

/* the kind of a crossing, for H: a rank slowed down (its speed fell past the threshold), or anything else */
enum { DRIFT_OTHER = 0, DRIFT_SLOWED = 1 };

void drift_init(DriftMonitor *d, double threshold, double len, double eff, int pool);
/* The signals at this step: returns a DRIFT_* mask (POOL and OOM are acted on at once, without a crossing). */
int drift_check(const DriftMonitor *d, double len, double eff, int pool, int oom);
/* After a replan (admitted or not): the references reset, and the crossing
 * counts toward H. */
void drift_reset(DriftMonitor *d, int step, double len, double eff, int pool);
/* drift_reset for a crossing of a kind (DRIFT_SLOWED or DRIFT_OTHER; drift_reset is DRIFT_OTHER) */
void drift_reset_kind(DriftMonitor *d, int step, double len, double eff, int pool, int kind);
/* H: the mean steps between crossings (the steps remaining before any
 * second crossing), capped by the steps remaining. */
double drift_horizon(const DriftMonitor *d, int step, int steps_total);
/* H at a crossing of a kind: at DRIFT_SLOWED, once a slowdown has been seen to end, the mean steps from a
 * slowed crossing to the next crossing (how long slowdowns have lasted, seen as the monitor sees them);
 * otherwise drift_horizon. A slowdown that comes and goes in short spells between long ones has a short H
 * of its own, which the mean over every gap (spells and the time between them) overstates. */
double drift_horizon_kind(const DriftMonitor *d, int step, int steps_total, int kind);

#endif
