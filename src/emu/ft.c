/* ft.c — ranks that die: the recovery point, detection and the shrunk
 * world under ULFM (ft.h); without ULFM the same calls, which do nothing. */
#include "nereus/ft.h"

#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <unistd.h>

#include "nereus/comm.h"
#include "nereus/util.h"

static int on, recovered;
__attribute__((unused)) static MPI_Comm world = MPI_COMM_NULL;
static void (*revoke_fn)(void *);
static void *revoke_ctx;
static jmp_buf env;
static volatile int armed;
static FtFailure *cur;

static char **spawn_argv;     /* the command a replacement runs: this program's arguments (ft_set_command) */
static char spawn_prog[4096];
static int joiner;            /* this process was spawned to replace ranks (ft_init) */
__attribute__((unused)) static MPI_Comm joined = MPI_COMM_NULL; /* its world merged with the spawners' */

static volatile sig_atomic_t leave_signal;
__attribute__((unused)) static void on_leave_signal(int sig) { leave_signal = sig; }
int ft_leave_requested(void) { return leave_signal != 0; }

int ft_on(void) { return on; }
int ft_joined(void) { return joiner; }

int ft_joined_size(void) {
    int n = 0;
    if (joiner) MPI_Comm_size(joined, &n);
    return n;
}

void ft_set_command(int argc, char **argv) {
    ssize_t n = readlink("/proc/self/exe", spawn_prog, sizeof spawn_prog - 1); /* the program, by its path */
    if (n > 0) spawn_prog[n] = 0;
    else snprintf(spawn_prog, sizeof spawn_prog, "%s", argc > 0 ? argv[0] : "");
    spawn_argv = nr_xcalloc((size_t)(argc > 0 ? argc : 1), sizeof *spawn_argv);
    for (int i = 1; i < argc; i++) spawn_argv[i - 1] = argv[i];
}
int ft_built(void) { return NEREUS_ULFM; }

int ft_spawn_possible(char *why, size_t len) {
    const char *ns = getenv("PMIX_NAMESPACE"), *step = getenv("SLURM_STEP_ID");
    int prte = ns && strncmp(ns, "prte", 4) == 0; /* mpirun / prterun: Open MPI's own runtime, which spawns */
    if (step && !prte)
        return nr_fail(why, len, "this job was launched by srun (Slurm step %s, PMIx namespace %s), which cannot start "
                       "processes into a running job (MPI_Comm_spawn needs Open MPI's own runtime); launch with mpirun "
                       "--with-ft ulfm inside the allocation (jobs/local.sh --ft does)", step, ns ? ns : "none");
    return 0;
}
int ft_recovered(void) { return recovered; }

void ft_set_revoke(void (*fn)(void *ctx), void *ctx) {
    revoke_fn = fn;
    revoke_ctx = ctx;
}

__attribute__((unused)) static double epoch_now(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + 1e-6 * (double)tv.tv_usec;
}

/* fault tolerance asked of the launcher: mpirun --with-ft ulfm sets OMPI_MCA_mpi_ft_enable for the ranks */
static int ft_asked(void) {
    const char *e = getenv("OMPI_MCA_mpi_ft_enable");
    return e && (strcmp(e, "1") == 0 || strcasecmp(e, "true") == 0 || strcasecmp(e, "yes") == 0);
}

int ft_try(void (*fn)(void *ctx), void *ctx, FtFailure *f) {
    memset(f, 0, sizeof *f);
    if (!on) {
        fn(ctx);
        return 0;
    }
    cur = f;
    if (setjmp(env)) {
        armed = 0;
        return 1;
    }
    armed = 1;
    fn(ctx);
    armed = 0;
    return 0;
}

/* to the recovery point, with what was seen */
__attribute__((unused)) static void leave(int cls, const char *where) {
    cur->err_class = cls;
    snprintf(cur->where, sizeof cur->where, "%s", where);
    cur->t_detect = nr_now();
    cur->epoch_detect = epoch_now();
    armed = 0;
    longjmp(env, 1);
}

/* local: f's failed[] and launched[]: the ranks of old that are not in now (ascending), in old and in
   MPI_COMM_WORLD */
