/* cpu.c — assembles the CPU backend: one Backend struct, filled once by the
 * cpu_register_* function of each file (memory, dense, decode, norm, attention,
 * llama, embed, heads, ppo_loss, adamw) and returned by backend_cpu(). The CPU
 * backend is the oracle every other backend is checked against
 * (tests/test_backend_grad.c checks it against double-precision references).
 */
#include "cpu_internal.h"

static Backend cpu_backend;
static int cpu_backend_ready;

/* Not thread-safe on the very first call; the program calls it once from the
 * main thread before anything else runs. */
const Backend *backend_cpu(void) {
    if (!cpu_backend_ready) {
        Backend be = {0};
        be.name = "cpu";
        cpu_register_memory(&be);
        cpu_register_dense(&be);
        cpu_register_decode(&be);
        cpu_register_decode_bf16(&be);
        cpu_register_norm(&be);
        cpu_register_attention(&be);
        cpu_register_llama(&be);
        cpu_register_embed(&be);
        cpu_register_heads(&be);
        cpu_register_ppo(&be);
        cpu_register_adamw(&be);
        cpu_backend = be;
        cpu_backend_ready = 1;
    }
    return &cpu_backend;
}
