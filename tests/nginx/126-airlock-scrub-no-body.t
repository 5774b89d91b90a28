#!/usr/bin/perl

# ngx_http_airlock_module: answers without a body are scrubbed too.  A
# HEAD, a 204 and a 304 whose upstream echoes the credential in a header
# (raw, in base64, in hex) give the client "[REDACTED]" there, the body
# stays empty (nginx drops what an upstream sends after such an answer's
# headers), and the connection goes on to serve the next request.

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

my $tok = 'ghp_FAKE-n0b0dy-S33s-This-01234';
my $sealed = $p->seal($tok);
my %form = (
    raw => $tok,
    b64 => encode_base64("Bearer $tok", ''),
    hex => join(' ', map { sprintf '%02x', ord } split //, $tok),
);

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  tok: { sealed: "$sealed" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: bare
    clients: [local]
    match: { method: [GET, HEAD], path: /bare }
    upstream: echo
    to: /bare
    query: { allow: [status, f] }
    inject: { Authorization: "Bearer {tok}" }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf(http => <<"EOF",
    map \$arg_f \$echo_leak {
        default "";
        raw "X-Leak: $form{raw}";
        b64 "X-Leak: $form{b64}";
        hex "X-Leak: $form{hex}";
    }
EOF
                                             location => <<'EOF'));
            proxy_set_header X-Echo-Header $echo_leak;
            proxy_set_header X-Echo-Status $arg_status;
EOF

$t->start_echo(8081);
$t->run;

for my $f (sort keys %form) {
    for my $case ([HEAD => ''], [GET => 204], [GET => 304]) {
        my ($method, $status) = @$case;
        my $name = "$method" . ($status ? " $status" : '') . ", $f";

        # two requests on one connection: the first answer ends where
        # its headers do

        my $req = "$method /bare?status=$status&f=$f HTTP/1.1\r\n"
                . "Host: localhost\r\n";
        my $raw = $t->http("$req\r\n$req" . "Connection: close\r\n\r\n",
                           timeout => 10);
        my @answers = split /(?=^HTTP\/1\.1 )/m, $raw;

        is(scalar @answers, 2, "$name: two answers on one connection");

        my $r = parse_response($answers[0] // '');
        is($r->{status}, $status || 200, "$name: status");
        is($r->{headers}{'x-leak'}, '[REDACTED]', "$name: header scrubbed");
        is($r->{body}, '', "$name: no body");
        ok(index($raw, $form{$f}) < 0 && index($raw, $tok) < 0,
           "$name: not in the response");
    }
}

my $log = $t->read_file('error.log');
like($log, qr/scrubbed an injected credential from the response on (?#
              )route "bare"/, 'error log: the scrub is reported');
ok(index($log, $tok) < 0, 'error log: no secret');

is($t->error_log_check, '', 'no alerts or sanitizer reports');

done_testing();
