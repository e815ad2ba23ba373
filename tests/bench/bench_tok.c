/* bench_tok.c — `make bench`, tokenizer part: encode throughput of the C
 * tokenizer on the committed corpus (tests/text/data/corpus.jsonl), one
 * thread, for each reference tokenizer; the strings are parsed first, so
 * only tok_encode is timed (best of 5 passes over the whole corpus). Every
 * run also checks the ids against the committed HF ids and says so.
 * tests/bench/bench_tok_hf.py times HF tokenizers the same way.
 * argv: OUT (bench.txt to append to, or - for none), DATA (tests/text/data), NAME... */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_args.h"
#include "nereus/text.h"
#include "nereus/util.h"

typedef struct { char **s; size_t *n; int count; size_t bytes; } Corpus;

static Corpus read_corpus(const char *path) {
    Corpus c = {0};
    FILE *f = fopen(path, "r");
    if (!f) nr_fatal("cannot read %s", path);
    char *line = NULL; size_t cap = 0; ssize_t k;
    while ((k = getline(&line, &cap, f)) >= 0) {
        cJSON *v = cJSON_ParseWithLength(line, (size_t)k);
        if (!cJSON_IsString(v)) nr_fatal("%s:%d: not a JSON string", path, c.count + 1);
        c.s = realloc(c.s, (size_t)(c.count + 1) * sizeof *c.s);
        c.n = realloc(c.n, (size_t)(c.count + 1) * sizeof *c.n);
        c.s[c.count] = strdup(v->valuestring);
        c.n[c.count] = strlen(v->valuestring);
        c.bytes += c.n[c.count++];
        cJSON_Delete(v);
    }
    free(line);
    fclose(f);
    return c;
}

/* 1 where every string's ids equal the line of the reference file */
static int ids_match(const Tokenizer *tk, const Corpus *c, const char *ref_path) {
    FILE *f = fopen(ref_path, "r");
    if (!f) return 0;
    char *line = NULL, why[256], buf[32]; size_t cap = 0;
    int ok = 1;
    TokIds ids = {0};
    for (int i = 0; ok && i < c->count; i++) {
        ids.n = 0;
        if (getline(&line, &cap, f) < 0 || tok_encode(tk, c->s[i], c->n[i], &ids, why, sizeof why)) { ok = 0; break; }
        size_t at = 0;
        for (size_t j = 0; ok && j < ids.n; j++) {
            int k = snprintf(buf, sizeof buf, j ? " %d" : "%d", ids.ids[j]);
            ok = strncmp(line + at, buf, (size_t)k) == 0;
            at += (size_t)k;
        }
        ok = ok && (line[at] == '\n' || line[at] == 0);
    }
    tokids_free(&ids);
    free(line);
    fclose(f);
    return ok;
}

static double encode_all(const Tokenizer *tk, const Corpus *c, TokIds *ids) {
    char why[256];
    double t0 = nr_now();
    for (int i = 0; i < c->count; i++) {
        ids->n = 0;
        if (tok_encode(tk, c->s[i], c->n[i], ids, why, sizeof why)) nr_fatal("encode: %s", why);
    }
    return nr_now() - t0;
}

static const char usage[] =
    "usage: build/bench/bench_tok OUT|- DATA NAME...\n"
    "  encode throughput of the tokenizers DATA/NAME; appends metric: value lines to OUT (- for none).\n"
    "  Exit: 0, 2 bad command line.\n";

int main(int argc, char **argv) {
    int arc = bench_args(argc, argv, usage, 1);
    if (arc >= 0) return arc;
    if (argc < 4) { fprintf(stderr, "%s", usage); return 2; }
    char path[4096], why[512];
    snprintf(path, sizeof path, "%s/corpus.jsonl", argv[2]);
    Corpus c = read_corpus(path);
    FILE *out = strcmp(argv[1], "-") ? fopen(argv[1], "a") : NULL;
    printf("== tokenizer encode, 1 thread, %d strings, %.2f MB (best of 5)\n", c.count, c.bytes / 1e6);
    for (int a = 3; a < argc; a++) {
        TokSpec spec; Tokenizer *tk;
        snprintf(path, sizeof path, "%s/%s", argv[2], argv[a]);
        if (tok_read_hf(path, &spec, why, sizeof why) || tok_build(&tk, &spec, why, sizeof why)) nr_fatal("%s", why);
        TokIds ids = {0};
        double best = 1e30;
        for (int r = 0; r < 5; r++) { double t = encode_all(tk, &c, &ids); if (t < best) best = t; }
        snprintf(path, sizeof path, "%s/%s.ids", argv[2], argv[a]);
        int ok = ids_match(tk, &c, path);
        printf("  %-8s %9.0f strings/s  %6.2f MB/s  ids %s\n", argv[a], c.count / best, c.bytes / best / 1e6,
               ok ? "equal to HF's" : "DIFFER from HF's");
        if (out) fprintf(out, "tok.%s.strings_per_s: %.0f\ntok.%s.mb_per_s: %.3f\ntok.%s.ids_ok: %d\n",
                         argv[a], c.count / best, argv[a], c.bytes / best / 1e6, argv[a], ok);
        tokids_free(&ids);
        tok_free(tk);
        tokspec_free(&spec);
    }
    if (out) fclose(out);
    return 0;
}
