/*
 * What the agent keeps in Redis: sessions, and the sandbox jobs it hands
 * to the workers.
 *
 *   airlock:session:<id>        {"id", "owner", "messages": [...],
 *                               "runs": [...]} with a TTL, renewed on
 *                               every question; "owner" is "uid:N" or
 *                               "api:NAME" (agent.h), none in a session
 *                               stored before owners were
 *   airlock:session:<id>:version  "<n> <run>": the session's version,
 *                               n its stores, run the run that made the
 *                               last; written with it, with its TTL
 *                               (ag_session_store())
 *   airlock:session:!key        the session key, 64 of 0-9 a-f, no TTL:
 *                               the MAC key of the ids the agent makes
 *                               (ag_session_new()), the first agent's
 *   airlock:session:<id>:lock   "<run> <owner>": the run that holds the
 *                               session, while it runs, and who asked
 *                               (SET NX EX, renewed by its keeper); only
 *                               the run it names stores the session
 *   airlock:session:<id>:lost:<run>  when (ms, Redis's clock) a look
 *                               from another session first found the
 *                               lock not <run>'s while it awaited a
 *                               job; deleted by its keeper when it
 *                               takes the lock again (ag_jobs_orphan())
 *   airlock:quota:sessions:<owner>  the owner's sessions, each id
 *                               scored by when it expires (ms, Redis's
 *                               clock), and
 *   airlock:quota:bytes:<owner>  each one's size as counted (its text and
 *                               AG_QUOTA_OVERHEAD), and "!total", their
 *                               sum: written by the script that stores
 *                               the session, both kept as long as the
 *                               owner's last session (PEXPIREAT); the
 *                               expired ones dropped at each look
 *                               (ag_quota_check(), --max-user-bytes)
 *   airlock:quota:tokens:<owner>  the tokens the model calls of the
 *                               owner's questions used this UTC day, as
 *                               the gateway reported them (INCRBY),
 *                               expiring at its end (PEXPIREAT, Redis's
 *                               clock: ag_tokens_charge(),
 *                               --max-user-tokens)
 *   airlock:quota:tokens:!held:<owner>  the model calls in flight held
 *                               against that count, "<run> <tokens>",
 *                               each scored by when it expires (ms,
 *                               Redis's clock; ag_tokens_hold())
 *   airlock:quota:tokens:!minute:<owner>  the tokens of the owner's
 *                               questions this UTC minute, expiring at
 *                               its end (--max-user-tokens-per-minute)
 *   airlock:quota:denials:<owner>  the proxy denials the owner's
 *                               questions caused within the window, each
 *                               scored by when (ms, Redis's clock), the
 *                               older dropped at each look, the key
 *                               expiring a window after the last
 *                               (ag_denials_charge(), --max-user-denials)
 *   airlock:jobs                the job stream (group airlock-workers)
 *   airlock:jobs:awaited        entry id -> "<session> <run> <job>
 *                               <asker>", for each job a run awaits:
 *                               one whose run is gone is withdrawn by
 *                               its asker's next question, or the next
 *                               in its session (ag_jobs_sweep())
 *   result:<job> / response:<job>   a job's result, stored and published
 *                               by the worker (docs/jobs.md)
 *
 * A job is awaited without a race: SUBSCRIBE response:<job> before the
 * job is even added, then GET result:<job> (a result stored before the
 * subscription took effect), then wait for the message.  A connection
 * Redis closes (a restart) is opened again, and those two steps taken
 * again, until the run's time is up.  A job the run stops waiting for is
 * deleted from the stream, so no worker runs it afterwards.  A result is
 * read up to a bound the run gives, never whole (ar_reply_read(): hiredis
 * buffers a reply of any size, and Redis takes values of 512 MB).
 */

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <poll.h>
#include <arpa/inet.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/wait.h>

#include <sodium.h>

#include "agent.h"
#include "ar_auth.h"
#include "ar_reply.h"


#define AG_STREAM   "airlock:jobs"
#define AG_GROUP    "airlock-workers"
#define AG_AWAITED  "airlock:jobs:awaited"
#define AG_SWEEP_ROUNDS  64     /* HSCAN rounds of a sweep, at most */
#define AG_FIND_ROUNDS   4096   /* HSCAN rounds of a look for one job's
                                   record, at most (of 1024 each) */
#define AG_REDIS_PORT    6379   /* "[IPV6]" without a port */
#define AG_SESSION_KEY   "airlock:session:!key"  /* ag_session_key() */
#define AG_SESSION_KEY_LEN  32  /* bytes */
#define AG_QUOTA_OVERHEAD   1024    /* bytes a session is counted
                                   over its text: its keys, its version,
                                   its lock, its quota entries */
#define AG_LOST_GRACE_MS  (AG_LOCK_TTL * 1000)  /* a lock not its run's,
                                   another session's, this long: the
                                   run is gone (ag_jobs_orphan()) */
#define AG_LOST_MARK_MS   (AG_LOST_GRACE_MS * 10)  /* a mark's lease */
#define AG_TOKENS_CAP  (1LL << 50)  /* an owner's day's tokens, counted
                                       at most: exact in Lua's numbers */


/*
 * A quota script's first part: zk, hk its owner's keys (the sessions by
 * expiry, their sizes), now Redis's time in ms after it, and each
 * session expired by then dropped from both, its size from "!total".
 * Redis's clock is the one that expires the sessions themselves.
 */

#define AG_QUOTA_PRUNE                                                       \
    "local tm = redis.call('time') "                                         \
    "local now = tonumber(tm[1]) * 1000 "                                    \
    "+ math.floor(tonumber(tm[2]) / 1000) "                                  \
    "local gone = 0 "                                                        \
    "while true do "                                                         \
    "local g = redis.call('zrangebyscore', zk, '-inf', now, "                \
    "'limit', 0, 1024) "                                                     \
    "if #g == 0 then break end "                                             \
    "for i = 1, #g do "                                                      \
    "gone = gone + (tonumber(redis.call('hget', hk, g[i])) or 0) "           \
    "redis.call('hdel', hk, g[i]) "                                          \
    "redis.call('zrem', zk, g[i]) end end "                                  \
    "if gone > 0 then redis.call('hincrby', hk, '!total', -gone) end "


/*
 * The tokens scripts' keys (ag_tokens_charge(), ag_tokens_hold()): k an
 * owner's count a day, h the calls held against it, m its count a
 * minute (no owner starts with '!', so neither is an owner's count),
 * each checked for its type, used and mused the counts; then now (ms),
 * day (the next 00:00 UTC, ms) and minute (the next minute's start, ms),
 * by Redis's clock.
 */

#define AG_TOKENS_HOLDS   "airlock:quota:tokens:!held:"
#define AG_TOKENS_MINUTE  "airlock:quota:tokens:!minute:"

#define AG_TOKENS_TYPES                                                      \
    "local k, h, m = KEYS[1], KEYS[2], KEYS[3] "                             \
    "local t = redis.call('type', k)['ok'] "                                 \
    "local ht = redis.call('type', h)['ok'] "                                \
    "local mt = redis.call('type', m)['ok'] "                                \
    "local used, mused = 0, 0 "                                              \
    "if t == 'string' then "                                                 \
    "used = tonumber(redis.call('get', k)) "                                 \
    "elseif t ~= 'none' then used = nil end "                                \
    "if mt == 'string' then "                                                \
    "mused = tonumber(redis.call('get', m)) "                                \
    "elseif mt ~= 'none' then mused = nil end "                              \
    "if used == nil or mused == nil "                                        \
    "or (ht ~= 'zset' and ht ~= 'none') then "                               \
    "return redis.error_reply('WRONGTYPE the quota keys hold no count') "    \
    "end "

#define AG_TOKENS_CLOCK                                                      \
    "local tm = redis.call('time') "                                         \
    "local now = tonumber(tm[1]) * 1000 "                                    \
    "+ math.floor(tonumber(tm[2]) / 1000) "                                  \
    "local day = (math.floor(tonumber(tm[1]) / 86400) + 1) * 86400000 "      \
    "local minute = (math.floor(tonumber(tm[1]) / 60) + 1) * 60000 "


/* a string of a question's that may be cut for the session to fit */
typedef struct {
    json_t          *obj;
    const char      *key;
    size_t           size;                  /* as JSON, quotes and all */
} ag_string_t;


static int ag_redis_refused(const redisReply *r);
static int ag_redis_answer(redisContext *c, const redisReply *r,
    size_t min, size_t max, const char *what, const char *owner, char *err,
    size_t size);
static const char *ag_redis_why(const redisReply *r, const char *other);
static redisContext *ag_job_subscribe(ag_run_t *run, const char *job_id,
    char *err, size_t size);
static redisReply *ag_job_get(ag_run_t *run, const char *job_id, size_t max);
static json_t *ag_job_result(ag_run_t *run, const char *job_id,
    const char *s, size_t len, char *err, size_t size);
static int ag_json_is(json_t *v, const char *s);
static int ag_job_withdraw(ag_run_t *run, const char *session,
    const char *entry, const char *job_id);
static int ag_jobs_orphan(ag_run_t *run, const char *entry,
    const char *value);
static int ag_job_added(ag_run_t *run, const char *record, char *entry,
    size_t esize, int64_t deadline, char *err, size_t size);
static int ag_job_find(ag_run_t *run, const char *record, char *entry,
    size_t esize);
static void ag_session_keeper(ag_conf_t *conf, const char *id,
    const char *owner, pid_t run, int client);
static char *ag_session_text(json_t *session, char *err, size_t size);
static int ag_session_key(redisContext *c, unsigned char *key, char *err,
    size_t size);
static void ag_session_tag(const unsigned char *key, const char *owner,
    const char *nonce, char *tag);
static char *ag_session_fit(json_t *session, size_t first, size_t *len);
static size_t ag_session_cut(json_t *session, size_t first, size_t over);
static void ag_string_add(ag_string_t *s, size_t *n, json_t *obj,
    const char *key);
static int ag_string_larger(const void *a, const void *b);


/*
 * --redis, checked whole, at start and on each connect: "unix:PATH", the
 * path (1 to 107 bytes: hiredis would cut a longer one, and an empty one
 * names an abstract socket anyone may bind) copied to host with *port 0;
 * "HOST:PORT", a port of digits alone (one read by strtol() took "6379x"
 * for 6379); or "[IPV6]:PORT" or "[IPV6]" (port 6379), an address
 * inet_pton() reads, copied without its brackets (hiredis looked up
 * "[::1]" as a host name).  A bare IPv6 address is refused: "::1:6379"
 * is ::1 port 6379 or the address ::1:6379.  No control character or
 * space anywhere: the address is logged.  0, or -1 with *why set.
 */

