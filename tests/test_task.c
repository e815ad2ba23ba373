/* test_task.c — tasks produce correct answers, rewards give partial credit,
 * token files round-trip and bad ones are refused with a reason. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "nereus/task.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    TaskSet ts;
    char why[512];
    CHECK(task_parse(&ts, "reverse,sort,add", 4, 9, why, sizeof why) == 0, "parse three tasks");
    CHECK(task_parse(&ts, "reverse,sotr", 4, 9, why, sizeof why) == -1 && strstr(why, "sotr"),
          "unknown task refused: %s", why);
    CHECK(task_parse(&ts, "add", 1, 9, why, sizeof why) == -1, "add with 1 digit refused: %s", why);
    task_parse(&ts, "reverse,sort,add", 5, 9, why, sizeof why);
    int bad = 0, seen[3] = {0};
    for (uint64_t g = 0; g < 3000; g++) {
        int p[16], a[16], al;
        int k = task_make(&ts, g, p, a, &al);
        seen[k]++;
        if (p[6] != TOK_EQ) bad++;
        if (k == TASK_REVERSE)
            for (int i = 0; i < 5; i++) bad += a[i] != p[5 - i];
        if (k == TASK_SORT)
            for (int i = 1; i < 5; i++) bad += a[i] < a[i - 1];
        if (k == TASK_ADD) {
            long x = p[0] * 10 + p[1], y = p[3] * 100 + p[4] * 10 + p[5], s = 0;
            for (int i = 0; i < al; i++) s = s * 10 + a[i];
            bad += p[2] != TOK_PLUS || s != x + y;
        }
    }
    CHECK(bad == 0 && seen[0] > 800 && seen[1] > 800 && seen[2] > 800,
          "3000 prompts: answers correct, kinds balanced (%d %d %d)", seen[0], seen[1], seen[2]);
    int ans[4] = {4, 3, 2, 1};
    int r_ok[5] = {4, 3, 2, 1, TOK_EOS}, r_half[3] = {4, 3, TOK_EOS}, r_long[8] = {4, 3, 2, 1, 1, 1, 1, 1};
    int r_empty[1] = {TOK_EOS}, r_wrong[5] = {1, 2, 3, 4, TOK_EOS};
    CHECK(task_reward(ans, 4, r_ok, 5) == 1.0f, "exact answer scores 1");
    CHECK(task_reward(ans, 4, r_half, 3) == 0.5f, "half the answer scores 0.5");
    CHECK(task_reward(ans, 4, r_long, 8) == 0.5f, "answer without EOS, twice as long, scores 0.5");
    CHECK(task_reward(ans, 4, r_empty, 1) == 0.0f, "empty response scores 0");
    CHECK(task_reward(ans, 4, r_wrong, 5) == 0.0f, "wrong digits score 0");

    char path[] = "/tmp/nereus_tokXXXXXX";
    int fd = mkstemp(path);
    close(fd);
    uint16_t toks[100];
    for (int i = 0; i < 100; i++) toks[i] = (uint16_t)(i * 7 % 15);
    TokenFile tf;
    CHECK(tokens_write(path, toks, 100, why, sizeof why) == 0, "write token file");
    CHECK(tokens_read(&tf, path, why, sizeof why) == 0 && tf.count == 100 && memcmp(tf.tokens, toks, 200) == 0 &&
              tf.max_token == 14, "token file round-trips");
    tokens_free(&tf);
    FILE *f = fopen(path, "r+b");
    int32_t magic = 1234;
    fwrite(&magic, 4, 1, f);
    fclose(f);
    CHECK(tokens_read(&tf, path, why, sizeof why) == -1 && strstr(why, "magic"), "bad magic refused: %s", why);
    tokens_write(path, toks, 100, why, sizeof why);
    CHECK(truncate(path, 1024 + 50) == 0, "truncate");
    CHECK(tokens_read(&tf, path, why, sizeof why) == -1 && strstr(why, "truncated"), "truncated file refused: %s", why);
    tokens_write(path, toks, 100, why, sizeof why); /* bytes past the count: a damaged count, refused */
    CHECK(truncate(path, 1024 + 200 + 7) == 0, "extend");
    CHECK(tokens_read(&tf, path, why, sizeof why) == -1 && strstr(why, "room for 103 and a byte"),
          "a file longer than its header's count refused: %s", why);
    tokens_write(path, toks, 100, why, sizeof why);
    int32_t fewer = 60;
    f = fopen(path, "r+b");
    CHECK(f && fseek(f, 8, SEEK_SET) == 0 && fwrite(&fewer, 4, 1, f) == 1 && fclose(f) == 0, "count to 60");
    CHECK(tokens_read(&tf, path, why, sizeof why) == -1 && strstr(why, "says 60 tokens") && strstr(why, "room for 100"),
          "a header counting fewer tokens than the file holds refused: %s", why);
    CHECK(tokens_read(&tf, "/nonexistent/x.bin", why, sizeof why) == -1 && strstr(why, "/nonexistent/x.bin"),
          "missing file refused: %s", why);
    unlink(path);
    int rc = CHECK_DONE();
    MPI_Finalize();
    return rc;
}
