/* emu.c — building and freeing an EMU's communicators (emu.h) from the pure
 * grid math (grid.h): for each group kind, every job rank calls
 * MPI_Comm_split with the color of its group (MPI_UNDEFINED when it is in
 * none) and its index in the group as the key, so the new communicator's
 * rank order is the grid order. With a device layer that has groups (the
 * CUDA backend with NCCL), comm_group_split then splits the job's NCCL
 * communicator the same way (ncclCommSplit, same color and key) and hangs
 * the result on the new MPI communicator; MPI_Comm_free in emu_free frees
 * it with its communicator. The sets of communicators that EMUs share live
 * in the caller's EmuCache (a job's: Job.comms); this file keeps no state of
 * its own. */
#include "nereus/emu.h"
#include "nereus/comm.h"
#include "nereus/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/util.h"

/* One set of communicators (emu.h): those of every EMU of one layout on the same ranks of one job
   communicator. In a cache's list while in use or kept (refs 0, at most cache->keep of them); a set built
   without a cache belongs to its one EMU. */
enum { EMU_NKINDS = 5 };
struct EmuCommSet {
    MPI_Comm job;
    GridLayout l;
    int n, *ranks;          /* job ranks in grid order (owned) */
    MPI_Comm c[EMU_NKINDS]; /* all, tp, dp, pp, embd */
    int refs;               /* EMUs using it; 0: kept for reuse, or prepared */
    int prepared;           /* built ahead for an EMU not built yet (emu_cache_prepare): neither kept nor trimmed */
    double ready_at;        /* prepared: when its INJECTED set-up ends (nr_now; 0: none) */
    unsigned long idle;     /* when it was last released (cache->clock): the oldest kept one goes first */
    EmuCache *cache;        /* the cache whose list holds it; NULL: its EMU's own */
    struct EmuCommSet *next;
};
typedef struct EmuCommSet CommSet;

void emu_cache_init(EmuCache *cache, int keep) {
    memset(cache, 0, sizeof *cache);
    cache->keep = keep > 0 ? keep : 0;
}

static CommSet *set_find(const EmuCache *cache, MPI_Comm job, GridLayout l, const int *ranks, int n) {
    for (CommSet *s = cache ? cache->sets : NULL; s; s = s->next)
        if (s->job == job && s->l.tp == l.tp && s->l.pp == l.pp && s->l.dp == l.dp && s->n == n &&
            memcmp(s->ranks, ranks, (size_t)n * sizeof *ranks) == 0)
            return s;
    return NULL;
}

static void set_take(Emu *e, CommSet *s) {
    s->refs++;
    e->set = s;
    e->all = s->c[0], e->tp = s->c[1], e->dp = s->c[2], e->pp = s->c[3], e->embd = s->c[4];
}

/* collective over job: a new set of communicators for layout l on ranks[0 .. n) (grid order; this rank at pos,
   −1: none), one MPI_Comm_split (and device group split) per group kind, in cache's list when there is a cache */
static CommSet *set_new(EmuCache *cache, MPI_Comm job, GridLayout l, const int *ranks, int n, int pos) {
    static const GridGroup kinds[EMU_NKINDS] = {GRID_ALL, GRID_TP, GRID_DP, GRID_PP, GRID_EMBD};
    CommSet *set = nr_xcalloc(1, sizeof *set);
    for (size_t k = 0; k < EMU_NKINDS; k++) {
        int color = pos >= 0 ? grid_group_color(l, kinds[k], pos) : -1;
        int key = pos >= 0 ? grid_group_index(l, kinds[k], pos) : 0;
        set->c[k] = MPI_COMM_NULL;
        mpiCheck(MPI_Comm_split(job, color >= 0 ? color : MPI_UNDEFINED, key, &set->c[k]));
        comm_group_split(job, color, key, set->c[k]); /* its NCCL group, when device buffers have groups */
    }
    set->job = job;
    set->l = l;
    set->n = n;
    set->ranks = nr_xmalloc((size_t)n * sizeof *set->ranks);
    memcpy(set->ranks, ranks, (size_t)n * sizeof *set->ranks);
    set->cache = cache;
    if (cache) {
        cache->built++;
        set->next = cache->sets;
        cache->sets = set;
    }
    return set;
}

/* collective over job: e's communicators in a new set (set_new) that e takes, with the INJECTED set-up waited
   for */
static void set_build(Emu *e, EmuCache *cache, MPI_Comm job) {
    double t0 = nr_now();
    CommSet *set = set_new(cache, job, e->layout, e->ranks, e->n, e->pos);
    comm_setup_inject_wait(job, set->c[0], t0); /* [inject] comm_setup_s: INJECTED, nothing when off */
    set_take(e, set);
}

/* collective over job: e takes a prepared set, once what is left of its INJECTED set-up has passed (every rank
   of job takes the same set at the same point: the same builds in the same order find the same sets) */
