/*
 * airlock-agent: the reasoning loop, a plain client of the appliance.
 *
 * It serves HTTP on a unix socket only (nginx publishes it at /api/):
 *
 *   POST /v1/sessions                               ->  {"id": ...}, 201
 *   POST /v1/sessions/{id}/ask   {"prompt": "..."}  ->  text/event-stream
 *   GET  /v1/sessions/{id}                          ->  the history (JSON)
 *
 * Each question is one run: the model is called through Airlock's LLM
 * gateway on Airlock's unix socket (OpenAI chat completions, streaming,
 * with tools), its tool calls go to the named routes on the same socket
 * or become sandbox jobs on the Redis stream, and every result goes back
 * to the model wrapped as untrusted data.  The agent holds no key and no
 * route credential: the proxy knows it by its unix uid.  Sessions live in
 * Redis with a TTL, so any agent process can continue any session.
 *
 * Each session has an owner, whoever asked its first question: the unix
 * uid of the socket's peer (SO_PEERCRED), or for the front end that
 * publishes the socket (--api-peer, nginx's workers) the person it
 * authenticated (X-Airlock-User).  Only its owner, and root, read it or
 * ask in it; to anyone else it does not exist (404).
 */

#ifndef AGENT_H
#define AGENT_H

#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>
#include <hiredis.h>

#include "airlock.h"


#define AG_ID_MAX            64
#define AG_BOUNDARY_LEN      32             /* hex characters */
#define AG_REQUEST_MAX       (256 * 1024)   /* an HTTP request to us */
#define AG_PROMPT_MAX        (64 * 1024)
#define AG_CONTENT_MAX       (1024 * 1024)  /* model text per step */
#define AG_ARGS_MAX          (256 * 1024)   /* one tool call's arguments */
#define AG_CALLS_MAX         16             /* tool calls per step */
#define AG_CALL_ID_MAX       40             /* a tool call's id the
                                               model gave, kept: OpenAI
                                               takes no longer one back */
#define AG_TOOL_UNKNOWN      "_unknown_tool"  /* the name of a call that
                                               named none of the agent's
                                               tools (no route's name
                                               starts with '_') */
#define AG_SCRIPT_MAX        (64 * 1024)
#define AG_ERRBODY_MAX       4096
#define AG_PREFIX_MAX        256            /* --llm-prefix, at most */
#define AG_SOCKET_MAX        107            /* a unix socket's path: the
                                               kernel's sun_path, less
                                               its NUL */
#define AG_NAME_MAX          256            /* --client, --sandbox,
                                               --model, at most */
#define AG_API_USER_MAX      64             /* X-Airlock-User, at most */
#define AG_STORE_RETRY_MS    10000  /* ms: a session stored, a run's tokens
                                       counted, after a Redis restart */
#define AG_OWNER_MAX         (AG_API_USER_MAX + 8)  /* "uid:N", "api:NAME" */
#define AG_OWNER_CHARS       "ABCDEFGHIJKLMNOPQRSTUVWXYZ"                 \
                             "abcdefghijklmnopqrstuvwxyz0123456789._@-:"
                                            /* of an owner, as the agent
                                               writes it */
#define AG_MODELS_SHOWN      512            /* the models --model may
                                               name, as its error lists
                                               them, at most */

/*
 * The longest event line the agent sends, "data: " and all: the answer,
 * AG_CONTENT_MAX bytes that may each be a control character JSON writes
 * as 6 ("\u0001"), and the event's other fields.  Every other event is
 * shorter.  The airlock CLI reads lines up to this.
 */
#define AG_EVENT_MAX         (6 * AG_CONTENT_MAX + 64 * 1024)
#define AG_RUNS_KEPT         50
#define AG_SESSION_MAX       (16 * 1024 * 1024)  /* a session's JSON, at
                                                    most: stored, read */
#define AG_JOB_WALL_MIN      100            /* ms: a job's wall time, at
                                               least (the worker refuses
                                               less: AW_MIN_WALL_MS) */
#define AG_NEW_ID_LEN        (2 * AG_BOUNDARY_LEN)  /* a new session's
                                               id: nonce and tag */
#define AG_LOCK_TTL          30             /* s: a session lock's lease */
#define AG_LOCK_KEEP_MS      1000           /* how often it is renewed */
#define AG_LOAD_WAIT_MS      5000           /* a session's read waits
                                               for memory so long, at
                                               most, then 503 "busy" */
#define AG_DENIALS_LOOK      0              /* ag_denials_charge(): */
#define AG_DENIALS_HOLD      1
#define AG_DENIALS_DENIED    2
#define AG_DENIALS_FREE      3
#define AG_COUNT_DAY         1              /* ag_tokens_charge(): */
#define AG_COUNT_MINUTE      2
#define AG_VERSION_MAX       64             /* a session's version,
                                               "<n> <run>", at most */


