/* tok_load.c — nereus-tok's one way in to a tokenizer: load_tokspec picks
 * the reader by what MODEL is. A Hugging Face model directory (its
 * tokenizer.json and tokenizer_config.json) or a tokenizer.json file is read
 * here (text.h); a GGUF file (magic "GGUF") and a Nereus checkpoint (an HDF5
 * file) are recognised, and their readers, gguf_read_tokspec and
 * ckpt_read_tokspec, come with the GGUF import: until then they are refused
 * as not yet readable. */
#include "tok_tool.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

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

int load_tokspec(const char *path, TokSpec *spec, char *why, size_t len) {
    struct stat st;
    if (stat(path, &st)) { snprintf(why, len, "%s: no such file or directory", path); return -1; }
    if (S_ISDIR(st.st_mode)) return tok_read_hf(path, spec, why, len);
    const char *kind = file_kind(path);
    if (!strcmp(kind, "gguf")) {
        snprintf(why, len, "%s: a GGUF file: its tokenizer is read by gguf_read_tokspec, not in this build", path);
        return -1;
    }
    if (!strcmp(kind, "hdf5")) {
        snprintf(why, len, "%s: a Nereus checkpoint: its tokenizer is read by ckpt_read_tokspec, not in this build", path);
        return -1;
    }
    if (!strcmp(kind, "unreadable")) { snprintf(why, len, "%s: cannot read", path); return -1; }
    return tok_read_hf_json(path, spec, why, len);
}
