/* run.c — the job driver: checks what the deck means for the models (vocab,
 * context), builds the four models, runs the SFT warm-start and the PPO
 * steps, prints one line per step and the verification block. */
#include "nereus/run.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/backend.h"
#include "nereus/model.h"
#include "nereus/ppo.h"
#include "nereus/task.h"
#include "nereus/util.h"

#define GPT2_VOCAB 50257

/* Mean of xs[lo, hi) */
static double mean_range(const double *xs, int lo, int hi) {
    double s = 0;
    for (int i = lo; i < hi; i++) s += xs[i];
    return hi > lo ? s / (hi - lo) : 0.0;
}

static void print_checksum(const char *name, const GPT *m) {
    nr_log("verify.checksum.%s: %.12e\n", name, gpt_checksum(m));
}

int run_job(const Config *cfg, const Deck *deck, const char *deck_path) {
    int world = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (world != 1) {
        if (nr_rank() == 0)
            fprintf(stderr, "nereus: this version runs a job on exactly 1 rank (got %d); "
                            "multi-rank EMU plans come with issue #3\n", world);
        return 2;
    }
    char why[512] = "";
    const Backend *be = backend_select(cfg->run.backend, why, sizeof why);
    if (!be) return deck_error_at(deck, "run.backend", "%s", why);
    if (why[0]) nr_log("nereus: %s\n", why); /* e.g. why "auto" did not pick CUDA */
    be->set_threads(cfg->run.blas_threads);

    TaskSet ts;
    if (task_parse(&ts, cfg->task.names, cfg->task.digits, (uint64_t)cfg->run.seed, why, sizeof why) != 0)
        return deck_error_at(deck, "task.names", "%s", why);
    int use_tokens = strcmp(cfg->sft.data, "tokens") == 0 && cfg->sft.steps > 0;
    int V = cfg->model.vocab_size ? cfg->model.vocab_size : (use_tokens ? GPT2_VOCAB : TASK_VOCAB);
    if (V < TASK_VOCAB && cfg->ppo.steps > 0)
        return deck_error_at(deck, "model.vocab_size", "vocab_size %d is smaller than the task vocabulary (%d tokens)",
                             V, TASK_VOCAB);
    int P = task_prompt_len(&ts);
    int Tppo = P + cfg->ppo.max_response;
    int Tsft = use_tokens ? (cfg->sft.seq > 0 ? cfg->sft.seq : cfg->model.max_seq) : P + task_max_answer(&ts) + 1;
    if (cfg->ppo.steps > 0 && Tppo > cfg->model.max_seq)
        return deck_error_at(deck, "model.max_seq",
                             "max_seq %d is shorter than a prompt (%d tokens for %d digits) plus max_response %d",
                             cfg->model.max_seq, P, cfg->task.digits, cfg->ppo.max_response);
    if (cfg->sft.steps > 0 && Tsft > cfg->model.max_seq)
        return deck_error_at(deck, "model.max_seq", "max_seq %d is shorter than an SFT sequence (%d tokens)",
                             cfg->model.max_seq, Tsft);
    if (cfg->ppo.max_response < task_max_answer(&ts) + 1)
        nr_log("note: [ppo] max_response %d cannot hold the longest answer (%d tokens + EOS); rewards are capped\n",
               cfg->ppo.max_response, task_max_answer(&ts));

    nr_log("nereus: %s — deck %s, 1 rank, backend %s, %d BLAS thread(s)\n", cfg->run.name, deck_path, be->name,
           cfg->run.blas_threads);
    nr_log("--- resolved deck ---\n");
    if (nr_rank() == 0) deck_print_resolved(deck, cfg, stdout);
    nr_log("---------------------\n");

    GPTConfig gc = {V, cfg->model.max_seq, cfg->model.n_layer, cfg->model.n_embd, cfg->model.n_head, 0};
    int Bmax = NR_MAX(cfg->ppo.batch, cfg->sft.steps > 0 ? cfg->sft.batch : 1);
    int Tmax = NR_MAX(cfg->ppo.steps > 0 ? Tppo : 1, cfg->sft.steps > 0 ? Tsft : 1);
    uint64_t seed = (uint64_t)cfg->run.seed;
    Models ms;
    memset(&ms, 0, sizeof ms);
    gpt_build(&ms.actor, &gc, be, Bmax, Tmax, 1, seed, cfg->model.init_std);
    nr_log("model: GPT-2 L=%d C=%d NH=%d V=%d T=%d: %zu parameters per model\n", gc.L, gc.C, gc.NH, gc.V, gc.maxT,
           ms.actor.nparams);

    int status = 0;
    double sft_first = NAN, sft_last = NAN;
    if (cfg->sft.steps > 0) {
        SftData sd;
        int rc = sft_open(&sd, cfg, &ts, V, deck_path);
        if (rc) {
            gpt_free(&ms.actor);
            return rc;
        }
        double t0 = nr_now();
        for (int s = 0; s < cfg->sft.steps; s++) {
            double ts0 = nr_now();
            float loss = sft_step(&sd, &ms.actor, cfg, &ts, s);
            if (s == 0) sft_first = loss;
            sft_last = loss;
            if (!isfinite(loss)) {
                nr_log("sft %4d | loss %g: non-finite loss, stopping\n", s, loss);
                status = 1;
                break;
            }
            if (s % cfg->run.log_every == 0 || s + 1 == cfg->sft.steps)
                nr_log("sft %4d | loss %.4f | %.3fs | %s\n", s, loss, nr_now() - ts0, sd.use_tokens ? "tokens" : "task");
        }
        nr_log("sft: %d steps in %.2fs, loss %.4f -> %.4f\n", cfg->sft.steps, nr_now() - t0, sft_first, sft_last);
        sft_close(&sd);
    }

    int eval_B = Bmax, eval_n = NR_MAX(1, 256 / Bmax);
    double eval_before = ppo_eval_greedy(&ms.actor, cfg, &ts, eval_B, eval_n);
    nr_log("eval: greedy task reward on %d held-out prompts: %.4f\n", eval_B * eval_n, eval_before);

    /* ref = frozen copy of the (warm-started) actor; critic = its trunk plus a value head */
    GPTConfig cc = gc;
    cc.value_head = 1;
    if (cfg->ppo.steps > 0) {
        gpt_build(&ms.ref, &gc, be, cfg->ppo.batch, Tppo, 0, seed, cfg->model.init_std);
        gpt_copy_params(&ms.ref, &ms.actor);
        gpt_build(&ms.critic, &cc, be, cfg->ppo.batch, Tppo, 1, seed + 1, cfg->model.init_std);
        gpt_copy_params(&ms.critic, &ms.actor);
        if (cfg->reward.network) {
            /* A frozen reward network: the warm-started trunk with a value head drawn from the seed.
             * Without a trained reward checkpoint (issue #4) it is an untrained scorer; say so. */
            gpt_build(&ms.reward, &cc, be, cfg->ppo.batch, Tppo, 0, seed + 2, cfg->model.init_std);
            gpt_copy_params(&ms.reward, &ms.actor);
            float *vh = nr_xmalloc((size_t)gc.C * sizeof(float));
            for (int i = 0; i < gc.C; i++) vh[i] = cfg->model.init_std * rng_normal(seed + 2, RNG_INIT, 1000, i);
            be->upload(ms.reward.p[GPT_VHW], vh, (size_t)gc.C * sizeof(float));
            free(vh);
            ms.have_reward_net = 1;
            nr_log("reward: rule reward + %.3g x frozen reward network (UNTRAINED: random value head)\n",
                   cfg->reward.network_weight);
        } else {
            nr_log("reward: rule-based task reward (%s), partial credit per position\n", cfg->task.names);
        }
    }

    double eval_before_after[2] = {eval_before, NAN};
    double *rewards = nr_xcalloc((size_t)cfg->ppo.steps + 1, sizeof(double));
    double *kls = nr_xcalloc((size_t)cfg->ppo.steps + 1, sizeof(double));
    int done_steps = 0;
    if (cfg->ppo.steps > 0 && status == 0) {
        Rollout ro;
        rollout_alloc(&ro, cfg, &ts, be);
        double run0 = nr_now();
        for (int step = 0; step < cfg->ppo.steps; step++) {
            StepStats st;
            memset(&st, 0, sizeof st);
            double t0 = nr_now();
            ppo_generate(&ro, &ms.actor, cfg, &ts, step);
            double t1 = nr_now();
            ppo_score(&ro, &ms, cfg, &st);
            double t2 = nr_now();
            ppo_train(&ro, &ms, cfg, step, &st);
            double t3 = nr_now();
            st.t_gen = t1 - t0;
            st.t_inf = t2 - t1;
            st.t_train = t3 - t2;
            rewards[step] = st.reward;
            kls[step] = st.kl;
            done_steps = step + 1;
            if (!st.finite) {
                nr_log("step %4d | non-finite loss (policy %g, value %g): stopping the run\n", step, st.pg_loss,
                       st.vf_loss);
                status = 1;
                break;
            }
            if (step % cfg->run.log_every == 0 || step + 1 == cfg->ppo.steps) {
                char ex[96];
                task_detok(ro.seq, ro.P + ro.resp_len[0], ex);
                nr_log("step %4d | reward %.3f | kl %+.4f | pg %+.4f | vf %.4f | ent %.3f | len %.2f | "
                       "gen %.3fs inf %.3fs train %.3fs | %.0f tok/s | %s (%.2f)\n",
                       step, st.reward, st.kl, st.pg_loss, st.vf_loss, st.entropy, st.resp_len, st.t_gen, st.t_inf,
                       st.t_train, st.tokens / (t3 - t0), ex, ro.task_reward[0]);
            }
        }
        nr_log("ppo: %d steps in %.2fs\n", done_steps, nr_now() - run0);
        if (status == 0) {
            double eval_after = ppo_eval_greedy(&ms.actor, cfg, &ts, eval_B, eval_n);
            nr_log("eval: greedy task reward on %d held-out prompts: %.4f after PPO (%.4f before)\n",
                   eval_B * eval_n, eval_after, eval_before);
            eval_before_after[1] = eval_after;
        }
        rollout_free(&ro);
    }

    /* ---- verification block: stable numbers only (no times), one per line ---- */
    int n = done_steps, k = NR_MIN(10, n);
    double r_first = mean_range(rewards, 0, k), r_last = mean_range(rewards, n - k, n);
    int finite = status == 0;
    nr_log("--- verification ---\n");
    if (cfg->sft.steps > 0) {
        nr_log("verify.sft_steps: %d\n", cfg->sft.steps);
        nr_log("verify.sft_loss_first: %.6f\n", sft_first);
        nr_log("verify.sft_loss_last: %.6f\n", sft_last);
    }
    nr_log("verify.ppo_steps: %d\n", n);
    if (n > 0) { /* task reward means of the first and last min(10, n) PPO steps */
        nr_log("verify.reward_first10: %.6f\n", r_first);
        nr_log("verify.reward_last10: %.6f\n", r_last);
        nr_log("verify.reward_gain: %+.6f\n", r_last - r_first);
        nr_log("verify.kl_last10: %.6f\n", mean_range(kls, n - k, n));
    }
    nr_log("verify.eval_greedy_before_ppo: %.6f\n", eval_before_after[0]);
    if (n > 0 && status == 0) nr_log("verify.eval_greedy_after_ppo: %.6f\n", eval_before_after[1]);
    print_checksum("actor", &ms.actor);
    if (cfg->ppo.steps > 0) {
        print_checksum("ref", &ms.ref);
        print_checksum("critic", &ms.critic);
        if (ms.have_reward_net) print_checksum("reward", &ms.reward);
        else nr_log("verify.checksum.reward: none (rule-based reward, no network)\n");
    }
    for (int i = 0; i < n; i++) finite = finite && isfinite(rewards[i]);
    nr_log("verify.finite: %s\n", finite ? "yes" : "no");
    nr_log("verify.status: %s\n", finite ? "pass" : "fail");
    free(rewards);
    free(kls);
    gpt_free(&ms.actor);
    gpt_free(&ms.ref);
    gpt_free(&ms.critic);
    gpt_free(&ms.reward);
    return finite ? 0 : 1;
}
