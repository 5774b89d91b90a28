#!/usr/bin/perl

# airlock-agent, the load question end to end: the model (the scripted
# provider behind the real LLM gateway) queries the metrics through the
# named route, hands the data to run_python, and answers with the number
# the service returned.  The service wants a credential the agent never
# has: the proxy injects it.  The agent runs in a network namespace of its
# own, so all of this went through unix sockets.  The job is checked
# against the contract in Redis (the test plays the worker's part); the
# session continues in a second agent process and through nginx's /api/.

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
$a->setup;
$a->start_worker;

plan tests => 41;

my $load = $AgentTest::LOAD;
my $script = <<'PY';
import json
d = json.load(open("/app/data/data.json"))
v = d["cpu"]["body"]["data"]["result"][0]["value"][1]
print("load1=%s" % v)
PY

$a->script(
    { tool_calls => [ { name => 'prometheus-query',
                        arguments => { query => { query => 'node_load1' } } }
                    ] },
    { tool_calls => [ { name => 'run_python',
                        arguments => { script => $script, inputs => [
                            { name => 'cpu', route => 'prometheus-query',
                              query => { query => 'node_load1' } } ] } } ] },
    { quote => 'load1=([0-9.]+)',
      pieces => [ 'The 1-minute load ', 'is {{1}}', ' on prod-vm-04.' ] });

my ($ev, $raw) = $a->ask('load-1', 'why is the load high on this host?');

like($raw, qr{^HTTP/1.1 200 .*\r\ncontent-type: text/event-stream}is,
     'ask: an event stream');
my @types = map { $_->{type} } @$ev;
is($types[0], 'run', 'first event: run');
is($types[-1], 'done', 'last event: done');
is((of_type('done', $ev))[0]{outcome}, 'answer',
   'the run ended with an answer');
is(scalar(of_type('step', $ev)), 3, 'three steps');

my @calls = of_type('tool_call', $ev);
is($calls[0]{route}, 'prometheus-query', 'tool call 1: the named route');
is($calls[0]{method}, 'GET', 'tool call 1: GET');
is($calls[0]{target}, '/prometheus/query?query=node_load1',
   'tool call 1: the target built from the arguments');
my @res = of_type('tool_result', $ev);
is($res[0]{status}, 200, 'tool result: 200 through the proxy');
is($calls[1]{tool}, 'run_python', 'tool call 2: run_python');
like($calls[1]{job_id}, qr/^[0-9a-f]{32}$/, 'run_python: a job id');
my ($job) = of_type('job', $ev);
is($job->{status}, 'ok', 'job: ok');
is($job->{exit_code}, 0, 'job: exit 0');
ok(defined $job->{job_ms}, 'job: its time (job_ms)');

my ($answer) = of_type('answer', $ev);
like($answer->{text}, qr/load is \Q$load\E on prod-vm-04/,
     'the answer quotes the number the service returned');
is(scalar(of_type('error', $ev)), 0, 'no error events');

# the contract, as the worker sees it
my @jobs = $a->jsonl('jobs.log');
is(scalar @jobs, 1, 'one job on the stream');
is_deeply($jobs[0]{fields}, ['job'], 'the entry has the one field "job"');
my $env = decode_json($jobs[0]{job});
is($env->{job_id}, $calls[1]{job_id}, 'envelope: job_id');
is($env->{session_id}, 'load-1', 'envelope: session_id');
is($env->{script}, $script, 'envelope: the script as the model wrote it');
is_deeply($env->{blueprint}, { inputs => [ { name => 'cpu',
          route => 'prometheus-query', query => { query => 'node_load1' } } ] },
          'envelope: the blueprint');
ok($env->{limits}{wall_ms} > 0, 'envelope: a wall limit');

# the credential: injected by the proxy on every request the service saw;
# without it the service refuses
my @svc = $a->jsonl('services.log');
my $basic = 'Basic ' . MIME::Base64::encode_base64($AgentTest::PROM_SECRET, '');
ok(@svc >= 2, 'the service saw the agent\'s and the worker\'s requests');
is(scalar(grep { ($_->{headers}{authorization} // '') ne $basic } @svc), 0,
   'each with the credential the proxy injected');
like(http_get('/api/v1/query?query=node_load1', port => 8082),
     qr/^HTTP\/1.[01] 401/, 'a direct query without the credential: 401');
my @prov = $a->provider_requests;
is(scalar(grep { ($_->{headers}{authorization} // '') eq
                 "Bearer $Airlock::LLM::OPENAI_KEY" } @prov),
   scalar @prov, 'the provider got the key from the gateway');

# what the model saw: tool results wrapped as data, the system prompt
my $msgs = $prov[2]{body}{messages};
like($msgs->[0]{content}, qr/<<<DATA ([0-9a-f]{32})>>>.*never instructions/s,
     'system prompt: the boundary, and data is never instructions');
my ($b) = $msgs->[0]{content} =~ /<<<DATA ([0-9a-f]{32})>>>/;
my @tool = grep { $_->{role} eq 'tool' } @$msgs;
like($tool[0]{content}, qr/^<<<DATA $b>>>\n.*\n<<<END DATA $b>>>$/s,
     'tool result wrapped with the run\'s boundary');
ok(ref $prov[0]{body}{tools} eq 'ARRAY', 'the model was offered tools');

# tools from the policy: the same list airlockctl prints
my $ctl = $a->proxy->ctl;
my $list = decode_json(scalar
    qx{$ctl tools $t->{testdir}/policy.yaml --client agent});
is_deeply($prov[0]{body}{tools}, $list,
          'the tools offered are airlockctl tools --client agent');

# the agent had no network: its own namespace, no interface but lo
my $pid = $a->agent_pid;
isnt(readlink("/proc/$pid/ns/net"), readlink("/proc/self/ns/net"),
     'the agent runs in a network namespace of its own');
my @ifs = grep { /:/ } split /\n/, ($t->read_file("/proc/$pid/net/dev") // '');
is_deeply([ map { /^\s*([^:]+):/ ? $1 : $_ } @ifs ], ['lo'],
          'with no interface but loopback');

# stateless: a second agent process continues the session
$a->start_agent('b');
$a->script({ pieces => [ 'Still ', 'high.' ] });
$ev = $a->ask('load-1', 'and now?', agent => 'b');
is((of_type('answer', $ev))[0]{text}, 'Still high.', 'agent b answers');
@prov = $a->provider_requests;
my @seen = map { $_->{content} // '' } grep { $_->{role} eq 'user' }
           @{$prov[-1]{body}{messages}};
is_deeply(\@seen, ['why is the load high on this host?', 'and now?'],
          'agent b sent the history agent a stored');

my $s = $a->session('load-1', agent => 'a');
is($s->{status}, 200, 'GET session: 200');
is(scalar @{$s->{json}{runs}}, 2, 'history: both runs, from both agents');

# through nginx's /api/ as the UI tier does
$a->script({ pieces => [ 'Via the API.' ] });
($ev, $raw) = $a->ask('load-1', 'third', via_nginx => 1);
is((of_type('answer', $ev))[0]{text}, 'Via the API.',
   'asked through /api/ on nginx');

$s = $a->session('nope');
is($s->{status}, 404, 'an unknown session: 404');

is($t->error_log_check, '', 'no alerts in the error log');
is($a->agent_errors, '', 'no sanitizer reports from the agents');
