/* plan.h — an execution plan: one EMU per model-stage, each with its layout
 * (tp, pp, dp) and the ordered list of job ranks that hold it.
 *
 * The plan types are flat, fixed-size and pointer-free, because a plan lives
 * inside Config (config.h includes this header): every rank parses the same
 * deck into the same bytes. Everything here is pure (no MPI): parsing the
 * deck syntax of one model-stage, the default plan for a rank count,
 * validation against the job and the model, formatting, and the
 * colocation query (which model-stages share ranks).
 *
 * Deck syntax of one model-stage (section [plan], key = the model-stage name):
 *
 *     actor.train = tp2 pp2 dp2 @ 0-7
 *     ref.inf     = dp4 @ 0-3            # tp, pp left out are 1
 *     critic.inf  = tp2 @ 4,6,5,7        # dp left out = ranks / (tp*pp) = 2
 *     reward.inf  = tp1 pp1 dp1 @ 7
 *     actor.gen   = dp8 @ all            # all = every rank of the job, 0..N-1
 *     actor.inf   = tp2 dp2              # no '@': ranks 0 .. tp*pp*dp-1
 *     critic.train = default             # taken from the default plan
 *
 * Degrees are written `tpN`, `ppN`, `dpN` (each at most once, any order,
 * N ≥ 1). The rank list after '@' is `all` or comma-separated items `R` or
 * `A-B` (inclusive, A ≤ B); the list is ordered: its i-th rank is grid
 * position i (grid.h: pos = t + tp*(d + dp*p), TP fastest, then DP, then PP).
 *
 * [plan] default = auto | colocated | disaggregated says what happens to
 * model-stages the deck does not list (or lists as `default`):
 *   auto          the default: a deck that lists no model-stage gets the
 *                 colocated default plan; one that lists any must list all
 *                 seven (a model-stage without ranks is an error).
 *   colocated     unlisted model-stages take their colocated default EMU.
 *   disaggregated unlisted model-stages take their disaggregated default EMU.
 * The default plans (plan_default) are documented there.
 */
#ifndef NEREUS_PLAN_H
#define NEREUS_PLAN_H

#include <stddef.h>
#include <stdint.h>

#define PLAN_MAX_RANKS 1024 /* ranks of a job that a plan can place */

/* The model-stages, in the order the deck lists and the job builds them. */
typedef enum PlanStageId {
    PLAN_ACTOR_GEN,
    PLAN_ACTOR_INF,
    PLAN_ACTOR_TRAIN,
    PLAN_REF_INF,
    PLAN_CRITIC_INF,
    PLAN_CRITIC_TRAIN,
    PLAN_REWARD_INF,
    PLAN_NSTAGES
} PlanStageId;

/* Where a stage's EMU came from. */
enum {
    PLAN_SRC_NONE = 0,    /* not in the deck (or `default`): plan_resolve fills it */
    PLAN_SRC_DECK = 1,    /* written in the deck */
    PLAN_SRC_DEFAULT = 2, /* filled by plan_resolve from the default plan */
    PLAN_SRC_ABSENT = 3   /* not in the job's stage set (a critic-free algorithm's critic.inf and critic.train):
                             no EMU, no ranks, no degrees (all 0); plan_resolve sets it */
};

/* One model-stage's EMU. */
typedef struct PlanStage {
    int src;        /* PLAN_SRC_* */
    int tp, pp, dp; /* degrees; 0 = not written (tp, pp: 1; dp: ranks/(tp*pp), 1 without @) */
    int all;        /* 1: the rank list is `all` (every job rank), filled by plan_resolve */
    int nranks;     /* ranks listed; 0 with all = 1, or with no '@' (ranks 0..tp*pp*dp-1) */
    int16_t ranks[PLAN_MAX_RANKS]; /* job ranks in grid-position order */
} PlanStage;

/* [plan]: the default rule and the seven EMUs (indexed by PlanStageId). */
typedef struct PlanConfig {
    char fill[16];                  /* [plan] default: auto | colocated | disaggregated */
    PlanStage stage[PLAN_NSTAGES];
} PlanConfig;

/* 1 when stage id of plan p is part of it (src != PLAN_SRC_ABSENT) */
static inline int plan_stage_present(const PlanConfig *p, int id) { return p->stage[id].src != PLAN_SRC_ABSENT; }

