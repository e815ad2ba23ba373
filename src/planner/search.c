/* search.c — the plan search (planner.h). Per model-stage, a frontier: the
 * fastest layout using at most n ranks, for every n up to the pool, among
 * the layouts whose shard fits a per-stage memory cap. Per phase (the
 * phases run one after another, planner.h), every grouping of its stages
 * into colocated groups on disjoint rank blocks; a group on n ranks takes
 * the sum of its stages' frontier times at n, and the blocks are sized by a
 * min–max split (binary search over the candidate phase times). The plan
 * lays every phase's blocks from rank 0 up; its memory is checked over all
 * phases (cost_plan); where a rank does not fit, the search runs again with
 * tighter per-stage caps (1/k of a rank's usable memory for k = 2 … 7
 * co-resident stages) and keeps the fastest plan that fits. Small pools
 * then get a local search (refine). Pure. */
#include "nereus/planner.h"
#include "nereus/util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


typedef struct Frontier {
    double *t;          /* (N+1) fastest time on at most n ranks, INFINITY when none fits */
    GridLayout *l;      /* (N+1) its layout */
} Frontier;

/* 1 when the search lays out `stage`: not reward.inf without a reward network (it holds no model: placed on
   rank 0 as tp1 pp1 dp1), not the critic's stages of a critic-free job (absent from its plans) */
static int search_places(const CostModel *cm, int stage) {
    if (stage == PLAN_REWARD_INF && !cm->have_rm) return 0;
    return !(cm->no_critic && plan_stage_is_critic_model(stage));
}

/* the fastest layout of `stage` for every rank count ≤ N under the memory cap */
static void frontier_build(const CostModel *cm, int stage, int N, const Workload *w, double cap, Frontier *f,
                           long *cands) {
    const ModelShape *m = plan_stage_is_critic(stage) ? &cm->critic : &cm->actor;
    for (int n = 0; n <= N; n++) f->t[n] = INFINITY;
    int rpn = cm->hw.ranks_per_node > 0 ? cm->hw.ranks_per_node : 1;
    int train = plan_stage_is_train(stage);
    for (int tp = 1; tp <= rpn && tp <= N; tp *= 2) {
        if (m->NH % tp || m->KVH % tp || (m->FFN && m->FFN % tp)) continue; /* what the model accepts */
        for (int pp = 1; pp <= m->L && tp * pp <= N; pp++) {
            if (m->L % pp) continue;
            if (stage == PLAN_ACTOR_GEN && pp > 1) break;
            for (int dp = 1; tp * pp * dp <= N && dp <= w->batch; dp++) {
                if (w->batch % dp || (train && w->minibatch % dp)) continue;
                GridLayout l = {tp, pp, dp};
                double mem = 0, t = cost_stage(cm, stage, l, w, &mem);
                (*cands)++;
                if (!isfinite(t) || mem > cap) continue;
                int n = tp * pp * dp;
                if (t < f->t[n]) {
                    f->t[n] = t;
                    f->l[n] = l;
                }
            }
        }
    }
    for (int n = 1; n <= N; n++) /* at most n ranks: the best of the smaller counts too */
        if (f->t[n - 1] < f->t[n]) {
            f->t[n] = f->t[n - 1];
            f->l[n] = f->l[n - 1];
        }
}

