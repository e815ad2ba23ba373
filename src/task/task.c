/* task.c — the verifiable tasks (see task.h) and llm.c token-file I/O. */
#include "nereus/task.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nereus/util.h"

static const char *kind_names[TASK_NKINDS] = {"reverse", "sort", "add"};

const char *task_kind_name(int kind) { return kind >= 0 && kind < TASK_NKINDS ? kind_names[kind] : "?"; }

int task_parse(TaskSet *ts, const char *names, int digits, uint64_t seed, char *why, size_t why_len) {
    memset(ts, 0, sizeof *ts);
    ts->digits = digits;
    ts->seed = seed;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", names);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ') tok++;
        char *end = tok + strlen(tok);
        while (end > tok && end[-1] == ' ') *--end = 0;
        int k = -1;
        for (int i = 0; i < TASK_NKINDS; i++)
            if (strcmp(tok, kind_names[i]) == 0) k = i;
        if (k < 0) {
            snprintf(why, why_len, "unknown task '%s' (known: reverse, sort, add)", tok);
            return -1;
        }
        for (int i = 0; i < ts->nkinds; i++)
            if (ts->kinds[i] == k) {
                snprintf(why, why_len, "task '%s' listed twice", tok);
                return -1;
            }
        ts->kinds[ts->nkinds++] = k;
        if (k == TASK_ADD && digits < 2) {
            snprintf(why, why_len, "task 'add' needs digits >= 2 (two operands), got %d", digits);
            return -1;
        }
    }
    if (ts->nkinds == 0) {
        snprintf(why, why_len, "no task given");
        return -1;
    }
    return 0;
}

int task_prompt_len(const TaskSet *ts) { return ts->text ? task_text_longest(ts) : ts->digits + 2; }

int task_max_answer(const TaskSet *ts) {
    if (ts->text) return 0;
    int n = ts->digits, m = 0;
    for (int i = 0; i < ts->nkinds; i++) {
        int a = ts->kinds[i] == TASK_ADD ? (n - n / 2) + 1 : n; /* sum has at most one more digit */
        if (a > m) m = a;
    }
    return m;
}

int task_make(const TaskSet *ts, uint64_t g, int *prompt, int *answer, int *answer_len) {
    int n = ts->digits;
    int kind = ts->kinds[rng_below(ts->seed, RNG_PROMPT, g, 0, ts->nkinds)];
    int d[32];
    for (int i = 0; i < n; i++) d[i] = rng_below(ts->seed, RNG_PROMPT, g, (uint64_t)i + 1, 10);
    if (kind == TASK_ADD) {
        int na = n / 2, nb = n - na;
        long a = 0, b = 0;
        for (int i = 0; i < na; i++) { prompt[i] = d[i]; a = a * 10 + d[i]; }
        prompt[na] = TOK_PLUS;
        for (int i = 0; i < nb; i++) { prompt[na + 1 + i] = d[na + i]; b = b * 10 + d[na + i]; }
        prompt[n + 1] = TOK_EQ;
        char s[40];
        int len = snprintf(s, sizeof s, "%ld", a + b);
        for (int i = 0; i < len; i++) answer[i] = s[i] - '0';
        *answer_len = len;
    } else {
        prompt[0] = kind == TASK_REVERSE ? TOK_REV : TOK_SORT;
        for (int i = 0; i < n; i++) prompt[1 + i] = d[i];
        prompt[n + 1] = TOK_EQ;
        if (kind == TASK_REVERSE) {
            for (int i = 0; i < n; i++) answer[i] = d[n - 1 - i];
        } else {
            int cnt[10] = {0}, k = 0;
            for (int i = 0; i < n; i++) cnt[d[i]]++;
            for (int v = 0; v < 10; v++)
                for (int c = 0; c < cnt[v]; c++) answer[k++] = v;
        }
        *answer_len = n;
    }
    return kind;
}

/* The positions a response is scored over: max(its digits before EOS, the answer's digits); *rl gets the
   digits before EOS. */
static int reward_positions(int answer_len, const int *response, int len, int *rl) {
    int n = 0;
    while (n < len && response[n] != TOK_EOS) n++;
    *rl = n;
    return n > answer_len ? n : answer_len;
}

