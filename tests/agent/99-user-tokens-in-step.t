#!/usr/bin/perl

# airlock-agent: --max-user-tokens holds within a step, as --max-tokens
# does (97-tokens-in-step.t).  The owner's day was looked at before each
# model call only, and the call asked for what the run had left, so a
# question could take its owner's day past the quota by a whole answer
# (the gateway's budgets, every user's together, paying for it).  Now a
# call asks for no more than the day has left less its prompt (the last
# call's and what the step added to it: 101-prompt-growth.t) when that
# is less than the run's; a
# prompt that alone would take the day to the quota is not sent, and an
# answer cut there ends the run with the "user_tokens" limit.  The
# scripted provider is held to the cap it is asked for.  The run's first
# call is counted too, its whole request (AgentTest::first_prompt()):
# each quota here is that much larger, and the provider reports that
# much more prompt for it.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use Airlock::Test;
use AgentTest;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $a = AgentTest->new;
my $t = $a->t;

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

$a->setup(agent => [ '--max-user-tokens', 100, '--max-tokens', 100000 ]);

plan tests => 12;

my $owner = "uid:$>";
my $logs = { id => 'call_logs', name => 'logs',
             arguments => { params => { service => 'api' } } };

sub day { $a->redis_cli('GET', "airlock:quota:tokens:$owner") }

sub asked {
    my ($from) = @_;
    my @r = $a->provider_requests;
    return map { $_->{body}{max_completion_tokens} } @r[$from .. $#r];
}

# the last prompt (70) and what the step added to it would take the day
# to the quota (80 + 70 and more)
my $first = $a->first_prompt('the logs, with a long history',
                             '--max-user-tokens', 0);
$a->start_agent('s', '--max-user-tokens', $first + 100, '--max-tokens',
                100000);
$a->redis_cli('DEL', "airlock:quota:tokens:$owner");
my $n0 = scalar $a->provider_requests;
$a->script({ tool_calls => [ $logs ],
             usage => { prompt => $first + 70, completion => 10 } },
           { pieces => [ 'never' ] });
my $ev = $a->ask('day-2', 'the logs, with a long history', agent => 's');
is(scalar(asked($n0)), 1, 'a prompt that would pass the quota: not sent');
my @l = of_type('limit', $ev);
is(join(',', map { $_->{limit} } @l), 'user_tokens',
   'the user_tokens limit said');
like(($l[0] // {})->{message} // '',
     qr/--max-user-tokens \(@{[ $first + 100 ]}\)/, '... naming the option');
is(day(), $first + 80, 'the owner\'s day: the call made');
is(scalar(of_type('answer', $ev)), 0, 'no answer');

# what such a step adds to the prompt, as the agent counts it
my $grew = (($l[0] // {})->{next_prompt} // 70) - 70 - $first;

# two steps: the first asks for the quota less its prompt; the second
# for what the day has left, the quota less 50 and the first prompt,
# and the second prompt (the first, 30 and what the step added), 20
$first = $a->first_prompt('the logs, at length', '--max-user-tokens', 0);
my $quota = $first + 50 + $first + 30 + $grew + 20;
$a->start_agent('c', '--max-user-tokens', $quota, '--max-tokens', 100000);
$a->redis_cli('DEL', "airlock:quota:tokens:$owner");
$n0 = scalar $a->provider_requests;
$a->script({ tool_calls => [ $logs ], obey_max_tokens => 1,
             usage => { prompt => $first + 30, completion => 20 } },
           { pieces => [ ('w') x 60 ], obey_max_tokens => 1,
             usage => { prompt => $first + 30 } });
$ev = $a->ask('day-1', 'the logs, at length', agent => 'c');
my @cap = asked($n0);
is(join(',', @cap), ($quota - $first) . ",20",
   'each call asks for what the day has left, less its prompt');
is(day(), $quota - $grew, 'the owner\'s day within the quota');
is(length(((of_type('answer', $ev))[0] // {})->{text} // ''), 20,
   'the answer as far as the day went');
@l = of_type('limit', $ev);
is(join(',', map { $_->{limit} } @l), 'user_tokens',
   'the user_tokens limit said');
is(($l[0] // {})->{value}, $quota - $grew, '... the day\'s count');
is(((of_type('done', $ev))[0] // {})->{outcome}, 'limit', 'outcome limit');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
