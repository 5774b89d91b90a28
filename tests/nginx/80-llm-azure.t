#!/usr/bin/perl

# An "azure" llm entry: the official openai package's AzureOpenAI client,
# built with the gateway's prefix as its endpoint, gets answers; the
# provider sees Azure's deployment paths with the policy's api-version
# (the client's own is replaced), the key in api-key and no client
# credential; the deployment is the model for the allowlist and the usage
# line; an alias in the model names another deployment; a key echoed back
# is scrubbed.  The SDK part is skipped (failed under CI) when node or npm
# is missing or the package cannot be installed.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use Airlock::LLM;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my $dir = $l->sdk_install('azure-client.mjs', 'openai');

my $azure = <<'Y';
  - name: azure
    prefix: /v1/proxy/azure
    provider: azure
    upstream: "http://127.0.0.1:%%PORT_8081%%"
    api_version: "2024-10-21"
    secret: openai_key
    models: [gpt4o-mini-prod, gpt4o-prod, embed-prod]
    aliases: { fast: gpt4o-mini-prod, smart: gpt4o-prod }
    max_body_bytes: 65536
    clients:
      agent: {}
      worker: { models: [embed-prod] }
Y

$l->setup(openai_clients => $azure, locations => <<'L');
        location /v1/proxy/azure/ {
            airlock_llm azure;

            %%AIRLOCK_LOCATION%%

            proxy_read_timeout 10s;
        }
L
$t->run;

plan tests => 44;

sub sdk {
    my ($token, @steps) = @_;
    return $l->sdk_run($dir, 'azure-client.mjs', {
        AIRLOCK_ENDPOINT => 'http://127.0.0.1:' . $t->port(8080)
            . '/v1/proxy/azure',
        AIRLOCK_API_KEY => $token,
    }, @steps);
}

