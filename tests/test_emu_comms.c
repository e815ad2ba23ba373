/* test_emu_comms.c — MPI test of EMU communicators (emu.h) and the comm
 * facade (comm.h) against the pure grid math (grid.h).
 *
 *   mpirun --oversubscribe -np 8 build/tests/test_emu_comms [ROUNDS]
 *
 * Each round draws (from a counter-based RNG, so every rank draws the same)
 * one to three EMUs with random tp, pp, dp (tp*pp*dp ≤ the job size) on
 * random ordered subsets of the job's ranks — either drawn independently
 * (EMUs share ranks) or cut from one permutation (EMUs on disjoint ranks) —
 * builds them all, and on every rank checks each communicator: exactly the
 * job ranks the grid math says, in grid order (MPI_Group_translate_ranks),
 * this rank's place in it, and MPI_COMM_NULL where the rank is no member.
 * Over every group it checks that comm_allreduce_sum_f32 (with a random
 * chunk, so the chunking loop runs) gives the exact sum, and per EMU a
 * broadcast and a pipeline send/receive. Then it checks that comm_wait
 * sleeps: the other ranks wait in comm_barrier while rank 0 sleeps 0.5 s,
 * and their CPU time must stay under 20% of the wall time.
 * Rank 0 prints the summary; the exit status is non-zero if any rank failed.
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nereus/comm.h"
#include "nereus/emu.h"
#include "nereus/grid.h"
#include "nereus/util.h"

#define SEED 20240603u
#define MAX_EMUS 3

static int me, world;
static long fails, comms_checked, nulls_checked, reductions;

#include "mpi_fail.h"

static int draw(int round, int k, int n) { return rng_below(SEED, RNG_TEST, (uint64_t)round, (uint64_t)k, n); }

/* EMUs of one layout on the same ranks share one communicator set (emu.h): a third EMU of a layout already
   built makes no new set, its groups still check out against the grid math, freeing one of the two leaves
   the other working, and freeing the last leaves no set behind. */
static void check_group(const Emu *e, GridGroup g, int round, int chunk);
static void shared_check(void)
{
    EmuCache cache;
    emu_cache_init(&cache, 0);
    int n0 = emu_cache_sets(&cache);
    int r[PLAN_MAX_RANKS], q[PLAN_MAX_RANKS];
    for (int i = 0; i < world; i++) r[i] = world - 1 - i, q[i] = i;
    GridLayout l = {world >= 4 ? 2 : 1, 1, world >= 4 ? world / 2 : world};
    Emu a, b, c;
    emu_build_in(&a, &cache, MPI_COMM_WORLD, "shared.a", l, r);
    emu_build_in(&b, &cache, MPI_COMM_WORLD, "shared.b", l, q); /* same layout, other rank order: its own set */
    emu_build_in(&c, &cache, MPI_COMM_WORLD, "shared.c", l, r); /* same layout and ranks as a: shares a's set */
    if (emu_cache_sets(&cache) != n0 + 2) fail("three EMUs of two distinct (layout, ranks) made %d sets", emu_cache_sets(&cache) - n0);
    if (c.tp != a.tp || c.dp != a.dp || c.all != a.all) fail("the EMU of a's layout and ranks does not share its groups");
    if (world > 1 && b.all == a.all) fail("an EMU of other ranks shares a's groups");
    emu_free(&a);
    for (GridGroup g = GRID_TP; g < GRID_NGROUPS; g++) check_group(&c, g, 9000, 0); /* still whole after a went */
    emu_free(&c);
    emu_free(&b);
    if (emu_cache_sets(&cache) != n0) fail("%d communicator set(s) left after the last EMU was freed", emu_cache_sets(&cache) - n0);
    if (me == 0) printf("%s EMUs of one layout and ranks share one communicator set, freed with the last\n",
                        fails ? "FAIL" : "ok  ");
}

