#!/usr/bin/perl

# ngx_http_airlock_llm_module: the anthropic-beta header passes to the
# provider, and one beta is billed above the policy's prices: the 1M-token
# context window (context-1m-...), whose prompts over 200K tokens cost
# twice the input price and 1.5 times the output price.  A client with a
# dollar budget that names it is refused (400, nothing sent), as a dearer
# service_tier is; other betas, and clients without a dollar budget,
# pass.  The header's reading is unit-tested in tests/unit/llm_cache.c.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my %tok = (spender => 'al-spender-token-333444555666');
my %sha = map { $_ => $l->proxy->token_sha256($tok{$_}) } keys %tok;

$l->setup(
    clients => qq{  spender: { token_sha256: "$sha{spender}" }\n},
    anthropic_fields => "    prices:\n"
        . "      claude-3-5-haiku: { input: 3, output: 15 }\n",
    anthropic_clients => "      spender:\n        usd_per_day: 5\n"
        . "        default_max_tokens: 100\n",
);

$t->run;

plan tests => 7;

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

$t->stop;
