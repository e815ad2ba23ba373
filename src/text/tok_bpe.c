/* tok_bpe.c — the merge loop: one piece's bytes, each its byte token, merged
 * pair by pair in rank order until no adjacent pair has a merge. A binary
 * heap of candidate pairs (rank, then leftmost position first, as HF's
 * word.rs orders them) over a doubly linked list of symbols makes a piece of
 * n bytes cost O(n log n); an entry whose symbols have changed since it was
 * pushed is stale and skipped when it comes out. */
#include "tok_int.h"

#include <stdlib.h>
#include <string.h>

typedef struct { int id, prev, next; } Sym; /* prev/next -1 at the ends; id -1 once merged away */
typedef struct { int rank, pos, left, right, merged; } Cand;

typedef struct {
    Cand *a;
    int n, cap;
} Heap;

static int cand_less(const Cand *x, const Cand *y) {
    return x->rank < y->rank || (x->rank == y->rank && x->pos < y->pos);
}

static int heap_push(Heap *h, Cand c) {
    if (h->n == h->cap) {
        int cap = h->cap ? 2 * h->cap : 64;
        Cand *a = realloc(h->a, (size_t)cap * sizeof *a);
        if (!a) return -1;
        h->a = a; h->cap = cap;
    }
    int i = h->n++;
    while (i > 0 && cand_less(&c, &h->a[(i - 1) / 2])) { h->a[i] = h->a[(i - 1) / 2]; i = (i - 1) / 2; }
    h->a[i] = c;
    return 0;
}

static Cand heap_pop(Heap *h) {
    Cand top = h->a[0], last = h->a[--h->n];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && cand_less(&h->a[c + 1], &h->a[c])) c++;
        if (!cand_less(&h->a[c], &last)) break;
        h->a[i] = h->a[c]; i = c;
    }
    if (h->n > 0) h->a[i] = last;
    return top;
}

/* pushes the pair that starts at symbol pos, where it has a merge */
static int push_pair(const Tokenizer *tk, Heap *h, const Sym *sym, int pos) {
    if (pos < 0 || sym[pos].next < 0) return 0;
    int left = sym[pos].id, right = sym[sym[pos].next].id, merged;
    int rank = pairmap_get(&tk->merges, left, right, &merged);
    return rank < 0 ? 0 : heap_push(h, (Cand){rank, pos, left, right, merged});
}

/* the ids of a piece that is one token whole, where the family says so (Llama-3's ignore_merges) */
static int whole_piece(const Tokenizer *tk, const char *s, size_t n) {
    char stack[256], *buf = n * 2 <= sizeof stack ? stack : malloc(n * 2);
    if (!buf) return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += tok_byte_utf8((unsigned char)s[i], buf + k);
    int id = strmap_get(&tk->vocab, buf, k);
    if (buf != stack) free(buf);
    return id;
}

static int merge_all(const Tokenizer *tk, Sym *sym, int n, Heap *h) {
    for (int i = 0; i + 1 < n; i++)
        if (push_pair(tk, h, sym, i)) return -1;
    while (h->n > 0) {
        Cand c = heap_pop(h);
        Sym *l = &sym[c.pos];
        if (l->id != c.left || l->next < 0 || sym[l->next].id != c.right) continue; /* stale */
        Sym *r = &sym[l->next];
        l->id = c.merged;
        l->next = r->next;
        if (r->next >= 0) sym[r->next].prev = c.pos;
        r->id = -1;
        if (push_pair(tk, h, sym, l->prev) || push_pair(tk, h, sym, c.pos)) return -1;
    }
    return 0;
}

int tok_bpe_piece(const Tokenizer *tk, const char *s, size_t n, TokIds *out) {
    if (n == 0) return 0;
    if (n == 1) {
        int id = tk->byte_id[(unsigned char)s[0]];
        return id < 0 ? 0 : tokids_push(out, id);
    }
    if (tk->ignore_merges) {
        int id = whole_piece(tk, s, n);
        if (id >= 0) return tokids_push(out, id);
    }
    Sym stack[64], *sym = n <= 64 ? stack : malloc(n * sizeof *sym);
    if (!sym) return -1;
    int m = 0; /* the symbols: the bytes that have a token (tok.c: build_vocab) */
    for (size_t i = 0; i < n; i++) {
        int id = tk->byte_id[(unsigned char)s[i]];
        if (id >= 0) { sym[m] = (Sym){id, m - 1, m + 1}; m++; }
    }
    if (m > 0) sym[m - 1].next = -1;
    Heap h = {0};
    int rc = merge_all(tk, sym, m, &h);
    for (int i = m > 0 ? 0 : -1; rc == 0 && i >= 0; i = sym[i].next) rc = tokids_push(out, sym[i].id);
    free(h.a);
    if (sym != stack) free(sym);
    return rc;
}
