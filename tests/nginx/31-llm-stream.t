#!/usr/bin/perl

# ngx_http_airlock_llm_module: event streams.  Usage counted exactly for
# OpenAI chat, completions and Responses streams and Anthropic streams;
# the usage-only chunk the gateway asked for is hidden from a client that
# did not ask, shown to one that did, also when events arrive split across
# buffers; a stream cut short is accounted as estimated; and chunks leave
# as they arrive (no proxy_buffering off in the configuration: the module
# turns buffering off for streams).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Select;
use IO::Socket::INET;
use JSON::PP;
use Test::More;
use Airlock::Test;
use Airlock::LLM;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

$l->setup;
$t->run;

plan tests => 55;

my $agent = $l->token('agent');
my $true = JSON::PP::true;
my ($r, $p, $u, @ev, $count);

$count = 0;

# the data of every event of an event-stream body
sub events {
    my ($body) = @_;
    return map { /^data: (.*)$/m ? $1 : () } split /\n\n/, $body // '';
}

sub usage_chunks {
    return grep { /"choices": \[\]/ && /"usage": \{/ } @_;
}

sub next_usage {
    return $l->last_usage(++$count);
}

# ---- OpenAI chat ---------------------------------------------------------

$r = $l->chat(token => $agent, fields => { stream => $true });
is($r->{status}, 200, 'chat stream: 200');
like($r->{headers}{'content-type'}, qr{^text/event-stream},
     'chat stream: event stream');
@ev = events($r->{body});
is(scalar(usage_chunks(@ev)), 0,
   'chat stream, client did not ask: no usage chunk');
is($ev[-1], '[DONE]', 'chat stream: ends with [DONE]');
is(scalar(grep { /"content": "(Hello| from| fixture)"/ } @ev), 3,
   'chat stream: every content chunk');
$p = $l->last_provider_request;
is_deeply($p->{body}{stream_options}, { include_usage => $true },
          'chat stream: the provider was asked for usage');
$u = next_usage();
is_deeply([@$u{qw(prompt_tokens completion_tokens total_tokens stream
                  usage_source)}],
          [11, 3, 14, $true, 'stream'], 'chat stream: exact usage');

$r = $l->chat(token => $agent,
              fields => { stream => $true,
                          stream_options => { include_usage => $true } });
@ev = events($r->{body});
is(scalar(usage_chunks(@ev)), 1, 'chat stream, client asked: usage chunk');
like((usage_chunks(@ev))[0], qr/"prompt_tokens": 11/,
     'chat stream, client asked: its numbers');
is($ev[-1], '[DONE]', 'client asked: [DONE]');
$u = next_usage();
is_deeply([@$u{qw(prompt_tokens completion_tokens usage_source)}],
          [11, 3, 'stream'], 'client asked: exact usage');

$l->script({ usage => { prompt => 1234, completion => 567, cached => 1000 },
             pieces => [map { "p$_ " } 1 .. 40] });
$r = $l->chat(token => $agent, fields => { stream => $true });
@ev = events($r->{body});
is(scalar(@ev), 43, 'long stream: role, 40 pieces, finish, [DONE]');
$u = next_usage();
is_deeply([@$u{qw(prompt_tokens completion_tokens cached_tokens
                  total_tokens)}],
          [1234, 567, 1000, 1801], 'long stream: scripted usage');

# ---- events split across buffers -------------------------------------------

$l->script({ split => 7, split_delay_ms => 2 });
$r = $l->chat(token => $agent, fields => { stream => $true });
my $split = $r->{body};
$r = $l->chat(token => $agent, fields => { stream => $true });
is($split, $r->{body}, 'split events: the same bytes as whole ones');
is(scalar(usage_chunks(events($split))), 0,
   'split events: the usage chunk still hidden');
is(next_usage()->{usage_source}, 'stream', 'split events: usage');
is(next_usage()->{total_tokens}, 14, 'whole events: usage');

$l->script({ split => 1, split_delay_ms => 0 });
$r = $l->chat(token => $agent, fields => { stream => $true });
is(scalar(events($r->{body})), 6, 'byte-at-a-time events: all there');
is(scalar(usage_chunks(events($r->{body}))), 0,
   'byte-at-a-time events: usage chunk hidden');
is(next_usage()->{completion_tokens}, 3, 'byte-at-a-time: exact usage');

$l->script({ split => 5, split_delay_ms => 1 });
$r = $l->chat(token => $agent,
              fields => { stream => $true,
                          stream_options => { include_usage => $true } });
is(scalar(usage_chunks(events($r->{body}))), 1,
   'split, client asked: usage chunk whole');
is(next_usage()->{usage_source}, 'stream', 'split, client asked: usage');

# ---- completions and Responses ---------------------------------------------

$r = $l->request('POST', '/v1/proxy/openai/completions', token => $agent,
                 body => { model => 'gpt-4o-mini', prompt => 'x',
                           stream => $true });
@ev = events($r->{body});
is(scalar(usage_chunks(@ev)), 0, 'completions stream: usage chunk hidden');
is(scalar(grep { /"text": "Hello"/ } @ev), 1, 'completions stream: text');
$u = next_usage();
is_deeply([@$u{qw(prompt_tokens completion_tokens usage_source)}],
          [11, 3, 'stream'], 'completions stream: usage');

$r = $l->request('POST', '/v1/proxy/openai/responses', token => $agent,
                 body => { model => 'gpt-4o-mini', input => 'x',
                           stream => $true });
like($r->{body}, qr/event: response\.completed/,
     'responses stream: passes');
ok(!exists $l->last_provider_request->{body}{stream_options},
   'responses stream: no stream_options added');
$u = next_usage();
is_deeply([@$u{qw(prompt_tokens completion_tokens usage_source)}],
          [11, 3, 'stream'], 'responses stream: usage');

# ---- Anthropic ------------------------------------------------------------

$r = $l->messages(token => $agent, fields => { stream => $true });
is($r->{status}, 200, 'anthropic stream: 200');
like($r->{body}, qr/event: message_stop/, 'anthropic stream: to the end');
$u = next_usage();
is_deeply([@$u{qw(provider prompt_tokens completion_tokens usage_source)}],
          ['anthropic', 11, 3, 'stream'], 'anthropic stream: usage');

$l->script({ usage => { prompt => 300, completion => 42, cached => 200,
                        cache_write => 50 }, split => 9 });
$r = $l->messages(token => $agent, fields => { stream => $true });
$u = next_usage();
is_deeply([@$u{qw(prompt_tokens completion_tokens cached_tokens)}],
          [300, 42, 200], 'anthropic split stream: cache and output usage');

# ---- streams cut short ----------------------------------------------------

$l->script({ cut_after => 3 });
$r = $l->chat(token => $agent, fields => { stream => $true });
ok(!$r->{complete}, 'cut stream: the client sees it cut');
like($r->{body}, qr/Hello/, 'cut stream: what came before passes');
$u = next_usage();
is($u->{usage_source}, 'estimated', 'cut stream: usage estimated');
ok($u->{stream}, 'cut stream: marked a stream');
is($u->{completion_tokens}, 100,
   'cut stream: charged the output cap (the agent\'s 100), as the provider '
   . 'may have generated up to it');
is($u->{prompt_tokens}, 4 + 4 + 7 + 2,
   'cut stream: the prompt uncounted, at its bound: a token a byte of '
   . '"role", "user", "content", "Hi"');

# the client closes after the first text, before the usage: charged the
# output cap as well, not the text it read

{
    $l->script({ delay_ms => 300 });
    my $body = '{"model":"gpt-4o-mini","stream":true,"messages":'
             . '[{"role":"user","content":"Hi"}]}';
    my $s = $l->raw_chat($agent, $body);
    my ($got, $sel) = ('', IO::Select->new($s));
    while ($got !~ /"content": ?"[^"]+"/ && $sel->can_read(10)) {
        sysread($s, $got, 4096, length $got) or last;
    }
    like($got, qr/"content": ?"[^"]+"/,
         'client cut: text read before closing');
    close $s;
    $u = next_usage();
    is_deeply([@$u{qw(completion_tokens usage_source)}], [100, 'estimated'],
              'client cut after the text: charged the output cap');
    $l->script();
}

