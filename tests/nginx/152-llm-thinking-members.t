#!/usr/bin/perl

# ngx_http_airlock_llm_module: the thinking budgets of other servers,
# which a request carries only where the entry's allow_members lets them
# pass, are held to the output tokens the gateway reserved for it, as
# Anthropic's thinking.budget_tokens is (146-llm-thinking-budget.t):
# Qwen's thinking_budget (DashScope, SiliconFlow), vLLM's
# thinking_token_budget, llama.cpp's thinking_budget_tokens, the
# thinking_budget of chat_template_kwargs (Qwen3's chat template) and
# NVIDIA NIM's nvext.max_thinking_tokens.  One over the output limit
# (after the clamp, or the cap added when the body names none), or that
# is no non-negative integer (-1: no limit), is refused, 400 in the
# provider's format, and never sent; under it the body goes as it came.
# DashScope and SiliconFlow do not count the thinking in max_tokens, so a
# thinking_budget is reserved on top of the output limit: a client whose
# token budget holds the output limit but not the two together is
# refused up front.

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
    allow_members: [enable_thinking, thinking_budget, thinking_token_budget,
                    thinking_budget_tokens, chat_template_kwargs, nvext]
    clients:
      agent:
        max_tokens: 100
        over_max_tokens: clamp
      tight:
        tokens_per_minute: 150
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

plan tests => 16;

my $agent = $l->token('agent');

sub qwen {
    my ($token, %f) = @_;
    return $l->request('POST', '/v1/proxy/qwen/chat/completions',
                       token => $token,
                       body => { model => 'gpt-4o-mini',
                                 messages => [ { role => 'user',
                                                 content => 'Hi' } ],
                                 %f });
}

my $n = scalar $l->provider_requests;

# ---- over the output limit: refused, nothing sent --------------------------

my $r = qwen($agent, max_tokens => 80, enable_thinking => JSON::PP::true,
             thinking_budget => 30000);
is($r->{status}, 400, 'thinking_budget 30000, max_tokens 80: 400');
is($r->{json}{error}{code}, 'invalid_request_body',
   'OpenAI\'s invalid_request_body');
like($r->{json}{error}{message} // '',
     qr/"thinking_budget" 30000 is over the 80 output tokens/,
     'the message says why');

$r = qwen($agent, max_tokens => 80, thinking_budget => -1);
is($r->{status}, 400, 'thinking_budget -1 (no limit): 400');

$r = qwen($agent, thinking_token_budget => 101);
is($r->{status}, 400,
   'thinking_token_budget 101, no max_tokens (the cap of 100 added): 400');

$r = qwen($agent, max_tokens => 500, thinking_budget_tokens => 500);
is($r->{status}, 400,
   'thinking_budget_tokens 500, max_tokens clamped to 100: 400');

$r = qwen($agent, max_tokens => 80,
          chat_template_kwargs => { enable_thinking => JSON::PP::true,
                                    thinking_budget => 4096 });
is($r->{status}, 400, 'chat_template_kwargs.thinking_budget 4096: 400');

$r = qwen($agent, max_tokens => 80, nvext => { max_thinking_tokens => 81 });
is($r->{status}, 400, 'nvext.max_thinking_tokens 81, max_tokens 80: 400');

is(scalar $l->provider_requests, $n, 'no refused call reached the provider');

# ---- within it: sent as it came --------------------------------------------

$r = qwen($agent, max_tokens => 80, enable_thinking => JSON::PP::true,
          thinking_budget => 80);
is($r->{status}, 200, 'thinking_budget at the output limit: 200');
is_deeply([ @{$l->last_provider_request->{body}}{qw(max_tokens
                                                    thinking_budget)} ],
          [ 80, 80 ], 'sent as it came');

$r = qwen($agent, max_tokens => 80,
          chat_template_kwargs => { thinking_budget => 50 },
          nvext => { max_thinking_tokens => 50 },
          thinking_token_budget => 50);
is($r->{status}, 200, 'the others under it: 200');

# ---- thinking_budget reserved beside max_tokens ----------------------------

my $tight = $l->token('tight');

$r = qwen($tight, max_tokens => 100, thinking_budget => 100);
is($r->{status}, 429,
   'tokens_per_minute 150: max_tokens 100 and a thinking_budget of 100 '
   . 'reserve 200 and more: 429');
like($r->{raw} // '',
     qr/needs about 2\d\d tokens, more than this client may use per minute/,
     'the refusal: over the token budget');

$r = qwen($tight, max_tokens => 100);
is($r->{status}, 200, 'the same without the thinking_budget: 200');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
