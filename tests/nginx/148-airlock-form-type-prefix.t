#!/usr/bin/perl

# ngx_http_airlock_module: a Content-Type that begins with
# application/x-www-form-urlencoded, or holds it or multipart/form-data
# anywhere, is a form.  Symfony's Request::createFromGlobals() (Laravel's
# requests too) parses the body of a PUT, PATCH or DELETE as a form when
# the header starts with that text, whatever follows
# ("application/x-www-form-urlencodedx"); Fastify before 4.10.2 chose its
# body parser by a substring of the header (CVE-2022-41919), so
# "text/plain; x=application/x-www-form-urlencoded" was a form to it.
# Their applications read the form's fields over the query and the
# route's params: "id=../x" in such a body stood for the path param {id}
# its pattern checked, and the gate, which took only the exact type for a
# form, forwarded it.  Each is refused with reason "body", as the same
# body under the exact type is, and reaches no upstream; a type that only
# shares a shorter start, or names another type in a parameter, passes.

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
    [ 'the exact type (control)', 'PUT', $form, 'id=../x' ],
    [ 'a letter after it', 'PUT', "${form}x", 'id=../x' ],
    [ 'a suffix after it', 'PATCH', "$form-v2", 'id=../x' ],
    [ 'in another case', 'DELETE', "Application/X-WWW-Form-URLEncodedX",
      'id=../x' ],
    [ 'a checked query param', 'PUT', "${form}x", 'mode=admin' ],
    [ '_method', 'POST', "${form}x", '_method=DELETE' ],
    [ 'the form type in a parameter', 'PUT', "text/plain; x=$form",
      'id=../x' ],
    [ 'in a parameter, quoted, in another case', 'PATCH',
      'text/plain; x="Application/X-WWW-Form-URLEncoded"', 'id=../x' ],
    [ 'in a parameter: a checked query param', 'PUT', "text/plain; x=$form",
      'mode=admin' ],
    [ 'in a parameter: _method', 'POST', "text/plain; x=$form",
      '_method=DELETE' ],
    [ 'multipart/form-data in a parameter', 'PUT',
      'text/plain; x=multipart/form-data; boundary=b',
      "--b\r\nContent-Disposition: form-data; name=\"id\"\r\n\r\n"
      . "../x\r\n--b--\r\n" ],
);

my @passed = (
    [ 'a field of no param', 'PUT', "${form}x", 'a=1' ],
    [ 'a shorter type', 'PUT', 'application/x-www-form-urlencode',
      'id=../x' ],
    [ 'text/plain', 'PUT', 'text/plain', 'id=../x' ],
    [ 'in a parameter: a field of no param', 'PUT', "text/plain; x=$form",
      'a=1' ],
    [ 'another type in a parameter', 'PUT', 'text/plain; x=text/csv',
      'id=../x' ],
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
