#!/usr/bin/perl

# ngx_http_airlock_llm_module: the anthropic-beta header passes to the
# provider, and one beta is billed above the policy's prices: the 1M-token
# context window (context-1m-...), whose prompts over 200K tokens cost
# twice the input price and 1.5 times the output price.  A client with a
# dollar budget that names it is refused (400, nothing sent), as a dearer
# service_tier is; other betas, and clients without a dollar budget,
# pass.  So is fast mode (the fast-mode-... beta, and "speed": "fast" in
# the body, which a router behind an openai-compatible entry reads too),
# billed at several times the model's prices.  The header is read on
# every kind of entry: a router behind an openai-compatible one (LiteLLM's
# proxy) passes it on to Anthropic.  The header's reading is
# unit-tested in tests/unit/llm_cache.c, the body's in tests/unit/llm.c.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my %tok = (spender => $l->setup_spender('al-spender-token-333444555666',
    anthropic_fields => "    prices:\n"
        . "      claude-3-5-haiku: { input: 3, output: 15 }\n",
    anthropic_clients => "      spender:\n        usd_per_day: 5\n"
        . "        default_max_tokens: 100\n"));

$t->run;

plan tests => 22;

my $n = scalar $l->provider_requests;

my $r = $l->messages(token => $tok{spender},
                     headers => [ [ 'anthropic-beta',
                                    'prompt-caching-2024-07-31, '
                                    . 'context-1m-2025-08-07' ] ]);
is($r->{status}, 400, 'a budgeted client asking for the 1M context: 400');
like($r->{body}, qr/invalid_request_error/, '... in Anthropic\'s format');
like($r->{body}, qr/context-1m/, '... saying why');
is(scalar $l->provider_requests, $n, '... nothing sent');

$r = $l->messages(token => $tok{spender},
                  headers => [ [ 'Anthropic-Beta', 'Context-1M-2025-08-07' ] ]);
is($r->{status}, 400, 'in any case');

$r = $l->messages(token => $tok{spender},
                  headers => [ [ 'anthropic-beta',
                                 'prompt-caching-2024-07-31' ] ]);
is($r->{status}, 200, 'another beta passes');

$r = $l->messages(token => $l->token('agent'),
                  headers => [ [ 'anthropic-beta', 'context-1m-2025-08-07' ] ]);
is($r->{status}, 200, 'a client without a dollar budget may ask for it');

# routers behind an OpenAI-style entry (LiteLLM's proxy, to Claude) pass
# the header on to Anthropic: the same refusal there

$n = scalar $l->provider_requests;

$r = $l->chat(token => $tok{spender},
              headers => [ [ 'anthropic-beta', 'context-1m-2025-08-07' ] ]);
is($r->{status}, 400, 'the 1M context on an OpenAI-style entry: 400');

$r = $l->chat(token => $tok{spender},
              headers => [ [ 'anthropic-beta', 'fast-mode-2026-02-01' ] ]);
is($r->{status}, 400, 'fast mode on an OpenAI-style entry: 400');
is(scalar $l->provider_requests, $n, '... neither sent');

$r = $l->chat(token => $l->token('agent'),
              headers => [ [ 'anthropic-beta', 'context-1m-2025-08-07' ] ]);
is($r->{status}, 200, '... a client without a dollar budget may ask there');

# fast mode: several times the prices

$n = scalar $l->provider_requests;

$r = $l->messages(token => $tok{spender},
                  headers => [ [ 'anthropic-beta', 'fast-mode-2026-02-01' ] ],
                  fields => { speed => 'fast' });
is($r->{status}, 400, 'a budgeted client asking for fast mode: 400');
like($r->{body}, qr/fast/, '... saying why');

$r = $l->messages(token => $tok{spender},
                  headers => [ [ 'anthropic-beta', 'FAST-MODE-2026-02-01' ] ]);
is($r->{status}, 400, 'the fast-mode beta alone, in any case: 400');

$r = $l->messages(token => $tok{spender}, fields => { speed => 'fast' });
is($r->{status}, 400, '"speed": "fast" alone: 400');

$r = $l->chat(token => $tok{spender}, fields => { speed => 'fast' });
is($r->{status}, 400, '"speed": "fast" on an OpenAI-style entry: 400');
is(scalar $l->provider_requests, $n, '... none of them sent');

$r = $l->messages(token => $tok{spender}, fields => { speed => 'standard' });
is($r->{status}, 200, '"speed": "standard" passes');

$r = $l->messages(token => $l->token('agent'),
                  headers => [ [ 'anthropic-beta', 'fast-mode-2026-02-01' ] ],
                  fields => { speed => 'fast' });
is($r->{status}, 200, 'a client without a dollar budget may ask for it');

# US-only inference: 1.1 times the prices

$r = $l->messages(token => $tok{spender}, fields => { inference_geo => 'us' });
is($r->{status}, 400, 'a budgeted client asking for US-only inference: 400');

$r = $l->messages(token => $tok{spender},
                  fields => { inference_geo => 'global' });
is($r->{status}, 200, '"inference_geo": "global" passes');

$r = $l->messages(token => $l->token('agent'),
                  fields => { inference_geo => 'us' });
is($r->{status}, 200, 'a client without a dollar budget may ask for it');

$t->stop;
