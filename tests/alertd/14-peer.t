#!/usr/bin/perl
# Alerts of unidentified clients: nginx writes "client": null and the
# connection's address as "peer".  Such alerts are grouped by peer, so
# two peers are two alerts, each naming its peer in the webhook body and
# as an Alertmanager label; one peer's repeats still fold.  Client alerts
# are grouped and delivered as before, without a peer.  The peer survives
# a restart, in the open groups and in the outbox, and files written
# without one are still read.
#
# Nothing is timed.  alertd runs with a repeat interval and a poll
# interval of an hour: what arrives within the test's (generous) wait
# was sent at once.  A window ends when the test makes it end: alertd is
# stopped and the saved windows end now, as if it had been down for the
# hour; the restart sends the folds.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use JSON::PP;
use Test::More;
use Time::HiRes qw(time);

my $t = AlertdTest->new;
my $secret = $t->secret('hook', 'peer-test-secret-0123456789abcdef');
my $r = $t->receiver(secret => $secret);

# a second receiver stands in for Alertmanager: it records what is posted
my $am = $t->receiver(secret => $secret);
my $am_url = "http://127.0.0.1:$am->{port}";

$t->policy({ webhook => $r->{url}, secret => 'hook' },
           { alertmanager => $am_url });
my @hour = ('--repeat-interval', '1h', '--poll-interval', '1h');
$t->alertd(@hour);

sub hook { my %h = map { $_->{id} => $_->{json} } $t->accepted($r); \%h }

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

sub am_has { my $h = am(); return !grep { !$h->{$_} } @_ }

# alertd stopped, the saved windows of the groups whose first alert is
# one of ids (all without ids) end now; returns how many groups are open
sub end_windows {
    my (@ids) = @_;
    my %end = map { $_ => 1 } @ids;
    my $s = $t->saved_state;
    for my $g (@{$s->{groups}}) {
        $g->{end} = int(time * 1000) if !@ids || $end{$g->{first_id}};
    }
    $t->write_state($s);
    return scalar(@{$s->{groups}});
}

# an alert delivered to both sinks: what was queued before it was sent
sub marker {
    my ($reason) = @_;
    my $id = $t->alert(client => 'agent', reason => $reason);
    return $t->wait_for(sub { $t->delivered($r, $id) && am_has($id) });
}

sub unknown {
    my (%f) = @_;
    return $t->alert(client => undef, reason => 'client_unknown', %f);
}

# two peers, a null client without a peer (an older module), a client,
# then a repeat of the first peer and of the client
my $p5 = unknown(peer => '10.0.0.5', sample => 'GET /a');
my $p99 = unknown(peer => '10.0.0.99', sample => 'GET /b');
my $np = unknown();
my $c1 = $t->alert(client => 'agent', reason => 'client_unknown');
my $p5b = unknown(peer => '10.0.0.5', sample => 'GET /c');
my $c2 = $t->alert(client => 'agent', reason => 'client_unknown',
                   peer => undef);

ok($t->wait_for(sub { $t->delivered($r, $p5, $p99, $np, $c1) }),
   'two peers, no peer and a client: four alerts at once');
ok($t->wait_for(sub { am_has($p5, $p99, $np, $c1) }),
   'and the same four to Alertmanager');
ok(marker('mark1'), 'a later alert is delivered');
is(scalar($t->accepted($r)), 5,
   'the repeats before it wait for the interval: nothing else was sent');

my $h = hook();
is($h->{$p5}{peer}, '10.0.0.5', 'webhook: the first peer');
is($h->{$p99}{peer}, '10.0.0.99', 'webhook: the second peer');
is($h->{$p99}{client}, undef, 'its client stays null');
ok(!exists $h->{$np}{peer}, 'no peer, no peer member');
is_deeply([sort keys %{$h->{$c1}}],
          [qw(client count id kind reason route sample severity source
              time window)],
          'a client alert has the members it always had');

my $a = am();
is($a->{$p5}{labels}{peer}, '10.0.0.5', 'Alertmanager: label peer');
is($a->{$p99}{labels}{peer}, '10.0.0.99', 'the other peer');
is($a->{$p99}{labels}{client}, '', 'label client empty');
like($a->{$p99}{annotations}{summary},
     qr/^an unidentified client \(peer 10\.0\.0\.99\) denied /,
     'the summary names the peer');
ok(!exists $a->{$np}{labels}{peer}, 'no peer, no peer label');
is_deeply([sort keys %{$a->{$c1}{labels}}],
          [qw(alertname client reason route severity source)],
          'a client alert has the labels it always had');
like($a->{$c1}{annotations}{summary}, qr/^client agent denied /,
     'and its summary');

# the repeats fold as before: one peer's into its group, the client's
is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'alertd stopped');
end_windows();
$t->alertd(@hour);
ok($t->wait_for(sub { $t->delivered($r, "$p5~1", "$c1~1") }),
   'after the interval: the folded repeats of the peer and the client');
