/* deck.c — from deck bytes to a validated Config: typed resolution of every
 * key through the table in keys.c, defaults, range checks, cross-key checks,
 * the one error message a bad deck gets (with a nearest-key suggestion),
 * reading the file on rank 0 and broadcasting it, the resolved deck as text,
 * and the markdown reference generated from the table.
 *
 * Policy: stop at the first error, in file order (lexing and each key's
 * value, line by line), then missing required keys, then cross-key checks.
 * One message is simpler for users to act on and for tests to pin down.
 * Values are resolved into a local Config that is copied out only when the
 * whole deck is good, so a caller never sees a half-resolved config.
 */
#define _POSIX_C_SOURCE 200809L /* fileno, fstat, strnlen */

#include "nereus/deck.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nereus/plan.h"
#include "deck_int.h"

/* Room for the error line and the note line, each with a path up to PATH_MAX. */
#define DECK_MSG_MAX 10240

struct Deck {
    char *path;        /* as given, used in every message */
    char *text;        /* the deck bytes, NUL-terminated copy */
    size_t len;
    int *key_line;     /* [deck_nkeys]: where the key was set: its line (> 0), command-line override i
                        * (−1 − i: deck_override_source), or 0 = defaulted */
    DeckOverride *ov;  /* [nov] the command-line overrides (copies) */
    char **ov_where;   /* [nov] how messages name each: "--set ppo.steps=3", "--restart FILE" */
    int nov;
    int *section_line; /* [deck_nsections]: line of the first header, 0 = absent */
    char *msg;         /* [DECK_MSG_MAX]: last message. Behind a pointer so that
                        * deck_error_at, which takes a const Deck, can record it. */
    int quiet;         /* do not print (tests; ranks other than 0) */
};

/* ---- small helpers ------------------------------------------------------ */

static Deck *deck_new(const char *path, int quiet)
{
    Deck *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    const char *p = path ? path : "<string>";
    d->path = malloc(strlen(p) + 1);
    d->key_line = calloc(deck_nkeys, sizeof *d->key_line);
    d->section_line = calloc(deck_nsections, sizeof *d->section_line);
    d->msg = calloc(DECK_MSG_MAX, 1);
    if (!d->path || !d->key_line || !d->section_line || !d->msg) {
        deck_free(d);
        return NULL;
    }
    strcpy(d->path, p);
    d->quiet = quiet;
    return d;
}

/* Copies the overrides into d (their strings are the caller's); returns -1 when out of memory. */
static int deck_keep_overrides(Deck *d, const DeckOverride *ov, int nov)
{
    if (nov <= 0) return 0;
    d->ov = calloc((size_t)nov, sizeof *d->ov);
    d->ov_where = calloc((size_t)nov, sizeof *d->ov_where);
    if (!d->ov || !d->ov_where) return -1;
    d->nov = nov;
    for (int i = 0; i < nov; i++) {
        size_t n = strlen(ov[i].option) + strlen(ov[i].arg) + (ov[i].where ? strlen(ov[i].where) : 0) + 2;
        d->ov_where[i] = malloc(n);
        if (!d->ov_where[i]) return -1;
        if (ov[i].where) snprintf(d->ov_where[i], n, "%s", ov[i].where);
        else snprintf(d->ov_where[i], n, "%s %s", ov[i].option, ov[i].arg);
        d->ov[i] = ov[i];
    }
    return 0;
}

void deck_free(Deck *d)
{
    if (!d) return;
    for (int i = 0; i < d->nov; i++) free(d->ov_where[i]);
    free(d->ov);
    free(d->ov_where);
    free(d->path);
    free(d->text);
    free(d->key_line);
    free(d->section_line);
    free(d->msg);
    free(d);
}

/* The source of a value that a command-line override set: what key_line holds for override i. */
static int deck_override_source(int i) { return -1 - i; }

/* Records (and unless quiet prints) "PATH:LINE: error: MSG", with an
 * optional second line "PATH:LINE: note: NOTE". line 0 = no line; a
 * negative line is an override's source (deck_override_source): the
 * message names the option instead, "--set ppo.steps=x: error: MSG".
 * Returns 2. */
/* "PATH:LINE", "PATH" (line 0) or the override's source (a negative line) into buf */
static const char *deck_where(const Deck *d, int line, char *buf, size_t len)
{
    if (line < 0) snprintf(buf, len, "%s", d->ov_where[-1 - line]);
    else if (line > 0) snprintf(buf, len, "%s:%d", d->path, line);
    else snprintf(buf, len, "%s", d->path);
    return buf;
}

static int deck_vreport(const Deck *d, int line, const char *note, const char *fmt, va_list ap)
{
    char body[2048], where[1100];
    vsnprintf(body, sizeof body, fmt, ap);
    deck_where(d, line, where, sizeof where);
    int n = snprintf(d->msg, DECK_MSG_MAX, "%s: error: %s", where, body);
    if (note && n >= 0 && (size_t)n < DECK_MSG_MAX)
        snprintf(d->msg + n, DECK_MSG_MAX - (size_t)n, "\n%s: note: %s", where, note);
    if (!d->quiet) {
        fprintf(stderr, "%s\n", d->msg);
        fflush(stderr);
    }
    return DECK_EXIT_BAD;
}

