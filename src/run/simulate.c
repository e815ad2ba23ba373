/* simulate.c — `bin/nereus --simulate DECK`: a simulation deck's [simulate]
 * section into a SimScenario (sim.h), every policy run over it, the table
 * and one `sim.POLICY.METRIC: VALUE` line per figure. Everything here is
 * MODELLED (the cluster, the models, the drift) and says so. Rank 0 does the
 * work; the other ranks of an mpirun wait. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/deck.h"
#include "nereus/job.h"
#include "nereus/run.h"
#include "nereus/sim.h"
#include "nereus/util.h"

/* datasheet figures: dense bf16 FLOP/s, memory, HBM bandwidth, NVLink per GPU */
static int gpu_model(const char *kind, HwModel *h) {
    static const struct { const char *n; double flops, mem, hbm, nvl; } t[] = {
        {"h100", 989e12, 80e9, 3.35e12, 450e9},
        {"h200", 989e12, 141e9, 4.8e12, 450e9},
        {"a100", 312e12, 80e9, 2.0e12, 300e9},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(kind, t[i].n) == 0) {
            snprintf(h->name, sizeof h->name, "%s (modelled)", kind);
            h->flops = t[i].flops, h->mem = t[i].mem, h->hbm = t[i].hbm, h->bw[0] = t[i].nvl, h->lat[0] = 3e-6;
            return 0;
        }
    return -1;
}

/* one "STEP GPUS" line (a # comment cut off): 1 read, 0 blank, -1 anything else (garbage, a third field, a
   number that does not fit an int) */
static int avail_line(char *line, long *step, long *n) {
    char *h = strchr(line, '#'), *e;
    if (h) *h = 0;
    char *p = line + strspn(line, " \t\r\n");
    if (!*p) return 0;
    errno = 0;
    *step = strtol(p, &e, 10);
    if (e == p || !strchr(" \t", *e) || errno) return -1;
    p = e;
    *n = strtol(p, &e, 10);
    if (e == p || errno || e[strspn(e, " \t\r\n")] || *step > INT_MAX || *n > INT_MAX) return -1;
    return 1;
}

/* what each column of the policy table says, printed above it (docs/PLANNER.md, "Reading --simulate") */
static void sim_table_legend(void) {
    printf("\ncolumns: mean step s  MODELLED seconds per step over the whole trace\n"
           "         vs static    how much shorter the mean step is than static's: + faster, - slower\n"
           "         transitions  plan moves made (pool changes force some); a move the plan in force can wait\n"
           "                      for may wait one step while its communicators are built, then pays only its\n"
           "                      data and the set-up that step did not cover (sim.*.moves_ahead; none with\n"
           "                      NEREUS_TX_PREBUILD=0 in the environment)\n"
           "         share %%      percent of the run's time spent moving between plans (the sim.*.transition_share\n"
           "                      lines below give the same as a fraction)\n"
           "         refused      re-plans after drift that kept the plan in force (no better plan, or the\n"
           "                      policy's rule declined it)\n"
           "         planner s    the planner's own wall time on this machine (measured, not modelled)\n");
}

/* the availability trace: "STEP GPUS" per line, # comments; returns 0, or 2 after the deck error */
static int read_availability(const Deck *deck, const char *path, int gpus, SimScenario *sc) {
    FILE *f = fopen(path, "r");
    if (!f) return deck_error_at(deck, "simulate.availability", "cannot open availability trace %s: %s", path, strerror(errno));
    char line[256];
    int ln = 0, entries = 0;
    long last = -1;
    while (fgets(line, sizeof line, f)) {
        ln++;
        long step, n;
        int k = strchr(line, '\n') || feof(f) ? avail_line(line, &step, &n) : -2;
        if (k == 0) continue;
        if (k < 0 || step < 0 || n < 1 || n > gpus || step <= last) {
            fclose(f);
            if (k == -2) return deck_error_at(deck, "simulate.availability", "%s:%d: line longer than 254 characters", path, ln);
            return deck_error_at(deck, "simulate.availability",
                                 "%s:%d: want 'STEP GPUS' with steps increasing and 1 <= GPUS <= %d", path, ln, gpus);
        }
        if (sc->nevents == SIM_MAX_EVENTS - 2) { /* room for the slowdown's two events */
            fclose(f);
            return deck_error_at(deck, "simulate.availability", "%s: more than %d changes", path, SIM_MAX_EVENTS - 2);
        }
        sc->ev[sc->nevents++] = (SimEvent){(int)step, (int)n, -1, 1};
        last = step;
        entries++;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) return deck_error_at(deck, "simulate.availability", "%s: read error", path);
    if (!entries) return deck_error_at(deck, "simulate.availability", "%s holds no 'STEP GPUS' line", path);
    return 0;
}

