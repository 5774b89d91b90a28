/*
 * airlock-worker: Redis-stream job consumer that fetches data through
 * named routes and runs scripts in throw-away sandboxes.
 *
 *   airlock-worker -c /etc/airlock/worker.conf     run
 *   airlock-worker -c worker.conf -t                check the configuration
 *
 * Jobs come from a stream read with a consumer group (XREADGROUP).  On
 * start a worker first finishes the entries still pending for its own
 * consumer name; entries left idle past the visibility timeout by another
 * consumer are taken over with XAUTOCLAIM (a running job's entry is kept
 * fresh by a heartbeat child); an entry delivered more than
 * max_deliveries times goes to the dead-letter stream with its last
 * error, and so does one too large to read, unread.  Every job gets
 * exactly one result: SET result:<job_id> NX EX, PUBLISH
 * response:<job_id> with the stored value, then XACK and XDEL in one
 * script (the stream holds only what is still to be done).  When
 * Redis goes away, or refuses the write, the worker reconnects with
 * backoff and keeps the result it holds until it is stored; one refused
 * for its size gives way to a small error result saying so.
 * docs/jobs.md is the contract.
 */

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <hiredis/hiredis.h>

#include "airlock.h"
#include "ar_auth.h"
#include "ar_reply.h"
#include "aw.h"


/* the most arguments a command of the worker's has (aw_send()) */
#define AW_ARGS_MAX  16

/*
 * The most bytes of a reply that carries a stream entry the worker
 * reads (aw_cmd_max()): an envelope over max_envelope_bytes is still
 * read, up to this, and answered by its scanned job_id
 */
#define AW_ENTRY_MAX(conf)  ((size_t) (conf)->max_envelope_bytes * 4 + 65536)

/*
 * The most bytes of a stored result the worker reads back: a worker's
 * result is at most about 6 times max_stdout_bytes and max_stderr_bytes
 * (escaped) and its other fields
 */
#define AW_RESULT_MAX(conf)                                                  \
    ((size_t) ((conf)->maxima.stdout_bytes + (conf)->maxima.stderr_bytes)    \
     * 8 + (1 << 20))

/*
 * The most bytes of a reply that carries a record of errors_key or
 * <errors_key>:held the worker reads (aw_cmd_record()): what a worker
 * writes there is a delivery note, a job's ids, an entry id, each under
 * AW_ERRLEN
 */
#define AW_RECORD_MAX  65536

/*
 * The most bytes of the answer of one input kept in errors_key
 * (aw_fetch_once()): its member of data.json, escaped, and its name
 */
#define AW_ANSWER_MAX(conf)  ((size_t) (conf)->fetch_max_bytes * 6 + 65536)

/* the most inputs a job has (worker.conf's max_inputs at its largest) */
#define AW_INPUTS_MAX  64

/*
 * How long the answer to a command Redis closed the connection on is
 * waited for (aw_cmd_max()): it is in hand or never comes
 */
#define AW_CLOSED_MS  1000

/*
 * A result whose SET had its connection closed this many times in a
 * row while it was written, with no answer (a value over Redis's
 * client-query-buffer-limit), is taken for refused (aw_finish())
 */
#define AW_CUTS_MAX   3

/* what aw_claim() found */
#define AW_CLAIM_BUSY     0         /* the job_id is another entry's,
                                       in flight */
#define AW_CLAIM_OK       1         /* the entry's: no result stored */
#define AW_CLAIM_STORED   2         /* a result stored, the entry's */
#define AW_CLAIM_OTHERS   3         /* a result stored, not the entry's */

/* what aw_next_entry() found, besides an entry's fields */
#define AW_ENTRY_GONE   1           /* deleted from the stream, pending */
#define AW_ENTRY_LARGE  2           /* over AW_ENTRY_MAX(): not read */
#define AW_ENTRY_TWICE  3           /* two "job" fields: neither run */


typedef struct {
    aw_conf_t       *conf;
    al_policy_t     *policy;
    redisContext    *redis;
    long             backoff_ms;
    int              own_done;
    int              lost;              /* the launcher or the spawner */
    int              cut;               /* the last command's connection
                                           closed while it was written */
    char             claim_cursor[64];
} aw_worker_t;


static void aw_on_signal(int sig);
static void aw_sleep_ms(long ms);
static void aw_backoff(aw_worker_t *w);
static redisContext *aw_redis_open(const aw_conf_t *conf);
static int aw_connect(aw_worker_t *w);
static void aw_disconnect(aw_worker_t *w);
static int aw_group_create(aw_worker_t *w);
static int aw_read_error(aw_worker_t *w, redisReply *r);
static int aw_send(redisContext *c, int argc, const char **argv,
    const size_t *lens);
static redisReply *aw_cmd_max(aw_worker_t *w, int argc, const char **argv,
    const size_t *lens, size_t max, int *large);
static redisReply *aw_cmd(aw_worker_t *w, int argc, const char **argv,
    const size_t *lens);
static redisReply *aw_cmd_retry(aw_worker_t *w, int argc, const char **argv,
    const size_t *lens);
static redisReply *aw_cmd_retry_max(aw_worker_t *w, int argc,
    const char **argv, const size_t *lens, size_t max);
static redisReply *aw_cmd_record(aw_worker_t *w, int argc,
    const char **argv, const size_t *lens);
static redisReply *aw_get_result(aw_worker_t *w, const char *key,
    int *large);
static void aw_publish_large(aw_worker_t *w, const char *id,
    const char *job_id, pid_t hb);
static void aw_wrong_type(aw_worker_t *w, const char *id, const char *raw,
    size_t len, const char *key, const char *how, pid_t hb);
static int aw_next_entry(aw_worker_t *w, char *id, size_t idlen,
    char **job, size_t *joblen, int *state);
static int aw_own_large(aw_worker_t *w, char *id, size_t idlen,
    int *state);
static int aw_entry_from(redisReply *entry, char *id, size_t idlen,
    char **job, size_t *joblen, int *state);
static long aw_deliveries(aw_worker_t *w, const char *id);
static void aw_ack_delete(aw_worker_t *w, const char *id);
static pid_t aw_heartbeat_start(aw_worker_t *w, const char *id);
static void aw_heartbeat(const aw_conf_t *conf, const char *id,
    pid_t parent);
static void aw_heartbeat_stop(pid_t pid);
static void aw_handle(aw_worker_t *w, const char *id, const char *raw,
    size_t len, int state);
static int aw_refused(const redisReply *r);
static void aw_finish(aw_worker_t *w, const char *id, const char *raw,
    size_t len, const aw_job_t *job, const aw_result_t *res,
    const char *result, pid_t hb);
static void aw_publish_done(aw_worker_t *w, const char *id,
    const char *job_id, const char *stored, size_t len, pid_t hb);
static void aw_dead_letter(aw_worker_t *w, const char *id, const char *raw,
    size_t len, const char *error, long deliveries, int gone);
static int aw_done(aw_worker_t *w, const char *id, const char *job_id,
    pid_t hb);
static void aw_gone(aw_worker_t *w, const char *id, long deliveries);
static int aw_claim(aw_worker_t *w, const char *id, const char *job_id,
    char *other, size_t size);
static void aw_duplicate(aw_worker_t *w, const char *id, const char *raw,
    size_t len, const char *job_id, int claim, const char *other,
    long deliveries, pid_t hb);
static void aw_hold(aw_worker_t *w, const char *id);
static void aw_held(aw_worker_t *w);
static int aw_idempotent(const char *method);
static char *aw_fetch_once(aw_worker_t *w, const char *id,
    const aw_job_t *job, long deliveries, size_t *len, aw_result_t *res);
static int aw_join(char **data, size_t *total, const char *m,
    size_t mlen);
static int aw_interrupted(aw_worker_t *w, const char *id, const char *job_id,
    long deliveries, aw_result_t *res);
static void aw_usage(void);


static volatile sig_atomic_t  aw_stop;


static void
aw_on_signal(int sig)
{
    (void) sig;
    aw_stop = 1;
}


static void
aw_sleep_ms(long ms)
{
    struct timespec  ts;

    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000;
    nanosleep(&ts, NULL);
}


/*
 * After an outage or a refusal: 100 ms, doubled after each wait while
 * under 5 s (so up to 6.4 s), reset only once Redis has answered a read
 * (main()).  Not when a connection is made: one that answered AUTH and
 * XGROUP CREATE and closed at the next command (a proxy, or a Redis that
 * drops its clients) started it again at 100 ms each time, and was
 * connected to 10 times a second for as long as that lasted.
 */

static void
aw_backoff(aw_worker_t *w)
{
    aw_sleep_ms(w->backoff_ms);
    if (w->backoff_ms < 5000) {
        w->backoff_ms *= 2;
    }
}


/* A connection, or NULL with the reason logged. */

static redisContext *
aw_redis_open(const aw_conf_t *conf)
{
    char             err[AW_ERRLEN];
    redisContext    *c;
    struct timeval   tv;

    tv.tv_sec = 2;
    tv.tv_usec = 0;

    if (conf->redis_unix != NULL) {
        c = redisConnectUnixWithTimeout(conf->redis_unix, tv);

    } else {
        c = redisConnectWithTimeout(conf->redis_host, conf->redis_port, tv);
    }

    if (c == NULL || c->err) {
        aw_log("error", "redis %s:%d: %s", conf->redis_unix
               ? conf->redis_unix : conf->redis_host, conf->redis_port,
               c ? c->errstr : "out of memory");
        if (c != NULL) {
            redisFree(c);
        }
        return NULL;
    }

    /* a blocked read returns within block_ms; anything slower is dead */
    tv.tv_sec = (conf->block_ms + 10000) / 1000;
    tv.tv_usec = 0;
    redisSetTimeout(c, tv);

    /*
     * A refused AUTH (a wrong password, a user Redis has not) is logged
     * and taken as an outage: the caller backs off and connects again,
     * so an ACL Redis is given (restarted with) is taken without a
     * restart; a new password file needs one (aw_conf_password())
     */
    if (conf->redis_password != NULL
        && ar_auth(c, conf->redis_user, conf->redis_password, err,
                   sizeof(err)) != 0)
    {
        aw_log("error", "%s", err);
        redisFree(c);
        return NULL;
    }

    return c;
}


static int
aw_connect(aw_worker_t *w)
{
    aw_conf_t  *conf;

    conf = w->conf;

    if (w->redis != NULL) {
        return 0;
    }

    w->redis = aw_redis_open(conf);
    if (w->redis == NULL) {
        return -1;
    }

    /*
     * An XGROUP CREATE refused for memory keeps the connection: under
     * maxmemory Redis refuses it (OOM, a write that may need memory)
     * even when the group is there, and runs what a worker then has to
     * do, reads, claims, PUBLISH, XACK and XDEL (which free memory); a
     * group that is not there is created at the first read's NOGROUP
     * (aw_read_error()).  Taken for an outage, it kept a worker that
     * connected meanwhile from finishing anything, its own pending
     * entries included, for as long as Redis was full.  The backoff
     * goes on growing either way (aw_backoff()): a result refused for
     * memory is tried again on a fresh connection (aw_finish()), which
     * must not start it again at 100 ms.  Any other refusal (READONLY:
     * a replica, LOADING) is an outage, and the next try a new
     * connection.
     */
    if (aw_group_create(w) < 0) {
        aw_disconnect(w);
        return -1;
    }

    aw_log("notice", "connected to redis, stream %s group %s consumer %s",
           conf->stream, conf->group, conf->consumer);

    /* after a reconnect the server may be a new one: look again */
    w->own_done = 0;

    return 0;
}


