#!/usr/bin/perl

# A dead worker's job cgroups are removed by the next worker to start,
# also when their job directory is gone.  The clean-up at start found
# cgroups only through the job directories in the workdir, and a job's
# directory is removed after its cgroup even when the cgroup could not
# be (a process that would not die, a cgroup below it): such a cgroup,
# and whatever was still in it, stayed for ever.  Cgroups under
# cgroup_name whose worker is gone (by pid and start time, as for
# directories) now go too; a live worker's stay.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use File::Path qw(make_path);
use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'gvisor');
$w->start_proxy;
$w->start_redis;

plan tests => 6;

my $cgroot = '/sys/fs/cgroup';
my @hier = -e "$cgroot/cgroup.controllers"
           ? ($cgroot) : map { "$cgroot/$_" } qw(memory pids cpuacct);

sub start_time {
    my ($pid) = @_;
    my $stat = Airlock::Worker::_slurp("/proc/$pid/stat") // return undef;
    $stat =~ s/^.*\) //s;
    return (split ' ', $stat)[19];
}

# a job cgroup in every hierarchy, with no job directory
sub cgroup {
    my ($name) = @_;
    make_path("$_/airlock-test-$$/$name") for @hier;
    return grep { -d } map { "$_/airlock-test-$$/$name" } @hier;
}

my $live = $w->start_worker(consumer => 'live');
my $r = $w->run_job(job_id => 'warm', script => 'print(1)');
is($r && $r->{status}, 'ok', 'a live worker runs a job');
my $live_start = start_time($live);

my $gone = fork // die "fork: $!";
exit 0 if $gone == 0;
waitpid $gone, 0;

my @stale = cgroup("aw-$gone-$live_start-3");
my @kept = cgroup("aw-$live-$live_start-9");
ok(@stale && @kept, 'cgroups without directories: ' . scalar @stale);

my $b = $w->start_worker(consumer => 'next');
for (1 .. 200) {
    last if !grep { -d } @stale;
    sleep 0.05;
}

is(join(' ', grep { -d } @stale), '',
   "a dead worker's cgroups without a directory: removed");
like($w->worker_log($b), qr/removing cgroup aw-$gone-\d+-3, left by worker/,
     'and the removal logged');
is(scalar(grep { -d } @kept), scalar @kept, "a live worker's: kept");

rmdir for @kept;
$w->kill_worker('TERM', $_) for $live, $b;
unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');
