/*
 * The data a script gets: each blueprint input fetched through Airlock's
 * unix socket.  The fetch runs in a child that has dropped to the worker
 * user, so the proxy identifies it by peer uid as the policy's worker
 * client; the worker itself holds no credential.  The child writes to a
 * pipe "D" and data.json, which the worker takes as it is, or "E" and
 * {"error": {code, message}}.  A body reaches the script as it came, NUL
 * bytes included (a raw one in a text body, "\u0000" in a JSON one): the
 * script's json.load reads JSON with NULs in strings.  A JSON body is
 * its text, checked by aw_json_valid(), never a tree.
 *
 * The worker keeps the supplementary groups it was started with (the
 * unit's SupplementaryGroups=redis, Redis's socket), and having no
 * capability it cannot drop them in a child.  So, started as root, it
 * splits off the fetch spawner before it drops (aw_fetch_split(), from
 * aw_priv_split()): a process of the worker's user and group alone (no
 * supplementary group, no capability, no new privileges, no Redis
 * password, no descriptor but its socket and stdio) that, for each
 * job, clones a fetch as the worker's child (CLONE_PARENT: the worker
 * waits for it and kills it as before) on the job's inputs, which the
 * worker hands over in a memory file (aw_fetch_pack()).  Started as
 * another user, the worker forks its fetches itself.
 */

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <unistd.h>

#include <curl/curl.h>

#include "airlock.h"
#include "aw.h"


/* the proxy's own denial body is under 200 bytes */
#define AW_FETCH_DENIAL_MAX  4096

#define AW_SPAWN_MAGIC       0x31534641     /* "AFS1" */

/*
 * A job's inputs as the worker packs them, at most: each path (its
 * params escaped) under AL_URI_MAX, and the bodies, each written again by
 * jansson from the envelope's tree, where only a real grows: at least 3
 * bytes in the envelope, it is written with 17 digits, up to 24 bytes
 * ("0.1" is "0.10000000000000001"), so every body together stays under
 * 8 times the envelope.  (Twice, the bound refused a body of reals as
 * "internal: File too large", which a worker that forks its fetches
 * sends.)  Each input's content type is at most AL_TOOL_CTYPE_MAX.
 */
#define AW_PACK_MAX(conf)                                                    \
    ((size_t) (conf)->max_envelope_bytes * 8 + 65536                         \
     + (size_t) (conf)->max_inputs                                           \
       * (AW_ERRLEN + 8192 + AL_TOOL_CTYPE_MAX + 8))
#define AW_PACK_NULL         0xffffffffU


/* the worker's request: the pipe's write end and the packed inputs */
typedef struct {
    uint32_t         magic;
    uint32_t         seq;
} aw_spawn_req_t;


typedef struct {
    uint32_t         magic;
    uint32_t         seq;
    int32_t          pid;               /* the fetch's, or -errno */
    int32_t          pad;
} aw_spawn_rep_t;


typedef struct {
    char            *buf;
    size_t           len;
    size_t           max;
    int              over;
} aw_buf_t;


static size_t aw_fetch_write(char *p, size_t size, size_t nmemb, void *data);
static const char *aw_fetch_denial(CURL *c);
static int aw_fetch_one(const aw_conf_t *conf, const aw_input_t *in,
    aw_buf_t *out, char *code, size_t codelen, char *msg, size_t msglen);
static int aw_fetch_append(aw_buf_t *out, const char *p, size_t n);
static int aw_fetch_dump(const char *p, size_t n, void *data);
static void aw_fetch_child(const aw_conf_t *conf, const aw_job_t *job,
    int fd, pid_t worker);
static int aw_drop_privileges(const aw_conf_t *conf);
static void aw_fetch_serve(aw_conf_t *conf, int sock, pid_t worker)
    __attribute__((noreturn));
static pid_t aw_fetch_clone(const aw_conf_t *conf, int fd, int pack,
    pid_t worker);
static void aw_fetch_unpacked(const aw_conf_t *conf, int fd, int pack,
    pid_t worker) __attribute__((noreturn));
