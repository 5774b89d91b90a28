#!/usr/bin/perl

# ngx_http_airlock_module: prototype keys outside a JSON body's plain
# keys.  A form body's field names are not listed anywhere (only
# _method, X-HTTP-Method-Override and the checked params' names are
# refused), so "__proto__[dir]=.." reached the upstream, where a parser
# that builds objects from "a[b]" or "a.b" keys (qs before its
# __proto__ guards, as Express's extended body-parser reads a form;
# express-fileupload's parseNested, CVE-2020-7699) sets an object's
# prototype, or through "constructor[prototype]" Object.prototype, and
# every object then reads "dir" as "..".  A JSON key read as a path by
# a path setter (flat's unflatten() before 5.0.1, CVE-2020-36632:
# "__proto__.dir") passed too, with json rules and "additional: true"
# or without rules.  Now a form field (urlencoded, multipart, or a body
# without Content-Type), and a JSON key, with a part "__proto__", or a
# part "constructor" followed by a part "prototype" (parts cut at '[',
# ']' and '.', percent-decoded in a form), is refused (reason "body")
# and never forwarded.  Names like them, the words apart or as values,
# a body not read as a form or JSON, and cookies pass.
#
# The query needs no such rule: a name must be one "allow" lists, as
# decoded, so every spelling of those keys is refused (reason "query")
# before and after this change; a value is no key.

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
  - name: pr
    clients: [local]
    match: { method: POST, path: /github/pull-request }
    upstream: echo
    to: /repos/acme/infra/pulls
    body:
      max_bytes: 1024
      additional: true
      json:
        head: '^remediation/[A-Za-z0-9._/-]+$'
        base: { type: string, pattern: '^main$', required: false }
  - name: files
    clients: [local]
    match: { method: POST, path: "/files/{dir}" }
    params: { dir: '^[a-z]+$' }
    upstream: echo
    to: "/data/{dir}"
    query:
      allow: [name, q, "filter[name]"]
      patterns: { name: '^[a-z]+$' }
    body: { max_bytes: 1024 }
    cookies: true
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf);

$t->start_echo(8081);
$t->run;

my $form = 'application/x-www-form-urlencoded';
my $mp = 'multipart/form-data; boundary=b';
my $json = 'application/json';
my $head = '"head":"remediation/x"';

sub part {
    my ($name) = @_;
    return "--b\r\nContent-Disposition: form-data; name=\"$name\"\r\n\r\n"
           . "..\r\n--b--\r\n";
}

# [name, target, Content-Type (undef: none), body, reason]
my @refused = (
    [ 'form: __proto__[dir]', '/files/abc', $form, '__proto__[dir]=..' ],
    [ 'form: a[__proto__][dir]', '/files/abc', $form,
      'a[__proto__][dir]=..' ],
    [ 'form: constructor[prototype][dir]', '/files/abc', $form,
      'constructor[prototype][dir]=..' ],
    [ 'form: a[constructor][prototype][dir]', '/files/abc', $form,
      'x=1&a[constructor][prototype][dir]=..' ],
    [ 'form: a.__proto__.dir', '/files/abc', $form, 'a.__proto__.dir=..' ],
    [ 'form: constructor.prototype.dir', '/files/abc', $form,
      'constructor.prototype.dir=..' ],
    [ 'form: %5F%5Fproto%5F%5F[dir]', '/files/abc', $form,
      '%5F%5Fproto%5F%5F[dir]=..' ],
    [ 'form: __proto__%5Bdir%5D', '/files/abc', $form,
      '__proto__%5Bdir%5D=..' ],
    [ 'form: constructor%2Eprototype%2Edir', '/files/abc', $form,
      'constructor%2Eprototype%2Edir=..' ],
    [ 'form: after a ";"', '/files/abc', $form, 'a=1;__proto__[dir]=..' ],
    [ 'no Content-Type: __proto__[dir]', '/files/abc', undef,
      '__proto__[dir]=..' ],
    [ 'multipart: __proto__[dir]', '/files/abc', $mp,
      part('__proto__[dir]') ],
    [ 'multipart: a.__proto__.dir', '/files/abc', $mp,
      part('a.__proto__.dir') ],
    [ 'multipart: constructor[prototype][dir]', '/files/abc', $mp,
      part('constructor[prototype][dir]') ],
    [ 'json rules: "__proto__.base"', '/github/pull-request', $json,
      "{$head,\"__proto__.base\":\"release\"}" ],
    [ 'json rules: "constructor.prototype.base"', '/github/pull-request',
      $json, "{$head,\"constructor.prototype.base\":\"release\"}" ],
    [ 'no json rules: "a.__proto__.dir"', '/files/abc', $json,
      '{"a.__proto__.dir":".."}' ],
    [ 'no json rules: "__proto__[dir]"', '/files/abc', $json,
      '{"__proto__[dir]":".."}' ],
    [ 'no json rules: "constructor" holding "prototype.dir"', '/files/abc',
      $json, '{"constructor":{"prototype.dir":".."}}' ],
    [ 'no json rules: "a.constructor" holding "prototype"', '/files/abc',
      $json, '{"a.constructor":{"prototype":{"dir":".."}}}' ],
);

