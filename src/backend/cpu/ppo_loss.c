/* ppo_loss.c — the per-token PPO losses of the CPU backend: the clipped
 * policy surrogate (with clip fraction and the k3 approximate KL estimator)
 * and the clipped value loss. Sums are accumulated in double. Each max(·,·)
 * breaks ties towards the unclipped branch, so the derivative is the
 * unclipped one on a tie and 0 where the clipped branch wins strictly (there
 * the clipped quantity is constant in the input). "Clipped" in clipfrac means
 * exactly that: the clipped branch wins strictly, so the token gets no
 * gradient.
 */
#include <math.h>

#include "cpu_internal.h"

/* logp, logp_old, adv, w (N) → loss (1), dlogp (N) OVERWRITES, clipfrac (1), approx_kl (1) */
static void cpu_ppo_policy_loss(float *loss, float *dlogp, float *clipfrac, float *approx_kl,
                                const float *logp, const float *logp_old, const float *adv,
                                const float *w, int N, float eps) {
    double L = 0.0, W = 0.0, clipped = 0.0, kl = 0.0;
    const float lo = 1.0f - eps, hi = 1.0f + eps;
    for (int n = 0; n < N; n++) {
        float lr = logp[n] - logp_old[n];
        float r = expf(lr);
        float A = adv[n];
        float rc = r < lo ? lo : (r > hi ? hi : r);
        float un = -A * r, cl = -A * rc;
        float wn = w[n];
        int use_clip = cl > un;
        L += (double)wn * (use_clip ? cl : un);
        if (dlogp) dlogp[n] = use_clip ? 0.0f : wn * un; /* ∂(−A·e^lr)/∂lr = −A·r */
        W += wn;
        clipped += use_clip ? (double)wn : 0.0;
        kl += (double)wn * ((double)r - 1.0 - (double)lr);
    }
    if (loss) *loss = (float)L;
    if (clipfrac) *clipfrac = W != 0.0 ? (float)(clipped / W) : 0.0f;
    if (approx_kl) *approx_kl = W != 0.0 ? (float)(kl / W) : 0.0f;
}

/* v, v_old, ret, w (N) → loss (1), dv (N) OVERWRITES;
 * vc = v_old + clip(v − v_old, ±eps), l = 0.5·max((v − R)², (vc − R)²) */
static void cpu_ppo_value_loss(float *loss, float *dv, const float *v, const float *v_old,
                               const float *ret, const float *w, int N, float eps) {
    double L = 0.0;
    for (int n = 0; n < N; n++) {
        float d = v[n] - v_old[n];
        d = d < -eps ? -eps : (d > eps ? eps : d);
        float vc = v_old[n] + d;
        float eu = v[n] - ret[n], ec = vc - ret[n];
        float su = eu * eu, sc = ec * ec;
        int use_clip = sc > su;
        L += 0.5 * (double)w[n] * (use_clip ? sc : su);
        if (dv) dv[n] = use_clip ? 0.0f : w[n] * eu;
    }
    if (loss) *loss = (float)L;
}

void cpu_register_ppo(Backend *be) {
    be->ppo_policy_loss = cpu_ppo_policy_loss;
    be->ppo_value_loss = cpu_ppo_value_loss;
}
