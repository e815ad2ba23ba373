/* run.h — the job: set-up from a validated Config, SFT warm-start, the PPO
 * step loop, progress lines and the verification block (rank 0). */
#ifndef NEREUS_RUN_H
#define NEREUS_RUN_H

#include "nereus/config.h"
#include "nereus/deck.h"

/* collective over MPI_COMM_WORLD. Returns the process exit status: 0 (run
 * verified), 1 (run failed verification, e.g. a non-finite loss), 2 (bad input). */
int run_job(const Config *cfg, const Deck *deck, const char *deck_path);

/* bin/nereus --simulate: the deck's [simulate] scenario under every policy
 * (src/run/simulate.c); rank 0 prints. Returns 0, 1 (a policy had no plan
 * that fits) or 2 (a bad [simulate] value, reported at its line). */
int run_simulation(const Config *cfg, const Deck *deck, int rank);

#endif
