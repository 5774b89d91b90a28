#!/usr/bin/perl
# A JSON field the json rules check, named like a query parameter the
# route allows or like one of its path params (docs/policy.md, query):
# check and explain refuse the policy at the field's line and column and
# exit non-zero, as nginx -t does (tests/nginx/138-*).  They loaded it,
# and explain allowed POST /github/pull-request?head=main&Base=release.
# A query name nested under a path param's name ("Ref[x]") is refused as
# the param's own name is.

use strict;
use warnings;
use FindBin;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Ctl qw(ctl_setup write_file run_ctl);

my ($top, $build, $ctl, $dir) = ctl_setup();

my $policy = <<'Y';
version: 1
clients:
  agent: { unix_uid: 1000 }
upstreams:
  github: { url: "https://api.github.com" }
routes:
  - name: github-pull-request
    clients: [agent]
    match: { method: POST, path: "PATH" }
    PARAMS
    upstream: github
    to: /repos/acme/infra/pulls
    query: { allow: [QUERY] }
    body:
      max_bytes: 256
      json: { head: '^remediation/[A-Za-z0-9._/-]+$', base: '^main$' }
alerts:
  deny: { threshold: 3, window: 60s }
Y

sub policy {
    my ($name, $path, $params, $query) = @_;
    (my $text = $policy) =~ s/PATH/$path/;
    $text =~ s/PARAMS/$params/;
    $text =~ s/QUERY/$query/;
    return write_file($name, $text);
}

my $query = policy('query.yaml', '/github/pull-request', '# none',
                   'head, Base');
my $path = policy('path.yaml', '/prs/{head}', "params: { head: '.+' }",
                  'page');
my $apart = policy('apart.yaml', '/github/pull-request', '# none',
                   'head_ref, page');

my ($rc, $out);

($rc, $out) = run_ctl('check', $query);
my $why = 'JSON field "head" has the name of the query parameter "head", '
    . 'which an upstream may read for it';
ok($rc != 0 && $out =~ /^\Q$query\E:16:15: \Q$why\E/m,
   'check: a query parameter named like a checked JSON field')
    or diag("rc $rc: $out");

($rc, $out) = run_ctl('explain', $query, '--client', 'agent', 'POST',
                  '/github/pull-request?head=main&Base=release');
ok($rc != 0 && $out =~ /^\Q$query\E:16:15: JSON field "head"/m
   && $out !~ /forward:/,
   'explain: refuses the policy, forwards nothing') or diag("rc $rc: $out");

($rc, $out) = run_ctl('check', $path);
$why = 'JSON field "head" has the name of the path param {head}';
ok($rc != 0 && $out =~ /^\Q$path\E:16:15: \Q$why\E/m,
   'check: a path param named like a checked JSON field')
    or diag("rc $rc: $out");

# a query name nested under a path param's name ("Ref[x]" is ref's, as
# PHP and Rack read it): refused as the plain name is
my $nested = policy('nested.yaml', '/prs/{ref}', "params: { ref: '.+' }",
                    '"Ref[x]"');
($rc, $out) = run_ctl('check', $nested);
$why = 'query parameter "Ref[x]" has the name of the path param {ref}';
ok($rc != 0 && $out =~ /^\Q$nested\E:\d+:\d+: \Q$why\E/m,
   'check: a query name nested under a path param\'s name')
    or diag("rc $rc: $out");

($rc, $out) = run_ctl('check', $apart);
ok($rc == 0 && $out =~ /^\Q$apart\E: ok \(/m, 'check: names apart load')
    or diag("rc $rc: $out");

done_testing();
