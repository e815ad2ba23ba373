/* test_gguf.c — the GGUF reader and dequantization (gguf.h):
 *   every tensor of tests/gguf/data/quants.gguf (F32, F16, BF16, Q8_0, Q4_0,
 *   Q4_1, Q4_K, Q6_K) dequantizes bit for bit to the F32 tensor of the same
 *   name in quants_ref.gguf, which the PyPI gguf package's dequantize wrote
 *   (tests/gguf/make_reference.py);
 *   damaged copies of quants.gguf are refused with a message naming the file:
 *   every truncation, a bad magic, version 1, huge counts and lengths, a
 *   tensor past the end, a bad alignment, an unsupported tensor type.
 *   test_gguf tokspec FILE.gguf CKPT.h5: the TokSpec of the GGUF file
 *   (gguf_read_tokspec) equals the one its import stored (ckpt_read_tokspec);
 *   test_gguf notokenizer CKPT.h5: ckpt_read_tokspec says 1 (no tokenizer);
 *   test_gguf sums FILE.gguf SUMS.txt: every tensor of the file dequantizes to
 *   the nr_cksum_f32 (util.h) that SUMS.txt holds for gguf.quants.dequantize's
 *   output (tests/gguf/data/smollm2_dequant.txt: every block of SmolLM2).
 * Run from the repository root (or a directory linking its tests/). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "nereus/ckpt.h"
#include "nereus/gguf.h"
#include "nereus/util.h"

#define QUANTS "tests/gguf/data/quants.gguf"
#define REF "tests/gguf/data/quants_ref.gguf"

static void check_dequant(void) {
    GGUFFile q, r;
    char why[512] = "";
    int ok = gguf_open(&q, QUANTS, why, sizeof why) == 0;
    CHECK(ok, "open %s %s", QUANTS, why);
    if (!ok) return;
    ok = gguf_open(&r, REF, why, sizeof why) == 0;
    CHECK(ok, "open %s %s", REF, why);
    if (!ok) { gguf_close(&q); return; }
    CHECK(q.n_tensors == 10 && r.n_tensors == q.n_tensors, "%d tensors, %d references", q.n_tensors, r.n_tensors);
    for (int i = 0; i < q.n_tensors; i++) {
        const GGUFTensor *t = &q.t[i], *rt = gguf_tensor(&r, t->name);
        char b[32];
        if (!rt || rt->type != GGML_F32 || rt->numel != t->numel) {
            CHECK(0, "%s: no F32 reference of %zu values", t->name, t->numel);
            continue;
        }
        float *y = malloc(t->numel * sizeof(float));
        int rc = gguf_read_f32(&q, t, y, why, sizeof why);
        const unsigned char *want = r.map + r.data_off + rt->offset;
        size_t diff = 0;
        for (size_t k = 0; k < t->numel; k++) diff += memcmp(&y[k], want + 4 * k, 4) != 0;
        CHECK(rc == 0 && diff == 0, "%-9s %-4s %zu values bit-identical to gguf.quants.dequantize (%zu differ)",
              t->name, gguf_type_name(t->type, b, sizeof b), t->numel, diff);
        free(y);
    }
    gguf_close(&q);
    gguf_close(&r);
}

static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    unsigned char *b = malloc(1 << 20);
    *n = f ? fread(b, 1, 1 << 20, f) : 0;
    if (f) fclose(f);
    return b;
}

/* bytes b (n) as a file: 1 when gguf_open refuses it with a message naming it and holding `want` */
static int refused(const unsigned char *b, size_t n, const char *want, char *why, size_t len) {
    char path[] = "/tmp/nereus-gguf-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, b, n) != (ssize_t)n) return 0;
    close(fd);
    GGUFFile g;
    why[0] = 0;
    int rc = gguf_open(&g, path, why, len);
    if (rc == 0) gguf_close(&g);
    unlink(path);
    return rc == -1 && strstr(why, path) && (!want || strstr(why, want));
}

static void put64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }

