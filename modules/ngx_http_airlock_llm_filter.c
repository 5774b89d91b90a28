
/*
 * Airlock LLM gateway: the response filters.
 *
 * The header filter turns proxy buffering off for event streams (each
 * chunk the provider sends leaves as soon as it arrives), replaces the
 * provider's rate-limit headers with the client's own remaining budget,
 * and picks the usage reader: the JSON scanner (al_llm_resp_*) or the
 * event-stream parser (al_llm_sse_*).
 *
 * The body filter feeds them.  Mostly it only watches: the buffers go on
 * untouched.  When the gateway asked for stream usage on the client's
 * behalf, the usage-only chunk the client did not ask for is dropped, the
 * way al_llm.h describes: output buffers point into the provider's
 * buffers (shadows, which keep those alive until they are sent), and only
 * the tail of an event that is still open at the end of a buffer is copied
 * and held; SSE clients act on an event only at its blank line, so holding
 * it delays nothing they could see.
 *
 * The header of a 2xx answer waits for the first bytes of its body, which
 * must be text (al_llm_body_text()): a body compressed without a
 * Content-Encoding that says so (gzip, zstd, brotli), which the key
 * scrubber could not search and a client unpacks all the same, is refused
 * with 502, as an answer marked encoded is; an error answer's header is
 * not held, but its body's first bytes are read the same way, and one
 * that is not text ends the request (ngx_http_airlock_llm_error_text()).
 * A provider that fails while the header is held (here, or by the
 * scrubber) gets the client the failure's status
 * (ngx_http_airlock_llm_finalize()), not a closed connection; one whose
 * chunked framing breaks there fails as one that closed does
 * (ngx_http_airlock_llm_input()).
 *
 * A 2xx Responses answer's ids (of the response the provider stored,
 * and of its output items) are bound to the call's client in
 * airlock_llm_zone before the bytes that carry them go on
 * (ngx_http_airlock_llm_state_read()).
 *
 * This filter runs before ngx_http_airlock_module's, which scrubs the
 * provider key from what it passes on.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_airlock_llm_module.h"


#define NGX_HTTP_AIRLOCK_LLM_HELD_MIN  4096

/* room for a header's number: 20 digits and a suffix */
#define NGX_HTTP_AIRLOCK_LLM_SLOT      (NGX_INT64_LEN + 1)


static ngx_int_t ngx_http_airlock_llm_header_filter(ngx_http_request_t *r);
static void *ngx_http_airlock_llm_resp_alloc(void *pool, size_t size);
static ngx_int_t ngx_http_airlock_llm_body_filter(ngx_http_request_t *r,
    ngx_chain_t *in);
static ngx_int_t ngx_http_airlock_llm_error_text(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_chain_t *in);
static void ngx_http_airlock_llm_ratelimit_headers(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_uint_t rename);
static ngx_int_t ngx_http_airlock_llm_request_id_push(ngx_http_request_t *r,
    ngx_str_t *id);
static ngx_int_t ngx_http_airlock_llm_add_header(ngx_http_request_t *r,
    const char *name, size_t len, uint64_t value, u_char suffix,
    u_char *slot);
static ngx_uint_t ngx_http_airlock_llm_headers_n(ngx_http_request_t *r);
static ngx_int_t ngx_http_airlock_llm_start(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_chain_t **in);
static ngx_int_t ngx_http_airlock_llm_filter_stream(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_chain_t *in);
static ngx_int_t ngx_http_airlock_llm_slice(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_buf_t *b, ngx_uint_t defer);
static ngx_int_t ngx_http_airlock_llm_finish(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx);
static ngx_int_t ngx_http_airlock_llm_emit(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_buf_t *b, uint64_t a,
    uint64_t to);
static ngx_int_t ngx_http_airlock_llm_hold(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_buf_t *b, uint64_t a,
    size_t len);
static ngx_buf_t *ngx_http_airlock_llm_held_buf(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, size_t size);
static ngx_buf_t *ngx_http_airlock_llm_out(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_buf_t *b);
static void ngx_http_airlock_llm_update(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx);
static void ngx_http_airlock_llm_ttfb(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx);
static ngx_int_t ngx_http_airlock_llm_state_start(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_uint_t stream);
static void ngx_http_airlock_llm_state_read(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_chain_t *in);
static ngx_inline ngx_http_airlock_llm_ctx_t *ngx_http_airlock_llm_held_ctx(
    ngx_http_request_t *r);
static void ngx_http_airlock_llm_finalize(ngx_http_request_t *r,
    ngx_int_t rc);
static ngx_int_t ngx_http_airlock_llm_input_init(void *data);
static ngx_int_t ngx_http_airlock_llm_input(void *data, ssize_t bytes);
static ngx_int_t ngx_http_airlock_llm_input_drop(void *data, ssize_t bytes);
static ngx_int_t ngx_http_airlock_llm_pipe_input(ngx_event_pipe_t *p,
    ngx_buf_t *buf);
static ngx_int_t ngx_http_airlock_llm_pipe_drop(ngx_event_pipe_t *p,
    ngx_buf_t *buf);


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;
static ngx_http_output_body_filter_pt    ngx_http_next_body_filter;


/* buffers pointing into others' memory, told apart from the held ones */
static u_char  ngx_http_airlock_llm_shadow_tag;


/*
 * Stream parser states, about 2 KB each, are kept per worker for the
 * next stream rather than taken from the request's pool, where each
 * would cost the pool a block (a malloc() and a free() per request).  Up
 * to NGX_HTTP_AIRLOCK_LLM_SPARES wait; more are freed.  Sanitizer builds
 * keep none, so a use after the request still shows.
 */

#if (defined __SANITIZE_ADDRESS__)
#define NGX_HTTP_AIRLOCK_LLM_SPARES  0
#else
#define NGX_HTTP_AIRLOCK_LLM_SPARES  32
#endif

typedef struct ngx_http_airlock_llm_spare_s  ngx_http_airlock_llm_spare_t;

struct ngx_http_airlock_llm_spare_s {
    al_llm_sse_t                   sse;         /* first: the two share
                                                   an address */
    ngx_http_airlock_llm_spare_t  *next;
};

static ngx_http_airlock_llm_spare_t  *ngx_http_airlock_llm_spares;
static ngx_uint_t                     ngx_http_airlock_llm_nspares;


/*
 * The provider's own limits describe its key, shared by every client, not
 * the client: Anthropic's Priority Tier capacity (anthropic-priority-*)
 * as its rate limits.  (Its Retry-After on a 429 of its own passes: that
 * wait is the client's too.)  A router in front of the provider
 * (LiteLLM's proxy, an openai-compatible entry) describes the key in
 * x-litellm-key-* (its spend, budget and limits) and relays the
 * provider's own headers under "llm_provider-", the account's
 * organization among them.
 */
