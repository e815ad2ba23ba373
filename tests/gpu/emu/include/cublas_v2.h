/* cublas_v2.h — stand-in for cuBLAS, for the CPU emulation of the CUDA
 * kernels (tests/gpu/emu/): the handle, the math mode and cublasSgemm, which
 * is a column-major reference GEMM with cuBLAS's argument checks (cublas.c),
 * so a wrong transpose or leading dimension in cuda/dense.cu gives wrong
 * numbers or CUBLAS_STATUS_INVALID_VALUE, as it would on the device. Only the
 * calls the backend and tests/gpu/parity.c's checks make are declared.
 */
#ifndef CUEMU_CUBLAS_V2_H
#define CUEMU_CUBLAS_V2_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_INVALID_VALUE = 7,
} cublasStatus_t;

typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 } cublasOperation_t;
typedef enum { CUBLAS_DEFAULT_MATH = 0, CUBLAS_TF32_TENSOR_OP_MATH = 3 } cublasMath_t;

typedef struct CuEmuCublas *cublasHandle_t;

cublasStatus_t cublasCreate(cublasHandle_t *handle);
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode);
const char *cublasGetStatusString(cublasStatus_t s);
const char *cublasGetStatusName(cublasStatus_t s);

/* C (m, n) = alpha · op(A) (m, k) · op(B) (k, n) + beta · C, column-major.
 * Under CUBLAS_TF32_TENSOR_OP_MATH the A and B elements are rounded to TF32
 * (10 mantissa bits, to nearest) before the products. */
cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                           int n, int k, const float *alpha, const float *A, int lda, const float *B, int ldb,
                           const float *beta, float *C, int ldc);

#ifdef __cplusplus
}
#endif

#endif
