#!/usr/bin/perl

# airlock-agent: a session is its first asker's.  The agent's socket
# was 0666 (every local user reached it, nginx too; on the appliance it
# is now 0660, root's and airlock-api's) and asked no one who they were: any local user or daemon that named a session read it
# (GET /v1/sessions/{id}) and asked in it, with the agent's tools and
# tokens.  Now the peer's uid (SO_PEERCRED) owns the sessions it starts;
# to another uid such a session does not exist (404, word for word the
# answer for one never stored, and so while its first question runs),
# root reads every one and asks in it (in another's saying so: see
# 105-root-others-session.t).  A session stored before owners were
# (none in its JSON), and one stored damaged (whose owner cannot be
# read), are root's alone.

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

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

$a->setup(agent => [ '--max-wall', 30000 ]);

plan tests => 29;

# two local users with no name: uids the kernel maps as they are
my ($ALICE, $BOB) = (61001, 61002);
my $sock = $a->{agents}{a}{sock};

sub redis { return $a->redis_cli(@_) }

# a process of uid $uid (its groups $uid alone) that sends $req on the
# agent's socket; its pid, and a pipe it writes the raw answer to
sub as_uid_start {
    my ($uid, $req) = @_;
    return $a->as_uid_start($sock, $uid, $req);
}

sub as_uid_end { return scalar $a->as_uid_end(@_) }

# the raw answer to $req sent on the agent's socket by uid $uid
sub as_uid {
    return as_uid_end(as_uid_start(@_));
}

sub ask_req {
    my ($id, $prompt, $extra) = @_;
    my $body = encode_json({ prompt => $prompt });
    return "POST /v1/sessions/$id/ask HTTP/1.1\r\nHost: a\r\n"
           . ($extra // '') . "Content-Length: " . length($body)
           . "\r\nConnection: close\r\n\r\n$body";
}

sub get {
    my ($uid, $id, $extra) = @_;
    my $raw = as_uid($uid, "GET /v1/sessions/$id HTTP/1.1\r\nHost: a\r\n"
                           . ($extra // '') . "Connection: close\r\n\r\n");
    my $r = Airlock::Test::parse_response($raw);
    $r->{json} = eval { decode_json($r->{body} // '') } // {};
    return $r;
}

sub ask {
    my ($uid, $id, $prompt, $extra) = @_;
    my $raw = as_uid($uid, ask_req($id, $prompt, $extra));
    my $r = Airlock::Test::parse_response($raw);
    $r->{events} = [ AgentTest::events($raw) ];
    $r->{json} = eval { decode_json($r->{body} // '') } // {};
    return $r;
}


sub calls { scalar(() = $a->provider_requests) }

# alice starts a session on the socket
$a->script({ pieces => [ 'for alice' ] });
my $r = ask($ALICE, 'alpha', 'a question of alice\'s');
is(answer_of($r), 'for alice', 'alice asks in a new session');
my $stored = decode_json(redis(qw(GET airlock:session:alpha)) || '{}');
is($stored->{owner}, "uid:$ALICE", 'the session is stored as alice\'s');

# bob knows its id: it is no session of his
my $none = get($BOB, 'never-stored');
$r = get($BOB, 'alpha');
is($r->{status}, 404, 'bob cannot read alice\'s session');
is($r->{body}, $none->{body},
   'the same answer as for a session that does not exist');
unlike($r->{body} // '', qr/alice's|for alice|$ALICE/,
       'nothing of the session in it');

my $before = calls();
$a->script({ pieces => [ 'for bob' ] });
$r = ask($BOB, 'alpha', 'a question of bob\'s');
is($r->{status} . ' ' . ($r->{json}{error} // ''), '404 no_session',
   'bob cannot ask in it');
is(calls(), $before, 'the model was not called for him');
is(scalar(@{(decode_json(redis(qw(GET airlock:session:alpha)) || '{}'))
            ->{runs} // []}), 1, 'the session is as alice left it');
is(redis(qw(EXISTS airlock:session:alpha:lock)), '0', 'and not locked');

# alice and root read it; root asks in it, saying so (see
# 105-root-others-session.t), and it stays alice's
$r = get($ALICE, 'alpha');
is($r->{status} . ' ' . ($r->{json}{owner} // ''), "200 uid:$ALICE",
   'alice reads her session');
$r = get(0, 'alpha');
is($r->{status}, 200, 'root reads it');
$a->script({ pieces => [ 'for root' ] });
$r = ask(0, 'alpha', 'root asks', "X-Airlock-Others-Session: yes\r\n");
is(answer_of($r), 'for root', 'root asks in it');
$stored = decode_json(redis(qw(GET airlock:session:alpha)) || '{}');
is($stored->{owner} . ' ' . scalar(@{$stored->{runs} // []}),
   "uid:$ALICE 2", 'it is still alice\'s, with root\'s question');

# bob's own session of the same kind is his
$a->script({ pieces => [ 'bob\'s own' ] });
$r = ask($BOB, 'beta', 'bob asks');
is(answer_of($r), 'bob\'s own', 'bob asks in a session of his own');
is(get($ALICE, 'beta')->{status}, 404, 'which alice cannot read');

# alice's first question runs (the session not stored yet): bob naming
# it is told there is none, alice herself that it is busy
$a->script({ pieces => [ 'held' ], wait_file => "$d/go" });
$before = calls();
my @held = as_uid_start($ALICE, ask_req('gamma', 'a held question'));
for (1 .. 500) {
    last if calls() > $before;
    select(undef, undef, undef, 0.02);
}
is(redis(qw(EXISTS airlock:session:gamma)), '0',
   'alice\'s first question runs, the session not stored yet');
$r = ask($BOB, 'gamma', 'bob too');
is($r->{status} . ' ' . ($r->{json}{error} // ''), '404 no_session',
   'bob naming it meanwhile: no such session');
$r = ask($ALICE, 'gamma', 'again');
is($r->{status} . ' ' . ($r->{json}{error} // ''), '409 session_busy',
   'alice asking again: busy');
$t->write_file('go', '');
my $raw = as_uid_end(@held);
like($raw, qr/"text":"held"/, 'her first question answered');
is(get($BOB, 'gamma')->{status}, 404, 'and stored hers');

# a session stored before owners: root's alone
redis('SET', 'airlock:session:old', encode_json({
    id => 'old', messages => [ { role => 'user', content => 'old one' } ],
    runs => [] }));
is(get($ALICE, 'old')->{status}, 404, 'a session with no owner: 404');
$r = ask($ALICE, 'old', 'mine now?');
is($r->{status}, 404, 'no one takes it by asking in it');
is(get(0, 'old')->{status}, 200, 'root reads it');

# a damaged one: 409 to root, not there to others
redis(qw(SET airlock:session:broken), 'not json');
is(get($ALICE, 'broken')->{status}, 404, 'a damaged session: 404 to alice');
is(ask($ALICE, 'broken', 'x')->{status}, 404,
   'and her question in it too');
is(get(0, 'broken')->{status} . ' ' . (get(0, 'broken')->{json}{error}
                                       // ''), '409 session_damaged',
   'root is told it is damaged');

# a front end's header, from a peer that is no --api-peer
$r = get($ALICE, 'alpha', "X-Airlock-User: bob\r\n");
is($r->{status} . ' ' . ($r->{json}{error} // ''), '403 peer',
   'X-Airlock-User from a peer that is not --api-peer: refused');

is($t->error_log_check, '', 'no alerts in the error log');
is($a->agent_errors, '', 'no sanitizer reports from the agents');