static int scenario_of(const Config *cfg, const Deck *deck, SimScenario *sc) {
    const SimulateConfig *m = &cfg->sim;
    memset(sc, 0, sizeof *sc);
    snprintf(sc->name, sizeof sc->name, "%.63s", cfg->run.name);
    CostModel *t = &sc->truth;
    if (gpu_model(m->gpu, &t->hw) != 0) return deck_error_at(deck, "simulate.gpu", "unknown GPU kind %s", m->gpu);
    t->hw.ranks_per_node = m->ranks_per_node;
    int slingshot = strcmp(m->network, "slingshot") == 0;
    t->hw.bw[1] = slingshot ? 25e9 : 50e9;
    t->hw.lat[1] = slingshot ? 2e-6 : 10e-6;
    if (m->network_gbs > 0) t->hw.bw[1] = m->network_gbs * 1e9;
    /* what the modelled cluster reaches; the planner does not see these, it calibrates toward them */
    t->eff = (Efficiency){{0.55, 0.35, 0.6, 0.7, 0.6, 0.7, 0.6, 0.5, 0.7}};
    if (shape_named(m->actor, &t->actor) != 0)
        return deck_error_at(deck, "simulate.actor", "unknown model %s (llama-3.1-8b, qwen3-14b, qwen3-32b, llama-3.3-70b)", m->actor);
    if (shape_named(m->critic, &t->critic) != 0)
        return deck_error_at(deck, "simulate.critic", "unknown model %s (llama-3.1-8b, qwen3-14b, qwen3-32b, llama-3.3-70b)", m->critic);
    t->critic.value_head = 1;
    t->headroom = 0.1;
    /* [ppo] algorithm = grpo: no critic (five model-stages), and group_size responses per prompt: the step
       generates, scores and trains on batch x group_size sequences (G-fold generation) */
    t->no_critic = strcmp(cfg->ppo.algorithm, "grpo") == 0;
    int G = t->no_critic ? cfg->ppo.group_size : 1;
    if ((long long)m->batch * G > INT_MAX / 4)
        return deck_error_at(deck, "ppo.group_size", "[simulate] batch %d x group_size %d sequences per step is "
                             "more than the simulator takes", m->batch, G);
    sc->gpus = m->gpus;
    sc->steps = m->steps;
    sc->w = (Workload){m->batch * G, m->minibatch, m->epochs, m->prompt_len, m->resp_len, m->resp_len, 0};
    sc->len_end = m->resp_len_end;
    sc->longest_ratio = m->resp_longest_ratio;
    if (sc->longest_ratio > 0 && sc->longest_ratio < 1)
        return deck_error_at(deck, "simulate.resp_longest_ratio", "resp_longest_ratio %g: the longest response is "
                             "at least the mean (1 or more), or 0 for none", sc->longest_ratio);
    /* asynchronous rollouts: the K the planner may choose ([planner] max_staleness ≥ 0), or the deck's fixed one */
    cost_set_staleness(t, cfg->planner.max_staleness, cfg->ppo.max_staleness);
    sc->gamma = m->gamma;
    sc->threshold = m->threshold;
    sc->every_k = m->every_k;
    sc->keep_comms = m->keep_comms;
    sc->no_prebuild = !job_prebuild_on(); /* NEREUS_TX_PREBUILD=0: every move builds its communicators in the move */
    if (m->tx_factor_max < m->tx_factor_min)
        return deck_error_at(deck, "simulate.tx_factor_max", "tx_factor_max %g is below tx_factor_min %g",
                             m->tx_factor_max, m->tx_factor_min);
    if (m->seeds > 0) /* the study: the MODELLED noise (sim.h, SimNoise) */
        sc->noise = (SimNoise){1, (unsigned long long)m->first_seed, m->model_error, m->step_noise, m->tx_factor_min,
                               m->tx_factor_max, m->warmup, cfg->planner.guard_margin, cfg->planner.guard_steps};
    sc->fail = (SimFailures){m->fail_rate, (unsigned long long)m->fail_seed, m->repair_s, m->detect_s,
                             m->fail_ckpt_every, 0, 0};
    if (m->fail_study > 0 && m->seeds > 0)
        return deck_error_at(deck, "simulate.fail_study", "fail_study and seeds (the admission study) are two "
                             "studies: set one of them");
    if (m->availability[0]) {
        int rc = read_availability(deck, m->availability, m->gpus, sc);
        if (rc) return rc;
    }
    if (m->slow_rank >= 0) {
        sc->ev[sc->nevents++] = (SimEvent){m->slow_from, 0, m->slow_rank, m->slow_factor};
        sc->ev[sc->nevents++] = (SimEvent){m->slow_to, 0, m->slow_rank, 1};
    }
    for (int a = 1; a < sc->nevents; a++) /* by step, stable */
        for (int b = a; b > 0 && sc->ev[b].step < sc->ev[b - 1].step; b--) {
            SimEvent e = sc->ev[b]; sc->ev[b] = sc->ev[b - 1]; sc->ev[b - 1] = e;
        }
    return 0;
}

