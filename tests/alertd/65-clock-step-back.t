#!/usr/bin/perl
# The wall clock steps back while alertd runs, then forward again: an
# appliance whose clock was set a day ahead, then right, then ahead
# again by a second NTP server.  A group window is in wall time, as the
# alerts are: after the step back it starts in the future, and was taken
# to start then, at the step, so that the step forward found it ended a
# day ago and sent its fold at once, the next repeat on its own.  alertd
# tells each step from its boot clock and moves the windows with it: the
# window ends one interval after the first alert, in elapsed time,
# whatever the clock did meanwhile.
#
# The steps are made to alertd's wall clock only (tests/alertd/lib/
# clock.c, LD_PRELOAD), and the alerts after each are stamped by the
# stepped clock, as nginx would stamp them.  Nothing is timed: the
# window is an hour, and what is not sent is checked once a later
# alert, queued after it for the same sink, is delivered.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;
use Time::HiRes qw(time);

my $t = AlertdTest->new;
my $r = $t->clock_setup(secret => 'back-test-secret-FAKE-0123456789abcdef');

my $day = 24 * 3600;

sub at { AlertdTest::now_rfc3339(@_) }

# stamped ten minutes ago (a line read late): its window is ten minutes
# on, which the window of a clock stepped back does not keep if it is
# taken to start at the step
my $t0 = time - 600;
my $first = $t->alert(client => 'agent', reason => 'back', time => at($t0));
ok($t->wait_for(sub { $t->delivered($r, $first) }), 'the first is sent');


# 1. a day back: the repeats stamped by the stepped clock are folded

$t->clock_step(-$day);
my $back = $t->alert(client => 'agent', reason => 'back',
                     time => at(time - $day));
my $mark = $t->alert(client => 'agent', reason => 'mark-back',
                     time => at(time - $day));

ok($t->wait_for(sub { $t->delivered($r, $mark) }),
   'an alert after the step back is delivered');
ok(!$t->delivered($r, $back), 'the repeat after it is not sent');
like($t->alertd_log,
     qr/\bwarn(?:ing)?: the wall clock stepped back by 86\d\d\d\.\d{3} s\b/,
     'the log says the clock stepped back');

my $g = $t->group_of($first);
ok($g && abs($g->{start} - int(($t0 - $day) * 1000)) < 60 * 1000,
   'the window moved a day back with the clock, not to the step')
    or diag("start " . ($g ? $g->{start} : 'none') . ", the first at "
            . int($t0 * 1000));


# 2. forward again: the window is where it was, not ended a day ago

$t->clock_step(0);
my $again = $t->alert(client => 'agent', reason => 'back', time => at(time));
my $mark2 = $t->alert(client => 'agent', reason => 'mark-again',
                      time => at(time));

ok($t->wait_for(sub { $t->delivered($r, $mark2) }),
   'an alert after the step forward is delivered');
ok(!$t->delivered($r, "$first~1"), 'the window did not end: no fold sent');
ok(!$t->delivered($r, $again), 'the repeat after it is not sent');
is(scalar($t->accepted($r)), 3, 'nothing but the first and the marks');

$g = $t->group_of($first);
is($g && $g->{count}, 2, 'the group holds both repeats');
ok($g && abs($g->{start} - int($t0 * 1000)) < 60 * 1000,
   'its window back where it started')
    or diag("start " . ($g ? $g->{start} : 'none') . ", the first at "
            . int($t0 * 1000));
is($g && $g->{end} - $g->{start}, 3600 * 1000, 'an hour long');

$t->done;