static ngx_str_t  ngx_http_airlock_llm_ratelimit_prefixes[] = {
    ngx_string("x-ratelimit-"),
    ngx_string("anthropic-ratelimit-"),
    ngx_string("anthropic-priority-"),
    ngx_string("x-litellm-key-"),
    ngx_string("llm_provider-"),
    ngx_null_string
};

/*
 * Names of the provider's account the key belongs to: the operator's, not
 * the client's to know.  Looked at by length first: a header of another
 * length is passed over with one compare.
 */
static ngx_str_t  ngx_http_airlock_llm_account_headers[] = {
    ngx_string("openai-project"),
    ngx_string("openai-organization"),
    ngx_string("anthropic-organization-id"),
    ngx_string("x-litellm-model-api-base"),     /* the provider's URL */
    ngx_null_string
};

#define NGX_HTTP_AIRLOCK_LLM_ACCOUNT_LENS                                    \
    ((1u << (sizeof("openai-project") - 1))                                  \
     | (1u << (sizeof("openai-organization") - 1))                           \
     | (1u << (sizeof("anthropic-organization-id") - 1))                     \
     | (1u << (sizeof("x-litellm-model-api-base") - 1)))


ngx_int_t
ngx_http_airlock_llm_filter_init(ngx_conf_t *cf)
{
    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_airlock_llm_header_filter;

    ngx_http_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = ngx_http_airlock_llm_body_filter;

    return NGX_OK;
}


