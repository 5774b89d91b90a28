
/*
 * Airlock LLM gateway variables, for proxy_pass, proxy_set_header and
 * log_format:
 *
 *   $airlock_llm_upstream  "https://api.openai.com" (scheme://host[:port])
 *   $airlock_llm_uri       the upstream path and query: the url's base
 *                          path and the endpoint, re-encoded
 *   $airlock_llm_host      the upstream's Host header value
 *   $airlock_llm_provider  the llm entry's name
 *   $airlock_llm_client    the client's name
 *   $airlock_llm_model     the model asked for (allowed ones only)
 *   $airlock_llm_prompt_tokens, $airlock_llm_completion_tokens,
 *   $airlock_llm_total_tokens, $airlock_llm_usage_source
 *                          the usage as accounted (in log_format; before
 *                          the end of the response, as known so far)
 *
 * The first three are set only for allowed requests, and only in an
 * Airlock location: another location (one an error_page leads to) would
 * forward with them a request the gateway did not allow (nginx makes an
 * error_page's POST a GET there).
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_airlock_llm_module.h"


#define NGX_HTTP_AIRLOCK_LLM_VAR_UPSTREAM     0
#define NGX_HTTP_AIRLOCK_LLM_VAR_URI          1
#define NGX_HTTP_AIRLOCK_LLM_VAR_HOST         2
#define NGX_HTTP_AIRLOCK_LLM_VAR_PROVIDER     3
#define NGX_HTTP_AIRLOCK_LLM_VAR_CLIENT       4
#define NGX_HTTP_AIRLOCK_LLM_VAR_MODEL        5

#define NGX_HTTP_AIRLOCK_LLM_VAR_PROMPT       0
#define NGX_HTTP_AIRLOCK_LLM_VAR_COMPLETION   1
#define NGX_HTTP_AIRLOCK_LLM_VAR_TOTAL        2
#define NGX_HTTP_AIRLOCK_LLM_VAR_SOURCE       3


static ngx_int_t ngx_http_airlock_llm_str_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_airlock_llm_usage_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);


static ngx_http_variable_t  ngx_http_airlock_llm_vars[] = {

    { ngx_string("airlock_llm_upstream"), NULL,
      ngx_http_airlock_llm_str_variable, NGX_HTTP_AIRLOCK_LLM_VAR_UPSTREAM,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("airlock_llm_uri"), NULL,
      ngx_http_airlock_llm_str_variable, NGX_HTTP_AIRLOCK_LLM_VAR_URI,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("airlock_llm_host"), NULL,
      ngx_http_airlock_llm_str_variable, NGX_HTTP_AIRLOCK_LLM_VAR_HOST,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("airlock_llm_provider"), NULL,
      ngx_http_airlock_llm_str_variable, NGX_HTTP_AIRLOCK_LLM_VAR_PROVIDER,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("airlock_llm_client"), NULL,
      ngx_http_airlock_llm_str_variable, NGX_HTTP_AIRLOCK_LLM_VAR_CLIENT,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("airlock_llm_model"), NULL,
      ngx_http_airlock_llm_str_variable, NGX_HTTP_AIRLOCK_LLM_VAR_MODEL,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("airlock_llm_prompt_tokens"), NULL,
      ngx_http_airlock_llm_usage_variable, NGX_HTTP_AIRLOCK_LLM_VAR_PROMPT,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("airlock_llm_completion_tokens"), NULL,
      ngx_http_airlock_llm_usage_variable,
      NGX_HTTP_AIRLOCK_LLM_VAR_COMPLETION, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("airlock_llm_total_tokens"), NULL,
      ngx_http_airlock_llm_usage_variable, NGX_HTTP_AIRLOCK_LLM_VAR_TOTAL,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("airlock_llm_usage_source"), NULL,
      ngx_http_airlock_llm_usage_variable, NGX_HTTP_AIRLOCK_LLM_VAR_SOURCE,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};


ngx_int_t
ngx_http_airlock_llm_add_variables(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var, *v;

    for (v = ngx_http_airlock_llm_vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = v->data;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_airlock_llm_str_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_str_t                     s;
    ngx_http_airlock_llm_ctx_t   *ctx;
    ngx_http_airlock_loc_conf_t  *alcf;

    ctx = ngx_http_airlock_llm_get_ctx(r);

    if (ctx == NULL) {
        v->not_found = 1;
        return NGX_OK;
    }

    alcf = ngx_http_get_module_loc_conf(r, ngx_http_airlock_module);

    if (!alcf->forwards
        && (data == NGX_HTTP_AIRLOCK_LLM_VAR_UPSTREAM
            || data == NGX_HTTP_AIRLOCK_LLM_VAR_URI
            || data == NGX_HTTP_AIRLOCK_LLM_VAR_HOST))
    {
        v->not_found = 1;
        return NGX_OK;
    }

    switch (data) {

    case NGX_HTTP_AIRLOCK_LLM_VAR_UPSTREAM:
        if (!ctx->allowed) {
            v->not_found = 1;
            return NGX_OK;
        }

        s = (ctx->served != NULL) ? ctx->served->upstream
                                  : ctx->provider->upstream;
        break;

    case NGX_HTTP_AIRLOCK_LLM_VAR_URI:
        if (!ctx->allowed) {
            v->not_found = 1;
            return NGX_OK;
        }

        s = ctx->uri;
        break;

    case NGX_HTTP_AIRLOCK_LLM_VAR_HOST:
        if (!ctx->allowed) {
            v->not_found = 1;
            return NGX_OK;
        }

        s = (ctx->served != NULL) ? ctx->served->host : ctx->provider->host;
        break;

    case NGX_HTTP_AIRLOCK_LLM_VAR_PROVIDER:
        s.data = (u_char *) ctx->provider->llm->name.data;
        s.len = ctx->provider->llm->name.len;
        break;

    case NGX_HTTP_AIRLOCK_LLM_VAR_CLIENT:
        if (ctx->client == NULL) {
            v->not_found = 1;
            return NGX_OK;
        }

        s.data = (u_char *) ctx->client->name.data;
        s.len = ctx->client->name.len;
        break;

    default: /* NGX_HTTP_AIRLOCK_LLM_VAR_MODEL */
        s = ctx->model;
        break;
    }

    v->len = s.len;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;
    v->data = s.data;

    return NGX_OK;
}


