#!/usr/bin/perl
# A quarantine stamped by a wall clock ahead of alertd's (nginx's clock,
# stepped back since: NTP after a boot with the clock ahead) is sent to
# Alertmanager as starting when it is sent, and must end as long after
# that as the quarantine lasts (quarantine_until - time: nginx times it
# on its monotonic clock), not at the quarantine_until the clock that
# was ahead wrote: a quarantine of an hour stamped a day ahead fired for
# a day and an hour.  One within the 5 s of slack, or not ahead, keeps
# its quarantine_until as endsAt.
#
# The Alertmanager is the receiver fixture, which records the bodies
# posted to it.  Nothing is timed; the repeat interval is a minute, so
# that two of them end well before the quarantine of an hour.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;
use Time::HiRes qw(time);
use Time::Local qw(timegm);

my $t = AlertdTest->new;
my $secret = $t->secret('hook', 'ahead-test-secret-FAKE-0123456789abcdef');
my $r = $t->receiver(secret => $secret);
$t->policy({ alertmanager => "http://127.0.0.1:$r->{port}" });

sub at { AlertdTest::now_rfc3339(@_) }
sub epoch {
    my ($s) = @_;
    my ($y, $mo, $d, $h, $mi, $sec) =
        ($s // '') =~ /^(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)/ or return 0;
    return timegm($sec, $mi, $h, $d, $mo - 1, $y);
}
sub posted {
    my ($id) = @_;
    for my $rec ($t->records($r)) {
        my $a = ref $rec->{json} eq 'ARRAY' ? $rec->{json}[0] : undef;
        return $a if $a && ($a->{annotations}{id} // '') eq $id;
    }
    return undef;
}

$t->alertd('--repeat-interval', '1m', '--poll-interval', '1h');

my $now = time;
my $day = 24 * 3600;
my %q = (
    ahead => [$now + $day, $now + $day + 3600],
    near  => [$now + 2, $now + 2 + 3600],
    now   => [$now, $now + 3600],
);
my %id = map {
    $_ => $t->alert(kind => 'quarantine', severity => 'critical',
                    client => 'agent', reason => $_,
                    time => at($q{$_}[0]),
                    quarantine_until => at($q{$_}[1]))
} sort keys %q;

ok($t->wait_for(sub { !grep { !posted($_) } values %id }),
   'the three quarantines are posted');
my $sent = time;

my $a = posted($id{ahead}) // {};
ok(epoch($a->{startsAt}) >= int($now) && epoch($a->{startsAt}) <= $sent,
   'one stamped a day ahead starts when it is sent')
    or diag("startsAt $a->{startsAt}");
ok(epoch($a->{endsAt}) >= epoch($a->{startsAt}) + 3600 - 1
   && epoch($a->{endsAt}) <= epoch($a->{startsAt}) + 3600 + 1,
   '... and ends the hour the quarantine lasts after that, not a day later')
    or diag("startsAt $a->{startsAt}, endsAt $a->{endsAt}");
is($a->{annotations}{quarantine_until}, at($q{ahead}[1]),
   '... its quarantine_until annotation as nginx wrote it');

for my $k ('near', 'now') {
    my $b = posted($id{$k}) // {};
    is($b->{endsAt}, at($q{$k}[1]),
       "one stamped $k ends at its quarantine_until")
        or diag("endsAt $b->{endsAt}");
}

$t->done;