static void
aw_disconnect(aw_worker_t *w)
{
    if (w->redis != NULL) {
        redisFree(w->redis);
        w->redis = NULL;
    }
}


/*
 * The group, from the stream's start, with the stream if it is missing;
 * one that exists (BUSYGROUP) is fine.  0; 1 when Redis refused it for
 * memory (OOM); -1 otherwise, with the reason logged (the connection
 * may then be gone).
 */

static int
aw_group_create(aw_worker_t *w)
{
    int          rc;
    redisReply  *r;

    r = redisCommand(w->redis, "XGROUP CREATE %s %s 0 MKSTREAM",
                     w->conf->stream, w->conf->group);
    if (r == NULL) {
        aw_log("error", "redis: %s", w->redis->errstr);
        aw_disconnect(w);
        return -1;
    }

    if (r->type == REDIS_REPLY_ERROR
        && strncmp(r->str, "BUSYGROUP", 9) != 0)
    {
        aw_log("error", "XGROUP CREATE %s %s: %s", w->conf->stream,
               w->conf->group, r->str);
        rc = strncmp(r->str, "OOM", 3) == 0 ? 1 : -1;
        freeReplyObject(r);
        return rc;
    }

    freeReplyObject(r);

    return 0;
}


/*
 * An error reply to a read.  NOGROUP: the stream or its group was
 * removed under us (DEL, XGROUP DESTROY, FLUSHALL); it is recreated and
 * the caller reads again at once (0): jobs added later with a bare XADD
 * are then read, and entries still in a kept stream are delivered anew,
 * which is safe (a stored result is never run again).  Anything else
 * (a key of another type, a refused command) is an outage (-1), for the
 * caller to back off from: an error answers at once, so reading again
 * straight away would spin.
 */

static int
aw_read_error(aw_worker_t *w, redisReply *r)
{
    if (strncmp(r->str, "NOGROUP", 7) != 0 || w->redis == NULL) {
        return -1;
    }

    if (aw_group_create(w) != 0) {
        return -1;
    }

    aw_log("notice", "stream %s or its group was removed: group %s "
           "recreated", w->conf->stream, w->conf->group);

    /* the new group has no pending entry; looking costs nothing */
    w->own_done = 0;

    return 0;
}


/*
 * A command written to the connection from its arguments as they are:
 * hiredis would copy them twice (the command it formats, then its output
 * buffer), which for a result of stdout and stderr escaped, up to 6
 * times max_stdout_bytes and max_stderr_bytes, is two results more in
 * the unit's memory.  Its output buffer is empty (every command before
 * has had its reply), so hiredis then only reads the reply.  0, or -1
 * with errno.
 */

static int
aw_send(redisContext *c, int argc, const char **argv, const size_t *lens)
{
    int           i, k;
    char          head[AW_ARGS_MAX + 1][32];
    size_t        len;
    ssize_t       n;
    struct iovec  iov[3 * AW_ARGS_MAX + 1], *v;

    if (argc < 1 || argc > AW_ARGS_MAX) {
        errno = EINVAL;
        return -1;
    }

    iov[0].iov_base = head[AW_ARGS_MAX];
    iov[0].iov_len = (size_t) snprintf(head[AW_ARGS_MAX], sizeof(head[0]),
                                       "*%d\r\n", argc);
    k = 1;

    for (i = 0; i < argc; i++) {
        len = lens != NULL ? lens[i] : strlen(argv[i]);

        iov[k].iov_base = head[i];
        iov[k++].iov_len = (size_t) snprintf(head[i], sizeof(head[0]),
                                             "$%zu\r\n", len);
        iov[k].iov_base = (void *) argv[i];
        iov[k++].iov_len = len;
        iov[k].iov_base = (void *) "\r\n";
        iov[k++].iov_len = 2;
    }

    v = iov;

    while (k > 0) {
        n = writev(c->fd, v, k);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }

        while (k > 0 && (size_t) n >= v->iov_len) {
            n -= (ssize_t) v->iov_len;
            v++;
            k--;
        }

        if (k > 0) {
            v->iov_base = (char *) v->iov_base + n;
            v->iov_len -= (size_t) n;
        }
    }

    return 0;
}


/*
 * One command; NULL after a transport error (the connection is gone;
 * but an error Redis answered before it closed it is returned), or a
 * reply over max bytes (0: any), *large then set: the connection is
 * dropped, as the rest of the reply cannot be skipped.  The reply is
 * read by ar_reply_read(), never whole: a stream entry of 512 MB cost
 * the worker three copies (the buffer, the reply's string, the job's),
 * over the unit's MemoryMax=, at every delivery.  No deadline: each
 * read waits as long as the connection's timeout.
 */

static redisReply *
aw_cmd_max(aw_worker_t *w, int argc, const char **argv, const size_t *lens,
    size_t max, int *large)
{
    int          rc;
    redisReply  *r;

    if (large != NULL) {
        *large = 0;
    }

    w->cut = 0;

    if (aw_connect(w) != 0) {
        return NULL;
    }

    r = NULL;

    if (aw_send(w->redis, argc, argv, lens) != 0) {
        rc = errno;
        w->cut = 1;
        aw_log("error", "redis %s: %s", argv[0], strerror(rc));

        /*
         * Redis answers a value over proto-max-bulk-len ("-ERR Protocol
         * error: invalid bulk length") and closes the connection while
         * the rest is still being written: its answer is read, so that
         * the caller sees the refusal and not an outage, which would
         * send the same value again for ever
         */
        if ((rc == EPIPE || rc == ECONNRESET)
            && ar_reply_read(w->redis, &r, AW_RECORD_MAX,
                             aw_now_ms() + AW_CLOSED_MS, NULL) == AR_OK
            && r != NULL && r->type != REDIS_REPLY_ERROR)
        {
            freeReplyObject(r);
            r = NULL;
        }

        if (r != NULL) {
            aw_log("error", "redis %s: %s", argv[0], r->str);
        }

        aw_disconnect(w);
        return r;
    }

    rc = ar_reply_read(w->redis, &r, max, 0, NULL);

    if (rc == AR_LARGE) {
        aw_log("error", "redis %s: the reply is over %zu bytes, too "
               "large to read; the connection is dropped", argv[0], max);
        aw_disconnect(w);
        if (large != NULL) {
            *large = 1;
        }
        return NULL;
    }

    if (rc != AR_OK || r == NULL) {
        aw_log("error", "redis %s: %s", argv[0], w->redis->errstr);
        aw_disconnect(w);
        return NULL;
    }

    if (r->type == REDIS_REPLY_ERROR) {
        aw_log("error", "redis %s: %s", argv[0], r->str);
    }

    return r;
}


/* One command; NULL after a transport error (the connection is gone). */

static redisReply *
aw_cmd(aw_worker_t *w, int argc, const char **argv, const size_t *lens)
{
    return aw_cmd_max(w, argc, argv, lens, 0, NULL);
}


/*
 * The same, retried with backoff until Redis answers: what the worker
 * holds (a result, an acknowledgement) is never dropped for an outage.
 */

static redisReply *
aw_cmd_retry(aw_worker_t *w, int argc, const char **argv,
    const size_t *lens)
{
    return aw_cmd_retry_max(w, argc, argv, lens, 0);
}


/*
 * A command that reads records (errors_key, <errors_key>:held), retried
 * as aw_cmd_retry() does, of at most AW_RECORD_MAX bytes: NULL when the
 * reply is over that (no worker's record: written by something else),
 * the connection dropped, for the caller to take as unreadable.  hiredis
 * buffers a reply of any size: read whole, a record of 512 MB got the
 * worker killed by the unit's MemoryMax= at every delivery of its entry,
 * and a member of <errors_key>:held at every turn of the loop.
 */

static redisReply *
aw_cmd_record(aw_worker_t *w, int argc, const char **argv,
    const size_t *lens)
{
    return aw_cmd_retry_max(w, argc, argv, lens, AW_RECORD_MAX);
}


/* the loop of both: max 0 reads a reply of any size */

static redisReply *
aw_cmd_retry_max(aw_worker_t *w, int argc, const char **argv,
    const size_t *lens, size_t max)
{
    int          large;
    redisReply  *r;

    for ( ;; ) {
        r = aw_cmd_max(w, argc, argv, lens, max, &large);
        if (r == NULL && large) {
            return NULL;
        }

        if (r != NULL && r->type != REDIS_REPLY_ERROR) {
            return r;
        }

        if (r != NULL) {
            /* LOADING after a restart, or a refused write: retry too */
            if (w->redis != NULL && strncmp(r->str, "NOGROUP", 7) == 0) {
                (void) aw_read_error(w, r);
            }
            freeReplyObject(r);
        }

        aw_backoff(w);
    }
}


/*
 * GET of a result key, retried as aw_cmd_retry() does, but a WRONGTYPE
 * error is returned (the key holds a list, a hash...): waiting does not
 * change it, and no result can be stored there.  A value over
 * AW_RESULT_MAX() (no worker's result: written by something else) is
 * not read: NULL, *large set (aw_publish_large()); read whole, a value
 * of 512 MB got the worker killed at every delivery of its job.
 */

static redisReply *
aw_get_result(aw_worker_t *w, const char *key, int *large)
{
    redisReply  *r;
    const char  *argv[] = { "GET", key };

    for ( ;; ) {
        r = aw_cmd_max(w, 2, argv, NULL, AW_RESULT_MAX(w->conf), large);
        if (r == NULL && *large) {
            return NULL;
        }

        if (r != NULL
            && (r->type != REDIS_REPLY_ERROR
                || strncmp(r->str, "WRONGTYPE", 9) == 0))
        {
            return r;
        }

        if (r != NULL) {
            freeReplyObject(r);
        }

        aw_backoff(w);
    }
}


/*
 * A stored result too large to read (aw_get_result()): Redis publishes
 * it itself, and the entry is done, as in aw_publish_done().
 */

static void
aw_publish_large(aw_worker_t *w, const char *id, const char *job_id,
    pid_t hb)
{
    char         key[128], chan[128];
    redisReply  *r;
    static const char  script[] =
        "local v = redis.call('GET', KEYS[1]) "
        "if v then redis.call('PUBLISH', ARGV[1], v) return 1 end "
        "return 0";
    const char  *argv[] = { "EVAL", script, "1", key, chan };

    snprintf(key, sizeof(key), "result:%s", job_id);
    snprintf(chan, sizeof(chan), "response:%s", job_id);

    aw_log("warn", "job %s: %s is over %zu bytes, no worker's result: "
           "published as it is, not read", job_id, key,
           AW_RESULT_MAX(w->conf));

    r = aw_cmd_retry(w, 5, argv, NULL);
    freeReplyObject(r);

    aw_heartbeat_stop(hb);
    aw_ack_delete(w, id);
}


