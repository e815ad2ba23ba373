/* tok_tool.h — the parts of bin/nereus-tok (tools/tok.c) in files of their own:
 * loading a tokenizer's definition from whatever MODEL is, and writing text
 * as a JSON string. */
#ifndef NEREUS_TOK_TOOL_H
#define NEREUS_TOK_TOOL_H

#include <stddef.h>
#include <stdio.h>

#include "nereus/text.h"

/* fills spec from path: a Hugging Face directory or tokenizer.json; a GGUF file or a
 * checkpoint is recognised and, until their readers are merged, refused */
int load_tokspec(const char *path, TokSpec *spec, char *why, size_t len);

/* s[0..n) as one JSON string, as Python's json.dumps(ensure_ascii=False) writes it; bytes
 * that are not UTF-8 become U+FFFD, one each */
void json_write_string(FILE *f, const char *s, size_t n);

#endif
