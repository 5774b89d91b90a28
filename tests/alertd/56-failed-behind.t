#!/usr/bin/perl
# An alert a receiver always fails on does not hold up the alerts queued
# behind it; a receiver that fails on every alert still makes the sink
# wait.
#
# A 5xx, or no answer at all, made the whole sink wait (an outage), and
# when its wait was over the sink tried the same alert again: the head
# of its queue.  A receiver that crashes on one alert's content (a field
# it chokes on) answers that alert 500, or drops the connection, every
# time, and the sink then waited and tried that alert, and no other, for
# ever, a client's quarantine queued behind it among the alerts never
# sent.  Now, once the receiver has failed on one alert three times in a
# row, the sink tries the next alert after its wait; if it takes that
# one, and fails on the first once more, the first is refused like a
# 4xx: sent after the others, at its own backoff, an error naming it.
#
# 1. The receiver answers 500 to every alert whose reason starts with
#    "poison", one of which is queued ahead of two alerts and a
#    quarantine: they are delivered, in their order, and the poison is
#    tried again and stays queued.
# 2. The same with a receiver that closes the connection without an
#    answer.
# 3. A receiver that answers 500 to every alert: the sink waits after
#    each failure (no two attempts closer than the backoff's floor, six
#    of them spread over more than half a second), tries the next alert
#    after three failures of the first and then the first again, and
#    once the receiver is fixed every alert is delivered, none of them
#    put after the others.
#
# The journal is written before alertd starts, so all the alerts are
# queued in its first round, before any attempt.  Nothing is timed but
# the gaps between attempts in 3, which only a load that slows alertd
# down widens: the receiver's records say the order of the attempts (a
# wait that follows a sink's backoff allows its cap, 5 minutes).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

$AlertdTest::WAIT = 330;

# the ids of the records, in the order the receiver took them
sub ids { map { $_->{id} // '' } @_ }

for my $mode ('500', 'close') {
    my $t = AlertdTest->new;
    my $r = $t->receiver(secret => $t->secret('hook', 'whsec_' . 'P' x 32),
                         fail_match => '"reason":"poison',
                         fail_mode => $mode);
    $t->policy({ webhook => $r->{url}, secret => 'hook' });

    my ($p, $text) = $t->alert_line(reason => 'poison');
    my @good;
    for my $i (1 .. 2) {
        my ($id, $l) = $t->alert_line(reason => "r$i");
        $text .= $l;
        push @good, $id;
    }
    my ($q, $l) = $t->alert_line(kind => 'quarantine',
                                 severity => 'critical', reason => 'path');
    $t->append($text . $l);
    push @good, $q;

    $t->alertd('--poll-interval', '1h', '--repeat-interval', '1h');

    ok($t->wait_for(sub { $t->delivered($r, @good) }),
       "$mode: the alerts behind one the receiver fails on are delivered")
        or diag($t->alertd_log);

    my @rec = $t->records($r);
    my @acc = grep { $_->{id} ne $p } $t->accepted($r);
    is(join(' ', ids(@acc)), join(' ', @good), "$mode: in their order");
    is(join(' ', ids(@rec[0 .. 4])), join(' ', ($p) x 3, $good[0], $p),
       "$mode: the next alert tried after three failures, then the first")
        or diag(explain([map { "$_->{id} $_->{status}" } @rec]));
    my $status = ($mode eq 'close') ? 'closed' : $mode;
    is(scalar(grep { $_->{id} eq $p && $_->{status} eq $status } @rec),
       scalar(grep { $_->{id} eq $p } @rec), "$mode: and it failed each time");

    my $failed = qr/\berror: webhook \S+: alert \Q$p\E not delivered: .*; (?x:
                    failed \s (\d+) \s times \s in \s a \s row \s while
                    \s the \s sink \s takes \s other \s alerts, \s it \s is
                    \s sent \s after \s them, \s retrying \s it \s in
                    \s \d+\.\d \s s: \s fix \s the \s receiver, \s or \s rm
                    \s STATE\/outbox\/\S+ \s to \s drop \s it)$/m;
    my ($n) = $t->alertd_log =~ $failed;
    is($n, 4, "$mode: an error names it, after its fourth failure");

    # (the receiver's records do not count attempts: libcurl sends a
    # request again, once, on a new connection when a kept-alive one is
    # closed without an answer)
    ok($t->log_has(qr/ alert \Q$p\E not delivered: .*\(attempt 5\); failed 5 times in a row /),
       "$mode: it is tried again, and said again");
    is(scalar(grep { /\Q$p\E\.json$/ } $t->outbox), 1,
       "$mode: and stays queued");
    is(scalar($t->outbox), 1, "$mode: nothing else is");

    $t->done_logs;
}

# 3. every alert fails until the receiver is fixed
my $u = AlertdTest->new;
my $up = $u->dir . '/up';
my $r = $u->receiver(secret => $u->secret('hook', 'whsec_' . 'O' x 32),
                     fail_until => $up, fail_mode => 500);
$u->policy({ webhook => $r->{url}, secret => 'hook' });

my ($text, @ids) = ('');
for my $i (1 .. 3) {
    my ($id, $l) = $u->alert_line(reason => "o$i");
    $text .= $l;
    push @ids, $id;
}
$u->append($text);

$u->alertd('--poll-interval', '1h', '--repeat-interval', '1h');

ok($u->wait_for(sub { $u->records($r) >= 6 }), 'six attempts fail')
    or diag($u->alertd_log);
my @rec = ($u->records($r))[0 .. 5];

my @gap = map { $rec[$_]{arrival} - $rec[$_ - 1]{arrival} } 1 .. 5;
is(scalar(grep { $_ < 0.04 } @gap), 0,
   'each after a wait: none sooner than the backoff allows')
    or diag(explain(\@gap));
cmp_ok($rec[5]{arrival} - $rec[0]{arrival}, '>', 0.5,
       'the six spread over more than half a second');
is(join(' ', ids(@rec)), join(' ', ($ids[0]) x 3, $ids[1], ($ids[0]) x 2),
   'the next alert tried after three failures of the first, then the '
   . 'first again')
    or diag(explain([map { "$_->{id} $_->{status}" } @rec]));
ok($u->wait_for(sub {
       $u->log_count(qr/\bwarning: webhook \S+: alert \w+ not delivered: HTTP 500 \(attempt \d+, \d+ ms\); retrying in \d+\.\d s$/m)
       >= 6 }),
   'each failure said, and the sink waits');

$u->write_file($up, '');
ok($u->wait_for(sub { $u->delivered($r, @ids) }),
   'fixed: every alert is delivered');
ok($u->drained($r), 'nothing is left queued');
my @acc = ids($u->accepted($r));
is($acc[2], $ids[2], 'the last one last');
unlike($u->alertd_log, qr/sent after them|refused alert/,
       'none was put after the others');

$u->done;
