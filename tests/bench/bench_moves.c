/* bench_moves.c — the simulator's transition prices against a published move (issue #34): the paper's
 * 16 -> 32 GPU move of an 8B actor and critic, measured there at 6.52 s, priced by the engine as the
 * simulator charges it (sim_move_price: the DAG on the modelled links, NVLink inside a node, GPUDirect
 * RDMA over InfiniBand NDR, 50 GB/s and 10 us per GPU between nodes, plus tx_comm_setup_s(its ranks) per
 * changed model-stage whose layout needs new communicators: txprice.h), beside a checkpoint-and-restart of the same job
 * (sim_ckpt_restart_s, its assumptions printed). MODELLED H100 and H200 nodes of 8; the plans are the
 * search's best on 16 and on 32 GPUs for 512 prompts of 512 tokens and 1,000-token responses.
 * Then the paper's 512 -> 1,024 GPU move (measured there at 31.6 s) of the same models on MODELLED H200s, the
 * plans the search's best on 512 and on 1,024 GPUs for growth-1024's batch (2,048 prompts of 512 tokens,
 * minibatch 512) at responses of 1,000 to 8,000 tokens: priced at once (data and communicator set-up) and as a
 * move that waits one step on the 512-GPU plan while its communicators are built (adapt.h, "Moves that wait a
 * step": data + max(0, set-up - that step)).
 *   build/bench/bench_moves [OUT]   (appends tx.paper_move.* and tx.move_512_1024.* lines to OUT) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_args.h"
#include "nereus/sim.h"
#include "nereus/txprice.h"
#include "nereus/util.h"

#define PAPER_MOVE_S 6.52
#define PAPER_MOVE_1024_S 31.6

static const char usage[] =
    "usage: build/bench/bench_moves [OUT]\n"
    "  the simulator's price of the paper's 16 -> 32 and 512 -> 1,024 GPU moves; appends tx.paper_move.* and\n"
    "  tx.move_512_1024.* lines to OUT.\n"
    "  Exit: 0, 2 bad command line.\n";

/* a MODELLED cluster of gpus GPUs of a kind (memory and HBM bandwidth; 989 TFLOP/s, nodes of 8, NVLink and
   InfiniBand NDR) with the 8B actor and critic; the caller sets truth.slow and frees it */
static SimScenario *scenario_8b(const char *kind, double mem, double hbm, int gpus) {
    SimScenario *sc = nr_xcalloc(1, sizeof *sc);
    HwModel *h = &sc->truth.hw;
    snprintf(h->name, sizeof h->name, "%s (modelled)", kind);
    h->flops = 989e12, h->mem = mem, h->hbm = hbm, h->ranks_per_node = 8;
    h->bw[0] = 450e9, h->lat[0] = 3e-6, h->bw[1] = 50e9, h->lat[1] = 10e-6;
    sc->truth.eff = (Efficiency){{0.55, 0.35, 0.6, 0.7, 0.6, 0.7, 0.6, 0.5, 0.7}};
    shape_named("llama-3.1-8b", &sc->truth.actor);
    sc->truth.critic = sc->truth.actor;
    sc->truth.critic.value_head = 1;
    sc->truth.headroom = 0.1;
    sc->gpus = gpus;
    return sc;
}

/* the paper's 512 -> 1,024 GPU move priced on MODELLED H200 nodes of 8 (as growth-1024.deck's cluster), at
   several response lengths; the largest price of each kind into OUT */
