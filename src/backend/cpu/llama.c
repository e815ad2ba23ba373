/* llama.c — the Llama / Qwen-family pointwise kernels of the CPU backend:
 * rotary position embedding (transformers' rotate_half convention) and
 * SwiGLU. RoPE forms cos and sin of the float32 angle p·inv_freq[i] as
 * transformers' LlamaRotaryEmbedding does and rotates each (i, i + hs/2)
 * pair of every head in place; the backward rotates the gradient by the
 * opposite angle (the transposed rotation). SwiGLU is silu(gate)·up over
 * rows [gate (F) | up (F)], with silu(g) = g / (1 + e^−g) as torch computes it.
 */
#include <math.h>

#include "cpu_internal.h"

/* x (B, T, ld): heads 0..NH-1 of each row rotated by +angle (sign 1) or −angle (sign −1) */
static void cpu_rope_rotate(float *x, const float *inv_freq, int B, int T, int NH, int hs, int ld,
                            int pos0, float sign) {
    const int half = hs / 2;
#pragma omp parallel for collapse(2) schedule(static) if ((size_t)B * T * NH * hs >= CPU_OMP_MIN)
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const float p = (float)(pos0 + t);
            float *row = x + ((size_t)b * T + t) * ld;
            for (int i = 0; i < half; i++) {
                const float a = p * inv_freq[i];
                const float c = cosf(a), s = sign * sinf(a);
                for (int h = 0; h < NH; h++) {
                    float *v = row + (size_t)h * hs;
                    const float x1 = v[i], x2 = v[i + half];
                    v[i] = x1 * c - x2 * s;
                    v[i + half] = x2 * c + x1 * s;
                }
            }
        }
}

static void cpu_rope_forward(float *x, const float *inv_freq, int B, int T, int NH, int hs, int ld,
                             int pos0) {
    cpu_rope_rotate(x, inv_freq, B, T, NH, hs, ld, pos0, 1.0f);
}

static void cpu_rope_backward(float *dx, const float *inv_freq, int B, int T, int NH, int hs, int ld,
                              int pos0) {
    cpu_rope_rotate(dx, inv_freq, B, T, NH, hs, ld, pos0, -1.0f);
}

/* out (N, F) = silu(gate)·up, inp (N, 2F) */
static void cpu_swiglu_forward(float *out, const float *inp, int N, int F) {
#pragma omp parallel for schedule(static) if ((size_t)N * F >= CPU_OMP_MIN)
    for (int n = 0; n < N; n++) {
        const float *restrict g = inp + (size_t)n * 2 * F, *restrict u = g + F;
        float *restrict o = out + (size_t)n * F;
        for (int i = 0; i < F; i++) o[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
    }
}

/* dgate += dy·up·σ(g)·(1 + g·(1 − σ(g))), dup += dy·silu(g) */
static void cpu_swiglu_backward(float *dinp, const float *dout, const float *inp, int N, int F) {
#pragma omp parallel for schedule(static) if ((size_t)N * F >= CPU_OMP_MIN)
    for (int n = 0; n < N; n++) {
        const float *restrict g = inp + (size_t)n * 2 * F, *restrict u = g + F;
        const float *restrict dy = dout + (size_t)n * F;
        float *restrict dg = dinp + (size_t)n * 2 * F, *restrict du = dg + F;
        for (int i = 0; i < F; i++) {
            const float sig = 1.0f / (1.0f + expf(-g[i]));
            dg[i] += dy[i] * u[i] * sig * (1.0f + g[i] * (1.0f - sig));
            du[i] += dy[i] * g[i] * sig;
        }
    }
}

void cpu_register_llama(Backend *be) {
    be->rope_forward = cpu_rope_forward;
    be->rope_backward = cpu_rope_backward;
    be->swiglu_forward = cpu_swiglu_forward;
    be->swiglu_backward = cpu_swiglu_backward;
}
