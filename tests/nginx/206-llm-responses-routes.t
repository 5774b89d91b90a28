#!/usr/bin/perl

# ngx_http_airlock_llm_module: of the Responses API the gateway serves
# only POST /responses, where it checks the stored responses and items a
# request names (191-llm-responses-owner.t, 202-llm-responses-items.t).
# The routes that read, delete, cancel or list a stored response by its
# id, and the Conversations API, would let any client of the entry reach
# any response of the account by its id: they are refused as any path the
# gateway does not know (403, Airlock-Denial: no_route) and never reach
# the provider, even for the client whose call made the response.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

$l->setup;
$t->run;

my @routes = (
    [ 'GET', 'responses/resp_FAKE_a1' ],
    [ 'GET', 'responses/resp_FAKE_a1?stream=true&starting_after=3' ],
    [ 'DELETE', 'responses/resp_FAKE_a1' ],
    [ 'GET', 'responses/resp_FAKE_a1/input_items' ],
    [ 'POST', 'responses/resp_FAKE_a1/cancel', {} ],
    [ 'POST', 'responses/compact',
      { model => 'gpt-4o-mini', previous_response_id => 'resp_FAKE_a1' } ],
    [ 'POST', 'responses/input_tokens',
      { model => 'gpt-4o-mini', previous_response_id => 'resp_FAKE_a1' } ],
    [ 'POST', 'conversations', {} ],
    [ 'GET', 'conversations/conv_FAKE_a1/items' ],
);

plan tests => 3 + 2 * @routes + 1;

my $agent = $l->token('agent');

$l->script({ response_id => 'resp_FAKE_a1', message_id => 'msg_FAKE_a1' });
my $r = $l->request('POST', '/v1/proxy/openai/responses', token => $agent,
                    body => { model => 'gpt-4o-mini', input => 'Hi',
                              background => \1 });
is($r->{status}, 200, 'agent: a background response');
is($r->{json} && $r->{json}{id}, 'resp_FAKE_a1', '... its id');

my $n = scalar $l->provider_requests;

for my $route (@routes) {
    my ($method, $path, $body) = @$route;
    $r = $l->request($method, "/v1/proxy/openai/$path", token => $agent,
                     defined $body ? (body => $body) : ());
    is($r->{status}, 403, "$method /$path: 403");
    is($r->{headers}{'airlock-denial'}, 'no_route', '... no route');
}

is(scalar $l->provider_requests, $n, 'none of them sent');

is($t->error_log_check, '', 'no alerts in the error log');

$t->stop;
