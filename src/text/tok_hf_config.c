/* tok_hf_config.c — what a Hugging Face tokenizer_config.json adds to a
 * TokSpec read from tokenizer.json: the bos and eos tokens (a string, or an
 * object with "content"), add_bos_token, the chat template (a string, or
 * the list of named templates, whose "default" is taken), and the end-of-turn
 * id (ChatML's <|im_end|> or Llama-3's <|eot_id|> where the vocabulary has
 * one, else eos). The file is optional: without it these stay as
 * tokenizer.json left them (bos and add_bos from its post-processor). */
#include "tok_hf.h"
#include "tok_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tok_spec_find(const TokSpec *spec, const char *s) {
    for (int i = 0; s && i < spec->n_vocab; i++)
        if (!strcmp(spec->tokens[i], s)) return i;
    return -1;
}

/* the text of a special-token entry: "text" or {"content": "text", ...} */
static const char *token_text(const cJSON *v) {
    if (cJSON_IsString(v)) return v->valuestring;
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(v, "content");
    return cJSON_IsString(c) ? c->valuestring : NULL;
}

/* the id of the special token under key; *id as it was where the key is absent, -1 where it is null;
 * a token not in the vocabulary fails */
static int special_id(const cJSON *root, const char *key, int *id, const TokSpec *spec, const char *path,
                      char *why, size_t len) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v) return 0;
    *id = -1;
    if (cJSON_IsNull(v)) return 0;
    const char *s = token_text(v);
    if (!s) return tok_fail(why, len, "%s: %s is neither a string nor {\"content\": ...}", path, key);
    if ((*id = tok_spec_find(spec, s)) < 0) return tok_fail(why, len, "%s: %s '%s' is not in the vocabulary", path, key, s);
    return 0;
}

static const char *template_text(const cJSON *t) {
    if (cJSON_IsString(t)) return t->valuestring;
    for (const cJSON *e = cJSON_IsArray(t) ? t->child : NULL; e; e = e->next) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
        const cJSON *tt = cJSON_GetObjectItemCaseSensitive(e, "template");
        if (cJSON_IsString(name) && !strcmp(name->valuestring, "default") && cJSON_IsString(tt)) return tt->valuestring;
    }
    return NULL;
}

static int read_config(const cJSON *root, TokSpec *spec, const char *path, char *why, size_t len) {
    if (special_id(root, "bos_token", &spec->bos_id, spec, path, why, len) ||
        special_id(root, "eos_token", &spec->eos_id, spec, path, why, len) ||
        special_id(root, "pad_token", &spec->pad_id, spec, path, why, len))
        return -1;
    const cJSON *add_bos = cJSON_GetObjectItemCaseSensitive(root, "add_bos_token"); /* else the post-processor's */
    if (add_bos) spec->add_bos = cJSON_IsTrue(add_bos);
    spec->add_bos = spec->add_bos && spec->bos_id >= 0;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "chat_template");
    if (t && !cJSON_IsNull(t)) {
        const char *text = template_text(t);
        if (!text) return tok_fail(why, len, "%s: chat_template is neither a string nor a list with a \"default\"", path);
        if (!(spec->chat_template = strdup(text))) return tok_fail(why, len, "out of memory");
    }
    spec->eot_id = tok_spec_find(spec, "<|im_end|>");
    if (spec->eot_id < 0) spec->eot_id = tok_spec_find(spec, "<|eot_id|>");
    if (spec->eot_id < 0) spec->eot_id = spec->eos_id;
    return 0;
}

int tok_hf_config(const char *path, TokSpec *spec, char *why, size_t len) {
    size_t n;
    char *text = tok_read_text(path, &n);
    if (!text) return 0; /* no tokenizer_config.json: nothing to add */
    cJSON *root = cJSON_ParseWithLength(text, n);
    int rc = -1;
    if (!cJSON_IsObject(root)) snprintf(why, len, "%s: not a JSON object", path);
    else rc = read_config(root, spec, path, why, len);
    cJSON_Delete(root);
    free(text);
    return rc;
}
