
/*
 * Airlock LLM gateway: ordered fallback to a second llm entry.
 *
 * A call whose provider answers 429 or 5xx, or cannot be reached, goes
 * once to the entry's "fallback" (policy.md), provided nothing of the
 * first answer has reached the client.  nginx's own machinery gives that
 * guarantee: the gateway location intercepts those statuses
 *
 *     proxy_intercept_errors on;
 *     error_page 429 500 502 503 504 529 = @airlock_llm_fallback;
 *
 * which happens only while the upstream's response header is being
 * processed, before anything is sent; a stream that fails after its
 * header went out just ends, as without a fallback.  The named location
 *
 *     location @airlock_llm_fallback {
 *         airlock_llm_fallback;
 *         include /etc/airlock/airlock-location.conf;
 *     }
 *
 * runs the preaccess handler below: the request keeps its context (the
 * client, the checked body in memory, the budget reservation), and gets
 * the fallback entry's URI, key header, model ("model" spliced as for an
 * alias), upstream and scrub list; then the same proxy_pass sends it.
 * The first answer's body is discarded by nginx, unread by the client.
 *
 * The budget reservation stays where it was made, on the entry the
 * client called, and is settled once with the usage the fallback
 * reports, plus the first attempt's reservation when the first provider
 * was sent the call and never answered.  The usage line names the entry
 * that served and the one that failed ("fallback_from",
 * "fallback_status").
 *
 * When the call cannot fall back (no fallback entry, one fallback done,
 * a model the fallback does not serve for this client, an endpoint
 * without a body, an answer already started), the client gets the first
 * status with a short error body in the provider's format.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_airlock_llm_module.h"


#define NGX_HTTP_AIRLOCK_LLM_FALLBACK_URI  1024

/* Anthropic's "overloaded" */
#define NGX_HTTP_AIRLOCK_LLM_OVERLOADED    529


static ngx_uint_t ngx_http_airlock_llm_fallback_status(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx);
static const char *ngx_http_airlock_llm_fallback_to(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_uint_t status);
static const char *ngx_http_airlock_llm_fallback_body(
    ngx_http_request_t *r, ngx_http_airlock_llm_ctx_t *ctx,
    const al_llm_t *a, const al_llm_t *b, const al_llm_client_t *lc);
static ngx_http_airlock_llm_provider_t *ngx_http_airlock_llm_fallback_of(
    ngx_http_request_t *r, const al_llm_t *llm);
static ngx_int_t ngx_http_airlock_llm_fallback_fail(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_uint_t status, const char *why);


/*
 * The preaccess handler of a location with "airlock_llm_fallback".
 * Returns NGX_DECLINED to let the proxy send the call to the fallback,
 * NGX_DONE when the call was answered here, or a status.
 */

