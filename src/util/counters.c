/* counters.c — per-rank stage timers, PAPI counters where the machine has
 * them, and the calibrated GEMM peak (counters.h says what each measures).
 * The state is one static struct per process: PAPI itself keeps per-process
 * state, and the hooks must cost nothing while the counters are off. */
#include "nereus/counters.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef NEREUS_HAVE_PAPI
#include <papi.h>
#endif

#include "nereus/comm.h"
#include "nereus/util.h"

/* the reasons and notes are cut to their buffers on purpose */
#pragma GCC diagnostic ignored "-Wformat-truncation"

typedef struct RankStage {
    int ran;
    double start, end, seconds, t_in;
    double cpu, cpu_in;                        /* this thread's CPU seconds in the stage */
    long long at_in[COUNTERS_MAX_EVENTS];
    long long value[COUNTERS_MAX_EVENTS];
} RankStage;

static struct {
    int on;
    int nev;                                   /* events counted */
    char name[COUNTERS_MAX_EVENTS][COUNTERS_NAME_MAX];
    int papi_running;
#ifdef NEREUS_HAVE_PAPI
    int es;
#endif
    double t0;                                 /* this rank's step start */
    RankStage st[PLAN_NSTAGES];
} C;

int counters_on(void) { return C.on; }
int counters_nevents(void) { return C.nev; }
const char *counters_event(int i) { return i >= 0 && i < C.nev ? C.name[i] : NULL; }

/* "A, B,C" into names; returns the count or −1 with why */
static int parse_events(const char *s, char names[][COUNTERS_NAME_MAX], char *why, size_t len) {
    int n = 0;
    const char *p = s;
    while (*p == ' ' || *p == '\t') p++;
    if (!*p) return 0;
    for (;;) {
        const char *q = p;
        while (*q && *q != ',') q++;
        const char *a = p, *b = q;
        while (a < b && (*a == ' ' || *a == '\t')) a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t')) b--;
        if (a == b) {
            snprintf(why, len, "an empty event name in the list '%s'", s);
            return -1;
        }
        if (n == COUNTERS_MAX_EVENTS) {
            snprintf(why, len, "more than %d events in '%s'", COUNTERS_MAX_EVENTS, s);
            return -1;
        }
        if ((size_t)(b - a) >= COUNTERS_NAME_MAX) {
            snprintf(why, len, "event name '%.*s' longer than %d bytes", (int)(b - a), a, COUNTERS_NAME_MAX - 1);
            return -1;
        }
        for (const char *c = a; c < b; c++)
            if (*c == ' ' || *c == '\t') {
                snprintf(why, len, "event name '%.*s' contains a space", (int)(b - a), a);
                return -1;
            }
        for (int i = 0; i < n; i++)
            if (strlen(names[i]) == (size_t)(b - a) && memcmp(names[i], a, (size_t)(b - a)) == 0) {
                snprintf(why, len, "event '%.*s' listed twice", (int)(b - a), a);
                return -1;
            }
        memcpy(names[n], a, (size_t)(b - a));
        names[n][b - a] = 0;
        n++;
        if (!*q) break;
        p = q + 1;
    }
    return n;
}

#ifdef NEREUS_HAVE_PAPI
/* Adds the events whose ok[i] is set (want = 1) or tries all (want = 0,
 * filling ok[] and the first failure's reason). */
static void papi_add(char names[][COUNTERS_NAME_MAX], int n, int64_t *ok, int want, char *reason, size_t len) {
    for (int i = 0; i < n; i++) {
        if (want && !ok[i]) continue;
        int rc = PAPI_add_named_event(C.es, names[i]);
        if (!want) ok[i] = rc == PAPI_OK;
        if (rc != PAPI_OK && reason && !reason[0]) {
            char extra[300] = "";
            const PAPI_component_info_t *ci = PAPI_get_component_info(0);
            if (rc == PAPI_ECMP_DISABLED && ci && ci->disabled_reason[0])
                snprintf(extra, sizeof extra, ": %s", ci->disabled_reason);
            else if (access("/sys/bus/event_source/devices/cpu", F_OK) != 0)
                snprintf(extra, sizeof extra, "; no CPU PMU exposed: no /sys/bus/event_source/devices/cpu");
            snprintf(reason, len, "PAPI_add_event(%s): %s%s", names[i], PAPI_strerror(rc), extra);
        }
    }
}
#endif

