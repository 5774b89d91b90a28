#!/usr/bin/perl

# ngx_http_airlock_module: a JSON body on a route without json rules.
# Rails and Laravel merge a JSON body's top-level fields with the query
# and the path params, the body's over the query's (ASP.NET binds them
# in any case), and Laravel reads a top-level "_method" as the method.
# A route with json rules refused such fields; one without them did not
# read a JSON body at all, so POST /files/abc?file=a.txt with the body
# {"file":"../web.config"} passed the query pattern and reached an
# upstream that read "../web.config".  Now a body whose Content-Type
# names JSON as Laravel's isJson() reads it ("/json" or "+json" anywhere
# in the header), or as Rails does (text/x-json: "-json") is parsed
# strictly: a top-level field named like a
# checked param or "_method" is refused with reason "body", and so is a
# body that does not parse (a lenient reader upstream, with comments,
# single quotes or a key given twice, could still find such a field).
# Nested fields, other fields and other media types pass.

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
    match: { method: POST, path: "/files/{dir}" }
    params: { dir: '^[a-z]+$' }
    upstream: echo
    to: "/data/{dir}"
    query:
      allow: [file, page]
      patterns: { file: '^[a-z]+\.txt$' }
    body: { max_bytes: 1024 }
  - name: plain
    clients: [local]
    match: { method: POST, path: "/plain" }
    upstream: echo
    to: "/plain"
    body: { max_bytes: 1024 }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf);

$t->start_echo(8081);
$t->run;

my $json = 'application/json';

# [name, path, Content-Type, body]
my @refused = (
    [ 'a checked query parameter', '/files/abc?file=a.txt', $json,
      '{"file":"../web.config"}' ],
    [ 'in another case', '/files/abc?file=a.txt', $json,
      '{"a":1,"FILE":"../web.config"}' ],
    [ 'a path param', '/files/abc', $json, '{"dir":".."}' ],
    [ 'escaped', '/files/abc', $json, '{"d\u0069r":".."}' ],
    [ 'as application/vnd.api+json', '/files/abc', 'application/vnd.api+json',
      '{"dir":".."}' ],
    [ 'as "/json" in a parameter', '/files/abc', 'text/plain; x=a/json',
      '{"dir":".."}' ],
    [ 'in upper case', '/files/abc', 'APPLICATION/JSON', '{"dir":".."}' ],
    [ 'as text/x-json, which Rails reads as JSON', '/files/abc?file=a.txt',
      'text/x-json', '{"file":"../web.config"}' ],
    [ 'as application/x-json', '/files/abc', 'application/x-json',
      '{"_method":"DELETE"}' ],
    [ '"_method" on a route without params', '/plain', $json,
      '{"_method":"DELETE"}' ],
    [ 'a key given twice', '/plain', $json, '{"a":1,"a":2}' ],
    [ 'a comment', '/files/abc', $json, '{/* x */"a":1}' ],
    [ 'single quotes', '/files/abc', $json, "{'dir':'..'}" ],
    [ 'trailing data', '/plain', $json, '{"a":1} {"_method":"PUT"}' ],
    [ 'a NUL in a name', '/files/abc', $json, '{"di\\u0000r":".."}' ],
);

my @passed = (
    [ 'other fields', '/files/abc?file=a.txt', $json,
      '{"a":1,"files":2,"xfile":3}' ],
    [ 'a query parameter without a pattern', '/files/abc', $json,
      '{"page":".."}' ],
    [ 'nested', '/files/abc', $json, '{"x":{"dir":"..","_method":"PUT"}}' ],
    [ 'an array', '/files/abc', $json, '[{"dir":".."}]' ],
    [ 'a string', '/plain', $json, '"_method"' ],
    [ 'not JSON', '/files/abc', 'text/plain', '{"dir":".."}' ],
    [ 'values jansson would refuse', '/files/abc', $json,
      '{"n":123456789012345678901234567890,"s":"a\\u0000b"}' ],
    [ 'application/x-ndjson', '/files/abc', 'application/x-ndjson',
      "{\"a\":1}\n{\"a\":2}\n" ],
);

plan tests => 2 * @refused + @passed + 1;

# each refused case: 403, reason "body", and not forwarded
$p->posts_refused(\@refused);
$p->posts_passed(\@passed);

is($t->error_log_check, '', 'no alerts');