static ngx_int_t
ngx_http_airlock_llm_header_filter(ngx_http_request_t *r)
{
    ngx_str_t                    id;
    ngx_uint_t                   own, rid, stream;
    ngx_msec_t                   now;
    ngx_time_t                  *tp;
    ngx_http_upstream_t         *u;
    ngx_http_airlock_llm_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_airlock_llm_module);

    if (ctx != NULL) {
        /* an answer sent from inside a bound location's proxy handler */
        ngx_http_airlock_llm_target_restore(r, ctx);
    }

    if (ctx == NULL || !ctx->allowed || ctx->header_seen || r != r->main
        || r->upstream == NULL)
    {
        return ngx_http_next_header_filter(r);
    }

    ctx->header_seen = 1;
    ctx->status = r->headers_out.status;
    ctx->answered = (ctx->status >= NGX_HTTP_OK
                     && ctx->status < NGX_HTTP_SPECIAL_RESPONSE);

    tp = ngx_timeofday();
    now = (ngx_msec_t) tp->sec * 1000 + tp->msec;
    ctx->ttfb = now - ((ngx_msec_t) r->start_sec * 1000 + r->start_msec);

    /*
     * The headers added from here on hold the gateway's own numbers and
     * id: ngx_http_airlock_module's filter, the next one, need not scrub
     * them (everything before them came from the provider and is).
     */
    own = ngx_http_airlock_llm_headers_n(r);

    /*
     * An answer the gateway makes after the provider's failed (no
     * fallback) has its own id already: it is not the provider's.  The
     * provider's x-request-id is renamed in the rate-limit headers' walk
     * (as ngx_http_airlock_llm_request_id_header() does), the gateway's
     * added after the limit headers.
     */

    rid = !ctx->own_answer && ngx_http_airlock_request_id(r, &id) == NGX_OK;

    ngx_http_airlock_llm_ratelimit_headers(r, ctx, rid);

    if (ctx->admitted && ngx_http_airlock_llm_limit_headers(r, ctx) != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (rid && ngx_http_airlock_llm_request_id_push(r, &id) != NGX_OK) {
        return NGX_ERROR;
    }

    ctx->actx->own_from = own;
    ctx->actx->own_to = ngx_http_airlock_llm_headers_n(r);

    if (r->header_only || r->method == NGX_HTTP_HEAD
        || r->headers_out.status == NGX_HTTP_NO_CONTENT
        || r->headers_out.status == NGX_HTTP_NOT_MODIFIED
        || !al_llm_endpoint_has_body(ctx->endpoint))
    {
        return ngx_http_next_header_filter(r);
    }

    stream = (r->headers_out.status < NGX_HTTP_SPECIAL_RESPONSE
              && ngx_http_airlock_llm_event_type(&r->headers_out.content_type));

    if (stream) {
        /* each chunk leaves as it comes, whatever proxy_buffering says */
        r->upstream->buffering = 0;

        if (ctx->sse == NULL) {
            ctx->sse = ngx_http_airlock_llm_sse_get(r->connection->log);
            if (ctx->sse == NULL) {
                return NGX_ERROR;
            }

        } else {
            /* a second answer (a fallback): the first one's is dropped */
            al_llm_sse_free(ctx->sse);
        }

        al_llm_sse_init(ctx->sse, ctx->provider->llm->kind, ctx->endpoint,
                        ctx->hide_usage);

        /* the usage line names the model the request was checked for */
        ctx->sse->no_model = 1;

        if (ctx->hide_usage) {
            ctx->filter = 1;
            ctx->last_out = &ctx->out;

            ngx_http_clear_content_length(r);
            ngx_http_clear_accept_ranges(r);
            ngx_http_weak_etag(r);
        }

    } else {
        /* a second answer (a fallback): the first one's is dropped */

        ctx->resp = &ctx->resp_mem;

        al_llm_resp_init(ctx->resp, ctx->provider->llm->kind,
                         ctx->endpoint);

        /* a usage value too long for the struct: from the pool */
        ctx->resp->alloc = ngx_http_airlock_llm_resp_alloc;
        ctx->resp->alloc_ctx = r->pool;

        /* the usage line names the model the request was checked for */
        ctx->resp->no_model = 1;

        if (r->headers_out.status >= NGX_HTTP_SPECIAL_RESPONSE
            && ngx_http_airlock_llm_event_type(&r->headers_out.content_type))
        {
            /*
             * An error as an event stream: its events may say what the
             * call used ("event: error" with a usage); it is read as
             * events and, for a body that is JSON all the same, as JSON.
             */

            ctx->sse = ngx_http_airlock_llm_sse_get(r->connection->log);
            if (ctx->sse == NULL) {
                return NGX_ERROR;
            }

            al_llm_sse_init(ctx->sse, ctx->provider->llm->kind,
                            ctx->endpoint, 0);
            ctx->sse->no_model = 1;
        }
    }

    if (ctx->endpoint == AL_LLM_EP_RESPONSES
        && ngx_http_airlock_llm_state_start(r, ctx, stream) != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* buffers a temporary file holds are read back before they get here */
    r->filter_need_in_memory = 1;

    /* an error's body is not held, but read as it starts */
    ctx->error_peek = !ctx->answered;

    if (ctx->answered) {
        /* on with the body's first bytes (ngx_http_airlock_llm_start()) */
        ctx->start = 1;

        u = r->upstream;

        if (u->finalize_request != ngx_http_airlock_llm_finalize) {
            ctx->finalize = u->finalize_request;
            u->finalize_request = ngx_http_airlock_llm_finalize;
        }

        if (u->headers_in.chunked
            && u->input_filter_init != ngx_http_airlock_llm_input_init
            && u->input_filter_ctx == r && u->pipe != NULL
            && u->pipe->input_ctx == r)
        {
            /* see ngx_http_airlock_llm_input() */
            ctx->input.init = u->input_filter_init;
            u->input_filter_init = ngx_http_airlock_llm_input_init;
        }

        return NGX_OK;
    }

    return ngx_http_next_header_filter(r);
}


static void *
ngx_http_airlock_llm_resp_alloc(void *pool, size_t size)
{
    return ngx_palloc(pool, size);
}


/*
 * On a 2xx answer to a client with a budget: what is left of it, in the
 * provider's header names, for the tighter window.  OpenAI style:
 * x-ratelimit-limit-tokens, x-ratelimit-remaining-tokens,
 * x-ratelimit-reset-tokens ("23s"); Anthropic: anthropic-ratelimit-
 * tokens-limit, -remaining, -reset (RFC 3339).  The provider's own such
 * headers are removed on every answer, and so are those naming its
 * account (organization, project).  rename: the provider's x-request-id
 * becomes x-provider-request-id in the same walk.
 */

static void
ngx_http_airlock_llm_ratelimit_headers(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_uint_t rename)
{
    u_char           *p, *slots;
    time_t            reset, now;
    int64_t           end, unit;
    uint64_t          limit, remaining;
    ngx_tm_t          tm;
    ngx_str_t        *pre;
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;
    al_llm_quota_t   *q;

    part = &r->headers_out.headers.part;
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

        for (pre = ngx_http_airlock_llm_ratelimit_prefixes; pre->len; pre++)
        {
            if (h[i].key.len >= pre->len
                && ngx_strncasecmp(h[i].key.data, pre->data, pre->len) == 0)
            {
                h[i].hash = 0;
                break;
            }
        }

        if (h[i].hash == 0) {
            continue;
        }

        if (rename && h[i].key.len == sizeof("x-request-id") - 1
            && ngx_strncasecmp(h[i].key.data, (u_char *) "x-request-id",
                               sizeof("x-request-id") - 1)
               == 0)
        {
            ngx_str_set(&h[i].key, "x-provider-request-id");
            continue;
        }

        if (h[i].key.len >= 32
            || !(NGX_HTTP_AIRLOCK_LLM_ACCOUNT_LENS & (1u << h[i].key.len)))
        {
            continue;
        }

        for (pre = ngx_http_airlock_llm_account_headers; pre->len; pre++) {
            if (h[i].key.len == pre->len
                && ngx_strncasecmp(h[i].key.data, pre->data, pre->len) == 0)
            {
                h[i].hash = 0;
                break;
            }
        }
    }

    if (!ctx->budget || r->headers_out.status >= NGX_HTTP_SPECIAL_RESPONSE)
    {
        return;
    }

    q = &ctx->quota;

    if (q->minute_limit
        && (q->day_limit == 0 || q->minute_remaining <= q->day_remaining))
    {
        limit = q->minute_limit;
        remaining = q->minute_remaining;
        end = q->minute_end;
        unit = AL_LLM_MINUTE;

    } else {
        limit = q->day_limit;
        remaining = q->day_remaining;
        end = q->day_end;
        unit = AL_LLM_DAY;
    }

    /* from the clock of the response: the provider took its time */

    now = ngx_time();
    reset = (time_t) al_llm_quota_reset(end, unit, (int64_t) now);

    /* the numbers' room, one allocation for all three */

    slots = ngx_pnalloc(r->pool, 3 * NGX_HTTP_AIRLOCK_LLM_SLOT);
    if (slots == NULL) {
        return;
    }

    if (ctx->provider->llm->kind != AL_LLM_ANTHROPIC) {
        (void) ngx_http_airlock_llm_add_header(r, "x-ratelimit-limit-tokens",
                                 sizeof("x-ratelimit-limit-tokens") - 1,
                                 limit, 0, slots);
        (void) ngx_http_airlock_llm_add_header(r,
                                 "x-ratelimit-remaining-tokens",
                                 sizeof("x-ratelimit-remaining-tokens") - 1,
                                 remaining, 0,
                                 slots + NGX_HTTP_AIRLOCK_LLM_SLOT);
        (void) ngx_http_airlock_llm_add_header(r, "x-ratelimit-reset-tokens",
                                 sizeof("x-ratelimit-reset-tokens") - 1,
                                 (uint64_t) reset, 's',
                                 slots + 2 * NGX_HTTP_AIRLOCK_LLM_SLOT);
        return;
    }

    (void) ngx_http_airlock_llm_add_header(r,
                            "anthropic-ratelimit-tokens-limit",
                            sizeof("anthropic-ratelimit-tokens-limit") - 1,
                            limit, 0, slots);
    (void) ngx_http_airlock_llm_add_header(r,
                            "anthropic-ratelimit-tokens-remaining",
                            sizeof("anthropic-ratelimit-tokens-remaining") - 1,
                            remaining, 0, slots + NGX_HTTP_AIRLOCK_LLM_SLOT);

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return;
    }

    /* the third slot: the time takes no more room than a number */
    p = slots + 2 * NGX_HTTP_AIRLOCK_LLM_SLOT;

    ngx_gmtime(now + reset, &tm);

    h->hash = 1;
    ngx_str_set(&h->key, "anthropic-ratelimit-tokens-reset");
    h->value.data = p;
    h->value.len = ngx_sprintf(p, "%4d-%02d-%02dT%02d:%02d:%02dZ",
                               tm.ngx_tm_year, tm.ngx_tm_mon,
                               tm.ngx_tm_mday, tm.ngx_tm_hour,
                               tm.ngx_tm_min, tm.ngx_tm_sec)
                   - p;
}


/*
 * x-request-id: the gateway's request id, as in the usage line, on every
 * answer.  The provider's own x-request-id goes on as
 * x-provider-request-id.
 */

