#!/usr/bin/perl

# The job stream or its consumer group removed under a connected worker
# (an operator's DEL, XGROUP DESTROY, a FLUSHALL): the worker recreates
# the group (XGROUP CREATE ... MKSTREAM) and goes on reading, so a job
# added afterwards with a bare XADD runs.  Any other error reply (the key
# of another type) is an outage: the worker backs off (100 ms doubling to
# 5 s) instead of spinning and flooding its log.

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
my $pid = $w->start_worker;

plan tests => 9;

sub log_lines { scalar(() = $w->worker_log =~ /\n/g) }

sub cpu_ticks {
    my @f = split ' ', Airlock::Worker::_slurp("/proc/$pid/stat");
    return $f[13] + $f[14];
}

# the stream deleted: the group goes with it
my ($l0, $c0) = (log_lines(), cpu_ticks());
$w->redis('DEL', 'airlock:jobs');
sleep 2;
my ($l1, $c1) = (log_lines(), cpu_ticks());
ok($l1 - $l0 < 10, 'stream deleted: a few log lines, not a flood ('
   . ($l1 - $l0) . ')');
ok($c1 - $c0 < 50, 'and no busy loop (' . ($c1 - $c0) . ' CPU ticks in 2 s)');
# (once it is back from the read it was blocked in: a bounded wait, as a
# loaded machine may take longer than the 2 s above)
my $deadline = time + 30;
sleep 0.05 while $w->worker_log !~ /group airlock-workers recreated/
                 && time < $deadline;
like($w->worker_log, qr/group airlock-workers recreated/,
     'the worker recreates the group');

# XADD alone (no XGROUP CREATE, as a client that only adds jobs)
my $r = $w->run_job(job_id => 'after-del', script => "print('del')",
                    timeout => 30);
is($r && $r->{stdout}, "del\n", 'a job added afterwards runs');

# the group destroyed, the stream kept
$w->redis('XGROUP', 'DESTROY', 'airlock:jobs', 'airlock-workers');
sleep 0.5;
$r = $w->run_job(job_id => 'after-destroy', script => "print('destroy')",
                 timeout => 30);
is($r && $r->{stdout}, "destroy\n", 'group destroyed: a later job runs');

# another error (the key of another type): back off, do not spin
$w->redis('DEL', 'airlock:jobs');
$w->redis('SET', 'airlock:jobs', 'not a stream');
($l0, $c0) = (log_lines(), cpu_ticks());
sleep 2;
($l1, $c1) = (log_lines(), cpu_ticks());
ok($l1 - $l0 < 15, 'WRONGTYPE: backed off (' . ($l1 - $l0)
   . ' log lines in 2 s)');
ok($c1 - $c0 < 50, 'no busy loop (' . ($c1 - $c0) . ' CPU ticks in 2 s)');

# and back once the key is a stream again (within the 5 s backoff)
$w->redis('DEL', 'airlock:jobs');
$r = $w->run_job(job_id => 'after-type', script => "print('type')",
                 timeout => 30);
is($r && $r->{stdout}, "type\n", 'the stream back: jobs run again');

$w->kill_worker('TERM');
unlike($w->all_worker_logs, qr/\b(alert|emerg)\b|Sanitizer|runtime error/,
       'no alerts or sanitizer reports in the log');
