#!/usr/bin/perl

# The worker started as another user than root (docs/jobs.md, "Running
# the worker"): with no root to drop it stays that user, the worker's
# user, and runs bwrap jobs given what they need, a workdir of its own
# and cgroups under cgroup_root it may create (here: each v1
# controller's directory cgroup_name, delegated).  Its launcher is that
# user too, its fetches are its own children (no spawner: no root to
# drop groups with), and its jobs run as its own uid on the host.
# What a job leaves is removed as under root: the job's directory (the
# script and data.json, in 0555 directories, which the launcher's
# CAP_DAC_OVERRIDE used to empty as they are) and its cgroups.  gVisor
# needs root (runsc makes the sandbox's namespaces and cgroups): the
# worker refuses it at start, and -t says so, rather than fail every job
# as the script's exit code 128.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use POSIX qw(WNOHANG);
use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => 'bwrap');

Airlock::Prereq::absent('setpriv not installed') unless -x '/usr/bin/setpriv';
# cgroup v2 moves a process only with write access to the common
# ancestor's cgroup.procs, which a test cannot delegate below root's
Airlock::Prereq::absent('cgroup v1 needed to delegate the job cgroups')
    unless -d '/sys/fs/cgroup/memory' && -d '/sys/fs/cgroup/pids';

$w->start_proxy;
$w->start_redis;

plan tests => 24;

my $dir = $t->testdir;
my $uid = getpwnam('airlock-worker');
my $gid = (getpwnam('airlock-worker'))[3];
my $name = "airlock-test-$$";

# what the operator gives the worker's user: its password file, its
# workdir and its cgroups
chown $uid, $gid, $t->redis_pass('airlock-worker')
    or die "chown: $!";
mkdir "$dir/work" or die "mkdir: $!";
chown $uid, $gid, "$dir/work" or die "chown: $!";

my @cg = map { "/sys/fs/cgroup/$_/$name" }
         grep { -d "/sys/fs/cgroup/$_" } qw(memory pids cpu cpuacct);
for my $d (@cg) {
    mkdir $d or die "$d: $!";
    system('chown', '-R', "$uid:$gid", $d) == 0 or die "chown -R $d";
}

END {
    rmdir $_ for grep { -d } @cg;
}

my @as = ('/usr/bin/setpriv', "--reuid=$uid", "--regid=$gid",
          '--clear-groups', '--');

sub status_of {
    my ($pid) = @_;
    my %s;
    for (split /\n/, Airlock::Worker::_slurp("/proc/$pid/status") // '') {
        $s{$1} = $2 if /^(\w+):\s*(.*)$/;
    }
    return \%s;
}

