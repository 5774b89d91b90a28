#!/usr/bin/perl

# ngx_http_airlock_llm_module: the completions endpoint takes a batch of
# prompts ("prompt" a list of strings, or of token lists) and writes an
# answer to each, up to max_tokens (times n, or best_of) each, all billed
# to the one call: the output reserved is the cap times the prompts, so a
# call whose batch cannot fit a client's budget is refused up front, not
# charged past it.  A list of token ids is one prompt.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

# tight: 1000 tokens a minute, max_tokens 20 (clamped)
$l->setup(tight_tpm => 1000);
$t->run;

plan tests => 6;

sub complete {
    my ($prompt, %f) = @_;
    return $l->request('POST', '/v1/proxy/openai/completions',
                       token => $l->token('tight'),
                       body => { model => 'gpt-4o-mini', prompt => $prompt,
                                 max_tokens => 20, %f });
}

my $n = scalar $l->provider_requests;

my $r = complete([ map { "p$_" } 1 .. 60 ]);
is($r->{status}, 429, 'a batch of 60 prompts at 20 tokens each: over 1000');
is(scalar $l->provider_requests, $n, '... not sent');

$r = complete([ map { [ $_, $_ + 1 ] } 1 .. 60 ]);
is($r->{status}, 429, 'a batch of 60 token lists: over 1000');

$r = complete([ map { "p$_" } 1 .. 30 ], n => 2);
is($r->{status}, 429, '30 prompts with n 2: over 1000');

$r = complete([ 1, 2, 3 ]);
is($r->{status}, 200, 'one prompt of token ids passes');

$r = complete([ map { "p$_" } 1 .. 20 ]);
is($r->{status}, 200, '20 prompts: 400 fits');

$t->stop;
