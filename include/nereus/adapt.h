/* adapt.h — the planner's controller (issue #6): at each step boundary it
 * looks at what the drift monitor sees, decides whether to search, prices
 * the current plan against the candidate, and applies the policy's rule.
 * One piece of code for the three places that decide: the live run (rank
 * 0, between PPO steps: src/run/adapt_live.c), the simulator (sim.c) and
 * the offline replay of a trace (tools/trace.c). Pure: no MPI, no clock.
 *
 * What it is given at a step (Observed) is what a monitor can observe: the
 * mean response length of the last step, the ranks in the pool, each
 * rank's measured slowdown against the others, a predicted out-of-memory.
 * Never an injection schedule.
 *
 * Urgent: the plan in force cannot stay (it holds ranks that left the
 * pool, or is predicted out of memory); any plan that fits is taken. A
 * pool change that leaves it runnable (ranks joined, or ranks it does not
 * use left) is searched at once as well, without waiting for a crossing;
 * payback judges it by its rule, the other policies take any faster plan
 * (planner.h: ADMIT_POOL).
 *
 * Rules per policy:
 *   static, verl, openrlhf   search only on a pool change, with the
 *                            caller's search model and workload (the
 *                            initial conditions) and, for verl and
 *                            openrlhf, within their placement family; take
 *                            what it finds;
 *   admit-all                search at every crossing and pool change; take
 *                            any faster plan (and what a pool change brings);
 *   every-k                  search every k steps and on a pool change; the
 *                            same;
 *   every-gain               search at every step; take any plan predicted
 *                            faster (the paper's admit-every-gain);
 *   payback                  search at every crossing and pool change,
 *                            widened (ADAPT_WIDE, adapt_search);
 *                            admit(): ΔL > 0 and C/ΔL ≤ γ·H at a crossing
 *                            and at a pool change the plan survives; any
 *                            plan when urgent. Rent-or-buy besides: once the gains refused
 *                            since the last move add up to the refused
 *                            move's price, it searches again and admits a
 *                            still-faster plan (H guessed too short costs at
 *                            most one move's price).
 * After any search at a crossing or pool change the monitor's references
 * reset (admitted or not), and the event counts toward H.
 *
 * The search, with mode ANY, runs twice — on the whole pool and on the pool
 * without the ranks measured slower than 1.05× — and keeps the faster plan
 * (a slow rank is worth dropping only when the rest does better alone). */
#ifndef NEREUS_ADAPT_H
#define NEREUS_ADAPT_H

#include <stddef.h>

#include "nereus/planner.h"

enum {
    ADAPT_STATIC, ADAPT_VERL, ADAPT_OPENRLHF, ADAPT_ADMIT_ALL, ADAPT_EVERY_K, ADAPT_PAYBACK, ADAPT_EVERY_GAIN,
    ADAPT_NPOLICIES
};

/* "static", "verl", "openrlhf", "admit-all", "every-k", "payback", "every-gain". admit-all searches only at
   crossings and pool changes: the study (issue #34) names it `at-crossings`, which adapt_policy_named accepts */
const char *adapt_policy_name(int policy);
/* the policy of that name (at-crossings: admit-all), or −1 */
int adapt_policy_named(const char *name);

/* The predicted seconds of the transition a → b (the transition engine's
 * estimate, as the caller prices it). */
typedef double (*AdaptTxCost)(void *ctx, const PlanConfig *a, const PlanConfig *b);

/* Moves that wait a step for their communicators (tx_setup set). A move
 * whose plan in force can still run the coming step (not urgent) may be
 * made one step late: the caller builds the new plan's communicators at
 * this boundary (job_prepare_comms), runs the step on the plan in force
 * while their set-up completes, and moves at the next boundary, waiting
 * only for the data and for the part of the set-up the step did not cover.
 * Priced so: S = tx_setup(a, b) (the set-up part of tx_cost(a, b)), L_now
 * the plan in force's predicted step, L_b the new plan's; at once, C =
 * tx_cost; a step late, C − S + max(0, S − L_now) for the move plus the
 * step's gain given up, max(0, L_now − L_b). The cheaper is the price the
 * rule sees (AdaptDecision.C) and says whether the move waits
 * (AdaptDecision.ahead). tx_setup NULL: every move at once, priced
 * tx_cost, its communicators built in the move. */

