#!/usr/bin/perl

# ngx_http_airlock_module: the charset of a body read for its names.
# A route with a body and no json rules reads a JSON body's top-level
# names, to refuse "_method" and a name like a checked path or query
# param (135-airlock-json-shadow.t), but took any charset: under
# "application/json; charset=utf-7", {"+AF8-method":"DELETE"} passed,
# and Express's body-parser (iconv-lite) reads it as {"_method":"DELETE"},
# which method-override runs as a DELETE; {"fil+AGU-":...} is "file",
# {"+AGk-d":...} is "id".  Now such a body is held to the rule of the
# json routes: well-formed parameters and no charset but utf-8 (or
# utf8), whatever JSON media type it has, and on a route whose
# content_type is application/json too; else 403 "body".  A JSON body
# with a byte order mark (UTF-8, UTF-16, UTF-32) does not parse strictly
# and is refused.  Forms, already held to ASCII charsets, now also
# refuse a UTF-16 or UTF-32 byte order mark and read the first field
# after a UTF-8 one, as ASP.NET Core's FormReader does.  Other charsets
# on bodies not read for names (text/plain) still pass, on a route
# without query patterns (156-airlock-query-charset.t).

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
  - name: items
    clients: [local]
    match: { method: POST, path: "/items/{id}" }
    params: { id: '^[0-9]+$' }
    upstream: echo
    to: "/items/{id}"
    query: { allow: [file], patterns: { file: '^[a-z]+\.txt$' } }
    body: { max_bytes: 1024 }
  - name: typed
    clients: [local]
    match: { method: POST, path: "/typed/{id}" }
    params: { id: '^[0-9]+$' }
    upstream: echo
    to: "/typed/{id}"
    body: { max_bytes: 1024, content_type: application/json }
  - name: plain
    clients: [local]
    match: { method: POST, path: /plain }
    upstream: echo
    to: /plain
    body: { max_bytes: 1024 }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf);

$t->start_echo(8081);
$t->run;

my $items = '/items/1?file=a.txt';
my $u7 = 'application/json; charset=utf-7';
my $form = 'application/x-www-form-urlencoded';

# [name, path, Content-Type, body]
my @refused = (
    [ '_method in UTF-7', $items, $u7, '{"+AF8-method":"DELETE"}' ],
    [ 'a checked query param in UTF-7', $items, $u7,
      '{"fil+AGU-":"../web.config"}' ],
    [ 'a path param in UTF-7', $items, $u7, '{"+AGk-d":"../x"}' ],
    [ '_method in UTF-7-IMAP', $items, 'application/json; charset=utf-7-imap',
      '{"&AF8-method":"DELETE"}' ],
    [ 'UTF-7, other names', $items, $u7, '{"a":1}' ],
    [ 'UTF-7 quoted', $items, 'application/json; charset="UTF-7"',
      '{"+AF8-method":"DELETE"}' ],
    [ 'charset*', $items, "application/json; charset*=utf-7''",
      '{"+AF8-method":"DELETE"}' ],
    [ 'a quoted charset with a backslash', $items,
      'application/json; charset="utf\\-8"', '{"a":1}' ],
    [ 'UTF-16', $items, 'application/json; charset=utf-16', '{"a":1}' ],
    [ 'a charset after ","', $items, 'application/json,charset=utf-7',
      '{"+AF8-method":"DELETE"}' ],
    [ '+json in UTF-7', $items, 'application/vnd.api+json; charset=utf-7',
      '{"+AF8-method":"DELETE"}' ],
    [ 'text/x-json in UTF-7', $items, 'text/x-json; charset=utf-7',
      '{"+AF8-method":"DELETE"}' ],
    [ 'content_type application/json, UTF-7', '/typed/1', $u7,
      '{"+AF8-method":"DELETE"}' ],
    [ 'JSON with a UTF-8 byte order mark', $items, 'application/json',
      "\xef\xbb\xbf" . '{"_method":"DELETE"}' ],
    [ 'JSON in UTF-16LE with its byte order mark', $items,
      'application/json', "\xff\xfe" . utf16le('{"_method":"DELETE"}') ],
    [ 'JSON in UTF-32BE with its byte order mark', $items,
      'application/json',
      "\0\0\xfe\xff" . join('', map { "\0\0\0$_" } split //, '{"a":1}') ],
    [ 'control: _method in a JSON body', $items, 'application/json',
      '{"_method":"DELETE"}' ],
    [ 'control: a form in UTF-7', $items, "$form; charset=utf-7",
      '+AF8-method=DELETE' ],
    [ 'a form after a UTF-8 byte order mark', $items, $form,
      "\xef\xbb\xbf_method=DELETE" ],
    [ 'a form in UTF-16LE with its byte order mark', $items, $form,
      "\xff\xfe" . utf16le('_method=DELETE') ],
);

my @passed = (
    [ 'utf-8', $items, 'application/json; charset=utf-8', '{"a":1}' ],
    [ 'no charset', $items, 'application/json', '{"a":1}' ],
    [ 'utf8, quoted, any case', $items, 'Application/JSON; charset="UTF8"',
      '{"a":1}' ],
    [ 'text/plain in UTF-7 is not read as JSON', '/plain',
      'text/plain; charset=utf-7', '{"+AF8-method":"DELETE"}' ],
    [ 'content_type application/json, utf-8', '/typed/1',
      'application/json;charset=utf-8', '{"a":1}' ],
    [ 'a form after a UTF-8 byte order mark, other fields', $items, $form,
      "\xef\xbb\xbfa=1&b=2" ],
);

plan tests => 2 * @refused + @passed + 1;

sub utf16le {
    return join('', map { "$_\0" } split //, shift);
}

# each refused case: 403, reason "body", and not forwarded
$p->posts_refused(\@refused);
$p->posts_passed(\@passed);

is($t->error_log_check, '', 'no alerts');
