
/*
 * Airlock: the request path both modules share.
 *
 * ngx_http_airlock_module (named routes) and ngx_http_airlock_llm_module
 * (the LLM gateway) each decide a request in their own way; everything
 * around the decision is here, once:
 *
 *   - where the preaccess handlers run: first in their phase;
 *   - the per-request context, and how it is found again after an
 *     internal redirect;
 *   - what the preaccess handler does when it runs again for a request
 *     (an error page, a named location), a body read that failed included;
 *   - reading the body without blocking into one memory buffer, and going
 *     on through the phases once it is read;
 *   - the bookkeeping of a refusal (count, deny log, alerts) and of an
 *     allowed request;
 *   - sending a JSON answer (the Airlock-Denial header that marks a
 *     refusal as the proxy's is ngx_http_airlock_denial.c's);
 *   - reading the client's token from the request headers, strictly for
 *     a decision and leniently for a request nginx refused first, and
 *     taking the client's credential headers out as they are read (a
 *     refusal takes its cookies out too);
 *   - the header rewrite: only allowlisted client headers are kept, the
 *     credentials are added, and every r->headers_in shortcut is pointed at
 *     a kept header or cleared; the credentials are taken out again when
 *     the request reaches any other location.
 *
 * A module hooks in through an ngx_http_airlock_path_t: what to do once
 * the body is read, and how to answer an error in its own format.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_airlock_module.h"


/* a header that may carry a client's token */
typedef struct {
    ngx_str_t                    name;          /* lower case */
    ngx_uint_t                   kind;          /* NGX_HTTP_AIRLOCK_TOKEN_* */
    ngx_uint_t                   bearer;        /* "Bearer <token>"; else
                                                   the value is the token */
    const char                  *repeated;
    const char                  *malformed;     /* no Bearer scheme */
    const char                  *empty;
} ngx_http_airlock_token_header_t;


static void ngx_http_airlock_ctx_cleanup(void *data);
static ngx_int_t ngx_http_airlock_token_value(ngx_table_elt_t *h,
    ngx_uint_t bearer, ngx_str_t *token);
static ngx_uint_t ngx_http_airlock_body_gone(ngx_http_request_t *r);
static void ngx_http_airlock_body_handler(ngx_http_request_t *r);
static void ngx_http_airlock_empty_body_handler(ngx_http_request_t *r);
static ngx_uint_t ngx_http_airlock_body_begun(ngx_http_request_t *r);
static void ngx_http_airlock_empty_body_read(ngx_http_request_t *r);
static ngx_int_t ngx_http_airlock_body_error(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx);
static ngx_int_t ngx_http_airlock_header_kept(ngx_table_elt_t *h,
    uint64_t lens, ngx_http_airlock_headers_t *hs);
static ngx_uint_t ngx_http_airlock_header_in(ngx_table_elt_t *h,
    ngx_table_elt_t *list, ngx_uint_t n);
static ngx_uint_t ngx_http_airlock_header_listed(ngx_table_elt_t *h,
    ngx_list_t *list);
static ngx_int_t ngx_http_airlock_header_add(ngx_http_request_t *r,
    ngx_table_elt_t *h, ngx_http_header_t *hh, ngx_uint_t hidden);
static ngx_http_header_t *ngx_http_airlock_shortcut_of(
    ngx_http_core_main_conf_t *cmcf, ngx_table_elt_t *h);
static void ngx_http_airlock_clear_shortcuts(ngx_http_request_t *r);
static void ngx_http_airlock_set_shortcut(ngx_http_request_t *r,
    ngx_http_header_t *hh, ngx_table_elt_t *h);
static ngx_uint_t ngx_http_airlock_shortcut_multi(ngx_uint_t offset);
static ngx_uint_t ngx_http_airlock_token_index(ngx_table_elt_t *h);
static void ngx_http_airlock_refuse_cookies(ngx_http_request_t *r);
static uint64_t ngx_http_airlock_lower_diff64(u_char *s, u_char *lower);
static uint32_t ngx_http_airlock_lower_diff32(u_char *s, u_char *lower);


/*
 * in the order a strict reading compares them; each name of a length of
 * its own (ngx_http_airlock_token_index() finds them by it)
 */

static ngx_http_airlock_token_header_t  ngx_http_airlock_token_headers[] = {

    { ngx_string("authorization"), NGX_HTTP_AIRLOCK_TOKEN_AUTHORIZATION, 1,
      "more than one Authorization header",
      "Authorization is not a Bearer token",
      "empty Bearer token in Authorization" },

    { ngx_string("proxy-authorization"), NGX_HTTP_AIRLOCK_TOKEN_PROXY, 1,
      "more than one Proxy-Authorization header",
      "Proxy-Authorization is not a Bearer token",
      "empty Bearer token in Proxy-Authorization" },

    { ngx_string("x-api-key"), NGX_HTTP_AIRLOCK_TOKEN_API_KEY, 0,
      "more than one x-api-key header",
      NULL,
      "empty x-api-key" },

    { ngx_string("api-key"), NGX_HTTP_AIRLOCK_TOKEN_API_KEY, 0,
      "more than one api-key header",
      NULL,
      "empty api-key" }
};

#define NGX_HTTP_AIRLOCK_NTOKEN_HEADERS                                       \
    (sizeof(ngx_http_airlock_token_headers)                                   \
     / sizeof(ngx_http_airlock_token_header_t))


/*
 * nginx runs a phase's handlers in the reverse order of their modules'
 * postconfiguration and ends the preaccess phase at the first handler
 * that returns NGX_OK (ngx_http_core_generic_phase()), so the handler of
 * any module loaded after this one (a load_module further down, a
 * modules-enabled file sorted after ours) would run before the decision,
 * and one that returned NGX_OK would skip it: no route check, no header
 * rewrite, no credential taken out in another location.  Once the phase
 * engine is built (init_module), the handler is moved to the front of its
 * phase, the others keeping their order: the handlers of a phase share
 * its checker and its next, and r->phase_handler only ever points at the
 * handler that runs.  Called for a module's handler after another's, it
 * puts the later one first.
 */

ngx_int_t
ngx_http_airlock_phase_first(ngx_cycle_t *cycle, ngx_http_handler_pt handler)
{
    ngx_http_phase_handler_t    ours, *ph, *first;
    ngx_http_core_main_conf_t  *cmcf;

    cmcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_core_module);

    if (cmcf == NULL || cmcf->phase_engine.handlers == NULL) {
        return NGX_OK;
    }

    for (ph = cmcf->phase_engine.handlers; ph->checker; ph++) {
        if (ph->handler == handler) {
            break;
        }
    }

    if (ph->checker == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                      "airlock: a phase handler is missing from nginx's "
                      "phase engine");
        return NGX_ERROR;
    }

    first = ph;

    while (first > cmcf->phase_engine.handlers
           && first[-1].checker == ph->checker
           && first[-1].next == ph->next)
    {
        first--;
    }

    if (first == ph) {
        return NGX_OK;
    }

    ours = *ph;
    ngx_memmove(first + 1, first,
                (ph - first) * sizeof(ngx_http_phase_handler_t));
    *first = ours;

    return NGX_OK;
}


