#!/usr/bin/perl

# A bwrap sandbox's /dev was bwrap's --dev: a tmpfs with the host's
# device nodes bound on it one by one from the host's devtmpfs, and a
# devpts of the host kernel (covered).  Each of those mounts had its
# line in /proc/self/mountinfo and /proc/mounts, the devtmpfs's with its
# size and inode count, which the host sets from its memory (half of
# it).  Now, under a worker started as root, /dev is a tmpfs of its own
# of 4 KiB, read-only, with the same device nodes made in it
# (aw_bwrap_dev() in worker/aw_sandbox.c): one mount, and /dev/shm on
# it; the nodes work as before.  A worker without CAP_MKNOD (the shipped
# unit's PrivateDevices= takes it; its /dev is then systemd's tmpfs, not
# the host's devtmpfs) cannot make them: its jobs still run, with the
# worker's nodes bound one by one, as bwrap's --dev did.

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

plan tests => 13;

# the host's devtmpfs options, its size among them
my ($host_dev) = map { (split ' ')[3] }
                 grep { (split ' ')[2] eq 'devtmpfs' }
                 split /\n/, Airlock::Worker::_slurp('/proc/mounts') // '';
my ($host_size) = ($host_dev // '') =~ /\b(size=\d+\w*)/;

my $probe = <<'PY';
import json, os, stat

res = {"mounts": [], "nodes": {}, "works": {}}
with open("/proc/self/mountinfo") as f:
    res["mountinfo"] = f.read()
with open("/proc/mounts") as f:
    res["proc_mounts"] = f.read()
for line in res["mountinfo"].splitlines():
    pre, post = line.split(" - ")
    res["mounts"].append({"at": pre.split()[4], "type": post.split()[0],
                          "super": post.split()[2]})
for n in sorted(os.listdir("/dev")):
    st = os.lstat("/dev/" + n)
    if stat.S_ISCHR(st.st_mode):
        res["nodes"][n] = "%d,%d" % (os.major(st.st_rdev),
                                     os.minor(st.st_rdev))

def works(name, f):
    try:
        res["works"][name] = f()
    except OSError as e:
        res["works"][name] = os.strerror(e.errno)

def rd(path, n):
    with open(path, "rb") as f:
        return len(f.read(n))

def wr(path):
    with open(path, "wb") as f:
        f.write(b"x" * 4096)
        f.flush()
    return "written"

works("null", lambda: wr("/dev/null"))
works("full", lambda: wr("/dev/full"))
works("zero", lambda: open("/dev/zero", "rb").read(8) == bytes(8))
works("urandom", lambda: rd("/dev/urandom", 16))
works("random", lambda: rd("/dev/random", 16))
works("create", lambda: wr("/dev/made"))
print(json.dumps(res))
PY
my $r = $w->run_job(job_id => 'dev', script => $probe);
my $p = eval { decode_json($r->{stdout}) } // {};
is($r->{status}, 'ok', 'the probe ran') or diag explain $r;

my @m = @{$p->{mounts} // []};
is(join(' ', map { $_->{at} } grep { $_->{type} eq 'devtmpfs' } @m), '',
   "no mount of the host's devtmpfs") or diag $p->{mountinfo};
is(join(' ', map { $_->{at} } grep { $_->{at} =~ m{^/dev/} } @m),
   '/dev/shm', '/dev is one mount, with /dev/shm on it');
my ($dev) = grep { $_->{at} eq '/dev' } @m;
like($dev && $dev->{super}, qr/(^|,)size=4k(,|$)/,
     "/dev is a tmpfs of 4 KiB (@{[$dev && $dev->{super} // '']})");

SKIP: {
    skip 'the host has no devtmpfs', 1 unless defined $host_size;
    my $seen = grep { index($p->{$_} // '', $host_size) >= 0 }
               qw(mountinfo proc_mounts);
    is($seen, 0, "the host devtmpfs's $host_size is shown nowhere");
}

is(join(' ', map { "$_=$p->{nodes}{$_}" } sort keys %{$p->{nodes} // {}}),
   'full=1,7 null=1,3 random=1,8 tty=5,0 urandom=1,9 zero=1,5',
   'the device nodes are those of bwrap\'s --dev');
my %want = (null => 'written', full => 'No space left on device',
            zero => 1, urandom => 16, random => 16);
sub works {
    my ($q) = @_;
    return join ' ', map { "$_=" . ($q->{works}{$_} // '?') } sort keys %want;
}
my $want = join ' ', map { "$_=$want{$_}" } sort keys %want;
is(works($p), $want, 'each works as before') or diag explain $p->{works};
like($p->{works}{create} // '',
     qr/^(Read-only file system|Permission denied)$/,
     'nothing can be made in /dev');

# a worker without CAP_MKNOD: the worker's nodes, bound
$w->kill_worker('TERM', $pid);
$w->start_worker(wrap => ['setpriv', '--bounding-set', '-mknod']);
$r = $w->run_job(job_id => 'dev-nomknod', script => $probe);
my $q = eval { decode_json($r->{stdout}) } // {};
is($r->{status}, 'ok', 'without CAP_MKNOD, the job runs') or diag explain $r;
ok(grep({ $_->{at} eq '/dev/null' } @{$q->{mounts} // []}),
   "with the worker's nodes (bound one by one)");
is(works($q), $want, 'its nodes work') or diag explain $q->{works};
like($q->{works}{create} // '',
     qr/^(Read-only file system|Permission denied)$/,
     'nothing can be made in its /dev');

is(join(' ', $w->leftovers), '', 'nothing left on the host');
