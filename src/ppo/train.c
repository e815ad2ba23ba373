/* train.c — the train stage of one model: PPO epochs over shuffled
 * minibatches, one update per minibatch — the actor's clipped surrogate
 * minus the entropy bonus, or the critic's clipped value loss. Per-token
 * losses come from the backend, averaged over the minibatch's response
 * tokens. Under data parallelism a replica takes a contiguous slice of each
 * minibatch; the weights stay those of the whole minibatch, so the summed
 * gradients (grad_sync) are the one-replica gradient up to summation order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/ppo.h"
#include "nereus/util.h"

typedef struct Minibatch {
    int n, T;
    int *tokens, *targets;                               /* (n, T) host */
    float *logp_old, *adv, *v_old, *ret, *w;             /* (n, T) host */
    float *ent, *dlogp, *dent, *dv;                      /* (n, T) host */
    float *logp_ref, *logp;                              /* (n, T) host: GRPO's k3 term (the ref's, the actor's now) */
    float *logp_gen, *w_pg;                              /* (n, T) host: behaviour log-probs; w with the TIS weights */
    /* the loss kernels' operands in backend memory */
    const Backend *be;
    float *d_logp_old, *d_adv, *d_v_old, *d_ret, *d_w;   /* (n, T) */
    float *d_dlogp, *d_dv;                               /* (n, T) */
    float *d_scalars;                                    /* (4): pg loss, clipfrac, approx KL, value loss */
} Minibatch;

static void mb_alloc(Minibatch *mb, int n, int T, const Backend *be) {
    size_t k = (size_t)n * T;
    mb->n = n;
    mb->T = T;
    mb->be = be;
    float **d[] = {&mb->d_logp_old, &mb->d_adv, &mb->d_v_old, &mb->d_ret, &mb->d_w, &mb->d_dlogp, &mb->d_dv};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) *d[i] = be->alloc(k * sizeof(float));
    mb->d_scalars = be->alloc(4 * sizeof(float));
    mb->tokens = nr_xcalloc(k, sizeof(int));
    mb->targets = nr_xcalloc(k, sizeof(int));
    float **f[] = {&mb->logp_old, &mb->adv, &mb->v_old, &mb->ret, &mb->w,
                   &mb->ent, &mb->dlogp, &mb->dent, &mb->dv, &mb->logp_ref, &mb->logp, &mb->logp_gen, &mb->w_pg};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) *f[i] = nr_xcalloc(k, sizeof(float));
}

static void mb_free(Minibatch *mb) {
    void *p[] = {mb->tokens, mb->targets, mb->logp_old, mb->adv, mb->v_old, mb->ret, mb->w,
                 mb->ent, mb->dlogp, mb->dent, mb->dv, mb->logp_ref, mb->logp, mb->logp_gen, mb->w_pg};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) free(p[i]);
    void *d[] = {mb->d_logp_old, mb->d_adv, mb->d_v_old, mb->d_ret, mb->d_w, mb->d_dlogp, mb->d_dv, mb->d_scalars};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) mb->be->free(d[i]);
}

/* rows idx[0..n) of the rollout into the minibatch, each cut to its first T positions (the longest row's:
 * rollout_rows_len); w = mask / ntok, where ntok counts the response tokens of the whole minibatch (all
 * replicas) */
static void mb_gather(Minibatch *mb, const Rollout *r, const int *idx, int n, int T, double ntok) {
    size_t row = (size_t)T;
    mb->n = n;
    mb->T = T;
    for (int i = 0; i < mb->n; i++) {
        size_t s = (size_t)idx[i] * (size_t)r->T, d = (size_t)i * row;
        memcpy(mb->tokens + d, r->seq + s, row * sizeof(int));
        memcpy(mb->targets + d, r->targets + s, row * sizeof(int));
        memcpy(mb->logp_old + d, r->logp_old + s, row * sizeof(float));
        memcpy(mb->logp_ref + d, r->logp_ref + s, row * sizeof(float));
        memcpy(mb->logp_gen + d, r->logp_gen + s, row * sizeof(float));
        memcpy(mb->adv + d, r->adv + s, row * sizeof(float));
        memcpy(mb->v_old + d, r->values + s, row * sizeof(float));
        memcpy(mb->ret + d, r->ret + s, row * sizeof(float));
        memcpy(mb->w + d, r->mask + s, row * sizeof(float));
    }
    size_t k = (size_t)mb->n * row;
    float inv = ntok > 0 ? (float)(1.0 / ntok) : 0.0f;
    for (size_t i = 0; i < k; i++) mb->w[i] *= inv;
    const Backend *be = mb->be;
    be->upload(mb->d_logp_old, mb->logp_old, k * sizeof(float));
    be->upload(mb->d_adv, mb->adv, k * sizeof(float));
    be->upload(mb->d_v_old, mb->v_old, k * sizeof(float));
    be->upload(mb->d_ret, mb->ret, k * sizeof(float));
    be->upload(mb->d_w, mb->w, k * sizeof(float));
}

