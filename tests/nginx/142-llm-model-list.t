#!/usr/bin/perl

# ngx_http_airlock_llm_module: GET <prefix>/models is answered by the
# gateway from the policy, and never reaches the provider.  The provider's
# list is the account's: every model it may call (ones no entry grants,
# ones this client may not use) and its fine-tuned models, whose ids and
# "owned_by" name the organization.  The gateway's list holds the models
# this client may use under the entry (its own "models", else the
# entry's), then the aliases it may use, in the provider's format;
# Anthropic's pages (limit, after_id, before_id; first_id, last_id,
# has_more) over that list.  GET models/{id} of a model the client may not
# use is not found (404), one it may use is the list's object.  And a
# refused call's own credentials leave its headers as an allowed one's
# do: a log_format with $http_authorization or $http_x_api_key logs "-"
# either way.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

$l->setup(
    openai_fields => "    aliases:\n      fast: gpt-4o-mini\n"
        . "      big: gpt-4o\n",
    anthropic_fields => "    aliases:\n      haiku: claude-3-5-haiku\n"
        . "      quick: claude-3-5-haiku\n");

$t->run;

plan tests => 39;

my $agent = $l->token('agent');
my $worker = $l->token('worker');      # gpt-4o-mini only

sub ids { [ map { $_->{id} } @{$_[0]{json}{data} // []} ] }

sub models {
    my ($token, $path, %o) = @_;
    return $l->request('GET', $path, token => $token, %o);
}

my $n = scalar $l->provider_requests;

# ---- OpenAI ---------------------------------------------------------------

my $r = models($worker, '/v1/proxy/openai/models');
is($r->{status}, 200, 'openai: 200');
is_deeply(ids($r), [ 'gpt-4o-mini', 'fast' ],
          'openai: the client\'s models, then the aliases it may use');
unlike($r->{body}, qr/ft:|org-|o1-pro|claude/,
       'openai: nothing of the account\'s own list');
is($r->{json}{object}, 'list', 'openai: "object": "list"');
is_deeply($r->{json}{data}[0],
          { id => 'gpt-4o-mini', object => 'model', created => 0,
            owned_by => 'airlock' },
          'openai: a model as the SDKs read it');
like($r->{headers}{'content-type'} // '', qr{^application/json},
     'openai: JSON');
ok(defined $r->{headers}{'x-request-id'}, 'openai: the gateway\'s id');
is(scalar $l->provider_requests, $n, 'openai: the provider is not asked');

$r = models($agent, '/v1/proxy/openai/models');
is_deeply(ids($r), [ 'gpt-4o-mini', 'gpt-4o', 'text-embedding-3-small',
                     'fast', 'big' ],
          'openai: another client, the entry\'s models');
is_deeply([ @{$l->last_usage(2)}{qw(client model status total_tokens)} ],
          [ 'agent', '', 200, 0 ], 'openai: a usage line without tokens');

$r = models($worker, '/v1/proxy/openai/v1/models');
is_deeply(ids($r), [ 'gpt-4o-mini', 'fast' ], 'openai: under /v1 too');

# ---- models/{id} ---------------------------------------------------------

$r = models($worker, '/v1/proxy/openai/models/gpt-4o');
is($r->{status}, 404, 'models/{id} of another entry\'s client: 404');
like($r->{body}, qr/model_not_found/, '... not found');

$r = models($worker, '/v1/proxy/openai/models/'
                     . 'ft:gpt-4o-mini:org-FAKE-acme:custom:FAKE01');
is($r->{status}, 404, 'models/{id} of a fine-tuned model: 404');

$r = models($worker, '/v1/proxy/openai/models/gpt-4o-mini');
is($r->{status}, 200, 'models/{id} allowed: 200');
is_deeply($r->{json}, $l->request('GET', '/v1/proxy/openai/models',
                                  token => $worker)->{json}{data}[0],
          '... the object of the list (tests/nginx/145-llm-model-get.t)');
is(scalar $l->provider_requests, $n, '... the provider is not asked');

# ---- Anthropic -----------------------------------------------------------

$r = models($agent, '/v1/proxy/anthropic/models', anthropic => 1);
is($r->{status}, 200, 'anthropic: 200');
is_deeply(ids($r), [ 'claude-3-5-haiku', 'haiku', 'quick' ],
          'anthropic: the models and aliases');
is_deeply($r->{json}{data}[0],
          { type => 'model', id => 'claude-3-5-haiku',
            display_name => 'claude-3-5-haiku',
            created_at => '1970-01-01T00:00:00Z' },
          'anthropic: a model as the SDKs read it');
is_deeply([ @{$r->{json}}{qw(first_id last_id)} ],
          [ 'claude-3-5-haiku', 'quick' ], 'anthropic: first and last id');
ok(!$r->{json}{has_more}, 'anthropic: no more');

$r = models($agent, '/v1/proxy/anthropic/models?limit=2', anthropic => 1);
is_deeply(ids($r), [ 'claude-3-5-haiku', 'haiku' ], 'limit: a page');
ok($r->{json}{has_more}, 'limit: more');
is($r->{json}{last_id}, 'haiku', 'limit: its last id');

$r = models($agent, '/v1/proxy/anthropic/models?limit=2&after_id=haiku',
            anthropic => 1);
is_deeply(ids($r), [ 'quick' ], 'after_id: the next page');
ok(!$r->{json}{has_more}, 'after_id: the last one');

$r = models($agent, '/v1/proxy/anthropic/models?before_id=quick&limit=1',
            anthropic => 1);
is_deeply(ids($r), [ 'haiku' ], 'before_id: the page before');
ok($r->{json}{has_more}, 'before_id: more before it');

$r = models($agent, '/v1/proxy/anthropic/models?after_id=claude-x',
            anthropic => 1);
is_deeply([ ids($r), @{$r->{json}}{qw(first_id last_id)} ],
          [ [], undef, undef ], 'an id not listed: an empty page');

$r = models($agent, '/v1/proxy/anthropic/models?limit=0', anthropic => 1);
is($r->{status}, 400, 'limit 0: 400');
like($r->{body}, qr/invalid_request_error/, '... in Anthropic\'s format');

$r = models($agent, '/v1/proxy/anthropic/models?limit=1001',
            anthropic => 1);
is($r->{status}, 400, 'limit over 1000: 400');

is(scalar $l->provider_requests, $n, 'anthropic: the provider is not asked');

# ---- a refusal's credentials ---------------------------------------------

$r = $l->chat(token => $worker, model => 'gpt-4o');
is($r->{status}, 403, 'a refused call: 403');

$r = $l->messages(token => $worker);
is($r->{status}, 403, 'a refused call with x-api-key: 403');

# nginx writes a request's access log line after its answer: wait for it
my ($access, $refusals);
for (1 .. 50) {
    $access = $t->read_file('access.log') // '';
    $refusals = () = $access =~ /^worker \S+ \S* 40[34] /mg;
    last if $refusals >= 4;
    select(undef, undef, undef, 0.1);
}
unlike($access, qr/al-[a-z]+-token/, 'no client token in the access log');
is(scalar(() = $access =~ /^worker \S+ \S* 40[34] .* - -$/mg), 4,
   'the refusals log "-" for $http_authorization and $http_x_api_key');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
