/* test_ckpt.c — checkpoints under mpirun (jobs/local.sh -np 4
 * build/tests/test_ckpt): write under one plan, read back under others.
 *
 * Three models of L = 4 layers (actor and critic trained, with AdamW m, v and
 * adam_t; ref frozen) plus a second, frozen actor entry (as actor.gen beside
 * actor.train: written once, from the first canonical entry) are built as
 * GPTShards of EMUs (emu_build: real tp, pp, embd groups; dp replicas) and
 * loaded with distinct random logical vectors, then written on 4 ranks
 * (the write once more with a 4 KB I/O limit, so that transfers are cut
 * into many collective pieces). Each file is read back under other layouts:
 * the same one, tp4 / pp4 / tp2·pp2, every rank a whole copy (dp4), subsets
 * and permuted rank lists, and one process per rank over MPI_COMM_SELF.
 * After each read every rank compares every element it holds of params, m
 * and v bit for bit with the logical vector that was written, adam_t, and
 * the canonical replica's gathered logical vector (model_check.h). A trained
 * ref read from a file without its optimizer state gets m = v = 0.
 * Refusals (every rank the same verdict, the message naming the file and
 * the dataset): a truncated file, a flipped byte inside a params and an adam
 * dataset (file offset from H5Dget_offset), the complete flag deleted
 * (H5Adelete), a deck whose n_embd differs (both values and both shapes in
 * the message), a model the file lacks, canonical set on two replicas.
 * Last, on rank 0 alone, ckpt_eval_loss (nereus-ckpt loss) equals the loss
 * that sft_step (the training path, data = tokens, step 0) returns. */
#include <fcntl.h>
#ifdef NEREUS_HAVE_HDF5
#include <hdf5.h>
#endif
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* model_check.h brings helpers this test does not use; messages are cut to its 128-char slots on purpose */
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wformat-truncation"
#include "model_check.h"
#include "nereus/ckpt.h"
#include "nereus/comm.h"
#include "nereus/config.h"
#include "nereus/emu.h"
#include "nereus/model.h"
#include "nereus/ppo.h"
#include "nereus/task.h"
#include "nereus/util.h"

#ifdef NEREUS_HAVE_HDF5
enum { M_ACTOR, M_CRITIC, M_REF, M_GEN, NENT };
static const char *ent_name[NENT] = {"actor", "critic", "ref", "actor"};
static const int ent_model[NENT] = {0, 1, 2, 0}; /* which logical values (actor, critic, ref) */
static GPTConfig cfg_actor = {.V = 15, .maxT = 16, .L = 4, .C = 32, .NH = 4, .value_head = 0},
                 cfg_critic = {.V = 15, .maxT = 16, .L = 4, .C = 32, .NH = 4, .value_head = 1};
static const GPTConfig *ent_cfg(int j) { return j == M_CRITIC ? &cfg_critic : &cfg_actor; }
static float *expect[3][3]; /* [model][params, m, v] logical vectors */
static const int adam_t_of[3] = {17, 5, 0};

typedef struct Shard {
    Emu e;
    GPT m;
    int member;
    MPI_Comm rep; /* this replica's ranks (same d), for the gather */
} Shard;

typedef struct Layout {
    const char *label;
    GridLayout l[NENT];
    int ranks[NENT][4]; /* all -1: 0 .. n-1 */
    int trained_ref;    /* read ref as a trained model (adam set): its m, v must come back 0 */
} Layout;

/* collective over MPI_COMM_WORLD */
static void shard_build(Shard *s, int j, GridLayout l, const int *rl, int trainable) {
    int n = grid_size(l), ranks[4];
    for (int i = 0; i < n; i++) ranks[i] = rl[0] >= 0 ? rl[i] : i;
    char name[32];
    snprintf(name, sizeof name, "%s.%d", ent_name[j], j);
    emu_build(&s->e, MPI_COMM_WORLD, name, l, ranks);
    s->member = s->e.pos >= 0;
    mpiCheck(MPI_Comm_split(MPI_COMM_WORLD, s->member ? s->e.coord.d : MPI_UNDEFINED, s->e.pos, &s->rep));
    if (!s->member) return;
    GPTShard sh = {l.tp, s->e.coord.t, l.tp > 1 ? s->e.tp : MPI_COMM_NULL, l.pp, s->e.coord.p, s->e.pp, s->e.embd, 0};
    gpt_build_shard(&s->m, ent_cfg(j), &sh, backend_cpu(), 1, 4, trainable, 9, 0.02f);
}

