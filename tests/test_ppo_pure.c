/* test_ppo_pure.c — GAE and masked whitening against hand-computed values. */
#include <math.h>

#include "check.h"
#include "nereus/ppo.h"

#define NEAR(a, b) (fabs((double)(a) - (double)(b)) < 1e-5)

int main(void) {
    float adv[3], ret[3];
    /* γ = 1, λ = 0.95; r = [0, 0, 1], v = [0.5, 0.6, 0.7]:
     * δ2 = 1 − 0.7 = 0.3, A2 = 0.3; δ1 = 0.7 − 0.6 = 0.1, A1 = 0.1 + 0.95·0.3 = 0.385;
     * δ0 = 0.6 − 0.5 = 0.1, A0 = 0.1 + 0.95·0.385 = 0.46575 */
    float r1[3] = {0, 0, 1}, v1[3] = {0.5f, 0.6f, 0.7f};
    gae_sequence(adv, ret, r1, v1, 3, 1.0f, 0.95f);
    CHECK(NEAR(adv[0], 0.46575) && NEAR(adv[1], 0.385) && NEAR(adv[2], 0.3), "GAE γ=1 λ=0.95: %.5f %.5f %.5f",
          adv[0], adv[1], adv[2]);
    CHECK(NEAR(ret[0], 0.96575) && NEAR(ret[1], 0.985) && NEAR(ret[2], 1.0), "returns = A + V: %.5f %.5f %.5f",
          ret[0], ret[1], ret[2]);
    /* γ = 0.9, λ = 0.5; r = [1, 2], v = [0.5, 1]: A1 = 2 − 1 = 1; A0 = 1 + 0.9 − 0.5 + 0.45·1 = 1.85 */
    float r2[2] = {1, 2}, v2[2] = {0.5f, 1.0f};
    gae_sequence(adv, ret, r2, v2, 2, 0.9f, 0.5f);
    CHECK(NEAR(adv[0], 1.85) && NEAR(adv[1], 1.0), "GAE γ=0.9 λ=0.5: %.5f %.5f", adv[0], adv[1]);
    /* λ = 1, γ = 1: A_t = Σ future rewards − v_t (Monte Carlo) */
    gae_sequence(adv, ret, r1, v1, 3, 1.0f, 1.0f);
    CHECK(NEAR(adv[0], 0.5) && NEAR(adv[1], 0.4) && NEAR(adv[2], 0.3) && NEAR(ret[0], 1.0),
          "GAE λ=1 is the Monte-Carlo return minus V");
    /* λ = 0: one-step TD error */
    gae_sequence(adv, ret, r1, v1, 3, 1.0f, 0.0f);
    CHECK(NEAR(adv[0], 0.1) && NEAR(adv[1], 0.1) && NEAR(adv[2], 0.3), "GAE λ=0 is the TD error");
    float x[4] = {1, 2, 3, 100}, m[4] = {1, 1, 1, 0};
    whiten_masked(x, m, 4);
    double s = sqrt(2.0 / 3.0);
    CHECK(NEAR(x[0], -1 / s) && NEAR(x[1], 0) && NEAR(x[2], 1 / s) && x[3] == 0.0f,
          "whitening over the mask: %.4f %.4f %.4f %.1f", x[0], x[1], x[2], x[3]);
    return CHECK_DONE();
}
