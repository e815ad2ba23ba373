/* comm.c — the comm facade over MPI (comm.h): chunked reductions,
 * broadcasts and point-to-point of float buffers, and the non-spinning
 * wait every blocking call goes through; for device memory (a registered
 * CommDevice), the device group found as an attribute of the communicator
 * (NCCL) or staging through one host buffer. */
#include "nereus/comm.h"

#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "nereus/ft.h"
#include "nereus/util.h"

/* Immediate polls before anything else: a request that completes within a
 * few microseconds (a small collective on an idle machine) costs nothing. */
#define COMM_SPIN_POLLS 16
#define COMM_SLEEP_MIN_NS 20000L        /* 20 µs */
#define COMM_SLEEP_BUSY_MAX_NS 200000L  /* 200 µs while the wait is under COMM_IDLE_S */
#define COMM_SLEEP_IDLE_MAX_NS 2000000L /* 2 ms after */

static void comm_sleep(long ns)
{
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL); /* an early wake (signal) only means an early poll */
}

static void (*wait_hook)(void);
void comm_set_wait_hook(void (*hook)(void)) { wait_hook = hook; }

static double setup_inject_s;
void comm_set_setup_inject(double seconds) { setup_inject_s = seconds > 0 ? seconds : 0; }
double comm_setup_inject_s(void) { return setup_inject_s; }

/* The INJECTED set-up stands for a communicator initialisation that is slow by nature (NCCL across nodes), so
   it is a sleep (the rank holds no core) inside whatever the caller times, and the ranks outside the set wait
   for it in the next collective, as they would in a collective ncclCommSplit of their parent */
void comm_setup_inject_wait(MPI_Comm job, MPI_Comm member, double t_begin)
{
    if (setup_inject_s <= 0) return;
    if (member != MPI_COMM_NULL)
        for (double left = t_begin + setup_inject_s - nr_now(); left > 0; left = t_begin + setup_inject_s - nr_now()) {
            struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
            nanosleep(&ts, NULL); /* an early wake (signal) sleeps again for what is left */
        }
    comm_barrier_idle(job);
}

/* Why these numbers (8 ranks on 2 cores, README performance): a group larger
 * than the cores passes every message through ranks that are not running;
 * yielding lets them run at once, where a sleeping poller that had backed
 * off to 1 ms stalled each message by up to that (gen with tp4: 0.20 s →
 * 0.01 s). Sleeps stay short (≤ 200 µs) while a wait is young, for the same
 * reason, and grow only once the rank is plainly idle. */
void comm_waiter_pause(CommWaiter *w)
{
    if (w->polls++ < COMM_SPIN_POLLS) return;
    ft_poll(); /* under ULFM: a revoked world (a rank failed elsewhere) ends the wait at the recovery point */
    double now = nr_now();
    if (w->t0 == 0) w->t0 = now;
    double waited = now - w->t0;
    if (waited < (w->yield_s > 0 ? w->yield_s : w->yield_s < 0 ? 0 : COMM_YIELD_S)) {
        sched_yield();
        return;
    }
    long cap = waited < COMM_IDLE_S ? COMM_SLEEP_BUSY_MAX_NS : COMM_SLEEP_IDLE_MAX_NS;
    w->sleep_ns = w->sleep_ns == 0 ? COMM_SLEEP_MIN_NS : w->sleep_ns * 2 > cap ? cap : w->sleep_ns * 2;
    comm_sleep(w->sleep_ns);
}

void comm_waiter_progress(CommWaiter *w)
{
    w->polls = 0;
    w->t0 = 0;
    w->sleep_ns = 0;
}

/* one request, polled with pauses that yield for yield_s first (CommWaiter) */
static void wait_one(MPI_Request *req, double yield_s)
{
    int done = 0;
    if (wait_hook) wait_hook();
    for (CommWaiter w = {.yield_s = yield_s};; comm_waiter_pause(&w)) {
        mpiCheck(MPI_Test(req, &done, MPI_STATUS_IGNORE));
        if (done) return;
    }
}

void comm_wait(MPI_Request *req) { wait_one(req, 0); }

