#!/usr/bin/perl

# bwrap: the rlimits a script reads depend on the job alone, as under
# gVisor.  RLIMIT_NPROC and RLIMIT_SIGPENDING were the host's defaults,
# half of the kernel's threads-max (96367 on one host), which tell the
# host's memory size, and RLIMIT_MEMLOCK was the host's set-up's.  Now
# the sandbox's init sets RLIMIT_NPROC to the job's pids limit plus 2
# (the cgroup's pids.max: the cgroup still refuses the fork first,
# EAGAIN, and tells killed/pids), RLIMIT_SIGPENDING 128, RLIMIT_MSGQUEUE
# 819200, RLIMIT_MEMLOCK 65536, and a sigqueue() past 128 pending
# signals fails.  The kernel counts them per user namespace and uid:
# with every job as one host uid (bwrap_uids 1) one job's tasks do not
# count against another's limit.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => 'bwrap');
$w->start_proxy;
$w->start_redis;
$w->start_worker;

plan tests => 13;

my $probe = <<'PY';
import ctypes, json, os, resource, signal
res = {n: resource.getrlimit(getattr(resource, n))[0]
       for n in ("RLIMIT_NPROC", "RLIMIT_SIGPENDING", "RLIMIT_MSGQUEUE",
                 "RLIMIT_MEMLOCK")}
for n in ("RLIMIT_NPROC", "RLIMIT_SIGPENDING"):
    s, h = resource.getrlimit(getattr(resource, n))
    try:
        resource.setrlimit(getattr(resource, n), (s, h + 1))
        res[n + "_raised"] = "raised"
    except (OSError, ValueError):
        res[n + "_raised"] = "refused"
libc = ctypes.CDLL(None, use_errno=True)
class sigval(ctypes.Union):
    _fields_ = [("i", ctypes.c_int), ("p", ctypes.c_void_p)]
sig = signal.SIGRTMIN
signal.pthread_sigmask(signal.SIG_BLOCK, [sig])
n = 0
while n < 200000:
    if libc.sigqueue(os.getpid(), sig, sigval(0)) != 0:
        res["sigqueue_errno"] = ctypes.get_errno()
        break
    n += 1
res["queued"] = n
print(json.dumps(res))
PY

my $r = $w->run_job(job_id => 'rl', script => $probe);
my $p = eval { decode_json($r->{stdout}) } // {};
is($r->{status}, 'ok', 'the probe ran') or diag explain $r;
is($p->{RLIMIT_NPROC}, 64 + 2,
   'RLIMIT_NPROC: the job\'s pids limit (64) plus 2') or diag explain $p;
is(join(' ', map { $p->{$_} // 'none' }
            qw(RLIMIT_SIGPENDING RLIMIT_MSGQUEUE RLIMIT_MEMLOCK)),
   '128 819200 65536', 'queued signals, message queue bytes, locked memory')
    or diag explain $p;
is(join(' ', map { $p->{$_} // 'none' }
            qw(RLIMIT_NPROC_raised RLIMIT_SIGPENDING_raised)),
   'refused refused', 'hard limits the script cannot raise')
    or diag explain $p;
is(($p->{queued} // 'none') . '/' . ($p->{sigqueue_errno} // 'none'),
   '128/11', 'a sigqueue() past 128 pending signals fails (EAGAIN)')
    or diag explain $p;

$r = $w->run_job(job_id => 'rl-pids', limits => { pids => 20 },
                 script => $probe);
$p = eval { decode_json($r->{stdout}) } // {};
is($p->{RLIMIT_NPROC}, 22, 'another pids limit, another RLIMIT_NPROC')
    or diag explain $r;

# the cgroup still refuses the fork past the limit, and tells killed/pids
my $bomb = <<'PY';
import os, signal, sys, time
kids = []
try:
    while len(kids) < 100:
        pid = os.fork()
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        kids.append(pid)
except OSError as e:
    print("fork refused after", len(kids), e.errno, flush=True)
for pid in kids:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
os.abort()
PY
$r = $w->run_job(job_id => 'bomb', limits => { pids => 16 },
                 script => $bomb);
is($r->{stdout}, "fork refused after 15 11\n",
   'a fork past the limit of 16 fails inside (EAGAIN)') or diag explain $r;
is("$r->{status}/$r->{error}{code}", 'killed/pids',
   'and a signal after it is killed/pids') or diag explain $r;

is(join(' ', $w->leftovers), '', 'nothing left on the host');

# one host uid for every job: two workers, one job holding 50 tasks
$w->kill_worker('TERM', $w->{last_worker});
my @shared = map {
    $w->start_worker(consumer => "s$_", name => "s$_.conf", bwrap_uids => 1)
} 1 .. 2;

$w->add_job(job_id => 'held', limits => { wall_ms => 60000 },
            script => <<'PY');
import os, time
for _ in range(50):
    if os.fork() == 0:
        time.sleep(60)
        os._exit(0)
print("forked", flush=True)
while True:
    time.sleep(0.2)
PY

my ($held, @procs);
for (1 .. 2400) {
    for my $pid (@shared) {
        @procs = $w->job_procs($pid);
        ($held = $pid), last if @procs >= 53;
    }
    last if $held;
    sleep 0.025;
}
ok($held, 'a job holds 50 tasks of the shared host uid');

$r = $w->run_job(job_id => 'beside', script => <<'PY');
import os, resource, signal, time
kids = []
try:
    while len(kids) < 40:
        pid = os.fork()
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        kids.append(pid)
except OSError as e:
    print("fork refused after", len(kids), e.errno)
for pid in kids:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
print(len(kids), resource.getrlimit(resource.RLIMIT_NPROC)[0])
PY
is($r->{stdout}, "40 66\n",
   'a job of the other worker meanwhile forks 40 under its RLIMIT_NPROC '
   . 'of 66')
    or diag explain $r;

for my $p (@procs) {
    my $cmd = Airlock::Worker::_slurp("$p/cmdline") // '';
    kill 'KILL', $p =~ m{/proc/(\d+)} if $cmd =~ m{/app/code/};
}
$r = $w->wait_result('held');
is($r && $r->{stdout}, "forked\n", 'the held job had its 50 tasks')
    or diag explain $r;

$w->kill_worker('TERM', $_) for @shared;
is(join(' ', $w->leftovers), '', 'nothing left on the host');
