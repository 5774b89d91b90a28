#!/usr/bin/perl

# airlock-agent: one local user's questions cannot have the agent's
# client quarantined for every user.  The proxy counts every denial
# against the agent's policy client, whoever asked: past the policy's
# alerts.quarantine threshold within its window, it refuses that client
# outright ("quarantined") for its "for", every user's tool calls with
# it.  --max-denials bounds one question (3), not one user: two
# questions of bob's that the proxy refused, three calls each (a
# service name the route's pattern refuses), took the client to 6, the
# quarantine's threshold here, and alice's next tool call was refused
# "quarantined", and so was every model call of the agent's, every
# user's question failing at its first step.  Now one owner's questions cause at most
# --max-user-denials proxy denials within the quarantine's window (by
# default less than half of its threshold: 2 of 6 here): the run that
# reaches it ends with a "user_denials" limit, the owner's next question
# is refused 429 "quota" until the oldest falls out of the window, and
# other users are served.  A call the proxy may refuse is held against
# the limit while it is in flight, so questions asked at once do not
# pass it either.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use AgentTest;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

Airlock::Prereq::absent('the test connects as other uids: run it as root')
    if $> != 0;

my $a = AgentTest->new;
my $t = $a->t;

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

$a->setup(agent => [ '--max-wall', 30000 ],
          alerts => '  quarantine: { threshold: 6, window: 60s, for: 10m }');

plan tests => 20;

my ($ALICE, $BOB) = (61001, 61002);
my $sock = $a->{agents}{a}{sock};

sub ask {
    my ($uid, $id, $prompt) = @_;
    my $body = encode_json({ prompt => $prompt });
    my $raw = $a->as_uid($sock, $uid, "POST /v1/sessions/$id/ask HTTP/1.1\r\n"
                         . "Host: a\r\nContent-Length: " . length($body)
                         . "\r\nConnection: close\r\n\r\n$body");
    my $r = Airlock::Test::parse_response($raw);
    $r->{events} = [ AgentTest::events($raw) ];
    $r->{json} = eval { decode_json($r->{body} // '') } // {};
    return $r;
}

sub calls { scalar(() = $a->provider_requests) }

# the denials the proxy logged for the agent's client
sub denials {
    my $n = 0;
    for (split /\n/, $t->read_file('journal.log') // '') {
        my $j = eval { decode_json($_) } or next;
        $n++ if ($j->{type} // '') eq 'deny'
                && ($j->{client} // '') eq 'agent';
    }
    return $n;
}

# three calls the proxy refuses: a service the route's pattern does not take
sub refused_calls {
    return { tool_calls => [ map { { name => 'logs', arguments => {
                 params => { service => "NOT-A-SERVICE-$_" } } } } 1 .. 3 ] };
}

$a->script(refused_calls(), { pieces => [ 'refused' ] });
my $r = ask($BOB, 'bob-1', 'fetch those logs');
my @denial = of_type('denial', $r->{events});
my ($limit) = of_type('limit', $r->{events});
is(scalar(@denial), 2, 'bob\'s first question: two calls refused');
is(($limit // {})->{limit}, 'user_denials',
   'then the run ends at his limit of the quarantine\'s window');
is($limit->{max}, 2, 'less than half of the quarantine\'s threshold');
like($limit->{message} // '', qr/--max-user-denials/,
     'its message names the option');
my ($done) = of_type('done', $r->{events});
is(($done // {})->{outcome}, 'limit', 'outcome limit');
my @tm = grep { $_->{role} eq 'tool' }
         @{(decode_json($a->redis_cli(qw(GET airlock:session:bob-1)) || '{}'))
             ->{messages} // []};
is(scalar(@tm), 3, 'every call of his answered in the session');
is(denials(), 2, 'the proxy refused two');
is($a->redis_cli(qw(ZCARD airlock:quota:denials:uid:61002)), 2,
   'counted against him in Redis');
my $pttl = $a->redis_cli(qw(PTTL airlock:quota:denials:uid:61002));
ok($pttl > 0 && $pttl <= 60000, 'kept no longer than the window');

my $before = calls();
$a->script(refused_calls(), { pieces => [ 'refused' ] });
$r = ask($BOB, 'bob-2', 'fetch those logs again');
is($r->{status} . ' ' . ($r->{json}{error} // ''), '429 quota',
   'his next question is refused');
like($r->{json}{message} // '', qr/uid:$BOB.*--max-user-denials \(2\)/,
     'naming whose, and the option');
is(calls(), $before, 'the model not called for it');
is(denials(), 2, 'nothing more refused: the client is far from its '
   . 'quarantine');

$a->script({ tool_calls => [ { name => 'prometheus-query', arguments => {
                 query => { query => 'node_load1' } } } ] },
           { pieces => [ 'load' ] });
$r = ask($ALICE, 'alice-1', 'what is the load?');
my ($res) = of_type('tool_result', $r->{events});
is(($res // {})->{status}, 200, 'alice\'s tool call is answered');
my ($ans) = of_type('answer', $r->{events});
is(($ans // {})->{text}, 'load', 'and her question answered: the agent\'s '
   . 'client is not quarantined (it was, its model calls refused too)');

# carol asks six questions at once, each model answer held until all six
# are asked, then three refused calls each: her calls in flight are
# held against her limit with her denials, so no number of questions at
# once takes her past it (each within --max-denials, they took 18)
my $gate = $t->testdir . '/gate';
my $base = calls();
my %one = %{refused_calls()};
$a->script(map { { %one, wait_file => $gate } } 1 .. 6);
my @p = map { [ $a->as_uid_start($sock, 61003,
                    do { my $b = encode_json({ prompt => "burst $_" });
                         "POST /v1/sessions/carol-$_/ask HTTP/1.1\r\n"
                         . "Host: a\r\nContent-Length: " . length($b)
                         . "\r\nConnection: close\r\n\r\n$b" }) ] } 1 .. 6;
for (1 .. 300) {
    last if calls() >= $base + 6;
    select(undef, undef, undef, 0.1);
}
is(calls(), $base + 6, 'six questions of carol\'s wait for the model at once');
$t->write_file('gate', '');
my @limits;
for (@p) {
    my $raw = $a->as_uid_end(@$_);
    push @limits, grep { ($_->{limit} // '') eq 'user_denials' }
                  of_type('limit', [ AgentTest::events($raw) ]);
}
is(denials(), 4, 'two refused of hers, no more');
is(scalar(@limits), 6, 'each of her runs ended at her limit');

$a->script({ tool_calls => [ { name => 'prometheus-query', arguments => {
                 query => { query => 'node_load1' } } } ] },
           { pieces => [ 'load' ] });
$r = ask($ALICE, 'alice-2', 'what is the load now?');
($ans) = of_type('answer', $r->{events});
is(($ans // {})->{text}, 'load', 'alice still served');

is($a->agent_errors, '', 'no sanitizer report');
