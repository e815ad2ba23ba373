/* dag.c — the pure transition planner (transition.h): slabs of every
 * change, memory per rank, waves under the budget, the DAG with its
 * resource edges, the predicted time and the primitive report (each rank's
 * part of the plan: parts.c). No MPI.
 *
 * tx_plan_build runs its phases over one PlanBuild: pb_plan_change per
 * change (slabs, memory, report), pb_start_memory and pb_place_waves (the
 * memory waves: a change goes into the first wave where it fits, so
 * resource edges only run from earlier waves to later ones), pb_end_memory,
 * then the node pass: pb_count_nodes (indices and out-degrees first),
 * pb_link_forwards (a forward's feed is an earlier destination of the same
 * change, checked here), pb_count_resource_edges, and pb_emit_nodes (the
 * CSR arrays in (wave, change) order, the XFERs of a change by destination
 * then source: the order the executor posts in). */
#include "nereus/transition.h"
#include "nereus/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024.0 * 1024.0)


static int lsize(const PlanStage *s) { return s->tp * s->pp * s->dp; }

void tx_plan_free(TxPlan *P) {
    if (!P) return;
    for (int c = 0; c < P->nchanges && P->sl; c++) tx_slabs_free(&P->sl[c]);
    free(P->ch);
    free(P->sl);
    free(P->wave);
    free(P->prim);
    free(P->nodes);
    free(P->succ_off);
    free(P->succ);
    free(P->mem_old);
    free(P->mem_new);
    free(P->mem_start);
    free(P->mem_peak);
    free(P->mem_end);
    free(P->rank_in);
    free(P->rank_out);
    memset(P, 0, sizeof *P);
}

/* one pipeline stage's shard bytes: the whole shard, or (state) its params, m and v only — an old shard of a
   move, shed by the executor before anything is allocated (gpt_shed) */
static size_t shard_mem(const TxChange *c, const PlanStage *s, int p, int bmax, int state) {
    return state ? gpt_shard_state_bytes(&c->cfg, s->tp, s->pp, p, c->trainable)
                 : gpt_shard_bytes(&c->cfg, s->tp, s->pp, p, bmax, c->tmax, c->trainable);
}

/* bytes of each rank's shard of layout s (0 outside), per pipeline stage computed once */
static void layout_mem(const TxChange *c, const PlanStage *s, int bmax, int state, size_t *out, int nranks) {
    memset(out, 0, (size_t)nranks * sizeof *out);
    if (c->kind == TX_COPY) return;
    size_t per_p[64];
    int np = s->pp < 64 ? s->pp : 64;
    for (int p = 0; p < np; p++) per_p[p] = shard_mem(c, s, p, bmax, state);
    int n = lsize(s);
    for (int pos = 0; pos < n; pos++) {
        int p = pos / (s->tp * s->dp);
        out[plan_stage_rank(s, pos)] = p < 64 ? per_p[p] : shard_mem(c, s, p, bmax, state);
    }
}