void comm_waitall(int n, MPI_Request *reqs)
{
    int done = 0;
    if (wait_hook) wait_hook();
    for (CommWaiter w = {0};; comm_waiter_pause(&w)) {
        mpiCheck(MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE));
        if (done) return;
    }
}

/* ---- device memory ---------------------------------------------------------- */

static const CommDevice *dev;      /* NULL: host memory only, no test per call */
static char *stage_buf;            /* the host staging buffer (dev->host_alloc'd) */
static size_t stage_cap;
static CommPathCounts path_counts; /* counted only while a device layer is registered */
static int group_key = MPI_KEYVAL_INVALID;

/* 1 when buf is device memory of the registered layer: the one test a call
 * makes, and none at all without a layer (the CPU backend) */
#define ON_DEVICE(buf, n) (__builtin_expect(dev != NULL, 0) && (n) > 0 && comm_on_device(buf))
static int comm_on_device(const void *buf)
{
    if (dev->is_device(buf)) return 1;
    path_counts.host++;
    return 0;
}

static size_t comm_type_size(CommType t)
{
    switch (t) {
    case COMM_FLOAT: return sizeof(float);
    case COMM_DOUBLE: return sizeof(double);
    case COMM_INT64: return sizeof(int64_t);
    default: return 1;
    }
}
static MPI_Datatype comm_type_mpi(CommType t)
{
    switch (t) {
    case COMM_FLOAT: return MPI_FLOAT;
    case COMM_DOUBLE: return MPI_DOUBLE;
    case COMM_INT64: return MPI_INT64_T;
    default: return MPI_BYTE;
    }
}
static MPI_Op comm_op_mpi(CommOp op) { return op == COMM_MAX ? MPI_MAX : op == COMM_MIN ? MPI_MIN : MPI_SUM; }

/* elements of one staging chunk (at most `chunk` when chunk > 0), and the
 * buffer for it, grown on demand and kept */
static size_t stage_elems(size_t elem, size_t chunk)
{
    size_t bytes = dev->stage_bytes ? dev->stage_bytes : COMM_STAGE_BYTES;
    size_t k = bytes / elem ? bytes / elem : 1;
    if (k > COMM_CHUNK_MAX) k = COMM_CHUNK_MAX;
    return chunk && chunk < k ? chunk : k;
}
static char *stage_get(size_t bytes)
{
    if (bytes > stage_cap) {
        if (stage_buf) dev->host_free ? dev->host_free(stage_buf) : free(stage_buf);
        stage_buf = dev->host_alloc ? dev->host_alloc(bytes) : nr_xmalloc(bytes);
        stage_cap = bytes;
    }
    return stage_buf;
}

void comm_set_device(const CommDevice *d)
{
    if (stage_buf) dev->host_free ? dev->host_free(stage_buf) : free(stage_buf);
    stage_buf = NULL;
    stage_cap = 0;
    dev = d;
}

const CommDevice *comm_device(void) { return dev; }

CommPathCounts comm_path_counts(int reset)
{
    CommPathCounts c = path_counts;
    if (reset) path_counts = (CommPathCounts){0, 0, 0};
    return c;
}

/* ---- device groups as attributes of MPI communicators ------------------------ */

/* The attribute's value: the group and the layer that made it (which frees it). */
typedef struct CommGroupAttr { const CommDevice *dev; void *g; } CommGroupAttr;

/* MPI calls this from MPI_Comm_free (and MPI_Comm_delete_attr): the group
 * goes with its communicator */
static int comm_group_delete(MPI_Comm c, int key, void *val, void *extra)
{
    (void)c, (void)key, (void)extra;
    CommGroupAttr *a = val;
    if (a->g && a->dev->group_free) a->dev->group_free(a->g);
    free(a);
    return MPI_SUCCESS;
}

static void comm_group_set(MPI_Comm c, void *g)
{
    if (group_key == MPI_KEYVAL_INVALID)
        mpiCheck(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, comm_group_delete, &group_key, NULL));
    CommGroupAttr *a = nr_xmalloc(sizeof *a);
    a->dev = dev;
    a->g = g;
    mpiCheck(MPI_Comm_set_attr(c, group_key, a));
}

