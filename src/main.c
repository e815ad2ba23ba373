/* main.c — the batch job's entry point: command line, MPI, the deck, run. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/comm.h"
#include "nereus/cpu_kernels.h"
#include "nereus/deck.h"
#include "nereus/ft.h"
#include "nereus/plan.h"
#include "nereus/run.h"
#include "nereus/txprice.h"
#include "nereus/util.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: nereus DECK                 run the job described by an input deck\n"
            "       nereus DECK --restart FILE  resume from a checkpoint (FILE, or 'latest' in [ckpt] dir)\n"
            "       nereus DECK --set SECTION.KEY=VALUE ...\n"
            "                                   override a deck key (repeatable; checked as a deck line;\n"
            "                                   e.g. --set ppo.steps=20 --set run.name=try2)\n"
            "       nereus DECK --plan FILE     the plan of a plan file (a [plan] section alone, inputs/plans/*.plan)\n"
            "       nereus DECK --print-deck    print the resolved deck (every key, its value and source), run nothing\n"
            "       nereus --simulate DECK      a simulation deck ([simulate]): MODELLED cluster, every policy\n"
            "       nereus --deck-reference     print every deck section and key (markdown)\n"
            "       nereus --help               this text (--help anywhere on the command line)\n"
            "launch: jobs/local.sh -np N bin/nereus DECK   (mpirun with what a workstation needs: root,\n"
            "        oversubscription, one BLAS thread per rank); Slurm: srun --mpi=pmix -n N bin/nereus DECK\n"
            "exit:   0 the run finished (verify.status: pass), 1 it failed (verify.stopped says why),\n"
            "        2 bad input (deck, plan, command line, restart file), before any step runs\n"
            "tools:  bin/nereus-ckpt (checkpoints), bin/nereus-trace (traces), tools/plot-trace (trace plots),\n"
            "        bin/nereus-tok (tokenizers), bin/nereus-task-tokens (SFT token files)\n"
            "deck format and keys: inputs/REFERENCE.md; the rest: README.md and docs/\n");
}

/* The command line: the deck, --simulate, and the deck overrides (--set, --restart) into ov (room for argc).
 * Returns -1 to go on, or the exit status (--help, --deck-reference: 0; a bad command line: 2). */
static int parse_args(int argc, char **argv, int rank, const char **deck_path, const char **plan_path,
                      int *simulate, int *print_deck, DeckOverride *ov, int *nov) {
    for (int i = 1; i < argc; i++) /* --help anywhere wins, even where an option's value would be */
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            if (rank == 0) usage(stdout);
            return 0;
        }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--deck-reference") == 0) {
            if (rank == 0) deck_write_reference(stdout);
            return 0;
        } else if (strcmp(argv[i], "--simulate") == 0) {
            *simulate = 1;
        } else if (strcmp(argv[i], "--print-deck") == 0) {
            *print_deck = 1;
        } else if (strcmp(argv[i], "--plan") == 0) {
            if (i + 1 >= argc || argv[i + 1][0] == 0 || *plan_path) {
                if (rank == 0)
                    fprintf(stderr, *plan_path ? "nereus: one --plan only ('%s' and '%s')\n"
                                               : "nereus: --plan needs a plan file (a [plan] section alone)\n",
                            *plan_path, i + 1 < argc ? argv[i + 1] : "");
                return 2;
            }
            *plan_path = argv[++i];
        } else if (strcmp(argv[i], "--restart") == 0 || strcmp(argv[i], "--set") == 0) {
            int set = argv[i][2] == 's';
            if (i + 1 >= argc || argv[i + 1][0] == 0) {
                if (rank == 0)
                    fprintf(stderr, set ? "nereus: --set needs section.key=value\n"
                                        : "nereus: --restart needs a checkpoint file (or 'latest')\n");
                return 2;
            }
            ov[(*nov)++] = (DeckOverride){argv[i], set ? NULL : "run.restart", argv[i + 1], NULL};
            i++;
        } else if (argv[i][0] == '-' && argv[i][1] != 0) {
            if (rank == 0) {
                fprintf(stderr, "nereus: unknown option '%s'\n", argv[i]);
                usage(stderr);
            }
            return 2;
        } else if (*deck_path) {
            if (rank == 0) fprintf(stderr, "nereus: more than one deck given ('%s' and '%s')\n", *deck_path, argv[i]);
            return 2;
        } else {
            *deck_path = argv[i];
        }
    }
    if (!*deck_path) {
        if (rank == 0) {
            fprintf(stderr, "nereus: no input deck given\n");
            usage(stderr);
        }
        return 2;
    }
    return -1;
}

