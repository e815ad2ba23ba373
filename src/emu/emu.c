/* emu.c — building and freeing an EMU's communicators (emu.h) from the pure
 * grid math (grid.h): for each group kind, every job rank calls
 * MPI_Comm_split with the color of its group (MPI_UNDEFINED when it is in
 * none) and its index in the group as the key, so the new communicator's
 * rank order is the grid order. With a device layer that has groups (the
 * CUDA backend with NCCL), comm_group_split then splits the job's NCCL
 * communicator the same way (ncclCommSplit, same color and key) and hangs
 * the result on the new MPI communicator; MPI_Comm_free in emu_free frees
 * it with its communicator. */
#include "nereus/emu.h"
#include "nereus/comm.h"
#include "nereus/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/util.h"

/* The communicator sets alive in this process (emu.h: EMUs of one layout share one), and the kept ones
   (refs 0, at most emu_keep of them: emu_set_keep). A handful per job: a linear list. */
enum { EMU_NKINDS = 5 };
typedef struct CommSet {
    MPI_Comm job;
    GridLayout l;
    int n, *ranks;        /* job ranks in grid order (owned) */
    MPI_Comm c[EMU_NKINDS]; /* all, tp, dp, pp, embd */
    int refs;             /* EMUs using it; 0: kept for reuse */
    unsigned long idle;   /* when it was last released (emu_clock): the oldest kept one goes first */
    struct CommSet *next;
} CommSet;
static CommSet *emu_sets;
static int emu_keep;             /* kept sets at most (emu_set_keep) */
static unsigned long emu_clock;  /* counts releases */
static long emu_splits;          /* sets built with MPI_Comm_split (emu_sets_built) */

static CommSet *set_find(MPI_Comm job, GridLayout l, const int *ranks, int n) {
    for (CommSet *s = emu_sets; s; s = s->next)
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

/* collective over job (unless a set with this layout and these ranks exists: then local, on every rank alike) */
void emu_build(Emu *e, MPI_Comm job, const char *name, GridLayout l, const int *ranks)
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

    CommSet *set = set_find(job, l, e->ranks, e->n);
    if (set) {
        set_take(e, set);
        return;
    }
    static const GridGroup kinds[EMU_NKINDS] = {GRID_ALL, GRID_TP, GRID_DP, GRID_PP, GRID_EMBD};
    for (size_t k = 0; k < EMU_NKINDS; k++) {
        GridGroup g = kinds[k];
        int color = e->pos >= 0 ? grid_group_color(l, g, e->pos) : -1;
        int key = e->pos >= 0 ? grid_group_index(l, g, e->pos) : 0;
        MPI_Comm c = MPI_COMM_NULL;
        mpiCheck(MPI_Comm_split(job, color >= 0 ? color : MPI_UNDEFINED, key, &c));
        comm_group_split(job, color, key, c); /* its NCCL group, when device buffers have groups */
        switch (g) {
        case GRID_ALL: e->all = c; break;
        case GRID_TP: e->tp = c; break;
        case GRID_DP: e->dp = c; break;
        case GRID_PP: e->pp = c; break;
        case GRID_EMBD: e->embd = c; break;
        default: break;
        }
    }
    emu_splits++;
    set = nr_xcalloc(1, sizeof *set);
    set->job = job;
    set->l = l;
    set->n = e->n;
    set->ranks = nr_xmalloc((size_t)e->n * sizeof *set->ranks);
    memcpy(set->ranks, e->ranks, (size_t)e->n * sizeof *set->ranks);
    set->c[0] = e->all, set->c[1] = e->tp, set->c[2] = e->dp, set->c[3] = e->pp, set->c[4] = e->embd;
    set->next = emu_sets;
    emu_sets = set;
    set_take(e, set);
}

/* the sets in use (kept = 0) or kept for reuse (kept = 1) */
static int sets_count(int kept) {
    int n = 0;
    for (CommSet *s = emu_sets; s; s = s->next) n += (s->refs == 0) == kept;
    return n;
}

int emu_comm_sets(void) { return sets_count(0); }

int emu_comm_sets_kept(void) { return sets_count(1); }

long emu_sets_built(void) { return emu_splits; }

int emu_has_comms(MPI_Comm job, GridLayout l, const int *ranks) { return set_find(job, l, ranks, grid_size(l)) != NULL; }

/* collective over the set's communicators: frees them and unlinks the set */
static void set_destroy(CommSet *set) {
    for (int i = 0; i < EMU_NKINDS; i++)
        if (set->c[i] != MPI_COMM_NULL) mpiCheck(MPI_Comm_free(&set->c[i]));
    CommSet **p = &emu_sets;
    while (*p != set) p = &(*p)->next;
    *p = set->next;
    free(set->ranks);
    free(set);
}

/* frees kept sets, the longest unused first, until at most `keep` remain (of `job` only, unless it is
   MPI_COMM_NULL); every rank holds the same sets released in the same order, so every rank frees the same */
static void sets_trim(MPI_Comm job, int keep) {
    for (;;) {
        int n = 0;
        CommSet *old = NULL;
        for (CommSet *s = emu_sets; s; s = s->next)
            if (s->refs == 0 && (job == MPI_COMM_NULL || s->job == job)) {
                n++;
                if (!old || s->idle < old->idle) old = s;
            }
        if (n <= keep) return;
        set_destroy(old);
    }
}

void emu_set_keep(int n) {
    emu_keep = n > 0 ? n : 0;
    sets_trim(MPI_COMM_NULL, emu_keep);
}

void emu_drop_kept(MPI_Comm job) { sets_trim(job, 0); }

/* collective over job (see emu_build) */
void emu_build_stage(Emu *e, MPI_Comm job, const PlanConfig *plan, int stage)
{
    const PlanStage *s = &plan->stage[stage];
    int ranks[PLAN_MAX_RANKS];
    for (int i = 0; i < s->nranks; i++) ranks[i] = s->ranks[i];
    GridLayout l = {s->tp, s->pp, s->dp};
    if (s->nranks != grid_size(l))
        nr_fatal("emu_build_stage(%s): the plan is not resolved (%d ranks for tp%d pp%d dp%d)",
                 plan_stage_name(stage), s->nranks, s->tp, s->pp, s->dp);
    emu_build(e, job, plan_stage_name(stage), l, ranks);
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
    if (set && --set->refs == 0) { /* the last EMU of this set: kept for reuse, the oldest kept one beyond
                                      emu_keep freed (all of them with emu_keep 0) */
        set->idle = ++emu_clock;
        sets_trim(MPI_COMM_NULL, emu_keep);
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
