#!/usr/bin/perl
# A fold into a queued alert whose state save failed, then a crash.
#
# A full outbox folds a group's next folded alert (A~2) into the one it
# has queued (A~1); the group's window that made A~2 is saved with the
# journal position after that.  When the save fails (a full disk)
# alertd goes on delivering: A~1, with A~2's repeats in it, used to be
# sent and its file removed.  Stopped or crashed before a save worked,
# alertd starts again from the last save and makes A~1 and A~2 again:
# A~1 went out a second time with another body (the counts of its own
# window only) and A~2 on its own, so the sink was told of A~2's
# repeats twice, and of an id with two bodies.  A plain alert sent
# again after a crash is the documented duplicate, same id and same
# body; this was not.  An alert folded into is now held until the state
# after the fold is saved: the file that says what is folded in stays.
#
# The save is made to fail by a directory where alertd writes the new
# state file before it renames it into place (STATE/.tmp-offset); the
# outbox files are written as usual.  The windows are measured in the
# alerts' own time, so no time has to pass.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;
use Time::HiRes qw(time);

my $hour = 3600;

my $t = AlertdTest->new;
my $d = $t->dir;
my $up = "$d/up";
my $block = $t->state . '/.tmp-offset';

my $r = $t->receiver(secret => $t->secret('hook', 'whsec_' . 'C' x 32),
                     fail_until => $up);
$t->policy({ webhook => $r->{url}, secret => 'hook' });

mkdir $t->state or die "mkdir: $!";
mkdir $block or die "mkdir $block: $!";
$t->alertd('--outbox-max', '2', '--repeat-interval', '1h');

# A opens its group, R1 repeats it, R2 ends its first window (A~1, one
# repeat) and opens the second, which the clock has ended too: A~2, one
# repeat, folded into A~1 since the sink is down and its outbox full
my $t0 = time - 2 * $hour - 60;
my ($a, $l1) = $t->alert_line(reason => 'rf',
                              time => AlertdTest::now_rfc3339($t0));
my (undef, $l2) = $t->alert_line(
    reason => 'rf', time => AlertdTest::now_rfc3339($t0 + 1));
my (undef, $l3) = $t->alert_line(
    reason => 'rf', time => AlertdTest::now_rfc3339($t0 + $hour + 1));
$t->append($l1 . $l2 . $l3);

ok($t->log_has(qr/folded alert \Q$a\E~2 into \Q$a\E~1/),
   'A~2 is folded into A~1, queued for the sink that is down')
    or diag($t->alertd_log);
ok($t->log_has(qr/\berror: cannot save /), 'the state cannot be saved');

# the sink is back while the save still fails (it failed a few times:
# a wait may follow its backoff)
$t->write_file($up, '');
ok($t->wait_for(sub { $t->delivered($r, $a) }, 330), 'A is delivered');

# B, queued after A~1, is sent after it: once B is delivered, A~1 went
# out before it or was held
my $b = $t->alert(reason => 'rb');
ok($t->wait_for(sub { $t->delivered($r, $b) }, 330), 'B is delivered');

kill 'KILL', $t->alertd_pid;
$t->reap($t->alertd_pid);

rmdir $block or die "rmdir: $!";
$t->alertd('--outbox-max', '10', '--repeat-interval', '1h');
{
    # the sink failed a few times before: a wait may follow its backoff
    local $AlertdTest::WAIT = 330;
    ok($t->drained($r), 'restarted: everything queued is delivered');
}

my (%bodies, %first);
for my $rec ($t->accepted($r)) {
    next unless ($rec->{id} // '') =~ /^\Q$a\E~/;
    $bodies{$rec->{id}}{$rec->{body}} = 1;
    $first{$rec->{id}} //= $rec->{json};
}

is(join(',', grep { keys %{$bodies{$_}} > 1 } sort keys %bodies), '',
   'each folded id with one body');
ok(!$first{"$a~2"}, 'A~2 is not sent on its own');
is($first{"$a~1"} && $first{"$a~1"}{count}, 2, 'A~1 has both repeats');
my $n = 0;
$n += $_->{count} for values %first;
is($n, 2, 'the sink is told of each repeat once');

$t->done;
