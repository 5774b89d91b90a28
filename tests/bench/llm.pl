#!/usr/bin/perl
# LLM gateway benchmark: the Airlock gateway (airlock_llm) against plain
# nginx proxy_pass to the same provider, and against Portkey's open-source
# gateway (the @portkey-ai/gateway npm package under Node), same machine,
# same run; the provider is a second nginx answering canned bodies, so what
# is measured is the gateways, not a fixture.
#
#   perl tests/bench/llm.pl [--rounds N] [--seconds S] [--calls N]
#                           [--markdown] [--no-portkey] [--perf FILE]
#                           [--instructions N] [--pin] [--counts]
#                           [--secrets N]
#
# Portkey is installed with npm into $AIRLOCK_BUILD/portkey the first time
# (the version is pinned below) and started with portkey-shim.mjs, without
# which it fails every streamed call on Node 20 (see that file);
# --no-portkey leaves it out.  --perf FILE
# records a call-graph profile (perf record --call-graph dwarf) of the gateway worker
# during the first JSON round.  --pin places the processes (see "CPU
# placement" below).  --counts adds a run per server and call with
# perf stat's software events on its worker and on the provider's: CPU
# time, system calls by kind and context switches per call (see "kernel
# events per call" below).  --secrets N adds N credentials of other
# services to the policy (each injected by a route of its own, none
# called): every scrubbed answer is searched for every credential the
# proxy holds, so this is the search an appliance's policy makes (its
# example policy holds six); 0, the default, is the method the line-rate
# targets were set with.
#
# What it reports:
#   chat JSON   wrk (1 thread, 16 connections), POST chat/completions with a
#               client token: p50 and p99 latency, requests/s, gateway
#               (its usage log as airlock_llm_log FILE has it by default)
#               vs plain, medians of interleaved rounds (default 5, the
#               servers' order turned one place each round, and run
#               backwards every other round)
#   per round   the same requests/s ratios taken in each round (a server
#               against plain nginx of the same round): their median,
#               lowest and highest
#   control     a second plain nginx, the same as the first, in the same
#               rounds: its ratio to plain is what the machine's noise
#               alone makes of a ratio in this run (1 on a quiet machine)
#   buffered    the same calls through a second gateway whose usage log is
#               airlock_llm_log FILE buffer=64k flush=1s (the lines held
#               in shared memory, written a buffer at a time or a second
#               after the first of them; see docs/nginx.md), in the same
#               rounds
#   stream      the same for a streamed answer (the client did not ask for
#               usage, so the gateway adds include_usage and drops the
#               usage chunk: the filtering path)
#   TTFB        sequential streamed calls on one keep-alive connection, time
#               to the first byte of the body, p50 and p99, gateway vs plain
#   memory      the gateway worker's RSS (/proc/PID/status) after 1,000,
#               --calls / 2 and --calls (default 100,000) streamed calls
#   CPU         the serving process's CPU time (/proc/PID/stat) per call
#               during the rounds: on a shared machine requests/s move
#               with the load, CPU per call much less
#   writes      write() and writev() calls of the serving process per call
#               (/proc/PID/io syscw): two to sockets, the rest the usage
#               log's
#   instructions  N calls (default 500) to a copy of each nginx, plain and
#               gateway, run in one process under callgrind: instructions
#               per call, counted exactly, so the ratio does not move with
#               the machine's load as requests/s do (--instructions 0
#               leaves them out)
#   footprint   in the same run, callgrind's simulation of first-level
#               caches of a fixed size (32 KiB, 8-way, 64-byte lines, for
#               instructions and for data; 1 MiB, 8-way, behind them):
#               L1i and L1d misses per call, what a call brings into the
#               core's smallest caches.  The more it brings, the more a
#               call slows when other work shares the core's caches; the
#               figures do not depend on this machine's caches or load
#   code lines  in the same run, the 64-byte lines of code a call runs
#               (an instruction starting in the line ran at least once
#               every two calls): what the L1i misses follow, without
#               their moves with where the code lies
#   Portkey     the same rounds against Portkey (one Node process, the
#               provider given as x-portkey-provider: openai and
#               x-portkey-custom-host): requests/s, p50, p99, CPU per call
#               and resident memory after the rounds, beside the gateway

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Getopt::Long;
use IO::Socket::INET;
use POSIX ();
use Time::HiRes qw(time);
use Airlock::Test;

my $rounds = 5;
my $seconds = 4;
my $calls = 100_000;
my $markdown = 0;
my $portkey = 1;
my $perf;
my $icalls = 500;
my $pin = 0;
my $counts = 0;
my $nsecrets = 0;
GetOptions('rounds=i' => \$rounds, 'seconds=i' => \$seconds,
           'calls=i' => \$calls, 'markdown' => \$markdown,
           'portkey!' => \$portkey, 'perf=s' => \$perf,
           'instructions=i' => \$icalls, 'pin' => \$pin,
           'counts' => \$counts, 'secrets=i' => \$nsecrets)
    or die "bad options\n";

# CPU placement (--pin): every server's serving process (each nginx
# worker, Portkey's Node process) shares the first CPU this script may
# use with the provider's worker; wrk and this script (the TTFB client)
# have the second.  The core a server shares with the provider is then
# the bottleneck of every round, the same for all of them, and requests/s
# follow what a call costs there (CPU time, caches) and no longer where
# the scheduler happened to put wrk, the provider and the server.  On two
# CPUs, unpinned, the control's median was up to 20% from plain's; pinned,
# within 2%.  The other placement, the server alone on a CPU and wrk with
# the provider, leaves the server idle part of the time and was about as
# noisy as none.  Unpinned (the default) is the placement the line-rate
# targets were set with (docs/benchmarks.md).
my @cpus;
if ($pin) {
    system('command -v taskset >/dev/null') == 0
        or die "--pin needs taskset (util-linux)\n";
    @cpus = allowed_cpus();
    @cpus >= 2
        or die "--pin needs two CPUs; this script may use "
             . scalar(@cpus) . "\n";
}

