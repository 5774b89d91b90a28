#!/usr/bin/perl

# ngx_http_airlock_llm_module: the route a worker keeps of the last request
# line it allowed (ngx_http_airlock_llm_memo_t).  The same target again
# takes the same route; another method, client, query or spelling of the
# target is decided afresh, refusals included, and the route kept after
# them is still the right one.

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

plan tests => 24;

my $agent = $l->token('agent');
my $worker = $l->token('worker');
my $r;

sub code {
    my ($r) = @_;
    my $e = $r->{json} && $r->{json}{error};
    return ref $e eq 'HASH' ? $e->{code} // '' : '';
}

sub upstream_path {
    return $l->last_provider_request->{path};
}

# the same line twice: the second one takes the kept route

for my $n (1, 2) {
    $r = $l->chat(token => $agent);
    is($r->{status}, 200, "chat $n: 200");
    is(upstream_path(), '/v1/chat/completions', "chat $n: upstream path");
}

# another method on the same target

$r = $l->request('GET', '/v1/proxy/openai/chat/completions', token => $agent);
is($r->{status}, 403, 'GET on the kept target: 403');
is(code($r), 'endpoint_not_allowed', 'GET on the kept target: method error');

# the same target with a query, a trailing slash, an escape

$r = $l->request('POST', '/v1/proxy/openai/chat/completions?x=1',
                 token => $agent, body => { model => 'gpt-4o-mini' });
is($r->{status}, 403, 'the kept target with a query: 403');

$r = $l->request('POST', '/v1/proxy/openai/chat/completions/',
                 token => $agent, body => { model => 'gpt-4o-mini' });
is($r->{status}, 403, 'the kept target with a trailing slash: 403');

$r = $l->chat(token => $agent);
is($r->{status}, 200, 'chat after the refusals: 200');

$r = $l->request('POST', '/v1/proxy/openai/chat/%63ompletions',
                 token => $agent,
                 body => { model => 'gpt-4o-mini',
                           messages => [ { role => 'user',
                                           content => 'Hi' } ] });
is($r->{status}, 200, 'an escaped letter: 200');
is(upstream_path(), '/v1/chat/completions', 'an escaped letter: decoded');

$r = $l->request('POST', '/v1/proxy/openai/v1/chat/completions',
                 token => $agent,
                 body => { model => 'gpt-4o-mini',
                           messages => [ { role => 'user',
                                           content => 'Hi' } ] });
is($r->{status}, 200, 'a leading v1: 200');
is(upstream_path(), '/v1/chat/completions', 'a leading v1: one v1 upstream');

# another client, then the first again

$r = $l->chat(token => $worker, fields => { max_tokens => 10 });
is($r->{status}, 200, 'another client: 200');

$r = $l->chat(token => $agent);
is($r->{status}, 200, 'the first client again: 200');

# a list kept, then a model of it, allowed for one client and not the other

$r = $l->request('GET', '/v1/proxy/openai/models', token => $worker);
is($r->{status}, 200, 'models: 200');
is_deeply([ map { $_->{id} } @{$r->{json}{data} // []} ], [ 'gpt-4o-mini' ],
          'models: this client\'s list');

$r = $l->request('GET', '/v1/proxy/openai/models/gpt-4o', token => $agent);
is($r->{status}, 200, 'models/{id} allowed for one client: 200');

$r = $l->request('GET', '/v1/proxy/openai/models/gpt-4o', token => $worker);
is($r->{status}, 404, 'the same models/{id} for another: 404');
is(code($r), 'model_not_found', 'the same models/{id}: not found');

$r = $l->request('GET', '/v1/proxy/openai/models/gpt-4o', token => $agent);
is($r->{status}, 200, 'models/{id} for the first again: 200');

$r = $l->request('GET', '/v1/proxy/openai/models', token => $agent);
is($r->{status}, 200, 'the list for the first client: 200');
is_deeply([ map { $_->{id} } @{$r->{json}{data} // []} ],
          [ 'gpt-4o-mini', 'gpt-4o', 'text-embedding-3-small' ],
          'the list for the first client: its own');

is($t->error_log_check, "", "no alerts or sanitizer reports");
