#!/usr/bin/perl

# airlock, the user CLI: a run shown as it happens (tool calls with route
# and status, jobs with exit and time, denials, the answer on stdout),
# --json for the raw events, --session to continue, --url for nginx's
# /api/, and an exit status that says how the run ended.

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
my $d = $t->testdir;
my $cli = "$t->{build}/airlock";
$a->setup(agent => [ '--max-steps', 2 ]);
$a->start_worker;

plan tests => 20;

sub run_cli {
    my (@args) = @_;
    my $out = "$d/cli.out";
    my $err = "$d/cli.err";
    my $pid = fork // die;
    if ($pid == 0) {
        open(STDOUT, '>', $out);
        open(STDERR, '>', $err);
        exec($cli, @args) or exit 127;
    }
    waitpid($pid, 0);
    return ($? >> 8, $t->read_file('cli.out'), $t->read_file('cli.err'));
}

my @sock = ('--socket', $a->{agents}{a}{sock});

$a->script(
    { tool_calls => [ { name => 'prometheus-query',
                        arguments => { query => { query => 'up' } } },
                      { name => 'run_python', arguments => {
                        script => 'print(6 * 7)' } } ] },
    { pieces => [ 'All ', 'fine.' ] });

my ($rc, $out, $err) = run_cli('ask', @sock, '--session', 'cli-1',
                               'is everything up?');
is($rc, 0, 'answered: exit 0');
is($out, "All fine.\n", 'the answer on stdout');
like($err, qr/^session cli-1$/m, 'the session');
like($err, qr{-> prometheus-query  GET /prometheus/query\?query=up}m,
     'the tool call with its route');
like($err, qr/^   200  \d+ bytes$/m, 'its status');
like($err, qr/-> run_python  job [0-9a-f]{32}/, 'the sandbox job');
like($err, qr/job ok, exit 0, \d+ ms \(none\)/, 'with exit and time');
like($err, qr/answer: 2 steps/, 'a summary');

# --json: the raw events; the session continues
$a->script({ pieces => [ 'Yes.' ] });
($rc, $out) = run_cli('ask', @sock, '--session', 'cli-1', '--json',
                      'still?');
is($rc, 0, '--json: exit 0');
my @ev = map { decode_json($_) } split /\n/, $out;
is($ev[0]{type}, 'run', '--json: every event, one a line');
is($ev[-1]{type}, 'done', '--json: done last');
is((grep { $_->{type} eq 'answer' } @ev)[0]{text}, 'Yes.', '--json: answer');
my @prov = $a->provider_requests;
is(scalar(grep { $_->{role} eq 'user' } @{$prov[-1]{body}{messages}}), 2,
   '--session continued the session');

# a denial, then the steps limit: exit 3
$a->script({ tool_calls => [ { name => 'logs', arguments => {
               params => { service => 'api' }, query => { x => '1' } } } ] },
           { tool_calls => [ { name => 'logs', arguments => {
               params => { service => 'api' } } } ] });
($rc, $out, $err) = run_cli('ask', @sock, 'try');
is($rc, 3, 'stopped by a limit: exit 3');
like($err, qr/DENIED 403 \(query\)/, 'the denial shown');
like($err, qr/stopped: the steps limit \(2, at most 2\)/, 'the limit shown');

# an error: exit 1
$a->script({ status => 500 });
($rc, $out, $err) = run_cli('ask', @sock, 'broken');
is($rc, 1, 'an error: exit 1');

# through nginx's /api/
$a->script({ pieces => [ 'Via nginx.' ] });
($rc, $out) = run_cli('ask', '--url',
                      'http://127.0.0.1:' . $t->port(8080) . '/api/', 'hi');
is($out, "Via nginx.\n", '--url: through /api/');

# no agent there: exit 2
($rc) = run_cli('ask', '--socket', "$d/nothing.sock", 'hi');
is($rc, 2, 'no agent: exit 2');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
