#!/usr/bin/perl

# ngx_http_airlock_module: a corpus of hostile raw requests.  Each one must
# be refused (403 by Airlock, or 4xx/5xx by nginx before Airlock runs) and
# none may reach the upstream.  The same server allows the plain requests,
# so a refusal is the corpus' doing, not a broken setup.

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

$t->write_file_expand('policy.yaml', <<'EOF');
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: prometheus-query
    clients: [local]
    match: { method: GET, path: /prometheus/query }
    upstream: echo
    to: /api/v1/query
    query: { allow: [query], require: [query] }
  - name: logs
    clients: [local]
    match: { method: GET, path: "/logs/{service}" }
    params: { service: '^[a-z0-9-]{1,63}$' }
    upstream: echo
    to: "/logs/{service}"
  - name: files
    clients: [local]
    match: { method: GET, path: "/files/{name}" }
    params: { name: '.+' }
    upstream: echo
    to: "/files/{name}"
  - name: github-pull-request
    clients: [local]
    match: { method: POST, path: /github/pull-request }
    upstream: echo
    to: /repos/acme/infra/pulls
    body:
      max_bytes: 256
      content_type: application/json
      json:
        head: '^remediation/[A-Za-z0-9._/-]+$'
        draft: { type: boolean, required: false }
alerts:
  deny: { threshold: 3, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf(
    http => 'client_body_timeout 1s; client_max_body_size 1k;'));

$t->start_echo(8081);
$t->run;

my $port = $t->port(8080);
my $json = "Content-Type: application/json\r\n";

