/* live_int.h — inside the live planner (planner_live.c): the sweep
 * (sweep.c), policy = sweep. */
#ifndef NEREUS_LIVE_INT_H
#define NEREUS_LIVE_INT_H

#include "nereus/planner_live.h"

/* rank 0: from the ranks' timers m (ranks × 2 × PLAN_NSTAGES: wall, then CPU), each model-stage's
   measured seconds (its slowest member's wall; 0 where it holds no model) and the phases' (the largest
   per-rank sum of its stages' wall seconds), under the job's plan */
void live_measured(const Job *j, const double *m, double *meas, double *phase);

/* every rank: the sweep's state (rank 0 samples its plans with lp's model) */
struct Sweep *sweep_new(LivePlanner *lp, Job *j);
void sweep_free(struct Sweep *sw);
/* rank 0: −1 with why when a sampled plan has no memory-fitting draw (the run is refused), else 0 */
int sweep_unfit(const struct Sweep *sw, char *why, size_t len);
/* rank 0, before PPO step `step`: 1 with *next when the job must move */
int sweep_decide(LivePlanner *lp, Job *j, int step, PlanConfig *next);
/* rank 0: the move before `step` was refused */
void sweep_refused(LivePlanner *lp, int step);
/* rank 0, after `step`: m (ranks × 2 × PLAN_NSTAGES) the ranks' wall and CPU seconds per model-stage */
void sweep_observe(LivePlanner *lp, Job *j, int step, const double *m, double wall_s, double len);
/* rank 0: the table and the sweep.* lines */
void sweep_report(const LivePlanner *lp);

#endif
