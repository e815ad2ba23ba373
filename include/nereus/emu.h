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
 * communicator share one set of communicators (counted references; the
 * last emu_free frees them). Colocated plans give several model-stages the
 * same layout (actor.inf and ref.inf, actor.gen and actor.train), and a
 * transition that moves a model-stage onto a layout another one already
 * has then builds nothing: communicator set-up (NCCL's, at scale, costs
 * hundreds of ms a group) is paid once per distinct layout. Sharing is
 * safe because a rank runs its model-stages one after the other and every
 * stage completes its messages before the next begins; every rank builds
 * and frees EMUs in the same order, so every rank finds the same sets.
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
    void *set;          /* the shared set these communicators belong to (emu.c) */
} Emu;

/* collective over job: every rank of job must call emu_build for every EMU,
 * in the same order, with the same arguments (one MPI_Comm_split per group
 * kind, and with device groups one ncclCommSplit per kind; none when an
 * EMU of the same layout and ranks is alive: it shares that one's set).
 * ranks[0..tp*pp*dp) are ranks of job in grid-position order, all
 * distinct and in range (plan_validate_stage checks a plan's; an invalid
 * list here is a programming error and aborts). */
void emu_build(Emu *e, MPI_Comm job, const char *name, GridLayout layout, const int *ranks);

/* collective over job: the EMU of one stage of a resolved plan. */
void emu_build_stage(Emu *e, MPI_Comm job, const PlanConfig *plan, int stage);

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
 * reference to its communicators, frees them with their NCCL communicators
 * (ncclCommDestroy) when it was the last, frees the rank list and leaves
 * every communicator MPI_COMM_NULL. Safe to call twice. */
void emu_free(Emu *e);

/* Local: the communicator sets alive in this process (for tests: EMUs of one
 * layout count once). */
int emu_comm_sets(void);

#endif
