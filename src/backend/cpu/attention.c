/* attention.c — causal multi-head self-attention of the CPU backend, as in
 * llm.c train_gpt2.c (scale 1/sqrt(hs), causal mask, softmax with the row
 * maximum subtracted), plus the KV-cache pair used by rollouts: kv_fill copies
 * the k and v of a prefix into the cache and attention_decode attends one new
 * token per sequence over positions 0..pos (the sequences still generating,
 * each at its cache slot). Every inner loop runs over hs
 * contiguous floats (a q·k dot product or a v axpy), which gcc vectorises.
 *
 * Grouped-query attention: NKV key/value heads serve NH query heads, query
 * head h reading key/value head h / (NH/NKV); NKV == NH is multi-head
 * attention. Layouts: inp (B, T, C3), C3 = C + 2·NKV·hs, per token
 * [q (NH,hs) | k (NKV,hs) | v (NKV,hs)]; preatt, att, dpreatt, datt
 * (B, NH, T, T); kcache, vcache (B, NKV, Tmax, hs).
 * The softmax backward uses dpreatt = att·(datt − Σ att·datt), O(T) per row
 * instead of llm.c's O(T²) double loop.
 */
#include <math.h>
#include <string.h>

#include "cpu_internal.h"

/* positions scored at once by attention_decode (stack buffer); longer caches
 * are handled by rescaling the running sums, flash-attention style */
#define DECODE_CHUNK 1024

static void cpu_attention_forward(float *out, float *preatt, float *att, const float *inp,
                                  int B, int T, int C, int NH, int NKV) {
    const int hs = C / NH, C3 = C + 2 * NKV * hs, G = NH / NKV;
    const float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for collapse(3) schedule(static) if ((size_t)B * NH * T * T * hs >= CPU_OMP_MIN)
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < NH; h++) {
                const float *q = inp + ((size_t)b * T + t) * C3 + h * hs;
                float *pre = preatt + (((size_t)b * NH + h) * T + t) * T;
                float *a = att + (((size_t)b * NH + h) * T + t) * T;
                /* scores against keys 0..t, and their maximum */
                float maxv = -INFINITY;
                for (int t2 = 0; t2 <= t; t2++) {
                    const float *k = inp + ((size_t)b * T + t2) * C3 + C + h / G * hs;
                    float s = cpu_dot(q, k, hs) * scale;
                    pre[t2] = s;
                    if (s > maxv) maxv = s;
                }
                float sum = 0.0f;
                for (int t2 = 0; t2 <= t; t2++) {
                    float e = expf(pre[t2] - maxv);
                    a[t2] = e;
                    sum += e;
                }
                float inv = sum == 0.0f ? 0.0f : 1.0f / sum;
                for (int t2 = 0; t2 <= t; t2++) a[t2] *= inv;
                for (int t2 = t + 1; t2 < T; t2++) a[t2] = pre[t2] = 0.0f;
                /* out = Σ att·v */
                float *o = out + ((size_t)b * T + t) * C + h * hs;
                memset(o, 0, (size_t)hs * sizeof(float));
                for (int t2 = 0; t2 <= t; t2++) {
                    const float *v = inp + ((size_t)b * T + t2) * C3 + C + (NKV + h / G) * hs;
                    cpu_axpy(o, a[t2], v, hs);
                }
            }
}

static void cpu_attention_backward(float *dinp, float *dpreatt, float *datt,
                                   const float *dout, const float *inp, const float *att,
                                   int B, int T, int C, int NH, int NKV) {
    const int hs = C / NH, C3 = C + 2 * NKV * hs, G = NH / NKV;
    const float scale = 1.0f / sqrtf((float)hs);
    /* parallel over (b, key/value head): each owns that head's slice of dk, dv
     * and its query heads' dq at every token, and walks its query heads, then
     * t, in increasing order, so the result is bit-identical to the serial loop */
#pragma omp parallel for collapse(2) schedule(static) if ((size_t)B * NH * T * T * hs >= CPU_OMP_MIN)
    for (int b = 0; b < B; b++)
        for (int kh = 0; kh < NKV; kh++)
            for (int h = kh * G; h < (kh + 1) * G; h++)
                for (int t = 0; t < T; t++) {
                    const size_t row = (((size_t)b * NH + h) * T + t) * T;
                    const float *a = att + row;
                    float *da = datt + row;
                    float *dp = dpreatt + row;
                    const float *dy = dout + ((size_t)b * T + t) * C + h * hs;
                    const float *q = inp + ((size_t)b * T + t) * C3 + h * hs;
                    float *dq = dinp + ((size_t)b * T + t) * C3 + h * hs;

                    /* out = Σ att·v: datt = dy·v, dv += att·dy */
                    float dot = 0.0f;
                    for (int t2 = 0; t2 <= t; t2++) {
                        const size_t tok = ((size_t)b * T + t2) * C3 + C + (NKV + kh) * hs;
                        da[t2] = cpu_dot(inp + tok, dy, hs);
                        cpu_axpy(dinp + tok, a[t2], dy, hs);
                        dot += a[t2] * da[t2];
                    }
                    /* softmax: dpre = att·(datt − Σ att·datt) */
                    for (int t2 = 0; t2 <= t; t2++) dp[t2] = a[t2] * (da[t2] - dot);
                    for (int t2 = t + 1; t2 < T; t2++) da[t2] = dp[t2] = 0.0f;
                    /* pre = scale·q·k: dq += scale·dpre·k, dk += scale·dpre·q */
                    for (int t2 = 0; t2 <= t; t2++) {
                        const size_t tok = ((size_t)b * T + t2) * C3 + C + kh * hs;
                        float g = dp[t2] * scale;
                        cpu_axpy(dq, g, inp + tok, hs);
                        cpu_axpy(dinp + tok, g, q, hs);
                    }
                }
}

