/* mpi_fail.h — the failure report of the MPI test programs: "FAIL rank R:
 * ..." on stderr, counted in `fails`. The including test defines `me` (its
 * rank in MPI_COMM_WORLD) and `fails` before including this. */
#ifndef NEREUS_TEST_MPI_FAIL_H
#define NEREUS_TEST_MPI_FAIL_H

#include <stdarg.h>
#include <stdio.h>

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL rank %d: ", me);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fails++;
}

#endif
