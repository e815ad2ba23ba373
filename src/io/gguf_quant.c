/* gguf_quant.c — ggml tensor types dequantized to fp32 (gguf.h), bit for bit
 * as the PyPI gguf package's gguf.quants.dequantize computes them.
 *
 * That package works in numpy float32 throughout: each fp16 scale is widened
 * to float32 exactly (no float16 arithmetic), the quants become float32, and
 * every product or sum is one float32 operation, rounded, in this order:
 *   F16   x                      (exact widening)       BF16  bits << 16
 *   Q8_0  q·d                                           Q4_0  d·(q − 8)
 *   Q4_1  (d·q) + m
 *   Q4_K  (d·sc)·q − (dmin·m)    (d·sc and dmin·m rounded first)
 *   Q6_K  (d·sc)·(q − 32)        (d·sc rounded first)
 * So the code below computes each rounded step in a float of its own. It
 * relies on the compiler not fusing a multiply and an add into one FMA
 * (one rounding instead of two): GCC does not under -std=c11, which the
 * Makefile sets (-ffp-contract=off is that mode's default); the gguf test
 * suite would catch a build that did.
 *
 * Block layouts (ggml's, QK_K = 256): Q8_0 {f16 d; int8 q[32]}; Q4_0 {f16 d;
 * u8 qs[16]}: value j < 16 is qs[j] & 15, value 16 + j is qs[j] >> 4; Q4_1
 * {f16 d, m; u8 qs[16]} the same; Q4_K {f16 d, dmin; u8 scales[12]; u8
 * qs[128]}: 8 sub-blocks of 32 with 6-bit scales and mins packed in scales,
 * value 64g + 32s + j is (qs[32g + j] >> 4s) & 15; Q6_K {u8 ql[128]; u8
 * qh[64]; int8 sc[16]; f16 d}: 16 sub-blocks of 16, value 128h + r (r < 128)
 * has low bits (ql[64h + r % 64] >> 4·(r / 64)) & 15 and high bits
 * (qh[32h + r % 32] >> 2·(r / 32)) & 3. */
#include "nereus/gguf.h"

#include <string.h>

/* IEEE half to float, exact (subnormals normalised, infinities kept, NaN payloads shifted as numpy does) */
static float f16(const unsigned char *p) {
    uint16_t h = (uint16_t)(p[0] | p[1] << 8);
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 31, man = h & 0x3ff, bits;
    if (exp == 31) bits = sign | 0x7f800000u | man << 13;
    else if (exp) bits = sign | (exp + 112) << 23 | man << 13;
    else if (!man) bits = sign;
    else {
        int e = 113;
        while (!(man & 0x400)) { man <<= 1; e--; }
        bits = sign | (uint32_t)e << 23 | (man & 0x3ff) << 13;
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static void deq_q8_0(const unsigned char *b, float *y) {
    float d = f16(b);
    for (int j = 0; j < 32; j++) y[j] = (float)(int8_t)b[2 + j] * d;
}

static void deq_q4_0(const unsigned char *b, float *y) {
    float d = f16(b);
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)((b[2 + j] & 15) - 8);
        y[16 + j] = d * (float)((b[2 + j] >> 4) - 8);
    }
}

static void deq_q4_1(const unsigned char *b, float *y) {
    float d = f16(b), m = f16(b + 2);
    for (int j = 0; j < 16; j++) {
        float lo = d * (float)(b[4 + j] & 15), hi = d * (float)(b[4 + j] >> 4);
        y[j] = lo + m;
        y[16 + j] = hi + m;
    }
}

/* Q4_K's 6-bit scale and min of sub-block i (0..7) from its 12 packed bytes */
static void scale_min_k4(const unsigned char *s, int i, int *sc, int *m) {
    if (i < 4) {
        *sc = s[i] & 63;
        *m = s[4 + i] & 63;
    } else {
        *sc = (s[8 + i - 4] & 15) | ((s[i - 4] >> 2) & 0x30);
        *m = (s[8 + i - 4] >> 4) | ((s[i] >> 2) & 0x30);
    }
}

static void deq_q4_k(const unsigned char *b, float *y) {
    float d = f16(b), dmin = f16(b + 2);
    const unsigned char *sc = b + 4, *qs = b + 16;
    for (int i = 0; i < 8; i++) { /* sub-block i: values 32i .. 32i + 31 */
        int s, m;
        scale_min_k4(sc, i, &s, &m);
        float ds = d * (float)s, dm = dmin * (float)m;
        int g = i / 2, shift = 4 * (i % 2);
        for (int j = 0; j < 32; j++) {
            float p = ds * (float)((qs[32 * g + j] >> shift) & 15);
            y[32 * i + j] = p - dm;
        }
    }
}

static void deq_q6_k(const unsigned char *b, float *y) {
    const unsigned char *ql = b, *qh = b + 128;
    const int8_t *sc = (const int8_t *)(b + 192);
    float d = f16(b + 208);
    for (int p = 0; p < 256; p++) {
        int h = p / 128, r = p % 128;
        int lo = (ql[64 * h + r % 64] >> (4 * (r / 64))) & 15, hi = (qh[32 * h + r % 32] >> (2 * (r / 32))) & 3;
        float ds = d * (float)sc[p / 16];
        y[p] = ds * (float)((lo | hi << 4) - 32);
    }
}

void gguf_dequantize(int type, const void *src, float *dst, size_t n) {
    const unsigned char *s = src;
    switch (type) {
    case GGML_F32: memcpy(dst, s, n * 4); return;
    case GGML_F16: for (size_t i = 0; i < n; i++) dst[i] = f16(s + 2 * i); return;
    case GGML_BF16:
        for (size_t i = 0; i < n; i++) {
            uint32_t bits = (uint32_t)(s[2 * i] | s[2 * i + 1] << 8) << 16;
            memcpy(&dst[i], &bits, 4);
        }
        return;
    case GGML_Q8_0: for (size_t k = 0; k < n / 32; k++) deq_q8_0(s + 34 * k, dst + 32 * k); return;
    case GGML_Q4_0: for (size_t k = 0; k < n / 32; k++) deq_q4_0(s + 18 * k, dst + 32 * k); return;
    case GGML_Q4_1: for (size_t k = 0; k < n / 32; k++) deq_q4_1(s + 20 * k, dst + 32 * k); return;
    case GGML_Q4_K: for (size_t k = 0; k < n / 256; k++) deq_q4_k(s + 144 * k, dst + 256 * k); return;
    case GGML_Q6_K: for (size_t k = 0; k < n / 256; k++) deq_q6_k(s + 210 * k, dst + 256 * k); return;
    }
}
