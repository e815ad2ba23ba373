/* test_ppo_pure.c — GAE, masked whitening, GRPO's group advantages (outcome and process), its k3 KL term,
 * its per-position baseline and batch-wide std, the advantage-signal diagnostic, the task reward's per-position
 * credits and the clip-higher surrogate against hand-computed values. */
#include <math.h>

#include "check.h"
#include "nereus/ppo.h"
#include "nereus/ppo_token.h"
#include "nereus/task.h"

#define NEAR(a, b) (fabs((double)(a) - (double)(b)) < 1e-5)

/* group advantages: two groups of two, one group of four with and without the std, equal rewards */
static void test_group_advantages(void) {
    float r[4] = {1, 0, 0.5f, 0.5f}, a[4];
    /* group 0: mean 0.5, sample std sqrt((0.25 + 0.25) / 1) = 0.70711: ±0.5 / 0.70711 = ±0.70711; group 1 equal: 0 */
    grpo_group_advantages(r, 4, 2, 1, 1e-6f, a);
    CHECK(NEAR(a[0], 0.707106) && NEAR(a[1], -0.707106) && a[2] == 0.0f && a[3] == 0.0f,
          "GRPO G=2: %.6f %.6f %.6f %.6f", a[0], a[1], a[2], a[3]);
    /* one group of four [1, 0, 0, 0]: mean 0.25, Σ(r − mean)² = 0.75, sample std 0.5: 1.5, −0.5 ×3 */
    float r4[4] = {1, 0, 0, 0};
    grpo_group_advantages(r4, 4, 4, 1, 1e-6f, a);
    CHECK(NEAR(a[0], 1.5) && NEAR(a[1], -0.5) && NEAR(a[2], -0.5) && NEAR(a[3], -0.5), "GRPO G=4: %.6f %.6f %.6f %.6f",
          a[0], a[1], a[2], a[3]);
    /* group_std = false: the difference from the mean alone */
    grpo_group_advantages(r4, 4, 4, 0, 1e-6f, a);
    CHECK(NEAR(a[0], 0.75) && NEAR(a[1], -0.25) && NEAR(a[3], -0.25), "GRPO without std: %.6f %.6f", a[0], a[1]);
    /* equal rewards, also ones whose float mean rounds (0.1 ×3): zero advantage, never NaN */
    float e[6] = {0.1f, 0.1f, 0.1f, 0, 0, 0};
    grpo_group_advantages(e, 6, 3, 1, 1e-6f, a);
    int zero = 1;
    for (int i = 0; i < 6; i++) zero = zero && isfinite(a[i]) && fabs(a[i]) < 1e-6;
    CHECK(zero, "GRPO equal rewards give zero advantage, finite");
}

/* the k3 term: value, gradient by hand and by finite differences, zero at equality, clamped far away */
static void test_k3(void) {
    /* logp −1, ref −2: x = −1, k3 = e^−1 + 1 − 1 = 0.367879; w 0.5: Σ w·k3 = 0.183940;
       dlogp += β·w·(1 − e^−1) = 0.1·0.5·0.632121 = 0.031606 (on top of what is there: 1) */
    float lp[3] = {-1, -3, -100}, ref[3] = {-2, -3, 0}, w[3] = {0.5f, 0.25f, 0}, d[3] = {1, 0, 0};
    double k = grpo_kl_k3(lp, ref, w, 2, 0.1f, d);
    CHECK(NEAR(k, 0.183940) && NEAR(d[0], 1.031606) && d[1] == 0.0f, "k3: sum %.6f, dlogp %.6f %.6f", k, d[0], d[1]);
    /* a zero weight is no token; the clamp keeps a huge x finite */
    float w1[3] = {0, 0, 1};
    d[2] = 0;
    k = grpo_kl_k3(lp, ref, w1, 3, 1.0f, d);
    CHECK(isfinite(k) && isfinite(d[2]) && NEAR(k, exp(GRPO_K3_CLAMP) - GRPO_K3_CLAMP - 1),
          "k3 clamps x = 100 to %g: %g", GRPO_K3_CLAMP, k);
    /* the gradient against central differences of β·Σ w·k3 */
    float x0[1] = {-1.3f}, r0[1] = {-0.7f}, w0[1] = {0.8f}, g[1] = {0};
    grpo_kl_k3(x0, r0, w0, 1, 0.3f, g);
    float xp[1] = {x0[0] + 1e-3f}, xm[1] = {x0[0] - 1e-3f};
    double fd = 0.3 * (grpo_kl_k3(xp, r0, w0, 1, 0, NULL) - grpo_kl_k3(xm, r0, w0, 1, 0, NULL)) / (xp[0] - xm[0]);
    CHECK(fabs(g[0] - fd) < 1e-4, "k3 gradient %.6f, finite differences %.6f", g[0], fd);
}