static int aw_fetch_pack(const aw_conf_t *conf, const aw_job_t *job);
static int aw_fetch_put(aw_buf_t *out, const char *s);
static pid_t aw_fetch_spawn(const aw_conf_t *conf, const aw_job_t *job,
    int fd, aw_result_t *res);


static int       aw_fetch_sock = -1;
static pid_t     aw_fetch_spawner = -1;
static uint32_t  aw_fetch_seq;


static size_t
aw_fetch_write(char *p, size_t size, size_t nmemb, void *data)
{
    char      *nb;
    size_t     n;
    aw_buf_t  *b;

    b = data;
    n = size * nmemb;

    if (b->len + n > b->max) {
        b->over = 1;
        return 0;
    }

    nb = realloc(b->buf, b->len + n + 1);
    if (nb == NULL) {
        return 0;
    }

    memcpy(nb + b->len, p, n);
    b->buf = nb;
    b->len += n;
    b->buf[b->len] = '\0';

    return n;
}


/*
 * The value of the answer's Airlock-Denial header when it has exactly one
 * (the proxy sets one on its own refusals and removes any other), else
 * NULL.  Trailers and interim (1xx) answers do not count.  The value
 * lives as long as the handle.
 */

static const char *
aw_fetch_denial(CURL *c)
{
    struct curl_header  *h;

    if (curl_easy_header(c, AL_DENIAL_HEADER, 0, CURLH_HEADER, -1, &h)
        != CURLHE_OK || h->amount != 1)
    {
        return NULL;
    }

    return h->value;
}


/*
 * One input's answer, {"status":N,"body":...}, appended to out.  A body
 * that is JSON goes as its text, checked by aw_json_valid() (its tree
 * would cost up to about 80 times the text); any other as a string.  So
 * an input costs its body (fetch_max_bytes at most) and what is appended:
 * the text once, or a string of up to 3 bytes a byte, escaped into
 * out, at most 6 bytes a byte, with no copy between.
 */

