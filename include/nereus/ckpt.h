/* ckpt.h — layout-independent HDF5 checkpoints: every model at its full
 * logical shape, each element written by the one rank that owns it, read
 * back under any plan and rank count (docs/CHECKPOINT.md gives the schema).
 *
 * Write (SWIFT's pattern, STYLE.md): rank 0 creates the skeleton of
 * PATH.tmp serially (groups, every dataset contiguous at full logical size
 * with its space allocated, the config and meta attributes), then every
 * rank reopens it with MPI-IO and writes its hyperslab of every dataset
 * collectively (H5FD_MPIO_COLLECTIVE; ranks without a part select nothing);
 * each rank's transfer is cut along the tensor's first axis under 1 GiB per
 * call (below MPI-IO's 2 GB limit). Every writer adds its elements into an
 * order-independent 64-bit checksum per dataset (below), summed over the
 * ranks; rank 0 then stores the checksums, writes /meta complete = 1 last,
 * closes and renames PATH.tmp to PATH: a crash leaves any older PATH intact,
 * and a file without the flag is refused.
 *
 * Checksum of a dataset of n floats (row-major logical index k, IEEE bits
 * b_k): Σ_k mix64(k·2^32 + b_k) mod 2^64, mix64 the SplitMix64 finaliser.
 * Addition mod 2^64 is associative and commutative, so any partition of the
 * elements over ranks gives the same value, and one changed bit changes it.
 *
 * Errors are returned, never aborted on: a bad file is bad input. Messages
 * name the file and, where one is at fault, the dataset.
 */
#ifndef NEREUS_CKPT_H
#define NEREUS_CKPT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <mpi.h>

#include "nereus/model.h"

#define CKPT_FORMAT 1

typedef struct CkptModel {
    const char *name;      /* "actor" | "critic" | "ref" | "reward" */
    const GPTConfig *cfg;  /* the model's logical config (every rank passes it, member or not) */
    GPT *m;                /* this rank's shard of that model, or NULL when this rank holds none */
    int canonical;         /* this rank writes (and, on read, checksums) the elements it owns (gpt_tensor_owner):
                              set on exactly one replica's members, so every logical element is covered once */
    int adam;              /* a trained model: also its AdamW m and v (GPT local buffers m->m, m->v) and m->adam_t */
} CkptModel;

typedef struct CkptMeta {
    int64_t step;          /* PPO steps done = the next PPO step to run */
    int64_t sft_done;      /* SFT steps done */
    int64_t seed;
    const char *deck;      /* resolved deck text (write); malloc'd copy on read */
    const char *plan;      /* plan description (write); malloc'd copy on read */
    uint64_t data_hash;    /* dataset_hash of [data] train's bytes (a text run's prompts); 0: none */
    const int32_t *queue;  /* the rollouts generated and not yet trained (rollq_pack's words; docs/ASYNC.md): write:
                              rank 0's (NULL: none); read: a malloc'd copy on every rank (NULL: the file has none) */
    int64_t queue_words;
    const struct TokSpec *tok; /* write: the run's tokenizer, as /tokenizer (NULL: none); read: not filled */
} CkptMeta;

/* collective over comm. Writes path + ".tmp" and renames it to path once the complete flag is written
 * (a crash leaves any earlier file at path intact). Returns 0, or -1 with why (every rank gets the same
 * verdict). Entries with the same name may appear several times in models[] (e.g. the actor of actor.gen,
 * actor.inf and actor.train): the file holds each name once. The params of a name are written by the
 * canonical ranks of the first entry of that name that has any canonical rank; its adam datasets (and
 * adam_t) by the canonical ranks of the first entry of that name that has adam set. Those ranks' owned
 * elements must cover every logical element once (checked: -1 otherwise). */
int ckpt_write(const char *path, MPI_Comm comm, const CkptMeta *meta, const CkptModel *models, int n, char *why,
               size_t len);

/* collective over comm. Opens path, refuses it (returns -1, why names the file and, where it applies, the
 * dataset) when it is truncated/unreadable, has no complete flag, a checksum mismatch, or a model whose stored
 * config/shape differs from cfg (message gives both, e.g. "[model] n_embd: checkpoint 64, deck 96" and the
 * tensor shapes). Every entry with m != NULL reads exactly the elements that rank holds (all replicas read);
 * entries with adam set also read m, v and adam_t — or, from a file without optimizer state for that model
 * (e.g. an llm.c import), get m = v = 0 and adam_t = 0 (AdamW starts afresh). Checksums are verified over the
 * canonical ranks' owned elements (chosen per name as in ckpt_write). meta (may be NULL) gets step, sft_done,
 * seed and malloc'd deck/plan strings. Every rank gets the same verdict. */
int ckpt_read(const char *path, MPI_Comm comm, CkptMeta *meta, CkptModel *models, int n, char *why, size_t len);
void ckpt_meta_free(CkptMeta *meta);

