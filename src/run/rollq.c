/* rollq.c — the rollout from actor.gen's replicas to the ranks that use it, point to point, and the queue of
 * batches generated ahead of the step that trains them (rollq.h; docs/ASYNC.md). */
#include <stdlib.h>
#include <string.h>

#include "nereus/comm.h"
#include "nereus/counters.h"
#include "nereus/ft.h"
#include "nereus/job.h"
#include "nereus/rollq.h"
#include "nereus/util.h"

#define ROLLQ_TAG0 1000
#define ROLLQ_MAGIC 0x31305152 /* "RQ01": a checkpoint's packed queue */

static size_t row_words(const Job *j) { return ROLLQ_ROW_WORDS(j->G.Tcap); }
static size_t batch_words(const Job *j) { return (size_t)j->G.B * row_words(j); }
static int rollq_tag(int64_t s) { return ROLLQ_TAG0 + (int)(s % 20000); }

void rollq_init(Job *j) {
    RollQueue *q = &j->rq;
    memset(q, 0, sizeof *q);
    for (int i = 0; i < ROLLQ_SLOTS; i++) q->slot[i].step = -1;
    q->cons = MPI_COMM_NULL;
    q->cons_root = -1;
    MPI_Comm_dup(j->world, &q->comm);
}

static void rollq_drop_roles(RollQueue *q) {
    if (q->cons != MPI_COMM_NULL && q->cons) MPI_Comm_free(&q->cons);
    q->cons = MPI_COMM_NULL;
    free(q->gen_leader);
    free(q->needers);
    q->gen_leader = q->needers = NULL;
    q->valid = 0;
}

void rollq_free(Job *j) {
    RollQueue *q = &j->rq;
    rollq_drop_roles(q);
    if (q->comm != MPI_COMM_NULL && q->comm) MPI_Comm_free(&q->comm);
    for (int i = 0; i < ROLLQ_SLOTS; i++) free(q->slot[i].rows);
    for (int i = 0; i < q->nsend; i++) free(q->sendbuf[i]);
    free(q->req);
    memset(q, 0, sizeof *q);
}

void rollq_revoke(Job *j) {
    RollQueue *q = &j->rq;
    if (q->comm != MPI_COMM_NULL && q->comm) ft_revoke(q->comm);
    if (q->cons != MPI_COMM_NULL && q->cons) ft_revoke(q->cons);
}

void rollq_invalidate(Job *j) { rollq_drop_roles(&j->rq); }

/* the rank's roles under the plan in force, and every rank's as tables (one all-reduce) */
static void rollq_build_roles(Job *j) {
    RollQueue *q = &j->rq;
    const Stage *S = j->st;
    q->producer = S[PLAN_ACTOR_GEN].member;
    q->consumer = 0;
    for (int i = 0; i < PLAN_NSTAGES; i++)
        if (i != PLAN_ACTOR_GEN && S[i].member && job_stage_holds_model(j, i)) q->consumer = 1;
    q->needer = q->consumer || j->rank == 0;
    mpiCheck(MPI_Comm_split(j->world, q->consumer ? 0 : MPI_UNDEFINED, j->rank, &q->cons));
    int n = j->size;
    int64_t *t = nr_xcalloc((size_t)3 * n, sizeof(int64_t)); /* needer, consumer, gen replica + 1 by rank */
    t[j->rank] = q->needer;
    t[n + j->rank] = q->consumer;
    t[2 * n + j->rank] = S[PLAN_ACTOR_GEN].leader ? S[PLAN_ACTOR_GEN].d + 1 : 0;
    comm_allreduce_max_i64(j->world, t, (size_t)3 * n);
    q->ngen = S[PLAN_ACTOR_GEN].dp;
    q->gen_leader = nr_xcalloc((size_t)q->ngen, sizeof(int));
    q->needers = nr_xcalloc((size_t)n, sizeof(int));
    q->nneed = 0;
    q->cons_root = -1;
    for (int r = 0; r < n; r++) {
        if (t[r]) q->needers[q->nneed++] = r;
        if (t[n + r] && q->cons_root < 0) q->cons_root = r;
        if (t[2 * n + r] > 0) q->gen_leader[t[2 * n + r] - 1] = r;
    }
    free(t);
    q->valid = 1;
}

void rollq_roles(Job *j) {
    RollQueue *q = &j->rq;
    if (q->valid) return;
    rollq_drop_roles(q);
    rollq_build_roles(j);
    /* the queued batches onto the needers that lack them (rank 0, a needer under every plan, has them all) */
    size_t nw = batch_words(j);
    for (int i = 0; i < ROLLQ_SLOTS; i++) {
        RollSlot *sl = &q->slot[i];
        if (sl->step < 0) continue;
        int64_t lack = q->needer && !sl->rows;
        comm_allreduce_max_i64(j->world, &lack, 1);
        if (lack) {
            if (!sl->rows) sl->rows = nr_xmalloc(nw * sizeof(int32_t));
            comm_bcast(j->world, sl->rows, nw * sizeof(int32_t), 0);
        }
        if (!q->needer) { free(sl->rows); sl->rows = NULL; }
    }
}

