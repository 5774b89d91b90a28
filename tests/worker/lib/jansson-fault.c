/*
 * A fault injector for the worker tests, loaded with LD_PRELOAD
 * (Airlock::Worker::jansson_fault): with AIRLOCK_FAULT set to
 * "jansson", every allocation jansson makes fails (NULL, as malloc()
 * out of memory) in the process whose pid the file AIRLOCK_FAULT_ON
 * holds, while that file exists, or only those of at least MIN bytes
 * when its line is "PID MIN"; other processes (the launcher, the fetch
 * spawner, the heartbeat) are left alone.  Each failure it makes
 * appends one byte to that file: once the test renames the file away,
 * no failure is made, and the file's size, less its first line, is the
 * count of those made.  Jansson takes its allocator from
 * json_set_alloc_funcs(), set here before main(); the worker's own
 * malloc() calls are not touched.
 */

#define _GNU_SOURCE

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>


static void jf_init(void) __attribute__((constructor));
static void *jf_malloc(size_t n);
static void jf_free(void *p);
static int jf_fault(size_t n);


static void
jf_init(void)
{
    const char  *spec;

    spec = getenv("AIRLOCK_FAULT");

    if (spec != NULL && strcmp(spec, "jansson") == 0) {
        json_set_alloc_funcs(jf_malloc, jf_free);
    }
}


static int
jf_fault(size_t size)
{
    int          fd;
    char         buf[64], *end;
    long         pid;
    ssize_t      n;
    const char  *flag;

    flag = getenv("AIRLOCK_FAULT_ON");
    if (flag == NULL) {
        return 0;
    }

    /* nothing here allocates */
    fd = open(flag, O_RDWR | O_APPEND | O_CLOEXEC);
    if (fd == -1) {
        return 0;
    }

    n = pread(fd, buf, sizeof(buf) - 1, 0);
    if (n <= 0) {
        (void) close(fd);
        return 0;
    }

    buf[n] = '\0';
    pid = strtol(buf, &end, 10);

    if (pid != (long) getpid() || size < strtoul(end, NULL, 10)) {
        (void) close(fd);
        return 0;
    }

    (void) write(fd, "x", 1);
    (void) close(fd);

    return 1;
}


static void *
jf_malloc(size_t n)
{
    return jf_fault(n) ? NULL : malloc(n);
}


static void
jf_free(void *p)
{
    free(p);
}
