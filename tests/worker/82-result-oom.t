#!/usr/bin/perl

# A result the worker runs out of memory building still answers its
# job: a small result_not_stored error with the job's ids, how the job
# ended and its exit code.  aw_result_json() gave NULL, and the worker
# stored {"status":"error"} in its place: no job_id, no session_id, no
# error, nothing a client could tie to its job or act on; and a piece
# jansson could not allocate (stdout, say) was left out of a result
# stored as if whole, status ok.  A result is now built whole or not at
# all, and the stand-in is written into a buffer of the worker's stack,
# with no allocation, so it is there however short of memory the worker
# is.  The faults are made by tests/worker/lib/jansson-fault.c (with
# LD_PRELOAD), in the worker's own process only: first every allocation
# jansson makes fails, from the moment the job has started until its
# result is stored; then only those of 256 KiB or more, which a stdout
# of 300 000 bytes needs.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'gvisor');
my $env = $w->jansson_fault;

$w->start_proxy;
$w->start_redis;
my $pid = $w->start_worker(env => $env);

plan tests => 21;

sub wait_for {
    my ($cond, $n) = @_;
    for (1 .. $n // 2400) {
        return 1 if $cond->();
        sleep 0.025;
    }
    return 0;
}

# the job sleeps long enough for the fault to be on before it ends (a
# slow test that misses it fails 'jansson allocations failed')
$w->add_job(job_id => 'oom-1', session_id => 'sess-oom',
            limits => { wall_ms => 60000 },
            script => "import sys, time\ntime.sleep(6)\nprint('out')\n"
                      . "sys.stderr.write('err')\nsys.exit(3)\n");

ok(wait_for(sub { $w->worker_log($pid) =~ /job oom-1 \(entry .*input/ }),
   'the job started');
$w->jansson_fault_on($pid);

my $raw;
wait_for(sub { defined($raw = $w->redis('GET', 'result:oom-1')) });
$w->jansson_fault_off;

ok($w->jansson_faults > 0, 'jansson allocations failed ('
   . $w->jansson_faults . ')')
    or diag($w->worker_log($pid));

note("stored: " . ($raw // '(none)'));
my $r = defined $raw ? eval { decode_json($raw) } : undef;
ok(ref $r eq 'HASH', 'a result is stored, as JSON') or diag($raw);
$r //= {};

is($r->{job_id}, 'oom-1', 'it has the job_id');
is($r->{session_id}, 'sess-oom', 'and the session_id');
is($r->{status}, 'error', 'status error');
is($r->{error} && $r->{error}{code}, 'result_not_stored',
   'error result_not_stored');
like($r->{error} && $r->{error}{message} // '',
     qr/out of memory.*the job ended error \(exit\)/,
     'the message says out of memory, and how the job ended')
    or diag($raw);
is($r->{exit_code}, 3, 'the exit code is kept');
ok(exists $r->{stdout} && $r->{stdout} eq ''
   && exists $r->{stderr} && $r->{stderr} eq '',
   'stdout and stderr are there, empty');
ok($r->{stdout_truncated} && $r->{stderr_truncated},
   'both flagged truncated (there was output)');
ok(ref $r->{timing_ms} eq 'HASH' && defined $r->{timing_ms}{total}
   && defined $r->{backend}, 'timing_ms and backend are there');

# the entry is done: acknowledged and deleted
ok(wait_for(sub {
       my $p = $w->redis('XPENDING', 'airlock:jobs', 'airlock-workers');
       ref $p && $p->[0] == 0 && $w->redis('XLEN', 'airlock:jobs') == 0
   }), 'the entry is acknowledged and deleted');

# memory back: the next job has its whole result
my $n = $w->run_job(job_id => 'oom-2', script => "print('fine')",
                    timeout => 60);
is($n && $n->{stdout}, "fine\n", 'the next job has its whole result');

# one piece (stdout) that cannot be allocated: no result stored without it
$w->jansson_fault_on($pid, 256 << 10);
$n = $w->run_job(job_id => 'oom-3', limits => { stdout_bytes => 400000 },
                 script => "import sys\nsys.stdout.write('y' * 300000)\n",
                 timeout => 60);
$w->jansson_fault_off;
ok($w->jansson_faults > 0, 'a large jansson allocation failed ('
   . $w->jansson_faults . ')');
$n //= {};
is($n->{job_id}, 'oom-3', 'that result has its job_id');
ok(exists $n->{stdout}, 'and a stdout: it was not left out')
    or diag(explain($n));
is($n->{error} && $n->{error}{code}, 'result_not_stored',
   'it is the result_not_stored stand-in');
ok($n->{stdout_truncated}, 'which says there was output');

like($w->worker_log($pid), qr/alert: job oom-1: .*out of memory/,
     'the worker says so in its log');
unlike($w->worker_log($pid), qr/AddressSanitizer|runtime error/,
       'no sanitizer report');
