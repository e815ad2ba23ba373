/* kernels.c — the choice of the CPU backend's kernel path (cpu_kernels.h):
 * the best the CPU runs unless NEREUS_CPU_KERNELS or a test forces another.
 * The choice is a process-wide setting made before the kernels run. */
#include "nereus/cpu_kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const path_names[] = {"portable", "avx2", "avx512", "avx512bf16"};
static int forced = -1; /* -1: not chosen yet */

int cpu_kernels_runs(CpuKernelPath p) {
    switch (p) {
    case CPU_PATH_PORTABLE:
    case CPU_PATH_AVX2: return 1; /* the build's baseline (x86-64-v3), or GCC vectors elsewhere */
    case CPU_PATH_AVX512:
#if defined(__x86_64__) && defined(__GNUC__)
        return __builtin_cpu_supports("avx512f") != 0;
#else
        return 0;
#endif
    case CPU_PATH_AVX512BF16:
#if defined(__x86_64__) && defined(__GNUC__)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
#else
        return 0;
#endif
    }
    return 0;
}

static CpuKernelPath best_path(void) {
    for (int p = CPU_PATH_COUNT - 1; p > CPU_PATH_AVX2; p--)
        if (cpu_kernels_runs((CpuKernelPath)p)) return (CpuKernelPath)p;
    return CPU_PATH_AVX2;
}

const char *cpu_kernels_name(CpuKernelPath p) { return (unsigned)p < CPU_PATH_COUNT ? path_names[p] : "?"; }

/* the paths this CPU runs, as a comma list */
static void runs_list(char *buf, size_t len) {
    buf[0] = 0;
    for (int p = 0; p < CPU_PATH_COUNT; p++)
        if (cpu_kernels_runs((CpuKernelPath)p))
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? ", " : "", path_names[p]);
}

int cpu_kernels_set(const char *name, char *why, size_t len) {
    if (!name || !*name || !strcmp(name, "auto")) {
        forced = best_path();
        return 0;
    }
    for (int p = 0; p < CPU_PATH_COUNT; p++)
        if (!strcmp(name, path_names[p])) {
            if (!cpu_kernels_runs((CpuKernelPath)p)) {
                char runs[64];
                runs_list(runs, sizeof runs);
                snprintf(why, len, "kernel path '%s' does not run on this CPU (it runs: %s)", name, runs);
                return -1;
            }
            forced = p;
            return 0;
        }
    snprintf(why, len, "unknown kernel path '%.40s' (expected avx512bf16, avx512, avx2, portable or auto)", name);
    return -1;
}

int cpu_kernels_from_env(char *why, size_t len) {
    char inner[200];
    if (cpu_kernels_set(getenv("NEREUS_CPU_KERNELS"), inner, sizeof inner) == 0) return 0;
    snprintf(why, len, "NEREUS_CPU_KERNELS: %.150s", inner);
    return -1;
}

CpuKernelPath cpu_kernels_path(void) {
    if (forced < 0) {
        char why[200];
        if (cpu_kernels_from_env(why, sizeof why)) forced = best_path(); /* main refuses a bad value first */
    }
    return (CpuKernelPath)forced;
}
