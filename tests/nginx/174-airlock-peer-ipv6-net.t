#!/usr/bin/perl

# ngx_http_airlock_module: how an unknown IPv6 peer is counted.  A host is
# given a whole /64 and may send from any address in it, so an unknown
# peer is counted under its /64: denials from three addresses of one /64
# raise the deny alert three from one address would, and the alert and
# the status name the /64.  Another /64 is another count.  An IPv4 peer
# stays its address, on an IPv4 listener and as ::ffff:a.b.c.d on a
# dual-stack one alike: one count.
#
# The addresses are added to the loopback of a network namespace of the
# test's own (unshare -n; -rn when not root); without one it is
# skipped, and fails under CI.

use strict;
use warnings;

BEGIN {
    my @ns = $> == 0 ? qw(unshare -n) : qw(unshare -rn);
    my $setup = 'ip link set lo up'
                . ' && ip -6 addr add fd00:64:1::a/64 dev lo nodad'
                . ' && ip -6 addr add fd00:64:1::b/64 dev lo nodad'
                . ' && ip -6 addr add fd00:64:1::c/64 dev lo nodad'
                . ' && ip -6 addr add fd00:64:2::a/64 dev lo nodad';

    if (!$ENV{AIRLOCK_TEST_NETNS}
        && system("@ns true >/dev/null 2>&1") == 0)
    {
        $ENV{AIRLOCK_TEST_NETNS} = 1;
        exec @ns, 'sh', '-c', "$setup; exec \"\$@\"", 'sh', $^X, $0, @ARGV;
    }
}

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Socket::IP;
use JSON::PP;
use Test::More;
use Airlock::Test;
use Airlock::Proxy;
use Airlock::Prereq qw(absent);

my $probe = IO::Socket::IP->new(LocalHost => 'fd00:64:1::b', LocalPort => 0,
                                Proto => 'tcp');
absent('no network namespace with fd00:64:1::/64 (unshare, ip)')
    unless $probe;
close $probe;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->echo_policy(token => 'token-a-FAKE-0123456789', threshold => 3);

$t->write_file_expand('nginx.conf', $p->conf(
    listen => "listen [::]:%%PORT_8083%% ipv6only=off;",
    http => $p->zone_status_http('1m')));

$t->start_echo(8081);
$t->run;

plan tests => 11;

my $json = JSON::PP->new->utf8;

sub get_from {
    my ($from, $to, $port) = @_;
    my $s = IO::Socket::IP->new(LocalHost => $from, LocalPort => 0,
                                PeerHost => $to, PeerPort => $t->port($port),
                                Proto => 'tcp', Timeout => 5)
        or return undef;
    return deny_json(http_get('/nope', socket => $s))->[1] // '';
}

sub alerts {
    my $text = $t->read_file('journal.log') // '';
    return grep { $_->{type} eq 'alert' }
           map { $json->decode($_) } grep { length } split /\n/, $text;
}

sub counter {
    my ($peer) = @_;
    my $s = json_body(http_get('/status', port => 8082));
    my @c = grep { !defined $_->{client} && $_->{peer} eq $peer }
            @{$s->{counters}};
    return @c ? $c[0]{count} : 0;
}

is(get_from('fd00:64:1::a', '::1', 8083), 'client_unknown',
   'an unknown IPv6 peer is refused');
get_from('fd00:64:1::b', '::1', 8083);
is(scalar alerts(), 0, 'two denials: no alert');

get_from('fd00:64:1::c', '::1', 8083);
my @al = alerts();
is(scalar @al, 1, 'a third from another address of the /64: the alert');
is($al[0] && $al[0]{peer}, 'fd00:64:1::/64', 'the alert names the /64');
is($al[0] && $al[0]{client}, undef, 'of no client');
is(counter('fd00:64:1::/64'), 3, 'status: the /64 counted 3');

get_from('fd00:64:2::a', '::1', 8083);
is(counter('fd00:64:2::/64'), 1, 'another /64: a count of its own');
is(scalar alerts(), 1, 'and no alert');

get_from('127.0.0.1', '127.0.0.1', 8080);
get_from('127.0.0.1', '127.0.0.1', 8083);
is(counter('127.0.0.1'), 2,
   'IPv4 on the IPv4 listener and the dual-stack one: one address');
get_from('127.0.0.1', '127.0.0.1', 8083);
is(scalar(grep { ($_->{peer} // '') eq '127.0.0.1' } alerts()), 1,
   'IPv4: the third denial alerts');

is($t->error_log_check, '', 'no alerts');
