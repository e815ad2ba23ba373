/* gguf.c — the GGUF reader (include/nereus/gguf.h): the file mapped
 * read-only, its header, KV pairs and tensor infos parsed by a cursor that
 * checks every read against the end of the file. Counts are checked against
 * the bytes left before anything is sized by them (a KV pair takes at least
 * 13 bytes, a tensor info at least 28, an array element at least its size),
 * so a corrupt count is refused, never allocated. */
#include "nereus/gguf.h"

/* messages and paths are cut to their buffers on purpose (a long path only shortens the message) */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nereus/util.h"

#define GGUF_MAGIC 0x46554747u /* "GGUF" little-endian */
#define MAX_NAME 65536         /* a key or tensor name longer than this is refused */

/* ggml's block sizes: (values per block, bytes per block); 0 where ggml names no such type */
static const struct { const char *name; int blck, size; } ggml_types[] = {
    [0] = {"F32", 1, 4},        [1] = {"F16", 1, 2},        [2] = {"Q4_0", 32, 18},     [3] = {"Q4_1", 32, 20},
    [6] = {"Q5_0", 32, 22},     [7] = {"Q5_1", 32, 24},     [8] = {"Q8_0", 32, 34},     [9] = {"Q8_1", 32, 40},
    [10] = {"Q2_K", 256, 84},   [11] = {"Q3_K", 256, 110},  [12] = {"Q4_K", 256, 144},  [13] = {"Q5_K", 256, 176},
    [14] = {"Q6_K", 256, 210},  [15] = {"Q8_K", 256, 292},  [16] = {"IQ2_XXS", 256, 66}, [17] = {"IQ2_XS", 256, 74},
    [18] = {"IQ3_XXS", 256, 98}, [19] = {"IQ1_S", 256, 50}, [20] = {"IQ4_NL", 32, 18},  [21] = {"IQ3_S", 256, 110},
    [22] = {"IQ2_S", 256, 82},  [23] = {"IQ4_XS", 256, 136}, [24] = {"I8", 1, 1},       [25] = {"I16", 1, 2},
    [26] = {"I32", 1, 4},       [27] = {"I64", 1, 8},       [28] = {"F64", 1, 8},       [29] = {"IQ1_M", 256, 56},
    [30] = {"BF16", 1, 2},      [34] = {"TQ1_0", 256, 54},  [35] = {"TQ2_0", 256, 66},  [39] = {"MXFP4", 32, 17},
    [40] = {"NVFP4", 64, 36},   [41] = {"Q1_0", 128, 18},
};
#define NGGML ((int)(sizeof ggml_types / sizeof ggml_types[0]))

/* scalar value sizes by GGUF_* (strings and arrays: 0) */
static const int vsize[GGUF_NUM_VTYPES] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
static const char *const vname[GGUF_NUM_VTYPES] = {"uint8", "int8", "uint16", "int16", "uint32", "int32",
                                                   "float32", "bool", "string", "array", "uint64", "int64",
                                                   "float64"};

const char *gguf_vtype_name(int vtype) { return vtype >= 0 && vtype < GGUF_NUM_VTYPES ? vname[vtype] : "unknown"; }

const char *gguf_type_name(int type, char *buf, size_t n) {
    if (type >= 0 && type < NGGML && ggml_types[type].name) return ggml_types[type].name;
    snprintf(buf, n, "type %d", type);
    return buf;
}

int gguf_type_supported(int type) {
    return type == GGML_F32 || type == GGML_F16 || type == GGML_BF16 || type == GGML_Q8_0 || type == GGML_Q4_0 ||
           type == GGML_Q4_1 || type == GGML_Q4_K || type == GGML_Q6_K;
}

/* ---- the cursor ------------------------------------------------------------------- */

typedef struct Cur {
    const GGUFFile *g;
    size_t pos;
    char *why;
    size_t len;
} Cur;

static size_t left(const Cur *c) { return c->g->size - c->pos; }

/* n bytes at the cursor, advancing it; NULL with why when the file ends first */
static const unsigned char *take(Cur *c, size_t n, const char *what) {
    if (n > left(c)) {
        snprintf(c->why, c->len, "%s: truncated: %s at byte %zu needs %zu bytes, %zu left", c->g->path, what, c->pos,
                 n, left(c));
        return NULL;
    }
    const unsigned char *p = c->g->map + c->pos;
    c->pos += n;
    return p;
}

static int get_u32(Cur *c, uint32_t *v, const char *what) {
    const unsigned char *p = take(c, 4, what);
    if (p) memcpy(v, p, 4); /* little-endian files on little-endian hosts (x86-64, aarch64) */
    return p ? 0 : -1;
}