/*
 * A job whose result key holds a value of another type: no result can
 * be stored for it, and retrying would wedge every worker that takes
 * it.  It goes to the dead-letter stream with the reason (how the job
 * ended, if it ran) and is acknowledged; the key is left alone.
 */

static void
aw_wrong_type(aw_worker_t *w, const char *id, const char *raw, size_t len,
    const char *key, const char *how, pid_t hb)
{
    char         msg[AW_ERRLEN];
    redisReply  *r;
    const char  *type[] = { "TYPE", key };

    r = aw_cmd_retry(w, 2, type, NULL);
    snprintf(msg, sizeof(msg), "%s holds a %s, not a result: none can be "
             "stored (%s)", key,
             r->type == REDIS_REPLY_STATUS ? r->str : "value of another type",
             how);
    freeReplyObject(r);

    aw_dead_letter(w, id, raw, len, msg, aw_deliveries(w, id), 0);
    aw_heartbeat_stop(hb);
    aw_ack_delete(w, id);
}


/*
 * An entry of a reply: its id, and its "job" field (NULL when it has
 * none); *state is AW_ENTRY_GONE when the entry itself was deleted from
 * the stream (XDEL, XTRIM) while pending: Redis gives its id with no
 * fields.  A field name is compared whole, as the binary string Redis
 * keeps: "job\0x" is not "job", which strcmp() took it for.  An entry
 * with more than one "job" field (XADD takes a name twice) is
 * AW_ENTRY_TWICE, its first kept for the dead-letter stream: the worker
 * ran the first, where a client that reads the fields into a map (most
 * do) sees the last, as with a JSON object's duplicate key.
 */

static int
aw_entry_from(redisReply *entry, char *id, size_t idlen, char **job,
    size_t *joblen, int *state)
{
    size_t       i;
    redisReply  *f;

    if (entry->type != REDIS_REPLY_ARRAY || entry->elements < 2
        || entry->element[0]->type != REDIS_REPLY_STRING)
    {
        return -1;
    }

    snprintf(id, idlen, "%s", entry->element[0]->str);
    *job = NULL;
    *joblen = 0;

    f = entry->element[1];
    if (f->type != REDIS_REPLY_ARRAY) {
        /* deleted from the stream while pending */
        *state = AW_ENTRY_GONE;
        return 0;
    }

    for (i = 0; i + 1 < f->elements; i += 2) {
        if (f->element[i]->type == REDIS_REPLY_STRING
            && f->element[i]->len == 3
            && memcmp(f->element[i]->str, "job", 3) == 0
            && f->element[i + 1]->type == REDIS_REPLY_STRING)
        {
            if (*job != NULL) {
                *state = AW_ENTRY_TWICE;
                break;
            }

            *joblen = f->element[i + 1]->len;
            *job = malloc(*joblen + 1);
            if (*job == NULL) {
                return -1;
            }
            memcpy(*job, f->element[i + 1]->str, *joblen);
            (*job)[*joblen] = '\0';
        }
    }

    return 0;
}


/*
 * The next entry to work on: our own pending ones first, then one idle
 * past the visibility timeout, then a new one (blocking up to block_ms).
 * Returns 1 with an entry, 0 with none, -1 when Redis is away or
 * answers with an error (aw_read_error()).  A reply over
 * AW_ENTRY_MAX() is not read: an entry taken that way is pending for
 * this consumer, and it is the first there, found by aw_own_large().
 */

static int
aw_next_entry(aw_worker_t *w, char *id, size_t idlen, char **job,
    size_t *joblen, int *state)
{
    int          rc, large;
    size_t       i, max;
    char         idle[32], block[32];
    aw_conf_t   *conf;
    redisReply  *r, *entries;

    conf = w->conf;
    max = AW_ENTRY_MAX(conf);

    if (aw_connect(w) != 0) {
        return -1;
    }

    rc = 0;

    if (!w->own_done) {
        const char  *argv[] = { "XREADGROUP", "GROUP", conf->group,
                                conf->consumer, "COUNT", "1", "STREAMS",
                                conf->stream, "0" };

        r = aw_cmd_max(w, 9, argv, NULL, max, &large);
        if (r == NULL) {
            return large ? aw_own_large(w, id, idlen, state) : -1;
        }

        if (r->type == REDIS_REPLY_ERROR) {
            rc = aw_read_error(w, r);
            freeReplyObject(r);
            return rc;
        }

        if (r->type == REDIS_REPLY_ARRAY && r->elements == 1
            && r->element[0]->elements == 2
            && r->element[0]->element[1]->elements > 0)
        {
            rc = aw_entry_from(r->element[0]->element[1]->element[0], id,
                               idlen, job, joblen, state) == 0;
            aw_log("notice", "resuming own pending entry %s", id);

        } else {
            w->own_done = 1;
        }

        freeReplyObject(r);

        if (rc) {
            return 1;
        }
    }

    aw_held(w);

    {
        const char  *argv[] = { "XAUTOCLAIM", conf->stream, conf->group,
                                conf->consumer, idle, w->claim_cursor,
                                "COUNT", "1" };

        snprintf(idle, sizeof(idle), "%ld", conf->visibility_ms);
        r = aw_cmd_max(w, 8, argv, NULL, max, &large);
        if (r == NULL) {
            /* claimed all the same: found among our own next time */
            w->own_done = 0;
            return large ? 0 : -1;
        }

        if (r->type == REDIS_REPLY_ERROR) {
            rc = aw_read_error(w, r);
            freeReplyObject(r);
            return rc;
        }

        if (r->type == REDIS_REPLY_ARRAY && r->elements >= 2) {
            snprintf(w->claim_cursor, sizeof(w->claim_cursor), "%s",
                     r->element[0]->str ? r->element[0]->str : "0-0");
            entries = r->element[1];

            if (entries->type == REDIS_REPLY_ARRAY && entries->elements > 0)
            {
                rc = aw_entry_from(entries->element[0], id, idlen, job,
                                   joblen, state) == 0;
                if (rc) {
                    aw_log("notice", "claimed entry %s idle over %ld ms", id,
                           conf->visibility_ms);
                }
            }

            /*
             * Redis 7 drops from the pending list, and lists apart, the
             * entries it found deleted from the stream: each is recorded
             * now, or its job would vanish without a trace
             */
            entries = r->elements >= 3 ? r->element[2] : NULL;

            for (i = 0; entries != NULL
                        && entries->type == REDIS_REPLY_ARRAY
                        && i < entries->elements; i++)
            {
                if (entries->element[i]->type == REDIS_REPLY_STRING) {
                    /* off the pending list already: held meanwhile */
                    aw_hold(w, entries->element[i]->str);
                    aw_gone(w, entries->element[i]->str, 0);
                }
            }
        }

        freeReplyObject(r);

        if (rc) {
            return 1;
        }
    }

    {
        const char  *argv[] = { "XREADGROUP", "GROUP", conf->group,
                                conf->consumer, "COUNT", "1", "BLOCK", block,
                                "STREAMS", conf->stream, ">" };

        snprintf(block, sizeof(block), "%ld", conf->block_ms);
        r = aw_cmd_max(w, 11, argv, NULL, max, &large);
        if (r == NULL) {
            /* delivered all the same: found among our own next time */
            w->own_done = 0;
            return large ? 0 : -1;
        }

        if (r->type == REDIS_REPLY_ERROR) {
            rc = aw_read_error(w, r);
            freeReplyObject(r);
            return rc;
        }

        if (r->type == REDIS_REPLY_ARRAY && r->elements == 1
            && r->element[0]->elements == 2
            && r->element[0]->element[1]->elements > 0)
        {
            rc = aw_entry_from(r->element[0]->element[1]->element[0], id,
                               idlen, job, joblen, state) == 0;
        }

        freeReplyObject(r);
    }

    return rc;
}


/*
 * The entry whose reply was too large to read: the first pending for
 * this consumer, which XREADGROUP ... 0 COUNT 1 read (an entry taken
 * with XAUTOCLAIM or XREADGROUP ... > is read that way next: this
 * consumer's pending list was empty before it, one entry is taken at a
 * time).  XPENDING gives its id without its fields.  1 with the id and
 * *state AW_ENTRY_LARGE, 0 when none is pending any more, -1 when Redis
 * is away.
 */

static int
aw_own_large(aw_worker_t *w, char *id, size_t idlen, int *state)
{
    int          rc;
    redisReply  *r, *e;
    const char  *argv[] = { "XPENDING", w->conf->stream, w->conf->group,
                            "-", "+", "1", w->conf->consumer };

    r = aw_cmd(w, 7, argv, NULL);
    if (r == NULL) {
        return -1;
    }

    rc = 0;

    if (r->type == REDIS_REPLY_ARRAY && r->elements == 1) {
        e = r->element[0];

        if (e->type == REDIS_REPLY_ARRAY && e->elements >= 1
            && e->element[0]->type == REDIS_REPLY_STRING)
        {
            snprintf(id, idlen, "%s", e->element[0]->str);
            *state = AW_ENTRY_LARGE;
            rc = 1;
            aw_log("notice", "own pending entry %s is over %zu bytes",
                   id, AW_ENTRY_MAX(w->conf));
        }

    } else if (r->type == REDIS_REPLY_ERROR) {
        rc = -1;
    }

    freeReplyObject(r);

    return rc;
}


static long
aw_deliveries(aw_worker_t *w, const char *id)
{
    long          n;
    redisReply   *r;
    const char   *argv[] = { "XPENDING", w->conf->stream, w->conf->group,
                             id, id, "1" };

    r = aw_cmd_retry(w, 6, argv, NULL);
    n = 1;

    if (r->type == REDIS_REPLY_ARRAY && r->elements == 1
        && r->element[0]->elements == 4
        && r->element[0]->element[3]->type == REDIS_REPLY_INTEGER)
    {
        n = (long) r->element[0]->element[3]->integer;
    }

    freeReplyObject(r);

    return n;
}


