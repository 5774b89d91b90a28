
/*
 * Airlock: the Airlock-Denial header, ngx_http_airlock_denial_module.
 *
 * Clients (the agent, the worker) take a 403 with one "Airlock-Denial:
 * REASON" header for the proxy's word that it refused the request, so
 * only the proxy may send one.  The modules set it on the refusals they
 * answer themselves (ngx_http_airlock_denial_set()); this module sees
 * that no other answer carries it:
 *
 *   - its header filter removes every Airlock-Denial header the modules
 *     did not set: an upstream's, add_header's, another module's.  It
 *     runs right after nginx's headers filter (add_header, add_trailer),
 *     and so after every filter that can add a header an operator names;
 *     the scrubbing filters keep their own place;
 *   - its body filter removes every Airlock-Denial trailer as the last
 *     buffer passes: the upstream's trailers are there only then (a gRPC
 *     upstream's; from nginx 1.27.2 an HTTP one's with
 *     "proxy_pass_trailers on"), long after the header filter ran;
 *   - "add_header Airlock-Denial" and "add_trailer Airlock-Denial" fail
 *     nginx -t, naming their file and line: this module has add_header
 *     and add_trailer directives of its own, which nginx finds before the
 *     headers filter's, that refuse the name and hand any other to the
 *     headers filter's own directive, with that module's configuration.
 *
 * Both rest on the module's place in the module list: just before
 * ngx_http_headers_filter_module (ngx_module_order, modules/config).  A
 * module list where it is not fails nginx -t.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_airlock_module.h"


static char *ngx_http_airlock_denial_add(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static ngx_int_t ngx_http_airlock_denial_preconf(ngx_conf_t *cf);
static ngx_int_t ngx_http_airlock_denial_init(ngx_conf_t *cf);
static ngx_int_t ngx_http_airlock_denial_header_filter(ngx_http_request_t *r);
static ngx_int_t ngx_http_airlock_denial_body_filter(ngx_http_request_t *r,
    ngx_chain_t *in);
static void ngx_http_airlock_denial_strip(ngx_http_request_t *r,
    ngx_list_part_t *part, const char *what);


/* nginx declares it in no header; nginx exports it to dynamic modules */
extern ngx_module_t  ngx_http_headers_filter_module;


/*
 * The headers filter's directives, with its flags (the same from nginx
 * 1.22 to 1.31, checked at start); ngx_http_airlock_denial_add() passes
 * them on.
 */
