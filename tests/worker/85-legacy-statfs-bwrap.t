#!/usr/bin/perl

# Two old system calls answer a bwrap sandbox about the host's kernel
# whatever its namespaces: ustat(dev) gives the free blocks and inodes
# of any file system mounted anywhere on the host, found by its device
# number (the kernel looks the superblock up across every mount
# namespace): which devices are mounted, how full each is, another job's
# /scratch included, a number a script can count up to; and sysfs(2)
# lists the kernel's file system types, which is what /proc/filesystems
# was covered for (tests/worker/83-proc-allow-bwrap.t).  Both are now
# refused with EPERM by the sandbox's seccomp program, like the other
# calls a script has no business with (71-proc-seccomp-bwrap.t).  Python
# and glibc call neither (glibc dropped ustat in 2.28).  gVisor has
# neither.

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

# a file system of the host's that the sandbox does not mount: the
# test's own directory's, or the host's /dev/shm
my $dev = (stat('/dev/shm'))[0] // (stat($t->testdir))[0];

my $script = <<'PY';
import ctypes, json, os

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
res = {}

def call(name, nr, *args):
    n = libc.syscall(nr, *[a if isinstance(a, ctypes.Array)
                           else ctypes.c_long(a) for a in args])
    res[name] = "returned %d" % n if n >= 0 \
        else os.strerror(ctypes.get_errno())
    return n

buf = ctypes.create_string_buffer(64)
call("ustat_host", 136, HOSTDEV, buf)
call("ustat_root", 136, os.stat("/").st_dev, buf)
call("sysfs_count", 139, 3)
call("sysfs_name", 139, 2, 0, buf)
res["statvfs"] = os.statvfs("/scratch").f_bsize > 0
print(json.dumps(res))
PY
$script =~ s/HOSTDEV/$dev/;

my $r = $w->run_job(job_id => 'legacy', script => $script);
my $p = eval { decode_json($r->{stdout}) } // {};
is($r->{status}, 'ok', 'the system call probe ran') or diag explain $r;

is($p->{ustat_host}, 'Operation not permitted',
   "ustat() of a host's file system the sandbox does not mount is refused")
    or diag explain $p;
is($p->{ustat_root}, 'Operation not permitted',
   'ustat() of its own root is refused');
is(($p->{sysfs_count} // '?') . ' ' . ($p->{sysfs_name} // '?'),
   'Operation not permitted Operation not permitted',
   "sysfs(2): the kernel's file system types are not listed");
ok($p->{statvfs}, 'statvfs() of its own mounts answers');
