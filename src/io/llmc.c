/* llmc.c — llm.c interchange and the loss of a checkpoint, the one-process
 * parts of bin/nereus-ckpt that need a model: import of an llm.c GPT-2 fp32
 * checkpoint as actor and ref, export of the actor back to that format
 * (byte for byte), and the mean cross-entropy of the actor on the first
 * batch of a token file, computed exactly as the SFT step computes it.
 *
 * llm.c file: int32 header[256] = {20240326, 3 (fp32), maxT, V, L, NH, C,
 * Vp, 0...}, then Vp·C + ... floats in llm.c's order, which is our tensor
 * order and the full logical vector (gpt_export_logical) of a model with
 * V = Vp: the padded rows of wte are kept, the real V is stored beside it. */
#include "nereus/ckpt.h"

/* messages and paths are cut to their buffers on purpose (a long path only shortens the message) */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nereus/backend.h"
#include "nereus/task.h"
#include "nereus/util.h"

#define LLMC_MAGIC 20240326
#define LLMC_FP32 3

/* −1 with why when out names the input file itself (another path to the same file included): writing it
 * would destroy what is being converted */
static int same_file(const char *in, const char *out, char *why, size_t len) {
    struct stat a, b;
    if (stat(in, &a) != 0 || stat(out, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) return 0;
    snprintf(why, len, "%s is the input file %s: it would be overwritten; name another output", out, in);
    return -1;
}

int ckpt_import_llmc(const char *llmc_path, const char *out_path, char *why, size_t len) {
    if (same_file(llmc_path, out_path, why, len)) return -1;
    FILE *f = fopen(llmc_path, "rb");
    if (!f) {
        snprintf(why, len, "%s: cannot open: %s", llmc_path, strerror(errno));
        return -1;
    }
    int32_t h[256];
    if (fread(h, sizeof(int32_t), 256, f) != 256) {
        snprintf(why, len, "%s: too short for an llm.c checkpoint (256-int32 header)", llmc_path);
        fclose(f);
        return -1;
    }
    if (h[0] != LLMC_MAGIC) {
        snprintf(why, len, "%s: bad magic %d (an llm.c GPT-2 checkpoint has %d)", llmc_path, h[0], LLMC_MAGIC);
        fclose(f);
        return -1;
    }
    if (h[1] != LLMC_FP32) {
        snprintf(why, len, "%s: llm.c checkpoint version %d; only version 3 (fp32) is supported%s", llmc_path, h[1],
                 h[1] == 5 ? " (5 is bf16)" : "");
        fclose(f);
        return -1;
    }
    GPTConfig c = {.V = h[7], .maxT = h[2], .L = h[4], .C = h[6], .NH = h[5], .V_real = h[3] < h[7] ? h[3] : 0};
    int vocab = h[3];
    const int big = 1 << 24; /* past any GPT-2 shape, and 4·C stays an int */
    if (c.V < 1 || c.maxT < 1 || c.L < 1 || c.C < 1 || c.NH < 1 || c.C % c.NH != 0 || vocab < 1 || vocab > c.V ||
        c.V > big || c.maxT > big || c.L > big || c.C > big) {
        snprintf(why, len, "%s: implausible header maxT=%d V=%d L=%d NH=%d C=%d Vp=%d", llmc_path, h[2], h[3], h[4],
                 h[5], h[6], h[7]);
        fclose(f);
        return -1;
    }
    for (int i = 8; i < 256; i++)
        if (h[i] != 0) {
            snprintf(why, len, "%s: header word %d is %d; an llm.c GPT-2 header has zeros past word 7 (not kept, so "
                     "refused)", llmc_path, i, h[i]);
            fclose(f);
            return -1;
        }
    size_t nl = gpt_logical_numel(&c);
    struct stat sb; /* the size before the allocation: a damaged header must not ask for terabytes */
    if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && (double)sb.st_size != 1024.0 + 4.0 * (double)nl) {
        snprintf(why, len, "%s: the header gives %zu parameters (%.0f bytes with the header) but the file has %lld bytes",
                 llmc_path, nl, 1024.0 + 4.0 * (double)nl, (long long)sb.st_size);
        fclose(f);
        return -1;
    }
    float *full = nr_xmalloc(nl * sizeof(float));
    size_t got = fread(full, sizeof(float), nl, f);
    int extra = fgetc(f) != EOF;
    fclose(f);
    if (got != nl || extra) {
        snprintf(why, len, "%s: the header gives %zu parameters but the file holds %s%zu", llmc_path, nl,
                 extra ? "more than " : "", got);
        free(full);
        return -1;
    }
    for (size_t i = 0; i < nl; i++) /* a NaN or an infinity is damage (llm.c writes none), not a weight */
        if (!isfinite(full[i])) {
            TensorInfo t[GPT_NUM_TENSORS];
            int nt, k = 0;
            gpt_tensor_table(&c, 1, 0, t, &nt);
            while (k + 1 < nt && t[k + 1].loffset <= i) k++;
            snprintf(why, len, "%s: parameter %s holds %s at element %zu: not a weight (a damaged file?)", llmc_path,
                     t[k].name, isnan(full[i]) ? "NaN" : "an infinity", i - t[k].loffset);
            free(full);
            return -1;
        }
    GPT m;
    gpt_build(&m, &c, backend_cpu(), 1, 1, 0, 0, 0.02f);
    gpt_import_logical(&m, GPT_BUF_PARAMS, full);
    free(full);
    char plan[256];
    snprintf(plan, sizeof plan, "imported from llm.c checkpoint %s (1 process)\n", llmc_path);
    CkptMeta meta = {0, 0, 0, "", plan, 0, NULL, 0, NULL};
    CkptModel ms[2] = {{"actor", &c, &m, 1, 0}, {"ref", &c, &m, 1, 0}};
    int rc = ckpt_write(out_path, MPI_COMM_SELF, &meta, ms, 2, why, len);
    gpt_free(&m);
    return rc;
}

