/* memrec.c — the shards' state in host memory, the buddy exchange, and the
 * replicas a recovery rebuilds the job from (memrec.h). */
#include "nereus/memrec.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/comm.h"
#include "nereus/grid.h"
#include "nereus/util.h"

#define TAG_HEAD 7101
#define TAG_DATA 7102
#define DATA_CHUNK ((size_t)1 << 26) /* floats a message at most */

int mem_stage_stateful(const Job *j, int id) {
    return plan_stage_keeps_state(id) && job_stage_holds_model(j, id) && plan_stage_present(&j->plan, id);
}

static void copy_free(MemCopy *c) {
    free(c->buf);
    memset(c, 0, sizeof *c);
}

static size_t copy_floats(const MemCopy *c) { return c->buf ? (size_t)c->nbufs * c->n : 0; }

/* c's buffer sized for nbufs · n floats (kept where it already is) */
static void copy_size(MemCopy *c, int nbufs, size_t n) {
    if (c->buf && copy_floats(c) == (size_t)nbufs * n) return;
    free(c->buf);
    c->buf = nr_xmalloc((size_t)nbufs * n * sizeof(float));
    c->nbufs = nbufs, c->n = n;
}

/* local: stage id's shard on this rank (grid position pos of layout) into c */
static void copy_from_model(MemCopy *c, int id, int owner, int pos, const PlanStage *layout, int64_t step,
                            const GPT *m, const Backend *be) {
    int nbufs = m->trainable ? 3 : 1;
    copy_size(c, nbufs, m->nparams);
    c->stage = id, c->owner = owner, c->pos = pos, c->frozen = !plan_stage_is_train(id);
    c->adam_t = m->adam_t, c->step = step, c->layout = *layout;
    size_t b = m->nparams * sizeof(float);
    be->download(c->buf, m->params, b);
    if (nbufs == 3) { /* AdamW's moments: zero until the first step allocates them */
        if (m->m) be->download(c->buf + m->nparams, m->m, b); else memset(c->buf + m->nparams, 0, b);
        if (m->v) be->download(c->buf + 2 * m->nparams, m->v, b); else memset(c->buf + 2 * m->nparams, 0, b);
    }
}

void mem_copies_clear(MemCopies *mc) {
    for (int i = 0; i < PLAN_NSTAGES; i++) copy_free(&mc->own[i]);
    for (int k = 0; k < mc->nkept; k++) free(mc->kept[k].buf);
    free(mc->kept);
    free(mc->buddy);
    mc->kept = NULL, mc->buddy = NULL;
    mc->nkept = mc->buddy_world = mc->buddy_nodes = 0;
    mc->step = -1;
    mc->bytes = 0;
}

/* ---- the buddies ---------------------------------------------------------------------------------------- */

/* collective over j->world: each rank's buddy, a rank of the next node (the same index within it, modulo its
   size), or the next rank where every rank is on one node */
