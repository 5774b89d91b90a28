#!/usr/bin/perl

# ngx_http_airlock_llm_module: OpenRouter's "provider" object (provider
# routing) picks or filters the providers that serve a model, each at its
# own price, so "order", "only", "ignore", "sort" by throughput and the
# like can have the call served, and billed, by a provider dearer than the
# policy's prices.  A client with a dollar budget may send only members
# that cannot raise the price ("sort": "price", "max_price", the defaults)
# unless a "max_price" holds the prompt and completion prices at most at
# the policy's, and the per-request and per-image prices at 0 (the
# policy's prices have none): then the router serves at those prices or
# not at all, so the privacy filters ("data_collection": "deny", "zdr")
# stay open to it.
# Clients without a dollar budget may send anything.  The member list is
# unit-tested in tests/unit/llm.c.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my %tok = (spender => $l->setup_spender('al-spender-token-474849474849'));

$t->run;

plan tests => 17;

my $n = scalar $l->provider_requests;

my $r = $l->chat(token => $tok{spender},
                 fields => { provider => { order => [ 'dear-provider' ],
                                           allow_fallbacks => \0 } });
is($r->{status}, 400, 'a budgeted client pinning a provider: 400');
like($r->{body}, qr/max_price/, '... saying how it may pass');
like($r->{body}, qr/dollar budget/, '... and why');

$r = $l->chat(token => $tok{spender},
              fields => { provider => { only => [ 'dear-provider' ] } });
is($r->{status}, 400, '"only": 400');

$r = $l->chat(token => $tok{spender},
              fields => { provider => { sort => 'throughput' } });
is($r->{status}, 400, '"sort": "throughput": 400');

$r = $l->chat(token => $tok{spender},
              fields => { provider => { data_collection => 'deny' } });
is($r->{status}, 400, '"data_collection": "deny" alone: 400');

$r = $l->chat(token => $tok{spender},
              fields => { provider => { order => [ 'dear-provider' ],
                                        max_price => { prompt => 1,
                                                       completion => 1 } } });
is($r->{status}, 400, 'a max_price over the policy\'s prices: 400');
is(scalar $l->provider_requests, $n, '... none of them sent');

$r = $l->chat(token => $tok{spender},
              fields => { provider => { zdr => \1,
                                        max_price => { prompt => 0.15,
                                                       completion => 0.6 } } });
is($r->{status}, 400,
   'routing beside a max_price with no request and image price: 400');
like($r->{body}, qr/request and image 0/, '... saying they must be 0');

$r = $l->chat(token => $tok{spender},
              fields => { provider => { order => [ 'fee-provider' ],
                                        max_price => { prompt => 0.15,
                                                       completion => 0.6,
                                                       request => 0.01,
                                                       image => 0 } } });
is($r->{status}, 400, '... a per-request price above 0: 400');

$r = $l->chat(token => $tok{spender},
              fields => { provider => { sort => 'price',
                                        allow_fallbacks => \1 } });
is($r->{status}, 200, '"sort": "price" passes');

$r = $l->chat(token => $tok{spender},
              fields => { provider => { data_collection => 'deny',
                                        zdr => \1,
                                        max_price => { prompt => 0.15,
                                                       completion => 0.6,
                                                       request => 0,
                                                       image => 0 } } });
is($r->{status}, 200, 'privacy filters beside a max_price at the prices pass');
is($l->last_provider_request->{body}{provider}{data_collection}, 'deny',
   '... sent as written');

$r = $l->chat(token => $tok{spender},
              fields => { provider => { max_price => { prompt => 0.1,
                                                       completion => 0.5 } } });
is($r->{status}, 200, 'a max_price alone passes');

$r = $l->chat(token => $l->token('agent'),
              fields => { provider => { order => [ 'dear-provider' ],
                                        allow_fallbacks => \0 } });
is($r->{status}, 200, 'a client without a dollar budget may route');
is_deeply($l->last_provider_request->{body}{provider}{order},
          [ 'dear-provider' ], '... sent as written');

$t->stop;