/* Kept sets ([transition] keep_comms, emu_cache_set_keep): with 2 kept, a freed EMU's set stays and an EMU of
   its layout built later takes it back without a split; three released sets keep the two released last;
   emu_cache_free frees them. Then 60 random plan switches (7 model-stages, random layouts on random ranks,
   some shared by neighbouring stages, changed stages rebuilt before the old ones are freed, as
   job_transition does) with 2 kept (so one switch often releases more than are kept): after each,
   for every layout of the last few plans, emu_cache_has must say what the model the planner prices with
   says (in the plan, or plan_kept_has after plan_kept_switch), the kept count must match, and a stage
   rebuilt onto a kept layout must build no set. */
static void permutation(int *p, int n, int round, int *k);
static GridLayout random_layout(int maxn, int round, int *k);
static void random_stage(PlanStage *st, int round, int *k)
{
    GridLayout l = random_layout(world, round, k);
    int perm[PLAN_MAX_RANKS];
    permutation(perm, world, round, k);
    memset(st, 0, sizeof *st);
    st->tp = l.tp, st->pp = l.pp, st->dp = l.dp, st->nranks = grid_size(l);
    for (int i = 0; i < st->nranks; i++) st->ranks[i] = (int16_t)perm[i];
}

static int stage_has_comms(const EmuCache *cache, const PlanStage *st)
{
    int r[PLAN_MAX_RANKS];
    for (int i = 0; i < st->nranks; i++) r[i] = st->ranks[i];
    return emu_cache_has(cache, MPI_COMM_WORLD, (GridLayout){st->tp, st->pp, st->dp}, r);
}

/* Sets built ahead (emu_cache_prepare): a prepared set is neither in use nor kept and survives trims (keep 0); an
   EMU of its layout and ranks takes it without a split and its groups check out; preparing a layout the cache
   holds builds nothing; emu_cache_drop_prepared frees the sets no EMU took; with an INJECTED set-up of 0.2 s a
   set, two sets prepared one after the other are ready 0.2 and 0.4 s after the first prepare: an EMU taken
   after 0.3 s waits about 0.1 s for the second (a sleep on its ranks and a barrier), not the 0.2 s of a set
   built in place */
