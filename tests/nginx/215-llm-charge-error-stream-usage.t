#!/usr/bin/perl

# ngx_http_airlock_llm_module: a provider's error answer sent as an event
# stream (a streaming call the provider fails with a 4xx or 5xx and a
# text/event-stream body, an "event: error" whose data says what the
# call used) is charged the usage its events carry, as an error answered
# as JSON is (207).  Before, such a body was read as one JSON document,
# which it is not: the call was free.  A JSON error body that names
# itself an event stream is still read as JSON; an error stream without
# a usage stays free.

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
plan tests => 12;

my $tok = $l->token('tight');
my $true = JSON::PP::true;
my $n = 0;

sub call {
    my ($script, %o) = @_;
    return $l->scripted_call(++$n, $script, token => $tok,
                             fields => { stream => $true },
                             anthropic => $o{anthropic});
}

sub raw {
    my ($status, $type, $body) = @_;
    return { raw => [ "HTTP/1.1 $status Error\r\nContent-Type: $type\r\n"
                      . "Content-Length: " . length($body) . "\r\n\r\n",
                      $body ] };
}

my ($r, $u);

# chat: a 502 answered as an event stream whose data carries the usage

($r, $u) = call({ status => 502, error_usage => 1, sse_on_error => 1,
                  usage => { prompt => 300, completion => 700 } });
is($r->{status}, 502, 'chat, 502 stream with usage: the error passes');
is(($u->{prompt_tokens} // '') . '/' . ($u->{completion_tokens} // ''),
   '300/700', 'chat, 502 stream with usage: charged it')
    or diag(explain $u);
is($u->{total_tokens}, 1000, 'chat, 502 stream with usage: its total');

# anthropic: an overloaded error as an "event: error" with usage

($r, $u) = call(raw(529, 'text/event-stream',
                    "event: error\ndata: {\"type\":\"error\",\"error\":"
                    . "{\"type\":\"overloaded_error\",\"message\":"
                    . "\"Overloaded\"},\"usage\":{\"input_tokens\":40,"
                    . "\"output_tokens\":9}}\n\n"),
                anthropic => 1);
is($r->{status}, 529, 'anthropic, 529 event: error: the error passes');
is(($u->{prompt_tokens} // '') . '/' . ($u->{completion_tokens} // ''),
   '40/9', 'anthropic, 529 event: error with usage: charged it')
    or diag(explain $u);

# a JSON error body that says it is an event stream: read as JSON

($r, $u) = call(raw(500, 'text/event-stream',
                    '{"error":{"message":"FAKE failure"},"usage":'
                    . '{"prompt_tokens":12,"completion_tokens":5,'
                    . '"total_tokens":17}}'));
is($u->{total_tokens}, 17, 'chat, JSON error typed as a stream: charged')
    or diag(explain $u);

# a JSON error to a streaming call: charged as before

($r, $u) = call({ status => 500, error_usage => 1,
                  usage => { prompt => 30, completion => 4 } });
is($u->{total_tokens}, 34, 'chat, JSON error to a stream call: charged')
    or diag(explain $u);

# error streams without usage: free

($r, $u) = call({ status => 500, sse_on_error => 1 });
is($u->{total_tokens}, 0, 'chat, error stream without usage: free')
    or diag(explain $u);

($r, $u) = call(raw(529, 'text/event-stream',
                    "event: error\ndata: {\"type\":\"error\",\"error\":"
                    . "{\"type\":\"overloaded_error\"}}\n\n"),
                anthropic => 1);
is($u->{total_tokens}, 0, 'anthropic, event: error without usage: free')
    or diag(explain $u);

# the budget: tight has 100000 tokens a day; an error stream that used
# them all leaves none for the next call

($r, $u) = call({ status => 500, error_usage => 1, sse_on_error => 1,
                  usage => { prompt => 100000, completion => 1 } });
is($u->{total_tokens}, 100001, 'an error stream that used the day\'s '
   . 'budget: charged it') or diag(explain $u);

$r = $l->chat(token => $tok);
is($r->{status}, 429, 'the next call: over the day budget, 429');
like($r->{body}, qr/insufficient_quota/, 'the next call: insufficient_quota');