/*
 * An entry that is done leaves the stream: XACK and XDEL in one script,
 * so nothing the job carried (its script, up to 64 KiB) stays in Redis
 * and its AOF.  Why this loses nothing and doubles nothing: it is
 * called only once the result is stored (SET NX) and published, or the
 * entry copied to the dead-letter stream.  A crash before the script
 * leaves the entry pending; its next delivery finds the stored result,
 * publishes it again and comes back here, never running the job twice.
 * No crash cuts the script (Redis writes its effects to the AOF as one
 * transaction); an error stops it where it is.  So XACK comes first: an
 * entry deleted but left pending would be redelivered without its
 * fields and taken for a broken one, one acknowledged but not deleted
 * is only garbage.  Run again after a reply lost with the
 * connection, every command in it is a no-op (XACK and XDEL answer 0).
 * A script, not MULTI/EXEC: under maxmemory Redis refuses every command
 * queued in a transaction (OOM), XACK and XDEL too, which it runs alone
 * or in a script, and which free the memory; the worker could
 * acknowledge nothing until something else made room.
 *
 * The same script removes the entry's records in errors_key, the
 * delivery record, the job's ids, "<entry>:dead" (aw_dead_letter()),
 * "<entry>:done" (aw_finish()), "<entry>:sent" and every
 * "<entry>:answer:<input index>" (aw_fetch_once()), its claim on its
 * job_id, "job:<job_id>" when it names the entry, and "<entry>:claim"
 * (aw_claim()), and its lease in
 * <errors_key>:held, if it was deleted from the stream while its job
 * ran (aw_heartbeat()):
 * they go exactly when the entry stops being pending.  A second command
 * did, after this one, and a worker killed in between left them in
 * errors_key for ever, nothing looking at an acknowledged entry again.
 * Not before XACK either: "<entry>:done" gone while the entry is still
 * pending would have its job run again once the result expired.
 */

static void
aw_ack_delete(aw_worker_t *w, const char *id)
{
    char         mark[AW_ID_MAX + 64], jkey[AW_ID_MAX + 64];
    char         done[AW_ID_MAX + 64], held[AW_ID_MAX + 600];
    char         sent[AW_ID_MAX + 64], answers[AW_ID_MAX + 64];
    char         count[16], claim[AW_ID_MAX + 64];
    redisReply  *r;
    static const char  script[] =
        "redis.call('XACK', KEYS[1], ARGV[1], ARGV[2]) "
        "redis.call('XDEL', KEYS[1], ARGV[2]) "
        "redis.call('HDEL', KEYS[2], ARGV[2], ARGV[3], ARGV[4], ARGV[5], "
        "ARGV[6]) "
        "local f = {} "
        "for i = 0, tonumber(ARGV[8]) - 1 do f[#f + 1] = ARGV[7] .. i end "
        "redis.call('HDEL', KEYS[2], unpack(f)) "
        "redis.call('ZREM', KEYS[3], ARGV[2]) "
        "local c = redis.call('HGET', KEYS[2], ARGV[9]) "
        "if c then "
        "if redis.call('HGET', KEYS[2], c) == ARGV[2] then "
        "redis.call('HDEL', KEYS[2], c) end "
        "redis.call('HDEL', KEYS[2], ARGV[9]) end "
        "return 1";
    const char  *argv[] = { "EVAL", script, "3", w->conf->stream,
                            w->conf->errors_key, held, w->conf->group, id,
                            mark, jkey, done, sent, answers, count,
                            claim };

    snprintf(mark, sizeof(mark), "%s:dead", id);
    snprintf(jkey, sizeof(jkey), "%s:job", id);
    snprintf(done, sizeof(done), "%s:done", id);
    snprintf(sent, sizeof(sent), "%s:sent", id);
    snprintf(answers, sizeof(answers), "%s:answer:", id);
    snprintf(count, sizeof(count), "%d", AW_INPUTS_MAX);
    snprintf(held, sizeof(held), "%s:held", w->conf->errors_key);
    snprintf(claim, sizeof(claim), "%s:claim", id);

    for ( ;; ) {
        r = aw_cmd(w, 15, argv, NULL);

        if (r != NULL && r->type != REDIS_REPLY_ERROR) {
            freeReplyObject(r);
            return;
        }

        if (r != NULL) {
            aw_log("error", "redis XACK/XDEL %s: %s", id, r->str);
            freeReplyObject(r);
        }

        aw_backoff(w);
    }
}


/*
 * From the moment the worker has an entry until it acknowledges it,
 * the entry's idle time is kept low, or another worker's XAUTOCLAIM would
 * take a live job after visibility_timeout_ms and run it a second time
 * (its POST inputs too): a write Redis refuses for a while (the result,
 * the delivery record, the dead-letter entry) holds the worker, whose
 * entry must stay its own meanwhile.  A child process
 * does it, on a connection of its own: the worker itself is busy
 * fetching, watching the sandbox's limits or storing the result, and
 * must not wait on Redis for them.
 * The child dies with the worker (PR_SET_PDEATHSIG), so a dead worker's
 * entry goes idle and is taken over as before.  -1 when it cannot be
 * started: the job runs all the same, unprotected, as it used to.
 */

static pid_t
aw_heartbeat_start(aw_worker_t *w, const char *id)
{
    pid_t  pid, parent;

    parent = getpid();

    pid = fork();
    if (pid == -1) {
        aw_log("warn", "entry %s: no heartbeat (fork: %s); a job longer "
               "than %ld ms may be taken over", id, strerror(errno),
               w->conf->visibility_ms);
        return -1;
    }

    if (pid == 0) {
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) {
            _exit(0);
        }
        aw_heartbeat(w->conf, id, parent);
        _exit(0);
    }

    return pid;
}


/*
 * Every third of the visibility timeout: if the entry is still pending
 * for this consumer, XCLAIM it to this consumer with min-idle-time 0 and
 * JUSTID, which resets its idle time and not its delivery count.  The
 * check and the claim are one script, so an entry another worker has
 * taken over (this one lost Redis too long) is never taken back.  An
 * entry deleted from the stream while its job runs cannot be kept
 * pending (Redis 7 drops a deleted entry it is asked to claim, and
 * another worker's XAUTOCLAIM would, past the timeout): the same script
 * then holds it in the sorted set <errors_key>:held, scored with the
 * time (Redis's clock, ms) until which it is this worker's, and only
 * then acknowledges it (2), so a refused ZADD leaves it pending; it
 * renews that time at every beat after (3).  The script runs under
 * maxmemory (allow-oom: a claim, one small member): refused there, it
 * left such an entry pending and unrefreshed, for another worker's
 * XAUTOCLAIM (which Redis runs under maxmemory) to drop past the
 * timeout, while that worker's own hold was refused too: both killed
 * before Redis took a write, the job was nowhere.  A worker that
 * dies lets the time pass, and another takes the entry from there
 * (aw_held()), as from a pending list.  (One found deleted gets no
 * heartbeat.)
 */

static void
aw_heartbeat(const aw_conf_t *conf, const char *id, pid_t parent)
{
    char           held[AW_ID_MAX + 600], vis[32];
    long           interval;
    redisContext  *c;
    redisReply    *r;
    static const char  script[] =
        "#!lua flags=allow-oom\n"
        "local t = redis.call('TIME') "
        "local dl = t[1] * 1000 + math.floor(t[2] / 1000) "
        "+ tonumber(ARGV[4]) "
        "if redis.call('ZSCORE', KEYS[2], ARGV[2]) then "
        "redis.call('ZADD', KEYS[2], 'XX', dl, ARGV[2]) return 3 end "
        "local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], "
        "ARGV[2], 1) "
        "if p[1] == nil or p[1][2] ~= ARGV[3] then return 0 end "
        "if #redis.call('XRANGE', KEYS[1], ARGV[2], ARGV[2]) == 0 then "
        "redis.call('ZADD', KEYS[2], dl, ARGV[2]) "
        "redis.call('XACK', KEYS[1], ARGV[1], ARGV[2]) return 2 end "
        "redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[3], 0, ARGV[2], "
        "'JUSTID') "
        "return 1";
    const char  *argv[] = { "EVAL", script, "2", conf->stream, held,
                            conf->group, id, conf->consumer, vis };

    snprintf(held, sizeof(held), "%s:held", conf->errors_key);
    snprintf(vis, sizeof(vis), "%ld", conf->visibility_ms);
    interval = conf->visibility_ms / 3;
    c = NULL;

    for ( ;; ) {
        aw_sleep_ms(interval);

        if (getppid() != parent) {
            break;
        }

        if (c == NULL) {
            c = aw_redis_open(conf);
            if (c == NULL) {
                continue;
            }
        }

        r = redisCommandArgv(c, 9, argv, NULL);
        if (r == NULL) {
            redisFree(c);
            c = NULL;
            continue;
        }

        if (r->type == REDIS_REPLY_INTEGER && r->integer == 2) {
            /*
             * deleted from the stream (XDEL, XTRIM): off the pending
             * list, held in <errors_key>:held; the worker finishes what
             * it was doing
             */
            aw_log("notice", "entry %s was deleted from the stream while "
                   "its job runs: held in %s", id, held);
        }

        if (r->type == REDIS_REPLY_INTEGER && r->integer == 0) {
            aw_log("warn", "entry %s is no longer pending for %s (taken "
                   "over after an outage?); the job runs on, its result "
                   "is kept only if it is the first", id, conf->consumer);
            freeReplyObject(r);
            break;
        }

        if (r->type == REDIS_REPLY_ERROR) {
            aw_log("error", "redis heartbeat of entry %s: %s", id, r->str);
        }

        freeReplyObject(r);
    }

    if (c != NULL) {
        redisFree(c);
    }
}


static void
aw_heartbeat_stop(pid_t pid)
{
    if (pid <= 0) {
        return;
    }

    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) { }
}


/*
 * A SET refused for the value it carries: OOM (maxmemory with
 * noeviction) or ERR (a value over proto-max-bulk-len).  A smaller value
 * may be taken.  The other refusals (LOADING, READONLY, MISCONF, BUSY,
 * ...) are of any write, for a while: the same value is tried again.
 */

static int
aw_refused(const redisReply *r)
{
    return r->type == REDIS_REPLY_ERROR
           && (strncmp(r->str, "OOM", 3) == 0
               || strncmp(r->str, "ERR", 3) == 0);
}


/*
 * Store (only if absent), publish what is stored, acknowledge, delete.
 * The SET NX and the record "<entry>:done" in errors_key are one
 * script: the record outlives the result's TTL until the entry is
 * acknowledged, so a delivery after a crash that finds no result (it
 * expired meanwhile) knows the job was done and does not run it again
 * (aw_done()).  The record is written only when the SET stored the
 * result: one that stored nothing (the key holds a value of another
 * type, sent to the dead-letter stream by aw_wrong_type(), which Redis
 * may refuse for a while) left the record behind a worker killed
 * meanwhile, and once the key was put right the next delivery
 * acknowledged the entry, its job answered nowhere.  (A result found
 * there was stored by an earlier delivery, which wrote the record, or
 * is another entry's of the same job_id.)
 * Only a result Redis has stored ends the job.  One
 * refused for its size is replaced by a small result_not_stored error
 * that says so (aw_result_unstored()), so the client gets an answer;
 * while Redis refuses that too, or refuses any write, the worker backs
 * off and tries the whole result again (room may have been made), and
 * the entry stays pending, as in an outage, kept this worker's by the
 * heartbeat hb (-1 for none), which ends before the acknowledgement.
 * (An ACL that denies the script its SET answers ERR, and is taken for
 * a refusal of the value: the small result is refused too, and the
 * worker backs off as for any refusal.)  Redis refuses a value over its
 * client-query-buffer-limit with no answer: it closes the connection
 * while the value is written.  That, AW_CUTS_MAX times in a row, is
 * taken for a refusal too; taken for an outage, the same result was
 * sent again for ever, at once (the connection came back at the first
 * try), and the job never answered.
 */

