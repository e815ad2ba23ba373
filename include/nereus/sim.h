/* sim.h — the simulator behind `bin/nereus --simulate` (issue #6): the same
 * planner (cost model, search, drift monitor, admission) and the same
 * transition estimator (tx_plan_build's prediction), driven over N steps of
 * a MODELLED cluster and MODELLED models under a drift trace. Nothing runs
 * on real hardware: every time it reports is the cost model of the "true"
 * cluster (HwModel + the true Efficiency), which the planner does not see —
 * it starts from eff_default() and calibrates from the true stage times, as
 * the live planner calibrates from measured ones.
 *
 * Asynchronous rollouts: the true cluster's and the planner's models price
 * each plan for the K it runs with (planner.h, cost_plan_overlap; the bound
 * is the scenario's truth.max_staleness) and every policy's search may
 * choose an asynchronous split; sim_async compares the planner's choice
 * with the best synchronous plan and a fixed 50/50 split.
 *
 * Policies compared in one run:
 *   static      the best static plan: one that holds the run's longest
 *               responses and, of the best such plans for six lengths
 *               over the run, runs the whole trace fastest on the true
 *               cluster (chosen knowing the trace, as a user sizes a fixed
 *               job); re-chosen the same way for the steps left when the
 *               pool changes;
 *   verl        the same within the colocated family (every phase's stages
 *               on all the pool's ranks: a verl-like fixed layout);
 *   openrlhf    the same within the disaggregated family (every
 *               model-stage on ranks of its own: OpenRLHF-like);
 *   admit-all   re-search at every drift crossing and pool change, take any
 *               faster plan (any plan when urgent);
 *   every-k     re-search every k steps and on a pool change, likewise;
 *   payback     re-search at every crossing and pool change, admit by the
 *               payback rule with rent-or-buy (planner.h: admit), urgent
 *               when the plan cannot stay.
 * And in the admission study ([simulate] seeds ≥ 1, simstudy.c; issue #34):
 *   every-gain  re-search at every step, take any plan predicted faster;
 *   oracle      MODELLED clairvoyance: every step, the true cluster's
 *               plans (and the static baseline's) priced over the steps to
 *               the next event with the true per-plan error and realised
 *               move costs (sim.c, decide_oracle);
 *   payback's variants: γ = ∞ (the rule's own effect), without
 *               keep_stages, pool changes admitted without the rule, the γ sweep, and
 *               the search not widened (payback's own is: adapt.h,
 *               ADAPT_WIDE); every-gain with the widened search.
 * The adaptive policies search for plans that hold responses up to the
 * drift threshold above the present length (a crossing replans before
 * they grow past it); the monitor sees a predicted out-of-memory of the
 * plan in force. Each step's plan must fit the true cluster's memory at
 * that step's lengths, or the policy fails there (a result: a fixed
 * baseline may find no plan for a shrunken pool that holds the longest
 * responses). Each pays the predicted transition time of every switch it
 * makes; with the study's noise (SimNoise), the realised one. */
#ifndef NEREUS_SIM_H
#define NEREUS_SIM_H

#include "nereus/adapt.h"

/* events of a scenario: its availability changes (at most SIM_MAX_EVENTS − 2) and the slowdown's start and end */
#define SIM_MAX_EVENTS 4096

typedef struct SimEvent {
    int step;               /* from this step on */
    int pool;               /* availability: ranks in the pool (0: no change) */
    int rank;               /* efficiency: this rank ... (-1: none) */
    double slow;            /* ... runs this many times slower (1: back to normal) */
} SimEvent;

/* What a cluster does that the cost model does not (issue #34), MODELLED and seeded: zeroed, the
 * simulator realises exactly what the cost model predicts (the run of the deterministic table).
 * Every draw is a function of (seed, plan and its node set, step, ...), never of call order, so every
 * policy that runs a plan at a step sees the same time for it (common random numbers; simnoise.c). */
typedef struct SimNoise {
    int on;                 /* 0: none of the below (the exact simulator) */
    unsigned long long seed;
    double model_error;     /* σ of the per-plan error: realised = predicted × exp(σ·z), z fixed per plan and node set */
    double step_noise;      /* σ of each step's noise (log-normal, per plan and step) */
    double tx_min, tx_max;  /* a move's realised cost over its engine price: log-uniform in [min, max], per move */
    double warmup;          /* the first step after a move takes 1 + warmup times its time */
    double guard_margin;    /* the measure-and-revert guard's margin (adapt_guard; 0: off) */
    int guard_steps;        /* fresh steps the guard measures a new plan on */
} SimNoise;

/* the draws (simnoise.c): a hash of a plan's layouts and ranks; the per-plan error factor; a step's noise factor
   on plan p (stage −1: the step, 0..: a model-stage's timer); a move's realised / priced factor */
unsigned long long sim_plan_key(const PlanConfig *p);
double sim_plan_error(const SimNoise *n, unsigned long long plan);
double sim_step_noise(const SimNoise *n, unsigned long long plan, int step, int stage);
double sim_move_factor(const SimNoise *n, unsigned long long from, unsigned long long to, int step);