typedef struct {
    const char      *listen;                /* our unix socket */
    const char      *gateway;               /* Airlock's unix socket */
    const char      *redis;                 /* unix:/path, host:port,
                                               [ipv6]:port or [ipv6] */
    const char      *redis_user;            /* AUTH as, or NULL */
    const char      *redis_password_file;   /* its password */
    const char      *policy_file;
    const char      *client;                /* the agent's policy client */
    const char      *sandbox;               /* run_python's client, or NULL */
    const char      *llm_prefix;            /* "/v1/proxy/openai" */
    const char      *model;
    const char      *system_prompt;         /* extra operator text */
    const char      *listen_group;          /* --listen-group, or NULL */
    gid_t            listen_gid;            /* its gid */
    const char      *api_peer;              /* --api-peer, or NULL */
    uid_t            api_uid;               /* its uid */
    uid_t            overflow_uid;          /* a peer's uid the kernel
                                               could not map */
    int              random_ids;            /* --random-session-ids */

    long             max_steps;
    long             max_tokens;
    long             max_tool_bytes;
    long             max_wall_ms;
    long             max_denials;
    long             job_wall_ms;
    long             max_user_jobs;         /* jobs one asker awaits at
                                               once, all their questions
                                               together; 0: no limit */
    long             max_queued_jobs;       /* entries in the job stream,
                                               at most, to add one */
    long             session_ttl;           /* seconds */
    long             max_user_bytes;        /* an owner's sessions'
                                               bytes, at most, for a
                                               question; 0: no limit */
    long             max_user_tokens;       /* an owner's questions'
                                               tokens a UTC day, at most,
                                               for a model call; 0: no
                                               limit */
    long             max_user_tpm;          /* tokens an owner's
                                               questions' model calls
                                               hold and use in a UTC
                                               minute, at most; 0: no
                                               limit; -1: not given
                                               (half the client's
                                               tokens_per_minute) */
    long             max_user_denials;      /* proxy denials an owner's
                                               questions cause within
                                               denials_window_ms, at
                                               most, for a tool call; 0:
                                               no limit; -1: not given
                                               (from the policy) */
    long             denials_window_ms;     /* the policy's quarantine
                                               window, or 60 s */
    long             history_bytes;         /* earlier questions' messages
                                               sent, at most */
    long             max_connections;       /* served at once, each a
                                               process */
    long             max_user_connections;  /* of one peer uid (not
                                               root's, not the
                                               --api-peer's); 0: half of
                                               max_connections */
    long             max_api_connections;   /* of the --api-peer, all its
                                               users together (not
                                               root's); 0: half of
                                               max_connections */
    long             max_loaded_sessions;   /* sessions at
                                               AG_SESSION_MAX held in
                                               memory at once, all
                                               connections together */
    long             send_timeout_ms;       /* a client's time to take an
                                               answer, past a run's wall
                                               time */

    al_policy_t     *policy;
    const al_client_t  *pclient;
    const al_client_t  *psandbox;           /* run_python's, or NULL */
    json_t          *tools;                 /* OpenAI "tools" array */
    const char      *out_member;            /* the request's output cap,
                                               as the gateway names it */
    long             out_cap;               /* the gateway's cap for
                                               --client when a request
                                               names none; 0: none */
} ag_conf_t;


typedef struct {
    ag_conf_t       *conf;
    int              fd;                    /* the asking client, SSE */
    unsigned         client_gone:1;

    char             session[AG_ID_MAX + 1];
    char             run_id[AG_BOUNDARY_LEN + 1];
    char             boundary[AG_BOUNDARY_LEN + 1];

    json_t          *session_obj;           /* {"id", "messages", "runs"} */
    char            *loaded;                /* the session as read, or
                                               NULL: none was stored */
    size_t           loaded_len;
    char             version[AG_VERSION_MAX + 1];  /* the session's as
                                               read, "<n> <run>", or "":
                                               none (ag_session_store()) */
    json_t          *messages;              /* borrowed from session_obj */
    json_t          *events;                /* this run's events */
    json_t          *denied;                /* signatures of denied calls */
    json_t          *done;                  /* the "done" event, sent once
                                               the session is stored */

    redisContext    *redis;

    long             steps;
    long             tokens;
    long             last_prompt;           /* the last call's prompt, in
                                               tokens: the next one's is
                                               no smaller */
    size_t           last_sent;             /* the last call's request,
                                               in bytes (its output cap
                                               0), or 0: none yet */
    const char      *payer;                 /* whose quotas the run's
                                               tokens count against */
    const char      *asker;                 /* who asked: the owner its
                                               lock and jobs name */
    long long        unpaid;                /* tokens not yet counted in
                                               the payer's day */
    long long        hold;                  /* tokens the model call
                                               holds, or held and not
                                               let go yet, against the
                                               payer's day
                                               (ag_tokens_hold()); 0:
                                               none */
    long             held;                  /* calls held against the
                                               payer's denials
                                               (ag_denials_hold()) */
    long long        day_used;              /* the payer's day, as last
                                               counted, unpaid included;
                                               -1: no quota */
    long             tool_bytes;
    long             denials;
    int64_t          start_ms;
    int64_t          deadline_ms;
    int64_t          send_deadline_ms;      /* the client takes its events
                                               by then, or is gone */
} ag_run_t;


