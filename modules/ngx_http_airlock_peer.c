
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
 * is how it is found again; its handler does nothing.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_airlock_module.h"


static ngx_int_t ngx_http_airlock_read_peer(ngx_connection_t *c,
    al_peer_t *peer);
static void ngx_http_airlock_peer_cleanup(void *data);


ngx_int_t
ngx_http_airlock_real_peer(ngx_connection_t *c, al_peer_t *peer)
{
    ngx_int_t            rc;
    ngx_pool_cleanup_t  *cln;

    if (c->pool == NULL) {
        return ngx_http_airlock_read_peer(c, peer);
    }

    for (cln = c->pool->cleanup; cln; cln = cln->next) {
        if (cln->handler == ngx_http_airlock_peer_cleanup) {
            ngx_memcpy(peer, cln->data, sizeof(al_peer_t));
            return NGX_OK;
        }
    }

    rc = ngx_http_airlock_read_peer(c, peer);

    if (rc != NGX_OK) {
        return rc;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, c->log, 0,
                   "airlock: real peer of connection %uA read", c->number);

    /* without memory the next request asks the kernel again */

    cln = ngx_pool_cleanup_add(c->pool, sizeof(al_peer_t));
    if (cln == NULL) {
        return NGX_OK;
    }

    ngx_memcpy(cln->data, peer, sizeof(al_peer_t));
    cln->handler = ngx_http_airlock_peer_cleanup;

    return NGX_OK;
}


static ngx_int_t
ngx_http_airlock_read_peer(ngx_connection_t *c, al_peer_t *peer)
{
    socklen_t          len;
    ngx_sockaddr_t     sa;
    struct sockaddr   *lsa;

    lsa = (c->listening != NULL) ? c->listening->sockaddr : NULL;

    if (lsa != NULL && lsa->sa_family == AF_UNIX) {
        if (al_peer_from_socket(c->fd, lsa, peer) != 0) {
            ngx_log_error(NGX_LOG_ERR, c->log, ngx_socket_errno,
                          "airlock: getsockopt(SO_PEERCRED) failed");
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

        ngx_log_error(NGX_LOG_ERR, c->log, ngx_socket_errno,
                      "airlock: getpeername() failed");
        return NGX_ERROR;
    }

    (void) al_peer_from_socket(c->fd, &sa.sockaddr, peer);

    return NGX_OK;
}


static void
ngx_http_airlock_peer_cleanup(void *data)
{
    /* the key of the connection's copy of its peer: nothing to release */
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
