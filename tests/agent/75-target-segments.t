#!/usr/bin/perl

# airlock-agent: a path parameter the model chose cannot reshape the
# request target.  Each value is percent-encoded ('/', '?', '#', '%'
# escaped), but ".", ".." and "" are kept as they are, and "..%20"
# (".. ", what IIS reads as "..") and a drive ("C:..") are made of
# bytes the escaping keeps: the agent sent "/logs/..", "/logs/" and the
# rest, the proxy refused them (or nginx did), and each was a denial
# counted against the agent's client, its alerts and its quarantine.
# Now the target is parsed as the proxy parses it before anything is
# sent: such a call is an "error" event, bad_tool_arguments, the model
# is told, no request is made, and a good call in the same answer goes
# on as before.  The same holds for a run_python input's target, which
# the worker builds from it: no job is queued that the proxy would
# refuse the worker (a denial of the worker's client, which every run's
# jobs share).

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
$a->setup;

$a->start_worker;

plan tests => 13;

my @bad = ('..', '.', '', '.. ', 'C:..', '%2e%2e');
my @calls = map { { name => 'logs',
                    arguments => { params => { service => $_ } } } } @bad;
push @calls, { name => 'logs',
               arguments => { params => { service => 'checkout-api' } } };

$a->script({ tool_calls => \@calls }, { pieces => [ 'done' ] });
my $ev = $a->ask('segs-1', 'read the logs');

my @err = of_type('error', $ev);
is(join(',', map { $_->{code} } @err),
   join(',', ('bad_tool_arguments') x @bad),
   'each bad path parameter: bad_tool_arguments');
like(($err[0] // {})->{message} // '', qr/proxy refuses \(dot segment\)/,
     'the message says why');

my @tc = of_type('tool_call', $ev);
is(scalar @tc, 1, 'one call made: the good one');
is(($tc[0] // {})->{target}, '/logs/checkout-api', 'its target');
is(scalar(of_type('tool_result', $ev)), 1, 'and its result');
is(scalar(of_type('denial', $ev)), 0, 'no denial');

my $done = (of_type('done', $ev))[0] // {};
is_deeply([ $done->{outcome}, $done->{denials} ], [ 'answer', 0 ],
          'the run answered, no denial counted');

my @deny = grep { ($_->{client} // '') eq 'agent' } $a->proxy->deny_log;
is(scalar @deny, 0, 'the proxy refused nothing of the agent\'s');

# ---- a run_python input: no job the worker would be denied -------------

sub job {
    my ($service) = @_;
    return { name => 'run_python', arguments => {
        script => "print(42)\n",
        inputs => [ { name => 'in', route => 'logs',
                      params => { service => $service } } ] } };
}

$a->script({ tool_calls => [ job('.. '), job('checkout-api') ] },
           { pieces => [ 'done' ] });
$ev = $a->ask('segs-2', 'a job over the logs');

@err = of_type('error', $ev);
is(join(',', map { $_->{code} } @err), 'bad_tool_arguments',
   'the input ".. ": bad_tool_arguments');
like(($err[0] // {})->{message} // '', qr/^run_python: input 0: .*dot segment/,
     'the message names the input');
is(join(',', map { $_->{status} // '' } of_type('job', $ev)), 'ok',
   'one job run: the good one');
is(scalar($a->jsonl('jobs.log')), 1, 'one job queued for the worker');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
