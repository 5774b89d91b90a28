#!/usr/bin/perl

# ngx_http_airlock_llm_module: a Responses API request may name a stored
# response as its "previous_response_id", and the provider continues that
# conversation from what it stored.  Every client of an entry shares the
# entry's key, so the gateway binds each response id a 2xx answer carries
# (the JSON body's "id", a stream's response.created) to the client whose
# call made it, in airlock_llm_zone, and lets a request name only a
# response of its own client: another client's id, or an id the gateway
# never saw, is refused (403, Airlock-Denial: no_route, a deny log line)
# and never reaches the provider.  The same answer for both, so a client
# learns nothing of the ids of others.

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

plan tests => 39;

my $agent = $l->token('agent');
my $worker = $l->token('worker');

# a Responses API call, input "Hi" unless given
sub responses {
    my ($token, %f) = @_;
    return $l->responses($token, input => 'Hi', %f);
}

sub sent { scalar $l->provider_requests }

# the deny log lines of this reason and client, naming the id's member
sub denials { $l->proxy->denials('no_route', @_) }

# ---- a JSON answer binds its id ------------------------------------------------

$l->script({ response_id => 'resp_FAKE_a1' });
my $r = responses($agent);
is($r->{status}, 200, 'agent: a response made');
is($r->{json} && $r->{json}{id}, 'resp_FAKE_a1', '... its id');

$r = responses($agent, previous_response_id => 'resp_FAKE_a1');
is($r->{status}, 200, 'agent continues its own response: 200');
is($l->last_provider_request->{body}{previous_response_id}, 'resp_FAKE_a1',
   '... sent as written');

my $n = sent();
my $d = denials('worker');

$r = responses($worker, previous_response_id => 'resp_FAKE_a1');
is($r->{status}, 403, "worker names agent's response: 403");
is($r->{headers}{'airlock-denial'}, 'no_route', '... the gateway refused it');
is($r->{json} && $r->{json}{error}{type}, 'permission_denied',
   '... in the provider\'s format');
like($r->{body}, qr/previous_response_id/, '... saying why');
is(sent(), $n, '... nothing sent');
is(denials('worker'), $d + 1, '... one deny log line');

# the same answer for an id no one made: nothing tells the two apart

my $other = error_message($r);

$r = responses($worker, previous_response_id => 'resp_FAKE_never');
is($r->{status}, 403, 'an id the gateway never saw: 403');
is(error_message($r), $other,
   '... told as another client\'s is');

$r = responses($agent, previous_response_id => 'resp_FAKE_never');
is($r->{status}, 403, '... whoever asks');
is(sent(), $n, '... nothing sent');

my ($line) = grep { ($_->{detail} // '') =~ /another client/ }
             $l->proxy->deny_log;
ok($line, 'the deny log tells an id of another client\'s')
    or diag(explain [ $l->proxy->deny_log ]);
ok((grep { ($_->{detail} // '') =~ /no binding/ } $l->proxy->deny_log),
   '... from one of none');

# ---- a stream binds its id -------------------------------------------------------

$l->script({ response_id => 'resp_FAKE_s1' });
$r = responses($agent, stream => \1);
is($r->{status}, 200, 'agent: a streamed response');
like($r->{body}, qr/response\.created.*resp_FAKE_s1/s, '... its id');

$r = responses($agent, previous_response_id => 'resp_FAKE_s1');
is($r->{status}, 200, 'agent continues the streamed one: 200');

$r = responses($agent, previous_response_id => 'resp_FAKE_s1', stream => \1);
is($r->{status}, 200, '... streamed too');

$n = sent();
$r = responses($worker, previous_response_id => 'resp_FAKE_s1');
is($r->{status}, 403, "worker names agent's streamed response: 403");
is(sent(), $n, '... nothing sent');

# ---- each client its own -----------------------------------------------------------

$l->script({ response_id => 'resp_FAKE_w1' });
$r = responses($worker);
is($r->{status}, 200, 'worker: a response of its own');

$r = responses($worker, previous_response_id => 'resp_FAKE_w1');
is($r->{status}, 200, 'worker continues it: 200');

$r = responses($agent, previous_response_id => 'resp_FAKE_w1');
is($r->{status}, 403, "agent names worker's: 403");

$r = responses($agent, previous_response_id => 'resp_FAKE_a1');
is($r->{status}, 200, 'agent still continues its own');

# ---- what is no id -------------------------------------------------------------

$r = responses($worker, previous_response_id => undef);
is($r->{status}, 200, 'previous_response_id null: no stored response, 200');

$n = sent();

$r = responses($worker, previous_response_id => 5);
is($r->{status}, 403, 'previous_response_id a number: refused');

# the provider reads an escaped id unescaped; the gateway binds none so

my $body = '{"model":"gpt-4o-mini","input":"Hi",'
         . '"previous_response_id":"resp\u005fFAKE_a1"}';
$r = $l->request('POST', '/v1/proxy/openai/responses', token => $worker,
                 raw_body => $body,
                 headers => [ [ 'Content-Type', 'application/json' ],
                              [ 'Content-Length', length $body ] ]);
is($r->{status}, 403, "agent's id with an escape: refused");

# and the member's name escaped is the same member

$body = '{"model":"gpt-4o-mini","input":"Hi",'
      . '"previous\u005fresponse_id":"resp_FAKE_a1"}';
$r = $l->request('POST', '/v1/proxy/openai/responses', token => $worker,
                 raw_body => $body,
                 headers => [ [ 'Content-Type', 'application/json' ],
                              [ 'Content-Length', length $body ] ]);
is($r->{status}, 403, "the member's name escaped: refused");
is(sent(), $n, '... none of them sent');

# ---- an answer that is not 2xx binds nothing -------------------------------------

$l->script({ status => 500, response_id => 'resp_FAKE_e1' });
$r = responses($agent);
is($r->{status}, 500, 'a failed call');

$r = responses($agent, previous_response_id => 'resp_FAKE_e1');
is($r->{status}, 403, '... binds no id');

# ---- chat completions are not read for it ------------------------------------------

$r = $l->chat(token => $worker);
is($r->{status}, 200, 'chat/completions: 200');

$r = $l->request('POST', '/v1/proxy/openai/chat/completions',
                 token => $worker,
                 body => { model => 'gpt-4o-mini',
                           messages => [ { role => 'user',
                                           content => 'Hi' } ],
                           previous_response_id => 'resp_FAKE_a1' });
is($r->{status}, 400, '... where previous_response_id is no member');

# ---- the other member of stored state ------------------------------------------------

$n = sent();
$r = responses($agent, conversation => 'conv_FAKE_1');
is($r->{status}, 400, 'conversation: refused without allow_members');
like($r->{body}, qr/conversation/, '... saying which member');
is(sent(), $n, '... not sent');

is($t->error_log_check, '', 'no alerts in the error log');

$t->stop;