ngx_int_t
ngx_http_airlock_llm_request_id_header(ngx_http_request_t *r)
{
    ngx_str_t         id;
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    if (ngx_http_airlock_request_id(r, &id) != NGX_OK) {
        return NGX_OK;
    }

    part = &r->headers_out.headers.part;
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
            || h[i].key.len != sizeof("x-request-id") - 1
            || ngx_strncasecmp(h[i].key.data, (u_char *) "x-request-id",
                               sizeof("x-request-id") - 1)
               != 0)
        {
            continue;
        }

        ngx_str_set(&h[i].key, "x-provider-request-id");
    }

    return ngx_http_airlock_llm_request_id_push(r, &id);
}


/* the gateway's x-request-id */

static ngx_int_t
ngx_http_airlock_llm_request_id_push(ngx_http_request_t *r, ngx_str_t *id)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
    ngx_str_set(&h->key, "x-request-id");
    h->value = *id;

    return NGX_OK;
}


/*
 * A header with a number: its value is written, from the end, into slot
 * (NGX_HTTP_AIRLOCK_LLM_SLOT bytes), then suffix if not 0 ('s': OpenAI's
 * resets are durations).
 */

static ngx_int_t
ngx_http_airlock_llm_add_header(ngx_http_request_t *r, const char *name,
    size_t len, uint64_t value, u_char suffix, u_char *slot)
{
    u_char           *p, *last;
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    last = slot + NGX_HTTP_AIRLOCK_LLM_SLOT;
    p = last;

    if (suffix) {
        *--p = suffix;
    }

    p = (u_char *) al_llm_dec_back((char *) p, value);

    h->hash = 1;
    h->key.data = (u_char *) name;
    h->key.len = len;
    h->value.data = p;
    h->value.len = last - p;

    return NGX_OK;
}


/* the number of response headers so far, removed ones included */

static ngx_uint_t
ngx_http_airlock_llm_headers_n(ngx_http_request_t *r)
{
    ngx_uint_t        n;
    ngx_list_part_t  *part;

    n = 0;

    for (part = &r->headers_out.headers.part; part; part = part->next) {
        n += part->nelts;
    }

    return n;
}


static ngx_int_t
ngx_http_airlock_llm_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    ngx_int_t                    rc;
    ngx_buf_t                   *b;
    ngx_chain_t                 *cl;
    ngx_http_airlock_llm_ctx_t  *ctx;
    al_llm_sse_block_t           blk;

    ctx = ngx_http_get_module_ctx(r, ngx_http_airlock_llm_module);

    if (ctx == NULL || (ctx->sse == NULL && ctx->resp == NULL)) {
        return ngx_http_next_body_filter(r, in);
    }

    if (!ctx->ttfb_set) {
        for (cl = in; cl; cl = cl->next) {
            if (ngx_buf_size(cl->buf) > 0) {
                ngx_http_airlock_llm_ttfb(r, ctx);
                break;
            }
        }
    }

    if (ctx->start) {
        rc = ngx_http_airlock_llm_start(r, ctx, &in);

        if (rc == NGX_DONE) {
            return NGX_OK;
        }

        if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
            return rc;
        }

        if (ctx->actx->discard) {
            /* refused: ngx_http_airlock_module's filter drops them */
            return ngx_http_next_body_filter(r, in);
        }
    }

    if (ctx->error_peek
        && ngx_http_airlock_llm_error_text(r, ctx, in) != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (ctx->filter) {
        return ngx_http_airlock_llm_filter_stream(r, ctx, in);
    }

    /*
     * watch only: the buffers go on as they are; a Responses answer's
     * id is read here (its streams are never filtered: only chat and
     * completions hide a usage chunk)
     */

    if (ctx->state != NULL) {
        ngx_http_airlock_llm_state_read(r, ctx, in);
    }

    for (cl = in; cl; cl = cl->next) {
        b = cl->buf;

        if (ngx_buf_in_memory(b) && b->last > b->pos && !ctx->ended) {
            if (ctx->sse != NULL) {
                al_llm_sse_observe(ctx->sse, b->pos, b->last - b->pos);
            }

            /* both for an error as an event stream */

            if (ctx->resp != NULL) {
                al_llm_resp_feed(ctx->resp, b->pos, b->last - b->pos);
            }
        }

        if (b->last_buf && !ctx->ended) {
            ctx->ended = 1;

            if (ctx->sse != NULL) {
                (void) al_llm_sse_finish(ctx->sse, &blk);
            }
        }
    }

    return ngx_http_next_body_filter(r, in);
}


/*
 * A 2xx Responses answer carries the id of the response the provider
 * stored, and the ids of its output items: each is read as the body
 * passes (al_llm_state_resp_*()), and bound to the client before the
 * bytes that hold it go on, so the client cannot name it before the
 * binding exists.  A second answer (a fallback) starts over.
 */

static ngx_int_t
ngx_http_airlock_llm_state_start(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_uint_t stream)
{
    if (!ctx->answered) {
        ctx->state = NULL;
        return NGX_OK;
    }

    if (ctx->state == NULL) {
        ctx->state = ngx_palloc(r->pool, sizeof(al_llm_state_resp_t));
        if (ctx->state == NULL) {
            return NGX_ERROR;
        }
    }

    al_llm_state_resp_init(ctx->state, stream);

    return NGX_OK;
}


static void
ngx_http_airlock_llm_state_read(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_chain_t *in)
{
    u_char       *p;
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    for (cl = in; cl; cl = cl->next) {
        b = cl->buf;

        if (!ngx_buf_in_memory(b)) {
            continue;
        }

        for (p = b->pos; p < b->last; /* void */) {
            p += al_llm_state_resp_feed(ctx->state, p, b->last - p);

            if (ctx->state->id_len > 0) {
                (void) ngx_http_airlock_llm_state_bind(r, ctx,
                                                (u_char *) ctx->state->id,
                                                ctx->state->id_len);
            }

            if (ctx->state->done) {
                ctx->state = NULL;
                return;
            }
        }
    }
}


/*
 * The held header goes on with the first bytes of the body, or with its
 * end when it has none; until then (flushes only) it waits: NGX_DONE.
 * A body whose first bytes are not text is refused, as
 * ngx_http_airlock_module refuses an answer marked encoded: 502, the
 * connection closed after it.  The first AL_LLM_TEXT_PEEK bytes are read
 * (what an encoder writes is told from text there): in the usual case
 * all in the first buffer, read where it is.  Fewer, with more to come
 * (a provider may send a byte and wait), are copied and held with the
 * header (ctx->peek), the buffers they were in given back, and go first
 * once the header does (*in then starts with them).
 */