static int
aw_fetch_one(const aw_conf_t *conf, const aw_input_t *in, aw_buf_t *out,
    char *code, size_t codelen, char *msg, size_t msglen)
{
    int                 rc, n;
    char                url[AW_ERRLEN + 8192], cerr[CURL_ERROR_SIZE];
    char                head[64], ctype[AL_TOOL_CTYPE_MAX + 16];
    long                status;
    CURL               *c;
    json_t             *body, *reason, *rid;
    CURLcode            cc;
    aw_buf_t            b;
    struct curl_slist  *hdrs;

    c = curl_easy_init();
    if (c == NULL) {
        snprintf(code, codelen, "internal");
        snprintf(msg, msglen, "curl_easy_init failed");
        return -1;
    }

    memset(&b, 0, sizeof(b));
    b.max = (size_t) conf->fetch_max_bytes;
    hdrs = NULL;
    cerr[0] = '\0';
    rc = -1;

    snprintf(url, sizeof(url), "http://localhost%s", in->path);

    curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, conf->proxy_socket);
    curl_easy_setopt(c, CURLOPT_URL, url);
    /*
     * A HEAD's answer has headers only, with the Content-Length of the
     * body a GET would get: sent as a custom method, libcurl would wait
     * for that body until the timeout
     */
    if (strcmp(in->method, "HEAD") == 0) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);

    } else {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, in->method);
    }
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, aw_fetch_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, conf->fetch_timeout_ms);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_PROXY, "");

    /* the proxy judges the path sent, dot segments and all */
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);

    hdrs = curl_slist_append(hdrs, "Accept: application/json");

    if (in->body != NULL) {
        /* the route's, as a tool call of the agent's sends it */
        snprintf(ctype, sizeof(ctype), "Content-Type: %s",
                 in->ctype != NULL ? in->ctype : "application/json");
        hdrs = curl_slist_append(hdrs, ctype);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, in->body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long) strlen(in->body));
    }

    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);

    cc = curl_easy_perform(c);

    if (b.over) {
        snprintf(code, codelen, "fetch_too_large");
        snprintf(msg, msglen, "input \"%s\": the response is larger than "
                 "fetch_max_bytes %ld", in->name, conf->fetch_max_bytes);
        goto done;
    }

    if (cc != CURLE_OK) {
        snprintf(code, codelen, "fetch_failed");
        snprintf(msg, msglen, "input \"%s\": %s %s through %s: %s",
                 in->name, in->method, in->path, conf->proxy_socket,
                 cerr[0] ? cerr : curl_easy_strerror(cc));
        goto done;
    }

    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);

    /*
     * The proxy's denial has its Airlock-Denial header, which no upstream
     * can send through the proxy, and a small body naming the same
     * reason, one of the policy's; any other 403, however its body
     * looks, is the upstream's answer, which reaches the script.
     */

    if (status == 403 && aw_fetch_denial(c) != NULL && b.len > 0
        && b.len <= AW_FETCH_DENIAL_MAX)
    {
        body = json_loadb(b.buf, b.len, JSON_REJECT_DUPLICATES, NULL);
        reason = json_is_object(body) ? json_object_get(body, "reason")
                                      : NULL;
        if (json_is_string(reason)
            && al_denial_reason(aw_fetch_denial(c),
                                json_string_value(reason))
               != AL_REASON_NONE)
        {
            rid = json_object_get(body, "request_id");
            snprintf(code, codelen, "route_denied");
            snprintf(msg, msglen, "input \"%s\": %s %s denied by the "
                     "proxy: %.64s%s%.64s%s", in->name, in->method, in->path,
                     json_string_value(reason),
                     json_is_string(rid) ? " (request " : "",
                     json_is_string(rid) ? json_string_value(rid) : "",
                     json_is_string(rid) ? ")" : "");
            json_decref(body);
            goto done;
        }

        json_decref(body);
    }

    snprintf(head, sizeof(head), "{\"status\":%ld,\"body\":", status);

    if (aw_fetch_append(out, head, strlen(head)) != 0) {
        goto nomem;
    }

    if (b.len > 0 && aw_json_valid(b.buf, b.len)) {
        if (aw_fetch_append(out, b.buf, b.len) != 0) {
            goto nomem;
        }

    } else {
        body = aw_json_bytes(b.buf ? b.buf : "", b.len, 0);
        n = body != NULL ? json_dump_callback(body, aw_fetch_dump, out,
                                              JSON_COMPACT | JSON_ENCODE_ANY)
                         : -1;
        json_decref(body);

        if (n != 0) {
            goto nomem;
        }
    }

    if (aw_fetch_append(out, "}", 1) != 0) {
        goto nomem;
    }

    rc = 0;
    goto done;

nomem:

    snprintf(code, codelen, "internal");
    snprintf(msg, msglen, "input \"%s\": out of memory", in->name);

done:

    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    free(b.buf);

    return rc;
}


/*
 * out grows by doubling (its max is its size); the worker bounds what it
 * reads of it
 */

static int
aw_fetch_append(aw_buf_t *out, const char *p, size_t n)
{
    char    *nb;
    size_t   cap;

    if (out->len + n > out->max) {
        cap = out->max ? out->max : 65536;
        while (cap < out->len + n) {
            cap *= 2;
        }

        nb = realloc(out->buf, cap);
        if (nb == NULL) {
            return -1;
        }

        out->buf = nb;
        out->max = cap;
    }

    memcpy(out->buf + out->len, p, n);
    out->len += n;

    return 0;
}


static int
aw_fetch_dump(const char *p, size_t n, void *data)
{
    return aw_fetch_append(data, p, n);
}


static int
aw_drop_privileges(const aw_conf_t *conf)
{
    if (getuid() != 0 && geteuid() != 0) {
        return 0;
    }

    if (setgroups(0, NULL) != 0 || setgid(conf->gid) != 0
        || setuid(conf->uid) != 0)
    {
        return -1;
    }

    /* never root (aw_conf_load()): the switch is for good */
    if (setuid(0) == 0 || getgid() == 0) {
        return -1;
    }

    return 0;
}


