
/*
 * Airlock: what the rest of nginx's configuration may not do in an
 * Airlock location (one with "airlock on" or "airlock_llm").
 *
 * The policy decides a request, but directives of other modules in the same
 * location could still undo the decision without a word: a proxy_set_header
 * that replaces the injected credential or passes the client's, a proxy_pass
 * that ignores the URI the route built, realip choosing the client's address
 * from a header, an upstream steering nginx with X-Accel-* headers, a
 * proxy_set_body, proxy_method or "proxy_pass_request_body off" that sends
 * another body or method than the one the route matched, a proxy_set_header
 * that frames or types the checked body otherwise (Content-Length,
 * Transfer-Encoding, Content-Type, Content-Encoding; "proxy_pass_request_
 * headers off", which sends it untyped), names another Host than
 * the route's upstream or another method or path (override headers), lets the
 * client choose the site (X-Forwarded-Host, Forwarded, X-Host,
 * X-Forwarded-Prefix...) or the TLS name (proxy_ssl_name) the upstream is
 * reached by, an https upstream whose certificate is not checked
 * (proxy_ssl_verify off), a response buffered to a temporary file with the
 * credential an upstream echoed in it, or, with LLM entries in the policy,
 * a retry that resends a call its provider was sent and loses the usage
 * of the answer it drops (proxy_next_upstream non_idempotent).  Each
 * location of the two modules is checked when it is merged, after every
 * static module (the proxy and realip modules among them) has merged its
 * own configuration, and "nginx -t" refuses what would undo the policy,
 * naming the location.
 * Temporary files are not refused but made impossible: the location's
 * proxy_max_temp_file_size is set to 0 unless the operator set another
 * value, which is refused.
 *
 * Only the proxy module forwards from an Airlock location.  The injected
 * credentials are removed headers (hash 0) of the request: the proxy
 * module sends them, and so would scgi_pass, fastcgi_pass, uwsgi_pass,
 * grpc_pass or any other module's content handler, to a backend the route
 * never named.  The location's handler must be the proxy module's, the
 * one of airlock_error_json, or none (a "return").  nginx keeps the
 * handlers static: the proxy module's is learnt once per configuration
 * by running its own "proxy_pass" in a scratch location, and a refused
 * one is named the same way, by the known directive that installs it.
 *
 * Output filters run after the scrubber, the first body filter, and what
 * they print reaches the client as it is: SSI, which obeys commands in
 * the upstream's answer (an answer may echo the client's body) and
 * prints any variable, and a sub_filter whose replacement has a variable
 * are refused.  ($upstream_http_NAME and its like are scrubbed where they
 * are read: ngx_http_airlock_wrap_variables().)
 *
 * The proxy module's location configuration is private to it before nginx
 * 1.29.4 (ngx_http_proxy_module.h since); its head, the part read here,
 * has the same layout from 1.22 to 1.29.3 and is declared below for those
 * versions.  The realip module's location configuration starts with its
 * "from" list in every version.
 *
 * The file also holds the worker's process hardening (init_process).
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <sys/prctl.h>

#include "ngx_http_airlock_module.h"


#if (nginx_version >= 1029004)

#include <ngx_http_proxy_module.h>

typedef ngx_http_proxy_loc_conf_t  ngx_http_airlock_proxy_conf_t;

#elif (nginx_version >= 1022000)

typedef struct {
    ngx_array_t                   *flushes;
    ngx_array_t                   *lengths;
    ngx_array_t                   *values;
    ngx_hash_t                     hash;
} ngx_http_airlock_proxy_headers_t;


/* the head of ngx_http_proxy_loc_conf_t, nginx 1.22.0 to 1.29.3 */
typedef struct {
    ngx_http_upstream_conf_t       upstream;

    ngx_array_t                   *body_flushes;
    ngx_array_t                   *body_lengths;
    ngx_array_t                   *body_values;
    ngx_str_t                      body_source;

    ngx_http_airlock_proxy_headers_t  headers;
#if (NGX_HTTP_CACHE)
    ngx_http_airlock_proxy_headers_t  headers_cache;
#endif
    ngx_array_t                   *headers_source;

    ngx_array_t                   *proxy_lengths;
    ngx_array_t                   *proxy_values;

    ngx_array_t                   *redirects;
    ngx_array_t                   *cookie_domains;
    ngx_array_t                   *cookie_paths;
    ngx_array_t                   *cookie_flags;

    ngx_http_complex_value_t      *method;
} ngx_http_airlock_proxy_conf_t;

#else
#error "ngx_http_airlock_conf.c needs nginx 1.22 or later"
#endif


/* the head of ngx_http_realip_loc_conf_t */
typedef struct {
    ngx_array_t                   *from;        /* set_real_ip_from */
} ngx_http_airlock_realip_conf_t;


/* the head of ngx_http_sub_loc_conf_t, and its pair: nginx 1.9.4 to 1.31 */
typedef struct {
    ngx_uint_t                     dynamic;
    ngx_array_t                   *pairs;       /* sub_filter */
} ngx_http_airlock_sub_conf_t;


typedef struct {
    ngx_http_complex_value_t       match;
    ngx_http_complex_value_t       value;
} ngx_http_airlock_sub_pair_t;


/* a header proxy_set_header may not set in an Airlock location, and why */
typedef struct {
    ngx_str_t                      name;        /* lower case */
    const char                    *why;
} ngx_http_airlock_conf_header_t;


/* a directive that installs a content handler, and an argument for it */
typedef struct {
    const char                    *module;
    const char                    *directive;
    const char                    *arg;
} ngx_http_airlock_conf_content_t;


#define NGX_HTTP_AIRLOCK_IGN_XA  (NGX_HTTP_UPSTREAM_IGN_XA_REDIRECT       \
                                  |NGX_HTTP_UPSTREAM_IGN_XA_EXPIRES       \
                                  |NGX_HTTP_UPSTREAM_IGN_XA_LIMIT_RATE    \
                                  |NGX_HTTP_UPSTREAM_IGN_XA_BUFFERING     \
                                  |NGX_HTTP_UPSTREAM_IGN_XA_CHARSET)


static char *ngx_http_airlock_conf_handler(ngx_conf_t *cf, ngx_str_t *where,
    ngx_http_core_loc_conf_t *clcf);
static char *ngx_http_airlock_conf_filters(ngx_conf_t *cf, ngx_str_t *where);
static char *ngx_http_airlock_conf_proxy(ngx_conf_t *cf, ngx_str_t *where,
    ngx_http_airlock_proxy_conf_t *pcf);
static char *ngx_http_airlock_conf_resend(ngx_conf_t *cf, ngx_str_t *where,
    ngx_http_airlock_proxy_conf_t *pcf);
static char *ngx_http_airlock_conf_handler_of(ngx_conf_t *cf,
    const char *module, const char *directive, const char *arg,
    ngx_http_handler_pt *handler);
static ngx_module_t *ngx_http_airlock_conf_module(ngx_conf_t *cf,
    const char *name);