ngx_int_t
ngx_http_airlock_llm_fallback(ngx_http_request_t *r)
{
    const char                  *why;
    ngx_uint_t                   status;
    ngx_http_airlock_llm_ctx_t  *ctx;

    if (r != r->main || r->post_action) {
        /* refused as in the other Airlock locations */
        return ngx_http_airlock_enter(r, NULL);
    }

    ctx = ngx_http_airlock_llm_get_ctx(r);

    if (ctx != NULL) {
        /* reached from inside a bound location's proxy handler */
        ngx_http_airlock_llm_target_restore(r, ctx);
    }

    if (ctx != NULL && ctx->actx->reading_body) {
        /* nginx could not read the body: answered as the gateway does */
        return ngx_http_airlock_enter(r, ctx->actx);
    }

    if (ctx == NULL || !ctx->allowed) {
        /* not a call the gateway let through: nothing to fall back */
        ngx_http_airlock_log_error(NGX_LOG_ERR, r->connection->log, 0,
                                   "airlock: \"airlock_llm_fallback\" reached "
                                   "by a request the LLM gateway did not "
                                   "allow");
        return r->err_status ? (ngx_int_t) r->err_status
                             : NGX_HTTP_FORBIDDEN;
    }

    /* the usage the provider's error carries, though nginx drops it */
    ngx_http_airlock_llm_intercepted(r, ctx);

    status = ngx_http_airlock_llm_fallback_status(r, ctx);

    if (ctx->served != NULL) {
        if (r->upstream == ctx->first) {
            /* the fallback's own location phases, after the switch */
            return NGX_DECLINED;
        }

        /*
         * The fallback was sent the call and failed, and an error_page
         * led it here again (recursive_error_pages): the list ends.
         */

        return ngx_http_airlock_llm_fallback_fail(r, ctx, status,
                                                  "its fallback was tried");
    }

    why = ngx_http_airlock_llm_fallback_to(r, ctx, status);

    if (why != NULL) {
        return ngx_http_airlock_llm_fallback_fail(r, ctx, status, why);
    }

    ngx_http_airlock_log_error(NGX_LOG_WARN, r->connection->log, 0,
                               "airlock: llm \"%s\" failed with %ui, the call "
                               "goes to its fallback \"%s\" as model \"%V\"",
                               ctx->provider->llm->name.data, status,
                               ctx->served->llm->name.data, &ctx->model);

    /* the fallback's answer is the answer, with its own status */
    r->err_status = 0;

    return NGX_DECLINED;
}


/*
 * The worst case of the call should it fall back, at the price of the
 * model the fallback would be asked for (admission reserves the higher
 * of this and the entry's own); 0 when it could not fall back.
 */

uint64_t
ngx_http_airlock_llm_fallback_need(const ngx_http_airlock_llm_ctx_t *ctx)
{
    ngx_uint_t              can;
    const al_llm_price_t   *price;

    price = ngx_http_airlock_llm_fallback_price(ctx, &can);

    if (!can) {
        return 0;
    }

    return al_llm_cost_need(price, ctx->cache_control, ctx->prompt_estimate,
                            ctx->max_output);
}


/*
 * The price of the model the fallback would be asked for (NULL when it
 * has none); *can is 0 when the call could not fall back.
 */

const al_llm_price_t *
ngx_http_airlock_llm_fallback_price(const ngx_http_airlock_llm_ctx_t *ctx,
    ngx_uint_t *can)
{
    al_str_t                model;
    const al_llm_t         *b;
    const al_llm_client_t  *lc;

    *can = 0;
    b = ctx->provider->llm->fallback;

    if (b == NULL) {
        return NULL;
    }

    lc = al_llm_find_client(b, ctx->client);

    if (lc == NULL
        || al_llm_fallback_model(b, lc, (char *) ctx->model.data,
                                 ctx->model.len, (char *) ctx->alias.data,
                                 ctx->alias.len, &model)
           != 0)
    {
        return NULL;
    }

    *can = 1;

    return al_llm_price(b, model.data, model.len);
}


/*
 * What the first provider did: its status, or 502/504 for no answer, or
 * for a 2xx answer the gateway refused or that failed before any of it
 * reached the client
 */

static ngx_uint_t
ngx_http_airlock_llm_fallback_status(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx)
{
    ngx_http_upstream_t  *u;

    if (r->err_status) {
        return r->err_status;
    }

    if (ctx->failed) {
        return ctx->failed;
    }

    u = r->upstream;

    if (u != NULL && u->headers_in.status_n) {
        return u->headers_in.status_n;
    }

    if (u != NULL && u->state != NULL && u->state->status) {
        return u->state->status;
    }

    return NGX_HTTP_BAD_GATEWAY;
}


/*
 * Switches the call to the fallback entry.  Returns NULL, or why it
 * cannot.
 */

