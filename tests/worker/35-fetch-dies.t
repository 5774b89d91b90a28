#!/usr/bin/perl

# The fetch child dies with its worker.  It fetches a job's inputs one
# after another as the airlock-worker user; one that outlived a SIGKILLed
# worker went on sending the rest of them (re-parented to pid 1), for a
# job the next worker runs again.  Nor does it keep the worker's SIGTERM
# handler: a SIGTERM ends it.

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

plan tests => 7;

my $conf = $t->testdir . '/worker.conf';
my $fetcher = getpwnam('airlock-worker');

# processes started from this test's worker.conf: the worker, its
# launcher, its heartbeat and its fetch, [pid, uid, name]
sub procs {
    my @p;
    for my $d (glob('/proc/[0-9]*')) {
        my $cmd = Airlock::Worker::_slurp("$d/cmdline") // next;
        next unless (grep { $_ eq $conf } split /\0/, $cmd);
        my $st = Airlock::Worker::_slurp("$d/status") // '';
        my ($uid) = $st =~ /^Uid:\s+(\d+)/m;
        my ($name) = $st =~ /^Name:\s+(\S+)/m;
        push @p, [ $d =~ s{/proc/}{}r, $uid, $name // '' ];
    }
    return @p;
}

# the fetch: the worker itself runs as airlock-worker too (aw_priv.c)
sub fetch_pid {
    for (1 .. 400) {
        my ($f) = grep { $_->[1] == $fetcher && $_->[2] eq 'aw-fetch' }
                  procs();
        return $f->[0] if $f;
        sleep 0.025;
    }
    return undef;
}

sub slow_requests {
    return scalar grep { $_->{path} eq '/api/slow' } $t->echo_requests(8081);
}

sub wait_slow_requests {
    my ($n) = @_;
    for (1 .. 400) {
        last if slow_requests() >= $n;
        sleep 0.025;
    }
    return slow_requests();
}

my $inputs = { inputs => [ map { { name => "s$_", route => 'slow' } }
                               1 .. 4 ] };

# ---- SIGKILL of the worker during the first fetch --------------------------

my $a = $w->start_worker(consumer => 'c1');
$w->add_job(job_id => 'orphan', script => 'print(1)', blueprint => $inputs);
my $f = fetch_pid();
ok($f, 'the fetch runs as airlock-worker');
is(wait_slow_requests(1), 1, 'its first input reached the upstream');

$w->kill_worker('KILL', $a);
# (they go at once; the bound is for a loaded machine, and a fetch left
# running is what the check below sees)
my @left;
for (1 .. 1200) {
    @left = procs();
    last unless @left;
    sleep 0.025;
}
is(join(' ', map { "$_->[0] (uid $_->[1])" } @left), '',
   'no process of the worker left after its SIGKILL');

# each input takes 1.5 s: a fetch still running would have sent two more
sleep 3.5;
is(slow_requests(), 1, 'no later input reached the upstream');

# ---- SIGTERM ends the fetch ------------------------------------------------

my $b = $w->start_worker(consumer => 'c2');
$w->add_job(job_id => 'term', script => 'print(1)', blueprint => $inputs);
$f = fetch_pid();
wait_slow_requests(2);
kill 'TERM', $f;
my $r = $w->wait_result('term', 30);
my $e = $r && $r->{error} ? $r->{error} : { code => '', message => '' };
ok($e->{code} eq 'fetch_failed' && $e->{message} =~ /signal 15\b/,
   "a SIGTERMed fetch ends the job: $e->{message}")
    or diag explain $r;
is(slow_requests(), 2, 'and sends nothing more');

$w->kill_worker('TERM', $b);
unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');
