#!/usr/bin/perl

# ngx_http_airlock_module: a client header spelled with '_' for '-' never
# reaches the upstream, even where nginx keeps such names
# ("underscores_in_headers on; ignore_invalid_headers off").  CGI, WSGI,
# PHP and Rack read X_Api_Key as HTTP_X_API_KEY, the name of X-Api-Key,
# so a client must not pass a credential, a Host override or a method
# override to the upstream under the other spelling; the gate keeps only
# the names of its allowlist, with '-', and the route's injected header
# alone reaches the upstream.  (proxy_set_header with such names is
# tests/nginx/102-airlock-forward-checks.t's.)

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
my $sealed = $p->seal('underscore-route-secret');

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  tok: { sealed: "$sealed" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: ok
    clients: [local]
    match: { method: GET, path: /ok }
    upstream: echo
    to: /ok
    inject: { X-Service-Token: "{tok}" }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf(
    server => 'underscores_in_headers on; ignore_invalid_headers off;'));

$t->start_echo(8081);
$t->run;

plan tests => 3;

my @sent = (
    'X_Service_Token: client', 'X_Api_Key: client', 'Api_Key: client',
    'Authorization_: client', 'X_Forwarded_Host: evil.example',
    'X_HTTP_Method_Override: DELETE', 'X_Original_URL: /admin',
    'Content_Type: text/x-client', 'Accept_Encoding: gzip',
    'User_Agent: client', 'Accept: text/plain',
);

like(http("GET /ok HTTP/1.0\r\n" . join('', map { "$_\r\n" } @sent)
          . "\r\n"), qr{^HTTP/1\.1 200 }, 'allowed');

my ($req) = $t->echo_requests(8081);
my @got = map { lc($_->[0]) . ': ' . $_->[1] } @{ $req->{headers} // [] };

is_deeply([ sort grep { !/^host: / } @got ],
          [ 'accept: text/plain', 'x-service-token: underscore-route-secret' ],
          'only the kept Accept and the injected token reach the upstream');
is($t->error_log_check, '', 'no alerts');