/* the task reward position by position: hand values, the step count, and the credits summing to task_reward */
static void test_reward_steps(void) {
    const int E = TOK_EOS;
    int ans[4] = {4, 3, 2, 1};
    int ok[5] = {4, 3, 2, 1, E}, half[3] = {4, 9, E}, lng[8] = {4, 3, 0, 0, 0, 0, 0, 0}, empty[1] = {E},
        late[6] = {4, 3, 2, 1, 7, E};
    const int *resp[5] = {ok, half, lng, empty, late};
    int len[5] = {5, 3, 8, 1, 6}, want_steps[5] = {4, 4, 8, 4, 5};
    float c[8];
    /* half: 2 digits then EOS, 4 steps (the answer's), credit 0.25 at step 0 only (digit 1 is wrong) */
    int n = task_reward_steps(ans, 4, half, 3, c);
    CHECK(n == 4 && c[0] == 0.25f && c[1] == 0.0f && c[2] == 0.0f && c[3] == 0.0f, "credits of 4 9 $: %d steps, %g %g",
          n, c[0], c[1]);
    /* too long: 8 digits without EOS, 8 steps of 1/8, two of them right */
    n = task_reward_steps(ans, 4, lng, 8, c);
    CHECK(n == 8 && c[0] == 0.125f && c[1] == 0.125f && c[2] == 0.0f && c[7] == 0.0f, "credits of 43000000: %d, %g",
          n, c[0]);
    for (int k = 0; k < 5; k++) {
        n = task_reward_steps(ans, 4, resp[k], len[k], c);
        double sum = 0;
        for (int j = 0; j < n; j++) sum += c[j];
        float tr = task_reward(ans, 4, resp[k], len[k]);
        CHECK(n == want_steps[k] && fabs(sum - tr) < 1e-6, "response %d: %d steps, credits sum %.7f, task_reward %.7f",
              k, n, sum, tr);
    }
}

/* process advantages, DeepSeekMath 4.1.3, by hand: one group of two, credits [0.5, 0] and [0.5, 0.5] */
static void test_process_advantages(void) {
    enum { S = 4 };
    float c[2 * S] = {0.5f, 0, 0, 0, 0.5f, 0.5f, 0, 0}, a[2 * S];
    int ns[2] = {2, 2}, rl[2] = {3, 3};
    /* step rewards 0.5, 0, 0.5, 0.5: mean 0.375, sample std sqrt(0.1875 / 3) = 0.25; normalised 0.5, −1.5 and
       0.5, 0.5; token 0 sums both steps, token 1 its own, the EOS (token 2) none: −1, −1.5, 0 and 1, 0.5, 0 */
    grpo_process_advantages(c, ns, rl, S, 2, 2, 1, 1e-6f, a);
    CHECK(NEAR(a[0], -1.0) && NEAR(a[1], -1.5) && a[2] == 0.0f && a[3] == 0.0f && NEAR(a[4], 1.0) &&
              NEAR(a[5], 0.5) && a[6] == 0.0f, "process G=2: %.6f %.6f %.6f | %.6f %.6f %.6f", a[0], a[1], a[2], a[4],
          a[5], a[6]);
    /* without the std: the differences from the mean, 0.125, −0.375 and 0.125, 0.125 */
    grpo_process_advantages(c, ns, rl, S, 2, 2, 0, 1e-6f, a);
    CHECK(NEAR(a[0], -0.25) && NEAR(a[1], -0.375) && NEAR(a[4], 0.25) && NEAR(a[5], 0.125),
          "process without std: %.6f %.6f %.6f %.6f", a[0], a[1], a[4], a[5]);
    /* the first response is its EOS alone (resp_len 1): both its steps are taken at token 0, 0.5 − 1.5 = −1 */
    int rl_early[2] = {1, 3};
    grpo_process_advantages(c, ns, rl_early, S, 2, 2, 1, 1e-6f, a);
    CHECK(NEAR(a[0], -1.0) && a[1] == 0.0f && NEAR(a[4], 1.0) && NEAR(a[5], 0.5), "process, early EOS: %.6f %.6f %.6f",
          a[0], a[1], a[4]);
    /* equal step rewards, and a group with one step in all: zero, never NaN */
    float e[2 * S] = {0.25f, 0.25f, 0.25f, 0, 0.25f, 0, 0, 0};
    int ns_e[2] = {3, 1}, rl_e[2] = {4, 2}, ns_1[2] = {1, 0}, rl_1[2] = {2, 1};
    int zero = 1;
    grpo_process_advantages(e, ns_e, rl_e, S, 2, 2, 1, 1e-6f, a);
    for (int i = 0; i < 2 * S; i++) zero = zero && isfinite(a[i]) && fabs(a[i]) < 1e-6;
    grpo_process_advantages(e, ns_1, rl_1, S, 2, 2, 1, 1e-6f, a);
    for (int i = 0; i < 2 * S; i++) zero = zero && isfinite(a[i]) && fabs(a[i]) < 1e-6;
    CHECK(zero, "process: equal step rewards, or one step in the group, give zero advantage, finite");
}

