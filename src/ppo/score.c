/* score.c — the inf stage: log-probs and values of one model over a slice
 * of the rollout's rows, and the pure step from those to advantages: rule
 * rewards (plus an optional frozen reward network's score), per-token
 * KL-penalised rewards, GAE advantages and returns. */
#include <math.h>
#include <string.h>

#include "nereus/ppo.h"
#include "nereus/util.h"

void rollout_finish(Rollout *r) {
    int rmax = 1;
    for (int b = 0; b < r->B; b++) rmax = NR_MAX(rmax, r->resp_len[b]);
    int T = r->T = r->P + rmax;
    for (int b = 0; b < r->B; b++) {
        int *src = r->tokens + (size_t)b * r->Tcap, *seq = r->seq + (size_t)b * T;
        memcpy(seq, src, (size_t)T * sizeof(int));
        for (int t = r->P + r->resp_len[b]; t < T; t++) seq[t] = TOK_EOS;
        for (int t = 0; t < T; t++) {
            int j = t - (r->P - 1); /* response token index predicted at t */
            int valid = j >= 0 && j < r->resp_len[b];
            r->targets[(size_t)b * T + t] = valid ? seq[t + 1] : -1;
            r->mask[(size_t)b * T + t] = valid ? 1.0f : 0.0f;
        }
    }
}

void ppo_infer_logp(GPT *m, const Rollout *r, int row0, int n, float *out) {
    size_t o = (size_t)row0 * r->T;
    gpt_forward(m, r->seq + o, n, r->T, 1, 0);
    gpt_logprob(m, r->targets + o, out, NULL);
}

void ppo_infer_values(GPT *m, const Rollout *r, int row0, int n, float *out) {
    gpt_forward(m, r->seq + (size_t)row0 * r->T, n, r->T, 0, 1);
    m->be->download(out, m->a.values, (size_t)n * r->T * sizeof(float));
}

void ppo_advantages(Rollout *r, const Config *cfg, int have_rm, StepStats *st) {
    int B = r->B, T = r->T;
    double sum_rew = 0, sum_score = 0, sum_kl = 0, ntok = 0, sum_len = 0;
    for (int b = 0; b < B; b++) {
        const int *seq = r->seq + (size_t)b * T;
        float tr = task_reward(r->answer + (size_t)b * r->amax, r->answer_len[b], seq + r->P, r->resp_len[b]);
        r->task_reward[b] = tr;
        float sc = tr;
        /* the reward network's value at the last response token */
        if (have_rm) sc += cfg->reward.network_weight * r->rm_values[(size_t)b * T + r->P - 1 + r->resp_len[b]];
        r->score[b] = sc;
        sum_rew += tr;
        sum_score += sc;
        sum_len += r->resp_len[b];
    }
    /* per-token rewards: −β·(log π − log π_ref), plus the score on the last token */
    for (int b = 0; b < B; b++) {
        float *rw = r->rewards + (size_t)b * T;
        for (int t = 0; t < T; t++) {
            size_t i = (size_t)b * T + t;
            if (r->mask[i] == 0.0f) { rw[t] = 0.0f; continue; }
            double kl = (double)r->logp_old[i] - (double)r->logp_ref[i];
            sum_kl += kl;
            ntok += 1;
            rw[t] = (float)(-cfg->ppo.kl_beta * kl);
        }
        rw[r->P - 1 + r->resp_len[b] - 1] += r->score[b];
    }
    /* GAE over each sequence's response positions; zero elsewhere */
    memset(r->adv, 0, (size_t)B * T * sizeof(float));
    memset(r->ret, 0, (size_t)B * T * sizeof(float));
    for (int b = 0; b < B; b++) {
        size_t o = (size_t)b * T + (size_t)(r->P - 1);
        gae_sequence(r->adv + o, r->ret + o, r->rewards + o, r->values + o, r->resp_len[b], cfg->ppo.gamma,
                     cfg->ppo.lam);
    }
    if (cfg->ppo.whiten_advantages) whiten_masked(r->adv, r->mask, (size_t)B * T);
    st->reward = sum_rew / B;
    st->score = sum_score / B;
    st->kl = ntok > 0 ? sum_kl / ntok : 0.0;
    st->resp_len = sum_len / B;
    st->tokens = (double)B * T;
}
