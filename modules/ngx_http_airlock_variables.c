
/*
 * Airlock variables: what the decision found, for proxy_pass,
 * proxy_set_header and log_format.
 *
 *   $airlock_upstream    "https://api.github.com" (scheme://host[:port])
 *   $airlock_uri         the upstream path and query, built by libairlock
 *                        from the normalized request
 *   $airlock_host        the upstream's Host header value
 *   $airlock_client      client name
 *   $airlock_route       route name
 *   $airlock_reason      deny reason; not found when allowed
 *   $airlock_request_id  the request id in the JSON answers ($request_id)
 *   $airlock_scrubbed    "1" once a credential was scrubbed, else "0"
 *
 * The first three are the decision's target, for the Airlock location
 * that forwards it: they are not found in any other location (one an
 * error_page or a named location leads to), whose proxy_pass would send
 * the route's upstream a request the policy did not match (nginx makes
 * an error_page's POST a GET there).
 *
 * And nginx's own $upstream_http_NAME, $upstream_trailer_NAME and
 * $upstream_cookie_NAME, scrubbed: see ngx_http_airlock_wrap_variables().
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_airlock_module.h"


static ngx_int_t ngx_http_airlock_upstream_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_airlock_uri_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_airlock_host_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_airlock_client_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_airlock_route_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_airlock_reason_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_airlock_request_id_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_airlock_scrubbed_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_airlock_answer_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_http_airlock_ctx_t *ngx_http_airlock_target_ctx(
    ngx_http_request_t *r);
static void ngx_http_airlock_set(ngx_http_variable_value_t *v, u_char *data,
    size_t len);


static ngx_http_variable_t  ngx_http_airlock_vars[] = {

    { ngx_string("airlock_upstream"), NULL,
      ngx_http_airlock_upstream_variable, 0, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("airlock_uri"), NULL,
      ngx_http_airlock_uri_variable, 0, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("airlock_host"), NULL,
      ngx_http_airlock_host_variable, 0, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("airlock_client"), NULL,
      ngx_http_airlock_client_variable, 0, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("airlock_route"), NULL,
      ngx_http_airlock_route_variable, 0, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("airlock_reason"), NULL,
      ngx_http_airlock_reason_variable, 0, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("airlock_request_id"), NULL,
      ngx_http_airlock_request_id_variable, 0, 0, 0 },

    { ngx_string("airlock_scrubbed"), NULL,
      ngx_http_airlock_scrubbed_variable, 0, NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};


ngx_int_t
ngx_http_airlock_add_variables(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var, *v;

    for (v = ngx_http_airlock_vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = v->data;
    }

    return NGX_OK;
}


/*
 * nginx's $upstream_http_NAME, $upstream_trailer_NAME and $upstream_cookie_NAME
 * read the upstream's answer as it came, before the scrubber: an add_header,
 * add_trailer, log_format or map that used one would hand on, unscrubbed, a
 * credential the upstream echoed in a header.  Their prefix variables get a
 * handler that scrubs what nginx's own returns.  It is put in before nginx
 * gives each indexed variable its handler (ngx_http_variables_init_vars()
 * runs after every module's postconfiguration), and a variable looked up by
 * name at run time goes through the prefix variable itself.
 */

ngx_int_t
ngx_http_airlock_wrap_variables(ngx_conf_t *cf,
    ngx_http_airlock_main_conf_t *amcf)
{
    ngx_uint_t                  i, k, n;
    ngx_http_variable_t        *pv;
    ngx_http_airlock_wrap_t    *w;
    ngx_http_core_main_conf_t  *cmcf;

    static ngx_str_t  prefixes[] = {
        ngx_string("upstream_http_"),
        ngx_string("upstream_trailer_"),
        ngx_string("upstream_cookie_")
    };

    n = sizeof(prefixes) / sizeof(prefixes[0]);

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    pv = cmcf->prefix_variables.elts;

    /* nginx keeps one prefix variable a name: each is wrapped once */

    for (i = 0; i < cmcf->prefix_variables.nelts && amcf->nwrap < n; i++) {
        for (k = 0; k < n; k++) {
            if (pv[i].name.len == prefixes[k].len
                && ngx_strncmp(pv[i].name.data, prefixes[k].data,
                               prefixes[k].len) == 0)
            {
                break;
            }
        }

        if (k == n) {
            continue;
        }

        w = &amcf->wrap[amcf->nwrap++];
        w->prefix = prefixes[k];
        w->handler = pv[i].get_handler;

        pv[i].get_handler = ngx_http_airlock_answer_variable;
    }

    return NGX_OK;
}


/* data: the variable's whole name, as nginx gives a prefix variable */

