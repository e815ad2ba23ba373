/* h5_int.h — private to src/io: the HDF5 helpers that the checkpoint code
 * (ckpt.c, llmc.c) shares. Nothing outside src/io includes this; the public
 * interface is include/nereus/ckpt.h.
 *
 * Errors: a failing HDF5 call is reported, not aborted on (a bad checkpoint
 * is bad input): h5Check(e, call) evaluates call and, when it returns a
 * negative value, fills e->why (once: the first failure wins) with the file,
 * the call's text, HDF5's innermost reason and the source line, then jumps to
 * the enclosing function's `fail:` label. HDF5's own error printing is off
 * (h5_quiet) so that the one message is ours.
 */
#ifndef NEREUS_IO_H5_INT_H
#define NEREUS_IO_H5_INT_H

#include <stddef.h>
#include <stdint.h>

#include <hdf5.h>

typedef struct H5Err {
    const char *path; /* the file the messages name */
    char *why;        /* caller's buffer; why[0] == 0 until the first failure */
    size_t len;
} H5Err;

void h5_fail(H5Err *e, const char *call, const char *file, int line);
/* printf-style message into e->why unless one is already there */
void h5_err(H5Err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define h5Check(e, call)                                                                   \
    do {                                                                                   \
        if ((call) < 0) { h5_fail((e), #call, __FILE__, __LINE__); goto fail; }            \
    } while (0)

/* HDF5's innermost error description of the current stack ("" if none) into buf */
void h5_reason(char *buf, size_t len);
/* turn off HDF5's automatic error-stack printing (idempotent) */
void h5_quiet(void);

/* 1 when every component of the absolute or relative path exists under loc */
int h5_exists(hid_t loc, const char *path);

/* attributes on loc: scalar (n = 0) or 1-D of n elements. Return 0 or -1 (e filled). */
int h5_attr_put(H5Err *e, hid_t loc, const char *name, hid_t ftype, hid_t mtype, hsize_t n, const void *buf);
int h5_attr_put_str(H5Err *e, hid_t loc, const char *name, const char *s);
/* reads n elements (0: scalar; the stored attribute must hold exactly max(n,1)) */
int h5_attr_get(H5Err *e, hid_t loc, const char *objname, const char *name, hid_t mtype, hsize_t n, void *buf);
/* a fixed- or variable-length string attribute, malloc'd */
int h5_attr_get_str(H5Err *e, hid_t loc, const char *objname, const char *name, char **out);
/* a scalar fixed-length string dataset (h5dump shows it as text) with a `checksum` attribute (FNV-1a 64 of
 * its bytes), and back (malloc'd; a checksum that does not match is refused, a missing one accepted) */
int h5_dset_put_str(H5Err *e, hid_t loc, const char *name, const char *s);
int h5_dset_get_str(H5Err *e, hid_t loc, const char *name, char **out);

/* ckpt_tok.c: "tokenizer: N tokens, pre NAME" of the file's /tokenizer group into buf; -1 when it has none */
int ckpt_tok_summary(hid_t f, char *buf, size_t n);
/* ckpt_tok.c: s as the open file's /tokenizer group (one there replaced); 0, or -1 with e's message */
struct TokSpec;
int ckpt_tok_put(H5Err *e, hid_t f, const struct TokSpec *s);

#endif