static const char *
ngx_http_airlock_llm_fallback_to(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_uint_t status)
{
    u_char                           *p;
    size_t                            len;
    al_str_t                          model;
    const char                       *err;
    al_llm_map_t                      m;
    const al_llm_t                   *a, *b;
    const al_llm_price_t             *price;
    const al_llm_client_t            *lc;
    ngx_http_airlock_ctx_t           *actx;
    ngx_http_airlock_body_t           body;
    ngx_http_airlock_headers_t        hs;
    ngx_http_airlock_llm_provider_t  *prov;
    char                              uri[NGX_HTTP_AIRLOCK_LLM_FALLBACK_URI];

    a = ctx->provider->llm;
    b = a->fallback;
    actx = ctx->actx;

    if (status != NGX_HTTP_TOO_MANY_REQUESTS
        && (status < NGX_HTTP_INTERNAL_SERVER_ERROR || status > 599))
    {
        return "not a status that falls back";
    }

    if (b == NULL) {
        return "the llm entry has no fallback";
    }

    if (r->upstream == NULL || ctx->header_seen || r->header_sent) {
        /* an answer already started, or the call never left */
        return "the call cannot be sent again";
    }

    if (!al_llm_endpoint_has_body(ctx->endpoint)) {
        return "only calls with a body fall back";
    }

    prov = ngx_http_airlock_llm_fallback_of(r, b);
    if (prov == NULL) {
        return "the fallback entry is not prepared";
    }

    lc = al_llm_find_client(b, ctx->client);
    if (lc == NULL) {
        return "the fallback does not list the client";
    }

    if (al_llm_fallback_model(b, lc, (char *) ctx->model.data,
                              ctx->model.len, (char *) ctx->alias.data,
                              ctx->alias.len, &model)
        != 0)
    {
        return "the fallback does not serve that model to the client";
    }

    if (al_llm_fallback_uri(b, ctx->endpoint, &model, uri, sizeof(uri),
                            &len)
        != 0)
    {
        return "the fallback does not serve that endpoint";
    }

    /* the call is charged at the price of the model that serves it */

    price = al_llm_price(b, model.data, model.len);

    if (price == NULL && al_llm_client_priced(ctx->lc)) {
        return "the fallback's model has no price, and the client has a "
               "dollar budget";
    }

    /*
     * the body: the checked bytes, with the fallback's model.  The check
     * may have made them longer than max_body_bytes (include_usage, an
     * output cap, a model for an alias): they are in memory, and what the
     * first provider was sent, whatever their length.
     */

    if (ngx_http_airlock_body(r, NGX_MAX_SIZE_T_VALUE, &body) != NGX_OK) {
        return "the body is not in memory";
    }

    switch (al_llm_model_map(b, &model, body.data, body.len, &m)) {

    case 0:
        break;

    case 1:
        return "the body's model is escaped and cannot be replaced";

    default:
        return "out of memory";
    }

    if (m.body != NULL) {
        p = ngx_pnalloc(r->pool, m.body_len);
        if (p == NULL) {
            free(m.body);
            return "out of memory";
        }

        ngx_memcpy(p, m.body, m.body_len);
        free(m.body);

        if (ngx_http_airlock_body_set(r, p, m.body_len) != NGX_OK) {
            return "out of memory";
        }
    }

    if (b->kind == AL_LLM_OPENAI_COMPATIBLE
        && a->kind != AL_LLM_OPENAI_COMPATIBLE)
    {
        err = ngx_http_airlock_llm_fallback_body(r, ctx, a, b, lc);
        if (err != NULL) {
            return err;
        }
    }

    p = ngx_pnalloc(r->pool, len);
    if (p == NULL) {
        return "out of memory";
    }

    ngx_memcpy(p, uri, len);

    /* the first key goes, the fallback's comes in */

    ngx_http_airlock_llm_headers_of(r, prov, &hs);

    if (ngx_http_airlock_rewrite_headers(r, &hs) != NGX_OK) {
        return "out of memory";
    }

    /*
     * A first provider that was sent the call and never answered (a
     * timeout, the connection lost) has the prompt and may bill all of
     * the output: the call is also charged the first attempt's
     * reservation, at the first entry's price.
     */

    (void) ngx_http_airlock_llm_resend(r, ctx);   /* not header_seen */

    ctx->first = r->upstream;
    ctx->uri.data = p;
    ctx->uri.len = len;
    ctx->model.data = (u_char *) model.data;
    ctx->model.len = model.len;
    ctx->price = price;
    ctx->served = prov;
    ctx->fallback_status = status;

    actx->uri = ctx->uri;
    actx->route = &prov->route;
    actx->rconf = &prov->rconf;

    return NULL;
}


