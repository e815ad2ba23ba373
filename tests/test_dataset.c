/* test_dataset.c — prompt datasets (dataset.h) on SmolLM2's tokenizer and
 * tests/text/data/arith.jsonl: the prompt ids equal bin/nereus-tok's for the
 * same text (arith.{chat,system,raw}.ids, made by nereus-tok: docs/TEXT.md),
 * drop counting, the order's properties, the content hash, and every refusal
 * naming its file and line.
 *
 *   build/tests/test_dataset              the pure module, one process
 *   mpirun -np 2 build/tests/test_dataset collective
 *                                         dataset_load_collective and dataset_agree on 2 ranks
 *
 * Run from the repository root (or a directory with its tests/ beside it). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "nereus/dataset.h"
#include "nereus/util.h"

#define DATA "tests/text/data/"
#define ARITH DATA "arith.jsonl"
#define SYSTEM "You solve arithmetic. Put the final answer in <answer></answer> tags."

typedef struct Fixture {
    TokSpec spec;
    Tokenizer *tk;
    Chat chat;
    char *bytes;
    size_t n;
} Fixture;

static int fixture_open(Fixture *fx) {
    char why[512];
    memset(fx, 0, sizeof *fx);
    if (tok_read_model(DATA "smollm2", &fx->spec, why, sizeof why) || tok_build(&fx->tk, &fx->spec, why, sizeof why) ||
        chat_build(&fx->chat, fx->spec.chat_template, fx->tk, why, sizeof why) ||
        !(fx->bytes = nr_read_text(ARITH, DATASET_MAX_BYTES, &fx->n, why, sizeof why))) {
        printf("FAIL fixture: %s\n", why);
        return -1;
    }
    return 0;
}

static void fixture_close(Fixture *fx) {
    free(fx->bytes);
    chat_free(&fx->chat);
    tok_free(fx->tk);
    tokspec_free(&fx->spec);
}

/* the reference file's lines of ids: ref[i] (n[i] ids), 40 lines */
typedef struct RefIds {
    int *ids[64];
    int n[64];
    int lines;
} RefIds;

static int ref_read(RefIds *r, const char *path) {
    memset(r, 0, sizeof *r);
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    while (f && r->lines < 64 && getline(&line, &cap, f) > 0) {
        int *v = malloc(4096 * sizeof *v), k = 0;
        for (char *p = line, *end; k < 4096; p = end) {
            long x = strtol(p, &end, 10);
            if (end == p) break;
            v[k++] = (int)x;
        }
        r->ids[r->lines] = v;
        r->n[r->lines++] = k;
    }
    free(line);
    if (f) fclose(f);
    return f ? 0 : -1;
}

static void ref_free(RefIds *r) {
    for (int i = 0; i < r->lines; i++) free(r->ids[i]);
}

/* prompt i of ps has the ids of reference line j */
static int same_ids(const PromptSet *ps, int i, const RefIds *r, int j) {
    int n;
    const int *ids = dataset_ids(ps, i, &n);
    return n == r->n[j] && memcmp(ids, r->ids[j], (size_t)n * sizeof *ids) == 0;
}

/* every prompt of arith.jsonl equals its reference line; opt's max_prompt keeps them all */
static void check_against(const Fixture *fx, const DatasetOptions *opt, const char *ref_path, const char *what) {
    RefIds r;
    PromptSet ps;
    char why[512] = "";
    int rc = dataset_parse(&ps, ARITH, fx->bytes, fx->n, opt, why, sizeof why);
    int same = rc == 0 && ref_read(&r, ref_path) == 0 && r.lines == 40 && ps.n == 40;
    for (int i = 0; same && i < 40; i++) same = same_ids(&ps, i, &r, i) && ps.line[i] == i + 1;
    CHECK(same, "%s: the 40 prompts' ids equal nereus-tok's (%s) %s", what, ref_path, why);
    if (rc == 0) dataset_free(&ps);
    if (same) ref_free(&r);
}

