/* dag.c — the pure transition planner (transition.h): slabs of every
 * change, memory per rank, waves under the budget, the DAG with its
 * resource edges, the predicted time, the primitive report, and each rank's
 * part. No MPI. */
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
    size_t nr = (size_t)nranks, nc = (size_t)(n ? n : 1);
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
    char *in_from = calloc(nc * nr, 1), *in_to = calloc(nc * nr, 1), *moving = calloc(nr, 1);
    double *cur = calloc(nr, sizeof *cur), *acq = calloc(nr, sizeof *acq);
    int *order = calloc(nc, sizeof *order);
    /* the node pass's per-change tables (below; freed at done) */
    int *topos = NULL, *frompos = NULL, *runs = NULL;
    size_t *cbase = NULL, *rfirst = NULL, *runs_off = NULL, *nruns = NULL, *rbase = NULL, *fwd = NULL;
    /* per rank in the current wave: bytes in and out over links between nodes [0..nr) and inside a node [nr..2nr) */
    double *w_in = calloc(2 * nr, sizeof *w_in), *w_out = calloc(2 * nr, sizeof *w_out), *w_msg = calloc(nr, sizeof *w_msg);
    double *w_loc = calloc(nr, sizeof *w_loc); /* per rank in the current wave: bytes copied locally */
    int *w_hop = calloc(nr, sizeof *w_hop); /* per rank in the current wave: the longest forwarding chain into it */
    size_t *load = calloc(nr, sizeof *load), *full = calloc(nr, sizeof *full);
    double *work = calloc(nr, sizeof *work); /* per rank: what the new shards get beyond their state, at the end */
    int rc = 0;
    if (!P->ch || !P->sl || !P->wave || !P->prim || !P->mem_old || !P->mem_new || !P->mem_start || !P->mem_peak || !P->mem_end ||
        !P->rank_in || !P->rank_out || !in_from || !in_to || !moving || !cur || !acq || !order || !load || !full || !work || !w_in || !w_out ||
        !w_msg || !w_hop || !w_loc) {
        rc = nr_fail(why, len, "transition: out of memory");
        goto done;
    }
    if (n) memcpy(P->ch, ch, (size_t)n * sizeof *ch);

    /* ---- slabs, memory, primitives ---- */
    for (int c = 0; c < n; c++) {
        const TxChange *x = &P->ch[c];
        if (x->nbufs < 1 || x->nbufs > 3) {
            rc = nr_fail(why, len, "transition change %d: %d buffers per element (1..3)", c, x->nbufs);
            goto done;
        }
        char w2[256];
        /* sources balanced against what the earlier changes already send (P->rank_out, all buffers) */
        if (tx_slabs_build_seeded(&P->sl[c], &x->cfg, &x->from, &x->to, nranks, load, P->rank_in, (size_t)x->nbufs,
                                  opt->no_relay ? 0 : P->opt.chunk, w2, sizeof w2)) {
            rc = nr_fail(why, len, "transition change %d: %s", c, w2);
            goto done;
        }
        TxSlabs *sp = &P->sl[c];
        for (int pos = 0; pos < lsize(&x->from); pos++) in_from[(size_t)c * nr + plan_stage_rank(&x->from, pos)] = 1;
        for (int pos = 0; pos < lsize(&x->to); pos++) in_to[(size_t)c * nr + plan_stage_rank(&x->to, pos)] = 1;
        /* a move holds old and new state while it runs (the old shard shed, the new one built with its state
           only); the new shards are completed once every old one is freed (exec.c: gpt_shed, gpt_complete) */
        layout_mem(x, &x->from, x->bmax_from, 1, P->mem_old + (size_t)c * nr, nranks);
        layout_mem(x, &x->to, x->bmax_to, 1, P->mem_new + (size_t)c * nr, nranks);
        layout_mem(x, &x->to, x->bmax_to, 0, full, nranks);
        for (int r = 0; r < nranks; r++) work[r] += (double)full[r] - (double)P->mem_new[(size_t)c * nr + r];
        TxPrimitives *pr = &P->prim[c];
        int mo = x->from.tp * x->from.pp, mn = x->to.tp * x->to.pp;
        pr->split = mn < mo || (mn == mo && (x->from.tp != x->to.tp));
        pr->merge = mn > mo || (mn == mo && (x->from.tp != x->to.tp));
        for (int r = 0; r < nranks; r++) {
            if (x->kind == TX_MOVE && in_from[(size_t)c * nr + r] && !in_to[(size_t)c * nr + r]) pr->destroy_ranks++;
            if (in_to[(size_t)c * nr + r] && !in_from[(size_t)c * nr + r]) pr->extend_ranks++;
        }
        size_t nb = (size_t)x->nbufs;
        for (size_t k = 0; k < sp->nref; k++) {
            const TxRef *f = &sp->ref[k];
            size_t b = sp->blk[f->block].bytes * nb;
            if (f->src == f->dst) pr->bytes_local += b, moving[f->dst] = 1; /* local copies: a chunk buffer */
            else if (in_from[(size_t)c * nr + f->dst]) pr->bytes_reshard += b;
            else pr->bytes_extend += b;
        }
        P->bytes_moved += sp->bytes_moved * nb;
        P->bytes_relayed += sp->bytes_relayed * nb;
        P->bytes_lower_bound += sp->bytes_lower_bound * nb;
        P->bytes_local += sp->bytes_local * nb;
        for (int r = 0; r < nranks; r++) {
            P->rank_in[r] += sp->rank_in[r] * nb;
            P->rank_out[r] += sp->rank_out[r] * nb;
        }
    }
    /* ranks that move or copy anything hold transfer buffers: the window, plus one chunk for local copies */
    for (int r = 0; r < nranks; r++) moving[r] |= P->rank_in[r] > 0 || P->rank_out[r] > 0;

    /* ---- memory waves ---- */
    double budget = opt->budget, win = (double)opt->window + (double)P->opt.chunk;
    /* a copy's two shards are held throughout: resident, like the models outside the transition */
    size_t *held = malloc(nr * sizeof *held);
    if (!held) {
        rc = nr_fail(why, len, "transition: out of memory");
        goto done;
    }
    for (int c = 0; c < n; c++) {
        if (P->ch[c].kind != TX_COPY) continue;
        TxChange as_move = P->ch[c];
        as_move.kind = TX_MOVE;
        layout_mem(&as_move, &as_move.from, as_move.bmax_from, 0, held, nranks);
        for (int r = 0; r < nranks; r++) cur[r] += (double)held[r];
        layout_mem(&as_move, &as_move.to, as_move.bmax_to, 0, held, nranks);
        for (int r = 0; r < nranks; r++) cur[r] += (double)held[r];
    }
    free(held);
    for (int r = 0; r < nranks; r++) {
        cur[r] += opt->resident ? opt->resident[r] : 0.0;
        for (int c = 0; c < n; c++) cur[r] += (double)P->mem_old[(size_t)c * nr + r];
        P->mem_start[r] = cur[r];
        P->mem_peak[r] = cur[r];
        if (budget > 0 && cur[r] > budget) {
            rc = nr_fail(why, len, "memory budget %.1f MiB too small for any schedule: rank %d already holds %.1f MiB",
                      budget / MIB, r, cur[r] / MIB);
            goto done;
        }
        /* a rank that sends, receives or copies holds its transfer window from the first wave on, whether or not
           it takes a new shard then (the waves below check the ranks that do) */
        if (budget > 0 && moving[r] && cur[r] + win > budget) {
            rc = nr_fail(why, len, "memory budget %.1f MiB too small for any schedule: rank %d holds %.1f MiB and "
                         "its transfers need %.0f KiB of window on top ([transition] window_kib + chunk_kib)",
                         budget / MIB, r, cur[r] / MIB, win / 1024);
            goto done;
        }
    }
    for (int c = 0; c < n; c++) order[c] = c;
    for (int a = 1; a < n; a++) /* insertion sort: at most 64 */
        for (int b = a; b > 0 && change_order_cmp_ctx_tie(P->ch, order[b], order[b - 1]) < 0; b--) {
            int t = order[b]; order[b] = order[b - 1]; order[b - 1] = t;
        }
    int placed = 0;
    for (int c = 0; c < n; c++) P->wave[c] = -1;
    for (int w = 0; placed < n; w++) {
        memset(acq, 0, nr * sizeof *acq);
        int here = 0;
        for (int k = 0; k < n; k++) {
            int c = order[k];
            if (P->wave[c] >= 0) continue;
            int fits = 1;
            if (budget > 0)
                for (int pos = 0; pos < lsize(&P->ch[c].to) && fits; pos++) {
                    int r = plan_stage_rank(&P->ch[c].to, pos);
                    double need = cur[r] + acq[r] + staged_need(P, c, r) + (moving[r] ? win : 0);
                    if (need > budget) fits = 0;
                }
            if (!fits) continue;
            P->wave[c] = w;
            here++;
            placed++;
            for (int pos = 0; pos < lsize(&P->ch[c].to); pos++) {
                int r = plan_stage_rank(&P->ch[c].to, pos);
                acq[r] += staged_need(P, c, r);
            }
        }
        if (!here) { /* nothing pending fits: report the first pending change's worst rank */
            for (int k = 0; k < n; k++) {
                int c = order[k];
                if (P->wave[c] >= 0) continue;
                int worst = -1;
                double over = 0;
                for (int pos = 0; pos < lsize(&P->ch[c].to); pos++) {
                    int r = plan_stage_rank(&P->ch[c].to, pos);
                    double need = cur[r] + staged_need(P, c, r) + (moving[r] ? win : 0);
                    if (worst < 0 || need - budget > over) { worst = r; over = need - budget; }
                }
                rc = nr_fail(why, len,
                          "memory budget %.1f MiB too small: no schedule fits change %d (stage %d): rank %d needs "
                          "%.1f MiB for its new shard and %.1f MiB of transfer window on top of %.1f MiB held",
                          budget / MIB, c, P->ch[c].id, worst, staged_need(P, c, worst) / MIB,
                          moving[worst] ? win / MIB : 0.0, cur[worst] / MIB);
                goto done;
            }
        }
        for (int r = 0; r < nranks; r++) {
            double peak = cur[r] + acq[r] + (moving[r] ? win : 0);
            if (peak > P->mem_peak[r]) P->mem_peak[r] = peak;
        }
        for (int c = 0; c < n; c++) {
            if (P->wave[c] != w) continue;
            for (int r = 0; r < nranks; r++)
                cur[r] += (double)P->mem_new[(size_t)c * nr + r] - (double)P->mem_old[(size_t)c * nr + r];
        }
        P->nwaves = w + 1;
    }
    /* the end: every old shard freed, the new ones completed — the new plan's models as the job holds them */
    for (int r = 0; r < nranks; r++) {
        double end = cur[r] + work[r];
        P->mem_end[r] = end;
        if (end > P->mem_peak[r]) P->mem_peak[r] = end;
        if (budget > 0 && end > budget) {
            rc = nr_fail(why, len, "memory budget %.1f MiB too small: rank %d holds %.1f MiB once the new shards are "
                         "complete (the new plan's models alone)", budget / MIB, r, end / MIB);
            goto done;
        }
    }

    /* ---- nodes: per change (in (wave, change) order) COMM, ALLOC, COMMIT, FREE, then COPY / XFER ----
     * Every node's index and out-degree is known before it is written (the runs of each destination's
     * refs are counted first), so the edges go straight into the CSR arrays in node order: COMM → its
     * ALLOCs; ALLOC → the COPY / XFER nodes into its rank; COPY / XFER → COMMIT of the destination and
     * FREE of the source; FREE → the ALLOCs of later waves on its rank (resource edges). */
    int corder[64];
    for (int c = 0; c < n; c++) corder[c] = c;
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && (P->wave[corder[b]] < P->wave[corder[b - 1]] ||
                                  (P->wave[corder[b]] == P->wave[corder[b - 1]] && corder[b] < corder[b - 1]));
             b--) {
            int t = corder[b]; corder[b] = corder[b - 1]; corder[b - 1] = t;
        }
    /* per change: position of each rank in `to` / `from` (-1), runs per destination position, node bases */
    topos = malloc(nc * nr * sizeof *topos), frompos = malloc(nc * nr * sizeof *frompos);
    cbase = malloc((nc + 1) * sizeof *cbase);
    size_t nto_all = 0;
    for (int c = 0; c < n; c++) nto_all += (size_t)lsize(&P->ch[c].to);
    runs = malloc((nto_all + 1) * sizeof *runs);
    rfirst = malloc((nto_all + 1) * sizeof *rfirst); /* per (change, position): its first run's index */
    runs_off = malloc((nc + 1) * sizeof *runs_off), nruns = malloc((nc + 1) * sizeof *nruns);
    rbase = malloc((nc + 1) * sizeof *rbase); /* per change its first run; fwd: per run the node that forwards
                                                 it, or SIZE_MAX */
    if (!topos || !frompos || !cbase || !runs || !runs_off || !nruns || !rbase || !rfirst) goto oom;
    for (size_t k = 0; k < nc * nr; k++) topos[k] = frompos[k] = -1;
    size_t nnodes = 0, nedges = 0, nrun_all = 0;
    for (int k = 0, ro = 0; k < n; k++) {
        int c = corder[k], move = P->ch[c].kind == TX_MOVE;
        const TxChange *x = &P->ch[c];
        const TxSlabs *sp = &P->sl[c];
        int nto = lsize(&x->to), nfrom = lsize(&x->from);
        for (int pos = 0; pos < nto; pos++) topos[(size_t)c * nr + plan_stage_rank(&x->to, pos)] = pos;
        for (int pos = 0; pos < nfrom; pos++) frompos[(size_t)c * nr + plan_stage_rank(&x->from, pos)] = pos;
        runs_off[c] = (size_t)ro;
        size_t nr_c = 0;
        for (int pos = 0; pos < nto; pos++) {
            int m = 0;
            for (size_t q = sp->ref_off[pos]; q < sp->ref_off[pos + 1]; q++)
                m += q == sp->ref_off[pos] || sp->ref[q].src != sp->ref[q - 1].src;
            rfirst[ro] = nr_c;
            runs[ro++] = m;
            nr_c += (size_t)m;
        }
        nruns[c] = nr_c;
        rbase[c] = nrun_all;
        nrun_all += nr_c;
        cbase[c] = nnodes;
        nnodes += (size_t)(move ? 1 + nto : 0) + (size_t)nto + (size_t)(move ? nfrom : 0) + nr_c;
        /* COMM → ALLOCs, ALLOC → runs, run → COMMIT, run → FREE of its source (in `from`; not a forward's) */
        nedges += (move ? (size_t)nto + nr_c : 0) + nr_c + (move ? nr_c : 0);
    }
    /* forwards: the run forwarded (feed → source, at the source's position) gets an edge to the forward */
    fwd = malloc((nrun_all + 1) * sizeof *fwd);
    if (!fwd) goto oom;
    for (size_t q = 0; q < nrun_all; q++) fwd[q] = SIZE_MAX;
    for (int c = 0; c < n; c++) {
        const TxChange *x = &P->ch[c];
        const TxSlabs *sp = &P->sl[c];
        if (sp->bytes_relayed == 0) continue; /* no forwards in this change */
        int move = x->kind == TX_MOVE, nto = lsize(&x->to), nfrom = lsize(&x->from);
        size_t run0 = cbase[c] + (size_t)(move ? 1 + nto : 0) + (size_t)nto + (size_t)(move ? nfrom : 0);
        for (int pos = 0; pos < nto; pos++)
            for (size_t q = sp->ref_off[pos], jr = rfirst[runs_off[c] + (size_t)pos]; q < sp->ref_off[pos + 1]; q++) {
                int first = q == sp->ref_off[pos] || sp->ref[q].src != sp->ref[q - 1].src;
                jr += first && q > sp->ref_off[pos];
                if (!first || sp->ref[q].feed < 0) continue;
                /* the forwarder's run from feed */
                int p1 = topos[(size_t)c * nr + sp->ref[q].src];
                size_t q1 = p1 >= 0 ? sp->ref_off[p1] : 0, e1 = p1 >= 0 ? sp->ref_off[p1 + 1] : 0;
                size_t j1 = p1 >= 0 ? rfirst[runs_off[c] + (size_t)p1] : 0;
                for (; q1 < e1; q1++) {
                    j1 += q1 > sp->ref_off[p1] && sp->ref[q1].src != sp->ref[q1 - 1].src;
                    if (sp->ref[q1].src == sp->ref[q].feed) break;
                }
                if (q1 == e1 || p1 >= pos) {
                    rc = nr_fail(why, len, "transition: change %d: rank %d forwards what it does not receive from "
                                 "rank %d before (a bug)", c, sp->ref[q].src, sp->ref[q].feed);
                    goto done;
                }
                fwd[rbase[c] + j1] = run0 + jr;
                nedges += 1 - (size_t)move; /* the feed edge; a move drops the FREE edge */
            }
    }
    /* resource edges: FREE(c2, r) → ALLOC(c, r), wave(c2) < wave(c), both moves */
    if (P->nwaves > 1)
        for (int c = 0; c < n; c++) {
            if (P->ch[c].kind != TX_MOVE || P->wave[c] == 0) continue;
            for (int c2 = 0; c2 < n; c2++) {
                if (P->ch[c2].kind != TX_MOVE || P->wave[c2] >= P->wave[c]) continue;
                for (int pos = 0; pos < lsize(&P->ch[c].to); pos++)
                    nedges += frompos[(size_t)c2 * nr + plan_stage_rank(&P->ch[c].to, pos)] >= 0;
            }
        }
    P->nodes = malloc((nnodes ? nnodes : 1) * sizeof *P->nodes);
    P->succ_off = malloc((nnodes + 1) * sizeof *P->succ_off);
    P->succ = malloc((nedges ? nedges : 1) * sizeof *P->succ);
    if (!P->nodes || !P->succ_off || !P->succ) goto oom;
    size_t ne = 0;
    P->succ_off[0] = 0;
