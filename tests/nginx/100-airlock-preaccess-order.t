#!/usr/bin/perl

# Both modules decide in the preaccess phase, whatever modules nginx loads
# after them.  nginx ends a phase at the first handler that returns NGX_OK
# and runs a phase's handlers in the reverse order of their modules'
# postconfiguration, so a module loaded after Airlock's (another
# load_module, /etc/nginx/modules-enabled/ sorts "mod-http-airlock" early)
# whose preaccess handler returns NGX_OK ran first and ended the phase
# before the decision: a request no route allows went on towards the
# proxy with the client's own headers, and a request an error_page led out
# of an Airlock location kept the route's credential.  The fixture module
# tests/nginx/fixture/ngx_http_fixture_preaccess_ok_module.c is such a
# module ("fixture_preaccess_ok on" where it ends the phase), loaded here
# after Airlock's.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Test;
use Airlock::Proxy;
use Airlock::LLM;
use Airlock::Prereq ();

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

my $fixture = "$t->{build}/tests/nginx/"
              . "ngx_http_fixture_preaccess_ok_module.so";

Airlock::Prereq::absent("fixture module not built: $fixture (make "
                        . "test-modules)")
    unless -f $fixture;

# the fixture's load_module right after Airlock's
sub load_fixture {
    my ($tt) = @_;
    my $conf = $tt->read_file('nginx.conf');

    $conf =~ s{^(load_module [^\n]*ngx_http_airlock_module\.so;\n)}
              {${1}load_module $fixture;\n}m
        or die "no load_module line in nginx.conf";

    $tt->write_file('nginx.conf', $conf);
}

$p->keygen;
my $tok = 'preaccess-order-secret-0123456789';
my $sealed = $p->seal($tok);

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  tok: { sealed: "$sealed" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
  dead: { url: "http://127.0.0.1:%%PORT_8089%%" }
routes:
  - name: ok
    clients: [local]
    match: { method: GET, path: /ok }
    upstream: echo
    to: /ok
    inject: { Authorization: "Bearer {tok}" }
  - name: down
    clients: [local]
    match: { method: GET, path: /down }
    upstream: dead
    to: /down
    inject: { Authorization: "Bearer {tok}" }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

my $side = 'http://127.0.0.1:%%PORT_8083%%';

$t->write_file_expand('nginx.conf', $p->conf(
    location => 'fixture_preaccess_ok on;',
    locations => <<"EOF"));
        location = /down {
            airlock on;
            %%AIRLOCK_LOCATION%%
            proxy_connect_timeout 2s;
            error_page 502 504 = \@status;
        }

        location \@status {
            fixture_preaccess_ok on;
            proxy_pass $side;
        }
EOF

load_fixture($t);

$t->start_echo(8081);
$t->start_echo(8083);
$t->run;

plan tests => 15;

sub get {
    my ($uri, $h) = @_;
    return $t->http("GET $uri HTTP/1.1\r\nHost: localhost\r\n" . ($h // '')
                    . "Connection: close\r\n\r\n");
}

sub auth_of {
    my ($req) = @_;
    return join ', ', map { $_->[1] }
                      grep { lc $_->[0] eq 'authorization' }
                      @{$req->{headers}};
}

my $raw = get('/nope', "Cookie: c=client\r\n");
like($raw, qr{^HTTP/1\.1 403}, 'no route: 403')
    or diag($raw);
like($raw, qr{^Airlock-Denial: no_route\r$}mi,
     'no route: refused by Airlock');
ok(!grep({ $_->{target} =~ m{^/nope} } $t->echo_requests(8081)),
   'no route: no upstream request');
is(join(' ', map { $_->{reason} } $p->deny_log), 'no_route',
   'no route: the denial is logged');

$raw = get('/ok', "Authorization: Bearer client-own\r\nCookie: c=client\r\n");
like($raw, qr{^HTTP/1\.1 200}, 'a route: 200');

my @r = grep { $_->{target} eq '/ok' } $t->echo_requests(8081);
is(scalar @r, 1, 'a route: one upstream request');
is(@r ? auth_of($r[0]) : '', "Bearer $tok",
   'a route: the upstream gets the route\'s credential alone');
ok(@r && !grep({ lc $_->[0] eq 'cookie' } @{$r[0]{headers}}),
   'a route: client headers outside the allowlist are removed');

# /down is decided (no fixture there) and its error_page leads to a
# location where the fixture ends the phase: the credential goes first

$raw = get('/down');
like($raw, qr{^HTTP/1\.1 200}, 'error_page: the status service answers');

@r = ();
for (1 .. 100) {
    @r = grep { $_->{target} eq '/down' } $t->echo_requests(8083);
    last if @r;
    sleep 0.05;
}
ok(@r && index(auth_of($r[0]), $tok) < 0,
   'error_page out of Airlock: no credential')
    or diag(@r ? 'Authorization: ' . auth_of($r[0]) : 'no request');

like($t->read_file('error.log'), qr/fixture_preaccess_ok: preaccess ends/,
     'the fixture module ran');
is($t->error_log_check, '', 'no alerts');

# the LLM gateway

my $t2 = Airlock::Test->new;
my $l = Airlock::LLM->new($t2);

$l->setup(http => 'fixture_preaccess_ok on;');
load_fixture($t2);
$t2->run;

my $res = $l->chat(token => 'al-not-a-client-token');
ok($res->{status} == 401
   && $res->{raw} =~ /^Airlock-Denial: client_unknown\r$/mi,
   'LLM, unknown client: refused by the gateway')
    or diag($res->{raw});
ok(!$l->provider_requests, 'LLM, unknown client: no provider request');

$res = $l->chat(token => $l->token('agent'));
my $req = $l->last_provider_request;
ok($res->{status} == 200 && $req
   && ($req->{headers}{authorization} // '') eq
      "Bearer $Airlock::LLM::OPENAI_KEY",
   'LLM, a client: the provider gets the provider key')
    or diag($res->{raw});