/* one row of the asynchronous comparison */
static void async_row(const char *name, const SimResult *r, const SimResult *base, int steps) {
    char gen[48];
    snprintf(gen, sizeof gen, "%d of %d%s", r->gen_ranks, r->ranks, r->async_steps ? "" : " (shared)");
    printf("%-20s %12.3f %10.3f %3d %18s %10d/%d %7.2f %7.2f %7.2f %6.2f\n", name, r->mean_step_s,
           r->mean_step_s / base->mean_step_s, r->staleness, gen, r->async_steps, steps, r->phase[0], r->phase[1],
           r->phase[2], r->phase[3]);
}

/* the asynchronous comparison (sim.h, sim_async): the table and its sim.async.* lines; 0, or −1 when one of the
   three could not run the trace */
static int async_table(const SimScenario *sc) {
    SimAsync a;
    char why[512];
    printf("\nasynchronous plans (MODELLED): three fixed plans, each chosen as static chooses (knowing the trace) and "
           "run over all of it:\n"
           "  planner    the split of ranks and K chosen together, K <= %d ([planner] max_staleness)\n"
           "  synchronous  the best plan with K = 0 (the same search, no overlap)\n"
           "  50/50      actor.gen on the first half of the ranks, every other model-stage on the second, K = 1\n"
           "  the phases: the last step's, in seconds; K >= 1 with actor.gen on ranks of its own costs max(gen, inf + "
           "train) + the rollout + sync\n",
           sc->truth.max_staleness);
    if (sim_async(sc, &a, why, sizeof why) != 0) {
        printf("async failed: %s\n", why);
        printf("sim.async.failed: 1\n");
        return -1;
    }
    printf("%-20s %12s %10s %3s %18s %12s %7s %7s %7s %6s\n", "plan", "mean step s", "/ planner", "K",
           "gen ranks of used", "overlapped", "gen s", "inf s", "train s", "sync s");
    async_row("planner (K chosen)", &a.planner, &a.planner, sc->steps);
    async_row("best synchronous", &a.sync, &a.planner, sc->steps);
    async_row("fixed 50/50, K = 1", &a.half, &a.planner, sc->steps);
    printf("sim.async.failed: 0\n");
    const struct { const char *n; const SimResult *r; } row[3] = {{"planner", &a.planner}, {"sync", &a.sync},
                                                                   {"half", &a.half}};
    for (int i = 0; i < 3; i++) {
        printf("sim.async.%s.mean_step_s: %.6f\n", row[i].n, row[i].r->mean_step_s);
        printf("sim.async.%s.staleness: %d\n", row[i].n, row[i].r->staleness);
        printf("sim.async.%s.gen_ranks: %d\n", row[i].n, row[i].r->gen_ranks);
        printf("sim.async.%s.async_steps: %d\n", row[i].n, row[i].r->async_steps);
    }
    /* how many times the planner's mean step each baseline takes (> 1: the planner's is shorter) */
    printf("sim.async.sync_over_planner: %.6f\n", a.sync.mean_step_s / a.planner.mean_step_s);
    printf("sim.async.half_over_planner: %.6f\n", a.half.mean_step_s / a.planner.mean_step_s);
    return 0;
}

