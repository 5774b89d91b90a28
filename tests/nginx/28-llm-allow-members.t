#!/usr/bin/perl

# ngx_http_airlock_llm_module: the top-level members of a request body are
# allowed by a list, per endpoint (deny by default).  Routers behind an
# entry read members of their own as another model, URL, key or a dearer
# option (LiteLLM's custom_llm_provider, aws_bedrock_runtime_endpoint, ...),
# and a list of what to refuse is never complete: a member the providers do
# not document for the endpoint is refused (400, nothing sent, the detail
# naming it and allow_members) on every endpoint kind, and passes once the
# entry's allow_members lists it (after a reload).  The lists and the
# loader's checks are unit-tested in tests/unit/llm.c, llm_scan.c and
# loader.c.

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

my @members = qw(aws_bedrock_runtime_endpoint custom_llm_provider
                 some_new_router_option);

# each endpoint kind: the path, the entry, a body it accepts, a member it
# documents
my @eps = (
    [ 'chat/completions', 'openai',
      { model => 'gpt-4o-mini', messages => [ { role => 'user',
                                                content => 'Hi' } ] },
      'temperature' ],
    [ 'completions', 'openai', { model => 'gpt-4o-mini', prompt => 'Hi' },
      'suffix' ],
    [ 'embeddings', 'openai',
      { model => 'text-embedding-3-small', input => 'Hi' }, 'dimensions' ],
    [ 'responses', 'openai', { model => 'gpt-4o-mini', input => 'Hi' },
      'truncation' ],
    [ 'messages', 'anthropic',
      { model => 'claude-3-5-haiku', max_tokens => 10,
        messages => [ { role => 'user', content => 'Hi' } ] },
      'top_k' ],
);

plan tests => @eps * (2 * @members + 3) + 1;

my %doc = (temperature => 0.5, suffix => 'x', dimensions => 8,
           truncation => 'auto', top_k => 5);

sub send_body {
    my ($ep, %extra) = @_;
    my ($path, $entry, $body) = @$ep;
    return $l->request('POST', "/v1/proxy/$entry/$path",
                       token => $l->token('agent'),
                       anthropic => $entry eq 'anthropic',
                       body => { %$body, %extra });
}

my $n = scalar $l->provider_requests;

for my $ep (@eps) {
    for my $m (@members) {
        my $r = send_body($ep, $m => 'x');
        is($r->{status}, 400, "$ep->[0]: \"$m\" refused");
        my $why = qr/\\"$m\\" is not accepted on \Q$ep->[0]\E: /;
        my $how = qr/allow_members of llm \\"$ep->[1]\\" adds one/;
        like($r->{body}, qr/$why.*$how/, '... naming it and allow_members');
    }
}

is(scalar $l->provider_requests, $n, 'none of them sent');

for my $ep (@eps) {
    my $r = send_body($ep, $ep->[3] => $doc{$ep->[3]});
    is($r->{status}, 200, "$ep->[0]: \"$ep->[3]\", documented there, passes");
}

# listed in allow_members: accepted, and sent as written

my $list = "    allow_members: [" . join(', ', @members) . "]\n";

$t->write_file_expand('policy.yaml',
                      $l->policy(openai_fields => $list,
                                 anthropic_fields => $list));
$t->reload;

for my $ep (@eps) {
    my $r = send_body($ep, map { $_ => { a => 1 } } @members);
    is($r->{status}, 200, "$ep->[0]: listed, they pass");

    my $got = $l->last_provider_request->{body};
    is_deeply([ map { $got->{$_} } @members ], [ ({ a => 1 }) x @members ],
              '... sent as written');
}

$t->stop;