sub place {
    my ($pid, $cpu) = @_;
    pin_cpus($pid, $cpu) or die "taskset -a -pc $cpu $pid failed\n";
}

# perf ARGS, for SECS seconds (--perf, --counts), quiet; returns its pid
sub perf_start {
    my ($secs, @args) = @_;
    my $p = fork // die "fork: $!";
    if ($p == 0) {
        open(STDOUT, '>', '/dev/null');
        open(STDERR, '>', '/dev/null');
        exec('perf', @args, '--', 'sleep', $secs) or die "exec perf: $!";
    }
    return $p;
}

# the Portkey gateway release measured
my $portkey_pkg = '@portkey-ai/gateway@1.15.2';

$ENV{AIRLOCK_LOG_LEVEL} = 'warn';

my $top = "$FindBin::Bin/../..";
my $build = $ENV{AIRLOCK_BUILD} // "$top/build";
my $ctl = "$build/airlockctl";

system('command -v wrk >/dev/null') == 0
    or die "wrk is not installed (apt-get install wrk)\n";

# ---- the provider: canned answers ------------------------------------------

my $json = '{"id":"chatcmpl-1","object":"chat.completion","created":1,'
         . '"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":'
         . '"assistant","content":"Hello from the bench"},"finish_reason":'
         . '"stop"}],"usage":{"prompt_tokens":11,"completion_tokens":5,'
         . '"total_tokens":16}}';

my $chunk = sub {
    my ($delta, $finish) = @_;
    return 'data: {"id":"chatcmpl-1","object":"chat.completion.chunk",'
         . '"created":1,"model":"gpt-4o-mini","choices":[{"index":0,'
         . '"delta":' . $delta . ',"finish_reason":' . $finish
         . "}]}\n\n";
};

my $sse = $chunk->('{"role":"assistant","content":""}', 'null')
        . join('', map { $chunk->('{"content":"' . $_ . '"}', 'null') }
                   qw(Hello from the bench today))
        . $chunk->('{}', '"stop"')
        . 'data: {"id":"chatcmpl-1","object":"chat.completion.chunk",'
        . '"created":1,"model":"gpt-4o-mini","choices":[],"usage":'
        . '{"prompt_tokens":11,"completion_tokens":5,"total_tokens":16}}'
        . "\n\ndata: [DONE]\n\n";

my $up = Airlock::Test->new;
$up->write_file_expand('nginx.conf', <<"EOF");
%%TEST_GLOBALS%%
http {
    %%TEST_GLOBALS_HTTP%%
    access_log off;
    server {
        listen 127.0.0.1:%%PORT_8090%%;
        location /json/ {
            default_type application/json;
            return 200 '$json';
        }
        location /sse/ {
            default_type text/event-stream;
            return 200 '$sse';
        }
    }
}
EOF
$up->run;
my $upport = $up->port(8090);

# ---- the gateway and the plain proxy ----------------------------------------

my $token = 'al-bench-token-0123456789abcdef';
my $gw = Airlock::Test->new;
$gw->require_module;
my $dir = $gw->testdir;

system("$ctl keygen $dir/airlock.key 2>/dev/null") == 0 or die "keygen\n";
my $sealed = `printf %s sk-bench-provider-key-0123456789 | $ctl seal --pub $dir/airlock.key.pub`;
chomp $sealed;
my $sha = `printf %s $token | sha256sum`;
$sha =~ s/\s.*//s;

my $llm = sub {
    my ($name, $path) = @_;
    return <<"EOF";
  - name: $name
    prefix: /v1/proxy/$name
    provider: openai
    upstream: "http://llmbench/$path/v1"
    secret: key
    models: [gpt-4o-mini]
    max_body_bytes: 65536
    clients:
      bench:
        tokens_per_minute: 4000000000
        tokens_per_day: 1000000000000
        max_tokens: 1000
        over_max_tokens: clamp
EOF
};

# --secrets: credentials of the kinds an appliance holds, each sealed and
# injected by a route of its own (made up: FAKE in every one)
my @kinds = ('ghp_%s', 'glpat-%s', 'prometheus:%s', 'xoxb-%s', 'AKIA%s',
             'sk-ant-api03-%s', 'lt_%s', 'whsec_%s');
my ($more_secrets, $more_routes) = ('', '');
for my $k (1 .. $nsecrets) {
    my $kind = $kinds[($k - 1) % @kinds];
    my $v = sprintf($kind, sprintf('FAKE%04d', $k) . 'test0not0a0key0');
    my $s = `printf %s '$v' | $ctl seal --pub $dir/airlock.key.pub`;
    chomp $s;
    $more_secrets .= "  s$k: { sealed: \"$s\" }\n";
    my $tmpl = ($kind =~ /:/) ? "Basic {s$k|base64}" : "Bearer {s$k}";
    $more_routes .= <<"EOF";
  - name: extra-$k
    clients: [bench]
    match: { method: GET, path: /extra/$k }
    upstream: extra
    to: /json/
    inject: { Authorization: "$tmpl" }
EOF
}
$more_routes = "upstreams:\n  extra: { url: \"http://127.0.0.1:$upport\" }\n"
               . "routes:\n$more_routes" if $nsecrets > 0;

$gw->write_file('policy.yaml', <<"EOF" . $llm->('json', 'json')
version: 1
clients:
  bench: { token_sha256: "$sha" }
secrets:
  key: { sealed: "$sealed" }
$more_secrets$more_routes
llm:
EOF
    . $llm->('sse', 'sse')
    . "alerts:\n  deny: { threshold: 1000000, window: 1s }\n");

