/* tok_tool.h — the part of bin/nereus-tok (tools/tok.c) in a file of its own:
 * writing text as a JSON string. */
#ifndef NEREUS_TOK_TOOL_H
#define NEREUS_TOK_TOOL_H

#include <stddef.h>
#include <stdio.h>

#include "nereus/text.h"

/* s[0..n) as one JSON string, as Python's json.dumps(ensure_ascii=False) writes it; bytes
 * that are not UTF-8 become U+FFFD, one each */
void json_write_string(FILE *f, const char *s, size_t n);

#endif