static int get_u64(Cur *c, uint64_t *v, const char *what) {
    const unsigned char *p = take(c, 8, what);
    if (p) memcpy(v, p, 8);
    return p ? 0 : -1;
}

/* a GGUF string: its bytes' offset and length (checked against the file) */
static int get_str(Cur *c, size_t *off, uint64_t *n, const char *what) {
    if (get_u64(c, n, what)) return -1;
    if (*n > left(c)) {
        snprintf(c->why, c->len, "%s: %s at byte %zu: string length %llu is past the end of the file (%zu bytes)",
                 c->g->path, what, c->pos - 8, (unsigned long long)*n, c->g->size);
        return -1;
    }
    *off = c->pos;
    c->pos += *n;
    return 0;
}

/* ---- KV pairs ---------------------------------------------------------------------- */

/* an array's elements: its element type and count, each element checked (strings walked) */
static int skip_array(Cur *c, GGUFKV *kv) {
    uint32_t et;
    if (get_u32(c, &et, "array type") || get_u64(c, &kv->n, "array count")) return -1;
    kv->elem_type = (int)et;
    kv->off = c->pos;
    if (et >= GGUF_NUM_VTYPES || et == GGUF_ARR) {
        snprintf(c->why, c->len, "%s: key %s: array of %s (type %u): %s", c->g->path, kv->key,
                 gguf_vtype_name((int)et), et, et == GGUF_ARR ? "arrays of arrays are not supported"
                                                              : "not a GGUF value type");
        return -1;
    }
    size_t min = et == GGUF_STR ? 8 : (size_t)vsize[et];
    if (kv->n > left(c) / min) {
        snprintf(c->why, c->len, "%s: key %s: array count %llu is past the end of the file (%zu bytes left)",
                 c->g->path, kv->key, (unsigned long long)kv->n, left(c));
        return -1;
    }
    if (et != GGUF_STR) {
        c->pos += kv->n * min;
        return 0;
    }
    for (uint64_t i = 0; i < kv->n; i++) {
        size_t off;
        uint64_t n;
        if (get_str(c, &off, &n, kv->key)) return -1;
    }
    return 0;
}

/* one value of type vt at the cursor into kv (offset, count) */
static int read_value(Cur *c, GGUFKV *kv) {
    kv->n = 1;
    kv->off = c->pos;
    if (kv->type == GGUF_STR) return get_str(c, &kv->off, &kv->n, kv->key);
    if (kv->type == GGUF_ARR) return skip_array(c, kv);
    if (kv->type < 0 || kv->type >= GGUF_NUM_VTYPES) {
        snprintf(c->why, c->len, "%s: key %s: value type %d is not a GGUF value type", c->g->path, kv->key, kv->type);
        return -1;
    }
    return take(c, (size_t)vsize[kv->type], kv->key) ? 0 : -1;
}

/* a name (key or tensor) copied out NUL-terminated (malloc'd: gguf_close frees it) */
static const char *copy_name(Cur *c, const char *what) {
    size_t off;
    uint64_t n;
    if (get_str(c, &off, &n, what)) return NULL;
    if (n == 0 || n > MAX_NAME || memchr(c->g->map + off, 0, n)) {
        snprintf(c->why, c->len, "%s: %s at byte %zu: %s", c->g->path, what, off,
                 n == 0 ? "empty name" : n > MAX_NAME ? "name longer than 65536 bytes" : "name holds a NUL byte");
        return NULL;
    }
    char *s = nr_xmalloc(n + 1);
    memcpy(s, c->g->map + off, n);
    s[n] = 0;
    return s;
}

