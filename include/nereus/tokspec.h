/* tokspec.h — a byte-level BPE tokenizer's definition as plain data: the
 * vocabulary, the merges, the pre-tokenizer's name, the special ids and the
 * chat template. One struct carries it from wherever it is stored (a Hugging
 * Face tokenizer.json, a GGUF file's tokenizer.ggml.* keys, a checkpoint's
 * /tokenizer group) to the tokenizer that is built from it (text.h), so each
 * reader fills a TokSpec and nothing else. Pure data: no MPI, no I/O. */
#ifndef NEREUS_TOKSPEC_H
#define NEREUS_TOKSPEC_H

#include <stddef.h>

/* GGUF's token types (llama.cpp's llama_token_type), used for every source */
enum { TOK_TYPE_UNDEFINED = 0, TOK_TYPE_NORMAL = 1, TOK_TYPE_UNKNOWN = 2, TOK_TYPE_CONTROL = 3,
       TOK_TYPE_USER_DEFINED = 4, TOK_TYPE_UNUSED = 5, TOK_TYPE_BYTE = 6 };

typedef struct TokSpec {
    char *model;          /* "gpt2": byte-level BPE (the only kind built) */
    char *pre;            /* the pre-tokenizer's name as GGUF's tokenizer.ggml.pre spells it: "gpt2",
                             "llama-bpe" (Llama-3), "qwen2", "smollm", ... */
    int n_vocab;
    char **tokens;        /* (n_vocab) token strings in the byte-level alphabet (GPT-2's bytes_to_unicode) */
    int *token_type;      /* (n_vocab) TOK_TYPE_*: CONTROL and USER_DEFINED ones are matched whole before
                             splitting (HF's added tokens) */
    int n_merges;
    char **merges;        /* (n_merges) "left right", rank order (rank 0 merges first) */
    int bos_id, eos_id, eot_id, pad_id; /* -1 where the tokenizer has none; eot: end of turn (ChatML's
                                           <|im_end|>, Llama-3's <|eot_id|>) */
    int add_bos;          /* 1: encoding a prompt prepends bos_id */
    char *chat_template;  /* the Jinja text as stored, or NULL */
} TokSpec;

/* frees every member and zeroes spec (the struct itself is the caller's) */
void tokspec_free(TokSpec *spec);

#endif
