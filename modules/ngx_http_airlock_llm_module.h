
/*
 * Airlock: shared declarations of ngx_http_airlock_llm_module, the LLM
 * token gateway (ngx_http_airlock_llm_*.c).
 */


#ifndef _NGX_HTTP_AIRLOCK_LLM_MODULE_H_INCLUDED_
#define _NGX_HTTP_AIRLOCK_LLM_MODULE_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "al_llm.h"
#include "ngx_http_airlock_module.h"


/* Anthropic requires the header; sent when the client did not */
#define NGX_HTTP_AIRLOCK_LLM_ANTHROPIC_VERSION  "2023-06-01"

#define NGX_HTTP_AIRLOCK_LLM_SERIES_MAX  1000   /* default series= */

/* airlock_llm_log without buffer=: this much, written at each pass's end */
#define NGX_HTTP_AIRLOCK_LLM_LOG_BUFFER  16384


/* a client's budget, or a series of counters, in airlock_llm_zone */
typedef struct ngx_http_airlock_llm_node_s  ngx_http_airlock_llm_node_t;

/* a request's place in flight, in airlock_llm_zone */
typedef struct ngx_http_airlock_llm_flight_s  ngx_http_airlock_llm_flight_t;


/*
 * The last request line al_llm_route() allowed on a provider, in this
 * worker, and what it made of it: the same client, method and raw target
 * take the same route (al_llm_route() reads nothing else), so the next
 * one like it is not parsed again.  Only routes without a model or alias
 * in the path (not Azure deployments) are kept.
 */
#define NGX_HTTP_AIRLOCK_LLM_MEMO_TARGET  128
#define NGX_HTTP_AIRLOCK_LLM_MEMO_URI     256

typedef struct {
    const al_llm_client_t           *lc;        /* NULL: none kept */
    unsigned                         method;
    al_llm_endpoint_t                endpoint;
    size_t                           target_len;
    size_t                           uri_len;
    u_char                           target[NGX_HTTP_AIRLOCK_LLM_MEMO_TARGET];
    u_char                           uri[NGX_HTTP_AIRLOCK_LLM_MEMO_URI];
} ngx_http_airlock_llm_memo_t;


/* an llm entry of the policy, as its locations need it */
typedef struct {
    const al_llm_t                  *llm;
    ngx_str_t                        upstream;  /* "https://host[:port]" */
    ngx_str_t                        host;      /* Host: host[:port] */
    ngx_table_elt_t                  key;       /* the header that carries
                                                   the provider key */
    ngx_table_elt_t                  version;   /* anthropic-version */
    al_route_t                       route;     /* names the provider to
                                                   ngx_http_airlock_module */
    ngx_http_airlock_route_t         rconf;     /* its scrub list */
    ngx_http_airlock_llm_memo_t      memo;
    unsigned                         ready:1;
} ngx_http_airlock_llm_provider_t;


/* an upstream block a gateway location is bound to, and its peer init */
typedef struct {
    ngx_http_upstream_srv_conf_t    *us;
    ngx_http_upstream_init_peer_pt   init;
} ngx_http_airlock_llm_block_t;


typedef struct {
    ngx_shm_zone_t                  *zone;      /* airlock_llm_zone */
    ngx_http_airlock_llm_provider_t *providers; /* [policy->nllm] */
    ngx_uint_t                       nproviders;
    ngx_array_t                     *logs;      /* ngx_open_file_t *: the
                                                   airlock_llm_log files
                                                   named without buffer= */
    ngx_array_t                     *blocks;    /* ngx_http_airlock_llm_
                                                   block_t: the upstream
                                                   blocks bound to */
    al_llm_clock_t                   clock;     /* the last usage line's
                                                   time to the second, per
                                                   worker */
    ngx_http_header_t               *keep_hh[NGX_HTTP_AIRLOCK_KEEP_MAX];
                                                /* the shortcuts of the
                                                   client headers kept */
    u_char                           keep_at[64];   /* where their names
                                                   of each length begin */
} ngx_http_airlock_llm_main_conf_t;


typedef struct {
    ngx_str_t                        name;      /* airlock_llm NAME */
    ngx_str_t                        file;      /* where it was set */
    ngx_uint_t                       line;
    ngx_http_airlock_llm_provider_t *provider;
    ngx_open_file_t                 *log;       /* airlock_llm_log; NULL:
                                                   off */
    ngx_flag_t                       metrics;   /* airlock_llm_metrics */
    ngx_flag_t                       fallback;  /* airlock_llm_fallback */
    ngx_http_handler_pt              proxy;     /* bound to an upstream
                                                   block: the proxy
                                                   module's handler */
} ngx_http_airlock_llm_loc_conf_t;


