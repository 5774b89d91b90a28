#!/usr/bin/perl

# ngx_http_airlock_module: a route that does not list a client is, to
# that client, as if there were none, whatever the method it asks with.
# A path that only other clients' routes take was refused no_route under
# the route's own method but "method" (Airlock-Denial: method) under any
# other, which told a client that the path is a route's: any client
# could map the routes of the others (an admin path granted to one token
# client only) by asking with a method no route of the path allows.  The
# other way round, a client asking its own path with a method only
# another client's route there takes was refused no_route, not the
# "method" it gets when no route takes that method: that told it of the
# other's route.  Now "method" is said to a client one of the path's
# routes lists, and no_route to any other.  The deny log names the route
# for the operator either way.  Likewise a segment that starts with a
# drive ("A:1") passes only in a param that takes one of a route that
# lists the client: another client's such route let it through to a
# no_route, where any other path refuses it as a path ("drive letter").
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
  - name: b-sheet
    clients: [b]
    match: { method: GET, path: "/sheets/{id}/values/{range}" }
    params:
      id: '^[a-z]+\$'
      range: { pattern: '^[A-Z]+[0-9]*(:[A-Z]+[0-9]*)?\$', drive: true }
    upstream: echo
    to: "/sheets/{id}/values/{range}"
  - name: a-items
    clients: [a]
    match: { method: GET, path: /items }
    upstream: echo
    to: /items
  - name: b-items
    clients: [b]
    match: { method: POST, path: /items }
    upstream: echo
    to: /items
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf);

$t->start_echo(8081);
$t->run;

plan tests => 19;

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
is(reason('a', 'DELETE', '/items'), 'method',
   'a, its path, a method no route takes: method');
is(reason('a', 'POST', '/items'), 'method',
   'a, its path, the method of b\'s route there: method (old)');
is(reason('b', 'GET', '/items'), 'method',
   'b, its path, the method of a\'s route there: method (old)');
is(reason('a', 'GET', '/items') , 200, 'control: a still gets its route');

# a drive in a param only another client's route takes: refused as
# anywhere else

is(reason('b', 'GET', '/sheets/abc/values/A:B1'), 200,
   'control: b\'s drive param');
is(reason('a', 'GET', '/nowhere/A:B1'), 'path', 'a drive where no route is');
is(reason('a', 'GET', '/sheets/abc/values/A:B1'), 'path',
   'a drive in b\'s route: path, as where no route is (old)');
is(reason('a', 'GET', '/sheets/abc/values/A1'), 'no_route',
   'b\'s route without a drive: no_route');

# the operator's deny log names the route all the same

my @l = grep { $_->{method} eq 'DELETE' && $_->{path} eq '/admin/keys' }
        $p->deny_log;
is($l[0] && $l[0]{route}, 'b-keys', 'deny log: the route for a');
like($l[0] && $l[0]{detail}, qr/does not list client "a"/,
     'deny log: the detail says why (old)');

is($t->error_log_check, '', 'no alerts');
