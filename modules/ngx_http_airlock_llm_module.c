
/*
 * ngx_http_airlock_llm_module: the LLM token gateway.
 *
 * A location with "airlock_llm NAME" is the gateway for the policy's llm
 * entry NAME.  Clients call it exactly as they would call the provider,
 * with their own Airlock token as the API key.  Every request is decided
 * in the preaccess phase:
 *
 *   1. the client, from its key (Authorization: Bearer, x-api-key,
 *      api-key, Proxy-Authorization) or its unix peer credentials, must
 *      be one of the entry's clients, and not in quarantine;
 *   2. the raw target under the prefix must be an endpoint the gateway
 *      serves (al_llm_route());
 *   3. the JSON body is read into memory and checked and, when needed,
 *      rewritten (model allowlist, max tokens, include_usage:
 *      al_llm_request()); those exact bytes are what the provider gets;
 *      a Responses request may name as its previous_response_id, and
 *      by id in its input, only responses and output items its own
 *      client's calls made (the filters bind each id to its client as
 *      the answer passes);
 *   4. the tokens the request may use are reserved from the client's
 *      minute and day budgets, in shared memory;
 *   5. the client's credentials and every header outside a short
 *      allowlist are removed, and the provider key is added.
 *
 * GET /models and GET /models/{id} are answered here, from the policy,
 * and never reach the provider (al_llm_model_list(), al_llm_model_get()):
 * the account's list names models the client may not use, and the
 * account itself.
 *
 * A refused request is answered in the provider's own error format, so
 * SDKs raise their usual exceptions, and logged to airlock_deny_log.  The
 * request then leaves through nginx's proxy module
 * (proxy_pass $airlock_llm_upstream$airlock_llm_uri).  On the way back the
 * filters (ngx_http_airlock_llm_filter.c) count the tokens, JSON and event
 * streams alike, without holding back anything a client could act on; the
 * key is scrubbed by ngx_http_airlock_module's filter.  In the log phase
 * the reservation is settled with the real usage, one JSON line goes to
 * airlock_llm_log and the counters of airlock_llm_metrics are updated
 * (ngx_http_airlock_llm_zone.c).
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_airlock_llm_module.h"


static ngx_int_t ngx_http_airlock_llm_handler(ngx_http_request_t *r);
static ngx_http_airlock_llm_ctx_t *ngx_http_airlock_llm_create_ctx(
    ngx_http_request_t *r, ngx_http_airlock_llm_loc_conf_t *llcf);
static void ngx_http_airlock_llm_cleanup(void *data);
static al_reason_t ngx_http_airlock_llm_decide(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, al_llm_error_t *err,
    const char **detail);
static al_reason_t ngx_http_airlock_llm_route(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, const char **detail);
static ngx_int_t ngx_http_airlock_llm_keep(ngx_http_request_t *r,
    ngx_str_t *dst, const void *src, size_t len);
static unsigned ngx_http_airlock_llm_method(ngx_http_request_t *r);
static ngx_int_t ngx_http_airlock_llm_body_read(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *actx);
static ngx_int_t ngx_http_airlock_llm_error(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *actx, ngx_uint_t status);
static ngx_int_t ngx_http_airlock_llm_check_body(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, uint64_t *need);
static ngx_int_t ngx_http_airlock_llm_map_model(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_http_airlock_body_t *body);
static ngx_int_t ngx_http_airlock_llm_state_check(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, const al_llm_req_t *req,
    const u_char *body, const u_char *sent, size_t len);
static ngx_int_t ngx_http_airlock_llm_state_read(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, const u_char *body, size_t len);
static ngx_int_t ngx_http_airlock_llm_state_deny(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_int_t owner, size_t index);
static ngx_int_t ngx_http_airlock_llm_allow(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, uint64_t need);
static ngx_int_t ngx_http_airlock_llm_page(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, al_llm_page_t *page);
static ngx_int_t ngx_http_airlock_llm_page_id(ngx_http_request_t *r,
    char *name, size_t len, al_str_t *id);
static ngx_int_t ngx_http_airlock_llm_models(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, al_llm_page_t *page);
static ngx_int_t ngx_http_airlock_llm_admit(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, uint64_t need);
static ngx_int_t ngx_http_airlock_llm_deny(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, al_reason_t reason, al_llm_error_t err,
    const char *detail, const char *message);
static ngx_int_t ngx_http_airlock_llm_send_error(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, al_llm_error_t err,
    const char *message);
static ngx_int_t ngx_http_airlock_llm_log_handler(ngx_http_request_t *r);
static ngx_uint_t ngx_http_airlock_llm_beta_priced(ngx_http_request_t *r,
    const ngx_http_airlock_llm_ctx_t *ctx);

/*
 * The request pool of a server in an http block with LLM entries, where
 * it is nginx's default (ngx_http_airlock_llm_init())
 */
#define NGX_HTTP_AIRLOCK_LLM_POOL_DEFAULT  4096
#define NGX_HTTP_AIRLOCK_LLM_POOL          16384

#define AL_LLM_BETA_PRICED                                                   \
    "anthropic-beta names a beta billed above the policy's prices "          \
    "(context-1m for a model without long_context prices, fast-mode), or "   \
    "is no plain list of beta names, and this client has a dollar budget"
static void ngx_http_airlock_llm_account(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx);
static void ngx_http_airlock_llm_write(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx);
static ngx_uint_t ngx_http_airlock_llm_status(ngx_http_request_t *r);
static ngx_msec_t ngx_http_airlock_llm_now(void);
static uint64_t ngx_http_airlock_llm_charge_attempt(
    ngx_http_airlock_llm_ctx_t *ctx, const al_llm_usage_t *usage);
static void ngx_http_airlock_llm_bound(const ngx_http_airlock_llm_ctx_t *ctx,
    al_llm_usage_t *u);
static ngx_uint_t ngx_http_airlock_llm_hung_up(
    const ngx_http_airlock_llm_ctx_t *ctx);
static ngx_uint_t ngx_http_airlock_llm_timed_out(ngx_http_upstream_t *u);
static ngx_int_t ngx_http_airlock_llm_intercepted_usage(
    ngx_http_request_t *r, ngx_http_airlock_llm_ctx_t *ctx,
    al_llm_usage_t *u);
static char *ngx_http_airlock_llm_bind(ngx_conf_t *cf,
    ngx_http_airlock_llm_loc_conf_t *conf, ngx_http_core_loc_conf_t *clcf);
static ngx_int_t ngx_http_airlock_llm_content(ngx_http_request_t *r);
static ngx_int_t ngx_http_airlock_llm_init_peer(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us);

