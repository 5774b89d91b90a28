#!/usr/bin/perl

# ngx_http_airlock_module: a request body nginx fails to read (a chunked
# body over client_max_body_size, a bad chunk) with "airlock on" at the
# server level and an error_page that points at a location inheriting it.
# The error page runs the access phases again while Airlock still waits
# for the body; every such request must be answered, and the connection
# closed, since the rest of the body was never read.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Select;
use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$t->write_file_expand('policy.yaml', <<'EOF');
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: raw
    clients: [local]
    match: { method: POST, path: /raw }
    upstream: echo
    to: /raw
    body: { max_bytes: 1000 }
  - name: named
    clients: [local]
    match: { method: POST, path: /named/raw }
    upstream: echo
    to: /raw
    body: { max_bytes: 1000 }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

$t->write_file_expand('nginx.conf', <<'EOF');
%%TEST_GLOBALS%%

http {
    %%TEST_GLOBALS_HTTP%%

    airlock_policy policy.yaml;

    server {
        listen 127.0.0.1:%%PORT_8080%%;
        server_name localhost;

        airlock on;
        client_max_body_size 100;
        client_body_buffer_size 1k;

        location / {
            %%AIRLOCK_LOCATION%%
            error_page 400 413 /error;
        }

        location = /error {
            airlock_error_json;
        }

        location /named/ {
            %%AIRLOCK_LOCATION%%
            error_page 400 413 @error;
        }

        location @error {
            airlock_error_json;
        }
    }
}
EOF

$t->start_echo(8081);
$t->run;

plan tests => 14;

my $head = "POST /raw HTTP/1.1\r\nHost: localhost\r\n"
         . "Transfer-Encoding: chunked\r\n\r\n";

# the headers first, the body a moment later: nginx reads it, and fails,
# after the access phase handler has returned

sub send_late {
    my ($uri, $body) = @_;
    (my $h = $head) =~ s{^POST /raw }{POST $uri };
    my $s = http([ $h, $body ], start => 1, pause => 0.2)
        or return (undef, undef);
    my $raw = http(undef, socket => $s, one => 1);
    my $more = '';
    my $eof = IO::Select->new($s)->can_read(30)
              && defined sysread($s, $more, 1) && !length $more;
    close $s;
    return ($raw, $eof);
}

my ($raw, $eof, $r);

($raw, $eof) = send_late('/raw', sprintf("%x\r\n%s\r\n", 200, 'x' x 200));
$r = parse_response($raw);
is($r->{status}, 413, 'chunked body over the limit: answered 413');
like($r->{body} // '', qr/"error":"body_too_large"/,
     'chunked body over the limit: the JSON error');
ok($eof, 'chunked body over the limit: connection closed');

($raw, $eof) = send_late('/raw', "zz\r\nxx\r\n");
$r = parse_response($raw);
is($r->{status}, 400, 'bad chunk: answered 400');
like($r->{body} // '', qr/"error":"bad_request"/, 'bad chunk: the JSON error');
ok($eof, 'bad chunk: connection closed');

# the body in the same packet as the headers: read at once

$raw = http($head . sprintf("%x\r\n%s\r\n", 200, 'x' x 200));
$r = parse_response($raw);
is($r->{status}, 413, 'at once, over the limit: 413');
like($r->{body} // '', qr/"error":"body_too_large"/,
     'at once, over the limit: the JSON error');

# a named location as the error page

($raw, $eof) = send_late('/named/raw',
                         sprintf("%x\r\n%s\r\n", 200, 'x' x 200));
$r = parse_response($raw);
is($r->{status}, 413, 'named error page: answered 413');
ok($eof, 'named error page: connection closed');

($raw, $eof) = send_late('/named/raw', "zz\r\nxx\r\n");
is(parse_response($raw)->{status}, 400, 'named error page, bad chunk: 400');

# nothing reached the upstream, and a good body still passes

is($p->echo_count, 0, 'the upstream saw none of them');

(my $close = $head) =~ s/\r\n\r\n$/\r\nConnection: close\r\n\r\n/;
$raw = http([ $close, "5\r\nhello\r\n0\r\n\r\n" ], pause => 0.2);
is(parse_response($raw)->{status}, 200, 'a good chunked body: 200');

is($t->error_log_check, '', 'no alerts');
