#!/usr/bin/perl

# airlock-agent: the job a run awaits is withdrawn by its asker's
# questions, or the next run in its session, once the run's lock is
# gone; never by another asker's.  Every question with run_python looks
# at the jobs awaited and withdraws those whose run no longer holds its
# session's lock (48-job-orphan.t: the run was killed).  But a lock that
# is gone does not say the run is: Redis may have lost it (a restart
# past its lease), and the run's keeper takes it again at its next beat
# (79-lock-lost.t), or later while Redis cannot be reached.  Any other
# user's question, in any session, used to withdraw the job meanwhile:
# never run, and the run waited out its wall time for nothing.  Here
# the keeper is held (SIGSTOP) while the lock is gone, so the other
# user's question surely comes in that window.

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

Airlock::Prereq::absent('the test connects as another uid: run it as root')
    if $> != 0;

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

$a->setup(agent => [ '--max-wall', 60000 ]);

plan tests => 9;

my $BOB = 61002;

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

# root's run waits for its job, no worker running yet
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

# the run's keeper, held: it cannot take the lock again
my @runs = children($a->agent_pid);
my @keepers = map { children($_) } @runs;
is(scalar(@runs) . ' ' . scalar(@keepers), '1 1', 'one run, one keeper');
kill 'STOP', @keepers;

# Redis loses the lock (as a restart past its lease drops it)
$a->redis_cli(qw(DEL airlock:session:held:lock));

# another user's question, with run_python (it looks at the jobs
# awaited), in a session of his own
$a->script({ pieces => [ 'fine' ] },
           { quote => '"stdout":"(\w+)', pieces => [ '{{1}}' ] });
my $body = encode_json({ prompt => 'a question of my own' });
my $raw = $a->as_uid($a->{agents}{a}{sock}, $BOB,
                     "POST /v1/sessions/bobs/ask HTTP/1.1\r\nHost: a\r\n"
                     . "Content-Length: " . length($body)
                     . "\r\nConnection: close\r\n\r\n$body");
my @ev = AgentTest::events($raw // '');
is(((of_type('answer', \@ev))[0] // {})->{text}, 'fine',
   'the other user\'s question answered');
is($a->redis_cli(qw(XLEN airlock:jobs)), '1',
   'the job awaited was not withdrawn by another user\'s question');
is($a->redis_cli(qw(HLEN airlock:jobs:awaited)), '1', '... nor its record');
unlike($a->agent_log, qr/of session held withdrawn/, '... nor said to be');

# the keeper goes on: it takes the lock again
kill 'CONT', @keepers;
my $back = 0;
my $until = time + 10;
while (time < $until) {
    $back = $a->redis_cli(qw(EXISTS airlock:session:held:lock)) eq '1';
    last if $back;
    sleep 0.1;
}
ok($back, 'the run took its lock again');

# a worker now: the run gets its job's result
$a->start_worker;
waitpid($asker, 0);
my $got = eval { decode_json($t->read_file('asker.json') // '') } // {};
is($got->{text}, 'kept', 'the run answered with its job\'s result');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
