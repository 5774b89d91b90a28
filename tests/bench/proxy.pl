#!/usr/bin/perl
# Proxy benchmark: Airlock against plain nginx proxy_pass, same machine,
# same run, same upstream, interleaved rounds; figures are reported as
# ratios to the plain baseline because the machine is shared and noisy.
#
#   perl tests/bench/proxy.pl [--rounds N] [--seconds S] [--markdown]
#                             [--no-pin] [--only VARIANT,...]
#                             [--compare BUILD]
#
# Variants (one nginx, one worker; upstream is a second nginx):
#   plain        proxy_pass to the upstream, keepalive
#   example      Airlock, the example policy's routes (GET /prometheus/query)
#   routes-1000  Airlock, a policy of 1,000 routes, requests spread over them
#                by a wrk script; its baseline, plain-spread, sends the same
#                requests through plain nginx (the script costs wrk time)
#   plain-1m     plain proxy_pass of a 1 MiB response (with its
#                Content-Length)
#   route-1m     Airlock route of "scrub: false": the same 1 MiB, not
#                scrubbed, with its Content-Length (a route without a
#                credential is scrubbed too once the policy holds one)
#   scrub-1m     Airlock route that injects a secret: the 1 MiB response goes
#                through the scrubber, which sends a body that long chunked
#                (its length may change); that framing is part of its cost
#   plain-var    plain nginx, but proxy_pass with variables as Airlock's
#                configuration has it: what that costs nginx itself
#   *-c4         the same small requests over 4 connections instead of 16
#   *-cmp        with --compare BUILD: example and routes-1000 (and their
#                -c4) again, with the module of another build directory
#                (the code before a change), in the same rounds; the table
#                gets their rows against plain nginx and this build's
#                against them

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Getopt::Long;
use Airlock::Test;

my $rounds = 20;
my $seconds = 2;
my $markdown = 0;
my $pin = 1;
my $only;
my $compare;
GetOptions('rounds=i' => \$rounds, 'seconds=i' => \$seconds,
           'markdown' => \$markdown, 'pin!' => \$pin, 'only=s' => \$only,
           'compare=s' => \$compare)
    or die "usage: proxy.pl [--rounds N] [--seconds S] [--markdown]"
         . " [--no-pin] [--only VARIANT,...] [--compare BUILD]\n";
die "--compare: no module in $compare/modules\n"
    if defined $compare
       && !-f "$compare/modules/ngx_http_airlock_module.so";

# CPU placement, set before each run with taskset.  Small requests run
# pinned: the proxy under test has the second CPU this script may use
# (allowed_cpus(); CPU 1 on a two-CPU machine) to itself, wrk and the
# upstream share the first, so the scheduler does not put wrk in front
# of the proxy at random (unpinned, requests/s moved by 20% between
# rounds).  The 1 MiB responses run unpinned: pinned, every packet is a
# wake-up across CPUs and their rounds swung between two speeds, 2x
# apart.  A variant and its baseline always run the same way.
my @cpus = allowed_cpus();
$pin = 0 if @cpus < 2 || system('command -v taskset >/dev/null') != 0;
my $all_cpus = join ',', @cpus;

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
  - name: big-unscrubbed
    clients: [agent]
    match: { method: GET, path: /big-unscrubbed }
    upstream: up
    to: /big
    scrub: false
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
            %%AIRLOCK_LOCATION%%
        }
