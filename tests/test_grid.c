/* test_grid.c — pure unit tests of the rank grid (grid.h) and of plans
 * (plan.h): positions and groups against Megatron's layout, the plan
 * syntax, defaults, validation and the colocation query, and every
 * tests/decks/bad_plans/NAME.deck resolved under its `# ranks: N` against
 * its `# expect: REGEX` (and `# expect-note: REGEX`) lines, as the runner
 * does with mpirun. No MPI run is needed.
 *
 *   test_grid [--bad-dir DIR] [--examples DIR]
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/deck.h"
#include "nereus/grid.h"
#include "nereus/plan.h"
#include "nereus/txprice.h"
#include "check.h"

/* ---- grid ------------------------------------------------------------------ */

static void grid_checks(void)
{
    int bad_bij = 0, bad_part = 0, bad_embd = 0, layouts = 0;
    int out[512], cnt[512];
    for (int tp = 1; tp <= 8; tp++)
        for (int pp = 1; pp <= 8; pp++)
            for (int dp = 1; dp <= 8; dp++) {
                GridLayout l = {tp, pp, dp};
                int n = grid_size(l);
                if (n > 128) continue;
                layouts++;
                for (int pos = 0; pos < n; pos++) {
                    GridCoord c = grid_coord(l, pos);
                    if (grid_pos(l, c) != pos || c.t + tp * (c.d + dp * c.p) != pos) bad_bij++;
                }
                for (GridGroup g = GRID_TP; g <= GRID_PP; g++) {
                    int want = g == GRID_TP ? tp : g == GRID_DP ? dp : pp;
                    memset(cnt, 0, sizeof cnt);
                    for (int pos = 0; pos < n; pos++) {
                        int k = grid_group_positions(l, g, pos, out);
                        if (k != want) bad_part++;
                        int idx = grid_group_index(l, g, pos), col = grid_group_color(l, g, pos);
                        if (idx < 0 || idx >= k || out[idx] != pos || col < 0 || col >= n) bad_part++;
                        for (int i = 0; i < k; i++) {
                            /* a group is one color, members in index order */
                            if (grid_group_color(l, g, out[i]) != col || grid_group_index(l, g, out[i]) != i) bad_part++;
                            if (out[i] == pos) cnt[pos]++;
                        }
                    }
                    for (int pos = 0; pos < n; pos++)
                        if (cnt[pos] != 1) bad_part++;
                }
                for (int pos = 0; pos < n; pos++) {
                    GridCoord c = grid_coord(l, pos);
                    int k = grid_group_positions(l, GRID_EMBD, pos, out);
                    int member = pp > 1 && (c.p == 0 || c.p == pp - 1);
                    if (member != (k == 2) || member != (grid_group_color(l, GRID_EMBD, pos) >= 0)) bad_embd++;
                    if (member) {
                        GridCoord a = {c.t, c.d, 0}, b = {c.t, c.d, pp - 1};
                        if (out[0] != grid_pos(l, a) || out[1] != grid_pos(l, b) ||
                            grid_group_color(l, GRID_EMBD, pos) != grid_group_color(l, GRID_PP, pos))
                            bad_embd++;
                    }
                }
            }
    CHECK(bad_bij == 0, "grid: pos <-> (t, d, p) is the bijection pos = t + tp*(d + dp*p) over %d layouts", layouts);
    CHECK(bad_part == 0, "grid: tp, dp, pp groups partition every layout, sizes tp/dp/pp, colors and indices agree");
    CHECK(bad_embd == 0, "grid: embedding group = first and last pp stage at the same (t, d), only when pp > 1");

    /* Megatron's parallel_state docstring: 16 GPUs, TP 2, PP 4 (so DP 2) */
    GridLayout m = {2, 4, 2};
    int ids[16];
    for (int i = 0; i < 16; i++) ids[i] = i;
    int ok = 1;
    static const int tpg[8][2] = {{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}};
    static const int ppg[4][4] = {{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}};
    static const int dpg[8][2] = {{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}};
    for (int i = 0; i < 8; i++) {
        int k = grid_group_ranks(m, ids, GRID_TP, tpg[i][0], out);
        ok &= k == 2 && out[0] == tpg[i][0] && out[1] == tpg[i][1];
        k = grid_group_ranks(m, ids, GRID_DP, dpg[i][1], out);
        ok &= k == 2 && out[0] == dpg[i][0] && out[1] == dpg[i][1];
    }
    for (int i = 0; i < 4; i++) {
        int k = grid_group_ranks(m, ids, GRID_PP, ppg[i][2], out);
        ok &= k == 4 && !memcmp(out, ppg[i], sizeof ppg[i]);
        k = grid_group_ranks(m, ids, GRID_EMBD, ppg[i][3], out);
        ok &= k == 2 && out[0] == ppg[i][0] && out[1] == ppg[i][3];
        ok &= grid_group_ranks(m, ids, GRID_EMBD, ppg[i][1], out) == 0; /* middle stage */
    }
    CHECK(ok, "grid: Megatron's 16-GPU TP2 PP4 example (tp [0,1].., pp [0,4,8,12].., dp [0,2],[1,3].., embd [0,12]..)");

    /* an ordered rank list: position i is the i-th rank written */
    int ranks[8] = {7, 3, 5, 1, 6, 2, 4, 0};
    GridLayout l = {2, 2, 2};
    int k = grid_group_ranks(l, ranks, GRID_PP, 1, out);
    ok = k == 2 && out[0] == 3 && out[1] == 2;
    k = grid_group_ranks(l, ranks, GRID_DP, 4, out);
    ok &= k == 2 && out[0] == 6 && out[1] == 4;
    ok &= grid_find(ranks, 8, 4) == 6 && grid_find(ranks, 8, 9) == -1;
    CHECK(ok, "grid: groups over an ordered rank list map positions to the listed ranks");
}