#define NODE(...) do { P->nodes[P->nnodes++] = (TxNode){__VA_ARGS__}; } while (0)
#define DONE_NODE() do { P->succ_off[P->nnodes] = ne; } while (0)
    size_t chunk = P->opt.chunk;
    int cur_wave = -1, ncomm = 0;
    for (int k = 0; k <= n; k++) {
        int c = k < n ? corder[k] : -1;
        int w = c >= 0 ? P->wave[c] : -2;
        if (w != cur_wave && cur_wave >= 0) { /* close the wave's time */
            double t = 0;
            for (int r = 0; r < nranks; r++) {
                /* the node's own link and the network are separate: the slower of the two */
                double b = fmax(w_in[r], w_out[r]), bi = fmax(w_in[nr + r], w_out[nr + r]);
                if (opt->half_duplex) b = 0.5 * (w_in[r] + w_out[r]), bi = 0.5 * (w_in[nr + r] + w_out[nr + r]);
                double bw_in = opt->bandwidth_intra > 0 ? opt->bandwidth_intra : opt->bandwidth;
                /* a forwarding chain delays the end by a chunk a hop (the chunks are pipelined along it) */
                double tr = fmax(b / opt->bandwidth, bi / bw_in) + w_msg[r] * opt->latency +
                            w_hop[r] * ((double)chunk / opt->bandwidth + opt->latency);
                /* the slabs a rank keeps: copied by the same rank (core, or device) that drives its transfers */
                if (opt->copy_rate > 0) tr += w_loc[r] / opt->copy_rate;
                if (tr > t) t = tr;
            }
            P->predicted_s += t;
            memset(w_in, 0, 2 * nr * sizeof *w_in);
            memset(w_out, 0, 2 * nr * sizeof *w_out);
            memset(w_msg, 0, nr * sizeof *w_msg);
            memset(w_hop, 0, nr * sizeof *w_hop);
            memset(w_loc, 0, nr * sizeof *w_loc);
        }
        if (c < 0) break;
        cur_wave = w;
        const TxChange *x = &P->ch[c];
        const TxSlabs *sp = &P->sl[c];
        int move = x->kind == TX_MOVE, nto = lsize(&x->to), nfrom = lsize(&x->from);
        size_t nb = (size_t)x->nbufs, b0 = cbase[c];
        size_t alloc0 = b0 + 1, commit0 = b0 + (move ? 1 + (size_t)nto : 0), free0 = commit0 + (size_t)nto;
        size_t run0 = free0 + (move ? (size_t)nfrom : 0);
        const int *rn = runs + runs_off[c];
        size_t jrun = 0; /* the change's runs in node order */
        if (move) {
            NODE(TXN_COMM, c, -1, -1, w, -1, 0, 0, 0);
            for (int pos = 0; pos < nto; pos++) P->succ[ne++] = (int)(alloc0 + (size_t)pos);
            DONE_NODE();
            ncomm += !x->comm_shared;
            for (int pos = 0, j = 0; pos < nto; j += rn[pos], pos++) {
                NODE(TXN_ALLOC, c, plan_stage_rank(&x->to, pos), -1, w, -1, 0, 0, 0);
                for (int q = 0; q < rn[pos]; q++) P->succ[ne++] = (int)(run0 + (size_t)(j + q));
                DONE_NODE();
            }
        }
        for (int pos = 0; pos < nto; pos++) {
            NODE(TXN_COMMIT, c, plan_stage_rank(&x->to, pos), -1, w, -1, 0, 0, 0);
            DONE_NODE();
        }
        if (move)
            for (int pos = 0; pos < nfrom; pos++) {
                int r = plan_stage_rank(&x->from, pos);
                NODE(TXN_FREE, c, r, -1, w, -1, 0, 0, 0);
                if (P->nwaves > 1) /* resource edges to the ALLOCs of later waves on r, in change order */
                    for (int c2 = 0; c2 < n; c2++) {
                        int tp2 = topos[(size_t)c2 * nr + r];
                        if (P->ch[c2].kind != TX_MOVE || P->wave[c2] <= w || tp2 < 0) continue;
                        P->succ[ne++] = (int)(cbase[c2] + 1 + (size_t)tp2);
                    }
                DONE_NODE();
            }
        /* COPY and XFER nodes over the refs (by destination, local first, grouped by source): runs of equal
           (src, dst) */
        for (int pos = 0; pos < nto; pos++)
            for (size_t s0 = sp->ref_off[pos], s1; s0 < sp->ref_off[pos + 1]; s0 = s1) {
                const TxRef *a = &sp->ref[s0];
                size_t bytes = sp->blk[a->block].bytes;
                for (s1 = s0 + 1; s1 < sp->ref_off[pos + 1] && sp->ref[s1].src == a->src; s1++)
                    bytes += sp->blk[sp->ref[s1].block].bytes;
                bytes *= nb;
                int src = a->src, dst = a->dst, local = src == dst;
                NODE(local ? TXN_COPY : TXN_XFER, c, src, local ? -1 : dst, w, a->feed, s0, s1 - s0, bytes);
                P->succ[ne++] = (int)(commit0 + (size_t)pos);
                if (move && a->feed < 0) P->succ[ne++] = (int)(free0 + (size_t)frompos[(size_t)c * nr + src]);
                if (fwd[rbase[c] + jrun] != SIZE_MAX) P->succ[ne++] = (int)fwd[rbase[c] + jrun];
                jrun++;
                DONE_NODE();
                /* a rank whose new shard is all its old one (every ref local, the same tp and pp: the same
                   slice) takes the old buffers (exec.c: gpt_swap_state) and copies nothing */
                int swap = local && x->kind == TX_MOVE && s0 == sp->ref_off[pos] && s1 == sp->ref_off[pos + 1] &&
                           x->from.tp == x->to.tp && x->from.pp == x->to.pp;
                if (local && !swap) w_loc[src] += (double)bytes;
                if (!local) {
                    size_t msgs = (bytes + chunk - 1) / chunk;
                    P->messages += msgs;
                    int intra = opt->ranks_per_node > 0 && src / opt->ranks_per_node == dst / opt->ranks_per_node;
                    w_out[(intra ? nr : 0) + (size_t)src] += (double)bytes;
                    w_in[(intra ? nr : 0) + (size_t)dst] += (double)bytes;
                    w_msg[src] += (double)msgs;
                    w_msg[dst] += (double)msgs;
                    if (a->hop > w_hop[dst]) w_hop[dst] = a->hop; /* a run's refs share one hop (one stream) */
                    if (a->hop > P->max_hop) P->max_hop = a->hop;
                }
            }
    }