/* MODELLED unexpected failures (issue 46; docs/PLANNER.md, "Failures"): a Poisson process over the job's GPU-hours
 * (rate failures per GPU-hour, seeded: every policy meets the same failures while its run takes the same time), or,
 * for the failure study, one failure halfway through step at_step (single). Zeroed: none. A failure takes its GPU's node out of the pool
 * (the pool's last node: the modelled ranks are interchangeable) for repair_s, and the step it hits is lost up to
 * that point. Two recoveries are priced on the same run: in place (ULFM: detect_s to the survivors' world, then the
 * move the policy makes for the smaller pool, which streams the lost state from DP replicas) and checkpoint-and-
 * restart (the work since the last checkpoint, one every ckpt_every steps, and sim_ckpt_restart_s in place of
 * that move). */
typedef struct SimFailures {
    double rate;            /* failures per GPU-hour (0: none) */
    unsigned long long seed;
    double repair_s;        /* a failed node's seconds out of the pool */
    double detect_s;        /* a failure to the survivors' shrunk world */
    int ckpt_every;         /* steps between the restart baseline's checkpoints (0: none, the run's start) */
    int single;             /* 1: exactly one failure, halfway through step at_step; 0: the Poisson process */
    int at_step;
} SimFailures;

typedef struct SimScenario {
    char name[64];
    CostModel truth;        /* the modelled cluster and models, with the TRUE efficiencies */
    int gpus;               /* ranks of the cluster */
    int steps;
    Workload w;             /* at step 0 */
    double len_end;         /* response length at the last step (geometric growth from w.resp_len) */
    double longest_ratio;   /* each step's longest response over its mean, for the decode term (0: the mean) */
    double gamma;           /* payback γ */
    double threshold;       /* drift threshold (0.3) */
    int every_k;            /* the every-k policy's period */
    int keep_comms;         /* communicator sets kept for reuse (the live job's [transition] keep_comms; 0: none) */
    int no_prebuild;        /* 1: every move at once, its communicators built in the move (no move waits a step
                               for them: adapt.h, "Moves that wait a step"); 0, the default: a move the plan in
                               force can wait for may wait one step, its set-up running beside it */
    SimNoise noise;         /* zeroed: none */
    SimFailures fail;       /* rate 0 and at_step -1: none */
    int nevents;
    SimEvent ev[SIM_MAX_EVENTS]; /* sorted by step */
} SimScenario;

/* the controller's policies (adapt.h) */
enum {
    SIM_STATIC = ADAPT_STATIC, SIM_VERL = ADAPT_VERL, SIM_OPENRLHF = ADAPT_OPENRLHF, SIM_ADMIT_ALL = ADAPT_ADMIT_ALL,
    SIM_EVERY_K = ADAPT_EVERY_K, SIM_PAYBACK = ADAPT_PAYBACK, SIM_EVERY_GAIN = ADAPT_EVERY_GAIN,
    SIM_ORACLE = ADAPT_NPOLICIES, /* the simulator's own: knows the true times and move costs (sim.c) */
    SIM_NPOLICIES = ADAPT_NPOLICIES + 1,
    SIM_NTABLE = ADAPT_PAYBACK + 1 /* the deterministic table's policies: static .. payback */
};

/* A policy as the study runs it: the controller's policy and the rule's variants (payback's own effect) */
typedef struct SimPolicy {
    char name[32];
    int policy;             /* SIM_* */
    double gamma;           /* payback's γ (INFINITY: any predicted gain pays) */
    int no_keep;            /* payback without keep_stages */
    int pool_free;          /* payback takes any faster plan at a pool change the plan survives, no rule */
    int wide;               /* 1: the search also for 2, 4, 8 times the responses' memory (adapt.h, ADAPT_WIDE);
                               −1: not; 0: the policy's own (payback's is wide) */
    int sync;               /* 1: every plan synchronous (K = 0), whatever the scenario's bound: the best synchronous
                               plan of the asynchronous comparison (sim_async) */
    int half;               /* 1 (a fixed policy): the fixed 50/50 split (adapt.h, ADAPT_HALF) with K = 1 */
} SimPolicy;

