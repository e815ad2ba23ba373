/* deck.h — reading an input deck into a validated Config.
 *
 * A deck is an INI-like text file (`[section]`, `key = value`, `#` comments;
 * the format is described in inputs/REFERENCE.md). The deck module owns
 * everything between the file and a filled Config: reading the file on rank 0
 * and broadcasting its bytes, lexing, typed resolution with defaults,
 * range and cross-key validation, the error messages (`FILE:LINE: error: ...`
 * with a nearest-key suggestion), the resolved deck as text for output files,
 * and the reference document generated from the key table (src/deck/keys.c).
 * Following the LAMMPS/SWIFT model, every rank parses the same bytes, so
 * every rank fails the same way: a bad deck makes every rank return 2, only
 * rank 0 prints, and nothing runs.
 *
 * Keys are named "section.key" in this API (e.g. "ppo.minibatch").
 *
 * The command line may override keys (bin/nereus DECK --set section.key=value,
 * and --restart FILE for [run] restart): each override is checked as a deck
 * line is, after the deck's lines, and its value replaces the deck's (or sets
 * a key the deck lacks). Its messages name the option instead of FILE:LINE
 * ("--set ppo.steps=x: error: ..."), and the resolved deck marks the key as
 * set on the command line.
 */
#ifndef NEREUS_DECK_H
#define NEREUS_DECK_H

#include <stddef.h>
#include <stdio.h>
#include <mpi.h>

#include "nereus/config.h"

/* Exit status for a bad deck (collective input error). */
#define DECK_EXIT_BAD 2
/* Largest deck accepted: far above any real deck, small enough to broadcast. */
#define DECK_MAX_BYTES ((size_t)16 << 20)

/* Opaque: the file name, its raw bytes, where every key was set (a line,
 * an override, or defaulted), the line of every section header, the
 * overrides, the last message. */
typedef struct Deck Deck;

/* A value for one deck key from the command line (the strings are the
 * caller's; they must stay until deck_free). */
typedef struct DeckOverride {
    const char *option; /* "--set", "--restart": how messages and the resolved deck name it */
    const char *key;    /* "section.key"; NULL: arg is "section.key=value" */
    const char *arg;    /* the option's argument as given */
    const char *where;  /* NULL: messages name "option arg"; else this ("FILE:LINE" of a --plan file's line) */
} DeckOverride;

/* A --plan FILE: its [plan] key lines as "plan.KEY=VALUE" overrides, each named by "FILE:LINE" (planfile.c) */
typedef struct DeckPlanFile {
    char *option;       /* "--plan FILE" */
    char **args;        /* [n] "plan.KEY=VALUE" */
    char **wheres;      /* [n] "FILE:LINE" */
    int n;
} DeckPlanFile;

/* collective over comm: rank 0 reads the plan file, every rank parses the same bytes. Returns 0, or 2 after
 * rank 0 printed "FILE:LINE: error: ..." (a line outside one [plan] section, no '=', no [plan]). */
int deck_plan_file_load(const char *path, MPI_Comm comm, DeckPlanFile *pf);
/* appends pf's overrides to ov (room for pf->n more), *nov counting them */
void deck_plan_file_overrides(const DeckPlanFile *pf, DeckOverride *ov, int *nov);
void deck_plan_file_free(DeckPlanFile *pf);

/* collective over comm: rank 0 reads the file and broadcasts its bytes (or
 * the read error) with MPI_Bcast; every rank parses the same bytes and
 * resolves cfg. Returns 0 on success. On any error rank 0 prints the message
 * to stderr and every rank returns 2 (the caller exits with 2); cfg is then
 * left unchanged. *out is set in both cases (NULL only when out of memory)
 * so that deck_last_error() can be asked; free it with deck_free(). */
int deck_load(const char *path, MPI_Comm comm, Config *cfg, Deck **out);

/* deck_load with nov command-line overrides (every rank passes the same). */
int deck_load_with(const char *path, const DeckOverride *ov, int nov, MPI_Comm comm, Config *cfg, Deck **out);

/* No MPI; for tests and tools. name is the file name used in messages and
 * for the default [run] name (its stem); NULL means "<string>". text need
 * not be NUL-terminated. quiet=1 suppresses printing (the message is still
 * stored). Same return convention as deck_load; out may be NULL. */
int deck_parse_string(const char *name, const char *text, size_t len, Config *cfg,
                      Deck **out, int quiet);

/* deck_parse_string with nov command-line overrides. */
int deck_parse_string_with(const char *name, const char *text, size_t len, const DeckOverride *ov, int nov,
                           Config *cfg, Deck **out, int quiet);

/* The last message (all its lines, without the final newline), "" if none.
 * Set by a failed load or parse and by deck_error_at(). */
const char *deck_last_error(const Deck *d);

/* Line of that key in the deck; 0 if it was defaulted or set on the command
 * line; -1 if no such key. */
int deck_line(const Deck *d, const char *section_dot_key);

/* The deck's file name as given, and its raw bytes (for storing the deck as
 * written in output files). The bytes are NUL-terminated; *len (if not NULL)
 * receives their length. */
const char *deck_path(const Deck *d);
const char *deck_text(const Deck *d, size_t *len);

/* For checks the deck module cannot do (they need another module's
 * knowledge, e.g. max_seq vs prompt length): prints
 * "FILE:LINE: error: <msg>" (the line of that key, "FILE: error: <msg>"
 * when it was defaulted, or "--set ARG: error: <msg>" when the command line
 * set it) on stderr, unless the deck is quiet (parsed with
 * quiet=1, or on a rank other than 0 under deck_load), stores it as the last
 * message, and returns 2. Call it on every rank, like the parse. */
int deck_error_at(const Deck *d, const char *section_dot_key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same place, "...: warning: <msg>" on stderr (unless quiet), for a setting that runs but does not do what it
 * is for; stores nothing (deck_last_error stays) and the run goes on. Call it on every rank, like the parse. */
void deck_warn_at(const Deck *d, const char *section_dot_key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Every key with its resolved value, as deck text, each line marked
 * "# (default)", "# line N" or "# command line (--set)" (the option that
 * set it). The output is itself a valid deck that
 * resolves to the same Config. */
void deck_print_resolved(const Deck *d, const Config *cfg, FILE *f);

/* The same text, malloc'd and NUL-terminated (free() it); NULL if out of
 * memory. For the `deck` attribute of checkpoints and traces. */
char *deck_resolved_text(const Deck *d, const Config *cfg);

/* The deck reference as markdown: a preamble on the format, then one table
 * per section (key, type, default, range/choices, meaning). This is how
 * inputs/REFERENCE.md is made. Returns 0, or -1 on a write error. */
int deck_write_reference(FILE *f);

/* 1 when the deck has a [simulate] section: a simulation deck for
 * `bin/nereus --simulate` (only [simulate]'s required keys apply to it). */
int deck_is_simulation(const Deck *d);

void deck_free(Deck *d);

#endif
