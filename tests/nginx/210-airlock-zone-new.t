#!/usr/bin/perl

# ngx_http_airlock_module: the journal says when airlock_zone is made
# anew, since every quarantine of the zone before is lifted then (and
# alertd resolves their alerts).  One line of type "zone", state "new",
# by one worker of two, when nginx starts; none for "nginx -t", a
# reload that keeps the zone, or a reload that fails after making its
# new zone; one for a reload that resizes the zone, and one again when
# nginx is restarted.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Time::HiRes qw(time sleep);
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

my $tok = 'token-c-0123456789';
my $sha = $p->token_sha256($tok);

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  c: { token_sha256: "$sha" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: ok
    clients: [c]
    match: { method: GET, path: /ok }
    upstream: echo
    to: /ok
alerts:
  deny: { threshold: 3, window: 30s }
  quarantine: { threshold: 4, window: 30s, for: 1h }
EOF

sub write_conf {
    my ($size, $more) = @_;
    $more //= '';
    $t->write_file_expand('nginx.conf', $p->conf(http => <<"EOF"));
    airlock_zone airlock $size;
    airlock_journal %%TESTDIR%%/journal.log;
    $more
EOF
    $t->write_file('nginx.conf', $t->read_file('nginx.conf')
                   =~ s/worker_processes 1;/worker_processes 2;/r);
}

sub zone_lines {
    return grep { ($_->{type} // '') eq 'zone' }
           Airlock::Test::json_lines($t->read_file('journal.log'));
}

sub reason {
    my $h = { 'Proxy-Authorization' => "Bearer $tok" };
    return deny_json(http_get($_[0], headers => $h))->[1] // '';
}

write_conf('1m');

$t->start_echo(8081);
$t->run;

plan tests => 14;

my @z = zone_lines();
is(scalar @z, 1, 'start: one zone line from two workers');
is($z[0] && $z[0]{state}, 'new', '... state new');
is($z[0] && $z[0]{zone}, 'airlock', '... naming the zone');
like($z[0] && $z[0]{time}, qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/,
     '... at a UTC time');

reason('/nope') for 1 .. 4;
is(reason('/ok'), 'quarantined', 'the client is quarantined');

my ($st) = $t->reload_test;
is($st, 0, 'nginx -t passes');
is(scalar zone_lines(), 1, 'nginx -t writes no zone line');

$t->reload;
is(reason('/ok'), 'quarantined', 'a reload that keeps the zone: still');
is(scalar zone_lines(), 1, '... and no zone line');

# a reload that fails once its zone is made: the listen is taken

write_conf('2m', 'server { listen 127.0.0.1:%%PORT_8081%%; }');
my ($ok) = $t->reload(allow_fail => 1);
ok(!$ok, 'a reload that cannot listen fails');

# nginx tries the bind five times before the cycle fails
my $deadline = time + 30;
sleep 0.1 until ($t->read_file('error.log') // '') =~ /still could not bind/
                || time > $deadline;
is(scalar zone_lines(), 1, '... and writes no zone line');

# a reload that resizes the zone, then a restart: a new zone each

write_conf('2m');
$t->reload;
is(scalar zone_lines(), 2, 'a reload to another size writes one');

$t->stop;
$t->start_echo(8081);
$t->run;
is(scalar zone_lines(), 3, 'a restart writes one');

is($t->error_log_check(qr/bind\(\)/), '', 'no alerts but the bind');

$t->stop;