/* ---- plan syntax ------------------------------------------------------------- */

static int parse(const char *txt, PlanStage *s, char *err)
{
    return plan_stage_parse(txt, strlen(txt), s, err, 256);
}

static void syntax_checks(void)
{
    static PlanStage s, s2;
    char err[256], buf[8192];
    int rc = parse("tp2 pp2 dp2 @ 0-7", &s, err);
    CHECK(rc == 0 && s.src == PLAN_SRC_DECK && s.tp == 2 && s.pp == 2 && s.dp == 2 && s.nranks == 8 && s.ranks[7] == 7,
          "parse 'tp2 pp2 dp2 @ 0-7'");
    rc = parse("  dp4@ 8 - 9 ,3,0-1  ", &s, err);
    CHECK(rc == 0 && s.tp == 0 && s.pp == 0 && s.dp == 4 && s.nranks == 5 && s.ranks[0] == 8 && s.ranks[2] == 3 &&
              s.ranks[4] == 1,
          "parse with spaces, ordered items and ranges (rc=%d %s)", rc, rc ? err : "");
    plan_stage_format(&s, buf, sizeof buf);
    CHECK(strcmp(buf, "dp4 @ 8-9,3,0-1") == 0, "format: '%s'", buf);
    rc = parse(buf, &s2, err);
    CHECK(rc == 0 && memcmp(&s, &s2, sizeof s) == 0, "format parses back to the same PlanStage");
    rc = parse("pp2 tp4 @ all", &s, err);
    CHECK(rc == 0 && s.all == 1 && s.tp == 4 && s.pp == 2 && s.nranks == 0, "parse '@ all', degrees in any order");
    rc = parse("tp2 dp2", &s, err);
    CHECK(rc == 0 && s.nranks == 0 && !s.all, "parse without '@' (implicit ranks)");
    rc = parse("default", &s, err);
    CHECK(rc == 0 && s.src == PLAN_SRC_NONE, "'default' leaves the stage to the default plan");
    plan_stage_format(&s, buf, sizeof buf);
    CHECK(strcmp(buf, "default") == 0, "format of an unset stage: '%s'", buf);
    rc = parse("@ 1023", &s, err);
    CHECK(rc == 0 && s.nranks == 1 && s.ranks[0] == 1023, "a bare '@ RANKS' and the largest rank");
    int16_t big[PLAN_MAX_RANKS];
    for (int i = 0; i < PLAN_MAX_RANKS; i++) big[i] = (int16_t)(PLAN_MAX_RANKS - 1 - i);
    int need = plan_ranks_format(big, PLAN_MAX_RANKS, buf, sizeof buf);
    CHECK(need > 0 && (size_t)need < sizeof buf && strncmp(buf, "1023,1022,", 10) == 0,
          "1024 ranks in reverse order format (%d bytes)", need);

    static const struct {
        const char *in, *want;
    } bad[] = {
        {"", "empty layout"},
        {"tp2 dq2 @ 0-3", "unexpected 'dq2'"},
        {"tp @ 0", "'tp' is not a degree"},
        {"tpx @ 0", "'tpx' is not a degree"},
        {"tp2x @ 0", "'tp2x' is not a degree"},
        {"tp0 @ 0", "a degree is 1..1024"},
        {"tp2 tp2", "tp is given twice"},
        {"dp2 @", "no ranks after '@'"},
        {"dp2 @ 0-", "range '0-' has no end"},
        {"dp2 @ 3-1", "runs backwards"},
        {"dp2 @ 0,,1", "empty item in the rank list"},
        {"dp2 @ ,1", "empty item in the rank list"},
        {"dp2 @ 0,1,", "ends with ','"},
        {"dp2 @ 0 1", "unexpected '1' in the rank list"},
        {"dp2 @ all 3", "unexpected '3' after '@ all'"},
        {"dp2 @ 1024", "rank 1024 is beyond what a plan can place"},
        {"dp2 @ -1", "'-1' in the rank list is not a rank"},
        {"tp64 pp64", "tp*pp*dp = 4096 ranks; a plan places at most 1024"},
        {"dp2 @ 0-1023,5", "more than 1024 ranks"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(err, 0, sizeof err);
        rc = parse(bad[i].in, &s, err);
        CHECK(rc == -1 && strstr(err, bad[i].want), "syntax error '%s': %s", bad[i].in, err);
    }
}

/* ---- plans through the deck ------------------------------------------------------ */

#define MODEL "[model]\nn_layer = 2\nn_embd = 64\nn_head = 4\n[ppo]\nbatch = 32\nminibatch = 8\n"

static Config cfg; /* 15 KB of plan: not on the stack of every helper */

/* Parses text and resolves its plan for world ranks; returns 0, 2 (deck or
 * plan error, message in msg). */
static int resolve(const char *name, const char *text, int world, char *msg, size_t n)
{
    Deck *d = NULL;
    int rc = deck_parse_string(name, text, strlen(text), &cfg, &d, 1);
    if (rc == 0) {
        PlanLimits lim = job_plan_limits(&cfg, world); /* as main.c resolves a deck's plan (Llama: n_kv_head, ffn) */
        PlanError pe;
        if (plan_resolve(&cfg.plan, &lim, &pe)) rc = deck_error_at(d, pe.key, "%s", pe.msg);
    }
    snprintf(msg, n, "%s", deck_last_error(d));
    deck_free(d);
    return rc;
}

static int stage_is(const PlanStage *s, int tp, int pp, int dp, int first, int count)
{
    if (s->tp != tp || s->pp != pp || s->dp != dp || s->nranks != count || s->all) return 0;
    for (int i = 0; i < count; i++)
        if (s->ranks[i] != first + i) return 0;
    return 1;
}

static void plan_checks(void)
{
    char msg[2048];
    int rc = resolve("x.deck", MODEL, 8, msg, sizeof msg);
    int ok = rc == 0;
    for (int i = 0; i < PLAN_NSTAGES; i++)
        ok &= stage_is(&cfg.plan.stage[i], 1, 1, 8, 0, 8) && cfg.plan.stage[i].src == PLAN_SRC_DEFAULT;
    CHECK(ok, "no [plan]: colocated default, tp1 pp1 dp8 on 0-7 for every stage (rc=%d %s)", rc, msg);
    int group[PLAN_NSTAGES];
    CHECK(plan_colocation(&cfg.plan, group) == 1 && plan_overlap(&cfg.plan, PLAN_ACTOR_GEN, PLAN_REWARD_INF),
          "colocated default: one colocation group");

    /* fallbacks of the colocated rule: largest dp that divides, then tp, then fewer ranks */
    rc = resolve("x.deck", "[model]\nn_layer = 2\nn_embd = 64\nn_head = 4\n[ppo]\nbatch = 12\nminibatch = 4\n", 8, msg,
                 sizeof msg);
    CHECK(rc == 0 && stage_is(&cfg.plan.stage[PLAN_ACTOR_GEN], 2, 1, 4, 0, 8) &&
              stage_is(&cfg.plan.stage[PLAN_ACTOR_TRAIN], 2, 1, 4, 0, 8),
          "8 ranks, batch 12: dp4 (largest dp dividing 12) with tp2 (rc=%d %s)", rc, msg);
    rc = resolve("x.deck", MODEL, 6, msg, sizeof msg);
    CHECK(rc == 0 && stage_is(&cfg.plan.stage[PLAN_ACTOR_GEN], 1, 1, 4, 0, 4),
          "6 ranks, batch 32, 4 heads, 2 layers: no layout uses 6, so dp4 on 0-3");
    rc = resolve("x.deck", "[model]\nn_layer = 3\nn_embd = 60\nn_head = 3\n[ppo]\nbatch = 5\nminibatch = 5\n", 4, msg,
                 sizeof msg);
    CHECK(rc == 0 && stage_is(&cfg.plan.stage[PLAN_ACTOR_GEN], 3, 1, 1, 0, 3),
          "4 ranks, batch 5, 3 heads: tp3 on 0-2 (rc=%d %s)", rc, msg);
    int all_ok = 1;
    for (int w = 1; w <= 64; w++) {
        PlanConfig *p = &cfg.plan;
        memset(p, 0, sizeof *p);
        PlanLimits lim = {w, 4, 2, 32, 8, 0, 0, 0};
        PlanError pe;
        if (plan_default(p, "colocated", &lim, 0, &pe)) all_ok = 0;
        for (int i = 0; i < PLAN_NSTAGES; i++)
            if (plan_validate_stage(&p->stage[i], i, &lim, &pe)) all_ok = 0;
        if (w >= 7) {
            if (plan_default(p, "disaggregated", &lim, 0, &pe)) all_ok = 0;
            for (int i = 0; i < PLAN_NSTAGES; i++)
                if (plan_validate_stage(&p->stage[i], i, &lim, &pe)) all_ok = 0;
            if (plan_colocation(p, group) != PLAN_NSTAGES) all_ok = 0;
        }
    }
    CHECK(all_ok, "default plans (colocated 1..64 ranks, disaggregated 7..64) all validate; disaggregated has 7 groups");

    rc = resolve("x.deck", MODEL "[plan]\ndefault = disaggregated\n", 9, msg, sizeof msg);
    const PlanStage *s = cfg.plan.stage;
    CHECK(rc == 0 && stage_is(&s[0], 1, 1, 2, 0, 2) && stage_is(&s[1], 1, 1, 2, 2, 2) && stage_is(&s[2], 1, 1, 1, 4, 1) &&
              stage_is(&s[6], 1, 1, 1, 8, 1),
          "disaggregated on 9 ranks: blocks 2,2,1,1,1,1,1 in stage order (rc=%d %s)", rc, msg);

}

static void explicit_checks(void)
{
    char msg[2048];
    int rc = resolve("x.deck",
                     MODEL "[plan]\ndefault = colocated\nactor.gen = tp2 @ 4-7\nref.inf = tp2 pp2\ncritic.inf = pp2 @ all\n", 8,
                     msg, sizeof msg);
    const PlanStage *s = cfg.plan.stage;
    CHECK(rc == 0 && stage_is(&s[PLAN_ACTOR_GEN], 2, 1, 2, 4, 4) && s[PLAN_ACTOR_GEN].src == PLAN_SRC_DECK &&
              stage_is(&s[PLAN_REF_INF], 2, 2, 1, 0, 4) && stage_is(&s[PLAN_CRITIC_INF], 1, 2, 4, 0, 8) &&
              stage_is(&s[PLAN_ACTOR_TRAIN], 1, 1, 8, 0, 8) && s[PLAN_ACTOR_TRAIN].src == PLAN_SRC_DEFAULT,
          "dp inferred from the ranks, implicit ranks 0..n-1, '@ all', the rest from the default (rc=%d %s)", rc, msg);
    char buf[4096];
    plan_format(&cfg.plan, buf, sizeof buf);
    CHECK(strstr(buf, "actor.gen     tp2 pp1 dp2  ranks 4-7  (deck; shares ranks with actor.inf,") &&
              strstr(buf, "actor.train   tp1 pp1 dp8  ranks 0-7  (default; shares ranks with actor.gen,"),
          "plan_format: one line per stage with source and colocation:\n%s", buf);

    /* side by side: disjoint stages */
    rc = resolve("x.deck",
                 MODEL "[plan]\nactor.gen = dp2 @ 0-1\nactor.inf = dp2 @ 2-3\nref.inf = dp2 @ 2-3\ncritic.inf = tp2 @ 2-3\n"
                       "reward.inf = dp1 @ 3\nactor.train = pp2 @ 4-5\ncritic.train = dp2 @ 6-7\n",
                 8, msg, sizeof msg);
    int group[PLAN_NSTAGES];
    int ng = plan_colocation(&cfg.plan, group);
    CHECK(rc == 0 && ng == 4 && group[PLAN_ACTOR_GEN] == PLAN_ACTOR_GEN && group[PLAN_REWARD_INF] == PLAN_ACTOR_INF &&
              group[PLAN_CRITIC_INF] == PLAN_ACTOR_INF && group[PLAN_CRITIC_TRAIN] == PLAN_CRITIC_TRAIN &&
              !plan_overlap(&cfg.plan, PLAN_ACTOR_TRAIN, PLAN_CRITIC_TRAIN) &&
              plan_overlap(&cfg.plan, PLAN_REWARD_INF, PLAN_CRITIC_INF),
          "disjoint and shared ranks: 4 colocation groups (rc=%d %s)", rc, msg);

    /* the resolved deck text carries the plan and reads back */
    Deck *d = NULL;
    const char *t = MODEL "[plan]\ndefault = colocated\nactor.train = tp2 pp2 @ 3,2,1,0\n";
    rc = deck_parse_string("x.deck", t, strlen(t), &cfg, &d, 1);
    char *r = deck_resolved_text(d, &cfg);
    static Config back;
    int rc2 = r ? deck_parse_string("r.deck", r, strlen(r), &back, NULL, 1) : -1;
    CHECK(rc == 0 && r && strstr(r, "actor.train = tp2 pp2 @ 3,2,1,0") && strstr(r, "actor.gen = default") &&
              rc2 == 0 && memcmp(&cfg, &back, sizeof cfg) == 0,
          "resolved deck text has the plan and reads back to the same Config");
    CHECK(deck_line(d, "plan.actor.train") == 10 && deck_line(d, "plan.actor.gen") == 0 && deck_line(d, "plan.default") == 9,
          "deck remembers the line of each plan key");
    free(r);
    deck_free(d);

    /* each bad kind once more, with the exact message */
    static const struct {
        const char *plan;
        int world;
        const char *want;
    } bad[] = {
        {"default = colocated\nactor.train = tp8 @ all\n", 8, "x.deck:10: error: [plan] actor.train: tp = 8 does not divide the heads ([model] n_head = 4)"},
        {"default = colocated\nref.inf = pp4 @ 0-3\n", 8, "x.deck:10: error: [plan] ref.inf: pp = 4 does not divide the layers ([model] n_layer = 2)"},
        {"default = colocated\nreward.inf = dp6 @ 0-5\n", 8, "x.deck:10: error: [plan] reward.inf: dp = 6 does not divide the global batch ([ppo] batch = 32)"},
        {"default = colocated\nactor.gen = dp16 @ all\n", 8, "x.deck:10: error: [plan] actor.gen needs tp*pp*dp = 1*1*16 = 16 ranks, more than the job has (8)"},
        {"default = colocated\nactor.gen = dp16 @ all\n", 16, ""},
        {"default = colocated\nactor.gen = dp12 @ all\n", 12, "x.deck:10: error: [plan] actor.gen: dp = 12 does not divide the global batch ([ppo] batch = 32)"},
        {"default = colocated\nactor.train = dp16 @ 0-15\n", 16, "x.deck:10: error: [plan] actor.train: dp = 16 does not divide the minibatch ([ppo] minibatch = 8"},
        {"default = colocated\ncritic.inf = dp16 @ 0-15\n", 16, ""},
        {"default = colocated\nactor.gen = @ 0,8\n", 8, "x.deck:10: error: [plan] actor.gen: rank 8 is out of range (the job has 8 ranks, 0-7)"},
        {"default = colocated\nactor.gen = dp2 @ 5,5\n", 8, "x.deck:10: error: [plan] actor.gen: rank 5 is listed twice"},
        {"default = colocated\nactor.gen = dp4 @ all\n", 2, "x.deck:10: error: [plan] actor.gen needs tp*pp*dp = 1*1*4 = 4 ranks, more than the job has (2)"},
        {"default = colocated\nactor.gen = dp2 @ all\n", 4, "x.deck:10: error: [plan] actor.gen: tp*pp*dp = 1*1*2 = 2, but 4 ranks are listed"},
        {"default = colocated\nactor.gen = @ 0-8\n", 8, "x.deck:10: error: [plan] actor.gen lists 9 ranks, more than the job has (8 ranks, 0-7)"},
        {"default = colocated\nactor.gen = @ 0-1\n", 1, "x.deck:10: error: [plan] actor.gen lists 2 ranks, more than the job has (1 rank, rank 0)"},
        {"default = colocated\nactor.gen = tp4 pp2 dp2\n", 8, "x.deck:10: error: [plan] actor.gen needs tp*pp*dp = 4*2*2 = 16 ranks, more than the job has (8)"},
        {"default = colocated\nactor.gen = tp2 @ 0-2\n", 8, "x.deck:10: error: [plan] actor.gen: 3 ranks are listed, not a multiple of tp*pp = 2*1"},
        {"actor.gen = dp2\n", 8, "x.deck:8: error: [plan] leaves actor.inf, actor.train, ref.inf, critic.inf, critic.train, reward.inf without ranks"},
        {"default = disaggregated\n", 6, "x.deck:9: error: default = disaggregated needs at least 7 ranks"},
        {"actor.geen = dp2\n", 8, "x.deck:9: error: unknown key [plan] actor.geen\nx.deck:9: note: did you mean 'plan.actor.gen'?"},
        {"critic = dp2\n", 8, "x.deck:9: error: unknown key [plan] critic"},
        {"actor.gen = tp2 pipe2\n", 8, "x.deck:9: error: [plan] actor.gen = tp2 pipe2: unexpected 'pipe2'"},
        {"actor.gen =\n", 8, "x.deck:9: error: [plan] actor.gen has an empty value (expected a layout such as 'tp2 pp1 dp4 @ 0-7', or 'default')"},
        {"default = mixed\n", 8, "x.deck:9: error: [plan] default = mixed is not allowed (expected one of auto, colocated, disaggregated)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text, MODEL "[plan]\n%s", bad[i].plan);
        rc = resolve("x.deck", text, bad[i].world, msg, sizeof msg);
        if (!*bad[i].want)
            CHECK(rc == 0, "good: [plan] %.*s on %d ranks (%s)", (int)strcspn(bad[i].plan + 20, "\n"),
                  bad[i].plan + 20, bad[i].world, msg);
        else
            CHECK(rc == 2 && strstr(msg, bad[i].want) == msg, "bad plan on %d ranks: %s", bad[i].world, msg);
    }
}

/* ---- deck files ----------------------------------------------------------------- */

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) { free(b); b = NULL; }
    fclose(f);
    if (b) b[n] = '\0';
    *len = (size_t)n;
    return b;
}

