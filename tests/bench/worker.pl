#!/usr/bin/perl
# Worker benchmark (`make bench-worker`): the round trip from XADD to the
# published result for a trivial script, and sustained jobs per second,
# per backend, in one run; with the cost split the worker reports in each
# result's timing_ms, and, for gVisor, what `runsc run` spends before the
# script against what a pre-created sandbox (runsc create ahead of time,
# then start) would leave on the job's path.
#
#   perl tests/bench/worker.pl [--jobs N] [--burst N] [--workers N]
#                              [--backends gvisor,bwrap] [--cpus N]
#
# Latency: N jobs one after another, each awaited the way a client awaits
# it (SUBSCRIBE response:<id>, then XADD, then the message).  Throughput:
# a burst of jobs XADDed at once to --workers workers (distinct
# consumers), from the first XADD to the last result.  Needs root (the
# sandboxes), redis-server, runsc, bwrap and the worker rootfs.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/../worker/lib";
use Getopt::Long;
use IO::Socket::INET;
use JSON::PP;
use POSIX qw(floor);
use Time::HiRes qw(time sleep);
use Test::More ();
use Airlock::Test;
use Airlock::Worker;

my $jobs = 50;
my $burst = 40;
my $nworkers = 2;
my $backends = 'gvisor,bwrap';
my $cpus = 0;
GetOptions('jobs=i' => \$jobs, 'burst=i' => \$burst,
           'workers=i' => \$nworkers, 'backends=s' => \$backends,
           'cpus=i' => \$cpus)
    or die "bad options\n";

# Airlock::Worker reports missing prerequisites through Test::More
Test::More->builder->no_ending(1);