/*
 * An openai-compatible fallback behind another kind.  The body was
 * checked and capped for the first entry, which may have put the output
 * cap in "max_completion_tokens" alone: servers of that kind (Ollama,
 * older vLLM) read only "max_tokens" and would generate without a bound.
 * The fallback's own check writes it there too, and holds the body to
 * the limits of the client's entry in the fallback as well; a body it
 * refuses does not fall back.
 */

static const char *
ngx_http_airlock_llm_fallback_body(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, const al_llm_t *a, const al_llm_t *b,
    const al_llm_client_t *lc)
{
    al_str_t                  alias;
    ngx_int_t                 rc;
    al_reason_t               reason;
    al_llm_req_t              req;
    ngx_http_airlock_body_t   body;

    if (ngx_http_airlock_body(r, NGX_MAX_SIZE_T_VALUE, &body) != NGX_OK) {
        return "the body is not in memory";
    }

    /* as the first check: a rewrite is spliced straight into the pool */

    alias.data = (char *) ctx->alias.data;
    alias.len = ctx->alias.len;

    reason = al_llm_request_with(b, lc, ctx->endpoint, &alias,
                                 (char *) body.ctype.data, body.ctype.len,
                                 body.data, body.len,
                                 ngx_http_airlock_llm_body_alloc, r->pool,
                                 &req);

    if (reason != AL_REASON_NONE) {
        ngx_http_airlock_log_error(NGX_LOG_INFO, r->connection->log, 0,
                                   "airlock: the fallback refuses the body: %s",
                                   req.detail);
        al_llm_request_free(&req);
        return "the fallback refuses the body";
    }

    /*
     * A usage chunk this check asked for that the client did not is
     * hidden as the first entry's would be; the reservation stays the
     * first entry's, whose cap the body carries.
     */

    if (req.hide_usage) {
        ctx->hide_usage = 1;
    }

    rc = NGX_OK;

    if (req.body != NULL) {
        rc = ngx_http_airlock_body_set(r, (u_char *) req.body,
                                       req.body_len);
    }

    al_llm_request_free(&req);

    return (rc == NGX_OK) ? NULL : "out of memory";
}


/* the provider struct of an llm entry, prepared at configuration time */

static ngx_http_airlock_llm_provider_t *
ngx_http_airlock_llm_fallback_of(ngx_http_request_t *r, const al_llm_t *llm)
{
    ngx_uint_t                         i;
    ngx_http_airlock_llm_main_conf_t  *lmcf;

    lmcf = ngx_http_get_module_main_conf(r, ngx_http_airlock_llm_module);

    for (i = 0; i < lmcf->nproviders; i++) {
        if (lmcf->providers[i].llm == llm && lmcf->providers[i].ready) {
            return &lmcf->providers[i];
        }
    }

    return NULL;
}


/*
 * No fallback: the first status, with an error body in the provider's
 * format that says no more than the status (the first answer's body is
 * gone, and the client must not see it anyway).
 */

