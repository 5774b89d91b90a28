#!/usr/bin/perl

# airlock-agent: one user's question cannot take the whole of the
# gateway's tokens_per_minute for the agent's client.  That budget is
# every user's together, a fixed UTC minute: one question whose model
# call wrote at length used all of it, and every other user's model
# call was refused ("budget") until the minute ended.  Now one owner's
# calls hold and use at most --max-user-tokens-per-minute of a UTC
# minute, all together (by default half the client's tokens_per_minute;
# none without one): a call asks for no more than the owner's minute
# has left, and another user is served.  A share under a call's prompt
# ends the run (the "user_tokens_per_minute" limit), the call not made.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use AgentTest;

Airlock::Prereq::absent('the test connects as other uids: run it as root')
    if $> != 0;

my $a = AgentTest->new;
my $t = $a->t;

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

# the minute's budget: twice a question's first call as the agent counts
# it and 1000 more each; the model's output capped at 4096 a call (the
# gateway's default under a budget)
$a->setup(agent => [ '--max-user-tokens', 0 ]);
my $F = $a->first_prompt('x' x 16, '--max-user-tokens', 0);
my $TPM = 2 * ($F + 1000);
$a->{llm_agent} = "{ tokens_per_minute: $TPM }";
$t->write_file_expand('policy.yaml', $a->policy);
$t->reload;
$a->start_agent('m', '--max-user-tokens', 0);

plan tests => 9;

my ($ALICE, $BOB) = (61091, 61092);

sub ask {
    my ($agent, $uid, $id, $prompt) = @_;
    my $body = encode_json({ prompt => $prompt });
    my $raw = scalar $a->as_uid($a->{agents}{$agent}{sock}, $uid,
                                "POST /v1/sessions/$id/ask HTTP/1.1\r\n"
                                . "Host: a\r\nContent-Length: "
                                . length($body)
                                . "\r\nConnection: close\r\n\r\n$body");
    return [ AgentTest::events($raw) ];
}

# the minute's start: the test's two questions in one minute, the last
# seconds of one waited out (Redis's clock, polled)
for (1 .. 200) {
    my ($s) = split /\n/, $a->redis_cli('TIME');
    last if $s % 60 < 40;
    select(undef, undef, undef, 0.1);
}

# a model that writes as much as it is let
my $n0 = scalar(() = $a->provider_requests);
$a->script({ pieces => [ 'w' ], obey_max_tokens => 1,
             usage => { prompt => $F - 20, completion => 1e6 } },
           { pieces => [ 'bob' ] });
my $ev = ask('m', $ALICE, 'alice-1', 'write at length');
my $asked = (($a->provider_requests)[$n0] // {})->{body}
            {max_completion_tokens} // 1e9;
cmp_ok($asked, '<=', $TPM / 2 - $F + 50,
       "alice's call asks for no more than her half of the minute less "
       . "its prompt ($asked)");
is(((of_type('limit', $ev))[0] // {})->{limit}, 'user_tokens_per_minute',
   '... its answer cut there, and said so');
my $m = $a->redis_cli('GET', "airlock:quota:tokens:!minute:uid:$ALICE");
ok($m > 0 && $m <= $TPM / 2, "... counted in her minute ($m)");

$ev = ask('m', $BOB, 'bob-1', 'and mine?');
is(((of_type('answer', $ev))[0] // {})->{text}, 'bob',
   'bob is answered in the same minute');
is(scalar(of_type('error', $ev)), 0, '... his model call not refused');

# a share under the first call's prompt: not made
$a->start_agent('s', '--max-user-tokens', 0,
                '--max-user-tokens-per-minute', 100);
$n0 = scalar(() = $a->provider_requests);
$ev = ask('s', $ALICE, 'alice-2', 'again');
is(scalar(() = $a->provider_requests), $n0, 'a share under the prompt: '
   . 'the call not made');
my ($l) = of_type('limit', $ev);
is(($l // {})->{limit}, 'user_tokens_per_minute', '... the limit said');
like(($l // {})->{message} // '', qr/--max-user-tokens-per-minute/,
     '... naming the option');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
