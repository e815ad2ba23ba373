/* comm.h — the collectives the model and the EMUs use, over MPI.
 *
 * The one place (with emu.c, which builds the communicators) that knows MPI
 * details. Every call is checked (a failure aborts the job with the call and
 * the rank: util.h; under ULFM a failed rank instead ends the call at the
 * recovery point, and so does a wait that finds the world revoked: ft.h). There are no module-level communicators: every function
 * takes the communicator it works on (an EMU's tp, pp, dp or embd group).
 *
 * Waiting does not spin a core for long: blocking collectives are the
 * non-blocking MPI call plus comm_wait, which polls MPI_Test through a
 * CommWaiter: a few immediate polls; then, for the first COMM_YIELD_S of
 * the wait, polls that give the core away between them (sched_yield: a
 * peer that has work runs, and Open MPI moves shared-memory fragments only
 * inside MPI calls); then nanosleep from 20 µs doubling to 200 µs while the
 * wait is under COMM_IDLE_S, and to 2 ms after (a rank idle for that long
 * costs a wake-up every 2 ms). Open MPI's own blocking waits busy-poll,
 * which on an oversubscribed machine (8 ranks on 2 cores in tests) steals
 * the core from the rank that has work. A sleep-only back-off (10 µs to
 * 1 ms) stalls every message of a group larger than the cores by up to a
 * millisecond: on 8 ranks of 2 cores the PPO step is 2.5-5x slower with it.
 *
 * A large operation on host memory is cut into pieces of 256 KiB, 16 in
 * flight, and each finished piece counts as progress, so that the waiter
 * yields for as long as data moves and sleeps only once nothing has moved
 * for COMM_YIELD_S (comm.c says why: one request for a whole gradient
 * all-reduce looked idle, and its rounds stalled in the sleeps). The pieces
 * are cut the same way on every rank; a send is received by a receive of
 * the same n (comm_send_f32 by comm_recv_f32, comm_isend_f32 by
 * comm_irecv_f32).
 *
 * Counts are size_t; buffers larger than INT_MAX elements are cut into
 * chunks of at most COMM_CHUNK_MAX elements (same cuts on every rank).
 *
 * Device memory. With a device backend (the CUDA one) model buffers are
 * device pointers, and this Open MPI is not CUDA-aware. The backend then
 * registers a CommDevice (comm_set_device) and every buffer handed to the
 * collectives and to the blocking point-to-point is classified per call:
 * host memory takes exactly the MPI path above; device memory goes through
 * the communicator's device group (NCCL) when it has one, else it is staged
 * through a host buffer (download, MPI, upload) in chunks of at most
 * COMM_STAGE_BYTES. Without a registered CommDevice (the CPU backend, a
 * build without CUDA) there is no test at all. Every rank of a call must
 * pass the same kind of memory (a job has one backend, so a call site
 * passes host memory everywhere or device memory everywhere). Device groups
 * hang off MPI communicators as an attribute (comm_group_split), so every
 * caller that passes an MPI_Comm finds them; MPI_Comm_free frees them.
 */
#ifndef NEREUS_COMM_H
#define NEREUS_COMM_H

#include <stddef.h>
#include <stdint.h>
#include <mpi.h>

/* The job's world: MPI_COMM_WORLD, or what replaces it (ft.h: a duplicate
 * that returns errors, and after a failure the survivors' shrunk one).
 * Defined in util.c, whose nr_rank and nr_log read it. */
MPI_Comm nr_world(void);
void nr_set_world(MPI_Comm c);

/* Largest element count of one MPI call (under INT_MAX). */
#define COMM_CHUNK_MAX ((size_t)1 << 30)

/* Local: waits for one request (or all n) without spinning a core. */
void comm_wait(MPI_Request *req);
void comm_waitall(int n, MPI_Request *reqs);

/* Local: the pause between two polls of a wait (comm_wait's policy, also
 * the transition engine's). Zero-initialise one per wait (or call
 * comm_waiter_progress when the wait made progress: the yielding window
 * starts again; yield_s is kept), and call comm_waiter_pause after every poll that found
 * nothing done. yield_s: how long to yield between polls before sleeping
 * (0: COMM_YIELD_S; negative: not at all, the sleeps start after the
 * immediate polls). */
