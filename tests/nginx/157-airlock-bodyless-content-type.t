#!/usr/bin/perl

# ngx_http_airlock_module: Content-Type reaches the upstream only with a
# body.  It was a kept header on every route, so a GET (a route that
# takes no body) or a POST with an empty body passed "Content-Type:
# text/plain; charset=ibm037" on: Tomcat with useBodyEncodingForURI
# decodes the query in the charset it names, and GET /items?name=KKaKKa
# matched '^[A-Za-z0-9]+$' here yet reads as "../../" there (in EBCDIC
# 'K' is '.' and 'a' is '/').  Now a request with no body byte loses its
# Content-Type, whatever it says; one with a body keeps it.

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
    match: { method: GET, path: /items }
    upstream: echo
    to: /items
    query:
      allow: [name]
      patterns: { name: '^[A-Za-z0-9]+$' }
  - name: upload
    clients: [local]
    match: { method: POST, path: /upload }
    upstream: echo
    to: /upload
    query:
      allow: [name]
      patterns: { name: '^[A-Za-z0-9]+$' }
    body: { max_bytes: 1024 }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

$t->write_file_expand('nginx.conf', $p->conf);

$t->start_echo(8081);
$t->run;

# [name, request, Content-Type the upstream gets (undef: none)]
my $ebcdic = 'text/plain; charset=ibm037';
my @cases = (
    [ 'GET: no Content-Type',
      "GET /items?name=KKaKKa HTTP/1.0\r\nContent-Type: $ebcdic\r\n\r\n",
      undef ],
    [ 'GET, two of them: none',
      "GET /items?name=KKaKKa HTTP/1.0\r\nContent-Type: $ebcdic\r\n"
      . "Accept: text/plain\r\n\r\n",
      undef ],
    [ 'POST, empty body: no Content-Type',
      "POST /upload?name=KKaKKa HTTP/1.0\r\nContent-Type: $ebcdic\r\n"
      . "Content-Length: 0\r\n\r\n",
      undef ],
    [ 'POST, empty chunked body: no Content-Type',
      "POST /upload?name=KKaKKa HTTP/1.1\r\nHost: localhost\r\n"
      . "Connection: close\r\nContent-Type: $ebcdic\r\n"
      . "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
      undef ],
    [ 'POST with a body: its Content-Type',
      "POST /upload?name=abc HTTP/1.0\r\n"
      . "Content-Type: text/plain; charset=utf-8\r\n"
      . "Content-Length: 4\r\n\r\ndata",
      'text/plain; charset=utf-8' ],
);

plan tests => 2 * @cases + 2;

for my $c (@cases) {
    my ($name, $req, $want) = @$c;
    my $before = $p->echo_count;
    my $r = parse_response(http($req));

    is($r->{status}, 200, "$name: 200");

    my @seen = $t->echo_requests(8081);
    my @ct = @seen > $before
             ? map { $_->[1] } grep { lc $_->[0] eq 'content-type' }
                   @{$seen[-1]{headers}}
             : ('not forwarded');

    is_deeply(\@ct, defined $want ? [$want] : [], $name);
}

# the kept headers beside it still pass
my $r = parse_response(http("GET /items?name=abc HTTP/1.0\r\n"
                            . "Accept: text/plain\r\n"
                            . "Content-Type: $ebcdic\r\n\r\n"));
my $last = ($t->echo_requests(8081))[-1];
is_deeply([map { $_->[1] } grep { lc $_->[0] eq 'accept' }
               @{$last->{headers}}],
          ['text/plain'], 'GET: Accept still passes');

is($t->error_log_check, '', 'no alerts');
