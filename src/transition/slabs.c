/* slabs.c — the pure slab planner of a transition (transition.h): old shards
 * ∩ new shards as N-d hyperslabs, local where the destination already holds
 * the data, otherwise the least-loaded old holder as the source, or (with
 * forwarding) an earlier replica of the same new cell that receives the
 * whole stream and sends it on. No MPI.
 *
 * tx_slabs_build_seeded runs its phases over one SlabBuild: the stages
 * checked; the layouts' cells, the holder sets and their source candidates;
 * each new cell's geometry (computed once, shared by its replicas); the
 * scratch of the source choice and which cells forwarding can help; the
 * lower bound per destination; then destination by destination
 * (sb_destination) its local blocks, the forwards it takes, and a holder
 * for every other block; finally rebalance_sources where nothing was
 * forwarded. */
#include "nereus/transition.h"
#include "nereus/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/grid.h"

/* candidates looked at per block: the least loaded of them is its source */
#ifndef TX_SRC_WINDOW
#define TX_SRC_WINDOW 16
#endif

/* streams of a new cell's replicas kept as forwarding candidates for its later replicas (oldest first):
 * two replicas' worth plus 8, at most 128 */
#define TX_RELAY_QUEUE_MAX 128

/* A stream one replica of a new cell receives (all its refs from one source), which a later replica of
 * the cell may take from it instead (transition.h, Forwarding). */
typedef struct Fwd {
    int rank, hop;   /* the replica that receives it; the hop of its refs */
    int nref;
    size_t ref0;     /* its refs: ts->ref[ref0 .. ref0 + nref) */
    size_t bytes;    /* one buffer */
} Fwd;

/* The least loaded rank of cd[0..nw) (ties: the lowest rank; the ranks are distinct), skipping the
 * ranks r with skip[r] set (skip may be NULL); -1 when all are skipped. */
static inline int least_loaded(const int *cd, int nw, const size_t *L, int rsh, const char *skip) {
    unsigned long long bestk = ~0ull, bestk1 = ~0ull; /* two chains: half the dependent latency */
    int w = 0;
    if (!skip) {
        for (; w + 1 < nw; w += 2) {
            unsigned long long k0 = (unsigned long long)L[cd[w]] << rsh | (unsigned long long)cd[w];
            unsigned long long k1 = (unsigned long long)L[cd[w + 1]] << rsh | (unsigned long long)cd[w + 1];
            bestk = k0 < bestk ? k0 : bestk;
            bestk1 = k1 < bestk1 ? k1 : bestk1;
        }
    }
    for (; w < nw; w++) {
        if (skip && skip[cd[w]]) continue;
        unsigned long long k0 = (unsigned long long)L[cd[w]] << rsh | (unsigned long long)cd[w];
        bestk = k0 < bestk ? k0 : bestk;
    }
    bestk = bestk1 < bestk ? bestk1 : bestk;
    return bestk == ~0ull ? -1 : (int)(bestk & ((1ull << rsh) - 1));
}

/* Holder set h's candidates (cand_off[h + 1] − cand_off[h] of them) in cand, stored with the first
 * TX_SRC_WINDOW repeated after them so that a window never wraps. */
static const int *set_cands(const int *cand, const int *cand_off, int h) {
    return cand + cand_off[h] + (size_t)h * TX_SRC_WINDOW;
}

/* The source of a block of holder set h: the least loaded of its window at rr[h], or where the
 * destination's forwarders (skip) take it all, of every candidate; -1 when every candidate is one. */
static int pick_holder(const int *cand, const int *cand_off, const int *rr, int h, const size_t *L, int rsh,
                       const char *skip) {
    const int *ch = set_cands(cand, cand_off, h);
    int ncand = cand_off[h + 1] - cand_off[h], nw = ncand < TX_SRC_WINDOW ? ncand : TX_SRC_WINDOW;
    int best = least_loaded(ch + rr[h], nw, L, rsh, skip);
    if (best < 0 && ncand > nw) best = least_loaded(ch, ncand, L, rsh, skip);
    return best;
}

/* Destination pos's refs again in their order: the local ones first (untouched), then the moved ones
 * grouped by source (stable, in order of first appearance). */
static void regroup_by_source(TxSlabs *ts, int pos) {
    TxRef *r = ts->ref + ts->ref_off[pos];
    size_t k = 0, n = ts->ref_off[pos + 1] - ts->ref_off[pos];
    while (k < n && r[k].src == r[k].dst) k++;
    while (k < n) { /* r[k]'s source: its later refs brought up behind it, in order */
        size_t e = k + 1;
        for (size_t j = e; j < n; j++)
            if (r[j].src == r[k].src) {
                TxRef t = r[j];
                memmove(&r[e + 1], &r[e], (j - e) * sizeof *r);
                r[e++] = t;
            }
        k = e;
    }
}

/* After the greedy pass, which takes each destination's blocks in turn: a block given early to the then
 * least-loaded holder can leave that holder the busiest once later destinations are served (tp2dp2 @ 0-3
 * -> tp2dp4 on 8 ranks: the greedy pass alone has ranks 0 and 1 send more than 2 and 3, where an even
 * split suffices).
 * A rank's cost is max(what it sends, what it receives) in load's units (its link's busier direction).
 * While it helps, at most 64 times: the costliest source of the change, where its sends are what make it
 * so, gives one of its blocks to the holder that stays under that cost after taking it, the move that
 * leaves the larger of the two costs least. No cost rises to the costliest one's. Sources are kept in
 * lists (per rank, the refs it sends), so a move costs a scan of the sources and of the costliest one's
 * refs. Only for a change without forwards (a forward sends on a whole stream as an earlier destination
 * receives it, so its sources must stay). Then each destination whose refs changed source has its moved
 * refs grouped by source again (regroup_by_source). L: the send loads balanced on
 * (lscale per byte), in_load: the receive loads of the earlier changes (may be NULL); rank_out follows L.
 * Returns 0, or -1 out of memory (nothing changed then). */
