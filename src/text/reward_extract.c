/* reward_extract.c — where each rule finds the answer in a response, by
 * plain string scanning: each returns 1 and the answer's bytes in the
 * text, or 0 where the rule finds none. */
#include "reward_int.h"

#include <string.h>

static const char *last_of(const char *text, const char *needle) {
    const char *hit = NULL, *p = text;
    while ((p = strstr(p, needle)) != NULL) { hit = p; p++; }
    return hit;
}

/* reasoning-gym's extract_answer: re.finditer(r"<answer>\s?(.*?)\s?</answer>", DOTALL), the last match's
   group, str.strip()ped. Matches do not overlap: each begins after the previous one's "</answer>", and
   runs to the first "</answer>" after its "<answer>" (one whitespace code point trimmed at each end by
   the \s? on either side). */
int reward_extract_answer_tag(const char *text, size_t *start, size_t *len) {
    static const char open[] = "<answer>", close[] = "</answer>";
    const char *p = text, *o, *c;
    int found = 0;
    while ((o = strstr(p, open)) != NULL) {
        const char *g = o + sizeof open - 1;
        if ((c = strstr(g, close)) == NULL) break;
        size_t n = (size_t)(c - g);
        size_t lead = py_space_at(g, n);
        g += lead;
        n -= lead;
        n -= py_space_before(g, n);
        *start = (size_t)(g - text);
        *len = n;
        found = 1;
        p = c + sizeof close - 1;
    }
    if (found) py_strip(text, start, len);
    return found;
}

/* GSM8K's "#### N": the rest of the line after the last "####", trimmed */
int reward_extract_gsm8k(const char *text, size_t *start, size_t *len) {
    const char *m = last_of(text, "####");
    if (!m) return 0;
    const char *g = m + 4, *e = strchr(g, '\n');
    *start = (size_t)(g - text);
    *len = e ? (size_t)(e - g) : strlen(g);
    py_strip(text, start, len);
    return 1;
}

/* the last "\boxed{...}": its contents to the brace that closes it (braces nest); none where the last
   one never closes (a truncated response) */
int reward_extract_boxed(const char *text, size_t *start, size_t *len) {
    const char *m = last_of(text, "\\boxed");
    if (!m) return 0;
    const char *g = m + 6;
    while (*g == ' ') g++;
    if (*g != '{') return 0;
    int depth = 0;
    for (const char *p = g; *p; p++) {
        if (*p == '{') depth++;
        else if (*p == '}' && --depth == 0) {
            *start = (size_t)(g + 1 - text);
            *len = (size_t)(p - g - 1);
            py_strip(text, start, len);
            return 1;
        }
    }
    return 0;
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_alnum(char c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* the number starting at s[i] (a digit): digits, ",ddd" groups, ".digits", "/digits"; its end */
static size_t number_end(const char *s, size_t i) {
    while (is_digit(s[i])) i++;
    while (s[i] == ',' && is_digit(s[i + 1]) && is_digit(s[i + 2]) && is_digit(s[i + 3]) && !is_digit(s[i + 4]))
        i += 4;
    if (s[i] == '.' && is_digit(s[i + 1])) for (i++; is_digit(s[i]); i++) {}
    if (s[i] == '/' && is_digit(s[i + 1])) for (i++; is_digit(s[i]); i++) {}
    return i;
}

/* the last number in the text: a '.' directly before its first digit belongs to it (".5"), and so does
   a '-' before that unless a letter or digit precedes the '-' (a range "3-4" ends with 4, not -4) */
int reward_extract_last_number(const char *text, size_t *start, size_t *len) {
    int found = 0;
    for (size_t i = 0; text[i];) {
        if (!is_digit(text[i]) || (i > 0 && is_digit(text[i - 1]))) { i++; continue; }
        size_t b = i, e = number_end(text, i);
        if (b > 0 && text[b - 1] == '.' && (b < 2 || !is_digit(text[b - 2]))) b--; /* ".5", not "1.2.3"'s ".3" */
        if (b > 0 && text[b - 1] == '-' && (b < 2 || !is_alnum(text[b - 2]))) b--;
        *start = b;
        *len = e - b;
        found = 1;
        i = e;
    }
    return found;
}
