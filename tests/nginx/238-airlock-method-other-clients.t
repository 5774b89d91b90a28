#!/usr/bin/perl

# ngx_http_airlock_module: a path that only other clients' routes take
# is no route to a client, whatever the method it asks with.  Under the
# route's own method it was refused no_route, but under any other it was
# refused "method" (Airlock-Denial: method), which told a client that
# the path is a route's: any client could map the routes of the others
# (an admin path granted to one token client only) by asking with a
# method no route of the path allows.  "method" is still said to a
# client that one of the path's routes lists.  The deny log names the
# route for the operator either way.
#
# The old code fails the tests marked (old).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

my %tok = (a => 'token-a-FAKE-0123456789', b => 'token-b-FAKE-0123456789');

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  a: { token_sha256: "${\ $p->token_sha256($tok{a})}" }
  b: { token_sha256: "${\ $p->token_sha256($tok{b})}" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: b-keys
    clients: [b]
    match: { method: GET, path: /admin/keys }
    upstream: echo
    to: /admin/keys
  - name: b-user
    clients: [b]
    match: { method: DELETE, path: "/admin/users/{id}" }
    params: { id: '^[0-9]+\$' }
    upstream: echo
    to: "/admin/users/{id}"
  - name: a-items
    clients: [a]
    match: { method: GET, path: /items }
    upstream: echo
    to: /items
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf);

$t->start_echo(8081);
$t->run;

plan tests => 12;

# the Airlock-Denial reason of METHOD TARGET asked as client $who, or the
# status when there is none
sub reason {
    my ($who, $method, $target) = @_;
    my $r = parse_response(http("$method $target HTTP/1.0\r\n"
                                . "Proxy-Authorization: Bearer $tok{$who}"
                                . "\r\n\r\n"));
    return $r->{headers}{'airlock-denial'} // $r->{status};
}

is(reason('a', 'GET', '/items'), 200, 'control: a\'s own route');
is(reason('a', 'GET', '/admin/keys'), 'no_route',
   'b\'s path, its method: no_route');
is(reason('a', 'DELETE', '/admin/keys'), 'no_route',
   'b\'s path, another method: no_route (old)');
is(reason('a', 'POST', '/admin/keys'), 'no_route',
   'b\'s path, POST: no_route (old)');
is(reason('a', 'GET', '/admin/users/7'), 'no_route',
   'b\'s param path, another method: no_route (old)');
is(reason('a', 'DELETE', '/admin/nothing'), 'no_route',
   'a path of no route: no_route');

# the clients the path's routes list still hear "method"

is(reason('b', 'DELETE', '/admin/keys'), 'method',
   'b, its path, another method: method');
is(reason('b', 'GET', '/admin/users/7'), 'method',
   'b, its param path, another method: method');
is(reason('a', 'POST', '/items'), 'method', 'a, its path, POST: method');

# the operator's deny log names the route all the same

my @l = grep { $_->{method} eq 'DELETE' && $_->{path} eq '/admin/keys' }
        $p->deny_log;
is($l[0] && $l[0]{route}, 'b-keys', 'deny log: the route for a');
like($l[0] && $l[0]{detail}, qr/does not list client "a"/,
     'deny log: the detail says why (old)');

is($t->error_log_check, '', 'no alerts');
