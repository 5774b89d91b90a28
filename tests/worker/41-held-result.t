#!/usr/bin/perl

# A job whose result Redis will not take yet keeps its entry.  The worker
# holds the result and tries again (37-result-refused.t); meanwhile its
# entry must not go idle, or another worker's XAUTOCLAIM (a command Redis
# runs under maxmemory, where it refuses the SET) takes the job over and,
# once Redis takes writes again, runs it a second time, its POST inputs
# included.  The heartbeat stopped at the end of the sandbox, so a
# refusal longer than visibility_timeout_ms lost the entry.

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

plan tests => 7;

my $dir = $t->testdir;
my %c = (visibility_timeout_ms => 1500);

sub wait_log {
    my ($pid, $re, $secs) = @_;
    my $deadline = time + $secs;
    while (time < $deadline) {
        return 1 if $w->worker_log($pid) =~ $re;
        sleep 0.05;
    }
    return 0;
}

my $a = $w->start_worker(consumer => 'c1', %c, workdir => "$dir/work-a",
                         name => 'a.conf');
$w->redis('CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
$w->add_job(job_id => 'held', script => "import time\ntime.sleep(1)\n"
                                        . "print('held')\n",
    blueprint => { inputs => [ { name => 'note', route => 'annotate',
                                 body => { text => 'open the pr' } } ] });
ok(wait_log($a, qr/job held \(entry/, 60), 'c1 runs the job');
my $b = $w->start_worker(consumer => 'c2', %c, workdir => "$dir/work-b",
                         name => 'b.conf');

# Redis takes no write from now on: c1 cannot store the result
$w->redis('CONFIG', 'SET', 'maxmemory', 1);
ok(wait_log($a, qr/job held: redis refused its result/, 60),
   'c1 holds a result Redis refuses');

# c2 (connected before: a new connection's XGROUP CREATE is refused too)
# looks for idle entries while c1 holds the result, for three times the
# visibility timeout
wait_log($b, qr/claimed entry/, 4.5);
unlike($w->worker_log($b), qr/claimed entry/,
       'c2 took nothing over while c1 held the result');

$w->redis('CONFIG', 'SET', 'maxmemory', 0);
my $r = $w->wait_result('held', 60);
is($r && $r->{stdout}, "held\n", 'the result is stored once Redis takes it');

# a job taken over runs again once c2's own writes are taken
wait_log($b, qr/job held: /, 10);
my @runs = grep { /job held: (?!redis)/ } split /\n/, $w->all_worker_logs;
is(scalar @runs, 1, 'the job ran once') or diag $w->all_worker_logs;
is(scalar(grep { ($_->{method} // '') eq 'POST' } $t->echo_requests(8081)),
   1, 'its POST input reached the upstream once');

$w->kill_worker('TERM', $_) for $a, $b;
unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|no longer pending|Sanitizer|runtime error/m,
       'no alerts, lost entries or sanitizer reports in the log');

1;