static ngx_command_t  ngx_http_airlock_denial_commands[] = {

    { ngx_string("add_header"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_HTTP_LIF_CONF
                        |NGX_CONF_TAKE23,
      ngx_http_airlock_denial_add,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("add_trailer"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_HTTP_LIF_CONF
                        |NGX_CONF_TAKE23,
      ngx_http_airlock_denial_add,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_airlock_denial_module_ctx = {
    ngx_http_airlock_denial_preconf,       /* preconfiguration */
    ngx_http_airlock_denial_init,          /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL                                   /* merge location configuration */
};


ngx_module_t  ngx_http_airlock_denial_module = {
    NGX_MODULE_V1,
    &ngx_http_airlock_denial_module_ctx,   /* module context */
    ngx_http_airlock_denial_commands,      /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


/*
 * The name of the Airlock-Denial header the modules set.  A header of
 * the answer is theirs when its key is this very string: nothing else
 * points at it, whatever its name.
 */
static ngx_str_t  ngx_http_airlock_denial_key = ngx_string(AL_DENIAL_HEADER);


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;
static ngx_http_output_body_filter_pt    ngx_http_next_body_filter;


/*
 * add_header and add_trailer: the name Airlock-Denial, in any case, is
 * refused; anything else is the headers filter's directive, run as
 * ngx_conf_handler() would have run it.
 */

static char *
ngx_http_airlock_denial_add(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    void           **confp;
    ngx_str_t       *value;
    ngx_command_t   *c;

    value = cf->args->elts;

    if (value[1].len == sizeof(AL_DENIAL_HEADER) - 1
        && ngx_strncasecmp(value[1].data, (u_char *) AL_DENIAL_HEADER,
                           sizeof(AL_DENIAL_HEADER) - 1)
           == 0)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V %V\" is not allowed: only the proxy's "
                           "own refusals carry \"" AL_DENIAL_HEADER "\"",
                           &value[0], &value[1]);
        return NGX_CONF_ERROR;
    }

    c = ngx_http_headers_filter_module.commands;

    for ( /* void */ ; c != NULL && c->name.len; c++) {

        if (c->name.len != cmd->name.len
            || ngx_strncmp(c->name.data, cmd->name.data, cmd->name.len) != 0)
        {
            continue;
        }

        confp = *(void **) ((char *) cf->ctx + c->conf);

        if (confp == NULL) {
            break;
        }

        return c->set(cf, c, confp[ngx_http_headers_filter_module.ctx_index]);
    }

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "airlock: nginx's headers filter has no \"%V\" "
                       "directive to pass \"%V\" on to",
                       &cmd->name, &value[1]);

    return NGX_CONF_ERROR;
}


/*
 * The module must come before the headers filter in the module list: its
 * add_header is then the one nginx runs, and its header filter runs
 * after the headers filter's.  And its directives must be allowed where
 * the headers filter's are, with as many arguments: where only nginx's
 * were, nginx would run them instead, unchecked.
 */

static ngx_int_t
ngx_http_airlock_denial_preconf(ngx_conf_t *cf)
{
    ngx_uint_t      m;
    ngx_module_t   *module;
    ngx_command_t  *cmd, *c;

    module = NULL;

    for (m = 0; cf->cycle->modules[m] != NULL; m++) {
        module = cf->cycle->modules[m];

        if (module == &ngx_http_airlock_denial_module
            || module == &ngx_http_headers_filter_module)
        {
            break;
        }
    }

    if (module != &ngx_http_airlock_denial_module) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "airlock: ngx_http_airlock_denial_module is not "
                           "before ngx_http_headers_filter_module in the "
                           "module list: add_header could forge \""
                           AL_DENIAL_HEADER "\"");
        return NGX_ERROR;
    }

    for (cmd = ngx_http_airlock_denial_commands; cmd->name.len; cmd++) {

        for (c = ngx_http_headers_filter_module.commands;
             c != NULL && c->name.len;
             c++)
        {
            if (c->name.len == cmd->name.len
                && ngx_strncmp(c->name.data, cmd->name.data, cmd->name.len)
                   == 0)
            {
                break;
            }
        }

        if (c != NULL && c->name.len && c->type != cmd->type) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "airlock: nginx's \"%V\" is allowed in "
                               "other places or with other arguments "
                               "than the one the module runs in its "
                               "place: this nginx is not supported",
                               &cmd->name);
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_airlock_denial_init(ngx_conf_t *cf)
{
    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_airlock_denial_header_filter;

    ngx_http_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = ngx_http_airlock_denial_body_filter;

    return NGX_OK;
}


/*
 * Whatever the location, the request or the answer: an error_page or a
 * named location may take any of them to an upstream.
 */

static ngx_int_t
ngx_http_airlock_denial_header_filter(ngx_http_request_t *r)
{
    ngx_http_airlock_denial_strip(r, &r->headers_out.headers.part,
                                  "header");

    return ngx_http_next_header_filter(r);
}


/*
 * The trailers are complete when the last buffer passes.  Most answers
 * have none: the list's first part is empty, the chain is not walked.
 */

static ngx_int_t
ngx_http_airlock_denial_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    ngx_chain_t  *cl;

    if (r->headers_out.trailers.part.nelts == 0) {
        return ngx_http_next_body_filter(r, in);
    }

    for (cl = in; cl; cl = cl->next) {
        if (cl->buf->last_buf) {
            ngx_http_airlock_denial_strip(r, &r->headers_out.trailers.part,
                                          "trailer");
            break;
        }
    }

    return ngx_http_next_body_filter(r, in);
}


/*
 * Marks the answer being made as the proxy's refusal: "Airlock-Denial:
 * REASON", the reason its body names.
 */

ngx_int_t
ngx_http_airlock_denial_set(ngx_http_request_t *r, al_reason_t reason)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
    h->key = ngx_http_airlock_denial_key;
    h->value.data = (u_char *) al_reason_name(reason);
    h->value.len = ngx_strlen(h->value.data);
#if (NGX_HTTP_AIRLOCK_LINKED_HEADERS)
    h->next = NULL;
#endif

    return NGX_OK;
}


/*
 * Every Airlock-Denial header (or trailer) of the answer that the modules
 * did not set is removed: an upstream's (proxy_pass_header or not),
 * add_header's, another module's.
 */

static void
ngx_http_airlock_denial_strip(ngx_http_request_t *r, ngx_list_part_t *part,
    const char *what)
{
    ngx_uint_t        i;
    ngx_table_elt_t  *h;

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

        if (h[i].hash == 0
            || h[i].key.len != sizeof(AL_DENIAL_HEADER) - 1
            || h[i].key.data == ngx_http_airlock_denial_key.data
            || ngx_strncasecmp(h[i].key.data, (u_char *) AL_DENIAL_HEADER,
                               sizeof(AL_DENIAL_HEADER) - 1)
               != 0)
        {
            continue;
        }

        h[i].hash = 0;

        ngx_http_airlock_log_error(NGX_LOG_WARN, r->connection->log, 0,
                                   "airlock: \"%V\" %s of an answer not the "
                                   "proxy's refusal removed%s", &h[i].key, what,
                                   r->upstream ? " (from the upstream)" : "");
    }
}
