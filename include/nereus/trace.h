/* trace.h — the run's HDF5 trace: one file per run, written by rank 0 alone
 * with the serial HDF5 API, one row per PPO step, per model-stage and step,
 * per plan, per transition, and (for the planner) per drift event and
 * admission decision. trace_schema.h is the format (docs/TRACE.md prints
 * it); bin/nereus-trace and tools/plot-trace read it.
 *
 * Every table is a 1-D dataset of a compound type, chunked and extendible
 * (H5S_UNLIMITED), appended to as the run goes; after every step (and after
 * every other append) rank 0 calls H5Fflush, so a run that crashes or is
 * killed leaves a trace with every step it finished. /complete is written
 * at the clean end only.
 *
 * A trace that fails to write (disk full, ...) is not fatal: rank 0 warns
 * once, closes the file and stops tracing; the run goes on.
 *
 * Collective calls say so; the others are rank 0's (they do nothing
 * elsewhere, or without a trace: every function accepts NULL).
 */
#ifndef NEREUS_TRACE_H
#define NEREUS_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "nereus/backend.h"
#include "nereus/config.h"
#include "nereus/model.h"
#include "nereus/plan.h"
#include "nereus/trace_schema.h"

typedef struct Trace Trace;

/* What the trace needs to know about the job when it opens. */
typedef struct TraceJob {
    const Config *cfg;
    const char *deck_text;       /* the resolved deck */
    const char *plan_text;       /* plan_format of the starting plan */
    const Backend *be;
    GPTConfig actor, critic;     /* the logical model configs (FLOPs and bytes per stage) */
    int have_rm;                 /* reward.inf holds a reward network */
    int64_t start_step;          /* the first PPO step this run runs (a restart: > 0) */
} TraceJob;

/* The trace file of a run: [trace] file; "" gives NAME.trace.h5 (a restart
 * from step S > 0: NAME_stepSSSSSS.trace.h5, so each leg keeps its own), in
 * the current directory. Returns 0 with the path, or 1 when [trace] file =
 * none. */
int trace_path(const Config *cfg, int64_t start_step, char *buf, size_t len);

/* collective over world: rank 0 creates the file (replacing one of that
 * name), every rank starts its counters ([trace] papi_events) and the peak
 * is calibrated. Rank 0 prints the counters line and the file's name.
 * Returns the trace (NULL with *rc = 0 when [trace] file = none), or NULL
 * with *rc = 2, why and the deck key to blame (*key: "trace.file" or
 * "trace.papi_events"), the same on every rank, when the file cannot be
 * created or the event list is bad. */
Trace *trace_open(MPI_Comm world, const TraceJob *job, int *rc, const char **key, char *why, size_t len);
/* collective over `own` (the processes spawned to join a run, before they join it: ft.h): their counters, and
 * a trace that is not rank 0's (it writes nothing), to take part in the traced run's collective calls. NULL when
 * the counters cannot start (the run's ranks started them: not expected) */
Trace *trace_join(MPI_Comm own, const Config *cfg);

/* One PPO step as run.c saw it (rank 0's numbers; stage times already max over ranks). */
typedef struct TraceStep {
    int64_t step;
    double t0;                   /* nr_now() at the step's start */
    double wall_s;               /* the step's seconds, as the progress line prints them */
    double times[4];             /* gen, inf, train, sync (job_step) */
    double tokens;               /* sequence tokens (B × T) */
    double reward, kl, pg_loss, vf_loss, entropy, resp_len, clipfrac, approx_kl, grad_norm_actor, grad_norm_critic;
    double sync_bytes;
    int T, P;                    /* the step's sequence length, and T less its longest response (the prompt
                                    length where every prompt has one) */
    const PlanConfig *plan;      /* the plan the step ran under */
    int plan_id;
    double kl_k3;                /* grpo: the mean k3 KL(actor‖ref) of the updates (StepStats.kl_k3); ppo: 0 */
    double logp_gap, gen_kl;     /* the generating against the scoring actor (StepStats) */
    double tis_mean, tis_capped; /* the truncated importance weights of the updates (StepStats) */
    int64_t gen_version, staleness; /* the batch's weight version and the step less it (StepStats) */
    double rollout_bytes;        /* the rollout's bytes between ranks (StepStats) */
    int64_t max_staleness;       /* K in force at the step (Job.staleness) */
    int64_t seq_tokens;          /* the rows' own tokens: Σ prompt + response, no padding (StepStats) */
} TraceStep;

/* collective over world: reduces the step's stage records (counters.h) and
 * rank 0 appends a /steps row and one /stages row per model-stage that
 * holds a model, then flushes. Call it on every rank after job_step. */
void trace_step(Trace *t, MPI_Comm world, const TraceStep *s);

