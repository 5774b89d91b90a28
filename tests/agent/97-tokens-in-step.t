#!/usr/bin/perl

# airlock-agent: --max-tokens holds within a step.  The run's tokens
# were looked at between model calls only, and each call asked for no
# output limit (the gateway's, if any, bounds one call), so a run could
# pass its limit by a whole call's answer.  Now each call names its
# output cap (max_completion_tokens, as the gateway names it for an
# "openai" entry): the tokens the run has left less the call's prompt,
# the last call's and what the step added to it
# (101-prompt-growth.t), or the gateway's cap for the client when that
# is less (a client refused over max_tokens is never asked for more).  A prompt that alone would take the run to its limit is not
# sent, and an answer cut where the run's tokens ran out ends the run
# with the "tokens" limit.  The scripted provider is held to the cap it
# is asked for (obey_max_tokens), as a provider is.  The run's first
# call is counted too, its whole request (AgentTest::first_prompt()):
# each limit here is that much larger, and the provider reports that
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
$a->setup(llm_agent => '{ max_tokens: 50, over_max_tokens: reject }',
          agent => [ '--max-tokens', 100, '--max-user-tokens', 0 ]);

plan tests => 15;

my $logs = { id => 'call_logs', name => 'logs',
             arguments => { params => { service => 'api' } } };

sub asked {
    my ($from) = @_;
    my @r = $a->provider_requests;
    return map { $_->{body}{max_completion_tokens} } @r[$from .. $#r];
}

# the last prompt (70) and what the step added to it would take the run
# to its limit (80 + 70 and more)
my $first = $a->first_prompt('the logs, with a long history',
                             '--max-user-tokens', 0);
$a->start_agent('s', '--max-tokens', $first + 100, '--max-user-tokens', 0);
my $n0 = scalar $a->provider_requests;
$a->script({ tool_calls => [ $logs ],
             usage => { prompt => $first + 70, completion => 10 } },
           { pieces => [ 'never' ] });
my $ev = $a->ask('step-2', 'the logs, with a long history', agent => 's');
is(scalar(asked($n0)), 1, 'a prompt that would pass the limit: not sent');
my @l = of_type('limit', $ev);
is(join(',', map { $_->{limit} } @l), 'tokens', 'the tokens limit said');
is(((of_type('done', $ev))[0] // {})->{tokens}, $first + 80,
   'the tokens used');
is(scalar(of_type('answer', $ev)), 0, 'no answer');

# what such a step adds to the prompt, as the agent counts it
my $grew = (($l[0] // {})->{next_prompt} // 70) - 70 - $first;

# two steps: the second asks for what is left, the run's limit less 50
# and the first prompt, and the second prompt (the first, 30 and what
# the step added), 20, and gets it
$first = $a->first_prompt('the logs, at length', '--max-user-tokens', 0);
my $max = $first + 50 + $first + 30 + $grew + 20;
$a->start_agent('c', '--max-tokens', $max, '--max-user-tokens', 0);
$n0 = scalar $a->provider_requests;
$a->script({ tool_calls => [ $logs ], obey_max_tokens => 1,
             usage => { prompt => $first + 30, completion => 20 } },
           { pieces => [ ('w') x 60 ], obey_max_tokens => 1,
             usage => { prompt => $first + 30 } });
$ev = $a->ask('step-1', 'the logs, at length', agent => 'c');
my @cap = asked($n0);
is(scalar(@cap), 2, 'two model calls');
is($cap[0], 50, 'the first asks for the gateway\'s cap, less than the run\'s');
is($cap[1], 20, 'the second for the run\'s tokens left less its prompt');
my ($done) = of_type('done', $ev);
cmp_ok($done->{tokens} // 1e9, '<=', $max,
       'the run\'s tokens within its limit');
is(length(((of_type('answer', $ev))[0] // {})->{text} // ''), 20,
   'the answer as far as the tokens went');
is(join(',', map { $_->{limit} } of_type('limit', $ev)), 'tokens',
   'the tokens limit said');
is($done->{outcome}, 'limit', 'outcome limit');

# with room to spare the call asks for the gateway's cap, which it takes
$a->start_agent('b', '--max-user-tokens', 0);
$n0 = scalar $a->provider_requests;
$a->script({ pieces => [ 'fine' ] });
$ev = $a->ask('step-3', 'a question', agent => 'b');
is(((of_type('answer', $ev))[0] // {})->{text}, 'fine',
   'the default --max-tokens: answered');
is((asked($n0))[0], 50, 'asked for the gateway\'s cap, not the run\'s');
is(((of_type('done', $ev))[0] // {})->{outcome}, 'answer', 'outcome answer');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