static int rebalance_sources(TxSlabs *ts, int nn, int nranks, const int *cand, const int *cand_off, const int *rr,
                             size_t *L, const size_t *in_load, size_t lscale, int rsh) {
    size_t nref = ts->ref_off[nn];
    int *head = malloc((size_t)nranks * sizeof *head), *srcs = malloc((size_t)nranks * sizeof *srcs);
    size_t *next = malloc((nref + 1) * sizeof *next);
    if (!head || !srcs || !next) {
        free(head), free(srcs), free(next);
        return -1;
    }
    int ns = 0;
    for (int r = 0; r < nranks; r++) head[r] = -1;
    for (size_t i = nref; i-- > 0;) { /* each source's refs, in ref order */
        int x = ts->ref[i].src;
        if (x == ts->ref[i].dst) continue;
        if (head[x] < 0) srcs[ns++] = x;
        next[i] = head[x] < 0 ? SIZE_MAX : (size_t)head[x];
        head[x] = (int)i;
    }
#define IN_(r) ((in_load ? in_load[r] : 0) + ts->rank_in[r] * lscale)
#define COST_(r) NR_MAX(L[r], IN_(r))
    int touched[64], nt = 0; /* the destinations (pos) whose refs changed source */
    for (int it = 0; it < 64; it++) {
        int s = -1; /* the costliest source */
        for (int k = 0; k < ns; k++)
            if (head[srcs[k]] >= 0 && (s < 0 || COST_(srcs[k]) > COST_(s))) s = srcs[k];
        if (s < 0 || L[s] <= IN_(s)) break; /* its receives make it the costliest: no move of a send helps */
        size_t bm = COST_(s), bi = SIZE_MAX, bp = SIZE_MAX;
        int by = -1;
        for (size_t i = (size_t)head[s], p = SIZE_MAX; i != SIZE_MAX; p = i, i = next[i]) {
            const TxRef *x = &ts->ref[i];
            int h = ts->blk[x->block].hs, ncand = cand_off[h + 1] - cand_off[h];
            int y = least_loaded(set_cands(cand, cand_off, h) + rr[h], ncand < TX_SRC_WINDOW ? ncand : TX_SRC_WINDOW,
                                 L, rsh, NULL);
            size_t lb = ts->blk[x->block].bytes * lscale;
            if (y < 0 || y == s || y == x->dst) continue;
            size_t m = NR_MAX(NR_MAX(L[s] - lb, IN_(s)), NR_MAX(L[y] + lb, IN_(y)));
            if (m < bm) bm = m, bi = i, bp = p, by = y;
        }
        if (by < 0) break;
        size_t b = ts->blk[ts->ref[bi].block].bytes;
        L[s] -= b * lscale, L[by] += b * lscale;
        if (L != ts->rank_out) ts->rank_out[s] -= b, ts->rank_out[by] += b;
        ts->ref[bi].src = by;
        if (bp == SIZE_MAX) head[s] = next[bi] == SIZE_MAX ? -1 : (int)next[bi]; /* out of s's list, into by's */
        else next[bp] = next[bi];
        if (head[by] < 0) srcs[ns++] = by;
        next[bi] = head[by] < 0 ? SIZE_MAX : (size_t)head[by];
        head[by] = (int)bi;
        int lo = 0, hi = nn; /* its destination: ref_off[lo] <= bi < ref_off[lo + 1] */
        while (hi - lo > 1) {
            int mid = (lo + hi) / 2;
            if (ts->ref_off[mid] <= bi) lo = mid;
            else hi = mid;
        }
        int seen = 0;
        for (int q = 0; q < nt && !seen; q++) seen = touched[q] == lo;
        if (!seen) touched[nt++] = lo; /* each destination regrouped once */
    }
#undef COST_
#undef IN_
    free(head), free(srcs), free(next);
    for (int q = 0; q < nt; q++) regroup_by_source(ts, touched[q]);
    return 0;
}

/* 1 when old cell oc (−1: none) is one of holder set h's cells; mask: each set's cells as bits, when there
 * are at most 64 old cells (else NULL: the set's list is searched) */
static int set_holds(const unsigned long long *mask, const int *hs_off, const int *hs_cells, int h, int oc) {
    if (oc < 0) return 0;
    if (mask) return (int)(mask[h] >> oc & 1);
    for (int q = hs_off[h]; q < hs_off[h + 1]; q++)
        if (hs_cells[q] == oc) return 1;
    return 0;
}

/* t + tp·p of old grid position op (−1: none) in a layout of tp otp, dp odp */
static int old_cell(int op, int otp, int odp) { return op < 0 ? -1 : op % otp + otp * (op / (otp * odp)); }

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

/* What the planner needs of every (t, p) shard's tensor table: per tensor its box, held, owner, ndim. */
typedef struct CellT {
    Box b;
    char held, owner, ndim;
} CellT;

/* every (t, p) cell of a stage: cl[(t + tp·p)·GPT_NUM_TENSORS + i] */
static CellT *stage_cells(const GPTConfig *cfg, const PlanStage *s, int *ntensors) {
    CellT *cl = malloc((size_t)s->tp * (size_t)s->pp * GPT_NUM_TENSORS * sizeof *cl);
    if (!cl) return NULL;
    TensorInfo tab[GPT_NUM_TENSORS];
    for (int p = 0; p < s->pp; p++)
        for (int t = 0; t < s->tp; t++) {
            gpt_tensor_table_pp(cfg, s->tp, t, s->pp, p, tab, ntensors);
            CellT *c = cl + (size_t)(t + s->tp * p) * GPT_NUM_TENSORS;
            for (int i = 0; i < *ntensors; i++) {
                c[i].held = (char)slab_tensor_box(&tab[i], c[i].b.s, c[i].b.c);
                c[i].owner = (char)tab[i].owner;
                c[i].ndim = (char)tab[i].ndim;
            }
        }
    return cl;
}

void slab_plan_free(SlabPlan *sp) {
    if (!sp) return;
    free(sp->slabs);
    free(sp->rank_in);
    free(sp->rank_out);
    memset(sp, 0, sizeof *sp);
}

void tx_slabs_free(TxSlabs *ts) {
    if (!ts) return;
    free(ts->geo);
    free(ts->blk);
    free(ts->ref);
    free(ts->ref_off);
    free(ts->rank_in);
    free(ts->rank_out);
    memset(ts, 0, sizeof *ts);
}

size_t tx_slabs_count(const TxSlabs *ts, size_t r0, size_t r1) {
    size_t n = 0;
    for (size_t k = r0; k < r1; k++) {
        const TxBlock *b = &ts->blk[ts->ref[k].block];
        n += (size_t)(b->g1 - b->g0);
    }
    return n;
}

size_t tx_slabs_expand(const TxSlabs *ts, size_t r0, size_t r1, Slab *out) {
    size_t n = 0;
    for (size_t k = r0; k < r1; k++) {
        const TxRef *f = &ts->ref[k];
        const TxBlock *b = &ts->blk[f->block];
        for (int g = b->g0; g < b->g1; g++) {
            Slab *s = &out[n++];
            *s = ts->geo[g];
            s->src_rank = f->src;
            s->dst_rank = f->dst;
            s->local = f->src == f->dst;
        }
    }
    return n;
}

/* One slab shape of a new cell before it is put in its block. */
typedef struct GeoTmp {
    int i, hs;
    Box P;
} GeoTmp;

/* ---- tx_slabs_build_seeded: the planner's state and its phases ------------------------------------------ */

