#!/usr/bin/perl

# What a job's result costs the worker: about 8 times its stdout and
# stderr while the result is built, and the result's text once while it
# is stored and published.  A result with stdout and stderr of
# max_stdout_bytes and max_stderr_bytes of control bytes is 6 times as
# large escaped; the worker held it with jansson's output buffer and its
# copy (json_dumps()), then with hiredis's command and output buffer,
# three copies: about 19 times stdout and stderr, 600 MB at the largest
# maxima (16 MiB), over the unit's MemoryMax=, where the OOM killer
# ended the worker at every delivery of the job.  The peak is read from
# the worker's VmHWM, after a small job and after one that writes 1 MiB
# of control bytes to each.

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

plan tests => 6;

# an ASan build keeps what is freed in quarantine, which the peak would
# count
if ((Airlock::Test::_config_mk($t->{build}, 'SAN') // '') eq '1') {
    $ENV{ASAN_OPTIONS} = join ':', grep { defined }
        $ENV{ASAN_OPTIONS} // 'detect_leaks=0', 'quarantine_size_mb=0';
}

my $pid = $w->start_worker;

sub hwm_kb {
    my $s = Airlock::Worker::_slurp("/proc/$pid/status") // '';
    return $s =~ /^VmHWM:\s+(\d+) kB/m ? $1 : -1;
}

my $r = $w->run_job(job_id => 'small', script => "print('small')");
is($r && $r->{stdout}, "small\n", 'a small job runs');
my $base = hwm_kb();

my $mib = 1 << 20;
$r = $w->run_job(job_id => 'big',
    script => "import sys\n"
              . "sys.stdout.write('\\x01' * $mib)\n"
              . "sys.stderr.write('\\x02' * $mib)\n",
    limits => { stdout_bytes => $mib, stderr_bytes => $mib });
is($r && $r->{status}, 'ok', 'a job with 1 MiB of control bytes on each');
is($r && length $r->{stdout}, $mib, 'its stdout whole');
is($r && length $r->{stderr}, $mib, 'and its stderr');

my $peak = hwm_kb();
my $grew = int(($peak - $base) / 1024);

# 2 MiB out, 12 MiB escaped: 8 times 2 MiB while built, and some slack
ok($base > 0 && $peak > 0 && $grew < 24,
   "the worker's peak grew by under 12 times stdout and stderr "
   . "(by $grew MB, from $base kB)");

$w->kill_worker('TERM');
unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');