int ckpt_load_model(const char *path, const char *name, GPT *m, GPTConfig *c, int B, int T, char *why, size_t len) {
    int has_adam;
    if (ckpt_model_config(path, name, c, &has_adam, why, len)) return -1;
    gpt_build(m, c, backend_cpu(), B, T, 0, 0, 0.02f);
    CkptModel e = {name, c, m, 1, 0};
    if (ckpt_read(path, MPI_COMM_SELF, NULL, &e, 1, why, len)) {
        gpt_free(m);
        return -1;
    }
    return 0;
}

/* an llm.c file's bytes: the 256-int header, then the logical parameters */
typedef struct LlmcWrite {
    const int32_t *h;
    const float *full;
    size_t nl;
} LlmcWrite;

static int llmc_write_all(FILE *f, const void *ctx) {
    const LlmcWrite *w = ctx;
    return fwrite(w->h, sizeof(int32_t), 256, f) == 256 && fwrite(w->full, sizeof(float), w->nl, f) == w->nl ? 0 : -1;
}

/* written whole or not at all (nr_write_whole): a failed export leaves an earlier file of that name intact */
int ckpt_export_llmc(const char *path, const char *out_path, char *why, size_t len) {
    GPTConfig c;
    GPT m;
    if (same_file(path, out_path, why, len)) return -1;
    if (ckpt_model_config(path, "actor", &c, NULL, why, len)) return -1;
    if (c.value_head) {
        snprintf(why, len, "%s: the actor has a value head; llm.c's format has none", path);
        return -1;
    }
    if (ckpt_load_model(path, "actor", &m, &c, 1, 1, why, len)) return -1;
    size_t nl = gpt_logical_numel(&c);
    float *full = nr_xmalloc(nl * sizeof(float));
    gpt_export_logical(&m, GPT_BUF_PARAMS, full);
    gpt_free(&m);
    int32_t h[256] = {0};
    h[0] = LLMC_MAGIC;
    h[1] = LLMC_FP32;
    h[2] = c.maxT;
    h[3] = gpt_real_vocab(&c);
    h[4] = c.L;
    h[5] = c.NH;
    h[6] = c.C;
    h[7] = c.V;
    LlmcWrite w = {h, full, nl};
    int rc = nr_write_whole(out_path, llmc_write_all, &w, why, len);
    free(full);
    return rc;
}

int ckpt_eval_loss(const char *path, const char *tokens_path, int B, int T, double *loss, char *why, size_t len) {
    TokenFile tf;
    if (B < 1 || T < 1) {
        snprintf(why, len, "loss: batch %d and seq %d must be at least 1", B, T);
        return -1;
    }
    if (tokens_read(&tf, tokens_path, why, len)) return -1;
    size_t need = (size_t)B * T + 1;
    if (tf.count < need) {
        snprintf(why, len, "%s: holds %zu tokens, fewer than one batch of %d x %d + 1 = %zu", tokens_path, tf.count, B,
                 T, need);
        tokens_free(&tf);
        return -1;
    }
    GPTConfig c;
    if (ckpt_model_config(path, "actor", &c, NULL, why, len)) { tokens_free(&tf); return -1; }
    if (T > c.maxT || tf.max_token >= gpt_real_vocab(&c)) {
        if (T > c.maxT) snprintf(why, len, "%s: seq %d exceeds the actor's %d positions", path, T, c.maxT);
        else snprintf(why, len, "%s: token id %d is outside the actor's vocabulary of %d (%s)", tokens_path,
                      tf.max_token, gpt_real_vocab(&c), path);
        tokens_free(&tf);
        return -1;
    }
    GPT m;
    if (ckpt_load_model(path, "actor", &m, &c, B, T, why, len)) { tokens_free(&tf); return -1; }
    size_t n = (size_t)B * T;
    int *tok = nr_xmalloc(n * sizeof(int)), *tg = nr_xmalloc(n * sizeof(int));
    float *logp = nr_xmalloc(n * sizeof(float));
    for (size_t k = 0; k < n; k++) {
        tok[k] = (int)tf.tokens[k];   /* row b = tokens[b·T, b·T+T): the SFT step's windows at step 0 */
        tg[k] = (int)tf.tokens[k + 1];
    }
    gpt_forward(&m, tok, B, T, 1, 0);
    gpt_logprob(&m, tg, logp, NULL);
    double s = 0;
    for (size_t k = 0; k < n; k++) s -= logp[k]; /* summed as sft_step sums */
    *loss = s / (double)n;
    free(tok);
    free(tg);
    free(logp);
    gpt_free(&m);
    tokens_free(&tf);
    return 0;
}
