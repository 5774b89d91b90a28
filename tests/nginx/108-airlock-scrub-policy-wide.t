#!/usr/bin/perl

# ngx_http_airlock_module: a scrubbed response is searched for every
# credential the proxy holds, not only its own route's.  Each route's
# list held the strings of the headers it injects, so an upstream that had
# another route's credential (the same upstream behind two routes, a log
# line, an inspector of the requests it got) handed it to a client on a
# route whose list did not hold it, raw or encoded.

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
my $p = Airlock::Proxy->new($t);

$p->keygen;

my $ta = 'route-a-token-AAAA-0123456789';
my $tb = 'route-b-token-BBBB-9876543210';
my $tc = 'unused-secret-CCCC-5555555555';
my ($sa, $sb, $sc) = map { $p->seal($_) } $ta, $tb, $tc;

# tests/lib/raw-upstream.pl answers what X-Raw holds

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  ta: { sealed: "$sa" }
  tb: { sealed: "$sb" }
  tc: { sealed: "$sc" }
upstreams:
  raw: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: a
    clients: [local]
    match: { method: GET, path: "/a/{x}" }
    params: { x: '^[a-z0-9]+\$' }
    upstream: raw
    to: "/{x}"
    query: { allow: [r] }
    inject: { Authorization: "Bearer {ta}" }
  - name: b
    clients: [local]
    match: { method: GET, path: "/b/{x}" }
    params: { x: '^[a-z0-9]+\$' }
    upstream: raw
    to: "/{x}"
    query: { allow: [r] }
    inject: { X-Api-Key: "{tb}" }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

sub answer {
    my ($body, $header) = @_;
    $header = defined $header ? "X-Echo: $header\r\n" : '';
    return "HTTP/1.1 200 OK\r\n${header}Content-Length: " . length($body)
        . "\r\nConnection: close\r\n\r\n$body";
}

my %raw = (
    other => answer("seen: $tb"),
    other_bearer => answer("seen: Bearer $ta"),
    other_b64 => answer('seen: ' . encode_base64($tb, '')),
    other_json => answer('{"seen":"' . join('', map { sprintf '\\u%04x', ord }
                                                split //, $tb) . '"}'),
    other_header => answer('ok', $tb),
    unused => answer("seen: $tc"),
    # read to the close: the key is longer than "%TOK%"
    own => "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nseen: %TOK%",
);

my $map = join '', map {
    "        $_ \"" . encode_base64($raw{$_}, '') . "\";\n"
} sort keys %raw;

$t->write_file_expand('nginx.conf', $p->conf(
    http => "    map \$arg_r \$raw_answer {\n        default \"\";\n"
        . "$map    }\n",
    location => "proxy_set_header X-Raw \$raw_answer;"));

$t->run_daemon($^X, "$FindBin::Bin/../lib/raw-upstream.pl",
               $t->port(8081));
$t->wait_for_port(8081) or die 'raw upstream did not start';
$t->run;

my $r = parse_response($t->http_get('/a/x?r=other'));
is($r->{status}, 200, 'route a, its upstream has route b\'s key: 200');
is($r->{body}, 'seen: [REDACTED]', 'route b\'s key redacted on route a');

$r = parse_response($t->http_get('/b/x?r=other_bearer'));
is($r->{body}, 'seen: [REDACTED]',
   'route a\'s "Bearer key" redacted on route b');

$r = parse_response($t->http_get('/a/x?r=other_b64'));
is($r->{body}, 'seen: [REDACTED]', 'route b\'s key in base64 redacted');

$r = parse_response($t->http_get('/a/x?r=other_json'));
is($r->{body}, '{"seen":"[REDACTED]"}',
   'route b\'s key JSON-escaped redacted');

$r = parse_response($t->http_get('/a/x?r=other_header'));
is($r->{headers}{'x-echo'}, '[REDACTED]',
   'route b\'s key in a response header redacted');

$r = parse_response($t->http_get('/a/x?r=unused'));
is($r->{body}, 'seen: [REDACTED]',
   'a secret no route injects is redacted too');

$r = parse_response($t->http_get('/b/x?r=own'));
is($r->{body}, 'seen: [REDACTED]', 'a route\'s own key: redacted as before');

for my $k ($ta, $tb, $tc) {
    unlike($t->read_file('access.log') . $t->read_file('error.log'),
           qr/\Q$k\E/, 'no key in the logs');
}

is($t->error_log_check, '', 'no alerts or sanitizer reports');

done_testing();
