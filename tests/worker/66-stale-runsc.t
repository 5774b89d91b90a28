#!/usr/bin/perl

# What a dead worker's gVisor sandbox left in runsc's state directory
# (<workdir>/runsc) is removed by the next worker to start, and nothing
# else: no process is killed for it but those still in the job's cgroups.
# The state file names the sandbox's and the gofer's pids; `runsc delete
# -force` on it sends SIGKILL to whatever process holds those pids now,
# and a worker that starts after a crash (or after a reboot: the workdir
# is kept) finds them dead and their pids free to be reused: the
# worker, root, killed an unrelated process.  A state file whose job
# directory was gone was never removed at all.  A worker whose job's
# keeper dies removes the state that leaves the same way.

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
my $w = Airlock::Worker->new($t, backend => 'gvisor');
$w->start_proxy;
$w->start_redis;

plan tests => 14;

my $state = $t->testdir . '/work/runsc';

# field 22 of /proc/<pid>/stat, after "(comm)"
sub start_time {
    my ($pid) = @_;
    my $stat = Airlock::Worker::_slurp("/proc/$pid/stat") // return undef;
    $stat =~ s/^.*\) //s;
    return (split ' ', $stat)[19];
}

sub bystander {
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open STDOUT, '>', '/dev/null';
        open STDERR, '>', '/dev/null';
        exec 'sleep', '300';
        exit 127;
    }
    return $pid;
}

sub alive {
    my ($pid) = @_;
    return waitpid($pid, WNOHANG) == 0;
}

# the worker's launcher (aw_priv.c): its child that stays root
sub launcher_of {
    my ($pid) = @_;
    for my $st (glob '/proc/[0-9]*/status') {
        my $s = Airlock::Worker::_slurp($st) // next;
        return ($st =~ m{/proc/(\d+)/})[0]
            if $s =~ /^PPid:\s+$pid$/m && $s =~ /^Name:\s+airlock-worker$/m;
    }
    return undef;
}

# a worker killed while its job sleeps, with its launcher (as the OOM
# killer ends the whole unit; the launcher alone would tear the job
# down): its sandbox dies with them, its directory and runsc's state stay
my $a = $w->start_worker;
$w->add_job(job_id => 'sleeper',
            script => "import time\nprint('up', flush=True)\n"
                    . "time.sleep(6)\n");
my @files;
for (1 .. 400) {
    @files = glob("$state/aw-$a-*.state");
    last if @files && $w->job_procs($a) >= 2;
    sleep 0.05;
}
ok(scalar @files, 'the running job has runsc state');
my $l = launcher_of($a);
kill 'KILL', $l if $l;
$w->kill_worker('KILL', $a);
for (1 .. 200) {
    last unless $w->job_procs($a);
    sleep 0.05;
}
is(scalar($w->job_procs($a)), 0, 'its sandbox died with the worker');

# the sandbox's and the gofer's pids now belong to other processes
my ($sandbox, $gofer) = (bystander(), bystander());
my $text = Airlock::Worker::_slurp($files[0]) // '';
my $n = ($text =~ s/"goferPid":\d+/"goferPid":$gofer/g)
      + ($text =~ s/("sandbox":\{"id":"[^"]*","pid":)\d+/$1$sandbox/g);
is($n, 2, 'state file names the gofer and the sandbox by pid');
$t->write_file("work/runsc/" . ($files[0] =~ s{.*/}{}r), $text);

# the state of another dead slot of the same worker, whose directory is
# gone, and one of a live worker's (a live process's pid and start time
# stand for one), which must stay
(my $slot = $files[0]) =~ s{.*/(aw-\d+-\d+-)\d+_sandbox:.*}{${1}9};
$t->write_file("work/runsc/${slot}_sandbox:$slot.state",
               $text =~ s/aw-$a-\d+-\d+/$slot/gr);
$t->write_file("work/runsc/${slot}_sandbox:$slot.lock", '');
my $live = "aw-$sandbox-" . start_time($sandbox) . '-1';
$t->write_file("work/runsc/${live}_sandbox:$live.state", '{}');

$w->start_worker;
my $r = $w->wait_result('sleeper', 120);

ok(alive($sandbox), 'the process given the sandbox\'s pid is alive');
ok(alive($gofer), 'the process given the gofer\'s pid is alive');
is(join(' ', map { s{.*/}{}r } glob("$state/aw-$a-*")), '',
   "nothing of the dead worker's left in runsc's state directory");
ok(-e "$state/${live}_sandbox:$live.state",
   "a live worker's state is kept");
like($w->worker_log, qr/removing runsc state of ${slot}, left by worker $a/,
     'the removal is logged');
is($r && $r->{status}, 'ok', 'the job ran again on its next delivery');

# the keeper killed under a running worker: `runsc run` and its sandbox
# die with it (parent-death signals), and the worker, which finds
# runsc's state left, removes it the same way
my $b = $w->{last_worker};
$w->add_job(job_id => 'orphaned',
            script => "import time\nprint('up', flush=True)\n"
                    . "time.sleep(30)\n");
my $keeper;
for (1 .. 400) {
    for my $proc ($w->job_procs($b)) {
        my $cmd = Airlock::Worker::_slurp("$proc/cmdline") // '';
        next unless $cmd =~ /^runsc\0.*\0run\0/s;
        my $stat = Airlock::Worker::_slurp("$proc/stat") // '';
        ($keeper) = $stat =~ /\) \S+ (\d+)/;
    }
    last if $keeper && glob("$state/aw-$b-*.state");
    sleep 0.05;
}
ok($keeper && kill('KILL', $keeper), "the job's keeper killed");
$r = $w->wait_result('orphaned', 60);
ok($r && $r->{status} eq 'error' && $r->{error}{code} eq 'internal',
   'the job ends in an error') or diag explain $r;
is(join(' ', map { s{.*/}{}r } glob("$state/aw-$b-*")), '',
   "runsc's state of the job is gone");
is(join(' ', $w->leftovers), "$state/${live}_sandbox:$live.state",
   'nothing else left on the host');
for (1 .. 200) {
    last unless $w->job_procs($b);
    sleep 0.05;
}
is(join(' ', $w->job_procs($b)), '', 'no process of the sandbox left');

unlink "$state/${live}_sandbox:$live.state";
kill 'KILL', $sandbox, $gofer;
waitpid($_, 0) for $sandbox, $gofer;
