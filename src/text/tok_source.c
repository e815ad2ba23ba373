/* tok_source.c — the one way in to a tokenizer's definition from whatever a
 * user names as the model: tok_read_model picks the reader by what the path
 * is. A Hugging Face model directory (its tokenizer.json and
 * tokenizer_config.json) or a tokenizer.json file (text.h), a GGUF file
 * (magic "GGUF": its tokenizer.ggml.* keys, gguf.h) or a Nereus checkpoint
 * (an HDF5 file: its /tokenizer group, ckpt.h). */
#include "nereus/text.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "nereus/ckpt.h"
#include "nereus/gguf.h"

/* what a file's first bytes say it is */
static const char *file_kind(const char *path) {
    unsigned char magic[8] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) return "unreadable";
    size_t n = fread(magic, 1, sizeof magic, f);
    fclose(f);
    if (n >= 4 && !memcmp(magic, "GGUF", 4)) return "gguf";
    if (n >= 8 && !memcmp(magic, "\x89HDF\r\n\x1a\n", 8)) return "hdf5";
    return "other";
}

int tok_read_model(const char *path, TokSpec *spec, char *why, size_t len) {
    struct stat st;
    if (stat(path, &st)) { snprintf(why, len, "%s: no such file or directory", path); return -1; }
    if (S_ISDIR(st.st_mode)) return tok_read_hf(path, spec, why, len);
    const char *kind = file_kind(path);
    if (!strcmp(kind, "gguf")) return gguf_read_tokspec(path, spec, why, len) ? -1 : 0;
    if (!strcmp(kind, "hdf5")) {
        int rc = ckpt_read_tokspec(path, spec, why, len);
        if (rc == 1) snprintf(why, len, "%s: a checkpoint without a tokenizer (imported from a GGUF file it has one)", path);
        return rc ? -1 : 0;
    }
    if (!strcmp(kind, "unreadable")) { snprintf(why, len, "%s: cannot read", path); return -1; }
    return tok_read_hf_json(path, spec, why, len);
}
