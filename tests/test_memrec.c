/* test_memrec.c — the replicas a recovery from memory builds from (mem_plan_replicas, memrec.h), pure: which
 * copies make a replica, ranks used once per stage, own copies before buddy copies, dp cut to divide the batch,
 * and the refusal that names the stage and the ranks a shard lived on when no copy of it is left. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "nereus/memrec.h"

static PlanStage stage(const char *text) {
    PlanStage s;
    char err[256];
    if (plan_stage_parse(text, strlen(text), &s, err, sizeof err) != 0) {
        printf("FAIL parse %s: %s\n", text, err);
        memset(&s, 0, sizeof s);
    }
    s.src = PLAN_SRC_DECK; /* resolved as plan_resolve would: degrees not written are 1, dp from the ranks */
    if (!s.tp) s.tp = 1;
    if (!s.pp) s.pp = 1;
    if (!s.dp) s.dp = s.nranks / (s.tp * s.pp);
    return s;
}

/* every stage of p on `text` */
static void plan_all(PlanConfig *p, const char *text) {
    memset(p, 0, sizeof *p);
    for (int i = 0; i < PLAN_NSTAGES; i++) p->stage[i] = stage(text);
}

static int ranks_are(const PlanStage *s, const int *want, int n) {
    if (s->nranks != n) return 0;
    for (int i = 0; i < n; i++)
        if (s->ranks[i] != want[i]) return 0;
    return 1;
}

/* elastic4's actor.train (tp2 dp2 @0-3), old rank 1 (cell tp 1 of replica 0) died: the survivors 0, 2, 3 are new
   ranks 0, 1, 2 and hold their own copies; one replica is left: the scarce cell tp 1 from new rank 2, cell tp 0
   from the lowest rank holding it (new 0) */
static void check_one_replica_left(void) {
    PlanConfig old, target, R;
    plan_all(&old, "dp4 @0-3");
    old.stage[PLAN_ACTOR_TRAIN] = stage("tp2 dp2 @0-3");
    plan_all(&target, "dp3 @0-2");
    int stateful[PLAN_NSTAGES] = {0};
    stateful[PLAN_ACTOR_TRAIN] = 1;
    MemHold h[] = {{0, PLAN_ACTOR_TRAIN, 0, 1}, {1, PLAN_ACTOR_TRAIN, 2, 1}, {2, PLAN_ACTOR_TRAIN, 3, 1}};
    int pick[PLAN_NSTAGES * 3];
    char how[256], why[256] = "";
    int rc = mem_plan_replicas(&old, h, 3, &target, stateful, 48, 12, 3, &R, pick, how, sizeof how, why, sizeof why);
    const PlanStage *a = &R.stage[PLAN_ACTOR_TRAIN];
    int want[] = {0, 2};
    CHECK(rc == 0 && a->tp == 2 && a->pp == 1 && a->dp == 1 && ranks_are(a, want, 2),
          "tp2 dp2, one rank of replica 0 dead: R is tp2 dp1 on new ranks 0,2 (rc %d, tp%d dp%d, %s)", rc, a->tp, a->dp, why);
    CHECK(pick[PLAN_ACTOR_TRAIN * 3 + 0] == 0 && pick[PLAN_ACTOR_TRAIN * 3 + 2] == 3 && pick[PLAN_ACTOR_TRAIN * 3 + 1] == -1,
          "each member fills from its own copy (old positions 0 and 3); new rank 1 is not in R");
    CHECK(plan_stage_same(&R.stage[PLAN_ACTOR_GEN], &target.stage[PLAN_ACTOR_GEN]),
          "the stages without state are on the survivors' plan");
    CHECK(strstr(how, "actor.train from 1 replica(s) in memory") != NULL && !strstr(how, "buddy"), "how: %s", how);
}

/* a dp1 stage whose rank died: with its buddy's copy on another rank it recovers from it; without, refused with
   the stage, the cell and the rank it lived on */
