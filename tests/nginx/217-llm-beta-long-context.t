#!/usr/bin/perl

# ngx_http_airlock_llm_module: the 1M-token context window (an
# anthropic-beta naming context-1m-...) is billed at long-context prices
# above 200K input tokens.  A client with a dollar budget may ask for it
# when the model has long_context prices, which count those calls (and
# the reservation, 216), as it may on any kind of entry; it is still
# refused (400, nothing sent) for a model without them, and fast mode,
# or a header that is no plain list of beta names, is refused whatever
# the prices (76, 200).  Before, the 1M context was refused for every
# budgeted client, long_context prices or not.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my $spender = $l->setup_spender('al-spender-token-FAKE-888999',
    openai_fields => "    prices:\n"
        . "      gpt-4o-mini:\n"
        . "        input: 0.15\n"
        . "        output: 0.6\n"
        . "        long_context: { above_input_tokens: 1000, input: 0.3, "
        . "output: 0.9 }\n"
        . "      gpt-4o: { input: 2.5, output: 10 }\n",
    openai_clients => "      spender:\n"
        . "        models: [gpt-4o-mini, gpt-4o]\n"
        . "        usd_per_day: 5\n        default_max_tokens: 100\n",
    anthropic_fields => "    prices:\n"
        . "      claude-3-5-haiku:\n"
        . "        input: 3\n"
        . "        output: 15\n"
        . "        long_context: { above_input_tokens: 200000, input: 6, "
        . "output: 22.5 }\n",
    anthropic_clients => "      spender:\n        usd_per_day: 5\n"
        . "        default_max_tokens: 100\n");
$t->run;
plan tests => 10;

my $beta = [ [ 'anthropic-beta',
               'prompt-caching-2024-07-31, context-1m-2025-08-07' ] ];

my $r = $l->messages(token => $spender, headers => $beta);
is($r->{status}, 200, 'anthropic, a model with long_context prices: the '
   . '1M context passes') or diag($r->{body});
my $p = $l->last_provider_request;
like(join(' ', map { ref $_ ? @$_ : $_ } %{$p->{headers} // {}}),
     qr/context-1m-2025-08-07/i, '... with its header')
    or diag(explain $p);

# the call is charged at the prices its usage falls under: 1500 tokens
# are above 1000, all at the long_context prices

$l->script({ usage => { prompt => 1500, completion => 10 } });
$r = $l->chat(token => $spender, headers => $beta);
$l->script();
is($r->{status}, 200, 'openai-style entry, a model with long_context '
   . 'prices: passes');
my $u = $l->last_usage(2);
is($u->{cost_usd}, 0.000459, '... charged at the long_context prices')
    or diag(explain $u);

my $n = scalar $l->provider_requests;

$r = $l->chat(token => $spender, model => 'gpt-4o', headers => $beta);
is($r->{status}, 400, 'a model without long_context prices: 400');
like($r->{body}, qr/context-1m/, '... saying why');

$r = $l->chat(token => $spender,
              headers => [ [ 'anthropic-beta',
                             'context-1m-2025-08-07, fast-mode-2026-02-01' ]
                         ]);
is($r->{status}, 400, 'the 1M context with fast mode: 400');

$r = $l->chat(token => $spender,
              headers => [ [ 'anthropic-beta', 'context-1m-2025-08-07' ],
                           [ 'anthropic-beta', 'fast-mode-2026-02-01' ] ]);
is($r->{status}, 400, 'fast mode in a second header: 400');

$r = $l->chat(token => $spender,
              headers => [ [ 'anthropic-beta', '["context-1m-2025-08-07"]' ]
                         ]);
is($r->{status}, 400, 'a header that is no plain list: 400');
is(scalar $l->provider_requests, $n, '... none of them sent');
