/* score.c — bin/nereus-score: scores responses against reference answers
 * with a text reward rule (reward_text.h), one JSON object a line in, one
 * score a line out:
 *   nereus-score RULE [--task NAME] [--format-reward X] [--explain] < FILE.jsonl
 * Each line is {"response": "...", "answer": "...", "metadata": {...}}
 * (metadata only where the task reads it: number_sorting's "direction").
 * Bad input (a line that is not a JSON object, a missing or non-string
 * key, an unknown rule or task) exits 2 naming the line or key, and
 * nothing is printed: scores are printed only once every line is read. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/reward_text.h"

static const char usage_text[] =
    "usage: nereus-score RULE [--task NAME] [--format-reward X] [--explain] < FILE.jsonl\n"
    "  RULE                answer-tag | gsm8k | boxed | last-number: where the answer is\n"
    "  --task NAME         score as reasoning-gym's task NAME does (basic_arithmetic, chain_sum,\n"
    "                      leg_counting, number_sorting); without it, numeric equivalence\n"
    "  --format-reward X   added where the rule finds a non-empty answer, right or wrong (default 0)\n"
    "  --explain           after each score, a tab and what was extracted\n"
    "Reads JSONL lines {\"response\": ..., \"answer\": ..., \"metadata\": {...}}; prints one score a line.\n";

typedef struct Out { char *buf; size_t len, cap; } Out;

static void out_add(Out *o, const char *s) {
    size_t n = strlen(s);
    if (o->len + n + 1 > o->cap) {
        o->cap = (o->len + n + 1) * 2;
        o->buf = realloc(o->buf, o->cap);
    }
    memcpy(o->buf + o->len, s, n + 1);
    o->len += n;
}

static int fail(long line, const char *msg, const char *key) {
    if (key) fprintf(stderr, "nereus-score: error: line %ld: %s \"%s\"\n", line, msg, key);
    else fprintf(stderr, "nereus-score: error: line %ld: %s\n", line, msg);
    return 2;
}

/* one JSONL line scored into o; 0, or 2 after the message */
static int score_line(const RewardSpec *spec, int explain, const char *text, long line, Out *o) {
    cJSON *j = cJSON_ParseWithOpts(text, NULL, 1);
    if (!j || !cJSON_IsObject(j)) { cJSON_Delete(j); return fail(line, "not a JSON object", NULL); }
    const char *keys[] = {"response", "answer"};
    const char *val[2];
    for (int k = 0; k < 2; k++) {
        cJSON *v = cJSON_GetObjectItemCaseSensitive(j, keys[k]);
        if (!v) { cJSON_Delete(j); return fail(line, "missing key", keys[k]); }
        if (!cJSON_IsString(v)) { cJSON_Delete(j); return fail(line, "not a string:", keys[k]); }
        val[k] = v->valuestring;
    }
    RewardRef ref = {val[1], NULL};
    cJSON *dir = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "metadata"), "direction");
    if (cJSON_IsString(dir)) ref.direction = dir->valuestring;
    if (spec->task == REWARD_TASK_NUMBER_SORTING && !ref.direction) {
        cJSON_Delete(j);
        return fail(line, "number_sorting needs the string key", "metadata.direction");
    }
    RewardResult res;
    char why[256], buf[640];
    if (reward_score(spec, val[0], &ref, &res, why, sizeof why) != 0) { cJSON_Delete(j); return fail(line, why, NULL); }
    snprintf(buf, sizeof buf, "%.17g", res.score);
    out_add(o, buf);
    if (explain) {
        reward_explain(spec, val[0], &ref, &res, buf, sizeof buf);
        out_add(o, "\t");
        out_add(o, buf);
    }
    out_add(o, "\n");
    cJSON_Delete(j);
    return 0;
}

/* the command line into spec; 0, 1 for --help, or 2 after a message */
static int parse_args(int argc, char **argv, RewardSpec *spec, int *explain) {
    char why[256];
    const char *rule = NULL;
    *spec = (RewardSpec){REWARD_ANSWER_TAG, REWARD_TASK_NONE, 0.0};
    *explain = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) return 1;
        if (strcmp(a, "--explain") == 0) { *explain = 1; continue; }
        if ((strcmp(a, "--task") == 0 || strcmp(a, "--format-reward") == 0) && i + 1 >= argc) {
            fprintf(stderr, "nereus-score: error: %s needs a value\n", a);
            return 2;
        }
        if (strcmp(a, "--task") == 0) {
            if (reward_task_parse(argv[++i], &spec->task, why, sizeof why) != 0) {
                fprintf(stderr, "nereus-score: error: --task: %s\n", why);
                return 2;
            }
        } else if (strcmp(a, "--format-reward") == 0) {
            char *end;
            spec->format_reward = strtod(argv[++i], &end);
            if (*argv[i] == 0 || *end != 0) {
                fprintf(stderr, "nereus-score: error: --format-reward needs a number, not '%s'\n", argv[i]);
                return 2;
            }
        } else if (a[0] == '-' || rule) {
            fprintf(stderr, "nereus-score: error: unexpected argument '%s'\n%s", a, usage_text);
            return 2;
        } else rule = a;
    }
    if (!rule) { fprintf(stderr, "nereus-score: error: no RULE\n%s", usage_text); return 2; }
    if (reward_rule_parse(rule, &spec->rule, why, sizeof why) != 0) {
        fprintf(stderr, "nereus-score: error: %s\n", why);
        return 2;
    }
    return 0;
}

int main(int argc, char **argv) {
    RewardSpec spec;
    int explain, rc = parse_args(argc, argv, &spec, &explain);
    if (rc == 1) { fputs(usage_text, stdout); return 0; }
    if (rc) return rc;
    Out o = {NULL, 0, 0};
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    long lineno = 0;
    out_add(&o, "");
    while (rc == 0 && (n = getline(&line, &cap, stdin)) != -1) {
        lineno++;
        if (n > 0 && line[n - 1] == '\n') line[--n] = 0;
        if (n > 0 && line[n - 1] == '\r') line[--n] = 0;
        if ((size_t)n != strlen(line)) rc = fail(lineno, "a NUL byte in the line", NULL);
        else rc = score_line(&spec, explain, line, lineno, &o);
    }
    if (rc == 0) fputs(o.buf, stdout);
    free(line);
    free(o.buf);
    return rc;
}
