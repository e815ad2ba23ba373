/* exec.c — one rank's part of a transition, run with non-blocking MPI
 * (tx_exec.h).
 *
 * Streams. A SEND or RECV op carries the slabs of one (change, src, dst)
 * pair; its stream is, buffer by buffer (params, AdamW m, v), slab by slab,
 * each slab's elements in row-major order. The stream is cut into chunks by
 * one rule both sides apply to the same slab list: a chunk ends after
 * `chunk` bytes, or at the end of a slab-buffer that is itself at least a
 * chunk long (so a large slab is sent in pieces of its own), while small
 * slab-buffers are put together up to a chunk. On a host-memory backend a
 * chunk goes straight from the old shard into the new one: one contiguous
 * run as such, several runs as one MPI datatype over their addresses
 * (hindexed, from MPI_BOTTOM), so no packing copy is made; past TX_MAX_RUNS
 * runs, and on device backends, it is packed through host staging.
 *
 * Order and windows. The global message order is over chunks: by wave,
 * then buffer phase b (params, AdamW m, v: a chunk never spans two
 * buffers), then round j (every stream's chunk j of buffer b), then the
 * stream's place in the part (the DAG's node order). Each rank posts its
 * sends in that order, at most window/2 bytes in flight, and its receives
 * likewise in theirs. The rounds interleave a rank's streams chunk by
 * chunk, so every sender and every receiver has a peer to work with at
 * once; taken stream by stream (TxPart.stream_order), a receiver takes its
 * sources one after another while they send to their first destinations
 * first, a convoy in which few pairs move at a time.
 *
 * Staging (TxPart.no_staging turns it off). A move's new shard comes with
 * its params (the ALLOC hook: gpt_build_shard_dest leaves m and v pending);
 * on a rank that also holds the old shard, new buffer b comes only once old
 * buffer b - 1 is freed, and old buffer b is freed (gpt_state_free) once
 * every send out of it has completed and the local copies have passed it.
 * So such a rank holds at most four of its six state buffers, not all six
 * (the DAG counts it so: staged_need).
 *
 * Phases. tx_execute sets up, then loops over five phases until every op
 * and stream is done, then completes the new shards:
 *   exec_shed_old_shards, exec_alloc_tables, exec_open_streams,
 *   exec_gate_forwards      set-up: the streams in the part's order, what
 *                           each FREE waits for, each forward's gate;
 *   exec_run_alloc_free     ALLOC (after this rank's FREEs of the earlier
 *                           waves) and FREE (once nothing reads the shard);
 *   exec_stage_buffers      old buffers out, new buffers in (Staging);
 *   exec_post_in_order      sends, then receives, posted in the global
 *                           order within the windows;
 *   exec_copy_step          one chunk of a local copy;
 *   exec_collect_completions  completed chunks landed, windows freed;
 *   exec_complete_shards    the new shards made whole, after the last wave.
 *
 * Why this cannot deadlock. Take the earliest unfinished chunk in the
 * global order. Every earlier chunk is done, so (exec_collect_completions
 * has returned their window) the sender's window holds only later chunks
 * or is empty; exec_post_in_order posts in order (order_next; it stops at
 * the first chunk that may not go, never skips one), so the chunk's send is
 * posted, provided its old buffer still exists: exec_stage_buffers and
 * exec_run_alloc_free free an old buffer only once its sends have
 * completed. Its receiver's earlier receives are done likewise, so the
 * receive is posted once its buffer of the new shard exists. That buffer
 * waits on two things only: the ALLOC, which exec_run_alloc_free runs once
 * this rank's FREEs of earlier waves are done, and (exec_stage_buffers) the
 * free of the old buffers before b; both wait only on earlier sends
 * (earlier waves, or earlier phases of this one: done) and on local copies,
 * which exec_copy_step advances on every pass without waiting for any
 * message. So the receive is posted, the earliest chunk completes, and by
 * induction all do.
 *
 * Forwarding. A SEND with feed >= 0 sends, out of the new shard, the stream
 * this rank receives from rank `feed` (the same slab list, so the same
 * chunks): exec_gate_forwards ties it to that receive, and
 * exec_post_next_chunk posts its chunk k once exec_land_flight has marked
 * chunks 0..k of that receive in (per chunk, in case they complete out of
 * order). The receive belongs to an earlier destination of the same change
 * (an earlier stream of the same wave), so its chunks 0..k are earlier in
 * the global order than the forward's chunk k: the induction above still
 * holds. A forward does not hold back the FREE of the old shard (it does
 * not read it).
 *
 * Waiting (comm.h's CommWaiter, yielding for TX_YIELD_S). While the last
 * progress is recent, a pass that made no progress yields the core
 * (sched_yield) and polls again: Open MPI moves a large message's
 * shared-memory fragments only inside MPI calls, so a sleeping poller
 * starves the transfers. After that it sleeps (as comm_wait), so a rank
 * that waits for long does not spin a core.
 *
 * Cost on the CPU backend: the ranks are CPU-bound together; much of their
 * CPU time in here is the kernel faulting in and zeroing the new shards'
 * pages on their first write (the backend maps large buffers lazily), the
 * rest MPI's two copies per moved byte (into and out of shared memory),
 * the local copies and the polling. bench_transition's BENCH_TX_PHASES and
 * BENCH_TX_PRETOUCH measure it; the bound the bench compares with is
 * measured into buffers already touched. */
#include "nereus/tx_exec.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nereus/comm.h"
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
    size_t posted;   /* chunks posted (the next chunk's index) */
    int gate;        /* a forwarding send: the receive stream it forwards (its chunk k goes once that stream's
                        chunks 0..k are in); else -1 */
    char *arrived;   /* a forwarded receive stream: per chunk, 1 once complete; else NULL */
    size_t nchunks, prefix; /* with arrived: its chunks, and how many from the first are complete */
    int ph;          /* the buffer of its last posted chunk, and how many chunks of that buffer it posted */
    size_t ph_posted;
} Stream;

