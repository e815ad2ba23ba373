/* safetensors.c — reading and writing safetensors files (safetensors.h).
 * The JSON header is parsed with cJSON; every structural rule of the format
 * is checked on open, so that a tensor read later can only fail on I/O. */
#include "nereus/safetensors.h"

/* messages and paths are cut to their buffers on purpose (a long path only shortens the message) */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nereus/util.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c reads little-endian data in place: a big-endian host needs byte swaps"
#endif

#define ST_MAX_HEADER (100u << 20) /* the format's own limit on the JSON header */

static const struct { const char *name; int bytes; } st_dtypes[] = {
    {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4}, {"I16", 2}, {"I8", 1},
    {"U64", 8}, {"U32", 4}, {"U16", 2}, {"U8", 1}, {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1},
};

static char *st_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(nr_xmalloc(n), s, n);
}

static int dtype_bytes(const char *d) {
    for (size_t i = 0; i < sizeof st_dtypes / sizeof st_dtypes[0]; i++)
        if (strcmp(d, st_dtypes[i].name) == 0) return st_dtypes[i].bytes;
    return 0;
}

int st_dtype_is_float(const char *d) { return !strcmp(d, "F32") || !strcmp(d, "BF16") || !strcmp(d, "F16"); }

size_t st_numel(const StTensor *t) {
    size_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
    return n;
}

const StTensor *st_find(const StModel *m, const char *name) {
    for (int i = 0; i < m->nt; i++)
        if (strcmp(m->t[i].name, name) == 0) return &m->t[i];
    return NULL;
}

void st_close(StModel *m) {
    for (int i = 0; i < m->nt; i++) free(m->t[i].name);
    for (int i = 0; i < m->nfiles; i++) free(m->paths[i]);
    free(m->t);
    free(m->paths);
    free(m->data_start);
    memset(m, 0, sizeof *m);
}

/* ---- one file's header ------------------------------------------------------ */

/* the JSON header of path and the size of its data section; NULL with why */
static char *read_header(const char *path, uint64_t *hdr_len, uint64_t *data_len, char *why, size_t len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, len, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat sb;
    uint64_t n = 0;
    char *js = NULL;
    if (fstat(fileno(f), &sb) != 0 || fread(&n, 8, 1, f) != 1) {
        snprintf(why, len, "%s: too short for a safetensors file (8-byte header length)", path);
    } else if (n == 0 || n > ST_MAX_HEADER || n > (uint64_t)sb.st_size - 8) {
        snprintf(why, len, "%s: header length %llu does not fit the file's %lld bytes (not a safetensors file?)",
                 path, (unsigned long long)n, (long long)sb.st_size);
    } else {
        js = nr_xmalloc(n + 1);
        if (fread(js, 1, n, f) != n) {
            snprintf(why, len, "%s: the header is cut short", path);
            free(js);
            js = NULL;
        } else {
            js[n] = 0;
            *hdr_len = n;
            *data_len = (uint64_t)sb.st_size - 8 - n;
        }
    }
    fclose(f);
    return js;
}

/* one header entry into t; -1 with why naming the tensor */
static int parse_entry(const cJSON *e, StTensor *t, const char *path, uint64_t data_len, char *why, size_t len) {
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    const char *nm = e->string;
    if (!cJSON_IsObject(e) || !cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(off) ||
        cJSON_GetArraySize(off) != 2) {
        snprintf(why, len, "%s: tensor %s: needs \"dtype\", \"shape\" and \"data_offsets\" [begin, end]", path, nm);
        return -1;
    }
    int bytes = dtype_bytes(dt->valuestring);
    if (!bytes) {
        snprintf(why, len, "%s: tensor %s: unknown dtype \"%s\"", path, nm, dt->valuestring);
        return -1;
    }
    snprintf(t->dtype, sizeof t->dtype, "%s", dt->valuestring);
    t->ndim = cJSON_GetArraySize(sh);
    if (t->ndim > ST_MAX_DIM) {
        snprintf(why, len, "%s: tensor %s: %d dimensions (at most %d)", path, nm, t->ndim, ST_MAX_DIM);
        return -1;
    }
    double numel = 1;
    for (int d = 0; d < t->ndim; d++) {
        const cJSON *x = cJSON_GetArrayItem(sh, d);
        if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble != (double)(int64_t)x->valuedouble) {
            snprintf(why, len, "%s: tensor %s: shape entry %d is not a non-negative integer", path, nm, d);
            return -1;
        }
        t->shape[d] = (int64_t)x->valuedouble;
        numel *= x->valuedouble;
    }
    double b = cJSON_GetArrayItem(off, 0)->valuedouble, en = cJSON_GetArrayItem(off, 1)->valuedouble;
    if (!(b >= 0 && en >= b && en <= (double)data_len)) {
        snprintf(why, len, "%s: tensor %s: data_offsets [%.0f, %.0f] outside the %llu bytes of data (truncated?)",
                 path, nm, b, en, (unsigned long long)data_len);
        return -1;
    }
    if (en - b != numel * bytes) {
        snprintf(why, len, "%s: tensor %s: %.0f bytes of data for a %s tensor of %.0f elements (%.0f bytes)", path,
                 nm, en - b, t->dtype, numel, numel * bytes);
        return -1;
    }
    t->begin = (uint64_t)b;
    t->end = (uint64_t)en;
    t->name = st_strdup(nm);
    return 0;
}

