/* counters.h — what each rank measures around the model-stages of a PPO
 * step: monotonic timers always, PAPI hardware counters where the machine
 * exposes them, and the calibrated GEMM peak that MFU is measured against.
 *
 * One state per process (PAPI's own state is per process and per thread):
 * counters_init turns the counters on; until then, and after
 * counters_finish, the stage hooks only keep their timers (two clock reads
 * each), which the live planner reads.
 *
 * Per step: counters_step_begin stamps the rank's step start; around its
 * work on model-stage id a rank calls counters_stage_begin(id) and
 * counters_stage_end(id) (a stage entered twice adds up); then the trace
 * reduces the records over the job (counters_step_reduce).
 *
 * Counters: the events of [trace] papi_events (comma list, at most
 * COUNTERS_MAX_EVENTS) in one PAPI event set per rank, started once and
 * read (PAPI_read) at each stage boundary. They count the rank's main
 * thread (PAPI's default granularity): with [run] blas_threads > 1 the BLAS
 * and OpenMP worker threads are not in the counts. Only the events that
 * every rank could add are counted (the same columns everywhere); where
 * none can be — no PAPI in the build, PAPI_library_init failing, or no CPU
 * PMU (containers, this build machine: the presets do not exist) — the
 * init's note says so in one line and the timers carry on alone.
 *
 * Peak (counters_calibrate): each rank times square GEMMs of the backend
 * (be->matmul_forward, N = 512 on the CPU backend, 4096 on a device),
 * twice: alone, best of 3 after a warm-up (the ranks one after another,
 * the others waiting in a sleeping barrier; for jobs of at most 64 ranks,
 * above that the together rate stands in), and all ranks at once, GEMMs
 * back to back for 0.1 s (long enough that ranks sharing cores overlap).
 * A set of ranks can at most reach min(Σ their solo rates, Σ every rank's
 * together rate): the first is what their cores do, the second what the
 * machine does when all ranks compute (oversubscribed ranks share cores).
 * That is the peak MFU is taken against (trace.c), and MFU is clamped to 1:
 * a GEMM-tuned kernel may beat one timed GEMM by a little.
 */
#ifndef NEREUS_COUNTERS_H
#define NEREUS_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "nereus/backend.h"
#include "nereus/plan.h"

#define COUNTERS_MAX_EVENTS 8
#define COUNTERS_NAME_MAX 64

/* One model-stage of one step, reduced over the job's ranks. */
typedef struct CounterStage {
    int nranks_ran;                  /* ranks that worked on it this step (0: nobody did) */
    double start, end;               /* min start, max end over those ranks, s since their step start */
    double seconds;                  /* max over those ranks of the time spent in it */
    int64_t value[COUNTERS_MAX_EVENTS]; /* event deltas summed over those ranks */
} CounterStage;

/* collective over world: parses events (a comma list, may be ""), starts
 * PAPI and keeps the events every rank could add. note gets the one line
 * to print (rank 0 prints it), "counters: ...". Returns 0, or −1 with why
 * for a bad list (more than COUNTERS_MAX_EVENTS, an empty item, a name too
 * long) — the same on every rank, before PAPI is touched. */
int counters_init(MPI_Comm world, const char *events, char *note, size_t note_len, char *why, size_t why_len);
/* the events counted (the same on every rank) */
int counters_nevents(void);
const char *counters_event(int i);
int counters_on(void);
/* stops PAPI and turns the hooks off */
void counters_finish(void);

/* the hooks (no-ops while off) */
void counters_step_begin(void);
void counters_stage_begin(int id);
void counters_stage_end(int id);
/* local: this rank's wall and CPU (its thread's) seconds in each model-stage
 * of the current or last step, wall[PLAN_NSTAGES], cpu[PLAN_NSTAGES] (0 where
 * it did not work on one). The timers run whether or not the counters are on. */
void counters_rank_last(double *wall, double *cpu);
/* local: a hook run at the start of every counters_stage_end (NULL: none),
 * inside the stage — the injected slowdown's extra work (inject.h). */
void counters_set_stage_end_hook(void (*hook)(void));
/* local: one timed probe of this rank's compute, for a rank the plan in
 * force leaves without work (the live planner's slowdown estimate has no
 * model-stage to read there; planner_live.c). The least of 3 N×N×N GEMMs
 * of the backend (N = 128 on the CPU backend, about 0.03 ms alone here;
 * 1024 on a device), after a warm-up on the first call, each ended by the
 * stage-end hook as a model-stage is (so an injected slowdown's extra work
 * is in it) and begun by it too (so what came before is not). Returns the
 * thread's CPU seconds on the CPU backend (ranks sharing cores do not make
 * it look slow), wall seconds on a device (whose rank has it to itself: a
 * slower device shows in them whether the host spins or sleeps while it
 * waits). The buffers are kept for the next call until counters_probe_free. */
double counters_probe(const Backend *be);
void counters_probe_free(void);
/* collective over world: this step's records of every model-stage,
 * out[PLAN_NSTAGES], the same on every rank. */
void counters_step_reduce(MPI_Comm world, CounterStage *out);

/* The calibrated GEMM rate (counters_calibrate). */
typedef struct CounterPeak {
    int n;                 /* ranks */
    int gemm_n;            /* the GEMM's size (N×N×N) */
    double *solo;          /* (n) GFLOP/s of each rank alone (malloc'd; every rank gets all) */
    double *together;      /* (n) GFLOP/s of each rank with all ranks at once */
    double together_sum;   /* Σ together */
    int solo_measured;     /* 0: solo = together (more than 64 ranks) */
} CounterPeak;

/* collective over world: measures the peak as described above. */
void counters_calibrate(MPI_Comm world, const Backend *be, CounterPeak *p);
void counters_peak_free(CounterPeak *p);
/* The peak of the ranks of a resolved plan stage: min(Σ solo, together_sum), GFLOP/s. */
double counters_peak_of(const CounterPeak *p, const PlanStage *s);

#endif