/* b with the last tensor's type set to type: opens, and reading that tensor is refused with `want` */
static void read_refused(const unsigned char *b, size_t n, size_t info_end, uint32_t type, const char *want) {
    unsigned char *c = malloc(n);
    char why[512] = "", path[] = "/tmp/nereus-gguf-XXXXXX";
    memcpy(c, b, n);
    memcpy(c + info_end - 12, &type, 4);
    int fd = mkstemp(path), ok = fd >= 0 && write(fd, c, n) == (ssize_t)n;
    if (fd >= 0) close(fd);
    GGUFFile g;
    ok = ok && gguf_open(&g, path, why, sizeof why) == 0;
    if (ok) {
        const GGUFTensor *t = &g.t[g.n_tensors - 1];
        float *y = malloc(t->numel * sizeof(float));
        ok = gguf_read_f32(&g, t, y, why, sizeof why) == -1 && strstr(why, want) && strstr(why, path);
        free(y);
        gguf_close(&g);
    }
    CHECK(ok, "a tensor of type %u refused when read: %s", type, why);
    unlink(path);
    free(c);
}

static void check_damage(void) {
    size_t n;
    unsigned char *b = slurp(QUANTS, &n), *c = malloc(n);
    char why[512];
    GGUFFile g;
    int ok = gguf_open(&g, QUANTS, why, sizeof why) == 0;
    CHECK(ok && n > 1000, "%s read (%zu bytes)", QUANTS, n);
    if (!ok) { free(b); free(c); return; }
    /* the end of the data: no tensor's bytes reach past it */
    size_t bad = 0, end = 0;
    for (int i = 0; i < g.n_tensors; i++)
        if (g.data_off + g.t[i].offset + g.t[i].nbytes > end) end = g.data_off + g.t[i].offset + g.t[i].nbytes;
    for (size_t cut = 0; cut < end; cut += cut < g.data_off + 64 ? 1 : 97)
        if (!refused(b, cut, NULL, why, sizeof why)) bad++;
    if (!refused(b, end - 1, "truncated", why, sizeof why)) bad++;
    CHECK(bad == 0 && end <= n, "every truncation before the end of the data (%zu of %zu bytes) refused (%zu not); "
          "e.g. %s", end, n, bad, why);
#define DAMAGED(what, want, ...)                                                                                \
    do {                                                                                                        \
        memcpy(c, b, n);                                                                                        \
        __VA_ARGS__;                                                                                            \
        CHECK(refused(c, n, want, why, sizeof why), "%s refused: %s", what, why);                               \
    } while (0)
    DAMAGED("a bad magic", "bad magic", c[0] = 'X');
    DAMAGED("version 1", "version 1 is not supported", c[4] = 1);
    DAMAGED("a KV count past the end", "cannot fit", put64(c + 16, (uint64_t)1 << 60));
    DAMAGED("a tensor count past the end", "cannot fit", put64(c + 8, 1000000));
    DAMAGED("a key length past the end", "past the end", put64(c + 24, (uint64_t)1 << 40));
    /* the last tensor's info ends with its uint32 type and uint64 offset, then zero padding to the data */
    uint64_t last_off = g.t[g.n_tensors - 1].offset;
    size_t info_end = g.data_off;
    while (info_end >= 8 && memcmp(b + info_end - 8, &last_off, 8)) info_end--;
    DAMAGED("a tensor outside the file", "outside the file", put64(c + info_end - 8, 1u << 20));
    DAMAGED("a misaligned tensor", "not a multiple of the alignment", put64(c + info_end - 8, last_off + 4));
    DAMAGED("a tensor of 5 dimensions", "5 dimensions", memcpy(c + info_end - 12 - 8 * 2 - 4, &(uint32_t){5}, 4));
    size_t q6 = 0; /* the tensor name q6_k in the header: renamed q4_k, two tensors have one name */
    while (q6 + 4 < g.data_off && memcmp(b + q6, "q6_k", 4)) q6++;
    DAMAGED("two tensors of one name", "tensor q4_k appears twice", memcpy(c + q6, "q4_k", 4));
    gguf_close(&g);
    /* a type not dequantized here (Q5_0, and a number ggml does not name) opens, and is refused when read */
    read_refused(b, n, info_end, 6, "q6_k is Q5_0");
    read_refused(b, n, info_end, 77, "q6_k is type 77");
    free(b);
    free(c);
}

static int same_strs(char **a, char **b, int n) {
    for (int i = 0; i < n; i++)
        if (strcmp(a[i], b[i])) return 0;
    return 1;
}