static ngx_int_t
ngx_http_airlock_llm_start(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_chain_t **in)
{
    u_char       *p, peek[AL_LLM_TEXT_PEEK];
    size_t        n, k;
    ngx_int_t     rc;
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    p = peek;
    n = ctx->peeked;

    if (n) {
        ngx_memcpy(peek, ctx->peek, n);
    }

    for (cl = *in; cl; cl = cl->next) {
        b = cl->buf;

        if (ngx_buf_in_memory(b) && b->last > b->pos) {
            k = b->last - b->pos;

            if (n == 0 && k >= AL_LLM_TEXT_PEEK) {
                p = b->pos;
                n = AL_LLM_TEXT_PEEK;
                break;
            }

            k = ngx_min(k, AL_LLM_TEXT_PEEK - n);
            ngx_memcpy(peek + n, b->pos, k);
            n += k;

            if (n == AL_LLM_TEXT_PEEK) {
                break;
            }
        }

        if (b->last_buf || b->last_in_chain) {
            break;
        }
    }

    if (cl == NULL) {
        if (n == ctx->peeked) {
            return NGX_DONE;
        }

        /* fewer than the peek, and more to come: held, with the header */

        if (ctx->peek == NULL) {
            ctx->peek = ngx_pnalloc(r->pool, AL_LLM_TEXT_PEEK);
            if (ctx->peek == NULL) {
                return NGX_ERROR;
            }
        }

        ngx_memcpy(ctx->peek + ctx->peeked, peek + ctx->peeked,
                   n - ctx->peeked);
        ctx->peeked = n;

        for (cl = *in; cl; cl = cl->next) {
            if (ngx_buf_in_memory(cl->buf)) {
                cl->buf->pos = cl->buf->last;
            }
        }

        return NGX_DONE;
    }

    if (!al_llm_body_text(p, n)) {
        goto refuse;
    }

    ctx->start = 0;

    rc = ngx_http_next_header_filter(r);

    if (ctx->peeked == 0 || rc == NGX_ERROR || rc > NGX_OK || r->header_only)
    {
        return rc;
    }

    /* the bytes held go first */

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_ERROR;
    }

    b->pos = ctx->peek;
    b->last = ctx->peek + ctx->peeked;
    b->start = b->pos;
    b->end = b->last;
    b->temporary = 1;

    cl = ngx_alloc_chain_link(r->pool);
    if (cl == NULL) {
        return NGX_ERROR;
    }

    cl->buf = b;
    cl->next = *in;
    *in = cl;

    ctx->peeked = 0;

    return rc;

refuse:

    ngx_http_airlock_log_error(NGX_LOG_ERR, r->connection->log, 0,
                               "airlock: llm \"%s\" answered %ui with a body "
                               "that is not text (%02xd %02xd ...: compressed "
                               "without a Content-Encoding?), a response that "
                               "cannot be scrubbed",
                               ctx->provider->llm->name.data, ctx->status,
                               p[0], (n > 1) ? p[1] : 0);

    ctx->start = 0;
    ctx->peeked = 0;
    ctx->failed = NGX_HTTP_BAD_GATEWAY;

    /* the error page that follows is not this upstream's answer */
    ctx->actx->refused = r->upstream;

    /* see ngx_http_airlock_header_filter(): the connection is closed */
    r->keepalive = 0;

    rc = ngx_http_filter_finalize_request(r, &ngx_http_airlock_module,
                                          NGX_HTTP_BAD_GATEWAY);

    /* the body is dropped after an error page not all sent yet (see
       ngx_http_airlock_header_filter()) */

    if (rc == NGX_AGAIN) {
        ctx->actx->discard = 1;
    }

    return rc;
}


/*
 * The first bytes of an error answer's body (4xx, 5xx: its header is not
 * held, ngx_http_airlock_llm_start() being for 2xx answers) must be text
 * too: an error body compressed without a Content-Encoding saying so,
 * which the key scrubber cannot search and a client unpacks all the
 * same, would carry a key a provider or a proxy in front of it echoes
 * (an error is where a request's headers are echoed).  Read in the first
 * buffer that has bytes, up to AL_LLM_TEXT_PEEK of them; one that is not
 * text ends the request with NGX_ERROR: the connection is closed, and
 * nothing of the body reaches the client.
 */

static ngx_int_t
ngx_http_airlock_llm_error_text(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_chain_t *in)
{
    size_t      n;
    ngx_buf_t  *b;

    for ( /* void */ ; in; in = in->next) {
        b = in->buf;

        if (ngx_buf_in_memory(b) && b->last > b->pos) {
            break;
        }
    }

    if (in == NULL) {
        return NGX_OK;
    }

    ctx->error_peek = 0;

    n = ngx_min((size_t) (b->last - b->pos), AL_LLM_TEXT_PEEK);

    if (al_llm_body_text(b->pos, n)) {
        return NGX_OK;
    }

    ngx_http_airlock_log_error(NGX_LOG_ERR, r->connection->log, 0,
                               "airlock: llm \"%s\" answered %ui with a body "
                               "that is not text (%02xd %02xd ...: compressed "
                               "without a Content-Encoding?), a response that "
                               "cannot be scrubbed: the connection is closed",
                               ctx->provider->llm->name.data, ctx->status,
                               b->pos[0], (n > 1) ? b->pos[1] : 0);

    return NGX_ERROR;
}


/*
 * The context, in the functions nginx's upstream calls in place of the
 * proxy's while a header is held.  NULL cannot be: the context lives as
 * long as the request.
 */

static ngx_inline ngx_http_airlock_llm_ctx_t *
ngx_http_airlock_llm_held_ctx(ngx_http_request_t *r)
{
    ngx_http_airlock_llm_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_airlock_llm_module);

    if (ctx == NULL) {
        /* the modules' contexts cleared: a filter's error page */
        ctx = ngx_http_airlock_llm_get_ctx(r);
    }

    return ctx;
}


/*
 * The upstream's end, in place of the proxy's finalize_request, on a 2xx
 * answer whose header the gateway holds: this filter until the body's
 * first bytes, ngx_http_airlock_module's until the whole of a small body.
 * nginx takes a header it handed to the filters for sent (u->header_sent)
 * and, when the provider then fails (the connection closed or reset, a
 * timeout: 502, 504), only closes the connection: the client would get
 * nothing at all.  Nothing has reached the client, so the call is
 * answered as the provider's failure before its header would be: with
 * that status, through the location's error_page (the fallback's
 * location answers in the provider's format), the connection closed
 * after it.  The held header and body are dropped; the call is charged
 * as the answer cut short it is (ngx_http_airlock_llm_usage()).  An
 * answer that ends well pays the call through here and a compare.
 */