static ngx_command_t *ngx_http_airlock_conf_command(ngx_module_t *m,
    const char *name);
static ngx_uint_t ngx_http_airlock_conf_header_denied(ngx_conf_t *cf,
    ngx_str_t *name);
static ngx_uint_t ngx_http_airlock_conf_listed(ngx_str_t *name,
    ngx_str_t *list);
static ngx_uint_t ngx_http_airlock_conf_header_listed(ngx_str_t *name,
    ngx_str_t *list);
static ngx_uint_t ngx_http_airlock_conf_header_is(ngx_str_t *name,
    u_char *lower, size_t len);
static const char *ngx_http_airlock_conf_header_why(ngx_str_t *name);
static ngx_uint_t ngx_http_airlock_conf_host(ngx_str_t *value);
static ngx_uint_t ngx_http_airlock_conf_site(ngx_str_t *name);
static ngx_uint_t ngx_http_airlock_conf_https(ngx_conf_t *cf);
static const char *ngx_http_airlock_conf_client_var(ngx_str_t *value,
    ngx_str_t *var, ngx_uint_t forwarded);
static ngx_uint_t ngx_http_airlock_conf_for(u_char *start, u_char *dollar);
static ngx_uint_t ngx_http_airlock_conf_proxy_pass(ngx_conf_t *cf,
    ngx_array_t *values);
static ngx_uint_t ngx_http_airlock_conf_is_var(ngx_conf_t *cf,
    ngx_uint_t index, const char *a, const char *b);
static ngx_str_t *ngx_http_airlock_conf_far(
    ngx_http_upstream_srv_conf_t *uscf);


/* client credential headers an Airlock location never sets itself */
static ngx_str_t  ngx_http_airlock_conf_headers[] = {
    ngx_string("authorization"),
    ngx_string("proxy-authorization"),
    ngx_string("cookie"),
    ngx_string("x-api-key"),
    ngx_string("api-key"),
    ngx_null_string
};


/*
 * Headers that would have the upstream read another request than the one
 * decided.  The proxy module frames the body Airlock checked with a
 * Content-Length of its own, and the body was checked as the client's (or
 * the route's injected) Content-Type says, in the bytes as sent.  The
 * method and path override headers, refused from clients, would change
 * the method or path the upstream's framework routes on.
 */
static ngx_http_airlock_conf_header_t  ngx_http_airlock_conf_forwarded[] = {
    { ngx_string("content-length"),
      "nginx frames the body it forwards; another length would have the "
      "upstream read the rest of the body as a request of its own, which "
      "the policy never saw" },
    { ngx_string("transfer-encoding"),
      "nginx frames the body it forwards; another framing would have the "
      "upstream read the rest of the body as a request of its own, which "
      "the policy never saw" },
    { ngx_string("content-type"),
      "the body was checked as the client's Content-Type (or the one the "
      "route injects) says; the upstream would read it as another type" },
    { ngx_string("content-encoding"),
      "the body was checked as the bytes sent; the upstream would read "
      "what they decode to, which no check saw" },
    { ngx_string("x-http-method-override"),
      "the upstream would read another method than the one the route "
      "matched" },
    { ngx_string("x-http-method"),
      "the upstream would read another method than the one the route "
      "matched" },
    { ngx_string("x-method-override"),
      "the upstream would read another method than the one the route "
      "matched" },
    { ngx_string("x-original-url"),
      "the upstream would route on another path than the one the route "
      "built" },
    { ngx_string("x-rewrite-url"),
      "the upstream would route on another path than the one the route "
      "built" },
    { ngx_null_string, NULL }
};


/*
 * The content handlers of other modules that would forward the request,
 * by the directive that installs them, to name a refused location's own;
 * each runs with the argument given (a variable where the directive takes
 * one: no upstream block is added) only on the way to a refusal.
 */
static ngx_http_airlock_conf_content_t  ngx_http_airlock_conf_contents[] = {
    { "ngx_http_scgi_module", "scgi_pass", "$airlock_upstream" },
    { "ngx_http_fastcgi_module", "fastcgi_pass", "$airlock_upstream" },
    { "ngx_http_uwsgi_module", "uwsgi_pass", "$airlock_upstream" },
    { "ngx_http_grpc_module", "grpc_pass", "$airlock_upstream" },
    { "ngx_http_memcached_module", "memcached_pass", "127.0.0.1:11211" },
    { NULL, NULL, NULL }
};


char *
ngx_http_airlock_conf_check(ngx_conf_t *cf, ngx_http_core_loc_conf_t *clcf)
{
    char                            *rv;
    ngx_str_t                        where;
    ngx_http_airlock_loc_conf_t     *alcf;
    ngx_http_airlock_srv_conf_t     *ascf;
    ngx_http_airlock_proxy_conf_t   *pcf;
    ngx_http_airlock_realip_conf_t  *rcf;

    /* the server's refused requests are counted (ngx_http_airlock_refused.c) */
    ascf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_airlock_module);
    ascf->airlock = 1;

    /*
     * A request keeps the credentials it was given only in a location of
     * the two modules; elsewhere they are taken out of its headers
     * (ngx_http_airlock_drop_credentials()).
     */
    alcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_airlock_module);
    alcf->forwards = 1;

    if (clcf->name.len) {
        where = clcf->name;

    } else {
        ngx_str_set(&where, "(server level)");
    }

    rcf = ngx_http_airlock_conf_of(cf, "ngx_http_realip_module");

    if (rcf != NULL && rcf->from != NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "airlock location \"%V\" has \"set_real_ip_from\": "
                      "realip would let a request header choose the client "
                      "address; Airlock identifies clients by the "
                      "connection", &where);
        return NGX_CONF_ERROR;
    }

    rv = ngx_http_airlock_conf_handler(cf, &where, clcf);
    if (rv != NGX_CONF_OK) {
        return rv;
    }

    rv = ngx_http_airlock_conf_filters(cf, &where);
    if (rv != NGX_CONF_OK) {
        return rv;
    }

    pcf = ngx_http_airlock_conf_of(cf, "ngx_http_proxy_module");

    if (pcf == NULL) {
        return NGX_CONF_OK;
    }

    rv = ngx_http_airlock_conf_proxy(cf, &where, pcf);
    if (rv != NGX_CONF_OK) {
        return rv;
    }

    return ngx_http_airlock_conf_resend(cf, &where, pcf);
}


/* another module's configuration of the location being merged, by name */

void *
ngx_http_airlock_conf_of(ngx_conf_t *cf, const char *name)
{
    ngx_module_t          *m;
    ngx_http_conf_ctx_t   *ctx;

    m = ngx_http_airlock_conf_module(cf, name);

    if (m == NULL) {
        return NULL;
    }

    ctx = cf->ctx;

    return ctx->loc_conf[m->ctx_index];
}


