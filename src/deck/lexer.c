/* lexer.c — the lexical layer of input decks: turns the deck bytes into a
 * stream of section headers and `key = value` lines, each with its line
 * number, and says whether the bytes are text at all.
 *
 * Why our own lexer rather than libinih: every key's line number must survive
 * into validation messages that are made long after the line was read
 * (cross-key checks, and callers' checks through deck_error_at), and the
 * syntax must be strict — no multi-line continuations, no silent truncation
 * of long lines (inih cuts lines at a fixed buffer size), no inline-comment
 * or quoting behaviour that changes with compile-time options. The lexer
 * works in place on the whole buffer, so lines of any length cost nothing
 * extra. It knows nothing about which sections or keys exist (keys.c) or
 * about value types (deck.c).
 *
 * Syntax handled here: optional UTF-8 BOM; LF or CRLF line ends; blank
 * lines; `#` comments (whole line, or after a value when preceded by
 * whitespace, or after a section header); `[name]` headers; `key = value`
 * with whitespace trimmed and an optional double-quoted value, in which `#`
 * is literal. Control characters (other than tab) are errors.
 */
#include <stdio.h>
#include <string.h>

#include "deck_int.h"

static int deck_is_space(char c) { return c == ' ' || c == '\t'; }

/* Characters a section or key name token may hold. Whether the name is a
 * known (lower-case) one is deck.c's question, so that a wrong case gets an
 * "unknown key, did you mean" message rather than a syntax error. */
static int deck_is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-' || c == '.';
}

void deck_clip(char *dst, size_t dstsz, const char *s, size_t len)
{
    const size_t keep = 60;
    if (dstsz == 0) return;
    int cut = 0;
    if (len > keep) {
        len = keep;
        /* back up to a character boundary: never end inside a UTF-8 sequence */
        while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80) len--;
        cut = 1;
    }
    if (len + 4 > dstsz) { len = dstsz > 4 ? dstsz - 4 : 0; cut = 1; }
    memcpy(dst, s, len);
    if (cut) { memcpy(dst + len, "...", 3); len += 3; }
    dst[len] = '\0';
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static size_t deck_utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t need;
    unsigned min;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) { need = 2; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { need = 3; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { need = 4; min = 0x10000; }
    else return 0;
    if (n < need) return 0;
    unsigned cp = c & (0x3Fu >> (need - 1));
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return need;
}

int deck_lex_is_binary(const char *text, size_t len, char *why, size_t whysz)
{
    const unsigned char *s = (const unsigned char *)text;
    if (memchr(text, '\0', len)) {
        snprintf(why, whysz, "it contains NUL bytes");
        return 1;
    }
    /* Text editors write tab, LF, CR, and now and then FF/VT; anything else
     * below 0x20, DEL, and bytes that are not UTF-8 count as non-text. A
     * deck saved in Latin-1 has a few of those; a binary file has many. */
    size_t bad = 0;
    for (size_t i = 0; i < len;) {
        unsigned c = s[i];
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v') { bad++; i++; continue; }
        if (c == 0x7F) { bad++; i++; continue; }
        size_t u = deck_utf8_len(s + i, len - i);
        if (u == 0) { bad++; i++; } else i += u;
    }
    if (len > 0 && bad * 10 > len) { /* more than 10% */
        snprintf(why, whysz, "%zu of its %zu bytes are not text", bad, len);
        return 1;
    }
    return 0;
}

void deck_lex_init(DeckLexer *lx, const char *text, size_t len)
{
    lx->p = text;
    lx->end = text + len;
    lx->line = 0;
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) lx->p += 3;
}

static DeckTok deck_tok_error(int line, char *err, size_t errsz, const char *fmt, const char *a,
                              size_t alen)
{
    char clip[80];
    deck_clip(clip, sizeof clip, a ? a : "", a ? alen : 0);
    snprintf(err, errsz, fmt, clip);
    DeckTok t = {.kind = DECK_TOK_ERROR, .line = line};
    return t;
}

/* Start of a comment in [s, e): a '#' at the start or after whitespace; e if none. */
static const char *deck_comment_start(const char *s, const char *e)
{
    for (const char *q = s; q < e; q++)
        if (*q == '#' && (q == s || deck_is_space(q[-1]))) return q;
    return e;
}