static ngx_int_t
ngx_http_airlock_llm_usage_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    u_char                      *p;
    uint64_t                     n;
    const char                  *name;
    al_llm_usage_t               u;
    al_llm_source_t              source;
    ngx_http_airlock_llm_ctx_t  *ctx;

    ctx = ngx_http_airlock_llm_get_ctx(r);

    if (ctx == NULL || !ctx->allowed) {
        v->not_found = 1;
        return NGX_OK;
    }

    if (ctx->accounted) {
        u = ctx->usage;
        source = ctx->source;

    } else {
        ngx_http_airlock_llm_usage(ctx, &u, &source);
    }

    if (data == NGX_HTTP_AIRLOCK_LLM_VAR_SOURCE) {
        name = al_llm_source_name(source);

        v->len = ngx_strlen(name);
        v->valid = 1;
        v->no_cacheable = 1;
        v->not_found = 0;
        v->data = (u_char *) name;

        return NGX_OK;
    }

    switch (data) {

    case NGX_HTTP_AIRLOCK_LLM_VAR_PROMPT:
        n = u.prompt_tokens;
        break;

    case NGX_HTTP_AIRLOCK_LLM_VAR_COMPLETION:
        n = u.completion_tokens;
        break;

    default: /* NGX_HTTP_AIRLOCK_LLM_VAR_TOTAL */
        n = u.total_tokens;
        break;
    }

    p = ngx_pnalloc(r->pool, NGX_INT64_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }

    v->len = ngx_sprintf(p, "%uL", n) - p;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;
    v->data = p;

    return NGX_OK;
}
