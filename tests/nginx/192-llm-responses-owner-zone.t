#!/usr/bin/perl

# ngx_http_airlock_llm_module: the bindings of stored responses to their
# clients (tests/nginx/191-llm-responses-owner.t) live in airlock_llm_zone
# and go on as the zone does: a reload keeps them, a zone given another
# size gets them copied, and a zone that holds as many as it may drops
# the least recently used, with a warning, after which a call naming a
# dropped one is refused as an unknown one is.  And the Responses API's
# "conversation", which names a conversation the provider keeps and no
# call through the gateway makes, passes only where allow_members names
# it.

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

# a Responses API call, input "Hi" unless given
sub responses {
    my ($token, %f) = @_;
    return $l->responses($token, input => 'Hi', %f);
}

sub sent { scalar $l->provider_requests }

$l->script({ response_id => 'resp_FAKE_k1' });
is(responses($agent)->{status}, 200, 'agent: a response');

$l->script({ response_id => 'resp_FAKE_k2' });
is(responses($agent, stream => \1)->{status}, 200, 'agent: a streamed one');

$l->script({ response_id => 'resp_FAKE_w1' });
is(responses($worker)->{status}, 200, 'worker: one of its own');

my $n = sent();
my $r = responses($agent, conversation => 'conv_FAKE_1');
is($r->{status}, 400, 'conversation: refused');
is(sent(), $n, '... not sent');

# ---- a reload keeps them ---------------------------------------------------------

$t->write_file_expand('policy.yaml', $l->policy(
    openai_fields => "    allow_members: [conversation]\n"));
$t->reload;

$r = responses($agent, previous_response_id => 'resp_FAKE_k1');
is($r->{status}, 200, 'after a reload: agent continues its response');

$r = responses($agent, previous_response_id => 'resp_FAKE_k2');
is($r->{status}, 200, '... and its streamed one');

$n = sent();

$r = responses($worker, previous_response_id => 'resp_FAKE_k1');
is($r->{status}, 403, "... worker still may not name agent's");

$r = responses($agent, previous_response_id => 'resp_FAKE_w1');
is($r->{status}, 403, "... nor agent worker's");
is(sent(), $n, '... neither sent');

$r = responses($agent, conversation => 'conv_FAKE_1');
is($r->{status}, 200, 'conversation passes where allow_members names it');
is($l->last_provider_request->{body}{conversation}, 'conv_FAKE_1',
   '... sent as written');

# ---- a zone of another size gets them copied -------------------------------------

$t->write_file_expand('nginx.conf',
                      $l->conf(zone => 'airlock_llm_zone llm 32k;'));
$t->reload;

like($t->read_file('error.log'),
     qr/of a new size: .* (\d+) of \1 bindings of stored responses copied/,
     'a new size: the bindings copied');

$r = responses($agent, previous_response_id => 'resp_FAKE_k1');
is($r->{status}, 200, '... agent continues its response');

$r = responses($worker, previous_response_id => 'resp_FAKE_k1');
is($r->{status}, 403, "... worker may not name agent's");

$r = responses($worker, previous_response_id => 'resp_FAKE_w1');
is($r->{status}, 200, '... worker continues its own');

# ---- a full zone drops the least recently used -----------------------------------

# 32k holds 128 bindings (half the zone, 128 bytes each): 140 more make
# it drop the oldest, k2, and k1 and w1, used after it, later

unlike($t->read_file('error.log'), qr/bindings of stored responses.*bound/,
       'no warning yet');

$l->script(map { { response_id => "resp_FAKE_f$_" } } 1 .. 140);

my $ok = 0;
for (1 .. 140) {
    $ok++ if responses($agent)->{status} == 200;
}
is($ok, 140, '140 more responses');

like($t->read_file('error.log'),
     qr/\[warn\].*bindings of stored responses.* reached their bound/,
     'a warning says the zone is full');

$n = sent();
$r = responses($agent, previous_response_id => 'resp_FAKE_k2');
is($r->{status}, 403, 'the oldest binding dropped: refused');
is(sent(), $n, '... not sent');

my @deny = $l->proxy->deny_log;
like(@deny ? $deny[-1]{detail} // '' : '', qr/no binding/,
     '... logged as one of no binding');

$r = responses($agent, previous_response_id => 'resp_FAKE_f140');
is($r->{status}, 200, 'the newest kept');

is($t->error_log_check, '', 'no alerts in the error log');

$t->stop;
