/* util.c — local-error reporting, rank-0 logging, monotonic time, the
 * counter-based RNG, the order-free checksum and checked allocation (see util.h for the contracts). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "nereus/util.h"
#include "nereus/comm.h" /* nr_world, nr_set_world: declared there, kept here */

#include <malloc.h>
#include <sched.h>
#include <math.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

static MPI_Comm world_comm = MPI_COMM_NULL; /* NULL: MPI_COMM_WORLD */

MPI_Comm nr_world(void) { return world_comm == MPI_COMM_NULL ? MPI_COMM_WORLD : world_comm; }
void nr_set_world(MPI_Comm c) { world_comm = c; }

void nr_mpi_singleton_isolated(void) {
    static const char *launched[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", NULL};
    for (int i = 0; launched[i]; i++)
        if (getenv(launched[i])) return;
    setenv("OMPI_MCA_ess_singleton_isolated", "1", 0); /* an environment's own setting wins */
}

int nr_rank(void) {
    int init = 0, fin = 0, r = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (init && !fin) MPI_Comm_rank(nr_world(), &r);
    return r;
}

static void (*mpi_fail_hook)(int err, const char *call, const char *file, int line);
void nr_set_mpi_fail_hook(void (*hook)(int err, const char *call, const char *file, int line)) { mpi_fail_hook = hook; }

void nr_fatal_at(const char *file, int line, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "nereus: rank %d: fatal: %s (%s:%d)\n", nr_rank(), msg, file, line);
    fflush(stderr);
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (init && !fin) MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

void nr_mpi_fail(int err, const char *call, const char *file, int line) {
    if (mpi_fail_hook) mpi_fail_hook(err, call, file, line); /* returns where it is no failed rank */
    char s[MPI_MAX_ERROR_STRING];
    int n = 0;
    if (MPI_Error_string(err, s, &n) != MPI_SUCCESS) snprintf(s, sizeof s, "error %d", err);
    nr_fatal_at(file, line, "%s failed: %s", call, s);
}

static int quiet;
void nr_set_quiet(int q) { quiet = q; }

void nr_log(const char *fmt, ...) {
    if (nr_rank() != 0 || quiet) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fflush(stdout);
}

void nr_warn(const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "nereus: rank %d: warning: %s\n", nr_rank(), msg);
    fflush(stderr);
}

int nr_cores_allowed(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

double nr_fs_free_bytes(const char *path) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == dir) dir[1] = 0;
    else *slash = 0;
    struct statvfs v;
    if (statvfs(dir, &v) != 0) return -1;
    return (double)v.f_bavail * (double)v.f_frsize;
}

double nr_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double nr_thread_cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* SplitMix64 finaliser: a bijective 64-bit mixer with full avalanche. */
static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* One pass over every byte a checkpoint writes or reads (and a transition verifies): the build's target
   (x86-64-v3, AVX2) has no 64-bit vector multiply, so mix64 vectorised is slow there; a clone for
   x86-64-v4 (AVX-512DQ), picked at load time where the CPU has it, runs about twice as fast. The same value
   either way. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
__attribute__((target_clones("arch=x86-64-v4", "default")))
#endif
uint64_t nr_cksum_f32(const float *x, size_t n, uint64_t k0) {
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t b;
        memcpy(&b, &x[i], sizeof b);
        s += mix64(((k0 + i) << 32) + b);
    }
    return s;
}

uint64_t nr_cksum_combine(const uint64_t *h, int n) {
    uint64_t s = 0;
    for (int i = 0; i < n; i++) s = mix64(s + h[i] + (uint64_t)i);
    return s;
}

/* the smallest limit in FILE (memory.max or memory.limit_in_bytes) from base + path up to base; INFINITY: none */
static double cgroup_limit_up(const char *base, const char *path, const char *file) {
    char dir[4096], f[4200];
    double lim = INFINITY;
    snprintf(dir, sizeof dir, "%s%s", base, path);
    for (;;) {
        snprintf(f, sizeof f, "%s/%s", dir, file);
        FILE *fp = fopen(f, "r");
        if (fp) {
            char v[64] = "";
            if (fgets(v, sizeof v, fp) && strncmp(v, "max", 3) != 0) {
                double x = strtod(v, NULL);
                if (x > 0 && x < 4e18 && x < lim) lim = x; /* v1 writes ~2^63 for "no limit" */
            }
            fclose(fp);
        }
        char *slash = strrchr(dir, '/');
        if (!slash || (size_t)(slash - dir) < strlen(base)) break;
        *slash = 0;
    }
    return lim;
}

double nr_node_memory(int *limited) {
    double phys = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE), lim = INFINITY;
    FILE *fp = fopen("/proc/self/cgroup", "r");
    if (fp) {
        char line[4096];
        while (fgets(line, sizeof line, fp)) { /* "0::/path" (v2), "N:memory:/path" (v1) */
            line[strcspn(line, "\n")] = 0;
            char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;
            if (!b) continue;
            const char *path = strcmp(b + 1, "/") == 0 ? "" : b + 1;
            if (b == a + 1) { /* v2 (hybrid systems mount it at unified/) */
                lim = fmin(lim, cgroup_limit_up("/sys/fs/cgroup", path, "memory.max"));
                lim = fmin(lim, cgroup_limit_up("/sys/fs/cgroup/unified", path, "memory.max"));
            } else if (strstr(a, ":memory:") == a || strstr(a, ",memory:") || strstr(a, ":memory,")) {
                lim = fmin(lim, cgroup_limit_up("/sys/fs/cgroup/memory", path, "memory.limit_in_bytes"));
            }
        }
        fclose(fp);
    }
    if (limited) *limited = lim < phys;
    return lim < phys ? lim : phys;
}

