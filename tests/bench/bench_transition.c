/* bench_transition.c — the transition engine on 8 ranks with a model large
 * enough that bandwidth dominates (an actor with AdamW state, tens of MiB
 * per rank), for several transitions, against baselines measured in the
 * same run:
 *   bound     max over ranks of max(bytes in, bytes out) / the point-to-point
 *             bandwidth, measured here with every rank sending 64 MiB to the
 *             next while receiving from the previous (all ranks at once, as a
 *             transition runs; median of 5, polled with sched_yield as the
 *             engine waits);
 *   gather    the same transition through one rank: old layout → the whole
 *             model on rank 0 → new layout, by the same engine (so only the
 *             routing differs);
 *   ckpt      writing a checkpoint under the old layout and reading it under
 *             the new one (ckpt_write / ckpt_read, parallel HDF5).
 * MODELLED beside each case (the engine's prediction on 8 GPUs joined by NVLink, not a measurement): the
 * engine's route against gather-and-scatter's where every rank has its own link.
 * Then forwarding: a scale-out dp1 @ 0 -> dp8, with forwarding (the engine's
 * default) and without (TxOptions.no_relay: all seven copies from rank 0),
 * alternating; BENCH_TX_CASES=f runs only it. Then the message order: tp8 <-> pp8 with the chunks
 * posted round by round (the engine's order) against each rank's streams one after another (its order
 * until 2026-12-04), alternating; BENCH_TX_CASES=o runs only it.
 * Times are medians of 3, max over ranks, each after a barrier.
 *   bench_transition OUT DIR     (OUT: bench.txt to append to; DIR: scratch)
 * BENCH_TX_PINGPONG=K: for each case only K warm transitions there and back, each timed (for profiles).
 * For experiments: BENCH_TX_PHASES=1 prints each engine run's phases (parts,
 * communicators, execute: allocation, hooks, local copies), BENCH_TX_ONLY=1
 * skips the two baselines, BENCH_TX_CHUNK_KIB / BENCH_TX_WINDOW_KIB set the
 * engine's chunk and window (default: the deck defaults, 1 MiB and 8 MiB), BENCH_TX_CASES=02 runs only
 * the cases whose digits it lists, BENCH_TX_PRETOUCH=1 also times each engine transition with the new
 * shards built and written before the clock starts (what the first-touch page faults cost), and
 * BENCH_TX_FRESH_STATE=1 leaves the old shards' gradients and AdamW moments as allocated (zero pages never
 * written, which every method then reads through page faults: how this bench ran until 2026-12-03; by
 * default they are written, as after a training step).
 *
 * Warm and cold (since 2026-12-03). The CPU backend keeps freed pages for reuse (memory.c's pool), so in a
 * running job a transition's new shards take the pages of what earlier ones freed; the engine column is
 * such a warm transition (the pool holds the previous repetition's shards, as after an earlier
 * transition). The first transition of a process finds the pool empty and faults every new page in: the
 * cold column, each run after be->trim(). The baselines run warm, like the engine column. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "bench_args.h"
#include "nereus/backend.h"
#include "nereus/ckpt.h"
#include "nereus/comm.h"
#include "nereus/emu.h"
#include "nereus/tx_exec.h"
#include "nereus/txprice.h"
#include "nereus/util.h"

#define NR 8
#define REPS 3

static int rank, size;
static const Backend *be;
static GPTConfig cfg = {.V = 8192, .maxT = 16, .L = 8, .C = 512, .NH = 8, .value_head = 0};

typedef struct Side {
    PlanStage s;
    Emu e;
    GPT m;
    int built;
} Side;

static void side_build(Side *x, const PlanStage *s, int fill) {
    x->s = *s;
    int r[NR];
    for (int i = 0; i < s->nranks; i++) r[i] = s->ranks[i];
    emu_build(&x->e, MPI_COMM_WORLD, "bench", (GridLayout){s->tp, s->pp, s->dp}, r);
    x->built = 1;
    memset(&x->m, 0, sizeof x->m);
    if (fill && x->e.pos >= 0) {
        GPTShard sh;
        emu_gpt_shard(&x->e, &sh);
        gpt_build_shard(&x->m, &cfg, &sh, be, 1, 8, 1, 7, 0.02f);
        if (!getenv("BENCH_TX_FRESH_STATE")) /* gradients and AdamW moments written, as after a training step */
            for (size_t i = 0; i < x->m.nparams; i++)
                x->m.grads[i] = 1e-4f * x->m.params[i], x->m.m[i] = 1e-3f * x->m.params[i], x->m.v[i] = 1e-6f;
    }
}

/* what the training step after a transition does to the new shard's memory: it writes the gradients (a
   transition leaves them unwritten: gpt_build_shard_dest), so what a later transition frees is all
   written memory, as in a run */
