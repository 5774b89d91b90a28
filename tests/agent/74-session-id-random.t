#!/usr/bin/perl

# airlock-agent --random-session-ids: a question in a session not stored
# yet made it, under whatever id it named, for its asker; an id a person
# chose (--session deploy-review) could so be taken first by any other
# local user, and was theirs from then on (to its chooser "no such
# session").  With the option (the appliance's unit passes it) a
# question makes no session: a new one is the agent's to make, POST
# /v1/sessions, under an id of its 128 random bits and their tag for
# its asker (nothing stored until its first question); a question in a
# session not stored is 404 no_session, the answer for another's
# session word for word, nothing stored, the model
# not called, whatever the id.  The option used to take any id of the
# CLI's form, 32 of 0-9 a-f, so one of that form picked by hand
# ("0000...") could still be taken first.  Sessions already stored, of
# any id, go on; root makes any.  Without the option, as before.  The
# CLI asks the agent for a new session's id.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use POSIX ();
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

plan tests => 33;

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
like($r->{json}{message} // '', qr{POST /v1/sessions.*airlock ask without},
     'saying how a new session is made');
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

# an id of the CLI's old form, picked by anyone: made for no one
my $rid = random_id();
$r = ask('r', $ALICE, $rid, 'a hand-picked random-looking id');
is($r->{status}, 404, 'an id of 32 of 0-9 a-f not made by the agent: 404');
is(calls(), $before, '... the model not called');
is(redis('EXISTS', "airlock:session:$rid"), '0', '... nothing stored');

# the agent's: POST /v1/sessions, the asker's at once
$r = req('r', $BOB, "POST /v1/sessions HTTP/1.1\r\nHost: a\r\n"
                    . "Content-Length: 0\r\nConnection: close\r\n\r\n");
is($r->{status}, 201, 'POST /v1/sessions: 201');
$rid = $r->{json}{id} // '';
like($rid, qr/^[0-9a-f]{64}\z/,
     '... an id of 128 random bits and its tag');
is(redis('EXISTS', "airlock:session:$rid"), '0',
   '... nothing stored until its first question (83-session-new-*.t)');
isnt(req('r', $BOB, "POST /v1/sessions HTTP/1.1\r\nHost: a\r\n"
                    . "Content-Length: 0\r\nConnection: close\r\n\r\n")
         ->{json}{id} // '', $rid, '... another id each time');
is(req('r', $BOB, "GET /v1/sessions HTTP/1.1\r\nHost: a\r\n"
                  . "Connection: close\r\n\r\n")->{status}, 405,
   'GET /v1/sessions: 405');

# bob's, first asked in by alice: not hers
$r = ask('r', $ALICE, $rid, 'first in his?');
is($r->{status}, 404, 'alice first in bob\'s new session: 404');
$a->script({ pieces => [ 'random one' ] });
$r = ask('r', $BOB, $rid, 'a new session of the agent\'s');
is(answer_of($r), 'random one', 'bob asks in it');
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

# ---- the CLI: a new session is the agent's ---------------------------------
{
    $a->script({ pieces => [ 'from the cli' ] });
    pipe(my $rd, my $wr) or die "pipe: $!\n";
    my $pid = fork // die "fork: $!\n";
    if ($pid == 0) {
        close $rd;
        $( = $) = "$BOB $BOB";
        $< = $> = $BOB;
        open(STDOUT, '>&', $wr);
        open(STDERR, '>', '/dev/null');
        exec("$t->{build}/airlock", 'ask', '--json', '--socket',
             $a->{agents}{r}{sock}, 'a question') or POSIX::_exit(127);
    }
    close $wr;
    my @lines = <$rd>;
    waitpid($pid, 0);
    my ($run) = grep { ($_->{type} // '') eq 'run' }
                map { eval { decode_json($_) } // () } @lines;
    my $sid = ($run // {})->{session} // '';
    is($? >> 8, 0, 'airlock ask without --session: answered');
    my $cs = decode_json(redis('GET', "airlock:session:$sid") || '{}');
    is($cs->{owner}, "uid:$BOB", '... in a session the agent made, bob\'s');
}

# ---- the appliance's unit, the help ---------------------------------------
my $u = unit_directives("$top/conf/airlock-agent.service");
like($u->{ExecStart}[0] // '', qr/\s--random-session-ids(\s|$)/,
     'the unit passes --random-session-ids');
like(`$t->{build}/airlock-agent --help`, qr/--random-session-ids/,
     '--help names it');

is($a->agent_errors, '', 'no sanitizer reports from the agents');
