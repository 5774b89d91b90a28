#!/usr/bin/perl

# airlock-worker under faults: a worker SIGKILLed mid-job (its sandbox
# gone with it; its own pending entry resumed on restart; another
# consumer's taken over with XAUTOCLAIM after the visibility timeout),
# redis-server restarted while jobs run, a job that keeps killing its
# workers ending in the dead-letter stream, and what a dead worker left
# on the host removed by the next one.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'gvisor');
$w->start_proxy;
$w->start_redis;

plan tests => 29;

my $r;

# the result is stored before the entry is acknowledged: wait a little
sub pending {
    my $n = -1;
    for (1 .. 200) {
        my $p = $w->redis('XPENDING', 'airlock:jobs', 'airlock-workers');
        $n = ref $p ? $p->[0] : -1;
        last if $n == 0;
        sleep 0.05;
    }
    return $n;
}

# wait until a job of this worker is inside its sandbox
sub wait_running {
    my ($pid) = @_;
    for (1 .. 800) {
        return 1 if grep { /aw-$pid-/ } glob($t->testdir . '/work/jobs/*')
                    and $w->worker_log($pid) =~ /input\(s\)/;
        sleep 0.025;
    }
    return 0;
}

sub count_results {
    my ($id) = @_;
    my @l = grep { /job \Q$id\E: / } split /\n/, $w->all_worker_logs;
    return scalar @l;
}

# ---- SIGKILL mid-job, the same consumer restarts ---------------------------

my $a = $w->start_worker(consumer => 'c1');
$w->add_job(job_id => 'k1', script => "import time\ntime.sleep(2)\n"
                                      . "print('done k1')\n");
ok(wait_running($a), 'k1 running in worker 1');
$w->kill_worker('KILL', $a);
my @gone;
for (1 .. 200) {
    @gone = $w->leftovers;
    last unless @gone;
    sleep 0.025;
}
is(join(' ', @gone), '', "the killed worker's launcher removed its job");

my $b = $w->start_worker(consumer => 'c1');
$r = $w->wait_result('k1', 60);
is($r && $r->{stdout}, "done k1\n", 'k1: one result after the restart');
like($w->worker_log($b), qr/resuming own pending entry/,
     'the restarted worker finished its own pending entry first');
like($w->worker_log($a), qr/launcher: the worker is gone, ending aw-$a-/,
     'as soon as it found the worker gone');
is(pending(), 0, 'k1 acknowledged');
$w->kill_worker('TERM', $b);

# ---- SIGKILL mid-job: the sandbox dies with its worker ---------------------

# no one else would end it before its wall time: the next worker to start
# on this workdir may be minutes away
$a = $w->start_worker(consumer => 'c1');
$w->add_job(job_id => 'orphan', script => "import time\ntime.sleep(30)\n",
            limits => { wall_ms => 2000 });
ok(wait_running($a), 'orphan running in worker 1');
for (1 .. 400) {
    last if $w->job_procs($a);
    sleep 0.025;
}
sleep 0.5;
ok(scalar $w->job_procs($a), 'its sandbox has processes');
$w->kill_worker('KILL', $a);
# (they go at once; 30 s bounds the wait on a loaded machine)
my @left;
for (1 .. 1200) {
    @left = $w->job_procs($a);
    last unless @left;
    sleep 0.025;
}
is(join(' ', map { Airlock::Worker::_slurp("$_/cmdline") =~ s/\0/ /gr }
             @left), '',
   'no process of the sandbox left after its worker was SIGKILLed');
$b = $w->start_worker(consumer => 'c1');
$r = $w->wait_result('orphan', 60);
ok($r && $r->{status} eq 'timeout', 'the next worker runs it again: '
   . ($r && $r->{status})) or diag explain $r;
$w->kill_worker('TERM', $b);

# ---- SIGKILL mid-job, another consumer takes over --------------------------

$a = $w->start_worker(consumer => 'c1');
$w->add_job(job_id => 'k2', script => "import time\ntime.sleep(2)\n"
                                      . "print('done k2')\n");
ok(wait_running($a), 'k2 running in worker c1');
$w->kill_worker('KILL', $a);

my $t0 = time;
$b = $w->start_worker(consumer => 'c2', visibility_timeout_ms => 1500);
$r = $w->wait_result('k2', 60);
is($r && $r->{stdout}, "done k2\n", 'k2: one result from consumer c2');
like($w->worker_log($b), qr/claimed entry \S+ idle over 1500 ms/,
     'taken over with XAUTOCLAIM after the visibility timeout');
is(pending(), 0, 'k2 acknowledged');
is(count_results('k2'), 1, 'k2 ran to completion once');

# ---- redis-server restarted while jobs run ---------------------------------

$w->add_job(job_id => "r$_", script => "import time\ntime.sleep(1)\n"
                                       . "print('r$_')\n") for 1 .. 3;
for (1 .. 400) {
    last if $w->worker_log($b) =~ /job r1 \(entry/;
    sleep 0.025;
}
$w->stop_redis('TERM');
sleep 1.5;
$w->add_job(job_id => 'after-restart', script => "print('later')")
    if 0;
$w->start_redis;
$w->add_job(job_id => 'r4', script => "print('r4')");

for my $i (1 .. 4) {
    $r = $w->wait_result("r$i", 90);
    is($r && $r->{stdout}, "r$i\n", "r$i: result after the restart");
}
like($w->worker_log($b), qr/connected to redis.*\n(.*\n)*.*connected to redis/,
     'the worker reconnected');
is(pending(), 0, 'every job acknowledged');
ok(!grep({ count_results("r$_") != 1 } 1 .. 4), 'each ran once');
$w->kill_worker('TERM', $b);

# ---- a job that kills its workers ends in the dead-letter stream -----------

my %c = (max_deliveries => 2, visibility_timeout_ms => 500);
my $poison = $w->envelope(job_id => 'poison', script => "import time\n"
                          . "time.sleep(30)\n", limits => { wall_ms => 40000 });
$w->add_raw($poison);

for my $n (1 .. 2) {
    my $pid = $w->start_worker(consumer => "p$n", %c);
    ok(wait_running($pid), "poison running in worker p$n");
    $w->kill_worker('KILL', $pid);
}

$b = $w->start_worker(consumer => 'p3', %c);
$r = $w->wait_result('poison', 60);
ok($r && $r->{status} eq 'error' && $r->{error}{code} eq 'dead_letter',
   'the poison job gets a dead_letter error result') or diag explain $r;
my $dead = $w->redis('XRANGE', 'airlock:jobs:dead', '-', '+');
my %f = @{$dead->[-1][1] // []};
is($f{job}, $poison, 'the dead-letter entry holds the job');
my $last = 'delivered 3 times without a result; last: delivery 2 to '
         . 'consumer p2 started and did not finish';
like($f{error}, qr/\Q$last\E/,
     'with its last error');
is(pending(), 0, 'the poison entry acknowledged');

$w->kill_worker('TERM', $b);
$b = $w->start_worker(consumer => 'p4');
$r = $w->run_job(job_id => 'clean', script => 'print(1)');
is(join(' ', $w->leftovers), '', 'nothing left on the host');
