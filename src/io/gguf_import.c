/* gguf_import.c — `nereus-ckpt import-gguf`: a llama-, qwen2- or
 * qwen3-architecture GGUF file (llama.cpp's, ollama's) as the actor and ref
 * of a new checkpoint, with its tokenizer (ckpt.h).
 *
 * The config comes from the ARCH.* keys (ARCH = general.architecture):
 * context_length, embedding_length, block_count, feed_forward_length,
 * attention.head_count, attention.head_count_kv (default: head_count),
 * attention.key_length (the head width, default embedding_length /
 * head_count), rope.freq_base (default 10000), rope.dimension_count (must be
 * the head width: RoPE on the whole head), rope.scaling.type (none only),
 * attention.layer_norm_rms_epsilon; the vocabulary is the token list's
 * length. The tensors map onto ours by import_llama_pieces' GGUF names; an
 * absent output.weight means a tied head; any tensor left over is refused
 * rather than dropped.
 *
 * llama.cpp's converter permutes the rows of a llama model's q and k
 * projections (LlamaModel.permute): within each head of width hd, Hugging
 * Face's rotary halves [i·hd/2 + j] (i = 0, 1) become interleaved pairs
 * [2j + i]. Our model rotates halves as Hugging Face does, so those rows are
 * put back (as transformers' GGUF loader does with its reverse_permute).
 * qwen2 and qwen3 files are not permuted. */
#include "nereus/ckpt.h"

#pragma GCC diagnostic ignored "-Wformat-truncation"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import_int.h"
#include "nereus/gguf.h"
#include "nereus/util.h"

/* ARCH.name as a positive int (required unless def > 0, which is then its value when absent) */
static int arch_int(const GGUFFile *g, const char *arch, const char *name, int def, int *out, char *why,
                    size_t len) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, name);
    const GGUFKV *kv = gguf_find(g, key);
    int64_t v = def;
    if (!kv && def <= 0) {
        snprintf(why, len, "%s: key %s is missing", g->path, key);
        return -1;
    }
    if (kv && gguf_kv_i64(g, kv, &v, why, len)) return -1;
    if (v < 1 || v > (1 << 30)) {
        snprintf(why, len, "%s: key %s is %lld, not a positive size", g->path, key, (long long)v);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int arch_num(const GGUFFile *g, const char *arch, const char *name, double def, double *out, char *why,
                    size_t len) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, name);
    const GGUFKV *kv = gguf_find(g, key);
    *out = def;
    if (kv && gguf_kv_f64(g, kv, out, why, len)) return -1;
    if (!(*out > 0)) {
        snprintf(why, len, "%s: key %s is %g, not a positive number", g->path, key, *out);
        return -1;
    }
    return 0;
}

/* RoPE as ours computes it: on the whole head, no scaling */
static int check_rope(const GGUFFile *g, const char *arch, const GPTConfig *c, char *why, size_t len) {
    char key[128];
    int dims = gpt_head_dim(c);
    if (arch_int(g, arch, "rope.dimension_count", gpt_head_dim(c), &dims, why, len)) return -1;
    if (dims != gpt_head_dim(c)) {
        snprintf(why, len, "%s: key %s.rope.dimension_count is %d, the head width %d: only RoPE on the whole head "
                 "is supported", g->path, arch, dims, gpt_head_dim(c));
        return -1;
    }
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    const GGUFKV *kv = gguf_find(g, key);
    char *type = kv ? gguf_kv_str(g, kv, why, len) : NULL;
    if (kv && !type) return -1;
    int ok = !type || !strcmp(type, "none");
    if (!ok) snprintf(why, len, "%s: key %s is %s: only unscaled RoPE is supported", g->path, key, type);
    free(type);
    if (ok && gguf_tensor(g, "rope_freqs.weight")) {
        snprintf(why, len, "%s: tensor rope_freqs.weight (Llama-3.1 RoPE scaling as frequency factors) is not "
                 "supported", g->path);
        ok = 0;
    }
    return ok ? 0 : -1;
}

