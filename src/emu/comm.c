/* comm.c — the comm facade over MPI (comm.h): chunked reductions,
 * broadcasts and point-to-point of float buffers, and the non-spinning
 * wait every blocking call goes through. */
#include "nereus/comm.h"

#include <time.h>

#include "nereus/util.h"

/* Immediate polls before sleeping: a request that completes within a few
 * microseconds (a small collective on an idle machine) costs no sleep. */
#define COMM_SPIN_POLLS 16
#define COMM_SLEEP_MIN_NS 10000L   /* 10 µs */
#define COMM_SLEEP_MAX_NS 1000000L /* 1 ms */

static void comm_sleep(long ns)
{
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL); /* an early wake (signal) only means an early poll */
}

static void (*wait_hook)(void);
void comm_set_wait_hook(void (*hook)(void)) { wait_hook = hook; }

void comm_wait(MPI_Request *req)
{
    int done = 0;
    if (wait_hook) wait_hook();
    for (int i = 0; i < COMM_SPIN_POLLS; i++) {
        mpiCheck(MPI_Test(req, &done, MPI_STATUS_IGNORE));
        if (done) return;
    }
    for (long ns = COMM_SLEEP_MIN_NS;; ns = ns * 2 > COMM_SLEEP_MAX_NS ? COMM_SLEEP_MAX_NS : ns * 2) {
        comm_sleep(ns);
        mpiCheck(MPI_Test(req, &done, MPI_STATUS_IGNORE));
        if (done) return;
    }
}

void comm_waitall(int n, MPI_Request *reqs)
{
    int done = 0;
    if (wait_hook) wait_hook();
    for (int i = 0; i < COMM_SPIN_POLLS; i++) {
        mpiCheck(MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE));
        if (done) return;
    }
    for (long ns = COMM_SLEEP_MIN_NS;; ns = ns * 2 > COMM_SLEEP_MAX_NS ? COMM_SLEEP_MAX_NS : ns * 2) {
        comm_sleep(ns);
        mpiCheck(MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE));
        if (done) return;
    }
}

/* collective over c: in-place reduction of n elements, chunk at a time */
static void comm_allreduce(MPI_Comm c, void *buf, size_t n, size_t elem, MPI_Datatype t, MPI_Op op, size_t chunk)
{
    if (chunk == 0 || chunk > COMM_CHUNK_MAX) chunk = COMM_CHUNK_MAX;
    char *p = buf;
    for (size_t o = 0; o < n; o += chunk) {
        size_t k = n - o < chunk ? n - o : chunk;
        MPI_Request r;
        mpiCheck(MPI_Iallreduce(MPI_IN_PLACE, p + o * elem, (int)k, t, op, c, &r));
        comm_wait(&r);
    }
}

void comm_allreduce_sum_f32_chunk(MPI_Comm c, float *buf, size_t n, size_t chunk)
{
    comm_allreduce(c, buf, n, sizeof *buf, MPI_FLOAT, MPI_SUM, chunk);
}
void comm_allreduce_sum_f32(MPI_Comm c, float *buf, size_t n) { comm_allreduce_sum_f32_chunk(c, buf, n, COMM_CHUNK_MAX); }
void comm_allreduce_sum_f64(MPI_Comm c, double *buf, size_t n) { comm_allreduce(c, buf, n, sizeof *buf, MPI_DOUBLE, MPI_SUM, 0); }
void comm_allreduce_sum_i64(MPI_Comm c, int64_t *buf, size_t n) { comm_allreduce(c, buf, n, sizeof *buf, MPI_INT64_T, MPI_SUM, 0); }
void comm_allreduce_max_i64(MPI_Comm c, int64_t *buf, size_t n) { comm_allreduce(c, buf, n, sizeof *buf, MPI_INT64_T, MPI_MAX, 0); }
void comm_allreduce_max_f64(MPI_Comm c, double *buf, size_t n) { comm_allreduce(c, buf, n, sizeof *buf, MPI_DOUBLE, MPI_MAX, 0); }
void comm_allreduce_min_i64(MPI_Comm c, int64_t *buf, size_t n) { comm_allreduce(c, buf, n, sizeof *buf, MPI_INT64_T, MPI_MIN, 0); }

