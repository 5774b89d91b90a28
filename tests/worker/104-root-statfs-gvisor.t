#!/usr/bin/perl

# statfs() under gVisor: the sentry asks its gofer, which answers with
# the host's fstatfs() of the file it holds.  The bundle named the
# rootfs and the job's code and data directories (<workdir>/in/<n>) as
# they are, so statvfs() of any file of the sandbox's root, /app/code
# and /app/data (os.statvfs(), shutil.disk_usage()) gave the host file
# system's size, free blocks and inodes, live, which what the host and
# other jobs' sandboxes write there moves.  Now the bundle names three
# read-only overlays the runtime's child mounts in a mount namespace of
# its own, each the host's directory under an empty tmpfs of root's, one
# block and one inode, read-only (aw_layers() in worker/aw_sandbox.c):
# an overlay's statfs() answers for its top layer.  Nothing of them is
# mounted on the host.  Where the kernel refuses an overlay (here a
# rootfs already two overlays deep), the host's directory is bound
# there as it is, and the job runs.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Cwd ();
use File::Path qw(make_path);
use JSON::PP;
use Test::More;
use Airlock::Prereq qw(need_cmd);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => 'gvisor');
need_cmd('stat');
need_cmd('unshare');
$w->start_proxy;
$w->start_redis;
my $pid = $w->start_worker;

plan tests => 13;

my $real = Cwd::realpath($w->{rootfs});

# the host's file systems under the rootfs and the workdir: their size
# and inode count
my %host;
for my $dir ($real, $t->testdir) {
    my ($blocks, $files) = split ' ', `stat -f -c '%b %c' '$dir'` // '';
    $host{$dir} = { blocks => $blocks // -1, files => $files // -1 };
}

my @paths = ('/', '/usr/lib', '/app/code', '/app/code/script.py',
             '/app/data', '/app/data/data.json');
my $probe = <<'PY';
import json, os
res = {}
for p in ["/", "/usr/lib", "/app/code", "/app/code/script.py", "/app/data",
          "/app/data/data.json"]:
    s = os.statvfs(p)
    res[p] = {"blocks": s.f_blocks, "files": s.f_files}
st = os.stat("/")
res["root"] = {"uid": st.st_uid, "writable": os.access("/", os.W_OK)}
for p in ["/", "/usr/lib", "/app/code", "/app/data"]:
    try:
        open(os.path.join(p, "x"), "w")
        res["wrote"] = res.get("wrote", "") + p + " "
    except OSError:
        pass
with open("/app/data/data.json") as f:
    res["data"] = json.load(f)
print(json.dumps(res))
PY

sub host_like {
    my ($s) = @_;
    return grep { $s->{blocks} == $_->{blocks} && $s->{files} == $_->{files} }
           values %host;
}

# the host's mounts under the test's directory (none: the job's are in
# its runtime's mount namespace)
sub host_mounts {
    my $dir = $t->testdir;
    return grep { index((split ' ', $_)[4] // '', $dir) == 0 }
           split /\n/, Airlock::Worker::_slurp('/proc/self/mountinfo') // '';
}

my $r = $w->run_job(job_id => 'statfs', script => $probe);
my $p = eval { decode_json($r->{stdout}) } // {};
is($r->{status}, 'ok', 'the probe ran') or diag explain $r;
is(join(' ', grep { !$p->{$_} || host_like($p->{$_}) } @paths), '',
   "none answers with the host file system's size and inodes")
    or diag explain { sandbox => $p, host => \%host };
is(join(' ', grep { !$p->{$_} || $p->{$_}{blocks} > 16 } @paths), '',
   'each answers with a few blocks of its own');
is(($p->{root} // {})->{uid}, 0, "the root is root's")
    or diag explain $p->{root};
ok(exists $p->{root} && !$p->{root}{writable} && !exists $p->{wrote},
   'nothing of root, code or data is writable')
    or diag explain $p;
ok(ref $p->{data} eq 'HASH', 'data.json is read as it was given')
    or diag explain $p->{data};
is(join("\n", host_mounts()), '', 'nothing is mounted on the host');

# a rootfs two overlays deep, where the kernel refuses a third: the
# rootfs is bound as it is, and the job runs
$w->kill_worker('TERM', $pid);
my $o = $t->testdir . '/deep';
make_path(map { "$o/$_" } qw(a b e1 e2));
$w->start_worker(rootfs => "$o/b", wrap => ['unshare', '-m',
    '--propagation', 'private', 'sh', '-c',
    "mount -t overlay none $o/a -o ro,lowerdir=$real:$o/e1"
    . " && mount -t overlay none $o/b -o ro,lowerdir=$o/a:$o/e2"
    . ' && exec "$0" "$@"']);
$r = $w->run_job(job_id => 'deep', script => $probe);
$p = eval { decode_json($r->{stdout}) } // {};
is($r->{status}, 'ok', 'with no overlay of its own for the root, the job runs')
    or diag explain $r;
ok(exists $p->{root} && !$p->{root}{writable} && !exists $p->{wrote},
   'nothing of root, code or data is writable there either')
    or diag explain $p;
ok($p->{'/'} && host_like($p->{'/'}),
   "its root, bound as it is, answers with the host's numbers")
    or diag explain { sandbox => $p, host => \%host };
is(join(' ', grep { !$p->{$_} || $p->{$_}{blocks} > 16 }
                  qw(/app/code /app/data)), '',
   'code and data, still overlays, answer with their own blocks')
    or diag explain $p;

is(join(' ', $w->leftovers), '', 'nothing left on the host');
is(join("\n", host_mounts()), '', 'nor mounted');