static void side_train(Side *x) {
    if (x->built && x->e.pos >= 0 && x->m.grads) memset(x->m.grads, 0, x->m.nparams * sizeof(float));
}

static void side_free(Side *x) {
    gpt_free(&x->m);
    if (x->built) emu_free(&x->e);
    x->built = 0;
}

typedef struct Ctx { Side *from, *to; TxEndpoint *ep; } Ctx;
static double t_alloc;
static int pretouched; /* the new shard was built and written before the timed region (BENCH_TX_PRETOUCH) */
static void h_alloc(void *c, int k) {
    Ctx *x = c;
    if (pretouched) {
        x->ep[k].to = &x->to->m;
        return;
    }
    double t0 = nr_now();
    GPTShard sh;
    emu_gpt_shard(&x->to->e, &sh);
    gpt_build_shard_dest(&x->to->m, &cfg, &sh, be, 1, 8, 1, 3); /* as the job builds a destination */
    x->ep[k].to = &x->to->m;
    t_alloc += nr_now() - t0;
}
static void h_release(void *c, int k) {
    Ctx *x = c;
    gpt_free(&x->from->m);
    x->ep[k].from = NULL;
}

static int no_relay; /* the forwarding section's baseline: every block from an old holder */
static int stream_order; /* the message-order section's baseline: each rank's streams one after another */
static int no_staging;   /* the staging baseline: old and new state held whole (TxOptions.no_staging) */
static double last_peak; /* the last engine transition's peak bytes live on a rank (TxStats.mem_peak), max over ranks */

/* the engine's defaults ([transition] chunk_kib, window_kib); BENCH_TX_CHUNK_KIB / _WINDOW_KIB override */
static TxOptions opts(void) {
    TxOptions o = {0, 1u << 20, 8u << 20, 10e9, 5e-6, 200e-6, NULL, 0, 0, 0, no_relay, 0, 0, stream_order, no_staging};
    if (getenv("BENCH_TX_CHUNK_KIB")) o.chunk = (size_t)atol(getenv("BENCH_TX_CHUNK_KIB")) * 1024;
    if (getenv("BENCH_TX_WINDOW_KIB")) o.window = (size_t)atol(getenv("BENCH_TX_WINDOW_KIB")) * 1024;
    if (getenv("BENCH_TX_STAGE")) o.stage_all = 1; /* pack every chunk, as on a device backend */
    return o;
}

/* one engine transition a → b (a's model moved into b's); returns the time (max over ranks). pretouch:
   b's communicators and shard are built, and the shard's params, m and v written once, before the timed
   region (a diagnostic: the engine without the first-touch page faults of the new shard) */
/* the bench's change: the actor with AdamW state from one layout to another */
static TxChange move_change(const PlanStage *from, const PlanStage *to) {
    TxChange ch;
    memset(&ch, 0, sizeof ch);
    ch.id = PLAN_ACTOR_TRAIN;
    ch.tie = 2;
    ch.kind = TX_MOVE;
    ch.cfg = cfg;
    ch.from = *from;
    ch.to = *to;
    ch.nbufs = 3;
    ch.trainable = 1;
    ch.bmax_from = ch.bmax_to = 1;
    ch.tmax = 8;
    return ch;
}

/* MODELLED, not measured: the engine's predicted seconds of from → to on a node of 8 GPUs joined by
   NVLink (450 GB/s per GPU each way, 3 us a message), as the planner prices a transition; relay 0: no
   forwarding. What the routes cost where every rank has its own link, which this machine's shared cores
   cannot show */
/* the engine's prediction of from -> to over links of bw bytes/s per rank (latency lat), local copies at
   copy bytes/s per rank (0: free) */
static double predicted_s(const PlanStage *from, const PlanStage *to, int relay, double bw, double lat, double copy) {
    TxChange ch = move_change(from, to);
    TxOptions o = opts();
    o.bandwidth = bw, o.latency = lat, o.no_relay = !relay, o.copy_rate = copy;
    o.half_duplex = copy > 0 && NR > sysconf(_SC_NPROCESSORS_ONLN); /* measured rates on shared cores, as a job */
    return tx_predicted_s(&ch, 1, NR, &o);
}
/* MODELLED: 8 GPUs on NVLink */
static double modelled_s(const PlanStage *from, const PlanStage *to, int relay) {
    return predicted_s(from, to, relay, 450e9, 3e-6, 0);
}

/* b's communicators and an empty shard of its layout (every buffer zero), where b holds one */
static void side_build_dest(Side *b) {
    side_build(b, &b->s, 0);
    if (b->e.pos >= 0) {
        GPTShard sh;
        emu_gpt_shard(&b->e, &sh);
        gpt_build_shard_empty(&b->m, &cfg, &sh, be, 1, 8, 1);
    }
}