/* "actor.gen", ...; NULL for an id out of range. */
const char *plan_stage_name(int id);
/* Id of a model-stage name (len bytes), or -1. */
int plan_stage_find(const char *name, size_t len);
/* 1 for actor.train and critic.train (their dp must also divide ppo.minibatch). */
int plan_stage_is_train(int id);
/* 1 for the model-stages that hold a critic-shaped model (a value head):
 * critic.inf, critic.train, reward.inf. */
int plan_stage_is_critic(int id);
/* 1 for the model-stages of the critic model itself (critic.inf, critic.train): the ones a critic-free
 * algorithm (GRPO) does not have. */
int plan_stage_is_critic_model(int id);
/* 1 for the model-stages whose weights a run keeps rather than takes from another stage: the trained ones and the
 * frozen ref.inf and reward.inf (actor.gen, actor.inf and critic.inf get theirs from the weight sync) */
int plan_stage_keeps_state(int id);
/* 1 when model-stage id belongs to the stage set: every one for PPO (no_critic 0), all but the critic's for a
 * critic-free algorithm (no_critic 1: actor.gen, actor.inf, actor.train, ref.inf, reward.inf). */
int plan_stage_in_set(int id, int no_critic);
/* the model-stages in that set: 7 or 5 */
int plan_stage_count(int no_critic);
/* 1 when p is a critic-free plan (its critic stages are absent) */
int plan_no_critic(const PlanConfig *p);
/* The phase a model-stage runs in within a step: 0 generation (actor.gen),
 * 1 scoring (the four *.inf), 2 training (the two *.train). Phases run one
 * after another; it is also the transition engine's tie-break order. */
int plan_stage_phase(int id);

/* Parses one model-stage value (the syntax above; `default` gives src =
 * PLAN_SRC_NONE) into *out. Returns 0, or -1 with a one-line reason in err
 * (without file or key: the deck adds those). Ranks are checked only for
 * being numbers in 0..PLAN_MAX_RANKS-1 here; the job size is plan_resolve's. */
int plan_stage_parse(const char *text, size_t len, PlanStage *out, char *err, size_t errsz);

/* The stage in deck syntax ("tp2 pp1 dp4 @ 0-3,8-11"; "default" for
 * PLAN_SRC_NONE; only the degrees that are set, "@ all" while unresolved),
 * so that it parses back to the same PlanStage. Returns the length it needed
 * (like snprintf); buf is always terminated when n > 0. */
int plan_stage_format(const PlanStage *s, char *buf, size_t n);
/* A rank list as compact text: ascending runs as "A-B", "0-3,8-11,5". */
int plan_ranks_format(const int16_t *ranks, int n, char *buf, size_t bufsz);

/* What validation needs from the job and the model. */
typedef struct PlanLimits {
    int world;      /* ranks in the job */
    int n_head;     /* tp must divide it */
    int n_layer;    /* pp must divide it */
    int batch;      /* ppo.batch: every stage's dp must divide it */
    int minibatch;  /* ppo.minibatch: a *.train stage's dp must divide it too */
    int n_kv_head;  /* the Llama family: tp must divide its key/value heads (TP cuts whole ones) ... */
    int ffn;        /* ... and its MLP width; 0: no such limit (GPT-2: n_head is the only one) */
    int no_critic;  /* the algorithm has no critic ([ppo] algorithm = grpo): critic.inf and critic.train are
                       absent (PLAN_SRC_ABSENT), and a plan that lists one is refused */
} PlanLimits;

/* A validation failure: the deck key to blame ("plan.actor.gen", or
 * "plan.default") and the message (without file:line). */
typedef struct PlanError {
    char key[32];
    char msg[512];
} PlanError;

/* The default EMU of every model-stage for lim->world ranks, written into
 * plan->stage[] (src = PLAN_SRC_DEFAULT) for the stages where only_missing is
 * 0 or the stage has src PLAN_SRC_NONE. kind is "colocated" or
 * "disaggregated" (anything else: colocated).
 *
 * colocated: every model-stage on the same ranks 0..M-1, where M is the
 *   largest M ≤ world that has a valid layout (M = world whenever one
 *   exists, M = 1 always does). Among the valid (tp, pp, dp) with
 *   tp*pp*dp = M the largest dp is taken (data parallelism needs no model
 *   parallelism), then the largest tp (TP beats PP on one node), then pp.
 *   So N ranks with N dividing the batch (and the minibatch) give
 *   tp1 pp1 dpN on all ranks.
 * disaggregated: the ranks are cut into seven consecutive blocks, one per
 *   model-stage in PlanStageId order, as equal as possible (the first
 *   world % 7 blocks one rank larger); each block is then laid out by the
 *   colocated rule above. Needs world ≥ 7; fewer ranks are an error.
 * Returns 0, or -1 with *err set (key "plan.default"). */
