#!/usr/bin/perl

# A bwrap sandbox's /proc/meminfo, /proc/loadavg and /proc/uptime were
# the host's, live: its memory (free, cached, dirty and under writeback,
# which another job moves at will: a channel between concurrent jobs),
# its load and its threads, and its CPUs' idle time since boot; and
# meminfo's MemTotal was the host's, not what the job may use, for code
# that sizes itself by it.  gVisor's are its sentry's.  Now each is a
# file the worker writes at the job's start: meminfo's MemTotal is what
# the job's cgroup allows, MemFree and MemAvailable the job's
# memory_mb, nothing of the host's; loadavg shows no load; uptime is
# the host's at the job's start (what the sandbox's CLOCK_BOOTTIME and
# its processes' start times tell anyway) with no idle time.  What
# sysinfo() answers (the C library's getloadavg() and sysconf()'s
# _SC_PHYS_PAGES and _SC_AVPHYS_PAGES) is still the host's.
#
# Each is read twice from inside, and between the two reads the host
# works: 20 more processes, 32 MB written and not yet synced; the test
# tells the job it has by removing the job's /scratch/87-read.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use POSIX qw(_exit);
use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => 'bwrap');
$w->start_proxy;
$w->start_redis;
my $wpid = $w->start_worker;

plan tests => 12;

my $probe = <<'PY';
import json, os, time

def rd():
    d = {}
    for n in ("meminfo", "loadavg", "uptime"):
        with open("/proc/" + n) as f:
            d[n] = f.read()
    return d

a = rd()
boot = time.clock_gettime(time.CLOCK_BOOTTIME)
open("/scratch/87-read", "w").close()
for i in range(600):
    if not os.path.exists("/scratch/87-read"):
        break
    time.sleep(0.05)
b = rd()
print(json.dumps({"a": a, "b": b, "boot": boot}))
PY

# The job's cgroup's memory limit in bytes, and the root of one of its
# processes that has written /scratch/87-read, once one has.
sub job_limit_root {
    my $deadline = time + 30;

    while (time < $deadline) {
        for my $p ($w->job_procs($wpid)) {
            next unless -e "$p/root/scratch/87-read";

            my ($f) = (glob("/sys/fs/cgroup/airlock-test-$$/aw-*/memory.max"),
                       glob("/sys/fs/cgroup/memory/airlock-test-$$/aw-*/"
                            . "memory.limit_in_bytes"));
            my $v = defined $f ? $t->read_file($f) : undef;
            chomp $v if defined $v;
            return ($v, "$p/root");
        }
        sleep 0.05;
    }

    return (undef, undef);
}

# The host at work: 20 processes more, 32 MB written, not synced.
sub host_work {
    my @kids;

    for (1 .. 20) {
        my $pid = fork // die "fork: $!";
        if ($pid == 0) {
            sleep 30;
            _exit(0);
        }
        push @kids, $pid;
    }

    open(my $fh, '>', "$t->{testdir}/87-dirty") or die "87-dirty: $!";
    print {$fh} 'x' x (1 << 20) for 1 .. 32;
    close $fh;
    sleep 0.5;

    return @kids;
}

sub probe {
    my ($id, $mb) = @_;

    $w->add_job(job_id => $id, script => $probe,
                limits => { memory_mb => $mb, wall_ms => 40000 });

    my ($limit, $root) = job_limit_root();
    my @kids = defined $root ? host_work() : ();

    # the go: the host's root makes no file there (no uid inside)
    if (defined $root) {
        unlink "$root/scratch/87-read" or diag "87-read: $!";
    }

    my $r = $w->wait_result($id, 60);
    kill 'KILL', @kids;
    waitpid($_, 0) for @kids;
    unlink "$t->{testdir}/87-dirty";

    my $p = eval { decode_json($r->{stdout}) } // {};
    $limit = int($limit / 1024) if defined $limit && $limit =~ /^\d+$/;

    return ($r, $p, $limit);
}

sub fields {
    my ($text) = @_;
    my %m;

    for (split /\n/, $text // '') {
        $m{$1} = $2 if /^([\w()]+):\s+(\d+)/;
    }

    return \%m;
}

my ($r, $p, $limit) = probe('load', 96);
is($r && $r->{status}, 'ok', 'the probe ran') or diag explain $r;

my $m = fields($p->{a}{meminfo});
ok(defined $limit && ($m->{MemTotal} // -1) == $limit,
   "MemTotal is what the job's cgroup allows")
    or diag explain [$m->{MemTotal}, $limit];
ok(($m->{MemAvailable} // -1) == 96 * 1024
   && ($m->{MemFree} // -1) == 96 * 1024,
   'MemFree and MemAvailable are the job\'s memory_mb')
    or diag $p->{a}{meminfo};

my @wanted = qw(MemTotal MemFree MemAvailable Buffers Cached Shmem Active
                Inactive Slab SReclaimable SwapTotal SwapFree);
is(join(' ', grep { !defined $m->{$_} } @wanted), '',
   'every field psutil reads is there');
is(join(' ', grep { $m->{$_} > ($m->{MemTotal} // 0) } sort keys %$m), '',
   'no field over MemTotal (nothing of the host\'s size)')
    or diag $p->{a}{meminfo};

is($p->{b}{meminfo}, $p->{a}{meminfo},
   'meminfo does not move while the host works')
    or diag "$p->{a}{meminfo}\n---\n" . ($p->{b}{meminfo} // '');
is($p->{b}{loadavg}, $p->{a}{loadavg},
   'loadavg does not move while the host works');
like($p->{a}{loadavg} // '', qr/^0\.00 0\.00 0\.00 /,
     'loadavg shows no load');

is($p->{b}{uptime}, $p->{a}{uptime},
   'uptime does not move while the host works');
my ($up, $idle) = split ' ', $p->{a}{uptime} // '';
is($idle, '0.00', 'uptime has no idle time');
ok(defined $up && $up > 0 && $up <= $p->{boot},
   'uptime is the host\'s at the job\'s start')
    or diag explain [$up, $p->{boot}];

# another job, another limit
my ($r2, $p2) = probe('load-2', 200);
my $m2 = fields($p2->{a}{meminfo});
is(($m2->{MemTotal} // 0) - ($m->{MemTotal} // 0), (200 - 96) * 1024,
   'a job asking for more memory sees more')
    or diag explain [$m->{MemTotal}, $m2->{MemTotal}];