static int deck_report(const Deck *d, int line, const char *note, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int deck_report(const Deck *d, int line, const char *note, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = deck_vreport(d, line, note, fmt, ap);
    va_end(ap);
    return rc;
}

/* The value as written, clipped for a message. */
#define DECK_CLIP(buf, s, n) \
    char buf[80];            \
    deck_clip(buf, sizeof buf, (s), (n))

/* A bound as people write it: 1000000, not 1e+06; 0.5 and 1e-08 as %g. */
static void deck_bound_text(double v, char *buf, size_t n)
{
    if (v == floor(v) && fabs(v) < 1e15) snprintf(buf, n, "%.0f", v);
    else snprintf(buf, n, "%g", v);
}

/* "> 0 and ≤ 10", "≥ 0", "" (no bounds): the explicit bounds of a numeric key. */
static void deck_range_phrase(const DeckKey *k, char *buf, size_t n)
{
    char lo[48] = "", hi[48] = "", v[32];
    if (k->lo_kind != DECK_B_NONE) {
        deck_bound_text(k->lo, v, sizeof v);
        snprintf(lo, sizeof lo, "%s %s", k->lo_kind == DECK_B_INCL ? "≥" : ">", v);
    }
    if (k->hi_kind != DECK_B_NONE) {
        deck_bound_text(k->hi, v, sizeof v);
        snprintf(hi, sizeof hi, "%s %s", k->hi_kind == DECK_B_INCL ? "≤" : "<", v);
    }
    snprintf(buf, n, "%s%s%s", lo, (*lo && *hi) ? " and " : "", hi);
}

/* "a, b, c" (sep ", ") or "`a`, `b`" (tick = 1) from "a|b|c". */
static void deck_choices_phrase(const char *choices, int tick, char *buf, size_t n)
{
    size_t o = 0;
    buf[0] = '\0';
    for (const char *c = choices; *c && o + 1 < n;) {
        const char *bar = strchr(c, '|');
        size_t len = bar ? (size_t)(bar - c) : strlen(c);
        int w = snprintf(buf + o, n - o, "%s%s%.*s%s", o ? ", " : "", tick ? "`" : "", (int)len, c,
                         tick ? "`" : "");
        if (w < 0) break;
        o += (size_t)w;
        if (o >= n) { buf[n - 1] = '\0'; break; }
        c = bar ? bar + 1 : c + len;
    }
}

/* What a key accepts, for messages: "an integer, ≥ 1 and ≤ 4096". */
static void deck_expect_phrase(const DeckKey *k, char *buf, size_t n)
{
    char r[128], ch[128];
    deck_range_phrase(k, r, sizeof r);
    switch (k->type) {
    case DECK_T_INT:
    case DECK_T_INT64: snprintf(buf, n, "an integer%s%s", *r ? ", " : "", r); break;
    case DECK_T_INT_AUTO: snprintf(buf, n, "auto, or an integer%s%s", *r ? ", " : "", r); break;
    case DECK_T_FLOAT:
    case DECK_T_DOUBLE: snprintf(buf, n, "a finite number%s%s", *r ? ", " : "", r); break;
    case DECK_T_BOOL: snprintf(buf, n, "true/false, yes/no, on/off or 1/0"); break;
    case DECK_T_STRING: snprintf(buf, n, "a string"); break;
    case DECK_T_CHOICE:
        deck_choices_phrase(k->choices, 0, ch, sizeof ch);
        snprintf(buf, n, "one of %s", ch);
        break;
    case DECK_T_LIST:
        deck_choices_phrase(k->choices, 0, ch, sizeof ch);
        snprintf(buf, n, "a comma list of distinct items of %s", ch);
        break;
    case DECK_T_PLAN: snprintf(buf, n, "a layout such as 'tp2 pp1 dp4 @ 0-7', or 'default'"); break;
    }
}

static int deck_in_range(const DeckKey *k, double v)
{
    if (k->lo_kind == DECK_B_INCL && !(v >= k->lo)) return 0;
    if (k->lo_kind == DECK_B_EXCL && !(v > k->lo)) return 0;
    if (k->hi_kind == DECK_B_INCL && !(v <= k->hi)) return 0;
    if (k->hi_kind == DECK_B_EXCL && !(v < k->hi)) return 0;
    return 1;
}

static int deck_is_one_of(const char *choices, const char *s, size_t len)
{
    for (const char *c = choices; *c;) {
        const char *bar = strchr(c, '|');
        size_t clen = bar ? (size_t)(bar - c) : strlen(c);
        if (clen == len && memcmp(c, s, len) == 0) return 1;
        c = bar ? bar + 1 : c + clen;
    }
    return 0;
}

static int deck_ieq(const char *a, const char *s, size_t len)
{
    if (strlen(a) != len) return 0;
    for (size_t i = 0; i < len; i++)
        if (tolower((unsigned char)s[i]) != a[i]) return 0;
    return 1;
}

/* ---- typed values --------------------------------------------------------- */

/* Decimal integer over the whole token. Returns 0 ok, 1 no digits, 2 junk
 * after the digits (*stop = where), 3 overflow of long long. */
static int deck_parse_ll(const char *s, size_t n, long long *out, size_t *stop)
{
    size_t i = 0;
    int neg = 0;
    if (i < n && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    size_t d0 = i;
    unsigned long long acc = 0, lim = neg ? (unsigned long long)LLONG_MAX + 1u : (unsigned long long)LLONG_MAX;
    int over = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
        unsigned dig = (unsigned)(s[i] - '0');
        if (acc > (lim - dig) / 10) over = 1;
        else acc = acc * 10 + dig;
        i++;
    }
    *stop = i;
    if (i == d0) return 1;
    if (i < n) return 2;
    if (over) return 3;
    *out = neg ? (acc == (unsigned long long)LLONG_MAX + 1u ? LLONG_MIN : -(long long)acc) : (long long)acc;
    return 0;
}

static int deck_set_int(const Deck *d, const DeckKey *k, const char *v, size_t n, int line, void *field)
{
    DECK_CLIP(shown, v, n);
    char exp[192], r[128];
    deck_expect_phrase(k, exp, sizeof exp);
    deck_range_phrase(k, r, sizeof r);
    if (k->type == DECK_T_INT_AUTO && n == 4 && memcmp(v, "auto", 4) == 0) {
        *(int *)field = 0;
        return 0;
    }
    long long x = 0;
    size_t stop = 0;
    int rc = deck_parse_ll(v, n, &x, &stop);
    if (rc == 1)
        return deck_report(d, line, NULL, "[%s] %s = %s is not an integer (expected %s)", k->section, k->key, shown,
                           exp);
    if (rc == 2) {
        DECK_CLIP(num, v, stop);
        DECK_CLIP(junk, v + stop, n - stop);
        return deck_report(d, line, NULL,
                           "[%s] %s = %s is not an integer: unexpected '%s' after %s (expected %s)", k->section,
                           k->key, shown, junk, num, exp);
    }
    int beyond = rc == 3; /* past a 64-bit integer: a bound of the key's range, else of its field, names it */
    if (beyond) x = v[0] == '-' ? LLONG_MIN : LLONG_MAX;
    if (!deck_in_range(k, beyond ? (x < 0 ? -HUGE_VAL : HUGE_VAL) : (double)x))
        return deck_report(d, line, NULL, "[%s] %s = %s is out of range (must be %s)", k->section, k->key, shown,
                           *r ? r : "a 64-bit integer");
    if (k->type == DECK_T_INT64 && beyond)
        return deck_report(d, line, NULL, "[%s] %s = %s is out of range (must be %s%s%s %lld)", k->section, k->key,
                           shown, r, *r ? " and " : "", x > 0 ? "≤" : "≥", x);
    if (k->type == DECK_T_INT64) {
        *(long long *)field = x;
        return 0;
    }
    /* keys with no upper bound still have the one of an int field */
    if (x > INT_MAX || x < INT_MIN)
        return deck_report(d, line, NULL, "[%s] %s = %s is out of range (must be %s%s%s %d)", k->section, k->key,
                           shown, r, *r ? " and " : "", x > INT_MAX ? "≤" : "≥", x > INT_MAX ? INT_MAX : INT_MIN);
    *(int *)field = (int)x;
    return 0;
}

/* A finite number over the whole token, in the key's range, into *out. */
static int deck_parse_number(const Deck *d, const DeckKey *k, const char *v, size_t n, int line, double *out)
{
    DECK_CLIP(shown, v, n);
    char exp[192], r[128];
    deck_expect_phrase(k, exp, sizeof exp);
    deck_range_phrase(k, r, sizeof r);
    /* strtod needs a terminated string; the value may be any length */
    char *buf = malloc(n + 1);
    if (!buf) return deck_report(d, line, NULL, "out of memory reading [%s] %s", k->section, k->key);
    memcpy(buf, v, n);
    buf[n] = '\0';
    char *end = NULL;
    errno = 0;
    double x = strtod(buf, &end);
    size_t stop = (size_t)(end - buf);
    free(buf);
    /* strtod skips leading space; the lexer trimmed it, so stop == 0 is "no number" */
    if (stop == 0 || isspace((unsigned char)v[0]))
        return deck_report(d, line, NULL, "[%s] %s = %s is not a number (expected %s)", k->section, k->key, shown,
                           exp);
    if (stop < n) {
        DECK_CLIP(num, v, stop);
        DECK_CLIP(junk, v + stop, n - stop);
        return deck_report(d, line, NULL, "[%s] %s = %s is not a number: unexpected '%s' after %s (expected %s)",
                           k->section, k->key, shown, junk, num, exp);
    }
    if (!isfinite(x))
        return deck_report(d, line, NULL, "[%s] %s = %s is not a finite number (expected %s)", k->section, k->key,
                           shown, exp);
    if (!deck_in_range(k, x))
        return deck_report(d, line, NULL, "[%s] %s = %s is out of range (must be %s)", k->section, k->key, shown,
                           *r ? r : "finite");
    *out = x;
    return 0;
}

static int deck_set_float(const Deck *d, const DeckKey *k, const char *v, size_t n, int line, float *field)
{
    double x = 0;
    int rc = deck_parse_number(d, k, v, n, line, &x);
    if (rc) return rc;
    DECK_CLIP(shown, v, n);
    char r[128];
    deck_range_phrase(k, r, sizeof r);
    float f = (float)x;
    if (!isfinite(f))
        return deck_report(d, line, NULL, "[%s] %s = %s is too large for a 32-bit float (at most %g)", k->section,
                           k->key, shown, (double)3.40282347e38f);
    /* the field is a float: the value that is used must be in range too
     * (1e-50 for a "> 0" key becomes 0, 0.999999999 for "< 1" becomes 1) */
    if (!deck_in_range(k, (double)f))
        return deck_report(d, line, NULL,
                           "[%s] %s = %s rounds to %.9g as a 32-bit float, which is out of range (must be %s)",
                           k->section, k->key, shown, (double)f, r);
    *field = f;
    return 0;
}

static int deck_set_list(const Deck *d, const DeckKey *k, const char *v, size_t n, int line, char *field)
{
    DECK_CLIP(shown, v, n);
    char ch[128];
    deck_choices_phrase(k->choices, 0, ch, sizeof ch);
    char out[CFG_STR];
    size_t o = 0;
    const char *p = v, *e = v + n;
    for (;;) {
        const char *comma = memchr(p, ',', (size_t)(e - p));
        const char *ie = comma ? comma : e, *is = p;
        while (is < ie && (*is == ' ' || *is == '\t')) is++;
        while (ie > is && (ie[-1] == ' ' || ie[-1] == '\t')) ie--;
        size_t len = (size_t)(ie - is);
        DECK_CLIP(item, is, len);
        if (len == 0)
            return deck_report(d, line, NULL,
                               "[%s] %s = %s has an empty item (write items of %s separated by single commas)",
                               k->section, k->key, shown, ch);
        if (!deck_is_one_of(k->choices, is, len))
            return deck_report(d, line, NULL, "[%s] %s: '%s' is not one of %s", k->section, k->key, item, ch);
        /* distinct: look for the item in what is stored so far */
        for (const char *q = out; o && q < out + o;) {
            const char *qc = memchr(q, ',', (size_t)(out + o - q));
            size_t ql = qc ? (size_t)(qc - q) : (size_t)(out + o - q);
            if (ql == len && memcmp(q, is, len) == 0)
                return deck_report(d, line, NULL, "[%s] %s = %s lists '%s' twice", k->section, k->key, shown,
                                   item);
            q += ql + 1;
        }
        if (o + (o ? 1 : 0) + len + 1 > k->size || k->size > sizeof out)
            return deck_report(d, line, NULL, "[%s] %s is too long (at most %zu bytes)", k->section, k->key,
                               k->size - 1);
        if (o) out[o++] = ',';
        memcpy(out + o, is, len);
        o += len;
        if (!comma) break;
        p = comma + 1;
    }
    out[o] = '\0';
    memcpy(field, out, o + 1);
    return 0;
}

/* Resolves one value (from the deck, or a default when line is 0) into c. */
static int deck_set(const Deck *d, const DeckKey *k, const char *v, size_t n, int quoted, int line, Config *c)
{
    void *field = (char *)c + k->offset;
    char exp[192];
    deck_expect_phrase(k, exp, sizeof exp);
    DECK_CLIP(shown, v, n);
    int stringy = k->type == DECK_T_STRING || k->type == DECK_T_CHOICE || k->type == DECK_T_LIST;
    if (quoted && !stringy)
        return deck_report(d, line, NULL, "[%s] %s = \"%s\" is quoted, but only strings are (expected %s)",
                           k->section, k->key, shown, exp);
    if (n == 0 && k->type != DECK_T_STRING)
        return deck_report(d, line, NULL, "[%s] %s has an empty value (expected %s)", k->section, k->key, exp);
    switch (k->type) {
    case DECK_T_INT:
    case DECK_T_INT64:
    case DECK_T_INT_AUTO: return deck_set_int(d, k, v, n, line, field);
    case DECK_T_FLOAT: return deck_set_float(d, k, v, n, line, field);
    case DECK_T_DOUBLE: return deck_parse_number(d, k, v, n, line, field);
    case DECK_T_BOOL: {
        static const char *const yes[] = {"true", "yes", "on", "1"}, *const no[] = {"false", "no", "off", "0"};
        for (size_t i = 0; i < 4; i++) {
            if (deck_ieq(yes[i], v, n)) { *(int *)field = 1; return 0; }
            if (deck_ieq(no[i], v, n)) { *(int *)field = 0; return 0; }
        }
        return deck_report(d, line, NULL, "[%s] %s = %s is not a boolean (expected %s)", k->section, k->key, shown,
                           exp);
    }
    case DECK_T_CHOICE:
        if (!deck_is_one_of(k->choices, v, n))
            return deck_report(d, line, NULL, "[%s] %s = %s is not allowed (expected %s)", k->section, k->key,
                               shown, exp);
        memcpy(field, v, n);
        ((char *)field)[n] = '\0';
        return 0;
    case DECK_T_LIST: return deck_set_list(d, k, v, n, line, field);
    case DECK_T_PLAN: {
        char why[256];
        if (plan_stage_parse(v, n, (PlanStage *)field, why, sizeof why))
            return deck_report(d, line, NULL, "[%s] %s = %s: %s", k->section, k->key, shown, why);
        return 0;
    }
    case DECK_T_STRING:
        /* no escapes, so a quote inside could not be written back out */
        if (memchr(v, '"', n))
            return deck_report(d, line, NULL,
                               "[%s] %s = %s contains a '\"' (double quotes may only enclose the whole value)",
                               k->section, k->key, shown);
        if (n + 1 > k->size)
            return deck_report(d, line, NULL, "[%s] %s is too long (%zu bytes; at most %zu)", k->section, k->key,
                               n, k->size - 1);
        memcpy(field, v, n);
        ((char *)field)[n] = '\0';
        return 0;
    }
    return deck_report(d, line, NULL, "[%s] %s: internal error: unknown type", k->section, k->key);
}

/* ---- suggestions ---------------------------------------------------------- */

/* Case-insensitive Levenshtein distance; a is at most 128 bytes. */
static size_t deck_lev(const char *a, size_t n, const char *b, size_t m)
{
    size_t row[129];
    for (size_t i = 0; i <= n; i++) row[i] = i;
    for (size_t j = 1; j <= m; j++) {
        size_t diag = row[0];
        row[0] = j;
        for (size_t i = 1; i <= n; i++) {
            size_t up = row[i];
            size_t cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            size_t best = diag + cost;
            if (row[i] + 1 < best) best = row[i] + 1;
            if (row[i - 1] + 1 < best) best = row[i - 1] + 1;
            row[i] = best;
            diag = up;
        }
    }
    return row[n];
}

static size_t deck_lev_limit(size_t len) { return len / 3 > 2 ? len / 3 : 2; }

/* Note for an unknown key: the same key name in other sections first (it
 * was put under the wrong header), else the nearest "section.key". sec is
 * the current section index, or -1 outside any section. */
static int deck_suggest_key(int sec, const char *name, size_t len, char *note, size_t n)
{
    int hits[3], nh = 0;
    for (size_t i = 0; i < deck_nkeys && nh < 3; i++)
        if (deck_ieq(deck_keys[i].key, name, len)) hits[nh++] = (int)i;
    if (nh > 0) {
        size_t o = (size_t)snprintf(note, n, "did you mean");
        for (int h = 0; h < nh && o < n; h++)
            o += (size_t)snprintf(note + o, n - o, "%s '%s.%s'", h ? " or" : "", deck_keys[hits[h]].section,
                                  deck_keys[hits[h]].key);
        if (o < n) snprintf(note + o, n - o, "?");
        return 1;
    }
    char q[160];
    int dotted = memchr(name, '.', len) != NULL;
    if (len > 100) return 0;
    if (sec >= 0) snprintf(q, sizeof q, "%s.%.*s", deck_sections[sec], (int)len, name);
    else snprintf(q, sizeof q, "%.*s", (int)len, name);
    size_t qlen = strlen(q), best = (size_t)-1;
    int bi = -1;
    for (size_t i = 0; i < deck_nkeys; i++) {
        char cand[160];
        if (sec >= 0 || dotted) snprintf(cand, sizeof cand, "%s.%s", deck_keys[i].section, deck_keys[i].key);
        else snprintf(cand, sizeof cand, "%s", deck_keys[i].key);
        size_t dist = deck_lev(q, qlen, cand, strlen(cand));
        if (dist < best) { best = dist; bi = (int)i; }
    }
    if (bi < 0 || best > deck_lev_limit(qlen)) return 0;
    snprintf(note, n, "did you mean '%s.%s'?", deck_keys[bi].section, deck_keys[bi].key);
    return 1;
}

static int deck_suggest_section(const char *name, size_t len, char *note, size_t n)
{
    if (len > 100) return 0;
    size_t best = (size_t)-1;
    int bi = -1;
    for (size_t i = 0; i < deck_nsections; i++) {
        const char *s = deck_sections[i];
        size_t sl = strlen(s);
        size_t dist = deck_lev(name, len, s, sl);
        /* "[optimizer]" for [optim], "[models]" for [model]: a known name as a prefix */
        if (dist > deck_lev_limit(len) && len >= 3 && len > sl && deck_lev(name, sl, s, sl) == 0) dist = 1;
        if (dist < best) { best = dist; bi = (int)i; }
    }
    if (bi < 0 || best > deck_lev_limit(len)) return 0;
    snprintf(note, n, "did you mean '[%s]'?", deck_sections[bi]);
    return 1;
}

/* ---- resolution ------------------------------------------------------------ */

/* "tiny" for "inputs/tiny.deck": the default [run] name. */
static void deck_stem(const char *path, char *out, size_t n)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t len = (dot && dot != base) ? (size_t)(dot - base) : strlen(base);
    if (len >= n) len = n - 1; /* a file name is at most NAME_MAX (255) < CFG_STR */
    memcpy(out, base, len);
    out[len] = '\0';
}

