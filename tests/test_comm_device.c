/* test_comm_device.c — the comm facade's device-memory paths (comm.h)
 * without a GPU, against its plain MPI path.
 *
 *   jobs/local.sh -np 4 build/tests/test_comm_device
 *
 * A fake device layer (CommDevice) marks the buffers this test allocates as
 * "device memory" (they are host memory, so MPI could read them, but the
 * facade must not hand them to MPI) and copies with memcpy. Part 1, no
 * groups: every collective and the blocking point-to-point on "device"
 * buffers must stage through host memory, in chunks of a small staging size
 * (so the chunk loops run), and give bit for bit what the same call gives on
 * host buffers through plain MPI; host buffers with the layer registered
 * must still take the MPI path. Part 2, groups: the fake layer's groups are
 * MPI communicators (a dup of the job communicator, split like NCCL's
 * ncclCommSplit), so emu_build's group code runs as it does with NCCL:
 * every EMU communicator of random EMUs must carry a group with its ranks in
 * its order, the calls on "device" buffers must go through the group and
 * give the same results, a dup'd communicator must have no group (and
 * stage), and emu_free must free every group (MPI_Comm_free's attribute
 * callback). Values are small integers, so every sum is exact and any order
 * of reduction gives the same bits. Rank 0 prints the summary; the exit
 * status is non-zero if any rank failed.
 */
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/comm.h"
#include "nereus/emu.h"
#include "nereus/grid.h"
#include "nereus/util.h"

#define SEED 20261202u
#define STAGE 1000 /* bytes of one staging chunk: 250 floats, 125 doubles */

static int me, world;
static long fails, checks;

#include "mpi_fail.h"

/* ---- the fake device layer -------------------------------------------------- */

#define MAX_DEV 64
static struct { char *p; size_t n; } dev_bufs[MAX_DEV];
static size_t bytes_down, bytes_up;
static long live_groups, group_ops;

static void *dev_alloc(size_t bytes) {
    for (int i = 0; i < MAX_DEV; i++)
        if (!dev_bufs[i].p) {
            dev_bufs[i].p = nr_xmalloc(bytes + 1);
            dev_bufs[i].n = bytes;
            return dev_bufs[i].p;
        }
    nr_fatal("test: too many fake device buffers");
}
static void dev_free(void *p) {
    for (int i = 0; i < MAX_DEV; i++)
        if (dev_bufs[i].p == p) {
            free(p);
            dev_bufs[i].p = NULL;
        }
}
static int fake_is_device(const void *p) {
    const char *c = p;
    for (int i = 0; i < MAX_DEV; i++)
        if (dev_bufs[i].p && c >= dev_bufs[i].p && c < dev_bufs[i].p + dev_bufs[i].n) return 1;
    return 0;
}
static void fake_download(void *h, const void *d, size_t n) {
    if (!fake_is_device(d) || fake_is_device(h)) nr_fatal("test: download from host memory or into device memory");
    memcpy(h, d, n);
    bytes_down += n;
}
static void fake_upload(void *d, const void *h, size_t n) {
    if (!fake_is_device(d) || fake_is_device(h)) nr_fatal("test: upload into host memory or from device memory");
    memcpy(d, h, n);
    bytes_up += n;
}

