#!/usr/bin/perl

# ngx_http_airlock_llm_module: every answer carries x-request-id, the id of
# its usage line (a provider's own x-request-id goes on as
# x-provider-request-id), and the usage line names the endpoint: chat,
# completions, embeddings, responses, messages.

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

plan tests => 19;

my $agent = $l->token('agent');
my ($r, $u, $n);

sub check {
    my ($what, $r, $endpoint, $status) = @_;
    my $id = $r->{headers}{'x-request-id'};

    is($r->{status}, $status, "$what: $status");
    like($id // '', qr/^[0-9a-f]{8,}$/, "$what: x-request-id");
    $u = $l->last_usage(++$n);
    is($u->{request_id}, $id, "$what: the usage line has the same id");
    is($u->{endpoint}, $endpoint, "$what: the usage line says $endpoint");
}

$l->script({ request_id => 'req_provider_0001' });
$r = $l->chat(token => $agent);
check('chat', $r, 'chat', 200);
is($r->{headers}{'x-provider-request-id'}, 'req_provider_0001',
   'chat: the provider\'s id as x-provider-request-id');

$r = $l->request('POST', '/v1/proxy/openai/responses', token => $agent,
                 body => { model => 'gpt-4o-mini', input => 'Hello' });
check('responses', $r, 'responses', 200);

$r = $l->request('POST', '/v1/proxy/openai/embeddings', token => $agent,
                 body => { model => 'text-embedding-3-small',
                           input => 'embed me' });
check('embeddings', $r, 'embeddings', 200);

$r = $l->messages(token => $agent);
check('messages', $r, 'messages', 200);

$r = $l->chat(token => $agent, model => 'not-a-model');
my $rid = $r->{headers}{'x-request-id'} // 'none';
ok($r->{status} >= 400, 'a refusal');
like($r->{json}{error}{message} // '', qr/request id \Q$rid\E/,
     'a refusal: x-request-id as in its message');
