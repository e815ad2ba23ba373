/* text_run.c — what a [data] deck adds to a run: the tokenizer and the
 * prompt sets (dataset.h's promptdata_open), the ends of a response (the
 * chat format's end of turn, the tokenizer's end of text), the [reward]
 * rule that scores the decoded responses, and the deck values a text task
 * cannot take yet, each refused at its line. */
#include "text_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include "nereus/comm.h"
#include "nereus/util.h"

/* number_sorting reads each prompt's metadata.direction: every line of ps must have one */
static int check_directions(const PromptSet *ps, const char *file, const Deck *deck) {
    char dir[32];
    for (int i = 0; i < ps->n; i++) {
        if (task_text_direction(ps, i, dir, sizeof dir) != 0)
            return deck_error_at(deck, "reward.task",
                                 "[reward] task = number_sorting reads each prompt's metadata.direction: %s line %d "
                                 "has none", file, ps->line[i]);
    }
    return 0;
}

/* the deck values a text task does not take, each at its line */
static int check_text_deck(const Config *cfg, const Deck *deck) {
    if (cfg->sft.steps > 0)
        return deck_error_at(deck, "sft.steps", "[sft] steps = %d: SFT on [data] prompts is not built; give [sft] "
                             "steps = 0 for a text deck", cfg->sft.steps);
    if (strcmp(cfg->ppo.credit, "process") == 0)
        return deck_error_at(deck, "ppo.credit", "[ppo] credit = process needs per-position credits, which the digit "
                             "tasks have and a [reward] rule on text does not: use credit = outcome");
    if (cfg->inject.resp_len_from > 0 || cfg->inject.resp_len_to > 0)
        return deck_error_at(deck, cfg->inject.resp_len_to > 0 ? "inject.resp_len_to" : "inject.resp_len_from",
                             "the INJECTED response-length drift lengthens digit answers; a text deck cannot take it");
    return 0;
}

/* the two ids a response ends at: the chat format's end of turn and the tokenizer's end of text (either one
   twice where the tokenizer has only it) */
static int text_stops(const PromptData *pd, int stop[2], const Deck *deck) {
    int eot = pd->chat.format != CHAT_NONE ? pd->chat.eot_id : -1, eos = tok_eos(pd->tk);
    stop[0] = eot >= 0 ? eot : eos;
    stop[1] = eos >= 0 ? eos : eot;
    if (stop[0] >= 0) return 0;
    return deck_error_at(deck, "data.tokenizer", "the tokenizer of %s has no end-of-text or end-of-turn token: a "
                         "response could not end", pd->source);
}

int run_text_open(PromptData *pd, TextTask *train, TextTask *eval, const Config *cfg, const Deck *deck) {
    int rc = promptdata_open(pd, cfg, deck, nr_world());
    if (rc || !pd->on) return rc;
    if ((rc = check_text_deck(cfg, deck))) return rc;
    char why[256];
    RewardSpec spec = {.format_reward = cfg->reward.format_reward};
    if (reward_rule_parse(cfg->reward.rule, &spec.rule, why, sizeof why))
        return deck_error_at(deck, "reward.rule", "%s", why);
    spec.task = REWARD_TASK_NONE;
    if (strcmp(cfg->reward.task, "none") != 0 && reward_task_parse(cfg->reward.task, &spec.task, why, sizeof why))
        return deck_error_at(deck, "reward.task", "%s", why);
    if (spec.task == REWARD_TASK_NUMBER_SORTING) {
        if ((rc = check_directions(&pd->train, cfg->data.train, deck))) return rc;
        if ((rc = check_directions(&pd->eval, cfg->data.eval, deck))) return rc;
    }
    *train = (TextTask){&pd->train, pd->tk, spec, {0, 0}, &pd->spec};
    if ((rc = text_stops(pd, train->stop, deck))) return rc;
    *eval = *train;
    if (pd->eval.n > 0) eval->ps = &pd->eval; /* held out; without [data] eval, the training prompts */
    nr_log("data: %s: %d prompts (%d longer than %d tokens dropped); eval %s: %d prompts; tokenizer %s (%d ids, chat "
           "%s); reward %s%s%s\n",
           cfg->data.train, pd->train.n, pd->train.n_dropped, pd->train.max_prompt,
           pd->eval.n > 0 ? cfg->data.eval : "(the training prompts)", eval->ps->n, pd->source, tok_n_vocab(pd->tk),
           chat_format_name(pd->chat.format), reward_rule_name(spec.rule),
           spec.task != REWARD_TASK_NONE ? " scored as " : "", spec.task != REWARD_TASK_NONE ? reward_task_name(spec.task) : "");
    return 0;
}

