#!/usr/bin/perl
# The wall clock steps forward while alertd is stopped: NTP sets the
# clock of a VM while the unit restarts.  A group window saved before
# the stop is in wall time, measured by the clock before the step: it
# was taken to have ended at start-up, its fold sent at once, an
# interval early, and the next repeat, stamped by the stepped clock,
# opened a new window and was sent on its own.  alertd saves the clock
# with the windows (the boot id and wall - boot clock): started again
# in the same boot, it tells the step from the time that passed and
# moves the saved windows with it, as it does while it runs.
#
# After a reboot the boot clock starts again and says nothing of the
# time that passed: a state saved in another boot is taken on the wall
# clock, as it was, and a window the clock says ended, ends.
#
# The steps are made to alertd's wall clock only (tests/alertd/lib/
# clock.c, LD_PRELOAD), and the reboot to the boot id it is given
# (--boot-id, as systemd's %b gives it where /proc/sys is hidden); the
# alerts after a step are stamped by the stepped clock, as nginx would
# stamp them.  Nothing is timed: the window is an hour, and what is not sent
# is checked once a later alert, queued after it for the same sink, is
# delivered.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $t = AlertdTest->new;
my $r = $t->clock_setup(secret => 'stop-test-secret-FAKE-0123456789abcdef');

my $ahead = 2 * 3600;

my ($first, $t0) = $t->clock_repeated($r, 'stopped');
is($t->stop($t->alertd_pid), 0, 'alertd stops');


# 1. two hours forward while it is stopped, the same boot: the id alertd
# read from /proc before the stop, given as systemd's %b writes it

my $boot = $t->read_file('/proc/sys/kernel/random/boot_id');
chomp $boot;
(my $b = uc $boot) =~ tr/-//d;
$t->clock_step($ahead);
$t->clock_alertd('--boot-id', $b);

$t->clock_forward_checks($r, 'stopped', $first, $t0,
                         after => 'the restart',
                         window => 'the saved window did not end at the '
                                   . 'start',
                         said => ' while alertd was stopped');
is($t->stop($t->alertd_pid), 0, 'alertd stops again');


# 2. two hours more, and a reboot: the saved clock is of another boot

my $steps = () = $t->alertd_log =~ /the wall clock stepped/g;
$t->clock_step(2 * $ahead);
(my $other = $boot) =~ tr/0-9a-f/1-9a-f0/;
$t->clock_alertd('--boot-id', $other);

ok($t->wait_for(sub { $t->delivered($r, "$first~1") }),
   'after a reboot, the window the wall clock says ended ends: its fold '
   . 'is sent');
my ($fold) = grep { $_->{id} eq "$first~1" } $t->accepted($r);
is($fold && $fold->{json}{count}, 2, '... with both repeats');
my $now = () = $t->alertd_log =~ /the wall clock stepped/g;
is($now, $steps, '... and no step is said: none can be told');

my ($st, $err) = $t->run_alertd('--policy', $t->dir . '/policy.yaml',
                                '--journal', $t->journal, '--state',
                                $t->dir . '/other', '--boot-id', "$b-");
is($st, 2, 'a --boot-id that is no boot id is a usage error');
like($err, qr/--boot-id "\Q$b\E-" is not a boot id/, '... said');

my @ids = map { $_->{id} } $t->accepted($r);
is(scalar(@ids), scalar(AlertdTest::uniq(@ids)), 'every id once');

$t->done;