void comm_bcast(MPI_Comm c, void *buf, size_t bytes, int root)
{
    char *p = buf;
    for (size_t o = 0; o < bytes; o += COMM_CHUNK_MAX) {
        size_t k = bytes - o < COMM_CHUNK_MAX ? bytes - o : COMM_CHUNK_MAX;
        MPI_Request r;
        mpiCheck(MPI_Ibcast(p + o, (int)k, MPI_BYTE, root, c, &r));
        comm_wait(&r);
    }
}

void comm_bcast_f32(MPI_Comm c, float *buf, size_t n, int root)
{
    for (size_t o = 0; o < n; o += COMM_CHUNK_MAX) {
        size_t k = n - o < COMM_CHUNK_MAX ? n - o : COMM_CHUNK_MAX;
        MPI_Request r;
        mpiCheck(MPI_Ibcast(buf + o, (int)k, MPI_FLOAT, root, c, &r));
        comm_wait(&r);
    }
}

void comm_send_f32(MPI_Comm c, const float *buf, size_t n, int dest, int tag)
{
    for (size_t o = 0; o < n || (n == 0 && o == 0); o += COMM_CHUNK_MAX) {
        size_t k = n - o < COMM_CHUNK_MAX ? n - o : COMM_CHUNK_MAX;
        MPI_Request r;
        mpiCheck(MPI_Isend(buf + o, (int)k, MPI_FLOAT, dest, tag, c, &r));
        comm_wait(&r);
        if (n == 0) break;
    }
}

void comm_recv_f32(MPI_Comm c, float *buf, size_t n, int src, int tag)
{
    for (size_t o = 0; o < n || (n == 0 && o == 0); o += COMM_CHUNK_MAX) {
        size_t k = n - o < COMM_CHUNK_MAX ? n - o : COMM_CHUNK_MAX;
        MPI_Request r;
        mpiCheck(MPI_Irecv(buf + o, (int)k, MPI_FLOAT, src, tag, c, &r));
        comm_wait(&r);
        if (n == 0) break;
    }
}

MPI_Request comm_isend_f32(MPI_Comm c, const float *buf, size_t n, int dest, int tag)
{
    if (n > COMM_CHUNK_MAX) nr_fatal("comm_isend_f32: %zu floats in one message (at most %zu)", n, COMM_CHUNK_MAX);
    MPI_Request r;
    mpiCheck(MPI_Isend(buf, (int)n, MPI_FLOAT, dest, tag, c, &r));
    return r;
}

MPI_Request comm_irecv_f32(MPI_Comm c, float *buf, size_t n, int src, int tag)
{
    if (n > COMM_CHUNK_MAX) nr_fatal("comm_irecv_f32: %zu floats in one message (at most %zu)", n, COMM_CHUNK_MAX);
    MPI_Request r;
    mpiCheck(MPI_Irecv(buf, (int)n, MPI_FLOAT, src, tag, c, &r));
    return r;
}

int comm_testall(int n, MPI_Request *reqs)
{
    int done = 0;
    if (n > 0) mpiCheck(MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE));
    return n <= 0 || done;
}

void comm_barrier(MPI_Comm c)
{
    MPI_Request r;
    mpiCheck(MPI_Ibarrier(c, &r));
    comm_wait(&r);
}

int comm_rank(MPI_Comm c)
{
    if (c == MPI_COMM_NULL) return -1;
    int r = -1;
    mpiCheck(MPI_Comm_rank(c, &r));
    return r;
}

int comm_size(MPI_Comm c)
{
    if (c == MPI_COMM_NULL) return 0;
    int s = 0;
    mpiCheck(MPI_Comm_size(c, &s));
    return s;
}
