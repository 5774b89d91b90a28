#!/usr/bin/perl
# The times alertd writes are RFC 3339 times with a four-digit year, also
# when the journal's time is near the end of what it reads (a year 1970
# to 9999 time with an offset).  An alert at 9999-12-31T23:59:59Z was
# posted to Alertmanager with an endsAt in year 10000 (its time plus two
# repeat intervals), and one a fraction of a second before 1970 (a
# 1970-01-01 time with a "+00:01" offset) with a startsAt of
# "1969-12-31T23:59:01.-500Z": Alertmanager refuses such an alert whole.
# Found by tests/fuzz/fuzz_alertd_line.c.

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

my %id;
for my $k (sort keys %time) {
    $id{$k} = $t->alert(client => "agent-$k", time => $time{$k});
}

ok($t->wait_for(sub { my $h = am(); !grep { !$h->{$_} } values %id }),
   'every alert is posted')
    or diag($t->alertd_log);

my $h = am();
my $rfc3339 = qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

for my $k (sort keys %time) {
    my $a = $h->{$id{$k}} // {};
    like($a->{startsAt} // '', $rfc3339, "$time{$k}: startsAt is a time")
        or diag($a->{startsAt});
    like($a->{endsAt} // '', $rfc3339, "$time{$k}: endsAt is a time")
        or diag($a->{endsAt});
}

my $last = $h->{$id{last}} // {};
is($last->{startsAt}, '9999-12-31T23:59:59.000Z',
   'the last second of 9999: startsAt as written');
is($last->{endsAt}, '9999-12-31T23:59:59.999Z',
   'endsAt: the latest time written');
is(($h->{$id{behind}} // {})->{startsAt}, '9999-12-31T23:59:59.999Z',
   'a time past 9999 with its offset: the latest time written');
is(($h->{$id{before}} // {})->{startsAt}, '1970-01-01T00:00:00.000Z',
   'a time before 1970 with its offset: the first');

$t->done;
