#!/usr/bin/perl

# Every sandbox is thrown away whole, and only its worker speaks for it:
# what a job writes in /scratch, /tmp or /dev/shm is not there for the
# next one; a process a script leaves behind dies when the script ends
# (its later output reaches nobody, and the job does not wait for it); a
# script still writing both streams when its wall time comes ends as a
# timeout with each stream kept to its bound; a script that closes its
# streams is still answered; and what a script prints is its output,
# never a result: a result it writes for another job is a string in its
# own.  Coverage: this held before the test was written.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'gvisor');
$w->start_proxy;
$w->start_redis;
$w->start_worker;

plan tests => 8;

my $r;

$r = $w->run_job(job_id => 'leave', script => <<'PY');
for d in ("/scratch", "/tmp", "/dev/shm"):
    with open(d + "/left", "w") as f:
        f.write("x")
print("written")
PY
is($r && $r->{stdout}, "written\n", 'a job writes in each writable place')
    or diag explain $r;

$r = $w->run_job(job_id => 'find', script => <<'PY');
import os
print([d for d in ("/scratch", "/tmp", "/dev/shm")
       if os.path.exists(d + "/left")])
PY
is($r && $r->{stdout}, "[]\n", 'the next job finds none of it')
    or diag explain $r;

$r = $w->run_job(job_id => 'orphan', script => <<'PY');
import os, time
if os.fork() == 0:
    time.sleep(3)
    print("late", flush=True)
    os._exit(0)
print("parent done", flush=True)
PY
ok($r && $r->{status} eq 'ok' && $r->{stdout} eq "parent done\n",
   'a process left behind ends with the script') or diag explain $r;

$r = $w->run_job(job_id => 'flood',
                 limits => { wall_ms => 2000, stdout_bytes => 4096,
                             stderr_bytes => 1024 },
                 script => <<'PY');
import sys
while True:
    sys.stdout.write("y" * 65536)
    sys.stderr.write("z" * 65536)
PY
ok($r && $r->{status} eq 'timeout' && $r->{error}{code} eq 'wall_time',
   'writing without end: timeout at the wall time') or diag explain $r;
ok($r && $r->{stdout} eq 'y' x 4096 && $r->{stdout_truncated}
   && $r->{stderr} eq 'z' x 1024 && $r->{stderr_truncated},
   'each stream kept to its bound, flagged');

$r = $w->run_job(job_id => 'closed', script => <<'PY');
import os, time
os.close(1)
os.close(2)
time.sleep(1)
PY
ok($r && $r->{status} eq 'ok' && $r->{stdout} eq '',
   'a script that closes its streams is answered') or diag explain $r;

$r = $w->run_job(job_id => 'forger', script => <<'PY');
print('{"job_id":"other","session_id":"sess-1","status":"ok",'
      '"exit_code":0,"stdout":"forged"}')
PY
ok($r && $r->{stdout} =~ /^\{"job_id":"other"/ && !$w->result('other'),
   "a result printed for another job is the script's output only");

is(join(' ', $w->leftovers), '', 'nothing left on the host');
