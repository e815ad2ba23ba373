/* rope.c — the inverse frequencies of rotary position embeddings (rope.h).
 * Each step is the float32 tensor operation transformers performs, in the
 * same order, so that the frequencies (and the cos/sin built from them) agree
 * with a Hugging Face model in float32: a Python scalar meeting a float32
 * tensor is rounded to float32 first, and every result is rounded to float32.
 */
#include "nereus/rope.h"

#include <math.h>

/* transformers' _compute_llama3_parameters on one frequency f */
static float rope_llama3_scale(float f, const RopeScaling *s) {
    const double orig = s->original_max_position_embeddings;
    const float low_wavelen = (float)(orig / s->low_freq_factor);
    const float high_wavelen = (float)(orig / s->high_freq_factor);
    const float factor = (float)s->factor;
    const float wavelen = (float)(2.0 * M_PI) / f;
    if (wavelen > low_wavelen) return f / factor;   /* low frequencies: interpolated */
    if (wavelen < high_wavelen) return f;           /* high frequencies: unchanged */
    /* in between: smooth = (orig/wavelen − low)/(high − low), blended */
    float smooth = ((float)orig / wavelen - (float)s->low_freq_factor) /
                   (float)(s->high_freq_factor - s->low_freq_factor);
    return (1.0f - smooth) * f / factor + smooth * f;
}

void rope_inv_freq(float *out, int hs, double theta, const RopeScaling *s) {
    const float base = (float)theta;
    for (int i = 0; i < hs / 2; i++) {
        /* arange(0, hs, 2).float() / hs, then base ** that, then 1 / that */
        float e = (float)(2 * i) / (float)hs;
        float f = 1.0f / powf(base, e);
        out[i] = s ? rope_llama3_scale(f, s) : f;
    }
}
