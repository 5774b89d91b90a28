#!/usr/bin/perl

# A record too large to read in errors_key or <errors_key>:held does not
# kill the worker.  The worker read them whole (the last delivery record
# of an entry delivered too often, that of an entry deleted from the
# stream, its dead-letter record, a held entry's id), and hiredis
# buffers a reply of any size: a value of hundreds of MB there (no
# worker's record, written by something else) got the worker killed by
# the unit's MemoryMax= at every delivery of that entry, or, for a
# member of <errors_key>:held, at every turn of every worker's loop,
# the queue wedged.  Such a reply is now read up to 64 KiB and taken
# for an unreadable record.  Here the worker runs in a memory cgroup of
# 64 MiB and each record is 40 MB.

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

my ($cg, $wrap) = $w->memory_cgroup('record', 64 << 20);

$w->start_proxy;
$w->start_redis;

plan tests => 15;

my %c = (wrap => $wrap, max_deliveries => 1, visibility_timeout_ms => 300);
my $big = 'x' x (40 << 20);

# the worker gone (reaped here)?
sub dead {
    my ($pid) = @_;
    return 0 unless waitpid($pid, POSIX::WNOHANG()) == $pid;
    $t->{daemons} = [ grep { $_ != $pid } @{$t->{daemons}} ];
    return 1;
}

# the job's result, or 'dead' when the worker is gone
sub result_or_dead {
    my ($pid, $job) = @_;
    for (1 .. 1200) {
        my $r = eval { $w->result($job) };
        return $r if $r;
        return 'dead' if dead($pid);
        sleep 0.025;
    }
    return undef;
}

# nothing pending, or 'dead'
sub done_or_dead {
    my ($pid) = @_;
    for (1 .. 1200) {
        my $p = $w->redis('XPENDING', 'airlock:jobs', 'airlock-workers');
        return 0 if ref $p && $p->[0] == 0;
        return 'dead' if dead($pid);
        sleep 0.025;
    }
    return -1;
}

# the number of records in errors_key, once it is 0 or after 30 s
sub records_gone {
    my $n;
    for (1 .. 1200) {
        $n = $w->redis('HLEN', 'airlock:jobs:errors');
        return $n if $n == 0;
        sleep 0.025;
    }
    return $n;
}

sub stop {
    my ($pid) = @_;
    $w->kill_worker('TERM', $pid) unless dead($pid);
}

# an entry taken by a consumer that died: its first delivery
sub ghost {
    my ($id) = @_;
    my $got = $w->redis('XREADGROUP', 'GROUP', 'airlock-workers', 'ghost',
                        'COUNT', '1', 'STREAMS', 'airlock:jobs', '>');
    return $got->[0][1][0][0] eq $id;
}

$w->redis('XGROUP', 'CREATE', 'airlock:jobs', 'airlock-workers', '0',
          'MKSTREAM');

# ---- delivered too often, its last delivery record huge

my $id = $w->add_job(job_id => 'over1', script => "print('never')");
ok(ghost($id), 'over1: a consumer that dies takes the entry');
$w->redis('HSET', 'airlock:jobs:errors', $id, $big);

my $pid = $w->start_worker(%c);
my $r = result_or_dead($pid, 'over1');
is(ref $r ? $r->{error}{code} : $r, 'dead_letter',
   'over1: dead-lettered, the worker alive');
like(ref $r ? $r->{error}{message} : '',
     qr/last: unknown \(the record is over 65536 bytes\)/,
     'the record is not read');
is(done_or_dead($pid), 0, 'over1: the entry is acknowledged');
stop($pid);

# ---- deleted from the stream, its delivery record huge, its ids kept

$id = $w->add_job(job_id => 'gone1', script => "print('never')");
ok(ghost($id), 'gone1: a consumer that dies takes the entry');
$w->redis('HSET', 'airlock:jobs:errors', $id, $big, "$id:job",
          'gone1 sess-1');
$w->redis('XDEL', 'airlock:jobs', $id);

$pid = $w->start_worker(%c);
$r = result_or_dead($pid, 'gone1');
is(ref $r ? $r->{error}{code} : $r, 'entry_deleted',
   'gone1: answered, the worker alive');
is(done_or_dead($pid), 0, 'gone1: nothing pending');
# XAUTOCLAIM drops a deleted entry from the pending list when it hands
# it to the worker, before the worker stores its result and removes its
# records: "nothing pending" comes first, the records go after
is(records_gone(), 0, 'no record left');
stop($pid);

# ---- no job_id, its dead-letter record huge

$id = $w->add_raw('{"no":"id"}');
ok(ghost($id), 'a consumer that dies takes an entry with no job_id');
$w->redis('HSET', 'airlock:jobs:errors', "$id:dead", $big);

$pid = $w->start_worker(%c);
is(done_or_dead($pid), 0,
   'the entry is acknowledged, the worker alive');
my $dead = $w->redis('XRANGE', 'airlock:jobs:dead', '-', '+');
is(scalar(grep { my %f = @{$_->[1]}; $f{entry} eq $id } @$dead), 0,
   'and not dead-lettered a second time');
stop($pid);

# ---- a huge member in <errors_key>:held

$w->redis('ZADD', 'airlock:jobs:errors:held', '0', $big);
$pid = $w->start_worker(%c);
$w->add_job(job_id => 'after', script => "print('after')");
$r = result_or_dead($pid, 'after');
is(ref $r ? $r->{stdout} : $r, "after\n",
   'a huge held member: the worker lives on and runs the next job');
like($w->worker_log($pid), qr/reply is over 65536 bytes/, 'and says so');
is(done_or_dead($pid), 0, 'nothing pending');
stop($pid);

unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');
rmdir $cg;
