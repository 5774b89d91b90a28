#!/usr/bin/perl

# ngx_http_airlock_module: a {param} segment never holds a character that
# Windows' best-fit mapping to an ANSI code page turns into '/', '\' or
# '%' (U+2215 DIVISION SLASH, U+2044 FRACTION SLASH, U+2216 SET MINUS,
# U+00A5 YEN SIGN in cp932, U+20A9 WON SIGN in cp949, U+00B4 in cp1253,
# U+FF05 FULLWIDTH and U+066A ARABIC PERCENT SIGN; and U+FE6A SMALL
# PERCENT SIGN, which NFKC makes a '%'): an IIS or Windows
# upstream that opens the forwarded name through an ANSI API would read
# "..%E2%88%95..%E2%88%95win.ini" as "../../win.ini".  Each is refused
# with reason "path" and the character named in the deny log, and none
# reaches the upstream; a name with other non-ASCII characters passes.

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
  - name: logs
    clients: [local]
    match: { method: GET, path: "/logs/{service}" }
    params: { service: '.+' }
    upstream: echo
    to: "/logs/{service}"
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf);

$t->start_echo(8081);
$t->run;

# [name, segment, the refusal in the deny log's detail]
my @cases = (
    [ 'division slash', '..%E2%88%95..%E2%88%95win.ini', 'slash-like' ],
    [ 'fraction slash', '..%E2%81%84boot.ini', 'slash-like' ],
    [ 'set minus', '..%E2%88%96x', 'slash-like' ],
    [ 'yen sign', '..%C2%A5..%C2%A5x', 'slash-like' ],
    [ 'won sign', '..%E2%82%A9x', 'slash-like' ],
    [ 'acute accent', 'a%C2%B4b', 'slash-like' ],
    [ 'fullwidth percent', '%EF%BC%852e%EF%BC%852e', 'percent-like' ],
    [ 'arabic percent', 'a%D9%AA2f', 'percent-like' ],
    [ 'small percent (NFKC)', '..%EF%B9%AA2f..', 'percent-like' ],
);

plan tests => 2 * @cases + 4;

sub get {
    return http("GET /logs/$_[0] HTTP/1.0\r\n\r\n");
}

like(get('caf%C3%A9-%E2%82%AC'), qr{^HTTP/1\.1 200 },
     'control: a name with other non-ASCII characters passes');

my $seen = $p->echo_count;
is($seen, 1, 'control: it reached the upstream');

for my $c (@cases) {
    my ($name, $seg, $why) = @$c;
    my $d = deny_json(get($seg));
    my $now = $p->echo_count;
    my ($l) = grep { ($_->{path} // $_->{uri} // '') =~ /\Q$seg\E/ }
              $p->deny_log;

    is_deeply([ @$d, $now ], [ 403, 'path', $seen ],
              "$name: 403 path, not forwarded");
    like(($l // {})->{detail} // '', qr/request target refused: \Q$why\E/,
         "$name: the deny log names it");

    $seen = $now;
}

is($p->deny_count, scalar @cases, 'one deny line each');
is($t->error_log_check, '', 'no alerts');
