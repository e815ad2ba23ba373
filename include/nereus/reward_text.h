/* reward_text.h — rewards on decoded text: a rule finds the answer in a
 * response (`answer-tag`, `gsm8k`, `boxed`, `last-number`) and the answer
 * is scored against a reference, either by numeric equivalence (1,000 =
 * 1000 = 1000.0, -0 = 0, 3/4 = 0.75; other text as trimmed strings) or by a
 * reasoning-gym task's own scorer, reproduced exactly (basic_arithmetic,
 * chain_sum, leg_counting, number_sorting). An optional format reward is
 * added when the rule found a non-empty answer, right or wrong.
 * Pure: no MPI, no I/O; errors are return values with a message. */
#ifndef NEREUS_REWARD_TEXT_H
#define NEREUS_REWARD_TEXT_H

#include <stddef.h>

typedef enum {
    REWARD_ANSWER_TAG,  /* the text inside the last <answer>...</answer> (reasoning-gym's extract_answer) */
    REWARD_GSM8K,       /* the text after the last "####", to the end of its line */
    REWARD_BOXED,       /* the text inside the last \boxed{...}, braces nested */
    REWARD_LAST_NUMBER, /* the last number in the text */
} RewardRule;

typedef enum {
    REWARD_TASK_NONE,             /* numeric equivalence, else trimmed strings */
    REWARD_TASK_BASIC_ARITHMETIC, /* reasoning-gym's default score_answer: equal, or oracle inside answer */
    REWARD_TASK_CHAIN_SUM,        /* utils.compute_decimal_reward: Decimal equality, commas stripped */
    REWARD_TASK_LEG_COUNTING,     /* the default score_answer, as basic_arithmetic */
    REWARD_TASK_NUMBER_SORTING,   /* a JSON list, sorted in metadata.direction, each within 1 of the oracle */
} RewardTask;

typedef struct RewardSpec {
    RewardRule rule;
    RewardTask task;
    double format_reward; /* added when the rule found a non-empty answer (0: none) */
} RewardSpec;

/* What a response is scored against: the entry's answer, and the metadata a task reads. */
typedef struct RewardRef {
    const char *answer;    /* the reference answer (reasoning-gym's entry["answer"]) */
    const char *direction; /* number_sorting's metadata.direction ("ascending"/"descending"); NULL elsewhere */
} RewardRef;

typedef struct RewardResult {
    double score;     /* value, plus format_reward where format_ok */
    double value;     /* the rule's or task's score, in [0, 1] */
    int found;        /* 1: the rule found an answer (reasoning-gym: extract_answer is not None) */
    int format_ok;    /* 1: found and not empty */
    size_t ans_start; /* the extracted answer: bytes [ans_start, ans_start + ans_len) of the response */
    size_t ans_len;
} RewardResult;

/* "answer-tag" | "gsm8k" | "boxed" | "last-number" -> *rule; -1 and a message naming the choices otherwise */
int reward_rule_parse(const char *name, RewardRule *rule, char *why, size_t whylen);
/* a reasoning-gym task name ("chain_sum", ...) -> *task; -1 and a message naming the known ones otherwise */
int reward_task_parse(const char *name, RewardTask *task, char *why, size_t whylen);
const char *reward_rule_name(RewardRule rule);
const char *reward_task_name(RewardTask task);

/* the answer RULE finds in text: 1 and its bytes [*start, *start + *len), or 0 where none */
int reward_extract(RewardRule rule, const char *text, size_t *start, size_t *len);

/* scores response against ref; 0, or -1 and a message (a task missing the metadata it needs) */
int reward_score(const RewardSpec *spec, const char *response, const RewardRef *ref, RewardResult *res,
                 char *why, size_t whylen);

/* one line for traces: the rule, what it extracted, the reference and the score */
void reward_explain(const RewardSpec *spec, const char *response, const RewardRef *ref,
                    const RewardResult *res, char *out, size_t outlen);

/* numeric equivalence of two answers (the REWARD_TASK_NONE comparison): 1 equal, 0 not */
int reward_answers_equal(const char *a, size_t alen, const char *b, size_t blen);

#endif
