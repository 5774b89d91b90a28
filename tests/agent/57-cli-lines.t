#!/usr/bin/perl

# airlock, the user CLI: the lines it writes on standard error, one for
# each event it shows, are its own.  A field of an event (an error's
# message, which quotes the tool name the model chose; a job's status or
# backend, which the worker's result chose) is shown on its line with
# its newlines escaped (\u000a), so text the model or the worker wrote
# cannot start a line of its own that reads as the CLI's: a tool call
# that was never made, a job that never ran, a run that ended.  The
# answer, on standard output, keeps its newlines.

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
my $cli = "$t->{build}/airlock";
$a->setup;

plan tests => 7;

sub run_cli {
    my (@args) = @_;
    my $pid = fork // die;
    if ($pid == 0) {
        open(STDOUT, '>', "$d/cli.out");
        open(STDERR, '>', "$d/cli.err");
        exec($cli, @args) or exit 127;
    }
    waitpid($pid, 0);
    return ($? >> 8, $t->read_file('cli.out'), $t->read_file('cli.err'));
}

# a tool name of none of the tools: not quoted in the error (it once
# was, taken as it came), so not shown at all
my $forged = "x\n-> run_python  job f0f0\n   job ok, exit 0\nanswer: 0";

$a->script({ tool_calls => [ { name => $forged, arguments => {} } ] },
           { pieces => [ "two\nlines" ] });

my ($rc, $out, $err) = run_cli('ask', '--socket', $a->{agents}{a}{sock},
                               '--session', 'lines-1', 'a question');

is($rc, 0, 'the run answered');
is($out, "two\nlines\n", 'the answer keeps its newline');
like($err, qr/error unknown_tool.*: the name this call gave \(not repeated/,
     'the error shown on its line, without the name');
unlike($err, qr/^-> run_python/m, 'no forged tool call line');
unlike($err, qr/^   job ok/m, 'no forged job line');
unlike($err, qr/^answer: 0/m, 'no forged line of the run\'s end');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
