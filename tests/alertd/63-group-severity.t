#!/usr/bin/perl
# The severity is part of an alert's group, as it is of its Alertmanager
# labels (and as the route is, 59-group-route.t).  Folded into the group
# of a warning, a critical repeat of the same client, reason and route
# was only counted: no critical alert went out until the window ended,
# and then the fold said critical with the warning's count mixed in.
# Now a critical alert is sent at once, the first of its own group, and
# the fold of the warning's group keeps its severity and counts only its
# own repeats.
#
# An alertd that left the severity out of the group fails the tests
# marked (old).
#
# Nothing is timed: the windows are an hour, in the alerts' own time,
# and the alerts two hours old, written before alertd starts: their
# windows are over by alertd's clock once the journal is read.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;
use Time::HiRes qw(time);

my $t = AlertdTest->new;

my $secret = $t->secret('hook', 'FAKE-alertd-group-severity-secret');
my $r = $t->receiver(secret => $secret);
$t->policy({ webhook => $r->{url}, secret => 'hook' });

sub body {
    my ($id) = @_;
    my @b = grep { $_->{id} eq $id } map { $_->{json} } $t->accepted($r);
    return $b[-1];
}

my $t0 = time - 7200;
my %f = (client => 'agent', reason => 'path', route => 'prom');
my ($first, $l1) = $t->alert_line(%f, severity => 'warning',
                                  time => AlertdTest::now_rfc3339($t0));
my ($repeat, $l2) = $t->alert_line(%f, severity => 'warning',
                                   time => AlertdTest::now_rfc3339($t0 + 1));
my ($crit, $l3) = $t->alert_line(%f, severity => 'critical',
                                 time => AlertdTest::now_rfc3339($t0 + 2));
my ($mark, $l4) = $t->alert_line(client => 'worker', reason => 'no_route');
$t->append($l1 . $l2 . $l3 . $l4);

$t->alertd('--poll-interval', '1h', '--repeat-interval', '1h');

ok($t->wait_for(sub { $t->delivered($r, $first, $mark) }),
   'the first alert and the marker are delivered');
ok($t->drained($r), 'nothing left queued');
ok($t->delivered($r, $crit), '(old) the critical alert is sent at once: '
   . 'the first of its group');
is((body($crit) // {})->{severity}, 'critical', '(old) ... as critical');
ok(!$t->delivered($r, $repeat), 'the warning\'s repeat is not');

my $fold = "$first~1";
ok($t->wait_for(sub { $t->delivered($r, $fold) }), "the fold $fold is sent");
my $b = body($fold) // {};
is($b->{severity}, 'warning', '(old) the fold keeps its group\'s severity');
is($b->{count}, 1, '(old) ... and counts its own repeat only');
ok(!$t->delivered($r, "$crit~1"), 'the critical group has no fold');

is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'alertd stops cleanly');

$t->done;