int
ag_redis_where(const char *where, char *host, size_t size, long *port,
    const char **why)
{
    size_t           i, n, len;
    const char      *colon, *p;
    struct in6_addr  a6;

    len = strlen(where);

    for (i = 0; i < len; i++) {
        if ((unsigned char) where[i] <= 0x20 || where[i] == 0x7f) {
            *why = "no control character or space";
            return -1;
        }
    }

    if (strncmp(where, "unix:", 5) == 0) {
        n = len - 5;

        if (n == 0 || n > AG_SOCKET_MAX || n >= size) {
            *why = "unix: and a socket path of 1 to 107 bytes";
            return -1;
        }

        memcpy(host, where + 5, n + 1);
        *port = 0;

        return 0;
    }

    *port = 0;

    if (where[0] == '[') {
        p = strchr(where, ']');
        n = (p != NULL) ? (size_t) (p - where - 1) : 0;

        if (n == 0 || n >= size || n >= INET6_ADDRSTRLEN) {
            *why = "an IPv6 address in brackets, [::1] or [::1]:6379";
            return -1;
        }

        memcpy(host, where + 1, n);
        host[n] = '\0';

        if (inet_pton(AF_INET6, host, &a6) != 1
            || (p[1] != '\0' && p[1] != ':'))
        {
            *why = "an IPv6 address in brackets, [::1] or [::1]:6379";
            return -1;
        }

        if (p[1] == '\0') {
            *port = AG_REDIS_PORT;
            return 0;
        }

        p += 2;

    } else {
        colon = strchr(where, ':');

        if (colon != NULL && strchr(colon + 1, ':') != NULL) {
            *why = "an IPv6 address in brackets, [::1]:6379 (a bare one "
                   "is ambiguous)";
            return -1;
        }

        n = (colon != NULL) ? (size_t) (colon - where) : 0;

        if (n == 0 || n >= size || n > 255) {
            *why = "unix:/path or host:port, a host of 1 to 255 bytes";
            return -1;
        }

        memcpy(host, where, n);
        host[n] = '\0';

        p = colon + 1;
    }

    for (i = 0; p[i] >= '0' && p[i] <= '9' && i < 5; i++) {
        *port = *port * 10 + (p[i] - '0');
    }

    if (i == 0 || p[i] != '\0' || *port == 0 || *port > 65535) {
        *why = "unix:/path or host:port, a port from 1 to 65535";
        return -1;
    }

    return 0;
}


/*
 * What an error reply says, for the answer a question gets: Redis's own
 * text, but for an OOM refusal (Redis at its maxmemory, which under
 * noeviction refuses whatever would store more and evicts nothing) said
 * as such, without the script's hash Redis adds; other when there is no
 * reply.  The refused command, or script (refused at its first write),
 * wrote nothing.
 */

static const char *
ag_redis_why(const redisReply *r, const char *other)
{
    if (r == NULL || r->str == NULL) {
        return other;
    }

    if (ag_redis_refused(r) == -3) {
        return "Redis is full (OOM: at its maxmemory, noeviction): it "
               "stores nothing more until some of what it holds expires "
               "or maxmemory is raised";
    }

    return r->str;
}


/*
 * An error reply, told: -2 Redis not ready yet (LOADING its data, BUSY
 * with a script), which a retry outlives; -3 Redis full (OOM, at its
 * maxmemory: the command, or script at its first write, wrote
 * nothing); -1 anything else, or not an error.
 */

static int
ag_redis_refused(const redisReply *r)
{
    if (r == NULL || r->type != REDIS_REPLY_ERROR || r->str == NULL) {
        return -1;
    }

    if (strncmp(r->str, "LOADING", 7) == 0
        || strncmp(r->str, "BUSY", 4) == 0)
    {
        return -2;
    }

    if (strncmp(r->str, "OOM ", 4) == 0
        || strstr(r->str, "OOM command not allowed") != NULL)
    {
        return -3;
    }

    return -1;
}


/*
 * A script's answer checked: 1 an array of min to max integers, else 0
 * with err set, "redis (the WHAT of OWNER): " and why.
 */

static int
ag_redis_answer(redisContext *c, const redisReply *r, size_t min,
    size_t max, const char *what, const char *owner, char *err, size_t size)
{
    size_t  i;

    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements >= min
        && r->elements <= max)
    {
        for (i = 0; i < r->elements; i++) {
            if (r->element[i]->type != REDIS_REPLY_INTEGER) {
                break;
            }
        }

        if (i == r->elements) {
            return 1;
        }
    }

    snprintf(err, size, "redis (the %s of %s): %s", what, owner,
             r == NULL || r->type == REDIS_REPLY_ERROR
             ? ag_redis_why(r, c->errstr)
             : "an answer not of the script's");

    return 0;
}


/*
 * A connection to --redis, as --redis-user when one is given (AUTH with
 * the password in --redis-password-file, read again at each connect).
 * NULL with err set when Redis cannot be reached or refuses the user:
 * the question asked then gets a 503 "redis" with that reason, and the
 * next question tries again.
 */

redisContext *
ag_redis_connect(const ag_conf_t *conf, char *err, size_t size)
{
    char            host[256];
    long            port;
    const char     *why, *where;
    redisContext   *c;
    struct timeval  tv;

    where = conf->redis;

    tv.tv_sec = 5;
    tv.tv_usec = 0;

    if (ag_redis_where(where, host, sizeof(host), &port, &why) != 0) {
        snprintf(err, size, "redis address \"%s\": want %s", where, why);
        return NULL;
    }

    if (port == 0) {
        c = redisConnectUnixWithTimeout(host, tv);

    } else {
        c = redisConnectWithTimeout(host, (int) port, tv);
    }

    if (c == NULL || c->err) {
        snprintf(err, size, "redis at %s: %s", where,
                 c != NULL ? c->errstr : "out of memory");
        redisFree(c);
        return NULL;
    }

    tv.tv_sec = 10;
    redisSetTimeout(c, tv);

    if (conf->redis_user != NULL
        && ar_auth_file(c, conf->redis_user, conf->redis_password_file,
                        err, size) != 0)
    {
        redisFree(c);
        return NULL;
    }

    return c;
}


/*
 * The session stored under id, or a new one (owner its owner, none when
 * owner is NULL) when there is none; NULL (err set) when it is damaged
 * (*damaged set) or Redis failed.  With raw, the text as read (NULL:
 * none stored); with version (AG_VERSION_MAX + 1 bytes), its version as
 * read in the same script, "" when it has none (none stored, or stored
 * by an agent of before versions): what ag_session_store() checks.
 * One stored larger than max bytes is not read: NULL, its size in *need
 * (0 otherwise), for the caller to hold that much memory and read again.
 */

json_t *
ag_session_load(redisContext *c, const char *id, const char *owner,
    size_t max, size_t *need, int *damaged, char **raw, size_t *raw_len,
    char *version, char *err, size_t size)
{
    json_t        *s;
    redisReply    *r, *v, *w;
    json_error_t   jerr;

    *damaged = 0;
    *need = 0;

    if (raw != NULL) {
        *raw = NULL;
        *raw_len = 0;
    }

    if (version != NULL) {
        version[0] = '\0';
    }

    /*
     * Its size first, in the same script: one over AG_SESSION_MAX, which
     * no agent stores, is not read (hiredis would hold it whole, and
     * jansson takes up to 80 times its size to parse it), nor one over
     * max, the memory the caller holds for it.  {0}: none, {1, size}:
     * over AG_SESSION_MAX, {3, size}: over max, {2, text, version}: the
     * version "" when there is none fit to read (ag_session_store()
     * reads it the same way).
     */

    r = redisCommand(c, "EVAL %s 2 airlock:session:%s "
                     "airlock:session:%s:version %d %d %lld",
                     "local t = redis.call('type', KEYS[1])['ok'] "
                     "if t == 'none' then return {0} end "
                     "if t ~= 'string' then "
                     "return redis.error_reply('WRONGTYPE not a string') end "
                     "local n = redis.call('strlen', KEYS[1]) "
                     "if n > tonumber(ARGV[1]) then return {1, n} end "
                     "if n > tonumber(ARGV[3]) then return {3, n} end "
                     "local w = '' "
                     "if redis.call('type', KEYS[2])['ok'] == 'string' then "
                     "local m = redis.call('strlen', KEYS[2]) "
                     "if m > 0 and m <= tonumber(ARGV[2]) then "
                     "w = redis.call('get', KEYS[2]) end end "
                     "return {2, redis.call('get', KEYS[1]), w}",
                     id, id, AG_SESSION_MAX, AG_VERSION_MAX, (long long) max);

    v = NULL;
    w = NULL;

    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements >= 1
        && r->element[0]->type == REDIS_REPLY_INTEGER)
    {
        switch (r->element[0]->integer) {

        case 0:
            if (r->elements == 1) {
                v = r->element[0];          /* none: no text */
            }
            break;

        case 1:
            if (r->elements == 2
                && r->element[1]->type == REDIS_REPLY_INTEGER)
            {
                snprintf(err, size, "session %s is stored damaged (%lld "
                         "bytes, over the %d a session may have; none is "
                         "stored so large); it is kept as it is: ask in "
                         "another session", id, r->element[1]->integer,
                         AG_SESSION_MAX);
                fprintf(stderr, "airlock-agent: %s\n", err);
                freeReplyObject(r);
                *damaged = 1;
                return NULL;
            }
            break;

        case 3:
            if (r->elements == 2
                && r->element[1]->type == REDIS_REPLY_INTEGER
                && r->element[1]->integer > (long long) max
                && r->element[1]->integer <= AG_SESSION_MAX)
            {
                snprintf(err, size, "session %s is %lld bytes, more than "
                         "the %zu held to read it", id,
                         r->element[1]->integer, max);
                *need = (size_t) r->element[1]->integer;
                freeReplyObject(r);
                return NULL;
            }
            break;

        case 2:
            if (r->elements == 3
                && r->element[1]->type == REDIS_REPLY_STRING
                && r->element[2]->type == REDIS_REPLY_STRING
                && r->element[2]->len <= AG_VERSION_MAX)
            {
                v = r->element[1];
                w = r->element[2];
            }
            break;

        default:
            break;
        }
    }

    if (r != NULL && r->type == REDIS_REPLY_ERROR
        && strncmp(r->str, "WRONGTYPE", 9) == 0)
    {
        /* not a string: no agent stored it, kept as it is */

        snprintf(err, size, "session %s is stored damaged (a Redis value "
                 "of another type, not a session); it is kept as it is: "
                 "ask in another session", id);
        fprintf(stderr, "airlock-agent: %s\n", err);
        freeReplyObject(r);
        *damaged = 1;
        return NULL;
    }

    if (r == NULL || r->type == REDIS_REPLY_ERROR || v == NULL) {
        snprintf(err, size, "redis GET: %s",
                 r == NULL || r->type == REDIS_REPLY_ERROR
                 ? ag_redis_why(r, c->errstr)
                 : "an answer not of the script's");
        freeReplyObject(r);
        return NULL;
    }

    if (w != NULL && version != NULL) {
        memcpy(version, w->str, w->len);
        version[w->len] = '\0';
    }

    s = NULL;

    if (v->type == REDIS_REPLY_STRING && raw != NULL) {
        *raw = malloc(v->len + 1);
        if (*raw == NULL) {
            snprintf(err, size, "out of memory");
            freeReplyObject(r);
            return NULL;
        }
        memcpy(*raw, v->str, v->len + 1);
        *raw_len = v->len;
    }

    if (v->type == REDIS_REPLY_STRING) {
        s = json_loadb(v->str, v->len, 0, &jerr);
        if (s != NULL && (!json_is_array(json_object_get(s, "messages"))
                          || !json_is_array(json_object_get(s, "runs"))))
        {
            json_decref(s);
            s = NULL;
        }
        if (s == NULL) {

            /* kept as it is, for its owner to look at or delete */

            snprintf(err, size, "session %s is stored damaged (%s); it is "
                     "kept as it is: ask in another session", id,
                     jerr.text[0] != '\0' ? jerr.text : "not a session");
            fprintf(stderr, "airlock-agent: %s\n", err);
            freeReplyObject(r);
            *damaged = 1;
            return NULL;
        }
    }

    freeReplyObject(r);

    if (s == NULL) {
        s = (owner != NULL)
            ? json_pack("{s:s, s:s, s:[], s:[]}", "id", id, "owner", owner,
                        "messages", "runs")
            : json_pack("{s:s, s:[], s:[]}", "id", id, "messages", "runs");
        if (s == NULL) {
            snprintf(err, size, "out of memory");
        }
    }

    return s;
}


