#!/usr/bin/perl

# ngx_http_airlock_module: a request whose body nginx began to throw away
# before the decision.  A Content-Length over client_max_body_size is
# answered 413 in nginx's find-config phase, which starts discarding the
# body; an error_page to a named location that forwards then brings the
# request, undecided, to the preaccess phase.  The body is gone unchecked,
# and the proxy module would write the Content-Length left to discard with
# no body after it: the upstream would take whatever it is sent next on
# the connection for the rest of this request.  Airlock answers the error
# (413, the status nginx gave) and nothing reaches the upstream.  A
# chunked body has no length to refuse it by there: the route reads it and
# nginx refuses it then (42-airlock-body-error.t), with the same answer.
# Over HTTP/2 nginx skips the stream's DATA instead, and its read hands
# over no body at once, however soon the body came: the same again.  A
# body another location read first (proxy_request_buffering off, to an
# upstream that failed) is no longer there either: whatever is left
# is not the length announced, and the request is refused (500).

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
  up: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: unbuffered
    clients: [local]
    match: { method: POST, path: /unbuffered/raw }
    upstream: up
    to: /raw
    body: { max_bytes: 60000 }
  - name: raw
    clients: [local]
    match: { method: POST, path: /raw }
    upstream: up
    to: /raw
    body: { max_bytes: 60000 }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

my $h2 = `'${\ $t->nginx_bin}' -V 2>&1` =~ /--with-http_v2_module/;

my $conf = <<'EOF';
%%TEST_GLOBALS%%

http {
    %%TEST_GLOBALS_HTTP%%

    airlock_policy policy.yaml;

    client_body_buffer_size 64k;

    server {
        listen 127.0.0.1:%%PORT_8080%%;
        %%H2_LISTEN%%
        server_name localhost;

        location / {
            airlock on;
            %%AIRLOCK_LOCATION%%
            client_max_body_size 10;
            proxy_read_timeout 3s;
            error_page 413 @retry;
        }

        location /unbuffered/ {
            proxy_pass http://127.0.0.1:%%PORT_8083%%/;
            proxy_request_buffering off;
            proxy_http_version 1.1;
            error_page 502 @retry;
        }

        location @retry {
            airlock on;
            %%AIRLOCK_LOCATION%%
            proxy_read_timeout 3s;
        }
    }
}
EOF

$conf =~ s{%%H2_LISTEN%%}
          {$h2 ? 'listen 127.0.0.1:%%PORT_8082%% http2;' : ''}e;
$t->write_file_expand('nginx.conf', $conf);

# an upstream that writes down each request's head and the body bytes
# that follow it within a moment, and answers at once

$t->write_file('upstream.pl', <<'EOF');
use strict;
use warnings;
use IO::Select;
use IO::Socket::INET;
$SIG{CHLD} = 'IGNORE';
my ($port, $log) = @ARGV;
my $l = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $port,
                              Listen => 64, ReuseAddr => 1) or die "$!";
while (my $c = $l->accept) {
    if (fork) { close $c; next; }
    my $req = '';
    while ($req !~ /\r\n\r\n/) {
        sysread($c, $req, 65536, length $req) or exit 0;
    }
    my $sel = IO::Select->new($c);
    while ($sel->can_read(0.5)) {
        sysread($c, $req, 65536, length $req) or last;
    }
    open my $f, '>>', $log or die "$!";
    (my $line = $req) =~ s/([^\x20-\x7e])/sprintf '\\x%02x', ord $1/ge;
    print $f "$line\n";
    close $f;
    syswrite($c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                 . "Connection: close\r\n\r\nok");
    exit 0;
}
EOF

# a server that reads what it gets, then hangs up: nginx answers 502

$t->write_file('closer.pl', <<'EOF');
use strict;
use warnings;
use IO::Socket::INET;
my $l = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $ARGV[0],
                              Listen => 64, ReuseAddr => 1) or die "$!";
while (my $c = $l->accept) {
    my $b;
    sysread($c, $b, 65536);
    close $c;
}
EOF

$t->run_daemon($^X, $t->testdir . '/closer.pl', $t->port(8083));
$t->wait_for_port(8083) or die "closer did not start";