typedef struct AdaptConfig {
    int policy;
    double gamma;            /* payback γ */
    double threshold;        /* drift threshold (relative) */
    int every_k;             /* every-k's period */
    int steps_total;         /* the run's steps (H is capped by the steps left) */
    int nranks;              /* ranks of the job (plans are in job ranks 0..nranks-1) */
    AdaptTxCost tx_cost;
    void *tx_ctx;
    AdaptTxCost tx_setup;    /* the communicator set-up part of tx_cost (same ctx); NULL: no move waits a step */
} AdaptConfig;

/* in the reason of a decision whose move waits a step (the trace's replay finds such moves by it) */
#define ADAPT_AHEAD_REASON "the move waits a step, its communicators built meanwhile"


/* payback's variants, to measure the rule's own effect (issue #34). adapt_init sets wide for payback and
   nothing else: the rule as described above */
typedef struct AdaptVariant {
    int no_keep;             /* without keep_stages */
    int pool_free;           /* a pool change the plan survives takes any faster plan, without the rule */
    int wide;                /* every search also searches for 2, 4 and 8 times the responses' memory and keeps
                                the plan fastest at the real lengths (adapt_search, ADAPT_WIDE) */
} AdaptVariant;

typedef struct Observed {
    double resp_len;         /* mean response tokens of the last step */
    int npool;
    const int *pool;         /* (npool) the job ranks in the pool, ascending */
    const double *slow;      /* (nranks) each rank's measured slowdown (1: as the others); NULL: none */
    int oom;                 /* predicted out-of-memory of the current plan */
} Observed;

/* the efficiency signal traced and logged: 1 / the slowest pool rank's
 * slowdown. The monitor's efficiency crossing is per rank (adapt_step): any
 * pool rank whose speed moved by more than the threshold against its own
 * value at the last reset. Not this signal against its reference: a rank
 * already slow (a stale estimate on a rank the planner has emptied) would
 * hide a later slowdown of another; and not a signal over the plan's ranks
 * alone: that misses the recovery of a rank the plan has emptied. */
double adapt_eff_signal(const Observed *o);

typedef struct Adapt {
    AdaptConfig c;
    DriftMonitor dm;
    PlanConfig cur;          /* the plan in force */
    double ref_slow[PLAN_MAX_RANKS]; /* each rank's slowdown at the monitor's last reset (rank_moved) */
    /* payback's rent-or-buy (planner.h admit): since the rule last refused a faster plan, the gain it refused
       (s/step, 0: none standing), that move's price, and the gains foregone since (Σ per step run) */
    double refused_dL, refused_C, foregone;
    int kind;                /* this step's crossing for H: DRIFT_SLOWED (a rank's speed fell past the threshold)
                                or DRIFT_OTHER (planner.h, drift_horizon_kind) */
    AdaptVariant v;          /* set by adapt_init (wide: payback); changed after it for a variant */
} Adapt;

/* What adapt_step decided at one step. */
typedef struct AdaptDecision {
    int step;
    int mask;                /* DRIFT_* seen */
    int searched;            /* a search ran (the rest is meaningful only then) */
    int urgent;              /* the admission path (planner.h): ADMIT_URGENT, the plan in force cannot stay (ranks
                                out of the pool, predicted OOM); ADMIT_POOL, a pool change it survives; ADMIT_RULE */
    int admitted;            /* the rule said yes */
    int changed;             /* admitted and the plan differs: the caller must move to `next` */
    int failed;              /* no plan fits the pool (why says what) */
    double len, eff;         /* the signals */
    int eff_rank;            /* the pool rank whose speed moved most against its reference (−1: none) */
    double eff_rank_now, eff_rank_ref; /* its speed (1 / slowdown) now and at the reference */
    double L_now, L_new;     /* predicted step seconds of the current plan (∞: it cannot run) and of next */
    double C;                /* predicted transition seconds, as the rule sees them: for a move that waits a step
                                (ahead), the move's own (C_move) plus the step's gain it gives up */
    int ahead;               /* changed: the move waits one step, its communicators built meanwhile (tx_setup):
                                the caller prepares them, runs the step on the plan in force and moves before
                                the next (the controller's plan is already `next`) */
    double C_move;           /* the move's own predicted seconds (C less the gain given up; C when at once) */
    double H;                /* expected steps before the next drift */
    double foregone;         /* payback: the gains refused since the last move, s (admit) */
    int rent;                /* payback: searched because those gains reached the refused move's price */
    int kept;                /* payback: model-stages of the plan in force kept in the candidate (keep_stages) */
    StepCost next_cost;
    PlanConfig next;
    char reason[256];
    char why[512];
} AdaptDecision;