/*
 * 0 stored, 1 not: the lock is another run's, or the session is not as
 * this run read it (loaded: its text then, NULL when none was stored;
 * version: its version then, "" when it had none), -1 Redis failed (err
 * set), -2 Redis is loading its data after a restart (or busy with a
 * script): worth trying again (err set).
 *
 * The checks and the SET are one script, so a session is only ever
 * written by a run that holds it, or by one whose lock is gone with no
 * other's there (Redis lost it: restarted without it, or without any of
 * the session's keys), and only over the session it read: as it read
 * it, none at all (a Redis that lost all: the whole session is lost,
 * the run's question is not), or this run's own (a store sent again).
 * A run's keeper takes a lost lock again (ag_session_keeper()), so a
 * lock that is the run's does not say it always was: another run may
 * have taken it while it was gone, stored, and let it go.
 *
 * "As it read it" is told by the session's version, stored beside it
 * (airlock:session:<id>:version, "<n> <run>": the number of its stores
 * and the run that made the last), written with it in the same script:
 * the same version, and the same length (no store keeps the length; a
 * writer that keeps no version, an agent of before versions during an
 * upgrade, changes it), is the session as read.  The run is in the
 * version, not the number alone: a Redis that lost all counts again
 * from none, and another run's n-th store would pass for the one this
 * run read.  A session stored with no version (by an agent of before
 * versions) is compared whole, once: the text read is sent only then,
 * and the store gives it a version.  The text was compared whole on
 * every store, up to AG_SESSION_MAX bytes sent and compared again.
 *
 * The same script counts the session against payer's quota (its owner,
 * airlock:quota:*:<payer>, ag_quota_check()): its size now, expiring
 * when it does.  Quota keys of another type (no agent writes them so)
 * are left as they are, and the session stored all the same.
 */

int
ag_session_store(redisContext *c, const char *id, const char *owner,
    const char *payer, json_t *session, long ttl, const char *loaded,
    size_t loaded_len, const char *version, const char *run_id, char *err,
    size_t size)
{
    int                 rc, whole;
    char               *text;
    char                next[AG_VERSION_MAX + 1];
    redisReply         *r;
    unsigned long long  n;

    text = ag_session_text(session, err, size);
    if (text == NULL) {
        return -1;
    }

    /* the version this store makes: the one read, counted on */

    n = strtoull(version, NULL, 10);
    snprintf(next, sizeof(next), "%llu %s", n + 1, run_id);

    whole = (loaded != NULL && version[0] == '\0');

    r = redisCommand(c, "EVAL %s 5 airlock:session:%s:lock "
                     "airlock:session:%s airlock:session:%s:version "
                     "airlock:quota:sessions:%s airlock:quota:bytes:%s "
                     "%s %b %ld %s %b %s %lu %d %b %s %d",
                     "local mine = redis.call('get', KEYS[1]) == ARGV[1] "
                     "if not mine and redis.call('type', KEYS[1])['ok'] "
                     "~= 'none' then return 0 end "
                     "local t = redis.call('type', KEYS[2])['ok'] "
                     "if t == 'string' then "
                     "local w = '' "
                     "if redis.call('type', KEYS[3])['ok'] == 'string' then "
                     "local m = redis.call('strlen', KEYS[3]) "
                     "if m > 0 and m <= tonumber(ARGV[8]) then "
                     "w = redis.call('get', KEYS[3]) end end "
                     "if w == ARGV[6] then "
                     "elseif w ~= '' then "
                     "if w ~= ARGV[5] or redis.call('strlen', KEYS[2]) "
                     "~= tonumber(ARGV[7]) then return 3 end "
                     "elseif ARGV[4] ~= '1' "
                     "or redis.call('get', KEYS[2]) ~= ARGV[9] then "
                     "return 3 end "
                     "elseif t ~= 'none' and not mine then return 0 end "
                     "redis.call('set', KEYS[2], ARGV[2], 'EX', ARGV[3]) "
                     "redis.call('set', KEYS[3], ARGV[6], 'EX', ARGV[3]) "
                     "local zk, hk = KEYS[4], KEYS[5] "
                     "local zt = redis.call('type', zk)['ok'] "
                     "local ht = redis.call('type', hk)['ok'] "
                     "if (zt == 'zset' or zt == 'none') "
                     "and (ht == 'hash' or ht == 'none') then "
                     AG_QUOTA_PRUNE
                     "local n = #ARGV[2] + tonumber(ARGV[11]) "
                     "local old = tonumber(redis.call('hget', hk, ARGV[10])) "
                     "or 0 "
                     "redis.call('hset', hk, ARGV[10], n) "
                     "redis.call('hincrby', hk, '!total', n - old) "
                     "redis.call('zadd', zk, now + tonumber(ARGV[3]) * 1000, "
                     "ARGV[10]) "
                     "local last = redis.call('zrange', zk, -1, -1, "
                     "'withscores') "
                     "redis.call('pexpireat', zk, last[2]) "
                     "redis.call('pexpireat', hk, last[2]) "
                     "end "
                     "if mine then return 1 end "
                     "return 2",
                     id, id, id, payer, payer, owner, text, strlen(text),
                     ttl, whole ? "1" : "0", version, strlen(version),
                     next, (unsigned long) loaded_len, AG_VERSION_MAX,
                     whole ? loaded : "", whole ? loaded_len : 0, id,
                     AG_QUOTA_OVERHEAD);

    if (r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == 2) {
        fprintf(stderr, "airlock-agent: session %s: its lock was lost "
                "(Redis lost it), and no other run stored the session "
                "since this one read it: stored\n", id);
        r->integer = 1;
    }

    if (r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == 3) {
        snprintf(err, size, "another run stored the session since this "
                 "one read it (this run's lock was lost for a while: "
                 "Redis lost it, or its lease ran out): not written "
                 "over");
        r->integer = 4;
    }

    free(text);

    if (r != NULL && r->type == REDIS_REPLY_INTEGER) {
        rc = (r->integer == 1) ? 0 : 1;
        if (r->integer == 0) {
            snprintf(err, size, "its lock is not this run's any more (it "
                     "expired or Redis lost it; another run may hold the "
                     "session): not written over");
        }

    } else {
        snprintf(err, size, "redis SET: %s", ag_redis_why(r, c->errstr));
        rc = (ag_redis_refused(r) == -2) ? -2 : -1;
    }

    freeReplyObject(r);

    return rc;
}


/*
 * owner's sessions, as the stores counted them (ag_session_store()),
 * the expired dropped first: 0 under max bytes (*used set), 1 at or over
 * (*used set, *left_ms: until the oldest expires), -1 Redis failed or
 * the keys are not the agent's (err set).  One script, with Redis's
 * clock.
 */

int
ag_quota_check(redisContext *c, const char *owner, long long max,
    long long *used, long long *left_ms, char *err, size_t size)
{
    int          rc;
    redisReply  *r;

    *used = 0;
    *left_ms = 0;

    r = redisCommand(c, "EVAL %s 2 airlock:quota:sessions:%s "
                     "airlock:quota:bytes:%s %lld",
                     "local zk, hk = KEYS[1], KEYS[2] "
                     "local zt = redis.call('type', zk)['ok'] "
                     "local ht = redis.call('type', hk)['ok'] "
                     "if (zt ~= 'zset' and zt ~= 'none') "
                     "or (ht ~= 'hash' and ht ~= 'none') then "
                     "return redis.error_reply('WRONGTYPE the quota keys "
                     "are of another type') end "
                     AG_QUOTA_PRUNE
                     "local total = tonumber(redis.call('hget', hk, "
                     "'!total')) or 0 "
                     "if total < tonumber(ARGV[1]) then "
                     "return {0, total} end "
                     "local o = redis.call('zrange', zk, 0, 0, 'withscores') "
                     "local left = 0 "
                     "if o[2] then left = tonumber(o[2]) - now end "
                     "return {1, total, left}",
                     owner, owner, max);

    if (ag_redis_answer(c, r, 2, 3, "quota", owner, err, size)) {
        rc = (r->element[0]->integer == 0) ? 0 : 1;
        *used = r->element[1]->integer;
        *left_ms = (r->elements == 3) ? r->element[2]->integer : 0;

    } else {
        rc = -1;
    }

    freeReplyObject(r);

    return rc;
}


/*
 * The tokens owner's questions used this UTC day
 * (airlock:quota:tokens:<owner>), add counted first (0: none; the count
 * held at AG_TOKENS_CAP, a gateway's word however large) in it when
 * count has AG_COUNT_DAY, and in the owner's UTC minute
 * (airlock:quota:tokens:!minute:<owner>, expiring at its end) when it
 * has AG_COUNT_MINUTE, and the hold of run_id's call (ag_tokens_hold():
 * held tokens, 0: none) let go first of all: 0 (*used set, *left_ms:
 * until the day ends, Redis's clock, and the count with it), -1 Redis
 * failed or a key is not the agent's (err set), -2 Redis is loading or
 * busy (err set): try again, -3 Redis is full (err set): nothing added,
 * the count may still be read (add 0 writes nothing).  One script: the
 * counts and their expiry are written together.
 */

int
ag_tokens_charge(redisContext *c, const char *owner, int count,
    long long add, const char *run_id, long long held, long long *used,
    long long *left_ms, char *err, size_t size)
{
    int          rc;
    char         member[AG_BOUNDARY_LEN + 32];
    redisReply  *r;

    *used = 0;
    *left_ms = 0;

    if (add < 0) {
        add = 0;

    } else if (add > AG_TOKENS_CAP) {
        add = AG_TOKENS_CAP;
    }

    if (run_id != NULL && held > 0) {
        snprintf(member, sizeof(member), "%s %lld", run_id, held);
    } else {
        snprintf(member, sizeof(member), "-");
    }

    r = redisCommand(c, "EVAL %s 3 airlock:quota:tokens:%s "
                     AG_TOKENS_HOLDS "%s " AG_TOKENS_MINUTE "%s "
                     "%lld %lld %s %d",
                     AG_TOKENS_TYPES
                     "if ARGV[3] ~= '-' then "
                     "redis.call('zrem', h, ARGV[3]) end "
                     "local add = tonumber(ARGV[1]) "
                     "local room = tonumber(ARGV[2]) - used "
                     "if add > room then add = room end "
                     AG_TOKENS_CLOCK
                     "local count = tonumber(ARGV[4]) "
                     "if add > 0 and count % 2 == 1 then "
                     "used = redis.call('incrby', k, add) "
                     "redis.call('pexpireat', k, day) end "
                     "if add > 0 and count >= 2 then "
                     "redis.call('incrby', m, add) "
                     "redis.call('pexpireat', m, minute) end "
                     "return {used, day - now}",
                     owner, owner, owner, add, (long long) AG_TOKENS_CAP,
                     member, count);

    if (ag_redis_answer(c, r, 2, 2, "tokens", owner, err, size)) {
        *used = r->element[0]->integer;
        *left_ms = r->element[1]->integer;
        rc = 0;

    } else {
        rc = ag_redis_refused(r);
    }

    freeReplyObject(r);

    return rc;
}


