
/*
 * Airlock response scrubbing.
 *
 * On scrubbed routes (every route once the policy holds a secret, but one
 * of "scrub: false": al_scrub_route_scrubbed()), any string of the
 * policy's list (al_scrub_collect_all()) in a response header or in the
 * body, raw, URL-encoded, JSON- or HTML-escaped, quoted-printable
 * (al_scrub_match()), reaches the client as "[REDACTED]".  A body of
 * known length up to airlock_scrub_hold (64 KB) is held whole and sent
 * with the Content-Length of what is sent.  Others are scrubbed as they
 * stream: nothing is buffered but the few bytes at the end of a buffer
 * that could begin a match, which wait for the next buffer (or the last
 * one) to decide.  Encoded bodies cannot be searched and are refused with
 * 502: a Content-Encoding other than identity in any header (nginx passes
 * them all on), from the upstream a Transfer-Encoding other than chunked,
 * or a charset that does not write ASCII as ASCII, UTF-16 or UTF-32.
 *
 * The error-log lines nginx writes for such a request (an upstream header
 * line it cannot parse is logged as it came) are scrubbed the same way
 * (ngx_http_airlock_scrub_log()).
 *
 * In a stream nothing else is copied: the bytes between matches go on in
 * buffers that point into the upstream's own, which is given back (its pos
 * moved to last) only once the last of them has been sent, as sub_filter
 * does.  Only the carried bytes and what joins them are copied.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_airlock_module.h"

#if (defined __x86_64__ && defined __SSE2__)
#include <immintrin.h>
#endif


#define NGX_HTTP_AIRLOCK_REDACTED   "[REDACTED]"
#define NGX_HTTP_AIRLOCK_BUF_SIZE   1024    /* copies: carry and join */

#define NGX_HTTP_AIRLOCK_NONE       AL_SCRUB_NONE
#define NGX_HTTP_AIRLOCK_FULL       AL_SCRUB_FULL
#define NGX_HTTP_AIRLOCK_PARTIAL    AL_SCRUB_PARTIAL

/* x86-64 compilers that build a function for AVX2 on its own */
#if (defined __x86_64__                                                       \
     && (defined __clang__ || (defined __GNUC__ && __GNUC__ >= 6)))
#define NGX_HTTP_AIRLOCK_AVX2       1
#else
#define NGX_HTTP_AIRLOCK_AVX2       0
#endif

/* of an upstream's header name in a line of the error log, escaped */
#define NGX_HTTP_AIRLOCK_NAME_SHOWN 256

/* the two-byte starts the block walks compare each on its own */
#define NGX_HTTP_AIRLOCK_PAIRS      16


static ngx_int_t ngx_http_airlock_header_filter(ngx_http_request_t *r);
#if (nginx_version >= 1029000)
static ngx_int_t ngx_http_airlock_early_hints_filter(ngx_http_request_t *r);
#endif
static ngx_int_t ngx_http_airlock_body_filter(ngx_http_request_t *r,
    ngx_chain_t *in);
static ngx_table_elt_t *ngx_http_airlock_encoded(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx);
static ngx_uint_t ngx_http_airlock_identity(ngx_str_t *value);
static ngx_uint_t ngx_http_airlock_charset(ngx_http_request_t *r);
static ngx_uint_t ngx_http_airlock_charset_known(u_char *p, size_t len);
static ngx_int_t ngx_http_airlock_scrub_headers(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx);
static ngx_int_t ngx_http_airlock_scrub_list(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx, ngx_list_part_t *part);
static ngx_int_t ngx_http_airlock_scrub_str(ngx_http_request_t *r,
    ngx_http_airlock_route_t *rc, ngx_str_t *s);
static size_t ngx_http_airlock_scrub_len(ngx_http_airlock_route_t *rc,
    u_char *src, size_t len, ngx_uint_t *matches);
static u_char *ngx_http_airlock_scrub_copy(ngx_http_airlock_route_t *rc,
    u_char *dst, u_char *src, size_t len);
static ngx_int_t ngx_http_airlock_nibbles_init(ngx_conf_t *cf,
    ngx_http_airlock_route_t *rc);
static void ngx_http_airlock_nibbles_share(al_scrub_t *scrub, u_char *bits);
static ngx_int_t ngx_http_airlock_scrub(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx, u_char *p, size_t len, ngx_uint_t final);
static ngx_uint_t ngx_http_airlock_match(ngx_http_airlock_route_t *rc,
    u_char *s, size_t avail, ngx_uint_t final, size_t *len);
static u_char *ngx_http_airlock_walk_pairs(ngx_http_airlock_route_t *rc,
    u_char *p, u_char *last);
#if (NGX_HTTP_AIRLOCK_AVX2)
static u_char *ngx_http_airlock_walk_pairs32(ngx_http_airlock_route_t *rc,
    u_char **pp, u_char *last) __attribute__((target("avx2")));
static u_char *ngx_http_airlock_walk_pairs32_two(
    ngx_http_airlock_route_t *rc, u_char **pp, u_char *last)
    __attribute__((target("avx2")));
static ngx_inline u_char *ngx_http_airlock_walk32(
    ngx_http_airlock_route_t *rc, u_char **pp, u_char *last, ngx_uint_t two)
    __attribute__((target("avx2"), always_inline));
#if (defined __SANITIZE_ADDRESS__)
static void ngx_http_airlock_pairs_check(al_scrub_t *scrub, u_char *p,
    uint32_t bits);
#endif
#endif
static u_char *ngx_http_airlock_next(ngx_http_airlock_route_t *rc,
    u_char **next, u_char *p, u_char *last);
static ngx_int_t ngx_http_airlock_emit(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx, u_char *data, size_t len);
static ngx_int_t ngx_http_airlock_emit_ref(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx, u_char *data, size_t len, ngx_uint_t input);
static ngx_buf_t *ngx_http_airlock_out_buf(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx, ngx_uint_t copy);
static void ngx_http_airlock_release(ngx_http_airlock_ctx_t *ctx);
static ngx_int_t ngx_http_airlock_hold_copy(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx, ngx_buf_t *b);
static ngx_int_t ngx_http_airlock_hold(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx, ngx_chain_t *in);
static void ngx_http_airlock_scrubbed(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx);
static void ngx_http_airlock_log_writer(ngx_log_t *log, ngx_uint_t level,
    u_char *buf, size_t len);
static u_char *ngx_http_airlock_log_scrub(ngx_http_airlock_route_t *rc,
    u_char *out, u_char *buf, size_t len);
static void ngx_http_airlock_log_write(ngx_log_t *log, ngx_uint_t level,
    u_char *buf, size_t len);
static void ngx_http_airlock_log_restore(void *data);


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;
static ngx_http_output_body_filter_pt    ngx_http_next_body_filter;
#if (nginx_version >= 1029000)
static ngx_http_output_header_filter_pt  ngx_http_next_early_hints_filter;
#endif

/* the hash of "content-encoding" in a hide_headers_hash (set at start-up) */
static ngx_uint_t  ngx_http_airlock_ce_key;

#if (NGX_HTTP_AIRLOCK_AVX2)
/* 1: the pair search takes 32 bytes at a time (set once, at start-up) */
static ngx_uint_t  ngx_http_airlock_avx2;
#endif


ngx_int_t
ngx_http_airlock_filter_init(ngx_conf_t *cf)
{
    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_airlock_header_filter;

    ngx_http_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = ngx_http_airlock_body_filter;

    ngx_http_airlock_ce_key = ngx_hash_key((u_char *) "content-encoding",
                                           sizeof("content-encoding") - 1);

#if (nginx_version >= 1029000)
    ngx_http_next_early_hints_filter = ngx_http_top_early_hints_filter;
    ngx_http_top_early_hints_filter = ngx_http_airlock_early_hints_filter;
#endif

#if (NGX_HTTP_AIRLOCK_AVX2)
    __builtin_cpu_init();
    ngx_http_airlock_avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
#endif

    return NGX_OK;
}