typedef struct {
    ngx_http_request_t              *request;
    ngx_http_airlock_llm_provider_t *provider;
    ngx_http_airlock_ctx_t          *actx;      /* ngx_http_airlock_module's
                                                   context: client, peer,
                                                   scrubbing, deny log */
    ngx_open_file_t                 *log;
    const al_client_t               *client;
    const al_llm_client_t           *lc;
    al_llm_endpoint_t                endpoint;
    ngx_str_t                        uri;       /* upstream path?query */
    ngx_str_t                        target;    /* the client's, while
                                                   r->unparsed_uri is uri
                                                   (bound locations) */
    ngx_str_t                        model;     /* the allowed model asked
                                                   for; "" for none */
    ngx_str_t                        alias;     /* the alias the client
                                                   named; "" for none */
    ngx_http_airlock_llm_provider_t *served;    /* the fallback entry that
                                                   took the call, or NULL */
    ngx_uint_t                       fallback_status;   /* why */
    uint64_t                         first_tokens;  /* the charge of the
                                                   attempts before the last
                                                   that were sent and never
                                                   answered */
    uint64_t                         first_cost;
    ngx_http_upstream_t             *charged;   /* the last attempt in
                                                   first_tokens */
    ngx_http_upstream_t             *first;     /* the first provider's
                                                   attempt, once the call
                                                   fell back */
    void                           (*finalize)(ngx_http_request_t *r,
                                                ngx_int_t rc);
                                                /* the proxy's: the upstream
                                                   calls ngx_http_airlock_
                                                   llm_finalize() */
    union {
        ngx_int_t                  (*init)(void *data);
        ngx_int_t                  (*filter)(void *data, ssize_t bytes);
        ngx_event_pipe_input_filter_pt  pipe;
    }                                input;     /* the proxy's, of a chunked
                                                   2xx answer: its input_
                                                   filter_init, then the
                                                   filter that picks; the
                                                   upstream calls ngx_http_
                                                   airlock_llm_*input*() */
    u_char                          *peek;      /* the body's first bytes
                                                   while fewer than the
                                                   peek: held with the
                                                   header */

    /* the request, from al_llm_request() */
    uint64_t                         max_output;
    uint64_t                         prompt_estimate;
    uint64_t                         prompt_text;   /* bytes it counted */

    /* the budget */
    uint64_t                         reserved;
    time_t                           reserved_at;
    ngx_http_airlock_llm_node_t     *node;      /* the budget reserved
                                                   from; it cannot expire
                                                   while the request is
                                                   admitted */
    ngx_http_airlock_llm_flight_t   *flight;    /* its place in flight */
    al_llm_quota_t                   quota;

    /* admission and cost (ngx_http_airlock_llm_zone.c) */
    const al_llm_price_t            *price;     /* the model's, or NULL */
    uint64_t                         reserved_cost;   /* picodollars */
    uint64_t                         cost;      /* once accounted */

    /* the response */
    ngx_msec_t                       ttfb;      /* ms to the first body
                                                   byte */
    al_llm_resp_t                   *resp;      /* JSON usage scanner */
    al_llm_sse_t                    *sse;       /* event-stream parser */
    al_llm_state_resp_t             *state;     /* a Responses answer's
                                                   id, until it is bound
                                                   (ngx_http_airlock_llm_
                                                   state_bind()) */

    /* the event stream, when blocks are dropped */
    uint64_t                         pending;   /* first byte not yet sent
                                                   or dropped */
    ngx_buf_t                       *held;      /* [pending, offset) */
    ngx_chain_t                     *out;
    ngx_chain_t                    **last_out;
    ngx_buf_t                       *last_shadow;
    ngx_chain_t                     *busy;
    ngx_chain_t                     *free_held;
    ngx_chain_t                     *free_bufs;

    al_llm_usage_t                   usage;     /* once accounted */
    al_llm_source_t                  source;
    ngx_uint_t                       status;

    unsigned                         allowed:1;
    unsigned                         budget:1;     /* reserved[_at] hold */
    unsigned                         stream:1;     /* the client asked */
    unsigned                         hide_usage:1;
    unsigned                         cache_control:1;  /* may write the
                                                   prompt cache */
    unsigned                         header_seen:1;
    unsigned                         answered:1;   /* the provider's 2xx
                                                   reached the filters */
    unsigned                         filter:1;     /* blocks are dropped */
    unsigned                         start:1;      /* the header waits for
                                                   the body's first
                                                   bytes */
    unsigned                         peeked:5;     /* in peek */
    unsigned                         error_peek:1; /* an error answer's
                                                   first bytes are yet
                                                   to be read */
    unsigned                         ttfb_set:1;
    unsigned                         ended:1;      /* the last buffer */
    unsigned                         accounted:1;
    unsigned                         settled:1;
    unsigned                         swapped:1;    /* r->unparsed_uri is
                                                   uri */
    unsigned                         target_valid:1;
    unsigned                         own_answer:1; /* the answer is the
                                                   gateway's, its
                                                   x-request-id set
                                                   (no fallback) */
    unsigned                         body_own:1;   /* body_buf is used */
    unsigned                         failed:10;    /* a 2xx answer the
                                                   client got none of:
                                                   the status it got
                                                   instead */
    unsigned                         admitted:1;   /* in the zone
                                                   (ngx_http_airlock_llm_
                                                   zone.c): finished
                                                   exactly once; here, in
                                                   the word the flags
                                                   above leave, the
                                                   context keeps its size
                                                   (a larger one costs
                                                   every call pool walks) */

    /* allocated with this one: actx, and this one's pool cleanup */
    ngx_http_airlock_ctx_t           airlock;
    ngx_pool_cleanup_t               cleanup;

    /* not zeroed with the rest: each is set where it is first used */
    ngx_buf_t                        body_buf;  /* the rewritten body's */
    ngx_chain_t                      body_cl;
    al_llm_resp_t                    resp_mem;  /* resp of a JSON answer */
} ngx_http_airlock_llm_ctx_t;