/*
 * A model call's tokens held against owner's day before it is made
 * (--max-user-tokens, max; 0: none) and against the owner's UTC minute
 * (--max-user-tokens-per-minute, minute_max; 0: none): its prompt as
 * counted (least) and the output it may ask for, want in all, or what
 * the day (the minute) has left, less its count and the other calls
 * held (each a member "<run> <tokens>" of
 * airlock:quota:tokens:!held:<owner>, scored by when it expires, ttl_ms
 * from now, so a hold whose process died frees by itself), when that is
 * more than least.  Returns 0 held (*got, at most want; the caller lets
 * it go with ag_tokens_charge()), 5 held but cut by the minute, 1 not
 * now (the owner's other calls in flight hold what is left: wait), 2
 * not held (the day's count alone leaves least or less), 3 not held
 * (the minute's count alone does: wait for the next, in *left_ms), 4
 * not held (minute_max is least or less: never), -1, -2, -3 as
 * ag_tokens_charge(); *used the day's count (the minute's for 3 and 4),
 * *left_ms until the day ends (the minute, for 3 and 4).  One script,
 * so calls of one owner's questions at once cannot each take what is
 * left.
 */

int
ag_tokens_hold(redisContext *c, const char *owner, const char *run_id,
    long long least, long long want, long long max, long long minute_max,
    long long ttl_ms, long long *got, long long *used, long long *left_ms,
    char *err, size_t size)
{
    int          rc;
    redisReply  *r;

    *got = 0;
    *used = 0;
    *left_ms = 0;

    r = redisCommand(c, "EVAL %s 3 airlock:quota:tokens:%s "
                     AG_TOKENS_HOLDS "%s " AG_TOKENS_MINUTE "%s "
                     "%s %lld %lld %lld %lld %lld",
                     AG_TOKENS_TYPES
                     AG_TOKENS_CLOCK
                     "redis.call('zremrangebyscore', h, '-inf', now) "
                     "local held = 0 "
                     "for _, e in ipairs(redis.call('zrange', h, 0, -1)) do "
                     "held = held + (tonumber(string.match(e, '(%d+)$')) "
                     "or 0) end "
                     "local least, want = tonumber(ARGV[2]), "
                     "tonumber(ARGV[3]) "
                     "local max, mmax = tonumber(ARGV[4]), tonumber(ARGV[6]) "
                     "local cut = 0 "
                     "if max > 0 then "
                     "local room = max - used - held "
                     "if room <= least then "
                     "if held > 0 then return {1, used, 0, day - now, 0} end "
                     "return {2, used, 0, day - now, 0} end "
                     "if want > room then want = room cut = 1 end end "
                     "if mmax > 0 then "
                     "if mmax <= least then "
                     "return {4, mused, 0, minute - now, 0} end "
                     "local room = mmax - mused - held "
                     "if room <= least then "
                     "if held > 0 then return {1, used, 0, day - now, 0} end "
                     "return {3, mused, 0, minute - now, 0} end "
                     "if want > room then want = room cut = 2 end end "
                     "redis.call('zadd', h, now + tonumber(ARGV[5]), "
                     "ARGV[1] .. ' ' .. want) "
                     "local last = redis.call('zrange', h, -1, -1, "
                     "'withscores') "
                     "redis.call('pexpireat', h, tonumber(last[2])) "
                     "return {0, used, want, day - now, cut}",
                     owner, owner, owner, run_id, least, want, max, ttl_ms,
                     minute_max);

    if (ag_redis_answer(c, r, 5, 5, "tokens", owner, err, size)) {
        rc = (int) r->element[0]->integer;
        *used = r->element[1]->integer;
        *got = r->element[2]->integer;
        *left_ms = r->element[3]->integer;
        if (rc == 0 && r->element[4]->integer == 2) {
            rc = 5;                         /* held, cut by the minute */
        }

    } else {
        rc = ag_redis_refused(r);
    }

    freeReplyObject(r);

    return rc;
}


/*
 * The proxy denials owner's questions caused within the last window_ms
 * (airlock:quota:denials:<owner>: a sorted set, each scored by when, ms
 * by Redis's clock, so the count is that of any window, as the proxy's
 * quarantine counts, not of a fixed one an owner could double across its
 * end), and the calls held against them, which the proxy may refuse
 * ("p <member>"; a denial is "d <member>").  how:
 *
 *   AG_DENIALS_LOOK    the count alone
 *   AG_DENIALS_HOLD    a call is held (member) when the denials and the
 *                      calls held are under max: *used the denials, and
 *                      0 held, 1 not now (the owner's other calls in
 *                      flight fill it: wait), 2 not held (the denials
 *                      are at max)
 *   AG_DENIALS_DENIED  the held call was refused: a denial
 *   AG_DENIALS_FREE    the held call was not: let go
 *
 * Returns that state (0 for all but HOLD), *used and *left_ms (until the
 * oldest denial is out of the window), or -1 Redis failed or the key is
 * not the agent's (err set).  One script.  A call held by a process that
 * was killed counts until it is out of the window.
 */

int
ag_denials_charge(redisContext *c, const char *owner, int how,
    const char *member, long max, long long window_ms, long long *used,
    long long *left_ms, char *err, size_t size)
{
    int          rc;
    redisReply  *r;

    *used = 0;
    *left_ms = 0;

    r = redisCommand(c, "EVAL %s 1 airlock:quota:denials:%s %lld %d %s %ld",
                     "local k = KEYS[1] "
                     "local t = redis.call('type', k)['ok'] "
                     "if t ~= 'zset' and t ~= 'none' then "
                     "return redis.error_reply('WRONGTYPE the quota key "
                     "holds no denials') end "
                     "local w, how, m = tonumber(ARGV[1]), ARGV[2], ARGV[3] "
                     "local tm = redis.call('time') "
                     "local now = tonumber(tm[1]) * 1000 "
                     "+ math.floor(tonumber(tm[2]) / 1000) "
                     "redis.call('zremrangebyscore', k, '-inf', now - w) "
                     "if how == '2' or how == '3' then "
                     "redis.call('zrem', k, 'p ' .. m) end "
                     "if how == '2' then "
                     "redis.call('zadd', k, now, 'd ' .. m) "
                     "redis.call('pexpire', k, w) end "
                     "local all = redis.call('zrange', k, 0, -1, "
                     "'withscores') "
                     "local d, first = 0, nil "
                     "for i = 1, #all, 2 do "
                     "if string.sub(all[i], 1, 2) == 'd ' then d = d + 1 "
                     "if not first then first = tonumber(all[i + 1]) end "
                     "end end "
                     "local left = 0 "
                     "if first then left = first + w - now end "
                     "local state = 0 "
                     "if how == '1' then "
                     "if d >= tonumber(ARGV[4]) then state = 2 "
                     "elseif #all / 2 >= tonumber(ARGV[4]) then state = 1 "
                     "else redis.call('zadd', k, now, 'p ' .. m) "
                     "redis.call('pexpire', k, w) end end "
                     "return {state, d, left}",
                     owner, window_ms, how, member != NULL ? member : "-",
                     max);

    if (ag_redis_answer(c, r, 3, 3, "denials", owner, err, size)) {
        rc = (int) r->element[0]->integer;
        *used = r->element[1]->integer;
        *left_ms = r->element[2]->integer;

    } else {
        rc = -1;
    }

    freeReplyObject(r);

    return rc;
}


/*
 * The session as it is stored: the last AG_RUNS_KEPT runs, and at most
 * AG_SESSION_MAX bytes.  A question that alone is over first has its
 * largest strings cut to a note (ag_session_cut()); then the oldest
 * runs are dropped (never this run's, the last), then the oldest
 * questions' messages, each question whole.  NULL (err set) when even
 * that is over.
 */

static char *
ag_session_text(json_t *session, char *err, size_t size)
{
    char        *text;
    size_t       i, k, n, len, over, total, old, one, mine;
    json_t      *runs, *messages, *m;
    const char  *role;

    runs = json_object_get(session, "runs");
    messages = json_object_get(session, "messages");

    if (json_array_size(runs) > AG_RUNS_KEPT) {
        ag_array_drop(runs, json_array_size(runs) - AG_RUNS_KEPT);
    }

    text = json_dumps(session, JSON_COMPACT);
    len = (text != NULL) ? strlen(text) : 0;

    if (text == NULL || len <= AG_SESSION_MAX) {
        goto done;
    }

    free(text);

    /* this question's messages: from its prompt, the last "user" one */
    n = json_array_size(messages);
    mine = 0;

    for (i = n; i > 0; i--) {
        m = json_array_get(messages, i - 1);
        role = json_string_value(json_object_get(m, "role"));
        if (role != NULL && strcmp(role, "user") == 0) {
            mine = n - (i - 1);
            break;
        }
    }

    /*
     * This question, its messages and its run's record, alone over: its
     * largest strings are cut until the whole fits, the earlier
     * questions kept (dropping them could not make it fit).
     */

    one = json_dumpb(json_array_get(runs, json_array_size(runs) - 1), NULL,
                     0, JSON_COMPACT);

    for (i = n - mine; i < n; i++) {
        one += json_dumpb(json_array_get(messages, i), NULL, 0,
                          JSON_COMPACT) + 1;
    }

    if (one > AG_SESSION_MAX) {
        text = ag_session_fit(session, n - mine, &len);
        if (text == NULL || len <= AG_SESSION_MAX) {
            goto done;
        }

        free(text);
    }

    over = len - AG_SESSION_MAX;
    n = json_array_size(runs);

    for (k = 0; over > 0 && k + 1 < n; k++) {
        one = json_dumpb(json_array_get(runs, k), NULL, 0, JSON_COMPACT)
              + 1;
        over = (one < over) ? over - one : 0;
    }

    ag_array_drop(runs, k);

    /* the earlier questions', each whole, never this one's */

    n = json_array_size(messages);

    if (over > 0) {
        total = 0;
        old = 0;

        for (i = 0; i < n; i++) {
            one = json_dumpb(json_array_get(messages, i), NULL, 0,
                             JSON_COMPACT);
            total += one;
            old += (i < n - mine) ? one : 0;
        }

        if (over >= old) {
            ag_array_drop(messages, n - mine);

        } else {
            ag_history_trim(messages, (long) (total - over));
        }
    }

    text = ag_session_fit(session, json_array_size(messages) - mine, &len);
    if (text == NULL || len <= AG_SESSION_MAX) {
        goto done;
    }

    free(text);

    snprintf(err, size, "this question alone makes the session over the "
             "%d bytes a session may have", AG_SESSION_MAX);
    return NULL;

done:

    if (text == NULL) {
        snprintf(err, size, "out of memory");
    }

    return text;
}


