#!/usr/bin/perl

# What a bwrap sandbox's /proc and seccomp filter leave a script.  The
# kernel's /proc, mounted for the sandbox's own pid namespace, still has
# the host's entries: its kernel's symbols, configuration and command
# line, its memory map, keys, log and boot id, how its CPU, memory and
# I/O are under pressure; each is an empty file or directory inside.  The
# filter refuses kcmp (two processes' files and memory compared),
# pidfd_getfd, file handles, the new mount API, a new personality (no
# address randomisation for what a process runs), clone() with a
# namespace flag and clone3() (ENOSYS: the C library falls back to
# clone()).  A script of the standard library's threads, processes,
# subprocesses, semaphores, temporary files, sqlite and ctypes callbacks
# still runs.  gVisor's /proc is its sentry's own.

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

plan tests => 26;

my ($r, $p);

$r = $w->run_job(job_id => 'proc', script => <<'PY');
import json, os

res = {}

def rd(path):
    try:
        with open(path, "rb") as f:
            return len(f.read(1 << 16))
    except OSError as e:
        return e.strerror

for path in ("/proc/kallsyms", "/proc/config.gz", "/proc/cmdline",
             "/proc/iomem", "/proc/interrupts", "/proc/keys",
             "/proc/key-users", "/proc/kmsg", "/proc/zoneinfo",
             "/proc/sys/kernel/random/boot_id"):
    res[path] = rd(path)

for path in ("/proc/pressure", "/proc/bus", "/proc/sys/fs"):
    res[path] = os.listdir(path)

res["cpuinfo"] = rd("/proc/cpuinfo")
res["meminfo"] = rd("/proc/meminfo")
res["self"] = rd("/proc/self/status")

try:
    with open("/proc/kallsyms", "w") as f:
        f.write("x")
    res["write"] = "written"
except OSError as e:
    res["write"] = e.strerror

print(json.dumps(res))
PY
$p = eval { decode_json($r->{stdout}) } // {};
is($r->{status}, 'ok', 'the /proc probe ran') or diag explain $r;

for my $f (qw(/proc/kallsyms /proc/config.gz /proc/cmdline /proc/iomem
              /proc/interrupts /proc/keys /proc/key-users /proc/kmsg
              /proc/zoneinfo)) {
    ok(defined $p->{$f} && $p->{$f} !~ /^[1-9]/,
       "$f: nothing of the host's (" . ($p->{$f} // 'undef') . ')');
}
is($p->{'/proc/sys/kernel/random/boot_id'}, 'No such file or directory',
   "no boot id of the host's");
is(join(',', map { @{$p->{$_} // ['?']} } qw(/proc/pressure /proc/bus
                                            /proc/sys/fs)), '',
   '/proc/pressure, /proc/bus, /proc/sys/fs are empty');
ok(($p->{cpuinfo} // 0) =~ /^[1-9]/ && ($p->{meminfo} // 0) =~ /^[1-9]/
   && ($p->{self} // 0) =~ /^[1-9]/,
   '/proc/cpuinfo, /proc/meminfo and /proc/self are still read');
ok(defined $p->{write} && $p->{write} ne 'written',
   'a cover is read-only: ' . ($p->{write} // 'undef'));

$r = $w->run_job(job_id => 'calls', script => <<'PY');
import ctypes, json, os, signal, time

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
res = {}

def call(name, nr, *args):
    n = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
    res[name] = "returned %d" % n if n >= 0 \
        else os.strerror(ctypes.get_errno())
    return n

child = os.fork()
if child == 0:
    time.sleep(30)
    os._exit(0)
call("kcmp", 312, os.getpid(), child, 0, 0, 0)
call("pidfd_getfd", 438, 0, 0, 0)
call("name_to_handle_at", 303, -100, 0, 0, 0, 0)
call("open_tree", 428, -100, 0, 0)
call("mount_setattr", 442, -100, 0, 0, 0, 0)
call("personality_query", 135, 0xffffffff)
call("personality_set", 135, 0x0040000)
if call("clone_newuser", 56, 0x10000000 | signal.SIGCHLD, 0, 0, 0, 0) == 0:
    os._exit(0)
call("clone3", 435, 0, 0)
os.kill(child, signal.SIGKILL)
os.waitpid(child, 0)
print(json.dumps(res))
PY
$p = eval { decode_json($r->{stdout}) } // {};
is($r->{status}, 'ok', 'the system call probe ran') or diag explain $r;

for my $c (qw(kcmp pidfd_getfd name_to_handle_at open_tree mount_setattr
              personality_set clone_newuser)) {
    is($p->{$c}, 'Operation not permitted', "$c refused");
}
is($p->{personality_query}, 'returned 0', 'personality(0xffffffff) answers');
is($p->{clone3}, 'Function not implemented', 'clone3: ENOSYS');

$r = $w->run_job(job_id => 'stdlib', limits => { wall_ms => 60000 },
                 script => <<'PY');
import asyncio, concurrent.futures, ctypes, hashlib, json, multiprocessing
import os, sqlite3, subprocess, sys, tempfile, threading, zlib

def square(x):
    return x * x

if __name__ == "__main__":
    out = {}
    with multiprocessing.Pool(2) as pool:
        out["pool"] = sum(pool.map(square, range(10)))
    with concurrent.futures.ProcessPoolExecutor(2) as ex:
        out["executor"] = sum(ex.map(square, range(4)))
    lock = multiprocessing.Lock()
    with lock:
        out["lock"] = 1
    t = threading.Thread(target=lambda: out.__setitem__("thread", 1))
    t.start()
    t.join()
    out["sub"] = subprocess.run([sys.executable, "-c", "print(6 * 7)"],
                                capture_output=True, text=True).stdout
    with tempfile.NamedTemporaryFile("w", dir="/tmp") as f:
        f.write("x")
        f.flush()
        out["temp"] = os.path.getsize(f.name)
    db = sqlite3.connect("/scratch/db")
    db.execute("create table t (x)")
    db.execute("insert into t values (5)")
    out["sqlite"] = db.execute("select x from t").fetchone()[0]
    cb = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(lambda x: x + 1)
    out["ctypes"] = cb(1)
    out["async"] = asyncio.run(asyncio.sleep(0, result=3))
    out["zlib"] = len(zlib.compress(hashlib.sha256(b"x").digest()))
    out["cpus"] = os.cpu_count() or 0
    out["load"] = len(os.getloadavg())
    print(json.dumps(out, sort_keys=True))
PY
$p = eval { decode_json($r->{stdout}) } // {};
is($r->{status}, 'ok', 'a standard library script runs') or diag explain $r;
is(join(',', map { "$_=" . ($p->{$_} // 'undef') }
             qw(pool executor lock thread sub temp sqlite ctypes async
                load)),
   "pool=285,executor=14,lock=1,thread=1,sub=42\n,temp=1,sqlite=5,"
   . "ctypes=2,async=3,load=3",
   'pools, locks, threads, subprocesses, files, sqlite, ctypes, asyncio');
