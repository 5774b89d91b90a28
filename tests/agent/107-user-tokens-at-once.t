#!/usr/bin/perl

# airlock-agent: one owner's questions asked at once cannot each spend
# what --max-user-tokens leaves of the owner's day.  The day's count was
# read before each model call and added to after it, so every question
# asked at once read the same count and asked for the whole of what was
# left: three questions of one local user took the day to three times
# the quota (the gateway's budgets, every user's together,
# paying for it).  Now each model call is held against the day before
# it is made (airlock:quota:tokens:!held:<owner>, one script with the
# count): the calls held and the count stay within the quota, a call
# that finds nothing left while the owner's other calls are in flight
# waits for them, and the hold is let go when the call is answered,
# however it ends (the provider's error, the run's time out), or
# expires with the run's time when its process dies.

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

my $WALL = 30000;

# 1000 tokens past what a question's first call is counted before it is
# made (its whole request), which the provider counts as a little less
$a->setup(agent => [ '--max-user-tokens', 0 ]);
my $F = $a->first_prompt('x' x 20, '--max-user-tokens', 0);
my $QUOTA = $F + 1000;
$a->start_agent('a', '--max-wall', $WALL, '--max-user-tokens', $QUOTA,
                '--max-tokens', 100000);
$a->start_agent('w', '--max-wall', 2000, '--max-user-tokens', $QUOTA,
                '--max-tokens', 100000);

plan tests => 14;

my $UID = 61071;
my $owner = "uid:$UID";
my $HELD = "airlock:quota:tokens:!held:$owner";
my $sock = $a->{agents}{a}{sock};

sub day { $a->redis_cli('GET', "airlock:quota:tokens:$owner") || 0 }
sub calls { scalar(() = $a->provider_requests) }

sub ask_start {
    my ($agent, $id, $prompt) = @_;
    my $body = encode_json({ prompt => $prompt });
    return [ $a->as_uid_start($a->{agents}{$agent}{sock}, $UID,
                              "POST /v1/sessions/$id/ask HTTP/1.1\r\n"
                              . "Host: a\r\nContent-Length: "
                              . length($body)
                              . "\r\nConnection: close\r\n\r\n$body") ];
}

sub ask_end {
    my ($p) = @_;
    return [ AgentTest::events(scalar $a->as_uid_end(@$p)) ];
}

# a model that writes as much as it is let: its answer is cut at the
# output cap the call asks for, and all of it counted
my $gate = $t->testdir . '/gate';
my %long = (pieces => [ 'w' ], obey_max_tokens => 1,
            usage => { prompt => $F - 20, completion => 100000 });

# three questions at once, each model call held until the test has seen
# either all three at the provider or a call held against the day
my $base = calls();
$a->script(map { { %long, wait_file => $gate } } 1 .. 3);
my @p = map { ask_start('a', "at-once-$_", "write at length $_") } 1 .. 3;
my $held = 0;
for (1 .. 300) {
    last if calls() >= $base + 3;
    if (calls() >= $base + 1 && $a->redis_cli('EXISTS', $HELD)) {
        $held = 1;
        last;
    }
    select(undef, undef, undef, 0.1);
}
my $pttl = $a->redis_cli('PTTL', $HELD);
ok($pttl > 0 && $pttl <= $WALL + 10000,
   'a call held against the day expires with the run\'s time');
$t->write_file('gate', '');
my @ev = map { ask_end($_) } @p;
$a->script();

my @asked = map { $_->{body}{max_completion_tokens} // 0 }
            ($a->provider_requests)[$base .. calls() - 1];
my $asked = 0;
$asked += $_ for @asked;
ok($asked <= $QUOTA, 'the calls asked for no more than the quota together '
   . '(' . join('+', @asked) . ')');
ok(day() <= $QUOTA, 'the owner\'s day within the quota (' . day() . ')');
is(scalar(grep { of_type('answer', $_) } @ev), 1, 'one question answered');
is(scalar(grep { grep { ($_->{limit} // '') eq 'user_tokens' }
                 of_type('limit', $_) } @ev), 3,
   'each ended at the owner\'s limit');
is($a->redis_cli('ZCARD', $HELD), 0, 'no call held any more');

# the provider's error: the hold let go, nothing counted
$a->redis_cli('DEL', "airlock:quota:tokens:$owner");
$a->script({ status => 500 });
my $e = ask_end(ask_start('a', 'error-1', 'fail'));
is(((of_type('error', $e))[0] // {})->{code}, 'model', 'the model failed');
is($a->redis_cli('ZCARD', $HELD), 0, 'its hold let go');
is(day(), 0, 'nothing counted');

# the run's time out while the call waits: the hold let go
unlink $gate;
$a->script({ %long, wait_file => $gate });
$e = ask_end(ask_start('w', 'wall-1', 'wait'));
is(((of_type('limit', $e))[0] // {})->{limit}, 'wall_ms',
   'the run\'s time ran out in the call');
is($a->redis_cli('ZCARD', $HELD), 0, 'its hold let go');
$t->write_file('gate', '');
$a->script();

# the day has room again for a question alone, and it is answered
$a->script({ pieces => [ 'ok' ], usage => { prompt => 30, completion => 1 } });
$e = ask_end(ask_start('a', 'after-1', 'again'));
is(((of_type('answer', $e))[0] // {})->{text}, 'ok', 'a question answered');
is(day(), 31, 'and counted');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
