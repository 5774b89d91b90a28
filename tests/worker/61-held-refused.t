#!/usr/bin/perl

# An entry deleted from the stream while its job runs, at a time Redis
# refuses writes for memory (maxmemory, noeviction), is still held: its
# job is answered after its worker dies.  The heartbeat's script that
# holds such an entry in <errors_key>:held (ZADD, then XACK) was refused
# under maxmemory, so the entry stayed pending, unrefreshed; another
# worker's XAUTOCLAIM, which Redis runs under maxmemory, took it off the
# pending list past the visibility timeout, its own ZADD (aw_hold()) was
# refused too, and with both workers killed before Redis took a write
# again the job was nowhere: no result, no dead-letter entry, nothing
# any worker would find, the client waiting for ever.  The two scripts
# that hold an entry now run under maxmemory (flags=allow-oom: one
# small member).

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

plan tests => 8;

sub wait_for {
    my ($cond) = @_;
    for (1 .. 400) {
        return 1 if $cond->();
        sleep 0.025;
    }
    return 0;
}

sub pending {
    return $w->redis('XPENDING', 'airlock:jobs', 'airlock-workers')->[0];
}

my %c = (visibility_timeout_ms => 300);

my $a = $w->start_worker(%c);
my $id = $w->add_job(job_id => 'oom1', script => "import time\n"
                                                  . "time.sleep(30)");
wait_for(sub { $w->worker_log($a) =~ /job oom1 \(entry/ })
    or diag $w->all_worker_logs;

# another worker, connected first (XGROUP CREATE is refused under
# maxmemory); then Redis refuses writes for memory, the entry is deleted
my $b = $w->start_worker(%c, consumer => 'c2');
$w->redis('CONFIG', 'SET', 'maxmemory', '1');
$w->redis('XDEL', 'airlock:jobs', $id);

ok(wait_for(sub { $w->redis('ZCARD', 'airlock:jobs:errors:held') == 1 }),
   'under maxmemory the heartbeat still holds the deleted entry');
is(pending(), 0, 'off the pending list');
$w->kill_worker('KILL', $a);

# the other worker, while Redis still refuses writes, killed too
ok(wait_for(sub { $w->worker_log($b) =~ /redis \w+: OOM/ }),
   'another worker runs into the refusal');
$w->kill_worker('KILL', $b);

$w->redis('CONFIG', 'SET', 'maxmemory', '0');
my $c = $w->start_worker(%c, consumer => 'c3');
my $r = $w->wait_result('oom1', 10);
is($r && $r->{error}{code}, 'entry_deleted',
   'once Redis takes writes, a worker answers the client');
my $dead = $w->redis('XRANGE', 'airlock:jobs:dead', '-', '+');
is(scalar(grep { my %f = @{$_->[1]}; $f{entry} eq $id } @$dead), 1,
   'and dead-letters the entry once');
ok(wait_for(sub { $w->redis('HLEN', 'airlock:jobs:errors') == 0 }),
   'errors_key is clean');
is($w->redis('ZCARD', 'airlock:jobs:errors:held'), 0, 'nothing held');
$w->kill_worker('TERM', $c);

unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');