sub get { "GET $_[0] HTTP/1.0\r\n" . ($_[1] // "") . "\r\n" }

sub post {
    my ($body, $h) = @_;
    return "POST /github/pull-request HTTP/1.0\r\n" . ($h // $json)
           . "Content-Length: " . length($body) . "\r\n\r\n$body";
}

sub chunked {
    my ($uri, $h, @chunks) = @_;
    return "POST $uri HTTP/1.1\r\nHost: x\r\nConnection: close\r\n$h"
           . "Transfer-Encoding: chunked\r\n\r\n"
           . join('', map { sprintf("%x\r\n%s\r\n", length, $_) } @chunks)
           . "0\r\n\r\n";
}

my $q = '?query=up';
my $ok_body = '{"head":"remediation/fix"}';

# [name, raw request, expected statuses (default 403 or 400)]
my @corpus = (

    # dot segments and their encodings
    [ 'dot-dot', get("/prometheus/../prometheus/query$q") ],
    [ 'dot', get("/prometheus/./query$q") ],
    [ 'encoded dot-dot', get("/prometheus/%2e%2e/prometheus/query$q") ],
    [ 'encoded dot upper', get("/prometheus/%2E/query$q") ],
    [ 'half-encoded dot-dot', get("/x/.%2e/prometheus/query$q") ],
    [ 'trailing dot', get("/prometheus/query/.$q") ],
    [ 'trailing dot-dot', get("/prometheus/query/..$q") ],
    [ 'dot-dot in param', get("/logs/..") ],
    [ 'encoded dot-dot in param', get("/logs/%2e%2e") ],

    # what an upstream reads as a dot segment, through a permissive param:
    # Windows (IIS, ASP.NET) trims trailing dots and spaces, NFKC turns
    # U+2024, U+2025, U+FE19, U+FE30, U+FE52 and U+FF0E into dots, U+00A0,
    # U+2003, U+3000 into spaces, U+FF0F into '/' and U+2100 into "a/c"
    [ 'dot-dot space', get("/files/..%20") ],
    [ 'dot space', get("/files/.%20") ],
    [ 'three dots', get("/files/..%2e") ],
    [ 'dot-dot dot space', get("/files/%2e%2e.%20%20") ],
    [ 'one dot leader twice', get("/files/%E2%80%A4%E2%80%A4") ],
    [ 'two dot leader', get("/files/%E2%80%A5") ],
    [ 'fullwidth full stops', get("/files/%EF%BC%8E%EF%BC%8E") ],
    [ 'dot and fullwidth full stop', get("/files/.%EF%BC%8E") ],
    [ 'small full stops', get("/files/%EF%B9%92%EF%B9%92") ],
    [ 'fullwidth slash and dots',
      get("/files/x%EF%BC%8F..%EF%BC%8F..") ],
    [ 'fullwidth backslash', get("/files/x%EF%BC%BC..") ],
    [ 'vertical two dot leader', get("/files/%EF%B8%B0") ],
    [ 'vertical ellipsis', get("/files/%EF%B8%99") ],
    [ 'dot-dot ideographic space', get("/files/..%E3%80%80") ],
    [ 'dot-dot no-break space', get("/files/..%C2%A0") ],
    [ 'dot-dot next line', get("/files/..%C2%85") ],
    [ 'two dot leader em space', get("/files/%E2%80%A5%E2%80%83") ],
    [ 'account of', get("/files/%E2%84%80") ],
    [ 'care of', get("/files/x%E2%84%85y") ],

    # encoded slashes, double encoding, backslashes
    [ '%2f', get("/prometheus%2fquery$q") ],
    [ '%2F', get("/prometheus%2Fquery$q") ],
    [ '%2F at the end', get("/prometheus/query%2F$q") ],
    [ '%2F in param', get("/logs/a%2Fb") ],
    [ 'traversal in param', get("/logs/..%2f..%2fetc") ],
    [ 'double-encoded dot-dot', get("/prometheus/%252e%252e/query$q") ],
    [ 'double-encoded slash', get("/prometheus%252Fquery$q") ],
    [ 'backslash', get("/prometheus\\query$q") ],
    [ 'encoded backslash', get("/prometheus%5Cquery$q") ],
    [ 'lone percent', get("/prometheus/query%$q") ],
    [ 'bad escape', get("/prometheus/query%zz$q") ],

    # ; parameters
    [ 'semicolon param', get("/prometheus/query;x=1$q") ],
    [ 'semicolon segment', get("/prometheus;/query$q") ],
    [ 'encoded semicolon', get("/prometheus/query%3Bx$q") ],
    [ 'semicolon in query', get("/prometheus/query?query=a;b") ],

    # NUL, control bytes, non-ASCII
    [ 'encoded NUL', get("/prometheus/query%00$q") ],
    [ 'raw NUL', get("/prometheus/query\x00$q") ],
    [ 'encoded NUL in query', get("/prometheus/query?query=up%00") ],
    [ 'raw byte 0xff', get("/prometheus/query\xff$q") ],
    [ 'invalid UTF-8', get("/prometheus/query%FF$q") ],
    [ 'overlong dot', get("/prometheus/%C0%AE%C0%AE/query$q") ],
    [ 'overlong slash', get("/prometheus%C0%AFquery$q") ],
    [ '3-byte overlong dot', get("/prometheus/%E0%80%AE/query$q") ],
    [ 'overlong in query', get("/prometheus/query?query=%C0%AE") ],
    [ 'encoded space', get("/prometheus/query%20$q") ],
    [ 'encoded question mark', get("/prometheus/query%3Fquery=up") ],

    # case games and trailing slashes
    [ 'capitalized', get("/Prometheus/query$q") ],
    [ 'upper case', get("/PROMETHEUS/QUERY$q") ],
    [ 'second segment', get("/prometheus/Query$q") ],
    [ 'param case', get("/logs/API") ],
    [ 'trailing slash', get("/prometheus/query/$q") ],
    [ 'double trailing slash', get("/prometheus/query//$q") ],
    [ 'leading double slash', get("//prometheus/query$q") ],
    [ 'inner double slash', get("/prometheus//query$q") ],
    [ 'fragment', get("/prometheus/query$q#x") ],

    # absolute-form targets and Host tricks
    [ 'absolute-form http',
      "GET http://127.0.0.1:$port/prometheus/query$q HTTP/1.1\r\n"
      . "Host: x\r\nConnection: close\r\n\r\n" ],
    [ 'absolute-form https',
      "GET https://evil.example/prometheus/query$q HTTP/1.1\r\n"
      . "Host: x\r\nConnection: close\r\n\r\n" ],
    [ 'absolute-form other host',
      "GET http://evil.example/x HTTP/1.0\r\n\r\n" ],
    [ 'duplicate Host', get("/prometheus/query$q",
                            "Host: a\r\nHost: evil.example\r\n") ],
    [ 'Host with a path', get("/prometheus/query$q", "Host: evil/x\r\n") ],
    [ 'Host dot-dot', get("/prometheus/query$q", "Host: ../etc\r\n") ],

    # queries
    [ 'duplicate query param', get("/prometheus/query?query=up&query=down") ],
    [ 'unlisted query param', get("/prometheus/query?query=up&time=1") ],
    [ 'query name case', get("/prometheus/query?Query=up") ],
    [ 'required param missing', get("/prometheus/query") ],
    [ 'empty query item', get("/prometheus/query?query=up&") ],
    [ 'CRLF in query', get("/prometheus/query?query=up%0d%0aX-Injected:%201") ],
    [ 'CRLF in param', get("/logs/a%0d%0ab") ],
    [ 'encoded name', get("/prometheus/query?%71uery=up&query=x") ],

    # methods
    [ 'lower-case method', "get /prometheus/query$q HTTP/1.0\r\n\r\n" ],
    [ 'mixed-case method', "Get /prometheus/query$q HTTP/1.0\r\n\r\n" ],
    [ 'DELETE', "DELETE /prometheus/query$q HTTP/1.0\r\n\r\n" ],
    [ 'PROPFIND', "PROPFIND /prometheus/query$q HTTP/1.0\r\n\r\n" ],
    [ 'CONNECT', "CONNECT 127.0.0.1:$port HTTP/1.1\r\nHost: x\r\n\r\n",
      qr/^(?:400|403|405)$/ ],
    [ 'TRACE', "TRACE /prometheus/query$q HTTP/1.0\r\n\r\n",
      qr/^(?:403|405)$/ ],
    [ 'OPTIONS *', "OPTIONS * HTTP/1.0\r\n\r\n" ],
    [ 'X-HTTP-Method-Override', get("/prometheus/query$q",
                                    "X-HTTP-Method-Override: DELETE\r\n") ],
    [ 'X-HTTP-Method', get("/prometheus/query$q", "X-HTTP-Method: PUT\r\n") ],
    [ 'X-Method-Override', post($ok_body,
                                $json . "X-Method-Override: DELETE\r\n") ],

    # JSON bodies
    [ 'duplicate JSON keys', post('{"head":"remediation/a","head":"main"}') ],
    [ 'duplicate keys, escaped',
      post('{"head":"remediation/a","h\u0065ad":"x"}') ],
    [ 'trailing data', post($ok_body . 'x') ],
    [ 'trailing document', post($ok_body . '{}') ],
    [ 'comment', post('{"head":"remediation/a"/*x*/}') ],
    [ 'line comment', post("//x\n$ok_body") ],
    [ 'NaN', post('{"head":"remediation/a","draft":NaN}') ],
    [ 'single quotes', post("{'head':'remediation/a'}") ],
    [ 'top-level array', post("[$ok_body]") ],
    [ 'NUL in string', post('{"head":"remediation/a\u0000b"}') ],
    [ 'invalid UTF-8 in JSON', post("{\"head\":\"remediation/\xff\"}") ],
    [ 'deep nesting', post('{"head":"remediation/a","x":' . ('[' x 40)
                           . (']' x 40) . '}') ],
    [ 'wrong content type', post($ok_body, "Content-Type: text/plain\r\n") ],
    [ 'no content type', post($ok_body, '') ],
    [ 'content type suffix', post($ok_body,
                                  "Content-Type: application/jsonx\r\n") ],
    [ 'two content types', post($ok_body, $json
                                . "Content-Type: text/plain\r\n") ],

    # framing
    [ 'oversized body', post('{"head":"remediation/' . ('a' x 300) . '"}') ],
    [ 'oversized Content-Length', "POST /github/pull-request HTTP/1.0\r\n"
                                  . $json . "Content-Length: 100000\r\n\r\n",
      qr/^(?:403|413)$/ ],
    [ 'chunked oversized', chunked('/github/pull-request', $json,
                                   '{"head":"remediation/', 'a' x 200,
                                   'a' x 200, '"}') ],
    [ 'lying Content-Length', "POST /github/pull-request HTTP/1.0\r\n"
                              . $json . "Content-Length: 100\r\n\r\n"
                              . $ok_body, qr/^(?:400|408|)$/ ],
    [ 'CL and TE', "POST /github/pull-request HTTP/1.1\r\nHost: x\r\n"
                   . $json . "Content-Length: 26\r\nTransfer-Encoding: "
                   . "chunked\r\nConnection: close\r\n\r\n" . $ok_body ],
    [ 'TE not chunked', "POST /github/pull-request HTTP/1.1\r\nHost: x\r\n"
                        . $json . "Transfer-Encoding: gzip, chunked\r\n"
                        . "Connection: close\r\n\r\n",
      qr/^(?:400|501)$/ ],
    [ 'two Content-Length', "POST /github/pull-request HTTP/1.0\r\n" . $json
                            . "Content-Length: 26\r\nContent-Length: 27\r\n"
                            . "\r\n$ok_body" ],
    [ 'negative Content-Length', "POST /github/pull-request HTTP/1.0\r\n"
                                 . $json . "Content-Length: -1\r\n\r\n" ],
    [ 'body on a GET route', "GET /prometheus/query$q HTTP/1.0\r\n"
                             . "Content-Length: 4\r\n\r\nbody" ],
    [ 'chunked body on a GET route', chunked("/prometheus/query$q", '',
                                             'body') ],

    # identity
    [ 'unknown token', get("/prometheus/query$q",
                           "Proxy-Authorization: Bearer guess\r\n") ],
    [ 'basic proxy auth', get("/prometheus/query$q",
                              "Proxy-Authorization: Basic eDp5\r\n") ],
);

plan tests => @corpus + 8;

# the control: plain requests pass

like(http(get("/prometheus/query$q")), qr{^HTTP/1\.1 200 }, 'control: query');
like(http(post($ok_body)), qr{^HTTP/1\.1 200 }, 'control: body');
like(http(get('/logs/api-1')), qr{^HTTP/1\.1 200 }, 'control: param');
like(http(get('/files/..a%20.%E2%80%A4')), qr{^HTTP/1\.1 200 },
     'control: dots, spaces and a dot leader in a name');
like(http(get('/files/%C2%A0..%E2%92%88')), qr{^HTTP/1\.1 200 },
     'control: a no-break space before dots, U+2488 ("1.") in a name');

my $seen = $p->echo_count;
is($seen, 5, 'control: five requests reached the upstream');

for my $c (@corpus) {
    my ($name, $req, $want) = @$c;
    my $raw = http($req, timeout => 4, one => 1) // "";
    my $status = parse_response($raw)->{status} // '';
    my $now = $p->echo_count;

    $want //= qr/^(?:400|403)$/;

    ok($status =~ $want && $now == $seen, "refused: $name")
        or diag("status '$status', upstream requests $now (was $seen)");

    note("$name: $status");
    $seen = $now;
}

# Host is not used to route: a Host trick with a good target goes to the
# route's upstream with the route's Host

http(get("/prometheus/query$q", "Host: evil.example\r\n"
         . "X-Forwarded-Host: evil.example\r\n"));
my @all = $t->echo_requests(8081);
is_deeply([ map { $_->[1] } grep { lc $_->[0] eq 'host' }
            @{$all[-1]{headers}} ],
          [ '127.0.0.1:' . $t->port(8081) ], 'Host trick: the route\'s Host');

is($t->error_log_check, '', 'no alerts');
