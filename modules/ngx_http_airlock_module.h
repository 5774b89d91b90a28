
/*
 * Airlock: shared declarations of ngx_http_airlock_module.
 */


#ifndef _NGX_HTTP_AIRLOCK_MODULE_H_INCLUDED_
#define _NGX_HTTP_AIRLOCK_MODULE_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "airlock.h"


/*
 * nginx 1.23 linked the request headers of one name through
 * ngx_table_elt_t.next and made every shortcut a pointer to the first of
 * them (r->headers_in.cookies, an array, became r->headers_in.cookie).
 */
#if (nginx_version >= 1023000)
#define NGX_HTTP_AIRLOCK_LINKED_HEADERS  1
#else
#define NGX_HTTP_AIRLOCK_LINKED_HEADERS  0
#endif


/* what a route needs at request time, built at configuration time */
typedef struct {
    ngx_str_t                    upstream;      /* "https://host[:port]" */
    ngx_table_elt_t             *inject;        /* headers to add */
    ngx_uint_t                   ninject;
    al_scrub_t                  *scrub;         /* NULL: nothing to scrub */
    size_t                       minlen;        /* its shortest string */
    u_char                      *first;         /* [256] first bytes of the
                                                   scrub strings */
    ngx_uint_t                   nfirst;
    u_char                       firsts[8];     /* the first bytes, when
                                                   there are at most 8 */
    u_char                      *nibbles;       /* [160] the two-byte
                                                   starts as nibble tables,
                                                   for the AVX2 walk; NULL:
                                                   none */
    u_char                       space[2];      /* the starts whose second
                                                   byte is ' ', a bit each,
                                                   by group of 8 */
} ngx_http_airlock_route_t;


/* bytes of a struct: size of them from offset */
typedef struct {
    ngx_uint_t                   offset;
    size_t                       size;
} ngx_http_airlock_span_t;


/* room for the shortcuts of a list's names (ngx_http_airlock_keep_init()) */
#define NGX_HTTP_AIRLOCK_KEEP_MAX           8


/* a prefix variable of nginx's whose values are scrubbed, and its handler */
typedef struct {
    ngx_str_t                    prefix;
    ngx_http_get_variable_pt     handler;
} ngx_http_airlock_wrap_t;


typedef struct {
    ngx_str_t                    policy_file;
    ngx_str_t                    policy_conf;   /* where the directive was */
    ngx_uint_t                   policy_line;
    ngx_str_t                    keyring_file;
    al_policy_t                 *policy;
    al_scrub_t                  *scrub;         /* the policy's list, made
                                                   when first needed */
    ngx_http_airlock_route_t    *routes;        /* [policy->nroutes] */
    size_t                       body_max;      /* largest route max_bytes */
    ngx_int_t                    request_id_index;
    ngx_shm_zone_t              *zone;          /* airlock_zone; NULL: no
                                                   counting */
    ngx_open_file_t             *journal;       /* airlock_journal */
    ngx_array_t                 *ends;          /* of the log files: their
                                                   zones, where a line is
                                                   left cut short */
    ngx_flag_t                   dumpable;      /* airlock_worker_dumpable */
    ngx_http_handler_pt          proxy_handler; /* the proxy module's
                                                   content handler */
    ngx_uint_t                   proxy_known;   /* proxy_handler is set,
                                                   NULL without the proxy
                                                   module */

    /*
     * the headers_in shortcuts a header rewrite clears: the pointers as
     * runs of adjacent ones, and the arrays by offset
     */
    ngx_http_airlock_span_t      clear[64];
    ngx_uint_t                   nclear;
    ngx_uint_t                   clear_multi[4];    /* arrays */
    ngx_uint_t                   nclear_multi;

    ngx_http_airlock_wrap_t      wrap[3];       /* $upstream_http_ and the
                                                   two like it */
    ngx_uint_t                   nwrap;

    /* the client headers a named route keeps: their shortcuts, and where
       their names of each length begin */
    ngx_http_header_t           *keep_hh[NGX_HTTP_AIRLOCK_KEEP_MAX];
    u_char                       keep_at[64];

    /* the same for a route that takes no body: no Content-Type */
    ngx_http_header_t           *bodyless_hh[NGX_HTTP_AIRLOCK_KEEP_MAX];
    u_char                       bodyless_at[64];
} ngx_http_airlock_main_conf_t;


