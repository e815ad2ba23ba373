/* parts.c — each rank's part of a transition plan (transition.h): the ops
 * of the DAG's nodes that touch the rank, in node order, with their slabs
 * expanded (tx_part_extract); and the compact form rank 0 scatters (every
 * rank's ops with its block refs, and the plan's geometry once), which each
 * rank expands itself into the same part (tx_part_unpack). Pure: no MPI. */
#include "nereus/transition.h"

#include <stdlib.h>
#include <string.h>

static int lsize(const PlanStage *s) { return s->tp * s->pp * s->dp; }

/* the op a DAG node is on rank r (TXO_*), or -1 (COMM, COMMIT: not in a part) */
static int node_op_kind(const TxNode *d, int r) {
    return d->kind == TXN_ALLOC ? TXO_ALLOC : d->kind == TXN_FREE ? TXO_FREE : d->kind == TXN_COPY ? TXO_COPY
         : d->kind == TXN_XFER ? (d->rank == r ? TXO_SEND : TXO_RECV) : -1;
}

void tx_part_free(TxPart *p) {
    if (!p) return;
    free(p->ch);
    free(p->ops);
    free(p->slabs);
    memset(p, 0, sizeof *p);
}

/* Emits node d into the part of rank r (pass 0 counts, pass 1 fills). */
static void part_emit(const TxPlan *P, const TxNode *d, int r, TxPart *p, int pass, size_t *nops, size_t *nslabs) {
    int kind = node_op_kind(d, r);
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

/* Every rank's packed header in all (at displs[r]): its part's fields with no ops or refs yet, its changes
 * with its membership in their layouts; at[r]: where its ops go. */
static void pack_heads(const TxPlan *P, int size, char *all, const int *displs, char **at) {
    for (int r = 0; r < size; r++) {
        PackHead *h = (PackHead *)(all + displs[r]);
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
            if (r < size) ((TxPartChange *)((PackHead *)(all + displs[r]) + 1))[c].in_from = 1;
        }
        for (int pos = 0; pos < x->to.tp * x->to.pp * x->to.dp; pos++) {
            int r = plan_stage_rank(&x->to, pos);
            if (r < size) ((TxPartChange *)((PackHead *)(all + displs[r]) + 1))[c].in_to = 1;
        }
    }
    /* no ops or refs yet */
    for (int r = 0; r < size; r++) {
        ((PackHead *)(all + displs[r]))->part.nops = 0;
        ((PackHead *)(all + displs[r]))->part.nslabs = 0;
    }
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
    pack_heads(P, size, *all, displs, at);
    /* ops in node order (the streams' order), then each rank's refs after its ops */
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
