/* trace_schema.h — the one description of the trace format (format 1): its
 * tables, each table's columns in file order with their types, units and
 * meanings, and the attributes of the root, /planner and /complete. The table
 * itself is src/io/trace_schema.c, the way src/deck/keys.c is the one table of
 * deck keys:
 *   - the writer (src/io/trace.c) builds each table's HDF5 compound type and
 *     its doc attribute from it, and writes /planner's attributes from it;
 *   - bin/nereus-trace (tools/trace*.c) refuses a trace that lacks a required
 *     table or column, reads /planner by it, and names every column it looks
 *     up through TRACE_COLUMN, which does not compile for a column the writer
 *     has no member for;
 *   - `nereus-trace schema` prints it as the tables of docs/TRACE.md.
 * A new column is one new member of its row struct below and one new row in
 * the table; a column added within format 1 is not required, so that the
 * traces written before it still read.
 *
 * Pure: no HDF5, no MPI.
 */
#ifndef NEREUS_TRACE_SCHEMA_H
#define NEREUS_TRACE_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#define TRACE_FORMAT_NAME "nereus trace" /* the root attribute format */
#define TRACE_FORMAT 1                   /* the root attribute format_version */
#define TRACE_EFF_N 9                    /* /signals eff: planner.h EFF_N */
#define TRACE_PHASES 3                   /* /signals phase_scale: gen, inf, train */
#define TRACE_MAX_EVENTS 8               /* counters.h COUNTERS_MAX_EVENTS: /stages event columns at most */

typedef enum TraceType {
    TRACE_I32,       /* little-endian int32 */
    TRACE_I64,       /* little-endian int64 */
    TRACE_F64,       /* IEEE float64 */
    TRACE_STR,       /* variable-length UTF-8 string */
    TRACE_F64_ARRAY, /* a 1-D array of float64 (width per row) */
} TraceType;

/* One column of a table: name, type, where the writer's row struct holds it. */
typedef struct TraceColumn {
    const char *name;
    TraceType type;
    int width;         /* TRACE_F64_ARRAY: reals per row; else 1 */
    size_t offset;     /* in the table's row struct */
    int required;      /* 1: a format-1 trace without it is refused; 0: added within format 1 */
    const char *unit;  /* "s", "bytes", ...; "" for a count, an id or text */
    const char *meaning;
} TraceColumn;

typedef enum TraceTableId {
    TRACE_STEPS,
    TRACE_STAGES,
    TRACE_PLANS,
    TRACE_DRIFT,
    TRACE_DECISIONS,
    TRACE_TRANSITIONS,
    TRACE_SIGNALS,
    TRACE_EVAL,
    TRACE_SAMPLES,
    TRACE_RANKS,
    TRACE_NTABLES
} TraceTableId;

/* One table: a 1-D dataset of a packed compound type, chunked, extendible. */
typedef struct TraceTable {
    const char *name;        /* the dataset, under the root */
    size_t row_size;         /* sizeof its row struct (the writer's memory type) */
    unsigned chunk_rows;
    int required;            /* 0: absent in traces written before the live planner (/signals) */
    int event_columns;       /* /stages: one int64 column per counted PAPI event follows the columns */
    const TraceColumn *col;
    int ncol;
    const char *doc;         /* the dataset's doc attribute */
    const char *about;       /* docs/TRACE.md: what a row is, when it is written */
} TraceTable;

extern const TraceTable trace_tables[TRACE_NTABLES];

/* One attribute of the root, of /planner or of /complete. */
typedef struct TraceAttr {
    const char *name;
    TraceType type;          /* TRACE_F64_ARRAY: one float64 per rank */
    size_t offset;           /* /planner: in TracePlanner (trace.h); else unused */
    int required;            /* /planner: 0 = added within format 1 (read as 0 when absent) */
    const char *unit;
    const char *meaning;
} TraceAttr;

typedef struct TraceAttrList {
    const char *object;      /* "/", "/planner", "/complete" */
    const TraceAttr *attr;
    int nattr;
    const char *about;
} TraceAttrList;

extern const TraceAttrList trace_root_attrs, trace_planner_attrs, trace_complete_attrs;

/* the table named name ("steps" or "/steps"), or NULL */
const TraceTable *trace_table_named(const char *name);
/* the column named name of table t, or NULL */
const TraceColumn *trace_column_named(const TraceTable *t, const char *name);
/* "int32", "int64", "float64", "string", "float64[W]" */
const char *trace_type_name(TraceType type, int width, char *buf, size_t len);