static void set_commit(Emu *e, EmuCache *cache, CommSet *set) {
    if (set->ready_at > 0) comm_setup_inject_wait(set->job, set->c[0], set->ready_at - comm_setup_inject_s());
    set->prepared = 0;
    set->ready_at = 0;
    cache->taken_prepared++;
    set_take(e, set);
}

/* collective over job (unless cache holds a set with this layout and these ranks: then local, on every rank
   alike) */
void emu_build_in(Emu *e, EmuCache *cache, MPI_Comm job, const char *name, GridLayout l, const int *ranks)
{
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name ? name : "emu");
    e->layout = l;
    e->job = job;
    e->all = e->tp = e->dp = e->pp = e->embd = MPI_COMM_NULL;
    int jsize = 0, me = 0;
    mpiCheck(MPI_Comm_size(job, &jsize));
    mpiCheck(MPI_Comm_rank(job, &me));
    if (l.tp < 1 || l.pp < 1 || l.dp < 1 || grid_size(l) > jsize)
        nr_fatal("emu_build(%s): layout tp%d pp%d dp%d does not fit a job of %d ranks", e->name, l.tp, l.pp, l.dp,
                 jsize);
    e->n = grid_size(l);
    e->ranks = nr_xmalloc((size_t)e->n * sizeof *e->ranks);
    for (int i = 0; i < e->n; i++) {
        if (ranks[i] < 0 || ranks[i] >= jsize || grid_find(ranks, i, ranks[i]) >= 0)
            nr_fatal("emu_build(%s): rank %d at position %d is out of range or repeated", e->name, ranks[i], i);
        e->ranks[i] = ranks[i];
    }
    e->pos = grid_find(e->ranks, e->n, me);
    if (e->pos >= 0) e->coord = grid_coord(l, e->pos);
    else e->coord.t = e->coord.d = e->coord.p = -1;

    CommSet *set = set_find(cache, job, l, e->ranks, e->n);
    if (set && set->prepared) set_commit(e, cache, set);
    else if (set) set_take(e, set);
    else set_build(e, cache, job);
}

void emu_build(Emu *e, MPI_Comm job, const char *name, GridLayout l, const int *ranks)
{
    emu_build_in(e, NULL, job, name, l, ranks);
}

/* the sets in use (kept = 0) or kept for reuse (kept = 1); prepared ones are neither */
static int sets_count(const EmuCache *cache, int kept) {
    int n = 0;
    for (CommSet *s = cache->sets; s; s = s->next) n += !s->prepared && (s->refs == 0) == kept;
    return n;
}

int emu_cache_sets(const EmuCache *cache) { return sets_count(cache, 0); }

int emu_cache_sets_kept(const EmuCache *cache) { return sets_count(cache, 1); }

long emu_cache_sets_built(const EmuCache *cache) { return cache->built; }

int emu_cache_sets_prepared(const EmuCache *cache) {
    int n = 0;
    for (CommSet *s = cache->sets; s; s = s->next) n += s->prepared;
    return n;
}

long emu_cache_prepared_taken(const EmuCache *cache) { return cache->taken_prepared; }

int emu_cache_has(const EmuCache *cache, MPI_Comm job, GridLayout l, const int *ranks)
{
    return set_find(cache, job, l, ranks, grid_size(l)) != NULL;
}

/* collective over the set's communicators: frees them and unlinks the set from its cache */
static void set_destroy(CommSet *set) {
    for (int i = 0; i < EMU_NKINDS; i++)
        if (set->c[i] != MPI_COMM_NULL) mpiCheck(MPI_Comm_free(&set->c[i]));
    if (set->cache) {
        CommSet **p = &set->cache->sets;
        while (*p != set) p = &(*p)->next;
        *p = set->next;
    }
    free(set->ranks);
    free(set);
}

/* frees kept sets, the longest unused first, until at most `keep` remain; every rank holds the same sets
   released in the same order, so every rank frees the same */
static void sets_trim(EmuCache *cache, int keep) {
    for (;;) {
        int n = 0;
        CommSet *old = NULL;
        for (CommSet *s = cache->sets; s; s = s->next)
            if (s->refs == 0 && !s->prepared) {
                n++;
                if (!old || s->idle < old->idle) old = s;
            }
        if (n <= keep) return;
        set_destroy(old);
    }
}

void emu_cache_set_keep(EmuCache *cache, int n) {
    cache->keep = n > 0 ? n : 0;
    sets_trim(cache, cache->keep);
}

int emu_cache_prepare(EmuCache *cache, MPI_Comm job, GridLayout l, const int *ranks) {
    int n = grid_size(l), me = 0;
    if (set_find(cache, job, l, ranks, n)) return 0;
    mpiCheck(MPI_Comm_rank(job, &me));
    double t0 = nr_now();
    CommSet *set = set_new(cache, job, l, ranks, n, grid_find(ranks, n, me));
    set->prepared = 1;
    if (comm_setup_inject_s() > 0) { /* started now, after the sets prepared before it (one at a time) */
        set->ready_at = (cache->ready_chain > t0 ? cache->ready_chain : t0) + comm_setup_inject_s();
        cache->ready_chain = set->ready_at;
    }
    return 1;
}

