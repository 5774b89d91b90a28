/*
 * airlock: the user's command line for the Airlock agent.
 *
 *   airlock ask [--session ID [--others-session]] [--json]
 *               [--socket PATH | --url URL] TEXT
 *   airlock history ID [--socket PATH | --url URL]
 *
 * ask sends the question to airlock-agent (its unix socket, or nginx's
 * /api/ over HTTP) and shows the run as it happens: each tool call with
 * its route and status, sandbox jobs with exit status and time, denials
 * in red, the answer at the end; --json prints the raw events instead.
 * A progress line shows while the model is thinking.
 *
 * Text from the agent is the model's, and the model reads what the tools
 * fetched: it is shown with every character a terminal would act on (the
 * C0 controls but newline and tab, DEL, the C1 controls) written as a
 * visible \u00XX, so no answer can move the cursor, clear the screen or
 * set the clipboard.
 *
 * Exit status: 0 answered, 1 the run ended with an error, 3 a limit
 * stopped it, 2 usage or the agent could not be reached.
 */

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/random.h>

#include <curl/curl.h>
#include <jansson.h>

#include "agent.h"


#define AIRLOCK_SOCKET   "/run/airlock/agent/agent.sock"
#define AIRLOCK_LINE_MAX AG_EVENT_MAX       /* the agent sends no longer */


typedef struct {
    int          json;
    int          tty;
    int          progress;                  /* a progress line is shown */
    char        *line;
    size_t       len;
    size_t       cap;
    const char  *outcome;
    long         status;
    CURL        *curl;
    char        *errbody;
    size_t       errlen;
    int          too_long;                  /* a line over the maximum */
    int          pending;                   /* history: a C2 held back */
} airlock_ctx_t;


static void airlock_usage(FILE *f);
static int airlock_parse(int argc, char **argv, const char **session,
    int *json, int *others, const char **sock, const char **url);
static int airlock_ask(int argc, char **argv);
static int airlock_history(int argc, char **argv);
static CURL *airlock_curl(const char *sock, const char *url,
    const char *path, char *full, size_t size);
static size_t airlock_write(char *p, size_t size, size_t n, void *data);
static void airlock_event(airlock_ctx_t *ctx, const char *data);
static void airlock_clear(airlock_ctx_t *ctx);
static size_t airlock_collect(char *p, size_t size, size_t n, void *data);
static size_t airlock_stream(char *p, size_t size, size_t n, void *data);
static char *airlock_escape(const char *p, size_t len, size_t *n,
    int lines);
static int airlock_escape_event(json_t *e);
static void airlock_print(FILE *f, const char *p, size_t len);
static void airlock_print_json(FILE *f, const char *data);
static int airlock_session_ok(const char *id);
static int airlock_new_session(const char *sock, const char *url, char *sid,
    size_t size);
static int airlock_bad_chars(const char *s, const char *these);
static void airlock_value_error(const char *name, const char *v,
    const char *want);
static void airlock_failed(const char *url, CURLcode cc);
static char *airlock_url_shown(const char *url);


static const char  *airlock_red = "\033[31m";
static const char  *airlock_green = "\033[32m";
static const char  *airlock_dim = "\033[2m";
static const char  *airlock_bold = "\033[1m";
static const char  *airlock_off = "\033[0m";


int
main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0
        || strcmp(argv[1], "-h") == 0)
    {
        airlock_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }

    /* NO_COLOR set and not empty (no-color.org) */
    if (!isatty(STDERR_FILENO)
        || (getenv("NO_COLOR") != NULL && getenv("NO_COLOR")[0] != '\0'))
    {
        airlock_red = airlock_green = airlock_dim = airlock_bold =
            airlock_off = "";
    }

    curl_global_init(CURL_GLOBAL_DEFAULT);

    if (strcmp(argv[1], "ask") == 0) {
        return airlock_ask(argc - 1, argv + 1);
    }

    if (strcmp(argv[1], "history") == 0) {
        return airlock_history(argc - 1, argv + 1);
    }

    fprintf(stderr, "airlock: unknown command \"%s\"\n", argv[1]);
    airlock_usage(stderr);

    return 2;
}


