/* run.c — the job driver: checks what the deck means for the models (vocab,
 * context, what the plan asks of this build), builds the job's EMUs and
 * models, runs the SFT warm-start and the PPO steps, prints one line per
 * step (rank 0) and the verification block. */
#include "nereus/run.h"

#include <math.h>
#include <mpi.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nereus/backend.h"
#ifdef NEREUS_CUDA
#include "nereus/backend_cuda.h"
#endif
#include "nereus/comm.h"
#include "nereus/emu.h"
#include "nereus/inject.h"
#include "nereus/job.h"
#include "nereus/plan.h"
#include "nereus/planner_live.h"
#include "nereus/trace.h"
#include "nereus/util.h"


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
        for (int t = r->P; t < r->P + r->resp_len[b]; t++) {
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
    PlanLimits lim = {world, cfg->model.n_head, cfg->model.n_layer, cfg->ppo.batch, cfg->ppo.minibatch};
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
    int64_t v[3] = {comm_node_size(MPI_COMM_WORLD), online > 0 ? online : 1, nr_cores_allowed()};
    struct { double v; int r; } me = {(double)(v[0] * t) / (double)v[1], nr_rank()}, worst;
    mpiCheck(MPI_Allreduce(&me, &worst, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD)); /* the fullest node */
    int64_t w[3], least = v[2];
    memcpy(w, v, sizeof w);
    mpiCheck(MPI_Bcast(w, 3, MPI_INT64_T, worst.r, MPI_COMM_WORLD));
    mpiCheck(MPI_Allreduce(MPI_IN_PLACE, &least, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD));
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

int run_job(const Config *cfg, const Deck *deck, const char *deck_path) {
    int world = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    char why[512] = "";
    const Backend *be = backend_select(cfg->run.backend, why, sizeof why);
    if (!be) return deck_error_at(deck, "run.backend", "%s", why);
    if (why[0]) nr_log("nereus: %s\n", why); /* e.g. why "auto" did not pick CUDA */
    be->set_threads(cfg->run.blas_threads);
    warn_threads(cfg, be);
    if (strcmp(cfg->run.precision, "tf32") == 0) {
#ifdef NEREUS_CUDA
        if (strcmp(be->name, "cuda") == 0) backend_cuda_set_tf32(1);
        else
#endif
            nr_log("note: [run] precision = tf32 applies to the CUDA backend; the %s backend computes fp32\n", be->name);
    }

    TaskSet ts;
    if (task_parse(&ts, cfg->task.names, cfg->task.digits, (uint64_t)cfg->run.seed, why, sizeof why) != 0)
        return deck_error_at(deck, "task.names", "%s", why);
    JobShape shape;
    job_shape_of(cfg, &ts, &shape);
    int use_tokens = shape.use_tokens, V = shape.V, P = shape.P, Tsft = shape.Tsft;
    if (V < TASK_VOCAB && cfg->ppo.steps > 0)
        return deck_error_at(deck, "model.vocab_size", "vocab_size %d is smaller than the task vocabulary (%d tokens)",
                             V, TASK_VOCAB);
    int Tppo = P + cfg->ppo.max_response;
    if (cfg->ppo.steps > 0 && Tppo > cfg->model.max_seq)
        return deck_error_at(deck, "model.max_seq",
                             "max_seq %d is shorter than a prompt (%d tokens for %d digits) plus max_response %d",
                             cfg->model.max_seq, P, cfg->task.digits, cfg->ppo.max_response);
    if (cfg->sft.steps > 0 && Tsft > cfg->model.max_seq)
        return deck_error_at(deck, "model.max_seq", "max_seq %d is shorter than an SFT sequence (%d tokens)",
                             cfg->model.max_seq, Tsft);
    int rc = check_sft_split(cfg, deck);
    if (rc) return rc;
    if (strcmp(cfg->planner.policy, "off") != 0 && cfg->sw.step >= 0)
        return deck_error_at(deck, "planner.policy",
                             "[planner] policy = %s and [switch] step = %d both change the plan during the run; "
                             "use one (policy = off for the [switch])",
                             cfg->planner.policy, cfg->sw.step);
    if (strcmp(cfg->planner.policy, "sweep") == 0) {
        const PlannerConfig *pc = &cfg->planner;
        int K = pc->sweep_calibrate < pc->sweep_plans ? pc->sweep_calibrate : pc->sweep_plans - 1;
        int nc = planner_sweep_controls(pc->sweep_plans, K, pc->sweep_reference);
        int need = pc->warmup + (pc->sweep_plans + nc + 2 * PLANNER_SWEEP_FINAL) * pc->sweep_steps;
        if (cfg->ppo.steps < need)
            return deck_error_at(deck, "ppo.steps",
                                 "[planner] policy = sweep runs warmup %d + (sweep_plans %d + %d control(s) "
                                 "(sweep_reference %d) + %d x 2 for the search's choice and the best sampled plan "
                                 "again) x sweep_steps %d = %d PPO steps; [ppo] steps = %d is too few",
                                 pc->warmup, pc->sweep_plans, nc, pc->sweep_reference, PLANNER_SWEEP_FINAL,
                                 pc->sweep_steps, need, cfg->ppo.steps);
    }
    Injector inj;
    {
        const char *ikey = "";
        int me = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &me);
        if (inject_init(&inj, cfg, world, me, &ikey, why, sizeof why) != 0) {
            inject_free(&inj);
            return deck_error_at(deck, ikey, "%s", why);
        }
    }
    if (cfg->ppo.max_response < task_max_answer(&ts) + 1)
        nr_log("note: [ppo] max_response %d cannot hold the longest answer (%d tokens + EOS); rewards are capped\n",
               cfg->ppo.max_response, task_max_answer(&ts));

    nr_log("nereus: %s — deck %s, %d rank(s), backend %s, %d BLAS thread(s) per rank\n", cfg->run.name, deck_path,
           world, be->name, cfg->run.blas_threads);
    nr_log("--- resolved deck ---\n");
    if (nr_rank() == 0) deck_print_resolved(deck, cfg, stdout);
    nr_log("---------------------\n");
    char plan_text[4096];
    plan_format(&cfg->plan, plan_text, sizeof plan_text);
    nr_log("plan:\n%s", plan_text);

    char injected[1024];
    if (inject_describe(&inj, injected, sizeof injected)) nr_log("%s\n", injected);
    char mwhy[1024];
    if (job_memory_check(MPI_COMM_WORLD, cfg, &ts, mwhy, sizeof mwhy) != 0) {
        inject_free(&inj);
        return deck_error_at(deck, "model.n_embd", "%s", mwhy);
    }
    Job job;
    job_build(&job, MPI_COMM_WORLD, cfg, be, &ts);
    LivePlanner lp;
    live_init(&lp, &job);
    if (live_check_fits(&lp, &job, why, sizeof why) != 0) {
        rc = deck_error_at(deck, cfg->planner.memory_gib > 0 ? "planner.memory_gib" : "planner.policy",
                           "no plan fits the models in this job's %d rank(s): %s", world, why);
        live_free(&lp);
        inject_free(&inj);
        job_free(&job);
        return rc;
    }
    nr_log("model: GPT-2 L=%d C=%d NH=%d V=%d T=%d: %zu parameters (actor), %zu (critic)\n", cfg->model.n_layer,
           cfg->model.n_embd, cfg->model.n_head, V, cfg->model.max_seq, job.n_actor, job.n_critic);
    nr_log("communicators: %d group set(s) for the %d model-stages (model-stages of one layout on the same ranks "
           "share one)\n", emu_comm_sets(), PLAN_NSTAGES);
    char *deck_text = deck_resolved_text(deck, cfg);
    job_install_signals();

    /* restart: every stage's model (and the trained models' AdamW state) from
     * the checkpoint, under this deck's plan and rank count */
    int64_t start_step = 0, sft_done = 0;
    int restarted = 0, partial = 0;
    if (cfg->run.restart[0]) {
        char used[JOB_PATH_MAX];
        if (job_restart(&job, cfg->run.restart, &start_step, &sft_done, &partial, used, sizeof used, why,
                        sizeof why) != 0) {
            rc = deck_error_at(deck, "run.restart", "cannot restart: %s", why);
            free(deck_text);
            live_free(&lp);
            inject_free(&inj);
            job_free(&job);
            return rc;
        }
        restarted = 1;
        nr_log("restart: %s: %lld SFT and %lld PPO steps done; continuing under this deck's plan on %d rank(s)\n",
               used, (long long)sft_done, (long long)start_step, world);
        if (start_step > cfg->ppo.steps)
            nr_log("note: the checkpoint is past [ppo] steps = %d: no PPO step to run\n", cfg->ppo.steps);
    }

    /* scheduled checkpoints need their directory: found unusable now, not after the first steps; a later
       step's file there is another run's (job_checkpoint's rotation leaves it) */
    if (cfg->ckpt.every > 0 && cfg->ppo.steps > 0) {
        if (job_ckpt_dir(&job, why, sizeof why) != 0) {
            rc = deck_error_at(deck, "ckpt.dir", "%s ([ckpt] every = %d writes there)", why, cfg->ckpt.every);
            free(deck_text);
            live_free(&lp);
            inject_free(&inj);
            job_free(&job);
            return rc;
        }
        int64_t newest = job.rank == 0 ? job_ckpt_newest(&job) : -1;
        if (newest > start_step)
            nr_warn("[ckpt] dir %s already holds %s_step%06lld.h5, past this run's start (PPO step %lld): another "
                    "run's, or a later one; this run's checkpoint rotation leaves it, but restart = latest would "
                    "take it", cfg->ckpt.dir, cfg->run.name, (long long)newest, (long long)start_step);
    }
    /* the trace (rank 0 writes it; every rank counts its model-stages) */
    TraceJob tj = {cfg, deck_text, plan_text, be, job.ac, job.cc, job.have_rm, start_step};
    const char *tkey = "";
    Trace *tr = trace_open(MPI_COMM_WORLD, &tj, &rc, &tkey, why, sizeof why);
    if (rc) {
        rc = deck_error_at(deck, tkey, "%s", why);
        free(deck_text);
        live_free(&lp);
        inject_free(&inj);
        job_free(&job);
        return rc;
    }
    int plan_id = 0;
    live_trace_start(&lp, &job, tr);

    int status = 0, stop_sig = 0, nonfinite = 0;
    char stop_ckpt[JOB_PATH_MAX] = "", stop[256] = ""; /* stop: why the run stopped on an error (run_stop) */
    double sft_first = NAN, sft_last = NAN;
    int sft_ran = 0;
    if (cfg->sft.steps > sft_done) {
        SftData sd;
        int member = job.st[PLAN_ACTOR_TRAIN].member;
        rc = member ? sft_open(&sd, cfg, &ts, V, deck_path) : 0;
        /* a data error seen by actor.train's ranks stops every rank */
        double bad = rc;
        comm_allreduce_max_f64(MPI_COMM_WORLD, &bad, 1);
        if (bad != 0) {
            if (member && rc == 0) sft_close(&sd);
            trace_close(tr, MPI_COMM_WORLD, NULL, 0, 0);
            live_free(&lp);
            inject_free(&inj);
            job_free(&job);
            return 2;
        }
        double t0 = nr_now();
        for (int s = (int)sft_done; s < cfg->sft.steps; s++) {
            double ts0 = nr_now();
            float loss = job_sft_step(&job, &sd, s);
            if (!sft_ran) sft_first = loss;
            sft_ran++;
            sft_last = loss;
            if (!isfinite(loss)) {
                run_stop(stop, "sft step %d: non-finite loss (%g); stopping the run", s, loss);
                status = 1, nonfinite = 1;
                break;
            }
            if (s % cfg->run.log_every == 0 || s + 1 == cfg->sft.steps)
                nr_log("sft %4d | loss %.4f | %.3fs | %s\n", s, loss, nr_now() - ts0, use_tokens ? "tokens" : "task");
            if (s + 1 < cfg->sft.steps && (stop_sig = job_stop_requested(&job))) {
                if (job_checkpoint(&job, 0, s + 1, deck_text, plan_text, stop_ckpt, sizeof stop_ckpt, why,
                                   sizeof why) != 0) {
                    run_stop(stop, "stop signal %d: the checkpoint failed: %s", stop_sig, why);
                    status = 1;
                }
                break;
            }
        }
        nr_log("sft: %d steps in %.2fs, loss %.4f -> %.4f\n", cfg->sft.steps, nr_now() - t0, sft_first, sft_last);
        if (member) sft_close(&sd);
    }
    /* every stage starts from the (warm-started) actor: gen, inf and ref take
     * it whole, the critic and reward network take it as their trunk — unless
     * a restart loaded them all and no SFT step ran since */
    if (!restarted || sft_ran || partial) {
        int from_actor[6] = {PLAN_ACTOR_GEN, PLAN_ACTOR_INF, PLAN_REF_INF, PLAN_CRITIC_INF, PLAN_CRITIC_TRAIN,
                             PLAN_REWARD_INF};
        job_sync(&job, PLAN_ACTOR_TRAIN, from_actor, 6);
    }

    double eval_before = job_eval_greedy(&job), eval_after = NAN;
    nr_log("eval: greedy task reward on held-out prompts: %.4f\n", eval_before);
    if (cfg->ppo.steps > 0) {
        if (job.have_rm)
            nr_log("reward: rule reward + %.3g x frozen reward network (UNTRAINED: random value head)\n",
                   cfg->reward.network_weight);
        else
            nr_log("reward: rule-based task reward (%s), partial credit per position\n", cfg->task.names);
    }

    double *rewards = nr_xcalloc((size_t)cfg->ppo.steps + 1, sizeof(double));
    double *kls = nr_xcalloc((size_t)cfg->ppo.steps + 1, sizeof(double));
    int done_steps = 0; /* PPO steps run by this job (rewards[0 .. done_steps)) */
    int64_t last_ckpt = -1; /* step of the last checkpoint this job wrote */
    uint64_t tok_hash = 0xcbf29ce484222325ULL;
    double sync_time = 0, sync_bytes = 0, transition_bytes = 0;
    int transitions = 0;
    double ppo_s = 0;
    if (cfg->ppo.steps > 0 && status == 0 && !stop_sig) {
        double run0 = nr_now();
        for (int step = (int)start_step; step < cfg->ppo.steps; step++) {
            inject_begin_step(&inj, step, &job.plan);
            if (lp.on) {
                double moved = 0;
                int before = plan_id;
                if (live_decide(&lp, &job, &inj, step, tr, &plan_id, plan_text, sizeof plan_text, &moved, why,
                                sizeof why) != 0) {
                    run_stop(stop, "planner: %s; stopping the run", why);
                    status = 1;
                    break;
                }
                transitions += plan_id - before;
                transition_bytes += moved;
            }
            if (cfg->sw.step == step) {
                double moved = 0;
                int rc = run_switch(&job, cfg, step, plan_text, sizeof plan_text, tr, plan_id, &moved, why,
                                    sizeof why);
                if (rc < 0) {
                    run_stop(stop, "%s; stopping the run", why);
                    status = 1;
                    break;
                }
                plan_id += rc == 0;
                transitions += rc == 0;
                transition_bytes += moved;
            }
            StepStats st;
            memset(&st, 0, sizeof st);
            double times[4], t0 = nr_now();
            int bad = job_step(&job, step, &st, times);
            double dt = nr_now() - t0;
            live_observe(&lp, &job, step, &st, dt);
            rewards[done_steps] = st.reward;
            kls[done_steps] = st.kl;
            tok_hash = hash_tokens(tok_hash, &job.G);
            done_steps++;
            sync_time += times[3];
            sync_bytes = job.sync_bytes;
            TraceStep ts = {step, t0, dt, {times[0], times[1], times[2], times[3]}, st.tokens, st.reward, st.kl,
                            st.pg_loss, st.vf_loss, st.entropy, st.resp_len, st.clipfrac, st.approx_kl,
                            st.grad_norm_actor, st.grad_norm_critic, job.sync_bytes, job.G.T, job.G.P, &job.plan,
                            plan_id};
            trace_step(tr, MPI_COMM_WORLD, &ts); /* collective */
            if (bad) {
                run_stop(stop, "step %d: non-finite loss or gradient (policy %g, value %g); stopping the run", step,
                         st.pg_loss, st.vf_loss);
                status = 1, nonfinite = 1;
                break;
            }
            if (step % cfg->run.log_every == 0 || step + 1 == cfg->ppo.steps) {
                char ex[96];
                task_detok(job.G.seq, job.G.P + job.G.resp_len[0], ex);
                nr_log("step %4d | reward %.3f | kl %+.4f | pg %+.4f | vf %.4f | ent %.3f | len %.2f | "
                       "%.3fs: gen %.3fs inf %.3fs train %.3fs sync %.3fs | %.0f tok/s | %s (%.2f)\n",
                       step, st.reward, st.kl, st.pg_loss, st.vf_loss, st.entropy, st.resp_len, dt, times[0],
                       times[1], times[2], times[3], st.tokens / dt, ex, job.G.task_reward[0]);
            }
            /* the schedule, and a stop signal (SIGTERM, SIGUSR1) at this step boundary */
            int due = cfg->ckpt.every > 0 && (step + 1) % cfg->ckpt.every == 0;
            stop_sig = step + 1 < cfg->ppo.steps ? job_stop_requested(&job) : 0;
            if (due || stop_sig) {
                char path[JOB_PATH_MAX];
                if (job_checkpoint(&job, step + 1, cfg->sft.steps, deck_text, plan_text, path, sizeof path, why,
                                   sizeof why) != 0) {
                    run_stop(stop, "checkpoint after step %d failed: %s; stopping the run", step, why);
                    status = 1;
                    break;
                }
                last_ckpt = step + 1;
                nr_log("ckpt: %s\n", path);
                if (stop_sig) {
                    snprintf(stop_ckpt, sizeof stop_ckpt, "%s", path);
                    break;
                }
            }
        }
        ppo_s = nr_now() - run0;
        inject_begin_step(&inj, -1, NULL); /* no injected slowdown past the PPO steps */
        live_report(&lp);
        nr_log("ppo: %d steps in %.2fs; weight sync (%s) %.3fs in all, %.0f bytes per step\n", done_steps, ppo_s,
               cfg->transition.sync, sync_time, sync_bytes);
        if (status == 0 && !stop_sig) {
            eval_after = job_eval_greedy(&job);
            nr_log("eval: greedy task reward on held-out prompts: %.4f after PPO (%.4f before)\n", eval_after,
                   eval_before);
        }
    }

    /* a scheduled run ends with a checkpoint of its last state */
    int64_t final_step = restarted ? start_step + done_steps : done_steps;
    if (status == 0 && !stop_sig && cfg->ckpt.every > 0 && cfg->ppo.steps > 0 && last_ckpt != final_step) {
        char path[JOB_PATH_MAX];
        if (job_checkpoint(&job, final_step, cfg->sft.steps, deck_text, plan_text, path, sizeof path, why,
                           sizeof why) != 0) {
            run_stop(stop, "the final checkpoint failed: %s", why);
            status = 1;
        } else {
            nr_log("ckpt: %s\n", path);
        }
    }
    if (stop_sig)
        nr_log("nereus: stopped by signal %d (%s) at a step boundary; checkpoint: %s — restart with "
               "--restart %s (or [run] restart = latest)\n",
               stop_sig, stop_sig == SIGTERM ? "SIGTERM" : stop_sig == SIGUSR1 ? "SIGUSR1" : "?",
               stop_ckpt[0] ? stop_ckpt : "(none written)", stop_ckpt[0] ? stop_ckpt : "FILE");

    /* ---- verification block: stable numbers only (no times), one per line ---- */
    int n = done_steps, k = NR_MIN(10, n);
    int finite = !nonfinite, pass = status == 0; /* a run stopped on another error is finite and fails */
    for (int i = 0; i < n; i++) finite = finite && isfinite(rewards[i]);
    pass = pass && finite;
    double cs_actor = job_checksum(&job, PLAN_ACTOR_TRAIN);
    double cs_ref = 0, cs_critic = 0, cs_reward = 0;
    /* bit-exact fingerprints, the same under any layout and in `nereus-ckpt info` of a checkpoint of these weights */
    uint64_t h_actor = job_params_hash(&job, PLAN_ACTOR_TRAIN), h_ref = 0, h_critic = 0, h_reward = 0;
    if (cfg->ppo.steps > 0) {
        cs_ref = job_checksum(&job, PLAN_REF_INF);
        cs_critic = job_checksum(&job, PLAN_CRITIC_TRAIN);
        h_ref = job_params_hash(&job, PLAN_REF_INF);
        h_critic = job_params_hash(&job, PLAN_CRITIC_TRAIN);
        if (job.have_rm) {
            cs_reward = job_checksum(&job, PLAN_REWARD_INF);
            h_reward = job_params_hash(&job, PLAN_REWARD_INF);
        }
    }
    char tstatus[96];
    if (stop_sig)
        snprintf(tstatus, sizeof tstatus, "stopped by signal %d after step %lld", stop_sig, (long long)final_step);
    else
        snprintf(tstatus, sizeof tstatus, "%s", pass ? "pass" : "fail");
    trace_close(tr, MPI_COMM_WORLD, tstatus, n, ppo_s);
    nr_log("--- verification ---\n");
    if (cfg->sft.steps > 0) {
        nr_log("verify.sft_steps: %d\n", cfg->sft.steps);
        nr_log("verify.sft_loss_first: %.6f\n", sft_first);
        nr_log("verify.sft_loss_last: %.6f\n", sft_last);
    }
    nr_log("verify.ppo_steps: %d\n", n);
    if (cfg->sw.step >= 0 || lp.on) {
        nr_log("verify.transitions: %d\n", transitions);
        nr_log("verify.transition_bytes: %.0f\n", transition_bytes);
    }
    if (restarted) nr_log("verify.restart_step: %lld\n", (long long)start_step);
    if (stop_sig) nr_log("verify.stopped_at_step: %lld\n", (long long)final_step);
    if (n > 0) { /* task reward means of the first and last min(10, n) PPO steps */
        nr_log("verify.reward_first10: %.6f\n", mean_range(rewards, 0, k));
        nr_log("verify.reward_last10: %.6f\n", mean_range(rewards, n - k, n));
        nr_log("verify.reward_gain: %+.6f\n", mean_range(rewards, n - k, n) - mean_range(rewards, 0, k));
        nr_log("verify.kl_last10: %.6f\n", mean_range(kls, n - k, n));
        nr_log("verify.tokens_hash: %016llx\n", (unsigned long long)tok_hash);
    }
    nr_log("verify.eval_greedy_before_ppo: %.6f\n", eval_before);
    if (n > 0 && status == 0 && !stop_sig) nr_log("verify.eval_greedy_after_ppo: %.6f\n", eval_after);
    nr_log("verify.checksum.actor: %.12e\n", cs_actor);
    if (cfg->ppo.steps > 0) {
        nr_log("verify.checksum.ref: %.12e\n", cs_ref);
        nr_log("verify.checksum.critic: %.12e\n", cs_critic);
        if (job.have_rm) nr_log("verify.checksum.reward: %.12e\n", cs_reward);
        else nr_log("verify.checksum.reward: none (rule-based reward, no network)\n");
    }
    nr_log("verify.hash.actor: %016llx\n", (unsigned long long)h_actor);
    if (cfg->ppo.steps > 0) {
        nr_log("verify.hash.ref: %016llx\n", (unsigned long long)h_ref);
        nr_log("verify.hash.critic: %016llx\n", (unsigned long long)h_critic);
        if (job.have_rm) nr_log("verify.hash.reward: %016llx\n", (unsigned long long)h_reward);
    }
    nr_log("verify.finite: %s\n", finite ? "yes" : "no");
    if (stop[0]) nr_log("verify.stopped: %s\n", stop);
    nr_log("verify.status: %s\n", pass ? "pass" : "fail");
    free(rewards);
    free(kls);
    free(deck_text);
    live_free(&lp);
    inject_free(&inj);
    job_free(&job);
    return pass ? 0 : 1;
}
