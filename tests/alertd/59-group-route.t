#!/usr/bin/perl
# The route is part of an alert's group, as it is of its Alertmanager
# labels.  A fold carries its latest alert's fields: folded into the
# group of an alert on another route, a repeat on route "logs" made the
# fold an Alertmanager alert of its own (route="logs"), and the alert
# the group's first one opened (route="prom") was left to resolve while
# the storm went on.  Now an alert on another route is sent at once, as
# the first of its own group, and the fold of the first group keeps its
# route and counts only its own repeats.
#
# An alertd that left the route out of the group fails the tests marked
# (old): the repeat on "logs" not sent at once, the fold on "logs" with a
# count of 2, and in Alertmanager the fold not the alert the first one
# opened.
#
# Nothing is timed: the windows are an hour, in the alerts' own time,
# and the alerts two hours old, written before alertd starts: their
# windows are over by alertd's clock once the journal is read.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use AlertdTest;
use HTTP::Tiny;
use JSON::PP;
use Test::More;
use lib "$FindBin::Bin/../lib";
use Airlock::Prereq qw(absent);
use Time::HiRes qw(time);

my $am = $ENV{AIRLOCK_ALERTMANAGER} // '/usr/bin/prometheus-alertmanager';
absent("$am not installed") unless -x $am;

my $t = AlertdTest->new;
my $port = AlertdTest::free_port();
my $base = "http://127.0.0.1:$port";

my $http = HTTP::Tiny->new(timeout => 5, proxy => undef,
                           http_proxy => undef, https_proxy => undef);

$t->write_file('alertmanager.yml', <<'EOF');
route:
  receiver: "null"
receivers:
  - name: "null"
EOF

my $pid = $t->spawn('alertmanager', $am,
                    '--config.file=' . $t->dir . '/alertmanager.yml',
                    '--storage.path=' . $t->dir . '/am-data',
                    '--cluster.listen-address=',
                    "--web.listen-address=127.0.0.1:$port",
                    '--log.level=warn');

ok($t->wait_for(sub { $http->get("$base/-/ready")->{success} }, 60),
   'Alertmanager is up')
    or diag($t->read_file('alertmanager.log'));

my $secret = $t->secret('hook', 'FAKE-alertd-group-route-secret');
my $r = $t->receiver(secret => $secret);
$t->policy({ webhook => $r->{url}, secret => 'hook' },
           { alertmanager => $base });
sub am_alerts {
    my $res = $http->get("$base/api/v2/alerts");
    return () unless $res->{success};
    return @{decode_json($res->{content})};
}

sub body {
    my ($id) = @_;
    my @b = grep { $_->{id} eq $id } map { $_->{json} } $t->accepted($r);
    return $b[-1];
}

# two hours ago: the first alert on prom, a repeat on prom, one on logs;
# then a marker, another client.  Written before alertd starts: it reads
# them in one go, and ends the windows (by its clock) only then.  Read
# as written, live, a window could end between two of them.
my $t0 = time - 7200;
my %f = (client => 'agent', reason => 'path');
my ($first, $l1) = $t->alert_line(%f, route => 'prom',
                                  time => AlertdTest::now_rfc3339($t0));
my ($repeat, $l2) = $t->alert_line(%f, route => 'prom',
                                   time => AlertdTest::now_rfc3339($t0 + 1));
my ($logs, $l3) = $t->alert_line(%f, route => 'logs',
                                 time => AlertdTest::now_rfc3339($t0 + 2));
my ($mark, $l4) = $t->alert_line(client => 'worker', reason => 'no_route');
$t->append($l1 . $l2 . $l3 . $l4);

$t->alertd('--poll-interval', '1h', '--repeat-interval', '1h');

ok($t->wait_for(sub { $t->delivered($r, $first, $mark) }),
   'the first alert and the marker are delivered');
ok($t->drained($r), 'nothing left queued');
ok($t->delivered($r, $logs), '(old) the alert on another route is sent at '
   . 'once: the first of its group');
ok(!$t->delivered($r, $repeat), 'the repeat on the same route is not');

# the first group's window, an hour from t0, is over by alertd's clock:
# its fold is sent
my $fold = "$first~1";
ok($t->wait_for(sub { $t->delivered($r, $fold) }), "the fold $fold is sent");
my $b = body($fold) // {};
is($b->{route}, 'prom', '(old) the fold keeps its group\'s route');
is($b->{count}, 1, '(old) ... and counts its own repeat only');
ok(!$t->delivered($r, "$logs~1"), 'the group on logs has no fold');

ok($t->wait_for(sub { !$t->outbox }), 'Alertmanager has them all');
my @am = grep { ($_->{labels}{client} // '') eq 'agent' } am_alerts();
my %by = map { ($_->{labels}{route} // '') => $_ } @am;
is(scalar(@am), 2, 'Alertmanager has two alerts of the agent')
    or diag(explain(\@am));
is(join(',', sort keys %by), 'logs,prom', '... one per route');
is($by{logs}{annotations}{id} // '', $logs,
   '(old) the one on logs is the alert raised on it');
is($by{prom}{annotations}{id} // '', $fold,
   '(old) the one on prom was updated by the fold of its group')
    or diag(explain($by{prom}));

is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'alertd stops cleanly');
$t->stop($pid, 'TERM');

$t->done;
