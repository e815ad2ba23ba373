/* test_reward.c — the text reward module (reward_text.h) by hand: each
 * rule's extraction, numeric equivalence, the format reward, the
 * explanation, bad names, and reasoning-gym's scorers on cases whose scores
 * CPython 3.11 with reasoning-gym 0.1.25 gave (the bulk agreement is
 * tests/suites/reward.sh's, on the reference files). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "nereus/reward_text.h"

/* what RULE extracts from text, or "(none)" */
static const char *extract(RewardRule rule, const char *text) {
    static char buf[256];
    size_t s, n;
    if (!reward_extract(rule, text, &s, &n)) return "(none)";
    snprintf(buf, sizeof buf, "%.*s", (int)n, text + s);
    return buf;
}

static double score(RewardRule rule, RewardTask task, double fmt, const char *resp, const char *ans,
                    const char *dir) {
    RewardSpec spec = {rule, task, fmt};
    RewardRef ref = {ans, dir};
    RewardResult res;
    char why[128];
    if (reward_score(&spec, resp, &ref, &res, why, sizeof why) != 0) return -1.0;
    return res.score;
}

/* text with its newlines shown as \n, for one line of output */
static const char *oneline(const char *text) {
    static char buf[256];
    size_t o = 0;
    for (; *text && o + 3 < sizeof buf; text++) {
        if (*text == '\n') { buf[o++] = '\\'; buf[o++] = 'n'; }
        else buf[o++] = *text;
    }
    buf[o] = 0;
    return buf;
}

#define EXTRACTS(rule, text, want) \
    CHECK(strcmp(extract(rule, text), want) == 0, "%s of '%s' -> '%s'", reward_rule_name(rule), oneline(text), want)

static void test_answer_tag(void) {
    EXTRACTS(REWARD_ANSWER_TAG, "so <answer>42</answer>", "42");
    EXTRACTS(REWARD_ANSWER_TAG, "<answer> 1 </answer> then <answer>\n2\n</answer>", "2");
    EXTRACTS(REWARD_ANSWER_TAG, "<answer><answer>7</answer></answer>", "<answer>7");
    EXTRACTS(REWARD_ANSWER_TAG, "<answer>3 <answer>4</answer>", "3 <answer>4");
    EXTRACTS(REWARD_ANSWER_TAG, "<answer>5", "(none)");
    EXTRACTS(REWARD_ANSWER_TAG, "<answer>5</ans", "(none)");
    EXTRACTS(REWARD_ANSWER_TAG, "<Answer>5</Answer>", "(none)");
    EXTRACTS(REWARD_ANSWER_TAG, "<answer></answer>", "");
    EXTRACTS(REWARD_ANSWER_TAG, "<answer>\xc2\xa0" "8\xe3\x80\x80</answer>", "8"); /* NBSP, ideographic space */
    EXTRACTS(REWARD_ANSWER_TAG, "<answer>1</answer><answer>2", "1");
}

static void test_other_rules(void) {
    EXTRACTS(REWARD_GSM8K, "so 3 + 4 = 7\n#### 7", "7");
    EXTRACTS(REWARD_GSM8K, "#### 1\n#### 1,000.\nthanks", "1,000.");
    EXTRACTS(REWARD_GSM8K, "####72", "72");
    EXTRACTS(REWARD_GSM8K, "the answer is 72", "(none)");
    EXTRACTS(REWARD_BOXED, "so \\boxed{\\frac{3}{4}}.", "\\frac{3}{4}");
    EXTRACTS(REWARD_BOXED, "\\boxed{1} or \\boxed{ {2} }", "{2}");
    EXTRACTS(REWARD_BOXED, "\\boxed {5}", "5");
    EXTRACTS(REWARD_BOXED, "\\boxed{1} then \\boxed{\\frac{1}{2}", "(none)");
    EXTRACTS(REWARD_BOXED, "\\boxed{}", "");
    EXTRACTS(REWARD_BOXED, "no box", "(none)");
    EXTRACTS(REWARD_LAST_NUMBER, "x = -3.5 and then 7 apples", "7");
    EXTRACTS(REWARD_LAST_NUMBER, "it is -3.5.", "-3.5");
    EXTRACTS(REWARD_LAST_NUMBER, "pages 3-4", "4");
    EXTRACTS(REWARD_LAST_NUMBER, "about 1,000 apples", "1,000");
    EXTRACTS(REWARD_LAST_NUMBER, "1,00 x", "00");
    EXTRACTS(REWARD_LAST_NUMBER, "a ratio of 3/4", "3/4");
    EXTRACTS(REWARD_LAST_NUMBER, "p = -.5, so", "-.5");
    EXTRACTS(REWARD_LAST_NUMBER, "version 1.2.3", "3");
    EXTRACTS(REWARD_LAST_NUMBER, "no digits", "(none)");
}

