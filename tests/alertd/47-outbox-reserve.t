#!/usr/bin/perl
# Half of a sink's outbox is kept for the clients' alerts.  Anyone who
# reaches the proxy's port can raise an unidentified peer's alert, from
# as many addresses as it has, each a group of its own: with the sink
# down, such a flood must not crowd out the agent's quarantine.  An
# unidentified peer's alert is queued only while the sink holds fewer
# than half of --outbox-max, rounded up (3 of 5); beyond that it is
# dropped and counted, as at the bound.  A client's alerts may still
# fill the outbox to --outbox-max, and the bound holds for them.  The
# quarantine queued behind the flood is delivered once the sink is back,
# after the report of what was dropped.
#
# Nothing is timed: the sink is down until a file exists, and it is
# back before alertd starts again (a restart keeps no backoff).

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
my $secret = $t->secret('hook', 'reserve-test-FAKE-secret-0123456789');
my $until = "$d/sink-recovers";
my $sink = $t->receiver(secret => $secret, fail_until => $until);

$t->policy({ webhook => $sink->{url}, secret => 'hook' });

my $help = `\Q${\$t->bin}\E --help`;
like($help, qr/unidentified peer's alert is queued only\s+while the sink holds fewer than half/,
     '--help says the share of an unidentified peer\'s alert');

my @run = ('--outbox-max', '5', '--repeat-interval', '1h',
           '--poll-interval', '1h');
$t->alertd(@run);

# ten new peers, each its own group, in one write; then the agent is
# quarantined
my ($burst, @peers) = ('');
for my $i (1 .. 10) {
    my ($id, $line) = $t->alert_line(client => undef,
                                     peer => "2001:db8::$i",
                                     reason => 'client_unknown');
    push @peers, $id;
    $burst .= $line;
}
$t->append($burst);

my $q = $t->alert(kind => 'quarantine', severity => 'critical',
                  client => 'agent', reason => 'no_route', count => 20,
                  quarantine_until => AlertdTest::now_rfc3339(time + 600));

ok($t->log_has(qr/\bqueued alert \Q$q\E: quarantine, client agent\b/),
   'the agent\'s quarantine is queued behind the flood');

sub queued {
    my %in = map { /^[0-9a-f]{16}-(.+)\.json$/ ? ($1 => 1) : () } $t->outbox;
    return \%in;
}

my $in = queued();
ok($in->{$q}, 'its file is in the outbox');
is_deeply([grep { $in->{$_} } @peers], [@peers[0 .. 2]],
          'the first 3 peers\' alerts are queued, no more');
my $log = $t->alertd_log;
my @start = $log =~ /warning: webhook \S+: 3 alert\(s\) queued, the most an unidentified peer's alert may find \(half of --outbox-max 5; the rest is kept for the clients' alerts\): alert (\w+)/g;
is_deeply(\@start, [$peers[3]],
          'one warning when dropping begins, naming the first dropped');
is(scalar(grep { $log =~ /dropped \(outbox full\): alert \Q$_\E: / }
          @peers[3 .. 9]), 7, 'the 7 other peers\' alerts are dropped');
is(scalar($t->outbox), 4,
   'and no report of them takes a place kept for the clients');

# the clients' alerts fill the outbox to the bound, and no further
my $c5 = $t->alert(client => 'agent', reason => 'param_invalid');
ok($t->log_has(qr/\bqueued alert \Q$c5\E: /),
   'a client\'s alert takes the 5th place');
my $c6 = $t->alert(client => 'worker', reason => 'no_route');
ok($t->log_has(qr/dropped \(outbox full\): alert \Q$c6\E: /),
   'a 6th is dropped: the bound holds for clients');
is(scalar($t->outbox), 5, '5 alerts queued');

is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'SIGTERM: exit 0');
my $st = decode_json($t->read_file($t->state . '/offset') || '{}');
my ($rec) = @{$st->{dropped} // []};
is($rec && $rec->{count}, 8, 'the state file counts the 8 dropped');
is($rec && $rec->{dropped}{critical}, 0, 'none of them critical');

# the sink is back before alertd starts again
$t->write_file($until, '');
$t->alertd(@run);

ok($t->wait_for(sub {
       $t->delivered($sink, @peers[0 .. 2], $q, $c5)
       && grep { ($_->{json}{kind} // '') eq 'alerts_dropped' }
               $t->accepted($sink)
   }, 60), 'after recovery the sink gets the queued alerts and a report');

my %got = map { $_->{id} => $_->{json} } $t->accepted($sink);
is($got{$q}{kind}, 'quarantine', 'the quarantine is delivered');
is($got{$q}{client}, 'agent', 'of the agent');
is($got{$q}{severity}, 'critical', 'critical');
my ($rep) = grep { ($_->{kind} // '') eq 'alerts_dropped' } values %got;
is($rep && $rep->{count}, 8, 'the report counts the 8 dropped');
is($rep && $rep->{dropped}{first_id}, $peers[3], 'from the 4th peer');
is($rep && $rep->{dropped}{last_id}, $c6, 'to the client\'s 6th');
ok(!grep({ $got{$_} } @peers[3 .. 9], $c6),
   'no dropped alert is delivered');

ok($t->wait_for(sub { scalar($t->outbox) == 0 }), 'the outbox drains');

$t->done;