static void
airlock_usage(FILE *f)
{
    fprintf(f,
"usage: airlock ask [--session ID [--others-session]] [--json]\n"
"                   [--socket PATH | --url URL] TEXT\n"
"       airlock history ID [--socket PATH | --url URL]\n"
"\n"
"  --socket PATH   the agent's unix socket ($AIRLOCK_AGENT_SOCKET, else\n"
"                  " AIRLOCK_SOCKET "), 1 to 107 bytes;\n"
"                  on the appliance, root's and group airlock-api's\n"
"  --url URL       the agent through nginx instead, e.g.\n"
"                  http://USER:PASSWORD@127.0.0.1:8080/api/ ($AIRLOCK_URL,\n"
"                  which keeps the password out of the process list);\n"
"                  http or https, no '?', '#' or space; sent to no proxy,\n"
"                  whatever http_proxy, HTTPS_PROXY, ALL_PROXY say\n"
"  --session ID    continue a session of yours (a new one otherwise:\n"
"                  the agent gives its id, 128 random bits and their\n"
"                  tag, yours alone; the appliance's agent makes\n"
"                  sessions no other way); another's is no such session\n"
"  --others-session  root: ask in the session though it is another's, who\n"
"                  will read the question and its answer (refused\n"
"                  otherwise: 409 session_owner)\n"
"  --json          print the raw events, one JSON object a line\n"
"\n"
"an empty variable counts as unset; TEXT is UTF-8, up to 65536 bytes\n"
"\n"
"what the agent sends is shown with control characters (but newline and\n"
"tab) as \\u00XX, so it cannot act on the terminal\n"
"\n"
"exit status: 0 answered, 1 error, 3 stopped by a limit, 2 usage or\n"
"the agent could not be reached\n");
}


static const struct option  airlock_options[] = {
    { "session", required_argument, NULL, 's' },
    { "json",    no_argument,       NULL, 'j' },
    { "others-session", no_argument, NULL, 'o' },
    { "socket",  required_argument, NULL, 'S' },
    { "url",     required_argument, NULL, 'u' },
    { "help",    no_argument,       NULL, 'h' },
    { NULL, 0, NULL, 0 }
};


/*
 * The socket and the URL are checked whole before anything is sent: an
 * empty socket path is an abstract socket (anyone may bind it), a long
 * one was cut; a URL with a '?' or a '#' would send the path after it as
 * a query or not at all, one with a space or a control character is no
 * URL.  An empty variable counts as unset.
 */

static int
airlock_parse(int argc, char **argv, const char **session, int *json,
    int *others, const char **sock, const char **url)
{
    int          c;
    char        *shown;
    const char  *sock_from, *url_from;

    *sock = getenv("AIRLOCK_AGENT_SOCKET");
    *url = getenv("AIRLOCK_URL");
    sock_from = "$AIRLOCK_AGENT_SOCKET";
    url_from = "$AIRLOCK_URL";

    if (*sock != NULL && (*sock)[0] == '\0') {
        *sock = NULL;
    }

    if (*url != NULL && (*url)[0] == '\0') {
        *url = NULL;
    }

    for ( ;; ) {
        c = getopt_long(argc, argv, "", airlock_options, NULL);
        if (c == -1) {
            break;
        }

        switch (c) {
        case 's': *session = optarg; break;
        case 'j': *json = 1; break;
        case 'o': *others = 1; break;
        case 'S':
            *sock = optarg;
            *url = NULL;
            sock_from = "--socket";
            break;
        case 'u':
            *url = optarg;
            *sock = NULL;
            url_from = "--url";
            break;
        case 'h': airlock_usage(stdout); exit(0);
        default: return -1;
        }
    }

    if (*sock == NULL && *url == NULL) {
        *sock = AIRLOCK_SOCKET;
    }

    if (*url != NULL
        && (airlock_bad_chars(*url, " ?#") != 0
            || (strncasecmp(*url, "http://", 7) != 0
                && strncasecmp(*url, "https://", 8) != 0)))
    {
        shown = airlock_url_shown(*url);
        airlock_value_error(url_from, shown != NULL ? shown : "(a URL)",
                            "an http:// or https:// URL with no '?', '#', "
                            "space or control character");
        free(shown);
        return -2;
    }

    if (*url == NULL
        && (airlock_bad_chars(*sock, "") != 0 || strlen(*sock) == 0
            || strlen(*sock) > AG_SOCKET_MAX))
    {
        airlock_value_error(sock_from, *sock, "a socket path of 1 to 107 "
                            "bytes, no control character");
        return -2;
    }

    return 0;
}