__attribute__((unused)) static void gone_ranks(MPI_Comm old, MPI_Comm now, FtFailure *f) {
    MPI_Group go, gn, gd, gw;
    MPI_Comm_group(old, &go);
    MPI_Comm_group(now, &gn);
    MPI_Comm_group(MPI_COMM_WORLD, &gw);
    MPI_Group_difference(go, gn, &gd);
    int nd = 0;
    MPI_Group_size(gd, &nd);
    f->nfailed = nd;
    int k = nd < 64 ? nd : 64, in[64], w[64];
    for (int i = 0; i < k; i++) in[i] = i;
    if (k > 0) {
        MPI_Group_translate_ranks(gd, k, in, go, f->failed);
        MPI_Group_translate_ranks(gd, k, in, gw, w);
    }
    for (int i = 0; i < k; i++) f->launched[i] = w[i];
    for (int a = 1; a < k; a++) /* ascending, the pairs together */
        for (int b = a; b > 0 && f->failed[b] < f->failed[b - 1]; b--) {
            int t = f->failed[b]; f->failed[b] = f->failed[b - 1]; f->failed[b - 1] = t;
            t = f->launched[b]; f->launched[b] = f->launched[b - 1]; f->launched[b - 1] = t;
        }
    MPI_Group_free(&gd);
    MPI_Group_free(&gn);
    MPI_Group_free(&go);
    MPI_Group_free(&gw);
}

#if NEREUS_ULFM

/* local: the world has a rank known to have failed, or was revoked */
static int world_broken(void) {
    if (world == MPI_COMM_NULL) return 0;
    int flag = 0, n = 0;
    if (MPIX_Comm_is_revoked(world, &flag) == MPI_SUCCESS && flag) return 1;
    MPI_Group g;
    if (MPIX_Comm_get_failed(world, &g) != MPI_SUCCESS) return 0;
    MPI_Group_size(g, &n);
    MPI_Group_free(&g);
    return n > 0;
}

/* world_broken within up to 2 s: an error of another class (MPI_ERR_IN_STATUS from a Testsome whose request a
 * revoked communicator ended) can reach this rank before the failure does; the survivor that revoked that
 * communicator revokes the world next (ft_shrink), so the world says so within milliseconds */
static int world_broken_soon(void) {
    for (int i = 0; i < 200; i++) {
        if (world_broken()) return 1;
        int flag = 0; /* a probe drives MPI's progress, which delivers the revocation (its error is ignored) */
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, world, &flag, MPI_STATUS_IGNORE);
        usleep(10000);
    }
    return 0;
}

/* mpiCheck's hook: a failed rank leaves for the recovery point; any other error returns (the job aborts) */
static void fail_hook(int err, const char *call, const char *file, int line) {
    int cls = 0;
    MPI_Error_class(err, &cls);
    int failure = cls == MPIX_ERR_PROC_FAILED || cls == MPIX_ERR_PROC_FAILED_PENDING || cls == MPIX_ERR_REVOKED;
    /* a Testsome/Waitall answers MPI_ERR_IN_STATUS: the world says whether a rank failed */
    if (!failure && !(on && world_broken_soon())) return;
    char s[MPI_MAX_ERROR_STRING], where[160];
    int n = 0;
    if (MPI_Error_string(err, s, &n) != MPI_SUCCESS) snprintf(s, sizeof s, "error %d", err);
    const char *base = strrchr(file, '/');
    snprintf(where, sizeof where, "%.40s in %.60s (%s:%d)", s, call, base ? base + 1 : file, line);
    if (armed) leave(cls, where);
    fprintf(stderr, "nereus: rank %d: a rank of the job failed (%s) outside the PPO steps, where the job does not "
            "recover: stopping; restart from the newest checkpoint (--restart latest)\n", nr_rank(), where);
    fflush(stderr);
}

void ft_check(void) {
    if (on && armed && world_broken()) leave(MPIX_ERR_PROC_FAILED, "a failed rank found after an error");
}

void ft_poll(void) {
    if (!on || !armed) return;
    int flag = 0;
    if (MPIX_Comm_is_revoked(world, &flag) == MPI_SUCCESS && flag) leave(MPIX_ERR_REVOKED, "the world was revoked");
}

void ft_revoke(MPI_Comm c) {
    if (on && c != MPI_COMM_NULL) MPIX_Comm_revoke(c); /* an already revoked one answers an error: nothing to do */
}

