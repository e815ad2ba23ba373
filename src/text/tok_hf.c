/* tok_hf.c — fills a TokSpec from a Hugging Face tokenizer.json (cJSON):
 * model.vocab, model.merges (the "a b" string form and the [a, b] array
 * form), added_tokens (special → CONTROL, else USER_DEFINED), and the
 * pre-tokenizer's family recognised from the file's pre_tokenizer and
 * normalizer (tok_hf_pre.c), bos from its post_processor; tokenizer_config.json beside it, where there is
 * one, gives bos/eos, add_bos_token and the chat template. Every error names
 * the file and the key. */
#include <cjson/cJSON.h>

#include "tok_int.h"
#include "tok_hf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *tok_read_text(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, k = 0, got;
    char *s = malloc(cap + 1);
    while (s && (got = fread(s + k, 1, cap - k, f)) > 0) {
        k += got;
        if (k == cap) { char *t = realloc(s, 2 * cap + 1); if (!t) { free(s); s = NULL; break; } s = t; cap *= 2; }
    }
    fclose(f);
    if (s) { s[k] = 0; if (n) *n = k; }
    return s;
}

/* the vocabulary: model.vocab's ids and the added tokens' ids together, no gaps */
static int read_vocab(const cJSON *vocab, const cJSON *added, TokSpec *spec, const char *path, char *why, size_t len) {
    int n = 0;
    for (const cJSON *t = vocab->child; t; t = t->next) {
        if (!cJSON_IsNumber(t) || t->valueint < 0)
            return tok_fail(why, len, "%s: model.vocab['%s'] is not an id", path, t->string);
        if (t->valueint >= n) n = t->valueint + 1;
    }
    for (const cJSON *a = added ? added->child : NULL; a; a = a->next) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(a, "id");
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(a, "content");
        if (!cJSON_IsNumber(id) || id->valueint < 0 || !cJSON_IsString(c))
            return tok_fail(why, len, "%s: added_tokens: an entry without 'id' or 'content'", path);
        for (const char *const *f = (const char *const[]){"lstrip", "rstrip", "single_word", NULL}; *f; f++)
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, *f))) /* none of the four families sets them */
                return tok_fail(why, len, "%s: added_tokens: '%s' has %s true, which Nereus does not support", path,
                                c->valuestring, *f);
        if (id->valueint >= n) n = id->valueint + 1;
    }
    spec->n_vocab = n;
    spec->tokens = calloc((size_t)n, sizeof *spec->tokens);
    spec->token_type = calloc((size_t)n, sizeof *spec->token_type);
    if (!spec->tokens || !spec->token_type) return tok_fail(why, len, "%s: out of memory for %d tokens", path, n);
    for (const cJSON *t = vocab->child; t; t = t->next) {
        free(spec->tokens[t->valueint]); /* two strings with one id: the last one, as a JSON map would */
        if (!(spec->tokens[t->valueint] = strdup(t->string))) return tok_fail(why, len, "out of memory");
        spec->token_type[t->valueint] = TOK_TYPE_NORMAL;
    }
    for (const cJSON *a = added ? added->child : NULL; a; a = a->next) {
        int id = cJSON_GetObjectItemCaseSensitive(a, "id")->valueint;
        free(spec->tokens[id]);
        if (!(spec->tokens[id] = strdup(cJSON_GetObjectItemCaseSensitive(a, "content")->valuestring)))
            return tok_fail(why, len, "out of memory");
        int special = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "special"));
        spec->token_type[id] = special ? TOK_TYPE_CONTROL : TOK_TYPE_USER_DEFINED;
    }
    for (int i = 0; i < n; i++)
        if (!spec->tokens[i]) return tok_fail(why, len, "%s: model.vocab: no token has id %d (ids 0..%d)", path, i, n - 1);
    return 0;
}

/* model.merges: "left right" strings or [left, right] pairs, both stored as "left right" */
static int read_merges(const cJSON *merges, TokSpec *spec, const char *path, char *why, size_t len) {
    int n = cJSON_GetArraySize(merges), r = 0;
    spec->merges = calloc((size_t)n + 1, sizeof *spec->merges);
    if (!spec->merges) return tok_fail(why, len, "out of memory");
    for (const cJSON *m = merges->child; m; m = m->next, r++) {
        spec->n_merges = r; /* what tokspec_free frees if this one fails */
        int pair = cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2 && cJSON_IsString(m->child) &&
                   cJSON_IsString(m->child->next);
        if (cJSON_IsString(m)) spec->merges[r] = strdup(m->valuestring);
        else if (pair) {
            const char *a = m->child->valuestring, *b = m->child->next->valuestring;
            size_t k = strlen(a) + strlen(b) + 2;
            if ((spec->merges[r] = malloc(k))) snprintf(spec->merges[r], k, "%s %s", a, b);
        } else return tok_fail(why, len, "%s: model.merges[%d] is neither \"a b\" nor [\"a\", \"b\"]", path, r);
        if (!spec->merges[r]) return tok_fail(why, len, "out of memory");
    }
    spec->n_merges = n;
    return 0;
}

