/* recover.h — what the step loop's recovery point (run.c, ft.h) does with
 * the job after ranks died: the old job dropped without MPI, the plan for
 * the survivors, the half-written checkpoint discarded (docs/ELASTIC.md). */
#ifndef NEREUS_RECOVER_H
#define NEREUS_RECOVER_H

#include <stddef.h>

#include "nereus/config.h"
#include "nereus/job.h"
#include "nereus/plan.h"

/* Local: revokes every communicator of j (its EMUs', the transition engine's) and its world, so that a
 * survivor waiting in one of them leaves the wait (ft.h). No-op without ULFM. */
void job_revoke(Job *j);
/* Local: frees j's memory (models, buffers) without any MPI call: its communicators, revoked, are left
 * allocated (freeing them is collective, and the dead ranks are members). j is zeroed. */
void job_abandon(Job *j);
/* The survivors' plan for a job of `world` ranks without a planner: the deck's [plan] default
 * (disaggregated where the deck asks for it and there are at least 7 ranks, else colocated) over all the
 * survivors, resolved against cfg's models. Returns 0, or −1 with why. With [planner] policy set, the live
 * planner, rebuilt on the survivors, places its own plan before the redone step (its initial placement). */
int job_survivor_plan(const Config *cfg, int world, PlanConfig *out, char *why, size_t len);
/* Rank 0 of the job: deletes [ckpt] dir's [run] name_step*.h5.tmp files (a checkpoint being written when a
 * rank died: the complete files before it stay); names the first in `first` (may be NULL). Returns how many
 * it deleted; other ranks 0. */
int job_ckpt_discard_partial(const Job *j, char *first, size_t len);

#endif
