#!/usr/bin/perl

# airlock-agent --job-wall: a job's wall time is at least the worker's
# floor, 100 ms (AW_MIN_WALL_MS: an envelope asking less is refused,
# bad_envelope).  Less was taken, and then every run_python was a job
# queued, awaited and refused: "--job-wall 60", meant as seconds, made
# run_python fail for every question.  --help names the worker's own
# maximum too, which it refuses more than (limit_exceeded).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use Airlock::Test;
use AgentTest;

my $a = AgentTest->new;
my $t = $a->t;

$a->setup;

plan tests => 7;

for my $v (60, 99) {
    my ($rc, $err) = $a->run_briefly('--job-wall' => $v);
    is($rc, 2, "--job-wall $v: refused at start (exit status 2)");
    like($err, qr/--job-wall wants .*100/, "--job-wall $v: the error says "
                                           . 'the least it takes');
}

my ($rc) = $a->run_briefly('--job-wall' => 100);
is($rc, 'listening', '--job-wall 100 is taken');

my $help = `$t->{build}/airlock-agent --help`;
like($help, qr/--job-wall MS .*100 to the\s+worker's max_wall_ms/s,
     '--help names the floor and the worker\'s maximum');

is($a->agent_errors, '', 'no sanitizer reports from the agent');
