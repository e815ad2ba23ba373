/* tok_hf_write.c — a TokSpec as a Hugging Face tokenizer directory: tokenizer.json and
 * tokenizer_config.json, as `nereus-ckpt export-hf` writes them beside a checkpoint's weights (where the
 * checkpoint has a /tokenizer) and `nereus-tok write` for any model it reads. The structure is what the
 * families' published files have and what tok_hf_pre.c recognises, so that tok_read_hf reads back the spec
 * and HF tokenizers and transformers build the same tokenizer:
 *   gpt2       ByteLevel (use_regex true)
 *   smollm     Sequence [Digits (individual_digits true), ByteLevel (use_regex true)]
 *   llama-bpe  Sequence [Split (Llama-3's regex, Isolated), ByteLevel (use_regex false)], ignore_merges true
 *   qwen2      Sequence [Split (Qwen2's regex, Isolated), ByteLevel (use_regex false)], normalizer NFC
 * Every token is in model.vocab; CONTROL tokens are also special added tokens, USER_DEFINED ones added tokens
 * that are not special. add_bos becomes a TemplateProcessing post-processor putting bos first. */
#include <cjson/cJSON.h>

#include "tok_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_added(int type) { return type == TOK_TYPE_CONTROL || type == TOK_TYPE_USER_DEFINED; }

static cJSON *byte_level(int use_regex, int trim_offsets) {
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "type", "ByteLevel");
    cJSON_AddFalseToObject(b, "add_prefix_space");
    cJSON_AddBoolToObject(b, "trim_offsets", trim_offsets);
    cJSON_AddBoolToObject(b, "use_regex", use_regex);
    return b;
}

/* the family's pre_tokenizer (tok_hf_pre.c's structures) */
static cJSON *pre_tokenizer(const char *pre) {
    if (!strcmp(pre, "gpt2")) return byte_level(1, 1);
    cJSON *seq = cJSON_CreateObject(), *list = cJSON_CreateArray(), *first = cJSON_CreateObject();
    cJSON_AddStringToObject(seq, "type", "Sequence");
    if (!strcmp(pre, "smollm")) {
        cJSON_AddStringToObject(first, "type", "Digits");
        cJSON_AddTrueToObject(first, "individual_digits");
        cJSON_AddItemToArray(list, first);
        cJSON_AddItemToArray(list, byte_level(1, 1));
    } else {
        cJSON *pat = cJSON_CreateObject();
        cJSON_AddStringToObject(pat, "Regex", pretok_pattern(pre));
        cJSON_AddStringToObject(first, "type", "Split");
        cJSON_AddItemToObject(first, "pattern", pat);
        cJSON_AddStringToObject(first, "behavior", "Isolated");
        cJSON_AddFalseToObject(first, "invert");
        cJSON_AddItemToArray(list, first);
        cJSON_AddItemToArray(list, byte_level(0, 0));
    }
    cJSON_AddItemToObject(seq, "pretokenizers", list);
    return seq;
}

/* bos first when the tokenizer adds it (a TemplateProcessing), else GPT-2's ByteLevel post-processor */
static cJSON *post_processor(const TokSpec *s) {
    if (!(s->add_bos && s->bos_id >= 0)) {
        cJSON *b = byte_level(1, 0);
        cJSON_ReplaceItemInObject(b, "add_prefix_space", cJSON_CreateTrue());
        return b;
    }
    const char *bos = s->tokens[s->bos_id];
    cJSON *p = cJSON_CreateObject(), *single = cJSON_CreateArray(), *pair = cJSON_CreateArray();
    for (int k = 0; k < 2; k++) {
        cJSON *list = k ? pair : single;
        for (int part = 0; part < 1 + k; part++) {
            cJSON *st = cJSON_CreateObject(), *sp = cJSON_CreateObject(), *sq = cJSON_CreateObject(),
                  *seq = cJSON_CreateObject();
            cJSON_AddStringToObject(sp, "id", bos);
            cJSON_AddNumberToObject(sp, "type_id", part);
            cJSON_AddItemToObject(st, "SpecialToken", sp);
            cJSON_AddStringToObject(sq, "id", part ? "B" : "A");
            cJSON_AddNumberToObject(sq, "type_id", part);
            cJSON_AddItemToObject(seq, "Sequence", sq);
            cJSON_AddItemToArray(list, st);
            cJSON_AddItemToArray(list, seq);
        }
    }
    cJSON *specials = cJSON_CreateObject(), *entry = cJSON_CreateObject();
    cJSON_AddStringToObject(entry, "id", bos);
    cJSON_AddItemToObject(entry, "ids", cJSON_CreateIntArray(&s->bos_id, 1));
    cJSON_AddItemToObject(entry, "tokens", cJSON_CreateStringArray(&bos, 1));
    cJSON_AddItemToObject(specials, bos, entry);
    cJSON_AddStringToObject(p, "type", "TemplateProcessing");
    cJSON_AddItemToObject(p, "single", single);
    cJSON_AddItemToObject(p, "pair", pair);
    cJSON_AddItemToObject(p, "special_tokens", specials);
    return p;
}

