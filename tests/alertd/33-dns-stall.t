#!/usr/bin/perl
# A sink whose name does not resolve in time (its DNS server gone quiet)
# holds up nothing but itself: its attempt ends at --attempt-timeout and
# the other sinks are served meanwhile.  libcurl resolves in a thread,
# and a transfer that timed out while resolving waited, in libcurl's
# cleanup, for that thread's getaddrinfo() to give up (resolv.conf's
# timeout times attempts, 10 s by default, up to 30 with three servers):
# the whole loop stood still that long, at every attempt to the sink,
# no other sink sent, no journal line read, no signal taken.  Transfers
# are now made with CURLOPT_QUICK_EXIT, which leaves the thread to end
# on its own.
#
# The test runs in a user, network and mount namespace of its own
# (unshare -rnm): its resolv.conf names a DNS server on the namespace's
# loopback that never answers (a UDP socket nothing reads), with a
# getaddrinfo() that gives up after 60 s, longer than any wait here.
# Nothing is timed: the Alertmanager sink's attempt must end, and an
# alert must reach the webhook after that, while its name is still
# unanswered.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(absent need_cmd);
use File::Temp qw(tempfile);
use IO::Socket::INET;
use Test::More;

unless ($ENV{AIRLOCK_ALERTD_DNS_NS}) {
    need_cmd('unshare', 'python3');

    my ($fh, $resolv) = tempfile('alertd-resolv-XXXXXX', TMPDIR => 1);
    print $fh "nameserver 127.0.0.1\noptions timeout:30 attempts:2\n";
    close $fh;

    # the namespace's loopback up (SIOCSIFFLAGS, IFF_UP), without iproute2
    my $lo = 'python3 -c "import socket, fcntl, struct; '
           . 'fcntl.ioctl(socket.socket(socket.AF_INET, socket.SOCK_DGRAM), '
           . "0x8914, struct.pack('16sh14x', b'lo', 1))\"";
    my $setup = "$lo && mount --bind \"\$0\" /etc/resolv.conf";
    system('unshare', '-rnm', 'sh', '-c', "$setup 2>/dev/null", $resolv);
    if ($? != 0) {
        unlink $resolv;
        absent('cannot make a network and mount namespace with its own '
               . 'resolv.conf (unshare -rnm)');
    }

    $ENV{AIRLOCK_ALERTD_DNS_NS} = $resolv;
    exec('unshare', '-rnm', 'sh', '-c', "$setup && exec \"\$\@\"",
         $resolv, $^X, $0) or die "exec unshare: $!";
}

# the bind mount keeps the file: it can go
unlink $ENV{AIRLOCK_ALERTD_DNS_NS};

require AlertdTest;

# a DNS server that never answers
my $dns = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 53,
                                Proto => 'udp')
    or die "cannot bind 127.0.0.1:53 in the namespace: $!";

my $t = AlertdTest->new;
my $secret = $t->secret('hook', 'dns-test-secret-0123456789abcdef');
my $r = $t->receiver(secret => $secret);
my $am = 'http://alertmanager.airlock-dns-test.example:9093';
$t->policy({ alertmanager => $am }, { webhook => $r->{url},
                                       secret => 'hook' });

$t->alertd('-v', '--attempt-timeout', '1s', '--repeat-interval', '1h',
           '--poll-interval', '1h');

my $first = $t->alert(reason => 'dns-one');
ok($t->wait_for(sub { $t->delivered($r, $first) }),
   'the webhook has the first alert');
ok($t->log_has(qr/\Q$am\E: alert \Q$first\E not delivered: .*[Rr]esolv/),
   'the Alertmanager attempt ends, its name unresolved')
    or diag($t->alertd_log);

my $next = $t->alert(reason => 'dns-two');
ok($t->wait_for(sub { $t->delivered($r, $next) }),
   'the webhook has an alert written after it, the name still unanswered');
ok($t->log_has(qr/\Q$am\E: alert \Q$first\E not delivered: .*attempt 2,/),
   'and the Alertmanager sink is tried again');

$t->done;
