/* tok_pre.c — the pre-tokenizer: splits text (with its added tokens already
 * taken out) into the pieces that BPE merges within, by the family's regex
 * through PCRE2 with Unicode properties (UTF + UCP), JIT-compiled.
 *
 * Each family by its GGUF tokenizer.ggml.pre name; the patterns are the ones
 * the families' tokenizer.json files carry, byte for byte:
 *   gpt2       GPT-2's ByteLevel pattern
 *   llama-bpe  Llama-3's Split pattern (numbers in runs of at most 3)
 *   qwen2      Qwen2's Split pattern (every number alone)
 *   smollm     SmolLM2: every \p{N} character a piece of its own (HF's
 *              Digits(individual_digits=True)), then GPT-2's pattern over the
 *              rest, as llama.cpp's smollm pre-tokenizer does
 * Text that no match covers becomes a piece of its own, as HF's Split with
 * behaviour "isolated" does (none of these patterns leaves any). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tok_int.h"

#include <stdlib.h>
#include <string.h>

static const char GPT2_PAT[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
static const char LLAMA3_PAT[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|"
    " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char QWEN2_PAT[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}|"
    " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char DIGIT_PAT[] = "\\p{N}";

struct PreTok {
    pcre2_code *re;     /* the family's pattern */
    pcre2_code *digits; /* smollm only: one \p{N} a piece, before re; else NULL */
};

static pcre2_code *compile(const char *pat, char *why, size_t len) {
    int err; PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err, &off, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        tok_fail(why, len, "pre-tokenizer pattern at offset %zu: %s", (size_t)off, (char *)msg);
        return NULL;
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* where JIT is missing, the interpreter matches the same */
    return re;
}

const char *pretok_pattern(const char *pre) {
    return !pre ? NULL : !strcmp(pre, "gpt2") || !strcmp(pre, "smollm") ? GPT2_PAT
         : !strcmp(pre, "llama-bpe") ? LLAMA3_PAT : !strcmp(pre, "qwen2") ? QWEN2_PAT : NULL;
}

int pretok_build(PreTok **out, const char *pre, char *why, size_t len) {
    const char *pat = pretok_pattern(pre);
    if (!pat)
        return tok_fail(why, len, "unknown pre-tokenizer '%s' (known: gpt2, llama-bpe, qwen2, smollm)",
                        pre ? pre : "(none)");
    PreTok *p = calloc(1, sizeof *p);
    if (!p) return tok_fail(why, len, "out of memory");
    p->re = compile(pat, why, len);
    if (p->re && !strcmp(pre, "smollm")) p->digits = compile(DIGIT_PAT, why, len);
    if (!p->re || (!strcmp(pre, "smollm") && !p->digits)) { pretok_free(p); return -1; }
    *out = p;
    return 0;
}

void pretok_free(PreTok *p) {
    if (!p) return;
    pcre2_code_free(p->re);
    pcre2_code_free(p->digits);
    free(p);
}

/* the pieces of text[0..n) by re: each match to on_match, each stretch between matches to on_gap;
 * md: match data for re */
static int split_by(const pcre2_code *re, pcre2_match_data *md, const char *text, size_t n, PieceFn on_match,
                    PieceFn on_gap, void *ctx, char *why, size_t len) {
    size_t at = 0, done = 0;
    int rc = 0;
    while (at < n && rc == 0) {
        int m = pcre2_match(re, (PCRE2_SPTR)text, n, at, PCRE2_NO_UTF_CHECK, md, NULL);
        if (m == PCRE2_ERROR_NOMATCH) break;
        if (m < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(m, msg, sizeof msg);
            rc = tok_fail(why, len, "pre-tokenizer match at byte %zu: %s", at, (char *)msg);
            break;
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        if (ov[0] > done) rc = on_gap(ctx, text + done, ov[0] - done);
        if (rc == 0 && ov[1] > ov[0]) rc = on_match(ctx, text + ov[0], ov[1] - ov[0]);
        done = ov[1] > ov[0] ? ov[1] : ov[0];
        at = ov[1] > ov[0] ? ov[1] : ov[0] + 1; /* an empty match moves on (none of the patterns makes one) */
        while (at < n && ((unsigned char)text[at] & 0xc0) == 0x80) at++;
    }
    if (rc == 0 && done < n) rc = on_gap(ctx, text + done, n - done);
    return rc;
}

/* smollm: a stretch between digits, split by the family's pattern */
typedef struct { const PreTok *p; pcre2_match_data *md; PieceFn piece; void *ctx; char *why; size_t len; } Outer;
/* (md is the inner split's own: the digit split's ovector must outlive it) */

static int between_digits(void *c, const char *s, size_t n) {
    Outer *o = c;
    return split_by(o->p->re, o->md, s, n, o->piece, o->piece, o->ctx, o->why, o->len);
}

static int one_digit(void *c, const char *s, size_t n) {
    Outer *o = c;
    return o->piece(o->ctx, s, n);
}

int pretok_split(const PreTok *p, const char *text, size_t n, PieceFn piece, void *ctx, char *why, size_t len) {
    /* match data per call, not per tokenizer (threads may split at once): one for the family's
     * pattern, and for smollm another for the digit split around it */
    pcre2_match_data *md = pcre2_match_data_create(4, NULL), *outer = p->digits ? pcre2_match_data_create(4, NULL) : NULL;
    int rc = -1;
    if (!md || (p->digits && !outer)) tok_fail(why, len, "out of memory");
    else if (!p->digits) rc = split_by(p->re, md, text, n, piece, piece, ctx, why, len);
    else {
        Outer o = {p, md, piece, ctx, why, len};
        rc = split_by(p->digits, outer, text, n, one_digit, between_digits, &o, why, len);
    }
    pcre2_match_data_free(md);
    pcre2_match_data_free(outer);
    return rc;
}
