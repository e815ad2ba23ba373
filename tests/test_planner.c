/* test_planner.c — the planner's pure parts (planner.h): admission on
 * hand-computed cases (admit, refuse, not faster, urgent), the drift
 * monitor (threshold, pool, reference reset, the horizon H), the shapes of
 * live models against the model's own accounting, cost-model rules, the search (a valid plan no slower than the colocated default, at
 * 32, 256 and 1,024 ranks, timed), asynchronous plans priced and searched
 * for K (by hand, and the bound [planner] max_staleness respected), and the
 * refusal of models that cannot fit the pool with what does not fit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cost_fixture.h"
#include "nereus/adapt.h"
#include "nereus/planner.h"
#include "nereus/txprice.h"
#include "nereus/util.h"

/* a transition cost the test sets */
static double fixed_cost(void *ctx, const PlanConfig *a, const PlanConfig *b) {
    (void)a, (void)b;
    return *(const double *)ctx;
}

/* a move priced per model-stage that changes (*ctx seconds each) */
static double per_stage_cost(void *ctx, const PlanConfig *a, const PlanConfig *b) {
    int n = 0;
    for (int s = 0; s < PLAN_NSTAGES; s++) n += !plan_stage_same(&a->stage[s], &b->stage[s]);
    return n * *(const double *)ctx;
}

/* every model-stage tp1 pp1 dp1 on rank 0 but `stage`, which is st */
static PlanConfig plan_on_rank0_but(int stage, PlanStage st) {
    PlanConfig p;
    memset(&p, 0, sizeof p);
    for (int s = 0; s < PLAN_NSTAGES; s++) p.stage[s] = (PlanStage){PLAN_SRC_DECK, 1, 1, 1, 0, 1, {0}};
    p.stage[stage] = st;
    return p;
}

/* admission, by hand: payback C/dL against gamma*H, rent-or-buy, the pool and urgent paths */
static void check_admission(void) {
    char why[512];
    static const struct {
        double L_now, L_new, C, gamma, H, foregone;
        int path, want;
        const char *says, *what;
    } adm[] = {
        {10, 8, 10, 0.5, 20, 0, ADMIT_RULE, 1, "admitted", "admit: dL 2, C 10 -> pays back in 5 <= 0.5 x 20"},
        {10, 8, 30, 0.5, 20, 0, ADMIT_RULE, 0, "refused", "refuse: dL 2, C 30 -> 15 > 10"},
        {10, 10.5, 1, 0.5, 20, 0, ADMIT_RULE, 0, "not faster", "refuse: the new plan is slower"},
        {10, 12, 100, 0.5, 20, 0, ADMIT_URGENT, 1, "urgent", "urgent: admitted without the payback test"},
        {10, 8, 10, 0.5, 10, 0, ADMIT_RULE, 1, "admitted", "admit at equality: 5 <= 0.5 x 10"},
        /* rent-or-buy: dL 2, C 30 pays back in 15 > 10, but 30 s of refused gains already lost: admitted */
        {10, 8, 30, 0.5, 20, 30, ADMIT_RULE, 1, "rent-or-buy",
         "admit: dL 2, C 30 -> 15 > 10, but the gains refused since the last move add up to 30 s >= C"},
        {10, 8, 30, 0.5, 20, 29.9, ADMIT_RULE, 0, "less than C", "refuse: the same with 29.9 s foregone"},
        {10, 10.5, 1, 0.5, 20, 100, ADMIT_RULE, 0, "not faster", "refuse: a slower plan whatever was foregone"},
        {10, 8, 1e9, 0.5, 1, 0, ADMIT_POOL, 0, "pool change, the plan can stay: refused: pays back",
         "pool change the plan survives: the rule refuses a faster plan at C = 1e9 s"},
        {10, 8, 10, 0.5, 20, 0, ADMIT_POOL, 1, "pool change, the plan can stay: admitted: pays back in 5",
         "pool change the plan survives: the rule admits dL 2, C 10 (5 <= 0.5 x 20)"},
        {10, 8, 30, 0.5, 20, 30, ADMIT_POOL, 1, "rent-or-buy", "pool change: rent-or-buy as at a crossing"},
        {10, 10, 0.1, 0.5, 20, 0, ADMIT_POOL, 0, "not faster", "pool change: a plan no faster refused, however cheap"},
    };
    for (size_t k = 0; k < sizeof adm / sizeof adm[0]; k++) {
        int got = admit(adm[k].L_now, adm[k].L_new, adm[k].C, adm[k].gamma, adm[k].H, adm[k].foregone, adm[k].path, why,
                        sizeof why);
        CHECK(got == adm[k].want && strstr(why, adm[k].says), "%s (%s)", adm[k].what, why);
    }
}

/* the measure-and-revert guard: the new plan's measured step against the old plan's expected */
static void check_guard(void) {
    char why[512];
    {
        AdaptGuard g = {0.8}; /* the old plan ran at 0.8 x its prediction */
        double ex = 0;
        /* the model now says 0.30 for the old plan (longer responses): expect 0.8 x 0.30 = 0.24 */
        CHECK(adapt_guard(&g, 0.27, 0.30, 0.1, &ex, why, sizeof why) == 1 && fabs(ex - 0.24) < 1e-12 &&
                  strncmp(why, "measured revert", 15) == 0,
              "guard: new 0.27 > 0.24 x 1.1 = 0.264: revert (%s)", why);
        CHECK(adapt_guard(&g, 0.26, 0.30, 0.1, &ex, why, sizeof why) == 0 && strncmp(why, "measured keep", 13) == 0,
              "guard: new 0.26 <= 0.264: keep (%s)", why);
        CHECK(adapt_guard(&g, 0.2401, 0.30, 0.0, &ex, why, sizeof why) == 1,
              "guard: margin 0: any slower measurement reverts (%s)", why);
        g.prev_ratio = NAN; /* the old plan had no prediction to compare with */
        CHECK(adapt_guard(&g, 10.0, 0.30, 0.1, &ex, why, sizeof why) == 0 && strstr(why, "nothing to compare"),
              "guard: without the old plan's ratio, never a revert (%s)", why);
    }
}

/* the drift monitor */
static void check_drift(void) {
    DriftMonitor d;
    drift_init(&d, 0.3, 100, 1.0, 8);
    CHECK(drift_check(&d, 125, 1.0, 8, 0) == DRIFT_NONE, "length +25%%: below the 30%% threshold");
    CHECK(drift_check(&d, 140, 1.0, 8, 0) == DRIFT_LENGTH, "length +40%%: a crossing");
    CHECK(drift_check(&d, 80, 1.0, 8, 0) == DRIFT_NONE && drift_check(&d, 75, 1.0, 8, 0) == DRIFT_LENGTH,
          "length shrunk by a factor 1.25 (80): none; by 1.33 (75): a crossing");
    {
        DriftMonitor d1;
        drift_init(&d1, 1.0, 2000, 1.0, 8); /* threshold 1: a factor 2 either way */
        CHECK(drift_check(&d1, 1100, 1.0, 8, 0) == DRIFT_NONE && drift_check(&d1, 900, 1.0, 8, 0) == DRIFT_LENGTH &&
              drift_check(&d1, 4100, 1.0, 8, 0) == DRIFT_LENGTH,
              "threshold 1: responses halved (900 of 2000) or doubled (4100) cross, 1100 does not");
    }
    CHECK(drift_check(&d, 100, 1.0, 7, 0) == DRIFT_POOL, "a rank left the pool: urgent");
    CHECK(drift_check(&d, 100, 0.5, 8, 0) == DRIFT_EFFICIENCY, "a rank at half speed: efficiency");
    CHECK(drift_check(&d, 100, 1.0, 8, 1) == DRIFT_OOM, "predicted out-of-memory: urgent");
    CHECK(drift_horizon(&d, 0, 1000) == 1000, "H before any crossing: the steps remaining (1000)");
    drift_reset(&d, 10, 140, 1.0, 8);
    CHECK(drift_check(&d, 150, 1.0, 8, 0) == DRIFT_NONE, "after the reset the reference is 140: 150 is +7%%");
    drift_reset(&d, 30, 190, 1.0, 8);
    drift_reset(&d, 70, 250, 1.0, 8);
    CHECK(fabs(drift_horizon(&d, 70, 1000) - 30) < 1e-9, "H = mean gap (20 + 40) / 2 = 30 (%.3g)", drift_horizon(&d, 70, 1000));
    CHECK(fabs(drift_horizon(&d, 990, 1000) - 10) < 1e-9, "H capped by the steps remaining (10)");
    { /* a slowdown in spells of 2 steps every 8: its own horizon from the slowed crossings' gaps */
        DriftMonitor o;
        drift_init(&o, 0.3, 100, 1.0, 8);
        CHECK(drift_horizon_kind(&o, 10, 40, DRIFT_SLOWED) == 30, "H at a first slowdown: the steps remaining (30)");
        for (int k = 0; k < 3; k++) {
            drift_reset_kind(&o, 10 + 8 * k, 100, 1.0, 8, DRIFT_SLOWED); /* a rank slowed */
            drift_reset_kind(&o, 12 + 8 * k, 100, 1.0, 8, DRIFT_OTHER);  /* and back 2 steps on */
        }
        CHECK(fabs(drift_horizon_kind(&o, 34, 100, DRIFT_SLOWED) - 2) < 1e-9 &&
              fabs(drift_horizon_kind(&o, 34, 100, DRIFT_OTHER) - 3.6) < 1e-9,
              "spells of 2 every 8: H 2 at a slowdown (%.3g), the mean gap (2 + 6 + 2 + 6 + 2) / 5 = 3.6 otherwise (%.3g)",
              drift_horizon_kind(&o, 34, 100, DRIFT_SLOWED), drift_horizon_kind(&o, 34, 100, DRIFT_OTHER));
    }
}