float task_reward(const int *answer, int answer_len, const int *response, int len) {
    int rl, denom = reward_positions(answer_len, response, len, &rl);
    if (denom == 0) return 1.0f;
    int hit = 0;
    for (int i = 0; i < rl && i < answer_len; i++) hit += response[i] == answer[i];
    return (float)hit / (float)denom;
}

int task_reward_steps(const int *answer, int answer_len, const int *response, int len, float *credit) {
    /* task_reward's hit / denom, one 1 / denom per position that scores, each position a step; the credits
       sum to task_reward (up to float rounding) */
    int rl, denom = reward_positions(answer_len, response, len, &rl);
    for (int j = 0; j < denom; j++)
        credit[j] = j < rl && j < answer_len && response[j] == answer[j] ? 1.0f / (float)denom : 0.0f;
    return denom;
}

void task_detok(const int *tok, int n, char *buf) {
    static const char sym[TASK_VOCAB] = {'0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '+', '=', 'R', 'S', '$'};
    for (int i = 0; i < n; i++) buf[i] = tok[i] >= 0 && tok[i] < TASK_VOCAB ? sym[tok[i]] : '?';
    buf[n] = 0;
}

/* ---- llm.c token files -------------------------------------------------- */

/* Bytes per token of a header's version: 2 (version 1), 4 (version 2), 0 (unknown). */
static size_t tokens_width(int32_t version) {
    return version == 1 ? 2 : version == 2 ? 4 : 0;
}

/* Magic, version and count; the token width of the version in *width. */
static int tokens_check_header(const int32_t *hdr, const char *path, size_t *width, char *why, size_t why_len) {
    if (hdr[0] != TOKENS_MAGIC) {
        snprintf(why, why_len, "%s: bad magic %d (an llm.c token file has %d)", path, hdr[0], TOKENS_MAGIC);
        return -1;
    }
    *width = tokens_width(hdr[1]);
    if (*width == 0) {
        snprintf(why, why_len, "%s: unsupported token file version %d (1: uint16 tokens, 2: uint32 tokens)", path,
                 hdr[1]);
        return -1;
    }
    if (hdr[2] < 2) {
        snprintf(why, why_len, "%s: header says %d tokens; need at least 2", path, hdr[2]);
        return -1;
    }
    return 0;
}

/* The size before the allocation: a damaged header must not ask for gigabytes. A regular file must hold
   exactly the header's count at the version's width, as llm.c's own loader asks: bytes past it mean the
   count is damaged or the file is not one shard, and reading the count alone would train on part of it
   without a word. */
static int tokens_check_size(FILE *f, const char *path, size_t count, size_t width, char *why, size_t why_len) {
    struct stat sb;
    double want = 1024.0 + (double)width * (double)count;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode) || (double)sb.st_size == want) return 0;
    long long held = sb.st_size > 1024 ? (long long)(sb.st_size - 1024) / (long long)width : 0LL;
    long long extra = sb.st_size > 1024 ? (long long)(sb.st_size - 1024) % (long long)width : 0LL;
    if ((double)sb.st_size < want)
        snprintf(why, why_len, "%s: header says %zu tokens but the file holds %lld (truncated?)", path, count, held);
    else
        snprintf(why, why_len, "%s: header says %zu tokens but the file is %lld bytes, room for %lld%s (a damaged "
                 "header, or not one llm.c token file?)", path, count, (long long)sb.st_size, held,
                 extra == 1 ? " and a byte" : extra > 1 ? " and some bytes" : "");
    return -1;
}

/* Version-1 tokens, widened to uint32 chunk by chunk; the count of tokens read. */
static size_t tokens_read_narrow(uint32_t *out, size_t count, FILE *f) {
    uint16_t chunk[4096];
    size_t got = 0;
    while (got < count) {
        size_t want = count - got < 4096 ? count - got : 4096, k = fread(chunk, sizeof(uint16_t), want, f);
        for (size_t j = 0; j < k; j++) out[got + j] = chunk[j];
        got += k;
        if (k < want) break;
    }
    return got;
}

