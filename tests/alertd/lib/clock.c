/*
 * A wall clock that steps, for the alertd tests, loaded with LD_PRELOAD
 * (see AlertdTest::clock): the file AIRLOCK_CLOCK_STEP names holds a
 * number of seconds, negative for a step back, that clock_gettime()
 * with CLOCK_REALTIME (or _COARSE), gettimeofday() and time() add to
 * the machine's clock, read at every call: the test steps alertd's wall
 * clock by writing the file, as NTP steps a VM's, without root and
 * without stepping the machine's.  The monotonic and boot clocks, which
 * a step does not move, go through; so does every clock while the file
 * is missing or holds no number.
 */

#define _GNU_SOURCE

#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>


int clock_gettime(clockid_t id, struct timespec *ts);
int gettimeofday(struct timeval *tv, void *tz);
time_t time(time_t *t);

static long long step(void);


static long long
step(void)
{
    int          fd;
    char         buf[32], *end;
    ssize_t      n;
    long long    s;
    const char  *path;

    path = getenv("AIRLOCK_CLOCK_STEP");
    if (path == NULL) {
        return 0;
    }

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd == -1) {
        return 0;
    }

    n = read(fd, buf, sizeof(buf) - 1);
    (void) close(fd);

    if (n <= 0) {
        return 0;
    }

    buf[n] = '\0';
    s = strtoll(buf, &end, 10);

    return (end == buf) ? 0 : s;
}


int
clock_gettime(clockid_t id, struct timespec *ts)
{
    long  rc;

    rc = syscall(SYS_clock_gettime, id, ts);

    if (rc == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
        ts->tv_sec += (time_t) step();
    }

    return (int) rc;
}


int
gettimeofday(struct timeval *tv, void *tz)
{
    struct timespec  ts;

    (void) tz;

    /* glibc declares tv nonnull */

    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) {
        return -1;
    }

    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;

    return 0;
}


time_t
time(time_t *t)
{
    struct timespec  ts;

    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) {
        return (time_t) -1;
    }

    if (t != NULL) {
        *t = ts.tv_sec;
    }

    return ts.tv_sec;
}