/* 1 when s has a control character or one of these */

static int
airlock_bad_chars(const char *s, const char *these)
{
    for ( /* void */ ; *s != '\0'; s++) {
        if ((unsigned char) *s < 0x20 || *s == 0x7f
            || strchr(these, *s) != NULL)
        {
            return 1;
        }
    }

    return 0;
}


/* a bad value, on one line (ag_show_value()) */

static void
airlock_value_error(const char *name, const char *v, const char *want)
{
    fprintf(stderr, "airlock: %s wants %s, not ", name, want);
    ag_show_value(stderr, v);
}


static int
airlock_ask(int argc, char **argv)
{
    int                 json, others, i, rc;
    char                sid[AG_ID_MAX + 1], path[256], full[1024], *body;
    long                status;
    CURL               *curl;
    CURLcode            cc;
    json_t             *req, *v;
    const char         *session, *sock, *url;
    airlock_ctx_t       ctx;
    unsigned char       raw[16];
    struct curl_slist  *hdrs;

    session = NULL;
    json = 0;
    others = 0;

    rc = airlock_parse(argc, argv, &session, &json, &others, &sock,
                       &url);
    if (rc == -2) {
        return 2;
    }

    if (rc != 0 || optind != argc - 1 || argv[optind][0] == '\0') {
        airlock_usage(stderr);
        return 2;
    }

    if (others && session == NULL) {
        fprintf(stderr, "airlock: --others-session is for a session named "
                "with --session\n");
        return 2;
    }

    if (session != NULL && !airlock_session_ok(session)) {
        return 2;
    }

    /* what the agent takes: never sent to be refused there */
    if (strlen(argv[optind]) > AG_PROMPT_MAX) {
        fprintf(stderr, "airlock: the question is %zu bytes, over the %d "
                "the agent takes\n", strlen(argv[optind]), AG_PROMPT_MAX);
        return 2;
    }

    if (session == NULL) {
        rc = airlock_new_session(sock, url, sid, sizeof(sid));
        if (rc == -1) {
            return 2;
        }

        /* an agent older than POST /v1/sessions: an id of our own */
        if (rc == 1) {
            if (getrandom(raw, sizeof(raw), 0) != sizeof(raw)) {
                fprintf(stderr, "airlock: no random bytes\n");
                return 2;
            }
            for (i = 0; i < (int) sizeof(raw); i++) {
                snprintf(sid + 2 * i, 3, "%02x", raw[i]);
            }
        }

        session = sid;
    }

    snprintf(path, sizeof(path), "/v1/sessions/%s/ask", session);
    curl = airlock_curl(sock, url, path, full, sizeof(full));
    if (curl == NULL) {
        return 2;
    }

    v = json_string(argv[optind]);
    if (v == NULL) {
        fprintf(stderr, "airlock: the question is not UTF-8 text\n");
        curl_easy_cleanup(curl);
        return 2;
    }

    req = json_pack("{s:o}", "prompt", v);
    body = (req != NULL) ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);

    if (body == NULL) {
        fprintf(stderr, "airlock: out of memory\n");
        curl_easy_cleanup(curl);
        return 2;
    }

    memset(&ctx, 0, sizeof(ctx));
    ctx.json = json;
    ctx.tty = isatty(STDERR_FILENO);
    ctx.curl = curl;

    hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    hdrs = curl_slist_append(hdrs, "Accept: text/event-stream");

    /* root's word that another's session is meant (409 without) */
    if (others) {
        hdrs = curl_slist_append(hdrs, "X-Airlock-Others-Session: yes");
    }

    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, airlock_write);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &ctx);

    if (!json) {
        fprintf(stderr, "%ssession %s%s\n", airlock_dim, session,
                airlock_off);
    }

    cc = curl_easy_perform(curl);
    airlock_clear(&ctx);

    status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);

    curl_slist_free_all(hdrs);
    curl_easy_cleanup(curl);
    free(body);
    free(ctx.line);

    if (ctx.too_long) {
        fprintf(stderr, "airlock: an event from the agent is over %d "
                "bytes, more than an agent sends: the run is not shown\n",
                AIRLOCK_LINE_MAX);
        free(ctx.errbody);
        return 1;
    }

    /*
     * A run that started (200) was reached, whatever cut its stream (the
     * agent died in it, and nginx's chunked answer never ended): it may
     * have called tools and run jobs, so it is no "could not be
     * reached" (2), which a script may take for "ask again".
     */

    if (cc != CURLE_OK && ctx.outcome == NULL && status == 200) {
        fprintf(stderr, "airlock: the run's stream ended early (%s)\n"
                "(continue with: airlock ask --session %s ...)\n",
                curl_easy_strerror(cc), session);
        free(ctx.errbody);
        return 1;
    }

    if (cc != CURLE_OK && ctx.outcome == NULL) {
        airlock_failed(full, cc);
        free(ctx.errbody);
        return 2;
    }

    if (status != 200) {
        fprintf(stderr, "airlock: the agent answered %ld: ", status);
        airlock_print(stderr, ctx.errbody, ctx.errlen);
        fprintf(stderr, "\n");
        free(ctx.errbody);
        return 2;
    }

    free(ctx.errbody);

    if (!json && ctx.outcome != NULL && strcmp(ctx.outcome, "answer") != 0)
    {
        fprintf(stderr, "(continue with: airlock ask --session %s ...)\n",
                session);
    }

    if (ctx.outcome == NULL) {
        fprintf(stderr, "airlock: the run's stream ended early\n");
        return 1;
    }

    return strcmp(ctx.outcome, "answer") == 0 ? 0
           : strcmp(ctx.outcome, "limit") == 0 ? 3 : 1;
}