static RollSlot *rollq_slot_of(RollQueue *q, int64_t s) {
    for (int i = 0; i < ROLLQ_SLOTS; i++)
        if (q->slot[i].step == s) return &q->slot[i];
    return NULL;
}

static void rollq_add_req(RollQueue *q, MPI_Request r) {
    if (q->nreq == q->capreq) {
        int cap = q->capreq ? 2 * q->capreq : 16;
        MPI_Request *r2 = nr_xcalloc((size_t)cap, sizeof *r2);
        if (q->nreq) memcpy(r2, q->req, (size_t)q->nreq * sizeof *r2);
        free(q->req);
        q->req = r2, q->capreq = cap;
    }
    q->req[q->nreq++] = r;
}

/* the leader's rows of L as rollout words: tokens, behaviour log-probability bits, response length */
static void rollq_pack_rows(const Rollout *L, int32_t *w) {
    size_t W = ROLLQ_ROW_WORDS(L->Tcap);
    for (int b = 0; b < L->B; b++) {
        int32_t *row = w + (size_t)b * W;
        for (int t = 0; t < L->Tcap; t++) row[t] = L->tokens[(size_t)b * L->Tcap + t];
        memcpy(row + L->Tcap, L->logp_gen + (size_t)b * L->Tcap, (size_t)L->Tcap * sizeof(float));
        row[2 * L->Tcap] = L->resp_len[b];
    }
}

/* this rank's generation of batch s (a gen member), its rows sent by its replica's leader */
static void rollq_generate(Job *j, RollSlot *sl, int64_t s) {
    RollQueue *q = &j->rq;
    Stage *g = &j->st[PLAN_ACTOR_GEN];
    counters_stage_begin(PLAN_ACTOR_GEN);
    job_stage_bf16_refresh(j, PLAN_ACTOR_GEN);
    ppo_generate(&j->L, &g->model, j->cfg, &j->ts, (int)s);
    counters_stage_end(PLAN_ACTOR_GEN);
    if (!g->leader) return;
    size_t nw = (size_t)j->L.B * row_words(j);
    int32_t *buf = nr_xmalloc(nw * sizeof(int32_t));
    rollq_pack_rows(&j->L, buf);
    if (sl->rows) memcpy(sl->rows + (size_t)g->d * nw, buf, nw * sizeof(int32_t));
    int sent = 0;
    for (int k = 0; k < q->nneed; k++) {
        if (q->needers[k] == j->rank) continue;
        rollq_add_req(q, comm_isend_f32(q->comm, (const float *)buf, nw, q->needers[k], rollq_tag(s)));
        sent = 1;
    }
    if (sent && q->nsend < ROLLQ_SLOTS) q->sendbuf[q->nsend++] = buf;
    else {
        if (sent) comm_waitall(q->nreq, q->req), q->nreq = 0; /* no room to keep it: finish the sends now */
        free(buf);
    }
}

static void rollq_wait(Job *j) {
    RollQueue *q = &j->rq;
    CommWaiter w;
    memset(&w, 0, sizeof w);
    w.yield_s = j->cores_shared ? -1.0 : 0.0; /* where ranks share cores, a waiter sleeps from the start */
    while (q->nreq > 0 && !comm_testall(q->nreq, q->req)) comm_waiter_pause(&w);
    q->nreq = 0;
    for (int i = 0; i < q->nsend; i++) free(q->sendbuf[i]);
    q->nsend = 0;
}

void rollq_produce(Job *j, int64_t s, int64_t version, int wait) {
    RollQueue *q = &j->rq;
    RollSlot *sl = rollq_slot_of(q, -1);
    if (!sl) nr_fatal("rollout queue: no free slot for step %lld (at most %d batches ahead)", (long long)s,
                      ROLLQ_SLOTS - 2);
    sl->step = s;
    sl->version = version;
    size_t nw = (size_t)j->st[PLAN_ACTOR_GEN].B * row_words(j);
    if (q->needer && !sl->rows) sl->rows = nr_xmalloc(batch_words(j) * sizeof(int32_t));
    if (q->producer) rollq_generate(j, sl, s);
    if (q->needer)
        for (int d = 0; d < q->ngen; d++) {
            if (q->gen_leader[d] == j->rank) continue;
            rollq_add_req(q, comm_irecv_f32(q->comm, (float *)(sl->rows + (size_t)d * nw), nw, q->gen_leader[d],
                                            rollq_tag(s)));
            q->bytes += (double)nw * sizeof(int32_t);
        }
    if (wait) rollq_wait(j);
    q->gen_next = s + 1;
}

