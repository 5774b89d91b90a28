#!/usr/bin/perl

# ngx_http_airlock_module: a JSON field the route's json rules check,
# named like one of its query parameters or path params.  Rails merges
# the query over a JSON body's fields and the path params over both,
# Symfony's get() (Laravel's $request->get()) reads the query first, and
# ASP.NET binds names in any case: with "query: { allow: [head, Base] }"
# beside json rules for head and base, POST
# /github/pull-request?head=main&Base=release with the body
# {"head":"remediation/x","base":"main"} passed the rules and reached
# such an upstream as head "main", base "release"; a path param {head}
# overrode the body's head in Rails the same way.  "nginx -t" now
# refuses the policy at the JSON field's line and column; a route whose
# names are apart loads and checks its body as before.

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

# QUERY, PATH, PARAMS and FIELD are filled in per case
my $policy = <<'EOF';
version: 1
clients:
  local: { cidr: [127.0.0.1/32] }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: github-pull-request
    clients: [local]
    match: { method: POST, path: "PATH" }
    PARAMS
    upstream: echo
    to: /repos/acme/infra/pulls
    query: { allow: [QUERY] }
    body:
      max_bytes: 256
      json:
        FIELD: '^remediation/[A-Za-z0-9._/-]+$'
        base: '^main$'
alerts:
  deny: { threshold: 1000, window: 60s }
EOF

sub policy {
    my (%o) = @_;
    my $text = $policy;

    $text =~ s/QUERY/$o{query}/;
    $text =~ s/PATH/$o{path} \/\/ '\/github\/pull-request'/e;
    $text =~ s/PARAMS/$o{params} \/\/ '# no params'/e;
    $text =~ s/FIELD/$o{field} \/\/ 'head'/e;

    return $text;
}

plan tests => 12;

$t->write_file_expand('nginx.conf', $p->conf);

my $d = $t->testdir;
my ($status, $out);

# [name, policy options, line:column of the field, message]
my @refused = (
    [ 'a query parameter without a pattern, in another case',
      { query => 'head2, Base' }, '18:9',
      'JSON field "base" has the name of the query parameter "Base", '
      . 'which an upstream may read for it' ],
    [ 'a query parameter of the same name',
      { query => 'head, page' }, '17:9',
      'JSON field "head" has the name of the query parameter "head"' ],
    [ 'a path param',
      { query => 'page', path => '/prs/{head}',
        params => "params: { head: '.+' }" }, '17:9',
      'JSON field "head" has the name of the path param {head}' ],
    [ 'a path param, "." for "_"',
      { query => 'page', path => '/prs/{pr_head}',
        params => "params: { pr_head: '.+' }", field => 'PR.head' }, '17:9',
      'JSON field "PR.head" has the name of the path param {pr_head}' ],
);

for my $c (@refused) {
    my ($name, $o, $where, $why) = @$c;

    $t->write_file_expand('policy.yaml', policy(%$o));
    ($status, $out) = $t->reload_test;

    isnt($status, 0, "nginx -t fails: $name");
    like($out, qr{\[emerg\] \Q$d\E/policy\.yaml:\Q$where\E: \Q$why\E},
         "file:line:column and the reason: $name");
}

# names apart: the route loads, and its rules still hold

$t->write_file_expand('policy.yaml', policy(query => 'head_ref, page'));
($status, $out) = $t->reload_test;
is($status, 0, 'names apart: nginx -t passes') or diag($out);

$t->start_echo(8081);
$t->run;

sub post {
    my ($target, $body) = @_;
    return parse_response(http("POST $target HTTP/1.0\r\n"
        . "Content-Type: application/json\r\n"
        . "Content-Length: " . length($body) . "\r\n\r\n$body"));
}

is(post('/github/pull-request?head_ref=main',
        '{"head":"remediation/x","base":"main"}')->{status}, 200,
   'names apart: a checked body is forwarded');
is(post('/github/pull-request?page=1',
        '{"head":"main","base":"main"}')->{status}, 403,
   'names apart: a body the rules refuse is refused');

is($t->error_log_check, '', 'no alerts');
