/* ckpt_gen.c — greedy decoding by a checkpoint's actor from given prompt ids
 * (ckpt.h: ckpt_generate_greedy; `nereus-ckpt generate`), one process: the
 * smallest way to compare a checkpoint's generation with another program's
 * (transformers' generate with do_sample=False) on the same prompt ids. */
#include "nereus/ckpt.h"

#pragma GCC diagnostic ignored "-Wformat-truncation"

#include <stdlib.h>

#include "nereus/util.h"

/* the first index of the largest of x[0, n) */
static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

int ckpt_generate_greedy(const char *path, const int *prompt, int P, int n, int *out, char *why, size_t len) {
    GPTConfig c;
    GPT m;
    if (P < 1 || n < 1) {
        snprintf(why, len, "generate: %d prompt ids and %d new tokens: both must be at least 1", P, n);
        return -1;
    }
    if (ckpt_model_config(path, "actor", &c, NULL, why, len)) return -1;
    int V = gpt_real_vocab(&c);
    if (P + n > c.maxT) {
        snprintf(why, len, "%s: %d prompt ids + %d new tokens exceed the actor's %d positions", path, P, n, c.maxT);
        return -1;
    }
    for (int i = 0; i < P; i++)
        if (prompt[i] < 0 || prompt[i] >= V) {
            snprintf(why, len, "prompt id %d is outside the actor's vocabulary of %d (%s)", prompt[i], V, path);
            return -1;
        }
    if (ckpt_load_model(path, "actor", &m, &c, 1, P + n, why, len)) return -1;
    float *logits = nr_xmalloc((size_t)c.V * sizeof(float));
    gpt_prefill(&m, prompt, 1, P, logits);
    for (int j = 0; j < n; j++) {
        out[j] = argmax(logits, V);
        if (j + 1 < n) gpt_decode(&m, &out[j], 1, P + j, logits);
    }
    free(logits);
    gpt_free(&m);
    return 0;
}
