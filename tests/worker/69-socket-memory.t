#!/usr/bin/perl

# Memory a bwrap script pins in socket queues inside its own network
# namespace counts against its memory limit.  On cgroup v1 the kernel
# charges TCP and UDP buffers to a memory cgroup only once its
# memory.kmem.tcp.limit_in_bytes is set, and netlink queues (NETLINK_ROUTE
# replies never read, NETLINK_USERSOCK datagrams) to no cgroup, v1 or v2:
# with memory_mb 64 a script queued over 600 MiB on loopback TCP and over
# 900 MiB on netlink sockets, taken from the host's memory.  Now its TCP
# queues end at twice its limit (the kmem.tcp counter is a second one)
# or the job is killed as oom, and no netlink socket opens.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => 'bwrap');
$w->start_proxy;
$w->start_redis;
$w->start_worker;

plan tests => 3;

# 60 connections, each sending into 8 MiB buffers until it would block;
# prints the MiB queued
my $r = $w->run_job(job_id => 'tcpq', limits => { memory_mb => 64 },
                    script => <<'PY');
import socket
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(100)
keep, n = [], 0
try:
    for i in range(60):
        c = socket.socket()
        c.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
        c.connect(l.getsockname())
        a, _ = l.accept()
        a.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        c.setblocking(False)
        try:
            while True:
                n += c.send(b"t" * 65536)
        except BlockingIOError:
            pass
        keep.append((c, a))
except OSError:
    pass
print(n >> 20)
PY
ok($r && ($r->{status} eq 'oom'
          || ($r->{status} eq 'ok' && $r->{stdout} <= 2 * 64)),
   'loopback TCP queues bounded by the memory limit')
    or diag explain $r;

for my $proto (0, 2) {
    $r = $w->run_job(job_id => "nl$proto", script => <<PY);
import socket
try:
    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, $proto)
    print("opened")
except OSError as e:
    print(e.errno)
PY
    is($r && $r->{stdout}, "97\n",
       "no netlink socket (protocol $proto): its queues are no cgroup's")
        or diag explain $r;
}
