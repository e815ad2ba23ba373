/* score.c — the inf stage: log-probs and values of one model over a slice
 * of the rollout's rows, and the pure step from those to advantages: rule
 * rewards (plus an optional frozen reward network's score), then for PPO
 * per-token KL-penalised rewards, GAE advantages and returns, for GRPO each
 * response's group-relative advantage on its tokens (grpo.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/ppo.h"
#include "nereus/util.h"

int rollout_longest(const Rollout *r) {
    int n = 0;
    for (int b = 0; b < r->B; b++) n = NR_MAX(n, r->resp_len[b]);
    return n;
}

void rollout_finish(Rollout *r) {
    int T = 1;
    for (int b = 0; b < r->B; b++) T = NR_MAX(T, r->plen[b] + NR_MAX(r->resp_len[b], 1));
    r->T = T;
    for (int b = 0; b < r->B; b++) {
        int *src = r->tokens + (size_t)b * r->Tcap, *seq = r->seq + (size_t)b * T, P = r->plen[b];
        memcpy(seq, src, (size_t)(P + r->resp_len[b]) * sizeof(int));
        for (int t = P + r->resp_len[b]; t < T; t++) seq[t] = r->eos[0];
        const float *blogp = r->logp_gen + (size_t)b * r->Tcap; /* rows Tcap apart until here: b·T ≤ b·Tcap */
        for (int t = 0; t < T; t++) {
            int j = t - (P - 1); /* response token index predicted at t */
            int valid = j >= 0 && j < r->resp_len[b];
            r->targets[(size_t)b * T + t] = valid ? seq[t + 1] : -1;
            r->mask[(size_t)b * T + t] = valid ? 1.0f : 0.0f;
            r->logp_gen[(size_t)b * T + t] = valid ? blogp[t] : 0.0f; /* reads at or after what it writes */
        }
    }
}

int rollout_row_len(const Rollout *r, int b) { return r->plen[b] + NR_MAX(r->resp_len[b], 1); }

void rollout_rows_by_len(const Rollout *r, int *rows, int n) {
    for (int i = 1; i < n; i++) { /* insertion sort: a replica's rows, a few hundred at most */
        int x = rows[i], lx = rollout_row_len(r, x), k = i;
        for (; k > 0; k--) {
            int y = rows[k - 1], ly = rollout_row_len(r, y);
            if (ly > lx || (ly == lx && y < x)) break;
            rows[k] = y;
        }
        rows[k] = x;
    }
}

int rollout_rows_len(const Rollout *r, const int *rows, int n) {
    int T = 1;
    for (int i = 0; i < n; i++) T = NR_MAX(T, rollout_row_len(r, rows[i]));
    return T;
}

/* One forward of a model over the rollout's rows rows[0..n), each cut to the longest of them (Tc positions:
 * causal attention makes a position's result independent of those after it, and every kernel gives a row the
 * same bits whatever rows share its call), its log-probs or values scattered back to their rows of out
 * (out_row0 the row of out[0], rows r->T apart; 0 beyond Tc). */
static void infer_rows(GPT *m, const Rollout *r, const int *rows, int n, int values, float *out, int out_row0) {
    int T = r->T, Tc = rollout_rows_len(r, rows, n);
    size_t nTc = (size_t)n * Tc;
    int *tok = nr_xmalloc(nTc * sizeof(int)), *tg = nr_xmalloc(nTc * sizeof(int));
    float *res = nr_xmalloc(nTc * sizeof(float));
    for (int i = 0; i < n; i++) {
        memcpy(tok + (size_t)i * Tc, r->seq + (size_t)rows[i] * T, (size_t)Tc * sizeof(int));
        memcpy(tg + (size_t)i * Tc, r->targets + (size_t)rows[i] * T, (size_t)Tc * sizeof(int));
    }
    if (values) {
        gpt_forward(m, tok, n, Tc, 0, 1);
        m->be->download(res, m->a.values, nTc * sizeof(float));
    } else {
        gpt_forward_logprob(m, tok, tg, n, Tc, res, NULL);
    }
    for (int i = 0; i < n; i++) {
        float *o = out + (size_t)(rows[i] - out_row0) * T;
        memcpy(o, res + (size_t)i * Tc, (size_t)Tc * sizeof(float));
        memset(o + Tc, 0, (size_t)(T - Tc) * sizeof(float));
    }
    free(tok);
    free(tg);
    free(res);
}

void ppo_infer_stage_rows(GPT *m, const Rollout *r, int row0, int n, int chunk, int values, float *out) {
    int *rows = nr_xmalloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++) rows[i] = row0 + i;
    rollout_rows_by_len(r, rows, n);
    for (int c = 0; c < n; c += chunk) infer_rows(m, r, rows + c, NR_MIN(chunk, n - c), values, out, row0);
    free(rows);
}