/* Model-stages that a plan section lists (src != PLAN_SRC_NONE). */
static int deck_plan_listed(const PlanConfig *p)
{
    int n = 0;
    for (int i = 0; i < PLAN_NSTAGES; i++) n += p->stage[i].src != PLAN_SRC_NONE;
    return n;
}

/* The deck's own check of a plan section ([plan], [switch]): with default =
 * auto a plan is all seven model-stages or none (plan.h). The checks against
 * the job are plan_resolve's: after the deck for [plan], at the switch for
 * [switch]. */
static int deck_check_plan(const Deck *d, const char *sec, const PlanConfig *p, int no_critic)
{
    if (strcmp(p->fill, "auto") != 0) return 0;
    int listed = deck_plan_listed(p);
    if (listed == 0 || listed == plan_stage_count(no_critic)) return 0;
    char missing[160] = "";
    size_t o = 0;
    for (int i = 0; i < PLAN_NSTAGES; i++)
        if (plan_stage_in_set(i, no_critic) && p->stage[i].src == PLAN_SRC_NONE && o < sizeof missing)
            o += (size_t)snprintf(missing + o, sizeof missing - o, "%s%s", o ? ", " : "", plan_stage_name(i));
    return deck_report(d, d->section_line[deck_section_find(sec, strlen(sec))], NULL,
                       "[%s] leaves %s without ranks (with default = auto every model-stage must be "
                       "listed; or set default = colocated or disaggregated to fill the rest)",
                       sec, missing);
}

/* [switch]: a step and a plan come together. A plan is a listed model-stage
 * or a default other than auto (which then supplies every model-stage). */
static int deck_check_switch(const Deck *d, const SwitchConfig *s, int no_critic)
{
    int listed = deck_plan_listed(&s->plan), filled = strcmp(s->plan.fill, "auto") != 0;
    int step_line = d->key_line[deck_key_find_dotted("switch.step")];
    int sec_line = d->section_line[deck_section_find("switch", 6)];
    if (s->step < 0 && listed > 0)
        return deck_report(d, step_line ? step_line : sec_line, NULL,
                           "[switch] lists a plan but no step (set step = N to switch before PPO step N)");
    if (s->step < 0 && filled)
        return deck_report(d, step_line ? step_line : sec_line, NULL,
                           "[switch] default = %s makes a plan but there is no step (set step = N to switch "
                           "before PPO step N)",
                           s->plan.fill);
    if (s->step >= 0 && listed == 0 && !filled)
        return deck_report(d, step_line, NULL,
                           "[switch] step = %d needs a plan: list the model-stages (or set default = "
                           "colocated|disaggregated)",
                           s->step);
    return deck_check_plan(d, "switch", &s->plan, no_critic);
}