static int
airlock_history(int argc, char **argv)
{
    int             json, others, rc;
    char            path[256], full[1024];
    long            status;
    CURL           *curl;
    CURLcode        cc;
    const char     *session, *sock, *url;
    airlock_ctx_t   ctx;

    session = NULL;
    json = 0;
    others = 0;

    rc = airlock_parse(argc, argv, &session, &json, &others, &sock,
                       &url);
    if (rc == -2) {
        return 2;
    }

    if (rc != 0 || optind != argc - 1) {
        airlock_usage(stderr);
        return 2;
    }

    if (session != NULL) {
        fprintf(stderr, "airlock: history takes the session as its "
                "argument, not --session\n");
        return 2;
    }

    if (others) {
        fprintf(stderr, "airlock: history takes no --others-session: root "
                "reads every session\n");
        return 2;
    }

    if (!airlock_session_ok(argv[optind])) {
        return 2;
    }

    snprintf(path, sizeof(path), "/v1/sessions/%s", argv[optind]);
    curl = airlock_curl(sock, url, path, full, sizeof(full));
    if (curl == NULL) {
        return 2;
    }

    /* a session has no bound: it is shown as it comes, never held whole */

    memset(&ctx, 0, sizeof(ctx));
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, airlock_stream);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &ctx);

    cc = curl_easy_perform(curl);
    status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(curl);

    if (ctx.pending) {
        airlock_print(stdout, "\xc2", 1);
    }

    if (cc != CURLE_OK) {
        fflush(stdout);
        airlock_failed(full, cc);
        return 2;
    }

    printf("\n");

    return status == 200 ? 0 : 1;
}


/*
 * The request that failed, its URL without the user and password it may
 * carry (--url http://user:pass@host/api/, $AIRLOCK_URL): an error
 * message is copied into terminals, logs and tickets.
 */

static void
airlock_failed(const char *url, CURLcode cc)
{
    char  *shown;

    shown = airlock_url_shown(url);

    fprintf(stderr, "airlock: %s: %s\n", shown != NULL ? shown : "(a URL)",
            curl_easy_strerror(cc));

    free(shown);
}


