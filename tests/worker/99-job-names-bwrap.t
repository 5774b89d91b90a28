#!/usr/bin/perl

# Under bwrap the sandbox's /proc/self/mountinfo names the source of its
# code and data bind mounts, their directory on the host,
# <workdir>/in/<n> (docs/jobs.md says why it stays shown; it was the
# job's directory, aw-<worker pid>-<its start time>-<n>:
# 101-mount-sources-bwrap.t).  <n> was a count of the sandboxes the
# worker had started, so job after job of one session told how many
# jobs of other sessions the worker ran between them.  Now it is a
# random number: the names of three jobs in a row say nothing of how
# many came before.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Math::BigInt;
use Test::More;
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => 'bwrap');
$w->start_proxy;
$w->start_redis;
$w->start_worker;

plan tests => 4;

my @n;
for my $i (1 .. 3) {
    my $r = $w->run_job(job_id => "name$i", script => <<'PY');
with open("/proc/self/mountinfo") as f:
    for line in f:
        if line.split()[4] == "/app/code":
            print(line.split()[3])
PY
    my ($n) = ($r->{stdout} // '') =~ m{/in/(\d+)/code$}m;
    push @n, $n;
}

is(scalar(grep { defined } @n), 3, "each job's directory is named")
    or diag explain \@n;
my @b = map { Math::BigInt->new($_ // 0) } @n;
ok(!($b[1] == $b[0] + 1 && $b[2] == $b[1] + 1),
   "the names are not a count (@{[map { $_ // 'undef' } @n]})");
is(scalar(keys %{{ map { ($_ // '') => 1 } @n }}), 3, 'nor the same');

is(join(' ', $w->leftovers), '', 'nothing left on the host');
