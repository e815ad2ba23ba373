/* reward_py.c — the few Python string semantics that reasoning-gym's
 * scorers depend on, on UTF-8 bytes: str.isspace() and str.strip(), len()
 * in code points, float(str) and Decimal(str) equality (CPython 3.11, the
 * version that made the reference files, with its Unicode 14.0 tables:
 * both read any decimal digit, "١٢" and "１２" as 12). */
#include "reward_int.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* the code point at s[0]: its byte count, and *cp (0xFFFD for a malformed sequence, 1 byte) */
static size_t cp_decode(const char *s, size_t n, uint32_t *cp) {
    const unsigned char *u = (const unsigned char *)s;
    size_t k = u[0] < 0x80 ? 1 : (u[0] >> 5) == 6 ? 2 : (u[0] >> 4) == 14 ? 3 : (u[0] >> 3) == 30 ? 4 : 0;
    if (k == 0 || k > n) { *cp = 0xFFFD; return 1; }
    uint32_t c = k == 1 ? u[0] : k == 2 ? (u[0] & 0x1Fu) : k == 3 ? (u[0] & 0x0Fu) : (u[0] & 0x07u);
    for (size_t i = 1; i < k; i++) {
        if ((u[i] & 0xC0) != 0x80) { *cp = 0xFFFD; return 1; }
        c = (c << 6) | (u[i] & 0x3Fu);
    }
    *cp = c;
    return k;
}

size_t py_cp_len(const char *s, size_t n) {
    uint32_t cp;
    return cp_decode(s, n, &cp);
}

/* str.isspace(): Unicode White_Space plus the ASCII separators U+001C..U+001F */
static int is_py_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
           c == 0x3000;
}

/* the first code point of each run of ten Unicode decimal digits (Unicode 14.0, CPython 3.11's
   unicodedata: 66 runs, every character with a decimal value in one of them) */
static const uint32_t digit_zeros[] = {
    0x30, 0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66, 0xDE6, 0xE50,
    0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90, 0x1B50, 0x1BB0, 0x1C40,
    0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10, 0x104A0, 0x10D30, 0x11066,
    0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0, 0x11650, 0x116C0, 0x11730, 0x118E0, 0x11950,
    0x11C50, 0x11D50, 0x11DA0, 0x16A60, 0x16AC0, 0x16B50, 0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6,
    0x1E140, 0x1E2F0, 0x1E950, 0x1FBF0};

/* Py_UNICODE_TODECIMAL: the digit's value, or -1 */
static int decimal_value(uint32_t c) {
    for (size_t i = 0; i < sizeof digit_zeros / sizeof *digit_zeros; i++)
        if (c >= digit_zeros[i] && c < digit_zeros[i] + 10) return (int)(c - digit_zeros[i]);
    return -1;
}

/* how float() and Decimal() see a non-ASCII code point: ' ' for whitespace, '0'..'9' for a decimal
   digit, 0 for anything else (the conversion fails) */
static char non_ascii_as(const char *s, size_t n) {
    uint32_t cp;
    cp_decode(s, n, &cp);
    if (is_py_space(cp)) return ' ';
    int d = decimal_value(cp);
    return d < 0 ? 0 : (char)('0' + d);
}

size_t py_space_at(const char *s, size_t n) {
    if (n == 0) return 0;
    uint32_t cp;
    size_t k = cp_decode(s, n, &cp);
    return is_py_space(cp) ? k : 0;
}

size_t py_space_before(const char *s, size_t n) {
    for (size_t k = 1; k <= 3 && k <= n; k++) { /* whitespace code points are 1 to 3 bytes */
        size_t got = py_space_at(s + n - k, k);
        if (got == k) return k;
    }
    return 0;
}

void py_strip(const char *s, size_t *start, size_t *len) {
    size_t k;
    while (*len > 0 && (k = py_space_at(s + *start, *len)) > 0) { *start += k; *len -= k; }
    while (*len > 0 && (k = py_space_before(s + *start, *len)) > 0) *len -= k;
}

size_t py_len(const char *s, size_t n) {
    size_t count = 0;
    for (size_t i = 0; i < n; i += py_cp_len(s + i, n - i)) count++;
    return count;
}