/*
 * An Airlock location of a policy with LLM entries (a gateway location,
 * the fallback's, or one of named routes an error_page may lead a
 * gateway call to, which forwards it to its provider) may not have nginx
 * send a call the provider was sent to the next server of the upstream:
 * the first answer, an error that may carry the usage the provider
 * billed, is dropped with its body, or there was none (the connection
 * lost after the call went), and the call would be settled with the
 * last server's usage alone.  For a POST, every call the gateway
 * charges, nginx does that only with "non_idempotent" among the
 * proxy_next_upstream conditions (ngx_http_upstream_test_next(),
 * ngx_http_upstream_next()); without it a call is retried only before
 * it was sent (a refused connect), which costs nothing.  The gateway's
 * fallback sends a failed call again and charges each attempt.
 */

static char *
ngx_http_airlock_conf_resend(ngx_conf_t *cf, ngx_str_t *where,
    ngx_http_airlock_proxy_conf_t *pcf)
{
    ngx_http_airlock_main_conf_t  *amcf;

    if (!(pcf->upstream.next_upstream & NGX_HTTP_UPSTREAM_FT_NON_IDEMPOTENT)) {
        return NGX_CONF_OK;
    }

    amcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_airlock_module);

    if (amcf->policy == NULL || amcf->policy->nllm == 0) {
        return NGX_CONF_OK;
    }

    ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                  "airlock location \"%V\" has \"proxy_next_upstream "
                  "non_idempotent\" (here or inherited): nginx would send "
                  "an LLM call its provider was sent to the next server and "
                  "drop the first answer, with the usage it carries, so "
                  "the budget would not count what the first server billed; "
                  "use the entry's \"fallback\", which charges each attempt",
                  where);

    return NGX_CONF_ERROR;
}


/*
 * The location's content handler: the proxy module's, airlock_error_json's
 * or none.  Any other would forward the request with the credentials.
 */

static char *
ngx_http_airlock_conf_handler(ngx_conf_t *cf, ngx_str_t *where,
    ngx_http_core_loc_conf_t *clcf)
{
    ngx_http_handler_pt               h;
    ngx_http_airlock_main_conf_t     *amcf;
    ngx_http_airlock_conf_content_t  *c;

    if (clcf->handler == NULL
        || clcf->handler == ngx_http_airlock_error_handler)
    {
        return NGX_CONF_OK;
    }

    amcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_airlock_module);

    if (!amcf->proxy_known) {
        if (ngx_http_airlock_conf_handler_of(cf, "ngx_http_proxy_module",
                                             "proxy_pass",
                                             "$airlock_upstream$airlock_uri",
                                             &amcf->proxy_handler)
            != NGX_CONF_OK)
        {
            return NGX_CONF_ERROR;
        }

        amcf->proxy_known = 1;
    }

    if (clcf->handler == amcf->proxy_handler) {
        return NGX_CONF_OK;
    }

    for (c = ngx_http_airlock_conf_contents; c->module != NULL; c++) {
        if (ngx_http_airlock_conf_handler_of(cf, c->module, c->directive,
                                             c->arg, &h)
            != NGX_CONF_OK)
        {
            return NGX_CONF_ERROR;
        }

        if (h == clcf->handler) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "airlock location \"%V\" has \"%s\": only "
                          "proxy_pass forwards from an Airlock location; "
                          "this would send the injected credentials to its "
                          "own backend", where, c->directive);
            return NGX_CONF_ERROR;
        }
    }

    ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                  "airlock location \"%V\" has a content handler other "
                  "than \"proxy_pass\" or \"airlock_error_json\": only "
                  "proxy_pass forwards from an Airlock location; another "
                  "module could send the injected credentials elsewhere",
                  where);

    return NGX_CONF_ERROR;
}


/*
 * Output filters after the scrubber that could print a credential: SSI
 * (commands come from the upstream's answer), a sub_filter replacement
 * with a variable.  A fixed replacement prints only what the operator
 * wrote; add_before_body and add_after_body print a subrequest's answer,
 * and a subrequest gets no credential (ngx_http_airlock_drop_credentials())
 * and cannot enter an Airlock location.
 */

static char *
ngx_http_airlock_conf_filters(ngx_conf_t *cf, ngx_str_t *where)
{
    ngx_uint_t                    i;
    ngx_flag_t                   *ssi;
    ngx_module_t                 *m;
    ngx_command_t                *cmd;
    ngx_http_conf_ctx_t          *ctx;
    ngx_http_airlock_sub_conf_t  *scf;
    ngx_http_airlock_sub_pair_t  *pair;

    /* "ssi" is a flag slot: its offset says where the module keeps it */

    m = ngx_http_airlock_conf_module(cf, "ngx_http_ssi_filter_module");
    cmd = (m != NULL) ? ngx_http_airlock_conf_command(m, "ssi") : NULL;

    if (cmd != NULL) {
        if (cmd->set != ngx_conf_set_flag_slot
            || cmd->conf != NGX_HTTP_LOC_CONF_OFFSET)
        {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "airlock: the \"ssi\" directive is not a flag of "
                          "the location as in nginx " NGINX_VERSION "'s "
                          "sources");
            return NGX_CONF_ERROR;
        }

        ctx = cf->ctx;
        ssi = (ngx_flag_t *) ((u_char *) ctx->loc_conf[m->ctx_index]
                              + cmd->offset);

        if (*ssi == 1) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "airlock location \"%V\" has \"ssi on\": SSI "
                          "obeys the upstream's answer after the scrubber "
                          "and prints variables such as $upstream_http_NAME "
                          "unscrubbed", where);
            return NGX_CONF_ERROR;
        }
    }

    scf = ngx_http_airlock_conf_of(cf, "ngx_http_sub_filter_module");

    if (scf == NULL || scf->pairs == NULL) {
        return NGX_CONF_OK;
    }

    if (scf->pairs->size != sizeof(ngx_http_airlock_sub_pair_t)) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "airlock: the sub filter module's configuration of "
                      "location \"%V\" is not laid out as in nginx "
                      NGINX_VERSION "'s sources", where);
        return NGX_CONF_ERROR;
    }

    pair = scf->pairs->elts;

    for (i = 0; i < scf->pairs->nelts; i++) {
        if (pair[i].value.lengths != NULL) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "airlock location \"%V\" has \"sub_filter\" "
                          "with a variable in its replacement \"%V\": it "
                          "is printed after the scrubber, and a variable "
                          "such as $upstream_http_NAME is not scrubbed",
                          where, &pair[i].value.value);
            return NGX_CONF_ERROR;
        }
    }

    return NGX_CONF_OK;
}


