/* planfile.c — `bin/nereus DECK --plan FILE`: a plan file is a `[plan]` section alone (comments and blank
 * lines besides), read as overrides of the deck's [plan] keys, so that one plan composes with any deck
 * (the examples in inputs/plans/, NAME.plan). Each of its key lines becomes a DeckOverride whose messages name the file and line
 * ("inputs/plans/x.plan:7: error: ...") and whose resolved-deck mark says where it came from. Rank 0 reads
 * the file and broadcasts its bytes; every rank parses the same bytes, so every rank fails the same way. */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/deck.h"
#include "nereus/util.h"

#define PLAN_FILE_MAX (1 << 20)

/* [a, b) without the spaces and tabs at either end */
static void trim(const char **a, const char **b) {
    while (*a < *b && (**a == ' ' || **a == '\t' || **a == '\r')) (*a)++;
    while (*b > *a && ((*b)[-1] == ' ' || (*b)[-1] == '\t' || (*b)[-1] == '\r')) (*b)--;
}

/* rank 0 reads path (at most PLAN_FILE_MAX bytes) into *text; every rank gets the bytes or the error. Returns
 * the length, or -1 with why. Collective over comm. */
static long read_bcast(const char *path, MPI_Comm comm, char **text, char *why, size_t len) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    long n = -1, err = 0;
    char *buf = NULL;
    if (rank == 0) {
        FILE *f = fopen(path, "rb");
        err = f ? 0 : errno;
        buf = nr_xmalloc(PLAN_FILE_MAX + 1);
        if (f) {
            n = (long)fread(buf, 1, PLAN_FILE_MAX + 1, f);
            if (ferror(f) || n > PLAN_FILE_MAX) n = -2;
            fclose(f);
        }
    }
    long got[2] = {n, err};
    MPI_Bcast(got, 2, MPI_LONG, 0, comm);
    n = got[0];
    if (n < 0) {
        free(buf);
        if (n == -1) snprintf(why, len, "cannot read the plan file: %s", strerror((int)got[1]));
        else snprintf(why, len, "not a plan file (unreadable, a directory, or over 1 MiB)");
        return -1;
    }
    if (rank != 0) buf = nr_xmalloc((size_t)n + 1);
    MPI_Bcast(buf, (int)n, MPI_CHAR, 0, comm);
    buf[n] = 0;
    *text = buf;
    return n;
}

/* one line [a, b) of the file (line number ln) into ov[*nov] (or a section header); 0, or -1 with why */
static int plan_line(const char *path, int ln, const char *a, const char *b, int *in_plan, DeckPlanFile *pf,
                     char *why, size_t len) {
    const char *hash = memchr(a, '#', (size_t)(b - a));
    if (hash) b = hash;
    trim(&a, &b);
    if (a == b) return 0;
    if (*a == '[') {
        const char *s = a + 1, *e = memchr(a, ']', (size_t)(b - a));
        if (!e) return snprintf(why, len, "a section header needs its ']'"), -1;
        trim(&s, &e);
        if ((size_t)(e - s) != 4 || strncmp(s, "plan", 4) != 0)
            return snprintf(why, len, "[%.*s]: a plan file holds a [plan] section and nothing else (the deck gives "
                                      "the rest)", (int)(e - s), s), -1;
        *in_plan = 1;
        return 0;
    }
    const char *eq = memchr(a, '=', (size_t)(b - a));
    if (!eq) return snprintf(why, len, "expected 'key = value' (a [plan] key: inputs/REFERENCE.md)"), -1;
    if (!*in_plan) return snprintf(why, len, "a key before the [plan] line"), -1;
    const char *ka = a, *kb = eq, *va = eq + 1, *vb = b;
    trim(&ka, &kb);
    trim(&va, &vb);
    int i = pf->n++;
    size_t an = (size_t)(kb - ka) + (size_t)(vb - va) + 8;
    pf->args[i] = nr_xmalloc(an);
    snprintf(pf->args[i], an, "plan.%.*s=%.*s", (int)(kb - ka), ka, (int)(vb - va), va);
    size_t wn = strlen(path) + 16;
    pf->wheres[i] = nr_xmalloc(wn);
    snprintf(pf->wheres[i], wn, "%s:%d", path, ln);
    return 0;
}

int deck_plan_file_load(const char *path, MPI_Comm comm, DeckPlanFile *pf) {
    memset(pf, 0, sizeof *pf);
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    char *text = NULL, why[512] = "";
    long n = read_bcast(path, comm, &text, why, sizeof why);
    int ln = 0, in_plan = 0, rc = n < 0 ? -1 : 0;
    size_t on = strlen(path) + 8;
    pf->option = nr_xmalloc(on);
    snprintf(pf->option, on, "--plan %s", path);
    int lines = 1;
    for (long i = 0; i < n; i++) lines += text[i] == '\n';
    pf->args = nr_xcalloc((size_t)lines, sizeof *pf->args);
    pf->wheres = nr_xcalloc((size_t)lines, sizeof *pf->wheres);
    for (const char *a = text, *end = text + (n > 0 ? n : 0); rc == 0 && a < end; ln++) {
        const char *b = memchr(a, '\n', (size_t)(end - a));
        if (!b) b = end;
        rc = plan_line(path, ln + 1, a, b, &in_plan, pf, why, sizeof why);
        a = b + 1;
    }
    if (rc == 0 && !in_plan) rc = -1, snprintf(why, sizeof why, "no [plan] section");
    if (rc != 0 && rank == 0) {
        if (ln > 0) fprintf(stderr, "%s:%d: error: %s\n", path, ln, why);
        else fprintf(stderr, "--plan %s: error: %s\n", path, why);
    }
    free(text);
    return rc == 0 ? 0 : 2;
}

void deck_plan_file_overrides(const DeckPlanFile *pf, DeckOverride *ov, int *nov) {
    for (int i = 0; i < pf->n; i++) ov[(*nov)++] = (DeckOverride){pf->option, NULL, pf->args[i], pf->wheres[i]};
}

void deck_plan_file_free(DeckPlanFile *pf) {
    for (int i = 0; i < pf->n; i++) {
        free(pf->args[i]);
        free(pf->wheres[i]);
    }
    free(pf->args);
    free(pf->wheres);
    free(pf->option);
    memset(pf, 0, sizeof *pf);
}