static void move_512_1024(FILE *out) {
    printf("\n== the paper's 512 -> 1,024 GPU move priced (MODELLED H200): 8B actor and critic, 2,048 prompts of 512 "
           "tokens, measured there %.1f s\n", PAPER_MOVE_1024_S);
    SimScenario *sc = scenario_8b("h200", 141e9, 4.8e12, 1024);
    double *slow = nr_xmalloc(1024 * sizeof *slow);
    int *ranks = nr_xmalloc(1024 * sizeof *ranks);
    for (int r = 0; r < 1024; r++) slow[r] = 1, ranks[r] = r;
    sc->truth.slow = slow;
    PlanConfig *p = nr_xcalloc(2, sizeof *p);
    CostWork *cw = cost_work_new();
    double worst_now = 0, worst_ahead = 0;
    static const double lens[4] = {1000, 2000, 4000, 8000};
    for (int k = 0; k < 4; k++) {
        Workload w = {2048, 512, 1, 512, lens[k], lens[k], 0};
        StepCost c;
        char why[512];
        Observed o512 = {lens[k], 512, ranks, slow, 0}, o1024 = {lens[k], 1024, ranks, slow, 0};
        if (adapt_search(&sc->truth, &w, SIM_STATIC, 1024, &o512, &p[0], &c, why, sizeof why) != 0 ||
            adapt_search(&sc->truth, &w, SIM_STATIC, 1024, &o1024, &p[1], &c, why, sizeof why) != 0) {
            printf("  responses %.0f: no plan: %s\n", lens[k], why);
            continue;
        }
        double S, C = sim_move_parts(sc, &p[0], &p[1], &S), T = cost_plan_in(cw, &sc->truth, &p[0], 1024, &w, &c);
        double T1 = cost_plan_in(cw, &sc->truth, &p[1], 1024, &w, &c), ahead = C - S + (S > T ? S - T : 0);
        printf("  responses %5.0f: at once %.2f s (data %.2f s, communicator set-up %.2f s); a step late %.2f s (the "
               "512-GPU step %.1f s covers the set-up%s; that step is %.1f s longer than on 1,024)\n", lens[k], C,
               C - S, S, ahead, T, S > T ? " in part" : "", T - T1);
        if (C > worst_now) worst_now = C;
        if (ahead > worst_ahead) worst_ahead = ahead;
    }
    printf("  largest: at once %.2f s, a step late %.2f s (the paper's %.1f s measured)\n", worst_now, worst_ahead,
           PAPER_MOVE_1024_S);
    if (out)
        fprintf(out, "tx.move_512_1024.at_once_s: %.4f\ntx.move_512_1024.ahead_s: %.4f\ntx.move_512_1024.paper_measured_s: "
                "%.1f\n", worst_now, worst_ahead, PAPER_MOVE_1024_S);
    cost_work_free(cw);
    free(p);
    free(ranks);
    free(slow);
    free(sc);
}

int main(int argc, char **argv) {
    int arc = bench_args(argc, argv, usage, 0);
    if (arc >= 0) return arc;
    FILE *out = argc > 1 ? fopen(argv[1], "a") : NULL;
    const char *kinds[2] = {"h100", "h200"};
    double mem[2] = {80e9, 141e9}, hbm[2] = {3.35e12, 4.8e12};
    printf("\n== the paper's move priced (MODELLED): 8B actor and critic, 16 -> 32 GPUs, measured there %.2f s\n",
           PAPER_MOVE_S);
    for (int k = 0; k < 2; k++) {
        SimScenario *sc = scenario_8b(kinds[k], mem[k], hbm[k], 32);
        Workload w = {512, 128, 1, 512, 1000, 1000, 0};
        double slow[32];
        int ranks[32];
        for (int r = 0; r < 32; r++) slow[r] = 1, ranks[r] = r;
        sc->truth.slow = slow;
        PlanConfig *p = nr_xcalloc(2, sizeof *p);
        StepCost c;
        char why[512];
        Observed o16 = {1000, 16, ranks, slow, 0}, o32 = {1000, 32, ranks, slow, 0};
        if (adapt_search(&sc->truth, &w, SIM_STATIC, 32, &o16, &p[0], &c, why, sizeof why) != 0 ||
            adapt_search(&sc->truth, &w, SIM_STATIC, 32, &o32, &p[1], &c, why, sizeof why) != 0) {
            printf("%s: no plan: %s\n", kinds[k], why);
            return 1;
        }
        double C = sim_move_price(sc, &p[0], &p[1]), bytes, ck = sim_ckpt_restart_s(sc, 32, &bytes);
        printf("  %s: engine %.2f s (%.2fx the paper's %.2f s); checkpoint-and-restart %.1f s (%.0f GB written and read "
               "at %.0f GB/s, %.0f s relaunch, %d x %.2f s communicators over %d GPUs: assumptions), %.1fx the engine's\n",
               kinds[k], C, C / PAPER_MOVE_S, PAPER_MOVE_S, ck, bytes / 1e9, SIM_CKPT_FS_BPS / 1e9, SIM_RESTART_S,
               PLAN_NSTAGES, tx_comm_setup_s(32), 32, ck / C);
        if (out)
            fprintf(out, "tx.paper_move.%s.engine_s: %.4f\ntx.paper_move.%s.ckpt_restart_s: %.4f\n", kinds[k], C, kinds[k],
                    ck);
        free(p);
        free(sc);
    }
    if (out) fprintf(out, "tx.paper_move.paper_measured_s: %.2f\n", PAPER_MOVE_S);
    move_512_1024(out);
    if (out) fclose(out);
    return 0;
}
