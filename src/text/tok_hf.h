/* tok_hf.h — the parts of the tokenizer.json reader (tok_hf.c) that live in
 * files of their own: the pre-tokenizer's recognition and tokenizer_config.json. */
#ifndef NEREUS_TOK_HF_H
#define NEREUS_TOK_HF_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "nereus/tokspec.h"

/* the whole of a file (malloc'd, NUL-terminated, its length in *n where n is not NULL), or NULL */
char *tok_read_text(const char *path, size_t *n);
/* the GGUF pre name ("gpt2", "llama-bpe", "qwen2", "smollm") of root's pre_tokenizer and normalizer */
int tok_hf_pre(const cJSON *root, const char **pre, const char *path, char *why, size_t len);
/* the id of token string s in spec, or -1 */
int tok_spec_find(const TokSpec *spec, const char *s);
/* bos/eos/eot ids, add_bos and chat_template from a tokenizer_config.json; a missing file is no error */
int tok_hf_config(const char *path, TokSpec *spec, char *why, size_t len);

#endif
