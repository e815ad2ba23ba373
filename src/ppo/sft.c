/* sft.c — supervised warm-start of the actor, so PPO starts from a partly
 * competent policy as real post-training does. Two data sources:
 *   task   — demonstrations "prompt answer EOS", loss on the answer and EOS;
 *            sample indices start at 2^40 so they never coincide with PPO's
 *   tokens — an llm.c token file, next-token loss on every position of
 *            consecutive windows of T+1 tokens. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/ppo.h"
#include "nereus/util.h"

#define SFT_SAMPLE_BASE (1ULL << 40)

int sft_open(SftData *d, const Config *cfg, const TaskSet *ts, int V, const char *deck_path) {
    memset(d, 0, sizeof *d);
    int B = cfg->sft.batch;
    d->use_tokens = strcmp(cfg->sft.data, "tokens") == 0;
    if (d->use_tokens) {
        char why[512];
        if (tokens_read(&d->tf, cfg->sft.tokens_file, why, sizeof why) != 0) {
            if (nr_rank() == 0) fprintf(stderr, "%s: error: [sft] tokens_file: %s\n", deck_path, why);
            return 2;
        }
        if (d->tf.max_token >= V) {
            if (nr_rank() == 0)
                fprintf(stderr, "%s: error: [sft] tokens_file %s holds token id %d but the model's vocabulary is %d "
                        "(set [model] vocab_size)\n", deck_path, cfg->sft.tokens_file, d->tf.max_token, V);
            tokens_free(&d->tf);
            return 2;
        }
        d->T = cfg->sft.seq > 0 ? cfg->sft.seq : cfg->model.max_seq;
        if ((size_t)d->T + 1 > d->tf.count) {
            if (nr_rank() == 0)
                fprintf(stderr, "%s: error: [sft] tokens_file %s holds %zu tokens, fewer than one window of %d\n",
                        deck_path, cfg->sft.tokens_file, d->tf.count, d->T + 1);
            tokens_free(&d->tf);
            return 2;
        }
    } else {
        d->T = task_prompt_len(ts) + task_max_answer(ts) + 1;
    }
    size_t n = (size_t)B * d->T;
    d->tokens = nr_xcalloc(n, sizeof(int));
    d->targets = nr_xcalloc(n, sizeof(int));
    d->logp = nr_xcalloc(n, sizeof(float));
    d->dlogp = nr_xcalloc(n, sizeof(float));
    return 0;
}

void sft_close(SftData *d) {
    if (d->use_tokens) tokens_free(&d->tf);
    free(d->tokens);
    free(d->targets);
    free(d->logp);
    free(d->dlogp);
    memset(d, 0, sizeof *d);
}

/* rows b0 .. b0+n−1 of the step's batch of B */
static void sft_fill_task(SftData *d, const TaskSet *ts, int B, int b0, int n, int step) {
    int P = task_prompt_len(ts), T = d->T;
    int answer[64], alen;
    for (int b = 0; b < n; b++) {
        int *seq = d->tokens + (size_t)b * T, *tg = d->targets + (size_t)b * T;
        task_make(ts, SFT_SAMPLE_BASE + (uint64_t)step * B + (uint64_t)(b0 + b), seq, answer, &alen);
        for (int j = 0; j < alen; j++) seq[P + j] = answer[j];
        for (int t = P + alen; t < T; t++) seq[t] = TOK_EOS;
        for (int t = 0; t < T; t++) {
            int j = t - (P - 1); /* answer tokens and the EOS after them */
            tg[t] = (j >= 0 && j <= alen && t + 1 < T) ? seq[t + 1] : -1;
        }
    }
}

static void sft_fill_tokens(SftData *d, int B, int b0, int n, int step) {
    int T = d->T;
    size_t span = d->tf.count - (size_t)T - 1 + 1; /* window starts 0 .. count−T−1 */
    for (int b = 0; b < n; b++) {
        size_t start = (((size_t)step * B + (size_t)(b0 + b)) * (size_t)T) % span;
        for (int t = 0; t < T; t++) {
            d->tokens[(size_t)b * T + t] = (int)d->tf.tokens[start + t];
            d->targets[(size_t)b * T + t] = (int)d->tf.tokens[start + t + 1];
        }
    }
}

float sft_step(SftData *d, GPT *actor, const Config *cfg, const TaskSet *ts, int step, const ReplicaShare *sh) {
    int B = cfg->sft.batch, T = d->T, nb = B / sh->dp, b0 = sh->d * nb;
    /* the mean is over the whole batch's tokens: count them from every row first */
    double ntok = 0;
    for (int p = 0; p < sh->dp; p++) {
        if (d->use_tokens) sft_fill_tokens(d, B, p * nb, nb, step);
        else sft_fill_task(d, ts, B, p * nb, nb, step);
        for (size_t k = 0; k < (size_t)nb * T; k++) ntok += d->targets[k] >= 0;
    }
    if (d->use_tokens) sft_fill_tokens(d, B, b0, nb, step);
    else sft_fill_task(d, ts, B, b0, nb, step);
    /* in passes of the rows the model holds ([ppo] micro_batch bounds them), their gradients added up */
    int chunk = NR_MIN(nb, actor->Bmax);
    gpt_zero_grad(actor);
    double loss = 0;
    for (int r0 = 0; r0 < nb; r0 += chunk) {
        int n = NR_MIN(chunk, nb - r0);
        size_t o = (size_t)r0 * T;
        gpt_forward_logprob(actor, d->tokens + o, d->targets + o, n, T, d->logp + o, NULL);
        for (size_t k = o; k < o + (size_t)n * T; k++) {
            int v = d->targets[k] >= 0;
            loss -= v ? d->logp[k] : 0.0;
            d->dlogp[k] = v ? (float)(-1.0 / ntok) : 0.0f; /* d(mean CE)/d logp */
        }
        gpt_backward(actor, d->dlogp + o, NULL, NULL);
    }
    loss /= ntok;
    if (sh->grad_sync) sh->grad_sync(actor, sh->ctx);
    const OptimConfig *oc = &cfg->optim;
    gpt_update(actor, cfg->sft.lr, oc->beta1, oc->beta2, oc->eps, oc->weight_decay, oc->max_grad_norm);
    return (float)loss;
}
