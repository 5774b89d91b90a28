#!/usr/bin/perl

# ngx_http_airlock_llm_module: a provider that answers 2xx and then fails
# before the gateway lets any of its answer go (the connection closed,
# reset, or silent past proxy_read_timeout) gets the client an answer: the
# provider's failure, 502 (504 for the timeout), in the provider's error
# format (here through the fallback location, which cannot send the call
# again), the connection closed after it.  The gateway holds the header of
# a 2xx answer until its body's first bytes (169-llm-answer-not-text.t),
# and the scrubber holds a small JSON answer whole; nginx took such a
# header for sent, and on the failure only closed the connection: the
# client got no response at all.  The call is charged its reservation, as
# an answer cut short is (162-llm-charge-refused.t), and its usage line
# says what the client got.  A JSON answer whose header did go out (one
# of unknown length, streamed) still ends unfinished, never as a whole
# 200; answers that end well are untouched.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

# the provider's errors led to the fallback location; chat answers time out
# after 1s
$l->setup_intercepting(tight_tpm => 1000000, read_timeout => '1s');
$t->run;
plan tests => 44;

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

my $stream_head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                  . "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
my $json = '{"id":"chatcmpl-1","object":"chat.completion","model":'
           . '"gpt-4o-mini","choices":[{"index":0,"message":{"role":'
           . '"assistant","content":"Hello from the fixture"},'
           . '"finish_reason":"stop"}]}';
my $json_head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                . "Content-Length: " . length($json) . "\r\n"
                . "Connection: close\r\n\r\n";

# ---- a header held, then the provider fails ---------------------------------

for my $c (['chat stream, closed after its header',
            { fields => { stream => $true } }, { cut_after => 0 }, 502],
           ['anthropic stream, closed after its header',
            { anthropic => 1, fields => { stream => $true } },
            { cut_after => 0 }, 502],
           ['stream, reset after its header',
            { fields => { stream => $true } },
            { raw => [$stream_head], reset => 1 }, 502],
           ['stream, silent past proxy_read_timeout after its header',
            { fields => { stream => $true } },
            { head_gate => $t->testdir . '/never' }, 504],
           ['JSON, closed after its header', {},
            { raw => [$json_head] }, 502],
           ['JSON, closed after half its body', {},
            { raw => [$json_head, substr($json, 0, length($json) / 2)] },
            502],
           ['anthropic JSON, closed after half its body', { anthropic => 1 },
            { raw => [$json_head, substr($json, 0, 40)] }, 502])
{
    my ($name, $o, $script, $status) = @$c;

    ($r, $u) = call($script, %$o);
    is($r->{status}, $status, "$name: $status");
    ok(provider_error($r, $o->{anthropic}), "$name: in the provider's format")
        or diag($r->{raw});
    unlike($r->{raw} // '', qr/Hello|chatcmpl/,
           "$name: nothing of the answer");
    is($u->{status}, $status, "$name: usage line: $status");
    ok(reserved($u), "$name: charged its reservation") or diag(explain $u);
}

# ---- the connection is closed after the error -------------------------------

$l->script({ cut_after => 0 });
$r = $l->chat(token => $tok, prompt => $prompt, fields => { stream => $true },
              headers => [['Connection', 'keep-alive']]);
$l->script();
$l->last_usage(++$n);
ok($r->{status} == 502 && ($r->{headers}{connection} // '') =~ /close/i,
   'a keep-alive request: 502, the connection closed');

# ---- a header that went out: never a whole 200 ------------------------------

($r, $u) = call({ raw => ["HTTP/1.1 200 OK\r\nContent-Type: application/json"
                          . "\r\nTransfer-Encoding: chunked\r\n"
                          . "Connection: close\r\n\r\n",
                          sprintf("%x\r\n%s\r\n", 40, substr($json, 0, 40))] });
ok(!$r->{complete}, 'JSON of unknown length, cut: not complete');
ok(reserved($u), '... charged its reservation') or diag(explain $u);

# ---- answers that end well --------------------------------------------------

($r, $u) = call({});
ok($r->{status} == 200 && ($r->{json}{choices} // [])->[0],
   'a JSON answer: 200, whole');
is($u->{total_tokens}, 14, '... charged its usage');

($r, $u) = call({}, fields => { stream => $true });
ok($r->{status} == 200 && $r->{body} =~ /\[DONE\]/,
   'a stream: 200, whole');

($r, $u) = call({ raw => [$json_head, $json] });
ok($r->{status} == 200 && $r->{complete} && $r->{body} eq $json,
   'a JSON answer that closes after its last byte: 200, whole');

like($t->read_file('error.log'),
     qr/llm "openai" answered 200 and failed before any of it reached/,
     'error log: the failure is reported');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