/*
 * The session as JSON (its length in *len), this question's strings
 * from messages[first] cut as it takes to be at most AG_SESSION_MAX
 * bytes, in a few rounds (the sizes cut are the strings', the whole's
 * is counted anew): over still when cutting cannot make it fit; NULL
 * when out of memory.
 */

static char *
ag_session_fit(json_t *session, size_t first, size_t *len)
{
    char    *text;
    size_t   k;

    for (k = 0; /* void */; k++) {
        text = json_dumps(session, JSON_COMPACT);
        *len = (text != NULL) ? strlen(text) : 0;

        if (text == NULL || *len <= AG_SESSION_MAX || k == 3
            || ag_session_cut(session, first, *len - AG_SESSION_MAX) == 0)
        {
            return text;
        }

        free(text);
    }
}


/*
 * This question's largest strings (from messages[first]: the model's
 * text and tool calls' arguments, the tools' results; the answer in its
 * run's record) each replaced by a note of its size, the largest first,
 * until over bytes are gone.  What the model writes is bounded per step
 * (AG_CONTENT_MAX, AG_CALLS_MAX of AG_ARGS_MAX), and JSON writes a
 * control character in 6 bytes: 16 calls' arguments took 24 MiB, and
 * the question was not stored at all, its prompt and its run's record
 * (what the model did) lost.  Returns how many were cut.
 */

static size_t
ag_session_cut(json_t *session, size_t first, size_t over)
{
    char          note[128];
    size_t        i, k, n, cut, one, saved;
    json_t       *messages, *events, *m, *v, *ev;
    const char   *role;
    ag_string_t  *s;

    messages = json_object_get(session, "messages");
    events = json_object_get(json_array_get(json_object_get(session, "runs"),
                             json_array_size(json_object_get(session,
                                                             "runs")) - 1),
                             "events");

    n = 0;

    json_array_foreach(messages, i, m) {
        n += (i >= first) ? 1 + json_array_size(json_object_get(m,
                                                           "tool_calls"))
                          : 0;
    }

    n += json_array_size(events);

    s = calloc(n + 1, sizeof(ag_string_t));
    if (s == NULL) {
        return 0;
    }

    n = 0;

    for (i = first; i < json_array_size(messages); i++) {
        m = json_array_get(messages, i);
        role = json_string_value(json_object_get(m, "role"));

        if (role != NULL && strcmp(role, "user") != 0) {
            ag_string_add(s, &n, m, "content");
        }

        json_array_foreach(json_object_get(m, "tool_calls"), k, v) {
            ag_string_add(s, &n, json_object_get(v, "function"),
                          "arguments");
        }
    }

    json_array_foreach(events, i, ev) {
        role = json_string_value(json_object_get(ev, "type"));
        if (role != NULL && strcmp(role, "answer") == 0) {
            ag_string_add(s, &n, ev, "text");
        }
    }

    qsort(s, n, sizeof(ag_string_t), ag_string_larger);

    cut = 0;

    for (i = 0; i < n && over > 0; i++) {

        /* arguments stay a JSON object, as a provider may want them */

        snprintf(note, sizeof(note),
                 strcmp(s[i].key, "arguments") == 0
                 ? "{\"not_kept\":\"%zu bytes as JSON; the session would "
                   "be over its %d\"}"
                 : "[not kept: %zu bytes as JSON; the session would be "
                   "over its %d]",
                 s[i].size, AG_SESSION_MAX);

        v = json_string(note);
        one = json_dumpb(v, NULL, 0, JSON_ENCODE_ANY);

        if (v == NULL || s[i].size <= one) {
            json_decref(v);
            break;
        }

        saved = s[i].size - one;
        over = (saved < over) ? over - saved : 0;

        json_object_set_new(s[i].obj, s[i].key, v);

        /* the agent's words, not data: no wrapper, no lead */
        if (json_object_get(s[i].obj, "untrusted") != NULL) {
            json_object_set_new(s[i].obj, "untrusted", json_false());
            json_object_del(s[i].obj, "lead");
        }

        cut++;
    }

    free(s);

    return cut;
}


/* obj's key, when it is a string, a candidate for ag_session_cut() */

static void
ag_string_add(ag_string_t *s, size_t *n, json_t *obj, const char *key)
{
    json_t  *v;

    v = json_object_get(obj, key);

    if (!json_is_string(v)) {
        return;
    }

    s[*n].obj = obj;
    s[*n].key = key;
    s[*n].size = json_dumpb(v, NULL, 0, JSON_ENCODE_ANY);
    (*n)++;
}


static int
ag_string_larger(const void *a, const void *b)
{
    const ag_string_t  *x = a, *y = b;

    return (x->size < y->size) - (x->size > y->size);
}


/*
 * The owner of the session stored under id, read from the head of its
 * JSON alone (the agent stores "id" and "owner" first): 1 found (owner
 * set), 0 none stored, 2 stored but its head says nothing sure (no
 * owner there, or one written with escapes: the whole session must be
 * read), 3 stored damaged (another type, or over AG_SESSION_MAX), -1
 * Redis failed.  A question reads it before it takes the session's
 * lock, so that one in another's session never holds the lock.
 */

int
ag_session_owner(redisContext *c, const char *id, char *owner,
    size_t size)
{
    int          rc;
    redisReply  *r;

    r = redisCommand(c, "EVAL_RO %s 1 airlock:session:%s %d %d",
                     "local t = redis.call('type', KEYS[1])['ok'] "
                     "if t == 'none' then return {0} end "
                     "if t ~= 'string' then return {3} end "
                     "if redis.call('strlen', KEYS[1]) > tonumber(ARGV[1]) "
                     "then return {3} end "
                     "local h = redis.call('getrange', KEYS[1], 0, "
                     "tonumber(ARGV[2]) - 1) "
                     "local o = string.match(h, "
                     "'^{\"id\":\"[^\"\\\\]*\",\"owner\":"
                     "\"([^\"\\\\]*)\",') "
                     "if o then return {1, o} end "
                     "return {2}",
                     id, AG_SESSION_MAX, AG_OWNER_MAX + AG_ID_MAX + 32);

    rc = -1;

    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements >= 1
        && r->element[0]->type == REDIS_REPLY_INTEGER)
    {
        rc = (int) r->element[0]->integer;

        if (rc == 1) {
            if (r->elements == 2
                && r->element[1]->type == REDIS_REPLY_STRING
                && r->element[1]->len < size)
            {
                memcpy(owner, r->element[1]->str, r->element[1]->len + 1);

            } else {
                rc = 2;
            }
        }

        if (rc < 0 || rc > 3) {
            rc = -1;
        }
    }

    freeReplyObject(r);

    return rc;
}


/*
 * 0 locked, 1 another run holds the lock, 2 the lock is no run's (it
 * never expires: err set), -1 Redis failed (err set).
 *
 * A run's lock always has a lease (SET EX, renewed by EXPIRE): one
 * without was put there by something else and would keep the session
 * busy for good.  The SET NX and the look at the lease are one script,
 * so the answer is that of one look at the lock: as two commands, a run
 * that let its lock go between them left the question refused as busy
 * on a look that found the session free, and a lock replaced between
 * them made a busy session damaged.
 */

int
ag_session_lock(redisContext *c, const char *id, const char *owner,
    long ttl, char *err, size_t size)
{
    int          rc;
    redisReply  *r;

    r = redisCommand(c, "EVAL %s 1 airlock:session:%s:lock %s %ld",
                     "if redis.call('set', KEYS[1], ARGV[1], 'NX', 'EX', "
                     "ARGV[2]) then return 0 end "
                     "if redis.call('ttl', KEYS[1]) == -1 then return 2 end "
                     "return 1",
                     id, owner, ttl);

    if (r != NULL && r->type == REDIS_REPLY_INTEGER
        && r->integer >= 0 && r->integer <= 2)
    {
        rc = (int) r->integer;

        if (rc == 2) {
            snprintf(err, size, "session %s is stored damaged (its lock "
                     "never expires, which no run's does); it is kept as "
                     "it is: ask in another session", id);
            fprintf(stderr, "airlock-agent: %s\n", err);
        }

    } else {
        snprintf(err, size, "redis SET: %s", ag_redis_why(r, c->errstr));
        rc = -1;
    }

    freeReplyObject(r);

    return rc;
}


/*
 * A new session's id for owner, into id (AG_NEW_ID_LEN of 0-9 a-f): a
 * nonce of 128 random bits, then its tag, a MAC of owner and the nonce
 * under the session key (ag_session_key()).  Nothing is stored: the id
 * is owner's by its tag alone until its first question stores the
 * session, so asking for ids in a loop fills nothing.  0, or -1 (err
 * set: Redis failed).
 */

int
ag_session_new(redisContext *c, const char *owner, char *id, char *err,
    size_t size)
{
    unsigned char  key[AG_SESSION_KEY_LEN];

    if (ag_session_key(c, key, err, size) != 0) {
        return -1;
    }

    if (ag_random_hex(id, AG_BOUNDARY_LEN) != 0) {
        sodium_memzero(key, sizeof(key));
        snprintf(err, size, "no random bytes");
        return -1;
    }

    ag_session_tag(key, owner, id, id + AG_BOUNDARY_LEN);
    sodium_memzero(key, sizeof(key));

    return 0;
}


/*
 * Whether id is one of the agent's (ag_session_new()), for owner: 1 it
 * is, 0 it is not of their form (any other id), 2 it is of their form
 * but its tag is not owner's (another's, or forged), -1 Redis failed
 * (err set).  The tags are compared in constant time.
 */

int
ag_session_made(redisContext *c, const char *id, const char *owner,
    char *err, size_t size)
{
    int            ok;
    size_t         i;
    unsigned char  key[AG_SESSION_KEY_LEN];
    char           tag[AG_BOUNDARY_LEN + 1];

    if (strlen(id) != AG_NEW_ID_LEN) {
        return 0;
    }

    for (i = 0; i < AG_NEW_ID_LEN; i++) {
        if (!((id[i] >= '0' && id[i] <= '9')
              || (id[i] >= 'a' && id[i] <= 'f')))
        {
            return 0;
        }
    }

    if (ag_session_key(c, key, err, size) != 0) {
        return -1;
    }

    ag_session_tag(key, owner, id, tag);
    sodium_memzero(key, sizeof(key));

    ok = sodium_memcmp(tag, id + AG_BOUNDARY_LEN, AG_BOUNDARY_LEN) == 0;

    return ok ? 1 : 2;
}


/*
 * The session key, AG_SESSION_KEY_LEN bytes, from Redis: every agent
 * that shares the Redis shares it, and it outlives their restarts.  The
 * first to look makes it (random, SET where there is none, in one
 * script: two agents that start together agree on one).  Its name is
 * among the sessions' keys (the agent's Redis user reaches no others)
 * but is no session's: no id has a '!'.  0, or -1 (err set).
 */

