#!/usr/bin/perl

# ngx_http_airlock_module: the upstream's trailers are scrubbed.  From
# nginx 1.27.2 "proxy_pass_trailers on" hands a chunked upstream's
# trailers to the client, after the body: the header filter has long run
# by then, so an upstream that echoed the injected credential in a
# trailer (its value, or its name) handed it on whole.  They are scrubbed
# as headers are when the last buffer passes the body filter.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use MIME::Base64 qw(encode_base64);
use Test::More;
use Airlock::Test;
use Airlock::Proxy;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;

# The directive is nginx's, from 1.27.2.  An older nginx (Debian 12 has
# 1.22) must refuse it at nginx -t: then this path to the client does not
# exist there, and that is what is checked.
my ($v) = (`@{[ $t->nginx_bin ]} -v 2>&1` // '') =~ m{nginx/(\d+\.\d+\.\d+)};
my @v = split /\./, $v // '0.0.0';
my $old = $v[0] * 1000000 + $v[1] * 1000 + $v[2] < 1027002;

my $p = Airlock::Proxy->new($t);

$p->keygen;

my $tok = 's3cr3t-token-XYZ-0123456789';
my $sealed = $p->seal($tok);

# The upstream: tests/lib/raw-upstream.pl answers what X-Raw holds.

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  tok: { sealed: "$sealed" }
upstreams:
  raw: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: bearer
    clients: [local]
    match: { method: GET, path: "/{x}" }
    params: { x: '^[a-z0-9]+\$' }
    upstream: raw
    to: "/{x}"
    inject: { Authorization: "Bearer {tok}" }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

my $answer = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
    . "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    . "5\r\nhello\r\n0\r\n"
    . "X-Echo: %AUTH%\r\nX-Tok: a%TOK%b\r\nX-%TOK%: v\r\nX-Plain: kept\r\n\r\n";

$t->write_file_expand('nginx.conf', $p->conf(
    location => "proxy_pass_trailers on;\n"
        . "            proxy_set_header X-Raw \""
        . encode_base64($answer, '') . "\";"));

if ($old) {
    my ($rc, $out) = $t->reload_test;
    plan tests => 1;
    ok($rc != 0 && $out =~ /unknown directive "proxy_pass_trailers"/,
       "nginx $v refuses proxy_pass_trailers: the path it opens is not there")
        or diag($out);
    exit 0;
}

$t->run_daemon($^X, "$FindBin::Bin/../lib/raw-upstream.pl",
              $t->port(8081));
$t->wait_for_port(8081) or die 'raw upstream did not start';
$t->run;

plan tests => 7;

my $raw = $t->http("GET /a HTTP/1.1\r\nHost: localhost\r\nTE: trailers\r\n"
                   . "Connection: close\r\n\r\n") // '';
my $r = parse_response($raw);

is($r->{status}, 200, 'trailers: 200');
like($raw, qr/\r\nX-Plain: kept\r\n/i, 'the trailers went to the client');
ok(index($raw, $tok) < 0, 'no credential in the response')
    or diag($raw);
like($raw, qr/\r\nX-Echo: \[REDACTED\]\r\n/i, 'a trailer value: redacted');
like($raw, qr/\r\nX-Tok: a\[REDACTED\]b\r\n/i, 'inside a value: redacted');
unlike($raw, qr/\r\nX-[^:\r\n]*\Q@{[ substr($tok, 0, 6) ]}/i,
       'a trailer whose name holds the credential is not sent');

my $access = $t->read_file('airlock.log');
like($access, qr/^local bearer - [0-9a-f]{32} 1 200$/m,
     '$airlock_scrubbed is 1');
