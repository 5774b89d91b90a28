#!/usr/bin/perl

# ngx_http_airlock_llm_module: the JSON schema of structured output (chat's
# "response_format", the Responses API's "text") is sent to the model as
# prompt and billed as input tokens, as a tool's schema is, so the prompt
# estimate counts it: a call whose schema alone is far over the client's
# tokens_per_minute is refused up front, whichever member carries it.

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

plan tests => 5;

# tokens_per_minute 60, max_tokens 20
my $tight = $l->token('tight');
my ($r, $n);

my %props = map { ("field_$_" => { type => 'string',
                   description => "a long description of field $_" x 3 }) }
            1 .. 100;
my $schema = { type => 'object', properties => \%props };

$r = $l->chat(token => $tight, fields => { tools => [ {
    type => 'function', function => { name => 'f', parameters => $schema }
} ] });
is($r->{status}, 429, 'the schema as a tool: counted, refused');

$r = $l->chat(token => $tight, fields => { response_format => {
    type => 'json_schema', json_schema => { name => 's', schema => $schema }
} });
is($r->{status}, 429, 'the schema as response_format: counted, refused');

$r = $l->request('POST', '/v1/proxy/openai/responses', token => $tight,
    body => { model => 'gpt-4o-mini', input => 'Hi', text => { format => {
        type => 'json_schema', name => 's', schema => $schema } } });
is($r->{status}, 429, 'the schema as text.format: counted, refused');

$n = () = $l->provider_requests;
is($n, 0, 'none reached the provider');

# a small schema still fits
$r = $l->chat(token => $tight, fields => { response_format => {
    type => 'json_schema', json_schema => { name => 's', schema => {
        type => 'object' } } } });
is($r->{status}, 200, 'a small response_format passes');
