/* dataset_mpi.c — the collective side of prompt datasets: rank 0 reads a
 * prompt file and broadcasts its bytes (or why it could not), so that only
 * one rank touches the file system and every rank parses the same bytes into
 * the same PromptSet or the same error; and the agreement on one verdict for
 * a step that every rank does on its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nereus/dataset.h"
#include "nereus/util.h"

/* collective over comm: the bytes of path on every rank (malloc'd, NUL-terminated), or NULL with rank 0's
 * why on every rank */
static char *bcast_file(MPI_Comm comm, const char *path, size_t *n, char *why, size_t len) {
    int me = 0;
    mpiCheck(MPI_Comm_rank(comm, &me));
    char *buf = NULL;
    int64_t size = -1;
    if (me == 0) {
        size_t got = 0;
        buf = nr_read_text(path, DATASET_MAX_BYTES, &got, why, len);
        size = buf ? (int64_t)got : -1;
    }
    mpiCheck(MPI_Bcast(&size, 1, MPI_INT64_T, 0, comm));
    if (size < 0) {
        mpiCheck(MPI_Bcast(why, (int)len, MPI_CHAR, 0, comm));
        why[len - 1] = 0;
        return NULL;
    }
    if (me != 0) buf = nr_xmalloc((size_t)size + 1);
    mpiCheck(MPI_Bcast(buf, (int)size, MPI_CHAR, 0, comm));
    buf[size] = 0;
    *n = (size_t)size;
    return buf;
}

int dataset_load_collective(MPI_Comm comm, const char *path, const DatasetOptions *opt, PromptSet *ps, char *why,
                            size_t len) {
    memset(ps, 0, sizeof *ps);
    size_t n = 0;
    char *bytes = bcast_file(comm, path, &n, why, len);
    if (!bytes) return -1;
    int rc = dataset_parse(ps, path, bytes, n, opt, why, len);
    free(bytes);
    return rc;
}

int dataset_agree(MPI_Comm comm, int rc, char *why, size_t len) {
    int me = 0, size = 1, first;
    mpiCheck(MPI_Comm_rank(comm, &me));
    mpiCheck(MPI_Comm_size(comm, &size));
    int mine = rc ? me : size;
    mpiCheck(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm));
    if (first == size) return 0;
    mpiCheck(MPI_Bcast(why, (int)len, MPI_CHAR, first, comm));
    why[len - 1] = 0;
    return -1;
}
