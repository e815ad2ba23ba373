/* ft.h — ranks that die while the job runs: detection, agreement and the
 * shrunk world under ULFM (Open MPI 5's fault-tolerant MPI, MPIX_*), and
 * the recovery point the step loop runs under (docs/ELASTIC.md).
 *
 * Two builds of the same code. bin/nereus-ft (make ft) is compiled against
 * an Open MPI whose mpi-ext.h has OMPI_HAVE_MPI_EXT_FTMPI: NEREUS_ULFM is 1
 * and, when launched with fault tolerance (mpirun --with-ft ulfm, which
 * sets OMPI_MCA_mpi_ft_enable: jobs/local.sh --ft), ft_on() is 1. Then:
 *
 *   - the job's world (nr_world()) is a duplicate of MPI_COMM_WORLD with
 *     MPI_ERRORS_RETURN, and every communicator split from it inherits that;
 *   - an MPI call that fails because a rank died (MPI_ERR_PROC_FAILED,
 *     _PENDING, MPI_ERR_REVOKED, or any error while the world has a failed
 *     rank) leaves for the innermost recovery point (ft_try) instead of
 *     aborting: mpiCheck's hook (util.h) and the waits of comm.c, which
 *     also leave when they find the world revoked (a survivor that waits on
 *     a communicator without the dead rank learns of the failure that way);
 *   - ft_shrink revokes the world and the communicators registered with
 *     ft_set_revoke (the job's), agrees on the failure (MPIX_Comm_agree),
 *     shrinks the world (MPIX_Comm_shrink keeps the survivors in their old
 *     order, so the lowest survivor is rank 0) and makes it nr_world();
 *   - SIGUSR2 asks a rank to leave with notice: at the next step boundary
 *     the leaving ranks split off and exit (ft_split_leavers), the others
 *     go on in a world of their own.
 *
 * bin/nereus (Debian's Open MPI 4.1, no ULFM): NEREUS_ULFM is 0, ft_on() is
 * 0, every function here is a no-op or says no, and a rank that dies ends
 * the job through mpirun (the fallback: the newest complete checkpoint,
 * --restart latest; jobs/slurm.sbatch resubmits). Launched with fault
 * tolerance asked for, it refuses (ft_init: exit 2).
 */
#ifndef NEREUS_FT_H
#define NEREUS_FT_H

#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif
#if defined(OMPI_HAVE_MPI_EXT_FTMPI) && OMPI_HAVE_MPI_EXT_FTMPI && defined(MPIX_ERR_PROC_FAILED)
#define NEREUS_ULFM 1
#else
#define NEREUS_ULFM 0
#endif

/* What a recovery point learned about the failure. */
typedef struct FtFailure {
    int err_class;      /* the MPI error class seen (MPI_ERR_PROC_FAILED, ...) */
    char where[160];    /* the call and its place, or "the world was revoked" */
    double t_detect;    /* nr_now() when this rank saw it */
    double epoch_detect;/* the wall clock then (seconds since 1970), for comparing with a kill's time */
    int nfailed;        /* ranks of the old world that died (ft_shrink) */
    int failed[64];     /* their old ranks, ascending (the first 64) */
    int launched[64];   /* the same ranks in MPI_COMM_WORLD (differ from failed[] once a world was shrunk) */
    int old_size, old_rank, new_size, new_rank;
    double shrink_s;    /* from detection to the shrunk world on this rank */
    int joined;         /* processes spawned to replace them, in the world after new_size counts them (ft_spawn) */
    double spawn_s;     /* their spawn and the merge of the worlds */
} FtFailure;

/* Collective over MPI_COMM_WORLD, right after MPI_Init: decides ft_on() and
 * sets up the world. Returns 0, or 2 (said on rank 0's stderr) when fault
 * tolerance is asked for (OMPI_MCA_mpi_ft_enable) of a build without ULFM. */
int ft_init(void);
/* 1 when this process recovers from failed ranks (ULFM build, launched with it) */
int ft_on(void);
/* 1 when this is the ULFM build (launched with fault tolerance or not) */
int ft_built(void);

