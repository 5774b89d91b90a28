#!/usr/bin/perl
# A quarantine sent to Alertmanager is kept (STATE/lifts) to resolve if
# nginx makes its deny zone anew; a zone line lifts those whose
# quarantine_until is after its time.  The two times are of two clocks:
# the one alertd read the quarantine by, and the one it read the zone
# line by.  A step of the wall clock between the two, while alertd ran
# or while it was stopped, compared them as if they were one: after a
# step forward a quarantine still running was taken to have ended, and
# went on firing in Alertmanager for its hour after the client was let
# in again; after a step back one that had ended was resolved again.
# alertd keeps the clock each was read by, with the quarantine in
# STATE/lifts (within one boot), and compares the two on one clock.
#
# The steps are made to alertd's wall clock only (tests/alertd/lib/
# clock.c, LD_PRELOAD); the test stamps the lines as nginx would, by
# the clock of the moment.  The Alertmanager is the receiver fixture.
# Nothing is timed: each quarantine is an hour, each step two; what is
# not sent is checked once an alert queued after it for the same sink
# (sinks send in queue order) is delivered.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;
use Time::HiRes qw(time);
use Time::Local qw(timegm);

my $t = AlertdTest->new;
my $step = 2 * 3600;
my $hour = 3600;

my $r = $t->clock_setup(alertmanager => 1,
                        secret => 'lift-test-secret-FAKE-0123456789abcdef');

sub at { AlertdTest::now_rfc3339(@_) }
sub epoch {
    my ($s) = @_;
    my ($y, $mo, $d, $h, $mi, $sec) =
        ($s // '') =~ /^(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)/ or return 0;
    return timegm($sec, $mi, $h, $d, $mo - 1, $y);
}
# the body posted for alert id, answered 2xx
sub posted {
    my ($id) = @_;
    for my $rec ($t->records($r)) {
        next if $rec->{status} !~ /^2/;
        my $a = ref $rec->{json} eq 'ARRAY' ? $rec->{json}[0] : undef;
        return $a if $a && ($a->{annotations}{id} // '') eq $id;
    }
    return undef;
}
# a quarantine of an hour stamped $at; its id
sub quarantine {
    my ($reason, $at) = @_;
    my $id = $t->alert(kind => 'quarantine', severity => 'critical',
                       client => 'agent', reason => $reason,
                       time => at($at), quarantine_until => at($at + $hour));
    ok($t->wait_for(sub { posted($id) }), "the quarantine ($reason) is "
       . 'posted');
    return $id;
}
# nginx makes its zone anew at $at, then raises an alert; its id
sub zone_then_mark {
    my ($at, $reason) = @_;
    my ($mark, $line) = $t->alert_line(client => 'agent', reason => $reason,
                                       time => at($at));
    $t->append(qq({"type":"zone","time":"${\ at($at)}","zone":"airlock",)
               . qq("state":"new"}\n) . $line);
    ok($t->wait_for(sub { posted($mark) }),
       "an alert after the zone line ($reason) is posted");
}
sub lifted {
    my ($what, $id, $zone, $start) = @_;
    my $a = posted("$id~lifted");
    ok($a, "$what: lifted with the zone, resolved in Alertmanager");
    $a //= {};
    ok(abs(epoch($a->{endsAt}) - $zone) < 60, "$what: ends when the zone "
       . 'was made')
        or diag("endsAt " . ($a->{endsAt} // 'none') . ", zone " . at($zone));
    ok(abs(epoch($a->{startsAt}) - $start) < 60, "$what: starts when it "
       . 'began, on the clock of the zone line')
        or diag("startsAt " . ($a->{startsAt} // 'none') . ", began "
                . at($start));
}


# 1. alertd runs: a quarantine read, the clock stepped two hours forward,
# the zone made anew a moment later: the quarantine ran for an hour

my $t0 = time;
my $q1 = quarantine('running', $t0);
$t->clock_step($step);
my $z1 = time + $step;
zone_then_mark($z1, 'mark1');
lifted('stepped while alertd runs', $q1, $z1, $t0 + $step);


# 2. the same, the step while alertd is stopped: STATE/lifts keeps the
# quarantine's clock

my $t1 = time + $step;
my $q2 = quarantine('stopped', $t1);
is($t->stop($t->alertd_pid), 0, 'alertd stops');
$t->clock_step(2 * $step);
$t->clock_alertd;
my $z2 = time + 2 * $step;
zone_then_mark($z2, 'mark2');
lifted('stepped while alertd was stopped', $q2, $z2, $t1 + $step);


# 3. a quarantine that began ninety minutes ago, ended half an hour ago;
# the clock stepped two hours back while alertd was stopped, and the
# zone made anew: nothing to lift

my $t2 = time + 2 * $step - 90 * 60;
my $q3 = quarantine('ended', $t2);
is($t->stop($t->alertd_pid), 0, 'alertd stops again');
$t->clock_step($step);
$t->clock_alertd;
zone_then_mark(time + $step, 'mark3');
ok(!posted("$q3~lifted"), 'the quarantine that ended before the step '
   . 'back is not resolved again');

$t->done;
