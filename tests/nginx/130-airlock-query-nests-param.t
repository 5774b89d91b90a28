#!/usr/bin/perl

# ngx_http_airlock_module: a query parameter named like one of the route's
# path params is refused by "nginx -t" (Spring's @ModelAttribute binds the
# query's over the path's), and so is one that PHP and Rack nest under a
# path param's name: "Id[x]" and "[]id" are read under the key id, as
# the JSON-field check already read "pr[head]" as pr.  A name that only
# starts like the param's ("idx[0]") loads, and the route still checks
# its path param.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);

# QUERY is filled in per case
my $policy = <<'EOF';
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: item
    clients: [local]
    match: { method: GET, path: "/items/{id}" }
    params: { id: '^[0-9]+$' }
    upstream: echo
    to: "/items/{id}"
    query: { allow: [page, QUERY] }
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

sub policy {
    my ($query) = @_;
    (my $text = $policy) =~ s/QUERY/$query/;
    return $text;
}

plan tests => 9;

$t->write_file_expand('nginx.conf', $p->conf(key => 0));

my $d = $t->testdir;
my ($status, $out);

# the name's quote: line 13, column 28, after "[page, "
for my $c ([ '"Id[x]"', 'Id[x]' ], [ '"[]id"', '[]id' ]) {
    my ($yaml, $name) = @$c;
    my $why = "query parameter \"$name\" has the name of the path param {id}";

    $t->write_file_expand('policy.yaml', policy($yaml));
    ($status, $out) = $t->reload_test;

    isnt($status, 0, "nginx -t fails: $name");
    like($out, qr{\[emerg\] \Q$d\E/policy\.yaml:13:28: \Q$why\E},
         "file:line:column and the reason: $name");
}

# a name apart loads, and the route checks its param as before

$t->write_file_expand('policy.yaml', policy('"idx[0]"'));
($status, $out) = $t->reload_test;
is($status, 0, 'idx[0]: nginx -t passes') or diag($out);

$t->start_echo(8081);
$t->run;

sub get { parse_response(http("GET $_[0] HTTP/1.0\r\n\r\n"))->{status} }

is(get('/items/7?idx%5B0%5D=1'), 200, 'idx[0]: allowed');
is(get('/items/x?idx%5B0%5D=1'), 403, 'a bad path param: refused');
is(get('/items/7?Id%5Bx%5D=1'), 403, 'Id[x], not allowed: refused');

is($t->error_log_check, '', 'no alerts');