/* rank 0: a plan the run uses from first_step on, under the caller's id
 * (run.c: 0 for the starting plan, then one more per transition). The
 * predictions are NaN until the planner prices plans. */
void trace_plan(Trace *t, int plan_id, int64_t first_step, const char *text, const char *source,
                double predicted_step_s, double predicted_mem_bytes);

/* One transition, from JobTxReport (job.h) as run.c has it. */
typedef struct TraceTransition {
    int64_t step;                /* before PPO step N */
    double t0;                   /* nr_now() at its start */
    int from_plan, to_plan;
    int nchanges, nwaves, verified;
    double predicted_s, measured_s, engine_s;
    double bytes_moved, bytes_min, bytes_local, mem_peak, mem_budget;
    double bytes_forwarded;      /* of bytes_moved, forwarded from a new replica (transition.h) */
    const char *text;            /* one line per changed model-stage: primitives and bytes */
    double setup_s;              /* the communicator set-up in the move (JobTxReport.setup_s) */
    int sets_prebuilt;           /* sets built before the move that it took */
} TraceTransition;
void trace_transition(Trace *t, const TraceTransition *x);

/* rank 0, for the planner: a drift event, an admission decision. */
void trace_drift(Trace *t, int64_t step, const char *kind, double magnitude, double threshold);
typedef struct TraceDecision {
    int64_t step;
    int from_plan, to_plan;      /* the current plan and the candidate's id (−1: none priced) */
    double L_now_s, L_new_s;     /* predicted step latency of the current plan and of the candidate, s */
    double dL_s;                 /* ΔL = L_now − L_new, s per step */
    double C_s;                  /* predicted transition cost, s */
    double H_steps;              /* expected steps before the next drift */
    double gamma;
    int urgent, admitted;
    double foregone_s;           /* payback: the gains refused since the last move (admit's rent-or-buy), s */
    const char *reason;
    int staleness;               /* the K the candidate is priced with (CostBreakdown.staleness); −1: none */
} TraceDecision;
void trace_decision(Trace *t, const TraceDecision *d);
/* rank 0: a change of plan refused before anything moved (a deck [switch] the job cannot take, or an
   admitted plan the transition engine refused): a /decisions row with admitted = 0, to_plan = −1, NaN
   numbers and the reason */
void trace_refused(Trace *t, int64_t step, int plan_id, const char *reason);

/* rank 0, for the replay (nereus-trace replay): before each PPO step, what
 * the live planner saw and the cost model it decided with. */
typedef struct TraceSignals {
    int64_t step;
    int plan_id;                 /* the plan in force before the decision */
    int initial;                 /* 1: the initial placement is decided at this step */
    int npool, oom;
    double resp_len;             /* the observed mean response length */
    double resp_longest;         /* the longest response the decode term priced (Workload.resp_longest; 0: the mean) */
    double eff_signal;           /* 1 / the slowest pool rank's slowdown */
    double pred_step_s;          /* the model's prediction for the plan in force */
    double overhead_s;           /* the model's step overhead */
    double rho_exp;              /* the model's message stretch exponent (HwModel.rho_exp; 0 = 1) */
    double phase_scale[TRACE_PHASES]; /* the model's per-phase scales (CostModel.phase_scale; 0 = 1) */
    double eff[TRACE_EFF_N];     /* the model's efficiency factors (planner.h order) */
    const char *pool;            /* the pool's ranks ("0-3,5") */
    const char *slow;            /* the measured slowdowns other than 1, "rank:factor,..." (%.17g: exact) */
} TraceSignals;
void trace_signals(Trace *t, const TraceSignals *g);
/* rank 0: one evaluation on the held-out prompts (the /eval row) */
void trace_eval(Trace *t, const TraceEvalRow *r);
/* rank 0: one decoded prompt and response of a text run (the /samples row; strings_fnv is computed here) */
/* rank 0: the /ranks rows of one step (n: the job's ranks) */
void trace_ranks(Trace *t, const TraceRanksRow *rows, int n);
void trace_sample(Trace *t, int64_t step, int row, double reward, const char *prompt, const char *response);
/* rank 0, once when the live planner starts: its policy and machine model
 * (the /planner dataset's attributes; TracePlanner is in trace_schema.h). */
void trace_planner(Trace *t, const TracePlanner *p);

/* collective over world: writes /complete (rank 0) when status is not
 * NULL ("pass", "fail", "stopped ..."), closes the file, stops the
 * counters; prints a line with the trace's own time (rank 0). NULL status:
 * close without /complete (the run did not end as planned). */
void trace_close(Trace *t, MPI_Comm world, const char *status, int64_t ppo_steps, double ppo_s);

#endif
