/* slabs.c — the pure slab planner of a transition (transition.h): old shards
 * ∩ new shards as N-d hyperslabs, local where the destination already holds
 * the data, otherwise the least-loaded old holder as the source. No MPI. */
#include "nereus/transition.h"
#include "nereus/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/grid.h"

typedef struct Box {
    int s[4], c[4];
} Box;


int slab_tensor_box(const TensorInfo *t, int start[4], int count[4]) {
    for (int a = 0; a < 4; a++) {
        start[a] = 0;
        count[a] = a < t->ndim ? t->shape[a] : 1;
    }
    if (!t->held) return 0;
    if (t->cut_axis >= 0) {
        start[t->cut_axis] = t->cut_start;
        count[t->cut_axis] = t->lshape[t->cut_axis];
    }
    if (t->pp_axis >= 0) {
        start[t->pp_axis] = t->pp_start;
        count[t->pp_axis] = t->lshape[t->pp_axis];
    }
    return 1;
}

static size_t box_numel(const Box *b) {
    size_t n = 1;
    for (int a = 0; a < 4; a++) n *= (size_t)b->c[a];
    return n;
}

/* a ∩ b into *o; 0 when empty */
static int box_intersect(const Box *a, const Box *b, Box *o) {
    for (int k = 0; k < 4; k++) {
        int lo = a->s[k] > b->s[k] ? a->s[k] : b->s[k];
        int ha = a->s[k] + a->c[k], hb = b->s[k] + b->c[k];
        int hi = ha < hb ? ha : hb;
        if (hi <= lo) return 0;
        o->s[k] = lo;
        o->c[k] = hi - lo;
    }
    return 1;
}

/* 1 when outer ⊇ inner */
static int box_contains(const Box *outer, const Box *inner) {
    for (int k = 0; k < 4; k++)
        if (inner->s[k] < outer->s[k] || inner->s[k] + inner->c[k] > outer->s[k] + outer->c[k]) return 0;
    return 1;
}

static int check_stage(const char *which, const PlanStage *s, const GPTConfig *cfg, int nranks, char *seen,
                       char *why, size_t len) {
    if (s->tp < 1 || s->pp < 1 || s->dp < 1)
        return nr_fail(why, len, "%s stage: degrees tp%d pp%d dp%d must be >= 1", which, s->tp, s->pp, s->dp);
    int n = s->tp * s->pp * s->dp;
    if (s->nranks != 0 && s->nranks != n)
        return nr_fail(why, len, "%s stage: %d ranks for tp%d pp%d dp%d", which, s->nranks, s->tp, s->pp, s->dp);
    if (n > nranks) return nr_fail(why, len, "%s stage: %d ranks in a job of %d", which, n, nranks);
    if (cfg->NH % s->tp != 0 || cfg->C % s->tp != 0)
        return nr_fail(why, len, "%s stage: tp %d does not divide NH %d and C %d", which, s->tp, cfg->NH, cfg->C);
    if (cfg->L % s->pp != 0) return nr_fail(why, len, "%s stage: pp %d does not divide L %d", which, s->pp, cfg->L);
    memset(seen, 0, (size_t)nranks);
    for (int i = 0; i < n; i++) {
        int r = plan_stage_rank(s, i);
        if (r < 0 || r >= nranks) return nr_fail(why, len, "%s stage: rank %d not in 0..%d", which, r, nranks - 1);
        if (seen[r]) return nr_fail(why, len, "%s stage: rank %d listed twice", which, r);
        seen[r] = 1;
    }
    return 0;
}

/* the tables of every (t, p) shard of a stage: tab[(t + tp·p)·GPT_NUM_TENSORS + i] */
static TensorInfo *stage_tables(const GPTConfig *cfg, const PlanStage *s, int *ntensors) {
    TensorInfo *tab = malloc((size_t)s->tp * (size_t)s->pp * GPT_NUM_TENSORS * sizeof *tab);
    if (!tab) return NULL;
    for (int p = 0; p < s->pp; p++)
        for (int t = 0; t < s->tp; t++)
            gpt_tensor_table_pp(cfg, s->tp, t, s->pp, p, tab + (size_t)(t + s->tp * p) * GPT_NUM_TENSORS, ntensors);
    return tab;
}

void slab_plan_free(SlabPlan *sp) {
    if (!sp) return;
    free(sp->slabs);
    free(sp->rank_in);
    free(sp->rank_out);
    memset(sp, 0, sizeof *sp);
}

