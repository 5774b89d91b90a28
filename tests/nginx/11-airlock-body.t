#!/usr/bin/perl

# ngx_http_airlock_module: request bodies.  A body is read without
# blocking, checked whole, and the very bytes checked are forwarded;
# anything ambiguous or too large is refused before an upstream sees it,
# a JSON body in a charset other than utf-8 too, and a body whose _method
# field an upstream would read as another method than the one decided.

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
  - name: pr
    clients: [local]
    match: { method: POST, path: /github/pull-request }
    upstream: echo
    to: /repos/acme/infra/pulls
    body:
      max_bytes: 65536
      content_type: application/json
      json:
        head: '^remediation/[A-Za-z0-9._/-]+$'
        title: { type: string, required: false }
  - name: raw
    clients: [local]
    match: { method: [POST, PUT], path: /raw }
    upstream: echo
    to: /raw
    body: { max_bytes: 100 }
  - name: open
    clients: [local]
    match: { method: POST, path: /open }
    upstream: echo
    to: /open
    body: { max_bytes: 100, json: { id: '^[0-9]+$' }, additional: true }
  - name: get
    clients: [local]
    match: { method: GET, path: /get }
    upstream: echo
    to: /get
alerts:
  deny: { threshold: 3, window: 60s }
EOF

$t->write_file_expand('nginx.conf',
                      $p->conf(http => 'client_body_buffer_size 64k;'));

$t->start_echo(8081);
$t->run;

plan tests => 54;

my $json = 'application/json';
my ($r, $j, $body);

sub post {
    my ($uri, $body, %o) = @_;
    my $ct = exists $o{ct} ? $o{ct} : $json;
    return http_post($uri, $body,
                     headers => defined $ct ? { 'Content-Type' => $ct } : {},
                     %o);
}

sub chunked {
    my ($uri, @chunks) = @_;
    my $req = "POST $uri HTTP/1.1\r\nHost: localhost\r\n"
            . "Content-Type: $json\r\nTransfer-Encoding: chunked\r\n"
            . "Connection: close\r\n\r\n";
    my @parts = ($req);
    push @parts, sprintf("%x\r\n%s\r\n", length $_, $_) for @chunks;
    push @parts, "0\r\n\r\n";
    return http(\@parts, pause => 0.05);
}

sub denied {
    my ($raw, $reason, $name) = @_;
    my $before = $p->echo_count;
    my $res = parse_response($raw);
    my $b = json_body($raw);

    subtest $name => sub {
        plan tests => 3;
        is($res->{status}, 403, 'status 403');
        is($b && $b->{reason}, $reason, "reason $reason");
        is($p->echo_count, $before, 'upstream saw nothing');
    };
}

# allowed bodies are forwarded byte for byte

$body = '{"head":"remediation/fix-1","title":"caf\u00e9 \"q\""}';
$r = parse_response(post('/github/pull-request', $body));
$j = echo_json($r->{body});
is($r->{status}, 200, 'JSON body: 200');
is($j->{body}, $body, 'JSON body: forwarded bytes equal');
is($j->{target}, '/repos/acme/infra/pulls', 'JSON body: target');
my ($cl) = map { $_->[1] } grep { lc $_->[0] eq 'content-length' }
           @{$j->{headers}};
is($cl, length $body, 'JSON body: upstream Content-Length');

$body = "{\"head\":\"remediation/x\",\n  \"title\":\"" . ('t' x 60000) . "\"}";
$r = parse_response(http_post('/github/pull-request', $body,
    headers => { 'Content-Type' => 'application/json; charset=utf-8' }));
$j = echo_json($r->{body});
is($r->{status}, 200, 'large body: 200');
ok($j->{body} eq $body, 'large body: forwarded bytes equal');

# the same body arriving slowly, in pieces (read asynchronously)

my $head = "POST /github/pull-request HTTP/1.0\r\nHost: localhost\r\n"
         . "Content-Type: $json\r\nContent-Length: " . length($body)
         . "\r\n\r\n";
$r = parse_response(http([ $head, substr($body, 0, 1000),
                           substr($body, 1000, 30000),
                           substr($body, 31000) ], pause => 0.1));
