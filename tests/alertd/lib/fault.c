/*
 * A fault injector for the alertd tests, loaded with LD_PRELOAD (see
 * AlertdTest::fault).  AIRLOCK_FAULT is "CALL SUFFIX ERRNO": CALL (write,
 * fsync, ftruncate or pread) fails with ERRNO on a descriptor whose path
 * (/proc/self/fd/N) ends with SUFFIX, while the file AIRLOCK_FAULT_ON
 * names exists; CALL open fails open() and openat() of a path that ends
 * with SUFFIX; CALL stat fails stat() of such a path.  Each failure it
 * makes appends one byte to that file, through a descriptor opened
 * before the call fails: once the test
 * renames the file away, no failure is made, and the file's size is the
 * count of those made.  Other calls, and other descriptors, go through.
 * While the file AIRLOCK_FAULT_ERRNO names holds a number, that is the
 * errno made instead: the test changes the failure's cause.  A fourth
 * number, "CALL SUFFIX ERRNO MIN", lets a write() or pread() of fewer
 * than MIN bytes through: alertd's reads of a file's tail (at most
 * AD_PRINT_MAX bytes, to tell which file it is) work, its reads of the
 * lines after it fail.
 */

#define _GNU_SOURCE

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>


ssize_t write(int fd, const void *buf, size_t n);
int fsync(int fd);
int ftruncate(int fd, off_t len);
int ftruncate64(int fd, off_t len);
ssize_t pread(int fd, void *buf, size_t n, off_t off);
ssize_t pread64(int fd, void *buf, size_t n, off_t off);
int open(const char *path, int flags, ...);
int open64(const char *path, int flags, ...);
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int openat(int dirfd, const char *path, int flags, ...);
int openat64(int dirfd, const char *path, int flags, ...);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
int stat(const char *path, struct stat *st);
int stat64(const char *path, struct stat64 *st);

static int fault(const char *call, int fd, size_t size);
static int fault_path(const char *call, const char *path, size_t size);
static mode_t open_mode(int flags, va_list ap);


static int
fault(const char *call, int fd, size_t size)
{
    char     name[32], path[4096];
    ssize_t  n;

    if (getenv("AIRLOCK_FAULT") == NULL) {
        return 0;
    }

    (void) snprintf(name, sizeof(name), "/proc/self/fd/%d", fd);

    n = readlink(name, path, sizeof(path) - 1);
    if (n <= 0) {
        return 0;
    }

    path[n] = '\0';

    return fault_path(call, path, size);
}


static int
fault_path(const char *call, const char *path, size_t size)
{
    int          on, c, err, fields;
    char         want[64], suffix[4096], num[16];
    size_t       len, slen;
    ssize_t      n;
    unsigned     min;
    const char  *spec, *flag, *cause;

    spec = getenv("AIRLOCK_FAULT");
    flag = getenv("AIRLOCK_FAULT_ON");

    if (spec == NULL || flag == NULL || path == NULL
        || (fields = sscanf(spec, "%63s %4095s %d %u", want, suffix, &err,
                            &min)) < 3
        || strcmp(want, call) != 0
        || (fields == 4 && size < min))
    {
        return 0;
    }

    len = strlen(path);
    slen = strlen(suffix);

    if (len < slen || strcmp(path + len - slen, suffix) != 0) {
        return 0;
    }

    /* the raw system calls: our own open() would look at them again */

    on = (int) syscall(SYS_openat, AT_FDCWD, flag,
                       O_WRONLY | O_APPEND | O_CLOEXEC);
    if (on == -1) {
        return 0;
    }

    cause = getenv("AIRLOCK_FAULT_ERRNO");
    c = (cause != NULL)
        ? (int) syscall(SYS_openat, AT_FDCWD, cause, O_RDONLY | O_CLOEXEC)
        : -1;

    if (c != -1) {
        n = read(c, num, sizeof(num) - 1);
        (void) close(c);

        if (n > 0) {
            num[n] = '\0';
            err = atoi(num);
        }
    }

    /* the raw system call: our own write() would look at it again */
    (void) syscall(SYS_write, on, "x", 1);
    (void) close(on);

    errno = err;

    return 1;
}


typedef ssize_t (*ad_write_pt)(int fd, const void *buf, size_t n);
typedef int (*ad_fsync_pt)(int fd);
typedef int (*ad_ftruncate_pt)(int fd, off_t len);
typedef ssize_t (*ad_pread_pt)(int fd, void *buf, size_t n, off_t off);
typedef int (*ad_open_pt)(const char *path, int flags, ...);
typedef int (*ad_openat_pt)(int dirfd, const char *path, int flags, ...);
typedef int (*ad_stat_pt)(const char *path, struct stat *st);
typedef int (*ad_stat64_pt)(const char *path, struct stat64 *st);