my $loc = <<'EOF';
            %%AIRLOCK_LOCATION%%
EOF

# the gateway's nginx.conf, with a usage log of its own; the policy and
# the keyring are the first gateway's
my $gwconf = sub {
    my ($log) = @_;
    return <<"EOF";
%%TEST_GLOBALS%%
http {
    %%TEST_GLOBALS_HTTP%%
    access_log off;
    airlock_policy $dir/policy.yaml;
    airlock_keyring $dir/airlock.key;
    airlock_llm_zone llm 1m;
    airlock_llm_log %%TESTDIR%%/usage.log$log;
    client_body_buffer_size 64k;

    upstream llmbench {
        server 127.0.0.1:$upport;
        keepalive 32;
    }

    server {
        listen 127.0.0.1:%%PORT_8080%%;
        location /v1/proxy/json/ {
            airlock_llm json;
$loc
        }
        location /v1/proxy/sse/ {
            airlock_llm sse;
$loc
        }
    }
}
EOF
};

# "gateway" has the default usage log (airlock_llm_log FILE: the lines
# of the calls that end in one pass of the event loop are written
# together at its end); "buffered" holds them in shared memory and writes
# them a buffer at a time, or a second after the first (airlock_llm_log
# FILE buffer=64k flush=1s)
$gw->write_file_expand('nginx.conf', $gwconf->(''));
my $gwb = Airlock::Test->new;
$gwb->require_module;
$gwb->write_file_expand('nginx.conf', $gwconf->(' buffer=64k flush=1s'));

# Both reach the provider through an upstream block of the url's host, with
# keepalive (docs/nginx.md, "Upstreams, keepalive and TLS"); "control"
# (see the top of this file) is a second one of the same
my $plainconf = <<"EOF";
%%TEST_GLOBALS%%
http {
    %%TEST_GLOBALS_HTTP%%
    access_log off;
    client_body_buffer_size 64k;

    upstream llmbench {
        server 127.0.0.1:$upport;
        keepalive 32;
    }

    server {
        listen 127.0.0.1:%%PORT_8080%%;
        location /v1/proxy/json/ {
            proxy_pass http://llmbench/json/v1/;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
        location /v1/proxy/sse/ {
            proxy_pass http://llmbench/sse/v1/;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
        }
    }
}
EOF
my $plain = Airlock::Test->new;
$plain->write_file_expand('nginx.conf', $plainconf);
my $control = Airlock::Test->new;
$control->write_file_expand('nginx.conf', $plainconf);

$gw->run;
$gwb->run;
$plain->run;
$control->run;

my %nginx = (gateway => $gw, buffered => $gwb, plain => $plain,
             control => $control);
my %pid = map { $_ => ($nginx{$_}->_workers)[0][0] } keys %nginx;

# ---- Portkey ------------------------------------------------------------------

my ($pk_pid, $pk_port);

if ($portkey) {
    my $prefix = "$build/portkey";
    my $server = "$prefix/node_modules/\@portkey-ai/gateway/build/"
               . "start-server.js";

    system('command -v node >/dev/null && command -v npm >/dev/null') == 0
        or die "node and npm are needed for Portkey (apt-get install nodejs "
             . "npm), or run with --no-portkey\n";

    unless (-f $server && -f "$prefix/.version"
            && `cat $prefix/.version` eq $portkey_pkg)
    {
        print STDERR "installing $portkey_pkg into $prefix\n";
        system('mkdir', '-p', $prefix) == 0 or die "mkdir $prefix\n";
        system("cd $prefix && npm install --no-audit --no-fund --silent "
               . "--prefix $prefix $portkey_pkg >&2") == 0
            or die "npm install $portkey_pkg failed\n";
        open(my $fh, '>', "$prefix/.version") or die "$prefix/.version: $!";
        print $fh $portkey_pkg;
        close $fh;
    }

    $pk_port = $gw->port(8787);
    my $log = "$dir/portkey.log";

    $pk_pid = fork // die "fork: $!";
    if ($pk_pid == 0) {
        open(STDOUT, '>', $log) or die "$log: $!";
        open(STDERR, '>&', \*STDOUT) or die "stderr: $!";
        $ENV{NODE_ENV} = 'production';
        exec('node', '--import', "$FindBin::Bin/portkey-shim.mjs", $server,
             "--port=$pk_port", '--headless')
            or die "exec node: $!";
    }

    my $up;
    for (1 .. 300) {
        $up = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                    PeerPort => $pk_port, Proto => 'tcp')
            and last;
        select(undef, undef, undef, 0.1);
    }
    $up or die "Portkey did not start:\n" . ($gw->read_file($log) // '');
    close $up;

    $pid{portkey} = $pk_pid;
}

# wrk, started by this script from here on, takes its CPU from it
if ($pin) {
    place($pid{$_}, $cpus[0]) for keys %pid;
    place(($up->_workers)[0][0], $cpus[0]);
    place($$, $cpus[1]);
}

# waitpid() sets $?, which an END block would make the script's exit status
END {
    local $?;
    if ($pk_pid) {
        kill 'TERM', $pk_pid;
        waitpid($pk_pid, 0);
    }
}

my $body = '{"model":"gpt-4o-mini","messages":[{"role":"user","content":'
         . '"Say hello to the benchmark"}]}';
(my $sbody = $body) =~ s/\}$/,"stream":true}/;

for my $v (['json', $body], ['sse', $sbody]) {
    my ($name, $b) = @$v;
    $gw->write_file("$name.lua", <<"EOF");
wrk.method = "POST"
wrk.body = '$b'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $token"
EOF

    # Portkey is given the provider key and where the provider is
    $gw->write_file("pk-$name.lua", <<"EOF");
wrk.method = "POST"
wrk.body = '$b'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer sk-bench-provider-key-0123456789"
wrk.headers["x-portkey-provider"] = "openai"
wrk.headers["x-portkey-custom-host"] = "http://127.0.0.1:$upport/$name/v1"
EOF
}

