#!/usr/bin/perl

# ngx_http_airlock_llm_module: the 1M-token context window (an
# anthropic-beta naming context-1m-...) passes a dollar budget only when
# every model that may serve the call has long_context prices (217):
# with a fallback, the model the fallback would be asked for too, since
# the header goes there with the call and a long prompt served there
# would be charged that model's own prices.  A call that cannot fall
# back is judged by its own model alone.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my $spender = 'al-spender-token-FAKE-121314';
my $sha = $l->proxy->token_sha256($spender);

my $entries = <<'Y';
  - name: primary
    prefix: /v1/proxy/primary
    max_body_bytes: 65536
    provider: openai
    upstream: "http://127.0.0.1:%%PORT_8081%%/v1"
    secret: openai_key
    models: [gpt-4o-mini]
    aliases: { long: gpt-4o-mini, short: gpt-4o-mini, none: gpt-4o-mini }
    prices:
      gpt-4o-mini:
        input: 0.15
        output: 0.6
        long_context: { above_input_tokens: 1000, input: 0.3, output: 0.9 }
    fallback: backup
    clients:
      spender: { usd_per_day: 5, default_max_tokens: 100 }
  - name: backup
    prefix: /v1/proxy/backup
    max_body_bytes: 65536
    provider: openai
    upstream: "http://127.0.0.1:%%PORT_8083%%/v1"
    secret: openai_key
    models: [gpt-4o, gpt-4o-nano]
    aliases: { long: gpt-4o, short: gpt-4o-nano }
    prices:
      gpt-4o:
        input: 2.5
        output: 10
        long_context: { above_input_tokens: 1000, input: 5, output: 15 }
      gpt-4o-nano: { input: 0.1, output: 0.4 }
    clients:
      spender: { default_max_tokens: 100 }
Y

my $locations = Airlock::LLM::fallback_locations(names => ['primary']);

$l->setup(clients => qq{  spender: { token_sha256: "$sha" }\n},
          openai_clients => $entries, locations => $locations);
$l->start_provider(8083);
$t->run;

plan tests => 4;

my $beta = [ [ 'anthropic-beta', 'context-1m-2025-08-07' ] ];

sub call {
    my ($model) = @_;
    return $l->request('POST', '/v1/proxy/primary/chat/completions',
                       token => $spender, headers => $beta, body => {
                           model => $model,
                           messages => [ { role => 'user', content => 'Hi' } ],
                       });
}

is(call('long')->{status}, 200, 'the fallback\'s model has long_context '
   . 'prices too: passes');

my $r = call('short');
is($r->{status}, 400, 'the fallback\'s model has none: 400');
like($r->{body}, qr/context-1m/, '... saying why');

# "none" names no model of the fallback: the call cannot fall back
is(call('none')->{status}, 200, 'a call that cannot fall back: its own '
   . 'model\'s prices decide');