int counters_init(MPI_Comm world, const char *events, char *note, size_t note_len, char *why, size_t why_len) {
    char names[COUNTERS_MAX_EVENTS][COUNTERS_NAME_MAX];
    int n = parse_events(events ? events : "", names, why, why_len);
    if (n < 0) return -1;
    memset(&C, 0, sizeof C);
    C.on = 1;
    if (n == 0) {
        snprintf(note, note_len, "counters: no PAPI events requested ([trace] papi_events); timers only");
        return 0;
    }
    int rank = comm_rank(world);
    char reason[512] = "";
    int64_t ok[COUNTERS_MAX_EVENTS] = {0};
#ifdef NEREUS_HAVE_PAPI
    int rc = PAPI_library_init(PAPI_VER_CURRENT);
    int lib = rc == PAPI_VER_CURRENT;
    if (!lib)
        snprintf(reason, sizeof reason, "PAPI_library_init: %s",
                 rc > 0 ? "the library's version differs from the headers'" : PAPI_strerror(rc));
    C.es = PAPI_NULL;
    if (lib && (rc = PAPI_create_eventset(&C.es)) != PAPI_OK) {
        snprintf(reason, sizeof reason, "PAPI_create_eventset: %s", PAPI_strerror(rc));
        lib = 0;
    }
    if (lib) papi_add(names, n, ok, 0, reason, sizeof reason);
#else
    snprintf(reason, sizeof reason, "this build has no PAPI: install libpapi-dev and rebuild");
#endif
    /* the events every rank could add */
    int64_t common[COUNTERS_MAX_EVENTS];
    memcpy(common, ok, sizeof common);
    comm_allreduce_min_i64(world, common, COUNTERS_MAX_EVENTS);
    int64_t differs = 0, kept = 0;
    for (int i = 0; i < n; i++) {
        differs |= common[i] != ok[i];
        kept += common[i] != 0;
    }
    /* the reason of the lowest rank that failed at something, for the note */
    int64_t who = reason[0] ? rank : INT32_MAX;
    comm_allreduce_min_i64(world, &who, 1);
    if (who != INT32_MAX) comm_bcast(world, reason, sizeof reason, (int)who);
#ifdef NEREUS_HAVE_PAPI
    if (lib) {
        if (differs) { /* another rank lacks an event this one has: count the common ones only */
            PAPI_cleanup_eventset(C.es);
            papi_add(names, n, common, 1, NULL, 0);
        }
        if (kept > 0 && (rc = PAPI_start(C.es)) != PAPI_OK) {
            snprintf(reason, sizeof reason, "PAPI_start: %s", PAPI_strerror(rc));
            kept = 0;
        }
    }
    int64_t started = kept > 0;
    comm_allreduce_min_i64(world, &started, 1);
    if (!started && kept > 0) { /* PAPI_start failed somewhere: nowhere then */
        PAPI_stop(C.es, NULL);
        kept = 0;
        if (!reason[0]) snprintf(reason, sizeof reason, "PAPI_start failed on another rank");
    }
    if (lib && kept == 0) {
        PAPI_cleanup_eventset(C.es);
        PAPI_destroy_eventset(&C.es);
    }
    C.papi_running = kept > 0;
#else
    (void)differs;
#endif
    for (int i = 0; i < n && kept > 0; i++)
        if (common[i]) snprintf(C.name[C.nev++], COUNTERS_NAME_MAX, "%s", names[i]);
    if (C.nev == 0) {
        snprintf(note, note_len, "counters: PAPI events unavailable here (%s); timers only", reason);
    } else {
        char list[COUNTERS_MAX_EVENTS * COUNTERS_NAME_MAX + 16] = "", miss[sizeof list] = "";
        for (int i = 0; i < n; i++) {
            char *dst = common[i] ? list : miss;
            size_t l = strlen(dst);
            snprintf(dst + l, sizeof list - l, "%s%s", l ? ", " : "", names[i]);
        }
        if (miss[0])
            snprintf(note, note_len, "counters: PAPI counting %s; unavailable here: %s (%s)", list, miss, reason);
        else
            snprintf(note, note_len, "counters: PAPI counting %s on every rank (its main thread)", list);
    }
    return 0;
}

void counters_finish(void) {
#ifdef NEREUS_HAVE_PAPI
    if (C.papi_running) {
        long long v[COUNTERS_MAX_EVENTS];
        PAPI_stop(C.es, v);
        PAPI_cleanup_eventset(C.es);
        PAPI_destroy_eventset(&C.es);
    }
#endif
    memset(&C, 0, sizeof C);
}

