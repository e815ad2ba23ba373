/* test_transition.c — the transition engine executed over MPI (run on 4
 * and on 8 ranks). Each trial is 1–3 changes of small models, every layout
 * random (tp, pp ∈ {1, 2, 4}, dp and the rank list random: shared and
 * disjoint ranks), moves with AdamW state (3 buffers) or parameters only,
 * copies (weight sync), with or without a tight memory budget and with
 * small chunks and windows so that slabs are cut and streamed; half the
 * trials send chunks straight between the shards (contiguous runs, MPI
 * datatypes over runs), half pack every chunk through host staging as a
 * device backend does; three quarters post the chunks round by round
 * (the engine's order), a quarter stream after stream (the bench's
 * baseline). The old
 * shards are filled with a distinct value per (change, buffer, tensor,
 * logical element); after the transition every element every new shard
 * holds must be that value, bit for bit. Also: the bytes that crossed
 * between ranks (counted by the executor) equal the computed minimum; the
 * measured peak memory (backend bytes live + transfer buffers) stays within
 * the budget and within the DAG's predicted peak on every rank (which
 * counts the executor's buffer-by-buffer staging of a move's state); no
 * transition hangs (an alarm aborts a trial after 60 s).
 * New shards are built as the job builds them (gpt_build_shard_dest: what
 * the engine fills is not cleared first) with NEREUS_CPU_POISON=1, so an
 * element the engine did not write reads NaN, not a leftover that could
 * match; the backend's pool of freed pages is on, as in a run.
 *   test_transition [TRIALS] [llama]   (default 250)
 * With `llama` every model is a random Llama-family config instead of GPT-2
 * (llama, qwen2 with q/k/v biases, qwen3 with QK-norm; tied or untied head;
 * 8 query heads on 4 key/value heads, so that tp ∈ {1, 2, 4} cuts GQA
 * groups): the tensor table's separate q and k|v tensors, the (2, F, C)
 * SwiGLU weight and an untied head held by the last stage alone. */
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "nereus/backend.h"
#include "nereus/comm.h"
#include "nereus/emu.h"
#include "nereus/tx_exec.h"
#include "nereus/util.h"
#include "test_random.h" /* the same stream on every rank */

/* FNV-1a over a part's contents (not its pointers) */
static uint64_t part_hash(const TxPart *p) {
    uint64_t h = 1469598103934665603ull;
#define MIX(ptr, n) do { const unsigned char *b_ = (const unsigned char *)(ptr); for (size_t i_ = 0; i_ < (size_t)(n); i_++) h = (h ^ b_[i_]) * 1099511628211ull; } while (0)
    int64_t f[6] = {p->rank, p->nchanges, p->nwaves, p->nops, p->nslabs, p->stage_all};
    double m[2] = {p->mem_start, p->mem_peak};
    size_t cw[2] = {p->chunk, p->window};
    MIX(f, sizeof f);
    MIX(m, sizeof m);
    MIX(cw, sizeof cw);
    MIX(p->ch, (size_t)p->nchanges * sizeof *p->ch);
    MIX(p->ops, (size_t)p->nops * sizeof *p->ops);
    for (int64_t k = 0; k < p->nslabs; k++) { /* field by field: no padding */
        const Slab *s = &p->slabs[k];
        int64_t v[14] = {s->tensor, s->ndim, s->start[0], s->start[1], s->start[2], s->start[3], s->count[0],
                         s->count[1], s->count[2], s->count[3], s->src_rank, s->dst_rank, (int64_t)s->bytes, s->local};
        MIX(v, sizeof v);
    }
#undef MIX
    return h;
}

static void random_stage(PlanStage *s, int nranks) {
    memset(s, 0, sizeof *s);
    random_degrees(s, nranks, 3);
    int perm[64];
    for (int i = 0; i < nranks; i++) perm[i] = i;
    int mode = rnd(3); /* 0: any ranks; 1: the lowest ones; 2: the highest ones (disjoint from 1 when they fit) */
    if (mode == 0) shuffle(perm, nranks);
    for (int i = 0; i < s->nranks; i++) s->ranks[i] = (int16_t)(mode == 2 ? perm[nranks - 1 - i] : perm[i]);
}