/* shape_of_config against the model's own accounting: the parameter count is gpt_logical_numel and the
   forward FLOPs per token gpt_flops_per_token_fwd, for GPT-2 and the Llama family's variants */
static void check_shape_of_config(void) {
    GPTConfig g2 = {.V = 50257, .maxT = 1024, .L = 12, .C = 768, .NH = 12};
    GPTConfig ll = {.V = 32000, .maxT = 2048, .L = 4, .C = 256, .NH = 8, .arch = GPT_ARCH_LLAMA, .NKV = 2, .ffn = 688};
    GPTConfig q2 = ll, q3 = ll, crit = g2, llcrit = ll;
    q2.arch = GPT_ARCH_QWEN2, q2.qkv_bias = 1, q2.untied = 1;
    q3.arch = GPT_ARCH_QWEN3, q3.qk_norm = 1, q3.head_dim = 64; /* NH·hd = 512 ≠ C */
    crit.value_head = 1;
    llcrit.untied = 1, llcrit.value_head = 1;
    const struct { const char *n; GPTConfig c; } cs[] = {
        {"gpt2-124M", g2}, {"llama GQA", ll}, {"qwen2 bias, untied", q2}, {"qwen3 QK-norm, hd 64", q3},
        {"gpt2 critic", crit}, {"llama critic, untied", llcrit},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        ModelShape m = shape_of_config(&cs[i].c, "x");
        double p = shape_params(&m), n = (double)gpt_logical_numel(&cs[i].c);
        CHECK(p == n, "%s: shape_params %.0f = gpt_logical_numel %.0f", cs[i].n, p, n);
        for (int T = 1; T <= 1024; T *= 32) {
            double f = shape_fwd_flops(&m, T), g = gpt_flops_per_token_fwd(&cs[i].c, T);
            CHECK(fabs(f - g) <= 1e-9 * g, "%s, T %d: shape_fwd_flops %.6g = gpt_flops_per_token_fwd %.6g", cs[i].n,
                  T, f, g);
        }
    }
    ModelShape m = shape_of_config(&ll, "x");
    CHECK(m.KVH == 2 && m.FFN == 688 && m.gated && m.tied && m.V == 32000 && m.HD == 32 && !m.pos && !m.bias &&
              m.norm_vecs == 1,
          "llama: KVH 2, FFN 688, gated, tied, V 32000, HD 32, no wpe, no biases, RMSNorm");
}

/* [model] gen_dtype = bf16 on a live model (exact memory): actor.gen's memory grows by the bf16 copy, half its
   fp32 parameters, and a memory-bound decode reads half the weight bytes; training is unchanged */
static void check_gen_bf16(void) {
    GPTConfig g2 = {.V = 50257, .maxT = 256, .L = 12, .C = 768, .NH = 12};
    CostModel cm;
    memset(&cm, 0, sizeof cm);
    cm.hw.flops = 1e14, cm.hw.hbm = 20e9, cm.hw.mem = 64e9, cm.hw.ranks_per_node = 1;
    cm.hw.bw[0] = cm.hw.bw[1] = 1e10;
    cm.eff = eff_default();
    cm.actor = shape_of_config(&g2, "actor");
    cm.critic = cm.actor;
    cm.headroom = 0.1;
    Workload w = {4, 4, 1, 32, 64, 64, 0};
    GridLayout one = {1, 1, 1};
    double m32, m16, t32 = cost_stage(&cm, PLAN_ACTOR_GEN, one, &w, &m32), tr32, tr16, mt32, mt16;
    tr32 = cost_stage(&cm, PLAN_ACTOR_TRAIN, one, &w, &mt32);
    cm.gen_wbytes = 2;
    double t16 = cost_stage(&cm, PLAN_ACTOR_GEN, one, &w, &m16);
    tr16 = cost_stage(&cm, PLAN_ACTOR_TRAIN, one, &w, &mt16);
    double copy = 0.5 * (double)gpt_shard_state_bytes(&g2, 1, 1, 0, 0);
    CHECK(m16 - m32 == copy && copy > 2.4e8, "gen_dtype bf16: actor.gen's memory + the bf16 copy %.3g bytes", copy);
    CHECK(t16 < 0.7 * t32, "gen_dtype bf16: a memory-bound generation step %.3g s against fp32's %.3g s", t16, t32);
    CHECK(tr16 == tr32 && mt16 == mt32, "gen_dtype bf16: actor.train's time and memory unchanged");
}

/* cost model rules on the 8B actor and critic */
static void check_cost_rules(const CostModel *cm, const Workload *w) {
    double p8 = shape_params(&cm->actor);
    CHECK(p8 > 7.9e9 && p8 < 8.2e9, "llama-3.1-8b: %.3g parameters (8.03e9 published)", p8);
    /* every modelled shape against its model card's published count */
    static const struct { const char *n; double published; } cards[] = {
        {"llama-3.1-8b", 8.03e9}, {"qwen3-14b", 14.8e9}, {"qwen3-32b", 32.8e9}, {"llama-3.3-70b", 70.6e9}};
    for (int i = 0; i < 4; i++) {
        ModelShape s;
        CHECK(shape_named(cards[i].n, &s) == 0, "%s is a modelled shape", cards[i].n);
        double n = shape_params(&s);
        CHECK(fabs(n - cards[i].published) <= 0.005 * cards[i].published, "%s: %.4g parameters (%.3g published)",
              cards[i].n, n, cards[i].published);
    }
    double mem = 0;
    CHECK(isinf(cost_stage(cm, PLAN_ACTOR_GEN, (GridLayout){1, 2, 4}, w, &mem)), "generation with pp > 1 is refused");
    CHECK(isinf(cost_stage(cm, PLAN_ACTOR_INF, (GridLayout){3, 1, 1}, w, &mem)), "tp 3 does not divide 8 KV heads");
    double t1 = cost_stage(cm, PLAN_ACTOR_TRAIN, (GridLayout){8, 1, 4}, w, &mem);
    double t2 = cost_stage(cm, PLAN_ACTOR_TRAIN, (GridLayout){8, 1, 8}, w, &mem);
    CHECK(t2 < t1, "training: dp8 faster than dp4 (%.2f s < %.2f s)", t2, t1);
    Workload w4 = *w;
    w4.resp_len = w4.resp_max = 2000;
    double g1 = cost_stage(cm, PLAN_ACTOR_GEN, (GridLayout){1, 1, 8}, w, &mem);
    double g4 = cost_stage(cm, PLAN_ACTOR_GEN, (GridLayout){1, 1, 8}, &w4, &mem);
    CHECK(g4 > 3.5 * g1, "generation grows with the response length (4x tokens: %.2f -> %.2f s)", g1, g4);
}

/* ranks sharing cores, by hand: on 2 cores, actor.train on rank 0, then critic.train on ranks 0-1 (dp2): rank 1
   waits inside the critic's first collective while rank 0 trains the actor; links free */
