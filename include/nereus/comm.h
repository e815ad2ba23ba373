/* comm.h — the collectives the model and the EMUs use, over MPI.
 *
 * The one place (with emu.c, which builds the communicators) that knows MPI
 * details. Every call is checked (a failure aborts the job with the call and
 * the rank: util.h). There are no module-level communicators: every function
 * takes the communicator it works on (an EMU's tp, pp, dp or embd group).
 *
 * Waiting does not spin a core: blocking collectives are the non-blocking
 * MPI call plus comm_wait, which polls MPI_Test with an exponential back-off
 * sleep (a few immediate polls, then nanosleep from 10 µs doubling to 1 ms).
 * Open MPI's own blocking waits busy-poll, which on an oversubscribed
 * machine (8 ranks on 2 cores in tests) steals the core from the rank that
 * has work. The cost is up to ~1 ms of extra latency on a long wait.
 *
 * Counts are size_t; buffers larger than INT_MAX elements are cut into
 * chunks of at most COMM_CHUNK_MAX elements (same cuts on every rank).
 */
#ifndef NEREUS_COMM_H
#define NEREUS_COMM_H

#include <stddef.h>
#include <stdint.h>
#include <mpi.h>

/* Largest element count of one MPI call (under INT_MAX). */
#define COMM_CHUNK_MAX ((size_t)1 << 30)

/* Local: waits for one request (or all n) without spinning a core. */
void comm_wait(MPI_Request *req);
void comm_waitall(int n, MPI_Request *reqs);
/* Local: hook called at the start of every comm_wait / comm_waitall (NULL:
 * none) — the point where this rank's compute meets the other ranks. The
 * injected slowdown ([inject] slow_ranks, src/run/inject.c) does its extra
 * work there, so that the ranks waiting on it really wait. */
void comm_set_wait_hook(void (*hook)(void));

/* collective over c: buf[0..n) becomes the sum over the ranks of c, in
 * place (MPI_Iallreduce + comm_wait). n may be 0. */
void comm_allreduce_sum_f32(MPI_Comm c, float *buf, size_t n);
/* The same with an explicit chunk (1..COMM_CHUNK_MAX elements), for tests
 * of the chunking; every rank must pass the same chunk. */
void comm_allreduce_sum_f32_chunk(MPI_Comm c, float *buf, size_t n, size_t chunk);
/* collective over c: the same for doubles and for int64 counts. */
void comm_allreduce_sum_f64(MPI_Comm c, double *buf, size_t n);
void comm_allreduce_sum_i64(MPI_Comm c, int64_t *buf, size_t n);
/* collective over c: elementwise max / min of int64 values (flags, counts). */
void comm_allreduce_max_i64(MPI_Comm c, int64_t *buf, size_t n);
void comm_allreduce_max_f64(MPI_Comm c, double *buf, size_t n);
void comm_allreduce_min_i64(MPI_Comm c, int64_t *buf, size_t n);

/* collective over c: bytes bytes of buf from root to every rank of c. */
void comm_bcast(MPI_Comm c, void *buf, size_t bytes, int root);
/* collective over c: floats from root to every rank of c. */
void comm_bcast_f32(MPI_Comm c, float *buf, size_t n, int root);

/* Point to point within c: n floats to dest / from src with tag (a send
 * must be matched by a receive of the same n and tag). */
void comm_send_f32(MPI_Comm c, const float *buf, size_t n, int dest, int tag);
void comm_recv_f32(MPI_Comm c, float *buf, size_t n, int src, int tag);

/* Non-blocking point to point within c: starts sending / receiving n floats
 * (n ≤ COMM_CHUNK_MAX: one request) to dest / from src with tag and
 * returns its request, to be finished with comm_wait / comm_waitall (which
 * do not spin). buf must stay untouched (send) / unread (receive) until
 * then. Messages between two ranks with the same tag match in order. */
MPI_Request comm_isend_f32(MPI_Comm c, const float *buf, size_t n, int dest, int tag);
MPI_Request comm_irecv_f32(MPI_Comm c, float *buf, size_t n, int src, int tag);

/* Local: one MPI_Testall over reqs[0..n) (MPI_REQUEST_NULL entries are
 * fine): 1 when all are done (and freed), else 0 and none is touched. Also
 * what drives a large non-blocking transfer forward while its rank computes
 * (Open MPI moves rendezvous messages only inside MPI calls). */
int comm_testall(int n, MPI_Request *reqs);

/* collective over c: MPI_Ibarrier + comm_wait. */
void comm_barrier(MPI_Comm c);

/* Rank in c and size of c (-1 / 0 for MPI_COMM_NULL). */
int comm_rank(MPI_Comm c);
int comm_size(MPI_Comm c);

#endif
