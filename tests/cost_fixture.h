/* cost_fixture.h — the modelled cluster the planner's unit tests price plans on: an H200 node of 8 GPUs
 * (NVLink inside, InfiniBand NDR 400 between nodes), and Llama-3.1-8B as actor and critic on it with the
 * default efficiencies and 10% memory headroom. */
#ifndef NEREUS_TESTS_COST_FIXTURE_H
#define NEREUS_TESTS_COST_FIXTURE_H

#include <stdio.h>
#include <string.h>

#include "nereus/planner.h"

static inline HwModel h200(void) {
    HwModel h;
    memset(&h, 0, sizeof h);
    snprintf(h.name, sizeof h.name, "H200");
    h.flops = 989e12;        /* dense bf16 */
    h.mem = 141e9;
    h.hbm = 4.8e12;
    h.ranks_per_node = 8;
    h.bw[0] = 450e9, h.lat[0] = 3e-6;   /* NVLink */
    h.bw[1] = 50e9, h.lat[1] = 10e-6;   /* InfiniBand NDR 400 */
    return h;
}

static inline CostModel cost_model_8b_h200(void) {
    CostModel cm;
    memset(&cm, 0, sizeof cm);
    cm.hw = h200();
    cm.eff = eff_default();
    shape_named("llama-3.1-8b", &cm.actor);
    cm.critic = cm.actor;
    cm.critic.value_head = 1;
    cm.headroom = 0.1;
    return cm;
}

#endif
