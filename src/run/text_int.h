/* text_int.h — the run's part of text decks (src/run/text_run.c). */
#ifndef NEREUS_RUN_TEXT_INT_H
#define NEREUS_RUN_TEXT_INT_H

#include <stdio.h>

#include "nereus/config.h"
#include "nereus/dataset.h"
#include "nereus/deck.h"
#include "nereus/ppo.h"
#include "nereus/task.h"

/* collective over nr_world(): opens cfg's [data] into pd and, for a [data] deck, the training and the
 * evaluation text tasks (their prompt sets, the tokenizer, the [reward] rule, the ends of a response).
 * Returns 0 (pd->on = 0 for a deck without [data]: the digit tasks), or 2 with the error reported at the deck
 * line it concerns. */
int run_text_open(PromptData *pd, TextTask *train, TextTask *eval, const Config *cfg, const Deck *deck);

/* the first row of the step's rollout G for its progress line, in ex (n bytes, at least 8): the digit tasks'
   whole sequence, or a text task's response decoded as one JSON-escaped line; cut with "..." */
void run_sample_line(const Rollout *G, char *ex, size_t n);

/* collective over nr_world(), before anything is written: [eval] responses refused (2, reported at the key)
 * where the run has no text data, or where the file exists and the run does not restart (a restart appends).
 * Returns 0 or 2. */
int run_eval_responses_check(const Config *cfg, const Deck *deck, int text, int restarted);
/* collective over nr_world(): the file opened on rank 0 (*out; NULL elsewhere and without the key), appended to
 * by a restart; refused (2, reported at the key) where it cannot be opened for writing. Returns 0 or 2. */
int run_eval_responses_open(const Config *cfg, const Deck *deck, int restarted, FILE **out);

/* rank 0: an evaluation's rows (job_eval_greedy) after `step` PPO steps, a JSON line each, into f, flushed */
void run_eval_responses_write(FILE *f, const TaskSet *held_out, const EvalRows *rows, int64_t step);

#endif
