#!/usr/bin/perl

# A bwrap sandbox's root is the rootfs bound read-only, the same inodes
# every other sandbox and the host use; inotify and fanotify report the
# opens and reads of an inode whoever makes them, in whatever namespace.
# So a script could watch the standard library's files and see another
# job import json, or the host read the rootfs, as it happens: a channel
# between jobs.  gVisor's inotify is its sentry's, which sees its own
# sandbox alone.  inotify_add_watch, fanotify_init and fanotify_mark
# are now refused with EPERM (inotify_init still answers: a watch is
# what reports; tests/worker/40-uids-bwrap.t counts instances).  Here
# the host reads a file of the rootfs while the job watches it.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => 'bwrap');
$w->start_proxy;
$w->start_redis;
$w->start_worker;

plan tests => 5;

# a file of the standard library's, in the rootfs
my ($host) = glob("$w->{rootfs}/usr/lib/python3*/colorsys.py");
die "no colorsys.py in $w->{rootfs}\n" unless defined $host;
(my $file = $host) =~ s{^\Q$w->{rootfs}\E/}{};

my $script = <<'PY';
import ctypes, json, os, time

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
L = ctypes.c_long
res = {}

def err(n):
    return "returned %d" % n if n >= 0 else os.strerror(ctypes.get_errno())

path = b"/FILE"
ino = libc.inotify_init1(os.O_NONBLOCK)
res["inotify_init"] = "ok" if ino >= 0 else err(ino)
res["inotify_add_watch"] = err(libc.inotify_add_watch(ino, path,
                                                      0x20 | 0x1))
fan = libc.syscall(L(300), L(0x200), L(os.O_RDONLY))
res["fanotify_init"] = err(fan)
res["fanotify_mark"] = err(libc.syscall(L(301), L(fan), L(1),
                                        ctypes.c_uint64(0x21), L(-100),
                                        path))
time.sleep(3)
n = 0
for fd in (ino, fan):
    if fd >= 0:
        os.set_blocking(fd, False)
        try:
            n += len(os.read(fd, 4096))
        except OSError:
            pass
res["events"] = n
print(json.dumps(res))
PY
$script =~ s{/FILE}{/$file};

# the host reads the file all the while the job runs
my $reader = fork // die "fork: $!";
if ($reader == 0) {
    for (1 .. 60) {
        if (open(my $fh, '<', $host)) {
            my $x = <$fh>;
            close $fh;
        }
        sleep 0.1;
    }
    exit 0;
}

my $r = $w->run_job(job_id => 'watch', script => $script, timeout => 60);
kill 'KILL', $reader;
waitpid $reader, 0;

my $p = eval { decode_json($r->{stdout}) } // {};
is($r->{status}, 'ok', 'the watch probe ran') or diag explain $r;
is($p->{inotify_add_watch}, 'Operation not permitted',
   'inotify_add_watch is refused') or diag explain $p;
is(($p->{fanotify_init} // '?') . ' ' . ($p->{fanotify_mark} // '?'),
   'Operation not permitted Operation not permitted',
   'fanotify_init and fanotify_mark are refused') or diag explain $p;
is($p->{events}, 0, "no event of the host's reads reaches the job");
is($p->{inotify_init}, 'ok', 'inotify_init still answers');
