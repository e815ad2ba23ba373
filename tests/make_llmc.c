/* make_llmc.c — build/tests/make_llmc: write a small llm.c GPT-2 fp32
 * checkpoint with random weights (there is no real GPT-2 file on the test
 * machines), for the import/export round trip of tests/test_ckpt_tool.sh.
 *   make_llmc OUT.bin [V Vp maxT L NH C [seed]]    default 15 16 16 2 4 32 1
 * Header int32[256] = {20240326, 3, maxT, V, L, NH, C, Vp, 0, ...}, then the
 * parameters in llm.c's order (wte (Vp,C), wpe, ln1w, ..., lnfb). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "nereus/util.h"

int main(int argc, char **argv) {
    if (argc != 2 && argc != 8 && argc != 9) {
        fprintf(stderr, "usage: make_llmc OUT.bin [V Vp maxT L NH C [seed]]\n");
        return 2;
    }
    long a[7] = {15, 16, 16, 2, 4, 32, 1};
    for (int i = 2; i < argc; i++) a[i - 2] = strtol(argv[i], NULL, 10);
    int V = (int)a[0], Vp = (int)a[1], maxT = (int)a[2], L = (int)a[3], NH = (int)a[4], C = (int)a[5];
    if (V < 1 || Vp < V || maxT < 1 || L < 1 || NH < 1 || C % NH) {
        fprintf(stderr, "make_llmc: bad sizes\n");
        return 2;
    }
    size_t n = (size_t)Vp * C + (size_t)maxT * C +
               (size_t)L * (2 * C + 3 * C * C + 3 * C + C * C + C + 2 * C + 4 * C * C + 4 * C + 4 * C * C + C) + 2 * C;
    int32_t h[256] = {20240326, 3, maxT, V, L, NH, C, Vp};
    FILE *f = fopen(argv[1], "wb");
    if (!f) { perror(argv[1]); return 1; }
    fwrite(h, sizeof h[0], 256, f);
    for (size_t k = 0; k < n; k++) {
        float x = 0.1f * rng_normal((uint64_t)a[6], RNG_TEST, 77, k);
        fwrite(&x, sizeof x, 1, f);
    }
    if (fclose(f) != 0) { perror(argv[1]); return 1; }
    printf("wrote %s: V=%d Vp=%d maxT=%d L=%d NH=%d C=%d, %zu parameters\n", argv[1], V, Vp, maxT, L, NH, C, n);
    return 0;
}
