/* tok.c — the Tokenizer (text.h): built from a TokSpec, it encodes text as
 * added tokens matched whole (leftmost, longest first, as HF's added-token
 * matcher does), the stretches between them put in NFC where the family's
 * tokenizer.json normalizes so (Qwen2's, through utf8proc), split by the
 * family's pre-tokenizer (tok_pre.c) and each piece merged by rank
 * (tok_bpe.c); it decodes ids back to the bytes they stand for. */
#include <utf8proc.h>

#include "tok_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tok_fail(char *why, size_t len, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return -1;
}

int tokids_push(TokIds *v, int id) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 64;
        int *ids = realloc(v->ids, cap * sizeof *ids);
        if (!ids) return -1;
        v->ids = ids; v->cap = cap;
    }
    v->ids[v->n++] = id;
    return 0;
}

void tokids_free(TokIds *v) {
    free(v->ids);
    memset(v, 0, sizeof *v);
}

static int is_added(int type) { return type == TOK_TYPE_CONTROL || type == TOK_TYPE_USER_DEFINED; }

/* the added ids by first byte, and within one first byte longest text first, so that the first
 * that matches at a place is the longest; added_from[b] is where first byte b's run starts */
typedef struct { unsigned char first; size_t len; int id; } Added;
static int by_first_then_length(const void *a, const void *b) {
    const Added *x = a, *y = b;
    if (x->first != y->first) return x->first - y->first;
    return x->len < y->len ? 1 : x->len > y->len ? -1 : x->id - y->id;
}

static int sort_added(Tokenizer *tk) {
    Added *a = malloc((size_t)(tk->n_added ? tk->n_added : 1) * sizeof *a);
    if (!a) return -1;
    for (int i = 0; i < tk->n_added; i++) {
        int id = tk->added[i];
        a[i] = (Added){tk->bytes[id][0], tk->n_bytes[id], id};
    }
    qsort(a, (size_t)tk->n_added, sizeof *a, by_first_then_length);
    for (int i = 0; i < tk->n_added; i++) tk->added[i] = a[i].id;
    for (int b = 0, i = 0; b <= 256; b++) {
        while (i < tk->n_added && a[i].first < b) i++;
        tk->added_from[b] = i;
    }
    free(a);
    return 0;
}

/* the vocabulary: own copies, the map, what each id decodes to, the added tokens */
static int build_vocab(Tokenizer *tk, const TokSpec *spec, char *why, size_t len) {
    int n = tk->n_vocab = spec->n_vocab;
    tk->tokens = calloc((size_t)n, sizeof *tk->tokens);
    tk->bytes = calloc((size_t)n, sizeof *tk->bytes);
    tk->n_bytes = calloc((size_t)n, sizeof *tk->n_bytes);
    tk->token_type = calloc((size_t)n, sizeof *tk->token_type);
    tk->added = calloc((size_t)n, sizeof *tk->added);
    if (!tk->tokens || !tk->bytes || !tk->n_bytes || !tk->token_type || !tk->added ||
        strmap_init(&tk->vocab, (size_t)n))
        return tok_fail(why, len, "out of memory for %d tokens", n);
    for (int i = 0; i < n; i++) {
        const char *s = spec->tokens[i] ? spec->tokens[i] : "";
        size_t k = strlen(s);
        tk->tokens[i] = strdup(s);
        tk->bytes[i] = malloc(k + 1);
        if (!tk->tokens[i] || !tk->bytes[i]) return tok_fail(why, len, "out of memory");
        tk->token_type[i] = spec->token_type ? spec->token_type[i] : TOK_TYPE_NORMAL;
        if (is_added(tk->token_type[i])) { memcpy(tk->bytes[i], s, k); tk->n_bytes[i] = k; }
        else tok_bytes_of(s, tk->bytes[i], &tk->n_bytes[i]);
        strmap_put(&tk->vocab, tk->tokens[i], k, i);
        if (is_added(tk->token_type[i]) && k > 0) tk->added[tk->n_added++] = i;
    }
    if (sort_added(tk)) return tok_fail(why, len, "out of memory");
    /* a byte without a token (SmolLM2 has none for some control bytes) is left out of
     * the ids, as HF's BPE without an unk token leaves it out */
    for (int b = 0; b < 256; b++) {
        char u[2];
        size_t k = tok_byte_utf8(b, u);
        tk->byte_id[b] = strmap_get(&tk->vocab, u, k);
    }
    return 0;
}

