#!/usr/bin/perl

# What is published on response:<job_id> is the stored result, byte for
# byte, whoever stored it.  A result found stored (before the job ran,
# or while it ran: another entry of the same job_id, or something else
# than a worker) is published as GET read it; the worker passed it on
# as a C string, so a value with a NUL byte in it (no worker's result
# has one, docs/jobs.md) was published cut short at the NUL, and a
# client reading the message got another result than the one stored.

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
$w->start_worker;

plan tests => 6;

sub subscribe {
    my ($chan) = @_;
    my $s = $w->redis_socket;
    print {$s} "*2\r\n\$9\r\nSUBSCRIBE\r\n\$" . length($chan)
               . "\r\n$chan\r\n";
    Airlock::Worker::_resp_read($s);
    return $s;
}

# the message published on $s, or undef after $timeout seconds
sub message {
    my ($s, $timeout) = @_;
    my $m;
    eval {
        local $SIG{ALRM} = sub { die "timeout\n" };
        alarm $timeout;
        $m = Airlock::Worker::_resp_read($s);
        alarm 0;
    };
    alarm 0;
    return ref $m eq 'ARRAY' ? $m->[2] : undef;
}

sub wait_acked {
    for (1 .. 200) {
        my $p = $w->redis('XPENDING', 'airlock:jobs', 'airlock-workers');
        return 1 if ref $p && $p->[0] == 0
                    && $w->redis('XLEN', 'airlock:jobs') == 0;
        sleep 0.05;
    }
    return 0;
}

# ---- stored before the job runs -------------------------------------------

# the entry's own (its record, which the script that stores a result
# writes with it: the entry's id given, so it is there before the entry
# is read; a result of another entry's is not published, 112-duplicate-job.t)
my $stored = qq({"job_id":"nul1","stdout":"a\0b","status":"ok"});
$w->redis('SET', 'result:nul1', $stored);
$w->redis('HSET', 'airlock:jobs:errors', '1-1:done', '1');

my $s = subscribe('response:nul1');
$w->redis('XADD', 'airlock:jobs', '1-1', 'job',
          $w->envelope(job_id => 'nul1', script => "print('not run')\n"));

is(message($s, 30), $stored, 'a result found stored is published whole');
ok(wait_acked(), 'the entry is done');

# ---- stored while the job runs ---------------------------------------------

$stored = qq({"job_id":"nul2","stdout":"c\0d","status":"ok"});
$s = subscribe('response:nul2');
$w->add_job(job_id => 'nul2', script => "import time\ntime.sleep(2)\n");

my $running = 0;
for (1 .. 400) {
    $running = 1, last if $w->worker_log =~ /job nul2 \(entry/;
    sleep 0.025;
}
ok($running, 'the job runs');
$w->redis('SET', 'result:nul2', $stored);

is(message($s, 30), $stored,
   'a result stored while the job ran is published whole');
ok(wait_acked(), 'the entry is done');
is($w->redis('GET', 'result:nul2'), $stored, 'the stored result is kept');