static void
ngx_http_airlock_llm_finalize(ngx_http_request_t *r, ngx_int_t rc)
{
    ngx_http_upstream_t         *u;
    ngx_http_airlock_ctx_t      *actx;
    al_llm_sse_block_t           blk;
    ngx_http_airlock_llm_ctx_t  *ctx;

    ctx = ngx_http_airlock_llm_held_ctx(r);

    if (ctx == NULL) {
        return;
    }

    ctx->finalize(r, rc);

    u = r->upstream;

    if (rc < NGX_HTTP_INTERNAL_SERVER_ERROR || r->header_sent
        || !u->header_sent)
    {
        return;
    }

    ngx_http_airlock_log_error(NGX_LOG_ERR, r->connection->log, 0,
                               "airlock: llm \"%s\" answered %ui and failed "
                               "before any of it reached the client, who "
                               "gets %i",
                               ctx->provider->llm->name.data, ctx->status, rc);

    /* the upstream finalizes the request with rc, as before a header */
    u->header_sent = 0;
    ctx->failed = (unsigned) rc;

    ctx->start = 0;
    ctx->peeked = 0;
    ctx->filter = 0;

    if (!ctx->ended) {
        /* cut short: what was seen is what there is */
        ctx->ended = 1;

        if (ctx->sse != NULL) {
            (void) al_llm_sse_finish(ctx->sse, &blk);
        }
    }

    /* the scrubber's held body, if any, goes, and its header with it */

    actx = ctx->actx;
    actx->held = NULL;
    actx->whole = NULL;
    actx->hold = 0;

    /* the error page that follows is not this upstream's answer */
    actx->refused = u;

    ngx_http_clean_header(r);

    /* see ngx_http_airlock_header_filter(): the connection is closed */
    r->keepalive = 0;
}


/*
 * A chunked body whose framing breaks (a chunk-size line that is not
 * one) makes the proxy's input filter fail, and nginx's upstream then
 * ends with an error, not a status: the connection is closed, with
 * nothing sent while the header is held.  So, for a chunked 2xx answer
 * (ngx_http_airlock_llm_header_filter()), the input filter the proxy
 * picks in its input_filter_init, which the upstream calls after the
 * header filters, is called through ngx_http_airlock_llm_input()
 * (unbuffered) or ngx_http_airlock_llm_pipe_input() (buffered) for as
 * long as the header is held.  There a failure becomes one nginx's
 * upstream ends with 502, as nginx's FastCGI module reports an answer
 * its framing cuts short: u->error, or the pipe's upstream_error; the
 * 502 then goes through ngx_http_airlock_llm_finalize() as a close
 * does.  What the provider sends after it is dropped; what the proxy
 * read of the body before it goes on, and takes the header with it once
 * there is enough of it, as before a close.  The first call after the
 * header has gone puts the proxy's filter back: a failure then closes
 * the connection, as any cut does.  An answer with a Content-Length, or
 * with none (read to the close), is read by filters that do not fail
 * so: it pays one test in the header filter.
 */

