#!/usr/bin/perl

# cpus is a limit like the others: a job whose CFS quota cannot be set
# is not started (error sandbox, the file named), as one whose memory
# limit cannot be.  The worker used to ignore the quota's write, and
# the job ran with every CPU of the host: where the cpu controller is
# not enabled above the job's cgroup (cgroup v2: no cpu.max), or, on
# v1, where the kernel refuses a quota over its parent's, as here (the
# workers' cgroup capped at half a CPU, each job asking for one).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'gvisor');

# cgroup v2 takes a child's cpu.max over its parent's (the lower one
# applies); v1 refuses it, which is the refusal this test needs
Airlock::Prereq::absent('cgroup v1 needed for a refused CFS quota')
    unless -f '/sys/fs/cgroup/cpu/cpu.cfs_quota_us';

my $parent = "/sys/fs/cgroup/cpu/airlock-test-$$";
mkdir $parent or die "mkdir $parent: $!";

sub quota {
    my ($v) = @_;
    open my $fh, '>', "$parent/cpu.cfs_quota_us" or die "$parent: $!";
    print $fh "$v\n" or die "write quota: $!";
    close $fh or die "quota $v: $!";
}

quota(50000);

$w->start_proxy;
$w->start_redis;
$w->start_worker(cpus => 1);

plan tests => 5;

my $r = $w->run_job(job_id => 'over-parent', script => 'print("ran")');
is($r->{status}, 'error', 'a job whose quota is refused is not run')
    or diag explain $r;
is($r->{error}{code}, 'sandbox', 'the error is the sandbox\'s');
like($r->{error}{message} // '', qr/cpu\.cfs_quota_us/,
     'the message names the quota');

# a parent that allows it: the job runs, the worker went on
quota(-1);
$r = $w->run_job(job_id => 'under-parent', script => 'print("ran")');
is($r->{stdout}, "ran\n", 'with the quota set, the job runs')
    or diag explain $r;

is(join(' ', $w->leftovers), '', 'nothing left on the host');
