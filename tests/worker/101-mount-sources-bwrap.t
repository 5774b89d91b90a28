#!/usr/bin/perl

# Under bwrap the sandbox's /proc/self/mountinfo names the source of its
# code and data bind mounts by their path on the host (docs/jobs.md says
# why it stays shown).  That was the job's directory,
# <workdir>/jobs/aw-<worker pid>-<its start time>-<n>: which worker ran
# the job, since when, and (read in the next job) whether it was the
# same one.  Now code/ and data/ are in <workdir>/in/<n>, named by the
# random number alone; a dead worker's are removed with its job
# directory by the next worker to start, a live one's kept.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use File::Path qw(make_path remove_tree);
use JSON::PP;
use Test::More;
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => 'bwrap');
$w->start_proxy;
$w->start_redis;

plan tests => 7;

# field 22 of /proc/<pid>/stat, after "(comm)"
sub start_time {
    my ($pid) = @_;
    my $stat = Airlock::Worker::_slurp("/proc/$pid/stat") // return undef;
    $stat =~ s/^.*\) //s;
    return (split ' ', $stat)[19];
}

# what a worker leaves, under both layouts: a job directory, and code
# and data in it (the old) or in in/<n> (the new)
my $work = $t->testdir . '/work';
sub left_by {
    my ($pid, $start, $n) = @_;
    my $slot = "$work/jobs/aw-$pid-$start-$n";
    make_path("$slot/code", "$work/in/$n/code");
    $t->write_file("work/in/$n/code/script.py", "print(1)\n");
    $t->write_file("work/jobs/aw-$pid-$start-$n/code/script.py",
                   "print(1)\n");
    return ($slot, "$work/in/$n");
}

# a pid no process has, and this test's own (alive, as an owner)
my $gone = fork // die "fork: $!";
exit 0 if $gone == 0;
waitpid $gone, 0;
my @dead = left_by($gone, start_time($$), 11);
my @live = left_by($$, start_time($$), 12);

my $pid = $w->start_worker;
my $start = start_time($pid);

my $r = $w->run_job(job_id => 'sources', script => <<'PY');
import json
res = {}
with open("/proc/self/mountinfo") as f:
    for line in f:
        pre = line.split(" - ")[0].split()
        res[pre[4]] = pre[3]
with open("/proc/mounts") as f:
    res["mounts"] = f.read()
print(json.dumps(res))
PY
my $p = eval { decode_json($r->{stdout}) } // {};
is($r->{status}, 'ok', 'the probe ran') or diag explain $r;

my $src = join ' ', map { $p->{$_} // 'none' } qw(/app/code /app/data);
like($src, qr{^\Q$work\E/in/(\d+)/code \Q$work\E/in/\1/data$},
     "code and data are bound from <workdir>/in/<n> ($src)");
my @named = grep { index($p->{$_}, "-$pid-") >= 0
                   || index($p->{$_}, "-$start-") >= 0 } sort keys %$p;
is("@named", '', "no mount's source names the worker's pid or start time");

ok(!-e $dead[1], "a dead worker's code and data: removed");
ok(!-e $dead[0], 'with its job directory');
ok(-d $live[1] && -d $live[0], "a live owner's: kept");
remove_tree(@live);

is(join(' ', $w->leftovers), '', 'nothing left on the host');
