#!/usr/bin/perl
# Alerts queued by an alertd older than the '~' ids, then a crash.
#
# alertd used to name a group's folded alerts "<first id>-<n>"; it now
# names them "<first id>~<n>" (b61a2c0).  An outbox left by the older
# alertd holds files "<sink>-A-1.json", "<sink>-A-2.json", and the
# outbox is how a folded alert made again after a crash (the journal
# read again from the last save) is known to be queued already: by its
# file name.  The new alertd, started on such an outbox after a crash
# that lost the save of the group, made A~2 again, found no file
# "<sink>-A~2.json" and queued it: the sink got A-2 and A~2, the same
# repeats under two ids, which no receiver can drop as a duplicate.
#
# The same goes for a report of dropped alerts, "dropped-<sink>-<ms>"
# then, "dropped~<sink>-<ms>" now: queued by the older alertd, which
# crashed before the count was saved reset, it was made again by the
# new one, with the count it holds and the alerts dropped since.
#
# The older alertd's outbox is made here by the new one, its files
# renamed and their ids spelled the old way; the crash that lost the
# save is made by setting the group back to before its window ended, as
# 20-fold-crash.t does, and for the report as 22-report-crash.t does.
# The windows are measured in the alerts' own time, so no time has to
# pass.

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

my $t = AlertdTest->new;
my $d = $t->dir;
my $up = "$d/up";

my $r = $t->receiver(secret => $t->secret('hook', 'whsec_' . 'U' x 32),
                     fail_until => $up);
$t->policy({ webhook => $r->{url}, secret => 'hook' });
$t->alertd('--outbox-max', '10', '--repeat-interval', '1h');

# A opens its group, R1 repeats it, R2 ends its first window (A~1, one
# repeat) and opens the second, which the clock has ended too (A~2, one
# repeat); both queued for the sink that is down
my $t0 = time - 2 * $hour - 60;
my ($a, $l1) = $t->alert_line(reason => 'ru',
                              time => AlertdTest::now_rfc3339($t0));
my (undef, $l2) = $t->alert_line(
    reason => 'ru', time => AlertdTest::now_rfc3339($t0 + 1));
my (undef, $l3) = $t->alert_line(
    reason => 'ru', time => AlertdTest::now_rfc3339($t0 + $hour + 1));
$t->append($l1 . $l2 . $l3);

ok($t->wait_for(sub { grep { /-\Q$a\E~2\.json$/ } $t->outbox }),
   'A~1 and A~2 are queued for the sink that is down')
    or diag($t->alertd_log);
ok($t->settle, 'alertd went on after it (the state is saved)');

kill 'KILL', $t->alertd_pid;
$t->reap($t->alertd_pid);

# the outbox as the older alertd left it: "-" where "~" is
my $renamed = 0;
for my $f ($t->outbox) {
    next unless $f =~ /^(.*)-\Q$a\E~(\d+)\.json$/;
    my ($key, $n) = ($1, $2);
    my $path = $t->state . "/outbox/$f";
    my $o = $json->decode($t->read_file($path));
    $o->{alert}{id} = "$a-$n";
    $t->write_file($t->state . "/outbox/$key-$a-$n.json", $json->encode($o));
    unlink $path or die "unlink $path: $!";
    $renamed++;
}
is($renamed, 2, 'A-1 and A-2 in the outbox, named the old way');

# the state as a crash before the save of A-2's window leaves it
my $st = $t->saved_state;
my ($g) = grep { $_->{first_id} eq $a } @{$st->{groups}};
ok($g && $g->{seq} == 2 && $g->{count} == 0,
   'saved: A~2 made, the third window open');
$g->{seq} = 1;
$g->{count} = 1;
$g->{start} -= $hour * 1000;
$g->{end} -= $hour * 1000;
$t->write_state($st);

# restarted with the sink up: the second window ends again
$t->write_file($up, '');
$t->alertd('--outbox-max', '10', '--repeat-interval', '1h');
ok($t->drained($r), 'everything queued is delivered');

my @got = $t->accepted($r);
my %body = map { $_->{id} => $_->{json} } @got;
ok($body{$a}, 'A is delivered');
ok($body{"$a-1"} && $body{"$a-2"}, 'A-1 and A-2 are delivered');
ok(!$body{"$a~2"}, 'A~2 is not sent besides A-2');

my $n = 0;
$n += $_->{json}{count} for grep { $_->{id} =~ /^\Q$a\E[~-]/ } @got;
is($n, 2, 'the sink is told of each repeat once');

