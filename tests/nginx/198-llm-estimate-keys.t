#!/usr/bin/perl

# ngx_http_airlock_llm_module: the names of a JSON schema's properties
# (a tool's parameters, structured output's schema) are sent to the model
# as prompt and billed as input tokens, as their descriptions are, so the
# prompt estimate counts the keys of the prompt's members as well as
# their values: a call whose property names alone are far over the
# client's tokens_per_minute is refused up front, as one whose
# descriptions are.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

$l->setup;
$t->run;

plan tests => 7;

# tokens_per_minute 60, max_tokens 20
my $tight = $l->token('tight');
my ($r, $n);

# 100 property names of 40 bytes: about 1,000 tokens of prompt
my %props = map { (sprintf('field_%034d', $_) => {}) }
            1 .. 100;
my $schema = { properties => \%props };

$n = $l->provider_requests;

$r = $l->chat(token => $tight, fields => { tools => [ {
    type => 'function', function => { name => 'f', parameters => $schema }
} ] });
is($r->{status}, 429, 'a tool whose property names are long: refused');
like($r->{body}, qr/tokens/, 'by the token budget');

$r = $l->chat(token => $tight, fields => { response_format => {
    type => 'json_schema',
    json_schema => { name => 's', schema => $schema }
} });
is($r->{status}, 429, 'a response_format schema of long property names: '
   . 'refused');

$r = $l->messages(token => $tight, fields => { tools => [ {
    name => 'f', input_schema => $schema
} ] });
is($r->{status}, 429, 'an Anthropic tool of long property names: refused');

is(scalar $l->provider_requests, $n, 'none reached the provider');

# the same schema, short: within the budget
my %small = (a => {});
$r = $l->chat(token => $tight, fields => { tools => [ {
    type => 'function',
    function => { name => 'f', parameters => { type => 'object',
                                                properties => \%small } }
} ] });
is($r->{status}, 200, 'a tool of a short property name: served');

is($t->error_log_check, '', 'no alerts or sanitizer reports');