typedef struct {
    ngx_open_file_t             *deny_log;      /* NULL: off */
    ngx_flag_t                   airlock;       /* has Airlock locations */
    char                        *admin;         /* "airlock_status" or
                                                   "airlock_llm_metrics":
                                                   an admin location's,
                                                   NULL: none */
} ngx_http_airlock_srv_conf_t;


typedef struct {
    ngx_flag_t                   enable;
    ngx_flag_t                   status;        /* airlock_status */
    size_t                       scrub_hold;    /* airlock_scrub_hold */
    ngx_uint_t                   log_level;     /* airlock_log_level */
    ngx_uint_t                   forwards;      /* an Airlock location
                                                   (conf_check): a request
                                                   keeps its credentials
                                                   here; not inherited */
} ngx_http_airlock_loc_conf_t;


typedef struct ngx_http_airlock_ctx_s  ngx_http_airlock_ctx_t;


/*
 * The connection log of a request whose log lines are scrubbed: what its
 * writer and the chain after it were (ngx_http_airlock_scrub_log()).
 */
typedef struct {
    ngx_log_t                   *log;
    ngx_log_writer_pt            writer;
    void                        *wdata;
    ngx_log_t                   *next;
    ngx_http_airlock_ctx_t      *ctx;
} ngx_http_airlock_log_t;


/* what a module adds to the request path (ngx_http_airlock_request.c) */
typedef struct {
    /* the body, if any, is read: check it, allow or refuse the request;
       returns NGX_DECLINED to go on, NGX_DONE when answered, or a status */
    ngx_int_t                  (*body)(ngx_http_request_t *r,
                                       ngx_http_airlock_ctx_t *ctx);
    /* answers an error status nginx chose (a body it could not read) in
       the module's format; returns what ngx_http_output_filter() does */
    ngx_int_t                  (*error)(ngx_http_request_t *r,
                                        ngx_http_airlock_ctx_t *ctx,
                                        ngx_uint_t status);
} ngx_http_airlock_path_t;


/* a request body read whole (ngx_http_airlock_body()) */
typedef struct {
    u_char                      *data;
    size_t                       len;
    ngx_str_t                    ctype;         /* Content-Type; data NULL:
                                                   none */
    unsigned                     in_file:1;     /* a part went to a file */
} ngx_http_airlock_body_t;


/*
 * A list of header names, written once for both its ngx_str_t array and
 * the mask of their lengths (ngx_http_airlock_headers_t's keep_lens,
 * ngx_http_airlock_token_conf_t's refuse_lens), a constant: LIST(X)
 * calls X("name") for each.
 */
#define NGX_HTTP_AIRLOCK_HEADER_STR(s)      ngx_string(s),
#define NGX_HTTP_AIRLOCK_HEADER_LEN_BIT(s)  | ((uint64_t) 1 << (sizeof(s) - 1))
#define NGX_HTTP_AIRLOCK_HEADER_LENS(list)                                    \
    ((uint64_t) 0 list(NGX_HTTP_AIRLOCK_HEADER_LEN_BIT))


/* the request headers an upstream gets (ngx_http_airlock_rewrite_headers()) */
typedef struct {
    ngx_str_t                   *keep;          /* names of the client
                                                   headers kept, lower case;
                                                   a null string ends it */
    uint64_t                     keep_lens;     /* bit n: a name of keep is
                                                   n bytes long (all are
                                                   under 64) */
    ngx_http_header_t          **keep_hh;       /* [i]: the headers_in
                                                   shortcut of keep[i]'s
                                                   name, NULL: none
                                                   (ngx_http_airlock_keep_
                                                   init()) */
    u_char                      *keep_at;       /* [n]: the index of the
                                                   first name of keep n
                                                   bytes long */
    ngx_uint_t                   cookies;       /* Cookie too */
    ngx_table_elt_t             *inject;        /* the credentials: added,
                                                   replacing a kept header
                                                   of their name, read by
                                                   no variable */
    ngx_uint_t                   ninject;
    ngx_table_elt_t             *defaults;      /* added when no kept
                                                   header has their name */
    ngx_uint_t                   ndefaults;
} ngx_http_airlock_headers_t;


