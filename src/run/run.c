/* run.c — the job driver: checks what the deck means for the models (vocab,
 * context, what the plan asks of this build), builds the job's EMUs and
 * models, runs the SFT warm-start and the PPO steps, prints one line per
 * step (rank 0) and the verification block. run_job runs these phases over
 * one RunCtx; whichever phase ends the run, run_release frees what the
 * phases made. */
#include "nereus/run.h"

#include <math.h>
#include <mpi.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "nereus/backend.h"
#ifdef NEREUS_CUDA
#include "nereus/backend_cuda.h"
#endif
#include "nereus/comm.h"
#include "nereus/counters.h"
#include "nereus/cpu_kernels.h"
#include "nereus/emu.h"
#include "nereus/ft.h"
#include "nereus/inject.h"
#include "nereus/job.h"
#include "nereus/plan.h"
#include "nereus/planner_live.h"
#include "nereus/memrec.h"
#include "nereus/recover.h"
#include "nereus/text.h"
#include "nereus/trace.h"
#include "nereus/util.h"
#include "text_int.h"


/* Mean of xs[lo, hi) */
static double mean_range(const double *xs, int lo, int hi) {
    double s = 0;
    for (int i = lo; i < hi; i++) s += xs[i];
    return hi > lo ? s / (hi - lo) : 0.0;
}