sub pct {
    my ($p, @v) = @_;
    @v = sort { $a <=> $b } @v;
    my $i = floor($p / 100 * $#v + 0.5);
    return $v[$i];
}

sub mean {
    my $s = 0;
    $s += $_ for @_;
    return @_ ? $s / @_ : 0;
}

my @rows;
my %split;
my %tput;

my $script = "print('ok')\n";

for my $backend (split /,/, $backends) {
    my $t = Airlock::Test->new;
    my $w = Airlock::Worker->new($t, backend => $backend);

    # no input: the proxy is not on the path; the policy names no route
    $t->write_file('policy.yaml', <<'EOF');
version: 1
clients:
  worker: { unix_uid: airlock-worker }
upstreams:
  none: { url: "http://127.0.0.1:9" }
routes:
  - name: none
    clients: [worker]
    match: { method: GET, path: /none }
    upstream: none
    to: /none
alerts:
  deny: { threshold: 100, window: 60s }
EOF
    $w->start_redis;
    my @pids = map { $w->start_worker(consumer => "b$_", block_ms => 1000,
                                      cpus => $cpus) } 1 .. $nworkers;

    my $sub = $w->redis_socket;

    # warm-up: page cache, the first runsc start
    $w->run_job(job_id => "warm$_-$backend", script => $script) for 1 .. 3;

    my (@rt, @res);
    for my $i (1 .. $jobs) {
        my $id = "lat$i";
        my $ch = "response:$id";
        print {$sub} "*2\r\n\$9\r\nSUBSCRIBE\r\n\$" . length($ch)
                     . "\r\n$ch\r\n";
        Airlock::Worker::_resp_read($sub);

        my $t0 = time;
        $w->add_job(job_id => $id, script => $script);
        my $m = Airlock::Worker::_resp_read($sub);
        push @rt, (time - $t0) * 1000;

        print {$sub} "*2\r\n\$11\r\nUNSUBSCRIBE\r\n\$" . length($ch)
                     . "\r\n$ch\r\n";
        Airlock::Worker::_resp_read($sub);

        my $r = decode_json($m->[2]);
        die "job $id: $r->{status}\n" unless $r->{status} eq 'ok';
        push @res, $r;
    }

    my %tm;
    for my $k (qw(fetch prepare start run teardown total)) {
        $tm{$k} = mean(map { $_->{timing_ms}{$k} } @res);
    }
    $split{$backend} = \%tm;

    # throughput
    my $t0 = time;
    $w->add_job(job_id => "tp$_", script => $script) for 1 .. $burst;
    for my $i (1 .. $burst) {
        $w->wait_result("tp$i", 300) or die "no result for tp$i\n";
    }
    my $el = time - $t0;
    $tput{$backend} = $burst / $el;

    push @rows, sprintf "| %s | %d | %.0f | %.0f | %.0f | %.0f | %.1f |",
        $backend, $jobs, pct(50, @rt), pct(90, @rt), pct(99, @rt),
        (sort { $a <=> $b } @rt)[-1], $tput{$backend};

    $t->stop_daemons;
    Airlock::Worker::cleanup_cgroups();
}

print "Round trip XADD -> PUBLISH, trivial script, ms ($nworkers workers "
    . "for the throughput burst of $burst, cpus $cpus):\n\n";
print "| backend | jobs | p50 | p90 | p99 | max | jobs/s |\n";
print "| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n";
print "$_\n" for @rows;

print "\nCost split, mean of the results' timing_ms (run = runtime start, "
    . "interpreter start and the script; total = the worker's time for "
    . "the job):\n\n";
print "| backend | fetch | prepare | run | teardown | total |\n";
print "| --- | ---: | ---: | ---: | ---: | ---: |\n";
for my $b (split /,/, $backends) {
    my $s = $split{$b} or next;
    printf "| %s | %.1f | %.1f | %.1f | %.1f | %.1f |\n", $b,
        @$s{qw(fetch prepare run teardown total)};
}

# ---- gVisor: run vs create ahead + start ------------------------------------

exit 0 unless grep { $_ eq 'gvisor' } split /,/, $backends;

my $t = Airlock::Test->new;
my $d = $t->testdir;
my $rootfs = $ENV{AIRLOCK_ROOTFS} // "$t->{build}/worker-rootfs";
my $cg = "airlock-bench-$$";

sub bundle {
    my ($name, @args) = @_;
    mkdir "$d/$name";
    my $spec = {
        ociVersion => '1.0.0',
        process => { terminal => JSON::PP::false,
                     user => { uid => 10001, gid => 10001 },
                     args => \@args, env => [ 'PATH=/usr/bin:/bin' ],
                     cwd => '/', noNewPrivileges => JSON::PP::true,
                     capabilities => { map { $_ => [] } qw(bounding
                         effective inheritable permitted ambient) } },
        root => { path => $rootfs, readonly => JSON::PP::true },
        hostname => 'sandbox',
        mounts => [ { destination => '/proc', type => 'proc',
                      source => 'proc' } ],
        linux => { namespaces => [ map { { type => $_ } }
                                   qw(pid network ipc uts mount) ],
                   cgroupsPath => "/$cg/$name" },
    };
    # the worker writes the limits itself before starting; so does this
    for my $c (qw(memory pids)) {
        mkdir "/sys/fs/cgroup/$c/$cg";
        mkdir "/sys/fs/cgroup/$c/$cg/$name";
    }
    open my $fh, '>', "/sys/fs/cgroup/memory/$cg/$name/memory.limit_in_bytes";
    print $fh 192 << 20;
    close $fh;
    open $fh, '>', "$d/$name/config.json" or die $!;
    print $fh encode_json($spec);
    close $fh;
}

# `runsc wait` on a sandbox whose process has already ended may answer
# that its status is gone: the time is what counts, not the answer
sub runsc {
    my (@a) = @_;
    my $t0 = time;
    my $rc = system("/usr/bin/runsc --root=$d/state --platform=ptrace "
                    . "--network=none @a >/dev/null 2>&1");
    die "runsc @a failed\n" if $rc != 0 && $a[0] ne 'wait';
    return (time - $t0) * 1000;
}

my (%m, @k);
for my $i (1 .. 20) {
    bundle("py$i", '/usr/bin/python3', '-I', '-c', 'pass');
    push @{$m{run_py}}, runsc('run', "--bundle=$d/py$i", "py$i");

    # create ahead, with the container's stdout on a pipe: its end (EOF)
    # is the script's end, as the worker sees it with `runsc run`
    bundle("c$i", '/usr/bin/python3', '-I', '-c', 'pass');
    pipe(my $rd, my $wr) or die "pipe: $!";
    my $t0 = time;
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        close $rd;
        open STDOUT, '>&', $wr or POSIX::_exit(1);
        exec('/usr/bin/runsc', "--root=$d/state", '--platform=ptrace',
             '--network=none', 'create', "--bundle=$d/c$i", "c$i")
            or POSIX::_exit(127);
    }
    close $wr;
    waitpid($pid, 0);
    die "runsc create failed\n" if $?;
    push @{$m{create}}, (time - $t0) * 1000;

    $t0 = time;
    push @{$m{start}}, runsc('start', "c$i");
    1 while sysread($rd, my $buf, 4096);
    close $rd;
    push @{$m{start_wait}}, (time - $t0) * 1000;
    push @{$m{delete}}, runsc('delete', '-force', "c$i");
}
# runsc made the bundles' cgroups in every hierarchy
rmdir $_ for glob("/sys/fs/cgroup/*/$cg/*"), glob("/sys/fs/cgroup/*/$cg");

print "\ngVisor, `python3 -I -c pass` in a bare bundle, ms (median of 20):\n\n";
print "| runsc run | runsc create | start | start to end | delete |\n";
print "| ---: | ---: | ---: | ---: | ---: |\n";
printf "| %.0f | %.0f | %.0f | %.0f | %.0f |\n", map { pct(50, @{$m{$_}}) }
    qw(run_py create start start_wait delete);
