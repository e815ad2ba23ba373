/* slabs.c — the pure slab planner of a transition (transition.h): old shards
 * ∩ new shards as N-d hyperslabs, local where the destination already holds
 * the data, otherwise the least-loaded old holder as the source, or (with
 * forwarding) an earlier replica of the same new cell that receives the
 * whole stream and sends it on. No MPI. */
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

/* After the greedy pass, which takes each destination's blocks in turn: a block given early to the then
 * least-loaded holder can leave that holder the busiest once later destinations are served (tp2dp2 @ 0-3
 * -> tp2dp4 on 8 ranks sent 84.2 MB from ranks 0 and 1 and 50.4 from 2 and 3, where 67.3 each suffices).
 * A rank's cost is max(what it sends, what it receives) in load's units (its link's busier direction).
 * While it helps, at most 64 times: the costliest source of the change, where its sends are what make it
 * so, gives one of its blocks to the holder that stays under that cost after taking it, the move that
 * leaves the larger of the two costs least. No cost rises to the costliest one's. Sources are kept in
 * lists (per rank, the refs it sends), so a move costs a scan of the sources and of the costliest one's
 * refs. Only for a change without forwards (a forward sends on a whole stream as an earlier destination
 * receives it, so its sources must stay). Then each destination whose refs changed source has its moved
 * refs grouped by source again (stable, in order of first appearance). L: the send loads balanced on
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
    for (int q = 0; q < nt; q++) { /* local refs first (untouched), then the moved ones by source */
        TxRef *r = ts->ref + ts->ref_off[touched[q]];
        size_t k = 0, n = ts->ref_off[touched[q] + 1] - ts->ref_off[touched[q]];
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

int tx_slabs_build(TxSlabs *ts, const GPTConfig *cfg, const PlanStage *os, const PlanStage *ns, int nranks,
                   char *why, size_t len) {
    return tx_slabs_build_seeded(ts, cfg, os, ns, nranks, NULL, NULL, 1, 0, why, len);
}

