#!/usr/bin/perl

# airlock-agent: the job of a run whose process was killed while it
# waited (SIGKILL, the OOM killer) is withdrawn by the next question of
# its asker, in any session, once that run's lock is gone (from another
# session: has been gone a lease's time).  Such a run never
# reached its own withdrawal: its entry stayed in the stream, and the
# first worker to start ran it for no one (its inputs fetched through
# the worker's routes, a POST among them, its result read by no one).
# Each job awaited is recorded with its session and run (hash
# airlock:jobs:awaited); a question looks at the records and withdraws
# those whose run no longer holds its session's lock.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use POSIX ();
use Test::More;
use Airlock::Test;
use AgentTest;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

$a->setup(agent => [ '--max-wall', 60000 ]);

plan tests => 12;

sub redis {
    open(my $fh, '-|', 'redis-cli', '-s', "$d/redis.sock", @_)
        or die "redis-cli: $!\n";
    my $out = join '', <$fh>;
    close $fh;
    chomp $out;
    return $out;
}

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
    my @c = split ' ', (<$fh> // '');
    # a connection's process that has ended, not yet reaped, is none
    return grep { state_of($_) ne 'Z' } @c;
}

# a run waits for its job, no worker running: its process is killed
$a->script({ tool_calls => [ { name => 'run_python', arguments => {
                 script => "print('orphan')" } } ] },
           { pieces => [ 'never' ] });
my $asker = fork;
die "fork: $!\n" unless defined $asker;
if ($asker == 0) {
    $a->ask('killed', 'a job, then the run is killed');
    POSIX::_exit(0);
}

# the job's entry in the stream: the run is waiting
my $out = redis(qw(XREAD BLOCK 30000 STREAMS airlock:jobs 0-0));
like($out, qr/orphan/, 'the job is in the stream');

my @runs = children($a->agent_pid);
is(scalar(@runs), 1, 'one run');
kill 'KILL', @runs;
waitpid($asker, 0);

# its lease runs out (30 s; cut short here), as it does once the run is
# gone
redis(qw(DEL airlock:session:killed:lock));

my ($run) = redis(qw(HVALS airlock:jobs:awaited)) =~ /^killed (\w+) /m;

# records that are not the agent's: dropped; one of an older agent's
# (no asker), of a run gone: withdrawn as the killed run's is
redis(qw(HSET airlock:jobs:awaited junk x));
redis(qw(HSET airlock:jobs:awaited 1-1), 'a b c');

# the next question, in another session, marks the lock lost: a lock
# Redis lost is taken again by a live run's keeper within a beat
# (111-job-withdrawn-asker.t), so only a mark as old as a lease says the
# run is gone
$a->script({ pieces => [ 'first' ] });
my $ev = $a->ask('next', 'a question');
is(((of_type('answer', $ev))[0] // {})->{text}, 'first', 'answered');
is(redis(qw(XLEN airlock:jobs)), 1, 'the job is kept while it is marked');

# the mark as old as a lease (30 s; made so here): the next question, in
# another session, withdraws it
redis('SET', 'airlock:session:killed:lost:' . ($run // '?'), '1');
redis(qw(SET airlock:session:a:lost:b 1));
$a->script({ pieces => [ 'fine' ] });
$ev = $a->ask('next', 'a question');
is(((of_type('answer', $ev))[0] // {})->{text}, 'fine', 'answered');
is(redis(qw(XLEN airlock:jobs)), 0, 'the killed run\'s job was withdrawn');
like($a->agent_log, qr/job \w+ of session killed withdrawn/,
     'the log says so');
is(redis(qw(HLEN airlock:jobs:awaited)), 0,
   'its record is gone, and those not the agent\'s');

# a worker started now runs only the job still awaited
$a->start_worker;
$a->script({ tool_calls => [ { name => 'run_python', arguments => {
                 script => "print('awaited')" } } ] },
           { quote => '"stdout":"(\w+)', pieces => [ '{{1}}' ] });
$ev = $a->ask('kept', 'a job awaited');
is(((of_type('answer', $ev))[0] // {})->{text}, 'awaited',
   'the awaited job answered');
my @jobs = map { decode_json($_->{job}) } $a->jsonl('jobs.log');
is(join(',', map { $_->{script} =~ /'(\w+)'/ ? $1 : '?' } @jobs),
   'awaited', 'the worker ran the awaited job only');
is(redis(qw(HLEN airlock:jobs:awaited)), 0, 'no record left when done');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
