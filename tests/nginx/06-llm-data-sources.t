#!/usr/bin/perl

# ngx_http_airlock_llm_module: Azure OpenAI "On Your Data".  A chat
# request's top-level "data_sources" has the provider itself query a
# search service (Azure AI Search, Elasticsearch, Pinecone, ...) at the
# endpoint the request names, with credentials the request names or the
# Azure resource's own managed identity, and put what it finds in the
# prompt: the provider reaches a URL on the client's behalf, as its web
# search does, so it is a provider tool, family data_sources, refused
# unless the entry's provider_tools allows it (body, 400, nothing sent).
# "data_sources": null passes.  The grant is unit-tested in
# tests/unit/llm.c.

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

my $azure = <<'Y';
  - name: azure
    prefix: /v1/proxy/azure
    provider: azure
    upstream: "http://127.0.0.1:%%PORT_8081%%"
    api_version: "2024-10-21"
    secret: openai_key
    models: [gpt4o-mini-prod]
    max_body_bytes: 65536
    clients:
      agent: {}
Y

$l->setup(openai_clients => $azure, locations => <<'L');
        location /v1/proxy/azure/ {
            airlock_llm azure;

            %%AIRLOCK_LOCATION%%

            proxy_read_timeout 10s;
        }
L
$t->run;

plan tests => 7;

my $path = '/v1/proxy/azure/openai/deployments/gpt4o-mini-prod/'
           . 'chat/completions?api-version=2024-10-21';
my $search = [ { type => 'azure_search',
                 parameters => {
                     endpoint => 'https://elsewhere.example.net',
                     index_name => 'secrets',
                     authentication => {
                         type => 'system_assigned_managed_identity' } } } ];

sub azure {
    my (%f) = @_;
    return $l->request('POST', $path,
                       headers => [ [ 'api-key', $l->token('agent') ] ],
                       body => { messages => [ { role => 'user',
                                                 content => 'Hi' } ],
                                 %f });
}

my $n = scalar $l->provider_requests;

my $r = azure(data_sources => $search);
is($r->{status}, 400, 'data_sources on Azure: 400');
like($r->{body}, qr/invalid_request_body/, '... in OpenAI\'s format');
like($r->{body}, qr/data_sources/, '... naming the family');
is(scalar $l->provider_requests, $n, '... nothing sent');

$r = $l->chat(token => $l->token('agent'),
              fields => { data_sources => $search });
is($r->{status}, 400, 'data_sources on an OpenAI entry: 400');

$r = azure(DATA_SOURCES => $search);
is($r->{status}, 400, 'DATA_SOURCES in another case: 400');

$r = azure(data_sources => undef);
is($r->{status}, 200, 'data_sources null passes');

$t->stop;