# the URL and wrk script of a call to each server
sub target {
    my ($n, $name) = @_;
    return ("http://127.0.0.1:$pk_port/v1/chat/completions",
            "$dir/pk-$name.lua") if $n eq 'portkey';
    return ('http://127.0.0.1:' . $nginx{$n}->port(8080)
            . "/v1/proxy/$name/chat/completions", "$dir/$name.lua");
}

# user + system CPU time of a process, in seconds
sub cpu {
    my ($pid) = @_;
    open(my $fh, '<', "/proc/$pid/stat") or return 0;
    my $stat = <$fh>;
    close $fh;
    $stat =~ s/^.*\) //s;
    my @f = split / /, $stat;
    return ($f[11] + $f[12]) / POSIX::sysconf(POSIX::_SC_CLK_TCK());
}

# write() and writev() calls of a process (/proc/PID/io syscw)
sub writes {
    my ($pid) = @_;
    open(my $fh, '<', "/proc/$pid/io") or return 0;
    local $/;
    my $io = <$fh>;
    close $fh;
    return $io =~ /^syscw: (\d+)/m ? $1 : 0;
}

sub rss {
    my ($pid) = @_;
    open(my $fh, '<', "/proc/$pid/status") or return 0;
    local $/;
    my $status = <$fh>;
    close $fh;
    return $status =~ /^VmRSS:\s+(\d+) kB/m ? $1 : 0;
}

sub wrk {
    my ($n, $name, $secs) = @_;
    $secs //= $seconds;
    my ($url, $lua) = target($n, $name);
    my $out = `wrk -t1 -c16 -d${secs}s --latency -s $lua $url 2>&1`;
    my ($rps) = $out =~ /Requests\/sec:\s+([\d.]+)/;
    my %lat;
    for my $p (50, 99) {
        my ($v, $unit) = $out =~ /\s$p%\s+([\d.]+)(us|ms|s)/;
        die "wrk failed:\n$out" unless defined $v;
        $lat{$p} = $v * { us => 0.001, ms => 1, s => 1000 }->{$unit};
    }
    my ($non2xx) = $out =~ /Non-2xx or 3xx responses:\s+(\d+)/;
    my ($total) = $out =~ /(\d+) requests in/;
    die "wrk failed:\n$out" unless defined $rps;
    die "errors during the run:\n$out" if $non2xx;
    return ($rps, $lat{50}, $lat{99}, $total);
}

# a warm-up request per variant checks that it answers 200
for my $n (sort keys %nginx) {
    for my $v (['json', $body], ['sse', $sbody]) {
        my $raw = $nginx{$n}->http(
            "POST /v1/proxy/$v->[0]/chat/completions HTTP/1.0\r\n"
            . "Host: localhost\r\nAuthorization: Bearer $token\r\n"
            . "Content-Type: application/json\r\n"
            . "Content-Length: " . length($v->[1]) . "\r\n\r\n$v->[1]");
        my $r = parse_response($raw);
        $r->{status} == 200
            or die "$n $v->[0]: answered $r->{status}: $r->{body}\n";
    }
}

if ($portkey) {
    for my $v (['json', $body], ['sse', $sbody]) {
        my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                      PeerPort => $pk_port, Proto => 'tcp')
            or die "connect to Portkey: $!";
        print $s "POST /v1/chat/completions HTTP/1.0\r\n"
            . "Host: localhost\r\nContent-Type: application/json\r\n"
            . "Authorization: Bearer sk-bench-provider-key-0123456789\r\n"
            . "x-portkey-provider: openai\r\n"
            . "x-portkey-custom-host: http://127.0.0.1:$upport/$v->[0]/v1\r\n"
            . "Content-Length: " . length($v->[1]) . "\r\n\r\n$v->[1]";
        local $/;
        my $raw = <$s>;
        close $s;
        my $r = parse_response($raw // '');
        $r->{status} == 200 && $r->{body} =~ /Hello/
            or die "portkey $v->[0]: answered $r->{status}: $r->{body}\n";
    }
}

# ---- latency and throughput ----------------------------------------------------

# each round turns the order one place, so no server always runs first
# or last while the machine's load drifts, and every other round runs it
# backwards, so no server always runs right after the same one (turning
# alone keeps the neighbours: "control" would always follow "gateway")
my @servers = ('plain', 'gateway', 'control', 'buffered',
               $portkey ? ('portkey') : ());