static void read_events(long long *v) {
#ifdef NEREUS_HAVE_PAPI
    if (C.papi_running && PAPI_read(C.es, v) == PAPI_OK) return;
#endif
    memset(v, 0, COUNTERS_MAX_EVENTS * sizeof *v);
}

/* the timers run whether or not the counters are on (the live planner reads them: counters_rank_last) */
void counters_step_begin(void) {
    memset(C.st, 0, sizeof C.st);
    C.t0 = nr_now();
}

void counters_rank_last(double *wall, double *cpu) {
    for (int k = 0; k < PLAN_NSTAGES; k++) {
        wall[k] = C.st[k].ran ? C.st[k].seconds : 0;
        cpu[k] = C.st[k].ran ? C.st[k].cpu : 0;
    }
}

void counters_stage_begin(int id) {
    if (id < 0 || id >= PLAN_NSTAGES) return;
    RankStage *s = &C.st[id];
    if (C.on) read_events(s->at_in);
    s->cpu_in = nr_thread_cpu();
    s->t_in = nr_now();
    if (!s->ran) s->start = s->t_in - C.t0;
}

static void (*stage_end_hook)(void);
void counters_set_stage_end_hook(void (*hook)(void)) { stage_end_hook = hook; }

void counters_stage_end(int id) {
    if (id < 0 || id >= PLAN_NSTAGES) return;
    if (stage_end_hook) stage_end_hook(); /* inside the stage: what it does counts as the stage's */
    RankStage *s = &C.st[id];
    double t = nr_now();
    long long v[COUNTERS_MAX_EVENTS];
    if (C.on) {
        read_events(v);
        for (int i = 0; i < C.nev; i++) s->value[i] += v[i] - s->at_in[i];
    }
    s->cpu += nr_thread_cpu() - s->cpu_in;
    s->seconds += t - s->t_in;
    s->end = t - C.t0;
    s->ran = 1;
}

void counters_step_reduce(MPI_Comm world, CounterStage *out) {
    enum { NT = 3 * PLAN_NSTAGES, NI = (1 + COUNTERS_MAX_EVENTS) * PLAN_NSTAGES };
    double t[NT];
    int64_t iv[NI];
    for (int k = 0; k < PLAN_NSTAGES; k++) {
        const RankStage *s = &C.st[k];
        /* max of −start is −(min start); a rank that did not run the stage takes no part */
        t[3 * k] = s->ran ? -s->start : -INFINITY;
        t[3 * k + 1] = s->ran ? s->end : -INFINITY;
        t[3 * k + 2] = s->ran ? s->seconds : 0;
        iv[k * (1 + COUNTERS_MAX_EVENTS)] = s->ran;
        for (int i = 0; i < COUNTERS_MAX_EVENTS; i++)
            iv[k * (1 + COUNTERS_MAX_EVENTS) + 1 + i] = s->ran && i < C.nev ? s->value[i] : 0;
    }
    comm_allreduce_max_f64(world, t, NT);
    comm_allreduce_sum_i64(world, iv, NI);
    for (int k = 0; k < PLAN_NSTAGES; k++) {
        CounterStage *o = &out[k];
        memset(o, 0, sizeof *o);
        o->nranks_ran = (int)iv[k * (1 + COUNTERS_MAX_EVENTS)];
        if (!o->nranks_ran) continue;
        o->start = -t[3 * k];
        o->end = t[3 * k + 1];
        o->seconds = t[3 * k + 2];
        for (int i = 0; i < COUNTERS_MAX_EVENTS; i++) o->value[i] = iv[k * (1 + COUNTERS_MAX_EVENTS) + 1 + i];
    }
}

/* ---- the idle probe ------------------------------------------------------------ */

static struct {
    const Backend *be;
    float *a, *b, *c;
    int n, cpu;      /* the GEMM's size; 1: the CPU backend (timed in thread CPU seconds) */
} Probe;

