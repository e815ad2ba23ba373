/* dataset.c — a JSONL prompt file's bytes to a PromptSet: each line parsed
 * with cJSON, its prompt formatted with the chat template and tokenized once,
 * its answer (and metadata) kept as text, prompts too long for max_prompt
 * dropped and counted. A pure function of the bytes and the tokenizer, so
 * every rank that parses the same bytes gets the same set (dataset.h). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/dataset.h"

/* messages quote paths and keys cut to their buffers on purpose */
#pragma GCC diagnostic ignored "-Wformat-truncation"

uint64_t dataset_hash(const char *bytes, size_t n) {
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)bytes[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* one line's fields, pointing into its cJSON tree (metadata malloc'd) */
typedef struct LineFields {
    const char *prompt;
    char *answer;   /* malloc'd */
    char *metadata; /* malloc'd, or NULL */
    int number_answer;
} LineFields;

/* the grow-as-you-go arrays of a PromptSet being built */
typedef struct Builder {
    PromptSet *ps;
    size_t cap_prompts, cap_ids;
    int shortest_dropped; /* ids of the shortest dropped prompt, for the "none fits" message */
} Builder;

static const char *json_kind(const cJSON *v) {
    if (cJSON_IsNumber(v)) return "a number";
    if (cJSON_IsBool(v)) return "a boolean";
    if (cJSON_IsNull(v)) return "null";
    if (cJSON_IsArray(v)) return "an array";
    if (cJSON_IsObject(v)) return "an object";
    return "a string";
}

/* the answer's text: a string as it is, a number as cJSON prints it (42 -> "42", 1000.0 -> "1000") */
static char *answer_text(const cJSON *a, int *number) {
    *number = cJSON_IsNumber(a);
    return *number ? cJSON_PrintUnformatted(a) : strdup(a->valuestring);
}

/* the fields of one parsed line; -1 with why (without the "FILE:LINE: " the caller adds) */
static int line_fields(const cJSON *v, const DatasetOptions *opt, LineFields *f, char *why, size_t len) {
    const char *pk = opt->prompt_key ? opt->prompt_key : "question";
    const char *ak = opt->answer_key ? opt->answer_key : "answer";
    if (!cJSON_IsObject(v)) return snprintf(why, len, "%s, not a JSON object", json_kind(v)), -1;
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(v, pk), *a = cJSON_GetObjectItemCaseSensitive(v, ak);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(v, "metadata");
    if (!p) return snprintf(why, len, "no key \"%s\" (the prompt: [data] prompt_key)", pk), -1;
    if (!cJSON_IsString(p)) return snprintf(why, len, "\"%s\" is %s, not a string", pk, json_kind(p)), -1;
    if (!p->valuestring[0]) return snprintf(why, len, "\"%s\" is an empty string", pk), -1;
    if (!a) return snprintf(why, len, "no key \"%s\" (the answer: [data] answer_key)", ak), -1;
    if (!cJSON_IsString(a) && !cJSON_IsNumber(a))
        return snprintf(why, len, "\"%s\" is %s, not a string or a number", ak, json_kind(a)), -1;
    if (m && !cJSON_IsObject(m)) return snprintf(why, len, "\"metadata\" is %s, not an object", json_kind(m)), -1;
    f->prompt = p->valuestring;
    f->answer = answer_text(a, &f->number_answer);
    f->metadata = m ? cJSON_PrintUnformatted(m) : NULL;
    if (!f->answer || (m && !f->metadata)) return snprintf(why, len, "out of memory"), -1;
    return 0;
}

