#!/usr/bin/perl

# ngx_http_airlock_llm_module with a real client: the official openai npm
# package (tests/llm-client/package-lock.json), pointed at the gateway
# with baseURL .../v1/proxy/openai and the client's Airlock token as its
# API key.  JSON and streamed chat, models, embeddings, and the SDK's own
# exceptions for the gateway's refusals.  Skipped when node or npm is
# missing or the package cannot be installed (no registry).

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

my $dir = $l->sdk_install('openai-client.mjs', 'openai');

$l->setup;
$t->run;

plan tests => 25;

sub sdk {
    my ($token, @steps) = @_;
    return $l->sdk_run($dir, 'openai-client.mjs', {
        AIRLOCK_BASE_URL => 'http://127.0.0.1:' . $t->port(8080)
            . '/v1/proxy/openai',
        AIRLOCK_API_KEY => $token,
    }, @steps);
}

my $r = sdk($l->token('agent'), qw(chat stream stream-usage models
                                   retrieve retrieve-missing embeddings
                                   bad-key bad-model));

ok($r->{chat}{ok}, 'chat: the SDK gets an answer');
is($r->{chat}{result}{text}, 'Hello from fixture', 'chat: the text');
is($r->{chat}{result}{usage}{total_tokens}, 14, 'chat: the usage');

ok($r->{stream}{ok}, 'stream: the SDK reads the stream');
is($r->{stream}{result}{text}, 'Hello from fixture', 'stream: the text');
is($r->{stream}{result}{usage}, undef,
   'stream: no usage chunk the client did not ask for');

ok($r->{'stream-usage'}{ok}, 'stream with include_usage');
is($r->{'stream-usage'}{result}{usage}{completion_tokens}, 3,
   'stream with include_usage: the usage chunk');

ok($r->{models}{ok}, 'models: the SDK pages the list');
is_deeply($r->{models}{result}{ids},
          [ 'gpt-4o-mini', 'gpt-4o', 'text-embedding-3-small' ],
          'models: the ids, the client\'s only');

# models.retrieve(): the same list (tests/nginx/145-llm-model-get.t)
is_deeply($r->{retrieve}{result}, { id => 'gpt-4o', object => 'model' },
          'retrieve: the SDK gets the model');
is($r->{'retrieve-missing'}{error}, 'NotFoundError',
   'retrieve of an id not listed: NotFoundError');
is($r->{'retrieve-missing'}{code}, 'model_not_found',
   'retrieve of an id not listed: model_not_found');

is($r->{embeddings}{result}{dims}, 3, 'embeddings: the vector');

is($r->{'bad-key'}{error}, 'AuthenticationError',
   'a wrong key: AuthenticationError');
is($r->{'bad-key'}{status}, 401, 'a wrong key: 401');
is($r->{'bad-key'}{code}, 'invalid_api_key', 'a wrong key: invalid_api_key');

is($r->{'bad-model'}{error}, 'PermissionDeniedError',
   'a model not allowed: PermissionDeniedError');
is($r->{'bad-model'}{code}, 'model_not_allowed',
   'a model not allowed: model_not_allowed');

$r = sdk($l->token('tight'), 'over-budget');
is($r->{'over-budget'}{error}, 'RateLimitError',
   'over the budget: RateLimitError');
is($r->{'over-budget'}{status}, 429, 'over the budget: 429');

my @u = grep { $_->{client} eq 'agent' } $l->usage_log;
is(scalar(@u), 6, 'six usage lines: four calls, the list and a model');
my ($s) = grep { $_->{stream} } @u;
is($s && $s->{usage_source}, 'stream', 'the SDK stream: usage from it');
is(Airlock::LLM::leaks(join '', map { $t->read_file($_) // '' }
                                qw(usage.log access.log error.log)),
   0, 'no key in any log');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