/*
 * The context survives internal redirects (error_page, named locations),
 * which clear r->ctx: it is found again through the request pool cleanup
 * that was registered with it, as realip does.  Both modules' contexts
 * begin with the request they belong to.
 */

void *
ngx_http_airlock_find_ctx(ngx_http_request_t *r, ngx_module_t *module,
    ngx_pool_cleanup_pt handler)
{
    void                *ctx;
    ngx_pool_cleanup_t  *cln;

    ctx = r->ctx[module->ctx_index];

    if (ctx != NULL || !(r->internal || r->filter_finalize)) {
        return ctx;
    }

    for (cln = r->pool->cleanup; cln; cln = cln->next) {
        if (cln->handler == handler
            && *(ngx_http_request_t **) cln->data == r)
        {
            ngx_http_set_ctx(r, cln->data, (*module));
            return cln->data;
        }
    }

    return NULL;
}


ngx_http_airlock_ctx_t *
ngx_http_airlock_get_ctx(ngx_http_request_t *r)
{
    return ngx_http_airlock_find_ctx(r, &ngx_http_airlock_module,
                                     ngx_http_airlock_ctx_cleanup);
}


ngx_http_airlock_ctx_t *
ngx_http_airlock_create_ctx(ngx_http_request_t *r,
    ngx_http_airlock_path_t *path)
{
    ngx_http_airlock_ctx_t  *ctx;

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_airlock_ctx_t));
    if (ctx == NULL) {
        return NULL;
    }

    ngx_http_airlock_init_ctx(r, ctx, path);

    return ctx;
}


/*
 * A context in zeroed memory the caller allocated with its own (the LLM
 * gateway's context holds it): set and made the request's.
 */

void
ngx_http_airlock_init_ctx(ngx_http_request_t *r, ngx_http_airlock_ctx_t *ctx,
    ngx_http_airlock_path_t *path)
{
    ngx_http_airlock_cleanup_link(r->pool, &ctx->cleanup,
                                  ngx_http_airlock_ctx_cleanup, ctx);

    ctx->request = r;
    ctx->path = path;
    ctx->reason = AL_REASON_NONE;
    ctx->method = r->method;
    ctx->method_name = r->method_name;

    ngx_http_set_ctx(r, ctx, ngx_http_airlock_module);
}


static void
ngx_http_airlock_ctx_cleanup(void *data)
{
    ngx_http_airlock_ctx_t  *ctx = data;

    ctx->request = NULL;
}


/*
 * The start of both preaccess handlers once the location is theirs.
 * NGX_OK: a new request, to be decided.  Anything else is what the
 * handler returns: a request is decided once, and an internal redirect
 * finds the decision standing.
 *
 * A subrequest never enters an Airlock location (403), nor does a
 * post_action: nginx runs that once the answer is sent and throws its
 * answer away unread (ngx_http_send_header() does nothing for it), so a
 * decided request would go to its upstream a second time, credential
 * included, and an LLM call be billed twice and charged once.  It ends
 * here unsent (NGX_DONE).
 *
 * An error_page to a URI turns every method but HEAD into GET
 * (ngx_http_send_error_page()).  A location that forwards sends the
 * request as it was decided, so it gets the method the route matched
 * back: a POST route's credential never goes out on a GET of its URI.
 * A location that answers itself (airlock_error_json, a static error
 * page, a return) keeps nginx's GET.
 */

ngx_int_t
ngx_http_airlock_enter(ngx_http_request_t *r, ngx_http_airlock_ctx_t *ctx)
{
    ngx_str_t                  uri;
    ngx_http_core_loc_conf_t  *clcf;

    if (r != r->main || r->post_action) {

        /* decoded: "%1B" is ESC */

        if (ngx_http_airlock_log_str(r->pool, &uri, &r->uri,
                                     NGX_MAX_ERROR_STR)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        if (r != r->main) {
            ngx_http_airlock_log_error(NGX_LOG_ERR, r->connection->log, 0,
                                       "airlock: subrequest to \"%V\" "
                                       "refused", &uri);
            return NGX_HTTP_FORBIDDEN;
        }

        ngx_http_airlock_log_error(NGX_LOG_ERR, r->connection->log, 0,
                                   "airlock: post_action to \"%V\" refused",
                                   &uri);

        /*
         * Ended as a post_action whose answer came: a status here would
         * be logged (and the usage line written) as the client's.  Spent
         * URI changes end the post_actions (ngx_http_post_action()): this
         * location's own would lead here again, each time refused, and
         * then to nginx's redirection cycle, a 500.
         */

        r->uri_changes = 0;
        ngx_http_finalize_request(r, NGX_OK);

        return NGX_DONE;
    }

    if (ctx == NULL) {
        return NGX_OK;
    }

    if (ctx->reading_body) {
        return ngx_http_airlock_body_error(r, ctx);
    }

    if (!ctx->allowed) {
        return NGX_HTTP_FORBIDDEN;
    }

    clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

    if ((r->method_name.len != ctx->method_name.len
         || ngx_strncmp(r->method_name.data, ctx->method_name.data,
                        ctx->method_name.len) != 0)
        && clcf->handler != NULL
        && clcf->handler != ngx_http_airlock_error_handler)
    {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "airlock: method \"%V\" back to \"%V\" as decided",
                       &r->method_name, &ctx->method_name);

        r->method = ctx->method;
        r->method_name = ctx->method_name;
    }

    /* the new location's error logs are taken over too */

    if (ngx_http_airlock_scrub_log(r, ctx) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return NGX_DECLINED;
}


/*
 * A body is read without blocking, into one memory buffer; then the
 * module's path->body() checks it and allows or refuses the request.  A
 * request without a body goes there at once.  Returns what the preaccess
 * handler returns.
 */

ngx_int_t
ngx_http_airlock_read_body(ngx_http_request_t *r, ngx_http_airlock_ctx_t *ctx,
    ngx_uint_t has_body)
{
    ngx_int_t  rc;

    if (!has_body
        || (r->headers_in.content_length_n <= 0 && !r->headers_in.chunked))
    {
        return ctx->path->body(r, ctx);
    }

    if (ngx_http_airlock_body_gone(r)) {
        return ngx_http_airlock_body_error(r, ctx);
    }

    r->request_body_in_single_buf = 1;
    r->request_body_in_file_only = 0;
    r->request_body_in_persistent_file = 0;
    r->request_body_in_clean_file = 0;
    r->request_body_no_buffering = 0;

    ctx->reading_body = 1;

    rc = ngx_http_read_client_request_body(r, ngx_http_airlock_body_handler);

    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        /* reading_body stays set: the body was never read */
        return rc;
    }

    ngx_http_finalize_request(r, NGX_DONE);

    return NGX_DONE;
}