static char *
ngx_http_airlock_conf_proxy(ngx_conf_t *cf, ngx_str_t *where,
    ngx_http_airlock_proxy_conf_t *pcf)
{
    ngx_str_t                  var;
    ngx_uint_t                 i, forwarded;
    const char                *why;
    ngx_keyval_t              *kv;
    ngx_http_upstream_conf_t  *ucf;

    ucf = &pcf->upstream;

    /* the layout assumed above, checked where it can be */

    if ((pcf->headers_source != NULL
         && pcf->headers_source->size != sizeof(ngx_keyval_t))
        || (pcf->proxy_values != NULL && pcf->proxy_values->size != 1))
    {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "airlock: the proxy module's configuration of "
                      "location \"%V\" is not laid out as in nginx "
                      NGINX_VERSION "'s sources", where);
        return NGX_CONF_ERROR;
    }

    /*
     * A response a slow client has not taken yet goes to a temporary file
     * before any output filter, the scrubber included, has seen it.
     */

    if (ucf->max_temp_file_size_conf == NGX_CONF_UNSET_SIZE) {
        ucf->max_temp_file_size = 0;

    } else if (ucf->max_temp_file_size_conf != 0) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "airlock location \"%V\" has \"proxy_max_temp_file_size "
                      "%uz\": responses may carry a credential an upstream "
                      "echoes, and must not be written to disk; leave it "
                      "unset or 0", where, ucf->max_temp_file_size_conf);
        return NGX_CONF_ERROR;
    }

#if (NGX_HTTP_CACHE)
    if (ucf->cache > 0) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "airlock location \"%V\" has \"proxy_cache\": cached "
                      "responses are written to disk before they are "
                      "scrubbed", where);
        return NGX_CONF_ERROR;
    }
#endif

    if (ucf->store > 0) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "airlock location \"%V\" has \"proxy_store\": stored "
                      "responses are written to disk before they are "
                      "scrubbed", where);
        return NGX_CONF_ERROR;
    }

    if (ucf->upstream == NULL && pcf->proxy_lengths == NULL) {
        /* no proxy_pass, and no other handler that forwards (checked) */
        return NGX_CONF_OK;
    }

    if (pcf->body_source.data != NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "airlock location \"%V\" has \"proxy_set_body\": the "
                      "upstream would get another body than the one the "
                      "policy checked", where);
        return NGX_CONF_ERROR;
    }

    /* merged: set here or inherited from the server or http level */

    if (ucf->pass_request_body == 0) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "airlock location \"%V\" has \"proxy_pass_request_"
                      "body off\": the upstream would get the checked "
                      "body's Content-Length without the body, and read "
                      "what follows on the connection as the body", where);
        return NGX_CONF_ERROR;
    }

    /*
     * merged: set here or inherited from the server or http level.  The
     * body was checked as its Content-Type says, and would go without
     * it: a text/plain body is a form to Rack without one, and a JSON
     * body with "&_method=DELETE&" in a string a DELETE.
     */

    if (ucf->pass_request_headers == 0) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "airlock location \"%V\" has \"proxy_pass_request_"
                      "headers off\": the upstream would read the checked "
                      "body without the Content-Type it was checked as "
                      "(and get none of the route's credentials)", where);
        return NGX_CONF_ERROR;
    }

    /* merged: set here or inherited from the server or http level */

    if (pcf->method != NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "airlock location \"%V\" has \"proxy_method\": the "
                      "upstream would get another method than the one the "
                      "route matched", where);
        return NGX_CONF_ERROR;
    }

    if (pcf->headers_source != NULL) {
        kv = pcf->headers_source->elts;

        for (i = 0; i < pcf->headers_source->nelts; i++) {
            if (ngx_http_airlock_conf_header_denied(cf, &kv[i].key)) {
                ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                              "airlock location \"%V\" has "
                              "\"proxy_set_header %V\": Airlock removes "
                              "client credentials and injects the route's; "
                              "this header would undo that", where,
                              &kv[i].key);
                return NGX_CONF_ERROR;
            }

            why = ngx_http_airlock_conf_header_why(&kv[i].key);

            if (why != NULL) {
                ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                              "airlock location \"%V\" has "
                              "\"proxy_set_header %V\": %s", where,
                              &kv[i].key, why);
                return NGX_CONF_ERROR;
            }

            if (kv[i].key.len == sizeof("host") - 1
                && ngx_strncasecmp(kv[i].key.data, (u_char *) "host",
                                   sizeof("host") - 1) == 0
                && !ngx_http_airlock_conf_host(&kv[i].value))
            {
                ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                              "airlock location \"%V\" has "
                              "\"proxy_set_header %V %V\": the Host is the "
                              "route's upstream's, \"$airlock_host\"; any "
                              "other has the upstream serve another site "
                              "than the policy named", where, &kv[i].key,
                              &kv[i].value);
                return NGX_CONF_ERROR;
            }

            if (!ngx_http_airlock_conf_site(&kv[i].key)) {
                continue;
            }

            forwarded = ngx_http_airlock_conf_header_is(&kv[i].key,
                                                  (u_char *) "forwarded",
                                                  sizeof("forwarded") - 1);

            why = ngx_http_airlock_conf_client_var(&kv[i].value, &var,
                                                   forwarded);

            if (why != NULL) {
                ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                              "airlock location \"%V\" has "
                              "\"proxy_set_header %V %V\": $%V %s, and the "
                              "upstream takes this header for the site it "
                              "serves, as the Host", where, &kv[i].key,
                              &kv[i].value, &var, why);
                return NGX_CONF_ERROR;
            }
        }
    }

    if (!ngx_http_airlock_conf_proxy_pass(cf, pcf->proxy_values)) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "airlock location \"%V\" must forward with "
                      "\"proxy_pass $airlock_upstream$airlock_uri\": any "
                      "other target ignores the upstream and path the "
                      "route decided", where);
        return NGX_CONF_ERROR;
    }

#if (NGX_HTTP_SSL)
    /* merged: set here or inherited from the server or http level */

    why = (ucf->ssl_name != NULL)
          ? ngx_http_airlock_conf_client_var(&ucf->ssl_name->value, &var, 0)
          : NULL;

    if (why != NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "airlock location \"%V\" has \"proxy_ssl_name %V\": "
                      "$%V %s; the upstream's TLS name, sent and checked, "
                      "would be one the client chose (leave it unset: the "
                      "route's upstream host)", where,
                      &ucf->ssl_name->value, &var, why);
        return NGX_CONF_ERROR;
    }

    /* merged: proxy_ssl_verify is off unless set here or above */

    if (!ucf->ssl_verify && ngx_http_airlock_conf_https(cf)) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "airlock location \"%V\" must have \"proxy_ssl_verify "
                      "on\": the policy has https upstreams, and without "
                      "it a route's credential goes to whoever answers at "
                      "the upstream's address (include "
                      "airlock-location.conf)", where);
        return NGX_CONF_ERROR;
    }
#endif

    if ((ucf->ignore_headers & NGX_HTTP_AIRLOCK_IGN_XA)
        != NGX_HTTP_AIRLOCK_IGN_XA)
    {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "airlock location \"%V\" must have \"proxy_ignore_"
                      "headers X-Accel-Redirect X-Accel-Expires "
                      "X-Accel-Limit-Rate X-Accel-Buffering "
                      "X-Accel-Charset\": an upstream must not steer nginx "
                      "(include airlock-location.conf)", where);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/*
 * The credential headers, and every header a route of the policy injects:
 * proxy_set_header of one of those replaces the injected value, or sends
 * it twice.
 */

