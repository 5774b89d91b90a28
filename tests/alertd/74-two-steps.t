#!/usr/bin/perl
# Lines nginx wrote before two steps of the wall clock, read by alertd
# after both: a quarantine and the first alert of a group, written while
# the journal could not be read (an I/O error), then the clock stepped
# two hours forward, a round read it, and stepped two hours forward
# again, a round read that too, before the journal could be read again.
# Their times are on the clock before the first step.  alertd kept only
# the last step and took them on the clock between the two: two hours
# off, the group's window had ended long ago, so the next repeat,
# stamped after the steps, was sent on its own, and the quarantine was
# sent to Alertmanager starting and ending two hours early.  alertd
# keeps the clock before each of the last steps, and takes a line on
# the one it was stamped by.  The same for a step while alertd was
# stopped and one after it started, before it could read the journal;
# and for nginx's zone line, which lifts a quarantine sent before: taken
# on the clock between the steps, the quarantine was resolved two hours
# early (at its start, which cannot be later).
#
# The steps are made to alertd's wall clock only (tests/alertd/lib/
# clock.c, LD_PRELOAD); the journal read fails through the fault
# injector (lib/fault.c), loaded with it.  The test stamps the lines as
# nginx would.  Nothing is timed: the repeat interval is an hour, the
# quarantine three, each step two; each step is waited for in the log;
# what is not sent is checked once an alert queued after it for the
# same sink (sinks send in queue order) is delivered.

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
                        fault => ['pread', '/journal/airlock.journal', 5],
                        secret => 'steps-test-secret-FAKE-0123456789abcdef');

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
# alertd's wall clock set $ahead s ahead, and a round that read it
my $steps = 0;
sub step_to {
    my ($ahead, $what) = @_;
    my $re = qr/\bwarn(?:ing)?: the wall clock stepped forward/;
    $t->clock_step($ahead);
    ok($t->settle, "a round after $what");
    $steps++;
    ok($t->wait_for(sub { $t->log_count($re) >= $steps }),
       "the log says $what");
}
# the lines of the quarantine and the group stamped $at, and the
# repeat and a mark stamped after the steps ($ahead): read and checked
sub checks {
    my ($what, $q, $first, $at, $ahead, $by) = @_;
    my ($repeat, $l3) = line("g-$what", time + $ahead);
    my ($mark, $l4) = line("mark-$what", time + $ahead);
    $t->append($l3 . $l4);

    ok($t->wait_for(sub { posted($mark) }), "$what: the mark is sent");
    ok(posted($first), "$what: the first of the group is sent");
    ok(!posted($repeat), "$what: the repeat stamped after the steps is "
       . 'folded, not sent on its own');

    my $a = posted($q) // {};
    my ($s, $e) = (epoch($a->{startsAt}), epoch($a->{endsAt}));
    ok(abs($s - ($at + $by)) < 60, "$what: the quarantine starts when it "
       . 'was stamped, on the clock after the steps')
        or diag("startsAt " . ($a->{startsAt} // 'none') . ", stamped "
                . at($at));
    ok(abs($e - ($at + $by + $long)) < 60, "$what: it ends the three "
       . 'hours the quarantine lasts after that')
        or diag("endsAt " . ($a->{endsAt} // 'none'));

    my $g = $t->group_of($first);
    ok($g && abs($g->{start} - int(($at + $by) * 1000)) < 60 * 1000,
       "$what: the group's window starts when the first was stamped, on "
       . 'the clock after the steps')
        or diag("start " . ($g ? $g->{start} : 'none'));
    is($g && $g->{count}, 1, "$what: the repeat folded into it");
}


# 1. alertd runs: the lines written, two steps, then read

my ($warm, $lw) = line('warm', time);
$t->append($lw);
ok($t->wait_for(sub { posted($warm) }), 'an alert before the steps is sent');
ok($t->settle, 'a round read the clock before the steps');

$t->fault_on;
my $t0 = time;
my ($q, $l1) = quarantine('q', $t0);
my ($first, $l2) = line('g-running', $t0);
$t->append($l1 . $l2);
ok($t->settle, 'a round did not read them');
ok(!posted($first), 'the journal cannot be read');

step_to($step, 'the first step');
step_to(2 * $step, 'the second step');
$t->fault_off;
checks('running', $q, $first, $t0, 2 * $step, 2 * $step);


# 2. the lines written while alertd is stopped, a step before it
# starts, another before it reads them

is($t->stop($t->alertd_pid), 0, 'alertd stops');

my $t1 = time + 2 * $step;
my ($q2, $l5) = quarantine('q2', $t1);
my ($first2, $l6) = line('g-stopped', $t1);
$t->append($l5 . $l6);

$t->fault_on;
$t->clock_step(3 * $step);
$t->clock_alertd;
ok($t->settle, 'a round after the start');
$steps++;
ok($t->log_has(qr/stepped forward by [\d.]+ s while alertd was stopped/),
   'the log says the clock stepped while alertd was stopped');
ok(!posted($first2), 'the journal cannot be read after the start');

step_to(4 * $step, 'the step after the start');
$t->fault_off;
checks('stopped', $q2, $first2, $t1, 4 * $step, 2 * $step);



# 3. a quarantine read, nginx made its zone anew while the journal could
# not be read, two steps, then the zone line read: the quarantine is
# resolved when the zone was made, on the clock after the steps

my $t2 = time + 4 * $step;
my ($q3, $l9) = quarantine('q3', $t2 - 1800);
$t->append($l9);
ok($t->wait_for(sub { posted($q3) }), 'the quarantine to lift is sent');

$t->fault_on;
$t->append(qq({"type":"zone","time":"${\ at($t2)}","zone":"airlock",)
           . qq("state":"new"}\n));
ok($t->settle, 'a round did not read the zone line');
step_to(5 * $step, 'the first step before the zone line is read');
step_to(6 * $step, 'the second step before the zone line is read');
$t->fault_off;

my ($mark3, $l10) = line('mark-zone', time + 6 * $step);
$t->append($l10);
ok($t->wait_for(sub { posted($mark3) }), 'zone: the mark is sent');
my $lift = posted("$q3~lifted");
ok($lift, 'zone: the quarantine is lifted');
$lift //= {};
ok(abs(epoch($lift->{endsAt}) - ($t2 + 2 * $step)) < 60, 'zone: it ends '
   . 'when the zone was made, on the clock after the steps')
    or diag("endsAt " . ($lift->{endsAt} // 'none') . ", zone " . at($t2));
ok(abs(epoch($lift->{startsAt}) - ($t2 - 1800 + 2 * $step)) < 60,
   'zone: it starts when the quarantine began, on that clock')
    or diag("startsAt " . ($lift->{startsAt} // 'none'));

my @ids = map { $_->{json}[0]{annotations}{id} }
          grep { $_->{status} =~ /^2/ && ref $_->{json} eq 'ARRAY' }
          $t->records($r);
is(scalar(@ids), scalar(AlertdTest::uniq(@ids)), 'every id once');

$t->done;
