#!/usr/bin/perl

# Alerting end to end, every part real: nginx with the Airlock module
# counts a client's denials and journals the alert, airlock-alertd follows
# the journal and delivers it, signed, to a webhook receiver that checks
# the signature, and to Debian's Alertmanager, whose API then lists it
# with Airlock's labels.
#
# Delivery is driven by the journal write, not by a timer: nginx writes
# an alert line at once, past its journal buffer, and alertd reads the
# journal when that write's inotify event wakes it.  Their only timers
# that would also get the alert out, nginx's flush= and alertd's
# --poll-interval, are set to an hour here, far past the test's wait,
# and alertd's group window (--repeat-interval) too; so an alert that
# arrives at all arrived because of the write.  An alertd that no longer
# woke on the write, or an nginx that held the alert in its buffer,
# fails the test, however fast or slow the machine.  No latency is
# measured: the wait is a generous timeout only.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use JSON::PP;
use Test::More;
use Airlock::Prereq qw(absent);
use Time::HiRes qw(sleep time);
use Airlock::Test;
use Airlock::Proxy;

my $t = Airlock::Test->new;
my $p = Airlock::Proxy->new($t);
my $d = $t->testdir;
my $alertd = "$t->{build}/airlock-alertd";
my $am = '/usr/bin/prometheus-alertmanager';

absent("$alertd not built") unless -x $alertd;
absent("$am not installed") unless -x $am;

my $tok = 'token-agent-0123456789';
my $sha = $p->token_sha256($tok);
my $hmac = 'whsec_' . 'ZTJlLXdlYmhvb2stc2VjcmV0LWtleQ==';

$p->keygen;
$t->write_file('hmac', $hmac);
chmod 0600, "$d/hmac" or die "chmod: $!";

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  agent: { token_sha256: "$sha" }
secrets:
  alert_hmac: { file: "$d/hmac" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: logs
    clients: [agent]
    match: { method: GET, path: "/logs/{service}" }
    params: { service: '^[a-z]+\$' }
    upstream: echo
    to: "/logs/{service}"
alerts:
  deny: { threshold: 3, window: 60s }
  sinks:
    - webhook: { url: "http://127.0.0.1:%%PORT_8082%%/hook", hmac_secret: alert_hmac }
    - alertmanager: { url: "http://127.0.0.1:%%PORT_8083%%" }
EOF

$t->write_file_expand('nginx.conf', $p->conf(http => <<'EOF'));
    airlock_zone airlock 1m;
    airlock_journal %%TESTDIR%%/journal.log buffer=64k flush=1h;
EOF
$t->write_file('journal.log', '');

$t->write_file('am.yml', "route:\n  receiver: ops\nreceivers:\n  - name: ops\n");
$t->run_daemon($am, "--config.file=$d/am.yml", "--storage.path=$d/am",
               '--cluster.listen-address=',
               '--web.listen-address=127.0.0.1:' . $t->port(8083));
$t->run_daemon('python3', "$t->{top}/tests/lib/webhook-receiver.py",
               '--port', $t->port(8082), '--secret', $hmac,
               '--log', "$d/webhook.jsonl");
mkdir "$d/alertd";
my $apid = $t->run_daemon($alertd, '--policy', "$d/policy.yaml",
                          '--keyring', "$d/airlock.key", '--journal',
                          "$d/journal.log", '--state', "$d/alertd",
                          '--foreground', '--repeat-interval', '1h',
                          '--poll-interval', '1h');
$t->start_echo(8081);
$t->run;

for my $port (8082, 8083) {
    $t->wait_for_port($port, 20) or BAIL_OUT("port $port did not open");
}

plan tests => 14;

my $json = JSON::PP->new->utf8;

sub get {
    return parse_response(http_get($_[0],
        headers => { 'Proxy-Authorization' => "Bearer $tok" }));
}

sub hooks {
    my $text = $t->read_file('webhook.jsonl') // '';
    return map { $json->decode($_) } grep { length } split /\n/, $text;
}

sub wait_until {
    my ($cond, $secs) = @_;
    my $end = time + $secs;
    while (time < $end) {
        my @r = $cond->();
        return @r if @r && $r[0];
        sleep 0.05;
    }
    return;
}

sub alertd_log { $t->read_file($t->{daemon_log}{$apid}) // '' }

# once alertd logs "started" it watches the journal: what it reads after
# this, it reads because a write woke it (or its poll, an hour away)
my ($started) = wait_until(sub { alertd_log() =~ /\binfo: started (.*)/ },
                           30);
like($started // alertd_log(), qr/, poll interval 3600000 ms,/,
     'alertd runs, polling the journal once an hour only');

is(get('/logs/api')->{status}, 200, 'the agent is allowed its route');

# a denial storm: the third denial of one reason crosses alerts.deny
is(get('/logs/API')->{status}, 403, 'denied 1');
is(get('/logs/x1')->{status}, 403, 'denied 2');
is(get('/logs/Etc')->{status}, 403, 'denied 3: the threshold');
get("/logs/Z$_") for 1 .. 3;

# 30 s: a generous wait, two orders of magnitude short of either hour
my ($hook) = wait_until(sub { grep { $_->{json} } hooks() }, 30);
ok($hook, 'the alert reached the webhook, woken by the journal write '
   . '(nginx flush= and alertd --poll-interval: 1h)');
ok($hook && $hook->{verified}, 'its Standard Webhooks signature verifies');
is($hook && $hook->{json}{client}, 'agent', 'alert: client');
is($hook && $hook->{json}{reason}, 'param', 'alert: reason');
is($hook && $hook->{json}{route}, 'logs', 'alert: route');

my @ids = map { $_->{id} } grep { $_->{json} } hooks();
my %seen;
is(scalar(grep { $seen{$_}++ } @ids), 0, 'each webhook-id once');

# Alertmanager lists it, with Airlock's labels
my ($listed) = wait_until(sub {
    my $r = parse_response(http("GET /api/v2/alerts HTTP/1.0\r\n"
                                . "Host: localhost\r\n\r\n", port => 8083));
    my $a = eval { $json->decode($r->{body}) } || [];
    return grep { $_->{labels}{alertname} eq 'AirlockDenied' } @$a;
}, 30);
ok($listed, 'Alertmanager lists the Airlock alert');
is_deeply($listed && { map { $_ => $listed->{labels}{$_} }
                           qw(alertname client route reason severity) },
          { alertname => 'AirlockDenied', client => 'agent', route => 'logs',
            reason => 'param', severity => 'warning' },
          'with the labels alertname, client, route, reason, severity');

is($t->error_log_check, '', 'no alerts or sanitizer reports in error.log');