static char *ngx_http_airlock_llm(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_airlock_llm_log(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_airlock_llm_prepare(ngx_conf_t *cf,
    ngx_http_airlock_llm_loc_conf_t *llcf,
    ngx_http_airlock_llm_provider_t *prov);
static void ngx_http_airlock_llm_free_secure(void *data);

static void *ngx_http_airlock_llm_create_main_conf(ngx_conf_t *cf);
static char *ngx_http_airlock_llm_init_main_conf(ngx_conf_t *cf,
    void *conf);
static void *ngx_http_airlock_llm_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_airlock_llm_merge_loc_conf(ngx_conf_t *cf,
    void *parent, void *child);
static ngx_int_t ngx_http_airlock_llm_init(ngx_conf_t *cf);
static ngx_int_t ngx_http_airlock_llm_init_module(ngx_cycle_t *cycle);
static ngx_int_t ngx_http_airlock_llm_init_process(ngx_cycle_t *cycle);


/*
 * Client headers that reach the provider; everything else goes, the
 * client's credentials, Accept-Encoding (the streams are parsed and
 * scrubbed as they pass) and OpenAI-Organization / OpenAI-Project (they
 * belong to the provider key, not to the client) included.
 */
#define NGX_HTTP_AIRLOCK_LLM_HEADERS(X)                                       \
    X("accept")                                                               \
    X("content-type")                                                         \
    X("user-agent")                                                           \
    X("openai-beta")                                                          \
    X("anthropic-version")                                                    \
    X("anthropic-beta")

static ngx_str_t  ngx_http_airlock_llm_headers[] = {
    NGX_HTTP_AIRLOCK_LLM_HEADERS(NGX_HTTP_AIRLOCK_HEADER_STR)
    ngx_null_string
};


/* what ngx_http_airlock_request.c calls back */
static ngx_http_airlock_path_t  ngx_http_airlock_llm_path = {
    ngx_http_airlock_llm_body_read,
    ngx_http_airlock_llm_error
};


static ngx_command_t  ngx_http_airlock_llm_commands[] = {

    { ngx_string("airlock_llm"),
      NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_airlock_llm,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("airlock_llm_fallback"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_airlock_llm_fallback_conf,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("airlock_llm_log"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_airlock_llm_log,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("airlock_llm_zone"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE23,
      ngx_http_airlock_llm_zone,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("airlock_llm_metrics"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_airlock_llm_metrics,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_airlock_llm_module_ctx = {
    ngx_http_airlock_llm_add_variables,    /* preconfiguration */
    ngx_http_airlock_llm_init,             /* postconfiguration */

    ngx_http_airlock_llm_create_main_conf, /* create main configuration */
    ngx_http_airlock_llm_init_main_conf,   /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    ngx_http_airlock_llm_create_loc_conf,  /* create location configuration */
    ngx_http_airlock_llm_merge_loc_conf    /* merge location configuration */
};


ngx_module_t  ngx_http_airlock_llm_module = {
    NGX_MODULE_V1,
    &ngx_http_airlock_llm_module_ctx,      /* module context */
    ngx_http_airlock_llm_commands,         /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    ngx_http_airlock_llm_init_module,      /* init module */
    ngx_http_airlock_llm_init_process,     /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static ngx_int_t
ngx_http_airlock_llm_handler(ngx_http_request_t *r)
{
    ngx_int_t                         rc;
    const char                       *detail;
    al_reason_t                       reason;
    al_llm_error_t                    err;
    ngx_http_airlock_ctx_t           *actx;
    ngx_http_airlock_llm_ctx_t       *ctx;
    ngx_http_airlock_loc_conf_t      *alcf;
    ngx_http_airlock_llm_loc_conf_t  *llcf;

    llcf = ngx_http_get_module_loc_conf(r, ngx_http_airlock_llm_module);

    if (llcf->fallback) {
        return ngx_http_airlock_llm_fallback(r);
    }

    if (llcf->provider == NULL) {
        /*
         * An Airlock location of ngx_http_airlock_module forwards a call
         * an error_page led here as it was decided, to its provider: the
         * internal redirect cleared the context, and the filters (usage,
         * the provider's account headers) look for it in r->ctx only.
         */
        alcf = ngx_http_get_module_loc_conf(r, ngx_http_airlock_module);

        if (alcf->forwards && r == r->main && !r->post_action) {
            ctx = ngx_http_airlock_llm_get_ctx(r);

            if (ctx != NULL) {
                rc = ngx_http_airlock_llm_resend(r, ctx);

                if (rc != NGX_OK) {
                    return rc;
                }
            }
        }

        return NGX_DECLINED;
    }

    ctx = ngx_http_airlock_llm_get_ctx(r);

    if (ctx != NULL) {
        /* an internal redirect from inside a bound location's proxy */
        ngx_http_airlock_llm_target_restore(r, ctx);
        actx = ctx->actx;

    } else {
        /* a request ngx_http_airlock_module decided, if any */
        actx = ngx_http_airlock_get_ctx(r);
    }

    rc = ngx_http_airlock_enter(r, actx);

    if (rc != NGX_OK) {
        if (rc == NGX_DECLINED && ctx == NULL) {
            /*
             * A named route's request an error_page (a named location,
             * try_files) led here: its decision stands, and it is not a
             * gateway call.  Decided again it was refused, as a client
             * without a key and counted for quarantine (the route's
             * rewrite took the token); a bound location would have sent
             * it to the provider's block.  It goes nowhere.
             */

            ngx_http_airlock_log_error(NGX_LOG_ERR, r->connection->log, 0,
                                       "airlock: a request of route \"%s\" "
                                       "was led to a location of llm "
                                       "\"%s\": refused",
                                       actx->route->name.data,
                                       llcf->provider->llm->name.data);

            return r->err_status ? (ngx_int_t) r->err_status
                                 : NGX_HTTP_BAD_GATEWAY;
        }

        if (rc == NGX_DECLINED) {
            /* a decided call led here: this location sends it again */
            rc = ngx_http_airlock_llm_resend(r, ctx);

            if (rc == NGX_OK) {
                rc = NGX_DECLINED;
            }
        }

        return rc;
    }

    ctx = ngx_http_airlock_llm_create_ctx(r, llcf);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    err = AL_LLM_ERR_DENIED;
    detail = NULL;

    reason = ngx_http_airlock_llm_decide(r, ctx, &err, &detail);

    if (reason == AL_REASON_MAX) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (reason != AL_REASON_NONE) {
        return ngx_http_airlock_llm_deny(r, ctx, reason, err, detail,
                                         err == AL_LLM_ERR_AUTH ? NULL
                                                                : detail);
    }

    if (!al_llm_endpoint_has_body(ctx->endpoint)) {
        return ngx_http_airlock_read_empty_body(r, ctx->actx);
    }

    return ngx_http_airlock_read_body(r, ctx->actx, 1);
}


/* the context survives internal redirects, as ngx_http_airlock_module's */

ngx_http_airlock_llm_ctx_t *
ngx_http_airlock_llm_get_ctx(ngx_http_request_t *r)
{
    return ngx_http_airlock_find_ctx(r, &ngx_http_airlock_llm_module,
                                     ngx_http_airlock_llm_cleanup);
}


/*
 * Besides its own, a request gets a context of ngx_http_airlock_module:
 * its response scrubbing, deny log, deny counting and quarantine work on
 * that, and its variables ($airlock_client, $airlock_route: the provider)
 * read it.
 */

static ngx_http_airlock_llm_ctx_t *
ngx_http_airlock_llm_create_ctx(ngx_http_request_t *r,
    ngx_http_airlock_llm_loc_conf_t *llcf)
{
    ngx_http_airlock_ctx_t      *actx;
    ngx_http_airlock_llm_ctx_t  *ctx;

    /*
     * One allocation: this context, the request path's, their cleanups,
     * and the room some calls take later, left as it is here.
     */

    ctx = ngx_palloc(r->pool, sizeof(ngx_http_airlock_llm_ctx_t));
    if (ctx == NULL) {
        return NULL;
    }

    ngx_memzero(ctx, offsetof(ngx_http_airlock_llm_ctx_t, body_buf));

    actx = &ctx->airlock;
    ngx_http_airlock_init_ctx(r, actx, &ngx_http_airlock_llm_path);

    ngx_http_airlock_cleanup_link(r->pool, &ctx->cleanup,
                                  ngx_http_airlock_llm_cleanup, ctx);

    ctx->request = r;
    ctx->provider = llcf->provider;
    ctx->log = llcf->log;
    ctx->actx = actx;
    ctx->endpoint = AL_LLM_EP_NONE;
    ctx->source = AL_LLM_SOURCE_ESTIMATED;
    ngx_str_set(&ctx->model, "");
    ngx_str_set(&ctx->alias, "");

    actx->route = &llcf->provider->route;
    actx->rconf = &llcf->provider->rconf;

    ngx_http_set_ctx(r, ctx, ngx_http_airlock_llm_module);

    return ctx;
}


static void
ngx_http_airlock_llm_cleanup(void *data)
{
    ngx_http_airlock_llm_ctx_t  *ctx = data;

    al_llm_usage_t   u;
    al_llm_source_t  source;

    /* the log phase settles; this is for a request that never got there */

    if (ctx->admitted && !ctx->settled && ctx->request != NULL) {
        ngx_http_airlock_llm_usage(ctx, &u, &source);
        ngx_http_airlock_llm_settle(ctx->request, ctx, &u,
                                    ngx_http_airlock_llm_cost(ctx, &u));
    }

    if (ctx->sse != NULL) {
        al_llm_sse_free(ctx->sse);
        ngx_http_airlock_llm_sse_put(ctx->sse);
        ctx->sse = NULL;
    }

    ctx->request = NULL;
}


/*
 * The client's key: "Authorization: Bearer k" (OpenAI SDKs), "x-api-key:
 * k" (Anthropic SDKs), "api-key: k" (the AzureOpenAI client) or
 * "Proxy-Authorization: Bearer k".  Each header at
 * most once, and two of them must carry the same key; read by
 * ngx_http_airlock_token(), which also refuses what cannot be read one
 * way: an absolute-form target, two Content-Types.
 */

static ngx_http_airlock_token_conf_t  ngx_http_airlock_llm_token_conf = {
    NGX_HTTP_AIRLOCK_TOKEN_ANY,
    AL_REASON_CLIENT_UNKNOWN,
    NULL,
    0,
    0
};


/*
 * Everything the request line and headers decide.  Returns the reason,
 * with *err the provider error to answer and *detail the text for the deny
 * log (and, except for AUTH, for the client).
 */

static al_reason_t
ngx_http_airlock_llm_decide(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, al_llm_error_t *err,
    const char **detail)
{
    ngx_str_t                      token;
    ngx_msec_t                     left;
    const char                    *why;
    al_reason_t                    reason;
    const al_llm_t                *llm;
    ngx_http_airlock_ctx_t        *actx;
    ngx_http_airlock_main_conf_t  *amcf;
    u_char                        *p;

    amcf = ngx_http_get_module_main_conf(r, ngx_http_airlock_module);
    actx = ctx->actx;
    llm = ctx->provider->llm;

    (void) ngx_http_airlock_real_peer(r->connection, &actx->peer);

    reason = ngx_http_airlock_token(r, &ngx_http_airlock_llm_token_conf,
                                    &token, detail);

    if (reason == AL_REASON_CLIENT_UNKNOWN) {
        *err = AL_LLM_ERR_AUTH;
        return reason;
    }

    why = "";
    ctx->client = ngx_http_airlock_identify(r->connection, amcf->policy,
                                            &actx->peer, &token, &why);
    actx->client = ctx->client;

    left = ngx_http_airlock_quarantined(r, actx);

    if (left) {
        p = ngx_pnalloc(r->pool, 64);
        if (p == NULL) {
            return AL_REASON_MAX;
        }

        ngx_snprintf(p, 64, "client is in quarantine for %M ms more%Z",
                     left);
        *detail = (char *) p;
        *err = AL_LLM_ERR_DENIED;
        return AL_REASON_QUARANTINED;
    }

    if (reason != AL_REASON_NONE) {
        *err = AL_LLM_ERR_INVALID;
        return reason;
    }

    if (ctx->client == NULL) {
        *detail = why;
        *err = AL_LLM_ERR_AUTH;
        return AL_REASON_CLIENT_UNKNOWN;
    }

    ctx->lc = al_llm_find_client(llm, ctx->client);

    if (ctx->lc == NULL) {
        /* logged as a named route would be: no route for this client */
        *detail = "this client may not use this provider";
        *err = AL_LLM_ERR_DENIED;
        return AL_REASON_NO_ROUTE;
    }

    reason = ngx_http_airlock_llm_route(r, ctx, detail);

    if (reason != AL_REASON_NONE) {
        *err = al_llm_error_from_route(reason, ctx->endpoint);
    }

    return reason;
}


/*
 * The route's parse buffers (path, query and URI, about 19 KB) live only
 * while al_llm_route() runs: a worker is one thread and the call is
 * synchronous, so one scratch route per process serves every call (as
 * ngx_http_airlock_scratch does for named routes); what is kept of it is
 * copied into the request's pool.  Not on the stack: a 19 KB frame would
 * put al_llm_route() and all it calls 19 KB deeper than the rest of the
 * call's functions, on stack lines nothing else touches.
 */

static al_llm_route_t  ngx_http_airlock_llm_scratch;


/* a copy of what the scratch route or the memo holds, in the request's pool */

static ngx_int_t
ngx_http_airlock_llm_keep(ngx_http_request_t *r, ngx_str_t *dst,
    const void *src, size_t len)
{
    dst->data = ngx_pnalloc(r->pool, len);
    if (dst->data == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(dst->data, src, len);
    dst->len = len;

    return NGX_OK;
}


/*
 * The raw target (r->unparsed_uri, not nginx's decoded and merged r->uri)
 * must lie under the prefix; the rest is the endpoint.
 */

static al_reason_t
ngx_http_airlock_llm_route(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, const char **detail)
{
    off_t                         clen;
    size_t                        plen, tlen;
    u_char                       *p, *target;
    unsigned                      method;
    al_reason_t                   reason;
    const al_llm_t               *llm;
    al_llm_route_t               *rt;
    ngx_http_airlock_llm_memo_t  *memo;

    llm = ctx->provider->llm;
    plen = llm->prefix.len;

    if (r->unparsed_uri.len <= plen
        || !ngx_http_airlock_same(r->unparsed_uri.data,
                                  (u_char *) llm->prefix.data, plen)
        || r->unparsed_uri.data[plen] != '/')
    {
        *detail = "the request target is not under the provider's prefix";
        return AL_REASON_NO_ROUTE;
    }

    method = ngx_http_airlock_llm_method(r);

    target = r->unparsed_uri.data + plen;
    tlen = r->unparsed_uri.len - plen;

    memo = &ctx->provider->memo;

    if (memo->lc == ctx->lc && memo->method == method
        && memo->target_len == tlen
        && ngx_memcmp(memo->target, target, tlen) == 0)
    {
        ctx->endpoint = memo->endpoint;

        if (ngx_http_airlock_llm_keep(r, &ctx->uri, memo->uri, memo->uri_len)
            != NGX_OK)
        {
            return AL_REASON_MAX;
        }

        goto framing;
    }

    rt = &ngx_http_airlock_llm_scratch;

    reason = al_llm_route(llm, ctx->lc, method, (char *) target, tlen, rt);

    if (reason != AL_REASON_NONE) {
        p = ngx_pnalloc(r->pool, AL_DETAIL_MAX);
        if (p == NULL) {
            return AL_REASON_MAX;
        }

        ngx_memcpy(p, rt->detail, AL_DETAIL_MAX);
        *detail = (char *) p;

        /* the error's shape: an id GET models/{id} does not list is 404 */
        ctx->endpoint = rt->endpoint;

        return reason;
    }

    ctx->endpoint = rt->endpoint;

    if (ngx_http_airlock_llm_keep(r, &ctx->uri, rt->uri, rt->uri_len)
        != NGX_OK)
    {
        return AL_REASON_MAX;
    }

    if (rt->model.len == 0 && rt->alias.len == 0
        && tlen <= sizeof(memo->target) && rt->uri_len <= sizeof(memo->uri))
    {
        memo->lc = ctx->lc;
        memo->method = method;
        memo->endpoint = rt->endpoint;
        memo->target_len = tlen;
        memo->uri_len = rt->uri_len;
        ngx_memcpy(memo->target, target, tlen);
        ngx_memcpy(memo->uri, rt->uri, rt->uri_len);
    }

    if (rt->model.len != 0) {
        if (ngx_http_airlock_llm_keep(r, &ctx->model, rt->model.data,
                                      rt->model.len)
            != NGX_OK)
        {
            return AL_REASON_MAX;
        }
    }

    if (rt->alias.len != 0) {
        if (ngx_http_airlock_llm_keep(r, &ctx->alias, rt->alias.data,
                                      rt->alias.len)
            != NGX_OK)
        {
            return AL_REASON_MAX;
        }
    }

framing:

    /* framing: refuse before reading what cannot be accepted */

    clen = r->headers_in.content_length_n;

    /*
     * An endpoint that takes no body: a chunked one is read until its
     * first byte or its end, as on a route that takes none (an empty one
     * is no body), and decided in ngx_http_airlock_llm_body_read().
     */

    if (!al_llm_endpoint_has_body(ctx->endpoint)) {
        if (clen > 0) {
            *detail = "this endpoint takes no request body";
            return AL_REASON_BODY;
        }

        return AL_REASON_NONE;
    }

    if (clen > (off_t) llm->body_max) {
        p = ngx_pnalloc(r->pool, AL_DETAIL_MAX);
        if (p == NULL) {
            return AL_REASON_MAX;
        }

        ngx_snprintf(p, AL_DETAIL_MAX, "request body of %O bytes is over "
                     "the limit of %uz bytes%Z", clen, llm->body_max);
        *detail = (char *) p;
        return AL_REASON_BODY_TOO_LARGE;
    }

    return AL_REASON_NONE;
}


/*
 * The body is read (or the endpoint takes none): checked, and when needed
 * rewritten, then the budget is reserved and the request allowed, or it
 * is refused.
 */

/*
 * The method's bit of AL_METHOD_*, as al_method_bit() reads the name:
 * nginx's parser set r->method from the same bytes, an exact match of
 * the name in upper case (and every change of the method, a subrequest's
 * or error_page's, sets both), so the name is compared only when r->method
 * is not one of the seven or its length is not that method's.
 */

static unsigned
ngx_http_airlock_llm_method(ngx_http_request_t *r)
{
    size_t    len, n;
    unsigned  bit;

    len = r->method_name.len;

    switch (r->method) {

    case NGX_HTTP_GET:
        bit = AL_METHOD_GET;
        n = 3;
        break;

    case NGX_HTTP_HEAD:
        bit = AL_METHOD_HEAD;
        n = 4;
        break;

    case NGX_HTTP_POST:
        bit = AL_METHOD_POST;
        n = 4;
        break;

    case NGX_HTTP_PUT:
        bit = AL_METHOD_PUT;
        n = 3;
        break;

    case NGX_HTTP_PATCH:
        bit = AL_METHOD_PATCH;
        n = 5;
        break;

    case NGX_HTTP_DELETE:
        bit = AL_METHOD_DELETE;
        n = 6;
        break;

    case NGX_HTTP_OPTIONS:
        bit = AL_METHOD_OPTIONS;
        n = 7;
        break;

    default:
        bit = 0;
        n = 0;
    }

    if (bit != 0 && len == n) {
        return bit;
    }

    return al_method_bit((char *) r->method_name.data, len);
}


static ngx_int_t
ngx_http_airlock_llm_body_read(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *actx)
{
    uint64_t                     need;
    ngx_int_t                    rc;
    const char                  *detail;
    ngx_http_airlock_llm_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_airlock_llm_module);

    /*
     * GET /models and the like: counted as requests, no tokens.  A body
     * with a byte is refused: its read still going on (its first byte
     * came: ngx_http_airlock_read_empty_body()), or a byte read.
     */

    if (!al_llm_endpoint_has_body(ctx->endpoint)
        && (r->reading_body || !ngx_http_airlock_body_empty(r)))
    {
        detail = "this endpoint takes no request body";

        return ngx_http_airlock_llm_deny(r, ctx, AL_REASON_BODY,
                                         AL_LLM_ERR_INVALID, detail, detail);
    }

    need = 0;

    if (al_llm_endpoint_has_body(ctx->endpoint)) {
        rc = ngx_http_airlock_llm_check_body(r, ctx, &need);

        if (rc != NGX_OK) {
            return rc;
        }
    }

    return ngx_http_airlock_llm_allow(r, ctx, need);
}


/* a body nginx could not read, answered in the provider's format */

static ngx_int_t
ngx_http_airlock_llm_error(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *actx, ngx_uint_t status)
{
    al_llm_error_t               err;
    ngx_http_airlock_llm_ctx_t  *ctx;

    ctx = ngx_http_airlock_llm_get_ctx(r);

    err = (status == NGX_HTTP_REQUEST_ENTITY_TOO_LARGE)
          ? AL_LLM_ERR_TOO_LARGE : AL_LLM_ERR_INVALID;

    return ngx_http_airlock_llm_send_error(r, ctx, err,
                                           err == AL_LLM_ERR_TOO_LARGE
                                           ? NULL
                                           : "the request body could not "
                                             "be read");
}


/*
 * Returns NGX_OK with *need the tokens to reserve, NGX_DONE when the
 * request was refused (and answered), or a status.
 */

static ngx_int_t
ngx_http_airlock_llm_check_body(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, uint64_t *need)
{
    al_str_t                  alias;
    ngx_int_t                 rc;
    al_reason_t               reason;
    al_llm_req_t              req;
    const al_llm_t           *llm;
    ngx_http_airlock_body_t   body;

    llm = ctx->provider->llm;

    rc = ngx_http_airlock_body(r, llm->body_max, &body);

    if (rc == NGX_ERROR) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (rc == NGX_DECLINED) {
        return ngx_http_airlock_llm_deny(r, ctx, AL_REASON_BODY_TOO_LARGE,
                                         AL_LLM_ERR_TOO_LARGE,
                                         "request body is over the limit",
                                         NULL);
    }

    rc = ngx_http_airlock_llm_map_model(r, ctx, &body);

    if (rc != NGX_OK) {
        return rc;
    }

    /* a rewrite is spliced straight into the request pool: it is sent */

    alias.data = (char *) ctx->alias.data;
    alias.len = ctx->alias.len;

    reason = al_llm_request_with(llm, ctx->lc, ctx->endpoint, &alias,
                                 (char *) body.ctype.data, body.ctype.len,
                                 body.data, body.len,
                                 ngx_http_airlock_llm_body_alloc, r->pool,
                                 &req);

    if (reason != AL_REASON_NONE) {
        rc = ngx_http_airlock_llm_deny(r, ctx, reason,
                                       al_llm_error_from_reason(reason, NULL),
                                       req.detail, req.detail);
        al_llm_request_free(&req);
        return rc;
    }

    if (ctx->endpoint == AL_LLM_EP_RESPONSES) {
        rc = ngx_http_airlock_llm_state_check(r, ctx, &req, body.data,
                                              req.body != NULL
                                              ? (u_char *) req.body
                                              : body.data,
                                              req.body != NULL
                                              ? req.body_len : body.len);
        if (rc != NGX_OK) {
            al_llm_request_free(&req);
            return rc;
        }
    }

    ctx->stream = req.stream;
    ctx->hide_usage = req.hide_usage;
    ctx->max_output = req.max_output;
    ctx->prompt_estimate = req.prompt_estimate;
    ctx->prompt_text = req.prompt_text;
    ctx->cache_control = req.cache_control;

    ctx->model.data = ngx_pnalloc(r->pool, req.model_len);
    if (ctx->model.data == NULL) {
        al_llm_request_free(&req);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_memcpy(ctx->model.data, req.model, req.model_len);
    ctx->model.len = req.model_len;

    *need = al_llm_request_need(&req);

    if (req.body != NULL) {
        /* the rewrite is what is sent */

        if (!ctx->body_own) {
            ctx->body_own = 1;
            ngx_memzero(&ctx->body_buf, sizeof(ngx_buf_t));
            rc = ngx_http_airlock_body_put(r, &ctx->body_buf, &ctx->body_cl,
                                           (u_char *) req.body, req.body_len);

        } else {
            rc = ngx_http_airlock_body_set(r, (u_char *) req.body,
                                           req.body_len);
        }

        al_llm_request_free(&req);

        return (rc == NGX_OK) ? NGX_OK : NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    al_llm_request_free(&req);

    /* the proxy module writes Content-Length from this */
    r->headers_in.content_length_n = body.len;

    return NGX_OK;
}


/*
 * A Responses request may continue a stored response only of its own
 * client: the id it names as "previous_response_id" must be bound to the
 * client in airlock_llm_zone (ngx_http_airlock_llm_state_bind(), as the
 * answer that made it passed), and so must the "id" of every element of
 * its "input" that has one (an item_reference, or an item the provider
 * reads from storage by its id) and the "approval_request_id" of an
 * mcp_approval_response (al_llm_state.c).  Unknown ids are refused too:
 * the gateway cannot tell whose they are.  The client is told the same
 * for an id of another client's as for one of none, so it learns nothing
 * of others' ids.  The body scan of al_llm_request() kept the ids
 * (req->state, in body, the body it read: the same bytes are in sent,
 * the body sent), all looked up under one lock; a body it kept them not
 * of (more than AL_LLM_STATE_REFS ids, or read by its recursive scan) is
 * read again, sent, one id a lookup.  Returns NGX_OK, or NGX_DONE when
 * refused (and answered).
 */

static ngx_int_t
ngx_http_airlock_llm_state_check(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, const al_llm_req_t *req,
    const u_char *body, const u_char *sent, size_t len)
{
    ngx_int_t   owner;
    ngx_uint_t  first;

    if (!req->state_read) {
        return ngx_http_airlock_llm_state_read(r, ctx, sent, len);
    }

    owner = ngx_http_airlock_llm_state_owners(r, ctx, body, req->state,
                                              req->nstate, &first);

    if (owner == NGX_OK) {
        return NGX_OK;
    }

    return ngx_http_airlock_llm_state_deny(r, ctx, owner,
                                           first < req->nstate
                                           ? req->state[first].index
                                           : AL_LLM_STATE_PREV);
}


/* the body read again for the ids it names, each looked up on its own */

static ngx_int_t
ngx_http_airlock_llm_state_read(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, const u_char *body, size_t len)
{
    int                  rc;
    ngx_int_t            owner;
    al_llm_state_req_t   req;
    al_llm_state_ref_t   ref;

    if (al_llm_state_request(body, len, &req) != 0) {
        goto unread;
    }

    if (req.named) {
        owner = (req.prev.len == 0) ? NGX_DONE
                                    : ngx_http_airlock_llm_state_owner(r,
                                          ctx, (u_char *) req.prev.id,
                                          req.prev.len);

        if (owner != NGX_OK) {
            return ngx_http_airlock_llm_state_deny(r, ctx, owner,
                                                   AL_LLM_STATE_PREV);
        }
    }

    for ( ;; ) {
        rc = al_llm_state_item(&req, body, &ref);

        if (rc == 0) {
            return NGX_OK;
        }

        if (rc < 0) {
            goto unread;
        }

        owner = (ref.len == 0) ? NGX_DONE
                               : ngx_http_airlock_llm_state_owner(r, ctx,
                                                    (u_char *) ref.id,
                                                    ref.len);

        if (owner != NGX_OK) {
            return ngx_http_airlock_llm_state_deny(r, ctx, owner,
                                                   req.index);
        }
    }

unread:

    return ngx_http_airlock_llm_deny(r, ctx, AL_REASON_BODY,
                                     AL_LLM_ERR_INVALID,
                                     "the body could not be read for the "
                                     "stored responses and items it names",
                                     "the body could not be read");
}


/*
 * The refusal of an id of another client's (owner NGX_DECLINED) or of
 * none: the previous response's (index AL_LLM_STATE_PREV), or of the
 * element index of "input"
 */

static ngx_int_t
ngx_http_airlock_llm_state_deny(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_int_t owner, size_t index)
{
    u_char      *p;
    const char  *whose;
    u_char       detail[AL_DETAIL_MAX], message[AL_DETAIL_MAX];

    if (index == AL_LLM_STATE_PREV) {
        whose = (owner == NGX_DECLINED)
                ? "previous_response_id names a response another "
                  "client's call made"
                : "previous_response_id names a response the gateway "
                  "has no binding for (never seen, dropped from a full "
                  "zone, or made before it kept them)";

        return ngx_http_airlock_llm_deny(r, ctx, AL_REASON_NO_ROUTE,
                                         AL_LLM_ERR_DENIED, whose,
                                         "previous_response_id names "
                                         "no response this client made "
                                         "through the gateway");
    }

    whose = (owner == NGX_DECLINED)
            ? "an item another client's call made"
            : "an item the gateway has no binding for (never seen, "
              "dropped from a full zone, or made before it kept them)";

    p = ngx_snprintf(detail, sizeof(detail) - 1,
                     "input[%uz] names by its id %s", index, whose);
    *p = '\0';

    p = ngx_snprintf(message, sizeof(message) - 1,
                     "input[%uz] names by its id no item of a response "
                     "this client made through the gateway", index);
    *p = '\0';

    return ngx_http_airlock_llm_deny(r, ctx, AL_REASON_NO_ROUTE,
                                     AL_LLM_ERR_DENIED, (char *) detail,
                                     (char *) message);
}


/* al_llm_request_with()'s allocator: the request pool */

void *
ngx_http_airlock_llm_body_alloc(void *pool, size_t size)
{
    return ngx_pnalloc(pool, size);
}


/*
 * Before the body is checked: an alias in "model" becomes the model it
 * stands for, and on Azure deployment paths "model" becomes the
 * deployment (al_llm_model_map()).  The result replaces the body, so the
 * check reads what is sent.
 */

static ngx_int_t
ngx_http_airlock_llm_map_model(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_http_airlock_body_t *body)
{
    int              rc;
    u_char          *data;
    al_str_t         dep, *force;
    al_llm_map_t     m;
    const al_llm_t  *llm;

    llm = ctx->provider->llm;

    force = NULL;

    if (llm->kind == AL_LLM_AZURE && ctx->model.len) {
        /* a deployment path: the route decided the model */
        dep.data = (char *) ctx->model.data;
        dep.len = ctx->model.len;
        force = &dep;

    } else if (llm->naliases == 0) {
        return NGX_OK;
    }

    rc = al_llm_model_map(llm, force, body->data, body->len, &m);

    if (rc == 1) {
        return ngx_http_airlock_llm_deny(r, ctx, AL_REASON_BODY,
                                         AL_LLM_ERR_INVALID,
                                         AL_LLM_MAP_ESCAPED,
                                         AL_LLM_MAP_ESCAPED);
    }

    if (rc != 0) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (m.body == NULL) {
        return NGX_OK;
    }

    if (m.alias_len) {
        ctx->alias.data = ngx_pnalloc(r->pool, m.alias_len);
        if (ctx->alias.data == NULL) {
            free(m.body);
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        ngx_memcpy(ctx->alias.data, m.alias, m.alias_len);
        ctx->alias.len = m.alias_len;
    }

    data = ngx_pnalloc(r->pool, m.body_len);
    if (data == NULL) {
        free(m.body);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_memcpy(data, m.body, m.body_len);
    free(m.body);

    body->data = data;
    body->len = m.body_len;

    if (m.body_len > llm->body_max) {
        return ngx_http_airlock_llm_deny(r, ctx, AL_REASON_BODY_TOO_LARGE,
                                         AL_LLM_ERR_TOO_LARGE,
                                         "request body is over the limit",
                                         NULL);
    }

    if (ngx_http_airlock_body_set(r, data, m.body_len) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return NGX_OK;
}


/*
 * Reserves the budget, rewrites the headers and lets the request go on.
 * Returns NGX_DECLINED, NGX_DONE when refused, or a status.
 */

static ngx_int_t
ngx_http_airlock_llm_allow(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, uint64_t need)
{
    ngx_int_t                         rc;
    al_llm_page_t                     page;
    ngx_http_airlock_ctx_t           *actx;
    ngx_http_airlock_headers_t        hs;
    ngx_http_airlock_llm_provider_t  *prov;

    if (ctx->endpoint == AL_LLM_EP_MODELS) {
        rc = ngx_http_airlock_llm_page(r, ctx, &page);

        if (rc != NGX_OK) {
            return rc;
        }
    }

    rc = ngx_http_airlock_llm_admit(r, ctx, need);

    if (rc != NGX_OK) {
        return rc;
    }

    prov = ctx->provider;

    ngx_http_airlock_llm_headers_of(r, prov, &hs);

    actx = ctx->actx;

    if (ngx_http_airlock_allowed(r, actx, &hs) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->allowed = 1;
    actx->uri = ctx->uri;

    if (ctx->endpoint == AL_LLM_EP_MODELS
        || ctx->endpoint == AL_LLM_EP_MODEL)
    {
        rc = ngx_http_airlock_llm_models(r, ctx, &page);

        ngx_http_finalize_request(r, rc);

        return NGX_DONE;
    }

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "airlock: client \"%s\" llm \"%s\" model \"%V\" to "
                   "\"%V\"", ctx->client->name.data,
                   ctx->provider->llm->name.data, &ctx->model, &ctx->uri);

    return NGX_DECLINED;
}


/*
 * Anthropic's page of GET /models from the query al_llm_route() let
 * through: limit, after_id, before_id.  A limit that is not a number
 * from 1 to AL_LLM_PAGE_MAX is refused, as Anthropic refuses it.
 * Returns NGX_OK, NGX_DONE when refused, or a status.
 */

static ngx_int_t
ngx_http_airlock_llm_page(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, al_llm_page_t *page)
{
    ngx_int_t  n;
    ngx_str_t  v;

    ngx_memzero(page, sizeof(al_llm_page_t));

    if (ctx->provider->llm->kind != AL_LLM_ANTHROPIC || r->args.len == 0) {
        return NGX_OK;
    }

    if (ngx_http_arg(r, (u_char *) "limit", 5, &v) == NGX_OK) {
        n = ngx_atoi(v.data, v.len);

        if (n < 1 || n > AL_LLM_PAGE_MAX) {
            return ngx_http_airlock_llm_deny(r, ctx, AL_REASON_QUERY,
                                   AL_LLM_ERR_INVALID,
                                   "limit must be a number from 1 to 1000",
                                   "limit must be a number from 1 to 1000");
        }

        page->limit = (uint64_t) n;
    }

    if (ngx_http_airlock_llm_page_id(r, "after_id", 8, &page->after_id)
        != NGX_OK
        || ngx_http_airlock_llm_page_id(r, "before_id", 9, &page->before_id)
           != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return NGX_OK;
}


/* a cursor of the query, decoded into the request's pool */

static ngx_int_t
ngx_http_airlock_llm_page_id(ngx_http_request_t *r, char *name, size_t len,
    al_str_t *id)
{
    u_char     *dst, *src;
    ngx_str_t   v;

    id->data = "";
    id->len = 0;

    if (ngx_http_arg(r, (u_char *) name, len, &v) != NGX_OK || v.len == 0) {
        return NGX_OK;
    }

    dst = ngx_pnalloc(r->pool, v.len);
    if (dst == NULL) {
        return NGX_ERROR;
    }

    id->data = (char *) dst;
    src = v.data;

    ngx_unescape_uri(&dst, &src, v.len, 0);

    id->len = dst - (u_char *) id->data;

    return NGX_OK;
}


/*
 * GET /models: the models this client may use, from the policy, in the
 * provider's format; the provider is not asked.  The answer is a few
 * hundred bytes a model, in the request's pool.  GET /models/{id}: the
 * one model of that list (al_llm_route() refused an id not on it).
 */

static ngx_int_t
ngx_http_airlock_llm_models(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, al_llm_page_t *page)
{
    size_t           len;
    al_str_t         id;
    ngx_buf_t       *b;
    const al_llm_t  *llm;

    llm = ctx->provider->llm;
    id.data = (char *) ctx->model.data;
    id.len = ctx->model.len;

    if (ctx->endpoint == AL_LLM_EP_MODEL) {
        len = al_llm_model_get(llm, &id, NULL, 0);

    } else {
        len = al_llm_model_list(llm, ctx->lc, page, NULL, 0);
    }

    b = ngx_create_temp_buf(r->pool, len + 2);
    if (b == NULL) {
        return NGX_ERROR;
    }

    if (ctx->endpoint == AL_LLM_EP_MODEL) {
        (void) al_llm_model_get(llm, &id, (char *) b->pos, len + 1);

    } else {
        (void) al_llm_model_list(llm, ctx->lc, page, (char *) b->pos,
                                 len + 1);
    }

    b->last = b->pos + len;
    *b->last++ = LF;

    if (ngx_http_airlock_llm_request_id_header(r) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_airlock_send_json(r, NGX_HTTP_OK, b);
}


/* the client headers kept and the key added for a call to prov */

void
ngx_http_airlock_llm_headers_of(ngx_http_request_t *r,
    ngx_http_airlock_llm_provider_t *prov, ngx_http_airlock_headers_t *hs)
{
    ngx_http_airlock_llm_main_conf_t  *lmcf;

    lmcf = ngx_http_get_module_main_conf(r, ngx_http_airlock_llm_module);

    hs->keep = ngx_http_airlock_llm_headers;
    hs->keep_lens = NGX_HTTP_AIRLOCK_HEADER_LENS(NGX_HTTP_AIRLOCK_LLM_HEADERS);
    hs->keep_hh = lmcf->keep_hh;
    hs->keep_at = lmcf->keep_at;
    hs->cookies = 0;
    hs->inject = &prov->key;
    hs->ninject = 1;
    hs->defaults = &prov->version;
    hs->ndefaults = (prov->llm->kind == AL_LLM_ANTHROPIC) ? 1 : 0;
}


/*
 * Every limit of the client at once (ngx_http_airlock_llm_reserve()):
 * requests in flight, requests per minute, the tokens and the worst-case
 * cost of the request.  Returns NGX_OK, NGX_DONE when refused, or a
 * status.
 */

static ngx_int_t
ngx_http_airlock_llm_admit(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, uint64_t need)
{
    uint64_t                fallback;
    ngx_int_t               rc;
    al_llm_amount_t         amount;
    const al_llm_client_t  *lc;
    char                    msg[AL_DETAIL_MAX];

    lc = ctx->lc;

    ctx->price = al_llm_price(ctx->provider->llm, (char *) ctx->model.data,
                              ctx->model.len);

    if (al_llm_client_priced(lc)
        && al_llm_endpoint_has_body(ctx->endpoint)
        && ngx_http_airlock_llm_beta_priced(r, ctx))
    {
        return ngx_http_airlock_llm_deny(r, ctx, AL_REASON_REQUEST,
                               AL_LLM_ERR_INVALID,
                               AL_LLM_BETA_PRICED, AL_LLM_BETA_PRICED);
    }

    if (!al_llm_client_limited(lc)) {
        return NGX_OK;
    }

    amount.tokens = need;
    amount.cost = 0;

    if (al_llm_endpoint_has_body(ctx->endpoint)) {
        if (ctx->price == NULL && al_llm_client_priced(lc)) {
            /* the policy check prevents it; an unpriced model is free */
            return ngx_http_airlock_llm_deny(r, ctx, AL_REASON_MODEL,
                                   AL_LLM_ERR_MODEL,
                                   "this model has no price, and this "
                                   "client has a dollar budget",
                                   "this model has no price, and this "
                                   "client has a dollar budget");
        }

        amount.cost = al_llm_cost_need(ctx->price, ctx->cache_control,
                                       ctx->prompt_estimate,
                                       ctx->max_output);

        if (ctx->provider->llm->fallback != NULL
            && al_llm_client_priced(lc))
        {
            /* the call may be served, and charged, by the fallback */
            fallback = ngx_http_airlock_llm_fallback_need(ctx);

            if (fallback > amount.cost) {
                amount.cost = fallback;
            }
        }
    }

    rc = ngx_http_airlock_llm_reserve(r, ctx, &amount);

    if (rc == NGX_ERROR) {
        /* a full zone: refused as budgets are, not counted (an alert) */
        return ngx_http_airlock_llm_deny(r, ctx, AL_REASON_BUDGET,
                               AL_LLM_ERR_UNAVAILABLE,
                               "no room for this client's budget in "
                               "airlock_llm_zone", NULL);
    }

    if (rc == NGX_DECLINED) {
        (void) al_llm_quota_message(&ctx->quota, need, msg, sizeof(msg));

        return ngx_http_airlock_llm_deny(r, ctx, AL_REASON_BUDGET,
                               al_llm_error_from_reason(AL_REASON_BUDGET,
                                                        &ctx->quota),
                               msg, msg);
    }

    return NGX_OK;
}


/*
 * A refusal: logged and counted by ngx_http_airlock_module (budget
 * refusals are logged, not counted: an agent that spends its budget is
 * not attacking anything), answered in the provider's format, and marked
 * "Airlock-Denial: REASON" as the named routes' are.
 */

static ngx_int_t
ngx_http_airlock_llm_deny(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, al_reason_t reason, al_llm_error_t err,
    const char *detail, const char *message)
{
    ngx_int_t  rc;

    ctx->allowed = 0;

    ngx_http_airlock_refuse(r, ctx->actx, reason, detail,
                            reason != AL_REASON_BUDGET);

    if (ngx_http_airlock_denial_set(r, reason) != NGX_OK) {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return NGX_DONE;
    }

    rc = ngx_http_airlock_llm_send_error(r, ctx, err, message);

    ngx_http_finalize_request(r, rc);

    return NGX_DONE;
}


static ngx_int_t
ngx_http_airlock_llm_send_error(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, al_llm_error_t err,
    const char *message)
{
    size_t            len;
    ngx_buf_t        *b;
    ngx_str_t         id;
    ngx_table_elt_t  *h;
    char              rid[65];

    rid[0] = '\0';

    if (ngx_http_airlock_request_id(r, &id) == NGX_OK) {
        len = ngx_min(id.len, sizeof(rid) - 1);
        ngx_memcpy(rid, id.data, len);
        rid[len] = '\0';
    }

    b = ngx_create_temp_buf(r->pool, AL_LLM_ERROR_MAX + 2);
    if (b == NULL) {
        return NGX_ERROR;
    }

    if (ngx_http_airlock_llm_request_id_header(r) != NGX_OK) {
        return NGX_ERROR;
    }

    len = al_llm_error_body(ctx->provider->llm->kind, err, message, rid,
                            (char *) b->pos, AL_LLM_ERROR_MAX);
    len = ngx_min(len, AL_LLM_ERROR_MAX - 1);

    b->last = b->pos + len;
    *b->last++ = LF;

    if ((err == AL_LLM_ERR_RATE_LIMIT || err == AL_LLM_ERR_QUOTA
         || err == AL_LLM_ERR_REQUESTS)
        && ngx_http_airlock_llm_limit_headers(r, ctx) != NGX_OK)
    {
        return NGX_ERROR;
    }

    if ((err == AL_LLM_ERR_RATE_LIMIT || err == AL_LLM_ERR_QUOTA
         || err == AL_LLM_ERR_REQUESTS)
        && ctx->quota.retry_after)
    {
        h = ngx_list_push(&r->headers_out.headers);
        if (h == NULL) {
            return NGX_ERROR;
        }

        h->value.data = ngx_pnalloc(r->pool, NGX_INT_T_LEN);
        if (h->value.data == NULL) {
            return NGX_ERROR;
        }

        h->hash = 1;
        ngx_str_set(&h->key, "Retry-After");
        h->value.len = ngx_sprintf(h->value.data, "%ui",
                                   (ngx_uint_t) ctx->quota.retry_after)
                       - h->value.data;
    }

    return ngx_http_airlock_send_json(r, al_llm_error_status(err), b);
}


/*
 * The log phase: settle the reservation with the real usage, write the
 * usage line, count.  It runs once per request, after internal redirects
 * too (the context is found again).
 */

static ngx_int_t
ngx_http_airlock_llm_log_handler(ngx_http_request_t *r)
{
    ngx_http_airlock_llm_ctx_t  *ctx;

    ctx = ngx_http_airlock_llm_get_ctx(r);

    if (ctx == NULL || ctx->accounted) {
        return NGX_OK;
    }

    ngx_http_airlock_llm_account(r, ctx);

    return NGX_OK;
}


static void
ngx_http_airlock_llm_account(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx)
{
    al_llm_sse_block_t  blk;

    ctx->accounted = 1;
    ctx->status = ngx_http_airlock_llm_status(r);

    if (ctx->allowed) {
        if (r->upstream != NULL && !r->upstream->header_sent) {
            /* the provider's error, if an error_page took it */
            ngx_http_airlock_llm_intercepted(r, ctx);
        }

        if (ctx->sse != NULL && !ctx->ended) {
            /* cut short: what was seen is what there is */
            (void) al_llm_sse_finish(ctx->sse, &blk);
        }

        ngx_http_airlock_llm_usage(ctx, &ctx->usage, &ctx->source);
        ctx->cost = ngx_http_airlock_llm_cost(ctx, &ctx->usage);
    }

    if (ctx->allowed && ctx->log != NULL) {
        ngx_http_airlock_llm_write(r, ctx);
    }

    /*
     * Every admitted request gives back its place, allowed or not, as the
     * call is counted in its series: one hold of the zone's lock.
     */

    ngx_http_airlock_llm_close(r, ctx);
}


/*
 * The usage as known now.  Streams: the parser's result (estimated when
 * the stream did not end with its usage).  JSON: the response's "usage".
 * Without one (or with one that counts no token), a 2xx answer is
 * charged what was reserved for it (the prompt estimate and the output
 * cap), and so is a call sent to the provider that nginx ended before
 * its answer began; a 2xx answer nginx ended (499) before a byte of it
 * was sent is charged as an answer cut short.  A provider's error is
 * charged the usage its JSON body carries (a router that bills a call
 * and then fails it), or its events when it is an event stream, else
 * nothing; other answers nginx made up count
 * nothing, a stream refused after its header was seen (the scrubber's
 * 502) included.  A call that fell back after its
 * first provider was sent it and never answered has that attempt's
 * charge added (ngx_http_airlock_llm_fallback()).
 */

void
ngx_http_airlock_llm_usage(ngx_http_airlock_llm_ctx_t *ctx,
    al_llm_usage_t *u, al_llm_source_t *source)
{
    ngx_uint_t  status;

    ngx_memzero(u, sizeof(al_llm_usage_t));
    *source = AL_LLM_SOURCE_ESTIMATED;

    if (!ctx->allowed) {
        return;
    }

    status = (ctx->request != NULL) ? ngx_http_airlock_llm_status(ctx->request)
                                    : ctx->status;

    /*
     * The provider answered 2xx and the client went away (or timed out)
     * before a byte of it was sent: nginx holds a header until the first
     * bytes of the body, and then says 499 (408).  Or the gateway would
     * not pass the answer on: the key scrubber cannot read an encoded
     * one, and refuses it with 502.  Or the provider failed while the
     * header was held (ngx_http_airlock_llm_finalize()): 502, 504.  In
     * each case the provider has the call, and bills it: it is charged
     * as the answer cut short it is.
     */

    if (status >= NGX_HTTP_SPECIAL_RESPONSE && ctx->answered) {
        status = NGX_HTTP_OK;
    }

    if (status >= NGX_HTTP_SPECIAL_RESPONSE) {

        /*
         * nginx's own answer to a call the provider was sent and never
         * answered (the client gone: 499, a timeout: 504, the connection
         * lost: 502): the provider has the prompt and may bill all of
         * the output, so the call is charged what was reserved for it.
         */

        if (ctx->request != NULL && ctx->request->upstream != NULL
            && ctx->request->upstream != ctx->charged
            && ctx->request->upstream->request_sent
            && ctx->request->upstream->headers_in.status_n == 0
            && al_llm_endpoint_has_body(ctx->endpoint))
        {
            ngx_http_airlock_llm_reserved(ctx, u);

            if (ngx_http_airlock_llm_hung_up(ctx)
                || ngx_http_airlock_llm_timed_out(ctx->request->upstream))
            {
                /* the client's doing, or may be: its prompt at its bound */
                ngx_http_airlock_llm_bound(ctx, u);
            }

            u->total_tokens = u->prompt_tokens + u->completion_tokens;

        } else if (ctx->resp != NULL && ctx->header_seen
                   && al_llm_resp_usage(ctx->resp, u, NULL, 0) == 0
                   && u->total_tokens != 0)
        {
            /*
             * The provider's error says what it used: a router that
             * bills a call and then fails it (OpenRouter) has charged
             * the operator that much.
             */

            *source = AL_LLM_SOURCE_RESPONSE;

        } else if (ctx->sse != NULL && ctx->header_seen
                   && (ctx->sse->usage.prompt_tokens
                       | ctx->sse->usage.completion_tokens
                       | ctx->sse->usage.total_tokens)
                      != 0)
        {
            /* ... or its events do, an error sent as an event stream */

            *u = ctx->sse->usage;

            if (u->total_tokens == 0) {
                u->total_tokens = u->prompt_tokens + u->completion_tokens;
            }

            *source = AL_LLM_SOURCE_STREAM;

        } else {
            ngx_memzero(u, sizeof(al_llm_usage_t));
        }

        goto first;
    }

    if (ctx->sse != NULL) {
        *source = al_llm_sse_result(ctx->sse, 0, ctx->max_output, u);

        if (*source == AL_LLM_SOURCE_ESTIMATED && u->prompt_tokens == 0) {

            /*
             * No count of the prompt came: the stream was cut (before
             * Anthropic's message_start, or the final usage of the
             * others), unread, or ended without the usage asked for.
             * The client can bring each about (it hangs up after the
             * text; it streams where the usage is not asked for, or not
             * sent).
             */

            ngx_http_airlock_llm_bound(ctx, u);
            u->total_tokens = (u->completion_tokens
                               > UINT64_MAX - u->prompt_tokens)
                              ? UINT64_MAX
                              : u->prompt_tokens + u->completion_tokens;
        }

    } else if (ctx->resp != NULL
               && al_llm_resp_usage(ctx->resp, u, NULL, 0) == 0
               && u->total_tokens != 0)
    {
        *source = AL_LLM_SOURCE_RESPONSE;

    } else {
        /*
         * No usage, or one that counts no token (decimals, strings, names
         * of another API): a call with a prompt used some, so it is no
         * usage.  Whatever part of it was read goes.
         */

        ngx_memzero(u, sizeof(al_llm_usage_t));

        if (ctx->header_seen && status < 300
            && al_llm_endpoint_has_body(ctx->endpoint))
        {
            ngx_http_airlock_llm_reserved(ctx, u);

            if (ngx_http_airlock_llm_hung_up(ctx)) {
                /*
                 * the client hung up before the usage was read, which a
                 * provider's answer without usage is not
                 */
                ngx_http_airlock_llm_bound(ctx, u);
            }
        }
    }

    if (u->total_tokens == 0) {
        u->total_tokens = u->prompt_tokens + u->completion_tokens;
    }

first:

    /* earlier attempts that were sent the call and never answered */

    if (ctx->first_tokens) {
        u->total_tokens = (u->total_tokens > UINT64_MAX - ctx->first_tokens)
                          ? UINT64_MAX : u->total_tokens + ctx->first_tokens;
    }
}


/*
 * What a call with usage u costs: at its price, plus, when it was sent
 * again (a fallback, an error_page) after an attempt that was sent and
 * never answered, that attempt's charge (ctx->first_tokens is in
 * u->total_tokens already).
 */

uint64_t
ngx_http_airlock_llm_cost(const ngx_http_airlock_llm_ctx_t *ctx,
    const al_llm_usage_t *u)
{
    uint64_t  cost;

    cost = al_llm_cost(ctx->price, u);

    return (cost > UINT64_MAX - ctx->first_cost) ? UINT64_MAX
                                                 : cost + ctx->first_cost;
}


/*
 * An anthropic-beta header that asks for a beta billed above the
 * policy's prices (al_llm_beta_priced()), for a client with a dollar
 * budget: its calls would spend past the budget at the prices counted.
 * The 1M-token context window is counted when the model has
 * long_context prices (its long prompts are charged them), and so has
 * the fallback's model if the call may fall back.  Read on
 * every kind of entry: the header is kept on all of them, and a router
 * behind an openai-compatible one (LiteLLM's proxy) passes it on to
 * Anthropic.
 */

static ngx_uint_t
ngx_http_airlock_llm_beta_priced(ngx_http_request_t *r,
    const ngx_http_airlock_llm_ctx_t *ctx)
{
    int                    beta;
    ngx_uint_t             i, can;
    ngx_list_part_t       *part;
    ngx_table_elt_t       *h;
    const al_llm_price_t  *fallback;

    beta = 0;

    part = &r->headers_in.headers.part;
    h = part->elts;

    for (i = 0; /* void */; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].key.len == sizeof("anthropic-beta") - 1
            && ngx_strncasecmp(h[i].key.data, (u_char *) "anthropic-beta",
                               sizeof("anthropic-beta") - 1)
               == 0)
        {
            beta |= al_llm_beta_priced((char *) h[i].value.data,
                                       h[i].value.len);
        }
    }

    if (beta & AL_LLM_BETA_OTHER) {
        return 1;
    }

    if (!(beta & AL_LLM_BETA_LONG)) {
        return 0;
    }

    if (ctx->price == NULL || ctx->price->long_context == NULL) {
        return 1;
    }

    fallback = ngx_http_airlock_llm_fallback_price(ctx, &can);

    return can && (fallback == NULL || fallback->long_context == NULL);
}


/*
 * What was reserved, as usage: the prompt estimate and the output cap,
 * the prompt priced as the reservation priced it.
 */

void
ngx_http_airlock_llm_reserved(const ngx_http_airlock_llm_ctx_t *ctx,
    al_llm_usage_t *u)
{
    u->prompt_tokens = ctx->prompt_estimate;
    u->completion_tokens = ctx->max_output;

    al_llm_cost_guess(ctx->price, ctx->cache_control, u);
}


/*
 * A prompt no count came for, where the client could have kept the
 * count from coming, is charged its bound (al_llm_prompt_bound()), not
 * its estimate: a token-dense prompt (digits, base64, code, other
 * scripts) is billed up to a token a byte, and a client could otherwise
 * have its input charged up to four times less than the provider bills.
 * Priced as the reservation priced the estimate (al_llm_cost_guess()).
 * u->total_tokens is the caller's.
 */

static void
ngx_http_airlock_llm_bound(const ngx_http_airlock_llm_ctx_t *ctx,
    al_llm_usage_t *u)
{
    u->prompt_tokens = al_llm_prompt_bound(ctx->prompt_estimate,
                                           ctx->prompt_text);
    u->cache_write_tokens = 0;
    u->cache_write_1h_tokens = 0;

    al_llm_cost_guess(ctx->price, ctx->cache_control, u);
}


/*
 * The client went away before the call's answer was all sent: nginx
 * says 499 (408 for a client too slow to read), or the connection
 * failed while a JSON answer was being sent (its line then says 200).
 */

static ngx_uint_t
ngx_http_airlock_llm_hung_up(const ngx_http_airlock_llm_ctx_t *ctx)
{
    ngx_uint_t  status;

    if (ctx->request == NULL) {
        status = ctx->status;

    } else if (ctx->request->connection->error) {
        return 1;

    } else {
        status = ngx_http_airlock_llm_status(ctx->request);
    }

    return status == NGX_HTTP_CLIENT_CLOSED_REQUEST
           || status == NGX_HTTP_REQUEST_TIME_OUT;
}


/*
 * The provider was sent all of the call and had not begun its answer
 * when proxy_read_timeout ran out: nginx's 504.  The client can bring
 * that about (a long answer, not streamed, under a large output cap),
 * and the provider bills what it generated: its prompt is charged at
 * its bound, as a hang-up's is.  A call not sent whole (a connect or
 * send timeout) the provider cannot have run.
 */

static ngx_uint_t
ngx_http_airlock_llm_timed_out(ngx_http_upstream_t *u)
{
    return u->request_body_sent
           && u->headers_in.status_n == 0
           && u->state != NULL
           && u->state->status == NGX_HTTP_GATEWAY_TIME_OUT;
}


/*
 * An earlier attempt's usage added to the call's charge (first_tokens,
 * first_cost: the answer that follows does not replace it), at the price
 * of the entry it was sent to; its tokens, for the log
 */

static uint64_t
ngx_http_airlock_llm_charge_attempt(ngx_http_airlock_llm_ctx_t *ctx,
    const al_llm_usage_t *usage)
{
    uint64_t  tokens, cost;

    tokens = usage->total_tokens;

    if (tokens == 0) {
        tokens = usage->prompt_tokens + usage->completion_tokens;

        if (tokens < usage->prompt_tokens) {
            tokens = UINT64_MAX;
        }
    }

    cost = al_llm_cost(ctx->price, usage);

    ctx->first_tokens = (ctx->first_tokens > UINT64_MAX - tokens)
                        ? UINT64_MAX : ctx->first_tokens + tokens;
    ctx->first_cost = (ctx->first_cost > UINT64_MAX - cost)
                      ? UINT64_MAX : ctx->first_cost + cost;

    return tokens;
}


/*
 * A decided call is about to be sent again: an error_page (or a named
 * location) led it to a location that forwards it, the fallback's
 * included.  When the attempt before was sent and never answered (a
 * timeout, the connection lost), that provider has the prompt and may
 * bill all of the output, as a call nginx ends so is charged without a
 * second attempt (ngx_http_airlock_llm_usage()): the next answer does not
 * replace that.  The call is also charged that attempt's reservation, at
 * the price it was reserved at, once per attempt; its prompt at its
 * bound when it timed out (ngx_http_airlock_llm_timed_out()).
 *
 * An answer that reached the filters (a 2xx that failed before any of it
 * reached the client, ngx_http_airlock_llm_finalize()) ends the call
 * there: the provider answered it and may bill it, and the filters read
 * one answer a call.  The fallback does not send it again, and nor does
 * any other location: the client gets the failure.  Returns NGX_OK, or
 * the status to answer with.
 */

ngx_int_t
ngx_http_airlock_llm_resend(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx)
{
    uint64_t              tokens;
    al_llm_usage_t        first;
    ngx_http_upstream_t  *u;

    if (ctx->allowed && ctx->header_seen) {
        ngx_http_airlock_log_error(NGX_LOG_ERR, r->connection->log, 0,
                                   "airlock: llm \"%s\" answered %ui and was "
                                   "not sent again",
                                   (ctx->served != NULL)
                                   ? ctx->served->llm->name.data
                                   : ctx->provider->llm->name.data,
                                   ctx->status);

        return ctx->failed ? (ngx_int_t) ctx->failed : NGX_HTTP_BAD_GATEWAY;
    }

    u = r->upstream;

    if (u != NULL && u->headers_in.status_n != 0) {
        /* it answered: an error nginx intercepted, its usage */
        ngx_http_airlock_llm_intercepted(r, ctx);
        return NGX_OK;
    }

    if (!ctx->allowed || u == NULL || u == ctx->charged || !u->request_sent
        || !al_llm_endpoint_has_body(ctx->endpoint))
    {
        return NGX_OK;
    }

    ctx->charged = u;

    ngx_memzero(&first, sizeof(al_llm_usage_t));
    ngx_http_airlock_llm_reserved(ctx, &first);

    if (ngx_http_airlock_llm_timed_out(u)) {
        ngx_http_airlock_llm_bound(ctx, &first);
    }

    tokens = ngx_http_airlock_llm_charge_attempt(ctx, &first);

    ngx_http_airlock_log_error(NGX_LOG_INFO, r->connection->log, 0,
                               "airlock: llm call sent again after an attempt "
                               "that was never answered: charged its "
                               "reservation, %uL tokens", tokens);

    return NGX_OK;
}


/*
 * A provider's error answer that nginx intercepted (proxy_intercept_errors
 * and an error_page for its status: the fallback's, or any other): its
 * header was never passed on (u->header_sent), and its body is dropped
 * unread, but the part of it that came with the header is in
 * u->buffer, which for a short error body written at once is all of it.
 * The usage that body carries (as JSON, or in its events when it is an
 * event stream) is charged as an error answer's is
 * (ngx_http_airlock_llm_usage()), added as an earlier attempt's charge
 * (first_tokens, first_cost: the answer that follows, the fallback's,
 * does not replace it), at the price of the entry that answered.  A body
 * not all there that names a "usage" in what came is charged its
 * reservation: the provider billed the call, by how much is not known.
 * Called where such a call goes on: the fallback, another location that
 * sends it again, the log phase; once per attempt (ctx->charged).
 */

void
ngx_http_airlock_llm_intercepted(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx)
{
    uint64_t              tokens;
    ngx_int_t             rc;
    al_llm_usage_t        usage;
    ngx_http_upstream_t  *u;

    u = r->upstream;

    if (!ctx->allowed || u == NULL || u == ctx->charged || u->header_sent
        || u->headers_in.status_n < NGX_HTTP_SPECIAL_RESPONSE
        || !al_llm_endpoint_has_body(ctx->endpoint))
    {
        return;
    }

    ctx->charged = u;

    ngx_memzero(&usage, sizeof(al_llm_usage_t));

    rc = ngx_http_airlock_llm_intercepted_usage(r, ctx, &usage);

    if (rc == NGX_DECLINED) {
        return;
    }

    if (rc == NGX_AGAIN) {
        ngx_http_airlock_llm_reserved(ctx, &usage);
    }

    tokens = ngx_http_airlock_llm_charge_attempt(ctx, &usage);

    ngx_http_airlock_log_error(NGX_LOG_INFO, r->connection->log, 0,
                               "airlock: llm error %ui intercepted by an "
                               "error_page carries a usage: charged %uL "
                               "tokens%s", u->headers_in.status_n, tokens,
                               (rc == NGX_AGAIN)
                               ? " (its reservation: the body was cut)" : "");
}


/*
 * The usage in the part of an intercepted error's body nginx read with
 * its header: NGX_OK with *u, NGX_DECLINED without one, NGX_AGAIN for a
 * body not all there that names a "usage" in what came.
 */

static ngx_int_t
ngx_http_airlock_llm_intercepted_usage(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, al_llm_usage_t *u)
{
    off_t                 cl;
    size_t                len, n, piece;
    u_char               *p, *d;
    ngx_int_t             rc;
    ngx_buf_t             b;
    ngx_uint_t            all;
    al_llm_sse_t         *sse;
    ngx_http_chunked_t    ch;
    ngx_http_upstream_t  *up;
    al_llm_sse_block_t    blk;

    up = r->upstream;

    if (up->buffer.start == NULL || up->buffer.pos >= up->buffer.last) {
        return NGX_DECLINED;
    }

    p = up->buffer.pos;
    len = up->buffer.last - up->buffer.pos;
    cl = up->headers_in.content_length_n;

    if (up->headers_in.chunked) {
        d = ngx_pnalloc(r->pool, len);
        if (d == NULL) {
            return NGX_DECLINED;
        }

        /* the chunks' data, joined: never longer than the chunks */

        ngx_memzero(&ch, sizeof(ngx_http_chunked_t));
        b = up->buffer;
        p = d;
        n = 0;

        for ( ;; ) {
#if (nginx_version >= 1027002)
            rc = ngx_http_parse_chunked(r, &b, &ch, 0);  /* no trailers */
#else
            rc = ngx_http_parse_chunked(r, &b, &ch);
#endif

            if (rc != NGX_OK) {
                break;
            }

            piece = (size_t) ngx_min((off_t) (b.last - b.pos), ch.size);
            d = ngx_cpymem(d, b.pos, piece);
            n += piece;
            b.pos += piece;
            ch.size -= piece;

            if (b.pos == b.last) {
                rc = NGX_AGAIN;
                break;
            }
        }

        all = (rc == NGX_DONE);
        len = n;

    } else if (cl >= 0) {
        all = ((off_t) len >= cl);
        len = all ? (size_t) cl : len;

    } else {
        /* ended by the connection's close: not known */
        all = 0;
    }

    if (al_llm_usage_parse(ctx->provider->llm->kind, ctx->endpoint, p, len,
                           u, NULL, 0)
        == 0
        && (u->total_tokens | u->prompt_tokens | u->completion_tokens) != 0)
    {
        return NGX_OK;
    }

    ngx_memzero(u, sizeof(al_llm_usage_t));

    if (up->headers_in.content_type != NULL
        && ngx_http_airlock_llm_event_type(&up->headers_in.content_type->value))
    {
        /* an error as an event stream: its events' usage, as the filter */

        sse = ngx_http_airlock_llm_sse_get(r->connection->log);

        if (sse != NULL) {
            al_llm_sse_init(sse, ctx->provider->llm->kind, ctx->endpoint, 0);
            sse->no_model = 1;
            al_llm_sse_observe(sse, p, len);
            (void) al_llm_sse_finish(sse, &blk);

            if ((sse->usage.prompt_tokens | sse->usage.completion_tokens
                 | sse->usage.total_tokens)
                != 0)
            {
                *u = sse->usage;
            }

            al_llm_sse_free(sse);
            ngx_http_airlock_llm_sse_put(sse);

            if ((u->total_tokens | u->prompt_tokens | u->completion_tokens)
                != 0)
            {
                return NGX_OK;
            }
        }
    }

    if (!all
        && ngx_strlcasestrn(p, p + len, (u_char *) "\"usage\"",
                            sizeof("\"usage\"") - 2)
           != NULL)
    {
        return NGX_AGAIN;
    }

    return NGX_DECLINED;
}


/*
 * The usage line is formatted straight into the log's buffer when that
 * has room for the longest line (ngx_http_airlock_file_room()), else
 * here, then written or copied there at once
 * (ngx_http_airlock_file_write()): one per process, as the scratch route
 * above, and not a 3.6 KB stack frame above al_llm_record_format() and
 * what it calls.
 */

static u_char  ngx_http_airlock_llm_line[AL_LLM_RECORD_MAX + 1];


static void
ngx_http_airlock_llm_write(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx)
{
    size_t                             n;
    ngx_str_t                          id;
    ngx_uint_t                         room;
    ngx_msec_t                         now, start;
    u_char                            *buf;
    al_llm_record_t                    rec;
    ngx_http_airlock_llm_main_conf_t  *lmcf;

    buf = ngx_http_airlock_file_room(ctx->log, AL_LLM_RECORD_MAX + 1);
    room = (buf != NULL);

    if (!room) {
        buf = ngx_http_airlock_llm_line;
    }

    ngx_memzero(&rec, sizeof(al_llm_record_t));

    lmcf = ngx_http_get_module_main_conf(r, ngx_http_airlock_llm_module);
    rec.clock = &lmcf->clock;

    now = ngx_http_airlock_llm_now();
    start = (ngx_msec_t) r->start_sec * 1000 + r->start_msec;

    if (ngx_http_airlock_request_id(r, &id) != NGX_OK) {
        ngx_str_set(&id, "-");
    }

    rec.time_ms = (int64_t) now;
    rec.request_id.data = (char *) id.data;
    rec.request_id.len = id.len;
    rec.client.data = ctx->client->name.data;
    rec.client.len = ctx->client->name.len;
    rec.provider.data = ctx->provider->llm->name.data;
    rec.provider.len = ctx->provider->llm->name.len;

    if (ctx->served != NULL) {
        rec.fallback_from = rec.provider;
        rec.fallback_status = ctx->fallback_status;
        rec.provider.data = ctx->served->llm->name.data;
        rec.provider.len = ctx->served->llm->name.len;
    }

    rec.model.data = (char *) ctx->model.data;
    rec.model.len = ctx->model.len;
    rec.alias.data = (char *) ctx->alias.data;
    rec.alias.len = ctx->alias.len;
    rec.endpoint = ctx->endpoint;
    rec.usage = ctx->usage;
    rec.status = ctx->status;
    rec.latency_ms = (now > start) ? now - start : 0;
    rec.ttfb_ms = ctx->ttfb_set ? ctx->ttfb : rec.latency_ms;
    rec.stream = ctx->stream;
    rec.source = ctx->source;
    rec.priced = (ctx->price != NULL);
    rec.names_plain = 1;
    rec.cost = ctx->cost;

    n = al_llm_record_format(&rec, (char *) buf, AL_LLM_RECORD_MAX);
    n = ngx_min(n, AL_LLM_RECORD_MAX - 1);
    buf[n++] = LF;

    /*
     * one write() to an O_APPEND file, lines of workers never mix; with
     * buffer=, one write() for the lines of one pass of the event loop
     */

    if (room) {
        ngx_http_airlock_file_commit(ctx->log, n);
        return;
    }

    ngx_http_airlock_file_write(ctx->log, buf, n, r->connection->log);
}


/* what $status says */

static ngx_uint_t
ngx_http_airlock_llm_status(ngx_http_request_t *r)
{
    if (r->err_status) {
        return r->err_status;
    }

    return r->headers_out.status;
}


static ngx_msec_t
ngx_http_airlock_llm_now(void)
{
    ngx_time_t  *tp;

    tp = ngx_timeofday();

    return (ngx_msec_t) tp->sec * 1000 + tp->msec;
}


static char *
ngx_http_airlock_llm(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_airlock_llm_loc_conf_t  *llcf = conf;

    ngx_str_t  *value;

    if (llcf->name.data != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;

    llcf->name = value[1];
    llcf->file = cf->conf_file->file.name;
    llcf->line = cf->conf_file->line;

    return NGX_CONF_OK;
}


static char *
ngx_http_airlock_llm_log(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_airlock_llm_loc_conf_t  *llcf = conf;

    ssize_t                            size;
    ngx_str_t                         *value, name;
    ngx_msec_t                         flush;
    ngx_open_file_t                  **file;
    ngx_http_airlock_llm_main_conf_t  *lmcf;

    if (llcf->log != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_strcmp(value[1].data, "off") == 0) {
        if (cf->args->nelts > 2) {
            return "takes no parameters with \"off\"";
        }

        llcf->log = NULL;
        return NGX_CONF_OK;
    }

    name = value[1];

    if (ngx_http_airlock_log_args(cf, 2, &size, &flush) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    llcf->log = ngx_http_airlock_open_file(cf, &name);
    if (llcf->log == NULL) {
        return NGX_CONF_ERROR;
    }

    /*
     * in shared memory, so a killed worker's lines are written by another;
     * without flush=, at the end of the pass of the event loop.  Without
     * buffer= too, in a buffer of NGX_HTTP_AIRLOCK_LLM_LOG_BUFFER bytes,
     * unless another log buffers the file: decided once every log has
     * been read (ngx_http_airlock_llm_init())
     */

    if (size != 0) {
        return ngx_http_airlock_file_buffer(cf, llcf->log, size, flush);
    }

    lmcf = ngx_http_conf_get_module_main_conf(cf,
                                              ngx_http_airlock_llm_module);

    if (lmcf->logs == NULL) {
        lmcf->logs = ngx_array_create(cf->pool, 2, sizeof(ngx_open_file_t *));
        if (lmcf->logs == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    file = ngx_array_push(lmcf->logs);
    if (file == NULL) {
        return NGX_CONF_ERROR;
    }

    *file = llcf->log;

    return NGX_CONF_OK;
}


/*
 * What the locations of one llm entry share, built once per configuration
 * cycle: the key header (its value in guarded memory), the scrub list,
 * the upstream in the form of $airlock_llm_upstream.
 */

static char *
ngx_http_airlock_llm_prepare(ngx_conf_t *cf,
    ngx_http_airlock_llm_loc_conf_t *llcf,
    ngx_http_airlock_llm_provider_t *prov)
{
    size_t                         len;
    u_char                        *v;
    const char                    *why;
    al_scrub_t                    *scrub;
    const al_llm_t                *llm;
    ngx_table_elt_t               *h;
    ngx_pool_cleanup_t            *cln;
    const al_upstream_t           *u;
    const al_secret_t             *sec;
    ngx_http_airlock_main_conf_t  *amcf;

    llm = prov->llm;
    u = &llm->upstream;
    sec = llm->secret;

    if (sec == NULL || sec->value == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "llm \"%s\" needs its secret, but no "
                      "\"airlock_keyring\" is set to open it in %V:%ui",
                      llm->name.data, &llcf->file, llcf->line);
        return NGX_CONF_ERROR;
    }

    len = sizeof("https://") - 1 + u->host.len;

    prov->upstream.data = ngx_pnalloc(cf->pool, len);
    if (prov->upstream.data == NULL) {
        return NGX_CONF_ERROR;
    }

    prov->upstream.len = ngx_sprintf(prov->upstream.data, "%s://%*s",
                                     u->https ? "https" : "http",
                                     u->host.len, u->host.data)
                         - prov->upstream.data;

    prov->host.data = (u_char *) u->host.data;
    prov->host.len = u->host.len;

    /*
     * the key header: "Authorization: Bearer k", "x-api-key: k"
     * (anthropic) or "api-key: k" (azure)
     */

    h = &prov->key;

    if (llm->kind == AL_LLM_ANTHROPIC || llm->kind == AL_LLM_AZURE) {
        if (llm->kind == AL_LLM_AZURE) {
            ngx_str_set(&h->key, "api-key");

        } else {
            ngx_str_set(&h->key, "x-api-key");
        }

        /* the value stays in the library's guarded memory */
        h->value.data = sec->value;
        h->value.len = sec->len;

    } else {
        ngx_str_set(&h->key, "Authorization");

        len = sizeof("Bearer ") - 1 + sec->len;

        v = al_secure_alloc(len + 1);
        if (v == NULL) {
            return NGX_CONF_ERROR;
        }

        cln = ngx_pool_cleanup_add(cf->pool, 0);
        if (cln == NULL) {
            al_secure_free(v);
            return NGX_CONF_ERROR;
        }

        cln->handler = ngx_http_airlock_llm_free_secure;
        cln->data = v;

        ngx_memcpy(v, "Bearer ", sizeof("Bearer ") - 1);
        ngx_memcpy(v + sizeof("Bearer ") - 1, sec->value, sec->len);
        v[len] = '\0';

        h->value.data = v;
        h->value.len = len;
    }

    h->lowcase_key = ngx_pnalloc(cf->pool, h->key.len);
    if (h->lowcase_key == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_strlow(h->lowcase_key, h->key.data, h->key.len);
    h->hash = ngx_hash_key(h->lowcase_key, h->key.len);

    h = &prov->version;
    ngx_str_set(&h->key, "anthropic-version");
    ngx_str_set(&h->value, NGX_HTTP_AIRLOCK_LLM_ANTHROPIC_VERSION);
    h->lowcase_key = h->key.data;
    h->hash = ngx_hash_key(h->lowcase_key, h->key.len);

    /* how ngx_http_airlock_module sees the provider: a route by its name */

    prov->route.name = llm->name;
    prov->route.line = llm->line;
    prov->route.upstream = u;
    prov->rconf.upstream = prov->upstream;

    amcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_airlock_module);

    scrub = ngx_http_airlock_policy_scrub(cf, amcf, &why);
    if (scrub == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "llm \"%s\": cannot build its scrub list: %s in "
                      "%V:%ui", llm->name.data, why, &llcf->file,
                      llcf->line);
        return NGX_CONF_ERROR;
    }

    if (scrub->n
        && ngx_http_airlock_route_scrub_init(cf, &prov->rconf, scrub)
           != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    prov->ready = 1;

    return NGX_CONF_OK;
}


static void
ngx_http_airlock_llm_free_secure(void *data)
{
    al_secure_free(data);
}


static void *
ngx_http_airlock_llm_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_airlock_llm_main_conf_t  *lmcf;

    lmcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_airlock_llm_main_conf_t));
    if (lmcf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     lmcf->zone = NULL;
     *     lmcf->providers = NULL;
     *     lmcf->nproviders = 0;
     *     lmcf->logs = NULL;
     *     lmcf->blocks = NULL;
     */

    lmcf->clock.sec = AL_LLM_CLOCK_NONE;

    return lmcf;
}


/* ngx_http_airlock_module's init_main_conf, which loads the policy, ran */

static char *
ngx_http_airlock_llm_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_airlock_llm_main_conf_t  *lmcf = conf;

    ngx_uint_t                     i;
    const al_policy_t             *p;
    ngx_http_airlock_main_conf_t  *amcf;

    amcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_airlock_module);
    p = amcf->policy;

    if (p == NULL || p->nllm == 0) {
        return NGX_CONF_OK;
    }

    lmcf->providers = ngx_pcalloc(cf->pool, p->nllm
                                  * sizeof(ngx_http_airlock_llm_provider_t));
    if (lmcf->providers == NULL) {
        return NGX_CONF_ERROR;
    }

    for (i = 0; i < p->nllm; i++) {
        lmcf->providers[i].llm = &p->llm[i];
    }

    lmcf->nproviders = p->nllm;

    return NGX_CONF_OK;
}


static void *
ngx_http_airlock_llm_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_airlock_llm_loc_conf_t  *llcf;

    llcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_airlock_llm_loc_conf_t));
    if (llcf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     llcf->name = { 0, NULL };
     *     llcf->provider = NULL;
     *     llcf->metrics = 0;
     */

    llcf->log = NGX_CONF_UNSET_PTR;

    return llcf;
}


static char *
ngx_http_airlock_llm_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child)
{
    ngx_http_airlock_llm_loc_conf_t  *prev = parent;
    ngx_http_airlock_llm_loc_conf_t  *conf = child;

    char                              *rv;
    ngx_uint_t                         i;
    const al_llm_t                    *llm;
    ngx_http_core_loc_conf_t          *clcf;
    ngx_http_airlock_main_conf_t      *amcf;
    ngx_http_airlock_llm_main_conf_t  *lmcf;

    ngx_conf_merge_ptr_value(conf->log, prev->log, NULL);

    lmcf = ngx_http_conf_get_module_main_conf(cf,
                                              ngx_http_airlock_llm_module);
    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);

    if (conf->metrics && lmcf->zone == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"airlock_llm_metrics\" in location \"%V\" needs "
                      "\"airlock_llm_zone\" at the http level", &clcf->name);
        return NGX_CONF_ERROR;
    }

    if (conf->name.data == NULL) {
        conf->name = prev->name;
        conf->file = prev->file;
        conf->line = prev->line;
        conf->provider = prev->provider;
    }

    if (conf->fallback) {
        if (conf->name.data != NULL) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "\"airlock_llm_fallback\" and \"airlock_llm\" "
                          "in one location \"%V\": the fallback location "
                          "is the named location the gateway locations' "
                          "error_page leads to", &clcf->name);
            return NGX_CONF_ERROR;
        }

        /* what other modules' directives may not do here */
        return ngx_http_airlock_conf_check(cf, clcf);
    }

    if (conf->name.data == NULL) {
        return NGX_CONF_OK;
    }

    if (conf->provider != NULL) {
        return ngx_http_airlock_llm_bind(cf, conf, clcf);
    }

    amcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_airlock_module);

    if (amcf->policy == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"airlock_llm\" needs \"airlock_policy\" at the http "
                      "level in %V:%ui", &conf->file, conf->line);
        return NGX_CONF_ERROR;
    }

    for (i = 0; i < lmcf->nproviders; i++) {
        llm = lmcf->providers[i].llm;

        if (llm->name.len == conf->name.len
            && ngx_strncmp(llm->name.data, conf->name.data, conf->name.len)
               == 0)
        {
            break;
        }
    }

    if (i == lmcf->nproviders) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "unknown llm provider \"%V\": the policy has no llm "
                      "entry of that name in %V:%ui",
                      &conf->name, &conf->file, conf->line);
        return NGX_CONF_ERROR;
    }

    if (lmcf->zone == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"airlock_llm\" needs \"airlock_llm_zone\" at the "
                      "http level in %V:%ui", &conf->file, conf->line);
        return NGX_CONF_ERROR;
    }

    if (!lmcf->providers[i].ready) {
        rv = ngx_http_airlock_llm_prepare(cf, conf, &lmcf->providers[i]);
        if (rv != NGX_CONF_OK) {
            return rv;
        }
    }

    conf->provider = &lmcf->providers[i];
    llm = conf->provider->llm;

    /* a call may go to the entry's fallback: its key and scrub list too */

    if (llm->fallback != NULL) {
        ngx_http_airlock_llm_fallback_check(cf, clcf, llm);
    }

    for (i = 0; llm->fallback != NULL && i < lmcf->nproviders; i++) {
        if (lmcf->providers[i].llm == llm->fallback
            && !lmcf->providers[i].ready)
        {
            rv = ngx_http_airlock_llm_prepare(cf, conf, &lmcf->providers[i]);
            if (rv != NGX_CONF_OK) {
                return rv;
            }
        }
    }

    /* bodies are checked and forwarded from one memory buffer */

    if (clcf->client_body_buffer_size < llm->body_max) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"client_body_buffer_size\" %uz in location \"%V\" "
                      "is smaller than the max_body_bytes %uz of llm "
                      "\"%V\"; airlock_llm reads request bodies into memory "
                      "in %V:%ui", clcf->client_body_buffer_size,
                      &clcf->name, llm->body_max, &conf->name, &conf->file,
                      conf->line);
        return NGX_CONF_ERROR;
    }

    if (clcf->client_max_body_size
        && clcf->client_max_body_size < (off_t) llm->body_max)
    {
        ngx_log_error(NGX_LOG_WARN, cf->log, 0,
                      "\"client_max_body_size\" %O in location \"%V\" is "
                      "smaller than the max_body_bytes %uz of llm \"%V\"; "
                      "larger bodies get nginx's 413",
                      clcf->client_max_body_size, &clcf->name,
                      llm->body_max, &conf->name);
    }

    return ngx_http_airlock_llm_bind(cf, conf, clcf);
}