/* the per-position group baseline, by hand: the same group of two, credits [0.5, 0] and [0.5, 0.5] */
static void test_position_advantages(void) {
    enum { S = 4 };
    float c[2 * S] = {0.5f, 0, 0, 0, 0.5f, 0.5f, 0, 0}, a[2 * S];
    int ns[2] = {2, 2}, rl[2] = {3, 3};
    /* returns-to-go 0.5, 0, 0 and 1, 0.5, 0; token 0: mean 0.75, token 1: mean 0.25, each a sample std of
       sqrt(2 · 0.25² / 1) = 0.35355: ∓0.70711 at both; the EOS (token 2): equal, 0 */
    grpo_position_advantages(c, ns, rl, S, 2, 2, 1, 1e-6f, a);
    CHECK(NEAR(a[0], -0.707107) && NEAR(a[1], -0.707107) && a[2] == 0.0f && a[3] == 0.0f && NEAR(a[4], 0.707107) &&
              NEAR(a[5], 0.707107) && a[6] == 0.0f, "position G=2: %.6f %.6f %.6f | %.6f %.6f %.6f", a[0], a[1], a[2],
          a[4], a[5], a[6]);
    grpo_position_advantages(c, ns, rl, S, 2, 2, 0, 1e-6f, a);
    CHECK(NEAR(a[0], -0.25) && NEAR(a[1], -0.25) && NEAR(a[4], 0.25) && NEAR(a[5], 0.25),
          "position without std: %.6f %.6f %.6f %.6f", a[0], a[1], a[4], a[5]);
    /* the first response is its EOS alone: its return-to-go 0.5 at token 0 against 1; token 1 is the second
       row's alone, so 0 */
    int rl_early[2] = {1, 3};
    grpo_position_advantages(c, ns, rl_early, S, 2, 2, 1, 1e-6f, a);
    CHECK(NEAR(a[0], -0.707107) && a[1] == 0.0f && NEAR(a[4], 0.707107) && a[5] == 0.0f,
          "position, early EOS: %.6f %.6f %.6f %.6f", a[0], a[1], a[4], a[5]);
}

/* the batch-wide spread (group_std_scope = batch): response tokens 3, −1 | 1 (padding 9 untouched); root mean
   square sqrt(11 / 3) = 1.91485: 1.56670, −0.52223 | 0.52223; equal advantages 0.5, 0.5 become 1, 1; zeros stay 0 */
static void test_batch_scale(void) {
    enum { S = 3 };
    float a[2 * S] = {3, -1, 9, 1, 9, 9};
    int rl[2] = {2, 1};
    grpo_batch_scale(a, rl, S, 2, 1e-6f);
    CHECK(NEAR(a[0], 1.566699) && NEAR(a[1], -0.522233) && a[2] == 9.0f && NEAR(a[3], 0.522233) && a[4] == 9.0f,
          "batch scale: %.6f %.6f %.6f | %.6f", a[0], a[1], a[2], a[3]);
    float e[S] = {0.5f, 0.5f, 0}, z[S] = {0, 0, 0};
    int rl1[1] = {2};
    grpo_batch_scale(e, rl1, S, 1, 1e-6f);
    grpo_batch_scale(z, rl1, S, 1, 1e-6f);
    CHECK(NEAR(e[0], 1.0) && NEAR(e[1], 1.0) && e[2] == 0.0f && z[0] == 0.0f && z[1] == 0.0f,
          "batch scale of equal advantages: %g %g, of zeros: %g %g", e[0], e[1], z[0], z[1]);
}

/* the advantage-signal diagnostic: advantages twice the credits are all own-credit signal (r² 1) */
static void test_advantage_signal(void) {
    float c[5] = {0.25f, 0, 0.25f, 0.25f, 0}, a[5] = {0.5f, 0, 0.5f, 0.5f, 0};
    int ns[1] = {4}, rl[1] = {5};
    double out[3];
    grpo_advantage_signal(a, c, ns, rl, 5, 1, out);
    CHECK(NEAR(out[0], 0.1875) && NEAR(out[1], 1.0) && out[2] == 4.0, "advantage signal: %.4f %.4f %.0f", out[0], out[1],
          out[2]);
}

int main(void) {
    test_group_advantages();
    test_k3();
    test_reward_steps();
    test_process_advantages();
    test_position_advantages();
    test_batch_scale();
    test_advantage_signal();
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
