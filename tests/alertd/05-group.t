#!/usr/bin/perl
# Grouping: the first alert of a (kind, client, reason) is sent at once;
# repeats within the repeat interval are folded into one alert, sent when
# the interval ends; a window that ends empty closes the group.  Windows
# are measured in alert time.  The fold survives a SIGKILL.
#
# Nothing is timed.  What is sent "at once" is sent by an alertd whose
# repeat interval and poll interval are an hour: within the test's
# (generous) wait nothing but the alert's own arrival can send it.  What
# is not sent is checked once a later alert, queued after it for the same
# sink and sinks send in queue order, has been delivered.  Where a window
# must end, either the clock ends it (a 2 s interval, and a poll an hour
# away: only the window's own end wakes alertd) or an alert's time does.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;
use Time::HiRes qw(time);

my $t = AlertdTest->new;
my $secret = $t->secret('hook', 'group-test-secret-0123456789abcdef');
my $r = $t->receiver(secret => $secret);
$t->policy({ webhook => $r->{url}, secret => 'hook' });

my @hour = ('--repeat-interval', '1h', '--poll-interval', '1h');

sub by_id { my %h = map { $_->{id} => $_ } $t->accepted($r); return \%h }
sub at { AlertdTest::now_rfc3339(@_) }


# 1. the first alert of a group at once, its repeats counted, not sent

$t->alertd(@hour);

my @five = map { $t->alert(client => 'agent', reason => 'no_route',
                           sample => "GET /x$_") } 1 .. 5;
my $other = $t->alert(client => 'agent', reason => 'method');
my $quar = $t->alert(client => 'agent', reason => 'no_route',
                     kind => 'quarantine', severity => 'critical',
                     quarantine_until => at(time + 600));

ok($t->wait_for(sub { $t->delivered($r, $five[0], $other, $quar) }),
   'the first of the group, another reason and another kind: sent at '
   . 'once, not when the window (an hour) ends');
my $mark = $t->alert(client => 'agent', reason => 'mark');
ok($t->wait_for(sub { $t->delivered($r, $mark) }),
   'an alert written after the repeats is delivered');
is(scalar($t->accepted($r)), 4,
   'and nothing else: the 4 repeats before it were counted, not sent');
is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'stopped');
my ($g) = grep { $_->{first_id} eq $five[0] } @{$t->saved_state->{groups}};
is($g && $g->{count}, 4, 'the group holds the 4 repeats');


# 2. the window ends: one folded alert; then a window that ends empty

$t->alertd('--repeat-interval', '2s', '--poll-interval', '1h');

my $base = int(time);           # whole seconds: base + 4 is exact
my @w = map { $t->alert(client => 'agent', reason => 'window',
                        sample => "GET /w$_", time => at($base)) } 1 .. 5;
my $fid = "$w[0]~1";
ok($t->wait_for(sub { $t->delivered($r, $w[0], $fid) }),
   'the first, then when the window ends one folded alert, id <first>~1: '
   . 'the window\'s end wakes alertd (the poll is an hour away)');

my $f = by_id()->{$fid}{json};
is($f->{count}, 4, 'count: the 4 alerts folded');
is($f->{window}, 2, 'window: the repeat interval');
ok($f->{folded}, 'folded: true');
is($f->{client}, 'agent', 'client');
is($f->{reason}, 'window', 'reason');
is($f->{kind}, 'deny_threshold', 'kind');
is($f->{sample}, 'GET /w5', 'sample: the latest one');

# the next window, [base + 2, base + 4), gets nothing.  A repeat whose
# time is base + 4 finds it over whether the clock ended it or not (the
# fold above came at base + 2 or later, so base + 4 is within alertd's
# 5 s of slack for an alert ahead of its clock): the group is closed and
# the repeat is a first alert again.  Had the empty window sent
# anything, that would have been queued before it.
my $again = $t->alert(client => 'agent', reason => 'window',
                      time => at($base + 4));