/* the progress line's sample of the step's first row (text_int.h) */
void run_sample_line(const Rollout *G, char *ex, size_t n) {
    if (!G->ts->text) {
        int len = G->plen[0] + G->resp_len[0], shown = NR_MIN(len, (int)n - 4);
        task_detok(G->seq, shown, ex);
        if (shown < len) memcpy(ex + shown, "...", 4);
        return;
    }
    size_t nt = 0, o = 0;
    char *text = task_text_decode(G->ts, G->seq + G->plen[0], G->resp_len[0], &nt);
    ex[o++] = '"';
    for (size_t i = 0; i < nt && o + 6 < n; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\n' || c == '"' || c == '\\') ex[o++] = '\\', ex[o++] = c == '\n' ? 'n' : (char)c;
        else ex[o++] = c < 0x20 ? ' ' : (char)c;
        if (i + 1 < nt && o + 6 >= n) { memcpy(ex + o, "...", 3); o += 3; }
    }
    ex[o++] = '"';
    ex[o] = 0;
    free(text);
}

/* collective over nr_world(): rank 0's verdict on [eval] responses (why: what is wrong) to every rank; 2 at the
   key when it is bad, else 0 */
static int eval_responses_verdict(const Deck *deck, int bad, char *why, size_t len) {
    comm_bcast(nr_world(), &bad, sizeof bad, 0);
    comm_bcast(nr_world(), why, len, 0);
    return bad ? deck_error_at(deck, "eval.responses", "%s", why) : 0;
}

/* [eval] responses (text_int.h) */
int run_eval_responses_check(const Config *cfg, const Deck *deck, int text, int restarted) {
    const char *path = cfg->data.eval_responses;
    if (!path[0]) return 0;
    if (!text)
        return deck_error_at(deck, "eval.responses", "[eval] responses writes a text run's responses: it needs "
                             "[data] train (and eval); this deck runs the digit tasks");
    char why[512] = "";
    int bad = nr_rank() == 0 && !restarted && access(path, F_OK) == 0;
    if (bad)
        snprintf(why, sizeof why, "%s exists (an earlier run's responses): not overwritten; name another "
                 "(--set eval.responses=NEW.jsonl) or remove it", path);
    return eval_responses_verdict(deck, bad, why, sizeof why);
}

int run_eval_responses_open(const Config *cfg, const Deck *deck, int restarted, FILE **out) {
    const char *path = cfg->data.eval_responses;
    *out = NULL;
    if (!path[0]) return 0;
    char why[512] = "";
    int bad = nr_rank() == 0 && !(*out = fopen(path, restarted ? "a" : "w"));
    if (bad) snprintf(why, sizeof why, "%s: cannot open for writing: %s", path, strerror(errno));
    return eval_responses_verdict(deck, bad, why, sizeof why);
}

/* one evaluated prompt as a JSON line: the PPO steps done, its line in the eval file, the response's ids and
   text, the reference answer, the score and whether it is right */
static void eval_response_line(FILE *f, const TaskSet *held_out, const double *v, int64_t step) {
    const PromptSet *ps = held_out->text->ps;
    int item = (int)v[0], n = (int)v[4];
    int *ids = nr_xmalloc(sizeof *ids * (size_t)(n > 0 ? n : 1));
    for (int i = 0; i < n; i++) ids[i] = (int)v[EVAL_ROW_HEAD + i];
    size_t nt = 0;
    char *text = task_text_decode(held_out, ids, n, &nt);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "step", (double)step);
    cJSON_AddNumberToObject(o, "line", ps->line[item]);
    cJSON_AddItemToObject(o, "ids", cJSON_CreateIntArray(ids, n));
    cJSON_AddStringToObject(o, "response", text);
    cJSON_AddStringToObject(o, "answer", ps->answer[item]);
    cJSON_AddNumberToObject(o, "score", v[1]);
    cJSON_AddBoolToObject(o, "right", v[2] != 0);
    char *line = cJSON_PrintUnformatted(o);
    if (!line) nr_fatal("eval responses: out of memory");
    fprintf(f, "%s\n", line);
    cJSON_free(line);
    cJSON_Delete(o);
    free(text);
    free(ids);
}

void run_eval_responses_write(FILE *f, const TaskSet *held_out, const EvalRows *rows, int64_t step) {
    for (int i = 0; i < rows->n; i++)
        eval_response_line(f, held_out, rows->v + (size_t)i * (EVAL_ROW_HEAD + rows->maxr), step);
    if (fflush(f) != 0) nr_warn("[eval] responses: write failed: %s", strerror(errno));
}