#define COMM_YIELD_S 0.003
#define COMM_IDLE_S 0.05
typedef struct CommWaiter {
    int polls;          /* polls since the start or the last progress */
    double t0;          /* when the first pause of this stretch began (0: not yet) */
    long sleep_ns;      /* the last sleep */
    double yield_s;
} CommWaiter;
void comm_waiter_pause(CommWaiter *w);
void comm_waiter_progress(CommWaiter *w);
/* Local: hook called at the start of every comm_wait / comm_waitall (NULL:
 * none) — the point where this rank's compute meets the other ranks. The
 * injected slowdown ([inject] slow_ranks, src/run/inject.c) does its extra
 * work there, so that the ranks waiting on it really wait. */
void comm_set_wait_hook(void (*hook)(void));
/* Local: the INJECTED communicator set-up ([inject] comm_setup_s, src/run/inject.c): from now on every
 * communicator set the job builds (emu.c) takes at least `seconds` on each rank of it, as a slow NCCL
 * initialisation would (0: off). comm_setup_inject_s: the value in force. */
void comm_set_setup_inject(double seconds);
double comm_setup_inject_s(void);
/* collective over job: the INJECTED set-up of one communicator set whose build began at t_begin (nr_now):
 * a rank of the set (member != MPI_COMM_NULL) sleeps until t_begin + comm_setup_inject_s(), then every rank
 * of job meets the others in a barrier that sleeps while it waits (no rank spins a core). Nothing when the
 * injection is off. */
void comm_setup_inject_wait(MPI_Comm job, MPI_Comm member, double t_begin);

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
 * must be matched by a receive of the same n and tag). Device buffers go
 * through c's device group (NCCL send / receive: the tag is not carried,
 * messages between two ranks match in order) or host staging. */
void comm_send_f32(MPI_Comm c, const float *buf, size_t n, int dest, int tag);
void comm_recv_f32(MPI_Comm c, float *buf, size_t n, int src, int tag);

/* Non-blocking point to point within c: starts sending / receiving n floats
 * (n ≤ COMM_CHUNK_MAX: one request) to dest / from src with tag and
 * returns its request, to be finished with comm_wait / comm_waitall (which
 * do not spin). buf must stay untouched (send) / unread (receive) until
 * then. Messages between two ranks with the same tag match in order. */
MPI_Request comm_isend_f32(MPI_Comm c, const float *buf, size_t n, int dest, int tag);
MPI_Request comm_irecv_f32(MPI_Comm c, float *buf, size_t n, int src, int tag);
/* (Host memory only: an MPI_Request cannot carry the upload that a staged
 * receive needs after it completes, nor an NCCL operation; a device buffer
 * here is a programming error and aborts naming the call. Callers stage
 * themselves, as the model's pipeline does through its pp_host buffer.) */

/* Local: one MPI_Testall over reqs[0..n) (MPI_REQUEST_NULL entries are
 * fine): 1 when all are done (and freed), else 0 and none is touched. Also
 * what drives a large non-blocking transfer forward while its rank computes
 * (Open MPI moves rendezvous messages only inside MPI calls). */
int comm_testall(int n, MPI_Request *reqs);

/* Local: tests *req until it is done or max_s seconds have passed (yielding
 * the core between polls as comm_wait does, never sleeping); 1 when done.
 * For a send just posted whose receiver is likely waiting for it: where
 * the transport moves a large message only inside the sender's MPI calls,
 * the two then finish it in one go instead of at the sender's next test. */
int comm_push(MPI_Request *req, double max_s);

/* collective over c: MPI_Ibarrier + comm_wait. */
void comm_barrier(MPI_Comm c);
/* collective over c: a barrier for ranks that reach the end of a phase with
 * nothing to do while others of c still compute: those that arrive early
 * sleep between polls from the start (CommWaiter yield_s < 0) instead of
 * yielding the core for COMM_YIELD_S first. Where a node runs more ranks
 * than it has cores, the yielding waiters took turns on the cores with the
 * ranks still computing (job_step uses it there, before the collectives
 * that end generation and inference). */
