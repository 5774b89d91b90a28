#!/usr/bin/perl

# ngx_http_airlock_module: a Content-Type that holds
# application/x-www-form-urlencoded or multipart/form-data anywhere is a
# form.  Fastify before 4.10.2 chose its body parser by a substring of
# the header (CVE-2022-41919), so "text/plain; x=application/x-www-form-
# urlencoded" was a form to it, whose fields the application reads
# beside the route's params: "id=../x" in such a body stood for the path
# param {id} its pattern checked, and the gate, which read the header's
# media type only, forwarded it.  Each is refused with reason "body" and
# reaches no upstream; another type's parameter passes.

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
  - name: item
    clients: [local]
    match: { method: [PUT, PATCH, DELETE, POST], path: "/items/{id}" }
    params: { id: '^[0-9]+$' }
    upstream: echo
    to: "/items/{id}"
    query: { allow: [mode], patterns: { mode: '^(ro|rw)$' } }
    body: { max_bytes: 1024 }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf);

$t->start_echo(8081);
$t->run;

my $form = 'application/x-www-form-urlencoded';

# [name, method, Content-Type, body]
my @refused = (
    [ 'the form type in a parameter', 'PUT', "text/plain; x=$form",
      'id=../x' ],
    [ 'quoted, in another case', 'PATCH',
      'text/plain; x="Application/X-WWW-Form-URLEncoded"', 'id=../x' ],
    [ 'a checked query param', 'PUT', "text/plain; x=$form", 'mode=admin' ],
    [ '_method', 'POST', "text/plain; x=$form", '_method=DELETE' ],
    [ 'multipart/form-data in a parameter', 'PUT',
      'text/plain; x=multipart/form-data; boundary=b',
      "--b\r\nContent-Disposition: form-data; name=\"id\"\r\n\r\n"
      . "../x\r\n--b--\r\n" ],
);

my @passed = (
    [ 'a field of no param', 'PUT', "text/plain; x=$form", 'a=1' ],
    [ 'another type in a parameter', 'PUT', 'text/plain; x=text/csv',
      'id=../x' ],
    [ 'text/plain', 'PUT', 'text/plain', 'id=../x' ],
);

plan tests => @refused + @passed + 1;

sub req {
    my ($method, $ct, $body) = @_;
    return "$method /items/1?mode=ro HTTP/1.0\r\nContent-Type: $ct\r\n"
           . "Content-Length: " . length($body) . "\r\n\r\n$body";
}

for my $c (@refused) {
    my ($name, @r) = @$c;
    my $before = $p->echo_count;
    my $d = deny_json(http(req(@r)));

    is_deeply([ @$d, $p->echo_count - $before ], [ 403, 'body', 0 ],
              "refused, not forwarded: $name");
}

for my $c (@passed) {
    my ($name, @r) = @$c;
    is(parse_response(http(req(@r)))->{status}, 200, "passes: $name");
}

is($t->error_log_check, '', 'no alerts');
