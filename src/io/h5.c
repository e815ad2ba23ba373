/* h5.c — the HDF5 helpers of the checkpoint code: error capture (our one
 * message instead of HDF5's stack dump), path existence, and typed attribute
 * and string-dataset access. No MPI here: the parallel transfers are ckpt.c's. */
#ifdef NEREUS_HAVE_HDF5 /* the whole file: without HDF5 ckpt.c has stubs */
#include "h5_int.h"

#include "nereus/h5str.h"
#include "nereus/util.h"

/* messages and paths are cut to their buffers on purpose (a long path only shortens the message) */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void h5_quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

typedef struct Reason { char *buf; size_t len; int got; } Reason;

static herr_t reason_cb(unsigned n, const H5E_error2_t *err, void *data) {
    Reason *r = data;
    /* upward walk: the first entry is where the error was detected, the most specific */
    if (!r->got && err->desc && err->desc[0]) {
        snprintf(r->buf, r->len, "%s", err->desc);
        r->got = 1;
    }
    return 0;
}

void h5_reason(char *buf, size_t len) {
    Reason r = {buf, len, 0};
    if (len) buf[0] = 0;
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, reason_cb, &r);
    /* the POSIX driver's I/O errors read "file write failed: time = ...\n, filename = ..., errno = 28, error
       message = 'No space left on device', buf = ..., ...": keep what failed and the system's reason */
    const char *em = strstr(buf, "error message = '"), *colon = strchr(buf, ':');
    if (em && colon && colon < em) {
        char sys[128];
        em += strlen("error message = '");
        size_t n = strcspn(em, "'");
        snprintf(sys, sizeof sys, "%.*s", (int)(n < sizeof sys ? n : sizeof sys - 1), em);
        snprintf(buf + (colon - buf), len - (size_t)(colon - buf), ": %s", sys);
    }
    for (char *c = buf; *c; c++)
        if (*c == '\n') *c = ' ';
}

void h5_err(H5Err *e, const char *fmt, ...) {
    if (!e->why || !e->len || e->why[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->why, e->len, fmt, ap);
    va_end(ap);
}

/* what a failed HDF5 call was doing, in words, from the call expression h5Check saw: the message names what
 * failed ("cannot create it"), and the HDF5 function (H5Fcreate) and its source line only after it */
static void h5_call_words(const char *call, char *fn, size_t fn_len, const char **what) {
    const char *h = strstr(call, "H5");
    size_t n = 0;
    while (h && n + 1 < fn_len && (h[n] == '_' || (h[n] >= '0' && h[n] <= '9') || (h[n] >= 'A' && h[n] <= 'Z') ||
                                   (h[n] >= 'a' && h[n] <= 'z')))
        n++;
    snprintf(fn, fn_len, "%.*s", (int)n, h ? h : "");
    static const struct { const char *prefix, *what; } words[] = {
        {"H5Fcreate", "cannot create it"}, {"H5Fopen", "cannot open it"},     {"H5Dread", "cannot read it"},
        {"H5Aread", "cannot read it"},     {"H5Dopen", "cannot read it"},     {"H5Aopen", "cannot read it"},
        {"H5Gopen", "cannot read it"},     {"H5Fflush", "cannot write it"},   {"H5Dwrite", "cannot write it"},
        {"H5Awrite", "cannot write it"},   {"H5Dcreate", "cannot write it"},  {"H5Acreate", "cannot write it"},
        {"H5Gcreate", "cannot write it"},  {"H5Dset_extent", "cannot write it"}, {"H5Fclose", "cannot close it"}};
    *what = "an HDF5 operation on it failed";
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strncmp(fn, words[i].prefix, strlen(words[i].prefix)) == 0) *what = words[i].what;
}

void h5_fail(H5Err *e, const char *call, const char *file, int line) {
    char r[256], fn[64];
    const char *what;
    h5_reason(r, sizeof r);
    h5_call_words(call, fn, sizeof fn, &what);
    if (strstr(r, "checksum")) /* the 1.8 format's metadata checksums (checkpoints, traces): say so first */
        h5_err(e, "%s: the file is corrupt (HDF5: %s, in %s at %s:%d)", e->path ? e->path : "?", r, fn, file, line);
    else
        h5_err(e, "%s: %s%s%s (HDF5 %s, %s:%d)", e->path ? e->path : "?", what, r[0] ? ": " : "", r, fn, file, line);
}

