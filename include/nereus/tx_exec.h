/* tx_exec.h — the transition executor: each rank runs its part of a
 * transition plan (transition.h) with non-blocking MPI, moving the slabs
 * between the old and new shards of its models. Also here: the scatter of
 * the parts from rank 0, the raw-MPI replay the bench compares with, the
 * probe of what links and copies a transition can expect, and the boxes
 * inside a local shard the executor copies through (pack.c). */
#ifndef NEREUS_TX_EXEC_H
#define NEREUS_TX_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "nereus/backend.h"
#include "nereus/model.h"
#include "nereus/transition.h"

/* collective over comm (the job communicator, ranks = job ranks): rank 0
 * passes the plan (others NULL); every rank gets its part: the geometry by
 * MPI_Bcast, its packed part by MPI_Scatterv, expanded there
 * (tx_part_unpack) — rank 0 never expands every rank's slabs. */
int tx_part_scatter(const TxPlan *plan, MPI_Comm comm, TxPart *part);

/* ---- execution ---------------------------------------------------------- */
/* This rank's models of one change: from (the old shard, NULL when not held
 * here), to (the new shard: for TX_COPY it exists; for TX_MOVE the alloc
 * hook builds it). */
typedef struct TxEndpoint {
    GPT *from, *to;
} TxEndpoint;

typedef struct TxHooks {
    void *ctx;
    void (*alloc)(void *ctx, int change);   /* TX_MOVE: build ep[change].to (an empty shard, new communicators) */
    void (*release)(void *ctx, int change); /* TX_MOVE: free ep[change].from */
} TxHooks;

typedef struct TxStats {
    double seconds;        /* this rank's wall time in tx_execute */
    double copy_seconds;   /* of which in local copies */
    double hook_seconds;   /* of which in the alloc and release hooks */
    double cpu_seconds;    /* this rank's CPU time in tx_execute (user + system: copies, page faults, polling) */
    size_t bytes_sent, bytes_recv, bytes_copied;
    size_t bytes_forwarded;/* of bytes_sent, forwarded out of the new shard */
    size_t messages_sent;
    size_t mem_peak;       /* measured: be->mem_live high-water + transfer buffers, bytes */
    size_t mem_start;      /* be->mem_live at entry */
} TxStats;

/* Runs this rank's part (collective in effect: every rank of comm runs its
 * own part at the same time). comm: a communicator of the job ranks, used
 * for the transfers only (tags: change index). Non-blocking sends and
 * receives, chunks of part->chunk bytes, at most part->window/2 bytes of
 * sends and as many of receives in flight; waiting sleeps (comm.h). */
void tx_execute(const TxPart *part, TxEndpoint *ep, const TxHooks *hooks, const Backend *be, MPI_Comm comm,
                TxStats *st);

/* The raw-MPI floor of a part, for benchmarks: every message the executor would send and receive (the
 * same chunks, each as the same contiguous run or derived datatype) posted at once, the local copies done
 * (memcpy of runs) while they move, then MPI_Waitall; nothing else: no window, no hooks, no ordering, no
 * progress calls during the copies. ep[c].from and .to must both exist where the part touches them. Forwarded chunks are sent before they arrive, so their data is not right: a timing
 * baseline, never a transition. Returns this rank's seconds from a barrier; -1 on a device backend. */
double tx_replay(const TxPart *part, const TxEndpoint *ep, const Backend *be, MPI_Comm comm);

/* How long a rank with transfers in flight polls (yielding) without progress before it sleeps (the
 * engine's and tx_probe's waits) */
#ifndef TX_YIELD_S
#define TX_YIELD_S 0.005
#endif

/* What a transition can expect of this machine, measured the way a transition runs: every rank of c at
 * once (probe.c). link: bytes/s per rank while each rank sends `bytes` to the next rank and receives as
 * many from the previous, streamed as the engine streams (pieces of `chunk` bytes, half the `window` of
 * them in flight each way, at most TX_PROBE_MAX_INFLIGHT; waited as the engine waits), from the slowest
 * rank's time; copy: bytes/s per rank of a local copy of `bytes` with every rank copying. Medians of
 * reps. Where ranks share cores both come out far below one pair's or one core's rate, as a transition
 * sees them. Collective over c; host memory; about reps x 4 x bytes / link seconds. */
typedef struct TxProbe {
    double link, copy;
} TxProbe;
#define TX_PROBE_MAX_INFLIGHT 64
void tx_probe(MPI_Comm c, size_t bytes, size_t chunk, size_t window, int reps, TxProbe *out);

/* ---- boxes inside local shards (pack.c) ---------------------------------- */
/* Copies elements [e0, e0 + n) (row-major order of box start/count) of
 * tensor t between its local buffer buf (backend memory: the shard's params,
 * m or v plus t->offset) and host memory: pack = buffer → host, unpack =
 * host → buffer. The box must lie inside what t holds. */
void tx_box_pack(const Backend *be, const TensorInfo *t, const float *buf, const int start[4], const int count[4],
                 size_t e0, size_t n, float *host);
void tx_box_unpack(const Backend *be, const TensorInfo *t, float *buf, const int start[4], const int count[4],
                   size_t e0, size_t n, const float *host);
/* The runs of box elements [e0, e0 + n) in the local buffer: offsets and
 * lengths (floats) of each contiguous piece, in box order, up to max of
 * them written; returns how many there are. */
size_t tx_box_runs(const TensorInfo *t, const int start[4], const int count[4], size_t e0, size_t n, size_t *offs,
                   size_t *lens, size_t max);
/* The local offset (floats from buf) of box elements [e0, e0 + n) when they
 * are one contiguous run there, else (size_t)-1. */
size_t tx_box_contiguous(const TensorInfo *t, const int start[4], const int count[4], size_t e0, size_t n);

#endif
