/* tok_bytes.c — GPT-2's byte-level alphabet (bytes_to_unicode): every byte
 * is a printable code point, so that a vocabulary of strings covers any
 * byte sequence. Printable Latin-1 bytes (33–126, 161–172, 174–255) stand
 * for themselves; the other 68 take 256, 257, ... in byte order. */
#include "tok_int.h"

#include <stdint.h>

/* the code point of byte b */
static uint32_t byte_cp(int b) {
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174) return (uint32_t)b;
    if (b <= 32) return 256u + (uint32_t)b;        /* 0..32 -> 256..288 */
    if (b <= 160) return (uint32_t)b + 162u;       /* 127..160 -> 289..322 */
    return 323u;                                   /* 173 */
}

/* the byte of code point cp, or -1 where cp is not in the alphabet */
static int cp_byte(uint32_t cp) {
    if (cp < 256) return byte_cp((int)cp) == cp ? (int)cp : -1;
    if (cp <= 288) return (int)(cp - 256);
    if (cp <= 322) return (int)(cp - 162);
    return cp == 323 ? 173 : -1;
}

size_t tok_byte_utf8(int b, char out[2]) {
    uint32_t cp = byte_cp(b);
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    out[0] = (char)(0xc0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
}

/* the length of the UTF-8 sequence that starts with byte c (1 for a stray byte) */
static int utf8_len(unsigned char c) {
    if (c >= 0xf0 && c < 0xf8) return 4;
    if (c >= 0xe0) return c < 0xf0 ? 3 : 1;
    if (c >= 0xc0) return 2;
    return 1;
}

void tok_bytes_of(const char *token, unsigned char *out, size_t *n) {
    const unsigned char *s = (const unsigned char *)token;
    *n = 0;
    while (*s) {
        int k = utf8_len(*s);
        for (int i = 1; i < k; i++)
            if ((s[i] & 0xc0) != 0x80) { k = 1; break; }
        uint32_t cp = k == 1 ? *s : (uint32_t)(*s & (0x7f >> k)); /* the lead byte's bits, then 6 per byte */
        for (int i = 1; i < k; i++) cp = cp << 6 | (s[i] & 0x3f);
        int b = cp_byte(cp);
        if (b >= 0) out[(*n)++] = (unsigned char)b;
        else for (int i = 0; i < k; i++) out[(*n)++] = s[i]; /* outside the alphabet: as it is */
        s += k;
    }
}
