#!/usr/bin/perl

# ngx_http_airlock_module: a '+' in a path param is a literal plus to the
# gate (RFC 3986), and reaches the upstream as %2B, so that an upstream
# that decodes its path as a form (PHP's urldecode(), Java's URLDecoder,
# Go's QueryUnescape: '+' is a space) reads the plus the route's pattern
# checked, not "a b" where the pattern refuses spaces.  "a+b", "a%2Bb"
# and "a%2bb" are the one value, sent one way.  In a query a '+' is a
# space, sent as %20, and %2B a plus, sent as %2B: every upstream, form
# decoder or not, reads what the gate read.

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
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: logs
    clients: [local]
    match: { method: GET, path: "/logs/{service}" }
    params: { service: '^[^ ]+$' }
    upstream: echo
    to: "/logs/{service}/tail"
    query: { allow: [q] }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf(key => 0));

$t->start_echo(8081);
$t->run;

# the value as an RFC 3986 reader and as a form decoder read it

sub rfc {
    (my $s = $_[0]) =~ s/%([0-9A-Fa-f]{2})/chr hex $1/ge;
    return $s;
}

sub form {
    (my $s = $_[0]) =~ tr/+/ /;
    return rfc($s);
}

# [request segment, forwarded segment, the value the pattern checked]
my @path = (
    [ 'a+b', 'a%2Bb', 'a+b' ],
    [ 'a%2Bb', 'a%2Bb', 'a+b' ],
    [ 'a%2bb', 'a%2Bb', 'a+b' ],
    [ 'c++', 'c%2B%2B', 'c++' ],
    [ '+', '%2B', '+' ],
    [ 'a&b=c', 'a&b=c', 'a&b=c' ],
);

# [request query, forwarded query, the value]
my @query = (
    [ 'q=a+b', 'q=a%20b', 'a b' ],
    [ 'q=a%2Bb', 'q=a%2Bb', 'a+b' ],
    [ 'q=a%20b', 'q=a%20b', 'a b' ],
);

plan tests => 3 * @path + 3 * @query + 3;

sub get {
    my ($target) = @_;
    my $r = parse_response(http("GET $target HTTP/1.0\r\n\r\n"));
    return ($r->{status}, echo_json($r->{body}));
}

for my $c (@path) {
    my ($seg, $sent, $value) = @$c;
    my ($status, $j) = get("/logs/$seg");
    my $got = ($j // {})->{target} // '';

    is($status, 200, "/logs/$seg: allowed");
    is($got, "/logs/$sent/tail", "/logs/$seg: forwarded as $sent");

    my ($fwd) = $got =~ m{^/logs/([^/]*)/tail$};
    $fwd //= '';
    is_deeply([ rfc($fwd), form($fwd) ], [ $value, $value ],
              "/logs/$seg: both decoders read \"$value\"");
}

for my $c (@query) {
    my ($q, $sent, $value) = @$c;
    my ($status, $j) = get("/logs/x?$q");
    my $got = ($j // {})->{target} // '';

    is($status, 200, "?$q: allowed");
    is($got, "/logs/x/tail?$sent", "?$q: forwarded as ?$sent");

    my ($fwd) = $got =~ m{\?q=(.*)$};
    $fwd //= '';
    is_deeply([ rfc($fwd), form($fwd) ], [ $value, $value ],
              "?$q: both decoders read \"$value\"");
}

# a space, which the pattern refuses, is refused however it is written

my $seen = $p->echo_count;
my $d = deny_json(http("GET /logs/a%20b HTTP/1.0\r\n\r\n"));

is_deeply([ @$d, $p->echo_count ], [ 403, 'param', $seen ],
          'a%20b: 403 param, not forwarded');
like(($p->deny_log)[-1]{detail} // '', qr/param "service" does not match/,
     'the deny log names the param');

is($t->error_log_check, '', 'no alerts');