/* the value of (change, buffer, tensor, logical element): distinct, never 0, exact in float */
static float value_of(int c, int b, int i, size_t k) {
    uint64_t h = ((uint64_t)c * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)(b + 1) << 56) ^ ((uint64_t)i << 40) ^ (uint64_t)k;
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    return 1.0f + (float)(h & 0xFFFFF) / 1048576.0f + (float)(c * 8 + b);
}

static void fill_expected(const GPTConfig *cfg, int c, int b, float *full) {
    TensorInfo t[GPT_NUM_TENSORS];
    int nt;
    gpt_tensor_table(cfg, 1, 0, t, &nt);
    for (int i = 0; i < nt; i++)
        for (size_t k = 0; k < t[i].numel; k++) full[t[i].loffset + k] = value_of(c, b, i, k);
}

/* a small model of the trial: GPT-2, or (llama) one of the Llama family at random */
static GPTConfig random_config(int llama) {
    GPTConfig c = {.V = 13 + rnd(4), .maxT = 8, .L = 4, .C = 16, .NH = 4, .value_head = rnd(2)};
    if (!llama) return c;
    c.NH = 8;
    c.NKV = 4;
    c.ffn = 24;
    c.arch = GPT_ARCH_LLAMA + rnd(3);
    c.untied = rnd(2);
    c.qkv_bias = c.arch == GPT_ARCH_QWEN2;
    c.qk_norm = c.arch == GPT_ARCH_QWEN3;
    if (c.qk_norm) c.head_dim = 4; /* Cq = 32: q's width need not be C */
    return c;
}

static const int which_buf[3] = {GPT_BUF_PARAMS, GPT_BUF_ADAM_M, GPT_BUF_ADAM_V};

typedef struct Trial {
    int nch;
    TxChange ch[3];
    Emu eold[3], enew[3];
    int built_new[3];    /* enew[c] built (a zeroed Emu is not one of MPI_COMM_NULLs) */
    GPT mold[3], mnew[3];
    TxEndpoint ep[3];
    const Backend *be;
} Trial;

static void hook_alloc(void *ctx, int c) {
    Trial *T = ctx;
    GPTShard sh;
    emu_gpt_shard(&T->enew[c], &sh);
    /* as the job builds a destination: what the engine fills is not cleared first (NaN-poisoned here) */
    gpt_build_shard_dest(&T->mnew[c], &T->ch[c].cfg, &sh, T->be, T->ch[c].bmax_to, T->ch[c].tmax, T->ch[c].trainable,
                         T->ch[c].nbufs);
    T->ep[c].to = &T->mnew[c];
}

static void hook_release(void *ctx, int c) {
    Trial *T = ctx;
    gpt_free(&T->mold[c]);
    T->ep[c].from = NULL;
}

/* every new shard of this rank checked element by element against the old shards' values: the elements
   that differ (a missing new shard counts one) */
static long count_bad(const Trial *T, float *full, float *got) {
    long bad = 0;
    for (int c = 0; c < T->nch; c++) {
        const TxChange *x = &T->ch[c];
        if (!T->built_new[c] || T->enew[c].pos < 0) continue;
        if (!T->ep[c].to) { bad++; continue; }
        for (int b = 0; b < x->nbufs; b++) {
            fill_expected(&x->cfg, c, b, full);
            memcpy(got, full, gpt_logical_numel(&x->cfg) * sizeof *got);
            gpt_export_logical(T->ep[c].to, which_buf[b], got);
            for (size_t k = 0; k < gpt_logical_numel(&x->cfg); k++)
                if (memcmp(&got[k], &full[k], sizeof(float)) != 0) bad++;
        }
    }
    return bad;
}

static void on_alarm(int sig) {
    (void)sig;
    const char msg[] = "test_transition: a transition did not finish within 60 s (deadlock?)\n";
    if (write(2, msg, sizeof msg - 1) < 0) {}
    _exit(3);
}

