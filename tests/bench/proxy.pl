#!/usr/bin/perl
# Proxy benchmark: Airlock against plain nginx proxy_pass, same machine,
# same run, same upstream, interleaved rounds; figures are reported as
# ratios to the plain baseline because the machine is shared and noisy.
#
#   perl tests/bench/proxy.pl [--rounds N] [--seconds S] [--markdown]
#
# Variants (one nginx, one worker; upstream is a second nginx):
#   plain        proxy_pass to the upstream, keepalive
#   example      Airlock, the example policy's routes (GET /prometheus/query)
#   routes-1000  Airlock, a policy of 1,000 routes, requests spread over them
#                by a wrk script; its baseline, plain-spread, sends the same
#                requests through plain nginx (the script costs wrk time)
#   plain-1m     plain proxy_pass of a 1 MiB response, sent chunked like
#                the scrubbed one (the scrubber drops Content-Length)
#   scrub-1m     Airlock route that injects a secret: the 1 MiB response goes
#                through the scrubber

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Getopt::Long;
use List::Util qw(sum);
use Airlock::Test;

my $rounds = 3;
my $seconds = 4;
my $markdown = 0;
GetOptions('rounds=i' => \$rounds, 'seconds=i' => \$seconds,
           'markdown' => \$markdown) or die "bad options\n";

# debug logging (Debian's nginx is built --with-debug) would be measured
$ENV{AIRLOCK_LOG_LEVEL} = 'warn';

my $top = "$FindBin::Bin/../..";
my $build = $ENV{AIRLOCK_BUILD} // "$top/build";
my $ctl = "$build/airlockctl";

system('command -v wrk >/dev/null') == 0
    or die "wrk is not installed (apt-get install wrk)\n";

# the upstream: a second nginx, as fast as a fixture can be
my $up = Airlock::Test->new;
$up->write_file('big', 'x' x (1024 * 1024));
$up->write_file_expand('nginx.conf', <<'EOF');
%%TEST_GLOBALS%%
http {
    %%TEST_GLOBALS_HTTP%%
    access_log off;
    server {
        listen 127.0.0.1:%%PORT_8090%%;
        location / { return 200 "ok\n"; }
        location /big { alias %%TESTDIR%%/big; }
    }
}
EOF
$up->run;
my $upport = $up->port(8090);

my $t = Airlock::Test->new;
$t->require_module;
my $dir = $t->testdir;

system("$ctl keygen $dir/airlock.key 2>/dev/null") == 0 or die "keygen\n";
my $sealed = `printf %s bench-secret-value-0123456789 | $ctl seal --pub $dir/airlock.key.pub`;
chomp $sealed;

my $head = <<"EOF";
version: 1
clients:
  agent: { cidr: 127.0.0.0/8 }
secrets:
  tok: { sealed: "$sealed" }
upstreams:
  up: { url: "http://benchup" }
EOF
my $alerts = "alerts:\n  deny: { threshold: 1000000, window: 1s }\n";

$t->write_file('example.yaml', $head . <<'EOF' . $alerts);
routes:
  - name: prometheus-query
    clients: [agent]
    match: { method: GET, path: /prometheus/query }
    upstream: up
    to: /api/v1/query
    query: { allow: [query, time], require: [query] }
    inject: { Authorization: "Bearer {tok}" }
  - name: logs
    clients: [agent]
    match: { method: GET, path: "/logs/{service}" }
    params: { service: '^[a-z0-9-]{1,63}$' }
    upstream: up
    to: "/logs/{service}"
  - name: big
    clients: [agent]
    match: { method: GET, path: /big }
    upstream: up
    to: /big
    inject: { Authorization: "Bearer {tok}" }
EOF

my $many = "routes:\n";
for my $i (0 .. 999) {
    $many .= <<"EOF";
  - name: r$i
    clients: [agent]
    match: { method: GET, path: "/svc$i/items/{id}" }
    params: { id: '^[0-9]{1,12}\$' }
    upstream: up
    to: "/api/svc$i/{id}"
    query: { allow: [limit] }
EOF
}
$t->write_file('many.yaml', $head . $many . $alerts);