#define EQUAL(a, b, want) \
    CHECK(reward_answers_equal(a, strlen(a), b, strlen(b)) == (want), "'%s' %s '%s'", a, (want) ? "=" : "!=", b)

static void test_numeric(void) {
    EQUAL("1,000", "1000", 1);
    EQUAL("1000.0", "1000", 1);
    EQUAL("1,000,000.50", "1000000.5", 1);
    EQUAL("1e3", "1000", 1);
    EQUAL("-0", "0", 1);
    EQUAL("-0.0", "0", 1);
    EQUAL("3/4", "0.75", 1);
    EQUAL("6/8", "3/4", 1);
    EQUAL("\\frac{3}{4}", "0.75", 1);
    EQUAL("-\\dfrac{1}{2}", "-0.5", 1);
    EQUAL("1/-2", "-0.5", 1);
    EQUAL("1/3", "0.333333", 0);
    EQUAL(" 42. ", "42", 1);
    EQUAL("+42", "42", 1);
    EQUAL("42", "-42", 0);
    EQUAL("1/0", "1/0", 1); /* not a number: compared as text */
    EQUAL("1,00", "100", 0);
    EQUAL("123456789012345678", "123,456,789,012,345,678", 1);
    EQUAL("1234567890123456789", "1234567890123456789.0", 0); /* 19 digits: text */
    EQUAL("0.000000000000000001", "1e-18", 1);
    EQUAL("100000000000000000000000", "1e23", 1); /* trailing zeros are not significant digits */
    EQUAL("1000000000000000000000001", "1e24", 0);  /* 25 significant digits: text */
    EQUAL(" Paris ", "Paris.", 1);
    EQUAL("paris", "Paris", 0);
    EQUAL("", "", 1);
}

static void test_scores(void) {
    double s;
    s = score(REWARD_ANSWER_TAG, REWARD_TASK_NONE, 0.0, "<answer>1,000</answer>", "1000", NULL);
    CHECK(s == 1.0, "answer-tag 1,000 vs 1000: %g", s);
    s = score(REWARD_ANSWER_TAG, REWARD_TASK_NONE, 0.1, "<answer>999</answer>", "1000", NULL);
    CHECK(fabs(s - 0.1) < 1e-15, "format reward on a wrong value: %g (want 0.1)", s);
    s = score(REWARD_ANSWER_TAG, REWARD_TASK_NONE, 0.1, "<answer>1000</answer>", "1000", NULL);
    CHECK(fabs(s - 1.1) < 1e-15, "format reward on a right value: %g (want 1.1)", s);
    s = score(REWARD_ANSWER_TAG, REWARD_TASK_NONE, 0.1, "1000", "1000", NULL);
    CHECK(s == 0.0, "no tag: no format reward: %g", s);
    s = score(REWARD_ANSWER_TAG, REWARD_TASK_NONE, 0.1, "<answer> </answer>", "1000", NULL);
    CHECK(s == 0.0, "empty answer: no format reward: %g", s);
    s = score(REWARD_GSM8K, REWARD_TASK_NONE, 0.0, "... #### 72", "Natalia sold 48/2 = 24 ... #### 72", NULL);
    CHECK(s == 1.0, "gsm8k against a whole GSM8K solution: %g", s);
    s = score(REWARD_BOXED, REWARD_TASK_NONE, 0.0, "\\boxed{\\frac{3}{4}}", "0.75", NULL);
    CHECK(s == 1.0, "boxed \\frac{3}{4} vs 0.75: %g", s);
    s = score(REWARD_LAST_NUMBER, REWARD_TASK_NONE, 0.0, "so 2 + 3 = 5.", "5", NULL);
    CHECK(s == 1.0, "last-number 5.: %g", s);
}