typedef struct Flight {
    MPI_Request req;
    int stream;      /* index into the send or receive streams */
    int send;
    size_t bytes;
    float *stage;    /* host staging (owned), NULL when the chunk goes straight from / into the shard */
    Cursor cur;      /* the chunk's first element */
    size_t chunk;    /* its index in the stream */
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
            if (++c->k == op->nslab) {
                c->k = 0;
                c->b++;
                break; /* a chunk never spans two buffers: they are staged one after another */
            }
            if (big) break; /* and ends one */
        }
    }
    return got;
}

/* Moves cursor c on by take elements of its current slab (take ≤ what is left of it). */
static void cursor_step(const TxPart *pt, const TxOp *op, Cursor *c, size_t take) {
    c->e += take;
    if (c->e == slab_elems(&pt->slabs[op->slab0 + c->k])) {
        c->e = 0;
        if (++c->k == op->nslab) { c->k = 0; c->b++; }
    }
}

/* The next piece of a stream from cursor c, at most n elements, all in one
 * slab of one buffer of shard m; c moves past it. */
typedef struct Piece {
    const Slab *s;
    const TensorInfo *t;
    float *buf;      /* the tensor's local block in buffer c.b */
    size_t e, n;     /* elements [e, e + n) of the slab */
} Piece;

static Piece next_piece(const TxPart *pt, const TxOp *op, GPT *m, Cursor *c, size_t n) {
    Piece p;
    p.s = &pt->slabs[op->slab0 + c->k];
    size_t rest = slab_elems(p.s) - c->e;
    p.n = rest < n ? rest : n;
    p.e = c->e;
    p.t = &m->tensors[p.s->tensor];
    p.buf = buf_of(m, c->b) + p.t->offset;
    cursor_step(pt, op, c, p.n);
    return p;
}

/* Walks n elements from cursor c, calling pack or unpack per slab piece. */
static void stream_copy(const TxPart *pt, const TxOp *op, const Backend *be, GPT *m, Cursor c, size_t n, float *host,
                        int pack) {
    for (size_t h = 0; h < n;) {
        Piece p = next_piece(pt, op, m, &c, n - h);
        if (pack) tx_box_pack(be, p.t, p.buf, p.s->start, p.s->count, p.e, p.n, host + h);
        else tx_box_unpack(be, p.t, p.buf, p.s->start, p.s->count, p.e, p.n, host + h);
        h += p.n;
    }
}

/* A chunk wholly inside one slab and contiguous in the shard: its address there, else NULL. */
static float *direct(const TxPart *pt, const TxOp *op, const Backend *be, GPT *m, Cursor c, size_t n) {
    if (!backend_host_memory(be) || pt->stage_all) return NULL; /* device memory goes through host staging */
    const Slab *s = &pt->slabs[op->slab0 + c.k];
    if (c.e + n > slab_elems(s)) return NULL;
    const TensorInfo *t = &m->tensors[s->tensor];
    size_t off = tx_box_contiguous(t, s->start, s->count, c.e, n);
    return off == (size_t)-1 ? NULL : buf_of(m, c.b) + t->offset + off;
}

/* Where a side (sends or receives) is in the global message order: its streams of one wave
 * [g0, g1) (the part lists them in wave order), round j, stream p next; open: the wave's streams with
 * chunks left to post. */
typedef struct Order {
    int g0, g1, p, open;
    int b;      /* the buffer phase: chunks of buffer b (params, m, v) of the wave */
    size_t j;
} Order;

/* the stream's next chunk is in buffer b */
static int in_phase(const Stream *x, int b) { return x->left > 0 && x->cur.b == b; }

/* The stream whose chunk comes next in the order, or -1 when every chunk is posted: by wave, then buffer
 * phase b (a stream's chunks of buffer b), then round j. Every stream with chunks of buffer b left has
 * posted exactly j of them at its turn in round j of phase b (one chunk a turn). With
 * TxPart.stream_order the caller stays on a stream until it is all posted (the baseline: a wave's streams
 * one after another, round 0 only). */
static int order_next(Order *o, const Stream *S, int ns) {
    for (;;) {
        if (o->p < o->g1) {
            if (in_phase(&S[o->p], o->b)) return o->p;
            o->p++;
            continue;
        }
        if (o->open > 0) { /* the next round of this phase */
            o->j++;
            o->p = o->g0;
            continue;
        }
        if (o->g1 > o->g0 && o->b < 2) { /* the next buffer of this wave */
            o->b++;
            o->j = 0;
            o->p = o->g0;
            for (int q = o->g0; q < o->g1; q++) o->open += in_phase(&S[q], o->b);
            continue;
        }
        if (o->g1 >= ns) return -1;
        o->g0 = o->p = o->g1; /* the next wave */
        o->j = 0;
        o->b = 0;
        while (o->g1 < ns && S[o->g1].op->wave == S[o->g0].op->wave) o->open += in_phase(&S[o->g1++], 0);
        if (o->g1 < ns && S[o->g1].op->wave < S[o->g0].op->wave)
            nr_fatal("transition: the part's streams are not in wave order (a bug)");
    }
}

/* Runs per chunk that a derived datatype may describe; past this the chunk is packed. */
#define TX_MAX_RUNS 4096

typedef struct RunBuf {
    size_t offs[TX_MAX_RUNS], lens[TX_MAX_RUNS];
    int blen[TX_MAX_RUNS];
    MPI_Aint disp[TX_MAX_RUNS];
} RunBuf;