/*
 * What other modules' directives may not do in a gateway location, then
 * its proxy_pass bound to the upstream block of the entry's host when
 * there is one (ngx_http_airlock_conf_bind()): the content handler is
 * then ngx_http_airlock_llm_content(), around the proxy module's.
 */

static char *
ngx_http_airlock_llm_bind(ngx_conf_t *cf,
    ngx_http_airlock_llm_loc_conf_t *conf, ngx_http_core_loc_conf_t *clcf)
{
    char                              *rv;
    ngx_uint_t                         i;
    ngx_http_upstream_srv_conf_t      *us;
    ngx_http_airlock_llm_block_t      *b;
    ngx_http_airlock_llm_main_conf_t  *lmcf;

    rv = ngx_http_airlock_conf_check(cf, clcf);
    if (rv != NGX_CONF_OK) {
        return rv;
    }

    rv = ngx_http_airlock_conf_bind(cf, clcf, &conf->provider->upstream,
                                    conf->provider->llm->upstream.https,
                                    &conf->proxy, &us);
    if (rv != NGX_CONF_OK) {
        return rv;
    }

    if (conf->proxy == NULL) {
        return NGX_CONF_OK;
    }

    clcf->handler = ngx_http_airlock_llm_content;

    /*
     * The block's peer init runs once a call, after the proxy module has
     * built the upstream request and before the first connect: the
     * client's target is given back there (ngx_http_airlock_llm_init_
     * peer()).  The upstream module has set it by now (its init_main_conf
     * comes before this module's merge); each block is wrapped once.
     */

    if (us == NULL || us->peer.init == NULL) {
        return NGX_CONF_OK;
    }

    lmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_airlock_llm_module);

    if (lmcf->blocks == NULL) {
        lmcf->blocks = ngx_array_create(cf->pool, 4,
                                        sizeof(ngx_http_airlock_llm_block_t));
        if (lmcf->blocks == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    b = lmcf->blocks->elts;

    for (i = 0; i < lmcf->blocks->nelts; i++) {
        if (b[i].us == us) {
            return NGX_CONF_OK;
        }
    }

    b = ngx_array_push(lmcf->blocks);
    if (b == NULL) {
        return NGX_CONF_ERROR;
    }

    b->us = us;
    b->init = us->peer.init;
    us->peer.init = ngx_http_airlock_llm_init_peer;

    return NGX_CONF_OK;
}


/*
 * The peer init of a block gateway locations are bound to, for every call
 * that uses the block.  The upstream request is built by now: the target
 * goes back to the client's before nginx connects, so that an error raised
 * before the proxy handler returns ("no live upstreams") and the
 * error_page it runs, of any location, see the client's $request_uri.
 */

static ngx_int_t
ngx_http_airlock_llm_init_peer(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us)
{
    ngx_uint_t                         i;
    ngx_http_airlock_llm_ctx_t        *ctx;
    ngx_http_airlock_llm_block_t      *b;
    ngx_http_airlock_llm_main_conf_t  *lmcf;

    ctx = ngx_http_get_module_ctx(r, ngx_http_airlock_llm_module);

    if (ctx != NULL) {
        ngx_http_airlock_llm_target_restore(r, ctx);
    }

    lmcf = ngx_http_get_module_main_conf(r, ngx_http_airlock_llm_module);
    b = lmcf->blocks->elts;

    for (i = 0; i < lmcf->blocks->nelts; i++) {
        if (b[i].us == us) {
            return b[i].init(r, us);
        }
    }

    ngx_http_airlock_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                               "airlock: no peer init for the upstream block "
                               "\"%V\"", &us->host);

    return NGX_ERROR;
}


