/* inject.c — the INJECTED slowdown and pool changes (inject.h). */
#include "nereus/inject.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nereus/comm.h"
#include "nereus/counters.h"
#include "nereus/ft.h"
#include "nereus/plan.h"
#include "nereus/util.h"

/* "1,3-5" (plan syntax) into in[world]; returns the count, or −1 with why */
static int parse_ranks(const char *list, int world, unsigned char *in, char *why, size_t len) {
    memset(in, 0, (size_t)world);
    if (!list[0]) return 0;
    char text[CFG_STR + 8];
    snprintf(text, sizeof text, "@ %s", list);
    PlanStage s;
    char err[256];
    if (plan_stage_parse(text, strlen(text), &s, err, sizeof err) != 0)
        return nr_fail(why, len, "'%s' is not a rank list (ranks and A-B ranges, comma separated): %s", list, err);
    for (int i = 0; i < s.nranks; i++) {
        int r = s.ranks[i];
        if (r < 0 || r >= world) return nr_fail(why, len, "rank %d is not a rank of this %d-rank job (0..%d)", r, world, world - 1);
        if (in[r]) return nr_fail(why, len, "rank %d is listed twice", r);
        in[r] = 1;
    }
    return s.nranks;
}

/* INJECTED death: the rank (as launched), the step from which, the phase (INJECT_*; −1: never); cur_step: the step
   inject_begin_step began last */
static const char *const die_phases[INJECT_NPHASES] = {"gen", "inf", "train", "sync", "transition", "ckpt"};
static int die_rank = -1, die_step, die_phase = -1, cur_step = -1;

static int die_init(const Config *cfg, char *why, size_t len) {
    const InjectConfig *c = &cfg->inject;
    die_rank = -1;
    if (c->die_rank < 0 || ft_joined()) return 0; /* a replacement ([elastic] respawn): not the launched world */
    int launched = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &launched);
    if (c->die_rank >= launched)
        return nr_fail(why, len, "[inject] die_rank = %d: the job was launched with %d rank(s) (0 .. %d)", c->die_rank,
                       launched, launched - 1);
    if (c->die_rank >= 0 && c->die_step >= cfg->ppo.steps)
        return nr_fail(why, len, "[inject] die_step = %d: the run has %d PPO steps (0 .. %d)", c->die_step,
                       cfg->ppo.steps, cfg->ppo.steps - 1);
    die_rank = c->die_rank, die_step = c->die_step, die_phase = -1;
    for (int p = 0; p < INJECT_NPHASES && die_rank >= 0; p++)
        if (strcmp(c->die_phase, die_phases[p]) == 0) die_phase = p;
    return 0;
}

void inject_phase(int phase) {
    if (die_rank < 0 || phase != die_phase || cur_step < die_step) return;
    int me = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (me != die_rank) return;
    fprintf(stderr, "nereus: INJECTED death ([inject] die_rank): rank %d (as launched) SIGKILLs itself in step %d, "
            "as %s begins\n", me, cur_step, die_phases[phase]);
    fflush(stderr);
    raise(SIGKILL);
}