static void check_shared_cores(void) {
    {
        CostModel sh;
        memset(&sh, 0, sizeof sh);
        sh.hw = h200();
        sh.hw.bw[0] = sh.hw.bw[1] = 1e30, sh.hw.lat[0] = sh.hw.lat[1] = 0;
        sh.hw.cores = 2;
        sh.eff = eff_default();
        GPTConfig g = {.V = 64, .maxT = 32, .L = 2, .C = 64, .NH = 4, .value_head = 0};
        sh.actor = shape_of_config(&g, "actor");
        g.value_head = 1;
        sh.critic = shape_of_config(&g, "critic");
        Workload ww = {64, 16, 2, 10, 12, 12, 0};
        double A = cost_stage_compute(&sh, PLAN_ACTOR_TRAIN, (GridLayout){1, 1, 1}, &ww);
        double K2 = cost_stage_compute(&sh, PLAN_CRITIC_TRAIN, (GridLayout){1, 1, 2}, &ww);
        PlanConfig pl = plan_on_rank0_but(PLAN_CRITIC_TRAIN, (PlanStage){PLAN_SRC_DECK, 1, 1, 2, 0, 2, {0, 1}});
        StepCost c;
        cost_plan(&sh, &pl, 2, &ww, &c);
        /* the stages' predictions as their ranks time them: what cal_add observes */
        static Calibration cal;
        double st[2];
        int ids[2] = {PLAN_ACTOR_TRAIN, PLAN_CRITIC_TRAIN};
        for (int k = 0; k < 2; k++) {
            memset(&cal, 0, sizeof cal);
            cal_add(&cal, &sh, &pl, 2, &ww, ids[k], 1.0);
            st[k] = 0;
            for (int e = 0; e < EFF_N; e++) st[k] += cal.obs[0].a[e] / sh.eff.f[e];
        }
        CHECK(fabs(c.phase[2] - (A + K2)) < 1e-9 * (A + K2), "2 cores: the actor's training, then the critic's on both "
              "ranks: the phase %.4g s = A %.4g + K2 %.4g", c.phase[2], A, K2);
        CHECK(fabs(st[0] - A) < 1e-9 * A && fabs(st[1] - (A + K2)) < 1e-9 * (A + K2),
              "2 cores: actor.train as timed %.4g s (A), critic.train %.4g s (A + K2: rank 1 waits in it for rank 0)",
              st[0], st[1]);
        /* side by side on 3 ranks: the actor on rank 0, the critic dp2 on ranks 1-2. The cores go to the two
           stages, one each: the actor alone at full pace, the critic's two ranks at half until the actor is
           done, then at full pace */
        pl.stage[PLAN_CRITIC_TRAIN] = (PlanStage){PLAN_SRC_DECK, 1, 1, 2, 0, 2, {1, 2}};
        cost_plan(&sh, &pl, 3, &ww, &c);
        double want = A < 2 * K2 ? K2 + A / 2 : A; /* the critic at half pace until the actor is done, then alone */
        CHECK(fabs(c.phase[2] - want) < 1e-9 * want,
              "2 cores, the actor on rank 0 beside the critic on ranks 1-2: a core each, then both to the critic: "
              "the phase %.4g s (A %.4g, K2 %.4g)", c.phase[2], A, K2);
        /* scoring replicas start on their own: on 2 cores, actor.inf on rank 0 (A_i), ref.inf dp2 on ranks 0-1
           (R_i a replica), critic.inf on rank 0 (C_i). Rank 1's ref replica starts at once, beside rank 0's
           actor (a core each), rank 0's after its actor: the phase A_i + R_i + C_i, ref.inf as timed R_i (its
           replicas each R_i from their own start; were it to start on both ranks together, rank 1 would wait
           A_i inside it: A_i + R_i) */
        {
            double Ai = cost_stage_compute(&sh, PLAN_ACTOR_INF, (GridLayout){1, 1, 1}, &ww);
            double Ri = cost_stage_compute(&sh, PLAN_REF_INF, (GridLayout){1, 1, 2}, &ww);
            double Ci = cost_stage_compute(&sh, PLAN_CRITIC_INF, (GridLayout){1, 1, 1}, &ww);
            PlanConfig pi = plan_on_rank0_but(PLAN_REF_INF, (PlanStage){PLAN_SRC_DECK, 1, 1, 2, 0, 2, {0, 1}});
            StepCost ci;
            cost_plan(&sh, &pi, 2, &ww, &ci);
            memset(&cal, 0, sizeof cal);
            cal_add(&cal, &sh, &pi, 2, &ww, PLAN_REF_INF, 1.0);
            double rt = 0;
            for (int e = 0; e < EFF_N; e++) rt += cal.obs[0].a[e] / sh.eff.f[e];
            CHECK(Ai > 0 && Ri > 0 && Ci > 0 && fabs(ci.phase[1] - (Ai + Ri + Ci)) < 1e-9 * ci.phase[1] &&
                      fabs(rt - Ri) < 1e-9 * Ri,
                  "2 cores, scoring replicas on their own: the inference phase %.4g s = A %.4g + R %.4g + C %.4g, "
                  "ref.inf as timed %.4g s = R (not A + R)", ci.phase[1], Ai, Ri, Ci, rt);
        }
        /* cal_phase_scales, by hand: two plans whose training phases measured 2x and 0.5x what cost_plan gives
           unscaled, over 1 and 3 steps: exp((ln 2 + 3 ln 0.5) / 4) = 2^-0.5; gen and inf measured as predicted;
           scales already in force are not what it compares against */
        PlanConfig pl2 = pl;
        pl2.stage[PLAN_CRITIC_TRAIN] = (PlanStage){PLAN_SRC_DECK, 1, 1, 2, 0, 2, {0, 1}};
        StepCost c1, c2;
        sh.phase_scale[0] = sh.phase_scale[1] = sh.phase_scale[2] = 1;
        cost_plan(&sh, &pl, 3, &ww, &c1);
        cost_plan(&sh, &pl2, 3, &ww, &c2);
        PhaseObs po[2] = {{&pl, ww, {c1.phase[0], c1.phase[1], 2 * c1.phase[2]}, 1},
                          {&pl2, ww, {c2.phase[0], c2.phase[1], 0.5 * c2.phase[2]}, 3}};
        sh.phase_scale[0] = 3, sh.phase_scale[1] = 0.3, sh.phase_scale[2] = 1.7;
        cal_phase_scales(&sh, 3, po, 2);
        CHECK(fabs(sh.phase_scale[2] - sqrt(0.5)) < 1e-12 && fabs(sh.phase_scale[0] - 1) < 1e-12 &&
                  fabs(sh.phase_scale[1] - 1) < 1e-12,
              "cal_phase_scales: gen %.6f inf %.6f train %.6f (want 1, 1, 0.707107)", sh.phase_scale[0],
              sh.phase_scale[1], sh.phase_scale[2]);
        po[0].ph[2] = 1e3 * c1.phase[2], po[1].ph[2] = 1e3 * c2.phase[2];
        cal_phase_scales(&sh, 3, po, 2);
        CHECK(sh.phase_scale[2] == 4.0, "cal_phase_scales: a scale past 4 is held at 4 (%.3f)", sh.phase_scale[2]);
    }
}

/* cal_fit_plans: the pipeline crossings' wait, fitted. A "true" model on 4 ranks sharing 2 cores waits 160 message
   latencies at each pipeline crossing; its stages and phases are the measurements. A fit that starts at the
   default 20 hops, as the sweep does, must find 160 on the grid and predict the plans' phases closer than cal_fit
   at 20 does */
static void check_fit_plans(void) {
    {
        CostModel truth;
        memset(&truth, 0, sizeof truth);
        truth.hw = h200();
        truth.hw.ranks_per_node = 4, truth.hw.cores = 2;
        truth.hw.bw[0] = truth.hw.bw[1] = 1e10, truth.hw.lat[0] = truth.hw.lat[1] = 5e-6;
        truth.hw.op_s = 1e-6, truth.hw.rho_exp = 1, truth.hw.pipe_hops = 160;
        truth.eff = eff_default();
        truth.eff.f[EFF_GEMM] = 0.3, truth.eff.f[EFF_LAT] = 0.9, truth.eff.f[EFF_P2P_INTRA] = 0.1;
        GPTConfig g = {.V = 64, .maxT = 32, .L = 4, .C = 64, .NH = 4, .value_head = 0};
        truth.actor = shape_of_config(&g, "actor");
        g.value_head = 1;
        truth.critic = shape_of_config(&g, "critic");
        Workload ww = {64, 16, 2, 10, 12, 12, 0};
        static const struct { int stage; PlanStage st; } lay[] = {
            {PLAN_CRITIC_TRAIN, {PLAN_SRC_DECK, 1, 2, 1, 0, 2, {0, 1}}},
            {PLAN_CRITIC_TRAIN, {PLAN_SRC_DECK, 1, 4, 1, 0, 4, {0, 1, 2, 3}}},
            {PLAN_ACTOR_TRAIN, {PLAN_SRC_DECK, 1, 2, 1, 0, 2, {2, 3}}},
            {PLAN_CRITIC_TRAIN, {PLAN_SRC_DECK, 1, 1, 2, 0, 2, {0, 1}}},
            {PLAN_ACTOR_TRAIN, {PLAN_SRC_DECK, 2, 1, 1, 0, 2, {0, 1}}},
            {PLAN_CRITIC_TRAIN, {PLAN_SRC_DECK, 1, 2, 2, 0, 4, {0, 1, 2, 3}}},
            {PLAN_ACTOR_TRAIN, {PLAN_SRC_DECK, 1, 1, 1, 0, 1, {1}}},
            {PLAN_ACTOR_INF, {PLAN_SRC_DECK, 1, 2, 2, 0, 4, {0, 1, 2, 3}}},
        };
        enum { NP = sizeof lay / sizeof lay[0] };
        static PlanConfig plans[NP];
        static Calibration cal;
        PhaseObs po[NP];
        CostModel at = truth;
        at.eff = eff_default();
        at.hw.pipe_hops = 0, at.hw.rho_exp = 0;
        memset(&cal, 0, sizeof cal);
        for (int i = 0; i < NP; i++) {
            plans[i] = plan_on_rank0_but(lay[i].stage, lay[i].st);
            StepCost t;
            cost_plan(&truth, &plans[i], 4, &ww, &t);
            for (int s = 0; s < PLAN_NSTAGES; s++)
                if (s != PLAN_REWARD_INF && t.stage[s] > 0) cal_add(&cal, &at, &plans[i], 4, &ww, s, t.stage[s]);
            for (int ph = 0; ph < 3; ph++) cal_add_phase(&cal, &at, &plans[i], 4, &ww, ph, t.phase[ph]);
            po[i] = (PhaseObs){&plans[i], ww, {t.phase[0], t.phase[1], t.phase[2]}, 1};
        }
        CostModel fixed = at, fitted = at;
        fixed.eff = fitted.eff = eff_default();
        cal_fit(&cal, &fixed);
        cal_phase_scales(&fixed, 4, po, NP);
        cal_fit_plans(&cal, &fitted, 4, po, NP);
        double ef = 0, ep = 0; /* the worst relative error of the phases' sum over the plans */
        for (int i = 0; i < NP; i++) {
            StepCost a, b;
            cost_plan(&fixed, &plans[i], 4, &ww, &a);
            cost_plan(&fitted, &plans[i], 4, &ww, &b);
            double m = po[i].ph[0] + po[i].ph[1] + po[i].ph[2];
            ef = fmax(ef, fabs(a.phase[0] + a.phase[1] + a.phase[2] - m) / m);
            ep = fmax(ep, fabs(b.phase[0] + b.phase[1] + b.phase[2] - m) / m);
        }
        CHECK(fixed.hw.pipe_hops == 20 && fitted.hw.pipe_hops == 160 && ep < 0.5 * ef,
              "cal_fit_plans: pipeline waits of 160 hops found (%.3g; cal_fit keeps %.3g); the plans' worst error "
              "%.2f%% against %.2f%% at 20 hops", fitted.hw.pipe_hops, fixed.hw.pipe_hops, 100 * ep, 100 * ef);
    }
}

