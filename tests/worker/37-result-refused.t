#!/usr/bin/perl

# A result Redis refuses to store.  With maxmemory and noeviction, a SET
# whose value does not fit is answered "-OOM ..."; the worker retried
# that same SET for ever, so a result too big for the memory left was
# never stored (the client waited for ever) and the worker took no other
# job.  Now the refusal is neither success nor the end: a small error
# result saying the result could not be stored takes its place, and
# when Redis refuses even that, the job stays pending, its result held,
# until Redis takes it.

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
$w->start_worker;

plan tests => 14;

my $r;

sub pending {
    my $p = $w->redis('XPENDING', 'airlock:jobs', 'airlock-workers');
    return ref $p ? $p->[0] : -1;
}

sub wait_pending {
    my ($want) = @_;
    my $n;
    for (1 .. 200) {
        $n = pending();
        last if $n == $want;
        sleep 0.05;
    }
    return $n;
}

sub used_memory {
    my ($used) = $w->redis('INFO', 'memory') =~ /^used_memory:(\d+)/m;
    return $used;
}

# ---- a result too big for the memory left ----------------------------------

# room for the job and the worker's bookkeeping (its scripts, which
# Redis keeps compiled: about 25 KB each), not for 800 KB of stdout
$w->redis('CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
$w->redis('CONFIG', 'SET', 'maxmemory', used_memory() + 400_000);

$w->add_job(job_id => 'big', limits => { stdout_bytes => 1 << 20 },
            script => "import sys\nsys.stdout.write('y' * 800000)\n"
                    . "sys.exit(3)\n");
$r = $w->wait_result('big', 30);
ok($r, 'a result is stored for the job whose result did not fit')
    or diag $w->worker_log;
is($r && $r->{status}, 'error', 'status error');
is($r && $r->{error}{code}, 'result_not_stored', 'code result_not_stored');
my $ended = 'the job ended error (exit): the script exited with code 3';
like($r && $r->{error}{message},
     qr/^the result \(\d{6,} bytes\) could not be stored: OOM .*; \Q$ended\E$/,
     'the message says why, and how the job ended')
    or diag explain $r;
is($r && $r->{exit_code}, 3, 'the exit code kept');
ok($r && $r->{stdout} eq '' && $r->{stdout_truncated},
   'stdout dropped, and flagged');
is($r && $r->{session_id}, 'sess-1', 'session_id kept');
is(wait_pending(0), 0, 'the entry acknowledged');
like($w->worker_log, qr/error: job big: redis refused its result .*OOM/,
     'the refusal logged');

# the worker is free for the next job
$r = $w->run_job(job_id => 'next', script => 'print("next")', timeout => 30);
is($r && $r->{stdout}, "next\n", 'the next job runs and is answered');

# ---- Redis refuses every write: the job stays pending ----------------------

$w->add_job(job_id => 'held', script => "import time\ntime.sleep(2)\n"
                                      . "print('held')\n");
for (1 .. 400) {
    last if $w->worker_log =~ /job held \(entry/;
    sleep 0.025;
}
$w->redis('CONFIG', 'SET', 'maxmemory', 1);
sleep 4;
ok(!defined $w->redis('GET', 'result:held'),
   'Redis full: no result stored, empty or not');
is(pending(), 1, 'the entry stays pending');
$w->redis('CONFIG', 'SET', 'maxmemory', 0);
$r = $w->wait_result('held', 30);
is($r && $r->{stdout}, "held\n",
   'once Redis takes it again, the whole result is stored');

$w->kill_worker('TERM');
unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');

1;