/* The tokens at the file's width, as uint32 in tf->tokens; ids above INT32_MAX refused. */
static int tokens_read_body(TokenFile *tf, FILE *f, const char *path, size_t width, char *why, size_t why_len) {
    tf->tokens = nr_xmalloc(tf->count * sizeof(uint32_t));
    size_t got = width == 2 ? tokens_read_narrow(tf->tokens, tf->count, f)
                            : fread(tf->tokens, sizeof(uint32_t), tf->count, f);
    if (got != tf->count) {
        snprintf(why, why_len, "%s: header says %zu tokens but the file holds %zu (truncated?)", path, tf->count, got);
        return -1;
    }
    for (size_t i = 0; i < tf->count; i++) {
        if (tf->tokens[i] > (uint32_t)INT32_MAX) {
            snprintf(why, why_len, "%s: token %zu is %" PRIu32 ", above the largest id 2147483647", path, i,
                     tf->tokens[i]);
            return -1;
        }
        if ((int)tf->tokens[i] > tf->max_token) tf->max_token = (int)tf->tokens[i];
    }
    return 0;
}

int tokens_read(TokenFile *tf, const char *path, char *why, size_t why_len) {
    memset(tf, 0, sizeof *tf);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, why_len, "%s: cannot open token file: %s", path, strerror(errno));
        return -1;
    }
    int32_t hdr[256];
    size_t width = 0;
    int rc = -1;
    if (fread(hdr, sizeof(int32_t), 256, f) != 256)
        snprintf(why, why_len, "%s: too short for an llm.c token file (256-int32 header)", path);
    else if (tokens_check_header(hdr, path, &width, why, why_len) == 0 &&
             tokens_check_size(f, path, (size_t)hdr[2], width, why, why_len) == 0) {
        tf->count = (size_t)hdr[2];
        tf->version = hdr[1];
        rc = tokens_read_body(tf, f, path, width, why, why_len);
    }
    fclose(f);
    if (rc) tokens_free(tf);
    return rc;
}

/* Version 1 when every id fits in uint16, else version 2; -1 when an id is above INT32_MAX. */
static int tokens_version_for(const uint32_t *tokens, size_t count) {
    int version = 1;
    for (size_t i = 0; i < count; i++) {
        if (tokens[i] > (uint32_t)INT32_MAX) return -1;
        if (tokens[i] > UINT16_MAX) version = 2;
    }
    return version;
}

/* The tokens at the version's width. */
static int tokens_write_body(FILE *f, const uint32_t *tokens, size_t count, int version) {
    if (version == 2) return fwrite(tokens, sizeof(uint32_t), count, f) == count;
    uint16_t chunk[4096];
    for (size_t i = 0; i < count;) {
        size_t k = count - i < 4096 ? count - i : 4096;
        for (size_t j = 0; j < k; j++) chunk[j] = (uint16_t)tokens[i + j];
        if (fwrite(chunk, sizeof(uint16_t), k, f) != k) return 0;
        i += k;
    }
    return 1;
}

int tokens_write(const char *path, const uint32_t *tokens, size_t count, char *why, size_t why_len) {
    int version = tokens_version_for(tokens, count);
    if (version < 0 || count > (size_t)INT32_MAX) {
        snprintf(why, why_len, "%s: %s", path, version < 0 ? "a token id is above 2147483647"
                                                           : "more than 2147483647 tokens for one header");
        return -1;
    }
    FILE *f = fopen(path, "wb");
    if (!f) {
        snprintf(why, why_len, "%s: cannot create: %s", path, strerror(errno));
        return -1;
    }
    int32_t hdr[256] = {TOKENS_MAGIC, version, (int32_t)count};
    int ok = fwrite(hdr, sizeof hdr, 1, f) == 1 && tokens_write_body(f, tokens, count, version);
    ok = (fclose(f) == 0) && ok;
    if (!ok) snprintf(why, why_len, "%s: write failed: %s", path, strerror(errno));
    return ok ? 0 : -1;
}

void tokens_free(TokenFile *tf) {
    free(tf->tokens);
    memset(tf, 0, sizeof *tf);
}