static ngx_int_t
ngx_http_airlock_llm_input_init(void *data)
{
    ngx_int_t                    rc;
    ngx_http_request_t          *r;
    ngx_http_upstream_t         *u;
    ngx_http_airlock_llm_ctx_t  *ctx;

    r = data;
    u = r->upstream;

    ctx = ngx_http_airlock_llm_held_ctx(r);

    if (ctx == NULL) {
        return NGX_ERROR;
    }

    rc = ctx->input.init(data);

    if (rc != NGX_OK || !ctx->start) {
        return rc;
    }

    if (u->buffering) {
        ctx->input.pipe = u->pipe->input_filter;
        u->pipe->input_filter = ngx_http_airlock_llm_pipe_input;

    } else {
        ctx->input.filter = u->input_filter;
        u->input_filter = ngx_http_airlock_llm_input;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_airlock_llm_input(void *data, ssize_t bytes)
{
    ngx_http_request_t          *r;
    ngx_http_upstream_t         *u;
    ngx_http_airlock_llm_ctx_t  *ctx;

    r = data;
    u = r->upstream;

    ctx = ngx_http_airlock_llm_held_ctx(r);

    if (ctx == NULL) {
        return NGX_ERROR;
    }

    if (!ctx->start) {
        u->input_filter = ctx->input.filter;
        return ctx->input.filter(data, bytes);
    }

    if (ctx->input.filter(data, bytes) != NGX_ERROR) {
        return NGX_OK;
    }

    u->error = 1;
    u->keepalive = 0;
    u->input_filter = ngx_http_airlock_llm_input_drop;

    return NGX_OK;
}


static ngx_int_t
ngx_http_airlock_llm_input_drop(void *data, ssize_t bytes)
{
    ngx_http_request_t   *r;
    ngx_http_upstream_t  *u;

    r = data;
    u = r->upstream;

    u->buffer.last += bytes;
    u->buffer.pos = u->buffer.last;

    return NGX_OK;
}


static ngx_int_t
ngx_http_airlock_llm_pipe_input(ngx_event_pipe_t *p, ngx_buf_t *buf)
{
    ngx_http_request_t          *r;
    ngx_http_airlock_llm_ctx_t  *ctx;

    r = p->input_ctx;

    ctx = ngx_http_airlock_llm_held_ctx(r);

    if (ctx == NULL) {
        return NGX_ERROR;
    }

    if (!ctx->start) {
        p->input_filter = ctx->input.pipe;
        return ctx->input.pipe(p, buf);
    }

    if (ctx->input.pipe(p, buf) != NGX_ERROR) {
        return NGX_OK;
    }

    p->upstream_error = 1;
    r->upstream->keepalive = 0;
    p->input_filter = ngx_http_airlock_llm_pipe_drop;

    return NGX_OK;
}


static ngx_int_t
ngx_http_airlock_llm_pipe_drop(ngx_event_pipe_t *p, ngx_buf_t *buf)
{
    buf->pos = buf->last;

    return NGX_OK;
}


static void
ngx_http_airlock_llm_ttfb(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx)
{
    ngx_msec_t   now;
    ngx_time_t  *tp;

    /* the first byte the provider sends of the body */

    tp = ngx_timeofday();
    now = (ngx_msec_t) tp->sec * 1000 + tp->msec;

    ctx->ttfb = now - ((ngx_msec_t) r->start_sec * 1000 + r->start_msec);
    ctx->ttfb_set = 1;
}


/*
 * The stream with blocks dropped.  Every buffer is sliced per al_llm.h;
 * the flags of the input (flush, last_buf) go on the last buffer written.
 *
 * Dropping bytes means the answer goes out chunked.  When the provider's
 * body is complete (the upstream's length is down to 0, unbuffered) the
 * upstream module finalizes right after this call and sends the last
 * buffer: the output waits for it, so the data and the last chunk leave
 * in one write, as plain proxying sends a body with a Content-Length.  The
 * provider's buffers are then consumed at once, which lets the upstream
 * finalize; their memory is the request's and nothing is read into them
 * any more, so the outputs that point into them stay valid.  Only when
 * nothing of ours waits downstream: otherwise the call passes on, so a
 * retry by the write event still pushes what is pending.
 */

static ngx_int_t
ngx_http_airlock_llm_filter_stream(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_chain_t *in)
{
    ngx_int_t     rc;
    ngx_buf_t    *b, *ob;
    ngx_uint_t    flush, last_buf, last_in_chain, sync, defer;
    ngx_chain_t  *cl;

    flush = 0;
    last_buf = 0;
    last_in_chain = 0;
    sync = 0;

    defer = r->upstream != NULL && !r->upstream->buffering
            && r->upstream->length == 0 && ctx->busy == NULL
            && !r->connection->buffered;

    for (cl = in; cl; cl = cl->next) {
        b = cl->buf;

        if (ngx_buf_in_memory(b)) {
            if (b->last > b->pos && !ctx->ended) {
                if (ngx_http_airlock_llm_slice(r, ctx, b, defer) != NGX_OK) {
                    return NGX_ERROR;
                }

            } else {
                b->pos = b->last;
            }

        } else if (b->in_file) {
            /* filter_need_in_memory makes this impossible */
            ngx_http_airlock_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                                       "airlock: file buffer in the llm stream "
                                       "filter");
            return NGX_ERROR;
        }

        flush |= b->flush;
        sync |= b->sync;
        last_in_chain |= b->last_in_chain;

        if (b->last_buf) {
            last_buf = 1;

            if (!ctx->ended) {
                ctx->ended = 1;

                if (ngx_http_airlock_llm_finish(r, ctx) != NGX_OK) {
                    return NGX_ERROR;
                }
            }
        }
    }

    if (defer && !last_buf && !last_in_chain && !sync) {
        /* the last buffer follows at once */
        return NGX_OK;
    }

    if (last_buf || last_in_chain || sync || (flush && ctx->out != NULL)) {

        /* flags go on the last buffer written, or on an empty one */

        if (ctx->out == NULL
            && ngx_http_airlock_llm_out(r, ctx, NULL) == NULL)
        {
            return NGX_ERROR;
        }

        for (cl = ctx->out; cl->next; cl = cl->next) { /* void */ }

        ob = cl->buf;
        ob->flush = flush;
        ob->sync = sync;
        ob->last_buf = last_buf;
        ob->last_in_chain = last_in_chain;
    }

    rc = ngx_http_next_body_filter(r, ctx->out);

    ngx_http_airlock_llm_update(r, ctx);

    return rc;
}


/*
 * One provider buffer, the loop of al_llm.h: blocks that end are emitted
 * up to a dropped one, which is skipped; what is settled is emitted; the
 * open block is held.  The buffer is consumed once the last output
 * pointing into it has been sent (its shadow), or at once when nothing
 * does or the output is deferred (see above).
 */

static ngx_int_t
ngx_http_airlock_llm_slice(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_buf_t *b, ngx_uint_t defer)
{
    size_t               off, used, len;
    uint64_t             a;
    al_llm_sse_t        *sse;
    al_llm_sse_block_t   blk;

    sse = ctx->sse;
    len = b->last - b->pos;
    a = al_llm_sse_offset(sse);
    off = 0;

    ctx->last_shadow = NULL;

    while (off < len) {
        if (al_llm_sse_feed_drops(sse, b->pos + off, len - off, &used, &blk)
            == 1)
        {
            if (ngx_http_airlock_llm_emit(r, ctx, b, a, blk.start)
                != NGX_OK)
            {
                return NGX_ERROR;
            }

            /* the held bytes, if any, were the dropped block's */
            if (ctx->held != NULL) {
                ctx->held->pos = ctx->held->start;
                ctx->held->last = ctx->held->start;
            }

            ctx->pending = blk.end;
        }

        off += used;
    }

    if (ngx_http_airlock_llm_emit(r, ctx, b, a, al_llm_sse_settled(sse))
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (ngx_http_airlock_llm_hold(r, ctx, b, a, len) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ctx->last_shadow != NULL && !defer) {
        ctx->last_shadow->shadow = b;

    } else {
        b->pos = b->last;
    }

    ctx->last_shadow = NULL;

    return NGX_OK;
}


/* the end of the stream: a block al_llm_sse_finish() completes, the rest */

static ngx_int_t
ngx_http_airlock_llm_finish(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx)
{
    uint64_t            a;
    al_llm_sse_block_t  blk;

    a = al_llm_sse_offset(ctx->sse);

    if (al_llm_sse_finish(ctx->sse, &blk) == 1 && blk.drop) {
        if (ngx_http_airlock_llm_emit(r, ctx, NULL, a, blk.start) != NGX_OK)
        {
            return NGX_ERROR;
        }

        if (ctx->held != NULL) {
            ctx->held->pos = ctx->held->start;
            ctx->held->last = ctx->held->start;
        }

        ctx->pending = blk.end;
    }

    return ngx_http_airlock_llm_emit(r, ctx, NULL, a, a);
}


/*
 * Emits [pending, to): the held bytes cover [pending, a), the buffer b
 * covers [a, a + its length).  Held bytes leave in their own buffer,
 * which is then no longer ours to write; bytes of b leave in a shadow.
 */

static ngx_int_t
ngx_http_airlock_llm_emit(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_buf_t *b, uint64_t a, uint64_t to)
{
    size_t      n, rest;
    ngx_buf_t  *hb, *nb, *ob;

    if (to <= ctx->pending) {
        return NGX_OK;
    }

    if (ctx->pending < a) {
        hb = ctx->held;
        n = (size_t) (ngx_min(to, a) - ctx->pending);
        rest = (hb->last - hb->pos) - n;

        nb = NULL;

        if (rest) {
            nb = ngx_http_airlock_llm_held_buf(r, ctx, rest);
            if (nb == NULL) {
                return NGX_ERROR;
            }

            nb->last = ngx_cpymem(nb->pos, hb->pos + n, rest);
        }

        hb->last = hb->pos + n;

        if (ngx_http_airlock_llm_out(r, ctx, hb) == NULL) {
            return NGX_ERROR;
        }

        ctx->held = nb;
        ctx->pending += n;
    }

    if (to > ctx->pending) {
        ob = ngx_http_airlock_llm_out(r, ctx, NULL);
        if (ob == NULL) {
            return NGX_ERROR;
        }

        ob->pos = b->pos + (size_t) (ctx->pending - a);
        ob->last = b->pos + (size_t) (to - a);
        ob->temporary = b->temporary;
        ob->memory = b->memory;
        ob->mmap = b->mmap;
        ob->tag = (ngx_buf_tag_t) &ngx_http_airlock_llm_shadow_tag;

        ctx->last_shadow = ob;
        ctx->pending = to;
    }

    return NGX_OK;
}


/* keeps [pending, a + len) for the next buffer: the open block */

static ngx_int_t
ngx_http_airlock_llm_hold(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_buf_t *b, uint64_t a, size_t len)
{
    size_t        from, n, have;
    ngx_buf_t    *hb, *nb;
    ngx_chain_t  *cl;

    if (ctx->pending >= a) {
        from = (size_t) (ctx->pending - a);

        if (ctx->held != NULL) {
            ctx->held->pos = ctx->held->start;
            ctx->held->last = ctx->held->start;
        }

    } else {
        from = 0;
    }

    if (from >= len) {
        return NGX_OK;
    }

    n = len - from;
    hb = ctx->held;
    have = (hb != NULL) ? (size_t) (hb->last - hb->pos) : 0;

    if (hb == NULL || (size_t) (hb->end - hb->last) < n) {
        nb = ngx_http_airlock_llm_held_buf(r, ctx, 2 * (have + n));
        if (nb == NULL) {
            return NGX_ERROR;
        }

        if (hb != NULL) {
            nb->last = ngx_cpymem(nb->pos, hb->pos, have);

            /* not in flight: held buffers are sent only as a whole */
            hb->pos = hb->start;
            hb->last = hb->start;
        }

        ctx->held = nb;

        if (hb != NULL) {
            /* the old storage is kept for a later hold */

            cl = ngx_alloc_chain_link(r->pool);
            if (cl == NULL) {
                return NGX_ERROR;
            }

            cl->buf = hb;
            cl->next = ctx->free_held;
            ctx->free_held = cl;
        }

        hb = nb;
    }

    hb->last = ngx_cpymem(hb->last, b->pos + from, n);

    return NGX_OK;
}


/* a buffer of our own with room for size bytes, reused when possible */

static ngx_buf_t *
ngx_http_airlock_llm_held_buf(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, size_t size)
{
    u_char       *p;
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    cl = ctx->free_held;

    if (cl != NULL && (size_t) (cl->buf->end - cl->buf->start) >= size) {
        ctx->free_held = cl->next;
        b = cl->buf;
        ngx_free_chain(r->pool, cl);

        b->pos = b->start;
        b->last = b->start;
        b->shadow = NULL;
        b->flush = 0;
        b->sync = 0;
        b->last_buf = 0;
        b->last_in_chain = 0;

        return b;
    }

    size = ngx_max(size, NGX_HTTP_AIRLOCK_LLM_HELD_MIN);

    p = ngx_palloc(r->pool, size);
    if (p == NULL) {
        return NULL;
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NULL;
    }

    b->start = p;
    b->pos = p;
    b->last = p;
    b->end = p + size;
    b->temporary = 1;
    b->tag = (ngx_buf_tag_t) &ngx_http_airlock_llm_module;

    return b;
}


/*
 * Appends b (a held buffer) to the output, or, with b NULL, a fresh
 * buffer struct for a shadow or for flags only.
 */

static ngx_buf_t *
ngx_http_airlock_llm_out(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx, ngx_buf_t *b)
{
    ngx_chain_t  *cl;

    if (b != NULL) {
        cl = ngx_alloc_chain_link(r->pool);
        if (cl == NULL) {
            return NULL;
        }

        cl->buf = b;

    } else {
        cl = ngx_http_airlock_chain_buf(r->pool, &ctx->free_bufs);
        if (cl == NULL) {
            return NULL;
        }

        b = cl->buf;
        ngx_memzero(b, sizeof(ngx_buf_t));
        b->tag = (ngx_buf_tag_t) &ngx_http_airlock_llm_shadow_tag;
    }

    cl->next = NULL;
    *ctx->last_out = cl;
    ctx->last_out = &cl->next;

    return b;
}


/*
 * After the next filter: what it sent is done with.  A shadow's buffer
 * is consumed (so the provider's buffer can be reused), held buffers go
 * back to the free list.
 */

static void
ngx_http_airlock_llm_update(ngx_http_request_t *r,
    ngx_http_airlock_llm_ctx_t *ctx)
{
    ngx_buf_t    *b;
    ngx_chain_t  *cl, **ll;

    for (ll = &ctx->busy; *ll; ll = &(*ll)->next) { /* void */ }

    *ll = ctx->out;
    ctx->out = NULL;
    ctx->last_out = &ctx->out;

    while (ctx->busy) {
        cl = ctx->busy;
        b = cl->buf;

        if (ngx_buf_size(b) != 0) {
            break;
        }

        if (b->shadow != NULL) {
            b->shadow->pos = b->shadow->last;
            b->shadow = NULL;
        }

        ctx->busy = cl->next;

        if (b->tag == (ngx_buf_tag_t) &ngx_http_airlock_llm_module) {
            cl->next = ctx->free_held;
            ctx->free_held = cl;

        } else {
            cl->next = ctx->free_bufs;
            ctx->free_bufs = cl;
        }
    }
}


al_llm_sse_t *
ngx_http_airlock_llm_sse_get(ngx_log_t *log)
{
    ngx_http_airlock_llm_spare_t  *sp;

    sp = ngx_http_airlock_llm_spares;

    if (sp != NULL) {
        ngx_http_airlock_llm_spares = sp->next;
        ngx_http_airlock_llm_nspares--;
        return &sp->sse;
    }

    sp = ngx_alloc(sizeof(ngx_http_airlock_llm_spare_t), log);

    return (sp == NULL) ? NULL : &sp->sse;
}


/* after al_llm_sse_free(): nothing of the request's is left in it */

void
ngx_http_airlock_llm_sse_put(al_llm_sse_t *sse)
{
    ngx_http_airlock_llm_spare_t  *sp;

    sp = (ngx_http_airlock_llm_spare_t *) sse;

    if (ngx_http_airlock_llm_nspares + 1 > NGX_HTTP_AIRLOCK_LLM_SPARES) {
        ngx_free(sp);
        return;
    }

    sp->next = ngx_http_airlock_llm_spares;
    ngx_http_airlock_llm_spares = sp;
    ngx_http_airlock_llm_nspares++;
}
