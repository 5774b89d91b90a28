/*
 * airlock-worker: the one component allowed to start sandboxes.
 *
 * It takes job envelopes from a Redis stream (consumer group), fetches
 * each blueprint input through Airlock's unix socket as its own client,
 * runs the script in a fresh sandbox (gVisor `runsc run` on an OCI bundle,
 * or bubblewrap), and hands back exactly one result per job.  docs/jobs.md
 * describes the contract; this header is the whole internal API.
 */

#ifndef AW_H
#define AW_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <jansson.h>


#define AW_ERRLEN        512
#define AW_ID_MAX        64

/*
 * The room a result_not_stored stand-in needs (aw_result_unstored()):
 * two ids and a code of 64 bytes, a message of AW_ERRLEN, each escaped
 * up to 6 times, six timings
 */
#define AW_RESULT_SMALL  8192

/* aw_json_bytes(): a NUL becomes U+FFFD too (text for the agent) */
#define AW_JSON_NO_NUL   1


typedef enum {
    AW_BACKEND_GVISOR = 0,
    AW_BACKEND_BWRAP
} aw_backend_e;


typedef struct {
    long             wall_ms;
    long             cpu_ms;
    long             memory_mb;
    long             pids;
    long             stdout_bytes;
    long             stderr_bytes;
} aw_limits_t;


typedef struct {
    /* Redis */
    char            *redis_host;
    int              redis_port;
    char            *redis_unix;
    char            *redis_user;            /* AUTH as, or NULL */
    char            *redis_password_file;   /* its password's file */
    char            *redis_password;        /* read at start, kept */
    char            *stream;
    char            *group;
    char            *consumer;
    char            *dead_letter;
    long             dead_letter_maxlen;
    char            *errors_key;
    long             visibility_ms;
    long             block_ms;
    long             max_deliveries;
    long             result_ttl;

    /* data */
    char            *proxy_socket;
    char            *policy;
    char            *user;
    uid_t            uid;
    gid_t            gid;
    long             fetch_timeout_ms;
    long             fetch_max_bytes;
    long             max_inputs;
    long             max_script_bytes;
    long             max_envelope_bytes;

    /* sandboxes */
    aw_backend_e     backend;
    char            *runsc;
    char            *platform;
    char            *bwrap;
    char            *rootfs;
    char            *workdir;
    char            *cgroup_root;
    char            *cgroup_name;
    long             scratch_mb;
    long             sandbox_uid;
    long             bwrap_uids;        /* host uids from sandbox_uid */
    long             cpus;              /* CFS quota in CPUs, 0 = none */
    long             host_uid;          /* bwrap: this worker's lease */
    int              host_uid_fd;       /* its lock (-1: none) */

    aw_limits_t      defaults;
    aw_limits_t      maxima;
} aw_conf_t;


typedef struct {
    char             name[AW_ID_MAX + 1];
    char            *path;              /* the request target, escaped */
    const char      *method;
    char            *body;              /* text or NULL */
    const char      *ctype;             /* the body's Content-Type: the
                                           route's, al_tool_content_type()
                                           (not owned), or NULL */
} aw_input_t;


typedef struct {
    char             job_id[AW_ID_MAX + 1];
    char             session_id[AW_ID_MAX + 1];
    char            *script;
    size_t           script_len;
    aw_input_t      *inputs;
    size_t           ninputs;
    aw_limits_t      limits;
} aw_job_t;


typedef enum {
    AW_ST_OK = 0,
    AW_ST_ERROR,
    AW_ST_TIMEOUT,
    AW_ST_OOM,
    AW_ST_KILLED,
    AW_ST_REJECTED
} aw_status_e;


typedef struct {
    long             fetch;
    long             prepare;
    long             start;
    long             run;
    long             teardown;
    long             total;
} aw_timing_t;


typedef struct {
    aw_status_e      status;
    int              ran;
    int              exit_code;
    char            *out;
    size_t           out_len;
    int              out_trunc;
    char            *err;
    size_t           err_len;
    int              err_trunc;
    char             code[64];          /* error code, "" when ok */
    char             message[AW_ERRLEN];
    aw_timing_t      timing;
    int              lost;              /* the launcher or the fetch
                                           spawner is gone: no result,
                                           the entry stays pending */
} aw_result_t;


/*
 * The launcher (aw_priv.c): the one process that keeps root.  A request
 * is one aw_launch_req_t on a SOCK_SEQPACKET socket with exactly
 * AW_LAUNCH_NFDS descriptors (SCM_RIGHTS) in this order: the script and
 * data.json (regular files, read from offset 0), then the write ends of
 * the stdout, stderr and status pipes.  The answer is one
 * aw_launch_rep_t.  Both are fixed-layout: no field is parsed as text.
 */
#define AW_LAUNCH_MAGIC  0x31574c41     /* "ALW1" */
#define AW_LAUNCH_NFDS   5

/* the limits' floors, as aw_job.c enforces them on an envelope */
#define AW_MIN_WALL_MS    100
#define AW_MIN_CPU_MS     1000
#define AW_MIN_MEMORY_MB  16
#define AW_MIN_PIDS       8

/* the most data.json a fetch can hand over (aw_fetch()'s buffer) */
#define AW_DATA_MAX(conf)                                                    \
    (2 * ((size_t) (conf)->fetch_max_bytes * 6 * (size_t) (conf)->max_inputs \
          + 65536))