/* A chunk that is not one run, on a host-memory backend: the runs it falls
 * into in the shard's buffers as one datatype over absolute addresses (sent
 * from / received into MPI_BOTTOM), so MPI moves it straight between the
 * shards without our packing copies. Returns 0 when the chunk has more than
 * TX_MAX_RUNS runs (then it is packed). */
static int chunk_type(const TxPart *pt, const TxOp *op, const Backend *be, GPT *m, Cursor c, size_t n, RunBuf *rb,
                      MPI_Datatype *type) {
    if (!backend_host_memory(be) || pt->stage_all) return 0;
    size_t nr = 0;
    for (size_t done = 0; done < n;) {
        Piece p = next_piece(pt, op, m, &c, n - done);
        size_t k = tx_box_runs(p.t, p.s->start, p.s->count, p.e, p.n, rb->offs + nr, rb->lens + nr, TX_MAX_RUNS - nr);
        if (nr + k > TX_MAX_RUNS) return 0;
        for (size_t q = nr; q < nr + k; q++) {
            mpiCheck(MPI_Get_address(p.buf + rb->offs[q], &rb->disp[q]));
            rb->blen[q] = (int)rb->lens[q];
        }
        nr += k;
        done += p.n;
    }
    mpiCheck(MPI_Type_create_hindexed((int)nr, rb->blen, rb->disp, MPI_FLOAT, type));
    mpiCheck(MPI_Type_commit(type));
    return 1;
}

/* Local slab elements [e, e + m) from the old shard's buffer to the new
 * one's: run against run where both sides' runs fit in rb, else through
 * the host buffer (device backends always). */
static void copy_box(const Backend *be, const TensorInfo *tf, const float *fb, const TensorInfo *tt, float *tb,
                     const Slab *s, size_t e, size_t m, RunBuf *rb, float *host) {
    size_t half = TX_MAX_RUNS / 2;
    size_t nf = 0, nt = 0;
    if (backend_host_memory(be)) {
        nf = tx_box_runs(tf, s->start, s->count, e, m, rb->offs, rb->lens, half);
        nt = tx_box_runs(tt, s->start, s->count, e, m, rb->offs + half, rb->lens + half, half);
    }
    if (nf == 0 || nt == 0 || nf > half || nt > half) {
        tx_box_pack(be, tf, fb, s->start, s->count, e, m, host);
        tx_box_unpack(be, tt, tb, s->start, s->count, e, m, host);
        return;
    }
    size_t i = 0, j = 0, ui = 0, uj = 0; /* run i of the source, j of the destination, and how much of each is used */
    while (i < nf && j < nt) {
        size_t li = rb->lens[i] - ui, lj = rb->lens[half + j] - uj, l = li < lj ? li : lj;
        be->copy(tb + rb->offs[half + j] + uj, fb + rb->offs[i] + ui, l * sizeof(float));
        ui += l;
        uj += l;
        if (ui == rb->lens[i]) { i++; ui = 0; }
        if (uj == rb->lens[half + j]) { j++; uj = 0; }
    }
}

/* How many of change c's old buffers, from the first, nothing reads any more (every send out of them
 * complete, the local copies past them), at most nb. */
static int old_read(const int64_t *send_left_b, const int *copy_left_b, int c, int nb) {
    int b = 0;
    while (b < nb && send_left_b[c * 3 + b] == 0 && copy_left_b[c * 3 + b] == 0) b++;
    return b;
}

/* Posts one chunk of n floats to or from peer (tag: the change): the runs of `type` from MPI_BOTTOM (freed
 * here: MPI keeps it while the call needs it), else n contiguous floats at p. */
static void post_chunk(int send, float *p, size_t n, MPI_Datatype type, int peer, int tag, MPI_Comm comm,
                       MPI_Request *req) {
    if (type != MPI_DATATYPE_NULL) {
        if (send) mpiCheck(MPI_Isend(MPI_BOTTOM, 1, type, peer, tag, comm, req));
        else mpiCheck(MPI_Irecv(MPI_BOTTOM, 1, type, peer, tag, comm, req));
        mpiCheck(MPI_Type_free(&type));
    } else if (send) {
        mpiCheck(MPI_Isend(p, (int)n, MPI_FLOAT, peer, tag, comm, req));
    } else {
        mpiCheck(MPI_Irecv(p, (int)n, MPI_FLOAT, peer, tag, comm, req));
    }
}

/* Local copy of a COPY op's next piece from cursor cu (at most max floats, within one slab) from the old
 * shard into the new; cu moves past it. Returns the floats copied. */
static size_t copy_piece(const TxPart *pt, const TxOp *op, const TxEndpoint *e, const Backend *be, Cursor *cu,
                         size_t max, RunBuf *rb, float *host) {
    const Slab *s = &pt->slabs[op->slab0 + cu->k];
    const TensorInfo *tf = &e->from->tensors[s->tensor], *tt = &e->to->tensors[s->tensor];
    float *fb = buf_of(e->from, cu->b) + tf->offset, *tb = buf_of(e->to, cu->b) + tt->offset;
    size_t n = slab_elems(s), m = n - cu->e < max ? n - cu->e : max;
    copy_box(be, tf, fb, tt, tb, s, cu->e, m, rb, host);
    cursor_step(pt, op, cu, m);
    return m;
}

/* ---- tx_execute: the executor's state and its phases ------------------------------------------------ */

/* What the phases of one tx_execute share: the part and its endpoints, per change the progress of its
 * ops and buffers, the send and receive streams with their place in the global order, and the chunks in
 * flight. */