/*
 * The fetch dies with the worker: one that outlived it would go on
 * sending the job's inputs (POSTs too) for a job another worker will run
 * again.  PR_SET_PDEATHSIG is set after the change of credentials, which
 * clears it; a worker that died before that ends the fetch here.
 */

static void
aw_fetch_child(const aw_conf_t *conf, const aw_job_t *job, int fd,
    pid_t worker)
{
    char       code[64], msg[AW_ERRLEN], *s;
    size_t     i, len, off;
    ssize_t    n;
    json_t    *one, *e;
    aw_buf_t   out;

    /*
     * "D" and data.json, built one input at a time, each input's text
     * appended as it comes (aw_fetch_one()); or "E" and the error
     */
    memset(&out, 0, sizeof(out));

    if (aw_fetch_append(&out, "D{", 2) != 0) {
        _exit(2);
    }

    if (aw_drop_privileges(conf) != 0) {
        snprintf(code, sizeof(code), "internal");
        snprintf(msg, sizeof(msg), "cannot switch to user %s: %s",
                 conf->user, strerror(errno));
        goto fail;
    }

    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != worker) {
        _exit(2);
    }

    for (i = 0; i < job->ninputs; i++) {
        /* ,"<name>": (a name is [A-Za-z0-9_-]) */
        if ((i > 0 && aw_fetch_append(&out, ",", 1) != 0)
            || aw_fetch_append(&out, "\"", 1) != 0
            || aw_fetch_append(&out, job->inputs[i].name,
                               strlen(job->inputs[i].name)) != 0
            || aw_fetch_append(&out, "\":", 2) != 0)
        {
            _exit(2);
        }

        if (aw_fetch_one(conf, &job->inputs[i], &out, code, sizeof(code),
                         msg, sizeof(msg))
            != 0)
        {
            goto fail;
        }
    }

    if (aw_fetch_append(&out, "}", 1) != 0) {
        _exit(2);
    }

    s = out.buf;
    len = out.len;
    goto write;

fail:

    free(out.buf);
    e = json_object();
    json_object_set_new(e, "code", json_string(code));
    json_object_set_new(e, "message", aw_json_bytes(msg, strlen(msg), 0));

    one = json_object();
    json_object_set_new(one, "error", e);
    s = json_dumps(one, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (s == NULL || write(fd, "E", 1) != 1) {
        _exit(2);
    }
    len = strlen(s);

write:

    for (off = 0; off < len; off += (size_t) n) {
        n = write(fd, s + off, len - off);
        if (n <= 0) {
            _exit(2);
        }
    }

    _exit(0);
}


/*
 * Called by aw_priv_split() as root, before the worker drops: the fetch
 * spawner, a child that drops to the worker's user and group with no
 * supplementary group and clones each job's fetch (aw_fetch_serve()).
 */

int
aw_fetch_split(aw_conf_t *conf, char *err, size_t n)
{
    int    sock;
    pid_t  pid, worker;

    worker = getpid();

    pid = aw_priv_fork(&sock, err, n);
    if (pid < 0) {
        return -1;
    }

    if (pid == 0) {
        aw_fetch_serve(conf, sock, worker);
    }

    aw_fetch_sock = sock;
    aw_fetch_spawner = pid;

    return 0;
}


/* The worker's: whether the fetch spawner has exited, and how. */

int
aw_fetch_gone(int *st)
{
    return aw_fetch_spawner > 0
           && waitpid(aw_fetch_spawner, st, WNOHANG) == aw_fetch_spawner;
}


/*
 * The fetch spawner: one request at a time, a fixed-layout
 * aw_spawn_req_t with two descriptors, the write end of the fetch's
 * pipe and the memory file of its inputs, each answered with the
 * fetch's pid or -errno.  It reads neither; it ends with the worker
 * (its socket's end, or PR_SET_PDEATHSIG).
 */

