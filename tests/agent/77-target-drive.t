#!/usr/bin/perl

# airlock-agent: a path parameter that starts with a drive ("C:x") is
# refused by the proxy unless the route's param takes one ("drive:
# true"): "request target refused: drive letter", whatever the param's
# pattern.  The agent parsed the target it built with the proxy's parser
# (75-target-segments.t), which keeps such a segment for the route to
# judge, so it sent "/files/C:x" and the proxy refused it: a denial
# counted against the agent's client, its alerts and its quarantine; and
# a run_python input so made was a job the proxy refused the worker.
# Now al_route_target() refuses it as the proxy would: an "error" event,
# bad_tool_arguments, no request.  Where the param takes a drive it is
# sent, and a colon later in a param ("ab:c") is no drive.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use AgentTest;

my $a = AgentTest->new;
my $t = $a->t;
$a->setup(routes => <<'EOF2', agent => [ '--max-wall', 60000 ]);
  - name: files
    description: one file's metadata
    clients: [agent, worker]
    match: { method: GET, path: "/files/{name}" }
    params: { name: '.+' }
    upstream: svc
    to: "/api/v1/files/{name}"
  - name: cells
    description: a range of cells
    clients: [agent]
    match: { method: GET, path: "/cells/{range}" }
    params: { range: { pattern: '^[A-Za-z0-9:]+$', drive: true } }
    upstream: svc
    to: "/api/v1/cells/{range}"
EOF2
$a->start_worker;

plan tests => 10;

sub call {
    my ($route, $param, $v) = @_;
    return { name => $route, arguments => { params => { $param => $v } } };
}

$a->script({ tool_calls => [ call('files', 'name', 'C:x'),
                             call('files', 'name', 'c:x'),
                             call('files', 'name', 'ab:c'),
                             call('cells', 'range', 'A:B') ] },
           { pieces => [ 'done' ] });
my $ev = $a->ask('drive-1', 'look at the files');

my @err = of_type('error', $ev);
is(join(',', map { $_->{code} } @err), 'bad_tool_arguments,bad_tool_arguments',
   'each drive where the route takes none: bad_tool_arguments')
    or diag explain \@err;
like(($err[0] // {})->{message} // '', qr/proxy refuses \(drive letter\)/,
     'the message says why');

my @tc = of_type('tool_call', $ev);
is(join(' ', map { $_->{target} } @tc), '/files/ab:c /cells/A:B',
   'the others made: a colon past the first character, a drive the '
   . 'route takes');
is(scalar(of_type('denial', $ev)), 0, 'no denial');

my $done = (of_type('done', $ev))[0] // {};
is_deeply([ $done->{outcome}, $done->{denials} ], [ 'answer', 0 ],
          'the run answered, no denial counted');

my @deny = grep { ($_->{client} // '') eq 'agent' } $a->proxy->deny_log;
is(scalar @deny, 0, 'the proxy refused nothing of the agent\'s')
    or diag explain \@deny;

# ---- a run_python input: no job the worker would be denied -------------

sub job {
    my ($name) = @_;
    return { name => 'run_python', arguments => {
        script => "print(42)\n",
        inputs => [ { name => 'in', route => 'files',
                      params => { name => $name } } ] } };
}

$a->script({ tool_calls => [ job('C:x'), job('ab:c') ] },
           { pieces => [ 'done' ] });
$ev = $a->ask('drive-2', 'a job over the files');

@err = of_type('error', $ev);
like(join(',', map { "$_->{code} $_->{message}" } @err),
     qr/^bad_tool_arguments run_python: input 0: .*drive letter/,
     'the input "C:x": bad_tool_arguments, naming the input');
is(join(',', map { $_->{status} // '' } of_type('job', $ev)), 'ok',
   'one job run: the good one');
is(scalar($a->jsonl('jobs.log')), 1, 'one job queued for the worker');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