static int
ag_session_key(redisContext *c, unsigned char *key, char *err,
    size_t size)
{
    int          rc;
    size_t       len;
    char         fresh[2 * AG_SESSION_KEY_LEN + 1];
    redisReply  *r;

    if (sodium_init() < 0
        || ag_random_hex(fresh, 2 * AG_SESSION_KEY_LEN) != 0)
    {
        snprintf(err, size, "no random bytes");
        return -1;
    }

    r = redisCommand(c, "EVAL %s 1 %s %s",
                     "local k = redis.call('get', KEYS[1]) "
                     "if k then return k end "
                     "redis.call('set', KEYS[1], ARGV[1]) "
                     "return ARGV[1]",
                     AG_SESSION_KEY, fresh);

    sodium_memzero(fresh, sizeof(fresh));

    if (r == NULL || r->type != REDIS_REPLY_STRING) {
        snprintf(err, size, "redis GET %s: %s", AG_SESSION_KEY,
                 ag_redis_why(r, c->errstr));
        freeReplyObject(r);
        return -1;
    }

    rc = sodium_hex2bin(key, AG_SESSION_KEY_LEN, r->str, r->len, NULL,
                        &len, NULL);

    freeReplyObject(r);

    if (rc != 0 || len != AG_SESSION_KEY_LEN) {
        sodium_memzero(key, AG_SESSION_KEY_LEN);
        snprintf(err, size, "the session key %s is damaged (not %d of "
                 "0-9 a-f): delete it, and the agent makes another (the "
                 "new sessions not yet asked in are lost)", AG_SESSION_KEY,
                 2 * AG_SESSION_KEY_LEN);
        return -1;
    }

    return 0;
}


/* the tag of nonce (AG_BOUNDARY_LEN of hex) for owner, as hex, into tag */

static void
ag_session_tag(const unsigned char *key, const char *owner,
    const char *nonce, char *tag)
{
    unsigned char             mac[AG_BOUNDARY_LEN / 2];
    crypto_generichash_state  st;
    static const char         what[] = "airlock-agent session id";

    crypto_generichash_init(&st, key, AG_SESSION_KEY_LEN, sizeof(mac));
    crypto_generichash_update(&st, (const unsigned char *) what,
                              sizeof(what));
    crypto_generichash_update(&st, (const unsigned char *) owner,
                              strlen(owner) + 1);
    crypto_generichash_update(&st, (const unsigned char *) nonce,
                              AG_BOUNDARY_LEN);
    crypto_generichash_final(&st, mac, sizeof(mac));

    sodium_bin2hex(tag, AG_BOUNDARY_LEN + 1, mac, sizeof(mac));
    sodium_memzero(&st, sizeof(st));
}


/*
 * The lock lives as long as the run: a keeper process renews its lease
 * every AG_LOCK_KEEP_MS while the run's process lives (a client that
 * reads the events slowly can keep a run going far past its wall time).
 * It dies with the run's process, takes the lock again when Redis lost
 * it and no other run holds it, and ends when another run's is there;
 * then the run does not store the session either.
 * It also watches the run's client (the connection, client): once that
 * has hung up, it tells the run (SIGUSR1), which ends as at a stop.
 * Returns the keeper's pid, or -1 (the lease alone then holds it).
 */

pid_t
ag_session_keep(ag_conf_t *conf, const char *id, const char *owner,
    int client)
{
    pid_t  run, pid;

    run = getpid();

    pid = fork();

    if (pid == 0) {
        signal(SIGTERM, SIG_DFL);           /* the run's handler is not */
        ag_session_keeper(conf, id, owner, run, client);
        _exit(0);
    }

    if (pid == -1) {
        fprintf(stderr, "airlock-agent: session %s: no keeper for its lock "
                "(fork: %m): it holds for %d s\n", id, AG_LOCK_TTL);
    }

    return pid;
}


void
ag_session_keep_end(pid_t keeper)
{
    if (keeper > 0) {
        kill(keeper, SIGKILL);
        waitpid(keeper, NULL, 0);
    }
}


static void
ag_session_keeper(ag_conf_t *conf, const char *id, const char *owner,
    pid_t run, int client)
{
    int             rc, watch;
    char            err[256];
    int64_t         beat, left;
    redisReply     *r;
    redisContext   *c;
    struct pollfd   pfd;

    /*
     * Nothing of the run's but its client, watched, never read or
     * written: its Redis connection, the rest.  The client is fd 3 here
     * (the run's process has its own; its connection ends with both);
     * one that cannot be is not watched, the lock kept all the same.
     */
    watch = STDERR_FILENO + 1;

    if (client != watch && dup2(client, watch) != watch) {
        watch = -1;
    }

    closefrom(watch != -1 ? watch + 1 : STDERR_FILENO + 1);

    if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1 || getppid() != run) {
        return;
    }

    c = NULL;

    /*
     * A hang-up is POLLHUP (the client closed, or shut down both ways)
     * or POLLERR (it closed with the run's events unread).  A client
     * that only shut its writing side down still reads: no hang-up.
     */
    pfd.fd = watch;
    pfd.events = 0;

    beat = ag_now_ms() + AG_LOCK_KEEP_MS;

    for ( ;; ) {
        left = beat - ag_now_ms();

        if (left > 0) {
            pfd.revents = 0;
            rc = poll(&pfd, 1, (int) left);

            if (rc == 1 && (pfd.revents & (POLLHUP | POLLERR | POLLNVAL)))
            {
                kill(run, SIGUSR1);
                pfd.fd = -1;                /* told once; the lock is
                                               kept until the store */
            }

            continue;
        }

        beat = ag_now_ms() + AG_LOCK_KEEP_MS;

        if (getppid() != run) {
            break;
        }

        if (c == NULL) {
            c = ag_redis_connect(conf, err, sizeof(err));
            if (c == NULL) {
                continue;                   /* Redis is not back yet */
            }
        }

        /*
         * A lock that is gone, no other's there, is taken again: Redis
         * lost it (its lease ran out while Redis was down longer than
         * AG_LOCK_TTL: a key's expiry is a time of day, and a restart
         * drops the keys past it).  Left gone, the run went on without
         * it, and the next question's sweep, in any session, took the
         * run for a killed one and withdrew the job it awaited: never
         * run, the run waited out its wall time (ag_jobs_sweep()).
         * The same script deletes the run's mark, airlock:session:<id>:
         * lost:<run>, that a look in another session left while the
         * lock was gone (ag_jobs_orphan()): the run is there, and a
         * later loss is timed from its own look.
         */

        r = redisCommand(c, "EVAL %s 2 airlock:session:%s:lock "
                         "airlock:session:%s:lost:%b %s %d",
                         "local v = redis.call('get', KEYS[1]) "
                         "if v == ARGV[1] then "
                         "return redis.call('expire', KEYS[1], ARGV[2]) "
                         "end "
                         "if v == false and redis.call('set', KEYS[1], "
                         "ARGV[1], 'NX', 'EX', ARGV[2]) then "
                         "redis.call('del', KEYS[2]) return 2 end "
                         "return 0",
                         id, id, owner, strcspn(owner, " "), owner,
                         AG_LOCK_TTL);

        if (r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == 2)
        {
            fprintf(stderr, "airlock-agent: session %s: its lock was lost "
                    "(Redis lost it), no other run held it: taken "
                    "again\n", id);
        }

        if (r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == 0)
        {
            freeReplyObject(r);
            break;                          /* not the run's any more */
        }

        if (r == NULL || r->type != REDIS_REPLY_INTEGER) {
            redisFree(c);                   /* connect again next time */
            c = NULL;
        }

        freeReplyObject(r);
    }

    redisFree(c);
}


void
ag_session_unlock(redisContext *c, const char *id, const char *owner)
{
    redisReply  *r;

    /* only our own lock: a run that outlived its lock leaves the next
       run's alone */
    r = redisCommand(c, "EVAL %s 1 airlock:session:%s:lock %s",
                     "if redis.call('get', KEYS[1]) == ARGV[1] then "
                     "return redis.call('del', KEYS[1]) end return 0",
                     id, owner);
    freeReplyObject(r);
}


/*
 * The run's connection, connected again when a command found it broken
 * (Redis restarted, or closed it): a run outlives a Redis restart.
 */

int
ag_redis_revive(ag_run_t *run, char *err, size_t size)
{
    redisContext  *c;

    if (run->redis != NULL && run->redis->err == 0) {
        return 0;
    }

    c = ag_redis_connect(run->conf, err, size);
    if (c == NULL) {
        return -1;
    }

    redisFree(run->redis);
    run->redis = c;

    return 0;
}


/*
 * The job's result, or NULL (err set): "timeout" when the wait ran out,
 * or *large set to its size when it is over max bytes (not read).
 */

