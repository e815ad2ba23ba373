/* test_grpo_plan.c — GRPO's stage set in the pure planner: plan_resolve and plan_default with no critic
 * (critic stages absent, one named in the deck refused under its key, five disaggregated blocks), and the cost
 * model and plan search with CostModel.no_critic (no critic stage placed, none priced, no critic sync leg). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "cost_fixture.h"
#include "nereus/planner.h"

static void check_resolve(void) {
    PlanLimits lim = {8, 4, 2, 32, 8, 0, 0, 1};
    PlanConfig p;
    PlanError e;
    memset(&p, 0, sizeof p);
    snprintf(p.fill, sizeof p.fill, "auto");
    int rc = plan_resolve(&p, &lim, &e);
    CHECK(rc == 0 && !plan_stage_present(&p, PLAN_CRITIC_INF) && !plan_stage_present(&p, PLAN_CRITIC_TRAIN) &&
              plan_stage_present(&p, PLAN_ACTOR_GEN) && p.stage[PLAN_REWARD_INF].nranks == 8 && plan_no_critic(&p),
          "grpo colocated default: critic stages absent, the others on all 8 ranks (rc %d)", rc);
    char text[4096];
    plan_format(&p, text, sizeof text);
    CHECK(strstr(text, "critic.inf    none  (not in the stage set") != NULL, "plan_format names the absent stages");
    int group[PLAN_NSTAGES];
    CHECK(plan_colocation(&p, group) == 1, "the five stages on the same ranks make one colocation group");

    /* disaggregated: five blocks over 8 ranks (2, 2, 2, 1, 1 in stage order of the five) */
    memset(&p, 0, sizeof p);
    snprintf(p.fill, sizeof p.fill, "disaggregated");
    rc = plan_resolve(&p, &lim, &e);
    CHECK(rc == 0 && p.stage[PLAN_ACTOR_GEN].nranks == 2 && p.stage[PLAN_ACTOR_INF].ranks[0] == 2 &&
              p.stage[PLAN_REF_INF].ranks[0] == 6 && p.stage[PLAN_REWARD_INF].ranks[0] == 7 &&
              !plan_stage_present(&p, PLAN_CRITIC_INF),
          "grpo disaggregated: five blocks (ref.inf at %d, reward.inf at %d)", p.stage[PLAN_REF_INF].ranks[0],
          p.stage[PLAN_REWARD_INF].ranks[0]);
    lim.world = 6;
    memset(&p, 0, sizeof p);
    snprintf(p.fill, sizeof p.fill, "disaggregated");
    CHECK(plan_resolve(&p, &lim, &e) == 0, "grpo disaggregated fits 6 ranks (PPO needs 7)");
    lim.world = 8;

    /* a critic stage written in the deck: refused under its own key */
    memset(&p, 0, sizeof p);
    snprintf(p.fill, sizeof p.fill, "colocated");
    char why[256];
    plan_stage_parse("dp2 @ 0-1", 9, &p.stage[PLAN_CRITIC_TRAIN], why, sizeof why);
    rc = plan_resolve(&p, &lim, &e);
    CHECK(rc != 0 && strcmp(e.key, "plan.critic.train") == 0 && strstr(e.msg, "no critic"),
          "a critic stage in a grpo plan refused under plan.critic.train (%s: %s)", e.key, e.msg);

    /* a critic-free plan under PPO's limits: refused (the critic is missing) */
    PlanLimits ppo = lim;
    ppo.no_critic = 0;
    memset(&p, 0, sizeof p);
    snprintf(p.fill, sizeof p.fill, "auto");
    plan_resolve(&p, &lim, &e);
    rc = plan_resolve(&p, &ppo, &e);
    CHECK(rc != 0 && strcmp(e.key, "plan.critic.inf") == 0, "a grpo plan resolved for ppo refused (%s)", e.key);
}

static void check_search(void) {
    CostModel cm = cost_model_8b_h200();
    Workload w = {512, 128, 1, 512, 500, 500, 0};
    PlanConfig ppo, grpo;
    StepCost sp, sg;
    SearchStats st;
    char why[256];
    int rp = plan_search(&cm, 64, &w, &ppo, &sp, &st, why, sizeof why);
    cm.no_critic = 1;
    int rg = plan_search(&cm, 64, &w, &grpo, &sg, &st, why, sizeof why);
    CHECK(rp == 0 && rg == 0 && !plan_stage_present(&grpo, PLAN_CRITIC_INF) &&
              !plan_stage_present(&grpo, PLAN_CRITIC_TRAIN) && plan_stage_present(&ppo, PLAN_CRITIC_INF),
          "the search leaves the critic stages absent under no_critic (rc %d %d)", rp, rg);
    CHECK(sg.stage[PLAN_CRITIC_INF] == 0 && sg.stage[PLAN_CRITIC_TRAIN] == 0 && sg.total < sp.total && sg.fits,
          "no critic priced: grpo %.3f s/step < ppo %.3f", sg.total, sp.total);
    /* the same plan priced with and without the critic: the critic's stages and sync leg are what differ */
    StepCost a, b;
    cm.no_critic = 0;
    double with = cost_plan(&cm, &ppo, 64, &w, &a);
    cm.no_critic = 1;
    double without = cost_plan(&cm, &ppo, 64, &w, &b);
    CHECK(without < with && b.stage[PLAN_CRITIC_TRAIN] == 0 && b.phase[3] < a.phase[3],
          "no_critic prices a plan's critic stages and sync leg at nothing (%.3f < %.3f; sync %.4f < %.4f)", without,
          with, b.phase[3], a.phase[3]);
    StageOption opt[16];
    CHECK(plan_stage_options(&cm, PLAN_CRITIC_INF, 8, &w, opt, 16) == 0, "no layout options for an absent stage");
}

int main(void) {
    check_resolve();
    check_search();
    return CHECK_DONE();
}