static void buddy_map(MemCopies *mc, Job *j) {
    if (mc->buddy && mc->buddy_world == j->size) return;
    int n = j->size, lead = j->rank;
    MPI_Comm node;
    mpiCheck(MPI_Comm_split_type(j->world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    mpiCheck(MPI_Bcast(&lead, 1, MPI_INT, 0, node)); /* the node's lowest rank names it */
    mpiCheck(MPI_Comm_free(&node));
    int *leader = nr_xmalloc((size_t)n * sizeof(int));
    mpiCheck(MPI_Allgather(&lead, 1, MPI_INT, leader, 1, MPI_INT, j->world));
    free(mc->buddy);
    mc->buddy = nr_xmalloc((size_t)n * sizeof(int));
    mc->buddy_world = n;
    int nodes = 0;
    for (int r = 0; r < n; r++) nodes += leader[r] == r;
    mc->buddy_nodes = nodes;
    for (int r = 0; r < n; r++) {
        if (nodes < 2) {
            mc->buddy[r] = (r + 1) % n;
            continue;
        }
        int idx = 0, next = -1; /* r's index on its node; the next node's leader (wrapping) */
        for (int q = 0; q < r; q++) idx += leader[q] == leader[r];
        for (int q = leader[r] + 1; q < n && next < 0; q++)
            if (leader[q] == q) next = q;
        for (int q = 0; q < n && next < 0; q++)
            if (leader[q] == q) next = q;
        int size = 0;
        for (int q = 0; q < n; q++) size += leader[q] == next;
        for (int q = 0, k = 0; q < n; q++)
            if (leader[q] == next && k++ == idx % size) mc->buddy[r] = q;
    }
    free(leader);
}

typedef struct BuddyEntry {
    int32_t stage, pos, frozen, nbufs, adam_t, pad;
    int64_t step;
    uint64_t n;
} BuddyEntry;

typedef struct BuddyHead {
    int32_t count, pad;
    BuddyEntry e[PLAN_NSTAGES];
} BuddyHead;

typedef struct ReqList {
    MPI_Request *r;
    int n, cap;
} ReqList;

static MPI_Request *req_next(ReqList *q) {
    if (q->n == q->cap) {
        q->cap = q->cap ? 2 * q->cap : 16;
        q->r = nr_xrealloc(q->r, (size_t)q->cap * sizeof *q->r);
    }
    return &q->r[q->n++];
}

/* non-blocking: n floats to or from peer, in messages of at most DATA_CHUNK */
static void post_floats(ReqList *q, float *buf, size_t n, int peer, int send, MPI_Comm c) {
    for (size_t o = 0; o < n; o += DATA_CHUNK) {
        int k = (int)NR_MIN(DATA_CHUNK, n - o);
        if (send) mpiCheck(MPI_Isend(buf + o, k, MPI_FLOAT, peer, TAG_DATA, c, req_next(q)));
        else mpiCheck(MPI_Irecv(buf + o, k, MPI_FLOAT, peer, TAG_DATA, c, req_next(q)));
    }
}

/* the index in mc->kept of the copy of (owner, stage), made where there is none (the array may move) */
static int kept_slot(MemCopies *mc, int owner, int stage) {
    for (int k = 0; k < mc->nkept; k++)
        if (mc->kept[k].owner == owner && mc->kept[k].stage == stage) return k;
    mc->kept = nr_xrealloc(mc->kept, (size_t)(mc->nkept + 1) * sizeof *mc->kept);
    MemCopy *c = &mc->kept[mc->nkept];
    memset(c, 0, sizeof *c);
    c->owner = owner, c->stage = stage;
    return mc->nkept++;
}

/* drops the kept copies the copies' plan no longer has (another layout) or of a trained stage at another step */
static void kept_prune(MemCopies *mc) {
    int w = 0;
    for (int k = 0; k < mc->nkept; k++) {
        MemCopy *c = &mc->kept[k];
        if (c->buf && plan_stage_same(&c->layout, &mc->plan.stage[c->stage]) && (c->frozen || c->step == mc->step))
            mc->kept[w++] = *c;
        else free(c->buf);
    }
    mc->nkept = w;
}

/* collective over j->world: each rank sends its buddy the copies just taken (fresh) of shards no other rank
 * holds (their stage has one replica) and keeps what the ranks whose buddy it is send. A copy being received
 * counts (step −1) only once the whole of it is here. */
static void buddy_exchange(MemCopies *mc, Job *j, const int fresh[PLAN_NSTAGES]) {
    buddy_map(mc, j);
    int me = j->rank, to = mc->buddy[me], nsrc = 0;
    int *src = nr_xmalloc((size_t)j->size * sizeof(int));
    for (int r = 0; r < j->size; r++)
        if (r != me && mc->buddy[r] == me) src[nsrc++] = r;
    BuddyHead out, *in = nr_xcalloc((size_t)nsrc + 1, sizeof *in);
    memset(&out, 0, sizeof out);
    for (int i = 0; i < PLAN_NSTAGES; i++) {
        const MemCopy *c = &mc->own[i];
        if (!fresh[i] || !c->buf || j->plan.stage[i].dp != 1) continue;
        out.e[out.count++] = (BuddyEntry){c->stage, c->pos, c->frozen, c->nbufs, c->adam_t, 0, c->step, c->n};
    }
    ReqList q = {0};
    for (int s = 0; s < nsrc; s++)
        mpiCheck(MPI_Irecv(&in[s], sizeof *in, MPI_BYTE, src[s], TAG_HEAD, j->xcomm, req_next(&q)));
    if (to != me) mpiCheck(MPI_Isend(&out, sizeof out, MPI_BYTE, to, TAG_HEAD, j->xcomm, req_next(&q)));
    comm_waitall(q.n, q.r);
    q.n = 0;
    int *got = nr_xcalloc((size_t)nsrc * PLAN_NSTAGES + 1, sizeof *got); /* indices: kept_slot moves the array */
    for (int s = 0; s < nsrc; s++)
        for (int e = 0; e < in[s].count && e < PLAN_NSTAGES; e++) {
            const BuddyEntry *b = &in[s].e[e];
            int k = kept_slot(mc, src[s], b->stage);
            MemCopy *c = &mc->kept[k];
            copy_size(c, b->nbufs, (size_t)b->n);
            c->pos = b->pos, c->frozen = b->frozen, c->adam_t = b->adam_t, c->step = -1; /* not whole yet */
            c->layout = mc->plan.stage[b->stage];
            got[s * PLAN_NSTAGES + e] = k;
            post_floats(&q, c->buf, copy_floats(c), src[s], 0, j->xcomm);
        }
    for (int e = 0; e < out.count && to != me; e++)
        post_floats(&q, mc->own[out.e[e].stage].buf, copy_floats(&mc->own[out.e[e].stage]), to, 1, j->xcomm);
    comm_waitall(q.n, q.r);
    for (int s = 0; s < nsrc; s++)
        for (int e = 0; e < in[s].count && e < PLAN_NSTAGES; e++) mc->kept[got[s * PLAN_NSTAGES + e]].step = in[s].e[e].step;
    kept_prune(mc);
    free(got);
    free(q.r);
    free(in);
    free(src);
}

void mem_copies_take(MemCopies *mc, Job *j, int64_t step, int buddy) {
    double t0 = nr_now();
    mc->plan = j->plan;
    int fresh[PLAN_NSTAGES] = {0};
    for (int i = 0; i < PLAN_NSTAGES; i++) {
        MemCopy *c = &mc->own[i];
        const Stage *s = &j->st[i];
        mc->stateful[i] = mem_stage_stateful(j, i);
        if (!mc->stateful[i] || !s->member || !s->model.params) {
            copy_free(c);
            continue;
        }
        if (!plan_stage_is_train(i) && c->buf && c->owner == j->rank && plan_stage_same(&c->layout, &j->plan.stage[i]))
            continue; /* frozen, and laid out as when copied */
        copy_from_model(c, i, j->rank, s->emu.pos, &j->plan.stage[i], step, &s->model, j->be);
        fresh[i] = 1;
    }
    mc->step = step; /* the own copies are whole: a failure in the exchange leaves them usable */
    if (buddy && j->size > 1) buddy_exchange(mc, j, fresh);
    double b = 0;
    for (int i = 0; i < PLAN_NSTAGES; i++) b += (double)copy_floats(&mc->own[i]) * sizeof(float);
    for (int k = 0; k < mc->nkept; k++) b += (double)copy_floats(&mc->kept[k]) * sizeof(float);
    mc->bytes = b;
    mc->taken++;
    mc->seconds += nr_now() - t0;
}

/* ---- the replicas a recovery builds from ------------------------------------------------------------------ */

/* the (tp, pp) cell of grid position pos of layout o: t + tp · p */
static int pos_cell(const PlanStage *o, int pos) {
    GridCoord g = grid_coord((GridLayout){o->tp, o->pp, o->dp}, pos);
    return g.t + o->tp * g.p;
}

/* one replica of a stage of ncell cells, from the holdings h whose cell[x] ≥ 0 (the stage's): for every cell, the
   first unused candidate (own copies first, then by rank), the cells with the fewest left first; marks the ranks
   it takes and puts the holding each cell takes in hold[c]. Returns 0, or −1 (nothing marked) when some cell has
   none left; *empty_cell then names it. */
static int one_replica(int ncell, const MemHold *h, const int *cell, int nh, int *used, int *hold, int *empty_cell) {
    int *done = nr_xcalloc((size_t)ncell, sizeof(int));
    int rc = 0;
    for (int round = 0; round < ncell && rc == 0; round++) {
        int best = -1, best_n = INT_MAX;
        for (int c = 0; c < ncell; c++) { /* the undone cell with the fewest unused candidates */
            if (done[c]) continue;
            int k = 0;
            for (int x = 0; x < nh; x++) k += cell[x] == c && !used[h[x].rank];
            if (k < best_n) best = c, best_n = k;
        }
        if (best_n == 0) {
            *empty_cell = best;
            rc = -1;
            break;
        }
        int pick = -1;
        for (int x = 0; x < nh; x++) {
            if (cell[x] != best || used[h[x].rank]) continue;
            if (pick < 0 || (h[x].own && !h[pick].own) ||
                (h[x].own == h[pick].own && h[x].rank < h[pick].rank)) pick = x;
        }
        done[best] = 1;
        hold[best] = pick;
        used[h[pick].rank] = 1;
    }
    if (rc != 0)
        for (int c = 0; c < ncell; c++)
            if (done[c]) used[h[hold[c]].rank] = 0;
    free(done);
    return rc;
}

/* why: stage id's cell c (old layout o) has no copy left; the ranks that held it */
static void no_copy_why(const PlanStage *o, int id, int c, char *why, size_t len) {
    char ranks[256];
    size_t k = 0;
    ranks[0] = 0;
    for (int pos = 0; pos < o->tp * o->pp * o->dp && k + 12 < sizeof ranks; pos++)
        if (pos_cell(o, pos) == c) k += (size_t)snprintf(ranks + k, sizeof ranks - k, "%s%d", k ? "," : "", plan_stage_rank(o, pos));
    snprintf(why, len, "%s's shard (tp %d, pp %d) lived on rank(s) %s only, and no copy of it is left", plan_stage_name(id),
             c % o->tp, c / o->tp, ranks);
}

int mem_plan_replicas(const PlanConfig *old, const MemHold *h, int nh, const PlanConfig *target,
                      const int stateful[PLAN_NSTAGES], int batch, int minibatch, int world, PlanConfig *R, int *pick,
                      char *how, size_t how_len, char *why, size_t len) {
    *R = *target;
    if (pick)
        for (int k = 0; k < PLAN_NSTAGES * world; k++) pick[k] = -1;
    size_t hk = 0;
    if (how && how_len) how[0] = 0;
    int *used = nr_xcalloc((size_t)world, sizeof(int)), *cell = nr_xmalloc(((size_t)nh + 1) * sizeof(int));
    int rc = 0;
    for (int id = 0; id < PLAN_NSTAGES && rc == 0; id++) {
        if (!stateful[id]) continue;
        const PlanStage *o = &old->stage[id];
        int ncell = o->tp * o->pp, maxd = world / ncell + 1, nd = 0, empty = -1, bud = 0;
        for (int x = 0; x < nh; x++) cell[x] = h[x].stage == id ? pos_cell(o, h[x].pos) : -1;
        int *hold = nr_xmalloc((size_t)maxd * ncell * sizeof(int)); /* replica d, cell c: the holding it takes */
        memset(used, 0, (size_t)world * sizeof(int));
        while (nd < maxd && one_replica(ncell, h, cell, nh, used, hold + nd * ncell, &empty) == 0) nd++;
        if (nd == 0) {
            no_copy_why(o, id, empty, why, len);
            rc = -1;
        }
        while (nd > 1 && (batch % nd || (plan_stage_is_train(id) && minibatch % nd))) nd--;
        PlanStage *s = &R->stage[id];
        s->tp = o->tp, s->pp = o->pp, s->dp = nd, s->all = 0, s->nranks = ncell * nd;
        s->src = target->stage[id].src;
        for (int d = 0; d < nd; d++)
            for (int c = 0; c < ncell; c++) {
                const MemHold *x = &h[hold[d * ncell + c]];
                s->ranks[c % o->tp + o->tp * (d + nd * (c / o->tp))] = (int16_t)x->rank;
                if (pick) pick[id * world + x->rank] = x->pos;
                bud += !x->own; /* a buddy's copy taken: said */
            }
        if (rc == 0 && how && hk + 80 < how_len) {
            hk += (size_t)snprintf(how + hk, how_len - hk, "%s%s from %d replica(s) in memory", hk ? ", " : "",
                                   plan_stage_name(id), nd);
            if (bud) hk += (size_t)snprintf(how + hk, how_len - hk, " (%d shard(s) from buddy copies)", bud);
        }
        free(hold);
    }
    free(cell);
    free(used);
    return rc;
}

int64_t mem_agree_step(const MemCopies *mc, MPI_Comm world, int joined, char *why, size_t len) {
    int64_t v[2] = {joined ? INT64_MAX : mc->step, joined ? INT64_MAX : -mc->step}; /* min, and max as −min(−x) */
    comm_allreduce_min_i64(world, v, 2);
    if (v[0] < 0) return nr_fail(why, len, "some survivor holds no copy in memory (none taken yet, or the batches "
                                 "were generated ahead: [ppo] max_staleness)");
    if (v[0] != -v[1])
        return nr_fail(why, len, "the survivors' copies in memory are of steps %lld and %lld (the rank died between "
                       "two steps)", (long long)v[0], (long long)-v[1]);
    return v[0];
}

/* this rank's holdings (copies of `step` laid out as in old) as MemHold rows of rank `me` */
static int my_holds(const MemCopies *mc, const PlanConfig *old, int64_t step, int me, MemHold **out) {
    *out = nr_xcalloc((size_t)PLAN_NSTAGES + (size_t)mc->nkept + 1, sizeof **out);
    int n = 0;
    for (int i = 0; i < PLAN_NSTAGES; i++) {
        const MemCopy *c = &mc->own[i];
        if (c->buf && (c->frozen || c->step == step) && plan_stage_same(&c->layout, &old->stage[i]))
            (*out)[n++] = (MemHold){me, i, c->pos, 1};
    }
    for (int k = 0; k < mc->nkept; k++) {
        const MemCopy *c = &mc->kept[k];
        if (c->buf && (c->frozen || c->step == step) && plan_stage_same(&c->layout, &old->stage[c->stage]))
            (*out)[n++] = (MemHold){me, c->stage, c->pos, 0};
    }
    return n;
}

int mem_recover_plan(const MemCopies *mc, MPI_Comm world, const PlanConfig *target, int batch, int minibatch,
                     PlanConfig *R, int pick_pos[PLAN_NSTAGES], char *how, size_t how_len, char *why, size_t len) {
    int me = comm_rank(world), n = comm_size(world);
    struct { PlanConfig plan; int stateful[PLAN_NSTAGES]; int64_t step; } head; /* the lowest survivor's */
    head.plan = mc->plan;
    memcpy(head.stateful, mc->stateful, sizeof head.stateful);
    head.step = mc->step;
    comm_bcast(world, &head, sizeof head, 0);
    MemHold *mine; /* a joined process holds none */
    int nm = my_holds(mc, &head.plan, head.step, me, &mine);
    int *counts = nr_xmalloc((size_t)n * sizeof(int)), *displ = nr_xmalloc((size_t)n * sizeof(int));
    int ints = nm * 4, total = 0;
    mpiCheck(MPI_Allgather(&ints, 1, MPI_INT, counts, 1, MPI_INT, world));
    for (int r = 0; r < n; r++) displ[r] = total, total += counts[r];
    MemHold *all = nr_xcalloc((size_t)total / 4 + 1, sizeof *all);
    mpiCheck(MPI_Allgatherv(mine, ints, MPI_INT, all, counts, displ, MPI_INT, world));
    int *pick = nr_xmalloc((size_t)PLAN_NSTAGES * n * sizeof(int));
    int rc = mem_plan_replicas(&head.plan, all, total / 4, target, head.stateful, batch, minibatch, n, R, pick, how,
                               how_len, why, len);
    for (int i = 0; i < PLAN_NSTAGES; i++) pick_pos[i] = pick[i * n + me];
    free(pick);
    free(all);
    free(displ);
    free(counts);
    free(mine);
    return rc;
}

/* the copy of stage id's grid position pos this rank holds, or NULL */
static const MemCopy *find_copy(const MemCopies *mc, int id, int pos) {
    const MemCopy *c = &mc->own[id];
    if (c->buf && c->pos == pos && plan_stage_same(&c->layout, &mc->plan.stage[id])) return c;
    for (int k = 0; k < mc->nkept; k++)
        if (mc->kept[k].buf && mc->kept[k].stage == id && mc->kept[k].pos == pos) return &mc->kept[k];
    return NULL;
}

int mem_recover_fill(const MemCopies *mc, Job *j, const int pick_pos[PLAN_NSTAGES], char *why, size_t len) {
    for (int i = 0; i < PLAN_NSTAGES; i++) {
        Stage *s = &j->st[i];
        if (!mc->stateful[i] || !s->member || !s->model.params) continue;
        const MemCopy *c = pick_pos[i] >= 0 ? find_copy(mc, i, pick_pos[i]) : NULL;
        GPT *m = &s->model;
        if (!c) return nr_fail(why, len, "rank %d: no copy in memory for %s (position %d)", j->rank, plan_stage_name(i),
                               pick_pos[i]);
        if (c->n != m->nparams || (m->trainable && c->nbufs != 3))
            return nr_fail(why, len, "rank %d: the copy of %s holds %d x %zu floats, the shard needs %d x %zu", j->rank,
                           plan_stage_name(i), c->nbufs, c->n, m->trainable ? 3 : 1, m->nparams);
        size_t b = c->n * sizeof(float);
        j->be->upload(m->params, c->buf, b);
        if (m->trainable) {
            if (!m->m || !m->v) return nr_fail(why, len, "rank %d: %s has no AdamW state to fill", j->rank, plan_stage_name(i));
            j->be->upload(m->m, c->buf + c->n, b);
            j->be->upload(m->v, c->buf + 2 * c->n, b);
            m->adam_t = c->adam_t;
        }
    }
    job_weights_changed(j, -1);
    return 0;
}