int64_t rollq_install(Job *j, int64_t s) {
    RollSlot *sl = rollq_slot_of(&j->rq, s);
    if (!sl || !sl->rows) return -1;
    Rollout *G = &j->G;
    rollout_prompts(G, &j->ts, (int)s);
    size_t W = row_words(j);
    for (int b = 0; b < G->B; b++) {
        const int32_t *row = sl->rows + (size_t)b * W;
        for (int t = 0; t < G->Tcap; t++) G->tokens[(size_t)b * G->Tcap + t] = row[t];
        memcpy(G->logp_gen + (size_t)b * G->Tcap, row + G->Tcap, (size_t)G->Tcap * sizeof(float));
        G->resp_len[b] = row[2 * G->Tcap];
    }
    rollout_finish(G);
    return sl->version;
}

void rollq_finish(Job *j, int64_t s) {
    rollq_wait(j);
    RollSlot *sl = rollq_slot_of(&j->rq, s);
    if (sl) sl->step = -1; /* the rows stay allocated for the next batch */
}

/* ---- checkpoints: header (magic, batches, Bg, Tcap), then per batch step and version (two words each, low
 * first) and its rows ---- */

size_t rollq_pack(const Job *j, int64_t s, int32_t **out) {
    const RollQueue *q = &j->rq;
    *out = NULL;
    int nb = 0;
    for (int64_t k = s; k < q->gen_next; k++) nb++;
    if (nb == 0 || j->rank != 0) return 0;
    size_t nw = batch_words(j), n = 4 + (size_t)nb * (4 + nw);
    int32_t *w = nr_xmalloc(n * sizeof(int32_t)), *p = w + 4;
    w[0] = ROLLQ_MAGIC, w[1] = nb, w[2] = j->G.B, w[3] = j->G.Tcap;
    for (int64_t k = s; k < q->gen_next; k++) {
        RollSlot *sl = rollq_slot_of((RollQueue *)q, k);
        if (!sl || !sl->rows) nr_fatal("rollout queue: rank 0 lacks the batch of step %lld", (long long)k);
        uint64_t st = (uint64_t)sl->step, ve = (uint64_t)sl->version;
        p[0] = (int32_t)(st & 0xffffffffu), p[1] = (int32_t)(st >> 32), p[2] = (int32_t)(ve & 0xffffffffu),
        p[3] = (int32_t)(ve >> 32);
        memcpy(p + 4, sl->rows, nw * sizeof(int32_t));
        p += 4 + nw;
    }
    *out = w;
    return n;
}

int rollq_unpack(Job *j, int64_t s, const int32_t *w, size_t n, char *why, size_t len) {
    RollQueue *q = &j->rq;
    size_t nw = batch_words(j);
    if (n < 4 || w[0] != ROLLQ_MAGIC)
        return nr_fail(why, len, "its rollout queue is not one (no RQ01 header)");
    int nb = w[1];
    if (w[2] != j->G.B || w[3] != j->G.Tcap)
        return nr_fail(why, len, "its rollout queue holds batches of %d rows of %d tokens; this deck makes %d of %d "
                       "([ppo] batch, max_response and the prompt length must be the checkpoint's)", w[2], w[3],
                       j->G.B, j->G.Tcap);
    if (nb < 1 || nb > ROLLQ_SLOTS - 2 || n != 4 + (size_t)nb * (4 + nw))
        return nr_fail(why, len, "its rollout queue's size (%zu words for %d batches) is not its shape's", n, nb);
    const int32_t *p = w + 4;
    for (int b = 0; b < nb; b++, p += 4 + nw) {
        int64_t st = (int64_t)((uint64_t)(uint32_t)p[0] | (uint64_t)(uint32_t)p[1] << 32);
        int64_t ve = (int64_t)((uint64_t)(uint32_t)p[2] | (uint64_t)(uint32_t)p[3] << 32);
        if (st != s + b || ve < 0 || ve > st)
            return nr_fail(why, len, "its rollout queue's batch %d is of step %lld, version %lld (expected step %lld, "
                           "a version at most its step)", b, (long long)st, (long long)ve, (long long)(s + b));
    }
    for (int i = 0; i < ROLLQ_SLOTS; i++) q->slot[i].step = -1;
    p = w + 4;
    for (int b = 0; b < nb; b++, p += 4 + nw) {
        RollSlot *sl = &q->slot[b];
        sl->step = s + b;
        sl->version = (int64_t)((uint64_t)(uint32_t)p[2] | (uint64_t)(uint32_t)p[3] << 32);
        if (!sl->rows) sl->rows = nr_xmalloc(nw * sizeof(int32_t));
        memcpy(sl->rows, p + 4, nw * sizeof(int32_t));
    }
    q->gen_next = s + nb;
    rollq_drop_roles(q); /* the next rollq_roles keeps the rows on the needers only */
    return 0;
}
