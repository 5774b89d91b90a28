#!/usr/bin/perl

# ngx_http_airlock_module: the charset of a body on a route that checks
# its query.  System.Web (ASP.NET on .NET Framework) decodes the query
# of a request that has a body in the charset its Content-Type names,
# whatever the body is.  A body read neither as JSON nor as a form
# (text/plain, application/octet-stream) took any charset, so
# POST /upload?name=KKaKKa with "Content-Type: text/plain;
# charset=ibm037" passed the pattern '^[A-Za-z0-9]+$' and reached such
# an upstream as name "../../" (in EBCDIC 'K' is '.' and 'a' is '/').
# Now on a route with a query pattern every body is held to a form's
# charsets (utf-8, us-ascii, iso-8859-1 and their names), wherever
# "charset" is in the header: else 403 "body", never forwarded.  A route
# without query patterns still takes any charset on such a body.

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
  - name: upload
    clients: [local]
    match: { method: POST, path: /upload }
    upstream: echo
    to: /upload
    query:
      allow: [name]
      require: [name]
      patterns: { name: '^[A-Za-z0-9]+$' }
    body: { max_bytes: 1024 }
  - name: raw
    clients: [local]
    match: { method: POST, path: /raw }
    upstream: echo
    to: /raw
    query: { allow: [name] }
    body: { max_bytes: 1024 }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf);

$t->start_echo(8081);
$t->run;

# [name, target, Content-Type]
my @refused = (
    [ 'EBCDIC', '/upload?name=KKaKKa', 'text/plain; charset=ibm037' ],
    [ 'EBCDIC, quoted', '/upload?name=KKaKKa',
      'application/octet-stream; charset="IBM500"' ],
    [ 'UTF-16BE', '/upload?name=abc', 'text/plain; charset=utf-16be' ],
    [ 'UTF-7', '/upload?name=abc', 'text/plain; charset=utf-7' ],
    [ 'in another parameter\'s name', '/upload?name=KKaKKa',
      'text/plain; xcharset=ibm037' ],
);

my @passed = (
    [ 'utf-8', '/upload?name=KKaKKa', 'text/plain; charset=utf-8' ],
    [ 'iso-8859-1', '/upload?name=abc', 'text/plain; charset=ISO-8859-1' ],
    [ 'no charset', '/upload?name=abc', 'application/octet-stream' ],
    [ 'no query pattern: any charset', '/raw?name=KKaKKa',
      'text/plain; charset=ibm037' ],
);

plan tests => 2 * @refused + @passed + 1;

sub post {
    my ($target, $ct) = @_;
    return "POST $target HTTP/1.0\r\n"
           . "Content-Type: $ct\r\n"
           . "Content-Length: 4\r\n\r\ndata";
}

for my $c (@refused) {
    my ($name, $target, $ct) = @$c;
    my $before = $p->echo_count;
    my $raw = http(post($target, $ct));
    my $r = parse_response($raw);
    my $j = json_body($raw);

    ok($r->{status} == 403 && $j && $j->{reason} eq 'body',
       "refused: $name") or diag("status $r->{status}");
    is($p->echo_count, $before, "and not forwarded: $name");
}

for my $c (@passed) {
    my ($name, $target, $ct) = @$c;
    is(parse_response(http(post($target, $ct)))->{status}, 200,
       "passes: $name");
}

is($t->error_log_check, '', 'no alerts');