typedef struct Exec {
    const TxPart *pt;
    TxEndpoint *ep;
    const TxHooks *hooks;
    const Backend *be;
    MPI_Comm comm;
    TxStats *st;
    int nc;                  /* changes */
    size_t chunk_el, half;   /* floats per chunk; bytes in flight per side */
    size_t staging;          /* host bytes held for transfers (staged chunks, the copy buffer) */
    /* per change: ALLOC done, FREE done, new buffers present, old buffers freed, new shard took the old one's */
    int *alloc_done, *free_done, *nb_alloc, *nb_free;
    char *swapped;
    int *free_left_wave;     /* (nwaves) FREE ops not yet done per wave */
    int64_t *send_left_b;    /* (nc · 3) per (change, buffer): bytes of sends out of the old shard not complete */
    int *copy_left_b;        /* (nc · 3) per (change, buffer): COPY ops not yet past it */
    Stream *ss, *rs;         /* send and receive streams, in the part's order */
    int nsend, nrecv;
    Order ord[2];            /* sends, receives: the next chunk to post */
    int by_stream;           /* TxPart.stream_order */
    size_t in_send, in_recv; /* bytes in flight */
    Flight *fl;              /* (nf) chunks in flight, their requests in reqs */
    MPI_Request *reqs;
    int *idx;
    size_t nf, fcap;
    RunBuf *rb;
    Cursor *copy_cur;        /* (nops) per COPY op: its next element */
    char *copy_done_op;
    float *copy_host;        /* one chunk: local copies that go through the host */
    int64_t ops_left;        /* ALLOC, COPY and FREE ops not done */
    int64_t streams_left;    /* streams with bytes not yet complete */
} Exec;

/* the memory high-water mark: the backend's live bytes plus the transfer buffers */
static void exec_sample(Exec *x) {
    size_t m = (x->be->mem_live ? x->be->mem_live() : 0) + x->staging;
    if (m > x->st->mem_peak) x->st->mem_peak = m;
}

/* An old shard that moves is read only for its params, m and v: its gradients, activations and caches go
 * first (gpt_shed), before any new shard is allocated, so the new shards can take their pages (memory.c's
 * pool: warm instead of faulted in). The new shards are built with their state only (the ALLOC hook:
 * gpt_build_shard_dest, m and v pending) and completed at the end (exec_complete_shards). So a rank holds
 * old and new state during the transition, not two whole shards, and of the state at most four of six
 * buffers at once (exec_stage_buffers; tx_plan_build counts it so: gpt_shard_state_bytes,
 * staged_need). */
static void exec_shed_old_shards(Exec *x) {
    for (int c = 0; c < x->nc; c++)
        if (x->pt->ch[c].kind == TX_MOVE && x->ep[c].from) gpt_shed(x->ep[c].from);
    x->st->mem_start = x->be->mem_live ? x->be->mem_live() : 0;
    x->st->mem_peak = x->st->mem_start;
}

/* The executor's tables, sized from the part; a COPY op anywhere holds one chunk of host buffer for the
 * whole run. */
static void exec_alloc_tables(Exec *x) {
    const TxPart *pt = x->pt;
    size_t nc = (size_t)x->nc;
    for (int64_t i = 0; i < pt->nops; i++) {
        x->nsend += pt->ops[i].kind == TXO_SEND;
        x->nrecv += pt->ops[i].kind == TXO_RECV;
    }
    x->alloc_done = calloc(nc + 1, sizeof(int));
    x->free_done = calloc(nc + 1, sizeof(int));
    x->free_left_wave = calloc((size_t)pt->nwaves + 1, sizeof(int));
    x->nb_alloc = calloc(nc + 1, sizeof(int));
    x->nb_free = calloc(nc + 1, sizeof(int));
    x->send_left_b = calloc(nc * 3 + 1, sizeof(int64_t));
    x->copy_left_b = calloc(nc * 3 + 1, sizeof(int));
    x->ss = calloc((size_t)x->nsend + 1, sizeof *x->ss);
    x->rs = calloc((size_t)x->nrecv + 1, sizeof *x->rs);
    x->fcap = 64;
    x->fl = malloc(x->fcap * sizeof *x->fl);
    x->reqs = malloc(x->fcap * sizeof *x->reqs);
    x->idx = malloc(x->fcap * sizeof *x->idx);
    x->rb = malloc(sizeof *x->rb);
    x->copy_cur = calloc((size_t)pt->nops + 1, sizeof *x->copy_cur);
    x->copy_done_op = calloc((size_t)pt->nops + 1, 1);
    x->swapped = calloc(nc + 1, 1);
    int has_copy = 0;
    for (int64_t i = 0; i < pt->nops; i++) has_copy |= pt->ops[i].kind == TXO_COPY;
    x->copy_host = malloc(has_copy ? pt->chunk : 4);
    x->staging = has_copy ? pt->chunk : 0;
    exec_sample(x);
    if (!x->alloc_done || !x->free_done || !x->free_left_wave || !x->ss || !x->rs || !x->fl || !x->reqs || !x->idx ||
        !x->rb || !x->copy_cur || !x->copy_done_op || !x->swapped || !x->copy_host || !x->nb_alloc || !x->nb_free ||
        !x->send_left_b || !x->copy_left_b)
        nr_fatal("transition: out of memory for the executor");
}

/* Every SEND and RECV op becomes a stream (in the part's order: the DAG's node order), and what each FREE
 * waits for is counted: per (change, buffer) the bytes sent out of the old shard and the COPY ops that read
 * it. A change this rank does not receive, or a copy, needs no ALLOC. */