static int read_kvs(Cur *c, GGUFFile *g) {
    for (int i = 0; i < g->n_kv; i++) {
        GGUFKV *kv = &g->kv[i];
        uint32_t type;
        char what[48];
        snprintf(what, sizeof what, "the key of KV pair %d", i);
        if (!(kv->key = copy_name(c, what)) || get_u32(c, &type, kv->key)) return -1;
        kv->type = (int)type;
        if (read_value(c, kv)) return -1;
    }
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* a name that appears twice among the n names at base + k·stride (each a const char *), or NULL: sorted
 * copies compared side by side, so a file of many names costs n log n, not n² */
static const char *duplicate(const void *base, size_t stride, int n) {
    const char **v = nr_xmalloc(((size_t)n + 1) * sizeof *v), *dup = NULL;
    for (int i = 0; i < n; i++) memcpy(&v[i], (const char *)base + (size_t)i * stride, sizeof *v);
    qsort(v, (size_t)n, sizeof *v, cmp_str);
    for (int i = 1; i < n && !dup; i++)
        if (!strcmp(v[i - 1], v[i])) dup = v[i];
    free(v);
    return dup;
}

static int check_unique(GGUFFile *g, char *why, size_t len) {
    const char *k = duplicate(&g->kv[0].key, sizeof g->kv[0], g->n_kv);
    const char *t = k ? NULL : duplicate(&g->t[0].name, sizeof g->t[0], g->n_tensors);
    if (k) snprintf(why, len, "%s: key %s appears twice", g->path, k);
    if (t) snprintf(why, len, "%s: tensor %s appears twice", g->path, t);
    return k || t ? -1 : 0;
}

/* ---- tensor infos ------------------------------------------------------------------ */

/* t's element count and bytes from its dims and type; -1 with why when they overflow or do not fit blocks */
static int tensor_size(Cur *c, GGUFTensor *t) {
    size_t numel = 1;
    for (int d = 0; d < t->ndim; d++) {
        if (t->ne[d] < 0 || (t->ne[d] > 0 && numel > SIZE_MAX / 2 / (size_t)t->ne[d])) {
            snprintf(c->why, c->len, "%s: tensor %s: dimension %d is %lld: negative or too large", c->g->path,
                     t->name, d, (long long)t->ne[d]);
            return -1;
        }
        numel *= (size_t)t->ne[d];
    }
    t->numel = numel;
    t->nbytes = 0;
    if (t->type < 0 || t->type >= NGGML || !ggml_types[t->type].name) return 0; /* refused when read */
    size_t blck = (size_t)ggml_types[t->type].blck;
    if (t->ndim > 0 && (size_t)t->ne[0] % blck != 0) {
        snprintf(c->why, c->len, "%s: tensor %s: first dimension %lld is not a multiple of %s's block of %zu",
                 c->g->path, t->name, (long long)t->ne[0], ggml_types[t->type].name, blck);
        return -1;
    }
    t->nbytes = numel / blck * (size_t)ggml_types[t->type].size;
    return 0;
}

static int read_tensor_info(Cur *c, GGUFTensor *t, int i) {
    char what[48];
    uint32_t nd, type;
    snprintf(what, sizeof what, "the name of tensor %d", i);
    if (!(t->name = copy_name(c, what)) || get_u32(c, &nd, t->name)) return -1;
    if (nd < 1 || nd > 4) {
        snprintf(c->why, c->len, "%s: tensor %s: %u dimensions (1 to 4 are allowed)", c->g->path, t->name, nd);
        return -1;
    }
    t->ndim = (int)nd;
    for (int d = 0; d < 4; d++) {
        uint64_t ne = 1;
        if (d < t->ndim && get_u64(c, &ne, t->name)) return -1;
        t->ne[d] = ne > INT64_MAX ? -1 : (int64_t)ne;
    }
    uint64_t off;
    if (get_u32(c, &type, t->name) || get_u64(c, &off, t->name)) return -1;
    t->type = type > INT32_MAX ? INT32_MAX : (int)type; /* a number ggml does not name is refused when read */
    t->offset = off > SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t)off;
    return tensor_size(c, t);
}

/* every tensor inside the data section, at an aligned offset */
static int check_tensors(GGUFFile *g, char *why, size_t len) {
    size_t data = g->size - g->data_off;
    for (int i = 0; i < g->n_tensors; i++) {
        const GGUFTensor *t = &g->t[i];
        if (t->offset % g->alignment) {
            snprintf(why, len, "%s: tensor %s: offset %zu is not a multiple of the alignment %zu", g->path, t->name,
                     t->offset, g->alignment);
            return -1;
        }
        if (t->offset > data || t->nbytes > data - t->offset) {
            snprintf(why, len, "%s: tensor %s: bytes [%zu, %zu) of the data section lie outside the file's %zu "
                     "(truncated?)", g->path, t->name, t->offset, t->offset + t->nbytes, data);
            return -1;
        }
    }
    return check_unique(g, why, len);
}

/* general.alignment: a power of two (uint32 as the specification says; any integer type accepted) */
static int read_alignment(GGUFFile *g, char *why, size_t len) {
    const GGUFKV *kv = gguf_find(g, "general.alignment");
    int64_t a = 32;
    if (kv && gguf_kv_i64(g, kv, &a, why, len)) return -1;
    if (a < 1 || a > (1 << 30) || (a & (a - 1))) {
        snprintf(why, len, "%s: general.alignment %lld is not a power of two", g->path, (long long)a);
        return -1;
    }
    g->alignment = (size_t)a;
    return 0;
}

