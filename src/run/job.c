/* job.c — set-up of the job's EMUs and models, and the operations across
 * EMUs that move whole models: logical assembly, import, per-step weight
 * sync and checksums (job.h). The logical vector of a model is its tensors
 * concatenated in table order, each in logical row-major order: the same
 * vector whatever the plan, so it is also what checkpoints will hold. It
 * is assembled a window at a time (job_window floats): no rank ever holds
 * a whole model it was not given a shard of. */
#include "nereus/job.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nereus/comm.h"
#include "nereus/ft.h"
#include "nereus/plan.h"
#include "nereus/txprice.h"
#include "nereus/util.h"

void job_stage_fill(Job *j, Stage *s) {
    if (s->emu.n == 0) { /* absent from the stage set (GRPO's critic stages) */
        s->member = s->leader = 0;
        s->d = -1;
        s->dp = s->B = 0;
        s->root = -1;
        return;
    }
    s->member = s->emu.pos >= 0;
    s->dp = s->emu.layout.dp;
    s->d = s->member ? s->emu.coord.d : -1;
    /* every pipeline stage and TP rank of a replica ends with the same
     * outputs (the last stage broadcasts them): one of them reports */
    s->leader = s->member && s->emu.coord.t == 0 && s->emu.coord.p == s->emu.layout.pp - 1;
    s->root = s->emu.ranks[0];
    s->B = j->cfg->ppo.batch / s->dp;
}

size_t job_window(void) {
    const char *e = getenv("NEREUS_JOB_WINDOW");
    if (!e || !*e) return JOB_WINDOW;
    char *end;
    unsigned long long w = strtoull(e, &end, 10);
    if (*end || w == 0 || w > ((size_t)1 << 40) || e[0] == '-')
        nr_fatal("NEREUS_JOB_WINDOW=%s: not a whole number of floats from 1 to 2^40", e);
    return (size_t)w;
}

int job_stage_holds_model(const Job *j, int id) { return tx_stage_holds_model(&j->px, id); }

const char *job_stage_dtype(const Job *j, int id) {
    if (!tx_stage_bf16(j->cfg, id)) return "fp32";
    return j->be->matmul_decode_bf16 ? "bf16" : "fp32 (bf16 asked; this backend has no bf16 GEMM)";
}

