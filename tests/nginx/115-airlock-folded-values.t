#!/usr/bin/perl

# ngx_http_airlock_module: a query value and a JSON string are matched
# against their pattern also as an upstream that applies NFKC or Windows'
# best fit reads them.  With "name: '^[^/\\]+$'", the value
# "..%E2%88%95..%E2%88%95win.ini" (U+2215 DIVISION SLASH), which an IIS
# or Windows upstream opening it through an ANSI API reads as
# "../../win.ini", is refused with reason "query" (in a JSON body:
# "body") and never reaches the upstream, as are U+FF0F FULLWIDTH
# SOLIDUS and U+00A5 YEN SIGN ('\' in cp932); other non-ASCII passes.

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
  - name: read
    clients: [local]
    match: { method: GET, path: /read }
    upstream: echo
    to: /read
    query: { allow: [name], require: [name],
             patterns: { name: '^(?!.*\.\.)[^/\\]+$' } }
  - name: write
    clients: [local]
    match: { method: POST, path: /write }
    upstream: echo
    to: /write
    body:
      max_bytes: 1024
      json: { name: '^(?!.*\.\.)[^/\\]+$' }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf);

$t->start_echo(8081);
$t->run;

# [name, the value percent-encoded, the same as a JSON string]
my @cases = (
    [ 'division slash', '..%E2%88%95..%E2%88%95win.ini',
      '..\\u2215..\\u2215win.ini' ],
    [ 'fullwidth solidus', 'a%EF%BC%8Fb', 'a\\uff0fb' ],
    [ 'yen sign', '.%C2%A5x', '.\\u00a5x' ],
    # NFKC reads two dots, which the pattern refuses: all of them count
    [ 'two dot leader', '%E2%80%A5x', '\\u2025x' ],
    [ 'ellipsis', 'x%E2%80%A6', 'x\\u2026' ],
);

plan tests => 2 * @cases + 4;

sub get {
    return http("GET /read?name=$_[0] HTTP/1.0\r\n\r\n");
}

sub post {
    return http_post('/write', qq({"name":"$_[0]"}),
                     headers => { 'Content-Type' => 'application/json' });
}

like(get('caf%C3%A9-%E2%82%AC'), qr{^HTTP/1\.1 200 },
     'control: a query value with other non-ASCII passes');
like(post('caf\\u00e9 \\u20ac'), qr{^HTTP/1\.1 200 },
     'control: a JSON string with other non-ASCII passes');

my $seen = $p->echo_count;
is($seen, 2, 'control: both reached the upstream');

for my $c (@cases) {
    my ($name, $q, $j) = @$c;

    my $d = deny_json(get($q));
    is_deeply([ @$d, $p->echo_count ], [ 403, 'query', $seen ],
              "$name in a query value: 403 query, not forwarded");

    $d = deny_json(post($j));
    is_deeply([ @$d, $p->echo_count ], [ 403, 'body', $seen ],
              "$name in a JSON string: 403 body, not forwarded");
}

is($t->error_log_check, '', 'no alerts');
