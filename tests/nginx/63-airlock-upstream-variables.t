#!/usr/bin/perl

# nginx's $upstream_http_NAME (and $upstream_trailer_NAME,
# $upstream_cookie_NAME) read the upstream's answer as it came, before the
# scrubber.  In a request the scrubber covers they are scrubbed too, so an
# add_header, a map or a log_format that prints one hands on no credential
# the upstream echoed: here the echo upstream returns the injected
# Authorization as X-Echo-Authorization.  A request the scrubber does not
# cover (another location, no credential) reads them unchanged.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;
my $tok = 'answer-variable-secret-0123456789';
my $sealed = $p->seal($tok);

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  tok: { sealed: "$sealed" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
alerts:
  deny: { threshold: 1000, window: 60s }
routes:
  - name: reflect
    clients: [local]
    match: { method: GET, path: /reflect }
    upstream: echo
    to: /__reflect-headers/reflect
    inject: { Authorization: "Bearer {tok}" }
  - name: fail
    clients: [local]
    match: { method: GET, path: /fail }
    upstream: echo
    to: /__reflect-headers/fail
    inject: { Authorization: "Bearer {tok}", X-Echo-Status: "502" }
EOF

$t->write_file_expand('nginx.conf', $p->conf(
    http => <<'EOF',
    log_format answer 'up=$upstream_http_x_echo_authorization '
                      'mapped=$echoed sent=$sent_http_x_echo_authorization';

    map $upstream_http_x_echo_authorization $echoed {
        default $upstream_http_x_echo_authorization;
    }
EOF
    server => <<'EOF',
        add_header X-Err $upstream_http_x_echo_authorization always;
EOF
    location => <<'EOF',
            proxy_intercept_errors on;
            add_header X-Copy $upstream_http_x_echo_authorization always;
            add_header X-Mapped $echoed always;
            access_log %%TESTDIR%%/answer.log answer;
EOF
    locations => <<'EOF'));
        location = /plain {
            proxy_pass http://127.0.0.1:%%PORT_8081%%/__reflect-headers/p;
            proxy_set_header Authorization "Bearer plain-value";
            add_header X-Copy $upstream_http_x_echo_authorization always;
            access_log %%TESTDIR%%/plain.log answer;
        }
EOF

$t->write_file('answer.log', '');
$t->write_file('plain.log', '');
$t->start_echo(8081);
$t->run;

plan tests => 11;

my $raw = $t->http("GET /reflect HTTP/1.1\r\nHost: localhost\r\n"
                   . "Connection: close\r\n\r\n");

like($raw, qr{^HTTP/1\.1 200}, 'the route answers');
ok(index($raw, $tok) < 0, 'no credential in the answer') or diag $raw;
like($raw, qr/^X-Copy: \[REDACTED\]\r$/m,
     'add_header $upstream_http_NAME: scrubbed');
like($raw, qr/^X-Mapped: \[REDACTED\]\r$/m,
     'add_header with a map of it: scrubbed');

# the log phase runs after the client has the answer
my $line = '';
for my $try (1 .. 250) {
    ($line) = grep { length } split /\n/, $t->read_file('answer.log') // '';
    last if defined $line;
    sleep 0.02;
}
$line //= '';
ok(index($line, $tok) < 0, 'no credential in the access log') or diag $line;
like($line, qr/^up=\[REDACTED\] mapped=\[REDACTED\] /,
     'log_format $upstream_http_NAME and the map: scrubbed');
like($line, qr/sent=\[REDACTED\]$/,
     'log_format $sent_http_NAME: what was sent');

# the upstream's 502 goes to the error page's location (an internal
# redirect), whose add_header reads the upstream's headers too
$raw = $t->http("GET /fail HTTP/1.1\r\nHost: localhost\r\n"
                . "Connection: close\r\n\r\n");
like($raw, qr{^HTTP/1\.1 502}, 'the error page answers');
ok(index($raw, $tok) < 0 && $raw =~ /^X-Err: \[REDACTED\]\r$/m,
   'the error page\'s add_header: scrubbed') or diag $raw;

# a location the scrubber does not cover reads the upstream's headers as
# they came
$raw = $t->http("GET /plain HTTP/1.1\r\nHost: localhost\r\n"
                . "Connection: close\r\n\r\n");
like($raw, qr/^X-Copy: Bearer plain-value\r$/m,
     'outside Airlock: $upstream_http_NAME unchanged');

is($t->error_log_check(qr/scrubbed an injected credential/), '',
   'no alerts or sanitizer reports');
