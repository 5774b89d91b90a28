/*
 * al_peer_from_socket(): unix-socket credentials, IPv4 mapped into the
 * 16-byte form, IPv6 as it is, other families empty.
 */

#include <arpa/inet.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "airlock.h"
#include "tap.h"


int
main(void)
{
    int                  sv[2];
    al_peer_t            peer;
    struct sockaddr_un   sun;
    struct sockaddr_in   sin;
    struct sockaddr_in6  sin6;
    static const uint8_t mapped[16] = {
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 2, 3
    };

    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0) {
        tap_ok(al_peer_from_socket(sv[0], (struct sockaddr *) &sun, &peer)
               == 0 && peer.unix_peer && !peer.has_addr
               && peer.uid == getuid() && peer.gid == getgid(),
               "unix peer: uid and gid from SO_PEERCRED");
        close(sv[0]);
        close(sv[1]);

    } else {
        tap_ok(0, "socketpair");
    }

    tap_ok(al_peer_from_socket(-1, (struct sockaddr *) &sun, &peer) == -1
           && !peer.unix_peer, "unix peer: a bad socket is an error");

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    inet_pton(AF_INET, "10.1.2.3", &sin.sin_addr);

    tap_ok(al_peer_from_socket(-1, (struct sockaddr *) &sin, &peer) == 0
           && peer.has_addr && !peer.unix_peer
           && memcmp(peer.addr, mapped, 16) == 0,
           "IPv4 peer: ::ffff:10.1.2.3");

    memset(&sin6, 0, sizeof(sin6));
    sin6.sin6_family = AF_INET6;
    inet_pton(AF_INET6, "fd00::7", &sin6.sin6_addr);

    tap_ok(al_peer_from_socket(-1, (struct sockaddr *) &sin6, &peer) == 0
           && peer.has_addr
           && memcmp(peer.addr, sin6.sin6_addr.s6_addr, 16) == 0,
           "IPv6 peer: as it is");

    tap_ok(al_peer_from_socket(-1, NULL, &peer) == 0 && !peer.has_addr
           && !peer.unix_peer, "no address: an empty peer");

    return tap_done();
}
