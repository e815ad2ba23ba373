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

/* one stateful stage `id` laid out `layout` among stages on "dp4 @0-3", the survivors' plan on `target`, planned
   for `world` ranks with a batch and minibatch: what mem_plan_replicas gives */
typedef struct Case {
    PlanConfig old, target, R;
    int stateful[PLAN_NSTAGES];
    int id, world, batch, minibatch;
    int pick[PLAN_NSTAGES * 8];
    char how[256], why[256];
} Case;

static void case_init(Case *c, int id, const char *layout, const char *target, int world, int batch, int minibatch) {
    memset(c, 0, sizeof *c);
    plan_all(&c->old, "dp4 @0-3");
    c->old.stage[id] = stage(layout);
    plan_all(&c->target, target);
    c->stateful[id] = 1;
    c->id = id, c->world = world, c->batch = batch, c->minibatch = minibatch;
}

static int case_plan(Case *c, const MemHold *h, int nh) {
    return mem_plan_replicas(&c->old, h, nh, &c->target, c->stateful, c->batch, c->minibatch, c->world, &c->R, c->pick,
                             c->how, sizeof c->how, c->why, sizeof c->why);
}

/* the old grid position new rank r fills its shard of the case's stage from (−1: not in R) */
static int case_pick(const Case *c, int r) { return c->pick[c->id * c->world + r]; }

/* elastic4's actor.train (tp2 dp2 @0-3), old rank 1 (cell tp 1 of replica 0) died: the survivors 0, 2, 3 are new
   ranks 0, 1, 2 and hold their own copies; one replica is left: the scarce cell tp 1 from new rank 2, cell tp 0
   from the lowest rank holding it (new 0) */
static void check_one_replica_left(void) {
    Case c;
    case_init(&c, PLAN_ACTOR_TRAIN, "tp2 dp2 @0-3", "dp3 @0-2", 3, 48, 12);
    MemHold h[] = {{0, PLAN_ACTOR_TRAIN, 0, 1}, {1, PLAN_ACTOR_TRAIN, 2, 1}, {2, PLAN_ACTOR_TRAIN, 3, 1}};
    int rc = case_plan(&c, h, 3);
    const PlanStage *a = &c.R.stage[PLAN_ACTOR_TRAIN];
    int want[] = {0, 2};
    CHECK(rc == 0 && a->tp == 2 && a->pp == 1 && a->dp == 1 && ranks_are(a, want, 2),
          "tp2 dp2, one rank of replica 0 dead: R is tp2 dp1 on new ranks 0,2 (rc %d, tp%d dp%d, %s)", rc, a->tp, a->dp,
          c.why);
    CHECK(case_pick(&c, 0) == 0 && case_pick(&c, 2) == 3 && case_pick(&c, 1) == -1,
          "each member fills from its own copy (old positions 0 and 3); new rank 1 is not in R");
    CHECK(plan_stage_same(&c.R.stage[PLAN_ACTOR_GEN], &c.target.stage[PLAN_ACTOR_GEN]),
          "the stages without state are on the survivors' plan");
    CHECK(strstr(c.how, "actor.train from 1 replica(s) in memory") != NULL && !strstr(c.how, "buddy"), "how: %s", c.how);
}

/* a dp1 stage whose rank died: with its buddy's copy on another rank it recovers from it; without, refused with
   the stage, the cell and the rank it lived on */
static void check_buddy(void) {
    Case c;
    case_init(&c, PLAN_CRITIC_TRAIN, "@1", "dp3 @0-2", 3, 48, 12);
    MemHold h[] = {{1, PLAN_CRITIC_TRAIN, 0, 0}}; /* new rank 1 (old 2) keeps the buddy copy of old rank 1's shard */
    int rc = case_plan(&c, h, 1);
    int want[] = {1};
    CHECK(rc == 0 && c.R.stage[PLAN_CRITIC_TRAIN].dp == 1 && ranks_are(&c.R.stage[PLAN_CRITIC_TRAIN], want, 1) &&
              case_pick(&c, 1) == 0 && strstr(c.how, "(1 shard(s) from buddy copies)"),
          "a dp1 shard from its buddy copy (rc %d, how '%s')", rc, c.how);
    rc = case_plan(&c, h, 0);
    CHECK(rc == -1 && strstr(c.why, "critic.train's shard (tp 0, pp 0) lived on rank(s) 1 only"),
          "no copy left: refused naming the stage, cell and rank (%s)", c.why);
}

/* four whole copies (three own, one a buddy's), a batch of 6: dp cut to 3 (it must divide the batch), the own
   copies kept; a rank takes one cell of a stage at most */
static void check_dp_and_order(void) {
    Case c;
    case_init(&c, PLAN_REF_INF, "dp3 @0-2", "dp4 @0-3", 4, 6, 6);
    MemHold h[] = {{3, PLAN_REF_INF, 0, 0}, {0, PLAN_REF_INF, 0, 1}, {1, PLAN_REF_INF, 1, 1}, {2, PLAN_REF_INF, 2, 1}};
    int rc = case_plan(&c, h, 4);
    int want[] = {0, 1, 2};
    CHECK(rc == 0 && c.R.stage[PLAN_REF_INF].dp == 3 && ranks_are(&c.R.stage[PLAN_REF_INF], want, 3) &&
              !strstr(c.how, "buddy"),
          "4 copies of a dp3 stage, batch 6: dp 3 on the own copies 0, 1, 2 (rc %d, dp %d, how '%s')", rc,
          c.R.stage[PLAN_REF_INF].dp, c.how);
    /* tp2: one rank holds both cells (own and a buddy's); no other copy: no replica, since a rank takes one cell */
    case_init(&c, PLAN_REF_INF, "tp2 @0-1", "dp4 @0-3", 4, 4, 4);
    MemHold h2[] = {{0, PLAN_REF_INF, 0, 1}, {0, PLAN_REF_INF, 1, 0}};
    rc = case_plan(&c, h2, 2);
    CHECK(rc == -1 && strstr(c.why, "ref.inf's shard"), "one rank cannot be both cells of a tp2 replica (%s)", c.why);
    MemHold h3[] = {{0, PLAN_REF_INF, 0, 1}, {0, PLAN_REF_INF, 1, 0}, {2, PLAN_REF_INF, 0, 0}};
    rc = case_plan(&c, h3, 3);
    int want3[] = {2, 0};
    CHECK(rc == 0 && ranks_are(&c.R.stage[PLAN_REF_INF], want3, 2) && case_pick(&c, 0) == 1 && case_pick(&c, 2) == 0,
          "with a third copy the cells go to different ranks: cell 0 on rank 2, cell 1 on rank 0 (rc %d, %s)", rc, c.why);
}

int main(void) {
    check_one_replica_left();
    check_buddy();
    check_dp_and_order();
    return CHECK_DONE();
}