json_t *
ag_job_run(ag_run_t *run, const char *job_id, json_t *envelope,
    long wait_ms, size_t max, int *withdrawn, long long *large, char *err,
    size_t size)
{
    int             looked, rc, gone;
    char           *text, entry[64], owner[256], why[256];
    json_t         *res;
    int64_t         deadline, left;
    redisReply     *r;
    redisContext   *sub;
    struct timeval  tv;

    deadline = ag_now_ms() + (wait_ms < 1 ? 1 : wait_ms);
    *withdrawn = 0;
    *large = 0;
    entry[0] = '\0';

    /*
     * The workers' group is theirs to make (from id 0, so the jobs added
     * before the first worker started are read; docs/jobs.md): one the
     * agent made at "$" would have them skip every entry queued before,
     * and its Redis user has no XGROUP (conf/redis-acl.conf).
     */

    if (ag_redis_revive(run, err, size) != 0) {
        return NULL;
    }

    /* the jobs of runs that are gone, before this one counts them */
    ag_jobs_sweep(run);

    /* 1. subscribe */
    sub = ag_job_subscribe(run, job_id, err, size);
    if (sub == NULL) {
        return NULL;
    }

    res = NULL;
    text = NULL;

    /* 2. the job */
    text = json_dumps(envelope, JSON_COMPACT);
    if (text == NULL) {
        snprintf(err, size, "out of memory");
        r = NULL;
        goto done;
    }

    /*
     * Added only while the stream holds fewer than --max-queued-jobs
     * entries (jobs awaited, or taken and not done), the look and the
     * XADD one script: with no worker taking them, or far too few, runs
     * would add jobs without end.  The same script records who awaits
     * it, so a run killed while it waits leaves a record the next
     * question finds (ag_jobs_sweep()).  A key of another type under
     * the records' name (planted: anything can write Redis) refuses the
     * job before the XADD: a script that fails after a write keeps it,
     * and the entry, added but reported as not, was never withdrawn.
     */

    snprintf(owner, sizeof(owner), "%s %s %s%s%s", run->session,
             run->run_id, job_id, run->asker != NULL ? " " : "",
             run->asker != NULL ? run->asker : "");

    /*
     * And only while its asker awaits fewer than --max-user-jobs, all
     * their questions' (the records that name them, their runs gone
     * already withdrawn by the sweep above): the workers take the jobs
     * in the order they came, so one user's questions at once, each
     * with a job, held every other user's behind them, and those runs
     * waited out their wall time for nothing.
     */

    r = redisCommand(run->redis, "EVAL %s 2 " AG_STREAM " " AG_AWAITED
                     " %b %ld %s %s %ld",
                     "local t = redis.call('type', KEYS[2])['ok'] "
                     "if t ~= 'none' and t ~= 'hash' then "
                     "return redis.error_reply(KEYS[2] .. ' is a ' .. t "
                     ".. ', not the hash of awaited jobs') end "
                     "if redis.call('xlen', KEYS[1]) >= tonumber(ARGV[2]) "
                     "then return false end "
                     "local max = tonumber(ARGV[5]) "
                     "if max > 0 and ARGV[4] ~= '' then "
                     "local tail, n, c = ' ' .. ARGV[4], 0, '0' "
                     "repeat "
                     "local h = redis.call('hscan', KEYS[2], c, 'count', "
                     "256) "
                     "c = h[1] "
                     "for i = 2, #h[2], 2 do "
                     "if string.sub(h[2][i], -#tail) == tail then "
                     "n = n + 1 end end "
                     "until c == '0' "
                     "if n >= max then return n end end "
                     "local e = redis.call('xadd', KEYS[1], '*', 'job', "
                     "ARGV[1]) "
                     "redis.call('hset', KEYS[2], e, ARGV[3]) "
                     "return e",
                     text, strlen(text), run->conf->max_queued_jobs,
                     owner, run->asker != NULL ? run->asker : "",
                     run->conf->max_user_jobs);

    if (r != NULL && r->type == REDIS_REPLY_NIL) {
        snprintf(err, size, "the job stream holds %ld jobs or more, the "
                 "most --max-queued-jobs allows: no worker is taking them "
                 "(or too few); not added", run->conf->max_queued_jobs);
        goto done;
    }

    if (r != NULL && r->type == REDIS_REPLY_INTEGER) {
        snprintf(err, size, "the questions of %s await %lld jobs at once, "
                 "the most one user's may (--max-user-jobs %ld): not "
                 "added; ask for it again once one has its result",
                 run->asker, r->integer, run->conf->max_user_jobs);
        goto done;
    }

    /*
     * A reply lost with the connection (Redis restarted, or closed it)
     * says nothing of whether the script ran: it may have added the job
     * and its record.  The record says (one script wrote both): with
     * it, the job is awaited as any; without, it was not added.  The
     * run used to tell the model the job was not added, though a worker
     * ran it all the same (and the model, told so, asked for it again:
     * its inputs fetched twice, a POST among them).
     */

    if (r == NULL) {
        snprintf(why, sizeof(why), "%s", run->redis->errstr);

        rc = ag_job_added(run, owner, entry, sizeof(entry), deadline, err,
                          size);
        if (rc == 0) {
            snprintf(err, size, "redis XADD: %s", why);
        }

        fprintf(stderr, "airlock-agent: job %s of session %s: the reply "
                "to its XADD was lost (%s); %s\n", job_id, run->session,
                why, rc == 1 ? "it was added: awaited"
                     : rc == 0 ? "it was not added"
                     : "not known whether it was added");

        if (rc != 1) {
            goto done;
        }

    } else if (r->type != REDIS_REPLY_STRING) {
        snprintf(err, size, "redis XADD: %s",
                 ag_redis_why(r, "not an entry id"));
        fprintf(stderr, "airlock-agent: job %s of session %s not added: "
                "%s\n", job_id, run->session, err);
        goto done;

    } else if (r->len < sizeof(entry)) {
        memcpy(entry, r->str, r->len + 1);
    }

    freeReplyObject(r);
    r = NULL;

    /*
     * 3. a result stored before the subscription, 4. the message.  A
     * connection that breaks before the time is up (Redis restarted: the
     * job is in its stream, and a worker stores the result when it is
     * back) is opened again, subscribed again and the result looked up
     * again; only the wall time ends the wait.
     */

    looked = 0;

    for ( ;; ) {
        if (ag_stopping) {
            snprintf(err, size, "stopping");
            goto done;
        }

        if (sub == NULL) {
            sub = ag_job_subscribe(run, job_id, err, size);
        }

        if (sub != NULL && !looked) {
            if (ag_redis_revive(run, err, size) == 0) {
                r = ag_job_get(run, job_id, max);
            }

            if (r != NULL && r->type == REDIS_REPLY_STRING) {
                res = ag_job_result(run, job_id, r->str, r->len, err,
                                    size);
                goto done;
            }

            if (r != NULL && r->type == REDIS_REPLY_INTEGER) {
                *large = (r->integer > 0) ? r->integer : 1;
                snprintf(err, size, "the result is %lld bytes, over the "
                         "%zu the run may read", *large, max);
                goto done;
            }

            if (r != NULL && r->type == REDIS_REPLY_ERROR
                && strncmp(r->str, "LOADING", 7) != 0)
            {
                snprintf(err, size, "redis GET: %s", r->str);
                goto done;
            }

            looked = (r != NULL && r->type != REDIS_REPLY_ERROR);
            freeReplyObject(r);
            r = NULL;
        }

        left = deadline - ag_now_ms();
        if (left < 1) {
            snprintf(err, size, "timeout");
            goto done;
        }

        if (sub == NULL || !looked) {
            /* Redis is not back yet */
            if (left > 100) {
                left = 100;
            }
            tv.tv_sec = 0;
            tv.tv_usec = left * 1000;
            select(0, NULL, NULL, NULL, &tv);
            continue;
        }

        /*
         * A message over max (its framing aside) is not read on: the
         * connection is dropped, and result:<job>, looked up again, says
         * whether a result that large is stored (or the message was
         * anyone's but the worker's).  So does a message that is not a
         * result.
         */

        r = NULL;
        rc = ar_reply_read(sub, &r, max + 256, deadline, &ag_stopping);

        if (rc != AR_OK || r == NULL) {
            freeReplyObject(r);
            r = NULL;

            if (rc == AR_STOP) {
                snprintf(err, size, "stopping");
                goto done;
            }

            if (rc != AR_LARGE && ag_now_ms() >= deadline) {
                snprintf(err, size, "timeout");
                goto done;
            }

            redisFree(sub);
            sub = NULL;
            looked = 0;
            continue;
        }

        if (r->type == REDIS_REPLY_ARRAY && r->elements == 3
            && r->element[0]->type == REDIS_REPLY_STRING
            && r->element[2]->type == REDIS_REPLY_STRING
            && strcmp(r->element[0]->str, "message") == 0)
        {
            /*
             * One that is not a result (anyone may publish) does not end
             * the wait: result:<job> says whether a worker stored one,
             * and a result stored bad is an error there.
             */

            res = (r->element[2]->len <= max)
                  ? ag_job_result(run, job_id, r->element[2]->str,
                                  r->element[2]->len, err, size)
                  : NULL;

            if (res != NULL) {
                goto done;
            }

            looked = 0;
            freeReplyObject(r);
            r = NULL;
            continue;
        }

        freeReplyObject(r);
        r = NULL;
    }

done:

    freeReplyObject(r);
    free(text);
    redisFree(sub);

    if (entry[0] != '\0') {
        gone = 0;

        if (res == NULL && *large == 0) {
            gone = ag_job_withdraw(run, run->session, entry, job_id);
            *withdrawn = (gone == 1);
        }

        /* a withdrawal that failed is tried again by a sweep */

        if (gone != -1 && ag_redis_revive(run, why, sizeof(why)) == 0) {
            freeReplyObject(redisCommand(run->redis, "HDEL " AG_AWAITED
                                         " %s", entry));
        }
    }

    return res;
}


/*
 * Whether the job whose record (its "<session> <run> <job> <asker>") is
 * in the hash of awaited jobs was added, once Redis answers again: 1 it was
 * (entry set to its entry id), 0 it was not, -1 not known by the
 * deadline, or the agent stops (err set: "timeout", "stopping").  The
 * run holds its session's lock meanwhile, so no sweep removes it.
 */

static int
ag_job_added(ag_run_t *run, const char *record, char *entry, size_t esize,
    int64_t deadline, char *err, size_t size)
{
    int             rc;
    struct timeval  tv;

    for ( ;; ) {
        if (ag_stopping) {
            snprintf(err, size, "stopping");
            return -1;
        }

        if (ag_redis_revive(run, err, size) == 0) {
            rc = ag_job_find(run, record, entry, esize);
            if (rc != -1) {
                return rc;
            }
        }

        if (ag_now_ms() >= deadline) {
            snprintf(err, size, "timeout");
            return -1;
        }

        /* Redis is not back yet, or is loading its data */
        tv.tv_sec = 0;
        tv.tv_usec = 100000;
        select(0, NULL, NULL, NULL, &tv);
    }
}


/*
 * 1 found (entry set), 0 not there, -1 Redis failed or answered an
 * error.  Each page of the hash is looked at by Redis, which answers
 * the field whose value is the record, if any: a value of any size
 * (anything that can write Redis may plant one) is never read here, as
 * in a sweep.
 */

static int
ag_job_find(ag_run_t *run, const char *record, char *entry, size_t esize)
{
    int          rounds, rc;
    char         cursor[32];
    redisReply  *r;

    memcpy(cursor, "0", 2);

    for (rounds = 0; rounds < AG_FIND_ROUNDS; rounds++) {
        r = redisCommand(run->redis, "EVAL %s 1 " AG_AWAITED " %s %s",
                         "local c = redis.call('hscan', KEYS[1], ARGV[1], "
                         "'count', 1024) "
                         "for i = 1, #c[2], 2 do "
                         "if c[2][i + 1] == ARGV[2] then "
                         "return {c[1], c[2][i]} end "
                         "end "
                         "return {c[1]}",
                         cursor, record);

        if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements < 1
            || r->elements > 2
            || r->element[0]->type != REDIS_REPLY_STRING
            || r->element[0]->len >= sizeof(cursor)
            || (r->elements == 2
                && r->element[1]->type != REDIS_REPLY_STRING))
        {
            freeReplyObject(r);
            return -1;
        }

        memcpy(cursor, r->element[0]->str, r->element[0]->len + 1);
        rc = 0;

        if (r->elements == 2 && r->element[1]->len < esize) {
            memcpy(entry, r->element[1]->str, r->element[1]->len + 1);
            rc = 1;
        }

        freeReplyObject(r);

        if (rc == 1 || strcmp(cursor, "0") == 0) {
            return rc;
        }
    }

    return 0;
}


/*
 * The jobs whose run is gone (killed while it waited: SIGKILL, the OOM
 * killer) are withdrawn, as that run would have done: its session's
 * lock is not the run's any more (a run holds it while it lives, and
 * records its jobs while it holds it).  Without it, such a job stayed
 * in the stream, and the first worker to start ran it for no one.
 * Only the run's own asker's questions, and those of the run that holds
 * its session's lock now, withdraw it: a lock that is gone does not say
 * the run is (Redis lost it, and its keeper has not taken it again
 * yet), and any other asker's question, in any session, used to
 * withdraw a job a live run of someone else's awaited.  (A record an
 * older agent wrote names no asker: any question's, as it was.)  The
 * asker's question in another session withdraws it only once the lock
 * has not been the run's for AG_LOST_GRACE_MS (ag_jobs_orphan()).
 * Records of other kinds, or too long, are not the agent's: dropped.
 */

