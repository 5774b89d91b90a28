#!/usr/bin/perl

# airlock-agent: a tool call that names a route of the policy granted to
# other clients only, and one that names no route at all, get the same
# answer, word for word: the same error event, the same tool message to
# the model, the same name in the history and the session.  The first
# used to be "tool_not_granted", 'route "queue-admin" is not granted to
# client "agent"', and the call kept its name: a model (or the user
# asking it) could learn, name by name, which routes the policy has for
# other clients.  The same holds for a run_python input's route: one
# granted to the agent only (not the sandbox's client) and one of none
# are refused alike.  The operator's log still names the route.

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
$a->setup(routes => <<'EOF2');
  - name: agent-notes
    description: the agent's own notes; the worker lacks it
    clients: [agent]
    match: { method: GET, path: /notes }
    upstream: svc
    to: /api/v1/notes
EOF2

plan tests => 12;

# an event or message as the client or the model sees it, its id and
# time left out: those differ from call to call whatever it names
sub plain {
    my ($v) = @_;
    return [ map { plain($_) } @$v ] if ref $v eq 'ARRAY';
    return { map { $_ => plain($v->{$_}) }
             grep { !/^(id|ms|tool_call_id)$/ } keys %$v }
        if ref $v eq 'HASH';
    return $v;
}

my $json = JSON::PP->new->canonical;

sub same {
    my ($x, $y, $what) = @_;
    is($json->encode(plain($x)), $json->encode(plain($y)), $what);
}

# ---- a tool call -----------------------------------------------------------

$a->script({ tool_calls => [
               { id => 'call_granted_other', name => 'queue-admin',
                 arguments => {} },
               { id => 'call_none', name => 'no-such-route',
                 arguments => {} } ] },
           { pieces => [ 'done' ] });
my ($ev, $raw) = $a->ask('oracle-1', 'what routes are there?');

my @err = of_type('error', $ev);
is(scalar(@err), 2, 'two errors');
same($err[0], $err[1], 'a route of another client\'s: the error of none');
unlike($raw, qr/queue-admin|not granted|"worker"/,
       'the client hears nothing of the route');

my @prov = $a->provider_requests;
my $msgs = (($prov[-1] // {})->{body} // {})->{messages} // [];
my @calls = map { @{$_->{tool_calls} // []} } @$msgs;
same($calls[0] // {}, $calls[1] // {}, 'the history names the calls alike');
my @tool = grep { $_->{role} eq 'tool' } @$msgs;
same($tool[0] // {}, $tool[1] // {}, 'the model is told the same');
unlike(encode_json($msgs), qr/queue-admin|not granted/,
       'the model hears nothing of the route');

my $s = $a->session('oracle-1');
unlike(encode_json($s->{json} // {}), qr/queue-admin|not granted/,
       'the session keeps nothing of it');
is(scalar(grep { ($_->{path} // '') =~ m{^/internal/} } $a->proxy->deny_log),
   0, 'the route not granted was not sent');

# ---- a run_python input ----------------------------------------------------

sub job {
    my ($route) = @_;
    return { name => 'run_python', arguments => {
        script => "print(42)\n",
        inputs => [ { name => 'in0', route => $route } ] } };
}

$a->script({ tool_calls => [ job('agent-notes'), job('no-such-route') ] },
           { pieces => [ 'done' ] });
($ev, $raw) = $a->ask('oracle-2', 'a job over the notes');

@err = of_type('error', $ev);
same($err[0] // {}, $err[1] // {},
     'an input route of the agent\'s only: the error of none');
@prov = $a->provider_requests;
$msgs = (($prov[-1] // {})->{body} // {})->{messages} // [];
@tool = grep { $_->{role} eq 'tool' } @$msgs;
same($tool[0] // {}, $tool[1] // {}, '... and the model is told the same');

my $log = $a->agent_log;
ok($log =~ /route "queue-admin", which the policy does not grant to client "agent"/
   && $log =~ /route "agent-notes", which the policy does not grant to client "worker"/,
   'the operator\'s log names each route');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
