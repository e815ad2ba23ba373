/* tok_json.c — text out as a JSON string, escaped as Python's
 * json.dumps(ensure_ascii=False) escapes it (\" \\ \n \r \t \b \f, other
 * control bytes as \u00XX, everything else as it is), so that a decoded line
 * can be compared with the corpus line it came from byte for byte. Decoded
 * ids need not be whole UTF-8 (a token may end mid-character): each byte that
 * is not part of a valid sequence is written as U+FFFD. */
#include "tok_tool.h"

/* the length of the valid UTF-8 sequence at s (at most n bytes), or 0 */
static size_t utf8_seq(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t k = c < 0x80 ? 1 : (c >> 5) == 6 && c >= 0xc2 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 && c <= 0xf4 ? 4 : 0;
    if (k == 0 || k > n) return 0;
    for (size_t j = 1; j < k; j++) if ((s[j] & 0xc0) != 0x80) return 0;
    if (k == 3) {
        unsigned cp = (c & 0x0f) << 12 | (s[1] & 0x3fu) << 6;
        if (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    }
    if (k == 4) {
        unsigned cp = (c & 0x07) << 18 | (s[1] & 0x3fu) << 12;
        if (cp < 0x10000 || cp > 0x10ffff) return 0;
    }
    return k;
}

void json_write_string(FILE *f, const char *text, size_t n) {
    const unsigned char *s = (const unsigned char *)text;
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        const char *esc = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '\r' ? "\\r"
                        : c == '\t' ? "\\t" : c == '\b' ? "\\b" : c == '\f' ? "\\f" : NULL;
        if (esc) { fputs(esc, f); i++; continue; }
        if (c < 0x20) { fprintf(f, "\\u%04x", c); i++; continue; }
        size_t k = utf8_seq(s + i, n - i);
        if (k == 0) { fputs("\xef\xbf\xbd", f); i++; continue; }
        fwrite(s + i, 1, k, f);
        i += k;
    }
    fputc('"', f);
}
