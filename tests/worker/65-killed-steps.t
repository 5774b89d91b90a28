#!/usr/bin/perl

# A worker SIGKILLed at each step of a job after it is taken: nothing is
# lost, and a job whose result was stored is never run again.  A proxy
# in front of Redis holds the worker at one command (the delivery
# record, the PUBLISH after the result is stored, the acknowledgement),
# the worker is killed there and started again under the same consumer
# name, which resumes its own pending entry.  Each job has a POST input,
# counted at the upstream: the job taken but not started fetches it
# once, after its restart; one whose result was stored is published and
# acknowledged without running.

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

my @steps = (
    [ 'taken', '\$4\r\nHSET\r\n', 0 ],
    [ 'stored', 'PUBLISH', 1 ],
    [ 'published', 'XDEL', 1 ],
);

plan tests => 6 * @steps + 1;

sub wait_for {
    my ($cond) = @_;
    for (1 .. 400) {
        return 1 if $cond->();
        sleep 0.025;
    }
    return 0;
}

sub posts {
    my ($text) = @_;
    return scalar grep { ($_->{method} // '') eq 'POST'
                         && ($_->{body} // '') =~ /\Q$text\E/ }
                  $t->echo_requests(8081);
}

for my $s (@steps) {
    my ($step, $re, $stored) = @$s;
    my $job = "kill-$step";

    my $sub = $w->redis_socket;
    my $chan = "response:$job";
    print {$sub} "*2\r\n\$9\r\nSUBSCRIBE\r\n\$" . length($chan)
                 . "\r\n$chan\r\n";
    IO::Select->new($sub)->can_read(5) or die "SUBSCRIBE: no answer";
    Airlock::Worker::_resp_read($sub);

    my ($port, $held) = $w->hold_proxy($re);
    my $pid = $w->start_worker(redis_port => $port);
    $w->add_job(job_id => $job, script => "print('$step')",
        blueprint => { inputs => [ { name => 'note', route => 'annotate',
                                     body => { text => "kill $step" } } ] });
    ok(wait_for($held), "$step: the worker is held there");
    is(defined $w->redis('GET', "result:$job") ? 1 : 0, $stored,
       "$step: the result is " . ($stored ? '' : 'not ') . 'stored');
    $w->kill_worker('KILL', $pid);

    $pid = $w->start_worker;
    my $r = $w->wait_result($job, 60);
    is($r && $r->{stdout}, "$step\n", "$step: the job has its result");
    my @msg;
    while (IO::Select->new($sub)->can_read(@msg ? 0.2 : 5)) {
        push @msg, Airlock::Worker::_resp_read($sub);
    }
    ok(scalar(@msg) >= 1, "$step: published");
    is(posts("kill $step"), 1, "$step: its POST input reached the upstream once");
    ok(wait_for(sub {
           $w->redis('XLEN', 'airlock:jobs') == 0
           && $w->redis('HLEN', 'airlock:jobs:errors') == 0
       }), "$step: the entry and its records are gone");
    $w->kill_worker('TERM', $pid);
    close $sub;
}

unlike($w->all_worker_logs,
       qr/^\S+ \S+ (alert|emerg):|Sanitizer|runtime error/m,
       'no alerts or sanitizer reports in the log');

1;