/* What the phases of one tx_slabs_build_seeded share: the arguments, both layouts' cells, the holder sets
 * with their source candidates, each new cell's geometry, and the per-destination scratch of the source
 * choice and of forwarding. */
typedef struct SlabBuild {
    TxSlabs *ts;
    const GPTConfig *cfg;
    const PlanStage *os, *ns;
    int nranks;
    size_t *load;              /* send loads of the transition so far (may be NULL) */
    const size_t *in_load;     /* receive loads of the transition so far (may be NULL) */
    size_t scale, relay_chunk;
    char *why;
    size_t len;
    /* the layouts */
    int nt;                    /* tensors */
    int otp, odp, ocells;      /* old tp, dp, cells (tp · pp) */
    int on, nn;                /* old, new ranks */
    int ntp, ncell_new;        /* new tp, cells */
    size_t npair;              /* (tensor, old cell) pairs */
    CellT *ocl, *ncl;          /* every cell's tensor table (stage_cells) */
    int *opos;                 /* (nranks) job rank → old grid position, -1 */
    int *cells, *ncells;       /* owner cells per tensor: cells[i · ocells + k], k < ncells[i] */
    /* holder sets */
    int *hs_of;                /* (npair) holder set of (tensor i, owner k) */
    int *hs_cells, *hs_off;    /* each set's holder cells, ascending: hs_cells[hs_off[h] .. hs_off[h + 1]) */
    size_t hs_cap;             /* hs_cells' capacity (grows) */
    unsigned long long *hs_key;
    int *htab;                 /* open addressing over the keys: set + 1 */
    size_t hmask;
    int nhs;
    unsigned long long *hs_mask; /* with at most 64 old cells: each set's cells as bits, else NULL */
    int *cand_off, *cand, *rr; /* each set's candidates (set_cands) and its round-robin place */
    int *tmp_h;                /* (ocells) one set's cells while it is looked up */
    /* geometry */
    GeoTmp *gt;                /* one new cell's slab shapes before they go into blocks */
    int *cell_blk_off;         /* (ncell_new + 1) each new cell's blocks */
    int *cell_geo_n;           /* (ncell_new) each new cell's slab shapes */
    size_t geo_cap, blk_cap;
    size_t nmemo, *lb_memo;    /* the lower bound per (new cell, old cell + 1), when that table is small */
    /* per destination: its blocks (at most maxb) */
    int maxb;
    TxRef *mv;                 /* its moved refs, before they are grouped by source */
    int *grp, *gsrc, *gcnt;    /* per moved ref its group; per group its source; counting sort */
    char *bstate;              /* per block: 0 moved, 1 local, 2 forwarded */
    int *fsrc, *ffeed, *fhop;  /* per forwarded block: the forward taken (TxRef src, feed, hop) */
    int *used;                 /* its forwarders, marked in isfwd */
    int *hbest, *hstamp, stamp; /* per block its least-loaded holder (not a forwarder), valid while hstamp = stamp */
    char *isfwd;               /* (nranks) with forwarding */
    /* forwarding: per new cell its queue of streams (capacity, offset, length) */
    int *fqcap, *fqn;
    size_t *fqoff;
    Fwd *fq;
    int *ce;                   /* a destination's candidate streams, by margin cm */
    size_t *cm;
    size_t *cellb;             /* (ncell_new) each new cell's bytes */
    char *bfan;                /* (nblk) the blocks that make their cell one that can gain from forwarding */
    /* balance */
    size_t *L;                 /* what the sources are balanced on: load, else ts->rank_out */
    int rsh;                   /* bits of a rank (loads: bytes, < 2^52) */
    size_t *pos_lb;            /* (nn) per destination the bytes it needs and does not hold */
    size_t in_target;          /* the largest receive of the transition with this change's, in load's units */
    size_t maxL;               /* the largest send load */
} SlabBuild;

/* One destination while its blocks are given sources. */
typedef struct Dest {
    int pos, r, nc, ocell;     /* new grid position, job rank, new cell, old cell (-1: none) */
    int b0, nb;                /* its blocks: blk[b0 .. b0 + nb) */
    TxRef *out;                /* its refs */
    int nl, nm, ng, nused;     /* local refs, moved refs, source groups, forwarders */
    Fwd *qf;                   /* its cell's forwarding queue, or NULL */
} Dest;

static void sb_free(SlabBuild *b) {
    free(b->ocl); free(b->ncl); free(b->opos); free(b->cells); free(b->ncells); free(b->hs_of); free(b->hs_cells);
    free(b->hs_off); free(b->hs_key); free(b->htab); free(b->cand_off); free(b->cand); free(b->rr); free(b->tmp_h);
    free(b->gt); free(b->cell_blk_off); free(b->cell_geo_n); free(b->lb_memo);
    free(b->mv); free(b->grp); free(b->gsrc); free(b->gcnt); free(b->bstate); free(b->fsrc); free(b->ffeed);
    free(b->fhop); free(b->used); free(b->hbest); free(b->hstamp); free(b->isfwd); free(b->fqcap); free(b->fqoff);
    free(b->fqn); free(b->ce); free(b->cm); free(b->fq); free(b->cellb); free(b->bfan); free(b->hs_mask);
    free(b->pos_lb);
}

/* Both stages valid for cfg over nranks job ranks. */
static int sb_check_stages(SlabBuild *b) {
    if (b->nranks < 1) return nr_fail(b->why, b->len, "slab plan: %d job ranks", b->nranks);
    char *seen = malloc((size_t)b->nranks);
    if (!seen) return nr_fail(b->why, b->len, "slab plan: out of memory");
    int rc = check_stage("old", b->os, b->cfg, b->nranks, seen, b->why, b->len) ||
             check_stage("new", b->ns, b->cfg, b->nranks, seen, b->why, b->len);
    free(seen);
    return rc ? -1 : 0;
}

