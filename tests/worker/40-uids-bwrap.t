#!/usr/bin/perl

# bwrap: each worker's jobs run as a host uid of their own (bwrap_uids
# uids from sandbox_uid up, one a worker), uid 10001 inside.  The kernel
# keeps some limits per host user whatever the namespace (inotify
# instances, POSIX message queue bytes, queued signals): a job that
# holds all 128 inotify instances of its uid used to leave none to a job
# of another worker running at the same time.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use POSIX qw(WNOHANG);
use Time::HiRes qw(sleep);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => 'bwrap');
$w->start_proxy;
$w->start_redis;

plan tests => 8;

my $a = $w->start_worker(consumer => 'c1', name => 'w1.conf');
my $b = $w->start_worker(consumer => 'c2', name => 'w2.conf');
my %uid = map {
    my $pid = $_;
    ($pid => ($w->worker_log($pid) =~ /jobs run as host uid (\d+), uid 10001/
              ? $1 : undef));
} $a, $b;
ok(defined $uid{$a} && defined $uid{$b} && $uid{$a} != $uid{$b}
   && !grep({ $_ < 10001 || $_ > 10064 } values %uid),
   "two workers, two host uids of 10001 to 10064 ($uid{$a}, $uid{$b})");

# the processes of one worker's job, with their host uids
sub procs {
    my ($pid) = @_;
    return map {
        my $st = Airlock::Worker::_slurp("$_/status") // '';
        my ($u) = $st =~ /^Uid:\s+(\d+)/m;
        [ $_, Airlock::Worker::_slurp("$_/cmdline") // '', $u ];
    } $w->job_procs($pid);
}

# A holds every inotify instance its host uid may have, and waits
$w->add_job(job_id => 'hog', limits => { wall_ms => 60000 },
            script => <<'PY');
import ctypes, time
libc = ctypes.CDLL(None, use_errno=True)
fds = []
while len(fds) < 200 and libc.inotify_init() >= 0:
    fds.append(1)
print(len(fds), flush=True)
while True:
    time.sleep(0.2)
PY

my ($hog, $owner);
for (1 .. 2400) {
    for my $pid ($a, $b) {
        for my $p (procs($pid)) {
            next unless $p->[1] =~ m{^/usr/bin/python3\0-I\0/app/code/};
            my $n = grep { (readlink($_) // '') eq 'anon_inode:inotify' }
                    glob("$p->[0]/fd/*");
            ($hog, $owner) = ($p, $pid) if $n >= 100;
        }
    }
    last if $hog;
    sleep 0.025;
}
ok($hog, 'hog holds its inotify instances');
is($hog && $hog->[2], $uid{$owner // 0}, "hog runs as its worker's host uid");

# B, on the other worker (the hog's is busy), at the same time
my $r = $w->run_job(job_id => 'other', script => <<'PY');
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init()
print(os.getuid(), os.getgid(),
      "inotify ok" if fd >= 0 else os.strerror(ctypes.get_errno()))
PY
is($r && $r->{stdout}, "10001 10001 inotify ok\n",
   'a job of another worker meanwhile: uid 10001 inside, an inotify '
   . 'instance of its own') or diag explain $r;

kill 'KILL', $hog->[0] =~ m{/proc/(\d+)} if $hog;
$r = $w->wait_result('hog');
ok($r && $r->{status} eq 'killed' && $r->{stdout} =~ /^1\d\d\n/,
   'hog held 100 or more (' . ($r && $r->{stdout} =~ s/\n//r) . ')')
    or diag explain $r;

# a third worker on the workdir takes neither lease; bwrap_uids 2 has
# none left for it, and it says so
my $c = $w->start_worker(consumer => 'c3', name => 'w3.conf',
                         bwrap_uids => 2);
for (1 .. 400) {
    last unless kill 0, $c and waitpid($c, WNOHANG) != $c;
    sleep 0.025;
}
like($w->worker_log($c),
     qr/emerg: sandbox: all 2 host uids from 10001 \(bwrap_uids\) are held by other workers/,
     'no host uid left: the worker does not start');

$w->kill_worker('TERM', $_) for $a, $b;
is(join(' ', $w->leftovers), '', 'nothing left on the host');
unlike($w->all_worker_logs, qr/^\S+ \S+ alert:|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');

1;