/* the prompt's ids: chat-formatted (the template writes its own bos), or the text alone after bos */
static int encode_prompt(const DatasetOptions *opt, const char *prompt, TokIds *ids, char *why, size_t len) {
    ids->n = 0;
    if (!opt->chat || opt->chat->format == CHAT_NONE) {
        if (tok_add_bos(opt->tk) && tokids_push(ids, tok_bos(opt->tk))) return snprintf(why, len, "out of memory"), -1;
        return tok_encode(opt->tk, prompt, strlen(prompt), ids, why, len);
    }
    char *text = chat_format(opt->chat, opt->system && opt->system[0] ? opt->system : NULL, prompt);
    if (!text) return snprintf(why, len, "out of memory"), -1;
    int rc = tok_encode(opt->tk, text, strlen(text), ids, why, len);
    free(text);
    return rc;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* room for one more prompt in every per-prompt array (off has one more entry than the others) */
static int grow_prompts(Builder *b) {
    PromptSet *ps = b->ps;
    size_t need = (size_t)ps->n + 2;
    if (need <= b->cap_prompts) return 0;
    size_t c[4] = {b->cap_prompts, b->cap_prompts, b->cap_prompts, b->cap_prompts};
    if (grow((void **)&ps->off, &c[0], need, sizeof *ps->off) ||
        grow((void **)&ps->line, &c[1], need, sizeof *ps->line) ||
        grow((void **)&ps->answer, &c[2], need, sizeof *ps->answer) ||
        grow((void **)&ps->metadata, &c[3], need, sizeof *ps->metadata))
        return -1;
    b->cap_prompts = c[0];
    return 0;
}

/* keeps one prompt (taking f's strings) or counts it dropped (freeing them) */
static int builder_add(Builder *b, const TokIds *ids, LineFields *f, int line) {
    PromptSet *ps = b->ps;
    ps->n_read++;
    ps->n_number_answers += f->number_answer;
    if (ids->n > (size_t)ps->max_prompt) {
        ps->n_dropped++;
        if (b->shortest_dropped == 0 || ids->n < (size_t)b->shortest_dropped) b->shortest_dropped = (int)ids->n;
        free(f->answer);
        free(f->metadata);
        *f = (LineFields){0};
        return 0;
    }
    size_t k = (size_t)ps->n, used = ps->off[k];
    if (grow_prompts(b) || grow((void **)&ps->ids, &b->cap_ids, used + ids->n, sizeof *ps->ids)) return -1;
    memcpy(ps->ids + used, ids->ids, ids->n * sizeof *ids->ids);
    ps->off[k + 1] = used + ids->n;
    ps->line[k] = line;
    ps->answer[k] = f->answer;
    ps->metadata[k] = f->metadata;
    *f = (LineFields){0};
    if ((int)ids->n > ps->longest) ps->longest = (int)ids->n;
    ps->n++;
    return 0;
}

/* one non-blank line: parsed, its fields taken, its prompt encoded and kept or dropped */
static int parse_line(Builder *b, const char *s, size_t n, int line, const DatasetOptions *opt, TokIds *ids,
                      char *why, size_t len) {
    const char *end = NULL;
    cJSON *v = cJSON_ParseWithLengthOpts(s, n, &end, 0);
    if (!v) {
        size_t col = end && end >= s ? (size_t)(end - s) + 1 : 1;
        return snprintf(why, len, "malformed JSON (at column %zu)", col), -1;
    }
    while (end < s + n && (*end == ' ' || *end == '\t' || *end == '\r')) end++;
    LineFields f = {0};
    int rc = -1;
    if (end < s + n) snprintf(why, len, "text after the JSON object (at column %zu)", (size_t)(end - s) + 1);
    else if (line_fields(v, opt, &f, why, len) == 0 && encode_prompt(opt, f.prompt, ids, why, len) == 0)
        rc = builder_add(b, ids, &f, line) ? snprintf(why, len, "out of memory"), -1 : 0;
    free(f.answer); /* NULL once builder_add took them */
    free(f.metadata);
    cJSON_Delete(v);
    return rc;
}

/* walks the lines; -1 with why naming the file (and the line where one is at fault) */
static int parse_lines(Builder *b, const char *name, const char *bytes, size_t n, const DatasetOptions *opt,
                       char *why, size_t len) {
    TokIds ids = {0};
    char msg[512];
    int line = 0, rc = 0;
    for (size_t pos = 0; pos < n && rc == 0;) {
        const char *s = bytes + pos, *nl = memchr(s, '\n', n - pos);
        size_t k = nl ? (size_t)(nl - s) : n - pos;
        pos += k + (nl != NULL);
        line++;
        size_t blank = 0;
        while (blank < k && (s[blank] == ' ' || s[blank] == '\t' || s[blank] == '\r')) blank++;
        if (blank == k) continue;
        if (parse_line(b, s, k, line, opt, &ids, msg, sizeof msg)) {
            snprintf(why, len, "%s:%d: %s", name, line, msg);
            rc = -1;
        }
    }
    tokids_free(&ids);
    return rc;
}

int dataset_parse(PromptSet *ps, const char *name, const char *bytes, size_t n, const DatasetOptions *opt,
                  char *why, size_t len) {
    memset(ps, 0, sizeof *ps);
    if (!opt || !opt->tk || opt->max_prompt < 1)
        return snprintf(why, len, "%s: no tokenizer or no room for a prompt (max_prompt < 1)", name), -1;
    ps->max_prompt = opt->max_prompt;
    ps->hash = dataset_hash(bytes, n);
    Builder b = {.ps = ps};
    ps->off = calloc(1, sizeof *ps->off);
    int rc = ps->off ? parse_lines(&b, name, bytes, n, opt, why, len) : (snprintf(why, len, "out of memory"), -1);
    if (rc == 0 && ps->n_read == 0) rc = (snprintf(why, len, "%s: no prompts (an empty file)", name), -1);
    if (rc == 0 && ps->n == 0)
        rc = (snprintf(why, len, "%s: none of its %d prompts fits in %d tokens (the shortest has %d)", name,
                       ps->n_read, ps->max_prompt, b.shortest_dropped), -1);
    if (rc) dataset_free(ps);
    return rc;
}

void dataset_free(PromptSet *ps) {
    for (int i = 0; i < ps->n; i++) {
        free(ps->answer[i]);
        free(ps->metadata[i]);
    }
    free(ps->off);
    free(ps->ids);
    free(ps->line);
    free(ps->answer);
    free(ps->metadata);
    memset(ps, 0, sizeof *ps);
}

const int *dataset_ids(const PromptSet *ps, int i, int *n_ids) {
    *n_ids = (int)(ps->off[i + 1] - ps->off[i]);
    return ps->ids + ps->off[i];
}

int dataset_keep_first(PromptSet *ps, int n) {
    if (n < 1) return -1;
    if (n >= ps->n) return 0;
    for (int i = n; i < ps->n; i++) {
        free(ps->answer[i]);
        free(ps->metadata[i]);
    }
    ps->n = n;
    ps->longest = 0;
    for (int i = 0; i < n; i++) {
        int k = (int)(ps->off[i + 1] - ps->off[i]);
        if (k > ps->longest) ps->longest = k;
    }
    return 0;
}
