#!/usr/bin/perl

# airlock-agent: a question in another's session is refused before the
# session's lock is taken.  It used to take the lock first and look at
# the owner after (404 then), so for the time of that look the session
# was busy to its owner (409 session_busy), and a user who knew the id
# could keep it so by asking in a loop.  Now such a question touches no
# key of the session at all: Redis's keyspace events for the session's
# keys are watched while it is asked, and there must be none (a SET of
# the lock is one).  That holds for a session whose owner is at the head
# of its JSON (as the agent stores it: read from the head alone), one
# whose owner is elsewhere in it, one stored before owners, and one
# stored damaged (read whole, still before the lock), and for an agent
# whose Redis user may not GETRANGE (read whole).  The answer is
# still word for word that for a session never stored.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use IO::Socket::UNIX;
use JSON::PP;
use POSIX ();
use Socket qw(SOCK_STREAM);
use Test::More;
use Airlock::Test;
use AgentTest;

Airlock::Prereq::absent('the test connects as other uids: run it as root')
    if $> != 0;

my $a = AgentTest->new;
my $t = $a->t;
my $d = $t->testdir;

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

$a->setup(agent => [ '--max-wall', 30000 ]);

plan tests => 35;

my ($ALICE, $BOB) = (61001, 61002);
my $sock = $a->{agents}{a}{sock};

sub redis { return $a->redis_cli(@_) }

# the raw answer to $req sent on the agent's socket by uid $uid
sub as_uid {
    my ($uid, $req) = @_;
    return scalar $a->as_uid($sock, $uid, $req);
}

sub get {
    my ($uid, $id) = @_;
    return Airlock::Test::parse_response(
        as_uid($uid, "GET /v1/sessions/$id HTTP/1.1\r\nHost: a\r\n"
                     . "Connection: close\r\n\r\n"));
}

