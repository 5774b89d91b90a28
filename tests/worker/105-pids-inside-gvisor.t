#!/usr/bin/perl

# gVisor: a job's pids limit is the sandbox's own, as under bwrap: a
# fork or a thread past it fails inside (EAGAIN) and the script goes on.
# The limit was only the host cgroup's pids.max, which counts the
# runtime's tasks too: the sentry's threads and, on the ptrace platform,
# a stub process for each process inside with a traced thread for each
# sentry thread that ran it.  A script that forked 20 sleeping children
# under the default limit of 64 had the sentry refused a thread of its
# own, and the whole sandbox ended (killed/pids, nothing printed).  Now
# the sentry counts the sandbox user's tasks (RLIMIT_NPROC, the job's
# pids) and the host's count is a backstop, some 16 tasks a process.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => 'gvisor');
$w->start_proxy;
$w->start_redis;
$w->start_worker;

plan tests => 7;

# children that sleep, well under the limit: all of them run
my $r = $w->run_job(job_id => 'under', limits => { memory_mb => 256 },
                    script => <<'PY');
import os, signal, time
kids = []
for _ in range(40):
    pid = os.fork()
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    kids.append(pid)
print("forked", len(kids), flush=True)
for pid in kids:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
PY
is($r->{stdout}, "forked 40\n", '40 children under a limit of 64')
    or diag explain $r;
is($r->{status}, 'ok', 'and the job is ok') or diag explain $r;

# forks past the limit: refused inside, the script exits by itself
$r = $w->run_job(job_id => 'forks', limits => { pids => 24,
                                                memory_mb => 256 },
                 script => <<'PY');
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
sys.exit(3)
PY
is($r->{stdout}, "fork refused after 23 11\n",
   'a fork past the limit of 24 fails inside (EAGAIN)') or diag explain $r;
is("$r->{status}/$r->{error}{code}/" . ($r->{exit_code} // 'null'),
   'error/exit/3', 'the sandbox lived on: the script\'s own exit code')
    or diag explain $r;

# threads count as under bwrap
$r = $w->run_job(job_id => 'threads', limits => { pids => 16 },
                 script => <<'PY');
import threading
ev = threading.Event()
ts = []
try:
    while len(ts) < 100:
        th = threading.Thread(target=ev.wait)
        th.start()
        ts.append(th)
except RuntimeError as e:
    print("thread refused after", len(ts), flush=True)
ev.set()
for th in ts:
    th.join()
PY
is($r->{stdout}, "thread refused after 15\n",
   'a thread past the limit of 16 fails inside') or diag explain $r;
is($r->{status}, 'ok', 'and the script goes on') or diag explain $r;

is(join(' ', $w->leftovers), '', 'nothing left on the host');