/* kcache, vcache (B, NKV, Tmax, hs) positions 0..T-1 ← k, v of qkv (B, T, C3) */
static void cpu_kv_fill(float *kcache, float *vcache, const float *qkv,
                        int B, int T, int Tmax, int C, int NH, int NKV) {
    const int hs = C / NH, C3 = C + 2 * NKV * hs;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NKV; h++)
            for (int t = 0; t < T; t++) {
                const float *src = qkv + ((size_t)b * T + t) * C3 + C + h * hs;
                size_t dst = (((size_t)b * NKV + h) * Tmax + t) * hs;
                memcpy(kcache + dst, src, (size_t)hs * sizeof(float));
                memcpy(vcache + dst, src + NKV * hs, (size_t)hs * sizeof(float));
            }
}

/* One new token per sequence at position pos (row b at rowpos[b] where given): qkv (B, C3) → out (B, C). The
 * scores of a chunk of positions sit in a stack buffer; if a later chunk
 * raises the running maximum, the partial sum and output are rescaled. For
 * pos < DECODE_CHUNK this is the forward's computation in one pass. */
static void cpu_attention_decode(float *out, float *kcache, float *vcache, const float *qkv, const int *slots,
                                 const int *rowpos, int B, int maxpos, int Tmax, int C, int NH, int NKV) {
    const int hs = C / NH, C3 = C + 2 * NKV * hs, G = NH / NKV;
    const float scale = 1.0f / sqrtf((float)hs);
    /* the new k, v first: every query head of a group reads them */
    for (int b = 0; b < B; b++)
        for (int kh = 0; kh < NKV; kh++) {
            int pos = rowpos ? rowpos[b] : maxpos;
            size_t slot = slots ? (size_t)slots[b] : (size_t)b, at = ((slot * NKV + kh) * Tmax + pos) * hs;
            const float *knew = qkv + (size_t)b * C3 + C + kh * hs;
            memcpy(kcache + at, knew, (size_t)hs * sizeof(float));
            memcpy(vcache + at, knew + NKV * hs, (size_t)hs * sizeof(float));
        }
#pragma omp parallel for collapse(2) schedule(static) if ((size_t)B * NH * (maxpos + 1) * hs >= CPU_OMP_MIN)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            float s[DECODE_CHUNK];
            int pos = rowpos ? rowpos[b] : maxpos;
            size_t slot = slots ? (size_t)slots[b] : (size_t)b;
            const float *q = qkv + (size_t)b * C3 + h * hs;
            const float *kc = kcache + (slot * NKV + h / G) * Tmax * hs;
            const float *vc = vcache + (slot * NKV + h / G) * Tmax * hs;

            float *o = out + (size_t)b * C + h * hs;
            memset(o, 0, (size_t)hs * sizeof(float));
            float maxv = -INFINITY, sum = 0.0f;
            int normalised = 0;
            for (int t0 = 0; t0 <= pos; t0 += DECODE_CHUNK) {
                int n = pos + 1 - t0 < DECODE_CHUNK ? pos + 1 - t0 : DECODE_CHUNK;
                float cmax = maxv;
                for (int i = 0; i < n; i++) {
                    s[i] = cpu_dot(q, kc + (size_t)(t0 + i) * hs, hs) * scale;
                    if (s[i] > cmax) cmax = s[i];
                }
                if (cmax > maxv && t0 > 0) {
                    float r = expf(maxv - cmax);
                    sum *= r;
                    for (int i = 0; i < hs; i++) o[i] *= r;
                }
                maxv = cmax;
                for (int i = 0; i < n; i++) {
                    float e = expf(s[i] - maxv);
                    s[i] = e;
                    sum += e;
                }
                /* normalise like the forward (att = e/sum, then Σ att·v) when
                 * there is a single chunk, so decode matches it to rounding */
                if (t0 == 0 && n == pos + 1) {
                    float inv = sum == 0.0f ? 0.0f : 1.0f / sum;
                    for (int i = 0; i < n; i++) cpu_axpy(o, s[i] * inv, vc + (size_t)i * hs, hs);
                    normalised = 1;
                    break;
                }
                for (int i = 0; i < n; i++) cpu_axpy(o, s[i], vc + (size_t)(t0 + i) * hs, hs);
            }
            if (!normalised) {
                float inv = sum == 0.0f ? 0.0f : 1.0f / sum;
                for (int i = 0; i < hs; i++) o[i] *= inv;
            }
        }
}

void cpu_register_attention(Backend *be) {
    be->attention_forward = cpu_attention_forward;
    be->attention_backward = cpu_attention_backward;
    be->attention_decode = cpu_attention_decode;
    be->kv_fill = cpu_kv_fill;
}
