#!/usr/bin/perl

# bwrap jobs under the shipped unit's /proc.  airlock-worker.service has
# ProtectKernelTunables= and ProtectKernelLogs=: systemd mounts over
# parts of the unit's /proc (/proc/sys read-only, /proc/kmsg made
# inaccessible, and more).  The kernel mounts no new proc in a user
# namespace (bwrap's --proc) while every proc it could show is partly
# covered, so with `backend bwrap` every job failed at once: "bwrap:
# Can't mount proc on /newroot/proc: Operation not permitted".  Now the
# runtime's child mounts a fresh proc of its own, in a mount namespace of
# its own, before it becomes bwrap.  This test runs itself, the worker
# with it, in a mount namespace covered as the unit's is (the covers
# that matter: a read-only /proc/sys and a file on /proc/kmsg), runs
# jobs, and checks that the worker's own /proc stays covered and that
# the sandbox's /proc/sys is read-only.  gVisor mounts no host proc.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Airlock::Prereq qw(absent need_cmd);

BEGIN {
    if (!$ENV{AIRLOCK_TEST_COVERED_PROC}) {
        require Test::More;
        absent('needs root to cover /proc') if $> != 0;
        need_cmd('unshare');
        $ENV{AIRLOCK_TEST_COVERED_PROC} = 1;
        exec('unshare', '-m', '--propagation', 'private', 'sh', '-c',
             'mount --bind /proc/sys /proc/sys'
             . ' && mount -o remount,bind,ro /proc/sys'
             . ' && mount --bind /dev/null /proc/kmsg'
             . ' && exec "$0" "$@"', $^X, $0, @ARGV);
        die "exec unshare: $!\n";
    }
}

use JSON::PP;
use Test::More;
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => 'bwrap');

# the cover is there: what the unit's namespace has
open(my $mi, '<', '/proc/self/mountinfo') or die "mountinfo: $!\n";
my $covered = grep { m{ /proc/sys .*\bro\b} } <$mi>;
close $mi;
absent('could not cover /proc/sys') unless $covered;

$w->start_proxy;
$w->start_redis;
my $pid = $w->start_worker;

plan tests => 7;

my $r = $w->run_job(job_id => 'covered-1', timeout => 60,
                    script => "print('hello from bwrap')\n");
is($r && $r->{status}, 'ok', 'a job runs under a covered /proc')
    or diag(explain($r), $w->worker_log($pid));
is($r && $r->{stdout}, "hello from bwrap\n", 'and prints');
unlike($r && $r->{stderr} // '', qr/Can't mount proc/,
       'bwrap mounted its proc');

$r = $w->run_job(job_id => 'covered-2', timeout => 60, script => <<'PY');
import json, os
res = {}
res["pid"] = os.getpid()
res["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
try:
    with open("/proc/sys/kernel/hostname", "w") as f:
        f.write("x")
    res["sys"] = "written"
except OSError as e:
    res["sys"] = e.strerror
with open("/proc/self/status") as f:
    res["uid"] = [l.split()[1] for l in f if l.startswith("Uid:")][0]
print(json.dumps(res))
PY
my $o = eval { decode_json($r->{stdout} // '') } // {};
ok($o->{pids} && @{$o->{pids}} <= 2,
   'the sandbox sees its own pids alone')
    or diag(explain($o));
isnt($o->{sys} // 'written', 'written', '/proc/sys is not written inside')
    or diag(explain($o));
is($o->{uid}, '10001', 'as uid 10001');

# the worker's own /proc stays as the unit made it
open($mi, '<', "/proc/$pid/mountinfo") or die "mountinfo of $pid: $!\n";
my @lines = <$mi>;
close $mi;
ok((grep { m{ /proc/sys .*\bro\b} } @lines),
   'the worker\'s own /proc/sys is still covered read-only')
    or diag(@lines);
