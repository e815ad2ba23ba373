/* stall_rename.c — an LD_PRELOAD shim for tests/run.sh's SIGKILL test of
 * checkpoints: rename() of a destination path that contains the text in
 * NEREUS_STALL_RENAME sleeps 60 s before it renames, so the checkpoint
 * being finished (ckpt.c writes PATH.tmp, then renames it to PATH) stays
 * PATH.tmp long enough for the test's kill to land inside the write every
 * time, not when a 10 ms poll happens to see it. Every other rename goes
 * straight through. The product's code knows nothing of it.
 *
 *   LD_PRELOAD=build/tests/libstall_rename.so NEREUS_STALL_RENAME=TEXT CMD
 *
 * NEREUS_STALL_ONCE=FILE: only the first rename to stall does (the one that
 * creates FILE): the fault-tolerance test kills the stalled rank, and the
 * survivor that writes the same checkpoint again must not stall too.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int rename(const char *from, const char *to) {
    static int (*real)(const char *, const char *);
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "rename");
    const char *stall = getenv("NEREUS_STALL_RENAME");
    const char *once = getenv("NEREUS_STALL_ONCE");
    int first = 1;
    if (stall && *stall && to && strstr(to, stall) && once && *once) {
        int fd = open(once, O_CREAT | O_EXCL | O_WRONLY, 0644);
        first = fd >= 0;
        if (fd >= 0) close(fd);
    }
    if (stall && *stall && to && strstr(to, stall) && first) {
        fprintf(stderr, "stall_rename (test shim): holding %s for 60 s before renaming it to %s\n", from, to);
        for (unsigned left = 60; left > 0;) left = sleep(left); /* a signal (Open MPI 5's runtime sends some) ends
                                                                  a sleep early: sleep again for what is left */
    }
    return real(from, to);
}