static DeckTok deck_lex_line(int line, const char *s, const char *e, char *err, size_t errsz)
{
    DeckTok t = {.kind = DECK_TOK_END, .line = line};
    /* strict: control characters are never meant (a stray CR mid-line, an
     * escape sequence pasted from a terminal), so say where instead of
     * letting them into a value */
    for (const char *q = s; q < e; q++) {
        unsigned char c = (unsigned char)*q;
        if ((c < 0x20 && c != '\t') || c == 0x7F) {
            snprintf(err, errsz, "control character 0x%02X at column %zu (decks are plain text)",
                     c, (size_t)(q - s) + 1);
            t.kind = DECK_TOK_ERROR;
            return t;
        }
    }
    while (s < e && deck_is_space(*s)) s++;
    while (e > s && deck_is_space(e[-1])) e--;
    if (s == e || *s == '#') return t; /* blank or comment: END means "nothing here" */

    if (*s == '[') {
        const char *close = memchr(s, ']', (size_t)(e - s));
        if (!close)
            return deck_tok_error(line, err, errsz,
                                  "unterminated section header '%s' (missing ']')", s, (size_t)(e - s));
        const char *n = s + 1, *ne = close;
        while (n < ne && deck_is_space(*n)) n++;
        while (ne > n && deck_is_space(ne[-1])) ne--;
        if (n == ne) return deck_tok_error(line, err, errsz, "empty section name '%s'", s, (size_t)(close + 1 - s));
        for (const char *q = n; q < ne; q++)
            if (!deck_is_name_char(*q))
                return deck_tok_error(line, err, errsz,
                                      "malformed section header '%s' (a section name is a lower-case identifier)",
                                      s, (size_t)(close + 1 - s));
        const char *rest = close + 1;
        while (rest < e && deck_is_space(*rest)) rest++;
        if (rest < e && *rest != '#')
            return deck_tok_error(line, err, errsz, "unexpected text '%s' after the section header", rest,
                                  (size_t)(e - rest));
        t.kind = DECK_TOK_SECTION;
        t.name = n;
        t.name_len = (size_t)(ne - n);
        return t;
    }

    /* key = value: the '=' must come before any comment */
    const char *cstart = deck_comment_start(s, e);
    const char *eq = memchr(s, '=', (size_t)(cstart - s));
    if (!eq)
        return deck_tok_error(line, err, errsz,
                              "malformed line '%s' (expected '[section]' or 'key = value')", s,
                              (size_t)(cstart - s));
    const char *k = s, *ke = eq;
    while (ke > k && deck_is_space(ke[-1])) ke--;
    if (k == ke) return deck_tok_error(line, err, errsz, "missing key before '=' in '%s'", s, (size_t)(e - s));
    for (const char *q = k; q < ke; q++)
        if (!deck_is_name_char(*q))
            return deck_tok_error(line, err, errsz,
                                  "malformed key '%s' (a key is a lower-case identifier, then '=')", k,
                                  (size_t)(ke - k));
    const char *v = eq + 1;
    while (v < e && deck_is_space(*v)) v++;
    const char *ve;
    if (v < e && *v == '"') {
        /* quoted: up to the next quote; '#' inside is literal; no escapes */
        const char *q = memchr(v + 1, '"', (size_t)(e - v - 1));
        if (!q)
            return deck_tok_error(line, err, errsz, "unterminated quoted value %s (missing closing '\"')", v,
                                  (size_t)(e - v));
        const char *rest = q + 1;
        while (rest < e && deck_is_space(*rest)) rest++;
        if (rest < e && *rest != '#')
            return deck_tok_error(line, err, errsz,
                                  "unexpected text '%s' after the closing quote (a quoted value is the whole value)",
                                  rest, (size_t)(e - rest));
        t.quoted = 1;
        v = v + 1;
        ve = q;
    } else {
        ve = deck_comment_start(v, e);
        while (ve > v && deck_is_space(ve[-1])) ve--;
    }
    t.kind = DECK_TOK_KEY;
    t.name = k;
    t.name_len = (size_t)(ke - k);
    t.value = v;
    t.value_len = (size_t)(ve - v);
    return t;
}

DeckTok deck_lex_next(DeckLexer *lx, char *err, size_t errsz)
{
    while (lx->p < lx->end) {
        const char *s = lx->p;
        const char *nl = memchr(s, '\n', (size_t)(lx->end - s));
        const char *e = nl ? nl : lx->end;
        lx->p = nl ? nl + 1 : lx->end;
        lx->line++;
        if (e > s && e[-1] == '\r') e--; /* CRLF */
        DeckTok t = deck_lex_line(lx->line, s, e, err, errsz);
        if (t.kind != DECK_TOK_END) return t;
    }
    DeckTok t = {.kind = DECK_TOK_END, .line = lx->line};
    return t;
}
