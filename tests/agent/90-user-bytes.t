#!/usr/bin/perl

# Each session is bounded (16 MiB, 50 runs), but one owner could have any
# number of them, each question stored (the model's failures too) and
# kept --session-ttl: one user asking in new sessions filled Redis,
# which holds every user's.  --max-user-bytes bounds what one owner's
# sessions hold, all together: the script that stores a session counts
# it (airlock:quota:sessions:<owner>, each id by when it expires, and
# airlock:quota:bytes:<owner>, each one's size and their total), and a
# question of an owner at or over the quota is refused, 429 "quota",
# before the model is called; another owner is served; root is held to
# it too; once the sessions expire, questions are taken again, and the
# quota's keys expire with the owner's last session.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib", "$FindBin::Bin/lib";

use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep);
use Airlock::Test;
use AgentTest;

Airlock::Prereq::absent('the test connects as other uids: run it as root')
    if $> != 0;

my $a = AgentTest->new;
my $t = $a->t;

Airlock::Prereq::absent('redis-cli not found (auto/deps installs it)')
    unless grep { -x "$_/redis-cli" } split /:/, $ENV{PATH};

$a->setup(agent => [ '--max-wall', 30000 ]);

# q: sessions kept an hour; f: sessions kept 2 s, for them to expire
$a->start_agent('q', '--max-wall', 30000, '--max-user-bytes', 8192,
                '--session-ttl', 3600);
$a->start_agent('f', '--max-wall', 30000, '--max-user-bytes', 8192,
                '--session-ttl', 2);

plan tests => 33;

my ($ALICE, $BOB, $CAROL) = (61901, 61902, 61903);
my $BIG = 'x' x 9000;

sub redis { return $a->redis_cli(@_) }

