/* trace_tool.h — what the files of bin/nereus-trace share: a trace read
 * into memory (TraceFile), the lookups of its columns, and the commands.
 *   tools/trace.c          the command line and the dispatch
 *   tools/trace_read.c     opening a trace, its attributes and tables, by the schema (trace_schema.h)
 *   tools/trace_storage.c  the damage HDF5's checksums do not catch
 *   tools/trace_report.c   summary, plans, transitions, csv, compare, schema
 *   tools/trace_replay.c   the controller's inputs rebuilt and the controller re-run
 *   tools/trace_replay_report.c  replay: the recorded run checked, the what-if runs and totals printed
 */
#ifndef NEREUS_TOOLS_TRACE_TOOL_H
#define NEREUS_TOOLS_TRACE_TOOL_H

#include <stddef.h>
#include <stdint.h>

#include <hdf5.h>

#include "nereus/trace_schema.h"

#define NSTAGE 7 /* plan.h PLAN_NSTAGES: the names of /stages stage */

/* A column as read: its class from the file's type, whatever the schema says, so that a column a later writer
 * adds is read along (csv prints it) and one of another class is left out. */
enum { C_INT, C_FLT, C_STR, C_VEC };
typedef struct Col {
    char name[64];
    int cls;
    int w;          /* C_VEC: reals per row (a 1-D array member), in f row-major */
    int64_t *i;
    double *f;
    char **s;
} Col;

typedef struct Table {
    const char *name;
    size_t n;
    int ncol;
    Col *col;
} Table;

typedef struct TraceFile {
    const char *path;
    Table t[TRACE_NTABLES];
    char algorithm[16];      /* root attribute algorithm: ppo | grpo ("ppo" when the trace predates it) */
    int group_size;          /* root attribute group_size (1 when absent) */
    char run_name[256], backend[32], started[64], commit[128], counters[1024], stage_names[NSTAGE][32];
    int ranks;
    double *peak_solo, *peak_together;
    int npeak;
    int complete;
    char status[128];
    double ppo_s, trace_s;
    int64_t mfu_clamped;
    int has_signals;        /* the trace has a /signals table (traces written before the live planner have none) */
    int has_planner;        /* /planner, with every attribute the replay needs */
    char planner_missing[64];
    TracePlanner pa;        /* /planner's attributes (its strings: malloc'd copies) */
    char *deck;             /* the resolved deck (/deck), NULL when unreadable */
    char deck_why[512];     /* why deck is NULL (missing, not a string, not matching its checksum) */
    Table rule;             /* /decisions without the refusal rows: the decisions of the rule */
    Table refusals;         /* /decisions rows of a change of plan refused before anything moved (trace_refused) */
    Table reverts;          /* /decisions rows of the measure-and-revert guard's moves back ("measured revert: ...") */
} TraceFile;

/* the column names the commands look up, each checked against the writer's row struct (TRACE_COLUMN) */
#define STEPS(c) TRACE_COLUMN(TraceStepsRow, c)
#define STAGES(c) TRACE_COLUMN(TraceStagesRow, c)
#define PLANS(c) TRACE_COLUMN(TracePlansRow, c)
#define DRIFT(c) TRACE_COLUMN(TraceDriftRow, c)
#define DECISIONS(c) TRACE_COLUMN(TraceDecisionsRow, c)
#define TRANSITIONS(c) TRACE_COLUMN(TraceTransitionsRow, c)
#define SIGNALS(c) TRACE_COLUMN(TraceSignalsRow, c)

/* trace_read.c */
/* the trace at path into tf; 0, or −1 with the reason (trace_read_error) */
int trace_load(const char *path, TraceFile *tf);
/* the first failure's message: "PATH: what is wrong" */
const char *trace_read_error(void);
/* records the first failure (printf-style) and returns −1 */
int trace_read_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* HDF5's innermost error description of the current stack into buf ("" when none) */
void trace_h5_reason(char *buf, size_t len);
Col *table_col(const Table *t, const char *name);
/* row k of a numeric column (NaN when the column or the row is missing), of a string column ("" then) */
double table_num(const Table *t, const char *name, size_t k);
const char *table_str(const Table *t, const char *name, size_t k);

/* trace_storage.c */
/* every chunk of table d (n rows) there, and the global heap its strings lie in sound; stored: see the file */
int trace_check_storage(const char *path, hid_t f, hid_t d, hid_t ft, hsize_t n, const char *tname, hsize_t *stored);
/* each row's strings against its strings_fnv column */
int trace_check_strings(const char *path, const Table *t);

/* trace_report.c */
int cmd_summary(const TraceFile *tf);
int cmd_plans(const TraceFile *tf);
int cmd_transitions(const TraceFile *tf);
int cmd_csv(const TraceFile *tf, const char *name);
int cmd_compare(const TraceFile *a, const TraceFile *b);
int cmd_schema(void);

/* trace_replay_report.c */
int cmd_replay(const TraceFile *tf, const double *gammas, int ng, double threshold);

#endif