/* where a client's token may be (ngx_http_airlock_token()) */
#define NGX_HTTP_AIRLOCK_TOKEN_AUTHORIZATION  0x01  /* Bearer */
#define NGX_HTTP_AIRLOCK_TOKEN_PROXY          0x02  /* Proxy-Authorization:
                                                       Bearer */
#define NGX_HTTP_AIRLOCK_TOKEN_API_KEY        0x04  /* x-api-key, api-key */
#define NGX_HTTP_AIRLOCK_TOKEN_ANY            0x07


/* how a module reads a client's token (ngx_http_airlock_token()) */
typedef struct {
    ngx_uint_t                   headers;       /* NGX_HTTP_AIRLOCK_TOKEN_* */
    al_reason_t                  repeated;      /* one of them sent twice */
    ngx_str_t                   *refuse;        /* method override headers
                                                   refused, lower case, a
                                                   null string ends it;
                                                   NULL: none */
    uint64_t                     refuse_lens;   /* bit n: one of them is
                                                   n bytes long; a
                                                   constant */
    ngx_uint_t                   lenient;       /* the first token found;
                                                   nothing refused */
} ngx_http_airlock_token_conf_t;


struct ngx_http_airlock_ctx_s {
    ngx_http_request_t          *request;       /* first, for
                                                   ..._find_ctx() */
    ngx_http_airlock_path_t     *path;
    const al_client_t           *client;
    al_peer_t                    peer;
    const al_route_t            *route;
    ngx_http_airlock_route_t    *rconf;
    al_reason_t                  reason;
    ngx_str_t                    uri;           /* upstream path?query */
    ngx_uint_t                   method;        /* as decided */
    ngx_str_t                    method_name;

    /* response scrubbing */
    u_char                      *carry;         /* a possible match start */
    size_t                       carry_len;
    u_char                      *join;          /* carry + next bytes */
    ngx_chain_t                 *out;
    ngx_chain_t                **last_out;
    ngx_buf_t                   *tail;          /* last one in out */
    ngx_buf_t                   *buf;           /* copy buffer being
                                                   written, if the tail */
    ngx_buf_t                   *ref;           /* last one pointing into
                                                   the input buffer */
    ngx_buf_t                   *held;          /* a small body, copied */
    ngx_buf_t                   *whole;         /* or left where it came:
                                                   the upstream's buffer
                                                   holding all of it */
    size_t                       hold_len;      /* its Content-Length */
    ngx_chain_t                 *free;          /* copy buffers */
    ngx_chain_t                 *free_refs;     /* buffers without memory */
    ngx_chain_t                 *busy;

    /*
     * Response headers [own_from, own_to) of headers_out.headers, by
     * position: made by the gateway itself from its own numbers (rate
     * limits, request id), so the scrub passes them by.
     */
    ngx_uint_t                   own_from;
    ngx_uint_t                   own_to;

    ngx_http_upstream_t         *refused;       /* its answer was refused as
                                                   unsearchable */

    /*
     * Allocated with the context, linked into the request pool's cleanups
     * as ngx_pool_cleanup_add() would: the context's own, and the first
     * scrubbing log writer's (ngx_http_airlock_scrub_log()).
     */
    ngx_pool_cleanup_t           cleanup;
    ngx_pool_cleanup_t           log_cleanup;
    ngx_http_airlock_log_t       log;

