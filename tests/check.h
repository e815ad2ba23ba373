/* check.h — the few macros the unit-test programs share: each CHECK prints
 * one "ok|FAIL" line; a program exits non-zero when any check failed. */
#ifndef NEREUS_TESTS_CHECK_H
#define NEREUS_TESTS_CHECK_H
#include <stdio.h>

static int check_failures = 0, check_count = 0;
#define CHECK(cond, ...) do { \
    check_count++; \
    int ok_ = (cond); \
    if (!ok_) check_failures++; \
    printf("%s ", ok_ ? "ok  " : "FAIL"); printf(__VA_ARGS__); printf("\n"); \
} while (0)
#define CHECK_DONE() (printf("%d checks, %d failed\n", check_count, check_failures), check_failures ? 1 : 0)
#endif
