/*
 * The transport half of client identity: what an accepted connection says
 * about its peer, in the form al_client_identify() takes.  Shared by the
 * nginx modules (named routes and the LLM gateway) so that both read a
 * peer the same way.
 */

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "airlock.h"


int
al_peer_from_socket(int fd, const struct sockaddr *sa, al_peer_t *peer)
{
    const struct sockaddr_in   *sin;
    const struct sockaddr_in6  *sin6;
#ifdef SO_PEERCRED
    struct ucred                cred;
    socklen_t                   len;
#endif

    memset(peer, 0, sizeof(*peer));

    if (sa == NULL) {
        return 0;
    }

    switch (sa->sa_family) {

#ifdef SO_PEERCRED
    case AF_UNIX:
        len = sizeof(cred);

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1) {
            return -1;
        }

        peer->unix_peer = 1;
        peer->uid = cred.uid;
        peer->gid = cred.gid;
        break;
#endif

    case AF_INET6:
        sin6 = (const struct sockaddr_in6 *) (const void *) sa;
        memcpy(peer->addr, sin6->sin6_addr.s6_addr, 16);
        peer->has_addr = 1;
        break;

    case AF_INET:
        sin = (const struct sockaddr_in *) (const void *) sa;
        peer->addr[10] = 0xff;
        peer->addr[11] = 0xff;
        memcpy(&peer->addr[12], &sin->sin_addr.s_addr, 4);
        peer->has_addr = 1;
        break;

    default:
        break;
    }

    return 0;
}
