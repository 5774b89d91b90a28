#!/usr/bin/perl

# A bwrap sandbox's /proc/cpuinfo was the host's: beside what the CPUs
# are (vendor, family, model, flags, caches, topology), which a script
# may size itself by and gVisor shows too, their microcode revision and
# the kernel's list of their known bugs (how far the host is patched,
# against what), and each CPU's clock, live ("cpu MHz", which moves with
# the host's load).  Now it is a file the worker writes at each job's
# start from the host's, with only the fields of an allow list
# (aw_cpuinfo_keys in worker/aw_sandbox.c), a CPU for each of the
# host's; os.cpu_count() still counts them.  gVisor's is its sentry's,
# with no microcode, bugs or live clock.

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

plan tests => 7;

my %kept = map { $_ => 1 } ('processor', 'vendor_id', 'cpu family',
    'model', 'model name', 'stepping', 'cache size', 'physical id',
    'siblings', 'core id', 'cpu cores', 'apicid', 'initial apicid', 'fpu',
    'fpu_exception', 'cpuid level', 'wp', 'flags', 'bogomips', 'TLB size',
    'clflush size', 'cache_alignment', 'address sizes',
    'power management');

sub fields {
    my ($text) = @_;
    my %f;
    for (split /\n/, $text // '') {
        $f{$1}++ if /^([^\t:]+)[\t ]*:/;
    }
    return \%f;
}

my $host = do {
    open(my $fh, '<', '/proc/cpuinfo') or die "/proc/cpuinfo: $!";
    local $/;
    <$fh>;
};
my $hf = fields($host);
my @hidden = sort grep { !$kept{$_} } keys %$hf;
ok(@hidden, "the host's cpuinfo has fields to hide: @hidden");

my $r = $w->run_job(job_id => 'cpuinfo', script => <<'PY');
import json, os
with open("/proc/cpuinfo") as f:
    text = f.read()
print(json.dumps({"cpuinfo": text, "cpus": os.cpu_count()}))
PY
my $p = eval { decode_json($r->{stdout}) } // {};
is($r->{status}, 'ok', 'the probe ran') or diag explain $r;

my $sf = fields($p->{cpuinfo});
is(join(' ', sort grep { $sf->{$_} } @hidden), '',
   'none of them is shown') or diag $p->{cpuinfo};
is(join(' ', sort grep { !$kept{$_} } keys %$sf), '',
   'only the allowed fields are');
is($sf->{processor} // 0, $hf->{processor},
   "a CPU for each of the host's ($hf->{processor})");
is($p->{cpus}, $hf->{processor}, 'os.cpu_count() counts them');

is(join(' ', $w->leftovers), '', 'nothing left on the host');