/*
 * On a route that takes no body, a chunked one (an HTTP/2 body without a
 * length too) is read all the same: only its end tells an empty one,
 * which is no body, from one with bytes.  It is read unbuffered, and
 * path->body() runs as soon as a byte of it is known, or its end: a body
 * with bytes is refused then, its read still under way, with at most
 * one buffer of it read and none written to a temporary file.  An empty
 * one is left as a whole read leaves it, "Content-Length: 0" for the
 * proxy module and no byte.  Returns what the preaccess handler returns.
 */

ngx_int_t
ngx_http_airlock_read_empty_body(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx)
{
    ngx_int_t  rc;

    if (!r->headers_in.chunked) {
        return ctx->path->body(r, ctx);
    }

    if (ngx_http_airlock_body_gone(r)) {
        return ngx_http_airlock_body_error(r, ctx);
    }

    r->request_body_in_single_buf = 0;
    r->request_body_in_file_only = 0;
    r->request_body_in_persistent_file = 0;
    r->request_body_in_clean_file = 0;
    r->request_body_no_buffering = 1;

    ctx->reading_body = 1;

    rc = ngx_http_read_client_request_body(r,
                                      ngx_http_airlock_empty_body_handler);

    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        /* reading_body stays set: the body was never read */
        return rc;
    }

    ngx_http_finalize_request(r, NGX_DONE);

    return NGX_DONE;
}


/*
 * nginx is throwing the body away (an HTTP/2 stream skips its DATA): it
 * answered the request before its location's phases (a Content-Length
 * over client_max_body_size) or in another location, and an error_page
 * brought it here undecided.  nginx's read would hand over no body at
 * once; the bytes are gone unchecked, and the proxy module would still
 * write the Content-Length, with no body after it: the upstream would
 * read what it is sent next on the connection, another request, as the
 * rest of this one.
 */

static ngx_uint_t
ngx_http_airlock_body_gone(ngx_http_request_t *r)
{
    if (r->discard_body) {
        return 1;
    }

#if (NGX_HTTP_V2)
    if (r->stream != NULL && r->stream->skip_data) {
        return 1;
    }
#endif

    return 0;
}


/*
 * What of an unbuffered read of a body that should be empty has come: a
 * byte (or a chunk announced with one) is decided at once, with the read
 * still under way, and refused; the end, with no byte, is decided as a
 * whole read would be; nothing yet waits for more.
 */

static void
ngx_http_airlock_empty_body_handler(ngx_http_request_t *r)
{
    r->read_event_handler = ngx_http_block_reading;

    if (r->reading_body && !ngx_http_airlock_body_begun(r)) {
        r->read_event_handler = ngx_http_airlock_empty_body_read;
        return;
    }

    if (!r->reading_body) {

        /*
         * The whole body is read; an unbuffered read leaves it unlike a
         * buffered one in two ways the proxy module sees: the body would
         * be sent as read "unbuffered", and an HTTP/2 body keeps no
         * length.  Both are made what a buffered read of it leaves.
         */

        r->request_body_no_buffering = 0;

        if (r->headers_in.content_length_n < 0) {
            r->headers_in.content_length_n = r->request_body->received;
        }
    }

    ngx_http_airlock_body_handler(r);
}


/* a byte of the body has come, or a chunk announced with bytes */

static ngx_uint_t
ngx_http_airlock_body_begun(ngx_http_request_t *r)
{
    ngx_chain_t              *cl;
    ngx_http_request_body_t  *rb;

    rb = r->request_body;

    if (r->headers_in.content_length_n > 0
        || (rb->chunked != NULL && rb->chunked->size > 0))
    {
        return 1;
    }

    for (cl = rb->bufs; cl; cl = cl->next) {
        if (ngx_buf_size(cl->buf) > 0) {
            return 1;
        }
    }

#if (NGX_HTTP_V2)
    /* a DATA frame's bytes, copied but not yet passed on */

    if (r->stream != NULL && rb->buf != NULL && rb->buf->last > rb->buf->pos) {
        return 1;
    }
#endif

    return 0;
}


static void
ngx_http_airlock_empty_body_read(ngx_http_request_t *r)
{
    ngx_int_t  rc;

    rc = ngx_http_read_unbuffered_request_body(r);

    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        /* reading_body stays set: nginx refused the body */
        ngx_http_finalize_request(r, rc);
        return;
    }

    ngx_http_airlock_empty_body_handler(r);
}


static void
ngx_http_airlock_body_handler(ngx_http_request_t *r)
{
    ngx_int_t                rc;
    ngx_http_airlock_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_airlock_module);

    ctx->reading_body = 0;

    /*
     * All of the body is read: nothing of the client's is left to wait
     * for.  nginx lingers on any request that came with a body, and ends
     * it (its log phase: a gateway call's usage line, its budget settled)
     * only when the client hangs up or lingering_timeout passes; a worker
     * stopped fast, or killed, in between lost the line.  Bytes past the
     * body (a pipelined request) still make nginx linger, and so does a
     * body refused at its first byte, its read still under way.
     */
    if (!r->reading_body) {
        r->lingering_close = 0;
    }

    rc = ctx->path->body(r, ctx);

    if (rc == NGX_DONE) {
        return;
    }

    if (rc != NGX_DECLINED) {
        ngx_http_finalize_request(r, rc);
        return;
    }

    r->write_event_handler = ngx_http_core_run_phases;
    r->phase_handler++;
    ngx_http_core_run_phases(r);
}


/*
 * The body could not be read (over client_max_body_size, a bad chunk):
 * nginx answers with its error page, and when that leads to a location
 * of either module, the preaccess handler runs again while the read it
 * started will never end.  The error is answered here, in the module's
 * format, and the connection is closed: the rest of the body is unread.
 */

static ngx_int_t
ngx_http_airlock_body_error(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx)
{
    ngx_int_t  rc;

    ctx->reading_body = 0;
    ctx->body_failed = 1;

    r->keepalive = 0;
    r->lingering_close = 1;

    if (r->err_status == 0) {
        r->err_status = NGX_HTTP_BAD_REQUEST;
    }

    rc = ctx->path->error(r, ctx, r->err_status);

    ngx_http_finalize_request(r, rc);

    return NGX_DONE;
}


/*
 * The body as read, in one buffer: several buffers are joined into one,
 * which replaces them, so that what is checked is what is forwarded.
 * NGX_DECLINED: it is over max (a part of it in a file is, too:
 * client_body_buffer_size is checked to hold the largest body allowed).
 * NGX_ERROR: out of memory, or the body is not the length nginx's read
 * leaves in content_length_n, the Content-Length the proxy module writes:
 * another location read it (proxy_request_buffering off) or threw it away
 * before the decision, and the upstream would read what it is sent next
 * on the connection as the rest.
 */