int tx_slabs_build_seeded(TxSlabs *ts, const GPTConfig *cfg, const PlanStage *os, const PlanStage *ns, int nranks,
                          size_t *load, const size_t *in_load, size_t scale, size_t relay_chunk, char *why,
                          size_t len) {
    memset(ts, 0, sizeof *ts);
    if (nranks < 1) return nr_fail(why, len, "slab plan: %d job ranks", nranks);
    char *seen = malloc((size_t)nranks);
    if (!seen) return nr_fail(why, len, "slab plan: out of memory");
    if (check_stage("old", os, cfg, nranks, seen, why, len) || check_stage("new", ns, cfg, nranks, seen, why, len)) {
        free(seen);
        return -1;
    }
    free(seen);

    const size_t F = sizeof(float);
    const int NT = GPT_NUM_TENSORS;
    int nt = 0;
    int otp = os->tp, opp = os->pp, odp = os->dp, ocells = otp * opp;
    int on = otp * opp * odp, nn = ns->tp * ns->pp * ns->dp;
    int ntp = ns->tp, npp = ns->pp, ncell_new = ntp * npp;
    size_t npair = (size_t)NT * (size_t)ocells;
    CellT *ocl = stage_cells(cfg, os, &nt), *ncl = stage_cells(cfg, ns, &nt);
    int *opos = malloc((size_t)nranks * sizeof *opos);          /* job rank → old grid position, -1 */
    int *cells = malloc(npair * sizeof *cells);                  /* owner cells per tensor: [i·ocells + k] */
    int *ncells = calloc((size_t)NT, sizeof *ncells);
    int *hs_of = malloc(npair * sizeof *hs_of);                  /* holder set of (tensor i, owner k) */
    size_t hs_cap = npair + (size_t)ocells;                     /* grows */
    int *hs_cells = malloc(hs_cap * sizeof *hs_cells);           /* each set's holder cells, ascending */
    int *hs_off = malloc((npair + 1) * sizeof *hs_off);
    unsigned long long *hs_key = malloc(npair * sizeof *hs_key);
    size_t hmask = 1;                                            /* open addressing over the keys: set + 1 */
    while (hmask < 2 * npair) hmask <<= 1;
    int *htab = calloc(hmask, sizeof *htab);
    hmask--;
    int *cand_off = malloc((npair + 1) * sizeof *cand_off), *cand = NULL, *rr = NULL;
    int *tmp_h = malloc(((size_t)ocells + 1) * sizeof *tmp_h);
    GeoTmp *gt = malloc(((size_t)NT * (size_t)ocells + 1) * sizeof *gt);
    int *cell_blk_off = malloc(((size_t)ncell_new + 1) * sizeof *cell_blk_off);
    int *cell_geo_n = malloc(((size_t)ncell_new + 1) * sizeof *cell_geo_n);
    /* the lower bound per (new cell, old cell + 1) pair, when that table is small */
    size_t nmemo = (size_t)ncell_new * ((size_t)ocells + 1);
    if (nmemo > 65536) nmemo = 0;
    size_t *lb_memo = malloc((nmemo + 1) * sizeof *lb_memo);
    ts->rank_in = calloc((size_t)nranks, sizeof *ts->rank_in);
    ts->rank_out = calloc((size_t)nranks, sizeof *ts->rank_out);
    ts->ref_off = malloc(((size_t)nn + 1) * sizeof *ts->ref_off);
    ts->nranks = nranks;
    ts->nnew = nn;
    int rc = 0, nhs = 0;
    size_t geo_cap = 0, blk_cap = 0;
    if (!ocl || !ncl || !opos || !cells || !ncells || !hs_of || !hs_cells || !hs_off || !hs_key ||
        !htab || !cand_off || !tmp_h || !gt || !cell_blk_off || !cell_geo_n || !lb_memo || !ts->rank_in ||
        !ts->rank_out || !ts->ref_off)
        goto oom;
    for (int r = 0; r < nranks; r++) opos[r] = -1;
    for (int pos = 0; pos < on; pos++) opos[plan_stage_rank(os, pos)] = pos;
    for (int c = 0; c < ocells; c++)
        for (int i = 0; i < nt; i++) {
            if (ocl[(size_t)c * NT + i].owner) cells[i * ocells + ncells[i]++] = c;
        }
    /* holder sets: the old cells whose box contains an owner cell's box, deduplicated */
    hs_off[0] = 0;
    for (int i = 0; i < nt; i++)
        for (int k = 0; k < ncells[i]; k++) {
            const Box *cb = &ocl[(size_t)cells[i * ocells + k] * NT + i].b;
            int nh = 0;
            unsigned long long key = 1469598103934665603ull;
            for (int c = 0; c < ocells; c++)
                if (ocl[(size_t)c * NT + i].held && box_contains(&ocl[(size_t)c * NT + i].b, cb)) {
                    tmp_h[nh++] = c;
                    key = (key ^ (unsigned long long)(c + 1)) * 1099511628211ull;
                }
            key = (key ^ (unsigned long long)nh) * 1099511628211ull;
            int h = -1;
            size_t slot = (size_t)(key ^ (key >> 29)) & hmask;
            for (; htab[slot]; slot = (slot + 1) & hmask) {
                int x = htab[slot] - 1;
                if (hs_key[x] == key && hs_off[x + 1] - hs_off[x] == nh &&
                    memcmp(hs_cells + hs_off[x], tmp_h, (size_t)nh * sizeof *tmp_h) == 0) {
                    h = x;
                    break;
                }
            }
            if (h < 0) {
                h = nhs++;
                if ((size_t)(hs_off[h] + nh) > hs_cap) {
                    hs_cap = 2 * hs_cap + (size_t)nh;
                    int *nhc = realloc(hs_cells, hs_cap * sizeof *nhc);
                    if (!nhc) goto oom;
                    hs_cells = nhc;
                }
                memcpy(hs_cells + hs_off[h], tmp_h, (size_t)nh * sizeof *tmp_h);
                hs_off[h + 1] = hs_off[h] + nh;
                hs_key[h] = key;
                htab[slot] = h + 1;
            }
            hs_of[i * ocells + k] = h;
        }
    /* candidates of each set: holder cell × old replica (cell fastest), as job ranks */
    cand_off[0] = 0;
    for (int h = 0; h < nhs; h++) cand_off[h + 1] = cand_off[h] + (hs_off[h + 1] - hs_off[h]) * odp;
    /* stored with the first TX_SRC_WINDOW of each set repeated after it, so that a window never wraps */
    cand = malloc(((size_t)cand_off[nhs] + (size_t)nhs * TX_SRC_WINDOW + 1) * sizeof *cand);
    rr = malloc(((size_t)nhs + 1) * sizeof *rr);
    if (!cand || !rr) goto oom;
    for (int h = 0; h < nhs; h++) {
        int nh = hs_off[h + 1] - hs_off[h], ncand = nh * odp;
        int *cd = cand + cand_off[h] + (size_t)h * TX_SRC_WINDOW; /* set_cands(h) */
        for (int x = 0; x < ncand; x++) {
            int c = hs_cells[hs_off[h] + x % nh], d = x / nh;
            cd[x] = plan_stage_rank(os, c % otp + otp * (d + odp * (c / otp)));
        }
        for (int x = 0; x < TX_SRC_WINDOW; x++) cd[ncand + x] = cd[x % ncand];
        rr[h] = (int)((size_t)h * 7 % (size_t)ncand);
    }

    /* geometry per new (t, p) cell, the same for every replica: the owner cells each tensor's box meets,
       the intersections, put into blocks by holder set (in order of first appearance) */
    for (int nc = 0; nc < ncell_new; nc++) {
        const CellT *tt = &ncl[(size_t)nc * NT];
        int n = 0, b0 = ts->nblk;
        cell_blk_off[nc] = b0;
        for (int i = 0; i < nt; i++) {
            if (!tt[i].held) continue;
            const Box B = tt[i].b;
            for (int k = 0; k < ncells[i]; k++) {
                Box P;
                if (!box_intersect(&B, &ocl[(size_t)cells[i * ocells + k] * NT + i].b, &P)) continue;
                int h = hs_of[i * ocells + k], b = b0;
                while (b < ts->nblk && ts->blk[b].hs != h) b++;
                if (b == ts->nblk) {
                    if ((size_t)ts->nblk == blk_cap) {
                        blk_cap = blk_cap ? 2 * blk_cap : 64;
                        TxBlock *nb = realloc(ts->blk, blk_cap * sizeof *nb);
                        if (!nb) goto oom;
                        ts->blk = nb;
                    }
                    ts->blk[ts->nblk++] = (TxBlock){0, 0, h, 0};
                }
                gt[n++] = (GeoTmp){i, b, P};
            }
        }
        /* the cell's entries by block: counting sort (stable, so tensor order inside a block) */
        if ((size_t)(ts->ngeo + n) > geo_cap) {
            geo_cap = 2 * (size_t)(ts->ngeo + n) + 64;
            Slab *ng = realloc(ts->geo, geo_cap * sizeof *ng);
            if (!ng) goto oom;
            ts->geo = ng;
        }
        int g = ts->ngeo;
        for (int b = b0; b < ts->nblk; b++) {
            ts->blk[b].g0 = g;
            for (int q = 0; q < n; q++) {
                if (gt[q].hs != b) continue;
                Slab *s = &ts->geo[g++];
                memset(s, 0, sizeof *s);
                s->tensor = gt[q].i;
                s->ndim = tt[gt[q].i].ndim;
                memcpy(s->start, gt[q].P.s, sizeof s->start);
                memcpy(s->count, gt[q].P.c, sizeof s->count);
                s->bytes = box_numel(&gt[q].P) * F;
                ts->blk[b].bytes += s->bytes;
            }
            ts->blk[b].g1 = g;
        }
        cell_geo_n[nc] = n;
        ts->ngeo = g;
    }
    cell_blk_off[ncell_new] = ts->nblk;
    for (size_t q = 0; q < nmemo; q++) lb_memo[q] = (size_t)-1;

    /* refs: every destination's blocks */
    ts->ref_off[0] = 0;
    for (int pos = 0; pos < nn; pos++) {
        int nc = pos % ntp + ntp * (pos / (ntp * ns->dp));
        ts->ref_off[pos + 1] = ts->ref_off[pos] + (size_t)(cell_blk_off[nc + 1] - cell_blk_off[nc]);
        ts->nslabs += (size_t)cell_geo_n[nc];
    }
    ts->nref = ts->ref_off[nn];
    ts->ref = malloc((ts->nref + 1) * sizeof *ts->ref);
    if (!ts->ref) goto oom;
    int maxb = 0;
    for (int nc = 0; nc < ncell_new; nc++)
        if (cell_blk_off[nc + 1] - cell_blk_off[nc] > maxb) maxb = cell_blk_off[nc + 1] - cell_blk_off[nc];
    TxRef *mv = malloc(((size_t)maxb + 1) * sizeof *mv);
    int *grp = malloc(((size_t)maxb + 1) * sizeof *grp), *gsrc = malloc(((size_t)maxb + 1) * sizeof *gsrc);
    int *gcnt = malloc(((size_t)maxb + 2) * sizeof *gcnt);
    /* forwarding: per block of the destination its state (0 moved, 1 local, 2 forwarded) and the forward
       taken; per new cell its queue of streams */
    char *bstate = malloc((size_t)maxb + 1);
    int *fsrc = malloc(((size_t)maxb + 1) * sizeof *fsrc);
    int *ffeed = malloc(((size_t)maxb + 1) * sizeof *ffeed), *fhop = malloc(((size_t)maxb + 1) * sizeof *fhop);
    int *used = malloc(((size_t)maxb + 1) * sizeof *used); /* this destination's forwarders, marked in isfwd */
    /* per block of the destination: its least-loaded holder (not a forwarder), valid while hstamp = stamp */
    int *hbest = malloc(((size_t)maxb + 1) * sizeof *hbest), *hstamp = calloc((size_t)maxb + 1, sizeof *hstamp);
    int stamp = 0;
    char *isfwd = relay_chunk ? calloc((size_t)nranks, 1) : NULL;
    /* per new cell: its queue (capacity, offset, length). A cell can gain from forwarding only when a
       holder of one of its blocks would send more than a replica of the cell receives: when the block's
       destinations (all replicas of every new cell that needs it) over its holder candidates, times its
       bytes, exceed the cell's bytes. */
    int *fqcap = relay_chunk ? calloc((size_t)ncell_new + 1, sizeof *fqcap) : NULL;
    size_t *fqoff = relay_chunk ? calloc((size_t)ncell_new + 1, sizeof *fqoff) : NULL;
    int *fqn = relay_chunk ? calloc((size_t)ncell_new + 1, sizeof *fqn) : NULL;
    int *ce = malloc((TX_RELAY_QUEUE_MAX + 1) * sizeof *ce); /* candidate streams of a destination, by margin */
    size_t *cm = malloc((TX_RELAY_QUEUE_MAX + 1) * sizeof *cm);
    Fwd *fq = NULL;
    size_t *hs_dests = fqcap ? calloc((size_t)nhs + 1, sizeof *hs_dests) : NULL;
    size_t *cellb = fqcap ? calloc((size_t)ncell_new + 1, sizeof *cellb) : NULL; /* each new cell's bytes */
    char *bfan = fqcap ? calloc((size_t)ts->nblk + 1, 1) : NULL; /* the blocks that make their cell one */
    /* and per old cell what one of its ranks would send from holders alone, against the largest new cell:
       an old rank that holds a block with too few holders and others besides sends them all, so the
       others' streams are worth forwarding too */
    double *osend = fqcap ? calloc((size_t)ocells + 1, sizeof *osend) : NULL, maxcell = 0;
    for (int b = 0; hs_dests && b < ts->nblk; b++) hs_dests[ts->blk[b].hs] += (size_t)ns->dp;
    for (int b = 0; osend && b < ts->nblk; b++) {
        int h = ts->blk[b].hs;
        double per = (double)ns->dp * (double)ts->blk[b].bytes / (double)((hs_off[h + 1] - hs_off[h]) * odp);
        for (int q = hs_off[h]; q < hs_off[h + 1]; q++) osend[hs_cells[q]] += per;
    }
    for (int nc = 0; hs_dests && cellb && nc < ncell_new; nc++) {
        for (int b = cell_blk_off[nc]; b < cell_blk_off[nc + 1]; b++) cellb[nc] += ts->blk[b].bytes;
        if ((double)cellb[nc] > maxcell) maxcell = (double)cellb[nc];
    }
    for (int nc = 0; hs_dests && cellb && nc < ncell_new; nc++) {
        int nb = cell_blk_off[nc + 1] - cell_blk_off[nc], fan = 0;
        for (int b = cell_blk_off[nc]; b < cell_blk_off[nc + 1]; b++) {
            int h = ts->blk[b].hs;
            bfan[b] = (double)hs_dests[h] * (double)ts->blk[b].bytes >
                      (double)((hs_off[h + 1] - hs_off[h]) * odp) * (double)cellb[nc];
            for (int q = hs_off[h]; osend && q < hs_off[h + 1] && !bfan[b]; q++) bfan[b] = osend[hs_cells[q]] > maxcell;
            fan |= bfan[b];
        }
        fqcap[nc] = !fan ? 0 : 2 * nb + 8 < TX_RELAY_QUEUE_MAX ? 2 * nb + 8 : TX_RELAY_QUEUE_MAX;
        fqoff[nc + 1] = fqoff[nc] + (size_t)fqcap[nc];
    }
    free(hs_dests);
    free(osend);
    if (fqcap) fq = malloc((fqoff[ncell_new] + 1) * sizeof *fq);
    if (!mv || !grp || !gsrc || !gcnt || !bstate || !fsrc || !ffeed || !fhop || !used || !hbest || !hstamp || !ce || !cm ||
        (relay_chunk && (!isfwd || !fqcap || !fqoff || !fqn || !fq || !cellb || !bfan))) {
        free(mv); free(grp); free(gsrc); free(gcnt); free(bstate); free(fsrc); free(ffeed); free(fhop);
        free(used); free(hbest); free(hstamp); free(isfwd); free(fqcap); free(fqoff); free(fqn); free(ce);
        free(cm); free(fq); free(cellb); free(bfan);
        goto oom;
    }
    /* with at most 64 old cells: each holder set's cells as a bit mask (is r's old cell a holder?) */
    unsigned long long *hs_mask = ocells <= 64 ? calloc((size_t)nhs + 1, sizeof *hs_mask) : NULL;
    for (int h = 0; hs_mask && h < nhs; h++)
        for (int q = hs_off[h]; q < hs_off[h + 1]; q++) hs_mask[h] |= 1ull << hs_cells[q];
    size_t *L = load ? load : ts->rank_out; /* what the sources are balanced on */
    int rsh = 1; /* bits of a rank (loads: bytes, < 2^52) */
    while ((1 << rsh) < nranks) rsh++;
    /* the lower bound per destination, independently of the blocks: what its new cell needs minus what its
       old cell holds (memoized per (new cell, old cell)); and the largest receive of the transition so far
       with this change's added, in load's units: forwarding pays only where a holder would send more */
    size_t *pos_lb = malloc(((size_t)nn + 1) * sizeof *pos_lb), in_target = 0;
    if (!pos_lb) {
        rc = nr_fail(why, len, "slab plan: out of memory");
        goto refs_done;
    }
    for (int pos = 0; pos < nn; pos++) {
        int r = plan_stage_rank(ns, pos), op = opos[r], nc = pos % ntp + ntp * (pos / (ntp * ns->dp));
        int ocell = old_cell(op, otp, odp);
        size_t lb_here = (size_t)-1, *lb = nmemo ? &lb_memo[(size_t)nc * ((size_t)ocells + 1) + (size_t)(ocell + 1)]
                                                 : &lb_here;
        if (*lb == (size_t)-1) {
            const CellT *tt = &ncl[(size_t)nc * NT];
            size_t sum = 0;
            for (int i = 0; i < nt; i++) {
                Box X;
                if (!tt[i].held) continue;
                const Box B = tt[i].b;
                size_t need = box_numel(&B);
                if (ocell >= 0 && ocl[(size_t)ocell * NT + i].held && box_intersect(&B, &ocl[(size_t)ocell * NT + i].b, &X))
                    need -= box_numel(&X);
                sum += need * F;
            }
            *lb = sum;
        }
        pos_lb[pos] = *lb;
        size_t in = (in_load ? in_load[r] : 0) + *lb * scale;
        if (in > in_target) in_target = in;
    }
    size_t maxL = 0; /* the largest send load: while a holder sending a whole cell stays under in_target, no
                        forward can end sooner (the queue is not even looked at) */
    for (int r = 0; r < nranks; r++) maxL = L[r] > maxL ? L[r] : maxL;
    for (int pos = 0; pos < nn; pos++) {
        int r = plan_stage_rank(ns, pos), op = opos[r], nc = pos % ntp + ntp * (pos / (ntp * ns->dp));
        int ocell = old_cell(op, otp, odp);
        ts->bytes_lower_bound += pos_lb[pos];
        TxRef *out = ts->ref + ts->ref_off[pos];
        int nl = 0, nm = 0, ng = 0, nused = 0, b0 = cell_blk_off[nc], nb = cell_blk_off[nc + 1] - b0;
        /* local or moved: old boxes are unions of old cells, so r's old cell holds the whole block or none */
        for (int b = b0; b < b0 + nb; b++) bstate[b - b0] = (char)set_holds(hs_mask, hs_off, hs_cells, ts->blk[b].hs, ocell);
        /* forwards: whole streams of earlier replicas of the cell whose forwarder, one chunk a hop behind,
           would start before any holder of their blocks; the largest margin first. Invariant: every block
           still to take from a holder keeps a candidate that is not one of this destination's forwarders
           (one stream per pair). */
        Fwd *qf = fq && fqcap[nc] ? fq + fqoff[nc] : NULL;
        int look = qf && maxL + cellb[nc] * scale > in_target;
        int nce = 0;
        stamp++; /* a new destination: its holders again */
#define HOLDER(b_) (hstamp[(b_) - b0] == stamp ? hbest[(b_) - b0] :                                              \
                    (hstamp[(b_) - b0] = stamp,                                                                  \
                     hbest[(b_) - b0] = pick_holder(cand, cand_off, rr, ts->blk[b_].hs, L, rsh, nused ? isfwd : NULL)))
        for (int pass = 0; look && pass < 2; pass++)
            for (int x = 0; x < (pass ? nce : fqn[nc]); x++) {
                int e = pass ? ce[x] : x;
                const Fwd *f = &qf[e];
                if (isfwd[f->rank]) continue;
                size_t lh = ~(size_t)0, sb = f->bytes * scale;
                int ok = 1;
                for (int k = 0; k < f->nref && ok; k++) {
                    int b = ts->ref[f->ref0 + (size_t)k].block;
                    ok = bstate[b - b0] == 0; /* not local here, not forwarded already */
                    int y = ok ? HOLDER(b) : -1;
                    if (y >= 0 && L[y] < lh) lh = L[y];
                }
                if (!ok) continue;
                /* when each would be done, at the earliest the largest receive: the holder sending it, against
                   the forwarder one chunk a hop behind (lh = ~0: no holder is left but forwarders) */
                size_t hold_end = lh == ~(size_t)0 ? lh : NR_MAX(in_target, lh + sb);
                size_t fwd_end = NR_MAX(in_target, L[f->rank] + sb) + (size_t)(f->hop + 1) * relay_chunk;
                if (fwd_end >= hold_end) continue;
                if (pass == 0) { /* a candidate: by margin, largest first (insertion; at most the queue) */
                    int y = nce++;
                    for (; y > 0 && cm[y - 1] < hold_end - fwd_end; y--) { ce[y] = ce[y - 1]; cm[y] = cm[y - 1]; }
                    ce[y] = e;
                    cm[y] = hold_end - fwd_end;
                    continue;
                }
                int foc = old_cell(opos[f->rank], otp, odp);
                isfwd[f->rank] = 1; /* the invariant, with f a forwarder too */
                for (int b = b0; b < b0 + nb && ok && foc >= 0; b++) {
                    int h = ts->blk[b].hs, ins = 0;
                    if (bstate[b - b0] != 0) continue;
                    for (int k = 0; k < f->nref && !ins; k++) ins = ts->ref[f->ref0 + (size_t)k].block == b;
                    if (ins) continue;
                    ok = !set_holds(hs_mask, hs_off, hs_cells, h, foc) ||
                         pick_holder(cand, cand_off, rr, h, L, rsh, isfwd) >= 0;
                }
                if (!ok) { isfwd[f->rank] = 0; continue; }
                used[nused++] = f->rank;
                /* a forwarder more (and its load up): only a block whose least-loaded holder it was changes */
                for (int b = 0; b < nb; b++)
                    if (hstamp[b] == stamp && hbest[b] == f->rank) hstamp[b] = 0;
                for (int k = 0; k < f->nref; k++) {
                    int b = ts->ref[f->ref0 + (size_t)k].block - b0;
                    bstate[b] = 2;
                    fsrc[b] = f->rank;
                    ffeed[b] = ts->ref[f->ref0 + (size_t)k].src;
                    fhop[b] = f->hop + 1;
                }
                ts->rank_out[f->rank] += f->bytes;
                if (load) load[f->rank] += f->bytes * scale;
                maxL = L[f->rank] > maxL ? L[f->rank] : maxL;
                ts->rank_in[r] += f->bytes;
                ts->bytes_moved += f->bytes;
                ts->bytes_relayed += f->bytes;
                qf[e].nref = 0; /* forwarded once: out of the queue below */
            }
#undef HOLDER
        if (qf && nused) {
            int w = 0;
            for (int e = 0; e < fqn[nc]; e++)
                if (qf[e].nref) qf[w++] = qf[e];
            fqn[nc] = w;
        }
        for (int b = b0; b < b0 + nb; b++) {
            const TxBlock *bk = &ts->blk[b];
            int h = bk->hs, st = bstate[b - b0];
            if (st == 1) {
                out[nl++] = (TxRef){b, r, r, -1, 0};
                ts->bytes_local += bk->bytes;
                continue;
            }
            int best, feed = -1, hop = 0;
            if (st == 2) {
                best = fsrc[b - b0], feed = ffeed[b - b0], hop = fhop[b - b0];
            } else {
                /* the least loaded of up to TX_SRC_WINDOW candidates, round-robin from just after the set's last
                   pick; never one of this destination's forwarders */
                int ncand = cand_off[h + 1] - cand_off[h], nw = ncand < TX_SRC_WINDOW ? ncand : TX_SRC_WINDOW;
                const int *ch = set_cands(cand, cand_off, h), *cd = ch + rr[h];
                best = pick_holder(cand, cand_off, rr, h, L, rsh, nused ? isfwd : NULL);
                if (best < 0) { /* the invariant above makes this impossible */
                    rc = nr_fail(why, len, "slab plan: rank %d has no source for a block that is not a forwarder "
                                 "(a bug)", r);
                    goto refs_done;
                }
                int bx = 0;
                while (bx < nw && cd[bx] != best) bx++;
                if (bx < nw) bx += rr[h] + 1;
                else { /* picked outside the window */
                    bx = 0;
                    while (ch[bx] != best) bx++;
                    bx++;
                }
                rr[h] = bx >= ncand ? bx - ncand : bx;
                ts->rank_out[best] += bk->bytes;
                if (load) load[best] += bk->bytes * scale;
                maxL = L[best] > maxL ? L[best] : maxL;
                ts->rank_in[r] += bk->bytes;
                ts->bytes_moved += bk->bytes;
            }
            int q = 0;
            while (q < ng && gsrc[q] != best) q++;
            if (q == ng) gsrc[ng++] = best;
            grp[nm] = q;
            mv[nm++] = (TxRef){b, best, r, feed, hop};
        }
        /* the moved ones after the local ones, grouped by source (first appearance), stable */
        memset(gcnt, 0, ((size_t)ng + 1) * sizeof *gcnt);
        for (int q = 0; q < nm; q++) gcnt[grp[q] + 1]++;
        for (int q = 1; q <= ng; q++) gcnt[q] += gcnt[q - 1];
        for (int q = 0; q < nm; q++) out[nl + gcnt[grp[q]]++] = mv[q];
        for (int u = 0; u < nused; u++) isfwd[used[u]] = 0;
        /* this destination's streams become candidates for the cell's later replicas */
        if (qf)
            for (int k = nl; k < nl + nm;) {
                Fwd f = {r, out[k].hop, 0, (size_t)(out - ts->ref) + (size_t)k, 0};
                int worth = 0; /* a stream with a block whose holders are too few */
                for (int src = out[k].src; k < nl + nm && out[k].src == src; k++) {
                    f.nref++;
                    f.bytes += ts->blk[out[k].block].bytes;
                    worth |= bfan[out[k].block];
                }
                if (!worth) continue;
                if (fqn[nc] == fqcap[nc]) { /* full: the oldest goes */
                    memmove(&qf[0], &qf[1], (size_t)(fqcap[nc] - 1) * sizeof *qf);
                    fqn[nc]--;
                }
                qf[fqn[nc]++] = f;
            }
    }
    if (ts->bytes_relayed == 0 &&
        rebalance_sources(ts, nn, nranks, cand, cand_off, rr, L, in_load, load ? scale : 1, rsh)) {
        rc = nr_fail(why, len, "slab plan: out of memory");
        goto refs_done;
    }
refs_done:
    free(pos_lb);
    free(mv); free(grp); free(gsrc); free(gcnt); free(bstate); free(fsrc); free(ffeed); free(fhop);
    free(used); free(hbest); free(hstamp); free(isfwd); free(fqcap); free(fqoff); free(fqn); free(ce); free(cm);
    free(fq); free(cellb); free(bfan);
    free(hs_mask);
    goto done;
oom:
    rc = nr_fail(why, len, "slab plan: out of memory");
done:
    free(ocl);
    free(ncl);
    free(opos);
    free(cells);
    free(ncells);
    free(hs_of);
    free(hs_cells);
    free(hs_off);
    free(hs_key);
    free(htab);
    free(cand_off);
    free(cand);
    free(rr);
    free(tmp_h);
    free(gt);
    free(cell_blk_off);
    free(cell_geo_n);
    free(lb_memo);
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
