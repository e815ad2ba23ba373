/* test_text.c — the tokenizer's API on hand-made TokSpecs, for what the
 * reference corpus (tests/suites/text.sh) cannot show: the merge order on
 * ties and long pieces, Llama-3's ignore_merges, added tokens longest first,
 * bytes missing from a vocabulary, refusals with their messages, and the chat
 * formats' recognition (default system prompts taken from the template or
 * not) and layout, and one tokenizer shared by threads. Run from the
 * repository root (or a directory with its tests/ beside it). */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "nereus/text.h"

/* a TokSpec of the given tokens (types: NORMAL, but those starting "<|" CONTROL) and merges */
static TokSpec spec_of(const char *pre, const char *const *tokens, const char *const *merges) {
    TokSpec s = {0};
    s.model = strdup("gpt2");
    s.pre = strdup(pre);
    while (tokens[s.n_vocab]) s.n_vocab++;
    while (merges[s.n_merges]) s.n_merges++;
    s.tokens = calloc((size_t)s.n_vocab, sizeof *s.tokens);
    s.token_type = calloc((size_t)s.n_vocab, sizeof *s.token_type);
    s.merges = calloc((size_t)s.n_merges + 1, sizeof *s.merges);
    for (int i = 0; i < s.n_vocab; i++) {
        s.tokens[i] = strdup(tokens[i]);
        s.token_type[i] = strncmp(tokens[i], "<|", 2) ? TOK_TYPE_NORMAL : TOK_TYPE_CONTROL;
    }
    for (int i = 0; i < s.n_merges; i++) s.merges[i] = strdup(merges[i]);
    s.bos_id = s.eos_id = s.eot_id = s.pad_id = -1;
    return s;
}

/* the ids of text as "1 2 3" (static buffer), or "error: why" */
static const char *ids_of(const Tokenizer *tk, const char *text) {
    static char out[4096];
    char why[256];
    TokIds ids = {0};
    if (tok_encode(tk, text, strlen(text), &ids, why, sizeof why)) { snprintf(out, sizeof out, "error: %s", why); return out; }
    size_t k = 0;
    out[0] = 0;
    for (size_t i = 0; i < ids.n && k < sizeof out - 16; i++) k += (size_t)snprintf(out + k, sizeof out - k, i ? " %d" : "%d", ids.ids[i]);
    tokids_free(&ids);
    return out;
}

static const char *const TOKENS[] = {"a", "b", "c", "\xc4\xa0" /* Ġ: space */, "aa", "ab", "abc", "aaaa",
                                     "<|x|>", "<|x|>y", "y", "1", "2", NULL};
enum { A, B, C, SP, AA, AB, ABC, AAAA, X, XY, Y, ONE, TWO };

static void check_merges(void) {
    static const char *const merges[] = {"a a", "a b", "aa aa", NULL};
    TokSpec s = spec_of("gpt2", TOKENS, merges);
    Tokenizer *tk; char why[256];
    CHECK(tok_build(&tk, &s, why, sizeof why) == 0, "a hand-made gpt2 tokenizer builds");
    CHECK(!strcmp(ids_of(tk, "aaa"), "4 0"), "a tie merges leftmost first: aaa = [aa][a] (%s)", ids_of(tk, "aaa"));
    CHECK(!strcmp(ids_of(tk, "abc"), "5 2"), "abc without a merge to abc = [ab][c] under gpt2 (%s)", ids_of(tk, "abc"));
    char *many = malloc(5001);
    memset(many, 'a', 5000); many[5000] = 0;
    TokIds ids = {0};
    int rc = tok_encode(tk, many, 5000, &ids, why, sizeof why), all = rc == 0 && ids.n == 1250;
    for (size_t i = 0; all && i < ids.n; i++) all = ids.ids[i] == AAAA;
    CHECK(all, "a piece of 5,000 bytes merges to 1,250 [aaaa] (%zu ids)", ids.n);
    tokids_free(&ids);
    free(many);
    CHECK(!strcmp(ids_of(tk, "a<|x|>yb"), "0 9 1"), "added tokens longest first: <|x|>y over <|x|> (%s)", ids_of(tk, "a<|x|>yb"));
    CHECK(!strcmp(ids_of(tk, "a\x01" "b"), "0 1"), "a byte without a token is left out (%s)", ids_of(tk, "a\x01" "b"));
    CHECK(!strncmp(ids_of(tk, "a\xff"), "error: the text is not valid UTF-8 at byte 1", 44), "invalid UTF-8 refused (%s)", ids_of(tk, "a\xff"));
    int bad[] = {0, 99};
    char *text; size_t n;
    CHECK(tok_decode(tk, bad, 2, &text, &n, why, sizeof why) && strstr(why, "id 99 at position 1"), "an id out of range refused: %s", why);
    int some[] = {AB, SP, X, AA};
    CHECK(tok_decode(tk, some, 4, &text, &n, why, sizeof why) == 0 && n == 10 && !memcmp(text, "ab <|x|>aa", 10),
          "decode: byte-level tokens to bytes, added tokens as their text");
    free(text);
    tok_free(tk);
    tokspec_free(&s);
}

