/* exec.c — one rank's part of a transition, run with non-blocking MPI
 * (transition.h).
 *
 * Streams. A SEND or RECV op carries the slabs of one (change, src, dst)
 * pair; its stream is, buffer by buffer (params, AdamW m, v), slab by slab,
 * each slab's elements in row-major order. The stream is cut into chunks by
 * one rule both sides apply to the same slab list: a chunk ends after
 * `chunk` bytes, or at the end of a slab-buffer that is itself at least a
 * chunk long (so a large slab is sent in pieces of its own, which go straight
 * from and into the model's buffer when they are contiguous there), while
 * small slab-buffers are packed together up to a chunk.
 *
 * Order and windows. Sends are posted in the part's order (the global
 * message order), at most window/2 bytes in flight; receives likewise in
 * theirs. A receive is posted only once its change's new shard exists
 * (ALLOC done). An ALLOC of wave w waits for this rank's FREEs of the
 * earlier waves; a FREE waits for every send out of the old shard and the
 * local copies. Why this cannot deadlock: take the earliest unfinished chunk
 * in the global order. Every earlier chunk is done, so its sender's window
 * holds only later chunks or is empty, and the sender posts in order: the
 * chunk's send is posted. Its receiver's earlier receives are done likewise;
 * its ALLOC waited only on FREEs of earlier waves, which waited only on
 * earlier sends (done) and local copies: the receive is posted. So the
 * earliest chunk completes, and by induction all do.
 *
 * Waiting: while transfers are in flight and the last progress is under
 * 5 ms old, a pass that made no progress yields the core (sched_yield) and
 * polls again — Open MPI moves a large message's shared-memory fragments
 * only inside MPI calls, and a sleeping poller made the transfers ~10x
 * slower here (measured: 0.08 against ~1 GB/s per rank on 8 ranks); after
 * that it sleeps (10 µs doubling to 1 ms, as comm.h), so a rank that waits
 * for long does not spin a core. */
#include "nereus/transition.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nereus/util.h"

typedef struct Cursor {
    int b;        /* buffer */
    int64_t k;    /* slab, relative to the op */
    size_t e;     /* element within the slab */
} Cursor;

typedef struct Stream {
    const TxOp *op;
    Cursor cur;      /* next element to post */
    size_t left;     /* bytes not yet posted */
    size_t pending;  /* bytes posted, not completed */
} Stream;

typedef struct Flight {
    MPI_Request req;
    int stream;      /* index into the send or receive streams */
    int send;
    size_t bytes;
    float *stage;    /* host staging (owned), NULL when the chunk goes straight from / into the shard */
    Cursor cur;      /* the chunk's first element */
} Flight;

static size_t slab_elems(const Slab *s) {
    size_t n = 1;
    for (int a = 0; a < 4; a++) n *= (size_t)s->count[a];
    return n;
}

static float *buf_of(const GPT *m, int b) { return b == 0 ? m->params : b == 1 ? m->m : m->v; }

/* The next chunk of a stream from cursor c: its length in elements (the
 * rule in the header comment), and the cursor after it. */
static size_t next_chunk(const TxPart *pt, const TxOp *op, int nbufs, Cursor *c, size_t chunk_el) {
    size_t got = 0;
    while (c->b < nbufs && got < chunk_el) {
        const Slab *s = &pt->slabs[op->slab0 + c->k];
        size_t n = slab_elems(s), rest = n - c->e;
        int big = n >= chunk_el;
        if (big && got > 0) break; /* a large slab starts a chunk of its own */
        size_t take = rest < chunk_el - got ? rest : chunk_el - got;
        got += take;
        c->e += take;
        if (c->e == n) {
            c->e = 0;
            if (++c->k == op->nslab) { c->k = 0; c->b++; }
            if (big) break; /* and ends one */
        }
    }
    return got;
}

