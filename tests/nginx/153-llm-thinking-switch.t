#!/usr/bin/perl

# ngx_http_airlock_llm_module: Qwen's "enable_thinking" (Alibaba's
# DashScope, SiliconFlow), which a request carries only where the entry's
# allow_members lets it pass, turns thinking on with the server's own
# budget when the request names no "thinking_budget": the model's longest
# chain of thought, tens of thousands of tokens, billed as output beside
# "max_tokens".  The gateway reserved the output limit only, so such a
# call could spend far past what it reserved (and a client's token or
# dollar budget with it, one call per admitted request).  With output
# reserved, "enable_thinking" on and no "thinking_budget" is refused, 400
# in the provider's format, and never sent; with a thinking_budget
# (held to the output limit and reserved beside it, 152) or with
# "enable_thinking": false, the body goes as it came.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

# a third entry, openai-compatible, at the same scripted provider

my $compat = <<'Y';
  - name: qwen
    prefix: /v1/proxy/qwen
    provider: openai-compatible
    upstream: "http://127.0.0.1:%%PORT_8081%%/v1"
    secret: openai_key
    models: [gpt-4o-mini]
    max_body_bytes: 65536
    allow_members: [enable_thinking, thinking_budget]
    clients:
      agent:
        max_tokens: 100
        over_max_tokens: clamp
Y

my $locations = <<'L';
        location /v1/proxy/qwen/ {
            airlock_llm qwen;

            %%AIRLOCK_LOCATION%%

            proxy_read_timeout 10s;
        }
L

$l->setup(anthropic_clients => $compat, locations => $locations);
$t->run;

plan tests => 9;

my $agent = $l->token('agent');

sub qwen {
    my (%f) = @_;
    return $l->request('POST', '/v1/proxy/qwen/chat/completions',
                       token => $agent,
                       body => { model => 'gpt-4o-mini',
                                 messages => [ { role => 'user',
                                                 content => 'Hi' } ],
                                 %f });
}

my $n = scalar $l->provider_requests;

my $r = qwen(max_tokens => 80, enable_thinking => JSON::PP::true);
is($r->{status}, 400, 'enable_thinking, no thinking_budget: 400');
is($r->{json}{error}{code}, 'invalid_request_body',
   'OpenAI\'s invalid_request_body');
like($r->{json}{error}{message} // '',
     qr/"enable_thinking" needs a "thinking_budget" \(0 to the 80 output/,
     'the message says why');

$r = qwen(enable_thinking => JSON::PP::true, thinking_budget => undef);
is($r->{status}, 400,
   'enable_thinking, thinking_budget null, the cap added: 400');

is(scalar $l->provider_requests, $n, 'no refused call reached the provider');

$r = qwen(max_tokens => 80, enable_thinking => JSON::PP::true,
          thinking_budget => 60);
is($r->{status}, 200, 'enable_thinking with a thinking_budget: 200');
is_deeply([ @{$l->last_provider_request->{body}}{qw(enable_thinking
                                                    thinking_budget)} ],
          [ JSON::PP::true, 60 ], 'sent as it came');

$r = qwen(max_tokens => 80, enable_thinking => JSON::PP::false);
is($r->{status}, 200, 'enable_thinking false: 200');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
