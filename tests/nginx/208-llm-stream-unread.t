#!/usr/bin/perl

# ngx_http_airlock_llm_module: a stream that ends without its final usage
# after an event whose data is no JSON object (not JSON, cut short,
# another value) is charged at least its output cap, as a stream cut
# short is and as a JSON answer that cannot be read is charged its
# reservation: such an event may carry output the gateway's text count
# cannot see, and a client that reads it less strictly still gets it.
# Before, the stream was charged the text the gateway could count, which
# for such a stream is none: its output was free.  A stream whose events
# all read, or that ends with its usage, is charged as before; blank
# data and comments carry nothing and change nothing.

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
$l->setup(tight_tpm => 1000000);
$t->run;
plan tests => 10;

my $tok = $l->token('tight');           # max_tokens 20
my $true = JSON::PP::true;
my $n = 0;

# the prompt estimate of this body: four bytes a token
my $prompt = 'x' x 400;

sub stream {
    my ($kind, @events) = @_;
    my $head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
             . "Cache-Control: no-cache\r\n\r\n";
    $l->script({ raw => [ $head, join('', map { "$_\n\n" } @events) ] });

    my $r = $kind eq 'anthropic'
        ? $l->messages(token => $tok, prompt => $prompt, max_tokens => 20,
                       fields => { stream => $true })
        : $kind eq 'responses'
        ? $l->request('POST', '/v1/proxy/openai/responses', token => $tok,
                      body => { model => 'gpt-4o-mini', input => $prompt,
                                stream => $true })
        : $l->chat(token => $tok, prompt => $prompt,
                   fields => { stream => $true });
    $l->script();
    my $u = $l->last_usage(++$n);
    return "$r->{status} $u->{completion_tokens} $u->{usage_source}";
}

my $text = '{"choices":[{"index":0,"delta":{"content":"Hello"}}]}';
my $usage = '{"choices":[],"usage":{"prompt_tokens":7,'
          . '"completion_tokens":3,"total_tokens":10}}';

is(stream('chat', "data: $text", 'data: Hello there, the whole answer',
          'data: [DONE]'),
   '200 20 estimated', 'chat: an event that is not JSON: the output cap');

is(stream('chat', "data: $text", 'data: {"choices":[{"index":0,'
          . '"delta":{"content":"Hello there',
          'data: [DONE]'),
   '200 20 estimated', 'chat: an event cut short: the output cap');

is(stream('chat', "data: $text", 'data: ["Hello there"]', 'data: [DONE]'),
   '200 20 estimated', 'chat: an event that is an array: the output cap');

is(stream('anthropic',
          'event: message_start' . "\n" . 'data: {"type":"message_start",'
          . '"message":{"id":"msg_1","type":"message","role":"assistant",'
          . '"model":"claude-3-5-haiku","content":[],"usage":'
          . '{"input_tokens":11,"output_tokens":1}}}',
          "event: content_block_delta\ndata: Hello there",
          "event: message_stop\ndata: {\"type\":\"message_stop\"}"),
   '200 20 estimated', 'anthropic: an event that is not JSON: the output cap');

is(stream('responses',
          'event: response.output_text.delta' . "\n"
          . 'data: {"type":"response.output_text.delta","delta":"Hello',
          'event: response.completed' . "\n" . 'data: {"type":'
          . '"response.completed","response":{"id":"resp_1"}}'),
   '200 20 estimated',
   'responses: an event cut short, no usage: the output cap');

# as before

is(stream('chat', "data: $text", 'data: Hello there', "data: $usage",
          'data: [DONE]'),
   '200 3 stream', 'chat: an unread event, then the usage: the usage');

is(stream('chat', "data: $text", 'data: [DONE]'),
   '200 2 estimated', 'chat: every event read, no usage: the text counted');

is(stream('chat', "data: $text", 'data:', 'data: ', ': keep-alive',
          'data: [DONE]'),
   '200 2 estimated', 'chat: blank data and comments: the text counted');

is(stream('chat', "data: $text", "data: $usage", 'data: [DONE]'),
   '200 3 stream', 'chat: a whole stream: its usage');

is(stream('chat', "data: $text"),
   '200 20 estimated', 'chat: a stream cut short: the output cap');