/* The [model] keys that only the Llama family reads (keys.c says so in arch's meaning). */
static const char *const deck_llama_keys[] = {
    "n_kv_head", "head_dim", "ffn_dim", "rope_theta", "rope_scaling_factor", "rope_low_freq_factor", "rope_high_freq_factor",
    "rope_original_max_seq", "norm_eps", "tie_embeddings", "qkv_bias", "qk_norm"};

static int deck_model_line(const Deck *d, const char *key)
{
    return d->key_line[deck_key_find("model", 5, key, strlen(key))];
}

static void deck_format_value(const DeckKey *k, const Config *c, char *buf, size_t n);

/* 1 when the deck sets [model] key to a value other than its default. The default itself is accepted under
 * every arch, so that a resolved deck (which lists every key) reads back. */
static int deck_model_key_changed(const Deck *d, const Config *c, const char *key)
{
    int i = deck_key_find("model", 5, key, strlen(key));
    if (!d->key_line[i]) return 0;
    const DeckKey *k = &deck_keys[i];
    Config *def = calloc(1, sizeof *def);
    if (!def) return 1;
    char have[64], want[64] = "";
    deck_format_value(k, c, have, sizeof have);
    if (deck_set(d, k, k->def, strlen(k->def), 0, 0, def) == 0) deck_format_value(k, def, want, sizeof want);
    free(def);
    return strcmp(have, want) != 0;
}

/* arch = gpt2 refuses a Llama-family key set to other than its default; the Llama family needs
 * n_kv_head | n_head and, with Llama-3 RoPE scaling, low < high frequency factor. */
static int deck_check_arch_keys(const Deck *d, const Config *c)
{
    const ModelConfig *m = &c->model;
    if (strcmp(m->arch, "gpt2") == 0) {
        for (size_t i = 0; i < sizeof deck_llama_keys / sizeof deck_llama_keys[0]; i++)
            if (deck_model_key_changed(d, c, deck_llama_keys[i]))
                return deck_report(d, deck_model_line(d, deck_llama_keys[i]), NULL,
                                   "[model] %s applies to the Llama family (arch = llama, qwen2 or qwen3), not to "
                                   "arch = gpt2",
                                   deck_llama_keys[i]);
        return 0;
    }
    if (m->n_kv_head > 0 && m->n_head % m->n_kv_head != 0)
        return deck_report(d, deck_model_line(d, "n_kv_head"), NULL,
                           "[model] n_kv_head = %d does not divide n_head = %d (each key/value head serves a whole "
                           "group of query heads)",
                           m->n_kv_head, m->n_head);
    if (m->rope_scaling_factor > 0 && m->rope_low_freq_factor >= m->rope_high_freq_factor) {
        int line = deck_model_line(d, "rope_high_freq_factor");
        return deck_report(d, line ? line : deck_model_line(d, "rope_low_freq_factor"), NULL,
                           "[model] rope_low_freq_factor = %g must be below rope_high_freq_factor = %g",
                           m->rope_low_freq_factor, m->rope_high_freq_factor);
    }
    return 0;
}

/* The Llama family's plans are checked with GPT-2's (plan.c: tp must also divide n_kv_head and the MLP
 * width), at the plan's line. */
static int deck_check_arch(const Deck *d, const Config *c)
{
    return deck_check_arch_keys(d, c);
}

/* [ppo] process_baseline = position and group_std_scope = batch change GRPO's advantages only: refused at their
 * line where nothing would read them (ppo, outcome credit, or no std to scope). */
static int deck_check_grpo_advantage_keys(const Deck *d, const Config *c)
{
    const PpoConfig *p = &c->ppo;
    int grpo = strcmp(p->algorithm, "grpo") == 0, process = strcmp(p->credit, "process") == 0;
    if (strcmp(p->process_baseline, "position") == 0 && !(grpo && process))
        return deck_report(d, d->key_line[deck_key_find_dotted("ppo.process_baseline")], NULL,
                           "[ppo] process_baseline = position needs algorithm = grpo and credit = process (it is "
                           "GRPO's baseline of per-position credits); algorithm = %s, credit = %s", p->algorithm,
                           p->credit);
    if (strcmp(p->group_std_scope, "batch") == 0 && !(grpo && p->group_std))
        return deck_report(d, d->key_line[deck_key_find_dotted("ppo.group_std_scope")], NULL,
                           "[ppo] group_std_scope = batch needs algorithm = grpo and group_std = true (it says "
                           "which standard deviation GRPO divides by); algorithm = %s, group_std = %s", p->algorithm,
                           p->group_std ? "true" : "false");
    return 0;
}

/* [ppo] algorithm and group_size: grpo samples group_size >= 2 responses per prompt, and they divide the
 * batch; ppo takes one response per prompt. A critic model-stage in a GRPO deck's [plan] or [switch] is refused
 * at its line (GRPO has no critic). */
static int deck_check_algorithm(const Deck *d, const Config *c)
{
    const PpoConfig *p = &c->ppo;
    int grpo = strcmp(p->algorithm, "grpo") == 0;
    int gline = d->key_line[deck_key_find_dotted("ppo.group_size")];
    int aline = d->key_line[deck_key_find_dotted("ppo.algorithm")];
    if (!grpo && p->group_size != 1)
        return deck_report(d, gline, NULL, "[ppo] group_size = %d needs algorithm = grpo (ppo samples one response "
                           "per prompt; group_size = 1)", p->group_size);
    if (grpo && p->group_size < 2)
        return deck_report(d, gline ? gline : aline, NULL,
                           "[ppo] algorithm = grpo needs group_size >= 2 (a group of one response has no "
                           "group-relative advantage); group_size = %d", p->group_size);
    if (grpo && p->batch % p->group_size != 0) {
        int line = gline ? gline : d->key_line[deck_key_find_dotted("ppo.batch")];
        return deck_report(d, line, NULL, "[ppo] group_size = %d does not divide batch = %d (batch counts "
                           "responses: prompts x group_size)", p->group_size, p->batch);
    }
    int rc = deck_check_grpo_advantage_keys(d, c);
    if (rc) return rc;
    if (strcmp(p->credit, "process") == 0 && c->reward.network && c->reward.network_weight != 0.0f) {
        int line = d->key_line[deck_key_find_dotted("ppo.credit")];
        return deck_report(d, line, NULL, "[ppo] credit = process cannot take the reward network's score "
                           "([reward] network = true, network_weight = %g): the network scores whole responses, "
                           "so its score has no per-position credits", c->reward.network_weight);
    }
    if (strcmp(p->correction, "none") == 0 && p->tis_cap > 0.0f)
        return deck_report(d, d->key_line[deck_key_find_dotted("ppo.correction")], NULL,
                           "[ppo] correction = none contradicts tis_cap = %g (the truncated importance weights are "
                           "the correction): drop one of the two", p->tis_cap);
    if (!grpo) return 0;
    const char *secs[2] = {"plan", "switch"};
    const PlanConfig *plans[2] = {&c->plan, &c->sw.plan};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < PLAN_NSTAGES; i++) {
            if (!plan_stage_is_critic_model(i) || plans[k]->stage[i].src == PLAN_SRC_NONE) continue;
            const char *name = plan_stage_name(i);
            return deck_report(d, d->key_line[deck_key_find(secs[k], strlen(secs[k]), name, strlen(name))], NULL,
                               "[%s] %s: algorithm = grpo has no critic (its model-stages are actor.gen, "
                               "actor.inf, actor.train, ref.inf, reward.inf); remove this line", secs[k], name);
        }
    return 0;
}

static int deck_cross_checks(const Deck *d, const Config *c)
{
    int rc = deck_check_arch(d, c);
    if (rc) return rc;
    rc = deck_check_algorithm(d, c);
    if (rc) return rc;
    int li = deck_key_find_dotted("model.n_head");
    if (c->model.n_embd % c->model.n_head != 0)
        return deck_report(d, d->key_line[li], NULL,
                           "[model] n_head = %d does not divide n_embd = %d (n_embd must be a multiple of n_head)",
                           c->model.n_head, c->model.n_embd);
    if (c->ppo.batch % c->ppo.minibatch != 0) {
        int line = d->key_line[deck_key_find_dotted("ppo.minibatch")];
        if (!line) line = d->key_line[deck_key_find_dotted("ppo.batch")];
        return deck_report(d, line, NULL,
                           "[ppo] minibatch = %d does not divide batch = %d (batch must be a multiple of minibatch)",
                           c->ppo.minibatch, c->ppo.batch);
    }
    if (strcmp(c->sft.data, "tokens") == 0 && c->sft.tokens_file[0] == '\0')
        return deck_report(d, d->key_line[deck_key_find_dotted("sft.data")], NULL,
                           "[sft] data = tokens needs a token file, but [sft] tokens_file is %s",
                           d->key_line[deck_key_find_dotted("sft.tokens_file")] ? "empty" : "not set");
    if (c->sft.seq != 0 && c->sft.seq > c->model.max_seq)
        return deck_report(d, d->key_line[deck_key_find_dotted("sft.seq")], NULL,
                           "[sft] seq = %d exceeds [model] max_seq = %d (a training sequence must fit the context)",
                           c->sft.seq, c->model.max_seq);
    int no_critic = strcmp(c->ppo.algorithm, "grpo") == 0;
    rc = deck_check_plan(d, "plan", &c->plan, no_critic);
    if (rc) return rc;
    rc = deck_check_switch(d, &c->sw, no_critic);
    if (rc) return rc;
    const TransitionConfig *tx = &c->transition;
    if (tx->window_kib < tx->chunk_kib) {
        int line = d->key_line[deck_key_find_dotted("transition.window_kib")];
        if (!line) line = d->key_line[deck_key_find_dotted("transition.chunk_kib")];
        return deck_report(d, line, NULL,
                           "[transition] window_kib = %d is smaller than chunk_kib = %d (the bytes in flight must "
                           "hold at least one chunk)",
                           tx->window_kib, tx->chunk_kib);
    }
    return 0;
}