/*
 * url as an error message may show it: all before its last '@' (after
 * "://") is "***".  The last '@' of all, not the one before the host as
 * a URL parser finds it: a password with a '/', '?', '#', space or '@'
 * of its own, which the URL check refuses or libcurl reads as another
 * host or port, is still left out.  A '@' of the path hides more than
 * it needs to, which is all it costs.  NULL: out of memory.
 */

static char *
airlock_url_shown(const char *url)
{
    char        *s;
    size_t       n;
    const char  *p, *at;

    at = strrchr(url, '@');

    if (at == NULL) {
        return strdup(url);
    }

    p = strstr(url, "://");
    p = (p != NULL && p < at) ? p + 3 : url;

    n = (size_t) (p - url) + sizeof("***") - 1 + strlen(at) + 1;

    s = malloc(n);
    if (s == NULL) {
        return NULL;
    }

    (void) snprintf(s, n, "%.*s***%s", (int) (p - url), url, at);

    return s;
}


/*
 * A session id as the agent takes it, 1 to 64 of A-Z a-z 0-9 _ -: any
 * other is refused here, never cut or sent, since a cut one, or one with
 * a '?' or a '/', names another session.
 */

static int
airlock_session_ok(const char *id)
{
    size_t  n;

    n = strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                   "0123456789_-");

    if (n == 0 || n > 64 || id[n] != '\0') {
        fprintf(stderr, "airlock: a session id is 1 to 64 of A-Z a-z 0-9 "
                "_ -\n");
        return 0;
    }

    return 1;
}


/*
 * A new session's id from the agent (POST /v1/sessions: 128 random bits
 * and their tag, 64 of 0-9 a-f, the asker's alone) into sid, of
 * AG_ID_MAX + 1 bytes: 0, 1 when the agent
 * has no such request (an older one: 404 not_found), -1 when it failed
 * (said on stderr).  An id the CLI drew itself could be drawn by hand
 * too, and taken first by another asker; an agent with
 * --random-session-ids makes no session but these.
 */

static int
airlock_new_session(const char *sock, const char *url, char *sid,
    size_t size)
{
    int             rc;
    long            status;
    char            full[1024];
    CURL           *curl;
    json_t         *j, *id;
    CURLcode        cc;
    airlock_ctx_t   ctx;

    curl = airlock_curl(sock, url, "/v1/sessions", full, sizeof(full));
    if (curl == NULL) {
        return -1;
    }

    memset(&ctx, 0, sizeof(ctx));

    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, "");
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, airlock_collect);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &ctx);

    cc = curl_easy_perform(curl);

    status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(curl);

    if (cc != CURLE_OK) {
        airlock_failed(full, cc);
        free(ctx.errbody);
        return -1;
    }

    j = (ctx.errbody != NULL) ? json_loadb(ctx.errbody, ctx.errlen, 0, NULL)
                              : NULL;
    id = json_object_get(j, "id");
    rc = -1;

    if (status == 201 && json_is_string(id)
        && json_string_length(id) < size
        && airlock_session_ok(json_string_value(id)))
    {
        memcpy(sid, json_string_value(id), json_string_length(id) + 1);
        rc = 0;

    } else if (status == 404
               && json_is_string(json_object_get(j, "error"))
               && strcmp(json_string_value(json_object_get(j, "error")),
                         "not_found")
                  == 0)
    {
        rc = 1;

    } else {
        fprintf(stderr, "airlock: no new session: the agent answered "
                "%ld: ", status);
        airlock_print(stderr, ctx.errbody, ctx.errlen);
        fprintf(stderr, "\n");
    }

    json_decref(j);
    free(ctx.errbody);

    return rc;
}


