/* util.h — checks, logging, timers and the counter-based RNG shared by all modules.
 *
 * Errors: a failing library call on one rank is a *local* error: it names the
 * call, the file, the line, the rank and the reason, then MPI_Abort()s the job
 * (STYLE.md: "two kinds of error"). Bad input is a *collective* error handled
 * by the deck and the callers: every rank returns 2 and main exits with 2.
 *
 * RNG: every random number is a pure function of (seed, stream, a, b), a
 * counter-based hash (SplitMix64 finaliser over a combined key). Nothing
 * carries hidden state, so a sample's random numbers depend only on its
 * global index — not on which rank or plan draws them.
 */
#ifndef NEREUS_UTIL_H
#define NEREUS_UTIL_H

#include <stdint.h>
#include <stddef.h>
#include <stdio.h>

/* ---- errors ---------------------------------------------------------- */
void nr_fatal_at(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));
#define nr_fatal(...) nr_fatal_at(__FILE__, __LINE__, __VA_ARGS__)

/* MPI: names the call and the MPI error string. A hook set with
 * nr_set_mpi_fail_hook sees the error first: the fault-tolerant build's
 * (ft.h) leaves for the recovery point when the error is a failed rank, and
 * returns otherwise; then the job aborts as without it. */
void nr_mpi_fail(int err, const char *call, const char *file, int line) __attribute__((noreturn));
#define mpiCheck(call) do { int e_ = (call); if (e_ != 0) nr_mpi_fail(e_, #call, __FILE__, __LINE__); } while (0)
void nr_set_mpi_fail_hook(void (*hook)(int err, const char *call, const char *file, int line));

/* ---- logging --------------------------------------------------------- */
int nr_rank(void);            /* rank in the job's world, nr_world() of comm.h (0 before MPI_Init) */
/* before MPI_Init in a program started without a launcher (no mpirun, srun or PMIx rank in the environment): the
   singleton runs on its own, without the runtime daemon Open MPI 4 starts for it otherwise (0.1 s a start; such a
   process never spawns: fault tolerance and [elastic] need mpirun) */
void nr_mpi_singleton_isolated(void);
/* printf on rank 0 only (stdout), flushed */
void nr_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* 1: nr_log says nothing on this process (a process spawned to join a job, during its own set-up) */
void nr_set_quiet(int q);
/* warning on any rank (stderr), prefixed with the rank */
void nr_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The order-free checksum of n floats that stand at logical indices k0 ..
 * k0+n−1 of one tensor: Σ mix64(k·2^32 + IEEE bits of x) mod 2^64 (the
 * SplitMix64 finaliser). Sums of disjoint runs add up to the whole tensor's,
 * whoever holds which run. What checkpoints store (docs/CHECKPOINT.md) and
 * transitions compare. */
uint64_t nr_cksum_f32(const float *x, size_t n, uint64_t k0);
/* One fingerprint of a model from its tensors' nr_cksum_f32 in table order
 * (order matters: tensors of one shape swapped give another value). */
uint64_t nr_cksum_combine(const uint64_t *h, int n);
/* FNV-1a, 64-bit, over a NUL-terminated string's bytes: the checksum the
 * HDF5 files keep beside a string dataset (its raw data is outside the
 * checksums HDF5 keeps on metadata). */
uint64_t nr_cksum_str(const char *s);
/* The same over n strings, each followed by its NUL (so "ab","c" and "a","bc"
 * differ; NULL counts as ""): a trace row's variable-length strings, which
 * live in HDF5's global heap, outside the chunk's Fletcher-32. */
uint64_t nr_cksum_strs(const char *const *s, int n);
/* Bytes of memory this process's node gives it: the physical memory, or the
 * memory limit of its cgroup (the lowest on the way to the root, v2
 * memory.max or v1 memory.limit_in_bytes: what Slurm's --mem sets) where
 * lower; *limited (may be NULL) = 1 in that case. */
double nr_node_memory(int *limited);
/* The cores this process may run on (its affinity mask: one where mpirun
 * bound the rank to a core), or the online cores where that cannot be read. */
int nr_cores_allowed(void);
/* Bytes an unprivileged writer may still use on the file system that holds
 * `path` (the file's directory: the file itself need not exist); −1 where
 * that cannot be found out. For messages about failed writes. */
double nr_fs_free_bytes(const char *path);
/* Writes the formatted reason into why (len bytes; why may be NULL) and
 * returns −1: the "return -1 with a one-line reason" of the pure planners. */
