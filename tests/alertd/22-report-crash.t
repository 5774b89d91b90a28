#!/usr/bin/perl
# A crash between the report of dropped alerts and the save of the state.
#
# When a sink whose outbox was full has room again, alertd queues the
# report of what it dropped (an alerts_dropped alert, its id made of the
# sink and of when dropping began), then saves the state with the count
# reset.  Killed in between, it starts again with the count and with
# the report queued.  The report is then what the count is: it must be
# known for one at once, also when the outbox is full again (the report
# itself takes a place), or alerts dropped after the restart add to the
# count of a report that was made already, and a second report goes out
# under the first one's id with another body: a receiver that drops an
# id it has seen never hears of them, one that does not hears of the
# first ones twice.
#
# The crash is laid out as it leaves the state directory: alertd queues
# A and drops B (--outbox-max 1, the sink down) and stops; then A is
# taken away, as delivered, and the report file alertd would write next
# is put in its place.  No time has to pass.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use JSON::PP;
use Test::More;
use Time::HiRes qw(time);

my $t = AlertdTest->new;
my $d = $t->dir;
my $secret = $t->secret('hook', 'report-crash-secret-0123456789abcdef');
my $up = "$d/up";
my $json = JSON::PP->new->canonical;

my $r = $t->receiver(secret => $secret, fail_until => $up);
$t->policy({ webhook => $r->{url}, secret => 'hook' });
$t->alertd('--outbox-max', '1');

my ($a, $la) = $t->alert_line(reason => 'ra');
my ($b, $lb) = $t->alert_line(reason => 'rb');
$t->append($la . $lb);
ok($t->log_has(qr/dropped \(outbox full\): alert \Q$b\E/),
   'A is queued, B dropped: the sink is down and its outbox full');
is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'alertd stops');

my $st = $t->saved_state;
my ($rec) = @{$st->{dropped} // []};
ok($rec && $rec->{count} == 1, 'the state counts B');
my ($fa) = grep { /-\Q$a\E\.json$/ } $t->outbox;
ok($fa, "A is queued");

# A delivered, the report queued, the state not saved yet
my $entry = $json->decode($t->read_file($t->state . "/outbox/$fa"));
unlink $t->state . "/outbox/$fa" or die "unlink: $!";
my $id = "dropped~$rec->{sink}-$rec->{since}";
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
my $c = $t->alert(reason => 'rc');
$t->write_file($up, '');
$t->alertd('--outbox-max', '1');
ok($t->drained($r), 'everything queued is delivered');

# the report of C is queued once the first is delivered, in the same
# round of the loop that removed the first's file: the outbox may be
# seen empty in between
ok($t->wait_for(sub {
    grep { ($_->{json}{kind} // '') eq 'alerts_dropped'
           && ($_->{json}{dropped}{last_id} // '') eq $c } $t->accepted($r)
}), 'C is reported') && $t->drained($r);

my %bodies;
for my $x ($t->accepted($r)) {
    $bodies{$x->{id}}{$x->{body}} = $x->{json};
}
my @two = grep { keys %{$bodies{$_}} > 1 } sort keys %bodies;
is("@two", '', 'no id was sent with two different bodies');

# what the reports say, each body once
my (%named, $n);
for my $rid (grep { /^dropped~/ } keys %bodies) {
    for my $rep (values %{$bodies{$rid}}) {
        $named{$_} = 1 for $rep->{dropped}{first_id}, $rep->{dropped}{last_id};
        $n += $rep->{count};
    }
}
is(join(',', sort keys %named), join(',', sort $b, $c),
   'the reports name B and C, dropped before and after the restart');
is($n, 2, 'and count each once') or diag(explain(\%bodies));

$t->done;
