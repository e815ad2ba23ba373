/* gguf_tok.c — a GGUF file's tokenizer as a TokSpec (gguf.h): the
 * tokenizer.ggml.* keys (model, pre, tokens, token_type, merges, the special
 * ids, add_bos_token) and tokenizer.chat_template. Absent optional keys give
 * the TokSpec defaults: no token_type → every token NORMAL, no merges → none,
 * an absent id → -1, no add_bos_token → 0, no pre → "default". The end of
 * turn is tokenizer.ggml.eot_token_id, else the id of <|im_end|> (ChatML) or
 * <|eot_id|> (Llama-3) where the vocabulary holds one, else -1. */
#include "nereus/gguf.h"

#pragma GCC diagnostic ignored "-Wformat-truncation"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/util.h"

/* an optional string key, malloc'd (def copied when absent); -1 when present and not a string */
static int opt_str(const GGUFFile *g, const char *key, const char *def, char **out, char *why, size_t len) {
    const GGUFKV *kv = gguf_find(g, key);
    *out = kv ? gguf_kv_str(g, kv, why, len) : def ? strdup(def) : NULL;
    return kv && !*out ? -1 : 0;
}

/* an optional token id: -1 when absent; refused outside [0, n_vocab) */
static int opt_id(const GGUFFile *g, const char *key, int n_vocab, int *out, char *why, size_t len) {
    const GGUFKV *kv = gguf_find(g, key);
    int64_t v = -1;
    if (kv && gguf_kv_i64(g, kv, &v, why, len)) return -1;
    if (kv && (v < 0 || v >= n_vocab)) {
        snprintf(why, len, "%s: key %s: token id %lld is outside the vocabulary of %d", g->path, key, (long long)v,
                 n_vocab);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int find_token(const TokSpec *s, const char *text) {
    for (int i = 0; i < s->n_vocab; i++)
        if (!strcmp(s->tokens[i], text)) return i;
    return -1;
}

/* tokens (required) and token_type (optional, one per token) */
static int read_vocab(const GGUFFile *g, TokSpec *s, char *why, size_t len) {
    const GGUFKV *tk = gguf_find(g, "tokenizer.ggml.tokens"), *tt = gguf_find(g, "tokenizer.ggml.token_type");
    if (!tk) {
        snprintf(why, len, "%s: key tokenizer.ggml.tokens is missing: the file carries no tokenizer", g->path);
        return -1;
    }
    if (gguf_kv_strs(g, tk, &s->tokens, why, len)) return -1;
    if (tk->n == 0 || tk->n > (1u << 30)) {
        snprintf(why, len, "%s: key tokenizer.ggml.tokens holds %llu tokens", g->path, (unsigned long long)tk->n);
        s->n_vocab = (int)(tk->n > (1u << 30) ? 0 : tk->n);
        return -1;
    }
    s->n_vocab = (int)tk->n;
    if (tt && tt->n != tk->n) {
        snprintf(why, len, "%s: key tokenizer.ggml.token_type holds %llu types for %d tokens", g->path,
                 (unsigned long long)tt->n, s->n_vocab);
        return -1;
    }
    if (tt) return gguf_kv_ints(g, tt, &s->token_type, why, len);
    s->token_type = nr_xmalloc((size_t)s->n_vocab * sizeof(int));
    for (int i = 0; i < s->n_vocab; i++) s->token_type[i] = TOK_TYPE_NORMAL;
    return 0;
}

static int read_ids(const GGUFFile *g, TokSpec *s, char *why, size_t len) {
    const GGUFKV *ab = gguf_find(g, "tokenizer.ggml.add_bos_token");
    int64_t add = 0;
    if (opt_id(g, "tokenizer.ggml.bos_token_id", s->n_vocab, &s->bos_id, why, len) ||
        opt_id(g, "tokenizer.ggml.eos_token_id", s->n_vocab, &s->eos_id, why, len) ||
        opt_id(g, "tokenizer.ggml.eot_token_id", s->n_vocab, &s->eot_id, why, len) ||
        opt_id(g, "tokenizer.ggml.padding_token_id", s->n_vocab, &s->pad_id, why, len) ||
        (ab && gguf_kv_i64(g, ab, &add, why, len)))
        return -1;
    s->add_bos = add != 0;
    if (s->eot_id < 0) s->eot_id = find_token(s, "<|im_end|>");
    if (s->eot_id < 0) s->eot_id = find_token(s, "<|eot_id|>");
    return 0;
}

int gguf_tokspec(const GGUFFile *g, TokSpec *s, char *why, size_t len) {
    memset(s, 0, sizeof *s);
    const GGUFKV *mg = gguf_find(g, "tokenizer.ggml.merges");
    int rc = -1;
    if (opt_str(g, "tokenizer.ggml.model", NULL, &s->model, why, len)) goto out;
    if (!s->model) {
        snprintf(why, len, "%s: key tokenizer.ggml.model is missing: the file carries no tokenizer", g->path);
        goto out;
    }
    if (opt_str(g, "tokenizer.ggml.pre", "default", &s->pre, why, len) || read_vocab(g, s, why, len) ||
        read_ids(g, s, why, len) || opt_str(g, "tokenizer.chat_template", NULL, &s->chat_template, why, len))
        goto out;
    if (mg && gguf_kv_strs(g, mg, &s->merges, why, len)) goto out;
    s->n_merges = mg ? (int)mg->n : 0;
    rc = 0;
out:
    if (rc) tokspec_free(s);
    return rc;
}

int gguf_read_tokspec(const char *path, TokSpec *out, char *why, size_t len) {
    GGUFFile g;
    if (gguf_open(&g, path, why, len)) return -1;
    int rc = gguf_tokspec(&g, out, why, len);
    gguf_close(&g);
    return rc;
}