static void test_ids(const Fixture *fx) {
    DatasetOptions opt = {NULL, NULL, fx->tk, &fx->chat, NULL, 4096};
    check_against(fx, &opt, DATA "arith.chat.ids", "chat, the template's system prompt");
    opt.system = SYSTEM;
    check_against(fx, &opt, DATA "arith.system.ids", "chat, a system prompt");
    Chat none = {0};
    opt.chat = &none;
    check_against(fx, &opt, DATA "arith.raw.ids", "chat = none (SmolLM2 adds no bos)");

    /* a tokenizer that adds bos: bos, then the raw ids */
    TokSpec s2;
    Tokenizer *tk2 = NULL;
    char why[512];
    RefIds r;
    PromptSet ps;
    int ok = tok_read_model(DATA "smollm2", &s2, why, sizeof why) == 0;
    s2.add_bos = 1;
    ok = ok && tok_build(&tk2, &s2, why, sizeof why) == 0 && ref_read(&r, DATA "arith.raw.ids") == 0;
    opt.tk = tk2;
    ok = ok && dataset_parse(&ps, ARITH, fx->bytes, fx->n, &opt, why, sizeof why) == 0;
    int same = ok && ps.n == 40;
    for (int i = 0; same && i < 40; i++) {
        int n;
        const int *ids = dataset_ids(&ps, i, &n);
        same = n == r.n[i] + 1 && ids[0] == s2.bos_id && !memcmp(ids + 1, r.ids[i], (size_t)r.n[i] * sizeof *ids);
    }
    CHECK(same, "chat = none with add_bos: bos %d, then the raw ids", s2.bos_id);
    if (ok) {
        dataset_free(&ps);
        ref_free(&r);
    }
    tok_free(tk2);
    tokspec_free(&s2);
}

static void test_fields(const Fixture *fx) {
    DatasetOptions opt = {NULL, NULL, fx->tk, &fx->chat, NULL, 4096};
    PromptSet ps;
    char why[512];
    int rc = dataset_parse(&ps, ARITH, fx->bytes, fx->n, &opt, why, sizeof why);
    CHECK(rc == 0 && ps.n == 40 && ps.n_read == 40 && ps.n_dropped == 0 && ps.n_number_answers == 0,
          "arith.jsonl: 40 read, 40 kept, none dropped");
    if (rc) return;
    CHECK(!strcmp(ps.answer[0], "5") && !strcmp(ps.answer[2], "242801"), "answers kept as text ('%s', '%s')",
          ps.answer[0], ps.answer[2]);
    CHECK(ps.metadata[2] && !strncmp(ps.metadata[2], "{\"source_dataset\":\"arith\",\"source_index\":2,", 43),
          "metadata kept as compact JSON: %.60s", ps.metadata[2] ? ps.metadata[2] : "(none)");
    CHECK(ps.hash == dataset_hash(fx->bytes, fx->n), "ps.hash is the file's dataset_hash");
    CHECK(dataset_keep_first(&ps, 5) == 0 && ps.n == 5 && dataset_keep_first(&ps, 50) == 0 && ps.n == 5 &&
              dataset_keep_first(&ps, 0) == -1,
          "keep_first(5) keeps 5; 50 keeps what there is; 0 is refused");
    dataset_free(&ps);
}

/* at max_prompt 65, the prompts of more than 65 ids are dropped, counted, and the rest kept in order */
static void test_drop(const Fixture *fx) {
    DatasetOptions opt = {NULL, NULL, fx->tk, &fx->chat, NULL, 65};
    RefIds r;
    PromptSet ps;
    char why[512] = "";
    if (ref_read(&r, DATA "arith.chat.ids")) { CHECK(0, "arith.chat.ids readable"); return; }
    int fit = 0, shortest = 1 << 30;
    for (int i = 0; i < r.lines; i++) {
        fit += r.n[i] <= 65;
        if (r.n[i] < shortest) shortest = r.n[i];
    }
    int rc = dataset_parse(&ps, ARITH, fx->bytes, fx->n, &opt, why, sizeof why);
    int same = rc == 0 && ps.n == fit && ps.n_dropped == 40 - fit && ps.n_read == 40 && ps.longest <= 65;
    for (int i = 0, j = 0; same && j < r.lines; j++) {
        if (r.n[j] > 65) continue;
        same = same_ids(&ps, i, &r, j) && ps.line[i] == j + 1;
        i++;
    }
    CHECK(same && fit > 0 && fit < 40, "max_prompt 65: %d kept (their ids and lines in order), %d dropped, longest %d",
          ps.n, ps.n_dropped, ps.longest);
    if (rc == 0) dataset_free(&ps);
    opt.max_prompt = shortest - 1;
    char want[256];
    snprintf(want, sizeof want, "%s: none of its 40 prompts fits in %d tokens (the shortest has %d)", ARITH,
             shortest - 1, shortest);
    rc = dataset_parse(&ps, ARITH, fx->bytes, fx->n, &opt, why, sizeof why);
    CHECK(rc == -1 && !strcmp(why, want) && ps.n == 0 && !ps.ids, "no prompt fits: '%s'", why);
    ref_free(&r);
}

