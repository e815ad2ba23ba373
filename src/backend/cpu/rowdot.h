/* rowdot.h — the end of the row-dot order (rowdot.c) for the vector kernels:
 * the 16 lanes held as two vectors of 8 (lanes 0-7, 8-15) summed by the fixed
 * tree in vector registers, then the leftover columns. The same adds as the
 * scalar cpu_rowdot_finish, so every path gets the same bits. Private to the
 * CPU backend (rowdot.c, decode.c). */
#ifndef NEREUS_CPU_ROWDOT_H
#define NEREUS_CPU_ROWDOT_H

#include <math.h>
#include <string.h>

typedef float v8 __attribute__((vector_size(32)));
typedef float v4 __attribute__((vector_size(16)));

static inline v8 ld8(const float *p) {
    v8 v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* (lo + hi), then its halves, then (h0 + h2) + (h1 + h3); then columns [i, IC) of x·w, each a fused
   multiply-add, in order */
static inline __attribute__((always_inline)) float rowdot_end(v8 lo, v8 hi, const float *x, const float *w, int i,
                                                              int IC) {
    v8 t = lo + hi;
    v4 h = __builtin_shufflevector(t, t, 0, 1, 2, 3) + __builtin_shufflevector(t, t, 4, 5, 6, 7);
    v4 p = h + __builtin_shufflevector(h, h, 2, 3, 2, 3);
    float s = p[0] + p[1];
    for (int k = i; k < IC; k++) s = fmaf(x[k], w[k], s);
    return s;
}

#endif