/* The layouts' sizes and cells, and the tables of the holder sets and the geometry. */
static int sb_alloc_layouts(SlabBuild *b) {
    const PlanStage *os = b->os, *ns = b->ns;
    TxSlabs *ts = b->ts;
    b->otp = os->tp, b->odp = os->dp, b->ocells = os->tp * os->pp;
    b->on = os->tp * os->pp * os->dp, b->nn = ns->tp * ns->pp * ns->dp;
    b->ntp = ns->tp, b->ncell_new = ns->tp * ns->pp;
    b->npair = (size_t)GPT_NUM_TENSORS * (size_t)b->ocells;
    size_t npair = b->npair, ocells = (size_t)b->ocells, ncell_new = (size_t)b->ncell_new;
    b->ocl = stage_cells(b->cfg, os, &b->nt), b->ncl = stage_cells(b->cfg, ns, &b->nt);
    b->opos = malloc((size_t)b->nranks * sizeof *b->opos);
    b->cells = malloc(npair * sizeof *b->cells);
    b->ncells = calloc((size_t)GPT_NUM_TENSORS, sizeof *b->ncells);
    b->hs_of = malloc(npair * sizeof *b->hs_of);
    b->hs_cap = npair + ocells;
    b->hs_cells = malloc(b->hs_cap * sizeof *b->hs_cells);
    b->hs_off = malloc((npair + 1) * sizeof *b->hs_off);
    b->hs_key = malloc(npair * sizeof *b->hs_key);
    b->hmask = 1;
    while (b->hmask < 2 * npair) b->hmask <<= 1;
    b->htab = calloc(b->hmask, sizeof *b->htab);
    b->hmask--;
    b->cand_off = malloc((npair + 1) * sizeof *b->cand_off);
    b->tmp_h = malloc((ocells + 1) * sizeof *b->tmp_h);
    b->gt = malloc(((size_t)GPT_NUM_TENSORS * ocells + 1) * sizeof *b->gt);
    b->cell_blk_off = malloc((ncell_new + 1) * sizeof *b->cell_blk_off);
    b->cell_geo_n = malloc((ncell_new + 1) * sizeof *b->cell_geo_n);
    b->nmemo = ncell_new * (ocells + 1);
    if (b->nmemo > 65536) b->nmemo = 0;
    b->lb_memo = malloc((b->nmemo + 1) * sizeof *b->lb_memo);
    ts->rank_in = calloc((size_t)b->nranks, sizeof *ts->rank_in);
    ts->rank_out = calloc((size_t)b->nranks, sizeof *ts->rank_out);
    ts->ref_off = malloc(((size_t)b->nn + 1) * sizeof *ts->ref_off);
    ts->nranks = b->nranks;
    ts->nnew = b->nn;
    if (!b->ocl || !b->ncl || !b->opos || !b->cells || !b->ncells || !b->hs_of || !b->hs_cells || !b->hs_off ||
        !b->hs_key || !b->htab || !b->cand_off || !b->tmp_h || !b->gt || !b->cell_blk_off || !b->cell_geo_n ||
        !b->lb_memo || !ts->rank_in || !ts->rank_out || !ts->ref_off)
        return -1;
    for (int r = 0; r < b->nranks; r++) b->opos[r] = -1;
    for (int pos = 0; pos < b->on; pos++) b->opos[plan_stage_rank(os, pos)] = pos;
    for (int c = 0; c < b->ocells; c++)
        for (int i = 0; i < b->nt; i++)
            if (b->ocl[(size_t)c * GPT_NUM_TENSORS + i].owner) b->cells[i * b->ocells + b->ncells[i]++] = c;
    return 0;
}

/* The holder set with cells tmp_h[0 .. nh) and key: found in the hash table, else added. Returns it, or -1
 * out of memory. */
static int sb_holder_set(SlabBuild *b, unsigned long long key, int nh) {
    size_t slot = (size_t)(key ^ (key >> 29)) & b->hmask;
    for (; b->htab[slot]; slot = (slot + 1) & b->hmask) {
        int x = b->htab[slot] - 1;
        if (b->hs_key[x] == key && b->hs_off[x + 1] - b->hs_off[x] == nh &&
            memcmp(b->hs_cells + b->hs_off[x], b->tmp_h, (size_t)nh * sizeof *b->tmp_h) == 0)
            return x;
    }
    int h = b->nhs++;
    if ((size_t)(b->hs_off[h] + nh) > b->hs_cap) {
        b->hs_cap = 2 * b->hs_cap + (size_t)nh;
        int *nhc = realloc(b->hs_cells, b->hs_cap * sizeof *nhc);
        if (!nhc) return -1;
        b->hs_cells = nhc;
    }
    memcpy(b->hs_cells + b->hs_off[h], b->tmp_h, (size_t)nh * sizeof *b->tmp_h);
    b->hs_off[h + 1] = b->hs_off[h] + nh;
    b->hs_key[h] = key;
    b->htab[slot] = h + 1;
    return h;
}

/* Holder sets: per (tensor, owner cell) the old cells whose box contains the owner cell's box,
 * deduplicated (FNV-1a over the cells). */
static int sb_holder_sets(SlabBuild *b) {
    const int NT = GPT_NUM_TENSORS;
    const CellT *ocl = b->ocl;
    b->hs_off[0] = 0;
    for (int i = 0; i < b->nt; i++)
        for (int k = 0; k < b->ncells[i]; k++) {
            const Box *cb = &ocl[(size_t)b->cells[i * b->ocells + k] * NT + i].b;
            int nh = 0;
            unsigned long long key = 1469598103934665603ull;
            for (int c = 0; c < b->ocells; c++)
                if (ocl[(size_t)c * NT + i].held && box_contains(&ocl[(size_t)c * NT + i].b, cb)) {
                    b->tmp_h[nh++] = c;
                    key = (key ^ (unsigned long long)(c + 1)) * 1099511628211ull;
                }
            key = (key ^ (unsigned long long)nh) * 1099511628211ull;
            int h = sb_holder_set(b, key, nh);
            if (h < 0) return -1;
            b->hs_of[i * b->ocells + k] = h;
        }
    return 0;
}

/* Candidates of each set: holder cell × old replica (cell fastest), as job ranks, stored with the first
 * TX_SRC_WINDOW of each set repeated after it so that a window never wraps; each set's round-robin place
 * starts spread out. */
static int sb_candidates(SlabBuild *b) {
    int nhs = b->nhs, otp = b->otp, odp = b->odp;
    b->cand_off[0] = 0;
    for (int h = 0; h < nhs; h++) b->cand_off[h + 1] = b->cand_off[h] + (b->hs_off[h + 1] - b->hs_off[h]) * odp;
    b->cand = malloc(((size_t)b->cand_off[nhs] + (size_t)nhs * TX_SRC_WINDOW + 1) * sizeof *b->cand);
    b->rr = malloc(((size_t)nhs + 1) * sizeof *b->rr);
    if (!b->cand || !b->rr) return -1;
    for (int h = 0; h < nhs; h++) {
        int nh = b->hs_off[h + 1] - b->hs_off[h], ncand = nh * odp;
        int *cd = b->cand + b->cand_off[h] + (size_t)h * TX_SRC_WINDOW; /* set_cands(h) */
        for (int x = 0; x < ncand; x++) {
            int c = b->hs_cells[b->hs_off[h] + x % nh], d = x / nh;
            cd[x] = plan_stage_rank(b->os, c % otp + otp * (d + odp * (c / otp)));
        }
        for (int x = 0; x < TX_SRC_WINDOW; x++) cd[ncand + x] = cd[x % ncand];
        b->rr[h] = (int)((size_t)h * 7 % (size_t)ncand);
    }
    return 0;
}