static void
aw_fetch_serve(aw_conf_t *conf, int sock, pid_t worker)
{
    int              i, nfd, fds[2 + 16], fl;
    char             err[AW_ERRLEN];
    ssize_t          r;
    struct stat      st;
    struct iovec     iov;
    struct msghdr    msg;
    aw_spawn_req_t   req[2];
    aw_spawn_rep_t   rep;
    union {
        char             buf[CMSG_SPACE(sizeof(int) * (2 + 16))];
        struct cmsghdr   align;
    } u;

    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGCHLD, SIG_DFL);

    (void) prctl(PR_SET_NAME, "aw-fetchd", 0, 0, 0);

    /* nothing of the worker's but the socket and stdio: not the uid lease */
    aw_priv_close_others(sock, -1);

    /* nor the Redis password */
    if (conf->redis_password != NULL) {
        explicit_bzero(conf->redis_password, strlen(conf->redis_password));
        free(conf->redis_password);
        conf->redis_password = NULL;
    }

    if (aw_priv_drop(conf, 0, err, sizeof(err)) != 0) {
        aw_log("alert", "fetch spawner: %s", err);
        _exit(1);
    }

    /* set after the change of credentials, which clears it */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != worker) {
        _exit(1);
    }

    for ( ;; ) {
        memset(&msg, 0, sizeof(msg));
        memset(req, 0, sizeof(req));
        iov.iov_base = req;
        iov.iov_len = sizeof(req);
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = u.buf;
        msg.msg_controllen = sizeof(u.buf);

        r = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);

        if (r < 0 && errno == EINTR) {
            continue;
        }

        if (r <= 0) {
            /* the worker is gone (or sent what it never sends) */
            _exit(r == 0 ? 0 : 1);
        }

        nfd = aw_priv_take_fds(&msg, fds, sizeof(fds) / sizeof(fds[0]));

        memset(&rep, 0, sizeof(rep));
        rep.magic = AW_SPAWN_MAGIC;
        rep.seq = req[0].seq;
        rep.pid = -EINVAL;

        if (r == (ssize_t) sizeof(req[0])
            && (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) == 0
            && req[0].magic == AW_SPAWN_MAGIC && nfd == 2
            && fstat(fds[0], &st) == 0 && S_ISFIFO(st.st_mode)
            && (fl = fcntl(fds[0], F_GETFL)) >= 0
            && (fl & O_ACCMODE) == O_WRONLY
            && fstat(fds[1], &st) == 0 && S_ISREG(st.st_mode)
            && (size_t) st.st_size <= AW_PACK_MAX(conf))
        {
            rep.pid = aw_fetch_clone(conf, fds[0], fds[1], worker);
        }

        for (i = 0; i < nfd; i++) {
            close(fds[i]);
        }

        do {
            r = send(sock, &rep, sizeof(rep), MSG_NOSIGNAL);
        } while (r < 0 && errno == EINTR);

        if (r != (ssize_t) sizeof(rep)) {
            _exit(1);
        }
    }
}


/*
 * The fetch, cloned as the worker's child (CLONE_PARENT), not the
 * spawner's: the worker waits for it, reads its pipe and kills it as
 * one it forked itself.  Raw clone() with no stack is fork() for a
 * process of one thread.
 */

static pid_t
aw_fetch_clone(const aw_conf_t *conf, int fd, int pack, pid_t worker)
{
    long  pid;

    pid = syscall(SYS_clone, (unsigned long) (CLONE_PARENT | SIGCHLD),
                  NULL, NULL, NULL, NULL);

    if (pid < 0) {
        return -errno;
    }

    if (pid == 0) {
        aw_fetch_unpacked(conf, fd, pack, worker);
    }

    return (pid_t) pid;
}


/*
 * The fetch's start: the inputs read back from the memory file
 * (aw_fetch_pack()), every length checked, and the pipe moved to 3 with
 * every other descriptor closed (the spawner's socket too).
 */

