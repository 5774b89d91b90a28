#!/usr/bin/perl

# airlock-agent: a tool whose route takes HEAD only is called with HEAD,
# and its answer (headers, no body: HEAD has none, whatever its
# Content-Length says) is the result at once, not a wait for a body
# that never comes until the run's wall time runs out.  The proxy's 403
# to a HEAD call has no body either: its Airlock-Denial header alone
# makes it a denial, counted and never sent again in the run.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use Test::More;
use Airlock::Test;
use AgentTest;

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;
$a->setup(agent => [ '--max-wall', 30000 ], routes => <<'EOF');
  - name: logs-exist
    description: whether a service has logs (HEAD)
    clients: [agent]
    match: { method: HEAD, path: "/logs-exist/{service}" }
    params: { service: '^[a-z0-9][a-z0-9-]{0,62}$' }
    upstream: svc
    to: "/api/v1/services/{service}/logs"
    inject: { Authorization: "Bearer {logs_token}" }
EOF

plan tests => 10;

my $head = { name => 'logs-exist',
             arguments => { params => { service => 'api' } } };

$t->write_file('service-logs.txt', "12:00:01 api ok\n" x 100);
$a->script({ tool_calls => [ $head ] }, { pieces => [ 'they do' ] });
my $ev = $a->ask('head', 'does api have logs?');

my ($call) = of_type('tool_call', $ev);
is($call->{method} // '', 'HEAD', 'the tool call is a HEAD');
my ($res) = of_type('tool_result', $ev);
is($res->{status} // 0, 200, '... its answer is the result, 200');
is($res->{bytes} // -1, 0, '... with no body');
ok(!of_type('limit', $ev), '... no limit: no wait for a body');
is((of_type('done', $ev))[0]{outcome} // '', 'answer',
   '... the run answers');

my @seen = grep { $_->{method} eq 'HEAD' } $a->jsonl("$d/services.log");
is(scalar @seen, 1, 'the service got one HEAD');
is($seen[0]{headers}{authorization} // '',
   "Bearer $AgentTest::LOGS_TOKEN", '... with the injected credential');

# a parameter the policy refuses: the proxy's 403, a header and no body
my $bad = { name => 'logs-exist',
            arguments => { params => { service => 'API' } } };
$a->script({ tool_calls => [ $bad ] }, { tool_calls => [ $bad ] },
           { pieces => [ 'refused' ] });
$ev = $a->ask('head-denied', 'does API have logs?');

my @den = of_type('denial', $ev);
is(scalar @den, 2, 'the proxy\'s 403 to a HEAD is a denial');
ok($den[1]{repeated}, '... and the same call is not sent again');

is($a->agent_errors, '', 'no sanitizer report or crash');