int job_memory_check(MPI_Comm world, const Config *cfg, const TaskSet *ts, char *why, size_t len) {
    int rank, size;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    JobShape sh;
    job_shape_of(cfg, ts, &sh);
    TxPricer px = {.cfg = cfg, .ac = sh.ac, .cc = sh.cc, .have_rm = sh.have_rm, .Tgen = sh.Tgen, .Tsft = sh.Tsft,
                   .nranks = size};
    /* this rank's bytes: its model-stages' shards, and the job's window of a logical vector (job_build's win) */
    double stage_b[PLAN_NSTAGES] = {0}, mine = (double)NR_MIN(gpt_logical_numel(&sh.cc), job_window()) * sizeof(float);
    for (int i = 0; i < PLAN_NSTAGES; i++) {
        int pos = plan_stage_pos(&cfg->plan.stage[i], rank);
        if (pos < 0) continue;
        stage_b[i] = tx_stage_shard_bytes(&px, i, &cfg->plan.stage[i], pos);
        const PlanStage *ps = &cfg->plan.stage[i];
        /* and under fault tolerance its copy in memory (memrec.h) */
        if (ft_on() && cfg->elastic.in_memory && tx_stage_holds_model(&px, i) && plan_stage_keeps_state(i))
            stage_b[i] += (double)gpt_shard_state_bytes(plan_stage_is_critic(i) ? &sh.cc : &sh.ac, ps->tp, ps->pp,
                                                        pos / (ps->tp * ps->dp), plan_stage_is_train(i));
        mine += stage_b[i];
    }
    /* the node's ranks together against its memory (physical, or a cgroup's limit where lower) */
    MPI_Comm node;
    mpiCheck(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    struct { double v; int r; } most = {mine, rank}, big;
    int limited = 0;
    double need = 0, phys = nr_node_memory(&limited), lim = phys; /* the physical memory, or a cgroup's limit */
    mpiCheck(MPI_Allreduce(&mine, &need, 1, MPI_DOUBLE, MPI_SUM, node));
    mpiCheck(MPI_Allreduce(&lim, &phys, 1, MPI_DOUBLE, MPI_MIN, node));
    mpiCheck(MPI_Allreduce(MPI_IN_PLACE, &limited, 1, MPI_INT, MPI_MAX, node));
    mpiCheck(MPI_Allreduce(&most, &big, 1, MPI_DOUBLE_INT, MPI_MAXLOC, node)); /* the node's largest rank */
    int nn = comm_size(node);
    mpiCheck(MPI_Comm_free(&node));
    struct { double v; int r; } over = {phys > 0 ? need / phys : 0, rank}, worst;
    mpiCheck(MPI_Allreduce(&over, &worst, 1, MPI_DOUBLE_INT, MPI_MAXLOC, world));
    if (!(worst.v > 1)) return 0;
    /* the fullest node's numbers, from the rank of it that found them, to every rank */
    char msg[1024] = "";
    if (rank == worst.r) {
        int o = snprintf(msg, sizeof msg, "the plan does not fit in memory: the %d rank(s) on rank %d's node need %.1f GiB "
                         "for their models, the node has %.1f GiB (%s%.2fx over); rank %d alone needs %.1f GiB", nn, rank,
                         need / 1073741824.0, phys / 1073741824.0, limited ? "its cgroup's memory limit; " : "",
                         need / phys, big.r, big.v / 1073741824.0);
        if (big.r == rank && o > 0 && o < (int)sizeof msg) {
            o += snprintf(msg + o, sizeof msg - (size_t)o, " (");
            for (int i = 0, k = 0; i < PLAN_NSTAGES && o < (int)sizeof msg; i++)
                if (stage_b[i] > 0)
                    o += snprintf(msg + o, sizeof msg - (size_t)o, "%s%s %.1f", k++ ? ", " : "", plan_stage_name(i),
                                  stage_b[i] / 1073741824.0);
            if (o < (int)sizeof msg) snprintf(msg + o, sizeof msg - (size_t)o, ")");
        }
        size_t m = strlen(msg);
        if (m + 80 < sizeof msg)
            snprintf(msg + m, sizeof msg - m, "; use more ranks or nodes, wider tp or pp, or a smaller [model]");
    }
    mpiCheck(MPI_Bcast(msg, sizeof msg, MPI_CHAR, worst.r, world));
    snprintf(why, len, "%s", msg);
    return -1;
}

void job_stage_capacity(const Job *j, int id, int dp, int *Bmax, int *Tmax) { tx_stage_capacity(&j->px, id, dp, Bmax, Tmax); }

/* job_stage_model, and with empty = 1 the model zeroed rather than drawn from the seed (job_build_on) */
static void stage_model(Job *j, Stage *s, int filled, int empty) {
    int i = s->id;
    if (!s->member || !job_stage_holds_model(j, i)) return;
    const Config *cfg = j->cfg;
    int critic = plan_stage_is_critic(i), train = plan_stage_is_train(i), Bmax, Tmax;
    job_stage_capacity(j, i, s->dp, &Bmax, &Tmax);
    GPTShard sh;
    emu_gpt_shard(&s->emu, &sh);
    if (filled) { /* a transition's destination */
        gpt_build_shard_dest(&s->model, critic ? &j->cc : &j->ac, &sh, j->be, Bmax, Tmax, train, filled);
        return;
    }
    if (empty || (cfg->model.init_from[0] && !critic && i != PLAN_REWARD_INF)) {
        /* the actor's stages and the ref under [model] init_from: its file (or a restart's checkpoint, which
           wins) writes every parameter before any read, so they start zero rather than from a draw that is
           overwritten (4 copies of SmolLM2-135M: 23 s of normal draws); every stage of a job built to be filled
           from memory (job_build_on) */
        gpt_build_shard_empty(&s->model, critic ? &j->cc : &j->ac, &sh, j->be, Bmax, Tmax, train);
        return;
    }
    /* same seed for every stage of a model: they start equal; the critic
     * and reward heads get their own */
    uint64_t seed = (uint64_t)cfg->run.seed;
    uint64_t sd = i == PLAN_REWARD_INF ? seed + 2 : critic ? seed + 1 : seed;
    const GPTConfig *mc = critic ? &j->cc : &j->ac;
    gpt_build_shard(&s->model, mc, &sh, j->be, Bmax, Tmax, train, sd, cfg->model.init_std);
    if (i == PLAN_REWARD_INF && s->model.p[GPT_VHW]) { /* the head lives on the last pipeline stage */
        /* a frozen reward network: value head drawn from the seed (UNTRAINED until checkpoints load one) */
        float *vh = nr_xmalloc((size_t)mc->C * sizeof(float));
        for (int c = 0; c < mc->C; c++) vh[c] = cfg->model.init_std * rng_normal(seed + 2, RNG_INIT, 1000, c);
        j->be->upload(s->model.p[GPT_VHW], vh, (size_t)mc->C * sizeof(float));
        free(vh);
    }
}

void job_stage_model(Job *j, Stage *s, int filled) { stage_model(j, s, filled, 0); }

void job_build(Job *j, MPI_Comm world, const Config *cfg, const Backend *be, const TaskSet *ts) {
    job_build_on(j, world, cfg, be, ts, &cfg->plan, 0);
}

void job_build_on(Job *j, MPI_Comm world, const Config *cfg, const Backend *be, const TaskSet *ts,
                  const PlanConfig *plan, int empty) {
    memset(j, 0, sizeof *j);
    j->world = world;
    MPI_Comm_rank(world, &j->rank);
    MPI_Comm_size(world, &j->size);
    int64_t over = comm_node_size(world) > sysconf(_SC_NPROCESSORS_ONLN);
    comm_allreduce_max_i64(world, &over, 1);
    j->cores_shared = (int)over;
    j->cfg = cfg;
    j->be = be;
    j->ts = *ts;
    JobShape sh; /* the vocabulary, prompt, capacities and model configs the deck makes (txprice.h) */
    job_shape_of(cfg, ts, &sh);
    j->V = sh.V;
    j->P = sh.P;
    j->Tsft = sh.Tsft;
    j->Tgen = sh.Tgen;
    j->have_rm = sh.have_rm;
    int Bg = cfg->ppo.batch;
    j->ac = sh.ac;
    j->cc = sh.cc;
    j->px = (TxPricer){cfg, j->ac, j->cc, j->have_rm, j->Tgen, j->Tsft, j->size, {{0}, 0, 0}, 0, 0, 0,
                       nr_xcalloc(1, sizeof(PlanKept))};
    emu_cache_init(&j->comms, cfg->transition.keep_comms); /* the layouts j->px.kept models */
    j->n_actor = gpt_logical_numel(&j->ac);
    j->n_critic = gpt_logical_numel(&j->cc);
    j->window = job_window();
    j->win = nr_xmalloc(NR_MIN(j->n_critic, j->window) * sizeof(float));
    j->plan = *plan;
    MPI_Comm_dup(world, &j->xcomm);
    j->staleness = cfg->ppo.max_staleness;
    rollq_init(j);
    for (int i = 0; i < PLAN_NSTAGES; i++) {
        Stage *s = &j->st[i];
        s->id = i;
        emu_build_stage(&s->emu, &j->comms, world, &j->plan, i);
        job_stage_fill(j, s);
        stage_model(j, s, 0, empty);
    }
    Stage *g = &j->st[PLAN_ACTOR_GEN];
    rollout_alloc(&j->G, cfg, ts, be, Bg, Bg, 0);
    if (g->member) rollout_alloc(&j->L, cfg, ts, be, g->B, Bg, g->d * g->B);
    j->scratch = nr_xcalloc((size_t)Bg * j->G.Tcap * 2 + 2 * (size_t)Bg, sizeof(double));
}

void job_free(Job *j) {
    for (int i = PLAN_NSTAGES - 1; i >= 0; i--) {
        gpt_free(&j->st[i].model);
        emu_free(&j->st[i].emu);
    }
    emu_cache_free(&j->comms);
    free(j->px.kept);
    job_sync_plan_free(j);
    if (j->xcomm != MPI_COMM_NULL && j->xcomm) MPI_Comm_free(&j->xcomm);
    rollq_free(j);
    rollout_free(&j->G);
    rollout_free(&j->L);
    free(j->win);
    free(j->scratch);
    memset(j, 0, sizeof *j);
}

void job_assemble_windows(Job *j, int src, int which, size_t n, JobWindowFn fn, void *ctx) {
    Stage *s = &j->st[src];
    int whole = s->emu.layout.tp == 1 && s->emu.layout.pp == 1; /* replica 0 is one rank: it holds every element */
    for (size_t lo = 0; lo < n; lo += j->window) {
        size_t hi = NR_MIN(n, lo + j->window);
        if (whole) {
            if (j->rank == s->root) gpt_export_logical_window(&s->model, which, lo, hi, 0, j->win);
            comm_bcast_f32(j->world, j->win, hi - lo, s->root);
        } else { /* replica 0's TP ranks and pipeline stages each hold a part: sum their disjoint canonical shares */
            memset(j->win, 0, (hi - lo) * sizeof(float));
            if (s->member && s->d == 0) gpt_export_logical_window(&s->model, which, lo, hi, 1, j->win);
            comm_allreduce_sum_f32(j->world, j->win, hi - lo);
        }
        fn(j, j->win, lo, hi, ctx);
    }
}

typedef struct SyncTo { const int *dst; int ndst; } SyncTo;

/* a window of the source's logical vector into every member of the destination stages; a critic's floats past
 * an actor's n (its value head) are outside every window and keep their values */
static void window_import(Job *j, const float *w, size_t lo, size_t hi, void *ctx) {
    const SyncTo *to = ctx;
    for (int k = 0; k < to->ndst; k++) {
        Stage *s = &j->st[to->dst[k]];
        if (s->member && s->model.params) gpt_import_logical_window(&s->model, GPT_BUF_PARAMS, lo, hi, w);
    }
}

void job_sync(Job *j, int src, const int *dst, int ndst) {
    for (int k = 0; k < ndst; k++) job_weights_changed(j, dst[k]);
    size_t n = plan_stage_is_critic(src) ? j->n_critic : j->n_actor;
    for (int k = 0; k < ndst; k++)
        if (n > (plan_stage_is_critic(dst[k]) ? j->n_critic : j->n_actor))
            nr_fatal("job_sync: %s's %zu floats into %s's smaller model", plan_stage_name(src), n, plan_stage_name(dst[k]));
    SyncTo to = {dst, ndst};
    job_assemble_windows(j, src, GPT_BUF_PARAMS, n, window_import, &to);
    j->sync_bytes = (double)n * sizeof(float) * (j->size - 1); /* the broadcast reaches every other rank */
}

static void window_abs_sum(Job *j, const float *w, size_t lo, size_t hi, void *ctx) {
    (void)j;
    double *s = ctx;
    for (size_t i = 0; i < hi - lo; i++) *s += fabs((double)w[i]);
}

double job_checksum(Job *j, int src) {
    size_t n = plan_stage_is_critic(src) ? j->n_critic : j->n_actor;
    double s = 0.0; /* one running sum in logical order, window after window: the same value whatever the plan */
    job_assemble_windows(j, src, GPT_BUF_PARAMS, n, window_abs_sum, &s);
    return s;
}

void job_tensor_checks(Job *j, int id, int which, double *abs, uint64_t *hash) {
    memset(abs, 0, GPT_NUM_TENSORS * sizeof *abs);
    memset(hash, 0, GPT_NUM_TENSORS * sizeof *hash);
    const Stage *s = &j->st[id];
    if (s->member && s->d == 0 && s->model.params) gpt_tensor_checks(&s->model, which, abs, hash);
    comm_allreduce_sum_f64(j->world, abs, GPT_NUM_TENSORS);
    mpiCheck(MPI_Allreduce(MPI_IN_PLACE, hash, GPT_NUM_TENSORS, MPI_UINT64_T, MPI_SUM, j->world)); /* mod 2^64 */
}

uint64_t job_params_hash(Job *j, int id) {
    double abs[GPT_NUM_TENSORS];
    uint64_t hash[GPT_NUM_TENSORS];
    job_tensor_checks(j, id, GPT_BUF_PARAMS, abs, hash);
    TensorInfo t[GPT_NUM_TENSORS];
    int nt;
    gpt_tensor_table(plan_stage_is_critic(id) ? &j->cc : &j->ac, 1, 0, t, &nt);
    return nr_cksum_combine(hash, nt);
}
