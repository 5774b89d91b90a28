#!/usr/bin/perl
# The wall clock steps forward after alertd read a quarantine, before
# Alertmanager took it (the sink was down, or the alert waited behind
# others): the quarantine's endsAt was its quarantine_until, written by
# the clock before the step, or two repeat intervals after the send if
# later; the quarantine, which nginx times on its monotonic clock, goes
# on as long after the step as before it, and Alertmanager resolved it
# that much early, the client still kept out.  alertd keeps the clock
# it read each alert by (wall - boot clock, saved with the alert in the
# outbox and with a group's latest alert in the state): a step since
# moves startsAt and endsAt with it, so that a quarantine keeps its
# length.  So does a folded quarantine, whose latest alert was read
# before the step, and one queued before a restart in the same boot.
#
# The steps are made to alertd's wall clock only (tests/alertd/lib/
# clock.c, LD_PRELOAD).  The Alertmanager is the receiver fixture,
# which records the bodies posted to it, failing each until a file
# exists.  Nothing is timed: the quarantine is an hour, the step two,
# and the repeat interval a minute, so that two of them end well
# before either; the window that makes the fold ends as it is read.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;
use Time::HiRes qw(time);
use Time::Local qw(timegm);

my $t = AlertdTest->new;
my $up = $t->dir . '/am-up';
my $ahead = 2 * 3600;
my $hour = 3600;

sub at { AlertdTest::now_rfc3339(@_) }
sub quarantine_line {
    my ($reason, $at) = @_;
    return $t->alert_line(kind => 'quarantine', severity => 'critical',
                          client => 'agent', reason => $reason,
                          time => at($at),
                          quarantine_until => at($at + $hour));
}

# a quarantine and its repeat, written ten minutes ago: alertd's first
# round reads both, folds the repeat, and ends the window (a minute)
# at once, which sends the fold, its latest alert read in that round
my $t0 = time - 600;
my ($first, $l1) = quarantine_line('step', $t0);
my ($repeat, $l2) = quarantine_line('step', $t0 + 1);
$t->append($l1 . $l2);

my $r = $t->clock_setup(alertmanager => 1, fail_until => $up,
                        secret => 'qstep-test-secret-FAKE-0123456789abcdef',
                        args => ['--repeat-interval', '1m']);

sub epoch {
    my ($s) = @_;
    my ($y, $mo, $d, $h, $mi, $sec) =
        ($s // '') =~ /^(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)/ or return 0;
    return timegm($sec, $mi, $h, $d, $mo - 1, $y);
}
# the body posted for alert id, answered as ok (2xx) or not
sub posted {
    my ($id, $ok) = @_;
    for my $rec ($t->records($r)) {
        next if $ok && $rec->{status} !~ /^2/;
        my $a = ref $rec->{json} eq 'ARRAY' ? $rec->{json}[0] : undef;
        return $a if $a && ($a->{annotations}{id} // '') eq $id;
    }
    return undef;
}
# startsAt is $at moved by $by, and endsAt the hour after it
sub moved {
    my ($what, $a, $at, $by) = @_;
    $a //= {};
    my ($s, $e) = (epoch($a->{startsAt}), epoch($a->{endsAt}));
    ok(abs($s - ($at + $by)) < 60, "$what: starts when nginx stamped it, "
       . "moved with the step")
        or diag("startsAt " . ($a->{startsAt} // 'none') . ", stamped "
                . at($at));
    ok(abs($e - ($at + $by + $hour)) < 60, "$what: ends the hour the "
       . "quarantine lasts after that, not as much early as the step")
        or diag("endsAt " . ($a->{endsAt} // 'none') . ", until "
                . at($at + $hour));
    is($a->{annotations}{quarantine_until}, at($at + $hour),
       "$what: its quarantine_until annotation as nginx wrote it");
}


# 1. read, tried while the sink is down, the clock stepped

ok($t->wait_for(sub { posted($first) && posted("$first~1") }),
   'the quarantine and its fold are tried');

$t->clock_step($ahead);
$t->write_file($up, '');

ok($t->wait_for(sub { posted($first, 1) && posted("$first~1", 1) }),
   'both are posted once the sink is up, after the step');
ok(!posted($repeat), 'the repeat is folded, not sent on its own');
moved('the quarantine', posted($first, 1), $t0, $ahead);
moved('the fold', posted("$first~1", 1), $t0 + 1, $ahead);


# 2. read, alertd stopped, the clock stepped, alertd started again

unlink $up or die "unlink: $!";
my $t1 = time + $ahead;
my ($again, $l3) = quarantine_line('restart', $t1);
$t->append($l3);
ok($t->wait_for(sub { posted($again) }), 'another quarantine is tried');
is($t->stop($t->alertd_pid), 0, 'alertd stops with it queued');

$t->clock_step(2 * $ahead);
$t->clock_alertd;
$t->write_file($up, '');

ok($t->wait_for(sub { posted($again, 1) }),
   'it is posted after the restart');
moved('the one queued before the restart', posted($again, 1), $t1, $ahead);

$t->done;