#undef NODE
#undef DONE_NODE
    P->predicted_s += ncomm * opt->comm_setup;
    if (P->nnodes != nnodes || ne != nedges) {
        rc = nr_fail(why, len, "transition: DAG of %zu nodes, %zu edges where %zu, %zu were counted (a bug)",
                     P->nnodes, ne, nnodes, nedges);
        goto done;
    }
    goto done;
oom:
    rc = nr_fail(why, len, "transition: out of memory");
done:
    free(in_from);
    free(in_to);
    free(moving);
    free(cur);
    free(acq);
    free(order);
    free(load);
    free(full);
    free(work);
    free(w_in);
    free(w_out);
    free(w_msg);
    free(w_hop);
    free(w_loc);
    free(topos); free(frompos); free(cbase); free(runs); free(runs_off); free(nruns); free(rbase); free(fwd); free(rfirst);
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

/* ---- parts --------------------------------------------------------------- */

void tx_part_free(TxPart *p) {
    if (!p) return;
    free(p->ch);
    free(p->ops);
    free(p->slabs);
    memset(p, 0, sizeof *p);
}

/* Emits node d into the part of rank r (pass 0 counts, pass 1 fills). */
static void part_emit(const TxPlan *P, const TxNode *d, int r, TxPart *p, int pass, size_t *nops, size_t *nslabs) {
    int kind = d->kind == TXN_ALLOC ? TXO_ALLOC : d->kind == TXN_FREE ? TXO_FREE : d->kind == TXN_COPY ? TXO_COPY
             : d->kind == TXN_XFER ? (d->rank == r ? TXO_SEND : TXO_RECV) : -1;
    if (kind < 0) return;
    int with_slabs = kind == TXO_COPY || kind == TXO_SEND || kind == TXO_RECV;
    const TxSlabs *sl = &P->sl[d->change];
    if (pass == 0) {
        (*nops)++;
        if (with_slabs) *nslabs += tx_slabs_count(sl, d->slab0, d->slab0 + d->nslab);
        return;
    }
    int peer = kind == TXO_SEND ? d->peer : kind == TXO_RECV ? d->rank : -1;
    size_t k = with_slabs ? tx_slabs_expand(sl, d->slab0, d->slab0 + d->nslab, p->slabs + p->nslabs) : 0;
    p->ops[p->nops++] = (TxOp){kind, d->change, d->wave, peer, kind == TXO_SEND ? d->feed : -1, 0, (int64_t)d->bytes,
                               with_slabs ? p->nslabs : 0, (int64_t)k};
    p->nslabs += (int64_t)k;
}

