#!/usr/bin/perl

# Since Linux 6.8 every mount gets a unique 64-bit id from one counter
# for the whole host (from 2^31 up), which statx(STATX_MNT_ID_UNIQUE),
# statmount() and listmount() give any process for its own mounts.  A
# bwrap sandbox's mounts are made for it as it starts, so the id of its
# root says how many mounts the host has made since boot, about 150 a
# bwrap job: how many jobs ran on the host, and, job after job of one
# session, how many of other sessions ran between (what /proc/cgroups
# was covered for, tests/worker/83-proc-allow-bwrap.t).  gVisor's statx
# gives 0.  Now the sandbox's seccomp program refuses statx() asking
# for it and statmount() and listmount() with EPERM; statx() without it
# answers.

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

plan tests => 5;

my $r = $w->run_job(job_id => 'mntid', script => <<'PY');
import ctypes, json, os

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
L = ctypes.c_long
res = {}

def err(n):
    return "returned %d" % n if n >= 0 else os.strerror(ctypes.get_errno())

def statx(mask):
    buf = ctypes.create_string_buffer(256)
    n = libc.syscall(L(332), L(-100), b"/", L(0), L(mask), buf)
    return err(n), int.from_bytes(buf.raw[0x90:0x98], "little")

res["statx_unique"] = statx(0x4000 | 0xfff)
res["statx_old_id"] = statx(0x1000 | 0xfff)
res["statx_basic"] = statx(0x7ff)

# listmount(&{size 24, mnt_id LSMT_ROOT, last id 0}, ids, 16, 0)
req = (ctypes.c_uint64 * 3)(24, 0xffffffffffffffff, 0)
ids = (ctypes.c_uint64 * 16)()
res["listmount"] = err(libc.syscall(L(458), req, ids, L(16), L(0)))
# statmount(&{size 24, the root's id, STATMOUNT_SB_BASIC}, buf, 4096, 0)
req = (ctypes.c_uint64 * 3)(24, res["statx_unique"][1] or ids[0], 1)
buf = ctypes.create_string_buffer(4096)
res["statmount"] = err(libc.syscall(L(457), req, buf, L(4096), L(0)))
print(json.dumps(res))
PY
my $p = eval { decode_json($r->{stdout}) } // {};
is($r->{status}, 'ok', 'the mount id probe ran') or diag explain $r;

is(($p->{statx_unique} // ['?'])->[0], 'Operation not permitted',
   "statx() is refused the root's unique mount id") or diag explain $p;
is(join(' ', map { $p->{$_} // '?' } qw(listmount statmount)),
   'Operation not permitted Operation not permitted',
   'listmount() and statmount() are refused');
is(($p->{statx_basic} // ['?'])->[0], 'returned 0',
   'statx() of the basic fields answers');
is(($p->{statx_old_id} // ['?'])->[0], 'returned 0',
   "and of the old mount id (mountinfo's first field)");
