#!/usr/bin/perl
# Lines nginx wrote before a step of the wall clock that alertd told
# while it ran, still unread when alertd stopped (the journal could not
# be read, an I/O error) and read after it started again: a quarantine
# and the first alert of a group.  Their times are on the clock before
# the step.  alertd kept the steps it told in memory only: started again
# in the same boot, it took them on the clock after the step, two hours
# off, so the group's window had ended long ago and the next repeat was
# sent on its own, and the quarantine was sent to Alertmanager starting
# and ending two hours early.  The state saves the last steps with its
# clock ("steps"), and a start in the same boot tells those lines.
#
# The steps are made to alertd's wall clock only (tests/alertd/lib/
# clock.c, LD_PRELOAD); the journal read fails through the fault
# injector (lib/fault.c), loaded with it.  Nothing is timed: the repeat
# interval is an hour, the quarantine three, the step two; the step is
# waited for in the log; what is not sent is checked once an alert
# queued after it for the same sink (sinks send in queue order) is
# delivered.

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
                        secret => 'restart-test-secret-FAKE-0123456789ab');

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

my ($warm, $lw) = line('warm', time);
$t->append($lw);
ok($t->wait_for(sub { posted($warm) }), 'an alert before the step is sent');
ok($t->settle, 'a round read the clock before the step');

$t->fault_on;
my $t0 = time;
my ($q, $l1) = line('q', $t0, kind => 'quarantine', severity => 'critical',
                    quarantine_until => at($t0 + $long));
my ($first, $l2) = line('g', $t0);
$t->append($l1 . $l2);
ok($t->settle, 'a round did not read them');

$t->clock_step($step);
ok($t->settle, 'a round after the step');
ok($t->log_has(qr/\bwarn(?:ing)?: the wall clock stepped forward/),
   'the log says the step');
ok(!posted($first), 'the journal cannot be read');

is($t->stop($t->alertd_pid), 0, 'alertd stops');
is(scalar @{$t->saved_state->{clock}{steps} // []}, 1,
   'the state holds the step');
$t->clock_alertd;
ok($t->settle, 'alertd started again, a round after it');
$t->fault_off;

my ($repeat, $l3) = line('g', time + $step);
my ($mark, $l4) = line('mark', time + $step);
$t->append($l3 . $l4);

ok($t->wait_for(sub { posted($mark) }), 'the mark is sent');
ok(posted($first), 'the first of the group is sent');
ok(!posted($repeat), 'the repeat stamped after the step is folded, not '
   . 'sent on its own');

my $a = posted($q) // {};
ok(abs(epoch($a->{startsAt}) - ($t0 + $step)) < 60, 'the quarantine starts '
   . 'when it was stamped, on the clock after the step')
    or diag("startsAt " . ($a->{startsAt} // 'none') . ", stamped "
            . at($t0));
ok(abs(epoch($a->{endsAt}) - ($t0 + $step + $long)) < 60, 'it ends the '
   . 'three hours the quarantine lasts after that')
    or diag("endsAt " . ($a->{endsAt} // 'none'));

my $g = $t->group_of($first);
ok($g && abs($g->{start} - int(($t0 + $step) * 1000)) < 60 * 1000,
   "the group's window starts when the first was stamped, on the clock "
   . 'after the step')
    or diag("start " . ($g ? $g->{start} : 'none'));
is($g && $g->{count}, 1, 'the repeat folded into it');

$t->done;
