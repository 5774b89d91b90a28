#!/usr/bin/perl

# A decided request that an error_page leads from one Airlock location to
# another keeps its decision, and goes nowhere it was not decided for.
#
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
#
# A named route's request that an error_page leads to a gateway location
# is not a gateway call.  The gateway decided it again, and refused it:
# the route's rewrite had taken the client's token, so the client was
# refused as one without a key (401) and counted for quarantine for a
# request it made right.  Now its decision stands: it gets its own
# failure (502), unsent and uncounted.

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

        location = /route {
            airlock on;
            %%AIRLOCK_LOCATION%%
            proxy_intercept_errors on;
            error_page 502 = @gateway;
        }

        location = /route-uri {
            airlock on;
            %%AIRLOCK_LOCATION%%
            proxy_intercept_errors on;
            error_page 502 = /v1/proxy/openai/chat/completions;
        }

        location @gateway {
            airlock_llm openai;
            %%AIRLOCK_LOCATION%%
        }
L

my $routes = <<'Y';
  deny: { threshold: 1000, window: 60s }
upstreams:
  echo: { url: "http://127.0.0.1:%%PORT_8083%%" }
routes:
  - name: route
    clients: [agent]
    match: { method: POST, path: /route }
    upstream: echo
    to: /route
    inject: { X-Route-Key: "FAKE-route-key", X-Echo-Status: "502" }
    body: { max_bytes: 65536 }
  - name: route-uri
    clients: [agent]
    match: { method: POST, path: /route-uri }
    upstream: echo
    to: /route-uri
    inject: { X-Route-Key: "FAKE-route-key", X-Echo-Status: "502" }
    body: { max_bytes: 65536 }
Y

$l->setup(locations => $locations, alerts => $routes,
          tight_tpm => 1000000);
$t->start_echo(8083);
$t->run;

plan tests => 31;

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

# a named route's request led to a gateway location

my $body = '{"model":"gpt-4o-mini","messages":[{"role":"user",'
           . '"content":"Hi"}]}';

for my $c (['to a named gateway location', 'route'],
           ['to a gateway location\'s URI', 'route-uri'])
{
    my ($name, $route) = @$c;
    my $before = () = $l->provider_requests;
    my $denied = () = split /\n/, ($t->read_file('deny.log') // '');

    my $raw = $t->http("POST /$route HTTP/1.1\r\nHost: localhost\r\n"
                       . "Proxy-Authorization: Bearer "
                       . $l->token('agent') . "\r\n"
                       . "Content-Type: application/json\r\n"
                       . "Content-Length: " . length($body) . "\r\n"
                       . "Connection: close\r\n\r\n$body");

    like($raw, qr{^HTTP/1\.1 502}, "$name: the route's failure, 502")
        or diag($raw);
    unlike($raw, qr/Airlock-Denial/i, "$name: not refused as a gateway call");
    is(scalar(grep { $_->{target} eq "/$route" }
              $t->echo_requests(8083)), 1,
       "$name: the route's upstream got it once");
    is(scalar($l->provider_requests) - $before, 0,
       "$name: the provider got nothing");
    my $now = () = split /\n/, ($t->read_file('deny.log') // '');
    is($now, $denied, "$name: no denial logged or counted");
}

like($t->read_file('error.log'),
     qr/a request of route "route" was led to a location of llm "openai"/,
     'error log: the named route\'s request is reported');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
