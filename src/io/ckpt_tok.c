/* ckpt_tok.c — a checkpoint's /tokenizer group (docs/CHECKPOINT.md): the
 * TokSpec of the model's tokenizer, written by the importers of files that
 * carry one (import-gguf) and read back by ckpt_read_tokspec (ckpt.h).
 *
 *   /tokenizer            attributes model, pre (strings); n_vocab, n_merges,
 *                         bos_id, eos_id, eot_id, pad_id, add_bos (int32)
 *   /tokenizer/tokens     uint8: every token's bytes followed by a NUL, in id order
 *   /tokenizer/merges     uint8: every merge "left right" followed by a NUL, in rank order
 *   /tokenizer/token_type int32 (n_vocab): TOK_TYPE_*
 *   /tokenizer/chat_template  a string dataset, only when the model has a template
 * Each dataset has a `checksum` attribute (FNV-1a 64 of its bytes, as the
 * string datasets of /meta), checked on read. */
#include "nereus/ckpt.h"

#pragma GCC diagnostic ignored "-Wformat-truncation"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/tokspec.h"
#include "nereus/util.h"

#ifdef NEREUS_HAVE_HDF5
#include "h5_int.h"

static uint64_t fnv(const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

/* a 1-D dataset of n elements of type t (bytes: n·size) with its checksum */
static int put_blob(H5Err *e, hid_t g, const char *name, hid_t ft, hid_t mt, hsize_t n, const void *buf,
                    size_t bytes) {
    hid_t s = -1, d = -1;
    uint64_t ck = fnv(buf, bytes);
    hsize_t dims = n ? n : 1;
    h5Check(e, s = H5Screate_simple(1, &dims, NULL));
    h5Check(e, d = H5Dcreate2(g, name, ft, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    if (n) h5Check(e, H5Dwrite(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf));
    if (h5_attr_put(e, d, "checksum", H5T_STD_U64LE, H5T_NATIVE_UINT64, 0, &ck)) goto fail;
    H5Dclose(d);
    H5Sclose(s);
    return 0;
fail:
    if (d >= 0) H5Dclose(d);
    if (s >= 0) H5Sclose(s);
    return -1;
}

/* n strings, each followed by its NUL, as one byte array (malloc'd; *bytes its length) */
static char *join(char *const *v, int n, size_t *bytes) {
    size_t t = 0;
    for (int i = 0; i < n; i++) t += strlen(v[i]) + 1;
    char *b = nr_xmalloc(t + 1), *p = b;
    for (int i = 0; i < n; i++) p = stpcpy(p, v[i]) + 1;
    *bytes = t;
    return b;
}

static int put_strs(H5Err *e, hid_t g, const char *name, char *const *v, int n) {
    size_t bytes;
    char *b = join(v, n, &bytes);
    if (bytes == 0) b[0] = 0, bytes = 1; /* an empty list: one NUL (HDF5 has no empty simple dataspace here) */
    int rc = put_blob(e, g, name, H5T_STD_U8LE, H5T_NATIVE_UCHAR, bytes, b, bytes);
    free(b);
    return rc;
}

static int put_attrs(H5Err *e, hid_t g, const TokSpec *s) {
    const char *names[] = {"n_vocab", "n_merges", "bos_id", "eos_id", "eot_id", "pad_id", "add_bos"};
    int vals[] = {s->n_vocab, s->n_merges, s->bos_id, s->eos_id, s->eot_id, s->pad_id, s->add_bos};
    if (h5_attr_put_str(e, g, "model", s->model ? s->model : "") || h5_attr_put_str(e, g, "pre", s->pre ? s->pre : ""))
        return -1;
    for (int i = 0; i < 7; i++)
        if (h5_attr_put(e, g, names[i], H5T_STD_I32LE, H5T_NATIVE_INT, 0, &vals[i])) return -1;
    return 0;
}

int ckpt_tok_put(H5Err *e, hid_t f, const TokSpec *s) {
    hid_t g = -1;
    if (h5_exists(f, "/tokenizer")) h5Check(e, H5Ldelete(f, "/tokenizer", H5P_DEFAULT));
    h5Check(e, g = H5Gcreate2(f, "/tokenizer", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    if (put_attrs(e, g, s) || put_strs(e, g, "tokens", s->tokens, s->n_vocab) ||
        put_strs(e, g, "merges", s->merges, s->n_merges) ||
        put_blob(e, g, "token_type", H5T_STD_I32LE, H5T_NATIVE_INT, (hsize_t)s->n_vocab, s->token_type,
                 (size_t)s->n_vocab * sizeof(int)) ||
        (s->chat_template && h5_dset_put_str(e, g, "chat_template", s->chat_template)))
        goto fail;
    H5Gclose(g);
    return 0;
fail:
    if (g >= 0) H5Gclose(g);
    return -1;
}

int ckpt_write_tokspec(const char *path, const TokSpec *s, char *why, size_t len) {
    H5Err e = {path, why, len};
    why[0] = 0;
    h5_quiet();
    hid_t f = -1;
    h5Check(&e, f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT));
    if (ckpt_tok_put(&e, f, s)) goto fail;
    h5Check(&e, H5Fclose(f));
    return 0;
fail:
    if (f >= 0) H5Fclose(f);
    return -1;
}

/* dataset name of g as n elements of mtype (size elem each) into a malloc'd buffer, checksum checked */
static void *get_blob(H5Err *e, hid_t g, const char *name, hid_t mt, size_t elem, size_t *n) {
    hid_t d = -1, s = -1;
    void *buf = NULL;
    uint64_t stored = 0;
    if (!h5_exists(g, name)) {
        h5_err(e, "%s: /tokenizer has no dataset %s", e->path, name);
        return NULL;
    }
    h5Check(e, d = H5Dopen2(g, name, H5P_DEFAULT));
    h5Check(e, s = H5Dget_space(d));
    hssize_t np = H5Sget_simple_extent_npoints(s);
    h5Check(e, np);
    *n = (size_t)np;
    buf = nr_xmalloc(*n * elem + 1);
    h5Check(e, H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf));
    if (h5_attr_get(e, d, name, "checksum", H5T_NATIVE_UINT64, 0, &stored)) goto fail;
    if (stored != fnv(buf, *n * elem)) {
        h5_err(e, "%s: /tokenizer/%s: checksum mismatch: the file is corrupt", e->path, name);
        goto fail;
    }
    H5Sclose(s);
    H5Dclose(d);
    return buf;
fail:
    free(buf);
    if (s >= 0) H5Sclose(s);
    if (d >= 0) H5Dclose(d);
    return NULL;
}

/* want NUL-terminated strings from dataset name (n stored elements; 1 for an empty list) */
static int get_strs(H5Err *e, hid_t g, const char *name, int want, char ***out) {
    size_t n = 0;
    char *b = get_blob(e, g, name, H5T_NATIVE_UCHAR, 1, &n), *p = b;
    if (!b) return -1;
    char **v = nr_xcalloc((size_t)want + 1, sizeof *v);
    int k = 0;
    for (; k < want && (size_t)(p - b) < n; k++) {
        size_t l = strnlen(p, n - (size_t)(p - b));
        if ((size_t)(p - b) + l >= n) break; /* no NUL before the end */
        v[k] = strdup(p);
        p += l + 1;
    }
    free(b);
    *out = v;
    if (k == want) return 0;
    h5_err(e, "%s: /tokenizer/%s holds %d strings, the attributes say %d", e->path, name, k, want);
    return -1;
}

static int get_attrs(H5Err *e, hid_t g, TokSpec *s) {
    const char *names[] = {"n_vocab", "n_merges", "bos_id", "eos_id", "eot_id", "pad_id", "add_bos"};
    int *vals[] = {&s->n_vocab, &s->n_merges, &s->bos_id, &s->eos_id, &s->eot_id, &s->pad_id, &s->add_bos};
    if (h5_attr_get_str(e, g, "/tokenizer", "model", &s->model) || h5_attr_get_str(e, g, "/tokenizer", "pre", &s->pre))
        return -1;
    for (int i = 0; i < 7; i++)
        if (h5_attr_get(e, g, "/tokenizer", names[i], H5T_NATIVE_INT, 0, vals[i])) return -1;
    if (s->n_vocab < 1 || s->n_merges < 0) {
        h5_err(e, "%s: /tokenizer: n_vocab %d, n_merges %d", e->path, s->n_vocab, s->n_merges);
        return -1;
    }
    return 0;
}

static int read_group(H5Err *e, hid_t g, TokSpec *s) {
    int nv = 0, nm = 0;
    size_t ntt = 0;
    if (get_attrs(e, g, s)) return -1;
    nv = s->n_vocab, nm = s->n_merges;
    s->n_vocab = s->n_merges = 0; /* counts of what is allocated, for tokspec_free on failure */
    int rc = get_strs(e, g, "tokens", nv, &s->tokens);
    s->n_vocab = nv;
    if (rc) return -1;
    rc = get_strs(e, g, "merges", nm, &s->merges);
    s->n_merges = nm;
    if (rc || !(s->token_type = get_blob(e, g, "token_type", H5T_NATIVE_INT, sizeof(int), &ntt))) return -1;
    if (ntt != (size_t)nv) {
        h5_err(e, "%s: /tokenizer/token_type holds %zu types for %d tokens", e->path, ntt, nv);
        return -1;
    }
    return h5_exists(g, "chat_template") ? h5_dset_get_str(e, g, "chat_template", &s->chat_template) : 0;
}

int ckpt_read_tokspec(const char *path, TokSpec *out, char *why, size_t len) {
    H5Err e = {path, why, len};
    why[0] = 0;
    memset(out, 0, sizeof *out);
    h5_quiet();
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT), g = -1;
    int rc = -1;
    if (f < 0) {
        snprintf(why, len, "%s: cannot open as an HDF5 file", path);
        return -1;
    }
    if (!h5_exists(f, "/tokenizer")) {
        snprintf(why, len, "%s: the checkpoint carries no tokenizer (no /tokenizer group)", path);
        rc = 1;
    } else if ((g = H5Gopen2(f, "/tokenizer", H5P_DEFAULT)) < 0) {
        snprintf(why, len, "%s: /tokenizer is unreadable", path);
    } else {
        rc = read_group(&e, g, out);
        H5Gclose(g);
    }
    H5Fclose(f);
    if (rc) tokspec_free(out);
    return rc;
}

int ckpt_tok_summary(hid_t f, char *buf, size_t n) {
    char why[256];
    H5Err e = {"", why, sizeof why};
    int nv = 0;
    char *pre = NULL;
    hid_t g = h5_exists(f, "/tokenizer") ? H5Gopen2(f, "/tokenizer", H5P_DEFAULT) : -1;
    if (g < 0) return -1;
    int rc = h5_attr_get(&e, g, "/tokenizer", "n_vocab", H5T_NATIVE_INT, 0, &nv) ||
             h5_attr_get_str(&e, g, "/tokenizer", "pre", &pre) ? -1 : 0;
    if (!rc) snprintf(buf, n, "tokenizer: %d tokens, pre %s", nv, pre);
    free(pre);
    H5Gclose(g);
    return rc;
}

#else
int ckpt_write_tokspec(const char *path, const TokSpec *s, char *why, size_t len) {
    (void)s;
    snprintf(why, len, "%s: checkpoints need HDF5 (this build has none)", path);
    return -1;
}
int ckpt_read_tokspec(const char *path, TokSpec *out, char *why, size_t len) {
    memset(out, 0, sizeof *out);
    snprintf(why, len, "%s: checkpoints need HDF5 (this build has none)", path);
    return -1;
}
#endif