static void exec_open_streams(Exec *x) {
    const TxPart *pt = x->pt;
    for (int c = 0; c < x->nc; c++) {
        x->alloc_done[c] = pt->ch[c].kind == TX_COPY || !pt->ch[c].in_to;
        x->nb_alloc[c] = x->alloc_done[c] ? pt->ch[c].nbufs : 0;
    }
    x->nsend = x->nrecv = 0;
    for (int64_t i = 0; i < pt->nops; i++) {
        const TxOp *op = &pt->ops[i];
        int nb = pt->ch[op->change].nbufs;
        if (op->kind == TXO_SEND) {
            x->ss[x->nsend++] = (Stream){op, {0, 0, 0}, (size_t)op->bytes, 0, 0, -1, NULL, 0, 0, 0, 0};
            if (op->feed < 0) /* out of the old shard: each buffer's FREE waits, and the shard's */
                for (int b = 0; b < nb; b++) x->send_left_b[op->change * 3 + b] += op->bytes / nb;
        } else if (op->kind == TXO_RECV) {
            x->rs[x->nrecv++] = (Stream){op, {0, 0, 0}, (size_t)op->bytes, 0, 0, -1, NULL, 0, 0, 0, 0};
        } else if (op->kind == TXO_COPY) {
            for (int b = 0; b < nb; b++) x->copy_left_b[op->change * 3 + b]++;
        } else if (op->kind == TXO_FREE) {
            x->free_left_wave[op->wave]++;
        }
    }
}

/* Each forwarding send is gated on the receive stream it forwards (one per (change, peer)), whose chunks
 * are marked as they complete. */
static void exec_gate_forwards(Exec *x) {
    const TxPart *pt = x->pt;
    for (int i = 0; i < x->nsend; i++) {
        const TxOp *op = x->ss[i].op;
        if (op->feed < 0) continue;
        int j = 0;
        while (j < x->nrecv && (x->rs[j].op->change != op->change || x->rs[j].op->peer != op->feed)) j++;
        if (j == x->nrecv || x->rs[j].op->bytes != op->bytes)
            nr_fatal("transition: rank %d forwards to rank %d what it does not receive from rank %d (change %d)",
                     pt->rank, op->peer, op->feed, op->change);
        x->ss[i].gate = j;
        Stream *r = &x->rs[j];
        if (r->arrived) continue;
        int nb = pt->ch[op->change].nbufs;
        for (Cursor cc = {0, 0, 0}; cc.b < nb; r->nchunks++) next_chunk(pt, r->op, nb, &cc, x->chunk_el);
        if (!(r->arrived = calloc(r->nchunks + 1, 1))) nr_fatal("transition: out of memory for the executor");
    }
}

/* ALLOC and FREE ops in op order. An ALLOC of wave w waits for this rank's FREEs of the earlier waves; a
 * FREE waits until nothing reads any buffer of the old shard (its sends complete, its local copies done).
 * Returns 1 when one ran. */
static int exec_run_alloc_free(Exec *x) {
    const TxPart *pt = x->pt;
    int progress = 0;
    for (int64_t i = 0; i < pt->nops; i++) {
        const TxOp *op = &pt->ops[i];
        int c = op->change;
        if (op->kind == TXO_ALLOC && !x->alloc_done[c]) {
            int ok = 1;
            for (int w = 0; w < op->wave; w++) ok &= x->free_left_wave[w] == 0;
            if (!ok) continue;
            double th = nr_now();
            x->hooks->alloc(x->hooks->ctx, c);
            x->st->hook_seconds += nr_now() - th;
            x->alloc_done[c] = 1;
            /* the hook built params, and m and v unless it left them pending (gpt_build_shard_dest) */
            x->nb_alloc[c] = pt->ch[c].kind == TX_MOVE && pt->ch[c].nbufs == 3 && x->ep[c].to && !x->ep[c].to->m
                                 ? 1 : pt->ch[c].nbufs;
            exec_sample(x);
            x->ops_left--;
            progress = 1;
        } else if (op->kind == TXO_FREE && !x->free_done[c] &&
                   old_read(x->send_left_b, x->copy_left_b, c, pt->ch[c].nbufs) == pt->ch[c].nbufs) {
            double th = nr_now();
            if (pt->ch[c].kind == TX_MOVE) x->hooks->release(x->hooks->ctx, c);
            x->st->hook_seconds += nr_now() - th;
            x->free_done[c] = 1;
            x->free_left_wave[op->wave]--;
            x->ops_left--;
            progress = 1;
        }
    }
    return progress;
}

/* Buffer staging: an old buffer goes once nothing reads it any more (its sends complete, its local copies
 * done), and new buffer b comes once old buffer b - 1 is gone, so a rank that moves holds at most four of
 * its six state buffers at once (TxPart.no_staging: every new buffer at once, no old one freed before the
 * shard). Returns 1 when a buffer came or went. */
static int exec_stage_buffers(Exec *x) {
    const TxPart *pt = x->pt;
    int progress = 0;
    for (int c = 0; c < x->nc; c++) {
        const TxPartChange *pc = &pt->ch[c];
        if (pc->kind != TX_MOVE || !x->alloc_done[c]) continue;
        GPT *from = x->free_done[c] ? NULL : x->ep[c].from;
        int done = from && !pt->no_staging ? old_read(x->send_left_b, x->copy_left_b, c, pc->nbufs - 1) : 0;
        while (x->nb_free[c] < done) {
            gpt_state_free(from, x->nb_free[c]++);
            progress = 1;
        }
        while (x->nb_alloc[c] < pc->nbufs && (!from || pt->no_staging || x->nb_free[c] >= x->nb_alloc[c])) {
            gpt_state_alloc(x->ep[c].to, x->nb_alloc[c]++);
            exec_sample(x);
            progress = 1;
        }
    }
    return progress;
}

