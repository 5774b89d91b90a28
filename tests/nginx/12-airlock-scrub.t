#!/usr/bin/perl

# ngx_http_airlock_module: response scrubbing.  An upstream that echoes the
# injected credential (in a header, in the body, split across buffers, raw,
# base64 or in UTF-16) hands the client "[REDACTED]" instead.  A body the
# scrubber cannot search (a Content-Encoding other than identity in any
# of the upstream's headers, a Transfer-Encoding other than chunked) is
# refused.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Encode qw(encode decode);
use IO::Uncompress::Gunzip qw(gunzip);
use MIME::Base64 qw(encode_base64);
use Test::More;
use Airlock::Test;
use Airlock::Proxy;

# nginx's own debug log prints upstream request headers, credentials too
local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;

my $tok = 's3cr3t-token-XYZ-0123456789';
my $basic = 'svc-user:pa55word-long';
my $b64 = encode_base64($basic, '');
my $tok64 = encode_base64($tok, '');
my $sealed_tok = $p->seal($tok);
my $sealed_basic = $p->seal($basic);

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  tok: { sealed: "$sealed_tok" }
  prom: { sealed: "$sealed_basic" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: bearer
    clients: [local]
    match: { method: GET, path: /bearer }
    upstream: echo
    to: /bearer
    inject: { Authorization: "Bearer {tok}" }
  - name: basic
    clients: [local]
    match: { method: GET, path: /basic }
    upstream: echo
    to: /basic
    inject: { Authorization: "Basic {prom|base64}" }
  - name: reflect
    clients: [local]
    match: { method: GET, path: /reflect }
    upstream: echo
    to: /__reflect-headers
    inject: { Authorization: "Bearer {tok}" }
  - name: chunks
    clients: [local]
    match: { method: GET, path: /chunks }
    upstream: echo
    to: /chunks
    inject: { Authorization: "Bearer {tok}" }
  - name: big
    clients: [local]
    match: { method: GET, path: /big }
    upstream: echo
    to: /big
    inject: { Authorization: "Bearer {tok}" }
  - name: gzip
    clients: [local]
    match: { method: GET, path: /gzip }
    upstream: echo
    to: /gzip
    inject: { Authorization: "Bearer {tok}" }
  - name: enc
    clients: [local]
    match: { method: GET, path: "/enc/{x}" }
    params: { x: '^[a-z0-9-]+\$' }
    upstream: echo
    to: "/{x}"
    inject: { Authorization: "Bearer {tok}" }
  - name: plain
    clients: [local]
    match: { method: GET, path: /plain }
    upstream: echo
    to: /plain
alerts:
  deny: { threshold: 3, window: 60s }
EOF

my $loc = <<'EOF';
            airlock on;
            %%AIRLOCK_LOCATION%%
            error_page 502 504 @airlock_error;
EOF

# the body in UTF-16, held whole and in 3-byte pieces
my $utf16 = '';
for my $u ([ 'utf16le', 'UTF-16LE', 0 ], [ 'utf16be', 'UTF-16BE', 0 ],
           [ 'utf16le-chunks', 'UTF-16LE', 1 ],
           [ 'utf16be-chunks', 'UTF-16BE', 1 ])
{
    my ($n, $enc, $chunks) = @$u;
    my $body = encode_base64(encode($enc, qq({"a":"Bearer $tok"})), '');

    $utf16 .= <<"LOC";
        location = /enc/$n {
$loc
            proxy_set_header X-Echo-Body-B64 "$body";
            proxy_set_header X-Echo-Chunked $chunks;
            proxy_set_header X-Echo-Chunk-Size 3;
        }

LOC
}

$t->write_file_expand('nginx.conf', $p->conf(
    http => "    log_format cred '\$http_authorization \$http_x_api_key';\n",
    server => "access_log %%TESTDIR%%/cred.log cred;\n",
    locations => <<"EOF"));
        location = /chunks {
$loc
            proxy_buffering off;
            proxy_set_header X-Echo-Chunked 1;
            proxy_set_header X-Echo-Chunk-Size 3;
            proxy_set_header X-Echo-Delay-Ms 1;
        }

        location = /big {
$loc
            proxy_set_header X-Echo-Size 300000;
        }

        location = /gzip {
$loc
            proxy_set_header X-Echo-Header "Content-Encoding: gzip";
        }

        # nginx points headers_out.content_encoding at the last of these
        location = /enc/gzip-identity {
$loc
            proxy_set_header X-Echo-Gzip 1;
            proxy_set_header X-Echo-Header "Content-Encoding: gzip";
            proxy_set_header X-Echo-Header "Content-Encoding: identity";
        }

        location = /enc/gzip-empty {
$loc
            proxy_set_header X-Echo-Gzip 1;
            proxy_set_header X-Echo-Header "Content-Encoding: gzip";
            proxy_set_header X-Echo-Header "Content-Encoding: ";
        }

        location = /enc/list {
$loc
            proxy_set_header X-Echo-Gzip 1;
            proxy_set_header X-Echo-Header "Content-Encoding: identity, gzip";
        }

        location = /enc/identity {
$loc
            proxy_set_header X-Echo-Header "Content-Encoding: Identity";
        }

$utf16
        # nginx 1.22 takes any Transfer-Encoding holding "chunked" as
        # chunked, and passes on what is under it
        location = /enc/te-gzip {
$loc
            proxy_set_header X-Echo-Gzip 1;
            proxy_set_header X-Echo-Chunked 1;
            proxy_set_header X-Echo-Transfer-Encoding "gzip, chunked";
        }

        location = /enc/te-chunked {
$loc
            proxy_set_header X-Echo-Chunked 1;
            proxy_set_header X-Echo-Transfer-Encoding "Chunked";
        }
EOF

$t->start_echo(8081);
$t->run;

plan tests => 63;

my ($r, $raw);

sub get11 {
    my ($uri, @h) = @_;
    my $h = '';
    while (my ($k, $v) = splice @h, 0, 2) {
        $h .= "$k: $v\r\n";
    }
    return http("GET $uri HTTP/1.1\r\nHost: localhost\r\n$h"
                . "Connection: close\r\n\r\n");
}

sub leaks {
    my ($raw) = @_;
    return scalar grep { index($raw, $_) >= 0 } $tok, $basic, $b64, $tok64;
}

# the body

$raw = get11('/bearer');
$r = parse_response($raw);
is($r->{status}, 200, 'bearer: 200');
is(leaks($raw), 0, 'bearer: no secret in the response');
like($r->{body}, qr/"Authorization","\[REDACTED\]"/,
     'bearer: "Bearer x" redacted as a whole');
# a small body with a Content-Length is held, scrubbed, and sent with the
# length of what is sent
is($r->{headers}{'content-length'}, length $r->{body},
   'bearer: Content-Length is the scrubbed length');
ok(!exists $r->{headers}{'transfer-encoding'}, 'bearer: not chunked');
ok($r->{complete}, 'bearer: complete body');

my @seen = $t->echo_requests(8081);
is((grep { $_->[0] eq 'Authorization' } @{$seen[-1]{headers}})[0][1],
   "Bearer $tok", 'the upstream did get the credential');

$raw = get11('/basic');
is(leaks($raw), 0, 'basic: no secret in the response');
like(parse_response($raw)->{body}, qr/"\[REDACTED\]"/, 'basic: redacted');

# the secret alone, raw or base64, wherever it comes from

$raw = get11('/basic', 'User-Agent' => "ua $basic ua");
is(leaks($raw), 0, 'raw secret value scrubbed');
like($raw, qr/"ua \[REDACTED\] ua"/, 'raw secret value: in place');

$raw = get11('/basic', 'User-Agent' => "x${b64}x");
is(leaks($raw), 0, 'base64 form scrubbed');

$raw = get11('/bearer', 'User-Agent' => "$tok$tok");
like($raw, qr/"\[REDACTED\]\[REDACTED\]"/, 'adjacent matches');

$raw = get11('/bearer', 'User-Agent' => substr($tok, 0, 10));
like($raw, qr/"\Q@{[substr($tok, 0, 10)]}\E"/, 'a prefix alone is kept');

# headers

$raw = get11('/reflect', 'User-Agent' => "ua $tok");
$r = parse_response($raw);
is(leaks($raw), 0, 'reflected headers: no secret');
is($r->{headers}{'x-echo-authorization'}, '[REDACTED]',
   'reflected header value redacted');
is($r->{headers}{'x-echo-user-agent'}, 'ua [REDACTED]',
   'occurrence in a header value redacted');

# split across buffers: 3-byte pieces, unbuffered

$raw = get11('/chunks', 'User-Agent' => "$tok|$tok64|" . substr($tok, 0, 5));
$r = parse_response($raw);
is($r->{status}, 200, 'chunks: 200');
ok(@{$r->{chunks} // []} > 10, 'chunks: the body went through in pieces')
    or diag(scalar @{$r->{chunks} // []});
is(leaks($raw), 0, 'chunks: no secret across buffer boundaries');
like($r->{body}, qr/"\[REDACTED\]\|\[REDACTED\]\|\Q@{[substr($tok, 0, 5)]}\E"/,
     'chunks: redacted in place, the undecided tail kept');
my $j = eval { echo_json($r->{body}) };
ok($j && $j->{path} eq '/chunks', 'chunks: body still valid JSON');

# big bodies stream through unchanged, chunked (the scrubber does not know
# their length in advance)

$r = parse_response(get11('/big'));
ok(!exists $r->{headers}{'content-length'}, 'big: no Content-Length');
like($r->{headers}{'transfer-encoding'} // '', qr/chunked/i, 'big: chunked');
is(length $r->{body}, 300000, 'big: length unchanged');
is($r->{body}, substr(('0123456789abcdefghijklmnopqrstuvwxyz'
                       . 'ABCDEFGHIJKLMNOPQRSTUVWXYZ-_') x 4700, 0, 300000),
   'big: bytes unchanged');

# HTTP/1.0 clients get a close-delimited body

$raw = http_get('/bearer');
is(leaks($raw), 0, 'HTTP/1.0: no secret');
like($raw, qr/\[REDACTED\]/, 'HTTP/1.0: redacted');
$r = parse_response($raw);
is($r->{headers}{'content-length'}, length $r->{body},
   'HTTP/1.0: held body, exact Content-Length');

# routes without credentials are not touched

$r = parse_response(get11('/plain'));
is($r->{headers}{'content-length'}, length $r->{body},
   'plain: Content-Length kept');
is(echo_json($r->{body})->{path}, '/plain', 'plain: body as sent');

# an encoded body cannot be searched: 502

$raw = get11('/gzip');
$r = parse_response($raw);
is($r->{status}, 502, 'encoded body refused: 502');
is(json_body($raw) && json_body($raw)->{error}, 'bad_gateway',
   'encoded body refused: JSON error');
is(leaks($raw), 0, 'encoded body refused: no secret');

# every Content-Encoding the upstream sent counts, not only the last one,
# and so does a Transfer-Encoding that is not plain chunked

sub gunzipped {
    my ($raw) = @_;
    my ($head) = split /\r\n\r\n/, $raw, 2;
    my $body = parse_response($raw)->{body} // '';
    my $plain;

    if ($body =~ /^\x1f\x8b/) {
        gunzip(\$body => \$plain) or return "$head\n(bad gzip)";
        $body = $plain;
    }

    return "$head\n$body";
}

for my $x (qw(gzip-identity gzip-empty list te-gzip)) {
    $raw = get11("/enc/$x");
    $r = parse_response($raw);
    is($r->{status}, 502, "$x: refused, 502");
    is(leaks(gunzipped($raw)), 0, "$x: no secret, compressed or not");
}

for my $x (qw(identity te-chunked)) {
    $raw = get11("/enc/$x");
    $r = parse_response($raw);
    is($r->{status}, 200, "$x: passes");
    like($r->{body}, qr/\[REDACTED\]/, "$x: scrubbed");
}

# a body in UTF-16 (a client decodes it by its charset, or JSON by its
# NULs): the credential in it is found as well

for my $x (qw(utf16le utf16be utf16le-chunks utf16be-chunks)) {
    my $enc = $x =~ /le/ ? 'UTF-16LE' : 'UTF-16BE';
    $r = parse_response(get11("/enc/$x"));
    is($r->{status}, 200, "$x: 200");
    my $text = join '', map { decode($enc, $_) } split /\[REDACTED\]/,
        $r->{body} // '', -1;
    ok(index($r->{body} // '', '[REDACTED]') > 0 && index($text, $tok) < 0,
       "$x: redacted, no credential once decoded");
}

# logs

my $access = $t->read_file('airlock.log');
like($access, qr/^local bearer - [0-9a-f]{32} 1 200$/m,
     '$airlock_scrubbed is 1');
like($access, qr/^local plain - [0-9a-f]{32} 0 200$/m,
     '$airlock_scrubbed is 0');

my $log = $t->read_file('error.log');
like($log, qr/\[warn\].*airlock: scrubbed an injected credential from the (?#
              )response on route "bearer"/, 'warn line names the route');
is(leaks($log), 0, 'the error log holds no secret');
like($log, qr/\[error\].*airlock: upstream sent "Content-Encoding: gzip" (?#
              )on route "enc", a response that cannot be scrubbed/,
     'error line names the Content-Encoding');
like($log, qr/\[error\].*airlock: upstream sent "Transfer-Encoding: (?#
              )gzip, chunked" on route "enc"/,
     'error line names the Transfer-Encoding');

# an operator's log_format cannot print an injected credential
my $cred = $t->read_file('cred.log') // '';
ok(length $cred, 'a log_format with $http_authorization wrote lines');
is(leaks($cred), 0, '$http_authorization never shows the injected value');

is($t->error_log_check, '', 'no alerts');