/*
 * The content handler of a bound location.  With "proxy_pass
 * scheme://host" the proxy module sends r->unparsed_uri as the request
 * target: for the call it is the route's (what $airlock_uri would have
 * given), then the client's again.  The proxy module builds the upstream
 * request before its handler returns (the body is already in memory), and
 * a retry to another server of the block resends those bytes.  The
 * block's peer init, which runs next, gives the client's target back
 * before nginx connects (ngx_http_airlock_llm_init_peer()); whatever else
 * could run inside the handler and read the target for the client (an
 * error_page to the fallback location, the response header filter)
 * restores it too (ngx_http_airlock_llm_target_restore()).
 */

static ngx_int_t
ngx_http_airlock_llm_content(ngx_http_request_t *r)
{
    ngx_int_t                         rc;
    ngx_http_airlock_llm_ctx_t       *ctx;
    ngx_http_airlock_llm_provider_t  *prov;
    ngx_http_airlock_llm_loc_conf_t  *llcf;

    llcf = ngx_http_get_module_loc_conf(r, ngx_http_airlock_llm_module);
    ctx = ngx_http_airlock_llm_get_ctx(r);

    if (ctx == NULL || !ctx->allowed || ctx->swapped) {
        /* the preaccess handler decides every call before this */
        ngx_http_airlock_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                                   "airlock: a gateway call reached the proxy "
                                   "without being admitted");
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /*
     * An error_page may lead a call of another entry here: the decision
     * stands, and the call goes to the upstream of the entry it was made
     * for (its fallback's, once switched) or nowhere.  This block is this
     * location's entry's, not necessarily the call's.
     */

    prov = (ctx->served != NULL) ? ctx->served : ctx->provider;

    if (prov != llcf->provider
        && (prov->upstream.len != llcf->provider->upstream.len
            || ngx_strncmp(prov->upstream.data,
                           llcf->provider->upstream.data,
                           prov->upstream.len)
               != 0))
    {
        ngx_http_airlock_log_error(NGX_LOG_ERR, r->connection->log, 0,
                                   "airlock: a call of llm \"%s\" was led to a "
                                   "location of llm \"%s\", bound to another "
                                   "upstream: refused", prov->llm->name.data,
                                   llcf->provider->llm->name.data);
        return NGX_HTTP_BAD_GATEWAY;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "airlock: llm call to the upstream block \"%V\", "
                   "target \"%V\"", &ctx->provider->host, &ctx->uri);

    ctx->target = r->unparsed_uri;
    ctx->target_valid = r->valid_unparsed_uri;
    ctx->swapped = 1;

    r->unparsed_uri = ctx->uri;
    r->valid_unparsed_uri = 1;

    rc = llcf->proxy(r);

    ngx_http_airlock_llm_target_restore(r, ctx);

    return rc;
}