my %res;
for my $round (1 .. $rounds) {
    my $k = ($round - 1) % @servers;
    my @order = (@servers[$k .. $#servers], @servers[0 .. $k - 1]);
    @order = reverse @order if $round % 2 == 0;

    for my $name (qw(json sse)) {
        for my $n (@order) {
            my $perf_pid;
            if ($perf && $round == 1 && $name eq 'json' && $n eq 'gateway') {
                $perf_pid = perf_start($seconds, 'record', '-F', '1000',
                                       '--call-graph', 'dwarf', '-o', $perf,
                                       '-p', $pid{gateway});
            }
            my ($c0, $w0) = (cpu($pid{$n}), writes($pid{$n}));
            my ($rps, $p50, $p99, $total) = wrk($n, $name);
            my $us = (cpu($pid{$n}) - $c0) * 1e6 / ($total || 1);
            push @{$res{$name}{$n}{wr}},
                (writes($pid{$n}) - $w0) / ($total || 1);
            waitpid($perf_pid, 0) if $perf_pid;
            push @{$res{$name}{$n}{rps}}, $rps;
            push @{$res{$name}{$n}{p50}}, $p50;
            push @{$res{$name}{$n}{p99}}, $p99;
            push @{$res{$name}{$n}{cpu}}, $us;
            printf STDERR "round %d %-5s %-8s %9.0f req/s  p50 %.3f ms"
                . "  p99 %.3f ms  cpu %.1f us/call\n", $round, $name, $n,
                $rps, $p50, $p99, $us;
        }
    }
}

my %rss = map { $_ => rss($pid{$_}) } @servers;

# ---- kernel events per call (--counts) ------------------------------------------

# perf stat with software events only (no hardware counters needed): a
# wrk run per server and call, counted on the server's worker and on the
# provider's worker at once
my @kev = qw(task-clock context-switches page-faults raw_syscalls:sys_enter
             syscalls:sys_enter_epoll_wait syscalls:sys_enter_recvfrom
             syscalls:sys_enter_writev syscalls:sys_enter_getsockopt
             syscalls:sys_enter_write syscalls:sys_enter_epoll_ctl
             syscalls:sys_enter_accept4 syscalls:sys_enter_connect
             syscalls:sys_enter_close);
my %kev;

sub perf_read {
    my ($out, $calls) = @_;
    my %c;
    open(my $fh, '<', $out) or die "$out: $!";
    while (<$fh>) {
        my @f = split /,/;
        next unless @f > 3 && $f[0] =~ /^[\d.]+$/;
        (my $e = $f[2]) =~ s/^syscalls:sys_enter_//;
        $c{$e} = $f[0] / ($calls || 1);
    }
    close $fh;
    return \%c;
}

if ($counts) {
    system('command -v perf >/dev/null') == 0
        or die "--counts needs perf (apt-get install linux-perf)\n";
    my $uppid = ($up->_workers)[0][0];
    for my $name (qw(json sse)) {
        for my $n (@servers) {
            my ($so, $po) = ("$dir/perf-$n-$name.txt",
                             "$dir/perf-up-$n-$name.txt");
            my @p = map { perf_start($seconds + 1, 'stat', '-x', ',',
                                     '-o', $_->[1], '-e', join(',', @kev),
                                     '-p', $_->[0]) }
                    [$pid{$n}, $so], [$uppid, $po];
            select(undef, undef, undef, 0.3);
            my (undef, undef, undef, $total) = wrk($n, $name);
            waitpid($_, 0) for @p;
            $kev{$name}{$n} = [perf_read($so, $total), perf_read($po, $total)];
        }
    }
}

sub median {
    my @s = sort { $a <=> $b } @_;
    return $s[int(@s / 2)];
}

sub pct {
    my ($p, @v) = @_;
    my @s = sort { $a <=> $b } @v;
    return $s[int($p / 100 * (@s - 1) + 0.5)];
}

# ---- TTFB --------------------------------------------------------------------------

# time to the first body byte of a streamed call, one keep-alive
# connection, calls one after another
sub ttfb {
    my ($n, $count) = @_;
    my $req = "POST /v1/proxy/sse/chat/completions HTTP/1.1\r\n"
            . "Host: localhost\r\nAuthorization: Bearer $token\r\n"
            . "Content-Type: application/json\r\n"
            . "Content-Length: " . length($sbody) . "\r\n\r\n$sbody";
    my ($s, @t);

    for my $i (0 .. $count - 1) {

        # a fresh connection every 500 calls: nginx closes one after
        # keepalive_requests (1000)
        if ($i % 500 == 0) {
            close $s if $s;
            $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                       PeerPort => $nginx{$n}->port(8080),
                                       Proto => 'tcp') or die "connect: $!";
        }

        my $start = time;
        syswrite($s, $req) or die "write: $!";
        my ($buf, $first, $r) = ('', undef, undef);

        for (;;) {
            sysread($s, $buf, 65536, length $buf)
                or die "$n: read after $i calls: " . ($! || 'closed') . "\n";
            $first //= time if $buf =~ /\r\n\r\n(?:[0-9a-f]+\r\n)?data:/;
            $r = parse_response($buf);
            last if $r->{complete};
        }

        push @t, (($first // time) - $start) * 1000;

        if (($r->{headers}{connection} // '') =~ /close/i) {
            close $s;
            $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                       PeerPort => $nginx{$n}->port(8080),
                                       Proto => 'tcp') or die "connect: $!";
        }
    }

    close $s;
    return @t;
}

my %ttfb;
for (1 .. $rounds) {
    for my $n (qw(plain gateway)) {
        push @{$ttfb{$n}}, ttfb($n, 2000);
    }
}

# ---- memory over many streamed calls --------------------------------------------

my @rss;
my $done = 0;
my $rate = 20_000;      # calls a second, as the last wrk run made them

# runs of whole seconds, no longer than what is left to the mark takes at
# the last run's rate: a 5-second run would pass more than one mark
for my $mark (1_000, int($calls / 2), $calls) {
    while ($done < $mark) {
        my $secs = int(($mark - $done) / $rate);
        $secs = $secs < 1 ? 1 : $secs > 5 ? 5 : $secs;
        my (undef, undef, undef, $total) = wrk('gateway', 'sse', $secs);
        $done += $total;
        $rate = $total / $secs if $total;
    }
    push @rss, [$done, rss($pid{gateway})];
    printf STDERR "%d streamed calls: worker RSS %d kB\n", @{$rss[-1]};
}

# ---- instructions per call ---------------------------------------------------------

# A copy of a server's configuration, one process (master_process off) on a
# port of its own, under callgrind; its counters are zeroed after a warm-up
# and dumped after the calls, so what is counted is the calls only.
sub instructions {
    my ($n, $name, $count) = @_;
    my $t = $nginx{$n};
    my $prefix = $t->testdir;
    my $port = $t->port(8095);
    my $out = "$prefix/callgrind-$name.out";

    my $conf = $t->read_file('nginx.conf');
    $conf =~ s/^daemon off;/daemon off;\nmaster_process off;/m
        or die "no daemon line\n";
    $conf =~ s{^pid \S+;}{pid $prefix/callgrind.pid;}m;
    $conf =~ s/listen 127\.0\.0\.1:\d+;/listen 127.0.0.1:$port;/;
    $t->write_file('callgrind.conf', $conf);
    unlink glob("$out*");

    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open(STDOUT, '>', "$prefix/callgrind.log");
        open(STDERR, '>&', \*STDOUT);
        exec('valgrind', '--tool=callgrind', "--callgrind-out-file=$out",
             '--cache-sim=yes', '--I1=32768,8,64', '--D1=32768,8,64',
             '--LL=1048576,8,64', '--dump-instr=yes',
             $ENV{AIRLOCK_NGINX} // '/usr/sbin/nginx', '-p', "$prefix/",
             '-c', 'callgrind.conf', '-e', "$prefix/callgrind-error.log")
            or die "exec valgrind: $!";
    }

    my $s;
    for (1 .. 600) {
        $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
                                   Proto => 'tcp') and last;
        select(undef, undef, undef, 0.1);
    }
    $s or die "$n under callgrind did not start\n";

    my $b = $name eq 'sse' ? $sbody : $body;
    my $req = "POST /v1/proxy/$name/chat/completions HTTP/1.1\r\n"
            . "Host: localhost\r\nAuthorization: Bearer $token\r\n"
            . "Content-Type: application/json\r\n"
            . "Content-Length: " . length($b) . "\r\n\r\n$b";

    my $call = sub {
        syswrite($s, $req) or die "write: $!";
        my $buf = '';
        for (;;) {
            sysread($s, $buf, 65536, length $buf)
                or die "$n under callgrind: read: " . ($! || 'closed') . "\n";
            my $r = parse_response($buf);
            next unless $r->{complete};
            $r->{status} == 200 or die "$n under callgrind: $r->{status}\n";
            last;
        }
    };

    $call->() for 1 .. 50;
    system("callgrind_control -z $pid >/dev/null") == 0
        or die "callgrind_control -z failed\n";
    $call->() for 1 .. $count;
    system("callgrind_control -d $pid >/dev/null") == 0
        or die "callgrind_control -d failed\n";
    close $s;
    kill 'QUIT', $pid;
    waitpid($pid, 0);

    # "events: Ir Dr Dw I1mr D1mr D1mw ..." names the summary's columns;
    # each cost line is "ADDRESS LINE Ir ...", the address absolute (0x...)
    # or relative to the line before (+N, -N, *), in the object of the
    # last ob=; the line after a calls= line is the call's cost, not an
    # instruction's
    open(my $fh, '<', "$out.1") or die "$out.1: $!";
    my (@events, @sum, %ir, %ran);
    my ($ob, $at, $callcost) = ('', 0, 0);
    while (<$fh>) {
        if (/^(0x[0-9a-f]+|[+-]\d+|\*)(?: \S+(?: (\d+))?)?/) {
            my ($a, $n) = ($1, $2 // 0);
            $at = $a =~ /^0x/ ? hex($a)
                : $a =~ /^\+(\d+)$/ ? $at + $1
                : $a =~ /^-(\d+)$/ ? $at - $1
                : $at;
            if ($callcost) {
                $callcost = 0;
            } else {
                $ir{"$ob $at"} += $n;
            }
            next;
        }
        $ob = $1 if /^ob=\((\d+)\)/;
        $callcost = 1 if /^calls=/;
        @events = split ' ', $1 if /^events: (.*)/;
        @sum = split ' ', $1 if /^summary: (.*)/;
    }
    close $fh;
    for my $k (keys %ir) {
        my ($o, $a) = split ' ', $k;
        my $l = "$o " . ($a >> 6);
        $ran{$l} = $ir{$k} if ($ran{$l} // 0) < $ir{$k};
    }
    my %e;
    @e{@events} = @sum;
    defined $e{$_} or die "$out.1: no $_ in the summary\n"
        for qw(Ir I1mr D1mr D1mw);
    $events[0] eq 'Ir' or die "$out.1: Ir is not the first event\n";

    # the code lines a call runs: 64-byte lines one of whose instructions
    # ran at least once every two calls
    my $code = grep { $_ * 2 >= $count } values %ran;

    return { ir => $e{Ir} / $count, i1 => $e{I1mr} / $count,
             d1 => ($e{D1mr} + $e{D1mw}) / $count, lines => $code };
}

my %ins;
if ($icalls) {
    system('command -v valgrind >/dev/null') == 0
        or die "valgrind is not installed (apt-get install valgrind), or run "
             . "with --instructions 0\n";

    for my $name (qw(json sse)) {
        for my $n (qw(plain gateway)) {
            $ins{$name}{$n} = instructions($n, $name, $icalls);
            printf STDERR "%-5s %-8s %8.0f instructions, %.0f L1i and %.0f "
                . "L1d misses, %d code lines per call\n", $name, $n,
                @{$ins{$name}{$n}}{qw(ir i1 d1 lines)};
        }
    }
}

# ---- report ------------------------------------------------------------------------

my %m;
for my $name (qw(json sse)) {
    for my $n (@servers) {
        $m{$name}{$n}{$_} = median(@{$res{$name}{$n}{$_}})
            for qw(rps p50 p99 cpu wr);
    }
}

my @lines;
push @lines, $markdown
    ? "| call | plain p50 ms | gateway p50 ms | p50 added | plain p99 ms "
      . "| gateway p99 ms | p99 added | req/s ratio | buffered ratio "
      . "| control ratio |\n"
      . "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    : sprintf("%-12s %9s %9s %9s %9s %9s %9s %7s %8s %7s", 'call', 'p50',
              'gw p50', 'added', 'p99', 'gw p99', 'added', 'ratio',
              'buffered', 'control');

for my $v (['chat JSON', 'json'], ['chat stream', 'sse']) {
    my ($label, $name) = @$v;
    my ($p, $g, $b, $c) = @{$m{$name}}{qw(plain gateway buffered control)};
    push @lines, sprintf($markdown
        ? "| %s | %.3f | %.3f | %+.3f ms | %.3f | %.3f | %+.3f ms | %.3f "
          . "| %.3f | %.3f |"
        : "%-12s %9.3f %9.3f %+9.3f %9.3f %9.3f %+9.3f %7.3f %8.3f %7.3f",
        $label, $p->{p50}, $g->{p50}, $g->{p50} - $p->{p50},
        $p->{p99}, $g->{p99}, $g->{p99} - $p->{p99}, $g->{rps} / $p->{rps},
        $b->{rps} / $p->{rps}, $c->{rps} / $p->{rps});
}
push @lines, '(buffered: the gateway with airlock_llm_log FILE buffer=64k '
    . 'flush=1s; control: a second plain nginx, the same as the first)';

# the same ratios taken round by round (each server against plain nginx
# of the same round, seconds apart) rather than of the medians:
# their median, and the lowest and highest round

push @lines, '';
push @lines, $markdown
    ? "| call | gateway, per round | lowest to highest | buffered, per round "
      . "| lowest to highest | control, per round | lowest to highest |\n"
      . "| --- | --- | --- | --- | --- | --- | --- |"
    : sprintf("%-12s %9s %15s %9s %15s %9s %15s", 'per round', 'gateway',
              'low-high', 'buffered', 'low-high', 'control', 'low-high');
for my $v (['chat JSON', 'json'], ['chat stream', 'sse']) {
    my ($label, $name) = @$v;
    my @f = ($label);
    for my $n (qw(gateway buffered control)) {
        my @r = map { $res{$name}{$n}{rps}[$_]
                      / ($res{$name}{plain}{rps}[$_] || 1) }
                0 .. $#{$res{$name}{plain}{rps}};
        my @s = sort { $a <=> $b } @r;
        push @f, median(@r), $s[0], $s[-1];
    }
    push @lines, sprintf($markdown
        ? "| %s | %.3f | %.3f to %.3f | %.3f | %.3f to %.3f | %.3f "
          . "| %.3f to %.3f |"
        : "%-12s %9.3f %7.3f-%.3f %9.3f %7.3f-%.3f %9.3f %7.3f-%.3f", @f);
}

my ($tp50, $tg50) = (pct(50, @{$ttfb{plain}}), pct(50, @{$ttfb{gateway}}));
my ($tp99, $tg99) = (pct(99, @{$ttfb{plain}}), pct(99, @{$ttfb{gateway}}));

push @lines, '';
push @lines, $markdown
    ? "| stream TTFB | plain | gateway | added |\n| --- | --- | --- | --- |"
    : sprintf("%-12s %9s %9s %9s", 'TTFB', 'plain', 'gateway', 'added');
push @lines, sprintf($markdown ? "| %s | %.3f ms | %.3f ms | %+.3f ms |"
                               : "%-12s %9.3f %9.3f %+9.3f",
                     $_->[0], $_->[1], $_->[2], $_->[2] - $_->[1])
    for ['p50', $tp50, $tg50], ['p99', $tp99, $tg99];

push @lines, '';
push @lines, $markdown
    ? "| streamed calls | worker RSS |\n| --- | --- |"
    : sprintf("%-14s %s", 'calls', 'worker RSS');
push @lines, sprintf($markdown ? "| %d | %d kB |" : "%-14d %d kB", @$_)
    for @rss;

# CPU per call, and the gateway against Portkey

push @lines, '';
push @lines, $markdown
    ? "| call | plain cpu us/call | gateway cpu us/call | added "
      . "| buffered cpu us/call |\n| --- | --- | --- | --- | --- |"
    : sprintf("%-12s %9s %9s %9s %9s", 'cpu us/call', 'plain', 'gateway',
              'added', 'buffered');
for my $v (['chat JSON', 'json'], ['chat stream', 'sse']) {
    my ($label, $name) = @$v;
    my ($p, $g, $b) = map { $m{$name}{$_}{cpu} } qw(plain gateway buffered);
    push @lines, sprintf($markdown ? "| %s | %.1f | %.1f | %+.1f | %.1f |"
                                   : "%-12s %9.1f %9.1f %+9.1f %9.1f",
                         $label, $p, $g, $g - $p, $b);
}

# write()s per call: two to sockets (the answer, the request upstream),
# the rest the usage log's

push @lines, '';
push @lines, $markdown
    ? "| call | plain write()s/call | gateway write()s/call "
      . "| buffered write()s/call |\n| --- | --- | --- | --- |"
    : sprintf("%-12s %9s %9s %9s", 'writes/call', 'plain', 'gateway',
              'buffered');
for my $v (['chat JSON', 'json'], ['chat stream', 'sse']) {
    my ($label, $name) = @$v;
    my ($p, $g, $b) = map { $m{$name}{$_}{wr} } qw(plain gateway buffered);
    push @lines, sprintf($markdown ? "| %s | %.3f | %.3f | %.3f |"
                                   : "%-12s %9.3f %9.3f %9.3f",
                         $label, $p, $g, $b);
}

if ($icalls) {
    push @lines, '';
    push @lines, $markdown
        ? "| call | plain instructions/call | gateway instructions/call "
          . "| ratio |\n| --- | --- | --- | --- |"
        : sprintf("%-12s %9s %9s %9s", 'instr/call', 'plain', 'gateway',
                  'ratio');
    for my $v (['chat JSON', 'json'], ['chat stream', 'sse']) {
        my ($label, $name) = @$v;
        my ($p, $g) = ($ins{$name}{plain}{ir}, $ins{$name}{gateway}{ir});
        push @lines, sprintf($markdown ? "| %s | %.0f | %.0f | %.2f |"
                                       : "%-12s %9.0f %9.0f %9.2f",
                             $label, $p, $g, $g / $p);
    }

    # the footprint: misses of the simulated first-level caches
    push @lines, '';
    push @lines, $markdown
        ? "| call | plain L1i misses/call | gateway L1i misses/call "
          . "| plain L1d misses/call | gateway L1d misses/call |\n"
          . "| --- | --- | --- | --- | --- |"
        : sprintf("%-12s %9s %9s %9s %9s", 'misses/call', 'plain L1i',
                  'gw L1i', 'plain L1d', 'gw L1d');
    for my $v (['chat JSON', 'json'], ['chat stream', 'sse']) {
        my ($label, $name) = @$v;
        my ($p, $g) = ($ins{$name}{plain}, $ins{$name}{gateway});
        push @lines, sprintf($markdown ? "| %s | %.0f | %.0f | %.0f | %.0f |"
                                       : "%-12s %9.0f %9.0f %9.0f %9.0f",
                             $label, $p->{i1}, $g->{i1}, $p->{d1}, $g->{d1});
    }

    # the code a call runs, in 64-byte lines: what the L1i misses follow,
    # without the simulated cache's sets moving them with the layout
    push @lines, '';
    push @lines, $markdown
        ? "| call | plain code lines/call | gateway code lines/call |\n"
          . "| --- | --- | --- |"
        : sprintf("%-12s %9s %9s", 'code lines', 'plain', 'gateway');
    for my $v (['chat JSON', 'json'], ['chat stream', 'sse']) {
        my ($label, $name) = @$v;
        push @lines, sprintf($markdown ? "| %s | %d | %d |"
                                       : "%-12s %9d %9d", $label,
                             map { $ins{$name}{$_}{lines} } qw(plain gateway));
    }
}

if ($portkey) {
    my @lead;
    push @lines, '';
    push @lines, $markdown
        ? "| call | metric | gateway | Portkey | gateway leads |\n"
          . "| --- | --- | --- | --- | --- |"
        : sprintf("%-12s %-12s %10s %10s %s", 'vs Portkey', 'metric',
                  'gateway', 'Portkey', 'lead');
    for my $v (['chat JSON', 'json'], ['chat stream', 'sse']) {
        my ($label, $name) = @$v;
        my ($g, $k) = ($m{$name}{gateway}, $m{$name}{portkey});
        for my $r (['req/s', 'rps', '%.0f', 1], ['p50 ms', 'p50', '%.3f', 0],
                   ['p99 ms', 'p99', '%.3f', 0],
                   ['cpu us/call', 'cpu', '%.1f', 0])
        {
            my ($metric, $key, $fmt, $more) = @$r;
            my $leads = $more ? $g->{$key} > $k->{$key}
                              : $g->{$key} < $k->{$key};
            push @lead, "$label $metric" unless $leads;
            my $x = $more ? $g->{$key} / ($k->{$key} || 1)
                          : $k->{$key} / ($g->{$key} || 1);
            (my $wfmt = $fmt) =~ s/%/%10/;
            push @lines, sprintf($markdown
                ? "| %s | %s | $fmt | $fmt | %s (%.2fx) |"
                : "%-12s %-12s $wfmt $wfmt %s (%.2fx)",
                $label, $metric, $g->{$key}, $k->{$key},
                $leads ? 'yes' : 'NO', $x);
        }
    }
    my $leads = $rss{gateway} < $rss{portkey};
    push @lead, 'RSS' unless $leads;
    push @lines, sprintf($markdown ? "| %s | %s | %d kB | %d kB | %s |"
                                   : "%-12s %-12s %7d kB %7d kB %s",
                         'both', 'RSS after the rounds', $rss{gateway},
                         $rss{portkey}, $leads ? 'yes' : 'NO');
    push @lines, '', @lead ? 'the gateway does not lead Portkey on: '
                             . join(', ', @lead)
                           : 'the gateway leads Portkey on every row';
}

if ($counts) {
    my @show = qw(task-clock context-switches page-faults sys_enter
                  epoll_wait recvfrom writev getsockopt write epoll_ctl
                  accept4 connect close);
    push @lines, '', 'per call, perf stat software events (task-clock in '
        . 'us; "sys_enter" is every system call; "up" is the provider '
        . 'serving that server)';
    push @lines, join(' ', sprintf('%-14s', 'call server'),
                      map { sprintf('%9s', substr($_, 0, 9)) } @show);
    for my $name (qw(json sse)) {
        for my $n (@servers) {
            for my $w (0, 1) {
                my $c = $kev{$name}{$n}[$w];
                my $k = $c->{'raw_syscalls:sys_enter'} // 0;
                push @lines, join(' ',
                    sprintf('%-14s', "$name " . ($w ? "up/$n" : $n)),
                    map { sprintf('%9.3f', $_ eq 'task-clock'
                                  ? ($c->{$_} // 0) * 1000
                                  : $_ eq 'sys_enter' ? $k
                                  : $c->{$_} // 0) } @show);
            }
        }
    }
}
print "$_\n" for @lines;
my $node = $portkey ? `node --version` : '';
chomp $node;
printf "(wrk -t1 -c16, medians of %d rounds of %ds, one nginx worker each%s; "
    . "TTFB over %d sequential calls%s)\n", $rounds, $seconds,
    $portkey ? ", Portkey $portkey_pkg on Node $node" : '', 2000 * $rounds,
    $pin ? "; pinned: each server and the provider on CPU $cpus[0], wrk "
           . "and the TTFB client on CPU $cpus[1]" : '';
