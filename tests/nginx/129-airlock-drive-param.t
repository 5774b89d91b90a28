#!/usr/bin/perl

# ngx_http_airlock_module: a path param with "drive: true" takes a
# segment that starts with a drive, a letter and a colon, which every
# other segment refuses (test 113): Google Sheets' range "A:B" in
# values/A:B, Microsoft Graph's one-letter item "X:", a custom method
# "x:generateContent".  The upstream receives the value the pattern
# matched, re-encoded.  The same route's other param, a route without the
# option and an unknown path still refuse it (403 path, "drive letter"),
# and even that param refuses a drive and a dot segment ("C:..", the
# parent of drive C's current folder), the colon escaped or a look-alike
# (U+FF1A, U+2236), the dots escaped or a look-alike (U+2025), and every
# other path rule ("..", an encoded slash).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$p->keygen;

$t->write_file_expand('policy.yaml', <<'EOF');
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%/v4" }
routes:
  - name: sheet-values
    clients: [local]
    match: { method: GET, path: "/sheets/{id}/values/{range}" }
    params:
      id: '^[A-Za-z0-9_:-]+$'
      range: { pattern: '^[A-Za-z0-9!:_-]+$', drive: true }
    upstream: echo
    to: "/spreadsheets/{id}/values/{range}"
  - name: sheet-clear
    clients: [local]
    match: { method: GET, path: "/clear/{id}/{range}" }
    params: { id: '^[A-Za-z0-9_-]+$', range: '^[A-Za-z0-9!:_-]+$' }
    upstream: echo
    to: "/spreadsheets/{id}/clear/{range}"
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf);

$t->start_echo(8081);
$t->run;

my @passed = (
    [ '/sheets/s1/values/A:B', '/v4/spreadsheets/s1/values/A:B',
      'a column range' ],
    [ '/sheets/s1/values/A:B2', '/v4/spreadsheets/s1/values/A:B2',
      'a range from a column' ],
    [ '/sheets/s1/values/A%3AB', '/v4/spreadsheets/s1/values/A:B',
      'an escaped colon, forwarded as matched' ],
    [ '/sheets/s1/values/x:generateContent',
      '/v4/spreadsheets/s1/values/x:generateContent', 'a custom method' ],
    [ '/sheets/s1/values/X:', '/v4/spreadsheets/s1/values/X:',
      'a letter and a colon alone' ],
    [ '/sheets/s1/values/A1:B2', '/v4/spreadsheets/s1/values/A1:B2',
      'no drive (A1:B2)' ],
    [ '/clear/s1/A1:B2', '/v4/spreadsheets/s1/clear/A1:B2',
      'no drive, on the route without the option' ],
    [ '/clear/s1/Sheet1!A:B', '/v4/spreadsheets/s1/clear/Sheet1!A:B',
      'no drive (Sheet1!A:B), on the route without the option' ],
);

my @refused = (
    [ '/clear/s1/A:B', 'path', 'the route without the option' ],
    [ '/sheets/A:x/values/A:B', 'path', "the same route's other param" ],
    [ '/nowhere/A:B', 'path', 'no route' ],
    [ '/sheets/s1/values/C:..', 'path', 'a drive and ..' ],
    [ '/sheets/s1/values/c:%2e%2e', 'path', 'a drive and escaped dots' ],
    [ '/sheets/s1/values/C:.', 'path', 'a drive and .' ],
    [ '/sheets/s1/values/C%3A..', 'path', 'an escaped colon and ..' ],
    [ '/sheets/s1/values/C%EF%BC%9A..', 'path', 'U+FF1A and ..' ],
    [ '/sheets/s1/values/C%E2%88%B6..', 'path', 'U+2236 RATIO and ..' ],
    [ '/sheets/s1/values/C:%E2%80%A5', 'path', 'a drive and U+2025 (..)' ],
    [ '/sheets/s1/values/%EF%BC%A3:..', 'path', 'U+FF23 FULLWIDTH C and ..' ],
    [ '/sheets/s1/values/..', 'path', '.. in the param' ],
    [ '/sheets/s1/values/A:B%2F..', 'path', 'an encoded slash' ],
    [ '/sheets/s1/values/A:B/..', 'path', 'a dot segment after it' ],
    [ '/sheets/s1/values/A:B%20C', 'param', 'the pattern still decides' ],
);

my @details = (
    [ '/clear/s1/A:B',
      qr/drive letter in param "range" of route "sheet-clear"/ ],
    [ '/sheets/A:x/values/A:B',
      qr/drive letter in param "id" of route "sheet-values"/ ],
    [ '/sheets/s1/values/C:..',
      qr/^request target refused: drive letter$/ ],
);

plan tests => 2 * @passed + @refused + @details + 1;

for my $c (@passed) {
    my ($target, $sent, $name) = @$c;
    my $raw = http("GET $target HTTP/1.0\r\n\r\n");
    my $j = Airlock::Test::echo_json($raw);
    is(Airlock::Test::parse_response($raw // '')->{status}, 200,
       "$name: $target is 200");
    is($j && $j->{target}, $sent, "$name: the upstream gets $sent");
}

my $seen = $p->echo_count;

for my $c (@refused) {
    my ($target, $reason, $name) = @$c;
    my $d = deny_json(http("GET $target HTTP/1.0\r\n\r\n"));
    is_deeply([ @$d, $p->echo_count ], [ 403, $reason, $seen ],
              "$name: $target is 403 $reason, not forwarded");
}

for my $c (@details) {
    my ($target, $re) = @$c;
    http("GET $target HTTP/1.0\r\n\r\n");
    my @log = $p->deny_log;
    like(@log ? $log[-1]{detail} // '' : '', $re,
         "$target: the log says why");
}

is($t->error_log_check, '', 'no alerts');
