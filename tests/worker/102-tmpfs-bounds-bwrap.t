#!/usr/bin/perl

# A tmpfs mounted without size= and nr_inodes= takes the kernel's
# defaults, each half the host's memory (in pages), which statvfs()
# gives any process and /proc/self/mountinfo tells by their absence.
# Under bwrap the sandbox's /scratch, /tmp and /dev/shm had a size but
# no inode bound (statvfs()'s f_files: half the host's pages), so did
# the small tmpfs the covers of /proc are bound from, and
# /proc/sys/kernel and /proc/sys/vm were bwrap's --tmpfs, with neither
# (bwrap's --size sets only the size).  Now every tmpfs a script sees
# has both (aw_bwrap_mounts() in worker/aw_sandbox.c): the writable
# places scratch_mb and 1024 inodes a MiB, the rest a few KiB.
# A worker without CAP_MKNOD (the shipped unit's PrivateDevices= takes
# it) had bwrap's --dev: a tmpfs with neither, and a devpts of the host
# kernel's under a cover.  Now its /dev is the same 4 KiB tmpfs as a
# root worker's, the worker's device nodes bound on it, and no devpts.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Airlock::Prereq qw(need_cmd);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => 'bwrap');
need_cmd('setpriv');
$w->start_proxy;
$w->start_redis;
my $pid = $w->start_worker;

plan tests => 9;

# half the host's memory in pages: a tmpfs's default size and inodes
my ($kb) = (Airlock::Worker::_slurp('/proc/meminfo') // '')
           =~ /^MemTotal:\s+(\d+) kB/m;
my $half = int(($kb // 0) / 8);

my $probe = <<'PY';
import json, os

res = {"tmpfs": {}, "types": []}
with open("/proc/self/mountinfo") as f:
    for line in f:
        pre, post = line.split(" - ")
        at, (fstype, _, opts) = pre.split()[4], post.split()
        res["types"].append(fstype)
        if fstype != "tmpfs":
            continue
        s = os.statvfs(at)
        res["tmpfs"][at] = {"opts": opts, "bytes": s.f_blocks * s.f_frsize,
                            "blocks": s.f_blocks, "files": s.f_files}
print(json.dumps(res))
PY

# the tmpfs whose options leave out a bound, and those whose statvfs()
# is over scratch_mb (64 MiB, 65536 inodes) or tells the host's memory
sub unbounded {
    my ($p) = @_;
    my $m = $p->{tmpfs} // {};
    return join ' ', map { "$_($m->{$_}{opts})" }
                     grep { $m->{$_}{opts} !~ /(^|,)size=/
                            || $m->{$_}{opts} !~ /(^|,)nr_inodes=/ }
                     sort keys %$m;
}
sub over {
    my ($p) = @_;
    my $m = $p->{tmpfs} // {};
    return join ' ', map { "$_($m->{$_}{bytes} bytes,"
                           . " $m->{$_}{files} inodes)" }
                     grep { $m->{$_}{bytes} > 64 << 20
                            || $m->{$_}{files} > 65536
                            || grep { abs($_ - $half) < 1024 }
                                    @{$m->{$_}}{qw(blocks files)} }
                     sort keys %$m;
}

my $r = $w->run_job(job_id => 'tmpfs', script => $probe);
my $p = eval { decode_json($r->{stdout}) } // {};
is($r->{status}, 'ok', 'the probe ran') or diag explain $r;
ok(exists $p->{tmpfs}{'/scratch'} && exists $p->{tmpfs}{'/proc/sys/kernel'},
   'it saw the tmpfs mounts') or diag explain $p;
is(unbounded($p), '', 'every tmpfs has its size and inode count set');
is(over($p), '', 'none is over scratch_mb or tells the host\'s memory'
   . " ($half pages)");

# a worker without CAP_MKNOD: its /dev made of the worker's nodes
$w->kill_worker('TERM', $pid);
$w->start_worker(wrap => ['setpriv', '--bounding-set', '-mknod']);
$r = $w->run_job(job_id => 'tmpfs-nomknod', script => $probe);
$p = eval { decode_json($r->{stdout}) } // {};
is($r->{status}, 'ok', 'without CAP_MKNOD, the probe ran')
    or diag explain $r;
ok(exists $p->{tmpfs}{'/dev'}, 'it saw /dev') or diag explain $p;
is(unbounded($p), '', 'every tmpfs has its size and inode count set');
is(over($p), '', 'none is over scratch_mb or tells the host\'s memory');
is(join(' ', grep { $_ eq 'devpts' } @{$p->{types} // []}), '',
   'no devpts is mounted');
