/* reward_num.c — numeric equivalence of two answers, exactly: each side a
 * decimal (sign, digits with optional ",ddd" groups, a fraction part, an
 * exponent), a fraction of two decimals ("3/4") or \frac{A}{B} (\dfrac,
 * \tfrac), after trimming whitespace and one trailing period. A value is
 * num / den with both up to 18 significant digits, so cross products fit
 * 128 bits and equality is exact: 1,000 = 1000 = 1000.0 = 1e3, -0 = 0,
 * 3/4 = 0.75, 1/3 is not 0.333. Anything else compares as trimmed text. */
#include "reward_int.h"
#include "nereus/reward_text.h"

#include <stdint.h>
#include <string.h>

typedef struct Dec { int neg; uint64_t mant; int exp; } Dec; /* (-1)^neg · mant · 10^exp */
typedef struct Rat { int neg; Dec num, den; } Rat;

static int dig(char c) { return c >= '0' && c <= '9'; }

/* a decimal at s[*i..n): [+-] digits (",ddd" groups allowed) [. digits] [e [+-] digits]; at least one
   digit, at most 18 significant ones (leading and trailing zeros do not count), an exponent under 10^6 */
static int parse_dec(const char *s, size_t n, size_t *i, Dec *d) {
    size_t k = *i;
    int nd = 0, frac = 0, sig = 0, zeros = 0; /* zeros: held back until a nonzero digit follows them */
    d->neg = k < n && s[k] == '-';
    if (k < n && (s[k] == '+' || s[k] == '-')) k++;
    d->mant = 0;
    d->exp = 0;
    for (int in_frac = 0; k < n; k++) {
        if (dig(s[k])) {
            nd++;
            frac += in_frac;
            if (s[k] == '0') { zeros += d->mant != 0; continue; } /* leading zeros are not significant */
            if ((sig += zeros + 1) > 18) return -1;
            for (; zeros > 0; zeros--) d->mant *= 10;
            d->mant = d->mant * 10 + (uint64_t)(s[k] - '0');
        } else if (s[k] == ',' && !in_frac && nd > 0 && k + 3 < n + 0 && dig(s[k + 1]) && dig(s[k + 2]) &&
                   dig(s[k + 3]) && (k + 4 >= n || !dig(s[k + 4]))) {
            continue;
        } else if (s[k] == '.' && !in_frac) {
            in_frac = 1;
        } else break;
    }
    if (nd == 0) return -1;
    d->exp = zeros - frac;
    if (k < n && (s[k] == 'e' || s[k] == 'E')) {
        size_t j = k + 1;
        int eneg = j < n && s[j] == '-', ev = 0, ed = 0;
        if (j < n && (s[j] == '+' || s[j] == '-')) j++;
        for (; j < n && dig(s[j]) && ed < 7; j++, ed++) ev = ev * 10 + (s[j] - '0');
        if (ed == 0 || ed == 7) return -1;
        d->exp += eneg ? -ev : ev;
        k = j;
    }
    *i = k;
    return 0;
}

/* "\frac{A}{B}" (or \dfrac, \tfrac) at s[*i..n) */
static int parse_frac(const char *s, size_t n, size_t *i, Rat *r) {
    static const char *const names[] = {"\\frac{", "\\dfrac{", "\\tfrac{"};
    for (int t = 0; t < 3; t++) {
        size_t L = strlen(names[t]), k = *i;
        if (k + L > n || memcmp(s + k, names[t], L) != 0) continue;
        k += L;
        if (parse_dec(s, n, &k, &r->num) != 0 || k + 1 >= n || s[k] != '}' || s[k + 1] != '{') return -1;
        k += 2;
        if (parse_dec(s, n, &k, &r->den) != 0 || k >= n || s[k] != '}') return -1;
        *i = k + 1;
        return 0;
    }
    return -1;
}

/* the whole of s[0..n) as a number: [-] \frac{A}{B}, or A, or A/B */
static int parse_rat(const char *s, size_t n, Rat *r) {
    size_t i = 0;
    int neg = 0;
    if (n > 0 && (s[0] == '-' || s[0] == '+') && n > 1 && s[1] == '\\') { neg = s[0] == '-'; i = 1; }
    if (i < n && s[i] == '\\') {
        if (parse_frac(s, n, &i, r) != 0) return -1;
    } else {
        if (parse_dec(s, n, &i, &r->num) != 0) return -1;
        r->den = (Dec){0, 1, 0};
        if (i < n && s[i] == '/') { i++; if (parse_dec(s, n, &i, &r->den) != 0) return -1; }
    }
    if (i != n || r->den.mant == 0) return -1;
    r->neg = neg ^ r->num.neg ^ r->den.neg;
    return 0;
}

typedef unsigned __int128 u128;

/* a · b · 10^e with the trailing zeros moved into the exponent */
static void product(uint64_t a, uint64_t b, int e, u128 *m, int *exp) {
    *m = (u128)a * b;
    *exp = e;
    while (*m != 0 && *m % 10 == 0) { *m /= 10; (*exp)++; }
}

static int rat_equal(const Rat *x, const Rat *y) {
    int xz = x->num.mant == 0, yz = y->num.mant == 0;
    if (xz || yz) return xz && yz; /* -0 = 0 */
    if (x->neg != y->neg) return 0;
    u128 l, r;
    int le, re;
    product(x->num.mant, y->den.mant, x->num.exp + y->den.exp, &l, &le);
    product(y->num.mant, x->den.mant, y->num.exp + x->den.exp, &r, &re);
    return l == r && le == re;
}

/* whitespace trimmed, then one trailing period */
static void trim_answer(const char *s, size_t *start, size_t *len) {
    py_strip(s, start, len);
    if (*len > 0 && s[*start + *len - 1] == '.') { (*len)--; py_strip(s, start, len); }
}

int reward_answers_equal(const char *a, size_t alen, const char *b, size_t blen) {
    size_t as = 0, bs = 0;
    trim_answer(a, &as, &alen);
    trim_answer(b, &bs, &blen);
    Rat x, y;
    if (parse_rat(a + as, alen, &x) == 0 && parse_rat(b + bs, blen, &y) == 0) return rat_equal(&x, &y);
    return alen == blen && memcmp(a + as, b + bs, alen) == 0;
}