    unsigned                     decided:1;
    unsigned                     allowed:1;
    unsigned                     reading_body:1;
    unsigned                     body_failed:1; /* nginx refused the body */
    unsigned                     scrub_body:1;
    unsigned                     hold:1;
    unsigned                     scrubbed:1;
    unsigned                     scrub_logged:1;
    unsigned                     discard:1;     /* what comes of the
                                                   refused answer after
                                                   its error page */
};


/* an alert raised by a denial (ngx_http_airlock_zone.c) */
typedef struct {
    ngx_uint_t                   kind;          /* NGX_HTTP_AIRLOCK_ALERT_* */
    ngx_uint_t                   count;
    ngx_uint_t                   window;        /* seconds */
    ngx_msec_t                   left;          /* of the quarantine, ms */
} ngx_http_airlock_alert_t;


#define NGX_HTTP_AIRLOCK_ALERT_DENY        0    /* deny_threshold */
#define NGX_HTTP_AIRLOCK_ALERT_QUARANTINE  1

/*
 * Every line of the modules' at run time, as ngx_log_error() writes it,
 * but with the context nginx ends a request's line with (the request
 * line, the Host, the Referer, as the client sent them) escaped
 * (ngx_http_airlock_log_error_core()).  Nothing is done for a line the
 * log's level leaves out.  Debug lines have no context: ngx_log_debug*()
 * as they are.
 */
#if (NGX_HAVE_C99_VARIADIC_MACROS)

#define ngx_http_airlock_log_error(level, log, ...)                           \
    if ((log)->log_level >= level)                                            \
        ngx_http_airlock_log_error_core(level, log, __VA_ARGS__)

#else

#define ngx_http_airlock_log_error  ngx_http_airlock_log_error_core

#endif


/* "2026-11-30T03:40:00.123Z" */
#define NGX_HTTP_AIRLOCK_TIME_LEN  (sizeof("1970-01-01T00:00:00.000Z") - 1)
#define NGX_HTTP_AIRLOCK_REASON_LEN  32


ngx_int_t ngx_http_airlock_phase_first(ngx_cycle_t *cycle,
    ngx_http_handler_pt handler);
void *ngx_http_airlock_find_ctx(ngx_http_request_t *r, ngx_module_t *module,
    ngx_pool_cleanup_pt handler);
ngx_http_airlock_ctx_t *ngx_http_airlock_get_ctx(ngx_http_request_t *r);
/* a cleanup that is part of a larger allocation, run as one added by
   ngx_pool_cleanup_add() */
static ngx_inline void
ngx_http_airlock_cleanup_link(ngx_pool_t *pool, ngx_pool_cleanup_t *c,
    ngx_pool_cleanup_pt handler, void *data)
{
    c->handler = handler;
    c->data = data;
    c->next = pool->cleanup;
    pool->cleanup = c;
}

/*
 * 1 when the n bytes at a and b are the same: names of 8 to 16 bytes (most
 * header names) as two words each, overlapping, the rest by memcmp()
 */
static ngx_inline ngx_uint_t
ngx_http_airlock_same(const u_char *a, const u_char *b, size_t n)
{
    uint64_t  a0, a1, b0, b1;

    if (n < 8 || n > 16) {
        return ngx_memcmp(a, b, n) == 0;
    }

    ngx_memcpy(&a0, a, 8);
    ngx_memcpy(&b0, b, 8);
    ngx_memcpy(&a1, a + n - 8, 8);
    ngx_memcpy(&b1, b + n - 8, 8);

    return ((a0 ^ b0) | (a1 ^ b1)) == 0;
}

/* a chain link and the buffer struct it holds, allocated together */
typedef struct {
    ngx_chain_t                  cl;
    ngx_buf_t                    buf;
} ngx_http_airlock_chain_buf_t;


/*
 * ngx_chain_get_free_buf() in one allocation: a link of *free, or a new
 * link with its buffer struct, of which only start and end are set (NULL);
 * the caller sets the rest.  Such a link goes back to a free list of its
 * own, never to ngx_free_chain().
 */