/* the search at 8 and 16 ranks (with the local search: SEARCH_REFINE_MAX), 32, 256, 1,024, against the colocated
   default */
static void check_search(const CostModel *cm, const Workload *w) {
    char why[512];
    int sizes[5] = {8, 16, 32, 256, 1024};
    for (int k = 0; k < 5; k++) {
        int N = sizes[k];
        PlanConfig pc;
        StepCost sc;
        SearchStats st;
        Workload ws = *w;
        ws.batch = 1024, ws.minibatch = 256;
        int rc = plan_search(cm, N, &ws, &pc, &sc, &st, why, sizeof why);
        int valid = rc == 0;
        PlanLimits lim = {N, cm->actor.NH, cm->actor.L, ws.batch, ws.minibatch, cm->actor.KVH, cm->actor.FFN, 0};
        PlanError pe;
        for (int s = 0; s < PLAN_NSTAGES && valid; s++)
            if (plan_validate_stage(&pc.stage[s], s, &lim, &pe) != 0) {
                valid = 0;
                printf("  invalid %s: %s\n", plan_stage_name(s), pe.msg);
            }
        /* the colocated default plan for comparison */
        PlanConfig def;
        memset(&def, 0, sizeof def);
        PlanError de;
        StepCost dsc;
        double tdef = INFINITY;
        if (plan_default(&def, "colocated", &lim, 0, &de) == 0) tdef = cost_plan(cm, &def, N, &ws, &dsc);
        char text[8192];
        if (valid) plan_format(&pc, text, sizeof text);
        int dfits = isfinite(tdef) && dsc.fits;
        CHECK(valid && sc.fits && (sc.total <= tdef * 1.0000001 || !dfits),
              "%4d ranks, 8B actor and critic: search %.2f ms (goal <= 34 ms at 1024), %ld layouts, %ld groupings; "
              "predicted step %.2f s (gen %.2f inf %.2f train %.2f sync %.3f) vs colocated default %.2f s%s; peak %.1f GB%s",
              N, st.seconds * 1e3, st.candidates, st.groupings, sc.total, sc.phase[0], sc.phase[1], sc.phase[2],
              sc.phase[3], tdef, dfits ? "" : " (which does not fit memory)", sc.peak_mem / 1e9, rc ? why : "");
        if (valid && N == 32) printf("%s", text);
        printf("planner_search_ms_%d: %.3f\n", N, st.seconds * 1e3);
    }
}

/* ---- asynchronous plans (planner.h: cost_plan_overlap) ---------------------------- */

/* model-stage s of p: tp1 pp1 dp`dp` on ranks first .. first + dp − 1 */
static void put(PlanConfig *p, int s, int dp, int first) {
    PlanStage *ps = &p->stage[s];
    memset(ps, 0, sizeof *ps);
    *ps = (PlanStage){PLAN_SRC_DECK, 1, 1, dp, 0, dp, {0}};
    for (int i = 0; i < dp; i++) ps->ranks[i] = (int16_t)(first + i);
}

/* on 16 ranks: actor.gen dp8 on 0-7, every other model-stage dp8 on gen_first .. gen_first + 7 */
static PlanConfig split16(int rest_first) {
    PlanConfig p;
    memset(&p, 0, sizeof p);
    snprintf(p.fill, sizeof p.fill, "auto");
    put(&p, PLAN_ACTOR_GEN, 8, 0);
    for (int s = 1; s < PLAN_NSTAGES; s++) put(&p, s, 8, rest_first);
    return p;
}

/* the cost model's K at a bound: max_staleness and whether it is fixed */
static CostModel with_k(const CostModel *cm0, int max_k, int fixed) {
    CostModel cm = *cm0;
    cm.max_staleness = max_k, cm.staleness_fixed = fixed;
    return cm;
}

/* The price of a plan for K, by hand: with K = 0 every price is the phases' sum as before; actor.gen on ranks
   of its own costs max(gen, scoring + training) + the rollout + sync with K = 1, the smallest K of that price
   where the planner chooses; a colocated plan (or one sharing a single rank) costs the sum whatever K; on
   shared cores without a core per busy rank nothing overlaps */
static void check_async_price(const CostModel *cm0) {
    Workload w = {512, 128, 1, 512, 2000, 2000, 0};
    CostModel c0 = with_k(cm0, 0, 0), c2 = with_k(cm0, 2, 0), f1 = with_k(cm0, 1, 1), f2 = with_k(cm0, 2, 1);
    PlanConfig dis = split16(8), col = split16(0), part = split16(7);
    StepCost a, b, c, d;
    double t0 = cost_plan(&c0, &dis, 16, &w, &a);
    CHECK(a.staleness == 0 && !a.overlap && a.rollout_s == 0 &&
              t0 == a.phase[0] + a.phase[1] + a.phase[2] + a.phase[3] + c0.overhead_s && a.sync_total == t0,
          "K = 0: a split plan's price is its phases' sum, bit for bit (%.4f s = gen %.3f + inf %.3f + train %.3f + "
          "sync %.3f)", t0, a.phase[0], a.phase[1], a.phase[2], a.phase[3]);
    double t2 = cost_plan(&c2, &dis, 16, &w, &b);
    double want = fmax(b.phase[0], b.phase[1] + b.phase[2]) + b.rollout_s + b.phase[3] + c2.overhead_s;
    CHECK(cost_plan_overlap(&c2, &dis, 16) && b.overlap && b.staleness == 1 && t2 == want && b.sync_total == t0 &&
              memcmp(a.phase, b.phase, sizeof a.phase) == 0 && t2 < t0 && b.rollout_s > 0 && b.rollout_s < 0.01 * t2,
          "K <= 2 chosen, actor.gen on ranks 0-7, the rest on 8-15: K = 1, max(gen %.3f, inf + train %.3f) + rollout "
          "%.5f + sync %.3f = %.4f s against %.4f synchronous", b.phase[0], b.phase[1] + b.phase[2], b.rollout_s,
          b.phase[3], t2, t0);
    double k1 = cost_plan(&f1, &dis, 16, &w, &c), k2 = cost_plan(&f2, &dis, 16, &w, &d);
    CHECK(c.staleness == 1 && d.staleness == 2 && k1 == t2 && k2 == t2,
          "fixed K = 1 and K = 2 on the split plan: the same price as the planner's K = 1 (%.4f, %.4f s): a larger K "
          "brings nothing", k1, k2);
    double s0 = cost_plan(&c0, &col, 16, &w, &a), s1 = cost_plan(&f1, &col, 16, &w, &b);
    double s2 = cost_plan(&c2, &col, 16, &w, &c);
    CHECK(!cost_plan_overlap(&f1, &col, 16) && b.staleness == 1 && !b.overlap && s1 == s0 && c.staleness == 0 &&
              s2 == s0,
          "colocated (every model-stage on 0-7): K = 1 fixed costs the synchronous %.4f s (%.4f); the planner "
          "chooses K = 0 (%d)", s0, s1, c.staleness);
    double p0 = cost_plan(&c0, &part, 16, &w, &a), p2 = cost_plan(&c2, &part, 16, &w, &b);
    CHECK(!cost_plan_overlap(&c2, &part, 16) && b.staleness == 0 && p2 == p0,
          "actor.gen on 0-7 and the rest on 7-14 share rank 7: no overlap priced, K = 0 (%.4f s = %.4f)", p2, p0);
    /* reward.inf without a network holds nothing: on a gen rank it does not stop the overlap */
    PlanConfig rw = dis;
    put(&rw, PLAN_REWARD_INF, 1, 0);
    CostModel nr = c2, wr = c2;
    nr.have_rm = 0, wr.have_rm = 1;
    CHECK(cost_plan_overlap(&nr, &rw, 16) && !cost_plan_overlap(&wr, &rw, 16),
          "reward.inf on gen rank 0: overlap without a reward network, none with one");
    CostModel sh = c2;
    sh.hw.cores = 4; /* 8 busy ranks a node on 4 cores: generation and the rest would take cores from each other */
    double h2 = cost_plan(&sh, &dis, 16, &w, &a);
    CostModel sh8 = sh;
    sh8.hw.cores = 8;
    CHECK(!cost_plan_overlap(&sh, &dis, 16) && a.staleness == 0 && h2 == a.sync_total && cost_plan_overlap(&sh8, &dis, 16),
          "shared cores: 8 busy ranks on 4 cores a node, no overlap (K = 0, %.4f s); on 8 cores, overlap", h2);
    const double ph[3] = {3, 1, 1.5};
    cost_plan(&c2, &dis, 16, &w, &b);
    cost_plan(&c0, &dis, 16, &w, &a);
    CHECK(cost_step_of_phases(&b, ph) == 3 + b.rollout_s + b.phase[3] && cost_step_of_phases(&a, ph) == 5.5 + a.phase[3],
          "measured phases 3, 1, 1.5 s: combined as max(3, 2.5) + rollout + sync with overlap, 5.5 + sync without");
}

