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
#include "nereus/ppo_token.h"

/* logp, logp_old, adv, w (N) → loss (1), dlogp (N) OVERWRITES, clipfrac (1), approx_kl (1) */
static void cpu_ppo_policy_loss(float *loss, float *dlogp, float *clipfrac, float *approx_kl,
                                const float *logp, const float *logp_old, const float *adv,
                                const float *w, int N, float eps_lo, float eps_hi) {
    PpoPolicySums s = {0};
    for (int n = 0; n < N; n++)
        ppo_policy_add(&s, logp[n] - logp_old[n], adv[n], w[n], eps_lo, eps_hi, dlogp ? dlogp + n : NULL);
    if (loss) *loss = (float)s.loss;
    if (clipfrac) *clipfrac = s.w != 0.0 ? (float)(s.clipped / s.w) : 0.0f;
    if (approx_kl) *approx_kl = s.w != 0.0 ? (float)(s.kl / s.w) : 0.0f;
}

/* v, v_old, ret, w (N) → loss (1), dv (N) OVERWRITES;
 * vc = v_old + clip(v − v_old, ±eps), l = 0.5·max((v − R)², (vc − R)²) */
static void cpu_ppo_value_loss(float *loss, float *dv, const float *v, const float *v_old,
                               const float *ret, const float *w, int N, float eps) {
    double L = 0.0;
    for (int n = 0; n < N; n++) {
        float dl;
        L += (double)w[n] * ppo_value_token(v[n], v_old[n], ret[n], eps, &dl);
        if (dv) dv[n] = w[n] * dl;
    }
    if (loss) *loss = (float)L;
}

void cpu_register_ppo(Backend *be) {
    be->ppo_policy_loss = cpu_ppo_policy_loss;
    be->ppo_value_loss = cpu_ppo_value_loss;
}
