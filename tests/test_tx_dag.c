/* test_tx_dag.c — the pure transition DAG (transition.h), no MPI:
 *   - random multi-change transitions of small models over 8 ranks, with
 *     and without a memory budget: the DAG is acyclic; its COPY and XFER
 *     nodes partition every change's slabs; every rank's part receives or
 *     copies exactly its new shard's elements, each once (every slab inside
 *     its new box, no two of a tensor overlapping, the volumes per tensor the
 *     shard's: an exact tiling), each from inside its source's old box (a
 *     forward's: its new one); sends and
 *     receives of every pair agree; resource edges run from earlier waves to
 *     later ones on one rank; XFERs are in one global message order by (wave, change), one XFER per pair; the
 *     predicted peak memory stays within the budget; a budget below what
 *     the ranks hold is refused with a reason;
 *   - 32, 256 and 1,024 ranks of an 8B-shaped model: build time (median of
 *     7) and the same structural checks, exact coverage included (until
 *     2026-12-05 only up to 256 ranks and not for the forwarding case; the
 *     whole test still runs in about 0.3 s). */
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_random.h"
#include "nereus/transition.h"
#include "nereus/util.h"

static void random_stage(PlanStage *s, int nranks, int maxdeg) {
    random_degrees(s, nranks, maxdeg);
    int perm[1024];
    for (int i = 0; i < nranks; i++) perm[i] = i;
    shuffle(perm, nranks);
    for (int i = 0; i < s->nranks; i++) s->ranks[i] = (int16_t)perm[i];
}

/* rank r's shard table in stage s into t (*nt tensors); 0 when r is not in s */
static int shard_table(const GPTConfig *cfg, const PlanStage *s, int r, TensorInfo t[GPT_NUM_TENSORS], int *nt) {
    for (int pos = 0; pos < s->tp * s->pp * s->dp; pos++)
        if (s->ranks[pos] == r) {
            gpt_tensor_table_pp(cfg, s->tp, pos % s->tp, s->pp, pos / (s->tp * s->dp), t, nt);
            return 1;
        }
    *nt = 0;
    return 0;
}

static size_t shard_numel(const GPTConfig *cfg, const PlanStage *s, int r, int tensor) {
    TensorInfo t[GPT_NUM_TENSORS];
    int nt;
    return shard_table(cfg, s, r, t, &nt) && tensor < nt ? t[tensor].lnumel : 0;
}

/* 1 when slab x lies inside the box that table entry t holds (not held: never) */
static int slab_inside(const Slab *x, const TensorInfo *t) {
    int st[4], ct[4];
    if (!slab_tensor_box(t, st, ct)) return 0;
    for (int a = 0; a < 4; a++)
        if (x->start[a] < st[a] || x->start[a] + x->count[a] > st[a] + ct[a]) return 0;
    return 1;
}

/* 1 when slabs x and y of one tensor share an element */
static int slabs_meet(const Slab *x, const Slab *y) {
    for (int a = 0; a < 4; a++)
        if (x->start[a] + x->count[a] <= y->start[a] || y->start[a] + y->count[a] <= x->start[a]) return 0;
    return 1;
}

/* Every element of rank r's new shards arrives exactly once, from where it is: each slab r copies or receives
   lies inside r's new box of its tensor and meets no other of the same change and tensor (with the volumes per
   tensor equal to the shard's, checked beside: an exact tiling), and each slab r sends or copies lies inside
   its old box (a forward's, inside its new one). Returns 1 when that fails. */
static int part_exact(const TxPlan *P, const TxPart *pt) {
    for (int c = 0; c < P->nchanges; c++) {
        TensorInfo tn[GPT_NUM_TENSORS], to[GPT_NUM_TENSORS];
        int nn, no;
        shard_table(&P->ch[c].cfg, &P->ch[c].to, pt->rank, tn, &nn);
        shard_table(&P->ch[c].cfg, &P->ch[c].from, pt->rank, to, &no);
        for (int64_t i = 0; i < pt->nops; i++) {
            const TxOp *op = &pt->ops[i];
            if (op->change != c) continue;
            int into = op->kind == TXO_COPY || op->kind == TXO_RECV, outof = op->kind == TXO_COPY || op->kind == TXO_SEND;
            for (int64_t q = op->slab0; q < op->slab0 + op->nslab; q++) {
                const Slab *x = &pt->slabs[q];
                if (into && (x->tensor >= nn || !slab_inside(x, &tn[x->tensor]))) return 1;
                if (outof && op->feed < 0 && (x->tensor >= no || !slab_inside(x, &to[x->tensor]))) return 1;
                if (outof && op->feed >= 0 && (x->tensor >= nn || !slab_inside(x, &tn[x->tensor]))) return 1;
                if (!into) continue;
                for (int64_t j = i; j < pt->nops; j++) { /* the later slabs into this rank of the change */
                    const TxOp *o2 = &pt->ops[j];
                    if (o2->change != c || (o2->kind != TXO_COPY && o2->kind != TXO_RECV)) continue;
                    for (int64_t u = j == i ? q + 1 : o2->slab0; u < o2->slab0 + o2->nslab; u++)
                        if (pt->slabs[u].tensor == x->tensor && slabs_meet(x, &pt->slabs[u])) return 1;
                }
            }
        }
    }
    return 0;
}

