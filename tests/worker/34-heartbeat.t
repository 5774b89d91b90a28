#!/usr/bin/perl

# A live job keeps its entry: while the job runs (fetch and sandbox) the
# worker refreshes the entry's idle time every third of
# visibility_timeout_ms (XCLAIM ... 0 <id> JUSTID), so another worker's
# XAUTOCLAIM takes only entries whose worker stopped refreshing them,
# however long the job.  Taken over, a live job would run twice, its POST
# inputs included.

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
# wide enough that a heartbeat late by two seconds on a loaded machine
# does not lose the entry
my %c = (visibility_timeout_ms => 3000);

# a job of 8 s, more than twice the visibility timeout, in worker c1
my $a = $w->start_worker(consumer => 'c1', %c, workdir => "$dir/work-a",
                         name => 'a.conf');
$w->add_job(job_id => 'long1', script => "import time\ntime.sleep(8)\n"
                                         . "print('done')\n",
    blueprint => { inputs => [ { name => 'note', route => 'annotate',
                                 body => { text => 'open the pr' } } ] });
for (1 .. 400) {
    last if $w->worker_log($a) =~ /job long1 \(entry/;
    sleep 0.025;
}

# worker c2 looks for idle entries all the while
my $b = $w->start_worker(consumer => 'c2', %c, workdir => "$dir/work-b",
                         name => 'b.conf');
my $r = $w->wait_result('long1', 60);
is($r && $r->{stdout}, "done\n", 'long1: one result');
sleep 5;        # a takeover would be claimed within this
my @runs = grep { /job long1: / } split /\n/, $w->all_worker_logs;
is(scalar @runs, 1, 'long1 ran once');
unlike($w->worker_log($b), qr/claimed entry/, 'c2 took nothing over');
is(scalar(grep { ($_->{method} // '') eq 'POST' } $t->echo_requests(8081)),
   1, 'its POST input reached the upstream once');
my $p = $w->redis('XPENDING', 'airlock:jobs', 'airlock-workers');
is($p->[0], 0, 'acknowledged');

# a worker that dies stops refreshing: its entry is taken over as before
$w->add_job(job_id => 'dead1', script => "import time\ntime.sleep(2)\n"
                                         . "print('dead1')\n");
for (1 .. 400) {
    last if $w->all_worker_logs =~ /job dead1 \(entry/;
    sleep 0.025;
}
my ($runner) = grep { $w->worker_log($_) =~ /job dead1 \(entry/ } $a, $b;
$w->kill_worker('KILL', $runner);
$r = $w->wait_result('dead1', 60);
is($r && $r->{stdout}, "dead1\n",
   'a killed worker\'s job is taken over and answered');

$w->kill_worker('TERM', $_) for grep { $_ != $runner } $a, $b;
unlike($w->all_worker_logs, qr/\b(alert|emerg)\b|Sanitizer|runtime error/,
       'no alerts or sanitizer reports in the log');