/* The search and [planner] max_staleness: −1 with the deck's K = 0, and 0, never choose K > 0 (the plan and its
   price bit for bit those of a model without asynchronous rollouts); −1 with the deck's K = 1 runs every plan at
   K = 1; a bound of 2 chooses K = 1 with actor.gen on ranks of its own, faster than the synchronous best; the 50/50
   split puts actor.gen on the first half and everything else on the second */
static void check_async_search(const CostModel *cm0) {
    char why[512];
    int N = 64;
    Workload w = {512, 128, 1, 512, 2000, 2000, 0};
    PlanConfig p0, pm, pz, pf, p2, ph;
    StepCost s0, sm, sz, sf, s2, sh;
    SearchStats st;
    CostModel dk0 = with_k(cm0, 0, 1), zero = with_k(cm0, 0, 0), dk1 = with_k(cm0, 1, 1), two = with_k(cm0, 2, 0);
    int rc = plan_search(cm0, N, &w, &p0, &s0, &st, why, sizeof why);
    rc |= plan_search(&dk0, N, &w, &pm, &sm, &st, why, sizeof why);
    rc |= plan_search(&zero, N, &w, &pz, &sz, &st, why, sizeof why);
    CHECK(rc == 0 && plan_same(&p0, &pm) && plan_same(&p0, &pz) && sm.total == s0.total && sz.total == s0.total &&
              sm.staleness == 0 && sz.staleness == 0 && !sm.overlap && !sz.overlap,
          "[planner] max_staleness -1 (deck K 0) and 0: the synchronous search's plan and price (%.4f s), K = 0",
          s0.total);
    rc = plan_search(&dk1, N, &w, &pf, &sf, &st, why, sizeof why);
    CHECK(rc == 0 && sf.staleness == 1 && sf.total <= s0.total,
          "[planner] max_staleness -1 with the deck's K = 1: the plan runs at K = 1 (%.4f s, overlap %d)", sf.total,
          sf.overlap);
    rc = plan_search(&two, N, &w, &p2, &s2, &st, why, sizeof why);
    CHECK(rc == 0 && s2.staleness == 1 && s2.overlap && cost_plan_overlap(&two, &p2, N) && s2.total < 0.9 * s0.total &&
              p2.stage[PLAN_ACTOR_GEN].nranks < N,
          "[planner] max_staleness 2: K = 1 with actor.gen on %d ranks of its own, %.4f s against the synchronous "
          "%.4f s (gen %.3f, inf + train %.3f)", p2.stage[PLAN_ACTOR_GEN].nranks, s2.total, s0.total, s2.phase[0],
          s2.phase[1] + s2.phase[2]);
    rc = plan_search_mode(&two, N, NULL, N, &w, SEARCH_HALF, &ph, &sh, &st, why, sizeof why);
    int halves = rc == 0;
    for (int s = 0; s < PLAN_NSTAGES && halves; s++)
        for (int i = 0; i < ph.stage[s].nranks; i++)
            if (s != PLAN_REWARD_INF || two.have_rm)
                halves &= s == PLAN_ACTOR_GEN ? ph.stage[s].ranks[i] < N / 2 : ph.stage[s].ranks[i] >= N / 2;
    CHECK(halves && sh.overlap && sh.total >= s2.total,
          "the 50/50 split: actor.gen on 0-31, the rest on 32-63, %.4f s, no faster than the planner's %.4f s",
          sh.total, s2.total);
}

/* a model that cannot fit the pool */
static void check_too_big(const CostModel *cm, const Workload *w) {
    char why[512];
    CostModel big = *cm;
    shape_named("llama-3.3-70b", &big.actor);
    big.critic = big.actor;
    big.critic.value_head = 1;
    big.hw.mem = 24e9;
    PlanConfig pc;
    StepCost sc;
    SearchStats st;
    int rc = plan_search(&big, 2, w, &pc, &sc, &st, why, sizeof why);
    CHECK(rc == -1 && strstr(why, "needs") && strstr(why, "GiB"), "70B on 2 ranks of 24 GB refused: %s", why);
}

/* The controller's checks share one job: 64 ranks, the 8B actor and critic, moves priced at huge_C (fixed_cost);
   each check leaves the pool and the responses (o) as the next one starts from. */
typedef struct ControllerJob {
    CostModel cm;
    int N, pool[64];
    Workload w0, w1;  /* the responses at the start, and 4x longer */
    double huge_C;
    AdaptConfig ac;   /* payback, moves at huge_C */
    Observed o;
    PlanConfig on32;  /* the plan on the 32 ranks left when half the pool leaves */
} ControllerJob;

/* the controller (adapt.h): a refused replan still resets the references; pool changes; admit-all */
static void check_controller_pool(ControllerJob *x, const Workload *w) {
    char why[512];
    int N = x->N = 64, *pool = x->pool;
    for (int r = 0; r < N; r++) pool[r] = r;
    const CostModel *cm = &x->cm;
    Workload w0 = x->w0 = *w;
    PlanConfig start;
    StepCost s0;
    x->o = (Observed){w0.resp_len, N, pool, NULL, 0};
    Observed *o = &x->o;
    CHECK(adapt_search(cm, &w0, ADAPT_PAYBACK, N, o, &start, &s0, why, sizeof why) == 0, "controller: a start plan");
    x->huge_C = 1e9;
    AdaptConfig ac = x->ac = (AdaptConfig){ADAPT_PAYBACK, 0.5, 0.3, 10, 1000, N, fixed_cost, &x->huge_C, NULL};
    Adapt ad;
    adapt_init(&ad, &ac, &start, o);
    AdaptDecision d;
    Workload w1 = w0;
    w1.resp_len = w1.resp_max = 4 * w0.resp_len; /* responses 4x longer: a crossing */
    x->w1 = w1;
    o->resp_len = w1.resp_len;
    adapt_step(&ad, 10, cm, &w1, cm, &w1, o, &d);
    CHECK(d.searched && (d.mask & DRIFT_LENGTH) && !d.admitted && !d.changed && ad.dm.ref_len == w1.resp_len &&
              ad.dm.last_cross == 10 && memcmp(&ad.cur, &start, sizeof start) == 0,
          "controller: length x4 searched, C = 1e9 s refused (%s), reference reset to %.0f, plan kept", d.reason,
          ad.dm.ref_len);
    adapt_step(&ad, 11, cm, &w1, cm, &w1, o, &d);
    CHECK(!d.searched, "controller: the same length one step later is no crossing (reference reset)");
    x->huge_C = 0.1;
    o->npool = N / 2; /* half the pool left: urgent, admitted whatever it costs */
    adapt_step(&ad, 12, cm, &w1, cm, &w1, o, &d);
    int inside = 1;
    for (int s = 0; s < PLAN_NSTAGES; s++)
        for (int i = 0; i < ad.cur.stage[s].nranks; i++) inside &= ad.cur.stage[s].ranks[i] < N / 2;
    CHECK(d.urgent && d.admitted && d.changed && inside, "controller: half the pool left: urgent, admitted, the new "
          "plan within the 32 ranks left (%s)", d.reason);
    /* the ranks come back: the plan on 32 can stay, so this is no urgent move, and staying is allowed: the
       pool path judges the spread by the payback rule, which refuses it at C = 1e9 s */
    x->on32 = ad.cur;
    const PlanConfig *on32 = &x->on32;
    x->huge_C = 1e9;
    o->npool = N;
    adapt_step(&ad, 13, cm, &w1, cm, &w1, o, &d);
    CHECK(d.searched && (d.mask & DRIFT_POOL) && d.urgent == ADMIT_POOL && d.L_new < d.L_now && !d.admitted &&
              !d.changed && plan_same(&ad.cur, on32) && ad.dm.ref_pool == N &&
              strstr(d.reason, "pool change, the plan can stay: refused: pays back"),
          "controller: the pool back to 64: searched at once on the pool path, a faster plan (%.4g -> %.4g s) "
          "refused by the rule at C = 1e9 s (%s), the pool reference reset", d.L_now, d.L_new, d.reason);
    adapt_step(&ad, 14, cm, &w1, cm, &w1, o, &d);
    CHECK(!d.searched, "controller: the same pool one step later is no change (reference reset)");
    /* the ranks leave and come back, moves now cheap: the spread pays back at once and is taken */
    x->huge_C = 0.1;
    o->npool = N / 2;
    adapt_step(&ad, 15, cm, &w1, cm, &w1, o, &d);
    CHECK(d.searched && d.urgent == ADMIT_POOL && !d.changed, "controller: ranks the plan does not use leave: the "
          "pool path, nothing faster (%s)", d.reason);
    o->npool = N;
    adapt_step(&ad, 16, cm, &w1, cm, &w1, o, &d);
    CHECK(d.searched && d.urgent == ADMIT_POOL && d.admitted && d.changed &&
              strstr(d.reason, "pool change, the plan can stay: admitted: pays back"),
          "controller: the pool back at C = 0.1 s: the spread admitted by the rule (%s)", d.reason);
    /* back on 32 ranks (urgent: the plan in force holds ranks that left, the move is forced) */
    x->huge_C = 1e9;
    o->npool = N / 2;
    adapt_step(&ad, 17, cm, &w1, cm, &w1, o, &d);
    CHECK(d.urgent == ADMIT_URGENT && d.changed, "controller: the ranks leave again: urgent, moved at C = 1e9 s (%s)",
          d.reason);
    o->npool = N / 2 + 8;
    adapt_step(&ad, 18, cm, &w1, cm, &w1, o, &d);
    o->npool = N / 2;
    adapt_step(&ad, 19, cm, &w1, cm, &w1, o, &d);
    int kept32 = adapt_plan_within(&ad.cur, pool, N / 2, N);
    CHECK(d.searched && d.urgent == ADMIT_POOL && !d.changed && kept32,
          "controller: ranks the plan does not use leave: the pool path, nothing to move (%s)", d.reason);
    /* admit-all takes the same spread */
    AdaptConfig aa = ac;
    aa.policy = ADAPT_ADMIT_ALL;
    adapt_init(&ad, &aa, on32, o);
    o->npool = N;
    adapt_step(&ad, 20, cm, &w1, cm, &w1, o, &d);
    CHECK(d.searched && d.admitted && d.changed, "controller: admit-all spreads onto the returned ranks at C = 1e9 s "
          "(%s)", d.reason);
}

