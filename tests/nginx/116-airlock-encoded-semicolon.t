#!/usr/bin/perl

# ngx_http_airlock_module: a path segment never holds an encoded ';'.
# A proxy between Airlock and the application that decodes the path and
# sends it on as it reads it (nginx's proxy_pass with a URI does: it
# re-escapes '?', '#' and '%' but not ';') hands a servlet container
# (Tomcat, Jetty) a raw ';', which starts a path parameter it cuts off:
# "/files/..%3Bx/raw" reaches it as "/files/..;x/raw", read as
# "/files/../raw".  Each is refused with reason "path" and the deny log
# says why, and none reaches the upstream; %3B in a query value, where
# it is data, passes.

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
    match: { method: GET, path: "/files/{name}/raw" }
    params: { name: '.+' }
    upstream: echo
    to: "/files/{name}/raw"
    query: { allow: [q] }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf);

$t->start_echo(8081);
$t->run;

my @cases = (
    [ 'dot-dot, encoded semicolon', '..%3Bx' ],
    [ 'lower-case escape', '..%3bjsessionid=1' ],
    [ 'inside a name', 'a%3Bb' ],
);

plan tests => 2 * @cases + 4;

sub get {
    return http("GET /files/$_[0] HTTP/1.0\r\n\r\n");
}

like(get('a%2Cb/raw?q=a%3Bb'), qr{^HTTP/1\.1 200 },
     'control: %3B in a query value passes');

my $seen = $p->echo_count;
is($seen, 1, 'control: it reached the upstream');

for my $c (@cases) {
    my ($name, $seg) = @$c;
    my $d = deny_json(get("$seg/raw"));
    my $now = $p->echo_count;
    my ($l) = grep { ($_->{path} // $_->{uri} // '') =~ /\Q$seg\E/ }
              $p->deny_log;

    is_deeply([ @$d, $now ], [ 403, 'path', $seen ],
              "$name: 403 path, not forwarded");
    like(($l // {})->{detail} // '',
         qr/request target refused: encoded semicolon/,
         "$name: the deny log names it");

    $seen = $now;
}

is($p->deny_count, scalar @cases, 'one deny line each');
is($t->error_log_check, '', 'no alerts');