is($r->{status}, 200, 'body in pieces: 200');
ok(echo_json($r->{body})->{body} eq $body, 'body in pieces: bytes equal');

# chunked request bodies are checked whole, forwarded with Content-Length

$r = parse_response(chunked('/github/pull-request',
                            '{"head":', '"remediation/', 'chunked"}'));
$j = echo_json($r->{body});
is($r->{status}, 200, 'chunked: 200');
is($j->{body}, '{"head":"remediation/chunked"}', 'chunked: bytes equal');
ok(!grep({ lc $_->[0] eq 'transfer-encoding' } @{$j->{headers}}),
   'chunked: upstream gets a Content-Length body');

# raw bodies without JSON rules

$r = parse_response(post('/raw', "\x00\x01binary\xff", ct => undef));
is($r->{status}, 200, 'raw body: 200');
is(echo_json($r->{body})->{body}, "\x00\x01binary\xff", 'raw body: bytes');

$r = parse_response(http("PUT /raw HTTP/1.0\r\nContent-Length: 0\r\n\r\n"));
is($r->{status}, 200, 'empty body on a body route');

# refused bodies

denied(post('/github/pull-request', '{"head":"main"}'), 'body',
       'pattern mismatch');
denied(post('/github/pull-request',
            '{"head":"remediation/a","head":"main"}'), 'body',
       'duplicate JSON keys');
denied(post('/github/pull-request', '{"head":"remediation/a"} x'), 'body',
       'trailing data');
denied(post('/github/pull-request', '{"head":"remediation/a"}{}'), 'body',
       'two documents');
denied(post('/github/pull-request', '/*c*/{"head":"remediation/a"}'), 'body',
       'comment');
denied(post('/github/pull-request', '{"head":"remediation/a","x":1}'), 'body',
       'unlisted member');
denied(post('/github/pull-request', "{\"head\":\"remediation/a\\u0000\"}"),
       'body', 'NUL in a string');
denied(post('/github/pull-request', '{"head":"remediation/a"}',
            ct => 'text/plain'), 'body', 'wrong content type');
denied(post('/github/pull-request', '{"head":"remediation/a"}', ct => undef),
       'body', 'no content type');

# the rules read the body as UTF-8; an upstream that honours the charset
# would read this one as {"head":"main",...}

denied(post('/github/pull-request',
            '{"head":"remediation/x","title":"a+ACIALAAi-head+ACIAOgAi-main"}',
            ct => 'application/json; charset=utf-7'), 'body',
       'charset utf-7');
denied(post('/github/pull-request', '{"head":"remediation/a"}',
            ct => 'application/json; charset="utf-7"'), 'body',
       'charset utf-7, quoted');
denied(post('/github/pull-request', '{"head":"remediation/a"}',
            ct => 'application/json; charset=utf-8; charset=utf-16'), 'body',
       'a second charset');
$r = parse_response(post('/github/pull-request', '{"head":"remediation/a"}',
                         ct => 'application/json; charset="UTF-8"'));
is($r->{status}, 200, 'charset "UTF-8": 200');
$r = parse_response(post('/raw', 'x', ct => 'text/plain; charset=utf-7'));
is($r->{status}, 200, 'no JSON rules: any charset');
denied(post('/github/pull-request', ''), 'body', 'empty body');
denied(http("POST /github/pull-request HTTP/1.0\r\nContent-Type: $json\r\n"
            . "Content-Type: text/plain\r\nContent-Length: 2\r\n\r\n{}"),
       'request', 'two Content-Type headers');

# a form's _method field turns a POST into another method upstream (Rack's
# MethodOverride, Laravel and Symfony, Express's method-override reading
# the body): refused on every route, whatever it allows for the body

my $form = 'application/x-www-form-urlencoded';
my $mp = 'multipart/form-data; boundary=b';

denied(post('/raw', 'a=1&_method=DELETE', ct => $form), 'body',
       'form field _method');
denied(post('/raw', '%5Fmethod=PUT', ct => "$form; charset=utf-8"), 'body',
       'form field %5Fmethod');
denied(post('/raw', 'a=1&_method[]=PATCH', ct => 'Application/X-WWW-Form-'
            . 'Urlencoded'), 'body', 'form field _method[]');