static CommGroupAttr *comm_group_attr(MPI_Comm c)
{
    if (c == MPI_COMM_NULL || group_key == MPI_KEYVAL_INVALID) return NULL;
    void *val = NULL;
    int flag = 0;
    mpiCheck(MPI_Comm_get_attr(c, group_key, &val, &flag));
    return flag ? val : NULL;
}

/* a group made by another layer than the registered one is none (stage) */
void *comm_group(MPI_Comm c)
{
    CommGroupAttr *a = comm_group_attr(c);
    return a && a->dev == dev ? a->g : NULL;
}

/* collective over c */
void comm_group_attach(MPI_Comm c)
{
    if (!dev || !dev->group_new || c == MPI_COMM_NULL || comm_group(c)) return;
    comm_group_set(c, dev->group_new(c));
}

/* collective over c */
void comm_group_detach(MPI_Comm c)
{
    if (comm_group_attr(c)) mpiCheck(MPI_Comm_delete_attr(c, group_key));
}

/* collective over parent */
void comm_group_split(MPI_Comm parent, int color, int key, MPI_Comm c)
{
    if (!dev || !dev->group_split) return;
    comm_group_attach(parent);
    void *pg = comm_group(parent);
    if (!pg) nr_fatal("comm_group_split: the parent communicator has no device group");
    void *g = dev->group_split(pg, color >= 0 ? color : -1, key);
    if (c == MPI_COMM_NULL) {
        if (g) nr_fatal("comm_group_split: a %s group for a rank outside the new communicator", dev->name);
        return;
    }
    if (!g) nr_fatal("comm_group_split: no %s group for a member of the new communicator", dev->name);
    int r = comm_rank(c), n = comm_size(c), gr = dev->group_rank(g), gn = dev->group_size(g);
    if (gr != r || gn != n)
        nr_fatal("comm_group_split: the %s group has this rank at %d of %d, the MPI communicator at %d of %d",
                 dev->name, gr, gn, r, n);
    comm_group_set(c, g);
}

/* ---- host memory: the MPI path ------------------------------------------------ */

/* Large transfers in pieces. MPI_Test on one request says nothing until the
 * whole operation is done, so a wait that is moving a large buffer looks
 * idle to the waiter, which would back off to 2 ms sleeps; and Open MPI moves
 * shared-memory fragments and the rounds of a non-blocking collective only
 * inside MPI calls, so every rank's sleeps stall it (on 8 ranks of 2 cores,
 * a 14 MB gradient all-reduce over dp8 left the cores idle for most of a
 * step). So each operation here is cut into pieces of COMM_PIECE_BYTES
 * (within the caller's chunk), up to COMM_PIECES_IN_FLIGHT started at once
 * (collectives in the same order on every rank, messages in order), and a
 * piece that completes is progress: the waiter goes back to yielding. It
 * sleeps only when no piece finished for COMM_YIELD_S, i.e. when the peers
 * are not there yet. The sizes are the fastest tried on that all-reduce
 * (larger pieces, or fewer in flight, are up to 10x slower; smaller ones
 * gain nothing), as fast as Open MPI's blocking MPI_Allreduce, which polls
 * without ever sleeping. */
#define COMM_PIECE_BYTES ((size_t)256 << 10)
#define COMM_PIECES_IN_FLIGHT 16

/* starts the piece [off, off + k) of an operation (k elements) and returns its request */
typedef MPI_Request (*PieceStart)(void *ctx, size_t off, size_t k);

/* Local (collective when the pieces are): n elements of elem bytes in pieces of at most chunk elements and
   COMM_PIECE_BYTES (at least one element), each started by start, all finished on return; n = 0: one
   empty piece */
