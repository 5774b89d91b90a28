#!/usr/bin/perl
# A real Alertmanager (Debian's prometheus-alertmanager) as a sink: alerts
# posted to /api/v2/alerts are listed back with Airlock's labels, also
# when Alertmanager comes up only after the alert was written.

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
use Time::HiRes qw(sleep time);

my $am = $ENV{AIRLOCK_ALERTMANAGER} // '/usr/bin/prometheus-alertmanager';
absent("$am not installed") unless -x $am;

my $t = AlertdTest->new;
my $port = AlertdTest::free_port();
my $base = "http://127.0.0.1:$port";

# environment proxies must not get between the test and Alertmanager
my $http = HTTP::Tiny->new(timeout => 5, proxy => undef,
                           http_proxy => undef, https_proxy => undef);

$t->write_file('alertmanager.yml', <<'EOF');
route:
  receiver: "null"
receivers:
  - name: "null"
EOF

$t->policy({ alertmanager => $base });

# alertd first: Alertmanager is down when the first alert is written
$t->alertd;
my $id = $t->alert(client => 'agent', reason => 'no_route', route => 'prom',
                   count => 5, window => 60, sample => 'GET /x');
ok($t->log_has(qr/alertmanager \S+: alert \Q$id\E not delivered/),
   'Alertmanager down: the attempt fails and is retried');

my $pid = $t->spawn('alertmanager', $am,
                    '--config.file=' . $t->dir . '/alertmanager.yml',
                    '--storage.path=' . $t->dir . '/am-data',
                    '--cluster.listen-address=',
                    "--web.listen-address=127.0.0.1:$port",
                    '--log.level=warn');

ok($t->wait_for(sub { $http->get("$base/-/ready")->{success} }, 60),
   'Alertmanager is up')
    or diag($t->read_file('alertmanager.log'));

sub am_alerts {
    my $res = $http->get("$base/api/v2/alerts");
    return () unless $res->{success};
    return @{decode_json($res->{content})};
}

sub find_alert {
    my ($id) = @_;
    return (grep { ($_->{annotations}{id} // '') eq $id } am_alerts())[0];
}

# generous: the retries against the Alertmanager that was down back off
ok($t->wait_for(sub { find_alert($id) }, 120),
   'delivered once Alertmanager is up, listed by GET /api/v2/alerts');

my $a = find_alert($id) // {};
is($a->{labels}{alertname}, 'AirlockDenied', 'label alertname');
is($a->{labels}{client}, 'agent', 'label client');
is($a->{labels}{route}, 'prom', 'label route');
is($a->{labels}{reason}, 'no_route', 'label reason');
is($a->{labels}{severity}, 'warning', 'label severity');
is($a->{labels}{source}, 'airlock', 'label source');
is($a->{annotations}{summary}, 'client agent denied 5 times in 60s '
   . '(no_route)', 'annotation summary');
is($a->{annotations}{sample}, 'GET /x', 'annotation sample');
is($a->{status}{state}, 'active', 'the alert is active');
like($t->alertd_log, qr/delivered alert \Q$id\E to alertmanager /,
     'alertd logs the delivery');

# endsAt = when it was sent + 2 * repeat interval (5m by default); it
# was sent after startsAt (the retries), and before now
sub epoch {
    my ($s) = @_;
    my ($y, $mo, $d, $h, $mi, $sec) =
        $s =~ /^(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)/ or return 0;
    require Time::Local;
    return Time::Local::timegm($sec, $mi, $h, $d, $mo - 1, $y);
}
ok(epoch($a->{endsAt}) >= epoch($a->{startsAt}) + 600
   && epoch($a->{endsAt}) <= time + 600,
   'endsAt is two repeat intervals after it was sent')
    or diag("startsAt $a->{startsAt}, endsAt $a->{endsAt}");

# a quarantine alert, alertd and Alertmanager both running
my $q = $t->alert(kind => 'quarantine', severity => 'critical',
                  client => 'agent', reason => 'path', route => undef,
                  count => 20, quarantine_until => '2030-01-01T00:00:00Z');
ok($t->wait_for(sub { find_alert($q) }), 'a quarantine alert is listed');
my $b = find_alert($q) // {};
is($b->{labels}{alertname}, 'AirlockQuarantine', 'alertname');
is($b->{labels}{severity}, 'critical', 'severity');
ok(!defined $b->{labels}{route} || $b->{labels}{route} eq '',
   'no route: an empty route label');
is($b->{annotations}{quarantine_until}, '2030-01-01T00:00:00Z',
   'quarantine_until annotation');

# An alert sent late, an hour after it was raised (alertd was stopped,
# or Alertmanager down, that long): its endsAt is not in the past when it
# is sent, or Alertmanager would take it as resolved already, list it as
# no active alert and notify no one, the alert delivered and lost all
# the same.  It fires for two repeat intervals from when it is sent.
my $sent = time;
my $late = $t->alert(client => 'agent', reason => 'late', route => undef,
                     time => AlertdTest::now_rfc3339($sent - 3600));
ok($t->log_has(qr/delivered alert \Q$late\E to alertmanager /),
   'an alert raised an hour ago is delivered');
my $l = find_alert($late) // {};
is($l->{status}{state} // '', 'active', '... and Alertmanager has it active');
ok(epoch($l->{endsAt} // '') >= int($sent) + 600,
   '... until two repeat intervals after it was sent')
    or diag("endsAt $l->{endsAt}, sent at " . AlertdTest::now_rfc3339($sent));
is(epoch($l->{startsAt} // ''), int($sent) - 3600,
   '... from when it was raised');

ok($t->wait_for(sub { !$t->outbox }), 'nothing left queued');

is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'alertd stops cleanly');
$t->stop($pid, 'TERM');

$t->done;