static ngx_uint_t
ngx_http_airlock_conf_header_denied(ngx_conf_t *cf, ngx_str_t *name)
{
    size_t                         j;
    ngx_uint_t                     i;
    const al_str_t                *inj;
    const al_policy_t             *p;
    const al_route_t              *route;
    ngx_http_airlock_main_conf_t  *amcf;

    if (ngx_http_airlock_conf_header_listed(name,
                                            ngx_http_airlock_conf_headers))
    {
        return 1;
    }

    amcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_airlock_module);
    p = amcf->policy;

    if (p == NULL) {
        return 0;
    }

    for (i = 0; i < p->nroutes; i++) {
        route = &p->routes[i];

        for (j = 0; j < route->ninject; j++) {
            inj = &route->inject[j].name;

            if (ngx_http_airlock_conf_header_is(name, (u_char *) inj->data,
                                                inj->len))
            {
                return 1;
            }
        }
    }

    return 0;
}


/* 1: name is one of list (ending with a null string), in any case */

static ngx_uint_t
ngx_http_airlock_conf_listed(ngx_str_t *name, ngx_str_t *list)
{
    for ( /* void */ ; list->len; list++) {
        if (name->len == list->len
            && ngx_strncasecmp(name->data, list->data, list->len) == 0)
        {
            return 1;
        }
    }

    return 0;
}


/* ngx_http_airlock_conf_listed() for a header name: see below */

static ngx_uint_t
ngx_http_airlock_conf_header_listed(ngx_str_t *name, ngx_str_t *list)
{
    for ( /* void */ ; list->len; list++) {
        if (ngx_http_airlock_conf_header_is(name, list->data, list->len)) {
            return 1;
        }
    }

    return 0;
}


/*
 * 1: the header name is lower[len] in any case, and with '_' for any
 * '-'.  The proxy module sends a name as written, and CGI, WSGI, PHP and
 * Rack turn both X-Forwarded-Host and X_Forwarded_Host into
 * HTTP_X_FORWARDED_HOST, the one an application reads; which of two it
 * gets is theirs to choose.
 */

static ngx_uint_t
ngx_http_airlock_conf_header_is(ngx_str_t *name, u_char *lower, size_t len)
{
    size_t  i;
    u_char  c, l;

    if (name->len != len) {
        return 0;
    }

    for (i = 0; i < len; i++) {
        c = ngx_tolower(name->data[i]);
        l = ngx_tolower(lower[i]);

        if (c != l && !((c == '_' || c == '-') && (l == '_' || l == '-'))) {
            return 0;
        }
    }

    return 1;
}


/* why a header may not be set in an Airlock location; NULL: it may */

static const char *
ngx_http_airlock_conf_header_why(ngx_str_t *name)
{
    ngx_http_airlock_conf_header_t  *h;

    for (h = ngx_http_airlock_conf_forwarded; h->name.len; h++) {
        if (ngx_http_airlock_conf_header_is(name, h->name.data, h->name.len))
        {
            return h->why;
        }
    }

    return NULL;
}


/*
 * The Host sent upstream is the route's upstream's: exactly $airlock_host
 * (or the gateway's $airlock_llm_host), as the location body sets it.
 */

static ngx_uint_t
ngx_http_airlock_conf_host(ngx_str_t *value)
{
    static ngx_str_t  hosts[] = {
        ngx_string("$airlock_host"),
        ngx_string("${airlock_host}"),
        ngx_string("$airlock_llm_host"),
        ngx_string("${airlock_llm_host}"),
        ngx_null_string
    };

    return ngx_http_airlock_conf_listed(value, hosts);
}


/* 1: an upstream of the policy, a route's or an LLM entry's, is https */

static ngx_uint_t
ngx_http_airlock_conf_https(ngx_conf_t *cf)
{
    size_t                         i;
    const al_policy_t             *p;
    ngx_http_airlock_main_conf_t  *amcf;

    amcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_airlock_module);
    p = amcf->policy;

    if (p == NULL) {
        return 0;
    }

    for (i = 0; i < p->nupstreams; i++) {
        if (p->upstreams[i].https) {
            return 1;
        }
    }

    for (i = 0; i < p->nllm; i++) {
        if (p->llm[i].upstream.https) {
            return 1;
        }
    }

    return 0;
}


/*
 * A header an upstream behind a proxy takes for the Host, or for the
 * start of its links: X-Forwarded-Host and Forwarded (Django, Rails,
 * Spring, Symfony, Express), X-Host, X-Forwarded-Server, X-Original-Host
 * and X-HTTP-Host-Override (read for the Host by other frameworks and
 * caches), X-Forwarded-Prefix (the path every link and redirect starts
 * with: Spring, Symfony, Werkzeug, ASP.NET Core; "//site.example" is
 * another site).
 */

static ngx_uint_t
ngx_http_airlock_conf_site(ngx_str_t *name)
{
    static ngx_str_t  sites[] = {
        ngx_string("x-forwarded-host"),
        ngx_string("forwarded"),
        ngx_string("x-host"),
        ngx_string("x-forwarded-server"),
        ngx_string("x-original-host"),
        ngx_string("x-http-host-override"),
        ngx_string("x-forwarded-prefix"),
        ngx_null_string
    };

    return ngx_http_airlock_conf_header_listed(name, sites);
}


/*
 * Why a variable in value may hold what the client sent, the variable in
 * *var; NULL: none may.  Variables are read as ngx_http_script_compile()
 * reads them: "$name" or "${name}".  One nginx takes from the request
 * the policy does not decide is the client's: its Host ($host), its
 * headers ($http_*, $cookie_*, $content_type), its target in any form
 * ($arg_*, $args, $request_uri, $uri, ...) and regex captures ($1 to $9,
 * taken from the URI or a header).  Any other must be one of the few
 * nginx or Airlock sets from the configuration, the policy or the
 * connection: a map, a set, a named capture or another module's variable
 * may be made of the client's, and what it is made of is not read here.
 * nginx refuses a set or map of a name below ("duplicate variable"), so
 * they cannot be redefined ($proxy_host can: it is left out).
 *
 * The peer's address and port are the connection's only until a realip
 * module rewrites them from a header: a location without Airlock that
 * runs realip and hands the request on (error_page, try_files) gives the
 * Airlock location the address the client wrote.  An address names no
 * site anyway; they pass only in the "for=" of Forwarded (forwarded 1),
 * where the upstream reads them as the client's, never as the site.
 */