int py_contains(const char *hay, size_t hn, const char *needle, size_t nn) {
    if (nn == 0) return 1;
    for (size_t i = 0; i + nn <= hn; i++)
        if (memcmp(hay + i, needle, nn) == 0) return 1;
    return 0;
}

/* float()'s underscores: each one between two ASCII digits (PEP 515); the rest copied */
static int drop_underscores(const char *s, size_t n, char *out) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '_') { out[o++] = s[i]; continue; }
        if (i == 0 || i + 1 == n || s[i - 1] < '0' || s[i - 1] > '9' || s[i + 1] < '0' || s[i + 1] > '9') return -1;
    }
    out[o] = 0;
    return 0;
}

/* "inf", "infinity", "nan", signed, any case: float()'s special names */
static int special_float(const char *s, double *out) {
    int neg = *s == '-';
    if (*s == '+' || *s == '-') s++;
    if (strcasecmp(s, "inf") == 0 || strcasecmp(s, "infinity") == 0) *out = neg ? -HUGE_VAL : HUGE_VAL;
    else if (strcasecmp(s, "nan") == 0) *out = neg ? -NAN : NAN;
    else return -1;
    return 0;
}

static size_t skip_digits(const char *s) {
    size_t i = 0;
    while (s[i] >= '0' && s[i] <= '9') i++;
    return i;
}

/* the decimal literal float() reads: [sign] (digits [. digits] | . digits) [e [sign] digits], all of s */
static int float_grammar(const char *s) {
    size_t i = (*s == '+' || *s == '-'), a = skip_digits(s + i), b = 0;
    i += a;
    if (s[i] == '.') { b = skip_digits(s + i + 1); i += 1 + b; }
    if (a + b == 0) return -1;
    if (s[i] == 'e' || s[i] == 'E') {
        i++;
        if (s[i] == '+' || s[i] == '-') i++;
        size_t e = skip_digits(s + i);
        if (e == 0) return -1;
        i += e;
    }
    return s[i] == 0 ? 0 : -1;
}

/* float(s): non-ASCII whitespace becomes a space and a decimal digit its ASCII digit (any other
   non-ASCII code point fails), ASCII
   whitespace is stripped, underscores checked and dropped, then the literal or a special name */
int py_float(const char *s, size_t n, double *out) {
    char *buf = malloc(n + 1), *clean = malloc(n + 1);
    size_t o = 0;
    int rc = -1;
    for (size_t i = 0, k; i < n; i += k) {
        k = py_cp_len(s + i, n - i);
        if (s[i] == 0) goto done;
        if ((unsigned char)s[i] < 0x80) buf[o++] = s[i];
        else if ((buf[o++] = non_ascii_as(s + i, n - i)) == 0) goto done;
    }
    size_t a = 0, b = o;
    while (a < b && strchr(" \t\n\v\f\r", buf[a])) a++;
    while (b > a && strchr(" \t\n\v\f\r", buf[b - 1])) b--;
    if (a == b || drop_underscores(buf + a, b - a, clean) != 0) goto done;
    if (special_float(clean, out) == 0) { rc = 0; goto done; }
    if (float_grammar(clean) != 0) goto done;
    *out = strtod(clean, NULL); /* correctly rounded, as Python's; overflow gives inf there too */
    rc = 0;
done:
    free(buf);
    free(clean);
    return rc;
}

/* a Decimal as its comparison needs it: kind, sign, coefficient digits without leading or trailing
   zeros (none: zero), and the exponent of the last digit kept */
typedef struct PyDec {
    enum { DEC_FINITE, DEC_INF, DEC_NAN, DEC_SNAN } kind;
    int neg;
    const char *dig;
    size_t nd;
    long long exp;
} PyDec;

/* Decimal()'s input: underscores dropped, non-ASCII whitespace a space and decimal digits ASCII ones
   (any other non-ASCII code point fails), str.isspace() stripped at both ends; buf (n + 1 bytes) receives it */
