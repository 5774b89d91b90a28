#!/usr/bin/perl

# A program a script writes does not run from a memory file either:
# memfd_create() is refused (EPERM).  A memory file is on no mount of
# the sandbox's, so the noexec of /scratch, /tmp and /dev/shm did not
# reach it, and a binary copied into one ran (execve of /proc/self/fd/N),
# under both backends.  ctypes' callbacks (libffi's closures), which
# could have used one, still work.  92-memfd-exec-bwrap.t runs this file
# with that backend.

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

plan tests => 4;

my $r = $w->run_job(job_id => 'memfd', script => <<'PY');
import ctypes, json, os, subprocess

res = {}
try:
    fd = os.memfd_create("prog", 0)
    res["memfd"] = "created"
    with open(os.path.realpath("/usr/bin/python3"), "rb") as f:
        os.write(fd, f.read())
    try:
        res["exec"] = subprocess.run(
            ["/proc/self/fd/%d" % fd, "-c", "print('ran')"],
            pass_fds=(fd,), capture_output=True, text=True).stdout
    except OSError as e:
        res["exec"] = e.strerror
except OSError as e:
    res["memfd"] = e.strerror
    res["exec"] = "no memory file"

cb = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(lambda x: x * 2)
res["callback"] = cb(21)
print(json.dumps(res))
PY
my $p = eval { decode_json($r->{stdout}) } // {};
is($r->{status}, 'ok', 'the probe ran') or diag explain $r;
is($p->{memfd}, 'Operation not permitted', 'memfd_create is refused');
isnt($p->{exec}, "ran\n", 'a program written to memory does not run');
is($p->{callback}, 42, "ctypes' callbacks still work");