/* payback's rent-or-buy: a refused gain adds up to the move's price, then the move is taken */
static void check_rent_or_buy(ControllerJob *x) {
    const CostModel *cm = &x->cm;
    int N = x->N;
    Workload w0 = x->w0, w1 = x->w1;
    AdaptConfig ac = x->ac;
    Observed *o = &x->o;
    const PlanConfig *on32 = &x->on32;
    Adapt ad;
    AdaptDecision d;
    /* rent-or-buy: the job on 32 of 64 ranks, 60 steps in all; responses 4x longer at step 1 (a crossing, the
       payback rule's path) find the 64-rank plan g s/step faster, priced at 39.5 steps of g, past gamma x H
       (H: the 59 steps left, 29.5): refused; no search while nothing drifts, until the gains refused add up
       to the price: 40 steps later (step 41), searched again and admitted */
    AdaptConfig rb = ac;
    rb.steps_total = 60;
    o->npool = N;
    o->resp_len = w0.resp_len;
    Adapt probe;
    adapt_init(&probe, &rb, on32, o);
    o->resp_len = w1.resp_len;
    adapt_step(&probe, 1, cm, &w1, cm, &w1, o, &d);
    double g = d.L_now - d.L_new;
    x->huge_C = 39.5 * g;
    o->resp_len = w0.resp_len;
    adapt_init(&ad, &rb, on32, o);
    o->resp_len = w1.resp_len;
    adapt_step(&ad, 1, cm, &w1, cm, &w1, o, &d);
    int refused = g > 0 && d.searched && d.urgent == ADMIT_RULE && !d.admitted && strstr(d.reason, "refused: pays back"),
        quiet = 1;
    for (int st = 2; st < 41; st++) {
        adapt_step(&ad, st, cm, &w1, cm, &w1, o, &d);
        quiet &= !d.searched;
    }
    CHECK(refused && quiet, "controller: a crossing finds a plan %.4g s/step faster, the move priced at 39.5 steps "
          "of it: refused, then no search for 39 quiet steps", g);
    adapt_step(&ad, 41, cm, &w1, cm, &w1, o, &d);
    CHECK(d.searched && d.rent && d.mask == 0 && d.admitted && d.changed && fabs(d.foregone - 40 * g) < 1e-9 * g &&
              strstr(d.reason, "rent-or-buy"),
          "controller: 40 steps on, the gains refused (%.4g s = 40 x %.4g) reach the price: searched, admitted "
          "(%s)", d.foregone, g, d.reason);
    adapt_step(&ad, 42, cm, &w1, cm, &w1, o, &d);
    CHECK(!d.searched && ad.foregone == 0 && ad.refused_dL == 0, "controller: after the move nothing stands "
          "refused");
}

/* the efficiency crossing, per rank */
static void check_rank_speed(ControllerJob *x) {
    const CostModel *cm = &x->cm;
    int N = x->N;
    Workload w1 = x->w1;
    AdaptConfig ac = x->ac;
    Observed *o = &x->o;
    const PlanConfig *on32 = &x->on32;
    Adapt ad;
    AdaptDecision d;
    /* the efficiency crossing is per rank: an idle rank's standing slowdown (3.4x on rank 40, outside the
       plan on 32, since the start) starts no search and does not hide a working rank's 2.5x; rank 40's
       recovery is a crossing too */
    {
        double slow[64];
        for (int r = 0; r < N; r++) slow[r] = 1;
        slow[40] = 3.4;
        Observed os = *o;
        os.resp_len = w1.resp_len;
        os.slow = slow;
        adapt_init(&ad, &ac, on32, &os);
        adapt_step(&ad, 1, cm, &w1, cm, &w1, &os, &d);
        int idle_quiet = !d.searched && fabs(d.eff - 1 / 3.4) < 1e-12;
        int worker = on32->stage[PLAN_ACTOR_TRAIN].ranks[0];
        slow[worker] = 2.5;
        adapt_step(&ad, 2, cm, &w1, cm, &w1, &os, &d);
        int seen = (d.mask & DRIFT_EFFICIENCY) && d.searched && d.eff_rank == worker &&
                   fabs(d.eff_rank_now - 0.4) < 1e-12 && d.eff_rank_ref == 1;
        CHECK(idle_quiet && seen, "controller: rank 40 (idle) at 3.4x from the start: no search; rank %d "
              "(actor.train) at 2.5x: an efficiency crossing on rank %d at %.2f of its speed (the pool's signal "
              "%.2f, as before)", worker, d.eff_rank, d.eff_rank_now, d.eff);
        adapt_step(&ad, 3, cm, &w1, cm, &w1, &os, &d);
        int steady = !d.searched;
        slow[40] = 1;
        adapt_step(&ad, 4, cm, &w1, cm, &w1, &os, &d);
        CHECK(steady && (d.mask & DRIFT_EFFICIENCY) && d.eff_rank == 40 && d.eff_rank_now == 1,
              "controller: no crossing while nothing moves; rank 40 back to full speed: a crossing on rank %d "
              "(%.2f of its speed, ref %.2f)", d.eff_rank, d.eff_rank_now, d.eff_rank_ref);
    }
}

/* keep_stages: the model-stages of the plan in force kept where that costs less over H */
static void check_keep_stages(ControllerJob *x) {
    const CostModel *cm = &x->cm;
    Workload w0 = x->w0, w1 = x->w1;
    Observed *o = &x->o;
    const PlanConfig *on32 = &x->on32;
    Adapt ad;
    AdaptDecision d;
    /* keep_stages: moves priced per changed model-stage (a fraction f of B's gain over H each, B the search's
       plan). f = 0: B is taken whole. Priced: what is taken has each model-stage from B or from the plan in
       force, and costs no more over H (H·L + C) than B or than staying. Prohibitive: nothing moves. */
    double per = 0;
    AdaptConfig ks = x->ac;
    ks.tx_cost = per_stage_cost;
    ks.tx_ctx = &per;
    PlanConfig B;
    double LB = 0, gainH = 0;
    const double frac[] = {0, 0.1, 0.2, 0.3, 1e9};
    int mixed = 0;
    for (int t = 0; t < 5; t++) {
        per = frac[t] * gainH;
        o->resp_len = w0.resp_len;
        adapt_init(&ad, &ks, on32, o);
        o->resp_len = w1.resp_len;
        adapt_step(&ad, 1, cm, &w1, cm, &w1, o, &d);
        if (t == 0) {
            B = d.next, LB = d.L_new, gainH = d.H * (d.L_now - d.L_new);
            CHECK(d.kept == 0 && d.changed, "keep_stages: moves free: the search's plan taken whole");
            continue;
        }
        int from_either = 1;
        for (int s = 0; s < PLAN_NSTAGES; s++)
            from_either &= plan_stage_same(&d.next.stage[s], &B.stage[s]) ||
                           plan_stage_same(&d.next.stage[s], &on32->stage[s]);
        double J = d.H * d.L_new + d.C, JB = d.H * LB + per_stage_cost(&per, on32, &B), Jstay = d.H * d.L_now;
        if (t == 4) {
            CHECK(!d.changed && d.kept > 0, "keep_stages: 1e9 x the gain a model-stage: every stage kept, nothing "
                  "moves (%s)", d.reason);
            continue;
        }
        mixed += d.kept > 0 && d.changed;
        CHECK(from_either && J <= JB * (1 + 1e-12) && (J <= Jstay * (1 + 1e-12) || !d.changed),
              "keep_stages, %.0f%% of the gain a changed model-stage: %d kept, H·L + C = %.6g <= B's %.6g; "
              "staying's %.6g: %s", 100 * frac[t], d.kept, J, JB, Jstay, d.reason);
    }
    CHECK(mixed > 0, "keep_stages: at some price a plan mixing B and the plan in force is taken (%d of 3)", mixed);
}

