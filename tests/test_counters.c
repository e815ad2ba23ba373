/* test_counters.c — the idle probe (counters.h: counters_probe) on the CPU
 * backend, no MPI. What the live planner reads from a rank without work
 * must show that rank's speed and nothing else:
 *   - it reads a positive, finite number of CPU seconds, about the same
 *     each time;
 *   - with an INJECTED 4x slowdown in force on this rank (the real hooks of
 *     inject.c: [inject] slow_ranks = 0, slow_factor = 4) it reads about 4x
 *     what it reads without, and 1x again once the slowdown ends;
 *   - work the rank did before the probe (which the slowdown's hook charges
 *     when the probe begins) is not in it (the hook run before each GEMM
 *     and the least of three both keep it out; removing either alone still
 *     passes, removing both fails).
 * Each reading is the median of 7 probes (each itself the least of 3 GEMMs). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "nereus/backend.h"
#include "nereus/counters.h"
#include "nereus/deck.h"
#include "nereus/inject.h"
#include "nereus/util.h"

static double median_probe(const Backend *be) {
    double v[7];
    for (int k = 0; k < 7; k++) v[k] = counters_probe(be);
    return nr_median(v, 7);
}

/* `seconds` of this thread's CPU time in plain arithmetic (the rank's own work before a probe) */
static double spin(double seconds) {
    volatile double x = 1;
    double end = nr_thread_cpu() + seconds;
    while (nr_thread_cpu() < end)
        for (int i = 0; i < 1000; i++) x = x * 1.0000001 + 1e-9;
    return x;
}

int main(void) {
    const Backend *be = backend_cpu();
    /* one thread, as bin/nereus runs (run.c: [run] blas_threads, default 1): with the OpenMP default of one per
       core, the probe's thread spun at the GEMM's barrier while the other core was busy, and read 90x (a CI run,
       2026-12-05) */
    be->set_threads(1);
    double a = median_probe(be), b = median_probe(be);
    CHECK(isfinite(a) && a > 0 && a < 0.01 && b > 0 && fabs(a / b - 1) < 0.5,
          "the probe reads a few CPU microseconds, the same twice: %.1f and %.1f us", a * 1e6, b * 1e6);

    static const char deck[] = "[model]\nn_layer = 2\nn_embd = 32\nn_head = 4\nmax_seq = 16\n[task]\nnames = reverse\n"
                               "[ppo]\nsteps = 4\n[inject]\nslow_ranks = 0\nslow_factor = 4\nslow_step = 1\nslow_until = 3\n";
    Config cfg;
    Deck *d = NULL;
    int rc = deck_parse_string("probe.deck", deck, strlen(deck), &cfg, &d, 1);
    Injector in;
    const char *key = "";
    char why[256] = "";
    snprintf(why, sizeof why, "%s", rc && d ? deck_last_error(d) : "");
    if (rc == 0) rc = inject_init(&in, &cfg, 1, 0, &key, why, sizeof why);
    CHECK(rc == 0, "an injector slowing rank 0 4x from step 1 to step 2 (%s)", rc ? why : "set");
    deck_free(d);
    if (rc != 0) return CHECK_DONE();
    inject_begin_step(&in, 0, NULL);
    double before = median_probe(be);
    inject_begin_step(&in, 1, NULL); /* the slowdown in force: the stage-end hook does 3x the work again */
    double slowed = median_probe(be);
    spin(0.02); /* work before the probe: charged (3 x 20 ms) by the hook as the probe begins, outside it */
    double t0 = nr_thread_cpu();
    double after_work = counters_probe(be);
    double whole = nr_thread_cpu() - t0;
    inject_begin_step(&in, 3, NULL); /* the slowdown over */
    double again = median_probe(be);
    inject_free(&in);
    /* against the faster of the unslowed readings: a core shared with another process can slow one of them
       (the slowed reading 3.00x its `before`, 4.18x its `again`, with a build beside it) */
    double base = fmin(before, again);
    CHECK(slowed / base > 3 && slowed / base < 6,
          "an INJECTED 4x slowdown reads %.2fx in the probe (%.1f against %.1f us, the faster unslowed reading)",
          slowed / base, slowed * 1e6, base * 1e6);
    CHECK(after_work < 0.5 * 0.06 && whole > 0.06,
          "20 ms of work before the probe is not in it: it read %.1f us while the call took %.1f ms of CPU (the "
          "hook's 60 ms for the work before it included)", after_work * 1e6, whole * 1e3);
    CHECK(again / before > 0.5 && again / before < 2,
          "once the slowdown ends the probe reads %.2fx again (%.1f us)", again / before, again * 1e6);
    counters_probe_free();
    return CHECK_DONE();
}