static const char *
ngx_http_airlock_conf_client_var(ngx_str_t *value, ngx_str_t *var,
    ngx_uint_t forwarded)
{
    u_char     *p, *end, *dollar, c;
    ngx_str_t  *n;

    static ngx_str_t  prefixes[] = {
        ngx_string("http_"),
        ngx_string("cookie_"),
        ngx_string("arg_"),
        ngx_null_string
    };

    static ngx_str_t  names[] = {
        ngx_string("host"),
        ngx_string("args"),
        ngx_string("query_string"),
        ngx_string("request_uri"),
        ngx_string("uri"),
        ngx_string("document_uri"),
        ngx_string("request"),
        ngx_string("request_body"),
        ngx_string("content_type"),
        ngx_string("remote_user"),
        ngx_null_string
    };

    static ngx_str_t  servers[] = {
        ngx_string("airlock_host"),
        ngx_string("airlock_llm_host"),
        ngx_string("server_name"),
        ngx_string("server_addr"),
        ngx_string("server_port"),
        ngx_string("hostname"),
        ngx_string("scheme"),
        ngx_string("https"),
        ngx_string("request_id"),
        ngx_null_string
    };

    static ngx_str_t  peers[] = {
        ngx_string("remote_addr"),
        ngx_string("remote_port"),
        ngx_null_string
    };

    p = value->data;
    end = value->data + value->len;

    while (p < end) {
        dollar = p;

        if (*p++ != '$' || p == end) {
            continue;
        }

        if (*p == '{') {
            p++;
        }

        var->data = p;

        while (p < end) {
            c = *p;

            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
                || (c >= '0' && c <= '9') || c == '_')
            {
                p++;
                continue;
            }

            break;
        }

        var->len = p - var->data;

        if (var->len == 0) {
            continue;
        }

        if (var->data[0] >= '0' && var->data[0] <= '9') {
            return "is the client's";
        }

        for (n = prefixes; n->len; n++) {
            if (var->len > n->len
                && ngx_strncasecmp(var->data, n->data, n->len) == 0)
            {
                return "is the client's";
            }
        }

        if (ngx_http_airlock_conf_listed(var, names)) {
            return "is the client's";
        }

        if (ngx_http_airlock_conf_listed(var, peers)) {
            if (forwarded
                && ngx_http_airlock_conf_for(value->data, dollar))
            {
                continue;
            }

            return "is the client's address, which realip rewrites from "
                   "a header, and names no site (in Forwarded it may only "
                   "be the \"for=\")";
        }

        if (!ngx_http_airlock_conf_listed(var, servers)) {
            return "is not one nginx or Airlock sets itself ($airlock_host, "
                   "$server_name, $scheme, $hostname...), and a map or "
                   "set may hold what the client sent";
        }
    }

    return NULL;
}


/*
 * 1: the variable at dollar is in the value of a "for" parameter of a
 * Forwarded element: the last '=' before it, with no ';' or ',' between
 * (a quote, a '[' or another variable of the value may be), follows the
 * name "for", in any case.
 */

static ngx_uint_t
ngx_http_airlock_conf_for(u_char *start, u_char *dollar)
{
    u_char  *p, *name;

    for (p = dollar; p > start; p--) {
        if (p[-1] == '=') {
            break;
        }

        if (p[-1] == ';' || p[-1] == ',') {
            return 0;
        }
    }

    if (p == start) {
        return 0;
    }

    /* the name before the '=', spaces around it left out */

    p--;

    while (p > start && (p[-1] == ' ' || p[-1] == '\t')) {
        p--;
    }

    name = p;

    while (name > start && name[-1] != ';' && name[-1] != ','
           && name[-1] != ' ' && name[-1] != '\t' && name[-1] != '"')
    {
        name--;
    }

    return (p - name == 3 && ngx_strncasecmp(name, (u_char *) "for", 3) == 0);
}


/*
 * proxy_pass must be exactly an Airlock upstream variable followed by an
 * Airlock URI variable: its compiled values script is two variable copies
 * and the end mark (ngx_http_script_compile() with complete_values).
 */

static ngx_uint_t
ngx_http_airlock_conf_proxy_pass(ngx_conf_t *cf, ngx_array_t *values)
{
    u_char                      *p;
    ngx_http_script_var_code_t  *up, *uri;

    if (values == NULL
        || values->nelts != 2 * sizeof(ngx_http_script_var_code_t)
                            + sizeof(uintptr_t))
    {
        return 0;
    }

    p = values->elts;

    up = (ngx_http_script_var_code_t *) p;
    uri = (ngx_http_script_var_code_t *)
              (p + sizeof(ngx_http_script_var_code_t));

    if (up->code != ngx_http_script_copy_var_code
        || uri->code != ngx_http_script_copy_var_code
        || *(uintptr_t *) (p + 2 * sizeof(ngx_http_script_var_code_t)) != 0)
    {
        return 0;
    }

    return ngx_http_airlock_conf_is_var(cf, up->index, "airlock_upstream",
                                        "airlock_llm_upstream")
           && ngx_http_airlock_conf_is_var(cf, uri->index, "airlock_uri",
                                           "airlock_llm_uri");
}


static ngx_uint_t
ngx_http_airlock_conf_is_var(ngx_conf_t *cf, ngx_uint_t index,
    const char *a, const char *b)
{
    ngx_str_t  name;

    name.data = (u_char *) a;
    name.len = ngx_strlen(a);

    if ((ngx_int_t) index == ngx_http_get_variable_index(cf, &name)) {
        return 1;
    }

    name.data = (u_char *) b;
    name.len = ngx_strlen(b);

    return (ngx_int_t) index == ngx_http_get_variable_index(cf, &name);
}


/*
 * An airlock_llm location's "proxy_pass $airlock_upstream$airlock_uri"
 * bound to the upstream block of the entry's host, as "proxy_pass
 * scheme://host" binds it: nginx then takes the block from the
 * configuration instead of building, parsing and looking up the URL on
 * every call.  The proxy module sends r->unparsed_uri when proxy_pass
 * names no path; the caller's content handler sets it to the route's
 * target around the proxy module's handler, which is returned here, with
 * the block in *block (its peer init is where the caller gives the
 * client's target back).
 *
 * NGX_CONF_OK with *handler and *block NULL leaves the location as it
 * is: no block of exactly that name (a url with a port or an address
 * never matches one: nginx would resolve it per call), no proxy_pass of
 * its own here, HTTP/2 to the upstream, or an http url on nginx 1.23 to
 * 1.29.3, whose proxy module keeps the scheme where this module does not
 * read.
 */