ok($t->wait_for(sub { am_has("$p5~1", "$c1~1") }),
   'to Alertmanager too');
$h = hook();
is($h->{"$p5~1"}{count}, 1, 'the peer\'s repeat folded');
is($h->{"$p5~1"}{peer}, '10.0.0.5', 'the folded alert names the peer');
is($h->{"$p5~1"}{sample}, 'GET /c', 'and has the latest sample');
is($h->{"$c1~1"}{count}, 1, 'the client\'s repeat folded');
ok(!exists $h->{"$c1~1"}{peer}, 'the folded client alert has no peer');
is(am()->{"$p5~1"}{labels}{peer}, '10.0.0.5',
   'the folded alert\'s labels are its first alert\'s');

ok(marker('mark2'), 'a later alert is delivered');
my @ids = map { $_->{id} } $t->accepted($r);
is(scalar(@ids), 8, 'nothing else before it: the second peer was not '
   . 'folded');
is(scalar(@ids), scalar(AlertdTest::uniq(@ids)), 'every id once');

# open groups keep their peer across SIGKILL; a group saved without one
# (an older alertd) is still read
$t->stop($t->alertd_pid, 'TERM');
$t->alertd(@hour);
my @k7 = map { unknown(peer => '10.0.0.7', reason => 'kill') } 1 .. 2;
my @k8 = map { unknown(peer => '10.0.0.8', reason => 'kill') } 1 .. 2;
ok($t->wait_for(sub { $t->delivered($r, $k7[0], $k8[0]) }),
   'two peers\' first alerts sent');

# the repeats are saved (the saved groups have them): then kill -9
sub saved_count {
    my ($id) = @_;
    my $s = eval { $t->saved_state } or return -1;
    my ($g) = grep { $_->{first_id} eq $id } @{$s->{groups}};
    return $g ? $g->{count} : -1;
}
ok($t->wait_for(sub { saved_count($k7[0]) == 1 && saved_count($k8[0]) == 1 }),
   'their repeats are saved');
kill 'KILL', $t->alertd_pid;
$t->reap($t->alertd_pid);

my $json = JSON::PP->new->canonical;
my $state = $t->saved_state;
my %saved = map { $_->{first_id} => $_->{last} } @{$state->{groups}};
is($saved{$k7[0]}{peer}, '10.0.0.7', 'the state file keeps the peer');
delete $saved{$k8[0]}{peer};
$t->write_state($state);

# the windows of the two end now: the restart sends their folds
my $open = end_windows($k7[0], $k8[0]);
$t->alertd(@hour);
my ($started) = ($t->alertd_log =~ /.*\binfo: started (.*)/g)[-1];
like($started, qr/ $open group\(s\) open/, 'the groups are restored');
ok($t->wait_for(sub { $t->delivered($r, "$k7[0]~1", "$k8[0]~1") }),
   'after the restart the folded alerts are sent');
$h = hook();
is($h->{"$k7[0]~1"}{peer}, '10.0.0.7', 'naming the peer from before');
ok(!exists $h->{"$k8[0]~1"}{peer}, 'a group saved without a peer has none');

# the outbox keeps the peer; a file written without one is still read
$t->stop($t->alertd_pid, 'TERM');
my $r2 = $t->receiver(secret => $secret, fail_until => $t->dir . '/ok');
$t->policy({ webhook => $r2->{url}, secret => 'hook' });
$t->alertd;
my $o1 = unknown(peer => '10.0.0.42', reason => 'outbox');
my $o2 = unknown(peer => '10.0.0.43', reason => 'outbox');
ok($t->log_has(qr/alert \Q$o1\E not delivered/)
   && $t->wait_for(sub { grep { /-\Q$o2\E\.json$/ } $t->outbox }),
   'both queued, the receiver failing');
is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'alertd stopped');

my %file = map { /-(\w+)\.json$/ ? ($1 => $_) : () } $t->outbox;
my $f1 = $json->decode($t->read_file($t->state . "/outbox/$file{$o1}"));
is($f1->{alert}{peer}, '10.0.0.42', 'the outbox file keeps the peer');
my $f2 = $t->state . "/outbox/$file{$o2}";
my $e2 = $json->decode($t->read_file($f2));
delete $e2->{alert}{peer};
$t->write_file($f2, $json->encode($e2));

$t->write_file('ok', '');
$t->alertd;
ok($t->wait_for(sub { $t->delivered($r2, $o1, $o2) }),
   'after a restart both are delivered from the outbox');
my %h2 = map { $_->{id} => $_->{json} } $t->accepted($r2);
is($h2{$o1}{peer}, '10.0.0.42', 'with the peer it was queued with');
ok(!exists $h2{$o2}{peer}, 'a file without a peer is sent without one');

$t->done;