static void
aw_finish(aw_worker_t *w, const char *id, const char *raw, size_t len,
    const aw_job_t *job, const aw_result_t *res, const char *result,
    pid_t hb)
{
    int          large, cuts;
    char         key[128], ttl[32], how[AW_ERRLEN];
    char         done[AW_ID_MAX + 64], cut[128], fallback[AW_RESULT_SMALL];
    const char  *value, *why;
    redisReply  *r, *g;
    aw_conf_t   *conf;
    static const char  script[] =
        "local r = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2]) "
        "if r then redis.call('HSET', KEYS[2], ARGV[3], '1') end "
        "return r";

    conf = w->conf;

    snprintf(key, sizeof(key), "result:%s", job->job_id);
    snprintf(ttl, sizeof(ttl), "%ld", conf->result_ttl);
    snprintf(done, sizeof(done), "%s:done", id);

    fallback[0] = '\0';
    value = result;
    g = NULL;
    cuts = 0;

    for ( ;; ) {
        const char  *set[] = { "EVAL", script, "2", key, conf->errors_key,
                               value, ttl, done };

        r = aw_cmd(w, 8, set, NULL);
        why = NULL;

        if (r == NULL) {
            cuts = value == result && w->cut ? cuts + 1 : cuts;

            if (cuts < AW_CUTS_MAX) {
                value = result;
                aw_backoff(w);
                continue;
            }

            snprintf(cut, sizeof(cut), "the connection was closed %d "
                     "times while it was sent (client-query-buffer-limit)",
                     cuts);
            why = cut;

        } else if (r->type == REDIS_REPLY_STATUS) {
            freeReplyObject(r);
            break;

        } else if (r->type == REDIS_REPLY_NIL) {
            freeReplyObject(r);

            g = aw_get_result(w, key, &large);
            if (g == NULL) {
                aw_publish_large(w, id, job->job_id, hb);
                return;
            }

            if (g->type == REDIS_REPLY_STRING) {
                value = g->str;
                aw_log("notice", "job %s already has a result; this one is "
                       "dropped", job->job_id);
                break;
            }

            if (g->type == REDIS_REPLY_ERROR) {
                /* the key was given another type while the job ran */
                snprintf(how, sizeof(how), "the job ended %s%s%s%s%s",
                         aw_status_name(res->status),
                         res->code[0] ? " " : "", res->code,
                         res->message[0] ? ": " : "", res->message);
                freeReplyObject(g);
                aw_wrong_type(w, id, raw, len, key, how, hb);
                return;
            }

            /* expired since the SET: ours is stored after all */
            freeReplyObject(g);
            g = NULL;
            continue;

        } else if (value == result && aw_refused(r)) {
            why = r->str;
        }

        cuts = 0;

        if (why != NULL) {
            aw_log("error", "job %s: redis refused its result (%zu bytes): "
                   "%s; a result_not_stored error takes its place",
                   job->job_id, strlen(result), why);

            if (fallback[0] == '\0') {
                (void) aw_result_unstored(conf, job->job_id,
                                          job->session_id, res,
                                          strlen(result), why, fallback,
                                          sizeof(fallback));
            }

            if (r != NULL) {
                freeReplyObject(r);
            }

            /*
             * On a fresh connection: Redis keeps a query buffer as large
             * as the value it refused for the connection that sent it
             * (expecting another as large), which alone can keep it over
             * maxmemory
             */
            aw_disconnect(w);
            value = fallback;
            continue;
        }

        freeReplyObject(r);
        value = result;
        aw_backoff(w);
    }

    aw_publish_done(w, id, job->job_id, value,
                    g != NULL ? g->len : strlen(value), hb);

    if (g != NULL) {
        freeReplyObject(g);
    }
}


/*
 * Publish the stored result (len bytes, as GET read it: a value no
 * worker stored may hold a NUL), acknowledge and delete the entry.  The
 * heartbeat hb (-1 for none) ends first: once acknowledged, the entry
 * is no longer pending, which it would take for a takeover.
 */

static void
aw_publish_done(aw_worker_t *w, const char *id, const char *job_id,
    const char *stored, size_t len, pid_t hb)
{
    char         chan[128];
    redisReply  *r;

    snprintf(chan, sizeof(chan), "response:%s", job_id);

    {
        const char  *argv[] = { "PUBLISH", chan, stored };
        size_t       lens[] = { 7, strlen(chan), len };

        r = aw_cmd_retry(w, 3, argv, lens);
        freeReplyObject(r);
    }

    aw_heartbeat_stop(hb);
    aw_ack_delete(w, id);
}


/*
 * The entry's copy in the dead-letter stream, written once however often
 * this is run for it: a worker killed after the copy and before the
 * acknowledgement (or the result, for one delivered too often), or a
 * reply lost with the connection and the command sent again, wrote a
 * second copy at its next delivery.  One script adds it and records its
 * id under "<entry>:dead" in errors_key, or finds that record and adds
 * nothing.  The record goes when the entry is acknowledged, in the
 * same script (aw_ack_delete()).  An entry deleted from the stream
 * while pending (gone) is also recorded under
 * "<errors_key>:gone:<entry>" for result_ttl: it may be held by two
 * workers at once, its own, waiting for Redis to take the copy, and one
 * whose XAUTOCLAIM took it off the pending list meanwhile, and the
 * first done would have taken the "<entry>:dead" record away before the
 * second looked.
 */

static void
aw_dead_letter(aw_worker_t *w, const char *id, const char *raw, size_t len,
    const char *error, long deliveries, int gone)
{
    char         n[32], max[32], ttl[32], mark[AW_ID_MAX + 64];
    char         gkey[AW_ID_MAX + 600];
    size_t       lens[13];
    redisReply  *r;
    const char  *argv[13];
    int          i;
    static const char  script[] =
        "local d = redis.call('HGET', KEYS[2], ARGV[1]) "
        "if not d and ARGV[7] ~= '0' then "
        "d = redis.call('GET', KEYS[3]) end "
        "if d then return {0, d} end "
        "d = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*', "
        "'job', ARGV[3], 'entry', ARGV[4], 'error', ARGV[5], "
        "'deliveries', ARGV[6]) "
        "redis.call('HSET', KEYS[2], ARGV[1], d) "
        "if ARGV[7] ~= '0' then "
        "redis.call('SET', KEYS[3], d, 'EX', ARGV[7]) end "
        "return {1, d}";

    snprintf(n, sizeof(n), "%ld", deliveries);
    snprintf(max, sizeof(max), "%ld", w->conf->dead_letter_maxlen);
    snprintf(ttl, sizeof(ttl), "%ld", gone ? w->conf->result_ttl : 0);
    snprintf(mark, sizeof(mark), "%s:dead", id);
    snprintf(gkey, sizeof(gkey), "%s:gone:%s", w->conf->errors_key, id);

    /*
     * Capped, or what nobody reads would grow for ever; "~" lets Redis
     * trim whole nodes, cheaply, so it keeps up to ~100 more.
     */
    argv[0] = "EVAL";
    argv[1] = script;
    argv[2] = "3";
    argv[3] = w->conf->dead_letter;
    argv[4] = w->conf->errors_key;
    argv[5] = gkey;
    argv[6] = mark;
    argv[7] = max;
    argv[8] = raw ? raw : "";
    argv[9] = id;
    argv[10] = error;
    argv[11] = n;
    argv[12] = ttl;

    for (i = 0; i < 13; i++) {
        lens[i] = strlen(argv[i]);
    }
    lens[8] = raw ? len : 0;

    r = aw_cmd_record(w, 13, argv, lens);

    if (r == NULL) {
        /* only a record found is returned that large: nothing added */
        aw_log("notice", "entry %s is in %s already (its record is over "
               "%d bytes); not added again", id, w->conf->dead_letter,
               AW_RECORD_MAX);
        return;
    }

    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2
        && r->element[0]->type == REDIS_REPLY_INTEGER
        && r->element[0]->integer == 0)
    {
        aw_log("notice", "entry %s is in %s already (%s); not added again",
               id, w->conf->dead_letter,
               r->element[1]->type == REDIS_REPLY_STRING
               ? r->element[1]->str : "?");

    } else {
        aw_log("warn", "entry %s to %s: %s", id, w->conf->dead_letter,
               error);
    }

    freeReplyObject(r);
}


/*
 * Whether the entry's job had its result stored (aw_finish()) by a
 * delivery that did not get to the acknowledgement: its result may have
 * expired since (result_ttl), when the entry was left pending that long
 * (its worker killed, the host down), and the job is not run again, nor
 * answered a second time.  The entry is then acknowledged, its records
 * removed (1); 0 when it was not done.
 */

static int
aw_done(aw_worker_t *w, const char *id, const char *job_id, pid_t hb)
{
    int          done;
    char         field[AW_ID_MAX + 64];
    redisReply  *r;
    const char  *argv[] = { "HEXISTS", w->conf->errors_key, field };

    snprintf(field, sizeof(field), "%s:done", id);

    r = aw_cmd_retry(w, 3, argv, NULL);
    done = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);

    if (!done) {
        return 0;
    }

    aw_log("notice", "job %s (entry %s) was done: its result has expired "
           "(result_ttl %ld s) before the entry was acknowledged; not run "
           "again", job_id, id, w->conf->result_ttl);

    aw_heartbeat_stop(hb);
    aw_ack_delete(w, id);

    return 1;
}


/*
 * A job_id keys one result, result:<job_id>, so two entries with one
 * job_id would share it: the second's client read the first's result,
 * published to it as its own, or the first's client the second's when
 * the second stored first.  Before an entry's job runs (or is answered
 * with a rejection) the entry claims its job_id, "job:<job_id>" in
 * errors_key naming the entry (and "<entry>:claim" naming that field,
 * so the acknowledgement lets it go: aw_ack_delete()), in one script
 * with the look at the result:
 *   AW_CLAIM_OK      no result stored; the job_id was free, or the
 *                    entry's already (a delivery after a crash): run
 *   AW_CLAIM_STORED  a result stored, the entry's (its claim, or its
 *                    "<entry>:done" record): publish it again
 *   AW_CLAIM_OTHERS  a result stored, another entry's (*other is "")
 *   AW_CLAIM_BUSY    no result, another entry holds the job_id (*other
 *                    names it): it is in flight
 * A stored result that is not the entry's is neither run over nor
 * published: aw_duplicate().
 */

