#!/usr/bin/perl

# A bwrap sandbox's /proc/stat is the host's: beside the CPU lines the
# C library counts CPUs by (there is no /sys inside), it carries the
# host's forks since boot (processes), context switches, its interrupts
# counted line by line (intr: what /proc/interrupts, covered, says
# without the names), softirqs, boot time and running and blocked
# processes, all live: read twice, a script sees how busy the host and
# the other jobs are, how many processes they fork, how much network and
# disk traffic the host takes.  gVisor's /proc/stat is its sentry's.
# Now the sandbox's /proc/stat is a file the worker writes at the job's
# start: one line a CPU, as the host has them, with no time counted.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => 'bwrap');
$w->start_proxy;
$w->start_redis;
$w->start_worker;

plan tests => 6;

my $r = $w->run_job(job_id => 'stat', script => <<'PY');
import json, os, subprocess, time

def rd():
    with open("/proc/stat") as f:
        return f.read()

a = rd()
for i in range(20):
    subprocess.run(["/usr/bin/python3", "-c", "pass"])
time.sleep(0.5)
b = rd()
print(json.dumps({"a": a, "b": b, "cpus": os.cpu_count(),
                  "onln": os.sysconf("SC_NPROCESSORS_ONLN")}))
PY
my $p = eval { decode_json($r->{stdout}) } // {};
is($r->{status}, 'ok', 'the /proc/stat probe ran') or diag explain $r;

my @names = map { (split ' ', $_)[0] } split /\n/, $p->{a} // '';
is(join(' ', grep { !/^(cpu\d*|btime)$/ } @names), '',
   'no line but the CPUs\' and btime (no processes, ctxt, intr)')
    or diag $p->{a};

open(my $fh, '<', '/proc/stat') or die "/proc/stat: $!";
my @lines = <$fh>;
close $fh;
my @host = grep { /^cpu\d*$/ } map { (split ' ', $_)[0] } @lines;
my ($btime) = grep { /^btime / } @lines;
like($p->{a} // '', qr/^\Q$btime\E/m,
     "the host's boot time, which psutil's boot_time() reads");
is(join(' ', grep { /^cpu/ } @names), join(' ', @host),
   "a line for each of the host's CPUs");
is($p->{a}, $p->{b}, 'nothing in it moves while the host works');
ok($p->{cpus} && $p->{cpus} == @host - 1 && $p->{onln} == $p->{cpus},
   'os.cpu_count() and sysconf(NPROCESSORS_ONLN) count them')
    or diag explain [$p->{cpus}, $p->{onln}, scalar @host];
