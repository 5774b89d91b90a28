#!/usr/bin/perl

# airlock-agent: a run_python job the agent gave up on is withdrawn.
# With no worker running, a run waits for its job until its wall time
# runs out and ends at the limit; the job's entry used to stay in the
# stream (one more for every such run, without bound), and the first
# worker to start, maybe hours later, ran every one of them: scripts
# whose inputs go through the worker's routes, for runs that had
# reported "no result" long before, their results read by no one.  Now
# the run deletes its entry when it stops waiting: the stream is empty
# again, the job event says the job was withdrawn before any worker took
# it, and a worker started afterwards runs only the jobs still awaited.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use AgentTest;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

$a->setup(agent => [ '--max-wall', 1000 ]);
$a->start_agent('b', '--max-wall', 60000);

plan tests => 10;

sub xlen {
    return `redis-cli -s $d/redis.sock XLEN airlock:jobs` + 0;
}

# no worker: each run waits for its job until its wall time runs out
for my $n (1, 2) {
    $a->script({ tool_calls => [ { name => 'run_python', arguments => {
                     script => "print('abandoned $n')" } } ] },
               { pieces => [ 'never' ] });
    my $ev = $a->ask("gone-$n", "job $n, no worker");
    my ($job) = of_type('job', $ev);

    is(join(',', map { $_->{limit} } of_type('limit', $ev)), 'wall_ms',
       "job $n: the run ended at its wall time");
    is_deeply([ map { ($job // {})->{$_} } qw(status withdrawn) ],
              [ 'no result', JSON::PP::true ],
              "job $n: no result, withdrawn before any worker took it");
}

is(xlen(), 0, 'the stream holds none of the jobs given up on');

# a worker now runs the job still awaited, and only it
$a->start_worker;
$a->script({ tool_calls => [ { name => 'run_python', arguments => {
                 script => "print('awaited')" } } ] },
           { quote => '"stdout":"(\w+)', pieces => [ '{{1}}' ] });
my $ev = $a->ask('kept', 'a job awaited', agent => 'b');
is(((of_type('answer', $ev))[0] // {})->{text}, 'awaited',
   'the awaited job answered');

my @jobs = map { decode_json($_->{job}) } $a->jsonl('jobs.log');
is(scalar(@jobs), 1, 'the worker took one job');
like(($jobs[0] // {})->{script} // '', qr/awaited/,
     'the one awaited');
unlike($a->agent_log('a'), qr/not removed/,
       'no job left behind, says the log');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