/* Walks n elements from cursor c, calling pack or unpack per slab piece. */
static void stream_copy(const TxPart *pt, const TxOp *op, const Backend *be, GPT *m, Cursor c, size_t n, float *host,
                        int pack) {
    size_t h = 0;
    while (n > 0) {
        const Slab *s = &pt->slabs[op->slab0 + c.k];
        size_t rest = slab_elems(s) - c.e, take = rest < n ? rest : n;
        const TensorInfo *t = &m->tensors[s->tensor];
        float *buf = buf_of(m, c.b) + t->offset;
        if (pack) tx_box_pack(be, t, buf, s->start, s->count, c.e, take, host + h);
        else tx_box_unpack(be, t, buf, s->start, s->count, c.e, take, host + h);
        h += take;
        n -= take;
        c.e += take;
        if (c.e == slab_elems(s)) {
            c.e = 0;
            if (++c.k == op->nslab) { c.k = 0; c.b++; }
        }
    }
}

/* A chunk wholly inside one slab and contiguous in the shard: its address there, else NULL. */
static float *direct(const TxPart *pt, const TxOp *op, const Backend *be, GPT *m, Cursor c, size_t n) {
    if (strcmp(be->name, "cpu") != 0) return NULL; /* device memory goes through host staging */
    const Slab *s = &pt->slabs[op->slab0 + c.k];
    if (c.e + n > slab_elems(s)) return NULL;
    const TensorInfo *t = &m->tensors[s->tensor];
    size_t off = tx_box_contiguous(t, s->start, s->count, c.e, n);
    return off == (size_t)-1 ? NULL : buf_of(m, c.b) + t->offset + off;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void tx_execute(const TxPart *pt, TxEndpoint *ep, const TxHooks *hooks, const Backend *be, MPI_Comm comm,
                TxStats *st) {
    memset(st, 0, sizeof *st);
    double t0 = now_s();
    int nc = pt->nchanges;
    size_t chunk_el = pt->chunk / sizeof(float), half = pt->window / 2;
    size_t staging = 0;
    st->mem_start = be->mem_live ? be->mem_live() : 0;
    st->mem_peak = st->mem_start;
#define SAMPLE() do { size_t m_ = (be->mem_live ? be->mem_live() : 0) + staging; if (m_ > st->mem_peak) st->mem_peak = m_; } while (0)

    /* per change: ALLOC done, copies done, sends outstanding (bytes), FREE done */
    int *alloc_done = calloc((size_t)nc + 1, sizeof(int)), *copy_left = calloc((size_t)nc + 1, sizeof(int));
    int *free_done = calloc((size_t)nc + 1, sizeof(int)), *free_left_wave = calloc((size_t)pt->nwaves + 1, sizeof(int));
    int64_t *send_left = calloc((size_t)nc + 1, sizeof(int64_t));
    int nsend = 0, nrecv = 0;
    for (int64_t i = 0; i < pt->nops; i++) nsend += pt->ops[i].kind == TXO_SEND, nrecv += pt->ops[i].kind == TXO_RECV;
    Stream *ss = calloc((size_t)nsend + 1, sizeof *ss), *rs = calloc((size_t)nrecv + 1, sizeof *rs);
    size_t fcap = 64, nf = 0;
    Flight *fl = malloc(fcap * sizeof *fl);
    MPI_Request *reqs = malloc(fcap * sizeof *reqs);
    int *idx = malloc(fcap * sizeof *idx);
    if (!alloc_done || !copy_left || !free_done || !free_left_wave || !send_left || !ss || !rs || !fl || !reqs || !idx)
        nr_fatal("transition: out of memory for the executor");
    for (int c = 0; c < nc; c++) alloc_done[c] = pt->ch[c].kind == TX_COPY || !pt->ch[c].in_to;
    nsend = nrecv = 0;
    for (int64_t i = 0; i < pt->nops; i++) {
        const TxOp *op = &pt->ops[i];
        if (op->kind == TXO_SEND) {
            ss[nsend++] = (Stream){op, {0, 0, 0}, (size_t)op->bytes, 0};
            send_left[op->change] += op->bytes;
        } else if (op->kind == TXO_RECV) {
            rs[nrecv++] = (Stream){op, {0, 0, 0}, (size_t)op->bytes, 0};
        } else if (op->kind == TXO_COPY) {
            copy_left[op->change]++;
        } else if (op->kind == TXO_FREE) {
            free_left_wave[op->wave]++;
        }
    }
    int si = 0, ri = 0;          /* next stream to post from */
    size_t in_send = 0, in_recv = 0;
    int64_t ops_left = pt->nops; /* ALLOC, COPY, FREE ops done, plus streams finished */
    int64_t streams_left = nsend + nrecv;
    ops_left -= nsend + nrecv;
    long sleep_ns = 0;
    double last_progress = now_s();
    while (ops_left > 0 || streams_left > 0) {
        int progress = 0;
        /* ALLOC, COPY, FREE in op order */
        for (int64_t i = 0; i < pt->nops; i++) {
            const TxOp *op = &pt->ops[i];
            int c = op->change;
            if (op->kind == TXO_ALLOC && !alloc_done[c]) {
                int ok = 1;
                for (int w = 0; w < op->wave; w++) ok &= free_left_wave[w] == 0;
                if (!ok) continue;
                hooks->alloc(hooks->ctx, c);
                alloc_done[c] = 1;
                SAMPLE();
                ops_left--;
                progress = 1;
            } else if (op->kind == TXO_COPY && copy_left[c] > 0 && alloc_done[c] && op->nslab >= 0) {
                /* local slabs: shard to shard through a chunk of host staging */
                const TxPartChange *pc = &pt->ch[c];
                float *host = malloc(pt->chunk);
                if (!host) nr_fatal("transition: out of memory for a copy buffer");
                staging += pt->chunk;
                SAMPLE();
                for (int b = 0; b < pc->nbufs; b++)
                    for (int64_t k = 0; k < op->nslab; k++) {
                        const Slab *s = &pt->slabs[op->slab0 + k];
                        const TensorInfo *tf = &ep[c].from->tensors[s->tensor], *tt = &ep[c].to->tensors[s->tensor];
                        float *fb = buf_of(ep[c].from, b) + tf->offset, *tb = buf_of(ep[c].to, b) + tt->offset;
                        size_t n = slab_elems(s);
                        for (size_t e = 0; e < n; e += chunk_el) {
                            size_t m = n - e < chunk_el ? n - e : chunk_el;
                            size_t of = tx_box_contiguous(tf, s->start, s->count, e, m);
                            size_t ot = tx_box_contiguous(tt, s->start, s->count, e, m);
                            if (of != (size_t)-1 && ot != (size_t)-1) {
                                be->copy(tb + ot, fb + of, m * sizeof(float));
                            } else {
                                tx_box_pack(be, tf, fb, s->start, s->count, e, m, host);
                                tx_box_unpack(be, tt, tb, s->start, s->count, e, m, host);
                            }
                        }
                        st->bytes_copied += n * sizeof(float);
                    }
                free(host);
                staging -= pt->chunk;
                copy_left[c]--;
                ops_left--;
                progress = 1;
            } else if (op->kind == TXO_FREE && !free_done[c] && send_left[c] == 0 && copy_left[c] == 0) {
                if (pt->ch[c].kind == TX_MOVE) hooks->release(hooks->ctx, c);
                free_done[c] = 1;
                free_left_wave[op->wave]--;
                ops_left--;
                progress = 1;
            }
        }
        /* post sends, then receives, in order, within the windows */
        for (int side = 0; side < 2; side++) {
            Stream *S = side == 0 ? ss : rs;
            int ns = side == 0 ? nsend : nrecv;
            int *pi = side == 0 ? &si : &ri;
            size_t *inflight = side == 0 ? &in_send : &in_recv;
            while (*pi < ns) {
                Stream *x = &S[*pi];
                if (x->left == 0) { (*pi)++; continue; }
                int c = x->op->change;
                if (side == 1 && !alloc_done[c]) break; /* in order: nothing later either */
                Cursor c0 = x->cur, c1 = x->cur;
                size_t n = next_chunk(pt, x->op, pt->ch[c].nbufs, &c1, chunk_el), bytes = n * sizeof(float);
                if (*inflight > 0 && *inflight + bytes > half) break;
                GPT *m = side == 0 ? ep[c].from : ep[c].to;
                if (!m) nr_fatal("transition: rank %d has no %s shard for change %d", pt->rank,
                                 side == 0 ? "old" : "new", c);
                float *dp = direct(pt, x->op, be, m, c0, n), *stage = NULL;
                if (!dp) {
                    stage = malloc(bytes ? bytes : 4);
                    if (!stage) nr_fatal("transition: out of memory for a %zu-byte chunk", bytes);
                    staging += bytes;
                    SAMPLE();
                    if (side == 0) stream_copy(pt, x->op, be, m, c0, n, stage, 1);
                }
                if (nf == fcap) {
                    fcap *= 2;
                    fl = realloc(fl, fcap * sizeof *fl);
                    reqs = realloc(reqs, fcap * sizeof *reqs);
                    idx = realloc(idx, fcap * sizeof *idx);
                    if (!fl || !reqs || !idx) nr_fatal("transition: out of memory for requests");
                }
                Flight *f = &fl[nf];
                f->stream = *pi;
                f->send = side == 0;
                f->bytes = bytes;
                f->stage = stage;
                f->cur = c0;
                float *p = stage ? stage : dp;
                if (side == 0) mpiCheck(MPI_Isend(p, (int)n, MPI_FLOAT, x->op->peer, c, comm, &f->req));
                else mpiCheck(MPI_Irecv(p, (int)n, MPI_FLOAT, x->op->peer, c, comm, &f->req));
                reqs[nf] = f->req;
                nf++;
                x->cur = c1;
                x->left -= bytes;
                x->pending += bytes;
                *inflight += bytes;
                if (side == 0) st->messages_sent++;
                progress = 1;
            }
        }
        /* completions */
        if (nf > 0) {
            int nd = 0;
            mpiCheck(MPI_Testsome((int)nf, reqs, &nd, idx, MPI_STATUSES_IGNORE));
            if (nd > 0 && nd != MPI_UNDEFINED) {
                progress = 1;
                for (int q = 0; q < nd; q++) {
                    Flight *f = &fl[idx[q]];
                    Stream *x = f->send ? &ss[f->stream] : &rs[f->stream];
                    int c = x->op->change;
                    if (f->send) {
                        in_send -= f->bytes;
                        send_left[c] -= (int64_t)f->bytes;
                        st->bytes_sent += f->bytes;
                    } else {
                        if (f->stage) stream_copy(pt, x->op, be, ep[c].to, f->cur, f->bytes / sizeof(float), f->stage, 0);
                        in_recv -= f->bytes;
                        st->bytes_recv += f->bytes;
                    }
                    if (f->stage) {
                        free(f->stage);
                        staging -= f->bytes;
                    }
                    x->pending -= f->bytes;
                    if (x->left == 0 && x->pending == 0) streams_left--;
                    f->req = MPI_REQUEST_NULL;
                }
                /* compact */
                size_t w = 0;
                for (size_t k = 0; k < nf; k++)
                    if (reqs[k] != MPI_REQUEST_NULL) {
                        fl[w] = fl[k];
                        fl[w].req = reqs[k];
                        reqs[w] = reqs[k];
                        w++;
                    }
                nf = w;
            }
        }
        /* streams of zero bytes (none are built) would never complete: guard */
        if (progress) {
            sleep_ns = 0;
            last_progress = now_s();
        } else if (nf > 0 && now_s() - last_progress < 0.005) {
            /* transfers in flight: Open MPI moves a large message's fragments only inside MPI calls,
               so keep calling, but give the core to any rank that has work */
            sched_yield();
        } else {
            sleep_ns = sleep_ns == 0 ? 10000 : (sleep_ns * 2 > 1000000 ? 1000000 : sleep_ns * 2);
            struct timespec ts = {0, sleep_ns};
            nanosleep(&ts, NULL);
        }
    }
#undef SAMPLE
    free(alloc_done);
    free(copy_left);
    free(free_done);
    free(free_left_wave);
    free(send_left);
    free(ss);
    free(rs);
    free(fl);
    free(reqs);
    free(idx);
    st->seconds = now_s() - t0;
}

/* ---- rank 0 → every rank: the parts ------------------------------------- */

/* a part as bytes: the struct, then ch, ops, slabs */
static size_t part_bytes(const TxPart *p) {
    return sizeof *p + (size_t)p->nchanges * sizeof *p->ch + (size_t)p->nops * sizeof *p->ops +
           (size_t)p->nslabs * sizeof *p->slabs;
}

int tx_part_scatter(const TxPlan *plan, MPI_Comm comm, TxPart *part) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    char *all = NULL;
    int *counts = NULL, *displs = NULL;
    int64_t ok = 1;
    if (rank == 0) {
        counts = calloc((size_t)size, sizeof *counts);
        displs = calloc((size_t)size, sizeof *displs);
        TxPart *parts = calloc((size_t)size, sizeof *parts);
        size_t total = 0;
        if (!counts || !displs || !parts) ok = 0;
        for (int r = 0; ok && r < size; r++) {
            if (tx_part_extract(plan, r, &parts[r])) { ok = 0; break; }
            size_t b = part_bytes(&parts[r]);
            if (b > (size_t)1 << 30 || total + b > (size_t)2000000000) { ok = 0; break; }
            counts[r] = (int)b;
            displs[r] = (int)total;
            total += b;
        }
        if (ok && (all = malloc(total ? total : 1)) == NULL) ok = 0;
        for (int r = 0; ok && r < size; r++) {
            char *o = all + displs[r];
            memcpy(o, &parts[r], sizeof parts[r]);
            o += sizeof parts[r];
            memcpy(o, parts[r].ch, (size_t)parts[r].nchanges * sizeof *parts[r].ch);
            o += (size_t)parts[r].nchanges * sizeof *parts[r].ch;
            memcpy(o, parts[r].ops, (size_t)parts[r].nops * sizeof *parts[r].ops);
            o += (size_t)parts[r].nops * sizeof *parts[r].ops;
            memcpy(o, parts[r].slabs, (size_t)parts[r].nslabs * sizeof *parts[r].slabs);
        }
        for (int r = 0; parts && r < size; r++) tx_part_free(&parts[r]);
        free(parts);
    }
    mpiCheck(MPI_Bcast(&ok, 1, MPI_INT64_T, 0, comm));
    if (!ok) {
        free(all); free(counts); free(displs);
        return -1;
    }
    int mine = 0;
    mpiCheck(MPI_Scatter(counts, 1, MPI_INT, &mine, 1, MPI_INT, 0, comm));
    char *buf = malloc((size_t)mine);
    if (!buf) nr_fatal("transition: out of memory for this rank's part (%d bytes)", mine);
    mpiCheck(MPI_Scatterv(all, counts, displs, MPI_BYTE, buf, mine, MPI_BYTE, 0, comm));
    free(all); free(counts); free(displs);
    memcpy(part, buf, sizeof *part);
    const char *o = buf + sizeof *part;
    part->ch = malloc((size_t)(part->nchanges ? part->nchanges : 1) * sizeof *part->ch);
    part->ops = malloc((size_t)(part->nops ? part->nops : 1) * sizeof *part->ops);
    part->slabs = malloc((size_t)(part->nslabs ? part->nslabs : 1) * sizeof *part->slabs);
    if (!part->ch || !part->ops || !part->slabs) nr_fatal("transition: out of memory for this rank's part");
    memcpy(part->ch, o, (size_t)part->nchanges * sizeof *part->ch);
    o += (size_t)part->nchanges * sizeof *part->ch;
    memcpy(part->ops, o, (size_t)part->nops * sizeof *part->ops);
    o += (size_t)part->nops * sizeof *part->ops;
    memcpy(part->slabs, o, (size_t)part->nslabs * sizeof *part->slabs);
    free(buf);
    return 0;
}