/* Fisher–Yates over 0..n−1, from the counter RNG at (step, epoch): the same
 * order on every rank and for both models */
static void shuffle(int *perm, int n, uint64_t seed, int step, int epoch) {
    for (int i = 0; i < n; i++) perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = rng_below(seed, RNG_SHUFFLE, ((uint64_t)step << 20) + (uint64_t)epoch, (uint64_t)i, i + 1);
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* [ppo] tis_cap > 0: truncated importance sampling (Yao et al., "Your efficient RL framework secretly brings
 * you off-policy RL training"): each token's policy-loss weight w times min(π_old / π_gen, cap), π_old the
 * scoring actor's probability of the token and π_gen the generating one's, into the backend's d_w (the
 * policy loss alone reads it; entropy and the k3 term keep w). tis[0] += Σ w·weight and tis[1] += Σ w over
 * the tokens the cap truncated: this replica's shares of the mean weight and the truncated fraction. */
static void tis_weights(Minibatch *mb, float cap, double tis[2]) {
    size_t N = (size_t)mb->n * mb->T;
    for (size_t k = 0; k < N; k++) {
        mb->w_pg[k] = 0.0f;
        if (mb->w[k] == 0.0f) continue;
        double rho = exp((double)mb->logp_old[k] - (double)mb->logp_gen[k]);
        float wt = rho < cap ? (float)rho : cap;
        mb->w_pg[k] = mb->w[k] * wt;
        tis[0] += (double)mb->w[k] * wt;
        tis[1] += rho > cap ? mb->w[k] : 0.0f;
    }
    mb->be->upload(mb->d_w, mb->w_pg, N * sizeof(float));
}

/* The actor's forward and backward over the gathered rows, its gradient added to the model's; returns their
 * loss share and adds their shares of entropy, clip fraction and approx KL. poison: the INJECTED fault. */
static float actor_rows(GPT *m, Minibatch *mb, const Config *cfg, int poison, double *ent, double *cf,
                        double *akl, double *k3) {
    const PpoConfig *pc = &cfg->ppo;
    const Backend *be = m->be;
    int N = mb->n * mb->T;
    gpt_forward_logprob(m, mb->tokens, mb->targets, mb->n, mb->T, NULL, mb->ent); /* log-probs stay in m->logp */
    float sc[3];
    /* the ratio clipped to [1 − clip, 1 + clip_high]; clip_high 0 means clip on both sides */
    be->ppo_policy_loss(mb->d_scalars + 0, mb->d_dlogp, mb->d_scalars + 1, mb->d_scalars + 2, m->logp,
                        mb->d_logp_old, mb->d_adv, mb->d_w, N, pc->clip, pc->clip_high > 0 ? pc->clip_high : pc->clip);
    be->download(sc, mb->d_scalars, 3 * sizeof(float));
    be->download(mb->dlogp, mb->d_dlogp, (size_t)N * sizeof(float));
    if (ppo_is_grpo(cfg)) { /* + β·k3 KL(actor‖ref) per token, with the same weights as the surrogate */
        be->download(mb->logp, m->logp, (size_t)N * sizeof(float));
        *k3 += grpo_kl_k3(mb->logp, mb->logp_ref, mb->w, N, pc->kl_loss_coef, mb->dlogp);
    }
    /* clipfrac and approx_kl come normalised by these rows' weight: scale
     * them back so the shares add up */
    double wsum = 0, e = 0;
    for (int k = 0; k < N; k++) {
        wsum += mb->w[k];
        e += (double)mb->w[k] * mb->ent[k];
        mb->dent[k] = -pc->entropy_coef * mb->w[k];
    }
    *ent += e;
    *cf += sc[1] * wsum;
    *akl += sc[2] * wsum;
    float loss = sc[0]; /* the surrogate alone; the entropy bonus is reported beside it */
    if (poison) { /* INJECTED fault (deck [inject]): poison loss and gradient alike */
        loss = NAN;
        mb->dlogp[0] = NAN;
    }
    gpt_backward(m, mb->dlogp, pc->entropy_coef > 0 ? mb->dent : NULL, NULL);
    return loss;
}

static float critic_rows(GPT *m, Minibatch *mb, const Config *cfg) {
    const Backend *be = m->be;
    int N = mb->n * mb->T;
    gpt_forward(m, mb->tokens, mb->n, mb->T, 0, 1);
    be->ppo_value_loss(mb->d_scalars + 3, mb->d_dv, m->a.values, mb->d_v_old, mb->d_ret, mb->d_w, N,
                       cfg->ppo.value_clip);
    float vloss;
    be->download(&vloss, mb->d_scalars + 3, sizeof(float));
    be->download(mb->dv, mb->d_dv, (size_t)N * sizeof(float));
    gpt_backward(m, NULL, NULL, mb->dv);
    return vloss;
}

/* One update's gradient over this replica's rows idx[0..nl) of the minibatch (ntok: the whole minibatch's
 * response tokens), longest first in passes of `chunk` rows ([ppo] micro_batch), each gathered over its
 * longest row's positions; the passes' gradients add up (the losses are weighted sums over the minibatch's
 * tokens, so their shares add too). Returns the loss share. */
static float minibatch_grad(int which, GPT *m, Minibatch *mb, const Rollout *r, const int *idx, int nl,
                            double ntok, const Config *cfg, int step, int chunk, double *ent, double *cf,
                            double *akl, double *k3, double tis[2]) {
    float cap = ppo_tis_cap(cfg), loss = 0.0f;
    int *rows = nr_xmalloc((size_t)nl * sizeof(int));
    memcpy(rows, idx, (size_t)nl * sizeof(int));
    rollout_rows_by_len(r, rows, nl);
    gpt_zero_grad(m);
    for (int r0 = 0; r0 < nl; r0 += chunk) {
        int n = NR_MIN(chunk, nl - r0);
        mb_gather(mb, r, rows + r0, n, rollout_rows_len(r, rows + r0, n), ntok);
        if (which == PPO_ACTOR && cap > 0.0f) tis_weights(mb, cap, tis);
        int poison = cfg->inject.nan_loss_step == step && r0 == 0;
        loss += which == PPO_ACTOR ? actor_rows(m, mb, cfg, poison, ent, cf, akl, k3) : critic_rows(m, mb, cfg);
    }
    free(rows);
    return loss;
}

void ppo_train_model(int which, GPT *m, const Rollout *r, const Config *cfg, int step, const ReplicaShare *sh,
                     StepStats *st) {
    const PpoConfig *pc = &cfg->ppo;
    const OptimConfig *oc = &cfg->optim;
    int B = r->B, T = r->T, n = pc->minibatch, nl = n / sh->dp;
    int chunk = NR_MIN(nl, m->Bmax); /* rows a pass: what the model holds ([ppo] micro_batch bounds it) */
    float lr = which == PPO_ACTOR ? pc->actor_lr : pc->critic_lr;
    Minibatch mb;
    mb_alloc(&mb, chunk, T, m->be);
    int *perm = nr_xmalloc((size_t)B * sizeof(int));
    double loss_sum = 0, ent = 0, cf = 0, akl = 0, k3 = 0, gn_sum = 0, tis[2] = {0, 0};
    int updates = 0, finite = 1;
    for (int e = 0; e < pc->epochs; e++) {
        shuffle(perm, B, (uint64_t)cfg->run.seed, step, e);
        for (int s0 = 0; s0 + n <= B; s0 += n) {
            double ntok = 0; /* the whole minibatch's response tokens */
            for (int i = 0; i < n; i++)
                for (int t = 0; t < T; t++) ntok += r->mask[(size_t)perm[s0 + i] * T + t];
            float loss = minibatch_grad(which, m, &mb, r, perm + s0 + sh->d * nl, nl, ntok, cfg, step, chunk, &ent,
                                        &cf, &akl, &k3, tis);
            if (sh->grad_sync) sh->grad_sync(m, sh->ctx);
            /* the norm is taken after the sum over replicas, so every replica sees the same one;
             * a non-finite loss anywhere makes it non-finite everywhere */
            float gn = gpt_update(m, lr, oc->beta1, oc->beta2, oc->eps, oc->weight_decay, oc->max_grad_norm);
            loss_sum += loss;
            gn_sum += gn;
            updates++;
            if (!isfinite(loss) || !isfinite(gn)) {
                finite = 0;
                goto out;
            }
        }
    }
out:
    st->finite = finite;
    double u = updates > 0 ? updates : 1;
    if (which == PPO_ACTOR) {
        st->pg_loss = loss_sum / u;
        st->entropy = ent / u;
        st->clipfrac = cf / u;
        st->approx_kl = akl / u;
        st->kl_k3 = k3 / u;
        st->tis_mean = tis[0] / u; /* 0 with tis_cap off: job_step reports the weight 1 then */
        st->tis_capped = tis[1] / u;
        st->grad_norm_actor = gn_sum / u;
    } else {
        st->vf_loss = loss_sum / u;
        st->grad_norm_critic = gn_sum / u;
    }
    free(perm);
    mb_free(&mb);
}
