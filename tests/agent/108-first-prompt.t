#!/usr/bin/perl

# airlock-agent: a run's first model call is counted before it is made,
# as the later ones are (97-tokens-in-step.t, 101-prompt-growth.t).  The
# first call had no last prompt to count, so it asked for all the run
# (--max-tokens), or the owner's day (--max-user-tokens), had left, on
# top of a prompt of any size (the system prompt, the tools, the
# session's history, the question): one such call took either past its
# limit by its whole prompt.  Now its whole request is counted, at 2
# bytes a token: the call asks for what is left less that, and one whose
# prompt alone would take the run or the day to its limit is not made.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use Airlock::Test;
use AgentTest;

my $a = AgentTest->new;
my $t = $a->t;

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

$a->setup(agent => [ '--max-user-tokens', 0 ]);

plan tests => 13;

my $owner = "uid:$>";
my $Q = 'a short question';
my $F = $a->first_prompt($Q, '--max-user-tokens', 0);

sub day { $a->redis_cli('GET', "airlock:quota:tokens:$owner") || 0 }
sub calls { scalar(() = $a->provider_requests) }

# a model that writes as much as it is let, its prompt counted as a
# little less than the agent counts it
$a->llm->script_all({ pieces => [ 'w' ], obey_max_tokens => 1,
                      usage => { prompt => $F - 20, completion => 1e6 } });

# ---- --max-tokens ----------------------------------------------------------

# the prompt alone is over the run's limit: not sent
$a->start_agent('small', '--max-tokens', 1000, '--max-user-tokens', 0);
my $n0 = calls();
my $ev = $a->ask('first-1', $Q, agent => 'small');
is(calls(), $n0, 'a first prompt over the run\'s limit: not sent');
my ($l) = of_type('limit', $ev);
is(($l // {})->{limit}, 'tokens', '... the tokens limit said');
is(($l // {})->{next_prompt}, $F, '... with the prompt as counted');
like(($l // {})->{message} // '', qr/first model call's prompt, about $F /,
     '... and said so');
is(((of_type('done', $ev))[0] // {})->{tokens}, 0, '... nothing used');

# room for it: the call asks for what is left less its prompt
$a->start_agent('room', '--max-tokens', $F + 500, '--max-user-tokens', 0);
$n0 = calls();
$ev = $a->ask('first-2', $Q, agent => 'room');
is(calls(), $n0 + 1, 'a first prompt under the run\'s limit: sent');
is((($a->provider_requests)[-1] // {})->{body}{max_completion_tokens}, 500,
   '... asking for the tokens left less its prompt');
cmp_ok(((of_type('done', $ev))[0] // {})->{tokens} // 1e9, '<=', $F + 500,
       '... the run within its limit');

# ---- --max-user-tokens ------------------------------------------------------

$a->start_agent('day', '--max-user-tokens', 1000);
$a->redis_cli('DEL', "airlock:quota:tokens:$owner");
$n0 = calls();
$ev = $a->ask('first-3', $Q, agent => 'day');
is(calls(), $n0, 'a first prompt over the owner\'s quota: not sent');
($l) = of_type('limit', $ev);
is(($l // {})->{limit}, 'user_tokens', '... the user_tokens limit said');
like(($l // {})->{message} // '', qr/--max-user-tokens \(1000\)/,
     '... naming the option');
is(day(), 0, '... nothing counted');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
