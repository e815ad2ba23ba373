/* stall_rename.c — an LD_PRELOAD shim for tests/run.sh's SIGKILL test of
 * checkpoints: rename() of a destination path that contains the text in
 * NEREUS_STALL_RENAME sleeps 60 s before it renames, so the checkpoint
 * being finished (ckpt.c writes PATH.tmp, then renames it to PATH) stays
 * PATH.tmp long enough for the test's kill to land inside the write every
 * time, not when a 10 ms poll happens to see it. Every other rename goes
 * straight through. The product's code knows nothing of it.
 *
 *   LD_PRELOAD=build/tests/libstall_rename.so NEREUS_STALL_RENAME=TEXT CMD
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int rename(const char *from, const char *to) {
    static int (*real)(const char *, const char *);
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "rename");
    const char *stall = getenv("NEREUS_STALL_RENAME");
    if (stall && *stall && to && strstr(to, stall)) {
        fprintf(stderr, "stall_rename (test shim): holding %s for 60 s before renaming it to %s\n", from, to);
        sleep(60);
    }
    return real(from, to);
}