#define FNV_BASIS 0xcbf29ce484222325ULL
static uint64_t fnv_str(uint64_t h, const char *s) {
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return h;
}

uint64_t nr_cksum_str(const char *s) { return fnv_str(FNV_BASIS, s); }

uint64_t nr_cksum_strs(const char *const *s, int n) {
    uint64_t h = FNV_BASIS;
    for (int i = 0; i < n; i++) h = fnv_str(h, s[i] ? s[i] : "") * 0x100000001b3ULL; /* then its NUL (h ^ 0) */
    return h;
}

uint64_t rng_u64(uint64_t seed, uint64_t stream, uint64_t a, uint64_t b) {
    /* chain the key words through the mixer so (a, b) and (b, a) differ */
    uint64_t h = mix64(seed + 0x9e3779b97f4a7c15ULL);
    h = mix64(h ^ (stream * 0xd1b54a32d192ed03ULL));
    h = mix64(h ^ (a + 0x632be59bd9b4e019ULL));
    h = mix64(h ^ (b * 0x8cb92ba72f3d8dd7ULL + 0x2545f4914f6cdd1dULL));
    return h;
}

float rng_uniform(uint64_t seed, uint64_t stream, uint64_t a, uint64_t b) {
    return (float)(rng_u64(seed, stream, a, b) >> 40) * (1.0f / 16777216.0f);
}

float rng_normal(uint64_t seed, uint64_t stream, uint64_t a, uint64_t b) {
    uint64_t h = rng_u64(seed, stream, a, b);
    double u1 = ((double)(h >> 11) + 1.0) * (1.0 / 9007199254740993.0); /* (0, 1] */
    double u2 = (double)(mix64(h) >> 11) * (1.0 / 9007199254740992.0);  /* [0, 1) */
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

int rng_below(uint64_t seed, uint64_t stream, uint64_t a, uint64_t b, int n) {
    return (int)(((rng_u64(seed, stream, a, b) >> 32) * (uint64_t)n) >> 32);
}

void nr_heap_keep(void) {
    /* fixed thresholds (mallopt turns the dynamic ones off): freed blocks under 32 MiB go back to the heap,
       and the heap keeps up to 256 MiB free at its top instead of giving it back to the kernel */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

void *nr_xmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) nr_fatal("out of memory allocating %zu bytes", bytes);
    return p;
}

void *nr_xrealloc(void *p, size_t bytes) {
    void *q = realloc(p, bytes ? bytes : 1);
    if (!q) nr_fatal("out of memory growing a buffer to %zu bytes", bytes);
    return q;
}

void *nr_xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) nr_fatal("out of memory allocating %zu x %zu bytes", n, size);
    return p;
}

int nr_fail(char *why, size_t len, const char *fmt, ...) {
    if (why && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, len, fmt, ap);
        va_end(ap);
    }
    return -1;
}

const char *nr_bytes_str(double b, char *buf, size_t len) {
    static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (fabs(b) >= 1024.0 && u < 4) b /= 1024.0, u++;
    if (u == 0) snprintf(buf, len, "%.0f B", b);
    else snprintf(buf, len, "%.1f %s", b, unit[u]);
    return buf;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double nr_median(double *v, int n) {
    if (n <= 0) return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void nr_fill_gaps(double *v, int n) {
    int a = -1; /* the last finite entry */
    for (int i = 0; i < n; i++) {
        if (!isfinite(v[i])) continue;
        for (int k = a + 1; a >= 0 && k < i; k++) v[k] = v[a] + (v[i] - v[a]) * (k - a) / (double)(i - a);
        a = i;
    }
    for (int k = a + 1; a >= 0 && k < n; k++) v[k] = v[a];
}

double nr_repeat_sd(const double *x, int n) {
    double prev = NAN, sum = 0, d2 = 0;
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(x[i])) continue;
        if (m > 0) d2 += (x[i] - prev) * (x[i] - prev);
        sum += x[i];
        prev = x[i];
        m++;
    }
    if (m < 3 || !(sum > 0)) return NAN;
    return sqrt(d2 / (2.0 * (m - 1))) / (sum / m);
}

double nr_noise_removed(double rms, double sd) { return rms > sd ? sqrt(rms * rms - sd * sd) : 0; }

int nr_drift_corrected_error(const double *ref, const double *meas, const double *pred, int n, double *slow, double *mape,
                             double *worst) {
    double base = NAN;
    for (int w = 0; w < n && !isfinite(base); w++)
        if (isfinite(ref[w]) && ref[w] > 0) base = ref[w];
    for (int w = 0; w < n; w++) slow[w] = isfinite(base) && isfinite(ref[w]) && ref[w] > 0 ? ref[w] / base : NAN;
    nr_fill_gaps(slow, n);
    double sum = 0, most = 0;
    int k = 0;
    for (int w = 0; w < n; w++) {
        if (!isfinite(meas[w]) || !isfinite(pred[w]) || !isfinite(slow[w]) || !(meas[w] > 0)) continue;
        double m = meas[w] / slow[w], e = fabs(pred[w] - m) / m;
        sum += e;
        most = fmax(most, e);
        k++;
    }
    if (k) *mape = sum / k, *worst = most;
    return k;
}
