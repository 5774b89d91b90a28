/*
 * ar_reply_read(): the next reply on a blocking hiredis connection, as
 * redisGetReply() reads one once the command is written, but read only
 * up to a bound and, optionally, by a deadline and while a flag says
 * go on.  hiredis buffers a reply of any size, and Redis takes values of
 * 512 MB: a value that large, read whole, cost its reader three copies
 * (the buffer, the reply's string, the caller's), past the memory its
 * unit may have.  The rest of a reply over the bound cannot be skipped:
 * its connection is of no more use.
 */

#include <errno.h>
#include <poll.h>
#include <time.h>

#include "ar_reply.h"


#define AR_POLL_MS  1000            /* a wait on *stop, at most */


static int64_t ar_now_ms(void);


/*
 * max: the reply's bytes as Redis sends them, its framing counted (a
 * bulk string of n bytes is n, the digits of n and 5 more); 0: any
 * size.  The bound is the reply's own, however its bytes come: one that
 * ended in the read that took it over max (a read is up to 16 KiB), or
 * that was already buffered behind the reply before, was taken, and the
 * same reply in more reads refused.
 *
 * deadline: CLOCK_MONOTONIC milliseconds, 0 for none (each read then
 * waits as long as the connection's timeout lets it).  stop: NULL, or a
 * flag a signal handler sets; with it, the wait is a second at most at
 * a time, so a stop that comes just before it is seen.
 */

int
ar_reply_read(redisContext *c, redisReply **r, size_t max, int64_t deadline,
    volatile sig_atomic_t *stop)
{
    int             rc, ms;
    void           *reply;
    size_t          got, before;
    int64_t         left;
    struct pollfd   pfd;

    /*
     * got: the bytes of this reply and what follows it, read or already
     * buffered (len - pos is what the reader has not parsed yet; the
     * reply starts there, the last one having been read whole)
     */
    got = c->reader->len - c->reader->pos;

    for ( ;; ) {
        reply = NULL;

        if (redisGetReplyFromReader(c, &reply) != REDIS_OK) {
            return AR_ERROR;
        }

        if (reply != NULL) {
            /* what is left unparsed is the next reply's */
            if (max != 0 && got - (c->reader->len - c->reader->pos) > max)
            {
                freeReplyObject(reply);
                return AR_LARGE;
            }

            *r = reply;
            return AR_OK;
        }

        /* no reply yet: all that came is this one's */
        if (max != 0 && got > max) {
            return AR_LARGE;
        }

        if (stop != NULL && *stop) {
            return AR_STOP;
        }

        if (deadline != 0 || stop != NULL) {
            ms = AR_POLL_MS;

            if (deadline != 0) {
                left = deadline - ar_now_ms();
                if (left < 1) {
                    return AR_ERROR;
                }

                if (left < ms) {
                    ms = (int) left;
                }
            }

            pfd.fd = c->fd;
            pfd.events = POLLIN;
            pfd.revents = 0;

            rc = poll(&pfd, 1, ms);
            if (rc == 0 || (rc == -1 && errno == EINTR)) {
                continue;
            }
            if (rc == -1) {
                return AR_ERROR;
            }
        }

        /* the reader's buffer only grows while it is fed */
        before = c->reader->len;

        if (redisBufferRead(c) != REDIS_OK) {
            return AR_ERROR;
        }

        got += c->reader->len - before;
    }
}


static int64_t
ar_now_ms(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
