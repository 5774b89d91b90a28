#!/usr/bin/perl

# A Redis that takes the connection and then fails it at once is retried
# with a growing backoff (100 ms doubled up to 6.4 s), not ~10 times a
# second for ever.  The backoff went back to 100 ms at every connection
# that got as far as XGROUP CREATE (the worker's own handshake): one
# that answered AUTH and XGROUP and then closed at the first read (a
# proxy or a Redis that drops its clients) was connected to again 100 ms
# later, every time.  It now starts again from 100 ms only once Redis has
# answered a read.  Each way of failing is a fixture that is not Redis
# (redis-fake.pl), which counts the connections it accepts: closed at
# once, AUTH refused, LOADING, and the handshake answered then closed.
#
# Counts, not timings: with the backoff, any 6 s hold at most 6 attempts
# however slow the machine (the sleeps alone add up to 6.3 s); a loaded
# machine only makes fewer.  Without it, about 40 to 60.

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
$t->redis_args;     # the worker's Redis password file, as start_redis

my @modes = qw(close auth loading group);
my (%count, %pid);

plan tests => 3 * @modes;

sub connections { -s $count{$_[0]} || 0 }

for my $m (@modes) {
    my $port = $t->port("fake-$m");
    $count{$m} = "$t->{testdir}/fake-$m.count";
    $t->run_daemon($^X, "$t->{top}/tests/worker/redis-fake.pl", $port, $m,
                   $count{$m});
    $t->wait_for_port("fake-$m") or die "redis-fake.pl $m did not start";
}

# the fixture took the port's first (probing) connection
my %probe = map { $_ => connections($_) } @modes;

for my $m (@modes) {
    $pid{$m} = $w->start_worker(wait => 0, name => "worker-$m.conf",
                                redis_port => $t->port("fake-$m"),
                                consumer => "c-$m",
                                workdir => "$t->{testdir}/work-$m",
                                cgroup_name => "airlock-test-$$-$m");
}

# each worker has made its first attempt
for (1 .. 2400) {
    last unless grep { connections($_) <= $probe{$_} } @modes;
    sleep 0.025;
}

my %c0 = map { $_ => connections($_) } @modes;
sleep 6;
my %c1 = map { $_ => connections($_) } @modes;

for my $m (@modes) {
    my $n = $c1{$m} - $c0{$m};
    ok($n <= 12, "$m: $n connections in 6 s, backed off (at most 12)");
}

# and it goes on trying: a few more attempts come
for my $m (@modes) {
    my $ok = 0;
    for (1 .. 2400) {
        $ok = connections($m) - $probe{$m} >= 5 and last;
        sleep 0.025;
    }
    ok($ok, "$m: the worker keeps connecting ("
       . (connections($m) - $probe{$m}) . ' attempts)');
}

for my $m (@modes) {
    my $log = $w->worker_log($pid{$m});
    unlike($log, qr/emerg|alert|AddressSanitizer|runtime error/,
           "$m: nothing alarming in the worker's log");
}