denied(post('/raw', "--b\r\nContent-Disposition: form-data; name=\"_method\""
            . "\r\n\r\nDELETE\r\n--b--\r\n", ct => $mp), 'body',
       'multipart field _method');
denied(post('/raw', '_method=DELETE', ct => undef), 'body',
       'no Content-Type (Rack reads a form): _method');
denied(post('/open', '{"id":"1","_method":"DELETE"}'), 'body',
       'JSON with additional: top-level _method (Laravel reads it)');

# ... and where the field is not written in ASCII: a form in UTF-16
# (ASP.NET Core decodes a form in its charset), a multipart name as an
# RFC 2047 encoded word (ASP.NET's ContentDispositionHeaderValue decodes
# it)

denied(post('/raw', join('', map { "$_\0" } split //, '_method=DELETE'),
            ct => "$form; charset=utf-16"), 'body',
       'form in UTF-16 (_method in UTF-16LE)');
denied(post('/raw', "--b\r\nContent-Disposition: form-data; "
            . "name=\"=?utf-8?B?X21ldGhvZA==?=\"\r\n\r\nDELETE\r\n--b--\r\n",
            ct => $mp), 'body', 'multipart name as an RFC 2047 encoded word');

$r = parse_response(post('/raw', 'a=1&x_method=DELETE&b=_method', ct => $form));
is($r->{status}, 200, 'form without a _method field: 200');
$r = parse_response(post('/raw', "--b\r\nContent-Disposition: form-data; "
                         . "name=\"a\"\r\n\r\n_method\r\n--b--\r\n",
                         ct => $mp));
is($r->{status}, 200, 'multipart without a _method field: 200');
$r = parse_response(post('/raw', 'a=1', ct => "$form; charset=ISO-8859-1"));
is($r->{status}, 200, 'form in ISO-8859-1: 200');
$r = parse_response(post('/raw', '_method=DELETE', ct => 'text/plain'));
is($r->{status}, 200, 'not a form: _method is text');
$r = parse_response(post('/open', '{"id":"1","x":{"_method":"DELETE"}}'));
is($r->{status}, 200, 'JSON with additional: a nested _method is data');

# too large: refused from Content-Length, before the body is read

# (the body is never sent: waiting for it would take nginx's
# client_body_timeout, 60s, and the client gives up at 30s; the bound
# leaves a loaded machine its time)
my $t0 = time;
denied(http("POST /raw HTTP/1.0\r\nContent-Length: 101\r\n\r\n", one => 1,
            timeout => 30),
       'body_too_large', 'Content-Length over max_bytes');
ok(time - $t0 < 25, 'Content-Length over max_bytes: no wait for the body');

denied(post('/raw', 'x' x 101, ct => undef), 'body_too_large',
       'body over max_bytes');
denied(chunked('/raw', 'x' x 60, 'y' x 60), 'body_too_large',
       'chunked body over max_bytes');
denied(chunked('/github/pull-request', 'x' x 40000, 'y' x 40000),
       'body_too_large', 'chunked body over client_body_buffer_size');
denied(http("GET /get HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc"),
       'body_too_large', 'body on a route without body:');
denied(http("GET /get HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
            . "Connection: close\r\n\r\n1\r\na\r\n0\r\n\r\n"),
       'body_too_large', 'chunked body on a route without body:');

# framing nginx refuses before any module runs

my $before = $p->echo_count;
like(http("POST /raw HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
          . "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
          . "0\r\n\r\n"), qr{^HTTP/1\.1 400 }, 'CL and TE: 400');
like(http("POST /raw HTTP/1.0\r\nContent-Length: 50\r\n\r\nshort"),
     qr{^HTTP/1\.1 400 |^$}, 'lying Content-Length: refused or timed out')
    if 0;
like(http("POST /raw HTTP/1.0\r\nContent-Length: 5\r\n"
          . "Content-Length: 6\r\n\r\nabcdef"),
     qr{^HTTP/1\.1 400 }, 'two Content-Length: 400');
is($p->echo_count, $before, 'malformed framing reaches no upstream');

is($t->error_log_check, '', 'no alerts');
