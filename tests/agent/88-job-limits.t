#!/usr/bin/perl

# airlock-agent and the worker's limits.  The job's wall time is the one
# limit the agent sets (--job-wall); a worker whose max_wall_ms is lower
# refuses every job of the agent unrun (rejected, limit_exceeded).  The
# model got that result as data, like a script's own failure, and asked
# for the job again, refused the same; the operator saw nothing in the
# agent's log.  Now the model is told in the agent's words that it is an
# operator's setting and calling again will not help, the client gets an
# error event "job_limits", and the log says which setting.  The system
# prompt states the wall time a script gets and that the worker's other
# limits name themselves in the result; a job a limit ended reaches the
# model with that status and the limit's name.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use AgentTest;

my $a = AgentTest->new;
my $t = $a->t;

$a->setup(agent => [ '--job-wall', 7000, '--max-wall', 60000 ]);
$a->start_worker;

plan tests => 12;

# the worker's results, as airlock-worker writes them (docs/jobs.md, "The
# result"), played by the test's worker: a script whose first line is
# "# result: JSON" has that result
sub result {
    my (%r) = @_;
    return encode_json({ exit_code => undef, stdout => '', stderr => '',
                         stdout_truncated => JSON::PP::false,
                         stderr_truncated => JSON::PP::false,
                         backend => 'gvisor', timing_ms => { total => 1 },
                         %r });
}

sub job {
    my ($res) = @_;
    return { tool_calls => [ { name => 'run_python', arguments => {
                 script => "# result: $res\nprint(1)" } } ] };
}

sub tool_seen {
    my @prov = $a->provider_requests;
    my @tool = grep { $_->{role} eq 'tool' } @{$prov[-1]{body}{messages}};
    return ($tool[-1] // {})->{content} // '';
}

# ---- the worker refuses the agent's wall time ------------------------------
my $refused = result(status => 'rejected',
                     error => { code => 'limit_exceeded', message =>
                                'limits.wall_ms 7000 is above the maximum '
                                . '5000' });
$a->script(job($refused), { pieces => [ 'no job run' ] });
my $ev = $a->ask('lim-1', 'run something');

my @err = grep { ($_->{code} // '') eq 'job_limits' }
          AgentTest::of_type('error', $ev);
is(scalar @err, 1, 'an error event "job_limits"');
like($err[0] && $err[0]{message}, qr/7000 ms/,
     'naming the wall time the agent gave');

my $seen = tool_seen();
unlike($seen, qr/<<<DATA/, 'the model is told in the agent\'s words, not as '
                           . 'data');
like($seen, qr/operator's setting.*will not help/s,
     'that it is an operator\'s setting, and a call again will not help');
my $said = 'refused by the worker (limit_exceeded): its wall time, 7000 '
    . 'ms, is above the worker\'s max_wall_ms; set --job-wall';
like($a->agent_log, qr/job \S+ of session lim-1 \Q$said\E/,
     'the agent\'s log names the setting');

# ---- a job a limit ended: the model gets the status and the limit ---------
my $cut = result(status => 'oom', exit_code => 137,
                 error => { code => 'memory', message =>
                            'the script went over its memory limit of '
                            . '128 MiB' });
$a->script(job($cut), { pieces => [ 'out of memory' ] });
$ev = $a->ask('lim-2', 'run something big');
my ($job) = AgentTest::of_type('job', $ev);
is($job && $job->{status}, 'oom', 'the job event: status oom');
is($job && $job->{error}, 'memory', 'and the limit');
$seen = tool_seen();
like($seen, qr/"status":"oom"/, 'the model sees the status');
like($seen, qr/memory limit of 128 MiB/, 'and which limit, how much');
is(scalar(grep { ($_->{code} // '') eq 'job_limits' }
          AgentTest::of_type('error', $ev)), 0,
   'no job_limits error for it');

# ---- the system prompt states the limits -----------------------------------
my @prov = $a->provider_requests;
my $prompt = 'A run_python script gets at most 7000 ms of wall time; the '
    . 'worker also bounds its CPU time, memory, processes and output.';
like($prov[-1]{body}{messages}[0]{content},
     qr/\Q$prompt\E/,
     'the system prompt: the wall time a script gets, the worker\'s limits');

is($a->agent_errors, '', 'no sanitizer reports from the agent');
