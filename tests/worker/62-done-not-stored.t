#!/usr/bin/perl

# The record that a job's result was stored ("<entry id>:done" in
# errors_key, 36677bd) is written only when the result was.  The script
# that stores the result (SET NX) wrote it also when the SET stored
# nothing: result:<job_id> held a value of another type (a list), which
# the worker then sends to the dead-letter stream.  A worker killed
# after that script and before the dead-letter entry was written (Redis
# refusing it for a while: here an ACL that denies XADD) left the entry
# pending with the record; once the key was put right, the next
# delivery found no result, took the record for a result that had
# expired and acknowledged the entry: the job was nowhere, no result,
# no dead-letter entry, the client never answered.  It is now run again.

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

plan tests => 8;

sub wait_log {
    my ($pid, $re) = @_;
    for (1 .. 1200) {
        return 1 if $w->worker_log($pid) =~ $re;
        sleep 0.025;
    }
    return 0;
}

sub pending {
    my $p = $w->redis('XPENDING', 'airlock:jobs', 'airlock-workers',
                      '-', '+', '10');
    return ref $p ? scalar @$p : -1;
}

# result:nd1 made a list while the job runs (found so before, the job
# is not run): no result can be stored; the dead-letter stream refuses
# the entry for now (XADD denied once the job is queued).  The job
# sleeps a second: the time for the test to see it started.
$w->add_job(job_id => 'nd1',
            script => "import time\ntime.sleep(1)\nprint('nd1')");
$w->acl_deny('airlock-worker', 'xadd');

my $pid = $w->start_worker(consumer => 'c1');
ok(wait_log($pid, qr/job nd1 \(entry \S+, delivery 1\)/), 'the job runs');
$w->redis('RPUSH', 'result:nd1', 'not a result');
ok(wait_log($pid, qr/redis EVAL: .*can't run this command/),
   'the job ran; its result cannot be stored, its dead-letter entry is '
   . 'refused') or diag($w->worker_log($pid));
$w->kill_worker('KILL', $pid);
is(pending(), 1, 'the entry is pending, the worker killed');

# the key put right, Redis takes writes again
$w->acl_restore('airlock-worker');
$w->redis('DEL', 'result:nd1');

$pid = $w->start_worker(consumer => 'c1');
my $r = $w->wait_result('nd1', 30);
is($r && $r->{stdout}, "nd1\n", 'the job is run again and answered');
unlike($w->worker_log($pid), qr/job nd1 \(entry \S+\) was done/,
       'it is not taken for a job whose result expired');
for (1 .. 400) {
    last if pending() == 0;
    sleep 0.025;
}
is(pending(), 0, 'the entry is acknowledged');
$w->kill_worker('TERM', $pid);
is($w->redis('HLEN', 'airlock:jobs:errors'), 0, 'its records are removed');

unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');

1;