$l->script({ cut_after => 2, cut_mid => 1 });
$r = $l->chat(token => $agent,
              fields => { stream => $true,
                          stream_options => { include_usage => $true } });
ok(!$r->{complete}, 'cut mid-event: cut');
is(next_usage()->{usage_source}, 'estimated', 'cut mid-event: estimated');

$l->script({ cut_after => 5 });
$r = $l->messages(token => $agent, fields => { stream => $true });
$u = next_usage();
is_deeply([@$u{qw(prompt_tokens usage_source)}], [11, 'estimated'],
          'anthropic cut: input from message_start, estimated');

$l->script({ status => 429, sse_on_error => 1 });
$r = $l->chat(token => $agent, fields => { stream => $true });
is($r->{status}, 429, 'provider 429 on a stream passes through');
$u = next_usage();
is_deeply([@$u{qw(status total_tokens)}], [429, 0],
          'provider 429: nothing charged');

# ---- chunks leave as they come ---------------------------------------------

# The provider sends the first two events, then holds the rest until the
# test opens a gate (a file): the first text chunk must reach the client
# while the provider holds the second, so no clock is needed.  A gateway
# that held chunks would never show it, and the read gives up after 30 s.

my $gates = 0;

sub gated {
    my (%fields) = @_;
    my $gate = $t->testdir . '/gate-' . ++$gates;
    my $body = encode_json({ model => 'gpt-4o-mini', stream => $true,
                             messages => [{ role => 'user',
                                            content => 'x' }],
                             %fields });
    my $req = "POST /v1/proxy/openai/chat/completions HTTP/1.1\r\n"
            . "Host: localhost\r\nAuthorization: Bearer $agent\r\n"
            . "Content-Type: application/json\r\n"
            . "Content-Length: " . length($body) . "\r\n"
            . "Connection: close\r\n\r\n$body";

    $l->script({ pause_after => 2, gate => $gate });

    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                  PeerPort => $t->port(8080),
                                  Proto => 'tcp', Timeout => 5)
        or die "connect: $!";
    my $sel = IO::Select->new($s);
    my ($raw, $held, $buf) = ('', undef);
    my $deadline = time + 30;

    syswrite($s, $req);

    while (time < $deadline && $sel->can_read($deadline - time)) {
        my $n = sysread($s, $buf, 65536);
        last unless $n;
        $raw .= $buf;

        if (!defined $held && $raw =~ /"Hello"/) {
            # what came while the provider held the rest
            $held = $raw;
            open(my $fh, '>', $gate) or die "$gate: $!";
            close $fh;
        }
    }

    close $s;

    return ($held, $raw);
}

for my $v (['filtered', ()],
           ['watched', stream_options => { include_usage => $true }])
{
    my ($name, @fields) = @$v;
    my ($held, $raw) = gated(@fields);

    ok(defined $held, "$name stream: chunk 1 arrives while the provider "
                      . 'holds chunk 2');
    ok(defined $held && $held !~ /" from"/ && $raw =~ /" from"/,
       "$name stream: chunk 2 after the provider sent it");
    is(next_usage()->{usage_source}, 'stream', "$name stream: usage");
}

# an event over 1 MiB stops the reading of the stream: what follows is not
# seen, so the call is charged at least the output cap reserved for it
# (the agent's max_tokens, 100), not the nothing seen before the stop

$l->script({ pieces => [ 'x' x (1024 * 1024 + 10), ' more' ] });
$r = $l->chat(token => $agent, fields => { stream => $true });
$l->script();
is($r->{status}, 200, 'an event over 1 MiB: the stream passes');
like($r->{body}, qr/" more"/, '... to its end');
$u = next_usage();
is_deeply([@$u{qw(completion_tokens usage_source)}], [100, 'estimated'],
          '... and is charged its output cap');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
