/* rope.h — the inverse frequencies of rotary position embeddings (RoPE), a
 * pure function of the model config, as transformers computes them for the
 * "default" and "llama3" rope types. The backend's rope_forward takes the
 * result (uploaded to backend memory) and forms cos/sin per position.
 */
#ifndef NEREUS_ROPE_H
#define NEREUS_ROPE_H

/* Llama-3 (3.1, 3.2) frequency scaling: config.json's rope_scaling with
 * rope_type "llama3" */
typedef struct RopeScaling {
    double factor;                        /* e.g. 8 (3.1) or 32 (3.2) */
    double low_freq_factor;               /* e.g. 1 */
    double high_freq_factor;              /* e.g. 4 */
    int original_max_position_embeddings; /* e.g. 8192 */
} RopeScaling;

/* out (hs/2) = 1 / theta^(2i/hs) for i in [0, hs/2), then, when s is not
 * NULL, rescaled per wavelength 2π/inv_freq as transformers'
 * _compute_llama3_parameters does: wavelengths above original/low_freq_factor
 * are divided by factor, those below original/high_freq_factor kept, and
 * those between blended smoothly. Computed in float32 as transformers
 * computes it (its tensors are float32; Python scalars enter as float32).
 * hs even. */
void rope_inv_freq(float *out, int hs, double theta, const RopeScaling *s);

#endif