int inject_init(Injector *in, const Config *cfg, int world, int rank, const char **key, char *why, size_t len) {
    memset(in, 0, sizeof *in);
    in->cfg = cfg;
    in->world = world;
    in->rank = rank;
    in->factor = 1;
    in->slow = nr_xcalloc((size_t)world, 1);
    in->leave = nr_xcalloc((size_t)world, 1);
    const InjectConfig *c = &cfg->inject;
    *key = "inject.slow_ranks";
    in->busiest_rank = -1;
    if (strcmp(c->slow_ranks, "busiest") == 0) { /* chosen at slow_step (inject_begin_step) */
        in->busiest = 1;
        in->nslow = 1;
    } else if ((in->nslow = parse_ranks(c->slow_ranks, world, in->slow, why, len)) < 0) {
        return -1;
    }
    if (c->slow_step >= 0 && in->nslow == 0) return nr_fail(why, len, "[inject] slow_step = %d needs slow_ranks", c->slow_step);
    *key = "inject.slow_period";
    if (c->slow_period > 0 && c->slow_step < 0)
        return nr_fail(why, len, "[inject] slow_period = %d needs slow_step", c->slow_period);
    *key = "inject.slow_until";
    if (c->slow_until >= 0 && c->slow_until <= c->slow_step)
        return nr_fail(why, len, "[inject] slow_until = %d must come after slow_step = %d", c->slow_until, c->slow_step);
    *key = "inject.leave_step";
    if (c->leave_step >= 0 && strcmp(cfg->planner.policy, "off") == 0)
        return nr_fail(why, len, "[inject] leave_step = %d takes ranks out of the pool, which needs the planner to move "
                       "their work: set [planner] policy (static, payback, admit-all or every-k)", c->leave_step);
    *key = "inject.leave_ranks";
    if ((in->nleave = parse_ranks(c->leave_ranks, world, in->leave, why, len)) < 0) return -1;
    if (c->leave_step >= 0 && in->nleave == 0) return nr_fail(why, len, "[inject] leave_step = %d needs leave_ranks", c->leave_step);
    if (in->nleave >= world && c->leave_step >= 0)
        return nr_fail(why, len, "[inject] leave_ranks takes every rank of the job out of the pool");
    *key = "inject.join_step";
    if (c->join_step >= 0 && c->join_step <= c->leave_step)
        return nr_fail(why, len, "[inject] join_step = %d must come after leave_step = %d", c->join_step, c->leave_step);
    *key = "inject.resp_len_to";
    if (c->resp_len_to > cfg->ppo.max_response || c->resp_len_from > cfg->ppo.max_response)
        return nr_fail(why, len, "[inject] resp_len_from = %d / resp_len_to = %d: at most [ppo] max_response = %d",
                       c->resp_len_from, c->resp_len_to, cfg->ppo.max_response);
    *key = "inject.die_rank";
    if (die_init(cfg, why, len) != 0) return -1;
    *key = "";
    comm_set_setup_inject(c->comm_setup_s);
    return 0;
}

void inject_free(Injector *in) {
    comm_set_wait_hook(NULL);
    comm_set_setup_inject(0);
    counters_set_stage_end_hook(NULL);
    free(in->slow);
    free(in->leave);
    memset(in, 0, sizeof *in);
}

int inject_describe(const Injector *in, char *buf, size_t len) {
    const InjectConfig *c = &in->cfg->inject;
    size_t n = 0;
    buf[0] = 0;
    if (c->resp_len_from > 0 || c->resp_len_to > 0)
        n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "INJECTED length drift: responses forced to at least %d -> %d tokens (reached at step %d); ",
                              c->resp_len_from, c->resp_len_to, c->resp_len_ramp > 0 ? c->resp_len_ramp : in->cfg->ppo.steps - 1);
    if (c->slow_step >= 0) {
        char until[160];
        snprintf(until, sizeof until, "%s%s", c->slow_until >= 0 ? " to the step before slow_until" : "",
                 c->slow_period > 0 ? ", slow for slow_period steps and not for slow_off, over and over (it comes and goes)" : "");
        if (in->busiest)
            n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "INJECTED slowdown: the busiest rank at step %d (the one "
                                  "holding the most model-stages) does %.3gx its work (extra real work) from then on%s%s; ",
                                  c->slow_step, c->slow_factor, until,
                                  c->slow_period > 0 ? " (the busiest rank of the plan in force at each spell's start)" : "");
        else
            n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "INJECTED slowdown: ranks %s do %.3gx their work (extra "
                                  "real work) from step %d%s; ", c->slow_ranks, c->slow_factor, c->slow_step, until);
    }
    if (c->leave_step >= 0)
        n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "INJECTED pool change: ranks %s leave the pool before step %d%s; ",
                              c->leave_ranks, c->leave_step, c->join_step >= 0 ? " and join again later" : "");
    if (c->comm_setup_s > 0)
        n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "INJECTED communicator set-up: every communicator set "
                              "the job builds (at start-up and in each transition) takes at least %.3g s on each of "
                              "its ranks ([inject] comm_setup_s: a sleep after MPI_Comm_split, as a slow NCCL "
                              "initialisation would take; for a set built ahead of its move, from when it was "
                              "built, the move waiting for what is left); ", c->comm_setup_s);
    if (n >= 2 && n < len) buf[n - 2] = 0;
    return n > 0;
}

double inject_slow_at(const Injector *in, int rank, int step) {
    const InjectConfig *c = &in->cfg->inject;
    if (c->slow_step < 0 || step < c->slow_step || (c->slow_until >= 0 && step >= c->slow_until)) return 1;
    if (c->slow_period > 0) { /* slow for slow_period steps, then at full speed for slow_off (0: as many), over and over */
        int off = c->slow_off > 0 ? c->slow_off : c->slow_period;
        if ((step - c->slow_step) % (c->slow_period + off) >= c->slow_period) return 1;
    }
    return rank >= 0 && rank < in->world && in->slow[rank] ? c->slow_factor : 1;
}