/* The text after "# TAG: " on a line of its own; "" if none. */
static void header(const char *text, const char *tag, char *out, size_t n)
{
    char pat[64];
    snprintf(pat, sizeof pat, "# %s: ", tag);
    out[0] = '\0';
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, pat, strlen(pat)) == 0) {
            const char *v = l + strlen(pat);
            size_t k = strcspn(v, "\r\n");
            snprintf(out, n, "%.*s", (int)k, v);
            return;
        }
    }
}

static int grep_lines(const char *pat, const char *msg)
{
    regex_t re;
    if (regcomp(&re, pat, REG_EXTENDED | REG_NOSUB) != 0) return 0;
    char *m = strdup(msg);
    int hit = 0;
    for (char *save = NULL, *ln = strtok_r(m, "\n", &save); ln && !hit; ln = strtok_r(NULL, "\n", &save))
        hit = regexec(&re, ln, 0, NULL, 0) == 0;
    free(m);
    regfree(&re);
    return hit;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int list_decks(const char *dir, char **names, int max)
{
    DIR *dp = opendir(dir);
    if (!dp) return -1;
    int nn = 0;
    struct dirent *e;
    while ((e = readdir(dp)) && nn < max) {
        size_t l = strlen(e->d_name);
        if (l > 5 && strcmp(e->d_name + l - 5, ".deck") == 0) names[nn++] = strdup(e->d_name);
    }
    closedir(dp);
    qsort(names, (size_t)nn, sizeof names[0], cmp_str);
    return nn;
}

static void bad_files(const char *dir)
{
    char *names[128];
    int nn = list_decks(dir, names, 128);
    CHECK(nn >= 10, "%d bad-plan decks in %s", nn, dir);
    for (int i = 0; i < nn; i++) {
        char path[1024], re[1024], re2[1024], ranks[32], msg[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        size_t len = 0;
        char *text = slurp(path, &len);
        header(text ? text : "", "expect", re, sizeof re);
        header(text ? text : "", "expect-note", re2, sizeof re2);
        header(text ? text : "", "ranks", ranks, sizeof ranks);
        int world = atoi(ranks);
        int rc = text && *re && world > 0 ? resolve(path, text, world, msg, sizeof msg) : -1;
        int match = rc == 2 && grep_lines(re, msg) && (!*re2 || grep_lines(re2, msg)) && strstr(msg, ": error: ");
        CHECK(match, "%s on %d ranks: rc=%d /%s/%s%s%s \"%s\"", path, world, rc, re, *re2 ? " and /" : "", re2,
              *re2 ? "/" : "", msg);
        free(text);
        free(names[i]);
    }
}

static void example_files(const char *dir)
{
    char *names[64];
    int nn = list_decks(dir, names, 64);
    CHECK(nn >= 2, "%d example plan decks in %s", nn, dir);
    for (int i = 0; i < nn; i++) {
        char path[1024], msg[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        size_t len = 0;
        char *text = slurp(path, &len);
        /* the rank count is in the file name: colocated4, mixed8 */
        const char *dig = names[i] + strcspn(names[i], "0123456789");
        int world = atoi(dig);
        int rc = text && world > 0 ? resolve(path, text, world, msg, sizeof msg) : -1;
        char buf[4096] = "";
        if (rc == 0) plan_format(&cfg.plan, buf, sizeof buf);
        CHECK(rc == 0, "example %s resolves on %d ranks (%s)\n%s", path, world, msg, buf);
        free(text);
        free(names[i]);
    }
}

int main(int argc, char **argv)
{
    const char *bad_dir = "tests/decks/bad_plans", *ex_dir = "inputs/plans";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--bad-dir") == 0 && i + 1 < argc) bad_dir = argv[++i];
        else if (strcmp(argv[i], "--examples") == 0 && i + 1 < argc) ex_dir = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--bad-dir DIR] [--examples DIR]\n", argv[0]);
            return 1;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    grid_checks();
    syntax_checks();
    plan_checks();
    explicit_checks();
    bad_files(bad_dir);
    example_files(ex_dir);
    return CHECK_DONE();
}
