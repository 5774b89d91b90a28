#!/usr/bin/perl

# Under bwrap the sandbox's /proc/self/mountinfo named the source of its
# code and data bind mounts, their directory on the host, whose last
# part <n> was a count of the sandboxes the worker had started: job
# after job of one session told how many jobs of other sessions the
# worker ran between them.  <n> became a random number; the directory
# is now <workdir>/in/<n>, and the sandbox's code and data are overlays
# that name no host path at all (101-mount-sources-bwrap.t), but where
# the kernel refuses an overlay it is bound as it is, and shown.  Here
# the names of three jobs in a row, read on the host while each runs,
# say nothing of how many came before.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Math::BigInt;
use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => 'bwrap');
$w->start_proxy;
$w->start_redis;
$w->start_worker;

plan tests => 5;

my $in = $t->testdir . '/work/in';
my (@n, @ok);
for my $i (1 .. 3) {
    # the job lasts 3 s, a directory seen at once
    $w->add_job(job_id => "name$i", script => "import time\ntime.sleep(3)\n");
    my $n;
    for (1 .. 400) {
        ($n) = map { m{/(\d+)$} ? $1 : () } glob("$in/*");
        last if defined $n;
        sleep 0.025;
    }
    push @n, $n;
    my $r = $w->wait_result("name$i", 60);
    push @ok, $r && $r->{status};
}

is("@ok", 'ok ok ok', 'the jobs ran');
is(scalar(grep { defined } @n), 3, "each job's code and data are named")
    or diag explain \@n;
my @b = map { Math::BigInt->new($_ // 0) } @n;
ok(!($b[1] == $b[0] + 1 && $b[2] == $b[1] + 1),
   "the names are not a count (@{[map { $_ // 'undef' } @n]})");
is(scalar(keys %{{ map { ($_ // '') => 1 } @n }}), 3, 'nor the same');

is(join(' ', $w->leftovers), '', 'nothing left on the host');
