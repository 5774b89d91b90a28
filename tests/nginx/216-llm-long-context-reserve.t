#!/usr/bin/perl

# ngx_http_airlock_llm_module: a dollar budget reserves a call at a
# model's long_context prices whenever its prompt may be above their
# above_input_tokens: the prompt estimate counts four bytes a token, and
# a token is at least a byte, so a prompt estimated under the threshold
# may still be over it four times.  Before, such a call was reserved at
# the model's own prices and charged the long_context ones when its
# usage came back above the threshold: a budget admitted calls it could
# not pay for, and as many at once as it admitted.  The charge is as
# before: the usage the provider reports, at the prices it falls under.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my $spender = 'al-spender-token-FAKE-444555';
my $small = 'al-small-token-FAKE-666777';
# spender ($5 a day) and small ($0.001), gpt-4o-mini's price tenfold
# above 1000 input tokens
$l->setup_long_context(spender => $spender, small => $small);
$t->run;
plan tests => 6;

my $n = 0;

sub call {
    my ($token, $script, $prompt) = @_;
    return $l->scripted_call(++$n, $script, token => $token,
                             prompt => $prompt);
}

# small has $0.001 a day.  800 bytes: an estimate of about 200 tokens,
# which even at a byte a token stays under 1000: reserved at the model's
# own prices, 200 * 0.15 + 100 * 0.6 = 90 microdollars

my ($r, $u) = call($small, {}, 'x' x 800);
is($r->{status}, 200, 'a prompt that cannot reach the threshold: '
   . 'reserved at the model\'s prices, answered');

# 2000 bytes: an estimate of about 500 tokens, under 1000, but the
# prompt may be up to 2000: reserved at the long_context prices, 500 *
# 1.5 + 100 * 6 = 1350 microdollars, over the budget (at the model's
# own it would be 135)

$r = $l->chat(token => $small, prompt => 'x' x 2000);
is($r->{status}, 429, 'a prompt that may be above the threshold: '
   . 'reserved at the long_context prices, over the budget: 429');
like($r->{body}, qr/insufficient_quota/, '... insufficient_quota');

# the same prompt whose usage comes back above the threshold: the
# reservation held it

($r, $u) = call($spender, { usage => { prompt => 1500, completion => 10 } },
                'x' x 2000);
is($r->{status}, 200, 'spender: answered');
is($u->{cost_usd}, 0.0023100, 'charged its usage at the long_context '
   . 'prices') or diag(explain $u);

# and one that comes back under it: charged at the model's own prices

($r, $u) = call($spender, { usage => { prompt => 500, completion => 10 } },
                'x' x 2000);
is($u->{cost_usd}, 0.000081, 'under the threshold: the model\'s own '
   . 'prices') or diag(explain $u);
