#!/usr/bin/perl
# LLM gateway benchmark: the Airlock gateway (airlock_llm) against plain
# nginx proxy_pass to the same provider, same machine, same run; the
# provider is a second nginx answering canned bodies, so what is measured
# is the gateway, not a fixture.
#
#   perl tests/bench/llm.pl [--rounds N] [--seconds S] [--calls N]
#                           [--markdown]
#
# What it reports:
#   chat JSON   wrk (1 thread, 16 connections), POST chat/completions with a
#               client token: p50 and p99 latency, requests/s, gateway vs
#               plain, medians of interleaved rounds
#   stream      the same for a streamed answer (the client did not ask for
#               usage, so the gateway adds include_usage and drops the
#               usage chunk: the filtering path)
#   TTFB        sequential streamed calls on one keep-alive connection, time
#               to the first byte of the body, p50 and p99, gateway vs plain
#   memory      the gateway worker's RSS (/proc/PID/status) after 1,000,
#               --calls / 2 and --calls (default 100,000) streamed calls

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Getopt::Long;
use IO::Socket::INET;
use Time::HiRes qw(time);
use Airlock::Test;

my $rounds = 3;
my $seconds = 4;
my $calls = 100_000;
my $markdown = 0;
GetOptions('rounds=i' => \$rounds, 'seconds=i' => \$seconds,
           'calls=i' => \$calls, 'markdown' => \$markdown)
    or die "bad options\n";

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

$gw->write_file('policy.yaml', <<"EOF" . $llm->('json', 'json')
version: 1
clients:
  bench: { token_sha256: "$sha" }
secrets:
  key: { sealed: "$sealed" }
llm:
EOF
    . $llm->('sse', 'sse')
    . "alerts:\n  deny: { threshold: 1000000, window: 1s }\n");

my $loc = <<'EOF';
            %%AIRLOCK_LOCATION%%
EOF

$gw->write_file_expand('nginx.conf', <<"EOF");
%%TEST_GLOBALS%%
http {
    %%TEST_GLOBALS_HTTP%%
    access_log off;
    airlock_policy %%TESTDIR%%/policy.yaml;
    airlock_keyring %%TESTDIR%%/airlock.key;
    airlock_llm_zone llm 1m;
    airlock_llm_log %%TESTDIR%%/usage.log;
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

# Both reach the provider through an upstream block of the url's host, with
# keepalive (docs/nginx.md, "Upstreams, keepalive and TLS").
my $plain = Airlock::Test->new;
$plain->write_file_expand('nginx.conf', <<"EOF");
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

$gw->run;
$plain->run;

my %nginx = (gateway => $gw, plain => $plain);

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
}

sub wrk {
    my ($port, $name, $secs) = @_;
    $secs //= $seconds;
    my $out = `wrk -t1 -c16 -d${secs}s --latency -s $dir/$name.lua http://127.0.0.1:$port/v1/proxy/$name/chat/completions 2>&1`;
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

# ---- latency and throughput ----------------------------------------------------

my %res;
for my $round (1 .. $rounds) {
    for my $name (qw(json sse)) {
        for my $n (qw(plain gateway)) {
            my ($rps, $p50, $p99) = wrk($nginx{$n}->port(8080), $name);
            push @{$res{$name}{$n}{rps}}, $rps;
            push @{$res{$name}{$n}{p50}}, $p50;
            push @{$res{$name}{$n}{p99}}, $p99;
            printf STDERR "round %d %-5s %-8s %9.0f req/s  p50 %.3f ms"
                . "  p99 %.3f ms\n", $round, $name, $n, $rps, $p50, $p99;
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

sub worker_rss {
    my ($n) = @_;
    my @w = $nginx{$n}->_workers;
    my $status = $nginx{$n}->read_file("/proc/$w[0][0]/status") // '';
    return $status =~ /^VmRSS:\s+(\d+) kB/m ? $1 : 0;
}

my @rss;
my $done = 0;
my $port = $gw->port(8080);

for my $mark (1_000, int($calls / 2), $calls) {
    while ($done < $mark) {
        my $left = $mark - $done;
        my $secs = $left > 20_000 ? 5 : 1;
        my (undef, undef, undef, $total) = wrk($port, 'sse', $secs);
        $done += $total;
    }
    push @rss, [$done, worker_rss('gateway')];
    printf STDERR "%d streamed calls: worker RSS %d kB\n", @{$rss[-1]};
}

# ---- report ------------------------------------------------------------------------

my %m;
for my $name (qw(json sse)) {
    for my $n (qw(plain gateway)) {
        $m{$name}{$n}{$_} = median(@{$res{$name}{$n}{$_}})
            for qw(rps p50 p99);
    }
}

my @lines;
push @lines, $markdown
    ? "| call | plain p50 ms | gateway p50 ms | p50 added | plain p99 ms "
      . "| gateway p99 ms | p99 added | req/s ratio |\n"
      . "| --- | --- | --- | --- | --- | --- | --- | --- |"
    : sprintf("%-12s %9s %9s %9s %9s %9s %9s %7s", 'call', 'p50', 'gw p50',
              'added', 'p99', 'gw p99', 'added', 'ratio');

for my $v (['chat JSON', 'json'], ['chat stream', 'sse']) {
    my ($label, $name) = @$v;
    my ($p, $g) = ($m{$name}{plain}, $m{$name}{gateway});
    push @lines, sprintf($markdown
        ? "| %s | %.3f | %.3f | %+.3f ms | %.3f | %.3f | %+.3f ms | %.3f |"
        : "%-12s %9.3f %9.3f %+9.3f %9.3f %9.3f %+9.3f %7.3f",
        $label, $p->{p50}, $g->{p50}, $g->{p50} - $p->{p50},
        $p->{p99}, $g->{p99}, $g->{p99} - $p->{p99}, $g->{rps} / $p->{rps});
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

print "$_\n" for @lines;
printf "(wrk -t1 -c16, medians of %d rounds of %ds, one nginx worker each; "
    . "TTFB over %d sequential calls)\n", $rounds, $seconds, 2000 * $rounds;
