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
use Time::HiRes qw(time);

my $t = AlertdTest->new;
my $r = $t->clock_setup(secret => 'step-test-secret-FAKE-0123456789abcdef');

my $ahead = 2 * 3600;

sub at { AlertdTest::now_rfc3339(@_) }

my $t0 = time;
my $first = $t->alert(client => 'agent', reason => 'step', time => at($t0));
ok($t->wait_for(sub { $t->delivered($r, $first) }), 'the first is sent');
my $repeat = $t->alert(client => 'agent', reason => 'step',
                       time => at($t0 + 1));
ok($t->settle, 'a round read the repeat');

# two hours forward: alertd's clock, and nginx's stamps
$t->clock_step($ahead);
my $after = $t->alert(client => 'agent', reason => 'step',
                      time => at(time + $ahead));
my $mark = $t->alert(client => 'agent', reason => 'mark',
                     time => at(time + $ahead));

ok($t->wait_for(sub { $t->delivered($r, $mark) }),
   'an alert after the step is delivered');
ok(!$t->delivered($r, "$first~1"),
   'the window did not end at the step: no fold sent');
ok(!$t->delivered($r, $after),
   'the repeat stamped after the step is not sent on its own');
is(scalar($t->accepted($r)), 2, 'nothing but the first and the mark');
# 7200 s, give or take the moment between alertd's two clock readings
like($t->alertd_log,
     qr/\bwarn(?:ing)?:\ the\ wall\ clock\ stepped\ forward\ by
        \ (?:7199\.9\d\d|72\d\d\.\d{3})\ s\b/x,
     'the log says the clock stepped forward');

my $g = $t->group_of($first);
ok($g, 'the group is open');
is($g && $g->{count}, 2, 'with both repeats');
is($g && $g->{end} - $g->{start}, 3600 * 1000, 'its window an hour long');
ok($g && abs($g->{start} - int(($t0 + $ahead) * 1000)) < 60 * 1000,
   'moved two hours forward with the clock')
    or diag("start $g->{start}, the first at " . int($t0 * 1000));

my @ids = map { $_->{id} } $t->accepted($r);
is(scalar(@ids), scalar(AlertdTest::uniq(@ids)), 'every id once');

$t->done;
