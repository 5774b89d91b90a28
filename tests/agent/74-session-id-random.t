#!/usr/bin/perl

# airlock-agent --random-session-ids: a question in a session not stored
# yet made it, under whatever id it named, for its asker; an id a person
# chose (--session deploy-review) could so be taken first by any other
# local user, and was theirs from then on (to its chooser "no such
# session").  The CLI's own ids are 128 random bits, which no one else
# can know.  With the option (the appliance's unit passes it) a new
# session is made only under an id of that form, 32 of 0-9 a-f: a
# question that would make one of another id is 404 no_session, the
# answer for another's session word for word, nothing stored, the model
# not called.  Sessions already stored, of any id, go on; root makes
# any.  Without the option, as before.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Airlock::Test;
use Airlock::Unit qw(unit_directives);
use AgentTest;

Airlock::Prereq::absent('the test connects as other uids: run it as root')
    if $> != 0;

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;
my $top = "$FindBin::Bin/../..";

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

$a->setup(agent => [ '--max-wall', 30000 ]);
$a->start_agent('r', '--max-wall', 30000, '--random-session-ids');

plan tests => 23;

my ($ALICE, $BOB) = (61101, 61102);

sub redis { return $a->redis_cli(@_) }

sub ask_req {
    my ($id, $prompt) = @_;
    my $body = encode_json({ prompt => $prompt });
    return "POST /v1/sessions/$id/ask HTTP/1.1\r\nHost: a\r\n"
           . "Content-Length: " . length($body)
           . "\r\nConnection: close\r\n\r\n$body";
}

# agent NAME's answer to uid's request
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
    return req($name, $uid, ask_req($id, $prompt));
}

sub get {
    my ($name, $uid, $id) = @_;
    return req($name, $uid, "GET /v1/sessions/$id HTTP/1.1\r\nHost: a\r\n"
                            . "Connection: close\r\n\r\n");
}

sub answer_of {
    my ($r) = @_;
    return ((AgentTest::of_type('answer', $r->{events}))[0] // {})->{text}
           // '';
}

sub calls { scalar(() = $a->provider_requests) }

sub random_id {
    return join '', map { sprintf '%02x', int(rand(256)) } 1 .. 16;
}

# ---- without the option: any id makes a session, as before ---------------
$a->script({ pieces => [ 'chosen' ] });
my $r = ask('a', $ALICE, 'deploy-review', 'a chosen id');
is(answer_of($r), 'chosen', 'without the option: a chosen id is made');

# ---- with it: a chosen id makes none --------------------------------------
my $before = calls();
$r = ask('r', $BOB, 'team-review', 'taken first?');
is($r->{status} . ' ' . ($r->{json}{error} // ''), '404 no_session',
   'with it: a new session of a chosen id is refused, 404');
like($r->{json}{message} // '', qr/32 of 0-9 a-f.*airlock ask without/,
     'saying what a new session\'s id is');
is(calls(), $before, 'the model was not called');
is(redis(qw(EXISTS airlock:session:team-review
            airlock:session:team-review:lock)), '0',
   'nothing stored, no lock left');
my $refused = $r->{body};
$r = ask('r', $ALICE, 'team-review', 'mine?');
is($r->{status}, 404, 'to anyone: no one takes it');
for my $id ('A' x 32, 'a' x 31, 'a' x 33, ('0' x 31) . 'g',
            ('0' x 31) . '-') {
    is(ask('r', $BOB, $id, 'x')->{status}, 404,
       "an id of another form ($id): 404");
}
is(calls(), $before, 'the model called for none of them');

# a random id: made, the asker's, and goes on
my $rid = random_id();
$a->script({ pieces => [ 'random one' ] });
$r = ask('r', $BOB, $rid, 'a random id');
is(answer_of($r), 'random one', 'an id of 128 random bits is made');
my $stored = decode_json(redis('GET', "airlock:session:$rid") || '{}');
is($stored->{owner}, "uid:$BOB", 'bob\'s');
$a->script({ pieces => [ 'again' ] });
is(answer_of(ask('r', $BOB, $rid, 'and again')), 'again',
   'his next question in it');

# another's, and a never-stored one: the same answer, word for word
$r = ask('r', $ALICE, $rid, 'his?');
is($r->{status}, 404, 'alice in bob\'s session: 404');
is($r->{body}, $refused, 'the very answer for a chosen id never stored');
is(get('r', $ALICE, 'never-stored')->{body}, $refused,
   'and a GET of a session that is not there');

# sessions stored before go on, whatever their id; root makes any
$a->script({ pieces => [ 'kept' ] });
is(answer_of(ask('r', $ALICE, 'deploy-review', 'still mine?')), 'kept',
   'a session of a chosen id stored before goes on');
$a->script({ pieces => [ 'root\'s' ] });
is(answer_of(ask('r', 0, 'root-chosen', 'root')), 'root\'s',
   'root makes a session of a chosen id');

# ---- the appliance's unit, the help ---------------------------------------
my $u = unit_directives("$top/conf/airlock-agent.service");
like($u->{ExecStart}[0] // '', qr/\s--random-session-ids(\s|$)/,
     'the unit passes --random-session-ids');
like(`$t->{build}/airlock-agent --help`, qr/--random-session-ids/,
     '--help names it');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
