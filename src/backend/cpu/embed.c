/* embed.c — token + position embeddings of the CPU backend (llm.c encoder).
 * pos0 shifts the positions so that a continuation of a cached prefix gets
 * the right wpe rows. The backward scatters (+=) into dwte and dwpe; repeated
 * tokens accumulate.
 */
#include "cpu_internal.h"

/* out (B,T,C) = wte[inp[b,t]] + wpe[t + pos0]; inp (B,T); wte (V,C); wpe (maxT,C) */
static void cpu_encoder_forward(float *out, const int *inp, const float *wte, const float *wpe,
                                int B, int T, int C, int pos0) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float *restrict o = out + ((size_t)b * T + t) * C;
            const float *restrict e = wte + (size_t)inp[b * T + t] * C;
            const float *restrict p = wpe + (size_t)(t + pos0) * C;
            for (int c = 0; c < C; c++) o[c] = e[c] + p[c];
        }
}

static void cpu_encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inp,
                                 int B, int T, int C, int pos0) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const float *restrict d = dout + ((size_t)b * T + t) * C;
            if (dwte) {
                float *restrict e = dwte + (size_t)inp[b * T + t] * C;
                for (int c = 0; c < C; c++) e[c] += d[c];
            }
            if (dwpe) {
                float *restrict p = dwpe + (size_t)(t + pos0) * C;
                for (int c = 0; c < C; c++) p[c] += d[c];
            }
        }
}

void cpu_register_embed(Backend *be) {
    be->encoder_forward = cpu_encoder_forward;
    be->encoder_backward = cpu_encoder_backward;
}