/* the time of group g of a phase on n ranks: the sum of its stages' frontier times */
static double group_time(const Frontier *F, const int *st, int ns, const int *grp, int g, int n) {
    double s = 0;
    for (int i = 0; i < ns; i++)
        if (grp[i] == g) s += F[st[i]].t[n];
    return s;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* the fewest ranks at which group g meets time T (its time is non-increasing in n); −1 if none */
static int fewest_ranks(const Frontier *F, const int *st, int ns, const int *grp, int g, int N, double T) {
    int a = 1, b = N, got = -1;
    while (a <= b) {
        int c = (a + b) / 2;
        if (group_time(F, st, ns, grp, g, c) <= T) { got = c; b = c - 1; } else a = c + 1;
    }
    return got;
}

/* One phase: stages st[0..ns), each stage's group in grp[]; the min–max
 * split of N ranks over the groups. Returns the phase time and the ranks
 * per group in nrk[]. */
static double split_groups(Frontier *F, const int *st, int ns, const int *grp, int ng, int N, int *nrk, double *cand) {
    int nc = 0;
    for (int g = 0; g < ng; g++)
        for (int n = 1; n <= N; n++) {
            double t = group_time(F, st, ns, grp, g, n);
            if (isfinite(t) && (n == 1 || t != group_time(F, st, ns, grp, g, n - 1))) cand[nc++] = t;
        }
    if (nc == 0) return INFINITY;
    qsort(cand, (size_t)nc, sizeof *cand, cmp_double);
    int lo = 0, hi = nc - 1, best = -1;
    while (lo <= hi) { /* the smallest candidate time that N ranks can meet */
        int mid = (lo + hi) / 2, need = 0, ok = 1;
        for (int g = 0; g < ng && ok; g++) {
            int got = fewest_ranks(F, st, ns, grp, g, N, cand[mid]);
            if (got < 0) ok = 0;
            else need += got;
        }
        if (ok && need <= N) { best = mid; hi = mid - 1; } else lo = mid + 1;
    }
    if (best < 0) return INFINITY;
    double T = 0;
    for (int g = 0; g < ng; g++) {
        nrk[g] = fewest_ranks(F, st, ns, grp, g, N, cand[best]);
        double t = group_time(F, st, ns, grp, g, nrk[g]);
        if (t > T) T = t;
    }
    return T;
}

/* every set partition of n ≤ 4 items as group labels (restricted growth strings) */
static int partitions(int n, int out[][4]) {
    int k = 0, a[4] = {0, 0, 0, 0};
    for (;;) {
        memcpy(out[k++], a, sizeof a);
        /* next restricted growth string */
        int i = n - 1;
        for (; i > 0; i--) {
            int mx = 0;
            for (int j = 0; j < i; j++) mx = a[j] > mx ? a[j] : mx;
            if (a[i] <= mx) { a[i]++; for (int j = i + 1; j < n; j++) a[j] = 0; break; }
        }
        if (i == 0) return k;
    }
}

/* the stages of phase ph (1 scoring, 2 training) that the search places, in stage order: without a reward
   network no reward.inf, without a critic (GRPO) no critic.inf or critic.train; their count */
static int phase_stages(const CostModel *cm, int ph, int *ids) {
    static const int inf[4] = {PLAN_ACTOR_INF, PLAN_REF_INF, PLAN_CRITIC_INF, PLAN_REWARD_INF};
    static const int trn[2] = {PLAN_ACTOR_TRAIN, PLAN_CRITIC_TRAIN};
    const int *all = ph == 1 ? inf : trn;
    int n = 0;
    for (int i = 0; i < (ph == 1 ? 4 : 2); i++)
        if (search_places(cm, all[i])) ids[n++] = all[i];
    return n;
}

static void place(PlanStage *ps, GridLayout l, int first) {
    memset(ps, 0, sizeof *ps);
    ps->src = PLAN_SRC_DECK;
    ps->tp = l.tp, ps->pp = l.pp, ps->dp = l.dp;
    ps->nranks = l.tp * l.pp * l.dp;
    for (int i = 0; i < ps->nranks; i++) ps->ranks[i] = (int16_t)(first + i);
}

/* one search under a per-stage cap; returns the plan's predicted total (INFINITY: none) */
/* the disaggregated family: every stage on ranks of its own, across the phases too (an OpenRLHF-like
   layout): the pool split into a generation block, the scoring stages' blocks and the trainings'
   blocks, the first two budgets tried on a grid of N/32 and each phase split min-max inside its budget */
static double search_disaggregated(const CostModel *cm, int N, Frontier *F, double *cand, PlanConfig *out,
                                   SearchStats *st) {
    int inf[4], trn[2], ni = phase_stages(cm, 1, inf), ntr = phase_stages(cm, 2, trn), gi[4] = {0, 1, 2, 3}, gt[2] = {0, 1};
    int step = N / 32 > 1 ? N / 32 : 1;
    double best = INFINITY;
    int bg = 0, bt = 0, bni[4] = {0}, bnt[2] = {0};
    for (int ng = 1; ng <= N - ni - ntr; ng += step) {
        double tg = F[PLAN_ACTOR_GEN].t[ng];
        if (!isfinite(tg)) continue;
        for (int nt = ntr; ng + nt <= N - ni; nt += step) {
            int nrt[2], nri[4];
            st->groupings++;
            double tt = split_groups(F, trn, ntr, gt, ntr, nt, nrt, cand);
            double ti = isfinite(tt) ? split_groups(F, inf, ni, gi, ni, N - ng - nt, nri, cand) : INFINITY;
            if (tg + ti + tt < best) {
                best = tg + ti + tt;
                bg = ng, bt = nt;
                memcpy(bni, nri, sizeof nri);
                memcpy(bnt, nrt, sizeof nrt);
            }
        }
    }
    if (!isfinite(best)) return INFINITY;
    place(&out->stage[PLAN_ACTOR_GEN], F[PLAN_ACTOR_GEN].l[bg], 0);
    int first = bg;
    for (int i = 0; i < ni; i++) {
        place(&out->stage[inf[i]], F[inf[i]].l[bni[i]], first);
        first += bni[i];
    }
    first = bg + (N - bg - bt);
    for (int i = 0; i < ntr; i++) {
        place(&out->stage[trn[i]], F[trn[i]].l[bnt[i]], first);
        first += bnt[i];
    }
    return best;
}

/* Phase ph's stages (1 scoring, 2 training) over the n ranks from `first`: every grouping into colocated groups
   on disjoint blocks (colocated: only the one group), each split min–max; the fastest laid into out (NULL: not
   laid). Returns its time (INFINITY: none). */
static double lay_phase(const CostModel *cm, int ph, Frontier *F, double *cand, int n, int first, int colocated,
                        PlanConfig *out, SearchStats *st) {
    int stg[4], ns = phase_stages(cm, ph, stg);
    int parts[15][4], np = colocated ? 1 : partitions(ns, parts), bestp = -1, bestn[4] = {0};
    if (colocated) memset(parts[0], 0, sizeof parts[0]);
    double bestT = INFINITY;
    for (int p = 0; p < np; p++) {
        int ng = 0, nrk[4];
        for (int i = 0; i < ns; i++) ng = parts[p][i] + 1 > ng ? parts[p][i] + 1 : ng;
        st->groupings++;
        double T = split_groups(F, stg, ns, parts[p], ng, n, nrk, cand);
        if (T < bestT) {
            bestT = T;
            bestp = p;
            memcpy(bestn, nrk, sizeof nrk);
        }
    }
    if (bestp < 0 || !out) return bestT;
    int at[4] = {0}, ng = 0;
    for (int i = 0; i < ns; i++) ng = parts[bestp][i] + 1 > ng ? parts[bestp][i] + 1 : ng;
    at[0] = first;
    for (int g = 1; g < ng; g++) at[g] = at[g - 1] + bestn[g - 1];
    for (int i = 0; i < ns; i++) {
        int g = parts[bestp][i];
        place(&out->stage[stg[i]], F[stg[i]].l[bestn[g]], at[g]);
    }
    return bestT;
}

/* what every family's plan gets before it is priced: reward.inf without a network on rank 0, a critic-free job's
   critic stages absent, the pool's ranks mapped to job ranks; then its price */
static double finish_plan(CostWork *cw, const CostModel *cm, const int *map, int Njob, const Workload *w,
                          PlanConfig *out, StepCost *sc) {
    if (!cm->have_rm) place(&out->stage[PLAN_REWARD_INF], (GridLayout){1, 1, 1}, 0); /* holds no model */
    if (cm->no_critic)
        for (int s = PLAN_CRITIC_INF; s <= PLAN_CRITIC_TRAIN; s++) {
            memset(&out->stage[s], 0, sizeof out->stage[s]);
            out->stage[s].src = PLAN_SRC_ABSENT;
        }
    if (map)
        for (int s = 0; s < PLAN_NSTAGES; s++)
            for (int i = 0; i < out->stage[s].nranks; i++) out->stage[s].ranks[i] = (int16_t)map[out->stage[s].ranks[i]];
    return cost_plan_in(cw, cm, out, Njob, w, sc);
}

/* the scoring and training phases on the n ranks after the first ng (the split family's "rest") */
static double rest_time(const CostModel *cm, Frontier *F, double *cand, int N, int ng, SearchStats *st) {
    return lay_phase(cm, 1, F, cand, N - ng, ng, 0, NULL, st) + lay_phase(cm, 2, F, cand, N - ng, ng, 0, NULL, st);
}

/* The split family (planner.h, SEARCH_SPLIT; half: SEARCH_HALF): actor.gen on ranks 0 .. ng−1, the scoring and
   training phases on ng .. N−1. ng: the fewest ranks at which generation is no slower than the rest (the max of
   the two is least there or one rank below), then the whole plans of ng − 2 .. ng + 2 priced; the fastest that
   fits (else the fastest) into out, its price returned */
static double search_split(CostWork *cw, const CostModel *cm, int N, const int *map, int Njob, const Workload *w,
                           Frontier *F, double *cand, int half, PlanConfig *out, StepCost *sc, SearchStats *st) {
    if (N < 2) return INFINITY;
    int lo = 1, hi = N - 1, at = N - 1;
    if (half) at = N / 2;
    else
        while (lo <= hi) { /* generation's time falls with ng, the rest's rises */
            int mid = (lo + hi) / 2;
            if (F[PLAN_ACTOR_GEN].t[mid] <= rest_time(cm, F, cand, N, mid, st)) at = mid, hi = mid - 1;
            else lo = mid + 1;
        }
    PlanConfig trial;
    StepCost tsc;
    double best = INFINITY;
    int best_fits = 0;
    for (int ng = half ? at : at - 2; ng <= (half ? at : at + 2); ng++) {
        if (ng < 1 || ng > N - 1 || !isfinite(F[PLAN_ACTOR_GEN].t[ng])) continue;
        memset(&trial, 0, sizeof trial);
        snprintf(trial.fill, sizeof trial.fill, "auto");
        place(&trial.stage[PLAN_ACTOR_GEN], F[PLAN_ACTOR_GEN].l[ng], 0);
        if (!isfinite(lay_phase(cm, 1, F, cand, N - ng, ng, 0, &trial, st)) ||
            !isfinite(lay_phase(cm, 2, F, cand, N - ng, ng, 0, &trial, st)))
            continue;
        double T = finish_plan(cw, cm, map, Njob, w, &trial, &tsc);
        if (!isfinite(T)) continue;
        if ((tsc.fits && !best_fits) || (tsc.fits == best_fits && T < best)) {
            best = T, best_fits = tsc.fits;
            *out = trial, *sc = tsc;
        }
    }
    return best;
}

/* wf: the workload the frontiers are built for (the stages' fastest layouts); w: the one the plan is priced and
   its memory checked for */
static double search_capped(CostWork *cw, const CostModel *cm, int N, const int *map, int Njob, const Workload *wf,
                            const Workload *w, double cap, int mode, Frontier *F, double *cand, PlanConfig *out,
                            StepCost *sc, SearchStats *st) {
    for (int s = 0; s < PLAN_NSTAGES; s++) {
        if (!search_places(cm, s)) continue;
        frontier_build(cm, s, N, wf, cap, &F[s], &st->candidates);
    }
    memset(out, 0, sizeof *out);
    snprintf(out->fill, sizeof out->fill, "auto");
    if (mode == SEARCH_SPLIT || mode == SEARCH_HALF)
        return search_split(cw, cm, N, map, Njob, w, F, cand, mode == SEARCH_HALF, out, sc, st);
    if (mode == SEARCH_DISAGGREGATED) {
        if (!isfinite(search_disaggregated(cm, N, F, cand, out, st))) return INFINITY;
        return finish_plan(cw, cm, map, Njob, w, out, sc);
    }
    /* generation alone on the pool */
    if (!isfinite(F[PLAN_ACTOR_GEN].t[N])) return INFINITY;
    place(&out->stage[PLAN_ACTOR_GEN], F[PLAN_ACTOR_GEN].l[N], 0);
    /* scoring and training phases: every grouping (colocated: only the one group) */
    for (int ph = 1; ph <= 2; ph++)
        if (!isfinite(lay_phase(cm, ph, F, cand, N, 0, mode == SEARCH_COLOCATED, out, st))) return INFINITY;
    return finish_plan(cw, cm, map, Njob, w, out, sc);
}

int plan_stage_options(const CostModel *cm, int stage, int n, const Workload *w, StageOption *opt, int max) {
    int k = 0;
    if (cm->no_critic && plan_stage_is_critic_model(stage)) return 0; /* absent from a critic-free job's plans */
    for (int size = 1; size <= n; size++)
        for (int tp = 1; tp <= size; tp++) {
            if (size % tp) continue;
            for (int pp = 1; tp * pp <= size; pp++) {
                if (size % (tp * pp)) continue;
                GridLayout l = {tp, pp, size / (tp * pp)};
                if (!isfinite(cost_stage(cm, stage, l, w, NULL))) continue;
                for (int first = 0; first + size <= n && k < max; first += size) opt[k++] = (StageOption){l, first};
            }
        }
    return k;
}

void plan_stage_of_option(const StageOption *o, const int *map, PlanStage *ps) {
    place(ps, o->l, o->first);
    if (map)
        for (int i = 0; i < ps->nranks; i++) ps->ranks[i] = (int16_t)map[ps->ranks[i]];
}

/* The local search after the families' best (planner.h): random plans, then coordinate descent. */
#define REFINE_OPTS 1024
static void refine(CostWork *cw, const CostModel *cm, int N, const int *map, int Njob, const Workload *w,
                   PlanConfig *best, StepCost *bsc, SearchStats *st) {
    StageOption (*opt)[REFINE_OPTS] = nr_xmalloc(PLAN_NSTAGES * sizeof *opt); /* (PLAN_NSTAGES, REFINE_OPTS) */
    PlanConfig q;
    int nopt[PLAN_NSTAGES];
    for (int s = 0; s < PLAN_NSTAGES; s++)
        nopt[s] = !search_places(cm, s) ? 0 : plan_stage_options(cm, s, N, w, opt[s], REFINE_OPTS);
    double bt = bsc->total;
    StepCost c;
    uint64_t x = 0x9E3779B97F4A7C15ull; /* xorshift64: the same draws for the same inputs */
    q = *best; /* every draw replaces each stage that has options; the others stay best's throughout */
    for (int t = 0; t < SEARCH_REFINE_DRAWS; t++) {
        for (int s = 0; s < PLAN_NSTAGES; s++) {
            if (!nopt[s]) continue;
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            plan_stage_of_option(&opt[s][x % (uint64_t)nopt[s]], map, &q.stage[s]);
        }
        double T = cost_plan_in(cw, cm, &q, Njob, w, &c);
        st->candidates++;
        if (c.fits && T < bt) *best = q, *bsc = c, bt = T;
    }
    q = *best; /* coordinate descent: q differs from best only in the stage being tried */
    for (int round = 0, moved = 1; moved && round < 8; round++) {
        moved = 0;
        for (int s = 0; s < PLAN_NSTAGES; s++) {
            for (int o = 0; o < nopt[s]; o++) {
                plan_stage_of_option(&opt[s][o], map, &q.stage[s]);
                double T = cost_plan_in(cw, cm, &q, Njob, w, &c);
                st->candidates++;
                if (c.fits && T < bt * (1 - 1e-12)) *best = q, *bsc = c, bt = T, moved = 1;
            }
            q.stage[s] = best->stage[s];
        }
    }
    free(opt);
}

int plan_search(const CostModel *cm, int N, const Workload *w, PlanConfig *out, StepCost *sc, SearchStats *st,
                char *why, size_t len) {
    return plan_search_on(cm, N, NULL, N, w, out, sc, st, why, len);
}

int plan_search_on(const CostModel *cm, int N, const int *map, int Njob, const Workload *w, PlanConfig *out,
                   StepCost *sc, SearchStats *st, char *why, size_t len) {
    return plan_search_mode(cm, N, map, Njob, w, SEARCH_ANY, out, sc, st, why, len);
}

int plan_search_mode(const CostModel *cm, int N, const int *map, int Njob, const Workload *w, int mode,
                     PlanConfig *out, StepCost *sc, SearchStats *st, char *why, size_t len) {
    double t0 = nr_now();
    memset(st, 0, sizeof *st);
    if (N < 1 || N > PLAN_MAX_RANKS || Njob < N || Njob > PLAN_MAX_RANKS)
        return nr_fail(why, len, "plan search: %d ranks of %d (1..%d)", N, Njob, PLAN_MAX_RANKS);
    Frontier F[PLAN_NSTAGES];
    CostWork *cw = cost_work_new();
    double *cand = malloc((size_t)4 * (size_t)(N + 1) * sizeof *cand);
    int rc = 0;
    for (int s = 0; s < PLAN_NSTAGES; s++) {
        F[s].t = malloc((size_t)(N + 1) * sizeof *F[s].t);
        F[s].l = calloc((size_t)N + 1, sizeof *F[s].l);
        for (int n = 0; n <= N && F[s].t; n++) F[s].t[n] = !search_places(cm, s) ? 0 : INFINITY;
    }
    double usable = cm->hw.mem * (1 - cm->headroom);
    PlanConfig best, trial;
    StepCost bsc, tsc;
    double bestT = INFINITY;
    /* SEARCH_ANY lays every phase over the whole pool, so each rank holds a shard of generation, of scoring and
       of training; where no such plan fits, the disaggregated family (each phase's stages on ranks of their own)
       may (a 70B actor on 128 modelled H200s fits only so) */
    /* The frontiers hold each stage's fastest layout per rank count, whatever its memory; where the plan they
       make does not fit, tighter caps trade speed for memory stage by stage, blind to which stages share ranks.
       Frontiers built for other response lengths (alt_len times the step's; the memory is the same, as every
       plan is checked and priced at w's own lengths) rank the layouts otherwise and can make a plan that fits
       and is faster at w: where memory is tight, searching at half the step's lengths can find a plan much
       faster at the step's own. The lengths, 2 down to 1/8 of the step's, are those that helped on the random
       scenario decks of tests/test_sim_fuzz.py's generator; more of them (down to 1/16) found no better plans. */
    static const double alt_len[1 + SEARCH_ALT_LENS] = {1, 2, 0.5, 0.25, 0.125};
    for (int a = 0; a <= SEARCH_ALT_LENS; a++) {
        Workload wf = *w;
        wf.resp_len = w->resp_len * alt_len[a];
        wf.resp_longest = w->resp_longest * alt_len[a]; /* the same tail, scaled with the mean */
        double found = INFINITY;
        for (int fam = 0; fam < 2 && !isfinite(found); fam++) {
            int m = fam == 0 ? mode : SEARCH_DISAGGREGATED;
            if (fam == 1 && mode != SEARCH_ANY) break;
            for (int k = 1; k <= 7; k++) {
                double T = search_capped(cw, cm, N, map, Njob, &wf, w, usable / k, m, F, cand, &trial, &tsc, st);
                if (isfinite(T) && tsc.fits && T < found) found = T;
                if (isfinite(T) && tsc.fits && T < bestT) {
                    bestT = T;
                    best = trial;
                    bsc = tsc;
                }
                if (isfinite(found) && k == 1) break; /* the unconstrained optimum fits */
            }
        }
        /* asynchronous rollouts: generation on ranks of its own overlaps the rest (planner.h, SEARCH_SPLIT) */
        for (int k = 1; k <= 7 && mode == SEARCH_ANY && cm->max_staleness >= 1; k++) {
            double T = search_capped(cw, cm, N, map, Njob, &wf, w, usable / k, SEARCH_SPLIT, F, cand, &trial, &tsc, st);
            if (isfinite(T) && tsc.fits && T < bestT) {
                bestT = T;
                best = trial;
                bsc = tsc;
            }
            if (isfinite(T) && tsc.fits && k == 1) break;
        }
    }
    if (isfinite(bestT) && mode == SEARCH_ANY && N <= SEARCH_REFINE_MAX) refine(cw, cm, N, map, Njob, w, &best, &bsc, st);
    if (isfinite(bestT)) {
        *out = best;
        *sc = bsc;
    } else {
        /* what does not fit: each stage alone on the whole pool at its most-sharded layout */
        rc = -1;
        double worst = 0;
        int ws = -1;
        GridLayout wl = {1, 1, 1};
        for (int s = 0; s < PLAN_NSTAGES; s++) {
            if (!search_places(cm, s)) continue;
            double mn = INFINITY;
            GridLayout ml = {1, 1, 1};
            int rpn = cm->hw.ranks_per_node > 0 ? cm->hw.ranks_per_node : 1;
            for (int tp = 1; tp <= rpn && tp <= N; tp *= 2)
                for (int pp = 1; tp * pp <= N; pp++)
                    for (int dp = 1; tp * pp * dp <= N; dp++) {
                        double mem = 0, t = cost_stage(cm, s, (GridLayout){tp, pp, dp}, w, &mem);
                        if (isfinite(t) && mem < mn) { mn = mem; ml = (GridLayout){tp, pp, dp}; }
                    }
            if (mn > worst) { worst = mn; ws = s; wl = ml; }
        }
        char b1[32], b2[32], b3[32];
        if (ws >= 0 && worst > usable)
            nr_fail(why, len, "%s needs %s per rank even at tp%d pp%d dp%d on %d ranks; ranks have %s less %.0f%% headroom (%s)",
                    plan_stage_name(ws), nr_bytes_str(worst, b1, sizeof b1), wl.tp, wl.pp, wl.dp, N,
                    nr_bytes_str(cm->hw.mem, b2, sizeof b2), cm->headroom * 100, nr_bytes_str(usable, b3, sizeof b3));
        else
            nr_fail(why, len, "no plan fits %d ranks of %s (less %.0f%% headroom): the models together need more than the pool holds",
                    N, nr_bytes_str(cm->hw.mem, b2, sizeof b2), cm->headroom * 100);
    }
    for (int s = 0; s < PLAN_NSTAGES; s++) {
        free(F[s].t);
        free(F[s].l);
    }
    free(cand);
    cost_work_free(cw);
    st->seconds = nr_now() - t0;
    return rc;
}