/* n prompts in the order of seed: every epoch of `epochs` a permutation; returns the first epoch in first */
static int order_is_epochs(int n, uint64_t seed, int epochs, int *first) {
    PromptSet ps = {.n = n};
    int *seen = calloc((size_t)n, sizeof *seen), ok = 1;
    for (int e = 0; e < epochs && ok; e++) {
        memset(seen, 0, (size_t)n * sizeof *seen);
        for (int i = 0; i < n && ok; i++) {
            int p = dataset_prompt_of(&ps, seed, (int64_t)e * n + i);
            ok = p >= 0 && p < n && !seen[p]++;
            if (e == 0 && first) first[i] = p;
        }
    }
    free(seen);
    return ok;
}

static void test_order(void) {
    static const int sizes[] = {1, 2, 3, 4, 5, 17, 40, 64, 65, 1000, 4099};
    int ok = 1;
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) ok &= order_is_epochs(sizes[k], 1234, 5, NULL);
    CHECK(ok, "every prompt once per epoch (n = 1, 2, 3, 4, 5, 17, 40, 64, 65, 1000, 4099; 5 epochs each)");

    int a[40], b[40], c[40];
    order_is_epochs(40, 7, 1, a);
    order_is_epochs(40, 7, 1, b);
    order_is_epochs(40, 8, 1, c);
    int fixed = 0;
    for (int i = 0; i < 40; i++) fixed += a[i] == i;
    CHECK(!memcmp(a, b, sizeof a), "the same seed gives the same sequence");
    CHECK(memcmp(a, c, sizeof a) != 0, "seeds 7 and 8 give different sequences");
    CHECK(fixed < 10, "the order is shuffled (%d of 40 in place)", fixed);

    PromptSet ps = {.n = 40};
    int same_next = 1;
    for (int i = 0; i < 40; i++) same_next &= dataset_prompt_of(&ps, 7, i) == dataset_prompt_of(&ps, 7, 40 + i);
    CHECK(!same_next, "epoch 1 is another permutation than epoch 0");

    /* g -> prompt whatever the batch split: steps of 8 from 0, and a restart at step 3 of batch 8 (g = 24) with
     * batches of 5 afterwards, name the same prompts for g = 24 .. 123 */
    int split = 1;
    for (int64_t g = 24; g < 124; g++) {
        int64_t step = 3 + (g - 24) / 5, j = (g - 24) % 5;
        split &= dataset_prompt_of(&ps, 7, g) == dataset_prompt_of(&ps, 7, 24 + (step - 3) * 5 + j);
        split &= dataset_prompt_of(&ps, 7, g) == dataset_prompt_of(&ps, 7, (g / 8) * 8 + g % 8);
    }
    CHECK(split, "sample g gets the same prompt whatever the batch split (a restart resumes the sequence)");

    int hits[10] = {0}, all = 1;
    PromptSet ten = {.n = 10};
    for (int e = 0; e < 200; e++) hits[dataset_prompt_of(&ten, 99, (int64_t)e * 10)]++;
    for (int i = 0; i < 10; i++) all &= hits[i] > 5;
    CHECK(all, "the first prompt of 200 epochs of 10 is each prompt at least 6 times");
    PromptSet empty = {.n = 0};
    CHECK(dataset_prompt_of(&empty, 1, 0) == -1 && dataset_prompt_of(&ten, 1, -1) == -1,
          "no prompts, or g < 0: -1");
}

