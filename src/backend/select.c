/* select.c — picks the backend a run asks for ([run] backend = auto|cpu|cuda).
 * The CPU backend is always built. A CUDA build (USE_CUDA=1, which defines
 * NEREUS_CUDA and links src/backend/cuda/) provides backend_cuda_probe(),
 * which returns the CUDA backend, or NULL with a reason when no usable device
 * is present; "auto" then falls back to the CPU. That probe is the one
 * extension point: nothing else here changes when CUDA arrives.
 */
#include <stdio.h>
#include <string.h>

#include "nereus/backend.h"

#ifdef NEREUS_CUDA
/* src/backend/cuda/: the CUDA backend if a device is usable, else NULL + why */
const Backend *backend_cuda_probe(char *why, size_t why_len);
#endif

static void set_why(char *why, size_t why_len, const char *msg) {
    if (why && why_len) snprintf(why, why_len, "%s", msg);
}

const Backend *backend_select(const char *name, char *why, size_t why_len) {
    set_why(why, why_len, "");
    if (!name || !strcmp(name, "auto")) {
#ifdef NEREUS_CUDA
        char reason[256];
        const Backend *be = backend_cuda_probe(reason, sizeof reason);
        if (be) return be;
#endif
        return backend_cpu();
    }
    if (!strcmp(name, "cpu")) return backend_cpu();
    if (!strcmp(name, "cuda")) {
#ifdef NEREUS_CUDA
        return backend_cuda_probe(why, why_len);
#else
        set_why(why, why_len,
                "this build has no CUDA backend (rebuild with USE_CUDA=1 where nvcc is present)");
        return NULL;
#endif
    }
    char msg[160];
    snprintf(msg, sizeof msg, "unknown backend '%.40s' (expected auto, cpu or cuda)", name);
    set_why(why, why_len, msg);
    return NULL;
}