int slab_plan_build(SlabPlan *sp, const GPTConfig *cfg, const PlanStage *os, const PlanStage *ns, int nranks,
                    char *why, size_t len) {
    memset(sp, 0, sizeof *sp);
    if (nranks < 1) return nr_fail(why, len, "slab plan: %d job ranks", nranks);
    char *seen = malloc((size_t)nranks);
    if (!seen) return nr_fail(why, len, "slab plan: out of memory");
    if (check_stage("old", os, cfg, nranks, seen, why, len) || check_stage("new", ns, cfg, nranks, seen, why, len)) {
        free(seen);
        return -1;
    }
    free(seen);

    const size_t F = sizeof(float);
    int nt = 0;
    TensorInfo *otab = stage_tables(cfg, os, &nt), *ntab = stage_tables(cfg, ns, &nt);
    int otp = os->tp, opp = os->pp, odp = os->dp, ocells = otp * opp;
    int on = otp * opp * odp, nn = ns->tp * ns->pp * ns->dp;
    int *opos = malloc((size_t)nranks * sizeof *opos);         /* job rank → old grid position, -1 */
    Box *obox = malloc((size_t)ocells * GPT_NUM_TENSORS * sizeof *obox); /* old (t,p) boxes */
    char *oheld = malloc((size_t)ocells * GPT_NUM_TENSORS);
    int *cells = malloc((size_t)ocells * GPT_NUM_TENSORS * sizeof *cells);  /* owner cells per tensor */
    int *ncells = calloc(GPT_NUM_TENSORS, sizeof *ncells);
    /* holders[(i·ocells + c)·ocells + k]: the (t,p) holding owner cell c of tensor i */
    int *holders = malloc((size_t)GPT_NUM_TENSORS * (size_t)ocells * (size_t)ocells * sizeof *holders);
    int *nholders = calloc((size_t)GPT_NUM_TENSORS * (size_t)ocells, sizeof *nholders);
    sp->rank_in = calloc((size_t)nranks, sizeof *sp->rank_in);
    sp->rank_out = calloc((size_t)nranks, sizeof *sp->rank_out);
    sp->nranks = nranks;
    int rc = 0;
    if (!otab || !ntab || !opos || !obox || !oheld || !cells || !ncells || !holders || !nholders || !sp->rank_in ||
        !sp->rank_out) {
        rc = nr_fail(why, len, "slab plan: out of memory");
        goto done;
    }
    for (int r = 0; r < nranks; r++) opos[r] = -1;
    for (int pos = 0; pos < on; pos++) opos[plan_stage_rank(os, pos)] = pos;
    for (int c = 0; c < ocells; c++)
        for (int i = 0; i < nt; i++) {
            const TensorInfo *ti = &otab[(size_t)c * GPT_NUM_TENSORS + i];
            Box *b = &obox[(size_t)c * GPT_NUM_TENSORS + i];
            oheld[(size_t)c * GPT_NUM_TENSORS + i] = (char)slab_tensor_box(ti, b->s, b->c);
            if (ti->owner) cells[i * ocells + ncells[i]++] = c;
        }
    for (int i = 0; i < nt; i++)
        for (int k = 0; k < ncells[i]; k++) {
            const Box *cb = &obox[(size_t)cells[i * ocells + k] * GPT_NUM_TENSORS + i];
            size_t hi = (size_t)i * ocells + k;
            for (int c = 0; c < ocells; c++)
                if (oheld[(size_t)c * GPT_NUM_TENSORS + i] && box_contains(&obox[(size_t)c * GPT_NUM_TENSORS + i], cb))
                    holders[hi * ocells + nholders[hi]++] = c;
        }

    /* Geometry per new (t, p) cell, the same for every replica d: for each
     * tensor, the owner cells its box meets and the intersections. */
    int ntp = ns->tp, npp = ns->pp, ncell_new = ntp * npp;
    size_t geo_cap = (size_t)ncell_new * (size_t)nt * (size_t)ocells, ngeo = 0;
    struct Geo { int i, k; Box P; } *geo = malloc((geo_cap ? geo_cap : 1) * sizeof *geo);
    size_t *geo_off = calloc((size_t)ncell_new + 1, sizeof *geo_off);
    /* round-robin start per (tensor, owner cell) over its candidates (holders × old replicas) */
    int *rr = calloc((size_t)GPT_NUM_TENSORS * (size_t)ocells, sizeof *rr);
    if (!geo || !geo_off || !rr) {
        free(geo); free(geo_off); free(rr);
        rc = nr_fail(why, len, "slab plan: out of memory");
        goto done;
    }
    for (int nc = 0; nc < ncell_new; nc++) {
        const TensorInfo *tt = &ntab[(size_t)nc * GPT_NUM_TENSORS];
        geo_off[nc] = ngeo;
        for (int i = 0; i < nt; i++) {
            Box B;
            if (!slab_tensor_box(&tt[i], B.s, B.c)) continue;
            for (int k = 0; k < ncells[i]; k++) {
                Box P;
                if (box_intersect(&B, &obox[(size_t)cells[i * ocells + k] * GPT_NUM_TENSORS + i], &P))
                    geo[ngeo++] = (struct Geo){i, k, P};
            }
        }
    }
    geo_off[ncell_new] = ngeo;
    for (size_t q = 0; q < (size_t)GPT_NUM_TENSORS * (size_t)ocells; q++) rr[q] = (int)(q * 7 % 64);
    if (!sp->cap || sp->cap < ngeo * (size_t)ns->dp) { /* every slab at once: no growth in the loop */
        Slab *nsl = realloc(sp->slabs, (ngeo * (size_t)ns->dp + 1) * sizeof *nsl);
        if (!nsl) {
            free(geo); free(geo_off); free(rr);
            rc = nr_fail(why, len, "slab plan: out of memory");
            goto done;
        }
        sp->slabs = nsl;
        sp->cap = ngeo * (size_t)ns->dp + 1;
    }

    for (int pos = 0; pos < nn; pos++) {
        GridCoord g = grid_coord((GridLayout){ns->tp, ns->pp, ns->dp}, pos);
        int r = plan_stage_rank(ns, pos), op = opos[r], nc = g.t + ntp * g.p;
        int ocell = op < 0 ? -1 : (op % otp) + otp * (op / (otp * odp)); /* t + tp·p of r's old position */
        const TensorInfo *tt = &ntab[(size_t)nc * GPT_NUM_TENSORS];
        const Box *A[GPT_NUM_TENSORS];
        for (int i = 0; i < nt; i++) {
            A[i] = ocell >= 0 && oheld[(size_t)ocell * GPT_NUM_TENSORS + i] ? &obox[(size_t)ocell * GPT_NUM_TENSORS + i]
                                                                              : NULL;
            Box B;
            if (!slab_tensor_box(&tt[i], B.s, B.c)) continue;
            /* the lower bound, independently of the slabs: need minus what r already holds */
            size_t need = box_numel(&B);
            Box X;
            if (A[i] && box_intersect(&B, A[i], &X)) need -= box_numel(&X);
            sp->bytes_lower_bound += need * F;
        }
        for (size_t q = geo_off[nc]; q < geo_off[nc + 1]; q++) {
            int i = geo[q].i, k = geo[q].k;
            const Box *cb = &obox[(size_t)cells[i * ocells + k] * GPT_NUM_TENSORS + i];
            Slab *s = &sp->slabs[sp->n++];
            s->tensor = i;
            s->ndim = tt[i].ndim;
            for (int a = 0; a < 4; a++) {
                s->start[a] = geo[q].P.s[a];
                s->count[a] = geo[q].P.c[a];
            }
            s->dst_rank = r;
            s->bytes = box_numel(&geo[q].P) * F;
            /* old boxes are unions of old cells: r's old box holds the whole cell or none of it */
            s->local = A[i] && box_contains(A[i], cb);
            if (s->local) {
                s->src_rank = r;
                sp->bytes_local += s->bytes;
                continue;
            }
            /* the least-loaded of up to 8 candidates (holder cell × old replica), taken round-robin
               from where the last slab of this block stopped: balanced, O(1) per slab */
            size_t hi = (size_t)i * ocells + k;
            int nh = nholders[hi], ncand = nh * odp, *p = &rr[hi], best = -1;
            for (int w = 0; w < ncand && w < 8; w++) {
                int cidx = (*p + w) % ncand, c = holders[hi * ocells + cidx % nh], d = cidx / nh;
                int qr = plan_stage_rank(os, c % otp + otp * (d + odp * (c / otp)));
                if (best < 0 || sp->rank_out[qr] < sp->rank_out[best] ||
                    (sp->rank_out[qr] == sp->rank_out[best] && qr < best))
                    best = qr;
            }
            *p = (*p + 1) % (ncand ? ncand : 1);
            if (best < 0) { /* cannot happen: every owner cell has its owner as a holder */
                free(geo); free(geo_off); free(rr);
                rc = nr_fail(why, len, "slab plan: no old holder of a block of tensor %s", tt[i].name);
                goto done;
            }
            s->src_rank = best;
            sp->rank_out[best] += s->bytes;
            sp->rank_in[r] += s->bytes;
            sp->bytes_moved += s->bytes;
        }
    }
    free(geo);
    free(geo_off);
    free(rr);
done:
    free(otab);
    free(ntab);
    free(opos);
    free(obox);
    free(oheld);
    free(cells);
    free(ncells);
    free(holders);
    free(nholders);
    if (rc) slab_plan_free(sp);
    return rc;
}
