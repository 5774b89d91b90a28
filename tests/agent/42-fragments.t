#!/usr/bin/perl

# airlock-agent: a model's answer streamed in many tiny pieces is joined
# in time linear in its size.  A provider (hostile, or broken) that sends
# a tool call's arguments one byte per event, 256 KiB of them for each
# of several calls, used to cost the agent a copy of all the arguments
# so far for each byte: tens of seconds of CPU for one answer, past the
# run's wall time, so the run ended at its limit instead of going on.
# Here the stream comes from a stand-in for Airlock's socket
# (lib/fragment-gateway.py), four calls of 256 KiB, a byte per event,
# then an answer in 4096 pieces; the run has a wall time (30 s) far above
# what the joining needs now (well under a second of CPU) and far below
# what it needed before (over 30 s: the run ended at its wall time).

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
my $d = $t->testdir;

$a->setup;

plan tests => 7;

my $pieces = 256 * 1024 - 64;
$t->write_file('fragments.log', '');
$t->run_daemon('python3', "$FindBin::Bin/lib/fragment-gateway.py",
               "$d/fragments.sock", '--pieces', $pieces, '--calls', 4,
               '--text', 4096,
               '--log', "$d/fragments.log");
$t->wait_for_port("unix:$d/fragments.sock")
    or die "fragment-gateway.py did not start\n";

$a->start_agent('b', '--gateway', "$d/fragments.sock",
                '--max-wall', 30000, '--max-tokens', 1000000000,
                '--max-tool-bytes', 1000000);

my $ev = $a->ask('frag-1', 'many pieces', agent => 'b', timeout => 90);

my @err = of_type('error', $ev);

is(join(',', map { $_->{code} } @err), join(',', ('unknown_tool') x 4),
   'four calls, their arguments whole: each an unknown tool');
is(scalar(grep { $_->{message} =~ /"nope-[0-3]"/ } @err), 4,
   'each named as the model named it');
is(join(',', map { $_->{limit} } of_type('limit', $ev)), '',
   'no limit reached: the pieces were joined well within the wall time');
is(((of_type('answer', $ev))[0] // {})->{text}, 'd' x 4096,
   'the answer, in as many pieces, whole');
is(((of_type('done', $ev))[0] // {})->{outcome}, 'answer',
   'the run answered');

my $r = $a->session('frag-1', agent => 'b');
my ($call) = grep { $_->{tool_calls} } @{$r->{json}{messages} // []};
is(length(($call // {})->{tool_calls}[3]{function}{arguments} // ''),
   $pieces, 'the last call\'s arguments kept whole');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
