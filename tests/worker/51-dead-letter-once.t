#!/usr/bin/perl

# An entry goes to the dead-letter stream once, however often its worker
# dies on the way out.  A worker killed after the dead-letter entry was
# written and before the job's result was stored (an entry delivered too
# often) or before the entry was acknowledged (an envelope with no
# job_id) wrote a second dead-letter entry when the entry came back to
# the next worker.  The worker is held between the two writes by Redis
# refusing the second (an ACL without SET, then without XACK), killed
# there, and the same consumer started again.

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

plan tests => 13;

sub wait_log {
    my ($pid, $re) = @_;
    for (1 .. 1200) {
        return 1 if $w->worker_log($pid) =~ $re;
        sleep 0.025;
    }
    return 0;
}

sub pending {
    my $n = -1;
    for (1 .. 400) {
        my $p = $w->redis('XPENDING', 'airlock:jobs', 'airlock-workers');
        $n = ref $p ? $p->[0] : -1;
        last if $n == 0;
        sleep 0.05;
    }
    return $n;
}

# the dead-letter entries of a stream entry
sub dead_for {
    my ($id) = @_;
    my $dead = $w->redis('XRANGE', 'airlock:jobs:dead', '-', '+');
    return scalar grep { my %f = @{$_->[1]}; $f{entry} eq $id } @$dead;
}

my %c = (max_deliveries => 1, visibility_timeout_ms => 300);

# ---- delivered too often: killed between the dead-letter entry and the
# result

$w->redis('XGROUP', 'CREATE', 'airlock:jobs', 'airlock-workers', '0',
          'MKSTREAM');
my $id = $w->add_job(job_id => 'twice', script => "print('never')");
my $got = $w->redis('XREADGROUP', 'GROUP', 'airlock-workers', 'ghost',
                    'COUNT', '1', 'STREAMS', 'airlock:jobs', '>');
is($got->[0][1][0][0], $id, 'a consumer that dies takes the entry');

$w->acl_deny('airlock-worker', 'set');
my $pid = $w->start_worker(%c);
ok(wait_log($pid, qr/job twice: redis refused its result .*can't run/),
   'the worker takes it over, past max_deliveries: its result is refused');
is(dead_for($id), 1, 'its dead-letter entry is written');
$w->kill_worker('KILL', $pid);
$w->acl_restore('airlock-worker');

$pid = $w->start_worker(%c);
my $r = $w->wait_result('twice', 60);
is($r && $r->{error}{code}, 'dead_letter',
   'the next delivery stores the dead_letter result') or diag explain $r;
is(pending(), 0, 'and acknowledges the entry');
is(dead_for($id), 1, 'with one dead-letter entry, not two');
is($w->redis('HLEN', 'airlock:jobs:errors'), 0,
   'and nothing left in the errors hash');
$w->kill_worker('TERM', $pid);

# ---- no job_id: killed between the dead-letter entry and the
# acknowledgement

$w->acl_deny('airlock-worker', 'xack');
$pid = $w->start_worker(%c);
$id = $w->add_raw('{"script": "print(1)"}');
ok(wait_log($pid, qr/redis (EXEC )?XACK\/XDEL \S+: /),
   'an envelope with no job_id: its acknowledgement is refused');
is(dead_for($id), 1, 'its dead-letter entry is written');
$w->kill_worker('KILL', $pid);
$w->acl_restore('airlock-worker');

$pid = $w->start_worker(%c);
is(pending(), 0, 'the next delivery acknowledges the entry');
is(dead_for($id), 1, 'with one dead-letter entry, not two');
is($w->redis('HLEN', 'airlock:jobs:errors'), 0,
   'and nothing left in the errors hash');

$w->kill_worker('TERM', $pid);
unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');
