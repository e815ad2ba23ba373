/* test_backend_mem.c — the CPU backend's memory: zero-filled buffers of
 * every size, the live-byte count, and the pool of warm pages that free
 * keeps for reuse (src/backend/cpu/memory.c): a freed block serves a later
 * one of its size or smaller, several freed blocks are moved together into a
 * larger one, a block put together that way serves again once freed, every
 * buffer handed out reads as zeros whatever it held before, and trim gives
 * the pool back. Also: with NEREUS_CPU_POOL=0 (checked in a child process,
 * since the setting is read once) every free unmaps and nothing is pooled.
 * Kernels before Linux 6.17 refuse to move pages of several mappings in one
 * mremap, after unmapping its destination; this program's mremap can act so
 * (old_kernel below), to check that the pool then moves the pieces one by
 * one and leaves no hole in the block.
 */
#define _GNU_SOURCE /* mremap */
#include <errno.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "nereus/backend.h"

#define MIB ((size_t)1 << 20)

static const Backend *be;

/* the backend's mremap calls land here (this definition comes before libc's); with old_kernel set, a
   move whose source runs past the end of its kernel mapping (/proc/self/maps) unmaps its destination and
   fails, as kernels before 6.17 do */
static int old_kernel, old_kernel_refusals;

static int within_one_mapping(const void *p, size_t n) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return 1;
    char line[512];
    unsigned long lo, hi, a = (unsigned long)p;
    int one = 1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && a >= lo && a < hi) {
            one = a + n <= hi;
            break;
        }
    fclose(f);
    return one;
}

void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...) {
    void *dst = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        dst = va_arg(ap, void *);
        va_end(ap);
    }
    if (old_kernel && (flags & MREMAP_FIXED) && !within_one_mapping(old, old_len)) {
        munmap(dst, new_len);
        old_kernel_refusals++;
        errno = EFAULT;
        return MAP_FAILED;
    }
    return (void *)syscall(SYS_mremap, old, old_len, new_len, flags, dst);
}

static int all_zero(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

/* a buffer of n bytes: zero when handed out, then filled with a pattern (so a later reuse must clear it) */
static unsigned char *take(size_t n, int *zero) {
    unsigned char *p = be->alloc(n);
    *zero = all_zero(p, n);
    memset(p, 0xA5, n);
    return p;
}

static void test_sizes(void) {
    size_t sizes[] = {0, 1, 63, 64, 4095, 4096, MIB - 1, MIB, MIB + 1, 3 * MIB + 12345};
    size_t live0 = be->mem_live();
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        int z;
        unsigned char *p = take(sizes[i], &z);
        CHECK(z && ((uintptr_t)p % 64) == 0, "alloc %zu bytes: zero-filled, 64-byte aligned", sizes[i]);
        CHECK(be->mem_live() >= live0 + sizes[i], "alloc %zu bytes: counted live", sizes[i]);
        be->free(p);
        CHECK(be->mem_live() == live0, "free %zu bytes: live back to %zu", sizes[i], live0);
    }
}

static void test_pool(const char *kernel) {
    printf("-- the pool, %s\n", kernel);
    be->trim();
    CHECK(be->trim() == 0, "trim: nothing pooled after a trim");
    int z;
    /* a freed block serves the next one of its size: the same pages, cleared */
    unsigned char *a = take(4 * MIB, &z);
    be->free(a);
    size_t pooled = be->trim();
    CHECK(pooled >= 4 * MIB, "free of 4 MiB pools it (%zu bytes pooled)", pooled);
    a = take(4 * MIB, &z);
    be->free(a);
    unsigned char *b = take(4 * MIB, &z);
    CHECK(b == a && z, "a 4 MiB block after a freed 4 MiB one: the same pages (%s), zero-filled", b == a ? "yes" : "no");
    /* a smaller block from a larger span: its tail stays pooled */
    be->free(b);
    unsigned char *c = take(2 * MIB, &z);
    CHECK(z && c == b, "a 2 MiB block from the pooled 4 MiB span: its head, zero-filled");
    unsigned char *d = take(MIB + 8192, &z);
    CHECK(z, "a 1 MiB block from the span's tail, zero-filled");
    be->free(c);
    be->free(d);
    /* several freed blocks moved together into a larger one */
    be->trim();
    unsigned char *x = take(3 * MIB, &z), *y = take(5 * MIB, &z), *w = take(2 * MIB, &z);
    be->free(x);
    be->free(y);
    be->free(w);
    unsigned char *big = take(9 * MIB, &z);
    CHECK(z, "9 MiB put together from pooled 3, 5 and 2 MiB blocks: zero-filled");
    size_t left = be->trim();
    CHECK(left < 3 * MIB, "the 9 MiB block took the pooled pages (%zu bytes left pooled)", left);
    /* the put-together block, freed, spans several kernel mappings: it must still serve whole */
    be->free(big);
    unsigned char *again = take(9 * MIB, &z);
    CHECK(z && again == big, "the freed 9 MiB block serves a 9 MiB one again, zero-filled");
    be->free(again);
    unsigned char *more = take(20 * MIB, &z);
    CHECK(z, "20 MiB from the pooled 9 MiB (moved piece by piece) and fresh pages: zero-filled");
    CHECK(be->trim() == 0, "the 20 MiB block took every pooled page");
    be->free(more);
    /* a block larger than the pool is partly warm: the fresh part reads zero too */
    unsigned char *p = take(6 * MIB, &z);
    be->free(p);
    unsigned char *q = take(16 * MIB, &z);
    CHECK(z, "16 MiB from a pooled 6 MiB and 10 fresh: zero-filled");
    be->free(q);
    size_t n = be->trim();
    CHECK(n >= 16 * MIB, "trim gives back what was pooled (%zu bytes)", n);
    CHECK(be->mem_live() == 0 || be->mem_live() < MIB, "nothing live after the pool test (%zu bytes)", be->mem_live());
}

/* NEREUS_CPU_POOL=0: run this program again with it set; the child checks that nothing is pooled */
static int pool_off_child(void) {
    int z;
    unsigned char *a = take(4 * MIB, &z);
    be->free(a);
    size_t n = be->trim();
    printf("%s NEREUS_CPU_POOL=0: a freed 4 MiB block is unmapped, not pooled (%zu bytes pooled)\n", n == 0 ? "ok  " : "FAIL", n);
    return n == 0 && z ? 0 : 1;
}

int main(int argc, char **argv) {
    be = backend_cpu();
    if (argc > 1 && strcmp(argv[1], "--pool-off-child") == 0) return pool_off_child();
    CHECK(be->trim != NULL, "the CPU backend has trim");
    test_sizes();
    test_pool("this kernel");
    old_kernel = 1; /* every check again as on a kernel that moves one mapping per mremap */
    test_pool("emulating a kernel before 6.17 (one mapping per mremap)");
    CHECK(old_kernel_refusals > 0, "the emulated older kernel refused %d move(s) of several mappings", old_kernel_refusals);
    old_kernel = 0;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("NEREUS_CPU_POOL", "0", 1);
        execl("/proc/self/exe", argv[0], "--pool-off-child", (char *)NULL);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "NEREUS_CPU_POOL=0 child (exit %d)", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return CHECK_DONE();
}