/* three N×N device buffers for a timed GEMM c = a·b: a and b filled with a fixed pattern in [−0.5, 0.5) */
static void gemm_operands(const Backend *be, int N, float **a, float **b, float **c) {
    size_t bytes = (size_t)N * N * sizeof(float);
    float *h = nr_xmalloc(bytes);
    for (size_t i = 0; i < (size_t)N * N; i++) h[i] = (float)((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
    *a = be->alloc(bytes), *b = be->alloc(bytes), *c = be->alloc(bytes);
    be->upload(*a, h, bytes);
    be->upload(*b, h, bytes);
    free(h);
}

/* the least of 3 timed N×N×N GEMMs c = a·b, each finished (a device backend's too) before its clock stops;
   clock: nr_now or nr_thread_cpu; hooked: each begun and ended by the stage-end hook, as a model-stage is
   (the idle probe: an injected slowdown's extra work in it, what came before not) */
static double gemm_best_s(const Backend *be, float *a, float *b, float *c, int N, double (*clock)(void), int hooked) {
    float one;
    double best = INFINITY;
    for (int k = 0; k < 3; k++) {
        if (hooked && stage_end_hook) stage_end_hook();
        double t0 = clock();
        be->matmul_forward(c, a, b, NULL, N, N, N);
        be->download(&one, c, sizeof one);
        if (hooked && stage_end_hook) stage_end_hook();
        double dt = clock() - t0;
        if (dt < best) best = dt;
    }
    return best;
}

double counters_probe(const Backend *be) {
    if (!Probe.a) {
        Probe.be = be;
        Probe.cpu = strcmp(be->name, "cpu") == 0;
        Probe.n = Probe.cpu ? 128 : 1024;
        gemm_operands(be, Probe.n, &Probe.a, &Probe.b, &Probe.c);
        be->matmul_forward(Probe.c, Probe.a, Probe.b, NULL, Probe.n, Probe.n, Probe.n); /* warm-up: pages, code */
    }
    return gemm_best_s(be, Probe.a, Probe.b, Probe.c, Probe.n, Probe.cpu ? nr_thread_cpu : nr_now, 1);
}

void counters_probe_free(void) {
    if (Probe.a) {
        Probe.be->free(Probe.a);
        Probe.be->free(Probe.b);
        Probe.be->free(Probe.c);
    }
    memset(&Probe, 0, sizeof Probe);
}

/* ---- the peak ---------------------------------------------------------------- */

/* best of 3 timed N×N×N GEMMs of the backend after one warm-up, GFLOP/s */
static double gemm_rate(const Backend *be, float *a, float *b, float *c, int N) {
    float one;
    be->matmul_forward(c, a, b, NULL, N, N, N);
    be->download(&one, c, sizeof one); /* a device backend finishes here */
    return 2.0 * N * N * (double)N / gemm_best_s(be, a, b, c, N, nr_now, 0) * 1e-9;
}

/* GEMMs back to back for at least `window` seconds, GFLOP/s over the window:
 * long enough that ranks sharing cores do overlap (a best-of over 3 ms
 * GEMMs would catch each rank in a moment when the others wait) */
static double gemm_window(const Backend *be, float *a, float *b, float *c, int N, double window) {
    float one;
    double t0 = nr_now(), t = t0;
    int k = 0;
    while (t - t0 < window) {
        be->matmul_forward(c, a, b, NULL, N, N, N);
        be->download(&one, c, sizeof one);
        k++;
        t = nr_now();
    }
    return 2.0 * N * N * (double)N * k / (t - t0) * 1e-9;
}

void counters_calibrate(MPI_Comm world, const Backend *be, CounterPeak *p) {
    int n = comm_size(world), rank = comm_rank(world);
    int N = strcmp(be->name, "cpu") == 0 ? 512 : 4096;
    float *a, *b, *c;
    gemm_operands(be, N, &a, &b, &c);
    memset(p, 0, sizeof *p);
    p->n = n;
    p->gemm_n = N;
    p->solo = nr_xcalloc((size_t)n, sizeof(double));
    p->together = nr_xcalloc((size_t)n, sizeof(double));
    p->solo_measured = n <= 64;
    if (p->solo_measured)
        for (int r = 0; r < n; r++) { /* one rank at a time; the others wait in a sleeping barrier */
            if (r == rank) p->solo[r] = gemm_rate(be, a, b, c, N);
            comm_barrier(world);
        }
    comm_barrier(world);
    p->together[rank] = gemm_window(be, a, b, c, N, 0.1);
    if (!p->solo_measured) p->solo[rank] = p->together[rank];
    comm_allreduce_sum_f64(world, p->solo, (size_t)n);
    comm_allreduce_sum_f64(world, p->together, (size_t)n);
    for (int r = 0; r < n; r++) p->together_sum += p->together[r];
    be->free(a);
    be->free(b);
    be->free(c);
}

void counters_peak_free(CounterPeak *p) {
    free(p->solo);
    free(p->together);
    memset(p, 0, sizeof *p);
}

double counters_peak_of(const CounterPeak *p, const PlanStage *s) {
    double solo = 0;
    for (int i = 0; i < s->nranks; i++)
        if (s->ranks[i] >= 0 && s->ranks[i] < p->n) solo += p->solo[s->ranks[i]];
    return NR_MIN(solo, p->together_sum);
}