static CURL *
airlock_curl(const char *sock, const char *url, const char *path,
    char *full, size_t size)
{
    int     n;
    CURL   *curl;
    size_t  len;

    /*
     * Never cut to fit: a URL cut at its end names another session
     * ("/v1/sessions/abcdef" cut to ".../abc").
     */

    if (url != NULL) {
        /* nginx publishes the agent at .../api/ */
        len = strlen(url);
        if (len && url[len - 1] == '/') {
            len--;
        }

        n = (len < size) ? snprintf(full, size, "%.*s%s", (int) len, url,
                                    path)
                         : -1;
    } else {
        n = snprintf(full, size, "http://agent%s", path);
    }

    if (n < 0 || (size_t) n >= size) {
        fprintf(stderr, "airlock: the URL is over %zu bytes: --url is too "
                "long\n", size - 1);
        return NULL;
    }

    curl = curl_easy_init();
    if (curl == NULL) {
        fprintf(stderr, "airlock: out of memory\n");
        return NULL;
    }

    if (url == NULL) {
        curl_easy_setopt(curl, CURLOPT_UNIX_SOCKET_PATH, sock);
    }

    /*
     * The agent's socket or --url, and nothing else: "" is no proxy,
     * whatever http_proxy, HTTPS_PROXY, ALL_PROXY and the rest say (they
     * sent --url's question, and a password in it, to the proxy they
     * named).
     */

    curl_easy_setopt(curl, CURLOPT_PROXY, "");
    curl_easy_setopt(curl, CURLOPT_URL, full);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");

    return curl;
}


static size_t
airlock_collect(char *p, size_t size, size_t n, void *data)
{
    char           *nb;
    airlock_ctx_t  *ctx;

    ctx = data;

    if (ctx->errlen + size * n > AIRLOCK_LINE_MAX) {
        return 0;
    }

    nb = realloc(ctx->errbody, ctx->errlen + size * n + 1);
    if (nb == NULL) {
        return 0;
    }

    memcpy(nb + ctx->errlen, p, size * n);
    ctx->errbody = nb;
    ctx->errlen += size * n;
    nb[ctx->errlen] = '\0';

    return size * n;
}


/*
 * The session printed, escaped, as it arrives.  A C2 that ends a piece
 * is held back for the next: with the byte after it, it may be a C1
 * control.
 */

static size_t
airlock_stream(char *p, size_t size, size_t n, void *data)
{
    char           *s;
    size_t          len, k;
    airlock_ctx_t  *ctx;

    ctx = data;
    len = size * n;

    if (len == 0) {
        return 0;
    }

    s = malloc(len + 1);
    if (s == NULL) {
        fprintf(stderr, "airlock: out of memory\n");
        return 0;
    }

    k = 0;
    if (ctx->pending) {
        s[k++] = '\xc2';
    }

    memcpy(s + k, p, len);
    k += len;

    ctx->pending = ((unsigned char) s[k - 1] == 0xc2);
    if (ctx->pending) {
        k--;
    }

    airlock_print(stdout, s, k);
    free(s);

    return len;
}


static size_t
airlock_write(char *p, size_t size, size_t n, void *data)
{
    char           *nl, *nb;
    size_t          len, take;
    long            status;
    airlock_ctx_t  *ctx;

    ctx = data;
    len = size * n;

    status = 0;
    curl_easy_getinfo(ctx->curl, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200) {
        return (ctx->errlen < 4096) ? airlock_collect(p, size, n, data)
                                    : len;
    }

    while (len) {
        nl = memchr(p, '\n', len);
        take = (nl != NULL) ? (size_t) (nl - p) : len;

        if (ctx->len + take + 1 > AIRLOCK_LINE_MAX) {
            ctx->too_long = 1;
            return 0;
        }

        if (ctx->len + take + 1 > ctx->cap) {
            nb = realloc(ctx->line, (ctx->len + take + 1) * 2);
            if (nb == NULL) {
                return 0;
            }
            ctx->line = nb;
            ctx->cap = (ctx->len + take + 1) * 2;
        }

        memcpy(ctx->line + ctx->len, p, take);
        ctx->len += take;
        ctx->line[ctx->len] = '\0';

        if (nl == NULL) {
            break;
        }

        if (strncmp(ctx->line, "data: ", 6) == 0) {
            airlock_event(ctx, ctx->line + 6);
        }

        ctx->len = 0;
        p = nl + 1;
        len -= take + 1;
    }

    return size * n;
}


