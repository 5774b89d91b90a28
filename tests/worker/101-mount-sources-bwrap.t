#!/usr/bin/perl

# Under bwrap the sandbox's /proc/self/mountinfo and /proc/mounts named
# the source of its root, code and data bind mounts by their path on
# the host, with the host's block device and its file system's options:
# the rootfs's path, and the job's directory,
# <workdir>/jobs/aw-<worker pid>-<its start time>-<n>, which told which
# worker ran the job and since when.  Now the three are overlays of
# their own (aw_layers() in worker/aw_sandbox.c), whose root is
# "/", source "none" and layers named relative to a tmpfs of the job's;
# and code/ and data/ are in <workdir>/in/<n>, named by the random
# number alone (bound as they are where the kernel refuses an overlay:
# here a rootfs already two overlays deep).
# A dead worker's in/<n> is removed with its job directory by the next
# worker to start, a live one's kept.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Cwd ();
use File::Path qw(make_path remove_tree);
use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Prereq qw(need_cmd);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => 'bwrap');
need_cmd('unshare');
$w->start_proxy;
$w->start_redis;

plan tests => 11;

# field 22 of /proc/<pid>/stat, after "(comm)"
sub start_time {
    my ($pid) = @_;
    my $stat = Airlock::Worker::_slurp("/proc/$pid/stat") // return undef;
    $stat =~ s/^.*\) //s;
    return (split ' ', $stat)[19];
}

# what a worker leaves, under both layouts: a job directory, and code
# and data in it (the old) or in in/<n> (the new)
my $work = $t->testdir . '/work';
sub left_by {
    my ($pid, $start, $n) = @_;
    my $slot = "$work/jobs/aw-$pid-$start-$n";
    make_path("$slot/code", "$work/in/$n/code");
    $t->write_file("work/in/$n/code/script.py", "print(1)\n");
    $t->write_file("work/jobs/aw-$pid-$start-$n/code/script.py",
                   "print(1)\n");
    return ($slot, "$work/in/$n");
}

# a pid no process has, and this test's own (alive, as an owner)
my $gone = fork // die "fork: $!";
exit 0 if $gone == 0;
waitpid $gone, 0;
my @dead = left_by($gone, start_time($$), 11);
my @live = left_by($$, start_time($$), 12);

my $pid = $w->start_worker;
my $start = start_time($pid);

# the host's side: the rootfs's path and its file system's device
my $rootfs = $w->{rootfs};
my $real = Cwd::realpath($rootfs);
my ($dev, $at) = (undef, '');
for (split /\n/, Airlock::Worker::_slurp('/proc/self/mountinfo') // '') {
    my ($pre, $post) = split / - /;
    my $mp = (split ' ', $pre)[4];
    next unless index("$real/", $mp eq '/' ? '/' : "$mp/") == 0
                && length $mp >= length $at;
    ($at, $dev) = ($mp, (split ' ', $post)[1]);
}

my $r = $w->run_job(job_id => 'sources', script => <<'PY');
import json
res = {"mounts": {}}
with open("/proc/self/mountinfo") as f:
    res["mountinfo"] = f.read()
for line in res["mountinfo"].splitlines():
    pre, post = line.split(" - ")
    res["mounts"][pre.split()[4]] = [pre.split()[3]] + post.split()
with open("/proc/mounts") as f:
    res["proc_mounts"] = f.read()
print(json.dumps(res))
PY
my $p = eval { decode_json($r->{stdout}) } // {};
is($r->{status}, 'ok', 'the probe ran') or diag explain $r;

my $m = $p->{mounts} // {};
is(join(' | ', map { join ' ', @{$m->{$_} // ['?']}[0 .. 2] }
                   qw(/ /app/code /app/data)),
   '/ overlay none | / overlay none | / overlay none',
   'root, code and data are overlays of their own, their root /');
my @host = grep { defined && length } ($work, $rootfs, $real, $t->testdir,
                                       "-$pid-", "-$start-", $dev);
my @shown = grep { my $h = $_; grep { index($p->{$_} // '', $h) >= 0 }
                                    qw(mountinfo proc_mounts) } @host;
is("@shown", '', 'no host path, worker pid or start time, or the '
   . "rootfs's device (@{[$dev // '?']}) is shown")
    or diag $p->{mountinfo};

ok(!-e $dead[1], "a dead worker's code and data: removed");
ok(!-e $dead[0], 'with its job directory');
ok(-d $live[1] && -d $live[0], "a live owner's: kept");
remove_tree(@live);

# code and data live in <workdir>/in/<n> (bound from there where the
# kernel refuses an overlay)
my @in;
$w->add_job(job_id => 'held', script => "import time\ntime.sleep(3)\n");
for (1 .. 400) {
    @in = glob("$work/in/*");
    last if @in;
    sleep 0.025;
}
like("@in", qr{^\Q$work\E/in/\d+$},
     "code and data are in <workdir>/in/<n> (@in)");
$w->wait_result('held', 60);

# a rootfs two overlays deep, where the kernel refuses a third: the
# rootfs is bound as it is, code and data keep their overlays
# (tests/worker/107-deep-rootfs-bwrap.t), and the job runs
$w->kill_worker('TERM', $pid);
my $o = $t->testdir . '/layers';
make_path(map { "$o/$_" } qw(a b e1 e2));
$w->start_worker(rootfs => "$o/b", wrap => ['unshare', '-m',
    '--propagation', 'private', 'sh', '-c',
    "mount -t overlay none $o/a -o ro,lowerdir=$real:$o/e1"
    . " && mount -t overlay none $o/b -o ro,lowerdir=$o/a:$o/e2"
    . ' && exec "$0" "$@"']);
$r = $w->run_job(job_id => 'deep', script => <<'PY');
with open("/proc/self/mountinfo") as f:
    for line in f:
        if line.split()[4] == "/app/code":
            print(line.split()[3])
PY
is($r->{status}, 'ok', 'with no overlay of its own, the job runs')
    or diag explain $r;
is($r->{stdout} // '', "/\n", 'its code still an overlay of its own');
unlike($r->{stdout} // '', qr{/jobs/|aw-}, 'not from the job directory');

is(join(' ', $w->leftovers), '', 'nothing left on the host');