static ngx_inline ngx_chain_t *
ngx_http_airlock_chain_buf(ngx_pool_t *pool, ngx_chain_t **free)
{
    ngx_chain_t                   *cl;
    ngx_http_airlock_chain_buf_t  *cb;

    cl = *free;

    if (cl != NULL) {
        *free = cl->next;
        cl->next = NULL;
        return cl;
    }

    cb = ngx_palloc(pool, sizeof(ngx_http_airlock_chain_buf_t));
    if (cb == NULL) {
        return NULL;
    }

    cb->buf.start = NULL;
    cb->buf.end = NULL;
    cb->cl.buf = &cb->buf;
    cb->cl.next = NULL;

    return &cb->cl;
}

void ngx_http_airlock_init_ctx(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx, ngx_http_airlock_path_t *path);
ngx_http_airlock_ctx_t *ngx_http_airlock_create_ctx(ngx_http_request_t *r,
    ngx_http_airlock_path_t *path);
ngx_int_t ngx_http_airlock_enter(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx);
ngx_int_t ngx_http_airlock_read_body(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx, ngx_uint_t has_body);
ngx_int_t ngx_http_airlock_discard_body(ngx_http_request_t *r);
ngx_int_t ngx_http_airlock_read_empty_body(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx);
ngx_uint_t ngx_http_airlock_body_empty(ngx_http_request_t *r);
ngx_int_t ngx_http_airlock_body(ngx_http_request_t *r, size_t max,
    ngx_http_airlock_body_t *body);
ngx_int_t ngx_http_airlock_body_set(ngx_http_request_t *r, u_char *data,
    size_t len);
ngx_int_t ngx_http_airlock_body_put(ngx_http_request_t *r, ngx_buf_t *b,
    ngx_chain_t *cl, u_char *data, size_t len);
void ngx_http_airlock_refuse(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx, al_reason_t reason, const char *detail,
    ngx_uint_t counted);
ngx_int_t ngx_http_airlock_allowed(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx, ngx_http_airlock_headers_t *hs);
ngx_int_t ngx_http_airlock_send_json(ngx_http_request_t *r,
    ngx_uint_t status, ngx_buf_t *b);
al_reason_t ngx_http_airlock_token(ngx_http_request_t *r,
    ngx_http_airlock_token_conf_t *tc, ngx_str_t *token,
    const char **detail);
ngx_uint_t ngx_http_airlock_lower_eq(u_char *s, u_char *lower, size_t n);
ngx_uint_t ngx_http_airlock_same_secret(u_char *a, u_char *b, size_t n);
ngx_int_t ngx_http_airlock_rewrite_headers(ngx_http_request_t *r,
    ngx_http_airlock_headers_t *hs);
ngx_int_t ngx_http_airlock_drop_credentials(ngx_http_request_t *r);
ngx_int_t ngx_http_airlock_shortcuts_init(ngx_conf_t *cf,
    ngx_http_airlock_main_conf_t *amcf);
ngx_int_t ngx_http_airlock_keep_init(ngx_conf_t *cf, ngx_str_t *keep,
    ngx_http_header_t **hh, u_char *at);

ngx_int_t ngx_http_airlock_denial_set(ngx_http_request_t *r,
    al_reason_t reason);

/* the policy's scrub list (al_scrub_collect_all()), made once */
al_scrub_t *ngx_http_airlock_policy_scrub(ngx_conf_t *cf,
    ngx_http_airlock_main_conf_t *amcf, const char **why);

ngx_int_t ngx_http_airlock_filter_init(ngx_conf_t *cf);
ngx_int_t ngx_http_airlock_scrub_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v);
ngx_int_t ngx_http_airlock_route_scrub_init(ngx_conf_t *cf,
    ngx_http_airlock_route_t *rc, al_scrub_t *scrub);
ngx_int_t ngx_http_airlock_scrub_log(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx);