static void check_families(void) {
    static const char *const merges[] = {"a b", NULL};
    Tokenizer *tk; char why[256];
    TokSpec s = spec_of("llama-bpe", TOKENS, merges);
    CHECK(tok_build(&tk, &s, why, sizeof why) == 0, "a hand-made llama-bpe tokenizer builds");
    CHECK(!strcmp(ids_of(tk, "abc"), "6"), "llama-bpe ignores merges for a piece that is a token: abc = [abc] (%s)", ids_of(tk, "abc"));
    tok_free(tk);
    tokspec_free(&s);
    s = spec_of("falcon", TOKENS, merges);
    CHECK(tok_build(&tk, &s, why, sizeof why) && strstr(why, "unknown pre-tokenizer 'falcon'"), "an unknown pre refused: %s", why);
    tokspec_free(&s);
    static const char *const bad_merge[] = {"a z", NULL};
    s = spec_of("gpt2", TOKENS, bad_merge);
    CHECK(tok_build(&tk, &s, why, sizeof why) && strstr(why, "merge 0 'a z': 'right part'"), "a merge of a non-token refused: %s", why);
    tokspec_free(&s);
    s = spec_of("gpt2", TOKENS, merges);
    free(s.model); s.model = strdup("llama");
    CHECK(tok_build(&tk, &s, why, sizeof why) && strstr(why, "model 'llama' is not byte-level BPE"), "SentencePiece refused: %s", why);
    tokspec_free(&s);
}

static const char SMOL_TMPL[] =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n"
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}";
static const char QWEN3_LIKE[] =
    "{%- if messages[0].role == 'system' %}{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}"
    "{%- endif %}{%- for message in messages %}...{%- endfor %}";
static const char LLAMA3_TMPL[] =
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim"
    " + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}";

static const char LLAMA31_TMPL[] =
    "{{- \"<|start_header_id|>system<|end_header_id|>\\n\\n\" }}{{- \"Cutting Knowledge Date: December 2023\\n\" }}";
static const char QWEN25_TMPL[] =
    "{%- if tools %}{{- '<|im_start|>system\\n' }}{%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] }}"
    "{%- else %}{{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}{%- endif %}"
    "{{- \"\\n\\n# Tools\" }}{{- \"<|im_end|>\\n\" }}{%- else %}{%- if messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}{%- else %}"
    "{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}"
    "{%- endif %}{%- endif %}";

