/* dataset_deck.c — a deck's [data] section made real: the tokenizer (from
 * [data] tokenizer or [model] init_from), its chat format, and the train and
 * eval prompt sets, each failure reported at the deck line of the key it
 * concerns, the same on every rank. What the deck module cannot check alone
 * (it knows no tokenizer and reads no prompt file) is checked here. */
#include <stdio.h>
#include <string.h>

#include "nereus/dataset.h"

/* messages quote paths cut to their buffers on purpose */
#pragma GCC diagnostic ignored "-Wformat-truncation"

static const char *const data_keys[] = {"data.train",     "data.eval", "data.prompt_key", "data.answer_key",
                                        "data.tokenizer", "data.chat", "data.system",     "data.eval_size"};

/* 1 when the deck sets any [data] key: on a line, or (--set, which has no line) to other than its default */
static int data_section_used(const Deck *deck, const Config *cfg) {
    for (size_t i = 0; i < sizeof data_keys / sizeof *data_keys; i++)
        if (deck_line(deck, data_keys[i]) > 0) return 1;
    const DataConfig *d = &cfg->data;
    return d->train[0] || d->eval[0] || d->tokenizer[0] || d->system[0] || d->eval_size ||
           strcmp(d->prompt_key, "question") || strcmp(d->answer_key, "answer") || strcmp(d->chat, "auto");
}

/* the key a tokenizer or template fault is reported at: the one the deck set, of chat, tokenizer, init_from */
static const char *tokenizer_key(const Deck *deck, int about_chat) {
    if (about_chat && deck_line(deck, "data.chat") > 0) return "data.chat";
    if (deck_line(deck, "data.tokenizer") > 0) return "data.tokenizer";
    return deck_line(deck, "model.init_from") > 0 ? "model.init_from" : "data.tokenizer";
}

/* collective over comm: the tokenizer and its chat format; 0 or 2 (reported) */
static int open_tokenizer(PromptData *pd, const Config *cfg, const Deck *deck, MPI_Comm comm) {
    const char *src = cfg->data.tokenizer[0] ? cfg->data.tokenizer : cfg->model.init_from;
    char why[640];
    if (!src[0])
        return deck_error_at(deck, "data.tokenizer",
                             "[data] needs a tokenizer: set [data] tokenizer or [model] init_from");
    snprintf(pd->source, sizeof pd->source, "%s", src);
    int rc = tok_read_model(src, &pd->spec, why, sizeof why);
    if (rc == 0 && tok_build(&pd->tk, &pd->spec, why, sizeof why)) rc = -1;
    if (dataset_agree(comm, rc, why, sizeof why))
        return deck_error_at(deck, tokenizer_key(deck, 0), "[data] tokenizer %s: %s", src, why);
    if (strcmp(cfg->data.chat, "none") == 0) {
        if (cfg->data.system[0])
            return deck_error_at(deck, "data.system",
                                 "[data] system needs a chat template (chat = none writes the prompt alone)");
        return 0;
    }
    if (!pd->spec.chat_template || !pd->spec.chat_template[0])
        return deck_error_at(deck, tokenizer_key(deck, 1),
                             "[data] chat = auto: the tokenizer of %s has no chat template "
                             "(chat = none gives the prompt text alone)", src);
    if (chat_build(&pd->chat, pd->spec.chat_template, pd->tk, why, sizeof why))
        return deck_error_at(deck, tokenizer_key(deck, 1), "[data] chat = auto: the tokenizer of %s: %s "
                             "(chat = none gives the prompt text alone)", src, why);
    return 0;
}

/* collective over comm: one prompt file into ps; 0 or 2 (reported at key) */
static int open_set(PromptSet *ps, const char *path, const char *key, const DatasetOptions *opt, const Deck *deck,
                    MPI_Comm comm) {
    char why[1024];
    if (dataset_load_collective(comm, path, opt, ps, why, sizeof why))
        return deck_error_at(deck, key, "%s", why);
    return 0;
}

int promptdata_open(PromptData *pd, const Config *cfg, const Deck *deck, MPI_Comm comm) {
    memset(pd, 0, sizeof *pd);
    if (!data_section_used(deck, cfg)) return 0;
    if (!cfg->data.train[0]) return deck_error_at(deck, "data.train", "[data] needs train = FILE.jsonl");
    int max_prompt = cfg->model.max_seq - cfg->ppo.max_response;
    if (max_prompt < 1)
        return deck_error_at(deck, "ppo.max_response",
                             "[data] prompts have no room: [model] max_seq %d - [ppo] max_response %d < 1 token",
                             cfg->model.max_seq, cfg->ppo.max_response);
    if (cfg->data.eval_size > 0 && !cfg->data.eval[0])
        return deck_error_at(deck, "data.eval_size", "[data] eval_size needs eval = FILE.jsonl");
    pd->on = 1;
    int rc = open_tokenizer(pd, cfg, deck, comm);
    if (rc == 0 && cfg->model.vocab_size > 0 && tok_n_vocab(pd->tk) > cfg->model.vocab_size)
        rc = deck_error_at(deck, "model.vocab_size", "vocab_size %d is smaller than the tokenizer's %d tokens (%s)",
                           cfg->model.vocab_size, tok_n_vocab(pd->tk), pd->source);
    DatasetOptions opt = {cfg->data.prompt_key, cfg->data.answer_key, pd->tk, &pd->chat, cfg->data.system,
                          max_prompt};
    if (rc == 0) rc = open_set(&pd->train, cfg->data.train, "data.train", &opt, deck, comm);
    if (rc == 0 && cfg->data.eval[0]) rc = open_set(&pd->eval, cfg->data.eval, "data.eval", &opt, deck, comm);
    if (rc == 0 && cfg->data.eval_size > 0) dataset_keep_first(&pd->eval, cfg->data.eval_size);
    if (rc) promptdata_free(pd);
    return rc;
}

void promptdata_free(PromptData *pd) {
    dataset_free(&pd->train);
    dataset_free(&pd->eval);
    chat_free(&pd->chat);
    tok_free(pd->tk);
    tokspec_free(&pd->spec);
    memset(pd, 0, sizeof *pd);
}