/* The block of new cell nc (blocks from b0) for holder set h: found, else added. -1: out of memory. */
static int sb_cell_block(SlabBuild *b, int b0, int h) {
    TxSlabs *ts = b->ts;
    int k = b0;
    while (k < ts->nblk && ts->blk[k].hs != h) k++;
    if (k < ts->nblk) return k;
    if ((size_t)ts->nblk == b->blk_cap) {
        b->blk_cap = b->blk_cap ? 2 * b->blk_cap : 64;
        TxBlock *nb = realloc(ts->blk, b->blk_cap * sizeof *nb);
        if (!nb) return -1;
        ts->blk = nb;
    }
    ts->blk[ts->nblk++] = (TxBlock){0, 0, h, 0};
    return k;
}

/* New cell nc's geometry, the same for every replica: the owner cells each tensor's box meets, the
 * intersections, put into blocks by holder set (in order of first appearance), then into geo by block
 * (a counting sort, stable: tensor order inside a block). */
static int sb_cell_geometry(SlabBuild *b, int nc) {
    const int NT = GPT_NUM_TENSORS;
    TxSlabs *ts = b->ts;
    const CellT *tt = &b->ncl[(size_t)nc * NT];
    int n = 0, b0 = ts->nblk;
    b->cell_blk_off[nc] = b0;
    for (int i = 0; i < b->nt; i++) {
        if (!tt[i].held) continue;
        const Box B = tt[i].b;
        for (int k = 0; k < b->ncells[i]; k++) {
            Box P;
            if (!box_intersect(&B, &b->ocl[(size_t)b->cells[i * b->ocells + k] * NT + i].b, &P)) continue;
            int blk = sb_cell_block(b, b0, b->hs_of[i * b->ocells + k]);
            if (blk < 0) return -1;
            b->gt[n++] = (GeoTmp){i, blk, P};
        }
    }
    if ((size_t)(ts->ngeo + n) > b->geo_cap) {
        b->geo_cap = 2 * (size_t)(ts->ngeo + n) + 64;
        Slab *ng = realloc(ts->geo, b->geo_cap * sizeof *ng);
        if (!ng) return -1;
        ts->geo = ng;
    }
    int g = ts->ngeo;
    for (int k = b0; k < ts->nblk; k++) {
        ts->blk[k].g0 = g;
        for (int q = 0; q < n; q++) {
            if (b->gt[q].hs != k) continue;
            Slab *s = &ts->geo[g++];
            memset(s, 0, sizeof *s);
            s->tensor = b->gt[q].i;
            s->ndim = tt[b->gt[q].i].ndim;
            memcpy(s->start, b->gt[q].P.s, sizeof s->start);
            memcpy(s->count, b->gt[q].P.c, sizeof s->count);
            s->bytes = box_numel(&b->gt[q].P) * sizeof(float);
            ts->blk[k].bytes += s->bytes;
        }
        ts->blk[k].g1 = g;
    }
    b->cell_geo_n[nc] = n;
    ts->ngeo = g;
    return 0;
}

/* new cell of new grid position pos */
static int sb_new_cell(const SlabBuild *b, int pos) { return pos % b->ntp + b->ntp * (pos / (b->ntp * b->ns->dp)); }

/* Every new cell's geometry, then each destination's place in ref (its cell's blocks) and the refs. */
static int sb_geometry_and_refs(SlabBuild *b) {
    TxSlabs *ts = b->ts;
    for (int nc = 0; nc < b->ncell_new; nc++)
        if (sb_cell_geometry(b, nc)) return -1;
    b->cell_blk_off[b->ncell_new] = ts->nblk;
    for (size_t q = 0; q < b->nmemo; q++) b->lb_memo[q] = (size_t)-1;
    ts->ref_off[0] = 0;
    for (int pos = 0; pos < b->nn; pos++) {
        int nc = sb_new_cell(b, pos);
        ts->ref_off[pos + 1] = ts->ref_off[pos] + (size_t)(b->cell_blk_off[nc + 1] - b->cell_blk_off[nc]);
        ts->nslabs += (size_t)b->cell_geo_n[nc];
    }
    ts->nref = ts->ref_off[b->nn];
    ts->ref = malloc((ts->nref + 1) * sizeof *ts->ref);
    return ts->ref ? 0 : -1;
}

/* Per new cell whether forwarding can pay, and so its queue's capacity (fqcap: two replicas' worth of
 * streams plus 8, at most TX_RELAY_QUEUE_MAX; 0: none). It can pay only where a holder of one of its
 * blocks would send more than a replica of the cell receives: where the block's destinations (every
 * replica of every new cell that needs it) over its holder candidates, times its bytes, exceed the cell's
 * bytes; or where an old rank holding the block sends, from holders alone, more than the largest new cell
 * (an old rank that holds a block with too few holders and others besides sends them all, so the others'
 * streams are worth forwarding too). bfan marks those blocks. */
static void sb_relay_capacities(SlabBuild *b) {
    TxSlabs *ts = b->ts;
    const int *hs_off = b->hs_off;
    int odp = b->odp;
    size_t *hs_dests = b->fqcap ? calloc((size_t)b->nhs + 1, sizeof *hs_dests) : NULL;
    double *osend = b->fqcap ? calloc((size_t)b->ocells + 1, sizeof *osend) : NULL, maxcell = 0;
    for (int k = 0; hs_dests && k < ts->nblk; k++) hs_dests[ts->blk[k].hs] += (size_t)b->ns->dp;
    for (int k = 0; osend && k < ts->nblk; k++) {
        int h = ts->blk[k].hs;
        double per = (double)b->ns->dp * (double)ts->blk[k].bytes / (double)((hs_off[h + 1] - hs_off[h]) * odp);
        for (int q = hs_off[h]; q < hs_off[h + 1]; q++) osend[b->hs_cells[q]] += per;
    }
    for (int nc = 0; hs_dests && b->cellb && nc < b->ncell_new; nc++) {
        for (int k = b->cell_blk_off[nc]; k < b->cell_blk_off[nc + 1]; k++) b->cellb[nc] += ts->blk[k].bytes;
        if ((double)b->cellb[nc] > maxcell) maxcell = (double)b->cellb[nc];
    }
    for (int nc = 0; hs_dests && b->cellb && nc < b->ncell_new; nc++) {
        int nb = b->cell_blk_off[nc + 1] - b->cell_blk_off[nc], fan = 0;
        for (int k = b->cell_blk_off[nc]; k < b->cell_blk_off[nc + 1]; k++) {
            int h = ts->blk[k].hs;
            b->bfan[k] = (double)hs_dests[h] * (double)ts->blk[k].bytes >
                         (double)((hs_off[h + 1] - hs_off[h]) * odp) * (double)b->cellb[nc];
            for (int q = hs_off[h]; osend && q < hs_off[h + 1] && !b->bfan[k]; q++)
                b->bfan[k] = osend[b->hs_cells[q]] > maxcell;
            fan |= b->bfan[k];
        }
        b->fqcap[nc] = !fan ? 0 : 2 * nb + 8 < TX_RELAY_QUEUE_MAX ? 2 * nb + 8 : TX_RELAY_QUEUE_MAX;
        b->fqoff[nc + 1] = b->fqoff[nc] + (size_t)b->fqcap[nc];
    }
    free(hs_dests);
    free(osend);
}

