/* tok_int.h — the tokenizer's parts shared between src/text/ files: the
 * hash maps (token string → id, token pair → merge), the byte-level
 * alphabet, the pre-tokenizer and the merge loop, and the Tokenizer itself. */
#ifndef NEREUS_TOK_INT_H
#define NEREUS_TOK_INT_H

#include <stddef.h>
#include <stdint.h>

#include "nereus/text.h"

/* token string -> id, open addressing; keys point into the tokenizer's own copies */
typedef struct StrMap {
    const char **keys; /* (cap) NULL where empty */
    size_t *klen;      /* (cap) */
    int *vals;         /* (cap) */
    size_t cap;        /* a power of two, at least twice the entries */
} StrMap;

int strmap_init(StrMap *m, size_t n_entries);
void strmap_free(StrMap *m);
/* inserts key[0..n) -> val (the key memory must outlive the map); a key already there keeps its first id */
void strmap_put(StrMap *m, const char *key, size_t n, int val);
int strmap_get(const StrMap *m, const char *key, size_t n); /* -1 where absent */

/* (left id, right id) -> (rank, merged id) */
typedef struct PairMap {
    uint64_t *keys; /* (cap) UINT64_MAX where empty */
    int *rank, *id; /* (cap) */
    size_t cap;
} PairMap;

int pairmap_init(PairMap *m, size_t n_entries);
void pairmap_free(PairMap *m);
void pairmap_put(PairMap *m, int left, int right, int rank, int id);
/* the rank of (left, right) and its merged id in *id, or -1 where no merge */
int pairmap_get(const PairMap *m, int left, int right, int *id);

/* GPT-2's bytes_to_unicode: the UTF-8 of byte b's code point in out (1 or 2 bytes), its length returned */
size_t tok_byte_utf8(int b, char out[2]);
/* the bytes a byte-level token string stands for, appended to out (cap bytes, length in *n):
 * code points outside the alphabet pass through as their UTF-8, as HF's ByteLevel decoder does */
void tok_bytes_of(const char *token, unsigned char *out, size_t *n);

/* the pre-tokenizer: the family's regex (and SmolLM's digit split) over a text without added tokens */
typedef struct PreTok PreTok;
/* the family's regex (for smollm: the one after the digit split), or NULL for a name not known */
const char *pretok_pattern(const char *pre);
int pretok_build(PreTok **out, const char *pre, char *why, size_t len);
void pretok_free(PreTok *p);
/* calls piece(ctx, s, n) for each piece of text[0..n) in order; stops at the first nonzero return */
typedef int (*PieceFn)(void *ctx, const char *s, size_t n);
int pretok_split(const PreTok *p, const char *text, size_t n, PieceFn piece, void *ctx, char *why, size_t len);

struct Tokenizer {
    int n_vocab;
    char **tokens;          /* (n_vocab) the vocabulary's strings, own copies */
    unsigned char **bytes;  /* (n_vocab) what each id decodes to */
    size_t *n_bytes;        /* (n_vocab) */
    int *token_type;        /* (n_vocab) TOK_TYPE_* */
    StrMap vocab;
    PairMap merges;
    int byte_id[256];       /* the id of each single byte's token */
    int ignore_merges;      /* Llama-3: a piece that is whole in the vocabulary is one token */
    int nfc;                /* Qwen2: text between added tokens is put in Unicode NFC first */
    PreTok *pre;
    int *added;             /* (n_added) the added tokens' ids by first byte, then longest text first */
    int n_added;
    int added_from[257];    /* added[added_from[b] .. added_from[b + 1]) start with byte b */
    int bos_id, eos_id, add_bos;
};

/* writes the message to why and returns -1: `return tok_fail(why, len, "...", ...);` */
int tok_fail(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* the merge loop: appends the ids of one piece's bytes to out */
int tok_bpe_piece(const Tokenizer *tk, const char *s, size_t n, TokIds *out);

#endif
