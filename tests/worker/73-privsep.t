#!/usr/bin/perl

# airlock-worker's privilege separation: the process that talks to Redis,
# parses the envelopes and reads the sandboxes' output runs as the
# worker's user with no capability; only its child, the launcher, stays
# root.  Either ends with the other: the launcher killed, the worker
# stops through its main loop (it says so, and that its job is left
# pending) and exits 1, its job pending (run once on the next start);
# the worker killed, the launcher ends the job it runs and exits.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use POSIX qw(WNOHANG);
use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'gvisor');
$w->start_proxy;
$w->start_redis;

plan tests => 27;

my $uid = getpwnam('airlock-worker');

sub status_of {
    my ($pid) = @_;
    my %s;
    for (split /\n/, Airlock::Worker::_slurp("/proc/$pid/status") // '') {
        $s{$1} = $2 if /^(\w+):\s*(.*)$/;
    }
    return \%s;
}

# the worker's children that are airlock-worker too: its launcher
sub launchers {
    my ($pid) = @_;
    return grep {
        my $st = status_of($_);
        ($st->{PPid} // 0) == $pid && ($st->{Name} // '') eq 'airlock-worker'
    } map { m{/proc/(\d+)} ? $1 : () } glob('/proc/[0-9]*');
}

sub wait_running {
    my ($pid) = @_;
    for (1 .. 800) {
        return 1 if grep { /aw-$pid-/ } glob($t->testdir . '/work/jobs/*')
                    and $w->worker_log($pid) =~ /input\(s\)/;
        sleep 0.025;
    }
    return 0;
}

sub wait_exit {
    my ($pid) = @_;
    for (1 .. 400) {
        return $? if waitpid($pid, WNOHANG) == $pid;
        sleep 0.025;
    }
    return undef;
}

sub gone {
    my ($pid) = @_;
    for (1 .. 400) {
        return 1 unless -e "/proc/$pid";
        sleep 0.025;
    }
    return 0;
}

my $pid = $w->start_worker;
my $r = $w->run_job(job_id => 'ps1', script => "print('hello')\n");
is($r && $r->{status}, 'ok', 'a job runs') or diag explain $r;

# ---- the worker: the worker's user, nothing more ---------------------------

my $st = status_of($pid);
my @uids = split /\s+/, $st->{Uid} // '';
my @gids = split /\s+/, $st->{Gid} // '';
is(scalar(grep { $_ == $uid } @uids), 4,
   "the worker's real, effective, saved and fs uids are airlock-worker's "
   . "($st->{Uid})");
ok(@gids == 4 && !grep({ $_ == 0 } @gids), "no root gid ($st->{Gid})");
ok(!grep({ $_ eq '0' } split / /, $st->{Groups} // ''),
   'no root supplementary group');
like($st->{CapEff} // '', qr/^0+$/, 'no effective capability');
like($st->{CapPrm} // '', qr/^0+$/, 'no permitted capability');
like($st->{CapAmb} // '', qr/^0+$/, 'no ambient capability');
is($st->{NoNewPrivs}, 1, 'no new privileges');

# ---- the launcher: root, the worker's child --------------------------------

my @l = launchers($pid);
is(scalar @l, 1, 'one launcher, a child of the worker');
my $lst = status_of($l[0] // 0);
like($lst->{Uid} // '', qr/^0\s+0\s+0\s+0$/, 'the launcher is root');
unlike($lst->{CapEff} // '0', qr/^0+$/, 'with capabilities');
like($w->worker_log, qr/launcher \Q$l[0]\E runs the sandboxes; this worker/,
     'the split is logged');

# ---- the launcher killed: the worker exits 1, its job stays pending -------

$w->add_job(job_id => 'ps2', script => "import time\ntime.sleep(6)\n",
            limits => { wall_ms => 20000, cpu_ms => 5000 });
ok(wait_running($pid), 'a long job runs');
kill 'KILL', $l[0] if @l;
my $ws = wait_exit($pid);
ok(defined $ws && ($ws >> 8) == 1,
   'the launcher killed: the worker exits 1') or diag("wait status "
   . ($ws // 'none'));
$t->{daemons} = [ grep { $_ != $pid } @{$t->{daemons}} ];
like($w->worker_log($pid), qr/the launcher is gone/, 'and says why');
like($w->worker_log($pid),
     qr/job ps2 \(entry [^)]+\): no result, left pending for its next/,
     'and that the job is left pending');
like($w->worker_log($pid), qr/stopping \(exit 1\): the launcher/,
     'it stops through its main loop');
my $p = $w->redis('XPENDING', 'airlock:jobs', 'airlock-workers');
is(ref $p ? $p->[0] : -1, 1, 'the job is still pending');
ok(!defined $w->result('ps2'), 'with no result');

# ---- the worker killed: the launcher ends its job and exits ---------------

# the same consumer: its pending job first, which runs again here
$pid = $w->start_worker;
ok(wait_running($pid), 'the pending job runs again on the next start');
@l = launchers($pid);
kill 'KILL', $pid;
ok(defined wait_exit($pid), 'the worker killed');
$t->{daemons} = [ grep { $_ != $pid } @{$t->{daemons}} ];
ok(@l && gone($l[0]), 'its launcher exits');
my @left;
for (1 .. 200) {
    @left = $w->job_procs($pid);
    last unless @left;
    sleep 0.05;
}
is(scalar @left, 0, "the job's sandbox is gone with it");

# ---- a worker started again cleans up and runs the job once ----------------

$pid = $w->start_worker;
$r = $w->wait_result('ps2', 120);
# the job sleeps 6 s under a wall time of 20 s: ok when it finishes
is($r && $r->{status}, 'ok', 'the job finishes on the third start')
    or diag explain $r;

# ---- the launcher killed while the worker waits for entries ---------------

@l = launchers($pid);
kill 'KILL', $l[0] if @l;
$ws = wait_exit($pid);
ok(@l && defined $ws && ($ws >> 8) == 1,
   'the launcher killed between jobs: the worker exits 1 too');
$t->{daemons} = [ grep { $_ != $pid } @{$t->{daemons}} ];
like($w->worker_log($pid), qr/stopping \(exit 1\): the launcher/,
     'through its main loop too');

unlike($w->all_worker_logs, qr/Sanitizer|runtime error/,
       'no sanitizer reports in the logs');
