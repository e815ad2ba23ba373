/* tok.c — bin/nereus-tok: text to token ids and back with a model's own
 * tokenizer (text.h), one line at a time, for tests and for looking.
 *
 *   nereus-tok encode [--chat [--system TEXT]] MODEL < lines of JSON strings
 *   nereus-tok decode MODEL < lines of space-separated ids
 *   nereus-tok write MODEL DIR   MODEL's tokenizer as a Hugging Face tokenizer directory
 *
 * encode prints each string's ids space-separated, one line each (bos first
 * where the tokenizer's add_bos says so, except under --chat, whose template
 * writes its own); --chat formats each line as a user message with the
 * model's chat template first, and a line may then also be an object
 * {"system": TEXT or null, "user": TEXT}. decode prints one JSON string a
 * line. Bad input exits 2 naming the line; a bad MODEL exits 2 naming the
 * file and key. */
#include <cjson/cJSON.h>

#include "tok_tool.h"

#include <errno.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
    fputs("usage: nereus-tok encode [--chat [--system TEXT]] MODEL   JSON strings in, ids out (one line each)\n"
          "       nereus-tok decode MODEL                            ids in, JSON strings out\n"
          "       nereus-tok write MODEL DIR                         MODEL's tokenizer as DIR/tokenizer.json and\n"
          "                                                          tokenizer_config.json (Hugging Face's form)\n"
          "MODEL: a Hugging Face model directory (tokenizer.json, tokenizer_config.json), a tokenizer.json, a GGUF\n"
          "       file or a checkpoint with a tokenizer (nereus-ckpt import-gguf)\n"
          "--chat: each line is the user message of a chat (or {\"system\": ..., \"user\": ...}), formatted with\n"
          "        the model's chat template and the generation prompt; --system TEXT: its system prompt\n"
          "exit: 0 ok, 2 a bad command line, tokenizer, template or input line (one line on stderr naming it)\n"
          "see also: bin/nereus-ckpt import-gguf (a checkpoint with its tokenizer), bin/nereus; docs/TEXT.md\n", f);
}

typedef struct {
    const Tokenizer *tk;
    Chat chat;
    int use_chat;
    const char *system;
} Encoder;

/* the user (and system) text of one --chat line: a JSON string, or {"system", "user"} */
static int chat_parts(const cJSON *v, const char *dflt_system, const char **user, const char **system) {
    *system = dflt_system;
    if (cJSON_IsString(v)) { *user = v->valuestring; return 0; }
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(v, "user"), *s = cJSON_GetObjectItemCaseSensitive(v, "system");
    if (!cJSON_IsObject(v) || !cJSON_IsString(u) || (s && !cJSON_IsString(s) && !cJSON_IsNull(s))) return -1;
    *user = u->valuestring;
    if (cJSON_IsString(s)) *system = s->valuestring;
    return 0;
}

static int print_ids(const TokIds *ids) {
    for (size_t i = 0; i < ids->n; i++) printf(i ? " %d" : "%d", ids->ids[i]);
    putchar('\n');
    return 0;
}

/* one input line to its ids; the message in why names what is wrong with it */
static int encode_line(const Encoder *e, const char *line, size_t n, TokIds *ids, char *why, size_t len) {
    cJSON *v = cJSON_ParseWithLength(line, n);
    const char *user = NULL, *system = NULL;
    int rc = -1;
    if (e->use_chat ? !v || chat_parts(v, e->system, &user, &system)
                    : !cJSON_IsString(v)) {
        snprintf(why, len, e->use_chat ? "not a JSON string or {\"system\", \"user\"} object" : "not a JSON string");
    } else if (!e->use_chat) {
        if (tok_add_bos(e->tk)) tokids_push(ids, tok_bos(e->tk));
        rc = tok_encode(e->tk, v->valuestring, strlen(v->valuestring), ids, why, len);
    } else {
        char *text = chat_format(&e->chat, system, user);
        rc = text ? tok_encode(e->tk, text, strlen(text), ids, why, len) : -1;
        if (!text) snprintf(why, len, "out of memory");
        free(text);
    }
    cJSON_Delete(v);
    return rc;
}