static int deck_check_simulate(const Deck *d, const Config *c)
{
    const SimulateConfig *m = &c->sim;
    if (m->batch % m->minibatch != 0) {
        int line = d->key_line[deck_key_find_dotted("simulate.minibatch")];
        if (!line) line = d->key_line[deck_key_find_dotted("simulate.batch")];
        return deck_report(d, line, NULL, "[simulate] minibatch = %d does not divide batch = %d", m->minibatch, m->batch);
    }
    if (m->slow_rank >= m->gpus)
        return deck_report(d, d->key_line[deck_key_find_dotted("simulate.slow_rank")], NULL,
                           "[simulate] slow_rank = %d is not a rank of %d GPUs (0..%d)", m->slow_rank, m->gpus, m->gpus - 1);
    if (m->slow_rank >= 0 && m->slow_to <= m->slow_from)
        return deck_report(d, d->key_line[deck_key_find_dotted("simulate.slow_to")], NULL,
                           "[simulate] slow_to = %d must come after slow_from = %d", m->slow_to, m->slow_from);
    return 0;
}

int deck_is_simulation(const Deck *d) { return d && d->section_line[deck_section_find("simulate", 8)] != 0; }

/* "unknown section [x] (sections are ...)", with the nearest section as a note */
static int deck_unknown_section(const Deck *d, int line, const char *name, size_t len)
{
    char note[256], all[160], shown[80];
    int has = deck_suggest_section(name, len, note, sizeof note);
    size_t o = 0;
    for (size_t i = 0; i < deck_nsections; i++)
        o += (size_t)snprintf(all + o, sizeof all - o, "%s[%s]", i ? " " : "", deck_sections[i]);
    deck_clip(shown, sizeof shown, name, len);
    return deck_report(d, line, has ? note : NULL, "unknown section [%s] (sections are %s)", shown, all);
}

/* "unknown key [section] x", with the nearest key as a note */
static int deck_unknown_key(const Deck *d, int line, int sec, const char *name, size_t len)
{
    char note[256], shown[80];
    int has = deck_suggest_key(sec, name, len, note, sizeof note);
    deck_clip(shown, sizeof shown, name, len);
    return deck_report(d, line, has ? note : NULL, "unknown key [%s] %s", deck_sections[sec], shown);
}

/* The deck's lines in file order: every section header and key, each value resolved into c. */
static int deck_resolve_lines(Deck *d, Config *c)
{
    DeckLexer lx;
    deck_lex_init(&lx, d->text, d->len);
    int sec = -1;
    char err[512], note[256];
    for (;;) {
        DeckTok t = deck_lex_next(&lx, err, sizeof err);
        if (t.kind == DECK_TOK_END) return 0;
        if (t.kind == DECK_TOK_ERROR) return deck_report(d, t.line, NULL, "%s", err);
        if (t.kind == DECK_TOK_SECTION) {
            sec = deck_section_find(t.name, t.name_len);
            if (sec < 0) return deck_unknown_section(d, t.line, t.name, t.name_len);
            if (!d->section_line[sec]) d->section_line[sec] = t.line;
            continue;
        }
        if (sec < 0) {
            DECK_CLIP(name, t.name, t.name_len);
            int has = deck_suggest_key(-1, t.name, t.name_len, note, sizeof note);
            return deck_report(d, t.line, has ? note : NULL,
                               "key '%s' is outside any section (put it under a [section] header)", name);
        }
        int ki = deck_key_find(deck_sections[sec], strlen(deck_sections[sec]), t.name, t.name_len);
        if (ki < 0) return deck_unknown_key(d, t.line, sec, t.name, t.name_len);
        if (d->key_line[ki]) {
            DECK_CLIP(name, t.name, t.name_len);
            return deck_report(d, t.line, NULL, "duplicate key [%s] %s (first set at line %d; a key may appear once)",
                               deck_sections[sec], name, d->key_line[ki]);
        }
        d->key_line[ki] = t.line;
        int rc = deck_set(d, &deck_keys[ki], t.value, t.value_len, t.quoted, t.line, c);
        if (rc) return rc;
    }
}

/* Trims spaces and tabs from both ends of [*s, *s + *n). */
static void deck_trim(const char **s, size_t *n)
{
    while (*n && (**s == ' ' || **s == '\t')) (*s)++, (*n)--;
    while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t')) (*n)--;
}

/* Command-line override i, checked as a deck line is: "section.key=value" (--set) or, when the override
 * names its key, the value alone (--restart). Its value replaces the deck's. */
static int deck_apply_override(Deck *d, int i, Config *c)
{
    const DeckOverride *o = &d->ov[i];
    int src = deck_override_source(i);
    const char *name = o->key ? o->key : o->arg, *v = o->arg, *eq = NULL;
    size_t name_len = strlen(name);
    if (!o->key) {
        eq = strchr(o->arg, '=');
        if (!eq) return deck_report(d, src, NULL, "expected section.key=value (e.g. --set ppo.steps=20)");
        name_len = (size_t)(eq - o->arg);
        v = eq + 1;
    }
    size_t n = strlen(v);
    deck_trim(&name, &name_len);
    deck_trim(&v, &n);
    int quoted = n >= 2 && v[0] == '"' && v[n - 1] == '"';
    if (quoted) v++, n -= 2;
    const char *dot = memchr(name, '.', name_len);
    if (!dot) {
        char note[256];
        DECK_CLIP(shown, name, name_len);
        int has = deck_suggest_key(-1, name, name_len, note, sizeof note);
        return deck_report(d, src, has ? note : NULL, "'%s' names no section (write section.key=value)", shown);
    }
    int sec = deck_section_find(name, (size_t)(dot - name));
    if (sec < 0) return deck_unknown_section(d, src, name, (size_t)(dot - name));
    const char *key = dot + 1;
    size_t key_len = name_len - (size_t)(key - name);
    int ki = deck_key_find(deck_sections[sec], strlen(deck_sections[sec]), key, key_len);
    if (ki < 0) return deck_unknown_key(d, src, sec, key, key_len);
    if (d->key_line[ki] < 0)
        return deck_report(d, src, NULL, "[%s] %s is set twice on the command line (first by %s)", deck_sections[sec],
                           deck_keys[ki].key, d->ov_where[-1 - d->key_line[ki]]);
    d->key_line[ki] = src;
    return deck_set(d, &deck_keys[ki], v, n, quoted, src, c);
}

/* The keys no line or override set: a required one is an error, the others take their defaults. */
static int deck_resolve_defaults(Deck *d, Config *c)
{
    /* a deck with [simulate] is a simulation deck: only [simulate]'s required keys apply (the job's
       sections are not used); any other deck never needs [simulate]'s */
    int sim = d->section_line[deck_section_find("simulate", 8)] != 0;
    for (size_t i = 0; i < deck_nkeys; i++) {
        const DeckKey *k = &deck_keys[i];
        if (d->key_line[i]) continue;
        int in_sim = strcmp(k->section, "simulate") == 0;
        if ((k->flags & DECK_F_REQUIRED) && in_sim == sim) {
            char exp[192];
            deck_expect_phrase(k, exp, sizeof exp);
            int s = deck_section_find(k->section, strlen(k->section));
            return deck_report(d, d->section_line[s], NULL, "[%s] %s is required but missing (expected %s)",
                               k->section, k->key, exp);
        }
        if (k->flags & DECK_F_STEM) {
            deck_stem(d->path, (char *)c + k->offset, k->size);
            continue;
        }
        if (!k->def) continue; /* a required key of the other kind of deck: left zero */
        int rc = deck_set(d, k, k->def, strlen(k->def), 0, 0, c);
        if (rc) return rc; /* a bad default in keys.c; the unit test resolves all defaults */
    }
    return 0;
}