static int by_begin(const void *a, const void *b) {
    const StTensor *x = *(StTensor *const *)a, *y = *(StTensor *const *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : (x->end > y->end) - (x->end < y->end);
}

/* the tensors t[0..n) of one file tile its data exactly: no hole, no overlap, nothing after */
static int check_tiling(StTensor *t, int n, uint64_t data_len, const char *path, char *why, size_t len) {
    StTensor **o = nr_xmalloc((size_t)(n ? n : 1) * sizeof *o);
    for (int i = 0; i < n; i++) o[i] = &t[i];
    qsort(o, (size_t)n, sizeof *o, by_begin);
    uint64_t at = 0;
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        if (o[i]->begin != at) {
            snprintf(why, len, "%s: tensor %s starts at byte %llu of the data where %llu was expected (%s)", path,
                     o[i]->name, (unsigned long long)o[i]->begin, (unsigned long long)at,
                     o[i]->begin < at ? "overlaps another tensor" : "a hole before it");
            rc = -1;
        }
        at = o[i]->end;
    }
    if (!rc && at != data_len) {
        snprintf(why, len, "%s: %llu bytes after the last tensor's data (the header does not describe them)", path,
                 (unsigned long long)(data_len - at));
        rc = -1;
    }
    free(o);
    return rc;
}

/* the header entries of file fi appended to m */
static int add_entries(StModel *m, const cJSON *root, int fi, uint64_t data_len, char *why, size_t len) {
    const char *path = m->paths[fi];
    int first = m->nt, n = 0;
    for (const cJSON *e = root->child; e; e = e->next) n += strcmp(e->string, "__metadata__") != 0;
    m->t = realloc(m->t, (size_t)(m->nt + n + 1) * sizeof *m->t);
    if (!m->t) nr_fatal("safetensors: out of memory for %d tensors", m->nt + n);
    for (const cJSON *e = root->child; e; e = e->next) {
        if (strcmp(e->string, "__metadata__") == 0) continue;
        if (st_find(m, e->string)) {
            snprintf(why, len, "%s: tensor %s appears twice", path, e->string);
            return -1;
        }
        StTensor *t = &m->t[m->nt];
        memset(t, 0, sizeof *t);
        t->file = fi;
        if (parse_entry(e, t, path, data_len, why, len)) return -1;
        m->nt++;
    }
    return check_tiling(m->t + first, m->nt - first, data_len, path, why, len);
}

static int add_file(StModel *m, const char *path, char *why, size_t len) {
    uint64_t hl = 0, dl = 0;
    char *js = read_header(path, &hl, &dl, why, len);
    if (!js) return -1;
    cJSON *root = cJSON_ParseWithLength(js, hl);
    free(js);
    if (!cJSON_IsObject(root)) {
        snprintf(why, len, "%s: the header is not a JSON object", path);
        cJSON_Delete(root);
        return -1;
    }
    int fi = m->nfiles++;
    m->paths = realloc(m->paths, (size_t)m->nfiles * sizeof *m->paths);
    m->data_start = realloc(m->data_start, (size_t)m->nfiles * sizeof *m->data_start);
    if (!m->paths || !m->data_start) nr_fatal("safetensors: out of memory");
    m->paths[fi] = st_strdup(path);
    m->data_start[fi] = 8 + hl;
    int rc = add_entries(m, root, fi, dl, why, len);
    cJSON_Delete(root);
    return rc;
}

