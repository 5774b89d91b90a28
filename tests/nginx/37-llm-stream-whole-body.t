#!/usr/bin/perl

# ngx_http_airlock_llm_module: event streams from a provider that sends the
# whole body at once with a Content-Length (here a second nginx serving
# files), the case where the gateway holds its output until the upstream
# finalizes so the data and the last chunk leave together.  Small and
# large (1 MB, many upstream buffers) bodies, read at once and read
# slowly: every byte arrives, the usage chunk the client did not ask for
# is dropped, the usage is the stream's, the request ends.  The type is
# matched in either case, and only as a whole word.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Socket::INET;
use JSON::PP;
use Test::More;
use Time::HiRes qw(time sleep);
use Airlock::Test;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $top = "$FindBin::Bin/../..";
my $build = $ENV{AIRLOCK_BUILD} // "$top/build";
my $ctl = "$build/airlockctl";

my $chunk = sub {
    my ($delta, $finish) = @_;
    return 'data: {"id":"chatcmpl-1","object":"chat.completion.chunk",'
         . '"created":1,"model":"gpt-4o-mini","choices":[{"index":0,'
         . '"delta":' . $delta . ',"finish_reason":' . $finish
         . "}]}\n\n";
};

my $usage = 'data: {"id":"chatcmpl-1","object":"chat.completion.chunk",'
          . '"created":1,"model":"gpt-4o-mini","choices":[],"usage":'
          . '{"prompt_tokens":11,"completion_tokens":5,"total_tokens":16}}'
          . "\n\n";

sub stream {
    my (@text) = @_;
    my $head = $chunk->('{"role":"assistant","content":""}', 'null')
             . join('', map { $chunk->('{"content":"' . $_ . '"}', 'null') }
                        @text)
             . $chunk->('{}', '"stop"');
    return ($head . $usage . "data: [DONE]\n\n", $head . "data: [DONE]\n\n");
}

my ($small, $small_kept) = stream(qw(Hello from the bench today));
my ($large, $large_kept) = stream(map { "piece $_ " . ('x' x 300) }
                                  1 .. 3000);

my $up = Airlock::Test->new;
$up->write_file('small.sse', $small);
$up->write_file('large.sse', $large);
$up->write_file_expand('nginx.conf', <<'EOF');
%%TEST_GLOBALS%%
http {
    %%TEST_GLOBALS_HTTP%%
    server {
        listen 127.0.0.1:%%PORT_8090%%;
        location ~ ^/p/mixed/ {
            error_page 405 =200 /g/small.sse;
            return 405;
        }
        location ~ ^/p/near/ {
            error_page 405 =200 /h/small.sse;
            return 405;
        }
        location ~ ^/p/(\w+)/ {
            error_page 405 =200 /f/$1.sse;
            return 405;
        }
        location /f/ {
            internal;
            alias %%TESTDIR%%/;
            default_type text/event-stream;
        }
        location /g/ {
            internal;
            alias %%TESTDIR%%/;
            default_type "Text/Event-STREAM; Charset=UTF-8";
        }
        location /h/ {
            internal;
            alias %%TESTDIR%%/;
            default_type text/event-streams;
        }
    }
}
EOF
$up->run;
my $upport = $up->port(8090);

my $token = 'al-stream-token-0123456789abcdef';
my $gw = Airlock::Test->new;
$gw->require_module;
my $dir = $gw->testdir;

system("$ctl keygen $dir/airlock.key 2>/dev/null") == 0 or die "keygen\n";
my $seal = "$ctl seal --pub $dir/airlock.key.pub";
my $sealed = `printf %s sk-stream-provider-key-0123456789 | $seal`;
chomp $sealed;
my $sha = `printf %s $token | sha256sum`;
$sha =~ s/\s.*//s;

my $llm = sub {
    my ($name) = @_;
    return <<"EOF";
  - name: $name
    prefix: /v1/proxy/$name
    provider: openai
    upstream: "http://127.0.0.1:$upport/p/$name"
    secret: key
    models: [gpt-4o-mini]
    max_body_bytes: 65536
    clients:
      agent:
        tokens_per_minute: 4000000000
        tokens_per_day: 1000000000000
        max_tokens: 1000
        over_max_tokens: clamp
EOF
};

