#!/usr/bin/perl

# A job whose result was stored is never run again, even once the
# result has expired.  A worker that stores a result and dies before the
# acknowledgement leaves its entry pending; the next delivery found the
# result and finished the entry, but only while result:<job_id> was
# there: delivered after result_ttl (the worker down that long, a power
# loss), it found nothing and ran the job a second time, its requests
# through the proxy included, and stored a second result; an entry also
# deleted from the stream got an entry_deleted result after the job's
# own.  The result is now stored with a record of the entry's, in
# errors_key, that lives until the entry is acknowledged.  Here Redis
# refuses XACK (an ACL) while the worker finishes a job, the worker is
# killed, the result made to expire, and a worker started again.

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

plan tests => 13;

sub wait_log {
    my ($pid, $re) = @_;
    for (1 .. 1200) {
        return 1 if $w->worker_log($pid) =~ $re;
        sleep 0.025;
    }
    return 0;
}

sub pending_for {
    my ($consumer) = @_;
    my $n = -1;
    for (1 .. 400) {
        my $p = $w->redis('XPENDING', 'airlock:jobs', 'airlock-workers',
                          '-', '+', '10', $consumer);
        $n = ref $p ? scalar @$p : -1;
        last if $n == 0;
        sleep 0.025;
    }
    return $n;
}

# made to expire as result_ttl would, not deleted
sub expire {
    my ($key) = @_;
    $w->redis('PEXPIRE', $key, '1');
    for (1 .. 400) {
        return 1 if $w->redis('EXISTS', $key) == 0;
        sleep 0.025;
    }
    return 0;
}

$w->acl_deny('airlock-worker', 'xack');

# a job done, its result stored, the worker killed before XACK
my %id;
for my $c ('c1', 'c2') {
    my $job = $c eq 'c1' ? 'exp1' : 'exp2';
    my $pid = $w->start_worker(consumer => $c);
    $id{$job} = $w->add_job(job_id => $job, script => "print('$job')");
    my $r = $w->wait_result($job, 60);
    is($r && $r->{stdout}, "$job\n", "$job ran once");
    ok(wait_log($pid, qr/XACK\/XDEL \S+: /),
       "$job: its acknowledgement is refused");
    $w->kill_worker('KILL', $pid);
}

$w->acl_restore('airlock-worker');
ok(expire('result:exp1') && expire('result:exp2'), 'both results expired');
$w->redis('XDEL', 'airlock:jobs', $id{exp2});

# the entry of exp1, as it was; the one of exp2, deleted from the stream
my $pid = $w->start_worker(consumer => 'c1');
is(pending_for('c1'), 0, 'exp1: the entry is acknowledged');
$w->kill_worker('TERM', $pid);
my $log = $w->worker_log($pid);
$pid = $w->start_worker(consumer => 'c2');
is(pending_for('c2'), 0, 'exp2: the deleted entry is acknowledged');
$w->kill_worker('TERM', $pid);
$log .= $w->worker_log($pid);
unlike($log, qr/job exp1 \(entry \S+, delivery/, 'exp1 is not run again');
is($w->redis('GET', 'result:exp1'), undef, 'and has no second result');
is($w->redis('GET', 'result:exp2'), undef,
   'exp2 gets no entry_deleted result after its own');
like($log, qr/job exp1 \(entry \S+\) was done: its result has expired/,
     'the worker says why');
is($w->redis('HLEN', 'airlock:jobs:errors'), 0,
   'the records of both entries are removed');

unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');

1;
