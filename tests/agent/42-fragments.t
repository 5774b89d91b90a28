#!/usr/bin/perl

# airlock-agent: a model's answer streamed in many tiny pieces is joined
# in time linear in its size.  A provider (hostile, or broken) that sends
# a tool call's arguments one byte per event, 256 KiB of them for each
# of several calls, used to cost the agent a copy of all the arguments
# so far for each byte: tens of seconds of CPU for one answer.
# Here the stream comes from a stand-in for Airlock's socket
# (lib/fragment-gateway.py), four calls of 256 KiB, a byte per event,
# then an answer in 4096 pieces.
#
# Linear is told from quadratic by the agent's CPU time for that stream
# against its CPU time for one a quarter as long, in the same run, not
# by a wall time: a loaded machine (a sanitizer build beside other work)
# once took the run past a 30 s wall time with nothing wrong.  Linear
# joining costs about four times as much for four times the pieces (less,
# with what a run costs whatever its size); the quadratic one cost about
# thirteen times as much (16 for the copies alone).  The runs' wall time
# (600 s) is only a backstop.

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

plan tests => 8;

my $pieces = 256 * 1024 - 64;

# the agent's CPU time, its own and its reaped children's (utime, stime,
# cutime, cstime: fields 14 to 17 of /proc/PID/stat, after the command
# name), in seconds
my $hz = `getconf CLK_TCK` || 100;
sub cpu {
    my ($name) = @_;
    my $stat = $t->read_file('/proc/' . $a->agent_pid($name) . '/stat');
    defined $stat or die "no /proc stat for agent $name\n";
    my @f = split ' ', ($stat =~ /\)\s(.*)/s)[0];
    return ($f[11] + $f[12] + $f[13] + $f[14]) / $hz;
}

# an agent for each stream: the stand-in answers its first call with
# the pieces, the later ones with the text
my %ev;
for my $v (['q', $pieces / 4, 1024], ['b', $pieces, 4096]) {
    my ($name, $n, $text) = @$v;
    $t->write_file("fragments-$name.log", '');
    $t->run_daemon('python3', "$FindBin::Bin/lib/fragment-gateway.py",
                   "$d/fragments-$name.sock", '--pieces', $n,
                   '--calls', 4, '--text', $text,
                   '--log', "$d/fragments-$name.log");
    $t->wait_for_port("unix:$d/fragments-$name.sock")
        or die "fragment-gateway.py did not start\n";

    $a->start_agent($name, '--gateway', "$d/fragments-$name.sock",
                    '--max-wall', 600000, '--max-tokens', 1000000000,
                    '--max-tool-bytes', 1000000);
}

my %cpu;
for my $name ('q', 'b') {
    my $before = cpu($name);
    $ev{$name} = $a->ask("frag-$name", 'many pieces', agent => $name,
                         timeout => 700);
    $cpu{$name} = cpu($name) - $before;
}

my $ev = $ev{b};
my @err = of_type('error', $ev);

is(join(',', map { $_->{code} } @err), join(',', ('unknown_tool') x 4),
   'four calls, their arguments whole: each an unknown tool');
is(scalar(grep { $_->{tool} eq '_unknown_tool' } @err), 4,
   'each named as a call of no tool (nope-0 to nope-3)');
is(join(',', map { $_->{limit} } of_type('limit', $ev), of_type('limit',
   $ev{q})), '', 'no limit reached');
ok($cpu{b} < 8 * ($cpu{q} + 0.05),
   sprintf('joined in linear time: %.2f s of CPU for the pieces, '
           . '%.2f s for a quarter of them', $cpu{b}, $cpu{q}));
is(((of_type('answer', $ev))[0] // {})->{text}, 'd' x 4096,
   'the answer, in as many pieces, whole');
is(((of_type('done', $ev))[0] // {})->{outcome}, 'answer',
   'the run answered');

my $r = $a->session('frag-b', agent => 'b');
my ($call) = grep { $_->{tool_calls} } @{$r->{json}{messages} // []};
is(length(($call // {})->{tool_calls}[3]{function}{arguments} // ''),
   $pieces, 'the last call\'s arguments kept whole');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