static int deck_resolve(Deck *d, Config *out)
{
    char why[128];
    if (d->len > DECK_MAX_BYTES)
        return deck_report(d, 0, NULL, "deck is too large (%zu bytes; at most %zu MiB)", d->len,
                           DECK_MAX_BYTES >> 20);
    if (deck_lex_is_binary(d->text, d->len, why, sizeof why))
        return deck_report(d, 0, NULL, "this looks like a binary file, not a deck (%s)", why);

    Config c;
    memset(&c, 0, sizeof c);
    int rc = deck_resolve_lines(d, &c);
    for (int i = 0; rc == 0 && i < d->nov; i++) rc = deck_apply_override(d, i, &c);
    if (rc == 0) rc = deck_resolve_defaults(d, &c);
    if (rc == 0) rc = deck_is_simulation(d) ? deck_check_simulate(d, &c) : deck_cross_checks(d, &c);
    if (rc) return rc;
    if (out) memcpy(out, &c, sizeof c);
    return 0;
}

int deck_parse_string_with(const char *name, const char *text, size_t len, const DeckOverride *ov, int nov,
                           Config *cfg, Deck **out, int quiet)
{
    if (out) *out = NULL;
    Deck *d = deck_new(name, quiet);
    if (!d) {
        if (!quiet) fprintf(stderr, "%s: error: out of memory reading the deck\n", name ? name : "<string>");
        return DECK_EXIT_BAD;
    }
    int rc;
    /* keep at most the cap (+1 so that "too large" is still seen) */
    size_t keep = len > DECK_MAX_BYTES ? DECK_MAX_BYTES + 1 : len;
    d->text = malloc(keep + 1);
    if (!d->text || deck_keep_overrides(d, ov, nov) != 0) {
        rc = deck_report(d, 0, NULL, "out of memory reading the deck (%zu bytes)", len);
    } else {
        if (keep) memcpy(d->text, text, keep);
        d->text[keep] = '\0';
        d->len = keep;
        rc = deck_resolve(d, cfg);
    }
    if (out) *out = d;
    else deck_free(d);
    return rc;
}

int deck_parse_string(const char *name, const char *text, size_t len, Config *cfg, Deck **out, int quiet)
{
    return deck_parse_string_with(name, text, len, NULL, 0, cfg, out, quiet);
}

/* ---- reading and broadcasting --------------------------------------------- */

/* Rank 0: the whole file, at most DECK_MAX_BYTES + 1 bytes (one more so that
 * an oversized deck is seen). On failure *buf holds the message instead. */
static int deck_read_file(const char *path, char **buf, size_t *len)
{
    char msg[512];
    *buf = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(msg, sizeof msg, "cannot open deck: %s", strerror(errno));
        goto fail;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(msg, sizeof msg, "cannot read deck: it is a directory, not a file");
        fclose(f);
        goto fail;
    }
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    while (b) {
        if (n == cap) {
            size_t ncap = cap * 2 > DECK_MAX_BYTES + 1 ? DECK_MAX_BYTES + 1 : cap * 2;
            if (ncap == cap) break; /* at the cap: oversized */
            char *nb = realloc(b, ncap);
            if (!nb) { free(b); b = NULL; break; }
            b = nb;
            cap = ncap;
        }
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    if (!b) {
        snprintf(msg, sizeof msg, "out of memory reading the deck");
        fclose(f);
        goto fail;
    }
    if (ferror(f)) {
        snprintf(msg, sizeof msg, "cannot read deck: %s", strerror(errno));
        free(b);
        fclose(f);
        goto fail;
    }
    fclose(f);
    *buf = b;
    *len = n;
    return 0;
fail:
    *len = strlen(msg);
    *buf = malloc(*len + 1);
    if (*buf) memcpy(*buf, msg, *len + 1);
    else *len = 0;
    return 1;
}

/* A failed MPI call is a local failure, not a bad deck: abort the job with
 * the call, the rank and the reason (the LAMMPS split of errors). */
static void deck_mpi_check(int rc, const char *call, MPI_Comm comm)
{
    if (rc == MPI_SUCCESS) return;
    char s[MPI_MAX_ERROR_STRING];
    int sl = 0, rank = -1;
    MPI_Error_string(rc, s, &sl);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "nereus: rank %d: %s failed in deck_load: %s\n", rank, call, s);
    MPI_Abort(comm, 1);
}

/* collective over comm: rank 0 reads, everyone parses the same bytes (deck.h) */
int deck_load_with(const char *path, const DeckOverride *ov, int nov, MPI_Comm comm, Config *cfg, Deck **out)
{
    int rank = 0;
    deck_mpi_check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank", comm);
    if (out) *out = NULL;
    int no_path = !path || !*path;
    if (no_path) path = "<no deck>";

    /* header: {read status, byte count}; then the bytes, or the read error */
    int64_t head[2] = {0, 0};
    char *buf = NULL;
    size_t len = 0;
    if (rank == 0) {
        if (no_path) {
            static const char m[] = "no deck file given";
            buf = malloc(sizeof m);
            if (buf) memcpy(buf, m, sizeof m);
            len = buf ? sizeof m - 1 : 0;
            head[0] = 1;
        } else {
            head[0] = deck_read_file(path, &buf, &len);
        }
        if (!buf) head[0] = 2; /* out of memory even for the message */
        head[1] = (int64_t)len;
    }
    deck_mpi_check(MPI_Bcast(head, 2, MPI_INT64_T, 0, comm), "MPI_Bcast(deck header)", comm);
    len = (size_t)head[1];
    if (rank != 0) buf = malloc(len + 1);
    int have = buf != NULL, all = 0;
    /* every rank must be able to hold the bytes before any waits for them */
    deck_mpi_check(MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce", comm);
    if (!all) {
        free(buf);
        if (rank == 0) fprintf(stderr, "%s: error: out of memory reading the deck\n", path);
        return DECK_EXIT_BAD;
    }
    if (len > 0) deck_mpi_check(MPI_Bcast(buf, (int)len, MPI_CHAR, 0, comm), "MPI_Bcast(deck bytes)", comm);
    buf[len] = '\0';

    int rc;
    if (head[0] == 0) {
        rc = deck_parse_string_with(path, buf, len, ov, nov, cfg, out, rank != 0);
    } else {
        Deck *d = deck_new(path, rank != 0);
        if (d) deck_report(d, 0, NULL, "%s", buf);
        else if (rank == 0) fprintf(stderr, "%s: error: %s\n", path, buf);
        if (out) *out = d;
        else deck_free(d);
        rc = DECK_EXIT_BAD;
    }
    free(buf);
    return rc;
}

int deck_load(const char *path, MPI_Comm comm, Config *cfg, Deck **out)
{
    return deck_load_with(path, NULL, 0, comm, cfg, out);
}

/* ---- queries and caller errors ---------------------------------------------- */

const char *deck_last_error(const Deck *d) { return d ? d->msg : ""; }

int deck_line(const Deck *d, const char *section_dot_key)
{
    int i = deck_key_find_dotted(section_dot_key);
    if (i < 0) return -1;
    return d && d->key_line[i] > 0 ? d->key_line[i] : 0;
}

const char *deck_path(const Deck *d) { return d ? d->path : ""; }

const char *deck_text(const Deck *d, size_t *len)
{
    if (len) *len = d && d->text ? d->len : 0;
    return d && d->text ? d->text : "";
}

int deck_error_at(const Deck *d, const char *section_dot_key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc;
    if (d) {
        int i = deck_key_find_dotted(section_dot_key);
        rc = deck_vreport(d, i >= 0 ? d->key_line[i] : 0, NULL, fmt, ap); /* its line, override or none */
    } else {
        fprintf(stderr, "<deck>: error: ");
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        rc = DECK_EXIT_BAD;
    }
    va_end(ap);
    return rc;
}

void deck_warn_at(const Deck *d, const char *section_dot_key, const char *fmt, ...)
{
    if (!d || d->quiet) return;
    char body[2048], where[1100];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    int i = deck_key_find_dotted(section_dot_key);
    fprintf(stderr, "%s: warning: %s\n", deck_where(d, i >= 0 ? d->key_line[i] : 0, where, sizeof where), body);
    fflush(stderr);
}

/* ---- the resolved deck as text ---------------------------------------------- */

typedef struct DeckBuf {
    char *p;
    size_t n, cap;
    int oom;
} DeckBuf;

static void deck_buf_printf(DeckBuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void deck_buf_printf(DeckBuf *b, const char *fmt, ...)
{
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (w < 0) { b->oom = 1; return; }
        if (b->p && b->n + (size_t)w < b->cap) { b->n += (size_t)w; return; }
        size_t ncap = (b->cap ? b->cap : 1024);
        while (ncap < b->n + (size_t)w + 1) ncap *= 2;
        char *np = realloc(b->p, ncap);
        if (!np) { b->oom = 1; return; }
        b->p = np;
        b->cap = ncap;
    }
}

/* Shortest %g text that reads back as the same float (0.02, not 0.0199999996). */
static void deck_format_float(float f, char *buf, size_t n)
{
    for (int prec = 6; prec <= 9; prec++) {
        snprintf(buf, n, "%.*g", prec, (double)f);
        if (strtof(buf, NULL) == f) return;
    }
}

/* Shortest %g text that reads back as the same double (0.1, not 0.10000000000000001). */
static void deck_format_double(double x, char *buf, size_t n)
{
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, x);
        if (strtod(buf, NULL) == x) return;
    }
}

