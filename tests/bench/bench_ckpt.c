/* bench_ckpt.c — `make bench`, checkpoint part (jobs/local.sh -np 4):
 * a GPT-2 124M-shaped actor and critic with AdamW state, cut tp2·pp2 over 4
 * ranks so that every rank writes its own slabs, written with ckpt_write and
 * read back with ckpt_read; beside it, in the same run and the same
 * directory, one process writes and reads the same number of bytes as a
 * plain file. Both writes are timed until the bytes are on the disk (fsync
 * of the plain file, sync(2) after the checkpoint); the reads follow the
 * writes at once, so both read from the page cache alike. Medians of 3.
 * argv: OUT (bench.txt to append to), DIR (scratch directory). */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_args.h"
#include "nereus/ckpt.h"
#include "nereus/comm.h"
#include "nereus/emu.h"
#include "nereus/model.h"
#include "nereus/util.h"

static double plain_write(const char *path, size_t bytes) {
    char *buf = nr_xmalloc(1 << 24);
    memset(buf, 0x5a, 1 << 24);
    double t0 = nr_now();
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) nr_fatal("cannot create %s", path);
    for (size_t o = 0; o < bytes;) {
        size_t k = bytes - o < (1u << 24) ? bytes - o : (1u << 24);
        ssize_t w = write(fd, buf, k);
        if (w <= 0) nr_fatal("write %s failed", path);
        o += (size_t)w;
    }
    fsync(fd);
    close(fd);
    double t = nr_now() - t0;
    free(buf);
    return t;
}

static double plain_read(const char *path, size_t bytes) {
    char *buf = nr_xmalloc(1 << 24);
    double t0 = nr_now();
    int fd = open(path, O_RDONLY);
    if (fd < 0) nr_fatal("cannot open %s", path);
    size_t got = 0;
    ssize_t r;
    while ((r = read(fd, buf, 1 << 24)) > 0) got += (size_t)r;
    close(fd);
    double t = nr_now() - t0;
    if (got != bytes) nr_fatal("read %zu of %zu bytes", got, bytes);
    free(buf);
    return t;
}

static const char usage[] =
    "usage: jobs/local.sh -np 4 build/bench/bench_ckpt OUT DIR\n"
    "  checkpoint write and read against a plain file in DIR; appends metric: value lines to OUT.\n"
    "  Exit: 0, 2 bad command line.\n";

