#!/usr/bin/perl

# A result key that holds something else than a string (a list, a hash,
# written there by anything but a worker) cannot take a result, and its
# GET fails with WRONGTYPE however often it is tried.  The worker took
# that error for an outage and retried it for ever: the job never ended,
# and every worker that took the entry over was wedged the same way, no
# other job run.  Such a job ends in the dead-letter stream, with the
# reason, and is acknowledged; the worker goes on to the next job.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'gvisor');
$w->start_proxy;
$w->start_redis;

plan tests => 9;

sub wait_log {
    my ($re, $secs) = @_;
    my $deadline = time + $secs;
    while (time < $deadline) {
        return 1 if $w->worker_log =~ $re;
        sleep 0.05;
    }
    return 0;
}

sub dead_for {
    my ($job, $secs) = @_;
    my $deadline = time + $secs;
    while (time < $deadline) {
        for my $e (@{$w->redis('XRANGE', 'airlock:jobs:dead', '-', '+')}) {
            my %f = @{$e->[1]};
            return \%f if ($f{job} // '') =~ /"job_id":"\Q$job\E"/;
        }
        sleep 0.05;
    }
    return undef;
}

# the entries pending, once none is or after 30 s: the worker acknowledges
# an entry after it stores the result, so a result seen does not mean
# its entry is acknowledged yet
sub pending {
    my $n = -1;
    for (1 .. 1200) {
        my $p = $w->redis('XPENDING', 'airlock:jobs', 'airlock-workers');
        $n = ref $p ? $p->[0] : -1;
        return $n if $n == 0;
        sleep 0.025;
    }
    return $n;
}

$w->start_worker;

# a list where the result goes, before the job is taken
$w->redis('RPUSH', 'result:wt1', 'not a result');
$w->add_job(job_id => 'wt1', script => "print('never')");

my $d = dead_for('wt1', 30);
like($d && $d->{error}, qr/result:wt1 holds a list/,
     'a job whose result key is a list is dead-lettered, saying why')
    or diag $w->worker_log;
is($w->redis('TYPE', 'result:wt1'), 'list', 'the key is left as it was');
unlike($w->worker_log, qr/job wt1 \(entry/, 'the job is not run');

my $r = $w->run_job(job_id => 'after1', script => "print('next')",
                    timeout => 60);
is($r && $r->{stdout}, "next\n", 'the worker goes on to the next job');

# a hash written there while the job runs: the SET NX finds a key, whose
# GET fails the same way
$w->add_job(job_id => 'wt2', script => "import time\ntime.sleep(3)\n"
                                       . "print('ran')");
ok(wait_log(qr/job wt2 \(entry/, 60), 'the second job runs');
$w->redis('HSET', 'result:wt2', 'f', 'v');

$d = dead_for('wt2', 60);
like($d && $d->{error}, qr/result:wt2 holds a hash.*ok/,
     'it is dead-lettered with how it ended') or diag $w->worker_log;

$r = $w->run_job(job_id => 'after2', script => "print('next')",
                 timeout => 60);
is($r && $r->{stdout}, "next\n", 'the worker goes on again');
is(pending(), 0, 'no entry left pending');

$w->kill_worker('TERM');
unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');