ngx_int_t
ngx_http_airlock_body(ngx_http_request_t *r, size_t max,
    ngx_http_airlock_body_t *body)
{
    u_char                   *data, *p;
    size_t                    len;
    ngx_buf_t                *b, *one;
    ngx_uint_t                n;
    ngx_chain_t              *cl;
    ngx_table_elt_t          *ct;
    ngx_http_request_body_t  *rb;

    ngx_memzero(body, sizeof(ngx_http_airlock_body_t));

    ct = r->headers_in.content_type;

    if (ct != NULL) {
        body->ctype = ct->value;
    }

    rb = r->request_body;

    len = 0;
    n = 0;
    one = NULL;

    for (cl = rb ? rb->bufs : NULL; cl; cl = cl->next) {
        b = cl->buf;

        if (!ngx_buf_in_memory(b)) {
            if (b->in_file) {
                body->in_file = 1;
                return NGX_DECLINED;
            }

            continue;
        }

        if (b->last > b->pos) {
            len += b->last - b->pos;
            one = b;
            n++;
        }
    }

    body->len = len;

    if (r->headers_in.content_length_n > 0
        && r->headers_in.content_length_n != (off_t) len)
    {
        ngx_http_airlock_log_error(NGX_LOG_ERR, r->connection->log, 0,
                                   "airlock: the request body is %uz bytes, "
                                   "not the %O announced: it was read or "
                                   "discarded before the decision",
                                   len, r->headers_in.content_length_n);
        return NGX_ERROR;
    }

    if (len > max) {
        return NGX_DECLINED;
    }

    if (n == 0) {
        body->data = (u_char *) "";
        return NGX_OK;
    }

    if (n == 1) {
        body->data = one->pos;
        return NGX_OK;
    }

    data = ngx_pnalloc(r->pool, len);
    if (data == NULL) {
        return NGX_ERROR;
    }

    p = data;

    for (cl = rb->bufs; cl; cl = cl->next) {
        if (ngx_buf_in_memory(cl->buf)) {
            p = ngx_cpymem(p, cl->buf->pos, cl->buf->last - cl->buf->pos);
        }
    }

    if (ngx_http_airlock_body_set(r, data, len) != NGX_OK) {
        return NGX_ERROR;
    }

    body->data = data;

    return NGX_OK;
}


/*
 * The body the proxy module forwards, in one buffer, with the
 * Content-Length it writes.  data lives in the request pool.
 */

ngx_int_t
ngx_http_airlock_body_set(ngx_http_request_t *r, u_char *data, size_t len)
{
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    if (r->request_body == NULL) {
        return NGX_ERROR;
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_ERROR;
    }

    cl = ngx_alloc_chain_link(r->pool);
    if (cl == NULL) {
        return NGX_ERROR;
    }

    return ngx_http_airlock_body_put(r, b, cl, data, len);
}


/* the same in a zeroed buffer and a chain link the caller has */

ngx_int_t
ngx_http_airlock_body_put(ngx_http_request_t *r, ngx_buf_t *b,
    ngx_chain_t *cl, u_char *data, size_t len)
{
    if (r->request_body == NULL) {
        return NGX_ERROR;
    }

    b->temporary = 1;
    b->start = data;
    b->pos = data;
    b->last = data + len;
    b->end = data + len;
    b->last_buf = 1;
    b->last_in_chain = 1;

    cl->buf = b;
    cl->next = NULL;
    r->request_body->bufs = cl;

    r->headers_in.content_length_n = len;

    return NGX_OK;
}


/*
 * A refusal's bookkeeping: counted toward alerts and quarantine (unless
 * it is not an attack: a spent budget), one deny log line, and a line
 * per alert it raised.  The module answers it.
 */

void
ngx_http_airlock_refuse(ngx_http_request_t *r, ngx_http_airlock_ctx_t *ctx,
    al_reason_t reason, const char *detail, ngx_uint_t counted)
{
    ngx_uint_t                i, n;
    ngx_http_airlock_alert_t  alerts[2];

    ctx->decided = 1;
    ctx->allowed = 0;
    ctx->reason = reason;

    ngx_http_airlock_refuse_cookies(r);

    n = counted ? ngx_http_airlock_count(r, ctx, alerts) : 0;

    ngx_http_airlock_log_deny(r, ctx, detail);

    for (i = 0; i < n; i++) {
        ngx_http_airlock_log_alert(r, ctx, &alerts[i]);
    }
}


/*
 * A refused request's cookies leave its headers as those of an allowed
 * one on a route without allow_cookies do (ngx_http_airlock_rewrite_
 * headers()), so that no log_format ($http_cookie, $cookie_NAME) and no
 * location an error_page leads to reads them; its token headers went
 * when they were read (ngx_http_airlock_token()).  nginx's parser keeps
 * every Cookie header behind the shortcut: they are found there, not by
 * a walk of the list.  Every reader of the list skips an entry of hash 0.
 */

static void
ngx_http_airlock_refuse_cookies(ngx_http_request_t *r)
{
#if (NGX_HTTP_AIRLOCK_LINKED_HEADERS)
    ngx_table_elt_t   *h;

    for (h = r->headers_in.cookie; h; h = h->next) {
        h->hash = 0;
    }

    r->headers_in.cookie = NULL;

#else
    ngx_uint_t         i;
    ngx_table_elt_t  **h;

    h = r->headers_in.cookies.elts;

    for (i = 0; i < r->headers_in.cookies.nelts; i++) {
        h[i]->hash = 0;
    }

    r->headers_in.cookies.nelts = 0;
#endif
}


/* the headers are rewritten, and the request goes on */

ngx_int_t
ngx_http_airlock_allowed(ngx_http_request_t *r, ngx_http_airlock_ctx_t *ctx,
    ngx_http_airlock_headers_t *hs)
{
    if (ngx_http_airlock_rewrite_headers(r, hs) != NGX_OK) {
        return NGX_ERROR;
    }

    ctx->decided = 1;
    ctx->allowed = 1;
    ctx->reason = AL_REASON_NONE;

    return ngx_http_airlock_scrub_log(r, ctx);
}


/*
 * The body of a request answered without it (a refusal, a status page) is
 * discarded, or the connection closed after the answer.  Returns what
 * ngx_http_discard_request_body() does.
 */

ngx_int_t
ngx_http_airlock_discard_body(ngx_http_request_t *r)
{
    ngx_int_t  rc;

    /*
     * An answer before the body is read needs no body: nginx's discard
     * would send "100 Continue" first, as it reads the body, and a
     * client that waited for it would upload the body only to have it
     * thrown away.  No 100 is sent, as nginx's own error pages do not
     * send one.  A client that then sends no body cannot tell where its
     * next request would begin, and one may still send the body: the
     * connection is closed after the answer, and whatever of the body
     * comes in the meantime is discarded, never read as a request.
     */

    if (r == r->main && r->request_body == NULL && !r->discard_body
        && !r->expect_tested)
    {
        r->expect_tested = 1;

        if (r->headers_in.expect != NULL
            && (r->headers_in.content_length_n > 0 || r->headers_in.chunked))
        {
            r->keepalive = 0;
        }
    }

    rc = ngx_http_discard_request_body(r);

    if (rc != NGX_OK) {
        r->keepalive = 0;
    }

    return rc;
}


