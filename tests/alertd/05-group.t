#!/usr/bin/perl
# Grouping: repeats of one (kind, client, reason) within the repeat
# interval are folded into one alert sent when the interval ends; the
# fold survives a SIGKILL.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;
use Time::HiRes qw(sleep time);

my $t = AlertdTest->new;
my $secret = $t->secret('hook', 'group-test-secret-0123456789abcdef');
my $r = $t->receiver(secret => $secret);
$t->policy({ webhook => $r->{url}, secret => 'hook' });
$t->alertd('--repeat-interval', '2s');

sub by_id { my %h = map { $_->{id} => $_ } $t->accepted($r); return \%h }

# five alerts of one group at once, plus two that are not in it
my $t0 = time;
my @five = map { $t->alert(client => 'agent', reason => 'no_route',
                           sample => "GET /x$_") } 1 .. 5;
my $other = $t->alert(client => 'agent', reason => 'method');
my $quar = $t->alert(client => 'agent', reason => 'no_route',
                     kind => 'quarantine', severity => 'critical',
                     quarantine_until => AlertdTest::now_rfc3339(time + 600));

ok($t->wait_for(sub { $t->delivered($r, $five[0], $other, $quar) }, 2),
   'the first of the group, another reason and another kind: at once');
is(scalar($t->accepted($r)), 3, 'and nothing else yet');

my $fid = "$five[0]-1";
ok($t->wait_for(sub { $t->delivered($r, $fid) }, 4),
   'after the interval: one folded alert, id <first>-1');
my $took = time - $t0;
ok($took >= 1.5, sprintf('not before the interval ended (%.2f s)', $took));

my $f = by_id()->{$fid}{json};
is($f->{count}, 4, 'count: the 4 alerts folded');
is($f->{window}, 2, 'window: the repeat interval');
ok($f->{folded}, 'folded: true');
is($f->{client}, 'agent', 'client');
is($f->{reason}, 'no_route', 'reason');
is($f->{kind}, 'deny_threshold', 'kind');
is($f->{sample}, 'GET /x5', 'sample: the latest one');

sleep 2.5;
is(scalar($t->accepted($r)), 4, 'an empty window sends nothing more');

# after the group closed, the next alert goes out at once again
my $again = $t->alert(client => 'agent', reason => 'no_route');
ok($t->wait_for(sub { $t->delivered($r, $again) }, 2),
   'the next repeat after a quiet interval is sent at once');

# a storm over two windows, by alert time: one alert per window
sleep 2.5;                      # let $again's group close
my $base = time;
my @storm = (
    $t->alert(reason => 'storm', time => AlertdTest::now_rfc3339($base)),
    $t->alert(reason => 'storm', time => AlertdTest::now_rfc3339($base + 0.5)),
    $t->alert(reason => 'storm', time => AlertdTest::now_rfc3339($base + 1)),
    $t->alert(reason => 'storm', time => AlertdTest::now_rfc3339($base + 2.5)),
    $t->alert(reason => 'storm', time => AlertdTest::now_rfc3339($base + 3)),
);
ok($t->wait_for(sub { $t->delivered($r, $storm[0], "$storm[0]-1") }, 2),
   'storm: the first alert, and the first window folded as soon as a '
   . 'later alert shows it ended');
is(by_id()->{"$storm[0]-1"}{json}{count}, 2, 'first window: 2 folded');
ok($t->wait_for(sub { $t->delivered($r, "$storm[0]-2") }, 6),
   'second window folded: id <first>-2');
is(by_id()->{"$storm[0]-2"}{json}{count}, 2, 'second window: 2 folded');

# the fold survives SIGKILL: the group is saved with the offset
$t->stop($t->alertd_pid, 'TERM');
$t->alertd('--repeat-interval', '4s');
my @k = map { $t->alert(client => 'k', reason => 'kill') } 1 .. 4;
ok($t->wait_for(sub { $t->delivered($r, $k[0]) }, 2), 'first sent');
sleep 0.5;
kill 'KILL', $t->alertd_pid;
$t->reap($t->alertd_pid, 5);
$t->alertd('--repeat-interval', '4s');
my ($started) = ($t->alertd_log =~ /.*\binfo: started (.*)/g)[-1];
like($started, qr/ [1-9] group\(s\) open/, 'the open group is restored');
ok($t->wait_for(sub { $t->delivered($r, "$k[0]-1") }, 6),
   'after SIGKILL and restart the folded alert is sent');
is(by_id()->{"$k[0]-1"}{json}{count}, 3, 'with the count from before');

my @ids = map { $_->{id} } $t->accepted($r);
is(scalar(@ids), scalar(AlertdTest::uniq(@ids)), 'every id once');

$t->done;
