/* train.c — the train stage: PPO epochs over shuffled minibatches; per
 * minibatch one actor update (clipped surrogate − entropy bonus) and one
 * critic update (clipped value loss). Per-token losses come from the
 * backend; they are averaged over the minibatch's response tokens. */
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
                   &mb->ent, &mb->dlogp, &mb->dent, &mb->dv};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) *f[i] = nr_xcalloc(k, sizeof(float));
}

static void mb_free(Minibatch *mb) {
    void *p[] = {mb->tokens, mb->targets, mb->logp_old, mb->adv, mb->v_old, mb->ret, mb->w,
                 mb->ent, mb->dlogp, mb->dent, mb->dv};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) free(p[i]);
    void *d[] = {mb->d_logp_old, mb->d_adv, mb->d_v_old, mb->d_ret, mb->d_w, mb->d_dlogp, mb->d_dv, mb->d_scalars};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) mb->be->free(d[i]);
}

/* rows idx[0..n) of the rollout into the minibatch; w = mask / tokens */
static void mb_gather(Minibatch *mb, const Rollout *r, const int *idx) {
    int T = r->T;
    size_t row = (size_t)T;
    double ntok = 0;
    for (int i = 0; i < mb->n; i++) {
        size_t s = (size_t)idx[i] * row, d = (size_t)i * row;
        memcpy(mb->tokens + d, r->seq + s, row * sizeof(int));
        memcpy(mb->targets + d, r->targets + s, row * sizeof(int));
        memcpy(mb->logp_old + d, r->logp_old + s, row * sizeof(float));
        memcpy(mb->adv + d, r->adv + s, row * sizeof(float));
        memcpy(mb->v_old + d, r->values + s, row * sizeof(float));
        memcpy(mb->ret + d, r->ret + s, row * sizeof(float));
        memcpy(mb->w + d, r->mask + s, row * sizeof(float));
        for (size_t t = 0; t < row; t++) ntok += r->mask[s + t];
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

/* Fisher–Yates over 0..n−1, from the counter RNG at (step, epoch) */
static void shuffle(int *perm, int n, uint64_t seed, int step, int epoch) {
    for (int i = 0; i < n; i++) perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = rng_below(seed, RNG_SHUFFLE, ((uint64_t)step << 20) + (uint64_t)epoch, (uint64_t)i, i + 1);
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

void ppo_train(Rollout *r, Models *ms, const Config *cfg, int step, StepStats *st) {
    const PpoConfig *pc = &cfg->ppo;
    const OptimConfig *oc = &cfg->optim;
    int B = r->B, T = r->T, n = pc->minibatch;
    const Backend *be = ms->actor.be;
    Minibatch mb;
    mb_alloc(&mb, n, T, be);
    int *perm = nr_xmalloc((size_t)B * sizeof(int));
    double pg = 0, vf = 0, ent = 0, cf = 0, akl = 0, gna = 0, gnc = 0;
    int updates = 0;
    st->finite = 1;
    for (int e = 0; e < pc->epochs; e++) {
        shuffle(perm, B, (uint64_t)cfg->run.seed, step, e);
        for (int s0 = 0; s0 + n <= B; s0 += n) {
            mb_gather(&mb, r, perm + s0);
            int N = n * T;
            /* actor: clipped surrogate minus the entropy bonus */
            gpt_zero_grad(&ms->actor);
            gpt_forward(&ms->actor, mb.tokens, n, T, 1, 0);
            gpt_logprob(&ms->actor, mb.targets, NULL, mb.ent); /* log-probs stay in actor.logp */
            be->ppo_policy_loss(mb.d_scalars + 0, mb.d_dlogp, mb.d_scalars + 1, mb.d_scalars + 2, ms->actor.logp,
                                mb.d_logp_old, mb.d_adv, mb.d_w, N, pc->clip);
            float sc[3];
            be->download(sc, mb.d_scalars, 3 * sizeof(float));
            be->download(mb.dlogp, mb.d_dlogp, (size_t)N * sizeof(float));
            float loss = sc[0], clipfrac = sc[1], approx_kl = sc[2];
            double mean_ent = 0;
            for (int k = 0; k < N; k++) {
                mean_ent += (double)mb.w[k] * mb.ent[k];
                mb.dent[k] = -pc->entropy_coef * mb.w[k];
            }
            if (cfg->inject.nan_loss_step == step) loss = NAN; /* INJECTED fault (deck [inject]) */
            float gn = 0;
            if (isfinite(loss)) {
                gpt_backward(&ms->actor, mb.dlogp, pc->entropy_coef > 0 ? mb.dent : NULL, NULL);
                gn = gpt_update(&ms->actor, pc->actor_lr, oc->beta1, oc->beta2, oc->eps, oc->weight_decay,
                                oc->max_grad_norm);
            }
            /* critic: clipped value loss */
            gpt_zero_grad(&ms->critic);
            gpt_forward(&ms->critic, mb.tokens, n, T, 0, 1);
            be->ppo_value_loss(mb.d_scalars + 3, mb.d_dv, ms->critic.a.values, mb.d_v_old, mb.d_ret, mb.d_w, N,
                               pc->value_clip);
            float vloss;
            be->download(&vloss, mb.d_scalars + 3, sizeof(float));
            be->download(mb.dv, mb.d_dv, (size_t)N * sizeof(float));
            float gc = 0;
            if (isfinite(vloss)) {
                gpt_backward(&ms->critic, NULL, NULL, mb.dv);
                gc = gpt_update(&ms->critic, pc->critic_lr, oc->beta1, oc->beta2, oc->eps, oc->weight_decay,
                                oc->max_grad_norm);
            }
            if (!isfinite(loss) || !isfinite(vloss) || !isfinite(gn) || !isfinite(gc)) {
                st->finite = 0;
                pg = loss;
                vf = vloss;
                goto out;
            }
            pg += loss;
            vf += vloss;
            ent += mean_ent;
            cf += clipfrac;
            akl += approx_kl;
            gna += gn;
            gnc += gc;
            updates++;
        }
    }
out:
    if (updates > 0 && st->finite) {
        st->pg_loss = pg / updates;
        st->vf_loss = vf / updates;
        st->entropy = ent / updates;
        st->clipfrac = cf / updates;
        st->approx_kl = akl / updates;
        st->grad_norm_actor = gna / updates;
        st->grad_norm_critic = gnc / updates;
    } else {
        st->pg_loss = pg;
        st->vf_loss = vf;
    }
    free(perm);
    mb_free(&mb);
}