/* Local: runs fn(ctx) under a recovery point. Returns 0 when fn returned,
 * 1 when a failed rank ended it (*f says what was seen; fn's stack is
 * gone: only what fn saved in ctx before the failure holds). Without
 * ft_on(): fn(ctx), 0. Not nested. */
int ft_try(void (*fn)(void *ctx), void *ctx, FtFailure *f);
/* Local, inside ft_try: leaves for the recovery point when the world has a
 * failed rank or is revoked (a caller that saw an error it cannot classify,
 * e.g. a parallel HDF5 call that failed); returns otherwise. */
void ft_check(void);
/* Local: comm.c's waits call it between polls; leaves for the recovery
 * point when the world is revoked. Cheap; nothing without ft_on(). */
void ft_poll(void);

/* Local: fn(ctx) revokes the job's communicators in ft_shrink (NULL: none). */
void ft_set_revoke(void (*fn)(void *ctx), void *ctx);
/* Local: revokes c (no-op for MPI_COMM_NULL and without ULFM). */
void ft_revoke(MPI_Comm c);

/* Collective over the survivors of nr_world(), after ft_try returned 1:
 * revoke, agree, shrink; the shrunk world becomes nr_world() (the old one
 * is kept, revoked, not freed). Fills f's ranks and sizes. Returns 0, or −1
 * (with why) when no shrunk world could be made. */
int ft_shrink(FtFailure *f, char *why, size_t len);
/* 1 once a failure was recovered in this process */
int ft_recovered(void);

/* Leaving with notice: under ft_on(), SIGUSR2 asks this rank to leave the job at the next step boundary (the
 * run writes a checkpoint there, the leaving ranks exit, the others go on: run.c). ft_leave_requested: 1 once
 * it came. Without ft_on() SIGUSR2 is not caught. */
int ft_leave_requested(void);
/* Collective over nr_world(): the ranks with leave = 0 make a world of their own (MPI_Comm_split, in their
 * order), which becomes nr_world() on them; f says who left, as ft_shrink says who died. A leaving rank gets
 * MPI_COMM_NULL and must exit (ft_leave_exit) without another MPI call. Returns 0, or −1 with why. */
int ft_split_leavers(int leave, FtFailure *f, char *why, size_t len);
/* A leaving rank: flushes stdout and stderr and _exit(0)s (MPI_Finalize would wait for the ranks that go on). */
void ft_leave_exit(void) __attribute__((noreturn));

/* Joining ([elastic] respawn). ft_set_command: main, before ft_init, the command a replacement runs (this
 * program, its arguments). ft_spawn: collective over nr_world() (the survivors, after ft_shrink or
 * ft_split_leavers): n new processes of that command (MPI_Comm_spawn, in this directory), their world merged
 * with this one after it (MPI_Intercomm_merge); the merged world becomes nr_world(), f's new_size, new_rank,
 * joined and spawn_s say so. Returns 0, or −1 with why (the world stays the survivors'). In a spawned process
 * ft_init merges with the spawners at once and ft_joined() is 1; nr_world() is the spawned processes' own world
 * (their set-up) until ft_join_world() makes the merged one nr_world(). */
void ft_set_command(int argc, char **argv);
int ft_spawn(int n, FtFailure *f, char *why, size_t len);
/* Local: 0 when this job's launcher can start processes into it (Open MPI's mpirun / prterun, whose spawns are
 * placed oversubscribing: a free slot is never needed), or −1 with why when it cannot (a direct launch by srun).
 * The deck checks it for [elastic] respawn and grow_to before the run starts. */
int ft_spawn_possible(char *why, size_t len);
int ft_joined(void);
int ft_joined_size(void); /* the merged world's size in a spawned process (0 elsewhere) */
void ft_join_world(void);

/* Leaves the process with status rc: after a recovered failure, through
 * _exit(rc) once stdout and stderr are flushed, since MPI_Finalize may hang
 * there (Open MPI issue 11404: 20-40% of runs); the caller closes its files
 * first. Otherwise MPI_Finalize and return rc. Rank 0 first writes rc into
 * the file NEREUS_EXIT_FILE names, where set (jobs/local.sh --ft: mpirun
 * --with-ft ulfm exits 0 when every rank died of a signal). */
int ft_finalize(int rc);

#endif