static mode_t
open_mode(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE
           ? (mode_t) va_arg(ap, int) : 0;
}


ssize_t
write(int fd, const void *buf, size_t n)
{
    static ad_write_pt  next;

    if (next == NULL) {
        next = (ad_write_pt) dlsym(RTLD_NEXT, "write");
    }

    return fault("write", fd, n) ? -1 : next(fd, buf, n);
}


int
fsync(int fd)
{
    static ad_fsync_pt  next;

    if (next == NULL) {
        next = (ad_fsync_pt) dlsym(RTLD_NEXT, "fsync");
    }

    return fault("fsync", fd, SIZE_MAX) ? -1 : next(fd);
}


int
ftruncate(int fd, off_t len)
{
    static ad_ftruncate_pt  next;

    if (next == NULL) {
        next = (ad_ftruncate_pt) dlsym(RTLD_NEXT, "ftruncate");
    }

    return fault("ftruncate", fd, SIZE_MAX) ? -1 : next(fd, len);
}


int
ftruncate64(int fd, off_t len)
{
    static ad_ftruncate_pt  next;

    if (next == NULL) {
        next = (ad_ftruncate_pt) dlsym(RTLD_NEXT, "ftruncate64");
    }

    return fault("ftruncate", fd, SIZE_MAX) ? -1 : next(fd, len);
}


ssize_t
pread(int fd, void *buf, size_t n, off_t off)
{
    static ad_pread_pt  next;

    if (next == NULL) {
        next = (ad_pread_pt) dlsym(RTLD_NEXT, "pread");
    }

    return fault("pread", fd, n) ? -1 : next(fd, buf, n, off);
}


ssize_t
pread64(int fd, void *buf, size_t n, off_t off)
{
    static ad_pread_pt  next;

    if (next == NULL) {
        next = (ad_pread_pt) dlsym(RTLD_NEXT, "pread64");
    }

    return fault("pread", fd, n) ? -1 : next(fd, buf, n, off);
}


#define AD_OPEN(name)                                                        \
int                                                                          \
name(const char *path, int flags, ...)                                       \
{                                                                            \
    mode_t             mode;                                                 \
    va_list            ap;                                                   \
    static ad_open_pt  next;                                                 \
                                                                             \
    if (next == NULL) {                                                      \
        next = (ad_open_pt) dlsym(RTLD_NEXT, #name);                         \
    }                                                                        \
                                                                             \
    va_start(ap, flags);                                                     \
    mode = open_mode(flags, ap);                                             \
    va_end(ap);                                                              \
                                                                             \
    return fault_path("open", path, SIZE_MAX) ? -1                           \
                                              : next(path, flags, mode);     \
}

#define AD_OPENAT(name)                                                      \
int                                                                          \
name(int dirfd, const char *path, int flags, ...)                            \
{                                                                            \
    mode_t               mode;                                               \
    va_list              ap;                                                 \
    static ad_openat_pt  next;                                               \
                                                                             \
    if (next == NULL) {                                                      \
        next = (ad_openat_pt) dlsym(RTLD_NEXT, #name);                       \
    }                                                                        \
                                                                             \
    va_start(ap, flags);                                                     \
    mode = open_mode(flags, ap);                                             \
    va_end(ap);                                                              \
                                                                             \
    return fault_path("open", path, SIZE_MAX)                                \
           ? -1 : next(dirfd, path, flags, mode);                            \
}

AD_OPEN(open)
AD_OPEN(open64)
AD_OPENAT(openat)
AD_OPENAT(openat64)


/* what _FORTIFY_SOURCE calls: the real ones check the flags, ours not */

int
__open_2(const char *path, int flags)
{
    return open(path, flags);
}


int
__open64_2(const char *path, int flags)
{
    return open64(path, flags);
}


int
__openat_2(int dirfd, const char *path, int flags)
{
    return openat(dirfd, path, flags);
}


int
__openat64_2(int dirfd, const char *path, int flags)
{
    return openat64(dirfd, path, flags);
}


int
stat(const char *path, struct stat *st)
{
    static ad_stat_pt  next;

    if (next == NULL) {
        next = (ad_stat_pt) dlsym(RTLD_NEXT, "stat");
    }

    return fault_path("stat", path, SIZE_MAX) ? -1 : next(path, st);
}


int
stat64(const char *path, struct stat64 *st)
{
    static ad_stat64_pt  next;

    if (next == NULL) {
        next = (ad_stat64_pt) dlsym(RTLD_NEXT, "stat64");
    }

    return fault_path("stat", path, SIZE_MAX) ? -1 : next(path, st);
}