/* no MPI collective needed (1 process): the stored logical config of a model, for tools. has_adam may be
 * NULL. Returns 0; 1 with why when the file (readable) has no such model; -1 with why when it cannot be read. */
int ckpt_model_config(const char *path, const char *name, GPTConfig *cfg, int *has_adam, char *why, size_t len);

/* 1 process: the whole-file check of `nereus-ckpt verify`: complete flag, format, every model's datasets
 * present with the shapes its stored config gives, every dataset's checksum recomputed over all its
 * elements. Returns 0 when sound; -1 with one line naming the file and the dataset otherwise. */
int ckpt_verify(const char *path, char *why, size_t len);
/* 1 process: `nereus-ckpt info`: contents, shapes, step, plan, completeness, printed to out. Prints what it
 * can of an incomplete file. Returns 0, or -1 with why when the file cannot be opened at all. */
int ckpt_info(const char *path, FILE *out, char *why, size_t len);

/* 1 process: mean next-token cross-entropy of the checkpoint's actor on the first batch of an llm.c token
 * file: rows b = tokens[b·T, b·T+T), targets shifted by one (what the SFT step of the training path computes
 * at step 0 with data = tokens, before its update). Returns 0, or -1 with why. */
int ckpt_eval_loss(const char *path, const char *tokens_path, int B, int T, double *loss, char *why, size_t len);

/* llm.c GPT-2 fp32 checkpoints (header int32[256]: 20240326, version 3, maxT, V, L, NH, C, Vp; then the
 * parameters in our tensor order). import: 1 process, writes actor and ref (V = Vp, V_real = V, no
 * adam, step 0). export: the actor of a checkpoint back to that format, byte for byte. */
int ckpt_import_llmc(const char *llmc_path, const char *out_path, char *why, size_t len);
int ckpt_export_llmc(const char *path, const char *out_path, char *why, size_t len);

/* 1 process: model `name` of a checkpoint read into a frozen CPU model built for (B, T); c gets its config.
 * Returns 0 (gpt_free the model after), or -1 with why. */
int ckpt_load_model(const char *path, const char *name, GPT *m, GPTConfig *c, int B, int T, char *why, size_t len);

/* Hugging Face model directories (src/io/hf.c; config.json + model.safetensors or a sharded
 * model.safetensors.index.json), 1 process. import: a GPT2LMHeadModel (F32, BF16 or F16 tensors, read as
 * fp32) as the actor and ref of a new checkpoint; note gets " (BF16 converted to fp32)" or "". export: the
 * actor as DIR/config.json and DIR/model.safetensors (fp32; the real vocabulary only), a directory
 * transformers' from_pretrained loads. Return 0, or -1 with why naming the file and the tensor or key; import
 * returns -2 when the directory itself is refused (bad input) and -1 when the checkpoint cannot be written. */
int ckpt_import_hf(const char *dir, const char *out_path, char *note, size_t note_len, char *why, size_t len);
int ckpt_export_hf(const char *path, const char *dir, char *why, size_t len);

/* GGUF files (src/io/gguf_import.c), 1 process: a llama-, qwen2- or qwen3-architecture GGUF's tensors
 * (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q6_K, dequantized to fp32 as the gguf package does; llama.cpp's
 * q/k row permutation of llama models undone) as the actor and ref of a new checkpoint, its config from the
 * ARCH.* keys, its tokenizer as the /tokenizer group. note gets what was converted (" (Q4_1, Q8_0
 * dequantized to fp32)"). 0; -2 when the file is refused (bad input: why names the file and the key or
 * tensor), nothing written; -1 when the checkpoint cannot be written. */
int ckpt_import_gguf(const char *gguf_path, const char *out_path, char *note, size_t note_len, char *why,
                     size_t len);

/* a checkpoint's /tokenizer group (src/io/ckpt_tok.c; docs/CHECKPOINT.md), 1 process. write: into the
 * existing file path (replacing any earlier one). read: 0 with out filled (tokspec_free it), 1 with why when
 * the checkpoint has no tokenizer, -1 with why when the file or the group cannot be read. */
struct TokSpec;
int ckpt_write_tokspec(const char *path, const struct TokSpec *s, char *why, size_t len);
int ckpt_read_tokspec(const char *path, struct TokSpec *out, char *why, size_t len);

/* 1 process: greedy decoding by the checkpoint's actor: the prompt ids (P of them) through one prefill, then
 * n tokens, each the argmax of the last logits (the lowest id on a tie), fed back through the KV-cached
 * decode; no stop token. out gets the n ids. 0, or -1 with why. */
int ckpt_generate_greedy(const char *path, const int *prompt, int P, int n, int *out, char *why, size_t len);

/* tests: the largest bytes one rank moves in one H5Dread/H5Dwrite (default 1 GiB; 0 restores it) */
void ckpt_set_io_limit(size_t bytes);

#endif