/* a part's header: its rank, the plan's counts and the rank's memory and transfer settings */
static void part_head(TxPart *p, const TxPlan *P, int r) {
    p->rank = r;
    p->nchanges = P->nchanges;
    p->nwaves = P->nwaves;
    p->mem_start = P->mem_start[r];
    p->mem_peak = P->mem_peak[r];
    p->chunk = P->opt.chunk;
    p->window = P->opt.window;
    p->stage_all = P->opt.stage_all;
    p->stream_order = P->opt.stream_order;
    p->no_staging = P->opt.no_staging;
}

/* The parts of ranks [r0, r1) in one pass over the nodes per pass: parts[r - r0]. */
static int parts_build(const TxPlan *P, int r0, int r1, TxPart *parts) {
    int n = r1 - r0;
    size_t *nops = calloc((size_t)n, sizeof *nops), *nslabs = calloc((size_t)n, sizeof *nslabs);
    if (!nops || !nslabs) { free(nops); free(nslabs); return -1; }
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            for (int q = 0; q < n; q++) {
                TxPart *p = &parts[q];
                memset(p, 0, sizeof *p);
                part_head(p, P, r0 + q);
                p->ch = calloc((size_t)(P->nchanges ? P->nchanges : 1), sizeof *p->ch);
                p->ops = malloc((nops[q] ? nops[q] : 1) * sizeof *p->ops);
                p->slabs = malloc((nslabs[q] ? nslabs[q] : 1) * sizeof *p->slabs);
                if (!p->ch || !p->ops || !p->slabs) {
                    for (int z = 0; z <= q; z++) tx_part_free(&parts[z]);
                    free(nops); free(nslabs);
                    return -1;
                }
                for (int c = 0; c < P->nchanges; c++) {
                    p->ch[c].kind = P->ch[c].kind;
                    p->ch[c].nbufs = P->ch[c].nbufs;
                    p->ch[c].wave = P->wave[c];
                }
            }
        /* nodes are in (wave, change) order with the XFERs in the streams' order */
        for (size_t k = 0; k < P->nnodes; k++) {
            const TxNode *d = &P->nodes[k];
            int who[2] = {d->rank, d->kind == TXN_XFER ? d->peer : -1};
            for (int w = 0; w < 2; w++)
                if (who[w] >= r0 && who[w] < r1)
                    part_emit(P, d, who[w], &parts[who[w] - r0], pass, &nops[who[w] - r0], &nslabs[who[w] - r0]);
        }
    }
    for (int c = 0; c < P->nchanges; c++) { /* membership of every part's rank in each change's layouts */
        const TxChange *x = &P->ch[c];
        for (int pos = 0; pos < lsize(&x->from); pos++) {
            int r = plan_stage_rank(&x->from, pos);
            if (r >= r0 && r < r1) parts[r - r0].ch[c].in_from = 1;
        }
        for (int pos = 0; pos < lsize(&x->to); pos++) {
            int r = plan_stage_rank(&x->to, pos);
            if (r >= r0 && r < r1) parts[r - r0].ch[c].in_to = 1;
        }
    }
    free(nops);
    free(nslabs);
    return 0;
}

