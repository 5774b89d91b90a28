#!/usr/bin/perl

# ngx_http_airlock_module: a route's secret of 32 bytes or more that an
# upstream echoes cut short (less its last few characters, as a log
# viewer cut at its column writes it) or split in two with something
# between (a wrapped line) does not reach the client whole: the first
# and last halves of each such secret are scrubbed (AL_SCRUB_HALF), as
# an llm key's are.  Before, only llm keys were listed by halves, so a
# GitHub token less one character passed.  A part shorter than half (a
# "ghp_...xyz" naming the token) and a short secret's half still pass.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use MIME::Base64 qw(encode_base64);
use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;

# made up, of a real kind's shape (FAKE in each): neither is a key
my $gh = 'ghp_FAKEabcdefghijklmnopqrstuvwxyz012345';           # 40 bytes
my $pw = 'FAKE-password-0123456789';                           # 24 bytes
my ($sg, $sp) = ($p->seal($gh), $p->seal($pw));

# tests/lib/raw-upstream.pl answers what X-Raw holds

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  gh: { sealed: "$sg" }
  pw: { sealed: "$sp" }
upstreams:
  raw: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: gh
    clients: [local]
    match: { method: GET, path: "/gh/{x}" }
    params: { x: '^[a-z0-9]+\$' }
    upstream: raw
    to: "/{x}"
    query: { allow: [r] }
    inject: { Authorization: "Bearer {gh}" }
  - name: pw
    clients: [local]
    match: { method: GET, path: "/pw/{x}" }
    params: { x: '^[a-z0-9]+\$' }
    upstream: raw
    to: "/{x}"
    query: { allow: [r] }
    inject: { Authorization: "Basic {pw|base64}" }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

sub answer {
    my ($body) = @_;
    return "HTTP/1.1 200 OK\r\nContent-Length: " . length($body)
        . "\r\nConnection: close\r\n\r\n$body";
}

my $half = int((length($gh) + 1) / 2);
my %body = (
    # the token less its last 4, as a column cut it
    cut => 'Authorization: Bearer ' . substr($gh, 0, 36) . "\n",
    # split at 12 and at 30 by a line wrap: the longer part holds a half
    early => substr($gh, 0, 12) . "\\\n" . substr($gh, 12) . "\n",
    late => substr($gh, 0, 30) . "\\\n" . substr($gh, 30) . "\n",
    # the cut token in a JSON string, one character \u-escaped
    json => '{"token":"ghp_FAKEabcd\u0065fghijklmnopqrstuv"}' . "\n",
    # a name for the token: shorter than half, passes
    name => "token ghp_FAKE...2345 expired\n",
    # half of the short password: too short to be listed, passes
    pw => 'FAKE-passwor' . "\n",
);

my $map = join '', map {
    "        $_ \"" . encode_base64(answer($body{$_}), '') . "\";\n"
} sort keys %body;

$t->write_file_expand('nginx.conf', $p->conf(
    http => "    map \$arg_r \$raw_answer {\n        default \"\";\n"
        . "$map    }\n",
    location => "proxy_set_header X-Raw \$raw_answer;"));

$t->run_daemon($^X, "$FindBin::Bin/../lib/raw-upstream.pl",
               $t->port(8081));
$t->wait_for_port(8081) or die 'raw upstream did not start';
$t->run;

plan tests => 8;

sub get {
    my ($route, $r) = @_;
    return parse_response($t->http_get("/$route/x?r=$r"))->{body} // '';
}

is(get('gh', 'cut'), "Authorization: Bearer [REDACTED]"
   . substr($gh, $half, 36 - $half) . "\n",
   'a token cut short loses its first half');

my $b = get('gh', 'early');
ok(index($b, substr($gh, -$half)) < 0 && index($b, '[REDACTED]') > 0,
   'split early: the second part loses the last half')
    or diag($b);

$b = get('gh', 'late');
ok(index($b, substr($gh, 0, $half)) < 0 && index($b, '[REDACTED]') == 0,
   'split late: the first part loses the first half')
    or diag($b);

$b = get('gh', 'json');
ok(index($b, 'ghp_FAKEabcd') < 0 && index($b, '[REDACTED]') > 0,
   'a cut token JSON-escaped loses its first half')
    or diag($b);

is(get('gh', 'name'), $body{name}, 'a part shorter than half passes');
is(get('pw', 'pw'), $body{pw}, 'a short secret has no halves listed');

my $logs = $t->read_file('access.log') . $t->read_file('error.log');
is(scalar(grep { index($logs, $_) >= 0 } $gh, $pw), 0,
   'no secret in the logs');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
