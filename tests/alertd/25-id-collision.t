#!/usr/bin/perl
# The ids alertd makes are never the id of another alert.
#
# A journal id may hold '-' (1 to 64 of [A-Za-z0-9_.-], docs/alerts.md),
# and a folded alert's id was "<first id>-<n>": an alert written with
# the id "X-1" and the first folded alert of X's group had one id.  The
# outbox file is named after the id, so whichever came second was taken
# for "queued already" and never sent; and a receiver that drops an id
# it has seen (what the webhook-id is for) would drop the other.  The
# report of dropped alerts ("dropped-<sink>-<time>") could meet a journal
# id the same way.  Ids alertd makes now hold a '~', which a journal id
# may not: a journal line with one is skipped as malformed.
#
# The sink is down while both are queued; the windows are measured in
# the alerts' own time, so no time has to pass.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;
use Time::HiRes qw(time);

my $t = AlertdTest->new;
my $d = $t->dir;
my $up = "$d/up";

my $r = $t->receiver(secret => $t->secret('hook', 'whsec_' . 'B' x 32),
                     fail_until => $up);
$t->policy({ webhook => $r->{url}, secret => 'hook' });
$t->alertd('--repeat-interval', '1h', '--poll-interval', '1h');

my $t0 = time - 3 * 3600;
my $x = $t->new_id;

# X opens client one's group, a repeat is folded, a later alert ends the
# window: X's first folded alert, with one repeat.  One write, read in
# one round: the clock has ended X's window too, and would close it
# between two reads.
my (undef, $lx) = $t->alert_line(id => $x, client => 'one',
                                 time => AlertdTest::now_rfc3339($t0));
my (undef, $l1) = $t->alert_line(client => 'one',
                                 time => AlertdTest::now_rfc3339($t0 + 1));
my ($next, $l2) = $t->alert_line(client => 'one',
                                 time => AlertdTest::now_rfc3339($t0 + 7200));
$t->append($lx . $l1 . $l2);
ok($t->log_has(qr/\bqueued folded alert \Q$x\E\S+: .* count 1\b/),
   'X\'s window ended: its folded alert queued')
    or diag($t->alertd_log);

# another client's alert whose id is what a folded alert's used to be
my $y = "$x-1";
$t->alert(id => $y, client => 'two', sample => 'GET /two');
ok($t->log_has(qr/\bqueued alert \Q$y\E: .*client two\b/),
   "an alert with the id $y is queued too")
    or diag($t->alertd_log);

# an id with '~' is alertd's own: not taken from the journal
$t->alert(id => "$x~7", client => 'three');
ok($t->log_has(qr/\bskipped a malformed line: "id" may hold letters/),
   'a journal id with a ~ is malformed');

# the sink has failed a few times: its backoff may be up to its cap
$t->write_file($up, '');
{
    local $AlertdTest::WAIT = 330;
    ok($t->drained($r), 'the sink is up: everything queued is sent');
}

my (%body, %n);
for my $rec ($t->accepted($r)) {
    my $b = $rec->{json} or next;
    $n{$rec->{id}}++;
    push @{$body{$rec->{id}}}, $b;
}

my @mine = grep { $_->[0]{client} eq 'two' } values %body;
is(scalar @mine, 1, "client two's alert is delivered");
is($mine[0] && $mine[0][0]{id}, $y, "under its own id $y");

my @folded = grep { $_->[0]{folded} } values %body;
is(scalar @folded, 1, 'X\'s folded alert is delivered');
my $f = $folded[0] ? $folded[0][0] : {};
is($f->{client}, 'one', 'for client one');
is($f->{count}, 1, 'with its repeat');
isnt($f->{id}, $y, 'under an id no other alert has');

ok($n{$x} && $n{$next}, 'the others are delivered');
is(join(',', grep { $n{$_} > 1 } sort keys %n), '', 'each id once');
is(scalar(grep { $_->{client} eq 'three' } map { @$_ } values %body), 0,
   'the malformed one is not');

$t->done;
