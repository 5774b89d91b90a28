#!/usr/bin/perl

# How a script ended, told from the evidence and not from its exit code
# alone.  Both runtimes report a script that died of signal N as the
# exit code 128 + N, which a script can also choose: sys.exit(152) is
# not a CPU-time timeout (152 = 128 + SIGXCPU), nor sys.exit(137) a
# SIGKILL.  A limit the worker enforced (CPU, wall time), the kernel's
# oom_kill count and the script's real wait status (gVisor: the one runsc
# logs; bwrap: the one the sandbox's init reports) say what happened; a
# plain exit stays the script's exit.  sys.exit(139) is no SIGSEGV under
# either backend, nor a SIGXCPU the script sends itself a CPU-time
# timeout, even after most of its CPU time (bwrap; 36-exit-codes-bwrap.t
# runs this file with that backend).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'gvisor');
$w->start_proxy;
$w->start_redis;
$w->start_worker;

plan tests => $w->backend eq 'bwrap' ? 21 : 18;

my $r;

# ---- plain exits with a code above 128 -------------------------------------

for my $code (152, 137, 134, 200, 139, 135, 136, 132) {
    $r = $w->run_job(job_id => "exit$code",
                     script => "import sys\nsys.exit($code)\n");
    ok($r && $r->{status} eq 'error' && $r->{error}{code} eq 'exit'
       && $r->{exit_code} == $code
       && $r->{error}{message} eq "the script exited with code $code",
       "sys.exit($code): an exit with code $code")
        or diag explain $r;
}

# ---- what really ended a script keeps its name -----------------------------

$r = $w->run_job(job_id => 'spin', limits => { cpu_ms => 1000 },
                 script => "while True: pass\n");
ok($r && $r->{status} eq 'timeout' && $r->{error}{code} eq 'cpu_time',
   'a busy loop: timeout (CPU time)') or diag explain $r;

$r = $w->run_job(job_id => 'segv',
                 script => "import ctypes\nctypes.string_at(0)\n");
ok($r && $r->{status} eq 'killed' && $r->{error}{code} eq 'signal'
   && $r->{exit_code} == 139
   && $r->{error}{message} =~ /killed by signal 11\b/,
   'SIGSEGV: killed by signal 11') or diag explain $r;

$r = $w->run_job(job_id => 'loop', limits => { wall_ms => 1500 },
                 script => "import time\nwhile True: time.sleep(0.1)\n");
ok($r && $r->{status} eq 'timeout' && $r->{error}{code} eq 'wall_time',
   'a sleeping loop: timeout (wall time)') or diag explain $r;

$r = $w->run_job(job_id => 'flood', script => <<'PY');
a = []
while True:
    a.append(b"x" * (1 << 20))
PY
ok($r && $r->{status} eq 'oom', 'a memory flood: oom') or diag explain $r;

# ---- signals the script sends itself ---------------------------------------

# Under bwrap the script is the child of the sandbox's init, not pid 1
# (which ignores them): under both backends they end it.  A SIGXCPU or
# SIGKILL with no CPU time spent is not RLIMIT_CPU's.
for my $s ([SIGKILL => 9], [SIGXCPU => 24], [SIGABRT => 6]) {
    my ($name, $n) = @$s;
    $r = $w->run_job(job_id => "self$n", script =>
        "import os, signal\nos.kill(os.getpid(), signal.$name)\n");
    ok($r && $r->{status} eq 'killed' && $r->{error}{code} eq 'signal'
       && $r->{exit_code} == 128 + $n
       && $r->{error}{message} eq "the script was killed by signal $n",
       "a $name the script sends itself: killed by signal $n")
        or diag explain $r;
}

# A signal of its own after most of its CPU time (the old rule took a
# SIGXCPU or SIGKILL with three quarters of cpu_ms in the cgroup for
# RLIMIT_CPU's) is still its own; RLIMIT_CPU is a backstop far above
# cpu_ms, which only a stopped keeper lets a script reach.  bwrap only:
# there the script's own clock (time.process_time()) is the kernel's,
# below the cgroup's by the init's and bwrap's share, so a script can aim
# at a share of cpu_ms; under gVisor it is the sentry's estimate.
if ($w->backend eq 'bwrap') {
    for my $s ([SIGXCPU => 24], [SIGKILL => 9]) {
        my ($name, $n) = @$s;
        # 3.2 s of CPU within the longest wall time: on a loaded machine
        # the default 10 s of wall time ran out first
        $r = $w->run_job(job_id => "late$n",
                         limits => { cpu_ms => 4000, wall_ms => 60000 },
                         script => <<"PY");
import os, signal, time
while time.process_time() < 3.2:
    pass
os.kill(os.getpid(), signal.$name)
PY
        ok($r && $r->{status} eq 'killed' && $r->{error}{code} eq 'signal'
           && $r->{exit_code} == 128 + $n,
           "a $name the script sends itself after 80% of cpu_ms: killed "
           . "by signal $n") or diag explain $r;
    }

    # the keeper stopped: the kernel's RLIMIT_CPU ends a busy loop (at
    # 2 * 1 + 1 s) and the cgroup's time says it was the limit
    $w->add_job(job_id => 'backstop', limits => { cpu_ms => 1000 },
                script => "while True: pass\n");
    # the keeper: bwrap's parent, once the script runs
    my ($keeper, $script);
    for (1 .. 2400) {
        for my $p ($w->job_procs($w->{last_worker})) {
            my $c = Airlock::Worker::_slurp("$p/cmdline") // '';
            $script = 1 if $c =~ m{^/usr/bin/python3\0-I\0/app/code/};
            next unless $c =~ /^bwrap\0/;
            ($keeper) = (Airlock::Worker::_slurp("$p/stat") // '')
                        =~ /^\d+ \(.*?\) \S+ (\d+)/;
        }
        last if $keeper && $script;
        sleep 0.025;
    }
    kill 'STOP', $keeper if $keeper;
    my $left;
    for (1 .. 1200) {
        $left = grep { (Airlock::Worker::_slurp("$_/cmdline") // '')
                       =~ m{^/usr/bin/python3\0} }
                $w->job_procs($w->{last_worker});
        last unless $left;
        sleep 0.1;
    }
    my $cpu = $w->job_cpu_ms($w->{last_worker}) // 0;
    kill 'CONT', $keeper if $keeper;
    $r = $w->wait_result('backstop');
    ok($keeper && !$left && $cpu >= 2000 && $r
       && $r->{status} eq 'timeout' && $r->{error}{code} eq 'cpu_time'
       && $r->{exit_code} == 137,
       "a busy loop with its keeper stopped: ended by RLIMIT_CPU ($cpu ms "
       . "in the cgroup), timeout (CPU time)") or diag explain $r;
}

# bwrap: nothing inside ends the sandbox's init, and a status the script
# writes on the init's pipe (/proc/1/fd/4) comes before the init's own
# line, which is the one read (under gVisor the script is pid 1)
$r = $w->run_job(job_id => 'init', script => <<'PY');
import os, signal
if os.getpid() != 1:
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        os.kill(1, s)
try:
    with open("/proc/1/fd/4", "wb", buffering=0) as f:
        f.write(b"status 9\n")
except OSError:
    pass
print("alive", flush=True)
os._exit(3)
PY
ok($r && $r->{status} eq 'error' && $r->{error}{code} eq 'exit'
   && $r->{exit_code} == 3 && $r->{stdout} eq "alive\n",
   'signals to pid 1 and a forged status: the exit the script chose')
    or diag explain $r;

is(join(' ', $w->leftovers), '', 'nothing left on the host');
$w->kill_worker('TERM');
unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');

1;