EOF
        location / {
            proxy_pass http://benchup;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }

        # nginx alone, with what Airlock's configuration costs nginx:
        # proxy_pass with variables, evaluated per request
        location = /var {
            set $up http://benchup;
            proxy_pass $up/api/v1/query;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
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
           ['many', 'many.yaml'],
           $compare ? (['example-cmp', 'example.yaml'],
                       ['many-cmp', 'many.yaml']) : ())
{
    my ($name, $policy) = @$v;
    my $n = $name eq 'plain' ? Airlock::Test->new : $t;
    if ($name ne 'plain' && $name ne 'example') {
        # the module comes from the build directory named when it is made
        local $ENV{AIRLOCK_BUILD} = $name =~ /-cmp$/ ? $compare : $build;
        $n = Airlock::Test->new;
        $n->require_module;
        for my $f ('airlock.key', $policy) {
            # a build from before "scrub" refuses the key; the -cmp
            # variants never ask for /big-unscrubbed
            my $text = $t->read_file($f);
            $text =~ s/^    scrub: false\n//mg if $name =~ /-cmp$/;
            $n->write_file($f, $text);
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

# name, nginx, path, wrk script, pinned, connections.  16 connections
# saturate the proxy: its requests/s is the cost per request, and its p99
# is mostly how long the queue is.  4 connections keep it busy but not
# saturated: the p99 there is the latency a request gets in steady load.
my $spread = "$dir/spread.lua";
my @variants = (
    [ 'plain',          'plain',   '/api/v1/query?query=up', undef, 1, 16 ],
    [ 'example',        'example', '/prometheus/query?query=up',
      undef, 1, 16 ],
    [ 'plain-var',      'plain',   '/var?query=up', undef, 1, 16 ],
    [ 'plain-spread',   'plain',   '/svc1/items/1?limit=10', $spread, 1, 16 ],
    [ 'routes-1000',    'many',    '/svc1/items/1?limit=10', $spread, 1, 16 ],
    [ 'plain-c4',       'plain',   '/api/v1/query?query=up', undef, 1, 4 ],
    [ 'example-c4',     'example', '/prometheus/query?query=up', undef, 1, 4 ],
    [ 'plain-var-c4',   'plain',   '/var?query=up', undef, 1, 4 ],
    [ 'plain-spread-c4', 'plain',  '/svc1/items/1?limit=10', $spread, 1, 4 ],
    [ 'routes-1000-c4', 'many',    '/svc1/items/1?limit=10', $spread, 1, 4 ],
    [ 'plain-1m',       'plain',   '/big', undef, 0, 16 ],
    [ 'route-1m',       'example', '/big-unscrubbed', undef, 0, 16 ],
    [ 'scrub-1m',       'example', '/big', undef, 0, 16 ],
);

# --compare: each Airlock small-request variant is followed by the same
# one on the other build's nginx, so that the two meet the machine alike
if ($compare) {
    @variants = map {
        my $v = $_;
        ($v, $v->[0] =~ /^(?:example|routes-1000)(?:-c4)?$/
             ? ([ "$v->[0]-cmp", "$v->[1]-cmp", @$v[2 .. 5] ]) : ());
    } @variants;
}

sub workers {
    my ($n) = @_;
    my $master = $n->nginx_pid;
    return split ' ', `pgrep -P $master` // '';
}

sub place {
    my ($proxy, $pinned) = @_;
    return unless $pin;
    for my $w ([$proxy, $cpus[1]], [$up, $cpus[0]]) {
        my $cpu = $pinned ? $w->[1] : $all_cpus;
        pin_cpus($_, $cpu) or die "taskset -a -pc $cpu $_ failed\n"
            for workers($w->[0]);
    }
}

sub wrk {
    my ($port, $path, $script, $pinned, $conns, $secs) = @_;
    my $s = $script ? "-s $script" : '';
    my $cmd = $pin && $pinned ? "taskset -c $cpus[0] wrk" : 'wrk';
    $secs //= $seconds;
    my $out = `$cmd -t1 -c$conns -d${secs}s --latency $s http://127.0.0.1:$port$path 2>&1`;
    my ($rps) = $out =~ /Requests\/sec:\s+([\d.]+)/;
    my ($total) = $out =~ /(\d+) requests in/;
    my ($p99, $unit) = $out =~ /\s99%\s+([\d.]+)(us|ms|s)/;
    my ($non2xx) = $out =~ /Non-2xx or 3xx responses:\s+(\d+)/;
    die "wrk failed:\n$out" unless defined $rps && defined $p99;
    die "errors during the run:\n$out" if $non2xx;
    $p99 *= { us => 0.001, ms => 1, s => 1000 }->{$unit};
    return ($rps, $p99, $total);
}

# CPU time (user and system, in clock ticks) of an nginx's workers so far
my $hz = `getconf CLK_TCK` =~ /(\d+)/ ? $1 : 100;

sub cpu_ticks {
    my ($n) = @_;
    my ($user, $sys) = (0, 0);
    for my $pid (workers($n)) {
        open my $fh, '<', "/proc/$pid/stat" or next;
        my $stat = <$fh>;
        $stat =~ s/^.*\)\s+//;            # after "pid (comm)"
        my @f = split ' ', $stat;
        $user += $f[11];                    # utime
        $sys += $f[12];                     # stime
    }
    return ($user, $sys);
}

if (defined $only) {
    my %want = map { $_ => 1 } split /,/, $only;
    @variants = grep { $want{$_->[0]}
                       || ($_->[0] =~ /^(.+)-cmp$/ && $want{$1}) } @variants;
    die "--only: no such variant (plain, example, plain-var, plain-spread,"
        . " routes-1000, plain-c4, example-c4, plain-var-c4, plain-spread-c4,"
        . " routes-1000-c4,"
        . " plain-1m, route-1m, scrub-1m)\n" unless @variants;
}

# a warm-up request per variant checks that it answers 200
for my $v (@variants) {
    my ($name, $n, $path) = @$v;
    my $r = parse_response($nginx{$n}->http_get($path, port => 8080));
    $r->{status} == 200
        or die "$name: GET $path answered $r->{status}: $r->{body}\n";
}

# one unmeasured second each: caches, upstream keepalive connections and
# the pages of a 1,000-route policy are warm before the first round
for my $v (@variants) {
    my ($name, $n, $path, $script, $pinned, $conns) = @$v;
    place($nginx{$n}, $pinned);
    wrk($nginx{$n}->port(8080), $path, $script, $pinned, $conns, 1);
}

my %res;
# The order is reversed every other round, so that neither a variant nor
# its baseline always runs first (what runs first meets the machine as the
# previous run left it).
for my $round (1 .. $rounds) {
    for my $v ($round % 2 ? @variants : reverse @variants) {
        my ($name, $n, $path, $script, $pinned, $conns) = @$v;
        place($nginx{$n}, $pinned);
        my @before = cpu_ticks($nginx{$n});
        my ($rps, $p99, $total) = wrk($nginx{$n}->port(8080), $path,
                                      $script, $pinned, $conns);
        my @after = cpu_ticks($nginx{$n});
        my ($user, $sys) = map { ($after[$_] - $before[$_]) / $hz * 1e6
                                 / $total } 0, 1;
        push @{$res{$name}{rps}}, $rps;
        push @{$res{$name}{p99}}, $p99;
        push @{$res{$name}{cpu}}, $user + $sys;
        printf STDERR "round %d %-15s %8.0f req/s  p99 %7.3f ms  "
            . "proxy CPU %6.1f us/request (user %5.1f, system %5.1f)\n",
            $round, $name, $rps, $p99, $user + $sys, $user, $sys;
    }
}

sub median {
    my @s = sort { $a <=> $b } @_;
    my $m = int(@s / 2);
    return @s % 2 ? $s[$m] : ($s[$m - 1] + $s[$m]) / 2;
}

# the middle half of a list: its 25th and 75th percentiles
sub quartiles {
    my @s = sort { $a <=> $b } @_;
    return ($s[int($#s / 4)], $s[int(3 * $#s / 4 + 0.5)]);
}

# Each round runs a variant close to its baseline, so a ratio is taken
# within the round (the machine's speed drifts between rounds) and the
# median of those is reported, with the middle half of them.

my @rows = (
    [ 'example policy', 'example', 'plain' ],
    [ '1,000 routes', 'routes-1000', 'plain-spread' ],
    [ 'nginx, proxy_pass $var', 'plain-var', 'plain' ],
    [ 'example policy, 4 conns', 'example-c4', 'plain-c4' ],
    [ '1,000 routes, 4 conns', 'routes-1000-c4', 'plain-spread-c4' ],
    [ 'nginx, proxy_pass $var, 4 conns', 'plain-var-c4', 'plain-c4' ],
    [ 'route, 1 MiB response', 'route-1m', 'plain-1m' ],
    [ 'scrubber, 1 MiB response', 'scrub-1m', 'plain-1m' ],
    [ 'scrubber alone, 1 MiB', 'scrub-1m', 'route-1m' ],
    [ 'example policy, --compare', 'example-cmp', 'plain' ],
    [ '1,000 routes, --compare', 'routes-1000-cmp', 'plain-spread' ],
    [ 'example policy, 4 conns, --compare', 'example-c4-cmp', 'plain-c4' ],
    [ '1,000 routes, 4 conns, --compare', 'routes-1000-c4-cmp',
      'plain-spread-c4' ],
    [ 'example policy against --compare', 'example', 'example-cmp' ],
    [ '1,000 routes against --compare', 'routes-1000', 'routes-1000-cmp' ],
    [ 'example policy, 4 conns, against --compare', 'example-c4',
      'example-c4-cmp' ],
    [ '1,000 routes, 4 conns, against --compare', 'routes-1000-c4',
      'routes-1000-c4-cmp' ],
);

printf "%s\n", $markdown
    ? "| variant | req/s | baseline req/s | ratio | middle half | p99 ms | baseline p99 ms | p99 added | middle half | proxy CPU per request |\n"
      . "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    : sprintf("%-32s %8s %8s %6s %13s %7s %7s %7s %15s %8s", 'variant',
              'req/s', 'base', 'ratio', '(middle half)', 'p99 ms', 'base',
              'p99 +%', '(middle half)', 'CPU/req');

for my $r (@rows) {
    my ($label, $v, $b) = @$r;
    next unless $res{$v} && $res{$b};
    my (@ratio, @added, @cpu);
    for my $i (0 .. $#{$res{$v}{rps}}) {
        push @ratio, $res{$v}{rps}[$i] / $res{$b}{rps}[$i];
        push @added, ($res{$v}{p99}[$i] / $res{$b}{p99}[$i] - 1) * 100;
        push @cpu, $res{$v}{cpu}[$i] / $res{$b}{cpu}[$i];
    }
    my @f = (median(@{$res{$v}{rps}}), median(@{$res{$b}{rps}}),
             median(@ratio), quartiles(@ratio),
             median(@{$res{$v}{p99}}), median(@{$res{$b}{p99}}),
             median(@added), quartiles(@added), median(@cpu));
    if ($markdown) {
        printf "| %s | %.0f | %.0f | %.3f | %.3f-%.3f | %.3f | %.3f "
             . "| %+.1f%% | %+.1f%% to %+.1f%% | %.3fx |\n", $label, @f;
    } else {
        printf "%-32s %8.0f %8.0f %6.3f  (%.3f-%.3f) %7.3f %7.3f %+6.1f%% "
             . " (%+.1f to %+.1f) %7.3fx\n", $label, @f;
    }
}
printf "(%d rounds of %ds, wrk -t1 -c16 unless marked, one nginx worker each; "
     . "medians of per-round ratios; CPU per request: the proxy worker's "
     . "user + system time over requests served, as a ratio%s)\n", $rounds, $seconds,
    $pin ? '; small requests with the proxy on a CPU of its own' : '';
