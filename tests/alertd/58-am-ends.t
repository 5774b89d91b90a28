#!/usr/bin/perl
# When a real Alertmanager (Debian's prometheus-alertmanager) ends
# Airlock's alerts: endsAt is two repeat intervals after the alert is
# sent, so that the next fold of its group, sent at most one interval
# later, finds it still firing; and a quarantine fires until its
# quarantine_until, then resolves.
#
# An alertd that set endsAt two intervals after the alert's own time
# fails the first test: an alert raised 0.9 of an interval before it is
# sent (a fold whose window's last repeat came at the window's start)
# then ends 1.1 intervals after it is sent, a tenth of an interval
# after the next fold is due, which any delay makes late, the alert
# resolved and fired again.  One that ended a quarantine with the
# repeat intervals fails the second test (a quarantine of an hour
# resolved after 10 minutes, the client still cut off) and the fifth
# (with a repeat interval of 1 s, gone from the active alerts long
# before its end).
#
# An alert stamped a day ahead of alertd's clock (nginx's clock, since
# set right) starts when it is sent, as the grouping takes it, and ends
# two intervals later, not a day later (the eighth and ninth tests
# fail on an alertd that sent its time as it was).
#
# Time has to pass for the last part only: a quarantine of 20 s.

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
use Time::Local qw(timegm);

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

# the active alerts (resolved ones are not listed)
sub find_alert {
    my ($id) = @_;
    my $res = $http->get("$base/api/v2/alerts");
    return undef unless $res->{success};
    return (grep { ($_->{annotations}{id} // '') eq $id }
            @{decode_json($res->{content})})[0];
}

sub epoch {
    my ($s) = @_;
    my ($y, $mo, $d, $h, $mi, $sec) =
        ($s // '') =~ /^(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)/ or return 0;
    return timegm($sec, $mi, $h, $d, $mo - 1, $y);
}

# 1. the default repeat interval, 5 minutes
$t->policy({ alertmanager => $base });
$t->alertd('--poll-interval', '1h');

my $sent = time;
my $late = $t->alert(client => 'agent', reason => 'late-in-window',
                     time => AlertdTest::now_rfc3339($sent - 270));
my $long_until = AlertdTest::now_rfc3339($sent + 3600);
my $long = $t->alert(kind => 'quarantine', severity => 'critical',
                     client => 'agent', reason => 'long',
                     quarantine_until => $long_until);
my $short = $t->alert(kind => 'quarantine', severity => 'critical',
                      client => 'agent', reason => 'short',
                      quarantine_until => AlertdTest::now_rfc3339($sent + 60));
my $odd = $t->alert(kind => 'quarantine', severity => 'critical',
                    client => 'agent', reason => 'odd',
                    quarantine_until => 'soon');
my $ahead = $t->alert(client => 'agent', reason => 'a-day-ahead',
                      time => AlertdTest::now_rfc3339($sent + 86400));
my $near_time = AlertdTest::now_rfc3339($sent + 2);
my $near = $t->alert(client => 'agent', reason => '2s-ahead',
                     time => $near_time);

my @all = ($late, $long, $short, $odd, $ahead, $near);
ok($t->wait_for(sub { !grep { !find_alert($_) } @all }, 120),
   'the six alerts are active in Alertmanager');
my $listed = time;

my ($l, $q, $s, $o, $h, $n) = map { find_alert($_) // {} } @all;

ok(epoch($l->{endsAt}) >= int($sent) + 600,
   'an alert raised 0.9 intervals ago ends two intervals after it is sent')
    or diag("endsAt $l->{endsAt}, sent " . AlertdTest::now_rfc3339($sent));
is(epoch($q->{endsAt}), epoch($long_until),
   'a quarantine of an hour ends with it')
    or diag("endsAt $q->{endsAt}");
is($q->{annotations}{quarantine_until}, $long_until,
   '... its quarantine_until annotation');
ok(epoch($s->{endsAt}) >= int($sent) + 600,
   'a quarantine shorter than two intervals: two intervals all the same')
    or diag("endsAt $s->{endsAt}");
ok(epoch($o->{endsAt}) >= int($sent) + 600,
   'a quarantine_until that is no time: two intervals')
    or diag("endsAt $o->{endsAt}");

# a clock a day ahead stamped it (then set right): taken now, as the
# grouping takes it, not firing for a day
ok(epoch($h->{startsAt}) >= int($sent) && epoch($h->{startsAt}) <= $listed,
   'an alert stamped a day ahead starts when it is sent')
    or diag("startsAt $h->{startsAt}");
ok(epoch($h->{endsAt}) <= $listed + 600,
   '... and ends two intervals after that, not a day later')
    or diag("endsAt $h->{endsAt}");
is(epoch($n->{startsAt}), epoch($near_time),
   'one 2 s ahead, within the slack, keeps its time');
ok(epoch($n->{endsAt}) >= epoch($near_time) + 600,
   '... and ends two intervals after it');

is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'alertd stops cleanly');

# 2. a repeat interval of 1 s: a quarantine of 20 s fires for 20 s,
# not 2, and then resolves
$t->alertd('--poll-interval', '1h', '--repeat-interval', '1s');

$sent = time;
my $until = $sent + 20;
my $brief = $t->alert(kind => 'quarantine', severity => 'critical',
                      client => 'agent', reason => 'brief',
                      quarantine_until => AlertdTest::now_rfc3339($until));
ok($t->log_has(qr/delivered alert \Q$brief\E to alertmanager /),
   'a quarantine of 20 s is delivered');

# well past the two intervals, well before the quarantine's end
sleep(0.1) while time < $sent + 6;
my $b = find_alert($brief);
my $asked = time;
SKIP: {
    skip('the machine took 14 s to ask', 1) if $asked > $until - 1;
    ok($b && ($b->{status}{state} // '') eq 'active',
       '6 s on, three times the two intervals: still active')
        or diag(explain($b));
}

ok($t->wait_for(sub { !find_alert($brief) }, 60),
   'resolved once the quarantine is over');
ok(time >= $until - 1, '... not before');

is($t->stop($t->alertd_pid, 'TERM') >> 8, 0, 'alertd stops cleanly');
$t->stop($pid, 'TERM');

$t->done;
