/*
 * Small helpers: a monotonic clock, the log line, removing a tree and
 * writing a file whole.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "aw.h"


long
aw_now_ms(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


/*
 * One call, one line: messages carry envelope text (input names, query
 * keys, JSON errors quoting them), which the model writes, so a control
 * character is never written as it is.  \n, \r, \t and the backslash
 * are escaped as in C, other C0 bytes and DEL as \xNN.
 */

void
aw_log(const char *level, const char *fmt, ...)
{
    char                  buf[1024], line[4 * sizeof(buf)], ts[32];
    size_t                n;
    va_list               ap;
    time_t                now;
    struct tm             tm;
    const unsigned char  *p;

    now = time(NULL);
    gmtime_r(&now, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);

    n = 0;

    for (p = (const unsigned char *) buf; *p != '\0'; p++) {
        if (*p == '\n' || *p == '\r' || *p == '\t' || *p == '\\') {
            line[n++] = '\\';
            line[n++] = *p == '\n' ? 'n' : *p == '\r' ? 'r'
                        : *p == '\t' ? 't' : '\\';

        } else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {

            /* a C1 control in UTF-8: U+009B is a terminal's CSI */

            p++;
            n += (size_t) snprintf(line + n, sizeof(line) - n, "\\u%04x",
                                   *p);

        } else if (*p < 0x20 || *p == 0x7f) {
            n += (size_t) snprintf(line + n, sizeof(line) - n, "\\x%02x",
                                   *p);

        } else {
            line[n++] = (char) *p;
        }
    }

    line[n] = '\0';

    fprintf(stderr, "%s airlock-worker[%d] %s: %s\n", ts, (int) getpid(),
            level, line);
}


int
aw_rmtree(const char *path)
{
    int             rc, fd;
    DIR            *d;
    char            sub[4096];
    struct stat     st;
    struct dirent  *e;

    if (lstat(path, &st) != 0) {
        return errno == ENOENT ? 0 : -1;
    }

    /*
     * What is gone already counts as removed: a killed worker's launcher
     * and the next worker's start may remove the same job directory
     */
    if (!S_ISDIR(st.st_mode)) {
        return unlink(path) == 0 || errno == ENOENT ? 0 : -1;
    }

    fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        return errno == ENOENT ? 0 : -1;
    }

    /*
     * A job's code and data directories are 0555: root (the launcher's
     * CAP_DAC_OVERRIDE) empties them as they are; their owner, a worker
     * started as another user, gives itself write access first
     */
    if (fstat(fd, &st) == 0 && st.st_uid == geteuid()
        && (st.st_mode & S_IRWXU) != S_IRWXU)
    {
        (void) fchmod(fd, (st.st_mode & 07777) | S_IRWXU);
    }

    d = fdopendir(fd);
    if (d == NULL) {
        close(fd);
        return -1;
    }

    rc = 0;

    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
            continue;
        }

        if ((size_t) snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name)
            >= sizeof(sub))
        {
            rc = -1;
            continue;
        }

        if (aw_rmtree(sub) != 0) {
            rc = -1;
        }
    }

    closedir(d);

    if (rmdir(path) != 0 && errno != ENOENT) {
        rc = -1;
    }

    return rc;
}


int
aw_write_file(const char *path, const void *buf, size_t len, int mode)
{
    int          fd;
    size_t       off;
    ssize_t      n;
    const char  *p;

    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
              mode);
    if (fd < 0) {
        return -1;
    }

    p = buf;

    for (off = 0; off < len; off += (size_t) n) {
        n = write(fd, p + off, len - off);
        if (n < 0 && errno == EINTR) {
            n = 0;
            continue;
        }

        if (n <= 0) {
            close(fd);
            return -1;
        }
    }

    if (fchmod(fd, mode) != 0) {
        close(fd);
        return -1;
    }

    return close(fd);
}