/* a set-up part the test sets (AdaptConfig.tx_setup) */
static double fixed_setup(void *ctx, const PlanConfig *a, const PlanConfig *b) {
    (void)a, (void)b;
    return ((const double *)ctx)[1];
}

/* Moves that wait a step (adapt.h): from the plan on 32 of 64 ranks at 4x longer responses (a crossing, the
   search's plan faster by dL), moves priced C = data + S (ctx[0] = C, ctx[1] = S). Without tx_setup no move waits
   and the price is C. With a set-up S the step covers and dL below it, the move waits: its own price C − min(S,
   L_now), the rule's that plus dL, the reason says so. With S below dL it goes at once, priced C. When the plan in
   force cannot stay (urgent) it goes at once whatever S. */
static void check_moves_ahead(ControllerJob *x) {
    const CostModel *cm = &x->cm;
    Observed *o = &x->o;
    Adapt ad;
    AdaptDecision d;
    double cs[2] = {0, 0};
    AdaptConfig ac = x->ac;
    ac.tx_cost = fixed_cost;
    ac.tx_ctx = cs;
    o->npool = x->N;
    /* the step's predicted L_now and L_new at a free move (the same search whatever the prices) */
    o->resp_len = x->w0.resp_len;
    adapt_init(&ad, &ac, &x->on32, o);
    ad.v.no_keep = 1;
    o->resp_len = x->w1.resp_len;
    adapt_step(&ad, 1, cm, &x->w1, cm, &x->w1, o, &d);
    double Ln = d.L_now, dL = d.L_now - d.L_new;
    CHECK(d.changed && dL > 0 && !d.ahead && d.C == 0, "moves ahead: a free move at a crossing, %.4g -> %.4g s/step, "
          "at once (no tx_setup)", d.L_now, d.L_new);
    struct { double S, data; int setup, ahead; const char *what; } t[3] = {
        {0.9 * Ln, 0.01 * Ln, 0, 0, "no tx_setup: at once"},
        {0.9 * Ln, 0.01 * Ln, 1, 1, "set-up 0.9 L_now, dL below it: waits"},
        {0.5 * dL, 0.01 * Ln, 1, 0, "set-up 0.5 dL: at once"}};
    for (int k = 0; k < 3; k++) {
        cs[0] = t[k].S + t[k].data, cs[1] = t[k].S;
        ac.tx_setup = t[k].setup ? fixed_setup : NULL;
        o->resp_len = x->w0.resp_len;
        adapt_init(&ad, &ac, &x->on32, o);
        ad.v.no_keep = 1;
        o->resp_len = x->w1.resp_len;
        adapt_step(&ad, 1, cm, &x->w1, cm, &x->w1, o, &d);
        double move = t[k].ahead ? cs[0] - fmin(t[k].S, Ln) : cs[0], rule = t[k].ahead ? move + dL : cs[0];
        CHECK(d.changed && d.ahead == t[k].ahead && fabs(d.C_move - move) <= 1e-12 * move &&
                  fabs(d.C - rule) <= 1e-12 * rule && (strstr(d.reason, ADAPT_AHEAD_REASON) != NULL) == t[k].ahead,
              "moves ahead, %s: C %.4g s (S %.4g), L_now %.4g, dL %.4g: ahead %d, the move %.4g s (want %.4g), the "
              "rule's price %.4g (want %.4g)", t[k].what, cs[0], t[k].S, Ln, dL, d.ahead, d.C_move, move, d.C, rule);
    }
    /* urgent: half the pool leaves under the plan on all 64 */
    cs[0] = 1.01 * Ln, cs[1] = Ln;
    ac.tx_setup = fixed_setup;
    adapt_init(&ad, &ac, &d.next, o);
    o->npool = x->N / 2;
    adapt_step(&ad, 2, cm, &x->w1, cm, &x->w1, o, &d);
    CHECK(d.urgent == ADMIT_URGENT && d.changed && !d.ahead && d.C == cs[0], "moves ahead: urgent (half the pool "
          "left): at once, priced %.4g s, whatever the set-up (%s)", d.C, d.reason);
    o->npool = x->N;
}

/* the sweep's slowdown between its controls (nr_fill_gaps), by hand */
static void check_sweep_controls(void) {
    {
        double v[6] = {NAN, 1.0, NAN, NAN, 1.6, NAN};
        nr_fill_gaps(v, 6);
        CHECK(isnan(v[0]) && v[1] == 1.0 && fabs(v[2] - 1.2) < 1e-12 && fabs(v[3] - 1.4) < 1e-12 && v[4] == 1.6 &&
                  v[5] == 1.6,
              "sweep controls: slowdowns 1 and 1.6 three windows apart fill as 1.2, 1.4 between, 1.6 after, nothing "
              "before (%g %g %g %g %g %g)", v[0], v[1], v[2], v[3], v[4], v[5]);
        /* windows: reference 2.0 s, held-out (meas 3.3, pred 3.0), control 2.2 s (slowdown 1.1; the held-out
           window between gets 1.05), held-out (meas 4.4, pred 4.4) after it (1.1): corrected 3.3/1.05 = 3.142857
           against 3.0 (4.545%), 4.4/1.1 = 4.0 against 4.4 (10%): MAPE 7.27%, worst 10% */
        double ref[4] = {2.0, NAN, 2.2, NAN}, meas[4] = {NAN, 3.3, NAN, 4.4}, pred[4] = {NAN, 3.0, NAN, 4.4}, slow[4];
        double mape = -1, worst = -1, e1 = (3.3 / 1.05 - 3.0) / (3.3 / 1.05), e2 = 0.4 / 4.0;
        int k = nr_drift_corrected_error(ref, meas, pred, 4, slow, &mape, &worst);
        CHECK(k == 2 && fabs(slow[1] - 1.05) < 1e-12 && fabs(slow[3] - 1.1) < 1e-12 && fabs(mape - 0.5 * (e1 + e2)) < 1e-12 &&
                  fabs(worst - e2) < 1e-12,
              "sweep controls: held-out error with the slowdown taken out, by hand: %d windows, MAPE %.4f%% (want "
              "%.4f), worst %.4f%% (want 10)", k, 100 * mape, 50 * (e1 + e2), 100 * worst);
        /* 1.0, 1.1, 1.0, 1.1: successive differences 0.1 each, sqrt(3 x 0.01 / 6) = 0.0707 over the mean 1.05 */
        double rep[6] = {1.0, NAN, 1.1, 1.0, NAN, 1.1}, rsd = nr_repeat_sd(rep, 6), two[2] = {1.0, 1.1};
        CHECK(fabs(rsd - sqrt(0.005) / 1.05) < 1e-12 && isnan(nr_repeat_sd(two, 2)),
              "sweep controls: repeatability from successive differences, by hand: %.6f (want %.6f); NaN from two",
              rsd, sqrt(0.005) / 1.05);
        CHECK(fabs(nr_noise_removed(0.10, 0.06) - 0.08) < 1e-12 && nr_noise_removed(0.05, 0.06) == 0,
              "sweep controls: RMS 10%% with noise 6%% leaves 8%%, noise above the RMS leaves 0 (%g, %g)",
              nr_noise_removed(0.10, 0.06), nr_noise_removed(0.05, 0.06));
        double none[2] = {NAN, NAN};
        mape = -1;
        CHECK(nr_drift_corrected_error(none, meas, pred, 2, slow, &mape, &worst) == 0 && mape == -1,
              "sweep controls: no reference measured, nothing scored");
    }
}

