#!/usr/bin/perl

# ngx_http_airlock_llm_module: a provider that answers 2xx with
# "Transfer-Encoding: chunked" and then breaks the framing (a chunk-size
# line that is not one, or the connection closed inside a chunk) before
# the gateway lets any of the answer go gets the client what a close
# there gets it (177-llm-held-answer-cut.t): 502 in the provider's error
# format, the connection closed after it, the call charged its
# reservation as an answer cut short and its usage line saying 502.
# nginx's proxy ends a bad chunk-size line with an error, not a status,
# and closed the connection with nothing sent.  Streams (unbuffered) and
# JSON answers (buffered) both.  Once bytes of the answer have reached the
# client the framing error still just closes the connection: the answer
# ends unfinished, nothing of it sent twice, no error page after it.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use JSON::PP;
use IO::Select;
use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

# the provider's errors led to the fallback location; chat answers time out
# after 5s
$l->setup_intercepting(tight_tpm => 1000000, read_timeout => '5s');
$t->run;
plan tests => 81;

my $tok = $l->token('tight');           # max_tokens 20
my $true = JSON::PP::true;
my $n = 0;
my ($r, $u);

# the prompt estimate of this body: four bytes a token
my $prompt = 'x' x 400;

sub call {
    my ($script, %o) = @_;
    return $l->scripted_call(++$n, $script, token => $tok, prompt => $prompt,
                             %o);
}

# charged 100 tokens in (the prompt estimate) and 20 out (max_tokens)
sub reserved { Airlock::LLM::charges_reservation($_[0], 100, 20) }

sub head {
    my ($type) = @_;
    return "HTTP/1.1 200 OK\r\nContent-Type: $type\r\n"
           . "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
}

sub chunk {
    my ($s) = @_;
    return sprintf("%x\r\n%s\r\n", length $s, $s);
}

my $sse_head = head('text/event-stream');
my $json_head = head('application/json');
my $event = 'data: {"id":"chatcmpl-1","object":"chat.completion.chunk",'
            . '"model":"gpt-4o-mini","choices":[{"index":0,"delta":'
            . '{"content":"Hello from the fixture"}}]}' . "\n\n";
my $json = '{"id":"chatcmpl-1","object":"chat.completion","model":'
           . '"gpt-4o-mini","choices":[{"index":0,"message":{"role":'
           . '"assistant","content":"Hello from the fixture"},'
           . '"finish_reason":"stop"}]}';
my $stream = { fields => { stream => $true } };

# ---- the framing breaks before any of the answer left -----------------------

for my $c (['stream, a bad chunk-size line after its header', $stream,
            [$sse_head, "zz\r\n$event\r\n"]],
           ['stream, a bad chunk-size line with its header', $stream,
            [$sse_head . "data: x\r\n"]],
           ['stream, a short chunk, then a bad chunk-size line', $stream,
            [$sse_head, chunk('data:'), "-1\r\n$event\r\n"]],
           ['stream, closed inside its first chunk', $stream,
            [$sse_head, sprintf("%x\r\ndata: {\"", length $event)]],
           ['stream, closed after its first chunk-size line', $stream,
            [$sse_head . sprintf("%x\r\n", length $event)]],
           ['anthropic stream, a bad chunk-size line',
            { anthropic => 1, %$stream }, [$sse_head, "g\r\n"]],
           ['JSON, a bad chunk-size line after its header', {},
            [$json_head, "{\"id\":\"chatcmpl-1\"\r\n"]],
           ['JSON, a bad chunk-size line with its header', {},
            [$json_head . "0x40\r\n$json\r\n"]],
           ['JSON, a short chunk, then a bad chunk-size line', {},
            [$json_head, chunk('{"id":'), "nope\r\n"]],
           ['JSON, closed inside its first chunk', {},
            [$json_head, sprintf("%x\r\n{\"id\"", length $json)]],
           ['anthropic JSON, a bad chunk-size line', { anthropic => 1 },
            [$json_head, "zz\r\n"]])
{
    my ($name, $o, $raw) = @$c;

    ($r, $u) = call({ raw => $raw }, %$o);
    is($r->{status}, 502, "$name: 502");
    ok(provider_error($r, $o->{anthropic}), "$name: in the provider's format")
        or diag($r->{raw});
    unlike($r->{raw} // '', qr/Hello|chatcmpl|data:/,
           "$name: nothing of the answer");
    is($u->{status}, 502, "$name: usage line: 502");
    ok(reserved($u), "$name: charged its reservation") or diag(explain $u);
}