char *
ngx_http_airlock_conf_bind(ngx_conf_t *cf, ngx_http_core_loc_conf_t *clcf,
    ngx_str_t *url, ngx_uint_t https, ngx_http_handler_pt *handler,
    ngx_http_upstream_srv_conf_t **block)
{
    char                            *rv;
    ngx_str_t                        host, *arg;
    ngx_uint_t                       i;
    ngx_array_t                      args, *saved, *lengths, *values;
    ngx_module_t                    *m;
    ngx_command_t                   *cmd;
    ngx_http_upstream_srv_conf_t   **uscfp;
    ngx_http_upstream_main_conf_t   *umcf;
    ngx_http_airlock_proxy_conf_t   *pcf;

    *handler = NULL;
    *block = NULL;

    pcf = ngx_http_airlock_conf_of(cf, "ngx_http_proxy_module");

    if (pcf == NULL || pcf->proxy_lengths == NULL || clcf->handler == NULL) {
        return NGX_CONF_OK;
    }

#if (nginx_version >= 1023000 && nginx_version < 1029004)
    if (!https) {
        return NGX_CONF_OK;
    }
#endif

#if (nginx_version >= 1029004 && NGX_HTTP_V2)
    if (pcf->http_version == NGX_HTTP_VERSION_20) {
        return NGX_CONF_OK;
    }
#endif

    host.data = url->data + (https ? sizeof("https://") : sizeof("http://"))
                - 1;
    host.len = url->len - (host.data - url->data);

    if (host.len == 0 || ngx_strlchr(host.data, host.data + host.len, ':')) {
        return NGX_CONF_OK;
    }

    umcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_upstream_module);
    uscfp = umcf->upstreams.elts;

    for (i = 0; i < umcf->upstreams.nelts; i++) {
        if ((uscfp[i]->flags & NGX_HTTP_UPSTREAM_CREATE)
            && uscfp[i]->host.len == host.len
            && ngx_strncasecmp(uscfp[i]->host.data, host.data, host.len) == 0)
        {
            break;
        }
    }

    if (i == umcf->upstreams.nelts) {
        return NGX_CONF_OK;
    }

    m = ngx_http_airlock_conf_module(cf, "ngx_http_proxy_module");
    cmd = (m != NULL) ? ngx_http_airlock_conf_command(m, "proxy_pass") : NULL;

    if (cmd == NULL) {
        return NGX_CONF_OK;
    }

    if (ngx_array_init(&args, cf->pool, 2, sizeof(ngx_str_t)) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    arg = ngx_array_push_n(&args, 2);
    if (arg == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_str_set(&arg[0], "proxy_pass");
    arg[1] = *url;

    /* the proxy module's own directive, as if it were written here */

    lengths = pcf->proxy_lengths;
    values = pcf->proxy_values;
    pcf->proxy_lengths = NULL;
    pcf->proxy_values = NULL;

    saved = cf->args;
    cf->args = &args;

    rv = cmd->set(cf, cmd, pcf);

    cf->args = saved;

    if (rv != NGX_CONF_OK) {
        pcf->proxy_lengths = lengths;
        pcf->proxy_values = values;
        pcf->upstream.upstream = NULL;

        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "airlock: location \"%V\" could not be bound to the "
                      "upstream block \"%V\": \"proxy_pass %V\" %s",
                      &clcf->name, &host, url, rv);
        return NGX_CONF_ERROR;
    }

#if (NGX_HTTP_SSL)
#if (nginx_version < 1023000)
    /* 1.22 takes TLS from the context made for the variables' https */
    if (!https) {
        pcf->upstream.ssl = NULL;
    }
#elif (nginx_version >= 1029004)
    pcf->ssl = https;
#endif
#endif

    *handler = clcf->handler;
    *block = pcf->upstream.upstream;

    return NGX_CONF_OK;
}


/*
 * A secret the policy sends over http:// without allow_insecure_http
 * must stay on this host.  The loader placed addresses, localhost and
 * host names with a port (al_policy_clear()); a name without a port is
 * nginx's: the upstream block of that name, found as the proxy module
 * finds it for "http://name", else a DNS lookup when a request is made.
 * It passes only as a block whose every server is on this host, which
 * can be told here: a block's servers are resolved as the configuration
 * is read.  A block named localhost or 127.0.0.1 decides for them too.
 * Configuration time only: requests are not touched.
 */

char *
ngx_http_airlock_conf_clear(ngx_conf_t *cf, const al_policy_t *p,
    ngx_str_t *conf, ngx_uint_t line)
{
    char                            what[256], fix[128];
    size_t                          i;
    ngx_str_t                      *far, server;
    ngx_uint_t                      k;
    al_clear_t                      c;
    const char                     *why;
    const al_upstream_t            *u;
    ngx_http_upstream_srv_conf_t   *uscf, **uscfp;
    ngx_http_upstream_main_conf_t  *umcf;

    umcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_upstream_module);
    uscfp = umcf->upstreams.elts;

    i = 0;

    while (al_policy_clear(p, &i, &c)) {
        if (c.insecure) {
            continue;
        }

        u = c.upstream;
        uscf = NULL;

        /* "http://name:port" never takes a block */

        for (k = 0; u->host.len == u->hostname.len
                    && k < umcf->upstreams.nelts; k++)
        {
            if ((uscfp[k]->flags & NGX_HTTP_UPSTREAM_CREATE)
                && uscfp[k]->host.len == u->hostname.len
                && ngx_strncasecmp(uscfp[k]->host.data,
                                   (u_char *) u->hostname.data,
                                   u->hostname.len) == 0)
            {
                uscf = uscfp[k];
                break;
            }
        }

        far = NULL;

        if (uscf != NULL) {
            far = ngx_http_airlock_conf_far(uscf);

            if (far == NULL) {
                continue;
            }

        } else if (c.local) {
            continue;
        }

        if (c.llm != NULL) {
            ngx_snprintf((u_char *) what, sizeof(what), "llm \"%s\" (%s "
                         "line %ui) sends its secret%Z", c.llm->name.data,
                         p->file.data, (ngx_uint_t) c.llm->line);
            ngx_snprintf((u_char *) fix, sizeof(fix), "llm \"%s\"%Z",
                         c.llm->name.data);

        } else {
            ngx_snprintf((u_char *) what, sizeof(what), "route \"%s\" (%s "
                         "line %ui) sends a secret to upstream \"%s\"%Z",
                         c.route->name.data, p->file.data,
                         (ngx_uint_t) c.route->line, u->name.data);
            ngx_snprintf((u_char *) fix, sizeof(fix), "upstream \"%s\"%Z",
                         u->name.data);
        }

        what[sizeof(what) - 1] = '\0';
        fix[sizeof(fix) - 1] = '\0';

        if (far != NULL) {
            why = "an upstream block with a server not on this host";
            server = *far;

        } else {
            why = "which is neither this host nor an upstream block";
            ngx_str_null(&server);
        }

        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "airlock: %s over http:// to \"%s\", %s%s%V%s: the "
                      "credential would cross the network in clear; use "
                      "https://, an upstream block whose servers are all "
                      "on this host (loopback addresses or unix sockets), "
                      "or set allow_insecure_http: true on %s in %V:%ui",
                      what, u->hostname.data, why,
                      far ? " (\"" : "", &server, far ? "\")" : "", fix,
                      conf, line);

        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/*
 * The first server of the block not on this host (a loopback address or
 * a unix socket), or NULL when none is.  A server nginx resolves while
 * it runs ("resolve": no address yet) is not placed, and a block with no
 * server is not either.
 */

