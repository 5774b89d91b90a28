#!/usr/bin/perl

# A route's own inject: a Content-Type it injects reaches the upstream
# whether the request has a body or not (157 drops only the client's),
# and Tomcat with useBodyEncodingForURI, or System.Web, decodes the query
# in the charset it names: under "text/plain; charset=ibm037" the
# ?name=KKaKKa that '^[A-Za-z0-9]+$' took is "../../" there.  So on a
# route with query patterns the policy refuses, at "nginx -t" and at
# "airlockctl check", with the file, line and column of the value, an
# injected Content-Type whose charset is not utf-8, us-ascii or
# iso-8859-1, and one with a secret in it.  Without query patterns, or
# with such a charset, it loads and is sent as before.

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
my $sealed = $p->seal('FAKE-content-type');

# one route: its query (a pattern or none) and its injected Content-Type
sub policy {
    my ($query, $ctype) = @_;
    return <<"EOF";
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
secrets:
  ct: { sealed: "$sealed" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: items
    clients: [local]
    match: { method: GET, path: /items }
    upstream: echo
    to: /items
    query: $query
    inject:
      Accept: text/plain
      Content-Type: $ctype
alerts:
  deny: { threshold: 1000, window: 60s }
EOF
}

my $checked = "{ allow: [name], patterns: { name: '^[A-Za-z0-9]+\$' } }";
my $unchecked = '{ allow: [name] }';

my $d = $t->testdir;
my $ctl = $p->ctl;

# [name, query, Content-Type, message]
my @refused = (
    [ 'EBCDIC', $checked, '"text/plain; charset=ibm037"',
      qr/route "items" injects Content-Type "text\/plain; charset=ibm037": on a route with query patterns its charset must be utf-8, us-ascii or iso-8859-1, as an upstream may read the query in it/ ],
    [ 'UTF-16, unquoted type', $checked, 'text/plain;charset=UTF-16',
      qr/route "items" injects Content-Type "text\/plain;charset=UTF-16"/ ],
    [ 'charset in another parameter\'s name', $checked,
      '"text/plain; xcharset=utf-7"',
      qr/its charset must be utf-8, us-ascii or iso-8859-1/ ],
    [ 'a secret in it', $checked, '"text/plain; {ct}"',
      qr/route "items" injects a secret in Content-Type: on a route with query patterns it must be a constant/ ],
);

my @loads = (
    [ 'utf-8 beside query patterns', $checked,
      '"text/plain; charset=UTF-8"', 'text/plain; charset=UTF-8' ],
    [ 'no charset beside query patterns', $checked,
      'application/x-www-form-urlencoded',
      'application/x-www-form-urlencoded' ],
    [ 'EBCDIC without query patterns', $unchecked,
      '"text/plain; charset=ibm037"', 'text/plain; charset=ibm037' ],
);

plan tests => 4 * @refused + 3 * @loads + 1;

$t->write_file_expand('nginx.conf', $p->conf);

for my $c (@refused) {
    my ($name, $query, $ctype, $msg) = @$c;

    $t->write_file_expand('policy.yaml', policy($query, $ctype));

    my ($status, $out) = $t->reload_test;
    isnt($status, 0, "$name: nginx -t fails");
    like($out, qr{\[emerg\] \Q$d\E/policy\.yaml:17:21: .*$msg},
         "$name: nginx -t names the place and the reason");

    $out = `$ctl check $d/policy.yaml 2>&1`;
    isnt($?, 0, "$name: airlockctl check fails");
    like($out, qr{\Q$d\E/policy\.yaml:17:21: .*$msg},
         "$name: airlockctl check names the place and the reason");
}

$t->start_echo(8081);

for my $c (@loads) {
    my ($name, $query, $ctype, $want) = @$c;

    $t->write_file_expand('policy.yaml', policy($query, $ctype));

    my ($status, $out) = $t->reload_test;
    is($status, 0, "$name: nginx -t passes") or diag($out);

    $t->nginx_pid ? $t->reload : $t->run;

    my $r = parse_response(http("GET /items?name=abc HTTP/1.0\r\n\r\n"));
    is($r->{status}, 200, "$name: 200");

    my $last = ($t->echo_requests(8081))[-1];
    is_deeply([map { $_->[1] } grep { lc $_->[0] eq 'content-type' }
                   @{$last->{headers}}],
              [$want], "$name: the upstream gets it");
}

is($t->error_log_check, '', 'no alerts');
