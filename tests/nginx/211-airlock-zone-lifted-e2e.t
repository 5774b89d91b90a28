#!/usr/bin/perl

# A quarantine lifted with its zone, end to end, every part real: nginx
# quarantines a client for an hour and journals the alert, airlock-alertd
# posts it to Debian's Alertmanager, which lists it as active.  A reload
# that resizes airlock_zone makes a new zone, which lifts the quarantine:
# nginx journals a zone line, alertd posts the quarantine again ending
# then, and Alertmanager no longer lists it, an hour before its
# quarantine_until.  No latency is measured: the waits are generous
# timeouts only.

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

$p->keygen;

$t->write_file_expand('policy.yaml', <<"EOF");
version: 1
clients:
  agent: { token_sha256: "$sha" }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8081%%" }
routes:
  - name: ok
    clients: [agent]
    match: { method: GET, path: /ok }
    upstream: echo
    to: /ok
alerts:
  deny: { threshold: 100, window: 60s }
  quarantine: { threshold: 3, window: 60s, for: 1h }
  sinks:
    - alertmanager: { url: "http://127.0.0.1:%%PORT_8083%%" }
EOF

sub conf {
    my ($size) = @_;
    $t->write_file_expand('nginx.conf', $p->conf(http => <<"EOF"));
    airlock_zone airlock $size;
    airlock_journal %%TESTDIR%%/journal.log;
EOF
}

conf('1m');
$t->write_file('journal.log', '');

$t->write_file('am.yml', "route:\n  receiver: ops\nreceivers:\n  - name: ops\n");
$t->run_daemon($am, "--config.file=$d/am.yml", "--storage.path=$d/am",
               '--cluster.listen-address=',
               '--web.listen-address=127.0.0.1:' . $t->port(8083));
mkdir "$d/alertd";
my $apid = $t->run_daemon($alertd, '--policy', "$d/policy.yaml",
                          '--keyring', "$d/airlock.key", '--journal',
                          "$d/journal.log", '--state', "$d/alertd",
                          '--foreground', '--repeat-interval', '1h',
                          '--poll-interval', '1s');
$t->start_echo(8081);
$t->run;

$t->wait_for_port(8083, 20) or BAIL_OUT("port 8083 did not open");

plan tests => 7;

my $json = JSON::PP->new->utf8;

sub get {
    return parse_response(http_get($_[0],
        headers => { 'Proxy-Authorization' => "Bearer $tok" }));
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

# the quarantine alerts Alertmanager lists as active
sub active {
    my $r = parse_response(http("GET /api/v2/alerts HTTP/1.0\r\n"
                                . "Host: localhost\r\n\r\n", port => 8083));
    my $a = eval { $json->decode($r->{body}) } || [];
    return grep { $_->{labels}{alertname} eq 'AirlockQuarantine'
                  && ($_->{status}{state} // '') eq 'active' } @$a;
}

get('/nope') for 1 .. 3;
is(get('/ok')->{status}, 403, 'the agent is quarantined');

my ($q) = wait_until(sub { active() }, 30);
ok($q, 'Alertmanager lists the quarantine as active');
is($q && $q->{labels}{client}, 'agent', '... of the agent');

# a zone of another size is a new zone: the quarantine is lifted

conf('2m');
$t->reload;

is(get('/ok')->{status}, 200, 'the new zone lets the agent in');

my @j = Airlock::Test::json_lines($t->read_file('journal.log'));
is(scalar(grep { $_->{type} eq 'zone' } @j), 2,
   'a zone line at start and one for the new zone');

ok(wait_until(sub { !active() }, 30),
   'Alertmanager no longer lists the quarantine, an hour early');

is($t->error_log_check, '', 'no alerts or sanitizer reports in error.log');