/* groups: an MPI communicator of their own, as an NCCL communicator is */
typedef struct FakeGroup { MPI_Comm c; } FakeGroup;
static MPI_Datatype fake_mpi_type(CommType t) {
    return t == COMM_FLOAT ? MPI_FLOAT : t == COMM_DOUBLE ? MPI_DOUBLE : t == COMM_INT64 ? MPI_INT64_T : MPI_BYTE;
}
static void *fake_group_new(MPI_Comm c) {
    FakeGroup *g = nr_xmalloc(sizeof *g);
    mpiCheck(MPI_Comm_dup(c, &g->c));
    live_groups++;
    return g;
}
static void *fake_group_split(void *parent, int color, int key) {
    MPI_Comm c;
    mpiCheck(MPI_Comm_split(((FakeGroup *)parent)->c, color >= 0 ? color : MPI_UNDEFINED, key, &c));
    if (c == MPI_COMM_NULL) return NULL;
    FakeGroup *g = nr_xmalloc(sizeof *g);
    g->c = c;
    live_groups++;
    return g;
}
static void fake_group_free(void *g) {
    mpiCheck(MPI_Comm_free(&((FakeGroup *)g)->c));
    free(g);
    live_groups--;
}
static int fake_group_rank(void *g) { return comm_rank(((FakeGroup *)g)->c); }
static int fake_group_size(void *g) { return comm_size(((FakeGroup *)g)->c); }
static void fake_allreduce(void *g, void *buf, size_t n, CommType t, CommOp op) {
    group_ops++;
    MPI_Op o = op == COMM_MAX ? MPI_MAX : op == COMM_MIN ? MPI_MIN : MPI_SUM;
    mpiCheck(MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, fake_mpi_type(t), o, ((FakeGroup *)g)->c));
}
static void fake_bcast(void *g, void *buf, size_t n, CommType t, int root) {
    group_ops++;
    mpiCheck(MPI_Bcast(buf, (int)n, fake_mpi_type(t), root, ((FakeGroup *)g)->c));
}
static void fake_send(void *g, const void *buf, size_t n, CommType t, int peer) {
    group_ops++;
    mpiCheck(MPI_Send(buf, (int)n, fake_mpi_type(t), peer, 0, ((FakeGroup *)g)->c));
}
static void fake_recv(void *g, void *buf, size_t n, CommType t, int peer) {
    group_ops++;
    mpiCheck(MPI_Recv(buf, (int)n, fake_mpi_type(t), peer, 0, ((FakeGroup *)g)->c, MPI_STATUS_IGNORE));
}