/* The controller starting on plan `start` with the monitor's references at o. */
void adapt_init(Adapt *a, const AdaptConfig *c, const PlanConfig *start, const Observed *o);

/* One step boundary. `price` and w: the model and workload the plans are
 * priced with (the planner's calibrated model, the observed workload);
 * `search` and sw: the ones the search uses (the same, except for the
 * static baselines, which search with the initial conditions). On
 * d->changed the controller's current plan is already `next`: the caller
 * moves there, or calls adapt_revert if the move was refused. Returns
 * d->changed. */
int adapt_step(Adapt *a, int step, const CostModel *price, const Workload *w, const CostModel *search,
               const Workload *sw, const Observed *o, AdaptDecision *d);
/* The initial placement at `step`: adapt_init with `start` and o, then the
 * policy's search for w, taken when it is predicted faster than `start`
 * under cm (or when urgent: the pool changed before the first decision).
 * Returns d->changed (the controller's plan is then d->next). */
int adapt_place(Adapt *a, const AdaptConfig *c, const PlanConfig *start, int step, const CostModel *cm,
                const Workload *w, const Observed *o, int urgent, AdaptDecision *d);
/* 1 when every rank of plan p is one of pool[0..npool) */
int adapt_plan_within(const PlanConfig *p, const int *pool, int npool, int nranks);
/* The caller could not move (the transition was refused): back to `cur`. */
void adapt_revert(Adapt *a, const PlanConfig *cur);

/* The measure-and-revert guard ([planner] guard_margin): after an adaptive
 * move, the new plan's measured step (the median of its first fresh steps)
 * against what the old plan would take now: the model's prediction for it
 * now (which knows what changed since: longer responses, a slower rank)
 * times the old plan's own measured / predicted ratio over its last fresh
 * steps before the move (the model's bias for that plan, measured; a
 * median, so one step taken just as the drift began does not set it).
 * Revert when the new plan is slower than that by more than margin: the
 * model ranked the two wrongly. Writes the expected old-plan step to
 * *expect_s and the numbers into reason ("measured revert: ..." or
 * "measured keep: ..."). Returns 1 to revert (never without a finite
 * ratio and prediction). Pure. */
typedef struct AdaptGuard {
    double prev_ratio;       /* the old plan's measured / predicted step, median of its last fresh steps */
} AdaptGuard;
int adapt_guard(const AdaptGuard *g, double new_measured_s, double prev_pred_now, double margin, double *expect_s,
                char *reason, size_t len);

/* The best plan on the pool for a policy's placement family (ANY: the
 * whole pool and without the slow ranks, the faster). With ADAPT_WIDE
 * or'ed into policy, also the plans the search finds for 2, 4 and 8 times
 * w's longest responses (more memory held, so other layouts), the one
 * fastest at w's own lengths kept when faster by more than
 * ADAPT_WIDE_MARGIN: the search is a heuristic and on a slow
 * network misses plans a search for longer responses finds (docs/PLANNER.md,
 * "The admission study"). Returns 0, or −1 with why. */
#define ADAPT_WIDE 0x100
/* a wider search's plan is taken when predicted faster by more than this fraction: about the cost model's own
   error on held-out plans (the live sweep8-wide's RMS error, docs/PERFORMANCE.md) */
#define ADAPT_WIDE_MARGIN 0.05
/* ADAPT_HALF or'ed into policy: the fixed 50/50 split instead (planner.h, SEARCH_HALF: actor.gen on the first half
   of the pool, every other model-stage on the second), the simulator's asynchronous baseline */
#define ADAPT_HALF 0x200
int adapt_search(const CostModel *cm, const Workload *w, int policy, int nranks, const Observed *o, PlanConfig *out,
                 StepCost *sc, char *why, size_t len);

#endif
