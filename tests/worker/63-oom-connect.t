#!/usr/bin/perl

# A worker that connects while Redis refuses writes for memory
# (maxmemory, noeviction) still does what Redis lets it do.  Every
# connection began with XGROUP CREATE, a write Redis refuses then (OOM,
# though the group is there), and the worker took that for an outage:
# it dropped the connection and tried again, with backoff, for as long
# as Redis was full, and did nothing meanwhile: a worker restarted then
# (killed, the unit restarted) left its own pending entry, whose result
# was stored, unpublished and unacknowledged, though Redis publishes,
# acknowledges and deletes under maxmemory, and deleting the entries of
# jobs done is what frees memory.  A refused XGROUP CREATE now keeps the
# connection: the group is there, or the first read's NOGROUP creates
# it (33-group-gone.t).  A new job taken meanwhile waits, held by the
# heartbeat, for Redis to take its delivery record, and runs once.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use IO::Select;
use IO::Socket::INET;
use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::Worker;

my $t = Airlock::Test->new;
my $w = Airlock::Worker->new($t, backend => $ENV{AIRLOCK_WORKER_BACKEND}
                                            // 'gvisor');
$w->start_proxy;
$w->start_redis;

plan tests => 9;

sub wait_for {
    my ($cond) = @_;
    for (1 .. 400) {
        return 1 if $cond->();
        sleep 0.025;
    }
    return 0;
}

sub pending_ids {
    my $p = $w->redis('XPENDING', 'airlock:jobs', 'airlock-workers',
                      '-', '+', '10');
    return map { $_->[0] } @$p;
}

# a job done, its result stored, its worker killed before XACK
$w->acl_deny('airlock-worker', 'xack');
my $pid = $w->start_worker;
my $id = $w->add_job(job_id => 'oom-a', script => "print('a')");
my $r = $w->wait_result('oom-a', 60);
is($r && $r->{stdout}, "a\n", 'oom-a ran');
ok(wait_for(sub { $w->worker_log($pid) =~ /XACK\/XDEL \S+: / }),
   'its acknowledgement is refused');
$w->kill_worker('KILL', $pid);
$w->acl_restore('airlock-worker');
my $next = $w->add_job(job_id => 'oom-b', script => "print('b')");

my $sub = $w->redis_socket;
print {$sub} "*2\r\n\$9\r\nSUBSCRIBE\r\n\$14\r\nresponse:oom-a\r\n";
IO::Select->new($sub)->can_read(5) or die "redis SUBSCRIBE: no answer";
Airlock::Worker::_resp_read($sub);

# Redis full: the worker restarted now connects and finishes the entry
$w->redis('CONFIG', 'SET', 'maxmemory', '1');
$pid = $w->start_worker;

ok(wait_for(sub { !grep { $_ eq $id } pending_ids() }),
   'under maxmemory the restarted worker acknowledges its pending entry');
is(scalar @{$w->redis('XRANGE', 'airlock:jobs', $id, $id)}, 0,
   'and deletes it from the stream');

my $msg;
if (IO::Select->new($sub)->can_read(5)) {
    $msg = Airlock::Worker::_resp_read($sub);
}
is($msg && eval { decode_json($msg->[2])->{stdout} }, "a\n",
   'and publishes its stored result');

# the next job, taken, waits for Redis to take its delivery record (its
# claim on its job_id, the first write: 112-duplicate-job.t)
ok(wait_for(sub { $w->worker_log($pid) =~ /redis (?:HSET|EVAL): OOM/ }),
   'the next job waits for Redis to take its delivery record')
    or diag $w->worker_log($pid);
$w->redis('CONFIG', 'SET', 'maxmemory', '0');
$r = $w->wait_result('oom-b', 60);
is($r && $r->{stdout}, "b\n", 'and runs once Redis takes writes');
my @runs = grep { /job oom-b \(entry/ } split /\n/, $w->all_worker_logs;
is(scalar @runs, 1, 'once');

$w->kill_worker('TERM', $pid);
unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|no longer pending|Sanitizer|runtime error/m,
       'no alerts, lost entries or sanitizer reports in the log');

1;