/* 64-bit FNV-1a over the step's sampled sequences: equal hashes mean equal tokens */
static uint64_t hash_tokens(uint64_t h, const Rollout *r) {
    for (int b = 0; b < r->B; b++) {
        const int *s = r->seq + (size_t)b * r->T;
        for (int t = r->plen[b]; t < r->plen[b] + r->resp_len[b]; t++) {
            h ^= (uint64_t)(uint32_t)s[t];
            h *= 0x100000001b3ULL;
        }
        h ^= 0xffULL; /* sequence boundary */
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* The SFT batch must split over actor.train's replicas: returns 2 with a message at the line otherwise. */
static int check_sft_split(const Config *cfg, const Deck *deck) {
    if (cfg->sft.steps > 0 && cfg->sft.batch % cfg->plan.stage[PLAN_ACTOR_TRAIN].dp != 0)
        return deck_error_at(deck, "sft.batch", "[sft] batch = %d is not divisible by actor.train's dp = %d",
                             cfg->sft.batch, cfg->plan.stage[PLAN_ACTOR_TRAIN].dp);
    return 0;
}

/* A run that stops on an error (a non-finite loss, a failed checkpoint or
 * transition, the planner): rank 0 says so on stderr as an error, and the
 * verification block names it (verify.stopped), so that a script tells a
 * failed run's cause from its output. stop (≥ 256 bytes) keeps the words. */
static void run_stop(char *stop, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void run_stop(char *stop, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(stop, 256, fmt, ap);
    va_end(ap);
    if (nr_rank() == 0) {
        fflush(stdout);
        fprintf(stderr, "nereus: error: %s\n", stop);
        fflush(stderr);
    }
}

/* The deck's [switch] before PPO step `step`: resolve the plan against the
 * job, move through the transition engine, print what it did. Returns 0
 * (switched; *bytes: what moved between ranks), 1 (refused before anything
 * moved: the run continues on the current plan) or −1 (a transition check
 * failed: the run must stop; fail says why). */
static int run_switch(Job *j, const Config *cfg, int step, char *plan_text, size_t plan_len, Trace *tr,
                      int plan_id, double *bytes, char *fail, size_t fail_len) {
    double t0 = nr_now();
    int world = j->size;
    PlanConfig np = cfg->sw.plan;
    PlanLimits lim = job_plan_limits(cfg, world);
    PlanError perr;
    if (plan_resolve(&np, &lim, &perr) != 0) {
        /* plan_resolve speaks of [plan]: the same key of [switch] is meant */
        const char *msg = perr.msg, *key = strncmp(perr.key, "plan.", 5) == 0 ? perr.key + 5 : perr.key;
        char pre[600];
        snprintf(pre, sizeof pre, "[plan] %s: ", key);
        if (strncmp(msg, pre, strlen(pre)) == 0) msg += strlen(pre);
        nr_log("switch before step %d refused: [switch] %s: %s; continuing on the current plan\n", step, key, msg);
        char r[1200];
        snprintf(r, sizeof r, "deck [switch] refused: [switch] %s: %s", key, msg);
        trace_refused(tr, step, plan_id, r);
        return 1;
    }
    JobTxReport rep;
    char why[512] = "";
    int rc = job_transition(j, &np, 0, &rep, why, sizeof why);
    if (rc == 1) {
        nr_log("switch before step %d refused: %s; continuing on the current plan\n", step, why);
        char r[600];
        snprintf(r, sizeof r, "deck [switch] refused: %s", why);
        trace_refused(tr, step, plan_id, r);
        return 1;
    }
    if (rc < 0) {
        snprintf(fail, fail_len, "switch before step %d: %s", step, why);
        return -1;
    }
    char text[4096];
    plan_format(&j->plan, text, sizeof text);
    snprintf(plan_text, plan_len, "%s", text);
    nr_log("switch before step %d to the [switch] plan:\n%s", step, text);
    *bytes = rep.bytes_moved;
    trace_plan(tr, plan_id + 1, step, text, "deck [switch]", NAN, NAN);
    job_tx_log(&rep, step, t0, plan_id, plan_id + 1, tr);
    return 0;
}

/* [run] blas_threads > 1 where the rank's threads outnumber its cores: on the CPU backend they then wait
   for each other at every GEMM (OpenBLAS spins while it waits), which step times and the planner's per-rank
   slowdown readings (thread CPU seconds) count. Collective; rank 0 says so, with the fullest node's numbers. */
static void warn_threads(const Config *cfg, const Backend *be) {
    int t = cfg->run.blas_threads;
    if (t <= 1 || strcmp(be->name, "cpu") != 0) return;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int64_t v[3] = {comm_node_size(nr_world()), online > 0 ? online : 1, nr_cores_allowed()};
    struct { double v; int r; } me = {(double)(v[0] * t) / (double)v[1], nr_rank()}, worst;
    mpiCheck(MPI_Allreduce(&me, &worst, 1, MPI_DOUBLE_INT, MPI_MAXLOC, nr_world())); /* the fullest node */
    int64_t w[3], least = v[2];
    memcpy(w, v, sizeof w);
    mpiCheck(MPI_Bcast(w, 3, MPI_INT64_T, worst.r, nr_world()));
    mpiCheck(MPI_Allreduce(MPI_IN_PLACE, &least, 1, MPI_INT64_T, MPI_MIN, nr_world()));
    if (w[0] * t > w[1])
        nr_log("warning: [run] blas_threads = %d with %lld rank(s) on a node of %lld core(s): %lld threads for its "
               "cores, which wait for each other at every GEMM; step times, and the planner's per-rank slowdown "
               "readings, count the waits. Set blas_threads = 1 or run fewer ranks per node\n",
               t, (long long)w[0], (long long)w[1], (long long)(w[0] * t));
    else if (least < t)
        nr_log("warning: [run] blas_threads = %d, but a rank may run on %lld core(s) only (mpirun bound it; "
               "--bind-to none, or --map-by with pe=%d, gives it more): its threads wait for each other at every "
               "GEMM; set blas_threads = %lld\n",
               t, (long long)least, t, (long long)least);
}

/* One run from set-up to the verification block: what the phases share, what they own (released once, by
 * run_release, whichever phase ends the run) and the numbers the verification block reports. */
typedef struct RunCtx {
    const Config *cfg;
    const Deck *deck;
    const char *deck_path;
    int world;                    /* ranks in the job */
    const Backend *be;
    TaskSet ts;                   /* the training prompts: the digit games, or [data] train */
    TaskSet held_out;             /* the evaluation's: the digit games, or [data] eval (train where none) */
    PromptData pd;                /* [data]: the tokenizer and the prompt sets (pd.on = 0 without) */
    TextTask text, text_eval;     /* ts.text and held_out.text point here for a [data] deck */
    JobShape shape;
    char why[512];                /* the last refusal or failure, for its message */
    /* owned; each flag says whether run_release frees it */
    int have_inj, have_job, have_lp;
    Injector inj;
    Job job;
    LivePlanner lp;
    char *deck_text;              /* the resolved deck (malloc'd) */
    Trace *tr;                    /* NULL: none, or closed with the run's status */
    FILE *eval_out;               /* rank 0: [eval] responses (NULL: none) */
    char plan_text[4096];         /* the plan in force, as printed */
    int plan_id;                  /* its number in the trace */
    /* restart */
    int64_t start_step, sft_done; /* PPO and SFT steps done before this job */
    int restarted, partial;
    /* how the run ends */
    int status;                   /* 0, or 1: stopped on an error (stop says why: run_stop) */
    int stop_sig, nonfinite;
    char stop_ckpt[JOB_PATH_MAX], stop[256];
    /* SFT */
    double sft_first, sft_last;
    int sft_ran;
    /* PPO */
    double eval_before, eval_after, eval_accuracy; /* mean rewards; the last evaluation's accuracy */
    double *rewards, *kls;        /* (ppo.steps + 1) the PPO steps this job ran: [0, done_steps) */
    double *gaps, *genkls;        /* (ppo.steps + 1) each step's logp_gap and gen_kl (StepStats) */
    double step_s;                /* the PPO steps' wall seconds, summed (verify.ppo_mean_step_s) */
    double seq_tokens;            /* the rows' own tokens over those steps (verify.ppo_seq_tokens_per_s) */
    double rollout_bytes;         /* the rollout's bytes between ranks, summed over the steps */
    int64_t stale_hist[ROLLQ_SLOTS]; /* steps by the staleness of their batch */
    double *busy, *idle;          /* rank 0: (world) each rank's busy and idle seconds, summed over the steps */
    int done_steps;
    int64_t last_ckpt;            /* step of the last checkpoint this job wrote */
    int64_t final_step;           /* PPO steps done at the end */
    uint64_t tok_hash;
    double sync_time, sync_bytes, transition_bytes, ppo_s;
    int transitions;
    /* ranks that die (ft.h): the newest checkpoint this job wrote or started from, with the run's numbers at
       it, which a recovery goes back to; the survivors' Config (cfg points to it after a recovery) */
    struct RunSnap {
        int64_t step;             /* -1: none */
        int done_steps, transitions;
        uint64_t tok_hash;
        double sync_time, transition_bytes;
        char path[JOB_PATH_MAX];
    } snap;
    struct RunSnap msnap;         /* the run's numbers at the step the copies in memory hold (mc.step) */
    MemCopies mc;                 /* the shards' copies in memory ([elastic] in_memory; memrec.h) */
    int recovered_memory, recovered_ckpt; /* recoveries from the copies in memory, from a checkpoint */
    Config *ftcfg;
    int recoveries;
    int ranks_lost;               /* ranks that died, over every recovery */
    int ranks_joined;             /* processes spawned to replace ranks ([elastic] respawn), over every recovery */
    int launched;                 /* the ranks the job was launched with: what respawn brings it back to */
    double recovery_s;            /* the longest recovery: detection on rank 0 to the rebuilt job (s) */
    int64_t next_step;            /* the step the PPO loop starts at: start_step, after a recovery the snapshot's */
    int64_t leave_at;             /* ≥ 0: ranks told to leave (SIGUSR2) leave before this step (run_leave) */
    int64_t grow_at;              /* ≥ 0: the job grows ([elastic] grow_to) before this step (run_grow) */
    int ranks_left;               /* ranks that left with notice */
    int leave_moved;              /* the last leave moved the leavers' state to the others by a transition and the
                                     copies in memory hold it (run_leave_move): the rebuild takes them */
} RunCtx;

static void run_ctx_init(RunCtx *r, const Config *cfg, const Deck *deck, const char *deck_path) {
    memset(r, 0, sizeof *r);
    r->cfg = cfg, r->deck = deck, r->deck_path = deck_path;
    r->world = 1;
    MPI_Comm_size(nr_world(), &r->world);
    r->sft_first = r->sft_last = r->eval_after = NAN;
    r->last_ckpt = -1;
    r->tok_hash = 0xcbf29ce484222325ULL;
    r->snap.step = r->msnap.step = r->mc.step = -1;
    r->leave_at = r->grow_at = -1;
    r->launched = r->world;
}

/* collective over nr_world(): the one cleanup path, for a run that ends at any phase */
static void run_release(RunCtx *r) {
    trace_close(r->tr, nr_world(), NULL, 0, 0); /* still open: the run ended before its status */
    free(r->rewards);
    free(r->kls);
    free(r->gaps);
    free(r->genkls);
    free(r->busy);
    free(r->idle);
    free(r->deck_text);
    if (r->have_lp) live_free(&r->lp);
    if (r->have_inj) inject_free(&r->inj);
    if (r->eval_out) fclose(r->eval_out);
    if (r->have_job) job_free(&r->job);
    promptdata_free(&r->pd);
    mem_copies_clear(&r->mc);
    free(r->ftcfg);
}

/* The backend the deck asks for, its threads and precision. Returns 0, or 2 (a bad deck, reported). */
static int run_select_backend(RunCtx *r) {
    const Config *cfg = r->cfg;
    r->be = backend_select(cfg->run.backend, r->why, sizeof r->why);
    if (!r->be) return deck_error_at(r->deck, "run.backend", "%s", r->why);
    if (r->why[0]) nr_log("nereus: %s\n", r->why); /* e.g. why "auto" did not pick CUDA */
    if (strcmp(r->be->name, "cpu") == 0)
        nr_log("nereus: CPU kernels: %s (NEREUS_CPU_KERNELS=avx512|avx2|portable forces one; the same bits on each)\n",
               cpu_kernels_name(cpu_kernels_path()));
    char blas[600];
    if (strcmp(r->be->name, "cpu") == 0 && cpu_blas_core_check(blas, sizeof blas)) nr_log("warning: %s\n", blas);
    r->be->set_threads(cfg->run.blas_threads);
    warn_threads(cfg, r->be);
    if (strcmp(cfg->run.precision, "tf32") == 0) {
#ifdef NEREUS_CUDA
        if (strcmp(r->be->name, "cuda") == 0) backend_cuda_set_tf32(1);
        else
#endif
            nr_log("note: [run] precision = tf32 applies to the CUDA backend; the %s backend computes fp32\n",
                   r->be->name);
    }
    return 0;
}

/* [ppo] max_staleness >= 1 on a plan where actor.gen shares ranks with a model-stage that scores or trains: the
   batches are still generated ahead (and corrected), but on the shared ranks generation and the rest run one after
   another, so nothing overlaps (docs/ASYNC.md). A warning at the key's line; the run goes on. */
static void warn_staleness(const RunCtx *r) {
    const PlanConfig *p = &r->job.plan;
    if (r->cfg->ppo.max_staleness < 1) return;
    char with[256] = "";
    for (int s = 0; s < PLAN_NSTAGES; s++) {
        if (s == PLAN_ACTOR_GEN || !plan_stage_present(p, s) || !job_stage_holds_model(&r->job, s) ||
            !plan_overlap(p, PLAN_ACTOR_GEN, s))
            continue;
        size_t l = strlen(with);
        snprintf(with + l, sizeof with - l, "%s%s", l ? ", " : "", plan_stage_name(s));
    }
    if (!with[0]) return;
    deck_warn_at(r->deck, "ppo.max_staleness",
                 "[ppo] max_staleness = %d, but actor.gen shares ranks with %s under this plan: there generation and "
                 "the rest run one after another, so nothing overlaps; the batches are still generated %d step(s) "
                 "ahead and corrected (docs/ASYNC.md). Give actor.gen ranks of its own to gain from it",
                 r->cfg->ppo.max_staleness, with, r->cfg->ppo.max_staleness);
}

/* policy = sweep needs its PPO steps: returns 2 with a message at the line otherwise. */
static int check_sweep_steps(const Config *cfg, const Deck *deck) {
    if (strcmp(cfg->planner.policy, "sweep") != 0) return 0;
    const PlannerConfig *pc = &cfg->planner;
    int K = pc->sweep_calibrate < pc->sweep_plans ? pc->sweep_calibrate : pc->sweep_plans - 1;
    int nc = planner_sweep_controls(pc->sweep_plans, K, pc->sweep_reference);
    int need = pc->warmup + (pc->sweep_plans + nc + 2 * PLANNER_SWEEP_FINAL) * pc->sweep_steps;
    if (cfg->ppo.steps >= need) return 0;
    return deck_error_at(deck, "ppo.steps",
                         "[planner] policy = sweep runs warmup %d + (sweep_plans %d + %d control(s) "
                         "(sweep_reference %d) + %d x 2 for the search's choice and the best sampled plan "
                         "again) x sweep_steps %d = %d PPO steps; [ppo] steps = %d is too few",
                         pc->warmup, pc->sweep_plans, nc, pc->sweep_reference, PLANNER_SWEEP_FINAL, pc->sweep_steps,
                         need, cfg->ppo.steps);
}

/* collective over nr_world(): the [switch] plan, when this run will reach its step (a restart from a later
 * step will not), resolved against this job before step 1: a plan that cannot run on these ranks (tp3 on 2
 * ranks, tp not dividing the heads) is refused now with exit 2 at its key, not when its step comes. What only the
 * switch itself can find (a memory budget no schedule fits) is still refused then, the run going on. */
static int run_check_switch(RunCtx *r) {
    const Config *cfg = r->cfg;
    if (cfg->sw.step < 0 || cfg->sw.step < r->start_step) return 0;
    PlanConfig np = cfg->sw.plan;
    PlanLimits lim = job_plan_limits(cfg, r->world);
    PlanError perr;
    if (plan_resolve(&np, &lim, &perr) == 0) return 0;
    /* plan_resolve speaks of [plan]: the same key of [switch] is meant */
    const char *msg = perr.msg, *stage = strncmp(perr.key, "plan.", 5) == 0 ? perr.key + 5 : perr.key;
    char pre[600], key[600];
    snprintf(pre, sizeof pre, "[plan] %s: ", stage);
    if (strncmp(msg, pre, strlen(pre)) == 0) msg += strlen(pre);
    else if (strncmp(msg, "[plan] ", 7) == 0) msg += 7, stage = NULL; /* "[plan] actor.gen lists ..." */
    snprintf(key, sizeof key, "switch.%s", perr.key + (strncmp(perr.key, "plan.", 5) == 0 ? 5 : 0));
    return deck_error_at(r->deck, key, "[switch] %s%s%s (the switch before step %d cannot run on %d rank(s))",
                         stage ? stage : "", stage ? ": " : "", msg, cfg->sw.step, r->world);
}

/* the restart file, before anything is built or printed: there, and a checkpoint. Returns 0, or 2 (reported) */
static int run_check_restart(RunCtx *r) {
    if (!r->cfg->run.restart[0]) return 0;
    if (job_restart_precheck(r->cfg, r->why, sizeof r->why) == 0) return 0;
    return deck_error_at(r->deck, "run.restart", "cannot restart: %s", r->why);
}

/* What the deck means for the models and the tasks (vocabulary, context, SFT split, who changes the plan).
 * Returns 0, or 2 (a bad deck, reported at its line). */
static int run_check_job(RunCtx *r) {
    const Config *cfg = r->cfg;
    const Deck *deck = r->deck;
    if (task_parse(&r->ts, cfg->task.names, cfg->task.digits, (uint64_t)cfg->run.seed, r->why, sizeof r->why) != 0)
        return deck_error_at(deck, "task.names", "%s", r->why);
    int rc = run_text_open(&r->pd, &r->text, &r->text_eval, cfg, deck);
    if (rc) return rc;
    r->held_out = r->ts;
    if (r->pd.on) r->ts.text = &r->text, r->held_out.text = &r->text_eval;
    job_shape_of(cfg, &r->ts, &r->shape);
    int V = r->shape.V, P = r->shape.P;
    if (V < TASK_VOCAB && cfg->ppo.steps > 0 && !r->pd.on)
        return deck_error_at(deck, "model.vocab_size", "vocab_size %d is smaller than the task vocabulary (%d tokens)",
                             V, TASK_VOCAB);
    if (cfg->ppo.steps > 0 && P + cfg->ppo.max_response > cfg->model.max_seq)
        return deck_error_at(deck, "model.max_seq",
                             "max_seq %d is shorter than a prompt (%d tokens for %d digits) plus max_response %d",
                             cfg->model.max_seq, P, cfg->task.digits, cfg->ppo.max_response);
    if (cfg->sft.steps > 0 && r->shape.Tsft > cfg->model.max_seq)
        return deck_error_at(deck, "model.max_seq", "max_seq %d is shorter than an SFT sequence (%d tokens)",
                             cfg->model.max_seq, r->shape.Tsft);
    rc = check_sft_split(cfg, deck);
    if (rc) return rc;
    if (strcmp(cfg->planner.policy, "off") != 0 && cfg->sw.step >= 0)
        return deck_error_at(deck, "planner.policy",
                             "[planner] policy = %s and [switch] step = %d both change the plan during the run; "
                             "use one (policy = off for the [switch])",
                             cfg->planner.policy, cfg->sw.step);
    if (cfg->elastic.respawn && !ft_on())
        return deck_error_at(deck, "elastic.respawn", "[elastic] respawn = true replaces ranks that die or leave, "
                             "which needs fault tolerance: run bin/nereus-ft under jobs/local.sh --ft (make ft), or "
                             "set respawn = false");
    if (cfg->elastic.grow_to > r->world && !ft_on())
        return deck_error_at(deck, "elastic.grow_to", "[elastic] grow_to = %d spawns ranks into the running job, "
                             "which needs fault tolerance: run bin/nereus-ft under jobs/local.sh --ft (make ft), or "
                             "launch %d rank(s)", cfg->elastic.grow_to, cfg->elastic.grow_to);
    char sw[400];
    if ((cfg->elastic.respawn || cfg->elastic.grow_to > r->world) && ft_spawn_possible(sw, sizeof sw) != 0)
        return deck_error_at(deck, cfg->elastic.respawn ? "elastic.respawn" : "elastic.grow_to", "[elastic] %s spawns "
                             "processes into the job: %s", cfg->elastic.respawn ? "respawn" : "grow_to", sw);
    if (cfg->elastic.grow_to > r->world && cfg->ckpt.every <= 0)
        return deck_error_at(deck, "elastic.grow_to", "[elastic] grow_to = %d grows the job at its scheduled "
                             "checkpoints, and [ckpt] every = 0 schedules none", cfg->elastic.grow_to);
    rc = check_sweep_steps(cfg, deck);
    if (rc == 0) rc = run_check_restart(r);
    if (rc == 0 && !cfg->run.restart[0]) rc = run_check_switch(r); /* a restart: once its step is known */
    return rc;
}

/* collective over nr_world(): the injected drift, the start-up lines (the resolved deck, the plan), the
 * memory check, the job's EMUs and models, the live planner. Returns 0, or 2 (a bad deck, reported). */
static int run_build(RunCtx *r) {
    const Config *cfg = r->cfg;
    const char *ikey = "";
    int me = 0;
    MPI_Comm_rank(nr_world(), &me);
    r->have_inj = 1;
    if (inject_init(&r->inj, cfg, r->world, me, &ikey, r->why, sizeof r->why) != 0)
        return deck_error_at(r->deck, ikey, "%s", r->why);
    if (cfg->ppo.max_response < task_max_answer(&r->ts) + 1)
        nr_log("note: [ppo] max_response %d cannot hold the longest answer (%d tokens + EOS); rewards are capped\n",
               cfg->ppo.max_response, task_max_answer(&r->ts));

    nr_log("nereus: %s — deck %s, %d rank(s), backend %s, %d BLAS thread(s) per rank\n", cfg->run.name,
           r->deck_path, r->world, r->be->name, cfg->run.blas_threads);
    plan_format(&cfg->plan, r->plan_text, sizeof r->plan_text);
    nr_log("plan:\n%s", r->plan_text);

    char injected[1024];
    if (inject_describe(&r->inj, injected, sizeof injected)) nr_log("%s\n", injected);
    char mwhy[1024];
    if (job_memory_check(nr_world(), cfg, &r->ts, mwhy, sizeof mwhy) != 0)
        return deck_error_at(r->deck, "model.n_embd", "%s", mwhy);
    job_build(&r->job, nr_world(), cfg, r->be, &r->ts);
    r->have_job = 1;
    warn_staleness(r);
    live_init(&r->lp, &r->job);
    r->have_lp = 1;
    if (live_check_fits(&r->lp, &r->job, r->why, sizeof r->why) != 0)
        return deck_error_at(r->deck, cfg->planner.memory_gib > 0 ? "planner.memory_gib" : "planner.policy",
                             "no plan fits the models in this job's %d rank(s): %s", r->world, r->why);
    char critic[96]; /* a critic-free job (grpo) has no critic; the critic's shape is the reward network's */
    int grpo = ppo_is_grpo(cfg);
    if (grpo) snprintf(critic, sizeof critic, "no critic (algorithm = grpo)");
    else snprintf(critic, sizeof critic, "%zu (critic)", r->job.n_critic);
    if (gpt_is_llama(&r->job.ac))
        nr_log("model: %s L=%d C=%d NH=%d NKV=%d hd=%d F=%d V=%d T=%d: %zu parameters (actor), %s\n",
               cfg->model.arch, cfg->model.n_layer, cfg->model.n_embd, cfg->model.n_head, gpt_kv_heads(&r->job.ac),
               gpt_head_dim(&r->job.ac), gpt_ffn(&r->job.ac), r->shape.V, cfg->model.max_seq, r->job.n_actor, critic);
    else
        nr_log("model: GPT-2 L=%d C=%d NH=%d V=%d T=%d: %zu parameters (actor), %s\n", cfg->model.n_layer,
               cfg->model.n_embd, cfg->model.n_head, r->shape.V, cfg->model.max_seq, r->job.n_actor, critic);
    nr_log("communicators: %d group set(s) for the %d model-stages (model-stages of one layout on the same ranks "
           "share one)\n", emu_cache_sets(&r->job.comms), plan_stage_count(grpo));
    r->deck_text = deck_resolved_text(r->deck, cfg);
    job_install_signals();
    return 0;
}

/* collective over nr_world(): with [run] restart, every stage's model (and the trained models' AdamW
 * state) from the checkpoint, under this deck's plan and rank count. Returns 0, or 2 (refused, reported). */
static int run_restart(RunCtx *r) {
    const Config *cfg = r->cfg;
    if (!cfg->run.restart[0]) return 0;
    char used[JOB_PATH_MAX];
    if (job_restart(&r->job, cfg->run.restart, &r->start_step, &r->sft_done, &r->partial, used, sizeof used, r->why,
                    sizeof r->why) != 0)
        return deck_error_at(r->deck, "run.restart", "cannot restart: %s", r->why);
    r->restarted = 1;
    nr_log("restart: %s: %lld SFT and %lld PPO steps done; continuing under this deck's plan on %d rank(s)\n", used,
           (long long)r->sft_done, (long long)r->start_step, r->world);
    if (r->start_step > cfg->ppo.steps)
        nr_log("note: the checkpoint is past [ppo] steps = %d: no PPO step to run\n", cfg->ppo.steps);
    return 0;
}

/* collective over nr_world(): with [model] init_from (and no restart, which continues a run and wins),
 * the actor and the ref from the file's actor under this deck's plan; the run starts at step 0. Returns 0, or
 * 2 (refused, reported). */
static int run_init_from(RunCtx *r) {
    const char *path = r->cfg->model.init_from;
    if (!path[0]) return 0;
    if (r->restarted) {
        nr_log("note: [model] init_from = %s is ignored: the restart continues its run\n", path);
        return 0;
    }
    if (job_init_from(&r->job, path, r->why, sizeof r->why) != 0)
        return deck_error_at(r->deck, "model.init_from", "cannot initialise the actor and the ref: %s", r->why);
    nr_log("init_from: %s: its actor starts the actor and the ref (fresh AdamW state, PPO step 0)\n", path);
    return 0;
}

/* collective over nr_world(): a run that does not restart and would write over checkpoints an earlier run of
 * its name left in [ckpt] dir (a file at a step it reaches) is refused before step 1, as a trace is: exit 2
 * naming the file and the ways out, unless [ckpt] overwrite = true. A restart continues that run: allowed.
 * Returns 0, or 2 (reported). */
static int run_check_ckpt_overwrite(RunCtx *r) {
    const Config *cfg = r->cfg;
    if (r->restarted || cfg->ckpt.overwrite) return 0;
    int64_t oldest = r->job.rank == 0 ? job_ckpt_oldest(&r->job) : -1;
    comm_bcast(nr_world(), &oldest, sizeof oldest, 0);
    if (oldest < 0 || oldest > cfg->ppo.steps) return 0;
    return deck_error_at(r->deck, "ckpt.dir",
                         "%s/%s_step%06lld.h5: an earlier run's checkpoint, which this run would write over: not "
                         "overwritten; continue that run (--restart latest), name this one otherwise (--set "
                         "run.name=NEW, --set ckpt.dir=DIR), or replace them ([ckpt] overwrite = true)",
                         cfg->ckpt.dir, cfg->run.name, (long long)oldest);
}

/* rank 0: the resolved deck (every key, its value and where it came from) into a file beside the trace,
 * NAME.resolved.deck for NAME.trace.h5, instead of on the console before the first step; its path said in one
 * line. No trace, no file: the trace's /deck and bin/nereus DECK --print-deck hold it too. A file that cannot
 * be written is a warning: the run does not need it. */
static void run_write_deck(RunCtx *r) {
    char path[1024], why[512];
    if (trace_path(r->cfg, r->start_step, path, sizeof path) != 0) {
        nr_log("deck: resolved deck not written ([trace] file = none); bin/nereus DECK --print-deck prints it\n");
        return;
    }
    size_t n = strlen(path), k = strlen(".trace.h5");
    if (n >= k && strcmp(path + n - k, ".trace.h5") == 0) path[n - k] = 0;
    else if (n >= 3 && strcmp(path + n - 3, ".h5") == 0) path[n - 3] = 0;
    snprintf(path + strlen(path), sizeof path - strlen(path), ".resolved.deck");
    if (nr_rank() != 0) return;
    if (nr_write_text(path, r->deck_text, why, sizeof why) != 0) nr_warn("resolved deck not written: %s", why);
    else nr_log("deck: resolved deck in %s (every key, its value and its source)\n", path);
}

/* collective over nr_world(): the checkpoint directory (found unusable now, not after the first steps)
 * and the trace (rank 0 writes it; every rank counts its model-stages). Returns 0, or 2 (refused, reported). */
static int run_open_outputs(RunCtx *r) {
    const Config *cfg = r->cfg;
    if (cfg->ckpt.every > 0 && cfg->ppo.steps > 0) {
        if (job_ckpt_dir(&r->job, r->why, sizeof r->why) != 0)
            return deck_error_at(r->deck, "ckpt.dir", "%s ([ckpt] every = %d writes there)", r->why, cfg->ckpt.every);
        if (run_check_ckpt_overwrite(r) != 0) return 2;
        /* a later step's file there is another run's (job_checkpoint's rotation leaves it) */
        int64_t newest = r->job.rank == 0 ? job_ckpt_newest(&r->job) : -1;
        if (newest > r->start_step)
            nr_warn("[ckpt] dir %s already holds %s_step%06lld.h5, past this run's start (PPO step %lld): another "
                    "run's, or a later one; this run's checkpoint rotation leaves it, but restart = latest would "
                    "take it", cfg->ckpt.dir, cfg->run.name, (long long)newest, (long long)r->start_step);
    }
    if (run_eval_responses_check(cfg, r->deck, r->pd.on, r->restarted) != 0) return 2; /* before the trace */
    TraceJob tj = {cfg, r->deck_text, r->plan_text, r->be, r->job.ac, r->job.cc, r->job.have_rm, r->start_step};
    const char *tkey = "";
    int rc = 0;
    r->tr = trace_open(nr_world(), &tj, &rc, &tkey, r->why, sizeof r->why);
    if (rc) return deck_error_at(r->deck, tkey, "%s", r->why);
    live_trace_start(&r->lp, &r->job, r->tr);
    run_write_deck(r);
    return run_eval_responses_open(cfg, r->deck, r->restarted, &r->eval_out);
}

/* collective over nr_world(): the SFT steps from sft_done on, each logged; a non-finite loss or a stop
 * signal (with its checkpoint) ends them. */
static void run_sft_steps(RunCtx *r, SftData *sd) {
    const Config *cfg = r->cfg;
    for (int s = (int)r->sft_done; s < cfg->sft.steps; s++) {
        double ts0 = nr_now();
        float loss = job_sft_step(&r->job, sd, s);
        if (!r->sft_ran) r->sft_first = loss;
        r->sft_ran++;
        r->sft_last = loss;
        if (!isfinite(loss)) {
            run_stop(r->stop, "sft step %d: non-finite loss (%g); stopping the run", s, loss);
            r->status = 1, r->nonfinite = 1;
            return;
        }
        if (s % cfg->run.log_every == 0 || s + 1 == cfg->sft.steps)
            nr_log("sft %4d | loss %.4f | %.3fs | %s\n", s, loss, nr_now() - ts0, r->shape.use_tokens ? "tokens" : "task");
        if (s + 1 < cfg->sft.steps && (r->stop_sig = job_stop_requested(&r->job))) {
            if (job_checkpoint(&r->job, 0, s + 1, r->deck_text, r->plan_text, r->stop_ckpt, sizeof r->stop_ckpt,
                               r->why, sizeof r->why) != 0) {
                run_stop(r->stop, "stop signal %d: the checkpoint failed: %s", r->stop_sig, r->why);
                r->status = 1;
            }
            return;
        }
    }
}

/* collective over nr_world(): the SFT warm-start of actor.train (the steps a restart has not done).
 * Returns 0, or 2 when the SFT data cannot be read (actor.train's ranks report it; every rank stops). */
static int run_sft(RunCtx *r) {
    const Config *cfg = r->cfg;
    if (cfg->sft.steps <= r->sft_done) return 0;
    SftData sd;
    int member = r->job.st[PLAN_ACTOR_TRAIN].member;
    int rc = member ? sft_open(&sd, cfg, &r->ts, r->shape.V, r->deck_path) : 0;
    double bad = rc;
    comm_allreduce_max_f64(nr_world(), &bad, 1);
    if (bad != 0) {
        if (member && rc == 0) sft_close(&sd);
        return 2;
    }
    double t0 = nr_now();
    run_sft_steps(r, &sd);
    nr_log("sft: %d steps in %.2fs, loss %.4f -> %.4f\n", cfg->sft.steps, nr_now() - t0, r->sft_first, r->sft_last);
    if (member) sft_close(&sd);
    return 0;
}

/* collective over nr_world(): greedy responses to the held-out prompts after `done` PPO steps: the /eval
 * row of the trace; returns the mean reward, keeps the accuracy for the verification block */
static double run_eval(RunCtx *r, int64_t done) {
    EvalRows rows = {0, 0, NULL}, *want = NULL;
    if (r->cfg->data.eval_responses[0] && r->held_out.text) {
        rows.n = r->held_out.text->ps->n; /* job_eval_greedy evaluates every eval prompt once */
        rows.maxr = r->cfg->ppo.max_response;
        rows.v = nr_xcalloc((size_t)rows.n * (EVAL_ROW_HEAD + rows.maxr), sizeof *rows.v);
        want = &rows;
    }
    EvalStats s = job_eval_greedy(&r->job, &r->held_out, want);
    if (want && r->eval_out) run_eval_responses_write(r->eval_out, &r->held_out, &rows, done);
    free(rows.v);
    double n = s.n > 0 ? s.n : 1;
    TraceEvalRow row = {done, (int32_t)s.n, s.correct / n, s.reward / n, s.formatted / n, s.len / n};
    trace_eval(r->tr, &row);
    r->eval_accuracy = row.accuracy;
    return row.reward;
}

#define RUN_SAMPLES 4 /* rows of a step that [trace] samples shows */

/* rank 0, a text run, every [trace] samples steps: the first rows of the step's batch, decoded, to the trace and
 * the log */
static void run_samples(RunCtx *r, int step) {
    int every = r->cfg->trace.samples;
    const Rollout *G = &r->job.G;
    if (every <= 0 || step % every != 0 || !r->ts.text || nr_rank() != 0) return;
    for (int b = 0; b < NR_MIN(RUN_SAMPLES, G->B); b++) {
        size_t np = 0, nr = 0;
        char *prompt = NULL, why[200];
        if (tok_decode(r->ts.text->tk, G->seq + (size_t)b * G->T, (size_t)G->plen[b], &prompt, &np, why, sizeof why))
            nr_fatal("run_samples: %s", why); /* the prompt's ids are the tokenizer's own */
        char *resp = task_text_decode(&r->ts, G->seq + (size_t)b * G->T + G->plen[b], G->resp_len[b], &nr);
        trace_sample(r->tr, step, b, G->task_reward[b], prompt, resp);
        for (size_t i = 0; i < nr; i++) /* one log line: the trace keeps the text as it is */
            if (resp[i] == '\n' || resp[i] == '\r') resp[i] = ' ';
        nr_log("sample: step %d row %d reward %.3f: %.*s%s\n", step, b, G->task_reward[b], (int)NR_MIN(nr, 300), resp,
               nr > 300 ? "..." : "");
        free(prompt);
        free(resp);
    }
}

/* the per-step and per-rank records of the PPO steps, the latter for the job's largest world (the launched one,
   or [elastic] grow_to's) */
static void run_alloc_steps(RunCtx *r) {
    size_t steps = (size_t)r->cfg->ppo.steps + 1;
    size_t ranks = (size_t)NR_MAX(NR_MAX(r->world, r->launched), r->cfg->elastic.grow_to) + 1;
    r->rewards = nr_xcalloc(steps, sizeof(double));
    r->kls = nr_xcalloc(steps, sizeof(double));
    r->gaps = nr_xcalloc(steps, sizeof(double));
    r->genkls = nr_xcalloc(steps, sizeof(double));
    free(r->busy);
    free(r->idle);
    r->busy = nr_xcalloc(ranks, sizeof(double));
    r->idle = nr_xcalloc(ranks, sizeof(double));
}

/* collective over nr_world(): every stage starts from the (warm-started) actor — gen, inf and ref take it
 * whole, the critic and reward network take it as their trunk — unless a restart loaded them all and no SFT
 * step ran since; then the greedy evaluation before PPO. */
static void run_start_ppo(RunCtx *r) {
    const Config *cfg = r->cfg;
    if (!r->restarted || r->sft_ran || r->partial) {
        int from_actor[6] = {PLAN_ACTOR_GEN, PLAN_ACTOR_INF, PLAN_REF_INF, PLAN_CRITIC_INF, PLAN_CRITIC_TRAIN,
                             PLAN_REWARD_INF};
        job_sync(&r->job, PLAN_ACTOR_TRAIN, from_actor, 6);
    }
    r->eval_before = run_eval(r, r->start_step);
    nr_log("eval: greedy task reward on held-out prompts: %.4f\n", r->eval_before);
    if (cfg->ppo.steps > 0) {
        if (r->job.have_rm)
            nr_log("reward: rule reward + %.3g x frozen reward network (UNTRAINED: random value head)\n",
                   cfg->reward.network_weight);
        else if (r->pd.on)
            nr_log("reward: [reward] rule %s on the decoded response (task %s, format reward %g)\n", cfg->reward.rule,
                   cfg->reward.task, cfg->reward.format_reward);
        else
            nr_log("reward: rule-based task reward (%s), partial credit per position\n", cfg->task.names);
    }
    run_alloc_steps(r);
}

/* collective over nr_world(), before PPO step `step`: the live planner's decision and the deck's
 * [switch]. Returns 0, or −1 when the run must stop (r->stop says why). */
static int run_change_plan(RunCtx *r, int step) {
    double moved = 0;
    if (r->lp.on) {
        int before = r->plan_id;
        if (live_decide(&r->lp, &r->job, &r->inj, step, r->tr, &r->plan_id, r->plan_text, sizeof r->plan_text,
                        &moved, r->why, sizeof r->why) != 0) {
            run_stop(r->stop, "planner: %s; stopping the run", r->why);
            return -1;
        }
        r->transitions += r->plan_id - before;
        r->transition_bytes += moved;
    }
    if (r->cfg->sw.step == step) {
        moved = 0;
        int rc = run_switch(&r->job, r->cfg, step, r->plan_text, sizeof r->plan_text, r->tr, r->plan_id, &moved,
                            r->why, sizeof r->why);
        if (rc < 0) {
            run_stop(r->stop, "%s; stopping the run", r->why);
            return -1;
        }
        r->plan_id += rc == 0;
        r->transitions += rc == 0;
        r->transition_bytes += moved;
    }
    if (r->cfg->sw.step == step + 1) { /* the [switch] comes before the next step: its communicators now */
        PlanConfig np = r->cfg->sw.plan;
        PlanLimits lim = job_plan_limits(r->cfg, r->world);
        PlanError perr;
        if (plan_resolve(&np, &lim, &perr) == 0) { /* not resolved: the switch is refused when it comes */
            double t0 = nr_now();
            int n = job_prepare_comms(&r->job, &np);
            if (n > 0)
                nr_log("switch before step %d: its %d new communicator set(s) built now, before step %d, in %.4f s "
                       "(what their set-up has left runs while step %d does; the move takes them)\n", step + 1, n,
                       step, nr_now() - t0, step);
        }
    }
    return 0;
}

/* collective over nr_world(): each rank's time in its model-stages' work in the step of dt seconds (rank 0's
 * wall) and the rest, which it waited: the trace's /ranks rows, and the sums the run's end reports */
static void run_rank_times(RunCtx *r, int step, double dt) {
    Job *j = &r->job;
    int n = j->size;
    double wall[PLAN_NSTAGES], cpu[PLAN_NSTAGES], *v = nr_xcalloc((size_t)3 * n, sizeof(double));
    counters_rank_last(wall, cpu);
    for (int i = 0; i < PLAN_NSTAGES; i++) v[j->rank] += wall[i];
    v[n + j->rank] = j->rq.producer;
    v[2 * n + j->rank] = j->rq.consumer;
    comm_allreduce_sum_f64(j->world, v, (size_t)3 * n);
    if (j->rank == 0) {
        TraceRanksRow *rows = nr_xcalloc((size_t)n, sizeof *rows);
        for (int k = 0; k < n; k++) {
            double idle = dt > v[k] ? dt - v[k] : 0;
            rows[k] = (TraceRanksRow){step, k, (int32_t)v[n + k], (int32_t)v[2 * n + k], v[k], idle};
            if (k < r->world) r->busy[k] += v[k], r->idle[k] += idle;
        }
        trace_ranks(r->tr, rows, n);
        free(rows);
    }
    free(v);
}

/* rank 0: the steps' mean time, the rollout's bytes, the staleness of the batches trained and each rank's mean
 * busy and idle time per step (what an asynchronous plan wins back: docs/ASYNC.md) */
static void run_report_ranks(const RunCtx *r) {
    int n = r->done_steps;
    if (n <= 0 || r->job.rank != 0) return;
    nr_log("rollout: K = %d ([ppo] max_staleness); %.2f s a step; %.0f bytes a step between ranks; staleness of the "
           "batches trained:", r->job.staleness, r->step_s / n, r->rollout_bytes / n);
    for (int k = 0; k < ROLLQ_SLOTS; k++)
        if (r->stale_hist[k]) nr_log(" %d: %lld step(s)", k, (long long)r->stale_hist[k]);
    nr_log("\nranks: busy / idle seconds per step:");
    for (int k = 0; k < NR_MIN(r->world, 64); k++) nr_log(" %d: %.3f / %.3f", k, r->busy[k] / n, r->idle[k] / n);
    nr_log("%s\n", r->world > 64 ? " ..." : "");
}

/* collective over nr_world(): PPO step `step`, what the planner observes of it, its trace row and its
 * progress line. Returns 0, or −1 on a non-finite loss or gradient (the run must stop). */
static int run_ppo_step(RunCtx *r, int step) {
    Job *j = &r->job;
    StepStats st;
    memset(&st, 0, sizeof st);
    double times[4], t0 = nr_now();
    int bad = job_step(j, step, &st, times);
    double dt = nr_now() - t0;
    live_observe(&r->lp, j, step, &st, dt);
    r->rewards[r->done_steps] = st.reward;
    r->kls[r->done_steps] = st.kl;
    r->gaps[r->done_steps] = st.logp_gap;
    r->genkls[r->done_steps] = st.gen_kl;
    if (j->rq.needer) r->tok_hash = hash_tokens(r->tok_hash, &j->G); /* rank 0 reports it; a needer has G */
    r->step_s += dt;
    r->seq_tokens += st.seq_tokens;
    r->rollout_bytes += st.rollout_bytes;
    r->stale_hist[NR_MIN(NR_MAX((int)st.staleness, 0), ROLLQ_SLOTS - 1)]++;
    run_rank_times(r, step, dt);
    r->done_steps++;
    r->sync_time += times[3];
    r->sync_bytes = j->sync_bytes;
    TraceStep ts = {step, t0, dt, {times[0], times[1], times[2], times[3]}, st.tokens, st.reward, st.kl,
                    st.pg_loss, st.vf_loss, st.entropy, st.resp_len, st.clipfrac, st.approx_kl, st.grad_norm_actor,
                    st.grad_norm_critic, j->sync_bytes, j->G.T, j->G.T - rollout_longest(&j->G), &j->plan, r->plan_id,
                    st.kl_k3, st.logp_gap, st.gen_kl, st.tis_mean, st.tis_capped, (int64_t)st.gen_version,
                    (int64_t)st.staleness, st.rollout_bytes, j->staleness, (int64_t)st.seq_tokens};
    trace_step(r->tr, nr_world(), &ts); /* collective */
    if (bad) {
        run_stop(r->stop, "step %d: non-finite loss or gradient (policy %g, value %g); stopping the run", step,
                 st.pg_loss, st.vf_loss);
        r->nonfinite = 1;
        return -1;
    }
    if (step % r->cfg->run.log_every == 0 || step + 1 == r->cfg->ppo.steps) {
        char ex[96]; /* the first sequence, cut to the buffer with "..." (responses run to hundreds of tokens) */
        ex[0] = 0;
        if (j->rank == 0) run_sample_line(&j->G, ex, sizeof ex); /* rank 0 has the rollout (a needer) */
        int grpo = ppo_is_grpo(r->cfg); /* no value loss: the k3 KL term of the actor loss in its column */
        nr_log("step %4d | reward %.3f | kl %+.4f | pg %+.4f | %s %.4f | ent %.3f | len %.2f | "
               "%.3fs: gen %.3fs inf %.3fs train %.3fs sync %.3fs | %.0f tok/s | %s (%.2f)\n",
               step, st.reward, st.kl, st.pg_loss, grpo ? "k3" : "vf", grpo ? st.kl_k3 : st.vf_loss, st.entropy,
               st.resp_len, dt, times[0], times[1], times[2], times[3], st.tokens / dt, ex,
               j->rank == 0 ? j->G.task_reward[0] : 0.0);
    }
    return 0;
}

/* ---- ranks that die (ft.h, recover.h; docs/ELASTIC.md) ------------------------------------------ */

/* local: the run's numbers now, at the start of step `step`, into *s (path: the checkpoint of that step, or ""
   for the copies in memory) */
static void run_snap_to(RunCtx *r, struct RunSnap *s, int64_t step, const char *path) {
    s->step = step;
    s->done_steps = r->done_steps;
    s->transitions = r->transitions;
    s->tok_hash = r->tok_hash;
    s->sync_time = r->sync_time;
    s->transition_bytes = r->transition_bytes;
    snprintf(s->path, sizeof s->path, "%s", path);
}

/* local: the run's numbers at the checkpoint of step `step` (path), which a recovery goes back to */
static void run_snap(RunCtx *r, int64_t step, const char *path) { run_snap_to(r, &r->snap, step, path); }

/* local: the run goes back to the numbers of s (the steps after it are redone) */
static void run_snap_restore(RunCtx *r, const struct RunSnap *s) {
    r->done_steps = s->done_steps;
    r->transitions = s->transitions;
    r->tok_hash = s->tok_hash;
    r->sync_time = s->sync_time;
    r->transition_bytes = s->transition_bytes;
}

/* under ULFM with [elastic] in_memory, at the start of PPO step `step` (collective with [elastic] buddy, else
 * local): the shards' copies in memory a recovery goes back to (memrec.h), at the first step after a start or a
 * recovery and every buddy_every steps. None while batches generated ahead wait ([ppo] max_staleness): the
 * queue is not copied. */
static void run_mem_copies(RunCtx *r, int step) {
    const Config *cfg = r->cfg;
    if (!ft_on() || !cfg->elastic.in_memory) return;
    if (step != r->next_step && step % cfg->elastic.buddy_every != 0) return;
    if (r->job.staleness > 0 || r->job.rq.gen_next > step) {
        r->mc.step = -1;
        return;
    }
    mem_copies_take(&r->mc, &r->job, step, cfg->elastic.buddy);
    run_snap_to(r, &r->msnap, step, "");
}

/* local: ft_shrink's first act: every communicator of the job revoked */
static void run_revoke(void *ctx) { job_revoke(&((RunCtx *)ctx)->job); }

/* collective over nr_world(), before the first PPO step under ULFM: the recovery needs a checkpoint to go
 * back to, so one of the starting state is written (unless the series has it: a restart from it) */
static void run_ft_start(RunCtx *r) {
    const Config *cfg = r->cfg;
    if (cfg->ckpt.every <= 0) {
        nr_log("ft: [ckpt] every = 0: no checkpoint to go back to; a rank that dies %s\n", cfg->elastic.in_memory ?
               "is recovered from the copies in memory where they hold every shard, else stops the run" : "stops the run");
        return;
    }
    char path[JOB_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s_step%06lld.h5", cfg->ckpt.dir, cfg->run.name, (long long)r->start_step);
    int64_t have = r->job.rank == 0 && access(path, R_OK) == 0 && r->restarted;
    comm_bcast(nr_world(), &have, sizeof have, 0);
    if (!have && job_checkpoint(&r->job, r->start_step, cfg->sft.steps, r->deck_text, r->plan_text, path, sizeof path,
                                r->why, sizeof r->why) != 0) {
        nr_log("ft: the starting checkpoint failed (%s): a rank that dies before the first scheduled checkpoint "
               "stops the run\n", r->why);
        return;
    }
    run_snap(r, r->start_step, path);
    nr_log("ft: fault tolerance on (ULFM): a rank that dies is recovered %sfrom the newest checkpoint, now %s\n",
           cfg->elastic.in_memory ? "from the shards' copies in memory where they hold every shard, else " : "", path);
}

/* collective over nr_world(): the survivors agree on the snapshot to go back to (the oldest any of them holds:
 * a checkpoint whose last collective failed on some ranks counts on none), which every survivor then holds.
 * Returns 0, or −1 when there is none. */
static int run_snap_agree(RunCtx *r) {
    int64_t v[2] = {r->snap.step, -r->snap.step}; /* min and max */
    comm_allreduce_min_i64(nr_world(), v, 2);
    if (v[0] < 0) return -1;
    int64_t root = r->snap.step == v[0] ? r->job.rank : INT32_MAX;
    comm_allreduce_min_i64(nr_world(), &root, 1);
    comm_bcast(nr_world(), &r->snap, sizeof r->snap, (int)root);
    return 0;
}

/* why run_rebuild rebuilds the job: ranks died, ranks left with notice (SIGUSR2), or processes joined to grow it
   ([elastic] grow_to) */
typedef enum { REBUILD_DIED, REBUILD_LEFT, REBUILD_GREW } RebuildWhy;

static int run_rebuild(RunCtx *r, FtFailure *f, RebuildWhy why);

/* collective over the survivors' world, with [elastic] respawn: as many new processes as the job was launched
 * with less the ranks left, spawned and merged into the world after them (ft_spawn); they take part in
 * run_rebuild from run_join. A spawn that fails leaves the survivors to go on alone, which the output says. */
static void run_respawn(RunCtx *r, FtFailure *f) {
    int n = r->launched - f->new_size;
    if (!r->cfg->elastic.respawn || n <= 0) return;
    char why[512];
    if (ft_spawn(n, f, why, sizeof why) != 0) {
        nr_log("ft: [elastic] respawn: %s; the %d rank(s) go on alone\n", why, f->new_size);
        return;
    }
    r->ranks_joined += n;
    nr_log("ft: [elastic] respawn: %d new process(es) spawned and joined in %.3f s: %d rank(s)\n", n, f->spawn_s,
           f->new_size);
}

/* What the survivors tell the processes that join them (rank 0's account, broadcast over the joined world). */
typedef struct JoinNews {
    FtFailure f;
    RebuildWhy why;
    int launched, ranks_lost, ranks_joined, ranks_left, recoveries, traced, leave_moved;
} JoinNews;

/* collective over the joined world where processes joined (f->joined): the survivors' rank 0 says what
 * happened; a joiner takes it (its own rank kept) */
static void run_join_news(RunCtx *r, FtFailure *f, RebuildWhy *why) {
    JoinNews m = {*f, *why, r->launched, r->ranks_lost, r->ranks_joined, r->ranks_left, r->recoveries,
                  r->tr != NULL, r->leave_moved};
    comm_bcast(nr_world(), &m, sizeof m, 0);
    if (!ft_joined() || r->have_job) return;
    int me = comm_rank(nr_world());
    *f = m.f;
    f->new_rank = me, f->old_rank = -1;
    *why = m.why;
    r->launched = m.launched, r->ranks_lost = m.ranks_lost, r->ranks_joined = m.ranks_joined;
    r->ranks_left = m.ranks_left, r->recoveries = m.recoveries, r->leave_moved = m.leave_moved;
    if (!m.traced) {
        trace_close(r->tr, MPI_COMM_NULL, NULL, 0, 0);
        r->tr = NULL;
    }
}

/* collective over the survivors' world after ranks died or left: the replacements ([elastic] respawn), what
 * happened told to them, then run_rebuild with them. Returns as run_rebuild. */
static int run_respawn_rebuild(RunCtx *r, FtFailure *f, RebuildWhy why) {
    run_respawn(r, f);
    if (f->joined) run_join_news(r, f, &why);
    return run_rebuild(r, f, why);
}

/* collective over the survivors, after ft_try ended the steps: shrink the world, then run_respawn_rebuild.
 * Returns 0, or −1 when the run must stop (r->stop says why). */
static int run_recover(RunCtx *r, FtFailure *f) {
    char why[512];
    if (ft_shrink(f, why, sizeof why) != 0) {
        run_stop(r->stop, "ranks failed (%s) and the survivors could not shrink the world: %s", f->where, why);
        return -1;
    }
    r->recoveries++;
    r->ranks_lost += f->nfailed;
    return run_respawn_rebuild(r, f, REBUILD_DIED);
}

/* run_recover under a recovery point of its own (run_recover_all) */
typedef struct RecoverTry {
    RunCtx *r;
    FtFailure f;
    int rc;
} RecoverTry;

static void run_recover_step(void *ctx) {
    RecoverTry *t = ctx;
    t->rc = run_recover(t->r, &t->f);
}

/* collective over the survivors, after ft_try ended the steps: run_recover, itself under a recovery point: a rank
 * that dies while the others recover (ranks of one node dying one after another, seen apart) is recovered in turn,
 * from what the copies in memory or the checkpoint still hold. Returns as run_recover. */
static int run_recover_all(RunCtx *r, FtFailure *f) {
    RecoverTry t = {r, *f, 0};
    for (int k = 0; k < 64; k++) {
        FtFailure again;
        if (ft_try(run_recover_step, &t, &again) == 0) return t.rc;
        nr_log("ft: another rank failed during the recovery (%s); recovering again\n", again.where);
        t.f = again;
    }
    run_stop(r->stop, "ranks kept failing during the recovery (64 times); stopping the run");
    return -1;
}

/* "2,5" of f's failed (or left) ranks in the world they left, and " (launched as 3,7)" where those are not their
 * MPI_COMM_WORLD ranks (a world shrunk before) */
static void run_ranks_text(const FtFailure *f, char *out, size_t len) {
    size_t k = 0;
    out[0] = 0;
    for (int i = 0; i < f->nfailed && i < 64 && k + 16 < len; i++)
        k += (size_t)snprintf(out + k, len - k, "%s%d", i ? "," : "", f->failed[i]);
    int same = 1;
    for (int i = 0; i < f->nfailed && i < 64; i++) same = same && f->launched[i] == f->failed[i];
    if (same) return;
    k += (size_t)snprintf(out + k, k < len ? len - k : 0, " (launched as ");
    for (int i = 0; i < f->nfailed && i < 64 && k + 16 < len; i++)
        k += (size_t)snprintf(out + k, len - k, "%s%d", i ? "," : "", f->launched[i]);
    if (k + 2 < len) snprintf(out + k, len - k, ")");
}

#define MIB (1024.0 * 1024.0)

/* collective over the ranks that go on, after ranks died ([elastic] in_memory): the job rebuilt from the
 * survivors' copies in memory (memrec.h): built empty on the replicas the copies make, filled from them, moved
 * by the transition engine to the survivors' plan nc->plan, the generation and scoring copies made by the
 * weight sync; the run's numbers back at the copies' step (*step). Returns 0 with `used` saying from what, or 1
 * (said) when the copies cannot: the caller reads the checkpoint. */
static int run_rebuild_memory(RunCtx *r, const Config *nc, int joined, int64_t *step, char *used, size_t len) {
    if (!nc->elastic.in_memory) return 1;
    char why[1024], how[600];
    PlanConfig R;
    int pick[PLAN_NSTAGES];
    int64_t s = mem_agree_step(&r->mc, nr_world(), joined, why, sizeof why);
    if (s < 0 || mem_recover_plan(&r->mc, nr_world(), &nc->plan, nc->ppo.batch, nc->ppo.minibatch, &R, pick, how,
                                  sizeof how, why, sizeof why) != 0) {
        nr_log("ft: state in memory: %s%s; from the newest checkpoint instead\n", why,
               s >= 0 && !nc->elastic.buddy ? " ([elastic] buddy = yes keeps a copy of such a shard on another rank)" : "");
        mem_copies_clear(&r->mc);
        return 1;
    }
    job_build_on(&r->job, nr_world(), nc, r->be, &r->ts, &R, 1);
    r->have_job = 1;
    int64_t bad = mem_recover_fill(&r->mc, &r->job, pick, why, sizeof why) != 0;
    if (bad) nr_warn("ft: %s", why);
    comm_allreduce_max_i64(nr_world(), &bad, 1);
    JobTxReport rep;
    memset(&rep, 0, sizeof rep);
    int rc = bad ? -1 : job_transition(&r->job, &nc->plan, 0, &rep, why, sizeof why);
    if (rc != 0) {
        mem_copies_clear(&r->mc);
        nr_log("ft: state in memory: %s; from the newest checkpoint instead\n",
               bad ? "a copy did not fit its shard (stderr says where)" : why);
        job_free(&r->job);
        r->have_job = 0;
        return 1;
    }
    job_sync_engine(&r->job);
    *step = s;
    comm_bcast(nr_world(), &r->msnap, sizeof r->msnap, 0); /* the lowest survivor's numbers, to joined processes too */
    run_snap_restore(r, &r->msnap);
    snprintf(used, len, "the copies in memory of the start of step %lld (%s; %.2f MiB moved onto the survivors' "
             "plan; no checkpoint read)", (long long)s, how, rep.bytes_moved / MIB);
    return 0;
}

/* collective over the ranks that go on: the job built on nc's plan and loaded from the newest checkpoint (the
 * survivors agree on it: run_snap_agree), the run's numbers back at it (*step). Returns 0 with `used` the file,
 * or −1 when the run must stop (r->stop says why). */
static int run_rebuild_checkpoint(RunCtx *r, const Config *nc, const char *failed, const char *gone, int64_t *step,
                                  char *used, size_t len) {
    char why[512];
    if (run_snap_agree(r) != 0) {
        run_stop(r->stop, "rank(s) %s %s before any checkpoint this run could go back to ([ckpt] every); "
                 "stopping the run", failed, gone);
        return -1;
    }
    job_build(&r->job, nr_world(), nc, r->be, &r->ts);
    r->have_job = 1;
    int64_t sft = 0;
    int partial = 0;
    if (job_restart(&r->job, r->snap.path, step, &sft, &partial, used, len, why, sizeof why) != 0) {
        run_stop(r->stop, "rank(s) %s %s and the ranks left cannot load %s: %s", failed, gone, r->snap.path, why);
        return -1;
    }
    run_snap_restore(r, &r->snap);
    r->last_ckpt = *step;
    return 0;
}

/* collective over the ranks that go on (nr_world(), already the new world), after ranks died, left with notice or
 * joined (RebuildWhy): drop the old job, build the job on the plan for the ranks there now and put the state in:
 * after a death from the copies in memory where they hold every shard (run_rebuild_memory), else from the newest
 * checkpoint, the run's numbers rolled back to it; the loop then goes on (redoes the steps) from there.
 * Returns 0, or −1 when the run must stop (r->stop says why). */
static int run_rebuild(RunCtx *r, FtFailure *f, RebuildWhy kind) {
    char why[512];
    double t0 = nr_now();
    char failed[400];
    run_ranks_text(f, failed, sizeof failed);
    int rank0_died = f->nfailed > 0 && f->failed[0] == 0, joined = !r->have_job;
    const char *gone = kind == REBUILD_GREW ? "joined" : kind == REBUILD_LEFT ? "left" : "died";
    int stayed = f->new_size - f->joined;
    if (kind == REBUILD_GREW)
        nr_log("ft: the job grows from %d to %d rank(s) (%s)\n", stayed, f->new_size, f->where);
    else if (kind == REBUILD_LEFT)
        nr_log("ft: rank(s) %s of %d left with notice (%s); %d rank(s) go on\n", failed, f->old_size, f->where,
               stayed);
    else
        nr_log("ft: FAILURE: rank(s) %s of %d died; seen here as %s at %.6f (epoch s); the survivors agreed and "
               "shrank to %d rank(s) in %.3f s (this rank, old %d, is rank %d)\n", failed, f->old_size, f->where,
               f->epoch_detect, stayed, f->shrink_s, f->old_rank, f->new_rank);
    /* the old job goes without MPI (a joiner has none); the trace stays with its writer when it survived */
    if (r->have_job) job_abandon(&r->job);
    r->have_job = 0;
    if (r->have_lp) live_free(&r->lp);
    r->have_lp = 0;
    if (r->have_inj) inject_free(&r->inj);
    r->have_inj = 0;
    if (rank0_died) { /* local on a survivor: the trace's file was the dead rank 0's */
        trace_close(r->tr, MPI_COMM_NULL, NULL, 0, 0);
        r->tr = NULL;
    }
    r->world = f->new_size;
    /* the survivors' plan */
    if (!r->ftcfg) r->ftcfg = nr_xmalloc(sizeof *r->ftcfg);
    if (r->ftcfg != r->cfg) *r->ftcfg = *r->cfg;
    Config *nc = r->ftcfg;
    if (job_survivor_plan(nc, r->world, &nc->plan, why, sizeof why) != 0) {
        run_stop(r->stop, "rank(s) %s %s: %s; stopping the run", failed, gone, why);
        return -1;
    }
    r->cfg = nc;
    if (job_memory_check(nr_world(), nc, &r->ts, why, sizeof why) != 0) {
        run_stop(r->stop, "rank(s) %s %s and the models do not fit the %d ranks left: %s", failed, gone, r->world, why);
        return -1;
    }
    const char *ikey = "";
    if (inject_init(&r->inj, nc, r->world, comm_rank(nr_world()), &ikey, why, sizeof why) != 0) {
        /* its rank lists name the old world's ranks: the survivors run without the slowdown and pool changes */
        nr_log("ft: [inject] slow_ranks and leave_ranks are off on the survivors (%s)\n", why);
        inject_free(&r->inj);
        nc->inject.slow_ranks[0] = nc->inject.leave_ranks[0] = 0;
        nc->inject.slow_step = nc->inject.slow_until = nc->inject.leave_step = nc->inject.join_step = -1;
        nc->inject.slow_period = 0;
        if (inject_init(&r->inj, nc, r->world, comm_rank(nr_world()), &ikey, why, sizeof why) != 0)
            nr_fatal("inject_init on the survivors: %s", why);
    }
    r->have_inj = 1;
    /* the state: from memory, or from the newest checkpoint */
    char used[JOB_PATH_MAX + 800];
    int64_t step = 0;
    int memory = kind == REBUILD_DIED || (kind == REBUILD_LEFT && r->leave_moved);
    r->leave_moved = 0;
    if (!memory || run_rebuild_memory(r, nc, joined, &step, used, sizeof used) != 0) {
        mem_copies_clear(&r->mc);
        if (run_rebuild_checkpoint(r, nc, failed, gone, &step, used, sizeof used) != 0) return -1;
        r->recovered_ckpt += kind == REBUILD_DIED;
    } else r->recovered_memory += kind == REBUILD_DIED;
    live_init(&r->lp, &r->job);
    r->have_lp = 1;
    char tmp[JOB_PATH_MAX + 64]; /* a checkpoint being written when the rank died is deleted whole */
    if (job_ckpt_discard_partial(&r->job, tmp, sizeof tmp) > 0)
        nr_log("ft: discarded %s, the checkpoint being written when the rank died (the complete ones stay)\n", tmp);
    r->next_step = step;
    /* the trace goes on (a new file where rank 0 died with it): the failure, then the survivors' plan */
    plan_format(&r->job.plan, r->plan_text, sizeof r->plan_text);
    if (rank0_died) {
        TraceJob tj = {nc, r->deck_text, r->plan_text, r->be, r->job.ac, r->job.cc, r->job.have_rm, step};
        const char *tkey = "";
        int rc = 0;
        r->tr = trace_open(nr_world(), &tj, &rc, &tkey, why, sizeof why);
        if (rc) nr_log("ft: no trace after the recovery: %s\n", why);
        live_trace_start(&r->lp, &r->job, r->tr);
    }
    if (kind != REBUILD_GREW)
        trace_drift(r->tr, step, kind == REBUILD_LEFT ? "rank_left" : "rank_failed", (double)f->nfailed, NAN);
    if (f->joined) trace_drift(r->tr, step, "rank_joined", (double)f->joined, NAN);
    char src[2400];
    if (kind == REBUILD_GREW)
        snprintf(src, sizeof src, "growth: %d rank(s) and %d process(es) spawned (%s) from %s", stayed, f->joined,
                 f->where, used);
    else
        snprintf(src, sizeof src, "recovery: rank(s) %s of %d %s (%s); %d survivor(s)%s from %s", failed, f->old_size,
                 kind == REBUILD_LEFT ? "left with notice" : "died", f->where, stayed,
                 f->joined ? " and the process(es) spawned to replace them ([elastic] respawn)" : "", used);
    trace_plan(r->tr, ++r->plan_id, step, r->plan_text, src, NAN, NAN);
    double dt = nr_now() - t0;
    if (kind != REBUILD_DIED) /* left or grew: no step redone */
        nr_log("ft: rebuilt in %.3f s: %s, %lld PPO steps done; going on from step %lld on %d rank(s) under the "
               "plan:\n%s", dt, used, (long long)step, (long long)step, r->world, r->plan_text);
    else {
        r->recovery_s = fmax(r->recovery_s, dt + f->shrink_s);
        nr_log("ft: recovered in %.3f s after the shrink (%.3f s from detection on rank 0): %s, %lld PPO steps done; "
               "redoing from step %lld on %d rank(s) under the plan:\n%s", dt, dt + f->shrink_s, used, (long long)step,
               (long long)step, r->world, r->plan_text);
    }
    if (r->lp.on) nr_log("ft: the planner places its own plan for the %d rank(s) before the next step\n", r->world);
    mem_copies_clear(&r->mc); /* kept until the rebuild is whole (a failure in it goes back to them); the next step
                                 takes new ones */
    return 0;
}

/* collective over nr_world(), after PPO step `step`: the scheduled checkpoint, and one at a stop signal
 * (SIGTERM, SIGUSR1). Returns 0 to go on, 1 to stop (a signal: r->stop_sig), −1 when the checkpoint failed, 2 when
 * ranks leave with notice here or the job grows from this checkpoint (under ULFM: r->leave_at, r->grow_at). */
static int run_step_boundary(RunCtx *r, int step) {
    const Config *cfg = r->cfg;
    if (ft_on() && step + 1 < cfg->ppo.steps) { /* ranks told to leave (SIGUSR2) leave here: run_leave */
        int64_t lv = ft_leave_requested();
        comm_allreduce_max_i64(nr_world(), &lv, 1);
        if (lv) {
            r->leave_at = step + 1;
            return 2;
        }
    }
    int due = cfg->ckpt.every > 0 && (step + 1) % cfg->ckpt.every == 0;
    r->stop_sig = step + 1 < cfg->ppo.steps ? job_stop_requested(&r->job) : 0;
    if (!due && !r->stop_sig) return 0;
    char path[JOB_PATH_MAX];
    if (job_checkpoint(&r->job, step + 1, cfg->sft.steps, r->deck_text, r->plan_text, path, sizeof path, r->why,
                       sizeof r->why) != 0) {
        ft_check(); /* under ULFM a rank that died in the parallel write fails it: that is recovered, not fatal */
        run_stop(r->stop, "checkpoint after step %d failed: %s; stopping the run", step, r->why);
        return -1;
    }
    r->last_ckpt = step + 1;
    run_snap(r, step + 1, path);
    nr_log("ckpt: %s\n", path);
    if (!r->stop_sig && cfg->elastic.grow_to > r->world && step + 1 < cfg->ppo.steps) {
        r->grow_at = step + 1; /* from this checkpoint on more ranks: run_grow */
        return 2;
    }
    if (!r->stop_sig) return 0;
    snprintf(r->stop_ckpt, sizeof r->stop_ckpt, "%s", path);
    return 1;
}

/* collective over nr_world() (every rank alive), at step boundary `step` where the ranks with `me` = 1 leave
 * ([elastic] in_memory): a planned transition moves the job onto the survivors' plan over the ranks that stay
 * (their old numbers), so the leavers hold nothing, and every rank copies its shards into memory; the rebuild on
 * the ranks that stay then takes those copies (run_rebuild_memory), nothing read or redone. Returns 0, or 1 (said)
 * when it cannot: the caller writes a checkpoint instead. */
static int run_leave_move(RunCtx *r, int me, int64_t step) {
    Job *j = &r->job;
    if (!r->cfg->elastic.in_memory || j->staleness > 0 || j->rq.gen_next > step) return 1;
    int n = j->size, *leaving = nr_xmalloc((size_t)n * sizeof(int)), *stay = nr_xmalloc((size_t)n * sizeof(int));
    mpiCheck(MPI_Allgather(&me, 1, MPI_INT, leaving, 1, MPI_INT, nr_world()));
    int ns = 0;
    for (int k = 0; k < n; k++)
        if (!leaving[k]) stay[ns++] = k;
    PlanConfig ps;
    char why[512];
    int rc = job_survivor_plan(r->cfg, ns, &ps, why, sizeof why);
    for (int i = 0; rc == 0 && i < PLAN_NSTAGES; i++) /* over the ranks that stay, as numbered now */
        for (int k = 0; k < ps.stage[i].nranks; k++) ps.stage[i].ranks[k] = (int16_t)stay[ps.stage[i].ranks[k]];
    free(leaving);
    free(stay);
    JobTxReport rep;
    double t0 = nr_now();
    if (rc == 0) rc = job_transition(j, &ps, 0, &rep, why, sizeof why);
    if (rc != 0) {
        nr_log("ft: the leaving ranks' state could not move by a transition (%s); a checkpoint instead\n", why);
        return 1;
    }
    nr_log("ft: before step %lld the job moved onto the %d rank(s) that stay by a planned transition (%.2f MiB in "
           "%.3f s); the leaving ranks hold nothing now\n", (long long)step, ns, rep.bytes_moved / MIB, rep.measured_s);
    job_tx_log(&rep, (int)step, t0, r->plan_id, r->plan_id + 1, r->tr);
    plan_format(&j->plan, r->plan_text, sizeof r->plan_text);
    trace_plan(r->tr, ++r->plan_id, step, r->plan_text, "leave with notice (SIGUSR2): the job moved off the leaving "
               "rank(s) before they go", NAN, NAN);
    r->transitions++;
    r->transition_bytes += rep.bytes_moved;
    mem_copies_take(&r->mc, j, step, 0);
    run_snap_to(r, &r->msnap, step, "");
    return 0;
}

/* collective over nr_world(), at the step boundary r->leave_at, where some ranks were told to leave (SIGUSR2):
 * the job moves off them by a planned transition (run_leave_move; else a checkpoint of that step); the leaving
 * ranks exit; the others make a world of their own and go on on a plan for themselves (run_rebuild), with no
 * step redone. Every rank told to leave: the run stops there as at SIGUSR1, with a checkpoint. Returns 0, or −1
 * when the run must stop (r->stop says why). */
static int run_leave(RunCtx *r) {
    const Config *cfg = r->cfg;
    int64_t step = r->leave_at;
    r->leave_at = -1;
    int me = ft_leave_requested();
    int64_t n_leave = me;
    comm_allreduce_sum_i64(nr_world(), &n_leave, 1);
    r->leave_moved = n_leave < r->world && run_leave_move(r, me, step) == 0;
    if (!r->leave_moved && r->last_ckpt != step) {
        char path[JOB_PATH_MAX];
        if (job_checkpoint(&r->job, step, cfg->sft.steps, r->deck_text, r->plan_text, path, sizeof path, r->why,
                           sizeof r->why) != 0) {
            run_stop(r->stop, "ranks told to leave (SIGUSR2) before step %lld, and the checkpoint failed: %s; "
                     "stopping the run", (long long)step, r->why);
            return -1;
        }
        r->last_ckpt = step;
        run_snap(r, step, path);
        nr_log("ckpt: %s\n", path);
    }
    if (n_leave >= r->world) { /* nobody stays: stopped, as by SIGUSR1 */
        r->stop_sig = SIGUSR2;
        snprintf(r->stop_ckpt, sizeof r->stop_ckpt, "%s", r->snap.path);
        return 0;
    }
    FtFailure f;
    char why[256];
    if (me) {
        char status[160];
        snprintf(status, sizeof status, "rank 0 left with notice (SIGUSR2) before step %lld; the run goes on in a "
                 "new trace", (long long)step);
        if (r->tr && r->job.rank == 0) trace_close(r->tr, MPI_COMM_NULL, status, r->done_steps, 0);
        r->tr = r->job.rank == 0 ? NULL : r->tr;
        fprintf(stderr, "nereus: rank %d: leaving the job with notice (SIGUSR2) before step %lld; %s%s\n", r->job.rank,
                (long long)step, r->leave_moved ? "its state moved to the ranks that stay" : "checkpoint ",
                r->leave_moved ? "" : r->snap.path);
        if (ft_split_leavers(1, &f, why, sizeof why) != 0) nr_fatal("leaving: %s", why);
        ft_leave_exit();
    }
    if (ft_split_leavers(0, &f, why, sizeof why) != 0) {
        run_stop(r->stop, "ranks left with notice and the others could not make a world: %s", why);
        return -1;
    }
    snprintf(f.where, sizeof f.where, "SIGUSR2, before step %lld", (long long)step);
    r->ranks_left += f.nfailed;
    return run_respawn_rebuild(r, &f, REBUILD_LEFT);
}

/* collective over nr_world(), at the step boundary r->grow_at, right after its checkpoint ([elastic] grow_to):
 * processes spawned up to grow_to join, and every rank rebuilds the job on all of them from that checkpoint with
 * no step redone. Where the spawn fails (no slot free) the job goes on as it is and tries again at the next
 * checkpoint. Returns 0, or −1 when the run must stop (r->stop says why). */
static int run_grow(RunCtx *r) {
    int64_t step = r->grow_at, n = r->cfg->elastic.grow_to - r->world;
    r->grow_at = -1;
    FtFailure f;
    memset(&f, 0, sizeof f);
    f.old_size = f.new_size = r->world;
    f.old_rank = f.new_rank = comm_rank(nr_world());
    f.t_detect = nr_now();
    snprintf(f.where, sizeof f.where, "[elastic] grow_to = %d, before step %lld", r->cfg->elastic.grow_to,
             (long long)step);
    char why[512];
    if (ft_spawn((int)n, &f, why, sizeof why) != 0) {
        nr_log("ft: [elastic] grow_to: %s; the job goes on on %d rank(s) and tries again at the next checkpoint\n",
               why, r->world);
        return 0;
    }
    r->ranks_joined += (int)n;
    r->launched = NR_MAX(r->launched, f.new_size); /* respawn brings the job back to its grown size */
    nr_log("ft: [elastic] grow_to: %lld new process(es) spawned and joined in %.3f s: %d rank(s)\n", (long long)n,
           f.spawn_s, f.new_size);
    RebuildWhy grew = REBUILD_GREW;
    run_join_news(r, &f, &grew);
    return run_rebuild(r, &f, grew);
}

/* the PPO steps from r->start_step (run_ppo; under ULFM inside its recovery point, ft_try) */
static void run_ppo_steps(void *ctx) {
    RunCtx *r = ctx;
    for (int step = (int)r->next_step; step < r->cfg->ppo.steps; step++) {
        const Config *cfg = r->cfg;
        run_mem_copies(r, step);
        inject_begin_step(&r->inj, step, &r->job.plan);
        if (run_change_plan(r, step) != 0 || run_ppo_step(r, step) != 0) {
            r->status = 1;
            return;
        }
        run_samples(r, step);
        int every = cfg->data.eval_every;
        if (every > 0 && (step + 1) % every == 0 && step + 1 < cfg->ppo.steps) {
            double rw = run_eval(r, step + 1);
            nr_log("eval: after step %d: greedy reward %.4f, accuracy %.4f on held-out prompts\n", step, rw,
                   r->eval_accuracy);
        }
        int rc = run_step_boundary(r, step);
        if (rc < 0) r->status = 1;
        if (rc != 0) return;
    }
}

/* collective over nr_world(): the PPO steps (unless SFT stopped the run), then the greedy evaluation after
 * them when they all ran. Under ULFM (ft_on) the steps run under a recovery point: when ranks die, the
 * survivors go back to the newest checkpoint (run_recover) and go on from there, as often as it happens. */
static void run_ppo_loop(RunCtx *r);
static void run_ppo_end(RunCtx *r, double run0);

static void run_ppo(RunCtx *r) {
    const Config *cfg = r->cfg;
    if (cfg->ppo.steps <= 0 || r->status != 0 || r->stop_sig) return;
    double run0 = nr_now();
    r->next_step = r->start_step;
    if (ft_on()) {
        ft_set_revoke(run_revoke, r);
        run_ft_start(r);
    }
    run_ppo_loop(r);
    run_ppo_end(r, run0);
}

/* collective over nr_world(): the PPO steps from r->next_step, each recovery point's failure recovered and each
 * leave with notice carried out, until the last step or a stop */
static void run_ppo_loop(RunCtx *r) {
    for (;;) {
        FtFailure f;
        if (r->status != 0) break;
        if (ft_try(run_ppo_steps, r, &f) == 0) {
            if (r->leave_at < 0 && r->grow_at < 0) break;
            if ((r->leave_at >= 0 ? run_leave(r) : run_grow(r)) != 0) r->status = 1;
            if (r->status != 0 || r->stop_sig) break;
            continue;
        }
        if (run_recover_all(r, &f) != 0) {
            r->status = 1;
            break;
        }
    }
}

/* collective over nr_world(): after the PPO steps, their report and the evaluation after them */
static void run_ppo_end(RunCtx *r, double run0) {
    const Config *cfg = r->cfg; /* the survivors' after a recovery */
    r->ppo_s = nr_now() - run0;
    inject_begin_step(&r->inj, -1, NULL); /* no injected slowdown past the PPO steps */
    live_report(&r->lp);
    nr_log("ppo: %d steps in %.2fs; weight sync (%s) %.3fs in all, %.0f bytes per step\n", r->done_steps, r->ppo_s,
           cfg->transition.sync, r->sync_time, r->sync_bytes);
    run_report_ranks(r);
    if (r->mc.taken)
        nr_log("ft: copies in memory ([elastic] in_memory%s): taken %lld time(s), %.3f s in all on rank 0, %.1f MiB "
               "held there now\n", cfg->elastic.buddy ? ", buddy" : "", (long long)r->mc.taken, r->mc.seconds,
               r->mc.bytes / MIB);
    if (r->status == 0 && !r->stop_sig) {
        r->eval_after = run_eval(r, r->start_step + r->done_steps);
        nr_log("eval: greedy task reward on held-out prompts: %.4f after PPO (%.4f before)\n", r->eval_after,
               r->eval_before);
    }
}

/* collective over nr_world(): a scheduled run ends with a checkpoint of its last state; a stopped one
 * says where to restart from. */
static void run_finish(RunCtx *r) {
    const Config *cfg = r->cfg;
    r->final_step = r->restarted ? r->start_step + r->done_steps : r->done_steps;
    if (r->status == 0 && !r->stop_sig && cfg->ckpt.every > 0 && cfg->ppo.steps > 0 && r->last_ckpt != r->final_step) {
        char path[JOB_PATH_MAX];
        if (job_checkpoint(&r->job, r->final_step, cfg->sft.steps, r->deck_text, r->plan_text, path, sizeof path,
                           r->why, sizeof r->why) != 0) {
            run_stop(r->stop, "the final checkpoint failed: %s", r->why);
            r->status = 1;
        } else {
            nr_log("ckpt: %s\n", path);
        }
    }
    if (r->stop_sig)
        nr_log("nereus: stopped by signal %d (%s) at a step boundary; checkpoint: %s — restart with "
               "--restart %s (or [run] restart = latest)\n",
               r->stop_sig,
               r->stop_sig == SIGTERM ? "SIGTERM" : r->stop_sig == SIGUSR1 ? "SIGUSR1" : r->stop_sig == SIGUSR2 ? "SIGUSR2" : "?",
               r->stop_ckpt[0] ? r->stop_ckpt : "(none written)", r->stop_ckpt[0] ? r->stop_ckpt : "FILE");
}

/* The models' fingerprints for the verification block: Σ|x| (checksum) and the bit-exact hash, the same under
 * any layout and in `nereus-ckpt info` of a checkpoint of these weights. */
typedef struct RunFingerprints {
    double cs[PLAN_NSTAGES];
    uint64_t hash[PLAN_NSTAGES];
} RunFingerprints;

/* collective over nr_world(): the trained and frozen models' fingerprints (actor only without PPO) */
static void run_fingerprints(RunCtx *r, RunFingerprints *fp) {
    memset(fp, 0, sizeof *fp);
    int ids[4] = {PLAN_ACTOR_TRAIN, PLAN_REF_INF, PLAN_CRITIC_TRAIN, PLAN_REWARD_INF};
    int n = r->cfg->ppo.steps > 0 ? 4 : 1;
    for (int i = 0; i < n; i++)
        if (job_stage_holds_model(&r->job, ids[i])) fp->cs[ids[i]] = job_checksum(&r->job, ids[i]);
    for (int i = 0; i < n; i++)
        if (job_stage_holds_model(&r->job, ids[i])) fp->hash[ids[i]] = job_params_hash(&r->job, ids[i]);
}

/* rank 0: the verification block's reward, KL and token lines over the n PPO steps run (task reward means of
 * the first and last min(10, n)) */
static void run_print_rewards(const RunCtx *r, int n) {
    int k = NR_MIN(10, n);
    double gain = mean_range(r->rewards, n - k, n) - mean_range(r->rewards, 0, k);
    nr_log("verify.reward_first10: %.6f\n", mean_range(r->rewards, 0, k));
    nr_log("verify.reward_last10: %.6f\n", mean_range(r->rewards, n - k, n));
    nr_log("verify.reward_gain: %+.6f\n", gain);
    /* the deck's own expectation, apart from verify.status (finished and finite) */
    nr_log("verify.learned: %s\n", gain > r->cfg->run.expect_reward_gain ? "yes" : "no");
    nr_log("verify.kl_last10: %.6f\n", mean_range(r->kls, n - k, n));
    nr_log("verify.tokens_hash: %016llx\n", (unsigned long long)r->tok_hash);
    nr_log("verify.gen_dtype: %s\n", job_stage_dtype(&r->job, PLAN_ACTOR_GEN));
    nr_log("verify.score_dtype: %s\n", job_stage_dtype(&r->job, PLAN_ACTOR_INF));
    /* the generating actor against the scoring one on the same tokens: 0 where they compute the same bits */
    nr_log("verify.logp_gap_mean: %.6e\n", mean_range(r->gaps, 0, n));
    nr_log("verify.gen_kl_mean: %+.6e\n", mean_range(r->genkls, 0, n));
    if (ppo_tis_cap(r->cfg) > 0) nr_log("verify.tis_cap: %g\n", ppo_tis_cap(r->cfg));
    nr_log("verify.max_staleness: %d\n", r->job.staleness);
    nr_log("verify.staleness_hist:");
    for (int k = 0; k < ROLLQ_SLOTS; k++)
        if (r->stale_hist[k]) nr_log(" %d:%lld", k, (long long)r->stale_hist[k]);
    nr_log("\n");
    nr_log("verify.rollout_bytes_per_step: %.0f\n", r->rollout_bytes / n);
    /* the times (the lines that differ between two runs of the same deck): what throughput checks read */
    nr_log("verify.ppo_mean_step_s: %.6f\n", r->step_s / n);
    nr_log("verify.ppo_seq_tokens_per_s: %.2f\n", r->step_s > 0 ? r->seq_tokens / r->step_s : 0.0);
}

/* rank 0: the verification block's model lines */
static void run_print_fingerprints(const RunCtx *r, const RunFingerprints *fp) {
    int ppo = r->cfg->ppo.steps > 0, rm = r->job.have_rm, critic = job_stage_holds_model(&r->job, PLAN_CRITIC_TRAIN);
    nr_log("verify.checksum.actor: %.12e\n", fp->cs[PLAN_ACTOR_TRAIN]);
    if (ppo) {
        nr_log("verify.checksum.ref: %.12e\n", fp->cs[PLAN_REF_INF]);
        if (critic) nr_log("verify.checksum.critic: %.12e\n", fp->cs[PLAN_CRITIC_TRAIN]);
        else nr_log("verify.checksum.critic: none (algorithm = grpo: no critic)\n");
        if (rm) nr_log("verify.checksum.reward: %.12e\n", fp->cs[PLAN_REWARD_INF]);
        else nr_log("verify.checksum.reward: none (rule-based reward, no network)\n");
    }
    nr_log("verify.hash.actor: %016llx\n", (unsigned long long)fp->hash[PLAN_ACTOR_TRAIN]);
    if (ppo) {
        nr_log("verify.hash.ref: %016llx\n", (unsigned long long)fp->hash[PLAN_REF_INF]);
        if (critic) nr_log("verify.hash.critic: %016llx\n", (unsigned long long)fp->hash[PLAN_CRITIC_TRAIN]);
        if (rm) nr_log("verify.hash.reward: %016llx\n", (unsigned long long)fp->hash[PLAN_REWARD_INF]);
    }
}

/* collective over nr_world(): each rank's peak resident memory (getrusage's maxrss over the process's life),
 * printed by rank 0, rank by rank, with the largest (not in the verification block: it varies by a few pages
 * between two runs of the same deck). The run's last collective and only a report: under ULFM (the world
 * returns errors) a failure reported here, such as a rank that left with notice seen late, is logged, not fatal. */
static void run_peak_memory(void) {
    struct rusage ru;
    double mine = getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss / 1024.0 : 0, peak = 0;
    int n;
    mpiCheck(MPI_Comm_size(nr_world(), &n));
    double *all = nr_rank() == 0 ? nr_xcalloc((size_t)n, sizeof(double)) : NULL;
    int rc = MPI_Gather(&mine, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, nr_world());
    if (rc != MPI_SUCCESS) {
        char err[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, err, &len);
        fprintf(stderr, "nereus: rank %d: peak memory not gathered (%s); this rank's: %.0f MiB\n", nr_rank(), err,
                mine);
        free(all);
        return;
    }
    if (nr_rank() != 0) return;
    nr_log("memory: peak resident MiB per rank:");
    for (int k = 0; k < n; k++) {
        peak = NR_MAX(peak, all[k]);
        if (k < 64) nr_log(" %d: %.0f", k, all[k]);
    }
    nr_log("%s; largest %.0f\n", n > 64 ? " ..." : "", peak);
    free(all);
}

/* collective over nr_world(): the trace closed with the run's status, then the verification block
 * (stable numbers only, no times, one per line). Returns the exit status: 0 (pass) or 1. */
static int run_verify(RunCtx *r) {
    const Config *cfg = r->cfg;
    int n = r->done_steps;
    int finite = !r->nonfinite; /* a run stopped on another error is finite and fails */
    for (int i = 0; i < n; i++) finite = finite && isfinite(r->rewards[i]);
    int pass = r->status == 0 && finite;
    RunFingerprints fp;
    run_fingerprints(r, &fp);
    char tstatus[96];
    if (r->stop_sig)
        snprintf(tstatus, sizeof tstatus, "stopped by signal %d after step %lld", r->stop_sig, (long long)r->final_step);
    else
        snprintf(tstatus, sizeof tstatus, "%s", pass ? "pass" : "fail");
    trace_close(r->tr, nr_world(), tstatus, n, r->ppo_s);
    r->tr = NULL;
    run_peak_memory();
    nr_log("--- verification ---\n");
    if (cfg->sft.steps > 0) {
        nr_log("verify.sft_steps: %d\n", cfg->sft.steps);
        nr_log("verify.sft_loss_first: %.6f\n", r->sft_first);
        nr_log("verify.sft_loss_last: %.6f\n", r->sft_last);
    }
    if (ppo_is_grpo(cfg)) nr_log("verify.algorithm: grpo (group_size %d)\n", cfg->ppo.group_size);
    nr_log("verify.ppo_steps: %d\n", n);
    if (strcmp(r->be->name, "cpu") == 0) nr_log("verify.cpu_kernels: %s\n", cpu_kernels_name(cpu_kernels_path()));
    if (cfg->sw.step >= 0 || r->lp.on) {
        nr_log("verify.transitions: %d\n", r->transitions);
        nr_log("verify.transition_bytes: %.0f\n", r->transition_bytes);
        /* communicator sets built before a move that it took (the seconds are in each transition's line and in
           the trace's /transitions: setup_s, engine_s, measured_s; not here, where two runs compare equal) */
        nr_log("verify.transition_sets_prebuilt: %d\n", r->job.tx_sets_prebuilt);
    }
    if (r->restarted) nr_log("verify.restart_step: %lld\n", (long long)r->start_step);
    if (r->recoveries) { /* ranks died and the run went on: how often, how many, the longest recovery (s) */
        nr_log("verify.ft_recoveries: %d\n", r->recoveries);
        nr_log("verify.ranks_lost: %d\n", r->ranks_lost);
        nr_log("verify.recovery_s: %.3f\n", r->recovery_s);
        /* where the state came from: memory (every recovery from the copies in memory), checkpoint, or both */
        nr_log("verify.recovered_from: %s\n", !r->recovered_ckpt ? "memory" : !r->recovered_memory ? "checkpoint" :
               "memory+checkpoint");
    }
    if (r->ranks_joined) nr_log("verify.ranks_joined: %d\n", r->ranks_joined); /* spawned replacements */
    if (r->ranks_left) nr_log("verify.ft_ranks_left: %d\n", r->ranks_left); /* ranks left with notice (SIGUSR2) */
    if (r->stop_sig) nr_log("verify.stopped_at_step: %lld\n", (long long)r->final_step);
    if (n > 0) run_print_rewards(r, n);
    nr_log("verify.eval_greedy_before_ppo: %.6f\n", r->eval_before);
    if (n > 0 && r->status == 0 && !r->stop_sig) nr_log("verify.eval_greedy_after_ppo: %.6f\n", r->eval_after);
    if (r->pd.on) nr_log("verify.eval.accuracy: %.6f\n", r->eval_accuracy); /* the last evaluation's */
    run_print_fingerprints(r, &fp);
    nr_log("verify.finite: %s\n", finite ? "yes" : "no");
    if (r->stop[0]) nr_log("verify.stopped: %s\n", r->stop);
    nr_log("verify.status: %s\n", pass ? "pass" : "fail");
    return pass ? 0 : 1;
}

/* A process spawned to replace ranks ([elastic] respawn; ft_joined): its own set-up among the processes spawned
 * with it (the backend, the tasks, the text data, the deck's text, the trace's counters), then, in the world
 * joined with the survivors, what happened (run_join_news), the rebuild with them (run_rebuild: the survivors'
 * plan and checkpoint) and the PPO steps from where they go on, to the end of the run as theirs. Returns as
 * run_job. */
static int run_join(RunCtx *r) {
    nr_set_quiet(1); /* its set-up says nothing: the job's rank 0 speaks for it */
    r->world = ft_joined_size(); /* the checks of the deck against the job it joins */
    int rc = run_select_backend(r);
    if (rc == 0) rc = run_check_job(r);
    if (rc) return rc; /* the same deck as the survivors': refused there too, before any of them ran */
    r->deck_text = deck_resolved_text(r->deck, r->cfg);
    job_install_signals();
    if (strcmp(r->cfg->trace.file, "none") != 0) r->tr = trace_join(nr_world(), r->cfg);
    ft_join_world();
    nr_set_quiet(0);
    r->world = comm_size(nr_world());
    FtFailure f;
    memset(&f, 0, sizeof f);
    RebuildWhy why = REBUILD_DIED; /* the survivors' rank 0 says which (run_join_news) */
    run_join_news(r, &f, &why);
    run_alloc_steps(r);
    r->snap.step = INT64_MAX; /* none of its own: the survivors' is taken (run_snap_agree) */
    ft_set_revoke(run_revoke, r);
    double run0 = nr_now();
    if (run_rebuild(r, &f, why) != 0) r->status = 1;
    else run_ppo_loop(r);
    run_ppo_end(r, run0);
    run_finish(r);
    return run_verify(r);
}

int run_job(const Config *cfg, const Deck *deck, const char *deck_path) {
    RunCtx *r = nr_xcalloc(1, sizeof *r);
    run_ctx_init(r, cfg, deck, deck_path);
    if (ft_joined()) {
        int rc = run_join(r);
        run_release(r);
        free(r);
        return rc;
    }
    int rc = run_select_backend(r);
    if (rc == 0) rc = run_check_job(r);
    if (rc == 0) rc = run_build(r);
    if (rc == 0) rc = run_restart(r);
    if (rc == 0 && r->restarted) rc = run_check_switch(r);
    if (rc == 0) rc = run_init_from(r);
    if (rc == 0) rc = run_open_outputs(r);
    if (rc == 0) rc = run_sft(r);
    if (rc == 0) {
        run_start_ppo(r);
        run_ppo(r);
        run_finish(r);
        rc = run_verify(r);
    }
    run_release(r);
    free(r);
    return rc;
}