int plan_default(PlanConfig *plan, const char *kind, const PlanLimits *lim, int only_missing, PlanError *err);

/* Checks one resolved stage: src != NONE; tp, pp, dp ≥ 1; tp*pp*dp equals
 * the number of ranks; no more ranks than the job has; each rank in
 * 0..world-1; no rank twice; tp | n_head, pp | n_layer, dp | batch, and for
 * *.train stages dp | minibatch. Returns 0 or -1 with *err. */
int plan_validate_stage(const PlanStage *s, int id, const PlanLimits *lim, PlanError *err);

/* The job rank at grid position pos of stage s (a stage without a rank
 * list, nranks = 0: position pos is rank pos). Inline: the transition
 * planner asks it once per rank and slab. */
static inline int plan_stage_rank(const PlanStage *s, int pos) { return s->nranks ? s->ranks[pos] : pos; }
/* The grid position of job rank `rank` in a resolved stage, or −1 when it is not a member. */
int plan_stage_pos(const PlanStage *s, int rank);
/* 1 when a and b are the same EMU: the same degrees and the same ranks in
 * the same grid order. */
int plan_stage_same(const PlanStage *a, const PlanStage *b);
/* 1 when model-stage s of plan `to`, built while every EMU of plan `from`
 * is alive and the changed stages before s are built (the transition's
 * order), needs communicators of its own: no EMU of `from` and no earlier
 * stage of `to` has its layout on its ranks (emu.h: such EMUs share one
 * set). */
int plan_stage_new_comms(const PlanConfig *from, const PlanConfig *to, int s);
/* 1 when every model-stage of a and b is the same EMU (where each came from does not matter) */
int plan_same(const PlanConfig *a, const PlanConfig *b);

/* The communicator sets a job keeps for reuse ([transition] keep_comms, emu_cache_set_keep), as a model for
 * those who price transitions without building EMUs (the simulator): the layouts (degrees and ranks) that
 * earlier switches left unused, the one left longest ago first. plan_kept_has: a change onto s builds no
 * communicators. plan_kept_switch: the switch from → to, as emu.c keeps and frees (keep: the limit, at
 * most PLAN_KEEP_MAX). */
#define PLAN_KEEP_MAX 64
typedef struct PlanKept {
    int n;
    PlanStage s[PLAN_KEEP_MAX];
} PlanKept;
int plan_kept_has(const PlanKept *k, const PlanStage *s);
void plan_kept_switch(PlanKept *k, int keep, const PlanConfig *from, const PlanConfig *to);
/* for a caller that checks its plan every step (the simulator, the trace replay): when `now` differs from
 * *seen, the plan the model was last brought up to, plan_kept_switch(*seen → now), and *seen = now */
void plan_kept_follow(PlanKept *k, int keep, PlanConfig *seen, const PlanConfig *now);

/* Resolves a plan as it came from the deck against the job: fills
 * unlisted stages from the default plan named by plan->fill, expands `all`
 * and implicit rank lists, infers a left-out dp (ranks / (tp*pp)) and
 * defaults tp, pp to 1, then validates every stage (plan_validate_stage).
 * After success every stage has src != NONE, tp, pp, dp ≥ 1, all = 0 and
 * nranks = tp*pp*dp. Returns 0, or -1 with *err (the first failure in stage
 * order); the caller reports it at the key's deck line:
 *     deck_error_at(deck, err.key, "%s", err.msg)   (returns 2)
 * On failure *plan may be partly resolved. */
int plan_resolve(PlanConfig *plan, const PlanLimits *lim, PlanError *err);

/* 1 when stages a and b of a resolved plan share at least one rank
 * (colocated: they run one after another), 0 when their ranks are disjoint
 * (they run side by side). a == b gives 1. */
int plan_overlap(const PlanConfig *plan, int a, int b);
/* Colocation groups: the connected components of the overlap relation.
 * group[i] is the smallest stage id of stage i's component. Returns the
 * number of groups. */
int plan_colocation(const PlanConfig *plan, int group[PLAN_NSTAGES]);

/* One line per model-stage, for printing:
 *     "actor.gen     tp1 pp1 dp8  ranks 0-7  (deck; shares ranks with actor.inf, ...)"
 * Writes into buf (terminated); returns the length needed. */
int plan_format(const PlanConfig *plan, char *buf, size_t n);

#endif
