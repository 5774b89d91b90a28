#!/usr/bin/perl

# ngx_http_airlock_llm_module: a Responses API request may name many
# stored items at once (a long conversation sent back as its items): each
# id is checked (tests/nginx/202-llm-responses-items.t), whether the body
# scan kept it (up to 64 ids) or the body is read again for them (more),
# so one foreign or unknown id anywhere in the list, first, deep in it or
# last, refuses the request (403, naming that element), and a list of the
# client's own ids passes.

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

plan tests => 29;

my $agent = $l->token('agent');
my $worker = $l->token('worker');

# a Responses API call, input "Hi" unless given
sub responses {
    my ($token, %f) = @_;
    return $l->responses($token, input => 'Hi', %f);
}

sub sent { scalar $l->provider_requests }

# the agent's calls make 100 items, the worker's one

my @mine;

for my $c (1 .. 10) {
    my @out = map { { type => 'reasoning', id => "rs_FAKE_${c}_$_",
                      summary => [] } } 1 .. 9;
    $l->script({ response_id => "resp_FAKE_$c", output => \@out,
                 message_id => "msg_FAKE_$c" });
    my $r = responses($agent);
    push @mine, map { $_->{id} } @{ $r->{json}{output} || [] };
}

is(scalar @mine, 100, 'agent: ten responses of ten items');

$l->script({ response_id => 'resp_FAKE_w1', message_id => 'msg_FAKE_w1' });
is(responses($worker)->{status}, 200, 'worker: a response of its own');

sub refs {
    return [ map { { type => 'item_reference', id => $_ } } @_ ];
}

my $user = { role => 'user', content => 'Go on' };

for my $n (40, 64, 100) {
    my @ids = @mine[0 .. $n - 1];

    my $r = responses($agent, previous_response_id => 'resp_FAKE_10',
                      input => [ @{ refs(@ids) }, $user ]);
    is($r->{status}, 200, "$n of its own ids: 200");

    my $before = sent();

    for my $at (0, int($n / 2), $n - 1) {
        my @bad = @ids;
        $bad[$at] = 'msg_FAKE_w1';
        $r = responses($agent, input => refs(@bad));
        is($r->{status}, 403, "$n ids, the worker's at $at: 403")
            or diag($r->{body});
        like(error_message($r), qr/input\[$at\]/, '... naming that element');
    }

    is(sent(), $before, '... none sent');
}

# an unknown id among approvals and ids of the same element

my $r = responses($agent, input => [ @{ refs(@mine[0 .. 30]) },
                                     { type => 'mcp_approval_response',
                                       id => $mine[31],
                                       approval_request_id => 'mcpr_FAKE_x',
                                       approve => \1 } ]);
is($r->{status}, 403, 'an approval of no request after 32 own ids: 403');
like(error_message($r), qr/input\[31\]/, '... naming that element');

is($t->error_log_check, '', 'no alerts in the error log');

$t->stop;
