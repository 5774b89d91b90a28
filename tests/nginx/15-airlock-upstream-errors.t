#!/usr/bin/perl

# ngx_http_airlock_module: upstream failures answer in the same JSON shape
# (airlock_error_json behind error_page), without the upstream's address.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;

# %%PORT_8082%% is a free port nobody listens on
$t->write_file_expand('policy.yaml', <<'EOF');
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
  down: { url: "http://127.0.0.1:%%PORT_8082%%" }
  named: { url: "http://echo-backend" }
routes:
  - name: keepalive
    clients: [local]
    match: { method: GET, path: /ka }
    upstream: named
    to: /ka
  - name: down
    clients: [local]
    match: { method: GET, path: /down }
    upstream: down
    to: /down
  - name: slow
    clients: [local]
    match: { method: GET, path: /slow }
    upstream: echo
    to: /slow
  - name: big
    clients: [local]
    match: { method: POST, path: /big }
    upstream: echo
    to: /big
    body: { max_bytes: 4096 }
alerts:
  deny: { threshold: 3, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf(
    http => <<'EOF',
    client_max_body_size 100;

    upstream echo-backend {
        server 127.0.0.1:%%PORT_8081%%;
        keepalive 4;
    }
EOF
    location => 'error_page 413 @airlock_error;',
    locations => <<'EOF'));
        location = /slow {
            airlock on;
            %%AIRLOCK_LOCATION%%
            proxy_read_timeout 1s;
            proxy_set_header X-Echo-Delay-Ms 3000;
            error_page 502 504 @airlock_error;
        }
EOF

$t->start_echo(8081);
$t->run;

plan tests => 14;

my ($raw, $r, $j);
my $port = $t->port(8082);

$raw = http_get('/down');
$r = parse_response($raw);
$j = json_body($raw);
is($r->{status}, 502, 'upstream down: 502');
is($r->{headers}{'content-type'}, 'application/json',
   'upstream down: JSON');
is_deeply([ sort keys %$j ], [ qw(error request_id) ],
          'upstream down: error and request_id only');
is($j->{error}, 'bad_gateway', 'upstream down: bad_gateway');
unlike($raw, qr/127\.0\.0\.1|\Q$port\E/, 'upstream down: no address');

$raw = http_get('/slow');
$r = parse_response($raw);
$j = json_body($raw);
is($r->{status}, 504, 'upstream timeout: 504');
is($j && $j->{error}, 'gateway_timeout', 'upstream timeout: gateway_timeout');

my $access = $t->read_file('airlock.log');
like($access, qr/^local down - [0-9a-f]{32} 0 502$/m,
     'the request keeps its route and id in the log');

# an upstream block named like the url's host, without a port: keepalive

my @ka = map { echo_json(http_get('/ka')) } 1 .. 3;
is($ka[0]{target}, '/ka', 'named upstream block used');
is_deeply([ map { $_->{headers}[0][1] } @ka ], [ ('echo-backend') x 3 ],
          'named upstream block: Host from the policy url');
ok($ka[0]{conn} == $ka[2]{conn} && $ka[2]{seq} == 3,
   'named upstream block: connection kept alive');

# nginx's own 413, in the same shape

$raw = http_post('/big', 'x' x 200);
$r = parse_response($raw);
is($r->{status}, 413, 'client_max_body_size: 413');
is(json_body($raw) && json_body($raw)->{error}, 'body_too_large',
   'client_max_body_size: JSON');

is($t->error_log_check, '', 'no alerts');