/* A new flight slot (the tables grow by doubling). */
static Flight *exec_flight_slot(Exec *x) {
    if (x->nf == x->fcap) {
        x->fcap *= 2;
        x->fl = realloc(x->fl, x->fcap * sizeof *x->fl);
        x->reqs = realloc(x->reqs, x->fcap * sizeof *x->reqs);
        x->idx = realloc(x->idx, x->fcap * sizeof *x->idx);
        if (!x->fl || !x->reqs || !x->idx) nr_fatal("transition: out of memory for requests");
    }
    return &x->fl[x->nf];
}

/* Posts stream si's next chunk on its side (0 sends, 1 receives) if it may go now: a receive once its
 * buffer of the new shard exists, a forward once the chunk has arrived, and within the side's window (one
 * chunk is always let through). Returns 0 when it may not (the caller stops: in order, nothing later may
 * go either), 1 when posted. */
static int exec_post_next_chunk(Exec *x, int side, int si) {
    const TxPart *pt = x->pt;
    Stream *s = side == 0 ? &x->ss[si] : &x->rs[si];
    Order *o = &x->ord[side];
    size_t *inflight = side == 0 ? &x->in_send : &x->in_recv;
    int c = s->op->change;
    if (side == 1 && x->nb_alloc[c] <= s->cur.b) return 0;
    if (side == 0 && s->gate >= 0 && x->rs[s->gate].prefix <= s->posted) return 0; /* not arrived yet */
    Cursor c0 = s->cur, c1 = s->cur;
    size_t n = next_chunk(pt, s->op, pt->ch[c].nbufs, &c1, x->chunk_el), bytes = n * sizeof(float);
    if (*inflight > 0 && *inflight + bytes > x->half) return 0;
    /* a forward reads the new shard, where the chunk arrived */
    GPT *m = side == 0 && s->op->feed < 0 ? (x->swapped[c] ? x->ep[c].to : x->ep[c].from) : x->ep[c].to;
    if (!m) nr_fatal("transition: rank %d has no %s shard for change %d", pt->rank, side == 0 ? "old" : "new", c);
    float *dp = direct(pt, s->op, x->be, m, c0, n), *stage = NULL;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    if (!dp && !chunk_type(pt, s->op, x->be, m, c0, n, x->rb, &type)) {
        stage = malloc(bytes ? bytes : 4);
        if (!stage) nr_fatal("transition: out of memory for a %zu-byte chunk", bytes);
        x->staging += bytes;
        exec_sample(x);
        if (side == 0) stream_copy(pt, s->op, x->be, m, c0, n, stage, 1);
    }
    Flight *f = exec_flight_slot(x);
    *f = (Flight){MPI_REQUEST_NULL, si, side == 0, bytes, stage, c0, s->posted++};
    post_chunk(side == 0, stage ? stage : dp, n, type, s->op->peer, c, x->comm, &f->req);
    x->reqs[x->nf++] = f->req;
    if (s->ph != c0.b) s->ph = c0.b, s->ph_posted = 0;
    s->ph_posted++;
    if (!x->by_stream && s->ph_posted != o->j + 1) nr_fatal("transition: a stream out of its round (a bug)");
    s->cur = c1;
    s->left -= bytes;
    o->open -= !in_phase(s, o->b);
    if (!x->by_stream || !in_phase(s, o->b)) o->p++;
    s->pending += bytes;
    *inflight += bytes;
    if (side == 0) x->st->messages_sent++;
    return 1;
}

/* Sends, then receives, each side in the global message order (order_next) as far as it may go. Returns 1
 * when a chunk was posted. */
static int exec_post_in_order(Exec *x) {
    int progress = 0;
    for (int side = 0; side < 2; side++) {
        Stream *S = side == 0 ? x->ss : x->rs;
        int ns = side == 0 ? x->nsend : x->nrecv;
        for (int si; (si = order_next(&x->ord[side], S, ns)) >= 0 && exec_post_next_chunk(x, side, si);) progress = 1;
    }
    return progress;
}

/* One chunk of the first COPY op that can go (its new buffer present), so that the transfers posted
 * meanwhile progress; a rank whose new shard is its old one whole takes the old buffers instead. Returns 1
 * when it copied. */
static int exec_copy_step(Exec *x) {
    const TxPart *pt = x->pt;
    for (int64_t i = 0; i < pt->nops; i++) {
        const TxOp *op = &pt->ops[i];
        int c = op->change;
        if (op->kind != TXO_COPY || x->copy_done_op[i] || !x->alloc_done[c] || x->nb_alloc[c] <= x->copy_cur[i].b)
            continue;
        double tc = nr_now();
        const TxPartChange *pc = &pt->ch[c];
        Cursor *cu = &x->copy_cur[i];
        if (cu->b == 0 && cu->k == 0 && cu->e == 0 && pc->kind == TX_MOVE &&
            gpt_swap_state(x->ep[c].from, x->ep[c].to, pc->nbufs == 3) == 0) {
            /* the rank keeps its shard: the new model takes the old one's buffers (sends still to post read
               them from there) */
            x->swapped[c] = 1;
            for (int64_t k = 0; k < op->nslab; k++)
                x->st->bytes_copied += slab_elems(&pt->slabs[op->slab0 + k]) * sizeof(float) * (size_t)pc->nbufs;
            cu->b = pc->nbufs;
            x->nb_alloc[c] = pc->nbufs; /* the old shard's buffers, all of them */
            for (int b = 0; b < pc->nbufs; b++) x->copy_left_b[c * 3 + b]--;
        } else {
            int b0 = cu->b;
            size_t n = copy_piece(pt, op, &x->ep[c], x->be, cu, x->chunk_el, x->rb, x->copy_host);
            x->st->bytes_copied += n * sizeof(float);
            if (cu->b != b0) x->copy_left_b[c * 3 + b0]--; /* this op's copies of buffer b0 are done */
        }
        x->st->copy_seconds += nr_now() - tc;
        if (cu->b >= pc->nbufs) {
            x->copy_done_op[i] = 1;
            x->ops_left--;
        }
        return 1;
    }
    return 0;
}

