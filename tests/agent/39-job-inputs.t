#!/usr/bin/perl

# airlock-agent: a run_python input names one of the routes the tool
# offers, those granted to the sandbox's client (--sandbox).  A model
# that names another route (one granted to the agent only, say) gets the
# error a route the policy lacks gets, and no job is queued: the worker would fetch it as its own
# client, and the proxy's denial would count against the worker (its
# alerts, its quarantine, cutting off every run's jobs), not the run.
# An input the proxy denies the worker all the same (its parameters, say:
# the job's error code route_denied) is the run's denial, counted
# against --max-denials, so a run cannot make such jobs without bound.

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
$a->setup(routes => <<'EOF2', agent => [ '--max-wall', 60000 ]);
  - name: agent-notes
    description: the agent's own notes; the worker lacks it
    clients: [agent]
    match: { method: GET, path: /notes }
    upstream: svc
    to: /api/v1/notes
EOF2
$a->start_worker;

plan tests => 16;

sub job {
    my (@routes) = @_;
    my $i = 0;
    return { name => 'run_python', arguments => {
        script => "print(42)\n",
        inputs => [ map { { name => 'in' . $i++, route => $_ } } @routes ]
    } };
}

# ---- an input the sandbox's client is not granted --------------------------

$a->script({ tool_calls => [ job('prometheus-query', 'agent-notes') ] },
           { pieces => [ 'done' ] });
my $ev = $a->ask('inputs-1', 'a job over the notes');

my @err = of_type('error', $ev);
is(scalar(@err) == 1 && $err[0]{code}, 'bad_tool_arguments',
   'an input route the sandbox lacks: an error');
like($err[0] ? $err[0]{message} : '',
     qr/input 1 needs .* a "route" that is one of run_python's routes$/,
     'the error names the input, not the route, as for a route of none');
is(scalar(of_type('job', $ev)), 0, 'no job event');
is(scalar($a->jsonl('jobs.log')), 0, 'no job was queued for the worker');
is((of_type('done', $ev))[0]{outcome}, 'answer', 'the run goes on');

my @prov = $a->provider_requests;
my ($tool) = grep { $_->{role} eq 'tool' } @{$prov[1]{body}{messages}};
like($tool ? $tool->{content} : '', qr/^error: run_python: input 1/,
     'the model is told');

my ($rp) = grep { $_->{function}{name} eq 'run_python' }
           @{$prov[0]{body}{tools}};
my $enum = $rp->{function}{parameters}{properties}{inputs}{items}
               {properties}{route}{enum};
ok(!grep({ $_ eq 'agent-notes' } @$enum),
   'the tool never offered that route');

# ---- the routes it is granted still run ------------------------------------

$a->script({ tool_calls => [ job('prometheus-query') ] },
           { pieces => [ 'done' ] });
$ev = $a->ask('inputs-2', 'a job over the load');
is(join(',', map { $_->{status} // '' } of_type('job', $ev)), 'ok',
   'a granted input: the job ran');

# ---- inputs the proxy denied the worker: the run's denials --------------

# the worker's result for a denied input (docs/jobs.md), played
my $deny = { name => 'run_python', arguments => {
    script => '# result: ' . encode_json({
        status => 'error', exit_code => undef, stdout => '', stderr => '',
        stdout_truncated => JSON::PP::false,
        stderr_truncated => JSON::PP::false, backend => 'none',
        error => { code => 'route_denied', message => 'input "x": GET '
                   . '/logs/Bad denied by the proxy: params' } })
        . "\nprint(1)\n",
    inputs => [ { name => 'x', route => 'logs',
                  params => { service => 'Bad' } } ] } };

my $jobs = scalar($a->jsonl('jobs.log'));
my $asked = scalar($a->provider_requests);
$a->script({ tool_calls => [ ($deny) x 5 ] }, { pieces => [ 'done' ] });
$ev = $a->ask('inputs-3', 'jobs the proxy denies');

my @l = of_type('limit', $ev);
is(scalar(@l) == 1 && $l[0]{limit}, 'denials',
   'denied inputs: the denials limit');
is((of_type('done', $ev))[0]{denials}, 3, 'denied inputs: 3 denials counted');
is(scalar($a->jsonl('jobs.log')) - $jobs, 3,
   'denied inputs: no job queued past the limit');
is(scalar($a->provider_requests), $asked + 1,
   'denied inputs: the model was not asked again');
my @tool = grep { $_->{role} eq 'tool' }
           @{$a->session('inputs-3')->{json}{messages} // []};
is(scalar(@tool), 5, 'denied inputs: every call has its result');
like($tool[4] ? $tool[4]{content} : '', qr/the run ended first/,
     'denied inputs: the calls past the limit not run');

is($t->error_log_check, '', 'no alerts in the error log');
is($a->agent_errors, '', 'no sanitizer reports from the agents');
