/* memrec.h — recovery from memory after ranks died (docs/ELASTIC.md,
 * "State from memory").
 *
 * Under fault tolerance ([elastic] in_memory, the default) every rank copies,
 * at the start of a PPO step (every [elastic] buddy_every steps), the state
 * its shards of the stateful model-stages hold into host memory: the trained
 * ones (actor.train, critic.train: parameters, AdamW m and v, the step
 * counter) each time, the frozen ones (ref.inf, reward.inf: parameters) when
 * their layout changed since the last copy. With [elastic] buddy = yes a shard
 * that no other rank holds (its stage has one DP replica) is also copied to
 * the rank's buddy: a rank of the next node, or the next rank where the job
 * has one node.
 *
 * When ranks die the survivors pool what they hold. For each stateful
 * stage, the copies of its (tp, pp) cells under the layout they were taken
 * in form replicas: a replica takes one copy of every cell, each from another
 * rank, own copies before buddy copies; as many replicas as the copies allow
 * (and the batch divides). That gives the plan R: the stateful stages on
 * those replicas, the others on the survivors' plan. The job is built empty
 * on R, each member fills its shard from its copy (the tp and pp cut are the
 * copy's: only dp and the ranks changed), then the transition engine moves it
 * to the survivors' plan and the weight sync makes the generation and scoring
 * copies. No checkpoint is read; the work lost is the steps since the copy.
 * Where some cell of some stage has no copy left, or the survivors' copies are
 * of different steps, or batches were generated ahead ([ppo] max_staleness),
 * the recovery reads the newest checkpoint instead (run.c), and says why.
 */
#ifndef NEREUS_MEMREC_H
#define NEREUS_MEMREC_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "nereus/job.h"
#include "nereus/plan.h"

/* One shard's state in host memory. */
typedef struct MemCopy {
    int stage;        /* PlanStageId */
    int owner;        /* the job rank whose shard it is, in the world it was taken in */
    int pos;          /* its grid position in layout */
    int frozen;       /* ref.inf, reward.inf: never trained, any step's copy serves */
    int nbufs;        /* 1: parameters; 3: parameters, AdamW m, v */
    int adam_t;       /* AdamW steps taken */
    int64_t step;     /* the PPO step whose start it holds (a frozen copy: when taken) */
    size_t n;         /* floats per buffer (GPT.nparams) */
    PlanStage layout; /* the stage's EMU when taken */
    float *buf;       /* (nbufs · n); NULL: none */
} MemCopy;

typedef struct MemCopies {
    int64_t step;            /* the PPO step whose start the copies hold; −1: none */
    PlanConfig plan;         /* the plan then */
    MemCopy own[PLAN_NSTAGES];
    MemCopy *kept;           /* (nkept) buddy copies this rank keeps for others */
    int nkept;
    int *buddy;              /* (world) each rank's buddy, NULL until needed (buddy_world ranks) */
    int buddy_world;
    int buddy_nodes;         /* nodes the buddies were chosen over */
    double seconds;          /* spent taking and exchanging copies, summed */
    double bytes;            /* host bytes the copies hold now (own and kept) */
    int64_t taken;           /* times copies were taken */
    int stateful[PLAN_NSTAGES]; /* the stages copied (mem_stage_stateful when taken) */
} MemCopies;

/* The stateful model-stages of a job: trained (actor.train, critic.train) or frozen (ref.inf, reward.inf), where
   the job holds a model there */
int mem_stage_stateful(const Job *j, int id);

/* Collective over j->world when buddy (the buddy exchange), else local: the copies of the start of PPO step
 * `step` (above). */
void mem_copies_take(MemCopies *mc, Job *j, int64_t step, int buddy);
/* Local: frees every copy (the world they name ranks of is gone); mc->step = −1. Totals stay. */
void mem_copies_clear(MemCopies *mc);

/* What one rank holds, for the replica planning: rank `rank` (new world) has a copy of grid position pos of
   stage `stage` as laid out in the copies' plan; own: its own shard (not a buddy's). */
typedef struct MemHold {
    int rank, stage, pos, own;
} MemHold;

/* Pure: the plan R (above) from the copies' plan `old`, the holdings h[0..nh), the survivors' plan `target`
 * (world ranks), stateful[id] the stages to recover, and the batch and minibatch every dp must divide. pick
 * (PLAN_NSTAGES · world, may be NULL) gets, per stage and new rank in R, the old grid position whose copy that
 * rank fills its shard from (−1: none). how: per stage "2 DP replica(s)", "1 (buddy copy)". Returns 0, or −1
 * with why naming the first stage and cell no copy is left of. */
int mem_plan_replicas(const PlanConfig *old, const MemHold *h, int nh, const PlanConfig *target,
                      const int stateful[PLAN_NSTAGES], int batch, int minibatch, int world, PlanConfig *R, int *pick,
                      char *how, size_t how_len, char *why, size_t len);

/* Collective over world (the survivors and any joined processes, after the shrink): the step every survivor's
 * copies hold (a joined process, joined = 1, holds none), the same on every rank. Returns it, or −1 with why
 * when there is no common one. */
int64_t mem_agree_step(const MemCopies *mc, MPI_Comm world, int joined, char *why, size_t len);
/* Collective over world: pools the holdings (copies of the agreed step) and plans R (mem_plan_replicas) against
 * target; *pick_pos gets this rank's old grid position per stage (−1: none). Returns 0, or −1 with why (the same
 * on every rank). */
int mem_recover_plan(const MemCopies *mc, MPI_Comm world, const PlanConfig *target, int batch, int minibatch,
                     PlanConfig *R, int pick_pos[PLAN_NSTAGES], char *how, size_t how_len, char *why, size_t len);
/* Local: fills this rank's shards of the stateful stages of j (built on R, empty) from its copies, as pick_pos
 * says. Returns 0, or −1 with why (a copy that does not fit the shard). */
int mem_recover_fill(const MemCopies *mc, Job *j, const int pick_pos[PLAN_NSTAGES], char *why, size_t len);

#endif