/* model: BPE over the whole vocabulary, added tokens included (HF tokenizers gives an added token missing from
 * model.vocab a new id past its end, not its own), and the merges in rank order */
static cJSON *bpe_model(const TokSpec *s) {
    cJSON *m = cJSON_CreateObject(), *vocab = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "type", "BPE");
    cJSON_AddNullToObject(m, "dropout");
    cJSON_AddNullToObject(m, "unk_token");
    cJSON_AddNullToObject(m, "continuing_subword_prefix");
    cJSON_AddNullToObject(m, "end_of_word_suffix");
    cJSON_AddFalseToObject(m, "fuse_unk");
    cJSON_AddFalseToObject(m, "byte_fallback");
    cJSON_AddBoolToObject(m, "ignore_merges", !strcmp(s->pre, "llama-bpe"));
    for (int i = 0; i < s->n_vocab; i++) cJSON_AddNumberToObject(vocab, s->tokens[i], i);
    cJSON_AddItemToObject(m, "vocab", vocab);
    cJSON_AddItemToObject(m, "merges", cJSON_CreateStringArray((const char *const *)s->merges, s->n_merges));
    return m;
}

static cJSON *tokenizer_json(const TokSpec *s) {
    cJSON *r = cJSON_CreateObject(), *added = cJSON_CreateArray();
    cJSON_AddStringToObject(r, "version", "1.0");
    cJSON_AddNullToObject(r, "truncation");
    cJSON_AddNullToObject(r, "padding");
    for (int i = 0; i < s->n_vocab; i++) {
        if (!is_added(s->token_type[i])) continue;
        cJSON *a = cJSON_CreateObject();
        int special = s->token_type[i] == TOK_TYPE_CONTROL;
        cJSON_AddNumberToObject(a, "id", i);
        cJSON_AddStringToObject(a, "content", s->tokens[i]);
        cJSON_AddFalseToObject(a, "single_word");
        cJSON_AddFalseToObject(a, "lstrip");
        cJSON_AddFalseToObject(a, "rstrip");
        cJSON_AddBoolToObject(a, "normalized", !special);
        cJSON_AddBoolToObject(a, "special", special);
        cJSON_AddItemToArray(added, a);
    }
    cJSON_AddItemToObject(r, "added_tokens", added);
    if (!strcmp(s->pre, "qwen2")) {
        cJSON *n = cJSON_CreateObject();
        cJSON_AddStringToObject(n, "type", "NFC");
        cJSON_AddItemToObject(r, "normalizer", n);
    } else {
        cJSON_AddNullToObject(r, "normalizer");
    }
    cJSON_AddItemToObject(r, "pre_tokenizer", pre_tokenizer(s->pre));
    cJSON_AddItemToObject(r, "post_processor", post_processor(s));
    cJSON_AddItemToObject(r, "decoder", byte_level(1, 1));
    cJSON_AddItemToObject(r, "model", bpe_model(s));
    return r;
}

/* the token's text under key, or null where the tokenizer has none */
static void add_token(cJSON *r, const char *key, const TokSpec *s, int id) {
    if (id >= 0 && id < s->n_vocab) cJSON_AddStringToObject(r, key, s->tokens[id]);
    else cJSON_AddNullToObject(r, key);
}

static cJSON *tokenizer_config_json(const TokSpec *s) {
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "tokenizer_class", "PreTrainedTokenizerFast");
    add_token(r, "bos_token", s, s->bos_id);
    add_token(r, "eos_token", s, s->eos_id);
    if (s->pad_id >= 0) add_token(r, "pad_token", s, s->pad_id);
    cJSON_AddBoolToObject(r, "add_bos_token", s->add_bos && s->bos_id >= 0);
    cJSON_AddFalseToObject(r, "clean_up_tokenization_spaces");
    if (s->chat_template) cJSON_AddStringToObject(r, "chat_template", s->chat_template);
    return r;
}

/* writes js as dir/name; 0, or -1 with why */
static int write_json(const char *dir, const char *name, cJSON *js, char *why, size_t len) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *text = cJSON_Print(js);
    cJSON_Delete(js);
    FILE *f = text ? fopen(path, "w") : NULL;
    int ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    if (f && fclose(f) != 0) ok = 0;
    free(text);
    if (!ok) return tok_fail(why, len, "%s: cannot write it", path);
    return 0;
}

int tok_write_hf(const char *dir, const TokSpec *spec, char *why, size_t len) {
    if (!spec->model || strcmp(spec->model, "gpt2") || !pretok_pattern(spec->pre))
        return tok_fail(why, len, "the tokenizer (model %s, pre %s) has no Hugging Face form Nereus writes",
                        spec->model ? spec->model : "?", spec->pre ? spec->pre : "?");
    if (write_json(dir, "tokenizer.json", tokenizer_json(spec), why, len)) return -1;
    return write_json(dir, "tokenizer_config.json", tokenizer_config_json(spec), why, len);
}
