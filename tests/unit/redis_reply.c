/*
 * ar_reply_read() (redis/ar_reply.c) on one end of a socketpair, a
 * child process playing Redis on the other: a reply at the bound, one
 * over it (however its bytes come), one cut by the deadline, by a closed
 * connection, by the stop flag; a reply over the bound is not read to
 * its end.
 */

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ar_reply.h"
#include "tap.h"


#define RR_HOLD   1                 /* the child keeps the connection */
#define RR_CLOSE  0                 /* the child closes it once written */


typedef struct {
    redisContext    *c;
    pid_t            child;
} rr_pair_t;


static int rr_open(rr_pair_t *p, const char *data, size_t len, int hold);
static void rr_close(rr_pair_t *p);
static char *rr_bulk(size_t n, size_t *len);
static int64_t rr_now_ms(void);


int
main(void)
{
    int                     rc;
    char                   *bulk, *two;
    size_t                  len, half;
    rr_pair_t               p;
    redisReply             *r;
    volatile sig_atomic_t   stop;

    signal(SIGPIPE, SIG_IGN);

    /* "$100000\r\n" and 100000 bytes and "\r\n": 100011 on the wire */
    bulk = rr_bulk(100000, &len);
    if (bulk == NULL || len != 100011) {
        tap_ok(0, "a reply to send");
        return tap_done();
    }

    /* a reply of exactly max bytes, over several reads */

    r = NULL;
    rc = (rr_open(&p, bulk, len, RR_HOLD) == 0)
         ? ar_reply_read(p.c, &r, len, 0, NULL) : -9;
    tap_is_int(rc, AR_OK, "a reply of exactly max bytes is read");
    tap_ok(r != NULL && r->type == REDIS_REPLY_STRING && r->len == 100000
           && memcmp(r->str, bulk + 9, 100000) == 0,
           "... whole, as Redis sent it");
    freeReplyObject(r);
    rr_close(&p);

    /* one byte over max, in as many reads: refused */

    r = NULL;
    rc = (rr_open(&p, bulk, len, RR_HOLD) == 0)
         ? ar_reply_read(p.c, &r, len - 1, 0, NULL) : -9;
    tap_is_int(rc, AR_LARGE, "a reply of max + 1 bytes is refused");
    tap_ok(r == NULL, "... no reply");
    freeReplyObject(r);
    rr_close(&p);

    /* a reply that comes in one read: the same bound */

    r = NULL;
    rc = (rr_open(&p, "+OK\r\n", 5, RR_HOLD) == 0)
         ? ar_reply_read(p.c, &r, 5, 0, NULL) : -9;
    tap_ok(rc == AR_OK && r != NULL && r->type == REDIS_REPLY_STATUS,
           "a short reply of exactly max bytes is read");
    freeReplyObject(r);
    rr_close(&p);

    r = NULL;
    rc = (rr_open(&p, "+OK\r\n", 5, RR_HOLD) == 0)
         ? ar_reply_read(p.c, &r, 4, 0, NULL) : -9;
    tap_ok(rc == AR_LARGE && r == NULL,
           "a short reply of max + 1 bytes, in one read, is refused");
    freeReplyObject(r);
    rr_close(&p);

    /* max 0: any size */

    r = NULL;
    rc = (rr_open(&p, bulk, len, RR_HOLD) == 0)
         ? ar_reply_read(p.c, &r, 0, 0, NULL) : -9;
    tap_ok(rc == AR_OK && r != NULL && r->len == 100000,
           "max 0: a reply of any size");
    freeReplyObject(r);
    rr_close(&p);

    /*
     * a reply far over max, of which Redis sent a part and then nothing:
     * it is refused on what came, not waited for (the deadline only
     * keeps a wrong answer from hanging the test)
     */

    r = NULL;
    rc = (rr_open(&p, bulk, 50000, RR_HOLD) == 0)
         ? ar_reply_read(p.c, &r, 20000, rr_now_ms() + 60000, NULL) : -9;
    tap_is_int(rc, AR_LARGE, "a reply over max is refused before its end");
    tap_ok(r == NULL && p.c->reader->len <= 50000,
           "... no reply, no more than came buffered");
    rr_close(&p);

    /* the deadline passes halfway through a reply */

    half = len / 2;
    r = NULL;
    rc = (rr_open(&p, bulk, half, RR_HOLD) == 0)
         ? ar_reply_read(p.c, &r, len, rr_now_ms() + 200, NULL) : -9;
    tap_is_int(rc, AR_ERROR, "the deadline passes mid-reply: an error");
    tap_ok(r == NULL && p.c->err == 0,
           "... no reply, the connection's own error unset");
    rr_close(&p);

    /* the connection closes halfway through a reply */

    r = NULL;
    rc = (rr_open(&p, bulk, half, RR_CLOSE) == 0)
         ? ar_reply_read(p.c, &r, len, 0, NULL) : -9;
    tap_is_int(rc, AR_ERROR, "closed mid-reply, no deadline: an error");
    tap_ok(r == NULL && p.c->err == REDIS_ERR_EOF,
           "... the connection's error says it closed");
    rr_close(&p);

    r = NULL;
    rc = (rr_open(&p, bulk, half, RR_CLOSE) == 0)
         ? ar_reply_read(p.c, &r, len, rr_now_ms() + 60000, NULL) : -9;
    tap_ok(rc == AR_ERROR && r == NULL && p.c->err == REDIS_ERR_EOF,
           "closed mid-reply, with a deadline: an error");
    rr_close(&p);

    /* the stop flag, set while a reply is half read */

    stop = 1;
    r = NULL;
    rc = (rr_open(&p, bulk, half, RR_HOLD) == 0)
         ? ar_reply_read(p.c, &r, len, rr_now_ms() + 60000, &stop) : -9;
    tap_ok(rc == AR_STOP && r == NULL, "the stop flag ends the wait");
    rr_close(&p);

    stop = 0;
    r = NULL;
    rc = (rr_open(&p, "+OK\r\n", 5, RR_HOLD) == 0)
         ? ar_reply_read(p.c, &r, 5, rr_now_ms() + 60000, &stop) : -9;
    tap_ok(rc == AR_OK && r != NULL && r->type == REDIS_REPLY_STATUS,
           "a flag not set lets a reply be read");
    freeReplyObject(r);
    rr_close(&p);

    /* two replies in one write, each under max, together over it */

    two = malloc(2 * len);
    if (two != NULL) {
        memcpy(two, bulk, len);
        memcpy(two + len, bulk, len);
    }

    r = NULL;
    rc = (two != NULL && rr_open(&p, two, 2 * len, RR_HOLD) == 0)
         ? ar_reply_read(p.c, &r, len + 10, 0, NULL) : -9;
    tap_ok(rc == AR_OK && r != NULL && r->len == 100000,
           "two replies at once: the first is read");
    freeReplyObject(r);
    r = NULL;
    rc = (rc == AR_OK) ? ar_reply_read(p.c, &r, len + 10, 0, NULL) : -9;
    tap_ok(rc == AR_OK && r != NULL && r->len == 100000,
           "... and the second");
    freeReplyObject(r);
    rr_close(&p);

    /* a reply already buffered behind the one before: its own bound */

    r = NULL;
    rc = (rr_open(&p, "+OK\r\n$10\r\n0123456789\r\n", 22, RR_HOLD) == 0)
         ? ar_reply_read(p.c, &r, 16, 0, NULL) : -9;
    tap_ok(rc == AR_OK && r != NULL && r->type == REDIS_REPLY_STATUS,
           "a short reply with another behind it in one read: read");
    freeReplyObject(r);
    r = NULL;
    rc = (rc == AR_OK) ? ar_reply_read(p.c, &r, 16, 0, NULL) : -9;
    tap_ok(rc == AR_LARGE && r == NULL,
           "... the one behind, buffered already, 17 bytes: refused");
    freeReplyObject(r);
    rr_close(&p);

    r = NULL;
    rc = (rr_open(&p, "+OK\r\n$10\r\n0123456789\r\n", 22, RR_HOLD) == 0)
         ? ar_reply_read(p.c, &r, 17, 0, NULL) : -9;
    freeReplyObject(r);
    r = NULL;
    rc = (rc == AR_OK) ? ar_reply_read(p.c, &r, 17, 0, NULL) : -9;
    tap_ok(rc == AR_OK && r != NULL && r->len == 10,
           "... with max 17: read");
    freeReplyObject(r);
    rr_close(&p);

    /* what is no reply */

    r = NULL;
    rc = (rr_open(&p, "!garbage\r\n", 10, RR_HOLD) == 0)
         ? ar_reply_read(p.c, &r, 100, 0, NULL) : -9;
    tap_ok(rc == AR_ERROR && r == NULL && p.c->err == REDIS_ERR_PROTOCOL,
           "a protocol error is an error");
    rr_close(&p);

    free(two);
    free(bulk);

    return tap_done();
}


