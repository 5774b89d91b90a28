#!/usr/bin/perl

# ngx_http_airlock_llm_module: a Responses API request's "input" may
# answer an MCP approval request the provider stored, an
# mcp_approval_response naming it by "approval_request_id" (the id of the
# mcp_approval_request output item): approving it has the provider run
# the MCP call that request holds, with the arguments another call's
# model chose.  The id is bound to the client whose call made the item,
# as every output item's id is (tests/nginx/202-llm-responses-items.t),
# and an approval may name only one of its own client's: another
# client's, or one the gateway never saw, is refused (403, Airlock-Denial:
# no_route) and never reaches the provider.

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

plan tests => 15;

my $agent = $l->token('agent');
my $worker = $l->token('worker');

# a Responses API call, input "Hi" unless given
sub responses {
    my ($token, %f) = @_;
    return $l->responses($token, input => 'Hi', %f);
}

sub sent { scalar $l->provider_requests }

sub approval {
    my ($id, %f) = @_;
    return { type => 'mcp_approval_response', approval_request_id => $id,
             approve => \1, %f };
}

my $request = { type => 'mcp_approval_request', id => 'mcpr_FAKE_a1',
                server_label => 'docs', name => 'delete_all',
                arguments => '{}' };

# ---- the agent's call asks for an approval ----------------------------------

$l->script({ response_id => 'resp_FAKE_a1', output => [ $request ],
             message_id => 'msg_FAKE_a1' });
my $r = responses($agent);
is($r->{status}, 200, 'agent: a response asking for an approval');
is($r->{json} && $r->{json}{output}[0]{id}, 'mcpr_FAKE_a1', '... its id');

$r = responses($agent, previous_response_id => 'resp_FAKE_a1',
               input => [ approval('mcpr_FAKE_a1') ]);
is($r->{status}, 200, 'agent approves its own request: 200');
is($l->last_provider_request->{body}{input}[0]{approval_request_id},
   'mcpr_FAKE_a1', '... sent as written');

$r = responses($agent, input => [ approval('mcpr_FAKE_a1',
                                           id => 'msg_FAKE_a1') ]);
is($r->{status}, 200, '... with an id of its own too: 200');

# ---- another client may not answer it ---------------------------------------

$l->script({ response_id => 'resp_FAKE_w1', message_id => 'msg_FAKE_w1' });
is(responses($worker)->{status}, 200, 'worker: a response of its own');

my $n = sent();

$r = responses($worker, input => [ approval('mcpr_FAKE_a1') ]);
is($r->{status}, 403, "worker approves agent's request: 403");
is($r->{headers}{'airlock-denial'}, 'no_route', '... the gateway refused it');
is(sent(), $n, '... nothing sent');

$r = responses($worker, previous_response_id => 'resp_FAKE_w1',
               input => [ { role => 'user', content => 'Go on' },
                          approval('mcpr_FAKE_a1', approve => \0) ]);
is($r->{status}, 403, '... nor rejects it, after its own response: 403');

$r = responses($worker, input => [ approval('mcpr_FAKE_a1',
                                            id => 'msg_FAKE_w1') ]);
is($r->{status}, 403, '... nor with an id of its own beside it: 403');

$r = responses($worker, input => [ { approval_request_id => 'mcpr_FAKE_a1',
                                     approve => \1 } ]);
is($r->{status}, 403, '... nor with no "type": 403');

$r = responses($agent, input => [ approval('mcpr_FAKE_never') ]);
is($r->{status}, 403, 'an approval request the gateway never saw: 403');
is(sent(), $n, '... none of them sent');

is($t->error_log_check, '', 'no alerts in the error log');

$t->stop;