void
ag_jobs_sweep(ag_run_t *run)
{
    int          rounds;
    char         err[256], cursor[32];
    size_t       i;
    redisReply  *r, *list;

    if (ag_redis_revive(run, err, sizeof(err)) != 0) {
        return;
    }

    memcpy(cursor, "0", 2);

    for (rounds = 0; rounds < AG_SWEEP_ROUNDS; rounds++) {
        r = redisCommand(run->redis, "EVAL %s 1 " AG_AWAITED " %s",
                         "local c = redis.call('hscan', KEYS[1], ARGV[1], "
                         "'count', 128) "
                         "local out = {} "
                         "for i = 1, #c[2], 2 do "
                         "local f, v = c[2][i], c[2][i + 1] "
                         "if #f <= 40 and #v <= 256 then "
                         "out[#out + 1] = f out[#out + 1] = v "
                         "else redis.call('hdel', KEYS[1], f) end "
                         "end "
                         "return {c[1], out}",
                         cursor);

        if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2
            || r->element[0]->type != REDIS_REPLY_STRING
            || r->element[0]->len >= sizeof(cursor)
            || r->element[1]->type != REDIS_REPLY_ARRAY)
        {
            freeReplyObject(r);
            return;
        }

        memcpy(cursor, r->element[0]->str, r->element[0]->len + 1);
        list = r->element[1];

        for (i = 0; i + 1 < list->elements; i += 2) {
            if (list->element[i]->type != REDIS_REPLY_STRING
                || list->element[i + 1]->type != REDIS_REPLY_STRING
                || ag_jobs_orphan(run, list->element[i]->str,
                                  list->element[i + 1]->str)
                   != 0)
            {
                freeReplyObject(r);
                return;
            }
        }

        freeReplyObject(r);

        if (strcmp(cursor, "0") == 0) {
            return;
        }
    }
}


/* ag_jobs_orphan() reads an asker with "%71s" */
_Static_assert(AG_OWNER_MAX == 72, "an asker's sscanf width");


/* one record: 0 done with it, -1 Redis failed (the sweep ends) */

static int
ag_jobs_orphan(ag_run_t *run, const char *entry, const char *value)
{
    int          rc, fields, other;
    char         session[AG_ID_MAX + 1], owner[AG_BOUNDARY_LEN + 1],
                 job[AG_ID_MAX + 1], asker[AG_OWNER_MAX];
    redisReply  *r;

    /* an asker of at most AG_OWNER_MAX - 1 bytes */
    fields = sscanf(value, "%64s %32s %64s %71s", session, owner, job,
                    asker);

    if (strspn(entry, "0123456789-") != strlen(entry)
        || strchr(entry, '-') == NULL
        || fields < 3
        || !ag_id_ok(session, strlen(session))
        || !ag_id_ok(owner, strlen(owner))
        || !ag_id_ok(job, strlen(job))
        || (fields == 4 && strspn(asker, AG_OWNER_CHARS) != strlen(asker)))
    {
        rc = 0;                             /* not the agent's record */
        goto drop;
    }

    if (strcmp(owner, run->run_id) == 0) {
        return 0;
    }

    /*
     * Another asker's job, in another session: theirs to withdraw (a
     * record an older agent wrote names none: anyone's, as it was)
     */

    other = (strcmp(session, run->session) != 0);

    if (fields == 4 && other
        && (run->asker == NULL || strcmp(asker, run->asker) != 0))
    {
        return 0;
    }

    /*
     * In its own session the run holds the lock: the record's run does
     * not, and takes it no more (its keeper ends on another run's
     * lock).  In another session a lock that is not the record's run's
     * is marked, airlock:session:<id>:lost:<run> (Redis's time, in ms),
     * and the job withdrawn only once it has been so AG_LOST_GRACE_MS:
     * a lock Redis lost is taken again by its live run's keeper at its
     * next beat, which deletes the mark, so a mark that old says the
     * run is gone.  The asker's own question in another session used
     * to withdraw the job of their live run in that window.  A mark of
     * another type (planted) is taken for none, and replaced.
     */

    r = redisCommand(run->redis, "EVAL %s 2 airlock:session:%s:lock "
                     "airlock:session:%s:lost:%s %s %d %d",
                     "local v = redis.call('get', KEYS[1]) "
                     "local n = #ARGV[1] "
                     "if v and string.sub(v, 1, n) == ARGV[1] "
                     "and (#v == n or string.sub(v, n + 1, n + 1) == ' ') "
                     "then return 0 end "
                     "if ARGV[2] == '0' then "
                     "redis.call('del', KEYS[2]) return 1 end "
                     "local t = redis.call('time') "
                     "local now = tonumber(t[1]) * 1000 "
                     "+ math.floor(tonumber(t[2]) / 1000) "
                     "local m = redis.pcall('get', KEYS[2]) "
                     "m = (type(m) == 'string') and tonumber(m) or nil "
                     "if m == nil then "
                     "redis.call('set', KEYS[2], now, 'px', ARGV[3]) "
                     "return 0 end "
                     "if now - m < tonumber(ARGV[2]) then return 0 end "
                     "redis.call('del', KEYS[2]) "
                     "return 1",
                     session, session, owner, owner,
                     other ? AG_LOST_GRACE_MS : 0, AG_LOST_MARK_MS);
    if (r == NULL) {
        return -1;
    }

    rc = (r->type != REDIS_REPLY_INTEGER || r->integer != 1);
    freeReplyObject(r);

    if (rc) {
        return 0;                   /* its run is waiting, or may be */
    }

    rc = ag_job_withdraw(run, session, entry, job);
    if (rc == -1) {
        return -1;
    }

    if (rc != 0) {
        fprintf(stderr, "airlock-agent: job %s of session %s withdrawn: "
                "the run that awaited it (%s) is gone; %s\n", job,
                session, owner,
                rc == 1 ? "no worker had taken it, it never runs"
                        : "a worker had taken it, it is not run again");
    }

drop:

    r = redisCommand(run->redis, "HDEL " AG_AWAITED " %s", entry);
    rc = (r != NULL) ? 0 : -1;
    freeReplyObject(r);

    return rc;
}


/*
 * A job the run stopped waiting for leaves the stream: a worker that
 * starts later would run it for no one (its inputs fetched through the
 * worker's routes, its result read by no one), and entries left by
 * every such run would pile up while no worker runs.  One script, so no
 * worker takes the entry between the look and the deletion.  1: no
 * worker had taken it, it never runs; 2: a worker had (it may be
 * running: it finishes, and is not run again, docs/jobs.md); 0: it was
 * gone (done); -1: Redis failed, and it is left, logged.
 */

static int
ag_job_withdraw(ag_run_t *run, const char *session, const char *entry,
    const char *job_id)
{
    int          rc;
    char         err[256];
    redisReply  *r;

    r = NULL;

    if (ag_redis_revive(run, err, sizeof(err)) == 0) {
        r = redisCommand(run->redis, "EVAL %s 1 " AG_STREAM " " AG_GROUP
                         " %s",
                         "local p = redis.pcall('xpending', KEYS[1], "
                         "ARGV[1], ARGV[2], ARGV[2], 1) "
                         "if redis.call('xdel', KEYS[1], ARGV[2]) == 0 "
                         "then return 0 end "
                         "if p.err ~= nil or #p == 0 then return 1 end "
                         "return 2",
                         entry);

        if (r == NULL || r->type != REDIS_REPLY_INTEGER) {
            snprintf(err, sizeof(err), "%s",
                     r != NULL && r->str != NULL ? r->str
                                                 : run->redis->errstr);
        }
    }

    rc = (r != NULL && r->type == REDIS_REPLY_INTEGER) ? (int) r->integer
                                                       : -1;
    freeReplyObject(r);

    if (rc == 1) {
        /*
         * Not pending, yet done: a worker that acknowledges without
         * deleting (one older than the XDEL, docs/jobs.md) stored its
         * result first.  Deleted, it can be taken no more, so no result
         * comes after this look.
         */
        r = redisCommand(run->redis, "EXISTS result:%s", job_id);
        if (r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer != 0)
        {
            rc = 0;
        }
        freeReplyObject(r);
    }

    if (rc == -1) {
        fprintf(stderr, "airlock-agent: session %s: job %s given up on, "
                "but its stream entry %s was not removed (%s): a worker "
                "may still run it\n", session, job_id, entry, err);
    }

    return rc;
}


/* a connection of its own, subscribed to the job's channel, or NULL */

static redisContext *
ag_job_subscribe(ag_run_t *run, const char *job_id, char *err, size_t size)
{
    redisReply    *r;
    redisContext  *sub;

    sub = ag_redis_connect(run->conf, err, size);
    if (sub == NULL) {
        return NULL;
    }

    r = redisCommand(sub, "SUBSCRIBE response:%s", job_id);
    if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
        snprintf(err, size, "redis SUBSCRIBE: %s",
                 r != NULL && r->str != NULL ? r->str : sub->errstr);
        freeReplyObject(r);
        redisFree(sub);
        return NULL;
    }

    freeReplyObject(r);

    return sub;
}


/*
 * result:<job> when it is at most max bytes, else its size (an integer
 * reply); nil when there is none.  One script, so the size is the one
 * of the value not read.  EVAL_RO: Redis takes EVAL's keys for written
 * ones, and the agent's Redis user may only read result:* (the worker
 * stores them; conf/redis-acl.conf).
 */

static redisReply *
ag_job_get(ag_run_t *run, const char *job_id, size_t max)
{
    return redisCommand(run->redis, "EVAL_RO %s 1 result:%s %lld",
                        "local n = redis.call('strlen', KEYS[1]) "
                        "if n > tonumber(ARGV[1]) then return n end "
                        "return redis.call('get', KEYS[1])",
                        job_id, (long long) max);
}


/*
 * The message says where the result is bad, never what it says there:
 * jansson's quotes the text near its fault, the worker's words (or
 * anyone's who can write Redis), and the message reaches the model as
 * the agent's own, outside the data wrapper.  A result is the run's
 * only when it names the run's job and session: result:<job> and its
 * channel are keyed by the job's id alone, and a result another job
 * of that id had (another session's) was shown to the run as its own
 * (docs/jobs.md, "One job_id, one entry").
 */

static json_t *
ag_job_result(ag_run_t *run, const char *job_id, const char *s, size_t len,
    char *err, size_t size)
{
    json_t        *j;
    json_error_t   jerr;

    j = json_loadb(s, len, 0, &jerr);

    if (j == NULL) {
        snprintf(err, size, "the job result is not JSON (at byte %d)",
                 jerr.position);
        return NULL;
    }

    if (!json_is_object(j) || !json_is_string(json_object_get(j, "status")))
    {
        snprintf(err, size, "the job result is not a result object (no "
                 "\"status\" string)");
        json_decref(j);
        return NULL;
    }

    if (!ag_json_is(json_object_get(j, "job_id"), job_id)
        || !ag_json_is(json_object_get(j, "session_id"), run->session))
    {
        snprintf(err, size, "the job result is another job's (its "
                 "\"job_id\" or \"session_id\" is not this one's)");
        json_decref(j);
        return NULL;
    }

    return j;
}


/* whether v is the string s, whole (a NUL in it included) */

static int
ag_json_is(json_t *v, const char *s)
{
    return json_is_string(v) && json_string_length(v) == strlen(s)
           && memcmp(json_string_value(v), s, strlen(s)) == 0;
}


/*
 * An id the agent takes from outside (a session, an owner, a job, a tool
 * call's): 1 to AG_ID_MAX of A-Z a-z 0-9 _ -, so that it is one part of a
 * Redis key and shows as it is.
 */

int
ag_id_ok(const char *s, size_t len)
{
    size_t  i;
    char    c;

    if (len == 0 || len > AG_ID_MAX) {
        return 0;
    }

    for (i = 0; i < len; i++) {
        c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9') || c == '_' || c == '-'))
        {
            return 0;
        }
    }

    return 1;
}
