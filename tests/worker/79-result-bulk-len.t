#!/usr/bin/perl

# A result over Redis's proto-max-bulk-len is refused as a value, not
# taken for an outage.  Redis answers a bulk string longer than that
# with "-ERR Protocol error: invalid bulk length" and closes the
# connection while the worker is still writing the value; the worker's
# write failed (ECONNRESET, EPIPE) and it never read the answer, so it
# took the refusal for an outage and sent the same result again, at
# once (the connection came back at the first try), for ever: the job
# never answered, the worker's log flooded, no other job run.  The
# answer Redis sent before it closed is now read, and the refusal
# handled as the one for memory (37-result-refused.t): a small
# result_not_stored error result takes the result's place.  A value
# over client-query-buffer-limit gets no answer: Redis closes the
# connection while it is written, which the worker took for an outage
# the same way; three such closes in a row are now a refusal too.

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

plan tests => 17;

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

# the smallest Redis takes: 1 MiB
is($w->redis('CONFIG', 'SET', 'proto-max-bulk-len', 1 << 20), 'OK',
   'proto-max-bulk-len 1 MiB');

# under the bound: stored whole
my $r = $w->run_job(job_id => 'small', script => "print('x' * 100000)\n",
                    limits => { stdout_bytes => 1 << 20 }, timeout => 60);
ok($r && $r->{status} eq 'ok' && length($r->{stdout}) == 100001,
   'a result under the bound is stored whole') or diag explain $r;

# 1 MiB of control bytes: about 6 MB of JSON ("\u0001" each)
my $t0 = time;
$r = $w->run_job(job_id => 'big', script => <<'PY',
import sys
sys.stdout.buffer.write(b'\x01' * (1 << 20))
sys.stdout.flush()
sys.stderr.write('done')
PY
                 limits => { stdout_bytes => 1 << 20 }, timeout => 30);

ok($r && $r->{status} eq 'error'
   && $r->{error}{code} eq 'result_not_stored',
   'a result over proto-max-bulk-len gives way to a result_not_stored error')
    or diag explain $r;
like($r && $r->{error}{message}, qr/invalid bulk length.*the job ended ok/,
     'its message names the refusal and how the job ended');
ok($r && $r->{exit_code} == 0 && $r->{stdout} eq '' && $r->{stderr} eq ''
   && $r->{stdout_truncated} && $r->{stderr_truncated},
   'its exit code kept, no output, flagged truncated') or diag explain $r;
ok(time - $t0 < 20, 'answered without waiting on an outage');

is(wait_pending(0), 0, 'its entry is acknowledged');
is($w->redis('XLEN', 'airlock:jobs'), 0, 'and deleted from the stream');

# the worker goes on
$r = $w->run_job(job_id => 'after', script => "print('after')\n",
                 timeout => 30);
is($r && $r->{stdout}, "after\n", 'the next job runs') or diag explain $r;

# one refusal, not a loop of reconnects
my $resets = () = $w->worker_log
                  =~ /redis EVAL: (?:Connection reset|Broken pipe)/g;
ok($resets <= 2, "the refused write is not sent again ($resets)")
    or diag $w->worker_log;

# ---- over client-query-buffer-limit: no answer -----------------------------

$w->redis('CONFIG', 'SET', 'proto-max-bulk-len', 512 << 20);
is($w->redis('CONFIG', 'SET', 'client-query-buffer-limit', 1 << 20), 'OK',
   'client-query-buffer-limit 1 MiB');

$t0 = time;
$r = $w->run_job(job_id => 'qbuf', script => <<'PY',
import sys
sys.stdout.buffer.write(b'\x01' * (1 << 20))
sys.stdout.flush()
PY
                 limits => { stdout_bytes => 1 << 20 }, timeout => 30);

ok($r && $r->{status} eq 'error'
   && $r->{error}{code} eq 'result_not_stored',
   'a result over client-query-buffer-limit gives way to a '
   . 'result_not_stored error') or diag explain $r;
like($r && $r->{error}{message},
     qr/closed 3 times while it was sent.*the job ended ok/,
     'its message says the connection was closed on it');
ok($r && $r->{stdout} eq '' && $r->{stdout_truncated},
   'no output, flagged truncated') or diag explain $r;
ok(time - $t0 < 20, 'answered without waiting on an outage');
is(wait_pending(0), 0, 'its entry is acknowledged');

$r = $w->run_job(job_id => 'after-qbuf', script => "print('after')\n",
                 timeout => 30);
is($r && $r->{stdout}, "after\n", 'the next job runs') or diag explain $r;