typedef struct SimResult {
    double total_s;         /* steps + transitions */
    double mean_step_s;     /* total / steps */
    double transition_s;    /* Σ transition times */
    int transitions;
    int replans;            /* searches run */
    int refused;            /* searches whose plan was not taken */
    double planner_s;       /* wall time in search + transition estimates (this process) */
    int failed;             /* the policy had no plan that fits at some step */
    int reverts;            /* moves the measure-and-revert guard took back (counted in transitions too) */
    int moves_ahead;        /* moves that waited a step for their communicators (counted in transitions too) */
    double setup_hidden_s;  /* the communicator set-up those moves' waited steps covered (not in transition_s) */
    int async_steps;        /* steps run with generation overlapping the rest (StepCost.overlap) */
    int staleness;          /* the K of the last step */
    int gen_ranks, ranks;   /* the last step's plan: actor.gen's ranks, and the ranks it uses in all */
    double phase[4];        /* the last step's phases on the true cluster: gen, scoring, training, sync (s) */
    /* MODELLED failures (SimFailures): how many; recovered in place, the detection and the interrupted steps' lost
       parts (in total_s) and the moves they forced (in transition_s too); recovered by checkpoint-and-restart
       instead, the lost parts, the work since each last checkpoint and the restarts (not in total_s: the
       counterfactual, in place of fail_lost_s and fail_move_s); each also as GPU-hours (seconds x the job's GPUs) */
    int failures;
    double fail_exposure_gpu_h; /* the GPU-hours the Poisson process ran over (the plans' GPUs x the steps' time) */
    double fail_lost_s, fail_move_s, restart_lost_s;
    double fail_gpu_h, restart_gpu_h;
} SimResult;

/* Published moves priced (issue #34). The engine's price of a → b as the simulator charges it (sim.c:
 * transition_s, no communicator kept from earlier plans), and a checkpoint-and-restart of the same job onto
 * `ranks` GPUs: the trained models' state (bf16 weights, fp32 master, m, v: 14 bytes a parameter) and the
 * reference's weights written to and read back from a parallel file system at SIM_CKPT_FS_BPS in all, plus
 * SIM_RESTART_S for the job's relaunch (processes, CUDA contexts, model construction) and one communicator
 * set-up per model-stage. Both MODELLED; the two constants are assumptions, named where printed. */
#define SIM_CKPT_FS_BPS 20e9
#define SIM_RESTART_S 30.0
double sim_move_price(const SimScenario *sc, const PlanConfig *a, const PlanConfig *b);
/* the same, with the set-up of the communicators the move needs into *setup_s (may be NULL): a move that waits a
   step T long for them takes the price − min(setup, T) (adapt.h, "Moves that wait a step") */
double sim_move_parts(const SimScenario *sc, const PlanConfig *a, const PlanConfig *b, double *setup_s);
double sim_ckpt_restart_s(const SimScenario *sc, int ranks, double *bytes);

const char *sim_policy_name(int policy);
/* Whether any plan fits the pool at step 0 for step 0's workload, as the adaptive policies start (the
 * modelled cluster's true efficiencies). Returns 0, or −1 with why: what does not fit and by how much. */
int sim_fits(const SimScenario *sc, char *why, size_t len);
/* Runs one policy over the scenario. Returns 0, or −1 with why (no plan fits the pool at some step). */
int sim_run(const SimScenario *sc, int policy, SimResult *res, char *why, size_t len);
/* The admission study (src/run/simstudy.c): every study policy (core: the baselines, payback, payback-inf and
 * the oracle only) over seeds seed0 .. seed0 + nseeds − 1 of the scenario's noise (sc->noise.on), the runs
 * spread over the OpenMP threads; the table and sim.POLICY.METRIC lines on stdout. Returns 0, or 1 when payback
 * could not run a seed to its end. */
int sim_study(const SimScenario *sc, int seed0, int nseeds, int core);
/* MODELLED failures (src/run/simfail.c; SimFailures): the header lines that say how they are priced; a policy's
 * sim.POLICY.fail_* lines; its mean step had every failure been recovered by checkpoint-and-restart; and the
 * failure study: payback n times with one failure each, halfway through steps spread evenly over the run, the
 * recovery's seconds and GPU-hours both ways, and at sc->fail.rate what that is a day on the scenario's GPUs.
 * The study returns 0, or 1 when a run could not finish. */
void sim_fail_header(const SimScenario *sc);
void sim_fail_lines(const char *policy, const SimResult *r, int steps);
void sim_fail_table(const SimResult *r, int n, int steps); /* r[0..n): the policy table's results (SIM_*) */
double sim_restart_mean_step_s(const SimResult *r, int steps);
int sim_fail_study(const SimScenario *sc, int n);
/* The same for a policy variant (sim_run is this with the scenario's γ and no variant). */
int sim_run_as(const SimScenario *sc, const SimPolicy *sp, SimResult *res, char *why, size_t len);

/* The asynchronous comparison (docs/PLANNER.md, "Asynchronous plans"), for a scenario whose planner may run
 * asynchronous plans (truth.max_staleness ≥ 1): three fixed plans chosen as the static baseline chooses (knowing
 * the trace), each over the whole trace on the true cluster: the planner's (the split of ranks and K chosen
 * together, within the bound), the best synchronous one (K = 0), and the fixed 50/50 split (actor.gen on the
 * first half of the pool, the rest on the second, K = 1). Returns 0, or −1 with why (one of them cannot run). */
typedef struct SimAsync {
    SimResult planner, sync, half;
} SimAsync;
int sim_async(const SimScenario *sc, SimAsync *r, char *why, size_t len);

#endif
