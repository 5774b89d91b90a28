#!/usr/bin/perl

# ngx_http_airlock_module: on a route that takes no body, a chunked body
# (an HTTP/2 body without a length) is refused at its first byte.  Only
# its end tells an empty one, which is no body, from one with bytes, so
# it is read; but a body with a byte was read to its end (up to
# client_max_body_size, past client_body_buffer_size into a temporary
# file) before it was refused, on every route that takes none.  It is
# now read unbuffered: the refusal comes after at most one buffer of it
# ($request_length), with no temporary file, and a chunk announced with
# bytes is refused before they come.  An empty body, whenever its end
# comes, is still allowed and forwarded as "Content-Length: 0", no byte.

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

# client_max_body_size as an operator raises it for routes with a body;
# a small buffer, so that a body read whole goes to a temporary file
$t->write_file_expand('nginx.conf', $p->conf(
    listen => $h2 ? 'listen 127.0.0.1:%%PORT_8082%% http2;' : '',
    http => <<'EOF',
    log_format length '$status $request_length';
    client_max_body_size 16m;
    client_body_buffer_size 8k;
    client_body_timeout 5s;
EOF
    server => 'access_log %%TESTDIR%%/length.log length;'));

$t->start_echo(8081);
$t->run;

plan tests => 20;

# the request length of the n-th request logged, once it is logged
sub logged_length {
    my ($n) = @_;
    my $deadline = time + 10;
    my @l;

    while (time < $deadline) {
        @l = split /\n/, $t->read_file('length.log') // '';
        last if @l >= $n;
        select(undef, undef, undef, 0.05);
    }

    return @l >= $n && $l[$n - 1] =~ /^\d+ (\d+)$/ ? $1 : undef;
}

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

my $head = "GET /items HTTP/1.1\r\nHost: localhost\r\n"
           . "Connection: close\r\nTransfer-Encoding: chunked\r\n\r\n";
my ($r, $before);

# HTTP/1.1: 2 MB in chunks of 4 KB, each under client_max_body_size

my $chunk = sprintf("%x\r\n", 4096) . ('x' x 4096) . "\r\n";

$before = $p->echo_count;
$r = parse_response(http($head . ($chunk x 512) . "0\r\n\r\n",
                         timeout => 30));
is($r->{status}, 403, 'chunked, 2 MB: 403');
like($r->{body} // '', qr/"reason":"body_too_large"/,
     'chunked, 2 MB: body_too_large');
is($p->echo_count, $before, 'chunked, 2 MB: not forwarded');

my $len = logged_length(1);
ok(defined $len && $len < 64 * 1024,
   'chunked, 2 MB: refused after at most a buffer of it')
    or diag('request length ' . ($len // 'not logged'));

# a chunk announced with bytes is refused before they come

$r = parse_response(http([ $head . "1000\r\n" ], timeout => 15));
is($r->{status}, 403, 'a chunk announced, no byte yet: 403');
like($r->{body} // '', qr/"reason":"body_too_large"/,
     'a chunk announced: body_too_large');

# an empty body whose end comes after the head: still no body

$before = $p->echo_count;
$r = parse_response(http([ $head, "0\r\n\r\n" ]));
is($r->{status}, 200, 'chunked, empty, its end later: 200');
empty_upstream('chunked, empty, its end later', $before);

# and the request after it on the connection is one of its own

$before = $p->echo_count;
(my $keep = $head) =~ s/Connection: close\r\n//;
my $raw = http([ $keep, "0\r\n\r\nGET /items HTTP/1.1\r\nHost: localhost\r\n"
                        . "Connection: close\r\n\r\n" ]);
my @status = ($raw // '') =~ m{^HTTP/1\.1 (\d{3})}mg;
is("@status", '200 200', 'chunked, empty later, then a request: two answers');
is($p->echo_count, $before + 2, 'chunked, empty later, then a request: sent');

# HTTP/2 (h2c, prior knowledge): HEADERS without END_STREAM, then DATA


# @data: what is written after the head, each a while after the one
# before, as DATA frames of stream 1 ([bytes, END_STREAM])
sub h2_get {
    my ($uri, @data) = @_;
    my $hpack = h2_hpack([ ':method', 'GET' ], [ ':scheme', 'http' ],
                         [ ':path', $uri ], [ ':authority', 'localhost' ]);
    my @parts = (h2_preface() . h2_frame(1, 4, 1, $hpack));
    push @parts, join '', map { h2_frame(0, $_->[1] ? 1 : 0, 1, $_->[0]) }
                              @$_
        for @data;
    return h2_stream(\@parts, wait => 15);
}

SKIP: {
    if (!$h2) {
        fail('nginx without http_v2_module') if $ENV{CI};
        skip 'nginx without http_v2_module', $ENV{CI} ? 6 : 7;
    }

    # 48 KB, within the stream's first window, and more to come

    $before = $p->echo_count;
    $r = h2_get('/items', [ [ 'x' x 16384 ], [ 'x' x 16384 ],
                            [ 'x' x 16384 ] ]);
    is($r->{status}, 403, 'HTTP/2, DATA and more to come: 403');
    like($r->{data}, qr/"reason":"body_too_large"/,
         'HTTP/2, DATA and more to come: body_too_large');
    is($p->echo_count, $before, 'HTTP/2, DATA and more to come: not sent');

    # an empty DATA frame that ends the stream, after the head

    $before = $p->echo_count;
    $r = h2_get('/items', [ [ '', 1 ] ]);
    is($r->{status}, 200, 'HTTP/2, an empty DATA frame later: 200');
    empty_upstream('HTTP/2, an empty DATA frame later', $before);

    $before = $p->echo_count;
    $r = h2_get('/items', [ [ '' ] ], [ [ '', 1 ] ]);
    is($r->{status}, 200, 'HTTP/2, two empty DATA frames later: 200');
    empty_upstream('HTTP/2, two empty DATA frames later', $before);
}

unlike($t->read_file('error.log') // '',
       qr/a client request body is buffered to a temporary file/,
       'no request body temporary file');

opendir(my $dh, $t->testdir . '/client_body_temp') or die "opendir: $!";
my @left = grep { !/^\.\.?$/ } readdir $dh;
closedir $dh;
is_deeply(\@left, [], 'nothing in client_body_temp_path');

is($t->error_log_check, '', 'no alerts');
