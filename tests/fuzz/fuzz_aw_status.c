/*
 * libFuzzer target: the script's wait status as the worker reads it on
 * the side (worker/aw_sandbox.c): the tail of `runsc run`'s log
 * (aw_status_parse() on what aw_runsc_status() reads, its last 4096
 * bytes) and the status pipe of bwrap's init (aw_init_status(), on a
 * real pipe, read as if anything could have written there: a script
 * could, through its init's memory, while the init was dumpable).  The
 * input's first byte picks which; the rest is the log's tail or all
 * that was written on the pipe.  Invariants: no crash, nothing read past
 * the input; the answer is the one an independent reading gives: the
 * last "<prefix><digits>" ending a line (or the text) whose value is at
 * most 0xffff, in the text up to its first NUL; on the pipe, only in
 * the last line, ended by '\n', of at most 63 bytes and starting with
 * "status ".
 */

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "../../worker/aw_util.c"
#include "../../worker/aw_scan.c"
#include "../../worker/aw_job.c"
#include "../../worker/aw_sandbox.c"


/* the most the target writes on the pipe, under its capacity */
#define FUZZ_PIPE_MAX  60000


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int fuzz_expect(const char *s, size_t len, const char *prefix,
    int *status);
static void fuzz_log(const uint8_t *data, size_t size);
static void fuzz_pipe(const uint8_t *data, size_t size);


/* aw_config.c's and aw_priv.c's: never called here */

const char *
aw_backend_name(aw_backend_e b)
{
    return b == AW_BACKEND_GVISOR ? "gvisor" : "bwrap";
}


int
aw_priv_fd(void)
{
    abort();
}


int
aw_priv_send(const aw_launch_req_t *req, const int fds[AW_LAUNCH_NFDS])
{
    (void) req;
    (void) fds;
    abort();
}


int
aw_priv_recv(uint32_t seq, aw_launch_rep_t *rep)
{
    (void) seq;
    (void) rep;
    abort();
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }

    if (data[0] & 1) {
        fuzz_pipe(data + 1, size - 1);

    } else {
        fuzz_log(data + 1, size - 1);
    }

    return 0;
}


/*
 * The status an independent reading of s (len bytes, up to its first
 * NUL) gives: the last prefix followed by digits and then '\n' or the
 * end, of a value of at most 0xffff.  0 with *status, or -1.
 */

static int
fuzz_expect(const char *s, size_t len, const char *prefix, int *status)
{
    int          found;
    long         v;
    size_t       i, j, plen;
    const char  *nul;

    nul = memchr(s, '\0', len);
    if (nul != NULL) {
        len = (size_t) (nul - s);
    }

    plen = strlen(prefix);
    found = -1;

    for (i = 0; i + plen <= len; i++) {
        if (memcmp(s + i, prefix, plen) != 0) {
            continue;
        }

        v = 0;

        for (j = i + plen; j < len && s[j] >= '0' && s[j] <= '9'; j++) {
            if (v <= 0xffff) {
                v = v * 10 + (s[j] - '0');
            }
        }

        if (j == i + plen || v > 0xffff || (j < len && s[j] != '\n')) {
            continue;
        }

        *status = (int) v;
        found = 0;
    }

    return found;
}


static void
fuzz_log(const uint8_t *data, size_t size)
{
    int     rc, st, want, wst;
    char    buf[4097];
    size_t  n;

    /* aw_runsc_status() reads the file's last 4096 bytes */
    n = size > 4096 ? 4096 : size;
    memcpy(buf, data + size - n, n);
    buf[n] = '\0';

    st = -1;
    wst = -1;

    rc = aw_status_parse(buf, AW_RUNSC_EXITING, &st);
    want = fuzz_expect(buf, n, AW_RUNSC_EXITING, &wst);

    if (rc != want || (rc == 0 && (st != wst || st < 0 || st > 0xffff))) {
        abort();
    }
}


static void
fuzz_pipe(const uint8_t *data, size_t size)
{
    int          fds[2], rc, st, want, wst;
    size_t       n, off, start, len;
    ssize_t      w;
    const char  *s;

    n = size > FUZZ_PIPE_MAX ? FUZZ_PIPE_MAX : size;

    if (pipe2(fds, O_CLOEXEC) != 0) {
        abort();
    }

    for (off = 0; off < n; off += (size_t) w) {
        w = write(fds[1], data + off, n - off);
        if (w <= 0) {
            abort();
        }
    }

    /* as the worker reads it: non-blocking, every writer gone */
    close(fds[1]);

    if (fcntl(fds[0], F_SETFL, O_NONBLOCK) != 0) {
        abort();
    }

    st = -1;
    rc = aw_init_status(fds[0], &st);
    close(fds[0]);

    /* the last line, '\n' included, of at most 63 bytes */
    s = (const char *) data;
    want = -1;
    wst = -1;

    if (n > 0 && s[n - 1] == '\n') {
        for (start = n - 1; start > 0 && s[start - 1] != '\n'; start--) { }

        len = n - start;

        if (len <= 63 && len >= sizeof(AW_STATUS_LINE) - 1
            && memcmp(s + start, AW_STATUS_LINE,
                      sizeof(AW_STATUS_LINE) - 1) == 0)
        {
            want = fuzz_expect(s + start, len, AW_STATUS_LINE, &wst);
        }
    }

    if (rc != want || (rc == 0 && (st != wst || st < 0 || st > 0xffff))) {
        abort();
    }
}