static void
airlock_clear(airlock_ctx_t *ctx)
{
    if (ctx->progress) {
        fprintf(stderr, "\r\033[K");
        ctx->progress = 0;
    }
}


static void
airlock_event(airlock_ctx_t *ctx, const char *data)
{
    json_t      *e, *v;
    const char  *type;

    e = json_loads(data, 0, NULL);

    if (e == NULL || airlock_escape_event(e) != 0) {
        json_decref(e);
        return;
    }

    type = json_string_value(json_object_get(e, "type"));

    if (type == NULL) {
        json_decref(e);
        return;
    }

    if (strcmp(type, "done") == 0) {
        v = json_object_get(e, "outcome");
        ctx->outcome = json_is_string(v)
                       ? (strcmp(json_string_value(v), "answer") == 0
                          ? "answer"
                          : strcmp(json_string_value(v), "limit") == 0
                            ? "limit" : "error")
                       : "error";
    }

    if (ctx->json) {
        airlock_print_json(stdout, data);
        printf("\n");
        fflush(stdout);
        json_decref(e);
        return;
    }

    if (strcmp(type, "delta") == 0) {
        json_decref(e);
        return;
    }

    airlock_clear(ctx);

#define S(k)  (json_string_value(json_object_get(e, k)) != NULL \
               ? json_string_value(json_object_get(e, k)) : "")
#define I(k)  ((long long) json_integer_value(json_object_get(e, k)))

    if (strcmp(type, "step") == 0) {
        if (ctx->tty) {
            fprintf(stderr, "%s... step %lld: waiting on the model%s",
                    airlock_dim, I("n"), airlock_off);
            ctx->progress = 1;
        }

    } else if (strcmp(type, "tool_call") == 0) {
        if (strcmp(S("tool"), "run_python") == 0) {
            fprintf(stderr, "-> run_python  job %s\n", S("job_id"));
        } else {
            fprintf(stderr, "-> %s%s%s  %s %s\n", airlock_bold, S("route"),
                    airlock_off, S("method"), S("target"));
        }

    } else if (strcmp(type, "tool_result") == 0) {
        fprintf(stderr, "   %s%lld%s  %lld bytes%s\n",
                I("status") < 400 ? airlock_green : airlock_red,
                I("status"), airlock_off, I("bytes"),
                json_is_true(json_object_get(e, "truncated"))
                ? " (cut at the limit)" : "");

    } else if (strcmp(type, "denial") == 0) {
        if (json_is_true(json_object_get(e, "repeated"))) {
            fprintf(stderr, "   %sDENIED again: not sent%s\n", airlock_red,
                    airlock_off);
        } else {
            fprintf(stderr, "   %sDENIED %lld (%s)%s  request %s\n",
                    airlock_red, I("status"), S("reason"), airlock_off,
                    S("request_id"));
        }

    } else if (strcmp(type, "job") == 0) {
        v = json_object_get(e, "exit_code");
        fprintf(stderr, "   job %s%s%s",
                strcmp(S("status"), "ok") == 0 ? airlock_green : airlock_red,
                S("status"), airlock_off);
        if (json_is_integer(v)) {
            fprintf(stderr, ", exit %lld", (long long) json_integer_value(v));
        }
        if (json_is_integer(json_object_get(e, "job_ms"))) {
            fprintf(stderr, ", %lld ms", I("job_ms"));
        }
        if (S("backend")[0]) {
            fprintf(stderr, " (%s)", S("backend"));
        }
        fprintf(stderr, "\n");

    } else if (strcmp(type, "error") == 0) {
        fprintf(stderr, "   %serror %s%s: %s\n", airlock_red, S("code"),
                airlock_off, S("message"));

    } else if (strcmp(type, "limit") == 0) {
        fprintf(stderr, "%sstopped: the %s limit (%lld, at most %lld)%s\n",
                airlock_red, S("limit"), I("value"), I("max"), airlock_off);

        /* what it was and, for the owner's day, when it frees */

        if (S("message")[0]) {
            fprintf(stderr, "   %s\n", S("message"));
        }

    } else if (strcmp(type, "answer") == 0) {
        printf("%s\n", S("text"));
        fflush(stdout);

    } else if (strcmp(type, "done") == 0) {
        fprintf(stderr, "%s%s: %lld steps, %lld tokens, %lld ms%s\n",
                airlock_dim, S("outcome"), I("steps"), I("tokens"), I("ms"),
                airlock_off);
    }

