#!/usr/bin/perl
# airlockctl tools: the tool definitions a model is offered, built from the
# policy (the example policy, as shipped), in OpenAI and MCP form.

use strict;
use warnings;
use FindBin;
use File::Temp qw(tempdir);
use JSON::PP;
use Test::More;

my $top = "$FindBin::Bin/../..";
my $build = $ENV{AIRLOCK_BUILD} // "$top/build";
my $ctl = "$build/airlockctl";
my $example = "$top/conf/policy.example.yaml";
my $dir = tempdir(CLEANUP => 1);

plan skip_all => "$ctl not built" unless -x $ctl || $ENV{CI};
plan tests => 21;

sub run {
    my (@args) = @_;
    my $cmd = join ' ', map { quotemeta } $ctl, @args;
    my $out = `$cmd 2>$dir/stderr`;
    my $rc = $? >> 8;
    open my $fh, '<', "$dir/stderr" or die;
    my $err = do { local $/; <$fh> };
    return ($rc, $out, $err);
}

my ($rc, $out, $err) = run('tools', $example, '--client', 'agent');
is($rc, 0, 'tools: exit 0');
my $tools = decode_json($out);
is_deeply([ map { $_->{function}{name} } @$tools ],
          [ qw(prometheus-query logs deploys github-pull-request run_python) ],
          'one tool per route granted to agent, and run_python');
is($tools->[0]{type}, 'function', 'OpenAI form: type function');

my %by = map { $_->{function}{name} => $_->{function} } @$tools;
like($by{'prometheus-query'}{description},
     qr/^instant PromQL queries, read-only \(GET \/prometheus\/query/,
     'the route\'s description, method and path');
my $q = $by{'prometheus-query'}{parameters}{properties}{query};
is_deeply([ sort keys %{$q->{properties}} ], [ 'query', 'time' ],
          'query: the allowed parameters');
is_deeply($q->{required}, [ 'query' ], 'query: the required one');
is($q->{properties}{time}{pattern}, '^[0-9]+(\.[0-9]+)?$',
   'query: a pattern');
ok(!$q->{additionalProperties}, 'query: nothing else');

my $p = $by{logs}{parameters};
is($p->{properties}{params}{properties}{service}{pattern},
   '^[a-z0-9][a-z0-9-]{0,62}$', 'path param with its pattern');
is_deeply($p->{required}, [ 'params' ], 'path params required');

my $b = $by{'github-pull-request'}{parameters}{properties}{body};
is($b->{properties}{head}{pattern}, '^remediation/[A-Za-z0-9._/-]{1,200}$',
   'body: a string rule');
is($b->{properties}{draft}{type}, 'boolean', 'body: a typed rule');
is_deeply([ sort @{$b->{required}} ], [ qw(base head title) ],
          'body: the required members');

my $rp = $by{run_python}{parameters};
is_deeply($rp->{properties}{inputs}{items}{properties}{route}{enum},
          [ qw(prometheus-query logs deploys) ],
          'run_python: inputs from the routes the worker may fetch');

($rc, $out) = run('tools', $example, '--client', 'agent', '--format', 'mcp');
my $mcp = decode_json($out);
is_deeply([ map { $_->{name} } @{$mcp->{tools}} ],
          [ map { $_->{function}{name} } @$tools ], 'mcp: the same tools');
is_deeply($mcp->{tools}[1]{inputSchema}, $by{logs}{parameters},
          'mcp: the same schema as inputSchema');

($rc, $out) = run('tools', $example, '--client', 'tools', '--sandbox',
                  'none');
is_deeply([ map { $_->{function}{name} } @{decode_json($out)} ],
          [ 'prometheus-query' ], 'another client, no run_python');

($rc, $out, $err) = run('tools', $example, '--client', 'nobody');
is($rc, 1, 'unknown client: exit 1');
like($err, qr/has no client "nobody"/, 'unknown client: said so');
($rc) = run('tools', $example, '--client', 'agent', '--format', 'xml');
is($rc, 2, 'unknown format: exit 2');
($rc) = run('tools', $example);
is($rc, 2, 'no client: usage, exit 2');
