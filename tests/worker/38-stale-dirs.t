#!/usr/bin/perl

# What a dead worker left is removed by the next one to start, even when
# its pid now belongs to another process.  A job directory was named by
# its worker's pid alone and kept while that pid was alive, so one whose
# pid had been reused (pids wrap, and a busy host reuses them fast) was
# kept for as long as the unrelated process lived.  The name now carries
# the worker's start time as well; a live worker's directories, under
# either form of name, are never touched.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use File::Path qw(make_path remove_tree);
use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'gvisor');
$w->start_proxy;
$w->start_redis;

plan tests => 12;

my $jobs = $t->testdir . '/work/jobs';

# field 22 of /proc/<pid>/stat, after "(comm)"
sub start_time {
    my ($pid) = @_;
    my $stat = Airlock::Worker::_slurp("/proc/$pid/stat") // return undef;
    $stat =~ s/^.*\) //s;
    return (split ' ', $stat)[19];
}

sub job_dir {
    my ($name) = @_;
    make_path("$jobs/$name/code");
    $t->write_file("work/jobs/$name/code/script.py", "print(1)\n");
    return "$jobs/$name";
}

# a live worker, whose job directories must stay
my $live = $w->start_worker(consumer => 'live');
$w->run_job(job_id => 'warm', script => 'print(1)');
my $live_start = start_time($live);
ok($live_start, "the live worker's start time ($live_start)");

# an unrelated process, alive, standing for one given a dead worker's pid
my $other = fork // die "fork: $!";
if ($other == 0) {
    open STDOUT, '>', '/dev/null';
    open STDERR, '>', '/dev/null';
    exec 'sleep', '300';
    exit 127;
}
END { kill 'KILL', $other if $other; }
sleep 0.2;
my $other_start = start_time($other);

# a pid no process has
my $gone = fork // die "fork: $!";
exit 0 if $gone == 0;
waitpid $gone, 0;

my %dir = (
    reused     => job_dir("aw-$other-" . ($other_start - 1) . '-1'),
    reused_old => job_dir("aw-$other-2"),
    gone       => job_dir("aw-$gone-" . $other_start . '-3'),
    live       => job_dir("aw-$live-$live_start-9"),
    live_old   => job_dir("aw-$live-8"),
    owner      => job_dir("aw-$other-$other_start-4"),
);

my $b = $w->start_worker(consumer => 'next');
for (1 .. 200) {
    last if !-d $dir{reused} && !-d $dir{gone};
    sleep 0.05;
}
sleep 0.5;

ok(!-d $dir{reused},
   'a dead worker\'s directory whose pid another process has: removed');
like($w->worker_log($b), qr/removing aw-$other-\d+-1, left by worker $other/,
     'and the removal logged');
ok(!-d $dir{reused_old},
   '... also under the old name (aw-<pid>-<n>), the pid not a worker\'s');
ok(!-d $dir{gone}, 'a directory whose pid is gone: removed');
ok(-d $dir{owner},
   'a directory whose pid and start time are a live process\'s: kept');
ok(-d $dir{live}, 'a live worker\'s directory: kept');
ok(-d $dir{live_old}, '... also under the old name');

# the name a job gets: pid and start time
$w->kill_worker('TERM', $live);
remove_tree($dir{$_}) for grep { -d $dir{$_} } keys %dir;

$w->add_job(job_id => 'slow', script => "import time\ntime.sleep(3)\n");
my @names;
for (1 .. 400) {
    @names = map { s{.*/}{}r } glob("$jobs/aw-*");
    last if @names;
    sleep 0.025;
}
my $b_start = start_time($b);
like(join(' ', @names), qr/^aw-$b-$b_start-\d+$/,
     "a job's directory is named by its worker's pid and start time");
my $r = $w->wait_result('slow', 60);
is($r && $r->{status}, 'ok', 'and the job runs');

kill 'KILL', $other;
waitpid $other, 0;

$w->kill_worker('TERM', $b);
is(join(' ', $w->leftovers), '', 'nothing left on the host');
unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');

1;