static CommDevice fake_staging = {"fake", fake_is_device, fake_download, fake_upload, NULL, NULL, STAGE,
                                  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
static CommDevice fake_groups = {"fake-groups", fake_is_device, fake_download, fake_upload, NULL, NULL, STAGE,
                                 fake_group_new, fake_group_split, fake_group_free, fake_group_rank,
                                 fake_group_size, fake_allreduce, fake_bcast, fake_send, fake_recv};

/* ---- one pass of every call, on host and on "device" buffers ---------------- */

static int draw(uint64_t a, uint64_t b, int n) { return rng_below(SEED, RNG_TEST, a, b, n); }

/* rank r's element i of case k: a small integer (exact in float sums) */
static int64_t val(int r, size_t i, int k) { return (int64_t)draw((uint64_t)k, (uint64_t)r * 100003u + i, 201) - 100; }

/* What every call of one case gives, on buffers of this kind (dev: fake
 * device memory, else host): the concatenated outputs as doubles. */
enum { NCALLS = 10 };
static double *run_case(MPI_Comm c, size_t n, int k, int dev, size_t *nout) {
    int r = comm_rank(c), size = comm_size(c);
    int root = draw((uint64_t)k, 7, size);
    size_t chunk = 1 + (size_t)draw((uint64_t)k, 8, 300);
    double *out = nr_xmalloc((NCALLS * n + 1) * sizeof(double));
    size_t o = 0;
    float *f = dev ? dev_alloc(n * sizeof *f) : nr_xmalloc(n * sizeof *f + 1);
    double *d = dev ? dev_alloc(n * sizeof *d) : nr_xmalloc(n * sizeof *d + 1);
    int64_t *q = dev ? dev_alloc(n * sizeof *q) : nr_xmalloc(n * sizeof *q + 1);
    float *hf = nr_xmalloc(n * sizeof *hf + 1);
    double *hd = nr_xmalloc(n * sizeof *hd + 1);
    int64_t *hq = nr_xmalloc(n * sizeof *hq + 1);
    /* set x from host values, run, read back through the host copy */
#define PUT(x, h, expr) do { for (size_t i = 0; i < n; i++) h[i] = expr; memcpy(x, h, n * sizeof *h); } while (0)
#define GET(x, h) do { memcpy(h, x, n * sizeof *h); for (size_t i = 0; i < n; i++) out[o++] = (double)h[i]; } while (0)
    PUT(f, hf, (float)val(r, i, k));
    comm_allreduce_sum_f32(c, f, n);
    GET(f, hf);
    PUT(f, hf, (float)val(r, i, k + 1));
    comm_allreduce_sum_f32_chunk(c, f, n, chunk);
    GET(f, hf);
    PUT(d, hd, 0.5 * (double)val(r, i, k + 2));
    comm_allreduce_sum_f64(c, d, n);
    GET(d, hd);
    PUT(d, hd, 0.25 * (double)val(r, i, k + 3));
    comm_allreduce_max_f64(c, d, n);
    GET(d, hd);
    PUT(q, hq, val(r, i, k + 4) * 1000003);
    comm_allreduce_sum_i64(c, q, n);
    GET(q, hq);
    PUT(q, hq, val(r, i, k + 5));
    comm_allreduce_max_i64(c, q, n);
    GET(q, hq);
    PUT(q, hq, val(r, i, k + 6));
    comm_allreduce_min_i64(c, q, n);
    GET(q, hq);
    PUT(f, hf, r == root ? (float)val(r, i, k + 7) : -1.0f);
    comm_bcast_f32(c, f, n, root);
    GET(f, hf);
    PUT(d, hd, r == root ? (double)val(r, i, k + 8) : -1.0);
    comm_bcast(c, d, n * sizeof *d, root);
    GET(d, hd);
    /* a ring: r sends to r+1 and receives from r-1 (even ranks send first) */
    PUT(f, hf, (float)val(r, i, k + 9));
    if (size > 1) {
        float *g = dev ? dev_alloc(n * sizeof *g + 4) : nr_xmalloc(n * sizeof *g + 4);
        int to = (r + 1) % size, from = (r + size - 1) % size;
        if (r % 2 == 0) {
            comm_send_f32(c, f, n, to, 5);
            comm_recv_f32(c, g, n, from, 5);
        } else {
            comm_recv_f32(c, g, n, from, 5);
            comm_send_f32(c, f, n, to, 5);
        }
        if (dev) {
            memcpy(f, g, n * sizeof *f);
            dev_free(g);
        } else {
            memcpy(f, g, n * sizeof *f);
            free(g);
        }
    }
    GET(f, hf);
#undef PUT
#undef GET
    if (dev) {
        dev_free(f);
        dev_free(d);
        dev_free(q);
    } else {
        free(f);
        free(d);
        free(q);
    }
    free(hf);
    free(hd);
    free(hq);
    *nout = o;
    return out;
}

/* The expected outputs of run_case from the formulas (rank order of c given
 * by its world ranks wr[0..size)): the oracle both paths are held to. */
static double *expect_case(const int *wr, int size, int r, size_t n, int k, size_t *nout) {
    int root = draw((uint64_t)k, 7, size);
    double *out = nr_xmalloc((NCALLS * n + 1) * sizeof(double));
    size_t o = 0;
    (void)wr;
    for (int call = 0; call < NCALLS; call++)
        for (size_t i = 0; i < n; i++) {
            double s = 0, mx = -1e300;
            int64_t si = 0, mi = INT64_MIN, mn = INT64_MAX;
            for (int m = 0; m < size; m++) {
                s += call == 0 ? (double)val(m, i, k) : call == 1 ? (double)val(m, i, k + 1) : 0.5 * (double)val(m, i, k + 2);
                double v3 = 0.25 * (double)val(m, i, k + 3);
                mx = v3 > mx ? v3 : mx;
                si += val(m, i, k + 4) * 1000003;
                mi = val(m, i, k + 5) > mi ? val(m, i, k + 5) : mi;
                mn = val(m, i, k + 6) < mn ? val(m, i, k + 6) : mn;
            }
            double e = call <= 2 ? s : call == 3 ? mx : call == 4 ? (double)si : call == 5 ? (double)mi
                     : call == 6 ? (double)mn : call == 7 ? (double)val(root, i, k + 7)
                     : call == 8 ? (double)val(root, i, k + 8)
                     : (double)val(size > 1 ? (r + size - 1) % size : r, i, k + 9);
            out[o++] = e;
        }
    *nout = o;
    return out;
}

static void compare(const char *what, const double *got, const double *want, size_t n, size_t per) {
    checks++;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof got[i]) != 0) {
            fail("%s: call %zu element %zu = %.17g, want %.17g", what, per ? i / per : 0, per ? i % per : i, got[i],
                 want[i]);
            return;
        }
}

/* every call on c, on host and on device buffers, against the oracle; the
 * device buffers must take path `want` ("staged" or "group") */