static void shard_free(Shard *s) {
    if (s->member) gpt_free(&s->m);
    if (s->rep != MPI_COMM_NULL) MPI_Comm_free(&s->rep);
    emu_free(&s->e);
}

/* mismatches between the elements this rank holds of buffer which and the logical vector x (every held element,
 * replicas and both wte copies included), plus 1 when the count of held elements is not Σ lnumel */
static double held_bad(const GPT *m, int which, const float *x) {
    size_t nl = gpt_logical_numel(&m->cfg), held = 0, want = 0;
    float *buf = nr_xmalloc(nl * sizeof(float));
    for (size_t k = 0; k < nl; k++) buf[k] = NAN;
    gpt_export_logical(m, which, buf);
    double bad = 0;
    for (size_t k = 0; k < nl; k++)
        if (!isnan(buf[k])) {
            held++;
            bad += memcmp(&buf[k], &x[k], sizeof(float)) != 0;
        }
    for (int i = 0; i < m->ntensors; i++) want += m->tensors[i].lnumel;
    free(buf);
    return bad + (held != want);
}

static void entries(Shard *s, CkptModel *cm, const Layout *L) {
    for (int j = 0; j < NENT; j++) {
        int trained = j == M_ACTOR || j == M_CRITIC || (j == M_REF && L && L->trained_ref);
        cm[j] = (CkptModel){ent_name[j], ent_cfg(j), s[j].member ? &s[j].m : NULL,
                            s[j].member && s[j].e.coord.d == 0, trained};
    }
}

/* collective over MPI_COMM_WORLD: build the layout's shards, fill them when writing */
static void layout_build(Shard *s, const Layout *L, int fill) {
    for (int j = 0; j < NENT; j++) {
        int trainable = j == M_ACTOR || j == M_CRITIC || (j == M_REF && L->trained_ref);
        shard_build(&s[j], j, L->l[j], L->ranks[j], trainable);
        if (!s[j].member) continue;
        GPT *m = &s[j].m;
        int mi = ent_model[j];
        if (fill && j != M_GEN) {
            gpt_import_logical(m, GPT_BUF_PARAMS, expect[mi][0]);
            if (m->trainable) {
                gpt_import_logical(m, GPT_BUF_ADAM_M, expect[mi][1]);
                gpt_import_logical(m, GPT_BUF_ADAM_V, expect[mi][2]);
                m->adam_t = adam_t_of[mi];
            }
        } else { /* a read must overwrite everything: start from garbage (the written actor.gen is never read) */
            for (size_t k = 0; k < m->nparams; k++) m->params[k] = -7.0f;
            if (m->trainable)
                for (size_t k = 0; k < m->nparams; k++) m->m[k] = m->v[k] = 3.0f;
            m->adam_t = 99;
        }
    }
}