static void check_buddy(void) {
    PlanConfig old, target, R;
    plan_all(&old, "dp4 @0-3");
    old.stage[PLAN_CRITIC_TRAIN] = stage("@1");
    plan_all(&target, "dp3 @0-2");
    int stateful[PLAN_NSTAGES] = {0};
    stateful[PLAN_CRITIC_TRAIN] = 1;
    MemHold h[] = {{1, PLAN_CRITIC_TRAIN, 0, 0}}; /* new rank 1 (old 2) keeps the buddy copy of old rank 1's shard */
    int pick[PLAN_NSTAGES * 3];
    char how[256], why[256] = "";
    int rc = mem_plan_replicas(&old, h, 1, &target, stateful, 48, 12, 3, &R, pick, how, sizeof how, why, sizeof why);
    int want[] = {1};
    CHECK(rc == 0 && R.stage[PLAN_CRITIC_TRAIN].dp == 1 && ranks_are(&R.stage[PLAN_CRITIC_TRAIN], want, 1) &&
              pick[PLAN_CRITIC_TRAIN * 3 + 1] == 0 && strstr(how, "(1 shard(s) from buddy copies)"),
          "a dp1 shard from its buddy copy (rc %d, how '%s')", rc, how);
    rc = mem_plan_replicas(&old, h, 0, &target, stateful, 48, 12, 3, &R, pick, how, sizeof how, why, sizeof why);
    CHECK(rc == -1 && strstr(why, "critic.train's shard (tp 0, pp 0) lived on rank(s) 1 only"),
          "no copy left: refused naming the stage, cell and rank (%s)", why);
}

/* four whole copies (three own, one a buddy's), a batch of 6: dp cut to 3 (it must divide the batch), the own
   copies kept; a rank takes one cell of a stage at most */
static void check_dp_and_order(void) {
    PlanConfig old, target, R;
    plan_all(&old, "dp4 @0-3");
    old.stage[PLAN_REF_INF] = stage("dp3 @0-2");
    plan_all(&target, "dp4 @0-3");
    int stateful[PLAN_NSTAGES] = {0};
    stateful[PLAN_REF_INF] = 1;
    MemHold h[] = {{3, PLAN_REF_INF, 0, 0}, {0, PLAN_REF_INF, 0, 1}, {1, PLAN_REF_INF, 1, 1}, {2, PLAN_REF_INF, 2, 1}};
    int pick[PLAN_NSTAGES * 4];
    char how[256], why[256] = "";
    int rc = mem_plan_replicas(&old, h, 4, &target, stateful, 6, 6, 4, &R, pick, how, sizeof how, why, sizeof why);
    int want[] = {0, 1, 2};
    CHECK(rc == 0 && R.stage[PLAN_REF_INF].dp == 3 && ranks_are(&R.stage[PLAN_REF_INF], want, 3) && !strstr(how, "buddy"),
          "4 copies of a dp3 stage, batch 6: dp 3 on the own copies 0, 1, 2 (rc %d, dp %d, how '%s')", rc,
          R.stage[PLAN_REF_INF].dp, how);
    /* tp2: one rank holds both cells (own and a buddy's); no other copy: no replica, since a rank takes one cell */
    old.stage[PLAN_REF_INF] = stage("tp2 @0-1");
    MemHold h2[] = {{0, PLAN_REF_INF, 0, 1}, {0, PLAN_REF_INF, 1, 0}};
    rc = mem_plan_replicas(&old, h2, 2, &target, stateful, 4, 4, 4, &R, pick, how, sizeof how, why, sizeof why);
    CHECK(rc == -1 && strstr(why, "ref.inf's shard"), "one rank cannot be both cells of a tp2 replica (%s)", why);
    MemHold h3[] = {{0, PLAN_REF_INF, 0, 1}, {0, PLAN_REF_INF, 1, 0}, {2, PLAN_REF_INF, 0, 0}};
    rc = mem_plan_replicas(&old, h3, 3, &target, stateful, 4, 4, 4, &R, pick, how, sizeof how, why, sizeof why);
    int want3[] = {2, 0};
    CHECK(rc == 0 && ranks_are(&R.stage[PLAN_REF_INF], want3, 2) && pick[PLAN_REF_INF * 4 + 0] == 1 &&
              pick[PLAN_REF_INF * 4 + 2] == 0,
          "with a third copy the cells go to different ranks: cell 0 on rank 2, cell 1 on rank 0 (rc %d, %s)", rc, why);
}

int main(void) {
    check_one_replica_left();
    check_buddy();
    check_dp_and_order();
    return CHECK_DONE();
}
