#!/usr/bin/perl

# The launcher's protocol, spoken directly (tests/worker/launcher.py, on
# the running worker's own socket): a right request runs its script;
# limits above worker.conf's maxima or below the floors, a wrong magic,
# a request of the wrong size, the wrong number or kind of descriptors
# are refused, one fixed-layout answer each, with nothing made on the
# host; the launcher goes on serving, and the worker's jobs still run.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'gvisor');
$w->start_proxy;
$w->start_redis;

my @refused = ('wall over', 'cpu over', 'memory over', 'pids over',
               'wall under', 'cpu under', 'memory under', 'pids under',
               'pids negative', 'memory huge', 'bad magic', 'short', 'long',
               'empty',
               'no descriptors', 'four descriptors', 'six descriptors',
               'script is a pipe', 'data is a directory',
               'script too large', 'stdout is a read end',
               'stderr is a file');

plan tests => 2 * @refused + 11;

my %max = (max_wall_ms => 20000, max_cpu_ms => 8000, max_memory_mb => 256,
           max_pids => 64, max_script_bytes => 2000);
my $pid = $w->start_worker(%max);

my $out = `python3 $FindBin::Bin/launcher.py $pid '${\ encode_json(\%max)}'`;
my %r = map { my $c = decode_json($_); ($c->{case} => $c) }
        grep { /^\{/ } split /\n/, $out;

my $g = $r{good} // {};
ok(($g->{result} // -1) == 0 && ($g->{status} // -1) == 0
   && ($g->{seq} // 0) == 11,
   'a right request runs, answered with its seq') or diag explain \%r;
is($g->{stdout}, "probe\n", "the script's stdout on the caller's pipe");

for my $c (@refused) {
    my $x = $r{$c} // {};
    ok(($x->{len} // 0) == 400 && ($x->{result} // -1) == 4,
       "$c: refused") or diag explain $x;
    is($x->{stdout} // '', '', "$c: nothing ran");
}

is($r{'good again'}{result} // -1, 0, 'the launcher still serves after them')
    or diag explain $r{'good again'};
is($r{'good again'}{stdout}, "again\n", 'and runs the next right one');

like($w->worker_log, qr/launcher: request refused: limits out of range/,
     'a refusal is logged');
is(scalar(grep { m{/(jobs|in)/} } $w->leftovers), 0,
   'no job directory left');

my $st = Airlock::Worker::_slurp("/proc/$pid/status") // '';
like($st, qr/^State:\s*[SR]/m, 'the worker is still running');
my $j = $w->run_job(job_id => 'lp1', script => "print('after')\n");
is($j && $j->{status}, 'ok', "the worker's own jobs still run")
    or diag explain $j;
is($j && $j->{stdout}, "after\n", 'with their output');
unlike($w->worker_log, qr/answered out of turn/,
       'the worker saw no answer of ours');
unlike($w->worker_log, qr/Sanitizer|runtime error/,
       'no sanitizer reports in the log');
