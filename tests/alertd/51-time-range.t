#!/usr/bin/perl
# The times alertd writes are RFC 3339 times with a four-digit year, also
# when the journal's time is near the end of what it reads (a year 1970
# to 9999 time with an offset).  An alert at 9999-12-31T23:59:59Z was
# posted to Alertmanager with an endsAt in year 10000 (its time plus two
# repeat intervals), and one a fraction of a second before 1970 (a
# 1970-01-01 time with a "+00:01" offset) with a startsAt of
# "1969-12-31T23:59:01.-500Z": Alertmanager refuses such an alert whole.
# Found by tests/fuzz/fuzz_alertd_line.c.
#
# A time more than 5 s ahead of alertd's clock is now taken at alertd's
# clock in the Alertmanager body (startsAt), so the year 9999 reaches
# Alertmanager as a quarantine's end (endsAt = quarantine_until).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use Test::More;

my $t = AlertdTest->new;
my $secret = $t->secret('hook', 'time-range-test-FAKE-0123456789abcdef');

# a receiver stands in for Alertmanager: it records what is posted
my $am = $t->receiver(secret => $secret);
my $am_url = "http://127.0.0.1:$am->{port}";

$t->policy({ alertmanager => $am_url });
$t->alertd('--repeat-interval', '1h', '--poll-interval', '1h');

# Alertmanager alerts by their id annotation
sub am {
    my %h;
    for my $rec ($t->records($am)) {
        next unless $rec->{status} =~ /^2\d\d$/
                    && $rec->{path} eq '/api/v2/alerts';
        $h{$_->{annotations}{id}} = $_ for @{$rec->{json} // []};
    }
    return \%h;
}

my %time = (
    last     => '9999-12-31T23:59:59.000Z',
    behind   => '9999-12-31T23:30:00.000-01:00',
    before   => '1970-01-01T00:00:00.500+00:01',
    first    => '1970-01-01T00:00:00.000Z',
);

my $t0 = time;
my %id;
for my $k (sort keys %time) {
    $id{$k} = $t->alert(client => "agent-$k", time => $time{$k});
}

# quarantines that end at the end of 9999, and past it with an offset
my %until = (
    q_last   => '9999-12-31T23:59:59.999Z',
    q_behind => '9999-12-31T23:30:00.000-01:00',
);
for my $k (sort keys %until) {
    $id{$k} = $t->alert(client => "agent-$k", kind => 'quarantine',
                        severity => 'critical',
                        quarantine_until => $until{$k});
}

ok($t->wait_for(sub { my $h = am(); !grep { !$h->{$_} } values %id }),
   'every alert is posted')
    or diag($t->alertd_log);

my $h = am();
my $rfc3339 = qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

for my $k (sort keys %id) {
    my $what = $time{$k} // "until $until{$k}";
    my $a = $h->{$id{$k}} // {};
    like($a->{startsAt} // '', $rfc3339, "$what: startsAt is a time")
        or diag($a->{startsAt});
    like($a->{endsAt} // '', $rfc3339, "$what: endsAt is a time")
        or diag($a->{endsAt});
}

my $now = AlertdTest::now_rfc3339(time + 1);
my $from = AlertdTest::now_rfc3339($t0 - 1);
for my $k ('last', 'behind') {
    my $a = $h->{$id{$k}} // {};
    ok(($a->{startsAt} // '') ge $from && ($a->{startsAt} // '') le $now,
       "$time{$k}: far ahead of alertd's clock, startsAt is when it was "
       . 'sent') or diag($a->{startsAt});
}
is(($h->{$id{q_last}} // {})->{endsAt}, '9999-12-31T23:59:59.999Z',
   'a quarantine until the last ms of 9999: endsAt as written');
is(($h->{$id{q_behind}} // {})->{endsAt}, '9999-12-31T23:59:59.999Z',
   'one until past 9999 with its offset: the latest time written');
is(($h->{$id{before}} // {})->{startsAt}, '1970-01-01T00:00:00.000Z',
   'a time before 1970 with its offset: the first');

$t->done;
