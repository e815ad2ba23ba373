/* chat.c — chat formatting with the model's own template, recognised (as
 * llama.cpp recognises its built-in templates, by substrings) as one of:
 *   ChatML  (<|im_start|>: SmolLM2, Qwen2/Qwen3)
 *       [<|im_start|>system\nSYSTEM<|im_end|>\n]<|im_start|>user\nUSER<|im_end|>\n<|im_start|>assistant\n
 *   Llama-3 (<|start_header_id|>)
 *       BOS[<|start_header_id|>system<|end_header_id|>\n\nSYSTEM<|eot_id|>]
 *       <|start_header_id|>user<|end_header_id|>\n\nUSER<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n
 *       (Llama-3's template trims each message's content)
 * A ChatML template that writes a fixed system turn when the messages have
 * none (SmolLM2's "You are a helpful AI assistant named SmolLM, ...",
 * Qwen2's "You are a helpful assistant.") has that text taken from the
 * template and used when no system prompt is given, as transformers'
 * apply_chat_template does. */
#include "tok_int.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *chat_format_name(ChatFormat f) {
    return f == CHAT_CHATML ? "chatml" : f == CHAT_LLAMA3 ? "llama3" : "none";
}

/* the literal system text a ChatML template writes when there is none, or NULL: the first
 * "<|im_start|>system\n...<|im_end|>" whose text is a literal (Qwen2.5's comes after two that
 * write the messages' own system turn) */
static char *default_system(const char *tmpl) {
    static const char *const heads[] = {"<|im_start|>system\n", "<|im_start|>system\\n"};
    for (int h = 0; h < 2; h++)
        for (const char *s = strstr(tmpl, heads[h]); s; s = strstr(s, heads[h])) {
            s += strlen(heads[h]);
            const char *e = strstr(s, "<|im_end|>");
            if (!e || e == s) continue;
            size_t n = (size_t)(e - s);
            int literal = 1;
            for (const char *c = "'\"{+\\"; *c; c++) literal &= !memchr(s, *c, n);
            if (literal) return strndup(s, n);
        }
    return NULL;
}

static int eot_of(Chat *chat, const Tokenizer *tk, const char *eot, char *why, size_t len) {
    chat->eot_id = tok_find(tk, eot);
    return chat->eot_id < 0 ? tok_fail(why, len, "chat template: the vocabulary has no %s token", eot) : 0;
}

int chat_build(Chat *chat, const char *tmpl, const Tokenizer *tk, char *why, size_t len) {
    memset(chat, 0, sizeof *chat);
    chat->eot_id = -1;
    if (!tmpl || !*tmpl) return 0;
    if (strstr(tmpl, "<|im_start|>")) {
        chat->format = CHAT_CHATML;
        chat->default_system = default_system(tmpl);
        return eot_of(chat, tk, "<|im_end|>", why, len);
    }
    if (strstr(tmpl, "<|start_header_id|>") && strstr(tmpl, "Cutting Knowledge Date"))
        return tok_fail(why, len, "chat template: Llama-3.1's, with its dated system turn, is not one of the built-in "
                        "formats (Llama-3's is)");
    if (strstr(tmpl, "<|start_header_id|>")) {
        chat->format = CHAT_LLAMA3;
        if (strstr(tmpl, "bos_token") && tok_bos(tk) >= 0) chat->bos = strdup(tk->tokens[tok_bos(tk)]);
        return eot_of(chat, tk, "<|eot_id|>", why, len);
    }
    size_t first = strcspn(tmpl, "\n"); /* the first line, at most 200 bytes of it */
    return tok_fail(why, len, "chat template not recognised (ChatML or Llama-3): %.*s", (int)(first > 200 ? 200 : first),
                    tmpl);
}

void chat_free(Chat *chat) {
    free(chat->default_system);
    free(chat->bos);
    memset(chat, 0, sizeof *chat);
}

/* the length of the whitespace character at s, as Python's str.isspace() has it, or 0 */
static size_t space_at(const unsigned char *s, size_t n) {
    if (strchr(" \t\n\r\f\v\x1c\x1d\x1e\x1f", s[0]) && s[0]) return 1;
    uint32_t cp = 0;
    size_t k = s[0] >= 0xe0 && s[0] < 0xf0 ? 3 : s[0] >= 0xc0 && s[0] < 0xe0 ? 2 : 0;
    if (k == 0 || k > n) return 0;
    cp = s[0] & (k == 2 ? 0x1f : 0x0f);
    for (size_t i = 1; i < k; i++) cp = cp << 6 | (s[i] & 0x3f);
    int space = cp == 0x85 || cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 ||
                cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000;
    return space ? k : 0;
}

/* s without leading and trailing whitespace (Jinja's trim: Python's str.strip()), as a bounded view */
static void trim(const char **s, size_t *n) {
    const unsigned char *u = (const unsigned char *)*s;
    size_t a = 0, b = strlen(*s), k;
    while (a < b && (k = space_at(u + a, b - a))) a += k;
    for (int moved = 1; moved && b > a;) { /* from the end: the character that starts 1, 2 or 3 bytes back */
        moved = 0;
        for (size_t back = 1; back <= 3 && back <= b - a && !moved; back++)
            if (space_at(u + b - back, back) == back) { b -= back; moved = 1; }
    }
    *s += a;
    *n = b - a;
}

static char *format_chatml(const Chat *chat, const char *system, const char *user) {
    if (!system) system = chat->default_system;
    size_t n = strlen(user) + (system ? strlen(system) : 0) + 128;
    char *s = malloc(n);
    if (!s) return NULL;
    int k = 0;
    if (system) k = snprintf(s, n, "<|im_start|>system\n%s<|im_end|>\n", system);
    snprintf(s + k, n - (size_t)k, "<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n", user);
    return s;
}

static char *format_llama3(const Chat *chat, const char *system, const char *user) {
    size_t nu, ns = 0;
    trim(&user, &nu);
    if (system) trim(&system, &ns);
    size_t n = nu + ns + (chat->bos ? strlen(chat->bos) : 0) + 192;
    char *s = malloc(n);
    if (!s) return NULL;
    int k = snprintf(s, n, "%s", chat->bos ? chat->bos : "");
    if (system)
        k += snprintf(s + k, n - (size_t)k, "<|start_header_id|>system<|end_header_id|>\n\n%.*s<|eot_id|>", (int)ns,
                      system);
    snprintf(s + k, n - (size_t)k, "<|start_header_id|>user<|end_header_id|>\n\n%.*s<|eot_id|>"
             "<|start_header_id|>assistant<|end_header_id|>\n\n", (int)nu, user);
    return s;
}

char *chat_format(const Chat *chat, const char *system, const char *user) {
    if (chat->format == CHAT_CHATML) return format_chatml(chat, system, user);
    if (chat->format == CHAT_LLAMA3) return format_llama3(chat, system, user);
    return strdup(user);
}