sub ask {
    my ($uid, $id, $prompt) = @_;
    my $body = encode_json({ prompt => $prompt });
    my $raw = as_uid($uid, "POST /v1/sessions/$id/ask HTTP/1.1\r\n"
                           . "Host: a\r\nContent-Length: " . length($body)
                           . "\r\nConnection: close\r\n\r\n$body");
    my $r = Airlock::Test::parse_response($raw);
    $r->{events} = [ AgentTest::events($raw) ];
    $r->{json} = eval { decode_json($r->{body} // '') } // {};
    return $r;
}


sub calls { scalar(() = $a->provider_requests) }

# one reply of Redis's protocol: a string, or an array of them
sub reply {
    my ($s) = @_;
    my $line = <$s> // die "redis closed the watch\n";
    $line =~ s/\r\n\z//;
    my $type = substr($line, 0, 1, '');

    return [ map { reply($s) } 1 .. $line ] if $type eq '*';

    if ($type eq '$') {
        return undef if $line < 0;
        my $buf = '';
        while (length($buf) < $line + 2) {
            read($s, $buf, $line + 2 - length($buf), length($buf))
                or die "redis closed the watch\n";
        }
        return substr($buf, 0, $line);
    }

    die "redis: $line\n" if $type eq '-';
    return $line;
}

sub command {
    my (@w) = @_;
    return '*' . @w . "\r\n"
           . join('', map { '$' . length($_) . "\r\n$_\r\n" } @w);
}

# the keyspace events of every session key (airlock:session:*) from now
# to watch_end(): Redis sends them in the order of the writes, so a mark
# written at the end comes after every one before it
sub watch_start {
    my $s = IO::Socket::UNIX->new(Type => SOCK_STREAM,
                                  Peer => "$d/redis.sock")
        or die "redis: $!\n";
    print {$s} command('AUTH', $Airlock::Test::REDIS_USER,
                       $Airlock::Test::REDIS_PASS);
    reply($s);
    print {$s} command('PSUBSCRIBE', '__keyspace@0__:airlock:session:*',
                       '__keyspace@0__:airlock-test:mark');
    reply($s) for 1 .. 2;
    return $s;
}

sub watch_end {
    my ($s) = @_;
    my @ev;

    redis(qw(SET airlock-test:mark 1));
    local $SIG{ALRM} = sub { die "no mark on the watch\n" };
    alarm 20;

    for ( ;; ) {
        my $m = reply($s);
        my ($ch, $ev) = @$m[2, 3];
        last if $ch =~ /:airlock-test:mark\z/;
        $ch =~ s/^__keyspace\@0__://;
        push @ev, "$ch $ev";
    }

    alarm 0;
    close $s;
    return join ', ', @ev;
}

redis(qw(CONFIG SET notify-keyspace-events KA));
redis(qw(SET airlock-test:mark 1));

my $none = get($BOB, 'never-stored');
is($none->{status}, 404, 'a session never stored: 404');

# bob's question in session $id: refused as one never stored, with no
# write to any session key, no model call and nothing changed
sub bob_refused {
    my ($id, $what) = @_;
    my $before = redis('GET', "airlock:session:$id");
    my $type = redis('TYPE', "airlock:session:$id");
    my $keys = redis('DBSIZE');
    my $n = calls();

    my $w = watch_start();
    my $r = ask($BOB, $id, 'a question of bob\'s');
    my $ev = watch_end($w);

    is($r->{status} . ' ' . $r->{body}, '404 ' . $none->{body},
       "$what: bob's question answered as for a session never stored");
    is($ev, '', "$what: no session key written, its lock not taken");
    ok(calls() == $n && redis('DBSIZE') eq $keys
       && redis('TYPE', "airlock:session:$id") eq $type
       && ($type ne 'string'
           || redis('GET', "airlock:session:$id") eq $before),
       "$what: nothing called, made or changed");
}

# alice's session, stored by the agent: its owner at its head
$a->script({ pieces => [ 'for alice' ] });
my $r = ask($ALICE, 'alpha', 'a question of alice\'s');
is(answer_of($r), 'for alice', 'alice asks in a new session');
like(redis(qw(GET airlock:session:alpha)),
     qr/^\{"id":"alpha","owner":"uid:$ALICE",/,
     'stored with its owner at its head');

bob_refused('alpha', 'alice\'s session');

# bob asks in a loop while alice asks: she is never refused busy
my $looper = fork // die "fork: $!\n";
if ($looper == 0) {
    my $bad = 0;
    for (1 .. 40) {
        my $b = ask($BOB, 'alpha', 'again and again');
        $bad++ if $b->{status} != 404;
    }
    POSIX::_exit($bad > 250 ? 250 : $bad);
}
my @alice;
for my $i (1 .. 4) {
    $a->script({ pieces => [ "alice $i" ] });
    $r = ask($ALICE, 'alpha', "alice asks $i");
    push @alice, $r->{status} . ' ' . ($r->{json}{error} // answer_of($r));
}
waitpid($looper, 0);
is(join(', ', @alice), join(', ', map { "200 alice $_" } 1 .. 4),
   'alice\'s questions while bob loops: all answered, none busy');
is($? >> 8, 0, 'every one of bob\'s: 404');

# the owner elsewhere than at the head: the whole session read, still
# before the lock; alice herself asks in it
redis('SET', 'airlock:session:tail', encode_json({
    messages => [ { role => 'user', content => 'planted' } ], runs => [],
    owner => "uid:$ALICE", id => 'tail' }));
bob_refused('tail', 'owner not at the head');
$a->script({ pieces => [ 'tail is hers' ] });
$r = ask($ALICE, 'tail', 'is it mine?');
is(answer_of($r), 'tail is hers', 'and alice asks in it');

# the owner at the head written with an escape: read whole
redis('SET', 'airlock:session:esc',
      '{"id":"esc","owner":"uid:\u0036' . substr($ALICE, 1)
      . '","messages":[],"runs":[{"run":"x"}]}');
bob_refused('esc', 'owner written with an escape');
$a->script({ pieces => [ 'esc is hers' ] });
is(answer_of(ask($ALICE, 'esc', 'mine?')), 'esc is hers',
   'and alice asks in it');

# stored before owners: root's alone
redis('SET', 'airlock:session:old', encode_json({
    id => 'old', messages => [ { role => 'user', content => 'old one' } ],
    runs => [] }));
bob_refused('old', 'a session stored before owners');

# stored damaged: not JSON, and not a string
redis(qw(SET airlock:session:broken), 'not json');
bob_refused('broken', 'a session stored damaged');
redis(qw(HSET airlock:session:hash a b));
bob_refused('hash', 'a session of another Redis type');

# an agent's Redis user without GETRANGE (an ACL file older than the
# agent): the whole session is read instead, still before the lock
redis(qw(ACL SETUSER airlock-agent -getrange));
bob_refused('alpha', 'a Redis user without GETRANGE');
$a->script({ pieces => [ 'no getrange' ] });
is(answer_of(ask($ALICE, 'alpha', 'and now?')), 'no getrange',
   'and alice asks in it');
redis(qw(ACL SETUSER airlock-agent +getrange));

# alice's first question runs (nothing stored yet): bob is refused by
# its lock, which he does not take
$a->script({ pieces => [ 'held' ], wait_file => "$d/go" });
my $n = calls();
my $held = fork // die "fork: $!\n";
if ($held == 0) {
    my $h = ask($ALICE, 'gamma', 'a held question');
    POSIX::_exit(answer_of($h) eq 'held' ? 0 : 1);
}
for (1 .. 500) {
    last if calls() > $n;
    select(undef, undef, undef, 0.02);
}
my $lock = redis(qw(GET airlock:session:gamma:lock));
like($lock, qr/ uid:$ALICE\z/, 'alice\'s first question holds the lock');
my $w = watch_start();
$r = ask($BOB, 'gamma', 'bob too');
my $ev = watch_end($w);
is($r->{status} . ' ' . $r->{body}, '404 ' . $none->{body},
   'bob meanwhile: as for a session never stored');
is($ev . '|' . redis(qw(GET airlock:session:gamma:lock)), "|$lock",
   'the lock untouched');
$t->write_file('go', '');
waitpid($held, 0);
is($?, 0, 'her question answered');

redis(qw(CONFIG SET notify-keyspace-events), '');

is($t->error_log_check, '', 'no alerts in the error log');
is($a->agent_errors, '', 'no sanitizer reports from the agents');