/* ---- the rows, as the writer holds them in memory (the file type is their packed copy) ---- */

typedef struct TraceStepsRow {
    int64_t step;
    int32_t plan_id, T;
    double t_start_s, wall_s, gen_s, inf_s, train_s, sync_s;
    int64_t tokens;
    double tokens_per_s, reward, kl, pg_loss, vf_loss, entropy, resp_len, resp_longest, clipfrac, approx_kl,
        grad_norm_actor, grad_norm_critic, sync_bytes;
    double kl_k3; /* grpo's k3 KL term (ppo: 0) */
    double logp_gap, gen_kl, tis_mean, tis_capped; /* the generating against the scoring actor; TIS */
    int64_t gen_version, staleness;                /* the batch's weight version, and the step less it */
    double rollout_bytes;                          /* the rollout's bytes between ranks */
    int64_t max_staleness;                         /* K in force at the step (the deck's or the planner's) */
    int64_t seq_tokens;                            /* the rows' own tokens, no padding */
} TraceStepsRow;

typedef struct TraceStagesRow {
    int64_t step;
    int32_t stage, nranks, nranks_ran;
    double start_s, end_s, seconds, flops, bytes, gflops, peak_gflops, mfu;
    int64_t ev[TRACE_MAX_EVENTS]; /* the event columns, in counters_event order */
} TraceStagesRow;

typedef struct TracePlansRow {
    int32_t plan_id;
    int64_t first_step;
    const char *text, *source;
    double predicted_step_s, predicted_mem_bytes;
    int64_t strings_fnv;
} TracePlansRow;

typedef struct TraceTransitionsRow {
    int64_t step;
    int32_t from_plan, to_plan, nchanges, nwaves, verified, sets_prebuilt;
    double t_start_s, predicted_s, measured_s, engine_s, bytes_moved, bytes_min, bytes_local, mem_peak_bytes,
        mem_budget_bytes, bytes_forwarded, setup_s;
    const char *text;
    int64_t strings_fnv;
} TraceTransitionsRow;

typedef struct TraceDriftRow {
    int64_t step;
    const char *kind;
    double magnitude, threshold;
    int64_t strings_fnv;
} TraceDriftRow;

typedef struct TraceDecisionsRow {
    int64_t step;
    int32_t from_plan, to_plan, urgent, admitted;
    double L_now_s, L_new_s, dL_s, C_s, H_steps, gamma, foregone_s;
    int32_t staleness; /* the K the candidate is priced with; −1 in a refusal row */
    const char *reason;
    int64_t strings_fnv;
} TraceDecisionsRow;

typedef struct TraceSignalsRow {
    int64_t step;
    int32_t plan_id, initial, npool, oom;
    double resp_len, resp_longest, eff_signal, pred_step_s, overhead_s, rho_exp;
    double phase_scale[TRACE_PHASES];
    double eff[TRACE_EFF_N];
    const char *pool, *slow;
    int64_t strings_fnv;
} TraceSignalsRow;

typedef struct TraceEvalRow {
    int64_t step;
    int32_t prompts;
    double accuracy, reward, format_rate, mean_len;
} TraceEvalRow;

typedef struct TraceRanksRow {
    int64_t step;
    int32_t rank, producer, consumer;
    double busy_s, idle_s;
} TraceRanksRow;
typedef struct TraceSamplesRow {
    int64_t step;
    int32_t row;
    double reward;
    const char *prompt, *response;
    int64_t strings_fnv;
} TraceSamplesRow;

/* /planner's attributes as the live planner hands them to trace_planner (trace.h), and as nereus-trace reads
 * them back (its strings then point into the reader's copies). */
typedef struct TracePlanner {
    const char *policy, *hw_name;
    double gamma, threshold, headroom;
    double hw_flops, hw_mem, hw_hbm, hw_bw, hw_lat, hw_op_s;
    int64_t every_k, warmup, steps_total, nranks, hw_rpn, hw_cores;
    double tx_link, tx_copy; /* the transitions' measured link and copy rates, bytes/s per rank (0: the deck's link) */
} TracePlanner;

/* The name of column `field` of the table whose row struct is Row, as a string constant: it does not compile
 * when Row has no member `field`, so a reader names only columns the writer writes. */
#define TRACE_COLUMN(Row, field) (#field + 0 * sizeof(((Row *)0)->field))

#endif
