#!/usr/bin/perl

# ngx_http_airlock_module: a path segment that starts with a drive is
# refused with reason "path" and never reaches the upstream.  Windows
# roots "C:x" on drive C's current directory, and .NET's
# Path.Combine(root, name) returns such a name alone, root left out (as
# Python's os.path.join does for another drive): with a route
# "/files/{name}" and the pattern '^[^/\\]+$', the request
# "/files/C:appsettings.json" was forwarded, and an upstream that joins
# the name to its files' folder reads the application's own settings
# file (its current directory's), "/files/c:.." that folder's parent.  The colon may be escaped or one
# NFKC or Windows' best fit turns into ':' (U+FF1A, U+2236), the letter
# any non-ASCII character (U+FF23 FULLWIDTH C).  Names with a colon
# elsewhere pass ("ab:c", "1:x"), and a query value whose pattern refuses
# ':' refuses its look-alikes.

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
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: files
    clients: [local]
    match: { method: GET, path: "/files/{name}" }
    params: { name: '^[^/\\]+$' }
    upstream: echo
    to: "/data/{name}"
    query: { allow: [as], patterns: { as: '^[^/\\:]+$' } }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf);

$t->start_echo(8081);
$t->run;

my @refused = (
    [ '/files/C:appsettings.json', 'path', 'a drive' ],
    [ '/files/c:..', 'path', 'a drive and a parent directory' ],
    [ '/files/C%3Aweb.config', 'path', 'an escaped colon' ],
    [ '/files/C%EF%BC%9Ax', 'path', 'U+FF1A FULLWIDTH COLON' ],
    [ '/files/C%E2%88%B6x', 'path', 'U+2236 RATIO (best fit)' ],
    [ '/files/%EF%BC%A3:x', 'path', 'U+FF23 FULLWIDTH C' ],
    [ '/files/a?as=C%EF%BC%9Ax', 'query',
      'U+FF1A in a query value whose pattern refuses ":"' ],
);

my @passed = (
    [ '/files/report.txt', '/data/report.txt' ],
    [ '/files/ab:c', '/data/ab:c' ],
    [ '/files/1:x?as=x', '/data/1:x?as=x' ],
);

plan tests => @refused + @passed + 1;

for my $c (@passed) {
    my ($target, $sent) = @$c;
    my $j = Airlock::Test::echo_json(http("GET $target HTTP/1.0\r\n\r\n"));
    is($j && $j->{target}, $sent, "$target passes, forwarded as $sent");
}

my $seen = $p->echo_count;

for my $c (@refused) {
    my ($target, $reason, $name) = @$c;
    my $d = deny_json(http("GET $target HTTP/1.0\r\n\r\n"));
    is_deeply([ @$d, $p->echo_count ], [ 403, $reason, $seen ],
              "$name: 403 $reason, not forwarded");
}

is($t->error_log_check, '', 'no alerts');