int tx_part_extract(const TxPlan *P, int r, TxPart *p) { return parts_build(P, r, r + 1, p); }

int tx_parts_extract(const TxPlan *P, TxPart *parts) { return parts_build(P, 0, P->nranks, parts); }

/* ---- the parts in compact form (what tx_part_scatter sends) ------------------- */

typedef struct PackHead {
    TxPart part;          /* pointers not used; part.nslabs: the rank's refs */
} PackHead;

/* per rank: [PackHead][ch (nchanges)][ops (nops)][refs (part.nslabs)] */
static size_t pack_bytes(int nchanges, int64_t nops, int64_t nrefs) {
    return sizeof(PackHead) + (size_t)nchanges * sizeof(TxPartChange) + (size_t)nops * sizeof(TxOp) +
           (size_t)nrefs * sizeof(TxRef);
}

static int node_op_kind(const TxNode *d, int r) {
    return d->kind == TXN_ALLOC ? TXO_ALLOC : d->kind == TXN_FREE ? TXO_FREE : d->kind == TXN_COPY ? TXO_COPY
         : d->kind == TXN_XFER ? (d->rank == r ? TXO_SEND : TXO_RECV) : -1;
}

int tx_parts_pack(const TxPlan *P, int size, char **all, int *counts, int *displs) {
    int64_t *nops = calloc((size_t)size, sizeof *nops), *nrefs = calloc((size_t)size, sizeof *nrefs);
    char **at = calloc((size_t)size, sizeof *at);
    int rc = -1;
    *all = NULL;
    if (!nops || !nrefs || !at) goto out;
    for (size_t k = 0; k < P->nnodes; k++) {
        const TxNode *d = &P->nodes[k];
        int who[2] = {d->rank, d->kind == TXN_XFER ? d->peer : -1};
        for (int w = 0; w < 2; w++) {
            int r = who[w];
            if (r < 0 || r >= size || node_op_kind(d, r) < 0) continue;
            nops[r]++;
            if (d->kind == TXN_COPY || d->kind == TXN_XFER) nrefs[r] += (int64_t)d->nslab;
        }
    }
    size_t total = 0;
    for (int r = 0; r < size; r++) {
        size_t b = pack_bytes(P->nchanges, nops[r], nrefs[r]);
        if (b > (size_t)1 << 30 || total + b > (size_t)2000000000) goto out;
        counts[r] = (int)b;
        displs[r] = (int)total;
        total += b;
    }
    if ((*all = calloc(total ? total : 1, 1)) == NULL) goto out;
    for (int r = 0; r < size; r++) {
        PackHead *h = (PackHead *)(*all + displs[r]);
        TxPart *p = &h->part;
        part_head(p, P, r);
        TxPartChange *ch = (TxPartChange *)(h + 1);
        for (int c = 0; c < P->nchanges; c++) {
            ch[c].kind = P->ch[c].kind;
            ch[c].nbufs = P->ch[c].nbufs;
            ch[c].wave = P->wave[c];
        }
        at[r] = (char *)(ch + P->nchanges);
    }
    for (int c = 0; c < P->nchanges; c++) { /* membership of every rank in each change's layouts */
        const TxChange *x = &P->ch[c];
        for (int pos = 0; pos < x->from.tp * x->from.pp * x->from.dp; pos++) {
            int r = plan_stage_rank(&x->from, pos);
            if (r < size) ((TxPartChange *)((PackHead *)(*all + displs[r]) + 1))[c].in_from = 1;
        }
        for (int pos = 0; pos < x->to.tp * x->to.pp * x->to.dp; pos++) {
            int r = plan_stage_rank(&x->to, pos);
            if (r < size) ((TxPartChange *)((PackHead *)(*all + displs[r]) + 1))[c].in_to = 1;
        }
    }
    /* ops in node order (the streams' order), then each rank's refs after its ops */
    for (int r = 0; r < size; r++) {
        ((PackHead *)(*all + displs[r]))->part.nops = 0;
        ((PackHead *)(*all + displs[r]))->part.nslabs = 0;
    }
    for (size_t k = 0; k < P->nnodes; k++) {
        const TxNode *d = &P->nodes[k];
        int who[2] = {d->rank, d->kind == TXN_XFER ? d->peer : -1};
        for (int w = 0; w < 2; w++) {
            int r = who[w], kind = r >= 0 && r < size ? node_op_kind(d, r) : -1;
            if (kind < 0) continue;
            TxPart *p = &((PackHead *)(*all + displs[r]))->part;
            TxOp *ops = (TxOp *)at[r];
            TxRef *refs = (TxRef *)(ops + nops[r]);
            int with = kind == TXO_COPY || kind == TXO_SEND || kind == TXO_RECV;
            int peer = kind == TXO_SEND ? d->peer : kind == TXO_RECV ? d->rank : -1;
            ops[p->nops++] = (TxOp){kind, d->change, d->wave, peer, kind == TXO_SEND ? d->feed : -1, 0,
                                    (int64_t)d->bytes, with ? p->nslabs : 0, with ? (int64_t)d->nslab : 0};
            if (with) {
                memcpy(refs + p->nslabs, P->sl[d->change].ref + d->slab0, d->nslab * sizeof *refs);
                p->nslabs += (int64_t)d->nslab;
            }
        }
    }
    rc = 0;
out:
    if (rc) { free(*all); *all = NULL; }
    free(nops);
    free(nrefs);
    free(at);
    return rc;
}