$t->done_logs;

# the report of dropped alerts: A queued, B dropped (--outbox-max 1, the
# sink down); then A taken away, as delivered, and the report the older
# alertd would have written next put in its place, the state not saved
$t = AlertdTest->new;
$d = $t->dir;
$up = "$d/up";
$r = $t->receiver(secret => $t->secret('hook', 'whsec_' . 'V' x 32),
                  fail_until => $up);
$t->policy({ webhook => $r->{url}, secret => 'hook' });
$t->alertd('--outbox-max', '1');

my ($qa, $la) = $t->alert_line(reason => 'ra');
my ($qb, $lb) = $t->alert_line(reason => 'rb');
$t->append($la . $lb);
ok($t->log_has(qr/dropped \(outbox full\): alert \Q$qb\E/),
   'A is queued, B dropped: the sink is down and its outbox full');
is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'alertd stops');

$st = $t->saved_state;
my ($rec) = @{$st->{dropped} // []};
ok($rec && $rec->{count} == 1, 'the state counts B');
my ($fa) = grep { /-\Q$qa\E\.json$/ } $t->outbox;
my $entry = $json->decode($t->read_file($t->state . "/outbox/$fa"));
unlink $t->state . "/outbox/$fa" or die "unlink: $!";
my $id = "dropped-$rec->{sink}-$rec->{since}";
my $now = int(time * 1000);
$t->write_file($t->state . "/outbox/$rec->{sink}-$id.json", $json->encode({
    v => 1, sink => $entry->{sink}, queued => $now, seq => $entry->{seq} + 1,
    first => JSON::PP::true,
    alert => {
        id => $id, time => AlertdTest::now_rfc3339($now / 1000),
        kind => 'alerts_dropped', severity => 'warning', client => undef,
        reason => 'outbox_full', route => undef, count => 1, window => 0,
        sample => '', dropped => $rec->{dropped}, source => 'airlock',
    },
}));

# C comes while the report fills the outbox (C is dropped); the sink is
# up again
my $qc = $t->alert(reason => 'rc');
$t->write_file($up, '');
$t->alertd('--outbox-max', '1');
ok($t->drained($r), 'everything queued is delivered');

my (%named, %times);
$n = 0;
for my $x ($t->accepted($r)) {
    next unless ($x->{json}{kind} // '') eq 'alerts_dropped';
    $times{$_}++ for $x->{json}{dropped}{first_id},
                     $x->{json}{dropped}{last_id};
    $n += $x->{json}{count};
}
is(join(',', sort keys %times), join(',', sort $qb, $qc),
   'the reports name B and C, dropped before and after the restart');
is($n, 2, 'and count each once: the old report is known to be queued');

$t->done_logs;

# the older alertd's name is looked for only as an alert alertd made: a
# journal alert whose id is X-1, queued first, is not X's folded alert
# X~1 (25-id-collision.t has them in the other order)
$t = AlertdTest->new;
$d = $t->dir;
$up = "$d/up";
$r = $t->receiver(secret => $t->secret('hook', 'whsec_' . 'W' x 32),
                  fail_until => $up);
$t->policy({ webhook => $r->{url}, secret => 'hook' });
$t->alertd('--repeat-interval', '1h', '--poll-interval', '1h');

my $x = $t->new_id;
$t->alert(id => "$x-1", client => 'two', sample => 'GET /two');
ok($t->log_has(qr/\bqueued alert \Q$x\E-1: .*client two\b/),
   "an alert with the id $x-1 is queued");

$t0 = time - 3 * $hour;
my (undef, $lx) = $t->alert_line(id => $x, client => 'one',
                                 time => AlertdTest::now_rfc3339($t0));
my (undef, $lr) = $t->alert_line(client => 'one',
                                 time => AlertdTest::now_rfc3339($t0 + 1));
my (undef, $ln) = $t->alert_line(client => 'one',
                                 time => AlertdTest::now_rfc3339($t0 + 7200));
$t->append($lx . $lr . $ln);
ok($t->log_has(qr/\bqueued folded alert \Q$x\E~1: .* count 1\b/),
   "then X's folded alert $x~1 is queued, not taken for it")
    or diag($t->alertd_log);

$t->write_file($up, '');
ok($t->drained($r), 'everything queued is delivered');
%body = map { $_->{id} => $_->{json} } $t->accepted($r);
ok($body{"$x-1"} && $body{"$x~1"}, 'both are delivered');

$t->done;