/* a spawned replacement: merged with its spawners at once (they wait in the merge); its own world for its set-up */
static int init_joiner(MPI_Comm parent) {
    MPI_Comm_set_errhandler(parent, MPI_ERRORS_RETURN);
    if (MPI_Intercomm_merge(parent, 1, &joined) != MPI_SUCCESS) {
        fprintf(stderr, "nereus: a spawned replacement could not merge with the job's world: exiting\n");
        return 2;
    }
    MPI_Comm_set_errhandler(joined, MPI_ERRORS_RETURN);
    joiner = 1;
    return 0;
}

int ft_init(void) {
    MPI_Comm parent = MPI_COMM_NULL;
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL && init_joiner(parent) != 0) return 2;
    if (!ft_asked() && !joiner) {
        int r = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &r);
        if (r == 0)
            fprintf(stderr, "nereus: note: this is the ULFM build, launched without fault tolerance (mpirun "
                    "--with-ft ulfm; jobs/local.sh --ft): a rank that dies ends the job\n");
        return 0;
    }
    mpiCheck(MPI_Comm_dup(MPI_COMM_WORLD, &world));
    mpiCheck(MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN));
    nr_set_world(world);
    nr_set_mpi_fail_hook(fail_hook);
    on = 1;
    struct sigaction sa; /* leaving with notice */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_leave_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR2, &sa, NULL);
    recovered = joiner; /* a joiner's job had a failure or a leave: it leaves as the survivors do (ft_finalize) */
    return 0;
}

void ft_join_world(void) {
    if (!joiner) return;
    world = joined;
    nr_set_world(joined);
}

int ft_spawn(int n, FtFailure *f, char *why, size_t len) {
    double t0 = nr_now();
    MPI_Info info;
    MPI_Info_create(&info);
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd)) MPI_Info_set(info, "wdir", cwd);
    MPI_Info_set(info, "PMIX_MAPBY", "slot:OVERSUBSCRIBE"); /* beside the job's ranks where the slots are taken */
    int *errs = nr_xcalloc((size_t)n, sizeof *errs);
    MPI_Comm inter = MPI_COMM_NULL, merged = MPI_COMM_NULL;
    int rc = MPI_Comm_spawn(spawn_prog, spawn_argv, n, info, 0, world, &inter, errs);
    MPI_Info_free(&info);
    for (int i = 0; rc == MPI_SUCCESS && i < n; i++) rc = errs[i];
    free(errs);
    if (rc != MPI_SUCCESS) {
        char s[MPI_MAX_ERROR_STRING];
        int k = 0;
        MPI_Error_string(rc, s, &k);
        return nr_fail(why, len, "MPI_Comm_spawn of %d process(es) of %s failed: %s", n, spawn_prog, s);
    }
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    if ((rc = MPI_Intercomm_merge(inter, 0, &merged)) != MPI_SUCCESS)
        return nr_fail(why, len, "MPI_Intercomm_merge with the %d spawned process(es) failed (error %d)", n, rc);
    MPI_Comm_set_errhandler(merged, MPI_ERRORS_RETURN);
    world = merged;
    nr_set_world(merged);
    MPI_Comm_size(merged, &f->new_size);
    MPI_Comm_rank(merged, &f->new_rank);
    f->joined = n;
    f->spawn_s = nr_now() - t0;
    recovered = 1; /* with processes that leave by _exit beside it, this one leaves the same way (ft_finalize) */
    return 0;
}

int ft_shrink(FtFailure *f, char *why, size_t len) {
    MPI_Comm old = world, sh = MPI_COMM_NULL;
    MPI_Comm_size(old, &f->old_size);
    MPI_Comm_rank(old, &f->old_rank);
    if (revoke_fn) revoke_fn(revoke_ctx); /* the job's communicators: a survivor waiting in one leaves it */
    MPIX_Comm_revoke(old);
    /* acknowledge the failures seen so far, then agree: every survivor is here (an error only says that
       more ranks failed meanwhile, which the shrink takes in) */
    int acked = 0, flag = 1;
    MPIX_Comm_ack_failed(old, f->old_size, &acked);
    MPIX_Comm_agree(old, &flag);
    int rc = MPIX_Comm_shrink(old, &sh);
    if (rc != MPI_SUCCESS || sh == MPI_COMM_NULL) {
        snprintf(why, len, "MPIX_Comm_shrink failed (error %d)", rc);
        return -1;
    }
    MPI_Comm_set_errhandler(sh, MPI_ERRORS_RETURN);
    MPI_Comm_size(sh, &f->new_size);
    MPI_Comm_rank(sh, &f->new_rank);
    /* the failed set: the old world's ranks not in the shrunk one (the same on every survivor: the shrink agreed) */
    gone_ranks(old, sh, f);
    world = sh;
    nr_set_world(sh);
    f->shrink_s = nr_now() - f->t_detect;
    recovered = 1;
    return 0;
}

