#!/usr/bin/perl
# Alerts a receiver refuses do not hold up the alerts queued behind them.
#
# A sink that refuses an alert (a 4xx other than 408 and 429) makes that
# alert wait, and the sink goes on with the others; a second refusal in
# a row makes the sink wait too.  But when the sink's turn came, it took
# the first alert in queue order whose own wait was over, and the
# refused ones were at the head: with a few alerts the receiver will
# never take (a schema that refuses one of them, a field it chokes on),
# each retried at its own backoff, one of them was ready at nearly every
# turn of the sink, whose wait grew with every refusal, and the alerts
# behind them, a client's quarantine among them, waited for hours.
# Now an alert the sink refused is sent after the alerts it has not
# refused: each refused alert is still retried, and the others go out
# once each of the refused ones has been tried once.
#
# The receiver refuses (422) every alert whose reason starts with
# "poison"; six of them are queued ahead of a quarantine.  The journal
# is written before alertd starts, so all seven are queued in its first
# round, before any attempt.  Nothing is timed: the receiver's records
# say the order of the attempts.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $t = AlertdTest->new;
my $r = $t->receiver(secret => $t->secret('hook', 'whsec_' . 'R' x 32),
                     refuse => '"reason":"poison');
$t->policy({ webhook => $r->{url}, secret => 'hook' });

my ($text, @poison) = ('');
for my $i (1 .. 6) {
    my ($id, $l) = $t->alert_line(reason => "poison$i");
    $text .= $l;
    push @poison, $id;
}
my ($q, $l) = $t->alert_line(kind => 'quarantine', severity => 'critical',
                             reason => 'path');
$t->append($text . $l);

$t->alertd('--poll-interval', '1h', '--repeat-interval', '1h');

ok($t->wait_for(sub { $t->delivered($r, $q) }, 120),
   'the quarantine behind six refused alerts is delivered')
    or diag($t->alertd_log);

my @rec = $t->records($r);
my ($at) = grep { ($rec[$_]{id} // '') eq $q } 0 .. $#rec;
my %before;
$before{$_->{id} // ''}++ for @rec[0 .. ($at // 0) - 1];

is(scalar(grep { ($before{$_} // 0) == 1 } @poison), 6,
   'each refused alert was tried once before it, none twice')
    or diag(explain([map { "$_->{id} $_->{status}" } @rec]));
is(scalar(grep { $_->{status} eq '422' } @rec[0 .. ($at // 0) - 1]), 6,
   'and refused');

# the refused alerts are still tried again, and stay queued
my $p = $poison[0];
ok($t->wait_for(sub {
       (grep { ($_->{id} // '') eq $p } $t->records($r)) >= 2 }, 330),
   'a refused alert is tried again');
is(scalar(grep { /\Q$p\E\.json$/ } $t->outbox), 1, 'and stays queued');
ok($t->log_has(qr/refused alert \Q$p\E with HTTP 422\b.*\(attempt 2\)/),
   'its second refusal is logged');

$t->done;