typedef struct {
    uint32_t         magic;
    uint32_t         seq;
    int64_t          wall_ms;
    int64_t          cpu_ms;
    int64_t          memory_mb;
    int64_t          pids;
} aw_launch_req_t;


typedef enum {
    AW_LAUNCH_RAN = 0,                  /* the keeper reported */
    AW_LAUNCH_NOREPORT,                 /* the keeper died */
    AW_LAUNCH_SETUP,                    /* the job's directory or cgroup */
    AW_LAUNCH_INTERNAL,                 /* pipes, fork */
    AW_LAUNCH_REFUSED                   /* a request out of bounds */
} aw_launch_e;


typedef struct {
    uint32_t         magic;
    uint32_t         seq;
    int32_t          result;            /* aw_launch_e */
    int32_t          end;               /* the keeper's verdict */
    int32_t          status;            /* the runtime's wait status */
    int32_t          runsc_rc;          /* 0: runsc logged runsc_status */
    int32_t          runsc_status;
    int32_t          runsc_lost;        /* runsc: the sandbox was gone */
    int64_t          cpu_ms;
    int64_t          ooms;
    int64_t          pids_max;
    int64_t          prepare_ms;
    int64_t          run_ms;
    int64_t          teardown_ms;
    char             slot[64];
    char             text[256];         /* what failed, "" when nothing */
} aw_launch_rep_t;


/* aw_config.c */
void aw_conf_defaults(aw_conf_t *conf);
int aw_conf_load(aw_conf_t *conf, const char *path, char *err, size_t n);
int aw_conf_consumer(aw_conf_t *conf, char *err, size_t n);
int aw_conf_password(aw_conf_t *conf, char *err, size_t n);
void aw_conf_free(aw_conf_t *conf);
const char *aw_backend_name(aw_backend_e b);

/* aw_scan.c: the ids of an envelope too large to parse */
void aw_envelope_ids(const char *raw, size_t len, char *jid, char *sid);

/* aw_json.c: whether json_loadb() would take a text, without its tree */
int aw_json_valid(const char *text, size_t len);

/* aw_job.c: envelopes in, results out */
int aw_job_parse(const aw_conf_t *conf, const void *policy, const char *raw,
    size_t len, aw_job_t *job, char *code, size_t codelen, char *err,
    size_t errlen);
void aw_job_scan_ids(const char *raw, size_t len, aw_job_t *job);
void aw_job_ids_read(const char *rec, size_t len, aw_job_t *job);
void aw_job_free(aw_job_t *job);
json_t *aw_json_bytes(const char *s, size_t len, unsigned flags);
const char *aw_status_name(aw_status_e st);
char *aw_result_json(const aw_conf_t *conf, const char *job_id,
    const char *session_id, const aw_result_t *res);
size_t aw_result_unstored(const aw_conf_t *conf, const char *job_id,
    const char *session_id, const aw_result_t *res, size_t len,
    const char *why, char *buf, size_t size);
const char *aw_result_text(const aw_conf_t *conf, const char *job_id,
    const char *session_id, const aw_result_t *res, char **json,
    char *small);
void aw_result_free(aw_result_t *res);
void aw_result_fail(aw_result_t *res, aw_status_e st, const char *code,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* aw_fetch.c: data.json through the proxy, as the worker user */
char *aw_fetch(const aw_conf_t *conf, const aw_job_t *job, size_t *len,
    aw_result_t *res);
int aw_fetch_split(aw_conf_t *conf, char *err, size_t n);
int aw_fetch_gone(int *st);

/* aw_sandbox.c */
int aw_sandbox_check(const aw_conf_t *conf, char *err, size_t n);
int aw_sandbox_lease(aw_conf_t *conf, char *err, size_t n);
void aw_sandbox_run(const aw_conf_t *conf, const aw_job_t *job,
    const char *data, size_t data_len, aw_result_t *res);
void aw_sandbox_cleanup_stale(const aw_conf_t *conf);
void aw_sandbox_owner(void);
void aw_sandbox_launch(const aw_conf_t *conf, const aw_limits_t *lim,
    int fds[AW_LAUNCH_NFDS], int sock, aw_launch_rep_t *rep);

/* aw_priv.c: the launcher and the unprivileged worker */
int aw_priv_split(aw_conf_t *conf, char *err, size_t n);
pid_t aw_priv_fork(int *sock, char *err, size_t n);
int aw_priv_drop(const aw_conf_t *conf, int keep, char *err, size_t n);
void aw_priv_close_others(int a, int b);
int aw_priv_take_fds(struct msghdr *msg, int *fds, size_t max);
int aw_priv_fd(void);
int aw_priv_watch(void);
int aw_priv_send(const aw_launch_req_t *req,
    const int fds[AW_LAUNCH_NFDS]);
int aw_priv_recv(uint32_t seq, aw_launch_rep_t *rep);
void aw_priv_serve(const aw_conf_t *conf, int sock)
    __attribute__((noreturn));

/* aw_util.c */
long aw_now_ms(void);
void aw_log(const char *level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int aw_rmtree(const char *path);
int aw_write_file(const char *path, const void *buf, size_t len, int mode);

#endif /* AW_H */
