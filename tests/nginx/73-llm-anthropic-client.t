#!/usr/bin/perl

# ngx_http_airlock_llm_module with the official @anthropic-ai/sdk package
# (tests/llm-client/package-lock.json), pointed at the gateway the way
# docs/nginx.md says: baseURL .../v1/proxy/anthropic, the client's Airlock
# token as its API key.  The SDK appends /v1/messages to its base URL; the
# gateway takes that path as /messages.  Skipped (failed under CI) when
# node or npm is missing or the package cannot be installed.

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

my $dir = $l->sdk_install('anthropic-client.mjs', '@anthropic-ai/sdk');

$l->setup(anthropic_fields => "    aliases:\n      haiku: claude-3-5-haiku\n");
$t->run;

plan tests => 16;

sub sdk {
    my ($token, @steps) = @_;
    return $l->sdk_run($dir, 'anthropic-client.mjs', {
        AIRLOCK_BASE_URL => 'http://127.0.0.1:' . $t->port(8080)
            . '/v1/proxy/anthropic',
        AIRLOCK_API_KEY => $token,
    }, @steps);
}

my $r = sdk($l->token('agent'), qw(messages stream bad-model));

ok($r->{messages}{ok}, 'messages: the SDK gets an answer')
    or diag(encode_json($r->{messages} // {}));
is($r->{messages}{result}{text}, 'Hello from fixture', 'messages: the text');
ok(($r->{messages}{result}{usage}{input_tokens} // 0) > 0,
   'messages: the usage');

ok($r->{stream}{ok}, 'stream: the SDK reads the stream')
    or diag(encode_json($r->{stream} // {}));
is($r->{stream}{result}{text}, 'Hello from fixture', 'stream: the text');

is($r->{'bad-model'}{status}, 403, 'a model not allowed: 403 from the SDK');

my $p = $l->last_provider_request;
is($p->{path}, '/v1/messages', 'the provider gets /v1/messages');
is($p->{headers}{'x-api-key'}, $Airlock::LLM::ANTHROPIC_KEY,
   'the provider gets the provider key, not the client token');

my @u = grep { $_->{client} eq 'agent' } $l->usage_log;
is(scalar @u, 2, 'two usage lines');
is($u[-1]{endpoint}, 'messages', 'usage line: messages');

# the gateway's own list (tests/nginx/142-llm-model-list.t), paged by the
# SDK one model at a time
$r = sdk($l->token('agent'), qw(models retrieve retrieve-missing));
ok($r->{models}{ok}, 'models: the SDK pages the list')
    or diag(encode_json($r->{models} // {}));
is_deeply($r->{models}{result}{ids}, [ 'claude-3-5-haiku', 'haiku' ],
          'models: the ids, the alias too');

# models.retrieve(): the same list (tests/nginx/145-llm-model-get.t)
ok($r->{retrieve}{ok}, 'retrieve: the SDK gets the model')
    or diag(encode_json($r->{retrieve} // {}));
is_deeply($r->{retrieve}{result}, { id => 'claude-3-5-haiku',
                                    type => 'model' },
          'retrieve: the model');
is($r->{'retrieve-missing'}{error}, 'NotFoundError',
   'retrieve of an id not listed: NotFoundError');
is($r->{'retrieve-missing'}{status}, 404, '... 404');