# ---- the connection is closed after the error -------------------------------

$l->script({ raw => [$sse_head, "zz\r\n"] });
$r = $l->chat(token => $tok, prompt => $prompt, fields => { stream => $true },
              headers => [['Connection', 'keep-alive']]);
$l->script();
$l->last_usage(++$n);
ok($r->{status} == 502 && ($r->{headers}{connection} // '') =~ /close/i,
   'a keep-alive request: 502, the connection closed');

# ---- bytes of the answer went out: the connection is just closed ------------

# The provider's last string is sent once the client has bytes of the
# body: they left before the framing broke.  Returns the response and
# the call's usage line.
my $gates = 0;

sub gated {
    my ($raw, $stream) = @_;
    my $gate = $t->testdir . '/gate-' . ++$gates;
    my ($got, $buf, $rest) = ('');

    $l->script({ raw => $raw, raw_gate => $gate });

    my $s = $l->raw_chat($tok, encode_json({
        model => 'gpt-4o-mini',
        messages => [{ role => 'user', content => $prompt }],
        $stream ? (stream => $true) : () }));
    my $sel = IO::Select->new($s);
    my $deadline = time + 10;

    for (;;) {
        $rest = $got =~ /\r\n\r\n/ ? substr($got, $+[0]) : '';
        last if $rest =~ /^[0-9a-f]+\r\n./i || time > $deadline;
        last unless $sel->can_read($deadline - time);
        sysread($s, $buf, 65536) or last;
        $got .= $buf;
    }

    $t->write_file("gate-$gates", '');

    while ($sel->can_read($deadline - time)) {
        sysread($s, $buf, 65536) or last;
        $got .= $buf;
    }

    close $s;
    $l->script();

    $r = parse_response($got);
    $r->{raw} = $got;

    return ($r, $l->last_usage(++$n));
}

for my $c (['stream, an event, then a bad chunk-size line', 1,
            [$sse_head, chunk($event), "zz\r\n$event\r\n"], $event],
           ['stream, an event, then closed inside the next', 1,
            [$sse_head, chunk($event),
             sprintf("%x\r\ndata: {", length $event)], "$event" . 'data: {'],
           ['JSON, its first chunk, then a bad chunk-size line', 0,
            [$json_head, chunk(substr($json, 0, 40)), "zz\r\n"],
            substr($json, 0, 40)],
           ['JSON, its first chunk, then closed inside the next', 0,
            [$json_head, chunk(substr($json, 0, 40)),
             sprintf("%x\r\n%s", 60, substr($json, 40, 20))],
            substr($json, 0, 60)])
{
    my ($name, $stream, $raw, $sent) = @$c;

    ($r, $u) = gated($raw, $stream);
    is($r->{status}, 200, "$name: 200");
    ok(!$r->{complete}, "$name: not complete");
    ok(length($r->{body} // '') > 0
       && substr($sent, 0, length $r->{body}) eq $r->{body},
       "$name: what was sent, once") or diag($r->{raw});
    unlike($r->{rest} . $r->{body}, qr/"error"|502/,
           "$name: no error page after it");
    is($u->{status}, 200, "$name: usage line: 200") or diag(explain $u);
}

# ---- answers that end well --------------------------------------------------

($r, $u) = call({ raw => [$sse_head, chunk($event), chunk("data: [DONE]\n\n"),
                          "0\r\n\r\n"] }, %$stream);
ok($r->{status} == 200 && $r->{complete}
   && $r->{body} eq "$event" . "data: [DONE]\n\n",
   'a chunked stream that ends well: 200, whole');

($r, $u) = call({ raw => [$json_head, chunk(substr($json, 0, 40)),
                          chunk(substr($json, 40)), "0\r\n\r\n"] });
ok($r->{status} == 200 && $r->{complete} && $r->{body} eq $json,
   'a chunked JSON answer that ends well: 200, whole');

like($t->read_file('error.log'),
     qr/upstream sent invalid chunked response/,
     'error log: nginx saw the bad framing');
like($t->read_file('error.log'),
     qr/llm "openai" answered 200 and failed before any of it reached/,
     'error log: the failure is reported');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