void
ngx_http_airlock_llm_target_restore(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx)
{
    if (ctx->swapped) {
        r->unparsed_uri = ctx->target;
        r->valid_unparsed_uri = ctx->target_valid;
        ctx->swapped = 0;
    }
}


/*
 * The module comes after ngx_http_airlock_module in the .so, so its
 * preaccess handler runs first (nginx runs a phase's handlers in reverse
 * order of registration, and this module's init_module moves its handler
 * to the front of the phase after ngx_http_airlock_module's did): an LLM
 * location is decided here even under "airlock on", and
 * ngx_http_airlock_module finds it decided.  Likewise its body filter
 * sees the provider's bytes before the scrub filter.
 */

static ngx_int_t
ngx_http_airlock_llm_init(ngx_conf_t *cf)
{
    ngx_uint_t                         i;
    ngx_open_file_t                  **file;
    ngx_http_handler_pt               *h;
    ngx_http_core_srv_conf_t         **cscfp;
    ngx_http_core_main_conf_t         *cmcf;
    ngx_http_airlock_llm_main_conf_t  *lmcf;

    /*
     * A usage log named without buffer= gets the default buffer, unless
     * another log (ours with buffer=, the journal, an access_log with
     * buffer=), before or after it in the configuration, buffers the file
     * its own way.
     */

    lmcf = ngx_http_conf_get_module_main_conf(cf,
                                              ngx_http_airlock_llm_module);

    for (i = 0; lmcf->logs != NULL && i < lmcf->logs->nelts; i++) {
        file = lmcf->logs->elts;

        if (ngx_http_airlock_file_buffer_default(cf, file[i],
                                        NGX_HTTP_AIRLOCK_LLM_LOG_BUFFER)
            != NGX_CONF_OK)
        {
            return NGX_ERROR;
        }
    }

    if (ngx_http_airlock_keep_init(cf, ngx_http_airlock_llm_headers,
                                   lmcf->keep_hh, lmcf->keep_at)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    /*
     * A gateway call allocates about 12 KB from its request's pool
     * (nginx's request and upstream, this module's context, the headers
     * and buffers): in nginx's default 4 KB pool, two more blocks, each
     * allocated and freed a call and walked by every allocation after
     * it.  One 16 KB pool holds the call.  The pool is made before the
     * location is known, so each server of the block gets it; a size
     * set other than the default is kept.
     */

    if (lmcf->nproviders > 0) {
        cscfp = cmcf->servers.elts;

        for (i = 0; i < cmcf->servers.nelts; i++) {
            if (cscfp[i]->request_pool_size
                == NGX_HTTP_AIRLOCK_LLM_POOL_DEFAULT)
            {
                cscfp[i]->request_pool_size = NGX_HTTP_AIRLOCK_LLM_POOL;
            }
        }
    }

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_PREACCESS_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_airlock_llm_handler;

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_LOG_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_airlock_llm_log_handler;

    return ngx_http_airlock_llm_filter_init(cf);
}


/*
 * The gateway's decision comes first in its phase, whatever is loaded
 * after us, and before ngx_http_airlock_module's (whose init_module ran
 * first)
 */

static ngx_int_t
ngx_http_airlock_llm_init_module(ngx_cycle_t *cycle)
{
    return ngx_http_airlock_phase_first(cycle, ngx_http_airlock_llm_handler);
}


/* a worker gives back the places in flight of workers that are gone */

static ngx_int_t
ngx_http_airlock_llm_init_process(ngx_cycle_t *cycle)
{
    if (ngx_process == NGX_PROCESS_WORKER) {
        ngx_http_airlock_llm_zone_reclaim(cycle);
    }

    return NGX_OK;
}
