#!/usr/bin/perl

# airlock-agent: the job a live run awaits is not withdrawn by its own
# asker's question in another session while Redis has lost the run's
# lock.  A question withdraws the jobs awaited by its asker's runs that
# are gone, in any session (48-job-orphan.t), and a run whose lock is
# not there looked gone: but Redis may have lost the lock (a restart
# past its lease), and the run's keeper takes it again at its next beat
# (79-lock-lost.t).  Another user's question no longer withdraws the job
# meanwhile (102-job-withdrawn-owner.t); the asker's own, in another
# session, still did.  Now a look from another session marks the lock
# lost (airlock:session:<id>:lost:<run>), and only a mark as old as the
# lock's lease says the run is gone; the keeper deletes the mark when it
# takes the lock again, so a later loss is timed anew.  The keeper is
# held (SIGSTOP) while the lock is gone, so the question surely comes in
# that window; a mark made old by hand stands for the lease's time.

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

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

$a->setup(agent => [ '--max-wall', 60000 ]);

plan tests => 14;

# a process's state letter (Z: ended, not reaped), Z when it is gone
sub state_of {
    my ($pid) = @_;
    open(my $fh, '<', "/proc/$pid/stat") or return 'Z';
    my ($state) = (<$fh> // '') =~ /\) (\S)/;
    return $state // 'Z';
}

sub children {
    my ($pid) = @_;
    open(my $fh, '<', "/proc/$pid/task/$pid/children") or return ();
    return grep { state_of($_) ne 'Z' } split ' ', (<$fh> // '');
}

# the lock back, by a bounded poll
sub lock_back {
    my $until = time + 10;
    while (time < $until) {
        return 1 if $a->redis_cli(qw(EXISTS airlock:session:held:lock))
                    eq '1';
        sleep 0.1;
    }
    return 0;
}

# a run waits for its job, no worker running yet
$a->script({ tool_calls => [ { name => 'run_python', arguments => {
                 script => "print('kept')" } } ] });
my $asker = fork;
die "fork: $!\n" unless defined $asker;
if ($asker == 0) {
    my $ev = $a->ask('held', 'a job, its lock lost meanwhile');
    my ($ans) = of_type('answer', $ev);
    $t->write_file('asker.json', encode_json({ text => $ans && $ans->{text}
                                                       // '' }));
    POSIX::_exit(0);
}

like($a->redis_cli(qw(XREAD BLOCK 30000 STREAMS airlock:jobs 0-0)),
     qr/kept/, 'the job is in the stream: the run waits');

my ($run) = $a->redis_cli(qw(HVALS airlock:jobs:awaited))
            =~ /^held (\w+) /;
my $mark = "airlock:session:held:lost:" . ($run // '?');

# the run's keeper, held: it cannot take the lock again
my @runs = children($a->agent_pid);
my @keepers = map { children($_) } @runs;
is(scalar(@runs) . ' ' . scalar(@keepers), '1 1', 'one run, one keeper');
kill 'STOP', @keepers;

# Redis loses the lock (as a restart past its lease drops it)
$a->redis_cli(qw(DEL airlock:session:held:lock));

# the same asker's question, in another session of theirs
$a->script({ pieces => [ 'fine' ] });
my $ev = $a->ask('mine', 'a question in another session');
is(((of_type('answer', $ev))[0] // {})->{text}, 'fine', 'answered');
is($a->redis_cli(qw(XLEN airlock:jobs)), '1',
   'the job of the live run was not withdrawn by its asker\'s question '
   . 'in another session');
is($a->redis_cli(qw(HLEN airlock:jobs:awaited)), '1', '... nor its record');
unlike($a->agent_log, qr/of session held withdrawn/, '... nor said to be');
like($a->redis_cli('GET', $mark), qr/^\d+$/,
     'the lock marked lost, with Redis\'s time');

# the mark made as old as a lease; the keeper goes on: it takes the lock
# again, and deletes the mark
$a->redis_cli('SET', $mark, '1');
kill 'CONT', @keepers;
ok(lock_back(), 'the run took its lock again');
my $gone = 0;
my $until = time + 10;
while (time < $until) {
    $gone = $a->redis_cli('EXISTS', $mark) eq '0';
    last if $gone;
    sleep 0.1;
}
ok($gone, 'and deleted the mark');

# lost again: the old mark is gone, so the next look starts anew
kill 'STOP', @keepers;
$a->redis_cli(qw(DEL airlock:session:held:lock));
$a->script({ pieces => [ 'again' ] });
$ev = $a->ask('mine', 'another question in another session');
is(((of_type('answer', $ev))[0] // {})->{text}, 'again', 'answered');
is($a->redis_cli(qw(XLEN airlock:jobs)), '1',
   'the job is still not withdrawn after a second loss');
kill 'CONT', @keepers;
ok(lock_back(), 'the run took its lock again');

# a worker now: the run gets its job's result
$a->script({ quote => '"stdout":"(\w+)', pieces => [ '{{1}}' ] });
$a->start_worker;
waitpid($asker, 0);
my $got = eval { decode_json($t->read_file('asker.json') // '') } // {};
is($got->{text}, 'kept', 'the run answered with its job\'s result');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
