/* reward_int.h — the pieces of the text reward module (reward_text.h)
 * shared between its files: Python's string semantics that reasoning-gym's
 * scorers rely on (reward_py.c, reward_pyjson.c), its task scorers
 * (reward_gym.c) and our numeric answers (reward_num.c). */
#ifndef NEREUS_REWARD_INT_H
#define NEREUS_REWARD_INT_H

#include <stddef.h>

/* --- reward_py.c: Python's str, float() and Decimal() on UTF-8 bytes --- */
/* bytes of the code point at s[0] (1 where s[0] is not a valid lead byte) */
size_t py_cp_len(const char *s, size_t n);
/* bytes of the str.isspace() code point that s[0..n) starts with, else 0 */
size_t py_space_at(const char *s, size_t n);
/* bytes of the str.isspace() code point that s[0..n) ends with, else 0 */
size_t py_space_before(const char *s, size_t n);
/* str.strip(): narrows [*start, *start + *len) of s */
void py_strip(const char *s, size_t *start, size_t *len);
/* len() of a str: its code points */
size_t py_len(const char *s, size_t n);
/* float(s): 0 and *out, or -1 where Python raises ValueError */
int py_float(const char *s, size_t n, double *out);
/* Decimal(a) == Decimal(b): 1 equal, 0 not, -1 where Python raises (a conversion or an sNaN) */
int py_decimal_equal(const char *a, size_t alen, const char *b, size_t blen);
/* substring test of str: needle in hay */
int py_contains(const char *hay, size_t hn, const char *needle, size_t nn);

/* --- reward_pyjson.c: json.loads of a list, for number_sorting --- */
typedef enum { PYJ_INT, PYJ_FLOAT, PYJ_STRING, PYJ_BOOL, PYJ_OTHER } PyjKind;
typedef struct PyjItem {
    PyjKind kind;
    char *text; /* INT, FLOAT: the literal (NaN, Infinity, -Infinity included); STRING: the decoded
                   UTF-8; BOOL: "true" or "false"; OTHER (null, list, dict): NULL */
    size_t len;
    int bad_utf8; /* STRING: a lone surrogate escape (Python's float() of it raises) */
} PyjItem;
/* json.loads(s) where it gives a list: 1 and its items (free with pyj_free); 0 where it gives
   another value; -1 where it raises */
int pyj_parse_list(const char *s, size_t n, PyjItem **items, size_t *count);
/* the literal list of quoted strings and numbers that Python's eval() reads (str(list) of strings): as
   pyj_parse_list */
int pyj_parse_pylist(const char *s, size_t n, PyjItem **items, size_t *count);
void pyj_free(PyjItem *items, size_t count);
/* float(item): 0 and *out, or -1 where Python raises */
int pyj_float(const PyjItem *item, double *out);

/* --- reward_gym.c: reasoning-gym's score_answer of each task, after extract_answer --- */
/* answer: the extracted answer, NULL where extract_answer gave None */
double rg_score_default(const char *answer, size_t alen, const char *oracle);
double rg_score_decimal(const char *answer, size_t alen, const char *oracle);
double rg_score_number_sorting(const char *answer, size_t alen, const char *oracle, int descending);

/* --- reward_extract.c --- */
int reward_extract_answer_tag(const char *text, size_t *start, size_t *len);
int reward_extract_gsm8k(const char *text, size_t *start, size_t *len);
int reward_extract_boxed(const char *text, size_t *start, size_t *len);
int reward_extract_last_number(const char *text, size_t *start, size_t *len);

#endif
