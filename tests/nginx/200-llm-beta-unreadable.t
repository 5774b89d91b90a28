#!/usr/bin/perl

# ngx_http_airlock_llm_module: a client with a dollar budget may not name
# the priced betas (context-1m, fast-mode) in anthropic-beta, and the
# header passes on to routers behind an entry, which read it their own
# way: LiteLLM's proxy splits it on ',' and strips each item as Python
# does (a VT, an FF, an NBSP go as a space does), and takes a JSON list
# too (["context-1m-..."], escapes and all).  A value that is not a plain
# list of beta names is taken for a priced one: refused for such a client,
# passed for others.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my $spender = $l->setup_spender('al-spender-token-777888999000');

$t->run;

plan tests => 9;

my $n = scalar $l->provider_requests;
my $r;

for my $c (["\xa0context-1m-2025-08-07", 'an NBSP before the name'],
           ["a-1,\x0bcontext-1m-2025-08-07", 'a VT before the name'],
           ["\x1ffast-mode-2026-02-01", 'a unit separator before fast-mode'],
           ['["context-1m-2025-08-07"]', 'a JSON list'],
           ['["\u0063ontext-1m-2025-08-07"]', 'a JSON list with escapes'])
{
    $r = $l->chat(token => $spender,
                  headers => [ [ 'anthropic-beta', $c->[0] ] ]);
    is($r->{status}, 400, "a dollar budget: $c->[1] refused");
}

is(scalar $l->provider_requests, $n, 'none reached the provider');

$r = $l->chat(token => $spender,
              headers => [ [ 'anthropic-beta',
                             'prompt-caching-2024-07-31,  '
                             . "token-efficient-tools-2025-02-19,\tx_y.z" ] ]);
is($r->{status}, 200, 'a dollar budget: a plain list of other betas passes');

$r = $l->chat(token => $l->token('agent'),
              headers => [ [ 'anthropic-beta', '["context-1m-2025-08-07"]' ] ]);
is($r->{status}, 200, 'no dollar budget: any value passes');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
