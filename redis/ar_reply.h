/*
 * A Redis reply read up to a bound, by a deadline: what the agent and
 * the worker read from Redis when anything that can write Redis decides
 * the reply's size.  hiredis buffers a reply of any size, and Redis
 * takes values of 512 MB.  Built into airlock-agent and airlock-worker
 * (not libairlock: the nginx module links no hiredis).
 */

#ifndef AR_REPLY_H
#define AR_REPLY_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis.h>


#define AR_OK        0              /* a reply, or none (*r NULL) */
#define AR_ERROR    -1              /* the connection failed (c->errstr),
                                       or the deadline passed (c->err 0) */
#define AR_LARGE     1              /* the reply is over max: not read
                                       on, the connection of no more use */
#define AR_STOP     -2              /* *stop was set */


int ar_reply_read(redisContext *c, redisReply **r, size_t max,
    int64_t deadline, volatile sig_atomic_t *stop);

#endif /* AR_REPLY_H */
