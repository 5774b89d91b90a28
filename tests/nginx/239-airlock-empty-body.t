#!/usr/bin/perl

# ngx_http_airlock_module: an empty body is no body.  On a route that
# takes none, a request framed for a body that turns out empty (HTTP/1.1
# "Transfer-Encoding: chunked" with only the last chunk, "0" CRLF CRLF;
# HTTP/2 HEADERS without END_STREAM, then an empty DATA frame that ends
# the stream) was refused body_too_large before its body was read.  It
# is now read, and decided as a request without a body, and forwarded as
# read: "Content-Length: 0", no Transfer-Encoding, no byte after the
# head, and the next request on the connection a request of its own.  A
# body with a byte is still refused, and nothing of it reaches the
# upstream.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Select;
use Test::More;
use Time::HiRes qw(time);
use Airlock::Test;
use Airlock::Proxy;
use Airlock::H2 qw(h2_frame h2_hpack h2_preface h2_stream);

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$t->write_file_expand('policy.yaml', <<'EOF');
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: items
    clients: [local]
    match: { method: GET, path: /items }
    upstream: echo
    to: /items
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

my $h2 = `'${\ $t->nginx_bin}' -V 2>&1` =~ /--with-http_v2_module/;

$t->write_file_expand('nginx.conf', $p->conf(
    listen => $h2 ? 'listen 127.0.0.1:%%PORT_8082%% http2;' : ''));

$t->start_echo(8081);
$t->run;

plan tests => 22;

# the headers and body the upstream got for the request it saw after
# the first $before, lower case; undef when it saw no other
sub seen_after {
    my ($before) = @_;
    my @seen = $t->echo_requests(8081);
    return undef unless @seen > $before;
    my %h;
    push @{$h{lc $_->[0]}}, $_->[1] for @{$seen[$before]{headers}};
    return { headers => \%h, body => $seen[$before]{body} // '' };
}

sub empty_upstream {
    my ($name, $before) = @_;
    my $u = seen_after($before);

    ok($u && "@{$u->{headers}{'content-length'} // []}" eq '0'
       && !$u->{headers}{'transfer-encoding'}
       && $u->{body} eq '',
       "$name: an empty body upstream, Content-Length: 0")
        or diag(explain($u));
}

my ($r, $before);

# HTTP/1.1, chunked, only the last chunk

$before = $p->echo_count;
$r = parse_response(http("GET /items HTTP/1.1\r\nHost: localhost\r\n"
                         . "Connection: close\r\n"
                         . "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"));
is($r->{status}, 200, 'chunked, empty: 200');
is($p->echo_count, $before + 1, 'chunked, empty: forwarded');
empty_upstream('chunked, empty', $before);

# the same with a trailer section and a chunk extension

$before = $p->echo_count;
$r = parse_response(http("GET /items HTTP/1.1\r\nHost: localhost\r\n"
                         . "Connection: close\r\n"
                         . "Transfer-Encoding: chunked\r\n\r\n"
                         . "0;x=1\r\nX-Trailer: a\r\n\r\n"));
is($r->{status}, 200, 'chunked, empty, a trailer: 200');
is($p->echo_count, $before + 1, 'chunked, empty, a trailer: forwarded');
empty_upstream('chunked, empty, a trailer', $before);

# keep-alive: the empty body's framing is read, and the next request on
# the connection is a request of its own

$before = $p->echo_count;
my $raw = http("GET /items HTTP/1.1\r\nHost: localhost\r\n"
               . "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
               . "GET /items HTTP/1.1\r\nHost: localhost\r\n"
               . "Connection: close\r\n\r\n");
my @status = $raw =~ m{^HTTP/1\.1 (\d{3})}mg;
is("@status", '200 200', 'chunked, empty, then a request: two answers');
is($p->echo_count, $before + 2, 'chunked, empty, then a request: both sent');

# a chunked body with a byte is refused, and not sent

$before = $p->echo_count;
$r = parse_response(http("GET /items HTTP/1.1\r\nHost: localhost\r\n"
                         . "Connection: close\r\n"
                         . "Transfer-Encoding: chunked\r\n\r\n"
                         . "1\r\nx\r\n0\r\n\r\n"));
is($r->{status}, 403, 'chunked, a byte: 403');
like($r->{body} // '', qr/"reason":"body_too_large"/,
     'chunked, a byte: body_too_large');
is($p->echo_count, $before, 'chunked, a byte: not forwarded');

# Content-Length as before: 0 passes; more is refused
# before the body is read

$before = $p->echo_count;
$r = parse_response(http("GET /items HTTP/1.1\r\nHost: localhost\r\n"
                         . "Connection: close\r\n"
                         . "Content-Length: 0\r\n\r\n"));
is($r->{status}, 200, 'Content-Length: 0: 200');
empty_upstream('Content-Length: 0', $before);

$before = $p->echo_count;
$r = parse_response(http("GET /items HTTP/1.1\r\nHost: localhost\r\n"
                         . "Connection: close\r\n"
                         . "Content-Length: 1\r\n\r\nx"));
is($r->{status}, 403, 'Content-Length: 1: 403');
is($p->echo_count, $before, 'Content-Length: 1: not forwarded');

# HTTP/2 (h2c, prior knowledge): HEADERS without END_STREAM, then DATA
# with END_STREAM


sub h2_get {
    my ($uri, $data) = @_;
    my $hpack = h2_hpack([ ':method', 'GET' ], [ ':scheme', 'http' ],
                         [ ':path', $uri ], [ ':authority', 'localhost' ]);
    return h2_stream([ h2_preface() . h2_frame(1, 4, 1, $hpack)
                       . h2_frame(0, 1, 1, $data) ]);
}

SKIP: {
    if (!$h2) {
        fail('nginx without http_v2_module') if $ENV{CI};
        skip 'nginx without http_v2_module', $ENV{CI} ? 5 : 6;
    }

    $before = $p->echo_count;
    $r = h2_get('/items', '');
    is($r->{status}, 200, 'HTTP/2, an empty DATA frame: 200');
    is($p->echo_count, $before + 1, 'HTTP/2, an empty DATA frame: forwarded');
    empty_upstream('HTTP/2, an empty DATA frame', $before);

    $before = $p->echo_count;
    $r = h2_get('/items', 'x');
    is($r->{status}, 403, 'HTTP/2, a DATA frame with a byte: 403');
    like($r->{data}, qr/"reason":"body_too_large"/,
         'HTTP/2, a byte: body_too_large');
    is($p->echo_count, $before, 'HTTP/2, a byte: not forwarded');
}

is($t->error_log_check, '', 'no alerts');
