#!/usr/bin/perl

# ngx_http_airlock_llm_module: a request body names one model, "model",
# and the allowlist checks it.  Routers behind an entry read other
# members as more models to serve the same call with: OpenRouter (and
# the routers that copy it) reads "models" as the models to try in
# order, LiteLLM's proxy and OpenRouter's Messages endpoint read
# "fallbacks", and Anthropic's refusal fallback reads "fallbacks" too,
# each entry with a "max_tokens" of its own; LiteLLM's proxy also reads
# "context_window_fallbacks" (tried when the prompt is too long) and
# "content_policy_fallbacks" (after a refusal), Keywords AI
# "fallback_models"; and older LiteLLM proxies take the mock_testing_*
# flags, which make the router fail the call on purpose and serve it with
# the fallbacks of its configuration; LiteLLM's proxy also builds a
# router for the call from "user_config", whose model list names the
# models, their api_base (any URL) and keys, and sends the call to the
# "api_base" or "base_url" of the body when it also has an "api_key",
# egress the policy never granted, and merges "extra_body" into the body
# it sends the provider and "extra_headers" and "headers" into its
# headers, past every check of the gateway (all refused too).  A call
# could then be served, and billed, by a model the client may not use,
# at an output cap nobody checked.  Such a body is refused (body, 400),
# in any case of the name, and nothing reaches the provider; bodies
# without them pass.  The scan is unit-tested in tests/unit/llm.c.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

$l->setup;

$t->run;

plan tests => 33;

my $worker = $l->token('worker');
my $n = scalar $l->provider_requests;

# the worker may use gpt-4o-mini only

my $r = $l->chat(token => $worker,
                 fields => { models => [ 'gpt-4o-mini', 'gpt-4o' ] });
is($r->{status}, 400, '"models" beside an allowed model: 400');
like($r->{body}, qr/invalid_request_body/, '... in OpenAI\'s format');
like($r->{body}, qr/models/, '... naming the member');
is(scalar $l->provider_requests, $n, '... nothing sent');

$r = $l->chat(token => $worker,
              fields => { fallbacks => [ 'gpt-4o' ] });
is($r->{status}, 400, '"fallbacks" (LiteLLM): 400');

$r = $l->chat(token => $worker,
              fields => { fallbacks => [ { model => 'gpt-4o' } ] });
is($r->{status}, 400, '"fallbacks" of objects: 400');

$r = $l->request('POST', '/v1/proxy/openai/chat/completions',
                 token => $worker,
                 body => '{"model":"gpt-4o-mini","messages":[{"role":"user",'
                         . '"content":"Hi"}],"MODELS":["gpt-4o"]}');
is($r->{status}, 400, '"MODELS" in another case: 400');

$r = $l->request('POST', '/v1/proxy/openai/chat/completions',
                 token => $worker,
                 body => '{"model":"gpt-4o-mini","messages":[{"role":"user",'
                         . '"content":"Hi"}],"m\u006fdels":["gpt-4o"]}');
is($r->{status}, 400, '"models" spelled with an escape: 400');

$r = $l->chat(token => $worker,
              fields => { context_window_fallbacks =>
                              [ { 'gpt-4o-mini' => [ 'gpt-4o' ] } ] });
is($r->{status}, 400, '"context_window_fallbacks" (LiteLLM): 400');
like($r->{body}, qr/context_window_fallbacks/, '... naming the member');

$r = $l->chat(token => $worker,
              fields => { content_policy_fallbacks =>
                              [ { 'gpt-4o-mini' => [ 'gpt-4o' ] } ] });
is($r->{status}, 400, '"content_policy_fallbacks" (LiteLLM): 400');

$r = $l->chat(token => $worker,
              fields => { fallback_models => [ 'gpt-4o' ] });
is($r->{status}, 400, '"fallback_models" (Keywords AI): 400');

$r = $l->request('POST', '/v1/proxy/openai/chat/completions',
                 token => $worker,
                 body => '{"model":"gpt-4o-mini","messages":[{"role":"user",'
                         . '"content":"Hi"}],"Fallback_Models":["gpt-4o"]}');
