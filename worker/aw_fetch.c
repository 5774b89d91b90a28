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
 */

#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>

#include "airlock.h"
#include "aw.h"


/* the proxy's own denial body is under 200 bytes */
#define AW_FETCH_DENIAL_MAX  4096


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
    char                head[64];
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
        hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
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

    pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        aw_result_fail(res, AW_ST_ERROR, "internal", "fork: %s",
                       strerror(errno));
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
