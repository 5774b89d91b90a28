#!/usr/bin/perl

# A gateway call whose provider answered 2xx and then failed while the
# gateway still held the header (the connection closed: 502) goes
# through the location's error_page as a failure before its header
# would.  The provider answered it and may bill it, so no location sends
# it again: the fallback's did not, and neither may a location of named
# routes (airlock on) or a gateway location an error_page leads it to.
# Those sent it to the provider a second time, and the second answer
# passed none of the gateway's filters (they had seen the first): the
# provider's account and rate-limit headers reached the client, its
# usage was never read, and the call was charged once.  Now the client
# gets the failure (502), the call is charged as the answer cut short
# it is, and a call whose first attempt was not answered is still sent
# again there.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my $locations = <<'L';
        location /v1/proxy/openai/chat/ {
            airlock_llm openai;
            %%AIRLOCK_LOCATION%%
            proxy_intercept_errors on;
            error_page 502 = @again;
        }

        location @again {
            airlock on;
            %%AIRLOCK_LOCATION%%
        }

        location = /v1/proxy/anthropic/messages {
            airlock_llm anthropic;
            %%AIRLOCK_LOCATION%%
            proxy_intercept_errors on;
            error_page 502 = /v1/proxy/anthropic/again;
        }

        location = /v1/proxy/anthropic/again {
            airlock_llm anthropic;
            %%AIRLOCK_LOCATION%%
        }
L

$l->setup(locations => $locations, tight_tpm => 1000000);
$t->run;

plan tests => 20;

my $tok = $l->token('tight');           # max_tokens 20
my $prompt = 'x' x 400;                 # estimated at 100 tokens
my $n = 0;

my $json = '{"id":"chatcmpl-1","object":"chat.completion","model":'
           . '"gpt-4o-mini","choices":[{"index":0,"message":{"role":'
           . '"assistant","content":"Hello from the fixture"},'
           . '"finish_reason":"stop"}]}';
my $json_head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                . "Content-Length: " . length($json) . "\r\n"
                . "Connection: close\r\n\r\n";

my $second = { headers => { 'openai-organization' => 'org-airlock-test',
                            'x-ratelimit-remaining-tokens' => '123456' },
               usage => { prompt => 7, completion => 5 } };

for my $c (['a location of named routes', 0],
           ['a gateway location', 1])
{
    my ($name, $anthropic) = @$c;
    my $before = () = $l->provider_requests;

    $l->script({ raw => [$json_head] }, $second);

    my $r = $anthropic
        ? $l->messages(token => $tok, prompt => $prompt, max_tokens => 20)
        : $l->chat(token => $tok, prompt => $prompt);
    my $u = $l->last_usage(++$n);
    my $h = $r->{headers};

    is($r->{status}, 502, "$name: the failure reaches the client");
    is(scalar($l->provider_requests) - $before, 1,
       "$name: the call is not sent again");
    ok(!exists $h->{'openai-organization'},
       "$name: no header naming the provider's account");
    unlike($r->{raw} // '', qr/Hello|chatcmpl/,
           "$name: nothing of the answer");
    is($u->{status}, 502, "$name: usage line: 502");
    ok(Airlock::LLM::charges_reservation($u, 100, 20),
       "$name: charged its reservation") or diag(explain $u);
}

# a first attempt that was not answered (an error intercepted) is sent
# again, and the second answer is read as in the call's own location

for my $c (['a location of named routes', 0],
           ['a gateway location', 1])
{
    my ($name, $anthropic) = @$c;
    my $before = () = $l->provider_requests;

    $l->script({ status => 502 }, $second);

    my $r = $anthropic
        ? $l->messages(token => $tok, prompt => $prompt, max_tokens => 20)
        : $l->chat(token => $tok, prompt => $prompt);
    my $u = $l->last_usage(++$n);

    is($r->{status}, 200, "$name, after a 502: answered")
        or diag($r->{raw});
    is(scalar($l->provider_requests) - $before, 2,
       "$name, after a 502: sent again");
    ok(!exists $r->{headers}{'openai-organization'},
       "$name, after a 502: no header naming the provider's account");
}

like($t->read_file('error.log'),
     qr/airlock: llm "openai" answered 200 and was not sent again/,
     'error log: the refusal is reported');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