my $log = $t->testdir . '/upstream.log';
$t->write_file('upstream.log', '');
$t->run_daemon($^X, $t->testdir . '/upstream.pl', $t->port(8081), $log);
$t->wait_for_port(8081) or die "upstream did not start";

$t->run;

plan tests => 14;

sub seen { grep { length } split /\n/, $t->read_file('upstream.log') }

# the headers first, the body a moment later: nginx is still discarding it
# when the error page runs

sub late {
    my ($head, $body) = @_;
    return parse_response(http([ $head, $body ], pause => 0.3,
                               timeout => 8));
}

my $r;

$r = late("POST /raw HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
          . "Content-Length: 50\r\n\r\n", 'x' x 50);
is($r->{status}, 413, 'Content-Length over the limit, body late: 413');
like($r->{body} // '', qr/"error":"body_too_large"/,
     'Content-Length over the limit: the JSON error');

$r = late("POST /raw HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
          . "Transfer-Encoding: chunked\r\n\r\n",
          sprintf("%x\r\n%s\r\n0\r\n\r\n", 50, 'x' x 50));
is($r->{status}, 413, 'chunked body over the limit: 413');

# the body read by another location, unbuffered, before the decision

$r = late("POST /unbuffered/raw HTTP/1.1\r\nHost: localhost\r\n"
          . "Connection: close\r\nContent-Length: 50\r\n\r\n", 'y' x 50);
is($r->{status}, 500, 'body read by another location first: 500');

# HTTP/2, headers and body in one write (h2c, prior knowledge): the
# answer's :status, written as nginx writes one not in HPACK's table
# (index 8, the three digits raw), and its DATA


sub h2_post {
    my ($uri, $body) = @_;
    my $hpack = h2_hpack([ ':method', 'POST' ], [ ':scheme', 'http' ],
                         [ ':path', $uri ], [ ':authority', 'localhost' ],
                         [ 'content-length', length $body ]);
    return h2_stream([ h2_preface() . h2_frame(1, 4, 1, $hpack)
                       . h2_frame(0, 1, 1, $body) ]);
}

SKIP: {
    skip 'nginx without http_v2_module', 2 unless $h2;

    $r = h2_post('/raw', 'x' x 50);
    is($r->{status}, 413, 'HTTP/2, over the limit: 413');
    like($r->{data}, qr/"error":"body_too_large"/, 'HTTP/2: the JSON error');
}

is(scalar(seen()), 0, 'the upstream saw none of them')
    or diag(join "\n", seen());

# the whole body already read and thrown away: nothing is left to
# announce, and the empty body checked is the one forwarded

$r = parse_response(http("POST /raw HTTP/1.1\r\nHost: localhost\r\n"
                         . "Connection: close\r\nContent-Length: 50\r\n\r\n"
                         . ('x' x 50), timeout => 8));
like($r->{status} // '', qr/^(?:200|413)$/,
     'body read whole and discarded: answered');
my @seen = seen();
my $crlf = qr/\\x0d\\x0a/;
ok(!@seen || $seen[-1] =~ /Content-Length: 0$crlf(?:.*$crlf)?$crlf\z/,
   'body read whole and discarded: no body announced')
    or diag($seen[-1]);

# a body within the limit is decided and forwarded as it is

my $n = seen();
$r = late("POST /raw HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
          . "Content-Length: 5\r\n\r\n", 'hello');
is($r->{status}, 200, 'a body within the limit: 200');
like((seen())[-1] // '',
     qr/Content-Length: 5\\x0d\\x0a(?:.*\\x0d\\x0a)?\\x0d\\x0ahello$/,
     'a body within the limit: the bytes checked, once')
    or diag((seen())[-1]);

SKIP: {
    skip 'nginx without http_v2_module', 1 unless $h2;

    is(h2_post('/raw', 'hello')->{status}, 200,
       'HTTP/2, a body within the limit: 200');
}

like($t->read_file('error.log'),
     qr/the request body is \d+ bytes, not the 50 announced/,
     'body read by another location first: logged');

is($t->error_log_check, '', 'no alerts');