static void check_read(Checks *k, Shard *s, const Layout *L, const char *how) {
    char lab[160];
    snprintf(lab, sizeof lab, "%s %s", L->label, how);
    for (int j = 0; j < NENT; j++) {
        int mi = ent_model[j];
        double bp = 0, bm = 0, bt = 0, bg = 0;
        if (s[j].member) {
            GPT *m = &s[j].m;
            bp = held_bad(m, GPT_BUF_PARAMS, expect[mi][0]);
            if (m->trainable) {
                if (j == M_REF) { /* no optimizer state in the file: zeros */
                    for (size_t q = 0; q < m->nparams; q++) bm += m->m[q] != 0.0f || m->v[q] != 0.0f;
                    bt = m->adam_t != 0;
                } else {
                    bm = held_bad(m, GPT_BUF_ADAM_M, expect[mi][1]) + held_bad(m, GPT_BUF_ADAM_V, expect[mi][2]);
                    bt = m->adam_t != adam_t_of[mi];
                }
            }
        }
        /* the canonical replica's gathered logical vector */
        if (s[j].member && s[j].e.coord.d == 0) {
            size_t nl = gpt_logical_numel(ent_cfg(j));
            float *full = nr_xmalloc(nl * sizeof(float));
            gather_logical(&s[j].m, s[j].rep, GPT_BUF_PARAMS, full, nl);
            bg = mismatches(full, expect[mi][0], nl);
            free(full);
        } else if (s[j].member) {
            size_t nl = gpt_logical_numel(ent_cfg(j));
            float *full = nr_xmalloc(nl * sizeof(float));
            gather_logical(&s[j].m, s[j].rep, GPT_BUF_PARAMS, full, nl); /* collective over the replica */
            free(full);
        }
        char ent[48];
        snprintf(ent, sizeof ent, "%s[%d]", ent_name[j], j);
        note(k, bp, 0, "%s: %s params held elements bit-identical", lab, ent);
        note(k, bm, 0, "%s: %s adam m, v bit-identical (0 if none in file)", lab, ent);
        note(k, bt, 0, "%s: %s adam_t", lab, ent);
        note(k, bg, 0, "%s: %s canonical replica gathered = written", lab, ent);
    }
}

/* collective over MPI_COMM_WORLD: ckpt_read of path under layout L must fail on every rank with the same
 * message, matching every needle */
static void expect_refused(Checks *k, const char *path, const Layout *L, const GPTConfig *actor_cfg,
                           const char *label, const char *n1, const char *n2, const char *n3) {
    Shard s[NENT];
    CkptModel cm[NENT];
    layout_build(s, L, 0);
    entries(s, cm, L);
    if (actor_cfg) cm[M_ACTOR].cfg = cm[M_GEN].cfg = actor_cfg;
    char why[1024] = "";
    CkptMeta meta;
    int rc = 0;
    if (actor_cfg) { /* the shards are of the file's config: build none for the deck's, only the cfg differs */
        CkptModel one = {"actor", actor_cfg, NULL, 0, 0};
        rc = ckpt_read(path, MPI_COMM_WORLD, &meta, &one, 1, why, sizeof why);
    } else {
        rc = ckpt_read(path, MPI_COMM_WORLD, &meta, cm, NENT, why, sizeof why);
    }
    char r0[1024];
    memcpy(r0, why, sizeof r0);
    comm_bcast(MPI_COMM_WORLD, r0, sizeof r0, 0);
    double bad = (rc != -1) + (strcmp(r0, why) != 0) + (strstr(why, path) == NULL) + (n1 && !strstr(why, n1)) +
                 (n2 && !strstr(why, n2)) + (n3 && !strstr(why, n3));
    if (nr_rank() == 0) printf("     %s: \"%s\"\n", label, why);
    note(k, bad, 0, "refused: %s (every rank the same message, naming the file%s)", label,
         n1 ? " and what is wrong" : "");
    for (int j = NENT - 1; j >= 0; j--) shard_free(&s[j]);
}

/* rank 0, serially: copy src to dst */
static void copy_file(const char *src, const char *dst) {
    FILE *a = fopen(src, "rb"), *b = fopen(dst, "wb");
    if (!a || !b) nr_fatal("copy %s → %s", src, dst);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, a)) > 0) fwrite(buf, 1, n, b);
    fclose(a);
    fclose(b);
}

/* rank 0: flip one bit of the byte at byte `at` of dataset dn's data */
static void flip_in_dataset(const char *path, const char *dn, size_t at) {
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT), d = H5Dopen2(f, dn, H5P_DEFAULT);
    haddr_t off = H5Dget_offset(d);
    H5Dclose(d);
    H5Fclose(f);
    if (off == HADDR_UNDEF) nr_fatal("no offset for %s", dn);
    int fd = open(path, O_RDWR);
    unsigned char c;
    if (pread(fd, &c, 1, (off_t)(off + at)) != 1) nr_fatal("pread");
    c ^= 0x10;
    if (pwrite(fd, &c, 1, (off_t)(off + at)) != 1) nr_fatal("pwrite");
    close(fd);
}