/*
 * Sends b, a whole JSON document, as the answer with this status.  A body
 * the client is still sending is discarded, or the connection closed
 * (ngx_http_airlock_discard_body()).
 */

ngx_int_t
ngx_http_airlock_send_json(ngx_http_request_t *r, ngx_uint_t status,
    ngx_buf_t *b)
{
    ngx_int_t    rc;
    ngx_chain_t  out;

    (void) ngx_http_airlock_discard_body(r);

    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    r->headers_out.status = status;
    r->headers_out.content_length_n = b->last - b->pos;

    ngx_str_set(&r->headers_out.content_type, "application/json");
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    r->headers_out.content_type_lowcase = NULL;
    ngx_str_null(&r->headers_out.charset);

    if (r->headers_out.content_length != NULL) {
        r->headers_out.content_length->hash = 0;
        r->headers_out.content_length = NULL;
    }

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


/*
 * The client's token, from the headers tc->headers names: a Bearer token
 * in Authorization or Proxy-Authorization, or the value of x-api-key or
 * api-key.
 *
 * Strictly (a decision): each of them at most once (tc->repeated is the
 * reason otherwise), one of them without a token refuses the request as
 * client_unknown, and two of them must carry the same token.  What cannot
 * be read one way is refused in the same pass over the headers, after the
 * token, so that the refusal still names its client: an absolute-form
 * target, two Content-Types, and any header of tc->refuse (a null string
 * ends it; NULL: none), detail "method override header".
 *
 * Leniently (tc->lenient: a request nginx refused before the decision,
 * whose headers may be cut short): the first token found in the order
 * the headers came, and nothing is refused.
 *
 * Either way, every header of the four names (those tc->headers leaves
 * out too) is taken out of the list as it is read: the one walk that
 * finds the token finds the client's credentials, and whatever follows
 * (an allowed request's header rewrite, a refusal, a body nginx could
 * not read, a log_format, an error_page's location) never sees them.
 */

/*
 * The one entry of ngx_http_airlock_token_headers[] a header's name can
 * be, by its length (theirs all differ; the cases follow the table's
 * order), or NGX_HTTP_AIRLOCK_NTOKEN_HEADERS; the caller compares the
 * name with the entry's.
 */

static ngx_uint_t
ngx_http_airlock_token_index(ngx_table_elt_t *h)
{
    switch (h->key.len) {

    case sizeof("authorization") - 1:
        return 0;

    case sizeof("proxy-authorization") - 1:
        return 1;

    case sizeof("x-api-key") - 1:
        return 2;

    case sizeof("api-key") - 1:
        return 3;

    default:
        return NGX_HTTP_AIRLOCK_NTOKEN_HEADERS;
    }
}


al_reason_t
ngx_http_airlock_token(ngx_http_request_t *r,
    ngx_http_airlock_token_conf_t *tc, ngx_str_t *token, const char **detail)
{
    ngx_str_t                         t, *name;
    ngx_uint_t                        i, k, m, nctype, seen, twice;
    const char                       *bad;
    ngx_list_part_t                  *part;
    ngx_table_elt_t                  *h;
    ngx_table_elt_t                  *found[NGX_HTTP_AIRLOCK_NTOKEN_HEADERS];
    ngx_http_airlock_token_header_t  *th;

    ngx_str_null(token);

    bad = NULL;

    if (!tc->lenient && (r->schema_start != NULL || r->host_start != NULL)) {
        bad = "absolute-form request target";
    }

    /* bit k: a header of entry k was seen, then seen again */
    seen = 0;
    twice = 0;
    nctype = 0;

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

        if (h[i].hash == 0) {
            continue;
        }

        k = ngx_http_airlock_token_index(&h[i]);

        if (k < NGX_HTTP_AIRLOCK_NTOKEN_HEADERS) {
            th = &ngx_http_airlock_token_headers[k];

            if (h[i].lowcase_key[0] == th->name.data[0]
                && ngx_http_airlock_same(h[i].lowcase_key, th->name.data,
                                         th->name.len))
            {
                /*
                 * A client's credential, whether or not this module
                 * reads a token in it: gone from the list once read
                 * (the value stays where it is, for the token), so no
                 * reader of the list sees it again on any path, an
                 * allowed request's header rewrite included.
                 */

                h[i].hash = 0;

                if (k == 0) {
                    /* Authorization's shortcut, $remote_user's Basic */
                    r->headers_in.authorization = NULL;
                    ngx_str_null(&r->headers_in.user);
                    ngx_str_null(&r->headers_in.passwd);
                }

                if (!(tc->headers & th->kind)) {
                    continue;
                }

                if (tc->lenient) {
                    if (token->len == 0
                        && ngx_http_airlock_token_value(&h[i], th->bearer,
                                                        &t)
                           == NGX_OK)
                    {
                        *token = t;
                    }

                    continue;
                }

                found[k] = &h[i];
                twice |= seen & ((ngx_uint_t) 1 << k);
                seen |= (ngx_uint_t) 1 << k;
                continue;
            }
        }

        if (tc->lenient) {
            continue;
        }

        if (h[i].key.len == sizeof("content-type") - 1
            && ngx_http_airlock_same(h[i].lowcase_key,
                                     (u_char *) "content-type",
                                     sizeof("content-type") - 1))
        {
            nctype++;
            continue;
        }

        /* a header of no length of theirs is not compared with them */

        if (tc->refuse == NULL || h[i].key.len >= 64
            || (tc->refuse_lens >> h[i].key.len & 1) == 0)
        {
            continue;
        }

        for (name = tc->refuse; name->len; name++) {
            if (h[i].key.len == name->len
                && ngx_strncmp(h[i].lowcase_key, name->data, name->len) == 0)
            {
                bad = "method override header";
            }
        }
    }

    if (tc->lenient) {
        return AL_REASON_NONE;
    }

    /* the first entry repeated, then those seen in the entries' order */

    if (twice) {
        k = __builtin_ctzl(twice);
        *detail = ngx_http_airlock_token_headers[k].repeated;
        return tc->repeated;
    }

    if (nctype > 1) {
        bad = "more than one Content-Type header";
    }

    for (m = seen; m; m &= m - 1) {
        k = __builtin_ctzl(m);
        th = &ngx_http_airlock_token_headers[k];

        if (ngx_http_airlock_token_value(found[k], th->bearer, &t) != NGX_OK)
        {
            *detail = th->malformed;
            return AL_REASON_CLIENT_UNKNOWN;
        }

        if (t.len == 0) {
            *detail = th->empty;
            return AL_REASON_CLIENT_UNKNOWN;
        }

        if (token->len
            && (token->len != t.len
                || ngx_memcmp(token->data, t.data, t.len) != 0))
        {
            *detail = "the request carries two different tokens";
            return AL_REASON_CLIENT_UNKNOWN;
        }

        *token = t;
    }

    if (bad != NULL) {
        *detail = bad;
        return AL_REASON_REQUEST;
    }

    return AL_REASON_NONE;
}


