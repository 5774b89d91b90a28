#!/usr/bin/perl

# A bwrap sandbox's pid 1 is the worker's small init (python3 -I -S -c),
# which starts the script as its child and reports its wait status.  Both
# run as the same uid, and the init was dumpable, so the script could
# open /proc/1/mem for writing (ptrace and process_vm_writev are refused,
# this was the same access by another door) and rewrite the init as it
# ran: the status the worker reads, or the init's parent-death signal,
# the one that takes the sandbox along when bwrap dies (a worker killed
# with its launcher then left the script running, unwatched).  Now the
# init makes itself undumpable before it starts the script: its /proc
# entries are the kernel's root's, and the script, with no capability,
# opens none of them.  The script itself stays dumpable (an exec resets
# it), so its own /proc/self is as before, and the init still reports:
# an exit code over 128 is the script's, a signal is a signal.  Under
# gVisor the script is pid 1 itself.

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

plan tests => 11;

my $r = $w->run_job(job_id => 'init-mem', script => <<'PY');
import json, os

res = {}

def try_open(path, mode):
    try:
        with open(path, mode, buffering=0):
            return "opened"
    except OSError as e:
        return e.strerror

# a writable mapping of the init's, its first 8 bytes written back as
# they are: what rewriting the init takes
try:
    with open("/proc/1/maps") as f:
        rw = [l for l in f if l.split()[1].startswith("rw")]
    start = int(rw[0].split("-")[0], 16)
    with open("/proc/1/mem", "r+b", buffering=0) as f:
        f.seek(start)
        b = f.read(8)
        f.seek(start)
        res["rewrite"] = "wrote %d" % f.write(b)
except OSError as e:
    res["rewrite"] = e.strerror

res["mem"] = try_open("/proc/1/mem", "rb")
res["task_mem"] = try_open("/proc/1/task/1/mem", "rb")
res["maps"] = try_open("/proc/1/maps", "rb")
res["environ"] = try_open("/proc/1/environ", "rb")
try:
    os.listdir("/proc/1/fd")
    res["fd"] = "listed"
except OSError as e:
    res["fd"] = e.strerror
res["own_mem"] = try_open("/proc/self/mem", "r+b")
print(json.dumps(res))
PY
my $p = eval { decode_json($r->{stdout}) } // {};
is($r->{status}, 'ok', 'the probe ran') or diag explain $r;

is($p->{rewrite}, 'Permission denied', "the init's memory is not written")
    or diag explain $p;
for my $k (qw(mem task_mem maps environ fd)) {
    is($p->{$k}, 'Permission denied', "the init's $k is not opened");
}
is($p->{own_mem}, 'opened', "the script's own /proc/self/mem still opens");

# the init still reports the script's wait status
$r = $w->run_job(job_id => 'exit137', script => 'import sys; sys.exit(137)');
is("$r->{status}/$r->{error}{code}/" . ($r->{exit_code} // 'null'),
   'error/exit/137', 'an exit code over 128 is the script\'s')
    or diag explain $r;

$r = $w->run_job(job_id => 'sigkill',
                 script => 'import os, signal; os.kill(os.getpid(), signal.SIGKILL)');
is("$r->{status}/$r->{error}{code}", 'killed/signal', 'a signal is a signal')
    or diag explain $r;

is(join(' ', $w->leftovers), '', 'nothing left on the host');
