/* emu.h — an Elastic Model Unit: one model-stage's layout, its ranks, this
 * rank's place in its grid, and the communicators it owns.
 *
 * The grid follows grid.h (TP fastest, then DP, then PP). Communicators
 * come from MPI_Comm_split of the job communicator, one split per group
 * kind, with the grid's group color and index as color and key, so each
 * communicator's rank order is the grid order. A rank outside the EMU gets
 * MPI_COMM_NULL for all of them, and so does a rank on a middle pipeline
 * stage (or any rank when pp == 1) for embd. There are no global
 * communicators.
 *
 * EMUs of the same layout on the same ranks, in grid order, of the same job
 * communicator share one set of communicators when they are built through
 * the same EmuCache (counted references; the last emu_free releases the
 * set). The cache is the caller's: a job owns one (Job.comms) and passes it
 * to every EMU it builds. Colocated plans give several model-stages the
 * same layout (actor.inf and ref.inf, actor.gen and actor.train), and a
 * transition that moves a model-stage onto a layout another one already
 * has then builds nothing: communicator set-up (NCCL's, at scale, costs
 * hundreds of ms a group) is paid once per distinct layout; a set no EMU
 * uses any more can be kept for a later EMU of its layout
 * (emu_cache_set_keep). Sharing is safe because a rank runs its
 * model-stages one after the other and every stage completes its messages
 * before the next begins; every rank builds and frees EMUs in the same
 * order, so every rank finds the same sets. An EMU built without a cache
 * (emu_build) has communicators of its own.
 *
 * With the CUDA backend and NCCL, every one of these communicators also
 * carries an NCCL communicator with the same ranks in the same order (split
 * from an NCCL communicator over the job communicator, built on the first
 * EMU and kept on the job communicator as an attribute; see comm.h), which
 * the comm_* calls use for device buffers. emu_free frees them with the
 * MPI communicators.
 */
#ifndef NEREUS_EMU_H
#define NEREUS_EMU_H

#include <mpi.h>

#include "nereus/grid.h"
#include "nereus/plan.h"

typedef struct Emu {
    char name[32];      /* the model-stage ("actor.train") or a test label */
    GridLayout layout;  /* tp, pp, dp */
    int n;              /* tp*pp*dp */
    int *ranks;         /* [n] job ranks in grid-position order (owned) */
    int pos;            /* this rank's grid position; -1: not a member */
    GridCoord coord;    /* this rank's (t, d, p); all -1 when not a member */
    MPI_Comm job;       /* the job communicator it was split from (not owned) */
    MPI_Comm all;       /* every member, by position */
    MPI_Comm tp;        /* same (d, p), by t */
    MPI_Comm dp;        /* same (t, p), by d */
    MPI_Comm pp;        /* same (t, d), by p */
    MPI_Comm embd;      /* first and last pp stage at the same (t, d), when pp > 1 */
    void *set;          /* the set these communicators belong to (emu.c) */
} Emu;

/* The communicator sets of the EMUs built through it (emu_build_in): those in use, and up to `keep` that
 * no EMU uses any more, kept for a later EMU of their layout. Owned by the caller (a job: Job.comms);
 * emu_cache_init before the first EMU, emu_cache_free after the last emu_free. */
typedef struct EmuCache {
    struct EmuCommSet *sets; /* linked list (emu.c) */
    int keep;                /* kept sets at most (emu_cache_set_keep) */
    unsigned long clock;     /* counts releases: the set released longest ago goes first */
    long built;              /* sets built with MPI_Comm_split (emu_cache_sets_built) */
} EmuCache;

/* Local: an empty cache that keeps up to `keep` released sets ([transition] keep_comms; 0: none). */
void emu_cache_init(EmuCache *cache, int keep);

/* collective over the job communicator of the cache's sets: frees the kept sets. Every EMU built through
 * the cache must have been freed (a set still in use is a programming error and aborts). */
void emu_cache_free(EmuCache *cache);

/* collective over job: every rank of job must call emu_build_in for every
 * EMU, in the same order, with the same arguments (one MPI_Comm_split per
 * group kind, and with device groups one ncclCommSplit per kind; none when
 * cache holds a set of the same layout and ranks, in use or kept: e then
 * shares it). cache NULL: e gets communicators of its own. ranks[0 ..
 * tp*pp*dp) are ranks of job in grid-position order, all distinct and in
 * range (plan_validate_stage checks a plan's; an invalid list here is a
 * programming error and aborts). */
void emu_build_in(Emu *e, EmuCache *cache, MPI_Comm job, const char *name, GridLayout layout, const int *ranks);

/* collective over job: emu_build_in without a cache (communicators of e's own). */
void emu_build(Emu *e, MPI_Comm job, const char *name, GridLayout layout, const int *ranks);

/* collective over job: the EMU of one stage of a resolved plan, through cache (may be NULL). */
void emu_build_stage(Emu *e, EmuCache *cache, MPI_Comm job, const PlanConfig *plan, int stage);

/* The communicator of one group kind (MPI_COMM_NULL where not a member). */
MPI_Comm emu_comm(const Emu *e, GridGroup g);

/* Local: the GPTShard (model.h) of this rank's place in e: tp, pp and
 * their communicators, the embedding pair, default microbatches. e must
 * hold this rank (pos >= 0). */
struct GPTShard;
void emu_gpt_shard(const Emu *e, struct GPTShard *sh);

/* collective over e->all when e holds the last reference to its set
 * (MPI_Comm_free is collective over each communicator; call it on every job
 * rank, members or not, in the same order as the builds): drops e's
 * reference to its communicators; when it was the last, its cache keeps the
 * set (emu_cache_set_keep) and frees the kept set released longest ago
 * beyond the limit (without a cache the set goes at once), communicators
 * with their NCCL communicators (ncclCommDestroy); frees the rank list and
 * leaves every communicator MPI_COMM_NULL. Safe to call twice. */
void emu_free(Emu *e);

/* Local: the cache's communicator sets in use (EMUs of one layout count
 * once), and those kept for reuse. */
int emu_cache_sets(const EmuCache *cache);
int emu_cache_sets_kept(const EmuCache *cache);

/* Local: how many sets the cache has built with MPI_Comm_split so far (a
 * set reused, alive or kept, builds none). */
long emu_cache_sets_built(const EmuCache *cache);

/* Local: whether the cache holds a set of this layout on these ranks (grid
 * order) of job, in use or kept: an EMU of it would build no communicators. */
int emu_cache_has(const EmuCache *cache, MPI_Comm job, GridLayout l, const int *ranks);

/* Keeping communicators for reuse ([transition] keep_comms). A set that its
 * last EMU releases is kept instead of freed, up to n kept sets (the one
 * released longest ago goes first beyond that); an EMU of the same layout on
 * the same ranks built later through the cache takes it back and builds
 * nothing. Why: a transition back onto an earlier layout is common (ranks
 * that leave and come back, a move the planner's guard reverts), and NCCL
 * builds a group in hundreds of ms at scale. The price: a kept set holds its
 * communicators (with NCCL, their buffers on the GPU). n = 0 frees a set when
 * its last EMU goes. Collective over the sets' job communicator when it frees
 * sets (call it on every rank alike). */
void emu_cache_set_keep(EmuCache *cache, int n);

#endif