static void comm_pieces(size_t n, size_t elem, size_t chunk, void *ctx, PieceStart start)
{
    size_t piece = COMM_PIECE_BYTES / elem;
    if (piece == 0) piece = 1;
    if (chunk == 0 || chunk > COMM_CHUNK_MAX) chunk = COMM_CHUNK_MAX;
    if (piece > chunk) piece = chunk;
    MPI_Request req[COMM_PIECES_IN_FLIGHT];
    int live = 0, idx[COMM_PIECES_IN_FLIGHT];
    size_t next = 0;
    int empty = n == 0;
    if (wait_hook) wait_hook();
    CommWaiter w = {0};
    while (next < n || empty || live > 0) {
        while (live < COMM_PIECES_IN_FLIGHT && (next < n || empty)) {
            size_t k = n - next < piece ? n - next : piece;
            req[live++] = start(ctx, next, k);
            next += k;
            empty = 0;
        }
        int nd = 0;
        mpiCheck(MPI_Testsome(live, req, &nd, idx, MPI_STATUSES_IGNORE));
        if (nd > 0 && nd != MPI_UNDEFINED) {
            int k = 0;
            for (int i = 0; i < live; i++)
                if (req[i] != MPI_REQUEST_NULL) req[k++] = req[i];
            live = k;
            comm_waiter_progress(&w);
        } else {
            comm_waiter_pause(&w);
        }
    }
}

typedef struct Piece {
    MPI_Comm c;
    char *buf;
    size_t elem;
    MPI_Datatype t;
    MPI_Op op;
    int peer, tag; /* root for a broadcast */
} Piece;

static MPI_Request piece_allreduce(void *ctx, size_t off, size_t k)
{
    Piece *p = ctx;
    MPI_Request r;
    mpiCheck(MPI_Iallreduce(MPI_IN_PLACE, p->buf + off * p->elem, (int)k, p->t, p->op, p->c, &r));
    return r;
}

static MPI_Request piece_bcast(void *ctx, size_t off, size_t k)
{
    Piece *p = ctx;
    MPI_Request r;
    mpiCheck(MPI_Ibcast(p->buf + off * p->elem, (int)k, p->t, p->peer, p->c, &r));
    return r;
}

static MPI_Request piece_send(void *ctx, size_t off, size_t k)
{
    Piece *p = ctx;
    MPI_Request r;
    mpiCheck(MPI_Isend(p->buf + off * p->elem, (int)k, p->t, p->peer, p->tag, p->c, &r));
    return r;
}

static MPI_Request piece_recv(void *ctx, size_t off, size_t k)
{
    Piece *p = ctx;
    MPI_Request r;
    mpiCheck(MPI_Irecv(p->buf + off * p->elem, (int)k, p->t, p->peer, p->tag, p->c, &r));
    return r;
}

/* collective over c: in-place reduction of n elements (n = 0: nothing), in pieces */
static void comm_allreduce(MPI_Comm c, void *buf, size_t n, size_t elem, MPI_Datatype t, MPI_Op op, size_t chunk)
{
    if (n == 0) return;
    Piece p = {c, buf, elem, t, op, 0, 0};
    comm_pieces(n, elem, chunk, &p, piece_allreduce);
}

/* ---- device memory: the device group, else host staging ---------------------- */

/* the lead's injected slowdown runs where compute meets the other ranks:
 * comm_wait does it for the MPI paths, this for the device group's */
static void *comm_group_op(MPI_Comm c)
{
    void *g = comm_group(c);
    if (g) {
        path_counts.group++;
        if (wait_hook) wait_hook();
    } else {
        path_counts.staged++;
    }
    return g;
}

/* collective over c */
static void comm_allreduce_dev(MPI_Comm c, void *buf, size_t n, CommType t, CommOp op, size_t chunk)
{
    void *g = comm_group_op(c);
    if (g) {
        dev->allreduce(g, buf, n, t, op);
        return;
    }
    size_t es = comm_type_size(t), per = stage_elems(es, chunk);
    char *h = stage_get((n < per ? n : per) * es), *p = buf;
    for (size_t o = 0; o < n; o += per) {
        size_t k = n - o < per ? n - o : per;
        dev->download(h, p + o * es, k * es);
        comm_allreduce(c, h, k, es, comm_type_mpi(t), comm_op_mpi(op), k);
        dev->upload(p + o * es, h, k * es);
    }
}

