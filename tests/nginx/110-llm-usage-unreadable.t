#!/usr/bin/perl

# ngx_http_airlock_llm_module: a usage in which the gateway can read no
# token at all (every count 0, or written as decimals, strings, negative
# numbers, under names of another API, an empty object) is no usage: a
# JSON answer with it is charged its reservation (the prompt estimate and
# the output cap), as one without usage is, and a stream that ends with
# it is charged the estimate, as one that ends without usage is.  Before,
# such a call was charged nothing, in the usage log and in the budget: a
# provider (a local server, a translator in front of another API) that
# writes its counts another way served every call for free.

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
$l->setup(tight_tpm => 1000000);
$t->run;
plan tests => 13;

my $tok = $l->token('tight');           # max_tokens 20
my $true = JSON::PP::true;
my $n = 0;
my ($r, $u);

# the prompt estimate of this body: four bytes a token
my $prompt = 'x' x 400;

sub call {
    my ($script, %o) = @_;
    return $l->scripted_call(++$n, $script, token => $tok, prompt => $prompt,
                             %o);
}

# a usage that counts: as the provider says

($r, $u) = call({ usage => { prompt => 7, completion => 2 } });
is($u->{total_tokens}, 9, 'a readable usage is taken');

# JSON answers: charged the reservation, 100 tokens of prompt and the cap

for my $c ([ 'every count 0', { usage => { prompt => 0, completion => 0 } } ],
           [ 'decimals', { usage => { prompt => 7.5, completion => 2.5 } } ],
           [ 'strings', { usage => { prompt => '7', completion => '2' } } ],
           [ 'negative', { usage => { prompt => -7, completion => -2 } } ])
{
    ($r, $u) = call($c->[1]);
    is($r->{status}, 200, "JSON, $c->[0]: 200");
    ok($u->{completion_tokens} == 20 && $u->{prompt_tokens} >= 100
       && $u->{usage_source} eq 'estimated',
       "... charged its reservation") or diag(explain $u);
}

# streams: charged the estimate (no cap: the stream ended)

($r, $u) = call({ usage => { prompt => 0, completion => 0 } },
                fields => { stream => $true });
ok($u->{prompt_tokens} >= 100 && $u->{completion_tokens} >= 1
   && $u->{usage_source} eq 'estimated',
   'chat stream, every count 0: charged the estimate') or diag(explain $u);

($r, $u) = call({ usage => { prompt => 7.5, completion => 2.5 } },
                fields => { stream => $true });
ok($u->{prompt_tokens} >= 100 && $u->{completion_tokens} >= 1
   && $u->{usage_source} eq 'estimated',
   'chat stream, decimals: charged the estimate') or diag(explain $u);

($r, $u) = call({ usage => { prompt => 0, completion => 0 } },
                anthropic => 1, fields => { stream => $true });
ok($u->{prompt_tokens} >= 100 && $u->{completion_tokens} >= 1
   && $u->{usage_source} eq 'estimated',
   'anthropic stream, every count 0: charged the estimate')
    or diag(explain $u);

# the budget was charged what the log says

$r = $l->chat(token => $tok, prompt => 'Hi');
my $spent = 0;
$spent += $_->{total_tokens} for $l->usage_log;
$u = $l->last_usage(++$n);
ok($spent > 9 + 4 * 120, 'the log counts every call') or diag($spent);