/* the id of a string's concatenation a + b, or -1 */
static int id_of_both(const Tokenizer *tk, const char *a, size_t na, const char *b, size_t nb) {
    char stack[256], *both = na + nb <= sizeof stack ? stack : malloc(na + nb);
    if (!both) return -1;
    memcpy(both, a, na);
    memcpy(both + na, b, nb);
    int id = strmap_get(&tk->vocab, both, na + nb);
    if (both != stack) free(both);
    return id;
}

/* merge "left right" of rank r: both parts and their concatenation must be tokens */
static int build_merges(Tokenizer *tk, const TokSpec *spec, char *why, size_t len) {
    if (pairmap_init(&tk->merges, (size_t)spec->n_merges)) return tok_fail(why, len, "out of memory");
    for (int r = 0; r < spec->n_merges; r++) {
        const char *m = spec->merges[r], *sp = m ? strchr(m, ' ') : NULL;
        if (!sp || sp == m || !sp[1] || strchr(sp + 1, ' '))
            return tok_fail(why, len, "merge %d '%s' is not 'left right'", r, m ? m : "");
        size_t nl = (size_t)(sp - m), nr = strlen(sp + 1);
        int l = strmap_get(&tk->vocab, m, nl), rt = strmap_get(&tk->vocab, sp + 1, nr);
        int id = id_of_both(tk, m, nl, sp + 1, nr);
        if (l < 0 || rt < 0 || id < 0)
            return tok_fail(why, len, "merge %d '%s': '%s' is not in the vocabulary", r, m,
                            l < 0 ? "left part" : rt < 0 ? "right part" : "the merged token");
        pairmap_put(&tk->merges, l, rt, r, id);
    }
    return 0;
}

int tok_build(Tokenizer **out, const TokSpec *spec, char *why, size_t len) {
    *out = NULL;
    if (!spec->model || strcmp(spec->model, "gpt2"))
        return tok_fail(why, len, "tokenizer model '%s' is not byte-level BPE ('gpt2')",
                        spec->model ? spec->model : "(none)");
    if (spec->n_vocab <= 0 || !spec->tokens) return tok_fail(why, len, "the tokenizer has no vocabulary");
    Tokenizer *tk = calloc(1, sizeof *tk);
    if (!tk) return tok_fail(why, len, "out of memory");
    tk->bos_id = spec->bos_id; tk->eos_id = spec->eos_id; tk->add_bos = spec->add_bos;
    /* Llama-3's tokenizer.json says ignore_merges, and llama.cpp's llama-bpe does the same */
    tk->ignore_merges = spec->pre && !strcmp(spec->pre, "llama-bpe");
    /* Qwen2's tokenizer.json normalizes to NFC (llama.cpp's qwen2 does not: HF is the reference here) */
    tk->nfc = spec->pre && !strcmp(spec->pre, "qwen2");
    if (pretok_build(&tk->pre, spec->pre, why, len) || build_vocab(tk, spec, why, len) ||
        build_merges(tk, spec, why, len)) {
        tok_free(tk);
        return -1;
    }
    *out = tk;
    return 0;
}

void tok_free(Tokenizer *tk) {
    if (!tk) return;
    for (int i = 0; i < tk->n_vocab; i++) {
        if (tk->tokens) free(tk->tokens[i]);
        if (tk->bytes) free(tk->bytes[i]);
    }
    free(tk->tokens); free(tk->bytes); free(tk->n_bytes); free(tk->token_type); free(tk->added);
    strmap_free(&tk->vocab);
    pairmap_free(&tk->merges);
    pretok_free(tk->pre);
    free(tk);
}

int tok_n_vocab(const Tokenizer *tk) { return tk->n_vocab; }
int tok_find(const Tokenizer *tk, const char *token) { return strmap_get(&tk->vocab, token, strlen(token)); }
int tok_bos(const Tokenizer *tk) { return tk->bos_id; }
int tok_eos(const Tokenizer *tk) { return tk->eos_id; }
int tok_add_bos(const Tokenizer *tk) { return tk->add_bos; }