/* the GPTConfig of the ARCH.* keys; V is the token list's length */
static int read_config(const GGUFFile *g, int n_vocab, GPTConfig *c, char *why, size_t len) {
    const GGUFKV *ak = gguf_find(g, "general.architecture");
    char *arch = ak ? gguf_kv_str(g, ak, why, len) : NULL;
    int rc = -1;
    memset(c, 0, sizeof *c);
    if (!ak) snprintf(why, len, "%s: key general.architecture is missing", g->path);
    if (!arch) return -1;
    c->arch = gpt_arch_parse(arch);
    if (c->arch != GPT_ARCH_LLAMA && c->arch != GPT_ARCH_QWEN2 && c->arch != GPT_ARCH_QWEN3) {
        snprintf(why, len, "%s: general.architecture %s is not supported (llama, qwen2 and qwen3 are)", g->path, arch);
        goto out;
    }
    c->V = n_vocab;
    c->qkv_bias = c->arch == GPT_ARCH_QWEN2;
    c->qk_norm = c->arch == GPT_ARCH_QWEN3;
    if (arch_int(g, arch, "context_length", 0, &c->maxT, why, len) ||
        arch_int(g, arch, "embedding_length", 0, &c->C, why, len) ||
        arch_int(g, arch, "block_count", 0, &c->L, why, len) ||
        arch_int(g, arch, "feed_forward_length", 0, &c->ffn, why, len) ||
        arch_int(g, arch, "attention.head_count", 0, &c->NH, why, len) ||
        arch_int(g, arch, "attention.head_count_kv", c->NH, &c->NKV, why, len) ||
        arch_int(g, arch, "attention.key_length", c->C / c->NH > 0 ? c->C / c->NH : 1, &c->head_dim, why, len) ||
        arch_num(g, arch, "rope.freq_base", 10000.0, &c->rope_theta, why, len) ||
        arch_num(g, arch, "attention.layer_norm_rms_epsilon", 1e-5, &c->norm_eps, why, len))
        goto out;
    if (c->NH % c->NKV != 0 || c->head_dim % 2 != 0) {
        snprintf(why, len, "%s: %s: %d key/value heads do not divide %d heads, or the head width %d is odd", g->path,
                 arch, c->NKV, c->NH, c->head_dim);
        goto out;
    }
    if (check_rope(g, arch, c, why, len)) goto out;
    c->untied = gguf_tensor(g, "output.weight") != NULL;
    if (c->NKV == c->NH) c->NKV = 0; /* the defaults, stored as such */
    if (c->C % c->NH == 0 && c->head_dim == c->C / c->NH) c->head_dim = 0;
    rc = 0;
out:
    free(arch);
    return rc;
}

/* llama.cpp's interleaved rotary rows of one layer's q or k block (nh heads of hd rows of C) back to halves */
static void unpermute(float *w, int nh, int hd, int C) {
    size_t row = (size_t)C * sizeof(float);
    float *tmp = nr_xmalloc((size_t)hd * row);
    for (int h = 0; h < nh; h++) {
        float *head = w + (size_t)h * hd * C;
        memcpy(tmp, head, (size_t)hd * row);
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < hd / 2; j++) memcpy(head + (size_t)(i * hd / 2 + j) * C, tmp + (size_t)(2 * j + i) * C, row);
    }
    free(tmp);
}

/* one GGUF tensor of our shape (rows, cols) (nd 1: rows) into dst */
static int read_piece(const GGUFFile *g, const char *name, const HfPiece *e, float *dst, char *why, size_t len) {
    const GGUFTensor *t = gguf_tensor(g, name);
    if (!t) {
        snprintf(why, len, "%s: tensor %s is missing", g->path, name);
        return -1;
    }
    int64_t want0 = e->nd == 2 ? e->shape[1] : e->shape[0], want1 = e->nd == 2 ? e->shape[0] : 1;
    if (t->ndim > 2 || t->ne[0] != want0 || t->ne[1] != want1 || (e->nd == 2) != (t->ndim == 2)) {
        snprintf(why, len, "%s: tensor %s has ne (%lld, %lld), the config gives (%lld, %lld)", g->path, name,
                 (long long)t->ne[0], (long long)t->ne[1], (long long)want0, (long long)want1);
        return -1;
    }
    return gguf_read_f32(g, t, dst, why, len);
}

