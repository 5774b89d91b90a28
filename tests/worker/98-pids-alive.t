#!/usr/bin/perl

# gVisor: a job whose cgroup hit its pids.max but whose sandbox lived on
# is reported by the script's own exit code, as under bwrap
# (tests/worker/96-pids-exit.t).  A sentry that cannot start a thread
# exits with Go's status 2, and `runsc run`, its wait cut, logs that it
# waits on the sandbox process instead, then that process's status as
# the script's; the worker reported killed/pids whenever the limit had
# been hit under gVisor, so a script that exited 2 (or any code) by
# itself after a refused fork was killed/pids too.  Now it takes runsc's
# line as the evidence that the sandbox died (96's fork bomb is still
# killed/pids).  Here the limit is hit from outside while the sandbox is
# frozen (the v1 freezer cgroup runsc makes for the job): a process of
# the test's joins the job's pids cgroup, lowers pids.max to what is
# there, has a fork refused, and puts the limit back; then the sandbox
# is thawed and the script, told so by a file in its data directory,
# exits 2.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use POSIX qw(_exit);
use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::Worker;
use Airlock::Prereq qw(absent);

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => 'gvisor');

absent('needs the cgroup v1 pids and freezer hierarchies')
    unless -d '/sys/fs/cgroup/pids' && -d '/sys/fs/cgroup/freezer';

$w->start_proxy;
$w->start_redis;
$w->start_worker;

plan tests => 5;

sub slurp {
    my ($f) = @_;
    open(my $fh, '<', $f) or return undef;
    local $/;
    return scalar <$fh>;
}

sub put {
    my ($f, $v) = @_;
    open(my $fh, '>', $f) or return 0;
    my $ok = print $fh $v;
    return close($fh) && $ok;
}

# the first of glob($pat) for which $cond holds, polled for at most 30 s
sub wait_for {
    my ($pat, $cond) = @_;
    my $deadline = time + 30;
    while (time < $deadline) {
        for my $p (glob $pat) {
            return $p if $cond->($p);
        }
        sleep 0.02;
    }
    return undef;
}

# the wall time counts the frozen time too, and freezing a sandbox of
# gVisor's threads, on a loaded machine, can take seconds: a minute
$w->add_job(job_id => 'alive', limits => { pids => 16, wall_ms => 60000 },
            script => <<'PY');
import os, sys, time
for _ in range(1100):
    if os.path.exists("/app/data/go"):
        break
    time.sleep(0.05)
else:
    print("never told")
print("going", flush=True)
sys.exit(2)
PY

my $root = "airlock-test-$$";
my $frz = wait_for("/sys/fs/cgroup/freezer/$root/aw-*",
                   sub { (slurp("$_[0]/cgroup.procs") // '') =~ /\d/ });
my $pids = $frz && "/sys/fs/cgroup/pids/$root/" . (split m{/}, $frz)[-1];
my $data = $frz && "$t->{testdir}/work/in/"
                   . ((split m{/}, $frz)[-1] =~ s/.*-//r) . '/data';

# a v1 freezer cgroup can stay FREEZING when a task escaped the first
# pass (a thread the sandbox was making): writing FROZEN again makes the
# kernel try again, so it is written on every poll until it holds
my $frozen = $frz && put("$frz/freezer.state", 'FROZEN')
             && wait_for($frz, sub {
                    my $s = slurp("$_[0]/freezer.state") // '';
                    return 1 if $s =~ /^FROZEN/;
                    put("$_[0]/freezer.state", 'FROZEN');
                    return 0;
                });

# a fork refused by the job's pids.max, from a process of the test's in
# the job's pids cgroup (and in no freezer cgroup of the job's)
my $refused = 0;
if ($frozen && -d $pids) {
    my $old = slurp("$pids/pids.max");
    my $kid = fork();
    if (defined $kid && $kid == 0) {
        my $rc = 3;
        if (put("$pids/cgroup.procs", $$)) {
            my $cur = slurp("$pids/pids.current") // '';
            chomp $cur;
            if (put("$pids/pids.max", $cur)) {
                my $g = fork();
                if (!defined $g) {
                    $rc = 0;
                } elsif ($g == 0) {
                    _exit(0);
                } else {
                    waitpid($g, 0);
                    $rc = 1;
                }
                put("$pids/pids.max", $old);
            }
        }
        _exit($rc);
    }
    waitpid($kid, 0) if defined $kid;
    $refused = defined $kid && $? == 0;
    put("$pids/pids.max", $old) if defined $old;
}
my $events = $pids ? slurp("$pids/pids.events") // '' : '';
chomp $events;
$events =~ s/\n/, /g;
ok($refused && $events =~ /^max [1-9]/m,
   "a fork refused by the job's pids.max ($events)")
    or diag explain { frozen => $frozen, pids => $pids };

put("$frz/freezer.state", 'THAWED') if $frz;
ok($data && put("$data/go", "1"), 'the script is told to go on');

my $r = $w->wait_result('alive');
is($r && $r->{stdout}, "going\n", 'the sandbox lived on') or diag explain $r;
is($r && "$r->{status}/$r->{error}{code}/" . ($r->{exit_code} // 'null'),
   'error/exit/2', 'its own exit 2 is reported as the script\'s')
    or diag explain $r;

is(join(' ', $w->leftovers), '', 'nothing left on the host');
