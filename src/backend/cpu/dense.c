/* dense.c — the pointwise and dense layers of the CPU backend: matmul (the
 * forward GEMM in the batch-invariant row-dot order of rowdot.c, the
 * backward GEMMs through OpenBLAS cblas_sgemm, row-major), GELU (tanh form,
 * as GPT-2) and the residual add. Backwards accumulate (+=) as backend.h says:
 * sgemm with beta = 1 into the gradient buffers, so no temporaries.
 */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "cpu_internal.h"

/* out (N, OC) = inp (N, IC) · weight (OC, IC)^T + bias (OC), batch-invariant (rowdot.c) */
static void cpu_matmul_forward(float *out, const float *inp, const float *weight,
                               const float *bias, int N, int IC, int OC) {
    if (N <= 0 || OC <= 0) return;
    cpu_rowdot(out, (size_t)OC, inp, weight, bias, N, IC, OC);
}

/* dinp (N,IC) += dout (N,OC) · weight (OC,IC); dweight (OC,IC) += dout^T · inp;
 * dbias (OC) += Σ_n dout[n] */
static void cpu_matmul_backward(float *dinp, float *dweight, float *dbias,
                                const float *dout, const float *inp, const float *weight,
                                int N, int IC, int OC) {
    if (N <= 0 || OC <= 0) return;
    if (IC > 0) {
        if (dinp)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, IC, OC,
                        1.0f, dout, OC, weight, IC, 1.0f, dinp, IC);
        if (dweight)
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, IC, N,
                        1.0f, dout, OC, inp, IC, 1.0f, dweight, IC);
    }
    if (dbias) {
        /* row by row: the inner loop runs over OC contiguous floats */
        for (int n = 0; n < N; n++) {
            const float *restrict d = dout + (size_t)n * OC;
            float *restrict db = dbias;
            for (int o = 0; o < OC; o++) db[o] += d[o];
        }
    }
}

#define GELU_SCALE 0.7978845608028654f /* sqrt(2/pi) */

/* out (N) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x³))) */
static void cpu_gelu_forward(float *out, const float *inp, size_t N) {
    float *o = out;
    const float *x = inp;
    #pragma omp parallel for schedule(static) if (N >= CPU_OMP_MIN)
    for (size_t i = 0; i < N; i++) {
        float xi = x[i];
        float cube = 0.044715f * xi * xi * xi;
        o[i] = 0.5f * xi * (1.0f + tanhf(GELU_SCALE * (xi + cube)));
    }
}

/* dinp (N) += gelu'(inp) · dout */
static void cpu_gelu_backward(float *dinp, const float *inp, const float *dout, size_t N) {
    /* no restrict: callers may pass dinp == dout (in-place); the loop is elementwise */
    float *dx = dinp;
    const float *x = inp;
    const float *dy = dout;
    #pragma omp parallel for schedule(static) if (N >= CPU_OMP_MIN)
    for (size_t i = 0; i < N; i++) {
        float xi = x[i];
        float cube = 0.044715f * xi * xi * xi;
        float arg = GELU_SCALE * (xi + cube);
        float th = tanhf(arg);
        float sech2 = 1.0f - th * th; /* = 1/cosh², without cosh overflow at large |x| */
        float local = 0.5f * (1.0f + th) +
                      0.5f * xi * sech2 * GELU_SCALE * (1.0f + 3.0f * 0.044715f * xi * xi);
        dx[i] += local * dy[i];
    }
}

/* out (N) = a + b; out may alias a or b (the loop is elementwise) */
static void cpu_residual_forward(float *out, const float *a, const float *b, size_t N) {
    #pragma omp parallel for schedule(static) if (N >= CPU_OMP_MIN)
    for (size_t i = 0; i < N; i++) out[i] = a[i] + b[i];
}

static void cpu_residual_backward(float *da, float *db, const float *dout, size_t N) {
    if (da) {
        float *d = da;
        const float *g = dout;
        for (size_t i = 0; i < N; i++) d[i] += g[i];
    }
    if (db) {
        float *d = db;
        const float *g = dout;
        for (size_t i = 0; i < N; i++) d[i] += g[i];
    }
}

void cpu_register_dense(Backend *be) {
    be->matmul_forward = cpu_matmul_forward;
    be->matmul_backward = cpu_matmul_backward;
    be->gelu_forward = cpu_gelu_forward;
    be->gelu_backward = cpu_gelu_backward;
    be->residual_forward = cpu_residual_forward;
    be->residual_backward = cpu_residual_backward;
}