sub provider_since {
    my ($n) = @_;
    my @r = $l->provider_requests;
    return @r[$n .. $#r];
}

my $before = () = $l->provider_requests;
my $r = sdk($l->token('agent'), qw(chat alias stream embeddings responses
                                   deployment bad-model bad-key));
my @p = provider_since($before);

ok($r->{chat}{ok}, 'chat: the AzureOpenAI client gets an answer');
is($r->{chat}{result}{text}, 'Hello from fixture', 'chat: the text');
is($r->{chat}{result}{usage}{total_tokens}, 14, 'chat: the usage');

my ($c) = grep { $_->{body}{messages} && !$_->{body}{stream} } @p;
is($c->{path}, '/openai/deployments/gpt4o-mini-prod/chat/completions'
               . '?api-version=2024-10-21',
   'chat: Azure\'s deployment path, the policy\'s api-version');
is($c->{headers}{'api-key'}, $Airlock::LLM::OPENAI_KEY,
   'chat: the key in api-key');
ok(!exists $c->{headers}{authorization}, 'chat: no Authorization header');
is($c->{body}{model}, 'gpt4o-mini-prod', 'chat: the body names the deployment');

ok($r->{alias}{ok}, 'alias: an answer');
is($r->{alias}{result}{model}, 'gpt4o-mini-prod',
   'alias: the answer names the real deployment');
my ($a) = grep { $_->{path} =~ m{^/openai/deployments/gpt4o-mini-prod/}
                 && $_->{body}{model} eq 'gpt4o-mini-prod' } @p[1 .. $#p];
ok($a, 'alias: "fast" went to deployment gpt4o-mini-prod');
ok(!grep({ $_->{path} =~ m{/fast/} } @p), 'alias: no path names the alias');

ok($r->{stream}{ok}, 'stream: the SDK reads the stream');
is($r->{stream}{result}{text}, 'Hello from fixture', 'stream: the text');
is($r->{stream}{result}{usage}{completion_tokens}, 3, 'stream: the usage');

is($r->{embeddings}{result}{dims}, 3, 'embeddings: the vector');
ok(grep({ $_->{path} =~ m{^/openai/deployments/embed-prod/embeddings\?} } @p),
   'embeddings: the deployment path');

ok($r->{responses}{ok}, 'responses: an answer')
    or diag(explain $r->{responses});
ok(grep({ $_->{path} eq '/openai/responses?api-version=2024-10-21' } @p),
   'responses: /openai/responses with the policy\'s api-version');

ok($r->{deployment}{ok}, 'a client bound to a deployment: an answer');
ok(grep({ $_->{path} =~ m{/deployments/gpt4o-mini-prod/chat}
          && $_->{body}{model} eq 'gpt4o-mini-prod' } @p),
   'a client bound to a deployment: the body\'s model is the deployment');

is($r->{'bad-model'}{error}, 'PermissionDeniedError',
   'a deployment not allowed: PermissionDeniedError');
is($r->{'bad-model'}{code}, 'model_not_allowed',
   'a deployment not allowed: model_not_allowed');
is($r->{'bad-key'}{status}, 401, 'a wrong key: 401');

my @after = provider_since($before);
is(scalar @after, 6, 'six calls reached the provider, none refused');

# raw requests: what the SDK does not send

my $base = '/v1/proxy/azure/openai/deployments';

my $x = $l->request('POST', "$base/gpt4o-mini-prod/chat/completions",
                    token => $l->token('agent'), body => {
                        messages => [ { role => 'user', content => 'Hi' } ]
                    });
is($x->{status}, 200, 'no api-version and no model: answered');
is($l->last_provider_request->{body}{model}, 'gpt4o-mini-prod',
   'no model in the body: the deployment is added');

$x = $l->request('POST', "$base/gpt4o-mini-prod/chat/completions"
                         . '?api-version=2024-06-01&foo=1',
                 token => $l->token('agent'), body => { model => 'x',
                     messages => [ { role => 'user', content => 'Hi' } ] });
is($x->{status}, 403, 'another query parameter: refused');

$x = $l->request('GET', "$base/gpt4o-mini-prod/chat/completions",
                 token => $l->token('agent'));
is($x->{status}, 403, 'GET on a deployment path: refused')
    or diag($x->{body});

$x = $l->request('POST', '/v1/proxy/azure/chat/completions',
                 token => $l->token('agent'), body => { model => 'fast' });
is($x->{status}, 403, 'an OpenAI path on an azure entry: refused');

$x = $l->request('POST', "$base/embed-prod/embeddings",
                 headers => [ [ 'api-key', $l->token('worker') ] ],
                 body => { input => 'x' });
is($x->{status}, 200, 'the client key in api-key identifies the client');

$x = $l->request('POST', "$base/gpt4o-mini-prod/chat/completions",
                 headers => [ [ 'api-key', $l->token('worker') ] ],
                 body => { messages => [] });
is($x->{status}, 403, 'the client allowlist applies to the deployment');
like($x->{body}, qr/model_not_allowed/, '... as model_not_allowed');

$x = $l->request('POST', "$base/smart/chat/completions",
                 headers => [ [ 'api-key', $l->token('worker') ] ],
                 body => { messages => [] });
is($x->{status}, 403, 'an alias gives no model the client may not use');

# "model" written with escapes on a deployment path: the check would read
# it (here the cheaper deployment) while the path's is served, so refused

my $sent = () = $l->provider_requests;
for my $m ('gpt4o-mini-pro\u0064', 'gpt4o-pro\u0064') {
    $x = $l->request('POST', "$base/gpt4o-prod/chat/completions",
                     token => $l->token('agent'),
                     body => qq({"model":"$m","messages":[]}));
    is($x->{status}, 400, "model \"$m\" on a deployment path: refused");
    like($x->{body}, qr/without escapes/, '... saying why');
}
is(scalar(() = $l->provider_requests), $sent, '... before the provider');

# the provider echoes the key: scrubbed

$l->script({ echo_auth => 1, echo_b64 => 1 });
$x = $l->request('POST', "$base/gpt4o-mini-prod/chat/completions",
                 token => $l->token('agent'), body => {
                     messages => [ { role => 'user', content => 'Hi' } ] });
$l->script();
is($x->{status}, 200, 'an echoing provider: answered');
is(Airlock::LLM::leaks($x->{raw}), 0,
   'the api-key value, raw and base64, never reaches the client');

my @u = grep { $_->{provider} eq 'azure' } $l->usage_log;
my ($ua) = grep { ($_->{alias} // '') eq 'fast' } @u;
is($ua && $ua->{model}, 'gpt4o-mini-prod',
   'usage line: the real deployment as "model", the alias as "alias"');
ok(!grep({ exists $_->{alias} && $_->{alias} ne 'fast' } @u),
   'usage line: "alias" only when one was asked for');
is(Airlock::LLM::leaks(join '', map { $t->read_file($_) // '' }
                                qw(usage.log access.log error.log)),
   0, 'no key in any log');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
