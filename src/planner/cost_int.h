/* cost_int.h — inside the cost model: what cost.c (the formula and its calibration) and
 * cost_shared_cores.c (ranks sharing a node's CPU cores) both read, and the workspace
 * (CostWork) a plan is priced in. */
#ifndef NEREUS_COST_INT_H
#define NEREUS_COST_INT_H

#include "nereus/planner.h"

/* the time of each class in one stage, so that calibration knows what dominates */
typedef struct Parts {
    double t[EFF_N];
    double duty; /* the share of its compute time a rank computes: 1 / the pipeline bubble's stretch */
    double pw;   /* the part of t[EFF_LAT] that is pipeline waits on shared cores, per hop (hw.pipe_hops) */
} Parts;

/* A message's cost is its bytes over the link (the link kind's class) plus
 * its latency (EFF_LAT: the α of an α-β model, one class for every link,
 * so that many small messages and few large ones calibrate apart). */
static inline double lat_s(const CostModel *cm, double hops, int k) { return hops * cm->hw.lat[k] / cm->eff.f[EFF_LAT]; }

/* The wait of one pipeline boundary crossing on shared cores, in message latencies (hw.lat / the fitted latency
 * factor), until a fit chooses hw.pipe_hops (cal_fit_plans): without it pipelined trainings on ranks sharing cores
 * measure slower than predicted against unpipelined ones; of the values tried on the recorded sweeps this one
 * predicted them best. */
#define COST_PIPE_WAIT_HOPS 20.0

/* the hops of a crossing's wait in force: the fitted ones (cal_fit_plans), else COST_PIPE_WAIT_HOPS */
static inline double pipe_hops(const HwModel *hw) { return hw->pipe_hops > 0 ? hw->pipe_hops : COST_PIPE_WAIT_HOPS; }

/* the message-stretch exponent in force (0: 1) */
static inline double rho_exp(const HwModel *hw) { return hw->rho_exp > 0 ? hw->rho_exp : 1; }

/* the compute classes (the cores do them) and the links */
static inline int is_compute(int k) { return k == EFF_GEMM || k == EFF_ATTN || k == EFF_DECODE || k == EFF_OPS; }
/* What takes a core: the compute; and where a node's ranks share its cores (hw.cores > 0), also the bytes of the
   messages inside the node, which the CPU copies through shared memory (their latency, the wait for a peer, takes
   none). On a GPU (hw.cores = 0) only the compute. */
static inline int is_link_bytes_intra(int k) { return k == EFF_AR_INTRA || k == EFF_P2P_INTRA; }
static inline int on_core(int cores, int k) { return is_compute(k) || (cores > 0 && is_link_bytes_intra(k)); }

/* The phases of a plan (cost.c, plan_phases). Per stage its compute (at its slowest member's pace) and its
 * communication; per rank and phase their sums. kr[ph][r]: the stretch of rank r's compute in phase ph, ks[s]:
 * stage s's as its ranks time it, rho[ph]: the stretch of the phase's communication; all 1 where every rank has
 * a core or a GPU (cost_shared_cores.c sets them otherwise). The phase takes the largest per-rank stretched
 * compute + ρ·communication. slowf[s]: the stage's slowdown; rm[r]: each rank's memory. */
typedef struct PlanPhases {
    double phase[3], rho[3], busy_per_core[3], slowf[PLAN_NSTAGES], ks[PLAN_NSTAGES];
    int cores;               /* hw.cores: > 0, the messages' bytes inside a node take a core (on_core) */
    int crit[3];             /* the rank that sets each phase (−1: an empty phase) */
    Parts parts[PLAN_NSTAGES];
    double rm[PLAN_MAX_RANKS];
    double kr[3][PLAN_MAX_RANKS];
} PlanPhases;

/* Past this many units a phase's scoring stages start as wholes (the schedule's cost grows with the units
   squared; a node of ranks sharing cores never comes near it). */
#define SCHED_MAX_UNITS 256
#define SCHED_UNITS (SCHED_MAX_UNITS + PLAN_NSTAGES)  /* units of a phase, at most */
#define SCHED_SLOTS (PLAN_NSTAGES * PLAN_MAX_RANKS)   /* (unit, rank) pairs of a phase, at most */

/* What starts together, and asks for cores together (cost_shared_cores.c, sched_units). */
typedef struct SchedUnit {
    int s;      /* its stage */
    int r0, n;  /* its ranks: SharedCoresWork.rank[r0, r0 + n) */
} SchedUnit;

/* The scratch of one phase's schedule on shared cores (cost_shared_cores.c, schedule_phase). */
typedef struct SharedCoresWork {
    SchedUnit unit[SCHED_UNITS];
    int rank[SCHED_SLOTS];                       /* the units' ranks, unit by unit */
    int state[SCHED_UNITS];                      /* per unit: 0 waiting, 1 computing, 2 communicating, 3 done */
    double left[SCHED_UNITS], enter[SCHED_UNITS], comm_end[SCHED_UNITS], rate[SCHED_UNITS];
    int pos_unit[SCHED_SLOTS], nxt[SCHED_SLOTS]; /* per slot of rank[]: its unit; the rank's next slot */
    int first[PLAN_MAX_RANKS];                   /* per rank: the slot of its earliest unfinished unit */
    int head[PLAN_MAX_RANKS], node_list[PLAN_MAX_RANKS];               /* per node: its newest pair; nodes busy */
    int pair_unit[SCHED_SLOTS], pair_cnt[SCHED_SLOTS], pair_next[SCHED_SLOTS]; /* (unit, node) pairs computing */
    double ask[SCHED_SLOTS], sorted[SCHED_SLOTS]; /* one node's units: the cores each asks for, sorted */
    int ask_n[SCHED_SLOTS], on[SCHED_SLOTS];      /* ... their ranks on the node, and the unit */
} SharedCoresWork;

/* The workspace of one pricing (planner.h: cost_work_new). */
struct CostWork {
    PlanPhases phases;
    double rank_compute[3][PLAN_MAX_RANKS]; /* per phase and rank: its stages' compute (slowed) */
    double rank_comm[3][PLAN_MAX_RANKS];    /* ... and their communication */
    double rank_end[PLAN_MAX_RANKS];        /* shared cores: when each rank's last stage of a phase ends */
    SharedCoresWork sched;                  /* shared cores: the schedule's scratch */
};

/* ---- cost_shared_cores.c --------------------------------------------------------- */

/* Adds to pt the waits of `crossings` pipeline boundary crossings over link k where a node's rpn ranks outnumber
   its cores (nothing otherwise). */
void cores_add_pipe_wait(const CostModel *cm, Parts *pt, double crossings, int k, int rpn);

/* Phase ph of the plan on shared cores (hw.cores > 0): sets pp->rho[ph], pp->busy_per_core[ph] and, where every
   rank's sums are finite, schedules the phase: pp->kr[ph] and stage_k (the stages of the phase), returning 1;
   0 where it did not schedule. stage_compute, stage_comm: per stage (cw->phases.parts for the duty). */
int cores_share_phase(CostWork *cw, int ph, const CostModel *cm, const PlanConfig *plan, int nranks,
                      const double *stage_compute, const double *stage_comm, double *stage_k);

#endif