static void check_comm(MPI_Comm c, const char *label, int k, const char *want) {
    static const size_t sizes[] = {0, 1, 37, 250, 251, 1000, 4099, 70001}; /* 70001: host calls in several pieces */
    int size = comm_size(c), r = comm_rank(c);
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        size_t n = sizes[si], nh, nd, ne;
        char what[160];
        comm_path_counts(1);
        double *h = run_case(c, n, k, 0, &nh);
        CommPathCounts ph = comm_path_counts(1);
        double *d = run_case(c, n, k, 1, &nd);
        CommPathCounts pd = comm_path_counts(1);
        double *e = expect_case(NULL, size, r, n, k, &ne);
        snprintf(what, sizeof what, "%s n=%zu host", label, n);
        compare(what, h, e, nh < ne ? nh : ne, n);
        snprintf(what, sizeof what, "%s n=%zu device (%s)", label, n, want);
        compare(what, d, e, nd < ne ? nd : ne, n);
        if (nh != ne || nd != ne) fail("%s n=%zu: %zu / %zu outputs, want %zu", label, n, nh, nd, ne);
        /* paths: on host buffers every call is host; on device ones every call
         * with n > 0 is staged or group, and with n == 0 host (nothing to move) */
        long calls = size > 1 ? NCALLS + 1 : NCALLS - 1; /* the ring's send and receive are two */
        checks++;
        if (comm_device() && n > 0 && (ph.staged || ph.group || ph.host != calls))
            fail("%s n=%zu: host buffers took host %ld staged %ld group %ld, want host %ld", label, n, ph.host,
                 ph.staged, ph.group, calls);
        long dv = !strcmp(want, "group") ? pd.group : pd.staged, other = !strcmp(want, "group") ? pd.staged : pd.group;
        checks++;
        if (comm_device() && n > 0 && (dv != calls || other || pd.host))
            fail("%s n=%zu: device buffers took host %ld staged %ld group %ld, want %ld %s", label, n, pd.host,
                 pd.staged, pd.group, calls, want);
        free(h);
        free(d);
        free(e);
    }
}

/* an EMU communicator's group holds its ranks in its order (the fake group's
 * MPI communicator translated to job ranks, against the MPI one's) */
static void check_group_ranks(MPI_Comm c, const char *label) {
    FakeGroup *g = comm_group(c);
    checks++;
    if (!g) {
        fail("%s: no group", label);
        return;
    }
    int n = comm_size(c);
    if (comm_size(g->c) != n || comm_rank(g->c) != comm_rank(c)) {
        fail("%s: group rank %d of %d, MPI %d of %d", label, comm_rank(g->c), comm_size(g->c), comm_rank(c), n);
        return;
    }
    MPI_Group a, b, w;
    mpiCheck(MPI_Comm_group(c, &a));
    mpiCheck(MPI_Comm_group(g->c, &b));
    mpiCheck(MPI_Comm_group(MPI_COMM_WORLD, &w));
    int idx[PLAN_MAX_RANKS], ra[PLAN_MAX_RANKS], rb[PLAN_MAX_RANKS];
    for (int i = 0; i < n; i++) idx[i] = i;
    mpiCheck(MPI_Group_translate_ranks(a, n, idx, w, ra));
    mpiCheck(MPI_Group_translate_ranks(b, n, idx, w, rb));
    for (int i = 0; i < n; i++)
        if (ra[i] != rb[i]) {
            fail("%s: member %d is world rank %d in the group, %d in the communicator", label, i, rb[i], ra[i]);
            break;
        }
    mpiCheck(MPI_Group_free(&a));
    mpiCheck(MPI_Group_free(&b));
    mpiCheck(MPI_Group_free(&w));
}

static GridLayout random_layout(int maxn, int round) {
    GridLayout all[256];
    int n = 0;
    for (int tp = 1; tp <= maxn; tp++)
        for (int pp = 1; tp * pp <= maxn; pp++)
            for (int dp = 1; tp * pp * dp <= maxn && n < 256; dp++) all[n++] = (GridLayout){tp, pp, dp};
    return all[draw(5000 + (uint64_t)round, 0, n)];
}

