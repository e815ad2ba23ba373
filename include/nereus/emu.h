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
    long taken_prepared;     /* prepared sets an EMU has taken (emu_cache_prepared_taken) */
    double ready_chain;      /* when the INJECTED set-up of the last prepared set ends (nr_now) */
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

/* Communicators built ahead (a transition's "prepare"): the sets the EMUs
 * of a coming plan will need are built before the move, at a point every
 * rank of job reaches (the step boundary before the step that runs while
 * they get ready), so that the move itself builds none and waits only for
 * its data. emu_cache_prepare: collective over job (one MPI_Comm_split,
 * and device group split, per group kind, as emu_build_in), nothing when
 * the cache holds a set of that layout and ranks already (in use, kept or
 * prepared); returns 1 when it built one. A prepared set is held for the
 * EMU that will take it: emu_build_in of its layout and ranks takes it and
 * builds nothing; it is neither kept (emu_cache_sets_kept) nor in use, and
 * never trimmed. The INJECTED set-up ([inject] comm_setup_s) of a prepared
 * set is not waited for when it is built: it stands for a non-blocking
 * initialisation (NCCL's, config.blocking = 0) that runs while the rank
 * goes on, one set after another from the prepare on, and the EMU that
 * takes the set waits for what is left of it (a sleep on the set's ranks,
 * then a barrier over job, as for a set built in place). With NCCL the
 * device group split itself is blocking here (nothing in this build makes
 * it non-blocking), so on a GPU the set-up moves to the prepare point but
 * does not overlap the step. emu_cache_prepare_stage: the set of one stage
 * of a resolved plan (nothing for a stage absent from the job).
 * emu_cache_stage_prepared (local): whether the cache holds a prepared set for
 * that stage of the plan (an EMU of it would take it).
 * emu_cache_drop_prepared: collective over job: frees the prepared sets no
 * EMU took (the move they were built for did not come); returns how many.
 * emu_cache_sets_prepared: how many are held (local). emu_cache_prepared_taken:
 * how many an EMU has taken so far (local). emu_cache_free drops them too. */
int emu_cache_prepare(EmuCache *cache, MPI_Comm job, GridLayout l, const int *ranks);
int emu_cache_prepare_stage(EmuCache *cache, MPI_Comm job, const PlanConfig *plan, int stage);
int emu_cache_stage_prepared(const EmuCache *cache, MPI_Comm job, const PlanConfig *plan, int stage);
int emu_cache_drop_prepared(EmuCache *cache);
int emu_cache_sets_prepared(const EmuCache *cache);
long emu_cache_prepared_taken(const EmuCache *cache);

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