static double engine_move_opt(Side *a, Side *b, double *bytes, double *maxrank, int pretouch) {
    TxChange ch = move_change(&a->s, &b->s);
    TxOptions o = opts();
    TxPlan P;
    char why[512];
    double info[2] = {0, 0};
    if (rank == 0) {
        if (tx_plan_build(&P, &ch, 1, size, &o, why, sizeof why)) nr_fatal("bench: %s", why);
        info[0] = (double)P.bytes_moved;
        for (int r = 0; r < size; r++) {
            double m = (double)(P.rank_in[r] > P.rank_out[r] ? P.rank_in[r] : P.rank_out[r]);
            if (m > info[1]) info[1] = m;
        }
    }
    comm_bcast(MPI_COMM_WORLD, info, sizeof info, 0);
    *bytes = info[0];
    *maxrank = info[1];
    pretouched = pretouch;
    if (pretouch) {
        side_build_dest(b);
        if (b->e.pos >= 0) {
            memset(b->m.params, 0, b->m.nparams * sizeof(float));
            memset(b->m.m, 0, b->m.nparams * sizeof(float));
            memset(b->m.v, 0, b->m.nparams * sizeof(float));
        }
    }
    comm_barrier(MPI_COMM_WORLD);
    double t0 = nr_now();
    TxPart part;
    tx_part_scatter(rank == 0 ? &P : NULL, MPI_COMM_WORLD, &part);
    if (rank == 0) tx_plan_free(&P);
    double t1 = nr_now();
    if (!pretouch) side_build(b, &b->s, 0); /* communicators first */
    double t2 = nr_now();
    TxEndpoint ep = {a->e.pos >= 0 ? &a->m : NULL, NULL};
    Ctx cx = {a, b, &ep};
    TxHooks hk = {&cx, h_alloc, h_release};
    TxStats st;
    tx_execute(&part, &ep, &hk, be, MPI_COMM_WORLD, &st);
    tx_part_free(&part);
    double ph[8] = {t1 - t0, t2 - t1, st.seconds, nr_now() - t0, t_alloc, st.copy_seconds, st.hook_seconds,
                    (double)st.mem_peak};
    double cpu = st.cpu_seconds;
    t_alloc = 0;
    comm_allreduce_max_f64(MPI_COMM_WORLD, ph, 8);
    last_peak = ph[7];
    MPI_Allreduce(MPI_IN_PLACE, &cpu, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (getenv("BENCH_TX_PHASES") && rank == 0)
        printf("  phases: parts %.3f s, communicators %.3f s, execute %.3f s (allocation %.3f s, hooks %.3f s, local copies %.3f s; CPU of all ranks %.3f s), total %.3f s\n", ph[0], ph[1], ph[2], ph[4], ph[6], ph[5], cpu, ph[3]);
    return ph[3];
}

static double engine_move(Side *a, Side *b, double *bytes, double *maxrank) {
    return engine_move_opt(a, b, bytes, maxrank, 0);
}

/* The raw-MPI floor of a → b (tx_replay): b's communicators and shard built, then the part's messages posted
   at once into it (timing only: a's model is read, b's overwritten); the slowest rank's time */
static double replay_move(Side *a, Side *b) {
    TxChange ch = move_change(&a->s, &b->s);
    TxOptions o = opts();
    TxPlan P;
    char why[512];
    if (rank == 0 && tx_plan_build(&P, &ch, 1, size, &o, why, sizeof why)) nr_fatal("bench: %s", why);
    TxPart part;
    tx_part_scatter(rank == 0 ? &P : NULL, MPI_COMM_WORLD, &part);
    if (rank == 0) tx_plan_free(&P);
    side_build_dest(b);
    TxEndpoint ep = {a->e.pos >= 0 ? &a->m : NULL, b->e.pos >= 0 ? &b->m : NULL};
    double t = tx_replay(&part, &ep, be, MPI_COMM_WORLD);
    comm_allreduce_max_f64(MPI_COMM_WORLD, &t, 1);
    tx_part_free(&part);
    return t;
}

static void mkstage(PlanStage *s, int tp, int pp, int dp, const int *ranks) {
    memset(s, 0, sizeof *s);
    s->src = PLAN_SRC_DECK;
    s->tp = tp, s->pp = pp, s->dp = dp, s->nranks = tp * pp * dp;
    for (int i = 0; i < s->nranks; i++) s->ranks[i] = (int16_t)ranks[i];
}

/* gather-and-scatter: b's model (consumed; b's communicators stay) to the whole model on rank 0, then to
   layout A in *a2, by the engine (so only the routing differs from a direct transition); relay: the
   scatter may forward (TxOptions.no_relay otherwise: every byte of it sent by rank 0). The time of both;
   *moved: the bytes both moved between ranks */
static double gather_scatter(Side *b, const PlanStage *A, int relay, Side *a2, double *moved) {
    static const int r0[1] = {0};
    Side w;
    double b1, m1, b2, m2;
    memset(&w, 0, sizeof w);
    mkstage(&w.s, 1, 1, 1, r0);
    memset(a2, 0, sizeof *a2);
    a2->s = *A;
    double t = engine_move(b, &w, &b1, &m1);
    no_relay = !relay;
    t += engine_move(&w, a2, &b2, &m2);
    no_relay = 0;
    *moved = b1 + b2;
    side_free(&w);
    return t;
}

/* the median of the REPS repetitions (t is sorted in place) */
static double median3(double *t) { return nr_median(t, REPS); }

/* point-to-point bandwidth per rank, every rank at once (tx_probe: 64 MiB to the next while 64 MiB come from
   the previous, streamed in the engine's chunks and window and waited as the engine waits; median of 5), and the local copy rate the same way. Measured
   again before every case, since this machine's speed drifts over a run (0.4-1.2 GB/s within one bench) */
static TxProbe probe(void) {
    TxProbe p;
    TxOptions o = opts();
    tx_probe(MPI_COMM_WORLD, (size_t)64 << 20, o.chunk, o.window, 5, &p);
    return p;
}

static const char usage[] =
    "usage: jobs/local.sh -np 8 build/bench/bench_transition OUT DIR\n"
    "  the transition engine against its bound, gather and a checkpoint in DIR; appends metric: value\n"
    "  lines to OUT. Exit: 0, 2 bad command line.\n";

int main(int argc, char **argv) {
    int arc = bench_args(argc, argv, usage, 0);
    if (arc >= 0) return arc;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != NR || argc < 3) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -np %d bench_transition OUT DIR\n", NR);
        MPI_Finalize();
        return 2;
    }
    be = backend_cpu();
    double bw = probe().link;
    const int all[NR] = {0, 1, 2, 3, 4, 5, 6, 7}, hi[4] = {4, 5, 6, 7}, shuf[NR] = {3, 6, 0, 5, 2, 7, 4, 1};
    struct { const char *name; int a[3], b[3]; const int *ra, *rb; } cases[] = {
        {"tp2pp2dp2->tp4dp2", {2, 2, 2}, {4, 1, 2}, all, all},
        {"dp4@0-3->dp4@4-7", {1, 1, 4}, {1, 1, 4}, all, hi},
        {"tp4pp2->tp2pp2dp2(shuffled)", {4, 2, 1}, {2, 2, 2}, all, shuf},
        {"tp2dp2@0-3->tp2dp4", {2, 1, 2}, {2, 1, 4}, all, all},
        {"tp8->pp8", {8, 1, 1}, {1, 8, 1}, all, all},
    };
    int ncase = (int)(sizeof cases / sizeof cases[0]);
    FILE *f = rank == 0 ? fopen(argv[1], "a") : NULL;
    if (rank == 0) {
        size_t pbytes = gpt_logical_numel(&cfg) * sizeof(float) * 3;
        printf("\n== transitions on %d ranks: GPT L%d C%d V%d with AdamW state (%.0f MiB); p2p: GB/s per rank, all ranks "
               "at once, measured before each case (%.2f at the start)\n", NR, cfg.L, cfg.C, cfg.V, pbytes / 1048576.0,
               bw / 1e9);
        printf("%-28s %9s %9s %5s %8s %8s %7s %8s %8s %8s %8s %8s %7s %7s %7s\n", "transition", "moved MiB", "min MiB",
               "p2p", "engine s", "bound s", "eng/bnd", "cold s", "cold/bnd", "gather s", "g+fwd s", "ckpt s", "vs gath",
               "vs g+fw", "vs ckpt");
        if (f) fprintf(f, "tx.p2p_gb_s: %.4g\n", bw / 1e9);
    }
    double worst_bound = 0, worst_cold = 0, worst_gather = 1e30, worst_gather_fwd = 1e30, worst_ckpt = 1e30;
    double worst_model = 1e30; /* rank 0: the modelled node's gather / engine */
    double worst_gbytes = 1e30; /* rank 0: gather-and-scatter's bytes / the engine's */
    double worst_raw = 0; /* rank 0: the engine / raw MPI with the same messages */
    double worst_peak = 0; /* rank 0: the peak staged / held whole */
    double pred_lo = 1e30, pred_hi = 0; /* rank 0: warm engine / its prediction, over the cases */
    int nrun = 0;
    for (int c = 0; c < ncase; c++) {
        if (getenv("BENCH_TX_CASES") && !strchr(getenv("BENCH_TX_CASES"), '0' + c)) continue;
        PlanStage A, B;
        mkstage(&A, cases[c].a[0], cases[c].a[1], cases[c].a[2], cases[c].ra);
        mkstage(&B, cases[c].b[0], cases[c].b[1], cases[c].b[2], cases[c].rb);
        double te[REPS], tr[REPS], tw[REPS], pk[REPS], pkw[REPS], tcold[REPS], tg[REPS], tgf[REPS], tc[REPS], tp[REPS], bytes = 0, maxrank = 0, bmin = 0;
        double gbytes = 0; /* the bytes gather-and-scatter moves between ranks */
        TxProbe pc = probe();
        double bwc = pc.link;
        if (getenv("BENCH_TX_PINGPONG")) { /* the diagnostic: K warm transitions back and forth, nothing else */
            int K = atoi(getenv("BENCH_TX_PINGPONG"));
            Side x, y;
            side_build(&x, &A, 1);
            for (int k = 0; k < K; k++) {
                memset(&y, 0, sizeof y);
                y.s = k % 2 ? A : B;
                double t = engine_move(&x, &y, &bytes, &maxrank);
                side_train(&y);
                side_free(&x);
                x = y;
                if (rank == 0) printf("  pingpong %d %s: %.3f s, %.2f x the bound\n", k, k % 2 ? "back" : "there", t, t / (maxrank / bwc));
            }
            side_free(&x);
            continue;
        }
        int pre = getenv("BENCH_TX_PRETOUCH") != NULL;
        for (int k = 0; pre && k < REPS; k++) { /* the diagnostic: new shards written before the clock starts */
            Side a, b;
            memset(&b, 0, sizeof b);
            side_build(&a, &A, 1);
            b.s = B;
            tp[k] = engine_move_opt(&a, &b, &bytes, &maxrank, 1);
            side_free(&a);
            side_free(&b);
        }
        pretouched = 0;
        for (int k = 0; k < REPS; k++) { /* cold: the pool given back first, every new page fresh */
            Side a, b;
            memset(&b, 0, sizeof b);
            side_build(&a, &A, 1);
            b.s = B;
            be->trim();
            tcold[k] = engine_move(&a, &b, &bytes, &maxrank);
            side_train(&b);
            side_free(&a);
            side_free(&b);
        }
        for (int k = 0; k < REPS; k++) { /* warm: the pool holds the previous repetition's shards */
            { /* the staging baseline, first, while nothing else is live: old and new state held whole */
                Side a3, b3;
                memset(&b3, 0, sizeof b3);
                side_build(&a3, &A, 1);
                b3.s = B;
                no_staging = 1;
                tw[k] = engine_move(&a3, &b3, &bytes, &maxrank);
                no_staging = 0;
                pkw[k] = last_peak;
                side_free(&a3);
                side_free(&b3);
            }
            Side a, b;
            memset(&b, 0, sizeof b);
            side_build(&a, &A, 1);
            /* MPI alone with the same messages, just before the engine moves the same model (what the layout
               costs on this machine, at the same moment) */
            b.s = B;
            tr[k] = replay_move(&a, &b);
            side_free(&b);
            memset(&b, 0, sizeof b);
            b.s = B;
            te[k] = engine_move(&a, &b, &bytes, &maxrank);
            pk[k] = last_peak;
            side_train(&b);
            bmin = bytes;
            if (getenv("BENCH_TX_ONLY")) { side_free(&a); side_free(&b); tg[k] = tgf[k] = tc[k] = 1; continue; }
            /* gather-and-scatter through rank 0: a scatter that sends every new shard from rank 0, then one
               with forwarding (a pipelined chain for replicated data, as MPI_Bcast pipelines), from a
               freshly built b' */
            Side a2, b2;
            tg[k] = gather_scatter(&b, &A, 0, &a2, &gbytes);
            side_train(&a2);
            side_free(&a2);
            side_build(&b2, &B, 1);
            tgf[k] = gather_scatter(&b2, &A, 1, &a2, &gbytes);
            side_free(&b2);
            side_free(&a);
            side_free(&b);
            /* checkpoint under a2's layout (= A), restart under B */
            char path[1024];
            snprintf(path, sizeof path, "%s/bench_tx_%d.h5", argv[2], c);
            Side nb2;
            memset(&nb2, 0, sizeof nb2);
            comm_barrier(MPI_COMM_WORLD);
            double t0 = nr_now();
            CkptModel cm = {"actor", &cfg, a2.e.pos >= 0 ? &a2.m : NULL, a2.e.pos >= 0 && a2.e.coord.d == 0, 1};
            CkptMeta meta = {0, 0, 7, "", "", 0, NULL, 0, NULL};
            char why[512];
            if (ckpt_write(path, MPI_COMM_WORLD, &meta, &cm, 1, why, sizeof why)) nr_fatal("bench: %s", why);
            nb2.s = B;
            side_build_dest(&nb2);
            CkptModel cr = {"actor", &cfg, nb2.e.pos >= 0 ? &nb2.m : NULL, nb2.e.pos >= 0 && nb2.e.coord.d == 0, 1};
            CkptMeta m2r;
            memset(&m2r, 0, sizeof m2r);
            if (ckpt_read(path, MPI_COMM_WORLD, &m2r, &cr, 1, why, sizeof why)) nr_fatal("bench: %s", why);
            ckpt_meta_free(&m2r);
            double t = nr_now() - t0;
            comm_allreduce_max_f64(MPI_COMM_WORLD, &t, 1);
            tc[k] = t;
            if (rank == 0) unlink(path);
            side_free(&a2);
            side_free(&nb2);
        }
        double raw = median3(tr); /* the replay's median (tx_replay) */
        double whole = median3(tw), peak = median3(pk), peakw = median3(pkw); /* staging: off vs on */
        double e = median3(te), ec = median3(tcold), g = median3(tg), gf = median3(tgf), k = median3(tc);
        double bound = maxrank / bwc;
        if (rank == 0 && pre) {
            double t = median3(tp);
            printf("  %s with the new shards written before the clock (no first-touch faults; communicators "
                   "not timed): %.3f s = %.2fx the bound\n", cases[c].name, t, t / bound);
            if (f) fprintf(f, "tx.%d.engine_pretouched_s: %.4g\ntx.%d.pretouched_over_bound: %.3f\n", c, t, c, t / bound);
        }
        if (rank == 0) {
            printf("%-28s %9.1f %9.1f %5.2f %8.3f %8.3f %7.2f %8.3f %8.2f %8.3f %8.3f %8.3f %6.1fx %6.1fx %6.1fx\n",
                   cases[c].name, bytes / 1048576.0, bmin / 1048576.0, bwc / 1e9, e, bound, e / bound, ec, ec / bound,
                   g, gf, k, g / e, gf / e, k / e);
            if (f)
                fprintf(f, "tx.%d.name: %s\ntx.%d.bytes: %.0f\ntx.%d.p2p_gb_s: %.4g\ntx.%d.engine_s: %.4g\ntx.%d.bound_s: %.4g\n"
                        "tx.%d.over_bound: %.3f\ntx.%d.cold_s: %.4g\ntx.%d.cold_over_bound: %.3f\ntx.%d.gather_s: %.4g\n"
                        "tx.%d.gather_fwd_s: %.4g\ntx.%d.ckpt_s: %.4g\ntx.%d.speedup_vs_gather: %.3f\n"
                        "tx.%d.speedup_vs_gather_fwd: %.3f\ntx.%d.speedup_vs_ckpt: %.3f\n",
                        c, cases[c].name, c, bytes, c, bwc / 1e9, c, e, c, bound, c, e / bound, c, ec, c, ec / bound, c, g,
                        c, gf, c, k, c, g / e, c, gf / e, c, k / e);
            printf("  raw MPI, the same messages posted at once (same chunks and datatypes; no window) and the local "
                   "copies: %.3f s = %.2fx the bound; engine / raw %.2f\n", raw, raw / bound, e / raw);
            if (f) fprintf(f, "tx.%d.raw_mpi_s: %.4g\ntx.%d.raw_over_bound: %.3f\ntx.%d.engine_over_raw: %.3f\n", c, raw, c,
                           raw / bound, c, e / raw);
            worst_raw = e / raw > worst_raw ? e / raw : worst_raw;
            printf("  memory: the busiest rank's peak %.1f MiB staged buffer by buffer, %.1f MiB holding old and new "
                   "state whole (%.2fx); time %.3f against %.3f s\n", peak / 1048576.0, peakw / 1048576.0, peak / peakw,
                   e, whole);
            if (f) fprintf(f, "tx.%d.peak_mib: %.1f\ntx.%d.peak_whole_mib: %.1f\ntx.%d.peak_over_whole: %.3f\n"
                           "tx.%d.whole_s: %.4g\n", c, peak / 1048576.0, c, peakw / 1048576.0, c, peak / peakw, c, whole);
            worst_peak = peak / peakw > worst_peak ? peak / peakw : worst_peak;
            /* the same two routes on a modelled node (the measured gather runs b -> rank 0 -> a's layout) */
            PlanStage W0;
            const int r0[1] = {0};
            mkstage(&W0, 1, 1, 1, r0);
            double me = modelled_s(&A, &B, 1), mg = modelled_s(&B, &W0, 0) + modelled_s(&W0, &A, 0);
            /* the engine's own estimate with this case's measured rates (what a live job's planner prices with) */
            double pr = predicted_s(&A, &B, 1, pc.link, 5e-6, pc.copy);
            printf("  predicted by the engine with the rates measured here (links %.2f GB/s, local copies %.2f GB/s per "
                   "rank): %.3f s; warm engine / predicted %.2f, cold %.2f\n", pc.link / 1e9, pc.copy / 1e9, pr, e / pr,
                   ec / pr);
            if (f) fprintf(f, "tx.%d.predicted_s: %.4g\ntx.%d.engine_over_predicted: %.3f\n", c, pr, c, e / pr);
            pred_lo = e / pr < pred_lo ? e / pr : pred_lo;
            pred_hi = e / pr > pred_hi ? e / pr : pred_hi;
            printf("  MODELLED 8 GPUs on NVLink (450 GB/s each, the engine's prediction): engine %.4f s, "
                   "gather-and-scatter %.4f s: %.1fx\n", me, mg, mg / me);
            if (f) fprintf(f, "tx.%d.modelled_engine_s: %.4g\ntx.%d.modelled_gather_s: %.4g\n", c, me, c, mg);
            worst_model = mg / me < worst_model ? mg / me : worst_model;
            /* gather-and-scatter is slow on a network because one rank's link carries every byte; here every
               rank's copies share the same two cores, so what the routes move in all, wherever it goes, weighs
               about as much as the busiest rank (case 1: the same bytes, the same time) */
            if (gbytes > 0) {
                printf("  bytes moved in all (what the shared cores copy, whichever rank sends them): gather-and-scatter "
                       "%.1f MiB, the engine %.1f MiB (%.2fx); measured gather / engine %.2fx\n", gbytes / 1048576.0,
                       bytes / 1048576.0, gbytes / bytes, g / e);
                if (f) fprintf(f, "tx.%d.gather_bytes_over_engine: %.3f\n", c, gbytes / bytes);
                worst_gbytes = gbytes / bytes < worst_gbytes ? gbytes / bytes : worst_gbytes;
            }
        }
        nrun++;
        worst_bound = e / bound > worst_bound ? e / bound : worst_bound;
        worst_cold = ec / bound > worst_cold ? ec / bound : worst_cold;
        worst_gather = g / e < worst_gather ? g / e : worst_gather;
        worst_gather_fwd = gf / e < worst_gather_fwd ? gf / e : worst_gather_fwd;
        worst_ckpt = k / e < worst_ckpt ? k / e : worst_ckpt;
    }
    if (rank == 0 && nrun) {
        printf("worst: engine %.2fx the bound (goal <= 1.5; cold %.2fx), %.1fx faster than gather-and-scatter (goal >= 3; "
               "%.1fx against gather with a forwarding scatter), %.1fx faster than checkpoint-and-restart (goal >= 10)\n",
               worst_bound, worst_cold, worst_gather, worst_gather_fwd, worst_ckpt);
        printf("  (MODELLED on 8 NVLink GPUs, not measured: the engine at least %.1fx faster than gather-and-scatter)\n",
               worst_model);
        if (f) fprintf(f, "tx.worst_modelled_speedup_vs_gather: %.3f\n", worst_model);
        if (worst_gbytes < 1e30) {
            printf("  (gather-and-scatter moves as little as %.2fx the engine's bytes in all: on 2 cores that every "
                   "rank shares, not far from the time it takes)\n", worst_gbytes);
            if (f) fprintf(f, "tx.worst_gather_bytes_over_engine: %.3f\n", worst_gbytes);
        }
        printf("  raw MPI with the same messages: the engine at most %.2fx its time\n", worst_raw);
        if (f) fprintf(f, "tx.worst_engine_over_raw: %.3f\n", worst_raw);
        printf("  memory: staged buffer by buffer, the busiest rank's peak is at most %.2fx what holding old and new "
               "state whole takes\n", worst_peak);
        if (f) fprintf(f, "tx.worst_peak_over_whole: %.3f\n", worst_peak);
        printf("  the engine's prediction with the measured rates: warm transitions took %.2f-%.2fx it\n", pred_lo,
               pred_hi);
        if (f) fprintf(f, "tx.engine_over_predicted_min: %.3f\ntx.engine_over_predicted_max: %.3f\n", pred_lo, pred_hi);
        if (f)
            fprintf(f, "tx.worst_over_bound: %.3f\ntx.worst_cold_over_bound: %.3f\ntx.worst_speedup_vs_gather: %.3f\n"
                    "tx.worst_speedup_vs_gather_fwd: %.3f\ntx.worst_speedup_vs_ckpt: %.3f\n", worst_bound, worst_cold,
                    worst_gather, worst_gather_fwd, worst_ckpt);
    }
    /* forwarding: one holder, seven new replicas (a scale-out), with forwarding (the default) and without
       (every replica from the holder), alternating, medians of 3; the bound of each is its own plan's busiest
       rank over the bandwidth */
    if (!getenv("BENCH_TX_CASES") || strchr(getenv("BENCH_TX_CASES"), 'f')) {
        const int one[1] = {0};
        PlanStage A, B;
        mkstage(&A, 1, 1, 1, one);
        mkstage(&B, 1, 1, NR, all);
        double t[2][REPS], mr[2] = {0, 0}, bytes = 0;
        bw = probe().link;
        for (int k = 0; k < REPS; k++)
            for (int v = 0; v < 2; v++) {
                Side a, b;
                memset(&b, 0, sizeof b);
                side_build(&a, &A, 1);
                b.s = B;
                no_relay = v;
                t[v][k] = engine_move(&a, &b, &bytes, &mr[v]);
                side_train(&b);
                side_free(&a);
                side_free(&b);
            }
        no_relay = 0;
        double fw = median3(t[0]), nf = median3(t[1]);
        if (rank == 0) {
            printf("forwarding, dp1@0->dp8 (%.1f MiB to each of 7 new replicas): with forwarding %.3f s (busiest rank "
                   "%.1f MiB, %.2fx its bound), without %.3f s (busiest rank %.1f MiB, %.2fx its bound): %.2fx %s\n",
                   bytes / 7 / 1048576.0, fw, mr[0] / 1048576.0, fw / (mr[0] / bw), nf, mr[1] / 1048576.0,
                   nf / (mr[1] / bw), nf >= fw ? nf / fw : fw / nf, nf >= fw ? "faster" : "SLOWER with forwarding");
            if (f)
                fprintf(f, "tx.fwd.engine_s: %.4g\ntx.fwd.no_forward_s: %.4g\ntx.fwd.speedup: %.3f\n"
                        "tx.fwd.busiest_mib: %.1f\ntx.fwd.no_forward_busiest_mib: %.1f\n",
                        fw, nf, nf / fw, mr[0] / 1048576.0, mr[1] / 1048576.0);
        }
    }
    /* message order: tp8 <-> pp8 (every rank sends to and receives from all the others) with the chunks
       posted round by round (the engine's order) and with each rank's streams one after another (its order
       until 2026-12-04), alternating, there and back, medians of 5 */
    if (!getenv("BENCH_TX_CASES") || strchr(getenv("BENCH_TX_CASES"), 'o')) {
        enum { N = 5 };
        PlanStage A, B;
        mkstage(&A, NR, 1, 1, all);
        mkstage(&B, 1, NR, 1, all);
        double t[2][2][N], bytes = 0, mr = 0; /* [order][direction][repetition] */
        Side x, y;
        side_build(&x, &A, 1);
        for (int k = 0; k < N; k++)
            for (int v = 0; v < 2; v++)
                for (int d = 0; d < 2; d++) {
                    memset(&y, 0, sizeof y);
                    y.s = d ? A : B;
                    stream_order = v;
                    t[v][d][k] = engine_move(&x, &y, &bytes, &mr);
                    side_train(&y);
                    side_free(&x);
                    x = y;
                }
        stream_order = 0;
        side_free(&x);
        double m[2][2];
        for (int v = 0; v < 2; v++)
            for (int d = 0; d < 2; d++) m[v][d] = nr_median(t[v][d], N);
        if (rank == 0) {
            printf("message order, tp8 <-> pp8 (every rank to every rank, %.1f MiB each way): round by round %.3f / "
                   "%.3f s, stream after stream %.3f / %.3f s (there / back): %.2fx / %.2fx\n", bytes / 1048576.0,
                   m[0][0], m[0][1], m[1][0], m[1][1], m[1][0] / m[0][0], m[1][1] / m[0][1]);
            if (f)
                fprintf(f, "tx.order.rounds_there_s: %.4g\ntx.order.rounds_back_s: %.4g\ntx.order.streams_there_s: %.4g\n"
                        "tx.order.streams_back_s: %.4g\ntx.order.speedup_there: %.3f\ntx.order.speedup_back: %.3f\n",
                        m[0][0], m[0][1], m[1][0], m[1][1], m[1][0] / m[0][0], m[1][1] / m[0][1]);
        }
    }
    if (f) fclose(f);
    MPI_Finalize();
    return 0;
}
