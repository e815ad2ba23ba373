/* test_task.c — tasks produce correct answers, rewards give partial credit,
 * token files round-trip and bad ones are refused with a reason. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "nereus/task.h"

/* The whole file as bytes; *n its length. */
static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    unsigned char *b = malloc(1 << 20);
    *n = f ? fread(b, 1, 1 << 20, f) : 0;
    if (f) fclose(f);
    return b;
}

/* Ids below 65,536 give version 1 byte for byte as llm.c writes it: the header, then little-endian uint16s. */
static void check_v1_bytes(const char *path, const uint32_t *toks, size_t count) {
    unsigned char want[1024 + 2 * 100] = {0};
    int32_t hdr[3] = {20240520, 1, (int32_t)count};
    memcpy(want, hdr, sizeof hdr);
    for (size_t i = 0; i < count; i++) {
        want[1024 + 2 * i] = (unsigned char)(toks[i] & 0xff);
        want[1024 + 2 * i + 1] = (unsigned char)(toks[i] >> 8);
    }
    size_t n;
    unsigned char *got = slurp(path, &n);
    CHECK(n == 1024 + 2 * count && memcmp(got, want, n) == 0, "version 1 is llm.c's bytes exactly (%zu bytes)", n);
    free(got);
}

/* Overwrite one int32 of the file at byte offset off. */
static int put32(const char *path, long off, int32_t v) {
    FILE *f = fopen(path, "r+b");
    int ok = f && fseek(f, off, SEEK_SET) == 0 && fwrite(&v, 4, 1, f) == 1;
    return (f ? fclose(f) == 0 : 0) && ok;
}

/* Version 2: ids above 65,535 round-trip; a truncated file, an id above 2^31-1 and an unknown version refused. */
static void check_v2(const char *path) {
    char why[512] = "";
    uint32_t big[50];
    for (int i = 0; i < 50; i++) big[i] = (uint32_t)(i * 4099 % 151936);
    big[7] = 151935;
    TokenFile tf;
    CHECK(tokens_write(path, big, 50, why, sizeof why) == 0, "write a version-2 token file");
    size_t n;
    int32_t *raw = (int32_t *)slurp(path, &n);
    CHECK(n == 1024 + 4 * 50 && raw[0] == 20240520 && raw[1] == 2 && raw[2] == 50, "ids above 65,535 give version 2");
    free(raw);
    CHECK(tokens_read(&tf, path, why, sizeof why) == 0 && tf.count == 50 && tf.version == 2 &&
              memcmp(tf.tokens, big, sizeof big) == 0 && tf.max_token == 151935, "version 2 round-trips: %s", why);
    tokens_free(&tf);
    CHECK(truncate(path, 1024 + 2 * 50) == 0, "truncate to a version-1 size");
    CHECK(tokens_read(&tf, path, why, sizeof why) == -1 && strstr(why, "says 50 tokens but the file holds 25 (truncated"),
          "a truncated version-2 file refused from its size at 4 bytes a token: %s", why);
    tokens_write(path, big, 50, why, sizeof why);
    CHECK(put32(path, 1024 + 4 * 9, (int32_t)0x80000000u), "an id of 2^31");
    CHECK(tokens_read(&tf, path, why, sizeof why) == -1 && strstr(why, path) && strstr(why, "token 9 is 2147483648"),
          "a version-2 id above 2^31-1 refused naming the file and position: %s", why);
    uint32_t huge = 0x80000000u;
    CHECK(tokens_write(path, &huge, 1, why, sizeof why) == -1 && strstr(why, "above 2147483647"),
          "writing an id above 2^31-1 refused: %s", why);
    tokens_write(path, big, 50, why, sizeof why);
    CHECK(put32(path, 4, 3), "version to 3");
    CHECK(tokens_read(&tf, path, why, sizeof why) == -1 && strstr(why, "unsupported token file version 3"),
          "an unknown version refused: %s", why);
}

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
    uint32_t toks[100];
    for (int i = 0; i < 100; i++) toks[i] = (uint32_t)(i * 7 % 15);
    TokenFile tf;
    CHECK(tokens_write(path, toks, 100, why, sizeof why) == 0, "write token file");
    CHECK(tokens_read(&tf, path, why, sizeof why) == 0 && tf.count == 100 && memcmp(tf.tokens, toks, 400) == 0 &&
              tf.max_token == 14 && tf.version == 1, "token file round-trips");
    tokens_free(&tf);
    check_v1_bytes(path, toks, 100);
    check_v2(path);
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