ngx_int_t
ngx_http_airlock_route_scrub_init(ngx_conf_t *cf,
    ngx_http_airlock_route_t *rc, al_scrub_t *scrub)
{
    ngx_uint_t  c;

    rc->first = ngx_pcalloc(cf->pool, 256);
    if (rc->first == NULL) {
        return NGX_ERROR;
    }

    /* the bytes a string or one of its encoded forms can start with */

    for (c = 0; c < 256; c++) {
        if (!scrub->first[c]) {
            continue;
        }

        rc->first[c] = 1;
        if (rc->nfirst < sizeof(rc->firsts)) {
            rc->firsts[rc->nfirst] = (u_char) c;
        }
        rc->nfirst++;
    }

    rc->minlen = scrub->minlen;
    rc->scrub = scrub;

    if (ngx_http_airlock_nibbles_init(cf, rc) != NGX_OK) {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * The list's two-byte starts (at most AL_SCRUB_PAIRS) as four 16-byte
 * tables for the AVX2 walk, for a first group of 8 bits and, at 96, for
 * the next 8: a start with bit k (of its group) sets bit k in lo1[] at
 * its first byte's low nibble and in hi1[] at its high nibble, and the
 * same for its second byte in lo2[] and hi2[].  lo1[b & 15] & hi1[b >> 4]
 * then has bit k when b is the first byte of a start of bit k, so a byte
 * and the one after it are a start when the two lookups share a bit.  Up
 * to 16 starts (NGX_HTTP_AIRLOCK_PAIRS) each have a bit of their own,
 * and the lookups say exactly which pairs are starts.  More share the 16
 * bits (ngx_http_airlock_nibbles_share()): the lookups then also take
 * pairs made of one start's nibbles and another's of the same bit, which
 * al_scrub_match() turns away after two loads; without that, a policy of
 * six secrets (the example's) had its every answer walked a byte at a
 * time, twice a streamed call's cost.
 *
 * Then two tables of the escapes, one entry per low nibble (0xff matches
 * no byte: a byte with its top bit set picks 0): a byte is one when the
 * entry its low nibble picks is the byte itself.  The first for a lane's
 * own byte: '%', '&', '\\' and, on routes with a space, '+'; the second
 * for the byte after it: '%', '&', '\\', '=' (a quoted-printable escape
 * or soft line break), NUL (the second byte of a UTF-16LE form) and LF
 * (a line end, which a match skips; a CR, which has the low nibble of
 * '=', is compared on its own).
 */

static ngx_int_t
ngx_http_airlock_nibbles_init(ngx_conf_t *cf, ngx_http_airlock_route_t *rc)
{
    u_char       *t, *g, a, b, bit, bits[AL_SCRUB_PAIRS];
    ngx_uint_t    i;
    al_scrub_t   *scrub;

    scrub = rc->scrub;

    if (scrub->npairs == 0) {
        return NGX_OK;
    }

    t = ngx_pcalloc(cf->pool, 160);
    if (t == NULL) {
        return NGX_ERROR;
    }

    ngx_memset(t + 64, 0xff, 32);

    t[64 + 0x5] = '%';
    t[64 + 0x6] = '&';
    t[64 + 0xc] = '\\';

    if (scrub->plus) {
        t[64 + 0xb] = '+';
    }

    t[80 + 0x5] = '%';
    t[80 + 0x6] = '&';
    t[80 + 0xc] = '\\';
    t[80 + 0xd] = '=';
    t[80 + 0x0] = '\0';
    t[80 + 0xa] = '\n';

    for (i = 0; i < scrub->npairs; i++) {
        bits[i] = (u_char) i;
    }

    if (scrub->npairs > NGX_HTTP_AIRLOCK_PAIRS) {
        ngx_http_airlock_nibbles_share(scrub, bits);
    }

    for (i = 0; i < scrub->npairs; i++) {
        a = scrub->pair[i][0];
        b = scrub->pair[i][1];
        g = (bits[i] < 8) ? t : t + 96;
        bit = (u_char) (1 << (bits[i] & 7));

        g[a & 15] |= bit;
        g[16 + (a >> 4)] |= bit;
        g[32 + (b & 15)] |= bit;
        g[48 + (b >> 4)] |= bit;

        if (b == ' ') {
            rc->space[bits[i] >= 8] |= bit;
        }
    }

    rc->nibbles = t;

    return NGX_OK;
}


/*
 * The bits of more than 16 starts: each start a set of its own, the two
 * sets whose union takes the fewest byte pairs the nibble lookups would
 * answer yes for, beyond those the two took apart, are joined until 16
 * are left (starts with a first byte in common cost nothing more); bits[]
 * gets each start's set, numbered from 0.  At most 64 starts: about
 * 64^3 / 6 steps, once a configuration.
 */

static void
ngx_http_airlock_nibbles_share(al_scrub_t *scrub, u_char *bits)
{
    int64_t     cost, best, own[AL_SCRUB_PAIRS];
    uint16_t    m[AL_SCRUB_PAIRS][4], u[4];
    ngx_uint_t  i, j, k, n, bi, bj, set[AL_SCRUB_PAIRS];

    n = scrub->npairs;

    for (i = 0; i < n; i++) {
        m[i][0] = (uint16_t) (1 << (scrub->pair[i][0] & 15));
        m[i][1] = (uint16_t) (1 << (scrub->pair[i][0] >> 4));
        m[i][2] = (uint16_t) (1 << (scrub->pair[i][1] & 15));
        m[i][3] = (uint16_t) (1 << (scrub->pair[i][1] >> 4));
        own[i] = 1;
        set[i] = i;
    }

    /* m[] and own[] of a set are kept at its first start's index */

    for (k = n; k > NGX_HTTP_AIRLOCK_PAIRS; k--) {
        best = INT64_MAX;
        bi = 0;
        bj = 0;

        for (i = 0; i < n; i++) {
            if (set[i] != i) {
                continue;
            }

            for (j = i + 1; j < n; j++) {
                if (set[j] != j) {
                    continue;
                }

                u[0] = m[i][0] | m[j][0];
                u[1] = m[i][1] | m[j][1];
                u[2] = m[i][2] | m[j][2];
                u[3] = m[i][3] | m[j][3];

                /* below 0 where the two took some pairs in common */

                cost = (int64_t) __builtin_popcount(u[0])
                       * __builtin_popcount(u[1])
                       * __builtin_popcount(u[2])
                       * __builtin_popcount(u[3])
                       - own[i] - own[j];

                if (cost < best) {
                    best = cost;
                    bi = i;
                    bj = j;
                }
            }
        }

        m[bi][0] |= m[bj][0];
        m[bi][1] |= m[bj][1];
        m[bi][2] |= m[bj][2];
        m[bi][3] |= m[bj][3];
        own[bi] = (int64_t) __builtin_popcount(m[bi][0])
                  * __builtin_popcount(m[bi][1])
                  * __builtin_popcount(m[bi][2])
                  * __builtin_popcount(m[bi][3]);

        for (i = 0; i < n; i++) {
            if (set[i] == bj) {
                set[i] = bi;
            }
        }
    }

    /* the sets numbered in the order of their first start */

    k = 0;

    for (i = 0; i < n; i++) {
        if (set[i] == i) {
            bits[i] = (u_char) k++;

        } else {
            bits[i] = bits[set[i]];
        }
    }
}


static ngx_int_t
ngx_http_airlock_header_filter(ngx_http_request_t *r)
{
    off_t                         len;
    ngx_int_t                     rc;
    ngx_str_t                     key, value;
    ngx_table_elt_t              *h;
    ngx_http_airlock_ctx_t       *ctx;
    ngx_http_airlock_loc_conf_t  *alcf;

    ctx = ngx_http_airlock_get_ctx(r);

    if (ctx == NULL || !ctx->allowed || ctx->rconf == NULL
        || ctx->rconf->scrub == NULL)
    {
        return ngx_http_next_header_filter(r);
    }

    if (ngx_http_airlock_scrub_headers(r, ctx) != NGX_OK) {
        return NGX_ERROR;
    }

    if (r->method == NGX_HTTP_HEAD
        || r->headers_out.status == NGX_HTTP_NO_CONTENT
        || r->headers_out.status == NGX_HTTP_NOT_MODIFIED)
    {
        return ngx_http_next_header_filter(r);
    }

    h = ngx_http_airlock_encoded(r, ctx);
    ngx_str_null(&key);

    if (h != NULL) {
        key = h->key;
        value = h->value;

    } else if (!ngx_http_airlock_charset(r)) {
        ngx_str_set(&key, "Content-Type");
        value = r->headers_out.content_type;
    }

    if (key.len) {

        /* a Transfer-Encoding is the upstream's own, not scrubbed yet */

        if (ngx_http_airlock_scrub_str(r, ctx->rconf, &value) == NGX_ERROR) {
            return NGX_ERROR;
        }

        /*
         * The upstream's bytes, which may be a client's echoed: written
         * as the line's context is (ngx_http_airlock_log_str()).
         */

        if (ngx_http_airlock_log_str(r->pool, &key, &key,
                                     NGX_HTTP_AIRLOCK_NAME_SHOWN)
            != NGX_OK
            || ngx_http_airlock_log_str(r->pool, &value, &value,
                                        NGX_MAX_ERROR_STR)
               != NGX_OK)
        {
            return NGX_ERROR;
        }

        ngx_http_airlock_log_error(NGX_LOG_ERR, r->connection->log, 0,
                                   "airlock: upstream sent \"%V: %V\" on "
                                   "route \"%s\", a response that cannot "
                                   "be scrubbed",
                                   &key, &value, ctx->route->name.data);

        /* the error page that follows is not this upstream's answer */
        ctx->refused = r->upstream;

        /*
         * A request finalized from a filter leaves its connection marked
         * as failed (c->error): kept alive, the client's next request on
         * it would be dropped unanswered.  It is closed instead.
         */
        r->keepalive = 0;

        rc = ngx_http_filter_finalize_request(r, &ngx_http_airlock_module,
                                              NGX_HTTP_BAD_GATEWAY);

        /*
         * NGX_AGAIN: the error page is not all sent yet (a slow client,
         * limit_rate, an HTTP/2 window), and nginx goes on with the
         * upstream, whose body would follow the page to the client,
         * unsearched: it is dropped (ngx_http_airlock_body_filter()).
         * Not after NGX_ERROR: the request is over, or an error_page
         * took it elsewhere, where another answer must pass.
         *
         * Straight from nginx's upstream (its header not yet taken for
         * sent: an error answer, a header no filter held), the upstream
         * would go on to read the body with its module's context
         * cleared, fail, and close the connection with the page half
         * sent.  Marked header only, it ends as for a HEAD request: the
         * upstream is closed unread, and the page finishes leaving.
         */

        if (rc == NGX_AGAIN) {
            ctx->discard = 1;

            if (r->upstream != NULL && !r->upstream->header_sent) {
                r->header_only = 1;
            }
        }

        return rc;
    }

    ngx_http_clear_accept_ranges(r);
    ngx_http_weak_etag(r);

    r->filter_need_in_memory = 1;

    len = r->headers_out.content_length_n;

    if (len == 0) {
        return ngx_http_next_header_filter(r);
    }

    alcf = ngx_http_get_module_loc_conf(r, ngx_http_airlock_module);

    if (len > 0 && len <= (off_t) alcf->scrub_hold) {

        /* small, of known length: held whole, scrubbed, then sent with
           its Content-Length (ngx_http_airlock_hold()) */

        ctx->hold_len = (size_t) len;
        ctx->scrub_body = 1;
        ctx->hold = 1;

        return NGX_OK;
    }

    /* the carry's room: taken when a buffer first ends in a candidate */

    ctx->carry = NULL;
    ctx->join = NULL;
    ctx->carry_len = 0;
    ctx->out = NULL;
    ctx->last_out = &ctx->out;
    ctx->tail = NULL;
    ctx->buf = NULL;
    ctx->ref = NULL;
    ctx->scrub_body = 1;

    /* the body may change size as it streams: it goes chunked */

    ngx_http_clear_content_length(r);

    return ngx_http_next_header_filter(r);
}


#if (nginx_version >= 1029000)

/*
 * An upstream's 103 Early Hints (nginx 1.29.0, "early_hints"): its
 * headers are in headers_out and go to the client at once, through a
 * chain of their own, not through the header filter.
 */

static ngx_int_t
ngx_http_airlock_early_hints_filter(ngx_http_request_t *r)
{
    ngx_http_airlock_ctx_t  *ctx;

    ctx = ngx_http_airlock_get_ctx(r);

    if (ctx != NULL && ctx->allowed && ctx->rconf != NULL
        && ctx->rconf->scrub != NULL
        && ngx_http_airlock_scrub_list(r, ctx, &r->headers_out.headers.part)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_next_early_hints_filter(r);
}

#endif


/*
 * The header that makes the body unsearchable, or NULL.
 *
 * headers_out.content_encoding is only the last Content-Encoding, while
 * every one goes to the client: "gzip" then "identity" (or an empty one)
 * would pass if it alone were read, so each is.
 *
 * The upstream's Transfer-Encoding is not passed on, but nginx 1.22 takes
 * any value holding "chunked" ("gzip, chunked") as chunked and hands on
 * what is under it, still encoded, with no header that says so.  Only
 * plain "chunked", once, is read as the client will read it.
 *
 * A Content-Encoding the location hides ("proxy_hide_header
 * Content-Encoding") is not copied to headers_out, but still encodes the
 * body: the client would get it unsearched, with nothing saying so.  Then
 * the upstream's own headers are read for it.
 *
 * The upstream module points headers_out.content_encoding and the
 * upstream's headers_in.transfer_encoding at every such header it copies
 * or reads, so when either is NULL there is none of that name to look for
 * (the common case: a call then costs two compares and the hide hash's
 * lookup, not a walk).
 */

static ngx_table_elt_t *
ngx_http_airlock_encoded(ngx_http_request_t *r, ngx_http_airlock_ctx_t *ctx)
{
    ngx_uint_t        i, n, hidden;
    ngx_hash_t       *hide;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    if (r->headers_out.content_encoding == NULL) {
        goto transfer;
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

        if (h[i].hash != 0
            && h[i].key.len == sizeof("Content-Encoding") - 1
            && ngx_strncasecmp(h[i].key.data, (u_char *) "Content-Encoding",
                               h[i].key.len) == 0
            && !ngx_http_airlock_identity(&h[i].value))
        {
            return &h[i];
        }
    }

transfer:

    /*
     * No upstream, or one whose proxy_pass never got its conf: a target
     * that evaluated empty (an error_page into a location outside
     * Airlock) makes nginx's 500 with r->upstream set and no conf
     */

    if (r->upstream == NULL || r->upstream == ctx->refused
        || r->upstream->conf == NULL)
    {
        return NULL;
    }

    hidden = 0;
    hide = &r->upstream->conf->hide_headers_hash;

    if (hide->buckets != NULL) {
        hidden = ngx_hash_find(hide, ngx_http_airlock_ce_key,
                               (u_char *) "content-encoding",
                               sizeof("content-encoding") - 1)
                 != NULL;
    }

    if (!hidden && r->upstream->headers_in.transfer_encoding == NULL) {
        return NULL;
    }

    part = &r->upstream->headers_in.headers.part;
    h = part->elts;
    n = 0;

    for (i = 0; /* void */; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (hidden
            && h[i].key.len == sizeof("Content-Encoding") - 1
            && ngx_strncasecmp(h[i].key.data, (u_char *) "Content-Encoding",
                               h[i].key.len) == 0
            && !ngx_http_airlock_identity(&h[i].value))
        {
            return &h[i];
        }

        if (h[i].key.len != sizeof("Transfer-Encoding") - 1
            || ngx_strncasecmp(h[i].key.data, (u_char *) "Transfer-Encoding",
                               h[i].key.len) != 0)
        {
            continue;
        }

        if (++n > 1
            || h[i].value.len != sizeof("chunked") - 1
            || ngx_strncasecmp(h[i].value.data, (u_char *) "chunked",
                               h[i].value.len) != 0)
        {
            return &h[i];
        }
    }

    return NULL;
}


/*
 * 1 when a Content-Encoding value is "identity" or a list of only that;
 * an empty value or list element is not: the bytes are then whatever the
 * client makes of them.
 */

static ngx_uint_t
ngx_http_airlock_identity(ngx_str_t *value)
{
    u_char  *p, *last, *start, *end;

    p = value->data;
    last = p + value->len;

    for ( ;; ) {
        start = p;

        while (p < last && *p != ',') {
            p++;
        }

        end = p;

        while (start < end && (*start == ' ' || *start == '\t')) {
            start++;
        }

        while (end > start && (end[-1] == ' ' || end[-1] == '\t')) {
            end--;
        }

        if (end - start != sizeof("identity") - 1
            || ngx_strncasecmp(start, (u_char *) "identity",
                               sizeof("identity") - 1) != 0)
        {
            return 0;
        }

        if (p == last) {
            return 1;
        }

        p++;
    }
}


/*
 * 1 when the body is in a charset the scrubber reads: one that writes
 * ASCII as ASCII, UTF-16 or UTF-32, or none named.  A client decodes the
 * body by its charset, and an upstream may write in the one the client
 * asked for (Spring writes a String in the charset of the Accept the
 * proxy keeps: "text/plain;charset=IBM037" is EBCDIC, where no byte of a
 * credential is its ASCII).  Every "charset" parameter of the
 * Content-Type is read, with blanks around "=" as lenient parsers take
 * them (nginx itself reads only "; charset=" and passes the rest on), and
 * the one nginx or the charset module set.
 */

static ngx_uint_t
ngx_http_airlock_charset(ngx_http_request_t *r)
{
    u_char     *p, *last, *v;
    ngx_str_t  *cs, *ct;

    cs = &r->headers_out.charset;
    ct = &r->headers_out.content_type;

    /* the usual answer: no parameter at all */

    p = (ct->len != 0) ? memchr(ct->data, ';', ct->len) : NULL;

    if (p == NULL && cs->len == 0) {
        return 1;
    }

    /* set by another module than nginx's reading of the Content-Type */

    if (cs->len && (cs->data < ct->data || cs->data >= ct->data + ct->len)) {
        v = cs->data;
        last = v + cs->len;

        while (v < last && *v != ';' && *v != ' ' && *v != '\t' && *v != '"')
        {
            v++;
        }

        if (!ngx_http_airlock_charset_known(cs->data, v - cs->data)) {
            return 0;
        }
    }

    last = ct->data + ct->len;

    for ( /* void */ ; p != NULL; p = memchr(p, ';', last - p)) {
        p++;

        while (p < last && (*p == ' ' || *p == '\t')) {
            p++;
        }

        if (last - p < 7 || ngx_strncasecmp(p, (u_char *) "charset", 7) != 0)
        {
            continue;
        }

        p += 7;

        while (p < last && (*p == ' ' || *p == '\t')) {
            p++;
        }

        if (p == last || *p != '=') {
            continue;
        }

        p++;

        while (p < last && (*p == ' ' || *p == '\t' || *p == '"')) {
            p++;
        }

        v = p;

        while (p < last && *p != ';' && *p != ' ' && *p != '\t' && *p != '"')
        {
            p++;
        }

        if (!ngx_http_airlock_charset_known(v, p - v)) {
            return 0;
        }
    }

    return 1;
}


/*
 * The charsets that write ASCII as ASCII (a name, or a family by its
 * start, in any case), and UTF-16 and UTF-32, which al_scrub_match()
 * reads.  Any other (EBCDIC, UTF-7, an empty name) is refused.
 */

static ngx_uint_t
ngx_http_airlock_charset_known(u_char *p, size_t len)
{
    ngx_uint_t  i;

    static ngx_str_t  names[] = {
        ngx_string("utf-8"), ngx_string("utf8"), ngx_string("us-ascii"),
        ngx_string("ascii"), ngx_string("shift_jis"), ngx_string("sjis"),
        ngx_string("tis-620"), ngx_string("macintosh")
    };

    static ngx_str_t  starts[] = {
        ngx_string("utf-16"), ngx_string("utf-32"), ngx_string("iso-8859-"),
        ngx_string("iso8859-"), ngx_string("iso_8859-"), ngx_string("latin"),
        ngx_string("windows-"), ngx_string("cp125"), ngx_string("koi8-"),
        ngx_string("euc-"), ngx_string("gb"), ngx_string("big5"),
        ngx_string("iso-2022-")
    };

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (len == names[i].len
            && ngx_strncasecmp(p, names[i].data, len) == 0)
        {
            return 1;
        }
    }

    for (i = 0; i < sizeof(starts) / sizeof(starts[0]); i++) {
        if (len >= starts[i].len
            && ngx_strncasecmp(p, starts[i].data, starts[i].len) == 0)
        {
            return 1;
        }
    }

    return 0;
}


static ngx_int_t
ngx_http_airlock_scrub_headers(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx)
{
    ngx_int_t                  rv;
    ngx_http_airlock_route_t  *rc;

    rc = ctx->rconf;

    if (ngx_http_airlock_scrub_list(r, ctx, &r->headers_out.headers.part)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* for this list as it is now only */
    ctx->own_from = 0;
    ctx->own_to = 0;

    rv = ngx_http_airlock_scrub_str(r, rc, &r->headers_out.content_type);

    if (rv == NGX_ERROR) {
        return NGX_ERROR;
    }

    if (rv == NGX_OK) {
        r->headers_out.content_type_len = r->headers_out.content_type.len;
        r->headers_out.content_type_lowcase = NULL;
        ngx_str_null(&r->headers_out.charset);
        ngx_http_airlock_scrubbed(r, ctx);
    }

    rv = ngx_http_airlock_scrub_str(r, rc, &r->headers_out.status_line);

    if (rv == NGX_ERROR) {
        return NGX_ERROR;
    }

    if (rv == NGX_OK) {
        ngx_http_airlock_scrubbed(r, ctx);
    }

    return NGX_OK;
}


/*
 * A header list (the response's headers, or its trailers): each value
 * scrubbed in place, and a header whose name holds a scrub string taken
 * out.  ctx->own_from and own_to mark the gateway's own headers, passed
 * by.
 */

static ngx_int_t
ngx_http_airlock_scrub_list(ngx_http_request_t *r,
    ngx_http_airlock_ctx_t *ctx, ngx_list_part_t *part)
{
    ngx_int_t                  rv;
    ngx_uint_t                 i, n, matches;
    ngx_table_elt_t           *h;
    ngx_http_airlock_route_t  *rc;

    rc = ctx->rconf;
    h = part->elts;

    /* n: the position of h[i] in the whole list */

    for (i = 0, n = 0; /* void */; i++, n++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].hash == 0 || (n >= ctx->own_from && n < ctx->own_to)) {
            continue;
        }

        /* a name cannot hold "[REDACTED]": such a header goes */

        (void) ngx_http_airlock_scrub_len(rc, h[i].key.data, h[i].key.len,
                                          &matches);

        if (matches) {
            h[i].hash = 0;
            ngx_http_airlock_scrubbed(r, ctx);
            continue;
        }

        rv = ngx_http_airlock_scrub_str(r, rc, &h[i].value);

        if (rv == NGX_ERROR) {
            return NGX_ERROR;
        }

        if (rv == NGX_OK) {
            ngx_http_airlock_scrubbed(r, ctx);
        }
    }

    return NGX_OK;
}


/*
 * A variable's value that reads the upstream's answer as it came
 * ($upstream_http_NAME and the like, see ngx_http_airlock_wrap_variables()),
 * scrubbed as its header is in a request the scrubber covers.
 */

ngx_int_t
ngx_http_airlock_scrub_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v)
{
    ngx_int_t                rv;
    ngx_str_t                s;
    ngx_http_airlock_ctx_t  *ctx;

    ctx = ngx_http_airlock_get_ctx(r);

    if (ctx == NULL || !ctx->allowed || ctx->rconf == NULL
        || ctx->rconf->scrub == NULL)
    {
        return NGX_OK;
    }

    s.data = v->data;
    s.len = v->len;

    rv = ngx_http_airlock_scrub_str(r, ctx->rconf, &s);

    if (rv == NGX_ERROR) {
        return NGX_ERROR;
    }

    if (rv == NGX_OK) {
        v->data = s.data;
        v->len = s.len;
        ngx_http_airlock_scrubbed(r, ctx);
    }

    return NGX_OK;
}


/*
 * Replaces every scrub string in *s with "[REDACTED]".  Returns NGX_OK when
 * something was replaced, NGX_DECLINED when there was nothing to replace.
 */

static ngx_int_t
ngx_http_airlock_scrub_str(ngx_http_request_t *r,
    ngx_http_airlock_route_t *rc, ngx_str_t *s)
{
    u_char      *p, *last;
    size_t       len;
    ngx_uint_t   matches;

    len = ngx_http_airlock_scrub_len(rc, s->data, s->len, &matches);

    if (matches == 0) {
        return NGX_DECLINED;
    }

    p = ngx_pnalloc(r->pool, len + 1);
    if (p == NULL) {
        return NGX_ERROR;
    }

    last = ngx_http_airlock_scrub_copy(rc, p, s->data, s->len);
    *last = '\0';

    s->data = p;
    s->len = last - p;

    return NGX_OK;
}


static size_t
ngx_http_airlock_scrub_len(ngx_http_airlock_route_t *rc, u_char *src,
    size_t len, ngx_uint_t *matches)
{
    u_char  *next[8], *s, *last;
    size_t   n, plen;

    *matches = 0;

    if (len < rc->minlen) {
        return len;                         /* most header values */
    }

    n = len;
    last = src + len;

    ngx_memzero(next, sizeof(next));

    for (s = src; s < last; /* void */) {
        s = ngx_http_airlock_next(rc, next, s, last);
        if (s == NULL) {
            break;
        }

        if (ngx_http_airlock_match(rc, s, last - s, 1, &plen)
            == NGX_HTTP_AIRLOCK_FULL)
        {
            (*matches)++;
            n = n - plen + sizeof(NGX_HTTP_AIRLOCK_REDACTED) - 1;
            s += plen;
            continue;
        }

        s++;
    }

    return n;
}


static u_char *
ngx_http_airlock_scrub_copy(ngx_http_airlock_route_t *rc, u_char *dst,
    u_char *src, size_t len)
{
    u_char  *next[8], *s, *run, *last;
    size_t   plen;

    last = src + len;
    run = src;

    ngx_memzero(next, sizeof(next));

    for (s = src; s < last; /* void */) {
        s = ngx_http_airlock_next(rc, next, s, last);
        if (s == NULL) {
            break;
        }

        if (ngx_http_airlock_match(rc, s, last - s, 1, &plen)
            == NGX_HTTP_AIRLOCK_FULL)
        {
            dst = ngx_cpymem(dst, run, s - run);
            dst = ngx_cpymem(dst, NGX_HTTP_AIRLOCK_REDACTED,
                             sizeof(NGX_HTTP_AIRLOCK_REDACTED) - 1);
            s += plen;
            run = s;
            continue;
        }

        s++;
    }

    return ngx_cpymem(dst, run, last - run);
}


static ngx_int_t
ngx_http_airlock_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    ngx_int_t                rc;
    ngx_buf_t               *b, *ob;
    ngx_uint_t               final;
    ngx_chain_t             *cl;
    ngx_http_airlock_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_airlock_module);

    if (ctx == NULL || !(ctx->scrub_body | ctx->discard)) {
        return ngx_http_next_body_filter(r, in);
    }

    if (ctx->discard && r->upstream == ctx->refused) {

        /* the refused answer's body, after the error page: dropped */

        for (cl = in; cl; cl = cl->next) {
            b = cl->buf;
            b->pos = b->last;

            if (b->in_file) {
                b->file_pos = b->file_last;
            }
        }

        return ngx_http_next_body_filter(r, NULL);
    }

    if (ctx->hold) {
        return ngx_http_airlock_hold(r, ctx, in);
    }

    for (cl = in; cl; cl = cl->next) {
        b = cl->buf;
        final = b->last_buf || b->last_in_chain;
        ctx->ref = NULL;

        /* the upstream's trailers (proxy_pass_trailers) are there by now */

        if (b->last_buf && r->headers_out.trailers.part.nelts
            && ngx_http_airlock_scrub_list(r, ctx,
                                           &r->headers_out.trailers.part)
               != NGX_OK)
        {
            return NGX_ERROR;
        }

        if (ngx_buf_in_memory(b)) {
            if (b->last > b->pos || (final && ctx->carry_len)) {
                if (ngx_http_airlock_scrub(r, ctx, b->pos, b->last - b->pos,
                                           final)
                    != NGX_OK)
                {
                    return NGX_ERROR;
                }
            }

            if (ctx->ref != NULL) {
                /* given back in ngx_http_airlock_release() */
                ctx->ref->shadow = b;
                ctx->ref->recycled = b->recycled;

            } else {
                b->pos = b->last;
            }

        } else if (b->in_file) {
            /* filter_need_in_memory makes this impossible */
            ngx_http_airlock_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                                       "airlock: file buffer in the scrub "
                                       "filter");
            return NGX_ERROR;

        } else if (final && ctx->carry_len) {
            if (ngx_http_airlock_scrub(r, ctx, NULL, 0, 1) != NGX_OK) {
                return NGX_ERROR;
            }
        }

        if (!(b->flush || b->sync || b->last_buf || b->last_in_chain)) {
            continue;
        }

        /* flags go on the last buffer written, or on an empty one */

        if (ctx->tail == NULL && ngx_http_airlock_out_buf(r, ctx, 0) == NULL) {
            return NGX_ERROR;
        }

        ob = ctx->tail;

        ob->flush |= b->flush;
        ob->sync |= b->sync;
        ob->last_buf |= b->last_buf;
        ob->last_in_chain |= b->last_in_chain;

        /* nothing is written after the flags */
        ctx->tail = NULL;
        ctx->buf = NULL;
    }

    rc = ngx_http_next_body_filter(r, ctx->out);

    ngx_http_airlock_release(ctx);

    return rc;
}


