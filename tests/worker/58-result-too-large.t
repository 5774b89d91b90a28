#!/usr/bin/perl

# A result key holding a value too large to read is published as it
# is, by Redis, and the job's entry is done.  The worker read a stored
# result whole (GET) before it ran a job, to publish it again instead,
# and hiredis buffers a reply of any size: a result:<job_id> of 512 MB
# (no worker's result: written by something else) got the worker
# killed at every delivery of the job, before any dead-letter stream,
# the queue wedged.  It now reads at most 8 times max_stdout_bytes and
# max_stderr_bytes and 1 MiB of it, and past that has Redis publish it
# (one script).  Here the worker runs in a memory cgroup of 64 MiB and
# the value is 40 MB.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use POSIX ();
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'gvisor');

my ($cg, $wrap) = $w->memory_cgroup('result', 64 << 20);

$w->start_proxy;
$w->start_redis;

plan tests => 6;

my %c = (wrap => $wrap);

# the job's result, or 'dead' when the worker is gone (reaped here)
sub result_or_dead {
    my ($pid, $job) = @_;
    for (1 .. 1200) {
        my $r = eval { $w->result($job) };
        return $r if $r;
        if (waitpid($pid, POSIX::WNOHANG()) == $pid) {
            $t->{daemons} = [ grep { $_ != $pid } @{$t->{daemons}} ];
            return 'dead';
        }
        sleep 0.025;
    }
    return undef;
}

my $big = 'x' x (40 << 20);
$w->redis('SET', 'result:big', $big);

my $pid = $w->start_worker(%c);
$w->add_job(job_id => 'big', script => "print('never')");
$w->add_job(job_id => 'after', script => "print('after')");
my $r = result_or_dead($pid, 'after');
is(ref $r ? $r->{stdout} : $r, "after\n",
   'the worker lives on and runs the job after it');
# the result is stored before the entry is acknowledged
my $pending;
for (1 .. 400) {
    $pending = $w->redis('XPENDING', 'airlock:jobs', 'airlock-workers')->[0];
    last if !ref $r || $pending == 0;
    sleep 0.025;
}
is($pending, 0, 'nothing pending');
is($w->redis('STRLEN', 'result:big'), length $big,
   'the value stored is left as it is');
like($w->worker_log($pid), qr/job big: result:big is over \d+ bytes/,
     'the worker says so');
unlike($w->worker_log($pid), qr/job big \(entry/, 'and did not run the job');

$w->kill_worker('TERM', $pid) if ref $r;
unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');
rmdir $cg;