static const cJSON *need(const cJSON *obj, const char *key, const char *name, const char *path, char *why, size_t len) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) tok_fail(why, len, "%s: missing key '%s'", path, name);
    return v;
}

/* bos from the post-processor: a TemplateProcessing (alone, or in a Sequence as Llama-3.1 has it)
 * whose "single" template starts with a special token prepends that token, as Llama-3's does */
static void read_post_bos(const cJSON *root, TokSpec *spec) {
    const cJSON *pp = cJSON_GetObjectItemCaseSensitive(root, "post_processor");
    const cJSON *seq = cJSON_GetObjectItemCaseSensitive(pp, "processors");
    for (const cJSON *p = cJSON_IsArray(seq) ? seq->child : pp; p; p = cJSON_IsArray(seq) ? p->next : NULL) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(p, "type");
        const cJSON *single = cJSON_GetObjectItemCaseSensitive(p, "single");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "TemplateProcessing") || !cJSON_IsArray(single)) continue;
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(single->child, "SpecialToken");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(st, "id");
        int bos = cJSON_IsString(id) ? tok_spec_find(spec, id->valuestring) : -1;
        if (bos >= 0) { spec->bos_id = bos; spec->add_bos = 1; }
    }
}

static int read_json(const cJSON *root, TokSpec *spec, const char *path, char *why, size_t len) {
    const cJSON *model = need(root, "model", "model", path, why, len), *vocab, *merges, *type;
    if (!model) return -1;
    if (!(type = need(model, "type", "model.type", path, why, len))) return -1;
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "BPE"))
        return tok_fail(why, len, "%s: model.type is not \"BPE\"", path);
    if (!(vocab = need(model, "vocab", "model.vocab", path, why, len)) ||
        !(merges = need(model, "merges", "model.merges", path, why, len)))
        return -1;
    if (!cJSON_IsObject(vocab)) return tok_fail(why, len, "%s: model.vocab is not an object", path);
    if (!cJSON_IsArray(merges)) return tok_fail(why, len, "%s: model.merges is not an array", path);
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    if (added && !cJSON_IsArray(added) && !cJSON_IsNull(added))
        return tok_fail(why, len, "%s: added_tokens is not an array", path);
    const char *pre;
    if (tok_hf_pre(root, &pre, path, why, len)) return -1;
    const cJSON *im = cJSON_GetObjectItemCaseSensitive(model, "ignore_merges");
    if (cJSON_IsTrue(im) != !strcmp(pre, "llama-bpe")) /* the family decides it (tok.c), so it must agree */
        return tok_fail(why, len, "%s: model.ignore_merges is %s, where the '%s' pre-tokenizer has it %s", path,
                        cJSON_IsTrue(im) ? "true" : "false", pre, strcmp(pre, "llama-bpe") ? "false" : "true");
    if (!(spec->model = strdup("gpt2")) || !(spec->pre = strdup(pre))) return tok_fail(why, len, "out of memory");
    if (read_vocab(vocab, cJSON_IsArray(added) ? added : NULL, spec, path, why, len)) return -1;
    read_post_bos(root, spec);
    return read_merges(merges, spec, path, why, len);
}

int tok_read_hf_json(const char *path, TokSpec *spec, char *why, size_t len) {
    memset(spec, 0, sizeof *spec);
    spec->bos_id = spec->eos_id = spec->eot_id = spec->pad_id = -1;
    size_t n;
    char *text = tok_read_text(path, &n);
    if (!text) return tok_fail(why, len, "%s: cannot read", path);
    cJSON *root = cJSON_ParseWithLength(text, n);
    int rc;
    if (!root || !cJSON_IsObject(root)) {
        const char *at = cJSON_GetErrorPtr();
        snprintf(why, len, "%s: not a JSON object (near byte %ld)", path, at && root == NULL ? (long)(at - text) : 0L);
        rc = -1;
    } else rc = read_json(root, spec, path, why, len);
    cJSON_Delete(root);
    free(text);
    if (rc) tokspec_free(spec);
    return rc;
}

int tok_read_hf(const char *dir, TokSpec *spec, char *why, size_t len) {
    size_t n = strlen(dir) + 32;
    char *path = malloc(n);
    if (!path) return tok_fail(why, len, "out of memory");
    snprintf(path, n, "%s/tokenizer.json", dir);
    int rc = tok_read_hf_json(path, spec, why, len);
    if (rc == 0) {
        snprintf(path, n, "%s/tokenizer_config.json", dir);
        rc = tok_hf_config(path, spec, why, len);
        if (rc) tokspec_free(spec);
    }
    free(path);
    return rc;
}