/* The geometry of every change: [int64 ngeo, nblk] per change, then per change geo[], blk[]. */
char *tx_geometry_pack(const TxPlan *P, size_t *len) {
    size_t n = (size_t)P->nchanges * 2 * sizeof(int64_t);
    for (int c = 0; c < P->nchanges; c++)
        n += (size_t)P->sl[c].ngeo * sizeof(Slab) + (size_t)P->sl[c].nblk * sizeof(TxBlock);
    char *b = malloc(n ? n : 1), *o = b;
    if (!b) return NULL;
    for (int c = 0; c < P->nchanges; c++) {
        int64_t g[2] = {P->sl[c].ngeo, P->sl[c].nblk};
        memcpy(o, g, sizeof g);
        o += sizeof g;
    }
    for (int c = 0; c < P->nchanges; c++) {
        memcpy(o, P->sl[c].geo, (size_t)P->sl[c].ngeo * sizeof(Slab));
        o += (size_t)P->sl[c].ngeo * sizeof(Slab);
        memcpy(o, P->sl[c].blk, (size_t)P->sl[c].nblk * sizeof(TxBlock));
        o += (size_t)P->sl[c].nblk * sizeof(TxBlock);
    }
    *len = n;
    return b;
}


int tx_part_unpack(const char *packed, const char *geo, TxPart *part) {
    const PackHead *h = (const PackHead *)packed;
    *part = h->part;
    int nch = part->nchanges;
    const TxPartChange *ch = (const TxPartChange *)(h + 1);
    const TxOp *ops = (const TxOp *)(ch + nch);
    const TxRef *refs = (const TxRef *)(ops + part->nops);
    /* the geometry of each change */
    const Slab **cgeo = calloc((size_t)nch + 1, sizeof *cgeo);
    const TxBlock **cblk = calloc((size_t)nch + 1, sizeof *cblk);
    part->ch = malloc((size_t)(nch ? nch : 1) * sizeof *part->ch);
    part->ops = malloc((size_t)(part->nops ? part->nops : 1) * sizeof *part->ops);
    part->slabs = NULL;
    if (!cgeo || !cblk || !part->ch || !part->ops) goto oom;
    const char *o = geo + (size_t)nch * 2 * sizeof(int64_t);
    for (int c = 0; c < nch; c++) {
        int64_t g[2];
        memcpy(g, geo + (size_t)c * sizeof g, sizeof g);
        cgeo[c] = (const Slab *)o;
        o += (size_t)g[0] * sizeof(Slab);
        cblk[c] = (const TxBlock *)o;
        o += (size_t)g[1] * sizeof(TxBlock);
    }
    int64_t nslabs = 0;
    for (int64_t i = 0; i < part->nops; i++)
        for (int64_t k = ops[i].slab0; k < ops[i].slab0 + ops[i].nslab; k++) {
            const TxBlock *b = &cblk[ops[i].change][refs[k].block];
            nslabs += b->g1 - b->g0;
        }
    part->slabs = malloc((size_t)(nslabs ? nslabs : 1) * sizeof *part->slabs);
    if (!part->slabs) goto oom;
    memcpy(part->ch, ch, (size_t)nch * sizeof *part->ch);
    part->nslabs = 0;
    for (int64_t i = 0; i < part->nops; i++) {
        TxOp op = ops[i];
        int64_t s0 = part->nslabs;
        for (int64_t k = op.slab0; k < op.slab0 + op.nslab; k++) {
            const TxRef *f = &refs[k];
            const TxBlock *b = &cblk[op.change][f->block];
            for (int g = b->g0; g < b->g1; g++) {
                Slab *sl = &part->slabs[part->nslabs++];
                *sl = cgeo[op.change][g];
                sl->src_rank = f->src;
                sl->dst_rank = f->dst;
                sl->local = f->src == f->dst;
            }
        }
        op.slab0 = op.nslab ? s0 : 0;
        op.nslab = part->nslabs - s0;
        part->ops[i] = op;
    }
    free(cgeo);
    free(cblk);
    return 0;
oom:
    free(cgeo);
    free(cblk);
    tx_part_free(part);
    return -1;
}
