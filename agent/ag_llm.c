/*
 * The agent's two kinds of HTTP request, both to Airlock's unix socket:
 * the model (OpenAI chat completions through the LLM gateway, streamed,
 * the answer's text and tool calls assembled from the deltas) and the
 * named routes its tools map to.  No credential is sent: the proxy knows
 * the agent by its unix uid and adds what the upstream needs.
 */

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "agent.h"


typedef struct {
    char             *data;
    size_t            len;
    size_t            cap;
} ag_buf_t;


typedef struct {
    ag_run_t         *run;
    ag_llm_result_t  *res;
    CURL             *curl;
    char             *line;                 /* the event being read */
    size_t            line_len;
    size_t            line_cap;
    char             *raw;                  /* a non-200 answer */
    size_t            raw_len;
    size_t            content_cap;          /* res->content's */
    ag_buf_t          args[AG_CALLS_MAX];   /* each call's arguments so
                                               far */
    unsigned          failed:1;
    unsigned          done:1;               /* "data: [DONE]" came */
} ag_llm_ctx_t;


static size_t ag_llm_write(char *p, size_t size, size_t n, void *data);
static void ag_llm_line(ag_llm_ctx_t *ctx, char *line, size_t len);
static void ag_llm_delta(ag_llm_ctx_t *ctx, json_t *delta);
static void ag_llm_usage_sum(ag_llm_result_t *res, json_t *usage,
    const char *in, const char *out);
static int ag_append(char **buf, size_t *len, size_t *cap, const char *p,
    size_t n);
static int ag_llm_args(ag_llm_ctx_t *ctx);
static size_t ag_http_write(char *p, size_t size, size_t n, void *data);
static void ag_http_denial(CURL *curl, char *out, size_t size);
static long ag_remaining(ag_run_t *run);
static int ag_curl_progress(void *data, curl_off_t dltotal, curl_off_t dlnow,
    curl_off_t ultotal, curl_off_t ulnow);


typedef struct {
    ag_http_t   *h;
    size_t       max;
    size_t       cap;                   /* h->body's allocation */
} ag_http_ctx_t;


static long
ag_remaining(ag_run_t *run)
{
    int64_t  left;

    left = run->deadline_ms - ag_now_ms();

    return left > 1 ? (long) left : 1;
}


/* a run that is stopping drops the request it waits for (within 1 s) */

static int
ag_curl_progress(void *data, curl_off_t dltotal, curl_off_t dlnow,
    curl_off_t ultotal, curl_off_t ulnow)
{
    (void) data;
    (void) dltotal;
    (void) dlnow;
    (void) ultotal;
    (void) ulnow;

    return ag_stopping ? 1 : 0;
}


