
/*
 * Airlock: the real peer of a client connection, for client identity.
 *
 * Identity never comes from c->sockaddr or c->addr_text: the realip module
 * rewrites both from a header the client sends (X-Forwarded-For, PROXY
 * protocol), for the rest of the request.  The kernel's view is read
 * instead: on a unix listener the peer's credentials (SO_PEERCRED on the
 * socket), on any other the address getpeername() gives for the socket.
 * The listening socket's family says which; realip never changes it.
 *
 * The kernel's answer cannot change while the connection lives, so it is
 * asked once per connection, by its first request, and kept in the
 * connection's pool: a system call per request cost about 5% of the
 * worker's time per small request.  The pool cleanup that holds the copy
 * is how it is found again.
 *
 * The client a request is identified as depends only on the policy, that
 * peer and the token (al_client_identify()), so the connection keeps its
 * last answer too: a request with the same token, compared in constant
 * time, under the same policy gets the same client without hashing the
 * token again (a SHA-256 and a compare per client token: about 7% of a
 * small LLM call).  Only a client found is kept; the cleanup wipes the
 * kept token when the connection closes.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <sodium.h>

#include "ngx_http_airlock_module.h"


/* longer tokens are hashed on every request */
#define NGX_HTTP_AIRLOCK_TOKEN_KEEP  128

typedef struct {
    al_peer_t                peer;
    const al_policy_t       *policy;        /* NULL: no client kept */
    const al_client_t       *client;
    size_t                   token_len;
    u_char                   token[NGX_HTTP_AIRLOCK_TOKEN_KEEP];
} ngx_http_airlock_conn_t;


static ngx_http_airlock_conn_t *ngx_http_airlock_conn(ngx_connection_t *c);
static ngx_int_t ngx_http_airlock_read_peer(ngx_connection_t *c,
    al_peer_t *peer);
static void ngx_http_airlock_peer_cleanup(void *data);


ngx_int_t
ngx_http_airlock_real_peer(ngx_connection_t *c, al_peer_t *peer)
{
    ngx_int_t                 rc;
    ngx_pool_cleanup_t       *cln;
    ngx_http_airlock_conn_t  *kept;

    kept = ngx_http_airlock_conn(c);

    if (kept != NULL) {
        ngx_memcpy(peer, &kept->peer, sizeof(al_peer_t));
        return NGX_OK;
    }

    rc = ngx_http_airlock_read_peer(c, peer);

    if (rc != NGX_OK || c->pool == NULL) {
        return rc;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, c->log, 0,
                   "airlock: real peer of connection %uA read", c->number);

    /* without memory the next request asks the kernel again */

    cln = ngx_pool_cleanup_add(c->pool, sizeof(ngx_http_airlock_conn_t));
    if (cln == NULL) {
        return NGX_OK;
    }

    kept = cln->data;
    ngx_memcpy(&kept->peer, peer, sizeof(al_peer_t));
    kept->policy = NULL;
    kept->client = NULL;
    kept->token_len = 0;
    cln->handler = ngx_http_airlock_peer_cleanup;

    return NGX_OK;
}


/*
 * al_client_identify() for a request whose peer came from
 * ngx_http_airlock_real_peer(), with the connection's last answer kept.
 */

const al_client_t *
ngx_http_airlock_identify(ngx_connection_t *c, const al_policy_t *p,
    const al_peer_t *peer, ngx_str_t *token, const char **why)
{
    const al_client_t        *client;
    ngx_http_airlock_conn_t  *kept;

    kept = ngx_http_airlock_conn(c);

    if (kept != NULL
        && ngx_memcmp(&kept->peer, peer, sizeof(al_peer_t)) != 0)
    {
        kept = NULL;
    }

    if (kept != NULL
        && kept->policy == p
        && kept->token_len == token->len
        && (token->len == 0
            || ngx_http_airlock_same_secret(kept->token, token->data,
                                            token->len)))
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, c->log, 0,
                       "airlock: client of connection %uA kept", c->number);
        return kept->client;
    }

    client = al_client_identify(p, peer,
                                token->len ? (char *) token->data : NULL,
                                token->len, why);

    if (kept != NULL && client != NULL
        && token->len <= NGX_HTTP_AIRLOCK_TOKEN_KEEP)
    {
        kept->policy = p;
        kept->client = client;
        kept->token_len = token->len;

        if (token->len) {
            /* no token: its data may be NULL, which memcpy() may not get */
            ngx_memcpy(kept->token, token->data, token->len);
        }
    }

    return client;
}


static ngx_http_airlock_conn_t *
ngx_http_airlock_conn(ngx_connection_t *c)
{
    ngx_pool_cleanup_t  *cln;

    if (c->pool == NULL) {
        return NULL;
    }

    for (cln = c->pool->cleanup; cln; cln = cln->next) {
        if (cln->handler == ngx_http_airlock_peer_cleanup) {
            return cln->data;
        }
    }

    return NULL;
}


static ngx_int_t
ngx_http_airlock_read_peer(ngx_connection_t *c, al_peer_t *peer)
{
    socklen_t         len;
    ngx_err_t         err;
    ngx_sockaddr_t    sa;
    struct sockaddr  *lsa;

    lsa = (c->listening != NULL) ? c->listening->sockaddr : NULL;

    if (lsa != NULL && lsa->sa_family == AF_UNIX) {
        if (al_peer_from_socket(c->fd, lsa, peer) != 0) {
            err = ngx_socket_errno;
            ngx_http_airlock_log_error(NGX_LOG_ERR, c->log, err,
                                       "airlock: getsockopt(SO_PEERCRED) "
                                       "failed");
            return NGX_ERROR;
        }

        return NGX_OK;
    }

    len = sizeof(ngx_sockaddr_t);

    if (getpeername(c->fd, &sa.sockaddr, &len) == -1) {
        /* no peer: the client can be known by its token only */
        ngx_memzero(peer, sizeof(al_peer_t));

        if (ngx_socket_errno == NGX_ENOTCONN) {
            /* the peer has already reset the connection */
            return NGX_DECLINED;
        }

        err = ngx_socket_errno;
        ngx_http_airlock_log_error(NGX_LOG_ERR, c->log, err,
                                   "airlock: getpeername() failed");
        return NGX_ERROR;
    }

    (void) al_peer_from_socket(c->fd, &sa.sockaddr, peer);

    return NGX_OK;
}


static void
ngx_http_airlock_peer_cleanup(void *data)
{
    ngx_http_airlock_conn_t  *kept = data;

    sodium_memzero(kept->token, sizeof(kept->token));
}


/* the peer as text: "uid:1000", "10.0.0.7", "fd00::7", or "" */

u_char *
ngx_http_airlock_peer_addr_text(al_peer_t *peer, u_char *p, u_char *last)
{
    u_char  *a;
    u_char   text[NGX_INET6_ADDRSTRLEN];
    size_t   len;

    if (peer->unix_peer) {
        return ngx_slprintf(p, last, "uid:%uD", (uint32_t) peer->uid);
    }

    if (!peer->has_addr) {
        return p;
    }

    a = peer->addr;

    if (ngx_memcmp(a, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12) == 0) {
        return ngx_slprintf(p, last, "%ud.%ud.%ud.%ud",
                            a[12], a[13], a[14], a[15]);
    }

#if (NGX_HAVE_INET6)
    len = ngx_inet6_ntop(a, text, NGX_INET6_ADDRSTRLEN);
#else
    len = 0;
#endif

    len = ngx_min(len, (size_t) (last - p));

    return ngx_cpymem(p, text, len);
}