int h5_exists(hid_t loc, const char *path) {
    char buf[512];
    size_t n = strlen(path);
    if (n >= sizeof buf) return 0;
    memcpy(buf, path, n + 1);
    /* H5Lexists needs every intermediate link to exist: test the prefixes in turn */
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != 0) continue;
        char c = buf[i];
        buf[i] = 0;
        if (strcmp(buf, "/") != 0 && buf[0] && H5Lexists(loc, buf, H5P_DEFAULT) <= 0) return 0;
        buf[i] = c;
    }
    return 1;
}

int h5_attr_put(H5Err *e, hid_t loc, const char *name, hid_t ftype, hid_t mtype, hsize_t n, const void *buf) {
    hid_t s = -1, a = -1;
    if (n == 0) h5Check(e, s = H5Screate(H5S_SCALAR));
    else h5Check(e, s = H5Screate_simple(1, &n, NULL));
    if (H5Aexists(loc, name) > 0) h5Check(e, H5Adelete(loc, name));
    h5Check(e, a = H5Acreate2(loc, name, ftype, s, H5P_DEFAULT, H5P_DEFAULT));
    h5Check(e, H5Awrite(a, mtype, buf));
    H5Aclose(a);
    H5Sclose(s);
    return 0;
fail:
    if (a >= 0) H5Aclose(a);
    if (s >= 0) H5Sclose(s);
    return -1;
}

static hid_t str_type(size_t n) {
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0) return t;
    if (H5Tset_size(t, n ? n : 1) < 0 || H5Tset_strpad(t, H5T_STR_NULLTERM) < 0) {
        H5Tclose(t);
        return -1;
    }
    return t;
}

int h5_attr_put_str(H5Err *e, hid_t loc, const char *name, const char *s) {
    hid_t t = -1;
    h5Check(e, t = str_type(strlen(s) + 1));
    int rc = h5_attr_put(e, loc, name, t, t, 0, s);
    H5Tclose(t);
    return rc;
fail:
    return -1;
}

int h5_attr_get(H5Err *e, hid_t loc, const char *objname, const char *name, hid_t mtype, hsize_t n, void *buf) {
    hid_t a = -1, s = -1;
    if (H5Aexists(loc, name) <= 0) {
        h5_err(e, "%s: %s has no attribute '%s'", e->path, objname, name);
        return -1;
    }
    h5Check(e, a = H5Aopen(loc, name, H5P_DEFAULT));
    h5Check(e, s = H5Aget_space(a));
    hssize_t got = H5Sget_simple_extent_npoints(s);
    if (got != (hssize_t)(n ? n : 1)) {
        h5_err(e, "%s: %s attribute '%s' holds %lld values, expected %llu", e->path, objname, name, (long long)got,
               (unsigned long long)(n ? n : 1));
        goto fail;
    }
    h5Check(e, H5Aread(a, mtype, buf));
    H5Sclose(s);
    H5Aclose(a);
    return 0;
fail:
    if (s >= 0) H5Sclose(s);
    if (a >= 0) H5Aclose(a);
    return -1;
}

