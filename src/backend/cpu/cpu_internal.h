/* cpu_internal.h — private glue of the CPU backend.
 *
 * Each file of src/backend/cpu/ keeps its kernels static and exposes one
 * cpu_register_<concern>(Backend *) that stores them into the Backend struct;
 * cpu.c calls all of them once to build backend_cpu(). The small vector
 * helpers below are shared by several files: they are written with several
 * independent accumulators so that gcc -O3 -march=native vectorises the
 * reductions without -ffast-math (a plain `s += a[i]*b[i]` loop is not
 * vectorised because float addition is not associative).
 */
#ifndef NEREUS_CPU_INTERNAL_H
#define NEREUS_CPU_INTERNAL_H

#include <stddef.h>
#include "nereus/backend.h"

/* Work (elements) below which a kernel stays on one thread: an OpenMP region
 * costs microseconds, which the tiny model's small ops cannot repay. */
#define CPU_OMP_MIN 32768

void cpu_register_memory(Backend *be);
void cpu_register_dense(Backend *be);
void cpu_register_decode(Backend *be);
void cpu_register_decode_bf16(Backend *be);
void cpu_register_norm(Backend *be);
void cpu_register_attention(Backend *be);
void cpu_register_llama(Backend *be);
void cpu_register_embed(Backend *be);
void cpu_register_heads(Backend *be);
void cpu_register_ppo(Backend *be);
void cpu_register_adamw(Backend *be);

/* out (N, ldo), first OC columns = x (N, IC) · w (OC, IC)^T + bias (OC) (bias may be NULL), each output in the
   row-dot order (rowdot.c): its bits depend on its own rows of x and w only, on every kernel path */
void cpu_rowdot(float *out, size_t ldo, const float *x, const float *w, const float *bias, int N, int IC, int OC);
/* the end of the row-dot order: the 16 lanes acc by the fixed tree, then columns [i, IC) of x·w in order */
float cpu_rowdot_finish(const float acc[16], const float *x, const float *w, int i, int IC);

/* Σ a[i]·b[i] over n floats, 16 partial sums (two AVX2 / one AVX-512 register) */
static inline float cpu_dot(const float *restrict a, const float *restrict b, int n) {
    float acc[16] = {0};
    int i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) acc[j] += a[i + j] * b[i + j];
    float s = 0.0f;
    for (int j = 0; j < 16; j++) s += acc[j];
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

/* y (n) += alpha·x (n) */
static inline void cpu_axpy(float *restrict y, float alpha, const float *restrict x, int n) {
    for (int i = 0; i < n; i++) y[i] += alpha * x[i];
}

/* Σ x[i] over n floats, 16 partial sums */
static inline float cpu_sum(const float *restrict x, int n) {
    float acc[16] = {0};
    int i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) acc[j] += x[i + j];
    float s = 0.0f;
    for (int j = 0; j < 16; j++) s += acc[j];
    for (; i < n; i++) s += x[i];
    return s;
}

#endif
