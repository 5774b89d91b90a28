#!/usr/bin/perl

# ngx_http_airlock_llm_module: a Responses API request's "input" may name
# items the provider stored by their ids: an item_reference
# ({"type": "item_reference", "id": ...}, or {"id": ...} alone), or an
# item that carries its "id" (a reasoning item given by its id, whose
# reasoning the provider reads from storage; an output item sent back).
# Every client of an entry shares the entry's key, so the gateway binds
# the id of each output item of a 2xx answer (each element of a JSON
# body's "output"; a stream's response.output_item.added and .done) to
# the client whose call made it, as it binds the response's id
# (tests/nginx/191-llm-responses-owner.t), and lets an input element name
# only an id bound to its own client: another client's, or one the
# gateway never saw, is refused (403, Airlock-Denial: no_route, a deny
# log line) and never reaches the provider, the same answer for both.
# Items without an id pass, and so does the client's own output sent back
# as input.

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

plan tests => 43;

my $agent = $l->token('agent');
my $worker = $l->token('worker');

# a Responses API call, input "Hi" unless given
sub responses {
    my ($token, %f) = @_;
    return $l->responses($token, input => 'Hi', %f);
}

sub raw {
    my ($token, $body) = @_;
    return $l->request('POST', '/v1/proxy/openai/responses', token => $token,
                       raw_body => $body,
                       headers => [ [ 'Content-Type', 'application/json' ],
                                    [ 'Content-Length', length $body ] ]);
}

sub sent { scalar $l->provider_requests }

sub denials { $l->proxy->denials('no_route', @_) }

my $user = { role => 'user', content => 'Go on' };
my $reasoning = { type => 'reasoning', id => 'rs_FAKE_a1',
                  summary => [ { type => 'summary_text',
                                 text => 'Thinking' } ] };

# ---- a JSON answer binds its output items -----------------------------------

$l->script({ response_id => 'resp_FAKE_a1', output => [ $reasoning ],
             message_id => 'msg_FAKE_a1' });
my $r = responses($agent);
is($r->{status}, 200, 'agent: a response with two output items');
my $output = $r->{json} && $r->{json}{output};
is_deeply([ map { $_->{id} } @{ $output || [] } ],
          [ 'rs_FAKE_a1', 'msg_FAKE_a1' ], '... their ids');

$r = responses($agent, input => [ $user, { type => 'item_reference',
                                           id => 'msg_FAKE_a1' } ]);
is($r->{status}, 200, 'agent names its message by an item_reference: 200');
is($l->last_provider_request->{body}{input}[1]{id}, 'msg_FAKE_a1',
   '... sent as written');

$r = responses($agent, input => [ @$output, $user ]);
is($r->{status}, 200, 'agent sends its output back as input: 200');

$r = responses($agent, input => [ { type => 'reasoning', id => 'rs_FAKE_a1',
                                    summary => [] }, $user ]);
is($r->{status}, 200, 'agent names its reasoning by its id alone: 200');

$r = responses($agent, input => [ { id => 'rs_FAKE_a1' } ]);
is($r->{status}, 200, '... or by {"id": ...} alone');

# ---- another client may not -------------------------------------------------

my $n = sent();
my $d = denials('worker');

$r = responses($worker, input => [ { type => 'item_reference',
                                     id => 'msg_FAKE_a1' } ]);
is($r->{status}, 403, "worker names agent's message by an item_reference: 403");
is($r->{headers}{'airlock-denial'}, 'no_route', '... the gateway refused it');
is($r->{json} && $r->{json}{error}{type}, 'permission_denied',
   '... in the provider\'s format');
like(error_message($r), qr/input\[0\]/, '... saying which element');
is(sent(), $n, '... nothing sent');
is(denials('worker'), $d + 1, '... one deny log line');

my $other = error_message($r);

$r = responses($worker, input => [ { id => 'rs_FAKE_a1' } ]);
is($r->{status}, 403, "worker names agent's reasoning by {\"id\"} alone: 403");

$r = responses($worker, input => [ { type => 'reasoning',
                                     id => 'rs_FAKE_a1', summary => [] } ]);
is($r->{status}, 403, '... by a reasoning item of its id: 403');

$r = responses($worker, input => [ $output->[1] ]);
is($r->{status}, 403, "... agent's message sent whole, of its id: 403");

$r = responses($worker, input => [ $user, { role => 'assistant',
                                            content => 'Hello' },
                                   { type => 'item_reference',
                                     id => 'msg_FAKE_a1' } ]);
is($r->{status}, 403, '... after elements of no id: 403');
like(error_message($r), qr/input\[2\]/, '... naming that element');
is(sent(), $n, '... none sent');

# the same answer for an id no one made