/* nr_cksum_f32's definition, as the checkpoints' format states it: Σ mix64(k·2^32 + bits(x[k − k0])) mod 2^64 */
static uint64_t cksum_ref(const float *x, size_t n, uint64_t k0) {
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t b;
        memcpy(&b, &x[i], sizeof b);
        uint64_t z = ((k0 + i) << 32) + b;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        s += z ^ (z >> 31);
    }
    return s;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = comm_rank(MPI_COMM_WORLD), W = comm_size(MPI_COMM_WORLD);
    backend_cpu()->set_threads(1);
    if (W != 4) {
        if (rank == 0) fprintf(stderr, "test_ckpt: run with 4 ranks (jobs/local.sh -np 4 build/tests/test_ckpt)\n");
        MPI_Finalize();
        return 2;
    }
    Checks *k = nr_xcalloc(1, sizeof *k);
    if (rank == 0) { /* the checksum a checkpoint stores: the same value whichever clone of nr_cksum_f32 the CPU gets
                        (util.c), and the value files written before carry (pinned) */
        float x[1001];
        for (int i = 0; i < 1001; i++) x[i] = (float)i * 0.25f - 100.0f;
        int same = 1;
        for (size_t n = 0; n <= 1001; n += 37)
            for (uint64_t k0 = 0; k0 < 3; k0++) same &= nr_cksum_f32(x, n, k0 * 1000003) == cksum_ref(x, n, k0 * 1000003);
        uint64_t pin = nr_cksum_f32(x, 1001, 12345);
        CHECK(same && pin == 0x543e04cff31a1febULL,
              "nr_cksum_f32 = the plain definition at every length and offset tried, and the pinned value (%llx)",
              (unsigned long long)pin);
    }
    for (int mi = 0; mi < 3; mi++) {
        size_t nl = gpt_logical_numel(mi == 1 ? &cfg_critic : &cfg_actor);
        for (int w = 0; w < 3; w++) {
            expect[mi][w] = nr_xmalloc(nl * sizeof(float));
            for (size_t q = 0; q < nl; q++)
                expect[mi][w][q] = w == 2 ? fabsf(rng_normal(100 + mi, RNG_TEST, w, q)) : rng_normal(100 + mi, RNG_TEST, w, q);
        }
    }
    /* the directory: the same path on every rank (one machine) */
    char dir[256] = "/tmp/nereus-test-ckpt.XXXXXX";
    if (rank == 0 && !mkdtemp(dir)) nr_fatal("mkdtemp");
    comm_bcast(MPI_COMM_WORLD, dir, sizeof dir, 0);
    char file[300], chunked[300];
    snprintf(file, sizeof file, "%s/ck.h5", dir);
    snprintf(chunked, sizeof chunked, "%s/ck_chunked.h5", dir);

    /* entries: actor, critic, ref, actor.gen (duplicate name) */