int main(int argc, char **argv) {
    setenv("NEREUS_CPU_POISON", "1", 1); /* before the first allocation: the backend reads it once */
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int trials = argc > 1 ? atoi(argv[1]) : 250;
    int llama = argc > 2 && strcmp(argv[2], "llama") == 0;
    if (argc > 3 || (argc > 2 && !llama) || trials < 1) {
        if (rank == 0) fprintf(stderr, "usage: test_transition [TRIALS] [llama]\n");
        MPI_Finalize();
        return 2;
    }
    test_rng ^= (uint64_t)size * 0x1234567ull; /* different pairs on 4 and on 8 ranks */
    const Backend *be = backend_cpu();
    signal(SIGALRM, on_alarm);
    MPI_Comm xcomm;
    MPI_Comm_dup(MPI_COMM_WORLD, &xcomm);
    static Trial T;
    long n_ok = 0, n_bad_value = 0, n_bad_bytes = 0, n_bad_mem = 0, n_bad_part = 0, n_refused = 0, n_waves = 0, n_budget = 0, n_bad_fwd = 0, n_fwd = 0, n_fwd_waves = 0, n_fwd_staged = 0;
    int max_hop = 0;
    long n_replay = 0, n_bad_replay = 0;
    double max_excess = 0; /* the most a rank's measured peak exceeded the DAG's prediction for it */
    long n_bad_pred = 0;
    long n_adam = 0, n_copy = 0, n_shared = 0, n_disjoint = 0, n_pairs = 0;
    double bytes_total = 0, secs = 0, fwd_bytes = 0;
    size_t nfull = 0;
    float *full = NULL, *got = NULL;
    for (int it = 0; it < trials; it++) {
        memset(&T, 0, sizeof T);
        T.be = be;
        T.nch = 1 + rnd(3);
        int used_ids = 0;
        for (int c = 0; c < T.nch; c++) {
            TxChange *x = &T.ch[c];
            memset(x, 0, sizeof *x);
            int id;
            do id = rnd(PLAN_NSTAGES); while (used_ids & (1 << id));
            used_ids |= 1 << id;
            x->id = id;
            x->tie = plan_stage_phase(id);
            x->kind = rnd(5) == 0 ? TX_COPY : TX_MOVE;
            x->cfg = random_config(llama);
            x->trainable = x->kind == TX_MOVE && rnd(2);
            x->nbufs = x->trainable ? 3 : 1;
            x->bmax_from = 1 + rnd(3);
            x->bmax_to = 1 + rnd(3);
            x->tmax = 8;
            random_stage(&x->from, size);
            random_stage(&x->to, size);
            int shared = 0;
            for (int a = 0; a < x->from.nranks; a++)
                for (int b = 0; b < x->to.nranks; b++) shared |= x->from.ranks[a] == x->to.ranks[b];
            n_shared += shared;
            n_disjoint += !shared;
            n_adam += x->nbufs == 3;
            n_copy += x->kind == TX_COPY;
        }
        TxOptions opt = {0, (size_t)(4 << rnd(10)) * 4, 0, 10e9, 5e-6, 200e-6, NULL, 0, 0, 0, 0, 0, 0, 0, 0};
        opt.stage_all = rnd(2); /* half the trials pack every chunk, as a device backend does */
        opt.window = opt.chunk * (size_t)(2 + rnd(8));
        opt.stream_order = rnd(4) == 0; /* a quarter post stream after stream (the bench's baseline order) */
        int tight = rnd(3) == 0;
        /* EMUs (collective, the same order everywhere) and the old shards, filled */
        for (int c = 0; c < T.nch; c++) {
            TxChange *x = &T.ch[c];
            int r1[64], r2[64];
            for (int i = 0; i < x->from.nranks; i++) r1[i] = x->from.ranks[i];
            for (int i = 0; i < x->to.nranks; i++) r2[i] = x->to.ranks[i];
            emu_build(&T.eold[c], MPI_COMM_WORLD, "old", (GridLayout){x->from.tp, x->from.pp, x->from.dp}, r1);
            if (x->kind == TX_COPY) /* a copy's destination exists before: its communicators too */
            {
                emu_build(&T.enew[c], MPI_COMM_WORLD, "new", (GridLayout){x->to.tp, x->to.pp, x->to.dp}, r2);
                T.built_new[c] = 1;
            }
            size_t nl = gpt_logical_numel(&x->cfg);
            if (nl > nfull) {
                nfull = nl;
                full = realloc(full, nfull * sizeof *full);
                got = realloc(got, nfull * sizeof *got);
            }
            if (T.eold[c].pos >= 0) {
                GPTShard sh;
                emu_gpt_shard(&T.eold[c], &sh);
                gpt_build_shard_empty(&T.mold[c], &x->cfg, &sh, be, x->bmax_from, x->tmax, x->trainable);
                for (int b = 0; b < x->nbufs; b++) {
                    fill_expected(&x->cfg, c, b, full);
                    gpt_import_logical(&T.mold[c], which_buf[b], full);
                }
                T.ep[c].from = &T.mold[c];
            }
            if (x->kind == TX_COPY && T.enew[c].pos >= 0) {
                GPTShard sh;
                emu_gpt_shard(&T.enew[c], &sh);
                gpt_build_shard_empty(&T.mnew[c], &x->cfg, &sh, be, x->bmax_to, x->tmax, 0);
                T.ep[c].to = &T.mnew[c];
            }
        }
        /* rank 0 plans (a tight budget: between what ranks hold and the unbounded peak) */
        TxPlan P;
        memset(&P, 0, sizeof P);
        char why[512] = "";
        int64_t st_rc[2] = {0, 0};
        double budget = 0;
        if (rank == 0) {
            st_rc[0] = tx_plan_build(&P, T.ch, T.nch, size, &opt, why, sizeof why);
            if (st_rc[0] == 0 && tight) {
                double lo = 0, hi = 0;
                for (int r = 0; r < size; r++) {
                    lo = P.mem_start[r] > lo ? P.mem_start[r] : lo;
                    lo = P.mem_end[r] > lo ? P.mem_end[r] : lo; /* no schedule needs less than the end */
                    hi = P.mem_peak[r] > hi ? P.mem_peak[r] : hi;
                }
                tx_plan_free(&P);
                opt.budget = budget = lo + (hi - lo) * (0.5 + 0.5 * rnd(100) / 100.0);
                st_rc[0] = tx_plan_build(&P, T.ch, T.nch, size, &opt, why, sizeof why);
                st_rc[1] = 1;
                if (st_rc[0] != 0 && strstr(why, "memory budget")) st_rc[0] = 2; /* refused: fine, counted */
            } else if (tight) {
                (void)rnd(100);
            }
        } else if (tight) {
            (void)rnd(100); /* keep the streams equal */
        }
        comm_bcast(MPI_COMM_WORLD, st_rc, sizeof st_rc, 0);
        comm_bcast(MPI_COMM_WORLD, &budget, sizeof budget, 0);
        if (st_rc[0] == 1) {
            if (rank == 0) fprintf(stderr, "trial %d: plan refused: %s\n", it, why);
            n_bad_value++;
        }
        if (st_rc[0] == 0) {
            n_budget += st_rc[1] != 0;
            TxPart part;
            if (tx_part_scatter(rank == 0 ? &P : NULL, MPI_COMM_WORLD, &part)) nr_fatal("part scatter failed");
            /* what each rank got = what tx_part_extract gives for it on rank 0 */
            uint64_t hmine = part_hash(&part), hall[64];
            MPI_Gather(&hmine, 1, MPI_UINT64_T, hall, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
            int64_t part_bad = 0;
            for (int r = 0; rank == 0 && r < size; r++) {
                TxPart ref;
                if (tx_part_extract(&P, r, &ref) || part_hash(&ref) != hall[r]) part_bad++;
                tx_part_free(&ref);
            }
            comm_bcast(MPI_COMM_WORLD, &part_bad, sizeof part_bad, 0);
            if (part_bad) {
                n_bad_part++;
                if (rank == 0) fprintf(stderr, "trial %d: %lld ranks' scattered parts differ from tx_part_extract\n", it, (long long)part_bad);
            }
            for (int c = 0; c < T.nch; c++) /* new communicators before anything moves */
                if (T.ch[c].kind == TX_MOVE) {
                    int r2[64];
                    for (int i = 0; i < T.ch[c].to.nranks; i++) r2[i] = T.ch[c].to.ranks[i];
                    emu_build(&T.enew[c], MPI_COMM_WORLD, "new", (GridLayout){T.ch[c].to.tp, T.ch[c].to.pp, T.ch[c].to.dp}, r2);
                    T.built_new[c] = 1;
                }
            /* tx_replay (the bench's raw-MPI floor) moves the same bytes to the same places: checked on the
               trials it applies to (moves only, no forwarding, chunks straight between shards), into new
               shards built for it and freed again before the engine runs */
            int64_t relayed = rank == 0 ? (int64_t)P.bytes_relayed : 0;
            comm_bcast(MPI_COMM_WORLD, &relayed, sizeof relayed, 0);
            int replay = !relayed && !opt.stage_all;
            for (int c = 0; c < T.nch; c++) replay &= T.ch[c].kind == TX_MOVE;
            if (replay) {
                for (int c = 0; c < T.nch; c++)
                    if (T.enew[c].pos >= 0) hook_alloc(&T, c);
                alarm(60);
                tx_replay(&part, T.ep, be, xcomm);
                alarm(0);
                int64_t rb = count_bad(&T, full, got);
                comm_allreduce_sum_i64(MPI_COMM_WORLD, &rb, 1);
                n_replay++;
                if (rb) {
                    n_bad_replay++;
                    if (rank == 0) fprintf(stderr, "trial %d: tx_replay left %lld elements wrong\n", it, (long long)rb);
                }
                for (int c = 0; c < T.nch; c++) {
                    gpt_free(&T.mnew[c]);
                    T.ep[c].to = NULL;
                }
            }
            TxHooks hooks = {&T, hook_alloc, hook_release};
            TxStats st;
            alarm(60);
            tx_execute(&part, T.ep, &hooks, be, xcomm, &st);
            alarm(0);
            long bad = count_bad(&T, full, got);
            int64_t red[4] = {bad, (int64_t)st.bytes_sent, (int64_t)st.bytes_recv, (int64_t)st.bytes_forwarded};
            comm_allreduce_sum_i64(MPI_COMM_WORLD, red, 4);
            double peak = (double)st.mem_peak, pred = part.mem_peak;
            double peaks[2] = {peak, peak > pred ? peak - pred : 0}; /* measured; its excess over the prediction */
            comm_allreduce_max_f64(MPI_COMM_WORLD, peaks, 2);
            double t = st.seconds;
            comm_allreduce_max_f64(MPI_COMM_WORLD, &t, 1);
            int64_t want[4] = {rank == 0 ? (int64_t)P.bytes_moved : 0, rank == 0 ? (int64_t)P.bytes_lower_bound : 0,
                               rank == 0 ? (int64_t)P.bytes_relayed : 0, rank == 0 ? P.max_hop : 0};
            comm_bcast(MPI_COMM_WORLD, want, sizeof want, 0);
            int nw = rank == 0 ? P.nwaves : 0;
            comm_bcast(MPI_COMM_WORLD, &nw, sizeof nw, 0);
            n_waves += nw > 1;
            int ok = 1;
            if (red[0] != 0) {
                n_bad_value++;
                ok = 0;
                if (rank == 0) fprintf(stderr, "trial %d: %lld elements differ\n", it, (long long)red[0]);
            }
            if (red[1] != want[0] || red[2] != want[0] || want[0] != want[1]) {
                n_bad_bytes++;
                ok = 0;
                if (rank == 0)
                    fprintf(stderr, "trial %d: sent %lld, received %lld, planned %lld, minimum %lld bytes\n", it,
                            (long long)red[1], (long long)red[2], (long long)want[0], (long long)want[1]);
            }
            if (red[3] != want[2]) {
                n_bad_fwd++;
                ok = 0;
                if (rank == 0) fprintf(stderr, "trial %d: forwarded %lld bytes, planned %lld\n", it, (long long)red[3],
                                       (long long)want[2]);
            }
            n_fwd += want[2] > 0;
            n_fwd_waves += want[2] > 0 && nw > 1;
            n_fwd_staged += want[2] > 0 && opt.stage_all;
            fwd_bytes += (double)red[3];
            max_hop = want[3] > max_hop ? (int)want[3] : max_hop;
            if (peaks[1] > max_excess) max_excess = peaks[1];
            if (peaks[1] > 0) {
                n_bad_pred++;
                ok = 0;
                if (rank == 0) fprintf(stderr, "trial %d: measured peak %.0f bytes, %.0f over the DAG's prediction\n", it, peaks[0], peaks[1]);
            }
            if (budget > 0 && peaks[0] > budget) {
                n_bad_mem++;
                ok = 0;
                if (rank == 0) fprintf(stderr, "trial %d: measured peak %.0f bytes over the budget %.0f\n", it, peaks[0], budget);
            }
            n_ok += ok;
            n_pairs += ok ? T.nch : 0;
            bytes_total += (double)red[1];
            secs += t;
            tx_part_free(&part);
        } else if (st_rc[0] == 2) {
            n_refused++;
        }
        if (rank == 0) tx_plan_free(&P);
        for (int c = 0; c < T.nch; c++) {
            gpt_free(&T.mold[c]);
            gpt_free(&T.mnew[c]);
        }
        for (int c = 0; c < T.nch; c++) {
            emu_free(&T.eold[c]);
            if (T.built_new[c]) emu_free(&T.enew[c]);
        }
    }
    free(full);
    free(got);
    MPI_Comm_free(&xcomm);
    /* tx_probe: rates from every rank at once, the same on every rank (max-reduced); one rank alone has no
       link (0) but a copy rate */
    TxProbe pr, solo;
    tx_probe(MPI_COMM_WORLD, (size_t)1 << 20, 64 << 10, 256 << 10, 3, &pr);
    MPI_Comm self;
    MPI_Comm_split(MPI_COMM_WORLD, rank, 0, &self);
    tx_probe(self, (size_t)1 << 20, 64 << 10, 256 << 10, 1, &solo);
    MPI_Comm_free(&self);
    double lo[2] = {pr.link, pr.copy}, hi[2] = {pr.link, pr.copy};
    MPI_Allreduce(MPI_IN_PLACE, lo, 2, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, hi, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int bad_probe = !(pr.link > 0 && pr.copy > 0 && lo[0] == hi[0] && lo[1] == hi[1] && solo.link == 0 && solo.copy > 0);
    int fails = n_bad_value + n_bad_bytes + n_bad_mem + n_bad_pred + n_bad_part + n_bad_fwd + (n_fwd == 0) + bad_probe + n_bad_replay +
                (n_replay == 0);
    if (rank == 0) {
        printf("%s %d ranks: %d random transitions%s (%ld changes with AdamW state, %ld copies; %ld changes on shared "
               "ranks, %ld on disjoint ones): %ld complete and bit-identical (%ld (old, new) pairs executed), %ld with a tight budget (%ld of "
               "them in several waves), %ld refused for memory before anything moved; %.1f MiB moved in %.2f s\n",
               fails ? "FAIL" : "ok  ", size, trials, llama ? " of Llama-family models" : "", n_adam, n_copy, n_shared, n_disjoint, n_ok, n_pairs, n_budget, n_waves,
               n_refused, bytes_total / 1048576.0, secs);
        printf("%s every element bit-identical after its transition (%ld trials bad)\n", n_bad_value ? "FAIL" : "ok  ", n_bad_value);
        printf("%s bytes that crossed between ranks = planned = the minimum (%ld bad)\n", n_bad_bytes ? "FAIL" : "ok  ", n_bad_bytes);
        printf("%s measured peak memory within the budget (%ld bad)\n", n_bad_mem ? "FAIL" : "ok  ", n_bad_mem);
        printf("%s measured peak memory within the DAG's predicted peak on every rank (%ld trials over, by at most %.0f "
               "bytes)\n", n_bad_pred ? "FAIL" : "ok  ", n_bad_pred, max_excess);
        printf("%s forwarding exercised: %ld trials forwarded %.1f MiB (chains up to %d hops; %ld of them in several "
               "waves, %ld through host staging); forwarded = planned (%ld bad)\n", n_bad_fwd || !n_fwd ? "FAIL" : "ok  ",
               n_fwd, fwd_bytes / 1048576.0, max_hop, n_fwd_waves, n_fwd_staged, n_bad_fwd);
        printf("%s every rank's scattered part (geometry + its block refs, expanded there) = tx_part_extract's (%ld trials bad)\n",
               n_bad_part ? "FAIL" : "ok  ", n_bad_part);
        printf("%s tx_replay (the bench's raw-MPI floor: every message posted at once) moved every element right in "
               "%ld trials (%ld bad)\n", n_bad_replay || !n_replay ? "FAIL" : "ok  ", n_replay, n_bad_replay);
        printf("%s tx_probe on %d ranks at once: links %.3g GB/s, local copies %.3g GB/s per rank, the same on every "
               "rank; one rank alone: link %g, copies %.3g GB/s\n", bad_probe ? "FAIL" : "ok  ", size, pr.link * 1e-9,
               pr.copy * 1e-9, solo.link, solo.copy * 1e-9);
    }
    MPI_Finalize();
    return fails ? 1 : 0;
}