int inject_in_pool(const Injector *in, int rank, int step) {
    const InjectConfig *c = &in->cfg->inject;
    if (c->leave_step < 0 || step < c->leave_step || (c->join_step >= 0 && step >= c->join_step)) return 1;
    return !(rank >= 0 && rank < in->world && in->leave[rank]);
}

/* ---- the extra work ---------------------------------------------------------- */

static double slow_factor = 1, cpu_mark;

/* real floating-point work until this thread's CPU clock has advanced by `seconds` */
static void burn(double seconds) {
    static float a[32 * 32], b[32 * 32], c[32 * 32];
    static int init;
    if (!init) {
        for (int i = 0; i < 32 * 32; i++) a[i] = 1e-3f * (float)(i % 17), b[i] = 1e-3f * (float)(i % 13);
        init = 1;
    }
    double end = nr_thread_cpu() + seconds;
    do {
        for (int i = 0; i < 32; i++) /* a 32×32 matmul, ~65 kFLOP */
            for (int k = 0; k < 32; k++) {
                float x = a[i * 32 + k];
                for (int j = 0; j < 32; j++) c[i * 32 + j] += x * b[k * 32 + j];
            }
        __asm__ volatile("" : : "r"(c) : "memory"); /* keep the work */
    } while (nr_thread_cpu() < end);
}

static void slow_hook(void) {
    double now = nr_thread_cpu();
    double extra = (now - cpu_mark) * (slow_factor - 1);
    if (extra > 0) burn(extra);
    cpu_mark = nr_thread_cpu();
}

/* slow_ranks = busiest: the rank that holds the most model-stages of the plan (a model-stage that holds a
   model: reward.inf only with a reward network), ties to the one holding a training stage, then the lowest.
   Why: on a machine with fewer cores than ranks the best plans leave ranks idle, and slowing a rank that
   holds nothing tests nothing; on a cluster every rank works */
static int busiest_rank(const Injector *in, const PlanConfig *plan) {
    int best = 0, bn = -1, bt = 0;
    for (int r = 0; r < in->world; r++) {
        int n = 0, t = 0;
        for (int s = 0; s < PLAN_NSTAGES; s++) {
            if (s == PLAN_REWARD_INF && !in->cfg->reward.network) continue;
            if (plan_stage_pos(&plan->stage[s], r) < 0) continue;
            n++;
            t |= plan_stage_is_train(s);
        }
        if (n > bn || (n == bn && t > bt)) best = r, bn = n, bt = t;
    }
    return best;
}

/* 1 at the first step of a slow spell of a slowdown that comes and goes (slow_period) */
static int spell_starts(const InjectConfig *c, int step) {
    int off = c->slow_off > 0 ? c->slow_off : c->slow_period;
    return c->slow_period > 0 && step >= c->slow_step && (step - c->slow_step) % (c->slow_period + off) == 0;
}

void inject_begin_step(Injector *in, int step, const PlanConfig *plan) {
    const InjectConfig *c = &in->cfg->inject;
    cur_step = step;
    /* busiest: chosen at slow_step; where the slowdown comes and goes, again at the start of every slow spell
       (the slowdown follows the work: a plan that moved off the last spell's rank meets the next one) */
    if (in->busiest && c->slow_step >= 0 && step >= c->slow_step && plan &&
        (in->busiest_rank < 0 || spell_starts(c, step))) {
        if (in->busiest_rank >= 0) in->slow[in->busiest_rank] = 0;
        in->busiest_rank = busiest_rank(in, plan);
        in->slow[in->busiest_rank] = 1;
        if (in->rank == 0) {
            char held[256] = "";
            size_t k = 0;
            for (int s = 0; s < PLAN_NSTAGES && k < sizeof held; s++)
                if (plan_stage_pos(&plan->stage[s], in->busiest_rank) >= 0 && (s != PLAN_REWARD_INF || in->cfg->reward.network))
                    k += (size_t)snprintf(held + k, sizeof held - k, "%s%s", k ? ", " : "", plan_stage_name(s));
            nr_log("INJECTED slowdown: slow_ranks = busiest is rank %d from step %d (it holds %s in the plan in force)\n",
                   in->busiest_rank, step, held);
        }
    }
    double f = inject_slow_at(in, in->rank, step);
    if (f == in->factor) return;
    in->factor = slow_factor = f;
    cpu_mark = nr_thread_cpu();
    comm_set_wait_hook(f > 1 ? slow_hook : NULL);
    counters_set_stage_end_hook(f > 1 ? slow_hook : NULL);
}
