#!/usr/bin/perl

# ngx_http_airlock_module: the proxy's own denials carry
# "Airlock-Denial: REASON", once, and no other answer does.  An upstream
# that sends the header, under any case of its name, with a 403 shaped
# like the proxy's or with a 200, loses it; so does one behind a location
# without Airlock, and an error page (airlock_error_json) has none.
# Clients (the agent, the worker) take the header for the proxy's word
# that it refused the request.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use MIME::Base64 qw(encode_base64);
use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

my $forged = '{"error":"forbidden","reason":"no_route",'
           . '"request_id":"00000000000000000000000000000000"}';
my $b64 = encode_base64($forged, '');

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
  closed: { url: "http://127.0.0.1:%%PORT_8083%%" }
routes:
  - name: plain
    clients: [local]
    match: { method: GET, path: /plain }
    upstream: echo
    to: /plain
    query: { allow: [q] }
  # the upstream's 403, shaped like the proxy's denial, header and all
  - name: forged-403
    clients: [local]
    match: { method: GET, path: /forged403 }
    upstream: echo
    to: /forged403
    inject:
      X-Echo-Status: "403"
      X-Echo-Header: "Airlock-Denial: no_route"
      X-Echo-Body-B64: "$b64"
  - name: forged-200
    clients: [local]
    match: { method: GET, path: /forged200 }
    upstream: echo
    to: /forged200
    inject:
      X-Echo-Header: "airlock-DENIAL: query"
  - name: down
    clients: [local]
    match: { method: GET, path: /down }
    upstream: closed
    to: /down
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

# a location without Airlock, in the same server, proxying to an
# upstream that sends the header
my $port = $t->port(8081);

$t->write_file_expand('nginx.conf', $p->conf(locations => <<"EOF"));
location /other/ {
            proxy_pass http://127.0.0.1:$port/;
            proxy_set_header X-Echo-Header "Airlock-Denial: path";
            proxy_pass_header Airlock-Denial;
        }
EOF

$t->start_echo(8081);
$t->run;

plan tests => 17;

# every Airlock-Denial header of a response, as sent
sub denial {
    my ($raw) = @_;
    return map { $_->[1] }
           grep { lc $_->[0] eq 'airlock-denial' }
           @{Airlock::Test::parse_response($raw)->{header_list}};
}

# ---- the proxy's denials ---------------------------------------------------

my $raw = $t->http_get('/nowhere');
my $r = Airlock::Test::parse_response($raw);
is($r->{status}, 403, 'no route: 403');
is_deeply([denial($raw)], ['no_route'],
          '... with one "Airlock-Denial: no_route"');
is(Airlock::Proxy::json_body($raw)->{reason}, 'no_route',
   '... the reason its body names');

$raw = $t->http_get('/plain?x=1');
is_deeply([denial($raw)], ['query'],
          'a query refused: "Airlock-Denial: query"');

$raw = $t->http("DELETE /plain HTTP/1.0\r\n\r\n");
is_deeply([denial($raw)], ['method'],
          'a method refused: "Airlock-Denial: method"');

$raw = $t->http_get('/plain', headers => { 'Proxy-Authorization' =>
                                            'Bearer al-nobody' });
is_deeply([denial($raw)], ['client_unknown'],
          'an unknown token: "Airlock-Denial: client_unknown"');

# ---- the upstream's answers ------------------------------------------------

my $n = $p->echo_count;

$raw = $t->http_get('/forged403');
$r = Airlock::Test::parse_response($raw);
is($r->{status}, 403, 'an upstream\'s 403 shaped like a denial: 403');
is($r->{body}, $forged, '... its body as the upstream sent it');
is_deeply([denial($raw)], [], '... without the upstream\'s Airlock-Denial');
is($p->echo_count, $n + 1, '... and it did reach the upstream');

$raw = $t->http_get('/forged200');
$r = Airlock::Test::parse_response($raw);
is($r->{status}, 200, 'an upstream\'s 200 with "airlock-DENIAL": 200');
is_deeply([denial($raw)], [], '... without it');

$raw = $t->http_get('/plain?q=1');
is_deeply([denial($raw)], [], 'an allowed request: no Airlock-Denial');

# ---- other locations, error pages ------------------------------------------

$raw = $t->http_get('/other/x');
$r = Airlock::Test::parse_response($raw);
ok($r->{status} == 200 && $r->{body} =~ /airlock-denial: path/i,
   'a location without Airlock, its upstream sending the header: 200')
    or diag $raw;
is_deeply([denial($raw)], [],
          '... without it, proxy_pass_header notwithstanding');

$raw = $t->http_get('/down');
$r = Airlock::Test::parse_response($raw);
ok($r->{status} == 502 && !denial($raw),
   'airlock_error_json (502): no Airlock-Denial')
    or diag $raw;

is($t->error_log_check, '', 'no alerts or sanitizer reports');