static ngx_int_t
ngx_http_airlock_llm_fallback_fail(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_uint_t status, const char *why)
{
    ngx_int_t    rc;
    ngx_buf_t   *b;
    ngx_str_t    id;
    const char  *type;

    ngx_http_airlock_log_error(NGX_LOG_WARN, r->connection->log, 0,
                               "airlock: llm \"%s\" failed with %ui and the "
                               "call does not fall back: %s",
                               ctx->provider->llm->name.data, status, why);

    if (status < NGX_HTTP_BAD_REQUEST || status > 599) {
        status = NGX_HTTP_BAD_GATEWAY;
    }

    if (ngx_http_airlock_request_id(r, &id) != NGX_OK) {
        ngx_str_set(&id, "-");
    }

    id.len = ngx_min(id.len, 64);

    b = ngx_create_temp_buf(r->pool, 512);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (ctx->provider->llm->kind == AL_LLM_ANTHROPIC) {
        type = (status == NGX_HTTP_TOO_MANY_REQUESTS) ? "rate_limit_error"
               : (status == NGX_HTTP_SERVICE_UNAVAILABLE
                  || status == NGX_HTTP_AIRLOCK_LLM_OVERLOADED)
                 ? "overloaded_error" : "api_error";

        b->last = ngx_snprintf(b->pos, 511, "{\"type\":\"error\",\"error\":"
                               "{\"type\":\"%s\",\"message\":\"the provider "
                               "answered %ui\"},\"request_id\":\"%V\"}\n",
                               type, status, &id);

    } else {
        type = (status == NGX_HTTP_TOO_MANY_REQUESTS) ? "rate_limit_exceeded"
                                                      : "server_error";

        b->last = ngx_snprintf(b->pos, 511, "{\"error\":{\"message\":\"the "
                               "provider answered %ui (request id %V)\","
                               "\"type\":\"%s\",\"param\":null,"
                               "\"code\":null}}\n", status, &id, type);
    }

    if (ngx_http_airlock_llm_request_id_header(r) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* the header filter must not take that id for the provider's */
    ctx->own_answer = 1;

    r->err_status = 0;

    rc = ngx_http_airlock_send_json(r, status, b);

    ngx_http_finalize_request(r, rc);

    return NGX_DONE;
}


/*
 * A gateway location of an entry with a fallback that does not intercept
 * the provider's errors never falls back: "nginx -t" says so.  Nor do the
 * calls of an anthropic entry its provider answers 529 ("overloaded"), a
 * status of its own, when the location's error_page leaves it out.
 */

void
ngx_http_airlock_llm_fallback_check(ngx_conf_t *cf,
    ngx_http_core_loc_conf_t *clcf, const al_llm_t *llm)
{
    ngx_uint_t                 i;
    ngx_http_err_page_t       *ep;
    ngx_http_upstream_conf_t  *ucf;

    /* ngx_http_proxy_loc_conf_t begins with its upstream conf */
    ucf = ngx_http_airlock_conf_of(cf, "ngx_http_proxy_module");

    if (ucf == NULL || !ucf->intercept_errors || clcf->error_pages == NULL) {
        ngx_log_error(NGX_LOG_WARN, cf->log, 0,
                      "llm \"%s\" has the fallback \"%s\", but location "
                      "\"%V\" does not intercept the provider's errors, so "
                      "its calls never fall back; add "
                      "\"proxy_intercept_errors on;\" and \"error_page 429 "
                      "500 502 503 504 529 = @airlock_llm_fallback;\"",
                      llm->name.data, llm->fallback->name.data,
                      &clcf->name);
        return;
    }

    if (llm->kind != AL_LLM_ANTHROPIC) {
        return;
    }

    ep = clcf->error_pages->elts;

    for (i = 0; i < clcf->error_pages->nelts; i++) {
        if (ep[i].status == NGX_HTTP_AIRLOCK_LLM_OVERLOADED) {
            return;
        }
    }

    ngx_log_error(NGX_LOG_WARN, cf->log, 0,
                  "llm \"%s\" has the fallback \"%s\", but location \"%V\" "
                  "does not lead status 529 to it, so the calls its "
                  "provider answers \"overloaded\" never fall back; add 529 "
                  "to \"error_page 429 500 502 503 504 529 = "
                  "@airlock_llm_fallback;\"", llm->name.data,
                  llm->fallback->name.data, &clcf->name);
}


char *
ngx_http_airlock_llm_fallback_conf(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_airlock_llm_loc_conf_t  *llcf = conf;

    if (llcf->fallback) {
        return "is duplicate";
    }

    llcf->fallback = 1;

    return NGX_CONF_OK;
}