static void test_hash(const Fixture *fx) {
    char *copy = malloc(fx->n);
    memcpy(copy, fx->bytes, fx->n);
    uint64_t h = dataset_hash(copy, fx->n);
    copy[fx->n / 2] ^= 1;
    uint64_t h1 = dataset_hash(copy, fx->n);
    copy[fx->n / 2] ^= 1;
    CHECK(h != h1 && h == dataset_hash(copy, fx->n) && h != dataset_hash(copy, fx->n - 1),
          "one byte flipped or cut changes the hash (%016llx, %016llx)", (unsigned long long)h,
          (unsigned long long)h1);
    CHECK(dataset_hash("", 0) == 14695981039346656037ull && dataset_hash("a", 1) == 0xaf63dc4c8601ec8cull,
          "dataset_hash is FNV-1a 64");
    free(copy);
}

/* text parsed with opt fails with exactly the message want */
static void refused(const DatasetOptions *opt, const char *text, const char *want) {
    PromptSet ps;
    char why[512] = "";
    int rc = dataset_parse(&ps, "x.jsonl", text, strlen(text), opt, why, sizeof why);
    CHECK(rc == -1 && !strcmp(why, want), "refused: '%s' (want '%s')", why, want);
    if (rc == 0) dataset_free(&ps);
}

static void test_errors(const Fixture *fx) {
    DatasetOptions opt = {NULL, NULL, fx->tk, &fx->chat, NULL, 4096};
    const char *ok1 = "{\"question\": \"a\", \"answer\": \"1\"}\n";
    char text[512];
    snprintf(text, sizeof text, "%s{\"question\": \"b\" \"answer\": \"2\"}\n", ok1);
    refused(&opt, text, "x.jsonl:2: malformed JSON (at column 18)");
    snprintf(text, sizeof text, "%s\n{\"prompt\": \"b\", \"answer\": \"2\"}\n", ok1);
    refused(&opt, text, "x.jsonl:3: no key \"question\" (the prompt: [data] prompt_key)");
    refused(&opt, "{\"question\": \"b\"}", "x.jsonl:1: no key \"answer\" (the answer: [data] answer_key)");
    refused(&opt, "{\"question\": 5, \"answer\": \"1\"}", "x.jsonl:1: \"question\" is a number, not a string");
    refused(&opt, "{\"question\": [\"a\"], \"answer\": \"1\"}",
            "x.jsonl:1: \"question\" is an array, not a string");
    refused(&opt, "{\"question\": \"\", \"answer\": \"1\"}", "x.jsonl:1: \"question\" is an empty string");
    refused(&opt, "{\"question\": \"a\", \"answer\": true}",
            "x.jsonl:1: \"answer\" is a boolean, not a string or a number");
    refused(&opt, "{\"question\": \"a\", \"answer\": null}",
            "x.jsonl:1: \"answer\" is null, not a string or a number");
    refused(&opt, "{\"question\": \"a\", \"answer\": \"1\", \"metadata\": 3}",
            "x.jsonl:1: \"metadata\" is a number, not an object");
    refused(&opt, "[1, 2]", "x.jsonl:1: an array, not a JSON object");
    refused(&opt, "{\"question\": \"a\", \"answer\": \"1\"} x",
            "x.jsonl:1: text after the JSON object (at column 34)");
    refused(&opt, "", "x.jsonl: no prompts (an empty file)");
    refused(&opt, "\n  \r\n\t\n", "x.jsonl: no prompts (an empty file)");
    snprintf(text, sizeof text, "%s%s\n{\"question\": \"c\", \"answer\": \"3\"", ok1, ok1); /* unterminated */
    refused(&opt, text, "x.jsonl:4: malformed JSON (at column 31)");

    /* accepted: CRLF lines, blank lines, other keys, a number answer as cJSON prints it */
    DatasetOptions keys = {"prompt", "solution", fx->tk, &fx->chat, NULL, 4096};
    const char *good = "{\"prompt\": \"What is 2 + 2?\", \"solution\": 4}\r\n\r\n"
                       "{\"prompt\": \"Half of 2001?\", \"solution\": 1000.50, \"question\": 1}\r\n";
    PromptSet ps;
    char why[512] = "";
    int rc = dataset_parse(&ps, "y.jsonl", good, strlen(good), &keys, why, sizeof why);
    CHECK(rc == 0 && ps.n == 2 && ps.line[1] == 3 && ps.n_number_answers == 2 && !strcmp(ps.answer[0], "4") &&
              !strcmp(ps.answer[1], "1000.5") && !ps.metadata[0],
          "CRLF, a blank line, prompt_key/answer_key, number answers as text ('%s', '%s') %s",
          rc ? "" : ps.answer[0], rc ? "" : ps.answer[1], why);
    if (rc == 0) dataset_free(&ps);
}

