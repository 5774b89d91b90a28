#!/usr/bin/perl

# modify_ldt() and vmsplice() are refused (EPERM): no Python program
# needs them, and under bwrap they reach the host's kernel (a process's
# own descriptor table; pages mapped straight into a pipe), each with
# its history of holes.  Both backends refuse them, as the other calls
# of the sandbox's deny list (gVisor's sentry refused modify_ldt before;
# vmsplice it ran); a pipe written the usual way still works.  95-ldt-vmsplice-bwrap.t runs this file with that backend.

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

my $r = $w->run_job(job_id => 'ldt-vmsplice', script => <<'PY');
import ctypes, json, os

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
res = {}

def call(nr, *args):
    ctypes.set_errno(0)
    rc = libc.syscall(ctypes.c_long(nr), *args)
    return os.strerror(ctypes.get_errno()) if rc < 0 else "allowed"

# x86_64: modify_ldt 154 (func 0 reads the table), vmsplice 278
buf = ctypes.create_string_buffer(64)
res["modify_ldt"] = call(154, ctypes.c_long(0), buf, ctypes.c_ulong(64))

class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

r, w = os.pipe()
data = ctypes.create_string_buffer(b"spliced", 7)
iov = iovec(ctypes.cast(data, ctypes.c_void_p), 7)
res["vmsplice"] = call(278, ctypes.c_long(w), ctypes.byref(iov),
                       ctypes.c_ulong(1), ctypes.c_uint(0))

r, w = os.pipe()
os.write(w, b"piped")
res["pipe"] = os.read(r, 64).decode()
print(json.dumps(res))
PY
my $p = eval { decode_json($r->{stdout}) } // {};
is($r->{status}, 'ok', 'the probe ran') or diag explain $r;
is($p->{modify_ldt}, 'Operation not permitted', 'modify_ldt is refused')
    or diag explain $p;
is($p->{vmsplice}, 'Operation not permitted', 'vmsplice is refused')
    or diag explain $p;
is($p->{pipe}, 'piped', 'a pipe still works');
