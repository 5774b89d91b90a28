#!/usr/bin/perl

# ngx_http_airlock_module: a segment of dots and '+'s that begins with a
# dot ("..+", ".+", "..%2B") is a dot segment.  The gate sends a '+' as
# %2B, but a proxy between it and the application that decodes the path
# and sends it on (nginx's proxy_pass with a URI: it re-escapes ' ', '#',
# '%' and '?', not '+') hands the application a raw '+', a space to one
# that decodes its path as a form (PHP's urldecode(), Java's
# URLDecoder): "..+" is ".. ", which Windows, so IIS and ASP.NET, trims
# to "..", as it trims "..%20", which was refused already.  Here such a
# proxy (a second server) stands in front of the echo upstream: a '+'
# reaches the echo raw through it, and each dot segment is refused with
# reason "path" and reaches nothing.  A '+' in a name still passes.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

$t->write_file_expand('policy.yaml', <<'EOF');
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
upstreams:
  hop: { url: "http://127.0.0.1:%%PORT_8082%%/hop" }
routes:
  - name: files
    clients: [local]
    match: { method: GET, path: "/files/{name}/raw" }
    params: { name: '.+' }
    upstream: hop
    to: "/files/{name}/raw"
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

# the proxy that decodes: proxy_pass with a URI sends the decoded path

$t->write_file_expand('nginx.conf', $p->conf(key => 0, http => <<'EOF'));
    server {
        listen 127.0.0.1:%%PORT_8082%%;
        server_name hop;

        location /hop/ {
            proxy_pass http://127.0.0.1:%%PORT_8081%%/app/;
        }
    }
EOF

$t->start_echo(8081);
$t->run;

my @refused = ('..+', '.+', '..%2B', '..%2b', '.+.+', '...+', '..+%20');

# [request segment, what the application gets behind the proxy]
my @names = (
    [ 'a+b', 'a+b' ],
    [ '..+a', '..+a' ],
    [ '+..', '+..' ],
);

plan tests => 2 * @names + 2 * @refused + 2;

sub get {
    return http("GET /files/$_[0]/raw HTTP/1.0\r\n\r\n");
}

for my $c (@names) {
    my ($seg, $app) = @$c;
    my $r = parse_response(get($seg));
    my $j = echo_json($r->{body}) // {};

    is($r->{status}, 200, "$seg: a name, allowed");
    is($j->{target}, "/app/files/$app/raw",
       "$seg: the application behind the proxy gets a raw '+'");
}

my $seen = $p->echo_count;

for my $seg (@refused) {
    my $d = deny_json(get($seg));
    my $now = $p->echo_count;
    my ($l) = grep { ($_->{path} // $_->{uri} // '') =~ /\Q$seg\E/ }
              $p->deny_log;

    is_deeply([ @$d, $now ], [ 403, 'path', $seen ],
              "$seg: 403 path, not forwarded");
    like(($l // {})->{detail} // '', qr/request target refused: dot segment/,
         "$seg: the deny log says dot segment");

    $seen = $now;
}

is($p->deny_count, scalar @refused, 'one deny line each');
is($t->error_log_check, '', 'no alerts');
