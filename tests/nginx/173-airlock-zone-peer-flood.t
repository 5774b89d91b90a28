#!/usr/bin/perl

# ngx_http_airlock_module: a full zone and unknown peers.  Anyone who
# reaches the port can be denied from as many addresses as it has (a
# whole IPv6 network, here 127.0.0.0/8), each a count of its own.  A
# flood of them fills a small zone, but never pushes out a client's live
# counts: its next denials still lead to its quarantine.  Peers push out
# peers.  The quarantine, in shared memory, outlives a killed worker.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Socket::INET;
use JSON::PP;
use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

my $tok = 'token-a-FAKE-0123456789';

# client a on GET /ok; quarantined at 3 denials in a minute, for one
$p->echo_policy(token => $tok, threshold => 100,
                quarantine => 'threshold: 3, window: 60s, for: 60s');

# 8 pages: the smallest zone nginx accepts
$t->write_file_expand('nginx.conf',
                      $p->conf(http => $p->zone_status_http('32k')));

$t->start_echo(8081);
$t->run;

# a source address of the loopback network other than 127.0.0.1
my $from = IO::Socket::INET->new(LocalAddr => '127.0.1.2',
                                 PeerAddr => '127.0.0.1',
                                 PeerPort => $t->port(8080),
                                 Proto => 'tcp', Timeout => 5);
plan(skip_all => "no 127.0.1.2 to send from: $!") unless $from;
close $from;

plan tests => 10;

my $json = JSON::PP->new->utf8;

sub a_get {
    my ($path) = @_;
    return http_get($path, headers => { 'Proxy-Authorization'
                                        => "Bearer $tok" });
}

sub peer_get {
    my ($addr) = @_;
    my $s = IO::Socket::INET->new(LocalAddr => $addr,
                                  PeerAddr => '127.0.0.1',
                                  PeerPort => $t->port(8080),
                                  Proto => 'tcp', Timeout => 5)
        or return undef;
    return http_get('/nope', socket => $s);
}

sub quarantines {
    my $text = $t->read_file('journal.log') // '';
    return grep { $_->{type} eq 'alert' && $_->{kind} eq 'quarantine' }
           map { $json->decode($_) } grep { length } split /\n/, $text;
}

is(deny_json(a_get('/nope/1'))->[1], 'no_route', 'a: a first denial');
is(deny_json(a_get('/nope/2'))->[1], 'no_route', 'a: a second');

my $n = 400;
my $answered = 0;

for my $i (0 .. $n - 1) {
    my $addr = sprintf '127.0.%d.%d', 1 + int($i / 200), 1 + $i % 200;
    my $r = deny_json(peer_get($addr));
    $answered++ if $r->[0] == 403 && ($r->[1] // '') eq 'client_unknown';
}

is($answered, $n, 'every unknown peer refused');

my $s = json_body(http_get('/status', port => 8082));
my @peers = grep { !defined $_->{client} } @{$s->{counters}};
cmp_ok(scalar @peers, '<', $n, 'the zone filled up with peers');

is(deny_json(a_get('/nope/3'))->[1], 'no_route', 'a: a third denial');
is(scalar(quarantines()), 1, 'a: quarantined, its count kept');
is(deny_json(a_get('/ok'))->[1], 'quarantined', 'a: refused while in it');

ok(scalar $t->kill_workers, 'the workers killed, the master starts others');
is(deny_json(a_get('/ok'))->[1], 'quarantined',
   'a: still quarantined by the new worker');

is($t->error_log_check(qr/exited on signal 9/), '',
   'no other alerts: peers made room for peers');
