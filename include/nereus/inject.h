/* inject.h — INJECTED drift for experiments and tests ([inject], config.h):
 * a slowdown of chosen ranks by extra real work, and ranks leaving and
 * joining the pool. What the injections cause is measured by the live
 * planner like any drift; it never reads this schedule (the forced
 * response lengths are ppo_min_response's, in the rollout).
 *
 * Slowdown: a slowed rank does (factor − 1) × the CPU seconds it computed
 * since its last wait, at every wait on other ranks (comm.h's wait hook)
 * and at the end of every model-stage and of the idle probe (counters.h's
 * stage-end hook, counters_probe), as
 * real floating-point work — so the ranks that wait on it really wait,
 * its own stage timers and CPU clock show it, and the cores it shares are
 * really taken.
 *
 * Pool: a rank out of the pool is one the job must not use; each rank
 * reports whether it is in (inject_in_pool), and the live planner learns
 * the pool from those reports. */
#ifndef NEREUS_INJECT_H
#define NEREUS_INJECT_H

#include <stddef.h>

#include "nereus/config.h"
#include "nereus/plan.h"

typedef struct Injector {
    const Config *cfg;
    int world, rank;
    unsigned char *slow;     /* (world) 1: in [inject] slow_ranks */
    unsigned char *leave;    /* (world) 1: in [inject] leave_ranks */
    int nslow, nleave;
    int busiest;             /* slow_ranks = busiest: the rank is chosen from the plan in force at slow_step */
    int busiest_rank;        /* that rank, once chosen (−1: not yet) */
    double factor;           /* this rank's slowdown in force (1: none) */
} Injector;

/* Parses the rank lists against a job of `world` ranks. Returns 0, or −1
 * with why and the deck key to blame (*key). */
int inject_init(Injector *in, const Config *cfg, int world, int rank, const char **key, char *why, size_t len);
void inject_free(Injector *in);
/* 1 when anything is injected (a line to print says what, INJECTED) */
int inject_describe(const Injector *in, char *buf, size_t len);
/* this rank's slowdown at PPO step `step` (1: none) */
double inject_slow_at(const Injector *in, int rank, int step);
/* local (the same on every rank): before PPO step `step`, start or stop this rank's extra work; plan: the
 * plan in force (slow_ranks = busiest chooses its rank from it at slow_step; rank 0 says which) */
void inject_begin_step(Injector *in, int step, const PlanConfig *plan);
/* 1: rank is in the pool at step */
int inject_in_pool(const Injector *in, int rank, int step);

/* INJECTED death ([inject] die_rank, die_step, die_phase): where a step's phases begin (job_step, job_transition,
 * job_checkpoint) the rank named, in die_step (the step inject_begin_step began last) or after, says so on stderr
 * and SIGKILLs itself: a real process death at a chosen point, for the recovery tests */
enum { INJECT_GEN, INJECT_INF, INJECT_TRAIN, INJECT_SYNC, INJECT_TRANSITION, INJECT_CKPT, INJECT_NPHASES };
void inject_phase(int phase);

#endif