# nginx reads one policy per http block; each Airlock variant gets its own
# nginx so both run with exactly the same worker settings.
sub proxy_conf {
    my ($policy) = @_;
    my $airlock = $policy ? <<"EOF" : '';
    airlock_keyring %%TESTDIR%%/airlock.key;
    airlock_policy %%TESTDIR%%/$policy;
EOF
    my $loc = $policy ? <<'EOF' : <<'EOF';
        location / {
            airlock on;
            proxy_pass $airlock_upstream$airlock_uri;
            proxy_set_header Host $airlock_host;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
EOF
        location / {
            proxy_pass http://benchup;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }

        # the scrubber's baseline: the same 1 MiB, also sent chunked (the
        # scrubber drops Content-Length), so wrk parses the same framing
        location = /big-chunked {
            proxy_pass http://benchup/big;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_hide_header Content-Length;
        }
EOF
    return <<"EOF";
%%TEST_GLOBALS%%
http {
    %%TEST_GLOBALS_HTTP%%
    access_log off;
$airlock
    upstream benchup {
        server 127.0.0.1:$upport;
        keepalive 32;
    }
    server {
        listen 127.0.0.1:%%PORT_8080%%;
$loc
    }
}
EOF
}

my %nginx;
for my $v (['plain', undef], ['example', 'example.yaml'],
           ['many', 'many.yaml'])
{
    my ($name, $policy) = @$v;
    my $n = $name eq 'plain' ? Airlock::Test->new : $t;
    if ($name eq 'many') {
        $n = Airlock::Test->new;
        $n->require_module;
        for my $f (qw(airlock.key many.yaml)) {
            $n->write_file($f, $t->read_file($f));
            chmod 0600, $n->testdir . "/$f";
        }
    }
    $n->write_file_expand('nginx.conf', proxy_conf($policy));
    $n->run;
    $nginx{$name} = $n;
}

# wrk script spreading requests over the 1,000 routes
$t->write_file('spread.lua', <<'EOF');
counter = 0
request = function()
    counter = counter + 1
    local i = (counter * 7919) % 1000
    return wrk.format("GET", "/svc" .. i .. "/items/" .. counter ..
                      "?limit=10")
end
EOF

my @variants = (
    [ 'plain',       'plain',   '/api/v1/query?query=up' ],
    [ 'example',     'example', '/prometheus/query?query=up' ],
    [ 'plain-spread', 'plain',  '/svc1/items/1?limit=10',
      "$dir/spread.lua" ],
    [ 'routes-1000', 'many',    '/svc1/items/1?limit=10',
      "$dir/spread.lua" ],
    [ 'plain-1m',    'plain',   '/big-chunked' ],
    [ 'scrub-1m',    'example', '/big' ],
);

sub wrk {
    my ($port, $path, $script) = @_;
    my $s = $script ? "-s $script" : '';
    my $out = `wrk -t1 -c16 -d${seconds}s --latency $s http://127.0.0.1:$port$path 2>&1`;
    my ($rps) = $out =~ /Requests\/sec:\s+([\d.]+)/;
    my ($p99, $unit) = $out =~ /\s99%\s+([\d.]+)(us|ms|s)/;
    my ($non2xx) = $out =~ /Non-2xx or 3xx responses:\s+(\d+)/;
    die "wrk failed:\n$out" unless defined $rps && defined $p99;
    die "errors during the run:\n$out" if $non2xx;
    $p99 *= { us => 0.001, ms => 1, s => 1000 }->{$unit};
    return ($rps, $p99);
}

# a warm-up request per variant checks that it answers 200
for my $v (@variants) {
    my ($name, $n, $path) = @$v;
    my $r = parse_response($nginx{$n}->http_get($path, port => 8080));
    $r->{status} == 200
        or die "$name: GET $path answered $r->{status}: $r->{body}\n";
}

my %res;
for my $round (1 .. $rounds) {
    for my $v (@variants) {
        my ($name, $n, $path, $script) = @$v;
        my ($rps, $p99) = wrk($nginx{$n}->port(8080), $path, $script);
        push @{$res{$name}{rps}}, $rps;
        push @{$res{$name}{p99}}, $p99;
        printf STDERR "round %d %-12s %10.0f req/s  p99 %.3f ms\n",
            $round, $name, $rps, $p99;
    }
}

sub median {
    my @s = sort { $a <=> $b } @_;
    return $s[int(@s / 2)];
}

my %m = map {
    $_ => { rps => median(@{$res{$_}{rps}}), p99 => median(@{$res{$_}{p99}}) }
} keys %res;

my @rows = (
    [ 'example policy', 'example', 'plain' ],
    [ '1,000 routes', 'routes-1000', 'plain-spread' ],
    [ 'scrubber, 1 MiB response', 'scrub-1m', 'plain-1m' ],
);

printf "%s\n", $markdown
    ? "| variant | req/s | baseline req/s | ratio | p99 ms | baseline p99 ms | p99 added |\n"
      . "| --- | --- | --- | --- | --- | --- | --- |"
    : sprintf("%-26s %10s %10s %7s %9s %9s %9s", 'variant', 'req/s',
              'base', 'ratio', 'p99 ms', 'base', 'p99 +%');
for my $r (@rows) {
    my ($label, $v, $b) = @$r;
    my $ratio = $m{$v}{rps} / $m{$b}{rps};
    my $added = ($m{$v}{p99} / $m{$b}{p99} - 1) * 100;
    if ($markdown) {
        printf "| %s | %.0f | %.0f | %.3f | %.3f | %.3f | %+.1f%% |\n",
            $label, $m{$v}{rps}, $m{$b}{rps}, $ratio, $m{$v}{p99},
            $m{$b}{p99}, $added;
    } else {
        printf "%-26s %10.0f %10.0f %7.3f %9.3f %9.3f %+8.1f%%\n",
            $label, $m{$v}{rps}, $m{$b}{rps}, $ratio, $m{$v}{p99},
            $m{$b}{p99}, $added;
    }
}
printf "(median of %d rounds of %ds, wrk -t1 -c16, one nginx worker each)\n",
    $rounds, $seconds;
