#!/usr/bin/perl

# ngx_http_airlock_llm_module: the bindings of output items to their
# clients (tests/nginx/202-llm-responses-items.t) are entries of
# airlock_llm_zone as those of responses are, one each, under the same
# bound: a reload keeps them, a zone given another size gets them copied,
# and an answer of more items than the zone holds drops the least
# recently used, with a warning, after which a call naming a dropped one
# in its input is refused as an unknown one is.

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

plan tests => 14;

my $agent = $l->token('agent');
my $worker = $l->token('worker');

# a Responses API call, input "Hi" unless given
sub responses {
    my ($token, %f) = @_;
    return $l->responses($token, input => 'Hi', %f);
}

sub refer {
    my ($token, @ids) = @_;
    return responses($token, input => [ map {
        { type => 'item_reference', id => $_ }
    } @ids ]);
}

sub sent { scalar $l->provider_requests }

$l->script({ response_id => 'resp_FAKE_k1', message_id => 'msg_FAKE_k1',
             output => [ { type => 'reasoning', id => 'rs_FAKE_k1',
                           summary => [] } ] });
is(responses($agent)->{status}, 200, 'agent: a response of two items');

# ---- a reload keeps them ----------------------------------------------------

$t->reload;

is(refer($agent, 'rs_FAKE_k1', 'msg_FAKE_k1')->{status}, 200,
   'after a reload: agent names its items');
is(refer($worker, 'msg_FAKE_k1')->{status}, 403,
   "... worker still may not name agent's");

# ---- a zone of another size gets them copied --------------------------------

$t->write_file_expand('nginx.conf',
                      $l->conf(zone => 'airlock_llm_zone llm 32k;'));
$t->reload;

# the response, its two items, and resp_1, the default id the calls
# after it were answered with

like($t->read_file('error.log'),
     qr/of a new size: .* 4 of 4 bindings of stored responses copied/,
     'a new size: the response and its two items copied');

is(refer($agent, 'rs_FAKE_k1', 'msg_FAKE_k1')->{status}, 200,
   '... agent names its items');
is(refer($worker, 'rs_FAKE_k1')->{status}, 403,
   "... worker may not name agent's");

# ---- an answer of more items than the zone holds ----------------------------

# 32k holds 128 bindings (half the zone, 128 bytes each): a response of
# 140 items, each bound as it passes, drops the oldest bindings, k1's
# first, then its own first items

unlike($t->read_file('error.log'), qr/bindings of stored responses.*bound/,
       'no warning yet');

$l->script({ response_id => 'resp_FAKE_big', output => [ map {
    { type => 'function_call', id => "fc_FAKE_$_", call_id => "call_$_",
      name => 'f', arguments => '{}' }
} 1 .. 140 ] });
my $r = responses($agent, stream => \1);
is($r->{status}, 200, 'a streamed response of 140 items');

like($t->read_file('error.log'),
     qr/\[warn\].*bindings of stored responses.* reached their bound.*input/,
     'a warning says the zone is full');

my $n = sent();
is(refer($agent, 'msg_FAKE_k1')->{status}, 403,
   'an older item dropped: refused');
is(refer($agent, 'fc_FAKE_1')->{status}, 403, '... so is the first of 140');
is(sent(), $n, '... not sent');

is(refer($agent, 'fc_FAKE_140', 'fc_FAKE_20')->{status}, 200,
   'the newest kept');

is($t->error_log_check, '', 'no alerts in the error log');

$t->stop;
