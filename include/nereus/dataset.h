/* dataset.h — prompt datasets: a JSONL file of prompts and answers, each
 * prompt formatted with the model's chat template and tokenized once, and
 * the order in which a run draws them.
 *
 * A file holds one JSON object a line: the prompt under prompt_key
 * (default "question"), the answer under answer_key (default "answer"), and
 * optionally a "metadata" object that task-specific scorers read. Blank
 * lines are skipped. Prompts whose ids do not fit in max_prompt (the
 * model's room left after max_response) are dropped and counted.
 *
 * Loading is a pure function of the file's bytes and the tokenizer, so every
 * rank that parses the same bytes gets the same PromptSet, or the same error:
 * dataset_load_collective has rank 0 read the file and broadcast its bytes.
 *
 * The order is stateless: dataset_prompt_of(ps, seed, g) gives the prompt of
 * global sample index g — epochs over the kept prompts, each epoch a
 * permutation keyed by (seed, epoch) through the counter-based RNG. Sample g
 * of any run with the same seed and file gets the same prompt, whatever the
 * rank count, plan or batch split, so a restart at step s resumes the same
 * sequence of prompts from g = s x batch without saving any state; a
 * checkpoint stores dataset_hash of the file to refuse a restart on another.
 *
 * Every function that can fail returns 0, or -1 with a message in why (len
 * bytes) naming the file and, for a bad line, the line; none prints or
 * exits. A bad file is the user's error (exit 2 upstream). */
#ifndef NEREUS_DATASET_H
#define NEREUS_DATASET_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "nereus/config.h"
#include "nereus/deck.h"
#include "nereus/text.h"

/* Largest prompt file read: broadcast in one MPI_Bcast (an int count). */
#define DATASET_MAX_BYTES ((size_t)1 << 30)

/* How each line becomes a prompt. tk and chat are the caller's and must be
 * the same on every rank that loads the same bytes. */
typedef struct DatasetOptions {
    const char *prompt_key; /* NULL: "question" */
    const char *answer_key; /* NULL: "answer" */
    const Tokenizer *tk;
    const Chat *chat;       /* CHAT_NONE (or NULL): the prompt text alone, bos first where tok_add_bos */
    const char *system;     /* system prompt, or NULL/"": the template's default (chat_format's) */
    int max_prompt;         /* most ids a kept prompt may have (>= 1) */
} DatasetOptions;

/* The kept prompts in file order. */
typedef struct PromptSet {
    int n;                /* prompts kept */
    int n_read;           /* prompt lines read (kept + dropped) */
    int n_dropped;        /* prompts with more than max_prompt ids, dropped */
    int n_number_answers; /* answers that were JSON numbers, kept as cJSON prints them */
    int max_prompt;       /* the limit they were held to */
    int longest;          /* ids of the longest kept prompt */
    size_t *off;          /* (n + 1) prompt i's ids are ids[off[i] .. off[i+1]) */
    int *ids;             /* (off[n]) every kept prompt's ids, formatted and tokenized */
    int *line;            /* (n) each kept prompt's line in the file (1-based) */
    char **answer;        /* (n) each answer's text */
    char **metadata;      /* (n) each line's "metadata" object as compact JSON text, or NULL */
    uint64_t hash;        /* dataset_hash of the file's bytes */
} PromptSet;

/* Parses bytes[0..n) (a whole JSONL file; name is its path, for messages) into ps. Refused, naming the
 * file and line: malformed JSON or trailing junk, a line that is not an object, a missing key, a prompt
 * that is not a non-empty string, an answer that is not a string or a number, a "metadata" that is not an
 * object, text the tokenizer refuses; naming the file: no lines at all, and no prompt that fits in
 * max_prompt (the shortest named). ps is zeroed on failure. */
int dataset_parse(PromptSet *ps, const char *name, const char *bytes, size_t n, const DatasetOptions *opt,
                  char *why, size_t len);
void dataset_free(PromptSet *ps);

/* prompt i's ids (0 <= i < ps->n), *n_ids of them */
const int *dataset_ids(const PromptSet *ps, int i, int *n_ids);

/* keeps the first n prompts (n >= ps->n: all), for an eval subset; 0, or -1 when n < 1 */
int dataset_keep_first(PromptSet *ps, int n);

/* the prompt index (0 .. ps->n - 1) of global sample index g >= 0: epoch g / n, position g % n in that
 * epoch's permutation of the prompts, keyed by (seed, epoch) (RNG_DATA; a 4-round Feistel network over the
 * next even power of two, cycle-walked into [0, n)). Every prompt comes once per epoch. -1 when ps has no
 * prompts or g < 0. */
int dataset_prompt_of(const PromptSet *ps, uint64_t seed, int64_t g);

/* FNV-1a, 64-bit, over bytes[0..n): the content hash of a prompt file (ps->hash) */
uint64_t dataset_hash(const char *bytes, size_t n);

/* collective over comm: rank 0 alone opens path (a regular file of at most DATASET_MAX_BYTES) and
 * broadcasts its bytes, or why it could not; every rank parses the same bytes with opt, so every rank
 * returns the same: 0 with the same PromptSet, or -1 with the same why (len the same on every rank). */
int dataset_load_collective(MPI_Comm comm, const char *path, const DatasetOptions *opt, PromptSet *ps, char *why,
                            size_t len);

/* collective over comm: every rank passes its own rc (0 or -1) and why; every rank returns -1 with the why
 * of the lowest failing rank when any failed (for a step, such as reading a tokenizer, that each rank does
 * on its own), or 0; len the same on every rank */
int dataset_agree(MPI_Comm comm, int rc, char *why, size_t len);

/* ---- a deck's [data] section ------------------------------------------------------------------------- */

/* What [data] gives a run: the tokenizer, its chat format and the prompt sets. */
typedef struct PromptData {
    int on;           /* 1: the deck has [data] (and train); 0: it has none, nothing else is set */
    TokSpec spec;     /* the tokenizer's definition, from [data] tokenizer or [model] init_from */
    Tokenizer *tk;
    Chat chat;        /* CHAT_NONE under chat = none */
    char source[CFG_STR]; /* the path the tokenizer came from */
    PromptSet train;
    PromptSet eval;   /* n = 0 without [data] eval; at most eval_size prompts */
} PromptData;

/* collective over comm: resolves cfg's [data]: the tokenizer (each rank reads it, as each reads an init_from
 * checkpoint; the verdict is agreed through dataset_agree), the chat template (chat = auto refuses a
 * tokenizer without one, and an unrecognised one with its first line), the train and eval files (rank 0
 * reads each) with max_prompt = [model] max_seq - [ppo] max_response. Returns 0 (pd->on = 0 when the deck has no [data]),
 * or 2 on every rank with the error reported at the deck line of the key it concerns (deck_error_at);
 * pd is then empty. */
int promptdata_open(PromptData *pd, const Config *cfg, const Deck *deck, MPI_Comm comm);
void promptdata_free(PromptData *pd);

#endif
