#!/usr/bin/perl

# Redis holds only what is still to be done: an entry whose result is
# stored is acknowledged and deleted from the job stream (its script, up
# to 64 KiB, would otherwise stay in Redis and its AOF for ever), and the
# dead-letter stream is capped at about dead_letter_maxlen entries.  A
# result stored by a worker that died before acknowledging is found by
# the next delivery, which acknowledges and deletes without running again.

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
$w->start_worker(dead_letter_maxlen => 10);

plan tests => 10;

sub settled {
    my ($key, $want) = @_;
    my $n = -1;
    for (1 .. 200) {
        $n = $w->redis('XLEN', $key);
        last if $n == $want;
        sleep 0.05;
    }
    return $n;
}

sub pending {
    my $p;
    for (1 .. 200) {
        $p = $w->redis('XPENDING', 'airlock:jobs', 'airlock-workers');
        last if $p->[0] == 0;
        sleep 0.05;
    }
    return $p->[0];
}

my $pad = "# " . ("x" x 60000) . "\nprint('ok')\n";
my $r = $w->run_job(job_id => 'real1', script => $pad);
is($r && $r->{stdout}, "ok\n", 'a job with a 60 KB script runs');

# and 100 more that need no sandbox (over a limit: rejected at once)
$w->add_job(job_id => "j$_", script => $pad,
            limits => { memory_mb => 100000 }) for 1 .. 100;
$r = $w->wait_result('j100', 60);
is($r && $r->{error}{code}, 'limit_exceeded', 'the last one answered');
is(pending(), 0, 'all acknowledged');
is(settled('airlock:jobs', 0), 0,
   'and deleted: the job stream is empty once every result is stored');
my $mem = $w->redis('MEMORY', 'USAGE', 'airlock:jobs') // 0;
ok($mem < 100_000, "no script kept in Redis ($mem bytes)");

# a worker died after storing the result, before acknowledging: the
# redelivered entry is acknowledged and deleted, not run again (its
# record too, which the script that stores a result writes with it:
# the entry's id chosen, so it is there before the entry is read)
my %info = @{$w->redis('XINFO', 'STREAM', 'airlock:jobs')};
my ($ms, $seq) = split /-/, $info{'last-generated-id'};
my $entry = "$ms-" . ($seq + 1);
$w->redis('SET', 'result:died1', '{"job_id":"died1","status":"ok"}');
$w->redis('HSET', 'airlock:jobs:errors', "$entry:done", '1');
$w->redis('XADD', 'airlock:jobs', $entry, 'job',
          $w->envelope(job_id => 'died1', script => "print('again')"));
is(settled('airlock:jobs', 0), 0, 'a job with a stored result: deleted');
is($w->redis('GET', 'result:died1'), '{"job_id":"died1","status":"ok"}',
   'the stored result stays the only one');
like($w->worker_log, qr/job died1 already has a result/, 'not run again');

# the dead-letter stream: entries with no job_id, capped
$w->add_raw('hello', 'other') for 1 .. 250;
settled('airlock:jobs', 0);
my $dead = $w->redis('XLEN', 'airlock:jobs:dead');
# MAXLEN ~ trims whole stream nodes (100 entries each)
ok($dead >= 10 && $dead <= 110,
   "the dead-letter stream kept about dead_letter_maxlen ($dead of 250)");

$w->kill_worker('TERM');
unlike($w->all_worker_logs, qr/\b(alert|emerg)\b|Sanitizer|runtime error/,
       'no alerts or sanitizer reports in the log');