static size_t slab_numel(const Slab *s) {
    size_t n = 1;
    for (int a = 0; a < 4; a++) n *= (size_t)s->count[a];
    return n;
}

/* structural checks of a built plan; returns a bitmask of failures */
enum { B_CYCLE = 1, B_PARTITION = 2, B_COVER = 4, B_PAIRS = 8, B_RESOURCE = 16, B_ORDER = 32, B_MEM = 64, B_BOUND = 128,
       B_FWD = 256, B_EXACT = 512 };
#define NB_CHECKS 10
static int check_plan(const TxPlan *P, int full_cover) {
    int bad = 0;
    size_t n = P->nnodes;
    /* acyclic: Kahn */
    int *indeg = calloc(n + 1, sizeof *indeg);
    size_t *q = malloc((n + 1) * sizeof *q), qh = 0, qt = 0, seen = 0;
    for (size_t k = 0; k < n; k++)
        for (size_t e = P->succ_off[k]; e < P->succ_off[k + 1]; e++) indeg[P->succ[e]]++;
    for (size_t k = 0; k < n; k++)
        if (!indeg[k]) q[qt++] = k;
    while (qh < qt) {
        size_t k = q[qh++];
        seen++;
        for (size_t e = P->succ_off[k]; e < P->succ_off[k + 1]; e++)
            if (--indeg[P->succ[e]] == 0) q[qt++] = (size_t)P->succ[e];
    }
    if (seen != n) bad |= B_CYCLE;
    free(indeg);
    free(q);
    /* COPY / XFER nodes partition the slabs (their block refs, and the slabs those expand to: each
       slab's source and destination are the node's, local exactly in COPY nodes) */
    for (int c = 0; c < P->nchanges; c++) {
        const TxSlabs *ts = &P->sl[c];
        char *hit = calloc(ts->nref + 1, 1);
        Slab *buf = malloc((ts->nslabs + 1) * sizeof *buf);
        size_t nsl = 0;
        for (size_t k = 0; k < n; k++) {
            const TxNode *d = &P->nodes[k];
            if (d->change != c || (d->kind != TXN_COPY && d->kind != TXN_XFER)) continue;
            if (d->slab0 + d->nslab > ts->nref) { bad |= B_PARTITION; continue; }
            for (size_t s = d->slab0; s < d->slab0 + d->nslab; s++)
                if (hit[s]++) bad |= B_PARTITION;
            size_t m = tx_slabs_expand(ts, d->slab0, d->slab0 + d->nslab, buf);
            nsl += m;
            size_t bytes = 0;
            for (size_t s = 0; s < m; s++) {
                const Slab *sl = &buf[s];
                bytes += sl->bytes * (size_t)P->ch[c].nbufs;
                if (sl->src_rank != d->rank || sl->local != (d->kind == TXN_COPY) ||
                    (d->kind == TXN_XFER && sl->dst_rank != d->peer) || (d->kind == TXN_COPY && sl->dst_rank != d->rank))
                    bad |= B_PARTITION;
            }
            if (bytes != d->bytes) bad |= B_PARTITION;
        }
        for (size_t s = 0; s < ts->nref; s++)
            if (!hit[s]) bad |= B_PARTITION;
        if (nsl != ts->nslabs) bad |= B_PARTITION;
        free(hit);
        free(buf);
    }
    /* XFERs in (wave, change) order, each (change, src, dst) pair once: the one global message order
       both sides of every pair take from this node list */
    const TxNode *prev = NULL;
    int maxr = 0;
    for (size_t k = 0; k < n; k++) maxr = P->nodes[k].rank > maxr ? P->nodes[k].rank : maxr;
    char *pair = calloc((size_t)P->nchanges * (size_t)(maxr + 1) * (size_t)P->nranks + 1, 1);
    for (size_t k = 0; k < n; k++) {
        const TxNode *d = &P->nodes[k];
        if (d->kind != TXN_XFER) continue;
        if (prev && (d->wave < prev->wave || (d->wave == prev->wave && d->change < prev->change))) bad |= B_ORDER;
        size_t key = ((size_t)d->change * (size_t)(maxr + 1) + (size_t)d->rank) * (size_t)P->nranks + (size_t)d->peer;
        if (pair[key]++) bad |= B_ORDER;
        prev = d;
    }
    free(pair);
    /* resource edges: FREE → ALLOC on one rank, earlier wave to later */
    for (size_t k = 0; k < n; k++)
        for (size_t e = P->succ_off[k]; e < P->succ_off[k + 1]; e++) {
            const TxNode *a = &P->nodes[k], *b = &P->nodes[P->succ[e]];
            if (a->kind == TXN_FREE && b->kind == TXN_ALLOC && (a->rank != b->rank || a->wave >= b->wave))
                bad |= B_RESOURCE;
        }
    /* parts: each rank's COPY + RECV volume per (change, tensor) = its new shard; SEND = RECV per pair */
    int nr = P->nranks;
    size_t *sent = calloc((size_t)nr, sizeof *sent), *recv = calloc((size_t)nr, sizeof *recv);
    for (int r = 0; r < nr; r++) {
        TxPart pt;
        if (tx_part_extract(P, r, &pt)) { bad |= B_COVER; continue; }
        if (full_cover && part_exact(P, &pt)) bad |= B_EXACT;
        for (int c = 0; c < P->nchanges && full_cover; c++) {
            size_t got[GPT_NUM_TENSORS] = {0};
            for (int64_t i = 0; i < pt.nops; i++) {
                const TxOp *op = &pt.ops[i];
                if (op->change != c || (op->kind != TXO_COPY && op->kind != TXO_RECV)) continue;
                for (int64_t s = op->slab0; s < op->slab0 + op->nslab; s++) got[pt.slabs[s].tensor] += slab_numel(&pt.slabs[s]);
            }
            for (int i = 0; i < GPT_NUM_TENSORS; i++)
                if (got[i] != shard_numel(&P->ch[c].cfg, &P->ch[c].to, r, i)) bad |= B_COVER;
        }
        for (int64_t i = 0; i < pt.nops; i++) {
            if (pt.ops[i].kind == TXO_SEND) sent[r] += (size_t)pt.ops[i].bytes;
            if (pt.ops[i].kind == TXO_RECV) recv[r] += (size_t)pt.ops[i].bytes;
        }
        tx_part_free(&pt);
    }
    for (int r = 0; r < nr; r++)
        if (sent[r] != P->rank_out[r] || recv[r] != P->rank_in[r]) bad |= B_PAIRS;
    free(sent);
    free(recv);
    if (P->opt.budget > 0)
        for (int r = 0; r < nr; r++)
            if (P->mem_peak[r] > P->opt.budget) bad |= B_MEM;
    if (P->bytes_moved != P->bytes_lower_bound) bad |= B_BOUND;
    /* forwards: the XFER it forwards (feed → its source, same change) is earlier in node order, has an edge
       to it, carries the same blocks in the same order (so the same chunks), and is not a forward of
       more than one; a forward has no edge to the FREE of its source */
    char *fwd_used = calloc(n + 1, 1);
    for (size_t k = 0; k < n; k++) {
        const TxNode *d = &P->nodes[k];
        if (d->kind != TXN_XFER || d->feed < 0) continue;
        size_t j = 0;
        for (; j < k; j++) {
            const TxNode *e = &P->nodes[j];
            if (e->kind == TXN_XFER && e->change == d->change && e->rank == d->feed && e->peer == d->rank) break;
        }
        if (j == k) { bad |= B_FWD; continue; }
        const TxNode *e = &P->nodes[j];
        const TxSlabs *ts = &P->sl[d->change];
        int edge = 0;
        for (size_t q = P->succ_off[j]; q < P->succ_off[j + 1]; q++) edge |= (size_t)P->succ[q] == k;
        if (!edge || fwd_used[j]++ || e->nslab != d->nslab || e->bytes != d->bytes) bad |= B_FWD;
        for (size_t q = 0; q < d->nslab && q < e->nslab; q++)
            if (ts->ref[d->slab0 + q].block != ts->ref[e->slab0 + q].block) bad |= B_FWD;
        for (size_t q = P->succ_off[k]; q < P->succ_off[k + 1]; q++)
            if (P->nodes[P->succ[q]].kind == TXN_FREE) bad |= B_FWD;
    }
    free(fwd_used);
    return bad;
}

