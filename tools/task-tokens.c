/* task-tokens.c — bin/nereus-task-tokens: write task demonstrations
 * ("prompt answer EOS", concatenated) as an llm.c token file (version 1,
 * uint16: the task vocabulary is tiny), the input of
 * the SFT deck's `data = tokens` path.
 *   nereus-task-tokens OUT.bin [--count N] [--tasks reverse,sort] [--digits D] [--seed S]
 *   nereus-task-tokens --help   usage on stdout, exit 0 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/task.h"
#include "nereus/util.h"

/* the usage on f; returns 2, the exit status of a bad command line */
static int usage_to(FILE *f) {
    fprintf(f, "usage: nereus-task-tokens OUT.bin [--count N] [--tasks LIST] [--digits D] [--seed S]\n"
               "  task demonstrations (\"prompt answer EOS\") as an llm.c token file, for an SFT deck's data = tokens\n"
               "  defaults: --count 10000 --tasks reverse,sort --digits 4 --seed 1234\n"
               "exit: 0 written, 1 the file could not be written, 2 bad command line\n"
               "see also: bin/nereus (jobs/local.sh -np N bin/nereus DECK), bin/nereus-ckpt loss, bin/nereus-tok\n");
    return 2;
}
static int usage(void) { return usage_to(stderr); }

static int parse_long(const char *s, long lo, long hi, long *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == 0 || *end != 0 || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv) {
    const char *out = NULL, *tasks = "reverse,sort";
    long count = 10000, digits = 4, seed = 1234;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage_to(stdout);
            return 0;
        }
    for (int i = 1; i < argc; i++) {
        long *dst = NULL;
        long lo = 1, hi = 100000000;
        if (strcmp(argv[i], "--count") == 0) dst = &count;
        else if (strcmp(argv[i], "--digits") == 0) { dst = &digits; hi = 16; }
        else if (strcmp(argv[i], "--seed") == 0) { dst = &seed; lo = 0; hi = 0x7fffffff; }
        else if (strcmp(argv[i], "--tasks") == 0 && i + 1 < argc) { tasks = argv[++i]; continue; }
        else if (argv[i][0] == '-') { fprintf(stderr, "nereus-task-tokens: unknown option '%s'\n", argv[i]); return usage(); }
        else if (!out) { out = argv[i]; continue; }
        else return usage();
        if (i + 1 >= argc || parse_long(argv[i + 1], lo, hi, dst) != 0) {
            fprintf(stderr, "nereus-task-tokens: %s needs an integer in [%ld, %ld]\n", argv[i], lo, hi);
            return 2;
        }
        i++;
    }
    if (!out) return usage();
    nr_mpi_singleton_isolated();
    MPI_Init(&argc, &argv); /* the library's logging asks MPI for the rank */
    TaskSet ts;
    char why[512];
    if (task_parse(&ts, tasks, (int)digits, (uint64_t)seed, why, sizeof why) != 0) {
        fprintf(stderr, "nereus-task-tokens: --tasks: %s\n", why);
        MPI_Finalize();
        return 2;
    }
    int P = task_prompt_len(&ts), per = P + task_max_answer(&ts) + 1;
    uint32_t *buf = malloc((size_t)count * per * sizeof(uint32_t));
    size_t n = 0;
    int prompt[32], ans[32], al;
    for (long g = 0; g < count; g++) {
        task_make(&ts, (1ULL << 41) + (uint64_t)g, prompt, ans, &al);
        for (int i = 0; i < P; i++) buf[n++] = (uint32_t)prompt[i];
        for (int i = 0; i < al; i++) buf[n++] = (uint32_t)ans[i];
        buf[n++] = TOK_EOS;
    }
    int rc = tokens_write(out, buf, n, why, sizeof why);
    if (rc) fprintf(stderr, "nereus-task-tokens: %s\n", why);
    else printf("wrote %zu tokens (%ld demonstrations of %s, %ld digits) to %s\n", n, count, tasks, digits, out);
    free(buf);
    MPI_Finalize();
    return rc ? 1 : 0;
}