/* collective over c */
static void comm_bcast_dev(MPI_Comm c, void *buf, size_t n, CommType t, int root)
{
    void *g = comm_group_op(c);
    if (g) {
        dev->bcast(g, buf, n, t, root);
        return;
    }
    size_t es = comm_type_size(t), per = stage_elems(es, 0);
    char *h = stage_get((n < per ? n : per) * es), *p = buf;
    int me = comm_rank(c);
    for (size_t o = 0; o < n; o += per) {
        size_t k = n - o < per ? n - o : per;
        if (me == root) dev->download(h, p + o * es, k * es);
        Piece pc = {c, h, 1, MPI_BYTE, MPI_OP_NULL, root, 0};
        comm_pieces(k * es, 1, COMM_CHUNK_MAX, &pc, piece_bcast);
        if (me != root) dev->upload(p + o * es, h, k * es);
    }
}

static void comm_send_dev(MPI_Comm c, const float *buf, size_t n, int dest, int tag)
{
    void *g = comm_group_op(c);
    if (g) {
        dev->send(g, buf, n, COMM_FLOAT, dest);
        return;
    }
    size_t per = stage_elems(sizeof *buf, 0);
    float *h = (float *)stage_get((n < per ? n : per) * sizeof *buf);
    for (size_t o = 0; o < n; o += per) {
        size_t k = n - o < per ? n - o : per;
        dev->download(h, buf + o, k * sizeof *buf);
        Piece pc = {c, (char *)h, sizeof *h, MPI_FLOAT, MPI_OP_NULL, dest, tag};
        comm_pieces(k, sizeof *h, COMM_CHUNK_MAX, &pc, piece_send);
    }
}

static void comm_recv_dev(MPI_Comm c, float *buf, size_t n, int src, int tag)
{
    void *g = comm_group_op(c);
    if (g) {
        dev->recv(g, buf, n, COMM_FLOAT, src);
        return;
    }
    size_t per = stage_elems(sizeof *buf, 0);
    float *h = (float *)stage_get((n < per ? n : per) * sizeof *buf);
    for (size_t o = 0; o < n; o += per) {
        size_t k = n - o < per ? n - o : per;
        Piece pc = {c, (char *)h, sizeof *h, MPI_FLOAT, MPI_OP_NULL, src, tag};
        comm_pieces(k, sizeof *h, COMM_CHUNK_MAX, &pc, piece_recv);
        dev->upload(buf + o, h, k * sizeof *buf);
    }
}

/* ---- the public calls: host memory straight to MPI, device memory above ----- */

void comm_allreduce_sum_f32_chunk(MPI_Comm c, float *buf, size_t n, size_t chunk)
{
    if (ON_DEVICE(buf, n)) comm_allreduce_dev(c, buf, n, COMM_FLOAT, COMM_SUM, chunk);
    else comm_allreduce(c, buf, n, sizeof *buf, MPI_FLOAT, MPI_SUM, chunk);
}
void comm_allreduce_sum_f32(MPI_Comm c, float *buf, size_t n) { comm_allreduce_sum_f32_chunk(c, buf, n, COMM_CHUNK_MAX); }

#define COMM_ALLREDUCE(fn, ctype, ct, mt, cop, mop)                                                     \
    void fn(MPI_Comm c, ctype *buf, size_t n)                                                           \
    {                                                                                                   \
        if (ON_DEVICE(buf, n)) comm_allreduce_dev(c, buf, n, ct, cop, 0);                               \
        else comm_allreduce(c, buf, n, sizeof *buf, mt, mop, 0);                                        \
    }
COMM_ALLREDUCE(comm_allreduce_sum_f64, double, COMM_DOUBLE, MPI_DOUBLE, COMM_SUM, MPI_SUM)
COMM_ALLREDUCE(comm_allreduce_sum_i64, int64_t, COMM_INT64, MPI_INT64_T, COMM_SUM, MPI_SUM)
COMM_ALLREDUCE(comm_allreduce_max_i64, int64_t, COMM_INT64, MPI_INT64_T, COMM_MAX, MPI_MAX)
COMM_ALLREDUCE(comm_allreduce_max_f64, double, COMM_DOUBLE, MPI_DOUBLE, COMM_MAX, MPI_MAX)
COMM_ALLREDUCE(comm_allreduce_min_i64, int64_t, COMM_INT64, MPI_INT64_T, COMM_MIN, MPI_MIN)

