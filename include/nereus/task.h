/* task.h — verifiable tasks: a character tokenizer, prompt generators, rule
 * rewards with partial credit, demonstrations for SFT, and llm.c token files.
 *
 * Every prompt has the same length P = digits + 2, so a batch prefills
 * together; answers differ in length and end with TOK_EOS:
 *   reverse  "R d1..dn ="   → dn..d1          e.g. R1234= → 4321
 *   sort     "S d1..dn ="   → digits ascending     S3141= → 1134
 *   add      "a+b="         → a+b in decimal       12+34= → 46   (a: n/2 digits, b: the rest)
 * Reward in [0, 1]: positions where the response (up to its EOS) matches the
 * answer, over the longer of the two lengths — dense partial credit.
 */
#ifndef NEREUS_TASK_H
#define NEREUS_TASK_H

#include <stdint.h>
#include <stddef.h>

#include "nereus/reward_text.h"

enum { TOK_PLUS = 10, TOK_EQ = 11, TOK_REV = 12, TOK_SORT = 13, TOK_EOS = 14, TASK_VOCAB = 15 };
enum { TASK_REVERSE = 0, TASK_SORT = 1, TASK_ADD = 2, TASK_NKINDS = 3 };

struct PromptSet;
struct Tokenizer;

/* Text prompts ([data]) in place of the digit games: each row's prompt ids from a prompt set in the seeded
 * order of the dataset module (dataset.h), the response decoded by the tokenizer up to its end token and
 * scored on its text by the [reward] rule (reward_text.h). */
typedef struct TextTask {
    const struct PromptSet *ps;    /* the prompts: [data] train, or eval for held-out evaluation */
    const struct Tokenizer *tk;    /* decodes the responses */
    RewardSpec spec;               /* [reward] rule, task, format_reward */
    int stop[2];                   /* a response ends at either: end of turn, end of text */
    const struct TokSpec *tok;     /* the tokenizer's definition: a run's checkpoints carry it (export-hf) */
} TextTask;

typedef struct TaskSet {
    int kinds[TASK_NKINDS]; /* the enabled task kinds */
    int nkinds;
    int digits;
    uint64_t seed;
    const TextTask *text;   /* non-NULL: text prompts ([data]); the digit fields are unused */
} TaskSet;

/* Parse "reverse,sort,add". Returns 0, or −1 with why filled. */
int task_parse(TaskSet *ts, const char *names, int digits, uint64_t seed, char *why, size_t why_len);
int task_prompt_len(const TaskSet *ts);   /* P = digits + 2; text: the longest kept prompt */
int task_max_answer(const TaskSet *ts);   /* longest answer, without EOS (text: 0, answers are text) */

/* Text tasks (ts->text): the prompt of global sample g into prompt (room for task_prompt_len) and the prompt
 * set's index of it in *item; returns its length. Pure function of (seed, g). */
int task_text_prompt(const TaskSet *ts, uint64_t g, int *prompt, int *item);
/* the reward of a response (len tokens, ending at its first stop token) to prompt item: its text decoded and
 * scored by the [reward] rule against the item's answer; res (may be NULL) gets the rule's whole result */
float task_text_reward(const TaskSet *ts, int item, const int *response, int len, RewardResult *res);
/* number_sorting's metadata.direction of prompt set entry item, into buf (n bytes): 0, or -1 where the entry
 * has none */
int task_text_direction(const struct PromptSet *ps, int item, char *buf, size_t n);
/* the longest prompt of the text task's set */
int task_text_longest(const TaskSet *ts);
/* the text of response (len tokens, up to its first stop token), malloc'd; *n_text its bytes */
char *task_text_decode(const TaskSet *ts, const int *response, int len, size_t *n_text);
/* The prompt of global sample g: prompt (P) tokens; answer (max_answer) and
 * its length. Pure function of (seed, g). */
int task_make(const TaskSet *ts, uint64_t g, int *prompt, int *answer, int *answer_len);
/* Rule reward of a response (len tokens, may contain EOS: scored up to it). */
float task_reward(const int *answer, int answer_len, const int *response, int len);
/* task_reward position by position (process rewards): the steps are the answer positions the rule scores,
 * max(response digits before EOS, answer_len) of them; credit[j] (room for max(len, answer_len)) is step
 * j's share of the reward, 1 / steps where response[j] is the answer's digit j, else 0, so the credits sum
 * to task_reward. Returns the step count. Step j is taken at response token min(j, len − 1): a missing
 * digit's step at the EOS that ended the response early. An empty answer has no steps (task_make never
 * makes one). */
int task_reward_steps(const int *answer, int answer_len, const int *response, int len, float *credit);
/* Printable form of tokens, e.g. "R1234=" (buf at least n+1). */
void task_detok(const int *tok, int n, char *buf);
const char *task_kind_name(int kind);

/* Token files: llm.c's format and a wider variant with the same header.
 *   int32 header[256] = {20240520, version, count, 0, ...}, then count tokens:
 *   version 1: uint16 tokens, exactly as llm.c writes and reads them;
 *   version 2: uint32 tokens, for vocabularies above 65,536 (Llama 3, Qwen);
 *              ids above 2^31-1 are refused.
 * All little-endian. The file holds exactly the header's count of tokens at
 * the version's width, nothing after them. */
#define TOKENS_MAGIC 20240520
typedef struct TokenFile {
    uint32_t *tokens;   /* either version, widened; every id at most INT32_MAX */
    size_t count;
    int version;        /* 1 or 2, as the file's header says */
    int max_token;
} TokenFile;
/* Either version. Returns 0, or −1 with why filled (file named, what was
 * wrong: the size is checked against the header before any allocation). */
int tokens_read(TokenFile *tf, const char *path, char *why, size_t why_len);
/* Version 1 when every id fits in uint16 (so small vocabularies stay llm.c
 * files), version 2 otherwise; refuses an id above INT32_MAX. */
int tokens_write(const char *path, const uint32_t *tokens, size_t count, char *why, size_t why_len);
void tokens_free(TokenFile *tf);

#endif
