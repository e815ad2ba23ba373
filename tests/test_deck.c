/* test_deck.c — unit tests of the deck module (include/nereus/deck.h).
 *
 * Parses good decks from strings and checks every resolved value and
 * default; parses each kind of bad deck and checks the exit code 2 and the
 * message (file:line, wording, suggestion); checks that the resolved deck
 * text reads back to the same Config; runs every tests/decks/bad/NAME.deck
 * against its `# expect: REGEX` first line, as the end-to-end runner will;
 * checks command-line overrides (--set, --restart) the same way, and
 * exercises deck_load under MPI (one process is enough) on a good file,
 * a missing file, a directory and a binary file. Prints one line per check;
 * exits 0 only if all pass.
 *
 *   test_deck [--bad-dir DIR]            run the tests (DIR default tests/decks/bad)
 *   test_deck --load-checks              only the deck_load checks (MPI; run as a child)
 *   test_deck --write-reference FILE     write the deck reference (inputs/REFERENCE.md)
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <stddef.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mpi.h>

#include "nereus/deck.h"
#include "../src/deck/deck_int.h" /* the key table, to check it covers Config */

typedef struct Tally {
    int run, failed;
} Tally;

static void check(Tally *t, int ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void check(Tally *t, int ok, const char *fmt, ...)
{
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* one line per check: a message's note line is shown as "\n" */
    printf("%s ", ok ? "ok  " : "FAIL");
    for (const char *p = line; *p; p++) {
        if (*p == '\n') fputs("\\n", stdout);
        else putchar(*p);
    }
    printf("\n");
    t->run++;
    if (!ok) t->failed++;
}

#define MODEL "[model]\nn_layer = 2\nn_embd = 64\nn_head = 4\n"

static int parse(const char *name, const char *text, Config *c, Deck **d)
{
    return deck_parse_string(name, text, strlen(text), c, d, 1);
}

/* A bad deck: exit code 2, every wanted substring in the message, and
 * (when nonote) no suggestion. The config passed in must stay untouched. */
static void bad(Tally *t, const char *what, const char *text, const char *want1, const char *want2, int nonote)
{
    Config c, before;
    memset(&c, 0x5A, sizeof c);
    memcpy(&before, &c, sizeof c);
    Deck *d = NULL;
    int rc = parse("x.deck", text, &c, &d);
    const char *m = deck_last_error(d);
    int ok = rc == 2 && d && strstr(m, want1) && (!want2 || strstr(m, want2)) && (!nonote || !strstr(m, "note:")) &&
             memcmp(&c, &before, sizeof c) == 0 && !strchr(m, '\n') == !(want2 && strstr(want2, "note:"));
    /* one message: an error line, plus a note line only for suggestions */
    check(t, ok, "bad deck, %s: rc=%d msg=\"%s\"", what, rc, m);
    deck_free(d);
}

static void good_defaults(Tally *t)
{
    Config c;
    Deck *d = NULL;
    int rc = parse("inputs/tiny.deck", MODEL, &c, &d);
    check(t, rc == 0, "minimal deck parses (rc=%d %s)", rc, deck_last_error(d));
    check(t, strcmp(c.run.name, "tiny") == 0, "run.name defaults to the deck stem: '%s'", c.run.name);
    check(t, c.run.seed == 1234 && strcmp(c.run.backend, "auto") == 0 && c.run.blas_threads == 1 &&
                 c.run.log_every == 1,
          "run defaults (seed %lld backend %s threads %d log_every %d)", c.run.seed, c.run.backend,
          c.run.blas_threads, c.run.log_every);
    check(t, c.model.n_layer == 2 && c.model.n_embd == 64 && c.model.n_head == 4, "model required values");
    check(t, c.model.max_seq == 64 && c.model.vocab_size == 0 && c.model.init_std == 0.02f,
          "model defaults (max_seq %d vocab %d init_std %g)", c.model.max_seq, c.model.vocab_size,
          (double)c.model.init_std);
    check(t, strcmp(c.task.names, "reverse,sort") == 0 && c.task.digits == 4, "task defaults ('%s', %d)",
          c.task.names, c.task.digits);
    check(t, c.optim.beta1 == 0.9f && c.optim.beta2 == 0.95f && c.optim.eps == 1e-5f && c.optim.weight_decay == 0.0f &&
                 c.optim.max_grad_norm == 1.0f,
          "optim defaults");
    check(t, c.sft.steps == 0 && c.sft.batch == 32 && c.sft.lr == 3e-3f && strcmp(c.sft.data, "task") == 0 &&
                 c.sft.tokens_file[0] == '\0' && c.sft.seq == 0,
          "sft defaults");
    check(t, c.ppo.steps == 20 && c.ppo.batch == 32 && c.ppo.epochs == 2 && c.ppo.minibatch == 8 &&
                 c.ppo.actor_lr == 1e-3f && c.ppo.critic_lr == 3e-3f && c.ppo.clip == 0.2f &&
                 c.ppo.value_clip == 0.2f && c.ppo.gamma == 1.0f && c.ppo.lam == 0.95f && c.ppo.kl_beta == 0.02f &&
                 c.ppo.entropy_coef == 0.0f && c.ppo.whiten_advantages == 1 && c.ppo.temperature == 1.0f &&
                 c.ppo.top_k == 0 && c.ppo.max_response == 8,
          "ppo defaults");
    check(t, c.reward.network == 0 && c.reward.network_weight == 0.0f && c.inject.nan_loss_step == -1,
          "reward and inject defaults");
    int none = 1;
    for (int i = 0; i < PLAN_NSTAGES; i++) none &= c.sw.plan.stage[i].src == PLAN_SRC_NONE;
    check(t, c.sw.step == -1 && strcmp(c.sw.plan.fill, "auto") == 0 && none,
          "switch defaults (step %d, default %s, no model-stage)", c.sw.step, c.sw.plan.fill);
    const TransitionConfig *tx = &c.transition;
    check(t, tx->memory_mib == 0.0 && tx->chunk_kib == 1024 && tx->window_kib == 8192 && tx->verify == 0 &&
                 strcmp(tx->sync, "engine") == 0 && tx->bandwidth_gbs == 0.0 && tx->latency_us == 5.0 &&
                 tx->comm_setup_us == 200.0 && tx->keep_comms == 8,
          "transition defaults (memory %g chunk %d window %d verify %d sync %s bw %g lat %g setup %g keep %d)",
          tx->memory_mib, tx->chunk_kib, tx->window_kib, tx->verify, tx->sync, tx->bandwidth_gbs, tx->latency_us,
          tx->comm_setup_us, tx->keep_comms);
    check(t, deck_line(d, "model.n_head") == 4 && deck_line(d, "model.n_layer") == 2 && deck_line(d, "ppo.clip") == 0 &&
                 deck_line(d, "ppo.nosuch") == -1 && deck_line(d, "nodot") == -1,
          "deck_line: set keys have their line, defaulted 0, unknown -1");
    size_t len = 0;
    const char *txt = deck_text(d, &len);
    check(t, len == strlen(MODEL) && strcmp(txt, MODEL) == 0 && strcmp(deck_path(d), "inputs/tiny.deck") == 0,
          "deck_text and deck_path give the bytes and the name");
    check(t, strcmp(deck_last_error(d), "") == 0, "no message after a good parse");

    /* callers' errors at a key's line, or at the file when defaulted */
    int e = deck_error_at(d, "model.n_head", "max_seq %d is too short for prompts of %d", 8, 12);
    check(t, e == 2 && strcmp(deck_last_error(d), "inputs/tiny.deck:4: error: max_seq 8 is too short for prompts of 12") == 0,
          "deck_error_at at a set key: %s", deck_last_error(d));
    e = deck_error_at(d, "model.max_seq", "too short");
    check(t, e == 2 && strcmp(deck_last_error(d), "inputs/tiny.deck: error: too short") == 0,
          "deck_error_at at a defaulted key: %s", deck_last_error(d));
    deck_free(d);

    rc = deck_parse_string(NULL, MODEL, strlen(MODEL), &c, NULL, 1);
    check(t, rc == 0 && strcmp(c.run.name, "<string>") == 0, "NULL name and NULL out are accepted (name '%s')",
          c.run.name);
    rc = deck_parse_string("a/b/.hidden", MODEL, strlen(MODEL), &c, NULL, 1);
    check(t, rc == 0 && strcmp(c.run.name, ".hidden") == 0, "stem of a dot file is the whole name ('%s')",
          c.run.name);
}

static const char FULL[] =
    "# every key set to something other than its default (arch = gpt2 and its Llama-family keys: defaults)\n"
    "[run]\n"
    "name = \"my run # 1\"   # quoted: '#' inside is literal\n"
    "seed = 9876543210123\n"
    "backend = cpu\n"
    "blas_threads = 4\n"
    "log_every = 10\n"
    "restart = ckpt/old.h5\n"
    "precision = tf32\n"
    "expect_reward_gain = 0.25\n"
    "[model]\n"
    "n_layer = 3\n"
    "n_embd=96\n"
    "\tn_head\t=\t6\t\n"
    "max_seq = 128\n"
    "vocab_size = 100\n"
    "init_std = 0.05\n"
    "arch = gpt2\n"
    "n_kv_head = auto\n"
    "head_dim = auto\n"
    "ffn_dim = auto\n"
    "rope_theta = 1e4\n"
    "rope_scaling_factor = 0\n"
    "rope_low_freq_factor = 1.0\n"
    "rope_high_freq_factor = 4\n"
    "rope_original_max_seq = 8192\n"
    "norm_eps = 0.00001\n"
    "tie_embeddings = yes\n"
    "qkv_bias = auto\n"
    "qk_norm = auto\n"
    "init_from = \"\"\n"
    "[task]\n"
    "names = sort , add\n"
    "digits = +6\n"
    "[optim]\n"
    "beta1 = 0.8\n"
    "beta2 = 0.99\n"
    "eps = 1e-6\n"
    "weight_decay = 0.1\n"
    "max_grad_norm = 0\n"
    "[sft]\n"
    "steps = 100\n"
    "batch = 16\n"
    "lr = 1e-2\n"
    "data = tokens\n"
    "tokens_file = data/x#y.bin # the '#' in the path has no space before it\n"
    "seq = 64\n"
    "[ppo]\n"
    "steps = 50\n"
    "batch = 64\n"
    "epochs = 4\n"
    "minibatch = 16\n"
    "actor_lr = 5e-4\n"
    "critic_lr = 1e-3\n"
    "clip = 0.1\n"
    "value_clip = 0.5\n"
    "gamma = 0.99\n"
    "lam = 0.9\n"
    "kl_beta = 0.05\n"
    "entropy_coef = 0.01\n"
    "whiten_advantages = off\n"
    "temperature = 0.7\n"
    "top_k = 5\n"
    "max_response = 12\n"
    "[reward]\n"
    "network = YES\n"
    "network_weight = -0.5\n"
    "[inject]\n"
    "nan_loss_step = 3\n"
    "[ckpt]\n"
    "every = 5\n"
    "dir = out/ck\n"
    "keep = 3\n"
    "overwrite = true\n"
    "[plan]\n"
    "default = colocated\n"
    "actor.gen = tp2 pp1 dp2 @ 0-3\n"
    "actor.inf = dp4 @ 3,2,1,0\n"
    "actor.train = tp2 pp2\n"
    "ref.inf = pp2 @ all\n"
    "critic.inf = tp1 pp1 dp1 @ 7\n"
    "critic.train = dp2 @ 4-5 , 8 - 9\n"
    "reward.inf = tp4@0-3\n"
    "[switch]\n"
    "step = 7\n"
    "default = disaggregated\n"
    "actor.gen = tp2 @ 4-7\n"
    "actor.inf = dp8 @ all\n"
    "actor.train = tp2 pp2 dp2 @ 7,6,5,4,3,2,1,0\n"
    "ref.inf = dp2\n"
    "critic.inf = pp2 @ 900-901\n"
    "critic.train = default\n"
    "reward.inf = dp1 @ 3\n"
    "[transition]\n"
    "memory_mib = 512.5\n"
    "chunk_kib = 256\n"
    "window_kib = 2048\n"
    "verify = yes\n"
    "sync = broadcast\n"
    "bandwidth_gbs = 25\n"
    "latency_us = 0.1\n"
    "comm_setup_us = 0\n"
    "forward = no\n"
    "keep_comms = 3\n"
    "[data]\n"
    "train = data/train.jsonl\n"
    "eval = data/eval.jsonl\n"
    "prompt_key = prompt\n"
    "answer_key = solution\n"
    "tokenizer = models/smollm2\n"
    "chat = none\n"
    "system = \"You are terse.\"\n"
    "eval_size = 100\n"
    "[trace]\n"
    "file = none\n"
    "overwrite = true\n"
    "papi_events = PAPI_TOT_INS, PAPI_TOT_CYC\n"
    "[inject]\n"
    "slow_factor = 2.5\n"
    "resp_len_from = 3\n"
    "resp_len_to = 9\n"
    "resp_len_ramp = 12\n"
    "slow_step = 4\n"
    "slow_until = 8\n"
    "leave_step = 5\n"
    "join_step = 9\n"
    "slow_period = 2\n"
    "slow_off = 3\n"
    "comm_setup_s = 0.75\n"
    "slow_ranks = 1,3-4\n"
    "leave_ranks = 6\n"
    "die_rank = 2\n"
    "die_step = 3\n"
    "die_phase = sync\n"
    "[planner]\n"
    "policy = payback\n"
    "gamma = 0.25\n"
    "threshold = 0.2\n"
    "alpha = 0.75\n"
    "memory_gib = 2\n"
    "every_k = 5\n"
    "warmup = 3\n"
    "sweep_plans = 30\n"
    "sweep_steps = 4\n"
    "sweep_calibrate = 5\n"
    "sweep_seed = 11\n"
    "sweep_reference = 5\n"
    "guard_margin = 0.2\n"
    "guard_steps = 3\n"
    "max_staleness = 2\n"
    "[ppo]\n"
    "algorithm = ppo\n"
    "group_size = 1\n"
    "group_std = false\n"
    "group_eps = 1e-4\n"
    "kl_loss_coef = 0.1\n"
    "clip_high = 0.3\n"
    "tis_cap = 2.5\n"
    "credit = outcome\n"
    "process_baseline = pooled\n"   /* the defaults: the others need algorithm = grpo, credit = process, group_std */
    "group_std_scope = group\n"
    "max_staleness = 1\n"
    "micro_batch = 5\n"
    "correction = decoupled\n"
    "[reward]\n" /* after every line the checks above count */
    "rule = boxed\n"
    "task = chain_sum\n"
    "format_reward = 0.25\n"
    "[eval]\n"
    "every = 10\n"
    "prompts = 96\n"
    "responses = r.jsonl\n"
    "[trace]\n"
    "samples = 5\n"
    "[model]\n"
    "gen_dtype = bf16\n"
    "score_dtype = bf16\n"
    "[elastic]\n"
    "respawn = true\n"
    "grow_to = 8\n"
    "in_memory = false\n"
    "buddy = true\n"
    "buddy_every = 3\n";

static void good_full(Tally *t, const char *text, const char *what)
{
    Config c;
    Deck *d = NULL;
    int rc = deck_parse_string("full.deck", text, strlen(text), &c, &d, 1);
    check(t, rc == 0, "%s: parses (rc=%d %s)", what, rc, deck_last_error(d));
    check(t, strcmp(c.run.name, "my run # 1") == 0 && c.run.seed == 9876543210123LL &&
                 strcmp(c.run.backend, "cpu") == 0 && c.run.blas_threads == 4 && c.run.log_every == 10,
          "%s: run values (name '%s' seed %lld)", what, c.run.name, c.run.seed);
    check(t, c.model.n_layer == 3 && c.model.n_embd == 96 && c.model.n_head == 6 && c.model.max_seq == 128 &&
                 c.model.vocab_size == 100 && c.model.init_std == 0.05f,
          "%s: model values", what);
    check(t, strcmp(c.task.names, "sort,add") == 0 && c.task.digits == 6, "%s: task values ('%s' %d)", what,
          c.task.names, c.task.digits);
    check(t, c.optim.beta1 == 0.8f && c.optim.beta2 == 0.99f && c.optim.eps == 1e-6f && c.optim.weight_decay == 0.1f &&
                 c.optim.max_grad_norm == 0.0f,
          "%s: optim values", what);
    check(t, c.sft.steps == 100 && c.sft.batch == 16 && c.sft.lr == 1e-2f && strcmp(c.sft.data, "tokens") == 0 &&
                 strcmp(c.sft.tokens_file, "data/x#y.bin") == 0 && c.sft.seq == 64,
          "%s: sft values (tokens_file '%s')", what, c.sft.tokens_file);
    check(t, c.ppo.steps == 50 && c.ppo.batch == 64 && c.ppo.epochs == 4 && c.ppo.minibatch == 16 &&
                 c.ppo.actor_lr == 5e-4f && c.ppo.critic_lr == 1e-3f && c.ppo.clip == 0.1f && c.ppo.value_clip == 0.5f &&
                 c.ppo.gamma == 0.99f && c.ppo.lam == 0.9f && c.ppo.kl_beta == 0.05f && c.ppo.entropy_coef == 0.01f &&
                 c.ppo.whiten_advantages == 0 && c.ppo.temperature == 0.7f && c.ppo.top_k == 5 &&
                 c.ppo.max_response == 12,
          "%s: ppo values", what);
    check(t, c.reward.network == 1 && c.reward.network_weight == -0.5f && c.inject.nan_loss_step == 3,
          "%s: reward and inject values", what);
    check(t, strcmp(c.run.restart, "ckpt/old.h5") == 0 && strcmp(c.run.precision, "tf32") == 0 && c.ckpt.every == 5 && strcmp(c.ckpt.dir, "out/ck") == 0 &&
                 c.ckpt.keep == 3,
          "%s: restart and ckpt values", what);
    const PlanStage *ps = c.plan.stage;
    check(t, strcmp(c.plan.fill, "colocated") == 0 && ps[PLAN_ACTOR_GEN].src == PLAN_SRC_DECK &&
                 ps[PLAN_ACTOR_GEN].tp == 2 && ps[PLAN_ACTOR_GEN].pp == 1 && ps[PLAN_ACTOR_GEN].dp == 2 &&
                 ps[PLAN_ACTOR_GEN].nranks == 4 && ps[PLAN_ACTOR_GEN].ranks[3] == 3 &&
                 ps[PLAN_ACTOR_INF].tp == 0 && ps[PLAN_ACTOR_INF].ranks[0] == 3 && ps[PLAN_ACTOR_TRAIN].nranks == 0 &&
                 ps[PLAN_REF_INF].all == 1 && ps[PLAN_CRITIC_TRAIN].nranks == 4 && ps[PLAN_CRITIC_TRAIN].ranks[2] == 8 &&
                 ps[PLAN_REWARD_INF].tp == 4 && ps[PLAN_REWARD_INF].nranks == 4,
          "%s: plan values", what);
    /* [switch] is kept as written: no default filled in, `all` and ranks
     * beyond any job stay for the job to resolve at the switch */
    const PlanStage *ss = c.sw.plan.stage;
    check(t, c.sw.step == 7 && strcmp(c.sw.plan.fill, "disaggregated") == 0 && ss[PLAN_ACTOR_GEN].src == PLAN_SRC_DECK &&
                 ss[PLAN_ACTOR_GEN].tp == 2 && ss[PLAN_ACTOR_GEN].dp == 0 && ss[PLAN_ACTOR_GEN].nranks == 4 &&
                 ss[PLAN_ACTOR_GEN].ranks[0] == 4 && ss[PLAN_ACTOR_INF].all == 1 && ss[PLAN_ACTOR_INF].nranks == 0 &&
                 ss[PLAN_ACTOR_TRAIN].nranks == 8 && ss[PLAN_ACTOR_TRAIN].ranks[0] == 7 &&
                 ss[PLAN_REF_INF].dp == 2 && ss[PLAN_REF_INF].nranks == 0 && ss[PLAN_CRITIC_INF].ranks[1] == 901 &&
                 ss[PLAN_CRITIC_TRAIN].src == PLAN_SRC_NONE && ss[PLAN_REWARD_INF].ranks[0] == 3,
          "%s: switch values (step %d, default %s), unresolved", what, c.sw.step, c.sw.plan.fill);
    const TransitionConfig *tx = &c.transition;
    check(t, tx->memory_mib == 512.5 && tx->chunk_kib == 256 && tx->window_kib == 2048 && tx->verify == 1 &&
                 strcmp(tx->sync, "broadcast") == 0 && tx->bandwidth_gbs == 25.0 && tx->latency_us == 0.1 &&
                 tx->comm_setup_us == 0.0 && tx->forward == 0 && tx->keep_comms == 3,
          "%s: transition values (latency_us %.17g: kept as a double)", what, tx->latency_us);
    const InjectConfig *ij = &c.inject;
    const PlannerConfig *pl = &c.planner;
    check(t, ij->slow_factor == 2.5f && ij->resp_len_from == 3 && ij->resp_len_to == 9 && ij->resp_len_ramp == 12 &&
                 ij->slow_step == 4 && ij->slow_until == 8 && ij->leave_step == 5 && ij->join_step == 9 &&
                 ij->slow_period == 2 && ij->slow_off == 3 && ij->comm_setup_s == 0.75f && ij->die_rank == 2 &&
                 ij->die_step == 3 && strcmp(ij->die_phase, "sync") == 0 &&
                 strcmp(ij->slow_ranks, "1,3-4") == 0 && strcmp(ij->leave_ranks, "6") == 0 &&
                 strcmp(pl->policy, "payback") == 0 && pl->gamma == 0.25f && pl->threshold == 0.2f && pl->alpha == 0.75f &&
                 pl->memory_gib == 2.0f && pl->every_k == 5 && pl->warmup == 3 &&
                 pl->sweep_plans == 30 && pl->sweep_steps == 4 && pl->sweep_calibrate == 5 && pl->sweep_seed == 11 && pl->sweep_reference == 5 &&
                 pl->guard_margin == 0.2f && pl->guard_steps == 3 && pl->max_staleness == 2,
          "%s: inject and planner values (policy %s, slow_ranks '%s')", what, pl->policy, ij->slow_ranks);
    check(t, strcmp(c.ppo.algorithm, "ppo") == 0 && c.ppo.group_size == 1 && c.ppo.group_std == 0 &&
                 c.ppo.group_eps == 1e-4f && c.ppo.kl_loss_coef == 0.1f && c.ppo.clip_high == 0.3f && c.ppo.tis_cap == 2.5f && !strcmp(c.model.gen_dtype, "bf16") &&
                 !strcmp(c.model.score_dtype, "bf16") &&
                 strcmp(c.ppo.credit, "outcome") == 0 && strcmp(c.ppo.process_baseline, "pooled") == 0 &&
                 strcmp(c.ppo.group_std_scope, "group") == 0 && c.ppo.max_staleness == 1 && c.ppo.micro_batch == 5 &&
                 strcmp(c.ppo.correction, "decoupled") == 0,
          "%s: the algorithm keys (algorithm %s, group_size %d)", what, c.ppo.algorithm, c.ppo.group_size);
    check(t, c.elastic.respawn == 1 && c.elastic.grow_to == 8 && c.elastic.in_memory == 0 && c.elastic.buddy == 1 &&
                 c.elastic.buddy_every == 3,
          "%s: elastic values (in_memory %d, buddy %d, buddy_every %d)", what, c.elastic.in_memory, c.elastic.buddy,
          c.elastic.buddy_every);
    check(t, strcmp(c.trace.file, "none") == 0 && strcmp(c.trace.papi_events, "PAPI_TOT_INS, PAPI_TOT_CYC") == 0,
          "%s: trace values (file '%s', papi_events '%s')", what, c.trace.file, c.trace.papi_events);
    check(t, deck_line(d, "switch.step") == 85 && deck_line(d, "switch.actor.gen") == 87 &&
                 deck_line(d, "plan.actor.gen") == 77 && deck_line(d, "transition.comm_setup_us") == 102,
          "%s: switch and transition lines (step %d, switch.actor.gen %d, plan.actor.gen %d, comm_setup_us %d)", what,
          deck_line(d, "switch.step"), deck_line(d, "switch.actor.gen"), deck_line(d, "plan.actor.gen"),
          deck_line(d, "transition.comm_setup_us"));
    check(t, deck_line(d, "run.name") == 3 && deck_line(d, "model.n_head") == 14 && deck_line(d, "inject.nan_loss_step") == 69,
          "%s: line numbers (name %d n_head %d nan_loss_step %d)", what, deck_line(d, "run.name"),
          deck_line(d, "model.n_head"), deck_line(d, "inject.nan_loss_step"));
    deck_free(d);
}

/* The resolved text is a deck that resolves to the same Config. */
static void round_trip(Tally *t, const char *text, const char *what)
{
    Config a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    Deck *d = NULL, *d2 = NULL;
    int rc = deck_parse_string("inputs/tiny.deck", text, strlen(text), &a, &d, 1);
    char *r = deck_resolved_text(d, &a);
    int rc2 = r ? deck_parse_string("resolved.deck", r, strlen(r), &b, &d2, 1) : -1;
    check(t, rc == 0 && r && rc2 == 0 && memcmp(&a, &b, sizeof a) == 0,
          "%s: resolved text reads back to the same config (rc2=%d %s)", what, rc2, deck_last_error(d2));
    int all_set = strcmp(what, "full") == 0; /* FULL sets every key */
    check(t, r && strstr(r, "[ppo]\n") && strstr(r, "n_head = ") && (strstr(r, "# (default)") == NULL) == all_set &&
                 strstr(r, "# line 4"),
          "%s: resolved text has sections, values, and %s line marks", what, all_set ? "only" : "default and");
    if (r && strcmp(what, "minimal") == 0)
        check(t, strstr(r, "init_std = 0.02 ") && strstr(r, "eps = 1e-05 ") && strstr(r, "vocab_size = auto ") &&
                     strstr(r, "name = \"tiny\" "),
              "%s: floats print short, auto prints as auto", what);
    free(r);
    deck_free(d);
    deck_free(d2);
}

static void good_syntax(Tally *t)
{
    Config c;
    /* BOM + CRLF + comments + reopened section */
    const char *txt = "\xEF\xBB\xBF# deck\r\n[model]\r\nn_layer = 2\r\nn_embd = 64 # width\r\n\r\n[run]\r\nseed = 5\r\n"
                      "[model]\r\nn_head = 4\r\n";
    Deck *d = NULL;
    int rc = deck_parse_string("crlf.deck", txt, strlen(txt), &c, &d, 1);
    check(t, rc == 0 && c.model.n_embd == 64 && c.run.seed == 5 && c.model.n_head == 4 && deck_line(d, "model.n_head") == 9,
          "BOM, CRLF, inline comment, reopened section (rc=%d %s)", rc, deck_last_error(d));
    deck_free(d);

    rc = parse("x.deck", MODEL "[run]\nname = a#b\n[sft]\ntokens_file =\n", &c, NULL);
    check(t, rc == 0 && strcmp(c.run.name, "a#b") == 0 && c.sft.tokens_file[0] == '\0',
          "'#' without a space before it is part of the value; empty string value allowed");
    rc = parse("x.deck", MODEL "[run]\nname = \"  padded  \"\n", &c, NULL);
    check(t, rc == 0 && strcmp(c.run.name, "  padded  ") == 0, "quotes keep whitespace ('%s')", c.run.name);
    rc = parse("x.deck", MODEL "[model]\nvocab_size = auto\n[ppo]\nwhiten_advantages = 0\n[reward]\nnetwork = On\n", &c, NULL);
    check(t, rc == 0 && c.model.vocab_size == 0 && c.ppo.whiten_advantages == 0 && c.reward.network == 1,
          "explicit auto, 0 and On booleans");
    rc = parse("x.deck", "[model]\nn_layer = 1\nn_embd = 1\nn_head = 1\nmax_seq = 2\n[ppo]\nbatch = 8\nminibatch = 8\n"
                         "gamma = 0\nlam = 1\ntemperature = 0\n[optim]\nbeta1 = 0\n[inject]\nnan_loss_step = -1\n",
               &c, NULL);
    check(t, rc == 0 && c.ppo.gamma == 0.0f && c.ppo.lam == 1.0f && c.model.max_seq == 2,
          "inclusive bounds are accepted at both ends");

    /* lines of any length: a 1 MiB comment and a 1 MiB key */
    size_t big = (size_t)1 << 20;
    char *s = malloc(big + 200);
    memset(s, 'a', big + 200);
    s[0] = '#';
    memcpy(s + big, "\n" MODEL, strlen(MODEL) + 2);
    rc = parse("x.deck", s, &c, NULL);
    check(t, rc == 0 && c.model.n_head == 4, "a 1 MiB comment line is fine");
    memcpy(s, "[ppo]\n", 6);
    memcpy(s + big, " = 1\n", 6);
    Deck *d2 = NULL;
    rc = parse("x.deck", s, &c, &d2);
    check(t, rc == 2 && strstr(deck_last_error(d2), "x.deck:2: error: unknown key [ppo] aaaa") &&
                 strlen(deck_last_error(d2)) < 300,
          "a 1 MiB key is an unknown key with a short message (%zu bytes)", strlen(deck_last_error(d2)));
    deck_free(d2);
    free(s);
}

/* [switch] and [transition] with some keys set: the values land in Config,
 * the rest take their defaults, and the other sections are untouched. */
static void good_switch_transition(Tally *t)
{
    Config c;
    Deck *d = NULL;
    const char *txt = MODEL
        "[transition]\n"          /* line 5 */
        "chunk_kib = 64\n"
        "window_kib = 64          # equal to the chunk is enough\n"
        "memory_mib = 0.25\n"
        "[switch]\n"              /* line 9 */
        "step = 0\n"
        "default = colocated\n"
        "critic.train = pp2 dp2 @ 4,6,5,7\n"
        "actor.gen = tp2 dp2 @ 0-3\n";
    int rc = parse("sw.deck", txt, &c, &d);
    check(t, rc == 0, "[switch] and [transition] parse (rc=%d %s)", rc, deck_last_error(d));
    const PlanStage *ss = c.sw.plan.stage;
    int others = 1;
    for (int i = 0; i < PLAN_NSTAGES; i++)
        if (i != PLAN_CRITIC_TRAIN && i != PLAN_ACTOR_GEN) others &= ss[i].src == PLAN_SRC_NONE;
    check(t, rc == 0 && c.sw.step == 0 && strcmp(c.sw.plan.fill, "colocated") == 0 &&
                 ss[PLAN_CRITIC_TRAIN].src == PLAN_SRC_DECK && ss[PLAN_CRITIC_TRAIN].pp == 2 &&
                 ss[PLAN_CRITIC_TRAIN].dp == 2 && ss[PLAN_CRITIC_TRAIN].nranks == 4 &&
                 ss[PLAN_CRITIC_TRAIN].ranks[1] == 6 && ss[PLAN_ACTOR_GEN].tp == 2 && others,
          "switch values land in Config.sw; unlisted model-stages stay 'default' for the job to fill");
    int plan_none = 1;
    for (int i = 0; i < PLAN_NSTAGES; i++) plan_none &= c.plan.stage[i].src == PLAN_SRC_NONE;
    check(t, rc == 0 && plan_none && strcmp(c.plan.fill, "auto") == 0, "[plan] is untouched by [switch]");
    const TransitionConfig *tx = &c.transition;
    check(t, rc == 0 && tx->chunk_kib == 64 && tx->window_kib == 64 && tx->memory_mib == 0.25 && tx->verify == 0 &&
                 strcmp(tx->sync, "engine") == 0 && tx->bandwidth_gbs == 0.0 && tx->latency_us == 5.0 &&
                 tx->comm_setup_us == 200.0,
          "transition: set values, and defaults for the rest");
    check(t, deck_line(d, "switch.step") == 10 && deck_line(d, "switch.critic.train") == 12 &&
                 deck_line(d, "switch.ref.inf") == 0 && deck_line(d, "transition.window_kib") == 7 &&
                 deck_line(d, "transition.sync") == 0,
          "deck_line of switch and transition keys");
    char *r = deck_resolved_text(d, &c);
    check(t, r && strstr(r, "[switch]\nstep = 0 ") && strstr(r, "critic.train = tp1 pp2 dp2 @ 4,6,5,7") == NULL &&
                 strstr(r, "critic.train = pp2 dp2 @ 4,6,5,7 ") && strstr(r, "ref.inf = default ") &&
                 strstr(r, "[transition]\nmemory_mib = 0.25 ") && strstr(r, "bandwidth_gbs = 0 "),
          "resolved text has [switch] as written and [transition] (short doubles)");
    free(r);
    deck_free(d);
    round_trip(t, txt, "switch and transition");

    /* the whole plan by default = disaggregated, no model-stage listed */
    rc = parse("x.deck", MODEL "[switch]\nstep = 3\ndefault = disaggregated\n", &c, NULL);
    check(t, rc == 0 && c.sw.step == 3 && strcmp(c.sw.plan.fill, "disaggregated") == 0,
          "[switch] step with default = disaggregated and no model-stage is a plan");
    /* all seven with default = auto */
    rc = parse("x.deck", MODEL "[switch]\nstep = 1\nactor.gen = dp1 @ 0\nactor.inf = dp1 @ 0\nactor.train = dp1 @ 0\n"
                               "ref.inf = dp1 @ 0\ncritic.inf = dp1 @ 0\ncritic.train = dp1 @ 0\nreward.inf = dp1 @ 0\n",
               &c, NULL);
    check(t, rc == 0 && c.sw.plan.stage[PLAN_REWARD_INF].src == PLAN_SRC_DECK, "[switch] with all seven model-stages");
    rc = parse("x.deck", MODEL "[transition]\nwindow_kib = 4\nchunk_kib = 4\nbandwidth_gbs = 1e-3\nlatency_us = 0\n"
                               "memory_mib = 1e300\n",
               &c, NULL);
    check(t, rc == 0 && c.transition.window_kib == 4 && c.transition.bandwidth_gbs == 1e-3 &&
                 c.transition.memory_mib == 1e300,
          "transition bounds: 4 KiB window and chunk, 0 latency, doubles beyond float range");
}

/* A deck with command-line overrides that must be refused: exit code 2, every wanted substring in the
 * message (which names the override, not a deck line), and the config untouched. */
static void bad_set(Tally *t, const char *what, const DeckOverride *ov, int nov, const char *want1, const char *want2)
{
    Config c, before;
    memset(&c, 0x5A, sizeof c);
    memcpy(&before, &c, sizeof c);
    Deck *d = NULL;
    const char *text = MODEL "[ppo]\nsteps = 5\n";
    int rc = deck_parse_string_with("x.deck", text, strlen(text), ov, nov, &c, &d, 1);
    const char *m = deck_last_error(d);
    int ok = rc == 2 && d && strstr(m, want1) && (!want2 || strstr(m, want2)) && memcmp(&c, &before, sizeof c) == 0 &&
             !strstr(m, "x.deck:");
    check(t, ok, "bad --set, %s: rc=%d msg=\"%s\"", what, rc, m);
    deck_free(d);
}

/* Command-line overrides (--set, --restart): a value replaces the deck's or sets a key it lacks, the
 * resolved deck says where each came from and reads back to the same config, and every bad override gets
 * the deck's message for that fault, naming the argument. */
static void override_cases(Tally *t)
{
    const char *text = MODEL "[ppo]\nsteps = 5\n";
    DeckOverride ov[] = {{"--set", NULL, "ppo.steps=7", NULL}, {"--set", NULL, " sft.batch = 8 ", NULL},
                         {"--set", NULL, "run.name=\"my run\"", NULL}, {"--restart", "run.restart", "ck/x_step000005.h5", NULL}};
    Config c, b;
    memset(&c, 0, sizeof c);
    memset(&b, 0, sizeof b);
    Deck *d = NULL, *d2 = NULL;
    int rc = deck_parse_string_with("x.deck", text, strlen(text), ov, 4, &c, &d, 1);
    check(t, rc == 0 && c.ppo.steps == 7 && c.sft.batch == 8 && strcmp(c.run.name, "my run") == 0 &&
                 strcmp(c.run.restart, "ck/x_step000005.h5") == 0 && c.model.n_layer == 2,
          "--set replaces a deck value and sets keys the deck lacks; --restart sets [run] restart (rc=%d %s)", rc,
          deck_last_error(d));
    check(t, deck_line(d, "ppo.steps") == 0 && deck_line(d, "model.n_layer") == 2,
          "deck_line of an overridden key is 0 (not a line of the deck)");
    char *r = deck_resolved_text(d, &c);
    check(t, r && strstr(r, "steps = 7                            # command line (--set)") &&
                 strstr(r, "batch = 8                            # command line (--set)") &&
                 strstr(r, "restart = \"ck/x_step000005.h5\"       # command line (--restart)") &&
                 strstr(r, "n_layer = 2                          # line 2") && strstr(r, "# (default)"),
          "the resolved deck marks each key: deck line, command line (--set, --restart) or default");
    int rc2 = r ? deck_parse_string("resolved.deck", r, strlen(r), &b, &d2, 1) : -1;
    check(t, rc2 == 0 && memcmp(&c, &b, sizeof c) == 0, "the resolved deck with overrides reads back to the same config");
    free(r);
    check(t, deck_error_at(d, "ppo.steps", "later check") == 2 &&
                 strcmp(deck_last_error(d), "--set ppo.steps=7: error: later check") == 0,
          "deck_error_at on an overridden key names the --set: %s", deck_last_error(d));
    deck_free(d);
    deck_free(d2);

    DeckOverride k[] = {{"--set", NULL, "ppo.stepz=3", NULL}};
    bad_set(t, "unknown key", k, 1, "--set ppo.stepz=3: error: unknown key [ppo] stepz",
            "--set ppo.stepz=3: note: did you mean 'ppo.steps'?");
    DeckOverride s[] = {{"--set", NULL, "ppx.steps=3", NULL}};
    bad_set(t, "unknown section", s, 1, "--set ppx.steps=3: error: unknown section [ppx]", "note: did you mean '[ppo]'?");
    DeckOverride n[] = {{"--set", NULL, "steps=3", NULL}};
    bad_set(t, "no section", n, 1, "--set steps=3: error: 'steps' names no section", "'ppo.steps'");
    DeckOverride v[] = {{"--set", NULL, "ppo.steps=abc", NULL}};
    bad_set(t, "bad value", v, 1, "--set ppo.steps=abc: error: [ppo] steps = abc is not an integer", NULL);
    DeckOverride j[] = {{"--set", NULL, "ppo.steps=3x", NULL}};
    bad_set(t, "trailing junk", j, 1, "--set ppo.steps=3x: error: [ppo] steps = 3x is not an integer: unexpected 'x' after 3",
            NULL);
    DeckOverride r0[] = {{"--set", NULL, "ppo.steps=-1", NULL}};
    bad_set(t, "out of range", r0, 1, "--set ppo.steps=-1: error: [ppo] steps = -1 is out of range (must be ≥ 0)", NULL);
    DeckOverride e[] = {{"--set", NULL, "ppo.steps", NULL}};
    bad_set(t, "no '='", e, 1, "--set ppo.steps: error: expected section.key=value", NULL);
    DeckOverride q[] = {{"--set", NULL, "ppo.clip=\"0.2\"", NULL}};
    bad_set(t, "a quoted number", q, 1, "--set ppo.clip=\"0.2\": error: [ppo] clip = \"0.2\" is quoted", NULL);
    DeckOverride tw[] = {{"--set", NULL, "ppo.steps=3", NULL}, {"--set", NULL, "ppo.steps = 4", NULL}};
    bad_set(t, "a key twice", tw, 2,
            "--set ppo.steps = 4: error: [ppo] steps is set twice on the command line (first by --set ppo.steps=3)", NULL);
    DeckOverride x[] = {{"--set", NULL, "ppo.minibatch=7", NULL}};
    bad_set(t, "a cross-key check", x, 1, "--set ppo.minibatch=7: error: [ppo] minibatch = 7 does not divide batch", NULL);
    DeckOverride rs[] = {{"--restart", "run.restart", "a\"b.h5", NULL}};
    bad_set(t, "a --restart path with a quote", rs, 1, "--restart a\"b.h5: error: [run] restart = a\"b.h5 contains a '\"'",
            NULL);
}

#define LLAMA "[model]\narch = llama\nn_layer = 2\nn_embd = 64\nn_head = 4\n"

/* The Llama family's [model] keys: values, defaults, and a resolved deck that reads back. */
static void good_llama(Tally *t)
{
    Config c;
    Deck *d = NULL;
    const char *text = LLAMA "n_kv_head = 2\nhead_dim = 32\nffn_dim = 172\nrope_theta = 500000\n"
                             "rope_scaling_factor = 8\nrope_low_freq_factor = 1\nrope_high_freq_factor = 4\n"
                             "rope_original_max_seq = 8192\nnorm_eps = 1e-6\ntie_embeddings = false\n"
                             "qkv_bias = true\nqk_norm = false\n[plan]\ndefault = colocated\nactor.gen = dp2 @ 0-1\n";
    int rc = parse("x.deck", text, &c, &d);
    const ModelConfig *m = &c.model;
    check(t, rc == 0 && strcmp(m->arch, "llama") == 0 && m->n_kv_head == 2 && m->head_dim == 32 && m->ffn_dim == 172 &&
                 m->rope_theta == 500000.0 && m->rope_scaling_factor == 8.0 && m->rope_low_freq_factor == 1.0 &&
                 m->rope_high_freq_factor == 4.0 && m->rope_original_max_seq == 8192 && m->norm_eps == 1e-6 &&
                 m->tie_embeddings == 0 && strcmp(m->qkv_bias, "true") == 0 && strcmp(m->qk_norm, "false") == 0,
          "llama deck: model values (rc=%d %s)", rc, deck_last_error(d));
    deck_free(d);
    rc = parse("x.deck", MODEL, &c, &d);
    check(t, rc == 0 && strcmp(m->arch, "gpt2") == 0 && m->n_kv_head == 0 && m->head_dim == 0 && m->ffn_dim == 0 &&
                 m->rope_theta == 10000.0 && m->rope_scaling_factor == 0.0 && m->norm_eps == 1e-5 &&
                 m->tie_embeddings == 1 && strcmp(m->qkv_bias, "auto") == 0 && strcmp(m->qk_norm, "auto") == 0,
          "llama keys' defaults: arch gpt2, auto, 10000, 0, 1e-5, tied, auto");
    deck_free(d);
    round_trip(t, text, "llama");
    rc = parse("x.deck", MODEL "n_kv_head = auto\nnorm_eps = 1e-5\n", &c, &d);
    check(t, rc == 0, "arch gpt2 accepts a Llama-family key at its default (rc=%d %s)", rc, deck_last_error(d));
    deck_free(d);
    rc = parse("x.deck", LLAMA "[plan]\ndefault = colocated\nactor.train = tp1 pp1 dp4\n", &c, &d);
    check(t, rc == 0, "arch llama with a tp1 pp1 plan (rc=%d %s)", rc, deck_last_error(d));
    deck_free(d);
    /* TP and PP plans: the deck takes them; whether tp divides the key/value heads is the plan's check
       (tests/decks/bad_plans/llama_kv_heads.deck) */
    rc = parse("x.deck", LLAMA "[plan]\ndefault = colocated\nactor.train = tp2 pp2\n", &c, &d);
    check(t, rc == 0, "arch llama with a tp2 pp2 plan (rc=%d %s)", rc, deck_last_error(d));
    deck_free(d);
    rc = parse("x.deck", "[model]\narch = qwen3\nn_layer = 2\nn_embd = 64\nn_head = 4\n"
               "[switch]\nstep = 2\ndefault = colocated\ncritic.inf = pp2\n", &c, &d);
    check(t, rc == 0, "arch qwen3 with a pp2 [switch] (rc=%d %s)", rc, deck_last_error(d));
    deck_free(d);
}

/* The Llama family's cross-key errors, at the line of the key to blame. */
static void bad_llama(Tally *t)
{
    bad(t, "kv heads do not divide heads", LLAMA "n_kv_head = 3\n",
        "x.deck:6: error: [model] n_kv_head = 3 does not divide n_head = 4", NULL, 1);
    bad(t, "unknown arch", "[model]\narch = mistral\n", "x.deck:2: error: [model] arch = mistral", NULL, 0);
    bad(t, "a Llama key under gpt2", MODEL "n_kv_head = 2\n",
        "x.deck:5: error: [model] n_kv_head applies to the Llama family (arch = llama, qwen2 or qwen3), not to "
        "arch = gpt2", NULL, 1);
    bad(t, "a Llama bool under gpt2", MODEL "tie_embeddings = false\n",
        "x.deck:5: error: [model] tie_embeddings applies to the Llama family", NULL, 1);
    bad(t, "rope factors out of order", LLAMA "rope_scaling_factor = 8\nrope_high_freq_factor = 0.5\n",
        "x.deck:7: error: [model] rope_low_freq_factor = 1 must be below rope_high_freq_factor = 0.5", NULL, 1);
    bad(t, "gpt2 keys out of range", LLAMA "norm_eps = 0\n", "x.deck:6: error: [model] norm_eps = 0 is out of range",
        NULL, 1);
}

static void bad_cases(Tally *t)
{
    bad(t, "unknown key", MODEL "[ppo]\nminbatch = 8\n", "x.deck:6: error: unknown key [ppo] minbatch",
        "x.deck:6: note: did you mean 'ppo.minibatch'?", 0);
    bad(t, "key in the wrong section", MODEL "seed = 3\n", "x.deck:5: error: unknown key [model] seed",
        "note: did you mean 'run.seed'?", 0);
    bad(t, "key of two other sections", MODEL "steps = 3\n", "unknown key [model] steps",
        "note: did you mean 'sft.steps' or 'ppo.steps' or 'simulate.steps'?", 0);
    bad(t, "upper-case key", "[model]\nN_Layer = 2\n", "x.deck:2: error: unknown key [model] N_Layer",
        "note: did you mean 'model.n_layer'?", 0);
    bad(t, "far unknown key", MODEL "[ppo]\nxyzzy_frobnicate = 1\n", "x.deck:6: error: unknown key [ppo] xyzzy_frobnicate",
        NULL, 1);
    bad(t, "misspelt section", MODEL "[ppoo]\nclip = 0.1\n", "x.deck:5: error: unknown section [ppoo]",
        "x.deck:5: note: did you mean '[ppo]'?", 0);
    bad(t, "longer section name", MODEL "[optimizer]\n", "x.deck:5: error: unknown section [optimizer]",
        "note: did you mean '[optim]'?", 0);
    bad(t, "unrelated section", MODEL "[zzzzzzzz]\n", "x.deck:5: error: unknown section [zzzzzzzz]", NULL, 1);
    bad(t, "wrong type", "[model]\nn_layer = two\n", "x.deck:2: error: [model] n_layer = two is not an integer (expected an integer, ≥ 1 and ≤ 4096)", NULL, 1);
    bad(t, "trailing junk", "[model]\nn_layer = 4x\n", "x.deck:2: error: [model] n_layer = 4x is not an integer: unexpected 'x' after 4", NULL, 1);
    bad(t, "float for an int", "[model]\nn_layer = 1.5\n", "[model] n_layer = 1.5 is not an integer: unexpected '.5' after 1", NULL, 1);
    bad(t, "float trailing junk", MODEL "[ppo]\nclip = 0.1x\n", "x.deck:6: error: [ppo] clip = 0.1x is not a number: unexpected 'x' after 0.1", NULL, 1);
    bad(t, "float not a number", MODEL "[ppo]\nclip = big\n", "[ppo] clip = big is not a number", NULL, 1);
    bad(t, "float nan", MODEL "[ppo]\nclip = nan\n", "[ppo] clip = nan is not a finite number", NULL, 1);
    bad(t, "float inf", MODEL "[reward]\nnetwork_weight = -inf\n", "[reward] network_weight = -inf is not a finite number", NULL, 1);
    bad(t, "float overflow", MODEL "[reward]\nnetwork_weight = 1e39\n", "too large for a 32-bit float", NULL, 1);
    bad(t, "out of range", MODEL "[ppo]\nclip = -0.1\n",
        "x.deck:6: error: [ppo] clip = -0.1 is out of range (must be > 0 and ≤ 10)", NULL, 1);
    bad(t, "out of range, half-open", MODEL "[optim]\nbeta2 = 1\n", "[optim] beta2 = 1 is out of range (must be ≥ 0 and < 1)", NULL, 1);
    bad(t, "out of range, float rounding", MODEL "[optim]\neps = 1e-50\n", "rounds to 0 as a 32-bit float, which is out of range (must be > 0)", NULL, 1);
    bad(t, "out of range int", MODEL "[run]\nblas_threads = 0\n", "x.deck:6: error: [run] blas_threads = 0 is out of range (must be ≥ 1 and ≤ 256)", NULL, 1);
    bad(t, "int beyond int", MODEL "[sft]\nsteps = 3000000000\n", "[sft] steps = 3000000000 is out of range (must be ≥ 0 and ≤ 2147483647)", NULL, 1);
    bad(t, "int beyond long long", "[run]\nseed = 99999999999999999999\n", "x.deck:2: error: [run] seed = 99999999999999999999 is out of range (must be ≥ 0 and ≤ 9223372036854775807)", NULL, 1);
    bad(t, "int beyond long long, negative", "[run]\nseed = -99999999999999999999\n", "x.deck:2: error: [run] seed = -99999999999999999999 is out of range (must be ≥ 0)", NULL, 1);
    bad(t, "int field beyond long long", MODEL "[sft]\nsteps = 99999999999999999999\n", "[sft] steps = 99999999999999999999 is out of range (must be ≥ 0 and ≤ 2147483647)", NULL, 1);
    bad(t, "negative seed", "[run]\nseed = -1\n", "[run] seed = -1 is out of range (must be ≥ 0)", NULL, 1);
    bad(t, "vocab neither int nor auto", "[model]\nvocab_size = automatic\n", "[model] vocab_size = automatic is not an integer (expected auto, or an integer, ≥ 1 and ≤ 1000000)", NULL, 1);
    bad(t, "vocab 0 is not auto", "[model]\nvocab_size = 0\n", "vocab_size = 0 is out of range", NULL, 1);
    bad(t, "heads do not divide", "[model]\nn_layer = 2\nn_embd = 64\nn_head = 5\n",
        "x.deck:4: error: [model] n_head = 5 does not divide n_embd = 64", NULL, 1);
    bad(t, "missing required, section present", "[model]\nn_layer = 2\nn_embd = 64\n",
        "x.deck:1: error: [model] n_head is required but missing", NULL, 1);
    bad(t, "missing required, no section", "[run]\nseed = 1\n", "x.deck: error: [model] n_layer is required but missing", NULL, 1);
    bad(t, "missing required, empty deck", "", "x.deck: error: [model] n_layer is required", NULL, 1);
    bad(t, "empty value for a required key", "[model]\nn_layer =\n",
        "x.deck:2: error: [model] n_layer has an empty value (expected an integer", NULL, 1);
    bad(t, "empty value for a choice", MODEL "[run]\nbackend = \n", "[run] backend has an empty value (expected one of auto, cpu, cuda)", NULL, 1);
    bad(t, "duplicate key", "[model]\nn_layer = 2\nn_embd = 64\nn_head = 4\nn_layer = 3\n",
        "x.deck:5: error: duplicate key [model] n_layer (first set at line 2", NULL, 1);
    bad(t, "duplicate key across a reopened section", MODEL "[run]\nseed = 1\n[model]\nn_layer = 2\n",
        "x.deck:8: error: duplicate key [model] n_layer (first set at line 2", NULL, 1);
    bad(t, "malformed line, no '='", "[model]\nn_layer 4\n", "x.deck:2: error: malformed line 'n_layer 4' (expected '[section]' or 'key = value')", NULL, 1);
    bad(t, "malformed line, '=' only in a comment", "[model]\nn_layer 4 # = 4\n", "x.deck:2: error: malformed line 'n_layer 4 '", NULL, 1);
    bad(t, "unterminated section", MODEL "[ppo\n", "x.deck:5: error: unterminated section header '[ppo' (missing ']')", NULL, 1);
    bad(t, "text after a section header", MODEL "[ppo] clip = 1\n", "x.deck:5: error: unexpected text 'clip = 1' after the section header", NULL, 1);
    bad(t, "empty section name", "[ ]\n", "x.deck:1: error: empty section name", NULL, 1);
    bad(t, "space in a key", "[model]\nn layer = 4\n", "x.deck:2: error: malformed key 'n layer'", NULL, 1);
    bad(t, "missing key", "[model]\n = 4\n", "x.deck:2: error: missing key before '='", NULL, 1);
    bad(t, "key outside any section", "seed = 3\n" MODEL, "x.deck:1: error: key 'seed' is outside any section",
        "x.deck:1: note: did you mean 'run.seed'?", 0);
    bad(t, "dotted key outside any section", "ppo.minbatch = 3\n", "key 'ppo.minbatch' is outside any section",
        "note: did you mean 'ppo.minibatch'?", 0);
    bad(t, "minibatch does not divide batch (at batch)", MODEL "[ppo]\nbatch = 30\n",
        "x.deck:6: error: [ppo] minibatch = 8 does not divide batch = 30", NULL, 1);
    bad(t, "minibatch does not divide batch (at minibatch)", MODEL "[ppo]\nminibatch = 7\nbatch = 32\n",
        "x.deck:6: error: [ppo] minibatch = 7 does not divide batch = 32", NULL, 1);
}

/* Bad [transition] and [switch] decks, cross-key checks, strings and bytes inside a line. */
static void bad_cases_more(Tally *t)
{
    /* [transition] */
    bad(t, "window smaller than chunk", MODEL "[transition]\nchunk_kib = 2048\nwindow_kib = 1024\n",
        "x.deck:7: error: [transition] window_kib = 1024 is smaller than chunk_kib = 2048", NULL, 1);
    bad(t, "chunk beyond the default window", MODEL "[transition]\nchunk_kib = 16384\n",
        "x.deck:6: error: [transition] window_kib = 8192 is smaller than chunk_kib = 16384", NULL, 1);
    bad(t, "negative memory_mib", MODEL "[transition]\nmemory_mib = -1\n",
        "x.deck:6: error: [transition] memory_mib = -1 is out of range (must be ≥ 0)", NULL, 1);
    bad(t, "negative bandwidth", MODEL "[transition]\nbandwidth_gbs = -1\n",
        "x.deck:6: error: [transition] bandwidth_gbs = -1 is out of range (must be ≥ 0)", NULL, 1);
    bad(t, "double overflow", MODEL "[transition]\nlatency_us = 1e400\n",
        "x.deck:6: error: [transition] latency_us = 1e400 is not a finite number (expected a finite number, ≥ 0)", NULL, 1);
    bad(t, "double trailing junk", MODEL "[transition]\nlatency_us = 5us\n",
        "x.deck:6: error: [transition] latency_us = 5us is not a number: unexpected 'us' after 5", NULL, 1);
    bad(t, "chunk too small", MODEL "[transition]\nchunk_kib = 2\n",
        "x.deck:6: error: [transition] chunk_kib = 2 is out of range (must be ≥ 4 and ≤ 1048576)", NULL, 1);
    bad(t, "bad sync", MODEL "[transition]\nsync = bogus\n",
        "x.deck:6: error: [transition] sync = bogus is not allowed (expected one of engine, broadcast)", NULL, 1);
    /* [switch] */
    bad(t, "switch step without a plan", MODEL "[switch]\nstep = 4\n",
        "x.deck:6: error: [switch] step = 4 needs a plan: list the model-stages (or set default = colocated|disaggregated)",
        NULL, 1);
    bad(t, "switch plan without a step", MODEL "[switch]\nactor.gen = tp2 @ 0-1\n",
        "x.deck:5: error: [switch] lists a plan but no step", NULL, 1);
    bad(t, "switch plan with step = -1", MODEL "[switch]\nactor.gen = tp2 @ 0-1\nstep = -1\n",
        "x.deck:7: error: [switch] lists a plan but no step", NULL, 1);
    bad(t, "switch default plan without a step", MODEL "[switch]\ndefault = colocated\n",
        "x.deck:5: error: [switch] default = colocated makes a plan but there is no step", NULL, 1);
    bad(t, "switch step below -1", MODEL "[switch]\nstep = -2\n",
        "x.deck:6: error: [switch] step = -2 is out of range (must be ≥ -1)", NULL, 1);
    bad(t, "switch partial plan with default = auto", MODEL "[plan]\n[switch]\nstep = 2\nactor.gen = dp2 @ 0-1\nref.inf = dp1\n",
        "x.deck:6: error: [switch] leaves actor.inf, actor.train, critic.inf, critic.train, reward.inf without ranks",
        NULL, 1);
    bad(t, "plan partial plan still at [plan]", MODEL "[switch]\n[plan]\nactor.gen = dp2 @ 0-1\n",
        "x.deck:6: error: [plan] leaves actor.inf, actor.train, ref.inf, critic.inf, critic.train, reward.inf without ranks",
        NULL, 1);
    bad(t, "switch stage syntax", MODEL "[switch]\nstep = 1\nactor.gen = tp2 pq2 @ 0-1\n",
        "x.deck:7: error: [switch] actor.gen = tp2 pq2 @ 0-1: unexpected 'pq2'", NULL, 1);
    bad(t, "switch unknown key", MODEL "[switch]\nstep = 1\nactor.gn = tp2 @ 0-1\n",
        "x.deck:7: error: unknown key [switch] actor.gn", "x.deck:7: note: did you mean 'switch.actor.gen'?", 0);
    bad(t, "switch key in [plan]", MODEL "[plan]\nstep = 1\n", "x.deck:6: error: unknown key [plan] step",
        "note: did you mean 'switch.step'?", 0);
    bad(t, "transition key in [switch]", MODEL "[switch]\nchunk_kib = 8\n", "x.deck:6: error: unknown key [switch] chunk_kib",
        "note: did you mean 'transition.chunk_kib'?", 0);
    bad(t, "tokens without a file", MODEL "[sft]\nsteps = 10\ndata = tokens\n",
        "x.deck:7: error: [sft] data = tokens needs a token file, but [sft] tokens_file is not set", NULL, 1);
    bad(t, "tokens with an empty file", MODEL "[sft]\ndata = tokens\ntokens_file = \"\"\n",
        "x.deck:6: error: [sft] data = tokens needs a token file, but [sft] tokens_file is empty", NULL, 1);
    bad(t, "sft.seq beyond max_seq", MODEL "[sft]\nseq = 65\n", "x.deck:6: error: [sft] seq = 65 exceeds [model] max_seq = 64", NULL, 1);
    bad(t, "bad choice", MODEL "[run]\nbackend = gpu\n", "x.deck:6: error: [run] backend = gpu is not allowed (expected one of auto, cpu, cuda)", NULL, 1);
    bad(t, "bad bool", MODEL "[ppo]\nwhiten_advantages = maybe\n", "[ppo] whiten_advantages = maybe is not a boolean", NULL, 1);
    bad(t, "list with an empty item", MODEL "[task]\nnames = reverse,,sort\n", "x.deck:6: error: [task] names = reverse,,sort has an empty item", NULL, 1);
    bad(t, "list with a trailing comma", MODEL "[task]\nnames = reverse,\n", "has an empty item", NULL, 1);
    bad(t, "list with an unknown item", MODEL "[task]\nnames = reverse, mul\n", "x.deck:6: error: [task] names: 'mul' is not one of reverse, sort, add", NULL, 1);
    bad(t, "list with a repeat", MODEL "[task]\nnames = sort,add,sort\n", "[task] names = sort,add,sort lists 'sort' twice", NULL, 1);
    bad(t, "quote inside a string", MODEL "[run]\nname = a\"b\n", "x.deck:6: error: [run] name = a\"b contains a '\"'", NULL, 1);
    bad(t, "unterminated quote", MODEL "[run]\nname = \"abc\n", "x.deck:6: error: unterminated quoted value \"abc", NULL, 1);
    bad(t, "text after a closing quote", MODEL "[run]\nname = \"abc\" d\n", "x.deck:6: error: unexpected text 'd' after the closing quote", NULL, 1);
    bad(t, "quoted int", "[model]\nn_layer = \"4\"\n", "x.deck:2: error: [model] n_layer = \"4\" is quoted", NULL, 1);
    bad(t, "control character", "[model]\nn_layer = 4\a\n", "x.deck:2: error: control character 0x07 at column 12", NULL, 1);
    bad(t, "lone CR inside a line", "[model]\rn_layer = 4\n", "x.deck:1: error: control character 0x0D at column 8", NULL, 1);
    {
        char s[400];
        memset(s, 0, sizeof s);
        strcpy(s, MODEL "[sft]\ntokens_file = ");
        size_t o = strlen(s);
        memset(s + o, 'p', 300);
        strcpy(s + o + 300, "\n");
        bad(t, "string too long", s, "x.deck:6: error: [sft] tokens_file is too long (300 bytes; at most 255)", NULL, 1);
    }
}

static void bad_bytes(Tally *t)
{
    Config c;
    Deck *d = NULL;
    const char nul[] = "[model]\nn_layer = 2\0\n";
    int rc = deck_parse_string("x.deck", nul, sizeof nul - 1, &c, &d, 1);
    check(t, rc == 2 && strcmp(deck_last_error(d), "x.deck: error: this looks like a binary file, not a deck (it contains NUL bytes)") == 0,
          "binary (NUL bytes): %s", deck_last_error(d));
    deck_free(d);

    unsigned char junk[4096];
    unsigned x = 12345;
    for (size_t i = 0; i < sizeof junk; i++) {
        x = x * 1103515245u + 12345u;
        junk[i] = (unsigned char)(x >> 16);
        if (junk[i] == 0) junk[i] = 0xFF;
    }
    rc = deck_parse_string("x.deck", (const char *)junk, sizeof junk, &c, &d, 1);
    check(t, rc == 2 && strstr(deck_last_error(d), "x.deck: error: this looks like a binary file, not a deck (") &&
                 strstr(deck_last_error(d), "bytes are not text"),
          "binary (no NUL, mostly non-text): %s", deck_last_error(d));
    deck_free(d);

    /* a little Latin-1 is still text (and still a good deck) */
    const char lat[] = MODEL "[run]\nname = caf\xE9\n";
    rc = deck_parse_string("x.deck", lat, strlen(lat), &c, &d, 1);
    check(t, rc == 0 && strcmp(c.run.name, "caf\xE9") == 0, "one non-UTF-8 byte is not a binary file (rc=%d %s)", rc,
          deck_last_error(d));
    deck_free(d);

    size_t n = DECK_MAX_BYTES + 10;
    char *big = malloc(n);
    memset(big, '\n', n);
    rc = deck_parse_string("x.deck", big, n, &c, &d, 1);
    check(t, rc == 2 && strstr(deck_last_error(d), "x.deck: error: deck is too large (") &&
                 strstr(deck_last_error(d), "at most 16 MiB)"),
          "oversized deck: %s", deck_last_error(d));
    deck_free(d);
    rc = deck_parse_string("x.deck", big, DECK_MAX_BYTES, &c, &d, 1);
    check(t, rc == 2 && strstr(deck_last_error(d), "[model] n_layer is required"),
          "a deck of exactly 16 MiB is read (and lacks n_layer)");
    deck_free(d);
    free(big);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *b = malloc(cap + 1);
    size_t got;
    while (b && (got = fread(b + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *nb = realloc(b, cap * 2 + 1);
            if (!nb) { free(b); b = NULL; break; }
            b = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (b) b[n] = '\0';
    *len = n;
    return b;
}

/* Does any line of msg match re (grep -E semantics)? */
static int grep_lines(const regex_t *re, const char *msg)
{
    char *m = strdup(msg);
    int hit = 0;
    for (char *save = NULL, *ln = strtok_r(m, "\n", &save); ln && !hit; ln = strtok_r(NULL, "\n", &save))
        hit = regexec(re, ln, 0, NULL, 0) == 0;
    free(m);
    return hit;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void bad_files(Tally *t, const char *dir)
{
    DIR *dp = opendir(dir);
    check(t, dp != NULL, "bad-deck directory %s exists", dir);
    if (!dp) return;
    char *names[256];
    size_t nn = 0;
    struct dirent *e;
    while ((e = readdir(dp)) && nn < 256) {
        size_t l = strlen(e->d_name);
        if (l > 5 && strcmp(e->d_name + l - 5, ".deck") == 0) names[nn++] = strdup(e->d_name);
    }
    closedir(dp);
    qsort(names, nn, sizeof names[0], cmp_str);
    check(t, nn >= 11, "%zu bad decks found", nn);
    for (size_t i = 0; i < nn; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        size_t len = 0;
        char *text = slurp(path, &len);
        const char *tag = "# expect: ";
        int has = text && strncmp(text, tag, strlen(tag)) == 0;
        char pat[1024] = "";
        if (has) {
            const char *p = text + strlen(tag), *nl = strchr(p, '\n');
            size_t pl = nl ? (size_t)(nl - p) : strlen(p);
            if (pl && p[pl - 1] == '\r') pl--;
            snprintf(pat, sizeof pat, "%.*s", (int)pl, p);
        }
        regex_t re;
        int compiled = has && regcomp(&re, pat, REG_EXTENDED | REG_NOSUB) == 0;
        Config c;
        Deck *d = NULL;
        int rc = text ? deck_parse_string(path, text, len, &c, &d, 1) : -1;
        int match = compiled && grep_lines(&re, deck_last_error(d));
        check(t, rc == 2 && match, "%s: rc=%d, /%s/ %s \"%s\"", path, rc, pat, match ? "matches" : "does NOT match",
              deck_last_error(d));
        if (compiled) regfree(&re);
        deck_free(d);
        free(text);
        free(names[i]);
    }
}

static void table_checks(Tally *t)
{
    /* every byte of Config belongs to exactly one row: a field added to
     * config.h without a row in keys.c fails here */
    unsigned char owner[sizeof(Config)];
    memset(owner, 0, sizeof owner);
    int overlap = 0, dup = 0;
    size_t covered = 0;
    for (size_t i = 0; i < deck_nkeys; i++) {
        const DeckKey *k = &deck_keys[i];
        for (size_t b = k->offset; b < k->offset + k->size && b < sizeof owner; b++) {
            if (owner[b]) overlap = 1;
            owner[b] = 1;
            covered++;
        }
        if (deck_key_find(k->section, strlen(k->section), k->key, strlen(k->key)) != (int)i) dup = 1;
        if (deck_section_find(k->section, strlen(k->section)) < 0) dup = 1;
        if (((k->flags & (DECK_F_REQUIRED | DECK_F_STEM)) != 0) == (k->def != NULL)) dup = 1;
    }
    /* no hole up to the end of the last row, and after it no more than the
     * struct's trailing padding (a field appended without a row shows as
     * end + its size > sizeof) */
    size_t end = 0;
    for (size_t i = 0; i < deck_nkeys; i++)
        if (deck_keys[i].offset + deck_keys[i].size > end) end = deck_keys[i].offset + deck_keys[i].size;
    check(t, !overlap && !dup && covered == end && sizeof(Config) - end < _Alignof(Config),
          "key table: %zu rows cover %zu of %zu field bytes of Config (size %zu), no overlap, unique names, one "
          "default each",
          deck_nkeys, covered, end, sizeof(Config));

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int rc = deck_write_reference(f);
    fclose(f);
    check(t, rc == 0 && buf && strstr(buf, "## [ppo]") && strstr(buf, "| `minibatch` | int | `8` | ≥ 1 and ≤ 65536 |") &&
                 strstr(buf, "| `n_layer` | int | **required** |") && strstr(buf, "| `vocab_size` | int or auto | `auto` |") &&
                 strstr(buf, "| `nan_loss_step` | int | `-1` | ≥ -1 | INJECTED fault for tests"),
          "reference has a table per section with type, default, range, meaning");
    /* every key of every section in the reference */
    const char *keys[] = {"name", "seed", "backend", "blas_threads", "log_every", "n_layer", "n_embd", "n_head",
                          "max_seq", "vocab_size", "init_std", "names", "digits", "beta1", "beta2", "eps",
                          "weight_decay", "max_grad_norm", "steps", "batch", "lr", "data", "tokens_file", "seq",
                          "epochs", "minibatch", "actor_lr", "critic_lr", "clip", "value_clip", "gamma", "lam",
                          "kl_beta", "entropy_coef", "whiten_advantages", "temperature", "top_k", "max_response",
                          "network", "network_weight", "nan_loss_step", "default", "actor.gen", "actor.inf",
                          "actor.train", "ref.inf", "critic.inf", "critic.train", "reward.inf", "memory_mib",
                          "chunk_kib", "window_kib", "verify", "sync", "bandwidth_gbs", "latency_us",
                          "comm_setup_us"};
    int all = 1;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char pat[64];
        snprintf(pat, sizeof pat, "| `%s` |", keys[i]);
        if (!buf || !strstr(buf, pat)) all = 0;
    }
    check(t, all, "reference lists all %zu distinct key names", sizeof keys / sizeof keys[0]);
    /* a '|' inside a cell would break the markdown table: every row has 6 */
    int rows = 0, broken = 0;
    for (const char *l = buf; l && *l;) {
        const char *nl = strchr(l, '\n');
        size_t ll = nl ? (size_t)(nl - l) : strlen(l);
        if (ll > 3 && strncmp(l, "| `", 3) == 0) {
            int bars = 0;
            for (size_t i = 0; i < ll; i++) bars += l[i] == '|';
            rows++;
            if (bars != 6) broken++;
        }
        l = nl ? nl + 1 : l + ll;
    }
    check(t, rows == 198 && broken == 0, "reference: %d key rows, %d with a stray '|'", rows, broken);
    check(t, buf && strstr(buf, "| `value_clip` | float | `0.2` | > 0 and ≤ 1000000 |"), "bounds print as written (1000000)");
    check(t, buf && strstr(buf, "## [switch]") && strstr(buf, "## [transition]") &&
                 strstr(buf, "| `step` | int | `-1` | ≥ -1 | before PPO step N (0-based") &&
                 strstr(buf, "| `memory_mib` | float (64-bit) | `0` | ≥ 0 |") &&
                 strstr(buf, "| `window_kib` | int | `8192` | ≥ 4 and ≤ 4194304 |") &&
                 strstr(buf, "| `sync` | choice | `engine` | `engine`, `broadcast` |") &&
                 strstr(buf, "## A change of plan: the [switch] section"),
          "reference documents [switch] (table and prose) and [transition]");
    free(buf);
}

/* deck_load on one rank: the file is read, broadcast (to itself) and parsed. */
static void load_checks(Tally *t)
{
    char dir[] = "/tmp/test_deck.XXXXXX";
    if (!mkdtemp(dir)) {
        check(t, 0, "mkdtemp");
        return;
    }
    char good[256], bin[256], missing[256];
    snprintf(good, sizeof good, "%s/good.deck", dir);
    snprintf(bin, sizeof bin, "%s/bin.deck", dir);
    snprintf(missing, sizeof missing, "%s/nosuch.deck", dir);
    FILE *f = fopen(good, "w");
    fputs(MODEL "[ppo]\nclip = 0.3\n", f);
    fclose(f);
    f = fopen(bin, "wb");
    fwrite("\x7f" "ELF\x02\x01\x01\0\0\0\0", 1, 12, f);
    fclose(f);

    Config c;
    memset(&c, 0, sizeof c);
    Deck *d = NULL;
    int rc = deck_load(good, MPI_COMM_WORLD, &c, &d);
    check(t, rc == 0 && c.ppo.clip == 0.3f && strcmp(c.run.name, "good") == 0 && deck_line(d, "ppo.clip") == 6,
          "deck_load of a good file (rc=%d name '%s')", rc, c.run.name);
    deck_free(d);

    /* the failures below print to stderr (rank 0 is not quiet), as bin/nereus would */
    char want[512];
    rc = deck_load(missing, MPI_COMM_WORLD, &c, &d);
    snprintf(want, sizeof want, "%s: error: cannot open deck: No such file or directory", missing);
    check(t, rc == 2 && d && strcmp(deck_last_error(d), want) == 0, "deck_load of a missing file: %s",
          deck_last_error(d));
    deck_free(d);
    rc = deck_load(dir, MPI_COMM_WORLD, &c, &d);
    snprintf(want, sizeof want, "%s: error: cannot read deck: it is a directory, not a file", dir);
    check(t, rc == 2 && d && strcmp(deck_last_error(d), want) == 0, "deck_load of a directory: %s",
          deck_last_error(d));
    deck_free(d);
    rc = deck_load(bin, MPI_COMM_WORLD, &c, &d);
    check(t, rc == 2 && d && strstr(deck_last_error(d), "bin.deck: error: this looks like a binary file"),
          "deck_load of a binary file: %s", deck_last_error(d));
    deck_free(d);

    unlink(good);
    unlink(bin);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    const char *bad_dir = "tests/decks/bad";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--write-reference") == 0 && i + 1 < argc) {
            FILE *f = fopen(argv[i + 1], "w");
            if (!f) { perror(argv[i + 1]); return 1; }
            int rc = deck_write_reference(f);
            if (fclose(f) != 0) rc = -1;
            return rc == 0 ? 0 : 1;
        }
        if (strcmp(argv[i], "--load-checks") == 0) {
            setvbuf(stdout, NULL, _IOLBF, 0);
            Tally t = {0, 0};
            MPI_Init(&argc, &argv);
            load_checks(&t);
            MPI_Finalize();
            printf("%s: deck_load, %d checks, %d failed\n", t.failed ? "FAIL" : "PASS", t.run, t.failed);
            return t.failed ? 1 : 0;
        }
        if (strcmp(argv[i], "--bad-dir") == 0 && i + 1 < argc) bad_dir = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--bad-dir DIR] | --write-reference FILE\n", argv[0]);
            return 1;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0); /* check lines and deck_load's stderr in order */
    Tally t = {0, 0};
    good_defaults(&t);
    good_full(&t, FULL, "full deck");
    round_trip(&t, MODEL, "minimal");
    round_trip(&t, FULL, "full");
    good_syntax(&t);
    good_switch_transition(&t);
    override_cases(&t);
    good_llama(&t);
    bad_cases(&t);
    bad_llama(&t);
    bad_cases_more(&t);
    bad_bytes(&t);
    bad_files(&t, bad_dir);
    table_checks(&t);

    /* deck_load needs MPI_Init, and Open MPI's init leaks by design, which
     * would fail `valgrind --leak-check=full` for reasons outside this
     * module. So the deck_load checks run in a child that execs this program
     * again: valgrind does not follow exec by default, and the deck code
     * proper (everything above) stays under valgrind. */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        char *args[] = {argv[0], "--load-checks", NULL};
        if (strchr(argv[0], '/')) execv(argv[0], args);
        else execvp(argv[0], args);
        perror("exec");
        _exit(127);
    }
    int status = 0;
    int waited = pid > 0 && waitpid(pid, &status, 0) == pid;
    check(&t, waited && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "deck_load checks in a child process (exit status %d)", waited && WIFEXITED(status) ? WEXITSTATUS(status) : -1);

    printf("%s: %d checks, %d failed\n", t.failed ? "FAIL" : "PASS", t.run, t.failed);
    return t.failed ? 1 : 0;
}