ok($t->wait_for(sub { $t->delivered($r, $again) }),
   'the next repeat after a window that ended empty is sent at once, '
   . 'with its own id');
ok(!grep({ /^\Q$w[0]\E~[2-9]/ } keys %{by_id()}),
   'the empty window sent nothing: no <first>-2');


# 3. windows in alert time: a storm over two windows of an hour, written
#    while alertd is stopped and read at start (-v logs each line as it
#    is read).  The first window ends when a later alert's time shows it,
#    before the next line is read; the second when the clock says so,
#    after the lines.

is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'stopped');

$base = int(time) - 3 * 3600;
my @storm = map { $t->alert(reason => 'storm', time => at($base + $_ * 60)) }
            0, 10, 20, 70, 80;
$t->alertd(@hour, '-v');

ok($t->wait_for(sub {
       $t->delivered($r, $storm[0], "$storm[0]~1", "$storm[0]~2")
   }), 'storm: the first alert and one folded alert per window');
is(by_id()->{"$storm[0]~1"}{json}{count}, 2, 'first window: 2 folded');
is(by_id()->{"$storm[0]~2"}{json}{count}, 2, 'second window: 2 folded');

my @order = map { /journal offset \d+: alert (\S+)$/ ? $1
                  : /\bqueued folded alert (\S+):/ ? $1 : () }
            split /\n/, $t->alertd_log;
my %at;
@at{@order} = 0 .. $#order;
ok(defined $at{"$storm[0]~1"} && $at{$storm[3]} < $at{"$storm[0]~1"}
   && $at{"$storm[0]~1"} < $at{$storm[4]},
   'the first window is folded when the alert after it is read, before '
   . 'the next line')
    or diag(join ' ', @order);
ok(defined $at{"$storm[0]~2"} && $at{$storm[4]} < $at{"$storm[0]~2"},
   'the second when its end has passed, after the last line');


# 4. the fold survives SIGKILL: the group is saved with the offset.  A
#    window of an hour, so the kill falls inside it.

is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'stopped');
$t->alertd(@hour);
my @k = map { $t->alert(client => 'k', reason => 'kill') } 1 .. 4;
ok($t->wait_for(sub { $t->delivered($r, $k[0]) }), 'first sent');

sub kgroup {
    my $s = eval { $t->saved_state } or return undef;
    my ($g) = grep { $_->{first_id} eq $k[0] } @{$s->{groups}};
    return $g;
}

ok($t->wait_for(sub { my $g = kgroup(); $g && $g->{count} == 3 }),
   'the 3 repeats are saved');
kill 'KILL', $t->alertd_pid;
$t->reap($t->alertd_pid);
ok(!$t->delivered($r, "$k[0]~1"), 'killed inside the window: no fold yet');

my $open = scalar(@{$t->saved_state->{groups}});
$t->alertd(@hour);
my ($started) = ($t->alertd_log =~ /.*\binfo: started (.*)/g)[-1];
like($started, qr/ $open group\(s\) open/,
     'after SIGKILL every open group is restored');
is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'stopped');
my $kg = kgroup();
is($kg && $kg->{count}, 3, 'the killed group, with its count');

# its window would end in an hour: as if alertd had been down that long,
# it ends now; the restart sends the fold the kill held
my $s = $t->saved_state;
$_->{end} = int(time * 1000) for grep { $_->{first_id} eq $k[0] }
                                     @{$s->{groups}};
$t->write_state($s);
$t->alertd(@hour);
ok($t->wait_for(sub { $t->delivered($r, "$k[0]~1") }),
   'after SIGKILL and restart the folded alert is sent');
is(by_id()->{"$k[0]~1"}{json}{count}, 3, 'with the count from before');

my @ids = map { $_->{id} } $t->accepted($r);
is(scalar(@ids), scalar(AlertdTest::uniq(@ids)), 'every id once');

$t->done;