/* reasoning-gym's own scores of these (CPython 3.11, reasoning-gym 0.1.25) */
static void test_gym(void) {
    struct { RewardTask task; const char *ans, *oracle, *dir; double want; } c[] = {
        {REWARD_TASK_LEG_COUNTING, "12", "12", NULL, 1.0},
        {REWARD_TASK_LEG_COUNTING, "The answer is 12", "12", NULL, 0.125},
        {REWARD_TASK_LEG_COUNTING, "12 legs", "12", NULL, 2.0 / 7.0},
        {REWARD_TASK_LEG_COUNTING, "\xc3\xa9" "12", "12", NULL, 2.0 / 3.0}, /* len() counts code points */
        {REWARD_TASK_BASIC_ARITHMETIC, "12.0", "12", NULL, 0.5},
        {REWARD_TASK_CHAIN_SUM, "+01,000.00", "1000", NULL, 1.0},
        {REWARD_TASK_CHAIN_SUM, "1_000", "1000", NULL, 1.0},
        {REWARD_TASK_CHAIN_SUM, "x1000", "1000", NULL, 0.8},
        {REWARD_TASK_CHAIN_SUM, "sNaN", "1000", NULL, 0.0},
        {REWARD_TASK_CHAIN_SUM, "NaN", "NaN", NULL, 1.0}, /* unequal Decimals, then the substring */
        {REWARD_TASK_CHAIN_SUM, "Inf", "Infinity", NULL, 1.0},
        {REWARD_TASK_CHAIN_SUM, " 12\xc2\xa0", "12", NULL, 1.0},
        {REWARD_TASK_CHAIN_SUM, "\xef\xbc\x91\xef\xbc\x92", "12", NULL, 1.0},   /* fullwidth digits */
        {REWARD_TASK_LEG_COUNTING, "\xef\xbc\x91\xef\xbc\x92", "12", NULL, 0.0}, /* compared as text */
        {REWARD_TASK_NUMBER_SORTING, "['\xd9\xa1', '\xd9\xa2']", "['1', '2']", "ascending", 1.0}, /* Arabic-Indic */
        {REWARD_TASK_NUMBER_SORTING, "['nan', '1', '2']", "['0.5', '1', '2']", "ascending", 1.0},
        {REWARD_TASK_NUMBER_SORTING, "[3, NaN, 1]", "['1', '2', '3']", "ascending", 0.0},
        {REWARD_TASK_NUMBER_SORTING, "[2, 1, NaN]", "['2', '1', '0']", "descending", 1.0},
        {REWARD_TASK_NUMBER_SORTING, "[NaN, 1, 2]", "['2', '1', '0']", "descending", 0.0},
        {REWARD_TASK_NUMBER_SORTING, "[2, NaN, 1]", "['2', '1', '0']", "descending", 1.0},
        {REWARD_TASK_NUMBER_SORTING, "[\"1_0\", \"2\"]", "['10', '2']", "descending", 1.0},
        {REWARD_TASK_NUMBER_SORTING, "[\"1__0\", \"2\"]", "['10', '2']", "descending", 0.0},
        {REWARD_TASK_NUMBER_SORTING, "[01, 2]", "['1', '2']", "ascending", 0.0},
        {REWARD_TASK_NUMBER_SORTING, "[1.5, 2.]", "['1', '2']", "ascending", 0.0},
        {REWARD_TASK_NUMBER_SORTING, "[true, 2]", "['1', '2']", "ascending", 1.0},
        {REWARD_TASK_NUMBER_SORTING, "[\"\\u0031\", 2]", "['1', '2']", "ascending", 1.0},
        {REWARD_TASK_NUMBER_SORTING, "[1e400, 2]", "['1', '2']", "ascending", 0.0},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        char resp[256];
        snprintf(resp, sizeof resp, "<answer>%s</answer>", c[i].ans);
        double s = score(REWARD_ANSWER_TAG, c[i].task, 0.0, resp, c[i].oracle, c[i].dir);
        CHECK(s == c[i].want, "%s '%s' vs '%s': %.17g (reasoning-gym %.17g)", reward_task_name(c[i].task), c[i].ans,
              c[i].oracle, s, c[i].want);
    }
}

static void test_api(void) {
    RewardRule r;
    RewardTask t;
    char why[256];
    CHECK(reward_rule_parse("boxed", &r, why, sizeof why) == 0 && r == REWARD_BOXED, "rule 'boxed' parsed");
    CHECK(reward_rule_parse("regex", &r, why, sizeof why) != 0 && strstr(why, "'regex'") && strstr(why, "last-number"),
          "unknown rule refused: %s", why);
    CHECK(reward_task_parse("chain_sum", &t, why, sizeof why) == 0 && t == REWARD_TASK_CHAIN_SUM, "task parsed");
    CHECK(reward_task_parse("none", &t, why, sizeof why) != 0, "task 'none' refused: %s", why);
    RewardSpec spec = {REWARD_ANSWER_TAG, REWARD_TASK_NUMBER_SORTING, 0.0};
    RewardRef ref = {"['1']", NULL};
    RewardResult res;
    CHECK(reward_score(&spec, "<answer>['1']</answer>", &ref, &res, why, sizeof why) != 0 &&
          strstr(why, "metadata.direction"), "number_sorting without a direction refused: %s", why);
    spec = (RewardSpec){REWARD_ANSWER_TAG, REWARD_TASK_NONE, 0.5};
    ref = (RewardRef){"7", NULL};
    const char *resp = "think\n<answer>6</answer>";
    reward_score(&spec, resp, &ref, &res, why, sizeof why);
    char line[512];
    reward_explain(&spec, resp, &ref, &res, line, sizeof line);
    CHECK(strstr(line, "extracted \"6\"") && strstr(line, "reference \"7\"") && strstr(line, "score 0.5"),
          "explain: %s", line);
    CHECK(res.found && res.format_ok && res.ans_start == 14 && res.ans_len == 1, "result: the answer's bytes");
}

int main(void) {
    test_answer_tag();
    test_other_rules();
    test_numeric();
    test_scores();
    test_gym();
    test_api();
    return CHECK_DONE();
}