int run_simulation(const Config *cfg, const Deck *deck, int rank) {
    SimScenario sc;
    int rc = scenario_of(cfg, deck, &sc); /* every rank: a deck error is collective */
    if (rc) return rc;
    char what[768];
    if (sim_fits(&sc, what, sizeof what) != 0) /* every rank: the search is deterministic */
        return deck_error_at(deck, "simulate.gpus", "the models cannot run on this cluster: %s", what);
    if (rank != 0) return 0;
    const SimulateConfig *m = &cfg->sim;
    printf("SIMULATION (modelled cluster and models; nothing runs on hardware): %s\n", sc.name);
    int grpo = sc.truth.no_critic;
    char critic[64];
    snprintf(critic, sizeof critic, grpo ? "no critic (grpo: five model-stages)" : "critic %s", m->critic);
    printf("cluster: %d x %s, %d per node, %s between nodes; actor %s, %s\n", sc.gpus, sc.truth.hw.name,
           m->ranks_per_node, m->network, m->actor, critic);
    if (grpo)
        printf("algorithm: grpo, %d prompts x %d responses = %d sequences per step (G-fold generation), no critic, "
               "no value loss\n", m->batch, cfg->ppo.group_size, sc.w.batch);
    if (m->network_gbs > 0) printf("network: %.3g GB/s per GPU between nodes ([simulate] network_gbs)\n", m->network_gbs);
    printf("workload: %d steps, batch %d, minibatch %d, prompt %.0f, responses %.0f -> %.0f tokens (geometric)\n",
           sc.steps, m->batch, m->minibatch, m->prompt_len, m->resp_len, m->resp_len_end);
    if (sc.longest_ratio > 0)
        printf("workload: MODELLED tail: each step's longest response %.3g x its mean (the decode term's rows still "
               "generating)\n", sc.longest_ratio);
    for (int e = 0; e < sc.nevents; e++) {
        if (sc.ev[e].pool > 0) printf("drift: from step %d the pool holds %d GPUs (availability trace)\n", sc.ev[e].step, sc.ev[e].pool);
        else if (sc.ev[e].slow == 1) /* a slowdown's end: "runs 1x slower" read as a slowdown */
            printf("drift: INJECTED from step %d rank %d back to full speed\n", sc.ev[e].step, sc.ev[e].rank);
        else printf("drift: INJECTED from step %d rank %d runs %.2gx slower\n", sc.ev[e].step, sc.ev[e].rank, sc.ev[e].slow);
    }
    if (sc.truth.max_staleness > 0)
        printf("asynchronous rollouts: %s; a plan whose actor.gen has ranks of its own costs max(gen, scoring + "
               "training) + the rollout's transfer + the sync (docs/PLANNER.md, \"Asynchronous plans\")\n",
               sc.truth.staleness_fixed ? "every plan runs with the deck's K ([ppo] max_staleness)"
                                        : "the planner chooses K with the split of ranks ([planner] max_staleness)");
    if (sc.fail.rate > 0 || m->fail_study > 0) sim_fail_header(&sc);
    if (m->seeds > 0) return sim_study(&sc, m->first_seed, m->seeds, strcmp(m->study, "core") == 0);
    if (m->fail_study > 0) return sim_fail_study(&sc, m->fail_study);
    sim_table_legend();
    printf("\n%-10s %12s %10s %12s %10s %8s %10s\n", "policy", "mean step s", "vs static", "transitions", "share %",
           "refused", "planner s");
    SimResult r[SIM_NPOLICIES];
    int nfailed = 0;
    char adaptive_why[512] = ""; /* the first adaptive policy's failure: the simulation's own */
    for (int p = 0; p < SIM_NTABLE; p++) {
        char why[512];
        if (sim_run(&sc, p, &r[p], why, sizeof why) != 0) { /* a result: this policy cannot run the trace */
            printf("%-10s failed: %s\n", sim_policy_name(p), why);
            if (!adaptive_why[0] && (p == SIM_PAYBACK || p == SIM_ADMIT_ALL || p == SIM_EVERY_K))
                snprintf(adaptive_why, sizeof adaptive_why, "%s", why);
            nfailed++;
            continue;
        }
        char vs[16] = "n/a"; /* against the best static plan, where it ran the whole trace */
        if (!r[SIM_STATIC].failed) snprintf(vs, sizeof vs, "%+.1f%%", 100.0 * (1 - r[p].mean_step_s / r[SIM_STATIC].mean_step_s));
        printf("%-10s %12.3f %10s %12d %10.4f %8d %10.2f\n", sim_policy_name(p), r[p].mean_step_s, vs,
               r[p].transitions, 100.0 * r[p].transition_s / r[p].total_s, r[p].refused, r[p].planner_s);
    }
    if (sc.fail.rate > 0) sim_fail_table(r, SIM_NTABLE, sc.steps);
    printf("\n");
    for (int p = 0; p < SIM_NTABLE; p++) {
        printf("sim.%s.failed: %d\n", sim_policy_name(p), r[p].failed);
        if (r[p].failed) continue;
        printf("sim.%s.mean_step_s: %.6f\n", sim_policy_name(p), r[p].mean_step_s);
        printf("sim.%s.transitions: %d\n", sim_policy_name(p), r[p].transitions);
        printf("sim.%s.transition_share: %.8f\n", sim_policy_name(p), r[p].transition_s / r[p].total_s);
        /* the moves' seconds in all, and those that waited a step for their communicators (the set-up it covered) */
        printf("sim.%s.transition_s: %.4f\n", sim_policy_name(p), r[p].transition_s);
        printf("sim.%s.moves_ahead: %d\n", sim_policy_name(p), r[p].moves_ahead);
        printf("sim.%s.setup_hidden_s: %.4f\n", sim_policy_name(p), r[p].setup_hidden_s);
        if (sc.fail.rate > 0) sim_fail_lines(sim_policy_name(p), &r[p], sc.steps);
        /* mean step against the static plan and admit-every-gain of the same run, % lower (negative: slower) */
        if (!r[SIM_STATIC].failed)
            printf("sim.%s.vs_static_pct: %.4f\n", sim_policy_name(p),
                   100 * (1 - r[p].mean_step_s / r[SIM_STATIC].mean_step_s));
        if (!r[SIM_ADMIT_ALL].failed)
            printf("sim.%s.vs_admit_all_pct: %.4f\n", sim_policy_name(p),
                   100 * (1 - r[p].mean_step_s / r[SIM_ADMIT_ALL].mean_step_s));
    }
    if (sc.truth.max_staleness > 0)
        for (int p = 0; p < SIM_NTABLE; p++)
            if (!r[p].failed) printf("sim.%s.async_steps: %d\nsim.%s.staleness: %d\n", sim_policy_name(p),
                                     r[p].async_steps, sim_policy_name(p), r[p].staleness);
    /* the simulation itself succeeded when the adaptive policies ran the trace; a fixed baseline that cannot
       (no plan holding the longest responses fits a shrunken pool) is one of its results */
    int ok = !r[SIM_PAYBACK].failed && !r[SIM_ADMIT_ALL].failed && !r[SIM_EVERY_K].failed;
    if (sc.truth.max_staleness > 0 && !sc.truth.staleness_fixed) ok &= async_table(&sc) == 0;
    printf("verify.sim_policies_failed: %d\n", nfailed);
    printf("verify.status: %s\n", ok ? "pass" : "fail");
    if (!ok) { /* the scenario outruns the cluster (a pool too small or responses too long at some step) */
        fflush(stdout);
        fprintf(stderr, "nereus: error: the adaptive policies cannot run this scenario to its end: %s\n", adaptive_why);
    }
    return ok ? 0 : 1;
}
