#!/usr/bin/perl

# ngx_http_airlock_llm_module: the Responses API's "prompt" names a prompt
# the provider stores for the account ({"id": "pmpt_...", "version": ...,
# "variables": ...}), with instructions, a model and tools of its own.
# No route of the gateway makes one, so the gateway cannot tell whose it
# is, as with a stored file (205-llm-stored-files.t): besides the entry's
# allow_members naming "prompt" (28-llm-allow-members.t), a stored prompt
# needs provider_tools: stored_files (400 body naming it, nothing sent).
# A completions "prompt" (text) passes as before.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

$l->setup(openai_fields => '    allow_members: [prompt]');
$t->run;

plan tests => 9;

my $agent = $l->token('agent');

sub sent { scalar $l->provider_requests }

my $stored = { id => 'pmpt_FAKE1', version => '2',
               variables => { city => 'Paris' } };

sub responses { $l->responses($agent, @_) }

my $n = sent();

my $r = responses(prompt => $stored);
is($r->{status}, 400, 'a stored prompt by its id: 400');
like($r->{body}, qr/prompt.*provider_tools: stored_files/,
     '... naming the member and the family');

$r = responses(prompt => $stored, input => 'Hi');
is($r->{status}, 400, '... with an input too');
is(sent(), $n, '... none of them sent');

$r = $l->request('POST', '/v1/proxy/openai/completions', token => $agent,
                 body => { model => 'gpt-4o-mini', prompt => 'Hi' });
is($r->{status}, 200, 'completions: a prompt of text passes');

$r = $l->request('POST', '/v1/proxy/openai/completions', token => $agent,
                 body => { model => 'gpt-4o-mini', prompt => [ 'Hi', 'Ho' ] });
is($r->{status}, 200, '... and a batch of them');

# ---- an entry whose provider_tools allows stored_files ----------------------

$t->write_file_expand('policy.yaml',
    $l->policy(openai_fields => "    allow_members: [prompt]\n"
                                . '    provider_tools: [stored_files]'));
$t->reload;

$n = sent();

$r = responses(prompt => $stored);
is($r->{status}, 200, 'stored_files allowed: a stored prompt passes');
is($l->last_provider_request->{body}{prompt}{id}, 'pmpt_FAKE1',
   '... sent as written');

is($t->error_log_check, '', 'no alerts in the error log');

$t->stop;