/* A completed chunk: a send no longer holds its old buffer; a received chunk is unpacked if it was staged,
 * and marked arrived for the forward that waits on it. */
static void exec_land_flight(Exec *x, const Flight *f) {
    Stream *s = f->send ? &x->ss[f->stream] : &x->rs[f->stream];
    int c = s->op->change;
    if (f->send) {
        x->in_send -= f->bytes;
        if (s->op->feed < 0) x->send_left_b[c * 3 + f->cur.b] -= (int64_t)f->bytes;
        x->st->bytes_sent += f->bytes;
        if (s->op->feed >= 0) x->st->bytes_forwarded += f->bytes;
    } else {
        if (f->stage) stream_copy(x->pt, s->op, x->be, x->ep[c].to, f->cur, f->bytes / sizeof(float), f->stage, 0);
        x->in_recv -= f->bytes;
        x->st->bytes_recv += f->bytes;
        if (s->arrived) { /* in the new shard now: its forward may send it on */
            s->arrived[f->chunk] = 1;
            while (s->prefix < s->nchunks && s->arrived[s->prefix]) s->prefix++;
        }
    }
    if (f->stage) {
        free(f->stage);
        x->staging -= f->bytes;
    }
    s->pending -= f->bytes;
    if (s->left == 0 && s->pending == 0) x->streams_left--;
}

/* The chunks that completed since the last pass, landed; the rest kept in order. Returns 1 when any did. */
static int exec_collect_completions(Exec *x) {
    if (x->nf == 0) return 0;
    int nd = 0;
    mpiCheck(MPI_Testsome((int)x->nf, x->reqs, &nd, x->idx, MPI_STATUSES_IGNORE));
    if (nd <= 0 || nd == MPI_UNDEFINED) return 0;
    for (int q = 0; q < nd; q++) {
        exec_land_flight(x, &x->fl[x->idx[q]]);
        x->fl[x->idx[q]].req = MPI_REQUEST_NULL;
    }
    size_t w = 0;
    for (size_t k = 0; k < x->nf; k++)
        if (x->reqs[k] != MPI_REQUEST_NULL) {
            x->fl[w] = x->fl[k];
            x->fl[w].req = x->reqs[k];
            x->reqs[w] = x->reqs[k];
            w++;
        }
    x->nf = w;
    return 1;
}

/* Every old shard of this rank is freed now: the new shards get what they need beyond their state
 * (gradients, activations, caches: gpt_complete), which take the freed pages. The transfer buffers go
 * first: the DAG's end (tx_plan_build, after the last wave) holds the models alone. */
static void exec_complete_shards(Exec *x) {
    free(x->copy_host);
    x->copy_host = NULL;
    x->staging = 0;
    for (int c = 0; c < x->nc; c++)
        if (x->pt->ch[c].kind == TX_MOVE && x->ep[c].to) {
            double th = nr_now();
            gpt_complete(x->ep[c].to);
            x->st->hook_seconds += nr_now() - th;
        }
    exec_sample(x);
}

static void exec_free_tables(Exec *x) {
    free(x->alloc_done);
    free(x->nb_alloc);
    free(x->nb_free);
    free(x->send_left_b);
    free(x->copy_left_b);
    free(x->free_done);
    free(x->free_left_wave);
    free(x->ss);
    for (int j = 0; j < x->nrecv; j++) free(x->rs[j].arrived);
    free(x->rs);
    free(x->fl);
    free(x->reqs);
    free(x->idx);
    free(x->rb);
    free(x->copy_cur);
    free(x->copy_done_op);
    free(x->swapped);
    free(x->copy_host);
}

void tx_execute(const TxPart *pt, TxEndpoint *ep, const TxHooks *hooks, const Backend *be, MPI_Comm comm,
                TxStats *st) {
    memset(st, 0, sizeof *st);
    double t0 = nr_now();
    struct timespec cpu0;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu0);
    Exec x = {.pt = pt, .ep = ep, .hooks = hooks, .be = be, .comm = comm, .st = st, .nc = pt->nchanges,
              .chunk_el = pt->chunk / sizeof(float), .half = pt->window / 2, .by_stream = pt->stream_order};
    exec_shed_old_shards(&x);
    exec_alloc_tables(&x);
    exec_open_streams(&x);
    exec_gate_forwards(&x);
    x.ops_left = pt->nops - x.nsend - x.nrecv;
    x.streams_left = x.nsend + x.nrecv;
    CommWaiter wt = {.yield_s = TX_YIELD_S};
    while (x.ops_left > 0 || x.streams_left > 0) {
        int progress = exec_run_alloc_free(&x);
        progress |= exec_stage_buffers(&x);
        progress |= exec_post_in_order(&x);
        progress |= exec_copy_step(&x);
        progress |= exec_collect_completions(&x);
        /* Open MPI moves a large message's fragments only inside MPI calls: keep calling, giving the core
           to any rank that has work; sleep once nothing has moved for a while */
        if (progress) comm_waiter_progress(&wt);
        else comm_waiter_pause(&wt);
    }
    exec_complete_shards(&x);
    exec_free_tables(&x);
    st->seconds = nr_now() - t0;
    struct timespec cpu1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu1);
    st->cpu_seconds = (double)(cpu1.tv_sec - cpu0.tv_sec) + 1e-9 * (double)(cpu1.tv_nsec - cpu0.tv_nsec);
}