$r = responses($worker, input => [ { type => 'item_reference',
                                     id => 'msg_FAKE_never' } ]);
is($r->{status}, 403, 'an item id the gateway never saw: 403');
is(error_message($r), $other, '... told as another client\'s is');

$r = responses($agent, input => [ { type => 'item_reference',
                                    id => 'msg_FAKE_never' } ]);
is($r->{status}, 403, '... whoever asks');

ok((grep { ($_->{detail} // '') =~ /input\[0\].*another client/ }
    $l->proxy->deny_log), 'the deny log tells an item of another client\'s')
    or diag(explain [ $l->proxy->deny_log ]);
ok((grep { ($_->{detail} // '') =~ /input\[0\].*no binding/ }
    $l->proxy->deny_log), '... from one of none');

# ---- a stream binds its output items ----------------------------------------

$l->script({ response_id => 'resp_FAKE_s1',
             output => [ { type => 'function_call', id => 'fc_FAKE_s1',
                           call_id => 'call_FAKE_s1', name => 'f',
                           arguments => '{}' } ],
             message_id => 'msg_FAKE_s1' });
$r = responses($agent, stream => \1);
is($r->{status}, 200, 'agent: a streamed response with two output items');
like($r->{body}, qr/response\.output_item\.added.*fc_FAKE_s1/s,
     '... their ids');

$r = responses($agent, input => [ { type => 'item_reference',
                                    id => 'fc_FAKE_s1' },
                                  { type => 'function_call_output',
                                    call_id => 'call_FAKE_s1',
                                    output => '42' },
                                  { type => 'item_reference',
                                    id => 'msg_FAKE_s1' } ]);
is($r->{status}, 200, 'agent names both: 200');

$n = sent();
$r = responses($worker, input => [ { type => 'item_reference',
                                     id => 'fc_FAKE_s1' } ]);
is($r->{status}, 403, "worker names agent's streamed function call: 403");
$r = responses($worker, input => [ { type => 'item_reference',
                                     id => 'msg_FAKE_s1' } ]);
is($r->{status}, 403, "... its streamed message: 403");
is(sent(), $n, '... neither sent');

# ---- each client its own ----------------------------------------------------

$l->script({ response_id => 'resp_FAKE_w1', message_id => 'msg_FAKE_w1' });
is(responses($worker)->{status}, 200, 'worker: a response of its own');

$r = responses($worker, previous_response_id => 'resp_FAKE_w1',
               input => [ { type => 'item_reference', id => 'msg_FAKE_w1' },
                          $user ]);
is($r->{status}, 200, 'worker names its own item, and its response: 200');

$r = responses($agent, input => [ { type => 'item_reference',
                                    id => 'msg_FAKE_w1' } ]);
is($r->{status}, 403, "agent names worker's item: 403");

$r = responses($worker, previous_response_id => 'resp_FAKE_w1',
               input => [ { type => 'item_reference', id => 'msg_FAKE_a1' } ]);
is($r->{status}, 403, "worker's own response, agent's item: 403");

# ---- what names no item, and what is no id ----------------------------------

$r = responses($worker, input => [ $user, { type => 'function_call_output',
                                            call_id => 'call_FAKE_s1',
                                            output => '42' },
                                   { type => 'reasoning', id => undef,
                                     summary => [] } ]);
is($r->{status}, 200, 'elements of no id, or "id": null, name none: 200');

$n = sent();

$r = responses($worker, input => [ { type => 'item_reference', id => 5 } ]);
is($r->{status}, 403, 'an id that is a number: refused');

$r = raw($worker, '{"model":"gpt-4o-mini","input":[{"type":"item_reference",'
                . '"id":"msg\u005fFAKE_a1"}]}');
is($r->{status}, 403, "agent's item id with an escape: refused");

$r = raw($worker, '{"model":"gpt-4o-mini","input":[{"type":"item_reference",'
                . '"i\u0064":"msg_FAKE_a1"}]}');
is($r->{status}, 403, "the member's name escaped: refused");

$r = raw($worker, '{"model":"gpt-4o-mini","input":[{"type":"item_reference",'
                . '"id":"msg_FAKE_w1"},{"type":"item_reference",'
                . '"i\u0064":"msg_FAKE_a1"}]}');
is($r->{status}, 403, '... after an id of its own');
is(sent(), $n, '... none of them sent');

# ---- an answer that is not 2xx binds nothing --------------------------------

$l->script({ status => 500, message_id => 'msg_FAKE_e1' });
is(responses($agent)->{status}, 500, 'a failed call');

$r = responses($agent, input => [ { type => 'item_reference',
                                    id => 'msg_FAKE_e1' } ]);
is($r->{status}, 403, '... binds no item');

is($t->error_log_check, '', 'no alerts in the error log');

$t->stop;
