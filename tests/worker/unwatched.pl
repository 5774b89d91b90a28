# A sandbox whose worker no longer watches it, run once per backend by
# 39-unwatched-gvisor.t and 39-unwatched-bwrap.t.  The limits hold
# without the worker: a worker that is stopped (SIGSTOP, or hung) still
# has its job's sandbox ended at cpu_ms of CPU (the job's cgroup, all
# its processes: a script that forks a new busy child before each one
# reaches RLIMIT_CPU, which counts per process, included) and at
# wall_ms; the result comes once the worker goes on.  A worker that is
# SIGKILLed takes its busy sandbox along.  Under gVisor (Debian 12's
# runsc does not enforce the bundle's RLIMIT_CPU) nothing but the worker
# used to end a busy script; under bwrap, RLIMIT_CPU ended a single busy
# process but not a line of short-lived ones.

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Test;
use Airlock::Worker;

our $BACKEND;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $BACKEND);
$w->start_proxy;
$w->start_redis;

plan tests => 12;

# each child spins 0.3 s of CPU and exits: no process ever reaches its
# RLIMIT_CPU, the job's cgroup has no end of CPU time
my $forks = <<'PY';
import os, time
while True:
    pid = os.fork()
    if pid == 0:
        t = time.process_time()
        while time.process_time() - t < 0.3:
            pass
        os._exit(0)
    os.waitpid(pid, 0)
PY

# wait until the worker's job has processes in its sandbox (generous: the
# machine may be loaded)
sub wait_procs {
    my ($pid) = @_;
    for (1 .. 2400) {
        return 1 if $w->job_procs($pid);
        sleep 0.025;
    }
    return 0;
}

# wait until they are all gone; the process list left, '' when none.
# The job cgroup's CPU time, last read, in $cpu_seen: the launcher
# removes the cgroup once the sandbox is gone, the worker stopped or not.
my $cpu_seen;
sub wait_gone {
    my ($pid, $tries) = @_;
    my @left;
    for (1 .. $tries) {
        my $c = $w->job_cpu_ms($pid);
        $cpu_seen = $c if defined $c;
        @left = $w->job_procs($pid);
        last unless @left;
        sleep 0.1;
    }
    my $c = $w->job_cpu_ms($pid);
    $cpu_seen = $c if defined $c;
    return join ' ', map {
        my $c = Airlock::Worker::_slurp("$_/cmdline") // '';
        $c =~ s/\0/ /g;
        "$_:$c";
    } @left;
}

my ($a, $r, $cpu);

# ---- a stopped worker: CPU time ---------------------------------------------

$a = $w->start_worker;
$w->add_job(job_id => 'spin-stopped', script => $forks,
            limits => { cpu_ms => 1000, wall_ms => 60000 });
ok(wait_procs($a), 'spin-stopped: its sandbox runs');
kill 'STOP', $a;

# 90 s is far past what its CPU time can last on any load; the sandbox
# used to run on until the worker went on
is(wait_gone($a, 900), '',
   'spin-stopped: the sandbox ends at its CPU time while its worker is '
   . 'stopped');
$cpu = $cpu_seen;
ok(defined $cpu && $cpu < 30000,
   'spin-stopped: its cgroup used about its CPU time, not the wall time '
   . '(' . ($cpu // 'none') . ' ms)');
kill 'CONT', $a;

$r = $w->wait_result('spin-stopped', 120);
ok($r && $r->{status} eq 'timeout' && $r->{error}{code} eq 'cpu_time',
   'spin-stopped: timeout (CPU time) once the worker goes on')
    or diag explain $r;

# ---- a stopped worker: wall time --------------------------------------------

$w->add_job(job_id => 'sleep-stopped',
            script => "import time\nwhile True:\n    time.sleep(0.2)\n",
            limits => { wall_ms => 3000 });
ok(wait_procs($a), 'sleep-stopped: its sandbox runs');
kill 'STOP', $a;
is(wait_gone($a, 900), '',
   'sleep-stopped: the sandbox ends at its wall time while its worker is '
   . 'stopped');
kill 'CONT', $a;

$r = $w->wait_result('sleep-stopped', 120);
ok($r && $r->{status} eq 'timeout' && $r->{error}{code} eq 'wall_time',
   'sleep-stopped: timeout (wall time) once the worker goes on')
    or diag explain $r;

$r = $w->run_job(job_id => 'after', script => "print('after')\n");
is($r && $r->{stdout}, "after\n", 'the worker runs the next job');
$w->kill_worker('TERM', $a);

# ---- a killed worker --------------------------------------------------------

$a = $w->start_worker;
$w->add_job(job_id => 'spin-killed', script => $forks,
            limits => { cpu_ms => 30000, wall_ms => 60000 });
ok(wait_procs($a), 'spin-killed: its sandbox runs');
$w->kill_worker('KILL', $a);
is(wait_gone($a, 600), '',
   'spin-killed: no process of the busy sandbox once its worker was '
   . 'SIGKILLed');

my $b = $w->start_worker;
$r = $w->run_job(job_id => 'clean', script => "print(1)\n");
is(join(' ', $w->leftovers), '', 'nothing left on the host');
$w->kill_worker('TERM', $b);
unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');

1;