int st_open_file(StModel *m, const char *path, char *why, size_t len) {
    memset(m, 0, sizeof *m);
    if (add_file(m, path, why, len) == 0) return 0;
    st_close(m);
    return -1;
}

/* ---- a model directory ------------------------------------------------------- */

/* shard file names of an index's weight_map, each once, in order of first use; -1 with why */
static int index_shards(const cJSON *wm, const char *ipath, char ***names, int *n, char *why, size_t len) {
    *n = 0;
    *names = nr_xmalloc((size_t)(cJSON_GetArraySize(wm) + 1) * sizeof **names);
    for (const cJSON *e = wm->child; e; e = e->next) {
        if (!cJSON_IsString(e) || !e->valuestring[0] || strchr(e->valuestring, '/')) {
            snprintf(why, len, "%s: weight_map entry %s: the shard must be a file name in the same directory", ipath,
                     e->string);
            return -1;
        }
        int k = 0;
        while (k < *n && strcmp((*names)[k], e->valuestring) != 0) k++;
        if (k == *n) (*names)[(*n)++] = e->valuestring;
    }
    return 0;
}

/* every tensor the index names is in its shard, and every shard tensor is in the index */
static int index_agrees(const StModel *m, const cJSON *wm, const char *ipath, char *why, size_t len) {
    for (const cJSON *e = wm->child; e; e = e->next) {
        const StTensor *t = st_find(m, e->string);
        const char *base = t ? strrchr(m->paths[t->file], '/') : NULL;
        if (!t || strcmp(base ? base + 1 : m->paths[t->file], e->valuestring) != 0) {
            snprintf(why, len, "%s: tensor %s is not in %s, the shard the index names", ipath, e->string,
                     e->valuestring);
            return -1;
        }
    }
    for (int i = 0; i < m->nt; i++)
        if (!cJSON_GetObjectItemCaseSensitive(wm, m->t[i].name)) {
            snprintf(why, len, "%s: tensor %s is not in the index %s", m->paths[m->t[i].file], m->t[i].name, ipath);
            return -1;
        }
    return 0;
}

static int open_index(StModel *m, const char *dir, const char *ipath, char *why, size_t len) {
    size_t n = 0;
    char *js = nr_read_text(ipath, ST_MAX_HEADER, &n, why, len);
    if (!js) return -1;
    cJSON *root = cJSON_ParseWithLength(js, n);
    free(js);
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    char **shards = NULL;
    int ns = 0, rc = -1;
    if (!cJSON_IsObject(wm) || !wm->child)
        snprintf(why, len, "%s: no \"weight_map\" object naming the tensors' shards", ipath);
    else if (index_shards(wm, ipath, &shards, &ns, why, len) == 0) {
        rc = 0;
        for (int k = 0; k < ns && !rc; k++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir, shards[k]);
            rc = add_file(m, path, why, len);
        }
        if (!rc) rc = index_agrees(m, wm, ipath, why, len);
    }
    free(shards);
    cJSON_Delete(root);
    return rc;
}

int st_open_dir(StModel *m, const char *dir, char *why, size_t len) {
    char one[4096], idx[4096];
    snprintf(one, sizeof one, "%s/model.safetensors", dir);
    snprintf(idx, sizeof idx, "%s/model.safetensors.index.json", dir);
    memset(m, 0, sizeof *m);
    int rc;
    if (access(idx, F_OK) == 0) rc = open_index(m, dir, idx, why, len);
    else if (access(one, F_OK) == 0) rc = add_file(m, one, why, len);
    else {
        snprintf(why, len, "%s: neither model.safetensors nor model.safetensors.index.json is there", dir);
        rc = -1;
    }
    if (rc) st_close(m);
    return rc;
}

/* ---- reading a tensor ---------------------------------------------------------- */

static float bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* IEEE half to float, subnormals, infinities and NaNs included */
static float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, mant = h & 0x3ff, u;
    if (e == 0x1f) u = sign | 0x7f800000u | (mant << 13);
    else if (e != 0) u = sign | ((e + 112) << 23) | (mant << 13);
    else if (mant == 0) u = sign;
    else { /* subnormal: normalise */
        e = 113;
        while (!(mant & 0x400)) { mant <<= 1; e--; }
        u = sign | (e << 23) | ((mant & 0x3ff) << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static int read_at(int fd, void *buf, size_t n, off_t at) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, at + (off_t)got);
        if (r <= 0) return -1;
        got += (size_t)r;
    }
    return 0;
}

