#!/usr/bin/perl

# POST /v1/sessions stored a new session at once, kept an hour until its
# first question: any user allowed on the socket could fill Redis by
# asking for ids in a loop.  Now the id carries its asker under a MAC
# (a nonce of 128 random bits and its tag under the session key the
# agents keep in Redis, airlock:session:!key), and nothing is stored
# until the first question.  The id is its asker's alone: another's
# question in it is 404, word for word the answer for a session not
# there, with or without --random-session-ids, and takes no lock; a
# forged tag is 404 to everyone, root too.  The key is made once and
# shared: an id one agent made is good at another on the same Redis,
# and after the agent and Redis restart.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use AgentTest;

Airlock::Prereq::absent('the test connects as other uids: run it as root')
    if $> != 0;

my $a = AgentTest->new;
my $t = $a->t;

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

$a->setup(agent => [ '--max-wall', 30000 ]);
$a->start_agent('r', '--max-wall', 30000, '--random-session-ids');
$a->start_agent('s', '--max-wall', 30000, '--random-session-ids');

plan tests => 27;

my ($ALICE, $BOB) = (61301, 61302);

sub redis { return $a->redis_cli(@_) }

sub req {
    my ($name, $uid, $req) = @_;
    my $raw = scalar $a->as_uid($a->{agents}{$name}{sock}, $uid, $req);
    my $r = Airlock::Test::parse_response($raw);
    $r->{events} = [ AgentTest::events($raw) ];
    $r->{json} = eval { decode_json($r->{body} // '') } // {};
    return $r;
}

sub ask {
    my ($name, $uid, $id, $prompt) = @_;
    my $body = encode_json({ prompt => $prompt });
    return req($name, $uid, "POST /v1/sessions/$id/ask HTTP/1.1\r\n"
                            . "Host: a\r\nContent-Length: " . length($body)
                            . "\r\nConnection: close\r\n\r\n$body");
}

sub new_id {
    my ($name, $uid) = @_;
    my $r = req($name, $uid, "POST /v1/sessions HTTP/1.1\r\nHost: a\r\n"
                             . "Content-Length: 0\r\n"
                             . "Connection: close\r\n\r\n");
    return $r->{status} == 201 ? $r->{json}{id} // '' : "status $r->{status}";
}


sub sessions {
    my @k = grep { length && $_ ne 'airlock:session:!key' }
            split /\n/, redis('--scan', '--pattern', 'airlock:session:*');
    return scalar @k;
}

sub calls { scalar(() = $a->provider_requests) }

# ---- asking for ids in a loop stores nothing ------------------------------
my $keys = sessions();
my %ids;
$ids{new_id('r', $BOB)}++ for 1 .. 40;
is(sessions(), $keys, '40 new sessions asked for: no session stored');
is(scalar(grep { /^[0-9a-f]{64}\z/ } keys %ids), 40,
   '... 40 ids, each 64 of 0-9 a-f');
like(redis('GET', 'airlock:session:!key'), qr/^[0-9a-f]{64}\z/,
     '... one session key, in Redis');
is(redis('TTL', 'airlock:session:!key'), '-1', '... kept for good');

# ---- the id is bob's ------------------------------------------------------
my ($bid, $other) = (keys %ids)[0, 1];
my $refused = ask('r', $ALICE, 'never-stored', 'x')->{body};
my $before = calls();
my $r = ask('r', $ALICE, $bid, 'first in his?');
is($r->{status} . ' ' . ($r->{json}{error} // ''), '404 no_session',
   'alice first in bob\'s new session: 404');
is($r->{body}, $refused, '... the answer for a session not there');
is(redis(qw(EXISTS), "airlock:session:$bid", "airlock:session:$bid:lock"),
   '0', '... nothing stored, no lock taken');
is(calls(), $before, '... the model not called');

$a->script({ pieces => [ 'his' ] });
$r = ask('r', $BOB, $bid, 'mine');
is(answer_of($r), 'his', 'bob asks in it');
my $s = decode_json(redis('GET', "airlock:session:$bid") || '{}');
is($s->{owner}, "uid:$BOB", '... stored then, as bob\'s');
my $ttl = redis('TTL', "airlock:session:$bid");
ok($ttl > 3600, "... kept as any session, --session-ttl ($ttl s)");
is(ask('r', $ALICE, $bid, 'his?')->{body}, $refused,
   'stored, to alice: the same answer');

# ---- forged tags, root, the agent without the option ----------------------
my $forged = substr($other, 0, 32) . ('0' x 32);
is(ask('r', $BOB, $forged, 'x')->{status}, 404, 'a forged tag: 404 to bob');
is(ask('r', 0, $forged, 'x')->{status}, 404, '... and to root');
is(redis('EXISTS', "airlock:session:$forged"), '0', '... nothing stored');
is(ask('a', $ALICE, $other, 'x')->{status}, 404,
   'without --random-session-ids: bob\'s id is not alice\'s to take');
is(ask('r', 0, $other, 'x')->{status}, 404,
   'nor root\'s: his new session stays his');
is(redis('EXISTS', "airlock:session:$other"), '0', '... nothing stored');
is(calls(), $before + 1, 'the model called for bob\'s question alone');

# ---- api peers: the owner is the name, not the uid --------------------------
my $api = req('r', $ALICE, "POST /v1/sessions HTTP/1.1\r\nHost: a\r\n"
                           . "X-Airlock-User: bob\r\nContent-Length: 0\r\n"
                           . "Connection: close\r\n\r\n");
is($api->{status}, 403, 'X-Airlock-User from another than --api-peer: 403');

# ---- another agent, restarts ----------------------------------------------
my $sid = new_id('s', $BOB);
$a->script({ pieces => [ 'elsewhere' ] });
is(answer_of(ask('r', $BOB, $other, 'at r')), 'elsewhere',
   'an id agent r made, asked at r');
$a->script({ pieces => [ 'at r' ] });
is(answer_of(ask('r', $BOB, $sid, 'made at s')), 'at r',
   'an id agent s made, good at agent r (one key, in Redis)');

my $late = new_id('r', $BOB);
kill 'TERM', $a->agent_pid('r');
waitpid($a->agent_pid('r'), 0);
$a->restart_redis;
$a->start_agent('r', '--max-wall', 30000, '--random-session-ids');
$a->script({ pieces => [ 'after' ] });
is(answer_of(ask('r', $BOB, $late, 'after restarts')), 'after',
   'an id made before the agent and Redis restarted: still bob\'s');
is(ask('r', $ALICE, new_id('r', $BOB), 'x')->{status}, 404,
   '... and a new one still not alice\'s');

# ---- Redis gone ----------------------------------------------------------
redis('SHUTDOWN', 'NOSAVE');
waitpid($a->{redis}, 0);
$r = req('r', $BOB, "POST /v1/sessions HTTP/1.1\r\nHost: a\r\n"
                    . "Content-Length: 0\r\nConnection: close\r\n\r\n");
is($r->{status} . ' ' . ($r->{json}{error} // ''), '503 redis',
   'Redis gone: a new session is 503 redis');
my $g1 = ask('r', $ALICE, $sid, 'x');
my $g2 = ask('r', $ALICE, 'never-there', 'x');
is($g1->{body}, $g2->{body},
   '... and a question, bob\'s session or none, the same answer');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