is($r->{status}, 400, '"Fallback_Models" in another case: 400');

$r = $l->request('POST', '/v1/proxy/openai/chat/completions',
                 token => $worker,
                 body => '{"model":"gpt-4o-mini","messages":[{"role":"user",'
                         . '"content":"Hi"}],'
                         . '"context_window_fallbacks":null}');
is($r->{status}, 400, '"context_window_fallbacks": null: 400');

$r = $l->chat(token => $worker,
              fields => { mock_testing_fallbacks => JSON::PP::true });
is($r->{status}, 400, '"mock_testing_fallbacks" (LiteLLM): 400');
like($r->{body}, qr/mock_testing_fallbacks/, '... naming the member');

$r = $l->request('POST', '/v1/proxy/openai/chat/completions',
                 token => $worker,
                 body => '{"model":"gpt-4o-mini","messages":[{"role":"user",'
                         . '"content":"Hi"}],'
                         . '"mock_testing_content_policy_fallbacks":true}');
is($r->{status}, 400, '"mock_testing_content_policy_fallbacks": 400');

$r = $l->chat(token => $worker,
              fields => { user_config => { model_list => [ {
                  model_name => 'gpt-4o-mini',
                  litellm_params => { model => 'openai/gpt-4o',
                                      api_base => 'https://attacker.example',
                                      api_key => 'os.environ/OPENAI_API_KEY' },
              } ] } });
is($r->{status}, 400, '"user_config" (LiteLLM): 400');
like($r->{body}, qr/user_config/, '... naming the member');

$r = $l->request('POST', '/v1/proxy/openai/chat/completions',
                 token => $worker,
                 body => '{"model":"gpt-4o-mini","messages":[{"role":"user",'
                         . '"content":"Hi"}],"User_Config":{}}');
is($r->{status}, 400, '"User_Config" in another case: 400');

$r = $l->messages(token => $l->token('agent'),
                  fields => { user_config => undef });
is($r->{status}, 400, '"user_config": null on an Anthropic entry: 400');

$r = $l->chat(token => $worker,
              fields => { api_key => 'x',
                          api_base => 'https://attacker.example/v1' });
is($r->{status}, 400, '"api_base" beside an "api_key" (LiteLLM): 400');
like($r->{body}, qr/api_base/, '... naming the member');

$r = $l->request('POST', '/v1/proxy/openai/embeddings',
                 token => $l->token('agent'),
                 body => { model => 'text-embedding-3-small', input => 'x',
                           api_key => 'x',
                           base_url => 'https://attacker.example/v1' });
is($r->{status}, 400, '"base_url" on embeddings: 400');

$r = $l->messages(token => $l->token('agent'),
                  fields => { api_key => 'x',
                              api_base => 'https://attacker.example' });
is($r->{status}, 400, '"api_base" on an Anthropic entry: 400');

$r = $l->chat(token => $worker,
              fields => { max_tokens => 10,
                          extra_body => { max_tokens => 100000,
                                          web_search_options => {} } });
is($r->{status}, 400, '"extra_body" (LiteLLM): 400');
like($r->{body}, qr/extra_body/, '... naming the member');

$r = $l->chat(token => $worker,
              fields => { extra_headers => { 'OpenAI-Project' => 'p' } });
is($r->{status}, 400, '"extra_headers" (LiteLLM): 400');

$r = $l->messages(token => $l->token('agent'),
                  fields => { headers => { 'anthropic-beta' =>
                                               'context-1m-2025-08-07' } });
is($r->{status}, 400, '"headers" on an Anthropic entry: 400');

$r = $l->messages(token => $l->token('agent'),
                  fields => { fallbacks => [ { model => 'claude-opus-4-1',
                                               max_tokens => 100000 } ] });
is($r->{status}, 400, 'Anthropic "fallbacks": 400');
like($r->{body}, qr/invalid_request_error/, '... in Anthropic\'s format');
is(scalar $l->provider_requests, $n, 'none of them sent');

$r = $l->chat(token => $worker,
              fields => { response_format => { type => 'text',
                                               models => 'x' } });
is($r->{status}, 200, 'a "models" key elsewhere than the top passes');

$t->stop;
