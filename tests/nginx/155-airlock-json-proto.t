#!/usr/bin/perl

# ngx_http_airlock_module: a "__proto__" key in a JSON body.  jansson
# reads {"__proto__":{"base":"release"}} as an object with a key of that
# name, so on a route with json rules and "additional: true" the rules
# saw "base" absent (it is optional) and the body passed; a JavaScript
# reader that builds its objects by assignment (JSON5's parse() before
# 2.2.2, a merge through Object.assign() or an old lodash merge()) takes
# the value for the object's prototype and reads base "release" through
# it.  On a route without json rules the same key could carry a field
# named like a checked param.  Now a "__proto__" key at any depth of a
# body read as JSON is refused (reason "body") and never forwarded;
# names like it ("__proto", "__PROTO__"), and a body not read as JSON,
# pass.  So is a key "constructor" holding an object with a key
# "prototype" (mixin-deep before 1.3.2, merge-deep before 3.0.3,
# lodash's defaultsDeep() before 4.17.12 walk from it to
# Object.prototype and write the fields there); either key alone passes.

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
    body: { max_bytes: 1024 }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf);

$t->start_echo(8081);
$t->run;

my $json = 'application/json';
my $head = '"head":"remediation/x"';

# [name, path, Content-Type, body]
my @refused = (
    [ 'json rules: at the top', '/github/pull-request', $json,
      "{$head,\"__proto__\":{\"base\":\"release\"}}" ],
    [ 'json rules: escaped', '/github/pull-request', $json,
      "{$head,\"\\u005f_proto__\":{\"base\":\"release\"}}" ],
    [ 'json rules: nested in an array', '/github/pull-request', $json,
      "{$head,\"x\":[1,{\"y\":{\"__proto__\":{}}}]}" ],
    [ 'no json rules: at the top', '/files/abc', $json,
      '{"__proto__":{"dir":".."}}' ],
    [ 'no json rules: nested', '/files/abc', $json,
      '{"a":{"__proto__":{"dir":".."}}}' ],
    [ 'json rules: constructor.prototype', '/github/pull-request', $json,
      "{$head,\"constructor\":{\"prototype\":{\"base\":\"release\"}}}" ],
    [ 'json rules: constructor.prototype, escaped', '/github/pull-request',
      $json, "{$head,\"x\":{\"constructor\":{\"\\u0070rototype\":{}}}}" ],
    [ 'no json rules: constructor.prototype', '/files/abc', $json,
      '{"constructor":{"prototype":{"dir":".."}}}' ],
);

my @passed = (
    [ 'json rules: names like it', '/github/pull-request', $json,
      "{$head,\"__proto\":1,\"__PROTO__\":2,\"proto\":3}" ],
    [ 'json rules: as a value', '/github/pull-request', $json,
      "{$head,\"x\":\"__proto__\"}" ],
    [ 'json rules: constructor and prototype apart', '/github/pull-request',
      $json, "{$head,\"constructor\":{\"name\":1},\"prototype\":{}}" ],
    [ 'not read as JSON', '/files/abc', 'text/plain',
      '{"__proto__":{"dir":".."}}' ],
);

plan tests => 2 * @refused + @passed + 1;

# each refused case: 403, reason "body", and not forwarded
$p->posts_refused(\@refused);
$p->posts_passed(\@passed);

is($t->error_log_check, '', 'no alerts');