static ngx_str_t *
ngx_http_airlock_conf_far(ngx_http_upstream_srv_conf_t *uscf)
{
    ngx_uint_t                   i, j;
    struct sockaddr             *sa;
    struct sockaddr_in          *sin;
#if (NGX_HAVE_INET6)
    struct sockaddr_in6         *sin6;
#endif
    ngx_http_upstream_server_t  *us;

    static ngx_str_t  none = ngx_string("no server");

    if (uscf->servers == NULL || uscf->servers->nelts == 0) {
        return &none;
    }

    us = uscf->servers->elts;

    for (i = 0; i < uscf->servers->nelts; i++) {
        if (us[i].naddrs == 0) {
            return &us[i].name;
        }

        for (j = 0; j < us[i].naddrs; j++) {
            sa = us[i].addrs[j].sockaddr;

            switch (sa->sa_family) {

#if (NGX_HAVE_UNIX_DOMAIN)
            case AF_UNIX:
                continue;
#endif

            case AF_INET:
                sin = (struct sockaddr_in *) sa;

                if ((ntohl(sin->sin_addr.s_addr) >> 24) == 127) {
                    continue;
                }

                break;

#if (NGX_HAVE_INET6)
            case AF_INET6:
                sin6 = (struct sockaddr_in6 *) sa;

                if (IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr)
                    || (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)
                        && sin6->sin6_addr.s6_addr[12] == 127))
                {
                    continue;
                }

                break;
#endif
            }

            return &us[i].name;
        }
    }

    return NULL;
}


/*
 * The content handler a directive of another module installs: the
 * directive runs as if written in a scratch location (its module's and
 * the core module's configurations made for it, the rest shared with the
 * location being merged), and the scratch location's handler is the
 * answer.  NULL: no such module or directive.
 */

static char *
ngx_http_airlock_conf_handler_of(ngx_conf_t *cf, const char *module,
    const char *directive, const char *arg, ngx_http_handler_pt *handler)
{
    char                      *rv;
    void                      *conf;
    ngx_str_t                 *value;
    ngx_array_t                args, *saved_args;
    ngx_module_t              *m;
    ngx_command_t             *cmd;
    ngx_http_module_t         *mctx;
    ngx_http_conf_ctx_t       *ctx, *saved_ctx;
    ngx_http_core_loc_conf_t  *clcf;

    *handler = NULL;

    m = ngx_http_airlock_conf_module(cf, module);
    cmd = (m != NULL) ? ngx_http_airlock_conf_command(m, directive) : NULL;

    if (cmd == NULL || cmd->conf != NGX_HTTP_LOC_CONF_OFFSET) {
        return NGX_CONF_OK;
    }

    saved_ctx = cf->ctx;

    ctx = ngx_palloc(cf->pool, sizeof(ngx_http_conf_ctx_t));
    if (ctx == NULL) {
        return NGX_CONF_ERROR;
    }

    ctx->main_conf = saved_ctx->main_conf;
    ctx->srv_conf = saved_ctx->srv_conf;

    ctx->loc_conf = ngx_palloc(cf->pool, sizeof(void *) * ngx_http_max_module);
    if (ctx->loc_conf == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memcpy(ctx->loc_conf, saved_ctx->loc_conf,
               sizeof(void *) * ngx_http_max_module);

    mctx = ngx_http_core_module.ctx;

    clcf = mctx->create_loc_conf(cf);
    if (clcf == NULL) {
        return NGX_CONF_ERROR;
    }

    ctx->loc_conf[ngx_http_core_module.ctx_index] = clcf;

    conf = NULL;
    mctx = m->ctx;

    if (mctx->create_loc_conf != NULL) {
        conf = mctx->create_loc_conf(cf);
        if (conf == NULL) {
            return NGX_CONF_ERROR;
        }

        ctx->loc_conf[m->ctx_index] = conf;
    }

    if (ngx_array_init(&args, cf->pool, 2, sizeof(ngx_str_t)) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    value = ngx_array_push_n(&args, (arg != NULL) ? 2 : 1);
    if (value == NULL) {
        return NGX_CONF_ERROR;
    }

    value[0].data = (u_char *) directive;
    value[0].len = ngx_strlen(directive);

    /* a directive may write into its arguments: a copy */

    if (arg != NULL) {
        value[1].len = ngx_strlen(arg);
        value[1].data = ngx_pnalloc(cf->pool, value[1].len + 1);
        if (value[1].data == NULL) {
            return NGX_CONF_ERROR;
        }

        ngx_cpystrn(value[1].data, (u_char *) arg, value[1].len + 1);
    }

    saved_args = cf->args;
    cf->args = &args;
    cf->ctx = ctx;

    rv = cmd->set(cf, cmd, conf);

    cf->ctx = saved_ctx;
    cf->args = saved_args;

    if (rv == NGX_CONF_ERROR) {
        return NGX_CONF_ERROR;
    }

    if (rv != NGX_CONF_OK) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "airlock: \"%s\" in a scratch location, to learn "
                      "its content handler: %s", directive, rv);
        return NGX_CONF_ERROR;
    }

    *handler = clcf->handler;

    return NGX_CONF_OK;
}


/* an http module of this configuration, by name; NULL: not built in */

static ngx_module_t *
ngx_http_airlock_conf_module(ngx_conf_t *cf, const char *name)
{
    ngx_uint_t     i;
    ngx_module_t  *m;

    for (i = 0; cf->cycle->modules[i]; i++) {
        m = cf->cycle->modules[i];

        if (m->type == NGX_HTTP_MODULE && ngx_strcmp(m->name, name) == 0) {
            return m;
        }
    }

    return NULL;
}


static ngx_command_t *
ngx_http_airlock_conf_command(ngx_module_t *m, const char *name)
{
    size_t          len;
    ngx_command_t  *cmd;

    if (m->commands == NULL) {
        return NULL;
    }

    len = ngx_strlen(name);

    for (cmd = m->commands; cmd->name.len; cmd++) {
        if (cmd->name.len == len
            && ngx_strncmp(cmd->name.data, name, len) == 0)
        {
            return cmd;
        }
    }

    return NULL;
}


/*
 * A worker holds the decrypted credentials and builds every upstream
 * request with them in its buffers: it is made not dumpable (no core
 * file, no ptrace by the same user) unless "airlock_worker_dumpable on".
 * nginx itself makes workers dumpable before modules' init_process.
 * It also takes its regions of the shared log buffers, and the first
 * worker of a new airlock_zone says in the journal that it is new.
 */

ngx_int_t
ngx_http_airlock_init_process(ngx_cycle_t *cycle)
{
    ngx_http_airlock_main_conf_t  *amcf;

    ngx_http_airlock_logs_init_process(cycle);
    ngx_http_airlock_log_zone(cycle);

    amcf = ngx_http_cycle_get_module_main_conf(cycle,
                                               ngx_http_airlock_module);

    if (amcf != NULL && amcf->dumpable == 1) {
        return NGX_OK;
    }

    ngx_http_airlock_not_dumpable(cycle->log);

    return NGX_OK;
}


/*
 * The process that reads the configuration opens the policy's secrets:
 * the master, at start and at each reload, and every "nginx -t" or
 * "nginx -s".  It is made not dumpable before it opens them, so that a
 * crash writes no core file with the credentials in it and no process of
 * its user can read its memory.  Workers start dumpable again (nginx
 * makes them so) and follow airlock_worker_dumpable.
 */

void
ngx_http_airlock_not_dumpable(ngx_log_t *log)
{
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1) {
        ngx_http_airlock_log_error(NGX_LOG_ALERT, log, ngx_errno,
                                   "airlock: prctl(PR_SET_DUMPABLE, 0) failed");
    }
}