/* read a string (fixed or variable length) of type ft from attribute a or dataset d */
static int read_str(H5Err *e, hid_t obj, int is_attr, const char *what, char **out) {
    hid_t ft = -1, mt = -1;
    *out = NULL;
    h5Check(e, ft = is_attr ? H5Aget_type(obj) : H5Dget_type(obj));
    if (H5Tget_class(ft) != H5T_STRING) {
        h5_err(e, "%s: %s is not a string", e->path, what);
        goto fail;
    }
    if (H5Tis_variable_str(ft) > 0) {
        char *p = NULL;
        h5Check(e, mt = H5Tcopy(H5T_C_S1));
        h5Check(e, H5Tset_size(mt, H5T_VARIABLE));
        h5Check(e, is_attr ? H5Aread(obj, mt, &p) : H5Dread(obj, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, &p));
        *out = strdup(p ? p : "");
        if (p) H5free_memory(p);
    } else {
        size_t n = H5Tget_size(ft);
        h5Check(e, mt = str_type(n + 1));
        char *p = calloc(n + 2, 1);
        if (!p) { h5_err(e, "%s: out of memory reading %s", e->path, what); goto fail; }
        if ((is_attr ? H5Aread(obj, mt, p) : H5Dread(obj, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, p)) < 0) {
            free(p);
            h5_fail(e, is_attr ? "H5Aread" : "H5Dread", __FILE__, __LINE__);
            goto fail;
        }
        *out = p;
    }
    H5Tclose(mt);
    H5Tclose(ft);
    return 0;
fail:
    if (mt >= 0) H5Tclose(mt);
    if (ft >= 0) H5Tclose(ft);
    return -1;
}

int h5_attr_get_str(H5Err *e, hid_t loc, const char *objname, const char *name, char **out) {
    hid_t a = -1;
    char what[256];
    snprintf(what, sizeof what, "%s attribute '%s'", objname, name);
    if (H5Aexists(loc, name) <= 0) {
        h5_err(e, "%s: %s has no attribute '%s'", e->path, objname, name);
        return -1;
    }
    h5Check(e, a = H5Aopen(loc, name, H5P_DEFAULT));
    int rc = read_str(e, a, 1, what, out);
    H5Aclose(a);
    return rc;
fail:
    return -1;
}

/* A string dataset's raw data is not covered by the checksums HDF5 keeps on metadata (a changed byte of a
 * checkpoint's /meta/deck would pass `verify` and a restart); its `checksum` attribute (nr_cksum_str) is, in
 * the object header. */
int h5_dset_put_str(H5Err *e, hid_t loc, const char *name, const char *s) {
    hid_t t = -1, sp = -1, d = -1;
    uint64_t ck = nr_cksum_str(s);
    h5Check(e, t = str_type(strlen(s) + 1));
    h5Check(e, sp = H5Screate(H5S_SCALAR));
    h5Check(e, d = H5Dcreate2(loc, name, t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    h5Check(e, H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, s));
    if (h5_attr_put(e, d, "checksum", H5T_STD_U64LE, H5T_NATIVE_UINT64, 0, &ck)) goto fail;
    H5Dclose(d);
    H5Sclose(sp);
    H5Tclose(t);
    return 0;
fail:
    if (d >= 0) H5Dclose(d);
    if (sp >= 0) H5Sclose(sp);
    if (t >= 0) H5Tclose(t);
    return -1;
}

int h5_dset_get_str(H5Err *e, hid_t loc, const char *name, char **out) {
    hid_t d = -1;
    if (!h5_exists(loc, name)) {
        h5_err(e, "%s: no dataset %s", e->path, name);
        return -1;
    }
    h5Check(e, d = H5Dopen2(loc, name, H5P_DEFAULT));
    int rc = read_str(e, d, 0, name, out);
    uint64_t stored = 0;
    if (rc == 0 && H5Aexists(d, "checksum") > 0) { /* a file without one is read unchecked */
        rc = h5_attr_get(e, d, name, "checksum", H5T_NATIVE_UINT64, 0, &stored);
        uint64_t got = rc == 0 ? nr_cksum_str(*out) : 0;
        if (rc == 0 && stored != got) {
            h5_err(e, "%s: dataset %s: checksum mismatch (stored %016llx, data %016llx): the file is corrupt", e->path,
                   name, (unsigned long long)stored, (unsigned long long)got);
            rc = -1;
        }
        if (rc != 0) free(*out), *out = NULL;
    }
    H5Dclose(d);
    return rc;
fail:
    return -1;
}

char *nr_h5_dset_str(hid_t loc, const char *path, const char *name, char *why, size_t len) {
    H5Err e = {path, why, len};
    char *out = NULL;
    if (why && len) why[0] = 0;
    h5_quiet();
    return h5_dset_get_str(&e, loc, name, &out) == 0 ? out : NULL;
}
#endif
