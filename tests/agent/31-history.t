#!/usr/bin/perl

# airlock-agent: a session's earlier questions are sent to the model up to
# --history-bytes (their messages as stored, compact JSON); past it the
# oldest questions go first, each whole (its prompt, the model's calls and
# their results, the answer), so a tool result never loses its call and
# the session goes on however long it runs.  --history-bytes 0 sends no
# earlier question.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use Airlock::Test;
use AgentTest;

my $a = AgentTest->new;
my $t = $a->t;
$a->setup(agent => [ '--history-bytes', 700 ]);
$a->start_agent('fresh', '--history-bytes', 0);

plan tests => 14;

my $logs = { name => 'logs', arguments => {
    params => { service => 'api' } } };

# the prompts the model got in the last call, in order
sub prompts_sent {
    my @r = $a->provider_requests;
    return map { $_->{content} } grep { $_->{role} eq 'user' }
           @{$r[-1]{body}{messages}};
}

my ($one, $two, $three) = map { "question $_ " . ('.' x 250) } 1 .. 3;

# one: a tool call and its result, then the answer
$a->script({ tool_calls => [ $logs ] }, { pieces => [ 'first answer' ] });
my $ev = $a->ask('h', $one);
my ($run) = of_type('run', $ev);
is_deeply($run->{history}, { messages => 0, dropped => 0 },
          'a new session: no history');

$a->script({ pieces => [ 'second answer' ] });
$ev = $a->ask('h', $two);
($run) = of_type('run', $ev);
is_deeply($run->{history}, { messages => 4, dropped => 0 },
          'question two: question one\'s four messages, under the bound');
is_deeply([ prompts_sent() ], [ $one, $two ], '... all sent');

$a->script({ pieces => [ 'third answer' ] });
$ev = $a->ask('h', $three);
($run) = of_type('run', $ev);
is_deeply($run->{history}, { messages => 2, dropped => 4 },
          'question three: question one dropped, whole');
is_deeply([ prompts_sent() ], [ $two, $three ],
          '... the model gets questions two and three');
my @r = $a->provider_requests;
is(scalar(grep { $_->{role} eq 'tool' || $_->{tool_calls} }
          @{$r[-1]{body}{messages}}), 0,
   '... with none of question one\'s call and result');
is((of_type('answer', $ev))[0]{text}, 'third answer', '... and answers');

my $s = $a->session('h');
is($s->{status}, 200, 'the session');
is_deeply([ map { $_->{content} } grep { $_->{role} eq 'user' }
            @{$s->{json}{messages}} ], [ $two, $three ],
          '... keeps the messages it sends');
is(scalar(@{$s->{json}{runs}}), 3, '... and the record of every run');

# a question larger than the bound alone is never cut; the next drops it
$a->script({ pieces => [ 'long answer' ] });
$ev = $a->ask('h', 'x' x 2000);
is((of_type('answer', $ev))[0]{text}, 'long answer',
   'a question over the bound by itself is asked whole');
$a->script({ pieces => [ 'after' ] });
$ev = $a->ask('h', 'short');
($run) = of_type('run', $ev);
is_deeply([ prompts_sent() ], [ 'short' ],
          '... and dropped from the next with all before it');

# --history-bytes 0: every question alone
$a->script({ pieces => [ 'a' ] });
$a->ask('z', 'first', agent => 'fresh');
$a->script({ pieces => [ 'b' ] });
$ev = $a->ask('z', 'second', agent => 'fresh');
is_deeply([ prompts_sent() ], [ 'second' ],
          '--history-bytes 0: no earlier question is sent');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