int
ag_llm_call(ag_run_t *run, const char *body, size_t len,
    ag_llm_result_t *res)
{
    int                 rc, n;
    char                url[sizeof("http://airlock/chat/completions")
                            + AG_PREFIX_MAX];
    size_t              i;
    CURL               *curl;
    CURLcode            cc;
    ag_llm_ctx_t        ctx;
    struct curl_slist  *hdrs;

    memset(res, 0, sizeof(*res));
    res->total_tokens = -1;
    res->prompt_tokens = -1;
    res->tool_calls = json_array();

    memset(&ctx, 0, sizeof(ctx));
    ctx.run = run;
    ctx.res = res;

    curl = curl_easy_init();

    if (curl == NULL || res->tool_calls == NULL) {
        snprintf(res->error, sizeof(res->error), "out of memory");
        curl_easy_cleanup(curl);
        return -1;
    }

    ctx.curl = curl;
    res->sent_len = len;

    /* --llm-prefix is at most AG_PREFIX_MAX bytes: never cut here */
    n = snprintf(url, sizeof(url), "http://airlock%s/chat/completions",
                 run->conf->llm_prefix);
    if (n < 0 || (size_t) n >= sizeof(url)) {
        snprintf(res->error, sizeof(res->error), "--llm-prefix is too long");
        curl_easy_cleanup(curl);
        return -1;
    }

    hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    hdrs = curl_slist_append(hdrs, "Accept: text/event-stream");

    curl_easy_setopt(curl, CURLOPT_UNIX_SOCKET_PATH, run->conf->gateway);
    curl_easy_setopt(curl, CURLOPT_PROXY, "");  /* see ag_route_call() */
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long) res->sent_len);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, ag_llm_write);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &ctx);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, ag_remaining(run));
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, ag_curl_progress);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http");

    cc = curl_easy_perform(curl);

    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &res->status);

    rc = 0;

    if (ctx.line_len && !ctx.failed && res->status == 200) {
        ag_llm_line(&ctx, ctx.line, ctx.line_len);
    }

    if (ag_llm_args(&ctx) != 0 && !ctx.failed) {
        snprintf(res->error, sizeof(res->error), "out of memory");
        ctx.failed = 1;
    }

    if (res->status != 200 && res->status != 0) {
        snprintf(res->error, sizeof(res->error), "the gateway answered "
                 "%ld: %.*s", res->status, (int) ctx.raw_len,
                 ctx.raw != NULL ? ctx.raw : "");
        rc = -1;

    } else if (ctx.failed) {
        if (res->error[0] == '\0') {
            snprintf(res->error, sizeof(res->error), "the model's answer "
                     "is malformed");
        }
        rc = -1;

    } else if (cc != CURLE_OK) {
        snprintf(res->error, sizeof(res->error), "%s%s",
                 cc == CURLE_OPERATION_TIMEDOUT ? "timeout: " : "",
                 curl_easy_strerror(cc));
        rc = cc == CURLE_OPERATION_TIMEDOUT ? -2 : -1;

    } else if (!ctx.done && res->finish[0] == '\0') {
        /*
         * A stream that ends cleanly, but before both "[DONE]" and a
         * finish_reason, was cut on the way: its text or a tool call's
         * arguments may stop anywhere, so none of it is an answer.
         */
        snprintf(res->error, sizeof(res->error), "the model's stream "
                 "ended with neither [DONE] nor a finish_reason: the "
                 "answer was cut short");
        rc = -1;
    }

    curl_slist_free_all(hdrs);
    curl_easy_cleanup(curl);
    free(ctx.line);
    free(ctx.raw);

    for (i = 0; i < AG_CALLS_MAX; i++) {
        free(ctx.args[i].data);
    }

    return rc;
}


void
ag_llm_result_free(ag_llm_result_t *res)
{
    free(res->content);
    json_decref(res->tool_calls);
    memset(res, 0, sizeof(*res));
}


static size_t
ag_llm_write(char *p, size_t size, size_t n, void *data)
{
    char          *nl, *nb;
    size_t         len, take, cap;
    long           status;
    ag_llm_ctx_t  *ctx;

    ctx = data;
    len = size * n;

    status = 0;
    curl_easy_getinfo(ctx->curl, CURLINFO_RESPONSE_CODE, &status);

    if (status != 200) {
        /* keep the start of an error answer for the message */
        take = AG_ERRBODY_MAX - 256 - ctx->raw_len;
        take = len < take ? len : take;
        if (take) {
            nb = realloc(ctx->raw, ctx->raw_len + take + 1);
            if (nb != NULL) {
                memcpy(nb + ctx->raw_len, p, take);
                ctx->raw = nb;
                ctx->raw_len += take;
                nb[ctx->raw_len] = '\0';
            }
        }
        return len;
    }

    while (len) {
        nl = memchr(p, '\n', len);
        take = (nl != NULL) ? (size_t) (nl - p) : len;

        if (ctx->line_len + take > AG_ARGS_MAX * 2) {
            snprintf(ctx->res->error, sizeof(ctx->res->error),
                     "an event from the model is over %d bytes",
                     AG_ARGS_MAX * 2);
            ctx->failed = 1;
            return 0;
        }

        if (ctx->line_len + take + 1 > ctx->line_cap) {
            cap = (ctx->line_len + take + 1) * 2;
            nb = realloc(ctx->line, cap);
            if (nb == NULL) {
                ctx->failed = 1;
                return 0;
            }
            ctx->line = nb;
            ctx->line_cap = cap;
        }

        memcpy(ctx->line + ctx->line_len, p, take);
        ctx->line_len += take;
        ctx->line[ctx->line_len] = '\0';

        if (nl == NULL) {
            break;
        }

        ag_llm_line(ctx, ctx->line, ctx->line_len);
        ctx->line_len = 0;

        if (ctx->failed) {
            return 0;
        }

        p = nl + 1;
        len -= take + 1;
    }

    return size * n;
}