/* [ppo] credit = process: the task reward's per-position credits of every row, credit (B, S) and the step
 * counts (returned, B); step j of row b is taken at its response token min(j, resp_len[b] − 1). */
static int *rollout_credits(const Rollout *r, int S, float *credit) {
    int *nsteps = nr_xmalloc((size_t)r->B * sizeof(int));
    for (int b = 0; b < r->B; b++)
        nsteps[b] = task_reward_steps(r->answer + (size_t)b * r->amax, r->answer_len[b],
                                      r->seq + (size_t)b * r->T + r->plen[b], r->resp_len[b], credit + (size_t)b * S);
    return nsteps;
}

/* NEREUS_GRPO_ADV_SIGNAL set (a measurement for docs/GRPO.md; training unchanged): one stderr line per step with
 * grpo_advantage_signal of the process advantages in use and of the other process baseline computed with the same
 * normalisation, on this step's rollout, and the share of response tokens whose advantage is 0. */
static void advantage_signal_report(const Rollout *r, const Config *cfg, int S, const float *credit, const int *nsteps,
                                    const float *adv, int position, int group_std, int batch_std) {
    float *other = nr_xcalloc((size_t)r->B * S, sizeof(float));
    (position ? grpo_process_advantages : grpo_position_advantages)(credit, nsteps, r->resp_len, S, r->B, r->group,
                                                                   group_std, cfg->ppo.group_eps, other);
    if (batch_std) grpo_batch_scale(other, r->resp_len, S, r->B, cfg->ppo.group_eps);
    double a[3], o[3], zero = 0, ntok = 0;
    grpo_advantage_signal(adv, credit, nsteps, r->resp_len, S, r->B, a);
    grpo_advantage_signal(other, credit, nsteps, r->resp_len, S, r->B, o);
    for (int b = 0; b < r->B; b++)
        for (int t = 0; t < r->resp_len[b]; t++) { zero += fabsf(adv[(size_t)b * S + t]) < 1e-6f; ntok += 1; }
    fprintf(stderr, "adv-signal: %s mean_sq %.4f own_r2 %.4f | %s mean_sq %.4f own_r2 %.4f | tokens %.0f zero %.4f\n",
            position ? "position" : "pooled", a[0], a[1], position ? "pooled" : "position", o[0], o[1], a[2],
            ntok > 0 ? zero / ntok : 0.0);
    free(other);
}

/* The advantage of every token of every row, (B, S) from token 0 of the response: the outcome's one
 * group-relative advantage, or under credit = process the sums of the group-normalised step credits (or with
 * process_baseline = position the per-position baseline's); with group_std_scope = batch the group-centred
 * advantages are divided by their spread over the batch instead of each group's std. */
static float *grpo_token_advantages(const Rollout *r, const Config *cfg, int S) {
    int B = r->B;
    int batch_std = cfg->ppo.group_std && strcmp(cfg->ppo.group_std_scope, "batch") == 0;
    int group_std = cfg->ppo.group_std && !batch_std;
    float *adv = nr_xcalloc((size_t)B * S, sizeof(float));
    if (strcmp(cfg->ppo.credit, "process") == 0) {
        float *credit = nr_xcalloc((size_t)B * S, sizeof(float));
        int *nsteps = rollout_credits(r, S, credit);
        int position = strcmp(cfg->ppo.process_baseline, "position") == 0;
        (position ? grpo_position_advantages : grpo_process_advantages)(credit, nsteps, r->resp_len, S, B, r->group,
                                                                       group_std, cfg->ppo.group_eps, adv);
        if (batch_std) grpo_batch_scale(adv, r->resp_len, S, B, cfg->ppo.group_eps);
        if (getenv("NEREUS_GRPO_ADV_SIGNAL")) advantage_signal_report(r, cfg, S, credit, nsteps, adv, position, group_std, batch_std);
        free(nsteps);
        free(credit);
        return adv;
    }
    float *gadv = nr_xmalloc((size_t)B * sizeof(float));
    grpo_group_advantages(r->score, B, r->group, group_std, cfg->ppo.group_eps, gadv);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < r->resp_len[b]; t++) adv[(size_t)b * S + t] = gadv[b];
    free(gadv);
    if (batch_std) grpo_batch_scale(adv, r->resp_len, S, B, cfg->ppo.group_eps);
    return adv;
}

/* GRPO: each response token's group-relative advantage (grpo_token_advantages); no KL in the reward (the
 * actor loss carries it), no values, no returns. st->kl still reports the rollout's mean log(actor/ref). */
