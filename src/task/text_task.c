/* text_task.c — the text prompts of a [data] deck as a task (task.h):
 * sample g's prompt is the prompt set's entry at the dataset module's seeded
 * order (dataset.h: a pure function of the run's seed and g, so every rank
 * and every restart draws the same one), and a response's reward is its
 * decoded text scored by the [reward] rule against that entry's answer
 * (reward_text.h). */
#include "nereus/task.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/dataset.h"
#include "nereus/text.h"
#include "nereus/util.h"

int task_text_longest(const TaskSet *ts) { return ts->text->ps->longest; }

int task_text_prompt(const TaskSet *ts, uint64_t g, int *prompt, int *item) {
    const PromptSet *ps = ts->text->ps;
    int i = dataset_prompt_of(ps, ts->seed, (int64_t)g), n = 0;
    if (i < 0) nr_fatal("task_text_prompt: no prompt for sample %llu", (unsigned long long)g);
    const int *ids = dataset_ids(ps, i, &n);
    memcpy(prompt, ids, (size_t)n * sizeof(int));
    *item = i;
    return n;
}

/* the response's tokens before its first stop token */
static int text_len(const TextTask *t, const int *response, int len) {
    int n = 0;
    while (n < len && response[n] != t->stop[0] && response[n] != t->stop[1]) n++;
    return n;
}

char *task_text_decode(const TaskSet *ts, const int *response, int len, size_t *n_text) {
    char why[200], *text = NULL;
    int n = text_len(ts->text, response, len);
    if (tok_decode(ts->text->tk, response, (size_t)n, &text, n_text, why, sizeof why) != 0)
        nr_fatal("task_text_decode: %s", why); /* sampled ids are in the vocabulary: decode cannot refuse them */
    return text;
}

int task_text_direction(const struct PromptSet *ps, int item, char *buf, size_t n) {
    cJSON *m = ps->metadata[item] ? cJSON_Parse(ps->metadata[item]) : NULL;
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(m, "direction");
    int ok = cJSON_IsString(d);
    snprintf(buf, n, "%s", ok ? d->valuestring : "");
    cJSON_Delete(m);
    return ok ? 0 : -1;
}

float task_text_reward(const TaskSet *ts, int item, const int *response, int len, RewardResult *out) {
    const TextTask *t = ts->text;
    size_t n_text = 0;
    char *text = task_text_decode(ts, response, len, &n_text), dir[32], why[200];
    RewardRef ref = {t->ps->answer[item], NULL};
    if (t->spec.task == REWARD_TASK_NUMBER_SORTING) { /* run_text_open checked that every entry has one */
        task_text_direction(t->ps, item, dir, sizeof dir);
        ref.direction = dir;
    }
    RewardResult res;
    if (reward_score(&t->spec, text, &ref, &res, why, sizeof why) != 0)
        nr_fatal("task_text_reward: prompt %d (line %d): %s", item, t->ps->line[item], why);
    if (out) *out = res;
    free(text);
    return (float)res.score;
}
