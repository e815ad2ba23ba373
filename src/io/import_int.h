/* import_int.h — private to src/io: what the importers of foreign model
 * files share (hf.c: Hugging Face directories; gguf_import.c: GGUF files):
 * the Llama family's tensors as pieces of ours, each with its Hugging Face
 * and its GGUF name, and the writing of an imported model as a checkpoint's
 * actor and ref (with a tokenizer where the source carries one). */
#ifndef NEREUS_IO_IMPORT_INT_H
#define NEREUS_IO_IMPORT_INT_H

#include <stddef.h>

#include "nereus/model.h"
#include "nereus/tokspec.h"

/* One foreign tensor: the piece of one layer's block (of the whole tensor when not per layer) of our tensor
 * `role` that starts `off` floats in, of our shape (rows, cols) (nd 1: rows alone). Names carry %d for the
 * layer when the tensor is per layer. */
typedef struct HfPiece {
    int role;
    const char *hf;   /* its Hugging Face name, without the model prefix */
    int nd, shape[2], transpose;
    size_t off;
    const char *gguf; /* its GGUF name (llama.cpp's), NULL where GGUF has none (GPT-2 here) */
} HfPiece;
#define MAX_PIECES 24

/* the entry of role in the table t (nt), or NULL */
const TensorInfo *import_tensor_of_role(const TensorInfo *t, int nt, int role);
/* the Llama family's pieces of config c into p (MAX_PIECES), in the order transformers writes them */
int import_llama_pieces(const GPTConfig *c, HfPiece *p);
/* the logical parameter vector full of config c as the actor and ref of a new checkpoint at out_path
 * (step 0, no optimizer state), `source` in its plan text ("imported from ..."), and the tokenizer tok as its
 * /tokenizer group unless tok is NULL. Writes out_path.part and renames it to out_path when all is written:
 * nothing is left at out_path on failure. 0, or -1 with why. */
int import_write_ckpt(const char *out_path, const GPTConfig *c, const float *full, const char *source,
                      const TokSpec *tok, char *why, size_t len);

#endif