#define ALL {-1, -1, -1, -1}
    Layout wl = {"W tp2pp2/tp2dp2/dp4/dp2@2,3",
                 {{2, 2, 1}, {2, 1, 2}, {1, 1, 4}, {1, 1, 2}},
                 {ALL, ALL, ALL, {2, 3, -1, -1}}, 0};
    Layout reads[] = {
        {"R0 as written", {{2, 2, 1}, {2, 1, 2}, {1, 1, 4}, {1, 1, 2}}, {ALL, ALL, ALL, {2, 3, -1, -1}}, 0},
        {"R1 tp4/pp4/tp2pp2/dp4", {{4, 1, 1}, {1, 4, 1}, {2, 2, 1}, {1, 1, 4}}, {ALL, ALL, ALL, ALL}, 0},
        {"R2 whole copies dp4", {{1, 1, 4}, {1, 1, 4}, {1, 1, 4}, {1, 1, 4}}, {ALL, ALL, ALL, ALL}, 1},
        {"R3 pp2dp2@3210/tp2@1,3/pp4@3102/tp2dp2",
         {{1, 2, 2}, {2, 1, 1}, {1, 4, 1}, {2, 1, 2}},
         {{3, 2, 1, 0}, {1, 3, -1, -1}, {3, 1, 0, 2}, ALL}, 0},
        {"R4 tp2pp2@1032/1@3/1@0/1@2", {{2, 2, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}},
         {{1, 0, 3, 2}, {3, -1, -1, -1}, {0, -1, -1, -1}, {2, -1, -1, -1}}, 0},
    };
    int nreads = (int)(sizeof reads / sizeof reads[0]);

    /* write, twice (the second with a 4 KB I/O limit: many pieces per dataset) */
    for (int pass = 0; pass < 2; pass++) {
        Shard s[NENT];
        CkptModel cm[NENT];
        layout_build(s, &wl, 1);
        entries(s, cm, &wl);
        CkptMeta meta = {42, 7, 1234, "[model]\nn_layer = 4\n", "actor.train = tp2 pp2\n", 0, NULL, 0, NULL};
        char why[1024] = "";
        ckpt_set_io_limit(pass ? 4096 : 0);
        int rc = ckpt_write(pass ? chunked : file, MPI_COMM_WORLD, &meta, cm, NENT, why, sizeof why);
        ckpt_set_io_limit(0);
        if (rc && rank == 0) printf("     write failed: %s\n", why);
        note(k, rc != 0, 0, "%s: ckpt_write returns 0%s", pass ? "write with a 4 KB I/O limit" : wl.label, NULL);
        char tmp[320];
        snprintf(tmp, sizeof tmp, "%s.tmp", pass ? chunked : file);
        note(k, access(tmp, F_OK) == 0 || access(pass ? chunked : file, F_OK) != 0, 0,
             "%s: the file is at its name, no .tmp left%s", pass ? "chunked write" : "write", NULL);
        /* canonical on every replica: the owners cover the critic twice → refused */
        if (pass == 0) {
            cm[M_CRITIC].canonical = s[M_CRITIC].member;
            char bad[300];
            snprintf(bad, sizeof bad, "%s/bad.h5", dir);
            rc = ckpt_write(bad, MPI_COMM_WORLD, &meta, cm, NENT, why, sizeof why);
            if (rank == 0) printf("     canonical on both critic replicas: \"%s\"\n", why);
            note(k, rc != -1 || !strstr(why, "critic") || !strstr(why, "canonical"), 0,
                 "write refused when canonical ranks cover a model twice%s%s", NULL, NULL);
        }
        for (int j = NENT - 1; j >= 0; j--) shard_free(&s[j]);
    }
    flush(k, "write");

    /* reads */
    for (int f = 0; f < 2; f++)
        for (int r = 0; r < nreads; r++) {
            if (f == 1 && r > 1) break; /* the chunked file: two layouts are enough */
            Shard s[NENT];
            CkptModel cm[NENT];
            layout_build(s, &reads[r], 0);
            entries(s, cm, &reads[r]);
            CkptMeta meta;
            char why[1024] = "";
            ckpt_set_io_limit(f ? 4096 : 0);
            int rc = ckpt_read(f ? chunked : file, MPI_COMM_WORLD, &meta, cm, NENT, why, sizeof why);
            ckpt_set_io_limit(0);
            if (rc && rank == 0) printf("     read failed: %s\n", why);
            note(k, rc != 0, 0, "%s: ckpt_read returns 0%s", reads[r].label, f ? " (chunked file, 4 KB pieces)" : "");
            if (rc == 0)
                note(k, meta.step != 42 || meta.sft_done != 7 || meta.seed != 1234 ||
                            strcmp(meta.deck, "[model]\nn_layer = 4\n") || strcmp(meta.plan, "actor.train = tp2 pp2\n"),
                     0, "%s: meta step, sft_done, seed, deck, plan%s", reads[r].label, NULL);
            check_read(k, s, &reads[r], f ? "(chunked file)" : "");
            if (rc == 0) ckpt_meta_free(&meta);
            for (int j = NENT - 1; j >= 0; j--) shard_free(&s[j]);
        }
    flush(k, "read");

    /* one process per rank: every rank reads the whole models alone over MPI_COMM_SELF */
    {
        GPT a, c;
        gpt_build(&a, &cfg_actor, backend_cpu(), 1, 4, 1, 3, 0.02f);
        gpt_build(&c, &cfg_critic, backend_cpu(), 1, 4, 0, 3, 0.02f);
        CkptModel cm[2] = {{"critic", &cfg_critic, &c, 1, 0}, {"actor", &cfg_actor, &a, 1, 1}};
        char why[1024] = "";
        int rc = ckpt_read(file, MPI_COMM_SELF, NULL, cm, 2, why, sizeof why);
        note(k, rc != 0, 0, "one process over MPI_COMM_SELF: ckpt_read returns 0%s%s", NULL, NULL);
        note(k, held_bad(&a, GPT_BUF_PARAMS, expect[0][0]) + held_bad(&a, GPT_BUF_ADAM_M, expect[0][1]) +
                    held_bad(&a, GPT_BUF_ADAM_V, expect[0][2]) + (a.adam_t != 17) + held_bad(&c, GPT_BUF_PARAMS, expect[1][0]),
             0, "one process: actor params, m, v, adam_t and critic params bit-identical%s%s", NULL, NULL);
        note(k, gpt_checksum(&a) <= 0, 0, "one process: the model is usable%s%s", NULL, NULL);
        gpt_free(&a);
        gpt_free(&c);
    }
    flush(k, "serial");

    /* refusals */
    char trunc[300], flip[300], flipv[300], noflag[300];
    snprintf(trunc, sizeof trunc, "%s/truncated.h5", dir);
    snprintf(flip, sizeof flip, "%s/flipped.h5", dir);
    snprintf(flipv, sizeof flipv, "%s/flipped_v.h5", dir);
    snprintf(noflag, sizeof noflag, "%s/noflag.h5", dir);
    if (rank == 0) {
        copy_file(file, trunc);
        FILE *fp = fopen(trunc, "rb");
        fseek(fp, 0, SEEK_END);
        long sz = ftell(fp);
        fclose(fp);
        if (truncate(trunc, sz * 2 / 3) != 0) nr_fatal("truncate");
        copy_file(file, flip);
        flip_in_dataset(flip, "/models/actor/params/fcw", 4 * 1234 + 2);
        copy_file(file, flipv);
        flip_in_dataset(flipv, "/models/critic/adam/v/qkvw", 4 * 77 + 3);
        copy_file(file, noflag);
        hid_t f = H5Fopen(noflag, H5F_ACC_RDWR, H5P_DEFAULT), g = H5Gopen2(f, "/meta", H5P_DEFAULT);
        H5Adelete(g, "complete");
        H5Gclose(g);
        H5Fclose(f);
    }
    comm_barrier(MPI_COMM_WORLD);
    /* the tool's whole-file check (nereus-ckpt verify), on rank 0, with 4 KB pieces */
    double vb = 0;
    if (rank == 0) {
        const char *good[] = {file, chunked}, *badf[] = {trunc, flip, flipv, noflag};
        const char *needle[] = {"truncated", "dataset /models/actor/params/fcw: checksum mismatch",
                                "dataset /models/critic/adam/v/qkvw: checksum mismatch", "no complete flag"};
        char why[1024];
        ckpt_set_io_limit(4096);
        for (int q = 0; q < 2; q++) vb += ckpt_verify(good[q], why, sizeof why) != 0;
        for (int q = 0; q < 4; q++) {
            int rc = ckpt_verify(badf[q], why, sizeof why);
            vb += rc != -1 || !strstr(why, badf[q]) || !strstr(why, needle[q]);
        }
        ckpt_set_io_limit(0);
    }
    note(k, vb, 0, "ckpt_verify: both good files sound, the 4 corrupted ones refused naming file and dataset%s%s", NULL,
         NULL);
    expect_refused(k, trunc, &reads[1], NULL, "truncated file", "truncated", NULL, NULL);
    expect_refused(k, flip, &reads[1], NULL, "flipped byte in actor fcw", "dataset /models/actor/params/fcw",
                   "checksum mismatch", NULL);
    expect_refused(k, flipv, &reads[3], NULL, "flipped byte in critic adam v qkvw",
                   "dataset /models/critic/adam/v/qkvw", "checksum mismatch", NULL);
    expect_refused(k, noflag, &reads[0], NULL, "complete flag deleted", "no complete flag", NULL, NULL);
    GPTConfig wide = cfg_actor;
    wide.C = 64;
    expect_refused(k, file, &reads[0], &wide, "deck n_embd 64 against the checkpoint's 32",
                   "[model] n_embd: checkpoint 32, deck 64", "tensor wte: checkpoint (15, 32), deck (15, 64)", "actor");
    {
        CkptModel one = {"reward", &cfg_critic, NULL, 0, 0};
        char why[1024] = "";
        int rc = ckpt_read(file, MPI_COMM_WORLD, NULL, &one, 1, why, sizeof why);
        note(k, rc != -1 || !strstr(why, "no model 'reward'") || !strstr(why, file), 0,
             "refused: a model the file lacks (%s)%s", why, NULL);
    }
    flush(k, "refuse");

    /* the loss of the tool against the training path's SFT step, on rank 0 alone */
    double dl = 0;
    if (rank == 0) {
        char tok[300], why[1024] = "";
        snprintf(tok, sizeof tok, "%s/tok.bin", dir);
        uint32_t t[400];
        for (int q = 0; q < 400; q++) t[q] = (uint32_t)rng_below(5, RNG_TEST, 9, (uint64_t)q, 15);
        if (tokens_write(tok, t, 400, why, sizeof why)) nr_fatal("%s", why);
        int B = 3, T = 12;
        double loss = -1;
        int rc = ckpt_eval_loss(file, tok, B, T, &loss, why, sizeof why);
        if (rc) printf("     ckpt_eval_loss: %s\n", why);
        GPT a;
        gpt_build(&a, &cfg_actor, backend_cpu(), B, T, 1, 3, 0.02f);
        CkptModel one = {"actor", &cfg_actor, &a, 1, 1};
        rc |= ckpt_read(file, MPI_COMM_SELF, NULL, &one, 1, why, sizeof why);
        Config *cfg = nr_xcalloc(1, sizeof *cfg);
        cfg->sft.batch = B;
        cfg->sft.seq = T;
        cfg->sft.lr = 1e-3f;
        snprintf(cfg->sft.data, sizeof cfg->sft.data, "tokens");
        snprintf(cfg->sft.tokens_file, sizeof cfg->sft.tokens_file, "%s", tok);
        cfg->model.max_seq = 16;
        cfg->optim = (OptimConfig){0.9f, 0.95f, 1e-8f, 0.0f, 1.0f};
        SftData d;
        rc |= sft_open(&d, cfg, NULL, cfg_actor.V, "test");
        ReplicaShare rs = {0, 1, NULL, NULL};
        float sl = sft_step(&d, &a, cfg, NULL, 0, &rs);
        sft_close(&d);
        printf("     nereus-ckpt loss: %.6f, sft_step at step 0: %.6f\n", (float)loss, sl);
        dl = rc ? 1 : fabs((double)(float)loss - (double)sl) + ((float)loss != sl);
        gpt_free(&a);
        free(cfg);
    }
    note(k, dl, 0, "ckpt_eval_loss equals sft_step's loss at step 0, bitwise as a float%s%s", NULL, NULL);
    flush(k, "loss");

    comm_barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        const char *names[] = {"ck.h5", "ck_chunked.h5", "truncated.h5", "flipped.h5", "flipped_v.h5", "noflag.h5",
                               "tok.bin", "bad.h5", "bad.h5.tmp"};
        for (size_t q = 0; q < sizeof names / sizeof names[0]; q++) {
            char p[320];
            snprintf(p, sizeof p, "%s/%s", dir, names[q]);
            unlink(p);
        }
        rmdir(dir);
    }
    for (int mi = 0; mi < 3; mi++)
        for (int w = 0; w < 3; w++) free(expect[mi][w]);
    free(k);
    int rc = 0;
    if (rank == 0) rc = CHECK_DONE();
    MPI_Finalize();
    return rc;
}
#else /* built without parallel HDF5 */
int main(void) {
    printf("SKIP test_ckpt: built without parallel HDF5\n");
    return 77;
}
#endif
