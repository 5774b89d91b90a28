#!/usr/bin/perl

# An openai-compatible entry may be a router (LiteLLM's proxy) in front of
# the provider.  It relays the provider's own response headers under
# "llm_provider-" (llm_provider-openai-organization,
# llm_provider-x-ratelimit-remaining-tokens, ...) and describes the key
# the gateway holds in x-litellm-key-* (its spend, budget and limits),
# and names the provider account it called in x-litellm-model-api-base:
# facts of the key every client shares, as the rate-limit and
# organization headers the gateway removes are.  They are removed too,
# on JSON answers, streams and errors alike; the router's other headers
# pass.

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

plan tests => 3 * 4 + 1;

my %relayed = (
    'llm_provider-openai-organization' => 'org-secretaccount',
    'llm_provider-openai-project' => 'proj_secretproject',
    'llm_provider-x-ratelimit-remaining-tokens' => '987654',
    'llm_provider-anthropic-organization-id' => 'aaaa-secret-org',
    'x-litellm-key-spend' => '123.45',
    'x-litellm-key-max-budget' => '1000.0',
    'x-litellm-key-remaining-tokens-gpt-4o-mini' => '55555',
    'x-litellm-model-api-base' => 'https://secretco.openai.azure.com',
    'x-litellm-response-duration-ms' => '12',
);

for my $c (['JSON', {}], ['stream', { stream => JSON::PP::true }],
           ['error', { status => 400 }])
{
    my ($name, $f) = @$c;
    my %script = (headers => \%relayed);
    $script{status} = $f->{status} if $f->{status};

    $l->script(\%script);
    my $r = $l->chat(token => $l->token('tight'),
                     fields => $f->{stream} ? { stream => $f->{stream} }
                                            : {});

    is($r->{status}, $f->{status} // 200, "$name: answered");

    my @left = grep { $r->{raw} =~ /^\Q$_\E:/mi }
               grep { $_ ne 'x-litellm-response-duration-ms' } keys %relayed;
    is(join(',', sort @left), '',
       "$name: no relayed header of the provider's account or key");
    unlike($r->{raw}, qr/secret|987654|123\.45|55555/,
           "$name: none of their values");
    like($r->{raw}, qr/^x-litellm-response-duration-ms: 12\r?$/mi,
         "$name: the router's other headers pass");
}

is($t->error_log_check, '', 'no alerts or sanitizer reports');
