#!/usr/bin/perl
# Deny benchmark: what deny counting and the journal cost a denied request.
# nginx instances with the same policy and settings, one per variant; wrk
# sends denied requests to each in interleaved rounds (the order rotates),
# and the figures are reported as ratios to "off" because the machine is
# shared and noisy.  Target: "on" within 10% of "off".
#
#   perl tests/bench/deny.pl [--rounds N] [--seconds S] [--log-level L]
#                            [--markdown]
#
# Variants (one nginx worker each):
#   off    no airlock_zone, no airlock_journal
#   zone   airlock_zone only: counting, no journal
#   sync   airlock_zone and airlock_journal, one write() per line
#   on     airlock_zone and airlock_journal buffer=64k flush=1s: alerting
#          on as modules/nginx.conf.example configures it (alerts are
#          still written at once)
#
# Each request is "GET /nope" from client "agent": no_route, a 403 JSON
# answer.  With the zone, every denial updates two nodes (the (client,
# reason) count against alerts.deny, the client's count against
# alerts.quarantine); with the journal it appends one line, one write().
# The deny threshold alerts once a window; the quarantine threshold is out
# of reach, so the client is never quarantined.  error_log is at "warn",
# as in modules/nginx.conf.example, so every variant writes the error line
# of each denial; --log-level crit leaves that out, and the journal is then
# measured against a baseline that writes nothing at all.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Getopt::Long;
use Airlock::Test;

my $rounds = 5;
my $seconds = 4;
my $level = 'warn';
my $markdown = 0;
GetOptions('rounds=i' => \$rounds, 'seconds=i' => \$seconds,
           'log-level=s' => \$level, 'markdown' => \$markdown)
    or die "bad options\n";

$ENV{AIRLOCK_LOG_LEVEL} = $level;

system('command -v wrk >/dev/null') == 0
    or die "wrk is not installed (apt-get install wrk)\n";

my @variants = qw(off zone sync on);

my $policy = <<'EOF';
version: 1
clients:
  agent: { cidr: 127.0.0.0/8 }
upstreams:
  up: { url: "http://127.0.0.1:9" }
routes:
  - name: query
    clients: [agent]
    match: { method: GET, path: /prometheus/query }
    upstream: up
    to: /api/v1/query
    query: { allow: [query], require: [query] }
alerts:
  deny: { threshold: 3, window: 60s }
  quarantine: { threshold: 1000000, window: 60s, for: 10m }
EOF

sub conf {
    my ($v) = @_;
    my $alerting = '';

    $alerting .= "    airlock_zone airlock 1m;\n" if $v ne 'off';
    $alerting .= "    airlock_journal %%TESTDIR%%/journal.log;\n"
        if $v eq 'sync';
    $alerting .= "    airlock_journal %%TESTDIR%%/journal.log buffer=64k "
               . "flush=1s;\n"
        if $v eq 'on';

    return <<"EOF";
%%TEST_GLOBALS%%
http {
    %%TEST_GLOBALS_HTTP%%
    access_log off;
    airlock_policy %%TESTDIR%%/policy.yaml;
$alerting
    server {
        listen 127.0.0.1:%%PORT_8080%%;
        location / {
            airlock on;
            %%AIRLOCK_LOCATION%%
        }
    }
}
EOF
}

my %nginx;
for my $v (@variants) {
    my $n = Airlock::Test->new;
    $n->require_module;
    $n->write_file('policy.yaml', $policy);
    $n->write_file_expand('nginx.conf', conf($v));
    $n->run;
    $nginx{$v} = $n;
}

# all answer 403 no_route; "on" journals
for my $v (@variants) {
    my $r = parse_response($nginx{$v}->http_get('/nope', port => 8080));
    $r->{status} == 403 && $r->{body} =~ /"no_route"/
        or die "$v: GET /nope answered $r->{status}: $r->{body}\n";
}
sleep 2.5;    # the buffered journal flushes after 1s
for my $v (qw(sync on)) {
    $nginx{$v}->read_file('journal.log') =~ /"type":"deny"/
        or die "$v: no deny line in the journal\n";
}

sub ms {
    my ($v, $unit) = @_;
    return $v * { us => 0.001, ms => 1, s => 1000 }->{$unit};
}

sub wrk {
    my ($port) = @_;
    my $url = "http://127.0.0.1:$port/nope";
    my $out = `wrk -t1 -c16 -d${seconds}s --latency $url 2>&1`;
    my ($total) = $out =~ /(\d+) requests in/;
    my ($rps) = $out =~ /Requests\/sec:\s+([\d.]+)/;
    my ($p50, $u50) = $out =~ /\s50%\s+([\d.]+)(us|ms|s)/;
    my ($p99, $u99) = $out =~ /\s99%\s+([\d.]+)(us|ms|s)/;
    my ($non2xx) = $out =~ /Non-2xx or 3xx responses:\s+(\d+)/;
    die "wrk failed:\n$out" unless defined $rps && defined $p99;
    die "not every answer was a denial:\n$out"
        unless defined $non2xx && $non2xx == $total;
    return ($rps, ms($p50, $u50), ms($p99, $u99));
}

my %res;
for my $round (1 .. $rounds) {
    my @order = @variants;
    push @order, splice(@order, 0, ($round - 1) % @order);

    for my $v (@order) {
        my ($rps, $p50, $p99) = wrk($nginx{$v}->port(8080));
        push @{$res{$v}{rps}}, $rps;
        push @{$res{$v}{p50}}, $p50;
        push @{$res{$v}{p99}}, $p99;
        printf STDERR "round %d %-4s %10.0f req/s  p50 %.3f ms  p99 %.3f ms\n",
            $round, $v, $rps, $p50, $p99;
    }

    # the journal and the error logs grow by a line per denial; they stay
    # open with O_APPEND, so truncating them in place is safe
    truncate($nginx{$_}->testdir . '/journal.log', 0) for qw(sync on);
    truncate($nginx{$_}->testdir . '/error.log', 0) for @variants;
}

sub median {
    my @s = sort { $a <=> $b } @_;
    return $s[int(@s / 2)];
}

my %m;
for my $v (@variants) {
    $m{$v}{$_} = median(@{$res{$v}{$_}}) for qw(rps p50 p99);
}

my @rows = (
    [ 'req/s', 'rps', '%.0f' ],
    [ 'p50 latency, ms', 'p50', '%.3f' ],
    [ 'p99 latency, ms', 'p99', '%.3f' ],
);

if ($markdown) {
    print "| denied requests | off | zone | sync | on | zone / off "
        . "| sync / off | on / off |\n";
    print "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
} else {
    printf "%-16s %9s %9s %9s %9s %11s %11s %9s\n", 'denied requests',
        'off', 'zone', 'sync', 'on', 'zone / off', 'sync / off', 'on / off';
}

for my $r (@rows) {
    my ($label, $k, $fmt) = @$r;
    my @v = map { sprintf $fmt, $m{$_}{$k} } @variants;
    my @ratio = map { sprintf '%.3f', $m{$_}{$k} / $m{off}{$k} }
        qw(zone sync on);

    if ($markdown) {
        print '| ', join(' | ', $label, @v, @ratio), " |\n";
    } else {
        printf "%-16s %9s %9s %9s %9s %11s %11s %9s\n", $label, @v,
            @ratio;
    }
}

printf "(median of %d interleaved rounds of %ds, wrk -t1 -c16, one nginx "
     . "worker each, error_log %s; sync = zone + journal, on = zone + "
     . "journal buffer=64k flush=1s)\n",
    $rounds, $seconds, $level;
