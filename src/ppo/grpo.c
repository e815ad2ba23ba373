/* grpo.c — the pure pieces of GRPO (Shao et al., DeepSeekMath, 2024): group-relative advantages of outcome
 * and of process rewards (pooled, or with a per-position baseline), their batch-wide scale (REINFORCE++-baseline),
 * a diagnostic of how much of a token's advantage its own step explains, and the k3 estimator of KL(actor‖ref)
 * that its actor loss adds to the clipped surrogate. Host arrays, no model, no MPI; tested against hand-computed
 * values (tests/test_ppo_pure.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/ppo.h"
#include "nereus/util.h"

void grpo_group_advantages(const float *reward, int B, int G, int use_std, float eps, float *adv) {
    /* rows g·G .. g·G+G−1 are one prompt's responses; A_i = (r_i − mean) / (std + eps), std the sample standard
       deviation (n − 1, as verl and TRL take it); equal rewards give 0, never NaN (eps > 0) */
    for (int g0 = 0; g0 + G <= B; g0 += G) {
        double mean = 0, ss = 0;
        for (int i = 0; i < G; i++) mean += reward[g0 + i];
        mean /= G;
        for (int i = 0; i < G; i++) ss += ((double)reward[g0 + i] - mean) * ((double)reward[g0 + i] - mean);
        double sd = G > 1 ? sqrt(ss / (G - 1)) : 0.0;
        for (int i = 0; i < G; i++) {
            double a = (double)reward[g0 + i] - mean;
            adv[g0 + i] = (float)(use_std ? a / (sd + (double)eps) : a);
        }
    }
}

/* The mean and the divisor (sample standard deviation + eps, or 1 without use_std) of the n values
 * x[rows[r]·S + j], j < len[rows[r]], over the G rows from row g0. */
static void group_moments(const float *x, const int *len, int S, int g0, int G, int use_std, float eps,
                          double *mean, double *div) {
    double sum = 0, ss = 0, n = 0;
    for (int b = g0; b < g0 + G; b++)
        for (int j = 0; j < len[b]; j++) { sum += x[(size_t)b * S + j]; n += 1; }
    double m = n > 0 ? sum / n : 0.0;
    for (int b = g0; b < g0 + G; b++)
        for (int j = 0; j < len[b]; j++) ss += ((double)x[(size_t)b * S + j] - m) * ((double)x[(size_t)b * S + j] - m);
    double sd = n > 1 ? sqrt(ss / (n - 1)) : 0.0;
    *mean = m;
    *div = use_std ? sd + (double)eps : 1.0;
}

/* A row's return-to-go at each of its L tokens: the sum of its step credits c[j], each as (c[j] − mean) / div,
 * of the steps taken at or after the token (step j taken at token min(j, L − 1)), into rtg (S); 0 from L on. */
static void row_return_to_go(const float *c, int nsteps, int L, int S, double mean, double div, double *rtg) {
    memset(rtg, 0, (size_t)S * sizeof(double));
    for (int j = 0; j < nsteps && L > 0; j++) rtg[j < L - 1 ? j : L - 1] += ((double)c[j] - mean) / div;
    for (int t = L - 2; t >= 0; t--) rtg[t] += rtg[t + 1];
}

void grpo_process_advantages(const float *credit, const int *nsteps, const int *resp_len, int S, int B, int G,
                             int use_std, float eps, float *adv) {
    /* DeepSeekMath 4.1.3: each step reward normalised by the mean and standard deviation of all the step
       rewards of the group; a token's advantage is the sum of the normalised rewards of the steps taken at
       or after it. Step j of row b is taken at token min(j, resp_len[b] − 1). */
    double *rtg = nr_xmalloc((size_t)S * sizeof(double));
    for (int g0 = 0; g0 + G <= B; g0 += G) {
        double mean, div;
        group_moments(credit, nsteps, S, g0, G, use_std, eps, &mean, &div);
        for (int b = g0; b < g0 + G; b++) {
            row_return_to_go(credit + (size_t)b * S, nsteps[b], resp_len[b], S, mean, div, rtg);
            for (int t = 0; t < S; t++) adv[(size_t)b * S + t] = (float)rtg[t];
        }
    }
    free(rtg);
}