static void check_tokspec(const char *gguf, const char *ckpt) {
    TokSpec a, b;
    char why[512] = "";
    int ok = gguf_read_tokspec(gguf, &a, why, sizeof why) == 0;
    CHECK(ok, "gguf_read_tokspec %s %s", gguf, why);
    int rc = ckpt_read_tokspec(ckpt, &b, why, sizeof why);
    CHECK(rc == 0, "ckpt_read_tokspec %s: %d %s", ckpt, rc, why);
    if (!ok || rc) return;
    CHECK(!strcmp(a.model, b.model) && !strcmp(a.pre, b.pre), "model %s, pre %s", b.model, b.pre);
    CHECK(a.n_vocab == b.n_vocab && same_strs(a.tokens, b.tokens, a.n_vocab) &&
              !memcmp(a.token_type, b.token_type, (size_t)a.n_vocab * sizeof(int)),
          "%d tokens and their types the same", b.n_vocab);
    CHECK(a.n_merges == b.n_merges && same_strs(a.merges, b.merges, a.n_merges), "%d merges the same", b.n_merges);
    CHECK(a.bos_id == b.bos_id && a.eos_id == b.eos_id && a.eot_id == b.eot_id && a.pad_id == b.pad_id &&
              a.add_bos == b.add_bos, "bos %d eos %d eot %d pad %d add_bos %d", b.bos_id, b.eos_id, b.eot_id,
          b.pad_id, b.add_bos);
    CHECK((!a.chat_template && !b.chat_template) ||
              (a.chat_template && b.chat_template && !strcmp(a.chat_template, b.chat_template)),
          "chat template the same (%zu bytes)", b.chat_template ? strlen(b.chat_template) : 0);
    tokspec_free(&a);
    tokspec_free(&b);
}

/* "NAME TYPE NUMEL SUM" lines of sums (# comments) against the file's tensors, one check per type */
static void check_sums(const char *path, const char *sums) {
    GGUFFile g;
    char why[512] = "", line[512], name[256], type[32];
    FILE *f = fopen(sums, "r");
    int ok = f && gguf_open(&g, path, why, sizeof why) == 0;
    CHECK(ok, "open %s and %s %s", path, sums, why);
    if (!ok) { if (f) fclose(f); return; }
    int seen[64] = {0}, bad[64] = {0}, lines = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long want;
        size_t numel;
        if (line[0] == '#' || sscanf(line, "%255s %31s %zu %llx", name, type, &numel, &want) != 4) continue;
        const GGUFTensor *t = gguf_tensor(&g, name);
        int k = t && t->type >= 0 && t->type < 64 ? t->type : 63;
        lines++;
        seen[k]++;
        float *y = t && t->numel == numel ? malloc(numel * sizeof(float)) : NULL;
        if (!y || gguf_read_f32(&g, t, y, why, sizeof why) || nr_cksum_f32(y, numel, 0) != want) bad[k]++;
        free(y);
    }
    fclose(f);
    CHECK(lines == g.n_tensors, "%d tensors in %s, %d in %s", g.n_tensors, path, lines, sums);
    for (int k = 0; k < 64; k++)
        if (seen[k]) {
            char b[32];
            CHECK(bad[k] == 0, "%-4s %d tensors dequantize bit for bit as gguf.quants.dequantize (%d differ)",
                  gguf_type_name(k, b, sizeof b), seen[k], bad[k]);
        }
    gguf_close(&g);
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "sums")) {
        check_sums(argv[2], argv[3]);
        return CHECK_DONE();
    }
    if (argc == 4 && !strcmp(argv[1], "tokspec")) {
        check_tokspec(argv[2], argv[3]);
        return CHECK_DONE();
    }
    if (argc == 3 && !strcmp(argv[1], "notokenizer")) {
        TokSpec s;
        char why[512] = "";
        int rc = ckpt_read_tokspec(argv[2], &s, why, sizeof why);
        CHECK(rc == 1 && strstr(why, "no tokenizer") && !s.tokens, "%s: ckpt_read_tokspec %d: %s", argv[2], rc, why);
        return CHECK_DONE();
    }
    check_dequant();
    check_damage();
    return CHECK_DONE();
}