static void grpo_advantages(Rollout *r, const Config *cfg, StepStats *st) {
    int B = r->B, T = r->T, S = NR_MAX(T, r->amax);
    float *tadv = grpo_token_advantages(r, cfg, S);
    memset(r->ret, 0, (size_t)B * T * sizeof(float));
    memset(r->rewards, 0, (size_t)B * T * sizeof(float));
    double sum_kl = 0, ntok = 0;
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            size_t i = (size_t)b * T + t;
            int j = t - (r->plen[b] - 1); /* the response token predicted at t */
            r->adv[i] = r->mask[i] != 0.0f ? tadv[(size_t)b * S + j] : 0.0f;
            if (r->mask[i] == 0.0f) continue;
            sum_kl += (double)r->logp_old[i] - (double)r->logp_ref[i];
            ntok += 1;
        }
        r->rewards[(size_t)b * T + r->plen[b] - 1 + r->resp_len[b] - 1] = r->score[b]; /* the outcome reward, for reports */
    }
    free(tadv);
    st->kl = ntok > 0 ? sum_kl / ntok : 0.0;
}

/* The scoring actor's log-probabilities against the generating actor's on the response tokens: the mean
 * absolute gap and the mean of log π_gen − log π_old (KL(π_gen‖π_old) on samples of π_gen). Greedy
 * generation records no behaviour log-probabilities: both read 0 then. */
static void rollout_logp_gap(const Rollout *r, const Config *cfg, StepStats *st) {
    double gap = 0, kl = 0, n = 0;
    size_t BT = cfg->ppo.temperature > 0.0f ? (size_t)r->B * r->T : 0;
    for (size_t i = 0; i < BT; i++) {
        if (r->mask[i] == 0.0f) continue;
        double d = (double)r->logp_gen[i] - (double)r->logp_old[i];
        gap += fabs(d);
        kl += d;
        n += 1;
    }
    st->logp_gap = n > 0 ? gap / n : 0.0;
    st->gen_kl = n > 0 ? kl / n : 0.0;
}

void ppo_advantages(Rollout *r, const Config *cfg, int have_rm, StepStats *st) {
    int B = r->B, T = r->T;
    rollout_logp_gap(r, cfg, st);
    double sum_rew = 0, sum_score = 0, sum_kl = 0, ntok = 0, sum_len = 0, sum_seq = 0;
    for (int b = 0; b < B; b++) {
        float tr = rollout_row_reward(r, r->seq, (size_t)T, b, NULL, NULL);
        r->task_reward[b] = tr;
        float sc = tr;
        /* the reward network's value at the last response token */
        if (have_rm) sc += cfg->reward.network_weight * r->rm_values[(size_t)b * T + r->plen[b] - 1 + r->resp_len[b]];
        r->score[b] = sc;
        sum_rew += tr;
        sum_score += sc;
        sum_len += r->resp_len[b];
        sum_seq += r->plen[b] + r->resp_len[b];
    }
    st->reward = sum_rew / B;
    st->score = sum_score / B;
    st->resp_len = sum_len / B;
    st->tokens = (double)B * T;
    st->seq_tokens = sum_seq;
    if (ppo_is_grpo(cfg)) {
        grpo_advantages(r, cfg, st);
        return;
    }
    /* per-token rewards: −β·(log π − log π_ref), plus the score on the last token, or with credit = process
       each position's credit on its token (the score is the task reward then: no reward network) */
    int S = NR_MAX(T, r->amax), *nsteps = NULL;
    float *credit = NULL;
    if (strcmp(cfg->ppo.credit, "process") == 0) {
        credit = nr_xcalloc((size_t)B * S, sizeof(float));
        nsteps = rollout_credits(r, S, credit);
    }
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
        if (!credit) rw[r->plen[b] - 1 + r->resp_len[b] - 1] += r->score[b];
        for (int j = 0; credit && j < nsteps[b]; j++) /* credit = process: each step's credit at its token */
            rw[r->plen[b] - 1 + NR_MIN(j, r->resp_len[b] - 1)] += credit[(size_t)b * S + j];
    }
    free(nsteps);
    free(credit);
    /* GAE over each sequence's response positions; zero elsewhere */
    memset(r->adv, 0, (size_t)B * T * sizeof(float));
    memset(r->ret, 0, (size_t)B * T * sizeof(float));
    for (int b = 0; b < B; b++) {
        size_t o = (size_t)b * T + (size_t)(r->plen[b] - 1);
        gae_sequence(r->adv + o, r->ret + o, r->rewards + o, r->values + o, r->resp_len[b], cfg->ppo.gamma,
                     cfg->ppo.lam);
    }
    if (cfg->ppo.whiten_advantages) whiten_masked(r->adv, r->mask, (size_t)B * T);
    st->kl = ntok > 0 ? sum_kl / ntok : 0.0;
}