void grpo_position_advantages(const float *credit, const int *nsteps, const int *resp_len, int S, int B, int G,
                              int use_std, float eps, float *adv) {
    /* a per-position group baseline: token t of row b gets its return-to-go minus the mean return-to-go at
       token t of the group's rows that reach t (over their sample standard deviation + eps with use_std) */
    double *rtg = nr_xmalloc((size_t)G * S * sizeof(double));
    for (int g0 = 0; g0 + G <= B; g0 += G) {
        for (int i = 0; i < G; i++)
            row_return_to_go(credit + (size_t)(g0 + i) * S, nsteps[g0 + i], resp_len[g0 + i], S, 0.0, 1.0,
                             rtg + (size_t)i * S);
        for (int t = 0; t < S; t++) {
            double sum = 0, ss = 0, n = 0;
            for (int i = 0; i < G; i++)
                if (t < resp_len[g0 + i]) { sum += rtg[(size_t)i * S + t]; n += 1; }
            double m = n > 0 ? sum / n : 0.0;
            for (int i = 0; i < G; i++)
                if (t < resp_len[g0 + i]) ss += (rtg[(size_t)i * S + t] - m) * (rtg[(size_t)i * S + t] - m);
            double div = use_std ? (n > 1 ? sqrt(ss / (n - 1)) : 0.0) + (double)eps : 1.0;
            for (int i = 0; i < G; i++)
                adv[(size_t)(g0 + i) * S + t] = t < resp_len[g0 + i] ? (float)((rtg[(size_t)i * S + t] - m) / div) : 0.0f;
        }
    }
    free(rtg);
}

void grpo_batch_scale(float *adv, const int *resp_len, int S, int B, float eps) {
    /* REINFORCE++-baseline's global normalisation: the group-centred advantages over their spread across every
       response token of the batch, taken about 0 (the root mean square: each group's advantages are centred
       already), so that equal advantages, all 0 or not, stay bounded */
    double n = 0, ss = 0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < resp_len[b]; t++) { ss += (double)adv[(size_t)b * S + t] * adv[(size_t)b * S + t]; n += 1; }
    double div = (n > 0 ? sqrt(ss / n) : 0.0) + (double)eps;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < resp_len[b]; t++) adv[(size_t)b * S + t] = (float)(adv[(size_t)b * S + t] / div);
}

void grpo_advantage_signal(const float *adv, const float *credit, const int *nsteps, const int *resp_len, int S,
                           int B, double out[3]) {
    /* over the tokens that take exactly one step (t < min(nsteps, resp_len − 1)): the mean squared advantage,
       the correlation of the advantage with the token's own step credit, squared (the share of the advantage's
       variance that the token's own action explains), and the token count */
    double n = 0, sa = 0, sc = 0, saa = 0, scc = 0, sac = 0;
    for (int b = 0; b < B; b++) {
        int single = NR_MIN(nsteps[b], resp_len[b] - 1);
        for (int t = 0; t < single; t++) {
            double a = adv[(size_t)b * S + t], c = credit[(size_t)b * S + t];
            n += 1; sa += a; sc += c; saa += a * a; scc += c * c; sac += a * c;
        }
    }
    double va = n > 0 ? saa / n - (sa / n) * (sa / n) : 0, vc = n > 0 ? scc / n - (sc / n) * (sc / n) : 0;
    double cov = n > 0 ? sac / n - (sa / n) * (sc / n) : 0;
    out[0] = n > 0 ? saa / n : 0;
    out[1] = va > 0 && vc > 0 ? cov * cov / (va * vc) : 0;
    out[2] = n;
}

double grpo_kl_k3(const float *logp, const float *logp_ref, const float *w, int n, float beta, float *dlogp) {
    /* k3 = exp(x) − x − 1 with x = log π_ref − log π (≥ 0, unbiased for KL(π‖π_ref) under samples of π);
       d k3 / d log π = 1 − exp(x). x is clamped to ±GRPO_K3_CLAMP so that a token the reference finds far
       likelier than the actor cannot overflow exp. */
    double sum = 0;
    for (int k = 0; k < n; k++) {
        if (w[k] == 0.0f) continue;
        double x = (double)logp_ref[k] - (double)logp[k];
        if (x > GRPO_K3_CLAMP) x = GRPO_K3_CLAMP;
        if (x < -GRPO_K3_CLAMP) x = -GRPO_K3_CLAMP;
        double ex = exp(x);
        sum += (double)w[k] * (ex - x - 1.0);
        if (dlogp) dlogp[k] += (float)((double)beta * w[k] * (1.0 - ex));
    }
    return sum;
}
int ppo_is_grpo(const Config *cfg) { return strcmp(cfg->ppo.algorithm, "grpo") == 0; }

float ppo_tis_cap(const Config *cfg) {
    const PpoConfig *p = &cfg->ppo;
    if (strcmp(p->correction, "none") == 0) return 0.0f;
    /* auto: on where a batch can be stale, the deck's K or one the live planner may choose */
    if (strcmp(p->correction, "auto") == 0 && p->max_staleness == 0 && cfg->planner.max_staleness <= 0 &&
        p->tis_cap == 0.0f)
        return 0.0f;
    return p->tis_cap > 0.0f ? p->tis_cap : 2.0f; /* decoupled: Yao et al.'s usual cap where the deck sets none */
}
