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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *chat_format_name(ChatFormat f) {
    return f == CHAT_CHATML ? "chatml" : f == CHAT_LLAMA3 ? "llama3" : "none";
}

/* the literal system text a ChatML template writes when there is none, or NULL */
static char *default_system(const char *tmpl) {
    static const char *const heads[] = {"<|im_start|>system\n", "<|im_start|>system\\n"};
    for (int h = 0; h < 2; h++) {
        const char *s = strstr(tmpl, heads[h]);
        if (!s) continue;
        s += strlen(heads[h]);
        const char *e = strstr(s, "<|im_end|>");
        if (!e || e == s) continue;
        size_t n = (size_t)(e - s);
        int literal = 1;
        for (const char *c = "'\"{+\\"; *c; c++) literal &= !memchr(s, *c, n);
        if (literal) return strndup(s, n); /* else the template writes the messages' own system turn */
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

/* s without leading and trailing ASCII whitespace (Jinja's trim), as a length-bounded view */
static void trim(const char **s, size_t *n) {
    *n = strlen(*s);
    while (*n && strchr(" \t\n\r\f\v", (*s)[0])) { (*s)++; (*n)--; }
    while (*n && strchr(" \t\n\r\f\v", (*s)[*n - 1])) (*n)--;
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