/*
 * A held body: collected until its last buffer, scrubbed whole, then the
 * header goes on with the exact Content-Length.  The usual body arrives in
 * one buffer of exactly that length, before the upstream's last (empty)
 * one.  When the upstream is buffered, that buffer is left where it is,
 * unconsumed, and goes on as it came if it holds no scrub string: the
 * upstream has nothing more to put in it, and nginx finishes a buffered
 * upstream without waiting for its buffers to be sent.  (An unbuffered
 * one waits: its last buffer would never come.)  Otherwise the body is
 * copied, and the upstream's buffers are given back as they are copied.
 */

static ngx_int_t
ngx_http_airlock_hold(ngx_http_request_t *r, ngx_http_airlock_ctx_t *ctx,
    ngx_chain_t *in)
{
    size_t        n;
    ngx_int_t     rv;
    ngx_str_t     body;
    ngx_buf_t    *b, *held;
    ngx_uint_t    last_buf, last, matches;
    ngx_chain_t  *cl, out;

    last = 0;
    last_buf = 0;

    for (cl = in; cl; cl = cl->next) {
        b = cl->buf;

        if (b->last_buf || b->last_in_chain) {
            last = 1;
            last_buf = b->last_buf;
        }

        if (b->in_file && !ngx_buf_in_memory(b)) {
            ngx_http_airlock_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                                       "airlock: file buffer in the scrub "
                                       "filter");
            return NGX_ERROR;
        }

        n = ngx_buf_in_memory(b) ? (size_t) (b->last - b->pos) : 0;

        if (n == 0 || b == ctx->whole) {
            continue;
        }

        if (ctx->held == NULL && ctx->whole == NULL && n == ctx->hold_len
            && r->upstream != NULL && r->upstream->buffering)
        {
            ctx->whole = b;
            continue;
        }

        if (ngx_http_airlock_hold_copy(r, ctx, b) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    if (!last) {
        return NGX_OK;
    }

    /* an empty list (the first part is filled first): no call */

    if (last_buf && r->headers_out.trailers.part.nelts
        && ngx_http_airlock_scrub_list(r, ctx, &r->headers_out.trailers.part)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    ctx->hold = 0;
    ctx->scrub_body = 0;

    b = ctx->whole;

    if (b != NULL) {
        (void) ngx_http_airlock_scrub_len(ctx->rconf, b->pos, b->last - b->pos,
                                          &matches);

        if (matches == 0) {
            rv = ngx_http_next_header_filter(r);

            if (rv == NGX_ERROR || rv > NGX_OK || r->header_only) {
                return rv;
            }

            /* the buffer goes first unless it came with the last one */

            for (cl = in; cl; cl = cl->next) {
                if (cl->buf == b) {
                    return ngx_http_next_body_filter(r, in);
                }
            }

            out.buf = b;
            out.next = in;

            return ngx_http_next_body_filter(r, &out);
        }

        ctx->whole = NULL;

        if (ngx_http_airlock_hold_copy(r, ctx, b) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    held = ctx->held;

    if (held == NULL) {
        /* no body came before the last buffer (nginx ends a body cut
           short with an error, not here): an empty one goes on */
        held = ngx_calloc_buf(r->pool);
        if (held == NULL) {
            return NGX_ERROR;
        }
    }

    /* scrubbed as a header value is: a copy only when something matched */

    body.data = held->pos;
    body.len = held->last - held->pos;

    rv = ngx_http_airlock_scrub_str(r, ctx->rconf, &body);

    if (rv == NGX_ERROR) {
        return NGX_ERROR;
    }

    if (rv == NGX_OK) {
        ngx_http_airlock_scrubbed(r, ctx);
    }

    b = held;
    b->start = body.data;
    b->pos = body.data;
    b->last = body.data + body.len;
    b->end = b->last;

    ngx_http_clear_content_length(r);
    r->headers_out.content_length_n = b->last - b->pos;

    rv = ngx_http_next_header_filter(r);

    if (rv == NGX_ERROR || rv > NGX_OK || r->header_only) {
        return rv;
    }

    if (b->pos == b->last) {
        b->temporary = 0;                   /* a special buffer */
    }

    b->last_buf = last_buf;
    b->last_in_chain = 1;

    out.buf = b;
    out.next = NULL;

    return ngx_http_next_body_filter(r, &out);
}


/* appends an upstream buffer to the held copy, and gives it back */

static ngx_int_t
ngx_http_airlock_hold_copy(ngx_http_request_t *r, ngx_http_airlock_ctx_t *ctx,
    ngx_buf_t *b)
{
    size_t      n;
    ngx_buf_t  *held;

    held = ctx->held;

    if (held == NULL) {
        held = ngx_create_temp_buf(r->pool, ctx->hold_len);
        if (held == NULL) {
            return NGX_ERROR;
        }

        ctx->held = held;
    }

    n = b->last - b->pos;

    if (ctx->whole != NULL || n > (size_t) (held->end - held->last)) {
        ngx_http_airlock_log_error(NGX_LOG_ERR, r->connection->log, 0,
                                   "airlock: upstream sent more than its "
                                   "Content-Length on route \"%s\"",
                                   ctx->route->name.data);
        return NGX_ERROR;
    }

    held->last = ngx_cpymem(held->last, b->pos, n);
    b->pos = b->last;

    return NGX_OK;
}


/*
 * After the next filter: what it sent (a size of 0, in order) is free
 * again, and an upstream buffer is given back with the last buffer that
 * pointed into it.
 */

static void
ngx_http_airlock_release(ngx_http_airlock_ctx_t *ctx)
{
    ngx_buf_t     *b;
    ngx_chain_t   *cl, **ll;

    for (ll = &ctx->busy; *ll; ll = &(*ll)->next) { /* void */ }

    *ll = ctx->out;

    ctx->out = NULL;
    ctx->last_out = &ctx->out;
    ctx->tail = NULL;
    ctx->buf = NULL;

    while (ctx->busy) {
        cl = ctx->busy;
        b = cl->buf;

        if (ngx_buf_size(b) != 0) {
            break;
        }

        ctx->busy = cl->next;

        if (b->shadow) {
            b->shadow->pos = b->shadow->last;
            b->shadow = NULL;
        }

        if (b->start) {
            cl->next = ctx->free;
            ctx->free = cl;

        } else {
            cl->next = ctx->free_refs;
            ctx->free_refs = cl;
        }
    }
}


/*
 * Scrubs the stream "carry, then p", writing what is decided and keeping
 * in the carry the tail that could still begin a match.  The carry is
 * shorter than the longest match (maxspan, a scrub string in its longest
 * encoded form), so a match starting in it ends within the first
 * maxspan - 1 bytes of p: only those are joined to it.
 */

static ngx_int_t
ngx_http_airlock_scrub(ngx_http_request_t *r, ngx_http_airlock_ctx_t *ctx,
    u_char *p, size_t len, ngx_uint_t final)
{
    u_char                    *join, *s, *run, *last, *next[8];
    size_t                     i, jlen, clen, plen, skip, max;
    ngx_uint_t                 m;
    ngx_http_airlock_route_t  *rc;

    rc = ctx->rconf;
    max = rc->scrub->maxspan;
    skip = 0;

    if (ctx->carry_len) {
        clen = ctx->carry_len;
        join = ctx->join;

        jlen = ngx_min(len, max - 1);
        ngx_memcpy(join, ctx->carry, clen);
        if (jlen) {
            ngx_memcpy(join + clen, p, jlen);
        }
        jlen += clen;

        ctx->carry_len = 0;
        run = join;
        i = 0;

        while (i < clen) {
            if (!rc->first[join[i]]) {
                i++;
                continue;
            }

            m = ngx_http_airlock_match(rc, join + i, jlen - i, final, &plen);

            if (m == NGX_HTTP_AIRLOCK_FULL) {
                if (ngx_http_airlock_emit(r, ctx, run, join + i - run)
                    != NGX_OK
                    || ngx_http_airlock_emit_ref(r, ctx,
                                        (u_char *) NGX_HTTP_AIRLOCK_REDACTED,
                                        sizeof(NGX_HTTP_AIRLOCK_REDACTED) - 1,
                                        0)
                       != NGX_OK)
                {
                    return NGX_ERROR;
                }

                ngx_http_airlock_scrubbed(r, ctx);

                i += plen;
                run = join + i;
                continue;
            }

            if (m == NGX_HTTP_AIRLOCK_PARTIAL) {
                /* all of p is in join, and still undecided */

                if (ngx_http_airlock_emit(r, ctx, run, join + i - run)
                    != NGX_OK)
                {
                    return NGX_ERROR;
                }

                ctx->carry_len = jlen - i;
                ngx_memcpy(ctx->carry, join + i, ctx->carry_len);

                return NGX_OK;
            }

            i++;
        }

        if (run < join + clen
            && ngx_http_airlock_emit(r, ctx, run, join + clen - run)
               != NGX_OK)
        {
            return NGX_ERROR;
        }

        skip = i - clen;
    }

    if (len == 0) {
        return NGX_OK;
    }

    s = p + skip;
    last = p + len;
    run = s;

    for (i = 0; i < sizeof(next) / sizeof(next[0]); i++) {
        next[i] = NULL;
    }

    while (s < last) {
        s = ngx_http_airlock_next(rc, next, s, last);
        if (s == NULL) {
            break;
        }

        m = ngx_http_airlock_match(rc, s, last - s, final, &plen);

        if (m == NGX_HTTP_AIRLOCK_FULL) {
            if (ngx_http_airlock_emit_ref(r, ctx, run, s - run, 1) != NGX_OK
                || ngx_http_airlock_emit_ref(r, ctx,
                                        (u_char *) NGX_HTTP_AIRLOCK_REDACTED,
                                        sizeof(NGX_HTTP_AIRLOCK_REDACTED) - 1,
                                        0)
                   != NGX_OK)
            {
                return NGX_ERROR;
            }

            ngx_http_airlock_scrubbed(r, ctx);

            s += plen;
            run = s;
            continue;
        }

        if (m == NGX_HTTP_AIRLOCK_PARTIAL) {
            if (ngx_http_airlock_emit_ref(r, ctx, run, s - run, 1) != NGX_OK) {
                return NGX_ERROR;
            }

            if (ctx->carry == NULL) {

                /* the carry, and the join of it with the next maxspan - 1
                   bytes */

                ctx->carry = ngx_pnalloc(r->pool, 3 * max);
                if (ctx->carry == NULL) {
                    return NGX_ERROR;
                }

                ctx->join = ctx->carry + max;
            }

            ctx->carry_len = last - s;
            ngx_memcpy(ctx->carry, s, ctx->carry_len);

            return NGX_OK;
        }

        s++;
    }

    return ngx_http_airlock_emit_ref(r, ctx, run, last - run, 1);
}


/*
 * Whether a scrub string starts at s, raw or encoded (al_scrub_match()):
 * FULL with the length it covers, PARTIAL when the avail bytes may begin
 * one and more may follow.
 */

static ngx_uint_t
ngx_http_airlock_match(ngx_http_airlock_route_t *rc, u_char *s, size_t avail,
    ngx_uint_t final, size_t *len)
{
    return (ngx_uint_t) al_scrub_match(rc->scrub, s, avail, final != 0, len);
}


/*
 * The next byte at or after p that can start a scrub string: a first
 * byte whose pair with the byte after it the list does not rule out
 * (al_scrub_pair_out()).  A list of up to 64 distinct two-byte starts
 * (AL_SCRUB_PAIRS: a policy of about a dozen secrets) is searched 32
 * bytes at a time where the CPU has AVX2, and one of up to 16 also 16
 * bytes at a time (ngx_http_airlock_walk_pairs()).  Otherwise, with up
 * to 8 distinct
 * first bytes, memchr() finds each one's next occurrence and next[]
 * remembers them, so each byte value is scanned for once per buffer;
 * short spans are cheaper to walk once with the table.
 */

#define NGX_HTTP_AIRLOCK_SHORT  64

static u_char *
ngx_http_airlock_next(ngx_http_airlock_route_t *rc, u_char **next, u_char *p,
    u_char *last)
{
    u_char      *min;
    ngx_uint_t   i;

    if (rc->scrub->npairs > 0) {
        min = ngx_http_airlock_walk_pairs(rc, p, last);
        return (min == last) ? NULL : min;
    }

    if (rc->nfirst > sizeof(rc->firsts)
        || last - p < NGX_HTTP_AIRLOCK_SHORT)
    {
        for ( /* void */ ; p < last; p++) {
            if (rc->first[*p]
                && (p + 1 == last || !al_scrub_pair_out(rc->scrub, p)))
            {
                return p;
            }
        }

        return NULL;
    }

    for ( ;; ) {
        min = last;

        for (i = 0; i < rc->nfirst; i++) {
            if (next[i] == NULL || (next[i] < p && next[i] != last)) {
                next[i] = memchr(p, rc->firsts[i], last - p);
                if (next[i] == NULL) {
                    next[i] = last;
                }
            }

            if (next[i] < min) {
                min = next[i];
            }
        }

        if (min == last) {
            return NULL;
        }

        if (min + 1 == last || !al_scrub_pair_out(rc->scrub, min)) {
            return min;
        }

        p = min + 1;
    }
}


typedef u_char  ngx_http_airlock_v16_t __attribute__((vector_size(16)));


/*
 * The candidates of one block: m gets 0xff in each lane of v (the bytes
 * at p) that is a candidate, v1 being the bytes at p + 1, for vectors of
 * type vt and the starts' bytes broadcast in a[] and b[].  A lane is a
 * candidate when it and the byte after it are a start, or the second
 * byte begins an escape of a start or a line end in it (CR, LF) or is the
 * NUL of its UTF-16LE form, or the lane itself begins an escape ('%',
 * '\\', '&', '+'), or is a NUL before a start's first byte (UTF-16BE).  A
 * macro for the two vector widths.
 */

#define ngx_http_airlock_pairs_mask(vt, m, v, v1, a, b, scrub)                \
    do {                                                                      \
        ngx_uint_t  i_;                                                       \
        vt          e_, ep_;                                                  \
                                                                              \
        m = (vt) ((v == '%') | (v == '\\') | (v == '&'));                     \
                                                                              \
        if ((scrub)->plus) {                                                  \
            m |= (vt) (v == '+');                                             \
        }                                                                     \
                                                                              \
        e_ = (vt) ((v1 == '%') | (v1 == '\\') | (v1 == '&') | (v1 == '=')    \
                   | (v1 == 0) | (v1 == '\r') | (v1 == '\n'));                \
        ep_ = (vt) (v1 == '+');                                               \
                                                                              \
        for (i_ = 0; i_ < (scrub)->npairs; i_++) {                            \
            m |= (vt) (v == a[i_])                                            \
                 & ((vt) (v1 == b[i_]) | e_                                   \
                    | ((scrub)->pair[i_][1] == ' ' ? ep_ : (vt) { 0 }));      \
            m |= (vt) (v == 0) & (vt) (v1 == a[i_]);                          \
        }                                                                     \
    } while (0)


/*
 * The first candidate at or after p, or last, by the list's distinct
 * two-byte starts: each 16-byte block, and the block one byte on, are
 * compared with every start at once (GCC's and clang's vector extension:
 * SSE2 on x86-64, NEON on arm64; 32 bytes at a time first where the CPU
 * has AVX2).  Nearly every lane of text is turned away in the vector.
 */

static u_char *
ngx_http_airlock_walk_pairs(ngx_http_airlock_route_t *rc, u_char *p,
    u_char *last)
{
    ngx_uint_t               i;
    al_scrub_t              *scrub;
    ngx_http_airlock_v16_t   v, v1, m, a[NGX_HTTP_AIRLOCK_PAIRS],
                             b[NGX_HTTP_AIRLOCK_PAIRS];
#if (defined __x86_64__ && defined __SSE2__)
    uint32_t                 bits;
#else
    uint64_t                 w[2];
    ngx_uint_t               k;
#endif
#if (NGX_HTTP_AIRLOCK_AVX2)
    u_char                  *c;
#endif

    scrub = rc->scrub;

#if (NGX_HTTP_AIRLOCK_AVX2)
    if (ngx_http_airlock_avx2 && last - p >= 33 && rc->nibbles != NULL) {

        /* a copy of the loop for each number of groups of starts */

        c = (scrub->npairs > 8)
            ? ngx_http_airlock_walk_pairs32_two(rc, &p, last)
            : ngx_http_airlock_walk_pairs32(rc, &p, last);

        if (c != NULL) {
            return c;
        }
    }
#endif

    /*
     * More starts than the 16-byte walk compares one by one (they share
     * bits only in the AVX2 walk's tables): the table, a byte at a time
     */

    if (scrub->npairs > NGX_HTTP_AIRLOCK_PAIRS) {
        goto bytes;
    }

    /* the starts broadcast only for a span the blocks below walk */

    if (last - p >= 17) {
        for (i = 0; i < scrub->npairs; i++) {
            a[i] = (ngx_http_airlock_v16_t) { 0 } + scrub->pair[i][0];
            b[i] = (ngx_http_airlock_v16_t) { 0 } + scrub->pair[i][1];
        }
    }

    /* the block one byte on must lie within the buffer */

    while (last - p >= 17) {
        ngx_memcpy(&v, p, 16);
        ngx_memcpy(&v1, p + 1, 16);

        ngx_http_airlock_pairs_mask(ngx_http_airlock_v16_t, m, v, v1, a, b,
                                    scrub);

#if (defined __x86_64__ && defined __SSE2__)
        bits = (uint32_t) _mm_movemask_epi8((__m128i) m);

        if (bits) {
            return p + __builtin_ctz(bits);
        }
#else
        ngx_memcpy(w, &m, 16);

        for (k = 0; k < 2; k++) {
            if (w[k]) {
                return p + k * 8 + (ngx_uint_t) __builtin_ctzll(w[k]) / 8;
            }
        }
#endif

        p += 16;
    }

bytes:

    for ( /* void */ ; p < last; p++) {
        if (rc->first[*p]
            && (p + 1 == last || !al_scrub_pair_out(scrub, p)))
        {
            return p;
        }
    }

    return last;
}


#if (NGX_HTTP_AIRLOCK_AVX2)

/*
 * The same 32 bytes at a time, while 33 are left: returns the first
 * candidate, or NULL with *pp where fewer than 33 bytes are left.  The
 * starts are looked up in the nibble tables (ngx_http_airlock_nibbles_init())
 * with a byte shuffle each, a group of 8 at a time (more than 8: a second
 * group, in a copy of the loop of its own): for the bytes v and
 * those one on, v1, a lane is a candidate when v begins an escape, or is
 * a NUL before a start's first byte (UTF-16BE), or when the start bits of
 * v and those of v1 (all of them when v1 begins an escape or a line end
 * or is a NUL, those ending in a space when v1 is '+') share one.  Sanitizer
 * builds check every lane against the test of ngx_http_airlock_walk_pairs().
 */

static u_char *
ngx_http_airlock_walk_pairs32(ngx_http_airlock_route_t *rc, u_char **pp,
    u_char *last)
{
    return ngx_http_airlock_walk32(rc, pp, last, 0);
}


static u_char *
ngx_http_airlock_walk_pairs32_two(ngx_http_airlock_route_t *rc, u_char **pp,
    u_char *last)
{
    return ngx_http_airlock_walk32(rc, pp, last, 1);
}


static ngx_inline u_char *
ngx_http_airlock_walk32(ngx_http_airlock_route_t *rc, u_char **pp,
    u_char *last, ngx_uint_t two)
{
    u_char      *p;
    uint32_t     bits;
    __m256i      lo1, hi1, lo2, hi2, nib, t0, t1, pls, spc, zero, cr;
    __m256i      lo1b, hi1b, lo2b, hi2b, spcb;
    __m256i      v, v1, f, f1, g, z, esc, e1, p1, fb, gb, fg;

    p = *pp;

    lo1 = _mm256_broadcastsi128_si256(
              _mm_loadu_si128((__m128i *) rc->nibbles));
    hi1 = _mm256_broadcastsi128_si256(
              _mm_loadu_si128((__m128i *) (rc->nibbles + 16)));
    lo2 = _mm256_broadcastsi128_si256(
              _mm_loadu_si128((__m128i *) (rc->nibbles + 32)));
    hi2 = _mm256_broadcastsi128_si256(
              _mm_loadu_si128((__m128i *) (rc->nibbles + 48)));

    /* the second group of starts, from 96 */

    lo1b = _mm256_broadcastsi128_si256(
               _mm_loadu_si128((__m128i *) (rc->nibbles + 96)));
    hi1b = _mm256_broadcastsi128_si256(
               _mm_loadu_si128((__m128i *) (rc->nibbles + 112)));
    lo2b = _mm256_broadcastsi128_si256(
               _mm_loadu_si128((__m128i *) (rc->nibbles + 128)));
    hi2b = _mm256_broadcastsi128_si256(
               _mm_loadu_si128((__m128i *) (rc->nibbles + 144)));

    /* the escapes, by one byte shuffle each */

    t0 = _mm256_broadcastsi128_si256(
             _mm_loadu_si128((__m128i *) (rc->nibbles + 64)));
    t1 = _mm256_broadcastsi128_si256(
             _mm_loadu_si128((__m128i *) (rc->nibbles + 80)));

    nib = _mm256_set1_epi8(0x0f);
    pls = _mm256_set1_epi8('+');
    spc = _mm256_set1_epi8((char) rc->space[0]);
    spcb = _mm256_set1_epi8((char) rc->space[1]);
    zero = _mm256_setzero_si256();
    cr = _mm256_set1_epi8('\r');

    while (last - p >= 33) {
        v = _mm256_loadu_si256((__m256i *) p);
        v1 = _mm256_loadu_si256((__m256i *) (p + 1));

        /* the starts v is the first byte of */

        f = _mm256_and_si256(
                _mm256_shuffle_epi8(lo1, _mm256_and_si256(v, nib)),
                _mm256_shuffle_epi8(hi1,
                    _mm256_and_si256(_mm256_srli_epi16(v, 4), nib)));

        /* ... and those v1 can be the second byte of */

        g = _mm256_and_si256(
                _mm256_shuffle_epi8(lo2, _mm256_and_si256(v1, nib)),
                _mm256_shuffle_epi8(hi2,
                    _mm256_and_si256(_mm256_srli_epi16(v1, 4), nib)));

        e1 = _mm256_cmpeq_epi8(_mm256_shuffle_epi8(t1, v1), v1);
        e1 = _mm256_or_si256(e1, _mm256_cmpeq_epi8(v1, cr));
        p1 = _mm256_cmpeq_epi8(v1, pls);

        g = _mm256_or_si256(g, e1);
        g = _mm256_or_si256(g, _mm256_and_si256(p1, spc));

        fg = _mm256_and_si256(f, g);

        if (two) {
            fb = _mm256_and_si256(
                     _mm256_shuffle_epi8(lo1b, _mm256_and_si256(v, nib)),
                     _mm256_shuffle_epi8(hi1b,
                         _mm256_and_si256(_mm256_srli_epi16(v, 4), nib)));

            gb = _mm256_and_si256(
                     _mm256_shuffle_epi8(lo2b, _mm256_and_si256(v1, nib)),
                     _mm256_shuffle_epi8(hi2b,
                         _mm256_and_si256(_mm256_srli_epi16(v1, 4), nib)));

            gb = _mm256_or_si256(gb, e1);
            gb = _mm256_or_si256(gb, _mm256_and_si256(p1, spcb));

            fg = _mm256_or_si256(fg, _mm256_and_si256(fb, gb));
        }

        esc = _mm256_cmpeq_epi8(_mm256_shuffle_epi8(t0, v), v);

        /*
         * a NUL before a start's first byte: UTF-16BE; text has no NUL,
         * so the starts of v1 are looked up only in a block that has one
         */

        z = _mm256_cmpeq_epi8(v, zero);

        if (!_mm256_testz_si256(z, z)) {
            f1 = _mm256_and_si256(
                     _mm256_shuffle_epi8(lo1, _mm256_and_si256(v1, nib)),
                     _mm256_shuffle_epi8(hi1,
                         _mm256_and_si256(_mm256_srli_epi16(v1, 4), nib)));

            if (two) {
                f1 = _mm256_or_si256(f1, _mm256_and_si256(
                         _mm256_shuffle_epi8(lo1b,
                                             _mm256_and_si256(v1, nib)),
                         _mm256_shuffle_epi8(hi1b,
                             _mm256_and_si256(_mm256_srli_epi16(v1, 4),
                                              nib))));
            }

            esc = _mm256_or_si256(esc,
                      _mm256_andnot_si256(_mm256_cmpeq_epi8(f1, zero), z));
        }

        /* a bit a lane: no start shared, then the escapes */

        bits = ~(uint32_t) _mm256_movemask_epi8(_mm256_cmpeq_epi8(fg, zero))
               | (uint32_t) _mm256_movemask_epi8(esc);

#if (defined __SANITIZE_ADDRESS__)
        ngx_http_airlock_pairs_check(rc->scrub, p, bits);
#endif

        if (bits) {
            return p + __builtin_ctz(bits);
        }

        p += 32;
    }

    *pp = p;

    return NULL;
}


#if (defined __SANITIZE_ADDRESS__)

/*
 * each of the 32 lanes at p as the 16-byte walk's mask has it; of more
 * starts than have a bit each, at least those
 */

static void
ngx_http_airlock_pairs_check(al_scrub_t *scrub, u_char *p, uint32_t bits)
{
    u_char      c, d;
    ngx_uint_t  k, i, want;

    for (k = 0; k < 32; k++) {
        c = p[k];
        d = p[k + 1];

        want = (c == '%' || c == '\\' || c == '&'
                || (scrub->plus && c == '+'));

        for (i = 0; i < scrub->npairs; i++) {
            want |= (c == scrub->pair[i][0]
                     && (d == scrub->pair[i][1] || d == '%' || d == '\\'
                         || d == '&' || d == '=' || d == 0 || d == '\r'
                         || d == '\n'
                         || (scrub->pair[i][1] == ' ' && d == '+')));
            want |= (c == 0 && d == scrub->pair[i][0]);
        }

        /* starts that share a bit: the lanes of others' nibbles too */

        if (scrub->npairs > NGX_HTTP_AIRLOCK_PAIRS
            ? want > ((bits >> k) & 1) : want != ((bits >> k) & 1))
        {
            ngx_log_error(NGX_LOG_ALERT, ngx_cycle->log, 0,
                          "airlock: the AVX2 scrub walk has lane %ui of "
                          "\"%*s\" as %ui", k, (size_t) 33, p,
                          (bits >> k) & 1);
            abort();
        }
    }
}

#endif

#endif


/* Copies: the carried bytes and those joined to them. */

static ngx_int_t
ngx_http_airlock_emit(ngx_http_request_t *r, ngx_http_airlock_ctx_t *ctx,
    u_char *data, size_t len)
{
    size_t      n;
    ngx_buf_t  *b;

    while (len) {
        b = ctx->buf;

        if (b == NULL || b->last == b->end) {
            b = ngx_http_airlock_out_buf(r, ctx, 1);
            if (b == NULL) {
                return NGX_ERROR;
            }
        }

        n = ngx_min(len, (size_t) (b->end - b->last));
        b->last = ngx_cpymem(b->last, data, n);

        data += n;
        len -= n;
    }

    return NGX_OK;
}


/*
 * Passes len bytes at data on without copying them: a part of the input
 * buffer (input is set), or the static "[REDACTED]".
 */

static ngx_int_t
ngx_http_airlock_emit_ref(ngx_http_request_t *r, ngx_http_airlock_ctx_t *ctx,
    u_char *data, size_t len, ngx_uint_t input)
{
    ngx_buf_t  *b;

    if (len == 0) {
        return NGX_OK;
    }

    b = ngx_http_airlock_out_buf(r, ctx, 0);
    if (b == NULL) {
        return NGX_ERROR;
    }

    b->memory = 1;
    b->pos = data;
    b->last = data + len;

    if (input) {
        ctx->ref = b;
    }

    return NGX_OK;
}


/*
 * An empty buffer at the end of out.  A copy buffer (copy set) keeps its
 * memory from one use to the next; the others point at memory they do not
 * own, or at none.
 */

static ngx_buf_t *
ngx_http_airlock_out_buf(ngx_http_request_t *r, ngx_http_airlock_ctx_t *ctx,
    ngx_uint_t copy)
{
    u_char       *start, *end;
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    cl = ngx_http_airlock_chain_buf(r->pool,
                                    copy ? &ctx->free : &ctx->free_refs);
    if (cl == NULL) {
        return NULL;
    }

    b = cl->buf;
    start = b->start;
    end = b->end;

    if (copy && start == NULL) {
        start = ngx_palloc(r->pool, NGX_HTTP_AIRLOCK_BUF_SIZE);
        if (start == NULL) {
            return NULL;
        }

        end = start + NGX_HTTP_AIRLOCK_BUF_SIZE;
    }

    ngx_memzero(b, sizeof(ngx_buf_t));

    if (copy) {
        b->start = start;
        b->end = end;
        b->pos = start;
        b->last = start;
        b->temporary = 1;
    }

    b->tag = (ngx_buf_tag_t) &ngx_http_airlock_module;

    *ctx->last_out = cl;
    ctx->last_out = &cl->next;
    ctx->tail = b;
    ctx->buf = copy ? b : NULL;

    return b;
}


static void
ngx_http_airlock_scrubbed(ngx_http_request_t *r, ngx_http_airlock_ctx_t *ctx)
{
    ctx->scrubbed = 1;

    if (ctx->scrub_logged) {
        return;
    }

    ctx->scrub_logged = 1;

    ngx_http_airlock_log_error(NGX_LOG_WARN, r->connection->log, 0,
                               "airlock: scrubbed an injected credential "
                               "from the response on route \"%s\"",
                               ctx->route->name.data);
}


/*
 * nginx writes some of what an upstream sends into the error log as it
 * came: a response header line it cannot parse ("upstream sent invalid
 * header: ..." holds the line up to the bad byte), so an upstream that
 * echoes the credential in such a line would put it there.  For a request
 * the scrubber covers, the connection's log (which the upstream connection
 * shares) gets a writer that scrubs each line as a header value is
 * scrubbed, then writes it where the location's error logs would have:
 * every log of the chain, the chain being taken over.  The location's own
 * settings come back when the request ends, or with the next location
 * (ngx_set_connection_log()), which calls this again if it is ours.
 */

ngx_int_t
ngx_http_airlock_scrub_log(ngx_http_request_t *r, ngx_http_airlock_ctx_t *ctx)
{
    ngx_log_t               *log;
    ngx_pool_cleanup_t      *cln;
    ngx_http_airlock_log_t  *al;

    if (ctx->rconf == NULL || ctx->rconf->scrub == NULL) {
        return NGX_OK;
    }

    log = r->connection->log;

    if (log->writer == ngx_http_airlock_log_writer) {
        al = log->wdata;
        al->ctx = ctx;
        return NGX_OK;
    }

    if (ctx->log_cleanup.handler == NULL) {

        /* the usual case: the one the context has room for */

        al = &ctx->log;
        ngx_http_airlock_cleanup_link(r->pool, &ctx->log_cleanup,
                                      ngx_http_airlock_log_restore, al);

    } else {
        cln = ngx_pool_cleanup_add(r->pool, sizeof(ngx_http_airlock_log_t));
        if (cln == NULL) {
            return NGX_ERROR;
        }

        al = cln->data;
        cln->handler = ngx_http_airlock_log_restore;
    }

    al->log = log;
    al->writer = log->writer;
    al->wdata = log->wdata;
    al->next = log->next;
    al->ctx = ctx;

    log->writer = ngx_http_airlock_log_writer;
    log->wdata = al;
    log->next = NULL;

    return NGX_OK;
}


static void
ngx_http_airlock_log_restore(void *data)
{
    ngx_http_airlock_log_t  *al = data;

    if (al->log->writer == ngx_http_airlock_log_writer
        && al->log->wdata == al)
    {
        al->log->writer = al->writer;
        al->log->wdata = al->wdata;
        al->log->next = al->next;
    }
}


static void
ngx_http_airlock_log_writer(ngx_log_t *log, ngx_uint_t level, u_char *buf,
    size_t len)
{
    u_char                    *last;
    ngx_log_t                 *l;
    ngx_uint_t                 debug_connection;
    ngx_http_airlock_log_t    *al;
    ngx_http_airlock_ctx_t    *ctx;
    u_char                     out[NGX_MAX_ERROR_STR];

    al = log->wdata;
    ctx = al->ctx;

    if (ctx->allowed && ctx->rconf != NULL && ctx->rconf->scrub != NULL) {
        last = ngx_http_airlock_log_scrub(ctx->rconf, out, buf, len);

        buf = out;
        len = last - out;
    }

    /* this log as it was, then the rest of the chain, as nginx writes */

    log->writer = al->writer;
    log->wdata = al->wdata;

    ngx_http_airlock_log_write(log, level, buf, len);

    log->writer = ngx_http_airlock_log_writer;
    log->wdata = al;

    debug_connection = (log->log_level & NGX_LOG_DEBUG_CONNECTION) != 0;

    for (l = al->next; l; l = l->next) {
        if (l->log_level < level && !debug_connection) {
            break;
        }

        ngx_http_airlock_log_write(l, level, buf, len);
    }
}


/*
 * The line at buf, scrubbed into out (NGX_MAX_ERROR_STR bytes), cut to
 * that length as nginx cuts it.  A line nginx had cut already may end
 * in the first bytes of a credential: a tail that could begin a match is
 * redacted too.
 */

static u_char *
ngx_http_airlock_log_scrub(ngx_http_airlock_route_t *rc, u_char *out,
    u_char *buf, size_t len)
{
    u_char      *next[8], *s, *run, *last, *o, *end;
    size_t       plen, n;
    ngx_uint_t   m, cut;

    cut = (len == NGX_MAX_ERROR_STR);
    last = buf + len;

    if (last > buf && last[-1] == LF) {
        last--;
    }

    o = out;
    end = out + NGX_MAX_ERROR_STR - NGX_LINEFEED_SIZE;
    run = buf;

    ngx_memzero(next, sizeof(next));

    for (s = buf; s < last; /* void */) {
        s = ngx_http_airlock_next(rc, next, s, last);
        if (s == NULL) {
            break;
        }

        m = ngx_http_airlock_match(rc, s, last - s, !cut, &plen);

        if (m == NGX_HTTP_AIRLOCK_NONE) {
            s++;
            continue;
        }

        n = ngx_min((size_t) (s - run), (size_t) (end - o));
        o = ngx_cpymem(o, run, n);

        n = ngx_min(sizeof(NGX_HTTP_AIRLOCK_REDACTED) - 1, (size_t) (end - o));
        o = ngx_cpymem(o, NGX_HTTP_AIRLOCK_REDACTED, n);

        if (m == NGX_HTTP_AIRLOCK_PARTIAL) {
            run = last;
            break;
        }

        s += plen;
        run = s;
    }

    n = ngx_min((size_t) (last - run), (size_t) (end - o));
    o = ngx_cpymem(o, run, n);

    ngx_linefeed(o);

    return o;
}


/* one log of the chain, as ngx_log_error_core() writes to it */

static void
ngx_http_airlock_log_write(ngx_log_t *log, ngx_uint_t level, u_char *buf,
    size_t len)
{
    ssize_t  n;

    if (log->writer) {
        log->writer(log, level, buf, len);
        return;
    }

    if (ngx_time() == log->disk_full_time) {
        return;
    }

    n = ngx_write_fd(log->file->fd, buf, len);

    if (n == -1 && ngx_errno == NGX_ENOSPC) {
        log->disk_full_time = ngx_time();
    }
}
