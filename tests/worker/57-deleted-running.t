#!/usr/bin/perl

# An entry deleted from the stream (XDEL, XTRIM) while its job runs,
# its worker then killed: the client is still answered.  The heartbeat's
# claim took such an entry off the pending list (Redis 7 drops a deleted
# entry it is asked to claim), so a worker killed afterwards left the
# job nowhere but in its errors_key record, keyed by an entry id the
# client never sees: no result, no dead-letter entry, nothing any worker
# would find.  Killed before that claim, its next start found the entry
# and dead-lettered it, but without a job_id no result was stored, and
# the client waited for ever.  The delivery record now keeps the job's
# ids, the heartbeat holds such an entry in <errors_key>:held (a lease
# it renews), and whoever finds it left (the lease run out, the entry
# in a pending list) stores an entry_deleted error result under its
# job_id.  One that its worker finishes keeps its own result.

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

plan tests => 17;

sub wait_for {
    my ($cond) = @_;
    for (1 .. 800) {
        return 1 if $cond->();
        sleep 0.025;
    }
    return 0;
}

sub dead_for {
    my ($id) = @_;
    my $dead = $w->redis('XRANGE', 'airlock:jobs:dead', '-', '+');
    return scalar grep { my %f = @{$_->[1]}; $f{entry} eq $id } @$dead;
}

sub pending {
    return $w->redis('XPENDING', 'airlock:jobs', 'airlock-workers')->[0];
}

# a job started by a worker, then its entry deleted
sub start_and_delete {
    my ($job, $script) = @_;
    my $id = $w->add_job(job_id => $job, script => $script);
    wait_for(sub { $w->all_worker_logs =~ /job \Q$job\E \(entry/ })
        or diag $w->all_worker_logs;
    $w->redis('XDEL', 'airlock:jobs', $id);
    return $id;
}

my %c = (visibility_timeout_ms => 300);

# ---- deleted, then its heartbeat runs, then its worker is killed

my $a = $w->start_worker(%c);
my $id = start_and_delete('lost1', "import time\ntime.sleep(30)");
ok(wait_for(sub { pending() == 0 }),
   'the heartbeat takes the deleted entry off the pending list');
$w->kill_worker('KILL', $a);

my $b = $w->start_worker(%c, consumer => 'c2');
my $r = $w->wait_result('lost1', 10);
is($r && $r->{status}, 'error', 'the next worker answers the client')
    or diag $w->all_worker_logs;
is($r && $r->{error}{code}, 'entry_deleted', 'with entry_deleted');
like($r && $r->{error}{message}, qr/deleted from the stream/,
     'which says so');
is($r && $r->{session_id}, 'sess-1', 'under its session');
ok(wait_for(sub { dead_for($id) == 1
                  && $w->redis('HLEN', 'airlock:jobs:errors') == 0 }),
   'the entry is in the dead-letter stream, errors_key is clean');
is($w->redis('ZCARD', 'airlock:jobs:errors:held'), 0, 'nothing held');

# ---- deleted, and its worker finishes it while the other waits

my $c = $w->start_worker(%c, consumer => 'c3');
$id = start_and_delete('kept', "import time\ntime.sleep(1.5)\n"
                                   . "print('kept')");
$r = $w->wait_result('kept', 30);
is($r && $r->{stdout}, "kept\n",
   'a deleted entry whose worker lives keeps its own result');
ok(wait_for(sub { $w->all_worker_logs =~ /job kept: ok/ }),
   'from the worker that ran it');
is(dead_for($id), 0, 'and goes to no dead-letter stream');
ok(wait_for(sub { $w->redis('ZCARD', 'airlock:jobs:errors:held') == 0
                  && $w->redis('HLEN', 'airlock:jobs:errors') == 0 }),
   'nothing held, errors_key is clean');
$w->kill_worker('TERM', $b);
$w->kill_worker('TERM', $c);

# ---- deleted, its worker killed before its heartbeat runs

my $d = $w->start_worker(visibility_timeout_ms => 60000);
$id = start_and_delete('lost2', "import time\ntime.sleep(30)");
$w->kill_worker('KILL', $d);
is(pending(), 1, 'the deleted entry is still pending');

$d = $w->start_worker(visibility_timeout_ms => 60000);
$r = $w->wait_result('lost2', 10);
is($r && $r->{error}{code}, 'entry_deleted',
   'its next start answers the client with entry_deleted');
ok(wait_for(sub { dead_for($id) == 1 && pending() == 0
                  && $w->redis('HLEN', 'airlock:jobs:errors') == 0 }),
   'and dead-letters it, nothing pending, errors_key clean');

$r = $w->run_job(job_id => 'next', script => "print('next')");
is($r && $r->{stdout}, "next\n", 'and runs the next job');
$w->kill_worker('TERM', $d);

is($w->redis('ZCARD', 'airlock:jobs:errors:held'), 0, 'nothing held');
unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');
