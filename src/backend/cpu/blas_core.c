/* blas_core.c — whether OpenBLAS runs kernels fit for this CPU (cpu_kernels.h: cpu_blas_core_check). A
 * DYNAMIC_ARCH OpenBLAS picks its kernels from the CPU's family and model at load time; a CPU newer than the
 * library (Debian 12's 0.3.21 on a 5th-generation Xeon, family 6 model 207) falls back to its oldest x86-64
 * kernels (Prescott, SSE3), which run the backward GEMMs at a fraction of the CPU's rate. The library reads
 * OPENBLAS_CORETYPE only when it loads, so the run can only say so. */
#include <cblas.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "nereus/cpu_kernels.h"

/* OpenBLAS's x86-64 cores without AVX2 kernels */
static const char *const pre_avx2[] = {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom", "Sandybridge",
                                       "Opteron", "Opteron(SSE3)", "Barcelona", "Bobcat", "Bulldozer", "Piledriver",
                                       "Steamroller", "Excavator", "Katmai", "Coppermine", "Northwood", "Banias", NULL};

int cpu_blas_core_check(char *why, size_t len) {
#if defined(__x86_64__)
    const char *core = openblas_get_corename();
    if (!core) return 0;
    int old = 0;
    for (int i = 0; pre_avx2[i] && !old; i++) old = strcasecmp(core, pre_avx2[i]) == 0;
    int avx512 = __builtin_cpu_supports("avx512f"), avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (!old || !avx2) return 0;
    snprintf(why, len, "OpenBLAS runs its %s kernels on this CPU, which has %s: it did not recognise the CPU, and its "
             "GEMMs (the training step's backward) run at a fraction of the CPU's rate; set OPENBLAS_CORETYPE=%s for "
             "the run (jobs/local.sh and mpirun pass it on): on a 5th-generation Xeon that made the GPT-2 124M "
             "training step 2x faster at 1 thread (docs/PERFORMANCE.md)", core, avx512 ? "AVX-512" : "AVX2 and FMA",
             avx512 ? "SkylakeX" : "Haswell");
    return 1;
#else
    (void)why, (void)len;
    return 0;
#endif
}
