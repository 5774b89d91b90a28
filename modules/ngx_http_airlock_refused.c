
/*
 * Airlock: requests nginx refuses before Airlock's decision.
 *
 * nginx answers some requests itself before the preaccess phase, where the
 * decision is made: a malformed request line or header (400), TRACE (405),
 * a body over client_max_body_size (413), a target too long (414), an
 * unknown Transfer-Encoding (501).  Framing attacks end there, and they
 * would never reach alerting or quarantine.  In the log phase, which every
 * request goes through, a request of a server with Airlock locations that
 * got one of these statuses before it left nginx's find-config phase (so
 * before any location's handlers, Airlock's among them, ran) is identified
 * the way a decided one is (the connection's real peer, the token headers
 * it got through); when it names a client of the policy, it is counted
 * toward that client's deny counters and logged as a deny line with
 * reason "refused"; a token that names no client, from a peer that
 * names one, is a client's of none, logged and counted under the peer
 * as a decided one is.  Unknown peers are left out: they are refused
 * everything.  A request a location answers (405 from a static location,
 * an upstream's 400) is not one of them.
 *
 * On a route that takes a body, and for a chunked body on any route, the
 * framing is read later: the body is read for the decision, in the
 * module's location, and nginx answers a bad chunk (400) or a chunked
 * body over client_max_body_size (413) itself while it reads it.  Such
 * a request, whose client and route are known but which was never
 * decided, is logged and counted the same way, and so is one whose body
 * stopped coming (408, client_body_timeout): a client that sends a body
 * slowly holds a connection and a buffer of the proxy's for the timeout,
 * and one that kept doing so would never reach alerting or quarantine
 * otherwise.  A 408 before the decision (client_header_timeout) is not
 * counted: the request was never whole enough to decide, nginx closes
 * the connection without an answer, and a client on a slow or lost
 * network ends that way as readily as an attacker; a body read's 408
 * comes after half a decision, a known client on a named route.
 *
 * The refusal is the decided one's (ngx_http_airlock_refuse()): counted,
 * one deny line, its alerts, its cookies taken out.  This handler runs
 * first in the log phase, before the access log reads the headers.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_airlock_module.h"


static ngx_uint_t ngx_http_airlock_refused_early(ngx_http_request_t *r);


/*
 * The client's token, from the headers read before nginx stopped: a
 * Bearer token in Proxy-Authorization or Authorization, or x-api-key or
 * api-key, the first of them; none when the request has none (or no
 * headers at all).
 * Which module's location the request was for is not known yet.
 */
static ngx_http_airlock_token_conf_t  ngx_http_airlock_refused_token_conf = {
    NGX_HTTP_AIRLOCK_TOKEN_ANY,
    AL_REASON_NONE,
    NULL,
    0,
    1
};


ngx_int_t
ngx_http_airlock_refused_handler(ngx_http_request_t *r)
{
    ngx_uint_t                     status, early;
    ngx_str_t                      token;
    const char                    *why, *when;
    u_char                         detail[64];
    ngx_http_airlock_ctx_t        *ctx;
    ngx_http_airlock_srv_conf_t   *ascf;
    ngx_http_airlock_main_conf_t  *amcf;

    status = r->err_status ? r->err_status : r->headers_out.status;

    early = 1;

    switch (status) {
    case NGX_HTTP_BAD_REQUEST:
    case NGX_HTTP_NOT_ALLOWED:
    case NGX_HTTP_REQUEST_ENTITY_TOO_LARGE:
    case NGX_HTTP_REQUEST_URI_TOO_LARGE:
    case NGX_HTTP_REQUEST_HEADER_TOO_LARGE:
    case NGX_HTTP_NOT_IMPLEMENTED:
        break;

    case NGX_HTTP_REQUEST_TIME_OUT:
        /* only while the body was read, see above */
        early = 0;
        break;

    default:
        return NGX_OK;
    }

    if (r != r->main) {
        return NGX_OK;
    }

    ascf = ngx_http_get_module_srv_conf(r, ngx_http_airlock_module);
    amcf = ngx_http_get_module_main_conf(r, ngx_http_airlock_module);

    if (ascf == NULL || !ascf->airlock || amcf->policy == NULL) {
        return NGX_OK;
    }

    ctx = ngx_http_airlock_get_ctx(r);

    if (ctx != NULL) {

        /*
         * Decided, or answered by a location (Airlock's or another),
         * unless nginx refused the body the module was reading for the
         * decision: a bad chunk, a chunked body over client_max_body_size
         * (on a route that takes a body, or a chunked one on any).  The
         * client and the route are known by then.
         */

        if (ctx->decided || ctx->client == NULL
            || !(ctx->reading_body || ctx->body_failed))
        {
            return NGX_OK;
        }

        when = "while the body was read";

        goto refused;
    }

    if (!early || !ngx_http_airlock_refused_early(r)) {
        return NGX_OK;
    }

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_airlock_ctx_t));
    if (ctx == NULL) {
        return NGX_OK;
    }

    ctx->request = r;

    /*
     * A client refused this early may have reset the connection by now.
     * Its accept() address is then the one to go by: realip runs in the
     * post-read and preaccess phases, and not at all in a server with
     * Airlock locations (where "nginx -t" refuses it).
     */

    if (ngx_http_airlock_real_peer(r->connection, &ctx->peer)
        == NGX_DECLINED)
    {
        (void) al_peer_from_socket(r->connection->fd,
                                   r->connection->sockaddr, &ctx->peer);
    }

    (void) ngx_http_airlock_token(r, &ngx_http_airlock_refused_token_conf,
                                  &token, &why);

    why = "";
    ctx->client = ngx_http_airlock_identify(r->connection, amcf->policy,
                                            &ctx->peer, &token, &why);

    /*
     * A token that names no client, or another client than the peer's,
     * makes the request a client's of none, never the peer's: decided, it
     * is refused client_unknown, logged and counted under its peer.  So is
     * it here when the peer alone names a client: the peer of a client of
     * the policy would otherwise send its framing attacks unseen, a
     * made-up token in each.
     */

    if (ctx->client == NULL
        && (token.len == 0
            || al_client_identify(amcf->policy, &ctx->peer, NULL, 0, &why)
               == NULL))
    {
        return NGX_OK;
    }

    ngx_http_set_ctx(r, ctx, ngx_http_airlock_module);

    when = "before the decision";

refused:

    ngx_snprintf(detail, sizeof(detail), "nginx answered %ui %s%Z",
                 status, when);

    ngx_http_airlock_refuse(r, ctx, AL_REASON_REFUSED, (char *) detail, 1);

    return NGX_OK;
}


/*
 * Whether the request ended before a location's phases: while its request
 * line or headers were read (it never entered the phase engine), or in
 * the find-config phase (client_max_body_size).
 */

static ngx_uint_t
ngx_http_airlock_refused_early(ngx_http_request_t *r)
{
    ngx_uint_t                  n;
    ngx_http_phase_handler_t   *ph;
    ngx_http_core_main_conf_t  *cmcf;

    cmcf = ngx_http_get_module_main_conf(r, ngx_http_core_module);
    ph = cmcf->phase_engine.handlers;

    for (n = 0; ph[n].checker; n++) {
        if (ph[n].checker == ngx_http_core_find_config_phase) {
            return r->phase_handler <= (ngx_int_t) n;
        }
    }

    return 0;
}
