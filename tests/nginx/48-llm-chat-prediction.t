#!/usr/bin/perl

# ngx_http_airlock_llm_module: OpenAI's Predicted Outputs ("prediction" on
# chat completions) bill the prediction's tokens that the answer does not
# use as completion tokens, beyond what max_tokens asks for (the API
# takes no max_completion_tokens beside it), and the prediction is no
# prompt text the gateway counts: a call's reservation does not cover
# them, so calls admitted together could take a budget past its limit by
# the length of their predictions.  A client with a token or dollar
# budget may not send one (400, nothing sent); null passes, and so do
# clients without a budget.  The member's reading is unit-tested in
# tests/unit/llm.c.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my %tok = (spender => $l->setup_spender('al-spender-token-484949484949'));

$t->run;

plan tests => 7;

my $prediction = { type => 'content', content => 'x = 1;' x 2000 };
my $n = scalar $l->provider_requests;

my $r = $l->chat(token => $tok{spender},
                 fields => { prediction => $prediction, max_tokens => 1 });
is($r->{status}, 400, 'a dollar budget sending a prediction: 400');
like($r->{body}, qr/prediction/, '... saying why');

$r = $l->chat(token => $l->token('tight'),
              fields => { prediction => $prediction });
is($r->{status}, 400, 'a token budget: 400');
is(scalar $l->provider_requests, $n, '... neither sent');

$r = $l->chat(token => $tok{spender}, fields => { prediction => undef });
is($r->{status}, 200, '"prediction": null passes');

$r = $l->chat(token => $l->token('agent'),
              fields => { prediction => $prediction });
is($r->{status}, 200, 'a client without a budget may send one');
is($l->last_provider_request->{body}{prediction}{type}, 'content',
   '... sent as written');

$t->stop;