char *ngx_http_airlock_deny_log(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_airlock_journal(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_open_file_t *ngx_http_airlock_open_file(ngx_conf_t *cf, ngx_str_t *name);
ngx_int_t ngx_http_airlock_log_args(ngx_conf_t *cf, ngx_uint_t from,
    ssize_t *size, ngx_msec_t *flush);
char *ngx_http_airlock_file_buffer(ngx_conf_t *cf, ngx_open_file_t *file,
    size_t size, ngx_msec_t flush);
char *ngx_http_airlock_file_buffer_default(ngx_conf_t *cf,
    ngx_open_file_t *file, size_t size);
void ngx_http_airlock_logs_init_process(ngx_cycle_t *cycle);
void ngx_http_airlock_logs_exit_process(ngx_cycle_t *cycle);
void ngx_http_airlock_file_write(ngx_open_file_t *file, u_char *line,
    size_t len, ngx_log_t *log);
u_char *ngx_http_airlock_file_room(ngx_open_file_t *file, size_t max);
void ngx_http_airlock_file_commit(ngx_open_file_t *file, size_t len);
void ngx_cdecl ngx_http_airlock_log_error_core(ngx_uint_t level,
    ngx_log_t *log, ngx_err_t err, const char *fmt, ...);
ngx_int_t ngx_http_airlock_log_str(ngx_pool_t *pool, ngx_str_t *dst,
    ngx_str_t *src, size_t max);
void ngx_http_airlock_log_deny(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx, const char *detail);
void ngx_http_airlock_log_alert(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx, ngx_http_airlock_alert_t *alert);
u_char *ngx_http_airlock_time(u_char *p, ngx_msec_t ms);
void ngx_http_airlock_log_zone(ngx_cycle_t *cycle);
ngx_int_t ngx_http_airlock_request_id(ngx_http_request_t *r,
    ngx_str_t *id);

ngx_int_t ngx_http_airlock_add_variables(ngx_conf_t *cf);
ngx_int_t ngx_http_airlock_wrap_variables(ngx_conf_t *cf,
    ngx_http_airlock_main_conf_t *amcf);

char *ngx_http_airlock_zone(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_http_airlock_status(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_msec_t ngx_http_airlock_quarantined(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx);
ngx_uint_t ngx_http_airlock_count(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx, ngx_http_airlock_alert_t *alerts);
u_char *ngx_http_airlock_peer_text(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx, u_char *p, u_char *last);
ngx_int_t ngx_http_airlock_status_check(ngx_conf_t *cf);
ngx_uint_t ngx_http_airlock_zone_made(ngx_shm_zone_t *shm_zone);

void *ngx_http_airlock_conf_of(ngx_conf_t *cf, const char *name);
char *ngx_http_airlock_conf_check(ngx_conf_t *cf,
    ngx_http_core_loc_conf_t *clcf);
char *ngx_http_airlock_conf_bind(ngx_conf_t *cf,
    ngx_http_core_loc_conf_t *clcf, ngx_str_t *url, ngx_uint_t https,
    ngx_http_handler_pt *handler, ngx_http_upstream_srv_conf_t **block);
char *ngx_http_airlock_conf_clear(ngx_conf_t *cf, const al_policy_t *p,
    ngx_str_t *conf, ngx_uint_t line);
ngx_int_t ngx_http_airlock_init_process(ngx_cycle_t *cycle);
void ngx_http_airlock_not_dumpable(ngx_log_t *log);
ngx_int_t ngx_http_airlock_refused_handler(ngx_http_request_t *r);
ngx_int_t ngx_http_airlock_error_handler(ngx_http_request_t *r);

ngx_int_t ngx_http_airlock_real_peer(ngx_connection_t *c, al_peer_t *peer);
const al_client_t *ngx_http_airlock_identify(ngx_connection_t *c,
    const al_policy_t *p, const al_peer_t *peer, ngx_str_t *token,
    const char **why);
u_char *ngx_http_airlock_peer_addr_text(al_peer_t *peer, u_char *p,
    u_char *last);


extern ngx_module_t  ngx_http_airlock_module;


#endif /* _NGX_HTTP_AIRLOCK_MODULE_H_INCLUDED_ */
