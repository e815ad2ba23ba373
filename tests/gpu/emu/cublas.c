/* cublas.c — the cuBLAS stand-in of the CPU emulation (include/cublas_v2.h):
 * a column-major reference SGEMM. It is deliberately independent of the CPU
 * backend's OpenBLAS (the oracle parity compares against): plain loops, each
 * dot product accumulated in double. It checks its arguments as cuBLAS does
 * (the handle, m, n, k ≥ 0, lda ≥ rows of A as stored, ldb, ldc likewise)
 * and answers CUBLAS_STATUS_INVALID_VALUE otherwise, so the backend's
 * cublasCheck stops the run with the call in the message. Under
 * CUBLAS_TF32_TENSOR_OP_MATH the operands are rounded to TF32, so parity's
 * TF32 probe (x = 1 + 2^-12 reads as 1) sees what a tensor core does.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cublas_v2.h"

struct CuEmuCublas {
    cublasMath_t math;
};

cublasStatus_t cublasCreate(cublasHandle_t *handle) {
    *handle = calloc(1, sizeof **handle);
    return *handle ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (mode != CUBLAS_DEFAULT_MATH && mode != CUBLAS_TF32_TENSOR_OP_MATH) return CUBLAS_STATUS_INVALID_VALUE;
    handle->math = mode;
    return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusName(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    }
    return "CUBLAS_STATUS_UNKNOWN";
}

const char *cublasGetStatusString(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized (emulated cuBLAS)";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid value was used as an argument (emulated cuBLAS)";
    }
    return "unknown status (emulated cuBLAS)";
}

/* fp32 → TF32: keep 10 mantissa bits, rounding to nearest (ties away from
 * zero, as the PTX cvt.rna.tf32.f32); Inf and NaN unchanged */
static float to_tf32(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & ~0x1fffu;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* op(X) (rows, k) copied row-contiguous: out[r·k + p] = op(X)[r, p] */
static float *gather(const float *X, int ld, cublasOperation_t op, int rows, int k, int tf32) {
    float *out = malloc((size_t)rows * k * sizeof(float) + 1);
    if (!out) abort();
    for (int r = 0; r < rows; r++)
        for (int p = 0; p < k; p++) {
            float x = op == CUBLAS_OP_N ? X[r + (size_t)p * ld] : X[p + (size_t)r * ld];
            out[(size_t)r * k + p] = tf32 ? to_tf32(x) : x;
        }
    return out;
}

static double dot(const float *a, const float *b, int k) {
    double s[4] = {0, 0, 0, 0};
    int p = 0;
    for (; p + 4 <= k; p += 4)
        for (int l = 0; l < 4; l++) s[l] += (double)a[p + l] * b[p + l];
    for (; p < k; p++) s[0] += (double)a[p] * b[p];
    return (s[0] + s[1]) + (s[2] + s[3]);
}

cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                           int n, int k, const float *alpha, const float *A, int lda, const float *B, int ldb,
                           const float *beta, float *C, int ldc) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    const int a_rows = transa == CUBLAS_OP_N ? m : k, b_rows = transb == CUBLAS_OP_N ? k : n;
    if ((transa != CUBLAS_OP_N && transa != CUBLAS_OP_T) || (transb != CUBLAS_OP_N && transb != CUBLAS_OP_T) ||
        m < 0 || n < 0 || k < 0 || lda < (a_rows > 1 ? a_rows : 1) || ldb < (b_rows > 1 ? b_rows : 1) ||
        ldc < (m > 1 ? m : 1))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
    const int tf32 = handle->math == CUBLAS_TF32_TENSOR_OP_MATH;
    float *a = gather(A, lda, transa, m, k, tf32);
    /* op(B) is (k, n): its columns are the rows of op(B)^T, which is op'(B) with the other transpose */
    float *b = gather(B, ldb, transb == CUBLAS_OP_N ? CUBLAS_OP_T : CUBLAS_OP_N, n, k, tf32);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            float *c = &C[i + (size_t)j * ldc];
            double s = (double)*alpha * dot(a + (size_t)i * k, b + (size_t)j * k, k);
            *c = (float)(*beta == 0.0f ? s : s + (double)*beta * *c); /* beta 0: C is not read (BLAS) */
        }
    free(a);
    free(b);
    return CUBLAS_STATUS_SUCCESS;
}