static void
aw_fetch_unpacked(const aw_conf_t *conf, int fd, int pack, pid_t worker)
{
    int           f;
    char         *buf, *p, *end, *s;
    size_t        i, len, off;
    ssize_t       r;
    uint32_t      ni, sl;
    aw_job_t      job;
    struct stat   st;

    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != worker) {
        _exit(2);
    }

    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    (void) prctl(PR_SET_NAME, "aw-fetch", 0, 0, 0);

    if (fstat(pack, &st) != 0 || st.st_size < 4
        || (size_t) st.st_size > AW_PACK_MAX(conf))
    {
        _exit(2);
    }

    len = (size_t) st.st_size;
    buf = malloc(len);
    if (buf == NULL) {
        _exit(2);
    }

    for (off = 0; off < len; off += (size_t) r) {
        r = pread(pack, buf + off, len - off, (off_t) off);
        if (r <= 0) {
            _exit(2);
        }
    }

    if (dup2(fd, 3) != 3) {
        _exit(2);
    }
    close_range(4, ~0U, 0);

    memcpy(&ni, buf, 4);
    if (ni == 0 || ni > (uint32_t) conf->max_inputs) {
        _exit(2);
    }

    memset(&job, 0, sizeof(job));
    job.inputs = calloc(ni, sizeof(aw_input_t));
    if (job.inputs == NULL) {
        _exit(2);
    }
    job.ninputs = ni;

    p = buf + 4;
    end = buf + len;

    /*
     * name, method, path, content type and body (each of the last two
     * or none): a length, the bytes, a NUL
     */
    for (i = 0; i < ni; i++) {
        for (f = 0; f < 5; f++) {
            if (end - p < 4) {
                _exit(2);
            }

            memcpy(&sl, p, 4);
            p += 4;

            if (f >= 3 && sl == AW_PACK_NULL) {
                continue;
            }

            if ((size_t) (end - p) <= (size_t) sl || p[sl] != '\0'
                || memchr(p, '\0', sl) != NULL)
            {
                _exit(2);
            }

            s = p;
            p += (size_t) sl + 1;

            switch (f) {
            case 0:
                if (sl > AW_ID_MAX) {
                    _exit(2);
                }
                memcpy(job.inputs[i].name, s, (size_t) sl + 1);
                break;

            case 1:
                job.inputs[i].method = s;
                break;

            case 2:
                job.inputs[i].path = s;
                break;

            case 3:
                if (sl > AL_TOOL_CTYPE_MAX) {
                    _exit(2);
                }
                job.inputs[i].ctype = s;
                break;

            default:
                job.inputs[i].body = s;
                break;
            }
        }
    }

    if (p != end) {
        _exit(2);
    }

    aw_fetch_child(conf, &job, 3, worker);
    _exit(2);
}


/* The worker's: a job's inputs in a memory file, for the spawner. */

static int
aw_fetch_pack(const aw_conf_t *conf, const aw_job_t *job)
{
    int        fd;
    size_t     i, off;
    ssize_t    r;
    uint32_t   ni;
    aw_buf_t   out;

    memset(&out, 0, sizeof(out));
    ni = (uint32_t) job->ninputs;

    if (aw_fetch_append(&out, (const char *) &ni, 4) != 0) {
        goto nomem;
    }

    for (i = 0; i < job->ninputs; i++) {
        if (aw_fetch_put(&out, job->inputs[i].name) != 0
            || aw_fetch_put(&out, job->inputs[i].method) != 0
            || aw_fetch_put(&out, job->inputs[i].path) != 0
            || aw_fetch_put(&out, job->inputs[i].ctype) != 0
            || aw_fetch_put(&out, job->inputs[i].body) != 0)
        {
            goto nomem;
        }
    }

    if (out.len > AW_PACK_MAX(conf)) {
        free(out.buf);
        errno = EFBIG;
        return -1;
    }

    fd = memfd_create("aw-inputs", MFD_CLOEXEC);
    if (fd < 0) {
        free(out.buf);
        return -1;
    }

    for (off = 0; off < out.len; off += (size_t) r) {
        r = write(fd, out.buf + off, out.len - off);
        if (r <= 0) {
            free(out.buf);
            close(fd);
            errno = r < 0 ? errno : EIO;
            return -1;
        }
    }

    free(out.buf);

    return fd;

nomem:

    free(out.buf);
    errno = ENOMEM;
    return -1;
}