static int decimal_ascii(const char *s, size_t n, char *buf, size_t *len) {
    size_t o = 0;
    for (size_t i = 0, k; i < n; i += k) {
        k = py_cp_len(s + i, n - i);
        if (s[i] == '_') continue;
        if (s[i] == 0) return -1;
        if ((unsigned char)s[i] < 0x80) buf[o++] = s[i];
        else if ((buf[o++] = non_ascii_as(s + i, n - i)) == 0) return -1;
    }
    size_t a = 0, b = o;
    while (a < b && py_space_at(buf + a, 1)) a++;
    while (b > a && py_space_at(buf + b - 1, 1)) b--;
    memmove(buf, buf + a, b - a);
    buf[b - a] = 0;
    *len = b - a;
    return 0;
}

/* the exponent part's digits: at most 18 significant, as mpdecimal's 64-bit exponent limit */
static int dec_exponent(const char *s, long long *out) {
    int neg = *s == '-';
    if (*s == '+' || *s == '-') s++;
    size_t nd = skip_digits(s);
    if (nd == 0 || s[nd] != 0) return -1;
    while (*s == '0' && nd > 1) { s++; nd--; }
    if (nd > 18) return -1;
    long long v = 0;
    for (size_t i = 0; i < nd; i++) v = v * 10 + (s[i] - '0');
    *out = neg ? -v : v;
    return 0;
}

/* the decimal literal: digits [. digits] | . digits, then [e [sign] digits]; the coefficient's digits
   are moved together in place (the point removed) */
static int dec_finite(char *s, PyDec *d) {
    size_t a = skip_digits(s), b = 0;
    char *p = s + a;
    if (*p == '.') { b = skip_digits(p + 1); memmove(p, p + 1, b); p += b; *p = 0; p = s + a + b + 1; }
    if (a + b == 0) return -1;
    long long e = 0;
    if (*p == 'e' || *p == 'E') { if (dec_exponent(p + 1, &e) != 0) return -1; }
    else if (*p != 0) return -1;
    d->dig = s;
    d->nd = a + b;
    while (d->nd > 0 && *d->dig == '0') { d->dig++; d->nd--; }
    d->exp = e - (long long)b;
    while (d->nd > 0 && d->dig[d->nd - 1] == '0') { d->nd--; d->exp++; }
    return 0;
}

static int dec_parse(const char *s, size_t n, char *buf, PyDec *d) {
    size_t len;
    memset(d, 0, sizeof *d);
    if (decimal_ascii(s, n, buf, &len) != 0) return -1;
    char *p = buf;
    d->neg = *p == '-';
    if (*p == '+' || *p == '-') p++;
    if (strcasecmp(p, "inf") == 0 || strcasecmp(p, "infinity") == 0) { d->kind = DEC_INF; return 0; }
    int snan = strncasecmp(p, "snan", 4) == 0, nan = strncasecmp(p, "nan", 3) == 0;
    if (snan || nan) { /* NaN and sNaN take a payload of digits */
        p += snan ? 4 : 3;
        d->kind = snan ? DEC_SNAN : DEC_NAN;
        return p[skip_digits(p)] == 0 ? 0 : -1;
    }
    return dec_finite(p, d);
}

int py_decimal_equal(const char *a, size_t alen, const char *b, size_t blen) {
    char *ba = malloc(alen + 1), *bb = malloc(blen + 1);
    PyDec x, y;
    int rc = -1;
    if (dec_parse(a, alen, ba, &x) != 0 || dec_parse(b, blen, bb, &y) != 0) goto done;
    if (x.kind == DEC_SNAN || y.kind == DEC_SNAN) goto done; /* == on a signalling NaN raises */
    if (x.kind == DEC_NAN || y.kind == DEC_NAN) rc = 0;
    else if (x.kind == DEC_INF || y.kind == DEC_INF) rc = x.kind == y.kind && x.neg == y.neg;
    else if (x.nd == 0 || y.nd == 0) rc = x.nd == y.nd; /* zeros equal whatever their sign */
    else rc = x.neg == y.neg && x.nd == y.nd && x.exp == y.exp && memcmp(x.dig, y.dig, x.nd) == 0;
done:
    free(ba);
    free(bb);
    return rc;
}
