#!/usr/bin/perl
# A crash between a fold into a queued alert and the save of the state.
#
# A full outbox folds a group's next folded alert (A-2) into the one it
# has queued (A-1): A-1's file is rewritten with the counts added at
# once, and the group's window, which made A-2, is saved with the
# journal position a moment later.  alertd killed in between starts
# again from the save before: the window ends again and A-2 comes again,
# though its repeats are in A-1 already.  Counted again (as dropped by
# the full outbox, or queued on its own when there is room) the sink
# would be told of the same denials twice.
#
# Killing alertd inside that window takes a hook in the code; the test
# instead leaves the state directory as such a crash leaves it: alertd
# makes the fold, is killed with SIGKILL, and the group is set back to
# before its window ended (the position is the same: the window ended by
# the clock).  The windows are measured in the alerts' own time, so no
# time has to pass.
#
# Restarted with the outbox still full, A-2 would be dropped and the
# count reported; restarted with room (a larger --outbox-max), it would
# be queued and sent on its own.  Neither may happen.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use JSON::PP;
use Test::More;
use Time::HiRes qw(time);

my $hour = 3600;
my $json = JSON::PP->new->canonical;

crash_at_fold(2, 'the outbox full again');
crash_at_fold(10, 'room in the outbox');

done_testing();


sub crash_at_fold {
    my ($max, $what) = @_;
    my $t = AlertdTest->new;
    my $d = $t->dir;
    my $secret = $t->secret('hook', 'fold-crash-secret-0123456789abcdef');
    my $up = "$d/up";

    note("restarted with $what");

    my $r = $t->receiver(secret => $secret, fail_until => $up);
    $t->policy({ webhook => $r->{url}, secret => 'hook' });
    $t->alertd('--outbox-max', '2', '--repeat-interval', '1h');

    # A opens its group, R1 repeats it, R2 ends its first window (A-1,
    # one repeat) and opens the second, which the clock has ended too:
    # A-2, one repeat, folded into A-1 since the sink is down and its
    # outbox full
    my $t0 = time - 2 * $hour - 60;
    my ($a, $l1) = $t->alert_line(reason => 'rc',
                                  time => AlertdTest::now_rfc3339($t0));
    my (undef, $l2) = $t->alert_line(
        reason => 'rc', time => AlertdTest::now_rfc3339($t0 + 1));
    my (undef, $l3) = $t->alert_line(
        reason => 'rc', time => AlertdTest::now_rfc3339($t0 + $hour + 1));
    $t->append($l1 . $l2 . $l3);

    ok($t->log_has(qr/folded alert \Q$a\E~2 into \Q$a\E~1/),
       'A-2 is folded into A-1, queued for the sink that is down')
        or diag($t->alertd_log);
    ok($t->settle, 'alertd went on after it (the state is saved)');

    kill 'KILL', $t->alertd_pid;
    $t->reap($t->alertd_pid);

    my ($file) = grep { /-\Q$a\E~1\.json$/ } $t->outbox;
    my $f1 = $t->read_file($t->state . "/outbox/" . ($file // 'none'));
    is(eval { $json->decode($f1)->{alert}{count} }, 2,
       'A-1 on disk has the repeats of both windows');

    # the state as a crash before the save leaves it: the group in its
    # second window, one repeat, A-1 sent; the same journal position
    my $st = $t->saved_state;
    my ($g) = grep { $_->{first_id} eq $a } @{$st->{groups}};
    ok($g && $g->{seq} == 2 && $g->{count} == 0,
       'saved: A-2 made, the third window open');
    $g->{seq} = 1;
    $g->{count} = 1;
    $g->{start} -= $hour * 1000;
    $g->{end} -= $hour * 1000;
    $t->write_state($st);

    # restarted with the sink up: the second window ends again
    $t->write_file($up, '');
    $t->alertd('--outbox-max', $max, '--repeat-interval', '1h');
    ok($t->drained($r), 'everything queued is delivered');

    my @got = $t->accepted($r);
    my %body = map { $_->{id} => $_->{json} } @got;
    ok($body{$a}, 'A is delivered');
    is($body{"$a~1"} && $body{"$a~1"}{count}, 2, 'A-1, with both repeats');
    ok(!$body{"$a~2"}, 'A-2 is not sent on its own');
    my @rep = grep { ($_->{json}{kind} // '') eq 'alerts_dropped' } @got;
    is(scalar(@rep), 0, 'A-2 is not reported dropped: its repeats are in '
                        . 'A-1') or diag(join "\n", map { $_->{body} } @rep);

    my $n = 0;
    $n += $_->{json}{count} for grep { $_->{id} =~ /^\Q$a\E~/ } @got;
    $n += $_->{json}{count} for @rep;
    is($n, 2, 'the sink is told of each repeat once');

    $t->done_logs;
}
