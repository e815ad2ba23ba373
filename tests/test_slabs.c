/* test_slabs.c — the pure slab planner of transitions (transition.h), checked
 * element by element on random (old, new) stage pairs of a small model over
 * 8 job ranks, plus the time of one 1,024-rank plan of a big model. No MPI. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_random.h"
#include "nereus/transition.h"
#include "nereus/util.h"

#define NR 8

/* the table of the shard that job rank r holds in stage s into tab; 0 if r is not in s */
static int shard_of(const GPTConfig *cfg, const PlanStage *s, int r, TensorInfo tab[GPT_NUM_TENSORS]) {
    int n = s->tp * s->pp * s->dp, nt;
    for (int pos = 0; pos < n; pos++)
        if (s->ranks[pos] == r) {
            int t = pos % s->tp, p = pos / (s->tp * s->dp);
            gpt_tensor_table_pp(cfg, s->tp, t, s->pp, p, tab, &nt);
            return 1;
        }
    return 0;
}

static void coords(const TensorInfo *t, size_t e, int x[4]) {
    for (int a = 3; a >= 0; a--) {
        int sh = a < t->ndim ? t->shape[a] : 1;
        x[a] = (int)(e % (size_t)sh);
        e /= (size_t)sh;
    }
}

static int in_box(const int x[4], const int s[4], const int c[4]) {
    for (int a = 0; a < 4; a++)
        if (x[a] < s[a] || x[a] >= s[a] + c[a]) return 0;
    return 1;
}

/* holds: shard entry t (may be NULL: rank absent) holds logical element x */
static int holds(const TensorInfo *t, const int x[4]) {
    int s[4], c[4];
    if (!t || !slab_tensor_box(t, s, c)) return 0;
    return in_box(x, s, c);
}

static void random_stage(PlanStage *s, const int *perm, int from) {
    random_degrees(s, NR, 3);
    s->all = 0;
    for (int i = 0; i < s->nranks; i++) s->ranks[i] = (int16_t)perm[(from + i) % NR];
}

/* counters of the failures of each check kind over all pairs */
static int f_build, f_cover, f_lb, f_inside, f_src, f_io, f_ident, f_local;

/* checks one pair element by element, adding to the failure counters */
static void check_pair(const GPTConfig *cfg, const PlanStage *os, const PlanStage *ns, int identical) {
    SlabPlan sp;
    char why[256] = "";
    if (slab_plan_build(&sp, cfg, os, ns, NR, why, sizeof why) != 0) {
        if (f_build++ < 3) printf("  build failed: %s\n", why);
        return;
    }
    TensorInfo otab[NR][GPT_NUM_TENSORS], ntab[NR][GPT_NUM_TENSORS];
    int inold[NR], innew[NR], nt;
    TensorInfo full[GPT_NUM_TENSORS];
    gpt_tensor_table(cfg, 1, 0, full, &nt);
    for (int r = 0; r < NR; r++) {
        inold[r] = shard_of(cfg, os, r, otab[r]);
        innew[r] = shard_of(cfg, ns, r, ntab[r]);
    }
    uint8_t *cnt[NR][GPT_NUM_TENSORS];
    for (int r = 0; r < NR; r++)
        for (int i = 0; i < nt; i++) cnt[r][i] = calloc(full[i].numel, 1);
    size_t in[NR] = {0}, out[NR] = {0}, moved = 0;
    int bad_inside = 0, bad_src = 0, bad_local = 0;
    for (size_t k = 0; k < sp.n; k++) {
        const Slab *s = &sp.slabs[k];
        const TensorInfo *ft = &full[s->tensor];
        size_t ne = 1;
        for (int a = 0; a < 4; a++) {
            int sh = a < ft->ndim ? ft->shape[a] : 1;
            if (s->count[a] < 1 || s->start[a] < 0 || s->start[a] + s->count[a] > sh) bad_inside = 1;
            ne *= (size_t)s->count[a];
        }
        if (s->ndim != ft->ndim || s->tensor >= nt || s->bytes != ne * sizeof(float)) bad_inside = 1;
        if (bad_inside) continue;
        if (s->local && s->src_rank != s->dst_rank) bad_local = 1;
        if (!s->local) {
            moved += s->bytes;
            out[s->src_rank] += s->bytes;
            in[s->dst_rank] += s->bytes;
            if (s->src_rank == s->dst_rank) bad_local = 1;
        }
        const TensorInfo *st = inold[s->src_rank] ? &otab[s->src_rank][s->tensor] : NULL;
        int x[4];
        for (x[0] = s->start[0]; x[0] < s->start[0] + s->count[0]; x[0]++)
            for (x[1] = s->start[1]; x[1] < s->start[1] + s->count[1]; x[1]++)
                for (x[2] = s->start[2]; x[2] < s->start[2] + s->count[2]; x[2]++)
                    for (x[3] = s->start[3]; x[3] < s->start[3] + s->count[3]; x[3]++) {
                        if (!holds(st, x)) bad_src = 1;
                        size_t e = 0;
                        for (int a = 0; a < 4; a++) e = e * (size_t)(a < ft->ndim ? ft->shape[a] : 1) + (size_t)x[a];
                        if (cnt[s->dst_rank][s->tensor][e] < 255) cnt[s->dst_rank][s->tensor][e]++;
                    }
    }
    /* coverage: exactly once where the new layout holds, never elsewhere; the lower bound by elements */
    int bad_cover = 0;
    size_t lb = 0;
    for (int r = 0; r < NR; r++)
        for (int i = 0; i < nt; i++) {
            const TensorInfo *nti = innew[r] ? &ntab[r][i] : NULL, *oti = inold[r] ? &otab[r][i] : NULL;
            for (size_t e = 0; e < full[i].numel; e++) {
                int x[4];
                coords(&full[i], e, x);
                int need = holds(nti, x);
                if (cnt[r][i][e] != (need ? 1 : 0)) bad_cover = 1;
                if (need && !holds(oti, x)) lb += sizeof(float);
            }
            free(cnt[r][i]);
        }
    int bad_io = moved != sp.bytes_moved;
    for (int r = 0; r < NR; r++)
        if (in[r] != sp.rank_in[r] || out[r] != sp.rank_out[r]) bad_io = 1;
    f_inside += bad_inside;
    f_src += bad_src;
    f_local += bad_local;
    f_cover += bad_cover;
    f_io += bad_io;
    f_lb += !(lb == sp.bytes_lower_bound && sp.bytes_moved == sp.bytes_lower_bound);
    if (identical) f_ident += !(sp.bytes_moved == 0 && sp.bytes_local > 0);
    slab_plan_free(&sp);
}

