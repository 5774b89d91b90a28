#!/usr/bin/perl

# airlock-agent: --max-tokens and --max-user-tokens count the prompt a
# model call is about to send.  Each call asked for no more output than
# the run (and the owner's day) had left less the last call's prompt,
# but the next prompt is the last one and all a step added to it: the
# model's answer and the tool results, up to --max-tool-bytes.  Nothing
# counted those before the provider did, so one step's tool results
# took a run, and its owner's day, past the limit by as much as they
# were.  Now the call's prompt is the last one's and the bytes the
# request grew by since, at 2 bytes a token: a call whose prompt so
# counted would take the run (or the day) to its limit is not made, and
# the run ends with the limit, naming the estimate; a call that is made
# asks for no more output than what is left after it.

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

$a->setup(agent => [ '--max-user-tokens', 0 ]);

# the run's first call is counted too, its whole request
# (AgentTest::first_prompt()): each limit here is that much larger (and
# a second call's prompt, the first's and more, twice that), and the
# provider reports that much more prompt for the first call
my %first = map { $_ => $a->first_prompt($_, '--max-user-tokens', 0) }
            ('the logs, all of them', 'the logs, briefly');
$a->start_agent('g', '--max-tokens', $first{'the logs, all of them'} + 1000,
                '--max-user-tokens', 0);
$a->start_agent('g2', '--max-tokens', 2 * $first{'the logs, briefly'} + 1000,
                '--max-user-tokens', 0);
my $quota = $first{'the logs, all of them'} + 1000;
$a->start_agent('day', '--max-tokens', 100000, '--max-user-tokens', $quota);

plan tests => 17;

my $owner = "uid:$>";
my $logs = { id => 'call_logs', name => 'logs',
             arguments => { params => { service => 'api' } } };

sub day { $a->redis_cli('GET', "airlock:quota:tokens:$owner") }

sub asked {
    my ($from) = @_;
    my @r = $a->provider_requests;
    return map { $_ } @r[$from .. $#r];
}

# ---- a tool result far larger than the tokens left ------------------------

# 3000 bytes of logs: the next prompt is 30 and some 1500 tokens more,
# the run has 950 left
$t->write_file('service-logs.txt', 'x' x 3000);

my $f = $first{'the logs, all of them'};
my $n0 = scalar $a->provider_requests;
$a->script({ tool_calls => [ $logs ],
             usage => { prompt => $f + 30, completion => 20 } },
           { pieces => [ 'never' ] });
my $ev = $a->ask('grow-1', 'the logs, all of them', agent => 'g');
is(scalar(asked($n0)), 1, 'a prompt the tool results took past the limit: '
   . 'not sent');
my @l = of_type('limit', $ev);
is(join(',', map { $_->{limit} } @l), 'tokens', 'the tokens limit said');
cmp_ok(($l[0] // {})->{next_prompt} // 0, '>=', $f + 30 + 3000 / 4,
       '... with the next prompt as counted');
like(($l[0] // {})->{message} // '', qr/next model call's prompt, about \d+ tokens/,
     '... and said so');
my ($done) = of_type('done', $ev);
is(($done // {})->{tokens}, $f + 50, 'the tokens used: the one call\'s');
is(($done // {})->{outcome}, 'limit', 'outcome limit');

# the session goes on (on an agent with room for its history): the call
# has its result in the history
$t->write_file('service-logs.txt', "ok\n");
$n0 = scalar $a->provider_requests;
$a->script({ pieces => [ 'fine' ] });
$ev = $a->ask('grow-1', 'and now, briefly?');
is(((of_type('answer', $ev))[0] // {})->{text}, 'fine',
   'the session continues');
my ($req) = asked($n0);
my $msgs = (($req // {})->{body} // {})->{messages} // [];
is(scalar(grep { ($_->{tool_call_id} // '') eq 'call_logs' } @$msgs), 1,
   '... its call answered in the history');

# ---- a small tool result: the call made, its cap less what it added --------

$n0 = scalar $a->provider_requests;
$f = $first{'the logs, briefly'};
$a->script({ tool_calls => [ $logs ], obey_max_tokens => 1,
             usage => { prompt => $f + 30, completion => 20 } },
           { pieces => [ 'fine' ], usage => { prompt => $f + 40 } });
$ev = $a->ask('grow-2', 'the logs, briefly', agent => 'g2');
my @r = asked($n0);
is(scalar(@r), 2, 'a prompt that fits: sent');
my $grew = ($r[1]{headers}{'content-length'} // 0)
           - ($r[0]{headers}{'content-length'} // 0);
my $cap = $r[1]{body}{max_completion_tokens} // 0;
cmp_ok($cap, '<=', 1000 - 50 - 30 - int($grew / 4),
       'its cap: the tokens left less the last prompt and what it grew by');
cmp_ok($cap, '>=', 1000 - 50 - 30 - $grew - 16,
       '... counted at no more than a token a byte');
is(((of_type('answer', $ev))[0] // {})->{text}, 'fine', 'answered');

# ---- the owner's day ------------------------------------------------------

$t->write_file('service-logs.txt', 'x' x 3000);
$a->redis_cli('DEL', "airlock:quota:tokens:$owner");
$n0 = scalar $a->provider_requests;
$f = $first{'the logs, all of them'};
$a->script({ tool_calls => [ $logs ],
             usage => { prompt => $f + 30, completion => 20 } },
           { pieces => [ 'never' ] });
$ev = $a->ask('grow-3', 'the logs, all of them', agent => 'day');
is(scalar(asked($n0)), 1, 'a prompt the tool results took past the quota: '
   . 'not sent');
@l = of_type('limit', $ev);
is(join(',', map { $_->{limit} } @l), 'user_tokens',
   'the user_tokens limit said');
like(($l[0] // {})->{message} // '', qr/--max-user-tokens \($quota\)/,
     '... naming the option');
is(day(), $f + 50, 'the owner\'s day: the one call, not past the quota');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
