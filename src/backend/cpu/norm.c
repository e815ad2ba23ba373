/* norm.c — LayerNorm (llm.c layernorm_forward/backward) and RMSNorm
 * (transformers' LlamaRMSNorm) of the CPU backend. LayerNorm statistics are
 * two-pass (mean, then the variance of the deviations) in float with
 * vectorised partial sums; mean and rstd are saved per row for the backward,
 * which accumulates into dinp, dweight and dbias. RMSNorm rows sit in the
 * strided layout of backend.h (row (n, h) at n·ld + h·C), so Qwen3's QK-norm
 * reads the heads of packed QKV rows in place.
 */
#include <math.h>

#include "cpu_internal.h"

#define LN_EPS 1e-5f

/* out, inp (N, C); weight, bias (C); mean, rstd (N) */
static void cpu_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                                  const float *weight, const float *bias, int N, int C) {
#pragma omp parallel for schedule(static) if ((size_t)N * C >= CPU_OMP_MIN)
    for (int n = 0; n < N; n++) {
        const float *restrict x = inp + (size_t)n * C;
        float *restrict o = out + (size_t)n * C;
        float m = cpu_sum(x, C) / (float)C;
        float acc[16] = {0};
        int i = 0;
        for (; i + 16 <= C; i += 16)
            for (int j = 0; j < 16; j++) {
                float d = x[i + j] - m;
                acc[j] += d * d;
            }
        float v = 0.0f;
        for (int j = 0; j < 16; j++) v += acc[j];
        for (; i < C; i++) v += (x[i] - m) * (x[i] - m);
        v /= (float)C;
        float s = 1.0f / sqrtf(v + LN_EPS);
        for (int c = 0; c < C; c++) o[c] = (x[c] - m) * s * weight[c] + bias[c];
        if (mean) mean[n] = m;
        if (rstd) rstd[n] = s;
    }
}

static void cpu_layernorm_backward(float *dinp, float *dweight, float *dbias,
                                   const float *dout, const float *inp, const float *weight,
                                   const float *mean, const float *rstd, int N, int C) {
    for (int n = 0; n < N; n++) {
        const float *restrict dy = dout + (size_t)n * C;
        const float *restrict x = inp + (size_t)n * C;
        const float *restrict w = weight;
        float m = mean[n], s = rstd[n];

        /* two reductions: mean of dnorm and mean of dnorm·norm, dnorm = w·dy */
        float a1[16] = {0}, a2[16] = {0};
        int i = 0;
        for (; i + 16 <= C; i += 16)
            for (int j = 0; j < 16; j++) {
                float norm = (x[i + j] - m) * s;
                float dn = w[i + j] * dy[i + j];
                a1[j] += dn;
                a2[j] += dn * norm;
            }
        float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
        for (int j = 0; j < 16; j++) {
            dnorm_mean += a1[j];
            dnorm_norm_mean += a2[j];
        }
        for (; i < C; i++) {
            float norm = (x[i] - m) * s;
            float dn = w[i] * dy[i];
            dnorm_mean += dn;
            dnorm_norm_mean += dn * norm;
        }
        dnorm_mean /= (float)C;
        dnorm_norm_mean /= (float)C;

        if (dbias) {
            float *restrict db = dbias;
            for (int c = 0; c < C; c++) db[c] += dy[c];
        }
        if (dweight) {
            float *restrict dw = dweight;
            for (int c = 0; c < C; c++) dw[c] += (x[c] - m) * s * dy[c];
        }
        if (dinp) {
            float *restrict dx = dinp + (size_t)n * C;
            for (int c = 0; c < C; c++) {
                float norm = (x[c] - m) * s;
                float dn = w[c] * dy[c];
                dx[c] += (dn - dnorm_mean - norm * dnorm_norm_mean) * s;
            }
        }
    }
}

/* out, inp: N·H rows of C, row (n, h) at n·ld + h·C; weight (C); rstd (N·H) */
static void cpu_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *weight,
                                int N, int H, int C, int ld, float eps) {
#pragma omp parallel for schedule(static) if ((size_t)N * H * C >= CPU_OMP_MIN)
    for (int r = 0; r < N * H; r++) {
        const size_t off = (size_t)(r / H) * ld + (size_t)(r % H) * C;
        const float *restrict x = inp + off;
        float *restrict o = out + off;
        float s = 1.0f / sqrtf(cpu_dot(x, x, C) / (float)C + eps);
        for (int c = 0; c < C; c++) o[c] = x[c] * s * weight[c];
        if (rstd) rstd[r] = s;
    }
}

/* y = x·s·w, s = (Σx²/C + eps)^-1/2: dx = s·w·dy − x·s³·(Σ w·dy·x)/C, dw += x·s·dy */
static void cpu_rmsnorm_backward(float *dinp, float *dweight, const float *dout, const float *inp,
                                 const float *weight, const float *rstd, int N, int H, int C, int ld) {
    for (int r = 0; r < N * H; r++) {
        const size_t off = (size_t)(r / H) * ld + (size_t)(r % H) * C;
        const float *restrict dy = dout + off;
        const float *restrict x = inp + off;
        const float s = rstd[r];
        if (dweight) {
            float *restrict dw = dweight;
            for (int c = 0; c < C; c++) dw[c] += x[c] * s * dy[c];
        }
        if (dinp) {
            float acc[16] = {0}, dot = 0.0f;
            int i = 0;
            for (; i + 16 <= C; i += 16)
                for (int j = 0; j < 16; j++) acc[j] += weight[i + j] * dy[i + j] * x[i + j];
            for (int j = 0; j < 16; j++) dot += acc[j];
            for (; i < C; i++) dot += weight[i] * dy[i] * x[i];
            const float k = dot / (float)C * s * s;
            float *restrict dx = dinp + off;
            for (int c = 0; c < C; c++) dx[c] += (weight[c] * dy[c] - x[c] * k) * s;
        }
    }
}

void cpu_register_norm(Backend *be) {
    be->layernorm_forward = cpu_layernorm_forward;
    be->layernorm_backward = cpu_layernorm_backward;
    be->rmsnorm_forward = cpu_rmsnorm_forward;
    be->rmsnorm_backward = cpu_rmsnorm_backward;
}