static void deck_format_value(const DeckKey *k, const Config *c, char *buf, size_t n)
{
    const char *field = (const char *)c + k->offset;
    switch (k->type) {
    case DECK_T_INT: snprintf(buf, n, "%d", *(const int *)field); break;
    case DECK_T_INT64: snprintf(buf, n, "%lld", *(const long long *)field); break;
    case DECK_T_INT_AUTO:
        if (*(const int *)field == 0) snprintf(buf, n, "auto");
        else snprintf(buf, n, "%d", *(const int *)field);
        break;
    case DECK_T_FLOAT: deck_format_float(*(const float *)field, buf, n); break;
    case DECK_T_DOUBLE: deck_format_double(*(const double *)field, buf, n); break;
    case DECK_T_BOOL: snprintf(buf, n, "%s", *(const int *)field ? "true" : "false"); break;
    case DECK_T_CHOICE:
    case DECK_T_LIST: snprintf(buf, n, "%.*s", (int)strnlen(field, k->size), field); break;
    case DECK_T_STRING: snprintf(buf, n, "\"%.*s\"", (int)strnlen(field, k->size), field); break;
    case DECK_T_PLAN: plan_stage_format((const PlanStage *)field, buf, n); break;
    }
}

static char *deck_format_resolved(const Deck *d, const Config *cfg)
{
    DeckBuf b = {0};
    deck_buf_printf(&b, "# resolved deck: %s\n", d ? d->path : "<deck>");
    const char *sec = NULL;
    /* a simulation deck is [run] and [simulate]; a job's deck everything but [simulate] */
    int sim = d ? deck_is_simulation(d) : cfg->sim.gpus > 0;
    for (size_t i = 0; i < deck_nkeys; i++) {
        const DeckKey *k = &deck_keys[i];
        int in_sim = strcmp(k->section, "simulate") == 0;
        if (sim ? !in_sim && strcmp(k->section, "run") != 0 : in_sim) continue;
        if (!sec || strcmp(sec, k->section) != 0) {
            deck_buf_printf(&b, "%s[%s]\n", sec ? "\n" : "", k->section);
            sec = k->section;
        }
        /* a plan key's rank list can be long: 1024 ranks in any order */
        char val[8 * PLAN_MAX_RANKS], kv[8 * PLAN_MAX_RANKS + 64];
        deck_format_value(k, cfg, val, sizeof val);
        snprintf(kv, sizeof kv, "%s = %s", k->key, val);
        int line = d ? d->key_line[i] : 0;
        if (line > 0) deck_buf_printf(&b, "%-36s # line %d\n", kv, line);
        else if (line < 0 && d->ov[-1 - line].where) /* a --plan file's line */
            deck_buf_printf(&b, "%-36s # %s (--plan)\n", kv, d->ov[-1 - line].where);
        else if (line < 0) deck_buf_printf(&b, "%-36s # command line (%s)\n", kv, d->ov[-1 - line].option);
        else deck_buf_printf(&b, "%-36s # (default)\n", kv);
    }
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

char *deck_resolved_text(const Deck *d, const Config *cfg) { return deck_format_resolved(d, cfg); }

void deck_print_resolved(const Deck *d, const Config *cfg, FILE *f)
{
    char *t = deck_format_resolved(d, cfg);
    if (t) fputs(t, f);
    else fprintf(f, "# resolved deck: out of memory\n");
    free(t);
}

/* ---- the reference ------------------------------------------------------------ */

static const char deck_reference_preamble[] =
    "# Nereus input deck reference\n"
    "\n"
    "A run is described by one input deck: `mpirun -np N bin/nereus inputs/x.deck`.\n"
    "A simulation deck — one with a `[simulate]` section — is run with\n"
    "`bin/nereus --simulate inputs/sim/x.deck`: it models a cluster and models\n"
    "(nothing runs on hardware), and only `[run] name` and `[simulate]` apply to it.\n"
    "This file is generated from the key table in `src/deck/keys.c` (the\n"
    "tables below) by `deck_write_reference()`; do not edit the tables by hand.\n"
    "\n"
    "## Format\n"
    "\n"
    "- INI-like text, UTF-8 (a byte-order mark is accepted), LF or CRLF line\n"
    "  ends, at most 16 MiB. Lines may be of any length; there are no\n"
    "  continuation lines.\n"
    "- `[section]` starts a section; `key = value` sets a key of the current\n"
    "  section. Section names and keys are lower-case identifiers. A key outside\n"
    "  any section is an error. A section header may appear again; a key may be\n"
    "  set only once per deck.\n"
    "- `#` starts a comment: on a line of its own, or after a value or a header\n"
    "  when preceded by whitespace (`name = a#b` keeps `a#b`). Blank lines are\n"
    "  ignored; whitespace around keys and values is trimmed.\n"
    "- Value types:\n"
    "  - **int**: decimal with an optional sign; anything after the digits is an\n"
    "    error (`12x`, and `1.5` for an int).\n"
    "  - **float**: a number as C's `strtod` reads it, the whole token, finite;\n"
    "    stored as a 32-bit float, and the stored value must be in range.\n"
    "    **float (64-bit)**: the same, stored as a double.\n"
    "  - **bool**: `true`/`false`, `yes`/`no`, `on`/`off`, `1`/`0`.\n"
    "  - **string**: the rest of the line, optionally in double quotes (inside\n"
    "    quotes `#` is literal and whitespace is kept); no escapes, so a string\n"
    "    cannot contain `\"`. Strings longer than 255 bytes are an error.\n"
    "  - **choice**: one of a fixed set of words; **list**: a comma list of\n"
    "    distinct words from a fixed set (spaces around commas allowed).\n"
    "  - **int or auto**: an int, or `auto` (stored as 0).\n"
    "- A key left out takes its default; a key marked **required** must be set.\n"
    "- Cross-key checks: `model.n_head` divides `model.n_embd`;\n"
    "  `ppo.minibatch` divides `ppo.batch`; `sft.data = tokens` needs a\n"
    "  non-empty `sft.tokens_file`; a non-zero `sft.seq` is at most\n"
    "  `model.max_seq`; with `[plan] default = auto`, all seven model-stages\n"
    "  or none; `[switch]` has a step and a plan together, or neither (see\n"
    "  below); `transition.window_kib` ≥ `transition.chunk_kib`. Other\n"
    "  modules check more (e.g. that prompts fit\n"
    "  `model.max_seq`) and report through the same message format.\n"
    "- A bad deck stops the run before anything else happens, with exit status 2\n"
    "  and one message on stderr, `FILE:LINE: error: MESSAGE` (or\n"
    "  `FILE: error: MESSAGE` when no line applies); an unknown key or section\n"
    "  also gets `FILE:LINE: note: did you mean '...'?`.\n"
    "- The resolved deck (every key, marked `# (default)`, `# line N` or\n"
    "  `# command line (--set)`) is itself a valid deck that resolves to the\n"
    "  same values; it is what gets printed at start-up and stored in output\n"
    "  files.\n"
    "\n"
    "## Overrides on the command line: --set\n"
    "\n"
    "`bin/nereus DECK --set SECTION.KEY=VALUE` sets one key for this run\n"
    "(the habit of SWIFT's `-P` and LAMMPS's `-var`); `--set` may be given\n"
    "any number of times, once per key:\n"
    "\n"
    "```\n"
    "mpirun -np 4 bin/nereus inputs/tiny.deck --set ppo.steps=20 --set run.name=try2\n"
    "```\n"
    "\n"
    "- The value replaces the deck's (or sets a key the deck lacks), and is\n"
    "  checked as a deck line is: the same value types and ranges, trailing\n"
    "  junk is an error, an unknown section or key gets the nearest one\n"
    "  suggested, and the cross-key checks see the overridden value. Whitespace\n"
    "  around the key and the value is trimmed; a string may be quoted; `#` is\n"
    "  part of the value (there are no comments on the command line). A key of\n"
    "  `[plan]` or `[switch]` keeps its dotted name: `--set plan.actor.gen=dp2`.\n"
    "- A bad override stops the run like a bad deck, exit status 2 on every\n"
    "  rank, with the message naming the argument instead of `FILE:LINE`:\n"
    "  `--set ppo.stepz=3: error: unknown key [ppo] stepz` and\n"
    "  `--set ppo.stepz=3: note: did you mean 'ppo.steps'?`. An argument\n"
    "  without `=`, and the same key set twice, are errors too.\n"
    "- `--restart FILE` is the override of `[run] restart`.\n"
    "- `--plan FILE` reads a plan file: a `[plan]` section alone (comments\n"
    "  and blank lines besides), each of its keys an override of the deck's\n"
    "  `[plan]` key, so one plan composes with any deck\n"
    "  (`bin/nereus inputs/tiny.deck --plan inputs/plans/mixed8.plan`; the\n"
    "  examples are `inputs/plans/*.plan`). Messages about its keys name the\n"
    "  file and line; any other section in it is an error.\n"
    "- The resolved deck marks each overridden key `# command line (--set)`\n"
    "  (or `(--restart)`; a plan file's key `# FILE:LINE (--plan)`).\n"
    "\n"
    "## Plans: the [plan] section\n"
    "\n"
    "A plan gives every model-stage (`actor.gen`, `actor.inf`, `actor.train`,\n"
    "`ref.inf`, `critic.inf`, `critic.train`, `reward.inf`) its EMU: a layout\n"
    "`(tp, pp, dp)` and the ordered job ranks that hold it. The keys of\n"
    "`[plan]` are the model-stage names; a value is\n"
    "\n"
    "```\n"
    "tpN ppN dpN @ RANKS\n"
    "```\n"
    "\n"
    "- `tpN`, `ppN`, `dpN` (N ≥ 1) in any order, each at most once; a left-out\n"
    "  `tp` or `pp` is 1, a left-out `dp` is (number of ranks) / (tp·pp).\n"
    "- `RANKS` is `all` (every rank of the job) or a comma list of ranks `R`\n"
    "  and inclusive ranges `A-B`; the list is ordered: its i-th rank is grid\n"
    "  position i, `i = t + tp·(d + dp·p)` (TP fastest, then DP, then PP, as in\n"
    "  Megatron). Without `@ RANKS` the ranks are `0 .. tp·pp·dp−1`.\n"
    "- `default` (the value every model-stage key defaults to) takes the\n"
    "  model-stage from the default plan chosen by `[plan] default`:\n"
    "  `auto` (every model-stage listed, or none: then the colocated default),\n"
    "  `colocated` (all model-stages on ranks 0..N−1 with the largest dp that\n"
    "  divides the batch, then the largest tp: `tp1 pp1 dpN @ all` when N\n"
    "  divides `ppo.batch` and `ppo.minibatch`), `disaggregated` (seven\n"
    "  consecutive blocks of ranks, one per model-stage, as equal as possible;\n"
    "  needs N ≥ 7).\n"
    "- Model-stages whose ranks overlap are colocated and run one after another;\n"
    "  model-stages on disjoint ranks run side by side.\n"
    "- Checked before anything runs, each error at the key's line: tp divides\n"
    "  `model.n_head` (and, for the Llama family, `model.n_kv_head` and the MLP\n"
    "  width `model.ffn_dim`: TP cuts whole key/value heads, it does not\n"
    "  replicate them); pp divides `model.n_layer`; dp divides `ppo.batch`, and\n"
    "  for `actor.train` and `critic.train` also `ppo.minibatch`; tp·pp·dp is\n"
    "  the number of ranks listed; every rank is in `0..N−1` for a job of N\n"
    "  ranks, no rank appears twice in one EMU, no EMU has more ranks than the\n"
    "  job; with `default = auto` a partial plan is an error at the `[plan]` line.\n"
    "\n"
    "```\n"
    "[plan]                       # 8 ranks: generation beside training\n"
    "actor.gen    = tp2 dp2 @ 0-3\n"
    "actor.inf    = dp4 @ 0-3\n"
    "ref.inf      = dp4 @ 0-3\n"
    "reward.inf   = dp1 @ 3\n"
    "critic.inf   = tp2 pp2 @ 4-7\n"
    "actor.train  = tp2 pp1 dp2 @ 4-7\n"
    "critic.train = pp2 dp2 @ 4,6,5,7\n"
    "```\n"
    "\n"
    "## A change of plan: the [switch] section\n"
    "\n"
    "`[switch]` changes the plan once during the run: before PPO step `step`\n"
    "(0-based, the numbering checkpoints use: step N is the (N+1)-th PPO\n"
    "step) every model moves from its `[plan]` EMUs to the ones given here,\n"
    "through the transition engine (`[transition]`). The other keys of\n"
    "`[switch]` are those of `[plan]`, with the same value syntax and the same\n"
    "`default` rule; `step = -1` (the default) means no switch.\n"
    "\n"
    "- The deck checks, at `[switch]`'s lines: a `step` needs a plan (a listed\n"
    "  model-stage, or `default = colocated` or `disaggregated`); a plan needs\n"
    "  a `step`; with `default = auto`, all seven model-stages or none.\n"
    "- The checks against the job (ranks, tp/pp/dp divisibility, as for\n"
    "  `[plan]`) are made at start-up, before step 1 (a restart: once its\n"
    "  step is known, when the switch is still to come): a switch plan that\n"
    "  cannot run on the job's ranks is refused with exit 2 at its line. A\n"
    "  memory budget no schedule fits, which only the switch itself finds, is\n"
    "  refused then, and the run continues on the old plan.\n"
    "\n"
    "```\n"
    "[switch]                     # before the 11th PPO step: all model-stages colocated\n"
    "step    = 10\n"
    "default = colocated\n"
    "```\n"
    "\n"    "## The live planner and injected drift: [planner], [inject]\n"
    "\n"
    "`[planner] policy` other than `off` runs the planner on rank 0 between\n"
    "PPO steps (docs/PLANNER.md): after `warmup` measured steps it places the\n"
    "job on the best plan it finds, then `payback` replans on drift (a\n"
    "relative change above `threshold` of the response length or of the\n"
    "slowest rank's speed, or a pool change) and admits a plan when its\n"
    "transition pays back within `gamma` x the expected steps before the next\n"
    "drift; `static` replans only when the pool changes; `admit-all` takes any\n"
    "faster plan; `every-k` replans every `every_k` steps; `sweep` validates\n"
    "the cost model on sampled plans. A planner and a `[switch]` exclude each\n"
    "other.\n"
    "\n"
    "`[inject]` keys make INJECTED drift for experiments, named as such in the\n"
    "output: a forced minimum response length (`resp_len_*`), a slowdown of\n"
    "chosen ranks by extra real work (`slow_*`), ranks leaving and joining the\n"
    "pool (`leave_*`, `join_step`; needs a planner), a communicator set-up that\n"
    "takes at least `comm_setup_s` per set built (a slow NCCL init). Rank lists\n"
    "use the plan syntax (`1,3-5`) and are checked against the job at start-up.\n"
    "\n"
    "```\n"
    "[planner]\n"
    "policy = payback\n"
    "[inject]                     # INJECTED: rank 1 does 3x its work from step 15\n"
    "slow_ranks  = 1\n"
    "slow_factor = 3\n"
    "slow_step   = 15\n"
    "```\n"
    "\n"
    "Example:\n"
    "\n"
    "```\n"
    "[run]\n"
    "seed = 7            # fixes prompts, sampling and initialisation\n"
    "\n"
    "[model]\n"
    "n_layer = 2\n"
    "n_embd  = 64\n"
    "n_head  = 4\n"
    "\n"
    "[ppo]\n"
    "batch     = 32\n"
    "minibatch = 8\n"
    "```\n";

static const char *deck_type_name(DeckType t)
{
    switch (t) {
    case DECK_T_INT: return "int";
    case DECK_T_INT64: return "int (64-bit)";
    case DECK_T_FLOAT: return "float";
    case DECK_T_DOUBLE: return "float (64-bit)";
    case DECK_T_BOOL: return "bool";
    case DECK_T_STRING: return "string";
    case DECK_T_CHOICE: return "choice";
    case DECK_T_LIST: return "list";
    case DECK_T_INT_AUTO: return "int or auto";
    case DECK_T_PLAN: return "layout";
    }
    return "?";
}

int deck_write_reference(FILE *f)
{
    fputs(deck_reference_preamble, f);
    const char *sec = NULL;
    for (size_t i = 0; i < deck_nkeys; i++) {
        const DeckKey *k = &deck_keys[i];
        if (!sec || strcmp(sec, k->section) != 0) {
            fprintf(f, "\n## [%s]\n\n| key | type | default | range / choices | meaning |\n| --- | --- | --- | --- | --- |\n",
                    k->section);
            sec = k->section;
        }
        char def[96], range[192], ch[128], r[128];
        if (k->flags & DECK_F_REQUIRED) snprintf(def, sizeof def, "**required**");
        else if (k->flags & DECK_F_STEM) snprintf(def, sizeof def, "deck file stem");
        else if (k->type == DECK_T_STRING) snprintf(def, sizeof def, "`\"%s\"`", k->def);
        else snprintf(def, sizeof def, "`%s`", k->def);
        deck_range_phrase(k, r, sizeof r);
        switch (k->type) {
        case DECK_T_CHOICE:
            deck_choices_phrase(k->choices, 1, ch, sizeof ch);
            snprintf(range, sizeof range, "%s", ch);
            break;
        case DECK_T_LIST:
            deck_choices_phrase(k->choices, 1, ch, sizeof ch);
            snprintf(range, sizeof range, "distinct items of %s", ch);
            break;
        case DECK_T_BOOL: snprintf(range, sizeof range, "true/false, yes/no, on/off, 1/0"); break;
        case DECK_T_STRING: snprintf(range, sizeof range, "at most %zu bytes", k->size - 1); break;
        case DECK_T_INT_AUTO: snprintf(range, sizeof range, "`auto`, or %s", r); break;
        case DECK_T_PLAN: snprintf(range, sizeof range, "`tpN ppN dpN @ RANKS`, or `default` (see [plan] above)"); break;
        case DECK_T_FLOAT:
        case DECK_T_DOUBLE: snprintf(range, sizeof range, "%s", *r ? r : "any finite number"); break;
        default: snprintf(range, sizeof range, "%s", *r ? r : "any"); break;
        }
        fprintf(f, "| `%s` | %s | %s | %s | %s |\n", k->key, deck_type_name(k->type), def, range, k->meaning);
    }
    fflush(f);
    return ferror(f) ? -1 : 0;
}