int st_read_f32(const StModel *m, const StTensor *t, float *out, char *why, size_t len) {
    const char *path = m->paths[t->file];
    if (!st_dtype_is_float(t->dtype)) {
        snprintf(why, len, "%s: tensor %s is %s; only F32, BF16 and F16 tensors are read", path, t->name, t->dtype);
        return -1;
    }
    size_t n = st_numel(t), bytes = (size_t)(t->end - t->begin);
    errno = 0;
    int fd = open(path, O_RDONLY);
    void *raw = strcmp(t->dtype, "F32") == 0 ? (void *)out : nr_xmalloc(bytes ? bytes : 1);
    int rc = fd < 0 || read_at(fd, raw, bytes, (off_t)(m->data_start[t->file] + t->begin)) ? -1 : 0;
    if (fd >= 0) close(fd);
    if (rc) snprintf(why, len, "%s: tensor %s: cannot read its %zu bytes: %s", path, t->name, bytes,
                     errno ? strerror(errno) : "the file is shorter than its header says");
    else if (strcmp(t->dtype, "BF16") == 0)
        for (size_t i = 0; i < n; i++) out[i] = bf16_to_f32(((const uint16_t *)raw)[i]);
    else if (strcmp(t->dtype, "F16") == 0)
        for (size_t i = 0; i < n; i++) out[i] = f16_to_f32(((const uint16_t *)raw)[i]);
    if (raw != out) free(raw);
    return rc;
}

/* ---- writing -------------------------------------------------------------------- */

/* the JSON header of tensors t[0..n) laid out in order, padded with spaces to a multiple of 8 bytes */
static char *write_header(const StOut *t, int n, uint64_t *hl) {
    cJSON *root = cJSON_CreateObject(), *meta = cJSON_AddObjectToObject(root, "__metadata__");
    cJSON_AddStringToObject(meta, "format", "pt");
    uint64_t at = 0;
    for (int i = 0; i < n; i++) {
        cJSON *e = cJSON_AddObjectToObject(root, t[i].name), *sh = cJSON_AddArrayToObject(e, "shape");
        cJSON *off = cJSON_AddArrayToObject(e, "data_offsets");
        size_t numel = 1;
        cJSON_AddStringToObject(e, "dtype", "F32");
        for (int d = 0; d < t[i].ndim; d++) {
            cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)t[i].shape[d]));
            numel *= (size_t)t[i].shape[d];
        }
        cJSON_AddItemToArray(off, cJSON_CreateNumber((double)at));
        at += 4 * numel;
        cJSON_AddItemToArray(off, cJSON_CreateNumber((double)at));
    }
    char *js = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    size_t l = strlen(js), pad = (8 - l % 8) % 8;
    char *h = nr_xmalloc(l + pad + 1);
    memcpy(h, js, l);
    memset(h + l, ' ', pad);
    h[l + pad] = 0;
    cJSON_free(js);
    *hl = l + pad;
    return h;
}

/* the file's bytes: header length, header, every tensor's data in order */
typedef struct StWrite {
    const StOut *t;
    int n;
    const char *hdr;
    uint64_t hl;
} StWrite;

static int write_all(FILE *f, const void *ctx) {
    const StWrite *w = ctx;
    if (fwrite(&w->hl, 8, 1, f) != 1 || fwrite(w->hdr, 1, w->hl, f) != w->hl) return -1;
    for (int i = 0; i < w->n; i++) {
        size_t numel = 1;
        for (int d = 0; d < w->t[i].ndim; d++) numel *= (size_t)w->t[i].shape[d];
        if (fwrite(w->t[i].data, sizeof(float), numel, f) != numel) return -1;
    }
    return 0;
}

int st_write_f32(const char *path, const StOut *t, int n, char *why, size_t len) {
    StWrite w = {t, n, NULL, 0};
    char *hdr = write_header(t, n, &w.hl);
    w.hdr = hdr;
    int rc = nr_write_whole(path, write_all, &w, why, len);
    free(hdr);
    return rc;
}
