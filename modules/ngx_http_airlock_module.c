
/*
 * ngx_http_airlock_module: the Airlock egress gateway in nginx.
 *
 * Every request in a location with "airlock on" is decided by libairlock
 * against the policy loaded at configuration time: who the client is (unix
 * peer credentials, source address or a bearer token), which named route
 * the raw request target is, and whether the route's path, query and body
 * constraints hold.  A denied request is answered 403 with a JSON reason and
 * logged as one JSON line; it never reaches an upstream.  An allowed request
 * loses every client header outside a short allowlist, gains the route's
 * injected credentials, and leaves through nginx's own proxy module, which
 * reads the upstream URL from $airlock_upstream$airlock_uri.  Responses on
 * every route (but one that says "scrub: false") are scrubbed
 * (ngx_http_airlock_filter.c) of every credential the policy holds.
 *
 * The decision runs in the preaccess phase, so "satisfy any" and the
 * access-phase modules cannot skip it, and first in that phase, so no
 * module loaded after this one can either.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_airlock_module.h"


/*
 * While routes load: routes that inject the same headers (the library
 * keeps each distinct name and rendered value once) share one inject
 * table, every scrubbed route the scrub tables of the policy's one list,
 * and routes to one upstream share its URL.
 */
typedef struct {
    ngx_uint_t                  *slot;      /* route index + 1; 0: empty */
    ngx_uint_t                   mask;
    ngx_str_t                   *upstream;  /* [policy->nupstreams] */
    ngx_http_airlock_route_t    *scrubbed;  /* the first scrubbed route;
                                               NULL: none yet */
} ngx_http_airlock_load_t;


static ngx_int_t ngx_http_airlock_handler(ngx_http_request_t *r);
static al_reason_t ngx_http_airlock_decide(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx, const char **detail);
static al_reason_t ngx_http_airlock_cookies(ngx_http_request_t *r,
    const al_route_t *route, al_decision_t *d);
static ngx_int_t ngx_http_airlock_body_read(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx);
static al_reason_t ngx_http_airlock_check_body(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx, const char **detail);
static ngx_int_t ngx_http_airlock_allow(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx);
static ngx_int_t ngx_http_airlock_deny(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx, al_reason_t reason, const char *detail);
static ngx_int_t ngx_http_airlock_answer(ngx_http_request_t *r,
    ngx_uint_t status, const char *error, const char *reason);
static ngx_int_t ngx_http_airlock_error(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx, ngx_uint_t status);