# refused before and after: not an allowed query name
my @query = (
    [ 'query: __proto__', '/files/abc?__proto__=1' ],
    [ 'query: __proto__%5Bdir%5D', '/files/abc?__proto__%5Bdir%5D=..' ],
    [ 'query: __proto__[dir]', '/files/abc?__proto__[dir]=..' ],
    [ 'query: %5F%5Fproto%5F%5F%5Bdir%5D',
      '/files/abc?%5F%5Fproto%5F%5F%5Bdir%5D=..' ],
    [ 'query: a%5B__proto__%5D%5Bdir%5D',
      '/files/abc?a%5B__proto__%5D%5Bdir%5D=..' ],
    [ 'query: constructor%5Bprototype%5D%5Bdir%5D',
      '/files/abc?constructor%5Bprototype%5D%5Bdir%5D=..' ],
    [ 'query: a.__proto__.dir', '/files/abc?a.__proto__.dir=..' ],
    [ 'query: filter%5B__proto__%5D beside filter[name]',
      '/files/abc?filter%5B__proto__%5D=..' ],
    [ 'query: an allowed name, then __proto__.name',
      '/files/abc?name=abc&__proto__.name=..' ],
);

my @passed = (
    [ 'form: names like them, and values', '/files/abc', $form,
      '__proto=1&proto__=2&x=__proto__&y=constructor[prototype]' ],
    [ 'form: the words apart', '/files/abc', $form,
      'constructor[name]=1&prototype[x]=2&a.constructor=3&b.prototype=4' ],
    [ 'form: __PROTO__ (JavaScript keys have case)', '/files/abc', $form,
      '__PROTO__[x]=1' ],
    [ 'multipart: prototype alone', '/files/abc', $mp, part('prototype') ],
    [ 'text/plain is no form', '/files/abc', 'text/plain',
      '__proto__[dir]=..' ],
    [ 'json: path keys without those parts', '/files/abc', $json,
      '{"a.b":1,"x.__proto":2,"c[d]":3,"constructor.name":4}' ],
    [ 'json rules: dotted keys', '/github/pull-request', $json,
      "{$head,\"a.b\":1}" ],
    [ 'query: a value', '/files/abc?q=__proto__', $form, 'a=1' ],
    [ 'query: the listed nested name', '/files/abc?filter%5Bname%5D=x',
      $form, 'a=1' ],
);

plan tests => 2 * @refused + 2 * @query + @passed + 2;

# each refused case: 403, reason "body", and not forwarded
$p->posts_refused(\@refused);

# each query: posted with a form body "a=1", refused (reason "query" or
# "path") and not forwarded
$p->posts_refused([ map { [ @$_, $form, 'a=1' ] } @query ],
                  qr/^(query|path)$/);

$p->posts_passed(\@passed);

# no reader of a Cookie header builds objects from its names
my $cookie = post_request('/files/abc', $form, 'a=1',
                          "Cookie: __proto__[dir]=..\r\n");
is(parse_response(http($cookie))->{status}, 200,
   'passes: a cookie named __proto__[dir]');

is($t->error_log_check, '', 'no alerts');