int main(int argc, char **argv) {
    int arc = bench_args(argc, argv, usage, 0);
    if (arc >= 0) return arc;
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 3 || size != 4) {
        if (rank == 0) fprintf(stderr, "usage: jobs/local.sh -np 4 bench_ckpt OUT DIR\n");
        MPI_Finalize();
        return 2;
    }
    const Backend *be = backend_cpu();
    be->set_threads(1);
    int ranks[4] = {0, 1, 2, 3};
    Emu e;
    emu_build(&e, MPI_COMM_WORLD, "bench", (GridLayout){2, 2, 1}, ranks);
    GPTShard sh = {.tp = 2, .tp_rank = e.coord.t, .tp_comm = e.tp, .pp = 2, .pp_rank = e.coord.p, .pp_comm = e.pp,
                   .embd_comm = e.embd};
    GPTConfig ac = {.V = 50257, .maxT = 1024, .L = 12, .C = 768, .NH = 12, .value_head = 0}, cc = ac;
    cc.value_head = 1;
    GPT actor, critic;
    gpt_build_shard(&actor, &ac, &sh, be, 1, 2, 1, 1, 0.02f);
    gpt_build_shard(&critic, &cc, &sh, be, 1, 2, 1, 2, 0.02f);
    /* distinct AdamW state, as after training */
    for (size_t i = 0; i < actor.nparams; i++) { actor.m[i] = 1e-3f * (float)(i % 97); actor.v[i] = 1e-6f * (float)(i % 89); }
    for (size_t i = 0; i < critic.nparams; i++) { critic.m[i] = 1e-3f * (float)(i % 83); critic.v[i] = 1e-6f * (float)(i % 79); }
    actor.adam_t = critic.adam_t = 7;
    CkptModel cm[2] = {{.name = "actor", .cfg = &ac, .m = &actor, .canonical = 1, .adam = 1},
                       {.name = "critic", .cfg = &cc, .m = &critic, .canonical = 1, .adam = 1}};
    CkptMeta meta = {7, 0, 1234, "# bench", "tp2 pp2", 0, NULL, 0, NULL};
    double bytes = 3.0 * 4.0 * (double)(gpt_logical_numel(&ac) + gpt_logical_numel(&cc)); /* params, m, v */
    char path[1024], plain[1024], why[1024];
    snprintf(path, sizeof path, "%s/bench_ckpt.h5", argv[2]);
    snprintf(plain, sizeof plain, "%s/bench_plain.bin", argv[2]);
    double tw[3], tr[3], pw[3], pr[3];
    for (int rep = 0; rep < 3; rep++) {
        comm_barrier(MPI_COMM_WORLD);
        double t0 = nr_now();
        if (ckpt_write(path, MPI_COMM_WORLD, &meta, cm, 2, why, sizeof why) != 0) nr_fatal("ckpt_write: %s", why);
        if (rank == 0) sync();
        comm_barrier(MPI_COMM_WORLD);
        tw[rep] = nr_now() - t0;
        t0 = nr_now();
        CkptMeta rm;
        memset(&rm, 0, sizeof rm);
        if (ckpt_read(path, MPI_COMM_WORLD, &rm, cm, 2, why, sizeof why) != 0) nr_fatal("ckpt_read: %s", why);
        ckpt_meta_free(&rm);
        comm_barrier(MPI_COMM_WORLD);
        tr[rep] = nr_now() - t0;
        if (rank == 0) {
            pw[rep] = plain_write(plain, (size_t)bytes);
            pr[rep] = plain_read(plain, (size_t)bytes);
        }
        comm_barrier(MPI_COMM_WORLD);
    }
    if (rank == 0) {
        /* medians of 3 */
        double *arr[4] = {tw, tr, pw, pr};
        double med[4];
        for (int k = 0; k < 4; k++) {
            double *x = arr[k], a = x[0], b = x[1], c = x[2];
            med[k] = a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
        }
        double gb = bytes / 1e9;
        printf("\n== checkpoint I/O: GPT-2 124M actor + critic with AdamW state (%.2f GB), tp2 pp2 on 4 ranks, medians of 3\n", gb);
        printf("%-34s %10s %10s\n", "", "write GB/s", "read GB/s");
        printf("%-34s %10.2f %10.2f\n", "checkpoint (parallel HDF5, 4 ranks)", gb / med[0], gb / med[1]);
        printf("%-34s %10.2f %10.2f\n", "plain file (1 process, same bytes)", gb / med[2], gb / med[3]);
        printf("%-34s %10.2f %10.2f\n", "ratio checkpoint / plain", med[2] / med[0], med[3] / med[1]);
        printf("  same directory (%s), same run; write includes getting the bytes to the disk (sync / fsync)\n", argv[2]);
        FILE *f = fopen(argv[1], "a");
        if (f) {
            fprintf(f, "ckpt.bytes: %.0f\nckpt.write_gb_s: %.4g\nckpt.read_gb_s: %.4g\nckpt.plain_write_gb_s: %.4g\n"
                       "ckpt.plain_read_gb_s: %.4g\nckpt.write_over_plain: %.4g\nckpt.read_over_plain: %.4g\n",
                    bytes, gb / med[0], gb / med[1], gb / med[2], gb / med[3], med[2] / med[0], med[3] / med[1]);
            fclose(f);
        }
        unlink(path);
        unlink(plain);
    }
    gpt_free(&actor);
    gpt_free(&critic);
    emu_free(&e);
    MPI_Finalize();
    return 0;
}
