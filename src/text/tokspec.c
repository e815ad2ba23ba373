/* tokspec.c — frees a TokSpec (tokspec.h): the one owner of its memory,
 * whichever reader filled it. */
#include "nereus/tokspec.h"

#include <stdlib.h>
#include <string.h>

void tokspec_free(TokSpec *spec) {
    if (!spec) return;
    for (int i = 0; spec->tokens && i < spec->n_vocab; i++) free(spec->tokens[i]);
    for (int i = 0; spec->merges && i < spec->n_merges; i++) free(spec->merges[i]);
    free(spec->tokens);
    free(spec->merges);
    free(spec->token_type);
    free(spec->model);
    free(spec->pre);
    free(spec->chat_template);
    memset(spec, 0, sizeof *spec);
}