sub children {
    my ($pid) = @_;
    return map { [ $_, status_of($_) ] }
           grep { (status_of($_)->{PPid} // 0) == $pid }
           map { m{/proc/(\d+)} ? $1 : () } glob('/proc/[0-9]*');
}

sub jobs_left {
    return (grep({ m{/aw-} } glob("$dir/work/jobs/*")),
            glob("$dir/work/in/*"));
}

sub cgroups_left {
    return grep { -d } map { glob("$_/*") } @cg;
}

my $pid = $w->start_worker(wrap => \@as);
my $log = $w->worker_log($pid);

like($log, qr/this worker runs as uid $uid gid $gid/,
     'started as airlock-worker, it stays airlock-worker');
is(scalar(grep { $_ == $uid } split /\s+/, status_of($pid)->{Uid} // ''), 4,
   'its uids are airlock-worker\'s');
like($log, qr/jobs run as host uid $uid \(the worker's own/,
     'it says its jobs run as its own uid on the host');

my @kids = children($pid);
my ($launcher) = grep { $_->[1]{Name} eq 'airlock-worker' } @kids;
ok($launcher && (split /\s+/, $launcher->[1]{Uid})[0] == $uid,
   'its launcher is airlock-worker too');
ok(!grep({ $_->[1]{Name} eq 'aw-fetchd' } @kids), 'with no fetch spawner');

# ---- jobs run --------------------------------------------------------------

my $r = $w->run_job(job_id => 'nr1',
    script => "import json, os\n"
              . "d = json.load(open('/app/data/data.json'))\n"
              . "print(os.getuid(), d['logs']['status'])\n",
    blueprint => { inputs => [ { name => 'logs', route => 'logs',
                                 params => { service => 'api' } } ] });
is($r && $r->{status}, 'ok', 'a job with an input runs') or diag explain $r;
is($r && $r->{stdout}, "10001 200\n",
   'as uid 10001 inside, its input fetched as the worker client');

# its root, code and data are overlays of its own too, made in its user
# namespace (tests/worker/101-mount-sources-bwrap.t)
$r = $w->run_job(job_id => 'nr-mounts', script => <<'PY');
with open("/proc/self/mountinfo") as f:
    for line in f:
        pre, post = line.split(" - ")
        if pre.split()[4] in ("/", "/app/code", "/app/data"):
            print(pre.split()[4], pre.split()[3], post.split()[0])
PY
is($r && $r->{stdout}, "/ / overlay\n/app/code / overlay\n"
                       . "/app/data / overlay\n",
   'its root, code and data are overlays, naming no host path')
    or diag explain $r;

$r = $w->run_job(job_id => 'nr2', script => "import sys\nsys.exit(3)\n");
is($r && $r->{exit_code}, 3, 'a script\'s exit code is its own')
    or diag explain $r;

$r = $w->run_job(job_id => 'nr3', limits => { wall_ms => 1000 },
                 script => "import time\ntime.sleep(30)\n");
is($r && $r->{status}, 'timeout', 'a job past its wall time is ended')
    or diag explain $r;

# ---- and leave nothing -----------------------------------------------------

my @left;
for (1 .. 200) {
    @left = jobs_left();
    last unless @left;
    sleep 0.025;
}
is("@left", '', 'no job directory left (script, data.json)');
my @cgl = cgroups_left();
is("@cgl", '', 'no job cgroup left');
unlike($w->worker_log($pid), qr/cannot remove/, 'nothing it could not remove');
is(scalar($w->job_procs($pid)), 0, 'no sandbox process left');

# ---- stopped, and started again --------------------------------------------

$w->kill_worker('TERM', $pid);
ok(!-e "/proc/$pid", 'SIGTERM stops it');
like($w->worker_log($pid), qr/stopping$/m, 'through its main loop');

$pid = $w->start_worker(wrap => \@as);
$r = $w->run_job(job_id => 'nr4', script => "print('again')\n");
is($r && $r->{stdout}, "again\n", 'started again, it runs jobs')
    or diag explain $r;
$w->kill_worker('TERM', $pid);

# ---- gVisor: refused, by the worker and by -t ------------------------------

my $gv = $w->write_conf(name => 'gvisor.conf', backend => 'gvisor');
my $g = $w->start_worker(name => 'gvisor.conf', backend => 'gvisor',
                         wrap => \@as);
my $st;
for (1 .. 400) {
    $st = $?, last if waitpid($g, WNOHANG) == $g;
    sleep 0.025;
}
$t->{daemons} = [ grep { $_ != $g } @{$t->{daemons}} ];
ok(defined $st && ($st >> 8) == 1, 'backend gvisor as airlock-worker: '
   . 'the worker exits 1') or diag('wait status ' . ($st // 'none'));
like($w->worker_log($g), qr/emerg: sandbox: backend gvisor needs root/,
     'and says gvisor needs root');

my $out = `@as $w->{worker} -c $gv -t 2>&1`;
ok(($? >> 8) == 1 && $out =~ /backend gvisor needs root/,
   '-t as airlock-worker says so too') or diag($out);

# ---- another user than root or airlock-worker: refused --------------------

my $nobody = getpwnam('nobody') // 65534;
# past the password file (its owner's alone)
chown $nobody, $gid, $t->redis_pass('airlock-worker');
my $o = $w->start_worker(wrap => [ '/usr/bin/setpriv', "--reuid=$nobody",
                                   "--regid=$gid", '--clear-groups', '--' ]);
undef $st;
for (1 .. 400) {
    $st = $?, last if waitpid($o, WNOHANG) == $o;
    sleep 0.025;
}
$t->{daemons} = [ grep { $_ != $o } @{$t->{daemons}} ];
ok(defined $st && ($st >> 8) == 1, "started as uid $nobody: the worker "
   . 'exits 1') or diag('wait status ' . ($st // 'none'));
my $why = "emerg: started as uid $nobody, neither root nor user "
          . "airlock-worker (uid $uid): its fetches would reach the proxy "
          . "as uid $nobody";
like($w->worker_log($o), qr/\Q$why\E/,
     'and says its fetches would not be the worker client\'s');
my $cmd = "/usr/bin/setpriv --reuid=$nobody --regid=$gid --clear-groups -- "
          . "$w->{worker} -c $dir/worker.conf -t 2>&1";
$out = `$cmd`;
ok(($? >> 8) == 1 && $out =~ /\Q$why\E/, '-t as it says so too')
    or diag($out);

unlike($w->all_worker_logs, qr/Sanitizer|runtime error/,
       'no sanitizer reports in the logs');
