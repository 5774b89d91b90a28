#!/usr/bin/perl
# The wall clock steps back (an appliance that booted with its clock
# ahead, then NTP): a group window opened by the clock before the step
# starts in the future, and would end only when the clock is back
# there, an hour or a day later, every repeat of the storm folded and
# held until then.  Such a window is taken to start now: the repeats are
# sent when one interval has passed, as a storm's always are.
#
# The step is not made to the machine's clock: the group is saved as an
# alertd whose clock was a day ahead saved it (its window starts a day
# from now), and alertd is started on it.  What must happen is waited
# for (the folded alert delivered); the window is 2 s, the only time
# that has to pass, with a poll an hour away so that only the window's
# end wakes alertd.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;
use Time::HiRes qw(time);

my $t = AlertdTest->new;
my $secret = $t->secret('hook', 'clock-test-secret-0123456789abcdef');
my $r = $t->receiver(secret => $secret);
$t->policy({ webhook => $r->{url}, secret => 'hook' });

my @hour = ('--repeat-interval', '1h', '--poll-interval', '1h');
my $day = 24 * 3600 * 1000;

sub by_id { my %h = map { $_->{id} => $_ } $t->accepted($r); return \%h }

$t->alertd(@hour);
my $first = $t->alert(client => 'agent', reason => 'clock');
ok($t->wait_for(sub { $t->delivered($r, $first) }), 'the first is sent');
is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'stopped');

# saved by a clock a day ahead: the window of 2 s starts a day from now
my $s = $t->saved_state;
my ($g) = grep { $_->{first_id} eq $first } @{$s->{groups}};
ok($g, 'its group is saved open');
my $ahead = int(time * 1000) + $day;
($g->{start}, $g->{end}) = ($ahead, $ahead + 2000);
$t->write_state($s);

$t->alertd('--repeat-interval', '2s', '--poll-interval', '1h');
my $repeat = $t->alert(client => 'agent', reason => 'clock');

ok($t->wait_for(sub { $t->delivered($r, "$first~1") }),
   'the repeat is sent folded one interval later, not a day later');
is(by_id()->{"$first~1"}{json}{count}, 1, 'with its count');
ok(!$t->delivered($r, $repeat), 'the repeat is not sent on its own');
like($t->alertd_log, qr/\bwarn(?:ing)?: .*clock .*back/,
     'the log says the clock went back');

my $s2 = $t->saved_state;
ok(!grep({ $_->{start} > time * 1000 + 5000 } @{$s2->{groups}}),
   'no saved window starts in the future any more');

# the storm goes on: one folded alert per interval
my $more = $t->alert(client => 'agent', reason => 'clock');
ok($t->wait_for(sub { $t->delivered($r, "$first~2") }),
   'the next window folds and sends as usual');

my @ids = map { $_->{id} } $t->accepted($r);
is(scalar(@ids), scalar(AlertdTest::uniq(@ids)), 'every id once');

$t->done;
