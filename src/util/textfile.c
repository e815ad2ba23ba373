/* textfile.c — files whole: a small text file in; any file out through a temporary renamed over it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nereus/util.h"

/* messages and paths are cut to their buffers on purpose (a long path only shortens the message) */
#pragma GCC diagnostic ignored "-Wformat-truncation"

char *nr_read_text(const char *path, size_t max, size_t *n, char *why, size_t len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, len, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat sb;
    char *buf = NULL;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode) || (size_t)sb.st_size > max) {
        snprintf(why, len, "%s: not a regular file of at most %zu bytes", path, max);
    } else {
        buf = nr_xmalloc((size_t)sb.st_size + 1);
        *n = fread(buf, 1, (size_t)sb.st_size, f);
        buf[*n] = 0;
    }
    fclose(f);
    return buf;
}

int nr_write_whole(const char *path, int (*write)(FILE *f, const void *ctx), const void *ctx, char *why, size_t len) {
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp) {
        snprintf(why, len, "%s: path too long", path);
        return -1;
    }
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        snprintf(why, len, "%s: cannot create %s: %s", path, tmp, strerror(errno));
        return -1;
    }
    int rc = write(f, ctx) == 0 && fflush(f) == 0 && fsync(fileno(f)) == 0 ? 0 : -1;
    if (fclose(f) != 0) rc = -1;
    if (rc) snprintf(why, len, "%s: write failed: %s", path, strerror(errno));
    if (!rc && rename(tmp, path) != 0) {
        snprintf(why, len, "%s: cannot rename %s to it: %s", path, tmp, strerror(errno));
        rc = -1;
    }
    if (rc) unlink(tmp);
    return rc;
}

static int write_text_line(FILE *f, const void *ctx) {
    const char *text = ctx;
    size_t n = strlen(text);
    return fwrite(text, 1, n, f) == n && fputc('\n', f) != EOF ? 0 : -1;
}

int nr_write_text(const char *path, const char *text, char *why, size_t len) {
    return nr_write_whole(path, write_text_line, text, why, len);
}