static TxChange change_of(int id, int kind, const GPTConfig *cfg, const PlanStage *a, const PlanStage *b, int nbufs) {
    TxChange x;
    memset(&x, 0, sizeof x);
    x.id = id;
    x.kind = kind;
    x.tie = plan_stage_phase(id);
    x.cfg = *cfg;
    x.from = *a;
    x.to = *b;
    x.nbufs = nbufs;
    x.trainable = nbufs == 3;
    x.bmax_from = a->dp > 0 ? 8 / (a->dp < 8 ? a->dp : 8) : 1;
    x.bmax_to = 1;
    x.tmax = 8;
    return x;
}

int main(void) {
    nr_heap_keep(); /* as bin/nereus: the timed builds reuse freed memory */
    test_rng = 0x2545F4914F6CDD1Dull;
    TxOptions opt = {0, 4096, 16384, 10e9, 5e-6, 200e-6, NULL, 0, 0, 0, 0, 0, 0, 0, 0};
    int nbad[NB_CHECKS] = {0}, trials = 0, multiwave = 0, refused_ok = 0, refused_n = 0, nfwd = 0;
    const char *what[NB_CHECKS] = {"acyclic", "COPY/XFER nodes partition the slabs", "each part covers its new shard",
                                   "sends = receives per rank", "resource edges forward in waves on one rank",
                                   "XFERs in (wave, change) order, one per rank pair", "predicted peak within the budget",
                                   "bytes moved = lower bound",
                                   "each forward follows the XFER it forwards (an edge, the same blocks, once)",
                                   "every element of every new shard arrives exactly once, from a rank holding it"};
    static PlanStage a[4], b[4];
    for (int it = 0; it < 400; it++) {
        int nranks = it % 2 ? 8 : 4, nch = 1 + rnd(3);
        GPTConfig cfg = {.V = 15, .maxT = 16, .L = 4, .C = 32, .NH = 4, .value_head = rnd(2)};
        TxChange ch[4];
        for (int c = 0; c < nch; c++) {
            random_stage(&a[c], nranks, 3);
            random_stage(&b[c], nranks, 3);
            ch[c] = change_of(c * 2 + rnd(2), rnd(4) == 0 ? TX_COPY : TX_MOVE, &cfg, &a[c], &b[c], 1 + 2 * rnd(2));
            if (ch[c].kind == TX_COPY) ch[c].nbufs = 1;
        }
        /* budget: none, or between the largest start and a little over: some plans need waves, some refuse */
        TxPlan P;
        char why[512] = "";
        opt.budget = 0;
        if (tx_plan_build(&P, ch, nch, nranks, &opt, why, sizeof why)) {
            if (nbad[0]++ < 3) printf("  build failed: %s\n", why);
            continue;
        }
        double hi = 0;
        for (int r = 0; r < nranks; r++) hi = P.mem_peak[r] > hi ? P.mem_peak[r] : hi;
        double lo = 0;
        for (int r = 0; r < nranks; r++) lo = fmax(lo, fmax(P.mem_start[r], P.mem_end[r])); /* no schedule needs less */
        int bad = check_plan(&P, 1);
        nfwd += P.bytes_relayed > 0;
        tx_plan_free(&P);
        opt.budget = lo + (hi - lo) * (0.3 + 0.5 * rnd(100) / 100.0) + opt.window;
        int rc = tx_plan_build(&P, ch, nch, nranks, &opt, why, sizeof why);
        if (rc == 0) {
            bad |= check_plan(&P, 1);
            multiwave += P.nwaves > 1;
            tx_plan_free(&P);
        } else if (strstr(why, "memory budget") == NULL) {
            bad |= B_MEM;
        }
        /* below what the ranks already hold: always refused, with the reason */
        opt.budget = lo * 0.5;
        if (lo > 0) {
            refused_n++;
            if (tx_plan_build(&P, ch, nch, nranks, &opt, why, sizeof why) != 0 && strstr(why, "too small")) refused_ok++;
            else tx_plan_free(&P);
        }
        for (int k = 0; k < NB_CHECKS; k++)
            if (bad & (1 << k)) nbad[k]++;
        trials++;
    }
    for (int k = 0; k < NB_CHECKS; k++) CHECK(nbad[k] == 0, "%s (%d transitions of 1-3 changes on 4 or 8 ranks, %d bad)", what[k], trials, nbad[k]);
    CHECK(multiwave > 20, "tight budgets give multi-wave schedules (%d of %d)", multiwave, trials);
    CHECK(nfwd > 10, "forwarding is planned in some of them (%d of %d)", nfwd, trials);
    CHECK(refused_ok == refused_n && refused_n > 0, "a budget below what ranks hold is refused with the reason (%d of %d)",
          refused_ok, refused_n);

    /* communicator set-up in the prediction: once per change whose new layout no EMU has (plan_stage_new_comms) */
    {
        PlanConfig pa, pb;
        memset(&pa, 0, sizeof pa);
        for (int s = 0; s < PLAN_NSTAGES; s++) random_stage(&pa.stage[s], 8, 3);
        pb = pa;
        random_stage(&pb.stage[PLAN_ACTOR_TRAIN], 8, 3);
        pb.stage[PLAN_CRITIC_TRAIN] = pb.stage[PLAN_ACTOR_TRAIN]; /* a later change onto the same new layout */
        pb.stage[PLAN_REF_INF] = pa.stage[PLAN_ACTOR_GEN];        /* onto a layout the old plan has */
        int fresh = 1;
        for (int s = 0; s < PLAN_NSTAGES; s++) fresh = fresh && !plan_stage_same(&pb.stage[PLAN_ACTOR_TRAIN], &pa.stage[s]);
        int nc = plan_stage_new_comms(&pa, &pb, PLAN_ACTOR_TRAIN), ncr = plan_stage_new_comms(&pa, &pb, PLAN_CRITIC_TRAIN),
            nref = plan_stage_new_comms(&pa, &pb, PLAN_REF_INF), same = plan_stage_new_comms(&pa, &pa, PLAN_ACTOR_INF);
        CHECK(nc == fresh && ncr == 0 && nref == 0 && same == 0,
              "new communicators only for a layout no EMU has (new %d want %d; the second onto it %d, onto an old "
              "layout %d, unchanged %d: want 0)", nc, fresh, ncr, nref, same);
        GPTConfig cfg = {.V = 15, .maxT = 16, .L = 4, .C = 32, .NH = 4, .value_head = 0};
        TxChange x = change_of(0, TX_MOVE, &cfg, &pa.stage[PLAN_ACTOR_TRAIN], &pb.stage[PLAN_ACTOR_TRAIN], 3);
        TxPlan P;
        char why[512];
        opt.budget = 0;
        double t[2] = {0, 0};
        for (int k = 0; k < 2; k++) {
            x.comm_shared = k;
            if (tx_plan_build(&P, &x, 1, 8, &opt, why, sizeof why) == 0) t[k] = P.predicted_s, tx_plan_free(&P);
        }
        CHECK(fabs(t[0] - t[1] - opt.comm_setup) < 1e-12, "a change onto existing communicators is predicted "
              "comm_setup (%.0f us) faster: %.6g vs %.6g s", opt.comm_setup * 1e6, t[0], t[1]);
    }

    /* the memory a move holds: an old shard only its params, m and v from the start (the executor sheds its
       gradients, activations and caches first: gpt_shed), the new one's state buffer by buffer (new m once old
       params are gone, new v once old m is: with n and o bytes a buffer, the old state plus at most
       max(n, N - O + o)), then whole; by hand for dp2 -> tp2 on ranks 0-1 of 2, one wave, and the budget
       that needs the shed and the staging (refused without the staging, TxOptions.no_staging) accepted */
    {
        GPTConfig cfg = {.V = 15, .maxT = 16, .L = 4, .C = 32, .NH = 4, .value_head = 0};
        PlanStage a, b;
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        a.tp = b.dp = 1, a.pp = b.pp = 1, a.dp = b.tp = 2, a.nranks = b.nranks = 2;
        a.ranks[0] = b.ranks[0] = 0, a.ranks[1] = b.ranks[1] = 1;
        TxChange x = change_of(PLAN_ACTOR_TRAIN, TX_MOVE, &cfg, &a, &b, 3);
        double old_state = (double)gpt_shard_state_bytes(&cfg, 1, 1, 0, 1);
        double old_full = (double)gpt_shard_bytes(&cfg, 1, 1, 0, x.bmax_from, x.tmax, 1);
        double new_state = (double)gpt_shard_state_bytes(&cfg, 2, 1, 0, 1);
        double new_full = (double)gpt_shard_bytes(&cfg, 2, 1, 0, x.bmax_to, x.tmax, 1);
        double win = (double)opt.window + (double)opt.chunk;
        double n3 = new_state / 3, o3 = old_state / 3;
        double want = fmax(old_state + fmax(n3, new_state - old_state + o3) + win, new_full); /* during; at the end */
        double want_whole = fmax(old_state + new_state + win, new_full); /* both states whole (no staging) */
        TxPlan P;
        char why[512] = "";
        opt.budget = 0;
        int rc = tx_plan_build(&P, &x, 1, 2, &opt, why, sizeof why), ok = rc == 0;
        double st = ok ? P.mem_start[0] : 0, pk = ok ? P.mem_peak[0] : 0, en = ok ? P.mem_end[0] : 0;
        if (ok) tx_plan_free(&P);
        opt.no_staging = 1;
        int rcw = tx_plan_build(&P, &x, 1, 2, &opt, why, sizeof why);
        double pkw = rcw == 0 ? P.mem_peak[0] : 0;
        if (rcw == 0) tx_plan_free(&P);
        opt.budget = want; /* under old_full + new_full + win, what whole shards needed, and under want_whole */
        int rc2w = tx_plan_build(&P, &x, 1, 2, &opt, why, sizeof why);
        if (rc2w == 0) tx_plan_free(&P);
        opt.no_staging = 0;
        int rc2 = tx_plan_build(&P, &x, 1, 2, &opt, why, sizeof why);
        if (rc2 == 0) tx_plan_free(&P);
        opt.budget = new_full - 1; /* under the end: no schedule */
        int rc3 = tx_plan_build(&P, &x, 1, 2, &opt, why, sizeof why);
        if (rc3 == 0) tx_plan_free(&P);
        opt.budget = 0;
        /* the other way, tp2 -> dp2: the end (the whole dp2 shard) is the most a rank holds, and a budget under it
           is refused for the end */
        TxChange y = change_of(PLAN_ACTOR_TRAIN, TX_MOVE, &cfg, &b, &a, 3);
        y.bmax_to = 8; /* activations for 8 sequences a replica */
        double y_end = (double)gpt_shard_bytes(&cfg, 1, 1, 0, y.bmax_to, y.tmax, 1);
        opt.budget = y_end - 1;
        int rc4 = tx_plan_build(&P, &y, 1, 2, &opt, why, sizeof why);
        if (rc4 == 0) tx_plan_free(&P);
        opt.budget = 0;
        CHECK(ok && st == old_state && pk == want && en == new_full && old_full + new_full + win > want && rc2 == 0 &&
                  rcw == 0 && pkw == want_whole && want < want_whole && rc2w != 0 &&
                  rc3 != 0 && rc4 != 0 && strstr(why, "once the new shards are complete"),
              "a move holds state only while it runs: start %.0f bytes (the old params, m, v: want %.0f; whole shard "
              "%.0f), peak %.0f (want the larger of old state + the staged new state + window and the new whole "
              "shard, %.0f; without staging %.0f, want %.0f), end %.0f (want %.0f); a budget that fits only so "
              "accepted, refused without staging; budgets under the end refused (%s)", st, old_state, old_full, pk,
              want, pkw, want_whole, en, new_full, rc4 ? why : "accepted");
    }

    /* a rank that only sends holds its transfer window too: dp1 @ 0 -> dp1 @ 1 with R bytes resident on rank 0
       and a budget 1 byte under R + the old state + the window: rank 1 (the only destination) fits, rank 0
       does not, so no schedule does (until 2026-12-04 the waves checked destinations only and accepted a
       plan whose own peak on rank 0 was over the budget; found by test_transition's trial 163 on 4 ranks) */
    {
        GPTConfig cfg = {.V = 15, .maxT = 16, .L = 4, .C = 32, .NH = 4, .value_head = 0};
        PlanStage a, b;
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        a.tp = b.tp = a.pp = b.pp = a.dp = b.dp = 1, a.nranks = b.nranks = 1;
        a.ranks[0] = 0, b.ranks[0] = 1;
        TxChange x = change_of(PLAN_ACTOR_TRAIN, TX_MOVE, &cfg, &a, &b, 3);
        double state = (double)gpt_shard_state_bytes(&cfg, 1, 1, 0, 1), win = (double)opt.window + (double)opt.chunk;
        double full = (double)gpt_shard_bytes(&cfg, 1, 1, 0, x.bmax_to, x.tmax, 1);
        double res[2] = {4 * full, 0};
        TxPlan P;
        char why[512] = "";
        opt.resident = res;
        opt.budget = res[0] + state + win - 1;
        int rc = tx_plan_build(&P, &x, 1, 2, &opt, why, sizeof why);
        if (rc == 0) tx_plan_free(&P);
        opt.budget = res[0] + state + win; /* exactly enough */
        int rc2 = tx_plan_build(&P, &x, 1, 2, &opt, why + 256, sizeof why - 256);
        if (rc2 == 0) tx_plan_free(&P);
        opt.resident = NULL;
        opt.budget = 0;
        CHECK(rc != 0 && strstr(why, "rank 0") && strstr(why, "window") && rc2 == 0,
              "a sending rank's window counts against the budget: 1 byte short refused (%s), exactly enough accepted "
              "(%s)", rc ? why : "accepted", rc2 ? why + 256 : "accepted");
    }

    /* the prediction's terms for ranks on shared cores, by hand: a model moved whole from rank 0 to rank 1
       (B bytes out of 0, into 1) costs B / bw with full-duplex links and B / (2 bw) with half-duplex ones (a
       rank's in + out against twice the rate measured both ways at once); a re-cut tp1 @ 0 -> tp2 @ 0,1 that
       keeps part of rank 0's shard there costs rank 0 those bytes / copy_rate on top; a scale-out dp1 @ 0 ->
       dp2 @ 0,1, where rank 0 keeps its whole shard (the engine hands over the buffers), costs no copy */
    {
        GPTConfig cfg = {.V = 15, .maxT = 16, .L = 2, .C = 32, .NH = 4, .value_head = 0};
        PlanStage s0 = {.src = PLAN_SRC_DECK, .tp = 1, .pp = 1, .dp = 1, .nranks = 1, .ranks = {0}};
        PlanStage s1 = {.src = PLAN_SRC_DECK, .tp = 1, .pp = 1, .dp = 1, .nranks = 1, .ranks = {1}};
        PlanStage t2 = {.src = PLAN_SRC_DECK, .tp = 2, .pp = 1, .dp = 1, .nranks = 2, .ranks = {0, 1}};
        PlanStage d2 = {.src = PLAN_SRC_DECK, .tp = 1, .pp = 1, .dp = 2, .nranks = 2, .ranks = {0, 1}};
        const PlanStage *to[6] = {&s1, &s1, &t2, &t2, &d2, &d2};
        TxOptions o = opt;
        o.budget = 0, o.no_relay = 0, o.ranks_per_node = 0;
        double t[6] = {0, 0, 0, 0, 0, 0}, B = 0, Bloc = 0, Bkeep = 0;
        char why[512];
        for (int k = 0; k < 6; k++) {
            TxChange x = change_of(0, TX_MOVE, &cfg, &s0, to[k], 3);
            o.half_duplex = k == 1;
            o.copy_rate = k == 3 || k == 5 ? 1e9 : 0;
            TxPlan P;
            if (tx_plan_build(&P, &x, 1, 2, &o, why, sizeof why) != 0) continue;
            t[k] = P.predicted_s;
            if (k == 0) B = (double)P.bytes_moved;
            if (k == 3) Bloc = (double)P.bytes_local;
            if (k == 5) Bkeep = (double)P.bytes_local;
            tx_plan_free(&P);
        }
        CHECK(B > 0 && fabs((t[0] - t[1]) - B / (2 * o.bandwidth)) < 1e-12 * (1 + t[0]),
              "half-duplex links: a one-way move of %.0f bytes predicted %.6g s, full-duplex %.6g s (want B / (2 bw) = "
              "%.6g s less)", B, t[1], t[0], B / (2 * o.bandwidth));
        CHECK(Bloc > 0 && fabs((t[3] - t[2]) - Bloc / 1e9) < 1e-12 * (1 + t[3]),
              "a re-cut keeping %.0f bytes on rank 0 adds them at 1 GB/s to the prediction: %.6g s (%.6g -> %.6g s)",
              Bloc, t[3] - t[2], t[2], t[3]);
        CHECK(Bkeep > 0 && t[5] == t[4] && t[4] > 0,
              "a scale-out keeping rank 0's whole shard (%.0f bytes, handed over, not copied) adds no copy time "
              "(%.6g and %.6g s)", Bkeep, t[4], t[5]);
    }

    /* scale: 32, 256, 1,024 ranks of an 8B-shaped actor and critic */
    GPTConfig big = {.V = 128256, .maxT = 8192, .L = 32, .C = 4096, .NH = 32, .value_head = 0};
    GPTConfig bigc = big;
    bigc.value_head = 1;
    int sizes[3] = {32, 256, 1024};
    for (int si = 0; si < 3; si++) {
        int N = sizes[si];
        static PlanStage o1, n1, o2, n2, o3, n3;
        int perm[1024];
        for (int i = 0; i < N; i++) perm[i] = i;
        /* actor.train tp8 pp4 dp(N/32) -> tp4 pp8 dp(N/32) on shuffled ranks; critic.train the same on
           the other order; actor.gen tp8 dp(N/8) -> tp4 dp(N/4) */
        o1 = (PlanStage){.src = PLAN_SRC_DECK, .tp = 8, .pp = 4, .dp = N / 32, .nranks = N};
        n1 = (PlanStage){.src = PLAN_SRC_DECK, .tp = 4, .pp = 8, .dp = N / 32, .nranks = N};
        o3 = (PlanStage){.src = PLAN_SRC_DECK, .tp = 8, .pp = 1, .dp = N / 8, .nranks = N};
        n3 = (PlanStage){.src = PLAN_SRC_DECK, .tp = 4, .pp = 1, .dp = N / 4, .nranks = N};
        for (int i = 0; i < N; i++) o1.ranks[i] = o3.ranks[i] = (int16_t)i;
        shuffle(perm, N);
        for (int i = 0; i < N; i++) n1.ranks[i] = n3.ranks[i] = (int16_t)perm[i];
        o2 = n1;
        n2 = o1;
        TxChange ch[3] = {change_of(2, TX_MOVE, &big, &o1, &n1, 3), change_of(5, TX_MOVE, &bigc, &o2, &n2, 3),
                          change_of(0, TX_MOVE, &big, &o3, &n3, 1)};
        double ts[7];
        TxPlan P;
        char why[512] = "";
        opt.budget = 0;
        opt.chunk = 4 << 20;
        opt.window = 64 << 20;
        int ok = 1, bad = 0;
        for (int k = 0; k < 7; k++) {
            double t0 = nr_now();
            int rc = tx_plan_build(&P, ch, 3, N, &opt, why, sizeof why);
            ts[k] = nr_now() - t0;
            if (rc) { ok = 0; break; }
            if (k == 6) bad = check_plan(&P, 1);
            else tx_plan_free(&P);
        }
        for (int x = 1; x < 7; x++)
            for (int y = x; y > 0 && ts[y] < ts[y - 1]; y--) { double t = ts[y]; ts[y] = ts[y - 1]; ts[y - 1] = t; }
        CHECK(ok && bad == 0, "%4d ranks, 8B actor+critic (Adam) and gen: DAG of %zu nodes, %zu slabs, %d wave(s) in %.3f ms "
              "(median of 7; goal <= 1.2 ms at 1024), moved %.1f GB = bound %.1f GB, predicted %.2f s%s%s",
              N, ok ? P.nnodes : 0, ok ? P.sl[0].nslabs + P.sl[1].nslabs + P.sl[2].nslabs : 0, ok ? P.nwaves : 0, ts[3] * 1e3,
              ok ? P.bytes_moved / 1e9 : 0, ok ? P.bytes_lower_bound / 1e9 : 0, ok ? P.predicted_s : 0, ok ? "" : why,
              bad ? " (structural check failed)" : "");
        if (ok) {
            /* what rank 0 then does before the scatter (tx_part_scatter): every rank's compact part and the
               geometry, median of 7; then what each rank does with its own (expands its refs into slabs):
               the slowest rank; at <= 256 ranks every unpacked part must equal tx_part_extract's */
            int *counts = calloc((size_t)N, sizeof *counts), *displs = calloc((size_t)N, sizeof *displs);
            char *all = NULL, *geo = NULL;
            size_t glen = 0;
            double tk[7];
            int prc = 0;
            for (int k = 0; k < 7; k++) {
                free(all);
                free(geo);
                double t0 = nr_now();
                prc |= tx_parts_pack(&P, N, &all, counts, displs);
                geo = tx_geometry_pack(&P, &glen);
                tk[k] = nr_now() - t0;
                prc |= !geo;
            }
            for (int x = 1; x < 7; x++)
                for (int y = x; y > 0 && tk[y] < tk[y - 1]; y--) { double t = tk[y]; tk[y] = tk[y - 1]; tk[y - 1] = t; }
            size_t bytes = glen;
            double tu = 0;
            int same = 1;
            for (int r = 0; prc == 0 && r < N; r++) {
                bytes += (size_t)counts[r];
                TxPart pt, ref;
                double t0 = nr_now();
                prc |= tx_part_unpack(all + displs[r], geo, &pt);
                double t = nr_now() - t0;
                tu = t > tu ? t : tu;
                if (prc == 0) {
                    prc |= tx_part_extract(&P, r, &ref);
                    same &= pt.nops == ref.nops && pt.nslabs == ref.nslabs && pt.mem_peak == ref.mem_peak &&
                            !memcmp(pt.ch, ref.ch, (size_t)pt.nchanges * sizeof *pt.ch) &&
                            !memcmp(pt.ops, ref.ops, (size_t)pt.nops * sizeof *pt.ops);
                    for (int64_t q = 0; same && q < pt.nslabs; q++) {
                        const Slab *u = &pt.slabs[q], *v = &ref.slabs[q];
                        same &= u->tensor == v->tensor && u->ndim == v->ndim && !memcmp(u->start, v->start, sizeof u->start) &&
                                !memcmp(u->count, v->count, sizeof u->count) && u->src_rank == v->src_rank &&
                                u->dst_rank == v->dst_rank && u->bytes == v->bytes && u->local == v->local;
                    }
                    tx_part_free(&ref);
                }
                tx_part_free(&pt);
            }
            free(all);
            free(geo);
            free(counts);
            free(displs);
            CHECK(prc == 0 && same, "%4d ranks: every rank's part packed in %.3f ms (median of 7; %.2f MiB to send), "
                  "unpacked by its rank in at most %.3f ms%s", N, tk[3] * 1e3, bytes / 1048576.0, tu * 1e3,
                  ", each equal to tx_part_extract's");
            printf("tx_dag_build_ms_%d: %.3f\n", N, ts[3] * 1e3);
            tx_plan_free(&P);
        }
    }
    /* forwarding where old holders are few: an 8B critic pp32 dp8 -> tp8 dp32 on the same 256 ranks (every new
       rank needs the whole tied wte, which 16 old ranks hold), with and without forwarding */
    {
        int N = 256;
        static PlanStage o, nw;
        o = (PlanStage){.src = PLAN_SRC_DECK, .tp = 1, .pp = 32, .dp = 8, .nranks = N};
        nw = (PlanStage){.src = PLAN_SRC_DECK, .tp = 8, .pp = 1, .dp = 32, .nranks = N};
        for (int i = 0; i < N; i++) o.ranks[i] = nw.ranks[i] = (int16_t)i;
        TxChange x = change_of(5, TX_MOVE, &bigc, &o, &nw, 3);
        double pred[2] = {0, 0}, maxout[2] = {0, 0}, relayed = 0;
        int ok = 1, hops = 0, bad = 0;
        for (int v = 0; v < 2; v++) {
            TxPlan P;
            char why[512];
            opt.no_relay = v;
            if (tx_plan_build(&P, &x, 1, N, &opt, why, sizeof why)) { ok = 0; continue; }
            pred[v] = P.predicted_s;
            for (int r = 0; r < N; r++) maxout[v] = (double)P.rank_out[r] > maxout[v] ? (double)P.rank_out[r] : maxout[v];
            if (v == 0) relayed = (double)P.bytes_relayed / (double)P.bytes_moved, hops = P.max_hop, bad = check_plan(&P, 1);
            tx_plan_free(&P);
        }
        opt.no_relay = 0;
        CHECK(ok && !bad && maxout[0] < 0.5 * maxout[1] && pred[0] < 0.5 * pred[1],
              "forwarding, 256 ranks, 8B critic pp32 dp8 -> tp8 dp32: busiest sender %.1f GB (without forwarding %.1f), "
              "predicted %.2f s (without %.2f); %.0f%% of the bytes forwarded, chains up to %d hops", maxout[0] / 1e9,
              maxout[1] / 1e9, pred[0], pred[1], 100 * relayed, hops);
    }
    return CHECK_DONE();
}
