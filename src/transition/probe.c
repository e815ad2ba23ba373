/* probe.c — what a transition can expect of this machine's links and
 * copies (tx_exec.h: tx_probe), measured with every rank at once.
 *
 * Why all at once: the engine's prediction divides each rank's bytes by a
 * per-rank rate. One pair alone, or one core's memcpy, is the wrong rate
 * wherever ranks share cores or a node's memory system: a nominal link
 * rate then leaves live transitions far over their prediction. A ring
 * where every rank sends to the next while receiving from the previous
 * loads every rank as a transition does. */
#include <stdlib.h>
#include <string.h>

#include "nereus/comm.h"
#include "nereus/tx_exec.h"
#include "nereus/util.h"

/* one rank's share of the ring: n floats to `to` from sb while n come from `from` into rb, in pieces of
   `piece` floats with up to `inflight` of each kind posted, as the engine streams its chunks (one message of
   64 MiB stalls whenever its rank sleeps: Open MPI moves a rendezvous message only inside MPI calls) */
static void ring_stream(MPI_Comm c, const float *sb, float *rb, size_t n, size_t piece, int inflight, int to,
                        int from) {
    MPI_Request rq[2 * TX_PROBE_MAX_INFLIGHT];
    size_t sent = 0, recvd = 0; /* floats posted */
    int live = 0;
    for (int i = 0; i < 2 * inflight; i++) rq[i] = MPI_REQUEST_NULL;
    CommWaiter w = {.yield_s = TX_YIELD_S}; /* as the engine waits */
    for (;;) {
        for (int i = 0; i < inflight; i++) { /* refill: receives in slots [0, inflight), sends after */
            if (rq[i] == MPI_REQUEST_NULL && recvd < n) {
                size_t k = n - recvd < piece ? n - recvd : piece;
                rq[i] = comm_irecv_f32(c, rb + recvd, k, from, 7);
                recvd += k;
                live++;
            }
            if (rq[inflight + i] == MPI_REQUEST_NULL && sent < n) {
                size_t k = n - sent < piece ? n - sent : piece;
                rq[inflight + i] = comm_isend_f32(c, sb + sent, k, to, 7);
                sent += k;
                live++;
            }
        }
        if (live == 0) return;
        int nd = 0, idx[2 * TX_PROBE_MAX_INFLIGHT];
        mpiCheck(MPI_Testsome(2 * inflight, rq, &nd, idx, MPI_STATUSES_IGNORE));
        if (nd > 0 && nd != MPI_UNDEFINED) {
            live -= nd;
            comm_waiter_progress(&w);
        } else {
            comm_waiter_pause(&w);
        }
    }
}

void tx_probe(MPI_Comm c, size_t bytes, size_t chunk, size_t window, int reps, TxProbe *out) {
    int rank = comm_rank(c), size = comm_size(c);
    size_t n = bytes / sizeof(float), piece = chunk / sizeof(float);
    if (n < 1) n = 1;
    if (piece < 1) piece = 1;
    size_t each = window / 2 / (chunk ? chunk : 1); /* half the window each way */
    int inflight = each < 1 ? 1 : each > TX_PROBE_MAX_INFLIGHT ? TX_PROBE_MAX_INFLIGHT : (int)each;
    if (reps < 1) reps = 1;
    float *sb = nr_xmalloc(n * sizeof *sb), *rb = nr_xmalloc(n * sizeof *rb);
    for (size_t i = 0; i < n; i++) sb[i] = (float)i, rb[i] = 0.0f; /* written: no first-touch faults timed */
    double *tl = nr_xcalloc((size_t)reps, sizeof *tl), *tc = nr_xcalloc((size_t)reps, sizeof *tc);
    for (int k = 0; k < reps; k++) {
        comm_barrier(c);
        double t0 = nr_now();
        if (size > 1) ring_stream(c, sb, rb, n, piece, inflight, (rank + 1) % size, (rank + size - 1) % size);
        tl[k] = nr_now() - t0;
        comm_barrier(c);
        t0 = nr_now();
        memcpy(rb, sb, n * sizeof *sb);
        tc[k] = nr_now() - t0;
    }
    comm_allreduce_max_f64(c, tl, (size_t)reps); /* the slowest rank's time */
    comm_allreduce_max_f64(c, tc, (size_t)reps);
    double b = (double)n * sizeof(float), l = nr_median(tl, reps), cp = nr_median(tc, reps);
    out->link = size > 1 && l > 0 ? b / l : 0;
    out->copy = cp > 0 ? b / cp : 0;
    free(tl);
    free(tc);
    free(sb);
    free(rb);
}