/*
 * p->c reads what a child writes, len bytes of data; the child then
 * closes its end, or holds it open until the test closes its own.
 */

static int
rr_open(rr_pair_t *p, const char *data, size_t len, int hold)
{
    int      sv[2];
    char     c;
    ssize_t  n;

    p->c = NULL;
    p->child = -1;

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == -1) {
        return -1;
    }

    p->child = fork();

    if (p->child == 0) {
        close(sv[0]);

        while (len > 0) {
            n = write(sv[1], data, len);
            if (n == -1 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                _exit(1);
            }
            data += n;
            len -= (size_t) n;
        }

        if (hold) {
            while (read(sv[1], &c, 1) > 0) {
                /* nothing is sent to it */
            }
        }

        _exit(0);
    }

    close(sv[1]);

    if (p->child == -1) {
        close(sv[0]);
        return -1;
    }

    p->c = redisConnectFd(sv[0]);

    return (p->c != NULL && p->c->err == 0) ? 0 : -1;
}


static void
rr_close(rr_pair_t *p)
{
    redisFree(p->c);
    p->c = NULL;

    if (p->child > 0) {
        waitpid(p->child, NULL, 0);
        p->child = -1;
    }
}


/* a bulk string reply of n bytes (a pattern, no CR or LF), malloc'ed */

static char *
rr_bulk(size_t n, size_t *len)
{
    int      head;
    char    *s;
    size_t   i;

    s = malloc(n + 64);
    if (s == NULL) {
        return NULL;
    }

    head = snprintf(s, 64, "$%zu\r\n", n);

    for (i = 0; i < n; i++) {
        s[head + i] = (char) ('a' + i % 26);
    }

    memcpy(s + head + n, "\r\n", 2);
    *len = (size_t) head + n + 2;

    return s;
}


static int64_t
rr_now_ms(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