my $entries = join('', map { $llm->($_) } qw(small large mixed near));
$gw->write_file('policy.yaml', <<"EOF" . $entries
version: 1
clients:
  agent: { token_sha256: "$sha" }
secrets:
  key: { sealed: "$sealed" }
llm:
EOF
    . "alerts:\n  deny: { threshold: 1000000, window: 1s }\n");

$gw->write_file('usage.log', '');
$gw->write_file_expand('nginx.conf', <<'EOF');
%%TEST_GLOBALS%%
http {
    %%TEST_GLOBALS_HTTP%%
    airlock_policy %%TESTDIR%%/policy.yaml;
    airlock_keyring %%TESTDIR%%/airlock.key;
    airlock_llm_zone llm 1m;
    airlock_llm_log %%TESTDIR%%/usage.log;
    client_body_buffer_size 64k;

    server {
        listen 127.0.0.1:%%PORT_8080%%;
        location /v1/proxy/small/ {
            airlock_llm small;
            %%AIRLOCK_LOCATION%%
        }
        location /v1/proxy/large/ {
            airlock_llm large;
            %%AIRLOCK_LOCATION%%
        }
        location /v1/proxy/mixed/ {
            airlock_llm mixed;
            %%AIRLOCK_LOCATION%%
        }
        location /v1/proxy/near/ {
            airlock_llm near;
            %%AIRLOCK_LOCATION%%
        }
    }
}
EOF
$gw->run;

plan tests => 18;

my $body = '{"model":"gpt-4o-mini","messages":[{"role":"user","content":'
         . '"Say hello"}],"stream":true}';

# one call; $pause between reads of $size bytes makes a slow client
sub call {
    my ($name, $size, $pause) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                  PeerPort => $gw->port(8080),
                                  Proto => 'tcp', Timeout => 10)
        or die "connect: $!";
    my $req = "POST /v1/proxy/$name/chat/completions HTTP/1.1\r\n"
            . "Host: localhost\r\nAuthorization: Bearer $token\r\n"
            . "Content-Type: application/json\r\nConnection: close\r\n"
            . "Content-Length: " . length($body) . "\r\n\r\n$body";
    syswrite($s, $req) == length($req) or die "write: $!";

    my ($raw, $buf) = ('', '');
    my $deadline = time + 30;
    while (time < $deadline) {
        my $n = sysread($s, $buf, $size);
        last if !$n;
        $raw .= $buf;
        sleep $pause if $pause;
    }
    close $s;

    return parse_response($raw);
}

sub usage_lines {
    return json_lines($gw->read_file('usage.log'));
}

sub last_usage {
    my ($count) = @_;
    my $deadline = time + 30;
    for (;;) {
        my @l = usage_lines();
        return $l[-1] if @l >= $count || time > $deadline;
        sleep 0.02;
    }
}

my $n = 0;
my $r;

for my $v (['small', $small_kept, 65536, 0, 'small, read at once'],
           ['large', $large_kept, 65536, 0, 'large, read at once'],
           ['large', $large_kept, 4096, 0.002, 'large, read slowly'],
           ['small', $small_kept, 1, 0, 'small, a byte at a time'])
{
    my ($name, $want, $size, $pause, $what) = @$v;

    $r = call($name, $size, $pause);
    ok($r->{status} == 200 && $r->{complete}, "$what: complete answer");
    ok(defined $r->{body} && $r->{body} eq $want,
       "$what: every byte but the usage chunk")
        or diag('got ' . length($r->{body} // '') . ' bytes, want '
                . length($want));

    my $u = last_usage(++$n);
    ok($u->{usage_source} eq 'stream' && $u->{total_tokens} == 16,
       "$what: usage from the stream");
    is($u->{status}, 200, "$what: logged 200") if $what =~ /^small, read/;
}

# the type in other cases, with parameters: still a stream
$r = call('mixed', 65536, 0);
ok($r->{status} == 200 && defined $r->{body} && $r->{body} eq $small_kept,
   'Text/Event-STREAM: read as a stream, the usage chunk dropped');
ok(last_usage(++$n)->{usage_source} eq 'stream',
   'Text/Event-STREAM: usage from the stream');

# a longer type that begins with the name: not a stream, passed whole
$r = call('near', 65536, 0);
ok($r->{status} == 200 && defined $r->{body} && $r->{body} eq $small,
   'text/event-streams: not a stream, every byte passed');
ok(last_usage(++$n)->{usage_source} ne 'stream',
   'text/event-streams: no usage read from it as a stream');

is($gw->error_log_check, '', 'no alerts or sanitizer reports');
