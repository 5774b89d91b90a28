#!/usr/bin/perl

# airlock-agent: everything of a run_python result that goes into the
# model's history counts against --max-tool-bytes, whatever the worker
# put in it.  A compromised worker's stdout that is an object, a stderr
# that is an array, an "error" of any size: each is counted as the JSON
# the model would get, and a result over the limit is not shown.  The
# "job" event takes from the result short strings (status, backend, the
# error's code) and integers (exit_code, the total ms as job_ms) only, so the
# worker cannot make the client's events, or the run's record kept in
# the session, as large as it likes.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use AgentTest;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

my $a = AgentTest->new;
my $t = $a->t;
$a->setup(agent => [ '--max-tool-bytes', 2000, '--max-wall', 60000 ]);
$a->start_worker;

plan tests => 29;

my $big = 'y' x 5000;

# the worker's result is the JSON after "# result: " (fake-worker.py)
sub job {
    my ($result) = @_;
    return { name => 'run_python', arguments => {
        script => '# result: ' . encode_json($result) . "\nprint(1)\n" } };
}

sub over {
    my ($what, $result) = @_;
    my $before = scalar($a->provider_requests);

    $a->script({ tool_calls => [ job($result) ] },
               { pieces => [ 'never' ] });
    my $ev = $a->ask("job-$what", "a job: $what");
    my @l = of_type('limit', $ev);

    is(scalar(@l) == 1 && $l[0]{limit}, 'tool_bytes',
       "$what: the tool_bytes limit");
    cmp_ok((of_type('done', $ev))[0]{tool_bytes}, '>', 5000,
           "$what: all of it counted");
    is(scalar(of_type('answer', $ev)), 0, "$what: no answer");
    is(scalar($a->provider_requests), $before + 1,
       "$what: the model was not asked again");

    my $r = $a->session("job-$what");
    my ($tool) = grep { $_->{role} eq 'tool' } @{$r->{json}{messages} // []};
    my $text = $tool ? $tool->{content} : '';
    ok($text =~ /over the tool output limit/,
       "$what: the history says it was not shown");
    ok($text !~ /yyyy/, "$what: none of it in the history");
}

my %ok = (status => 'ok', exit_code => 0, stdout_truncated => JSON::PP::false,
          stderr_truncated => JSON::PP::false, backend => 'none',
          timing_ms => { total => 987654321 });

over('stdout-object', { %ok, stdout => { data => $big }, stderr => '' });
over('stderr-array', { %ok, stdout => '', stderr => [ $big ] });
over('error', { %ok, status => 'error', stdout => '', stderr => '',
                error => { code => 'internal', message => $big } });

# a small result still answers: what it counts is what the model gets
$a->script({ tool_calls => [ job({ %ok, stdout => { n => 42 },
                                   stderr => '' }) ] },
           { quote => '"n":(\d+)', pieces => [ 'it is {{1}}' ] });
my $ev = $a->ask('job-small', 'a small job');
is((of_type('answer', $ev))[0]{text}, 'it is 42', 'a small result: answered');
my ($job) = of_type('job', $ev);
is_deeply([ map { $job->{$_} } qw(status exit_code backend job_ms) ],
          [ 'ok', 0, 'none', 987654321 ],
          'a small result: the job event has it, the worker\'s time as job_ms');
cmp_ok($job->{ms}, '<', 987654321, 'a small result: its ms is the run\'s time');
cmp_ok((of_type('done', $ev))[0]{tool_bytes}, '>', 0,
       'a small result: counted');

# fields over the event's bounds, or of another kind, are left out
my $huge = 'z' x 10000;
$a->script({ tool_calls => [ job({ status => $huge, exit_code => $huge,
                                   backend => $huge, stdout => '',
                                   stderr => '',
                                   error => { code => $huge,
                                              message => 'm' },
                                   timing_ms => { total => [ $huge ] } }) ] },
           { pieces => [ 'never' ] });
my $raw;
($ev, $raw) = $a->ask('job-fields', 'a job with huge fields');
($job) = of_type('job', $ev);
ok($job, 'huge fields: a job event');
is_deeply([ map { $job && $job->{$_} }
            qw(status exit_code backend error job_ms) ],
          [ (undef) x 5 ], 'huge fields: none of them in the event');
unlike($raw, qr/zzzz/, 'huge fields: none of them sent to the client');
my $r = $a->session('job-fields');
unlike(encode_json($r->{json}{runs} // []), qr/zzzz/,
       'huge fields: none of them in the run\'s record');
is(join(',', map { $_->{limit} } of_type('limit', $ev)), 'tool_bytes',
   'huge fields: the model\'s result counted whole, over the limit');

is($t->error_log_check, '', 'no alerts in the error log');
is($a->agent_errors, '', 'no sanitizer reports from the agents');
