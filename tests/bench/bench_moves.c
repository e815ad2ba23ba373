/* bench_moves.c — the simulator's transition prices against a published move (issue #34): the paper's
 * 16 -> 32 GPU move of an 8B actor and critic, measured there at 6.52 s, priced by the engine as the
 * simulator charges it (sim_move_price: the DAG on the modelled links, NVLink inside a node, GPUDirect
 * RDMA over InfiniBand NDR, 50 GB/s and 10 us per GPU between nodes, plus tx_comm_setup_s(its ranks) per
 * changed model-stage whose layout needs new communicators: txprice.h), beside a checkpoint-and-restart of the same job
 * (sim_ckpt_restart_s, its assumptions printed). MODELLED H100 and H200 nodes of 8; the plans are the
 * search's best on 16 and on 32 GPUs for 512 prompts of 512 tokens and 1,000-token responses.
 *   build/bench/bench_moves [OUT]   (appends tx.paper_move.* lines to OUT) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_args.h"
#include "nereus/sim.h"
#include "nereus/txprice.h"
#include "nereus/util.h"

#define PAPER_MOVE_S 6.52

static const char usage[] =
    "usage: build/bench/bench_moves [OUT]\n"
    "  the simulator's price of the paper's 16 -> 32 GPU move; appends tx.paper_move.* lines to OUT.\n"
    "  Exit: 0, 2 bad command line.\n";

int main(int argc, char **argv) {
    int arc = bench_args(argc, argv, usage, 0);
    if (arc >= 0) return arc;
    FILE *out = argc > 1 ? fopen(argv[1], "a") : NULL;
    const char *kinds[2] = {"h100", "h200"};
    double mem[2] = {80e9, 141e9}, hbm[2] = {3.35e12, 4.8e12};
    printf("\n== the paper's move priced (MODELLED): 8B actor and critic, 16 -> 32 GPUs, measured there %.2f s\n",
           PAPER_MOVE_S);
    for (int k = 0; k < 2; k++) {
        SimScenario *sc = nr_xcalloc(1, sizeof *sc);
        HwModel *h = &sc->truth.hw;
        snprintf(h->name, sizeof h->name, "%s (modelled)", kinds[k]);
        h->flops = 989e12, h->mem = mem[k], h->hbm = hbm[k], h->ranks_per_node = 8;
        h->bw[0] = 450e9, h->lat[0] = 3e-6, h->bw[1] = 50e9, h->lat[1] = 10e-6;
        sc->truth.eff = (Efficiency){{0.55, 0.35, 0.6, 0.7, 0.6, 0.7, 0.6, 0.5, 0.7}};
        shape_named("llama-3.1-8b", &sc->truth.actor);
        sc->truth.critic = sc->truth.actor;
        sc->truth.critic.value_head = 1;
        sc->truth.headroom = 0.1;
        sc->gpus = 32;
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
    if (out) {
        fprintf(out, "tx.paper_move.paper_measured_s: %.2f\n", PAPER_MOVE_S);
        fclose(out);
    }
    return 0;
}