void comm_barrier_idle(MPI_Comm c);

/* Rank in c and size of c (-1 / 0 for MPI_COMM_NULL). */
int comm_rank(MPI_Comm c);
int comm_size(MPI_Comm c);
/* collective over c: how many ranks of c share this rank's node (MPI_COMM_TYPE_SHARED) */
int comm_node_size(MPI_Comm c);

/* ---- device memory and device groups ------------------------------------ */

/* Host staging chunk: the most bytes of one download / MPI call / upload. */
#define COMM_STAGE_BYTES ((size_t)64 << 20)

typedef enum CommType { COMM_FLOAT, COMM_DOUBLE, COMM_INT64, COMM_BYTE } CommType;
typedef enum CommOp { COMM_SUM, COMM_MAX, COMM_MIN } CommOp;

/* What a device backend provides (cuda/comm_cuda.c; tests fake one). A
 * group is an opaque handle (an ncclComm_t) whose ranks are those of one
 * MPI communicator in the same order. Blocking: each op has finished
 * (buffer final, stream synchronised) when it returns. */
typedef struct CommDevice {
    const char *name;
    int (*is_device)(const void *p);                       /* 1: p is device memory */
    void (*download)(void *host_dst, const void *src, size_t bytes);
    void (*upload)(void *dst, const void *host_src, size_t bytes);
    void *(*host_alloc)(size_t bytes);                     /* staging buffer (pinned); NULL: malloc */
    void (*host_free)(void *p);
    size_t stage_bytes;                                    /* 0: COMM_STAGE_BYTES (tests use less) */
    /* device groups; all NULL when there are none (no NCCL, a shared GPU) */
    void *(*group_new)(MPI_Comm c);                        /* collective over c */
    /* collective over parent's ranks: the group of those that pass the same
     * color >= 0, ordered by key then parent rank (MPI_Comm_split's rule);
     * NULL for color < 0 */
    void *(*group_split)(void *parent, int color, int key);
    void (*group_free)(void *g);                           /* collective over g's ranks */
    int (*group_rank)(void *g);
    int (*group_size)(void *g);
    void (*allreduce)(void *g, void *buf, size_t n, CommType t, CommOp op);
    void (*bcast)(void *g, void *buf, size_t n, CommType t, int root);
    void (*send)(void *g, const void *buf, size_t n, CommType t, int peer);
    void (*recv)(void *g, void *buf, size_t n, CommType t, int peer);
} CommDevice;

/* Local: registers the device layer (NULL: none, host memory only; the
 * default). The struct must outlive its use. The staging buffer of the
 * previous layer is released. Every rank must register the same kind. */
void comm_set_device(const CommDevice *dev);
const CommDevice *comm_device(void);

/* collective over parent: gives c (what MPI_Comm_split(parent, color, key)
 * returned on this rank: MPI_COMM_NULL where color < 0) its device group,
 * split from parent's group (built first over parent, and attached to it,
 * when parent has none). Every rank of parent must call it after the same
 * MPI_Comm_split. No-op without device groups. */
void comm_group_split(MPI_Comm parent, int color, int key, MPI_Comm c);
/* collective over c: attaches a new device group to c (no-op without device
 * groups, or when c already has one). */
void comm_group_attach(MPI_Comm c);
/* collective over c: frees c's device group now (no-op without one); e.g.
 * before MPI_Finalize for a group on MPI_COMM_WORLD, which MPI would
 * otherwise free inside MPI_Finalize. */
void comm_group_detach(MPI_Comm c);
/* Local: c's device group (NULL: none; MPI_COMM_NULL has none). A group
 * goes with its communicator: MPI_Comm_free frees it, MPI_Comm_dup does not
 * copy it (the duplicate stages). */
void *comm_group(MPI_Comm c);

/* Local, for tests: how many calls took each path since the last reset,
 * counted while a device layer is registered (host: a buffer found to be
 * host memory; staged: device memory without a group; group: with one). */
typedef struct CommPathCounts { long host, staged, group; } CommPathCounts;
CommPathCounts comm_path_counts(int reset);

#endif