void comm_bcast(MPI_Comm c, void *buf, size_t bytes, int root)
{
    if (ON_DEVICE(buf, bytes)) {
        comm_bcast_dev(c, buf, bytes, COMM_BYTE, root);
        return;
    }
    if (bytes == 0) return;
    Piece p = {c, buf, 1, MPI_BYTE, MPI_OP_NULL, root, 0};
    comm_pieces(bytes, 1, COMM_CHUNK_MAX, &p, piece_bcast);
}

void comm_bcast_f32(MPI_Comm c, float *buf, size_t n, int root)
{
    if (ON_DEVICE(buf, n)) {
        comm_bcast_dev(c, buf, n, COMM_FLOAT, root);
        return;
    }
    if (n == 0) return;
    Piece p = {c, (char *)buf, sizeof *buf, MPI_FLOAT, MPI_OP_NULL, root, 0};
    comm_pieces(n, sizeof *buf, COMM_CHUNK_MAX, &p, piece_bcast);
}

void comm_send_f32(MPI_Comm c, const float *buf, size_t n, int dest, int tag)
{
    if (ON_DEVICE(buf, n)) {
        comm_send_dev(c, buf, n, dest, tag);
        return;
    }
    Piece p = {c, (char *)buf, sizeof *buf, MPI_FLOAT, MPI_OP_NULL, dest, tag};
    comm_pieces(n, sizeof *buf, COMM_CHUNK_MAX, &p, piece_send); /* the receiver cuts the same pieces */
}

void comm_recv_f32(MPI_Comm c, float *buf, size_t n, int src, int tag)
{
    if (ON_DEVICE(buf, n)) {
        comm_recv_dev(c, buf, n, src, tag);
        return;
    }
    Piece p = {c, (char *)buf, sizeof *buf, MPI_FLOAT, MPI_OP_NULL, src, tag};
    comm_pieces(n, sizeof *buf, COMM_CHUNK_MAX, &p, piece_recv);
}

MPI_Request comm_isend_f32(MPI_Comm c, const float *buf, size_t n, int dest, int tag)
{
    if (n > COMM_CHUNK_MAX) nr_fatal("comm_isend_f32: %zu floats in one message (at most %zu)", n, COMM_CHUNK_MAX);
    if (ON_DEVICE(buf, n))
        nr_fatal("comm_isend_f32: %zu floats of %s device memory; the non-blocking calls take host memory only "
                 "(stage it, or use comm_send_f32)", n, dev->name);
    MPI_Request r;
    mpiCheck(MPI_Isend(buf, (int)n, MPI_FLOAT, dest, tag, c, &r));
    return r;
}

MPI_Request comm_irecv_f32(MPI_Comm c, float *buf, size_t n, int src, int tag)
{
    if (n > COMM_CHUNK_MAX) nr_fatal("comm_irecv_f32: %zu floats in one message (at most %zu)", n, COMM_CHUNK_MAX);
    if (ON_DEVICE(buf, n))
        nr_fatal("comm_irecv_f32: %zu floats of %s device memory; the non-blocking calls take host memory only "
                 "(stage it, or use comm_recv_f32)", n, dev->name);
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

int comm_push(MPI_Request *req, double max_s)
{
    int done = 0;
    double t0 = nr_now();
    for (CommWaiter w = {.yield_s = max_s};; comm_waiter_pause(&w)) {
        mpiCheck(MPI_Test(req, &done, MPI_STATUS_IGNORE));
        if (done || nr_now() - t0 >= max_s) return done;
    }
}

void comm_barrier(MPI_Comm c)
{
    MPI_Request r;
    mpiCheck(MPI_Ibarrier(c, &r));
    comm_wait(&r);
}

void comm_barrier_idle(MPI_Comm c)
{
    MPI_Request r;
    mpiCheck(MPI_Ibarrier(c, &r));
    wait_one(&r, -1);
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

int comm_node_size(MPI_Comm c)
{
    MPI_Comm node;
    mpiCheck(MPI_Comm_split_type(c, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    int s = comm_size(node);
    mpiCheck(MPI_Comm_free(&node));
    return s;
}
