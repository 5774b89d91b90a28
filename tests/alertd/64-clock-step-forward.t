#!/usr/bin/perl
# The wall clock steps forward while alertd runs: a VM that booted with
# no clock of its own, then NTP.  A group window is in wall time, as the
# alerts are, and would end at once, its fold sent an interval early;
# and the next repeat, stamped by nginx's clock after the step, would
# end the window and be sent on its own: a storm let through.  alertd
# tells the step from its boot clock and moves the windows with it: the
# repeats stay folded until the window has lasted its interval.
#
# The step is made to alertd's wall clock only (tests/alertd/lib/clock.c,
# LD_PRELOAD), two hours forward, and the alerts after it are stamped two
# hours ahead, as nginx would stamp them.  Nothing is timed: the window
# is an hour, and what is not sent is checked once a later alert, queued
# after it for the same sink (sinks send in queue order), is delivered.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $t = AlertdTest->new;
my $r = $t->clock_setup(secret => 'step-test-secret-FAKE-0123456789abcdef');

my $ahead = 2 * 3600;

my ($first, $t0) = $t->clock_repeated($r, 'step');

# two hours forward: alertd's clock, and nginx's stamps
$t->clock_step($ahead);
$t->clock_forward_checks($r, 'step', $first, $t0,
                         after => 'the step',
                         window => 'the window did not end at the step');

my @ids = map { $_->{id} } $t->accepted($r);
is(scalar(@ids), scalar(AlertdTest::uniq(@ids)), 'every id once');

$t->done;
