#!/usr/bin/perl

# An entry deleted from the stream while pending keeps its way to the
# dead-letter stream while Redis refuses the record.  Its worker's
# heartbeat used to claim it (Redis 7 drops a deleted entry it is asked
# to claim from the pending list), so a worker killed while Redis
# refused the dead-letter write longer than a third of the visibility
# timeout left it nowhere: not pending, not in the stream, not in the
# dead-letter stream.  It now stays pending until it is recorded, and
# the next worker records it.  When its worker waits past the
# visibility timeout and another takes it over meanwhile, the two still
# write one dead-letter entry.  Redis refuses the record by an ACL
# without XADD, which the dead-letter script runs.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'gvisor');
$w->start_proxy;
$w->start_redis;

plan tests => 10;

sub wait_log {
    my ($pid, $re, $n) = @_;
    for (1 .. 1200) {
        my @m = $w->worker_log($pid) =~ /$re/g;
        return 1 if @m >= ($n // 1);
        sleep 0.025;
    }
    return 0;
}

sub dead_for {
    my ($id) = @_;
    my $dead = $w->redis('XRANGE', 'airlock:jobs:dead', '-', '+');
    return scalar grep { my %f = @{$_->[1]}; $f{entry} eq $id } @$dead;
}

# an entry pending for $consumer, its delivery started, then deleted
sub gone_entry {
    my ($job, $consumer) = @_;
    $w->add_job(job_id => $job, script => "print('never')");
    my $got = $w->redis('XREADGROUP', 'GROUP', 'airlock-workers',
                        $consumer, 'COUNT', '1', 'STREAMS', 'airlock:jobs',
                        '>');
    my $id = $got->[0][1][0][0];
    $w->redis('HSET', 'airlock:jobs:errors', $id, "delivery 1 to consumer "
              . "$consumer started and did not finish");
    $w->redis('XDEL', 'airlock:jobs', $id);
    return $id;
}

my %c = (visibility_timeout_ms => 300);
my $refused = qr/redis EVAL: ERR The user executing the script can't run/;

$w->redis('XGROUP', 'CREATE', 'airlock:jobs', 'airlock-workers', '0',
          'MKSTREAM');

# ---- killed while the record is refused

my $id = gone_entry('gone1', 'c1');
$w->acl_deny('airlock-worker', 'xadd');

my $pid = $w->start_worker(%c);
# three refusals: 700 ms of backoff, past two heartbeats (100 ms)
ok(wait_log($pid, $refused, 3),
   'the worker finds the deleted entry; its record is refused');
$w->kill_worker('KILL', $pid);
$w->acl_restore('airlock-worker');

$pid = $w->start_worker(%c);
my $r = $w->run_job(job_id => 'after1', script => "print('after')");
is($r && $r->{stdout}, "after\n", 'the next worker runs the next job');
is(dead_for($id), 1, 'and has put the deleted entry in the dead-letter '
   . 'stream');
is($w->redis('HLEN', 'airlock:jobs:errors'), 0,
   'nothing left in errors_key');
is($w->pending_after, 0, 'nothing pending');
$w->kill_worker('TERM', $pid);

# ---- taken over while its worker waits: one record

$id = gone_entry('gone2', 'c1');
$w->acl_deny('airlock-worker', 'xadd');
my $a = $w->start_worker(%c);
ok(wait_log($a, $refused), 'the worker waits on its record');
my $b = $w->start_worker(%c, consumer => 'c2');
ok(wait_log($b, $refused),
   'another takes the entry over past the visibility timeout, and waits');
$w->acl_restore('airlock-worker');

$r = $w->run_job(job_id => 'after2', script => "print('after')");
ok(wait_log($a, qr/entry \Q$id\E (to|is in) airlock:jobs:dead/)
   && wait_log($b, qr/entry \Q$id\E (to|is in) airlock:jobs:dead/),
   'both are done with it');
is(dead_for($id), 1, 'one dead-letter entry, not two');

$w->kill_worker('TERM', $a);
$w->kill_worker('TERM', $b);
unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');
