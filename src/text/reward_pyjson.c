/* reward_pyjson.c — json.loads as Python's json module runs it (the C
 * scanner, strict strings), for the one place reasoning-gym reads JSON:
 * number_sorting's answer list. cJSON is laxer (leading zeros, "1.",
 * trailing text, no NaN), so these few productions are spelt out here:
 * whitespace " \t\n\r", values, arrays, objects, strings with escapes and
 * no control characters, numbers -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][-+]?[0-9]+)?,
 * NaN, Infinity, -Infinity. Only a top-level list keeps its items; nested
 * values are checked and dropped, as float() refuses them anyway. */
#include "reward_int.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct Pj {
    const char *s;
    size_t n, i;
    int depth;
} Pj;

enum { PJ_MAX_DEPTH = 10000 }; /* deeper: Python's RecursionError, a failure either way */

static void pj_ws(Pj *p) {
    while (p->i < p->n && strchr(" \t\n\r", p->s[p->i]) && p->s[p->i]) p->i++;
}

static int pj_lit(Pj *p, const char *word) {
    size_t k = strlen(word);
    if (p->i + k > p->n || memcmp(p->s + p->i, word, k) != 0) return 0;
    p->i += k;
    return 1;
}

static size_t pj_digits(Pj *p) {
    size_t k = 0;
    while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') { p->i++; k++; }
    return k;
}

/* a number at p->i: *is_float where it has a fraction or an exponent; -1 where none starts here */
static int pj_number(Pj *p, int *is_float) {
    size_t i0 = p->i;
    if (p->i < p->n && p->s[p->i] == '-') p->i++;
    if (p->i < p->n && p->s[p->i] == '0') p->i++;
    else if (pj_digits(p) == 0) { p->i = i0; return -1; }
    *is_float = 0;
    size_t save = p->i;
    if (p->i < p->n && p->s[p->i] == '.') { /* a point not followed by a digit ends the number before it */
        p->i++;
        if (pj_digits(p) == 0) p->i = save; else *is_float = 1;
    }
    save = p->i;
    if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
        p->i++;
        if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-')) p->i++;
        if (pj_digits(p) == 0) p->i = save; else *is_float = 1;
    }
    return 0;
}

static int hex4(const char *s, uint32_t *v) {
    *v = 0;
    for (int k = 0; k < 4; k++) {
        char c = s[k];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        *v = *v * 16 + (uint32_t)d;
    }
    return 0;
}

