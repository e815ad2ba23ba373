/* ckpt.c — bin/nereus-ckpt: inspect, verify and convert checkpoints, and
 * evaluate a checkpoint's loss on a token file (one process).
 *   nereus-ckpt info FILE
 *   nereus-ckpt verify FILE                 exit 0 only when sound
 *   nereus-ckpt import-llmc GPT2.bin OUT.h5 an llm.c fp32 checkpoint as actor and ref
 *   nereus-ckpt export-llmc FILE OUT.bin    the actor as an llm.c fp32 checkpoint
 *   nereus-ckpt import-hf DIR OUT.h5        a Hugging Face GPT2LMHeadModel directory as actor and ref
 *   nereus-ckpt export-hf FILE DIR          the actor as a Hugging Face directory (fp32)
 *   nereus-ckpt import-gguf FILE.gguf OUT.h5  a llama/qwen2/qwen3 GGUF file as actor and ref, with its tokenizer
 *   nereus-ckpt loss FILE --tokens TOKENS.bin --batch B --seq T
 *   nereus-ckpt generate FILE --prompt IDS.txt --n N  the actor's N greedy tokens after the prompt ids
 *   nereus-ckpt --help                      usage on stdout, exit 0 (--help anywhere, subcommands too)
 * Exit: 0 ok, 1 the file or the operation failed (one line on stderr naming
 * the file and the dataset), 2 bad command line (usage on stderr) or, for
 * import-hf and import-gguf, a model directory or file refused (naming the file and the tensor or key;
 * nothing written). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nereus/ckpt.h"
#include "nereus/util.h"

/* the usage on f; returns 2, the exit status of a bad command line */
static int usage_to(FILE *f) {
    fprintf(f,
            "usage: nereus-ckpt info FILE                 the checkpoint's config, models and hashes\n"
            "       nereus-ckpt verify FILE               exit 0 only when complete and every checksum matches\n"
            "       nereus-ckpt import-llmc GPT2.bin OUT.h5   an llm.c fp32 checkpoint as actor and ref\n"
            "       nereus-ckpt export-llmc FILE OUT.bin  the actor as an llm.c fp32 checkpoint\n"
            "       nereus-ckpt import-hf DIR OUT.h5      a Hugging Face model directory as actor and ref\n"
            "       nereus-ckpt export-hf FILE DIR        the actor as a Hugging Face directory (fp32)\n"
            "       nereus-ckpt import-gguf FILE.gguf OUT.h5  a llama/qwen2/qwen3 GGUF file, with its tokenizer\n"
            "       nereus-ckpt loss FILE --tokens TOKENS.bin --batch B --seq T\n"
            "       nereus-ckpt generate FILE --prompt IDS.txt --n N\n"
            "       nereus-ckpt --help                    (also after any subcommand)\n"
            "exit: 0 ok, 1 the file or the operation failed (one line on stderr), 2 bad command line or a model refused\n"
            "see also: bin/nereus (runs write checkpoints: [ckpt] in the deck), bin/nereus-trace, bin/nereus-tok;\n"
            "          docs/CHECKPOINT.md\n");
    return 2;
}
static int usage(void) { return usage_to(stderr); }

static int parse_int(const char *s, int *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < 1 || v > 1000000) return -1;
    *out = (int)v;
    return 0;
}

/* whitespace-separated ids of path (at most max) into ids; their count, or -1 with why */
static int read_ids(const char *path, int *ids, int max, char *why, size_t len) {
    FILE *f = fopen(path, "r");
    int n = 0;
    long v;
    if (!f) {
        snprintf(why, len, "%s: cannot open", path);
        return -1;
    }
    while (n < max && fscanf(f, "%ld", &v) == 1) ids[n++] = v < 0 || v > 1 << 30 ? -1 : (int)v;
    int junk = !feof(f) && fscanf(f, " %*s") != EOF;
    fclose(f);
    if (junk || n == 0) {
        snprintf(why, len, "%s: %s", path, n ? "more than 65536 ids, or not only integers" : "no ids");
        return -1;
    }
    return n;
}

/* nereus-ckpt generate FILE --prompt IDS.txt --n N: the N greedy ids, space-separated, on one line */
static int generate(int argc, char **argv) {
    const char *prompt = NULL;
    int n = 0, max = 65536;
    char why[1024];
    for (int i = 3; i < argc; i++) {
        if (i + 1 >= argc) return usage();
        if (strcmp(argv[i], "--prompt") == 0) prompt = argv[++i];
        else if (strcmp(argv[i], "--n") == 0) { if (parse_int(argv[++i], &n)) return usage(); }
        else { fprintf(stderr, "nereus-ckpt: unknown option '%s'\n", argv[i]); return usage(); }
    }
    if (!prompt || !n) return usage();
    int *ids = malloc((size_t)max * sizeof(int)), *out = malloc((size_t)n * sizeof(int));
    int P = read_ids(prompt, ids, max, why, sizeof why), rc = 1;
    if (P < 0 || ckpt_generate_greedy(argv[2], ids, P, n, out, why, sizeof why)) fprintf(stderr, "nereus-ckpt: %s\n", why);
    else {
        for (int j = 0; j < n; j++) printf("%s%d", j ? " " : "", out[j]);
        printf("\n");
        rc = 0;
    }
    free(ids);
    free(out);
    return rc;
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
    if ((strcmp(cmd, "import-hf") == 0 || strcmp(cmd, "import-gguf") == 0) && argc == 4) {
        char note[128];
        int rc = cmd[7] == 'h' ? ckpt_import_hf(argv[2], argv[3], note, sizeof note, why, sizeof why)
                               : ckpt_import_gguf(argv[2], argv[3], note, sizeof note, why, sizeof why);
        if (rc) {
            fprintf(stderr, "nereus-ckpt: %s\n", why);
            return rc == -2 ? 2 : 1; /* 2: the directory is refused (bad input) */
        }
        printf("imported %s into %s (actor and ref%s)%s\n", argv[2], argv[3], cmd[7] == 'g' ? ", tokenizer" : "",
               note);
        return 0;
    }
    if (strcmp(cmd, "export-hf") == 0 && argc == 4) {
        if (ckpt_export_hf(argv[2], argv[3], why, sizeof why)) { fprintf(stderr, "nereus-ckpt: %s\n", why); return 1; }
        char tj[4096];
        snprintf(tj, sizeof tj, "%s/tokenizer.json", argv[3]);
        printf("exported the actor of %s to %s (config.json, model.safetensors%s)\n", argv[2], argv[3],
               access(tj, F_OK) == 0 ? ", tokenizer.json, tokenizer_config.json" : "");
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
    if (strcmp(cmd, "generate") == 0) return generate(argc, argv);
    return usage();
}

/* --help or -h anywhere on the command line (before or after a subcommand) */
static int wants_help(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return 1;
    return 0;
}

int main(int argc, char **argv) {
    if (wants_help(argc, argv)) {
        usage_to(stdout);
        return 0;
    }
    nr_mpi_singleton_isolated();
    MPI_Init(&argc, &argv); /* one process: the checkpoint code reads over MPI_COMM_SELF */
    int rc = run(argc, argv);
    MPI_Finalize();
    return rc;
}