#else /* no ULFM: a rank that dies ends the job (mpirun), and nothing here recovers */

void ft_check(void) {}
void ft_poll(void) {}
void ft_revoke(MPI_Comm c) { (void)c; }

int ft_init(void) {
    if (!ft_asked()) return 0;
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    if (r == 0)
        fprintf(stderr, "nereus: error: fault tolerance asked for (OMPI_MCA_mpi_ft_enable=%s: mpirun --with-ft "
                "ulfm), but this program is built without ULFM (its MPI has no MPIX_Comm_shrink): build bin/nereus-ft "
                "(make ft) and launch it with jobs/local.sh --ft\n", getenv("OMPI_MCA_mpi_ft_enable"));
    return 2;
}

int ft_shrink(FtFailure *f, char *why, size_t len) {
    (void)f;
    snprintf(why, len, "this build has no ULFM");
    return -1;
}

void ft_join_world(void) {}

int ft_spawn(int n, FtFailure *f, char *why, size_t len) {
    (void)n, (void)f;
    return nr_fail(why, len, "this build has no ULFM");
}

#endif

int ft_split_leavers(int leave, FtFailure *f, char *why, size_t len) {
    memset(f, 0, sizeof *f);
    if (!on) {
        snprintf(why, len, "not under fault tolerance");
        return -1;
    }
    MPI_Comm old = nr_world(), nw = MPI_COMM_NULL;
    MPI_Comm_size(old, &f->old_size);
    MPI_Comm_rank(old, &f->old_rank);
    f->t_detect = nr_now();
    int rc = MPI_Comm_split(old, leave ? MPI_UNDEFINED : 0, f->old_rank, &nw);
    if (rc != MPI_SUCCESS) {
        snprintf(why, len, "MPI_Comm_split of the ranks that stay failed (error %d)", rc);
        return -1;
    }
    if (leave) return 0;
    MPI_Comm_set_errhandler(nw, MPI_ERRORS_RETURN);
    gone_ranks(old, nw, f);
    MPI_Comm_size(nw, &f->new_size);
    MPI_Comm_rank(nw, &f->new_rank);
    world = nw;
    nr_set_world(nw);
    f->shrink_s = nr_now() - f->t_detect;
    recovered = 1; /* the ranks that left never finalize: neither do these */
    return 0;
}

void ft_leave_exit(void) {
    fflush(stdout);
    fflush(stderr);
    _exit(0);
}

/* Before a recovered process _exits: every rank of the world agrees (MPIX_Comm_agree, which completes despite
   failures), so none leaves while another still waits in the run's last collectives: ULFM reports a rank gone
   mid-collective as failed there, though it sent its part (a rank ahead by the whole verification block ended a
   peer's MPI_Allreduce with MPI_ERR_PROC_FAILED) */
static void last_agree(void) {
#if NEREUS_ULFM
    if (on && world != MPI_COMM_NULL) {
        int flag = 1;
        MPIX_Comm_agree(world, &flag);
    }
#endif
}

int ft_finalize(int rc) {
    /* NEREUS_EXIT_FILE (jobs/local.sh --ft): the exit status, by rank 0 of the world that finished. mpirun --with-ft
       ulfm answers 0 for a job whose ranks all died of signals; the file tells such a job from one that ran */
    const char *ef = getenv("NEREUS_EXIT_FILE");
    if (ef && *ef && nr_rank() == 0) {
        FILE *f = fopen(ef, "w");
        if (f) {
            fprintf(f, "%d\n", rc);
            fclose(f);
        }
    }
    if (recovered) {
        fflush(stdout);
        fflush(stderr);
        last_agree();
        _exit(rc);
    }
    MPI_Finalize();
    return rc;
}
