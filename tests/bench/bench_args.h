/* bench_args.h — the command line every benchmark of tests/bench/ shares: its first argument is the file it
 * appends `metric: value` lines to, so a first argument that looks like an option is refused rather than
 * created (a file named `--help` at the repository's root came from that); --help or -h anywhere prints the
 * usage on stdout. Called first in main, before MPI_Init, so a help request starts no MPI job. */
#ifndef NEREUS_BENCH_ARGS_H
#define NEREUS_BENCH_ARGS_H

#include <stdio.h>
#include <string.h>

/* Returns -1 to go on, 0 after printing the usage (--help), 2 for an option where the output file belongs.
 * dash_ok: "-" is a valid first argument (no output file). */
static inline int bench_args(int argc, char **argv, const char *usage, int dash_ok) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("%s", usage);
            return 0;
        }
    if (argc > 1 && argv[1][0] == '-' && !(dash_ok && argv[1][1] == 0)) {
        fprintf(stderr, "%s: the first argument is the output file (metric: value lines), not an option: '%s'\n%s",
                argv[0], argv[1], usage);
        return 2;
    }
    return -1;
}

#endif
