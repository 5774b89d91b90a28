#!/usr/bin/perl

# An entry a worker has taken stays its own for as long as the worker
# is on it, not only while its job runs.  Under a long refusal of writes
# (maxmemory with noeviction: Redis still runs XAUTOCLAIM and the
# heartbeat's XCLAIM, not SET, HSET or XADD) a worker may wait on Redis
# before its job runs (the HSET of its delivery record) or with no job
# to run (an entry for the dead-letter stream, a rejected envelope).
# Without a heartbeat there, another worker took the entry over after
# visibility_timeout_ms and, once Redis took writes again, ran the job a
# second time (its POST input too), or dead-lettered it a second time.

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

plan tests => 11;

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

# the logs of this phase's workers
my @p;

sub logs { join '', map { $w->worker_log($_) } @p }

sub wait_any_log {
    my ($re, $secs) = @_;
    my $deadline = time + $secs;
    while (time < $deadline) {
        return 1 if logs() =~ $re;
        sleep 0.05;
    }
    return 0;
}

# The entry is taken by a consumer that dies ("ghost"), delivered
# $times times in all; two workers start and Redis then refuses writes.
# Its idle time is reset just before, so that neither worker takes it
# before the refusal starts.
sub phase {
    my ($name, $raw, $times) = @_;

    my $id = $w->add_raw($raw);
    $w->redis('XREADGROUP', 'GROUP', 'airlock-workers', 'ghost',
              'COUNT', '1', 'STREAMS', 'airlock:jobs', '>');
    for (2 .. $times) {
        $w->redis('XCLAIM', 'airlock:jobs', 'airlock-workers', 'ghost', '0',
                  $id);
    }

    my @p = map { $w->start_worker(consumer => "$name-$_", %c,
                                   workdir => "$dir/work-$name-$_",
                                   name => "$name-$_.conf") } 1, 2;
    $w->redis('XCLAIM', 'airlock:jobs', 'airlock-workers', 'ghost', '0',
              $id, 'JUSTID');
    $w->redis('CONFIG', 'SET', 'maxmemory', 1);
    return @p;
}

$w->redis('XGROUP', 'CREATE', 'airlock:jobs', 'airlock-workers', '0',
          'MKSTREAM');
$w->redis('CONFIG', 'SET', 'maxmemory-policy', 'noeviction');

# a job that waits on its delivery record (HSET) before it runs

@p = phase('run', $w->envelope(job_id => 'twice',
    script => "print('ran')",
    blueprint => { inputs => [ { name => 'note', route => 'annotate',
                                 body => { text => 'open the pr' } } ] }), 1);

ok(wait_any_log(qr/claimed entry/, 30), 'a worker takes the entry');
# (its claim on its job_id, the first write, is: 112-duplicate-job.t)
ok(wait_any_log(qr/redis (?:HSET|EVAL): OOM/, 30),
   'its delivery record is refused');

# the other looks for idle entries for three times the visibility timeout
wait_any_log(qr/claimed entry(?s:.*)claimed entry/, 4.5);
$w->redis('CONFIG', 'SET', 'maxmemory', 0);

my $r = $w->wait_result('twice', 60);
is($r && $r->{stdout}, "ran\n", 'the job runs once Redis takes writes');
wait_any_log(qr/job twice: (?!redis).*(?s:.*)job twice: (?!redis)/, 10);
my @runs = grep { /job twice: (?!redis)/ } split /\n/, logs();
is(scalar @runs, 1, 'the job ran once') or diag $w->all_worker_logs;
is(scalar(grep { ($_->{method} // '') eq 'POST' } $t->echo_requests(8081)),
   1, 'its POST input reached the upstream once');

$w->kill_worker('TERM', $_) for @p;

# an entry for the dead-letter stream: delivered 3 times, the maximum

@p = phase('dead', $w->envelope(job_id => 'dead1', script => "print(1)"), 3);

ok(wait_any_log(qr/redis (?:XADD|EVAL): OOM/, 30),
   'a worker waits to dead-letter the entry');
wait_any_log(qr/claimed entry(?s:.*)claimed entry/, 4.5);
$w->redis('CONFIG', 'SET', 'maxmemory', 0);

$r = $w->wait_result('dead1', 60);
is($r && $r->{error}{code}, 'dead_letter', 'the job is dead-lettered');
wait_any_log(qr/to airlock:jobs:dead(?s:.*)to airlock:jobs:dead/, 5);
my $dead = $w->redis('XRANGE', 'airlock:jobs:dead', '-', '+');
is(scalar @$dead, 1, 'once') or diag explain $dead, logs();

$w->kill_worker('TERM', $_) for @p;

# an entry deleted from the stream while pending for the worker's own
# consumer name, whose dead-letter entry Redis refuses for a while (the
# dead-letter key of another type): the other worker's XAUTOCLAIM found
# it deleted and recorded it too.  It stays pending (no heartbeat claims
# a deleted entry: 55-gone-refused.t), so the other worker takes it over
# past the visibility timeout, and the two record it once.

my $gone = $w->add_job(job_id => 'gone1', script => "print(1)");
$w->redis('XREADGROUP', 'GROUP', 'airlock-workers', 'gone-1',
          'COUNT', '1', 'STREAMS', 'airlock:jobs', '>');
$w->redis('XDEL', 'airlock:jobs', $gone);
$w->redis('DEL', 'airlock:jobs:dead');
$w->redis('SET', 'airlock:jobs:dead', 'not a stream');

@p = ($w->start_worker(consumer => 'gone-1', %c,
                       workdir => "$dir/work-gone-1", name => 'gone-1.conf'));
ok(wait_log($p[0], qr/redis (?:XADD|EVAL): WRONGTYPE/, 30),
   'the worker waits to record the deleted entry');

push @p, $w->start_worker(consumer => 'gone-2', %c,
                          workdir => "$dir/work-gone-2",
                          name => 'gone-2.conf');
wait_log($p[1], qr/redis (?:XADD|EVAL): WRONGTYPE/, 4.5);
$w->redis('DEL', 'airlock:jobs:dead');

wait_any_log(qr/\Q$gone\E to airlock:jobs:dead/, 30);
wait_any_log(qr/\Q$gone\E to airlock:jobs:dead(?s:.*)\Q$gone\E to airlock/,
             5);
$dead = $w->redis('XRANGE', 'airlock:jobs:dead', '-', '+');
is(scalar @$dead, 1, 'the deleted entry is recorded once')
    or diag explain $dead, logs();

$w->kill_worker('TERM', $_) for @p;
unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|no longer pending|Sanitizer|runtime error/m,
       'no alerts, lost entries or sanitizer reports in the log');
