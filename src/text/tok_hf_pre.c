/* tok_hf_pre.c — recognises a tokenizer.json's pre-tokenizer as one of the
 * families Nereus builds (tok_pre.c), by the structure the families'
 * published files have:
 *   gpt2       ByteLevel (use_regex true)
 *   smollm     Sequence [Digits (individual_digits true), ByteLevel (use_regex true)]
 *   llama-bpe  Sequence [Split (Llama-3's regex, Isolated), ByteLevel (use_regex false)]
 *   qwen2      Sequence [Split (Qwen2's regex, Isolated), ByteLevel (use_regex false)]
 * with add_prefix_space false throughout, and the normalizer NFC for qwen2
 * and none for the others, as their published files have it. Anything else
 * is refused, naming the JSON key. */
#include "tok_hf.h"
#include "tok_int.h"

#include <stdio.h>
#include <string.h>

static const char *str_of(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int is_type(const cJSON *obj, const char *type) {
    const char *t = str_of(obj, "type");
    return t && !strcmp(t, type);
}

/* a ByteLevel step with add_prefix_space false and use_regex as wanted (absent is true) */
static int byte_level(const cJSON *p, int use_regex) {
    const cJSON *ur = cJSON_GetObjectItemCaseSensitive(p, "use_regex");
    int regex = ur ? cJSON_IsTrue(ur) : 1;
    int prefix = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "add_prefix_space"));
    return is_type(p, "ByteLevel") && !prefix && regex == use_regex;
}

/* a Split step of a known family's regex, isolating its matches: the family's name, or NULL */
static const char *split_family(const cJSON *p) {
    const cJSON *pat = cJSON_GetObjectItemCaseSensitive(p, "pattern");
    const char *re = str_of(pat, "Regex"), *behavior = str_of(p, "behavior");
    int invert = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "invert"));
    if (!is_type(p, "Split") || !re || !behavior || strcmp(behavior, "Isolated") || invert) return NULL;
    if (!strcmp(re, pretok_pattern("llama-bpe"))) return "llama-bpe";
    if (!strcmp(re, pretok_pattern("qwen2"))) return "qwen2";
    return NULL;
}

static const char *family_of(const cJSON *pt) {
    if (byte_level(pt, 1)) return "gpt2";
    const cJSON *seq = cJSON_GetObjectItemCaseSensitive(pt, "pretokenizers");
    if (!is_type(pt, "Sequence") || !cJSON_IsArray(seq) || cJSON_GetArraySize(seq) != 2) return NULL;
    const cJSON *a = seq->child, *b = a->next;
    int digits = is_type(a, "Digits") && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "individual_digits"));
    if (digits && byte_level(b, 1)) return "smollm";
    const char *f = split_family(a);
    return f && byte_level(b, 0) ? f : NULL;
}

int tok_hf_pre(const cJSON *root, const char **pre, const char *path, char *why, size_t len) {
    const cJSON *norm = cJSON_GetObjectItemCaseSensitive(root, "normalizer");
    if (norm && !cJSON_IsNull(norm) && !is_type(norm, "NFC"))
        return tok_fail(why, len, "%s: normalizer: type '%s' is not supported (none, or NFC)", path,
                        str_of(norm, "type") ? str_of(norm, "type") : "?");
    const cJSON *pt = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer");
    if (!pt) return tok_fail(why, len, "%s: missing key 'pre_tokenizer'", path);
    if (!(*pre = family_of(pt)))
        return tok_fail(why, len, "%s: pre_tokenizer: not one Nereus knows (GPT-2's ByteLevel; Llama-3's or "
                        "Qwen2's Split + ByteLevel; SmolLM2's Digits + ByteLevel)", path);
    /* the family decides NFC (tok.c: Qwen2's files have it, the others none), so the file must agree */
    int nfc = is_type(norm, "NFC"), want = !strcmp(*pre, "qwen2");
    if (nfc != want)
        return tok_fail(why, len, "%s: normalizer is %s, where the '%s' pre-tokenizer has %s", path,
                        nfc ? "NFC" : "none", *pre, want ? "NFC" : "none");
    return 0;
}