static void check_chat(void) {
    static const char *const toks[] = {"a", "<|im_start|>", "<|im_end|>", "<|start_header_id|>", "<|end_header_id|>",
                                       "<|eot_id|>", "<|begin_of_text|>", NULL};
    static const char *const none[] = {NULL};
    TokSpec s = spec_of("gpt2", toks, none);
    s.bos_id = 6;
    Tokenizer *tk; char why[256];
    Chat chat;
    tok_build(&tk, &s, why, sizeof why);
    CHECK(chat_build(&chat, SMOL_TMPL, tk, why, sizeof why) == 0 && chat.format == CHAT_CHATML && chat.eot_id == 2 &&
          chat.default_system && !strcmp(chat.default_system, "You are a helpful AI assistant named SmolLM, trained by Hugging Face"),
          "SmolLM2's template: ChatML, <|im_end|> ends a turn, its default system prompt taken");
    char *p = chat_format(&chat, NULL, "hi");
    CHECK(!strcmp(p, "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
                     "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"), "ChatML with the default system prompt");
    free(p);
    chat_free(&chat);
    CHECK(chat_build(&chat, QWEN3_LIKE, tk, why, sizeof why) == 0 && chat.format == CHAT_CHATML && !chat.default_system,
          "a ChatML template that writes only the messages' own system turn has no default");
    p = chat_format(&chat, NULL, " hi ");
    CHECK(!strcmp(p, "<|im_start|>user\n hi <|im_end|>\n<|im_start|>assistant\n"), "ChatML without a system prompt, untrimmed");
    free(p);
    chat_free(&chat);
    CHECK(chat_build(&chat, LLAMA3_TMPL, tk, why, sizeof why) == 0 && chat.format == CHAT_LLAMA3 && chat.eot_id == 5,
          "Llama-3's template: recognised, <|eot_id|> ends a turn");
    p = chat_format(&chat, " Be brief. ", "\thi \n");
    CHECK(!strcmp(p, "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
                     "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"),
          "Llama-3: bos, trimmed turns, the assistant header");
    free(p);
    p = chat_format(&chat, NULL, "\xe3\x80\x80hi\xc2\xa0\xe2\x80\xa6\xc2\xa0\n");
    CHECK(!strcmp(p, "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi\xc2\xa0\xe2\x80\xa6<|eot_id|>"
                     "<|start_header_id|>assistant<|end_header_id|>\n\n"),
          "Llama-3: trims Unicode spaces (U+3000, U+00A0) as Python's strip does, not U+2026");
    free(p);
    chat_free(&chat);
    CHECK(chat_build(&chat, LLAMA31_TMPL, tk, why, sizeof why) && strstr(why, "Llama-3.1's, with its dated system turn"),
          "Llama-3.1's template refused: %s", why);
    CHECK(chat_build(&chat, QWEN25_TMPL, tk, why, sizeof why) == 0 && chat.default_system &&
          !strcmp(chat.default_system, "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."),
          "Qwen2.5's default system prompt found after two turns that are not literal");
    chat_free(&chat);
    CHECK(chat_build(&chat, "{% for m in messages %}[INST] {{ m.content }}\nmore", tk, why, sizeof why) &&
          !strcmp(why, "chat template not recognised (ChatML or Llama-3): {% for m in messages %}[INST] {{ m.content }}"),
          "an unknown template refused with its first line: %s", why);
    CHECK(chat_build(&chat, NULL, tk, why, sizeof why) == 0 && chat.format == CHAT_NONE, "no template: no format");
    tok_free(tk);
    tokspec_free(&s);
}

/* one tokenizer, 4 threads encoding at once: the same ids as one thread (the corpus, SmolLM2's vocabulary) */
static void check_threads(void) {
    TokSpec spec; Tokenizer *tk; char why[256];
    if (tok_read_hf("tests/text/data/smollm2", &spec, why, sizeof why) || tok_build(&tk, &spec, why, sizeof why)) {
        CHECK(0, "SmolLM2's tokenizer loads: %s", why);
        return;
    }
    FILE *f = fopen("tests/text/data/corpus.jsonl", "r");
    char *line = NULL, **text = NULL; size_t cap = 0; int n = 0;
    while (f && getline(&line, &cap, f) > 0) {
        cJSON *v = cJSON_Parse(line);
        text = realloc(text, (size_t)(n + 1) * sizeof *text);
        text[n++] = strdup(cJSON_IsString(v) ? v->valuestring : "");
        cJSON_Delete(v);
    }
    if (f) fclose(f);
    free(line);
    TokIds *serial = calloc((size_t)n, sizeof *serial), *par = calloc((size_t)n, sizeof *par);
    int fails = 0;
    for (int i = 0; i < n; i++) fails += tok_encode(tk, text[i], strlen(text[i]), &serial[i], why, sizeof why) != 0;
    #pragma omp parallel for num_threads(4) schedule(dynamic, 7) reduction(+ : fails)
    for (int i = 0; i < n; i++) {
        char w[256];
        fails += tok_encode(tk, text[i], strlen(text[i]), &par[i], w, sizeof w) != 0;
    }
    int same = 0;
    for (int i = 0; i < n; i++) {
        same += serial[i].n == par[i].n && !memcmp(serial[i].ids, par[i].ids, serial[i].n * sizeof(int));
        tokids_free(&serial[i]); tokids_free(&par[i]); free(text[i]);
    }
    CHECK(n >= 2000 && fails == 0 && same == n, "4 threads on one tokenizer: %d of %d strings as one thread gives", same, n);
    free(serial); free(par); free(text);
    tok_free(tk);
    tokspec_free(&spec);
}

int main(void) {
    check_merges();
    check_families();
    check_chat();
    check_threads();
    return CHECK_DONE();
}
