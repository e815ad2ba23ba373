/* task.c — the verifiable tasks (see task.h) and llm.c token-file I/O. */
#include "nereus/task.h"

#include <errno.h>
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

int task_prompt_len(const TaskSet *ts) { return ts->digits + 2; }

int task_max_answer(const TaskSet *ts) {
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

float task_reward(const int *answer, int answer_len, const int *response, int len) {
    int rl = 0;
    while (rl < len && response[rl] != TOK_EOS) rl++;
    int denom = rl > answer_len ? rl : answer_len;
    if (denom == 0) return 1.0f;
    int hit = 0;
    for (int i = 0; i < rl && i < answer_len; i++) hit += response[i] == answer[i];
    return (float)hit / (float)denom;
}

void task_detok(const int *tok, int n, char *buf) {
    static const char sym[TASK_VOCAB] = {'0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '+', '=', 'R', 'S', '$'};
    for (int i = 0; i < n; i++) buf[i] = tok[i] >= 0 && tok[i] < TASK_VOCAB ? sym[tok[i]] : '?';
    buf[n] = 0;
}

/* ---- llm.c token files -------------------------------------------------- */

int tokens_read(TokenFile *tf, const char *path, char *why, size_t why_len) {
    memset(tf, 0, sizeof *tf);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, why_len, "%s: cannot open token file: %s", path, strerror(errno));
        return -1;
    }
    int32_t hdr[256];
    if (fread(hdr, sizeof(int32_t), 256, f) != 256) {
        snprintf(why, why_len, "%s: too short for an llm.c token file (256-int32 header)", path);
        fclose(f);
        return -1;
    }
    if (hdr[0] != 20240520) {
        snprintf(why, why_len, "%s: bad magic %d (an llm.c token file has 20240520)", path, hdr[0]);
        fclose(f);
        return -1;
    }
    if (hdr[1] != 1) {
        snprintf(why, why_len, "%s: unsupported token file version %d (expected 1)", path, hdr[1]);
        fclose(f);
        return -1;
    }
    if (hdr[2] < 2) {
        snprintf(why, why_len, "%s: header says %d tokens; need at least 2", path, hdr[2]);
        fclose(f);
        return -1;
    }
    tf->count = (size_t)hdr[2];
    /* The size before the allocation: a damaged header must not ask for gigabytes. A regular file must hold
       exactly the header's count, as llm.c's own loader asks: bytes past it mean the count is damaged or
       the file is not one shard, and reading the count alone would train on part of it without a word. */
    struct stat sb;
    double want = 1024.0 + 2.0 * (double)tf->count;
    if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && (double)sb.st_size != want) {
        long long held = sb.st_size > 1024 ? (long long)(sb.st_size - 1024) / 2 : 0LL;
        if ((double)sb.st_size < want)
            snprintf(why, why_len, "%s: header says %zu tokens but the file holds %lld (truncated?)", path, tf->count, held);
        else
            snprintf(why, why_len, "%s: header says %zu tokens but the file is %lld bytes, room for %lld%s (a damaged "
                     "header, or not one llm.c token file?)", path, tf->count, (long long)sb.st_size, held,
                     (sb.st_size - 1024) % 2 ? " and a byte" : "");
        fclose(f);
        tf->count = 0;
        return -1;
    }
    tf->tokens = nr_xmalloc(tf->count * sizeof(uint16_t));
    size_t got = fread(tf->tokens, sizeof(uint16_t), tf->count, f);
    fclose(f);
    if (got != tf->count) {
        snprintf(why, why_len, "%s: header says %zu tokens but the file holds %zu (truncated?)", path, tf->count, got);
        tokens_free(tf);
        return -1;
    }
    for (size_t i = 0; i < tf->count; i++)
        if (tf->tokens[i] > tf->max_token) tf->max_token = tf->tokens[i];
    return 0;
}

int tokens_write(const char *path, const uint16_t *tokens, size_t count, char *why, size_t why_len) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        snprintf(why, why_len, "%s: cannot create: %s", path, strerror(errno));
        return -1;
    }
    int32_t hdr[256] = {20240520, 1, (int32_t)count};
    int ok = fwrite(hdr, sizeof hdr, 1, f) == 1 && fwrite(tokens, sizeof(uint16_t), count, f) == count;
    ok = (fclose(f) == 0) && ok;
    if (!ok) snprintf(why, why_len, "%s: write failed: %s", path, strerror(errno));
    return ok ? 0 : -1;
}

void tokens_free(TokenFile *tf) {
    free(tf->tokens);
    memset(tf, 0, sizeof *tf);
}
