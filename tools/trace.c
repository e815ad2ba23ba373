/* trace.c — bin/nereus-trace: offline analysis of a run's HDF5 trace
 * (docs/TRACE.md; the format is include/nereus/trace_schema.h). One process,
 * the serial HDF5 API, no MPI. This file is the command line; trace_tool.h
 * lists the others.
 *   nereus-trace summary FILE          per-phase and per-model-stage breakdown, tokens/s,
 *                                      transitions and their share of the runtime, drift events
 *   nereus-trace plans FILE            the plan timeline: which plan from which step
 *   nereus-trace transitions FILE      every transition: predicted and measured, bytes, primitives
 *   nereus-trace csv FILE TABLE        a table (steps, stages, plans, drift, decisions, transitions, signals) as CSV
 *   nereus-trace compare A B           two traces side by side
 *   nereus-trace replay FILE [--gamma G ...] [--threshold X]
 *                                      the planner's controller re-run over the recorded signals
 *                                      (/signals, /planner): the recorded decisions reproduced, other
 *                                      γ and thresholds and the static policy priced, regrets; on a
 *                                      trace without them the admission rule over the recorded decisions
 *   nereus-trace schema                the trace format from its table, as Markdown
 * (FILE first, then the subcommand, is accepted too; --help anywhere prints the usage on stdout, exit 0.)
 * Exit: 0 ok; 1 the file is missing, not HDF5, not a trace, truncated or
 * corrupt (one line on stderr naming the file and what is wrong); 2 bad
 * command line.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hdf5.h>

#include "trace_tool.h"

/* the usage on f; returns 2, the exit status of a bad command line */
static int usage_to(FILE *f) {
    fprintf(f,
            "usage: nereus-trace summary FILE          phases, model-stages, tokens/s, transitions, drift\n"
            "       nereus-trace plans FILE            which plan from which step\n"
            "       nereus-trace transitions FILE      every transition: predicted and measured\n"
            "       nereus-trace csv FILE TABLE        TABLE: steps stages plans drift decisions transitions signals\n"
            "       nereus-trace compare A B           two traces side by side\n"
            "       nereus-trace replay FILE [--gamma G]... [--threshold X]\n"
            "       nereus-trace schema                the trace format, as docs/TRACE.md's tables\n"
            "       nereus-trace --help                (also after any subcommand)\n"
            "exit: 0 ok, 1 the file is missing, not a trace, truncated or corrupt (one line on stderr),\n"
            "      2 bad command line\n"
            "see also: bin/nereus (runs write traces: [trace] in the deck), tools/plot-trace, bin/nereus-ckpt;\n"
            "          docs/TRACE.md\n");
    return 2;
}
static int usage(void) { return usage_to(stderr); }

static int is_cmd(const char *s) {
    static const char *cmds[] = {"summary", "plans", "transitions", "csv", "compare", "replay"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (strcmp(s, cmds[i]) == 0) return 1;
    return 0;
}

/* A corrupt file can still make the HDF5 library fault (the checksums of the
 * format catch most damage, not all): say so in one line, no core dump. */
static const char *reading = "?"; /* the file being read, for on_fault */
static void on_fault(int sig) {
    char msg[1200];
    int n = snprintf(msg, sizeof msg,
                     "nereus-trace: %s: corrupt trace: the HDF5 library crashed reading it (signal %d)\n", reading, sig);
    if (n > 0 && write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1) < 0) _exit(1);
    _exit(1);
}

static int load_or_say(const char *path, TraceFile *tf) {
    reading = path;
    if (trace_load(path, tf) == 0) return 0;
    fprintf(stderr, "nereus-trace: %s\n", trace_read_error());
    return 1;
}

int main(int argc, char **argv) {
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* our one message, not HDF5's stack */
    int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], on_fault);
    for (int i = 1; i < argc; i++) /* --help anywhere, subcommands included */
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage_to(stdout);
            return 0;
        }
    if (argc == 2 && strcmp(argv[1], "schema") == 0) return cmd_schema();
    if (argc < 3) return usage();
    if (!is_cmd(argv[1]) && is_cmd(argv[2])) { /* FILE SUBCOMMAND ... */
        char *t = argv[1];
        argv[1] = argv[2];
        argv[2] = t;
    }
    const char *cmd = argv[1];
    TraceFile a, b;
    if (strcmp(cmd, "compare") == 0) {
        if (argc != 4) return usage();
        if (load_or_say(argv[2], &a) || load_or_say(argv[3], &b)) return 1;
        return cmd_compare(&a, &b);
    }
    if (strcmp(cmd, "csv") == 0) {
        if (argc != 4) return usage();
        if (load_or_say(argv[2], &a)) return 1;
        return cmd_csv(&a, argv[3]);
    }
    if (strcmp(cmd, "replay") == 0) {
        double g[32], thr = NAN;
        int ng = 0;
        for (int i = 3; i < argc; i++) {
            char *end;
            if (i + 1 < argc && strcmp(argv[i], "--gamma") == 0) {
                double v = strtod(argv[++i], &end);
                if (*end || !isfinite(v) || v < 0 || ng == 32) return usage();
                g[ng++] = v;
            } else if (i + 1 < argc && strcmp(argv[i], "--threshold") == 0) {
                thr = strtod(argv[++i], &end);
                if (*end || !isfinite(thr) || thr <= 0) return usage();
            } else {
                fprintf(stderr, "nereus-trace: replay: unknown option '%s'\n", argv[i]);
                return usage();
            }
        }
        if (load_or_say(argv[2], &a)) return 1;
        return cmd_replay(&a, g, ng, thr);
    }
    if (argc != 3) return usage();
    if (strcmp(cmd, "summary") == 0) return load_or_say(argv[2], &a) ? 1 : cmd_summary(&a);
    if (strcmp(cmd, "plans") == 0) return load_or_say(argv[2], &a) ? 1 : cmd_plans(&a);
    if (strcmp(cmd, "transitions") == 0) return load_or_say(argv[2], &a) ? 1 : cmd_transitions(&a);
    return usage();
}