#undef S
#undef I

    json_decref(e);
}


/*
 * A copy of p where each character a terminal acts on is a visible
 * "\u00XX": the C0 controls but \n and \t (\r included: it would let
 * text overwrite the line before it), DEL, and the C1 controls
 * U+0080-U+009F (C2 80-9F in UTF-8).  Inside a JSON string the escape
 * means the same character, so a --json line still decodes to the event
 * the agent sent.  Without lines, \n too: a field shown on a line of
 * its own cannot start another.
 */

static char *
airlock_escape(const char *p, size_t len, size_t *n, int lines)
{
    char           *s;
    size_t          i, o;
    unsigned char   c;

    if (len > (SIZE_MAX - 1) / 6) {
        return NULL;
    }

    s = malloc(len * 6 + 1);
    if (s == NULL) {
        return NULL;
    }

    o = 0;

    for (i = 0; i < len; i++) {
        c = (unsigned char) p[i];

        if (c == 0xc2 && i + 1 < len
            && (unsigned char) p[i + 1] >= 0x80
            && (unsigned char) p[i + 1] <= 0x9f)
        {
            c = (unsigned char) p[++i];

        } else if ((c >= 0x20 && c != 0x7f) || (c == '\n' && lines)
                   || c == '\t')
        {
            s[o++] = (char) c;
            continue;
        }

        o += (size_t) snprintf(s + o, 7, "\\u%04x", c);
    }

    s[o] = '\0';
    *n = o;

    return s;
}


/*
 * The event's strings escaped in place: S() in airlock_event reads them.
 * Each is shown within a line of the CLI's own on stderr, so its
 * newlines are escaped too: a tool name the model chose (quoted in an
 * error's message), a job's status the worker chose, could otherwise
 * start lines that read as the CLI's (a tool call never made, a job that
 * never ran).  The answer's text alone keeps them: it is the answer,
 * shown on stdout as the model wrote it.
 */

static int
airlock_escape_event(json_t *e)
{
    int          rc, answer;
    char        *s;
    size_t       n;
    json_t      *v;
    const char  *k, *type;

    type = json_string_value(json_object_get(e, "type"));
    answer = (type != NULL && strcmp(type, "answer") == 0);

    json_object_foreach(e, k, v) {
        if (!json_is_string(v)) {
            continue;
        }

        s = airlock_escape(json_string_value(v), json_string_length(v), &n,
                           answer && strcmp(k, "text") == 0);
        rc = (s != NULL) ? json_string_setn(v, s, n) : -1;
        free(s);

        if (rc != 0) {
            fprintf(stderr, "airlock: out of memory\n");
            return -1;
        }
    }

    return 0;
}


static void
airlock_print(FILE *f, const char *p, size_t len)
{
    char    *s;
    size_t   n;

    if (p == NULL || len == 0) {
        return;
    }

    s = airlock_escape(p, len, &n, 1);
    if (s == NULL) {
        fprintf(stderr, "airlock: out of memory\n");
        return;
    }

    fwrite(s, 1, n, f);
    free(s);
}


/*
 * An event for --json: data is JSON, so a CR in it can only be white
 * space between its tokens (a string holds none unescaped), as the one
 * that ends a line sent with CRLF.  Escaped like the rest, it would be a
 * "\u000d" where JSON has no escape, and the line would not decode: it
 * is dropped.
 */

static void
airlock_print_json(FILE *f, const char *data)
{
    char        *s, *o;
    const char  *p;

    s = malloc(strlen(data) + 1);
    if (s == NULL) {
        fprintf(stderr, "airlock: out of memory\n");
        return;
    }

    o = s;

    for (p = data; *p != '\0'; p++) {
        if (*p != '\r') {
            *o++ = *p;
        }
    }

    airlock_print(f, s, (size_t) (o - s));
    free(s);
}