static int change_order_cmp_ctx_tie(const TxChange *ch, int x, int y) {
    if (ch[x].tie != ch[y].tie) return ch[x].tie < ch[y].tie ? -1 : 1;
    if (ch[x].id != ch[y].id) return ch[x].id < ch[y].id ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* What a move adds at most on rank r while it runs, on top of what r holds (its old shard among it). The
 * executor stages the state buffer by buffer (exec.c): new buffer b comes once old buffer b - 1 is freed,
 * so with nb buffers of n (new) and o (old) bytes each the rank holds, over the old shard, at most
 * max over b of (b + 1) n - b o = max(n, N - O + o) (N, O: the whole new and old state). A rank without
 * the old shard, one buffer, or TxOptions.no_staging: all of N. */
static double staged_need(const TxPlan *P, int c, int r) {
    size_t nr = (size_t)P->nranks;
    double N = (double)P->mem_new[(size_t)c * nr + r], O = (double)P->mem_old[(size_t)c * nr + r];
    int nb = P->ch[c].nbufs;
    if (P->ch[c].kind != TX_MOVE || nb < 2 || O <= 0 || P->opt.no_staging) return N;
    double n = N / nb, o = O / nb, last = N - O + o;
    return n > last ? n : last;
}

/* ---- tx_plan_build: the planner's state and its phases ------------------------------------------------ */

/* What the phases of one tx_plan_build share: the plan being built, the caller's options, per change and
 * rank who is in which layout, the memory walk over the waves, and the node pass's tables. */
typedef struct PlanBuild {
    TxPlan *P;
    const TxOptions *opt;     /* the caller's (P->opt: the chunk rounded, resident dropped) */
    int n, nranks;
    size_t nr;
    char *why;
    size_t len;
    /* slabs and memory */
    char *in_from, *in_to;    /* (n · nranks) rank r in change c's old / new layout */
    char *moving;             /* (nranks) the rank moves or copies anything: it holds transfer buffers */
    size_t *load, *full;      /* (nranks) bytes each rank sends so far (all buffers); a layout's whole shards */
    double *work;             /* (nranks) what the new shards get beyond their state, at the end */
    /* memory waves */
    double budget, win;       /* bytes per rank (0: none); transfer buffers of a moving rank */
    double *cur, *acq;        /* (nranks) held before the wave; taken in the wave */
    int order[64];            /* changes in tie-break order */
    /* nodes */
    int corder[64];           /* changes in (wave, change) order */
    int *topos, *frompos;     /* (n · nranks) position of each rank in `to` / `from`, -1 */
    int *runs;                /* per (change, position of `to`): its runs (refs of one source) */
    size_t *rfirst;           /* per (change, position): its first run's index in the change */
    size_t *runs_off, *nruns, *rbase, *cbase; /* per change: into runs; its runs; its first run; its first node */
    size_t *fwd;              /* per run: the node that forwards it, or SIZE_MAX */
    size_t nnodes, nedges, nrun_all, ne;
    /* the current wave's time: per rank bytes in and out over links between nodes [0..nr) and inside a node
       [nr..2nr), messages, bytes copied locally, the longest forwarding chain into it */
    double *w_in, *w_out, *w_msg, *w_loc;
    int *w_hop;
    int ncomm;                /* changes that create communicators */
} PlanBuild;

static void pb_free(PlanBuild *b) {
    free(b->in_from); free(b->in_to); free(b->moving); free(b->cur); free(b->acq); free(b->load); free(b->full);
    free(b->work); free(b->w_in); free(b->w_out); free(b->w_msg); free(b->w_hop); free(b->w_loc);
    free(b->topos); free(b->frompos); free(b->cbase); free(b->runs); free(b->runs_off); free(b->nruns);
    free(b->rbase); free(b->fwd); free(b->rfirst);
}

/* The plan's arrays and the scratch tables of the slab and memory phases. */
static int pb_alloc(PlanBuild *b) {
    TxPlan *P = b->P;
    size_t nr = b->nr, nc = (size_t)(b->n ? b->n : 1);
    P->ch = calloc(nc, sizeof *P->ch);
    P->sl = calloc(nc, sizeof *P->sl);
    P->wave = calloc(nc, sizeof *P->wave);
    P->prim = calloc(nc, sizeof *P->prim);
    P->mem_old = calloc(nc * nr, sizeof *P->mem_old);
    P->mem_new = calloc(nc * nr, sizeof *P->mem_new);
    P->mem_start = calloc(nr, sizeof *P->mem_start);
    P->mem_peak = calloc(nr, sizeof *P->mem_peak);
    P->mem_end = calloc(nr, sizeof *P->mem_end);
    P->rank_in = calloc(nr, sizeof *P->rank_in);
    P->rank_out = calloc(nr, sizeof *P->rank_out);
    b->in_from = calloc(nc * nr, 1), b->in_to = calloc(nc * nr, 1), b->moving = calloc(nr, 1);
    b->cur = calloc(nr, sizeof *b->cur), b->acq = calloc(nr, sizeof *b->acq);
    b->w_in = calloc(2 * nr, sizeof *b->w_in), b->w_out = calloc(2 * nr, sizeof *b->w_out);
    b->w_msg = calloc(nr, sizeof *b->w_msg), b->w_loc = calloc(nr, sizeof *b->w_loc);
    b->w_hop = calloc(nr, sizeof *b->w_hop);
    b->load = calloc(nr, sizeof *b->load), b->full = calloc(nr, sizeof *b->full);
    b->work = calloc(nr, sizeof *b->work);
    if (!P->ch || !P->sl || !P->wave || !P->prim || !P->mem_old || !P->mem_new || !P->mem_start || !P->mem_peak ||
        !P->mem_end || !P->rank_in || !P->rank_out || !b->in_from || !b->in_to || !b->moving || !b->cur || !b->acq ||
        !b->load || !b->full || !b->work || !b->w_in || !b->w_out || !b->w_msg || !b->w_hop || !b->w_loc)
        return nr_fail(b->why, b->len, "transition: out of memory");
    return 0;
}

/* How change c is reported: Split / Merge from the unit's model-parallel size, Destroy / Extend ranks, and
 * its bytes by kind of destination. */
static void pb_primitives(PlanBuild *b, int c) {
    const TxChange *x = &b->P->ch[c];
    const TxSlabs *sp = &b->P->sl[c];
    const char *in_from = b->in_from + (size_t)c * b->nr, *in_to = b->in_to + (size_t)c * b->nr;
    TxPrimitives *pr = &b->P->prim[c];
    int mo = x->from.tp * x->from.pp, mn = x->to.tp * x->to.pp;
    pr->split = mn < mo || (mn == mo && (x->from.tp != x->to.tp));
    pr->merge = mn > mo || (mn == mo && (x->from.tp != x->to.tp));
    for (int r = 0; r < b->nranks; r++) {
        if (x->kind == TX_MOVE && in_from[r] && !in_to[r]) pr->destroy_ranks++;
        if (in_to[r] && !in_from[r]) pr->extend_ranks++;
    }
    size_t nb = (size_t)x->nbufs;
    for (size_t k = 0; k < sp->nref; k++) {
        const TxRef *f = &sp->ref[k];
        size_t bytes = sp->blk[f->block].bytes * nb;
        if (f->src == f->dst) pr->bytes_local += bytes, b->moving[f->dst] = 1; /* local copies: a chunk buffer */
        else if (in_from[f->dst]) pr->bytes_reshard += bytes;
        else pr->bytes_extend += bytes;
    }
}

/* Change c's slabs, its memory on every rank, its report, and its bytes in the plan's totals. Its sources
 * are balanced against what the earlier changes already send (load, all buffers). */
static int pb_plan_change(PlanBuild *b, int c) {
    TxPlan *P = b->P;
    const TxChange *x = &P->ch[c];
    size_t nr = b->nr;
    if (x->nbufs < 1 || x->nbufs > 3)
        return nr_fail(b->why, b->len, "transition change %d: %d buffers per element (1..3)", c, x->nbufs);
    char w2[256];
    if (tx_slabs_build_seeded(&P->sl[c], &x->cfg, &x->from, &x->to, b->nranks, b->load, P->rank_in,
                              (size_t)x->nbufs, b->opt->no_relay ? 0 : P->opt.chunk, w2, sizeof w2))
        return nr_fail(b->why, b->len, "transition change %d: %s", c, w2);
    const TxSlabs *sp = &P->sl[c];
    for (int pos = 0; pos < lsize(&x->from); pos++) b->in_from[(size_t)c * nr + plan_stage_rank(&x->from, pos)] = 1;
    for (int pos = 0; pos < lsize(&x->to); pos++) b->in_to[(size_t)c * nr + plan_stage_rank(&x->to, pos)] = 1;
    /* a move holds old and new state while it runs (the old shard shed, the new one built with its state
       only); the new shards are completed once every old one is freed (exec.c: gpt_shed, gpt_complete) */
    layout_mem(x, &x->from, x->bmax_from, 1, P->mem_old + (size_t)c * nr, b->nranks);
    layout_mem(x, &x->to, x->bmax_to, 1, P->mem_new + (size_t)c * nr, b->nranks);
    layout_mem(x, &x->to, x->bmax_to, 0, b->full, b->nranks);
    for (int r = 0; r < b->nranks; r++) b->work[r] += (double)b->full[r] - (double)P->mem_new[(size_t)c * nr + r];
    pb_primitives(b, c);
    size_t nb = (size_t)x->nbufs;
    P->bytes_moved += sp->bytes_moved * nb;
    P->bytes_relayed += sp->bytes_relayed * nb;
    P->bytes_lower_bound += sp->bytes_lower_bound * nb;
    P->bytes_local += sp->bytes_local * nb;
    for (int r = 0; r < b->nranks; r++) {
        P->rank_in[r] += sp->rank_in[r] * nb;
        P->rank_out[r] += sp->rank_out[r] * nb;
    }
    return 0;
}

/* What every rank holds before the first wave: both whole shards of every copy (held throughout), the
 * models outside the transition, and the old state of every move; refused when that, or that and the
 * transfer window of a rank that moves anything, is over the budget. */
static int pb_start_memory(PlanBuild *b) {
    TxPlan *P = b->P;
    size_t *held = malloc(b->nr * sizeof *held);
    if (!held) return nr_fail(b->why, b->len, "transition: out of memory");
    for (int c = 0; c < b->n; c++) {
        if (P->ch[c].kind != TX_COPY) continue;
        TxChange as_move = P->ch[c];
        as_move.kind = TX_MOVE;
        layout_mem(&as_move, &as_move.from, as_move.bmax_from, 0, held, b->nranks);
        for (int r = 0; r < b->nranks; r++) b->cur[r] += (double)held[r];
        layout_mem(&as_move, &as_move.to, as_move.bmax_to, 0, held, b->nranks);
        for (int r = 0; r < b->nranks; r++) b->cur[r] += (double)held[r];
    }
    free(held);
    for (int r = 0; r < b->nranks; r++) {
        b->cur[r] += b->opt->resident ? b->opt->resident[r] : 0.0;
        for (int c = 0; c < b->n; c++) b->cur[r] += (double)P->mem_old[(size_t)c * b->nr + r];
        P->mem_start[r] = b->cur[r];
        P->mem_peak[r] = b->cur[r];
        if (b->budget > 0 && b->cur[r] > b->budget)
            return nr_fail(b->why, b->len, "memory budget %.1f MiB too small for any schedule: rank %d already holds "
                           "%.1f MiB", b->budget / MIB, r, b->cur[r] / MIB);
        /* a rank that sends, receives or copies holds its transfer window from the first wave on, whether or not
           it takes a new shard then (the waves below check the ranks that do) */
        if (b->budget > 0 && b->moving[r] && b->cur[r] + b->win > b->budget)
            return nr_fail(b->why, b->len, "memory budget %.1f MiB too small for any schedule: rank %d holds %.1f MiB "
                           "and its transfers need %.0f KiB of window on top ([transition] window_kib + chunk_kib)",
                           b->budget / MIB, r, b->cur[r] / MIB, b->win / 1024);
    }
    return 0;
}

/* rank r's need with change c's new shard on top of what it holds (acq: what the wave takes already) */
static double pb_need(const PlanBuild *b, int c, int r, int with_wave) {
    return b->cur[r] + (with_wave ? b->acq[r] : 0) + staged_need(b->P, c, r) + (b->moving[r] ? b->win : 0);
}

/* Wave w: the pending changes, in tie-break order, whose every new rank still fits with the wave's new
 * shards added. Returns how many it took. */
static int pb_fill_wave(PlanBuild *b, int w) {
    TxPlan *P = b->P;
    memset(b->acq, 0, b->nr * sizeof *b->acq);
    int here = 0;
    for (int k = 0; k < b->n; k++) {
        int c = b->order[k];
        if (P->wave[c] >= 0) continue;
        int fits = 1;
        if (b->budget > 0)
            for (int pos = 0; pos < lsize(&P->ch[c].to) && fits; pos++)
                if (pb_need(b, c, plan_stage_rank(&P->ch[c].to, pos), 1) > b->budget) fits = 0;
        if (!fits) continue;
        P->wave[c] = w;
        here++;
        for (int pos = 0; pos < lsize(&P->ch[c].to); pos++) {
            int r = plan_stage_rank(&P->ch[c].to, pos);
            b->acq[r] += staged_need(P, c, r);
        }
    }
    return here;
}

/* Nothing pending fits a wave: the refusal names the first pending change's worst rank. */
static int pb_refuse_unplaced(PlanBuild *b) {
    TxPlan *P = b->P;
    for (int k = 0; k < b->n; k++) {
        int c = b->order[k];
        if (P->wave[c] >= 0) continue;
        int worst = -1;
        double over = 0;
        for (int pos = 0; pos < lsize(&P->ch[c].to); pos++) {
            int r = plan_stage_rank(&P->ch[c].to, pos);
            double need = pb_need(b, c, r, 0);
            if (worst < 0 || need - b->budget > over) { worst = r; over = need - b->budget; }
        }
        return nr_fail(b->why, b->len,
                       "memory budget %.1f MiB too small: no schedule fits change %d (stage %d): rank %d needs "
                       "%.1f MiB for its new shard and %.1f MiB of transfer window on top of %.1f MiB held",
                       b->budget / MIB, c, P->ch[c].id, worst, staged_need(P, c, worst) / MIB,
                       b->moving[worst] ? b->win / MIB : 0.0, b->cur[worst] / MIB);
    }
    return 0;
}

/* The memory waves: the changes in tie-break order (gen → inf → train, then stage id), each into the first
 * wave where it fits; each wave's peak recorded, then its new shards in and old ones out. */
static int pb_place_waves(PlanBuild *b) {
    TxPlan *P = b->P;
    int n = b->n;
    for (int c = 0; c < n; c++) b->order[c] = c;
    for (int a = 1; a < n; a++) /* insertion sort: at most 64 */
        for (int k = a; k > 0 && change_order_cmp_ctx_tie(P->ch, b->order[k], b->order[k - 1]) < 0; k--) {
            int t = b->order[k]; b->order[k] = b->order[k - 1]; b->order[k - 1] = t;
        }
    int placed = 0;
    for (int c = 0; c < n; c++) P->wave[c] = -1;
    for (int w = 0; placed < n; w++) {
        int here = pb_fill_wave(b, w);
        if (!here) return pb_refuse_unplaced(b);
        placed += here;
        for (int r = 0; r < b->nranks; r++) {
            double peak = b->cur[r] + b->acq[r] + (b->moving[r] ? b->win : 0);
            if (peak > P->mem_peak[r]) P->mem_peak[r] = peak;
        }
        for (int c = 0; c < n; c++) {
            if (P->wave[c] != w) continue;
            for (int r = 0; r < b->nranks; r++)
                b->cur[r] += (double)P->mem_new[(size_t)c * b->nr + r] - (double)P->mem_old[(size_t)c * b->nr + r];
        }
        P->nwaves = w + 1;
    }
    return 0;
}

/* The end: every old shard freed, the new ones completed — the new plan's models as the job holds them. */
static int pb_end_memory(PlanBuild *b) {
    TxPlan *P = b->P;
    for (int r = 0; r < b->nranks; r++) {
        double end = b->cur[r] + b->work[r];
        P->mem_end[r] = end;
        if (end > P->mem_peak[r]) P->mem_peak[r] = end;
        if (b->budget > 0 && end > b->budget)
            return nr_fail(b->why, b->len, "memory budget %.1f MiB too small: rank %d holds %.1f MiB once the new "
                           "shards are complete (the new plan's models alone)", b->budget / MIB, r, end / MIB);
    }
    return 0;
}

/* the first node of change c's runs (COPY / XFER): after its COMM, ALLOCs, COMMITs and FREEs */
static size_t pb_run0(const PlanBuild *b, int c) {
    const TxChange *x = &b->P->ch[c];
    int move = x->kind == TX_MOVE, nto = lsize(&x->to), nfrom = lsize(&x->from);
    return b->cbase[c] + (size_t)(move ? 1 + nto : 0) + (size_t)nto + (size_t)(move ? nfrom : 0);
}

/* Node counting, per change in (wave, change) order: each rank's position in its layouts, the runs of
 * each destination (its refs of one source: one COPY or XFER node), each change's first node, and the
 * edges: COMM → ALLOCs, ALLOC → runs, run → COMMIT, run → FREE of its source. */
static int pb_count_nodes(PlanBuild *b) {
    TxPlan *P = b->P;
    int n = b->n;
    size_t nr = b->nr, nc = (size_t)(n ? n : 1);
    for (int c = 0; c < n; c++) b->corder[c] = c;
    for (int a = 1; a < n; a++)
        for (int k = a; k > 0 && (P->wave[b->corder[k]] < P->wave[b->corder[k - 1]] ||
                                  (P->wave[b->corder[k]] == P->wave[b->corder[k - 1]] &&
                                   b->corder[k] < b->corder[k - 1]));
             k--) {
            int t = b->corder[k]; b->corder[k] = b->corder[k - 1]; b->corder[k - 1] = t;
        }
    b->topos = malloc(nc * nr * sizeof *b->topos), b->frompos = malloc(nc * nr * sizeof *b->frompos);
    b->cbase = malloc((nc + 1) * sizeof *b->cbase);
    size_t nto_all = 0;
    for (int c = 0; c < n; c++) nto_all += (size_t)lsize(&P->ch[c].to);
    b->runs = malloc((nto_all + 1) * sizeof *b->runs);
    b->rfirst = malloc((nto_all + 1) * sizeof *b->rfirst);
    b->runs_off = malloc((nc + 1) * sizeof *b->runs_off), b->nruns = malloc((nc + 1) * sizeof *b->nruns);
    b->rbase = malloc((nc + 1) * sizeof *b->rbase);
    if (!b->topos || !b->frompos || !b->cbase || !b->runs || !b->runs_off || !b->nruns || !b->rbase || !b->rfirst)
        return nr_fail(b->why, b->len, "transition: out of memory");
    for (size_t k = 0; k < nc * nr; k++) b->topos[k] = b->frompos[k] = -1;
    for (int k = 0, ro = 0; k < n; k++) {
        int c = b->corder[k], move = P->ch[c].kind == TX_MOVE;
        const TxChange *x = &P->ch[c];
        const TxSlabs *sp = &P->sl[c];
        int nto = lsize(&x->to), nfrom = lsize(&x->from);
        for (int pos = 0; pos < nto; pos++) b->topos[(size_t)c * nr + plan_stage_rank(&x->to, pos)] = pos;
        for (int pos = 0; pos < nfrom; pos++) b->frompos[(size_t)c * nr + plan_stage_rank(&x->from, pos)] = pos;
        b->runs_off[c] = (size_t)ro;
        size_t nr_c = 0;
        for (int pos = 0; pos < nto; pos++) {
            int m = 0;
            for (size_t q = sp->ref_off[pos]; q < sp->ref_off[pos + 1]; q++)
                m += q == sp->ref_off[pos] || sp->ref[q].src != sp->ref[q - 1].src;
            b->rfirst[ro] = nr_c;
            b->runs[ro++] = m;
            nr_c += (size_t)m;
        }
        b->nruns[c] = nr_c;
        b->rbase[c] = b->nrun_all;
        b->nrun_all += nr_c;
        b->cbase[c] = b->nnodes;
        b->nnodes += (size_t)(move ? 1 + nto : 0) + (size_t)nto + (size_t)(move ? nfrom : 0) + nr_c;
        b->nedges += (move ? (size_t)nto + nr_c : 0) + nr_c + (move ? nr_c : 0);
    }
    return 0;
}

/* Forwards: the run forwarded (feed → source, at the source's position) gets an edge to the forwarding
 * run (fwd); a forward out of a move drops its FREE edge. The run forwarded must come from an earlier
 * destination: the order the deadlock argument needs. */
static int pb_link_forwards(PlanBuild *b) {
    TxPlan *P = b->P;
    size_t nr = b->nr;
    b->fwd = malloc((b->nrun_all + 1) * sizeof *b->fwd);
    if (!b->fwd) return nr_fail(b->why, b->len, "transition: out of memory");
    for (size_t q = 0; q < b->nrun_all; q++) b->fwd[q] = SIZE_MAX;
    for (int c = 0; c < b->n; c++) {
        const TxChange *x = &P->ch[c];
        const TxSlabs *sp = &P->sl[c];
        if (sp->bytes_relayed == 0) continue; /* no forwards in this change */
        int move = x->kind == TX_MOVE, nto = lsize(&x->to);
        size_t run0 = pb_run0(b, c);
        for (int pos = 0; pos < nto; pos++)
            for (size_t q = sp->ref_off[pos], jr = b->rfirst[b->runs_off[c] + (size_t)pos]; q < sp->ref_off[pos + 1];
                 q++) {
                int first = q == sp->ref_off[pos] || sp->ref[q].src != sp->ref[q - 1].src;
                jr += first && q > sp->ref_off[pos];
                if (!first || sp->ref[q].feed < 0) continue;
                /* the forwarder's run from feed */
                int p1 = b->topos[(size_t)c * nr + sp->ref[q].src];
                size_t q1 = p1 >= 0 ? sp->ref_off[p1] : 0, e1 = p1 >= 0 ? sp->ref_off[p1 + 1] : 0;
                size_t j1 = p1 >= 0 ? b->rfirst[b->runs_off[c] + (size_t)p1] : 0;
                for (; q1 < e1; q1++) {
                    j1 += q1 > sp->ref_off[p1] && sp->ref[q1].src != sp->ref[q1 - 1].src;
                    if (sp->ref[q1].src == sp->ref[q].feed) break;
                }
                if (q1 == e1 || p1 >= pos)
                    return nr_fail(b->why, b->len, "transition: change %d: rank %d forwards what it does not receive "
                                   "from rank %d before (a bug)", c, sp->ref[q].src, sp->ref[q].feed);
                b->fwd[b->rbase[c] + j1] = run0 + jr;
                b->nedges += 1 - (size_t)move; /* the feed edge; a move drops the FREE edge */
            }
    }
    return 0;
}

/* Resource edges FREE(c2, r) → ALLOC(c, r) where wave(c2) < wave(c), both moves: counted. */
static void pb_count_resource_edges(PlanBuild *b) {
    TxPlan *P = b->P;
    if (P->nwaves <= 1) return;
    for (int c = 0; c < b->n; c++) {
        if (P->ch[c].kind != TX_MOVE || P->wave[c] == 0) continue;
        for (int c2 = 0; c2 < b->n; c2++) {
            if (P->ch[c2].kind != TX_MOVE || P->wave[c2] >= P->wave[c]) continue;
            for (int pos = 0; pos < lsize(&P->ch[c].to); pos++)
                b->nedges += b->frompos[(size_t)c2 * b->nr + plan_stage_rank(&P->ch[c].to, pos)] >= 0;
        }
    }
}

/* a node, its edges (pb_edge) and the end of its edge list (pb_node_done) */
static void pb_node(PlanBuild *b, TxNode d) { b->P->nodes[b->P->nnodes++] = d; }
static void pb_edge(PlanBuild *b, size_t to) { b->P->succ[b->ne++] = (int)to; }
static void pb_node_done(PlanBuild *b) { b->P->succ_off[b->P->nnodes] = b->ne; }

/* The wave just emitted adds its time: per rank the busier direction of its node's link and of the
 * network (the slower of the two), its messages' latency, a chunk per hop of its forwarding chain and its
 * local copies; the slowest rank's time. The wave's tallies start again. */
static void pb_close_wave_time(PlanBuild *b) {
    const TxOptions *opt = b->opt;
    size_t nr = b->nr;
    double t = 0, chunk = (double)b->P->opt.chunk;
    for (int r = 0; r < b->nranks; r++) {
        double bx = fmax(b->w_in[r], b->w_out[r]), bi = fmax(b->w_in[nr + r], b->w_out[nr + r]);
        if (opt->half_duplex) bx = 0.5 * (b->w_in[r] + b->w_out[r]), bi = 0.5 * (b->w_in[nr + r] + b->w_out[nr + r]);
        double bw_in = opt->bandwidth_intra > 0 ? opt->bandwidth_intra : opt->bandwidth;
        /* a forwarding chain delays the end by a chunk a hop (the chunks are pipelined along it) */
        double tr = fmax(bx / opt->bandwidth, bi / bw_in) + b->w_msg[r] * opt->latency +
                    b->w_hop[r] * (chunk / opt->bandwidth + opt->latency);
        /* the slabs a rank keeps: copied by the same rank (core, or device) that drives its transfers */
        if (opt->copy_rate > 0) tr += b->w_loc[r] / opt->copy_rate;
        if (tr > t) t = tr;
    }
    b->P->predicted_s += t;
    memset(b->w_in, 0, 2 * nr * sizeof *b->w_in);
    memset(b->w_out, 0, 2 * nr * sizeof *b->w_out);
    memset(b->w_msg, 0, nr * sizeof *b->w_msg);
    memset(b->w_hop, 0, nr * sizeof *b->w_hop);
    memset(b->w_loc, 0, nr * sizeof *b->w_loc);
}

/* A run's bytes in its wave's time: a local copy (unless the rank takes its old shard whole), or its
 * messages over the node's link or the network. */
static void pb_tally_run(PlanBuild *b, int c, int pos, size_t s0, size_t s1, size_t bytes) {
    const TxChange *x = &b->P->ch[c];
    const TxSlabs *sp = &b->P->sl[c];
    const TxRef *a = &sp->ref[s0];
    int src = a->src, dst = a->dst, local = src == dst;
    size_t chunk = b->P->opt.chunk, nr = b->nr;
    /* a rank whose new shard is all its old one (every ref local, the same tp and pp: the same slice) takes
       the old buffers (exec.c: gpt_swap_state) and copies nothing */
    int swap = local && x->kind == TX_MOVE && s0 == sp->ref_off[pos] && s1 == sp->ref_off[pos + 1] &&
               x->from.tp == x->to.tp && x->from.pp == x->to.pp;
    if (local && !swap) b->w_loc[src] += (double)bytes;
    if (local) return;
    size_t msgs = (bytes + chunk - 1) / chunk;
    b->P->messages += msgs;
    int intra = b->opt->ranks_per_node > 0 && src / b->opt->ranks_per_node == dst / b->opt->ranks_per_node;
    b->w_out[(intra ? nr : 0) + (size_t)src] += (double)bytes;
    b->w_in[(intra ? nr : 0) + (size_t)dst] += (double)bytes;
    b->w_msg[src] += (double)msgs;
    b->w_msg[dst] += (double)msgs;
    if (a->hop > b->w_hop[dst]) b->w_hop[dst] = a->hop; /* a run's refs share one hop (one stream) */
    if (a->hop > b->P->max_hop) b->P->max_hop = a->hop;
}

/* Change c's COPY and XFER nodes over its refs (by destination, local first, grouped by source): runs of
 * equal (src, dst), each with its edges to the destination's COMMIT, the source's FREE (not a forward's)
 * and the forward that sends it on. */
static void pb_emit_runs(PlanBuild *b, int c, int w) {
    const TxChange *x = &b->P->ch[c];
    const TxSlabs *sp = &b->P->sl[c];
    int move = x->kind == TX_MOVE, nto = lsize(&x->to);
    size_t nb = (size_t)x->nbufs, commit0 = b->cbase[c] + (move ? 1 + (size_t)nto : 0), free0 = commit0 + (size_t)nto;
    size_t jrun = 0; /* the change's runs in node order */
    for (int pos = 0; pos < nto; pos++)
        for (size_t s0 = sp->ref_off[pos], s1; s0 < sp->ref_off[pos + 1]; s0 = s1) {
            const TxRef *a = &sp->ref[s0];
            size_t bytes = sp->blk[a->block].bytes;
            for (s1 = s0 + 1; s1 < sp->ref_off[pos + 1] && sp->ref[s1].src == a->src; s1++)
                bytes += sp->blk[sp->ref[s1].block].bytes;
            bytes *= nb;
            int local = a->src == a->dst;
            pb_node(b, (TxNode){local ? TXN_COPY : TXN_XFER, c, a->src, local ? -1 : a->dst, w, a->feed, s0, s1 - s0,
                                bytes});
            pb_edge(b, commit0 + (size_t)pos);
            if (move && a->feed < 0) pb_edge(b, free0 + (size_t)b->frompos[(size_t)c * b->nr + a->src]);
            if (b->fwd[b->rbase[c] + jrun] != SIZE_MAX) pb_edge(b, b->fwd[b->rbase[c] + jrun]);
            jrun++;
            pb_node_done(b);
            pb_tally_run(b, c, pos, s0, s1, bytes);
        }
}

/* Change c's nodes in wave w: COMM → its ALLOCs → the runs into each; the COMMITs; the FREEs, each with
 * its resource edges to the ALLOCs of later waves on its rank (in change order); then the runs. */
static void pb_emit_change(PlanBuild *b, int c, int w) {
    TxPlan *P = b->P;
    const TxChange *x = &P->ch[c];
    int move = x->kind == TX_MOVE, nto = lsize(&x->to), nfrom = lsize(&x->from);
    size_t alloc0 = b->cbase[c] + 1, run0 = pb_run0(b, c);
    const int *rn = b->runs + b->runs_off[c];
    if (move) {
        pb_node(b, (TxNode){TXN_COMM, c, -1, -1, w, -1, 0, 0, 0});
        for (int pos = 0; pos < nto; pos++) pb_edge(b, alloc0 + (size_t)pos);
        pb_node_done(b);
        b->ncomm += !x->comm_shared;
        for (int pos = 0, j = 0; pos < nto; j += rn[pos], pos++) {
            pb_node(b, (TxNode){TXN_ALLOC, c, plan_stage_rank(&x->to, pos), -1, w, -1, 0, 0, 0});
            for (int q = 0; q < rn[pos]; q++) pb_edge(b, run0 + (size_t)(j + q));
            pb_node_done(b);
        }
    }
    for (int pos = 0; pos < nto; pos++) {
        pb_node(b, (TxNode){TXN_COMMIT, c, plan_stage_rank(&x->to, pos), -1, w, -1, 0, 0, 0});
        pb_node_done(b);
    }
    for (int pos = 0; move && pos < nfrom; pos++) {
        int r = plan_stage_rank(&x->from, pos);
        pb_node(b, (TxNode){TXN_FREE, c, r, -1, w, -1, 0, 0, 0});
        for (int c2 = 0; P->nwaves > 1 && c2 < b->n; c2++) {
            int tp2 = b->topos[(size_t)c2 * b->nr + r];
            if (P->ch[c2].kind != TX_MOVE || P->wave[c2] <= w || tp2 < 0) continue;
            pb_edge(b, b->cbase[c2] + 1 + (size_t)tp2);
        }
        pb_node_done(b);
    }
    pb_emit_runs(b, c, w);
}

/* The nodes and edges straight into the CSR arrays, change by change in (wave, change) order (every node's
 * index and out-degree is known from the counting), each wave's time added as it closes, then the set-up
 * of the new communicators. */
static int pb_emit_nodes(PlanBuild *b) {
    TxPlan *P = b->P;
    P->nodes = malloc((b->nnodes ? b->nnodes : 1) * sizeof *P->nodes);
    P->succ_off = malloc((b->nnodes + 1) * sizeof *P->succ_off);
    P->succ = malloc((b->nedges ? b->nedges : 1) * sizeof *P->succ);
    if (!P->nodes || !P->succ_off || !P->succ) return nr_fail(b->why, b->len, "transition: out of memory");
    P->succ_off[0] = 0;
    int cur_wave = -1;
    for (int k = 0; k <= b->n; k++) {
        int c = k < b->n ? b->corder[k] : -1;
        int w = c >= 0 ? P->wave[c] : -2;
        if (w != cur_wave && cur_wave >= 0) pb_close_wave_time(b);
        if (c < 0) break;
        cur_wave = w;
        pb_emit_change(b, c, w);
    }
    P->predicted_s += b->ncomm * b->opt->comm_setup;
    if (P->nnodes != b->nnodes || b->ne != b->nedges)
        return nr_fail(b->why, b->len, "transition: DAG of %zu nodes, %zu edges where %zu, %zu were counted (a bug)",
                       P->nnodes, b->ne, b->nnodes, b->nedges);
    return 0;
}

int tx_plan_build(TxPlan *P, const TxChange *ch, int n, int nranks, const TxOptions *opt, char *why, size_t len) {
    memset(P, 0, sizeof *P);
    if (n < 0 || n > 64) return nr_fail(why, len, "transition: %d changes (at most 64)", n);
    if (nranks < 1) return nr_fail(why, len, "transition: %d job ranks", nranks);
    if (opt->chunk < 4 || opt->window < opt->chunk)
        return nr_fail(why, len, "transition: chunk %zu bytes and window %zu bytes (need chunk >= 4, window >= chunk)",
                       opt->chunk, opt->window);
    P->opt = *opt;
    P->opt.chunk = opt->chunk / 4 * 4;
    P->opt.resident = NULL;
    P->nranks = nranks;
    P->nchanges = n;
    PlanBuild b = {.P = P, .opt = opt, .n = n, .nranks = nranks, .nr = (size_t)nranks, .why = why, .len = len,
                   .budget = opt->budget, .win = (double)opt->window + (double)P->opt.chunk};
    int rc = pb_alloc(&b);
    if (!rc && n) memcpy(P->ch, ch, (size_t)n * sizeof *ch);
    for (int c = 0; !rc && c < n; c++) rc = pb_plan_change(&b, c);
    /* ranks that move or copy anything hold transfer buffers: the window, plus one chunk for local copies */
    for (int r = 0; !rc && r < nranks; r++) b.moving[r] |= P->rank_in[r] > 0 || P->rank_out[r] > 0;
    if (!rc) rc = pb_start_memory(&b);
    if (!rc) rc = pb_place_waves(&b);
    if (!rc) rc = pb_end_memory(&b);
    if (!rc) rc = pb_count_nodes(&b);
    if (!rc) rc = pb_link_forwards(&b);
    if (!rc) pb_count_resource_edges(&b);
    if (!rc) rc = pb_emit_nodes(&b);
    pb_free(&b);
    if (rc) tx_plan_free(P);
    return rc;
}

int tx_plan_format(const TxPlan *P, const char *const *names, char *buf, size_t len) {
    size_t o = 0;
    if (len) buf[0] = 0;
#define OUT(...) do { int k_ = snprintf(buf + (o < len ? o : len), o < len ? len - o : 0, __VA_ARGS__); if (k_ > 0) o += (size_t)k_; } while (0)
    for (int c = 0; c < P->nchanges; c++) {
        const TxChange *x = &P->ch[c];
        const TxPrimitives *pr = &P->prim[c];
        char a[96], b[96];
        plan_stage_format(&x->from, a, sizeof a);
        plan_stage_format(&x->to, b, sizeof b);
        OUT("  %-13s %s -> %s  wave %d:", names && names[c] ? names[c] : "?", a, b, P->wave[c]);
        int any = 0;
        if (pr->split) { OUT(" Split"); any = 1; }
        if (pr->destroy_ranks) { OUT("%s Destroy %d rank%s", any ? " ->" : "", pr->destroy_ranks, pr->destroy_ranks == 1 ? "" : "s"); any = 1; }
        if (pr->extend_ranks) { OUT("%s Extend %d rank%s %.2f MiB", any ? " ->" : "", pr->extend_ranks, pr->extend_ranks == 1 ? "" : "s", pr->bytes_extend / MIB); any = 1; }
        if (pr->merge) { OUT("%s Merge", any ? " ->" : ""); any = 1; }
        if (!any) OUT(" re-place");
        OUT("; resharded %.2f MiB, kept in place %.2f MiB%s\n", pr->bytes_reshard / MIB, pr->bytes_local / MIB,
            x->kind == TX_COPY ? " (copy)" : "");
    }
#undef OUT
    return (int)o;
}