static ngx_int_t
ngx_http_airlock_answer_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_int_t                      rc;
    ngx_str_t                     *name;
    ngx_uint_t                     i;
    ngx_http_airlock_wrap_t       *w;
    ngx_http_airlock_main_conf_t  *amcf;

    name = (ngx_str_t *) data;
    amcf = ngx_http_get_module_main_conf(r, ngx_http_airlock_module);

    for (i = 0; i < amcf->nwrap; i++) {
        w = &amcf->wrap[i];

        if (name->len >= w->prefix.len
            && ngx_strncmp(name->data, w->prefix.data, w->prefix.len) == 0)
        {
            rc = w->handler(r, v, data);

            if (rc != NGX_OK || v->not_found) {
                return rc;
            }

            return ngx_http_airlock_scrub_variable(r, v);
        }
    }

    v->not_found = 1;

    return NGX_OK;
}


static ngx_int_t
ngx_http_airlock_upstream_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_airlock_ctx_t  *ctx;

    ctx = ngx_http_airlock_target_ctx(r);

    if (ctx == NULL) {
        v->not_found = 1;
        return NGX_OK;
    }

    ngx_http_airlock_set(v, ctx->rconf->upstream.data,
                         ctx->rconf->upstream.len);

    return NGX_OK;
}


static ngx_int_t
ngx_http_airlock_uri_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_airlock_ctx_t  *ctx;

    ctx = ngx_http_airlock_target_ctx(r);

    if (ctx == NULL) {
        v->not_found = 1;
        return NGX_OK;
    }

    ngx_http_airlock_set(v, ctx->uri.data, ctx->uri.len);

    return NGX_OK;
}


static ngx_int_t
ngx_http_airlock_host_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_airlock_ctx_t  *ctx;

    ctx = ngx_http_airlock_target_ctx(r);

    if (ctx == NULL) {
        v->not_found = 1;
        return NGX_OK;
    }

    ngx_http_airlock_set(v, (u_char *) ctx->route->upstream->host.data,
                         ctx->route->upstream->host.len);

    return NGX_OK;
}


static ngx_int_t
ngx_http_airlock_client_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_airlock_ctx_t  *ctx;

    ctx = ngx_http_airlock_get_ctx(r);

    if (ctx == NULL || ctx->client == NULL) {
        v->not_found = 1;
        return NGX_OK;
    }

    ngx_http_airlock_set(v, (u_char *) ctx->client->name.data,
                         ctx->client->name.len);

    return NGX_OK;
}


static ngx_int_t
ngx_http_airlock_route_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_airlock_ctx_t  *ctx;

    ctx = ngx_http_airlock_get_ctx(r);

    if (ctx == NULL || ctx->route == NULL) {
        v->not_found = 1;
        return NGX_OK;
    }

    ngx_http_airlock_set(v, (u_char *) ctx->route->name.data,
                         ctx->route->name.len);

    return NGX_OK;
}


static ngx_int_t
ngx_http_airlock_reason_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    const char              *name;
    ngx_http_airlock_ctx_t  *ctx;

    ctx = ngx_http_airlock_get_ctx(r);

    if (ctx == NULL || !ctx->decided || ctx->reason == AL_REASON_NONE) {
        v->not_found = 1;
        return NGX_OK;
    }

    name = al_reason_name(ctx->reason);

    ngx_http_airlock_set(v, (u_char *) name, ngx_strlen(name));

    return NGX_OK;
}


static ngx_int_t
ngx_http_airlock_request_id_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_str_t  id;

    if (ngx_http_airlock_request_id(r, &id) != NGX_OK) {
        v->not_found = 1;
        return NGX_OK;
    }

    ngx_http_airlock_set(v, id.data, id.len);

    return NGX_OK;
}


static ngx_int_t
ngx_http_airlock_scrubbed_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_airlock_ctx_t  *ctx;

    ctx = ngx_http_airlock_get_ctx(r);

    if (ctx == NULL) {
        v->not_found = 1;
        return NGX_OK;
    }

    ngx_http_airlock_set(v, (u_char *) (ctx->scrubbed ? "1" : "0"), 1);

    return NGX_OK;
}


/*
 * An allowed request's context, in a location that forwards it (an
 * Airlock location: ngx_http_airlock_conf_check()); NULL anywhere else.
 */

static ngx_http_airlock_ctx_t *
ngx_http_airlock_target_ctx(ngx_http_request_t *r)
{
    ngx_http_airlock_ctx_t       *ctx;
    ngx_http_airlock_loc_conf_t  *alcf;

    alcf = ngx_http_get_module_loc_conf(r, ngx_http_airlock_module);

    if (!alcf->forwards) {
        return NULL;
    }

    ctx = ngx_http_airlock_get_ctx(r);

    if (ctx == NULL || !ctx->allowed) {
        return NULL;
    }

    return ctx;
}


static void
ngx_http_airlock_set(ngx_http_variable_value_t *v, u_char *data, size_t len)
{
    v->len = len;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;
    v->data = data;
}
