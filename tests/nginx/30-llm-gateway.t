#!/usr/bin/perl

# ngx_http_airlock_llm_module: requests.  Every endpoint of both provider
# kinds, the ones refused, client keys (Authorization, x-api-key,
# Proxy-Authorization, unix peer), models, max tokens clamped and
# refused, bodies, the header allowlist and the key swap, the usage line
# of JSON answers, and errors in the provider's own format.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

# nginx's debug log prints the request sent upstream, the key included
local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

$l->setup;
$t->run;

plan tests => 115;

my $agent = $l->token('agent');
my $worker = $l->token('worker');
my ($r, $p, $u, $n);

sub oai_error {
    my ($r) = @_;
    my $e = $r->{json} && $r->{json}{error};
    return ref $e eq 'HASH' ? $e : {};
}

sub ant_error {
    my ($r) = @_;
    my $j = $r->{json} // {};
    return ($j->{type} // '') eq 'error' && ref $j->{error} eq 'HASH'
           ? $j->{error} : {};
}

sub provider_count {
    my @r = $l->provider_requests;
    return scalar @r;
}

# ---- OpenAI endpoints ------------------------------------------------------

$r = $l->chat(token => $agent);
is($r->{status}, 200, 'chat/completions: 200');
is($r->{json}{choices}[0]{message}{content}, 'Hello from fixture',
   'chat/completions: the provider answer');

$p = $l->last_provider_request;
is($p->{path}, '/v1/chat/completions', 'chat: upstream path under /v1');
is($p->{headers}{authorization}, "Bearer $Airlock::LLM::OPENAI_KEY",
   'chat: the provider key is injected');
ok(!grep({ index($_, $agent) >= 0 } values %{$p->{headers}}),
   'chat: the client key is not forwarded');
is($p->{headers}{host}, '127.0.0.1:' . $t->port(8081),
   'chat: Host is the upstream');

$u = $l->last_usage(1);
is_deeply([@$u{qw(client provider model prompt_tokens completion_tokens
                  cached_tokens total_tokens status stream usage_source)}],
          ['agent', 'openai', 'gpt-4o-mini', 11, 3, 0, 14, 200,
           JSON::PP::false, 'response'],
          'chat: usage line');
like($u->{time}, qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/,
     'usage line: RFC 3339 time');
ok($u->{latency_ms} >= 0 && $u->{ttfb_ms} <= $u->{latency_ms} + 1,
   'usage line: latency and ttfb');
like($u->{request_id}, qr/^[0-9a-f]{32}$/, 'usage line: request id');

$r = $l->request('POST', '/v1/proxy/openai/completions', token => $agent,
                 body => { model => 'gpt-4o-mini', prompt => 'Say hi' });
is($r->{status}, 200, 'completions: 200');
is($r->{json}{choices}[0]{text}, 'Hello from fixture', 'completions: text');
is($l->last_usage(2)->{total_tokens}, 14, 'completions: usage');

$r = $l->request('POST', '/v1/proxy/openai/embeddings', token => $agent,
                 body => { model => 'text-embedding-3-small',
                           input => 'embed me' });
is($r->{status}, 200, 'embeddings: 200');
$u = $l->last_usage(3);
is_deeply([@$u{qw(model prompt_tokens completion_tokens total_tokens)}],
          ['text-embedding-3-small', 11, 0, 11], 'embeddings: usage');

$r = $l->request('POST', '/v1/proxy/openai/responses', token => $agent,
                 body => { model => 'gpt-4o-mini', input => 'Hello' });
is($r->{status}, 200, 'responses: 200');
is($l->last_provider_request->{body}{max_output_tokens}, 100,
   'responses: max_output_tokens capped at the client max_tokens');
$u = $l->last_usage(4);
is_deeply([@$u{qw(prompt_tokens completion_tokens usage_source)}],
          [11, 3, 'response'], 'responses: usage');

$n = provider_count();
$r = $l->request('GET', '/v1/proxy/openai/models', token => $agent);
is($r->{status}, 200, 'models: 200');
is($r->{json}{object}, 'list', 'models: the list');
is(provider_count(), $n,
   'models: answered by the gateway (tests/nginx/142-llm-model-list.t)');
$u = $l->last_usage(5);
is_deeply([@$u{qw(model total_tokens status)}], ['', 0, 200],
          'models: a usage line without tokens');

$r = $l->request('GET', '/v1/proxy/openai/models/gpt-4o-mini',
                 token => $agent);
is($r->{status}, 200, 'models/{id}: 200');
is($r->{json}{id}, 'gpt-4o-mini', 'models/{id}: the model');

# ---- Anthropic -----------------------------------------------------------

$r = $l->messages(token => $agent);
is($r->{status}, 200, 'messages: 200');
is($r->{json}{content}[0]{text}, 'Hello from fixture', 'messages: answer');
$p = $l->last_provider_request;
is($p->{path}, '/v1/messages', 'messages: path');
is($p->{headers}{'x-api-key'}, $Airlock::LLM::ANTHROPIC_KEY,
   'messages: x-api-key is the provider key');
ok(!exists $p->{headers}{authorization}, 'messages: no Authorization');
is($p->{headers}{'anthropic-version'}, '2023-06-01',
   'messages: anthropic-version defaulted');
$u = $l->last_usage(7);
is_deeply([@$u{qw(client provider model prompt_tokens completion_tokens
                  usage_source)}],
          ['agent', 'anthropic', 'claude-3-5-haiku', 11, 3, 'response'],
          'messages: usage line');

$r = $l->messages(token => $agent,
                  headers => [['anthropic-version', '2023-01-01'],
                              ['anthropic-beta', 'prompt-caching-2024-07-31']]);
$p = $l->last_provider_request;
is($p->{headers}{'anthropic-version'}, '2023-01-01',
   'messages: the client anthropic-version passes');
is($p->{headers}{'anthropic-beta'}, 'prompt-caching-2024-07-31',
   'messages: anthropic-beta passes');

$l->script({ usage => { prompt => 50, completion => 9, cached => 20,
                        cache_write => 5 } });
$r = $l->messages(token => $agent);
$u = $l->last_usage(9);
is_deeply([@$u{qw(prompt_tokens completion_tokens cached_tokens
                  total_tokens)}],
          [50, 9, 20, 59], 'messages: cache reads and writes count as input');

$r = $l->request('GET', '/v1/proxy/anthropic/models?limit=5',
                 token => $agent, anthropic => 1);
is($r->{status}, 200, 'anthropic models: 200');
is_deeply([ map { $_->{id} } @{$r->{json}{data} // []} ],
          [ 'claude-3-5-haiku' ], 'anthropic models: the allowed query');

# ---- endpoints refused ---------------------------------------------------

$n = provider_count();

$r = $l->request('POST', '/v1/proxy/openai/files', token => $agent,
                 body => { purpose => 'x' });
is($r->{status}, 403, 'files: 403');
is(oai_error($r)->{code}, 'endpoint_not_allowed', 'files: OpenAI error');
like(oai_error($r)->{message}, qr/request id [0-9a-f]{32}/,
     'files: the message names the request id');

$r = $l->request('GET', '/v1/proxy/openai/chat/completions',
                 token => $agent);
is($r->{status}, 403, 'GET chat/completions: 403');
is(oai_error($r)->{code}, 'endpoint_not_allowed', 'method: endpoint error');

$r = $l->request('POST', '/v1/proxy/anthropic/chat/completions',
                 token => $agent, anthropic => 1,
                 body => { model => 'claude-3-5-haiku' });
is($r->{status}, 403, 'anthropic chat/completions: 403');
is(ant_error($r)->{type}, 'permission_error',
   'anthropic refusal in the Anthropic format');
like($r->{json}{request_id} // '', qr/^[0-9a-f]{32}$/,
     'anthropic refusal: request_id');

$r = $l->request('GET', '/v1/proxy/openai/models?after=x', token => $agent);
is($r->{status}, 403, 'unknown query parameter: 403');

$r = $l->request('GET', '/v1/proxy/openai/models/..%2Fx', token => $agent);
is($r->{status}, 403, 'encoded slash: 403');

$r = $l->request('POST', '/v1/proxy/openai//chat/completions',
                 token => $agent, body => { model => 'gpt-4o-mini' });
is($r->{status}, 403, 'empty segment: 403');

$r = $l->request('GET', '/v1/proxy/openai/models/gpt-3', token => $agent);
is($r->{status}, 404, 'models/{id} of a model not allowed: 404');
is(oai_error($r)->{code}, 'model_not_found', 'models/{id}: not found');

is(provider_count(), $n, 'refused endpoints never reach the provider');

# ---- client keys -----------------------------------------------------------

$r = $l->chat();
is($r->{status}, 401, 'no key: 401');
is(oai_error($r)->{code}, 'invalid_api_key', 'no key: invalid_api_key');

$r = $l->chat(token => 'al-wrong-token');
is($r->{status}, 401, 'wrong key: 401');
unlike($r->{body}, qr/al-wrong-token/, 'wrong key: not echoed');

$r = $l->messages(token => 'al-wrong-token');
is($r->{status}, 401, 'anthropic wrong key: 401');
is(ant_error($r)->{type}, 'authentication_error',
   'anthropic wrong key: authentication_error');

$r = $l->chat(headers => [['x-api-key', $agent]]);
is($r->{status}, 200, 'x-api-key on the OpenAI prefix: 200');

$r = $l->chat(headers => [['Proxy-Authorization', "Bearer $agent"]]);
is($r->{status}, 200, 'Proxy-Authorization: 200');

$r = $l->chat(token => $agent, headers => [['x-api-key', $worker]]);
is($r->{status}, 401, 'two different keys: 401');

$r = $l->chat(token => $agent, headers => [['x-api-key', $agent]]);
is($r->{status}, 200, 'the same key twice: 200');

$r = $l->chat(headers => [['Authorization', "Basic $agent"]]);
is($r->{status}, 401, 'not a Bearer token: 401');

$r = $l->chat(http => { unix => $t->testdir . '/gw.sock' });
is($r->{status}, 200, 'unix peer uid, no key: 200');
is($l->last_usage(provider_count())->{client}, 'local',
   'unix peer: client "local"');

$r = $l->messages(http => { unix => $t->testdir . '/gw.sock' });
is($r->{status}, 403, 'a client not listed for the provider: 403');
is(ant_error($r)->{type}, 'permission_error',
   'not listed: permission_error');

$r = $l->chat(token => $l->token('tight'), model => 'gpt-4o-mini',
              headers => [['Authorization', "Bearer $agent"]]);
like($r->{status}, qr/^40[01]$/, 'two Authorization headers: refused');

# ---- models and max tokens ------------------------------------------------

$n = provider_count();

$r = $l->chat(token => $worker, model => 'gpt-4o');
is($r->{status}, 403, 'model outside the client list: 403');
is(oai_error($r)->{code}, 'model_not_allowed', 'model: model_not_allowed');
is(oai_error($r)->{param}, 'model', 'model: param "model"');

$r = $l->chat(token => $agent, model => 'gpt-5');
is($r->{status}, 403, 'model outside the provider list: 403');

$r = $l->messages(token => $agent, model => 'claude-opus');
is($r->{status}, 403, 'anthropic model: 403');
is(ant_error($r)->{type}, 'permission_error', 'anthropic model: format');

$r = $l->chat(token => $worker, fields => { max_tokens => 500 });
is($r->{status}, 400, 'max_tokens over the cap, reject: 400');
is(oai_error($r)->{type}, 'invalid_request_error',
   'reject: invalid_request_error');
like(oai_error($r)->{message}, qr/max_tokens/, 'reject: says max_tokens');

is(provider_count(), $n, 'refused bodies never reach the provider');

$r = $l->chat(token => $agent, fields => { max_tokens => 5000 });
is($r->{status}, 200, 'max_tokens over the cap, clamp: 200');
is($l->last_provider_request->{body}{max_tokens}, 100,
   'clamp: the provider sees the cap');

my $raw = '{"model" : "gpt-4o-mini",   "max_tokens": 10, '
        . '"messages": [{"role": "user", "content": "x"}]}';
$r = $l->request('POST', '/v1/proxy/openai/chat/completions',
                 token => $worker, body => $raw);
is($r->{status}, 200, 'max_tokens under the cap: 200');
$p = $l->last_provider_request;
is($p->{headers}{'content-length'}, length $raw,
   'no rewrite: the very bytes are forwarded');
is($p->{body}{max_tokens}, 10, 'no rewrite: max_tokens as sent');

$r = $l->messages(token => $agent, max_tokens => 4000);
is($l->last_provider_request->{body}{max_tokens}, 1000,
   'anthropic clamp: the provider sees the cap');

$r = $l->request('POST', '/v1/proxy/anthropic/messages', token => $agent,
                 anthropic => 1,
                 body => { model => 'claude-3-5-haiku',
                           messages => [{ role => 'user', content => 'x' }] });
is($r->{status}, 400, 'anthropic without max_tokens: 400');
is(ant_error($r)->{type}, 'invalid_request_error',
   'anthropic without max_tokens: invalid_request_error');

# ---- bodies ---------------------------------------------------------------

$r = $l->request('POST', '/v1/proxy/openai/chat/completions',
                 token => $agent, body => '{"model": "gpt-4o-mini",');
is($r->{status}, 400, 'invalid JSON: 400');

$r = $l->request('POST', '/v1/proxy/openai/chat/completions',
                 token => $agent,
                 body => '{"model":"gpt-4o-mini","model":"gpt-4o"}');
is($r->{status}, 400, 'duplicate keys: 400');

# Go upstreams (Ollama, Go proxies) fold key case and take the last key:
# a member the gateway reads, in another case, would pass its checks with
# one value and reach the provider with another
$n = provider_count();
$r = $l->request('POST', '/v1/proxy/openai/chat/completions',
                 token => $worker,
                 body => '{"model":"gpt-4o-mini","max_tokens":10,'
                         . '"MAX_TOKENS":100000,"messages":[]}');
is($r->{status}, 400, 'a read member in another case: 400');
like(oai_error($r)->{message}, qr/"MAX_TOKENS" differs from "max_tokens"/,
     'a read member in another case: says which');
$r = $l->request('POST', '/v1/proxy/openai/chat/completions',
                 token => $worker,
                 body => '{"model":"gpt-4o-mini","messages":[],'
                         . '"tools":[{"Type":"web_search"}]}');
is($r->{status}, 400, 'a tool\'s Type: 400');
is(provider_count(), $n, 'keys in another case never reach the provider');

$r = $l->request('POST', '/v1/proxy/openai/chat/completions',
                 token => $agent, body => '{"model":"gpt-4o-mini"}',
                 headers => [['Content-Type', 'text/plain']]);
is($r->{status}, 400, 'not application/json: 400');

$r = $l->request('POST', '/v1/proxy/openai/chat/completions',
                 token => $agent, body => '{"model":"gpt-4o-mini"}',
                 headers => [['Content-Type',
                              'application/json; charset=utf-7']]);
is($r->{status}, 400, 'JSON in another charset than utf-8: 400');

$r = $l->request('POST', '/v1/proxy/openai/chat/completions',
                 token => $agent,
                 body => '{"model":"gpt-4o-mini","messages":[{"role":"user",'
                         . '"content":"' . ('x' x 70000) . '"}]}');
is($r->{status}, 413, 'body over max_body_bytes: 413');
is(oai_error($r)->{code}, 'request_too_large', '413: request_too_large');

my $cbody = '{"model":"gpt-4o-mini","max_tokens":9000,'
          . '"messages":[{"role":"user","content":"chunked"}]}';
$r = $l->request('POST', '/v1/proxy/openai/chat/completions',
                 token => $agent,
                 headers => [['Content-Type', 'application/json'],
                             ['Transfer-Encoding', 'chunked']],
                 raw_body => sprintf("%x\r\n%s\r\n0\r\n\r\n",
                                     length $cbody, $cbody));
is($r->{status}, 200, 'chunked request body: 200');
$p = $l->last_provider_request;
is_deeply([$p->{body}{max_tokens}, $p->{headers}{'content-length'},
           $p->{headers}{'transfer-encoding'}],
          [100, length($cbody) - 1, undef],
          'chunked body: rewritten, sent with its own Content-Length');

$r = $l->request('GET', '/v1/proxy/openai/models', token => $agent,
                 body => '{}');
is($r->{status}, 400, 'a body on GET models: 400');

# ---- headers ---------------------------------------------------------------

$r = $l->chat(token => $agent,
              headers => [['OpenAI-Organization', 'org-x'],
                          ['OpenAI-Project', 'proj-x'],
                          ['OpenAI-Beta', 'assistants=v2'],
                          ['User-Agent', 'OpenAI/JS 4.0'],
                          ['X-Stainless-OS', 'Linux'],
                          ['Accept-Encoding', 'gzip'],
                          ['Cookie', 'a=b'],
                          ['X-Forwarded-For', '10.9.9.9']]);
$p = $l->last_provider_request;
is($p->{headers}{'openai-beta'}, 'assistants=v2', 'OpenAI-Beta passes');
is($p->{headers}{'user-agent'}, 'OpenAI/JS 4.0', 'User-Agent passes');
is(join(',', grep { exists $p->{headers}{$_} }
                  qw(openai-organization openai-project x-stainless-os
                     accept-encoding cookie x-forwarded-for
                     proxy-authorization)),
   '', 'organization, project, SDK, encoding, cookie headers removed');
ok(!exists $r->{headers}{'x-ratelimit-remaining-tokens'},
   'the provider rate-limit headers are not passed on');

# ---- provider errors --------------------------------------------------------

$l->script({ status => 500 });
$r = $l->chat(token => $agent);
is($r->{status}, 500, 'provider 500 passes through');
like(oai_error($r)->{message}, qr/fixture error 500/,
     'provider 500: its body passes through');
$u = $l->last_usage(provider_count());
is_deeply([@$u{qw(status total_tokens usage_source)}],
          [500, 0, 'estimated'], 'provider 500: no tokens charged');

$l->script({ no_usage => 1 });
$r = $l->chat(token => $agent, fields => { max_tokens => 7 });
is($r->{status}, 200, 'answer without usage: 200');
$u = $l->last_usage(provider_count());
is($u->{usage_source}, 'estimated', 'without usage: estimated');
is($u->{completion_tokens}, 7, 'without usage: the output cap is charged');
ok($u->{prompt_tokens} > 0, 'without usage: the prompt estimate');

# ---- logs ------------------------------------------------------------------

my @deny = $l->proxy->deny_log;
my ($files) = grep { $_->{path} eq '/v1/proxy/openai/files' } @deny;
is($files && $files->{route}, 'openai', 'deny log: the provider as route');
is($files && $files->{reason}, 'no_route', 'deny log: reason');
ok((grep { $_->{reason} eq 'client_unknown' } @deny),
   'deny log: unknown keys');
ok((grep { $_->{reason} eq 'model' && $_->{client} eq 'worker' } @deny),
   'deny log: model');

my $access = $t->read_file('access.log');
like($access, qr/^agent openai gpt-4o-mini 200 11 3 response - -$/m,
     'access log: variables; $http_authorization is not the key');

$r = $l->request('GET', '/v1/proxy/openai/models', token => $agent);
is(Airlock::LLM::leaks(join '', map { $t->read_file($_) // '' }
                                qw(access.log usage.log deny.log error.log)),
   0, 'no provider key in any log');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
