#!/usr/bin/perl

# ngx_http_airlock_module: the decision.  Allowed routes reach the echo
# upstream with the canonical URI and only allowlisted headers plus the
# injected credential; every deny reason answers 403 with the JSON body,
# writes one deny line, and reaches no upstream.

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
my $secret = 's3cr3t-token-XYZ';
my $sealed = $p->seal($secret);
my $tools = $p->token_sha256('tools-token-1');

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
  other: { cidr: [10.0.0.0/8] }
  tools: { token_sha256: "$tools" }
secrets:
  tok: { sealed: "$sealed" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: query
    clients: [local, tools]
    match: { method: GET, path: /prometheus/query }
    upstream: echo
    to: /api/v1/query
    query:
      allow: [query, time]
      require: [query]
      patterns: { time: '^[0-9]+\$' }
    inject: { Authorization: "Bearer {tok}" }
  - name: logs
    clients: [local]
    match: { method: GET, path: "/logs/{service}" }
    params: { service: '^[a-z0-9-]{1,63}\$' }
    upstream: echo
    to: "/svc/{service}/tail"
    cookies: true
  - name: other-only
    clients: [other]
    match: { method: GET, path: /other }
    upstream: echo
    to: /other
  - name: head
    clients: [local]
    match: { method: [GET, HEAD], path: /head }
    upstream: echo
    to: /head
  - name: ua
    clients: [local]
    match: { method: GET, path: /ua }
    upstream: echo
    to: /ua
    inject: { User-Agent: "airlock-test", Accept: "application/x-test" }
  - name: redirect
    clients: [local]
    match: { method: GET, path: /redirect }
    upstream: echo
    to: /redirect
  - name: pr
    clients: [local]
    match: { method: POST, path: /github/pull-request }
    upstream: echo
    to: /repos/acme/infra/pulls
    body:
      max_bytes: 1024
      content_type: application/json
      json:
        head: '^remediation/[A-Za-z0-9._/-]+\$'
alerts:
  deny: { threshold: 3, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf(
    http => "    log_format seen '\$http_user_agent|\$http_cookie|'\n"
          . "                    '\$proxy_add_x_forwarded_for|\$http_accept|'\n"
          . "                    '\$http_x_api_key';\n",
    server => "access_log %%TESTDIR%%/seen.log seen;\n",
    locations => <<'EOF'));
        location = /redirect {
            airlock on;
            %%AIRLOCK_LOCATION%%
            proxy_set_header X-Echo-Redirect "http://elsewhere.example/next";
        }
EOF

$t->start_echo(8081);
$t->run;

plan tests => 78;

my ($r, $j, @seen, $u);
my $denies = 0;

sub upstream_last {
    my @all = $t->echo_requests(8081);
    return $all[-1];
}

sub hdr {
    my ($req, $name) = @_;
    return [ map { $_->[1] } grep { lc $_->[0] eq lc $name }
             @{$req->{headers}} ];
}

sub denied {
    my ($raw, $reason, $name) = @_;
    my $before = $p->echo_count;
    my $res = parse_response($raw);
    my $body = json_body($raw);

    $denies++;

    subtest $name => sub {
        plan tests => 4;
        is($res->{status}, 403, 'status 403');
        is($body && $body->{reason}, $reason, "reason $reason");
        is($res->{headers}{'content-type'}, 'application/json',
           'application/json');
        is($p->echo_count, $before, 'upstream saw nothing');
    };
}

# allowed

$r = parse_response(http_get('/prometheus/query?query=up'));
$j = echo_json($r->{body});
is($r->{status}, 200, 'allowed: 200');
is($j->{target}, '/api/v1/query?query=up', 'allowed: upstream target');

$u = upstream_last();
is_deeply(hdr($u, 'Authorization'), [ "Bearer $secret" ],
          'injected credential reaches the upstream');
is_deeply(hdr($u, 'Host'), [ '127.0.0.1:' . $t->port(8081) ],
          'Host is the upstream\'s');

# the canonical query: decoded, then encoded one way

http_get('/prometheus/query?time=1700000000&query=rate(x%5B5m%5D)+%2B+1');
is(upstream_last()->{target},
   '/api/v1/query?time=1700000000&query=rate(x%5B5m%5D)%20%2B%201',
   'query rebuilt canonical');

http_get('/prometheus/query?query=%41%62c');
is(upstream_last()->{target}, '/api/v1/query?query=Abc',
   'unreserved escapes decoded');

http_get('/logs/api-gw');
is(upstream_last()->{target}, '/svc/api-gw/tail', 'path param in "to"');

# header allowlist

http_get('/prometheus/query?query=up', headers => [
    'Authorization' => 'Basic Y2xpZW50OnNlY3JldA==',
    'X-Api-Key' => 'client-key',
    'Cookie' => 'session=abc',
    'Accept-Encoding' => 'gzip, br',
    'Forwarded' => 'for=1.2.3.4',
    'X-Forwarded-For' => '1.2.3.4',
    'X-Forwarded-Host' => 'evil.example',
    'X-Real-IP' => '1.2.3.4',
    'Connection' => 'keep-alive',
    'Keep-Alive' => 'timeout=5',
    'TE' => 'trailers',
    'Via' => '1.1 proxy',
    'Referer' => 'http://x/',
    'Origin' => 'http://x',
    'X-Custom' => 'x',
    'Upgrade' => 'websocket',
    'Accept' => 'application/json',
    'Accept-Language' => 'en',
    'User-Agent' => 'agent/1.0',
    'If-None-Match' => '"etag"',
    'If-Modified-Since' => 'Mon, 01 Jan 2024 00:00:00 GMT',
    'Cache-Control' => 'no-cache',
], one => 1);                   # kept alive: the one answer, not the close

$u = upstream_last();
my %got = map { lc $_->[0] => 1 } @{$u->{headers}};

for my $h (qw(x-api-key cookie accept-encoding forwarded x-forwarded-for
              x-forwarded-host x-real-ip keep-alive te via referer origin
              x-custom upgrade))
{
    ok(!$got{$h}, "$h removed");
}

is_deeply(hdr($u, 'Authorization'), [ "Bearer $secret" ],
          'client Authorization replaced by the injected one');
is_deeply(hdr($u, 'Connection'), [], 'client Connection not forwarded');

for my $h ('Accept', 'Accept-Language', 'User-Agent', 'If-None-Match',
           'If-Modified-Since', 'Cache-Control')
{
    is(scalar @{hdr($u, $h)}, 1, "$h kept");
}

# the kept headers are moved down nginx's header list in place, across
# the list's parts (20 headers each): 60 headers, 4 of them kept

my @many = map { ("X-Pad-$_" => "v$_") } 1 .. 60;
my %keep = (7 => 'Accept', 27 => 'User-Agent', 47 => 'Cache-Control',
            59 => 'Accept-Language');
$many[2 * ($_ - 1)] = $keep{$_} for keys %keep;
http_get('/prometheus/query?query=up', headers => \@many);
$u = upstream_last();
my @kept = grep { $_->[0] !~ /^(host|authorization|connection)$/i }
           @{$u->{headers}};
is_deeply([ map { "$_->[0]: $_->[1]" } @kept ],
          [ 'Accept: v7', 'User-Agent: v27', 'Cache-Control: v47',
            'Accept-Language: v59' ],
          'kept headers from three list parts, in order');
is_deeply(hdr($u, 'Authorization'), [ "Bearer $secret" ],
          'injected after a compacted list');

# nginx's own variables read what was kept: the shortcuts follow the
# rewritten header list (X-Forwarded-For from the client is not resurrected
# by $proxy_add_x_forwarded_for, a removed Cookie is not $http_cookie)

http_get('/prometheus/query?query=up', headers => [
    'User-Agent' => 'agent/2.0', 'Cookie' => 'session=abc',
    'X-Forwarded-For' => '10.9.9.9', 'Accept' => 'text/plain',
    'X-Api-Key' => 'client-key' ]);
my @seen_log = split /\n/, $t->read_file('seen.log');
is($seen_log[-1], 'agent/2.0|-|127.0.0.1|text/plain|-',
   'variables see the kept headers only');

# cookies only where the route allows them

http_get('/logs/api', headers => [ 'Cookie' => 'session=abc' ]);
is_deeply(hdr(upstream_last(), 'Cookie'), [ 'session=abc' ],
          'Cookie kept on a cookies: true route');

# injected headers replace allowlisted client ones

http_get('/ua', headers => [ 'User-Agent' => 'client', 'Accept' => '*/*' ]);
$u = upstream_last();
is_deeply(hdr($u, 'User-Agent'), [ 'airlock-test' ], 'injected User-Agent');
is_deeply(hdr($u, 'Accept'), [ 'application/x-test' ], 'injected Accept');

# HEAD is not GET

like(http("HEAD /prometheus/query?query=up HTTP/1.0\r\n\r\n"),
     qr{^HTTP/1\.1 403 }, 'HEAD on a GET route');
$denies++;
is(($p->deny_log)[-1]{reason}, 'method', 'HEAD on a GET route: method');
like(http("HEAD /head HTTP/1.0\r\n\r\n"), qr{^HTTP/1\.1 200 }, 'HEAD route');
is(upstream_last()->{method}, 'HEAD', 'HEAD forwarded as HEAD');

# redirects pass back untouched

$r = parse_response(http_get('/redirect'));
is($r->{status}, 302, 'upstream redirect passed back');
is($r->{headers}{location}, 'http://elsewhere.example/next',
   'Location untouched');

# every deny reason

denied(http_get('/nope'), 'no_route', 'no_route');
denied(http_get('/other'), 'no_route', 'route of another client');
denied(http("POST /prometheus/query?query=up HTTP/1.0\r\n"
            . "Content-Length: 0\r\n\r\n"), 'method', 'method');
denied(http_get('/prometheus//query?query=up'), 'path', 'path: empty segment');
denied(http_get('/prometheus%2Fquery?query=up'), 'path', 'path: %2F');
denied(http_get('/logs/UPPER'), 'param', 'param');
denied(http_get('/prometheus/query?query=up&evil=1'), 'query',
       'query: not allowed');
denied(http_get('/prometheus/query'), 'query', 'query: required missing');
denied(http_get('/prometheus/query?query=up&time=now'), 'query',
       'query: pattern');
denied(http_post('/github/pull-request', '{"head":"main"}',
                 headers => { 'Content-Type' => 'application/json' }),
       'body', 'body');
denied(http_post('/github/pull-request', 'x' x 2000,
                 headers => { 'Content-Type' => 'application/json' }),
       'body_too_large', 'body_too_large');
denied(http_get('/prometheus/query?query=up',
                headers => { 'Proxy-Authorization' => 'Bearer wrong' }),
       'client_unknown', 'client_unknown: bad token');
denied(http("GET http://127.0.0.1/prometheus/query?query=up HTTP/1.1\r\n"
            . "Host: localhost\r\nConnection: close\r\n\r\n"),
       'request', 'request: absolute-form');
denied(http_get('/prometheus/query?query=up',
                headers => { 'X-HTTP-Method-Override' => 'DELETE' }),
       'request', 'request: method override');

# the deny answer and the deny line

my $raw = http_get('/nope?x=1');
$denies++;
$r = parse_response($raw);
$j = json_body($raw);

is_deeply([ sort keys %$j ], [ qw(error reason request_id) ],
          'deny body: error, reason, request_id only');
is($j->{error}, 'forbidden', 'deny body: error');
like($j->{request_id}, qr/^[0-9a-f]{32}$/, 'deny body: request id');
is($r->{headers}{'content-length'}, length $r->{body},
   'deny body: Content-Length');

my @log = $p->deny_log;
is(scalar @log, $denies, 'one deny line per denial');

my $line = $log[-1];
is_deeply([ sort keys %$line ],
          [ qw(client detail method path reason request_id route time) ],
          'deny line fields');
is($line->{request_id}, $j->{request_id}, 'deny line: same request id');
is($line->{client}, 'local', 'deny line: client');
is($line->{path}, '/nope?x=1', 'deny line: path');
is($line->{route}, undef, 'deny line: route null');
is($line->{reason}, 'no_route', 'deny line: reason');
like($line->{time}, qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$/,
     'deny line: ISO 8601 time');

my ($pr) = grep { $_->{reason} eq 'param' } @log;
is($pr->{route}, 'logs', 'deny line: route when one matched');
like($pr->{detail}, qr/service/, 'deny line: detail');

my ($cu) = grep { $_->{reason} eq 'client_unknown' } @log;
is($cu->{client}, undef, 'deny line: unknown client is null');

# long and hostile paths are escaped and cut

http_get('/' . ('a' x 300) . '%22%5C');
http("GET /x\"y\\z\xff HTTP/1.0\r\n\r\n");
$denies += 2;
@log = $p->deny_log;
is(length($log[-2]{path}), 257, 'long path cut to 256 bytes and a marker');
like($log[-2]{path}, qr/^\/a+\x{2026}$/, 'cut marker');
is($log[-1]{path}, "/x\"y\\z\x{ff}", 'path JSON-escaped, bytes as code points');
like($t->read_file('deny.log'), qr{"/x\\"y\\\\z\\u00ff"},
     'deny line escapes');

# variables

my $access = $t->read_file('airlock.log');
like($access, qr/^local query - [0-9a-f]{32} 1 200$/m,
     'log: allowed request variables');
like($access, qr/^local - no_route [0-9a-f]{32} 0 403$/m,
     'log: denied request variables');
like($access, qr/^- query client_unknown [0-9a-f]{32} 0 403$/m,
     'log: unknown client');

is($t->error_log_check, '', 'no alerts');
