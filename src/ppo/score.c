/* score.c — the inf stage: actor and ref log-probs of the sampled tokens,
 * critic values, rule rewards (plus an optional frozen reward network), the
 * per-token KL-penalised rewards, and GAE advantages and returns. */
#include <math.h>
#include <string.h>

#include "nereus/ppo.h"
#include "nereus/util.h"

/* Dense (B, T) sequences, EOS-padded, with targets and mask. */
static void rollout_finish(Rollout *r) {
    int T = r->T;
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

void ppo_score(Rollout *r, Models *ms, const Config *cfg, StepStats *st) {
    int B = r->B, T = r->T;
    rollout_finish(r);
    gpt_forward(&ms->actor, r->seq, B, T, 1, 0);
    gpt_logprob(&ms->actor, r->targets, r->logp_old, NULL);
    gpt_forward(&ms->ref, r->seq, B, T, 1, 0);
    gpt_logprob(&ms->ref, r->targets, r->logp_ref, NULL);
    gpt_forward(&ms->critic, r->seq, B, T, 0, 1);
    ms->critic.be->download(r->values, ms->critic.a.values, (size_t)B * T * sizeof(float));
    if (ms->have_reward_net) {
        /* the frozen network's value at the last response token; rewards is scratch until formed below */
        gpt_forward(&ms->reward, r->seq, B, T, 0, 1);
        ms->reward.be->download(r->rewards, ms->reward.a.values, (size_t)B * T * sizeof(float));
    }
    double sum_rew = 0, sum_score = 0, sum_kl = 0, ntok = 0, sum_len = 0;
    for (int b = 0; b < B; b++) {
        const int *seq = r->seq + (size_t)b * T;
        float tr = task_reward(r->answer + (size_t)b * r->amax, r->answer_len[b], seq + r->P, r->resp_len[b]);
        r->task_reward[b] = tr;
        float sc = tr;
        if (ms->have_reward_net) sc += cfg->reward.network_weight * r->rewards[(size_t)b * T + r->P - 1 + r->resp_len[b]];
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