/* s as a length, its bytes and a NUL; NULL as AW_PACK_NULL alone */

static int
aw_fetch_put(aw_buf_t *out, const char *s)
{
    size_t    n;
    uint32_t  sl;

    if (s == NULL) {
        sl = AW_PACK_NULL;
        return aw_fetch_append(out, (const char *) &sl, 4);
    }

    n = strlen(s);
    if (n >= AW_PACK_NULL) {
        return -1;
    }

    sl = (uint32_t) n;

    return aw_fetch_append(out, (const char *) &sl, 4) != 0
           || aw_fetch_append(out, s, n + 1) != 0 ? -1 : 0;
}


/*
 * The worker's: the job's fetch, cloned by the spawner on the pipe's
 * write end fd; its pid, or -1 with res set.  A spawner gone sets
 * res->lost, which ends the worker (exit 1) as a launcher gone does:
 * the entry in hand stays pending.
 */

static pid_t
aw_fetch_spawn(const aw_conf_t *conf, const aw_job_t *job, int fd,
    aw_result_t *res)
{
    int              pack, fds[2];
    ssize_t          r;
    struct iovec     iov;
    struct msghdr    msg;
    struct cmsghdr  *cm;
    aw_spawn_req_t   req;
    aw_spawn_rep_t   rep;
    union {
        char             buf[CMSG_SPACE(sizeof(int) * 2)];
        struct cmsghdr   align;
    } u;

    pack = aw_fetch_pack(conf, job);
    if (pack < 0) {
        aw_result_fail(res, AW_ST_ERROR, "internal", "the fetch's inputs: "
                       "%s", strerror(errno));
        return -1;
    }

    memset(&req, 0, sizeof(req));
    req.magic = AW_SPAWN_MAGIC;
    req.seq = ++aw_fetch_seq;

    memset(&msg, 0, sizeof(msg));
    memset(&u, 0, sizeof(u));
    iov.iov_base = &req;
    iov.iov_len = sizeof(req);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = u.buf;
    msg.msg_controllen = sizeof(u.buf);

    fds[0] = fd;
    fds[1] = pack;

    cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(fds));
    memcpy(CMSG_DATA(cm), fds, sizeof(fds));

    do {
        r = sendmsg(aw_fetch_sock, &msg, MSG_NOSIGNAL);
    } while (r < 0 && errno == EINTR);

    close(pack);

    if (r == (ssize_t) sizeof(req)) {
        do {
            r = recv(aw_fetch_sock, &rep, sizeof(rep), 0);
        } while (r < 0 && errno == EINTR);
    }

    if (r != (ssize_t) sizeof(rep) || rep.magic != AW_SPAWN_MAGIC
        || rep.seq != req.seq)
    {
        aw_log("alert", "the fetch spawner is gone or answered out of turn "
               "(%zd bytes)", r);
        aw_result_fail(res, AW_ST_ERROR, "internal",
                       "the fetch spawner is gone");
        res->lost = 1;
        return -1;
    }

    if (rep.pid <= 0) {
        aw_result_fail(res, AW_ST_ERROR, "internal", "the fetch spawner: "
                       "%s", strerror(rep.pid < 0 ? -rep.pid : EINVAL));
        return -1;
    }

    return (pid_t) rep.pid;
}


