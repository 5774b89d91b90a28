#!/usr/bin/perl

# airlock-agent: root asks in every session, but not unknowingly in
# another's.  Without --random-session-ids a user could take an id first
# (deploy-review), and root's question later named with it, and the
# answer (which may hold what only root's runs see), were stored in that
# user's session, for the user to read.  Now root's question in a stored
# session of another owner is refused, 409 session_owner naming the
# owner, the model not called and nothing stored, unless root sends
# X-Airlock-Others-Session: yes (airlock ask --others-session).  A
# session not stored yet is root's, as before; root still reads any.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use AgentTest;

local $ENV{AIRLOCK_LOG_LEVEL} = 'info';

Airlock::Prereq::absent('the test connects as other uids: run it as root')
    if $> != 0;

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;
my $cli = "$t->{build}/airlock";

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

$a->setup(agent => [ '--max-wall', 30000 ]);

plan tests => 25;

my $ALICE = 61005;
my $sock = $a->{agents}{a}{sock};

sub redis { return $a->redis_cli(@_) }

sub ask_req {
    my ($id, $prompt, $extra) = @_;
    my $body = encode_json({ prompt => $prompt });
    return "POST /v1/sessions/$id/ask HTTP/1.1\r\nHost: a\r\n"
           . ($extra // '') . "Content-Length: " . length($body)
           . "\r\nConnection: close\r\n\r\n$body";
}

sub ask {
    my ($uid, $id, $prompt, $extra) = @_;
    my $raw = $a->as_uid($sock, $uid, ask_req($id, $prompt, $extra));
    my $r = Airlock::Test::parse_response($raw);
    $r->{events} = [ AgentTest::events($raw) ];
    $r->{json} = eval { decode_json($r->{body} // '') } // {};
    return $r;
}

sub get {
    my ($uid, $id) = @_;
    my $raw = $a->as_uid($sock, $uid, "GET /v1/sessions/$id HTTP/1.1\r\n"
                                      . "Host: a\r\nConnection: close\r\n\r\n");
    my $r = Airlock::Test::parse_response($raw);
    $r->{json} = eval { decode_json($r->{body} // '') } // {};
    return $r;
}


sub stored {
    my ($id) = @_;
    return decode_json(redis('GET', "airlock:session:$id") || '{}');
}

sub calls { scalar(() = $a->provider_requests) }


# alice takes an id root would choose
$a->script({ pieces => [ 'for alice' ] });
my $r = ask($ALICE, 'deploy-review', 'a question of alice\'s');
is(answer_of($r), 'for alice', 'alice asks in deploy-review first');
is(stored('deploy-review')->{owner}, "uid:$ALICE", 'it is hers');

# root names it: refused, saying whose it is
my $before = calls();
$a->script({ pieces => [ 'FAKE-root-only-data' ] });
$r = ask(0, 'deploy-review', 'what do the root-only routes say?');
is($r->{status} . ' ' . ($r->{json}{error} // ''), '409 session_owner',
   'root\'s question in alice\'s session is refused');
like($r->{json}{message} // '', qr/uid:$ALICE/, 'the answer names its owner');
like($r->{json}{message} // '', qr/X-Airlock-Others-Session: yes/,
     'and says how to ask in it all the same');
is(calls(), $before, 'the model was not called');
my $s = stored('deploy-review');
is(scalar(@{$s->{runs} // []}), 1, 'nothing stored in her session');
unlike(encode_json($s), qr/root-only/, 'root\'s question is not in it');
is(redis(qw(EXISTS airlock:session:deploy-review:lock)), '0',
   'the session is not left locked');

# root still reads it
$r = get(0, 'deploy-review');
is($r->{status} . ' ' . ($r->{json}{owner} // ''), "200 uid:$ALICE",
   'root reads it');

# a header that says anything but yes is no consent
$r = ask(0, 'deploy-review', 'again', "X-Airlock-Others-Session: no\r\n");
is($r->{status}, 400, 'X-Airlock-Others-Session other than yes: 400');
is(calls(), $before, 'the model was not called');

# with root's word it goes on, and the session stays alice's
$a->script({ pieces => [ 'root, knowingly' ] });
$r = ask(0, 'deploy-review', 'root asks knowingly',
         "X-Airlock-Others-Session: yes\r\n");
is(answer_of($r), 'root, knowingly', 'root asks with the header');
$s = stored('deploy-review');
is($s->{owner} . ' ' . scalar(@{$s->{runs} // []}), "uid:$ALICE 2",
   'stored in alice\'s session, still hers');

# a session not stored yet is root's, as before
$a->script({ pieces => [ 'root\'s own' ] });
$r = ask(0, 'root-review', 'a question of root\'s');
is(answer_of($r), 'root\'s own', 'root starts a session of its own');
is(stored('root-review')->{owner}, 'uid:0', 'it is root\'s');
$a->script({ pieces => [ 'root again' ] });
$r = ask(0, 'root-review', 'root again');
is(answer_of($r), 'root again', 'and goes on in it without the header');

# the header gives a user nothing: another's session is still none
$r = ask($ALICE, 'root-review', 'alice tries',
         "X-Airlock-Others-Session: yes\r\n");
is($r->{status} . ' ' . ($r->{json}{error} // ''), '404 no_session',
   'alice sending the header is still told there is no such session');

# the CLI
my ($rc, $out, $err) = $a->run_cli('ask', '--socket', $sock, '--session',
                               'deploy-review', 'from the cli');
is($rc, 2, 'airlock ask in alice\'s session: exit 2');
like($err, qr/409.*session_owner.*uid:$ALICE/s,
     'its error says whose the session is');
is(scalar(@{stored('deploy-review')->{runs} // []}), 2, 'nothing stored');

$a->script({ pieces => [ 'cli, knowingly' ] });
($rc, $out) = $a->run_cli('ask', '--socket', $sock, '--session',
                      'deploy-review', '--others-session', 'from the cli');
is($rc . ' ' . ($out // ''), "0 cli, knowingly\n",
   'airlock ask --others-session asks in it');
is(scalar(@{stored('deploy-review')->{runs} // []}), 3,
   'stored in alice\'s session');

($rc, undef, $err) = $a->run_cli('ask', '--socket', $sock, '--others-session',
                             'no session named');
is($rc, 2, '--others-session without --session: usage, exit 2');

($rc) = $a->run_cli('history', '--socket', $sock, '--others-session',
                'deploy-review');
is($rc, 2, 'history takes no --others-session');
