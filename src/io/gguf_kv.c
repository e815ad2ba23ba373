/* gguf_kv.c — the values of a GGUF file's KV pairs (gguf.h): scalars as
 * int64 or double, strings and arrays of strings or integers copied out.
 * gguf_open has checked every offset and length these read, so they only
 * check that a value is of the kind asked for. */
#include "nereus/gguf.h"

#pragma GCC diagnostic ignored "-Wformat-truncation"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/util.h"

/* one scalar at p of type vt as a double (exact for every integer type but the largest 64-bit values) and,
 * for integer types, as an int64 */
static int scalar_at(const unsigned char *p, int vt, int64_t *iv, double *dv) {
    union { uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32; float f32; uint64_t u64;
            int64_t i64; double f64; } u;
    static const int size[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if (vt < 0 || vt > GGUF_F64 || vt == GGUF_STR || vt == GGUF_ARR) return -1;
    memcpy(&u, p, (size_t)size[vt]);
    *iv = 0;
    switch (vt) {
    case GGUF_U8: case GGUF_BOOL: *iv = u.u8; break;
    case GGUF_I8: *iv = u.i8; break;
    case GGUF_U16: *iv = u.u16; break;
    case GGUF_I16: *iv = u.i16; break;
    case GGUF_U32: *iv = u.u32; break;
    case GGUF_I32: *iv = u.i32; break;
    case GGUF_U64: *iv = u.u64 > INT64_MAX ? INT64_MAX : (int64_t)u.u64; break;
    case GGUF_I64: *iv = u.i64; break;
    case GGUF_F32: *dv = u.f32; return 1;
    case GGUF_F64: *dv = u.f64; return 1;
    }
    *dv = (double)*iv;
    return 0; /* 0: an integer, 1: a float */
}

int gguf_kv_i64(const GGUFFile *g, const GGUFKV *kv, int64_t *out, char *why, size_t len) {
    double d = 0;
    int k = kv->type == GGUF_ARR ? -1 : scalar_at(g->map + kv->off, kv->type, out, &d);
    if (k == 1 && isfinite(d) && d == floor(d) && fabs(d) < 9e15) {
        *out = (int64_t)d;
        k = 0;
    }
    if (k != 0) {
        snprintf(why, len, "%s: key %s is %s%s, not an integer", g->path, kv->key, gguf_vtype_name(kv->type),
                 k == 1 ? " and not whole" : "");
        return -1;
    }
    return 0;
}

int gguf_kv_f64(const GGUFFile *g, const GGUFKV *kv, double *out, char *why, size_t len) {
    int64_t iv = 0;
    if (kv->type == GGUF_ARR || scalar_at(g->map + kv->off, kv->type, &iv, out) < 0) {
        snprintf(why, len, "%s: key %s is %s, not a number", g->path, kv->key, gguf_vtype_name(kv->type));
        return -1;
    }
    return 0;
}

char *gguf_kv_str(const GGUFFile *g, const GGUFKV *kv, char *why, size_t len) {
    if (kv->type != GGUF_STR) {
        snprintf(why, len, "%s: key %s is %s, not a string", g->path, kv->key, gguf_vtype_name(kv->type));
        return NULL;
    }
    char *s = nr_xmalloc(kv->n + 1);
    memcpy(s, g->map + kv->off, kv->n);
    s[kv->n] = 0;
    return s;
}

int gguf_kv_strs(const GGUFFile *g, const GGUFKV *kv, char ***out, char *why, size_t len) {
    if (kv->type != GGUF_ARR || kv->elem_type != GGUF_STR) {
        snprintf(why, len, "%s: key %s is %s%s, not an array of strings", g->path, kv->key,
                 kv->type == GGUF_ARR ? "an array of " : "", gguf_vtype_name(kv->type == GGUF_ARR ? kv->elem_type
                                                                                                  : kv->type));
        return -1;
    }
    char **v = nr_xcalloc(kv->n + 1, sizeof *v);
    size_t pos = kv->off;
    for (uint64_t i = 0; i < kv->n; i++) {
        uint64_t n;
        memcpy(&n, g->map + pos, 8);
        v[i] = nr_xmalloc(n + 1);
        memcpy(v[i], g->map + pos + 8, n);
        v[i][n] = 0;
        pos += 8 + n;
    }
    *out = v;
    return 0;
}

int gguf_kv_ints(const GGUFFile *g, const GGUFKV *kv, int **out, char *why, size_t len) {
    static const int size[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    int et = kv->elem_type;
    if (kv->type != GGUF_ARR || et == GGUF_F32 || et == GGUF_F64 || et == GGUF_STR) {
        snprintf(why, len, "%s: key %s is not an array of integers", g->path, kv->key);
        return -1;
    }
    int *v = nr_xmalloc((kv->n + 1) * sizeof *v);
    for (uint64_t i = 0; i < kv->n; i++) {
        int64_t x = 0;
        double d = 0;
        scalar_at(g->map + kv->off + i * (size_t)size[et], et, &x, &d);
        if (x < INT32_MIN || x > INT32_MAX) {
            snprintf(why, len, "%s: key %s: element %llu (%lld) is outside int32", g->path, kv->key,
                     (unsigned long long)i, (long long)x);
            free(v);
            return -1;
        }
        v[i] = (int)x;
    }
    *out = v;
    return 0;
}