/* transition prices calibrated on measured transitions (txprice.h) */
static void check_tx_calib(void) {
    {
        TxCalib tc;
        memset(&tc, 0, sizeof tc);
        double s0 = tx_calib_scale(&tc);
        tx_calib_add(&tc, 0.001, 0.030); /* 30x */
        tx_calib_add(&tc, 0, 0.5);       /* ignored: no estimate */
        tx_calib_add(&tc, 0.002, NAN);   /* ignored */
        double s1 = tx_calib_scale(&tc);
        tx_calib_add(&tc, 0.001, 0.010); /* 10x */
        tx_calib_add(&tc, 0.004, 0.080); /* 20x: the median of 10, 20, 30 */
        double s3 = tx_calib_scale(&tc);
        for (int i = 0; i < TX_CALIB_N; i++) tx_calib_add(&tc, 1.0, 2.0); /* the last TX_CALIB_N only */
        double s9 = tx_calib_scale(&tc);
        CHECK(s0 == 1 && fabs(s1 - 30) < 1e-9 && fabs(s3 - 20) < 1e-9 && tc.n == TX_CALIB_N && fabs(s9 - 2) < 1e-12,
              "transition calibration: none 1 (%g), one 30x (%g), median of 10x, 20x, 30x (%g), the last %d only "
              "(%g)", s0, s1, s3, TX_CALIB_N, s9);
    }
}

/* gen's decode term follows the rows still generating: with every response as long as the mean it is the
   mean's steps of all rows; with the longest twice the mean (lengths spread over [0, 2·mean]), a
   memory-bound decode (the weights read once a step: one row) takes about twice the steps' time, while a
   compute-bound one (FLOPs a row: many rows) keeps about its time, the row-steps being the same; so with the
   longest 6x the mean (most rows leaving early), the row-steps still the mean's */
static void check_decode_rows_leave(const CostModel *cm0) {
    CostModel cm = *cm0;
    GridLayout l = {1, 1, 1};
    Workload w = {1, 1, 1, 64, 400, 800, 0};
    double none = cost_stage_compute(&cm, PLAN_ACTOR_GEN, l, &w);
    w.resp_longest = w.resp_len;
    double same = cost_stage_compute(&cm, PLAN_ACTOR_GEN, l, &w);
    CHECK(none == same, "decode: longest = mean prices as no spread (%.6g s, %.6g s)", none, same);
    w.resp_longest = 2 * w.resp_len;
    double spread = cost_stage_compute(&cm, PLAN_ACTOR_GEN, l, &w);
    CHECK(spread / none > 1.8 && spread / none < 2.05, "decode, one row (memory-bound): longest 2x mean costs %.2fx",
          spread / none);
    Workload big = {1 << 16, 1, 1, 64, 400, 800, 0};
    double nb = cost_stage_compute(&cm, PLAN_ACTOR_GEN, l, &big);
    big.resp_longest = 2 * big.resp_len;
    double sb = cost_stage_compute(&cm, PLAN_ACTOR_GEN, l, &big);
    CHECK(sb / nb > 0.9 && sb / nb < 1.2, "decode, 65,536 rows (compute-bound): longest 2x mean costs %.2fx", sb / nb);
    big.resp_longest = 6 * big.resp_len; /* most rows stop early, a few run long: the row-steps stay the mean's */
    double s6 = cost_stage_compute(&cm, PLAN_ACTOR_GEN, l, &big);
    /* not 3x (rows spread evenly over [0, 6x mean] would hold 3x the mean's row-steps); above 1 by the longer
       contexts of the late rows and the tail's few-row steps, bound by the weights' reads */
    CHECK(s6 / nb > 0.9 && s6 / nb < 1.4, "decode, 65,536 rows (compute-bound): longest 6x mean costs %.2fx", s6 / nb);
    w.resp_longest = 6 * w.resp_len;
    double one6 = cost_stage_compute(&cm, PLAN_ACTOR_GEN, l, &w);
    CHECK(one6 / none > 5.4 && one6 / none < 6.1, "decode, one row (memory-bound): longest 6x mean costs %.2fx",
          one6 / none);
}

/* the live planner's calibration (cal_add, cal_fit at each step's lengths) on gen times made by a "true" model
   whose decode term sees each step's longest response, the ratio longest / mean moving from step to step (a
   memory-bound decode: 16 rows of the 8B actor): fed the longest, the fit predicts a held-out step's gen as
   the truth does; priced at the mean (0), it cannot, whatever factors it fits */
static void check_decode_calibrated(const CostModel *cm0) {
    CostModel truth = *cm0, fed = *cm0, mean = *cm0;
    truth.eff.f[EFF_DECODE] = 0.62, truth.eff.f[EFF_OPS] = 0.8, truth.eff.f[EFF_GEMM] = 0.55;
    PlanConfig p = plan_on_rank0_but(PLAN_ACTOR_GEN, (PlanStage){PLAN_SRC_DECK, 1, 1, 1, 0, 1, {0}});
    static const double lens[][2] = {{300, 330}, {310, 620}, {320, 400}, {330, 900}, {340, 510}, {350, 360}};
    Calibration *cf = nr_xcalloc(2, sizeof *cf), *cz = cf + 1;
    for (int k = 0; k < 6; k++) {
        Workload w = {16, 16, 1, 256, lens[k][0], 1000, lens[k][1]}, w0 = w;
        w0.resp_longest = 0;
        StepCost t;
        cost_plan(&truth, &p, 1, &w, &t);
        cal_add(cf, &fed, &p, 1, &w, PLAN_ACTOR_GEN, t.stage[PLAN_ACTOR_GEN]);
        cal_add(cz, &mean, &p, 1, &w0, PLAN_ACTOR_GEN, t.stage[PLAN_ACTOR_GEN]);
        cal_fit(cf, &fed);
        cal_fit(cz, &mean);
    }
    Workload h = {16, 16, 1, 256, 325, 1000, 750}, h0 = h; /* held out */
    h0.resp_longest = 0;
    StepCost t, f, z;
    cost_plan(&truth, &p, 1, &h, &t);
    cost_plan(&fed, &p, 1, &h, &f);
    cost_plan(&mean, &p, 1, &h0, &z);
    double ef = fabs(f.stage[PLAN_ACTOR_GEN] / t.stage[PLAN_ACTOR_GEN] - 1);
    double ez = fabs(z.stage[PLAN_ACTOR_GEN] / t.stage[PLAN_ACTOR_GEN] - 1);
    CHECK(ef < 0.01 && ez > 0.2, "decode calibrated on 6 steps, held-out step (longest 2.3x the mean): gen error "
          "%.2f%% fed the longest, %.1f%% priced at the mean", 100 * ef, 100 * ez);
    free(cf);
}

/* scoring and training run over the rollout's padded length (rollout_finish: every row padded to the batch's
   longest response) in this code base's own models (exact): a batch with mean m and longest L prices them as a
   batch of L-token responses, and above the mean's price; a modelled framework's shape (the 8B actor, exact 0)
   packs its rows, and the longest leaves them at the mean's */
static void check_padded_length(const CostModel *cm0) {
    GPTConfig tiny = {.V = 64, .maxT = 32, .L = 2, .C = 64, .NH = 4};
    CostModel own = *cm0;
    own.actor = own.critic = shape_of_config(&tiny, "tiny");
    own.critic.value_head = 1;
    GridLayout l = {1, 1, 1};
    Workload mean = {64, 16, 2, 6, 5, 24, 0}, tail = mean, flat = mean;
    tail.resp_longest = 24;
    flat.resp_len = flat.resp_longest = 24;
    static const int stages[] = {PLAN_ACTOR_INF, PLAN_ACTOR_TRAIN, PLAN_CRITIC_INF, PLAN_CRITIC_TRAIN};
    for (int i = 0; i < 4; i++) {
        int s = stages[i];
        double m = cost_stage_compute(&own, s, l, &mean), t = cost_stage_compute(&own, s, l, &tail);
        double f = cost_stage_compute(&own, s, l, &flat);
        double bm = cost_stage_compute(cm0, s, l, &mean), bt = cost_stage_compute(cm0, s, l, &tail);
        CHECK(t == f && t > 1.1 * m && bt == bm, "padded length, stage %d: this code's model with mean 5 and "
              "longest 24 priced as 24-token responses (%.6g s = %.6g s, %.2fx the mean's); the modelled 8B at the "
              "mean's (%.6g s = %.6g s)", s, t, f, t / m, bt, bm);
    }
}

int main(void) {
    nr_heap_keep(); /* as bin/nereus: the timed searches reuse freed memory */
    check_admission();
    check_guard();
    check_drift();
    check_shape_of_config();
    check_gen_bf16();
    CostModel cm = cost_model_8b_h200();
    Workload w = {512, 128, 1, 512, 500, 500, 0};
    check_cost_rules(&cm, &w);
    check_decode_rows_leave(&cm);
    check_decode_calibrated(&cm);
    check_padded_length(&cm);
    check_shared_cores();
    check_fit_plans();
    check_search(&cm, &w);
    check_async_price(&cm);
    check_async_search(&cm);
    check_too_big(&cm, &w);
    ControllerJob *job = nr_xmalloc(sizeof *job);
    job->cm = cm;
    check_controller_pool(job, &w);
    check_rent_or_buy(job);
    check_rank_speed(job);
    check_keep_stages(job);
    check_moves_ahead(job);
    free(job);
    check_sweep_controls();
    check_tx_calib();
    return CHECK_DONE();
}