/* who asks: a session's owner is the one that asked its first question */
typedef struct {
    char             owner[AG_OWNER_MAX];   /* "uid:N" or "api:NAME" */
    unsigned         admin:1;               /* uid 0 on the socket: every
                                               session */
} ag_peer_t;


/* a finished HTTP exchange made with libcurl */
typedef struct {
    long             status;                /* 0: no answer */
    char            *body;                  /* NUL-terminated, malloc'ed */
    size_t           len;
    unsigned         truncated:1;
    char             denial[32];            /* the one Airlock-Denial
                                               header, or "" */
    char             error[256];            /* transport error, or "" */
} ag_http_t;


/* ag_main.c */
extern volatile sig_atomic_t  ag_stopping;  /* a run's SIGTERM came, or
                                               its client hung up */
extern volatile sig_atomic_t  ag_left;      /* its client hung up */

int64_t ag_now_ms(void);
int ag_random_hex(char *out, size_t hexlen);
void ag_array_drop(json_t *a, size_t k);
int ag_write_fd(int fd, const char *p, size_t len, int64_t deadline);
void ag_show_value(FILE *f, const char *v);

/* ag_run.c: one question, events written to run->fd */
int ag_run_ask(ag_run_t *run, const char *prompt);
void ag_run_done(ag_run_t *run);
size_t ag_history_trim(json_t *messages, long max);
void ag_event(ag_run_t *run, const char *type, json_t *data);
char *ag_wrap(const char *boundary, const char *data, size_t len);
int ag_tokens_counted(const ag_conf_t *conf);

/* ag_llm.c: the model through the gateway, and the named routes */
typedef struct {
    char            *content;
    size_t           content_len;
    json_t          *tool_calls;            /* [{id, name, arguments}] */
    long             total_tokens;          /* -1: not reported */
    long             prompt_tokens;         /* -1: not reported */
    size_t           sent_len;              /* the request's bytes */
    char             finish[32];
    long             status;
    char             error[AG_ERRBODY_MAX];
} ag_llm_result_t;

int ag_llm_call(ag_run_t *run, const char *body, size_t len,
    ag_llm_result_t *res);
void ag_llm_result_free(ag_llm_result_t *res);
int ag_route_call(ag_run_t *run, const char *method, const char *target,
    const char *body, const char *ctype, size_t max, ag_http_t *out);
void ag_http_free(ag_http_t *h);

/* ag_redis.c: sessions and sandbox jobs */
int ag_id_ok(const char *s, size_t len);
int ag_redis_where(const char *where, char *host, size_t size, long *port,
    const char **why);
redisContext *ag_redis_connect(const ag_conf_t *conf, char *err,
    size_t size);
json_t *ag_session_load(redisContext *c, const char *id, const char *owner,
    size_t max, size_t *need, int *damaged, char **raw, size_t *raw_len,
    char *version, char *err, size_t size);
int ag_session_store(redisContext *c, const char *id, const char *owner,
    const char *payer, json_t *session, long ttl, const char *loaded,
    size_t loaded_len, const char *version, const char *run_id, char *err,
    size_t size);
int ag_quota_check(redisContext *c, const char *owner, long long max,
    long long *used, long long *left_ms, char *err, size_t size);
void ag_tokens_over(const ag_conf_t *conf, const char *payer,
    long long used, long long left_ms, char *buf, size_t size);
int ag_tokens_charge(redisContext *c, const char *owner, int count,
    long long add, const char *run_id, long long held, long long *used,
    long long *left_ms, char *err, size_t size);
int ag_tokens_hold(redisContext *c, const char *owner, const char *run_id,
    long long least, long long want, long long max, long long minute_max,
    long long ttl_ms, long long *got, long long *used, long long *left_ms,
    char *err, size_t size);
void ag_denials_over(const ag_conf_t *conf, const char *payer,
    long long used, long long left_ms, char *buf, size_t size);
int ag_denials_charge(redisContext *c, const char *owner, int how,
    const char *member, long max, long long window_ms, long long *used,
    long long *left_ms, char *err, size_t size);
int ag_session_owner(redisContext *c, const char *id, char *owner,
    size_t size);
int ag_session_new(redisContext *c, const char *owner, char *id, char *err,
    size_t size);
int ag_session_made(redisContext *c, const char *id, const char *owner,
    char *err, size_t size);
int ag_session_lock(redisContext *c, const char *id, const char *owner,
    long ttl, char *err, size_t size);
pid_t ag_session_keep(ag_conf_t *conf, const char *id, const char *owner,
    int client);
void ag_session_keep_end(pid_t keeper);
void ag_session_unlock(redisContext *c, const char *id, const char *owner);
int ag_redis_revive(ag_run_t *run, char *err, size_t size);
void ag_jobs_sweep(ag_run_t *run);
json_t *ag_job_run(ag_run_t *run, const char *job_id, json_t *envelope,
    long wait_ms, size_t max, int *withdrawn, long long *large, char *err,
    size_t size);

#endif /* AGENT_H */
