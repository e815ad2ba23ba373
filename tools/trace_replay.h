/* trace_replay.h — what the replay's two files share (tools/trace_replay.c
 * rebuilds the controller's inputs and re-runs it; trace_replay_report.c
 * prints and checks the runs).
 *
 * With /signals and /planner (a live-planner run): the controller's inputs
 * rebuilt step by step — the machine model from /planner, the calibrated
 * efficiencies, overhead, response length, pool and per-rank slowdowns
 * from each /signals row, the models, workload and transition pricer from
 * the deck stored in the trace — and the controller (adapt.h, the code the
 * live run decides with) re-run over them: with the recorded policy, γ and
 * threshold it must give the recorded /decisions; with other γ, threshold
 * or the static policy it says what those would have decided, and every
 * run is priced with the same per-step model. Without them: the admission
 * rule over the recorded decisions only.
 */
#ifndef NEREUS_TOOLS_TRACE_REPLAY_H
#define NEREUS_TOOLS_TRACE_REPLAY_H

#include "nereus/adapt.h"   /* the controller replay re-runs */
#include "nereus/planner.h" /* cost model, admit() */
#include "nereus/txprice.h" /* the transition pricer, as the job prices */
#include "trace_tool.h"

/* one /signals row, parsed */
typedef struct SigRow {
    int64_t step;
    int plan_id, initial, npool, oom;
    double resp_len, eff_signal, pred, overhead, eff[EFF_N];
    double resp_longest;          /* the longest response the decode term priced: /signals resp_longest, 0 when absent */
    double rho_exp;               /* the cost model's hw.rho_exp (fitted by the calibration): /signals rho_exp, or inferred */
    double phase_scale[TRACE_PHASES]; /* the cost model's per-phase scales: /signals phase_scale, or 1 (a model
                                         without them) */
    int *pool;                    /* (npool) ascending job ranks */
    double *slow;                 /* (nranks) 1 where the row lists none */
} SigRow;

typedef struct Replay {
    const TraceFile *tf;
    Config cfg;
    int n;                   /* job ranks */
    GPTConfig ac, cc;
    int have_rm, P;
    TxPricer px;
    HwModel hw;
    PlanConfig plan0;        /* the deck's plan, resolved as main.c resolves it */
    SigRow *row;
    size_t nrow;
    int *ran;                /* (nrow) the row's step has a /steps row (the step finished): the totals count it */
    int nran;
    int rho_recorded;        /* /signals has rho_exp; else it is inferred (rho_matched of the rows matched) */
    int rho_matched;
    int nrec;                /* recorded plans: /plans text parsed back (pricing the recorded run) */
    PlanConfig *rec;         /* indexed by plan id */
    int *rec_ok;
} Replay;

/* one decision of a replayed run */
typedef struct RDec {
    int64_t step;
    int initial, urgent, admitted, changed, moved, failed, from_id, to_id;
    double L_now, L_new, C, H;
    char reason[256];
} RDec;

typedef struct Run {
    char name[64];
    int policy;
    double gamma, threshold;
    RDec *dec;
    int ndec, nadm, ntx, nplans;
    double steps_s, tx_s, total;
    int *plan_at;            /* (nrow) the plan id in force for each row's step */
    PlanConfig *plans;       /* (nrow + 1) the plans the run used, by id */
    char stop[600];          /* "" or why the run could not go on (as the live run would stop) */
} Run;

/* the steps where the recorded run moved (a /transitions row there): refused_at, where it was refused although
 * admitted; revert_at, where the measure-and-revert guard moved back (taken as recorded) */
typedef struct RecordedMoves {
    const int64_t *refused_at, *revert_at;
    int nrefused, nrevert;
} RecordedMoves;

/* the controller's inputs from the trace; 0, or −1 with why (free_replay in either case) */
int replay_build(const TraceFile *tf, Replay *r, char *why, size_t len);
void free_replay(Replay *r);
/* the cost model and workload of row x */
void replay_model(const Replay *r, const SigRow *x, CostModel *cm, Workload *w);
/* the controller re-run over every row under policy, gamma and threshold; moves: the recorded run's moves the
 * controller cannot know (the recorded replay only; NULL otherwise) */
void replay_run(const Replay *r, int policy, double gamma, double threshold, const RecordedMoves *moves, Run *u);
void free_run(Run *u);
/* the recorded run priced as the replays are; 0, or −1 with why */
int price_recorded(const Replay *r, double *steps_s, double *tx_s, int *ntx, char *why, size_t len);
/* 1 when /transitions has a row before `step`: the run moved there */
int moved_at(const Table *tx, int64_t step);
/* two recorded numbers agree when equal (∞ and NaN alike) or within 1e-9 relative */
int same_num(double a, double b);

#endif