static void
ag_llm_line(ag_llm_ctx_t *ctx, char *line, size_t len)
{
    json_t        *j, *choices, *c0, *usage, *v;
    json_error_t   jerr;

    if (len && line[len - 1] == '\r') {
        line[--len] = '\0';
    }

    if (len < 5 || strncmp(line, "data:", 5) != 0) {
        return;                             /* event:, id:, comments */
    }

    line += 5;
    len -= 5;
    if (len && *line == ' ') {
        line++;
        len--;
    }

    if (len == 6 && strncmp(line, "[DONE]", 6) == 0) {
        ctx->done = 1;
        return;
    }

    j = json_loadb(line, len, 0, &jerr);
    if (j == NULL || !json_is_object(j)) {
        snprintf(ctx->res->error, sizeof(ctx->res->error), "the model's "
                 "stream has an event that is not a JSON object: %s",
                 j == NULL ? jerr.text : "not an object");
        ctx->failed = 1;
        json_decref(j);
        return;
    }

    v = json_object_get(j, "error");
    if (v != NULL && !json_is_null(v)) {
        v = json_is_object(v) ? json_object_get(v, "message") : v;
        snprintf(ctx->res->error, sizeof(ctx->res->error), "the model "
                 "failed: %s", json_is_string(v) ? json_string_value(v)
                                                  : "(no message)");
        ctx->failed = 1;
        json_decref(j);
        return;
    }

    usage = json_object_get(j, "usage");

    /* the prompt's count, OpenAI's or Anthropic's name: the next call's
       prompt is no smaller (ag_run_ask()) */

    v = json_object_get(usage, "prompt_tokens");
    v = json_is_integer(v) ? v : json_object_get(usage, "input_tokens");
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        ctx->res->prompt_tokens = (json_integer_value(v) > LONG_MAX)
                                  ? LONG_MAX : (long) json_integer_value(v);
    }

    v = json_object_get(usage, "total_tokens");
    if (json_is_integer(v)) {
        ctx->res->total_tokens = (long) json_integer_value(v);

    } else if (json_is_object(usage)) {
        /* no total: its parts, as OpenAI's or Anthropic's names */
        ag_llm_usage_sum(ctx->res, usage, "prompt_tokens",
                         "completion_tokens");
        ag_llm_usage_sum(ctx->res, usage, "input_tokens", "output_tokens");
    }

    choices = json_object_get(j, "choices");
    c0 = json_array_get(choices, 0);

    if (c0 != NULL) {
        v = json_object_get(c0, "finish_reason");
        if (json_is_string(v)) {
            snprintf(ctx->res->finish, sizeof(ctx->res->finish), "%s",
                     json_string_value(v));
        }

        ag_llm_delta(ctx, json_object_get(c0, "delta"));
    }

    json_decref(j);
}


/*
 * A usage without "total_tokens": the sum of its in and out counts, if
 * it has either, each a count (not negative) and the sum held at
 * LONG_MAX; a total already set is kept.
 */

static void
ag_llm_usage_sum(ag_llm_result_t *res, json_t *usage, const char *in,
    const char *out)
{
    json_t     *a, *b;
    json_int_t  x, y;

    a = json_object_get(usage, in);
    b = json_object_get(usage, out);

    if (res->total_tokens >= 0
        || (!json_is_integer(a) && !json_is_integer(b)))
    {
        return;
    }

    x = json_is_integer(a) ? json_integer_value(a) : 0;
    y = json_is_integer(b) ? json_integer_value(b) : 0;
    x = (x < 0) ? 0 : x;
    y = (y < 0) ? 0 : y;

    res->total_tokens = (x > LONG_MAX - y) ? LONG_MAX : (long) (x + y);
}


