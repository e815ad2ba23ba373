/* text.h — text in and out: a byte-level BPE tokenizer (GPT-2, Llama-3,
 * Qwen2/Qwen3, SmolLM2) built from a TokSpec, the reader that fills a TokSpec
 * from a Hugging Face tokenizer.json, and chat formatting with the model's
 * own template recognised as one of the built-in formats.
 *
 * Every function that can fail returns 0 on success and -1 on failure with
 * a message in why (len bytes); none prints or exits. A Tokenizer is
 * read-only after tok_build, so threads may encode with one at once. */
#ifndef NEREUS_TEXT_H
#define NEREUS_TEXT_H

#include <stddef.h>

#include "nereus/tokspec.h"

typedef struct Tokenizer Tokenizer;

/* a growable array of token ids that tok_encode appends to; zero it to start */
typedef struct TokIds {
    int *ids;
    size_t n, cap;
} TokIds;

/* appends id (0, or -1 out of memory) */
int tokids_push(TokIds *v, int id);
void tokids_free(TokIds *v);

/* builds the tokenizer of spec (spec is only read: the tokenizer keeps its own copies).
 * Refuses a model other than "gpt2", a pre-tokenizer it does not know, a merge whose
 * parts or result are not in the vocabulary, and a vocabulary without the 256 bytes. */
int tok_build(Tokenizer **out, const TokSpec *spec, char *why, size_t len);
void tok_free(Tokenizer *tk);

/* appends the ids of text[0..n) to out: added tokens (CONTROL, USER_DEFINED) matched
 * whole first, then the family's pre-tokenizer split, then the merges by rank. Adds no
 * bos: the caller decides (tok_add_bos). */
int tok_encode(const Tokenizer *tk, const char *text, size_t n, TokIds *out, char *why, size_t len);

/* the bytes of ids (malloc'd, NUL-terminated, *n_text without the NUL): normal tokens
 * through the byte-level alphabet, added tokens as their text; an id out of range fails */
int tok_decode(const Tokenizer *tk, const int *ids, size_t n, char **text, size_t *n_text, char *why,
               size_t len);

int tok_n_vocab(const Tokenizer *tk);
/* the id of a token string as the vocabulary spells it, or -1 */
int tok_find(const Tokenizer *tk, const char *token);
/* the spec's special ids and add_bos, copied at build */
int tok_bos(const Tokenizer *tk);
int tok_eos(const Tokenizer *tk);
int tok_add_bos(const Tokenizer *tk);

/* fills spec from a Hugging Face model directory: DIR/tokenizer.json (model.vocab,
 * model.merges, added_tokens, the pre-tokenizer recognised from pre_tokenizer and
 * normalizer) and, where present, DIR/tokenizer_config.json (bos_token, eos_token,
 * add_bos_token, chat_template). An error names the file and the key. */
int tok_read_hf(const char *dir, TokSpec *spec, char *why, size_t len);
/* spec as a Hugging Face tokenizer directory: DIR/tokenizer.json and DIR/tokenizer_config.json (DIR exists),
 * in the structure the families' published files have, so that tok_read_hf and HF tokenizers read back the
 * same tokenizer. 0, or -1 with why (naming the file, or the pre-tokenizer no such form exists for). */
int tok_write_hf(const char *dir, const TokSpec *spec, char *why, size_t len);
/* the same for one tokenizer.json file alone */
int tok_read_hf_json(const char *path, TokSpec *spec, char *why, size_t len);
/* spec from whatever path is: a Hugging Face directory or tokenizer.json, a GGUF file, or a Nereus checkpoint
 * with a /tokenizer group (an imported GGUF); 0, or -1 with why naming the file */
int tok_read_model(const char *path, TokSpec *spec, char *why, size_t len);

/* the built-in chat formats that a template is recognised as (llama.cpp's way: substrings) */
typedef enum { CHAT_NONE = 0, CHAT_CHATML, CHAT_LLAMA3 } ChatFormat;

typedef struct Chat {
    ChatFormat format;
    char *default_system; /* the system prompt the template inserts when none is given, or NULL */
    char *bos;            /* Llama-3: the bos token's text that its template puts first, or NULL */
    int eot_id;           /* the end-of-turn id generation stops at (<|im_end|>, <|eot_id|>), or -1 */
} Chat;

/* recognises template (NULL or "" is CHAT_NONE) and resolves its tokens in tk; an
 * unrecognised template fails with its first line in why */
int chat_build(Chat *chat, const char *template, const Tokenizer *tk, char *why, size_t len);
void chat_free(Chat *chat);
/* the prompt text of (system or NULL, user) with the generation prompt appended (malloc'd);
 * CHAT_NONE gives user unchanged */
char *chat_format(const Chat *chat, const char *system, const char *user);
const char *chat_format_name(ChatFormat f);

#endif