static size_t put_utf8(char *o, uint32_t c) {
    if (c < 0x80) { o[0] = (char)c; return 1; }
    if (c < 0x800) { o[0] = (char)(0xC0 | c >> 6); o[1] = (char)(0x80 | (c & 0x3F)); return 2; }
    if (c < 0x10000) {
        o[0] = (char)(0xE0 | c >> 12); o[1] = (char)(0x80 | ((c >> 6) & 0x3F)); o[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | c >> 18); o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((c >> 6) & 0x3F)); o[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* \uXXXX at p->s + p->i (after the backslash and 'u'), a surrogate pair joined as Python joins it */
static int pj_uescape(Pj *p, uint32_t *c, int *lone) {
    if (p->i + 4 > p->n || hex4(p->s + p->i, c) != 0) return -1;
    p->i += 4;
    *lone = 0;
    if (*c >= 0xD800 && *c <= 0xDBFF && p->i + 6 <= p->n && p->s[p->i] == '\\' && p->s[p->i + 1] == 'u') {
        uint32_t lo;
        if (hex4(p->s + p->i + 2, &lo) == 0 && lo >= 0xDC00 && lo <= 0xDFFF) {
            *c = 0x10000 + ((*c - 0xD800) << 10) + (lo - 0xDC00);
            p->i += 6;
            return 0;
        }
    }
    if (*c >= 0xD800 && *c <= 0xDFFF) *lone = 1;
    return 0;
}

/* a string after its opening quote: its decoded bytes into out (room for p->n bytes), or -1 */
static int pj_string(Pj *p, char *out, size_t *len, int *bad_utf8) {
    size_t o = 0;
    *bad_utf8 = 0;
    for (;;) {
        if (p->i >= p->n) return -1;
        unsigned char c = (unsigned char)p->s[p->i++];
        if (c == '"') break;
        if (c < 0x20) return -1; /* strict: no control characters */
        if (c != '\\') { if (out) out[o] = (char)c; o++; continue; }
        if (p->i >= p->n) return -1;
        char e = p->s[p->i++];
        const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t", *hit = e ? strchr(from, e) : NULL;
        if (hit) { if (out) out[o] = to[hit - from]; o++; continue; }
        if (e != 'u') return -1;
        uint32_t cp;
        int lone;
        if (pj_uescape(p, &cp, &lone) != 0) return -1;
        *bad_utf8 |= lone;
        char tmp[4];
        size_t k = put_utf8(tmp, cp);
        if (out) memcpy(out + o, tmp, k);
        o += k;
    }
    *len = o;
    return 0;
}

static int pj_value(Pj *p, PyjItem *item);

/* '[' or '{' already taken: the elements, each checked and dropped */
static int pj_container(Pj *p, char close) {
    if (++p->depth > PJ_MAX_DEPTH) return -1;
    pj_ws(p);
    if (p->i < p->n && p->s[p->i] == close) { p->i++; p->depth--; return 0; }
    for (;;) {
        if (close == '}') {
            size_t len;
            int bad;
            if (p->i >= p->n || p->s[p->i++] != '"' || pj_string(p, NULL, &len, &bad) != 0) return -1;
            pj_ws(p);
            if (p->i >= p->n || p->s[p->i++] != ':') return -1;
            pj_ws(p);
        }
        if (pj_value(p, NULL) != 0) return -1;
        pj_ws(p);
        if (p->i >= p->n) return -1;
        char c = p->s[p->i++];
        if (c == close) break;
        if (c != ',') return -1;
        pj_ws(p);
    }
    p->depth--;
    return 0;
}

/* one value at p->i; item (NULL: checked only) receives its kind and text */
static int pj_value(Pj *p, PyjItem *item) {
    PyjItem tmp;
    if (!item) item = &tmp;
    memset(item, 0, sizeof *item);
    item->kind = PYJ_OTHER;
    if (p->i >= p->n) return -1;
    size_t i0 = p->i;
    char c = p->s[p->i];
    if (c == '"') {
        p->i++;
        item->kind = PYJ_STRING;
        size_t s0 = p->i;
        if (pj_string(p, NULL, &item->len, &item->bad_utf8) != 0) return -1;
        if (item == &tmp) return 0;
        p->i = s0; /* measured; now decoded into its own buffer */
        item->text = malloc(item->len + 1);
        pj_string(p, item->text, &item->len, &item->bad_utf8);
        item->text[item->len] = 0;
        return 0;
    }
    if (c == '[' || c == '{') { p->i++; return pj_container(p, c == '[' ? ']' : '}'); }
    if (pj_lit(p, "null")) return 0;
    if (pj_lit(p, "true") || pj_lit(p, "false")) item->kind = PYJ_BOOL;
    else if (pj_lit(p, "NaN") || pj_lit(p, "Infinity") || pj_lit(p, "-Infinity")) item->kind = PYJ_FLOAT;
    else {
        int is_float;
        if (pj_number(p, &is_float) != 0) return -1;
        item->kind = is_float ? PYJ_FLOAT : PYJ_INT;
    }
    if (item != &tmp) {
        item->len = p->i - i0;
        item->text = malloc(item->len + 1);
        memcpy(item->text, p->s + i0, item->len);
        item->text[item->len] = 0;
    }
    return 0;
}

/* a top-level list: each item kept */
static int pj_list(Pj *p, PyjItem **items, size_t *count) {
    size_t cap = 8;
    *items = malloc(cap * sizeof **items);
    *count = 0;
    pj_ws(p);
    if (p->i < p->n && p->s[p->i] == ']') { p->i++; return 0; }
    for (;;) {
        if (*count == cap) *items = realloc(*items, (cap *= 2) * sizeof **items);
        int rc = pj_value(p, &(*items)[*count]);
        (*count)++;
        if (rc != 0) return -1;
        pj_ws(p);
        if (p->i >= p->n) return -1;
        char c = p->s[p->i++];
        if (c == ']') return 0;
        if (c != ',') return -1;
        pj_ws(p);
    }
}

int pyj_parse_list(const char *s, size_t n, PyjItem **items, size_t *count) {
    Pj p = {s, n, 0, 0};
    *items = NULL;
    *count = 0;
    pj_ws(&p);
    int rc;
    if (p.i < n && s[p.i] == '[') { p.i++; rc = pj_list(&p, items, count) == 0 ? 1 : -1; }
    else rc = pj_value(&p, NULL) == 0 ? 0 : -1;
    pj_ws(&p);
    if (rc >= 0 && p.i != n) rc = -1; /* "Extra data" */
    if (rc != 1) { pyj_free(*items, *count); *items = NULL; *count = 0; }
    return rc;
}

void pyj_free(PyjItem *items, size_t count) {
    for (size_t i = 0; i < count; i++) free(items[i].text);
    free(items);
}

int pyj_float(const PyjItem *item, double *out) {
    switch (item->kind) {
    case PYJ_BOOL: *out = item->text[0] == 't'; return 0;
    case PYJ_STRING: return item->bad_utf8 ? -1 : py_float(item->text, item->len, out);
    case PYJ_FLOAT:
        if (strcmp(item->text, "NaN") == 0) *out = NAN;
        else if (strcmp(item->text, "Infinity") == 0) *out = HUGE_VAL;
        else if (strcmp(item->text, "-Infinity") == 0) *out = -HUGE_VAL;
        else *out = strtod(item->text, NULL);
        return 0;
    case PYJ_INT: /* float(int): OverflowError past the largest double */
        *out = strtod(item->text, NULL);
        return isinf(*out) ? -1 : 0;
    default: return -1;
    }
}

/* one Python literal of the oracle's list: a quoted string ('...' or "...", escapes \\ \' \" only) or
   a number (its characters up to the next separator, read by float() later) */
static int pylit_item(Pj *p, PyjItem *item) {
    memset(item, 0, sizeof *item);
    char q = p->s[p->i];
    size_t i0 = p->i;
    item->text = malloc(p->n - i0 + 1); /* the rest of the text: more than the item needs */
    if (q == '\'' || q == '"') {
        item->kind = PYJ_STRING;
        for (p->i++; p->i < p->n && p->s[p->i] != q; p->i++) {
            char c = p->s[p->i];
            if (c == '\\') {
                if (p->i + 1 >= p->n || !strchr("\\'\"", p->s[p->i + 1]) || !p->s[p->i + 1]) return -1;
                c = p->s[++p->i];
            }
            item->text[item->len++] = c;
        }
        if (p->i >= p->n) return -1;
        p->i++;
    } else {
        item->kind = PYJ_STRING; /* float() of the literal's text equals the literal's value */
        while (p->i < p->n && p->s[p->i] && strchr("+-0123456789.eE_", p->s[p->i])) p->i++;
        if (p->i == i0) return -1;
        item->len = p->i - i0;
        memcpy(item->text, p->s + i0, item->len);
    }
    item->text[item->len] = 0;
    return 0;
}

int pyj_parse_pylist(const char *s, size_t n, PyjItem **items, size_t *count) {
    Pj p = {s, n, 0, 0};
    size_t cap = 8;
    *items = malloc(cap * sizeof **items);
    *count = 0;
    pj_ws(&p);
    if (p.i >= n || s[p.i++] != '[') goto fail;
    for (pj_ws(&p); p.i < n && s[p.i] != ']'; pj_ws(&p)) {
        if (*count == cap) *items = realloc(*items, (cap *= 2) * sizeof **items);
        if (pylit_item(&p, &(*items)[(*count)++]) != 0) goto fail;
        pj_ws(&p);
        if (p.i < n && s[p.i] == ',') p.i++;
        else if (p.i >= n || s[p.i] != ']') goto fail;
    }
    if (p.i >= n) goto fail;
    p.i++;
    pj_ws(&p);
    if (p.i == n) return 1;
fail:
    pyj_free(*items, *count);
    *items = NULL;
    *count = 0;
    return -1;
}
