/* ppo_token.h — the per-token PPO losses and their derivatives, one
 * definition for every backend (plain C on the CPU, __device__ code in
 * cuda/): the backends loop over tokens and reduce, this says what one token
 * contributes.
 *
 * Both losses take the larger of an unclipped and a clipped term. The
 * clipped term is only ever larger where the clip bound is active, and there
 * the clipped quantity is a constant, so its derivative is 0; inside the clip
 * range the clipped quantity IS the unclipped one. It is computed as such
 * (not as old + (new − old), which can differ by an ulp and would let the
 * clipped branch win on rounding alone, dropping a gradient that should be
 * there — a bug the value loss had: it made runs under different plans drift
 * apart through the critic). */
#ifndef NEREUS_PPO_TOKEN_H
#define NEREUS_PPO_TOKEN_H

#ifdef __CUDACC__
#define NR_HD __host__ __device__
#else
#define NR_HD
#endif

/* Clipped surrogate of one token: lr = log π − log π_old, A its advantage.
 * Returns l = max(−A·r, −A·clip(r, 1 − eps_lo, 1 + eps_hi)) with r = e^lr
 * (eps_hi > eps_lo: DAPO's clip-higher); *dl = ∂l/∂lr; *clipped = 1 when
 * the clipped term is the larger (the token gets no gradient). */
NR_HD static inline float ppo_policy_token(float lr, float A, float eps_lo, float eps_hi, float *dl, int *clipped) {
    float r = expf(lr);
    float lo = 1.0f - eps_lo, hi = 1.0f + eps_hi;
    float rc = r < lo ? lo : (r > hi ? hi : r);
    float un = -A * r, cl = -A * rc;
    *clipped = cl > un;
    *dl = *clipped ? 0.0f : un; /* ∂(−A·e^lr)/∂lr = −A·r */
    return *clipped ? cl : un;
}

/* The sums a backend's policy loss reduces: Σ w·l, Σ w, Σ w over clipped
 * tokens, Σ w·(r − 1 − lr) (the approx KL's numerator). */
typedef struct {
    double loss, w, clipped, kl;
} PpoPolicySums;

/* Adds one token of weight w to s; *dlogp (when dlogp is not NULL) gets
 * w·∂l/∂lr. Every backend's loop over tokens is this call. */
NR_HD static inline void ppo_policy_add(PpoPolicySums *s, float lr, float A, float w, float eps_lo, float eps_hi,
                                        float *dlogp) {
    float dl;
    int c;
    float l = ppo_policy_token(lr, A, eps_lo, eps_hi, &dl, &c);
    s->loss += (double)w * l;
    if (dlogp) *dlogp = w * dl;
    s->w += w;
    s->clipped += c ? (double)w : 0.0;
    s->kl += (double)w * ((double)expf(lr) - 1.0 - (double)lr);
}

/* Clipped value loss of one token: vc = v_old + clip(v − v_old, ±eps),
 * l = 0.5·max((v − R)², (vc − R)²). Returns l; *dl = ∂l/∂v. */
NR_HD static inline float ppo_value_token(float v, float v_old, float ret, float eps, float *dl) {
    float d = v - v_old;
    int inside = d >= -eps && d <= eps;
    float vc = inside ? v : (d < 0.0f ? v_old - eps : v_old + eps);
    float eu = v - ret, ec = vc - ret;
    float su = eu * eu, sc = ec * ec;
    if (sc > su) { /* only where the bound is active: vc does not move with v */
        *dl = 0.0f;
        return 0.5f * sc;
    }
    *dl = eu;
    return 0.5f * su;
}

#endif