/* one line of ids to its text */
static int decode_line(const Tokenizer *tk, char *line, TokIds *ids, char *why, size_t len) {
    for (char *p = line, *end;; p = end) {
        while (*p == ' ' || *p == '\t') p++;
        if (!*p || *p == '\n') break;
        errno = 0;
        long id = strtol(p, &end, 10);
        if (end == p || errno || id < 0 || id > 0x7fffffff || (*end && *end != ' ' && *end != '\t' && *end != '\n')) {
            snprintf(why, len, "'%.*s' is not a token id", (int)strcspn(p, " \t\n"), p);
            return -1;
        }
        tokids_push(ids, (int)id);
    }
    char *text; size_t n;
    if (tok_decode(tk, ids->ids, ids->n, &text, &n, why, len)) return -1;
    json_write_string(stdout, text, n);
    putchar('\n');
    free(text);
    return 0;
}

static int run(int decode, const Encoder *e) {
    char *line = NULL, why[512];
    size_t cap = 0;
    ssize_t n;
    long lineno = 0;
    int rc = 0;
    TokIds ids = {0};
    while (rc == 0 && (n = getline(&line, &cap, stdin)) >= 0) {
        lineno++;
        ids.n = 0;
        why[0] = 0;
        rc = decode ? decode_line(e->tk, line, &ids, why, sizeof why)
                    : encode_line(e, line, (size_t)n, &ids, why, sizeof why) || print_ids(&ids);
        if (rc) fprintf(stderr, "nereus-tok: error: <stdin>:%ld: %s\n", lineno, why);
    }
    free(line);
    tokids_free(&ids);
    return rc ? 2 : 0;
}

/* nereus-tok write MODEL DIR: MODEL's tokenizer as a Hugging Face tokenizer directory (what export-hf writes
 * beside a checkpoint's weights); exit 0, or 2 naming what is wrong */
static int write_model(const char *model, const char *dir, int bad_flag) {
    if (!model || !dir || bad_flag) {
        fprintf(stderr, "nereus-tok: error: bad command line\n");
        usage(stderr);
        return 2;
    }
    char why[512];
    TokSpec spec;
    if (tok_read_model(model, &spec, why, sizeof why)) { fprintf(stderr, "nereus-tok: error: %s\n", why); return 2; }
    int rc = 0;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "nereus-tok: error: %s: cannot create the directory: %s\n", dir, strerror(errno));
        rc = 2;
    } else if (tok_write_hf(dir, &spec, why, sizeof why)) {
        fprintf(stderr, "nereus-tok: error: %s: %s\n", model, why);
        rc = 2;
    } else {
        printf("wrote %s/tokenizer.json and %s/tokenizer_config.json (%d tokens, pre %s)\n", dir, dir, spec.n_vocab,
               spec.pre);
    }
    tokspec_free(&spec);
    return rc;
}

int main(int argc, char **argv) {
    Encoder e = {0};
    const char *cmd = NULL, *model = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { usage(stdout); return 0; }
        else if (!strcmp(argv[i], "--chat")) e.use_chat = 1;
        else if (!strcmp(argv[i], "--system") && i + 1 < argc) e.system = argv[++i];
        else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "nereus-tok: error: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
        else if (!cmd) cmd = argv[i];
        else if (!model) model = argv[i];
        else if (!strcmp(cmd, "write") && !out) out = argv[i];
        else { fprintf(stderr, "nereus-tok: error: one MODEL only ('%s')\n", argv[i]); return 2; }
    }
    if (cmd && !strcmp(cmd, "write")) return write_model(model, out, e.use_chat || e.system);
    int decode = cmd && !strcmp(cmd, "decode");
    int chat_ok = e.use_chat ? !decode : !e.system; /* --chat with encode only, --system with --chat only */
    if (!cmd || !model || (!decode && strcmp(cmd, "encode")) || !chat_ok) {
        fprintf(stderr, "nereus-tok: error: bad command line\n");
        usage(stderr);
        return 2;
    }
    char why[512];
    TokSpec spec;
    Tokenizer *tk = NULL;
    int rc = 2;
    if (tok_read_model(model, &spec, why, sizeof why)) { fprintf(stderr, "nereus-tok: error: %s\n", why); return 2; }
    if (e.use_chat && !spec.chat_template) snprintf(why, sizeof why, "--chat: the tokenizer has no chat template");
    if ((e.use_chat && !spec.chat_template) || tok_build(&tk, &spec, why, sizeof why) ||
        (e.use_chat && chat_build(&e.chat, spec.chat_template, tk, why, sizeof why)))
        fprintf(stderr, "nereus-tok: error: %s: %s\n", model, why);
    else { e.tk = tk; rc = run(decode, &e); }
    chat_free(&e.chat);
    tok_free(tk);
    tokspec_free(&spec);
    return rc;
}
