#!/usr/bin/perl

# ngx_http_airlock_llm_module: the Responses API's "background": true has
# the provider answer at once, the response queued and no usage in the
# answer; it runs later and is billed in full, the context a
# "previous_response_id" brings in included, and a later call reads its
# output by that id.  The gateway could charge such a call only its
# reservation (the prompt of the body alone and the output cap), so a
# client with a token or dollar budget may not ask for it (400, nothing
# sent); false passes, and so do clients without a budget.  The member's
# reading is unit-tested in tests/unit/llm.c.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More;
use Airlock::Test;
use Airlock::LLM;

my $t = Airlock::Test->new;
my $l = Airlock::LLM->new($t);

my %tok = (spender => $l->setup_spender('al-spender-token-484848484848'));

$t->run;

plan tests => 7;

# a Responses API call, input "Hi" unless given
sub responses {
    my ($token, %f) = @_;
    return $l->responses($token, input => 'Hi', %f);
}

my $n = scalar $l->provider_requests;

my $r = responses($tok{spender}, background => \1,
                  previous_response_id => 'resp_0123');
is($r->{status}, 400, 'a dollar budget asking for a background response: 400');
like($r->{body}, qr/background/, '... saying why');

$r = responses($l->token('tight'), background => \1);
is($r->{status}, 400, 'a token budget: 400');
is(scalar $l->provider_requests, $n, '... neither sent');

$r = responses($tok{spender}, background => \0);
is($r->{status}, 200, '"background": false passes');

$r = responses($l->token('agent'), background => \1);
is($r->{status}, 200, 'a client without a budget may ask for it');
is($l->last_provider_request->{body}{background}, 1, '... sent as written');

$t->stop;
