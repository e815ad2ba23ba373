/* select.c — picks the backend a run asks for ([run] backend = auto|cpu|cuda).
 * The CPU backend is always built. A CUDA build (USE_CUDA=auto|1 with nvcc,
 * which defines NEREUS_CUDA and links cuda/) provides backend_cuda_probe(),
 * which returns the CUDA backend, or NULL with a reason when no usable device
 * is present; "auto" then falls back to the CPU and leaves one plain line in
 * `why` ("no GPU used (…): running on the CPU") for the caller to log once,
 * even though it succeeded.
 * When CUDA is chosen, `why` says which device and whether device buffers
 * cross ranks through NCCL groups or host staging ("using the CUDA backend
 * on …"). That probe is the one extension point: nothing else here changes.
 */
#include <stdio.h>
#include <string.h>

#include "nereus/backend.h"

#ifdef NEREUS_CUDA
#include "nereus/backend_cuda.h" /* backend_cuda_probe: cuda/cuda.cu */
#endif

static void set_why(char *why, size_t why_len, const char *msg) {
    if (why && why_len) snprintf(why, why_len, "%s", msg);
}

#ifdef NEREUS_CUDA
/* what a run logs when CUDA was chosen: this rank's device and how device
 * buffers cross ranks (NCCL groups or host staging) */
static void say_cuda(char *why, size_t why_len) {
    if (why && why_len)
        snprintf(why, why_len, "using the CUDA backend on %s; %s", backend_cuda_device_name(), backend_cuda_groups_note());
}
#endif

const Backend *backend_select(const char *name, char *why, size_t why_len) {
    set_why(why, why_len, "");
    if (!name || !strcmp(name, "auto")) {
#ifdef NEREUS_CUDA
        char reason[400];
        const Backend *be = backend_cuda_probe(reason, sizeof reason);
        if (be) {
            say_cuda(why, why_len);
            return be;
        }
        if (why && why_len) snprintf(why, why_len, "no GPU used (%s): running on the CPU", reason);
#endif
        return backend_cpu();
    }
    if (!strcmp(name, "cpu")) return backend_cpu();
    if (!strcmp(name, "cuda")) {
#ifdef NEREUS_CUDA
        char reason[400];
        const Backend *be = backend_cuda_probe(reason, sizeof reason);
        if (!be && why && why_len)
            snprintf(why, why_len, "backend 'cuda' requested but no usable CUDA device: %s", reason);
        if (be) say_cuda(why, why_len);
        return be;
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
