/* planner_live.h — the planner live on MPI (issue #6): rank 0 runs the
 * controller (adapt.h) between PPO steps on a cost model of this machine,
 * calibrated every step from the ranks' stage timers, and admitted plans
 * go through the transition engine (job_transition).
 *
 * The machine model (HwModel): the GEMM rate each rank reaches alone
 * (counters_calibrate, median over ranks), the memory bandwidth of a copy,
 * the node's cores (when a node holds more ranks than cores, the model
 * lets a phase take at least the node's busy seconds over its cores), the
 * memory per rank ([planner] memory_gib or the node's memory over its
 * ranks), and the [transition] link. The efficiency factors start at
 * eff_default() and are calibrated (planner.h: cost_calibrate) from each
 * model-stage's measured time — the slowest member's wall seconds — with
 * the phase's core sharing and the measured slowdown taken out. The
 * steps' time outside the model-stages (assembling the rollout,
 * advantages) is the model's overhead_s, a running mean.
 *
 * What the monitor sees: the mean response length of the last step; the
 * pool, from each rank's own report; each rank's slowdown — its CPU seconds
 * in its model-stages over the median of the other members' (CPU time, so
 * that waiting on a slow rank does not make its peers look slow); a rank
 * of the pool that the plan in force leaves without work times a small
 * GEMM each step (counters_probe), against the same probe at the start,
 * so that a rank emptied for being slow is seen to recover.
 *
 * Order per step: live_decide before job_step (collective: the pool
 * reports, rank 0 decides, every rank learns the decision, a transition
 * when admitted), live_observe after it (collective: the timers go to rank
 * 0, which calibrates). A move the controller prices cheaper one step late
 * (AdaptDecision.ahead: its communicators' set-up is dear beside the
 * step's gain; adapt.h, "Moves that wait a step") is announced instead:
 * every rank builds its communicators at that boundary (job_prepare_comms)
 * and runs the step on the plan in force, and the move comes first at the
 * next boundary, taking them (unless ranks it needs left the pool: then
 * it does not come, and the controller decides from the plan in force).
 * NEREUS_TX_PREBUILD=0 turns that off (every move at once, priced so). The first decision comes after [planner] warmup
 * steps: the initial placement, the best plan for the measured initial
 * conditions, taken when it is predicted faster than the deck's plan. */
#ifndef NEREUS_PLANNER_LIVE_H
#define NEREUS_PLANNER_LIVE_H

#include <stdint.h>

#include "nereus/adapt.h"
#include "nereus/inject.h"
#include "nereus/job.h"
#include "nereus/trace.h"

/* policy = sweep: the search's choice and the best sampled plan are run again last, this many times
 * sweep_steps steps each */
#define PLANNER_SWEEP_FINAL 3
/* policy = sweep: the control windows ([planner] sweep_reference = R): one after every R held-out plans and one
 * after the last, so ceil((n − K) / R) of them for n sampled plans of which K calibrate (0 when R = 0) */
static inline int planner_sweep_controls(int n, int K, int R) { return R > 0 && n > K ? (n - K + R - 1) / R : 0; }

#define LIVE_SELF_KEEP 3

typedef struct LivePlanner {
    int on;                  /* [planner] policy != off */
    int policy;              /* ADAPT_* */
    int started;             /* the initial placement was decided */
    int skip_calib;          /* the next step runs right after a transition (cold buffers): not calibrated */
    int first_step;          /* the first PPO step of this run (a restart starts later); −1 before it */
    CostModel cm;            /* rank 0: the calibrated model */
    Calibration cal;         /* rank 0: the stages measured, for the least-squares fit */
    double fit_rms;          /* rank 0: the fit's RMS relative error */
    Workload w, w0;          /* rank 0: the observed workload, and at the initial placement */
    double *slow;            /* (world) rank 0: measured slowdown per rank */
    /* rank 0: what estimate_slowdown (planner_live.c) keeps between steps, per rank: its CPU seconds per
       nominal predicted second on its last LIVE_SELF_KEEP healthy steps (a ring, self_n pushed), the holdings those
       were measured on, and the last step's estimate above SLOW_DETECT that awaits a second (0: none) */
    double *self_rate;       /* (world × LIVE_SELF_KEEP) */
    int *self_n;
    uint64_t *self_sig;
    double *pending;
    /* (world) each rank's idle probe at the start (counters_probe, CPU seconds), the reference of a rank the
       plan in force leaves without work; NULL for policy = sweep, whose ranks do not probe */
    double *probe_base;
    int *pool, npool;        /* the pool at the last decision (every rank) */
    Adapt ad;                /* rank 0 */
    double last_len;         /* rank 0: the last step's mean response length */
    double pred_s;           /* rank 0: the predicted step of the plan in force (NaN before the model exists) */
    double err_sum;          /* rank 0: Σ |predicted − measured| / measured over the measured steps after warmup */
    int err_n;
    double err_max;
    int decisions, searches, admitted, refused, transitions;
    double transition_s;     /* Σ measured transition seconds */
    char hw_text[256];       /* what the machine model holds, for the log */
    struct Sweep *sweep;     /* policy = sweep (src/run/sweep.c); NULL otherwise */
    /* rank 0: the measure-and-revert guard ([planner] guard_margin; adapt.h adapt_guard) */
    double recent[4];        /* the last fresh steps' measured / predicted step under the plan in force (a ring) */
    int nrecent;             /* fresh steps since the last move */
    int guard_on;            /* the last adaptive move is on probation */
    int reverts, kept;       /* the guard's verdicts */
    AdaptGuard guard;
    double guard_new[16];    /* the new plan's fresh steps */
    int guard_n;
    PlanConfig guard_prev;   /* the plan before the move on probation */
    /* a move the controller decided at the last boundary that waits for this one (AdaptDecision.ahead): its
       communicators were built there (job_prepare_comms) and got ready while the step ran on the plan in force */
    int ahead;               /* every rank */
    PlanConfig ahead_plan;   /* every rank: where it goes */
    double ahead_L_new, ahead_mem; /* rank 0: its predicted step and peak memory, for the trace */
    int ahead_chosen;        /* rank 0: the rule chose it (it goes on probation) */
    int moves_ahead;         /* moves made so */
} LivePlanner;

/* collective over world: the machine model (times a GEMM and a copy on
 * every rank), when [planner] policy is not off. Prints what it found. */
void live_init(LivePlanner *lp, Job *j);
void live_free(LivePlanner *lp);
/* collective over world: −1 with why (the same on every rank) when no plan
 * fits the models in the pool's memory under any layout (what does not fit
 * and by how much), 0 otherwise or without the planner */
int live_check_fits(LivePlanner *lp, Job *j, char *why, size_t len);

/* collective over world: before PPO step `step`. Returns 0 (the plan in
 * force stays or moved), or −1 (a transition's check failed, or a pool
 * change could not be followed: the run must stop; why says what). Bumps
 * *plan_id and *plan_text on a transition, *tx_bytes by what it moved. */
int live_decide(LivePlanner *lp, Job *j, const Injector *inj, int step, Trace *tr, int *plan_id, char *plan_text,
                size_t plan_len, double *tx_bytes, char *why, size_t len);

/* collective over world: after PPO step `step` ran, with the step's
 * statistics and wall seconds. */
void live_observe(LivePlanner *lp, Job *j, int step, const StepStats *st, double wall_s);

/* rank 0: the planner's policy and machine model into the trace (/planner) */
void live_trace_start(const LivePlanner *lp, const Job *j, Trace *tr);

/* rank 0: the log lines of the run's planner summary */
void live_report(const LivePlanner *lp);

#endif