static char *ngx_http_airlock_policy(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_airlock_keyring(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_airlock_error_json(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_airlock_load(ngx_conf_t *cf,
    ngx_http_airlock_main_conf_t *amcf);
static char *ngx_http_airlock_load_error(ngx_conf_t *cf,
    ngx_http_airlock_main_conf_t *amcf, const al_error_t *err);
static char *ngx_http_airlock_load_route(ngx_conf_t *cf,
    ngx_http_airlock_main_conf_t *amcf, const al_route_t *route,
    ngx_http_airlock_route_t *rc, ngx_http_airlock_load_t *ld);
static char *ngx_http_airlock_load_inject(ngx_conf_t *cf,
    ngx_http_airlock_main_conf_t *amcf, const al_route_t *route,
    ngx_http_airlock_route_t *rc, ngx_http_airlock_load_t *ld);
static ngx_http_airlock_route_t *ngx_http_airlock_same_inject(
    ngx_http_airlock_main_conf_t *amcf, const al_route_t *route,
    ngx_http_airlock_load_t *ld);
static void ngx_http_airlock_policy_cleanup(void *data);
static void ngx_http_airlock_scrub_cleanup(void *data);

static void *ngx_http_airlock_create_main_conf(ngx_conf_t *cf);
static char *ngx_http_airlock_init_main_conf(ngx_conf_t *cf, void *conf);
static void *ngx_http_airlock_create_srv_conf(ngx_conf_t *cf);
static char *ngx_http_airlock_merge_srv_conf(ngx_conf_t *cf, void *parent,
    void *child);
static void *ngx_http_airlock_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_airlock_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
static ngx_int_t ngx_http_airlock_init(ngx_conf_t *cf);
static ngx_int_t ngx_http_airlock_init_module(ngx_cycle_t *cycle);


/*
 * Client headers that reach an upstream; all others are removed.  With
 * no body (a route that takes none, or an empty one), Content-Type is
 * removed too: there is nothing for it to describe, and a server may
 * decode the query in the charset it names (Tomcat's
 * useBodyEncodingForURI), which the query's patterns never saw.
 */
#define NGX_HTTP_AIRLOCK_BODYLESS_HEADERS(X)                                  \
    X("accept")                                                               \
    X("accept-language")                                                      \
    X("user-agent")                                                           \
    X("if-none-match")                                                        \
    X("if-modified-since")                                                    \
    X("cache-control")

#define NGX_HTTP_AIRLOCK_ALLOWED_HEADERS(X)                                   \
    NGX_HTTP_AIRLOCK_BODYLESS_HEADERS(X)                                      \
    X("content-type")

static ngx_str_t  ngx_http_airlock_allowed_headers[] = {
    NGX_HTTP_AIRLOCK_ALLOWED_HEADERS(NGX_HTTP_AIRLOCK_HEADER_STR)
    ngx_null_string
};

static ngx_str_t  ngx_http_airlock_bodyless_headers[] = {
    NGX_HTTP_AIRLOCK_BODYLESS_HEADERS(NGX_HTTP_AIRLOCK_HEADER_STR)
    ngx_null_string
};


/* headers that would make an upstream read a method other than the one
   that was decided */
#define NGX_HTTP_AIRLOCK_OVERRIDE_HEADERS(X)                                  \
    X("x-http-method-override")                                               \
    X("x-http-method")                                                        \
    X("x-method-override")

static ngx_str_t  ngx_http_airlock_override_headers[] = {
    NGX_HTTP_AIRLOCK_OVERRIDE_HEADERS(NGX_HTTP_AIRLOCK_HEADER_STR)
    ngx_null_string
};


/*
 * A client's token is a Bearer token in Proxy-Authorization, the one
 * header an upstream never needs; sent twice, the request is malformed.
 */
static ngx_http_airlock_token_conf_t  ngx_http_airlock_token_conf = {
    NGX_HTTP_AIRLOCK_TOKEN_PROXY,
    AL_REASON_REQUEST,
    ngx_http_airlock_override_headers,
    NGX_HTTP_AIRLOCK_HEADER_LENS(NGX_HTTP_AIRLOCK_OVERRIDE_HEADERS),
    0
};


static ngx_conf_enum_t  ngx_http_airlock_log_levels[] = {
    { ngx_string("info"), NGX_LOG_INFO },
    { ngx_string("notice"), NGX_LOG_NOTICE },
    { ngx_string("warn"), NGX_LOG_WARN },
    { ngx_string("error"), NGX_LOG_ERR },
    { ngx_null_string, 0 }
};


/* what ngx_http_airlock_request.c calls back */
static ngx_http_airlock_path_t  ngx_http_airlock_path = {
    ngx_http_airlock_body_read,
    ngx_http_airlock_error
};


/* a held body is request memory: up to 16 MB of it */
static ngx_conf_num_bounds_t  ngx_http_airlock_scrub_hold_bounds = {
    ngx_conf_check_num_bounds, 0, 16 * 1024 * 1024
};


static ngx_command_t  ngx_http_airlock_commands[] = {

    { ngx_string("airlock_policy"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_airlock_policy,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("airlock_keyring"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_airlock_keyring,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("airlock"),
      NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_airlock_loc_conf_t, enable),
      NULL },

    { ngx_string("airlock_scrub_hold"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_airlock_loc_conf_t, scrub_hold),
      &ngx_http_airlock_scrub_hold_bounds },

    { ngx_string("airlock_log_level"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_enum_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_airlock_loc_conf_t, log_level),
      &ngx_http_airlock_log_levels },

    { ngx_string("airlock_deny_log"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_http_airlock_deny_log,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("airlock_error_json"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_airlock_error_json,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("airlock_zone"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE2,
      ngx_http_airlock_zone,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("airlock_journal"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE123,
      ngx_http_airlock_journal,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("airlock_worker_dumpable"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_airlock_main_conf_t, dumpable),
      NULL },

    { ngx_string("airlock_status"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_airlock_status,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_airlock_module_ctx = {
    ngx_http_airlock_add_variables,        /* preconfiguration */
    ngx_http_airlock_init,                 /* postconfiguration */

    ngx_http_airlock_create_main_conf,     /* create main configuration */
    ngx_http_airlock_init_main_conf,       /* init main configuration */

    ngx_http_airlock_create_srv_conf,      /* create server configuration */
    ngx_http_airlock_merge_srv_conf,       /* merge server configuration */

    ngx_http_airlock_create_loc_conf,      /* create location configuration */
    ngx_http_airlock_merge_loc_conf        /* merge location configuration */
};


ngx_module_t  ngx_http_airlock_module = {
    NGX_MODULE_V1,
    &ngx_http_airlock_module_ctx,          /* module context */
    ngx_http_airlock_commands,             /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    ngx_http_airlock_init_module,          /* init module */
    ngx_http_airlock_init_process,         /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_http_airlock_logs_exit_process,    /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static ngx_int_t
ngx_http_airlock_handler(ngx_http_request_t *r)
{
    ngx_int_t                     rc;
    const char                   *detail;
    al_reason_t                   reason;
    ngx_http_airlock_ctx_t       *ctx;
    ngx_http_airlock_loc_conf_t  *alcf;

    alcf = ngx_http_get_module_loc_conf(r, ngx_http_airlock_module);

    if (!alcf->forwards) {
        /* any other location: an error_page, a subrequest, a mirror */
        if (ngx_http_airlock_drop_credentials(r) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    if (!alcf->enable) {
        return NGX_DECLINED;
    }

    ctx = ngx_http_airlock_get_ctx(r);

    rc = ngx_http_airlock_enter(r, ctx);

    if (rc != NGX_OK) {
        return rc;
    }

    ctx = ngx_http_airlock_create_ctx(r, &ngx_http_airlock_path);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    reason = ngx_http_airlock_decide(r, ctx, &detail);

    if (reason == AL_REASON_MAX) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (reason != AL_REASON_NONE) {
        return ngx_http_airlock_deny(r, ctx, reason, detail);
    }

    /*
     * A chunked body on a route that takes none is read until its first
     * byte or its end: only the end tells an empty one, which is no body,
     * from one with bytes (ngx_http_airlock_body_read()).
     */

    if (!ctx->route->has_body) {
        return ngx_http_airlock_read_empty_body(r, ctx);
    }

    return ngx_http_airlock_read_body(r, ctx, 1);
}


/*
 * The decision's parse buffers are large (path, query and URI, about
 * 17 KB) and live only while al_decide() or al_decide_body() runs: a worker
 * is one thread and both calls are synchronous, so one scratch decision per
 * process serves every request.  What outlives the call (the route, the
 * upstream URI, a deny's detail) is copied or used before the next event.
 */

static al_decision_t  ngx_http_airlock_scratch;


/*
 * Everything the request line and headers can decide.  The raw target
 * (r->unparsed_uri) is what libairlock sees: nginx has already decoded and
 * merged r->uri, and deciding on that would let "%2F" or "//" pass.
 */

static al_reason_t
ngx_http_airlock_decide(ngx_http_request_t *r, ngx_http_airlock_ctx_t *ctx,
    const char **detail)
{
    off_t                          clen;
    ngx_str_t                      token;
    ngx_msec_t                     left;
    const char                    *why;
    al_reason_t                    reason;
    al_request_t                   req;
    al_decision_t                 *d;
    const al_route_t              *route;
    ngx_http_airlock_main_conf_t  *amcf;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_airlock_module);

    d = &ngx_http_airlock_scratch;

    d->reason = AL_REASON_NONE;
    d->route = NULL;
    d->detail[0] = '\0';

    /* an unknown client is counted under its peer */
    (void) ngx_http_airlock_real_peer(r->connection, &ctx->peer);

    reason = ngx_http_airlock_token(r, &ngx_http_airlock_token_conf, &token,
                                    detail);

    if (reason == AL_REASON_CLIENT_UNKNOWN) {
        return reason;
    }

    why = "";
    ctx->client = ngx_http_airlock_identify(r->connection, amcf->policy,
                                            &ctx->peer, &token, &why);

    /* a quarantined client is refused whatever it asks */

    left = ngx_http_airlock_quarantined(r, ctx);

    if (left) {
        ngx_snprintf((u_char *) d->detail, sizeof(d->detail),
                     "client is in quarantine for %M ms more%Z", left);
        *detail = d->detail;
        return AL_REASON_QUARANTINED;
    }

    if (reason != AL_REASON_NONE) {
        return reason;
    }

    req.method = (char *) r->method_name.data;
    req.method_len = r->method_name.len;
    req.target = (char *) r->unparsed_uri.data;
    req.target_len = r->unparsed_uri.len;
    req.client = ctx->client;

    reason = al_decide(amcf->policy, &req, d);

    ctx->route = d->route;

    /* an unknown client learns nothing about the route table */

    if (ctx->client == NULL) {
        *detail = why;
        return AL_REASON_CLIENT_UNKNOWN;
    }

    if (reason != AL_REASON_NONE) {
        *detail = d->detail;
        return reason;
    }

    route = d->route;
    ctx->rconf = &amcf->routes[route - amcf->policy->routes];

    /* the scratch decision is reused while a body is read */

    ctx->uri.data = ngx_pnalloc(r->pool, d->uri_len);
    if (ctx->uri.data == NULL) {
        return AL_REASON_MAX;
    }

    ngx_memcpy(ctx->uri.data, d->uri, d->uri_len);
    ctx->uri.len = d->uri_len;

    /* framing: refuse before reading what cannot be accepted */

    clen = r->headers_in.content_length_n;

    if (!route->has_body && clen > 0) {
        ngx_snprintf((u_char *) d->detail, sizeof(d->detail),
                     "route \"%s\" takes no request body%Z",
                     route->name.data);
        *detail = d->detail;
        return AL_REASON_BODY_TOO_LARGE;
    }

    if (route->has_body && clen > (off_t) route->body_max) {
        ngx_snprintf((u_char *) d->detail, sizeof(d->detail),
                     "Content-Length %O is over the route's max_bytes "
                     "%uz%Z", clen, route->body_max);
        *detail = d->detail;
        return AL_REASON_BODY_TOO_LARGE;
    }

    if (route->allow_cookies) {
        reason = ngx_http_airlock_cookies(r, route, d);

        if (reason != AL_REASON_NONE) {
            *detail = d->detail;
            return reason;
        }
    }

    return AL_REASON_NONE;
}


/*
 * Every Cookie header the route lets through, as the upstream gets them:
 * none may name a checked param (al_cookie_check()).
 */

static al_reason_t
ngx_http_airlock_cookies(ngx_http_request_t *r, const al_route_t *route,
    al_decision_t *d)
{
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    part = &r->headers_in.headers.part;
    h = part->elts;

    for (i = 0; /* void */ ; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].key.len != sizeof("cookie") - 1
            || ngx_strncasecmp(h[i].key.data, (u_char *) "cookie",
                               sizeof("cookie") - 1)
               != 0)
        {
            continue;
        }

        if (al_cookie_check(route, (const char *) h[i].value.data,
                            h[i].value.len, d->detail, sizeof(d->detail))
            != 0)
        {
            return AL_REASON_QUERY;
        }
    }

    return AL_REASON_NONE;
}


/*
 * The body is read (or there is none): checked against the route, then
 * the request is allowed or refused.
 */

static ngx_int_t
ngx_http_airlock_body_read(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx)
{
    const char     *detail;
    al_reason_t     reason;
    al_decision_t  *d;

    if (ctx->route->has_body) {
        reason = ngx_http_airlock_check_body(r, ctx, &detail);

        if (reason == AL_REASON_MAX) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        if (reason != AL_REASON_NONE) {
            return ngx_http_airlock_deny(r, ctx, reason, detail);
        }

        return ngx_http_airlock_allow(r, ctx);
    }

    /*
     * A route that takes no body: an empty one (a chunked body of the
     * last chunk alone, an HTTP/2 stream ended by an empty DATA frame) is
     * allowed as a request without one, and forwarded as nginx read it,
     * "Content-Length: 0" and no byte.  A read still going on (its first
     * byte came: ngx_http_airlock_read_empty_body()), or a length nginx's
     * read left with no byte in the buffers (another location read the
     * body first), is refused as a body would be.
     */

    if (r->headers_in.content_length_n > 0
        || r->reading_body
        || !ngx_http_airlock_body_empty(r))
    {
        d = &ngx_http_airlock_scratch;

        ngx_snprintf((u_char *) d->detail, sizeof(d->detail),
                     "route \"%s\" takes no request body%Z",
                     ctx->route->name.data);

        return ngx_http_airlock_deny(r, ctx, AL_REASON_BODY_TOO_LARGE,
                                     d->detail);
    }

    return ngx_http_airlock_allow(r, ctx);
}


static al_reason_t
ngx_http_airlock_check_body(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx, const char **detail)
{
    ngx_int_t                 rc;
    al_reason_t               reason;
    al_decision_t            *d;
    const al_route_t         *route;
    ngx_http_airlock_body_t   body;

    d = &ngx_http_airlock_scratch;
    d->reason = AL_REASON_NONE;
    d->route = ctx->route;
    d->detail[0] = '\0';

    route = ctx->route;

    rc = ngx_http_airlock_body(r, route->body_max, &body);

    if (rc == NGX_ERROR) {
        return AL_REASON_MAX;
    }

    if (rc == NGX_DECLINED) {
        if (body.in_file) {
            ngx_snprintf((u_char *) d->detail, sizeof(d->detail),
                         "body is over the route's max_bytes %uz%Z",
                         route->body_max);

        } else {
            ngx_snprintf((u_char *) d->detail, sizeof(d->detail),
                         "body of %uz bytes is over the route's max_bytes "
                         "%uz%Z", body.len, route->body_max);
        }

        *detail = d->detail;
        return AL_REASON_BODY_TOO_LARGE;
    }

    reason = al_decide_body(route, (char *) body.ctype.data, body.ctype.len,
                            body.data, body.len, d);

    *detail = d->detail;

    return reason;
}


/* the request's body, as read, has no byte */

ngx_uint_t
ngx_http_airlock_body_empty(ngx_http_request_t *r)
{
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    if (r->request_body == NULL) {
        return r->headers_in.content_length_n <= 0 && !r->headers_in.chunked;
    }

    for (cl = r->request_body->bufs; cl; cl = cl->next) {
        b = cl->buf;

        if (ngx_buf_size(b) > 0) {
            return 0;
        }
    }

    return 1;
}


static ngx_int_t
ngx_http_airlock_allow(ngx_http_request_t *r, ngx_http_airlock_ctx_t *ctx)
{
    ngx_http_airlock_headers_t     hs;
    ngx_http_airlock_main_conf_t  *amcf;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_airlock_module);

    if (ctx->route->has_body && !ngx_http_airlock_body_empty(r)) {
        hs.keep = ngx_http_airlock_allowed_headers;
        hs.keep_lens = NGX_HTTP_AIRLOCK_HEADER_LENS(
                           NGX_HTTP_AIRLOCK_ALLOWED_HEADERS);
        hs.keep_hh = amcf->keep_hh;
        hs.keep_at = amcf->keep_at;

    } else {
        hs.keep = ngx_http_airlock_bodyless_headers;
        hs.keep_lens = NGX_HTTP_AIRLOCK_HEADER_LENS(
                           NGX_HTTP_AIRLOCK_BODYLESS_HEADERS);
        hs.keep_hh = amcf->bodyless_hh;
        hs.keep_at = amcf->bodyless_at;
    }
    hs.cookies = ctx->route->allow_cookies;
    hs.inject = ctx->rconf->inject;
    hs.ninject = ctx->rconf->ninject;
    hs.defaults = NULL;
    hs.ndefaults = 0;

    if (ngx_http_airlock_allowed(r, ctx, &hs) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "airlock: client \"%s\" route \"%s\" to \"%V\"",
                   ctx->client->name.data, ctx->route->name.data, &ctx->uri);

    return NGX_DECLINED;
}


/*
 * Answers 403 itself, with the JSON body and "Airlock-Denial: REASON",
 * and finalizes the request: the phase engine only knows how to answer
 * with nginx's own error pages.
 */

static ngx_int_t
ngx_http_airlock_deny(ngx_http_request_t *r, ngx_http_airlock_ctx_t *ctx,
    al_reason_t reason, const char *detail)
{
    ngx_int_t  rc;

    ngx_http_airlock_refuse(r, ctx, reason, detail, 1);

    if (ngx_http_airlock_denial_set(r, reason) != NGX_OK) {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return NGX_DONE;
    }

    rc = ngx_http_airlock_answer(r, NGX_HTTP_FORBIDDEN, "forbidden",
                                 al_reason_name(reason));

    ngx_http_finalize_request(r, rc);

    return NGX_DONE;
}


/* {"error":"...","reason":"...","request_id":"..."} */

static ngx_int_t
ngx_http_airlock_answer(ngx_http_request_t *r, ngx_uint_t status,
    const char *error, const char *reason)
{
    size_t        len;
    ngx_buf_t    *b;
    ngx_str_t     id;

    if (ngx_http_airlock_request_id(r, &id) != NGX_OK) {
        return NGX_ERROR;
    }

    len = sizeof("{\"error\":\"\",\"request_id\":\"\"}" CRLF) - 1
          + ngx_strlen(error) + id.len;

    if (reason != NULL) {
        len += sizeof(",\"reason\":\"\"") - 1 + ngx_strlen(reason);
    }

    b = ngx_create_temp_buf(r->pool, len);
    if (b == NULL) {
        return NGX_ERROR;
    }

    if (reason != NULL) {
        b->last = ngx_sprintf(b->last, "{\"error\":\"%s\",\"reason\":\"%s\","
                              "\"request_id\":\"%V\"}" CRLF,
                              error, reason, &id);

    } else {
        b->last = ngx_sprintf(b->last, "{\"error\":\"%s\","
                              "\"request_id\":\"%V\"}" CRLF, error, &id);
    }

    return ngx_http_airlock_send_json(r, status, b);
}


/* a body nginx could not read, answered as airlock_error_json would */

static ngx_int_t
ngx_http_airlock_error(ngx_http_request_t *r, ngx_http_airlock_ctx_t *ctx,
    ngx_uint_t status)
{
    r->err_status = status;

    return ngx_http_airlock_error_handler(r);
}


/*
 * airlock_error_json: the content of an error_page location.  Answers the
 * status of the error with {"error":"bad_gateway","request_id":"..."}, and
 * nothing about the upstream.
 */

ngx_int_t
ngx_http_airlock_error_handler(ngx_http_request_t *r)
{
    ngx_int_t    rc;
    ngx_uint_t   status;
    const char  *error;

    status = r->err_status ? r->err_status : NGX_HTTP_INTERNAL_SERVER_ERROR;

    switch (status) {
    case NGX_HTTP_BAD_REQUEST:
        error = "bad_request";
        break;
    case NGX_HTTP_FORBIDDEN:
        error = "forbidden";
        break;
    case NGX_HTTP_NOT_FOUND:
        error = "not_found";
        break;
    case NGX_HTTP_REQUEST_TIME_OUT:
        error = "request_timeout";
        break;
    case NGX_HTTP_REQUEST_ENTITY_TOO_LARGE:
        error = "body_too_large";
        break;
    case NGX_HTTP_TOO_MANY_REQUESTS:
        error = "too_many_requests";
        break;
    case NGX_HTTP_BAD_GATEWAY:
        error = "bad_gateway";
        break;
    case NGX_HTTP_SERVICE_UNAVAILABLE:
        error = "service_unavailable";
        break;
    case NGX_HTTP_GATEWAY_TIME_OUT:
        error = "gateway_timeout";
        break;
    default:
        error = (status >= 500) ? "internal_error" : "error";
        break;
    }

    rc = ngx_http_airlock_answer(r, status, error, NULL);

    return rc;
}


static char *
ngx_http_airlock_policy(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_airlock_main_conf_t  *amcf = conf;

    ngx_str_t  *value;

    if (amcf->policy_file.data) {
        return "is duplicate";
    }

    value = cf->args->elts;
    amcf->policy_file = value[1];

    if (ngx_conf_full_name(cf->cycle, &amcf->policy_file, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    amcf->policy_conf = cf->conf_file->file.name;
    amcf->policy_line = cf->conf_file->line;

    return NGX_CONF_OK;
}


static char *
ngx_http_airlock_keyring(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_airlock_main_conf_t  *amcf = conf;

    ngx_str_t  *value;

    if (amcf->keyring_file.data) {
        return "is duplicate";
    }

    value = cf->args->elts;
    amcf->keyring_file = value[1];

    if (ngx_conf_full_name(cf->cycle, &amcf->keyring_file, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static char *
ngx_http_airlock_error_json(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_core_loc_conf_t  *clcf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_airlock_error_handler;

    return NGX_CONF_OK;
}


/*
 * The policy is loaded once both http-level directives are known, so
 * their order does not matter.  Each configuration cycle owns its policy:
 * a reload that fails keeps the old cycle, and with it the old policy.
 */

static char *
ngx_http_airlock_load(ngx_conf_t *cf, ngx_http_airlock_main_conf_t *amcf)
{
    char                     *rv;
    size_t                    i;
    al_error_t                err;
    al_policy_t              *p;
    al_keyring_t             *kr;
    ngx_pool_cleanup_t       *cln;
    ngx_http_airlock_load_t   ld;

    kr = NULL;

    /* before the keyring and the secrets are read */
    ngx_http_airlock_not_dumpable(cf->log);

    if (amcf->keyring_file.len) {
        kr = al_keyring_load((char *) amcf->keyring_file.data, &err);

        if (kr == NULL) {
            return ngx_http_airlock_load_error(cf, amcf, &err);
        }
    }

    /* file: secrets open without a keyring; a sealed one needs it */
    p = al_policy_load_open((char *) amcf->policy_file.data, kr, 1, &err);

    /* the private key is not needed once the secrets are open */
    al_keyring_free(kr);

    if (p == NULL) {
        return ngx_http_airlock_load_error(cf, amcf, &err);
    }

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        al_policy_free(p);
        return NGX_CONF_ERROR;
    }

    cln->handler = ngx_http_airlock_policy_cleanup;
    cln->data = p;

    amcf->policy = p;

    amcf->routes = ngx_pcalloc(cf->pool,
                               (p->nroutes + 1)
                               * sizeof(ngx_http_airlock_route_t));
    if (amcf->routes == NULL) {
        return NGX_CONF_ERROR;
    }

    for (ld.mask = 8; ld.mask < 2 * p->nroutes + 2; ld.mask *= 2) {
        /* void */
    }

    ld.slot = ngx_pcalloc(cf->temp_pool, ld.mask * sizeof(ngx_uint_t));
    ld.upstream = ngx_pcalloc(cf->temp_pool,
                              (p->nupstreams + 1) * sizeof(ngx_str_t));
    if (ld.slot == NULL || ld.upstream == NULL) {
        return NGX_CONF_ERROR;
    }

    ld.mask--;
    ld.scrubbed = NULL;

    for (i = 0; i < p->nroutes; i++) {
        rv = ngx_http_airlock_load_route(cf, amcf, &p->routes[i],
                                         &amcf->routes[i], &ld);
        if (rv != NGX_CONF_OK) {
            return rv;
        }
    }

    /* the http block is read: its upstream blocks are all known */

    return ngx_http_airlock_conf_clear(cf, p, &amcf->policy_conf,
                                       amcf->policy_line);
}


/*
 * The loader's message quotes the policy (a name, a value, a key), and
 * "nginx -t" prints it on the operator's terminal: it is shown as
 * airlockctl shows it, a control character or a byte past ASCII as \xHH
 * and a backslash as \\, so that an escape sequence in a policy cannot
 * rewrite the screen, nor a name read as another.
 */

static char *
ngx_http_airlock_load_error(ngx_conf_t *cf,
    ngx_http_airlock_main_conf_t *amcf, const al_error_t *err)
{
    size_t   len, size;
    u_char  *shown;
    u_char   msg[sizeof(al_error_t) + 16];

    len = al_error_format(err, (char *) msg, sizeof(msg));
    len = ngx_min(len, sizeof(msg) - 1);

    size = 4 * len + 1;

    shown = ngx_pnalloc(cf->temp_pool, size);
    if (shown == NULL) {
        return NGX_CONF_ERROR;
    }

    len = al_shown((char *) shown, size, (char *) msg, len);

    ngx_log_error(NGX_LOG_EMERG, cf->log, 0, "%*s in %V:%ui", len, shown,
                  &amcf->policy_conf, amcf->policy_line);

    return NGX_CONF_ERROR;
}


static char *
ngx_http_airlock_load_route(ngx_conf_t *cf,
    ngx_http_airlock_main_conf_t *amcf, const al_route_t *route,
    ngx_http_airlock_route_t *rc, ngx_http_airlock_load_t *ld)
{
    size_t                len;
    const char           *why;
    al_scrub_t           *scrub;
    ngx_str_t            *us;
    const al_upstream_t  *u;

    u = route->upstream;
    us = &ld->upstream[u - amcf->policy->upstreams];

    if (us->data == NULL) {
        len = sizeof("https://") - 1 + u->host.len;

        us->data = ngx_pnalloc(cf->pool, len);
        if (us->data == NULL) {
            return NGX_CONF_ERROR;
        }

        us->len = ngx_sprintf(us->data, "%s://%*s",
                              u->https ? "https" : "http",
                              u->host.len, u->host.data)
                  - us->data;
    }

    rc->upstream = *us;

    if (route->has_body && route->body_max > amcf->body_max) {
        amcf->body_max = route->body_max;
    }

    if (route->ninject > 0
        && ngx_http_airlock_load_inject(cf, amcf, route, rc, ld)
           != NGX_CONF_OK)
    {
        return NGX_CONF_ERROR;
    }

    if (!al_scrub_route_scrubbed(amcf->policy, route)) {
        return NGX_CONF_OK;
    }

    /* the tables depend on the list alone, which is the policy's */

    if (ld->scrubbed != NULL) {
        rc->scrub = ld->scrubbed->scrub;
        rc->minlen = ld->scrubbed->minlen;
        rc->first = ld->scrubbed->first;
        rc->nfirst = ld->scrubbed->nfirst;
        ngx_memcpy(rc->firsts, ld->scrubbed->firsts, sizeof(rc->firsts));
        rc->nibbles = ld->scrubbed->nibbles;
        ngx_memcpy(rc->space, ld->scrubbed->space, sizeof(rc->space));

        return NGX_CONF_OK;
    }

    scrub = ngx_http_airlock_policy_scrub(cf, amcf, &why);
    if (scrub == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "route \"%s\": cannot build its scrub list: %s",
                      route->name.data, why);
        return NGX_CONF_ERROR;
    }

    if (scrub->n == 0) {
        return NGX_CONF_OK;
    }

    if (ngx_http_airlock_route_scrub_init(cf, rc, scrub) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    ld->scrubbed = rc;

    return NGX_CONF_OK;
}


static char *
ngx_http_airlock_load_inject(ngx_conf_t *cf,
    ngx_http_airlock_main_conf_t *amcf, const al_route_t *route,
    ngx_http_airlock_route_t *rc, ngx_http_airlock_load_t *ld)
{
    ngx_uint_t                 i;
    ngx_table_elt_t           *h;
    al_inject_t               *inj;
    ngx_http_airlock_route_t  *same;

    same = ngx_http_airlock_same_inject(amcf, route, ld);
    if (same != NULL) {
        rc->inject = same->inject;
        rc->ninject = same->ninject;

        return NGX_CONF_OK;
    }

    rc->inject = ngx_pcalloc(cf->pool,
                             route->ninject * sizeof(ngx_table_elt_t));
    if (rc->inject == NULL) {
        return NGX_CONF_ERROR;
    }

    for (i = 0; i < route->ninject; i++) {
        inj = &route->inject[i];
        h = &rc->inject[i];

        if (inj->value == NULL) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "route \"%s\" injects \"%s\" but no "
                          "\"airlock_keyring\" is set to render it in %V:%ui",
                          route->name.data, inj->name.data,
                          &amcf->policy_conf, amcf->policy_line);
            return NGX_CONF_ERROR;
        }

        h->key.data = (u_char *) inj->name.data;
        h->key.len = inj->name.len;

        /* the value stays in the library's guarded memory */
        h->value.data = inj->value;
        h->value.len = inj->len;

        h->lowcase_key = ngx_pnalloc(cf->pool, h->key.len);
        if (h->lowcase_key == NULL) {
            return NGX_CONF_ERROR;
        }

        ngx_strlow(h->lowcase_key, h->key.data, h->key.len);

        /*
         * hash 0: the proxy module still sends the header, but the
         * $http_* variables skip it, so no log_format can print it
         */
        h->hash = 0;
    }

    rc->ninject = route->ninject;

    return NGX_CONF_OK;
}


/*
 * The loaded route that injects exactly what route injects, or NULL after
 * remembering route.  Equal names and rendered values are the same
 * pointers in the library, so pointers are compared.
 */

static ngx_http_airlock_route_t *
ngx_http_airlock_same_inject(ngx_http_airlock_main_conf_t *amcf,
    const al_route_t *route, ngx_http_airlock_load_t *ld)
{
    ngx_uint_t         i, k;
    uintptr_t          h;
    const al_route_t  *o;

    h = route->ninject;

    for (i = 0; i < route->ninject; i++) {
        h = h * 31 + (uintptr_t) route->inject[i].name.data;
        h = h * 31 + (uintptr_t) route->inject[i].value;
    }

    h ^= h >> 17;

    for (k = h & ld->mask; ld->slot[k] != 0; k = (k + 1) & ld->mask) {
        o = &amcf->policy->routes[ld->slot[k] - 1];

        if (o->ninject != route->ninject) {
            continue;
        }

        for (i = 0; i < route->ninject; i++) {
            if (o->inject[i].name.data != route->inject[i].name.data
                || o->inject[i].value != route->inject[i].value)
            {
                break;
            }
        }

        if (i == route->ninject) {
            return &amcf->routes[ld->slot[k] - 1];
        }
    }

    ld->slot[k] = route->index + 1;

    return NULL;
}


static void
ngx_http_airlock_policy_cleanup(void *data)
{
    al_policy_free(data);
}


static void
ngx_http_airlock_scrub_cleanup(void *data)
{
    al_scrub_free(data);
}


/*
 * One list for the policy, searched in every scrubbed response, routes'
 * and llm prefixes' alike: a response must not carry any credential the
 * proxy holds, whichever route's it is.
 */

al_scrub_t *
ngx_http_airlock_policy_scrub(ngx_conf_t *cf,
    ngx_http_airlock_main_conf_t *amcf, const char **why)
{
    al_scrub_t          *scrub;
    ngx_pool_cleanup_t  *cln;

    if (amcf->scrub != NULL) {
        return amcf->scrub;
    }

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        *why = "out of memory";
        return NULL;
    }

    scrub = al_scrub_collect_all(amcf->policy, why);
    if (scrub == NULL) {
        return NULL;
    }

    cln->handler = ngx_http_airlock_scrub_cleanup;
    cln->data = scrub;

    amcf->scrub = scrub;

    return scrub;
}


static void *
ngx_http_airlock_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_airlock_main_conf_t  *amcf;

    amcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_airlock_main_conf_t));
    if (amcf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     amcf->policy_file = { 0, NULL };
     *     amcf->keyring_file = { 0, NULL };
     *     amcf->policy = NULL;
     *     amcf->routes = NULL;
     *     amcf->body_max = 0;
     */

    amcf->request_id_index = NGX_ERROR;
    amcf->dumpable = NGX_CONF_UNSET;

    return amcf;
}


static char *
ngx_http_airlock_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_airlock_main_conf_t  *amcf = conf;

    ngx_str_t  name = ngx_string("request_id");

    amcf->request_id_index = ngx_http_get_variable_index(cf, &name);
    if (amcf->request_id_index == NGX_ERROR) {
        return NGX_CONF_ERROR;
    }

    ngx_conf_init_value(amcf->dumpable, 0);

    if (amcf->policy_file.len == 0) {
        if (amcf->keyring_file.len) {
            ngx_log_error(NGX_LOG_WARN, cf->log, 0,
                          "\"airlock_keyring\" is set without "
                          "\"airlock_policy\"");
        }

        return NGX_CONF_OK;
    }

    return ngx_http_airlock_load(cf, amcf);
}


static void *
ngx_http_airlock_create_srv_conf(ngx_conf_t *cf)
{
    ngx_http_airlock_srv_conf_t  *ascf;

    ascf = ngx_pcalloc(cf->pool, sizeof(ngx_http_airlock_srv_conf_t));
    if (ascf == NULL) {
        return NULL;
    }

    ascf->deny_log = NGX_CONF_UNSET_PTR;

    return ascf;
}


static char *
ngx_http_airlock_merge_srv_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_airlock_srv_conf_t  *prev = parent;
    ngx_http_airlock_srv_conf_t  *conf = child;

    ngx_conf_merge_ptr_value(conf->deny_log, prev->deny_log, NULL);

    return NGX_CONF_OK;
}


static void *
ngx_http_airlock_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_airlock_loc_conf_t  *alcf;

    alcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_airlock_loc_conf_t));
    if (alcf == NULL) {
        return NULL;
    }

    alcf->enable = NGX_CONF_UNSET;
    alcf->scrub_hold = NGX_CONF_UNSET_SIZE;
    alcf->log_level = NGX_CONF_UNSET_UINT;

    return alcf;
}


static char *
ngx_http_airlock_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_airlock_loc_conf_t  *prev = parent;
    ngx_http_airlock_loc_conf_t  *conf = child;

    ngx_http_core_loc_conf_t      *clcf;
    ngx_http_airlock_main_conf_t  *amcf;

    ngx_conf_merge_value(conf->enable, prev->enable, 0);
    ngx_conf_merge_size_value(conf->scrub_hold, prev->scrub_hold, 65536);
    ngx_conf_merge_uint_value(conf->log_level, prev->log_level, NGX_LOG_ERR);

    amcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_airlock_module);
    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);

    /* the status belongs on an admin listener, never on the clients' */

    if (conf->status && conf->enable) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"airlock_status\" in location \"%V\" cannot be "
                      "used with \"airlock on\": put it on an admin "
                      "listener", &clcf->name);
        return NGX_CONF_ERROR;
    }

    if (conf->status && amcf->zone == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"airlock_status\" in location \"%V\" needs "
                      "\"airlock_zone\" at the http level", &clcf->name);
        return NGX_CONF_ERROR;
    }

    if (!conf->enable) {
        return NGX_CONF_OK;
    }

    if (amcf->policy == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"airlock on\" in location \"%V\" needs "
                      "\"airlock_policy\" at the http level", &clcf->name);
        return NGX_CONF_ERROR;
    }

    /* bodies are checked and forwarded from one memory buffer */

    if (clcf->client_body_buffer_size < amcf->body_max) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"client_body_buffer_size\" %uz in location \"%V\" "
                      "is smaller than the largest route body max_bytes "
                      "%uz; airlock reads request bodies into memory",
                      clcf->client_body_buffer_size, &clcf->name,
                      amcf->body_max);
        return NGX_CONF_ERROR;
    }

    if (clcf->client_max_body_size
        && clcf->client_max_body_size < (off_t) amcf->body_max)
    {
        ngx_log_error(NGX_LOG_WARN, cf->log, 0,
                      "\"client_max_body_size\" %O in location \"%V\" is "
                      "smaller than the largest route body max_bytes %uz; "
                      "larger bodies get nginx's 413",
                      clcf->client_max_body_size, &clcf->name,
                      amcf->body_max);
    }

    /* what other modules' directives may not do here */
    return ngx_http_airlock_conf_check(cf, clcf);
}