static void prepared_check(void)
{
    long f0 = fails;
    int r[PLAN_MAX_RANKS];
    for (int i = 0; i < world; i++) r[i] = world - 1 - i;
    GridLayout la = {1, 1, world}, lb = {world >= 2 ? 2 : 1, 1, world >= 2 ? world / 2 : 1};
    EmuCache cache;
    emu_cache_init(&cache, 0);
    long s0 = emu_cache_sets_built(&cache);
    if (emu_cache_prepare(&cache, MPI_COMM_WORLD, la, r) != 1 || emu_cache_sets_prepared(&cache) != 1 ||
        emu_cache_sets_kept(&cache) != 0 || emu_cache_sets(&cache) != 0 || emu_cache_sets_built(&cache) != s0 + 1)
        fail("a prepared set: prepared %d, kept %d, in use %d, built %ld", emu_cache_sets_prepared(&cache),
             emu_cache_sets_kept(&cache), emu_cache_sets(&cache), emu_cache_sets_built(&cache) - s0);
    if (emu_cache_prepare(&cache, MPI_COMM_WORLD, la, r) != 0) fail("a layout prepared twice built a second set");
    Emu a, b;
    emu_build_in(&b, &cache, MPI_COMM_WORLD, "prep.b", lb, r); /* built in place, then freed with keep 0: a trim */
    emu_free(&b);
    if (emu_cache_sets_prepared(&cache) != 1) fail("a trim freed a prepared set");
    emu_build_in(&a, &cache, MPI_COMM_WORLD, "prep.a", la, r);
    if (emu_cache_sets_built(&cache) != s0 + 2 || emu_cache_prepared_taken(&cache) != 1 || emu_cache_sets_prepared(&cache) != 0)
        fail("the EMU of a prepared layout built %ld set(s) in all (want 2), took %ld prepared", emu_cache_sets_built(&cache) - s0,
             emu_cache_prepared_taken(&cache));
    for (GridGroup g = GRID_TP; g < GRID_NGROUPS; g++) check_group(&a, g, 9200, 0);
    emu_free(&a);
    emu_cache_prepare(&cache, MPI_COMM_WORLD, lb, r);
    if (emu_cache_drop_prepared(&cache) != 1 || emu_cache_sets_prepared(&cache) != 0) fail("a prepared set no EMU took was not dropped");

    comm_set_setup_inject(0.2);
    double t0 = nr_now();
    emu_cache_prepare(&cache, MPI_COMM_WORLD, la, r);
    emu_cache_prepare(&cache, MPI_COMM_WORLD, lb, r);
    double prep = nr_now() - t0;
    for (double left = 0.3 - (nr_now() - t0); left > 0; left = 0.3 - (nr_now() - t0)) /* the step that runs meanwhile */
        nanosleep(&(struct timespec){0, (long)(left * 1e9)}, NULL);
    comm_barrier(MPI_COMM_WORLD);
    double t1 = nr_now();
    emu_build_in(&a, &cache, MPI_COMM_WORLD, "prep.a2", la, r); /* ready at 0.2: no wait */
    emu_build_in(&b, &cache, MPI_COMM_WORLD, "prep.b2", lb, r); /* ready at 0.4 */
    double waited = nr_now() - t1, end = nr_now() - t0;
    comm_set_setup_inject(0);
    double w[2] = {waited, prep};
    mpiCheck(MPI_Allreduce(MPI_IN_PLACE, w, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    if (w[1] > 0.1) fail("preparing two sets with an INJECTED set-up took %.3f s (its set-up is not waited for there)", w[1]);
    if (!(end >= 0.4 - 1e-3) || w[0] > 0.19) fail("taking two prepared sets at 0.3 s waited %.3f s, done at %.3f s (ready at 0.4)", w[0], end);
    emu_free(&a), emu_free(&b);
    emu_cache_free(&cache);
    if (me == 0) printf("%s sets prepared ahead are held, taken without a split, dropped when unused; their INJECTED "
                        "set-up runs from the prepare (two taken at 0.3 s waited %.3f s, not 0.4)\n",
                        fails > f0 ? "FAIL" : "ok  ", w[0]);
}

static void kept_check(void)
{
    long f0 = fails;
    int r[PLAN_MAX_RANKS];
    for (int i = 0; i < world; i++) r[i] = i;
    GridLayout la = {1, 1, world}, lb = {world, 1, 1}, lc = {1, world, 1};
    EmuCache cache;
    emu_cache_init(&cache, 2);
    Emu a, b, c;
    long s0 = emu_cache_sets_built(&cache);
    emu_build_in(&a, &cache, MPI_COMM_WORLD, "kept.a", la, r);
    emu_free(&a);
    if (emu_cache_sets_kept(&cache) != 1 || !emu_cache_has(&cache, MPI_COMM_WORLD, la, r)) fail("a freed EMU's set is not kept");
    emu_build_in(&a, &cache, MPI_COMM_WORLD, "kept.a2", la, r);
    if (emu_cache_sets_built(&cache) != s0 + 1 || emu_cache_sets_kept(&cache) != 0) fail("an EMU of a kept layout built a set anew");
    check_group(&a, GRID_DP, 9100, 0); /* the kept communicators still work */
    emu_build_in(&b, &cache, MPI_COMM_WORLD, "kept.b", lb, r);
    emu_build_in(&c, &cache, MPI_COMM_WORLD, "kept.c", lc, r);
    emu_free(&a), emu_free(&b), emu_free(&c); /* released a, b, c: b and c stay */
    if (emu_cache_sets_kept(&cache) != 2 || emu_cache_has(&cache, MPI_COMM_WORLD, la, r) || !emu_cache_has(&cache, MPI_COMM_WORLD, lb, r) ||
        !emu_cache_has(&cache, MPI_COMM_WORLD, lc, r))
        fail("with 2 kept, the sets released last are not the ones kept (kept %d)", emu_cache_sets_kept(&cache));
    emu_cache_free(&cache);
    if (emu_cache_sets_kept(&cache) != 0) fail("%d kept set(s) after emu_cache_free", emu_cache_sets_kept(&cache));

    static PlanConfig cur, next, hist[4];
    static PlanKept model;
    Emu e[PLAN_NSTAGES], ne[PLAN_NSTAGES];
    { /* by hand, 1 kept: layout A on stages 1 and 3, B on stage 2, all three moved; A goes with stage 3, after
         B, so A is the one kept (a set is released with the last of its EMUs), and the model must say so */
        emu_cache_set_keep(&cache, 1);
        memset(&model, 0, sizeof model);
        int kk = 0;
        PlanStage A, B, C, D;
        random_stage(&A, 9150, &kk);
        do random_stage(&B, 9151, &kk); while (plan_stage_same(&A, &B));
        do random_stage(&C, 9152, &kk); while (plan_stage_same(&C, &A) || plan_stage_same(&C, &B));
        do random_stage(&D, 9153, &kk); while (plan_stage_same(&D, &A) || plan_stage_same(&D, &B) || plan_stage_same(&D, &C));
        for (int st = 0; st < PLAN_NSTAGES; st++) cur.stage[st] = st == 1 || st == 3 ? A : st == 2 ? B : C;
        next = cur;
        next.stage[1] = next.stage[2] = next.stage[3] = D;
        for (int st = 0; st < PLAN_NSTAGES; st++) emu_build_stage(&e[st], &cache, MPI_COMM_WORLD, &cur, st);
        for (int st = 1; st <= 3; st++) emu_build_stage(&ne[st], &cache, MPI_COMM_WORLD, &next, st);
        for (int st = 1; st <= 3; st++) emu_free(&e[st]), e[st] = ne[st];
        plan_kept_switch(&model, 1, &cur, &next);
        if (!stage_has_comms(&cache, &A) || stage_has_comms(&cache, &B) || !plan_kept_has(&model, &A) || plan_kept_has(&model, &B))
            fail("1 kept after A (stages 1, 3) and B (stage 2) left: emu keeps A %d, B %d; the model A %d, B %d",
                 stage_has_comms(&cache, &A), stage_has_comms(&cache, &B), plan_kept_has(&model, &A), plan_kept_has(&model, &B));
        for (int st = 0; st < PLAN_NSTAGES; st++) emu_free(&e[st]);
        emu_cache_free(&cache);
    }
    int keep = 2, k = 0, reused = 0, checked = 0;
    emu_cache_set_keep(&cache, keep);
    memset(&model, 0, sizeof model);
    for (int s = 0; s < PLAN_NSTAGES; s++) { /* colocated starts: some stages share a layout */
        if (s > 0 && draw(9200, k++, 2)) cur.stage[s] = cur.stage[s - 1];
        else random_stage(&cur.stage[s], 9200, &k);
        emu_build_stage(&e[s], &cache, MPI_COMM_WORLD, &cur, s);
    }
    for (int h = 0; h < 4; h++) hist[h] = cur;
    for (int round = 0; round < 60; round++) {
        next = cur;
        for (int s = 0; s < PLAN_NSTAGES; s++) { /* each stage: stay, move to a layout of an earlier plan, or new */
            int c = draw(9300 + round, k++, 5);
            if (c == 1) next.stage[s] = hist[draw(9300 + round, k++, 4)].stage[s];
            else if (c == 2) random_stage(&next.stage[s], 9300 + round, &k);
            else if (c == 3 && s > 0) next.stage[s] = next.stage[s - 1]; /* colocated with the stage before */
        }
        for (int s = 0; s < PLAN_NSTAGES; s++) { /* new EMUs first, then the old ones go (switch.c) */
            if (plan_stage_same(&cur.stage[s], &next.stage[s])) continue;
            int expect_reuse = !plan_stage_new_comms(&cur, &next, s) || plan_kept_has(&model, &next.stage[s]);
            long before = emu_cache_sets_built(&cache);
            emu_build_stage(&ne[s], &cache, MPI_COMM_WORLD, &next, s);
            int built = emu_cache_sets_built(&cache) != before;
            if (built == expect_reuse)
                fail("switch %d, %s: built %d set(s) where the model expects %s", round, plan_stage_name(s), built,
                     expect_reuse ? "reuse" : "a new one");
            reused += !built;
        }
        for (int s = 0; s < PLAN_NSTAGES; s++) {
            if (plan_stage_same(&cur.stage[s], &next.stage[s])) continue;
            emu_free(&e[s]);
            e[s] = ne[s];
        }
        plan_kept_switch(&model, keep, &cur, &next);
        cur = next;
        for (int h = 3; h > 0; h--) hist[h] = hist[h - 1];
        hist[0] = cur;
        if (emu_cache_sets_kept(&cache) != model.n) fail("switch %d: %d kept sets, the model %d", round, emu_cache_sets_kept(&cache), model.n);
        for (int h = 0; h < 4; h++)
            for (int s = 0; s < PLAN_NSTAGES; s++) {
                int in = 0;
                for (int t = 0; t < PLAN_NSTAGES; t++) in |= plan_stage_same(&cur.stage[t], &hist[h].stage[s]);
                if (stage_has_comms(&cache, &hist[h].stage[s]) != (in || plan_kept_has(&model, &hist[h].stage[s])))
                    fail("switch %d: emu_cache_has and the model disagree on %s of the plan %d switch(es) back", round,
                         plan_stage_name(s), h);
                checked++;
            }
    }
    for (int s = 0; s < PLAN_NSTAGES; s++) emu_free(&e[s]);
    emu_cache_free(&cache);
    emu_cache_set_keep(&cache, 0);
    if (emu_cache_sets_kept(&cache) != 0 || reused == 0) fail("kept sets left (%d) or no switch reused one (%d)", emu_cache_sets_kept(&cache), reused);
    if (me == 0)
        printf("%s kept communicator sets: reuse without a split, the 2 released last kept (a set shared by two moved stages released with the later one), dropped on request; 60 random "
               "switches with 2 kept: %d rebuilt stages reused a set, %d layouts checked against the pricing model\n",
               fails > f0 ? "FAIL" : "ok  ", reused, checked);
}

/* A random permutation of 0..n-1 (Fisher–Yates over the RNG). */
static void permutation(int *p, int n, int round, int *k)
{
    for (int i = 0; i < n; i++) p[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = draw(round, (*k)++, i + 1);
        int t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
}

/* A random layout with tp*pp*dp ≤ maxn (uniform over all such triples). */
static GridLayout random_layout(int maxn, int round, int *k)
{
    GridLayout all[512];
    int n = 0;
    for (int tp = 1; tp <= maxn; tp++)
        for (int pp = 1; tp * pp <= maxn; pp++)
            for (int dp = 1; tp * pp * dp <= maxn && n < 512; dp++) all[n++] = (GridLayout){tp, pp, dp};
    return all[draw(round, (*k)++, n)];
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The value rank r contributes at element i: small integers, so float sums are exact. */
static float contrib(int r, size_t i) { return (float)((r + 1) * 3 + (int)(i % 17)); }

static void check_group(const Emu *e, GridGroup g, int round, int chunk)
{
    MPI_Comm c = emu_comm(e, g);
    int want[PLAN_MAX_RANKS];
    int k = e->pos >= 0 ? grid_group_ranks(e->layout, e->ranks, g, e->pos, want) : 0;
    if (k == 0) {
        if (c != MPI_COMM_NULL) fail("round %d %s: %s comm should be MPI_COMM_NULL", round, e->name, grid_group_name(g));
        nulls_checked++;
        return;
    }
    if (c == MPI_COMM_NULL) {
        fail("round %d %s: %s comm is MPI_COMM_NULL for a member", round, e->name, grid_group_name(g));
        return;
    }
    comms_checked++;
    int size = comm_size(c), rank = comm_rank(c);
    if (size != k) fail("round %d %s: %s comm has %d ranks, want %d", round, e->name, grid_group_name(g), size, k);
    if (rank != grid_group_index(e->layout, g, e->pos))
        fail("round %d %s: %s rank %d, want %d", round, e->name, grid_group_name(g), rank,
             grid_group_index(e->layout, g, e->pos));
    if (size == k) {
        MPI_Group cg, jg;
        mpiCheck(MPI_Comm_group(c, &cg));
        mpiCheck(MPI_Comm_group(e->job, &jg));
        int idx[PLAN_MAX_RANKS], got[PLAN_MAX_RANKS];
        for (int i = 0; i < k; i++) idx[i] = i;
        mpiCheck(MPI_Group_translate_ranks(cg, k, idx, jg, got));
        for (int i = 0; i < k; i++)
            if (got[i] != want[i]) {
                fail("round %d %s: %s member %d is job rank %d, want %d", round, e->name, grid_group_name(g), i,
                     got[i], want[i]);
                break;
            }
        mpiCheck(MPI_Group_free(&cg));
        mpiCheck(MPI_Group_free(&jg));
    }
    /* the exact sum over the group, through the chunked reduction */
    enum { N = 37 };
    float buf[N];
    for (size_t i = 0; i < N; i++) buf[i] = contrib(me, i);
    if (chunk > 0) comm_allreduce_sum_f32_chunk(c, buf, N, (size_t)chunk);
    else comm_allreduce_sum_f32(c, buf, N);
    reductions++;
    for (size_t i = 0; i < N; i++) {
        float s = 0;
        for (int m = 0; m < k; m++) s += contrib(want[m], i);
        if (buf[i] != s) {
            fail("round %d %s: allreduce over %s, element %zu = %g, want %g", round, e->name, grid_group_name(g), i,
                 (double)buf[i], (double)s);
            break;
        }
    }
}

/* Broadcast over the EMU from its last position; pipeline send/recv stage p -> p+1. */
static void check_p2p(const Emu *e, int round)
{
    if (e->pos < 0) return;
    /* with a wrong rank order the sends below could wait forever: skip them
     * once any member of this EMU has failed (the failure is counted) */
    int64_t f = fails;
    comm_allreduce_max_i64(e->all, &f, 1);
    if (f > 0) return;
    float v[5];
    int root = e->n - 1;
    for (int i = 0; i < 5; i++) v[i] = e->pos == root ? (float)(100 * round + i) : -1.0f;
    comm_bcast_f32(e->all, v, 5, root);
    for (int i = 0; i < 5; i++)
        if (v[i] != (float)(100 * round + i)) {
            fail("round %d %s: bcast element %d = %g", round, e->name, i, (double)v[i]);
            break;
        }
    if (e->layout.pp > 1) {
        int p = e->coord.p;
        float x = (float)e->ranks[e->pos], y = -1;
        if (p + 1 < e->layout.pp) comm_send_f32(e->pp, &x, 1, p + 1, 7);
        if (p > 0) {
            comm_recv_f32(e->pp, &y, 1, p - 1, 7);
            GridCoord q = e->coord;
            q.p = p - 1;
            if (y != (float)e->ranks[grid_pos(e->layout, q)])
                fail("round %d %s: pp recv %g from the previous stage", round, e->name, (double)y);
        }
    }
}

static void format_emu(const Emu *e, char *buf, size_t n)
{
    int o = snprintf(buf, n, "tp%d pp%d dp%d @ ", e->layout.tp, e->layout.pp, e->layout.dp);
    for (int i = 0; i < e->n && o > 0 && (size_t)o < n; i++) o += snprintf(buf + o, n - (size_t)o, "%s%d", i ? "," : "", e->ranks[i]);
}

static void sleep_check(void)
{
    /* rank 0 arrives 0.5 s late; everyone else waits in comm_barrier */
    double w0 = nr_now(), c0 = cpu_now();
    if (me == 0) {
        struct timespec ts = {0, 500000000L};
        nanosleep(&ts, NULL);
    }
    comm_barrier(MPI_COMM_WORLD);
    double wall = nr_now() - w0, cpu = cpu_now() - c0;
    double mine[2] = {wall, cpu}, all[2 * 1024];
    mpiCheck(MPI_Gather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD));

    /* for comparison only: Open MPI's own blocking barrier */
    w0 = nr_now(), c0 = cpu_now();
    if (me == 0) {
        struct timespec ts = {0, 300000000L};
        nanosleep(&ts, NULL);
    }
    mpiCheck(MPI_Barrier(MPI_COMM_WORLD));
    double bmine[2] = {nr_now() - w0, cpu_now() - c0}, ball[2 * 1024];
    mpiCheck(MPI_Gather(bmine, 2, MPI_DOUBLE, ball, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    if (me != 0) return;
    double worst = 0, bworst = 0;
    int bad = 0;
    for (int r = 1; r < world; r++) {
        double ratio = all[2 * r + 1] / all[2 * r];
        if (ratio > worst) worst = ratio;
        if (all[2 * r] < 0.4 || ratio >= 0.20) {
            bad = 1;
            fail("comm_wait: rank %d waited %.3f s wall with %.3f s CPU (%.1f%%; want < 20%%)", r, all[2 * r],
                 all[2 * r + 1], 100 * ratio);
        }
        double b = ball[2 * r + 1] / ball[2 * r];
        if (b > bworst) bworst = b;
    }
    printf("%s comm_wait sleeps: %d ranks waited ~%.2f s in comm_barrier; worst CPU/wall %.1f%% (limit 20%%); "
           "MPI_Barrier for comparison: worst %.1f%%\n",
           bad ? "FAIL" : "ok  ", world - 1, all[2], 100 * worst, 100 * bworst);
}

/* comm_push: a 4 MiB send (past any eager limit) to a rank already waiting in comm_wait completes within the
   push and arrives intact; to a rank that posts its receive only 0.3 s later the push gives up after its
   max_s, not done, and comm_wait then finishes it. Ranks 0 and 1; the others pass. */
static void push_check(void)
{
    enum { N = 1 << 20 };
    if (world < 2 || me > 1) {
        comm_barrier(MPI_COMM_WORLD);
        return;
    }
    float *buf = nr_xmalloc(N * sizeof(float));
    for (int round = 0; round < 2; round++) {
        int late = round == 1, peer = 1 - me;
        double max_s = late ? 0.05 : 5.0;
        mpiCheck(MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, 76, NULL, 0, MPI_BYTE, peer, 76, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        if (me == 0) {
            for (int i = 0; i < N; i++) buf[i] = (float)(i % 4099) + 0.25f * round;
            MPI_Request r = comm_isend_f32(MPI_COMM_WORLD, buf, N, 1, 77);
            double t0 = nr_now();
            int done = comm_push(&r, max_s);
            double took = nr_now() - t0;
            int bad = done == late || (late && took < max_s) || took > max_s + 1.0;
            if (bad)
                fail("comm_push to a %s receiver: done %d after %.3f s (max_s %.2f)", late ? "late" : "waiting", done,
                     took, max_s);
            if (!done) comm_wait(&r);
            printf("%s comm_push to a %s receiver: %s after %.3f s (max_s %.2f)\n", bad ? "FAIL" : "ok  ",
                   late ? "late" : "waiting", done ? "done" : "not done", took, max_s);
        } else {
            if (late) {
                struct timespec ts = {0, 300000000L};
                nanosleep(&ts, NULL);
            }
            memset(buf, 0, N * sizeof(float));
            MPI_Request r = comm_irecv_f32(MPI_COMM_WORLD, buf, N, 0, 77);
            comm_wait(&r);
            long bad = 0;
            for (int i = 0; i < N; i++) bad += buf[i] != (float)(i % 4099) + 0.25f * round;
            if (bad) fail("comm_push round %d: %ld of %d floats arrived wrong", round, bad, N);
        }
    }
    free(buf);
    comm_barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    mpiCheck(MPI_Init(&argc, &argv));
    mpiCheck(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    mpiCheck(MPI_Comm_size(MPI_COMM_WORLD, &world));
    int rounds = argc > 1 ? atoi(argv[1]) : 40;
    if (rounds < 1) rounds = 40;
    setvbuf(stdout, NULL, _IOLBF, 0);
    double t0 = nr_now();
    int layouts = 0, shared_rounds = 0, disjoint_rounds = 0;

    for (int round = 0; round < rounds; round++) {
        int k = 0;
        int nemu = 1 + draw(round, k++, MAX_EMUS);
        int disjoint = draw(round, k++, 2);
        int perm[PLAN_MAX_RANKS], left = world, used = 0;
        if (disjoint) permutation(perm, world, round, &k);
        Emu emus[MAX_EMUS];
        char desc[2048];
        int o = snprintf(desc, sizeof desc, "round %2d (%s):", round, disjoint ? "disjoint" : "shared");
        int built = 0;
        for (int i = 0; i < nemu; i++) {
            if (disjoint && left == 0) break;
            GridLayout l = random_layout(disjoint ? left : world, round, &k);
            int n = grid_size(l), ranks[PLAN_MAX_RANKS];
            if (disjoint) {
                memcpy(ranks, perm + used, (size_t)n * sizeof *ranks);
                used += n;
                left -= n;
            } else {
                int p[PLAN_MAX_RANKS];
                permutation(p, world, round, &k);
                memcpy(ranks, p, (size_t)n * sizeof *ranks);
            }
            char name[32];
            snprintf(name, sizeof name, "emu%d.%d", round, i);
            emu_build(&emus[built], MPI_COMM_WORLD, name, l, ranks); /* collective over the job */
            char f[512];
            format_emu(&emus[built], f, sizeof f);
            o += snprintf(desc + o, sizeof desc - (size_t)o, "%s %s", built ? " |" : "", f);
            built++;
            layouts++;
        }
        disjoint ? disjoint_rounds++ : shared_rounds++;
        for (int i = 0; i < built; i++) {
            const Emu *e = &emus[i];
            int pos = grid_find(e->ranks, e->n, me);
            if (pos != e->pos) fail("round %d %s: pos %d, want %d", round, e->name, e->pos, pos);
            if (pos >= 0) {
                GridCoord c = grid_coord(e->layout, pos);
                if (c.t != e->coord.t || c.d != e->coord.d || c.p != e->coord.p)
                    fail("round %d %s: coordinate mismatch", round, e->name);
            }
            for (GridGroup g = GRID_TP; g < GRID_NGROUPS; g++)
                check_group(e, g, round, (i + (int)g) % 4 == 3 ? 0 : 1 + draw(round, 1000 + 10 * i + (int)g, 16));
            check_p2p(e, round);
        }
        for (int i = 0; i < built; i++) {
            emu_free(&emus[i]);
            emu_free(&emus[i]); /* twice is harmless */
            for (GridGroup g = GRID_TP; g < GRID_NGROUPS; g++)
                if (emu_comm(&emus[i], g) != MPI_COMM_NULL) fail("round %d: emu_free left a %s comm", round, grid_group_name(g));
        }
        if (me == 0) printf("     %s\n", desc);
    }

    shared_check();
    prepared_check();
    kept_check();

    /* zero-length and default-chunk reductions, and i64 counts */
    float none[1] = {42.0f};
    comm_allreduce_sum_f32(MPI_COMM_WORLD, none, 0);
    if (none[0] != 42.0f) fail("a zero-length allreduce touched the buffer");

    sleep_check();
    push_check();

    int64_t tot[4] = {fails, comms_checked, nulls_checked, reductions};
    comm_allreduce_sum_i64(MPI_COMM_WORLD, tot, 4);
    int64_t anyfail = fails;
    comm_allreduce_max_i64(MPI_COMM_WORLD, &anyfail, 1);
    if (me == 0) {
        printf("%s %d rounds (%d shared, %d disjoint), %d EMU layouts on %d ranks: %lld communicators matched the grid "
               "math, %lld MPI_COMM_NULL where not a member, %lld exact allreduces\n",
               tot[0] ? "FAIL" : "ok  ", rounds, shared_rounds, disjoint_rounds, layouts, world, (long long)tot[1],
               (long long)tot[2], (long long)tot[3]);
        printf("%s: test_emu_comms, %lld failures over all ranks (%.1f s)\n", tot[0] ? "FAIL" : "PASS",
               (long long)tot[0], nr_now() - t0);
    }
    mpiCheck(MPI_Finalize());
    return me == 0 && (tot[0] || anyfail) ? 1 : 0;
}
