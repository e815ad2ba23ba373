/* tok_map.c — the tokenizer's two hash maps (tok_int.h): token string → id
 * for the vocabulary and (left id, right id) → (rank, merged id) for the
 * merges. Open addressing with linear probing, filled once at build and
 * read-only after, so lookups need no locks. */
#include "tok_int.h"

#include <stdlib.h>
#include <string.h>

static size_t cap_for(size_t n) {
    size_t cap = 16;
    while (cap < 2 * n + 1) cap <<= 1;
    return cap;
}

/* FNV-1a over the key's bytes */
static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* a 64-bit mix (splitmix64's finaliser) so that neighbouring pairs spread */
static uint64_t hash_u64(uint64_t x) {
    x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27; x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

int strmap_init(StrMap *m, size_t n_entries) {
    m->cap = cap_for(n_entries);
    m->keys = calloc(m->cap, sizeof *m->keys);
    m->klen = calloc(m->cap, sizeof *m->klen);
    m->vals = calloc(m->cap, sizeof *m->vals);
    return m->keys && m->klen && m->vals ? 0 : -1;
}

void strmap_free(StrMap *m) {
    free(m->keys); free(m->klen); free(m->vals);
    memset(m, 0, sizeof *m);
}

void strmap_put(StrMap *m, const char *key, size_t n, int val) {
    size_t i = hash_bytes(key, n) & (m->cap - 1);
    while (m->keys[i]) {
        if (m->klen[i] == n && memcmp(m->keys[i], key, n) == 0) return;
        i = (i + 1) & (m->cap - 1);
    }
    m->keys[i] = key; m->klen[i] = n; m->vals[i] = val;
}

int strmap_get(const StrMap *m, const char *key, size_t n) {
    size_t i = hash_bytes(key, n) & (m->cap - 1);
    while (m->keys[i]) {
        if (m->klen[i] == n && memcmp(m->keys[i], key, n) == 0) return m->vals[i];
        i = (i + 1) & (m->cap - 1);
    }
    return -1;
}

int pairmap_init(PairMap *m, size_t n_entries) {
    m->cap = cap_for(n_entries);
    m->keys = malloc(m->cap * sizeof *m->keys);
    m->rank = malloc(m->cap * sizeof *m->rank);
    m->id = malloc(m->cap * sizeof *m->id);
    if (!m->keys || !m->rank || !m->id) return -1;
    memset(m->keys, 0xff, m->cap * sizeof *m->keys);
    return 0;
}

void pairmap_free(PairMap *m) {
    free(m->keys); free(m->rank); free(m->id);
    memset(m, 0, sizeof *m);
}

static uint64_t pair_key(int left, int right) { return (uint64_t)(uint32_t)left << 32 | (uint32_t)right; }

/* a pair already there keeps its first (lowest) rank, as HF's merges map does */
void pairmap_put(PairMap *m, int left, int right, int rank, int id) {
    uint64_t k = pair_key(left, right);
    size_t i = hash_u64(k) & (m->cap - 1);
    while (m->keys[i] != UINT64_MAX) {
        if (m->keys[i] == k) return;
        i = (i + 1) & (m->cap - 1);
    }
    m->keys[i] = k; m->rank[i] = rank; m->id[i] = id;
}

int pairmap_get(const PairMap *m, int left, int right, int *id) {
    uint64_t k = pair_key(left, right);
    size_t i = hash_u64(k) & (m->cap - 1);
    while (m->keys[i] != UINT64_MAX) {
        if (m->keys[i] == k) { *id = m->id[i]; return m->rank[i]; }
        i = (i + 1) & (m->cap - 1);
    }
    return -1;
}
