#!/usr/bin/perl

# airlock-agent: a run whose session's lock Redis lost while it waited
# for a job (its lease ran out while Redis was down longer than 30 s: a
# key's expiry is a time of day, and a restart drops the keys past it)
# takes its lock again, no other run holding it.  Its keeper used to
# stop at a lock gone, and the run went on without one: the next
# question, in any session, took it for a killed run and withdrew the
# job it awaited (tests/agent/48-job-orphan.t), which then never ran,
# and the run waited out its wall time for nothing.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use POSIX ();
use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use AgentTest;

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

$a->setup(agent => [ '--max-wall', 20000 ]);

plan tests => 7;

# a run waits for its job, no worker running yet
$a->script({ tool_calls => [ { name => 'run_python', arguments => {
                 script => "print('kept')" } } ] });
my $asker = fork;
die "fork: $!\n" unless defined $asker;
if ($asker == 0) {
    my $ev = $a->ask('lost', 'a job, its lock lost meanwhile');
    my ($ans) = AgentTest::of_type('answer', $ev);
    $t->write_file('asker.json', encode_json({ text => $ans && $ans->{text}
                                                       // '' }));
    POSIX::_exit(0);
}

like($a->redis_cli(qw(XREAD BLOCK 30000 STREAMS airlock:jobs 0-0)),
     qr/kept/, 'the job is in the stream: the run waits');

# Redis loses the lock (as a restart past its lease drops it)
$a->redis_cli(qw(DEL airlock:session:lost:lock));

my $back = 0;
my $until = time + 10;
while (time < $until) {
    $back = $a->redis_cli(qw(EXISTS airlock:session:lost:lock)) eq '1';
    last if $back;
    sleep 0.1;
}
ok($back, 'the run took its lock again');

# the next question, in another session, sweeps the jobs awaited
$a->script({ pieces => [ 'fine' ] },
           { quote => '"stdout":"(\w+)', pieces => [ '{{1}}' ] });
my $ev = $a->ask('next', 'a question');
is(((AgentTest::of_type('answer', $ev))[0] // {})->{text}, 'fine',
   'the next question answered');
is($a->redis_cli(qw(XLEN airlock:jobs)), '1',
   'the awaited job was not withdrawn');

# a worker now: the run gets its job's result
$a->start_worker;
waitpid($asker, 0);
my $got = eval { decode_json($t->read_file('asker.json') // '') } // {};
is($got->{text}, 'kept', 'the run answered with its job\'s result');
like($a->agent_log, qr/session lost: its lock was lost .*taken again/,
     'the log says the lock was taken again');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