static void
ag_llm_delta(ag_llm_ctx_t *ctx, json_t *delta)
{
    size_t             i, len;
    json_t            *calls, *tc, *fn, *slot, *v, *idx;
    ag_buf_t          *buf;
    const char        *s;
    ag_llm_result_t   *res;

    res = ctx->res;

    v = json_object_get(delta, "content");
    if (json_is_string(v) && json_string_length(v)) {
        s = json_string_value(v);
        len = json_string_length(v);

        if (res->content_len + len > AG_CONTENT_MAX) {
            snprintf(res->error, sizeof(res->error), "the model's text "
                     "is over %d bytes", AG_CONTENT_MAX);
            ctx->failed = 1;
            return;
        }

        if (ag_append(&res->content, &res->content_len, &ctx->content_cap,
                      s, len)
            != 0)
        {
            ctx->failed = 1;
            return;
        }

        ag_event(ctx->run, "delta", json_pack("{s:s%}", "text", s, len));
    }

    calls = json_object_get(delta, "tool_calls");

    for (i = 0; i < json_array_size(calls); i++) {
        tc = json_array_get(calls, i);
        idx = json_object_get(tc, "index");

        if (!json_is_integer(idx) || json_integer_value(idx) < 0
            || json_integer_value(idx) >= AG_CALLS_MAX)
        {
            snprintf(res->error, sizeof(res->error), "a tool call in the "
                     "model's stream has no index from 0 to %d",
                     AG_CALLS_MAX - 1);
            ctx->failed = 1;
            return;
        }

        while (json_array_size(res->tool_calls)
               <= (size_t) json_integer_value(idx))
        {
            if (json_array_append_new(res->tool_calls,
                    json_pack("{s:s, s:s, s:s}", "id", "", "name", "",
                              "arguments", "")) != 0)
            {
                snprintf(res->error, sizeof(res->error), "out of memory");
                ctx->failed = 1;
                return;
            }
        }

        slot = json_array_get(res->tool_calls, json_integer_value(idx));
        fn = json_object_get(tc, "function");

        v = json_object_get(tc, "id");
        if (json_is_string(v)) {
            json_object_set(slot, "id", v);
        }

        v = json_object_get(fn, "name");
        if (json_is_string(v)) {
            json_object_set(slot, "name", v);
        }

        v = json_object_get(fn, "arguments");
        if (json_is_string(v) && json_string_length(v)) {
            buf = &ctx->args[json_integer_value(idx)];

            if (buf->len + json_string_length(v) > AG_ARGS_MAX) {
                snprintf(res->error, sizeof(res->error), "a tool call's "
                         "arguments are over %d bytes", AG_ARGS_MAX);
                ctx->failed = 1;
                return;
            }

            if (ag_append(&buf->data, &buf->len, &buf->cap,
                          json_string_value(v), json_string_length(v))
                != 0)
            {
                ctx->failed = 1;
                return;
            }
        }
    }
}


/*
 * n bytes appended to *buf, NUL-terminated, its room doubled when it
 * runs out: a piece at a time, the whole costs time linear in its size
 * (the callers bound the size).  Each piece used to cost a copy of all
 * before it, so an answer sent a byte per event took time quadratic in
 * its length.
 */

static int
ag_append(char **buf, size_t *len, size_t *cap, const char *p, size_t n)
{
    char    *nb;
    size_t   want;

    if (*len + n + 1 > *cap) {
        want = *cap * 2 > *len + n + 1 ? *cap * 2 : *len + n + 1;
        if (want < 256) {
            want = 256;
        }

        nb = realloc(*buf, want);
        if (nb == NULL) {
            return -1;
        }

        *buf = nb;
        *cap = want;
    }

    memcpy(*buf + *len, p, n);
    *len += n;
    (*buf)[*len] = '\0';

    return 0;
}


/* each call's arguments, joined, into its slot of res->tool_calls */

static int
ag_llm_args(ag_llm_ctx_t *ctx)
{
    size_t     i;
    json_t    *slot, *v;
    ag_buf_t  *buf;

    json_array_foreach(ctx->res->tool_calls, i, slot) {
        buf = &ctx->args[i];
        if (buf->len == 0) {
            continue;
        }

        v = json_stringn(buf->data, buf->len);
        if (v == NULL || json_object_set_new(slot, "arguments", v) != 0) {
            return -1;
        }
    }

    return 0;
}