int emu_cache_prepare_stage(EmuCache *cache, MPI_Comm job, const PlanConfig *plan, int stage) {
    const PlanStage *s = &plan->stage[stage];
    if (s->src == PLAN_SRC_ABSENT) return 0;
    GridLayout l = {s->tp, s->pp, s->dp};
    if (s->nranks != grid_size(l))
        nr_fatal("emu_cache_prepare_stage(%s): the plan is not resolved (%d ranks for tp%d pp%d dp%d)",
                 plan_stage_name(stage), s->nranks, s->tp, s->pp, s->dp);
    int ranks[PLAN_MAX_RANKS];
    for (int i = 0; i < s->nranks; i++) ranks[i] = s->ranks[i];
    return emu_cache_prepare(cache, job, l, ranks);
}

int emu_cache_stage_prepared(const EmuCache *cache, MPI_Comm job, const PlanConfig *plan, int stage) {
    const PlanStage *s = &plan->stage[stage];
    GridLayout l = {s->tp, s->pp, s->dp};
    if (s->src == PLAN_SRC_ABSENT || s->nranks != grid_size(l)) return 0;
    int ranks[PLAN_MAX_RANKS];
    for (int i = 0; i < s->nranks; i++) ranks[i] = s->ranks[i];
    const CommSet *set = set_find(cache, job, l, ranks, s->nranks);
    return set && set->prepared;
}

int emu_cache_drop_prepared(EmuCache *cache) {
    int n = 0;
    for (CommSet *s = cache->sets, *next; s; s = next) {
        next = s->next;
        if (s->prepared) set_destroy(s), n++;
    }
    return n;
}

void emu_cache_free(EmuCache *cache) {
    emu_cache_drop_prepared(cache);
    sets_trim(cache, 0);
    if (cache->sets) nr_fatal("emu_cache_free: %d communicator set(s) still in use", emu_cache_sets(cache));
}

/* collective over job (see emu_build_in) */
void emu_build_stage(Emu *e, EmuCache *cache, MPI_Comm job, const PlanConfig *plan, int stage)
{
    const PlanStage *s = &plan->stage[stage];
    if (s->src == PLAN_SRC_ABSENT) { /* not in the job's stage set: an EMU of no ranks, no communicators */
        memset(e, 0, sizeof *e);
        snprintf(e->name, sizeof e->name, "%s", plan_stage_name(stage));
        e->job = job;
        e->all = e->tp = e->dp = e->pp = e->embd = MPI_COMM_NULL;
        e->pos = -1;
        e->coord = (GridCoord){-1, -1, -1};
        return;
    }
    int ranks[PLAN_MAX_RANKS];
    for (int i = 0; i < s->nranks; i++) ranks[i] = s->ranks[i];
    GridLayout l = {s->tp, s->pp, s->dp};
    if (s->nranks != grid_size(l))
        nr_fatal("emu_build_stage(%s): the plan is not resolved (%d ranks for tp%d pp%d dp%d)",
                 plan_stage_name(stage), s->nranks, s->tp, s->pp, s->dp);
    emu_build_in(e, cache, job, plan_stage_name(stage), l, ranks);
}

MPI_Comm emu_comm(const Emu *e, GridGroup g)
{
    switch (g) {
    case GRID_ALL: return e->all;
    case GRID_TP: return e->tp;
    case GRID_DP: return e->dp;
    case GRID_PP: return e->pp;
    case GRID_EMBD: return e->embd;
    default: return MPI_COMM_NULL;
    }
}

void emu_free(Emu *e)
{
    CommSet *set = e->set;
    if (set && --set->refs == 0) {
        set->idle = set->cache ? ++set->cache->clock : 0;
        if (set->cache) sets_trim(set->cache, set->cache->keep); /* kept for reuse, the oldest kept one beyond
                                                                    keep freed (all of them with keep 0) */
        else set_destroy(set); /* its EMU's own */
    }
    e->set = NULL;
    e->all = e->tp = e->dp = e->pp = e->embd = MPI_COMM_NULL;
    free(e->ranks);
    e->ranks = NULL;
    e->n = 0;
    e->pos = -1;
}

void emu_gpt_shard(const Emu *e, GPTShard *sh) {
    memset(sh, 0, sizeof *sh);
    sh->tp = e->layout.tp;
    sh->tp_rank = e->coord.t;
    sh->tp_comm = sh->tp > 1 ? e->tp : MPI_COMM_NULL;
    sh->pp = e->layout.pp;
    sh->pp_rank = e->coord.p;
    sh->pp_comm = sh->pp > 1 ? e->pp : MPI_COMM_NULL;
    sh->embd_comm = sh->pp > 1 ? e->embd : MPI_COMM_NULL;
    sh->microbatches = 0; /* default: pp microbatches */
}
