#!/usr/bin/perl

# A bwrap worker started as another user than root: statfs() of the
# sandbox's root, /app/code and /app/data answers with an empty
# read-only tmpfs's numbers (one block, one inode), not the host file
# system's, as under a root worker (tests/worker/103-root-statfs-
# bwrap.t).  Such a worker has no tmpfs of root's to put on top of each
# overlay and left the host's directory on top, whose size and free
# blocks and inodes, live, a script read (os.statvfs(),
# shutil.disk_usage()).  Now the runtime's child mounts the tmpfs in its
# own user namespace: its root directory is the worker's uid, which is
# the sandbox user inside, so it is mode 0555 and read-only, and the
# sandbox user can change nothing of it (EROFS).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Cwd ();
use JSON::PP;
use Test::More;
use Airlock::Prereq qw(need_cmd);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => 'bwrap');

need_cmd('stat');
Airlock::Prereq::absent('setpriv not installed') unless -x '/usr/bin/setpriv';
Airlock::Prereq::absent('cgroup v1 needed to delegate the job cgroups')
    unless -d '/sys/fs/cgroup/memory' && -d '/sys/fs/cgroup/pids';

$w->start_proxy;
$w->start_redis;

plan tests => 6;

my $dir = $t->testdir;
my $uid = getpwnam('airlock-worker');
my $gid = (getpwnam('airlock-worker'))[3];
my $name = "airlock-test-$$";

# the worker's user gets its password file, workdir and cgroups
# (tests/worker/77-non-root.t)
chown $uid, $gid, $t->redis_pass('airlock-worker') or die "chown: $!";
mkdir "$dir/work" or die "mkdir: $!";
chown $uid, $gid, "$dir/work" or die "chown: $!";

my @cg = map { "/sys/fs/cgroup/$_/$name" }
         grep { -d "/sys/fs/cgroup/$_" } qw(memory pids cpu cpuacct);
for my $d (@cg) {
    mkdir $d or die "$d: $!";
    system('chown', '-R', "$uid:$gid", $d) == 0 or die "chown -R $d";
}

END {
    rmdir $_ for grep { -d } map { glob("$_/*") } @cg;
    rmdir $_ for grep { -d } @cg;
}

$w->start_worker(wrap => [ '/usr/bin/setpriv', "--reuid=$uid",
                           "--regid=$gid", '--clear-groups', '--' ]);

my %host;
for my $d (Cwd::realpath($w->{rootfs}), $dir) {
    my ($blocks, $files) = split ' ', `stat -f -c '%b %c' '$d'` // '';
    $host{$d} = { blocks => $blocks // -1, files => $files // -1 };
}

my $r = $w->run_job(job_id => 'statfs', script => <<'PY');
import json, os
res = {}
for p in ["/", "/usr/lib", "/app/code", "/app/code/script.py", "/app/data",
          "/app/data/data.json"]:
    s = os.statvfs(p)
    res[p] = {"blocks": s.f_blocks, "files": s.f_files}
st = os.stat("/")
res["root"] = {"mode": "%o" % (st.st_mode & 0o7777)}
try:
    os.chmod("/", 0o777)
    res["chmod"] = "done"
except OSError as e:
    res["chmod"] = e.errno
try:
    open("/x", "w")
    res["create"] = "done"
except OSError as e:
    res["create"] = e.errno
print(json.dumps(res))
PY
my $p = eval { decode_json($r->{stdout}) } // {};
is($r->{status}, 'ok', 'the probe ran') or diag explain $r;

my @paths = ('/', '/usr/lib', '/app/code', '/app/code/script.py',
             '/app/data', '/app/data/data.json');
sub host_like {
    my ($s) = @_;
    return grep { $s->{blocks} == $_->{blocks} && $s->{files} == $_->{files} }
           values %host;
}
is(join(' ', grep { !$p->{$_} || host_like($p->{$_}) } @paths), '',
   "none answers with the host file system's size and inodes")
    or diag explain { sandbox => $p, host => \%host };
is(join(' ', grep { !$p->{$_} || $p->{$_}{blocks} > 16 } @paths), '',
   'each answers with a few blocks of its own');
is(($p->{root} // {})->{mode}, '555', 'the root is mode 0555')
    or diag explain $p;
is(($p->{chmod} // '') . ' ' . ($p->{create} // ''), '30 30',
   'and its owner changes nothing of it (EROFS)') or diag explain $p;

is(join(' ', $w->leftovers), '', 'nothing left on the host');
