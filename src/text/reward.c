/* reward.c — the text reward's entry points (reward_text.h): rule and
 * task names, extraction by rule, the score of a response (the task's own
 * scorer or numeric equivalence, plus the format reward) and a one-line
 * explanation of it for traces. */
#include "nereus/reward_text.h"
#include "reward_int.h"

#include <stdio.h>
#include <string.h>

static const char *const rule_names[] = {"answer-tag", "gsm8k", "boxed", "last-number"};
static const char *const task_names[] = {"none", "basic_arithmetic", "chain_sum", "leg_counting",
                                         "number_sorting"};
enum { N_RULES = sizeof rule_names / sizeof *rule_names, N_TASKS = sizeof task_names / sizeof *task_names };

const char *reward_rule_name(RewardRule rule) { return (unsigned)rule < N_RULES ? rule_names[rule] : "?"; }
const char *reward_task_name(RewardTask task) { return (unsigned)task < N_TASKS ? task_names[task] : "?"; }

int reward_rule_parse(const char *name, RewardRule *rule, char *why, size_t whylen) {
    for (int i = 0; i < N_RULES; i++)
        if (strcmp(name, rule_names[i]) == 0) { *rule = (RewardRule)i; return 0; }
    snprintf(why, whylen, "unknown reward rule '%s' (answer-tag, gsm8k, boxed, last-number)", name);
    return -1;
}

int reward_task_parse(const char *name, RewardTask *task, char *why, size_t whylen) {
    for (int i = 1; i < N_TASKS; i++)
        if (strcmp(name, task_names[i]) == 0) { *task = (RewardTask)i; return 0; }
    snprintf(why, whylen, "unknown task '%s' (basic_arithmetic, chain_sum, leg_counting, number_sorting)", name);
    return -1;
}

int reward_extract(RewardRule rule, const char *text, size_t *start, size_t *len) {
    switch (rule) {
    case REWARD_ANSWER_TAG: return reward_extract_answer_tag(text, start, len);
    case REWARD_GSM8K: return reward_extract_gsm8k(text, start, len);
    case REWARD_BOXED: return reward_extract_boxed(text, start, len);
    case REWARD_LAST_NUMBER: return reward_extract_last_number(text, start, len);
    }
    return 0;
}

/* numeric equivalence with the reference; a GSM8K reference given whole ("... #### 72") gives its N */
static double score_numeric(RewardRule rule, const char *ans, size_t alen, const char *ref) {
    size_t rs = 0, rl = strlen(ref);
    if (rule == REWARD_GSM8K && strstr(ref, "####")) reward_extract_gsm8k(ref, &rs, &rl);
    return reward_answers_equal(ans, alen, ref + rs, rl) ? 1.0 : 0.0;
}

int reward_score(const RewardSpec *spec, const char *response, const RewardRef *ref, RewardResult *res,
                 char *why, size_t whylen) {
    memset(res, 0, sizeof *res);
    if (!ref->answer) { snprintf(why, whylen, "no reference answer"); return -1; }
    if (spec->task == REWARD_TASK_NUMBER_SORTING && !ref->direction) {
        snprintf(why, whylen, "number_sorting needs metadata.direction");
        return -1;
    }
    res->found = reward_extract(spec->rule, response, &res->ans_start, &res->ans_len);
    const char *ans = res->found ? response + res->ans_start : NULL;
    size_t n = res->ans_len;
    switch (spec->task) {
    case REWARD_TASK_NONE: res->value = ans ? score_numeric(spec->rule, ans, n, ref->answer) : 0.0; break;
    case REWARD_TASK_BASIC_ARITHMETIC:
    case REWARD_TASK_LEG_COUNTING: res->value = rg_score_default(ans, n, ref->answer); break;
    case REWARD_TASK_CHAIN_SUM: res->value = rg_score_decimal(ans, n, ref->answer); break;
    case REWARD_TASK_NUMBER_SORTING:
        res->value = rg_score_number_sorting(ans, n, ref->answer, strcmp(ref->direction, "ascending") != 0);
        break;
    }
    res->format_ok = res->found && n > 0;
    res->score = res->value + (res->format_ok ? spec->format_reward : 0.0);
    return 0;
}

/* s[0..n) quoted into out, newlines and quotes escaped, cut at about max bytes with "..." */
static void quote(char *out, size_t outlen, const char *s, size_t n, size_t max) {
    size_t o = 0;
    if (outlen < 8) { if (outlen) out[0] = 0; return; }
    out[o++] = '"';
    for (size_t i = 0; i < n && o + 6 < outlen; i++) {
        if (i == max) { memcpy(out + o, "...", 3); o += 3; break; }
        char c = s[i];
        if (c == '\n' || c == '"' || c == '\\') { out[o++] = '\\'; c = c == '\n' ? 'n' : c; }
        out[o++] = c;
    }
    out[o++] = '"';
    out[o] = 0;
}

void reward_explain(const RewardSpec *spec, const char *response, const RewardRef *ref,
                    const RewardResult *res, char *out, size_t outlen) {
    char got[160], want[160];
    if (res->found) quote(got, sizeof got, response + res->ans_start, res->ans_len, 120);
    else snprintf(got, sizeof got, "nothing");
    quote(want, sizeof want, ref->answer ? ref->answer : "", ref->answer ? strlen(ref->answer) : 0, 120);
    snprintf(out, outlen, "%s%s%s: extracted %s, reference %s: value %.4g, format %s (+%g): score %.4g",
             reward_rule_name(spec->rule), spec->task ? " " : "", spec->task ? reward_task_name(spec->task) : "",
             got, want, res->value, res->format_ok ? "ok" : "wrong", res->format_ok ? spec->format_reward : 0.0,
             res->score);
}
