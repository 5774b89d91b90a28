#!/usr/bin/perl
# Lines nginx wrote before a step of the wall clock, read by alertd
# after it: a quarantine and the first alert of a group, written just
# before NTP stepped the clock two hours forward and read by the round
# after the step, or written while alertd was stopped, before a step,
# and read when it starts again.  Their times are on the clock before
# the step.  Taken on the clock after it, the group's window was two
# hours in the past and ended at once, so the next repeat, stamped after
# the step, was sent on its own; and the quarantine was sent to
# Alertmanager starting two hours early and ending as much early (two
# repeat intervals after the send), while nginx, which times it on its
# monotonic clock, still keeps the client out.  alertd tells a line
# stamped by the clock before the last step from one stamped after it
# (the former is older than the last round before the step, the latter
# never is) and takes it on that clock.
#
# The steps are made to alertd's wall clock only (tests/alertd/lib/
# clock.c, LD_PRELOAD); the test stamps the lines as nginx would, by the
# clock before or after the step.  The Alertmanager is the receiver
# fixture.  Nothing is timed: the repeat interval is an hour, the
# quarantine three, each step two; what is not sent is checked once an
# alert queued after it for the same sink (sinks send in queue order)
# is delivered.

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
my $long = 3 * 3600;

my $r = $t->clock_setup(alertmanager => 1,
                        secret => 'stamp-test-secret-FAKE-0123456789abcdef');

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
sub line {
    my ($reason, $at, %f) = @_;
    return $t->alert_line(client => 'agent', reason => $reason,
                          time => at($at), %f);
}
sub quarantine {
    my ($reason, $at) = @_;
    return line($reason, $at, kind => 'quarantine', severity => 'critical',
                quarantine_until => at($at + $long));
}
# the quarantine stamped $at by the clock before a step of $by: it
# starts and ends when nginx's stepped clock says
sub moved {
    my ($what, $a, $at, $by) = @_;
    $a //= {};
    my ($s, $e) = (epoch($a->{startsAt}), epoch($a->{endsAt}));
    ok(abs($s - ($at + $by)) < 60, "$what: starts when it was stamped, "
       . "on the clock after the step")
        or diag("startsAt " . ($a->{startsAt} // 'none') . ", stamped "
                . at($at));
    ok(abs($e - ($at + $by + $long)) < 60, "$what: ends the three hours "
       . "the quarantine lasts after that")
        or diag("endsAt " . ($a->{endsAt} // 'none') . ", until "
                . at($at + $long));
}
sub window_moved {
    my ($what, $id, $at) = @_;
    my $g = $t->group_of($id);
    ok($g && abs($g->{start} - int($at * 1000)) < 60 * 1000,
       "$what: its window starts when the first was stamped, on the "
       . "clock after the step")
        or diag("start " . ($g ? $g->{start} : 'none') . ", stamped at "
                . int(($at - $step) * 1000));
    is($g && $g->{count}, 1, "$what: the repeat folded into it");
}


# 1. alertd runs: a round before the step, the lines read after it

my ($warm, $lw) = line('warm', time);
$t->append($lw);
ok($t->wait_for(sub { posted($warm) }), 'an alert before the step is sent');
ok($t->settle, 'a round read the clock before the step');

$t->clock_step($step);
my $t0 = time;
my ($q, $l1) = quarantine('q', $t0);
my ($first, $l2) = line('g', $t0);
$t->append($l1 . $l2);
my ($repeat, $l3) = line('g', time + $step);
my ($mark, $l4) = line('mark', time + $step);
$t->append($l3 . $l4);

ok($t->wait_for(sub { posted($mark) }), 'an alert after the step is sent');
ok(posted($first), 'the first of the group is sent');
ok(!posted($repeat), 'the repeat stamped after the step is folded, not '
   . 'sent on its own');
moved('the quarantine', posted($q), $t0, $step);
window_moved('the group', $first, $t0 + $step);
my $s = epoch((posted($first) // {})->{startsAt});
ok(abs($s - ($t0 + $step)) < 60, 'the first starts when it was stamped, on '
   . 'the clock after the step')
    or diag("startsAt " . ((posted($first) // {})->{startsAt} // 'none'));


# 2. written while alertd is stopped, the clock stepped before it starts

is($t->stop($t->alertd_pid), 0, 'alertd stops');

my $t1 = time + $step;
my ($q2, $l5) = quarantine('q2', $t1);
my ($first2, $l6) = line('g2', $t1);
$t->append($l5 . $l6);

$t->clock_step(2 * $step);
$t->clock_alertd;

my ($repeat2, $l7) = line('g2', time + 2 * $step);
my ($mark2, $l8) = line('mark2', time + 2 * $step);
$t->append($l7 . $l8);

ok($t->wait_for(sub { posted($mark2) }),
   'an alert after the restart is sent');
ok(posted($first2), 'the first of the group read at the start is sent');
ok(!posted($repeat2), 'the repeat stamped after the step is folded, not '
   . 'sent on its own');
moved('the quarantine read at the start', posted($q2), $t1, $step);
window_moved('the group read at the start', $first2, $t1 + $step);
like($t->alertd_log, qr/\bwarn(?:ing)?:\ the\ wall\ clock\ stepped\ forward
                        \ by\ (?:7199\.9\d\d|72\d\d\.\d{3})\ s\ while
                        \ alertd\ was\ stopped/x,
     'the log says the clock stepped while alertd was stopped');

my @ids = map { $_->{json}[0]{annotations}{id} }
          grep { $_->{status} =~ /^2/ && ref $_->{json} eq 'ARRAY' }
          $t->records($r);
ok(scalar(@ids) >= 6, 'the alerts are posted');
is(scalar(@ids), scalar(AlertdTest::uniq(@ids)), 'every id once');

$t->done;