/* collective over MPI_COMM_WORLD: the deck's plan against this job and model, before any compute: every rank
 * resolves the same bytes, so every rank fails the same way. Returns 0 or 2 (reported at the key). */
static int resolve_plan(Config *cfg, const Deck *deck) {
    int world = 1;
    mpiCheck(MPI_Comm_size(MPI_COMM_WORLD, &world));
    if (ft_joined()) world = ft_joined_size(); /* a replacement: the job it joins */
    PlanLimits lim = job_plan_limits(cfg, world);
    PlanError perr;
    if (plan_resolve(&cfg->plan, &lim, &perr) != 0) return deck_error_at(deck, perr.key, "%s", perr.msg);
    return 0;
}

int main(int argc, char **argv) {
    nr_heap_keep();
    nr_mpi_singleton_isolated();
    mpiCheck(MPI_Init(&argc, &argv));
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    ft_set_command(argc, argv); /* what a replacement runs ([elastic] respawn) */
    if (ft_init() != 0) { /* fault tolerance asked of a build without ULFM (said on stderr) */
        return ft_finalize(2);
    }
    const char *deck_path = NULL, *plan_path = NULL;
    int simulate = 0, print_deck = 0, nov = 0;
    DeckOverride *ov = nr_xcalloc((size_t)argc, sizeof *ov);
    int rc = parse_args(argc, argv, rank, &deck_path, &plan_path, &simulate, &print_deck, ov, &nov);
    DeckPlanFile pf = {0};
    if (rc < 0 && plan_path) { /* the plan file's keys go first: a --set of the same key is then "set twice" */
        rc = deck_plan_file_load(plan_path, MPI_COMM_WORLD, &pf) ? 2 : -1;
        DeckOverride *all = nr_xcalloc((size_t)(argc + pf.n), sizeof *all);
        int n = 0;
        deck_plan_file_overrides(&pf, all, &n);
        for (int i = 0; i < nov; i++) all[n++] = ov[i];
        free(ov);
        ov = all, nov = n;
    }
    if (rc >= 0) {
        deck_plan_file_free(&pf);
        free(ov);
        return ft_finalize(rc);
    }
    char why[200];
    if (cpu_kernels_from_env(why, sizeof why) != 0) { /* every rank reads the same environment */
        if (rank == 0) fprintf(stderr, "nereus: error: %s\n", why);
        deck_plan_file_free(&pf);
        free(ov);
        return ft_finalize(2);
    }
    Config cfg;
    Deck *deck = NULL;
    rc = deck_load_with(deck_path, ov, nov, MPI_COMM_WORLD, &cfg, &deck);
    if (rc == 0 && print_deck) { /* the deck as a run would take it, overrides marked; nothing runs */
        if (rank == 0) deck_print_resolved(deck, &cfg, stdout);
        deck_free(deck);
        deck_plan_file_free(&pf);
        free(ov);
        return ft_finalize(0);
    }
    if (rc == 0 && simulate != deck_is_simulation(deck)) {
        if (rank == 0)
            fprintf(stderr, simulate ? "nereus: %s: error: --simulate needs a simulation deck (a [simulate] section)\n"
                                     : "nereus: %s: error: a simulation deck ([simulate]): run bin/nereus --simulate %s\n",
                    deck_path, deck_path);
        rc = 2;
    } else if (rc == 0 && simulate) {
        rc = run_simulation(&cfg, deck, rank);
        deck_free(deck);
        deck_plan_file_free(&pf);
        free(ov);
        return ft_finalize(rc);
    }
    if (rc == 0) rc = resolve_plan(&cfg, deck);
    if (rc == 0) rc = run_job(&cfg, deck, deck_path);
    deck_free(deck);
    deck_plan_file_free(&pf);
    free(ov);
    comm_group_detach(MPI_COMM_WORLD); /* the world's device group (CUDA: NCCL), before MPI_Finalize frees it */
    return ft_finalize(rc); /* MPI_Finalize; after a recovered failure _exit (ft.h) */
}