static int
aw_claim(aw_worker_t *w, const char *id, const char *job_id, char *other,
    size_t size)
{
    int          rc;
    char         key[128], field[AW_ID_MAX + 8], back[AW_ID_MAX + 64];
    char         done[AW_ID_MAX + 64];
    redisReply  *r;
    static const char  script[] =
        "local c = redis.call('HGET', KEYS[1], ARGV[1]) "
        "local mine = c == ARGV[2] "
        "or redis.call('HEXISTS', KEYS[1], ARGV[4]) == 1 "
        "if redis.call('TYPE', KEYS[2])['ok'] ~= 'none' then "
        "if mine then return {2, ''} end "
        "return {3, ''} end "
        "if c and c ~= ARGV[2] then return {0, c} end "
        "redis.call('HSET', KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[1]) "
        "return {1, ''}";
    const char  *argv[] = { "EVAL", script, "2", w->conf->errors_key, key,
                            field, id, back, done };

    snprintf(key, sizeof(key), "result:%s", job_id);
    snprintf(field, sizeof(field), "job:%s", job_id);
    snprintf(back, sizeof(back), "%s:claim", id);
    snprintf(done, sizeof(done), "%s:done", id);

    other[0] = '\0';

    for ( ;; ) {
        r = aw_cmd_record(w, 9, argv, NULL);

        if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2
            && r->element[0]->type == REDIS_REPLY_INTEGER
            && r->element[1]->type == REDIS_REPLY_STRING)
        {
            rc = (int) r->element[0]->integer;
            snprintf(other, size, "%s", r->element[1]->str);
            freeReplyObject(r);
            return rc;
        }

        if (r == NULL) {
            /* a claim over 64 KiB: no worker's, and not this entry's */
            snprintf(other, size, "unknown");
            return AW_CLAIM_BUSY;
        }

        /* a claim of another type (planted): refused as Redis refuses */
        aw_log("error", "job %s (entry %s): its claim: %s", job_id, id,
               r->type == REDIS_REPLY_ERROR ? r->str : "not a claim");
        freeReplyObject(r);
        aw_backoff(w);
    }
}


/*
 * An entry whose job_id is another entry's (aw_claim()): its job is not
 * run, nothing is stored under the job_id (the other's result, stored
 * or to come, is left as it is) and nothing published on its channel
 * (the other's client listens there, and takes the first result that
 * comes for its own).  It goes to the dead-letter stream with the
 * reason, "duplicate_job: ...", and is acknowledged.
 */

static void
aw_duplicate(aw_worker_t *w, const char *id, const char *raw, size_t len,
    const char *job_id, int claim, const char *other, long deliveries,
    pid_t hb)
{
    char  msg[AW_ERRLEN];

    if (claim == AW_CLAIM_BUSY) {
        snprintf(msg, sizeof(msg), "duplicate_job: job_id %s is entry "
                 "%s's, whose job is not done: not run, nothing stored "
                 "or published under it", job_id, other);
    } else {
        snprintf(msg, sizeof(msg), "duplicate_job: result:%s holds "
                 "another entry's result: not run, that result left as "
                 "it is and not published", job_id);
    }

    aw_log("warn", "job %s (entry %s): %s", job_id, id, msg);

    aw_dead_letter(w, id, raw, len, msg, deliveries, 0);
    aw_heartbeat_stop(hb);
    aw_ack_delete(w, id);
}


/*
 * An entry deleted from the stream (XDEL, XTRIM) while pending, or
 * while its job ran, and left by its worker: its job is lost with its
 * script.  The dead-letter stream says so, with the last record of a
 * delivery that started (errors_key), and when that delivery kept the
 * job's ids, the client waiting for it gets an entry_deleted error
 * result, stored and published as any (aw_finish()): the job is not
 * run again.  One whose result is stored after all (its worker died
 * after storing it) is only published again.  The entry is then done
 * with: acknowledged, its records removed.  deliveries is 0 when Redis
 * no longer counts them (XAUTOCLAIM or a heartbeat has dropped the
 * entry).
 */

static void
aw_gone(aw_worker_t *w, const char *id, long deliveries)
{
    int           large, claim;
    char          last[AW_ERRLEN], jkey[AW_ID_MAX + 64], key[128];
    char          other[AW_ID_MAX + 64];
    char         *json, small[AW_RESULT_SMALL];
    aw_job_t      job;
    redisReply   *r, *g;
    aw_result_t   res;
    const char   *result;
    const char   *note[] = { "HGET", w->conf->errors_key, id };
    const char   *ids[] = { "HGET", w->conf->errors_key, jkey };

    memset(&job, 0, sizeof(job));
    memset(&res, 0, sizeof(res));
    snprintf(jkey, sizeof(jkey), "%s:job", id);

    /* apart, each bounded: a record too large to read hides no other */
    r = aw_cmd_record(w, 3, note, NULL);

    if (r == NULL) {
        snprintf(last, sizeof(last), "the entry was deleted from the "
                 "stream (XDEL, XTRIM) before its job was done; last: "
                 "unknown (the record is over %d bytes)", AW_RECORD_MAX);

    } else {
        snprintf(last, sizeof(last), "the entry was deleted from the "
                 "stream (XDEL, XTRIM) before its job was done; last: %s",
                 r->type == REDIS_REPLY_STRING ? r->str
                                               : "no delivery started");
        freeReplyObject(r);
    }

    r = aw_cmd_record(w, 3, ids, NULL);

    if (r != NULL) {
        if (r->type == REDIS_REPLY_STRING) {
            aw_job_ids_read(r->str, r->len, &job);
        }

        freeReplyObject(r);
    }

    while (job.job_id[0] != '\0') {
        snprintf(key, sizeof(key), "result:%s", job.job_id);
        g = aw_get_result(w, key, &large);
        if (g == NULL) {
            aw_publish_large(w, id, job.job_id, -1);
            return;
        }

        if (g->type != REDIS_REPLY_STRING && aw_done(w, id, job.job_id, -1))
        {
            freeReplyObject(g);
            return;
        }

        /* another entry's result, or job_id, is not answered here */
        claim = (g->type == REDIS_REPLY_ERROR)
                ? AW_CLAIM_OK
                : aw_claim(w, id, job.job_id, other, sizeof(other));

        if (claim == AW_CLAIM_STORED && g->type == REDIS_REPLY_STRING) {
            aw_log("notice", "job %s (entry %s, deleted) already has a "
                   "result", job.job_id, id);
            aw_publish_done(w, id, job.job_id, g->str, g->len, -1);
            freeReplyObject(g);
            return;
        }

        large = (g->type == REDIS_REPLY_STRING);
        freeReplyObject(g);

        if (claim == AW_CLAIM_BUSY || claim == AW_CLAIM_OTHERS) {
            aw_duplicate(w, id, NULL, 0, job.job_id, claim, other,
                         deliveries, -1);
            return;
        }

        if (claim == AW_CLAIM_OK && !large) {
            break;
        }
    }

    aw_dead_letter(w, id, NULL, 0, last, deliveries, 1);

    if (job.job_id[0] == '\0') {
        aw_ack_delete(w, id);
        return;
    }

    aw_result_fail(&res, AW_ST_ERROR, "entry_deleted", "%s", last);

    result = aw_result_text(w->conf, job.job_id, job.session_id, &res,
                            &json, small);
    if (json == NULL) {
        aw_log("alert", "job %s: out of memory while its result was "
               "built; a result_not_stored error takes its place",
               job.job_id);
    }

    aw_log("info", "job %s (entry %s): %s %s", job.job_id, id,
           aw_status_name(res.status), res.code);

    /* a gone entry's acknowledgement changes nothing; the records go */
    aw_finish(w, id, NULL, 0, &job, &res, result, -1);

    free(json);
    aw_result_free(&res);
}


/*
 * An entry XAUTOCLAIM has dropped from the pending list, deleted from
 * the stream, is held in <errors_key>:held until it is recorded
 * (aw_gone()), as a heartbeat holds one (aw_heartbeat()): this worker
 * killed meanwhile (while Redis refuses the record) leaves it for
 * another to take.  The script runs under maxmemory (allow-oom: one
 * small member), when XAUTOCLAIM, which Redis runs then, drops such
 * entries and the record waits; a refusal of another kind (READONLY,
 * where XAUTOCLAIM is refused too) leaves it this worker's alone, as
 * it was.
 */

static void
aw_hold(aw_worker_t *w, const char *id)
{
    char         held[AW_ID_MAX + 600], vis[32];
    redisReply  *r;
    static const char  script[] =
        "#!lua flags=allow-oom\n"
        "local t = redis.call('TIME') "
        "redis.call('ZADD', KEYS[1], 'NX', t[1] * 1000 "
        "+ math.floor(t[2] / 1000) + tonumber(ARGV[2]), ARGV[1]) "
        "return 1";
    const char  *argv[] = { "EVAL", script, "1", held, id, vis };

    snprintf(held, sizeof(held), "%s:held", w->conf->errors_key);
    snprintf(vis, sizeof(vis), "%ld", w->conf->visibility_ms);

    r = aw_cmd(w, 6, argv, NULL);
    if (r != NULL) {
        freeReplyObject(r);
    }
}


/*
 * An entry deleted from the stream while its job ran, held in
 * <errors_key>:held by a worker that stopped renewing it (aw_heartbeat())
 * past the visibility timeout: it is taken as from a pending list, the
 * time renewed for this worker in the same script, and recorded
 * (aw_gone()).  A refusal (maxmemory refuses the ZADD) leaves it for a
 * later look, and reading on.
 */

static void
aw_held(aw_worker_t *w)
{
    char         held[AW_ID_MAX + 600], vis[32], id[64];
    redisReply  *r;
    static const char  script[] =
        "local t = redis.call('TIME') "
        "local now = t[1] * 1000 + math.floor(t[2] / 1000) "
        "local e = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, "
        "'LIMIT', 0, 1) "
        "if #e == 0 then return false end "
        "redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), e[1]) "
        "return e[1]";
    const char  *argv[] = { "EVAL", script, "1", held, vis };

    snprintf(held, sizeof(held), "%s:held", w->conf->errors_key);
    snprintf(vis, sizeof(vis), "%ld", w->conf->visibility_ms);

    /* a member too large to read is no entry id: left for the next look */
    r = aw_cmd_max(w, 5, argv, NULL, AW_RECORD_MAX, NULL);
    if (r == NULL) {
        return;
    }

    if (r->type != REDIS_REPLY_STRING || r->len >= sizeof(id)) {
        freeReplyObject(r);
        return;
    }

    snprintf(id, sizeof(id), "%s", r->str);
    freeReplyObject(r);

    aw_log("notice", "took entry %s from %s: deleted from the stream "
           "while its job ran, its worker gone for over %ld ms", id, held,
           w->conf->visibility_ms);

    aw_gone(w, id, 0);
}


