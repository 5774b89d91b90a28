#!/usr/bin/perl

# An entry deleted from the job stream (XDEL, XTRIM) while it is pending
# for a consumer that died: its job is lost, job_id and all, but not
# without a trace.  Found in the worker's own pending list (a nil entry)
# or dropped by XAUTOCLAIM (Redis 7 removes such entries from the pending
# list and lists them apart, where the worker never looked: the job
# vanished), it goes to the dead-letter stream saying it was deleted,
# with the record of the delivery that started, which leaves errors_key.

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

sub take {
    my ($consumer) = @_;
    my $got = $w->redis('XREADGROUP', 'GROUP', 'airlock-workers', $consumer,
                        'COUNT', '1', 'STREAMS', 'airlock:jobs', '>');
    my $id = $got->[0][1][0][0];
    # the delivery had started when its worker died
    $w->redis('HSET', 'airlock:jobs:errors', $id, "delivery 1 to consumer "
              . "$consumer started and did not finish");
    return $id;
}

$w->redis('XGROUP', 'CREATE', 'airlock:jobs', 'airlock-workers', '0',
          'MKSTREAM');

# one pending for c1 (the worker's own name), one for another consumer,
# both deleted from the stream before the worker starts
$w->add_job(job_id => 'own1', script => "print('never')");
my $own = take('c1');
$w->add_job(job_id => 'other1', script => "print('never')");
my $other = take('c9');
$w->redis('XDEL', 'airlock:jobs', $own, $other);
$w->add_job(job_id => 'after1', script => "print('after')");

$w->start_worker(visibility_timeout_ms => 300);

my $r = $w->wait_result('after1', 60);
is($r && $r->{stdout}, "after\n", 'the next job runs');

my %dead;
for (1 .. 200) {
    %dead = map { my %f = @{$_->[1]}; ($f{entry} => \%f) }
            @{$w->redis('XRANGE', 'airlock:jobs:dead', '-', '+')};
    last if keys %dead >= 2;
    sleep 0.05;
}
ok($dead{$own}, 'the own pending entry is in the dead-letter stream');
like($dead{$own} && $dead{$own}{error},
     qr/deleted from the stream .*; last: delivery 1 to consumer c1/,
     'saying it was deleted, and which delivery started');
ok($dead{$other}, 'the entry XAUTOCLAIM dropped is in the dead-letter '
   . 'stream');
like($dead{$other} && $dead{$other}{error},
     qr/deleted from the stream .*; last: delivery 1 to consumer c9/,
     'saying it was deleted, and which delivery started');
is($w->redis('HLEN', 'airlock:jobs:errors'), 0,
   'no delivery record left in errors_key');
is($w->pending_after, 0, 'nothing pending');

$w->kill_worker('TERM');
unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');

1;
