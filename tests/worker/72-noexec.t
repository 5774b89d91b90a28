#!/usr/bin/perl

# A script's writable places hold data, never programs: /scratch, /tmp
# and /dev/shm are noexec (nosuid, nodev too), so a binary a script
# writes there and marks executable does not run (execve: EACCES), and,
# under bwrap, the kernel maps nothing there executable (mmap with
# PROT_EXEC: EPERM, so no library either); gVisor's sentry refuses the
# exec but maps the file.  The interpreter still reads a script written
# there.  bwrap mounts no tmpfs noexec: the worker's child mounts them
# in a user and mount namespace of its own, and bwrap binds them.
# 72-noexec-bwrap.t runs this file with that backend.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'gvisor');
$w->start_proxy;
$w->start_redis;
$w->start_worker;

plan tests => 11;

my $r = $w->run_job(job_id => 'noexec', script => <<'PY');
import json, mmap, os, shutil, subprocess

res = {}
with open("/proc/self/mountinfo") as f:
    mounts = [l.split() for l in f]

for d in ("/scratch", "/tmp", "/dev/shm"):
    p = d + "/prog"
    shutil.copy(os.path.realpath("/usr/bin/python3"), p)
    os.chmod(p, 0o755)
    try:
        res[d + " exec"] = subprocess.run([p, "-c", "print('ran')"],
                                          capture_output=True,
                                          text=True).stdout
    except OSError as e:
        res[d + " exec"] = e.strerror
    try:
        with open(p, "rb") as f:
            mmap.mmap(f.fileno(), 4096, prot=mmap.PROT_READ | mmap.PROT_EXEC)
        res[d + " mmap"] = "mapped"
    except OSError as e:
        res[d + " mmap"] = e.strerror
    res[d + " flags"] = [m[5] for m in mounts if m[4] == d]

with open("/scratch/s.py", "w") as f:
    f.write("print('read')")
res["script"] = subprocess.run(["/usr/bin/python3", "/scratch/s.py"],
                               capture_output=True, text=True).stdout
print(json.dumps(res))
PY
my $p = eval { decode_json($r->{stdout}) } // {};
is($r->{status}, 'ok', 'the probe ran') or diag explain $r;

for my $d (qw(/scratch /tmp /dev/shm)) {
    is($p->{"$d exec"}, 'Permission denied',
       "$d: a binary written there does not run");
    like(join(' ', @{$p->{"$d flags"} // []}), qr/\bnoexec\b/,
         "$d: mounted noexec");
    SKIP: {
        skip "gVisor's sentry maps a noexec file executable", 1
            if $w->backend ne 'bwrap';
        is($p->{"$d mmap"}, 'Operation not permitted',
           "$d: nothing mapped executable from there");
    }
}
is($p->{script}, "read\n", 'the interpreter reads a script written there');
