#!/usr/bin/perl

# airlock-agent --random-session-ids: a question in a session not stored,
# under an id that is not one the agent made for its asker, is 404
# no_session to anyone but root, the answer for another's session word
# for word.  Another's stored session was refused on one look at its
# head, before any lock; one not stored only after its lock was taken,
# the session read and the lock let go: three more scripts, so the time
# of the answer told whether a session was stored under the id, and a
# Redis full (at its maxmemory, noeviction) refused the lock, 503
# "redis", where another's stored session got 404.  Now both are
# refused on the same look: no lock taken, no script run but that look,
# 404 whether Redis has room or not.  The asker's own new session (POST
# /v1/sessions) is asked in as before, and root starts any.

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

$a->setup(agent => [ '--max-wall', 30000, '--random-session-ids' ]);

plan tests => 14;

my ($ALICE, $BOB) = (61921, 61922);
my $sock = $a->{agents}{a}{sock};

sub redis { return $a->redis_cli(@_) }

# the calls Redis has run of a command, as INFO commandstats counts them
sub calls {
    my ($cmd) = @_;
    return (redis('INFO', 'commandstats') =~ /^cmdstat_\Q$cmd\E:calls=(\d+)/m
            )[0] // 0;
}

sub used { return (redis('INFO', 'memory') =~ /^used_memory:(\d+)/m)[0] }

sub ask_req {
    my ($id, $prompt) = @_;
    my $body = encode_json({ prompt => $prompt });
    return "POST /v1/sessions/$id/ask HTTP/1.1\r\nHost: a\r\n"
           . "Content-Length: " . length($body)
           . "\r\nConnection: close\r\n\r\n$body";
}

sub req {
    my ($uid, $req) = @_;
    my $raw = scalar $a->as_uid($sock, $uid, $req);
    my $r = Airlock::Test::parse_response($raw);
    $r->{events} = [ AgentTest::events($raw) ];
    $r->{json} = eval { decode_json($r->{body} // '') } // {};
    return $r;
}

sub ask { my ($uid, $id, $p) = @_; return req($uid, ask_req($id, $p)) }

sub new_id {
    my ($uid) = @_;
    return req($uid, "POST /v1/sessions HTTP/1.1\r\nHost: a\r\n"
                     . "Content-Length: 0\r\nConnection: close\r\n\r\n")
           ->{json}{id} // '';
}

sub answer {
    my ($r) = @_;
    return ((grep { $_->{type} eq 'answer' } @{$r->{events}})[0] // {})
           ->{text} // '';
}

# ---- alice's session, stored -----------------------------------------------
my $aid = new_id($ALICE);
like($aid, qr/^[0-9a-f]{64}\z/, "alice's new session id");
$a->script({ pieces => [ 'hers' ] });
is(answer(ask($ALICE, $aid, 'a question of alice')), 'hers',
   'alice asks in it');

my $calls = () = $a->provider_requests;

# ---- bob: her session, and ids no one stored -------------------------------
my $theirs = ask($BOB, $aid, 'in her session');
is("$theirs->{status} " . ($theirs->{json}{error} // ''), '404 no_session',
   "bob's question in alice's session: 404");

my ($eval, $ro) = (calls('eval'), calls('eval_ro'));
my $none = ask($BOB, 'nothing-here', 'in no session');
is("$none->{status} " . ($none->{json}{error} // ''), '404 no_session',
   "bob's question under an id no one stored: 404");
is($none->{body}, $theirs->{body}, '... the answer for hers, word for word');
is(calls('eval'), $eval, '... no lock taken, no session read: no script '
   . 'but the look');
is(calls('eval_ro'), $ro + 1, '... the one look at its head');
is(redis('EXISTS', 'airlock:session:nothing-here',
         'airlock:session:nothing-here:lock'), '0', '... nothing stored');

# ---- Redis full: the same answers -----------------------------------------
redis('SET', "fill:$_", 'f' x 65536) for 1 .. 32;
redis('CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
redis('CONFIG', 'SET', 'maxmemory', used() - 262144);

my $full = ask($BOB, 'nothing-here-2', 'in no session, Redis full');
is("$full->{status} " . ($full->{json}{error} // ''), '404 no_session',
   'Redis full: an id no one stored is 404 still, not 503');
is($full->{body}, $theirs->{body}, '... the answer for hers, word for word');
$theirs = ask($BOB, $aid, 'in her session, Redis full');
is($theirs->{status}, 404, "... and alice's session 404 too");

redis('CONFIG', 'SET', 'maxmemory', 0);
redis('DEL', map { "fill:$_" } 1 .. 32);

is(scalar(() = $a->provider_requests), $calls,
   'the model was called for none of them');

# ---- bob's own new session, and root's, go on ------------------------------
my $bid = new_id($BOB);
$a->script({ pieces => [ 'his' ] });
is(answer(ask($BOB, $bid, 'a question of bob')), 'his',
   "bob's own new session: asked in");
$a->script({ pieces => [ 'roots' ] });
is(answer(ask(0, 'chosen-by-root', 'a question of root')), 'roots',
   'root starts a session under an id of its choosing');