int main(int argc, char **argv) {
    mpiCheck(MPI_Init(&argc, &argv));
    mpiCheck(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    mpiCheck(MPI_Comm_size(MPI_COMM_WORLD, &world));
    setvbuf(stdout, NULL, _IOLBF, 0);
    double t0 = nr_now();
    long emus = 0, groups_checked = 0;

    /* part 0: no layer — the plain path, and no group machinery */
    check_comm(MPI_COMM_WORLD, "no layer", 100, "host");
    if (comm_group(MPI_COMM_WORLD)) fail("a group without a device layer");

    /* part 1: staging only */
    comm_set_device(&fake_staging);
    check_comm(MPI_COMM_WORLD, "staging, world", 200, "staged");
    MPI_Comm half;
    mpiCheck(MPI_Comm_split(MPI_COMM_WORLD, me % 2, -me, &half));
    check_comm(half, "staging, half (reversed order)", 300, "staged");
    mpiCheck(MPI_Comm_free(&half));
    Emu e;
    int ranks[PLAN_MAX_RANKS];
    for (int i = 0; i < world; i++) ranks[i] = world - 1 - i;
    emu_build(&e, MPI_COMM_WORLD, "staging", (GridLayout){world > 1 ? 2 : 1, 1, world > 1 ? world / 2 : 1}, ranks);
    for (GridGroup g = GRID_TP; g < GRID_NGROUPS; g++)
        if (comm_group(emu_comm(&e, g))) fail("staging layer: EMU %s comm has a group", grid_group_name(g));
    if (e.pos >= 0) check_comm(e.dp, "staging, EMU dp", 400, "staged");
    emu_free(&e);
    size_t down = bytes_down, up = bytes_up;
    comm_allreduce_sum_i64(MPI_COMM_WORLD, (int64_t[]){0}, 1);
    if (bytes_down != down || bytes_up != up) fail("a host buffer was staged");

    /* part 2: groups */
    comm_set_device(&fake_groups);
    for (int round = 0; round < 6; round++) {
        GridLayout l = random_layout(world, round);
        int n = grid_size(l);
        for (int i = 0; i < world; i++) ranks[i] = i;
        for (int i = world - 1; i > 0; i--) { /* a random ordered subset */
            int j = draw(6000 + (uint64_t)round, (uint64_t)i, i + 1), t = ranks[i];
            ranks[i] = ranks[j];
            ranks[j] = t;
        }
        char name[32];
        snprintf(name, sizeof name, "groups%d", round);
        emu_build(&e, MPI_COMM_WORLD, name, l, ranks);
        emus++;
        if (!comm_group(MPI_COMM_WORLD)) fail("round %d: no parent group on the job communicator", round);
        for (GridGroup g = GRID_TP; g < GRID_NGROUPS; g++) {
            MPI_Comm c = emu_comm(&e, g);
            char label[96];
            snprintf(label, sizeof label, "round %d tp%d pp%d dp%d %s", round, l.tp, l.pp, l.dp, grid_group_name(g));
            if (c == MPI_COMM_NULL) continue;
            check_group_ranks(c, label);
            groups_checked++;
        }
        /* the calls through each kind of group (collective over each: every
         * member calls, in the same order of kinds) */
        if (e.pos >= 0) {
            check_comm(e.all, "groups, EMU all", 700 + round, "group");
            check_comm(e.tp, "groups, EMU tp", 710 + round, "group");
            check_comm(e.dp, "groups, EMU dp", 720 + round, "group");
            check_comm(e.pp, "groups, EMU pp", 730 + round, "group");
            if (e.embd != MPI_COMM_NULL) check_comm(e.embd, "groups, EMU embd", 740 + round, "group");
            MPI_Comm dup;
            mpiCheck(MPI_Comm_dup(e.all, &dup));
            if (comm_group(dup)) fail("round %d: MPI_Comm_dup copied the group", round);
            check_comm(dup, "groups, dup of EMU all", 750 + round, "staged");
            mpiCheck(MPI_Comm_free(&dup));
        }
        (void)n;
        emu_free(&e);
        checks++;
        if (live_groups != 1) fail("round %d: %ld groups live after emu_free, want 1 (the job's)", round, live_groups);
    }
    check_comm(MPI_COMM_WORLD, "groups, job communicator", 800, "group");
    comm_group_detach(MPI_COMM_WORLD);
    checks++;
    if (live_groups != 0 || comm_group(MPI_COMM_WORLD)) fail("%ld groups live after detaching the job's", live_groups);
    comm_set_device(NULL);

    int64_t tot[4] = {fails, checks, groups_checked, emus};
    comm_allreduce_sum_i64(MPI_COMM_WORLD, tot, 4);
    if (me == 0) {
        printf("%s staging (chunks of %d bytes) and fake NCCL groups on %d ranks: %lld checks of every collective "
               "and the blocking point-to-point on host and device buffers against the formulas; %lld EMU group "
               "communicators of %lld EMUs matched their MPI communicators\n",
               tot[0] ? "FAIL" : "ok  ", STAGE, world, (long long)tot[1], (long long)tot[2], (long long)tot[3]);
        printf("%s: test_comm_device, %lld failures over all ranks (%.1f s)\n", tot[0] ? "FAIL" : "PASS",
               (long long)tot[0], nr_now() - t0);
    }
    mpiCheck(MPI_Finalize());
    return me == 0 && tot[0] ? 1 : 0;
}