/* The per-destination scratch (sized by the largest cell's blocks), the forwarding queues, the holder
 * sets' bit masks and the load the sources are balanced on. */
static int sb_alloc_choice(SlabBuild *b) {
    size_t ncell_new = (size_t)b->ncell_new, relay = b->relay_chunk;
    b->maxb = 0;
    for (int nc = 0; nc < b->ncell_new; nc++) {
        int nb = b->cell_blk_off[nc + 1] - b->cell_blk_off[nc];
        if (nb > b->maxb) b->maxb = nb;
    }
    size_t m = (size_t)b->maxb + 1;
    b->mv = malloc(m * sizeof *b->mv);
    b->grp = malloc(m * sizeof *b->grp), b->gsrc = malloc(m * sizeof *b->gsrc);
    b->gcnt = malloc((m + 1) * sizeof *b->gcnt);
    b->bstate = malloc(m);
    b->fsrc = malloc(m * sizeof *b->fsrc), b->ffeed = malloc(m * sizeof *b->ffeed);
    b->fhop = malloc(m * sizeof *b->fhop);
    b->used = malloc(m * sizeof *b->used);
    b->hbest = malloc(m * sizeof *b->hbest), b->hstamp = calloc(m, sizeof *b->hstamp);
    b->isfwd = relay ? calloc((size_t)b->nranks, 1) : NULL;
    b->fqcap = relay ? calloc(ncell_new + 1, sizeof *b->fqcap) : NULL;
    b->fqoff = relay ? calloc(ncell_new + 1, sizeof *b->fqoff) : NULL;
    b->fqn = relay ? calloc(ncell_new + 1, sizeof *b->fqn) : NULL;
    b->ce = malloc((TX_RELAY_QUEUE_MAX + 1) * sizeof *b->ce);
    b->cm = malloc((TX_RELAY_QUEUE_MAX + 1) * sizeof *b->cm);
    b->cellb = b->fqcap ? calloc(ncell_new + 1, sizeof *b->cellb) : NULL;
    b->bfan = b->fqcap ? calloc((size_t)b->ts->nblk + 1, 1) : NULL;
    sb_relay_capacities(b);
    if (b->fqcap) b->fq = malloc((b->fqoff[ncell_new] + 1) * sizeof *b->fq);
    if (!b->mv || !b->grp || !b->gsrc || !b->gcnt || !b->bstate || !b->fsrc || !b->ffeed || !b->fhop || !b->used ||
        !b->hbest || !b->hstamp || !b->ce || !b->cm ||
        (relay && (!b->isfwd || !b->fqcap || !b->fqoff || !b->fqn || !b->fq || !b->cellb || !b->bfan)))
        return -1;
    b->hs_mask = b->ocells <= 64 ? calloc((size_t)b->nhs + 1, sizeof *b->hs_mask) : NULL;
    for (int h = 0; b->hs_mask && h < b->nhs; h++)
        for (int q = b->hs_off[h]; q < b->hs_off[h + 1]; q++) b->hs_mask[h] |= 1ull << b->hs_cells[q];
    b->L = b->load ? b->load : b->ts->rank_out;
    b->rsh = 1;
    while ((1 << b->rsh) < b->nranks) b->rsh++;
    return 0;
}

/* The lower bound per destination, independently of the blocks: what its new cell needs minus what its
 * old cell holds (memoized per (new cell, old cell)); and the largest receive of the transition so far
 * with this change's added, in load's units (forwarding pays only where a holder would send more), and
 * the largest send load. */
static int sb_lower_bounds(SlabBuild *b) {
    const int NT = GPT_NUM_TENSORS;
    b->pos_lb = malloc(((size_t)b->nn + 1) * sizeof *b->pos_lb);
    if (!b->pos_lb) return -1;
    for (int pos = 0; pos < b->nn; pos++) {
        int r = plan_stage_rank(b->ns, pos), nc = sb_new_cell(b, pos);
        int ocell = old_cell(b->opos[r], b->otp, b->odp);
        size_t lb_here = (size_t)-1;
        size_t *lb = b->nmemo ? &b->lb_memo[(size_t)nc * ((size_t)b->ocells + 1) + (size_t)(ocell + 1)] : &lb_here;
        if (*lb == (size_t)-1) {
            const CellT *tt = &b->ncl[(size_t)nc * NT];
            size_t sum = 0;
            for (int i = 0; i < b->nt; i++) {
                Box X;
                if (!tt[i].held) continue;
                const Box B = tt[i].b;
                size_t need = box_numel(&B);
                if (ocell >= 0 && b->ocl[(size_t)ocell * NT + i].held &&
                    box_intersect(&B, &b->ocl[(size_t)ocell * NT + i].b, &X))
                    need -= box_numel(&X);
                sum += need * sizeof(float);
            }
            *lb = sum;
        }
        b->pos_lb[pos] = *lb;
        size_t in = (b->in_load ? b->in_load[r] : 0) + *lb * b->scale;
        if (in > b->in_target) b->in_target = in;
    }
    for (int r = 0; r < b->nranks; r++) b->maxL = b->L[r] > b->maxL ? b->L[r] : b->maxL;
    return 0;
}

/* The least-loaded holder (not one of d's forwarders) of block blk, memoized for d while its stamp holds. */
static int sb_holder(SlabBuild *b, const Dest *d, int blk) {
    int k = blk - d->b0;
    if (b->hstamp[k] == b->stamp) return b->hbest[k];
    b->hstamp[k] = b->stamp;
    return b->hbest[k] = pick_holder(b->cand, b->cand_off, b->rr, b->ts->blk[blk].hs, b->L, b->rsh,
                                     d->nused ? b->isfwd : NULL);
}

/* Whether d taking queued stream f from its receiver ends sooner than taking its blocks from their
 * least-loaded holder: each would be done at the earliest at the largest receive, the holder after sending
 * it, the forwarder one chunk a hop behind (no holder left but forwarders: the holder never ends). Only a
 * stream whose every block is still to be moved here qualifies. */