sub ask {
    my ($name, $uid, $id, $prompt, $extra) = @_;
    my $body = encode_json({ prompt => $prompt });
    my $raw = scalar $a->as_uid($a->{agents}{$name}{sock}, $uid,
                                "POST /v1/sessions/$id/ask HTTP/1.1\r\n"
                                . "Host: a\r\n" . ($extra // '')
                                . "Content-Length: "
                                . length($body)
                                . "\r\nConnection: close\r\n\r\n$body");
    my $r = Airlock::Test::parse_response($raw);
    $r->{events} = [ AgentTest::events($raw) ];
    $r->{json} = eval { decode_json($r->{body} // '') } // {};
    $r->{what} = ($r->{status} // 0) . ' ' . ($r->{json}{error} // '');
    return $r;
}

sub answered {
    my ($r) = @_;
    return ($r->{status} // 0) == 200
           && scalar(AgentTest::of_type('answer', $r->{events})) == 1;
}

sub calls { scalar(() = $a->provider_requests) }

$a->llm->script_all({ pieces => [ 'fine' ] });

# ---- alice fills her quota with one question ------------------------------
my $r = ask('q', $ALICE, 'alice-1', $BIG);
ok(answered($r), 'alice asks, 9000 bytes of prompt: answered')
    or diag("$r->{what}: " . ($r->{body} // ''));
my $len = redis('STRLEN', 'airlock:session:alice-1');
ok($len > 9000, "... stored ($len bytes)");
is(redis('HGET', "airlock:quota:bytes:uid:$ALICE", 'alice-1'), $len + 1024,
   '... counted as its text and 1024');
is(redis('HGET', "airlock:quota:bytes:uid:$ALICE", '!total'), $len + 1024,
   '... her total');
is(redis('TYPE', "airlock:quota:sessions:uid:$ALICE"), 'zset',
   '... her sessions by expiry');
my $pttl = redis('PTTL', "airlock:quota:sessions:uid:$ALICE");
my $sttl = redis('PTTL', 'airlock:session:alice-1');
ok($pttl > 3500000 && $pttl <= 3600000 && abs($pttl - $sttl) < 5000,
   "... kept as long as her session ($pttl ms, the session $sttl ms)");
$pttl = redis('PTTL', "airlock:quota:bytes:uid:$ALICE");
ok($pttl > 3500000 && $pttl <= 3600000, "... her sizes too ($pttl ms)");

# ---- over: refused before the model is called ------------------------------
my $before = calls();
$r = ask('q', $ALICE, 'alice-2', 'one more');
is($r->{what}, '429 quota', 'her next question, a new session: 429 quota');
like($r->{json}{message} // '', qr/--max-user-bytes \(8192\)/,
     '... naming --max-user-bytes');
like($r->{json}{message} // '', qr/the oldest in (\d+) s/,
     '... and when her oldest session expires');
my ($in) = ($r->{json}{message} // '') =~ /the oldest in (\d+) s/;
ok(defined $in && $in > 3500 && $in <= 3600, '... in an hour (' .
   ($in // 'none') . ' s)');
is(calls(), $before, '... the model not called');
is(redis('EXISTS', 'airlock:session:alice-2', 'airlock:session:alice-2:lock'),
   '0', '... nothing stored, its lock let go');
is(ask('q', $ALICE, 'alice-1', 'again')->{what}, '429 quota',
   'her question in her stored session: 429 quota');
is(redis('STRLEN', 'airlock:session:alice-1'), $len, '... it is unchanged');
is(calls(), $before, '... the model not called');
ok(answered(ask('a', $ALICE, 'alice-3', 'elsewhere')),
   'an agent with the default quota (256 MiB) on the same Redis: served');
$before = calls();

# ---- another owner, root ----------------------------------------------------
ok(answered(ask('q', $BOB, 'bob-1', 'mine')), 'bob is served meanwhile');
is(calls(), $before + 1, '... the model called for him');
ok(answered(ask('q', 0, 'root-1', $BIG)), 'root fills his own');
is(ask('q', 0, 'root-2', 'more')->{what}, '429 quota',
   '... and is held to it too');
is(ask('q', 0, 'alice-1', 'root in hers',
        "X-Airlock-Others-Session: yes\r\n")->{what}, '429 quota',
   'root in alice\'s session: her quota, 429');

# ---- expired sessions no longer count --------------------------------------
ok(answered(ask('f', $CAROL, 'carol-1', $BIG)),
   'carol fills hers where sessions are kept 2 s');
my $first = ask('f', $CAROL, 'carol-2', 'next');
is($first->{what}, '429 quota', '... her next question refused');

# asked again and again until taken, each refusal a 429 until then
my ($taken, @other);
for (1 .. 300) {
    $before = calls();
    $r = ask('f', $CAROL, "carol-x$_", 'later');
    if (answered($r)) {
        $taken = $_;
        last;
    }
    push @other, $r->{what} if $r->{what} ne '429 quota'
                               || calls() != $before;
    sleep 0.1;
}
ok($taken, 'once they expire, her question is taken ('
   . ($taken // 'never') . ' tries)');
is(join(', ', @other), '', '... each before it a 429, the model not called');
is(redis('EXISTS', 'airlock:session:carol-1'), '0',
   '... her first session had expired');
my $n = redis('STRLEN', 'airlock:session:carol-x' . ($taken // 0));
is(redis('HGET', "airlock:quota:bytes:uid:$CAROL", '!total'), $n + 1024,
   '... her total is the new session alone');
is(redis('ZCARD', "airlock:quota:sessions:uid:$CAROL"), '1',
   '... the expired dropped from her sessions');

# ---- nothing kept for good ---------------------------------------------------
my $gone = 0;
for (1 .. 100) {
    $gone = redis('EXISTS', "airlock:quota:sessions:uid:$CAROL",
                  "airlock:quota:bytes:uid:$CAROL") eq '0';
    last if $gone;
    sleep 0.1;
}
ok($gone, 'her quota\'s keys expire with her last session');

# ---- the option -------------------------------------------------------------
like(`$t->{build}/airlock-agent --help`, qr/--max-user-bytes N/,
     '--help names --max-user-bytes');
for my $bad ('1k', '-1') {
    my $out = `$t->{build}/airlock-agent --max-user-bytes '$bad' 2>&1`;
    my $rc = $? >> 8;
    like("$rc $out", qr/^2 airlock-agent: --max-user-bytes wants a number /,
         "--max-user-bytes $bad: refused at start, exit status 2");
}
