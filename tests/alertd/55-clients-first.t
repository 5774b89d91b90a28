#!/usr/bin/perl
# A flood of unidentified peers' alerts does not hold up a client's.
#
# Every unidentified peer that crosses a threshold is an alert group of
# its own, and anyone who reaches the proxy's port can raise them from
# as many addresses as it has.  The outbox keeps half of each sink's
# room for the policy's clients (47-outbox-reserve.t), so a flood cannot
# crowd a client's quarantine out of the queue; but each sink sent its
# queue in order, so the quarantine waited behind every peer's alert
# queued before it: thousands of attempts, minutes or more to a
# receiver that takes a fraction of a second each.  A sink now sends
# the clients' alerts (and alertd's own reports) before the
# unidentified peers' alerts; among each, the order is the queue's.
#
# The journal holds 200 peers' alerts, then the agent's quarantine,
# before alertd starts; the receiver takes half a second per alert.
# Nothing is timed: the receiver's records say the order.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $t = AlertdTest->new;
my $r = $t->receiver(secret => $t->secret('hook', 'whsec_' . 'C' x 32),
                     delay => 0.5);
$t->policy({ webhook => $r->{url}, secret => 'hook' });

my ($text, @peers) = ('');
for my $i (1 .. 200) {
    my ($id, $l) = $t->alert_line(client => undef,
                                  peer => sprintf('2001:db8::%x', $i));
    $text .= $l;
    push @peers, $id;
}
my ($q, $l) = $t->alert_line(kind => 'quarantine', severity => 'critical',
                             reason => 'path');
$t->append($text . $l);

$t->alertd('--poll-interval', '1h', '--repeat-interval', '1h');

{
    local $AlertdTest::WAIT = 300;
    ok($t->wait_for(sub { $t->delivered($r, $q) }),
       "the agent's quarantine is delivered") or diag($t->alertd_log);
}

my @rec = $t->records($r);
my ($at) = grep { ($rec[$_]{id} // '') eq $q } 0 .. $#rec;
$at //= scalar @rec;
my %sent = map { ($_->{id} // '') => 1 } @rec[0 .. $at - 1];
my $before = grep { $sent{$_} } @peers;
cmp_ok($before, '<', 100,
       'before most of the 200 peers\' alerts queued ahead of it')
    or diag("$before peers' alerts were sent before it");

# the peers' alerts go on, in their order
my @next = (grep { !$sent{$_} } @peers)[0, 1];
@next = @peers[-2, -1] if !defined $next[1];
ok($t->wait_for(sub { $t->delivered($r, @next) }),
   "the peers' alerts are sent after it");
my @after = grep { ($_->{id} // '') ne $q } $t->records($r);
my %pos;
@pos{map { $_->{id} } @after} = 0 .. $#after;
ok(defined $pos{$next[0]} && defined $pos{$next[1]}
   && $pos{$next[0]} < $pos{$next[1]}, 'in the order they were queued');

$t->done;
