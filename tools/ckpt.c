/* ckpt.c — bin/nereus-ckpt: inspect, verify and convert checkpoints, and
 * evaluate a checkpoint's loss on a token file (one process).
 *   nereus-ckpt info FILE
 *   nereus-ckpt verify FILE                 exit 0 only when sound
 *   nereus-ckpt import-llmc GPT2.bin OUT.h5 an llm.c fp32 checkpoint as actor and ref
 *   nereus-ckpt export-llmc FILE OUT.bin    the actor as an llm.c fp32 checkpoint
 *   nereus-ckpt import-hf DIR OUT.h5        a Hugging Face GPT2LMHeadModel directory as actor and ref
 *   nereus-ckpt export-hf FILE DIR          the actor as a Hugging Face directory (fp32)
 *   nereus-ckpt loss FILE --tokens TOKENS.bin --batch B --seq T
 * Exit: 0 ok, 1 the file or the operation failed (one line on stderr naming
 * the file and the dataset), 2 bad command line (usage on stderr) or, for
 * import-hf, a model directory refused (naming the file and the tensor or key). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/ckpt.h"

static int usage(void) {
    fprintf(stderr,
            "usage: nereus-ckpt info FILE\n"
            "       nereus-ckpt verify FILE\n"
            "       nereus-ckpt import-llmc GPT2.bin OUT.h5\n"
            "       nereus-ckpt export-llmc FILE OUT.bin\n"
            "       nereus-ckpt import-hf DIR OUT.h5\n"
            "       nereus-ckpt export-hf FILE DIR\n"
            "       nereus-ckpt loss FILE --tokens TOKENS.bin --batch B --seq T\n");
    return 2;
}

static int parse_int(const char *s, int *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < 1 || v > 1000000) return -1;
    *out = (int)v;
    return 0;
}

static int run(int argc, char **argv) {
    if (argc < 3) return usage();
    const char *cmd = argv[1];
    char why[1024];
    if (strcmp(cmd, "info") == 0 && argc == 3) {
        if (ckpt_info(argv[2], stdout, why, sizeof why)) { fprintf(stderr, "nereus-ckpt: %s\n", why); return 1; }
        return 0;
    }
    if (strcmp(cmd, "verify") == 0 && argc == 3) {
        if (ckpt_verify(argv[2], why, sizeof why)) { fprintf(stderr, "nereus-ckpt: verify: %s\n", why); return 1; }
        printf("%s: ok (complete, shapes match the stored config, every checksum matches)\n", argv[2]);
        return 0;
    }
    if (strcmp(cmd, "import-llmc") == 0 && argc == 4) {
        if (ckpt_import_llmc(argv[2], argv[3], why, sizeof why)) { fprintf(stderr, "nereus-ckpt: %s\n", why); return 1; }
        printf("imported %s into %s (actor and ref)\n", argv[2], argv[3]);
        return 0;
    }
    if (strcmp(cmd, "export-llmc") == 0 && argc == 4) {
        if (ckpt_export_llmc(argv[2], argv[3], why, sizeof why)) { fprintf(stderr, "nereus-ckpt: %s\n", why); return 1; }
        printf("exported the actor of %s to %s\n", argv[2], argv[3]);
        return 0;
    }
    if (strcmp(cmd, "import-hf") == 0 && argc == 4) {
        char note[128];
        int rc = ckpt_import_hf(argv[2], argv[3], note, sizeof note, why, sizeof why);
        if (rc) {
            fprintf(stderr, "nereus-ckpt: %s\n", why);
            return rc == -2 ? 2 : 1; /* 2: the directory is refused (bad input) */
        }
        printf("imported %s into %s (actor and ref)%s\n", argv[2], argv[3], note);
        return 0;
    }
    if (strcmp(cmd, "export-hf") == 0 && argc == 4) {
        if (ckpt_export_hf(argv[2], argv[3], why, sizeof why)) { fprintf(stderr, "nereus-ckpt: %s\n", why); return 1; }
        printf("exported the actor of %s to %s (config.json, model.safetensors)\n", argv[2], argv[3]);
        return 0;
    }
    if (strcmp(cmd, "loss") == 0) {
        const char *file = argv[2], *tokens = NULL;
        int B = 0, T = 0;
        for (int i = 3; i < argc; i++) {
            if (i + 1 >= argc) return usage();
            if (strcmp(argv[i], "--tokens") == 0) tokens = argv[++i];
            else if (strcmp(argv[i], "--batch") == 0) { if (parse_int(argv[++i], &B)) return usage(); }
            else if (strcmp(argv[i], "--seq") == 0) { if (parse_int(argv[++i], &T)) return usage(); }
            else { fprintf(stderr, "nereus-ckpt: unknown option '%s'\n", argv[i]); return usage(); }
        }
        if (!tokens || !B || !T) return usage();
        double loss;
        if (ckpt_eval_loss(file, tokens, B, T, &loss, why, sizeof why)) { fprintf(stderr, "nereus-ckpt: %s\n", why); return 1; }
        printf("loss: %.6f\n", (float)loss); /* the SFT step's float */
        return 0;
    }
    return usage();
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv); /* one process: the checkpoint code reads over MPI_COMM_SELF */
    int rc = run(argc, argv);
    MPI_Finalize();
    return rc;
}