char *
aw_fetch(const aw_conf_t *conf, const aw_job_t *job, size_t *len,
    aw_result_t *res)
{
    int            fds[2], st, late, over, whole;
    char          *buf, *nb;
    pid_t          pid, worker;
    size_t         cap, n, max;
    ssize_t        r;
    long           deadline, left;
    json_t        *doc, *e;
    json_error_t   je;
    struct pollfd  pfd;

    if (job->ninputs == 0) {
        *len = 2;
        return strdup("{}");
    }

    if (pipe(fds) != 0) {
        aw_result_fail(res, AW_ST_ERROR, "internal", "pipe: %s",
                       strerror(errno));
        return NULL;
    }

    worker = getpid();

    /* started as root: the spawner's clone, with no group of the worker's */
    pid = aw_fetch_sock >= 0 ? aw_fetch_spawn(conf, job, fds[1], res)
                             : fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        if (aw_fetch_sock < 0) {
            aw_result_fail(res, AW_ST_ERROR, "internal", "fork: %s",
                           strerror(errno));
        }
        return NULL;
    }

    if (pid == 0) {
        /*
         * the fetch keeps nothing of the worker's (its Redis connection,
         * its SIGTERM handler, which would only set the child's copy of
         * the stop flag)
         */
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        if (dup2(fds[1], 3) != 3) {
            _exit(2);
        }
        close_range(4, ~0U, 0);

        /* known apart from the worker, whose user it now shares */
        (void) prctl(PR_SET_NAME, "aw-fetch", 0, 0, 0);

        aw_fetch_child(conf, job, 3, worker);
        _exit(2);
    }

    close(fds[1]);

    /* whatever the child does, it gets a bounded time and output */

    max = (size_t) conf->fetch_max_bytes * 6 * job->ninputs + 65536;
    deadline = aw_now_ms() + conf->fetch_timeout_ms * (long) job->ninputs
               + 5000;
    cap = 0;
    n = 0;
    buf = NULL;
    late = 0;
    over = 0;
    st = 0;

    for ( ;; ) {
        left = deadline - aw_now_ms();
        if (left <= 0) {
            late = 1;
            break;
        }

        pfd.fd = fds[0];
        pfd.events = POLLIN;

        if (poll(&pfd, 1, (int) left) < 0) {
            if (errno == EINTR) {
                continue;
            }
            break;
        }

        if (n + 65536 > cap) {
            if (cap >= max) {
                over = 1;
                break;
            }

            cap = cap ? cap * 2 : 65536;
            nb = realloc(buf, cap + 1);
            if (nb == NULL) {
                break;
            }
            buf = nb;
        }

        r = read(fds[0], buf + n, cap - n);
        if (r < 0 && errno == EINTR) {
            continue;
        }

        if (r <= 0) {
            break;
        }

        n += (size_t) r;
    }

    close(fds[0]);
    kill(pid, SIGKILL);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) { }

    /*
     * data.json as the child wrote it, not parsed again: the worker
     * would build the whole tree (about 80 times the answer for many
     * small values).  Taken only from a child that wrote all of it and
     * exited 0.
     */

    whole = buf != NULL && !late && !over && n > 0 && WIFEXITED(st)
            && WEXITSTATUS(st) == 0;

    if (whole && buf[0] == 'D' && n >= 3 && buf[n - 1] == '}') {
        memmove(buf, buf + 1, n - 1);
        buf[n - 1] = '\0';
        *len = n - 1;
        return buf;
    }

    doc = (whole && buf[0] == 'E') ? json_loadb(buf + 1, n - 1, 0, &je)
                                   : NULL;
    free(buf);

    e = json_object_get(doc, "error");

    if (late) {
        aw_result_fail(res, AW_ST_ERROR, "fetch_failed",
                       "the fetch did not finish within %ld ms per input",
                       conf->fetch_timeout_ms);

    } else if (over) {
        aw_result_fail(res, AW_ST_ERROR, "fetch_failed",
                       "the fetch process wrote more than %zu bytes", max);

    } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        aw_result_fail(res, AW_ST_ERROR, "fetch_failed",
                       "the fetch process ended without %s answer (%s %d)",
                       n ? "a whole" : "an",
                       WIFSIGNALED(st) ? "signal" : "exit code",
                       WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));

    } else if (!json_is_object(e)) {
        aw_result_fail(res, AW_ST_ERROR, "fetch_failed",
                       "the fetch process's answer is not one it gives");

    } else {
        aw_result_fail(res, AW_ST_ERROR,
                       json_string_value(json_object_get(e, "code"))
                       ? json_string_value(json_object_get(e, "code"))
                       : "fetch_failed", "%s",
                       json_string_value(json_object_get(e, "message"))
                       ? json_string_value(json_object_get(e, "message"))
                       : "the fetch failed");
    }

    json_decref(doc);

    return NULL;
}