int
ag_route_call(ag_run_t *run, const char *method, const char *target,
    const char *body, const char *ctype, size_t max, ag_http_t *out)
{
    char                url[AL_URI_MAX + 64], head[1024];
    CURL               *curl;
    CURLcode            cc;
    ag_http_ctx_t       ctx;
    struct curl_slist  *hdrs;

    memset(out, 0, sizeof(*out));

    curl = curl_easy_init();
    if (curl == NULL) {
        snprintf(out->error, sizeof(out->error), "out of memory");
        return -1;
    }

    ctx.h = out;
    ctx.max = max;
    ctx.cap = 0;

    snprintf(url, sizeof(url), "http://airlock%s", target);

    hdrs = NULL;
    if (body != NULL) {
        /*
         * The route's (al_tool_content_type()); one too long for this,
         * application/json, which such a route refuses, as it did all
         */
        if (ctype == NULL
            || snprintf(head, sizeof(head), "Content-Type: %s", ctype)
               >= (int) sizeof(head))
        {
            snprintf(head, sizeof(head), "Content-Type: application/json");
        }
        hdrs = curl_slist_append(hdrs, head);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long) strlen(body));
    }

    curl_easy_setopt(curl, CURLOPT_UNIX_SOCKET_PATH, run->conf->gateway);
    curl_easy_setopt(curl, CURLOPT_URL, url);

    /*
     * The gateway's socket and nothing else: "" is no proxy, whatever
     * http_proxy, HTTPS_PROXY, ALL_PROXY and the rest say.  libcurl
     * 7.88 already uses none with a unix socket; a libcurl that did
     * would send the call past Airlock.
     */

    curl_easy_setopt(curl, CURLOPT_PROXY, "");

    /*
     * An answer to HEAD has no body, whatever its Content-Length says:
     * as a custom method, curl would wait for one until the run's time
     * ran out.
     */

    if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    } else {
        curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    }

    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, ag_http_write);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &ctx);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, ag_remaining(run));
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, ag_curl_progress);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http");

    cc = curl_easy_perform(curl);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &out->status);
    ag_http_denial(curl, out->denial, sizeof(out->denial));

    if (cc != CURLE_OK && !(cc == CURLE_WRITE_ERROR && out->truncated)) {
        snprintf(out->error, sizeof(out->error), "%s%s",
                 cc == CURLE_OPERATION_TIMEDOUT ? "timeout: " : "",
                 curl_easy_strerror(cc));
    }

    curl_slist_free_all(hdrs);
    curl_easy_cleanup(curl);

    if (out->body == NULL) {
        out->body = strdup("");
    }

    return out->error[0] ? -1 : 0;
}


/*
 * The value of the answer's Airlock-Denial header when it has exactly one
 * (the proxy sets one on its own refusals and removes any other), else "".
 * Trailers and interim (1xx) answers do not count.
 */

static void
ag_http_denial(CURL *curl, char *out, size_t size)
{
    size_t               len;
    struct curl_header  *h;

    out[0] = '\0';

    if (curl_easy_header(curl, AL_DENIAL_HEADER, 0, CURLH_HEADER, -1, &h)
        != CURLHE_OK || h->amount != 1)
    {
        return;
    }

    len = strlen(h->value);

    if (len < size) {
        memcpy(out, h->value, len + 1);
    }
}


void
ag_http_free(ag_http_t *h)
{
    free(h->body);
    h->body = NULL;
}


static size_t
ag_http_write(char *p, size_t size, size_t n, void *data)
{
    size_t          len, take;
    ag_http_ctx_t  *ctx;

    ctx = data;
    len = size * n;

    take = ctx->max - ctx->h->len;
    if (len < take) {
        take = len;
    }

    /*
     * ag_append() doubles the allocation: grown by each piece curl hands
     * over (16 KB at most), a large answer was copied again at every
     * piece wherever realloc() cannot grow in place (ASan's always).
     */

    if (ag_append(&ctx->h->body, &ctx->h->len, &ctx->cap, p, take) != 0) {
        return 0;
    }

    if (take < len) {
        ctx->h->truncated = 1;
        return 0;                           /* stop reading */
    }

    return len;
}
