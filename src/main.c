/* main.c — the batch job's entry point: command line, MPI, the deck, run. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "nereus/comm.h"
#include "nereus/deck.h"
#include "nereus/plan.h"
#include "nereus/run.h"
#include "nereus/util.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: nereus DECK                 run the job described by an input deck\n"
            "       nereus DECK --restart FILE  resume from a checkpoint (FILE, or 'latest' in [ckpt] dir)\n"
            "       nereus --simulate DECK      a simulation deck ([simulate]): MODELLED cluster, every policy\n"
            "       nereus --deck-reference     print every deck section and key (markdown)\n"
            "       nereus --help\n"
            "launch: mpirun -np N bin/nereus DECK   (or: srun --mpi=pmix -n N bin/nereus DECK)\n"
            "deck format and keys: inputs/REFERENCE.md\n");
}

int main(int argc, char **argv) {
    nr_heap_keep();
    mpiCheck(MPI_Init(&argc, &argv));
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *deck_path = NULL, *restart = NULL;
    int rc = 0, simulate = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            if (rank == 0) usage(stdout);
            MPI_Finalize();
            return 0;
        } else if (strcmp(argv[i], "--deck-reference") == 0) {
            if (rank == 0) deck_write_reference(stdout);
            MPI_Finalize();
            return 0;
        } else if (strcmp(argv[i], "--simulate") == 0) {
            simulate = 1;
        } else if (strcmp(argv[i], "--restart") == 0) {
            if (i + 1 >= argc || argv[i + 1][0] == 0) {
                if (rank == 0) fprintf(stderr, "nereus: --restart needs a checkpoint file (or 'latest')\n");
                MPI_Finalize();
                return 2;
            }
            restart = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1] != 0) {
            if (rank == 0) {
                fprintf(stderr, "nereus: unknown option '%s'\n", argv[i]);
                usage(stderr);
            }
            MPI_Finalize();
            return 2;
        } else if (deck_path) {
            if (rank == 0) fprintf(stderr, "nereus: more than one deck given ('%s' and '%s')\n", deck_path, argv[i]);
            MPI_Finalize();
            return 2;
        } else {
            deck_path = argv[i];
        }
    }
    if (!deck_path) {
        if (rank == 0) {
            fprintf(stderr, "nereus: no input deck given\n");
            usage(stderr);
        }
        MPI_Finalize();
        return 2;
    }
    Config cfg;
    Deck *deck = NULL;
    rc = deck_load(deck_path, MPI_COMM_WORLD, &cfg, &deck);
    if (rc == 0 && simulate != deck_is_simulation(deck)) {
        if (rank == 0)
            fprintf(stderr, simulate ? "nereus: %s: error: --simulate needs a simulation deck (a [simulate] section)\n"
                                     : "nereus: %s: error: a simulation deck ([simulate]): run bin/nereus --simulate %s\n",
                    deck_path, deck_path);
        rc = 2;
    } else if (rc == 0 && simulate) {
        rc = run_simulation(&cfg, deck, rank);
        deck_free(deck);
        MPI_Finalize();
        return rc;
    }
    if (rc == 0) {
        /* the plan against this job and model, before any compute: every
         * rank resolves the same bytes, so every rank fails the same way */
        int world = 1;
        mpiCheck(MPI_Comm_size(MPI_COMM_WORLD, &world));
        PlanLimits lim = {world, cfg.model.n_head, cfg.model.n_layer, cfg.ppo.batch, cfg.ppo.minibatch};
        PlanError perr;
        if (plan_resolve(&cfg.plan, &lim, &perr) != 0) rc = deck_error_at(deck, perr.key, "%s", perr.msg);
    }
    if (rc == 0 && restart) snprintf(cfg.run.restart, sizeof cfg.run.restart, "%s", restart); /* overrides the deck */
    if (rc == 0) rc = run_job(&cfg, deck, deck_path);
    deck_free(deck);
    comm_group_detach(MPI_COMM_WORLD); /* the world's device group (CUDA: NCCL), before MPI_Finalize frees it */
    MPI_Finalize();
    return rc;
}
