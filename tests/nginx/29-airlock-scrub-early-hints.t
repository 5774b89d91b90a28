#!/usr/bin/perl

# ngx_http_airlock_module: an upstream's 103 Early Hints are scrubbed.
# From nginx 1.29.0, "early_hints" (here or inherited from the server or
# http level) sends the headers of an upstream's 103 to the client at
# once, through a filter chain of their own that the scrubbing header
# filter was not on, so an upstream that echoed the injected credential in
# one (a Link, any header, or a header's name) handed it on whole, before
# the final answer.  The module's early-hints filter scrubs them as it
# scrubs the final headers.

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

# The directive is nginx's, from 1.29.0.  An older nginx (Debian 12 has
# 1.22) must refuse it at nginx -t: then this path to the client does not
# exist there, and that is what is checked.
my ($v) = (`@{[ $t->nginx_bin ]} -v 2>&1` // '') =~ m{nginx/(\d+\.\d+\.\d+)};
my @v = split /\./, $v // '0.0.0';
my $old = $v[0] * 1000000 + $v[1] * 1000 + $v[2] < 1029000;

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

my $answer = "HTTP/1.1 103 Early Hints\r\nLink: </s.css?k=%TOK%>; rel=preload\r\n"
    . "X-Echo: %AUTH%\r\nX-%TOK%: v\r\nX-Plain: kept\r\n\r\n"
    . "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
    . "Content-Length: 5\r\nConnection: close\r\n\r\nhello";

$t->write_file_expand('nginx.conf', $p->conf(
    location => "early_hints 1;\n"
        . "            proxy_set_header X-Raw \""
        . encode_base64($answer, '') . "\";"));

if ($old) {
    my ($rc, $out) = $t->reload_test;
    plan tests => 1;
    ok($rc != 0 && $out =~ /unknown directive "early_hints"/,
       "nginx $v refuses early_hints: the path it opens is not there")
        or diag($out);
    exit 0;
}

$t->run_daemon($^X, "$FindBin::Bin/../lib/raw-upstream.pl",
              $t->port(8081));
$t->wait_for_port(8081) or die 'raw upstream did not start';
$t->run;

plan tests => 8;

my $raw = $t->http("GET /a HTTP/1.1\r\nHost: localhost\r\n"
                   . "Connection: close\r\n\r\n") // '';
my ($hints) = $raw =~ /^(HTTP\/1\.1 103 .*?\r\n\r\n)/s;
$hints //= '';

like($raw, qr/\r\n\r\nHTTP\/1\.1 200 /, 'the final answer: 200');
like($hints, qr/\r\nX-Plain: kept\r\n/i, 'the early hints went to the client');
ok(index($raw, $tok) < 0, 'no credential in the response')
    or diag($raw);
like($hints, qr/\r\nX-Echo: \[REDACTED\]\r\n/i, 'a header value: redacted');
like($hints, qr/\r\nLink: <\/s\.css\?k=\[REDACTED\]>; rel=preload\r\n/i,
     'a Link: redacted');
unlike($hints, qr/\r\nX-[^:\r\n]*\Q@{[ substr($tok, 0, 6) ]}/i,
       'a header whose name holds the credential is not sent');
like(parse_response($raw =~ s/^HTTP\/1\.1 103 .*?\r\n\r\n//sr)->{body},
     qr/^hello$/, 'the final body');

my $access = $t->read_file('airlock.log');
like($access, qr/^local bearer - [0-9a-f]{32} 1 200$/m,
     '$airlock_scrubbed is 1');