static void
aw_handle(aw_worker_t *w, const char *id, const char *raw, size_t len,
    int state)
{
    int           ok, over, large, claim;
    char          code[64], err[AW_ERRLEN], last[AW_ERRLEN], note[256];
    char          ids[2 * AW_ID_MAX + 2], jkey[AW_ID_MAX + 64];
    char          other[AW_ID_MAX + 64];
    char         *json, *data, key[128], small[AW_RESULT_SMALL];
    long          deliveries, t0;
    pid_t         hb;
    size_t        data_len;
    aw_job_t      job;
    aw_conf_t    *conf;
    redisReply   *r;
    aw_result_t   res;
    const char   *result;

    conf = w->conf;
    memset(&res, 0, sizeof(res));
    memset(&job, 0, sizeof(job));
    hb = -1;
    t0 = aw_now_ms();
    ok = 0;

    /*
     * The delivery count comes before the parse: an envelope whose parse
     * gets the worker killed (its tree over the unit's MemoryMax=, a
     * crash) would otherwise kill it at every delivery, never to reach
     * the dead-letter stream, and wedge the queue.
     */
    deliveries = aw_deliveries(w, id);
    over = deliveries > conf->max_deliveries;

    /*
     * One deleted from the stream gets no heartbeat: its claim would
     * take it off the pending list (Redis 7 drops a deleted entry it is
     * asked to claim), where it is the only trace of its job until the
     * dead-letter stream takes the record, which Redis may refuse for a
     * while: a worker killed then left it nowhere.  Pending, it is found
     * by this consumer's next start, or taken over by another worker
     * past the visibility timeout, and recorded once
     * (aw_dead_letter()).
     */
    if (state == AW_ENTRY_GONE) {
        aw_gone(w, id, deliveries);
        aw_job_free(&job);
        return;
    }

    /*
     * Any other entry is kept this worker's from now until it is
     * acknowledged, whatever ends it: a write Redis refuses for a while
     * (maxmemory) holds the worker here before the job runs (the
     * delivery record), or with no job to run (a rejection, the
     * dead-letter stream), and an entry left idle meanwhile would be
     * taken over and run, or dead-lettered, a second time.
     */
    hb = aw_heartbeat_start(w, id);

    if (state == AW_ENTRY_LARGE) {
        /* no job_id to answer to: not read at all */
        snprintf(code, sizeof(code), "bad_envelope");
        snprintf(err, sizeof(err), "the entry is over %zu bytes (4 times "
                 "max_envelope_bytes and 64 KiB): not read",
                 AW_ENTRY_MAX(conf));

    } else if (state == AW_ENTRY_TWICE) {
        /* which is the job?  Neither run, nor answered */
        snprintf(code, sizeof(code), "bad_envelope");
        snprintf(err, sizeof(err), "the entry has more than one \"job\" "
                 "field");

    } else if (raw == NULL) {
        snprintf(code, sizeof(code), "bad_envelope");
        snprintf(err, sizeof(err), "the entry has no \"job\" field");

    } else if (over) {
        /* not parsed: its ids by the scan, which builds nothing */
        aw_job_scan_ids(raw, len, &job);

    } else {
        ok = aw_job_parse(conf, w->policy, raw, len, &job, code,
                          sizeof(code), err, sizeof(err)) == 0;
    }

    if (over && raw != NULL) {
        const char  *argv[] = { "HGET", conf->errors_key, id };

        r = aw_cmd_record(w, 3, argv, NULL);
        if (r == NULL) {
            snprintf(last, sizeof(last), "delivered %ld times without a "
                     "result; last: unknown (the record is over %d bytes)",
                     deliveries, AW_RECORD_MAX);

        } else {
            snprintf(last, sizeof(last), "delivered %ld times without a "
                     "result; last: %s", deliveries,
                     r->type == REDIS_REPLY_STRING ? r->str : "unknown");
            freeReplyObject(r);
        }

    } else {
        snprintf(last, sizeof(last), "%s: %s", code, err);
    }

    if (job.job_id[0] == '\0') {
        /* nothing to key a result on: the dead-letter stream says why */
        aw_dead_letter(w, id, raw, len, last, deliveries, 0);
        aw_heartbeat_stop(hb);
        aw_ack_delete(w, id);
        aw_job_free(&job);
        return;
    }

    /*
     * A result already stored: publish it again, never run twice.  What
     * is published is what GET read: nothing is written here (a SET of
     * an empty value stood in for it, and stored "" when the result
     * expired between the two commands).  Looked for first: a job with
     * a result is done, however often its entry was delivered (its
     * worker stored the result and died before the acknowledgement),
     * and not one for the dead-letter stream.
     */

    /*
     * Only the entry's own result, though: one of another entry's with
     * the same job_id (or that entry itself, in flight) is not the
     * job's, and the job is not run over it (aw_claim()).
     */

    snprintf(key, sizeof(key), "result:%s", job.job_id);

    for ( ;; ) {
        r = aw_get_result(w, key, &large);

        if (r == NULL) {
            aw_publish_large(w, id, job.job_id, hb);
            aw_job_free(&job);
            return;
        }

        if (r->type == REDIS_REPLY_ERROR) {
            freeReplyObject(r);
            aw_wrong_type(w, id, raw, len, key, "the job was not run", hb);
            aw_job_free(&job);
            return;
        }

        if (r->type != REDIS_REPLY_STRING && aw_done(w, id, job.job_id, hb))
        {
            freeReplyObject(r);
            aw_job_free(&job);
            return;
        }

        claim = aw_claim(w, id, job.job_id, other, sizeof(other));

        if (claim == AW_CLAIM_STORED && r->type == REDIS_REPLY_STRING) {
            aw_log("notice", "job %s already has a result", job.job_id);
            aw_publish_done(w, id, job.job_id, r->str, r->len, hb);
            freeReplyObject(r);
            aw_job_free(&job);
            return;
        }

        large = (r->type == REDIS_REPLY_STRING);
        freeReplyObject(r);

        if (claim == AW_CLAIM_BUSY || claim == AW_CLAIM_OTHERS) {
            aw_duplicate(w, id, raw, len, job.job_id, claim, other,
                         deliveries, hb);
            aw_job_free(&job);
            return;
        }

        /* the result came, or went, between the two looks: again */
        if (claim == AW_CLAIM_OK && !large) {
            break;
        }
    }

    if (aw_interrupted(w, id, job.job_id, deliveries, &res)) {
        goto done;
    }

    if (over) {
        aw_dead_letter(w, id, raw, len, last, deliveries, 0);
        aw_result_fail(&res, AW_ST_ERROR, "dead_letter", "%s", last);
        goto done;
    }

    if (!ok) {
        aw_result_fail(&res, AW_ST_REJECTED, code, "%s", err);
        aw_log("notice", "job %s rejected: %s", job.job_id, err);
        goto done;
    }

    snprintf(note, sizeof(note), "delivery %ld to consumer %s started and "
             "did not finish (the worker died or lost Redis)", deliveries,
             conf->consumer);

    /*
     * With the job's ids: an entry deleted from the stream while the
     * job runs takes them with it, and whoever finds it left by a dead
     * worker answers the client with them (aw_gone())
     */
    snprintf(ids, sizeof(ids), "%s %s", job.job_id, job.session_id);
    snprintf(jkey, sizeof(jkey), "%s:job", id);
    {
        const char  *argv[] = { "HSET", conf->errors_key, id, note, jkey,
                                ids };

        r = aw_cmd_retry(w, 6, argv, NULL);
        freeReplyObject(r);
    }

    aw_log("info", "job %s (entry %s, delivery %ld): %zu input(s)",
           job.job_id, id, deliveries, job.ninputs);

    data = aw_fetch_once(w, id, &job, deliveries, &data_len, &res);
    res.timing.fetch = aw_now_ms() - t0;

    if (data != NULL) {
        aw_sandbox_run(conf, &job, data, data_len, &res);
        free(data);
    }

    if (res.lost) {
        /* as a crash leaves it: no result, pending for the next start */
        aw_log("alert", "job %s (entry %s): no result, left pending for "
               "its next delivery", job.job_id, id);
        aw_heartbeat_stop(hb);
        w->lost = 1;
        aw_result_free(&res);
        aw_job_free(&job);
        return;
    }

    /* the heartbeat goes on until the result is stored (aw_finish()) */

done:

    res.timing.total = aw_now_ms() - t0;

    result = aw_result_text(conf, job.job_id, job.session_id, &res, &json,
                            small);
    if (json == NULL) {
        aw_log("alert", "job %s: out of memory while its result was built "
               "(stdout %zu bytes, stderr %zu bytes); a result_not_stored "
               "error takes its place", job.job_id, res.out_len,
               res.err_len);
    }

    /* in the result now; what aw_finish() reads of them is their lengths */
    free(res.out);
    free(res.err);
    res.out = NULL;
    res.err = NULL;

    aw_log("info", "job %s: %s%s%s in %ld ms", job.job_id,
           aw_status_name(res.status), res.code[0] ? " " : "", res.code,
           res.timing.total);

    aw_finish(w, id, raw, len, &job, &res, result, hb);

    free(json);
    aw_result_free(&res);
    aw_job_free(&job);
}


/*
 * GET and HEAD ask; any other method (a POST that opens a pull request,
 * one that posts a comment) may change something upstream each time
 * it is sent
 */

static int
aw_idempotent(const char *method)
{
    return strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
}


/*
 * A job's inputs, fetched so that one that is not idempotent is sent at
 * most once per job, however often its entry is delivered.  Delivery is
 * at least once: a worker killed after such an input and before the
 * result left the entry pending, and the next delivery sent it again,
 * silently (a second pull request), up to max_deliveries times.
 *
 * The inputs go in runs, one fetch each (aw_fetch()): each input that
 * is not idempotent a run of its own, the GET and HEAD inputs between
 * them runs of theirs.  Before such an input the worker records in
 * errors_key, under "<entry>:sent", that it is about to send it, and
 * sends nothing until Redis has taken the record (aw_cmd_retry()).
 * Once its answer is in, one script keeps it under
 * "<entry>:answer:<input index>", its member of data.json as it is
 * ("name":{...}), and removes "<entry>:sent".  A later delivery that
 * finds "<entry>:sent" (sent, no answer kept) does not fetch again
 * (aw_interrupted()); one that finds an answer takes it for its input
 * instead of sending it again.  GET and HEAD inputs are fetched at
 * every delivery, as they always were.  The records go with the
 * entry's others when it is acknowledged (aw_ack_delete()).  data.json
 * is the runs' objects joined: each is "{...}" with at least one
 * member.
 */

