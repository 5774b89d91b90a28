#!/usr/bin/perl

# ngx_http_airlock_module: the zone across reloads.  nginx hands the zone
# of the same name and size to the new workers: counts and quarantines
# carry on, also when the policy changes the thresholds and the window,
# which are read at request time.  A quarantine outlives a policy that no
# longer has alerts.quarantine.  A zone of another size is a new zone.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

my @who = qw(a c d e);
my %tok = map { $_ => "token-$_-0123456789" } @who;
my %sha = map { $_ => $p->token_sha256($tok{$_}) } @who;

sub policy {
    my ($alerts) = @_;
    my $clients = join '', map { "  $_: { token_sha256: \"$sha{$_}\" }\n" }
                           @who;
    return <<"EOF";
version: 1
clients:
$clients
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: ok
    clients: [@{[ join ', ', @who ]}]
    match: { method: GET, path: /ok }
    upstream: echo
    to: /ok
alerts:
$alerts
EOF
}

my $v1 = policy(<<'EOF');
  deny: { threshold: 3, window: 30s }
  quarantine: { threshold: 6, window: 30s, for: 30s }
EOF

my $v2 = policy(<<'EOF');
  deny: { threshold: 2, window: 20s }
  quarantine: { threshold: 6, window: 30s, for: 30s }
EOF

my $v3 = policy(<<'EOF');
  deny: { threshold: 2, window: 20s }
EOF

sub conf {
    my ($size) = @_;
    return $p->conf(http => $p->zone_status_http($size));
}

$t->write_file_expand('policy.yaml', $v1);
$t->write_file_expand('nginx.conf', conf('1m'));

$t->start_echo(8081);
$t->run;

plan tests => 16;

my $json = JSON::PP->new->utf8;

sub get {
    my ($who, $path) = @_;
    my $h = { 'Proxy-Authorization' => "Bearer $tok{$who}" };
    return http_get($path, headers => $h);
}

sub alerts {
    my ($who, $kind) = @_;
    my $text = $t->read_file('journal.log') // '';
    return grep { $_->{type} eq 'alert' && $_->{client} eq $who
                  && $_->{kind} eq $kind }
           map { $json->decode($_) } grep { length } split /\n/, $text;
}

sub reason { deny_json($_[0])->[1] }
sub status { parse_response($_[0])->{status} }

get('a', '/nope') for 1 .. 2;
get('c', '/nope') for 1 .. 6;
get('d', '/nope');

is(reason(get('c', '/ok')), 'quarantined', 'c quarantined before reload');

$t->reload;

is(reason(get('c', '/ok')), 'quarantined', 'reload: the quarantine stays');

get('a', '/nope');
my @al = alerts('a', 'deny_threshold');
is(scalar @al, 1, 'reload: the count went on (2 + 1 reaches 3)');
is($al[0] && $al[0]{count}, 3, 'reload: count 3');

# a new policy: lower threshold and another window, applied to the counts

$t->write_file_expand('policy.yaml', $v2);
$t->reload;

get('d', '/nope');
@al = alerts('d', 'deny_threshold');
is(scalar @al, 1, 'new threshold 2: 1 + 1 denials alert');
is($al[0] && $al[0]{window}, 20, 'the new window');
is(scalar alerts('c', 'quarantine'), 1, 'c: one quarantine alert so far');
is(reason(get('c', '/ok')), 'quarantined', 'new policy: c still quarantined');

my $s = json_body(http_get('/status', port => 8082));
my ($ca) = grep { ($_->{client} // '') eq 'a'
                  && ($_->{reason} // '') eq 'no_route' }
           @{$s->{counters}};
is($ca && $ca->{count}, 3, 'status after reloads: a counted 3');

# without alerts.quarantine: no new quarantines, the running one runs out

$t->write_file_expand('policy.yaml', $v3);
$t->reload;

is(reason(get('c', '/ok')), 'quarantined', 'no quarantine policy: c still');
get('e', '/nope') for 1 .. 7;
is(status(get('e', '/ok')), 200, 'no quarantine policy: e not quarantined');
is(scalar alerts('e', 'quarantine'), 0, 'no quarantine alert for e');
is(scalar alerts('e', 'deny_threshold'), 1, 'e: one deny alert');

# a zone of another size is another zone

$t->write_file_expand('nginx.conf', conf('2m'));
$t->reload;

is(status(get('c', '/ok')), 200, 'new zone size: counts start afresh');
$s = json_body(http_get('/status', port => 8082));
is($s->{zone}{size}, 2 * 1024 * 1024, 'status: the new zone');

is($t->error_log_check, '', 'no alerts');