/* the byte offset of the first invalid UTF-8 sequence in s[0..n), or n (PCRE2 is given only valid text) */
static size_t utf8_invalid_at(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        int k = c < 0x80 ? 1 : (c >> 5) == 6 && c >= 0xc2 ? 2 : (c >> 4) == 14 ? 3
              : (c >> 3) == 30 && c <= 0xf4 ? 4 : 0;
        if (k == 0 || i + (size_t)k > n) return i;
        for (int j = 1; j < k; j++) if ((s[i + j] & 0xc0) != 0x80) return i;
        if (k == 3) {
            unsigned cp = (c & 0x0f) << 12 | (s[i + 1] & 0x3fu) << 6;
            if (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff)) return i; /* overlong, surrogate */
        }
        if (k == 4) {
            unsigned cp = (c & 0x07) << 18 | (s[i + 1] & 0x3fu) << 12;
            if (cp < 0x10000 || cp > 0x10ffff) return i;
        }
        i += (size_t)k;
    }
    return n;
}

/* the added token that starts at s (longest first), or -1 */
static int added_at(const Tokenizer *tk, const char *s, size_t left) {
    unsigned char b = (unsigned char)s[0];
    for (int j = tk->added_from[b]; j < tk->added_from[b + 1]; j++) {
        int id = tk->added[j];
        if (tk->n_bytes[id] <= left && memcmp(s, tk->bytes[id], tk->n_bytes[id]) == 0) return id;
    }
    return -1;
}

typedef struct { const Tokenizer *tk; TokIds *out; char *why; size_t len; } EncodeCtx;

static int encode_piece(void *c, const char *s, size_t n) {
    EncodeCtx *e = c;
    return tok_bpe_piece(e->tk, s, n, e->out) ? tok_fail(e->why, e->len, "out of memory") : 0;
}

/* one stretch between added tokens: NFC first where the family says so (ASCII is in NFC already) */
static int encode_stretch(const Tokenizer *tk, const char *s, size_t n, EncodeCtx *e) {
    size_t i = 0;
    while (tk->nfc && i < n && (unsigned char)s[i] < 0x80) i++;
    if (!tk->nfc || i == n) return pretok_split(tk->pre, s, n, encode_piece, e, e->why, e->len);
    utf8proc_uint8_t *nfc = NULL;
    utf8proc_ssize_t k = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &nfc,
                                      UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    int rc = k < 0 ? tok_fail(e->why, e->len, "NFC: %s", utf8proc_errmsg(k))
                   : pretok_split(tk->pre, (const char *)nfc, (size_t)k, encode_piece, e, e->why, e->len);
    free(nfc);
    return rc;
}

int tok_encode(const Tokenizer *tk, const char *text, size_t n, TokIds *out, char *why, size_t len) {
    size_t bad = utf8_invalid_at((const unsigned char *)text, n);
    if (bad < n) return tok_fail(why, len, "the text is not valid UTF-8 at byte %zu", bad);
    EncodeCtx e = {tk, out, why, len};
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        int id = i < n ? added_at(tk, text + i, n - i) : -1;
        if (id < 0 && i < n) continue;
        if (i > start && encode_stretch(tk, text + start, i - start, &e)) return -1;
        if (id >= 0) {
            if (tokids_push(out, id)) return tok_fail(why, len, "out of memory");
            i += tk->n_bytes[id] - 1;
        }
        start = i + 1;
    }
    return 0;
}

int tok_decode(const Tokenizer *tk, const int *ids, size_t n, char **text, size_t *n_text, char *why, size_t len) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= tk->n_vocab)
            return tok_fail(why, len, "id %d at position %zu is outside the vocabulary (0..%d)", ids[i], i,
                            tk->n_vocab - 1);
        total += tk->n_bytes[ids[i]];
    }
    char *s = malloc(total + 1);
    if (!s) return tok_fail(why, len, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        memcpy(s + k, tk->bytes[ids[i]], tk->n_bytes[ids[i]]);
        k += tk->n_bytes[ids[i]];
    }
    s[k] = 0;
    *text = s; *n_text = k;
    return 0;
}
