/* reward_gym.c — reasoning-gym's score_answer for the tasks Nereus uses,
 * reproduced step for step (reasoning-gym 0.1.25, CPython 3.11): the
 * default of ProceduralDataset (basic_arithmetic, leg_counting), utils'
 * compute_decimal_reward (chain_sum) and number_sorting's list check. Each
 * takes the answer as extract_answer returned it: NULL for None. */
#include "reward_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ProceduralDataset.score_answer: 1 where equal, len(oracle) / len(answer) where the oracle is inside the
   answer, else 0 (lengths in code points) */
double rg_score_default(const char *answer, size_t alen, const char *oracle) {
    size_t olen = strlen(oracle);
    if (!answer || alen == 0) return 0.0;
    if (alen == olen && memcmp(answer, oracle, alen) == 0) return 1.0;
    if (py_contains(answer, alen, oracle, olen)) return (double)py_len(oracle, olen) / (double)py_len(answer, alen);
    return 0.0;
}

/* s without its commas, into out (room for n + 1 bytes); its length */
static size_t drop_commas(const char *s, size_t n, char *out) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] != ',') out[o++] = s[i];
    out[o] = 0;
    return o;
}

/* utils.compute_decimal_reward(answer, oracle, strip_commas=True): Decimal equality after dropping
   commas from both; where that fails or raises, the default's partial credit on the comma-free strings */
double rg_score_decimal(const char *answer, size_t alen, const char *oracle) {
    if (!answer || alen == 0) return 0.0;
    size_t olen0 = strlen(oracle);
    char *a = malloc(alen + 1), *o = malloc(olen0 + 1);
    size_t an = drop_commas(answer, alen, a), on = drop_commas(oracle, olen0, o);
    double r = 0.0;
    if (py_decimal_equal(a, an, o, on) == 1) r = 1.0;
    else if (an > 0 && py_contains(a, an, o, on)) r = (double)py_len(o, on) / (double)py_len(a, an);
    free(a);
    free(o);
    return r;
}

/* CPython 3.11's list.sort on fewer than 64 floats (minrun is then the whole list): one run
   (count_run; a strictly descending run reversed) extended by binary insertion, comparing with < alone.
   Only NaN makes its result differ from any other sort's; idx receives the order of v's items. */
static void py_sort_small(const double *v, size_t *idx, size_t n) {
    if (n < 2) return;
    size_t run = 2;
    if (v[idx[1]] < v[idx[0]]) {
        while (run < n && v[idx[run]] < v[idx[run - 1]]) run++;
        for (size_t a = 0, b = run - 1; a < b; a++, b--) { size_t t = idx[a]; idx[a] = idx[b]; idx[b] = t; }
    } else {
        while (run < n && !(v[idx[run]] < v[idx[run - 1]])) run++;
    }
    for (size_t start = run; start < n; start++) { /* binarysort */
        size_t l = 0, r = start, pivot = idx[start];
        while (l < r) {
            size_t p = l + ((r - l) >> 1);
            if (v[pivot] < v[idx[p]]) r = p; else l = p + 1;
        }
        memmove(idx + l + 1, idx + l, (start - l) * sizeof *idx);
        idx[l] = pivot;
    }
}

static void reverse_idx(size_t *idx, size_t n) {
    for (size_t a = 0; n > 1 && a < n - 1 - a; a++) { size_t t = idx[a]; idx[a] = idx[n - 1 - a]; idx[n - 1 - a] = t; }
}

/* no item below the one before it (above, descending), by < alone as CPython compares */
static int no_descent(const double *v, size_t n, int descending) {
    for (size_t i = 1; i < n; i++)
        if (descending ? v[i - 1] < v[i] : v[i] < v[i - 1]) return 0;
    return 1;
}

/* user_floats == sorted(user_floats[, reverse=True]): list equality is identity or ==, item by item; with
   reverse, CPython reverses, sorts and reverses again. From 64 items CPython merges runs (timsort's
   galloping merges, not reproduced here): a list with no descent is one run that it returns unchanged,
   hence equal; one with a descent is taken as unsorted, as CPython judged each of 200,000 random lists
   of up to 150 items with NaNs (docs/TEXT.md) and as the emulation below finds on every reference case */
static int py_is_sorted(const double *v, size_t n, int descending) {
    if (n >= 64) return no_descent(v, n, descending);
    size_t *idx = malloc((n ? n : 1) * sizeof *idx);
    for (size_t i = 0; i < n; i++) idx[i] = i;
    if (descending) reverse_idx(idx, n);
    py_sort_small(v, idx, n);
    if (descending) reverse_idx(idx, n);
    int same = 1;
    for (size_t i = 0; i < n && same; i++) same = idx[i] == i || v[idx[i]] == v[i];
    free(idx);
    return same;
}

/* float() of every item; -1 where one raises */
static int items_float(const PyjItem *it, size_t n, double *out) {
    for (size_t i = 0; i < n; i++)
        if (pyj_float(&it[i], &out[i]) != 0) return -1;
    return 0;
}

/* number_sorting's score_answer: the answer (quotes ' read as ") a JSON list as long as the oracle's,
   every item a float, sorted in the entry's direction, each within 1 of the oracle's */
double rg_score_number_sorting(const char *answer, size_t alen, const char *oracle, int descending) {
    if (!answer) return 0.0;
    char *a = malloc(alen + 1);
    for (size_t i = 0; i < alen; i++) a[i] = answer[i] == '\'' ? '"' : answer[i];
    PyjItem *ui = NULL, *ei = NULL;
    size_t un = 0, en = 0;
    double *uf = NULL, *ef = NULL, score = 0.0;
    int urc = pyj_parse_list(a, alen, &ui, &un);
    if (urc != 1) goto done; /* not JSON, or not a list */
    int erc = pyj_parse_list(oracle, strlen(oracle), &ei, &en);
    if (erc == -1) erc = pyj_parse_pylist(oracle, strlen(oracle), &ei, &en); /* the eval() fallback */
    if (erc != 1 || un != en) goto done;
    uf = malloc((un ? un : 1) * sizeof *uf);
    ef = malloc((en ? en : 1) * sizeof *ef);
    if (items_float(ui, un, uf) != 0 || items_float(ei, en, ef) != 0) goto done;
    if (!py_is_sorted(uf, un, descending)) goto done;
    for (size_t i = 0; i < un; i++)
        if (fabs(uf[i] - ef[i]) > 1.0) goto done; /* a NaN passes: its comparison is false */
    score = 1.0;
done:
    pyj_free(ui, un);
    pyj_free(ei, en);
    free(uf);
    free(ef);
    free(a);
    return score;
}
