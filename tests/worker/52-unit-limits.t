#!/usr/bin/perl

# The worker's unit bounds the worker itself: a MemoryMax= that holds
# what the shipped worker.conf lets it take (16 * fetch_max_bytes *
# (max_inputs + 1) + max_stdout_bytes + max_stderr_bytes + 128M: the
# worker's data.json buffer and the fetch process's, each
# fetch_max_bytes * 6 * max_inputs at most, the input in hand, about 10
# times fetch_max_bytes, the script's output, and the rest, about 35
# MB; or, before, the envelope's tree: 100 * max_envelope_bytes + 128M;
# or, after, the result: 12 * (max_stdout_bytes + max_stderr_bytes)),
# and no more than a small appliance has; a TasksMax=; the kernel's OOM
# killer ends the whole unit, for Restart= to start it again.  The unit
# had none: a runaway worker could take the appliance's memory.  The
# sandboxes' own limits are in their job cgroups, not here.  Read from
# the files, nothing is started.

use strict;
use warnings;

use Cwd ();
use FindBin;
use Test::More;

my $top = Cwd::abs_path("$FindBin::Bin/../..");

sub slurp {
    my ($f) = @_;
    open my $fh, '<', $f or die "$f: $!";
    local $/;
    return scalar <$fh>;
}

sub bytes {
    my ($v) = @_;
    my %m = (K => 1 << 10, M => 1 << 20, G => 1 << 30, T => 1 << 40);
    return undef unless defined $v && $v =~ /^(\d+)([KMGT]?)$/;
    return $1 * ($2 ? $m{$2} : 1);
}

my $unit = slurp("$top/conf/airlock-worker.service");
$unit =~ s/\\\n\s*/ /g;
my %d;
for (split /\n/, $unit) {
    next if /^\s*(#|;|\[|$)/;
    my ($k, $v) = /^\s*([A-Za-z]+)=(.*)$/ or next;
    $d{$k} = $v;
}

my %c;
for (split /\n/, slurp("$top/conf/worker.conf")) {
    s/#.*//;
    my ($k, $v) = /^\s*(\S+)\s+(\S+)/ or next;
    $c{$k} = $v;
}

plan tests => 6;

ok($c{fetch_max_bytes} && $c{max_inputs} && $c{max_envelope_bytes}
   && $c{max_stdout_bytes} && $c{max_stderr_bytes},
   'worker.conf gives fetch_max_bytes, max_inputs, max_envelope_bytes, '
   . 'max_stdout_bytes, max_stderr_bytes');

my $max = bytes($d{MemoryMax});
ok(defined $max, 'the unit has a MemoryMax= in bytes: '
   . ($d{MemoryMax} // 'none'));

# the envelope's tree, about 80 times its text, is freed before the
# fetch; the result, about 8 times stdout and stderr (12 to read a
# stored one back), is built after data.json is freed
my $out = ($c{max_stdout_bytes} // 0) + ($c{max_stderr_bytes} // 0);
my $fetch = 16 * ($c{fetch_max_bytes} // 0) * (($c{max_inputs} // 0) + 1)
            + $out;
my $env = 100 * ($c{max_envelope_bytes} // 0);
my ($need) = sort { $b <=> $a } $fetch, $env, 12 * $out;
$need += 128 << 20;
ok(defined $max && $max >= $need,
   "it holds what worker.conf lets the worker take ($need bytes)");
ok(defined $max && $max <= 2 << 30, 'and is no more than 2G');

ok(($d{TasksMax} // '') =~ /^\d+$/ && $d{TasksMax} >= 64,
   'a TasksMax= of at least 64: ' . ($d{TasksMax} // 'none'));

is($d{OOMPolicy}, 'kill', 'an OOM kill ends the whole unit');