/* every mapped tensor into full (our logical vector); each GGUF tensor consumed is marked in used[] */
static int read_tensors(const GGUFFile *g, const GPTConfig *c, float *full, char *used, char *why, size_t len) {
    TensorInfo t[GPT_NUM_TENSORS];
    HfPiece pc[MAX_PIECES];
    int nt;
    gpt_tensor_table(c, 1, 0, t, &nt);
    int np = import_llama_pieces(c, pc), hd = gpt_head_dim(c);
    for (int k = 0; k < np; k++) {
        const HfPiece *e = &pc[k];
        const TensorInfo *ti = import_tensor_of_role(t, nt, e->role);
        int nl = strchr(e->gguf, '%') ? c->L : 1;
        size_t per = ti->numel / (size_t)nl;
        for (int l = 0; l < nl; l++) {
            char name[128];
            snprintf(name, sizeof name, e->gguf, l);
            float *dst = full + ti->loffset + (size_t)l * per + e->off;
            if (read_piece(g, name, e, dst, why, len)) return -1;
            used[gguf_tensor(g, name) - g->t] = 1;
            if (c->arch == GPT_ARCH_LLAMA && e->role == LLAMA_QW) unpermute(dst, c->NH, hd, c->C);
            if (c->arch == GPT_ARCH_LLAMA && e->role == LLAMA_KVW && e->off == 0) unpermute(dst, gpt_kv_heads(c), hd, c->C);
        }
    }
    for (int i = 0; i < g->n_tensors; i++)
        if (!used[i]) {
            snprintf(why, len, "%s: tensor %s is not part of a %s model (refused rather than dropped)", g->path,
                     g->t[i].name, gpt_arch_name(c->arch));
            return -1;
        }
    return 0;
}

/* the embedding's rows: the vocabulary (the token list must not be longer) */
static int vocab_rows(const GGUFFile *g, const TokSpec *tok, int *V, char *why, size_t len) {
    const GGUFTensor *e = gguf_tensor(g, "token_embd.weight");
    if (!e || e->ndim != 2) {
        snprintf(why, len, "%s: tensor token_embd.weight is %s", g->path, e ? "not a matrix" : "missing");
        return -1;
    }
    if (e->ne[1] != tok->n_vocab) {
        snprintf(why, len, "%s: tensor token_embd.weight has %lld rows for %d tokens in tokenizer.ggml.tokens",
                 g->path, (long long)e->ne[1], tok->n_vocab);
        return -1;
    }
    *V = tok->n_vocab;
    return 0;
}

/* " (Q4_1, Q8_0 dequantized to fp32)", or "" when every tensor is F32 */
static void type_note(const GGUFFile *g, char *buf, size_t n) {
    buf[0] = 0;
    for (int i = 0; i < g->n_tensors; i++) {
        char b[32];
        const char *name = gguf_type_name(g->t[i].type, b, sizeof b);
        if (g->t[i].type != GGML_F32 && !strstr(buf, name))
            snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", buf[0] ? ", " : " (", name);
    }
    if (buf[0]) snprintf(buf + strlen(buf), n - strlen(buf), " dequantized to fp32)");
}

int ckpt_import_gguf(const char *path, const char *out_path, char *note, size_t note_len, char *why, size_t len) {
    GGUFFile g;
    TokSpec tok;
    GPTConfig c;
    int V = 0;
    if (gguf_open(&g, path, why, len)) return -2;
    if (gguf_tokspec(&g, &tok, why, len)) {
        gguf_close(&g);
        return -2;
    }
    int rc = -2;
    float *full = NULL;
    char *used = nr_xcalloc((size_t)g.n_tensors + 1, 1);
    if (vocab_rows(&g, &tok, &V, why, len) || read_config(&g, V, &c, why, len)) goto out;
    full = nr_xmalloc(gpt_logical_numel(&c) * sizeof(float));
    if (read_tensors(&g, &c, full, used, why, len)) goto out;
    type_note(&g, note, note_len);
    char source[4096 + 32];
    snprintf(source, sizeof source, "GGUF file %s", path);
    rc = import_write_ckpt(out_path, &c, full, source, &tok, why, len) ? -1 : 0;
out:
    free(full);
    free(used);
    tokspec_free(&tok);
    gguf_close(&g);
    return rc;
}
