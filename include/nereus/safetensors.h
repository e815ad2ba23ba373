/* safetensors.h — Hugging Face's safetensors files, read and written.
 *
 * A file is an unsigned 64-bit little-endian header length N, N bytes of
 * JSON, then the data. The JSON maps each tensor's name to {"dtype",
 * "shape", "data_offsets": [begin, end]} (bytes into the data, which the
 * tensors tile exactly, without holes or overlaps), plus an optional
 * "__metadata__" of string pairs. A sharded model is a directory with
 * model.safetensors.index.json, whose "weight_map" names each tensor's
 * shard file in the same directory.
 *
 * Reading checks all of that before any tensor is read and names the file
 * and the tensor or key that is wrong. Tensors are read as fp32: F32 as is,
 * BF16 and F16 converted exactly (every value of both is a float). Writing
 * produces fp32 files that transformers loads (metadata format "pt").
 * One process; no MPI.
 */
#ifndef NEREUS_SAFETENSORS_H
#define NEREUS_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#define ST_MAX_DIM 8

typedef struct StTensor {
    char *name;
    char dtype[16];            /* as stored: "F32", "BF16", "F16", "I64", ... */
    int ndim;
    int64_t shape[ST_MAX_DIM];
    uint64_t begin, end;       /* bytes into its file's data section */
    int file;                  /* index into StModel.paths */
} StTensor;

typedef struct StModel {
    int nfiles;
    char **paths;              /* the files read */
    uint64_t *data_start;      /* per file: where its data section begins (8 + header length) */
    int nt;
    StTensor *t;               /* every tensor of every file, in file then header order */
} StModel;

/* A model directory: model.safetensors, or model.safetensors.index.json and
 * its shards. Returns 0, or -1 with why naming the file and what is wrong. */
int st_open_dir(StModel *m, const char *dir, char *why, size_t len);
/* One safetensors file. Returns 0, or -1 with why. */
int st_open_file(StModel *m, const char *path, char *why, size_t len);
void st_close(StModel *m);

/* the tensor of that name, or NULL */
const StTensor *st_find(const StModel *m, const char *name);
size_t st_numel(const StTensor *t);
/* 1 for the dtypes st_read_f32 converts (F32, BF16, F16), else 0 */
int st_dtype_is_float(const char *dtype);
/* the tensor's elements as fp32 into out (st_numel floats). Returns 0, or -1
 * with why (an integer dtype, a short read). */
int st_read_f32(const StModel *m, const StTensor *t, float *out, char *why, size_t len);

/* One tensor to write: fp32, row-major. */
typedef struct StOut {
    const char *name;
    const float *data;
    int ndim;
    int64_t shape[ST_MAX_DIM];
} StOut;

/* Writes path (through a temporary file renamed over it once whole) with the
 * tensors in the order given. Returns 0, or -1 with why. */
int st_write_f32(const char *path, const StOut *t, int n, char *why, size_t len);

#endif