static ngx_int_t
ngx_http_airlock_init(ngx_conf_t *cf)
{
    ngx_array_t                   *a;
    ngx_http_handler_pt           *h;
    ngx_http_core_main_conf_t     *cmcf;
    ngx_http_airlock_main_conf_t  *amcf;

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_PREACCESS_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_airlock_handler;

    /*
     * requests refused before the decision: ngx_http_airlock_refused.c;
     * first of the log phase's handlers, which run in the order they
     * were added: the refusal takes the cookies out before the access
     * log (added by a module before this one) reads them
     */

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_LOG_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    a = &cmcf->phases[NGX_HTTP_LOG_PHASE].handlers;
    h = a->elts;

    ngx_memmove(&h[1], &h[0], (a->nelts - 1) * sizeof(ngx_http_handler_pt));

    h[0] = ngx_http_airlock_refused_handler;

    amcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_airlock_module);

    if (ngx_http_airlock_shortcuts_init(cf, amcf) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ngx_http_airlock_keep_init(cf, ngx_http_airlock_allowed_headers,
                                   amcf->keep_hh, amcf->keep_at)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (ngx_http_airlock_keep_init(cf, ngx_http_airlock_bodyless_headers,
                                   amcf->bodyless_hh, amcf->bodyless_at)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (ngx_http_airlock_wrap_variables(cf, amcf) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ngx_http_airlock_status_check(cf) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_airlock_filter_init(cf);
}


/* the decision comes first in its phase, whatever is loaded after us */

static ngx_int_t
ngx_http_airlock_init_module(ngx_cycle_t *cycle)
{
    return ngx_http_airlock_phase_first(cycle, ngx_http_airlock_handler);
}
