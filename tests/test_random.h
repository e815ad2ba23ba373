/* test_random.h — what the transition tests draw their random cases from:
 * one xorshift64 stream per test program (test_rng: assign a seed before
 * the first draw; every MPI rank of a test draws the same stream), a
 * Fisher–Yates shuffle, and random EMU degrees. */
#ifndef NEREUS_TESTS_RANDOM_H
#define NEREUS_TESTS_RANDOM_H

#include <stdint.h>

#include "nereus/plan.h"

static uint64_t test_rng = 0x9E3779B97F4A7C15ull;

/* uniform-ish in 0 .. n-1 */
static inline int rnd(int n) {
    test_rng ^= test_rng << 13;
    test_rng ^= test_rng >> 7;
    test_rng ^= test_rng << 17;
    return (int)(test_rng % (uint64_t)n);
}

static inline void shuffle(int *p, int n) {
    for (int i = n - 1; i > 0; i--) {
        int j = rnd(i + 1), t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
}

/* tp and pp from {1, 2, 4, 8}[0 .. ndeg) with tp·pp ≤ nranks, then dp in
 * 1 .. nranks / (tp·pp); sets nranks = tp·pp·dp and src = deck, not the ranks */
static inline void random_degrees(PlanStage *s, int nranks, int ndeg) {
    static const int deg[4] = {1, 2, 4, 8};
    do {
        s->tp = deg[rnd(ndeg)];
        s->pp = deg[rnd(ndeg)];
    } while (s->tp * s->pp > nranks);
    s->dp = 1 + rnd(nranks / (s->tp * s->pp));
    s->nranks = s->tp * s->pp * s->dp;
    s->src = PLAN_SRC_DECK;
}

#endif