int main(void) {
    int pairs = 0, idents = 0;
    for (int vh = 0; vh <= 1; vh++) {
        GPTConfig cfg = {.V = 15, .maxT = 16, .L = 4, .C = 32, .NH = 4, .value_head = vh};
        for (int it = 0; it < 300; it++) {
            int perm[NR];
            for (int i = 0; i < NR; i++) perm[i] = i;
            shuffle(perm, NR);
            static PlanStage os, ns;
            random_stage(&os, perm, 0);
            int mode = rnd(4);
            if (mode == 0) { /* identical stage */
                ns = os;
                idents++;
            } else {
                /* shared: both from the start of the permutation (1), or the new one reshuffled (2);
                   disjoint (3): the new ranks right after the old ones when they fit */
                if (mode == 2) shuffle(perm, NR);
                random_stage(&ns, perm, 0);
                if (mode == 3 && os.nranks + ns.nranks <= NR)
                    for (int i = 0; i < ns.nranks; i++) ns.ranks[i] = (int16_t)perm[os.nranks + i];
            }
            check_pair(&cfg, &os, &ns, mode == 0);
            pairs++;
        }
    }
    CHECK(f_build == 0, "build: %d pairs planned, %d failed to build", pairs, f_build);
    CHECK(f_cover == 0, "coverage: every element a new rank holds delivered exactly once (%d pairs bad)", f_cover);
    CHECK(f_lb == 0, "bytes_moved == bytes_lower_bound == element-wise bound (%d pairs bad)", f_lb);
    CHECK(f_inside == 0, "slabs inside the tensors' logical shapes, bytes = numel*4 (%d pairs bad)", f_inside);
    CHECK(f_src == 0, "every slab's source holds it in the old layout (%d pairs bad)", f_src);
    CHECK(f_local == 0, "local slabs have src = dst, moved ones src != dst (%d pairs bad)", f_local);
    CHECK(f_io == 0, "rank_in / rank_out / bytes_moved agree with the slabs (%d pairs bad)", f_io);
    CHECK(f_ident == 0 && idents > 0, "identical old and new stage: zero bytes moved (%d pairs, %d bad)", idents, f_ident);
    CHECK(pairs >= 500, "at least 500 random pairs (%d)", pairs);

    /* errors */
    {
        GPTConfig cfg = {.V = 15, .maxT = 16, .L = 4, .C = 32, .NH = 4, .value_head = 0};
        static PlanStage a, b;
        a.tp = 1, a.pp = 1, a.dp = 2, a.nranks = 2, a.ranks[0] = 0, a.ranks[1] = 0;
        b = a;
        b.ranks[1] = 1;
        SlabPlan sp;
        char why[256] = "";
        int r1 = slab_plan_build(&sp, &cfg, &a, &b, NR, why, sizeof why);
        slab_plan_free(&sp);
        b.pp = 3, b.dp = 1, b.nranks = 3, b.ranks[2] = 2;
        char why2[256] = "";
        int r2 = slab_plan_build(&sp, &cfg, &b, &b, NR, why2, sizeof why2);
        slab_plan_free(&sp);
        CHECK(r1 == -1 && r2 == -1 && why[0] && why2[0], "bad stages refused (\"%s\"; \"%s\")", why, why2);
    }

    /* the sources balanced across destinations: tp2dp2 @ 0-3 -> tp2dp4 @ 0-7 (ranks 4-7 each need a tp half:
       the embedding, held by all four old ranks, and the rest of the half, held by two). Taken destination by
       destination, the least-loaded holder of each block left ranks 0 and 1 sending 84.2 MB and 2 and 3
       50.4 (until 2026-12-04); balanced, each of the four sends what each new rank receives, 67.3 MB */
    {
        GPTConfig cfg = {.V = 8192, .maxT = 16, .L = 8, .C = 512, .NH = 8, .value_head = 0};
        static PlanStage a, b;
        memset(&a, 0, sizeof a);
        a.tp = 2, a.pp = 1, a.dp = 2, a.nranks = 4;
        b = a;
        b.dp = 4, b.nranks = 8;
        for (int i = 0; i < 8; i++) a.ranks[i] = b.ranks[i] = (int16_t)i;
        SlabPlan sp;
        char why[256] = "";
        int rc = slab_plan_build(&sp, &cfg, &a, &b, 8, why, sizeof why);
        size_t lo = SIZE_MAX, hi = 0, in = rc == 0 ? sp.rank_in[4] : 0;
        for (int r = 0; rc == 0 && r < 4; r++) {
            lo = sp.rank_out[r] < lo ? sp.rank_out[r] : lo;
            hi = sp.rank_out[r] > hi ? sp.rank_out[r] : hi;
        }
        CHECK(rc == 0 && lo == hi && hi == in, "sources balanced across destinations: tp2dp2 @ 0-3 -> tp2dp4, old ranks "
              "send %.1f-%.1f MB, each new rank receives %.1f MB %s", lo / 1e6, hi / 1e6, in / 1e6, why);
        if (rc == 0) slab_plan_free(&sp);
    }

    /* timing: 1,024 ranks of a big model (shapes only) */
    {
        GPTConfig big = {.V = 50304, .maxT = 2048, .L = 32, .C = 4096, .NH = 32, .value_head = 1};
        static PlanStage a, b;
        int perm[1024];
        for (int i = 0; i < 1024; i++) perm[i] = i;
        shuffle(perm, 1024);
        struct { int tp, pp, dp, shuffle; } cases[3][2] = {
            {{8, 4, 32, 0}, {4, 8, 32, 0}},
            {{1, 1, 1024, 0}, {8, 8, 16, 1}},
            {{8, 4, 32, 0}, {8, 4, 32, 1}},
        };
        for (int c = 0; c < 3; c++) {
            a.tp = cases[c][0].tp, a.pp = cases[c][0].pp, a.dp = cases[c][0].dp, a.nranks = 1024;
            b.tp = cases[c][1].tp, b.pp = cases[c][1].pp, b.dp = cases[c][1].dp, b.nranks = 1024;
            for (int i = 0; i < 1024; i++) {
                a.ranks[i] = (int16_t)i;
                b.ranks[i] = (int16_t)(cases[c][1].shuffle ? perm[i] : i);
            }
            SlabPlan sp;
            char why[256] = "";
            double t0 = nr_now();
            int rc = slab_plan_build(&sp, &big, &a, &b, 1024, why, sizeof why);
            double dt = nr_now() - t0;
            size_t maxo = 0, maxi = 0;
            for (int r = 0; rc == 0 && r < 1024; r++) {
                if (sp.rank_out[r] > maxo) maxo = sp.rank_out[r];
                if (sp.rank_in[r] > maxi) maxi = sp.rank_in[r];
            }
            CHECK(rc == 0 && sp.bytes_moved == sp.bytes_lower_bound,
                  "1024 ranks tp%d pp%d dp%d -> tp%d pp%d dp%d%s: %.3f s, %zu slabs, moved %.2f GB (bound %.2f GB), "
                  "local %.2f GB, max out %.3f GB, max in %.3f GB, mean out %.3f GB %s",
                  a.tp, a.pp, a.dp, b.tp, b.pp, b.dp, cases[c][1].shuffle ? " (shuffled ranks)" : "", dt, sp.n,
                  sp.bytes_moved / 1e9, sp.bytes_lower_bound / 1e9, sp.bytes_local / 1e9, maxo / 1e9, maxi / 1e9,
                  sp.bytes_moved / 1024.0 / 1e9, why);
            slab_plan_free(&sp);
        }
    }
    return CHECK_DONE();
}