static int sb_forward_gains(SlabBuild *b, const Dest *d, const Fwd *f, size_t *hold_end, size_t *fwd_end) {
    if (b->isfwd[f->rank]) return 0;
    size_t lh = ~(size_t)0, sb = f->bytes * b->scale;
    for (int k = 0; k < f->nref; k++) {
        int blk = b->ts->ref[f->ref0 + (size_t)k].block;
        if (b->bstate[blk - d->b0] != 0) return 0; /* local here, or forwarded already */
        int y = sb_holder(b, d, blk);
        if (y >= 0 && b->L[y] < lh) lh = b->L[y];
    }
    *hold_end = lh == ~(size_t)0 ? lh : NR_MAX(b->in_target, lh + sb);
    *fwd_end = NR_MAX(b->in_target, b->L[f->rank] + sb) + (size_t)(f->hop + 1) * b->relay_chunk;
    return *fwd_end < *hold_end;
}

/* Queue entry e into d's candidates, by margin, the largest first (insertion: at most the queue). */
static void sb_rank_candidate(SlabBuild *b, int *nce, int e, size_t margin) {
    int y = (*nce)++;
    for (; y > 0 && b->cm[y - 1] < margin; y--) {
        b->ce[y] = b->ce[y - 1];
        b->cm[y] = b->cm[y - 1];
    }
    b->ce[y] = e;
    b->cm[y] = margin;
}

/* d takes queued stream e from its receiver, if every block it still takes from a holder keeps a candidate
 * that is not one of its forwarders (one stream per pair), the forwarder among them. */
static void sb_take_forward(SlabBuild *b, Dest *d, int e) {
    TxSlabs *ts = b->ts;
    Fwd *f = &d->qf[e];
    int foc = old_cell(b->opos[f->rank], b->otp, b->odp), ok = 1;
    b->isfwd[f->rank] = 1;
    for (int k = d->b0; k < d->b0 + d->nb && ok && foc >= 0; k++) {
        int h = ts->blk[k].hs, ins = 0;
        if (b->bstate[k - d->b0] != 0) continue;
        for (int q = 0; q < f->nref && !ins; q++) ins = ts->ref[f->ref0 + (size_t)q].block == k;
        if (ins) continue;
        ok = !set_holds(b->hs_mask, b->hs_off, b->hs_cells, h, foc) ||
             pick_holder(b->cand, b->cand_off, b->rr, h, b->L, b->rsh, b->isfwd) >= 0;
    }
    if (!ok) {
        b->isfwd[f->rank] = 0;
        return;
    }
    b->used[d->nused++] = f->rank;
    /* a forwarder more (and its load up): only a block whose least-loaded holder it was changes */
    for (int k = 0; k < d->nb; k++)
        if (b->hstamp[k] == b->stamp && b->hbest[k] == f->rank) b->hstamp[k] = 0;
    for (int q = 0; q < f->nref; q++) {
        const TxRef *x = &ts->ref[f->ref0 + (size_t)q];
        int k = x->block - d->b0;
        b->bstate[k] = 2;
        b->fsrc[k] = f->rank;
        b->ffeed[k] = x->src;
        b->fhop[k] = f->hop + 1;
    }
    ts->rank_out[f->rank] += f->bytes;
    if (b->load) b->load[f->rank] += f->bytes * b->scale;
    b->maxL = b->L[f->rank] > b->maxL ? b->L[f->rank] : b->maxL;
    ts->rank_in[d->r] += f->bytes;
    ts->bytes_moved += f->bytes;
    ts->bytes_relayed += f->bytes;
    f->nref = 0; /* forwarded once: out of the queue (sb_take_forwards) */
}

/* d's forwards: whole streams of earlier replicas of its cell whose forwarder, one chunk a hop behind,
 * would end sooner than any holder of their blocks; the largest margin first. Looked at only where a
 * holder sending the whole cell could end after the largest receive. */
static void sb_take_forwards(SlabBuild *b, Dest *d) {
    int look = d->qf && b->maxL + b->cellb[d->nc] * b->scale > b->in_target;
    int nce = 0;
    b->stamp++; /* a new destination: its holders again */
    for (int pass = 0; look && pass < 2; pass++)
        for (int x = 0; x < (pass ? nce : b->fqn[d->nc]); x++) {
            int e = pass ? b->ce[x] : x;
            size_t hold_end, fwd_end;
            if (!sb_forward_gains(b, d, &d->qf[e], &hold_end, &fwd_end)) continue;
            if (pass == 0) sb_rank_candidate(b, &nce, e, hold_end - fwd_end);
            else sb_take_forward(b, d, e);
        }
    if (d->qf && d->nused) {
        int w = 0;
        for (int e = 0; e < b->fqn[d->nc]; e++)
            if (d->qf[e].nref) d->qf[w++] = d->qf[e];
        b->fqn[d->nc] = w;
    }
}

/* The source of a block d moves from a holder: the least loaded of up to TX_SRC_WINDOW candidates,
 * round-robin from just after the set's last pick, never one of d's forwarders; the set's round-robin
 * place moves past it, and the loads take the block. -1: no source (a bug). */
static int sb_pick_source(SlabBuild *b, const Dest *d, int blk) {
    TxSlabs *ts = b->ts;
    int h = ts->blk[blk].hs, ncand = b->cand_off[h + 1] - b->cand_off[h];
    int nw = ncand < TX_SRC_WINDOW ? ncand : TX_SRC_WINDOW;
    const int *ch = set_cands(b->cand, b->cand_off, h), *cd = ch + b->rr[h];
    int best = pick_holder(b->cand, b->cand_off, b->rr, h, b->L, b->rsh, d->nused ? b->isfwd : NULL);
    if (best < 0) return -1; /* the invariant of sb_take_forward makes this impossible */
    int bx = 0;
    while (bx < nw && cd[bx] != best) bx++;
    if (bx < nw) bx += b->rr[h] + 1;
    else { /* picked outside the window */
        bx = 0;
        while (ch[bx] != best) bx++;
        bx++;
    }
    b->rr[h] = bx >= ncand ? bx - ncand : bx;
    size_t bytes = ts->blk[blk].bytes;
    ts->rank_out[best] += bytes;
    if (b->load) b->load[best] += bytes * b->scale;
    b->maxL = b->L[best] > b->maxL ? b->L[best] : b->maxL;
    ts->rank_in[d->r] += bytes;
    ts->bytes_moved += bytes;
    return best;
}

/* d's blocks given their refs: local ones straight into out, moved ones (forwarded, else from a holder)
 * into mv with their source's group (in order of first appearance). */