/* The bench's raw-MPI floor (tx_exec.h): every chunk of every stream
 * posted at once, with the datatypes the executor uses, the local copies,
 * then MPI_Waitall. */
double tx_replay(const TxPart *pt, const TxEndpoint *ep, const Backend *be, MPI_Comm comm) {
    if (!backend_host_memory(be) || pt->stage_all) return -1;
    size_t chunk_el = pt->chunk / sizeof(float), nq = 0, cap = 64;
    MPI_Request *reqs = malloc(cap * sizeof *reqs);
    RunBuf *rb = malloc(sizeof *rb);
    if (!reqs || !rb) nr_fatal("transition: out of memory for the replay");
    for (int c = 0; c < pt->nchanges; c++) /* every buffer at once: no staging here */
        for (int b = 1; ep[c].to && pt->ch[c].kind == TX_MOVE && b < pt->ch[c].nbufs; b++) gpt_state_alloc(ep[c].to, b);
    mpiCheck(MPI_Barrier(comm));
    double t0 = nr_now();
    for (int side = 0; side < 2; side++)
        for (int64_t i = 0; i < pt->nops; i++) {
            const TxOp *op = &pt->ops[i];
            if (op->kind != (side == 0 ? TXO_SEND : TXO_RECV)) continue;
            int c = op->change;
            GPT *m = side == 0 && op->feed < 0 ? ep[c].from : ep[c].to;
            if (!m) nr_fatal("transition: the replay has no %s shard for change %d", side == 0 ? "old" : "new", c);
            for (Cursor cur = {0, 0, 0}; cur.b < pt->ch[c].nbufs;) {
                Cursor c0 = cur;
                size_t n = next_chunk(pt, op, pt->ch[c].nbufs, &cur, chunk_el);
                if (nq == cap && !(reqs = realloc(reqs, (cap *= 2) * sizeof *reqs)))
                    nr_fatal("transition: out of memory for the replay");
                float *dp = direct(pt, op, be, m, c0, n);
                MPI_Datatype type = MPI_DATATYPE_NULL;
                if (!dp && !chunk_type(pt, op, be, m, c0, n, rb, &type))
                    nr_fatal("transition: the replay cannot describe a chunk of %zu runs or more", (size_t)TX_MAX_RUNS);
                post_chunk(side == 0, dp, n, type, op->peer, c, comm, &reqs[nq++]);
            }
        }
    /* the local copies while the messages move */
    float *host = malloc(pt->chunk);
    if (!host) nr_fatal("transition: out of memory for the replay");
    for (int64_t i = 0; i < pt->nops; i++)
        for (Cursor cu = {0, 0, 0}; pt->ops[i].kind == TXO_COPY && cu.b < pt->ch[pt->ops[i].change].nbufs;)
            copy_piece(pt, &pt->ops[i], &ep[pt->ops[i].change], be, &cu, chunk_el, rb, host);
    mpiCheck(MPI_Waitall((int)nq, reqs, MPI_STATUSES_IGNORE));
    double t = nr_now() - t0;
    free(host);
    free(reqs);
    free(rb);
    return t;
}

/* ---- rank 0 → every rank: the parts ------------------------------------- */

/* What rank 0 sends. Not the expanded slabs (at 1,024 ranks ~70,000 of
 * them, ~9 MiB): every rank gets the plan's geometry (per change its slab
 * shapes and blocks, TxSlabs.geo and .blk: the same for all, broadcast) and
 * its own compact part: the TxPart fields, ch, and ops whose slab0 / nslab
 * index its list of block refs (TxRef: block, source, destination), sent
 * with MPI_Scatterv. Each rank then expands its refs into its slabs, exactly
 * as tx_part_extract would (test_transition compares the two). */

int tx_part_scatter(const TxPlan *plan, MPI_Comm comm, TxPart *part) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    char *all = NULL, *geo = NULL;
    int *counts = NULL, *displs = NULL;
    int64_t hdr[3] = {1, 0, 0}; /* ok, geometry bytes, changes */
    size_t glen = 0;
    if (rank == 0) {
        counts = calloc((size_t)size, sizeof *counts);
        displs = calloc((size_t)size, sizeof *displs);
        if (!counts || !displs || plan->nranks < size || tx_parts_pack(plan, size, &all, counts, displs) ||
            !(geo = tx_geometry_pack(plan, &glen)) || glen > (size_t)2000000000)
            hdr[0] = 0;
        hdr[1] = (int64_t)glen;
        hdr[2] = plan->nchanges;
    }
    mpiCheck(MPI_Bcast(hdr, 3, MPI_INT64_T, 0, comm));
    if (!hdr[0]) {
        free(all); free(geo); free(counts); free(displs);
        return -1;
    }
    glen = (size_t)hdr[1];
    if (rank != 0 && (geo = malloc(glen ? glen : 1)) == NULL) nr_fatal("transition: out of memory for the geometry");
    mpiCheck(MPI_Bcast(geo, (int)glen, MPI_BYTE, 0, comm));
    int mine = 0;
    mpiCheck(MPI_Scatter(counts, 1, MPI_INT, &mine, 1, MPI_INT, 0, comm));
    char *buf = malloc((size_t)mine);
    if (!buf) nr_fatal("transition: out of memory for this rank's part (%d bytes)", mine);
    mpiCheck(MPI_Scatterv(all, counts, displs, MPI_BYTE, buf, mine, MPI_BYTE, 0, comm));
    free(all); free(counts); free(displs);

    /* this rank's part: its refs expanded into slabs */
    if (tx_part_unpack(buf, geo, part)) nr_fatal("transition: out of memory for this rank's part");
    free(geo);
    free(buf);
    return 0;
}