/* ---- open and close ---------------------------------------------------------------- */

static int map_file(GGUFFile *g, const char *path, char *why, size_t len) {
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(why, len, "%s: cannot open: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    g->size = (size_t)st.st_size;
    g->map = g->size ? mmap(NULL, g->size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    close(fd);
    if (g->size && g->map == MAP_FAILED) {
        g->map = NULL;
        snprintf(why, len, "%s: cannot map: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* magic, version and the two counts, checked against the bytes after them */
static int read_header(Cur *c, GGUFFile *g) {
    uint32_t magic;
    uint64_t nt, nkv;
    if (g->size < 4 || get_u32(c, &magic, "the magic")) {
        snprintf(c->why, c->len, "%s: truncated: %zu bytes, not a GGUF file", g->path, g->size);
        return -1;
    }
    if (magic != GGUF_MAGIC) {
        snprintf(c->why, c->len, "%s: bad magic %02x %02x %02x %02x: not a GGUF file", g->path, g->map[0], g->map[1],
                 g->map[2], g->map[3]);
        return -1;
    }
    if (get_u32(c, &g->version, "the version") || get_u64(c, &nt, "the tensor count") ||
        get_u64(c, &nkv, "the KV count"))
        return -1;
    if (g->version != 2 && g->version != 3) {
        snprintf(c->why, c->len, "%s: GGUF version %u is not supported (2 and 3 are)", g->path, g->version);
        return -1;
    }
    if (nkv > left(c) / 13 || nt > left(c) / 28 || nkv + nt > left(c) / 13) {
        snprintf(c->why, c->len, "%s: %llu KV pairs and %llu tensors cannot fit in the file's %zu bytes", g->path,
                 (unsigned long long)nkv, (unsigned long long)nt, g->size);
        return -1;
    }
    g->n_kv = (int)nkv;
    g->n_tensors = (int)nt;
    return 0;
}

int gguf_open(GGUFFile *g, const char *path, char *why, size_t len) {
    memset(g, 0, sizeof *g);
    g->path = path;
    if (map_file(g, path, why, len)) return -1;
    Cur c = {g, 0, why, len};
    if (read_header(&c, g)) goto fail;
    g->kv = nr_xcalloc((size_t)g->n_kv + 1, sizeof *g->kv);
    g->t = nr_xcalloc((size_t)g->n_tensors + 1, sizeof *g->t);
    if (read_kvs(&c, g) || read_alignment(g, why, len)) goto fail;
    for (int i = 0; i < g->n_tensors; i++)
        if (read_tensor_info(&c, &g->t[i], i)) goto fail;
    size_t pad = (g->alignment - c.pos % g->alignment) % g->alignment;
    if (pad > left(&c)) {
        snprintf(why, len, "%s: truncated: the data section would start at byte %zu, past the end (%zu bytes)", path,
                 c.pos + pad, g->size);
        goto fail;
    }
    g->data_off = c.pos + pad;
    if (check_tensors(g, why, len)) goto fail;
    return 0;
fail:
    gguf_close(g);
    return -1;
}

void gguf_close(GGUFFile *g) {
    if (g->map) munmap((void *)g->map, g->size);
    for (int i = 0; g->kv && i < g->n_kv; i++) free((char *)g->kv[i].key);
    for (int i = 0; g->t && i < g->n_tensors; i++) free((char *)g->t[i].name);
    free(g->kv);
    free(g->t);
    memset(g, 0, sizeof *g);
}

const GGUFKV *gguf_find(const GGUFFile *g, const char *key) {
    for (int i = 0; i < g->n_kv; i++)
        if (!strcmp(g->kv[i].key, key)) return &g->kv[i];
    return NULL;
}

const GGUFTensor *gguf_tensor(const GGUFFile *g, const char *name) {
    for (int i = 0; i < g->n_tensors; i++)
        if (!strcmp(g->t[i].name, name)) return &g->t[i];
    return NULL;
}

int gguf_read_f32(const GGUFFile *g, const GGUFTensor *t, float *dst, char *why, size_t len) {
    if (!gguf_type_supported(t->type)) {
        char b[32];
        snprintf(why, len, "%s: tensor %s is %s: only F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K and Q6_K are "
                 "dequantized", g->path, t->name, gguf_type_name(t->type, b, sizeof b));
        return -1;
    }
    gguf_dequantize(t->type, g->map + g->data_off + t->offset, dst, t->numel);
    return 0;
}
