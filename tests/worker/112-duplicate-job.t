#!/usr/bin/perl

# Two entries with one job_id share its result key, result:<job_id>,
# and its channel.  The second used to find the first's result stored
# and publish it as its own (its client read another job's result), or,
# while the first ran on another worker, to run and store its own first
# (the first's client read the second's).  An entry now claims its
# job_id before its job runs, in one script with the look at the result
# key: one whose job_id is another entry's, stored or in flight, is not
# run, stores and publishes nothing, and goes to the dead-letter stream
# as duplicate_job.  The first is held by a Redis proxy as it stores its
# result, so its job is surely in flight while the second comes.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use IO::Select;
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

my $dir = $t->testdir;

sub wait_for {
    my ($cond) = @_;
    for (1 .. 1200) {
        return 1 if $cond->();
        sleep 0.05;
    }
    return 0;
}

# the dead-letter entries whose error matches
sub dead {
    my ($re) = @_;
    return grep { my %f = @{$_->[1]}; ($f{error} // '') =~ $re }
                @{$w->redis('XRANGE', 'airlock:jobs:dead', '-', '+')};
}

sub subscribe {
    my ($chan) = @_;
    my $sub = $w->redis_socket;
    print {$sub} "*2\r\n\$9\r\nSUBSCRIBE\r\n\$" . length($chan)
                 . "\r\n$chan\r\n";
    IO::Select->new($sub)->can_read(5) or die "SUBSCRIBE: no answer";
    Airlock::Worker::_resp_read($sub);
    return $sub;
}

# the messages a subscriber has, once its publisher is done
sub messages {
    my ($sub) = @_;
    my @msg;
    while (IO::Select->new($sub)->can_read(0.5)) {
        push @msg, Airlock::Worker::_resp_read($sub);
    }
    return @msg;
}

# ---- a job_id whose result is stored ---------------------------------------

my $sub = subscribe('response:dup');
my $c1 = $w->start_worker(consumer => 'c1', workdir => "$dir/work-1",
                          name => 'c1.conf');
$w->add_job(job_id => 'dup', session_id => 's1', script => "print('one')");
my $r = $w->wait_result('dup', 60);
is($r && $r->{stdout}, "one\n", 'the first job has its result');
is($w->pending_after, 0, '... and is acknowledged');
messages($sub);

my $second = $w->add_job(job_id => 'dup', session_id => 's2',
                         script => "print('two')");
ok(wait_for(sub { dead(qr/duplicate_job/) }),
   'a second entry with its job_id: dead-lettered as duplicate_job');
like(join('', map { +{ @{$_->[1]} }->{error} } dead(qr/duplicate_job/)),
     qr/result:dup holds another entry's result/, '... saying why');
is($w->pending_after, 0, '... and acknowledged');
$r = $w->result('dup');
is(($r && $r->{stdout}) . ' ' . ($r && $r->{session_id}), "one\n s1",
   'the first result is left as it is');
is(scalar(messages($sub)), 0, 'and not published to the second\'s client');
$w->kill_worker('TERM', $c1);
close $sub;

# ---- a job_id in flight ----------------------------------------------------

$sub = subscribe('response:fly');
my ($port, $held) =
    $w->hold_proxy(q{redis\.call\('SET', KEYS\[1\], ARGV\[1\], 'NX'});
my $c2 = $w->start_worker(consumer => 'c2', redis_port => $port,
                          workdir => "$dir/work-2", name => 'c2.conf');
my $first = $w->add_job(job_id => 'fly', session_id => 's1',
                        script => "print('first')");
ok(wait_for($held), 'the first job ran, held as it stores its result');

my $c3 = $w->start_worker(consumer => 'c3', workdir => "$dir/work-3",
                          name => 'c3.conf');
$w->add_job(job_id => 'fly', session_id => 's2', script => "print('second')");
ok(wait_for(sub { dead(qr/duplicate_job: job_id fly is entry \Q$first\E/) }),
   'a second entry with its job_id, while it runs: dead-lettered')
    or diag $w->all_worker_logs;
is($w->redis('GET', 'result:fly'), undef, '... nothing stored under it');
is(scalar(messages($sub)), 0, '... nor published');

# the first's worker dies; started again, it finishes its own entry
$w->kill_worker('KILL', $c2);
$c2 = $w->start_worker(consumer => 'c2', workdir => "$dir/work-2",
                       name => 'c2b.conf');
$r = $w->wait_result('fly', 60);
is(($r && $r->{stdout}) . ' ' . ($r && $r->{session_id}), "first\n s1",
   'the first job gets its own result');

$w->kill_worker('TERM', $_) for $c2, $c3;
unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');