/*
 * The token in h's value, spaces around it skipped (possibly empty), after
 * a case-insensitive "Bearer " when bearer is set.  NGX_DECLINED: the value
 * has no Bearer scheme.
 */

static ngx_int_t
ngx_http_airlock_token_value(ngx_table_elt_t *h, ngx_uint_t bearer,
    ngx_str_t *token)
{
    u_char  *p, *last;

    p = h->value.data;
    last = p + h->value.len;

    if (bearer) {
        if (last - p < 7
            || !ngx_http_airlock_lower_eq(p, (u_char *) "bearer ", 7))
        {
            return NGX_DECLINED;
        }

        p += 7;
    }

    while (p < last && *p == ' ') {
        p++;
    }

    while (last > p && last[-1] == ' ') {
        last--;
    }

    token->data = p;
    token->len = last - p;

    return NGX_OK;
}


/*
 * Only allowlisted client headers survive, then the credentials are
 * added.  The list is built anew: a pointer into the client's list that
 * some module kept reads the client's header, never a credential.  Every
 * r->headers_in shortcut is cleared, then pointed at the kept header of
 * its name, so no module sees a removed header through one ($remote_user,
 * auth_basic, $http_referer, $content_length, $cookie_*).
 */

ngx_int_t
ngx_http_airlock_rewrite_headers(ngx_http_request_t *r,
    ngx_http_airlock_headers_t *hs)
{
    uint64_t                    lens;
    ngx_int_t                   k;
    ngx_uint_t                  i, n;
    ngx_list_t                  old;
    ngx_list_part_t            *part;
    ngx_table_elt_t            *h;
    ngx_http_header_t          *hh;
    ngx_http_core_main_conf_t  *cmcf;

    cmcf = ngx_http_get_module_main_conf(r, ngx_http_core_module);
    old = r->headers_in.headers;

    /*
     * The lengths a client header's name must have to be kept: a kept
     * name's, Cookie's; one of 64 bytes or more is always looked at.
     */

    lens = hs->keep_lens;

    if (hs->cookies) {
        lens |= (uint64_t) 1 << (sizeof("cookie") - 1);
    }

    /* room for all that can be kept and added, in one part */

    n = hs->ndefaults + hs->ninject;

    for (part = &old.part; part; part = part->next) {
        n += part->nelts;
    }

    if (ngx_list_init(&r->headers_in.headers, r->pool, ngx_max(n, 1),
                      sizeof(ngx_table_elt_t))
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_http_airlock_clear_shortcuts(r);

    part = &old.part;
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

        k = (h[i].hash == 0) ? NGX_DECLINED
                             : ngx_http_airlock_header_kept(&h[i], lens, hs);

        if (k == NGX_DECLINED) {
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                           "airlock: removed header \"%V\"", &h[i].key);
            continue;
        }

        /* a kept name's shortcut was found at configuration, Cookie's not */

        hh = (k == NGX_DONE) ? ngx_http_airlock_shortcut_of(cmcf, &h[i])
                             : hs->keep_hh[k];

        if (ngx_http_airlock_header_add(r, &h[i], hh, 0) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    for (i = 0; i < hs->ndefaults; i++) {
        if (ngx_http_airlock_header_listed(&hs->defaults[i],
                                           &r->headers_in.headers))
        {
            continue;
        }

        hh = ngx_http_airlock_shortcut_of(cmcf, &hs->defaults[i]);

        if (ngx_http_airlock_header_add(r, &hs->defaults[i], hh, 0)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    /*
     * The credentials go in as removed headers: the proxy module sends
     * every header of the list, while $http_authorization and every other
     * reader of the list skip a header whose hash is 0, and no shortcut
     * points at them, so no log_format can print them.  The proxy module
     * of any other location would send them too: they are taken out when
     * the request reaches one (ngx_http_airlock_drop_credentials()).
     */

    for (i = 0; i < hs->ninject; i++) {
        if (ngx_http_airlock_header_add(r, &hs->inject[i], NULL, 1)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

#if (NGX_HTTP_AIRLOCK_LINKED_HEADERS)
    /* fastcgi and the like link same-named headers again on their own */
    r->headers_in.multi = 0;
    r->headers_in.multi_linked = 0;
#endif

    return NGX_OK;
}


/*
 * The credentials leave the request's headers when it reaches a location
 * that is not an Airlock location: the preaccess handler calls this there,
 * before any access, precontent or content handler can send the headers.
 * Subrequests copy the request's headers (an auth_request, a mirror, an
 * add_after_body, an SSI include), internal redirects keep them (an
 * error_page, a post_action, a try_files fallback), and the proxy module
 * of that other location would send the hidden entries to its own
 * upstream.  Only the route's upstream gets them: in an Airlock location
 * the request forwards as it was decided, and the LLM gateway's fallback
 * location puts the fallback's key in with a new rewrite.
 *
 * After the rewrite a hash 0 entry is an injected credential, or a header
 * another module removed since, which goes nowhere either; before it, a
 * client's credential header (ngx_http_airlock_token()) or a refused
 * request's cookie (ngx_http_airlock_refuse()).  That holds
 * whether or not the request is still allowed: a refusal made after the
 * rewrite leaves the credentials in, and they go here too.  The list is
 * built anew, never compacted in place: its entries are shared with the
 * copies subrequests took, and a subrequest run before the request's own
 * proxy handler (an auth_request, a mirror) must not take the request's
 * credentials away.  Shortcuts point at kept entries, which stay where
 * they are.
 */

ngx_int_t
ngx_http_airlock_drop_credentials(ngx_http_request_t *r)
{
    ngx_uint_t               i, n, hidden;
    ngx_list_t               old;
    ngx_list_part_t         *part;
    ngx_table_elt_t         *h, *nh;
    ngx_http_airlock_ctx_t  *ctx;

    ctx = ngx_http_airlock_get_ctx(r->main);

    if (ctx == NULL) {
        /* not a request the module saw: no credentials were put in */
        return NGX_OK;
    }

    n = 0;
    hidden = 0;

    for (part = &r->headers_in.headers.part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (h[i].hash == 0) {
                hidden++;

            } else {
                n++;
            }
        }
    }

    if (hidden == 0) {
        return NGX_OK;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "airlock: %ui credential headers dropped in \"%V\"",
                   hidden, &r->uri);

    old = r->headers_in.headers;

    if (ngx_list_init(&r->headers_in.headers, r->pool, ngx_max(n, 1),
                      sizeof(ngx_table_elt_t))
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    for (part = &old.part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (h[i].hash == 0) {
                continue;
            }

            nh = ngx_list_push(&r->headers_in.headers);
            if (nh == NULL) {
                return NGX_ERROR;
            }

            *nh = h[i];
        }
    }

    return NGX_OK;
}


/*
 * Whether h is kept: the index of its name in hs->keep, NGX_DONE for
 * Cookie, NGX_DECLINED when it goes.
 */

static ngx_int_t
ngx_http_airlock_header_kept(ngx_table_elt_t *h, uint64_t lens,
    ngx_http_airlock_headers_t *hs)
{
    ngx_str_t  *name;

    /* no kept name has its length, nor Cookie when kept: not kept */

    if (h->key.len < 64 && (lens >> h->key.len & 1) == 0) {
        return NGX_DECLINED;
    }

    /* an injected header replaces the client's */

    if (ngx_http_airlock_header_in(h, hs->inject, hs->ninject)) {
        return NGX_DECLINED;
    }

    /*
     * From the first name of h's length (names before it are of other
     * lengths); the first byte before the call: few names share a length
     * and it.
     */

    for (name = hs->keep + ((h->key.len < 64) ? hs->keep_at[h->key.len] : 0);
         name->len;
         name++)
    {
        if (h->key.len == name->len
            && h->lowcase_key[0] == name->data[0]
            && ngx_http_airlock_same(h->lowcase_key, name->data,
                                     name->len))
        {
            return name - hs->keep;
        }
    }

    if (hs->cookies
        && h->key.len == sizeof("cookie") - 1
        && ngx_strncmp(h->lowcase_key, "cookie", sizeof("cookie") - 1) == 0)
    {
        return NGX_DONE;
    }

    return NGX_DECLINED;
}


/* whether one of list[n] has h's name */

static ngx_uint_t
ngx_http_airlock_header_in(ngx_table_elt_t *h, ngx_table_elt_t *list,
    ngx_uint_t n)
{
    ngx_uint_t  i;

    for (i = 0; i < n; i++) {
        if (h->key.len == list[i].key.len
            && ngx_strncmp(h->lowcase_key, list[i].lowcase_key, h->key.len)
               == 0)
        {
            return 1;
        }
    }

    return 0;
}


static ngx_uint_t
ngx_http_airlock_header_listed(ngx_table_elt_t *h, ngx_list_t *list)
{
    ngx_list_part_t  *part;

    for (part = &list->part; part; part = part->next) {
        if (ngx_http_airlock_header_in(h, part->elts, part->nelts)) {
            return 1;
        }
    }

    return 0;
}


static ngx_int_t
ngx_http_airlock_header_add(ngx_http_request_t *r, ngx_table_elt_t *h,
    ngx_http_header_t *hh, ngx_uint_t hidden)
{
    ngx_table_elt_t  *nh;

    nh = ngx_list_push(&r->headers_in.headers);
    if (nh == NULL) {
        return NGX_ERROR;
    }

    *nh = *h;

#if (NGX_HTTP_AIRLOCK_LINKED_HEADERS)
    nh->next = NULL;
#endif

    if (hidden) {
        nh->hash = 0;
        return NGX_OK;
    }

    if (hh != NULL) {
        ngx_http_airlock_set_shortcut(r, hh, nh);
    }

    return NGX_OK;
}


/* the shortcut of h's name, in nginx's own headers_in hash; NULL: none */

static ngx_http_header_t *
ngx_http_airlock_shortcut_of(ngx_http_core_main_conf_t *cmcf,
    ngx_table_elt_t *h)
{
    ngx_http_header_t  *hh;

    hh = ngx_hash_find(&cmcf->headers_in_hash, h->hash, h->lowcase_key,
                       h->key.len);

    return (hh != NULL && hh->offset != 0) ? hh : NULL;
}


/*
 * What the header rewrite needs of a list of kept names (lower case, all
 * under 64 bytes, a null string ends it), worked out once: hh[i], the
 * shortcut of keep[i], as ngx_http_airlock_shortcut_of() finds it for
 * every header of that name, and at[n], the index of the first name n
 * bytes long (of the null string when there is none).  Called at
 * postconfiguration, when nginx has built the hash.
 */

ngx_int_t
ngx_http_airlock_keep_init(ngx_conf_t *cf, ngx_str_t *keep,
    ngx_http_header_t **hh, u_char *at)
{
    ngx_uint_t                  i, n;
    ngx_table_elt_t             h;
    ngx_http_core_main_conf_t  *cmcf;

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    for (n = 0; keep[n].len; n++) {

        if (n == NGX_HTTP_AIRLOCK_KEEP_MAX || keep[n].len >= 64) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "airlock: a kept header list this module "
                               "was not built for");
            return NGX_ERROR;
        }

        h.key = keep[n];
        h.lowcase_key = keep[n].data;
        h.hash = ngx_hash_key(keep[n].data, keep[n].len);

        hh[n] = ngx_http_airlock_shortcut_of(cmcf, &h);
    }

    ngx_memset(at, (int) n, 64);

    for (i = n; i > 0; i--) {
        at[keep[i - 1].len] = (u_char) (i - 1);
    }

    return NGX_OK;
}


/*
 * Which shortcuts exist is worked out at configuration, from nginx's own
 * table of them (ngx_http_airlock_shortcuts_init()).
 */

static void
ngx_http_airlock_clear_shortcuts(ngx_http_request_t *r)
{
    ngx_uint_t                     i;
    ngx_http_airlock_main_conf_t  *amcf;
#if !(NGX_HTTP_AIRLOCK_LINKED_HEADERS)
    ngx_array_t                   *a;
#endif

    amcf = ngx_http_get_module_main_conf(r, ngx_http_airlock_module);

    for (i = 0; i < amcf->nclear; i++) {
        ngx_memzero((char *) &r->headers_in + amcf->clear[i].offset,
                    amcf->clear[i].size);
    }

#if !(NGX_HTTP_AIRLOCK_LINKED_HEADERS)
    for (i = 0; i < amcf->nclear_multi; i++) {
        a = (ngx_array_t *) ((char *) &r->headers_in + amcf->clear_multi[i]);
        a->nelts = 0;
    }
#endif

    /* "" marks Basic credentials as looked for and absent */
    ngx_str_set(&r->headers_in.user, "");
    ngx_str_null(&r->headers_in.passwd);
}


/*
 * Points the shortcut hh (h's name's entry in nginx's headers_in hash) at
 * h as nginx's header parser would: the first of a unique header, all of
 * a repeatable one (an array in 1.22, a list through .next in 1.23+).
 */

static void
ngx_http_airlock_set_shortcut(ngx_http_request_t *r, ngx_http_header_t *hh,
    ngx_table_elt_t *h)
{
    ngx_table_elt_t  **ph;
#if !(NGX_HTTP_AIRLOCK_LINKED_HEADERS)
    ngx_array_t       *a;
#endif

    ph = (ngx_table_elt_t **) ((char *) &r->headers_in + hh->offset);

#if (NGX_HTTP_AIRLOCK_LINKED_HEADERS)

    while (*ph) { ph = &(*ph)->next; }

    *ph = h;

#else

    if (ngx_http_airlock_shortcut_multi(hh->offset)) {
        a = (ngx_array_t *) ph;

        /* without memory the header is simply not seen through it */

        if (a->nalloc == 0
            && ngx_array_init(a, r->pool, 1, sizeof(ngx_table_elt_t *))
               != NGX_OK)
        {
            return;
        }

        ph = ngx_array_push(a);
        if (ph != NULL) {
            *ph = h;
        }

        return;
    }

    if (*ph == NULL) {
        *ph = h;
    }

#endif
}


/*
 * The offsets of the shortcuts clear_shortcuts() clears, by kind; the
 * pointers sorted and joined into runs, each cleared with one memset.
 */

ngx_int_t
ngx_http_airlock_shortcuts_init(ngx_conf_t *cf,
    ngx_http_airlock_main_conf_t *amcf)
{
    ngx_uint_t                off, i, j, n;
    ngx_http_header_t        *hh;
    ngx_http_airlock_span_t  *sp;

    amcf->nclear = 0;
    amcf->nclear_multi = 0;

    for (hh = ngx_http_headers_in; hh->name.len; hh++) {

        /* a header nginx keeps no pointer for (Proxy-Connection) */

        if (hh->offset == 0) {
            continue;
        }

        if (ngx_http_airlock_shortcut_multi(hh->offset)) {
            if (amcf->nclear_multi
                == sizeof(amcf->clear_multi) / sizeof(ngx_uint_t))
            {
                goto full;
            }

            amcf->clear_multi[amcf->nclear_multi++] = hh->offset;
            continue;
        }

        if (amcf->nclear == sizeof(amcf->clear) / sizeof(amcf->clear[0]))
        {
            goto full;
        }

        /* in order of offset, each a pointer's size */

        off = hh->offset;

        for (i = amcf->nclear; i > 0 && amcf->clear[i - 1].offset > off; i--)
        {
            amcf->clear[i] = amcf->clear[i - 1];
        }

        amcf->clear[i].offset = off;
        amcf->clear[i].size = sizeof(ngx_table_elt_t *);
        amcf->nclear++;
    }

    /* a pointer that starts where the run before it ends joins it */

    sp = amcf->clear;
    n = amcf->nclear;
    j = 0;

    for (i = 0; i < n; i++) {

        if (j > 0 && sp[i].offset <= sp[j - 1].offset + sp[j - 1].size) {
            sp[j - 1].size = ngx_max(sp[j - 1].size,
                                     sp[i].offset + sp[i].size
                                     - sp[j - 1].offset);
            continue;
        }

        sp[j++] = sp[i];
    }

    amcf->nclear = j;

    return NGX_OK;

full:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "airlock: nginx has more request header shortcuts "
                       "than this module was built for");
    return NGX_ERROR;
}


/* before nginx 1.23 these were arrays of pointers; since, all are lists */

static ngx_uint_t
ngx_http_airlock_shortcut_multi(ngx_uint_t offset)
{
#if (NGX_HTTP_AIRLOCK_LINKED_HEADERS)

    return 0;

#else

    return offset == offsetof(ngx_http_headers_in_t, cookies)
#if (NGX_HTTP_X_FORWARDED_FOR)
           || offset == offsetof(ngx_http_headers_in_t, x_forwarded_for)
#endif
           ;

#endif
}


/*
 * s[0..n) is lower[0..n), an ASCII letter of it in either case: what
 * ngx_strncasecmp() answers for a lowercase name, for a sixth of its
 * work (it lowers every byte of both strings).  Eight bytes at a time
 * (four under eight, the last word overlapping the one before), each
 * word of s with 0x20 set in the lanes where lower has a letter, which
 * is then lower exactly when s is.
 */

ngx_uint_t
ngx_http_airlock_lower_eq(u_char *s, u_char *lower, size_t n)
{
    u_char    c, l;
    size_t    i;
    uint64_t  d;

    if (n >= 8) {
        d = 0;

        for (i = 0; i + 8 < n; i += 8) {
            d |= ngx_http_airlock_lower_diff64(s + i, lower + i);
        }

        d |= ngx_http_airlock_lower_diff64(s + n - 8, lower + n - 8);

        return d == 0;
    }

    if (n >= 4) {
        return (ngx_http_airlock_lower_diff32(s, lower)
                | ngx_http_airlock_lower_diff32(s + n - 4, lower + n - 4))
               == 0;
    }

    for (i = 0; i < n; i++) {
        c = s[i];
        l = lower[i];

        if (c != l && ((u_char) (l - 'a') > 'z' - 'a' || (c | 0x20) != l)) {
            return 0;
        }
    }

    return 1;
}


/*
 * 0 when the word at s is the word at lower, a letter of it in either
 * case.  A lane of lower is a letter when it is 'a' or more and 'z' or
 * less: bit 7 of its low seven bits plus 0x1f, and not of them plus 5,
 * nor of the lane itself (no lane carries into the next).
 */

static uint64_t
ngx_http_airlock_lower_diff64(u_char *s, u_char *lower)
{
    uint64_t  x, l, l7, m;

    ngx_memcpy(&x, s, 8);
    ngx_memcpy(&l, lower, 8);

    l7 = l & 0x7f7f7f7f7f7f7f7fULL;
    m = (l7 + 0x1f1f1f1f1f1f1f1fULL) & ~(l7 + 0x0505050505050505ULL) & ~l
        & 0x8080808080808080ULL;

    return (x | m >> 2) ^ l;
}


static uint32_t
ngx_http_airlock_lower_diff32(u_char *s, u_char *lower)
{
    uint32_t  x, l, l7, m;

    ngx_memcpy(&x, s, 4);
    ngx_memcpy(&l, lower, 4);

    l7 = l & 0x7f7f7f7f;
    m = (l7 + 0x1f1f1f1f) & ~(l7 + 0x05050505) & ~l & 0x80808080;

    return (x | m >> 2) ^ l;
}


/*
 * a[0..n) == b[0..n) in time that depends on n only: eight bytes at a
 * time, the differences or-ed together (the last eight overlap); the
 * empty asm keeps the compiler from leaving the loop at a difference.
 */

ngx_uint_t
ngx_http_airlock_same_secret(u_char *a, u_char *b, size_t n)
{
    size_t    i;
    uint64_t  x, y, d;

    d = 0;

    if (n < 8) {
        for (i = 0; i < n; i++) {
            d |= (uint64_t) (a[i] ^ b[i]);
            __asm__ volatile ("" : "+r" (d));
        }

        return d == 0;
    }

    for (i = 0; i + 8 <= n; i += 8) {
        ngx_memcpy(&x, a + i, 8);
        ngx_memcpy(&y, b + i, 8);
        d |= x ^ y;
        __asm__ volatile ("" : "+r" (d));
    }

    if (i < n) {
        ngx_memcpy(&x, a + n - 8, 8);
        ngx_memcpy(&y, b + n - 8, 8);
        d |= x ^ y;
    }

    return d == 0;
}