static int sb_assign_blocks(SlabBuild *b, Dest *d) {
    TxSlabs *ts = b->ts;
    for (int k = d->b0; k < d->b0 + d->nb; k++) {
        int st = b->bstate[k - d->b0];
        if (st == 1) {
            d->out[d->nl++] = (TxRef){k, d->r, d->r, -1, 0};
            ts->bytes_local += ts->blk[k].bytes;
            continue;
        }
        int best, feed = -1, hop = 0;
        if (st == 2) {
            best = b->fsrc[k - d->b0], feed = b->ffeed[k - d->b0], hop = b->fhop[k - d->b0];
        } else if ((best = sb_pick_source(b, d, k)) < 0) {
            return nr_fail(b->why, b->len, "slab plan: rank %d has no source for a block that is not a forwarder "
                           "(a bug)", d->r);
        }
        int q = 0;
        while (q < d->ng && b->gsrc[q] != best) q++;
        if (q == d->ng) b->gsrc[d->ng++] = best;
        b->grp[d->nm] = q;
        b->mv[d->nm++] = (TxRef){k, best, d->r, feed, hop};
    }
    /* the moved ones after the local ones, grouped by source (first appearance), stable */
    memset(b->gcnt, 0, ((size_t)d->ng + 1) * sizeof *b->gcnt);
    for (int q = 0; q < d->nm; q++) b->gcnt[b->grp[q] + 1]++;
    for (int q = 1; q <= d->ng; q++) b->gcnt[q] += b->gcnt[q - 1];
    for (int q = 0; q < d->nm; q++) d->out[d->nl + b->gcnt[b->grp[q]]++] = b->mv[q];
    for (int u = 0; u < d->nused; u++) b->isfwd[b->used[u]] = 0;
    return 0;
}

/* d's streams (its moved refs of one source) with a block whose holders are too few become candidates for
 * its cell's later replicas; a full queue drops its oldest. */
static void sb_queue_streams(SlabBuild *b, const Dest *d) {
    if (!d->qf) return;
    Fwd *qf = d->qf;
    int nc = d->nc, end = d->nl + d->nm;
    const TxRef *out = d->out;
    for (int k = d->nl; k < end;) {
        Fwd f = {d->r, out[k].hop, 0, (size_t)(out - b->ts->ref) + (size_t)k, 0};
        int worth = 0;
        for (int src = out[k].src; k < end && out[k].src == src; k++) {
            f.nref++;
            f.bytes += b->ts->blk[out[k].block].bytes;
            worth |= b->bfan[out[k].block];
        }
        if (!worth) continue;
        if (b->fqn[nc] == b->fqcap[nc]) {
            memmove(&qf[0], &qf[1], (size_t)(b->fqcap[nc] - 1) * sizeof *qf);
            b->fqn[nc]--;
        }
        qf[b->fqn[nc]++] = f;
    }
}

/* Destination pos's refs: local blocks, forwards taken, then a holder per remaining block. */
static int sb_destination(SlabBuild *b, int pos) {
    TxSlabs *ts = b->ts;
    Dest d = {.pos = pos, .r = plan_stage_rank(b->ns, pos), .nc = sb_new_cell(b, pos)};
    d.ocell = old_cell(b->opos[d.r], b->otp, b->odp);
    d.b0 = b->cell_blk_off[d.nc];
    d.nb = b->cell_blk_off[d.nc + 1] - d.b0;
    d.out = ts->ref + ts->ref_off[pos];
    d.qf = b->fq && b->fqcap[d.nc] ? b->fq + b->fqoff[d.nc] : NULL;
    ts->bytes_lower_bound += b->pos_lb[pos];
    /* local or moved: old boxes are unions of old cells, so r's old cell holds the whole block or none */
    for (int k = d.b0; k < d.b0 + d.nb; k++)
        b->bstate[k - d.b0] = (char)set_holds(b->hs_mask, b->hs_off, b->hs_cells, ts->blk[k].hs, d.ocell);
    sb_take_forwards(b, &d);
    if (sb_assign_blocks(b, &d)) return -1;
    sb_queue_streams(b, &d);
    return 0;
}

int tx_slabs_build(TxSlabs *ts, const GPTConfig *cfg, const PlanStage *os, const PlanStage *ns, int nranks,
                   char *why, size_t len) {
    return tx_slabs_build_seeded(ts, cfg, os, ns, nranks, NULL, NULL, 1, 0, why, len);
}

int tx_slabs_build_seeded(TxSlabs *ts, const GPTConfig *cfg, const PlanStage *os, const PlanStage *ns, int nranks,
                          size_t *load, const size_t *in_load, size_t scale, size_t relay_chunk, char *why,
                          size_t len) {
    memset(ts, 0, sizeof *ts);
    SlabBuild b = {.ts = ts, .cfg = cfg, .os = os, .ns = ns, .nranks = nranks, .load = load, .in_load = in_load,
                   .scale = scale, .relay_chunk = relay_chunk, .why = why, .len = len};
    if (sb_check_stages(&b)) return -1;
    int rc = 0;
    if (sb_alloc_layouts(&b) || sb_holder_sets(&b) || sb_candidates(&b) || sb_geometry_and_refs(&b) ||
        sb_alloc_choice(&b) || sb_lower_bounds(&b))
        rc = nr_fail(why, len, "slab plan: out of memory");
    for (int pos = 0; !rc && pos < b.nn; pos++) rc = sb_destination(&b, pos);
    if (!rc && ts->bytes_relayed == 0 &&
        rebalance_sources(ts, b.nn, nranks, b.cand, b.cand_off, b.rr, b.L, in_load, load ? scale : 1, b.rsh))
        rc = nr_fail(why, len, "slab plan: out of memory");
    sb_free(&b);
    if (rc) tx_slabs_free(ts);
    return rc;
}

int slab_plan_build(SlabPlan *sp, const GPTConfig *cfg, const PlanStage *os, const PlanStage *ns, int nranks,
                    char *why, size_t len) {
    memset(sp, 0, sizeof *sp);
    TxSlabs ts;
    if (tx_slabs_build(&ts, cfg, os, ns, nranks, why, len)) return -1;
    sp->slabs = malloc((ts.nslabs + 1) * sizeof *sp->slabs);
    if (!sp->slabs) {
        tx_slabs_free(&ts);
        return nr_fail(why, len, "slab plan: out of memory");
    }
    sp->n = tx_slabs_expand(&ts, 0, ts.nref, sp->slabs);
    sp->cap = ts.nslabs + 1;
    sp->bytes_moved = ts.bytes_moved;
    sp->bytes_local = ts.bytes_local;
    sp->bytes_lower_bound = ts.bytes_lower_bound;
    sp->rank_in = ts.rank_in;
    sp->rank_out = ts.rank_out;
    sp->nranks = nranks;
    ts.rank_in = ts.rank_out = NULL;
    tx_slabs_free(&ts);
    return 0;
}
