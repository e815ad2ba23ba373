/* gguf.h — GGUF files (llama.cpp's model format, versions 2 and 3) read in
 * place: the header, every key/value pair, the tensor infos and the data
 * section, mapped read-only (mmap), and the tensors of the types Nereus
 * dequantizes (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q6_K) as fp32.
 *
 * Layout (little-endian; llama.cpp's GGUF specification): magic "GGUF",
 * uint32 version, uint64 tensor count, uint64 KV count; the KV pairs (a
 * string key: uint64 length + bytes, a uint32 value type, the value; arrays:
 * uint32 element type, uint64 count, the elements); the tensor infos (name,
 * uint32 n_dims ≤ 4, uint64 ne[n_dims] fastest axis first, uint32 ggml type,
 * uint64 offset into the data section); padding to general.alignment (32
 * unless the key says otherwise); the data section.
 *
 * gguf_open checks the whole structure before it returns: every count,
 * length and offset against the bytes that are there (so no allocation is
 * sized by a count the file cannot back), every tensor's bytes inside the
 * data section. A malformed file is refused with one message naming the file
 * and what is wrong. Nothing here exits. */
#ifndef NEREUS_GGUF_H
#define NEREUS_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "nereus/tokspec.h"

/* value types of KV pairs */
enum { GGUF_U8 = 0, GGUF_I8, GGUF_U16, GGUF_I16, GGUF_U32, GGUF_I32, GGUF_F32, GGUF_BOOL, GGUF_STR, GGUF_ARR,
       GGUF_U64, GGUF_I64, GGUF_F64, GGUF_NUM_VTYPES };

/* the ggml tensor types dequantized here (ggml's numbering) */
enum { GGML_F32 = 0, GGML_F16 = 1, GGML_Q4_0 = 2, GGML_Q4_1 = 3, GGML_Q8_0 = 8, GGML_Q4_K = 12, GGML_Q6_K = 14,
       GGML_BF16 = 30 };

typedef struct GGUFKV {
    const char *key;   /* NUL-terminated copy */
    int type;          /* GGUF_* */
    int elem_type;     /* arrays: the elements' type (never GGUF_ARR) */
    uint64_t n;        /* arrays: element count; strings: byte length; scalars: 1 */
    size_t off;        /* file offset of the value (arrays: of the first element; strings: of the bytes) */
} GGUFKV;

typedef struct GGUFTensor {
    const char *name;  /* NUL-terminated copy */
    int ndim;
    int64_t ne[4];     /* ggml order: ne[0] the fastest (a (rows, cols) matrix is ne = {cols, rows}) */
    int type;          /* ggml type */
    size_t offset;     /* into the data section */
    size_t nbytes;     /* its bytes (0 for a type whose block size is not known here) */
    size_t numel;
} GGUFTensor;

typedef struct GGUFFile {
    const char *path;
    const unsigned char *map; /* the whole file, read-only */
    size_t size;
    uint32_t version;
    int n_kv, n_tensors;
    GGUFKV *kv;
    GGUFTensor *t;
    size_t alignment;  /* general.alignment, or 32 */
    size_t data_off;   /* the data section's file offset */
} GGUFFile;

/* opens and checks path (above); 0, or -1 with why ("PATH: what is wrong") and nothing to close */
int gguf_open(GGUFFile *g, const char *path, char *why, size_t len);
void gguf_close(GGUFFile *g);

/* the pair with this key, or NULL */
const GGUFKV *gguf_find(const GGUFFile *g, const char *key);
/* the tensor with this name, or NULL */
const GGUFTensor *gguf_tensor(const GGUFFile *g, const char *name);
/* "F32", "Q4_K", ... ("type N" for a number ggml does not name; buf holds that) */
const char *gguf_type_name(int type, char *buf, size_t n);
/* "uint32", "string", "array", ... */
const char *gguf_vtype_name(int vtype);

/* a scalar value of any numeric or bool type as int64 / double: 0, or -1 with why when kv is not one (an
 * integer asked of a float that is not whole is refused) */
int gguf_kv_i64(const GGUFFile *g, const GGUFKV *kv, int64_t *out, char *why, size_t len);
int gguf_kv_f64(const GGUFFile *g, const GGUFKV *kv, double *out, char *why, size_t len);
/* a string value, malloc'd; NULL with why when kv is not a string */
char *gguf_kv_str(const GGUFFile *g, const GGUFKV *kv, char *why, size_t len);
/* an array of strings as n malloc'd strings (each NUL-terminated; one malloc'd array of them), or an array
 * of integers as int32 (values outside int32 refused): 0, or -1 with why */
int gguf_kv_strs(const GGUFFile *g, const GGUFKV *kv, char ***out, char *why, size_t len);
int gguf_kv_ints(const GGUFFile *g, const GGUFKV *kv, int **out, char *why, size_t len);

/* 1 when Nereus dequantizes this ggml type */
int gguf_type_supported(int type);
/* n values of a supported type (n a multiple of its block size) from src into dst as fp32, as the PyPI gguf
 * package's gguf.quants.dequantize computes them (bit for bit; gguf_quant.c says how) */
void gguf_dequantize(int type, const void *src, float *dst, size_t n);
/* tensor t as fp32 into dst (t->numel floats): 0, or -1 with why naming the file, the tensor and its type
 * when the type is not one dequantized here */
int gguf_read_f32(const GGUFFile *g, const GGUFTensor *t, float *dst, char *why, size_t len);

/* the tokenizer of a GGUF file's tokenizer.ggml.* keys (and tokenizer.chat_template) as a TokSpec: 0, or -1
 * with why naming the file and the key (the file's own checks as gguf_open's) */
int gguf_read_tokspec(const char *path, TokSpec *out, char *why, size_t len);
/* the same from an open file */
int gguf_tokspec(const GGUFFile *g, TokSpec *out, char *why, size_t len);

#endif
