#!/usr/bin/perl

# ngx_http_airlock_llm_module: a model's long_context prices.  A call
# that reports more input tokens than above_input_tokens is charged all
# of its tokens at those prices (cost_usd in the usage log, the cost
# metric, the dollar budget); one at or under the threshold at the
# model's own.  A dollar budget reserves a request at the long_context
# prices when its prompt may be above the threshold (216): a long prompt
# the model's own prices would admit is refused when the long_context
# ones do not fit, and a call charged its reservation (no usage came
# back) is charged at the prices its prompt estimate falls under.

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

my $spender = 'al-spender-token-FAKE-000111';
my $small = 'al-small-token-FAKE-222333';
# spender ($5 a day) and small ($0.001), gpt-4o-mini's price tenfold
# above 1000 input tokens
$l->setup_long_context(spender => $spender, small => $small);
$t->run;
plan tests => 9;

my $n = 0;

sub call {
    my ($token, $script, $prompt) = @_;
    return $l->scripted_call(++$n, $script, token => $token,
                             prompt => $prompt // 'Hi');
}

# at the threshold: the model's own prices
# 1000 * 0.15 + 10 * 0.6 = 156 microdollars
my ($r, $u) = call($spender, { usage => { prompt => 1000, completion => 10 } });
is($r->{status}, 200, 'a call at the threshold: answered');
is($u->{cost_usd}, 0.000156, 'at the threshold: the model\'s own prices')
    or diag(explain $u);

# one token above: every token at the long_context prices
# 1001 * 1.5 + 10 * 6 = 1561.5 microdollars
($r, $u) = call($spender, { usage => { prompt => 1001, completion => 10 } });
is($u->{cost_usd}, 0.0015615, 'above it: all tokens at long_context prices')
    or diag(explain $u);

# the cost metric adds them
my $m = parse_response(http_get('/metrics', port => 8082))->{body} // '';
my ($usd) = $m =~ /^airlock_llm_cost_usd_total\{provider="openai",client="spender",model="gpt-4o-mini"\} ([0-9.e-]+)$/m;
ok(defined $usd && abs($usd - 0.0017175) < 1e-12,
   'the cost metric: both calls at their prices') or diag($m);

# a call charged its reservation (a JSON answer without usage): at the
# prices of its prompt estimate, 2000 tokens (8000 bytes) and the output
# cap of 100: 2000 * 1.5 + 100 * 6 = 3600 microdollars
($r, $u) = call($spender, { no_usage => 1 }, 'x' x 8000);
is($u->{usage_source}, 'estimated', 'no usage: estimated');
ok($u->{prompt_tokens} > 1000
   && abs($u->{cost_usd} - ($u->{prompt_tokens} * 1.5 + 100 * 6) / 1e6)
      < 1e-12,
   'charged its reservation at the long_context prices') or diag(explain $u);

# small has $0.001 a day: a short prompt fits, 100 tokens * 0.15 + 100 *
# 0.6 = 75 microdollars; a long one does not at the long_context prices
# (2000 * 1.5 + 100 * 6 = 3600), though at the model's own it would
# (2000 * 0.15 + 100 * 0.6 = 360)

($r, $u) = call($small, {}, 'x' x 400);
is($r->{status}, 200, 'a short prompt within the small budget: answered');

$r = $l->chat(token => $small, prompt => 'x' x 8000);
is($r->{status}, 429, 'a long prompt over it at the long_context prices: '
   . '429');
like($r->{body}, qr/insufficient_quota/, '... insufficient_quota');