static char *
aw_fetch_once(aw_worker_t *w, const char *id, const aw_job_t *job,
    long deliveries, size_t *len, aw_result_t *res)
{
    char         sfield[AW_ID_MAX + 64], afield[AW_ID_MAX + 64];
    char         note[AW_ERRLEN];
    char        *data, *part;
    size_t       i, j, total, plen, nl, klens[7];
    aw_job_t     run;
    redisReply  *r;
    static const char  script[] =
        "redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) "
        "redis.call('HDEL', KEYS[1], ARGV[3]) "
        "return 1";
    const char  *get[] = { "HGET", w->conf->errors_key, afield };
    const char  *sent[] = { "HSET", w->conf->errors_key, sfield, note };
    const char  *keep[] = { "EVAL", script, "1", w->conf->errors_key,
                            afield, NULL, sfield };

    for (i = 0; i < job->ninputs; i++) {
        if (!aw_idempotent(job->inputs[i].method)) {
            break;
        }
    }

    if (i == job->ninputs) {
        return aw_fetch(w->conf, job, len, res);
    }

    snprintf(sfield, sizeof(sfield), "%s:sent", id);
    data = NULL;
    total = 0;

    for (i = 0; i < job->ninputs; i = j) {
        j = i + 1;

        if (aw_idempotent(job->inputs[i].method)) {
            while (j < job->ninputs && aw_idempotent(job->inputs[j].method)) {
                j++;
            }

        } else {
            snprintf(afield, sizeof(afield), "%s:answer:%zu", id, i);

            /* sent by an earlier delivery, its answer kept */
            r = aw_cmd_retry_max(w, 3, get, NULL, AW_ANSWER_MAX(w->conf));
            if (r == NULL || r->type == REDIS_REPLY_STRING) {
                nl = strlen(job->inputs[i].name);

                if (r == NULL || r->len < nl + 4 || r->str[0] != '"'
                    || memcmp(r->str + 1, job->inputs[i].name, nl) != 0
                    || r->str[nl + 1] != '"' || r->str[nl + 2] != ':')
                {
                    freeReplyObject(r);
                    aw_result_fail(res, AW_ST_ERROR, "interrupted",
                                   "not run again (delivery %ld): the "
                                   "answer an earlier delivery kept for "
                                   "input %zu of %zu, \"%s\" (%s), is "
                                   "unreadable; whether it was sent is "
                                   "unknown: check its upstream before "
                                   "asking again", deliveries, i + 1,
                                   job->ninputs, job->inputs[i].name,
                                   job->inputs[i].method);
                    goto fail;
                }

                if (aw_join(&data, &total, r->str, r->len) != 0) {
                    freeReplyObject(r);
                    goto nomem;
                }

                freeReplyObject(r);
                continue;
            }

            freeReplyObject(r);

            snprintf(note, sizeof(note), "delivery %ld to consumer %.128s "
                     "began sending input %zu of %zu, \"%s\" (%s), and did "
                     "not finish", deliveries, w->conf->consumer, i + 1,
                     job->ninputs, job->inputs[i].name,
                     job->inputs[i].method);

            r = aw_cmd_retry(w, 4, sent, NULL);
            freeReplyObject(r);
        }

        run = *job;
        run.inputs = job->inputs + i;
        run.ninputs = j - i;

        part = aw_fetch(w->conf, &run, &plen, res);
        if (part == NULL) {
            goto fail;
        }

        if (aw_join(&data, &total, part + 1, plen - 2) != 0) {
            free(part);
            goto nomem;
        }

        if (!aw_idempotent(job->inputs[i].method)) {
            /* its answer kept, the mark of it sent removed: one script */
            keep[5] = part + 1;
            klens[0] = 4;
            klens[1] = sizeof(script) - 1;
            klens[2] = 1;
            klens[3] = strlen(w->conf->errors_key);
            klens[4] = strlen(afield);
            klens[5] = plen - 2;
            klens[6] = strlen(sfield);

            r = aw_cmd_retry(w, 7, keep, klens);
            freeReplyObject(r);
        }

        free(part);
    }

    *len = total;

    return data;

nomem:

    aw_result_fail(res, AW_ST_ERROR, "internal", "out of memory while the "
                   "inputs were joined");

fail:

    free(data);

    return NULL;
}


/* a member ("name":{...}) added to the object *data (NULL: none yet) */

static int
aw_join(char **data, size_t *total, const char *m, size_t mlen)
{
    char  *nd;

    nd = realloc(*data, (*data != NULL ? *total : 1) + mlen + 2);
    if (nd == NULL) {
        return -1;
    }

    if (*data == NULL) {
        nd[0] = '{';
        *total = 1;

    } else {
        /* its "}" becomes "," */
        nd[*total - 1] = ',';
    }

    memcpy(nd + *total, m, mlen);
    *total += mlen;
    nd[(*total)++] = '}';
    nd[*total] = '\0';
    *data = nd;

    return 0;
}


/*
 * An earlier delivery of the entry began sending an input that is not
 * idempotent (aw_fetch_once()) and stored no result: whether the
 * request reached its upstream, and what it did there, is unknown, and
 * sending it again might do it twice.  The job ends with an error
 * result that says so, stored, published and acknowledged as any, and
 * is not run again.  A record too large to read (written by something
 * else) counts as found.
 */

static int
aw_interrupted(aw_worker_t *w, const char *id, const char *job_id,
    long deliveries, aw_result_t *res)
{
    char         field[AW_ID_MAX + 64];
    redisReply  *r;
    const char  *argv[] = { "HGET", w->conf->errors_key, field };

    snprintf(field, sizeof(field), "%s:sent", id);

    r = aw_cmd_record(w, 3, argv, NULL);
    if (r != NULL && r->type != REDIS_REPLY_STRING) {
        freeReplyObject(r);
        return 0;
    }

    aw_result_fail(res, AW_ST_ERROR, "interrupted", "not run again "
                   "(delivery %ld): %.300s; that request is not sent twice, "
                   "and whether it reached its upstream is unknown: check "
                   "there before asking again", deliveries,
                   r != NULL ? r->str : "a record of an input sent, over "
                   "65536 bytes");

    aw_log("notice", "job %s (entry %s) was interrupted while it sent an "
           "input that is not idempotent; not run again", job_id, id);

    freeReplyObject(r);

    return 1;
}


static void
aw_usage(void)
{
    fprintf(stderr, "usage: airlock-worker -c FILE [-t]\n"
            "  -c FILE   configuration (see conf/worker.conf)\n"
            "  -t        check the configuration and the sandbox, exit\n");
}


int
main(int argc, char **argv)
{
    int               opt, test, state, rc, status;
    char              err[AW_ERRLEN], id[64], *job;
    const char       *file;
    size_t            joblen;
    aw_conf_t         conf;
    al_error_t        aerr;
    aw_worker_t       w;
    struct sigaction  sa;

    file = NULL;
    test = 0;

    while ((opt = getopt(argc, argv, "c:th")) != -1) {
        switch (opt) {
        case 'c':
            file = optarg;
            break;
        case 't':
            test = 1;
            break;
        default:
            aw_usage();
            return 2;
        }
    }

    if (file == NULL) {
        aw_usage();
        return 2;
    }

    aw_conf_defaults(&conf);

    if (aw_conf_load(&conf, file, err, sizeof(err)) != 0) {
        aw_log("emerg", "%s", err);
        return 1;
    }

    /*
     * An image root before its first boot has no machine id yet: -t says
     * so and passes, the worker itself refuses to guess a name.
     */
    if (aw_conf_consumer(&conf, err, sizeof(err)) != 0) {
        aw_log(test ? "warn" : "emerg", "%s: %s", file, err);
        if (!test) {
            aw_conf_free(&conf);
            return 1;
        }
    }

    /* so is a Redis password file, which the first boot writes */
    rc = aw_conf_password(&conf, err, sizeof(err));
    if (rc != 0) {
        aw_log(test && rc == 1 ? "warn" : "emerg", "%s: %s", file, err);
        if (!test || rc != 1) {
            aw_conf_free(&conf);
            return 1;
        }
    }

    memset(&w, 0, sizeof(w));
    w.conf = &conf;
    w.backoff_ms = 100;
    snprintf(w.claim_cursor, sizeof(w.claim_cursor), "0-0");

    /* route names and path templates only: no keyring, no secret */
    w.policy = al_policy_load(conf.policy, NULL, &aerr);
    if (w.policy == NULL) {
        al_error_format(&aerr, err, sizeof(err));
        aw_log("emerg", "policy: %s", err);
        return 1;
    }

    if (aw_sandbox_check(&conf, err, sizeof(err)) != 0) {
        aw_log("emerg", "sandbox: %s", err);
        al_policy_free(w.policy);
        aw_conf_free(&conf);
        return 1;
    }

    /*
     * Started as another user than root, the worker stays it, and so do
     * its fetches, which the proxy knows by their uid: that user must
     * be the policy's worker client
     */
    if (getuid() != 0 && (getuid() != conf.uid || geteuid() != conf.uid)) {
        aw_log("emerg", "started as uid %d, neither root nor user %s "
               "(uid %d): its fetches would reach the proxy as uid %d",
               (int) getuid(), conf.user, (int) conf.uid, (int) getuid());
        al_policy_free(w.policy);
        aw_conf_free(&conf);
        return 1;
    }

    aw_log("notice", "backend %s%s%s, rootfs %s, fetch as %s through %s",
           aw_backend_name(conf.backend),
           conf.backend == AW_BACKEND_GVISOR ? " platform " : "",
           conf.backend == AW_BACKEND_GVISOR ? conf.platform : "",
           conf.rootfs, conf.user, conf.proxy_socket);

    if (test) {
        printf("airlock-worker: %s is fine, consumer %s\n", file,
               conf.consumer ? conf.consumer : "(none yet)");
        al_policy_free(w.policy);
        aw_conf_free(&conf);
        return 0;
    }

    /* bwrap: a host uid of this worker's own for its jobs */
    if (aw_sandbox_lease(&conf, err, sizeof(err)) != 0) {
        aw_log("emerg", "sandbox: %s", err);
        al_policy_free(w.policy);
        aw_conf_free(&conf);
        return 1;
    }

    if (conf.backend == AW_BACKEND_BWRAP) {
        aw_log("notice", "jobs run as host uid %ld%s, uid %ld inside",
               conf.host_uid, getuid() != 0 ? " (the worker's own: it was "
               "not started as root)" : "", conf.sandbox_uid);
    }

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = aw_on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);

    curl_global_init(CURL_GLOBAL_DEFAULT);

    aw_sandbox_cleanup_stale(&conf);

    /*
     * From here on the root part is the launcher's alone (aw_priv.c):
     * this process, which reads Redis, the envelopes and the sandboxes'
     * output, runs as the worker's user with no capability
     */
    if (aw_priv_split(&conf, err, sizeof(err)) != 0) {
        aw_log("emerg", "%s", err);
        return 1;
    }

    status = 0;

    while (!aw_stop) {
        job = NULL;
        state = 0;

        /* a launcher gone ends the worker before its next entry */
        if (aw_priv_watch() != 0) {
            status = 1;
            break;
        }

        switch (aw_next_entry(&w, id, sizeof(id), &job, &joblen, &state)) {
        case 1:
            w.backoff_ms = 100;
            aw_handle(&w, id, job, joblen, state);
            break;

        case -1:
            aw_backoff(&w);
            break;

        default:
            /* Redis answered: the next outage backs off from the start */
            w.backoff_ms = 100;
            break;
        }

        free(job);

        /* and one found gone during the job, its entry left pending */
        if (w.lost) {
            status = 1;
            break;
        }
    }

    aw_log("notice", "stopping%s", status ? " (exit 1): the launcher or "
           "the fetch spawner is gone" : "");

    aw_disconnect(&w);
    curl_global_cleanup();
    al_policy_free(w.policy);
    aw_conf_free(&conf);

    return status;
}
