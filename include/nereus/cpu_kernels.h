/* cpu_kernels.h — which instruction-set path the CPU backend's row kernels
 * take: "avx512bf16" (AVX-512F with the AVX512-BF16 dot products for the
 * bf16 GEMM; the fp32 kernels are avx512's), "avx512" (AVX-512F), each
 * chosen at run time where the CPU has it,
 * "avx2" (GCC vectors of 8 floats: AVX2 and FMA on x86-64, the build's
 * baseline; NEON on aarch64) or "portable" (plain C with fmaf, any machine).
 * Every path computes each output of a GEMM row with the same fused
 * multiply-adds in the same order (docs/NUMERICS.md), so a row's bits depend
 * neither on the path nor on the other rows of the call. NEREUS_CPU_KERNELS
 * forces a path, so one machine tests them all. */
#ifndef NEREUS_CPU_KERNELS_H
#define NEREUS_CPU_KERNELS_H

#include <stddef.h>

typedef enum CpuKernelPath {
    CPU_PATH_PORTABLE = 0,
    CPU_PATH_AVX2 = 1,
    CPU_PATH_AVX512 = 2,
    CPU_PATH_AVX512BF16 = 3 /* avx512's kernels, VDPBF16PS in the bf16 GEMM: path >= CPU_PATH_AVX512 is AVX-512 */
} CpuKernelPath;
#define CPU_PATH_COUNT 4

/* the path in force: the one set last, else NEREUS_CPU_KERNELS, else the best this CPU runs */
CpuKernelPath cpu_kernels_path(void);
const char *cpu_kernels_name(CpuKernelPath p);
/* 1 when this build and CPU can run path p */
int cpu_kernels_runs(CpuKernelPath p);
/* forces the path named (avx512bf16|avx512|avx2|portable|auto); 0, or -1 with why (unknown, or not on this CPU) */
int cpu_kernels_set(const char *name, char *why, size_t len);
/* reads NEREUS_CPU_KERNELS (unset or empty: auto); 0, or -1 with why naming the variable */
int cpu_kernels_from_env(char *why, size_t len);
/* 1 with why when OpenBLAS runs kernels older than this CPU's (pre-AVX2 ones on an AVX2 or AVX-512 CPU: it did
   not recognise the CPU), naming the OPENBLAS_CORETYPE that fits; else 0 */
int cpu_blas_core_check(char *why, size_t len);

#endif
