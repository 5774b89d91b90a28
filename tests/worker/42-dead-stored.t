#!/usr/bin/perl

# The dead-letter stream holds jobs that never got a result.  An entry
# delivered more than max_deliveries times whose result is stored all the
# same (its worker stored it and died, or lost Redis, before the
# acknowledgement) is finished like any job with a stored result: the
# stored result published, the entry acknowledged and deleted, and
# nothing added to the dead-letter stream, which said of such a job that
# it was "delivered 2 times without a result".

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

sub pending {
    my $n = -1;
    for (1 .. 400) {
        my $p = $w->redis('XPENDING', 'airlock:jobs', 'airlock-workers');
        $n = ref $p ? $p->[0] : -1;
        last if $n == 0;
        sleep 0.05;
    }
    return $n;
}

# a consumer that takes both entries and dies: their first delivery
my $stored = '{"job_id":"stored1","session_id":"sess-1","status":"ok"}';
$w->redis('XGROUP', 'CREATE', 'airlock:jobs', 'airlock-workers', '0',
          'MKSTREAM');
$w->redis('SET', 'result:stored1', $stored);
my $entry = $w->add_job(job_id => 'stored1', script => "print('again')");
# and its record, which the script that stores a result writes with it
$w->redis('HSET', 'airlock:jobs:errors', "$entry:done", '1');
$w->add_job(job_id => 'lost1', script => "print('again')");
my $got = $w->redis('XREADGROUP', 'GROUP', 'airlock-workers', 'ghost',
                    'COUNT', '2', 'STREAMS', 'airlock:jobs', '>');
is(scalar @{$got->[0][1] // []}, 2, 'the ghost consumer took both entries');

# the worker takes them over: their second delivery, one past the maximum
$w->start_worker(max_deliveries => 1, visibility_timeout_ms => 300);

my $r = $w->wait_result('lost1', 60);
is($r && $r->{error}{code}, 'dead_letter',
   'the job with no result is dead-lettered');
is(pending(), 0, 'both entries acknowledged');
is($w->redis('GET', 'result:stored1'), $stored,
   'the stored result stays the only one');

my $dead = $w->redis('XRANGE', 'airlock:jobs:dead', '-', '+');
my @jobs = map { my %f = @{$_->[1]}; ($f{job} =~ /"job_id":"([^"]+)"/)[0] }
           @$dead;
is(join(',', @jobs), 'lost1',
   'only the job without a result is in the dead-letter stream');
like($w->worker_log, qr/job stored1 already has a result\n/,
     'the stored result is published');
unlike($w->worker_log, qr/job stored1 \(entry/, 'and the job not run');

$w->kill_worker('TERM');
unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');

1;