/* collective over MPI_COMM_WORLD: a checksum of everything in ps, the same on every rank */
static uint64_t set_sum(const PromptSet *ps) {
    uint64_t h = ps->hash ^ (uint64_t)ps->n << 32 ^ (uint64_t)ps->n_dropped;
    if (ps->n) h ^= dataset_hash((const char *)ps->ids, ps->off[ps->n] * sizeof *ps->ids);
    for (int i = 0; i < ps->n; i++) h = h * 31 + nr_cksum_str(ps->answer[i]) + (uint64_t)ps->line[i];
    return h;
}

static int same_on_all(uint64_t x) {
    uint64_t lo, hi;
    MPI_Allreduce(&x, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&x, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    return lo == hi;
}

static int test_collective(const Fixture *fx) {
    int me = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    DatasetOptions opt = {NULL, NULL, fx->tk, &fx->chat, NULL, 65};
    PromptSet ps, local;
    char why[512] = "", lwhy[512];
    /* rank 0 alone opens the file: the other ranks pass a path that does not exist */
    const char *path = me ? "/nonexistent/arith.jsonl" : ARITH;
    int rc = dataset_load_collective(MPI_COMM_WORLD, path, &opt, &ps, why, sizeof why);
    int lrc = dataset_parse(&local, ARITH, fx->bytes, fx->n, &opt, lwhy, sizeof lwhy);
    int ok = rc == 0 && lrc == 0 && set_sum(&ps) == set_sum(&local) && ps.n_dropped > 0;
    CHECK(same_on_all(ok ? set_sum(&ps) : (uint64_t)me) && ok,
          "rank %d: the collective load equals the local parse on every rank (%d kept, %d dropped) %s", me, ps.n,
          ps.n_dropped, why);
    if (rc == 0) dataset_free(&ps);
    if (lrc == 0) dataset_free(&local);

    rc = dataset_load_collective(MPI_COMM_WORLD, me ? ARITH : "/nonexistent/x.jsonl", &opt, &ps, why, sizeof why);
    CHECK(rc == -1 && strstr(why, "/nonexistent/x.jsonl: cannot open") && same_on_all(nr_cksum_str(why)),
          "rank %d: rank 0's missing file is every rank's error: '%s'", me, why);

    opt.max_prompt = 10;
    rc = dataset_load_collective(MPI_COMM_WORLD, ARITH, &opt, &ps, why, sizeof why);
    CHECK(rc == -1 && strstr(why, "none of its 40 prompts fits in 10 tokens") && same_on_all(nr_cksum_str(why)),
          "rank %d: no prompt fits, the same message on every rank: '%s'", me, why);

    snprintf(why, sizeof why, "fault on rank %d", me);
    rc = dataset_agree(MPI_COMM_WORLD, me == size - 1 ? -1 : 0, why, sizeof why);
    char want[64];
    snprintf(want, sizeof want, "fault on rank %d", size - 1);
    CHECK(rc == -1 && !strcmp(why, want), "rank %d: one rank's fault agreed: '%s'", me, why);
    CHECK(dataset_agree(MPI_COMM_WORLD, 0, why, sizeof why) == 0, "rank %d: no fault agreed as none", me);
    return 0;
}

int main(int argc, char **argv) {
    int collective = argc > 1 && !strcmp(argv[1], "collective");
    if (collective) MPI_Init(&argc, &argv);
    Fixture fx;
    if (fixture_open(&fx) == 0) {
        if (collective) {
            test_collective(&fx);
        } else {
            test_ids(&fx);
            test_fields(&fx);
            test_drop(&fx);
            test_order();
            test_hash(&fx);
            test_errors(&fx);
        }
    } else {
        check_failures++;
    }
    fixture_close(&fx);
    int rc = CHECK_DONE();
    if (collective) {
        MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        MPI_Finalize();
    }
    return rc;
}