ngx_http_airlock_llm_ctx_t *ngx_http_airlock_llm_get_ctx(
    ngx_http_request_t *r);
void *ngx_http_airlock_llm_body_alloc(void *pool, size_t size);
void ngx_http_airlock_llm_usage(ngx_http_airlock_llm_ctx_t *ctx,
    al_llm_usage_t *u, al_llm_source_t *source);
uint64_t ngx_http_airlock_llm_cost(const ngx_http_airlock_llm_ctx_t *ctx,
    const al_llm_usage_t *u);
void ngx_http_airlock_llm_reserved(const ngx_http_airlock_llm_ctx_t *ctx,
    al_llm_usage_t *u);
ngx_int_t ngx_http_airlock_llm_resend(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx);
void ngx_http_airlock_llm_intercepted(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx);

ngx_int_t ngx_http_airlock_llm_filter_init(ngx_conf_t *cf);
al_llm_sse_t *ngx_http_airlock_llm_sse_get(ngx_log_t *log);
void ngx_http_airlock_llm_sse_put(al_llm_sse_t *sse);
void ngx_http_airlock_llm_headers_of(ngx_http_request_t *r,
    ngx_http_airlock_llm_provider_t *prov, ngx_http_airlock_headers_t *hs);
ngx_int_t ngx_http_airlock_llm_fallback(ngx_http_request_t *r);
const al_llm_price_t *ngx_http_airlock_llm_fallback_price(
    const ngx_http_airlock_llm_ctx_t *ctx, ngx_uint_t *can);
uint64_t ngx_http_airlock_llm_fallback_need(
    const ngx_http_airlock_llm_ctx_t *ctx);
char *ngx_http_airlock_llm_fallback_conf(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
void ngx_http_airlock_llm_fallback_check(ngx_conf_t *cf,
    ngx_http_core_loc_conf_t *clcf, const al_llm_t *llm);
ngx_int_t ngx_http_airlock_llm_request_id_header(ngx_http_request_t *r);
void ngx_http_airlock_llm_target_restore(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx);
ngx_int_t ngx_http_airlock_llm_add_variables(ngx_conf_t *cf);

char *ngx_http_airlock_llm_zone(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_airlock_llm_metrics(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_int_t ngx_http_airlock_llm_reserve(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, const al_llm_amount_t *need);
void ngx_http_airlock_llm_settle(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, const al_llm_usage_t *u, uint64_t cost);
ngx_int_t ngx_http_airlock_llm_limit_headers(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx);
void ngx_http_airlock_llm_close(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx);
void ngx_http_airlock_llm_zone_reclaim(ngx_cycle_t *cycle);
ngx_int_t ngx_http_airlock_llm_state_bind(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, u_char *id, size_t len);
ngx_int_t ngx_http_airlock_llm_state_owner(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, u_char *id, size_t len);
ngx_int_t ngx_http_airlock_llm_state_owners(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, const u_char *body,
    const al_llm_state_id_t *ids, ngx_uint_t n, ngx_uint_t *first);


extern ngx_module_t  ngx_http_airlock_llm_module;


/*
 * Content-Type: text/event-stream, parameters allowed.  Inline: every
 * answer's header filter asks it.
 */

static ngx_inline ngx_int_t
ngx_http_airlock_llm_event_type(const ngx_str_t *ct)
{
    size_t  n;

    n = sizeof("text/event-stream") - 1;

    if (ct->len < n
        || !ngx_http_airlock_lower_eq(ct->data, (u_char *) "text/event-stream",
                                      n))
    {
        return 0;
    }

    return ct->len == n || ct->data[n] == ';' || ct->data[n] == ' ';
}


#endif /* _NGX_HTTP_AIRLOCK_LLM_MODULE_H_INCLUDED_ */