int nr_fail(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- time ------------------------------------------------------------ */
double nr_now(void);          /* monotonic seconds */
double nr_thread_cpu(void);   /* this thread's CPU seconds (its other threads' not counted) */

/* ---- counter-based RNG ----------------------------------------------- */
/* Streams keep the uses apart, so adding one use never shifts another. */
enum {
    RNG_INIT = 1,      /* parameter initialisation: (tensor id, element) */
    RNG_PROMPT = 2,    /* prompt generation: (global sample index, draw) */
    RNG_SAMPLE = 3,    /* token sampling: (global sample index, position) */
    RNG_SHUFFLE = 4,   /* minibatch order: (step, epoch) */
    RNG_SFT = 5,       /* SFT demonstrations: (global sample index, draw) */
    RNG_DATA = 6,      /* prompt-dataset order: (epoch, Feistel round and half) */
    RNG_FAIL = 7,      /* the simulator's MODELLED failures: (draw, 0) */
    RNG_TEST = 99
};
uint64_t rng_u64(uint64_t seed, uint64_t stream, uint64_t a, uint64_t b);
/* uniform in [0, 1) with 24 random bits (exactly representable as float) */
float rng_uniform(uint64_t seed, uint64_t stream, uint64_t a, uint64_t b);
/* standard normal (Box–Muller over two derived uniforms) */
float rng_normal(uint64_t seed, uint64_t stream, uint64_t a, uint64_t b);
/* integer in [0, n) */
int rng_below(uint64_t seed, uint64_t stream, uint64_t a, uint64_t b, int n);

/* ---- misc ------------------------------------------------------------ */
/* the median of v[0..n), which it sorts in place; NaN for n = 0 */
double nr_median(double *v, int n);
/* fills the NaN entries of v[0..n) that lie between two finite ones by linear interpolation over the index,
 * and those after the last finite one with it; NaNs before the first finite one stay (the sweep's machine
 * slowdown at each window from its control windows) */
void nr_fill_gaps(double *v, int n);
/* How well one thing repeats: the standard deviation of the finite entries of x[0..n) (in order) relative to
 * their mean, from successive differences (sqrt(sum (x[i+1] - x[i])^2 / (2 (m - 1)))), so that a slow drift
 * over the sequence adds little; NaN with fewer than 3. The sweep's controls (one plan's windows over a run):
 * an exact model would show a MAPE of about sqrt(2/pi) = 0.80 times this against windows that noisy */
double nr_repeat_sd(const double *x, int n);
/* sqrt(2/pi): E|e| / sd for normal e, the MAPE an exact model shows per unit of relative measurement noise */
#define NR_MAPE_PER_SD 0.7978845608
/* the part of an RMS error that noise of standard deviation sd does not explain, sqrt(rms^2 - sd^2) (0 where
 * the noise explains it all): the sweep's estimate of the cost model's own error */
double nr_noise_removed(double rms, double sd);
/* A sweep's held-out error with the machine's drift taken out ([planner] sweep_reference; run/sweep.c and
 * build/bench/sweep_refit). Its windows in run order, n of them: ref[w] the reference plan's median step
 * where it ran (its first window and the controls), NaN elsewhere; meas[w], pred[w] a held-out plan's
 * median and prediction, NaN elsewhere. slow[w] (out): the machine's slowdown, ref[w] / the first finite
 * ref, interpolated between the windows that have one (nr_fill_gaps). *mape, *worst: the mean and largest
 * |pred - meas / slow| / (meas / slow) over the held-out windows with a slowdown; returns how many (0:
 * *mape and *worst untouched) */
int nr_drift_corrected_error(const double *ref, const double *meas, const double *pred, int n, double *slow, double *mape,
                             double *worst);
/* bytes as "12.3 KiB" / "4.5 MiB" / "1.2 GiB" (B below 1 KiB) into buf; returns buf */
const char *nr_bytes_str(double bytes, char *buf, size_t len);
/* Keeps freed heap memory for reuse (glibc mallopt) instead of returning it to the kernel. The planner
 * on rank 0 builds and frees a few MiB of DAG and search arrays every time it prices or plans a
 * transition; with glibc's default, adapting thresholds those came back as fresh pages each time
 * (measured, 1,024-rank DAG: 78,000 page faults in 200 builds, 1.6-2.2 ms a build against 0.93-1.0 ms
 * with the memory kept). Model buffers are not affected (the CPU backend maps its own). Call once, early. */
void nr_heap_keep(void);
void *nr_xmalloc(size_t bytes);   /* aborts with the size on failure */
void *nr_xcalloc(size_t n, size_t size);
void *nr_xrealloc(void *p, size_t bytes); /* realloc, aborting with the size on failure */

/* a whole text file of at most max bytes, NUL-terminated, its length in *n; NULL with why (src/util/textfile.c) */
char *nr_read_text(const char *path, size_t max, size_t *n, char *why, size_t len);
/* A file written whole or not at all: write(f, ctx) fills PATH.tmp.PID (returns 0, or non-zero on a
 * failed write), which is flushed, synced, closed and renamed over path, so a failure (a full disk, a
 * file size limit) leaves no partial file under path and an earlier file of that name intact. 0, or -1
 * with why (the temporary removed). */
int nr_write_whole(const char *path, int (*write)(FILE *f, const void *ctx), const void *ctx, char *why, size_t len);
/* text and a newline written to path by nr_write_whole; 0, or -1 with why */
int nr_write_text(const char *path, const char *text, char *why, size_t len);
#define NR_MIN(a, b) ((a) < (b) ? (a) : (b))
#define NR_MAX(a, b) ((a) > (b) ? (a) : (b))

#endif
