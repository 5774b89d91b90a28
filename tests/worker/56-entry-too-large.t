#!/usr/bin/perl

# A stream entry too large to read is dead-lettered unread, once, and
# the worker goes on.  The worker read a whole entry (the XREADGROUP or
# XAUTOCLAIM reply) before any check of its size, and hiredis buffers a
# reply of any size: an entry of 170 MB (Redis takes values of 512 MB)
# cost it three copies, over the unit's MemoryMax=512M, and the kernel
# killed it at every delivery, before the delivery count was read:
# never dead-lettered, the queue wedged.  It now reads at most four
# times max_envelope_bytes and 64 KiB of such a reply, drops the
# connection past that, finds the entry's id in its pending list and
# dead-letters it.  Here the worker runs in a memory cgroup of 96 MiB
# and the entries are 40 MB: one added while it waits (XREADGROUP >),
# one pending for its own consumer name (resumed at its start), one
# left by a dead consumer (XAUTOCLAIM).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use POSIX ();
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'gvisor');

my ($cg, $wrap) = $w->memory_cgroup('large', 96 << 20);

$w->start_proxy;
$w->start_redis;

plan tests => 14;

my %c = (visibility_timeout_ms => 300,
         wrap => $wrap);

# 40 MB: a valid envelope but for its size
sub huge {
    my ($job) = @_;
    return $w->envelope(job_id => $job,
                        script => '#' . ('x' x (40 << 20)) . "\nprint(1)");
}

# the entry's dead-letter entries (fields as a hash)
sub dead_for {
    my ($id) = @_;
    my $dead = $w->redis('XRANGE', 'airlock:jobs:dead', '-', '+');
    return map { { @{$_->[1]} } }
           grep { my %f = @{$_->[1]}; $f{entry} eq $id } @$dead;
}

# the job's result, or 'dead' when the worker is gone (reaped here)
sub result_or_dead {
    my ($pid, $job) = @_;
    for (1 .. 1200) {
        my $r = eval { $w->result($job) };
        return $r if $r;
        if (waitpid($pid, POSIX::WNOHANG()) == $pid) {
            $t->{daemons} = [ grep { $_ != $pid } @{$t->{daemons}} ];
            return 'dead';
        }
        sleep 0.025;
    }
    return undef;
}

sub pending {
    return $w->redis('XPENDING', 'airlock:jobs', 'airlock-workers')->[0];
}

my $too = qr/^bad_envelope: the entry is over \d+ bytes/;

# ---- added while the worker waits

my $pid = $w->start_worker(%c);
my $r = $w->run_job(job_id => 'before', script => "print('before')");
is($r && $r->{stdout}, "before\n", 'a job before the large entry runs');

my $id = $w->add_raw(huge('huge1'));
$w->add_job(job_id => 'after', script => "print('after')");
$r = result_or_dead($pid, 'after');
is(ref $r ? $r->{stdout} : $r, "after\n",
   'the worker lives on and runs the job after it');

my @d = dead_for($id);
is(scalar @d, 1, 'the large entry is in the dead-letter stream once');
like($d[0] && $d[0]{error}, $too, 'with the error');
is($d[0] && $d[0]{job}, '', 'and not its job, which was not read');
# the result is stored before the entry is acknowledged
for (1 .. 400) {
    last if !ref $r || (pending() == 0
                        && $w->redis('XLEN', 'airlock:jobs') == 0);
    sleep 0.025;
}
is(pending(), 0, 'nothing pending');
is($w->redis('XLEN', 'airlock:jobs'), 0, 'nothing left in the stream');

# ---- pending for the worker's own consumer name, and for a dead one

$w->kill_worker('TERM', $pid) if ref $r;

my @ids;
for my $consumer ('c1', 'c0') {
    push @ids, $w->add_raw(huge("huge-$consumer"));
    # delivered, without bringing the entry here
    $w->redis('EVAL', "return redis.call('XREADGROUP', 'GROUP', "
              . "'airlock-workers', ARGV[1], 'COUNT', '1', 'STREAMS', "
              . "KEYS[1], '>')[1][2][1][1]", '1', 'airlock:jobs', $consumer);
}
is(pending(), 2, 'two large entries pending, for c1 and for c0');

$pid = $w->start_worker(%c);
$w->add_job(job_id => 'later', script => "print('later')");
$r = result_or_dead($pid, 'later');
is(ref $r ? $r->{stdout} : $r, "later\n",
   'a worker named c1 lives on and runs the next job');

# dead-lettered, then acknowledged
for (1 .. 400) {
    last if !ref $r || (dead_for($ids[0]) && dead_for($ids[1])
                        && pending() == 0);
    sleep 0.025;
}
@d = map { dead_for($_) } @ids;
is(scalar @d, 2, 'both are in the dead-letter stream, once each');
ok(@d && !grep({ $_->{error} !~ $too } @d), 'with the error');
is(pending(), 0, 'nothing pending');

$w->kill_worker('TERM', $pid) if ref $r;
is($w->redis('HLEN', 'airlock:jobs:errors'), 0,
   'nothing left in errors_key');
unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');
rmdir $cg;
